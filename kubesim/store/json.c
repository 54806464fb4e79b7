/*
 * json.c - the compact serialiser behind every stored object's bytes.
 *
 * It writes what cJSON_PrintUnformatted writes, but integral numbers (nearly all
 * numbers in Kubernetes objects: ports, replicas, generation, grace periods) are
 * formatted by hand instead of through snprintf("%1.15g") plus the sscanf
 * round-trip check cJSON does for each of them, which was the largest single cost
 * of a create. Non-integral numbers use the same two-step %1.15g / %1.17g rule
 * as cJSON, so the output is byte-for-byte identical.
 */
#include "kobj/json_text.h"
#include "kubesim/store/internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 1000     /* cJSON's own parse limit is lower; this is a guard */

/* One byte, growing the buffer when needed. */
static inline int put_char(struct buf *b, char c)
{
    if (b->len + 1 >= b->cap && buf_reserve(b, 1))
        return -ENOMEM;
    b->data[b->len++] = c;
    return 0;
}

static int put_string(struct buf *b, const char *s)
{
    const char *p = s ? s : "";
    size_t n = strlen(p);
    size_t need = json_text_str_len(p, n);

    if (need == SIZE_MAX || buf_reserve(b, need))
        return -ENOMEM;
    b->len = (size_t)(json_text_put_str(b->data + b->len, p, n) - b->data);
    b->data[b->len] = 0;
    return 0;
}

static int put_number(struct buf *b, const cJSON *item)
{
    double d = item->valuedouble;
    char tmp[32];
    int n;

    if (isnan(d) || isinf(d))
        return buf_append(b, "null", 4);
    if (d == (double)item->valueint) {
        /* cJSON prints these with "%d" */
        long long v = item->valueint;
        char *p = tmp + sizeof(tmp);
        bool neg = v < 0;
        unsigned long long u = neg ? 0ull - (unsigned long long)v : (unsigned long long)v;
        do {
            *--p = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (neg)
            *--p = '-';
        return buf_append(b, p, (size_t)(tmp + sizeof(tmp) - p));
    }
    /* cJSON: 15 significant digits if they round-trip, else 17 */
    n = snprintf(tmp, sizeof(tmp), "%1.15g", d);
    if (strtod(tmp, NULL) != d)
        n = snprintf(tmp, sizeof(tmp), "%1.17g", d);
    return buf_append(b, tmp, (size_t)n);
}

static int put_value(struct buf *b, const cJSON *item, int depth)
{
    const cJSON *c;
    int rc = 0;

    if (depth > JSON_MAX_DEPTH)
        return -E2BIG;
    switch (item->type & 0xff) {
    case cJSON_NULL:
        return buf_append(b, "null", 4);
    case cJSON_False:
        return buf_append(b, "false", 5);
    case cJSON_True:
        return buf_append(b, "true", 4);
    case cJSON_Number:
        return put_number(b, item);
    case cJSON_Raw:
        return item->valuestring ? buf_puts(b, item->valuestring) : -EINVAL;
    case cJSON_String:
        return put_string(b, item->valuestring);
    case cJSON_Array:
        rc = put_char(b, '[');
        for (c = item->child; c && !rc; c = c->next) {
            rc = put_value(b, c, depth + 1);
            if (!rc && c->next)
                rc = put_char(b, ',');
        }
        return rc ? rc : put_char(b, ']');
    case cJSON_Object:
        rc = put_char(b, '{');
        for (c = item->child; c && !rc; c = c->next) {
            rc = put_string(b, c->string);
            if (!rc)
                rc = put_char(b, ':');
            if (!rc)
                rc = put_value(b, c, depth + 1);
            if (!rc && c->next)
                rc = put_char(b, ',');
        }
        return rc ? rc : put_char(b, '}');
    default:
        return -EINVAL;
    }
}

int store__json_print(const cJSON *json, struct buf *out)
{
    int rc = put_value(out, json, 0);

    if (!rc && !(rc = buf_reserve(out, 0)))
        out->data[out->len] = 0;      /* the buf contract: NUL-terminated */
    return rc;
}

/* ---- packed trees ------------------------------------------------------------------
 * A stored snapshot's tree is read-only for its whole life, so it is kept as one block:
 * the cJSON nodes side by side, then every key and string packed after them. A node
 * costs its 64 bytes instead of 80 with malloc's header, and a key or string its length
 * instead of a 32-byte chunk at least: a stored Pod takes about 40% less (figures in
 * docs/kubesim-store.md). Freed with free() on the root, never cJSON_Delete. */

struct pack {
    cJSON *node;        /* next free node */
    char *str;          /* next free string byte */
};

void store__json_measure(const cJSON *n, size_t *nodes, size_t *bytes)
{
    for (; n; n = n->next) {
        (*nodes)++;
        if (n->string)
            *bytes += strlen(n->string) + 1;
        if (n->valuestring)
            *bytes += strlen(n->valuestring) + 1;
        if (n->child)
            store__json_measure(n->child, nodes, bytes);
    }
}

static char *pack_str(struct pack *p, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = p->str;

    memcpy(d, s, n);
    p->str += n;
    return d;
}

static void pack_fill(cJSON *m, const cJSON *n, struct pack *p)
{
    cJSON *prev = NULL;

    m->type = n->type & ~(cJSON_IsReference | cJSON_StringIsConst);
    m->valueint = n->valueint;
    m->valuedouble = n->valuedouble;
    m->string = n->string ? pack_str(p, n->string) : NULL;
    m->valuestring = n->valuestring ? pack_str(p, n->valuestring) : NULL;
    m->next = m->prev = m->child = NULL;
    for (const cJSON *c = n->child; c; c = c->next) {
        cJSON *k = p->node++;
        pack_fill(k, c, p);
        if (prev) {
            prev->next = k;
            k->prev = prev;
        } else {
            m->child = k;
        }
        prev = k;
    }
    if (m->child)
        m->child->prev = prev;   /* cJSON keeps the last child there */
}

cJSON *store__json_pack(const cJSON *json)
{
    size_t nodes = 0, bytes = 0;
    struct pack p;
    cJSON *root;

    if (!json || json->next)
        return NULL;
    store__json_measure(json, &nodes, &bytes);
    if (!(root = malloc(nodes * sizeof(cJSON) + bytes)))
        return NULL;
    p.node = root + 1;
    p.str = (char *)(root + nodes);
    pack_fill(root, json, &p);
    return root;
}

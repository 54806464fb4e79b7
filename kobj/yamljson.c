/*
 * yamljson.c - YAML documents to cJSON trees with Kubernetes' scalar typing.
 *
 * libyaml's event parser drives a small builder: a stack of open containers, a
 * pending key per open mapping, and the anchors seen in the current document. Plain
 * scalars are typed as sigs.k8s.io/yaml (go-yaml v2, YAML 1.1 rules) types them;
 * quoted and block scalars are strings. Every bound in yamljson.h is checked as the
 * events arrive, so no input can make the builder run away.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kobj/yamljson.h"
#include "util/util.h"

#define MAX_ANCHORS 10000

struct frame {
    cJSON *node;
    char *key;    /* pending key of a mapping, or NULL */
    char *anchor; /* anchor of this container, recorded when it closes */
};

struct anchor {
    char *name;
    const cJSON *node; /* borrowed from the document being built */
};

struct builder {
    struct frame stack[YAMLJSON_MAX_DEPTH];
    int depth;
    cJSON *doc;
    bool have_doc;
    struct anchor *anchors;
    size_t nanchors;
    size_t nodes;
    cJSON *graveyard; /* values displaced by repeated keys: anchors may still point there */
    char *err;
    size_t errlen;
};


/* ---- scalar typing ----------------------------------------------------------- */

static bool one_of(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

/* YAML 1.1 integers: [-+]?(0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*). */
static bool parse_int(const char *s, double *out)
{
    char digits[80];
    size_t n = 0;
    int base = 10;
    bool neg = false;

    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (!*s)
        return false;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { base = 16; s += 2; }
    else if (s[0] == '0' && s[1] == 'b') { base = 2; s += 2; }
    else if (s[0] == '0' && s[1] == 'o') { base = 8; s += 2; }
    else if (s[0] == '0' && s[1]) { base = 8; s += 1; }
    for (; *s; s++) {
        if (*s == '_')
            continue;
        if (n + 1 >= sizeof(digits))
            return false;
        digits[n++] = *s;
    }
    if (n == 0)
        return false;
    digits[n] = '\0';
    double v = 0;
    for (size_t i = 0; i < n; i++) {
        int d;
        char c = digits[i];
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return false;
        if (d >= base)
            return false;
        v = v * base + d;
    }
    *out = neg ? -v : v;
    return true;
}

/* [-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)? */
static bool parse_float(const char *s, double *out)
{
    char buf[128];
    size_t n = 0;
    bool digit = false, dot = false, exp = false;

    for (const char *p = s; *p; p++) {
        char c = *p;
        if (c == '_')
            continue;
        if (c >= '0' && c <= '9') digit = true;
        else if (c == '.' && !dot && !exp) dot = true;
        else if ((c == 'e' || c == 'E') && digit && !exp) exp = true;
        else if ((c == '-' || c == '+') && (p == s || p[-1] == 'e' || p[-1] == 'E')) ;
        else return false;
        if (n + 1 >= sizeof(buf))
            return false;
        buf[n++] = c;
    }
    buf[n] = '\0';
    if (!digit)
        return false;
    char *end;
    double v = strtod(buf, &end);
    if (*end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static const char *const k_null[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const k_true[] = { "true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES",
                                      "on", "On", "ON", NULL };
static const char *const k_false[] = { "false", "False", "FALSE", "n", "N", "no", "No", "NO",
                                       "off", "Off", "OFF", NULL };
static const char *const k_special[] = { ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
                                         "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",
                                         NULL };

/* Types a plain scalar; NULL with errno EINVAL for a value JSON cannot carry. */
static cJSON *resolve_plain(const char *s)
{
    double v;
    if (one_of(s, k_null))
        return cJSON_CreateNull();
    if (one_of(s, k_true))
        return cJSON_CreateTrue();
    if (one_of(s, k_false))
        return cJSON_CreateFalse();
    if (one_of(s, k_special)) {
        errno = EINVAL;
        return NULL;
    }
    if (parse_int(s, &v) || parse_float(s, &v))
        return cJSON_CreateNumber(v);
    return cJSON_CreateString(s);
}

static cJSON *resolve_scalar(const yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;

    if (tag && !strncmp(tag, "tag:yaml.org,2002:", 18)) {
        const char *t = tag + 18;
        if (!strcmp(t, "str") || !strcmp(t, "binary"))
            return cJSON_CreateString(s);
        if (!strcmp(t, "int") || !strcmp(t, "float") || !strcmp(t, "bool") ||
            !strcmp(t, "null"))
            return resolve_plain(s);
    }
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !ev->data.scalar.plain_implicit)
        return cJSON_CreateString(s);
    return resolve_plain(s);
}

/* ---- tree building --------------------------------------------------------------- */

static size_t count_nodes(const cJSON *n, size_t limit)
{
    size_t c = 1;
    for (const cJSON *k = n ? n->child : NULL; k && c <= limit; k = k->next)
        c += count_nodes(k, limit - c);
    return c;
}

static int budget(struct builder *b, size_t n)
{
    if (n > YAMLJSON_MAX_NODES || b->nodes > YAMLJSON_MAX_NODES - n) {
        util_format_err(b->err, b->errlen,
                        "yaml: document too large (more than %d nodes, aliases included)",
                        YAMLJSON_MAX_NODES);
        return -E2BIG;
    }
    b->nodes += n;
    return 0;
}

static int remember_anchor(struct builder *b, const char *name, const cJSON *node)
{
    if (!name)
        return 0;
    if (b->nanchors >= MAX_ANCHORS) {
        util_format_err(b->err, b->errlen, "yaml: too many anchors");
        return -E2BIG;
    }
    struct anchor *na = realloc(b->anchors, (b->nanchors + 1) * sizeof(*na));
    if (!na)
        return -ENOMEM;
    b->anchors = na;
    if (!(na[b->nanchors].name = strdup(name)))
        return -ENOMEM;
    na[b->nanchors++].node = node;
    return 0;
}

static void forget_anchors(struct builder *b)
{
    for (size_t i = 0; i < b->nanchors; i++)
        free(b->anchors[i].name);
    b->nanchors = 0;
}

/* Places v (ownership taken) into the open container or as the document root. */
static int add_value(struct builder *b, cJSON *v)
{
    if (b->depth == 0) {
        cJSON_Delete(b->doc);
        b->doc = v;
        b->have_doc = true;
        return 0;
    }
    struct frame *f = &b->stack[b->depth - 1];
    if (cJSON_IsArray(f->node)) {
        cJSON_AddItemToArray(f->node, v);
        return 0;
    }
    if (!f->key) {
        cJSON_Delete(v);
        util_format_err(b->err, b->errlen, "yaml: mapping keys must be scalars");
        return -EINVAL;
    }
    /* a repeated key: the last one wins, as sigs.k8s.io/yaml does outside strict mode */
    cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(f->node, f->key);
    if (old) {
        if (!b->graveyard && !(b->graveyard = cJSON_CreateArray())) {
            cJSON_Delete(old);
            cJSON_Delete(v);
            return -ENOMEM;
        }
        cJSON_AddItemToArray(b->graveyard, old);
    }
    bool ok = cJSON_AddItemToObject(f->node, f->key, v);
    free(f->key);
    f->key = NULL;
    if (!ok) {
        cJSON_Delete(v);
        return -ENOMEM;
    }
    return 0;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
    int rc;
    if ((rc = budget(b, 1)))
        return rc;
    if (b->depth > 0 && cJSON_IsObject(b->stack[b->depth - 1].node) &&
        !b->stack[b->depth - 1].key) {
        /* a key: its text, whatever type it would resolve to */
        if (!(b->stack[b->depth - 1].key = strdup((const char *)ev->data.scalar.value)))
            return -ENOMEM;
        return 0;
    }
    errno = 0;
    cJSON *v = resolve_scalar(ev);
    if (!v) {
        if (errno == EINVAL) {
            util_format_err(b->err, b->errlen,
                            "yaml: line %zu: value %s cannot be represented in JSON",
                            ev->start_mark.line + 1, (const char *)ev->data.scalar.value);
            return -EINVAL;
        }
        return -ENOMEM;
    }
    if ((rc = add_value(b, v)))
        return rc;
    return remember_anchor(b, (const char *)ev->data.scalar.anchor, v);
}

static int on_alias(struct builder *b, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const cJSON *src = NULL;
    int rc;

    for (size_t i = b->nanchors; i-- > 0;)
        if (!strcmp(b->anchors[i].name, name)) {
            src = b->anchors[i].node;
            break;
        }
    if (!src) {
        util_format_err(b->err, b->errlen, "yaml: line %zu: unknown anchor '%s' referenced",
                        ev->start_mark.line + 1, name);
        return -EINVAL;
    }
    if (b->depth > 0 && cJSON_IsObject(b->stack[b->depth - 1].node) &&
        !b->stack[b->depth - 1].key) {
        if (cJSON_IsObject(src) || cJSON_IsArray(src)) {
            util_format_err(b->err, b->errlen, "yaml: mapping keys must be scalars");
            return -EINVAL;
        }
        char *k = cJSON_IsString(src) ? strdup(src->valuestring) : cJSON_PrintUnformatted(src);
        if (!k)
            return -ENOMEM;
        b->stack[b->depth - 1].key = k;
        return 0;
    }
    if ((rc = budget(b, count_nodes(src, YAMLJSON_MAX_NODES + 1))))
        return rc;
    cJSON *v = cJSON_Duplicate(src, true);
    if (!v)
        return -ENOMEM;
    return add_value(b, v);
}

static int on_open(struct builder *b, const yaml_event_t *ev, bool map)
{
    const char *anchor = (const char *)(map ? ev->data.mapping_start.anchor
                                            : ev->data.sequence_start.anchor);
    int rc;
    if (b->depth >= YAMLJSON_MAX_DEPTH) {
        util_format_err(b->err, b->errlen, "yaml: line %zu: nesting deeper than %d",
                        ev->start_mark.line + 1, YAMLJSON_MAX_DEPTH);
        return -E2BIG;
    }
    if (b->depth > 0 && cJSON_IsObject(b->stack[b->depth - 1].node) &&
        !b->stack[b->depth - 1].key) {
        util_format_err(b->err, b->errlen, "yaml: line %zu: complex mapping keys are not supported",
                        ev->start_mark.line + 1);
        return -EINVAL;
    }
    if ((rc = budget(b, 1)))
        return rc;
    struct frame *f = &b->stack[b->depth];
    memset(f, 0, sizeof(*f));
    if (!(f->node = map ? cJSON_CreateObject() : cJSON_CreateArray()))
        return -ENOMEM;
    if (anchor && !(f->anchor = strdup(anchor))) {
        cJSON_Delete(f->node);
        return -ENOMEM;
    }
    b->depth++;
    return 0;
}

static int on_close(struct builder *b)
{
    struct frame f;
    int rc;
    if (b->depth == 0)
        return -EINVAL;
    f = b->stack[--b->depth];
    free(f.key);
    if ((rc = add_value(b, f.node))) {
        free(f.anchor);
        return rc;
    }
    rc = remember_anchor(b, f.anchor, f.node);
    free(f.anchor);
    return rc;
}

static void builder_reset(struct builder *b)
{
    while (b->depth > 0) {
        struct frame *f = &b->stack[--b->depth];
        cJSON_Delete(f->node);
        free(f->key);
        free(f->anchor);
    }
    cJSON_Delete(b->doc);
    b->doc = NULL;
    b->have_doc = false;
    cJSON_Delete(b->graveyard);
    b->graveyard = NULL;
    forget_anchors(b);
}

int yamljson_parse_all(const char *buf, size_t len, cJSON **out, char *err, size_t errlen)
{
    struct builder *b;
    yaml_parser_t parser;
    yaml_event_t ev;
    cJSON *docs = NULL;
    int rc = 0;
    bool done = false;

    *out = NULL;
    if (len > YAMLJSON_MAX_INPUT) {
        if (err && errlen)
            snprintf(err, errlen, "yaml: input larger than %u bytes", YAMLJSON_MAX_INPUT);
        return -E2BIG;
    }
    if (!(b = calloc(1, sizeof(*b))))
        return -ENOMEM;
    b->err = err;
    b->errlen = errlen;
    if (!(docs = cJSON_CreateArray()) || !yaml_parser_initialize(&parser)) {
        cJSON_Delete(docs);
        free(b);
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)(buf ? buf : ""), len);
    while (!done && !rc) {
        if (!yaml_parser_parse(&parser, &ev)) {
            util_format_err(b->err, b->errlen, "yaml: line %zu: %s", parser.problem_mark.line + 1,
                            parser.problem ? parser.problem : "parse error");
            rc = parser.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT: builder_reset(b); break;
        case YAML_DOCUMENT_END_EVENT:
            if (b->have_doc && b->doc && !cJSON_IsNull(b->doc)) {
                cJSON_AddItemToArray(docs, b->doc);
                b->doc = NULL;
            }
            builder_reset(b);
            break;
        case YAML_SCALAR_EVENT: rc = on_scalar(b, &ev); break;
        case YAML_ALIAS_EVENT: rc = on_alias(b, &ev); break;
        case YAML_SEQUENCE_START_EVENT: rc = on_open(b, &ev, false); break;
        case YAML_MAPPING_START_EVENT: rc = on_open(b, &ev, true); break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: rc = on_close(b); break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    builder_reset(b);
    free(b->anchors);
    free(b);
    if (rc) {
        cJSON_Delete(docs);
        return rc;
    }
    *out = docs;
    return 0;
}

int yamljson_parse_one(const char *buf, size_t len, cJSON **out, char *err, size_t errlen)
{
    cJSON *docs;
    int rc = yamljson_parse_all(buf, len, &docs, err, errlen);

    *out = NULL;
    if (rc)
        return rc;
    if (cJSON_GetArraySize(docs) != 1) {
        if (err && errlen)
            snprintf(err, errlen, "yaml: expected exactly one document, found %d",
                     cJSON_GetArraySize(docs));
        cJSON_Delete(docs);
        return -EINVAL;
    }
    *out = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    return 0;
}

/*
 * patch_fields_direct.c - a create's managedFields without a field set.
 *
 * A create that carries no managedFields makes its manager the owner of every
 * field, so its fieldsV1 is a function of the object's shape alone. The general
 * path (patch_fields.c) flattens the object into a hashed set of paths and prints
 * the set back as a tree; that was ~45% of kubesim's work per create. Here the
 * same tree is printed in one recursive walk of the object, following fs_walk's
 * rules step for step (which fields are skipped, "." last on maps and first on
 * keyed list elements, atomic lists, sets of primitives, element keys).
 *
 * The walk gives up (-EAGAIN) wherever the set would merge or cut something:
 * repeated member names or list keys, a name holding FS_SEP, a path or depth near
 * the set's bounds. The caller then takes the general path, so the bytes are
 * always those of patch__fs_print_fieldsv1(patch__fs_from_object(obj)); test_sim_perf and
 * fuzz_patch compare the two.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_text.h"
#include "kubesim/patch/internal.h"
#include "util/util.h"

struct dw {
    const struct fs_keys *k;
    struct buf *b;
    size_t n;                   /* paths the set would hold */
};

/* Appends the member header ,"name":{ (comma unless first). */
static int put_head(struct dw *w, bool first, const char *name, size_t len)
{
    if (len > (SIZE_MAX - 8) / 6 || buf_reserve(w->b, len * 6 + 8))
        return -ENOMEM;
    char *o = w->b->data + w->b->len;
    if (!first)
        *o++ = ',';
    o = json_text_put_str(o, name, len);
    memcpy(o, ":{", 2);
    w->b->len = (size_t)(o + 2 - w->b->data);
    return 0;
}

/* A leaf: ,"name":{} */
static int put_leaf(struct dw *w, bool first, const char *name, size_t len)
{
    int rc = put_head(w, first, name, len);
    w->n++;
    return rc ? rc : buf_append(w->b, "}", 1);
}

static int walk_obj(struct dw *w, const cJSON *obj, size_t plen, const char *dotted,
                    int depth, bool after_dot, size_t *emitted);

/* A list member at path length plen (its own component included). */
static int walk_list(struct dw *w, bool first, const char *comp, size_t clen,
                     const cJSON *list, size_t plen, const char *dotted, int depth)
{
    const char *const *keys = NULL;
    int kind = patch__fs_list_keys(w->k, dotted, &keys), rc = 0;
    size_t n = (size_t)cJSON_GetArraySize(list), i;
    const cJSON *e;

    if (kind == 0 || n == 0)
        return put_leaf(w, first, comp, clen);
    if (n > 256)
        return -EAGAIN;        /* the duplicate checks below are quadratic */
    char **names = calloc(n, sizeof(*names));
    if (!names)
        return -ENOMEM;
    i = 0;
    cJSON_ArrayForEach(e, list) {
        if (i >= n)
            break;
        if (kind == 2) {
            char *json = cJSON_PrintUnformatted(e);
            if (!json) {
                rc = -ENOMEM;
                goto out;
            }
            size_t jl = strlen(json);
            names[i] = malloc(jl + 3);
            if (names[i]) {
                memcpy(names[i], "v:", 2);
                memcpy(names[i] + 2, json, jl + 1);
            }
            free(json);
            if (!names[i]) {
                rc = -ENOMEM;
                goto out;
            }
        } else if (!(names[i] = patch__fs_elem_key(e, w->k, dotted, keys))) {
            /* an element without its key: the list is owned atomically */
            rc = put_leaf(w, first, comp, clen);
            goto out;
        }
        /* the set would merge equal elements, and its paths are bounded */
        if (plen + 1 + strlen(names[i]) + 64 >= FS_PATH_MAX) {
            rc = -EAGAIN;
            goto out;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(names[j], names[i])) {
                rc = -EAGAIN;
                goto out;
            }
        i++;
    }
    if ((rc = put_head(w, first, comp, clen)))
        goto out;
    i = 0;
    cJSON_ArrayForEach(e, list) {
        if (i >= n)
            break;
        size_t el = strlen(names[i]), sub;
        if ((rc = put_head(w, i == 0, names[i], el)))
            goto out;
        w->n++;
        if (kind == 2) {
            rc = buf_append(w->b, "}", 1);
        } else {
            /* a keyed element owns itself: "." first, then its fields */
            if ((rc = buf_append(w->b, "\".\":{}", 6)))
                goto out;
            rc = walk_obj(w, e, plen + 1 + el, dotted, depth + 1, true, &sub);
            if (!rc)
                rc = buf_append(w->b, "}", 1);
        }
        if (rc)
            goto out;
        i++;
    }
    rc = buf_append(w->b, "}", 1);
out:
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* Writes obj's members as children of the current node (after its "." when
 * after_dot); *emitted counts them. */
static int walk_obj(struct dw *w, const cJSON *obj, size_t plen, const char *dotted,
                    int depth, bool after_dot, size_t *emitted)
{
    const cJSON *m;
    char sub[PATCH_PATH_MAX], comp[FS_PATH_MAX];
    size_t dl = strlen(dotted);
    int rc;

    *emitted = 0;
    if (depth > FS_MAX_DEPTH - 4)
        return -EAGAIN;
    cJSON_ArrayForEach(m, obj) {
        if (!m->string || patch__fs_skip_field(dotted, m->string))
            continue;
        size_t nl = strlen(m->string), sl = dl, np = plen + (plen ? 1 : 0) + 2 + nl;
        if (np + 64 >= FS_PATH_MAX || memchr(m->string, FS_SEP, nl))
            return -EAGAIN;
        /* the set would merge a repeated member name */
        for (const cJSON *o = obj->child; o != m; o = o->next)
            if (o->string && !strcmp(o->string, m->string))
                return -EAGAIN;
        memcpy(sub, dotted, dl + 1);
        if (!patch__path_push(sub, &sl, m->string))
            return -EAGAIN;
        memcpy(comp, "f:", 2);
        memcpy(comp + 2, m->string, nl + 1);
        bool first = *emitted == 0 && !after_dot;
        if (cJSON_IsObject(m) && m->child) {
            size_t mark = w->b->len, n_before = w->n, inner;
            if ((rc = put_head(w, first, comp, nl + 2)) ||
                (rc = walk_obj(w, m, np, sub, depth + 1, false, &inner)))
                return rc;
            if (inner == 0) {
                /* nothing owned below: the set has no node here at all */
                w->b->len = mark;
                w->b->data[mark] = 0;
                w->n = n_before;
                continue;
            }
            /* as fs_walk: "." (added after the children) on maps, not on the
             * well-known structs */
            bool structish = !strcmp(m->string, "metadata") || !strcmp(m->string, "spec") ||
                             !strcmp(m->string, "template") || !strcmp(m->string, "status");
            if (!structish) {
                if ((rc = buf_append(w->b, ",\".\":{}", 7)))
                    return rc;
                w->n++;
            }
            if ((rc = buf_append(w->b, "}", 1)))
                return rc;
        } else if (cJSON_IsArray(m)) {
            if ((rc = walk_list(w, first, comp, nl + 2, m, np, sub, depth + 1)))
                return rc;
        } else if ((rc = put_leaf(w, first, comp, nl + 2))) {
            return rc;
        }
        (*emitted)++;
    }
    return 0;
}

int patch__fs_print_object_fieldsv1(const cJSON *obj, const struct fs_keys *k, struct buf *out,
                             size_t *n_fields)
{
    struct dw w = { k, out, 0 };
    size_t start = out->len, emitted = 0;
    int rc;

    *n_fields = 0;
    if (!cJSON_IsObject(obj))
        return 0;
    if ((rc = buf_append(out, "{", 1)) || (rc = walk_obj(&w, obj, 0, "", 0, false, &emitted)) ||
        (rc = buf_append(out, "}", 1)) || emitted == 0) {
        out->len = start;
        if (out->data)
            out->data[start] = 0;
        return rc;
    }
    *n_fields = w.n;
    return 0;
}

/*
 * table.c - meta.k8s.io/v1 Tables for `kubectl get`: the column definitions and
 * pre-formatted cells the API server computes (the cells themselves: cells.c).
 *
 * Custom resources get their additionalPrinterColumns, evaluated with the
 * JSONPath subset CRDs use (.a.b, .a[0].b, .a[*].b, ['x.y'], escaped dots);
 * built-in kinds get the printers of printers.c; anything else gets
 * Name and Age. Every row carries the object's metadata as a
 * PartialObjectMetadata (kubectl's -A, --show-labels and --sort-by need it).
 */
#include "kubesim/present/present.h"
#include "kubesim/present/internal.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSONPATH_MAX_RESULTS 256
#define JSONPATH_MAX_STEPS   32
#define JSONPATH_MAX_KEY     256

/* ---- JSONPath subset ------------------------------------------------------------- */

struct jp_step {
    char key[JSONPATH_MAX_KEY];   /* "" for an index step */
    bool is_index, wildcard;
    long index;
};

/* Parses ".a.b[0]['c.d'][*]", optionally wrapped in {}. Returns steps or -EINVAL. */
static int jp_parse(const char *p, struct jp_step *steps, size_t max)
{
    size_t n = 0, len = strlen(p);
    const char *end = p + len;

    if (len >= 2 && p[0] == '{' && end[-1] == '}')
        p++, end--;
    while (p < end) {
        struct jp_step *st;
        size_t k = 0;
        if (n == max)
            return -EINVAL;
        st = &steps[n];
        memset(st, 0, sizeof(*st));
        if (*p == '.') {
            p++;
            while (p < end && *p != '.' && *p != '[') {
                if (*p == '\\' && p + 1 < end)
                    p++;
                if (k + 1 >= sizeof(st->key))
                    return -EINVAL;
                st->key[k++] = *p++;
            }
            if (k == 0) {
                if (n == 0 && p == end)
                    return 0;   /* "." alone: the object itself */
                return -EINVAL;
            }
        } else if (*p == '[') {
            p++;
            if (p < end && (*p == '\'' || *p == '"')) {
                char q = *p++;
                while (p < end && *p != q) {
                    if (k + 1 >= sizeof(st->key))
                        return -EINVAL;
                    st->key[k++] = *p++;
                }
                if (p >= end)
                    return -EINVAL;
                p++;
            } else if (p < end && *p == '*') {
                st->is_index = st->wildcard = true;
                p++;
            } else {
                char *e;
                st->is_index = true;
                st->index = strtol(p, &e, 10);
                if (e == p || e > end)
                    return -EINVAL;
                p = e;
            }
            if (p >= end || *p != ']')
                return -EINVAL;
            p++;
        } else {
            return -EINVAL;
        }
        n++;
    }
    return (int)n;
}

static void jp_eval(const cJSON *v, const struct jp_step *steps, size_t n,
                    const cJSON **out, size_t *nout, int depth)
{
    if (!v || *nout >= JSONPATH_MAX_RESULTS || depth > JSONPATH_MAX_STEPS)
        return;
    if (n == 0) {
        out[(*nout)++] = v;
        return;
    }
    if (!steps->is_index) {
        if (cJSON_IsObject(v))
            jp_eval(cJSON_GetObjectItemCaseSensitive(v, steps->key), steps + 1, n - 1, out,
                    nout, depth + 1);
        else if (cJSON_IsArray(v) && depth > 0) {
            /* .items.name over an array applies to each element, as k8s JSONPath does */
            const cJSON *it;
            cJSON_ArrayForEach(it, v)
                jp_eval(cJSON_GetObjectItemCaseSensitive(it, steps->key), steps + 1, n - 1,
                        out, nout, depth + 1);
        }
        return;
    }
    if (!cJSON_IsArray(v))
        return;
    if (steps->wildcard) {
        const cJSON *it;
        cJSON_ArrayForEach(it, v)
            jp_eval(it, steps + 1, n - 1, out, nout, depth + 1);
        return;
    }
    long idx = steps->index, size = cJSON_GetArraySize(v);
    if (idx < 0)
        idx += size;
    if (idx >= 0 && idx < size)
        jp_eval(cJSON_GetArrayItem(v, (int)idx), steps + 1, n - 1, out, nout, depth + 1);
}

/* Go's %v of a JSON value, as the server's JSONPath printer writes string columns. */
static int format_value(const cJSON *v, struct buf *b)
{
    char *txt;
    int rc;

    if (cJSON_IsString(v))
        return buf_puts(b, v->valuestring);
    if (cJSON_IsBool(v))
        return buf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9.2e18)
            return buf_printf(b, "%lld", (long long)d);
        return buf_printf(b, "%g", d);
    }
    if (cJSON_IsNull(v))
        return buf_puts(b, "<nil>");
    txt = cJSON_PrintUnformatted(v);
    if (!txt)
        return -ENOMEM;
    rc = buf_puts(b, txt);
    free(txt);
    return rc;
}

/* One CRD column's cell, as apiextensions' table convertor computes it. */
static cJSON *crd_cell(const struct reg_column *col, const cJSON *obj, time_t now)
{
    struct jp_step steps[JSONPATH_MAX_STEPS];
    const cJSON *res[JSONPATH_MAX_RESULTS];
    size_t nres = 0;
    int n = jp_parse(col->json_path, steps, JSONPATH_MAX_STEPS);
    const cJSON *v;

    if (n < 0)
        return cJSON_CreateNull();
    jp_eval(obj, steps, (size_t)n, res, &nres, 0);
    if (nres == 0 || cJSON_IsNull(res[0]))
        return cJSON_CreateNull();
    v = res[0];
    if (strcmp(col->type, "string") == 0) {
        struct buf b = { 0 };
        cJSON *c;
        for (size_t i = 0; i < nres; i++)
            if ((i && buf_puts(&b, ",") < 0) || format_value(res[i], &b) < 0) {
                buf_free(&b);
                return NULL;
            }
        c = cJSON_CreateString(b.data ? b.data : "");
        buf_free(&b);
        return c;
    }
    if (strcmp(col->type, "integer") == 0)
        return cJSON_IsNumber(v) ? cJSON_CreateNumber(trunc(v->valuedouble)) : cJSON_CreateNull();
    if (strcmp(col->type, "number") == 0)
        return cJSON_IsNumber(v) ? cJSON_CreateNumber(v->valuedouble) : cJSON_CreateNull();
    if (strcmp(col->type, "boolean") == 0)
        return cJSON_IsBool(v) ? cJSON_CreateBool(cJSON_IsTrue(v)) : cJSON_CreateNull();
    if (strcmp(col->type, "date") == 0 && cJSON_IsString(v)) {
        char age[16];
        time_t t;
        if (util_parse_time(v->valuestring, &t) < 0)
            return cJSON_CreateString("<invalid>");
        present_human_age(t, now, age);
        return cJSON_CreateString(age);
    }
    return cJSON_CreateNull();
}

/* ---- the Table ----------------------------------------------------------------------- */

static int add_coldef(cJSON *defs, const char *name, const char *type, const char *format,
                      const char *desc, int priority)
{
    cJSON *c = cJSON_CreateObject();

    if (!c)
        return -ENOMEM;
    cJSON_AddItemToArray(defs, c);
    if (!cJSON_AddStringToObject(c, "name", name) || !cJSON_AddStringToObject(c, "type", type) ||
        !cJSON_AddStringToObject(c, "format", format ? format : "") ||
        !cJSON_AddStringToObject(c, "description", desc ? desc : "") ||
        !cJSON_AddNumberToObject(c, "priority", priority))
        return -ENOMEM;
    return 0;
}

static int add_columns(const struct reg_resource *res, const struct present_printer *pr,
                       cJSON *defs)
{
    int rc;

    if (pr) {
        for (size_t i = 0; i < pr->n_cols; i++)
            if ((rc = add_coldef(defs, pr->cols[i].name, pr->cols[i].type, pr->cols[i].format,
                                 pr->cols[i].description, pr->cols[i].priority)))
                return rc;
        return 0;
    }
    if ((rc = add_coldef(defs, "Name", "string", "name", present_name_desc, 0)))
        return rc;
    if (!res->builtin && res->n_columns) {
        for (size_t i = 0; i < res->n_columns; i++) {
            const struct reg_column *c = &res->columns[i];
            if ((rc = add_coldef(defs, c->name, c->type, c->format, c->description, c->priority)))
                return rc;
        }
        return 0;
    }
    return add_coldef(defs, "Age", "date", "", present_age_desc, 0);
}

static int add_cells(const struct reg_resource *res, const struct present_printer *pr,
                     const cJSON *obj, time_t now, cJSON *cells)
{
    char age[16];
    int rc;

    if (pr)
        return pr->cells(obj, now, cells);
    if ((rc = present__add_str(cells, json_get_str(obj, "metadata.name"))))
        return rc;
    if (!res->builtin && res->n_columns) {
        for (size_t i = 0; i < res->n_columns; i++) {
            cJSON *c = crd_cell(&res->columns[i], obj, now);
            if (!c)
                return -ENOMEM;
            cJSON_AddItemToArray(cells, c);
        }
        return 0;
    }
    present__age_of(json_get_str(obj, "metadata.creationTimestamp"), now, age);
    return present__add_str(cells, age);
}

/* PartialObjectMetadata of obj: its whole metadata except managedFields (large, and
 * never needed by a table reader). */
static cJSON *partial_metadata(const cJSON *obj)
{
    cJSON *o = cJSON_CreateObject(), *meta;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

    if (!o || !cJSON_AddStringToObject(o, "kind", "PartialObjectMetadata") ||
        !cJSON_AddStringToObject(o, "apiVersion", "meta.k8s.io/v1"))
        goto fail;
    meta = cJSON_IsObject(src) ? cJSON_Duplicate(src, 1) : cJSON_CreateObject();
    if (!meta)
        goto fail;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON_AddItemToObject(o, "metadata", meta);
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

int present_table(const struct reg_resource *res, const cJSON *const *items, size_t n,
                  const char *list_rv, const char *continue_token, bool include_columns,
                  time_t now, struct buf *out)
{
    const struct present_printer *pr = res ? present__builtin_printer(res) : NULL;
    cJSON *doc = cJSON_CreateObject(), *meta, *defs, *rows;
    int rc = -ENOMEM;

    if (!res) {
        cJSON_Delete(doc);
        return -EINVAL;
    }
    if (!doc || !cJSON_AddStringToObject(doc, "kind", "Table") ||
        !cJSON_AddStringToObject(doc, "apiVersion", "meta.k8s.io/v1") ||
        !(meta = cJSON_AddObjectToObject(doc, "metadata")) ||
        (list_rv && !cJSON_AddStringToObject(meta, "resourceVersion", list_rv)) ||
        (continue_token && *continue_token &&
         !cJSON_AddStringToObject(meta, "continue", continue_token)) ||
        !(defs = cJSON_AddArrayToObject(doc, "columnDefinitions")) ||
        !(rows = cJSON_AddArrayToObject(doc, "rows")))
        goto out;
    if (include_columns && (rc = add_columns(res, pr, defs)) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        cJSON *row = cJSON_CreateObject(), *cells, *po;
        rc = -ENOMEM;
        if (!row)
            goto out;
        cJSON_AddItemToArray(rows, row);
        if (!(cells = cJSON_AddArrayToObject(row, "cells")))
            goto out;
        if ((rc = add_cells(res, pr, items[i], now, cells)) < 0)
            goto out;
        rc = -ENOMEM;
        if (!(po = partial_metadata(items[i])))
            goto out;
        cJSON_AddItemToObject(row, "object", po);
    }
    rc = present__print(doc, out);
out:
    cJSON_Delete(doc);
    return rc;
}

/*
 * schema.c - compiles a CRD version's openAPIV3Schema into the immutable tree of
 * schema_int.h, once per CRD, so that each request validates by walking plain structs
 * (sorted property arrays, pre-compiled regexes and CEL rules) instead of re-reading
 * JSON. Identical patterns are compiled once: KubeRay's CRDs repeat the quantity
 * pattern hundreds of times.
 *
 * anyOf/allOf/oneOf/not are accepted and ignored: in a structural schema they may only
 * add value validations, which kubesim does not check (see docs/kubesim-patch-and-schema.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/schema/schema.h"
#include "kubesim/schema/internal.h"
#include "util/json.h"

struct cctx {
    struct schema *s;
    char *err;
    size_t errlen;
};

static void cerr(struct cctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cerr(struct cctx *c, const char *fmt, ...)
{
    va_list ap;
    if (!c->err || !c->errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
}

static void node_free(struct snode *n)
{
    if (!n)
        return;
    cJSON_Delete(n->enum_vals);
    cJSON_Delete(n->default_val);
    for (size_t i = 0; i < n->nrequired; i++)
        free(n->required[i]);
    free(n->required);
    for (size_t i = 0; i < n->nprops; i++) {
        free(n->props[i].name);
        node_free(n->props[i].node);
    }
    free(n->props);
    node_free(n->items);
    node_free(n->additional);
    for (char **k = n->map_keys; k && *k; k++)
        free(*k);
    free(n->map_keys);
    for (size_t i = 0; i < n->nrules; i++) {
        schema__cel_free(n->rules[i].expr);
        free(n->rules[i].message);
        free(n->rules[i].reason);
        free(n->rules[i].rule);
    }
    free(n->rules);
    free(n);
}

void schema_free(struct schema *s)
{
    if (!s)
        return;
    node_free(s->root);
    for (size_t i = 0; i < s->npatterns; i++) {
        if (s->patterns[i].ok)
            regfree(&s->patterns[i].re);
        free(s->patterns[i].src);
    }
    free(s->patterns);
    free(s);
}

static bool get_bool(const cJSON *j, const char *name)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, name));
}

static int64_t get_int(const cJSON *j, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9e15)
        return -1;
    return (int64_t)v->valuedouble;
}

static const regex_t *get_pattern(struct cctx *c, const char *src, const char **src_out)
{
    struct schema *s = c->s;
    for (size_t i = 0; i < s->npatterns; i++)
        if (!strcmp(s->patterns[i].src, src)) {
            *src_out = s->patterns[i].src;
            return s->patterns[i].ok ? &s->patterns[i].re : NULL;
        }
    /* nodes point into the pool, so it never moves: a fixed 256 distinct patterns;
     * past that a pattern is not enforced */
    if (s->npatterns >= 256)
        return NULL;
    if (!s->patterns && !(s->patterns = calloc(256, sizeof(*s->patterns))))
        return NULL;
    struct spattern *p = &s->patterns[s->npatterns];
    if (!(p->src = strdup(src)))
        return NULL;
    s->npatterns++;
    /* Kubernetes patterns are ECMA-262; the ones CRDs use in practice are valid POSIX
     * EREs. One that is not is kept as source only and not enforced. */
    p->ok = regcomp(&p->re, src, REG_EXTENDED | REG_NOSUB) == 0;
    *src_out = p->src;
    return p->ok ? &p->re : NULL;
}

static int cmp_prop(const void *a, const void *b)
{
    return strcmp(((const struct sprop *)a)->name, ((const struct sprop *)b)->name);
}

const struct snode *schema__prop(const struct snode *n, const char *name)
{
    struct sprop key = { (char *)name, NULL };
    if (!n || !n->nprops)
        return NULL;
    const struct sprop *p = bsearch(&key, n->props, n->nprops, sizeof(key), cmp_prop);
    return p ? p->node : NULL;
}

static int compile_node(struct cctx *c, const cJSON *j, int depth, const char *where,
                        struct snode **out);

/* Copies the strings of arr into a NULL-terminated array (*out, owned by the node). */
static int strs_from(const cJSON *arr, char ***out, size_t *n)
{
    size_t cnt = 0, i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
        cnt++;
    char **v = calloc(cnt + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    cJSON_ArrayForEach(e, arr) {
        if (!cJSON_IsString(e))
            continue;
        if (!(v[i] = strdup(e->valuestring))) {
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            return -ENOMEM;
        }
        i++;
    }
    *out = v;
    if (n)
        *n = i;
    return 0;
}

static int compile_rules(struct cctx *c, struct snode *n, const cJSON *arr, const char *where)
{
    const cJSON *r;
    size_t cnt = (size_t)cJSON_GetArraySize(arr), i = 0;
    int rc;

    if (!cnt)
        return 0;
    if (!(n->rules = calloc(cnt, sizeof(*n->rules))))
        return -ENOMEM;
    cJSON_ArrayForEach(r, arr) {
        const cJSON *rule = cJSON_GetObjectItemCaseSensitive(r, "rule");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(r, "message");
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(r, "reason");
        struct srule *sr = &n->rules[i];
        if (!cJSON_IsString(rule)) {
            cerr(c, "%s: x-kubernetes-validations[%zu].rule: Required value", where, i);
            return -EINVAL;
        }
        n->nrules = ++i;
        c->s->rules_total++;
        if (!(sr->rule = strdup(rule->valuestring)))
            return -ENOMEM;
        if (cJSON_IsString(msg) && !(sr->message = strdup(msg->valuestring)))
            return -ENOMEM;
        if (cJSON_IsString(reason) && !(sr->reason = strdup(reason->valuestring)))
            return -ENOMEM;
        rc = schema__cel_compile(rule->valuestring, &sr->expr);
        if (rc == -ENOMEM)
            return rc;
        if (rc)
            c->s->rules_unsupported++;
    }
    return 0;
}

static int compile_props(struct cctx *c, struct snode *n, const cJSON *props, int depth,
                         const char *where)
{
    const cJSON *p;
    char sub[512];
    size_t cnt = (size_t)cJSON_GetArraySize(props), i = 0;
    int rc;

    if (!cnt)
        return 0;
    if (!(n->props = calloc(cnt, sizeof(*n->props))))
        return -ENOMEM;
    cJSON_ArrayForEach(p, props) {
        if (!p->string)
            continue;
        snprintf(sub, sizeof(sub), "%s.%s", where, p->string);
        if (!(n->props[i].name = strdup(p->string)))
            return -ENOMEM;
        n->nprops = ++i;
        if ((rc = compile_node(c, p, depth + 1, sub, &n->props[i - 1].node)))
            return rc;
    }
    qsort(n->props, n->nprops, sizeof(*n->props), cmp_prop);
    return 0;
}

/* The structural type an OpenAPI "type" names; ST_ANY for one the apiserver does not accept. */
static enum stype type_named(const char *t)
{
    static const struct {
        const char *name;
        enum stype type;
    } types[] = {
        { "object", ST_OBJECT }, { "array", ST_ARRAY }, { "string", ST_STRING },
        { "integer", ST_INTEGER }, { "number", ST_NUMBER }, { "boolean", ST_BOOLEAN },
    };

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (!strcmp(t, types[i].name))
            return types[i].type;
    return ST_ANY;
}

static int compile_node(struct cctx *c, const cJSON *j, int depth, const char *where,
                        struct snode **out)
{
    struct snode *n;
    const cJSON *v;
    int rc = 0;

    *out = NULL;
    if (!cJSON_IsObject(j)) {
        cerr(c, "%s: schema must be an object", where);
        return -EINVAL;
    }
    if (depth > SCHEMA_MAX_DEPTH || ++c->s->nodes > SCHEMA_MAX_NODES) {
        cerr(c, "%s: schema too deep or too large", where);
        return -E2BIG;
    }
    if (!(n = calloc(1, sizeof(*n))))
        return -ENOMEM;
    *out = n;
    n->min_len = n->max_len = n->min_items = n->max_items = n->min_props = n->max_props = -1;

    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "type"));
    if (t && (n->type = type_named(t)) == ST_ANY) {
        cerr(c, "%s.type: Unsupported value: \"%s\"", where, t);
        return -EINVAL;
    }
    const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "format"));
    if (f && !strcmp(f, "int32")) n->format = SF_INT32;
    else if (f && !strcmp(f, "int64")) n->format = SF_INT64;
    else if (f && !strcmp(f, "date-time")) n->format = SF_DATETIME;

    n->nullable = get_bool(j, "nullable");
    n->preserve_unknown = get_bool(j, "x-kubernetes-preserve-unknown-fields");
    n->embedded = get_bool(j, "x-kubernetes-embedded-resource");
    n->int_or_string = get_bool(j, "x-kubernetes-int-or-string");
    n->unique_items = get_bool(j, "uniqueItems");
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "minimum"))) {
        n->has_min = true;
        n->minimum = v->valuedouble;
        n->excl_min = get_bool(j, "exclusiveMinimum");
    }
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "maximum"))) {
        n->has_max = true;
        n->maximum = v->valuedouble;
        n->excl_max = get_bool(j, "exclusiveMaximum");
    }
    n->min_len = get_int(j, "minLength");
    n->max_len = get_int(j, "maxLength");
    n->min_items = get_int(j, "minItems");
    n->max_items = get_int(j, "maxItems");
    n->min_props = get_int(j, "minProperties");
    n->max_props = get_int(j, "maxProperties");
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(j, "pattern")))
        n->pattern = get_pattern(c, v->valuestring, &n->pattern_src);
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(j, "enum")) &&
        !(n->enum_vals = cJSON_Duplicate(v, true)))
        return -ENOMEM;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "default")) &&
        !(n->default_val = cJSON_Duplicate(v, true)))
        return -ENOMEM;
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(j, "required")) &&
        (rc = strs_from(v, &n->required, &n->nrequired)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "properties"))) {
        if (!cJSON_IsObject(v)) {
            cerr(c, "%s.properties: must be an object", where);
            return -EINVAL;
        }
        if ((rc = compile_props(c, n, v, depth, where)))
            return rc;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "items"))) {
        char sub[512];
        snprintf(sub, sizeof(sub), "%s.items", where);
        if ((rc = compile_node(c, v, depth + 1, sub, &n->items)))
            return rc;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "additionalProperties"))) {
        char sub[512];
        snprintf(sub, sizeof(sub), "%s.additionalProperties", where);
        if (cJSON_IsFalse(v))
            n->additional_false = true;
        else if (cJSON_IsObject(v) && (rc = compile_node(c, v, depth + 1, sub, &n->additional)))
            return rc;
    }
    const char *lt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j,
                                          "x-kubernetes-list-type"));
    if (lt && !strcmp(lt, "atomic")) n->list_type = SL_ATOMIC;
    else if (lt && !strcmp(lt, "set")) n->list_type = SL_SET;
    else if (lt && !strcmp(lt, "map")) n->list_type = SL_MAP;
    if (n->list_type == SL_MAP) {
        v = cJSON_GetObjectItemCaseSensitive(j, "x-kubernetes-list-map-keys");
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) {
            cerr(c, "%s.x-kubernetes-list-map-keys: Required value: must not be empty if "
                 "x-kubernetes-list-type is map", where);
            return -EINVAL;
        }
        if ((rc = strs_from(v, &n->map_keys, NULL)))
            return rc;
    }
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(j, "x-kubernetes-validations")) &&
        (rc = compile_rules(c, n, v, where)))
        return rc;
    return 0;
}

int schema_compile(const cJSON *openapi_v3_schema, struct schema **out, char *err, size_t errlen)
{
    struct cctx c = { NULL, err, errlen };
    int rc;

    *out = NULL;
    if (!(c.s = calloc(1, sizeof(*c.s))))
        return -ENOMEM;
    rc = compile_node(&c, openapi_v3_schema, 0, "openAPIV3Schema", &c.s->root);
    if (rc) {
        schema_free(c.s);
        return rc == -E2BIG ? -EINVAL : rc;
    }
    *out = c.s;
    return 0;
}

size_t schema_rules_unsupported(const struct schema *s)
{
    return s ? s->rules_unsupported : 0;
}

size_t schema_rules_total(const struct schema *s)
{
    return s ? s->rules_total : 0;
}

const char *const *schema_list_map_keys(const struct schema *s, const char *path)
{
    const struct snode *n = s ? s->root : NULL;
    char seg[256];

    if (!path)
        return NULL;
    while (n && *path) {
        if (json_path_next(&path, seg, sizeof(seg)) < 0)
            return NULL;
        while (n && n->type == ST_ARRAY)
            n = n->items;
        const struct snode *next = schema__prop(n, seg);
        n = next ? next : (n ? n->additional : NULL);
    }
    if (!n || n->type != ST_ARRAY || n->list_type != SL_MAP)
        return NULL;
    return (const char *const *)n->map_keys;
}

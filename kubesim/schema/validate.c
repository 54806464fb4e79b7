/*
 * schema_validate.c - schema_apply: one walk over a custom resource that prunes,
 * defaults and validates it against a compiled schema, as apiextensions-apiserver does
 * (nulls of non-nullable fields and unknown fields pruned first, then defaults, then
 * validation, then x-kubernetes-validations rules). As in the apiextensions strategy,
 * rule failures are dropped when the object has a NotSupported, Required or TypeInvalid error,
 * and a single cause says some rules were not checked.
 *
 * Causes follow field.Error: reason, a message body such as
 *   Invalid value: "string": spec.replicas in body must be of type integer: "string"
 * and the field path "spec.workerGroupSpecs[0].replicas".
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kubesim/schema/schema.h"
#include "kubesim/schema/internal.h"
#include "util/util.h"

#define MAX_CAUSES 256
#define PATH_MAX_LEN 1024
#define WALK_MAX_DEPTH 256

struct vctx {
    cJSON *causes, *unknown;
    cJSON *rule_causes; /* rule failures, kept apart until we know there is no blocking error */
    bool in_rules, blocking, any_rules;
    int ncauses;
    bool oom;
    char path[PATH_MAX_LEN];
    size_t plen;
};

/* ---- causes ------------------------------------------------------------------- */

static void add_cause(struct vctx *c, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_cause(struct vctx *c, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    cJSON *o;

    cJSON *dst = c->in_rules ? c->rule_causes : c->causes;
    /* schema errors that stop the rules (a rule's own reason never does) */
    if (!c->in_rules && (!strcmp(reason, "FieldValueNotSupported") ||
                         !strcmp(reason, "FieldValueTypeInvalid") ||
                         !strcmp(reason, "FieldValueRequired")))
        c->blocking = true;
    c->ncauses++;
    if (!dst || c->ncauses > MAX_CAUSES)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!(o = cJSON_CreateObject()) || !cJSON_AddStringToObject(o, "reason", reason) ||
        !cJSON_AddStringToObject(o, "message", msg) ||
        !cJSON_AddStringToObject(o, "field", c->path)) {
        cJSON_Delete(o);
        c->oom = true;
        return;
    }
    cJSON_AddItemToArray(dst, o);
}

/* The value as field errors print it: strings quoted, numbers plain, others by type. */
static void show_value(const cJSON *v, char *out, size_t len)
{
    if (cJSON_IsString(v)) {
        snprintf(out, len, "\"%.200s\"", v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        if (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)
            snprintf(out, len, "%.0f", v->valuedouble);
        else
            snprintf(out, len, "%g", v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        snprintf(out, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else {
        snprintf(out, len, "\"%s\"", cJSON_IsObject(v) ? "object" : cJSON_IsArray(v) ? "array"
                                                                               : "null");
    }
}

static const char *type_name(const cJSON *v)
{
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsNumber(v)) return v->valuedouble == floor(v->valuedouble) ? "integer" : "number";
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsObject(v)) return "object";
    if (cJSON_IsArray(v)) return "array";
    return "null";
}

/* ---- paths ---------------------------------------------------------------------- */

static size_t push_field(struct vctx *c, const char *name)
{
    size_t save = c->plen;
    int n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "%s%s",
                     c->plen ? "." : "", name);
    if (n > 0)
        c->plen = c->plen + (size_t)n < sizeof(c->path) ? c->plen + (size_t)n
                                                        : sizeof(c->path) - 1;
    return save;
}

static size_t push_index(struct vctx *c, int i, const char *key)
{
    size_t save = c->plen;
    int n = key ? snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "[%s]", key)
                : snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "[%d]", i);
    if (n > 0)
        c->plen = c->plen + (size_t)n < sizeof(c->path) ? c->plen + (size_t)n
                                                        : sizeof(c->path) - 1;
    return save;
}

static void pop(struct vctx *c, size_t save)
{
    c->plen = save;
    c->path[save] = '\0';
}

static void record_unknown(struct vctx *c, const char *name)
{
    char p[PATH_MAX_LEN + 2];
    if (!c->unknown)
        return;
    snprintf(p, sizeof(p), ".%s%s%s", c->path, c->plen ? "." : "", name);
    if (!cJSON_AddItemToArray(c->unknown, cJSON_CreateString(p)))
        c->oom = true;
}

/* ---- scalar checks ---------------------------------------------------------------- */

static bool type_ok(const struct snode *n, const cJSON *v)
{
    if (n->int_or_string)
        return cJSON_IsString(v) || (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble));
    switch (n->type) {
    case ST_ANY: return true;
    case ST_OBJECT: return cJSON_IsObject(v);
    case ST_ARRAY: return cJSON_IsArray(v);
    case ST_STRING: return cJSON_IsString(v);
    case ST_INTEGER: return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
                            isfinite(v->valuedouble);
    case ST_NUMBER: return cJSON_IsNumber(v);
    case ST_BOOLEAN: return cJSON_IsBool(v);
    }
    return false;
}

static const char *const type_names[] = { "", "object", "array", "string", "integer",
                                          "number", "boolean" };

static size_t utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static void check_number(struct vctx *c, const struct snode *n, const cJSON *v, const char *sv)
{
    double d = v->valuedouble;
    if (n->has_min && (n->excl_min ? d <= n->minimum : d < n->minimum))
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body should be greater "
                  "than %s%g", sv, c->path, n->excl_min ? "" : "or equal to ", n->minimum);
    if (n->has_max && (n->excl_max ? d >= n->maximum : d > n->maximum))
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body should be less "
                  "than %s%g", sv, c->path, n->excl_max ? "" : "or equal to ", n->maximum);
    if (n->format == SF_INT32 && (d < -2147483648.0 || d > 2147483647.0))
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body must be of type "
                  "int32", sv, c->path);
    if (n->format == SF_INT64 && (d < -9223372036854775808.0 || d >= 9223372036854775808.0))
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body must be of type "
                  "int64", sv, c->path);
}

static void check_string(struct vctx *c, const struct snode *n, const cJSON *v, const char *sv)
{
    const char *s = v->valuestring;
    time_t t;
    if (n->max_len >= 0 && (int64_t)utf8_len(s) > n->max_len)
        add_cause(c, "FieldValueTooLong", "Too long: may not be more than %lld bytes",
                  (long long)n->max_len);
    if (n->min_len >= 0 && (int64_t)utf8_len(s) < n->min_len)
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body should be at least "
                  "%lld chars long", sv, c->path, (long long)n->min_len);
    if (n->pattern && regexec(n->pattern, s, 0, NULL, 0) != 0)
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body should match '%s'",
                  sv, c->path, n->pattern_src);
    if (n->format == SF_DATETIME && util_parse_time(s, &t) != 0)
        add_cause(c, "FieldValueInvalid", "Invalid value: %s: %s in body must be of type "
                  "date-time: %s", sv, c->path, sv);
}

static void check_enum(struct vctx *c, const struct snode *n, const cJSON *v, const char *sv)
{
    const cJSON *e;
    char list[512] = "", one[128];
    size_t off = 0;
    cJSON_ArrayForEach(e, n->enum_vals)
        if (json_equal(e, v))
            return;
    cJSON_ArrayForEach(e, n->enum_vals) {
        show_value(e, one, sizeof(one));
        int w = snprintf(list + off, sizeof(list) - off, "%s%s", off ? ", " : "", one);
        if (w < 0 || off + (size_t)w >= sizeof(list))
            break;
        off += (size_t)w;
    }
    add_cause(c, "FieldValueNotSupported", "Unsupported value: %s: supported values: %s", sv,
              list);
}

/* ---- the walk ------------------------------------------------------------------------ */

static int walk(struct vctx *c, const struct snode *n, cJSON *v, const cJSON *old, int depth);

static void run_rules(struct vctx *c, const struct snode *n, const cJSON *v, const cJSON *old)
{
    char msg[256];
    c->in_rules = true;
    for (size_t i = 0; i < n->nrules; i++) {
        const struct srule *r = &n->rules[i];
        if (!r->expr || (schema__cel_uses_old(r->expr) && !old))
            continue;
        int rc = schema__cel_eval(r->expr, v, old, msg, sizeof(msg));
        if (rc == 1)
            continue;
        const char *reason = r->reason ? r->reason : "FieldValueInvalid";
        if (rc == 0 && r->message)
            add_cause(c, reason, "Invalid value: \"%s\": %s", type_name(v), r->message);
        else if (rc == 0)
            add_cause(c, reason, "Invalid value: \"%s\": failed rule: %s", type_name(v), r->rule);
        else
            add_cause(c, reason, "Invalid value: \"%s\": %s evaluating rule: %s", type_name(v),
                      msg, r->rule);
    }
    c->in_rules = false;
}

static bool list_key_str(const struct snode *n, const cJSON *e, char *out, size_t len)
{
    cJSON *k = cJSON_CreateObject();
    bool ok = k != NULL;
    for (char **key = n->map_keys; ok && key && *key; key++) {
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(e, *key);
        if (kv)
            ok = cJSON_AddItemToObject(k, *key, cJSON_Duplicate(kv, true));
    }
    char *s = ok ? cJSON_PrintUnformatted(k) : NULL;
    cJSON_Delete(k);
    if (!s)
        return false;
    snprintf(out, len, "%s", s);
    free(s);
    return true;
}

static bool same_keys(const struct snode *n, const cJSON *a, const cJSON *b)
{
    for (char **key = n->map_keys; key && *key; key++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, *key);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, *key);
        if (!x != !y || (x && !json_equal(x, y)))
            return false;
    }
    return true;
}

/* minItems/maxItems and minProperties/maxProperties. The apiserver words the too-many cause
 * "items" for both; only the too-few one names what it counts. A bound of -1 is unset. */
static void check_size(struct vctx *c, int size, long long min, long long max, const char *what)
{
    if (max >= 0 && size > max)
        add_cause(c, "FieldValueTooMany", "Too many: %d: must have at most %lld items", size, max);
    if (min >= 0 && size < min)
        add_cause(c, "FieldValueInvalid", "Invalid value: %d: %s in body should have at least "
                  "%lld %s", size, c->path, min, what);
}

static int walk_array(struct vctx *c, const struct snode *n, cJSON *v, const cJSON *old,
                      int depth)
{
    int size = cJSON_GetArraySize(v), i = 0, rc;
    cJSON *e;

    check_size(c, size, n->min_items, n->max_items, "items");
    cJSON_ArrayForEach(e, v) {
        const cJSON *olde = NULL, *o;
        size_t save = push_index(c, i, NULL);
        if (n->list_type == SL_MAP && cJSON_IsArray(old))
            cJSON_ArrayForEach(o, old)
                if (same_keys(n, o, e)) {
                    olde = o;
                    break;
                }
        if (n->items && (rc = walk(c, n->items, e, olde, depth + 1)))
            return rc;
        /* duplicates: sets and uniqueItems by value, maps by key; quadratic, but list
         * sizes are bounded by the request body */
        if (n->list_type == SL_SET || n->list_type == SL_MAP || n->unique_items) {
            int j = 0;
            cJSON_ArrayForEach(o, v) {
                if (j++ >= i)
                    break;
                bool dup = n->list_type == SL_MAP ? same_keys(n, o, e) : json_equal(o, e);
                if (dup) {
                    char shown[512];
                    if (n->list_type == SL_MAP) {
                        if (!list_key_str(n, e, shown, sizeof(shown)))
                            snprintf(shown, sizeof(shown), "?");
                    } else {
                        show_value(e, shown, sizeof(shown));
                    }
                    add_cause(c, "FieldValueDuplicate", "Duplicate value: %s", shown);
                    break;
                }
            }
        }
        pop(c, save);
        i++;
    }
    return 0;
}

static bool root_meta(int depth, const char *name)
{
    return depth == 0 && (!strcmp(name, "apiVersion") || !strcmp(name, "kind") ||
                          !strcmp(name, "metadata"));
}

static int walk_object(struct vctx *c, const struct snode *n, cJSON *v, const cJSON *old,
                       int depth)
{
    cJSON *m = v->child, *next;
    int rc;

    /* prune: nulls of non-nullable fields, then unknown fields */
    for (; m; m = next) {
        next = m->next;
        if (!m->string || root_meta(depth, m->string))
            continue;
        if (n->embedded && (!strcmp(m->string, "apiVersion") || !strcmp(m->string, "kind") ||
                            !strcmp(m->string, "metadata")))
            continue;
        const struct snode *p = schema__prop(n, m->string);
        if (!p && !n->additional && !n->preserve_unknown) {
            record_unknown(c, m->string);
            cJSON_Delete(cJSON_DetachItemViaPointer(v, m));
            continue;
        }
        if (!p)
            p = n->additional;
        if (p && cJSON_IsNull(m) && !p->nullable)
            cJSON_Delete(cJSON_DetachItemViaPointer(v, m));
    }
    /* defaults */
    for (size_t i = 0; i < n->nprops; i++) {
        const struct sprop *p = &n->props[i];
        if (!p->node->default_val || (depth == 0 && root_meta(0, p->name)) ||
            cJSON_GetObjectItemCaseSensitive(v, p->name))
            continue;
        cJSON *d = cJSON_Duplicate(p->node->default_val, true);
        if (!d || !cJSON_AddItemToObject(v, p->name, d)) {
            cJSON_Delete(d);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < n->nrequired; i++) {
        if (cJSON_GetObjectItemCaseSensitive(v, n->required[i]))
            continue;
        size_t save = push_field(c, n->required[i]);
        add_cause(c, "FieldValueRequired", "Required value");
        pop(c, save);
    }
    check_size(c, cJSON_GetArraySize(v), n->min_props, n->max_props, "properties");
    cJSON_ArrayForEach(m, v) {
        if (!m->string || root_meta(depth, m->string))
            continue;
        const struct snode *p = schema__prop(n, m->string);
        bool by_key = false;
        if (!p && n->additional) {
            p = n->additional;
            by_key = true;
        }
        if (!p)
            continue;
        const cJSON *oldm = cJSON_IsObject(old) ? cJSON_GetObjectItemCaseSensitive(old, m->string)
                                                : NULL;
        size_t save = by_key ? push_index(c, 0, m->string) : push_field(c, m->string);
        rc = walk(c, p, m, oldm, depth + 1);
        pop(c, save);
        if (rc)
            return rc;
    }
    return 0;
}

static int walk(struct vctx *c, const struct snode *n, cJSON *v, const cJSON *old, int depth)
{
    char sv[256];
    int rc = 0;

    if (!n)
        return 0;
    if (depth > WALK_MAX_DEPTH) {
        add_cause(c, "FieldValueInvalid", "Invalid value: \"object\": nesting too deep");
        return 0;
    }
    if (cJSON_IsNull(v) && n->nullable)
        return 0;
    show_value(v, sv, sizeof(sv));
    if (!type_ok(n, v)) {
        add_cause(c, "FieldValueTypeInvalid", "Invalid value: \"%s\": %s in body must be of "
                  "type %s: \"%s\"", type_name(v), c->path[0] ? c->path : "body",
                  n->int_or_string ? "integer or string" : type_names[n->type], type_name(v));
        return 0;
    }
    if (n->enum_vals)
        check_enum(c, n, v, sv);
    if (cJSON_IsNumber(v))
        check_number(c, n, v, sv);
    else if (cJSON_IsString(v))
        check_string(c, n, v, sv);
    else if (cJSON_IsArray(v))
        rc = walk_array(c, n, v, old, depth);
    else if (cJSON_IsObject(v) && n->type != ST_ANY)
        rc = walk_object(c, n, v, old, depth);
    else if (cJSON_IsObject(v) && (n->nprops || n->additional))
        rc = walk_object(c, n, v, old, depth);
    if (rc)
        return rc;
    if (n->nrules)
        run_rules(c, n, v, old);
    return c->oom ? -ENOMEM : 0;
}

int schema_apply(const struct schema *s, cJSON *obj, const cJSON *old, cJSON *causes,
                 cJSON *unknown)
{
    struct vctx *c;
    int rc;

    if (!s || !obj)
        return -EINVAL;
    if (!(c = calloc(1, sizeof(*c))))
        return -ENOMEM;
    c->causes = causes;
    c->unknown = unknown;
    c->any_rules = s->rules_total > 0;
    if (causes && !(c->rule_causes = cJSON_CreateArray())) {
        free(c);
        return -ENOMEM;
    }
    if (!cJSON_IsObject(obj)) {
        add_cause(c, "FieldValueTypeInvalid", "Invalid value: \"%s\": body must be of type "
                  "object", type_name(obj));
        rc = -EINVAL;
        goto out;
    }
    rc = walk(c, s->root, obj, old, 0);
    if (c->blocking && c->any_rules) {
        /* the rules' verdicts on an object of the wrong shape are not reported */
        cJSON_Delete(c->rule_causes);
        c->rule_causes = NULL;
        /* field.Invalid(nil, nil, ...): the path prints as <nil>, the value as null */
        c->plen = 5;
        memcpy(c->path, "<nil>", 6);
        add_cause(c, "FieldValueInvalid", "Invalid value: null: some validation rules were "
                  "not checked because the object was invalid; correct the existing errors to "
                  "complete validation");
    }
    if (c->rule_causes) {
        while (cJSON_GetArraySize(c->rule_causes) > 0)
            cJSON_AddItemToArray(causes, cJSON_DetachItemFromArray(c->rule_causes, 0));
    }
    if (!rc && c->ncauses)
        rc = -EINVAL;
    if (!rc && c->oom)
        rc = -ENOMEM;
out:
    cJSON_Delete(c->rule_causes);
    free(c);
    return rc;
}

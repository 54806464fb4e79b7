/*
 * meta.c - object metadata rules the store applies to every type: which name rule a
 * resource has (the syntax checks themselves are kubesim/schema/names.c),
 * ownerReferences, finalizer rules while deleting, uid/time generation and the
 * "did the spec change" test behind generation. Messages are those of apimachinery's
 * validation packages.
 */
#include "kobj/json_equal.h"
#include "kubesim/store/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define jget cJSON_GetObjectItemCaseSensitive

enum name_rule store__name_rule(const struct reg_resource *res)
{
    if (!res->builtin)
        return NAME_SUBDOMAIN;
    if (!res->group[0] && !strcmp(res->plural, "services"))
        return NAME_LABEL_1035;
    if (!res->group[0] && !strcmp(res->plural, "namespaces"))
        return NAME_LABEL_1123;
    return NAME_SUBDOMAIN;
}

static void check_owner_refs(const cJSON *refs, cJSON *causes)
{
    const cJSON *r;
    int controllers = 0;
    static const char *const req[][2] = {
        { "apiVersion", "version must not be empty" },
        { "kind", "kind must not be empty" },
        { "name", "name must not be empty" },
        { "uid", "uid must not be empty" },
    };

    if (!refs)
        return;
    if (!cJSON_IsArray(refs)) {
        status_cause_add(causes, "FieldValueInvalid", "metadata.ownerReferences",
                         "Invalid value: \"ownerReferences\": must be a list");
        return;
    }
    cJSON_ArrayForEach(r, refs) {
        for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
            const char *v = cJSON_GetStringValue(jget(r, req[i][0]));
            if (!v || !v[0]) {
                char field[64];
                snprintf(field, sizeof(field), "metadata.ownerReferences.%s", req[i][0]);
                status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"\": %s",
                                 req[i][1]);
            }
        }
        if (cJSON_IsTrue(jget(r, "controller")))
            controllers++;
    }
    if (controllers > 1)
        status_cause_add(causes, "FieldValueInvalid", "metadata.ownerReferences",
                         "Invalid value: \"ownerReferences\": Only one reference can have "
                         "Controller set to true");
}

static bool str_in_array(const cJSON *arr, const char *s)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, arr) {
        const char *v = cJSON_GetStringValue(x);
        if (v && !strcmp(v, s))
            return true;
    }
    return false;
}

void store__check_meta(const cJSON *obj, const cJSON *old, const struct reg_resource *res,
                       cJSON *causes)
{
    const cJSON *md = jget(obj, "metadata");
    const cJSON *fin;

    (void)res;
    if (!cJSON_IsObject(md))
        return;
    schema_check_labels(jget(md, "labels"), "metadata.labels", causes);
    schema_check_annotations(jget(md, "annotations"), "metadata.annotations", causes);
    check_owner_refs(jget(md, "ownerReferences"), causes);
    fin = jget(md, "finalizers");
    if (fin && !cJSON_IsArray(fin)) {
        status_cause_add(causes, "FieldValueInvalid", "metadata.finalizers",
                         "Invalid value: \"finalizers\": must be a list of strings");
        return;
    }
    if (old && kobj_meta_str(old, "deletionTimestamp") && fin) {
        const cJSON *ofin = jget(jget(old, "metadata"),
                                                "finalizers");
        const cJSON *f;
        struct buf b = { 0 };
        cJSON_ArrayForEach(f, fin) {
            const char *v = cJSON_GetStringValue(f);
            if (v && !str_in_array(ofin, v))
                buf_printf(&b, "%s\"%s\"", b.len ? ", " : "", v);
        }
        if (b.len)
            status_cause_add(causes, "FieldValueForbidden", "metadata.finalizers",
                             "Forbidden: no new finalizers can be added if the object is being "
                             "deleted, found new finalizers []string{%s}", b.data);
        buf_free(&b);
    }
}

/* ---- identifiers and time ---- */

static _Thread_local uint64_t rnd_state;

static uint64_t rnd_next(void)
{
    uint64_t x;

    if (!rnd_state) {
        if (getrandom(&rnd_state, sizeof(rnd_state), 0) != sizeof(rnd_state))
            rnd_state = util_now_ns() ^ (uint64_t)(uintptr_t)&x;
        rnd_state |= 1;
    }
    /* xorshift64*: uids need uniqueness, not secrecy */
    x = rnd_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rnd_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

void store__random_uid(char out[37])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    uint64_t x = rnd_next(), y = rnd_next();
    char *p = out;

    memcpy(b, &x, 8);
    memcpy(b + 8, &y, 8);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p = 0;
}

void store__random_suffix(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

    for (int i = 0; i < 5; i++)
        out[i] = alphabet[rnd_next() % (sizeof(alphabet) - 1)];
    out[5] = 0;
}

void store__now(char out[32])
{
    util_format_time(time(NULL), out);
}

/* ---- small accessors ---- */

cJSON *store__meta(cJSON *obj)
{
    cJSON *md = jget(obj, "metadata");

    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObject(obj, "metadata");
        md = cJSON_AddObjectToObject(obj, "metadata");
    }
    return md;
}

bool store__has_finalizer(const cJSON *obj, const char *f)
{
    return str_in_array(jget(jget(obj, "metadata"),
                                            "finalizers"), f);
}

static bool ignored_top(const struct reg_resource *res, const char *k)
{
    return !strcmp(k, "metadata") || !strcmp(k, "apiVersion") || !strcmp(k, "kind") ||
           (res->has_status && !strcmp(k, "status"));
}

/* Generation moves when anything outside metadata (and status, for types with a
 * status subresource) differs. */
bool store__spec_changed(const struct reg_resource *res, const cJSON *a, const cJSON *b)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, a) {
        if (ignored_top(res, x->string))
            continue;
        const cJSON *y = jget(b, x->string);
        if (!y || !json_equal(x, y))
            return true;
    }
    cJSON_ArrayForEach(x, b) {
        if (!ignored_top(res, x->string) && !jget(a, x->string))
            return true;
    }
    return false;
}

void store__set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v);
}

void store__set_num(cJSON *o, const char *k, double v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddNumberToObject(o, k, v);
}

/* No metadata.finalizers (and, for Namespaces, no spec.finalizers) left. */
bool store__finalizers_empty(const struct reg_resource *res, const cJSON *obj)
{
    const cJSON *f = jget(jget(obj, "metadata"), "finalizers");

    if (cJSON_GetArraySize(f) > 0)
        return false;
    if (!res->group[0] && !strcmp(res->plural, "namespaces") &&
        cJSON_GetArraySize(jget(jget(obj, "spec"), "finalizers")) > 0)
        return false;
    return true;
}

/* Compares a and b ignoring managedFields (their timestamps are not a change). */
/* Members of o other than those named in skip (NULL-terminated); 0 for a non-object. */
static int count_except(const cJSON *o, const char *const *skip)
{
    int n = 0;

    if (!cJSON_IsObject(o))
        return 0;
    for (const cJSON *c = o->child; c; c = c->next) {
        bool skipped = false;
        for (const char *const *k = skip; *k && !skipped; k++)
            skipped = c->string && !strcmp(c->string, *k);
        n += !skipped;
    }
    return n;
}

/* a and b equal but for the members named in skip; a non-object counts as {} (as
 * store__meta makes it). */
static bool equal_except(const cJSON *a, const cJSON *b, const char *const *skip)
{
    if (count_except(a, skip) != count_except(b, skip))
        return false;
    if (!cJSON_IsObject(a))
        return true;   /* both empty */
    for (const cJSON *x = a->child; x; x = x->next) {
        bool skipped = false;
        for (const char *const *k = skip; *k && !skipped; k++)
            skipped = x->string && !strcmp(x->string, *k);
        if (skipped)
            continue;
        const cJSON *y = x->string ? jget(b, x->string) : NULL;
        if (!y || !json_equal(x, y))
            return false;
    }
    return true;
}

/* Compared in place (this runs on every write: copying both objects to drop the two
 * members was a fifth of the simulated kubelet's write cost). */
bool store__same_object(const cJSON *a, const cJSON *b)
{
    static const char *const top[] = { "metadata", NULL };
    static const char *const md[] = { "managedFields", "resourceVersion", NULL };

    if (!cJSON_IsObject(a) || !cJSON_IsObject(b))
        return json_equal(a, b);
    return equal_except(a, b, top) && equal_except(jget(a, "metadata"), jget(b, "metadata"), md);
}

/*
 * store_meta.c - object metadata rules shared by every type: name syntax
 * (DNS-1123 subdomain/label, DNS-1035 label), label and annotation syntax and the
 * 256 KiB annotation budget, ownerReferences, finalizer rules while deleting,
 * uid/time generation and the "did the spec change" test behind generation.
 * Messages are those of apimachinery's validation packages.
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

static const char SUBDOMAIN_MSG[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')";
static const char LABEL1123_MSG[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
static const char LABEL1035_MSG[] =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
static const char QNAME_MSG[] =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
static const char LVALUE_MSG[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    "[A-Za-z0-9])?')";

enum name_rule store_name_rule(const struct reg_resource *res)
{
    if (!res->builtin)
        return NAME_SUBDOMAIN;
    if (!res->group[0] && !strcmp(res->plural, "services"))
        return NAME_LABEL_1035;
    if (!res->group[0] && !strcmp(res->plural, "namespaces"))
        return NAME_LABEL_1123;
    return NAME_SUBDOMAIN;
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool label_ok(const char *p, size_t n, bool alpha_first)
{
    if (n == 0 || !is_lower_alnum(p[0]) || !is_lower_alnum(p[n - 1]))
        return false;
    if (alpha_first && !(p[0] >= 'a' && p[0] <= 'z'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(p[i]) && p[i] != '-')
            return false;
    return true;
}

static bool subdomain_ok(const char *s)
{
    const char *p = s;

    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!label_ok(p, n, false))
            return false;
        if (!dot)
            return true;
        p = dot + 1;
    }
}

bool store_check_name(const char *name, enum name_rule r, const char *field, cJSON *causes)
{
    size_t n = strlen(name);
    size_t max = r == NAME_SUBDOMAIN ? 253 : 63;
    bool ok = true;

    if (n > max) {
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%.300s\": must be no more than %zu characters",
                         name, max);
        ok = false;
    }
    switch (r) {
    case NAME_SUBDOMAIN:
        if (!subdomain_ok(name)) {
            status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"%.300s\": %s",
                             name, SUBDOMAIN_MSG);
            ok = false;
        }
        break;
    case NAME_LABEL_1123:
        if (!label_ok(name, n, false)) {
            status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"%.300s\": %s",
                             name, LABEL1123_MSG);
            ok = false;
        }
        break;
    case NAME_LABEL_1035:
        if (!label_ok(name, n, true)) {
            status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"%.300s\": %s",
                             name, LABEL1035_MSG);
            ok = false;
        }
        break;
    }
    return ok;
}

static bool qname_part_ok(const char *p, size_t n)
{
    if (n == 0 || !isalnum((unsigned char)p[0]) || !isalnum((unsigned char)p[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '-' && p[i] != '_' && p[i] != '.')
            return false;
    return true;
}

/* A label or annotation key: [prefix/]name (validation.IsQualifiedName). */
static void check_qualified_key(const char *k, const char *field, cJSON *causes)
{
    const char *slash = strchr(k, '/');
    const char *name = slash ? slash + 1 : k;
    size_t n = strlen(name);

    if (slash) {
        char prefix[300];
        size_t pn = (size_t)(slash - k);
        if (pn == 0 || pn > 253) {
            status_cause_add(causes, "FieldValueInvalid", field,
                             "Invalid value: \"%.300s\": prefix part must be non-empty and no more "
                             "than 253 characters", k);
        } else {
            memcpy(prefix, k, pn);
            prefix[pn] = 0;
            if (!subdomain_ok(prefix))
                status_cause_add(causes, "FieldValueInvalid", field,
                                 "Invalid value: \"%.300s\": prefix part %s", k, SUBDOMAIN_MSG);
        }
    }
    if (n == 0)
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%.300s\": name part must be non-empty", k);
    else if (n > 63)
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%.300s\": name part must be no more than 63 "
                         "characters", k);
    else if (!qname_part_ok(name, n))
        status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"%.300s\": %s", k,
                         QNAME_MSG);
}

void store_check_labels(const cJSON *labels, const char *field, cJSON *causes)
{
    const cJSON *l;

    if (!labels)
        return;
    if (!cJSON_IsObject(labels)) {
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"labels\": must be an object of strings");
        return;
    }
    cJSON_ArrayForEach(l, labels) {
        const char *v = cJSON_GetStringValue(l);
        check_qualified_key(l->string, field, causes);
        if (!v) {
            status_cause_add(causes, "FieldValueInvalid", field,
                             "Invalid value: \"%.300s\": label values must be strings", l->string);
            continue;
        }
        size_t n = strlen(v);
        if (n > 63)
            status_cause_add(causes, "FieldValueInvalid", field,
                             "Invalid value: \"%.300s\": must be no more than 63 characters", v);
        else if (n && !qname_part_ok(v, n))
            status_cause_add(causes, "FieldValueInvalid", field,
                             "Invalid value: \"%.300s\": %s", v, LVALUE_MSG);
    }
}

void store_check_annotations(const cJSON *ann, const char *field, cJSON *causes)
{
    const cJSON *a;
    size_t total = 0;

    if (!ann)
        return;
    if (!cJSON_IsObject(ann)) {
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"annotations\": must be an object of strings");
        return;
    }
    cJSON_ArrayForEach(a, ann) {
        const char *v = cJSON_GetStringValue(a);
        char lower[320];
        size_t i;
        for (i = 0; a->string[i] && i < sizeof(lower) - 1; i++)
            lower[i] = (char)tolower((unsigned char)a->string[i]);
        lower[i] = 0;
        check_qualified_key(lower, field, causes);
        total += strlen(a->string) + (v ? strlen(v) : 0);
    }
    if (total > STORE_ANNOTATIONS_MAX)
        status_cause_add(causes, "FieldValueTooLong", field,
                         "Too long: must have at most %d bytes", STORE_ANNOTATIONS_MAX);
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

void store_check_meta(const cJSON *obj, const cJSON *old, const struct reg_resource *res,
                      cJSON *causes)
{
    const cJSON *md = jget(obj, "metadata");
    const cJSON *fin;

    (void)res;
    if (!cJSON_IsObject(md))
        return;
    store_check_labels(jget(md, "labels"), "metadata.labels", causes);
    store_check_annotations(jget(md, "annotations"), "metadata.annotations", causes);
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

void store_random_uid(char out[37])
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

void store_random_suffix(char out[6])
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";

    for (int i = 0; i < 5; i++)
        out[i] = alphabet[rnd_next() % (sizeof(alphabet) - 1)];
    out[5] = 0;
}

void store_now(char out[32])
{
    util_format_time(time(NULL), out);
}

/* ---- small accessors ---- */

cJSON *store_meta(cJSON *obj)
{
    cJSON *md = jget(obj, "metadata");

    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObject(obj, "metadata");
        md = cJSON_AddObjectToObject(obj, "metadata");
    }
    return md;
}

bool store_has_finalizer(const cJSON *obj, const char *f)
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
bool store_spec_changed(const struct reg_resource *res, const cJSON *a, const cJSON *b)
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

void store_set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v);
}

void store_set_num(cJSON *o, const char *k, double v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddNumberToObject(o, k, v);
}

/* No metadata.finalizers (and, for Namespaces, no spec.finalizers) left. */
bool store_finalizers_empty(const struct reg_resource *res, const cJSON *obj)
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
bool store_same_object(const cJSON *a, const cJSON *b)
{
    cJSON *x = cJSON_Duplicate(a, true), *y = cJSON_Duplicate(b, true);
    bool same;

    if (!x || !y) {
        cJSON_Delete(x);
        cJSON_Delete(y);
        return false;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(store_meta(x), "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(store_meta(y), "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(store_meta(x), "resourceVersion");
    cJSON_DeleteItemFromObjectCaseSensitive(store_meta(y), "resourceVersion");
    same = json_equal(x, y);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return same;
}

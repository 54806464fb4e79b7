/*
 * names.c - the syntax of object names, label keys and values and annotation keys,
 * and the 256 KiB annotation budget (apimachinery's IsDNS1123Subdomain,
 * IsDNS1123Label, IsDNS1035Label, IsQualifiedName, IsValidLabelValue, with their
 * messages). Schema-level rules: the store applies them to metadata, the built-in
 * validators to names and labels inside specs (pod templates, containers).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "kubesim/schema/schema.h"
#include "kubesim/schema/status_cause.h"

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

bool schema_check_name(const char *name, enum name_rule r, const char *field, cJSON *causes)
{
    size_t n = strlen(name);
    size_t max = r == NAME_SUBDOMAIN ? 253 : 63;
    const char *why = NULL;
    bool ok = true;

    if (n > max) {
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%.300s\": must be no more than %zu characters",
                         name, max);
        ok = false;
    }
    switch (r) {
    case NAME_SUBDOMAIN:
        why = subdomain_ok(name) ? NULL : SUBDOMAIN_MSG;
        break;
    case NAME_LABEL_1123:
        why = label_ok(name, n, false) ? NULL : LABEL1123_MSG;
        break;
    case NAME_LABEL_1035:
        why = label_ok(name, n, true) ? NULL : LABEL1035_MSG;
        break;
    }
    if (why) {
        status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: \"%.300s\": %s",
                         name, why);
        ok = false;
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

/* Whether metadata's labels or annotations (what) is an object to check; one that is set but
 * is not an object gets a cause. */
static bool is_map(const cJSON *m, const char *what, const char *field, cJSON *causes)
{
    if (cJSON_IsObject(m))
        return true;
    if (m)
        status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%s\": must be an object of strings", what);
    return false;
}

void schema_check_labels(const cJSON *labels, const char *field, cJSON *causes)
{
    const cJSON *l;

    if (!is_map(labels, "labels", field, causes))
        return;
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

void schema_check_annotations(const cJSON *ann, const char *field, cJSON *causes)
{
    const cJSON *a;
    size_t total = 0;

    if (!is_map(ann, "annotations", field, causes))
        return;
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
    if (total > SCHEMA_ANNOTATIONS_MAX)
        status_cause_add(causes, "FieldValueTooLong", field,
                         "Too long: must have at most %d bytes", SCHEMA_ANNOTATIONS_MAX);
}

/*
 * validate_names.c - Kubernetes name, label and version syntax as apimachinery
 * checks it (util/validation, util/version), hand-written matchers for its
 * regular expressions, returning the same error texts KubeRay's messages embed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/raycluster/internal.h"

#define DNS1035_MSG "a DNS-1035 label must consist of lower case alphanumeric characters or '-', " \
    "start with an alphabetic character, and end with an alphanumeric character (e.g. " \
    "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define QNAME_MSG "must consist of alphanumeric characters, '-', '_' or '.', and must start and " \
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex " \
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define DNS1123_SUB_MSG "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric " \
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. " \
    "'example.com', regex used for validation is " \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define LABEL_VALUE_MSG "a valid label must be an empty string or consist of alphanumeric " \
    "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. " \
    "'MyValue',  or 'my_value',  or '12345', regex used for validation is " \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
    return isalnum((unsigned char)c) != 0;
}

const char *raycluster__dns1035_error(const char *s)
{
    if (strlen(s) > 63)
        return "must be no more than 63 characters " DNS1035_MSG;
    return DNS1035_MSG;
}

#define DNS1123_LABEL_MSG "a lowercase RFC 1123 label must consist of lower case alphanumeric " \
    "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  " \
    "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

const char *raycluster__dns1123_label_error(const char *s)
{
    size_t n = strlen(s);
    bool match = n > 0 && lower_alnum(s[0]) && lower_alnum(s[n - 1]);
    for (size_t i = 0; match && i < n; i++)
        match = lower_alnum(s[i]) || s[i] == '-';
    if (n > 63)
        return match ? "must be no more than 63 characters"
                     : "must be no more than 63 characters " DNS1123_LABEL_MSG;
    return match ? NULL : DNS1123_LABEL_MSG;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool qname_part(const char *s, size_t n)
{
    if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)* */
static bool dns1123_subdomain(const char *s, size_t n)
{
    size_t start = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            size_t len = i - start;
            if (len == 0 || !lower_alnum(s[start]) || !lower_alnum(s[i - 1]))
                return false;
            for (size_t j = start; j < i; j++)
                if (!lower_alnum(s[j]) && s[j] != '-')
                    return false;
            start = i + 1;
        }
    }
    return true;
}

static void add(char *err, size_t cap, size_t *w, const char *prefix, const char *msg)
{
    if (*w >= cap)
        return;
    int n = snprintf(err + *w, cap - *w, "%s%s%s", *w ? "\n" : "", prefix, msg);
    if (n > 0)
        *w += (size_t)n;
}

int raycluster__qualified_name_error(const char *s, char *err, size_t cap)
{
    const char *slash = strchr(s, '/');
    const char *name = s;
    size_t w = 0;
    err[0] = '\0';
    if (slash) {
        size_t plen = (size_t)(slash - s);
        if (strchr(slash + 1, '/')) {
            add(err, cap, &w, "a qualified name ", QNAME_MSG " with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')");
            return 1;
        }
        if (plen == 0) {
            add(err, cap, &w, "", "prefix part must be non-empty");
        } else {
            if (plen > 253)
                add(err, cap, &w, "prefix part ", "must be no more than 253 characters");
            if (!dns1123_subdomain(s, plen))
                add(err, cap, &w, "prefix part ", DNS1123_SUB_MSG);
        }
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n == 0)
        add(err, cap, &w, "", "name part must be non-empty");
    else if (n > 63)
        add(err, cap, &w, "", "name part must be no more than 63 characters");
    if (!qname_part(name, n))
        add(err, cap, &w, "name part ", QNAME_MSG);
    return w ? 1 : 0;
}

int raycluster__label_value_error(const char *s, char *err, size_t cap)
{
    size_t n = strlen(s), w = 0;
    err[0] = '\0';
    if (n > 63)
        add(err, cap, &w, "", "must be no more than 63 characters");
    if (n && !qname_part(s, n))
        add(err, cap, &w, "", LABEL_VALUE_MSG);
    return w ? 1 : 0;
}

/* version.ParseGeneric: optional spaces and 'v', two or more dot-separated numbers,
 * then anything. Fills up to 8 components. */
static int parse_generic(const char *s, unsigned long long comp[8], int *ncomp)
{
    int n = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == 'v')
        s++;
    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    for (;;) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s)
            return -EINVAL;
        if (n < 8)
            comp[n] = v;
        n++;
        s = end;
        if (*s == '.' && isdigit((unsigned char)s[1])) {
            s++;
            continue;
        }
        break;
    }
    *ncomp = n < 8 ? n : 8;
    return n >= 2 ? 0 : -EINVAL;
}

int raycluster__version_cmp(const char *ver, const char *want, int *cmp)
{
    unsigned long long a[8] = { 0 }, b[8] = { 0 };
    int na = 0, nb = 0;
    if (parse_generic(ver, a, &na) < 0 || parse_generic(want, b, &nb) < 0)
        return -EINVAL;
    *cmp = 0;
    for (int i = 0; i < 8; i++) {
        if (a[i] != b[i]) {
            *cmp = a[i] < b[i] ? -1 : 1;
            break;
        }
    }
    return 0;
}

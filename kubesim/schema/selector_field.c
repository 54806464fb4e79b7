/*
 * selector_field.c - field selectors (apimachinery pkg/fields/selector.go):
 * comma-separated k=v, k==v, k!=v terms whose values escape '\\', ',' and '=' with a
 * backslash, matched against a dotted JSON path of the object ("status.phase",
 * "involvedObject.name"); a missing field reads as "".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/schema/selector.h"
#include "util/util.h"

#define FSEL_MAX_TERMS 512

struct fterm {
    char *field;
    char *value;
    bool neq;
};

struct fsel {
    struct fterm *terms;
    size_t n;
};

void fsel_free(struct fsel *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        free(f->terms[i].field);
        free(f->terms[i].value);
    }
    free(f->terms);
    free(f);
}

/* Removes the escapes of v[0..n) into a new string; NULL on a bad escape (errno EINVAL). */
static char *fsel_unescape(const char *v, size_t n)
{
    char *o = malloc(n + 1), *p = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '\\') {
            if (i + 1 >= n || (v[i + 1] != '\\' && v[i + 1] != ',' && v[i + 1] != '=')) {
                free(o);
                errno = EINVAL;
                return NULL;
            }
            i++;
        } else if (v[i] == ',' || v[i] == '=') {
            /* an unescaped '=' inside a value is ambiguous; the server rejects it */
            free(o);
            errno = EINVAL;
            return NULL;
        }
        *p++ = v[i];
    }
    *p = '\0';
    return o;
}

/* Parses one term s[0..n) ("k=v", "k==v", "k!=v") into t. */
static int fsel_term(const char *s, size_t n, struct fterm *t, char *err, size_t errlen)
{
    size_t i, oplen = 0;
    for (i = 0; i < n; i++) {
        if (s[i] == '\\') {
            i++;
            continue;
        }
        if (s[i] == '!' && i + 1 < n && s[i + 1] == '=') { t->neq = true; oplen = 2; break; }
        if (s[i] == '=' && i + 1 < n && s[i + 1] == '=') { oplen = 2; break; }
        if (s[i] == '=') { oplen = 1; break; }
    }
    if (!oplen) {
        util_format_err(err, errlen, "invalid selector: '%.*s'; can't understand '%.*s'",
               (int)n, s, (int)n, s);
        return -EINVAL;
    }
    if (i == 0) {
        util_format_err(err, errlen, "invalid field selector: empty field name in '%.*s'", (int)n, s);
        return -EINVAL;
    }
    if (!(t->field = strndup(s, i)))
        return -ENOMEM;
    if (!(t->value = fsel_unescape(s + i + oplen, n - i - oplen))) {
        if (errno != EINVAL)
            return -ENOMEM;
        util_format_err(err, errlen, "invalid field selector: invalid escape sequence or unescaped "
               "'=' or ',' in value of '%.*s'", (int)n, s);
        return -EINVAL;
    }
    return 0;
}

int fsel_parse(const char *s, struct fsel **out, char *err, size_t errlen)
{
    struct fsel *f;
    int rc = 0;

    *out = NULL;
    if (s && strnlen(s, SEL_MAX_INPUT + 1) > SEL_MAX_INPUT) {
        util_format_err(err, errlen, "field selector is too long (max %d bytes)", SEL_MAX_INPUT);
        return -EINVAL;
    }
    if (!(f = calloc(1, sizeof(*f))))
        return -ENOMEM;
    if (!s || !*s)
        goto done;
    size_t len = strlen(s), start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] == '\\' && i + 1 < len) {
            i++;
            continue;
        }
        if (i < len && s[i] != ',')
            continue;
        if (i == start) { /* empty term: "a=b,," is tolerated by the server */
            start = i + 1;
            continue;
        }
        if (f->n >= FSEL_MAX_TERMS) {
            util_format_err(err, errlen, "field selector has too many terms (max %d)", FSEL_MAX_TERMS);
            rc = -EINVAL;
            goto fail;
        }
        struct fterm *nt = realloc(f->terms, (f->n + 1) * sizeof(*nt));
        if (!nt) {
            rc = -ENOMEM;
            goto fail;
        }
        f->terms = nt;
        memset(&nt[f->n], 0, sizeof(*nt));
        f->n++;
        if ((rc = fsel_term(s + start, i - start, &nt[f->n - 1], err, errlen)))
            goto fail;
        start = i + 1;
    }
done:
    *out = f;
    return 0;
fail:
    fsel_free(f);
    return rc;
}

size_t fsel_count(const struct fsel *f)
{
    return f ? f->n : 0;
}

const char *fsel_field(const struct fsel *f, size_t i)
{
    return f && i < f->n ? f->terms[i].field : NULL;
}

/* Renders the value at the dotted path into out as the server's field set would. */
static void fsel_lookup(const cJSON *obj, const char *path, char *out, size_t outlen)
{
    char seg[256];
    const cJSON *cur = obj;
    const char *p = path;

    out[0] = '\0';
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(seg))
            return;
        memcpy(seg, p, n);
        seg[n] = '\0';
        cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, seg) : NULL;
        p += n + (dot ? 1 : 0);
        if (!dot)
            break;
    }
    if (!cur)
        return;
    if (cJSON_IsString(cur))
        snprintf(out, outlen, "%s", cur->valuestring);
    else if (cJSON_IsBool(cur))
        snprintf(out, outlen, "%s", cJSON_IsTrue(cur) ? "true" : "false");
    else if (cJSON_IsNumber(cur) && cur->valuedouble > -9e18 && cur->valuedouble < 9e18)
        snprintf(out, outlen, "%" PRId64, (int64_t)cur->valuedouble);
    else if (cJSON_IsNumber(cur))
        snprintf(out, outlen, "%g", cur->valuedouble);
}

bool fsel_matches(const struct fsel *f, const cJSON *obj)
{
    char val[1024];
    if (!f)
        return true;
    for (size_t i = 0; i < f->n; i++) {
        fsel_lookup(obj, f->terms[i].field, val, sizeof(val));
        bool eq = !strcmp(val, f->terms[i].value);
        if (eq == f->terms[i].neq)
            return false;
    }
    return true;
}

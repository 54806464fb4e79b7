/*
 * selector.c - label selectors for kubesim's LIST/WATCH/DELETE collection.
 *
 * The label grammar follows apimachinery pkg/labels/selector.go: a small lexer
 * (identifiers, '(' ')' ',' '!' '=' '==' '!=' '<' '>' and the keywords in/notin)
 * feeds a recursive-descent parser that produces a flat AND of requirements.
 * Keys and values are validated as the server validates them, so a client gets
 * the same 400 it would get from a real API server.
 *
 * Field selectors live in selector_field.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/schema/selector.h"
#include "util/util.h"

#define SEL_MAX_TERMS 512   /* requirements per selector */
#define SEL_MAX_VALUES 1024 /* values in one in/notin set */

enum sel_op { OP_EQ, OP_NEQ, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS, OP_GT, OP_LT };

struct req {
    char *key;
    enum sel_op op;
    char **vals;
    size_t nvals;
};

struct sel {
    struct req *reqs;
    size_t n;
    size_t cap;
};

/* ---- validation (apimachinery util/validation) ---------------------------- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63 characters, the rule that label keys'
 * name part and label values share; each words its own reasons (empty is NULL when allowed). */
static const char *check_chars(const char *s, size_t n, const char *empty, const char *too_long,
                               const char *bad)
{
    if (n == 0)
        return empty;
    if (n > 63)
        return too_long;
    if (!is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return bad;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return bad;
    return NULL;
}

static const char *check_name_part(const char *s, size_t n)
{
    return check_chars(s, n, "name part must be non-empty",
                       "name part must be no more than 63 characters",
                       "name part must consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character (e.g. 'MyName',  "
                       "or 'my.name',  or '123-abc', regex used for validation is "
                       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
}

/* DNS-1123 subdomain: lowercase labels joined by dots, at most 253 characters. */
static const char *check_prefix(const char *s, size_t n)
{
    if (n == 0)
        return "prefix part must be non-empty";
    if (n > 253)
        return "prefix part must be no more than 253 characters";
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool lc = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (lc)
            continue;
        if ((c == '-' || c == '.') && i > 0 && i + 1 < n)
            continue;
        return "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
               "alphanumeric characters, '-' or '.', and must start and end with an "
               "alphanumeric character (e.g. 'example.com', regex used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    }
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == '.' && (s[i + 1] == '.' || s[i + 1] == '-' || (i > 0 && s[i - 1] == '-')))
            return "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                   "alphanumeric characters, '-' or '.', and must start and end with an "
                   "alphanumeric character";
    return NULL;
}

/* Returns NULL when key is a valid qualified name, else the reason. */
static const char *check_key(const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash)
        return check_name_part(key, strlen(key));
    if (strchr(slash + 1, '/'))
        return "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
               "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
               "'my.name',  or '123-abc', regex used for validation is "
               "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
               "prefix and '/' (e.g. 'example.com/MyName')";
    const char *why = check_prefix(key, (size_t)(slash - key));
    return why ? why : check_name_part(slash + 1, strlen(slash + 1));
}

static const char *check_value(const char *v)
{
    return check_chars(v, strlen(v), NULL, "must be no more than 63 characters",
                       "a valid label must be an empty string or consist of alphanumeric "
                       "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                       "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                       "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
}

static bool parse_int64(const char *s, int64_t *out)
{
    char *end;
    if (!*s)
        return false;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* ---- requirements --------------------------------------------------------- */

static void req_clear(struct req *r)
{
    free(r->key);
    for (size_t i = 0; i < r->nvals; i++)
        free(r->vals[i]);
    free(r->vals);
    memset(r, 0, sizeof(*r));
}

void sel_free(struct sel *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        req_clear(&s->reqs[i]);
    free(s->reqs);
    free(s);
}

/* Validates r and appends it to s, taking ownership of its strings (cleared either way). */
static int sel_add(struct sel *s, struct req *r, char *err, size_t errlen)
{
    const char *why;
    int rc = -EINVAL;

    if ((why = check_key(r->key))) {
        util_format_err(err, errlen, "unable to parse requirement: <nil>: Invalid value: \"%s\": %s",
               r->key, why);
        goto out;
    }
    for (size_t i = 0; i < r->nvals; i++) {
        if (r->op == OP_GT || r->op == OP_LT) {
            int64_t dummy;
            if (!parse_int64(r->vals[i], &dummy)) {
                util_format_err(err, errlen, "unable to parse requirement: values[%zu]: Invalid value: "
                       "\"%s\": for 'Gt', 'Lt' operators, the value must be an integer", i,
                       r->vals[i]);
                goto out;
            }
        } else if ((why = check_value(r->vals[i]))) {
            util_format_err(err, errlen, "unable to parse requirement: values[%zu][%s]: Invalid "
                   "value: \"%s\": %s", i, r->key, r->vals[i], why);
            goto out;
        }
    }
    if (s->n >= SEL_MAX_TERMS) {
        util_format_err(err, errlen, "unable to parse requirement: too many requirements (max %d)",
               SEL_MAX_TERMS);
        goto out;
    }
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 4;
        struct req *n = realloc(s->reqs, ncap * sizeof(*n));
        if (!n) {
            rc = -ENOMEM;
            goto out;
        }
        s->reqs = n;
        s->cap = ncap;
    }
    s->reqs[s->n++] = *r;
    memset(r, 0, sizeof(*r));
    return 0;
out:
    req_clear(r);
    return rc;
}

static int req_push_value(struct req *r, const char *v, size_t n)
{
    if (r->nvals >= SEL_MAX_VALUES)
        return -E2BIG;
    char **nv = realloc(r->vals, (r->nvals + 1) * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    r->vals = nv;
    if (!(nv[r->nvals] = strndup(v, n)))
        return -ENOMEM;
    r->nvals++;
    return 0;
}

/* ---- lexer ---------------------------------------------------------------- */

enum tok {
    T_END, T_ID, T_IN, T_NOTIN, T_LPAREN, T_RPAREN, T_COMMA, T_NOT, T_EQ, T_DEQ, T_NEQ,
    T_GT, T_LT,
};

struct lexer {
    const char *s;
    size_t pos;
    const char *lit; /* identifier text (not NUL-terminated) */
    size_t litlen;
};

static bool is_special(char c)
{
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The operator at lx->pos: two when an '=' follows it, else one. */
static enum tok lex_eq_pair(struct lexer *lx, enum tok two, enum tok one)
{
    lx->pos++;
    if (lx->s[lx->pos] != '=')
        return one;
    lx->pos++;
    lx->litlen = 2;
    return two;
}

static enum tok lex_next(struct lexer *lx)
{
    const char *s = lx->s;
    while (is_ws(s[lx->pos]))
        lx->pos++;
    char c = s[lx->pos];
    lx->lit = s + lx->pos;
    lx->litlen = 1;
    switch (c) {
    case '\0': lx->litlen = 0; return T_END;
    case '(': lx->pos++; return T_LPAREN;
    case ')': lx->pos++; return T_RPAREN;
    case ',': lx->pos++; return T_COMMA;
    case '>': lx->pos++; return T_GT;
    case '<': lx->pos++; return T_LT;
    case '=': return lex_eq_pair(lx, T_DEQ, T_EQ);
    case '!': return lex_eq_pair(lx, T_NEQ, T_NOT);
    default:
        break;
    }
    size_t start = lx->pos;
    while (s[lx->pos] && !is_ws(s[lx->pos]) && !is_special(s[lx->pos]))
        lx->pos++;
    lx->litlen = lx->pos - start;
    if (lx->litlen == 2 && !strncmp(lx->lit, "in", 2))
        return T_IN;
    if (lx->litlen == 5 && !strncmp(lx->lit, "notin", 5))
        return T_NOTIN;
    return T_ID;
}

static enum tok lex_peek(struct lexer *lx)
{
    struct lexer save = *lx;
    enum tok t = lex_next(lx);
    *lx = save;
    return t;
}

/* Parses "(v1, v2, ...)" after in/notin; the '(' is the next token. */
static int parse_set(struct lexer *lx, struct req *r, char *err, size_t errlen)
{
    enum tok t = lex_next(lx);
    if (t != T_LPAREN) {
        util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: '('",
               (int)lx->litlen, lx->lit);
        return -EINVAL;
    }
    for (;;) {
        t = lex_next(lx);
        if (t == T_ID || t == T_IN || t == T_NOTIN) {
            int rc = req_push_value(r, lx->lit, lx->litlen);
            if (rc == -E2BIG) {
                util_format_err(err, errlen, "unable to parse requirement: too many values");
                return -EINVAL;
            }
            if (rc)
                return rc;
            t = lex_next(lx);
        } else if (t == T_COMMA || t == T_RPAREN) {
            /* an empty element is the empty string, as in "k in (,a)" */
            int rc = req_push_value(r, "", 0);
            if (rc)
                return rc == -E2BIG ? -EINVAL : rc;
        } else {
            util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: ',', "
                   "')' or identifier", (int)lx->litlen, lx->lit);
            return -EINVAL;
        }
        if (t == T_RPAREN)
            return 0;
        if (t != T_COMMA) {
            util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: ',' "
                   "or ')'", (int)lx->litlen, lx->lit);
            return -EINVAL;
        }
    }
}

static int parse_requirement(struct lexer *lx, struct req *r, char *err, size_t errlen)
{
    enum tok t = lex_next(lx);
    bool negated = false;

    if (t == T_NOT) {
        negated = true;
        t = lex_next(lx);
    }
    if (t != T_ID && t != T_IN && t != T_NOTIN) {
        util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: "
               "identifier", (int)lx->litlen, lx->lit);
        return -EINVAL;
    }
    if (!(r->key = strndup(lx->lit, lx->litlen)))
        return -ENOMEM;
    t = lex_peek(lx);
    if (negated) {
        if (t != T_END && t != T_COMMA) {
            util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: ','",
                   (int)lx->litlen, lx->lit);
            return -EINVAL;
        }
        r->op = OP_NOTEXISTS;
        return 0;
    }
    if (t == T_END || t == T_COMMA) {
        r->op = OP_EXISTS;
        return 0;
    }
    t = lex_next(lx);
    switch (t) {
    case T_IN: r->op = OP_IN; return parse_set(lx, r, err, errlen);
    case T_NOTIN: r->op = OP_NOTIN; return parse_set(lx, r, err, errlen);
    case T_EQ: case T_DEQ: r->op = OP_EQ; break;
    case T_NEQ: r->op = OP_NEQ; break;
    case T_GT: r->op = OP_GT; break;
    case T_LT: r->op = OP_LT; break;
    default:
        util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: in, notin, "
               "=, ==, !=, gt, lt", (int)lx->litlen, lx->lit);
        return -EINVAL;
    }
    /* single value: an identifier, or nothing (empty value) before ',' or the end */
    t = lex_peek(lx);
    if (t == T_END || t == T_COMMA) {
        if (r->op == OP_GT || r->op == OP_LT) {
            util_format_err(err, errlen, "unable to parse requirement: found '', expected: identifier");
            return -EINVAL;
        }
        return req_push_value(r, "", 0);
    }
    t = lex_next(lx);
    if (t != T_ID && t != T_IN && t != T_NOTIN) {
        util_format_err(err, errlen, "unable to parse requirement: found '%.*s', expected: "
               "identifier", (int)lx->litlen, lx->lit);
        return -EINVAL;
    }
    return req_push_value(r, lx->lit, lx->litlen);
}

int sel_parse(const char *s, struct sel **out, char *err, size_t errlen)
{
    struct sel *sel = NULL;
    struct req r = { 0 };
    struct lexer lx = { 0 };
    int rc;

    *out = NULL;
    if (s && strnlen(s, SEL_MAX_INPUT + 1) > SEL_MAX_INPUT) {
        util_format_err(err, errlen, "label selector is too long (max %d bytes)", SEL_MAX_INPUT);
        return -EINVAL;
    }
    if (!(sel = calloc(1, sizeof(*sel))))
        return -ENOMEM;
    lx.s = s ? s : "";
    if (lex_peek(&lx) == T_END)
        goto done;
    for (;;) {
        rc = parse_requirement(&lx, &r, err, errlen);
        if (rc) {
            req_clear(&r);
            goto fail;
        }
        if ((rc = sel_add(sel, &r, err, errlen)))
            goto fail;
        enum tok t = lex_next(&lx);
        if (t == T_END)
            break;
        if (t != T_COMMA) {
            util_format_err(err, errlen, "found '%.*s', expected: ',' or 'end of string'",
                   (int)lx.litlen, lx.lit);
            rc = -EINVAL;
            goto fail;
        }
    }
done:
    *out = sel;
    return 0;
fail:
    sel_free(sel);
    return rc;
}

int sel_from_label_selector(const cJSON *ls, struct sel **out, char *err, size_t errlen)
{
    struct sel *sel;
    struct req r = { 0 };
    const cJSON *it;
    int rc = -EINVAL;

    *out = NULL;
    if (ls && !cJSON_IsNull(ls) && !cJSON_IsObject(ls)) {
        util_format_err(err, errlen, "selector: Invalid value: must be an object");
        return -EINVAL;
    }
    if (!(sel = calloc(1, sizeof(*sel))))
        return -ENOMEM;
    const cJSON *ml = ls ? cJSON_GetObjectItemCaseSensitive(ls, "matchLabels") : NULL;
    const cJSON *me = ls ? cJSON_GetObjectItemCaseSensitive(ls, "matchExpressions") : NULL;
    if (ml && !cJSON_IsNull(ml)) {
        if (!cJSON_IsObject(ml)) {
            util_format_err(err, errlen, "matchLabels: Invalid value: must be an object");
            goto fail;
        }
        cJSON_ArrayForEach(it, ml) {
            if (!cJSON_IsString(it)) {
                util_format_err(err, errlen, "matchLabels: Invalid value: \"%s\": must be a string",
                       it->string);
                goto fail;
            }
            r.op = OP_EQ;
            rc = -ENOMEM;
            if (!(r.key = strdup(it->string)) || req_push_value(&r, it->valuestring,
                                                                 strlen(it->valuestring))) {
                req_clear(&r);
                goto fail;
            }
            if ((rc = sel_add(sel, &r, err, errlen)))
                goto fail;
            rc = -EINVAL;
        }
    }
    if (me && !cJSON_IsNull(me)) {
        int idx = 0;
        if (!cJSON_IsArray(me)) {
            util_format_err(err, errlen, "matchExpressions: Invalid value: must be an array");
            goto fail;
        }
        cJSON_ArrayForEach(it, me) {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, "key");
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(it, "operator");
            const cJSON *vals = cJSON_GetObjectItemCaseSensitive(it, "values");
            int nvals = cJSON_IsArray(vals) ? cJSON_GetArraySize(vals) : 0;
            if (!cJSON_IsString(k) || !cJSON_IsString(op)) {
                util_format_err(err, errlen, "matchExpressions[%d]: Required value: key and operator "
                       "must be strings", idx);
                goto fail;
            }
            const char *o = op->valuestring;
            if (!strcmp(o, "In")) r.op = OP_IN;
            else if (!strcmp(o, "NotIn")) r.op = OP_NOTIN;
            else if (!strcmp(o, "Exists")) r.op = OP_EXISTS;
            else if (!strcmp(o, "DoesNotExist")) r.op = OP_NOTEXISTS;
            else {
                util_format_err(err, errlen, "matchExpressions[%d].operator: Invalid value: \"%s\": "
                       "not a valid selector operator", idx, o);
                goto fail;
            }
            if ((r.op == OP_IN || r.op == OP_NOTIN) && nvals == 0) {
                util_format_err(err, errlen, "matchExpressions[%d].values: Required value: must be "
                       "specified when `operator` is 'In' or 'NotIn'", idx);
                goto fail;
            }
            if ((r.op == OP_EXISTS || r.op == OP_NOTEXISTS) && nvals > 0) {
                util_format_err(err, errlen, "matchExpressions[%d].values: Forbidden: may not be "
                       "specified when `operator` is 'Exists' or 'DoesNotExist'", idx);
                goto fail;
            }
            rc = -ENOMEM;
            if (!(r.key = strdup(k->valuestring))) {
                req_clear(&r);
                goto fail;
            }
            const cJSON *v;
            cJSON_ArrayForEach(v, vals) {
                if (!cJSON_IsString(v)) {
                    util_format_err(err, errlen, "matchExpressions[%d].values: Invalid value: must be "
                           "strings", idx);
                    rc = -EINVAL;
                    req_clear(&r);
                    goto fail;
                }
                int prc = req_push_value(&r, v->valuestring, strlen(v->valuestring));
                if (prc) {
                    rc = prc == -E2BIG ? -EINVAL : prc;
                    if (prc == -E2BIG)
                        util_format_err(err, errlen, "matchExpressions[%d].values: Too many", idx);
                    req_clear(&r);
                    goto fail;
                }
            }
            if ((rc = sel_add(sel, &r, err, errlen)))
                goto fail;
            rc = -EINVAL;
            idx++;
        }
    }
    *out = sel;
    return 0;
fail:
    sel_free(sel);
    return rc;
}

static bool has_value(const struct req *r, const char *v)
{
    for (size_t i = 0; i < r->nvals; i++)
        if (!strcmp(r->vals[i], v))
            return true;
    return false;
}

bool sel_matches(const struct sel *s, const cJSON *labels)
{
    if (!s)
        return true;
    for (size_t i = 0; i < s->n; i++) {
        const struct req *r = &s->reqs[i];
        const cJSON *l = cJSON_IsObject(labels) ?
                         cJSON_GetObjectItemCaseSensitive(labels, r->key) : NULL;
        const char *v = cJSON_IsString(l) ? l->valuestring : NULL;
        int64_t have, want;
        switch (r->op) {
        case OP_EQ: case OP_IN:
            if (!v || !has_value(r, v))
                return false;
            break;
        case OP_NEQ: case OP_NOTIN:
            if (v && has_value(r, v))
                return false;
            break;
        case OP_EXISTS:
            if (!v)
                return false;
            break;
        case OP_NOTEXISTS:
            if (v)
                return false;
            break;
        case OP_GT: case OP_LT:
            if (!v || !parse_int64(v, &have) || r->nvals != 1 ||
                !parse_int64(r->vals[0], &want))
                return false;
            if (r->op == OP_GT ? !(have > want) : !(have < want))
                return false;
            break;
        }
    }
    return true;
}

bool sel_is_empty(const struct sel *s)
{
    return !s || s->n == 0;
}

const char *sel_required_value(const struct sel *s, const char *key)
{
    if (!s || !key)
        return NULL;
    for (size_t i = 0; i < s->n; i++) {
        const struct req *r = &s->reqs[i];
        if ((r->op == OP_EQ || r->op == OP_IN) && r->nvals == 1 && !strcmp(r->key, key))
            return r->vals[0];
    }
    return NULL;
}

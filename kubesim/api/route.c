/*
 * route.c - path, query and header parsing for kubesim's HTTP server (see route.h).
 *
 * The URL layout follows the apiserver's (pkg/endpoints): /api/v1 for the core
 * group, /apis/G/V for named groups, then [namespaces/NS/]RES[/NAME[/SUB[/rest]]],
 * with the deprecated .../watch/... prefix and the namespaces resource itself
 * (/api/v1/namespaces/NAME[/status|/finalize]) as the two irregular shapes.
 */
#include "kubesim/api/route.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_SEGS 16

struct seg {
    const char *p;
    size_t n;
};

static bool seg_is(const struct seg *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->n == n && memcmp(s->p, lit, n) == 0;
}

/* Copies a segment into a fixed field; false if it does not fit or holds bytes
 * no Kubernetes name or resource can contain. */
static bool seg_copy(const struct seg *s, char out[ROUTE_MAX_SEG])
{
    if (s->n == 0 || s->n >= ROUTE_MAX_SEG)
        return false;
    for (size_t i = 0; i < s->n; i++) {
        unsigned char c = (unsigned char)s->p[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    if ((s->n == 1 && s->p[0] == '.') || (s->n == 2 && s->p[0] == '.' && s->p[1] == '.'))
        return false;
    memcpy(out, s->p, s->n);
    out[s->n] = '\0';
    return true;
}

/* Splits path (after its leading '/') into at most MAX_SEGS segments. One trailing
 * slash is tolerated; empty segments elsewhere make the path invalid (-1). When
 * there are more segments than fit, the rest is still reachable through seg.p. */
static int split_path(const char *path, struct seg *segs)
{
    const char *p = path + 1;
    int n = 0;

    if (*p == '\0')
        return 0;
    while (n < MAX_SEGS) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0)
            return slash ? -1 : n;     /* "//" is invalid; a trailing "/" ends the path */
        segs[n].p = p;
        segs[n].n = len;
        n++;
        if (!slash)
            break;
        p = slash + 1;
        if (*p == '\0')
            break;
    }
    return n;
}

/* The path after segment i (its leading '/' included), or "" at the end. */
static const char *after_seg(const struct seg *s)
{
    return s->p + s->n;
}

static void parse_resource(const struct seg *s, int n, struct route *r)
{
    int i = 0;

    if (n > 0 && seg_is(&s[0], "watch")) {
        r->legacy_watch = true;
        i = 1;
    }
    if (i >= n)
        return;
    if (seg_is(&s[i], "namespaces") && (n - i == 1 || n - i == 2 ||
            (n - i == 3 && !r->legacy_watch &&
             (seg_is(&s[i + 2], "status") || seg_is(&s[i + 2], "finalize"))))) {
        /* the namespaces resource itself */
        strcpy(r->plural, "namespaces");
        if (n - i >= 2 && !seg_copy(&s[i + 1], r->name))
            return;
        if (n - i == 3 && !seg_copy(&s[i + 2], r->sub))
            return;
        r->kind = ROUTE_RESOURCE;
        return;
    }
    if (seg_is(&s[i], "namespaces")) {
        if (!seg_copy(&s[i + 1], r->ns))
            return;
        i += 2;
    }
    if (!seg_copy(&s[i], r->plural))
        return;
    if (i + 1 < n && !seg_copy(&s[i + 1], r->name))
        return;
    if (i + 2 < n) {
        if (r->legacy_watch || !seg_copy(&s[i + 2], r->sub))
            return;
        r->rest = after_seg(&s[i + 2]);
    }
    r->kind = ROUTE_RESOURCE;
}

void route_parse_path(const char *path, struct route *r)
{
    struct seg s[MAX_SEGS];
    int n;

    memset(r, 0, sizeof(*r));
    r->rest = "";
    if (!path || path[0] != '/' || strnlen(path, ROUTE_MAX_PATH + 1) > ROUTE_MAX_PATH)
        return;
    n = split_path(path, s);
    if (n <= 0)
        return;

    if (seg_is(&s[0], "healthz") || seg_is(&s[0], "livez") || seg_is(&s[0], "readyz")) {
        if (n <= 2)
            r->kind = ROUTE_HEALTH;
        return;
    }
    if (seg_is(&s[0], "version")) {
        if (n == 1)
            r->kind = ROUTE_VERSION;
        return;
    }
    if (seg_is(&s[0], "swagger-2.0.0.pb-v1")) {
        if (n == 1)
            r->kind = ROUTE_OPENAPI_V2;
        return;
    }
    if (seg_is(&s[0], "openapi")) {
        if (n == 2 && seg_is(&s[1], "v2")) {
            r->kind = ROUTE_OPENAPI_V2;
        } else if (n == 2 && seg_is(&s[1], "v3")) {
            r->kind = ROUTE_OPENAPI_V3;
        } else if (n >= 3 && seg_is(&s[1], "v3")) {
            const char *p = s[2].p;
            size_t len = strlen(p);
            if (len > 0 && p[len - 1] == '/')
                len--;
            if (len == 0 || len >= sizeof(r->oapi_path) || strstr(p, ".."))
                return;
            memcpy(r->oapi_path, p, len);
            r->oapi_path[len] = '\0';
            r->kind = ROUTE_OPENAPI_V3_PATH;
        }
        return;
    }
    if (seg_is(&s[0], "api") || seg_is(&s[0], "apis")) {
        /* /api/VERSION/... is the core group, /apis/GROUP/VERSION/... a named one: the same
         * walk, with the version one segment further on */
        bool core = seg_is(&s[0], "api");
        int v = core ? 1 : 2;

        if (n == 1) {
            r->kind = core ? ROUTE_API : ROUTE_APIS;
            return;
        }
        if (!core && !seg_copy(&s[1], r->group))
            return;
        if (n == v) {
            r->kind = ROUTE_GROUP;
            return;
        }
        if (!seg_copy(&s[v], r->version))
            return;
        if (n == v + 1) {
            r->kind = ROUTE_GROUP_VERSION;
            return;
        }
        parse_resource(&s[v + 1], n - v - 1, r);
    }
}

/* ---- query ------------------------------------------------------------------ */

void route_query_init(struct route_query *q)
{
    memset(q, 0, sizeof(*q));
    q->timeout_seconds = -1;
    q->grace_seconds = -1;
}

/* The parameters of one plain type, by name and the struct field they land in. */
struct qparam {
    const char *key;
    size_t off;
};

#define QPARAM(key, field) { key, offsetof(struct route_query, field) }

/* Kept as given (an owned copy each). */
static const struct qparam str_params[] = {
    QPARAM("labelSelector", label_selector),
    QPARAM("fieldSelector", field_selector),
    QPARAM("continue", continue_token),
    QPARAM("resourceVersion", resource_version),
    QPARAM("resourceVersionMatch", rv_match),
    QPARAM("fieldManager", field_manager),
    QPARAM("fieldValidation", field_validation),
    QPARAM("propagationPolicy", propagation),
    QPARAM("includeObject", include_object),
    QPARAM("preconditions.uid", precondition_uid),
    QPARAM("preconditions.resourceVersion", precondition_rv),
};

/* strconv.ParseBool values. */
static const struct qparam bool_params[] = {
    QPARAM("watch", watch),
    QPARAM("allowWatchBookmarks", allow_bookmarks),
    QPARAM("force", force),
};

/* Whole numbers, 0 or more. */
static const struct qparam long_params[] = {
    QPARAM("limit", limit),
    QPARAM("timeoutSeconds", timeout_seconds),
    QPARAM("gracePeriodSeconds", grace_seconds),
};

#define NPARAMS(t) (sizeof(t) / sizeof((t)[0]))

/* The field of q that key names in table t, or NULL. */
static void *qparam_field(struct route_query *q, const struct qparam *t, size_t n,
                          const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].key, key) == 0)
            return (char *)q + t[i].off;
    return NULL;
}

void route_query_free(struct route_query *q)
{
    for (size_t i = 0; i < NPARAMS(str_params); i++) {
        char **f = (char **)((char *)q + str_params[i].off);
        free(*f);
        *f = NULL;
    }
}

static void query_bad(struct route_query *q, const char *key, const char *value)
{
    char shown[64];
    size_t n;

    if (q->err[0])
        return;
    n = strnlen(value, sizeof(shown) - 1);
    memcpy(shown, value, n);
    shown[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)shown[i] < 0x20 || shown[i] == '"' || shown[i] == '\\')
            shown[i] = '?';
    /* the wording of apimachinery's query-parameter conversion errors */
    snprintf(q->err, sizeof(q->err), "invalid value \"%s\" for query parameter \"%s\"", shown, key);
}

/* strconv.ParseBool, which the apiserver uses for boolean parameters. */
static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
    static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

static int parse_long(const char *v, long *out)
{
    char *end;
    long x;

    if (!*v || strlen(v) > 20)
        return -EINVAL;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || *end)
        return -EINVAL;
    *out = x;
    return 0;
}

static int set_str(char **field, const char *value)
{
    char *c = strdup(value);
    if (!c)
        return -ENOMEM;
    free(*field);
    *field = c;
    return 0;
}

int route_query_set(struct route_query *q, const char *key, const char *value)
{
    void *f;
    bool b;
    long l;

    if (!key)
        return 0;
    if (!value)
        value = "";
    if (++q->nparams > ROUTE_MAX_PARAMS)
        return 0;
    if (strnlen(value, ROUTE_MAX_VALUE + 1) > ROUTE_MAX_VALUE) {
        query_bad(q, key, "(too long)");
        return 0;
    }

    if ((f = qparam_field(q, str_params, NPARAMS(str_params), key)))
        return set_str(f, value);
    if ((f = qparam_field(q, bool_params, NPARAMS(bool_params), key))) {
        if (parse_bool(value, &b) < 0)
            query_bad(q, key, value);
        else
            *(bool *)f = b;
    } else if ((f = qparam_field(q, long_params, NPARAMS(long_params), key))) {
        if (parse_long(value, &l) < 0 || l < 0)
            query_bad(q, key, value);
        else
            *(long *)f = l;
    } else if (strcmp(key, "sendInitialEvents") == 0) {
        if (parse_bool(value, &b) < 0)
            query_bad(q, key, value);
        else
            q->send_initial_events = b ? ROUTE_TRUE : ROUTE_FALSE;
    } else if (strcmp(key, "orphanDependents") == 0) {
        if (parse_bool(value, &b) < 0) {
            query_bad(q, key, value);
        } else {
            q->orphan_dependents_set = true;
            q->orphan_dependents = b;
        }
    } else if (strcmp(key, "dryRun") == 0) {
        if (strcmp(value, "All") == 0)
            q->dry_run = true;
        else if (*value)
            query_bad(q, key, value);
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes src[0..n) (form encoding: %XX and '+') into a new string. A '%' not
 * followed by two hex digits is kept literally, as Go's lenient callers see it. */
static char *form_decode(const char *src, size_t n)
{
    char *out = malloc(n + 1);
    size_t j = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '+') {
            out[j++] = ' ';
        } else if (src[i] == '%' && i + 2 < n &&
                   hexval(src[i + 1]) >= 0 && hexval(src[i + 2]) >= 0) {
            out[j++] = (char)(hexval(src[i + 1]) * 16 + hexval(src[i + 2]));
            i += 2;
        } else {
            out[j++] = src[i];
        }
    }
    out[j] = '\0';
    return out;
}

int route_query_parse(struct route_query *q, const char *raw, size_t len)
{
    size_t i = 0;

    while (i < len) {
        size_t end = i, eq;
        char *k, *v;
        int rc;

        while (end < len && raw[end] != '&' && raw[end] != ';')
            end++;
        eq = i;
        while (eq < end && raw[eq] != '=')
            eq++;
        if (end > i) {
            k = form_decode(raw + i, eq - i);
            v = eq < end ? form_decode(raw + eq + 1, end - eq - 1) : strdup("");
            if (!k || !v) {
                free(k);
                free(v);
                return -ENOMEM;
            }
            rc = route_query_set(q, k, v);
            free(k);
            free(v);
            if (rc < 0)
                return rc;
        }
        i = end + 1;
    }
    return 0;
}

/* ---- headers ------------------------------------------------------------------ */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

static size_t trim_len(const char *p, size_t n)
{
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return n;
}

static bool span_ieq(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(p, lit, n) == 0;
}

/* Looks up parameter key in the ";k=v;k=v" tail of one media range. */
static bool range_param(const char *p, const char *end, const char *key, const char *want)
{
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *pe = semi ? semi : end;
        const char *eq;
        p = skip_ws(p, pe);
        eq = memchr(p, '=', (size_t)(pe - p));
        if (eq && span_ieq(p, trim_len(p, (size_t)(eq - p)), key)) {
            const char *v = skip_ws(eq + 1, pe);
            if (span_ieq(v, trim_len(v, (size_t)(pe - v)), want))
                return true;
        }
        p = semi ? semi + 1 : end;
    }
    return false;
}

void route_parse_accept(const char *accept, struct route_accept *out)
{
    bool disc_decided = false, table_decided = false;
    const char *p, *end;

    memset(out, 0, sizeof(*out));
    if (!accept)
        return;
    end = accept + strnlen(accept, 4096);
    p = accept;
    while (p < end && !(disc_decided && table_decided)) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *re = comma ? comma : end;
        const char *semi = memchr(p, ';', (size_t)(re - p));
        const char *te = semi ? semi : re;
        const char *t = skip_ws(p, te);
        size_t tn = trim_len(t, (size_t)(te - t));

        if (span_ieq(t, tn, "application/json") && semi) {
            if (range_param(semi + 1, re, "as", "APIGroupDiscoveryList") &&
                range_param(semi + 1, re, "g", "apidiscovery.k8s.io")) {
                if (!disc_decided) {
                    if (range_param(semi + 1, re, "v", "v2"))
                        out->discovery = ROUTE_DISC_V2;
                    else if (range_param(semi + 1, re, "v", "v2beta1"))
                        out->discovery = ROUTE_DISC_V2BETA1;
                    disc_decided = out->discovery != ROUTE_DISC_LEGACY;
                }
            } else if (range_param(semi + 1, re, "as", "Table") &&
                       range_param(semi + 1, re, "g", "meta.k8s.io")) {
                if (!table_decided) {
                    out->table = true;
                    out->table_v1beta1 = range_param(semi + 1, re, "v", "v1beta1");
                    table_decided = true;
                }
            } else {
                disc_decided = table_decided = true;
            }
        } else if (span_ieq(t, tn, "application/json") || span_ieq(t, tn, "*/*") ||
                   span_ieq(t, tn, "application/*")) {
            disc_decided = table_decided = true;
        }
        /* protobuf, yaml, cbor ranges: not served, so they decide nothing */
        p = comma ? comma + 1 : end;
    }
}

int route_patch_type(const char *ct)
{
    static const char *const types[] = {
        "application/merge-patch+json", "application/json-patch+json",
        "application/strategic-merge-patch+json", "application/apply-patch+yaml",
    };
    const char *end, *semi;
    size_t n;

    if (!ct)
        return -1;
    end = ct + strnlen(ct, 1024);
    semi = memchr(ct, ';', (size_t)(end - ct));
    ct = skip_ws(ct, semi ? semi : end);
    n = trim_len(ct, (size_t)((semi ? semi : end) - ct));
    for (int i = 0; i < 4; i++)
        if (span_ieq(ct, n, types[i]))
            return i;
    return -1;
}

const char *route_verb(const char *method, const struct route *r, bool watch)
{
    bool named = r->name[0] != '\0';

    if (r->kind != ROUTE_RESOURCE || !method)
        return NULL;
    if (r->legacy_watch)
        return strcmp(method, "GET") == 0 ? "watch" : NULL;
    if (strcmp(method, "GET") == 0)
        return watch ? "watch" : named ? "get" : "list";
    if (strcmp(method, "POST") == 0)
        return !named || r->sub[0] ? "create" : NULL;
    if (strcmp(method, "PUT") == 0)
        return named ? "update" : NULL;
    if (strcmp(method, "PATCH") == 0)
        return named ? "patch" : NULL;
    if (strcmp(method, "DELETE") == 0)
        return r->sub[0] ? NULL : named ? "delete" : "deletecollection";
    return NULL;
}

void route_default_manager(const char *ua, char out[129])
{
    size_t n = 0;

    if (ua)
        while (ua[n] && ua[n] != '/' && n < 128)
            n++;
    if (n == 0) {
        strcpy(out, "unknown");
        return;
    }
    memcpy(out, ua, n);
    out[n] = '\0';
}

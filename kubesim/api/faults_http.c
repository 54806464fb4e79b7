/*
 * faults_http.c - plugs the fault table (faults.c) into kubesim's server: the
 * prehook that delays, fails or drops requests and applies the watch faults,
 * the /kubesim/ admin area (status, fault rules, watch faults), and the flags.
 *
 * The prehook runs on the connection's thread before authentication; the admin
 * area is an extension route, so it sits behind the same token as the API.
 * Watch faults reuse the server's own behaviour wherever it exists: a cut is the
 * watch's timeoutSeconds lowered to N (the server then ends the stream cleanly,
 * as the real one does at its timeout), and the delay is the store's event hold-back.
 * Only the expired resume is answered here (HTTP 200 with one ERROR event, then
 * a clean close, as the real watch cache does for a too old resourceVersion).
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kubesim/registry/registry.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"

#define ADMIN_PREFIX      "/kubesim/"
#define MAX_CUT_SECONDS   86400ul
#define MAX_WATCH_DELAY   600000ul
#define MAX_EXPIRE_NEXT   1000000ul

const char faults_usage[] =
    "               [--fault RULE]... [--fault-seed S] [--watch-cut-seconds N]\n"
    "               [--watch-delay-ms D]\n"
    "  RULE: verb=V[,resource=R](,code=429|500|503[,retry-after=S]|,action=reset\n"
    "        |,action=delay,ms=N)[,p=0..1|,every=N][,count=N]  (docs/kubesim-faults.md)\n";

static void count(struct faults *f, enum faults_kind k)
{
    atomic_fetch_add(&f->injected[k], 1);
}

/* ---- injected answers ------------------------------------------------------------ */

/* The Status a real server sends for code (apimachinery's NewTooManyRequests,
 * NewInternalError, NewServiceUnavailable). */
static int reply_fault(struct server_req *req, int code, int retry_after)
{
    struct store_status st = { .code = code };
    char ra[16];
    char *json;

    if (code == 429) {
        snprintf(st.reason, sizeof(st.reason), "TooManyRequests");
        snprintf(st.message, sizeof(st.message), "the server has received too many requests "
                 "and has asked us to try again later");
    } else if (code == 503) {
        snprintf(st.reason, sizeof(st.reason), "ServiceUnavailable");
        snprintf(st.message, sizeof(st.message), "the server is currently unable to handle "
                 "the request");
    } else {
        snprintf(st.reason, sizeof(st.reason), "InternalError");
        snprintf(st.message, sizeof(st.message), "Internal error occurred: injected by kubesim");
    }
    st.retry_after = retry_after;
    if (retry_after > 0) {
        snprintf(ra, sizeof(ra), "%d", retry_after);
        server_reply_header(req, "Retry-After", ra);
    }
    if (!(json = store_status_json(&st)))
        return server_reply_status(req, 500, "InternalError", "out of memory");
    return server_reply_take(req, code, "application/json", json, strlen(json));
}

/* A one-event stream: the ERROR line, then the terminating chunk. */
struct expire_stream {
    struct buf line;
    size_t off;
};

static ssize_t expire_read(void *arg, char *buf, size_t max)
{
    struct expire_stream *e = arg;
    size_t n = e->line.len - e->off;

    if (n == 0)
        return SERVER_STREAM_END;
    if (n > max)
        n = max;
    memcpy(buf, e->line.data + e->off, n);
    e->off += n;
    return (ssize_t)n;
}

static void expire_free(void *arg)
{
    struct expire_stream *e = arg;

    buf_free(&e->line);
    free(e);
}

static int reply_expired(struct faults *f, struct server_req *req)
{
    struct expire_stream *e = calloc(1, sizeof(*e));
    struct store_status st = { .code = 410 };
    char *json;

    if (!e)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    snprintf(st.reason, sizeof(st.reason), "Expired");
    snprintf(st.message, sizeof(st.message), "too old resource version: %.64s (%" PRIu64 ")",
             req->query->resource_version, store_current_rv(f->store));
    json = store_status_json(&st);
    if (!json || buf_printf(&e->line, "{\"type\":\"ERROR\",\"object\":%s}\n", json) < 0) {
        free(json);
        expire_free(e);
        return server_reply_status(req, 500, "InternalError", "out of memory");
    }
    free(json);
    return server_reply_stream(req, 200, "application/json", expire_read, e, expire_free);
}

static bool resource_served(struct faults *f, const struct route *r)
{
    const struct registry *reg = store_registry_rdlock(f->store);
    bool found = registry_find(reg, r->group, r->version, r->plural) != NULL;

    store_registry_unlock(f->store);
    return found;
}

/* Takes one of the pending expirations, if any. */
static bool take_expire(struct faults *f)
{
    long k = atomic_load(&f->expire_next);

    while (k > 0 && !atomic_compare_exchange_weak(&f->expire_next, &k, k - 1))
        ;
    return k > 0;
}

static int watch_faults(struct faults *f, struct server_req *req)
{
    const struct route_query *q = req->query;
    const char *rv = q->resource_version;
    unsigned cut = atomic_load(&f->watch_cut_s);

    if (q->err[0] || !resource_served(f, req->route))
        return SERVER_NEXT;   /* the server's own 400/404 */
    if (rv && rv[0] && strcmp(rv, "0") != 0 && atomic_load(&f->expire_next) > 0 &&
        take_expire(f)) {
        count(f, FK_EXPIRED);
        reply_expired(f, req);
        return SERVER_HANDLED;
    }
    if (cut && (q->timeout_seconds <= 0 || q->timeout_seconds > (long)cut)) {
        /* The query belongs to this request (the server parsed it into its own
         * mutable state); lowering the timeout makes the server's watch end cleanly
         * at N seconds with no change to the watch path. */
        ((struct route_query *)q)->timeout_seconds = (long)cut;
        count(f, FK_WATCH_CUT);
    }
    return SERVER_NEXT;
}

/* Whether the request carries the token (the server's own check answers it otherwise). */
static bool authenticated(struct faults *f, struct server_req *req)
{
    const char *h;

    if (!f->token)
        return true;
    h = server_req_header(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    /* compared in full whatever the first difference, like the server's own check */
    size_t n = strlen(h), m = strlen(f->token);
    unsigned char diff = n != m;
    for (size_t i = 0; i < n && i < m; i++)
        diff |= (unsigned char)(h[i] ^ f->token[i]);
    return diff == 0;
}

static int prehook(void *arg, struct server_req *req)
{
    struct faults *f = arg;
    const struct route *r = req->route;
    bool resource = r->kind == ROUTE_RESOURCE;
    struct faults_decision d;

    if (strncmp(req->path, ADMIN_PREFIX, sizeof(ADMIN_PREFIX) - 1) == 0)
        return SERVER_NEXT;   /* never fault the switch that turns faults off */
    atomic_fetch_add(&f->requests, 1);
    atomic_fetch_add(&f->by_verb[api__faults_verb_index(req->verb)], 1);
    if (!req->verb || (atomic_load(&f->n_active) == 0 && atomic_load(&f->watch_cut_s) == 0 &&
                       atomic_load(&f->expire_next) <= 0) || !authenticated(f, req))
        return SERVER_NEXT;   /* the common case: nothing switched on */
    faults_decide(f, req->verb, resource ? r->plural : "", resource ? r->sub : "", &d);
    if (d.delay_ms) {
        struct timespec ts = { d.delay_ms / 1000, (long)(d.delay_ms % 1000) * 1000000L };
        count(f, FK_DELAY);
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    if (d.reset) {
        count(f, FK_RESET);
        server_reply_reset(req);
        return SERVER_HANDLED;
    }
    if (d.code) {
        count(f, d.code == 429 ? FK_429 : d.code == 503 ? FK_503 : FK_500);
        reply_fault(req, d.code, d.retry_after);
        return SERVER_HANDLED;
    }
    if (resource && req->verb && strcmp(req->verb, "watch") == 0 &&
        (atomic_load(&f->watch_cut_s) || atomic_load(&f->expire_next) > 0))
        return watch_faults(f, req);
    return SERVER_NEXT;
}

void faults_note_reply(void *arg, const struct server_req *req, int code)
{
    struct faults *f = arg;

    if (!f || (req && strncmp(req->path, ADMIN_PREFIX, sizeof(ADMIN_PREFIX) - 1) == 0))
        return;
    if (code >= 0 && code < FAULTS_NCODES) {
        atomic_fetch_add(&f->by_code[code], 1);
        atomic_store(&f->codes_seen, true);
    }
}

/* ---- admin area ------------------------------------------------------------------ */

static int reply_json(struct server_req *req, int code, struct buf *b, int rc)
{
    size_t len = b->len;

    if (rc < 0 || !b->data) {
        buf_free(b);
        return server_reply_status(req, 500, "InternalError", "out of memory");
    }
    return server_reply_take(req, code, "application/json", buf_steal(b), len);
}

static int watch_json(struct faults *f, struct buf *b, const char *end)
{
    return buf_printf(b, "{\"delayMs\":%u,\"cutSeconds\":%u,\"expireNext\":%ld}%s",
                      atomic_load(&f->watch_delay_ms), atomic_load(&f->watch_cut_s),
                      atomic_load(&f->expire_next), end);
}

static int get_status(struct faults *f, struct server_req *req)
{
    struct store_stats st = { 0 };
    struct buf b = { 0 };
    int rc;

    store_get_stats(f->store, &st);
    rc = buf_printf(&b, "{\"kind\":\"KubesimStatus\",\"objects\":%zu,\"watchers\":%zu,"
                    "\"watchStreams\":%zu,\"rv\":%" PRIu64 ",\"events\":%" PRIu64 ","
                    "\"textParses\":%" PRIu64 ",\"labelPeeks\":%" PRIu64 ",\"requests\":{\"total\":%lu,\"byVerb\":{", st.objects, st.watchers,
                    server_open_watches(f->srv), st.rv, st.events, st.text_parses, st.label_peeks,
                    atomic_load(&f->requests));
    for (size_t i = 0; i < FAULTS_NVERBS; i++)
        rc |= buf_printf(&b, "%s\"%s\":%lu", i ? "," : "", faults_verbs[i],
                         atomic_load(&f->by_verb[i]));
    rc |= buf_puts(&b, "}");
    if (atomic_load(&f->codes_seen)) {
        const char *sep = "";
        rc |= buf_puts(&b, ",\"byCode\":{");
        for (int c = 0; c < FAULTS_NCODES; c++) {
            unsigned long n = atomic_load(&f->by_code[c]);
            if (n) {
                rc |= buf_printf(&b, "%s\"%d\":%lu", sep, c, n);
                sep = ",";
            }
        }
        rc |= buf_puts(&b, "}");
    }
    rc |= buf_puts(&b, "},\"faults\":{");
    for (int k = 0; k < FK_COUNT; k++)
        rc |= buf_printf(&b, "%s\"%s\":%lu", k ? "," : "", api__faults_kind_name((enum faults_kind)k),
                         atomic_load(&f->injected[k]));
    rc |= buf_puts(&b, "},\"watch\":");
    rc |= watch_json(f, &b, "");
    rc |= buf_puts(&b, ",\"rules\":");
    rc |= faults_rules_json(f, &b);
    rc |= buf_puts(&b, "}\n");
    return reply_json(req, 200, &b, rc);
}

static int get_faults(struct faults *f, struct server_req *req)
{
    struct buf b = { 0 };
    int rc;

    pthread_mutex_lock(&f->mu);
    rc = buf_printf(&b, "{\"seed\":%" PRIu64 ",\"rules\":", f->seed);
    pthread_mutex_unlock(&f->mu);
    rc |= faults_rules_json(f, &b);
    rc |= buf_puts(&b, "}\n");
    return reply_json(req, 200, &b, rc);
}

static int bad_request(struct server_req *req, const char *msg)
{
    return server_reply_status(req, 400, "BadRequest", msg);
}

/* PUT (replace) or POST (append): {"seed":S?,"rules":[rule...]}, [rule...] or one rule
 * (object or compact string; POST only). A rule that does not parse changes nothing. */
static int put_faults(struct faults *f, struct server_req *req, bool append)
{
    struct faults_rule *rules = NULL;
    cJSON *doc = cJSON_ParseWithLength(req->body, req->body_len);
    const cJSON *list = doc, *seed = NULL, *it;
    uint64_t seed_value = 0;
    char err[256];
    size_t n = 0;
    int rc = 0;

    if (!doc) {
        bad_request(req, "/kubesim/faults: the body is not JSON");
        goto out;
    }
    if (cJSON_IsObject(doc) && cJSON_GetObjectItemCaseSensitive(doc, "rules")) {
        list = cJSON_GetObjectItemCaseSensitive(doc, "rules");
        seed = cJSON_GetObjectItemCaseSensitive(doc, "seed");
        if (cJSON_GetArraySize(doc) != (seed ? 2 : 1)) {
            bad_request(req, "/kubesim/faults: only \"seed\" and \"rules\" are known");
            goto out;
        }
        if (seed && (!cJSON_IsNumber(seed) || !isfinite(seed->valuedouble) ||
                     seed->valuedouble < 0 ||
                     seed->valuedouble > 9007199254740992.0 ||
                     seed->valuedouble != (double)(uint64_t)seed->valuedouble)) {
            bad_request(req, "/kubesim/faults: seed must be a non-negative integer");
            goto out;
        }
        if (seed)
            seed_value = (uint64_t)seed->valuedouble;
    } else if (!cJSON_IsArray(doc) && !append) {
        bad_request(req, "/kubesim/faults: want {\"rules\":[...]} or [...]");
        goto out;
    }
    if (!cJSON_IsArray(list) && !(append && list == doc)) {
        bad_request(req, "/kubesim/faults: \"rules\" must be an array");
        goto out;
    }
    if (cJSON_IsArray(list) && cJSON_GetArraySize(list) > FAULTS_MAX_RULES) {
        bad_request(req, "/kubesim/faults: more than 64 rules");
        goto out;
    }
    if (!(rules = calloc(FAULTS_MAX_RULES, sizeof(*rules)))) {
        server_reply_status(req, 500, "InternalError", "out of memory");
        goto out;
    }
    if (cJSON_IsArray(list)) {
        cJSON_ArrayForEach(it, list) {
            if (faults_rule_from_json(it, &rules[n], err, sizeof(err)) < 0) {
                bad_request(req, err);
                goto out;
            }
            n++;
        }
    } else if (faults_rule_from_json(list, &rules[n++], err, sizeof(err)) < 0) {
        bad_request(req, err);
        goto out;
    }
    if (seed)
        faults_set_seed(f, seed_value);
    if (append) {
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = faults_add_rule(f, &rules[i]);
        if (rc < 0) {
            bad_request(req, "/kubesim/faults: the table holds at most 64 rules");
            goto out;
        }
    } else {
        faults_set_rules(f, rules, n);
    }
    log_info("kubesim: fault rules changed", "method", req->method, NULL);
    get_faults(f, req);
out:
    free(rules);
    cJSON_Delete(doc);
    return 0;
}

/* Reads an integer member of o in [0, max] into *out; 1 if present, 0 if absent,
 * -EINVAL if malformed. */
static int member_ulong(const cJSON *o, const char *name, unsigned long max, unsigned long *out)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, name);

    if (!m)
        return 0;
    if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) || m->valuedouble < 0 ||
        m->valuedouble > (double)max ||
        m->valuedouble != (double)(unsigned long)m->valuedouble)
        return -EINVAL;
    *out = (unsigned long)m->valuedouble;
    return 1;
}

static int put_watch(struct faults *f, struct server_req *req)
{
    cJSON *doc = cJSON_ParseWithLength(req->body, req->body_len);
    unsigned long delay = 0, cut = 0, expire = 0;
    int has_delay, has_cut, has_expire;
    struct buf b = { 0 };

    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return bad_request(req, "/kubesim/watch: want a JSON object "
                           "{\"delayMs\":D,\"cutSeconds\":N,\"expireNext\":K}");
    }
    has_delay = member_ulong(doc, "delayMs", MAX_WATCH_DELAY, &delay);
    has_cut = member_ulong(doc, "cutSeconds", MAX_CUT_SECONDS, &cut);
    has_expire = member_ulong(doc, "expireNext", MAX_EXPIRE_NEXT, &expire);
    if (has_delay < 0 || has_cut < 0 || has_expire < 0 ||
        cJSON_GetArraySize(doc) != has_delay + has_cut + has_expire) {
        cJSON_Delete(doc);
        return bad_request(req, "/kubesim/watch: known members are delayMs (0..600000), "
                           "cutSeconds (0..86400) and expireNext (0..1000000), integers");
    }
    cJSON_Delete(doc);
    if (has_delay) {
        atomic_store(&f->watch_delay_ms, (unsigned)delay);
        store_set_watch_delay_ms(f->store, (unsigned)delay);
    }
    if (has_cut)
        atomic_store(&f->watch_cut_s, (unsigned)cut);
    if (has_expire)
        atomic_store(&f->expire_next, (long)expire);
    log_info("kubesim: watch faults changed", NULL);
    return reply_json(req, 200, &b, watch_json(f, &b, "\n"));
}

static int not_allowed(struct server_req *req)
{
    return server_reply_status(req, 405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource");
}

static int admin(void *arg, struct server_req *req)
{
    struct faults *f = arg;
    const char *what = req->path + sizeof(ADMIN_PREFIX) - 1;
    const char *m = req->method;
    struct buf b = { 0 };

    if (strcmp(what, "status") == 0) {
        if (strcmp(m, "GET") != 0)
            return not_allowed(req);
        return get_status(f, req);
    }
    if (strcmp(what, "memory") == 0) {
        if (strcmp(m, "GET") != 0)
            return not_allowed(req);
        return reply_json(req, 200, &b, store_memory_json(f->store, &b));
    }
    if (strcmp(what, "faults") == 0) {
        if (strcmp(m, "GET") == 0)
            return get_faults(f, req);
        if (strcmp(m, "PUT") == 0 || strcmp(m, "POST") == 0)
            return put_faults(f, req, m[1] == 'O');
        if (strcmp(m, "DELETE") == 0) {
            faults_set_rules(f, NULL, 0);
            log_info("kubesim: fault rules cleared", NULL);
            return get_faults(f, req);
        }
        return not_allowed(req);
    }
    if (strcmp(what, "watch") == 0) {
        if (strcmp(m, "GET") == 0)
            return reply_json(req, 200, &b, watch_json(f, &b, "\n"));
        if (strcmp(m, "PUT") == 0)
            return put_watch(f, req);
        return not_allowed(req);
    }
    return server_reply_status(req, 404, "NotFound",
                               "the server could not find the requested resource");
}

/* ---- wiring ------------------------------------------------------------------------ */

int faults_parse_flag(struct faults **fp, const char *flag, const char *value,
                      char *err, size_t errlen)
{
    struct faults_rule r;
    unsigned long u;
    int rc;

    if (strcmp(flag, "fault") != 0 && strcmp(flag, "fault-seed") != 0 &&
        strcmp(flag, "watch-cut-seconds") != 0 && strcmp(flag, "watch-delay-ms") != 0)
        return -ENOENT;
    if (!*fp && (rc = faults_new(1, fp)) < 0) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    if (strcmp(flag, "fault") == 0) {
        if ((rc = faults_rule_parse(value, &r, err, errlen)) < 0)
            return rc;
        if (faults_add_rule(*fp, &r) < 0) {
            snprintf(err, errlen, "--fault: at most %d rules", FAULTS_MAX_RULES);
            return -EINVAL;
        }
    } else if (strcmp(flag, "fault-seed") == 0) {
        if (api__faults_parse_ulong(value, 0, ULONG_MAX, &u) < 0) {
            snprintf(err, errlen, "--fault-seed wants a non-negative integer, got \"%.40s\"",
                     value);
            return -EINVAL;
        }
        faults_set_seed(*fp, u);
    } else if (strcmp(flag, "watch-cut-seconds") == 0) {
        if (api__faults_parse_ulong(value, 0, MAX_CUT_SECONDS, &u) < 0) {
            snprintf(err, errlen, "--watch-cut-seconds wants 0..86400, got \"%.40s\"", value);
            return -EINVAL;
        }
        atomic_store(&(*fp)->watch_cut_s, (unsigned)u);
    } else {
        if (api__faults_parse_ulong(value, 0, MAX_WATCH_DELAY, &u) < 0) {
            snprintf(err, errlen, "--watch-delay-ms wants 0..600000, got \"%.40s\"", value);
            return -EINVAL;
        }
        atomic_store(&(*fp)->watch_delay_ms, (unsigned)u);
    }
    return 0;
}

int faults_install(struct faults **fp, struct server *srv, struct store *store,
                   const char *token, char *err, size_t errlen)
{
    struct faults *f;
    char n[24];
    int rc;

    if (!*fp && (rc = faults_new(1, fp)) < 0) {
        snprintf(err, errlen, "faults: out of memory");
        return rc;
    }
    f = *fp;
    f->srv = srv;
    f->store = store;
    free(f->token);
    f->token = NULL;
    if (token && !(f->token = strdup(token))) {
        snprintf(err, errlen, "faults: out of memory");
        return -ENOMEM;
    }
    store_set_watch_delay_ms(store, atomic_load(&f->watch_delay_ms));
    if ((rc = server_add_route(srv, ADMIN_PREFIX, admin, f)) < 0) {
        snprintf(err, errlen, "faults: cannot register %s: %s", ADMIN_PREFIX, strerror(-rc));
        return rc;
    }
    server_set_prehook(srv, prehook, f);
    server_set_posthook(srv, faults_note_reply, f);
    snprintf(n, sizeof(n), "%zu", atomic_load(&f->n_active));
    if (atomic_load(&f->n_active) || atomic_load(&f->watch_cut_s) ||
        atomic_load(&f->watch_delay_ms))
        log_info("kubesim: fault injection on", "rules", n, NULL);
    return 0;
}

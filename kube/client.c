/*
 * client.c - the blocking transport under every kube_* call: a pool of curl
 * easy handles (each keeps its own keep-alive connections; a curl share
 * handle adds a common DNS and TLS-session cache), TLS set up from the
 * config, the QPS limiter, and the retry loop.
 *
 * Retry policy (docs/kube-client.md): idempotent requests are retried on
 * transport errors, 429 and 500/502/503/504; non-idempotent ones (POST,
 * PATCH, PUT without resourceVersion) only on 429 and on connection refused,
 * where the server cannot have seen a byte. Delays grow exponentially with
 * jitter; a Retry-After (header or Status details) replaces the backoff.
 * A 401 with a token file forces one re-read of the token and one retry.
 *
 * Connections are not shared across threads through the share handle:
 * libcurl documents shared connection caches as unsafe between concurrent
 * threads. Instead a handle returns to the pool after each call and keeps
 * its connection warm for the next caller.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

#include "kube/internal.h"

#define DEFAULT_QPS 100.0
#define DEFAULT_BURST 200
#define DEFAULT_RETRIES 5
#define DEFAULT_BACKOFF_BASE_MS 200
#define DEFAULT_BACKOFF_MAX_MS 10000
#define DEFAULT_MAX_RESPONSE (64u << 20)
#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define RETRY_AFTER_MAX_S 60

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static uint64_t real_now(void *arg)
{
    (void)arg;
    return util_now_ns();
}

static void real_sleep(void *arg, uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    (void)arg;
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *arg)
{
    struct kube_client *c = arg;
    (void)h;
    (void)access;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST)
        pthread_mutex_lock(&c->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *arg)
{
    struct kube_client *c = arg;
    (void)h;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST)
        pthread_mutex_unlock(&c->share_mu[data]);
}

/*
 * Splits cfg->server into the URL we put in requests and, with
 * tls-server-name, a CONNECT_TO entry: the URL names tls_server_name (so
 * curl sends it as SNI and verifies the certificate against it) while the
 * TCP connection still goes to the configured host.
 */
static int setup_base_url(struct kube_client *c)
{
    const struct kube_config *cfg = c->cfg;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    int rc = -EINVAL;

    if (u == NULL)
        return -ENOMEM;
    if (curl_url_set(u, CURLUPART_URL, cfg->server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        log_error("kube: cannot parse server URL", "server", cfg->server, NULL);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        path = NULL;
    const char *prefix = (path != NULL && strcmp(path, "/") != 0) ? path : "";
    size_t pl = strlen(prefix);
    while (pl > 0 && prefix[pl - 1] == '/')
        pl--;
    const char *name = cfg->tls_server_name != NULL ? cfg->tls_server_name : host;
    if (asprintf(&c->base_url, "%s://%s:%s%.*s", scheme, name, port, (int)pl, prefix) < 0) {
        c->base_url = NULL;
        rc = -ENOMEM;
        goto out;
    }
    if (cfg->tls_server_name != NULL) {
        char *entry = NULL;
        if (asprintf(&entry, "%s:%s:%s:%s", cfg->tls_server_name, port, host, port) < 0) {
            rc = -ENOMEM;
            goto out;
        }
        c->connect_to = curl_slist_append(NULL, entry);
        free(entry);
        if (c->connect_to == NULL) {
            rc = -ENOMEM;
            goto out;
        }
    }
    rc = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

int kube_client_new(struct kube_config *cfg, const struct kube_client_opts *opts,
                    struct kube_client **out)
{
    struct kube_client *c;
    int rc;

    *out = NULL;
    if (cfg == NULL || cfg->server == NULL)
        return -EINVAL;
    pthread_once(&curl_once, curl_init_once);
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return -ENOMEM;
    c->cfg = cfg;
    if (opts != NULL)
        c->opts = *opts;
    if (c->opts.qps == 0)
        c->opts.qps = DEFAULT_QPS;
    if (c->opts.burst <= 0)
        c->opts.burst = DEFAULT_BURST;
    if (c->opts.max_retries == 0)
        c->opts.max_retries = DEFAULT_RETRIES;
    if (c->opts.max_retries < 0)
        c->opts.max_retries = 0;
    if (c->opts.backoff_base_ms == 0)
        c->opts.backoff_base_ms = DEFAULT_BACKOFF_BASE_MS;
    if (c->opts.backoff_max_ms == 0)
        c->opts.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    if (c->opts.max_response_bytes == 0)
        c->opts.max_response_bytes = DEFAULT_MAX_RESPONSE;
    if (c->opts.timeout_ms <= 0)
        c->opts.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (c->opts.connect_timeout_ms <= 0)
        c->opts.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    if (c->opts.clock.now_ns == NULL)
        c->opts.clock.now_ns = real_now;
    if (c->opts.clock.sleep_ns == NULL)
        c->opts.clock.sleep_ns = real_sleep;
    if (c->opts.user_agent != NULL)
        c->user_agent = strdup(c->opts.user_agent);
    else if (asprintf(&c->user_agent, "rayop/%s (linux; %s)", KUBE_VERSION,
                      curl_version()) < 0)
        c->user_agent = NULL;
    c->opts.user_agent = NULL; /* borrowed pointer: use c->user_agent */
    pthread_mutex_init(&c->pool_mu, NULL);
    kube__metrics_init(&c->metrics);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_mu[i], NULL);
    kube__limiter_init(&c->limiter, c->opts.qps, c->opts.burst, kube__now(c));
    pthread_mutex_init(&c->lim_mu, NULL);
    c->rng = (uint32_t)util_now_ns() | 1u;
    if (c->user_agent == NULL) {
        rc = -ENOMEM;
        goto fail;
    }
    c->share = curl_share_init();
    if (c->share == NULL) {
        rc = -ENOMEM;
        goto fail;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    rc = setup_base_url(c);
    if (rc < 0)
        goto fail;
    *out = c;
    return 0;
fail:
    kube_client_free(c);
    return rc;
}

void kube_client_free(struct kube_client *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    if (c->share != NULL)
        curl_share_cleanup(c->share);
    curl_slist_free_all(c->connect_to);
    free(c->base_url);
    free(c->user_agent);
    kube__limiter_destroy(&c->limiter);
    for (size_t i = 0; i < c->nlims; i++)
        kube__limiter_destroy(&c->lims[i].l);
    pthread_mutex_destroy(&c->lim_mu);
    pthread_mutex_destroy(&c->pool_mu);
    kube__metrics_destroy(&c->metrics);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_mu[i]);
    free(c);
}

void kube_client_get_stats(struct kube_client *c, struct kube_client_stats *out)
{
    out->requests = atomic_load(&c->st_requests);
    out->retries = atomic_load(&c->st_retries);
    out->throttled_ns = atomic_load(&c->st_throttled_ns);
    out->connects = atomic_load(&c->st_connects);
}

static CURL *pool_get(struct kube_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool > 0)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_mu);
    return h != NULL ? h : curl_easy_init();
}

static void pool_put(struct kube_client *c, CURL *h)
{
    pthread_mutex_lock(&c->pool_mu);
    if (c->npool < KUBE_POOL_MAX) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (h != NULL)
        curl_easy_cleanup(h);
}

int kube__errno_from_curl(int cc)
{
    switch (cc) {
    case CURLE_OK: return 0;
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return -ECONNRESET;
    case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM: case CURLE_SSL_CACERT_BADFILE: return -EACCES;
    case CURLE_OUT_OF_MEMORY: return -ENOMEM;
    case CURLE_FILESIZE_EXCEEDED: return -EMSGSIZE;
    default: return -EPROTO;
    }
}

/* The client certificate or key: inline PEM (kubeconfig's client-*-data) copied into
 * the handle, else the file it names. */
static void client_pem(CURL *h, CURLoption blob_opt, CURLoption type_opt, CURLoption file_opt,
                       char *pem, size_t len, const char *file)
{
    if (pem != NULL) {
        struct curl_blob blob = { pem, len, CURL_BLOB_COPY };
        curl_easy_setopt(h, blob_opt, &blob);
        curl_easy_setopt(h, type_opt, "PEM");
    } else if (file != NULL) {
        curl_easy_setopt(h, file_opt, file);
    }
}

int kube__easy_setup(struct kube_client *c, void *easy, const char *path, struct buf *urlbuf)
{
    const struct kube_config *cfg = c->cfg;
    CURL *h = easy;

    buf_reset(urlbuf);
    if (buf_puts(urlbuf, c->base_url) < 0 || buf_puts(urlbuf, path) < 0)
        return -ENOMEM;
    curl_easy_setopt(h, CURLOPT_URL, urlbuf->data);
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (!cfg->disable_compression)
        curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->connect_to != NULL)
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
    if (cfg->insecure_skip_tls_verify) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
        if (cfg->ca_pem != NULL) {
            struct curl_blob blob = { cfg->ca_pem, cfg->ca_pem_len, CURL_BLOB_COPY };
            curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
        } else if (cfg->ca_file != NULL) {
            curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
        }
    }
    client_pem(h, CURLOPT_SSLCERT_BLOB, CURLOPT_SSLCERTTYPE, CURLOPT_SSLCERT, cfg->cert_pem,
               cfg->cert_pem_len, cfg->cert_file);
    client_pem(h, CURLOPT_SSLKEY_BLOB, CURLOPT_SSLKEYTYPE, CURLOPT_SSLKEY, cfg->key_pem,
               cfg->key_pem_len, cfg->key_file);
    return 0;
}

int kube__build_headers(struct kube_client *c, const char *content_type, const char *extra,
                        int force_token, void **out)
{
    struct curl_slist *h = NULL, *t;
    char *token = NULL;
    struct buf line = { 0 };
    int rc;

    *out = NULL;
    rc = kube_config_token(c->cfg, force_token, &token);
    if (rc < 0)
        return rc;
    rc = -ENOMEM;
    if ((h = curl_slist_append(NULL, "Accept: application/json")) == NULL)
        goto out;
    if (content_type != NULL) {
        if (buf_printf(&line, "Content-Type: %s", content_type) < 0 ||
            (t = curl_slist_append(h, line.data)) == NULL)
            goto out;
        h = t;
    }
    /* Without this curl waits for a 100-continue on bodies over 1 KiB. */
    if ((t = curl_slist_append(h, "Expect:")) == NULL)
        goto out;
    h = t;
    if (token != NULL) {
        buf_reset(&line);
        if (buf_printf(&line, "Authorization: Bearer %s", token) < 0 ||
            (t = curl_slist_append(h, line.data)) == NULL)
            goto out;
        h = t;
    }
    if (extra != NULL) {
        if ((t = curl_slist_append(h, extra)) == NULL)
            goto out;
        h = t;
    }
    *out = h;
    h = NULL;
    rc = 0;
out:
    if (line.data != NULL)
        explicit_bzero(line.data, line.cap);
    buf_free(&line);
    if (token != NULL) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
    curl_slist_free_all(h);
    return rc;
}

/* ---- one HTTP exchange ----------------------------------------------------- */

struct sink {
    struct buf body;
    size_t max;
    int too_big;
    int retry_after_s;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    if (s->body.len + len > s->max) {
        s->too_big = 1;
        return 0;
    }
    if (buf_append(&s->body, p, len) < 0)
        return 0;
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof(name) && strncasecmp(p, name, sizeof(name) - 1) == 0) {
        char tmp[32];
        size_t vl = len - (sizeof(name) - 1);
        if (vl >= sizeof(tmp))
            vl = sizeof(tmp) - 1;
        memcpy(tmp, p + sizeof(name) - 1, vl);
        tmp[vl] = '\0';
        long v = strtol(tmp, NULL, 10); /* delta-seconds; HTTP dates are ignored */
        if (v > 0)
            s->retry_after_s = v > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S : (int)v;
    }
    return len;
}

static uint32_t rng_next(struct kube_client *c)
{
    /* xorshift32 on a shared word: races only perturb the jitter. */
    uint32_t x = atomic_load_explicit(&c->rng, memory_order_relaxed);
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    atomic_store_explicit(&c->rng, x, memory_order_relaxed);
    return x;
}

static uint64_t kube__backoff_ns(struct kube_client *c, int attempt)
{
    uint64_t d = (uint64_t)c->opts.backoff_base_ms * 1000000ull;
    uint64_t cap = (uint64_t)c->opts.backoff_max_ms * 1000000ull;
    for (int i = 1; i < attempt && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    /* Jitter over the upper half keeps the exponential growth visible. */
    return d / 2 + (d / 2 ? rng_next(c) % (d / 2 + 1) : 0);
}

static int is_retryable(const struct kube_http *rq, int cc, int code)
{
    if (cc != CURLE_OK)
        return cc == CURLE_COULDNT_CONNECT || (rq->idempotent && cc != CURLE_WRITE_ERROR &&
                                               cc != CURLE_BAD_CONTENT_ENCODING &&
                                               cc != CURLE_PEER_FAILED_VERIFICATION &&
                                               cc != CURLE_SSL_CACERT_BADFILE &&
                                               cc != CURLE_SSL_CERTPROBLEM);
    if (code == 429)
        return 1;
    return rq->idempotent && (code == 500 || code == 502 || code == 503 || code == 504);
}

static void set_rv(struct kube_result *res)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(res->body, "metadata");
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
    res->resource_version[0] = '\0';
    if (cJSON_IsString(rv))
        snprintf(res->resource_version, sizeof(res->resource_version), "%s", rv->valuestring);
}

int kube__do(struct kube_client *c, const struct kube_http *rq, struct kube_result *res)
{
    struct sink s = { 0 };
    struct buf url = { 0 };
    struct curl_slist *hdrs = NULL;
    int forced_token = 0, force_next = 0, rc = 0;
    CURL *h = NULL;
    char ms[32];
    double limiter_s = 0;

    memset(res, 0, sizeof(*res));
    s.max = rq->max_response ? rq->max_response : c->opts.max_response_bytes;
    struct kube_limiter *lim = kube__limiter_for(c, rq->res, strcmp(rq->method, "GET") == 0);
    /* a ticket taken for this bucket pays for the first attempt only: a retry (401 token
     * reload) waits on the bucket like any request */
    bool paid = rq->ticket != NULL && rq->ticket->taken && rq->ticket->res == rq->res;
    if (rq->ticket != NULL)
        rq->ticket->taken = 0;
    for (;;) {
        uint64_t wait = paid ? 0 : kube__limiter_reserve(lim, kube__now(c));
        limiter_s = paid ? rq->ticket->waited_s : (double)wait / 1e9;
        paid = false;
        if (wait > 0) {
            atomic_fetch_add(&c->st_throttled_ns, wait);
            c->opts.clock.sleep_ns(c->opts.clock.arg, wait);
        }
        buf_reset(&s.body);
        s.too_big = 0;
        s.retry_after_s = 0;
        curl_slist_free_all(hdrs);
        hdrs = NULL;
        rc = kube__build_headers(c, rq->body != NULL ? rq->content_type : NULL, rq->extra_header,
                                 force_next, (void **)&hdrs);
        force_next = 0;
        if (rc < 0)
            goto out;
        if (h == NULL && (h = pool_get(c)) == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        curl_easy_reset(h);
        rc = kube__easy_setup(c, h, rq->path, &url);
        if (rc < 0)
            goto out;
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
        if (strcmp(rq->method, "GET") == 0)
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        if (rq->body != NULL) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        }
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                         rq->timeout_ms > 0 ? rq->timeout_ms : c->opts.timeout_ms);

        uint64_t t0 = util_now_ns();
        CURLcode cc = curl_easy_perform(h);
        double took = (double)(util_now_ns() - t0) / 1e9;
        long code = 0, nconn = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &nconn);
        atomic_fetch_add(&c->st_requests, 1);
        atomic_fetch_add(&c->st_connects, (uint64_t)nconn);
        res->attempts++;
        res->http_code = (int)code;
        /* The URL never carries credentials; the token lives in a header we do not log. */
        log_debug("kube request", "method", rq->method, "url", url.data, "code",
                  (snprintf(ms, sizeof(ms), "%ld", code), ms), "curl",
                  cc != CURLE_OK ? curl_easy_strerror(cc) : NULL, NULL);

        if (cc == CURLE_OK && code >= 200 && code < 300) {
            kube__metrics_attempt(&c->metrics, rq->method, code, took, limiter_s, false);
            if (rq->want_raw) {
                res->raw_len = s.body.len;
                if (buf_reserve(&s.body, 1) < 0) {
                    rc = -ENOMEM;
                    goto out;
                }
                s.body.data[s.body.len] = '\0';
                res->raw = buf_steal(&s.body);
            }
            const char *b = res->raw != NULL ? res->raw : s.body.data;
            size_t blen = res->raw != NULL ? res->raw_len : s.body.len;
            if (rq->parse_json && blen > 0) {
                res->body = cJSON_ParseWithLength(b, blen);
                if (res->body == NULL) {
                    kube__status_from_code(&res->status, (int)code, "response is not JSON");
                    rc = -EPROTO;
                    goto out;
                }
                set_rv(res);
            }
            rc = 0;
            goto out;
        }
        if (cc != CURLE_OK) {
            rc = s.too_big ? -EMSGSIZE : kube__errno_from_curl((int)cc);
            memset(&res->status, 0, sizeof(res->status));
            snprintf(res->status.message, sizeof(res->status.message), "%s%s",
                     s.too_big ? "response over the size limit: " : "",
                     curl_easy_strerror(cc));
        } else {
            if (kube_status_parse(s.body.data, s.body.len, &res->status) < 0 ||
                res->status.code == 0)
                kube__status_from_code(&res->status, (int)code, NULL);
            if (s.retry_after_s > 0)
                res->status.retry_after_s = s.retry_after_s;
            rc = kube_status_errno(&res->status);
            if (code == 401 && c->cfg->token_file != NULL && !forced_token) {
                /* The token may have rotated under us: re-read it once. */
                kube__metrics_attempt(&c->metrics, rq->method, code, took, limiter_s, true);
                forced_token = force_next = 1;
                continue;
            }
        }
        bool again = !rq->once && is_retryable(rq, (int)cc, (int)code) &&
                     res->attempts <= c->opts.max_retries;
        kube__metrics_attempt(&c->metrics, rq->method, cc == CURLE_OK ? code : 0, took, limiter_s,
                              again);
        if (!again)
            break;
        uint64_t delay = (code == 429 && res->status.retry_after_s > 0)
                             ? (uint64_t)res->status.retry_after_s * 1000000000ull
                             : kube__backoff_ns(c, res->attempts);
        atomic_fetch_add(&c->st_retries, 1);
        log_debug("kube retry", "method", rq->method, "url", url.data, "error",
                  kube_strerror(rc), NULL);
        c->opts.clock.sleep_ns(c->opts.clock.arg, delay);
    }
out:
    if (rc < 0 && res->body == NULL && s.body.len > 0 && rq->parse_json)
        res->body = cJSON_ParseWithLength(s.body.data, s.body.len); /* the Status, if JSON */
    /* kube_raw callers (a proxied Ray dashboard) read the error body: it is not a Status */
    if (rc < 0 && rq->want_raw && res->raw == NULL && res->http_code != 0 && s.body.len > 0 &&
        buf_reserve(&s.body, 1) == 0) {
        s.body.data[s.body.len] = '\0';
        res->raw_len = s.body.len;
        res->raw = buf_steal(&s.body);
    }
    if (h != NULL)
        pool_put(c, h);
    curl_slist_free_all(hdrs);
    buf_free(&url);
    buf_free(&s.body);
    return rc;
}

void kube_result_release(struct kube_result *r)
{
    if (r == NULL)
        return;
    cJSON_Delete(r->body);
    free(r->raw);
    memset(r, 0, sizeof(*r));
}

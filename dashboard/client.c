/*
 * client.c - the Ray Dashboard transport and the Jobs API calls on top of it.
 *
 * Direct mode: one libcurl easy handle per call (a reconcile makes one or two
 * calls per poll; connection reuse is not worth a shared pool's locking), http
 * and https only, no redirects, the body bounded by DASH_MAX_BODY. Proxy mode:
 * kube_raw through the API server, which brings the client's token, TLS and
 * QPS limiter; its error bodies are kept (kube.h) so a proxied dashboard's
 * answer reads the same as a direct one.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "dashboard/dashboard.h"
#include "util/util.h"

#define JOB_PATH "/api/jobs/"

int dash_target_direct(struct dash_target *t, const char *addr)
{
    memset(t, 0, sizeof(*t));
    if (!addr || !*addr)
        return -EINVAL;
    const char *scheme = "http://";
    if (strncmp(addr, "http://", 7) == 0 || strncmp(addr, "https://", 8) == 0)
        scheme = "";
    else if (strstr(addr, "://"))
        return -EINVAL;
    int n = snprintf(t->base, sizeof(t->base), "%s%s", scheme, addr);
    if (n < 0 || (size_t)n >= sizeof(t->base))
        return -EINVAL;
    while (n > 0 && t->base[n - 1] == '/')
        t->base[--n] = '\0';
    t->mode = DASH_DIRECT;
    t->timeout_ms = DASH_DIRECT_TIMEOUT_MS;
    return 0;
}

/* A DNS-1123 label-ish segment: it goes into a URL path unescaped. */
static bool path_segment_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 253)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.'))
            return false;
    return true;
}

int dash_target_proxy(struct dash_target *t, struct kube_client *kc, const char *ns,
                      const char *service, const char *port)
{
    memset(t, 0, sizeof(*t));
    if (!kc || !path_segment_ok(ns) || !path_segment_ok(service) || !path_segment_ok(port))
        return -EINVAL;
    int n = snprintf(t->base, sizeof(t->base), "/api/v1/namespaces/%s/services/%s:%s/proxy", ns,
                     service, port);
    if (n < 0 || (size_t)n >= sizeof(t->base))
        return -EINVAL;
    t->mode = DASH_PROXY;
    t->kube = kc;
    t->timeout_ms = DASH_PROXY_TIMEOUT_MS;
    return 0;
}

void dash_reply_free(struct dash_reply *r)
{
    if (!r)
        return;
    free(r->body);
    memset(r, 0, sizeof(*r));
}


static int curl_errno(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
        return -EHOSTUNREACH;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    default:
        return -EIO;
    }
}

static int call_direct(const struct dash_target *t, const char *method, const char *url,
                       const char *body, size_t body_len, struct dash_reply *r)
{
    struct buf_sink s = { .max = DASH_MAX_BODY };
    struct curl_slist *hdrs = NULL;
    int rc = 0;
    CURL *h = buf_sink_easy(url, "http,https", &s);
    if (!h)
        return -ENOMEM;
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, t->timeout_ms > 0 ? t->timeout_ms : DASH_DIRECT_TIMEOUT_MS);
    if (body) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    if (t->auth_header[0]) {
        struct curl_slist *n = curl_slist_append(hdrs, t->auth_header);
        if (!n) {
            rc = -ENOMEM;
            goto out;
        }
        hdrs = n;
    }
    if (hdrs)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        rc = s.too_big ? -EMSGSIZE : curl_errno(cc);
        goto out;
    }
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (buf_reserve(&s.b, 1) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    s.b.data[s.b.len] = '\0';
    r->code = (int)code;
    r->len = s.b.len;
    r->body = buf_steal(&s.b);
out:
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    buf_free(&s.b);
    return rc;
}

static int call_proxy(const struct dash_target *t, const char *method, const char *path,
                      const char *body, size_t body_len, struct dash_reply *r)
{
    struct kube_result kr = { 0 };
    struct kube_request rq = { .method = method, .path = path, .body = body,
                               .body_len = body_len,
                               .idempotent = strcmp(method, "GET") == 0,
                               .max_response_bytes = DASH_MAX_BODY,
                               .timeout_ms = t->timeout_ms,
                               .extra_header = t->auth_header[0] ? t->auth_header : NULL };
    int rc = kube_raw(t->kube, &rq, &kr);
    if (kr.http_code == 0) {
        /* no HTTP answer at all: a transport error */
        kube_result_release(&kr);
        return rc < 0 ? rc : -EIO;
    }
    if (rc == -EMSGSIZE) {
        kube_result_release(&kr);
        return rc;
    }
    r->code = kr.http_code;
    if (kr.raw) {
        r->body = kr.raw;
        r->len = kr.raw_len;
        kr.raw = NULL;
    } else if (!(r->body = strdup(""))) {
        kube_result_release(&kr);
        return -ENOMEM;
    }
    kube_result_release(&kr);
    return 0;
}

#define AUTH_PREFIX "x-ray-authorization: Bearer "

int dash_target_set_token(struct dash_target *t, const char *token, size_t len)
{
    if (!t || !token || len == 0 || len >= sizeof(t->auth_header) - strlen(AUTH_PREFIX))
        return -EINVAL;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)token[i] < 0x21 || (unsigned char)token[i] > 0x7e)
            return -EINVAL;
    memcpy(t->auth_header, AUTH_PREFIX, strlen(AUTH_PREFIX));
    memcpy(t->auth_header + strlen(AUTH_PREFIX), token, len);
    t->auth_header[strlen(AUTH_PREFIX) + len] = '\0';
    return 0;
}

int dash_target_token_from_secret(struct dash_target *t, cJSON *secret)
{
    char *tok = NULL;
    size_t n = 0;
    int rc = kube_secret_value(secret, "auth_token", &tok, &n);
    if (rc == 0)
        rc = dash_target_set_token(t, tok, n);
    if (tok) {
        explicit_bzero(tok, n);
        free(tok);
    }
    /* the Secret object holds the token too (base64) */
    cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(secret, "data"),
                                                "auth_token");
    if (cJSON_IsString(v))
        explicit_bzero(v->valuestring, strlen(v->valuestring));
    return rc;
}

void dash_target_wipe(struct dash_target *t)
{
    if (t)
        explicit_bzero(t->auth_header, sizeof(t->auth_header));
}

int dash_call(const struct dash_target *t, const char *method, const char *path,
              const char *body, size_t body_len, struct dash_reply *r)
{
    struct buf url = { 0 };
    memset(r, 0, sizeof(*r));
    if (!t || !method || !path || path[0] != '/')
        return -EINVAL;
    if (buf_printf(&url, "%s%s", t->base, path) < 0)
        return -ENOMEM;
    int rc = t->mode == DASH_PROXY ? call_proxy(t, method, url.data, body, body_len, r)
                                   : call_direct(t, method, url.data, body, body_len, r);
    if (rc == 0)
        log_debug("dashboard call", "method", method, "path", path,
                  "mode", t->mode == DASH_PROXY ? "proxy" : "direct", NULL);
    buf_free(&url);
    return rc;
}

int dash_job_path(char *out, size_t cap, const char *id, const char *suffix)
{
    if (dash_id_valid(id) < 0)
        return -EINVAL;
    int n = snprintf(out, cap, JOB_PATH "%s%s", id, suffix);
    return n < 0 || (size_t)n >= cap ? -EINVAL : 0;
}

static bool ok2xx(int code)
{
    return code >= 200 && code <= 299;
}

/* a Jobs API reply's status: 0 for 2xx, -ENOENT for 404, -EIO for another */
static int job_status(const struct dash_reply *r)
{
    return ok2xx(r->code) ? 0 : r->code == 404 ? -ENOENT : -EIO;
}

/* METHOD jobs/ID[suffix]: 0 with *r holding a 2xx reply (caller frees it), -ENOENT
 * for 404, -EIO for another status, or the call's error; *r is freed on error. */
static int job_call(const struct dash_target *t, const char *method, const char *id,
                    const char *suffix, struct dash_reply *r)
{
    char path[64 + DASH_ID_MAX];
    int rc = dash_job_path(path, sizeof(path), id, suffix);
    if (rc < 0 || (rc = dash_call(t, method, path, NULL, 0, r)) < 0)
        return rc;
    if ((rc = job_status(r)) < 0)
        dash_reply_free(r);
    return rc;
}

int dash_job_info_reply(const struct dash_reply *r, struct dash_job_info *out)
{
    int rc = job_status(r);
    return rc < 0 ? rc : dash_parse_job_info(r->body, r->len, out);
}

int dash_job_submit_reply(const struct dash_reply *r, char *job_id, size_t cap)
{
    if (ok2xx(r->code))
        return dash_parse_submit(r->body, r->len, job_id, cap);
    if (r->body && strstr(r->body, "Please use a different submission_id"))
        return -EEXIST;   /* Ray answers 400 or 500 depending on the version */
    return -EIO;
}

int dash_job_stop_reply(const struct dash_reply *r, bool *stopped)
{
    int rc = job_status(r);
    *stopped = false;
    return rc < 0 ? rc : dash_parse_stop(r->body, r->len, stopped);
}

int dash_job_get(const struct dash_target *t, const char *id, struct dash_job_info *out)
{
    struct dash_reply r;
    int rc = job_call(t, "GET", id, "", &r);
    if (rc < 0)
        return rc;
    rc = dash_job_info_reply(&r, out);
    dash_reply_free(&r);
    return rc;
}

int dash_job_submit(const struct dash_target *t, const char *body, size_t len, char *job_id,
                    size_t cap)
{
    struct dash_reply r;
    int rc = dash_call(t, "POST", JOB_PATH, body, len, &r);
    if (rc < 0)
        return rc;
    rc = dash_job_submit_reply(&r, job_id, cap);
    dash_reply_free(&r);
    return rc;
}

int dash_job_stop(const struct dash_target *t, const char *id)
{
    struct dash_reply r;
    bool stopped = false;
    int rc = job_call(t, "POST", id, "/stop", &r);
    if (rc < 0)
        return rc;
    rc = dash_job_stop_reply(&r, &stopped);
    dash_reply_free(&r);
    if (rc < 0 || stopped)
        return rc;
    /* not stopped: fine if it already ended (KubeRay's StopJob does the same) */
    struct dash_job_info info;
    if ((rc = dash_job_get(t, id, &info)) < 0)
        return rc;
    return dash_job_status_terminal(info.status) ? 0 : -EBUSY;
}

int dash_job_delete(const struct dash_target *t, const char *id)
{
    struct dash_reply r;
    int rc = job_call(t, "DELETE", id, "", &r);
    if (rc == 0)
        dash_reply_free(&r);
    return rc;
}

int dash_job_logs(const struct dash_target *t, const char *id, char **logs)
{
    struct dash_reply r;
    *logs = NULL;
    int rc = job_call(t, "GET", id, "/logs", &r);
    if (rc < 0)
        return rc;
    rc = dash_parse_logs(r.body, r.len, logs);
    dash_reply_free(&r);
    return rc;
}

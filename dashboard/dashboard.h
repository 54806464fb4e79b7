/*
 * dashboard.h - a client of the Ray Dashboard's REST API, the way KubeRay's
 * utils/dashboardclient talks to a cluster's head: the Jobs API (submit, get,
 * stop, delete, logs) now, the Serve API (RayService) through the same
 * dash_call() later.
 *
 * A target is reached either directly (http://HEAD-SVC-FQDN:PORT, libcurl,
 * 2 s timeout as KubeRay's direct client) or through the API server's service
 * proxy (--use-kubernetes-proxy: /api/v1/namespaces/NS/services/NAME:PORT/proxy,
 * sent with kube_raw so the API client's auth, TLS, limiter and size limits
 * apply; 10 s timeout as KubeRay's proxied client).
 *
 * The parsers below take the bytes a dashboard sent (outside input): they are
 * bounded (DASH_MAX_BODY), never trust a field's type, and are fuzzed
 * (tests/fuzz/fuzz_dashboard.c). Functions return 0 or a negative errno.
 * docs/rayjob.md has the mapping of HTTP outcomes to errors.
 */
#ifndef RAYOP_DASHBOARD_H
#define RAYOP_DASHBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct kube_client;

#define DASH_MAX_BODY (8u << 20)     /* any bigger response is refused (-EMSGSIZE) */
#define DASH_ID_MAX 128              /* submission / job ids */
#define DASH_DIRECT_TIMEOUT_MS 2000  /* KubeRay RayHTTPClientDirectTimeoutSeconds */
#define DASH_PROXY_TIMEOUT_MS 10000  /* KubeRay RayHTTPClientProxyTimeoutSeconds */

enum dash_mode { DASH_DIRECT, DASH_PROXY };

/* Where a dashboard is. Plain data, no allocation: fill it with
 * dash_target_direct() or dash_target_proxy(); the kube client is borrowed. */
struct dash_target {
    enum dash_mode mode;
    char base[512];              /* "http://host:port" or "/api/v1/.../proxy" */
    struct kube_client *kube;    /* DASH_PROXY only */
    long timeout_ms;
    /* "x-ray-authorization: Bearer TOKEN" for a token-auth cluster (Ray >= 2.52), as
     * KubeRay's setAuthHeader; "" for none. A credential: wipe with dash_target_wipe. */
    char auth_header[600];
    /* A probe (the Serve proxy's /-/healthz): one attempt through the API server, its 5xx
     * the answer rather than retried with back-off (a direct probe is one attempt too). */
    bool probe;
};

/* addr is "host:port" or "http://host:port" (status.dashboardURL). -EINVAL if
 * empty, too long, or not http(s). */
int dash_target_direct(struct dash_target *t, const char *addr);
/* Service NAME's port PORT (a name such as "dashboard", or a number) in ns. */
int dash_target_proxy(struct dash_target *t, struct kube_client *kc, const char *ns,
                      const char *service, const char *port);

/* Sends token (a Ray auth token, as read from the cluster's Secret) on every call of
 * t. -EINVAL when it is empty, too long or holds a byte outside printable ASCII
 * (header injection). */
int dash_target_set_token(struct dash_target *t, const char *token, size_t len);
/* Sends the auth_token of secret (a v1 Secret, as read from the cache or the API): the
 * cluster's token Secret. The Secret's copy of the token is wiped in place afterwards.
 * -ENOENT without such a key, -EINVAL for a token that cannot go in a header. */
int dash_target_token_from_secret(struct dash_target *t, cJSON *secret);
/* Clears the token from t's memory. */
void dash_target_wipe(struct dash_target *t);
/* One HTTP exchange. 0 when a response came (code set, body owned by the
 * reply, NUL-terminated, possibly empty), or a negative errno for transport
 * failures (-ECONNREFUSED, -ETIMEDOUT, -EMSGSIZE over DASH_MAX_BODY, ...). */
struct dash_reply {
    int code;
    char *body;
    size_t len;
};
int dash_call(const struct dash_target *t, const char *method, const char *path,
              const char *body, size_t body_len, struct dash_reply *r);
void dash_reply_free(struct dash_reply *r);

/* ---- Jobs API --------------------------------------------------------------- */

/* GET /api/jobs/ID, the fields KubeRay reads (utils/types RayJobInfo). Strings
 * are truncated copies; absent fields are "" / 0. */
struct dash_job_info {
    char status[16];             /* PENDING RUNNING STOPPED SUCCEEDED FAILED, or "" */
    char message[1024];
    char job_id[DASH_ID_MAX];
    char submission_id[DASH_ID_MAX];
    char error_type[64];
    char entrypoint[256];
    uint64_t start_time_ms;      /* Unix ms, 0 if absent */
    uint64_t end_time_ms;
};

/* true for STOPPED, SUCCEEDED, FAILED (rayv1.IsJobTerminal). */
bool dash_job_status_terminal(const char *status);
/* 0 if id may go into a URL path: 1..DASH_ID_MAX-1 of [A-Za-z0-9._-]. */
int dash_id_valid(const char *id);

/* -ENOENT: the dashboard does not know the job (HTTP 404; KubeRay's BadRequest).
 * -EIO other HTTP errors, -EPROTO a body we cannot read. */
int dash_job_get(const struct dash_target *t, const char *id, struct dash_job_info *out);
/* POST /api/jobs/ with body (dash_submit_body). job_id (cap >= DASH_ID_MAX)
 * receives the id the dashboard answered. -EEXIST when the submission id is
 * already used (the dashboard says "Please use a different submission_id"). */
int dash_job_submit(const struct dash_target *t, const char *body, size_t len, char *job_id,
                    size_t cap);
/* POST /api/jobs/ID/stop. 0 when stopped or already terminal, -EBUSY when the
 * dashboard did not stop it and it is still running, -ENOENT unknown job. */
int dash_job_stop(const struct dash_target *t, const char *id);
/* DELETE /api/jobs/ID. 0 on 2xx, -ENOENT on 404, -EIO otherwise. */
int dash_job_delete(const struct dash_target *t, const char *id);
/* GET /api/jobs/ID/logs. *logs is owned by the caller (free). -ENOENT on 404. */
int dash_job_logs(const struct dash_target *t, const char *id, char **logs);

/* The same answers read from a reply of dash_call() or dash_async_call() (the reply
 * stays the caller's), for callers that do not wait for the dashboard. dash_job_path
 * writes /api/jobs/ID[suffix] (-EINVAL for a bad id or a small out). */
int dash_job_path(char *out, size_t cap, const char *id, const char *suffix);
int dash_job_info_reply(const struct dash_reply *r, struct dash_job_info *out);
int dash_job_submit_reply(const struct dash_reply *r, char *job_id, size_t cap);
int dash_job_stop_reply(const struct dash_reply *r, bool *stopped);

/* ---- calls off the worker thread (async.c) ------------------------------------ */

/* dash_call() on its own thread, at most one in flight per key (the caller's object,
 * cluster and operation); waits up to wait_ms for the answer, not at all when t's
 * dashboard last took longer than that. 0 / -errno as dash_call (out filled, caller
 * frees), or -EINPROGRESS: ask again later with the same key and request to take the
 * answer (a different request under the key waits until the earlier one ended, then
 * starts afresh). -EBUSY when DASH_ASYNC_MAX calls are out, -EINVAL for bad arguments.
 * t is copied (with its token, wiped when the call is freed); its kube client must
 * outlive the call. Thread-safe. */
#define DASH_ASYNC_MAX 256
int dash_async_call(const char *key, const struct dash_target *t, const char *method,
                    const char *path, const char *body, size_t len, int wait_ms,
                    struct dash_reply *out);
/* calls not answered yet (for metrics and tests) */
size_t dash_async_in_flight(void);
/* true while key has a call of method out, or answered and not taken yet: a caller that
 * reads the effect of its own write (a Serve PUT that already runs) before the write's
 * answer asks this so that it takes the answer instead of mistaking the effect for
 * somebody else's. Thread-safe. */
bool dash_async_pending(const char *key, const char *method);
/* For a process that is about to free the kube clients its calls borrow: refuses every
 * later call (-ESHUTDOWN) and waits up to timeout_ms for the calls out to end. 0 when
 * none is left (no call touches a target's kube client again; the answers nobody took
 * are freed), -ETIMEDOUT when some still run (their kube client must not be freed). */
int dash_async_stop(uint64_t timeout_ms);

/* ---- request and response bodies (pure, exposed for tests and fuzzing) -------- */

/* What POST /api/jobs/ takes (KubeRay's RayJobRequest). Pointers are borrowed;
 * NULL / 0 fields are left out. */
struct dash_submit {
    const char *entrypoint;
    const char *submission_id;
    const cJSON *runtime_env;    /* object */
    const cJSON *metadata;       /* object of strings */
    const cJSON *resources;      /* object of numbers (entrypoint_resources) */
    double num_cpus, num_gpus;
};
/* A new JSON text (caller frees). NULL on out of memory or no entrypoint. */
char *dash_submit_body(const struct dash_submit *s);

int dash_parse_job_info(const char *body, size_t len, struct dash_job_info *out);
int dash_parse_submit(const char *body, size_t len, char *job_id, size_t cap);
int dash_parse_stop(const char *body, size_t len, bool *stopped);
int dash_parse_logs(const char *body, size_t len, char **logs);

#endif

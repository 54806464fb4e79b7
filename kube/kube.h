/*
 * kube.h - rayop's Kubernetes API client: configuration (kubeconfig files and
 * in-cluster service accounts), blocking JSON calls over libcurl with
 * keep-alive, a QPS/burst limiter, retries and typed errors, and streaming
 * watches on a curl multi handle driven by a libuv loop.
 *
 * The watcher and every reconciler code against this header. Conventions:
 *  - every function returns 0 or a negative errno; API errors map as
 *    -ENOENT NotFound, -EEXIST AlreadyExists, -ESTALE Conflict, -EINVAL
 *    Invalid/BadRequest, -EACCES Forbidden/Unauthorized, -EAGAIN
 *    TooManyRequests, -ETIMEDOUT timeouts (504, curl), -ECONNREFUSED no server,
 *    -EGONE (= -ENODATA here, see KUBE_EGONE) 410 Gone/Expired, -EPROTO a
 *    response we cannot understand, -EMSGSIZE a response over the size limit,
 *    -EIO other 5xx. kube_strerror() names them.
 *  - cJSON trees returned in a struct kube_result are owned by the caller and
 *    released with kube_result_release().
 *  - blocking calls (kube_get ... kube_raw) are safe from any number of
 *    threads sharing one client; watches belong to the thread running their
 *    uv loop.
 * docs/kube-client.md has the retry, limiter, threading and token policy.
 */
#ifndef RAYOP_KUBE_H
#define RAYOP_KUBE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#define KUBE_VERSION "0.1.0"
/* 410 Gone / Expired resourceVersion: the caller must relist. */
#define KUBE_EGONE ENODATA

/* ---- configuration -------------------------------------------------------- */

/*
 * A resolved connection: one cluster + one user + a default namespace.
 * Fields are read-only after loading; strings are NUL-terminated and owned by
 * the config. PEM blobs come either from -data fields (decoded) or are NULL
 * with the matching *_file set (relative paths already resolved against the
 * kubeconfig's directory).
 */
struct kube_config {
    char *server;              /* "https://host:port[/prefix]", no trailing '/' */
    char *namespace;           /* context namespace, "default" when unset */
    char *context;             /* context name used; NULL for in-cluster */
    char *tls_server_name;     /* verify the certificate against this name */
    int insecure_skip_tls_verify;
    char *ca_file;
    char *ca_pem;    size_t ca_pem_len;
    char *cert_file;
    char *cert_pem;  size_t cert_pem_len;
    char *key_file;
    char *key_pem;   size_t key_pem_len;
    char *token;               /* static bearer token (never log it) */
    char *token_file;          /* bearer token re-read when the file changes */
    struct kube_token_state *token_state; /* private: cached file token */
    int disable_compression;   /* cluster disable-compression: no gzip */
};

/* Bounds of the kubeconfig parser (any bigger input is rejected with -E2BIG). */
#define KUBE_CONFIG_MAX_BYTES   (4u << 20)
#define KUBE_CONFIG_MAX_DEPTH   16
#define KUBE_CONFIG_MAX_ENTRIES 1024   /* clusters + users + contexts */

struct kube_config_opts {
    const char *kubeconfig;    /* explicit file (like --kubeconfig); NULL: search */
    const char *context;       /* --context override; NULL: current-context */
    const char *incluster_dir; /* NULL: /var/run/secrets/kubernetes.io/serviceaccount */
    int no_incluster;          /* skip the in-cluster step of the search */
};

/*
 * Loads a configuration the way controller-runtime does: opts->kubeconfig,
 * else $KUBECONFIG (':'-separated, merged first-wins per name as client-go
 * does), else in-cluster, else $HOME/.kube/config. On error, err (if not NULL)
 * gets a one-line reason. *out is owned by the caller (kube_config_free).
 */
int kube_config_load(const struct kube_config_opts *opts, struct kube_config **out,
                     char *err, size_t errlen);
/* Loads and merges a ':'-separated list of kubeconfig files (missing files are
 * skipped as client-go does; all missing is -ENOENT). */
int kube_config_load_files(const char *paths, const char *context,
                           struct kube_config **out, char *err, size_t errlen);
/* Parses one kubeconfig document from memory. base_dir resolves relative
 * file paths (NULL: current directory). */
int kube_config_parse(const char *data, size_t len, const char *context, const char *base_dir,
                      struct kube_config **out, char *err, size_t errlen);
/* In-cluster: needs KUBERNETES_SERVICE_HOST/PORT; dir holds token, ca.crt and
 * namespace (NULL: the standard service-account directory). -ENOENT when not
 * in a cluster. */
int kube_config_in_cluster(const char *dir, struct kube_config **out, char *err, size_t errlen);
void kube_config_free(struct kube_config *cfg);

/*
 * The bearer token to send, or *out = NULL when the config has none. A
 * token_file is re-read when its mtime, size or inode changed, checked at most
 * once a second, or at once when force is set (after a 401). Thread-safe.
 * *out is a copy the caller frees. 0 or negative errno (file unreadable, or
 * -EINVAL when the file is empty).
 */
int kube_config_token(struct kube_config *cfg, int force, char **out);

/* ---- client --------------------------------------------------------------- */

/* Time source; tests substitute a fake one. NULL members use the real clock. */
struct kube_clock {
    uint64_t (*now_ns)(void *arg);          /* monotonic */
    void (*sleep_ns)(void *arg, uint64_t ns);
    void *arg;
};

struct kube_client_opts {
    double qps;                /* per resource, as client-go's per-RESTClient limiter;
                                * 0: 100 (KubeRay default); < 0: no limiter */
    int burst;                 /* per resource; 0: 200 */
    int max_retries;           /* 0: 5 attempts after the first; < 0: none */
    uint32_t backoff_base_ms;  /* 0: 200 ms, doubled per attempt, full jitter */
    uint32_t backoff_max_ms;   /* 0: 10 s; Retry-After is honoured up to 60 s */
    size_t max_response_bytes; /* 0: 64 MiB */
    long timeout_ms;           /* whole request, 0: 30 s (watches are unbounded) */
    long connect_timeout_ms;   /* 0: 10 s */
    const char *user_agent;    /* NULL: "rayop/VERSION (linux; libcurl)" */
    struct kube_clock clock;
};

struct kube_client;

/* cfg is borrowed and must outlive the client. *out owned by the caller.
 * Make one client per process and share it between threads: the QPS limiters
 * (one bucket per resource, see limiter.c), the TLS session cache and the idle keep-alive connections live in it. */
int kube_client_new(struct kube_config *cfg, const struct kube_client_opts *opts,
                    struct kube_client **out);
void kube_client_free(struct kube_client *c);

/* Counters for metrics and tests (monotonic, approximate under concurrency). */
struct kube_client_stats {
    uint64_t requests;         /* HTTP attempts made */
    uint64_t retries;
    uint64_t throttled_ns;     /* time spent waiting for the limiter */
    uint64_t connects;         /* new TCP connections opened */
};
void kube_client_get_stats(struct kube_client *c, struct kube_client_stats *out);
/* client-go's rest_client_* metrics of c (Prometheus text, with HELP/TYPE) appended to
 * out: requests by code/method/host, request and rate-limiter latency histograms by
 * verb/host, retries by code/verb/host. 0 or -ENOMEM. */
struct buf;
int kube_client_metrics_text(struct kube_client *c, struct buf *out);

/* A REST resource. group "" is the core API (/api/v1). */
struct kube_resource {
    const char *group;
    const char *version;
    const char *plural;
    int namespaced;
};
extern const struct kube_resource KUBE_RES_PODS, KUBE_RES_SERVICES, KUBE_RES_EVENTS,
    KUBE_RES_NAMESPACES, KUBE_RES_JOBS, KUBE_RES_LEASES, KUBE_RES_RAYCLUSTERS,
    KUBE_RES_RAYJOBS, KUBE_RES_RAYSERVICES, KUBE_RES_SECRETS;

/* metav1.Status, as parsed from an error body (or synthesised from the HTTP
 * code when the body is not a Status). Strings are truncated copies. */
#define KUBE_STATUS_MAX_CAUSES 8
struct kube_status_cause {
    char reason[64];
    char field[128];
    char message[256];
};
struct kube_status {
    int code;                  /* HTTP code, 0 for transport errors */
    char status[16];           /* "Failure" / "Success" */
    char reason[64];           /* NotFound, AlreadyExists, Conflict, Invalid, Expired, ... */
    char message[512];
    int retry_after_s;         /* details.retryAfterSeconds or Retry-After, 0 if none */
    int ncauses;
    struct kube_status_cause causes[KUBE_STATUS_MAX_CAUSES];
};

/* Parses a Status JSON body; -EPROTO when it is not one. */
int kube_status_parse(const char *body, size_t len, struct kube_status *st);
int kube_status_from_json(const cJSON *obj, struct kube_status *st);
/* Maps HTTP code + reason to the negative errno above. */
int kube_status_errno(const struct kube_status *st);
const char *kube_strerror(int err);

/* The outcome of one call. Zero-initialise; release with kube_result_release. */
struct kube_result {
    int http_code;             /* last HTTP status, 0 when no response */
    cJSON *body;               /* parsed JSON body (object or list), caller owns */
    char *raw;                 /* kube_raw only: body bytes, NUL-terminated */
    size_t raw_len;
    char resource_version[64]; /* metadata.resourceVersion of the body ("" if none) */
    int attempts;              /* HTTP attempts made */
    struct kube_status status; /* filled when the call failed */
};
void kube_result_release(struct kube_result *r);
/* The error of a failed call as the server put it: its Status message plus any
 * field cause the message leaves out, written to buf (n bytes); without a
 * server message, kube_strerror(err). Returns buf (or a static string when buf
 * is NULL). Use this, not kube_strerror, wherever a result is at hand, so
 * status, Events and logs keep "spec...image: Required value". */
const char *kube_result_error(const struct kube_result *r, int err, char *buf, size_t n);

/* The decoded bytes of a Secret's data[key] (base64), or stringData[key] when
 * present. *out is NUL-terminated and owned by the caller: a credential, wipe
 * it (explicit_bzero) before free. -ENOENT without the key, -EINVAL bad base64. */
int kube_secret_value(const cJSON *secret, const char *key, char **out, size_t *len);

struct kube_list_opts {
    const char *label_selector;
    const char *field_selector;
    long limit;                /* 0: no limit */
    const char *continue_token;
    const char *resource_version;
    const char *resource_version_match;  /* "Exact", "NotOlderThan" */
    int timeout_seconds;       /* server-side timeout, 0: none */
};

enum kube_patch_type {
    KUBE_PATCH_MERGE,          /* application/merge-patch+json */
    KUBE_PATCH_JSON,           /* application/json-patch+json */
    KUBE_PATCH_STRATEGIC,      /* application/strategic-merge-patch+json */
    KUBE_PATCH_APPLY,          /* application/apply-patch+yaml (server-side apply) */
};
struct kube_patch_opts {
    enum kube_patch_type type;
    const char *field_manager; /* required for APPLY */
    int force;                 /* APPLY: take ownership of conflicting fields */
    const char *subresource;   /* e.g. "status"; NULL: main resource */
};

struct kube_delete_opts {
    const char *propagation;   /* "Background", "Foreground", "Orphan" or NULL */
    long grace_seconds;        /* < 0: server default */
    const char *precondition_uid;
    const char *precondition_rv;
};

/*
 * Blocking calls. ns is ignored for cluster-scoped resources and may be NULL
 * for "all namespaces" in list/delete_collection. res must be zeroed (or
 * released) before the call; on return res->body holds the response (the
 * object, the list, or the Status) and res->resource_version the object's new
 * resourceVersion, which writers report for read-your-writes. 0 on 2xx,
 * otherwise the mapped negative errno with res->status filled.
 */
int kube_get(struct kube_client *c, const struct kube_resource *r, const char *ns,
             const char *name, struct kube_result *res);
int kube_list(struct kube_client *c, const struct kube_resource *r, const char *ns,
              const struct kube_list_opts *o, struct kube_result *res);
int kube_create(struct kube_client *c, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res);
/* A write token of r's bucket taken ahead of the call it pays for. A create that
 * is only right while a read made just before it holds waits for its token
 * first, then reads, then creates: the rate limiter's wait falls before the
 * read, not between the read and the create (at --qps a Pod create can wait
 * seconds for its token). Zero-initialise; kube_ticket_take fills it. */
struct kube_ticket {
    const struct kube_resource *res;
    double waited_s;           /* how long the take waited, for the client's metrics */
    int taken;                 /* 1 until a call spends it */
};
/* Takes one token of r's write bucket for t, sleeping until it is due. */
void kube_ticket_take(struct kube_client *c, const struct kube_resource *r, struct kube_ticket *t);
/* kube_create in a single attempt: no retry after a 429 or a refused connection.
 * For a create that is only right as long as a read made just before it still
 * holds (a RayCluster's Pods follow a GET of the cluster): a retry after a wait
 * would act on that read when it may be stale, so the caller reads again and
 * tries again itself. t (NULL, or taken for r before the read) pays for the
 * request, which then does not wait on the bucket; it is spent either way. */
int kube_create_once(struct kube_client *c, const struct kube_resource *r, const char *ns,
                     const cJSON *obj, struct kube_ticket *t, struct kube_result *res);
/* PUT to metadata.name of obj; retried only when obj carries a resourceVersion. */
int kube_update(struct kube_client *c, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res);
int kube_update_status(struct kube_client *c, const struct kube_resource *r, const char *ns,
                       const cJSON *obj, struct kube_result *res);
int kube_patch(struct kube_client *c, const struct kube_resource *r, const char *ns,
               const char *name, const char *patch, size_t patch_len,
               const struct kube_patch_opts *o, struct kube_result *res);
int kube_delete(struct kube_client *c, const struct kube_resource *r, const char *ns,
                const char *name, const struct kube_delete_opts *o, struct kube_result *res);
int kube_delete_collection(struct kube_client *c, const struct kube_resource *r,
                           const char *ns, const struct kube_list_opts *sel,
                           const struct kube_delete_opts *o, struct kube_result *res);

/* An arbitrary request, e.g. GET /api/v1/namespaces/NS/services/NAME:8265/proxy/api/jobs/.
 * path starts with '/' and may carry a query. The body is returned raw
 * (res->raw), and parsed into res->body too when parse_json is set. An error
 * response's body is kept in res->raw as well (res->http_code says which). */
struct kube_request {
    const char *method;
    const char *path;
    const char *content_type;  /* NULL: application/json when body is set */
    const char *body;
    size_t body_len;
    int idempotent;            /* retry on 5xx/transport errors */
    int parse_json;
    size_t max_response_bytes; /* 0: the client's limit */
    long timeout_ms;           /* 0: the client's timeout (KubeRay uses 2 s direct, 10 s proxied) */
    const char *extra_header;  /* one more "Name: value" header line (e.g. a proxied
                                  dashboard's x-ray-authorization), or NULL */
};
int kube_raw(struct kube_client *c, const struct kube_request *req, struct kube_result *res);

/*
 * Pages through a LIST (limit o->limit, default 500, following continue
 * tokens), calling fn with each page's list object (borrowed; detach items to
 * keep them). rv, if set, receives the list's resourceVersion: where a watch
 * resumes. A nonzero return from fn stops and is returned. An expired continue
 * token gives -KUBE_EGONE: list again from scratch.
 */
typedef int (*kube_page_fn)(void *arg, cJSON *list);
int kube_list_each(struct kube_client *c, const struct kube_resource *r, const char *ns,
                   const struct kube_list_opts *o, kube_page_fn fn, void *arg, char *rv,
                   size_t rvlen);

/* Builds the collection or object path for r (name may be NULL), appending
 * "/sub" when sub is set. Caller frees. NULL on ENOMEM or bad arguments (a
 * segment containing '/', "." or "..", or a namespaced object without ns). */
char *kube_resource_path(const struct kube_resource *r, const char *ns, const char *name,
                         const char *sub);

/* ---- watch ---------------------------------------------------------------- */

enum kube_event_type {
    KUBE_EVENT_ADDED,
    KUBE_EVENT_MODIFIED,
    KUBE_EVENT_DELETED,
    KUBE_EVENT_BOOKMARK,
    KUBE_EVENT_ERROR,          /* status is set (e.g. 410 Expired) */
};

struct kube_event {
    enum kube_event_type type;
    cJSON *object;             /* owned by the watch; set to NULL in the callback to keep it */
    const char *resource_version; /* object's metadata.resourceVersion, "" if none */
    const char *raw;           /* the event line as received (not NUL-terminated) */
    size_t raw_len;
    const struct kube_status *status; /* ERROR only */
    int initial_events_end;    /* BOOKMARK annotated k8s.io/initial-events-end=true:
                                * a sendInitialEvents watch has delivered the state */
};

struct kube_watch;
struct kube_watcher;           /* a curl multi handle bound to a uv loop */

struct kube_watch_opts {
    const char *resource_version;
    const char *resource_version_match;
    const char *label_selector;
    const char *field_selector;
    int allow_bookmarks;
    int send_initial_events;
    int timeout_seconds;       /* server-side; 0: server default. Set it: a stream
                                * still open 30 s past it ends with -ETIMEDOUT */
    size_t max_line_bytes;     /* 0: 8 MiB; longer events end the watch with -EMSGSIZE */
    /*
     * Called for each event. The watch may be stopped from inside the
     * callback (kube_watch_stop), after which no further callbacks come.
     */
    void (*on_event)(struct kube_watch *w, struct kube_event *ev, void *arg);
    /* Optional: raw bytes of each line before parsing; return 1 to consume
     * the line (no parse, no on_event), 0 to continue. */
    int (*on_line)(struct kube_watch *w, const char *line, size_t len, void *arg);
    /*
     * Called once when the stream ends and the watch is finished: err 0 for a
     * clean close by the server (re-watch from kube_watch_last_rv), otherwise a
     * negative errno: the mapped HTTP error with st filled when the server
     * refused the watch; the ERROR event's Status errno with st = that Status
     * when the stream carried one (-KUBE_EGONE for 410 Expired: relist); or a
     * transport error (-ECONNRESET, -ECONNREFUSED, ...), -EMSGSIZE (line over
     * max_line_bytes) or -EPROTO (unparseable line) with st NULL or a message.
     * The watch is freed after on_end returns (do not stop it there); starting
     * a new watch from on_end is fine.
     */
    void (*on_end)(struct kube_watch *w, int err, const struct kube_status *st, void *arg);
    void *arg;
};

/* Binds a watch driver to loop. *out is owned by the caller. kube_watcher_free
 * stops every watch (without on_end) and closes its uv handles: run the loop
 * until it has no handles left before uv_loop_close. Never free it from a
 * watch callback. Each watch start takes a token from the client's QPS
 * limiter; when none is free the start is deferred on a timer (the loop never
 * blocks). */
int kube_watcher_new(struct kube_client *c, uv_loop_t *loop, struct kube_watcher **out);
void kube_watcher_free(struct kube_watcher *wd);

/* Starts a watch of r in ns (NULL: all namespaces). opts is copied. The watch
 * lives until on_end or kube_watch_stop; *out may be NULL. */
int kube_watch_start(struct kube_watcher *wd, const struct kube_resource *r, const char *ns,
                     const struct kube_watch_opts *opts, struct kube_watch **out);
/* Stops and frees the watch; on_end is not called. */
void kube_watch_stop(struct kube_watch *w);
const char *kube_event_type_name(enum kube_event_type t);

#endif

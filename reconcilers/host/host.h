/*
 * host.h - the reconciler host: what every `rayop controller KIND` process
 * links. It connects to the watcher's work-queue socket (ipc/), maps the
 * shared cache read-only (cache/), runs N worker threads that pull keys and
 * call the kind's reconcile function with a context, reports each outcome
 * with the resourceVersions the reconcile wrote (read-your-writes), and serves
 * /healthz, /readyz and Prometheus /metrics. docs/reconciler-host.md.
 *
 * Reconcile code sees only struct host_ctx and the host_* helpers below: it
 * reads through the cache view and writes through the write helpers, which
 * record what they wrote so the key is not handed out again before the cache
 * has caught up. Functions return 0 or a negative errno.
 */
#ifndef RAYOP_HOST_H
#define RAYOP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ipc/ipc.h"
#include "kube/kube.h"

struct buf;
struct cache;
struct host_view;

struct host_kind;

/* Entry point of `rayop controller KIND [flags]` (argv[0] = "controller",
 * argv[1] = kind), KIND one of kinds[0..nkinds): the registration table of the
 * binary (reconcilers/kinds.c for bin/rayop; the host library knows no kind).
 * Returns a process exit code. */
int host_main_controller(int argc, char **argv, const struct host_kind *kinds, size_t nkinds);

/* ---- the reconcile contract ------------------------------------------------ */

enum host_outcome {
    HOST_OK = 0,           /* done; forget the key's backoff */
    HOST_REQUEUE,          /* Result{Requeue: true}: retry with the key's backoff */
    HOST_REQUEUE_AFTER,    /* Result{RequeueAfter: after_ms} */
    HOST_ERROR,            /* returned error: retry with backoff (also any rc < 0) */
    HOST_TERMINAL,         /* reconcile.TerminalError: no retry until the next event */
};

struct host_result {
    enum host_outcome outcome;
    uint64_t after_ms;     /* HOST_REQUEUE_AFTER */
    char message[256];     /* HOST_ERROR/HOST_TERMINAL, optional */
};

/* Process-wide flags a reconcile may need (read-only, live as long as the process). */
struct host_settings {
    bool use_kubernetes_proxy;        /* --use-kubernetes-proxy: reach Ray dashboards
                                         through the API server's service proxy */
    const char *feature_gates;        /* --feature-gates "A=true,B=false", "" if none */
    int batch_scheduler;              /* enum batchsched_kind (reconcilers/batchsched),
                                         checked at start-up */
    const cJSON *operator_config;     /* the --config file (KubeRay Configuration) as JSON,
                                         NULL without one; read-only, process lifetime */
};

/* The context of one reconcile. Valid for the duration of the call only. */
struct host_ctx {
    const struct host_kind *kind;
    const char *key;                  /* "namespace/name" */
    char ns[64];
    char name[254];
    char reconcile_id[40];            /* UUID, in every log line of this reconcile */
    uint32_t requeues;                /* failures the queue counted for this key */
    uint64_t conn_gen;                /* the watcher connection the key came on (1, 2, ...
                                         after each reconnect); a new one is a restarted
                                         watcher, whose read-your-writes gate does not know
                                         this process's earlier writes */
    struct kube_client *kube;         /* shared, thread-safe; NULL until the client is
                                         ready (it is created in the background at
                                         start): reach it through host_kube() */
    struct host_kube_slot *kube_slot; /* where host_kube() waits for it; may be NULL */
    struct host_view *view;           /* the cache, read-only */
    /* written (type, rv) pairs: one per cache type, the highest rv kept */
    struct ipc_written written[IPC_WRITTEN_MAX];
    size_t n_written;
    bool written_overflow;            /* more types than IPC_WRITTEN_MAX (logged) */
    const struct host_settings *settings; /* NULL in tests that do not set it */
};

typedef int (*host_reconcile_fn)(struct host_ctx *ctx, struct host_result *res);
/* A kind's own Prometheus metrics, appended to the host's /metrics text
 * (format 0.0.4, with its # HELP/# TYPE lines). Called from the HTTP thread,
 * concurrently with reconciles: read the cache through view (host_view_list)
 * and keep any state of your own locked. 0 or -ENOMEM. */
typedef int (*host_metrics_fn)(struct host_view *view, struct buf *out);

struct host_kind {
    const char *name;                 /* `rayop controller NAME` */
    const char *queue;                /* watcher queue it pulls from */
    const char *const *cache_types;   /* NULL-terminated: synced before /readyz is ok */
    host_reconcile_fn reconcile;
    const char *about;                /* one line for --help */
    host_metrics_fn metrics;          /* optional: the kind's own /metrics lines */
    /* optional: asked of the API server once the client exists, before any reconcile can
     * write (KubeRay's start-up checks); < 0 stops the process, exit status 1 */
    int (*start)(struct kube_client *kc);
    /* optional: at exit, once the workers have returned and before the API client is
     * freed: work the kind left running off its workers that borrows the client (a
     * dashboard call on its own thread) must end within timeout_ms (0), or the kind says
     * it still runs (< 0) and the process exits without freeing the client */
    int (*stop)(uint64_t timeout_ms);
};

/* The kind called name in kinds[0..nkinds), or NULL. */
const struct host_kind *host_kind_find(const struct host_kind *kinds, size_t nkinds,
                                       const char *name);

/* ---- context: logging ----------------------------------------------------- */

/* log_write with "controller", "namespace", "name" and "reconcileID" added;
 * then up to 12 key/value string pairs, NULL-terminated. */
void host_log(const struct host_ctx *ctx, int level, const char *msg, ...);

/* Initialises ctx for key (splits "ns/name"; a key without '/' is a
 * cluster-scoped name). -EINVAL for a key that does not fit. */
int host_ctx_init(struct host_ctx *ctx, const struct host_kind *kind, const char *key,
                  struct kube_client *kube, struct host_view *view);

/* KubeRay feature gate name as set by --feature-gates ("Name=true"), else dflt
 * (KubeRay's default for that gate). */
bool host_feature_enabled(const struct host_ctx *ctx, const char *name, bool dflt);
/* KubeRay's featuregate.Set check of a --feature-gates value: every key a
 * known gate, every value a Go bool. 0, or -EINVAL with KubeRay's error text
 * ("unrecognized feature gate: X") in err. */
int host_feature_gates_check(const char *gates, char *err, size_t errlen);

/* ---- context: names and times ------------------------------------------------ */

/* Five characters of k8s.io/apimachinery rand.String's alphabet, NUL-terminated: the
 * suffix KubeRay puts on the names it generates (RayJob clusters, submission ids,
 * RayService clusters). */
void host_rand_suffix(char out[6]);
/* Wall-clock now in Unix ms, for status timestamps. */
int64_t host_wall_ms(void);

/* ---- context: read-your-writes recording ---------------------------------- */

/* Records that the reconcile wrote rv of cache type. Per type only the
 * highest rv is kept (numeric rvs compared as numbers; a non-numeric rv is
 * kept beside them). -EINVAL for an empty/oversized type or rv, -ENOSPC when
 * the table is full (written_overflow set). */
int host_ctx_record_write(struct host_ctx *ctx, const char *cache_type, const char *rv);

/* Cache type name of a REST resource: "group/version/plural", "" group ->
 * "version/plural". out >= IPC_TYPE_MAX. */
int host_cache_type(const struct kube_resource *r, char *out, size_t cap);

/* The API client, waiting (bounded by its creation) for the background start-up
 * to finish; NULL if it could not be created. The write helpers use it. */
struct host_kube_slot;
struct kube_client *host_kube(struct host_ctx *ctx);

/* ---- context: writes (kube/ calls that record the rv they produce) --------- */

int host_create(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res);
/* host_create without the client's retries (kube_create_once): the caller re-reads
 * what the create depends on and tries again itself. t: a token taken with
 * host_ticket_take before that read, or NULL. */
int host_create_once(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                     const cJSON *obj, struct kube_ticket *t, struct kube_result *res);
/* kube_ticket_take on the context's client: -ENOTCONN without one. */
int host_ticket_take(struct host_ctx *ctx, const struct kube_resource *r, struct kube_ticket *t);
int host_update(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res);
int host_update_status(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                       const cJSON *obj, struct kube_result *res);
/* Adds (add) or removes finalizer on the object being reconciled (ctx->ns/ctx->name),
 * obj as read, with kobj_finalizers_patch's rv-guarded merge patch. res: the answer
 * (the caller releases it). */
int host_patch_finalizer(struct host_ctx *ctx, const struct kube_resource *r, const cJSON *obj,
                         const char *finalizer, bool add, struct kube_result *res);
int host_patch(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
               const char *name, const char *patch, size_t len,
               const struct kube_patch_opts *o, struct kube_result *res);
int host_delete(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                const char *name, const struct kube_delete_opts *o, struct kube_result *res);

/* ---- context: cache view (decoded to cJSON, caller owns the result) -------- */

/* A read-only view of the shared cache that follows the segment when the
 * watcher grows or replaces it. Thread-safe. */
int host_view_open(const char *segname, struct host_view **out);
void host_view_close(struct host_view *v);
/* 1 if every type in types (NULL-terminated) is registered and synced, else 0. */
int host_view_synced(struct host_view *v, const char *const *types);

/* The object, -ENOENT if absent. *out owned by the caller (cJSON_Delete). */
int host_get(struct host_ctx *ctx, const char *cache_type, const char *ns, const char *name,
             cJSON **out);
/* A new cJSON array of the objects of cache_type whose controller owner has
 * uid (list_owner) or whose ray.io/cluster label in ns is cluster. Caller owns. */
int host_list_owner(struct host_ctx *ctx, const char *cache_type, const char *uid,
                    cJSON **out);
int host_list_cluster(struct host_ctx *ctx, const char *cache_type, const char *ns,
                      const char *cluster, cJSON **out);
/* A new cJSON array of every cached object of cache_type (in ns, or all
 * namespaces when ns is NULL). Caller owns. For metrics and benchmarks: a
 * reconcile reads its own objects with host_get / host_list_*. */
int host_view_list(struct host_view *v, const char *cache_type, const char *ns, cJSON **out);
/* 1 when the cache has applied every event of cache_type up to resourceVersion
 * rv (the type's rv, the lowest over its watch streams, is >= rv), 0 when not
 * yet, negative errno. The watcher's read-your-writes test, for a reconciler. */
int host_cache_seen(struct host_ctx *ctx, const char *cache_type, const char *rv);
/* resourceVersion of the stored object ("" if absent) without decoding it. */
int host_get_rv(struct host_ctx *ctx, const char *cache_type, const char *ns,
                const char *name, char rv[IPC_RV_MAX]);

/* ---- context: Kubernetes Events (event.c) ---------------------------------- */

#define HOST_EVENT_NORMAL "Normal"
#define HOST_EVENT_WARNING "Warning"
/* events.k8s.io/v1 Events, the API KubeRay's recorder writes. */
extern const struct kube_resource HOST_RES_EVENTS_V1;

/* Records an events.k8s.io/v1 Event about obj (a cached object: its apiVersion,
 * kind, namespace, name, uid and resourceVersion are referenced) as KubeRay's
 * recorder does: reportingController "<kind>-controller", type
 * HOST_EVENT_NORMAL/WARNING, reason (e.g. "CreatedWorkerPod"), action
 * ("Create", "Delete", "Validate" ...) and a printf note (max 1024 bytes).
 * Repeats of the same (object, type, reason, action, note) within 6 minutes
 * update the first Event's series count instead of creating another. Not
 * recorded for read-your-writes (Events are not cached). A failure is logged and
 * returned; callers normally ignore it, as client-go drops Events it cannot write. */
int host_event(struct host_ctx *ctx, const cJSON *obj, const char *type, const char *reason,
               const char *action, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The Event writer thread (event.c): once started, host_event queues its write
 * (at most 1000; more are dropped and counted) and returns. host_events_stop
 * writes what is queued for up to timeout_ms, then drops the rest. */
int host_events_start(void);
void host_events_stop(uint64_t timeout_ms);

#endif

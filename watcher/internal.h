/*
 * internal.h - state shared by the watcher's files: main.c (flags, process
 * lifecycle), sync.c (list/watch per stream, applying events to the cache and
 * the queues) and types.c (the tables). Not for other modules.
 */
#ifndef RAYOP_WATCHER_INTERNAL_H
#define RAYOP_WATCHER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <uv.h>

#include "cache/cache.h"
#include "ipc/ipc.h"
#include "kube/kube.h"
#include "watcher/watcher.h"

#define WATCHER_MAX_NAMESPACES 1024
#define WATCHER_LIST_PAGES     2     /* pages a list thread may run ahead of the loop */
#define WATCHER_TYPES_MAX      32    /* rows of watcher_types (checked at start) */

struct seen_key;

/* One list+watch of one type in one namespace (NULL = all namespaces). */
struct wstream {
    struct watcher *w;
    int t;                       /* index into watcher_types */
    int cid;                     /* cache type id */
    const char *ns;
    struct kube_resource res;
    char rv[CACHE_RV_MAX];       /* where the next watch resumes */
    int synced;
    int absent;                  /* the last LIST said 404: the API server does not serve the
                                    type (a batch scheduler's CRDs not installed) */
    int need_list;               /* next (re)start must LIST first */
    struct kube_watch *watch;
    uint64_t watch_start_ns;
    uv_timer_t retry;
    uint32_t backoff_ms;

    /* list in progress (a threadpool job hands pages to the loop thread) */
    int listing;
    uv_work_t work;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cJSON *pages[WATCHER_LIST_PAGES]; /* "items" arrays, owned */
    int npages;
    int list_rc;
    char list_rv[CACHE_RV_MAX];
    int track_seen;              /* the cache already had objects: sweep after the list */
    struct seen_key *seen;

    uint64_t lists, watches, events;
    int last_err;                /* last list/watch failure reported (0 since a success) */
};

struct watcher {
    /* An optional type is not served (its LIST or WATCH said 404): set to optional.c's
     * watcher__optional_absent by main.c, so the sync engine calls no policy file and
     * optional.c calls into sync.c one way. NULL: retried like any failure. */
    void (*on_absent)(struct wstream *s);
    uv_loop_t *loop;
    struct kube_client *kc;
    struct kube_watcher *kw;
    struct cache *cache;
    struct ipc_server *ipc;
    struct wstream *streams;
    size_t nstreams;
    uv_async_t pages_async;
    uv_check_t check;
    uv_signal_t sig_term, sig_int;
    uv_tcp_t http;               /* --metrics-addr listener */
    int http_open;
    int progress_dirty;
    volatile int stopping;
    int async_closed;
    int handles_ready;           /* pages_async and check initialised */
    uint64_t start_ns;
    int synced_logged;
    char metrics_dir[600];       /* STATE_DIR/metrics: the controllers' snapshots */
    const char *server;          /* the API server URL, for the messages that need it */
    int unreachable;             /* "cannot reach the API server" logged, not yet recovered */
    /* optional.c: per type, the watch for its CRD while the type is absent, and whether
     * the server refused such a watch (then: slow relists) */
    struct kube_watch *crd_watch[WATCHER_TYPES_MAX];
    int crd_refused[WATCHER_TYPES_MAX];
};

/* Sync engine (sync.c). */
int watcher__sync_init(struct watcher *w, const char *const *namespaces, size_t nns);
void watcher__sync_start(struct watcher *w);
void watcher__sync_stop(struct watcher *w);
void watcher__sync_free(struct watcher *w);
/* Adds every cached primary object's key to its queue (restart resync). */
int watcher__sync_resync(struct watcher *w);
/* The one /metrics (pool.c): own (the watcher's exposition text) merged with every
 * controller snapshot in dir (KIND-ID.prom, stale ones dropped) into out. 0 or -ENOMEM. */
int watcher__metrics_pool(const char *dir, const char *own, size_t own_len, struct buf *out);
/* HTTP endpoint (http.c): addr like ":8080", "127.0.0.1:0"; "0" or "" = off. */
int watcher__http_start(struct watcher *w, const char *addr);
void watcher__http_stop(struct watcher *w);

/* Lists s again (sync.c's start_list), for optional.c. */
void watcher__sync_relist(struct wstream *s);
/* Optional types (optional.c): s's type is not served (404). Marks it absent and waits
 * for its CRD (or relists on a slow back-off) instead of the normal retry (the
 * on_absent hook). optional_stop ends the CRD watches, after watcher__sync_stop. */
void watcher__optional_absent(struct wstream *s);
void watcher__optional_stop(struct watcher *w);

/* ipc read-your-writes oracle: the cache's rv of type >= rv. */
int watcher__sync_seen(void *ud, const char *type, const char *rv);

/* ---- test hooks: for the module's unit tests and fuzz targets, not for callers ---- */

/* Index of the type with cache name ct in watcher_types, or -1. */
int watcher_type_index(const char *cache_type);

#endif

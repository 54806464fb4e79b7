/*
 * ipc.h - per-kind work queues and the Unix-socket protocol that hands their
 * keys to reconciler processes.
 *
 * Three layers, one header:
 *   ipc_queue   a single-threaded data structure with client-go's rate-limited
 *               delaying workqueue semantics plus a read-your-writes gate; it
 *               takes an injectable clock so every rule is testable.
 *   ipc_server  lives inside the watcher on the watcher's libuv loop: one queue
 *               per kind, a listening Unix socket (mode 0600), worker
 *               connections registered for a kind with a capacity, fair
 *               round-robin hand-out, requeue of a dropped worker's keys.
 *   ipc_client  the worker side: a blocking, thread-safe API for the N worker
 *               threads of one reconciler process, multiplexed over a single
 *               connection that reconnects by itself after a watcher restart
 *               and re-leases (ADOPTs) the keys its threads still hold.
 * Metrics (Prometheus text, client-go workqueue_* names): ipc_metrics_text.
 *
 * Wire format and rules: docs/ipc.md. Return values: 0 (or a count where
 * stated) or a negative errno:
 *   -EINVAL    bad argument (key empty, too long or with bytes outside 0x21..0x7e)
 *   -ENOENT    no such kind / key not held under that lease id
 *   -ESTALE    lease id from an older connection (the watcher restarted)
 *   -EBUSY     adopt: the key is already held by someone
 *   -ETIMEDOUT nothing arrived before the deadline
 *   -ESHUTDOWN the queue or client was shut down
 *   -ENOMEM    allocation failed
 */
#ifndef RAYOP_IPC_H
#define RAYOP_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IPC_PROTO_VERSION 1
#define IPC_FRAME_MAX     65536u /* body bytes after the 4-byte length */
#define IPC_KEY_MAX       512    /* key incl. NUL: "namespace/name" */
#define IPC_KIND_MAX      64     /* kind incl. NUL, e.g. "raycluster" */
#define IPC_WORKER_MAX    64     /* worker id incl. NUL */
#define IPC_TYPE_MAX      64     /* cache type name incl. NUL (CACHE_TYPE_MAX) */
#define IPC_RV_MAX        64     /* resourceVersion incl. NUL (CACHE_RV_MAX) */
#define IPC_MSG_MAX       1024   /* error message incl. NUL */
#define IPC_WRITTEN_MAX   64     /* written (type, rv) pairs per DONE */
#define IPC_CAPACITY_MAX  4096   /* keys one connection may hold at once */
#define IPC_KINDS_MAX     32     /* queues per server */
#define IPC_STATUS_WORKERS_MAX 256 /* workers listed per kind in STATUS */

/* ---- outcomes ------------------------------------------------------------ */

enum ipc_outcome_kind {
    IPC_OUTCOME_OK = 0,            /* success: Forget (reset backoff) */
    IPC_OUTCOME_REQUEUE_AFTER = 1, /* success + Forget + AddAfter(after_ns) */
    IPC_OUTCOME_ERROR = 2,         /* AddRateLimited: per-item backoff max-of bucket */
    IPC_OUTCOME_TERMINAL = 3,      /* no retry until the next Add (an event) */
    IPC_OUTCOME_RELEASE = 4,       /* handed back unprocessed: re-added now, backoff untouched */
    IPC_OUTCOME_MAX_ = 5
};

/* A (cache type, resourceVersion) the worker wrote, e.g. ("ray.io/v1/rayclusters", "1234"). */
struct ipc_written {
    char type[IPC_TYPE_MAX];
    char rv[IPC_RV_MAX];
};

struct ipc_outcome {
    enum ipc_outcome_kind kind;
    uint64_t after_ns;                /* REQUEUE_AFTER only */
    const char *message;              /* ERROR/TERMINAL, may be NULL; borrowed */
    size_t n_written;                 /* <= IPC_WRITTEN_MAX */
    const struct ipc_written *written; /* borrowed; copied by the callee */
};

/* ---- the queue (single-threaded, injectable clock) ------------------------- */

/* Monotonic nanoseconds. */
typedef uint64_t (*ipc_now_fn)(void *ud);

/*
 * Read-your-writes oracle, supplied by the watcher: 1 if the cache has seen
 * resourceVersion rv of type (cache rv of that type >= rv), 0 if not yet.
 */
typedef int (*ipc_seen_fn)(void *ud, const char *type, const char *rv);

struct ipc_queue_config {
    uint64_t base_delay_ns;  /* per-item backoff start; default 5 ms */
    uint64_t max_delay_ns;   /* per-item backoff cap; default 1000 s */
    double bucket_qps;       /* overall token bucket rate; default 10; <= 0 disables */
    uint32_t bucket_burst;   /* default 100 */
    uint64_t ryw_timeout_ns; /* bounded read-your-writes wait; default 5 s */
};

void ipc_queue_config_default(struct ipc_queue_config *cfg);

struct ipc_queue;

/* What ipc_queue_get hands out. key points into the queue and stays valid until
 * the matching ipc_queue_done (or ipc_queue_free). */
struct ipc_lease {
    const char *key;
    uint64_t id;          /* lease id, unique per queue; Done must present it */
    uint32_t requeues;    /* NumRequeues: failures counted by the backoff so far */
    uint64_t added_ns;    /* clock time the key became due (queue duration start) */
    uint64_t got_ns;      /* clock time it was handed out */
};

/* Latency histograms, Prometheus-style (controller-runtime's workqueue buckets:
 * 10^-8 s .. 10^3 s, x10 each). counts[i] counts observations <= bounds[i];
 * counts[IPC_HIST_BUCKETS] is +Inf. Not cumulative; expose cumulatively. */
#define IPC_HIST_BUCKETS 12
struct ipc_hist {
    uint64_t counts[IPC_HIST_BUCKETS + 1];
    uint64_t count;
    uint64_t sum_ns;
};
extern const uint64_t ipc_hist_bounds_ns[IPC_HIST_BUCKETS];
/* Counts one observation of ns nanoseconds (the queue's, and the controller's own
 * histograms of the same buckets). */
void ipc_hist_observe(struct ipc_hist *h, uint64_t ns);

struct ipc_queue_stats {
    uint64_t depth;           /* ready to hand out now (workqueue_depth) */
    uint64_t in_flight;       /* handed out, not Done */
    uint64_t waiting;         /* in the delay heap */
    uint64_t retrying;        /* keys with a non-zero failure count */
    uint64_t gated;           /* held by the read-your-writes gate */
    uint64_t keys;            /* keys the queue tracks in any state */
    uint64_t adds_total;      /* workqueue_adds_total */
    uint64_t retries_total;   /* workqueue_retries_total (rate-limited adds) */
    uint64_t done_total[IPC_OUTCOME_MAX_]; /* Done calls by outcome */
    uint64_t gated_total;     /* Done calls that had to wait for the cache */
    uint64_t ryw_timeouts_total; /* gates released by the timeout, not the cache */
    uint64_t unfinished_work_ns;   /* sum of the ages of in-flight keys */
    uint64_t longest_running_ns;   /* age of the oldest in-flight key */
    uint64_t oldest_ready_ns;      /* how long the oldest ready key (due, not handed
                                    * out) has waited for a worker; 0 when none */
    struct ipc_hist queue_duration; /* due -> handed out */
    struct ipc_hist work_duration;  /* handed out -> Done */
};

/* cfg NULL = defaults; now NULL = util_now_ns. kind is copied. *out owned by caller. */
int ipc_queue_new(const char *kind, const struct ipc_queue_config *cfg,
                  ipc_now_fn now, void *now_ud, struct ipc_queue **out);
void ipc_queue_free(struct ipc_queue *q);
const char *ipc_queue_kind(const struct ipc_queue *q);
void ipc_queue_set_seen(struct ipc_queue *q, ipc_seen_fn seen, void *ud);

/* Add (an event): dedupes with a queued add; kept dirty while processing or gated. */
int ipc_queue_add(struct ipc_queue *q, const char *key);
/* Add at low priority (controller-runtime's LowPriority): for the initial list
 * and the watcher's resync after a restart, so 10,000 resync keys do not delay
 * a real event. Ready low keys go out only when no normal key is ready; a
 * normal Add of a key queued low raises it. */
int ipc_queue_add_low(struct ipc_queue *q, const char *key);
/* AddAfter: delay 0 is Add; a key already waiting only moves earlier. */
int ipc_queue_add_after(struct ipc_queue *q, const char *key, uint64_t delay_ns);
/* AddRateLimited: AddAfter(when(key)); counts a retry and a failure. */
int ipc_queue_add_rate_limited(struct ipc_queue *q, const char *key);
/* Forget: resets the key's failure count (does not dequeue). */
void ipc_queue_forget(struct ipc_queue *q, const char *key);
uint32_t ipc_queue_num_requeues(struct ipc_queue *q, const char *key);

/* Hands out the next ready key: 0, -EAGAIN (none ready now), -ESHUTDOWN. */
int ipc_queue_get(struct ipc_queue *q, struct ipc_lease *out);
/* Marks key as processing under a new lease without it having been ready:
 * a worker still holds it from before a watcher restart. A pending add stays
 * dirty and is delivered after Done. -EBUSY if someone already holds it. */
int ipc_queue_adopt(struct ipc_queue *q, const char *key, struct ipc_lease *out);
/* Done for a lease: applies the outcome, then the gate for written rvs. */
int ipc_queue_done(struct ipc_queue *q, const char *key, uint64_t id,
                   const struct ipc_outcome *oc);

/* Moves due delayed keys to ready and expires gates; call when the clock
 * reaches ipc_queue_next_deadline (the server's timer does). */
void ipc_queue_tick(struct ipc_queue *q);
/* Re-asks the seen oracle for every gated key (the cache's rvs advanced). */
void ipc_queue_progress(struct ipc_queue *q);
/* Earliest clock time at which tick may change something; UINT64_MAX if never. */
uint64_t ipc_queue_next_deadline(const struct ipc_queue *q);
/* After shutdown adds are ignored; get drains what is ready, then returns
 * -ESHUTDOWN; Done still works. */
void ipc_queue_shutdown(struct ipc_queue *q);
void ipc_queue_stats(const struct ipc_queue *q, struct ipc_queue_stats *out);

struct buf;
/* Appends Prometheus text for the queues to out (util.h's struct buf): client-go's
 * workqueue_* names with label name="<kind>", plus rayop_ipc_* extras. 0 or -ENOMEM. */
/* Appends one Prometheus histogram (NAME_bucket{name=KIND,le=...}, _sum, _count, seconds)
 * built from h to b. 0, or nonzero if an append failed. */
int ipc_hist_text(struct buf *b, const char *name, const char *kind, const struct ipc_hist *h);
int ipc_metrics_text(struct ipc_queue *const *queues, size_t n, struct buf *out);

/* ---- status (STATUS reply; also what the server reports locally) ---------- */

struct ipc_status_worker {
    int32_t pid;                 /* from SO_PEERCRED */
    char worker[IPC_WORKER_MAX];
    uint32_t capacity;
    uint32_t in_flight;
    uint64_t oldest_ms;          /* age of its oldest in-flight key */
};

struct ipc_status_queue {
    char kind[IPC_KIND_MAX];
    uint64_t depth, in_flight, waiting, retrying, gated, keys;
    uint64_t adds_total, retries_total, ryw_timeouts_total, overdue;
    /* How long the oldest key ready for a worker has waited (ms). Optional on the
     * wire: a watcher from before the field omits it, and then known is false. */
    uint64_t oldest_wait_ms;
    bool oldest_wait_known;
    uint32_t n_workers;
    struct ipc_status_worker *workers; /* owned by the ipc_status */
};

struct ipc_status {
    int32_t pid;                 /* watcher pid */
    uint32_t n_queues;
    struct ipc_status_queue *queues; /* owned; ipc_status_free releases */
};
void ipc_status_free(struct ipc_status *st);

/* ---- the server (watcher side, libuv loop thread only) --------------------- */

struct uv_loop_s;
struct ipc_server;

struct ipc_server_config {
    /* Optional per-key processing deadline: keys held longer are counted as
     * "overdue" in STATUS and logged once. Keys are never taken back from a
     * live connection (no leases); 0 disables. */
    uint64_t processing_deadline_ns;
    size_t max_write_queue;      /* bytes queued to a slow peer before it is dropped; default 4 MiB */
    uint32_t max_connections;    /* further connections get ERROR EMFILE; default 1024 */
    /* Hand out nothing for this long after start, so workers of a previous
     * watcher can reconnect and ADOPT the keys they still hold before anyone
     * else is given them. The watcher should use >= 2 s (clients back off to
     * at most 1 s). 0 = no grace (tests). */
    uint64_t startup_grace_ns;
    ipc_now_fn now;              /* NULL = util_now_ns */
    void *now_ud;
};

/* cfg may be NULL. Handles are created on loop; *out owned until ipc_server_close. */
int ipc_server_new(struct uv_loop_s *loop, const struct ipc_server_config *cfg,
                   struct ipc_server **out);
/* Registers a queue for kind; do it before listen, or early workers of that
 * kind are refused (their ipc_client_open returns -ENOENT). qcfg NULL = defaults. */
int ipc_server_add_kind(struct ipc_server *s, const char *kind,
                        const struct ipc_queue_config *qcfg);
/* Binds path (socket mode 0600; a stale socket nobody answers on is replaced;
 * -EADDRINUSE if a live server answers; -EEXIST if path is not a socket). */
int ipc_server_listen(struct ipc_server *s, const char *path);
void ipc_server_set_seen(struct ipc_server *s, ipc_seen_fn seen, void *ud);
/* Ends the startup grace now: for a watcher that knows no worker can hold a key
 * (its cache segment is new, so no earlier watcher handed keys out of it). */
void ipc_server_end_grace(struct ipc_server *s);
/* The watcher's event path: Add to kind's queue, then hand out. */
int ipc_server_add(struct ipc_server *s, const char *kind, const char *key);
/* ipc_queue_add_low, then hand out: for the initial list and restart resync. */
int ipc_server_add_low(struct ipc_server *s, const char *kind, const char *key);
/* Cache rvs advanced: release gated keys whose writes are now visible. */
void ipc_server_progress(struct ipc_server *s);
/* Snapshot as STATUS reports it; out owned by caller (ipc_status_free). */
int ipc_server_status(struct ipc_server *s, struct ipc_status *out);
/* ipc_metrics_text over every queue of the server. */
int ipc_server_metrics_text(struct ipc_server *s, struct buf *out);
/* Closes the socket and every connection (their keys are requeued), unlinks
 * the socket path; memory is released once the loop has run the close
 * callbacks (run the loop until it returns). */
void ipc_server_close(struct ipc_server *s);

/* ---- the client (reconciler side, thread-safe) ----------------------------- */

struct ipc_client;

struct ipc_client_config {
    const char *path;            /* socket path */
    const char *kind;            /* queue to work for; NULL = status/add-only client */
    const char *worker;          /* worker id for STATUS; NULL = "pid-<pid>" */
    uint32_t capacity;           /* worker threads (keys held at once); default 1 */
    int connect_timeout_ms;      /* ipc_client_open waits this long for the first
                                    connection; default 5000 */
};

/* A key in a worker's hands. Copyable; done() takes it by pointer. */
struct ipc_key {
    char key[IPC_KEY_MAX];
    uint64_t id;
    uint64_t conn_gen;           /* connection it came on; older ones are stale */
    uint32_t requeues;
    uint64_t added_unix_ms;      /* wall time the key became due */
    uint64_t wait_ms;            /* time it waited in the queue */
};

/* Connects (retrying until connect_timeout_ms), says HELLO and starts the
 * reader thread that keeps the connection (reconnects with backoff after a
 * drop). *out owned by caller: ipc_client_close. */
int ipc_client_open(const struct ipc_client_config *cfg, struct ipc_client **out);
/* Blocks until a key arrives or timeout_ms passes (-ETIMEDOUT); -1 = forever.
 * -ESHUTDOWN after close; the server's refusal (e.g. -ENOENT: a restarted
 * watcher has no queue for our kind) once the client has given up. */
int ipc_client_pull(struct ipc_client *c, int timeout_ms, struct ipc_key *out);
/* Reports the outcome. A key pulled before a reconnect is re-leased on the new
 * connection by ADOPT and its Done goes there; -ESTALE (harmless) if it could
 * not be (the server refused, or the key was finished while disconnected);
 * -ENOENT if this key is not held (Done twice). */
int ipc_client_done(struct ipc_client *c, const struct ipc_key *k, const struct ipc_outcome *oc);
/* Enqueues a key in any kind's queue (after_ms 0 = now). */
int ipc_client_add(struct ipc_client *c, const char *kind, const char *key, uint64_t after_ms);
/* Asks the server for its status; out owned by caller (ipc_status_free). */
int ipc_client_status(struct ipc_client *c, int timeout_ms, struct ipc_status *out);
/* True while connected and registered. */
bool ipc_client_connected(struct ipc_client *c);
/* Threads blocked in ipc_client_pull now, and how often one of them woke with
 * no key to take (a key wakes one puller, not all of them). */
struct ipc_client_stats {
    uint32_t waiting;
    uint64_t idle_wakeups;
};
void ipc_client_stats(struct ipc_client *c, struct ipc_client_stats *out);
/* Hands back keys received but not pulled, wakes blocked pulls (-ESHUTDOWN),
 * stops the reader thread, frees c. Keys still held by threads are requeued
 * by the server as errors when the connection closes: finish them first. */
void ipc_client_close(struct ipc_client *c);

/* Validates a key: 1..IPC_KEY_MAX-1 bytes in 0x21..0x7e. 0 or -EINVAL. */
int ipc_key_check(const char *key, size_t len);

#endif

/*
 * internal.h - pieces of the reconciler host shared between its files and
 * its unit tests (tests/unit/test_host_*.c); not for reconcile code.
 */
#ifndef RAYOP_HOST_INTERNAL_H
#define RAYOP_HOST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ipc/ipc.h"
#include "reconcilers/host/host.h"
#include "reconcilers/host/http.h"
#include "reconcilers/host/opts.h"

struct buf;

/* ---- the API client created in the background (ctx.c) ---------------------- */

/* A restarted controller must not wait for libcurl/GnuTLS initialisation
 * (tens of ms) before its first reconcile: the client is created on its own
 * thread while the cache is mapped and the queue connected; the first write
 * waits for it. */
struct host_kube_slot {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool done;
    struct kube_client *client;   /* NULL if creation failed */
};
void host__kube_slot_init(struct host_kube_slot *s);
void host__kube_slot_set(struct host_kube_slot *s, struct kube_client *c);
void host__kube_slot_destroy(struct host_kube_slot *s);

/* ---- metrics (metrics.c) ---------------------------------------------------- */

/* controller-runtime's result label values, in this order. */
enum host_mresult { HOST_M_SUCCESS, HOST_M_ERROR, HOST_M_REQUEUE, HOST_M_REQUEUE_AFTER,
                    HOST_M_NRESULTS };

/* controller-runtime's reconcile_time_seconds buckets. */
#define HOST_RT_BUCKETS 40
extern const double host_rt_bounds[HOST_RT_BUCKETS];

struct host_metrics {
    pthread_mutex_t mu;
    char controller[64];      /* label controller=<kind> */
    char queue[64];           /* label name=<queue> */
    uint64_t reconcile_total[HOST_M_NRESULTS];
    uint64_t errors_total;
    uint64_t terminal_errors_total;
    uint64_t rt_counts[HOST_RT_BUCKETS + 1]; /* not cumulative; [40] is +Inf */
    uint64_t rt_count;
    double rt_sum;
    struct ipc_hist queue_duration;          /* this process's keys only */
    struct ipc_hist work_duration;
    int active_workers, max_workers;
    /* the watcher's view of the queue, from the last STATUS */
    bool have_status;
    uint64_t depth, adds_total, retries_total;
    uint64_t status_errors;
    /* the kind's own metrics (host_kind.metrics), appended after ours */
    host_metrics_fn kind_metrics;
    struct host_view *kind_view;
    /* leader_election_master_status{name}: set while the election runs (it
     * outlives the HTTP server), NULL without --enable-leader-election */
    struct host_leader *leader;
    const char *leader_name;
    /* client-go's rest_client_* of the process's API client, once it exists */
    struct host_kube_slot *kube_slot;
};

void host__metrics_init(struct host_metrics *m, const char *controller, const char *queue,
                        int max_workers);
void host__metrics_destroy(struct host_metrics *m);
enum host_mresult host__metrics_result_of(const struct ipc_outcome *oc, int rc,
                                          const struct host_result *res);
void host__metrics_observe(struct host_metrics *m, enum host_mresult r, bool terminal,
                           uint64_t reconcile_ns, uint64_t wait_ns);
void host__metrics_active(struct host_metrics *m, int delta);
/* Copies queue kind's figures out of a STATUS reply (NULL st: STATUS failed). */
void host__metrics_set_status(struct host_metrics *m, const struct ipc_status *st);
/* Appends the Prometheus text exposition (format 0.0.4). 0 or -ENOMEM. */
int host__metrics_text(struct host_metrics *m, struct buf *out);
/* Writes host__metrics_text to DIR/NAME (0600, through a temporary file and rename),
 * where the watcher's one /metrics endpoint pools every process's figures. DIR is
 * created (0700) if missing. 0 or a negative errno. */
int host__metrics_export(struct host_metrics *m, const char *dir, const char *name);

/* ---- leader election (leader.c) --------------------------------------------- */

#define HOST_LEASE_HOLDER_MAX 254
#define HOST_MAX_KINDS 8                      /* per-kind Leases a Pod may hold */
#define HOST_LEASE_OBSERVED_MAX 400

/* The part of a Lease's spec the election reads. */
struct host_lease_record {
    char holder[HOST_LEASE_HOLDER_MAX];       /* "" : released or never held */
    int duration_s;                           /* leaseDurationSeconds, 0 if unset */
    int transitions;                          /* leaseTransitions */
    char acquire_time[40], renew_time[40];    /* MicroTime strings as stored */
};
/* 0, or -EINVAL for a Lease that is not an object / an oversized holder. */
int host__lease_record_from_json(const cJSON *lease, struct host_lease_record *rec);

enum host_lease_action {
    HOST_LEASE_CREATE,      /* no Lease: create it holding it */
    HOST_LEASE_RENEW,       /* ours (this Pod's): renewTime = now */
    HOST_LEASE_TAKEOVER,    /* released or expired: take it, leaseTransitions + 1 */
    HOST_LEASE_WAIT,        /* another holder that is still renewing */
};
/* client-go's decision: observed_ms is when this process first saw the current
 * record (our clock, not renewTime, so skew between Pods does not matter). */
/* Spreading the kinds over replicas (leader.c). holders[i] is the holder of kind i's Lease
 * ("" = free), peers the other live Pods of this Deployment. A process about to take a free
 * Lease waits a little when its Pod already leads another kind (leads_other), so a Pod that
 * leads none gets it first; a leader yields its kind when its Pod leads at least two kinds
 * more than some peer and the kind is the last one (in holders' order) it leads, so that
 * one kind moves at a time. */
bool host__lease_leads_other(const char *const *holders, size_t nkinds, size_t kind,
                             const char *me);
bool host__lease_should_yield(const char *const *holders, size_t nkinds, size_t kind,
                              const char *me, const char *const *peers, size_t npeers);
enum host_lease_action host__lease_decide(const struct host_lease_record *rec, bool exists,
                                          const char *identity, uint64_t observed_ms,
                                          uint64_t now_ms);

struct host_leader_config {
    char name[254];                           /* Lease name: rayop-KIND-leader */
    char ns[64];
    char identity[HOST_LEASE_HOLDER_MAX];     /* the Pod: $POD_NAME, else the hostname */
    int lease_s;                              /* leaseDurationSeconds (15) */
    int renew_deadline_ms;                    /* 10000 */
    int retry_ms;                             /* 2000 */
    const char *kinds[HOST_MAX_KINDS];        /* the binary's kinds: the Leases a Pod may hold */
    size_t nkinds;
    /* migration guard: while another operator holds this Lease (in ns; KubeRay's
     * "ray-operator-leader"), we do not lead. "" for none. */
    char guard[254];
};
enum host_leader_state { HOST_LEADER_WAITING, HOST_LEADER_LEADING, HOST_LEADER_LOST };
struct host_leader;
typedef void (*host_leader_lost_fn)(void *arg);

/* $POD_NAME, else the hostname. 0 or negative errno. */
int host__leader_identity(char *out, size_t cap);
/* flag if set, else the in-cluster service account namespace file, else "default". */
void host__leader_namespace(const char *flag, char *out, size_t cap);
/* Starts the election thread (it waits for the API client in slot). on_lost
 * runs on that thread once, when leadership is lost. host__leader_stop frees. */
int host__leader_start(const struct host_leader_config *cfg, struct host_kube_slot *slot,
                       host_leader_lost_fn on_lost, void *arg, struct host_leader **out);
/* NULL le (election off) reads as leading. */
enum host_leader_state host__leader_get_state(struct host_leader *le);
/* Waits up to timeout_ms while WAITING; returns the state. */
enum host_leader_state host__leader_wait(struct host_leader *le, int timeout_ms);
/* Stops the thread; with release and the Lease held, gives it up (holder
 * cleared, leaseDurationSeconds 1) so a standby takes over at once. Frees le. */
void host__leader_stop(struct host_leader *le, bool release);

/* ---- HTTP endpoints (http.c) ------------------------------------------------ */

struct host_http;
typedef int (*host_ready_fn)(void *arg);   /* 1 ready, 0 not */
/* Starts /metrics on metrics_addr and /healthz, /readyz on probe_addr (either
 * may be "0" = off; both may be the same address). Bound ports are logged. */
int host__http_start(const char *metrics_addr, const char *probe_addr, struct host_metrics *m,
                     host_ready_fn ready, void *ready_arg, struct host_http **out);
/* Port actually bound (useful with port 0), -1 if off. */
int host__http_port(struct host_http *h, int which /* 0 metrics, 1 probes */);
void host__http_stop(struct host_http *h);

/* ---- used inside host/ and by its unit tests; not for kinds ---- */

/* Forgets every remembered series (event.c). */
void host__event_forget_all(void);
/* Waits (up to timeout_ms) until the Event writer's queue is empty: 0, or
 * -ETIMEDOUT; and the number of Events dropped on a full queue (event.c). */
int host__events_flush(uint64_t timeout_ms);
uint64_t host__events_dropped(void);
/* Maps a result to the ipc outcome reported to the queue (ctx.c). */
void host__outcome_to_ipc(int rc, const struct host_result *res, const struct host_ctx *ctx,
                          struct ipc_outcome *out);
/* The level at which a reconcile's outcome (rc, and out from host__outcome_to_ipc) is
 * logged, or -1 when it is not logged at all (ctx.c). */
int host__outcome_log_level(int rc, const struct ipc_outcome *out);

#endif

/*
 * cluster.h - kubesim's simulated cluster: Node objects, a scheduler, a kubelet
 * that plays every bound Pod's lifecycle, and the Endpoints/EndpointSlice
 * controller. Runs inside kubesim on its own thread, fed by store_subscribe()
 * notifications through a work queue (the committing thread only enqueues) plus
 * timers, and writes through the same store verbs as any client.
 * Off unless nodes > 0 (kubesim's main gives 3 when --nodes is absent, --nodes 0 keeps
 * it off). Behaviour and figures: docs/kubesim-cluster.md.
 *
 * The scheduling filters and scoring are pure functions on cJSON objects so that
 * tests/unit/kubesim/test_cluster_sched.c can check them without a store.
 */
#ifndef RAYOP_SIM_CLUSTER_H
#define RAYOP_SIM_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

struct store;
struct cluster;
struct ray;
struct runtime;

struct cluster_opts {
    long nodes;            /* 0 = no simulated cluster */
    char node_cpu[32];     /* quantities as given: "8", "16Gi", ... */
    char node_memory[32];
    long node_gpu;
    long node_tpu;
    long pod_start_ms;     /* bound -> Running */
    long pod_ready_ms;     /* Running -> Ready */
    long pod_stop_ms;      /* cap on the grace period of a deleted Pod */
    char node_labels[1024]; /* "k=v,k2=v2": extra labels on every node */
    struct ray *ray;       /* NULL, or the Ray runtime that plays submitter Pods (kubesim/ray/ray.h) */
    long job_pod_ms;       /* a Job's Pod container exits 0 after this (0 = runs on) */
    struct runtime *runtime; /* NULL, or the runtime that runs Pods of --run-image images */
};

/* Handles the flags "nodes", "node-cpu", "node-memory", "node-gpu", "node-tpu",
 * "node-labels", "pod-start-ms", "pod-ready-ms", "pod-stop-ms", "job-pod-ms" (names without
 * dashes) into *o,
 * which the first call initialises with the defaults. 0, -ENOENT for another flag,
 * -EINVAL with err set for a bad value. */
int cluster_parse_flag(struct cluster_opts **o, const char *flag, const char *value,
                       char *err, size_t errlen);
extern const char cluster_usage[];

/* Subscribes to the store, creates the nodes and starts the cluster thread. o may be
 * NULL or have nodes == 0: then *out is NULL and nothing runs. 0 or a negative errno;
 * on error *out may still be set (an inert cluster the store holds a subscription
 * to): cluster_stop and cluster_free it like a running one. o is copied. */
int cluster_start(const struct cluster_opts *o, struct store *store, struct cluster **out);
/* Stops the thread (later commits are ignored) and frees the cluster's tables. Call
 * before the server and store go (NULL is fine). */
void cluster_stop(struct cluster *c);
/* Frees c itself: only after store_close, since the store has no unsubscribe. */
void cluster_free(struct cluster *c);
void cluster_opts_free(struct cluster_opts *o);

/* ---- scheduling as pure functions --------------------------------------------- */

struct cluster_res {
    int64_t cpu_m;     /* millicores */
    int64_t mem;       /* bytes */
    int64_t gpu;       /* nvidia.com/gpu */
    int64_t tpu;       /* google.com/tpu */
    int64_t pods;
};

/* Sum of container requests (a limit stands in for a missing request), raised to the
 * largest init container's, as the scheduler computes it. pods = 1. */
void cluster_pod_requests(const cJSON *pod, struct cluster_res *out);
/* status.allocatable (capacity when absent) of a Node. */
void cluster_node_allocatable(const cJSON *node, struct cluster_res *out);

/* Why a node does not fit (bits). Filters run in the scheduler's plugin order and
 * stop at the first failing plugin; the resource plugin reports every shortage. */
enum {
    CLUSTER_FIT_UNSCHEDULABLE = 1u << 0,  /* spec.unschedulable */
    CLUSTER_FIT_TAINT         = 1u << 1,  /* untolerated NoSchedule/NoExecute taint */
    CLUSTER_FIT_SELECTOR      = 1u << 2,  /* nodeSelector, required node affinity */
    CLUSTER_FIT_PODS          = 1u << 3,
    CLUSTER_FIT_CPU           = 1u << 4,
    CLUSTER_FIT_MEMORY        = 1u << 5,
    CLUSTER_FIT_GPU           = 1u << 6,
    CLUSTER_FIT_TPU           = 1u << 7,
};
#define CLUSTER_FIT_RESOURCES (CLUSTER_FIT_PODS | CLUSTER_FIT_CPU | CLUSTER_FIT_MEMORY | \
                               CLUSTER_FIT_GPU | CLUSTER_FIT_TPU)

/* 0 when pod (with requests req) fits node (allocatable alloc, already requested
 * used), else the CLUSTER_FIT_* bits. When the taint filter fails, the first
 * untolerated taint is written to taint as "{key: value}" (may be NULL). */
unsigned cluster_node_fits(const cJSON *pod, const struct cluster_res *req,
                           const cJSON *node, const struct cluster_res *alloc,
                           const struct cluster_res *used, char *taint, size_t taintlen);
/* NodeResourcesFit LeastAllocated score, 0..100 (higher = emptier after placing). */
int cluster_node_score(const struct cluster_res *req, const struct cluster_res *alloc,
                       const struct cluster_res *used);
/* The FailedScheduling message for n nodes whose fit results are fits[0..n), e.g.
 * "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available:
 * 3 No preemption victims found for incoming pod.". taint: the taint text of the
 * nodes that failed on taints (one taint string is shown, as in kubesim all
 * tainted nodes usually share it). */
void cluster_unsched_message(size_t n, const unsigned *fits, const char *taint,
                             char *out, size_t len);

/* ---- the Job controller's arithmetic as pure functions ---------------------------- */

/* How many Pods a Job wants active (manageJob): completions < 0 means unset. */
long cluster_job_want_active(long completions, long parallelism, long succeeded, long active);
/* Delay before a replacement Pod after `failures` failures since the last success
 * (0 for none): 0.5 s doubling to 30 s, the real 10 s .. 10 min scaled by 1/20. */
long cluster_job_backoff_ms(int failures);
/* status.completedIndexes ("0-2,4") of len bytes into bits (n bits, caller zeroes
 * (n + 7) / 8 bytes); indexes >= n are ignored. 0, or -EINVAL for a malformed text
 * (bits may then be partly set). */
int cluster_job_indexes_parse(const char *s, size_t len, long n, unsigned char *bits);
long cluster_job_indexes_count(const unsigned char *bits, long n);
/* The interval text of bits[0..n); malloc'd (caller frees), "" when none, NULL on ENOMEM. */
char *cluster_job_indexes_format(const unsigned char *bits, long n);

#endif

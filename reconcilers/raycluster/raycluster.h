/*
 * raycluster.h - the RayCluster controller (`rayop controller raycluster`):
 * the reconcile loop that makes Kubernetes match a RayCluster as KubeRay v1.7's
 * raycluster_controller.go does, the status it writes, and its Prometheus
 * metrics. The objects themselves come from build.h (pure builders); this
 * module decides what to create, delete and report, reading the shared cache
 * and writing through the host (reconcilers/host/host.h). docs/raycluster.md,
 * section "Reconcile".
 */
#ifndef RAYOP_RAYCLUSTER_H
#define RAYOP_RAYCLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kobj/kobj.h"
#include "reconcilers/host/host.h"

#define RC_CACHE_TYPE "ray.io/v1/rayclusters"

/* The kind's reconcile and /metrics functions (registered in reconcilers/kinds.c). */
int rc_reconcile(struct host_ctx *ctx, struct host_result *res);
int rc_metrics(struct host_view *view, struct buf *out);
/* The start-up checks (platform.c): OpenShift and cert-manager served? < 0 when the API
 * groups could not be read (the controller stops, as KubeRay does). */
int rc_platform_start(struct kube_client *kc);

/* A token-auth cluster's Ray token into t, as KubeRay's dashboard client sends it
 * (dashboard.c): read from the cluster's Secret (rc_auth_token_secret), whose copy is
 * wiped. 0, also when the cluster does not use token auth; else -errno, logged here,
 * with *kr holding the API server's answer when it gave one (the caller releases it). */
struct dash_target;
int rc_dashboard_token(struct host_ctx *ctx, const cJSON *cluster, struct dash_target *t,
                       struct kube_result *kr);

/* The RayCluster feature gates of this process (--feature-gates; build.h
 * struct rc_gates). The RayJob and RayCronJob controllers validate cluster
 * specs with the same gates. */
struct rc_gates;
void rc_gates_from_host(const struct host_ctx *ctx, struct rc_gates *g);

/* ---- status (status.c): a pure function of the cluster and its objects ---- */

/* What the reconcile loop ran into, mapped to KubeRay's ReplicaFailure reasons
 * (utils.RayClusterReplicaFailureReason). RC_ERR_OTHER: an error without a
 * replica-failure reason (the condition is left as it was, as in KubeRay). */
enum rc_err {
    RC_ERR_NONE = 0,
    RC_ERR_OTHER,
    RC_ERR_CREATE_HEAD,        /* FailedCreateHeadPod */
    RC_ERR_DELETE_HEAD,        /* FailedDeleteHeadPod */
    RC_ERR_CREATE_WORKER,      /* FailedCreateWorkerPod */
    RC_ERR_DELETE_WORKER,      /* FailedDeleteWorkerPod */
    RC_ERR_DELETE_ALL,         /* FailedDeleteAllPods */
};
const char *rc_err_reason(enum rc_err e);   /* "" for NONE/OTHER */

struct rc_status_in {
    const cJSON *rc;           /* the RayCluster as read (its status is the old one) */
    const cJSON *pods;         /* array: Pods labelled ray.io/cluster=NAME in its namespace */
    const cJSON *services;     /* array: Services labelled ray.io/cluster=NAME */
    enum rc_err err;           /* the reconcile's error, RC_ERR_NONE if it had none */
    const char *err_message;   /* ReplicaFailure message ("" if none) */
    const char *now;           /* metav1.Time for lastUpdateTime/transitions, RFC 3339 */
};

/*
 * KubeRay's calculateStatus: a new status object (caller owns) from the old
 * status and the objects. 0, or -ENOENT (no head Service yet), -EAGAIN (its
 * clusterIP is not assigned), -EINVAL (several head Pods or head Services,
 * or input that is not what the cache holds) - KubeRay writes no status then -,
 * -ENOMEM.
 */
int rc_status_compute(const struct rc_status_in *in, cJSON **out);
/* KubeRay's InconsistentRayClusterStatus: true when state, reason, the replica
 * counts, endpoints, head or conditions differ. lastUpdateTime, observedGeneration,
 * desired resources and stateTransitionTimes alone never cause a write. */
bool rc_status_differs(const cJSON *old_status, const cJSON *new_status);
/* How many of the fields rc_status_differs compares differ; their names,
 * comma-separated, into out (may be NULL). */
int rc_status_changes(const cJSON *old_status, const cJSON *new_status, char *out, size_t cap);
/* true when new_status differs from old_status in progress only: worker counts,
 * the head Pod's details, a condition's reason or message - not in state, reason,
 * replica bounds or endpoints, no condition appeared, went or flipped, and the
 * ready workers did not just reach the desired count. Such a change is written
 * at most once a second (reconcile.c). */
bool rc_status_progress_only(const cJSON *old_status, const cJSON *new_status);

/* Condition helpers over a status "conditions" array (metav1.Condition). */
const cJSON *rc_cond_find(const cJSON *status, const char *type);
bool rc_cond_true(const cJSON *status, const char *type);

/* Pod helpers shared with the reconcile loop. */
const char *rc_pod_phase(const cJSON *pod);
bool rc_pod_running_ready(const cJSON *pod);      /* IsRunningAndReady */
const char *rc_meta(const cJSON *obj, const char *field);

#endif

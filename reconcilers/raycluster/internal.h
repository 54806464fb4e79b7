/*
 * internal.h - what the RayCluster reconcile files share (reconcile.c,
 * reconcile_pods.c, reconcile_delete.c, metrics.c); not for other modules.
 */
#ifndef RAYOP_RAYCLUSTER_INTERNAL_H
#define RAYOP_RAYCLUSTER_INTERNAL_H

#include <stdbool.h>

#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"

/* KubeRay's requeue periods (DefaultRequeueDuration, RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV). */
#define RC_REQUEUE_SHORT_MS 2000u
#define RC_REQUEUE_IDLE_MS 300000u
#define RC_REQUEUE_HEAD_GONE_MS 10000u

/* One reconcile of one RayCluster. */
struct rc_run {
    struct host_ctx *ctx;
    cJSON *rc;                  /* the RayCluster as cached (owned) */
    const char *ns, *name, *uid;
    struct rc_build_opts bo;
    cJSON *pods;                /* Pods labelled ray.io/cluster=NAME (cache, owned) */
    cJSON *live;                /* the same from the API server, fetched before creates (owned) */
    enum rc_err err;            /* what the pod reconcile ran into */
    char err_msg[512];
    uint64_t requeue_ms;        /* > 0: ask for a requeue after this long */
};

/* Records the first error of the reconcile (later ones keep the first, as
 * KubeRay stops at the first). Returns -EIO for `return rc_fail(...)`. */
int rc_fail(struct rc_run *r, enum rc_err e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* reconcile_pods.c: head and worker Pods (KubeRay's reconcilePods). 0 or the
 * rc_fail() error; never writes status. */
int rc_reconcile_pods(struct rc_run *r);
/* Deletes every Pod in pods (an array) that is not already terminating; one
 * event per call as KubeRay's DeleteAllOf. 0 or rc_fail(). */
int rc_delete_pods(struct rc_run *r, const cJSON *pods, enum rc_err e);
bool rc_pod_terminating(const cJSON *pod);

/* reconcile_delete.c: spec.managedBy, GCS FT finalizer and deletion. 1 when
 * the reconcile is finished (res filled), 0 to go on, or -errno. */
int rc_reconcile_finalizer(struct rc_run *r, struct host_result *res);

/* metrics.c: provisioned-duration bookkeeping. */
void rc_metrics_observe_provisioned(const cJSON *rc, const cJSON *old_status,
                                    const cJSON *new_status);
void rc_metrics_forget(const char *ns, const char *name);

/* Kubernetes resources the controller writes that kube/ has no constant for. */
extern const struct kube_resource RC_RES_SERVICEACCOUNTS, RC_RES_ROLES, RC_RES_ROLEBINDINGS;

#endif

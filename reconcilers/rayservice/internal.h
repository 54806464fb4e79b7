/*
 * rayservice/internal.h - what the RayService controller's files share beyond
 * rayservice.h: the state of one reconcile and the steps reconcile.c, serve_io.c and
 * upgrade.c split between them. Not for other modules.
 */
#ifndef RAYOP_RAYSERVICE_INTERNAL_H
#define RAYOP_RAYSERVICE_INTERNAL_H

#include "dashboard/dashboard.h"
#include "reconcilers/host/host.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayservice/rayservice.h"

#define T_RAYSERVICES "ray.io/v1/rayservices"
#define T_RAYCLUSTERS "ray.io/v1/rayclusters"
#define T_SERVICES "v1/services"
#define T_PODS "v1/pods"
#define T_SLICES "discovery.k8s.io/v1/endpointslices"
#define T_GATEWAYS "gateway.networking.k8s.io/v1/gateways"
#define T_HTTPROUTES "gateway.networking.k8s.io/v1/httproutes"

/* rayop's own annotations on a managed RayCluster (docs/rayservice.md): what makes the
 * submitted-config memory and the deletion delay survive a controller restart. */
#define RS_ANN_SERVE_HASH "rayop.io/serve-config-hash"
#define RS_ANN_DELETE_AFTER "rayop.io/delete-after"

/* One reconcile. rs is a private copy of the cached RayService whose "status" is edited
 * in place; orig is the status as read. */
struct rsr {
    struct host_ctx *ctx;
    cJSON *rs;
    cJSON *st;                 /* rs.status */
    cJSON *orig;               /* a copy of the status as read */
    cJSON *active, *pending;   /* cached RayClusters (owned), NULL if absent */
    struct rs_gates gates;
    struct rc_gates cluster_gates;   /* gates.cluster points here */
    int64_t now_ms;
    char now[32];
    int64_t generation;
    int requeue_ms;            /* 0: RS_REQUEUE_MS */
    int err_rc;                /* the failed write err describes (0: none) */
    char err[640];             /* its API server words: rayservice__api_error */
};

/* serve_io.c: the dashboard side of one cluster (reconcileServe) and the head Pod's
 * ray.io/serve label (updateHeadPodServeLabel). */
int rayservice__reconcile_serve(struct rsr *r, const cJSON *cluster, bool *ready, cJSON **apps);
int rayservice__head_serve_label(struct rsr *r, const cJSON *cluster);

/* how long a reconcile waits for a dashboard answer (dash_async_call) before it
 * requeues and takes the answer later */
#define RS_ASYNC_WAIT_MS 250

/* upgrade.c: incremental upgrade (Gateway, HTTPRoute, target_capacity, rollback). */
int rayservice__incremental_rollback(struct rsr *r);
int rayservice__incremental_objects(struct rsr *r, bool pending_ready, cJSON **route);
int rayservice__incremental_capacity(struct rsr *r, const cJSON *cluster);
void rayservice__incremental_weights(struct rsr *r, const cJSON *route);

/* apierr.c: the API server's words for a failed write, message and field causes
 * ("Service \"x\" is invalid: spec.type: Unsupported value: ..."), not just
 * kube_strerror's "invalid". Kept in r->err for the requeue message; kr may be NULL. */
const char *rayservice__api_error(struct rsr *r, const struct kube_result *kr, int rc);

/* ops.c: what every step uses (it calls none of them). */
extern const struct kube_resource RS_RES_ENDPOINTSLICES, RS_RES_GATEWAYS, RS_RES_HTTPROUTES;
void rayservice__event(struct rsr *r, const char *type, const char *reason, const char *action,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The active or pending service status object ("activeServiceStatus"), made when missing. */
cJSON *rayservice__service_status(struct rsr *r, const char *which);
int rayservice__target_capacity(const cJSON *svc_status);               /* -1 if unset */
int rayservice__patch_annotation(struct rsr *r, const cJSON *cluster, const char *key, const char *val);
struct dash_target;
/* The cluster's dashboard (head Service through the API server proxy with
 * --use-kubernetes-proxy, else its FQDN) and the PUT of serveConfigV2 to it with
 * target_capacity (< 0: none). */
int rayservice__dashboard(struct rsr *r, const cJSON *cluster, struct dash_target *t);
int rayservice__put_config(struct rsr *r, const cJSON *cluster, const struct dash_target *t,
                           int target_capacity, const char *op, char *err, size_t n);
/* "ns/name\ncluster\nop": the key of a dashboard call about cluster (dashboard/async.c). */
void rayservice__call_key(struct rsr *r, const cJSON *cluster, const char *op, char *out, size_t n);

#endif

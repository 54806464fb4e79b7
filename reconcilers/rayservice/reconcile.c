/*
 * reconcile.c - one RayService reconcile in KubeRay v1.7's order (rayservice_controller.go
 * Reconcile): forget stale Serve memory, clean up dangling RayClusters after their
 * deletion delay, the finalizer, validation, suspend, the initializing timeout, the
 * active/pending RayClusters (create, in-place update), the head Pods' ray.io/serve
 * label, the Serve applications (serve_io.c), the incremental upgrade (upgrade.c), the
 * head/serve Services pointed at the cluster that is ready, then the status: promotion,
 * a new pending cluster when the spec needs one, numServeEndpoints, conditions. The
 * status is written once, only when it changed. Every step reads the shared cache;
 * writes go through the host helpers (read-your-writes).
 *
 * Invariant kept by construction: the serve Service's selector moves to a cluster only
 * in the reconcile that saw every application of that cluster RUNNING.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/rayservice/internal.h"
#include "util/json.h"
#include "util/util.h"

static const char *active_name(struct rsr *r)
{
    return rs_str(r->st, "activeServiceStatus.rayClusterName");
}

static const char *pending_name(struct rsr *r)
{
    return rs_str(r->st, "pendingServiceStatus.rayClusterName");
}

static void cond(struct rsr *r, const char *type, const char *st, const char *reason,
                 const char *msg)
{
    int64_t og = 0;
    rs_int(r->st, "observedGeneration", &og);
    rs_cond_set(r->st, type, st, reason, msg, og, r->now);
}

static const char *annotation(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json_get(o, "metadata.annotations"), k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* ---- the finalizer -------------------------------------------------------------------- */

static bool has_finalizer(const cJSON *rs)
{
    return kobj_has_finalizer(rs, RS_FINALIZER);
}

static int patch_finalizer(struct rsr *r, bool add)
{
    struct kube_result kr = { 0 };
    int rc = host_patch_finalizer(r->ctx, &KUBE_RES_RAYSERVICES, r->rs, RS_FINALIZER, add, &kr);
    host_log(r->ctx, rc < 0 ? LOG_ERROR : LOG_INFO,
             add ? "Adding finalizer to RayService" : "No RayClusters exist, removing finalizer",
             "finalizer", RS_FINALIZER, "error", rc < 0 ? rayservice__api_error(r, &kr, rc) : NULL, NULL);
    kube_result_release(&kr);
    return rc;
}

/* ---- dangling clusters (cleanUpRayClusterInstance) ------------------------------------ */

/* Deletes, after the delay, every owned RayCluster that is neither active nor pending
 * (all of them when the RayService is being deleted). The deadline is kept in the
 * cluster's rayop.io/delete-after annotation, so a restarted controller keeps it.
 * *left: some cluster still waits or goes. */
static int cleanup_clusters(struct rsr *r, bool *left)
{
    cJSON *list = NULL;
    const cJSON *c;
    bool deleting = json_get(r->rs, "metadata.deletionTimestamp") != NULL;
    int64_t delay_s = RS_DELETION_DELAY_S;
    int rc = host_list_owner(r->ctx, T_RAYCLUSTERS, rs_str(r->rs, "metadata.uid"), &list);
    *left = false;
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    rs_int(r->rs, "spec.rayClusterDeletionDelaySeconds", &delay_s);
    cJSON_ArrayForEach(c, list) {
        const char *name = rs_str(c, "metadata.name");
        if (!deleting && (!strcmp(name, active_name(r)) || !strcmp(name, pending_name(r))))
            continue;
        *left = true;
        if (json_get(c, "metadata.deletionTimestamp"))
            continue;
        const char *after = annotation(c, RS_ANN_DELETE_AFTER);
        int64_t at = rs_parse_time_ms(after);
        if (!deleting && at < 0) {
            char ts[32];
            rs_format_time(r->now_ms + delay_s * 1000, ts);
            if ((rc = rayservice__patch_annotation(r, c, RS_ANN_DELETE_AFTER, ts)) < 0 && rc != -ENOENT)
                goto out;
            host_log(r->ctx, LOG_INFO, "Scheduled dangling RayCluster for deletion",
                     "rayClusterName", name, "deletionTimestamp", ts, NULL);
            continue;
        }
        if (!deleting && r->now_ms < at)
            continue;
        struct kube_result kr = { 0 };
        struct kube_delete_opts d = { .propagation = "Background", .grace_seconds = -1 };
        rc = host_delete(r->ctx, &KUBE_RES_RAYCLUSTERS, r->ctx->ns, name, &d, &kr);
        if (rc < 0 && rc != -ENOENT)
            rayservice__event(r, HOST_EVENT_WARNING, "FailedToDeleteRayCluster", "Delete",
                              "Failed to delete the RayCluster %s/%s: %s", r->ctx->ns, name,
                              rayservice__api_error(r, &kr, rc));
        kube_result_release(&kr);
        if (rc < 0 && rc != -ENOENT)
            goto out;
        host_log(r->ctx, LOG_INFO, "reconcileRayCluster", "delete Ray cluster", name, "reason",
                 deleting ? "RayService is being deleted. Deleting RayCluster"
                          : "Deletion timestamp has passed. Deleting cluster immediately.", NULL);
        rayservice__event(r, HOST_EVENT_NORMAL, "DeletedRayCluster", "Delete", "Deleted the RayCluster %s/%s",
                          r->ctx->ns, name);
    }
    rc = 0;
out:
    cJSON_Delete(list);
    return rc;
}

/* ---- suspend (handleSuspend) ----------------------------------------------------------- */

static void reset_serving(struct rsr *r)
{
    cJSON_DeleteItemFromObjectCaseSensitive(r->st, "activeServiceStatus");
    cJSON_DeleteItemFromObjectCaseSensitive(r->st, "pendingServiceStatus");
    cJSON_DeleteItemFromObjectCaseSensitive(r->st, "numServeEndpoints");
    cJSON_DeleteItemFromObjectCaseSensitive(r->st, "serviceStatus");
}

static void set_observed(struct rsr *r)
{
    cJSON_DeleteItemFromObjectCaseSensitive(r->st, "observedGeneration");
    cJSON_AddNumberToObject(r->st, "observedGeneration", (double)r->generation);
}

/* deleteRayServiceOwnedResources: 1 when nothing is left, 0 while deleting, < 0 error */
static int delete_owned(struct rsr *r)
{
    cJSON *list = NULL;
    const cJSON *o;
    int left = 0, rc;
    static const struct { const char *type; const struct kube_resource *res; const char *what,
                          *ok, *fail; } kinds[] = {
        { T_RAYCLUSTERS, &KUBE_RES_RAYCLUSTERS, "RayCluster", "DeletedRayCluster", "FailedToDeleteRayCluster" },
        { T_SERVICES, &KUBE_RES_SERVICES, "Service", "DeletedService", "FailedToDeleteService" },
    };
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        rc = host_list_owner(r->ctx, kinds[k].type, rs_str(r->rs, "metadata.uid"), &list);
        if (rc < 0 && rc != -ENOENT)
            return rc;
        cJSON_ArrayForEach(o, list) {
            const char *name = rs_str(o, "metadata.name");
            left = 1;
            if (json_get(o, "metadata.deletionTimestamp"))
                continue;
            struct kube_result kr = { 0 };
            struct kube_delete_opts d = { .propagation = "Background", .grace_seconds = -1 };
            rc = host_delete(r->ctx, kinds[k].res, r->ctx->ns, name, &d, &kr);
            if (rc < 0 && rc != -ENOENT)
                rayservice__api_error(r, &kr, rc);
            kube_result_release(&kr);
            if (rc < 0 && rc != -ENOENT) {
                rayservice__event(r, HOST_EVENT_WARNING, kinds[k].fail, "Delete",
                                  "Failed to delete the %s %s/%s during suspend: %s", kinds[k].what,
                                  r->ctx->ns, name, r->err);
                cJSON_Delete(list);
                return rc;
            }
            rayservice__event(r, HOST_EVENT_NORMAL, kinds[k].ok, "Delete", "Deleted the %s %s/%s during suspend",
                              kinds[k].what, r->ctx->ns, name);
        }
        cJSON_Delete(list);
        list = NULL;
    }
    if (rs_incremental(r->rs, &r->gates)) {
        static const struct kube_resource *const gw[] = { &RS_RES_GATEWAYS, &RS_RES_HTTPROUTES };
        static const char *const sfx[] = { "-gateway", "-httproute" };
        struct kube_client *kc = host_kube(r->ctx);
        for (int i = 0; kc && i < 2; i++) {
            char name[300];
            struct kube_result kr = { 0 };
            snprintf(name, sizeof(name), "%s%s", r->ctx->name, sfx[i]);
            struct kube_delete_opts d = { .propagation = "Background", .grace_seconds = -1 };
            rc = kube_delete(kc, gw[i], r->ctx->ns, name, &d, &kr);
            kube_result_release(&kr);
            if (rc == 0)
                left = 1;
            else if (rc != -ENOENT)
                return rc;
        }
    }
    return left ? 0 : 1;
}

/* 1 when suspend owns this reconcile (the caller stops after writing the status) */
static int handle_suspend(struct rsr *r)
{
    bool suspending = rs_cond_true(r->st, "Suspending"), suspended = rs_cond_true(r->st, "Suspended");
    bool want = cJSON_IsTrue(json_get(r->rs, "spec.suspend"));
    if (suspended) {
        if (want)
            return 1;
        set_observed(r);
        cond(r, "Suspended", "False", "RayServiceResumed", "Spec.Suspend is false; RayService has resumed.");
        rs_cond_remove(r->st, "Ready");
        cond(r, "Ready", "False", "Initializing", "RayService is initializing after resuming from suspend.");
        rs_cond_remove(r->st, "UpgradeInProgress");
        cond(r, "UpgradeInProgress", "False", "Initializing",
             "RayService is initializing after resuming from suspend.");
        return 0;
    }
    if (!suspending) {
        if (!want)
            return 0;
        set_observed(r);
        cond(r, "Suspending", "True", "SuspendRequested",
             "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.");
        cond(r, "Ready", "False", "SuspendInProgress", "RayService is suspending.");
        cond(r, "UpgradeInProgress", "False", "SuspendInProgress", "No upgrade in progress.");
        cond(r, "RollbackInProgress", "False", "SuspendInProgress", "No rollback in progress.");
        reset_serving(r);
        return 1;
    }
    /* Suspending is committed: the deletion runs to the end whatever spec.suspend says */
    int rc = delete_owned(r);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        cond(r, "Suspending", "True", "SuspendInProgress",
             "Waiting for all Kubernetes resources owned by this RayService to be deleted.");
        return 1;
    }
    host_log(r->ctx, LOG_INFO, "All RayService-owned resources deleted; transitioning to Suspended", NULL);
    cond(r, "Suspending", "False", "SuspendComplete", "All owned resources have been deleted.");
    cond(r, "Suspended", "True", "SuspendComplete", "All owned resources have been deleted.");
    cond(r, "Ready", "False", "SuspendComplete", "RayService is suspended.");
    cond(r, "UpgradeInProgress", "False", "SuspendComplete", "No upgrade in progress.");
    cond(r, "RollbackInProgress", "False", "SuspendComplete", "No rollback in progress.");
    return 1;
}

/* ---- RayClusters (reconcileRayCluster) ------------------------------------------------ */

static int get_cluster(struct rsr *r, const char *name, cJSON **out)
{
    *out = NULL;
    if (!*name)
        return 0;
    int rc = host_get(r->ctx, T_RAYCLUSTERS, r->ctx->ns, name, out);
    return rc == -ENOENT ? 0 : rc;
}

static bool hash_equal(struct rsr *r, const cJSON *cluster, bool partial)
{
    const char *have = annotation(cluster, RS_ANN_HASH);
    const cJSON *spec = json_get(r->rs, "spec.rayClusterConfig");
    char want[33] = "";
    if (!partial) {
        rs_cluster_hash(spec, -1, want);
    } else {
        char *end;
        const char *n = annotation(cluster, RS_ANN_NUM_WORKER_GROUPS);
        long have_groups = strtol(n, &end, 10);
        if (!*n || *end)
            return true;   /* strconv.Atoi failed: KubeRay answers true */
        if (cJSON_GetArraySize(json_get(spec, "workerGroupSpecs")) >= have_groups)
            rs_cluster_hash(spec, (int)have_groups, want);
    }
    return !strcmp(have, want);
}

static bool should_update(struct rsr *r, const cJSON *cluster, bool active)
{
    if (!cluster)
        return false;
    if (active) {
        if (rs_cond_true(r->st, "UpgradeInProgress"))
            return false;
        if (strcmp(annotation(cluster, RC_ANN_KUBERAY_VERSION), RC_KUBERAY_VERSION))
            return true;
    }
    if (hash_equal(r, cluster, false))
        return false;
    return hash_equal(r, cluster, true);
}

static bool zero_downtime(struct rsr *r)
{
    const cJSON *t = json_get(r->rs, "spec.upgradeStrategy.type");
    if (cJSON_IsString(t)) {
        if (r->gates.incremental_upgrade)
            return !strcmp(t->valuestring, "NewCluster") ||
                   !strcmp(t->valuestring, "NewClusterWithIncrementalUpgrade");
        return !strcmp(t->valuestring, "NewCluster");
    }
    const char *env = getenv("ENABLE_ZERO_DOWNTIME");
    return !(env && !strcasecmp(env, "false"));
}

static bool should_prepare(struct rsr *r, const cJSON *active, const cJSON *pending,
                           bool pending_serving)
{
    if (pending_serving || rs_cond_true(r->st, "RollbackInProgress"))
        return false;
    if (!active && !pending)
        return true;
    const cJSON *c = pending ? pending : active;
    if (hash_equal(r, c, false) || hash_equal(r, c, true))
        return false;
    return zero_downtime(r);
}

static int create_cluster(struct rsr *r, const char *name, cJSON **out)
{
    struct kube_result kr = { 0 };
    int err = 0;
    cJSON *c = rs_build_cluster(r->rs, name, &r->gates, &err);
    int rc = c ? host_create(r->ctx, &KUBE_RES_RAYCLUSTERS, r->ctx->ns, c, &kr) : err;
    if (rc == -EEXIST)
        rc = 0;   /* an earlier reconcile made it; the cache had not shown it yet */
    if (rc < 0) {
        rayservice__event(r, HOST_EVENT_WARNING, "FailedToCreateRayCluster", "Create",
                          "Failed to create the RayCluster %s/%s: %s", r->ctx->ns, name,
                          rayservice__api_error(r, &kr, rc));
        cJSON_Delete(c);
    } else {
        if (kr.http_code)
            rayservice__event(r, HOST_EVENT_NORMAL, "CreatedRayCluster", "Create", "Created the RayCluster %s/%s",
                              r->ctx->ns, name);
        host_log(r->ctx, LOG_INFO, "Created RayCluster for RayService", "clusterName", name, NULL);
        if (kr.body) {
            cJSON_Delete(c);
            c = kr.body;
            kr.body = NULL;
        }
        *out = c;
    }
    kube_result_release(&kr);
    return rc;
}

/* modifyRayCluster: spec from the RayService (the cluster's own suspend kept), labels
 * and annotations replaced (rayop's serve-config memory carried over). */
static int update_cluster(struct rsr *r, cJSON **cluster, const char *which)
{
    struct kube_result kr = { 0 };
    const char *name = rs_str(*cluster, "metadata.name");
    int err = 0, rc;
    cJSON *goal = rs_build_cluster(r->rs, name, &r->gates, &err);
    if (!goal)
        return err;
    cJSON *cur = cJSON_Duplicate(*cluster, 1);
    cJSON *spec = cJSON_DetachItemFromObjectCaseSensitive(goal, "spec");
    const cJSON *susp = json_get(cur, "spec.suspend");
    if (susp) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "suspend");
        cJSON_AddItemToObject(spec, "suspend", cJSON_Duplicate(susp, 1));
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "suspend");
    }
    cJSON_ReplaceItemInObjectCaseSensitive(cur, "spec", spec);
    cJSON *md = cJSON_GetObjectItemCaseSensitive(cur, "metadata");
    cJSON *gmd = cJSON_GetObjectItemCaseSensitive(goal, "metadata");
    cJSON *ann = cJSON_DetachItemFromObjectCaseSensitive(gmd, "annotations");
    const char *memo = annotation(*cluster, RS_ANN_SERVE_HASH);
    if (*memo)
        cJSON_AddStringToObject(ann, RS_ANN_SERVE_HASH, memo);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
    cJSON_AddItemToObject(md, "annotations", ann);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
    cJSON_AddItemToObject(md, "labels", cJSON_DetachItemFromObjectCaseSensitive(gmd, "labels"));
    cJSON_Delete(goal);
    rc = host_update(r->ctx, &KUBE_RES_RAYCLUSTERS, r->ctx->ns, cur, &kr);
    if (rc < 0)
        rayservice__event(r, HOST_EVENT_WARNING, "FailedToUpdateRayCluster", "Update",
                          "Failed to update the %s RayCluster %s/%s: %s", which, r->ctx->ns, name,
                          rayservice__api_error(r, &kr, rc));
    else {
        rayservice__event(r, HOST_EVENT_NORMAL, "UpdatedRayCluster", "Update", "Updated the %s RayCluster %s/%s",
                          which, r->ctx->ns, name);
        if (kr.body) {
            cJSON_Delete(*cluster);
            *cluster = kr.body;
            kr.body = NULL;
        }
    }
    kube_result_release(&kr);
    cJSON_Delete(cur);
    return rc;
}

static int reconcile_clusters(struct rsr *r)
{
    int rc;
    if ((rc = get_cluster(r, active_name(r), &r->active)) < 0 ||
        (rc = get_cluster(r, pending_name(r), &r->pending)) < 0)
        return rc;
    if (*pending_name(r) && !r->pending) {
        host_log(r->ctx, LOG_INFO, "Creating a new pending RayCluster instance", NULL);
        return create_cluster(r, pending_name(r), &r->pending);
    }
    if (should_update(r, r->active, true) && (rc = update_cluster(r, &r->active, "active")) < 0)
        return rc;
    if (should_update(r, r->pending, false) && (rc = update_cluster(r, &r->pending, "pending")) < 0)
        return rc;
    return 0;
}

/* ---- Services ----------------------------------------------------------------------- */

static const char *selector_cluster(const cJSON *svc)
{
    return rs_str(cJSON_GetObjectItemCaseSensitive(json_get(svc, "spec.selector"), RC_LABEL_CLUSTER),
                  "");
}

/* A Service the cache does not hold (one another operator made without the created-by
 * label rayop's watcher selects on), read from the API server. */
static int get_uncached_service(struct rsr *r, const char *name, cJSON **out)
{
    struct kube_result kr = { 0 };
    struct kube_client *kc = host_kube(r->ctx);
    int rc = kc ? kube_get(kc, &KUBE_RES_SERVICES, r->ctx->ns, name, &kr) : -ENOTCONN;
    *out = NULL;
    if (rc == 0) {
        *out = kr.body;
        kr.body = NULL;
    }
    kube_result_release(&kr);
    return rc;
}

/* reconcileServices: create, or re-point when the target cluster changed (clusterIP
 * kept). *out: the Service as it now is (owned). */
static int reconcile_service(struct rsr *r, const cJSON *cluster, bool serve, cJSON **out)
{
    struct kube_result kr = { 0 };
    cJSON *old = NULL;
    int err = 0, rc;
    bool adopt = false;
    cJSON *svc = serve ? rs_build_serve_service(r->rs, cluster, false, &r->gates, &err)
                       : rs_build_head_service(r->rs, cluster, &err);
    *out = NULL;
    if (!svc)
        return err ? err : -ENOMEM;
    char name[254];
    snprintf(name, sizeof(name), "%s", rs_str(svc, "metadata.name"));
    const char *want = selector_cluster(svc);
    rc = host_get(r->ctx, T_SERVICES, r->ctx->ns, name, &old);
    if (rc == -ENOENT) {
        rc = host_create(r->ctx, &KUBE_RES_SERVICES, r->ctx->ns, svc, &kr);
        if (rc == 0) {
            rayservice__event(r, HOST_EVENT_NORMAL, "CreatedService", "Create", "Created the service %s/%s",
                              r->ctx->ns, name);
            *out = kr.body;
            kr.body = NULL;
            goto out;
        }
        if (rc != -EEXIST) {
            rayservice__event(r, HOST_EVENT_WARNING, "FailedToCreateService", "Create",
                              "Failed to create the service %s/%s, %s", r->ctx->ns, name,
                              rayservice__api_error(r, &kr, rc));
            goto out;
        }
        kube_result_release(&kr);
        memset(&kr, 0, sizeof(kr));
        if ((rc = get_uncached_service(r, name, &old)) < 0)
            goto out;
        adopt = true;   /* give it the label the cache selects on */
    } else if (rc < 0) {
        goto out;
    }
    if (!adopt && !strcmp(selector_cluster(old), want)) {
        *out = old;
        old = NULL;
        goto out;
    }
    cJSON *spec = cJSON_DetachItemFromObjectCaseSensitive(svc, "spec");
    const char *ip = rs_str(old, "spec.clusterIP");
    if (*ip) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "clusterIP");
        cJSON_AddStringToObject(spec, "clusterIP", ip);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(old, "spec", spec);
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "labels");
    if (!labels)
        labels = cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(old, "metadata"), "labels");
    cJSON_DeleteItemFromObjectCaseSensitive(labels, RC_LABEL_CREATED_BY);
    cJSON_AddStringToObject(labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    rc = host_update(r->ctx, &KUBE_RES_SERVICES, r->ctx->ns, old, &kr);
    if (rc < 0) {
        rayservice__event(r, HOST_EVENT_WARNING, "FailedToUpdateService", "Update",
                          "Failed to update the service %s/%s, %s", r->ctx->ns, name,
                          rayservice__api_error(r, &kr, rc));
    } else {
        host_log(r->ctx, LOG_INFO, "Update Kubernetes Service", "serviceType",
                 serve ? "serveService" : "headService", "rayCluster", want, NULL);
        rayservice__event(r, HOST_EVENT_NORMAL, "UpdatedService", "Update", "Updated the service %s/%s",
                          r->ctx->ns, name);
        *out = kr.body;
        kr.body = NULL;
    }
out:
    kube_result_release(&kr);
    cJSON_Delete(old);
    cJSON_Delete(svc);
    return rc;
}

/* ---- numServeEndpoints ---------------------------------------------------------------- */

/* unique ready Pods (targetRef.uid) over the EndpointSlices of Service name */
static int count_endpoints(struct rsr *r, const char *name, int *n)
{
    cJSON *all = NULL, *uids = cJSON_CreateObject();
    const cJSON *s, *e;
    int rc = host_view_list(r->ctx->view, T_SLICES, r->ctx->ns, &all);
    *n = 0;
    if (rc < 0 && rc != -ENOENT) {
        cJSON_Delete(uids);
        return rc;
    }
    cJSON_ArrayForEach(s, all) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(json_get(s, "metadata.labels"),
                                                          "kubernetes.io/service-name");
        if (!cJSON_IsString(l) || strcmp(l->valuestring, name))
            continue;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(s, "endpoints")) {
            const char *uid = rs_str(e, "targetRef.uid");
            if (!cJSON_IsTrue(json_get(e, "conditions.ready")) || !*uid)
                continue;
            if (!cJSON_GetObjectItemCaseSensitive(uids, uid)) {
                cJSON_AddTrueToObject(uids, uid);
                (*n)++;
            }
        }
    }
    cJSON_Delete(all);
    cJSON_Delete(uids);
    return 0;
}

/* ---- status (calculateStatus, calculateConditions) ------------------------------------- */

static void init_timeout(struct rsr *r)
{
    int64_t t = rs_initializing_timeout_ms(r->rs);
    const cJSON *c = rs_cond(r->st, "Ready");
    if (t <= 0 || !c || strcmp(rs_str(c, "status"), "False") || strcmp(rs_str(c, "reason"), "Initializing"))
        return;
    int64_t since = rs_parse_time_ms(rs_str(c, "lastTransitionTime"));
    if (since < 0 || r->now_ms - since < t)
        return;
    char msg[300];
    snprintf(msg, sizeof(msg), "RayService failed to become ready within the configured timeout of "
             "%llds. Time spent initializing: %llds", (long long)(t / 1000),
             (long long)((r->now_ms - since) / 1000));
    host_log(r->ctx, LOG_INFO, "RayService initializing timeout exceeded", NULL);
    cJSON_DeleteItemFromObjectCaseSensitive(rayservice__service_status(r, "activeServiceStatus"), "rayClusterName");
    cJSON_DeleteItemFromObjectCaseSensitive(rayservice__service_status(r, "pendingServiceStatus"), "rayClusterName");
    cond(r, "Ready", "False", "InitializingTimeout", msg);
    rayservice__event(r, HOST_EVENT_WARNING, "RayServiceInitializingTimeout", "Reconcile",
                      "RayService initializing timeout exceeded after %llds (configured timeout: %llds)",
                      (long long)((r->now_ms - since) / 1000), (long long)(t / 1000));
}

static void conditions(struct rsr *r)
{
    int64_t eps = 0;
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(r->st, "conditions");
    if (!cJSON_GetArraySize(conds)) {
        cond(r, "Ready", "False", "Initializing", "RayService is initializing");
        cond(r, "UpgradeInProgress", "False", "Initializing", "RayService is initializing");
    }
    rs_int(r->st, "numServeEndpoints", &eps);
    if (eps > 0)
        cond(r, "Ready", "True", "NonZeroServeEndpoints", "Number of serve endpoints is greater than 0");
    else if (rs_cond_true(r->st, "Ready"))
        cond(r, "Ready", "False", "ZeroServeEndpoints", "Number of serve endpoints dropped to 0");
    else
        init_timeout(r);
    if (*active_name(r) && *pending_name(r)) {
        cond(r, "UpgradeInProgress", "True", "BothActivePendingClustersExist",
             "Both active and pending Ray clusters exist");
    } else if (*active_name(r)) {
        cond(r, "UpgradeInProgress", "False", "NoPendingCluster",
             "Active Ray cluster exists and no pending Ray cluster");
    } else {
        const char *reason = rs_str(rs_cond(r->st, "UpgradeInProgress"), "reason");
        if (!rs_cond(r->st, "UpgradeInProgress") ||
            (strcmp(reason, "Initializing") && strcmp(reason, "InitializingTimeout")))
            cond(r, "UpgradeInProgress", "Unknown", "NoActiveCluster",
                 "No active Ray cluster exists, and the RayService is not initializing. Please open "
                 "a GitHub issue in the KubeRay repository.");
    }
}

static void put_obj(cJSON *o, const char *k, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v)
        cJSON_AddItemToObject(o, k, v);
}

/* reconcilePromotionAndServingStatus: true when the Services point at the pending cluster */
static bool promote(struct rsr *r, const cJSON *head, const cJSON *serve)
{
    const char *to = selector_cluster(head);
    bool should = false;
    char pend[254];
    snprintf(pend, sizeof(pend), "%s", pending_name(r));
    if (strcmp(to, selector_cluster(serve)))
        host_log(r->ctx, LOG_ERROR, "headSvc and serveSvc are not pointing to the same cluster", NULL);
    if (rs_incremental(r->rs, &r->gates)) {
        if (rs_cond_true(r->st, "UpgradeInProgress")) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(r->st, "activeServiceStatus");
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(r->st, "pendingServiceStatus");
            const cJSON *tr = cJSON_GetObjectItemCaseSensitive(p, "trafficRoutedPercent");
            if (!rs_cond_true(r->st, "RollbackInProgress") && r->pending &&
                rayservice__target_capacity(a) == 0 && cJSON_IsNumber(tr) && tr->valuedouble == 100)
                should = true;
        } else if (!*active_name(r) && *pend) {
            should = true;
        }
    } else if (strcmp(active_name(r), to)) {
        should = true;
    }
    if (should) {
        host_log(r->ctx, LOG_INFO, "Promoting pending cluster to active.", "oldCluster",
                 active_name(r), "newCluster", pend, NULL);
        cJSON *p = cJSON_DetachItemFromObjectCaseSensitive(r->st, "pendingServiceStatus");
        put_obj(r->st, "activeServiceStatus", p ? p : cJSON_CreateObject());
        cJSON *tmp = r->active;
        r->active = r->pending;
        r->pending = NULL;
        cJSON_Delete(tmp);
    }
    return *pend && !strcmp(to, pend);
}

static int calculate_status(struct rsr *r, const cJSON *head, const cJSON *serve,
                            cJSON *active_apps, cJSON *pending_apps, const cJSON *route)
{
    bool pending_serving = false;
    set_observed(r);
    cJSON *a = rayservice__service_status(r, "activeServiceStatus");
    cJSON *p = rayservice__service_status(r, "pendingServiceStatus");
    put_obj(a, "rayClusterStatus", r->active ? cJSON_Duplicate(json_get(r->active, "status"), 1) : NULL);
    put_obj(p, "rayClusterStatus", r->pending ? cJSON_Duplicate(json_get(r->pending, "status"), 1) : NULL);
    put_obj(a, "applicationStatuses", active_apps && active_apps->child ? cJSON_Duplicate(active_apps, 1) : NULL);
    put_obj(p, "applicationStatuses", pending_apps && pending_apps->child ? cJSON_Duplicate(pending_apps, 1) : NULL);
    if (head && serve) {
        if (rs_incremental(r->rs, &r->gates))
            rayservice__incremental_weights(r, route);
        pending_serving = promote(r, head, serve);
    }
    if (rs_cond_true(r->st, "RollbackInProgress")) {
        a = rayservice__service_status(r, "activeServiceStatus");
        p = rayservice__service_status(r, "pendingServiceStatus");
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(a, "trafficRoutedPercent");
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(p, "trafficRoutedPercent");
        bool healthy = r->pending && rs_cond_true(json_get(r->pending, "status"), "HeadPodReady");
        if (rayservice__target_capacity(a) == 100 && cJSON_IsNumber(at) && at->valuedouble == 100 &&
            (!healthy || (rayservice__target_capacity(p) == 0 && cJSON_IsNumber(pt) && pt->valuedouble == 0))) {
            host_log(r->ctx, LOG_INFO, "Rollback to original cluster is complete. Cleaning up pending "
                     "cluster from prior upgrade.", NULL);
            put_obj(r->st, "pendingServiceStatus", cJSON_CreateObject());
            cJSON_Delete(r->pending);
            r->pending = NULL;
            rs_cond_remove(r->st, "RollbackInProgress");
            cond(r, "UpgradeInProgress", "False", "NoPendingCluster",
                 "Rollback complete, active Ray cluster exists and no pending Ray cluster");
        }
    }
    if (should_prepare(r, r->active, r->pending, pending_serving)) {
        char name[300], sfx[6];
        host_rand_suffix(sfx);
        snprintf(name, sizeof(name), "%s-%s", r->ctx->name, sfx);
        cJSON *np = cJSON_CreateObject();
        cJSON_AddStringToObject(np, "rayClusterName", name);
        if (rs_incremental(r->rs, &r->gates)) {
            if (!*active_name(r)) {
                if (rayservice__target_capacity(cJSON_GetObjectItemCaseSensitive(r->st, "activeServiceStatus")) < 0)
                    cJSON_AddNumberToObject(np, "targetCapacity", 100);
            } else {
                cJSON_AddNumberToObject(np, "targetCapacity", 0);
            }
        }
        put_obj(r->st, "pendingServiceStatus", np);
        host_log(r->ctx, LOG_INFO, "Preparing a new pending RayCluster instance by setting "
                 "RayClusterName", "clusterName", name, NULL);
    }
    char svc[300];
    int n = 0, m = 0, rc;
    if (rs_incremental(r->rs, &r->gates) && r->active)
        snprintf(svc, sizeof(svc), "%s-serve-svc", rs_str(r->active, "metadata.name"));
    else {
        const char *u = rs_str(r->rs, "spec.serveService.metadata.name");
        snprintf(svc, sizeof(svc), *u ? "%s" : "%s-serve-svc", *u ? u : r->ctx->name);
    }
    if ((rc = count_endpoints(r, svc, &n)) < 0)
        return rc;
    if (rs_incremental(r->rs, &r->gates) && r->pending) {
        snprintf(svc, sizeof(svc), "%s-serve-svc", rs_str(r->pending, "metadata.name"));
        if ((rc = count_endpoints(r, svc, &m)) < 0)
            return rc;
        n += m;
    }
    put_obj(r->st, "numServeEndpoints", n ? cJSON_CreateNumber(n) : NULL);
    conditions(r);
    put_obj(r->st, "serviceStatus", rs_cond_true(r->st, "Ready") ? cJSON_CreateString("Running") : NULL);
    return 0;
}

/* The status PUT (guarded by the cached resourceVersion) when it changed. */
static int write_status(struct rsr *r)
{
    struct kube_result kr = { 0 };
    if (!rs_status_changed(r->orig, r->st))
        return 0;
    put_obj(r->st, "lastUpdateTime", cJSON_CreateString(r->now));
    /* empty service statuses are omitempty */
    static const char *const ss[] = { "activeServiceStatus", "pendingServiceStatus" };
    for (int i = 0; i < 2; i++) {
        cJSON *s = cJSON_GetObjectItemCaseSensitive(r->st, ss[i]);
        if (cJSON_IsObject(s) && !s->child)
            cJSON_DeleteItemFromObjectCaseSensitive(r->st, ss[i]);
    }
    int rc = host_update_status(r->ctx, &KUBE_RES_RAYSERVICES, r->ctx->ns, r->rs, &kr);
    host_log(r->ctx, rc < 0 ? LOG_WARN : LOG_INFO,
             rc < 0 ? "Failed to update RayService status" : "Updated RayService status",
             "serviceStatus", rs_str(r->st, "serviceStatus"), "activeCluster", active_name(r),
             "pendingCluster", pending_name(r), "error", rc < 0 ? rayservice__api_error(r, &kr, rc) : NULL, NULL);
    kube_result_release(&kr);
    return rc;
}

static int reconcile(struct rsr *r, struct host_result *res)
{
    bool left = false, active_ready = false, pending_ready = false;
    cJSON *active_apps = NULL, *pending_apps = NULL, *head = NULL, *serve = NULL, *route = NULL;
    struct rs_invalid why;
    int rc;
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", r->ctx->ns, r->ctx->name);
    rs_memo_prune(key, active_name(r), pending_name(r));
    if ((rc = cleanup_clusters(r, &left)) < 0)
        return rc;
    if (json_get(r->rs, "metadata.deletionTimestamp")) {
        if (!left && has_finalizer(r->rs))
            return patch_finalizer(r, false);
        if (left)
            host_log(r->ctx, LOG_INFO, "Requeue RayService, waiting for RayClusters to be deleted", NULL);
        return left ? (res->outcome = HOST_REQUEUE_AFTER, res->after_ms = RS_REQUEUE_MS, 0) : 0;
    }
    if (!has_finalizer(r->rs)) {
        rc = patch_finalizer(r, true);
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = RS_REQUEUE_MS;
        return rc;
    }
    if (rs_validate(r->rs, &r->gates, &why) < 0) {
        host_log(r->ctx, LOG_ERROR, why.message, NULL);
        rayservice__event(r, HOST_EVENT_WARNING, why.reason, "Validate", "%s/%s: %s", r->ctx->ns,
                          r->ctx->name, why.message);
        cond(r, "Ready", "False", "ValidationFailed", why.message);
        put_obj(r->st, "lastUpdateTime", cJSON_CreateString(r->now));
        struct kube_result kr = { 0 };
        rc = host_update_status(r->ctx, &KUBE_RES_RAYSERVICES, r->ctx->ns, r->rs, &kr);
        kube_result_release(&kr);
        res->outcome = HOST_OK;
        return rc;
    }
    rc = handle_suspend(r);
    int wrc = write_status(r);
    if (rc < 0)
        return rc;
    if (wrc < 0)
        return wrc;
    if (rc == 1) {
        if (cJSON_IsTrue(json_get(r->rs, "spec.suspend")) && rs_cond_true(r->st, "Suspended"))
            return 0;
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = RS_REQUEUE_MS;
        return 0;
    }
    cJSON_Delete(r->orig);
    r->orig = cJSON_Duplicate(r->st, 1);
    const cJSON *ready = rs_cond(r->st, "Ready");
    if (ready && !strcmp(rs_str(ready, "status"), "False") &&
        !strcmp(rs_str(ready, "reason"), "InitializingTimeout")) {
        if (left) {
            res->outcome = HOST_REQUEUE_AFTER;
            res->after_ms = RS_REQUEUE_MS;
        } else {
            host_log(r->ctx, LOG_INFO, "RayService in terminal failure state, all RayClusters cleaned up", NULL);
        }
        return 0;
    }
    if ((rc = reconcile_clusters(r)) < 0)
        goto out;
    if (rs_incremental(r->rs, &r->gates) && rs_cond_true(r->st, "UpgradeInProgress")) {
        if (!r->active)
            rayservice__event(r, HOST_EVENT_WARNING, "RollbackImpossible", "Reconcile",
                              "Active cluster not found, rollback cannot be initiated");
        else if (r->pending && (rc = rayservice__incremental_rollback(r)) < 0)
            goto out;
    }
    if ((rc = rayservice__head_serve_label(r, r->active)) < 0 || (rc = rayservice__head_serve_label(r, r->pending)) < 0)
        goto out;
    if (r->pending) {
        host_log(r->ctx, LOG_INFO, "Reconciling the Serve applications for pending cluster",
                 "clusterName", rs_str(r->pending, "metadata.name"), NULL);
        if ((rc = rayservice__reconcile_serve(r, r->pending, &pending_ready, &pending_apps)) < 0)
            goto out;
    }
    if (r->active && ((!r->pending && !should_prepare(r, r->active, NULL, false)) ||
                      (r->pending && rs_incremental(r->rs, &r->gates)))) {
        if ((rc = rayservice__reconcile_serve(r, r->active, &active_ready, &active_apps)) < 0)
            goto out;
    }
    if (rs_incremental(r->rs, &r->gates) && (rc = rayservice__incremental_objects(r, pending_ready, &route)) < 0)
        goto out;
    if (pending_ready || active_ready) {
        const cJSON *target = r->active;
        bool incr_up = rs_incremental(r->rs, &r->gates) && rs_cond_true(r->st, "UpgradeInProgress");
        if (pending_ready && !incr_up)
            target = r->pending;
        if (target) {
            if ((rc = reconcile_service(r, target, false, &head)) < 0 ||
                (rc = reconcile_service(r, target, true, &serve)) < 0)
                goto out;
        }
    }
    if ((rc = calculate_status(r, head, serve, active_apps, pending_apps, route)) < 0)
        goto out;
    rc = write_status(r);
out:
    cJSON_Delete(active_apps);
    cJSON_Delete(pending_apps);
    cJSON_Delete(head);
    cJSON_Delete(serve);
    cJSON_Delete(route);
    res->outcome = HOST_REQUEUE_AFTER;
    res->after_ms = r->requeue_ms > 0 ? (uint64_t)r->requeue_ms : RS_REQUEUE_MS;
    return rc;
}

int rayservice_reconcile(struct host_ctx *ctx, struct host_result *res)
{
    struct rsr r;
    memset(&r, 0, sizeof(r));
    r.ctx = ctx;
    int rc = host_get(ctx, T_RAYSERVICES, ctx->ns, ctx->name, &r.rs);
    if (rc == -ENOENT) {
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", ctx->ns, ctx->name);
        host_log(ctx, LOG_INFO, "Read request instance not found error!", NULL);
        rs_memo_prune(key, NULL, NULL);
        return 0;
    }
    if (rc < 0)
        return rc;
    const char *managed = rs_str(r.rs, "spec.managedBy");
    if (*managed && strcmp(managed, "ray.io/kuberay-operator")) {
        host_log(ctx, LOG_INFO, "Skipping RayService managed by a custom controller", "managed-by",
                 managed, NULL);
        cJSON_Delete(r.rs);
        return 0;
    }
    r.st = cJSON_GetObjectItemCaseSensitive(r.rs, "status");
    if (!cJSON_IsObject(r.st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(r.rs, "status");
        r.st = cJSON_AddObjectToObject(r.rs, "status");
    }
    r.orig = cJSON_Duplicate(r.st, 1);
    r.gates.incremental_upgrade = host_feature_enabled(ctx, "RayServiceIncrementalUpgrade", true);
    rc_gates_from_host(ctx, &r.cluster_gates);
    r.gates.cluster = &r.cluster_gates;
    r.now_ms = host_wall_ms();
    rs_format_time(r.now_ms, r.now);
    rs_int(r.rs, "metadata.generation", &r.generation);
    if (!r.st || !r.orig) {
        rc = -ENOMEM;
    } else {
        rc = reconcile(&r, res);
    }
    if (rc < 0)   /* KubeRay returns the error: a rate-limited retry */
        snprintf(res->message, sizeof(res->message), "%.*s", (int)sizeof(res->message) - 1,
                 r.err_rc == rc && r.err[0] ? r.err : kube_strerror(rc));
    cJSON_Delete(r.active);
    cJSON_Delete(r.pending);
    cJSON_Delete(r.orig);
    cJSON_Delete(r.rs);
    return rc;
}

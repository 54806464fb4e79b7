/*
 * upgrade.c - NewClusterWithIncrementalUpgrade (gate RayServiceIncrementalUpgrade): the
 * Gateway NAME-gateway and HTTPRoute NAME-httproute whose backend weights move traffic
 * from the active cluster's CLUSTER-serve-svc to the pending one by stepSizePercent
 * every intervalSeconds, Serve's target_capacity on both clusters moved by
 * maxSurgePercent, and the rollback when the spec goes back (reconcileRollbackState,
 * calculateTrafficRoutedPercent, reconcileServeTargetCapacity in KubeRay).
 *
 * Gateways and HTTPRoutes are not in the shared cache (their CRDs are optional): they
 * are read and written with kube/ directly, which is why they are not recorded for
 * read-your-writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard/dashboard.h"
#include "reconcilers/rayservice/internal.h"
#include "util/json.h"
#include "util/util.h"

static int opt(const cJSON *rs, const char *k, int dflt)
{
    int64_t v;
    char path[128];
    snprintf(path, sizeof(path), "spec.upgradeStrategy.clusterUpgradeOptions.%s", k);
    return rs_int(rs, path, &v) == 0 ? (int)v : dflt;
}

static int num(const cJSON *s, const char *k, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, k);
    return cJSON_IsNumber(v) ? (int)v->valuedouble : dflt;
}

static void set_num(cJSON *s, const char *k, int v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(s, k);
    cJSON_AddNumberToObject(s, k, v);
}

static void cond(struct rsr *r, const char *type, const char *st, const char *reason, const char *msg)
{
    int64_t og = 0;
    rs_int(r->st, "observedGeneration", &og);
    rs_cond_set(r->st, type, st, reason, msg, og, r->now);
}

int rayservice__incremental_rollback(struct rsr *r)
{
    char want[33];
    int rc = rs_cluster_hash(json_get(r->rs, "spec.rayClusterConfig"), -1, want);
    if (rc < 0)
        return rc;
    const cJSON *aa = json_get(r->active, "metadata.annotations");
    const cJSON *pa = json_get(r->pending, "metadata.annotations");
    const char *orig = rs_str(cJSON_GetObjectItemCaseSensitive(aa, RS_ANN_HASH), "");
    const char *pend = rs_str(cJSON_GetObjectItemCaseSensitive(pa, RS_ANN_HASH), "");
    bool rolling = rs_cond_true(r->st, "RollbackInProgress");
    if (!strcmp(want, orig)) {
        if (!rolling) {
            host_log(r->ctx, LOG_INFO, "Goal state reverted to original cluster during upgrade. "
                     "Initiating safe rollback.", NULL);
            cond(r, "RollbackInProgress", "True", "DesiredClusterSpecChanged",
                 "Goal state reverted to original cluster, rolling back.");
        }
    } else if (!strcmp(want, pend)) {
        if (rolling)
            rs_cond_remove(r->st, "RollbackInProgress");
    } else if (!rolling) {
        cond(r, "RollbackInProgress", "True", "DesiredClusterSpecChanged",
             "Goal state changed mid-upgrade, rolling back to original cluster.");
    }
    return 0;
}

/* GET name of res; 0 with *out, -ENOENT, or an error */
static int get(struct rsr *r, const struct kube_resource *res, const char *name, cJSON **out)
{
    struct kube_result kr = { 0 };
    struct kube_client *kc = host_kube(r->ctx);
    *out = NULL;
    if (!kc)
        return -ENOTCONN;
    int rc = kube_get(kc, res, r->ctx->ns, name, &kr);
    if (rc == 0) {
        *out = kr.body;
        kr.body = NULL;
    }
    kube_result_release(&kr);
    return rc;
}

static int per_cluster_service(struct rsr *r, const cJSON *cluster)
{
    char name[300];
    cJSON *old = NULL;
    int err = 0;
    if (!cluster)
        return 0;
    snprintf(name, sizeof(name), "%s-serve-svc", rs_str(cluster, "metadata.name"));
    int rc = host_get(r->ctx, T_SERVICES, r->ctx->ns, name, &old);
    cJSON_Delete(old);
    if (rc != -ENOENT)
        return rc;
    cJSON *svc = rs_build_serve_service(r->rs, cluster, true, &r->gates, &err);
    if (!svc)
        return err ? err : -ENOMEM;
    struct kube_result kr = { 0 };
    host_log(r->ctx, LOG_INFO, "Creating new per-cluster serve service for incremental upgrade.",
             "Service", name, NULL);
    rc = host_create(r->ctx, &KUBE_RES_SERVICES, r->ctx->ns, svc, &kr);
    kube_result_release(&kr);
    cJSON_Delete(svc);
    return rc == -EEXIST ? 0 : rc;
}

/* A Gateway API object (a Gateway or an HTTPRoute) made to match want: created when
 * it is missing, else want's spec put on the live object when equal() says they
 * differ, with KubeRay's events (create_noun: how its create failure names the kind).
 * *live (when set) gets the object as it now stands: want after a create, else the
 * object read. want is consumed. */
static int apply_gateway_obj(struct rsr *r, const struct kube_resource *res, const char *kind,
                             const char *create_noun, cJSON *want,
                             bool (*equal)(const cJSON *live, const cJSON *want), cJSON **live)
{
    char name[300], reason[64];
    cJSON *old = NULL;
    struct kube_result kr = { 0 };
    struct kube_client *kc = host_kube(r->ctx);
    int rc;
    snprintf(name, sizeof(name), "%s", rs_str(want, "metadata.name"));
    rc = get(r, res, name, &old);
    if (rc == -ENOENT) {
        rc = kube_create(kc, res, r->ctx->ns, want, &kr);
        if (rc < 0) {
            snprintf(reason, sizeof(reason), "FailedToCreate%s", kind);
            rayservice__event(r, HOST_EVENT_WARNING, reason, "Create",
                              "Failed to create %s for RayService %s/%s: %s", create_noun,
                              r->ctx->ns, name, rayservice__api_error(r, &kr, rc));
        } else {
            snprintf(reason, sizeof(reason), "Created%s", kind);
            rayservice__event(r, HOST_EVENT_NORMAL, reason, "Create",
                              "Created %s for RayService %s/%s", kind, r->ctx->ns, name);
            if (live) {
                *live = want;
                want = NULL;
            }
        }
    } else if (rc == 0) {
        if (!equal(old, want)) {
            cJSON_ReplaceItemInObjectCaseSensitive(old, "spec", cJSON_Duplicate(json_get(want, "spec"), 1));
            rc = kube_update(kc, res, r->ctx->ns, old, &kr);
            if (rc < 0) {
                snprintf(reason, sizeof(reason), "FailedToUpdate%s", kind);
                rayservice__event(r, HOST_EVENT_WARNING, reason, "Update",
                                  "Failed to update the %s %s/%s: %s", kind, r->ctx->ns, name,
                                  rayservice__api_error(r, &kr, rc));
            } else {
                snprintf(reason, sizeof(reason), "Updated%s", kind);
                rayservice__event(r, HOST_EVENT_NORMAL, reason, "Update", "Updated the %s %s/%s",
                                  kind, r->ctx->ns, name);
            }
        }
        if (live) {
            *live = old;
            old = NULL;
        }
    }
    kube_result_release(&kr);
    cJSON_Delete(old);
    cJSON_Delete(want);
    return rc;
}

/* The Gateway's class and its one listener are what rayop sets */
static bool gateway_equal(const cJSON *old, const cJSON *want)
{
    const cJSON *ws = json_get(want, "spec"), *os = json_get(old, "spec");
    const cJSON *wl = cJSON_GetArrayItem(json_get(ws, "listeners"), 0);
    const cJSON *ol = cJSON_GetArrayItem(json_get(os, "listeners"), 0);
    return !strcmp(rs_str(ws, "gatewayClassName"), rs_str(os, "gatewayClassName")) &&
           cJSON_GetArraySize(json_get(os, "listeners")) == 1 &&
           !strcmp(rs_str(wl, "name"), rs_str(ol, "name")) &&
           !strcmp(rs_str(wl, "protocol"), rs_str(ol, "protocol")) &&
           cJSON_Compare(json_get(wl, "port"), json_get(ol, "port"), 1);
}

static int gateway(struct rsr *r)
{
    int err = 0;
    cJSON *want = rs_build_gateway(r->rs, &err);
    if (!want)
        return err;
    return apply_gateway_obj(r, &RS_RES_GATEWAYS, "Gateway", "Gateway", want, gateway_equal, NULL);
}

/* calculateTrafficRoutedPercent */
static void weights(struct rsr *r, bool pending_ready, int *aw, int *pw)
{
    cJSON *a = rayservice__service_status(r, "activeServiceStatus");
    cJSON *p = rayservice__service_status(r, "pendingServiceStatus");
    bool rolling = rs_cond_true(r->st, "RollbackInProgress");
    int ptc = num(p, "targetCapacity", 0), atc = num(a, "targetCapacity", 100);
    int step = opt(r->rs, "stepSizePercent", 0), interval = opt(r->rs, "intervalSeconds", 1);
    *aw = num(a, "trafficRoutedPercent", 100);
    *pw = num(p, "trafficRoutedPercent", 0);
    if ((*pw == ptc && !rolling) || (rolling && *aw == atc))
        return;
    const char *last = rs_str(rolling ? a : p, "lastTrafficMigratedTime");
    int64_t at = rs_parse_time_ms(last);
    if (at >= 0 && r->now_ms - at < (int64_t)interval * 1000) {
        int64_t wait = (int64_t)interval * 1000 - (r->now_ms - at);
        if (wait < RS_REQUEUE_MS && (r->requeue_ms == 0 || wait < r->requeue_ms))
            r->requeue_ms = (int)wait + 20;
        return;
    }
    if (rolling) {
        int w = *aw + step;
        w = w > 100 ? 100 : w;
        *aw = w > atc ? atc : w;
        *pw = 100 - *aw;
    } else if (pending_ready) {
        int w = *pw + step;
        w = w > 100 ? 100 : w;
        *pw = w > ptc ? ptc : w;
        *aw = 100 - *pw;
    }
}

static bool route_equal(const cJSON *a, const cJSON *b)
{
    const cJSON *ra = json_get(cJSON_GetArrayItem(json_get(a, "spec.rules"), 0), "backendRefs");
    const cJSON *rb = json_get(cJSON_GetArrayItem(json_get(b, "spec.rules"), 0), "backendRefs");
    const cJSON *x, *y;
    if (cJSON_GetArraySize(json_get(a, "spec.rules")) != cJSON_GetArraySize(json_get(b, "spec.rules")) ||
        cJSON_GetArraySize(ra) != cJSON_GetArraySize(rb))
        return false;
    for (x = ra ? ra->child : NULL, y = rb ? rb->child : NULL; x && y; x = x->next, y = y->next)
        if (strcmp(rs_str(x, "name"), rs_str(y, "name")) || num(x, "weight", 1) != num(y, "weight", 1) ||
            num(x, "port", 0) != num(y, "port", 0) || strcmp(rs_str(x, "namespace"), rs_str(y, "namespace")))
            return false;
    return true;
}

int rayservice__incremental_objects(struct rsr *r, bool pending_ready, cJSON **route)
{
    int rc, aw, pw, err = 0;
    *route = NULL;
    if ((rc = per_cluster_service(r, r->active)) < 0 || (rc = per_cluster_service(r, r->pending)) < 0)
        return rc;
    if ((rc = gateway(r)) < 0)
        return rc;
    if (!r->active)
        return 0;   /* "Active RayCluster not found, skipping HTTPRoute creation." */
    weights(r, pending_ready, &aw, &pw);
    cJSON *want = rs_build_httproute(r->rs, r->active, aw, r->pending, pw, &err);
    if (!want)
        return err;
    return apply_gateway_obj(r, &RS_RES_HTTPROUTES, "HTTPRoute", "the HTTPRoute", want, route_equal,
                             route);
}

/* GetWeightsFromHTTPRoute, then TrafficRoutedPercent / LastTrafficMigratedTime */
void rayservice__incremental_weights(struct rsr *r, const cJSON *route)
{
    const char *an = rs_str(r->st, "activeServiceStatus.rayClusterName");
    const char *pn = rs_str(r->st, "pendingServiceStatus.rayClusterName");
    const cJSON *refs = json_get(cJSON_GetArrayItem(json_get(route, "spec.rules"), 0), "backendRefs"), *b;
    int aw = -1, pw = -1;
    cJSON_ArrayForEach(b, refs) {
        const char *n = rs_str(b, "name");
        if (*an && strstr(n, an))
            aw = num(b, "weight", 0);
        if (*pn && strstr(n, pn))
            pw = num(b, "weight", 0);
    }
    cJSON *a = rayservice__service_status(r, "activeServiceStatus");
    cJSON *p = rayservice__service_status(r, "pendingServiceStatus");
    if (aw >= 0) {
        if (aw != num(a, "trafficRoutedPercent", -1)) {
            cJSON_DeleteItemFromObjectCaseSensitive(a, "lastTrafficMigratedTime");
            cJSON_AddStringToObject(a, "lastTrafficMigratedTime", r->now);
        }
        set_num(a, "trafficRoutedPercent", aw);
    }
    if (pw >= 0 && r->pending) {
        if (pw != num(p, "trafficRoutedPercent", -1)) {
            cJSON_DeleteItemFromObjectCaseSensitive(p, "lastTrafficMigratedTime");
            cJSON_AddStringToObject(p, "lastTrafficMigratedTime", r->now);
        }
        set_num(p, "trafficRoutedPercent", pw);
    }
}

static bool conds_true(const cJSON *conds, const char *a, const char *b)
{
    bool fa = false, fb = false;
    const cJSON *c;
    cJSON_ArrayForEach(c, conds) {
        bool t = !strcmp(rs_str(c, "status"), "True");
        if (!strcmp(rs_str(c, "type"), a))
            fa = t;
        if (!strcmp(rs_str(c, "type"), b))
            fb = t;
    }
    return fa && fb;
}

/* checkIfNeedTargetCapacityUpdate */
static bool need_capacity_update(struct rsr *r, const char **why)
{
    cJSON *gw = NULL, *route = NULL;
    char name[300];
    bool need = false;
    const cJSON *a = json_get(r->st, "activeServiceStatus"), *p = json_get(r->st, "pendingServiceStatus");
    *why = "Both active and pending RayCluster instances are required for NewClusterWithIncrementalUpgrade.";
    if (!*rs_str(a, "rayClusterName") || !*rs_str(p, "rayClusterName"))
        return false;
    snprintf(name, sizeof(name), "%s-gateway", r->ctx->name);
    *why = "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready.";
    if (get(r, &RS_RES_GATEWAYS, name, &gw) < 0 || !conds_true(json_get(gw, "status.conditions"), "Accepted", "Programmed"))
        goto out;
    snprintf(name, sizeof(name), "%s-httproute", r->ctx->name);
    *why = "HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready.";
    if (get(r, &RS_RES_HTTPROUTES, name, &route) < 0)
        goto out;
    const cJSON *par;
    bool ok = false;
    cJSON_ArrayForEach(par, json_get(route, "status.parents")) {
        const char *pn = rs_str(par, "parentRef.name"), *pns = rs_str(par, "parentRef.namespace");
        if (strcmp(pn, rs_str(gw, "metadata.name")) || (*pns && strcmp(pns, r->ctx->ns)))
            continue;
        if (conds_true(json_get(par, "conditions"), "Accepted", "ResolvedRefs"))
            ok = true;
    }
    if (!ok)
        goto out;
    need = true;
    *why = "Active RayCluster TargetCapacity has not finished scaling down.";
    if (num(a, "targetCapacity", -1) < 0 || num(a, "trafficRoutedPercent", -1) < 0 ||
        num(p, "targetCapacity", -1) < 0 || num(p, "trafficRoutedPercent", -1) < 0) {
        *why = "Active or pending RayServiceStatus missing TargetCapacity or TrafficRoutedPercent.";
        goto out;
    }
    int atc = num(a, "targetCapacity", 0), ptc = num(p, "targetCapacity", 0);
    int ptr = num(p, "trafficRoutedPercent", 0);
    if (rs_cond_true(r->st, "RollbackInProgress")) {
        need = !(atc == 100 && ptc == 0);
        *why = need ? "Rollback in progress: traffic is being restored to the active cluster."
                    : "Rollback complete: all traffic has been restored to the active cluster.";
    } else if (atc == 0 && ptc == 100) {
        need = false;
        *why = "All traffic has migrated to the upgraded cluster and NewClusterWithIncrementalUpgrade is complete.";
    } else if (ptc < 100 || ptr < 100) {
        *why = "Pending RayCluster has not finished scaling up.";
    }
out:
    cJSON_Delete(gw);
    cJSON_Delete(route);
    return need;
}

int rayservice__incremental_capacity(struct rsr *r, const cJSON *cluster)
{
    const char *why;
    bool need = need_capacity_update(r, &why);
    host_log(r->ctx, LOG_INFO, "checkIfNeedTargetCapacityUpdate", "incrementalUpgradeUpdate",
             need ? "true" : "false", "reason", why, NULL);
    if (!need)
        return 0;
    cJSON *a = rayservice__service_status(r, "activeServiceStatus");
    cJSON *p = rayservice__service_status(r, "pendingServiceStatus");
    if (num(a, "targetCapacity", -1) < 0)
        set_num(a, "targetCapacity", 100);
    if (num(p, "targetCapacity", -1) < 0)
        set_num(p, "targetCapacity", 0);
    int atc = num(a, "targetCapacity", 100), ptc = num(p, "targetCapacity", 0);
    int surge = opt(r->rs, "maxSurgePercent", 100), goal = -1;
    const char *cname = rs_str(cluster, "metadata.name");
    bool is_active = !strcmp(cname, rs_str(a, "rayClusterName"));
    bool is_pending = !strcmp(cname, rs_str(p, "rayClusterName"));
    if (rs_cond_true(r->st, "RollbackInProgress")) {
        if (atc != num(a, "trafficRoutedPercent", 0))
            return 0;   /* traffic first, capacity after */
        if (atc + ptc > 100) {
            if (is_pending)
                goal = ptc - surge < 0 ? 0 : ptc - surge;
        } else if (is_active) {
            goal = atc + surge > 100 ? 100 : atc + surge;
        }
    } else {
        if (ptc != num(p, "trafficRoutedPercent", 0))
            return 0;
        if (is_active && atc + ptc > 100)
            goal = atc - surge < 0 ? 0 : atc - surge;
        else if (is_pending && atc + ptc <= 100)
            goal = ptc + surge > 100 ? 100 : ptc + surge;
    }
    if (goal < 0)
        return 0;
    struct dash_target t;
    char err[512] = "";
    int rc;
    if ((rc = rayservice__dashboard(r, cluster, &t)) == 0)
        rc = rayservice__put_config(r, cluster, &t, NULL, goal, "capacity", err, sizeof(err));
    dash_target_wipe(&t);
    if (rc == -EINPROGRESS) {
        r->requeue_ms = 300;
        return 0;
    }
    if (rc < 0) {
        rayservice__event(r, HOST_EVENT_WARNING, "FailedToUpdateTargetCapacity", "Update",
                          "Failed to update target_capacity of serve applications to the RayCluster %s/%s: %s",
                          r->ctx->ns, cname, *err ? err : kube_strerror(rc));
        return rc;
    }
    set_num(is_active ? a : p, "targetCapacity", goal);
    rayservice__event(r, HOST_EVENT_NORMAL, "UpdatedServeTargetCapacity", "Update",
                      "Updated target_capacity of serve applications to to the RayCluster %s/%s", r->ctx->ns, cname);
    return 0;
}

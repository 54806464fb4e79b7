/*
 * reconcile_netpol.c - the NetworkPolicies of a RayCluster (gate RayClusterNetworkPolicy),
 * as KubeRay v1.7's NetworkPolicyController keeps them: each policy build_netpol.c wants
 * is created, or updated when its spec or labels drifted; an owned policy no longer
 * wanted (a worker group removed, spec.networkPolicy removed) is deleted. A policy of
 * that name the cluster does not control is left alone with a NetworkPolicyNameCollision
 * Warning, and the reconcile fails so that it is retried.
 *
 * KubeRay runs this as a controller of its own; rayop runs it inside the RayCluster
 * reconcile, after the Pods, and its failure does not touch the cluster's status (only
 * the retry). The policies are cached (watcher/types.c, created-by label) so a policy
 * edited or deleted by hand brings the cluster back here, as KubeRay's Owns().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

#define RC_CACHE_NETPOLS "networking.k8s.io/v1/networkpolicies"
static const struct kube_resource RC_RES_NETPOLS = { "networking.k8s.io", "v1", "networkpolicies",
                                                     1 };

static int np_fail(char *msg, size_t cap, int rc, const char *fmt, const char *name,
                   const char *why)
{
    snprintf(msg, cap, fmt, name, why);
    return rc < 0 ? rc : -EIO;
}

static void collision(struct rc_run *r, const char *name)
{
    host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "NetworkPolicyNameCollision", "Validate",
               "NetworkPolicy %s/%s already exists and is not owned by this RayCluster, network "
               "isolation will not be applied. Rename the existing NetworkPolicy or use a "
               "different RayCluster name to avoid the collision", r->ns, name);
}

/* absent, or present in spec and labels (Go's reflect.DeepEqual on decoded values, where
 * an empty list and none are the same) */
static bool same(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0)
        a = NULL;
    if (cJSON_IsArray(b) && cJSON_GetArraySize(b) == 0)
        b = NULL;
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        const cJSON *m;
        cJSON_ArrayForEach(m, a)
            if (!same(m, kobj_get(b, m->string)))
                return false;
        cJSON_ArrayForEach(m, b)
            if (!kobj_get(a, m->string) && !same(NULL, m))
                return false;
        return true;
    }
    if (!a || !b)
        return !a && !b;
    return json_equal(a, b);
}

/* createOrUpdateNetworkPolicy. 0, or < 0 with msg set. */
static int ensure(struct rc_run *r, cJSON *want, char *msg, size_t cap)
{
    const char *name = rc_meta(want, "name");
    cJSON *have = NULL;
    struct kube_result kr = { 0 };
    char why[640];
    int rc = host_get(r->ctx, RC_CACHE_NETPOLS, r->ns, name, &have);
    if (rc == -ENOENT) {
        rc = host_create(r->ctx, &RC_RES_NETPOLS, r->ns, want, &kr);
        if (rc == 0) {
            host_log(r->ctx, LOG_INFO, "Successfully created NetworkPolicy", "name", name, NULL);
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "CreatedNetworkPolicy", "Create",
                       "Created NetworkPolicy %s/%s", r->ns, name);
        } else if (rc == -EEXIST) {
            /* not cached: without our labels, so not one we made */
            collision(r, name);
            rc = np_fail(msg, cap, rc, "NetworkPolicy %s already exists and is not owned by "
                         "this RayCluster%s", name, "");
        } else {
            kube_result_error(&kr, rc, why, sizeof(why));
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateNetworkPolicy", "Create",
                       "Failed to create NetworkPolicy %s/%s: %s", r->ns, name, why);
            rc = np_fail(msg, cap, rc, "creating NetworkPolicy %s: %s", name, why);
        }
        goto out;
    }
    if (rc < 0) {
        rc = np_fail(msg, cap, rc, "reading NetworkPolicy %s: %s", name, strerror(-rc));
        goto out;
    }
    if (!kobj_controller_uid(have) || strcmp(kobj_controller_uid(have), r->uid)) {
        collision(r, name);
        rc = np_fail(msg, cap, -EEXIST, "NetworkPolicy %s already exists and is not owned by "
                     "this RayCluster%s", name, "");
        goto out;
    }
    rc_netpol_normalize(want);
    if (same(kobj_get(have, "spec"), kobj_get(want, "spec")) &&
        same(kobj_get(kobj_get(have, "metadata"), "labels"),
             kobj_get(kobj_get(want, "metadata"), "labels")))
        goto out;
    cJSON_ReplaceItemInObjectCaseSensitive(have, "spec",
                                           cJSON_Duplicate(kobj_get(want, "spec"), true));
    cJSON_ReplaceItemInObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(have, "metadata"), "labels",
        cJSON_Duplicate(kobj_get(kobj_get(want, "metadata"), "labels"), true));
    rc = host_update(r->ctx, &RC_RES_NETPOLS, r->ns, have, &kr);
    if (rc < 0) {
        kube_result_error(&kr, rc, why, sizeof(why));
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToUpdateNetworkPolicy", "Update",
                   "Failed to update NetworkPolicy %s/%s: %s", r->ns, name, why);
        rc = np_fail(msg, cap, rc, "updating NetworkPolicy %s: %s", name, why);
    } else {
        host_log(r->ctx, LOG_INFO, "Successfully updated NetworkPolicy", "name", name, NULL);
        host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "UpdatedNetworkPolicy", "Update",
                   "Updated NetworkPolicy %s/%s", r->ns, name);
    }
out:
    kube_result_release(&kr);
    cJSON_Delete(have);
    return rc;
}

static bool wanted(const cJSON *want, const char *name)
{
    const cJSON *w;
    cJSON_ArrayForEach(w, want)
        if (!strcmp(rc_meta(w, "name"), name))
            return true;
    return false;
}

/* deleteStaleNetworkPolicies: ours (controlled by this cluster) that are not in want */
static int delete_stale(struct rc_run *r, const cJSON *want, char *msg, size_t cap)
{
    cJSON *have = NULL;
    const cJSON *np;
    int rc = host_list_cluster(r->ctx, RC_CACHE_NETPOLS, r->ns, r->name, &have);
    if (rc < 0)
        return np_fail(msg, cap, rc, "listing NetworkPolicies%s: %s", "", strerror(-rc));
    cJSON_ArrayForEach(np, have) {
        const char *name = rc_meta(np, "name"), *owner = kobj_controller_uid(np);
        struct kube_result kr = { 0 };
        char why[640];
        if (wanted(want, name) || !owner || strcmp(owner, r->uid))
            continue;
        rc = host_delete(r->ctx, &RC_RES_NETPOLS, r->ns, name, NULL, &kr);
        if (rc == 0) {
            host_log(r->ctx, LOG_INFO, "Deleted NetworkPolicy", "name", name, NULL);
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "DeletedNetworkPolicy", "Delete",
                       "Deleted NetworkPolicy %s/%s", r->ns, name);
        } else if (rc != -ENOENT) {
            kube_result_error(&kr, rc, why, sizeof(why));
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToDeleteNetworkPolicy", "Delete",
                       "Failed to delete NetworkPolicy %s/%s: %s", r->ns, name, why);
            kube_result_release(&kr);
            rc = np_fail(msg, cap, rc, "deleting NetworkPolicy %s: %s", name, why);
            break;
        }
        rc = 0;
        kube_result_release(&kr);
    }
    cJSON_Delete(have);
    return rc;
}

int raycluster__reconcile_netpol(struct rc_run *r, char *msg, size_t cap)
{
    int err = 0, rc = 0;
    const cJSON *np;
    cJSON *want;
    if (!host_feature_enabled(r->ctx, "RayClusterNetworkPolicy", false))
        return 0;
    want = rc_build_network_policies(r->rc, &err);
    if (!want && err < 0)
        return np_fail(msg, cap, err, "building the NetworkPolicies%s: %s", "", strerror(-err));
    cJSON_ArrayForEach(np, want)
        if ((rc = ensure(r, (cJSON *)np, msg, cap)) < 0)
            break;
    /* with spec.networkPolicy removed, want is NULL and every owned policy goes */
    if (rc == 0)
        rc = delete_stale(r, want, msg, cap);
    cJSON_Delete(want);
    return rc;
}

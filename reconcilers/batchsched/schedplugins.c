/*
 * schedplugins.c - KubeRay v1.7's kubernetes-sigs/scheduler-plugins integration
 * (scheduler-plugins/scheduler_plugins.go): for a RayCluster labelled
 * ray.io/gang-scheduling-enabled, a PodGroup scheduling.x-k8s.io/v1alpha1 named
 * after the cluster (created once, not updated), the pod-group label on its Pods,
 * and schedulerName scheduler-plugins-scheduler. RayCluster only: KubeRay refuses
 * a RayJob, and so does rayop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"
#include "reconcilers/host/host.h"
#include "util/util.h"

#define SP_SCHEDULER_NAME  "scheduler-plugins-scheduler"
#define SP_POD_GROUP_LABEL "scheduling.x-k8s.io/pod-group"

static const struct kube_resource RES_SP_PODGROUPS = { "scheduling.x-k8s.io", "v1alpha1",
                                                       "podgroups", 1 };

int batchsched__sp_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec)
{
    int rc;
    if (kobj_label(p->obj, BATCHSCHED_GANG_LABEL)) {
        const char *name = kobj_meta_str(p->obj, "name");
        if ((rc = batchsched__set_label(child, SP_POD_GROUP_LABEL, name ? name : "")) < 0)
            return rc;
    }
    return has_podspec ? batchsched__set_scheduler_name(child, SP_SCHEDULER_NAME) : 0;
}

cJSON *batchsched_sp_podgroup(const cJSON *rc, int *err)
{
    struct bs_reslist l;
    const cJSON *spec = kobj_get(rc, "spec"), *g;
    const char *name = kobj_meta_str(rc, "name"), *uid = kobj_meta_str(rc, "uid");
    cJSON *pg = cJSON_CreateObject(), *md, *refs, *ref, *ps;
    memset(&l, 0, sizeof(l));
    if (!pg)
        goto fail;
    /* CalculateDesiredResources: spec replicas as written, suspended groups skipped */
    batchsched__res_add_podspec(&l, kobj_get(kobj_get(kobj_get(spec, "headGroupSpec"), "template"), "spec"), 1);
    cJSON_ArrayForEach(g, kobj_get(spec, "workerGroupSpecs")) {
        const cJSON *r = kobj_get(g, "replicas"), *h = kobj_get(g, "numOfHosts");
        if (cJSON_IsTrue(kobj_get(g, "suspend")))
            continue;
        batchsched__res_add_podspec(&l, kobj_get(kobj_get(g, "template"), "spec"),
                           (cJSON_IsNumber(r) ? (int64_t)r->valuedouble : 0) *
                           (cJSON_IsNumber(h) ? (int64_t)h->valuedouble : 1));
    }
    cJSON_AddStringToObject(pg, "apiVersion", "scheduling.x-k8s.io/v1alpha1");
    cJSON_AddStringToObject(pg, "kind", "PodGroup");
    md = cJSON_AddObjectToObject(pg, "metadata");
    cJSON_AddStringToObject(md, "name", name ? name : "");
    cJSON_AddStringToObject(md, "namespace", kobj_meta_str(rc, "namespace") ?
                            kobj_meta_str(rc, "namespace") : "default");
    refs = cJSON_AddArrayToObject(md, "ownerReferences");
    ref = cJSON_CreateObject();
    cJSON_AddItemToArray(refs, ref);
    /* KubeRay's reference has no controller flag */
    cJSON_AddStringToObject(ref, "apiVersion", "ray.io/v1");
    cJSON_AddStringToObject(ref, "kind", "RayCluster");
    cJSON_AddStringToObject(ref, "name", name ? name : "");
    cJSON_AddStringToObject(ref, "uid", uid ? uid : "");
    ps = cJSON_AddObjectToObject(pg, "spec");
    cJSON_AddNumberToObject(ps, "minMember", batchsched__desired_workers(spec) + 1);
    cJSON_AddItemToObject(ps, "minResources", batchsched__res_json(&l));
    if (!kobj_get(ps, "minResources") || !kobj_str(ref, "uid"))
        goto fail;
    return pg;
fail:
    return batchsched__build_fail(pg, -ENOMEM, err);
}

int batchsched__sp_submit(struct host_ctx *ctx, const struct batchsched_parent *p, char *msg,
                 size_t msglen)
{
    cJSON *have = NULL, *want;
    struct kube_result kr = { 0 };
    int rc, err = -ENOMEM;
    const char *ns = kobj_meta_str(p->obj, "namespace"), *name = kobj_meta_str(p->obj, "name");
    if (p->is_job) {
        snprintf(msg, msglen, "currently only RayCluster is supported, got *v1.RayJob");
        return -EINVAL;
    }
    if (!kobj_label(p->obj, BATCHSCHED_GANG_LABEL))
        return 0;
    if (host_get(ctx, BATCHSCHED_SP_PG_TYPE, ns, name, &have) == 0) {
        cJSON_Delete(have);
        return 0;
    }
    if (!(want = batchsched_sp_podgroup(p->obj, &err)))
        return err;
    rc = host_create(ctx, &RES_SP_PODGROUPS, ns, want, &kr);
    if (rc == -EEXIST)
        rc = 0;
    else if (rc < 0)
        snprintf(msg, msglen, "failed to create PodGroup: %s", kube_strerror(rc));
    kube_result_release(&kr);
    cJSON_Delete(want);
    return rc;
}

/*
 * volcano.c - KubeRay v1.7's Volcano integration (volcano/volcano_scheduler.go):
 * the PodGroup scheduling.volcano.sh/v1beta1 "ray-NAME-pg" of a RayCluster, or of
 * a RayJob for the cluster it creates; its members' schedulerName, group-name and
 * task-spec annotations and copied queue / priority labels; the PodGroup kept in
 * step with scale changes and shrunk when the RayJob finishes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"
#include "reconcilers/host/host.h"
#include "util/util.h"

static const struct kube_resource RES_PODGROUPS = { "scheduling.volcano.sh", "v1beta1",
                                                    "podgroups", 1 };

static int batchsched_volcano_pg_name(const cJSON *owner, char *out, size_t cap)
{
    const char *name = kobj_meta_str(owner, "name");
    const char *crd = kobj_label(owner, "ray.io/originated-from-crd");
    const char *job = kobj_label(owner, "ray.io/originated-from-cr-name");
    if (crd && strcmp(crd, "RayJob") == 0 && job && *job)
        name = job;
    int n = snprintf(out, cap, "ray-%s-pg", name ? name : "");
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int batchsched__volcano_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec,
                     const char *group)
{
    char pg[300];
    int rc;
    if ((rc = batchsched__copy_label(p->obj, child, BATCHSCHED_VOLCANO_QUEUE_LABEL,
                                     BATCHSCHED_VOLCANO_QUEUE_LABEL)) < 0 ||
        (rc = batchsched__copy_label(p->obj, child, BATCHSCHED_PRIORITY_CLASS_LABEL,
                                     BATCHSCHED_PRIORITY_CLASS_LABEL)) < 0)
        return rc;
    if ((rc = batchsched_volcano_pg_name(p->obj, pg, sizeof(pg))) < 0 ||
        (rc = batchsched__set_annotation(child, BATCHSCHED_VOLCANO_GROUP_ANN, pg)) < 0 ||
        (rc = batchsched__set_annotation(child, BATCHSCHED_VOLCANO_TASK_SPEC_ANN, group)) < 0)
        return rc;
    return has_podspec ? batchsched__set_scheduler_name(child, "volcano") : 0;
}

/* The members and resources of owner's gang: the cluster's, plus the submitter's
 * Pod for a RayJob (K8sJobMode template, SidecarMode container). */
static int gang_params(const struct batchsched_parent *p, int32_t *members, struct bs_reslist *l)
{
    const cJSON *spec = kobj_get(p->obj, "spec");
    memset(l, 0, sizeof(*l));
    if (p->is_job) {
        const cJSON *rcs = kobj_get(spec, "rayClusterSpec");
        if (!cJSON_IsObject(rcs))
            return -EINVAL;
        *members = batchsched__cluster_params(rcs, l);
        batchsched__res_add_podspec(l, p->submitter_podspec, 1);
        return 0;
    }
    *members = batchsched__cluster_params(spec, l);
    return 0;
}

int batchsched_volcano_params(const cJSON *cluster_spec, int32_t *min_member, cJSON **res)
{
    struct bs_reslist l;
    memset(&l, 0, sizeof(l));
    *min_member = batchsched__cluster_params(cluster_spec, &l);
    *res = batchsched__res_json(&l);
    return *res ? 0 : -ENOMEM;
}

/* The whole PodGroup createPodGroup builds, in the field order Go marshals it. */
static cJSON *build_podgroup(const struct batchsched_parent *p, int32_t members,
                             const struct bs_reslist *l, int *err)
{
    char name[300];
    const char *topo_mode = kobj_label(p->obj, BATCHSCHED_VOLCANO_TOPO_MODE);
    const char *tier = kobj_label(p->obj, BATCHSCHED_VOLCANO_TOPO_TIER);
    const char *queue = kobj_label(p->obj, BATCHSCHED_VOLCANO_QUEUE_LABEL);
    const char *prio = kobj_label(p->obj, BATCHSCHED_PRIORITY_CLASS_LABEL);
    const cJSON *ann = kobj_get(kobj_get(p->obj, "metadata"), "annotations");
    cJSON *pg = cJSON_CreateObject(), *md, *spec, *v;
    int rc = -ENOMEM;
    long tier_n = 0;
    if (tier && topo_mode) {
        char *end;
        errno = 0;
        tier_n = strtol(tier, &end, 10);
        if (errno || end == tier || *end || tier_n < INT32_MIN || tier_n > INT32_MAX) {
            rc = -EINVAL;
            goto fail;
        }
    }
    if (!pg || batchsched_volcano_pg_name(p->obj, name, sizeof(name)) < 0)
        goto fail;
    cJSON_AddStringToObject(pg, "apiVersion", "scheduling.volcano.sh/v1beta1");
    cJSON_AddStringToObject(pg, "kind", "PodGroup");
    md = cJSON_AddObjectToObject(pg, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", kobj_meta_str(p->obj, "namespace") ?
                            kobj_meta_str(p->obj, "namespace") : "default");
    if (cJSON_IsObject(ann) && ann->child)
        cJSON_AddItemToObject(md, "annotations", cJSON_Duplicate(ann, 1));
    cJSON_AddItemToObject(md, "ownerReferences",
                          batchsched__controller_ref(p->obj, p->is_job ? "RayJob" : "RayCluster"));
    spec = cJSON_AddObjectToObject(pg, "spec");
    if (members)
        cJSON_AddNumberToObject(spec, "minMember", members);
    if (queue)
        cJSON_AddStringToObject(spec, "queue", queue);
    if (prio)
        cJSON_AddStringToObject(spec, "priorityClassName", prio);
    cJSON_AddItemToObject(spec, "minResources", batchsched__res_json(l));
    if (topo_mode) {
        cJSON *nt = cJSON_AddObjectToObject(spec, "networkTopology");
        if (*topo_mode)
            cJSON_AddStringToObject(nt, "mode", topo_mode);
        if (tier)
            cJSON_AddNumberToObject(nt, "highestTierAllowed", (double)tier_n);
    }
    v = cJSON_AddObjectToObject(pg, "status");
    cJSON_AddStringToObject(v, "phase", "Pending");
    if (!kobj_get(md, "ownerReferences") || !kobj_get(spec, "minResources") ||
        !kobj_str(v, "phase"))
        goto fail;
    return pg;
fail:
    return batchsched__build_fail(pg, rc, err);
}

cJSON *batchsched_volcano_podgroup(const struct batchsched_parent *p, int *err)
{
    struct bs_reslist l;
    int32_t members;
    int rc = gang_params(p, &members, &l);
    if (rc < 0) {
        if (err)
            *err = rc;
        return NULL;
    }
    return build_podgroup(p, members, &l, err);
}

/* syncPodGroup: create the PodGroup, or update minMember/minResources when they
 * differ. 1 when written, 0 when in step, or a negative errno. */
static int sync_podgroup(struct host_ctx *ctx, const struct batchsched_parent *p, int32_t members,
                         const struct bs_reslist *l, char *msg, size_t msglen)
{
    char name[300];
    cJSON *have = NULL, *want = NULL;
    struct kube_result kr = { 0 };
    int rc, err = 0;
    const char *ns = kobj_meta_str(p->obj, "namespace");
    if ((rc = batchsched_volcano_pg_name(p->obj, name, sizeof(name))) < 0)
        return rc;
    rc = host_get(ctx, BATCHSCHED_VOLCANO_PG_TYPE, ns, name, &have);
    if (rc < 0 && rc != -ENOENT) {
        /* not cached (the watcher has not listed PodGroups yet): create, and let
         * AlreadyExists tell us it is there */
        have = NULL;
    }
    if (!have) {
        if (!(want = build_podgroup(p, members, l, &err))) {
            snprintf(msg, msglen, "Failed to create pod group specification: %s",
                     err == -EINVAL ? "bad " BATCHSCHED_VOLCANO_TOPO_TIER " label" : strerror(-err));
            return err ? err : -ENOMEM;
        }
        rc = host_create(ctx, &RES_PODGROUPS, ns, want, &kr);
        if (rc == -EEXIST) {
            host_log(ctx, LOG_INFO, "podGroup already exists, no need to create", "name", name, NULL);
            rc = 0;
        } else if (rc < 0) {
            snprintf(msg, msglen, "failed to create PodGroup %s/%s: %s", ns, name, kube_strerror(rc));
        } else {
            host_log(ctx, LOG_INFO, "created PodGroup", "podGroupName", name, NULL);
            rc = 1;
        }
        goto out;
    }
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(have, "spec");
    const cJSON *mm = kobj_get(spec, "minMember");
    int32_t have_members = cJSON_IsNumber(mm) ? (int32_t)mm->valuedouble : 0;
    if (have_members == members && batchsched__res_equal(kobj_get(spec, "minResources"), l)) {
        rc = 0;
        goto out;
    }
    if (!cJSON_IsObject(spec)) {
        cJSON_DeleteItemFromObjectCaseSensitive(have, "spec");
        spec = cJSON_AddObjectToObject(have, "spec");
    }
    cJSON *res = batchsched__res_json(l);
    if (!spec || !res) {
        cJSON_Delete(res);
        rc = -ENOMEM;
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "minMember");
    if (members)
        cJSON_AddNumberToObject(spec, "minMember", members);
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "minResources");
    cJSON_AddItemToObject(spec, "minResources", res);
    rc = host_update(ctx, &RES_PODGROUPS, ns, have, &kr);
    if (rc < 0) {
        snprintf(msg, msglen, "failed to update PodGroup %s/%s: %s", ns, name, kube_strerror(rc));
    } else {
        host_log(ctx, LOG_INFO, "updated PodGroup", "podGroupName", name, NULL);
        rc = 1;
    }
out:
    kube_result_release(&kr);
    cJSON_Delete(have);
    cJSON_Delete(want);
    return rc;
}

int batchsched__volcano_submit(struct host_ctx *ctx, const struct batchsched_parent *p, char *msg,
                      size_t msglen)
{
    struct bs_reslist l;
    int32_t members;
    if (!p->is_job) {
        /* a RayJob's cluster: the RayJob owns the PodGroup */
        const char *crd = kobj_label(p->obj, "ray.io/originated-from-crd");
        if (crd && strcmp(crd, "RayJob") == 0)
            return 0;
    } else if (!cJSON_IsObject(kobj_get(kobj_get(p->obj, "spec"), "rayClusterSpec"))) {
        snprintf(msg, msglen, "gang scheduling does not support RayJob %s/%s referencing an "
                 "existing RayCluster", kobj_meta_str(p->obj, "namespace"),
                 kobj_meta_str(p->obj, "name"));
        return -EINVAL;
    }
    if (gang_params(p, &members, &l) < 0)
        return -EINVAL;
    int rc = sync_podgroup(ctx, p, members, &l, msg, msglen);
    return rc < 0 ? rc : 0;
}

int batchsched__volcano_completion(struct host_ctx *ctx, const cJSON *rj, const cJSON *cluster,
                          char *msg, size_t msglen)
{
    struct batchsched_parent p = { .obj = rj, .is_job = true };
    struct bs_reslist l;
    int32_t members = 0;
    const cJSON *sel = kobj_get(kobj_get(rj, "spec"), "clusterSelector");
    const char *cname = kobj_str(kobj_get(rj, "status"), "rayClusterName");
    if ((cJSON_IsObject(sel) && sel->child) || !cname || !*cname)
        return 0;
    memset(&l, 0, sizeof(l));
    if (!cluster)
        host_log(ctx, LOG_INFO, "RayCluster not found, updating PodGroup with empty resources",
                 "RayCluster", cname, NULL);
    else if (!kobj_meta_str(cluster, "deletionTimestamp"))
        members = batchsched__cluster_params(kobj_get(cluster, "spec"), &l);
    return sync_podgroup(ctx, &p, members, &l, msg, msglen);
}

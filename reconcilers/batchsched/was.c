/*
 * was.c - KubeRay v1.7's Kubernetes workload-aware scheduling
 * (kubernetes-was/v1alpha2, feature gate KubernetesWAS): for a RayCluster with
 * ray.io/gang-scheduling-enabled "true" and autoscaling off, a Workload NAME
 * (pod group template "cluster", gang minCount 1 + desired workers) and a
 * PodGroup NAME-cluster, both scheduling.k8s.io/v1alpha2 and controlled by the
 * cluster; its Pods keep default-scheduler and get spec.schedulingGroup. A
 * Workload or PodGroup whose minCount went stale is deleted and recreated; a
 * cluster that stops qualifying has both deleted.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"
#include "reconcilers/host/host.h"
#include "util/util.h"

#define WAS_TEMPLATE "cluster"
#define WAS_PG_FINALIZER "scheduling.k8s.io/podgroup-protection"

static const struct kube_resource RES_WORKLOADS = { "scheduling.k8s.io", "v1alpha2",
                                                    "workloads", 1 };
static const struct kube_resource RES_WAS_PODGROUPS = { "scheduling.k8s.io", "v1alpha2",
                                                        "podgroups", 1 };

static bool batchsched__was_enabled(const cJSON *rc)
{
    const char *v = kobj_label(rc, BATCHSCHED_GANG_LABEL);
    return v && strcasecmp(v, "true") == 0 &&
           !cJSON_IsTrue(kobj_get(kobj_get(rc, "spec"), "enableInTreeAutoscaling"));
}

static void pg_name(const cJSON *rc, char *out, size_t cap)
{
    snprintf(out, cap, "%s-" WAS_TEMPLATE, kobj_meta_str(rc, "name") ? kobj_meta_str(rc, "name") : "");
}

int batchsched__was_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec)
{
    char name[300];
    int rc;
    if (p->is_job || !batchsched__was_enabled(p->obj) || !has_podspec)
        return 0;
    if ((rc = batchsched__set_scheduler_name(child, "default-scheduler")) < 0)
        return rc;
    pg_name(p->obj, name, sizeof(name));
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(child, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "schedulingGroup");
    cJSON *sg = cJSON_AddObjectToObject(spec, "schedulingGroup");
    return sg && cJSON_AddStringToObject(sg, "podGroupName", name) ? 0 : -ENOMEM;
}

static cJSON *base(const cJSON *rc, const char *kind, const char *name)
{
    cJSON *o = cJSON_CreateObject(), *md, *lb;
    const char *cname = kobj_meta_str(rc, "name");
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "apiVersion", "scheduling.k8s.io/v1alpha2");
    cJSON_AddStringToObject(o, "kind", kind);
    md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", kobj_meta_str(rc, "namespace") ?
                            kobj_meta_str(rc, "namespace") : "default");
    lb = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddStringToObject(lb, "ray.io/cluster", cname ? cname : "");
    cJSON_AddItemToObject(md, "ownerReferences", batchsched__controller_ref(rc, "RayCluster"));
    if (!kobj_get(md, "ownerReferences")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *policy(const cJSON *rc)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *g = cJSON_AddObjectToObject(p, "gang");
    if (!g || !cJSON_AddNumberToObject(g, "minCount", 1 + batchsched__desired_workers(kobj_get(rc, "spec")))) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

cJSON *batchsched_was_workload(const cJSON *rc, int *err)
{
    const char *name = kobj_meta_str(rc, "name");
    cJSON *w = base(rc, "Workload", name ? name : ""), *spec, *ref, *tmpls, *t;
    if (!w)
        goto fail;
    spec = cJSON_AddObjectToObject(w, "spec");
    ref = cJSON_AddObjectToObject(spec, "controllerRef");
    cJSON_AddStringToObject(ref, "apiGroup", "ray.io");
    cJSON_AddStringToObject(ref, "kind", "RayCluster");
    cJSON_AddStringToObject(ref, "name", name ? name : "");
    tmpls = cJSON_AddArrayToObject(spec, "podGroupTemplates");
    t = cJSON_CreateObject();
    cJSON_AddItemToArray(tmpls, t);
    cJSON_AddStringToObject(t, "name", WAS_TEMPLATE);
    cJSON_AddItemToObject(t, "schedulingPolicy", policy(rc));
    if (!kobj_get(t, "schedulingPolicy") || !kobj_str(ref, "name"))
        goto fail;
    return w;
fail:
    return batchsched__build_fail(w, -ENOMEM, err);
}

cJSON *batchsched_was_podgroup(const cJSON *rc, int *err)
{
    char name[300];
    const char *cname = kobj_meta_str(rc, "name");
    pg_name(rc, name, sizeof(name));
    cJSON *pg = base(rc, "PodGroup", name), *spec, *ref, *wl;
    if (!pg)
        goto fail;
    spec = cJSON_AddObjectToObject(pg, "spec");
    ref = cJSON_AddObjectToObject(spec, "podGroupTemplateRef");
    wl = cJSON_AddObjectToObject(ref, "workload");
    cJSON_AddStringToObject(wl, "workloadName", cname ? cname : "");
    cJSON_AddStringToObject(wl, "podGroupTemplateName", WAS_TEMPLATE);
    cJSON_AddItemToObject(spec, "schedulingPolicy", policy(rc));
    if (!kobj_get(spec, "schedulingPolicy") || !kobj_str(wl, "podGroupTemplateName"))
        goto fail;
    return pg;
fail:
    return batchsched__build_fail(pg, -ENOMEM, err);
}

static bool controlled_by(const cJSON *obj, const cJSON *rc)
{
    const cJSON *ref = kobj_controller_ref(obj);
    const char *uid = kobj_meta_str(rc, "uid");
    return ref && uid && kobj_str(ref, "uid") && strcmp(kobj_str(ref, "uid"), uid) == 0;
}

static int min_count(const cJSON *policy_obj)
{
    const cJSON *v = kobj_get(kobj_get(policy_obj, "gang"), "minCount");
    return cJSON_IsNumber(v) ? (int)v->valuedouble : -1;
}

/* Deletes obj (after dropping the PodGroup protection finalizer); 0 or -errno. */
static int delete_obj(struct host_ctx *ctx, const struct kube_resource *r, cJSON *obj)
{
    struct kube_result kr = { 0 };
    const char *ns = kobj_meta_str(obj, "namespace"), *name = kobj_meta_str(obj, "name");
    cJSON *fin = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                                  "finalizers");
    int rc = 0, i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, fin) {
        if (cJSON_IsString(f) && strcmp(f->valuestring, WAS_PG_FINALIZER) == 0)
            break;
        i++;
    }
    if (f) {
        cJSON_DeleteItemFromArray(fin, i);
        rc = host_update(ctx, r, ns, obj, &kr);
        kube_result_release(&kr);
        if (rc < 0 && rc != -ENOENT)
            return rc;
    }
    if (kobj_meta_str(obj, "deletionTimestamp"))
        return 0;
    rc = host_delete(ctx, r, ns, name, NULL, &kr);
    kube_result_release(&kr);
    return rc == -ENOENT ? 0 : rc;
}

static int get(struct host_ctx *ctx, const char *type, const cJSON *rc, const char *name, cJSON **out)
{
    int r = host_get(ctx, type, kobj_meta_str(rc, "namespace"), name, out);
    if (r < 0)
        *out = NULL;
    return r == -ENOENT || r >= 0 ? 0 : r;
}

static int cleanup(struct host_ctx *ctx, const cJSON *rc, char *msg, size_t msglen)
{
    char name[300];
    cJSON *pg = NULL, *wl = NULL;
    int r;
    pg_name(rc, name, sizeof(name));
    if ((r = get(ctx, BATCHSCHED_WAS_PG_TYPE, rc, name, &pg)) < 0 ||
        (r = get(ctx, BATCHSCHED_WAS_WORKLOAD_TYPE, rc, kobj_meta_str(rc, "name"), &wl)) < 0)
        goto out;
    if (pg && controlled_by(pg, rc)) {
        if ((r = delete_obj(ctx, &RES_WAS_PODGROUPS, pg)) == 0) {
            snprintf(msg, msglen, "waiting for PodGroup %s/%s to finish deleting",
                     kobj_meta_str(rc, "namespace"), name);
            r = -EAGAIN;
        }
        goto out;
    }
    if (wl && controlled_by(wl, rc) && !kobj_meta_str(wl, "deletionTimestamp"))
        r = delete_obj(ctx, &RES_WORKLOADS, wl);
out:
    cJSON_Delete(pg);
    cJSON_Delete(wl);
    return r;
}

static int create(struct host_ctx *ctx, const struct kube_resource *res, const cJSON *obj,
                  char *msg, size_t msglen)
{
    struct kube_result kr = { 0 };
    int r = host_create(ctx, res, kobj_meta_str(obj, "namespace"), obj, &kr);
    kube_result_release(&kr);
    if (r < 0)
        snprintf(msg, msglen, "failed to create %s %s/%s: %s", kobj_str(obj, "kind"),
                 kobj_meta_str(obj, "namespace"), kobj_meta_str(obj, "name"), kube_strerror(r));
    return r;
}

int batchsched__was_submit(struct host_ctx *ctx, const struct batchsched_parent *p, char *msg,
                  size_t msglen)
{
    const cJSON *rc = p->obj;
    char name[300];
    cJSON *have_wl = NULL, *have_pg = NULL, *want_wl = NULL, *want_pg = NULL;
    int r, err = -ENOMEM;
    if (p->is_job)
        return 0;
    if (!batchsched__was_enabled(rc)) {
        host_log(ctx, LOG_INFO, "Skipping Kubernetes workload-aware scheduling", "reason",
                 kobj_label(rc, BATCHSCHED_GANG_LABEL) ? "autoscaling is not yet supported"
                 : "gang scheduling not enabled on RayCluster", NULL);
        return cleanup(ctx, rc, msg, msglen);
    }
    pg_name(rc, name, sizeof(name));
    if (!(want_wl = batchsched_was_workload(rc, &err)) || !(want_pg = batchsched_was_podgroup(rc, &err))) {
        r = err;
        goto out;
    }
    if ((r = get(ctx, BATCHSCHED_WAS_WORKLOAD_TYPE, rc, kobj_meta_str(rc, "name"), &have_wl)) < 0 ||
        (r = get(ctx, BATCHSCHED_WAS_PG_TYPE, rc, name, &have_pg)) < 0)
        goto out;
    int want = min_count(kobj_get(cJSON_GetArrayItem(kobj_get(kobj_get(want_wl, "spec"),
                                                              "podGroupTemplates"), 0),
                                  "schedulingPolicy"));
    if (!have_wl) {
        if ((r = create(ctx, &RES_WORKLOADS, want_wl, msg, msglen)) < 0 && r != -EEXIST)
            goto out;
    } else {
        const cJSON *tmpls = kobj_get(kobj_get(have_wl, "spec"), "podGroupTemplates");
        const cJSON *t0 = cJSON_GetArrayItem(tmpls, 0);
        if (!controlled_by(have_wl, rc)) {
            snprintf(msg, msglen, "Workload %s/%s already exists and is not owned by this "
                     "RayCluster; rename it or use a different RayCluster name to avoid the "
                     "collision", kobj_meta_str(rc, "namespace"), kobj_meta_str(rc, "name"));
            r = -EEXIST;
            goto out;
        }
        if (cJSON_GetArraySize(tmpls) != 1 || !kobj_str(t0, "name") ||
            strcmp(kobj_str(t0, "name"), WAS_TEMPLATE) != 0 ||
            min_count(kobj_get(t0, "schedulingPolicy")) != want) {
            if (have_pg && controlled_by(have_pg, rc)) {
                r = delete_obj(ctx, &RES_WAS_PODGROUPS, have_pg);
                snprintf(msg, msglen, "deleted PodGroup %s/%s before replacing stale Workload, "
                         "will retry after deletion completes", kobj_meta_str(rc, "namespace"), name);
            } else {
                r = delete_obj(ctx, &RES_WORKLOADS, have_wl);
                snprintf(msg, msglen, "deleted stale Workload %s/%s, will retry after deletion "
                         "completes", kobj_meta_str(rc, "namespace"), kobj_meta_str(rc, "name"));
            }
            r = r < 0 ? r : -EAGAIN;
            goto out;
        }
    }
    if (!have_pg) {
        r = create(ctx, &RES_WAS_PODGROUPS, want_pg, msg, msglen);
        r = r == -EEXIST ? 0 : r;
    } else if (!controlled_by(have_pg, rc)) {
        snprintf(msg, msglen, "PodGroup %s/%s already exists and is not owned by this RayCluster; "
                 "rename it or use a different RayCluster name to avoid the collision",
                 kobj_meta_str(rc, "namespace"), name);
        r = -EEXIST;
    } else if (min_count(kobj_get(kobj_get(have_pg, "spec"), "schedulingPolicy")) != want ||
               kobj_meta_str(have_pg, "deletionTimestamp")) {
        r = delete_obj(ctx, &RES_WAS_PODGROUPS, have_pg);
        snprintf(msg, msglen, "deleted stale PodGroup %s/%s, will retry after deletion completes",
                 kobj_meta_str(rc, "namespace"), name);
        r = r < 0 ? r : -EAGAIN;
    } else {
        r = 0;
    }
out:
    cJSON_Delete(have_wl);
    cJSON_Delete(have_pg);
    cJSON_Delete(want_wl);
    cJSON_Delete(want_pg);
    return r;
}

/*
 * select.c - which batch scheduler the operator runs with (KubeRay's
 * ValidateBatchSchedulerConfig and getSchedulerFactory), the dispatch of
 * AddMetadataToChildResource to it, and the metadata setters every scheduler
 * file uses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"

static const char *const names[] = {
    [BATCHSCHED_NONE] = "",
    [BATCHSCHED_VOLCANO] = "volcano",
    [BATCHSCHED_YUNIKORN] = "yunikorn",
    [BATCHSCHED_KAI] = "kai-scheduler",
    [BATCHSCHED_SCHEDULER_PLUGINS] = "scheduler-plugins",
    [BATCHSCHED_KUBERNETES_WAS] = "kubernetes-was-v1alpha2",
};

const char *batchsched_name(enum batchsched_kind k)
{
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "";
}

int batchsched_select(const char *name, bool enable_legacy, bool was_gate,
                      enum batchsched_kind *out, char *err, size_t errlen)
{
    bool named = name && *name;
    *out = BATCHSCHED_NONE;
    if (err && errlen)
        err[0] = '\0';
    if (was_gate) {
        if (enable_legacy || named) {
            snprintf(err, errlen, "the KubernetesWAS feature gate cannot be combined with "
                     "--batch-scheduler or --enable-batch-scheduler");
            return -EINVAL;
        }
        *out = BATCHSCHED_KUBERNETES_WAS;
        return 0;
    }
    if (enable_legacy && named) {
        snprintf(err, errlen, "both feature flags enable-batch-scheduler (deprecated) and "
                 "batch-scheduler are set. Please use batch-scheduler only");
        return -EINVAL;
    }
    if (enable_legacy) {
        *out = BATCHSCHED_VOLCANO;
        return 0;
    }
    if (!named)
        return 0;
    for (int k = BATCHSCHED_VOLCANO; k <= BATCHSCHED_SCHEDULER_PLUGINS; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = (enum batchsched_kind)k;
            return 0;
        }
    }
    snprintf(err, errlen, "scheduler is not supported, name=%s", name);
    return -EINVAL;
}

int batchsched_child_meta(enum batchsched_kind k, const struct batchsched_parent *p,
                          cJSON *child, bool has_podspec, const char *group)
{
    if (!p || !p->obj || !child)
        return 0;
    switch (k) {
    case BATCHSCHED_VOLCANO:
        return batchsched__volcano_child(p, child, has_podspec, group ? group : "");
    case BATCHSCHED_YUNIKORN:
        return batchsched__yunikorn_child(p, child, has_podspec, group ? group : "");
    case BATCHSCHED_KAI:
        return batchsched__kai_child(p, child, has_podspec);
    case BATCHSCHED_SCHEDULER_PLUGINS:
        return batchsched__sp_child(p, child, has_podspec);
    case BATCHSCHED_KUBERNETES_WAS:
        return batchsched__was_child(p, child, has_podspec);
    case BATCHSCHED_NONE:
        break;
    }
    return 0;
}

cJSON *batchsched__build_fail(cJSON *obj, int code, int *err)
{
    cJSON_Delete(obj);
    if (err)
        *err = code;
    return NULL;
}

/* ---- metadata setters ---- */

static cJSON *obj_member(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (cJSON_IsObject(o))
        return o;
    if (o)
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
    return cJSON_AddObjectToObject(parent, key);
}

cJSON *batchsched__meta_map(cJSON *obj, const char *which)
{
    cJSON *md = obj_member(obj, "metadata");
    return md ? obj_member(md, which) : NULL;
}

static int set_in(cJSON *map, const char *key, const char *val)
{
    if (!map)
        return -ENOMEM;
    cJSON *s = cJSON_CreateString(val);
    if (!s)
        return -ENOMEM;
    if (cJSON_GetObjectItemCaseSensitive(map, key))
        cJSON_ReplaceItemInObjectCaseSensitive(map, key, s);
    else
        cJSON_AddItemToObject(map, key, s);
    return 0;
}

int batchsched__set_label(cJSON *obj, const char *key, const char *val)
{
    return set_in(batchsched__meta_map(obj, "labels"), key, val);
}

int batchsched__set_annotation(cJSON *obj, const char *key, const char *val)
{
    return set_in(batchsched__meta_map(obj, "annotations"), key, val);
}

int batchsched__set_scheduler_name(cJSON *podlike, const char *name)
{
    cJSON *spec = obj_member(podlike, "spec");
    return set_in(spec, "schedulerName", name);
}

cJSON *batchsched__controller_ref(const cJSON *owner, const char *kind)
{
    cJSON *arr = cJSON_CreateArray(), *ref = cJSON_CreateObject();
    const cJSON *md = kobj_get(owner, "metadata");
    if (!arr || !ref) {
        cJSON_Delete(arr);
        cJSON_Delete(ref);
        return NULL;
    }
    cJSON_AddItemToArray(arr, ref);
    if (!cJSON_AddStringToObject(ref, "apiVersion", "ray.io/v1") ||
        !cJSON_AddStringToObject(ref, "kind", kind) ||
        !cJSON_AddStringToObject(ref, "name", kobj_str(md, "name") ? kobj_str(md, "name") : "") ||
        !cJSON_AddStringToObject(ref, "uid", kobj_str(md, "uid") ? kobj_str(md, "uid") : "") ||
        !cJSON_AddBoolToObject(ref, "controller", 1) ||
        !cJSON_AddBoolToObject(ref, "blockOwnerDeletion", 1)) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

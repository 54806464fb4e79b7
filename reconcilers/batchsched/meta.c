/*
 * meta.c - the object setters every scheduler file uses to build or annotate
 * a child: metadata labels and annotations, spec.schedulerName, the controller
 * ownerReference, and the one failure path of a builder. Below select.c and
 * the scheduler files, calling neither.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"

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

static cJSON *batchsched__meta_map(cJSON *obj, const char *which)
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

int batchsched__copy_label(const cJSON *parent, cJSON *child, const char *from, const char *to)
{
    const char *v = kobj_label(parent, from);
    if (!batchsched__meta_map(child, "labels"))
        return -ENOMEM;
    return v && *v ? batchsched__set_label(child, to, v) : 0;
}

int batchsched__set_scheduler_name(cJSON *podlike, const char *name)
{
    cJSON *spec = obj_member(podlike, "spec");
    return set_in(spec, "schedulerName", name);
}

cJSON *batchsched__controller_ref(const cJSON *owner, const char *kind)
{
    return kobj_controller_refs("ray.io/v1", kind, owner);
}

/*
 * yunikorn.c - KubeRay v1.7's Apache YuniKorn integration
 * (yunikorn/yunikorn_scheduler.go, yunikorn_task_groups.go): no objects of its
 * own; children get schedulerName yunikorn and the applicationId and queue
 * labels, and with ray.io/gang-scheduling-enabled the task-groups annotation
 * (head, each worker group at its minimum, the submitter) and their group name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"

#define APP_ID_LABEL      "yunikorn.apache.org/app-id"
#define QUEUE_LABEL       "yunikorn.apache.org/queue"
#define TASK_GROUPS_ANN   "yunikorn.apache.org/task-groups"
#define TASK_GROUP_ANN    "yunikorn.apache.org/task-group-name"

/* One TaskGroup, in the order Go marshals its fields. */
static int add_group(cJSON *arr, const char *name, int64_t members, const cJSON *podspec)
{
    struct bs_reslist l;
    cJSON *g = cJSON_CreateObject(), *res;
    const cJSON *v;
    memset(&l, 0, sizeof(l));
    batchsched__res_add_podspec(&l, podspec, 1);
    if (!g || !(res = batchsched__res_json(&l))) {
        cJSON_Delete(g);
        return -ENOMEM;
    }
    cJSON_AddItemToArray(arr, g);
    cJSON_AddItemToObject(g, "minResource", res);
    if (cJSON_IsObject(v = kobj_get(podspec, "nodeSelector")) && v->child)
        cJSON_AddItemToObject(g, "nodeSelector", cJSON_Duplicate(v, 1));
    if (cJSON_IsObject(v = kobj_get(podspec, "affinity")))
        cJSON_AddItemToObject(g, "affinity", cJSON_Duplicate(v, 1));
    cJSON_AddStringToObject(g, "name", name);
    if (cJSON_IsArray(v = kobj_get(podspec, "tolerations")) && v->child)
        cJSON_AddItemToObject(g, "tolerations", cJSON_Duplicate(v, 1));
    if (!cJSON_AddNumberToObject(g, "minMember", (double)members))
        return -ENOMEM;
    return 0;
}

char *batchsched_yunikorn_task_groups(const struct batchsched_parent *p)
{
    const cJSON *spec = kobj_get(p->obj, "spec"), *g;
    cJSON *arr = cJSON_CreateArray();
    char *out = NULL;
    int rc = 0;
    if (!arr)
        return NULL;
    if (p->is_job)
        spec = kobj_get(spec, "rayClusterSpec");
    /* a RayJob without rayClusterSpec has no groups but the submitter's
     * (KubeRay would dereference nil there; an empty cluster part is the safe reading) */
    if (cJSON_IsObject(spec)) {
        rc = add_group(arr, BATCHSCHED_HEAD_GROUP, 1,
                       kobj_get(kobj_get(kobj_get(spec, "headGroupSpec"), "template"), "spec"));
        cJSON_ArrayForEach(g, kobj_get(spec, "workerGroupSpecs")) {
            const cJSON *mr = kobj_get(g, "minReplicas"), *nh = kobj_get(g, "numOfHosts");
            int64_t min = cJSON_IsNumber(mr) ? (int64_t)mr->valuedouble : 0;
            int64_t hosts = cJSON_IsNumber(nh) ? (int64_t)nh->valuedouble : 1;
            if (rc == 0)
                rc = add_group(arr, kobj_str(g, "groupName") ? kobj_str(g, "groupName") : "",
                               min * hosts, kobj_get(kobj_get(g, "template"), "spec"));
        }
    }
    if (rc == 0 && p->is_job)
        rc = add_group(arr, BATCHSCHED_SUBMITTER_GROUP, 1, p->submitter_podspec);
    if (rc == 0)
        out = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return out;
}

int batchsched__yunikorn_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec,
                      const char *group)
{
    int rc;
    if ((rc = batchsched__copy_label(p->obj, child, APP_ID_LABEL, "applicationId")) < 0 ||
        (rc = batchsched__copy_label(p->obj, child, QUEUE_LABEL, "queue")) < 0)
        return rc;
    if (has_podspec && (rc = batchsched__set_scheduler_name(child, "yunikorn")) < 0)
        return rc;
    if (!kobj_label(p->obj, BATCHSCHED_GANG_LABEL))
        return 0;
    const char *have = kobj_annotation(p->obj, TASK_GROUPS_ANN);
    if (have && *have) {
        rc = batchsched__set_annotation(child, TASK_GROUPS_ANN, have);
    } else {
        char *tg = batchsched_yunikorn_task_groups(p);
        rc = tg ? batchsched__set_annotation(child, TASK_GROUPS_ANN, tg) : -ENOMEM;
        free(tg);
    }
    if (rc == 0 && *group)
        rc = batchsched__set_annotation(child, TASK_GROUP_ANN, group);
    return rc;
}

/* fuzz_batchsched.c - the batch-scheduler builders on arbitrary JSON taken as the
 * parent (a RayCluster, or a RayJob with the same JSON's "submitter" member as its
 * submitter Pod spec): every scheduler's child metadata on a Pod and on a RayCluster,
 * the Volcano PodGroup and params, YuniKorn's task groups (and a task-groups
 * annotation already on the parent), the scheduler-plugins PodGroup, the WAS Workload
 * and PodGroup. The first byte picks RayCluster / RayJob. No crash, no leak, no
 * undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/batchsched/batchsched.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;
    int err = 0;
    int32_t mm;
    cJSON *obj, *res = NULL;
    if (!(s = fuzz_text(data, size, 65536)))
        return 0;
    obj = cJSON_ParseWithOpts(s, NULL, 0);
    free(s);
    if (!obj)
        return 0;
    struct batchsched_parent p = { .obj = obj, .is_job = data[0] & 1,
                                   .submitter_podspec = cJSON_GetObjectItem(obj, "submitter") };
    for (int k = BATCHSCHED_VOLCANO; k <= BATCHSCHED_KUBERNETES_WAS; k++) {
        cJSON *pod = cJSON_Parse("{\"metadata\":{},\"spec\":{\"containers\":[]}}");
        cJSON *rc = cJSON_Parse("{\"metadata\":{\"labels\":{}},\"spec\":{}}");
        (void)batchsched_child_meta((enum batchsched_kind)k, &p, pod, true, "g");
        (void)batchsched_child_meta((enum batchsched_kind)k, &p, rc, false, "");
        cJSON_Delete(pod);
        cJSON_Delete(rc);
    }
    cJSON_Delete(batchsched_volcano_podgroup(&p, &err));
    if (batchsched_volcano_params(cJSON_GetObjectItem(obj, "spec"), &mm, &res) == 0)
        cJSON_Delete(res);
    free(batchsched_yunikorn_task_groups(&p));
    cJSON_Delete(batchsched_sp_podgroup(obj, &err));
    cJSON_Delete(batchsched_was_workload(obj, &err));
    cJSON_Delete(batchsched_was_podgroup(obj, &err));
    cJSON_Delete(obj);
    return 0;
}

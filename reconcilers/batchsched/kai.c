/*
 * kai.c - KubeRay v1.7's NVIDIA KAI-Scheduler integration
 * (kai-scheduler/kai_scheduler.go): children get schedulerName kai-scheduler and
 * the parent's kai.scheduler/queue label (without it KAI leaves them Pending);
 * a RayJob in K8sJobMode is refused, its submitter would come after the gang.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"

#define KAI_QUEUE_LABEL "kai.scheduler/queue"

int batchsched__kai_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec)
{
    const char *q = kobj_label(p->obj, KAI_QUEUE_LABEL);
    int rc;
    if (has_podspec && (rc = batchsched__set_scheduler_name(child, "kai-scheduler")) < 0)
        return rc;
    if (!q || !*q)
        return 0; /* KubeRay logs it: the child stays pending */
    return batchsched__set_label(child, KAI_QUEUE_LABEL, q);
}

int batchsched__kai_submit(const struct batchsched_parent *p, char *msg, size_t msglen)
{
    const char *mode = kobj_str(kobj_get(p->obj, "spec"), "submissionMode");
    if (p->is_job && (!mode || !*mode || strcmp(mode, "K8sJobMode") == 0)) {
        snprintf(msg, msglen, "KAI-Scheduler does not support RayJob with K8sJobMode: the "
                 "submitter pod is created after RayCluster is ready, preventing proper gang "
                 "scheduling");
        return -EINVAL;
    }
    return 0;
}

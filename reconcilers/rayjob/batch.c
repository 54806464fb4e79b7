/*
 * batch.c - the RayJob controller's side of the batch-scheduler hooks
 * (reconcilers/batchsched): DoBatchSchedulingOnSubmission while Initializing,
 * AddMetadataToChildResource on the RayCluster it creates (K8sJobMode, as
 * KubeRay) and on the submitter Job's Pod template, CleanupOnCompletion with
 * KubeRay's BatchSchedulerCleanedUp / FailedToCleanupBatchScheduler Events.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/batchsched.h"
#include "reconcilers/host/host.h"
#include "reconcilers/rayjob/internal.h"
#include "util/util.h"

static enum batchsched_kind kind_of(const struct host_ctx *ctx)
{
    return ctx->settings ? (enum batchsched_kind)ctx->settings->batch_scheduler : BATCHSCHED_NONE;
}

/* The Pod spec the submitter runs with: the K8sJobMode Job's template spec, the
 * SidecarMode container; NULL otherwise. *hold owns what it points into. */
static const cJSON *submitter_podspec(const cJSON *rj, cJSON **hold)
{
    const char *mode = rj_mode(rj);
    const cJSON *st = kobj_get(rj, "status");
    int err = 0;
    *hold = NULL;
    if (strcmp(mode, "K8sJobMode") == 0) {
        if (!(*hold = rj_build_submitter(rj, NULL, st, &err)))
            return NULL;
        return kobj_get(kobj_get(kobj_get(*hold, "spec"), "template"), "spec");
    }
    if (strcmp(mode, "SidecarMode") == 0) {
        cJSON *c = rj_build_cluster(rj, st, false, &err), *pc;
        const cJSON *ctr;
        if (!c)
            return NULL;
        cJSON_ArrayForEach(ctr, kobj_get(kobj_get(kobj_get(kobj_get(kobj_get(c, "spec"),
                           "headGroupSpec"), "template"), "spec"), "containers")) {
            if (kobj_str(ctr, "name") && strcmp(kobj_str(ctr, "name"), RJ_SUBMITTER_CONTAINER) == 0)
                break;
        }
        if (!ctr || !(*hold = cJSON_CreateObject()) ||
            !(pc = cJSON_AddArrayToObject(*hold, "containers"))) {
            cJSON_Delete(c);
            return NULL;
        }
        cJSON_AddItemToArray(pc, cJSON_Duplicate(ctr, 1));
        cJSON_Delete(c);
        return *hold;
    }
    return NULL;
}

int rayjob__batch_submit(struct host_ctx *ctx, const cJSON *rj, char *msg, size_t msglen)
{
    enum batchsched_kind k = kind_of(ctx);
    cJSON *hold;
    if (k == BATCHSCHED_NONE)
        return 0;
    struct batchsched_parent p = { .obj = rj, .is_job = true };
    p.submitter_podspec = submitter_podspec(rj, &hold);
    int rc = batchsched_submit(ctx, k, &p, msg, msglen);
    cJSON_Delete(hold);
    if (rc < 0) {
        host_log(ctx, LOG_ERROR, "batch scheduling failed", "scheduler", batchsched_name(k),
                 "error", msg, NULL);
        /* rayop's addition: KubeRay only returns the error; the Event says why the
         * RayJob stays Initializing */
        host_event(ctx, rj, HOST_EVENT_WARNING, "FailedToSubmitToBatchScheduler", "Create",
                   "%s", msg[0] ? msg : kube_strerror(rc));
    }
    return rc;
}

int rayjob__batch_child(struct host_ctx *ctx, const cJSON *rj, cJSON *obj, bool submitter_job)
{
    enum batchsched_kind k = kind_of(ctx);
    cJSON *hold;
    int rc = 0;
    if (k == BATCHSCHED_NONE || !obj)
        return 0;
    /* KubeRay tags the RayCluster only in K8sJobMode */
    if (!submitter_job && strcmp(rj_mode(rj), "K8sJobMode") != 0)
        return 0;
    struct batchsched_parent p = { .obj = rj, .is_job = true };
    p.submitter_podspec = submitter_podspec(rj, &hold);
    if (submitter_job) {
        cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                                       "template");
        if (tmpl)
            rc = batchsched_child_meta(k, &p, tmpl, true, BATCHSCHED_SUBMITTER_GROUP);
    } else {
        rc = batchsched_child_meta(k, &p, obj, false, "");
    }
    cJSON_Delete(hold);
    return rc;
}

void rayjob__batch_cleanup(struct host_ctx *ctx, const cJSON *rj, const cJSON *cluster)
{
    enum batchsched_kind k = kind_of(ctx);
    char msg[400];
    if (k == BATCHSCHED_NONE)
        return;
    int rc = batchsched_completion(ctx, k, rj, cluster, msg, sizeof(msg));
    const char *ns = kobj_meta_str(rj, "namespace"), *name = kobj_meta_str(rj, "name");
    if (rc < 0)
        host_event(ctx, rj, HOST_EVENT_WARNING, "FailedToCleanupBatchScheduler", "Cleanup",
                   "Failed to cleanup batch scheduler resources for RayJob %s/%s: %s", ns, name,
                   msg[0] ? msg : kube_strerror(rc));
    else if (rc > 0)
        host_event(ctx, rj, HOST_EVENT_NORMAL, "BatchSchedulerCleanedUp", "Cleanup",
                   "Cleaned up batch scheduler resources for RayJob %s/%s", ns, name);
}

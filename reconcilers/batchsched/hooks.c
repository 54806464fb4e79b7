/*
 * hooks.c - DoBatchSchedulingOnSubmission and CleanupOnCompletion dispatched to
 * the selected scheduler (the RayCluster reconcile calls the first before its
 * Pods, the RayJob reconcile while Initializing; the second when a RayJob ends).
 */
#include <errno.h>
#include <stdio.h>

#include "reconcilers/batchsched/internal.h"

int batchsched_submit(struct host_ctx *ctx, enum batchsched_kind k,
                      const struct batchsched_parent *p, char *msg, size_t msglen)
{
    if (msglen)
        msg[0] = '\0';
    switch (k) {
    case BATCHSCHED_VOLCANO:
        return batchsched__volcano_submit(ctx, p, msg, msglen);
    case BATCHSCHED_KAI:
        return batchsched__kai_submit(p, msg, msglen);
    case BATCHSCHED_SCHEDULER_PLUGINS:
        return batchsched__sp_submit(ctx, p, msg, msglen);
    case BATCHSCHED_KUBERNETES_WAS:
        return batchsched__was_submit(ctx, p, msg, msglen);
    case BATCHSCHED_YUNIKORN:
    case BATCHSCHED_NONE:
        break;
    }
    return 0;
}

int batchsched_completion(struct host_ctx *ctx, enum batchsched_kind k, const cJSON *rayjob,
                          const cJSON *cluster, char *msg, size_t msglen)
{
    if (msglen)
        msg[0] = '\0';
    return k == BATCHSCHED_VOLCANO ? batchsched__volcano_completion(ctx, rayjob, cluster, msg, msglen) : 0;
}

/*
 * kinds.c - the registration table of `rayop controller KIND`.
 *
 * raycluster is reconcilers/raycluster/, rayjob reconcilers/rayjob/.
 * rayservice is reconcilers/rayservice/. The
 * "test" kind exercises the whole host end to end on the raycluster queue: it
 * writes (a merge patch of two annotations, guarded by the resourceVersion it
 * read) so read-your-writes is observable, and annotations on the object steer
 * it for tests:
 *   rayop.io/test-sleep-ms: N      sleep N ms (<= 60000) before acting
 *   rayop.io/test-fail: error|terminal   return that outcome instead of writing
 * It writes rayop.io/test-observed-generation = metadata.generation only when
 * they differ, so one spec change gives exactly one write; a reconcile that read
 * a cache older than its own previous write would write again (or hit a 409
 * Conflict, logged as "stale read"), which the integration test counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kobj/kobj.h"
#include "reconcilers/host/host.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/raycronjob/raycronjob.h"
#include "reconcilers/rayjob/rayjob.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/util.h"

#define RC_TYPE "ray.io/v1/rayclusters"

static const char *const rc_types[] = { RC_TYPE, "v1/pods", "v1/services", NULL };
static const char *const rj_types[] = { "ray.io/v1/rayjobs", RC_TYPE, "batch/v1/jobs", "v1/pods",
                                         NULL };
static const char *const rs_types[] = { "ray.io/v1/rayservices", RC_TYPE, "v1/services", "v1/pods",
                                         "discovery.k8s.io/v1/endpointslices", NULL };
static const char *const test_types[] = { RC_TYPE, NULL };

static int test_reconcile(struct host_ctx *ctx, struct host_result *res)
{
    cJSON *obj = NULL;
    int rc = host_get(ctx, RC_TYPE, ctx->ns, ctx->name, &obj);
    if (rc == -ENOENT) {
        host_log(ctx, LOG_INFO, "test reconcile: gone", NULL);
        return 0;
    }
    if (rc < 0)
        return rc;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(m, "generation");
    const cJSON *rvj = cJSON_GetObjectItemCaseSensitive(m, "resourceVersion");
    char rv[IPC_RV_MAX];   /* copied: obj is freed before the write */
    snprintf(rv, sizeof(rv), "%s", cJSON_IsString(rvj) ? rvj->valuestring : "");
    char want[32];
    snprintf(want, sizeof(want), "%.0f", cJSON_IsNumber(gen) ? gen->valuedouble : 0.0);
    const char *sleep_ms = kobj_annotation(obj, "rayop.io/test-sleep-ms");
    const char *fail = kobj_annotation(obj, "rayop.io/test-fail");
    const char *seen = kobj_annotation(obj, "rayop.io/test-observed-generation");
    host_log(ctx, LOG_INFO, "test reconcile", "resourceVersion", rv, "generation", want,
             "observed", seen ? seen : "", NULL);
    if (sleep_ms) {
        long ms = strtol(sleep_ms, NULL, 10);
        if (ms > 0 && ms <= 60000) {
            struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    if (fail && (strcmp(fail, "error") == 0 || strcmp(fail, "terminal") == 0)) {
        res->outcome = fail[0] == 'e' ? HOST_ERROR : HOST_TERMINAL;
        snprintf(res->message, sizeof(res->message), "test-fail annotation: %s", fail);
        cJSON_Delete(obj);
        return 0;
    }
    if (seen && strcmp(seen, want) == 0) {
        cJSON_Delete(obj);
        return 0;
    }
    /* guarded by the rv we read: a stale cache shows up as a 409, not a silent overwrite */
    char patch[256];
    int n = snprintf(patch, sizeof(patch),
                     "{\"metadata\":{\"resourceVersion\":\"%s\",\"annotations\":"
                     "{\"rayop.io/test-observed-generation\":\"%s\"}}}", rv, want);
    cJSON_Delete(obj);
    if (n < 0 || (size_t)n >= sizeof(patch))
        return -EINVAL;
    struct kube_result kr = { 0 };
    struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
    rc = host_patch(ctx, &KUBE_RES_RAYCLUSTERS, ctx->ns, ctx->name, patch, (size_t)n, &po, &kr);
    if (rc == -ESTALE)
        host_log(ctx, LOG_WARN, "stale read: conflict writing from the cached object",
                 "readResourceVersion", rv, NULL);
    else if (rc == 0)
        host_log(ctx, LOG_INFO, "test write", "generation", want,
                 "resourceVersion", kr.resource_version, NULL);
    kube_result_release(&kr);
    return rc;
}

const struct host_kind host_kinds[] = {
    { "raycluster", "raycluster", rc_types, rc_reconcile,
      "RayCluster (reconcilers/raycluster: Pods, Services, status, events)", rc_metrics },
    { "rayjob", "rayjob", rj_types, rayjob_reconcile,
      "RayJob (reconcilers/rayjob: RayCluster, submitter, dashboard, status, events)",
      rayjob_metrics },
    { "rayservice", "rayservice", rs_types, rayservice_reconcile,
      "RayService (reconcilers/rayservice: RayClusters, Serve, Services, upgrades, status)",
      rayservice_metrics },
    { "raycronjob", "raycronjob", raycronjob_cache_types, raycronjob_reconcile,
      "RayCronJob: a RayJob from spec.jobTemplate at each tick of spec.schedule" },
    { "test", "raycluster", test_types, test_reconcile,
      "host self-test on the raycluster queue (writes an annotation)" },
};
const size_t host_nkinds = sizeof(host_kinds) / sizeof(host_kinds[0]);

const struct host_kind *host_kind_find(const char *name)
{
    for (size_t i = 0; name && i < host_nkinds; i++)
        if (strcmp(host_kinds[i].name, name) == 0)
            return &host_kinds[i];
    return NULL;
}

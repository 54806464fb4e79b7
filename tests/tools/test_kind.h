/*
 * test_kind.h - the host self-test kind, for test builds only (bin/rayop_test and
 * the host unit tests); bin/rayop does not carry it. It exercises the whole host
 * end to end on the raycluster queue: it writes (a merge patch of one annotation,
 * guarded by the resourceVersion it read) so read-your-writes is observable, and
 * annotations on the object steer it:
 *   rayop.io/test-sleep-ms: N      sleep N ms (<= 60000) before acting
 *   rayop.io/test-fail: error|terminal   return that outcome instead of writing
 * It writes rayop.io/test-observed-generation = metadata.generation only when they
 * differ, so one spec change gives exactly one write; a reconcile that read a cache
 * older than its own previous write would write again (or hit a 409 Conflict,
 * logged as "stale read"), which tests/integration/host.sh counts.
 */
#ifndef RAYOP_TESTS_TEST_KIND_H
#define RAYOP_TESTS_TEST_KIND_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kobj/kobj.h"
#include "reconcilers/host/host.h"
#include "util/util.h"

#define TEST_KIND_RC_TYPE "ray.io/v1/rayclusters"

static const char *const test_kind_types[] = { TEST_KIND_RC_TYPE, NULL };

static int test_kind_reconcile(struct host_ctx *ctx, struct host_result *res)
{
    cJSON *obj = NULL;
    int rc = host_get(ctx, TEST_KIND_RC_TYPE, ctx->ns, ctx->name, &obj);
    if (rc == -ENOENT) {
        host_log(ctx, LOG_INFO, "test reconcile: gone", NULL);
        return 0;
    }
    if (rc < 0)
        return rc;
    const cJSON *gen = kobj_get(kobj_get(obj, "metadata"), "generation");
    const char *rvs = kobj_meta_str(obj, "resourceVersion");
    char rv[IPC_RV_MAX];   /* copied: obj is freed before the write */
    snprintf(rv, sizeof(rv), "%s", rvs ? rvs : "");
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

static const struct host_kind host_test_kind = {
    "test", "raycluster", test_kind_types, test_kind_reconcile,
    "host self-test on the raycluster queue (writes an annotation; test builds only)", NULL,
};

#endif

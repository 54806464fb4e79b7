/*
 * reconcile_delete.c - GCS fault tolerance cleanup, as KubeRay v1.7's
 * rayClusterReconcile does it before anything else: a cluster with Redis-backed
 * GCS FT gets the finalizer ray.io/gcs-ft-redis-cleanup-finalizer; when it is
 * deleted, its Pods are deleted, the head is waited for (the GCS must stop
 * writing), then the Redis cleanup Job runs and the finalizer is removed when
 * the Job finishes (completed or failed). A cleanup stuck past
 * ray.io/gcs-ft-deletion-timeout (300 s) has the finalizer removed with the
 * Warning Event ForceDeletedStuckCluster. ENABLE_GCS_FT_REDIS_CLEANUP=false
 * turns it all off; the embedded (rocksdb) backend only drops a stale finalizer.
 *
 * The cleanup Job is read and created through the API server, not the cache:
 * KubeRay does not watch it either (it requeues every 2 s), and a Job the cache
 * might not select must not hold the key behind a read-your-writes gate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

static bool has_finalizer(const cJSON *rc)
{
    return kobj_has_finalizer(rc, RC_FINALIZER_GCS_FT);
}

/* Adds or removes our finalizer with a merge patch guarded by the read rv (a
 * concurrent change is a 409, retried, never lost). */
static int set_finalizer(struct rc_run *r, bool add)
{
    struct kube_result kr = { 0 };
    int rc = host_patch_finalizer(r->ctx, &KUBE_RES_RAYCLUSTERS, r->rc, RC_FINALIZER_GCS_FT, add,
                                  &kr);
    kube_result_release(&kr);
    return rc;
}

static bool embedded_backend(const cJSON *rc)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rc, "spec"),
                                         "gcsFaultToleranceOptions"), "backend");
    return cJSON_IsString(b) && strcmp(b->valuestring, "rocksdb") == 0;
}

/* "Complete" or "Failed" when the Job has that condition True, else NULL. */
static const char *job_finished(const cJSON *job)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(job, "status"), "conditions")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (!cJSON_IsString(t) || !cJSON_IsString(s) || strcmp(s->valuestring, "True") != 0)
            continue;
        if (strcmp(t->valuestring, "Complete") == 0)
            return "Complete";
        if (strcmp(t->valuestring, "Failed") == 0)
            return "Failed";
    }
    return NULL;
}

static double deletion_age_s(const cJSON *rc)
{
    time_t t;
    if (util_parse_time(rc_meta(rc, "deletionTimestamp"), &t) < 0)
        return 0;
    return difftime(time(NULL), t);
}

/* The deletion path of a GCS FT cluster. Always finishes the reconcile. */
static int cleanup_on_delete(struct rc_run *r, struct host_result *res)
{
    res->outcome = HOST_REQUEUE_AFTER;
    res->after_ms = RC_REQUEUE_SHORT_MS;
    cJSON *pods = NULL, *job = NULL;
    int rc = host_list_cluster(r->ctx, "v1/pods", r->ns, r->name, &pods);
    if (rc < 0)
        return rc;
    int heads = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        const char *t = kobj_label(p, RC_LABEL_NODE_TYPE);
        if (t && (strcmp(t, RC_NODE_HEAD) == 0 || strcmp(t, RC_NODE_WORKER) == 0)) {
            heads += strcmp(t, RC_NODE_HEAD) == 0;
            struct kube_result kr = { 0 };
            if (!raycluster__pod_terminating(p) &&
                (rc = host_delete(r->ctx, &KUBE_RES_PODS, r->ns, rc_meta(p, "name"), NULL, &kr)) < 0 &&
                rc != -ENOENT) {
                kube_result_release(&kr);
                goto out;
            }
            kube_result_release(&kr);
        }
    }
    rc = 0;
    if (heads) {
        host_log(r->ctx, LOG_INFO, "Wait for the head Pod to be terminated before initiating the "
                 "Redis cleanup process.", NULL);
        res->after_ms = RC_REQUEUE_HEAD_GONE_MS;
        goto out;
    }
    int err = 0;
    if (!(job = rc_build_redis_cleanup_job(r->rc, &r->bo, &err))) {
        rc = err < 0 ? err : -EINVAL;
        goto out;
    }
    const char *jname = rc_meta(job, "name");
    struct kube_client *kc = host_kube(r->ctx);
    struct kube_result kr = { 0 };
    if (!kc) {
        rc = -ENOTCONN;
        goto out;
    }
    if (deletion_age_s(r->rc) >= rc_gcs_ft_deletion_timeout(r->rc)) {
        host_log(r->ctx, LOG_INFO, "Force-removing GCS FT finalizer: Redis cleanup job stuck "
                 "past timeout", NULL);
        if ((rc = set_finalizer(r, false)) == 0) {
            const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(r->rc, "metadata"), "annotations");
            const cJSON *sn = cJSON_GetObjectItemCaseSensitive(ann, RC_ANN_EXTERNAL_STORAGE_NS);
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "ForceDeletedStuckCluster", "Cleanup",
                       "Force-removed GCS FT finalizer after %.0fs due to Redis cleanup timeout; "
                       "Redis storage namespace \"%s\" may need manual cleanup",
                       deletion_age_s(r->rc), cJSON_IsString(sn) ? sn->valuestring : "");
            res->outcome = HOST_OK;
        }
        goto out;
    }
    rc = kube_get(kc, &KUBE_RES_JOBS, r->ns, jname, &kr);
    if (rc == 0) {
        const char *done = job_finished(kr.body);
        kube_result_release(&kr);
        if (!done)
            goto out;   /* still running: look again in 2 s */
        if ((rc = set_finalizer(r, false)) < 0)
            goto out;
        host_log(r->ctx, LOG_INFO, strcmp(done, "Complete") == 0 ?
                 "The Redis cleanup Job has been completed. The storage namespace in Redis has "
                 "been fully deleted." :
                 "The Redis cleanup Job has failed. You should manually delete the storage "
                 "namespace in Redis.", "redisCleanupJobName", jname, NULL);
        res->outcome = HOST_OK;
        goto out;
    }
    kube_result_release(&kr);
    if (rc != -ENOENT)
        goto out;
    rc = kube_create(kc, &KUBE_RES_JOBS, r->ns, job, &kr);
    kube_result_release(&kr);
    if (rc == -EEXIST) {
        rc = 0;
    } else if (rc < 0) {
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateRedisCleanupJob", "Create",
                   "Failed to create Redis cleanup Job %s/%s, %s", r->ns, jname, kube_strerror(rc));
    } else {
        host_log(r->ctx, LOG_INFO, "Created Redis cleanup Job", "name", jname, NULL);
        host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "CreatedRedisCleanupJob", "Create",
                   "Created Redis cleanup Job %s/%s", r->ns, jname);
    }
out:
    cJSON_Delete(job);
    cJSON_Delete(pods);
    return rc;
}

int raycluster__reconcile_finalizer(struct rc_run *r, struct host_result *res)
{
    bool deleting = *rc_meta(r->rc, "deletionTimestamp") != '\0';
    const char *env = getenv("ENABLE_GCS_FT_REDIS_CLEANUP");
    bool cleanup = !env || strcasecmp(env, "false") != 0;
    int rc;

    if (deleting && embedded_backend(r->rc) && has_finalizer(r->rc)) {
        /* switched from Redis to rocksdb: nothing to clean, drop the stale finalizer */
        if ((rc = set_finalizer(r, false)) < 0)
            return rc;
        res->outcome = HOST_OK;
        return 1;
    }
    if (!cleanup || !rc_gcs_ft_enabled(r->rc) || embedded_backend(r->rc))
        return 0;
    if (!deleting) {
        if (has_finalizer(r->rc))
            return 0;
        host_log(r->ctx, LOG_INFO, "GCS fault tolerance has been enabled. Implementing a "
                 "finalizer to ensure that Redis is properly cleaned up once the RayCluster "
                 "custom resource (CR) is deleted.", NULL);
        if ((rc = set_finalizer(r, true)) < 0)
            return rc;
        /* only start reconciling after the finalizer is there */
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = RC_REQUEUE_SHORT_MS;
        return 1;
    }
    if (!has_finalizer(r->rc))
        return 0;
    rc = cleanup_on_delete(r, res);
    return rc < 0 ? rc : 1;
}

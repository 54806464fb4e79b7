/*
 * decide.c - the RayJob state machine as a pure function: rj_decide() takes
 * what one reconcile observed (struct rj_in) and returns the plan (struct
 * rj_plan): the status to write, the writes to make, the requeue. It follows
 * KubeRay v1.7's RayJobReconciler.Reconcile branch by branch: New ->
 * Initializing -> (Waiting) -> Running -> Complete | Failed, with Suspending /
 * Suspended, Retrying (backoffLimit) and ValidationFailed; the reasons and
 * messages are KubeRay's. The terminal states' cleanup (TTL, deletion rules)
 * is in terminal.c.
 *
 * Status writes follow updateRayJobStatus: only when jobStatus,
 * jobDeploymentStatus, the RayCluster status or the status-check failure time
 * changed; the write carries every field the reconcile changed, and endTime
 * when the new state is terminal.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/host/host.h"
#include "reconcilers/rayjob/internal.h"
#include "kobj/json_equal.h"
#include "kobj/kobj.h"

static int st_int(cJSON *st, const char *key, int64_t v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(st, key);
    return cJSON_AddNumberToObject(st, key, (double)v) ? 0 : -ENOMEM;
}

/* Go's time.Time String() for the messages KubeRay formats with %v. */
static void go_time(int64_t ms, char out[48])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 48, "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
}

/* time.DateTime layout ("2006-01-02 15:04:05"). */
static void go_datetime(int64_t ms, char out[48])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 48, "%Y-%m-%d %H:%M:%S", &tm);
}

static void plan_error(struct rj_plan *p, int err, const char *msg)
{
    p->error = err;
    snprintf(p->error_msg, sizeof(p->error_msg), "%s", msg);
    rayjob__plan_requeue(p, RJ_REQUEUE_MS);
}

bool rj_wants_job_info(const cJSON *rayjob)
{
    return !*rj_str(rayjob, "metadata.deletionTimestamp") &&
           strcmp(rj_str(rayjob, "status.jobDeploymentStatus"), "Running") == 0 &&
           *rj_str(rayjob, "status.jobId");
}

/* ---- the transitions every active state checks first ------------------------ */

static bool to_suspending(const cJSON *rj, cJSON *st)
{
    const char *d = rj_str(st, "jobDeploymentStatus");
    if (!rj_bool(rj, "spec.suspend") || (strcmp(d, "Running") != 0 && strcmp(d, "Initializing") != 0))
        return false;
    rayjob__st_set(st, "jobDeploymentStatus", "Suspending");
    return true;
}

static bool fail_deadline(const struct rj_in *in, cJSON *st, const char *field,
                          const char *reason, const char *what)
{
    int64_t secs, start = rj_parse_time_ms(rj_str(st, "startTime"));
    char spec[64], msg[256], t[48];
    snprintf(spec, sizeof(spec), "spec.%s", field);
    if (rj_int(in->rayjob, spec, &secs) < 0)
        return false;
    if (start < 0)
        start = 0;   /* Go's zero time: long past */
    if (in->now_ms < start + secs * 1000)
        return false;
    go_time(start, t);
    snprintf(msg, sizeof(msg), "The RayJob has passed the %s. StartTime: %s. %s: %lld", field, t,
             what, (long long)secs);
    rayjob__st_set(st, "jobDeploymentStatus", "Failed");
    rayjob__st_set(st, "reason", reason);
    rayjob__st_set(st, "message", msg);
    return true;
}

static bool active_deadline(const struct rj_in *in, cJSON *st)
{
    return fail_deadline(in, st, "activeDeadlineSeconds", "DeadlineExceeded",
                         "ActiveDeadlineSeconds");
}

static bool prerunning_deadline(const struct rj_in *in, cJSON *st)
{
    return fail_deadline(in, st, "preRunningDeadlineSeconds", "PreRunningDeadlineExceeded",
                         "PreRunningDeadlineSeconds");
}

/* checkTransitionGracePeriodAndUpdateStatusIfNeeded */
static bool grace_period(const struct rj_in *in, cJSON *st)
{
    const char *js = rj_str(st, "jobStatus");
    if (!rj_job_terminal(js) || strcmp(rj_str(st, "jobDeploymentStatus"), "Running") != 0)
        return false;
    int64_t end = rj_parse_time_ms(rj_str(st, "rayJobInfo.endTime"));
    if (end < 0 || in->now_ms < end + (int64_t)in->cfg.grace_period_s * 1000)
        return false;
    rayjob__st_set(st, "jobDeploymentStatus", strcmp(js, "FAILED") == 0 ? "Failed" : "Complete");
    rayjob__st_set(st, "reason", "JobDeploymentStatusTransitionGracePeriodExceeded");
    rayjob__st_set(st, "message", "JobDeploymentStatus does not transition to Complete or Failed "
                   "within the grace period after JobStatus reaches a terminal state.");
    return true;
}

/* checkJobStatusCheckTimeoutAndUpdateStatusIfNeeded */
static bool status_check_timeout(const struct rj_in *in, cJSON *st)
{
    int64_t since = rj_parse_time_ms(rj_str(st, "jobStatusCheckFailureStartTime"));
    int64_t timeout = (int64_t)in->cfg.status_check_timeout_s * 1000;
    char msg[256], t[48];
    if (since < 0 || in->now_ms < since + timeout)
        return false;
    go_datetime(since, t);
    snprintf(msg, sizeof(msg), "Job status checks have been failing since %s; exceeded timeout of %ds",
             t, in->cfg.status_check_timeout_s);
    rayjob__st_set(st, "jobDeploymentStatus", "Failed");
    rayjob__st_set(st, "reason", "JobStatusCheckTimeoutExceeded");
    rayjob__st_set(st, "message", msg);
    return true;
}

/* recordJobStatusCheckFailure: true when the timer starts now (write it). */
static bool record_check_failure(const struct rj_in *in, cJSON *st)
{
    if (*rj_str(st, "jobStatusCheckFailureStartTime"))
        return false;
    rayjob__st_time(st, "jobStatusCheckFailureStartTime", in->now_ms);
    return true;
}

/* getOrCreateRayClusterInstance: BREAK-less; false when the reconcile must
 * return an error (the selected cluster does not exist). */
static bool need_cluster(const struct rj_in *in, struct rj_plan *p)
{
    if (in->cluster)
        return true;
    const char *ns = rj_str(in->rayjob, "metadata.namespace");
    const char *name = rj_str(p->status, "rayClusterName");
    if (rj_has_selector(in->rayjob)) {
        char msg[256];
        rayjob__plan_event(p, HOST_EVENT_WARNING, "RayClusterNotFound", "Validate",
                           "RayCluster %s/%s set in the clusterSelector is not found. It must be "
                           "created manually", ns, name);
        snprintf(msg, sizeof(msg), "clusterSelector mode is enabled, but RayCluster %s/%s is not "
                 "found", ns, name);
        plan_error(p, -ENOENT, msg);
        return false;
    }
    p->actions |= RJ_CREATE_CLUSTER;
    return true;
}

static const cJSON *cluster_status(const struct rj_in *in)
{
    return in->cluster ? cJSON_GetObjectItemCaseSensitive(in->cluster, "status") : NULL;
}

/* ---- the states ------------------------------------------------------------ */

/* initRayJobStatusIfNeed */
static void init_status(const struct rj_in *in, cJSON *st)
{
    const cJSON *rj = in->rayjob;
    const char *name = rj_str(rj, "metadata.name");
    char buf[320];
    if (strcmp(rj_mode(rj), "InteractiveMode") != 0 && !*rj_str(st, "jobId")) {
        const char *id = rj_str(rj, "spec.jobId");
        snprintf(buf, sizeof(buf), "%s-%s", name, in->suffix_job);
        rayjob__st_set(st, "jobId", *id ? id : buf);
    }
    if (!*rj_str(st, "rayClusterName")) {
        const cJSON *cs = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(rj, "spec"), "clusterSelector");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(cs, "ray.io/cluster");
        snprintf(buf, sizeof(buf), "%s-%s", name, in->suffix_cluster);
        rayjob__st_set(st, "rayClusterName", cJSON_IsString(c) && *c->valuestring ? c->valuestring : buf);
    }
    rayjob__st_set(st, "jobDeploymentStatus", "Initializing");
    rayjob__st_time(st, "startTime", in->now_ms);
}

static enum flow state_new(const struct rj_in *in, struct rj_plan *p)
{
    const cJSON *fins = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(in->rayjob, "metadata"), "finalizers");
    bool have = false;
    const cJSON *f;
    cJSON_ArrayForEach(f, fins)
        have |= cJSON_IsString(f) && strcmp(f->valuestring, RJ_FINALIZER) == 0;
    if (!have)
        p->actions |= RJ_ADD_FINALIZER;
    /* jobStatus "" is JobStatusNew, so KubeRay always re-initialises here */
    init_status(in, p->status);
    return BREAK;
}

static enum flow state_initializing(const struct rj_in *in, struct rj_plan *p)
{
    cJSON *st = p->status;
    const char *mode = rj_mode(in->rayjob);
    if (to_suspending(in->rayjob, st) || active_deadline(in, st) || prerunning_deadline(in, st))
        return BREAK;
    if (!need_cluster(in, p))
        return RETURN;
    if (!*rj_str(st, "dashboardURL")) {
        const cJSON *cst = cluster_status(in);
        if (strcmp(rj_str(cst, "state"), "ready") != 0) {
            kobj_set_copy(st, "rayClusterStatus", cst);
            return BREAK;
        }
        if (!in->dashboard_url || !*in->dashboard_url) {
            plan_error(p, -ENOENT, "Failed to get the dashboard URL after the RayCluster is ready");
            return RETURN;
        }
        rayjob__st_set(st, "dashboardURL", in->dashboard_url);
    }
    if (strcmp(mode, "InteractiveMode") == 0) {
        rayjob__st_set(st, "jobDeploymentStatus", "Waiting");
        return BREAK;
    }
    if (strcmp(mode, "K8sJobMode") == 0 && !in->submitter)
        p->actions |= RJ_CREATE_SUBMITTER;
    rayjob__st_set(st, "jobDeploymentStatus", "Running");
    return BREAK;
}

static enum flow state_waiting(const struct rj_in *in, struct rj_plan *p)
{
    if (prerunning_deadline(in, p->status))
        return BREAK;
    const char *id = rj_str(in->rayjob, "spec.jobId");
    if (!*id) {
        rayjob__plan_requeue(p, RJ_REQUEUE_MS);
        return RETURN;
    }
    rayjob__st_set(p->status, "jobId", id);
    rayjob__st_set(p->status, "jobDeploymentStatus", "Running");
    return BREAK;
}

/* A finished submitter: *finished_ms is set (>= 0) once it ended. true when
 * the submitter failed and the status was moved to Failed. */
static bool check_submitter(const struct rj_in *in, struct rj_plan *p, int64_t *finished_ms,
                            bool *error)
{
    cJSON *st = p->status;
    bool app_failed = strcmp(rj_str(st, "jobStatus"), "FAILED") == 0;
    char msg[640];
    *finished_ms = -1;
    *error = false;
    if (strcmp(rj_mode(in->rayjob), "SidecarMode") == 0) {
        if (!in->head_pod) {
            rayjob__st_set(st, "jobDeploymentStatus", "Failed");
            rayjob__st_set(st, "reason", "AppFailed");
            rayjob__st_set(st, "message", "Ray head pod not found.");
            return true;
        }
        return rayjob__check_sidecar(in, p, finished_ms);
    }
    if (!in->submitter) {
        plan_error(p, -ENOENT, "Failed to get the submitter Kubernetes Job for RayJob");
        *error = true;
        return false;
    }
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(in->submitter, "status"), "conditions");
    const cJSON *c;
    bool failed = false;
    cJSON_ArrayForEach(c, conds) {
        const char *type = rj_str(c, "type");
        if (strcmp(rj_str(c, "status"), "True") != 0)
            continue;
        if (strcmp(type, "Failed") == 0 && !failed) {
            failed = true;
            rayjob__st_set(st, "jobDeploymentStatus", "Failed");
            if (app_failed) {
                rayjob__st_set(st, "reason", "AppFailed");
            } else {
                snprintf(msg, sizeof(msg), "Job submission has failed. Reason: %s. Message: %s",
                         rj_str(c, "reason"), rj_str(c, "message"));
                rayjob__st_set(st, "reason", "SubmissionFailed");
                rayjob__st_set(st, "message", msg);
            }
        }
        if ((strcmp(type, "Complete") == 0 || strcmp(type, "Failed") == 0) && *finished_ms < 0)
            *finished_ms = rj_parse_time_ms(rj_str(c, "lastTransitionTime"));
    }
    return failed;
}

/* checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded */
static bool submitter_finished_timeout(const struct rj_in *in, cJSON *st, int64_t finished)
{
    char msg[256], t[48];
    if (finished < 0 || in->now_ms < finished + RJ_SUBMITTER_FINISHED_TIMEOUT_S * 1000)
        return false;
    go_datetime(finished, t);
    snprintf(msg, sizeof(msg), "The RayJob submitter finished at %s but the ray job did not reach "
             "terminal state within %ds", t, RJ_SUBMITTER_FINISHED_TIMEOUT_S);
    rayjob__st_set(st, "jobStatus", "FAILED");
    rayjob__st_set(st, "jobDeploymentStatus", "Failed");
    rayjob__st_set(st, "reason", "JobDeploymentStatusTransitionGracePeriodExceeded");
    rayjob__st_set(st, "message", msg);
    return true;
}

static enum flow state_running(const struct rj_in *in, struct rj_plan *p)
{
    cJSON *st = p->status;
    const char *mode = rj_mode(in->rayjob);
    bool has_submitter = strcmp(mode, "K8sJobMode") == 0 || strcmp(mode, "SidecarMode") == 0;
    int64_t finished = -1;
    if (to_suspending(in->rayjob, st) || active_deadline(in, st) || grace_period(in, st) ||
        status_check_timeout(in, st))
        return BREAK;
    if (!need_cluster(in, p))
        return RETURN;
    if (!rj_has_selector(in->rayjob) && in->cluster)
        p->actions |= RJ_HEAD_SERVICE;   /* reconcileServices */
    if (has_submitter) {
        bool err;
        bool failed = check_submitter(in, p, &finished, &err);
        if (err)
            return RETURN;
        if (submitter_finished_timeout(in, st, finished) || failed)
            return BREAK;
    }
    int rc = in->info_rc == RJ_INFO_NONE ? -ENOTCONN : in->info_rc;
    if (rc == -EINPROGRESS) {
        /* the dashboard has not answered yet (a slow head): nothing is known, nothing
         * failed; the answer is taken by a later reconcile */
        rayjob__plan_requeue(p, RJ_DASH_PENDING_MS);
        return RETURN;
    }
    p->info_used = true;
    if (rc == -ENOENT) {
        if (strcmp(mode, "HTTPMode") == 0) {
            p->actions |= RJ_SUBMIT_HTTP;   /* rj_after_submit decides the status */
            rayjob__plan_requeue(p, RJ_REQUEUE_MS);
            return RETURN;
        }
        if (finished >= 0) {
            rayjob__st_set(st, "jobDeploymentStatus", "Failed");
            rayjob__st_set(st, "reason", "AppFailed");
            rayjob__st_set(st, "message", "Submitter completed but Ray job not found in RayCluster.");
            return BREAK;
        }
        rayjob__plan_requeue(p, RJ_REQUEUE_MS);
        return RETURN;
    }
    if (rc < 0) {
        if (record_check_failure(in, st))
            return BREAK;
        rayjob__plan_requeue(p, RJ_REQUEUE_MS);
        return RETURN;
    }
    const struct dash_job_info *info = in->info;
    cJSON_DeleteItemFromObjectCaseSensitive(st, "jobStatusCheckFailureStartTime");
    const char *deploy = "Running", *reason = "";
    bool terminal = rj_job_terminal(info->status) && (!has_submitter || finished >= 0);
    if (terminal) {
        deploy = "Complete";
        if (strcmp(info->status, "FAILED") == 0) {
            deploy = "Failed";
            reason = "AppFailed";
        }
    }
    kobj_set_copy(st, "rayClusterStatus", cluster_status(in));
    rayjob__st_set(st, "jobStatus", info->status);
    rayjob__st_set(st, "jobDeploymentStatus", deploy);
    rayjob__st_set(st, "reason", reason);
    rayjob__st_set(st, "message", info->message);
    cJSON *ji = cJSON_GetObjectItemCaseSensitive(st, "rayJobInfo");
    if (!cJSON_IsObject(ji)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "rayJobInfo");
        ji = cJSON_AddObjectToObject(st, "rayJobInfo");
    }
    if (ji && info->start_time_ms)
        rayjob__st_time(ji, "startTime", (int64_t)info->start_time_ms);
    if (ji && info->end_time_ms)
        rayjob__st_time(ji, "endTime", (int64_t)info->end_time_ms);
    return BREAK;
}

/* Suspending and Retrying: release the compute, then reset the status. */
static enum flow state_releasing(const struct rj_in *in, struct rj_plan *p, bool retrying)
{
    cJSON *st = p->status;
    bool gone = true;
    if (!rj_has_selector(in->rayjob) && in->cluster) {
        gone = false;
        if (!*rj_str(in->cluster, "metadata.deletionTimestamp"))
            p->actions |= RJ_DELETE_CLUSTER;
    }
    if (strcmp(rj_mode(in->rayjob), "K8sJobMode") == 0 && in->submitter) {
        gone = false;
        if (!*rj_str(in->submitter, "metadata.deletionTimestamp"))
            p->actions |= RJ_DELETE_SUBMITTER;
    }
    if (!gone) {
        /* wait for the deletions before moving on, so nothing leaks */
        rayjob__plan_requeue(p, RJ_REQUEUE_MS);
        return RETURN;
    }
    static const char *const reset[] = { "rayClusterStatus", "rayClusterName", "dashboardURL",
                                         "jobId", "message", "reason", "rayJobInfo",
                                         "jobStatusCheckFailureStartTime", "jobStatus" };
    for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(st, reset[i]);
    rayjob__st_set(st, "jobDeploymentStatus", retrying ? "" : "Suspended");
    return BREAK;
}

static enum flow state_suspended(const struct rj_in *in, struct rj_plan *p)
{
    if (!rj_bool(in->rayjob, "spec.suspend")) {
        cJSON_DeleteItemFromObjectCaseSensitive(p->status, "jobStatus");
        rayjob__st_set(p->status, "jobDeploymentStatus", "");
        return BREAK;
    }
    return RETURN;   /* stays suspended; no requeue */
}

/* checkBackoffLimitAndUpdateStatusIfNeeded */
static void backoff(const struct rj_in *in, cJSON *st)
{
    int64_t failed = 0, succeeded = 0, limit;
    const char *d = rj_str(st, "jobDeploymentStatus");
    (void)rj_int(st, "failed", &failed);
    (void)rj_int(st, "succeeded", &succeeded);
    if (strcmp(d, "Failed") == 0)
        failed++;
    if (strcmp(rj_str(st, "jobStatus"), "SUCCEEDED") == 0 && strcmp(d, "Complete") == 0)
        succeeded++;
    st_int(st, "failed", failed);
    st_int(st, "succeeded", succeeded);
    if (strcmp(d, "Failed") != 0 || rj_int(in->rayjob, "spec.backoffLimit", &limit) < 0 ||
        failed >= limit + 1)
        return;
    const char *reason = rj_str(st, "reason");
    if (strcmp(reason, "DeadlineExceeded") == 0 || strcmp(reason, "JobStatusCheckTimeoutExceeded") == 0)
        return;
    rayjob__st_set(st, "jobDeploymentStatus", "Retrying");
}

/* utils.InconsistentRayClusterStatus on the JSON form. */
static bool cluster_status_changed(const cJSON *a, const cJSON *b)
{
    static const char *const fields[] = { "state", "reason", "readyWorkerReplicas",
                                          "availableWorkerReplicas", "desiredWorkerReplicas",
                                          "minWorkerReplicas", "maxWorkerReplicas", "endpoints",
                                          "head", "conditions" };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const cJSON *x = a ? cJSON_GetObjectItemCaseSensitive(a, fields[i]) : NULL;
        const cJSON *y = b ? cJSON_GetObjectItemCaseSensitive(b, fields[i]) : NULL;
        if (!json_equal(x, y))
            return true;
    }
    return false;
}

/* updateRayJobStatus: keep the status in the plan only if it must be written. */
static void keep_if_changed(const struct rj_in *in, struct rj_plan *p)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(in->rayjob, "status");
    cJSON *st = p->status;
    static const char *const keys[] = { "jobStatus", "jobDeploymentStatus",
                                        "jobStatusCheckFailureStartTime" };
    int64_t gen, seen;
    bool has_gen = rj_int(in->rayjob, "metadata.generation", &gen) == 0;
    bool changed = cluster_status_changed(cJSON_GetObjectItemCaseSensitive(old, "rayClusterStatus"),
                                          cJSON_GetObjectItemCaseSensitive(st, "rayClusterStatus"));
    bool state_changed;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !changed; i++)
        changed = strcmp(rj_str(old, keys[i]), rj_str(st, keys[i])) != 0;
    state_changed = changed;
    /* KubeRay never writes observedGeneration of a RayJob; rayop does, and a spec change
     * that moves no state (a new ttlSecondsAfterFinished, activeDeadlineSeconds...) must
     * still be acknowledged, or the field stays behind for good (RayCluster had the same
     * gap). A status KubeRay wrote (no observedGeneration) gets it with its next change. */
    if (!changed && has_gen && rj_int(old, "observedGeneration", &seen) == 0 && seen != gen)
        changed = true;
    p->write_status = changed;
    if (!changed)
        return;
    if (state_changed && rj_deploy_terminal(rj_str(st, "jobDeploymentStatus")))
        rayjob__st_time(st, "endTime", in->now_ms);
    if (has_gen)
        st_int(st, "observedGeneration", gen);
}

/* A path that writes nothing (KubeRay's early returns: a finished job waiting for its TTL,
 * a suspended one...) still acknowledges a new generation when it has nothing else to do:
 * the status as it was, with observedGeneration current. */
static int ack_generation(const struct rj_in *in, struct rj_plan *p)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(in->rayjob, "status");
    int64_t gen, seen;
    cJSON *st;

    if (p->actions || rj_int(in->rayjob, "metadata.generation", &gen) < 0 ||
        rj_int(old, "observedGeneration", &seen) < 0 || seen == gen)
        return 0;
    if (!(st = cJSON_Duplicate(old, 1)))
        return -ENOMEM;
    cJSON_Delete(p->status);
    p->status = st;
    p->write_status = true;
    return st_int(st, "observedGeneration", gen);
}

/* The finalizer path of a RayJob being deleted. */
static void deleting(const struct rj_in *in, struct rj_plan *p)
{
    if (!rj_job_terminal(rj_str(in->rayjob, "status.jobStatus")))
        p->actions |= RJ_STOP_JOB;
    const cJSON *f, *fins = cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(in->rayjob, "metadata"), "finalizers");
    cJSON_ArrayForEach(f, fins)
        if (cJSON_IsString(f) && strcmp(f->valuestring, RJ_FINALIZER) == 0)
            p->actions |= RJ_REMOVE_FINALIZER;
    rayjob__plan_requeue(p, RJ_REQUEUE_MS);
}

int rj_decide(const struct rj_in *in, struct rj_plan *p)
{
    memset(p, 0, sizeof(*p));
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(in->rayjob, "status");
    p->status = cJSON_IsObject(old) ? cJSON_Duplicate(old, 1) : cJSON_CreateObject();
    if (!p->status)
        return -ENOMEM;
    if (*rj_str(in->rayjob, "metadata.deletionTimestamp")) {
        deleting(in, p);
        return 0;
    }
    struct rj_invalid why;
    if (rj_validate(in->rayjob, &in->cfg, &why) < 0) {
        rayjob__plan_event(p, HOST_EVENT_WARNING, why.reason, "Validate", "%s/%s: %s",
                           rj_str(in->rayjob, "metadata.namespace"),
                           rj_str(in->rayjob, "metadata.name"), why.message);
        rayjob__st_set(p->status, "jobDeploymentStatus", "ValidationFailed");
        rayjob__st_set(p->status, "reason", "ValidationFailed");
        rayjob__st_set(p->status, "message", why.message);
        keep_if_changed(in, p);
        return 0;   /* no requeue: the next spec change brings it back */
    }
    const char *d = rj_str(p->status, "jobDeploymentStatus");
    enum flow f;
    if (!*d)
        f = state_new(in, p);
    else if (strcmp(d, "Initializing") == 0)
        f = state_initializing(in, p);
    else if (strcmp(d, "Waiting") == 0)
        f = state_waiting(in, p);
    else if (strcmp(d, "Running") == 0)
        f = state_running(in, p);
    else if (strcmp(d, "Suspending") == 0 || strcmp(d, "Retrying") == 0)
        f = state_releasing(in, p, strcmp(d, "Retrying") == 0);
    else if (strcmp(d, "Suspended") == 0)
        f = state_suspended(in, p);
    else if (rj_deploy_terminal(d))
        f = rayjob__terminal(in, p);
    else {
        rayjob__plan_requeue(p, RJ_REQUEUE_MS);   /* unknown (e.g. ValidationFailed) */
        f = RETURN;
    }
    if (f == RETURN)
        return ack_generation(in, p);   /* KubeRay returns before updateRayJobStatus */
    backoff(in, p->status);
    keep_if_changed(in, p);
    rayjob__plan_requeue(p, RJ_REQUEUE_MS);
    return 0;
}

int rj_after_submit(const struct rj_in *in, struct rj_plan *p, int rc)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(in->rayjob, "status");
    cJSON_Delete(p->status);
    p->status = cJSON_IsObject(old) ? cJSON_Duplicate(old, 1) : cJSON_CreateObject();
    p->write_status = false;
    if (!p->status)
        return -ENOMEM;
    bool write;
    if (rc == -EINPROGRESS) {
        /* the submission is still out: its answer is taken by a later reconcile */
        rayjob__plan_requeue(p, RJ_DASH_PENDING_MS);
        return 0;
    }
    if (rc < 0) {
        /* KubeRay counts "submission id already used" as a failed check too; the next
         * GetJobInfo finds the job and stops the timer */
        write = record_check_failure(in, p->status);
    } else {
        /* submitted (or already there): a running timer stops */
        write = *rj_str(p->status, "jobStatusCheckFailureStartTime") != '\0';
        cJSON_DeleteItemFromObjectCaseSensitive(p->status, "jobStatusCheckFailureStartTime");
    }
    if (write) {
        backoff(in, p->status);
        keep_if_changed(in, p);
    }
    rayjob__plan_requeue(p, RJ_REQUEUE_MS);
    return 0;
}

void rj_plan_free(struct rj_plan *p)
{
    if (!p)
        return;
    cJSON_Delete(p->status);
    p->status = NULL;
}

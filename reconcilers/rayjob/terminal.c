/*
 * terminal.c - what the RayJob state machine does once the job is over
 * (Complete / Failed) and the SidecarMode submitter checks: KubeRay's
 * handleDeletionRules (the most destructive overdue rule first, one action per
 * reconcile, requeue for the next pending one), handleLegacyDeletionPolicy
 * (onSuccess / onFailure with ttlSecondsAfterFinished), and
 * handleShutdownAfterJobFinishes (delete the RayCluster, or the RayJob itself
 * with DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, after the TTL). A RayJob on a
 * cluster picked by clusterSelector never deletes anything.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reconcilers/rayjob/internal.h"

/* The deletion policies by impact (selectMostImpactfulRule). */
static int impact(const char *policy)
{
    if (strcmp(policy, "DeleteSelf") == 0)
        return 4;
    if (strcmp(policy, "DeleteCluster") == 0)
        return 3;
    if (strcmp(policy, "DeleteWorkers") == 0)
        return 2;
    if (strcmp(policy, "DeleteNone") == 0)
        return 1;
    return 0;
}

static unsigned action_of(const char *policy)
{
    switch (impact(policy)) {
    case 4: return RJ_DELETE_SELF;
    case 3: return RJ_DELETE_CLUSTER;
    case 2: return RJ_SUSPEND_WORKERS;
    default: return 0;
    }
}

/* isDeletionActionCompleted, on what the cache shows. */
static bool action_done(const struct rj_in *in, const char *policy)
{
    const cJSON *c = in->cluster;
    bool gone = !c || *rj_str(c, "metadata.deletionTimestamp");
    switch (impact(policy)) {
    case 2: {
        if (gone)
            return true;
        const cJSON *g, *groups = cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(c, "spec"), "workerGroupSpecs");
        cJSON_ArrayForEach(g, groups)
            if (!rj_bool(g, "suspend"))
                return false;
        return true;
    }
    case 3:
        return gone;
    case 4:
        return false;
    default:
        return true;
    }
}

static int64_t end_ms(const struct rj_in *in)
{
    int64_t e = rj_parse_time_ms(rj_str(in->rayjob, "status.endTime"));
    return e < 0 ? 0 : e;   /* Go's zero time: the TTL is long over */
}

/* requeueDelayFor: until t, plus 2 s. */
static void requeue_at(struct rj_plan *p, const struct rj_in *in, int64_t t)
{
    rayjob__plan_requeue(p, t - in->now_ms + 2000);
}

static enum flow deletion_rules(const struct rj_in *in, struct rj_plan *p, const cJSON *rules)
{
    const cJSON *rule, *pick = NULL;
    int64_t next = -1;
    const char *js = rj_str(in->rayjob, "status.jobStatus");
    const char *ds = rj_str(in->rayjob, "status.jobDeploymentStatus");
    cJSON_ArrayForEach(rule, rules) {
        const cJSON *cond = cJSON_GetObjectItemCaseSensitive(rule, "condition");
        const cJSON *cjs = cJSON_GetObjectItemCaseSensitive(cond, "jobStatus");
        bool matched = cJSON_IsString(cjs) ? strcmp(cjs->valuestring, js) == 0
                                           : strcmp(rj_str(cond, "jobDeploymentStatus"), ds) == 0;
        if (!matched)
            continue;
        int64_t ttl = 0;
        (void)rj_int(cond, "ttlSeconds", &ttl);
        int64_t when = end_ms(in) + ttl * 1000;
        if (in->now_ms < when) {
            if (next < 0 || when < next)
                next = when;
            continue;
        }
        const char *policy = rj_str(rule, "policy");
        if (action_done(in, policy))
            continue;
        if (!pick || impact(policy) > impact(rj_str(pick, "policy")))
            pick = rule;
    }
    if (pick)
        p->actions |= action_of(rj_str(pick, "policy"));
    if (next >= 0)
        requeue_at(p, in, next);
    return RETURN;
}

static enum flow legacy_policy(const struct rj_in *in, struct rj_plan *p, const cJSON *strategy)
{
    const char *js = rj_str(in->rayjob, "status.jobStatus"), *policy;
    if (strcmp(js, "SUCCEEDED") == 0)
        policy = rj_str(strategy, "onSuccess.policy");
    else if (strcmp(js, "FAILED") == 0)
        policy = rj_str(strategy, "onFailure.policy");
    else
        return RETURN;
    if (strcmp(policy, "DeleteNone") == 0)
        return RETURN;
    int64_t ttl = 0;
    (void)rj_int(in->rayjob, "spec.ttlSecondsAfterFinished", &ttl);
    int64_t when = end_ms(in) + ttl * 1000;
    if (when > in->now_ms) {
        requeue_at(p, in, when);
        return RETURN;
    }
    p->actions |= action_of(policy);
    return RETURN;
}

enum flow rayjob__terminal(const struct rj_in *in, struct rj_plan *p)
{
    const cJSON *rj = in->rayjob;
    if (rj_has_selector(rj))
        return RETURN;   /* never delete a cluster we did not create */
    const cJSON *strategy = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rj, "spec"), "deletionStrategy");
    if (in->cfg.deletion_policy_gate && cJSON_IsObject(strategy)) {
        const cJSON *rules = cJSON_GetObjectItemCaseSensitive(strategy, "deletionRules");
        if (cJSON_IsArray(rules))
            return deletion_rules(in, p, rules);
        return legacy_policy(in, p, strategy);
    }
    if (!rj_bool(rj, "spec.shutdownAfterJobFinishes"))
        return RETURN;
    int64_t ttl = 0;
    (void)rj_int(rj, "spec.ttlSecondsAfterFinished", &ttl);
    int64_t when = end_ms(in) + ttl * 1000;
    if (when > in->now_ms) {
        requeue_at(p, in, when);
        return RETURN;
    }
    /* the submitter Job stays: its Pod has the driver logs and uses nothing */
    p->actions |= in->cfg.delete_cr_after_finish ? RJ_DELETE_SELF : RJ_DELETE_CLUSTER;
    return RETURN;
}

bool rayjob__check_sidecar(const struct rj_in *in, struct rj_plan *p, int64_t *finished_ms)
{
    cJSON *st = p->status;
    const cJSON *cs, *statuses = cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(in->head_pod, "status"),
                         "containerStatuses");
    const cJSON *mine = NULL;
    bool failed = false;
    char msg[512];
    cJSON_ArrayForEach(cs, statuses)
        if (strcmp(rj_str(cs, "name"), RJ_SUBMITTER_CONTAINER) == 0) {
            mine = cs;
            break;
        }
    if (!mine)
        return false;
    const cJSON *term = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(mine, "state"), "terminated");
    int64_t code = 0, restarts = 0;
    (void)rj_int(term, "exitCode", &code);
    (void)rj_int(mine, "restartCount", &restarts);
    if (!in->cfg.sidecar_restart_gate) {
        if (term && code != 0) {
            failed = true;
            snprintf(msg, sizeof(msg), "Ray head pod container %s terminated with exit code %lld: %s",
                     RJ_SUBMITTER_CONTAINER, (long long)code, rj_str(term, "reason"));
        }
    } else if (cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(mine, "lastState"), "terminated") &&
               !(term && code == 0)) {
        int64_t limit = 2;
        (void)rj_int(in->rayjob, "spec.submitterConfig.backoffLimit", &limit);
        if (restarts >= limit) {
            failed = true;
            snprintf(msg, sizeof(msg), "Ray head pod submitter container %s terminated after "
                     "exceeding the maximum restart count", RJ_SUBMITTER_CONTAINER);
        }
    }
    if (failed) {
        rayjob__st_set(st, "jobDeploymentStatus", "Failed");
        if (strcmp(rj_str(st, "jobStatus"), "FAILED") == 0) {
            rayjob__st_set(st, "reason", "AppFailed");
        } else {
            rayjob__st_set(st, "reason", "SubmissionFailed");
            rayjob__st_set(st, "message", msg);
        }
    }
    if (term)
        *finished_ms = rj_parse_time_ms(rj_str(term, "finishedAt"));
    return failed;
}

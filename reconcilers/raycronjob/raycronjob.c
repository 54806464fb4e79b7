/*
 * raycronjob.c - the RayCronJob reconcile loop (raycronjob.h).
 *
 * One pass, as KubeRay v1.7's RayCronJobReconciler.Reconcile:
 *   validate (Warning Event InvalidRayCronJobSpec, no retry) -> suspended?
 *   (Normal Event SuspendedRayCronJob, stop) -> the next tick after
 *   status.lastScheduleTime (or creationTimestamp) -> in the future: requeue
 *   at it -> else create the RayJob "<name>-<unix minutes>" from jobTemplate
 *   (AlreadyExists counts as done: the name is deterministic per tick) ->
 *   status.lastScheduleTime = tick -> requeue at the tick after.
 * Missed ticks are caught up one RayJob per pass: the status write is itself
 * an event for this key, so the next pass follows at once (KubeRay has no
 * startingDeadlineSeconds, concurrencyPolicy or history limits; neither has
 * its CRD, whose schema would prune such fields).
 *
 * Reads come from the shared cache; writes go through host_* so the next
 * pass sees them (read-your-writes). The status write is a merge patch of
 * the status subresource guarded by the resourceVersion read, so a stale
 * cache shows as a 409 and a retry, never as a lost or doubled tick.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/raycronjob/raycronjob.h"
#include "util/util.h"

const struct kube_resource RCJ_RES_RAYCRONJOBS = { "ray.io", "v1", "raycronjobs", 1 };
const char *const raycronjob_cache_types[] = { RCJ_CACHE_TYPE, NULL };

static const cJSON *get_path(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    return b ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

static const char *get_str(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = get_path(o, a, b);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* ValidateRayJobSpec on the template: KubeRay validates a RayJob that has only
 * the template as its spec (no name, no status); rj_validate also checks the
 * name, so the stand-in gets one that always passes. */
static int validate_template(const cJSON *tpl, const struct rj_config *cfg, char *err,
                             size_t errlen)
{
    struct rj_invalid why;
    cJSON *fake = cJSON_CreateObject(), *md = cJSON_CreateObject();
    if (!fake || !md || !cJSON_AddItemToObject(fake, "metadata", md) ||
        !cJSON_AddStringToObject(md, "name", "template") ||
        !cJSON_AddItemReferenceToObject(fake, "spec", (cJSON *)tpl)) {
        if (!cJSON_GetObjectItemCaseSensitive(fake, "metadata"))
            cJSON_Delete(md);
        cJSON_Delete(fake);
        return -ENOMEM;
    }
    int rc = rj_validate(fake, cfg, &why);
    cJSON_Delete(fake);
    if (rc == -EINVAL)
        snprintf(err, errlen, "invalid RayJob template: %s", why.message);
    return rc;
}

int raycronjob_validate(const cJSON *rcj, const struct rj_config *cfg,
                        struct cron_schedule *sched, struct tz **zone, char *err, size_t errlen)
{
    const char *name = get_str(rcj, "metadata", "name");
    const char *schedule = get_str(rcj, "spec", "schedule");
    const cJSON *tzj = get_path(rcj, "spec", "timeZone");
    char why[300];
    *zone = NULL;
    if (name && strlen(name) > RCJ_NAME_MAX) {
        snprintf(err, errlen, "RayCronJob name should be no more than %d characters",
                 RCJ_NAME_MAX);
        return -EINVAL;
    }
    if (schedule && strstr(schedule, "TZ")) {
        snprintf(err, errlen, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
        return -EINVAL;
    }
    if (cron_parse(schedule ? schedule : "", sched, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "invalid cron schedule: %s", why);
        return -EINVAL;
    }
    int rc;
    if (tzj && !cJSON_IsNull(tzj)) {
        if (!cJSON_IsString(tzj) || !*tzj->valuestring) {
            snprintf(err, errlen, "timeZone must not be empty string, omit the field to use "
                     "the local time zone of the KubeRay operator");
            return -EINVAL;
        }
        if ((rc = tz_load(tzj->valuestring, zone, why, sizeof(why))) < 0) {
            if (rc == -ENOMEM)
                return rc;
            snprintf(err, errlen, "invalid time zone: %s", why);
            return -EINVAL;
        }
    } else if ((rc = tz_load_local(zone)) < 0) {
        return rc;
    }
    const cJSON *tpl = get_path(rcj, "spec", "jobTemplate");
    if (!cJSON_IsObject(tpl)) {
        snprintf(err, errlen, "invalid RayJob template: spec.jobTemplate must be an object");
        rc = -EINVAL;
    } else {
        rc = validate_template(tpl, cfg, err, errlen);
    }
    if (rc < 0) {
        tz_free(*zone);
        *zone = NULL;
    }
    return rc;
}

void raycronjob_child_name(const char *cronjob, int64_t t, char *out, size_t cap)
{
    /* Go's integer division truncates toward zero; ticks are after 1970 anyway */
    snprintf(out, cap, "%s-%lld", cronjob, (long long)(t / 60));
}

cJSON *raycronjob_child(const cJSON *rcj, int64_t t)
{
    const char *name = get_str(rcj, "metadata", "name");
    const char *ns = get_str(rcj, "metadata", "namespace");
    const char *uid = get_str(rcj, "metadata", "uid");
    char child[300], ts[32];
    if (!name || !uid)
        return NULL;
    raycronjob_child_name(name, t, child, sizeof(child));
    util_format_time((time_t)t, ts);
    cJSON *o = cJSON_CreateObject(), *m, *refs, *spec;
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "apiVersion", "ray.io/v1");
    cJSON_AddStringToObject(o, "kind", "RayJob");
    m = cJSON_AddObjectToObject(o, "metadata");
    if (!m)
        goto fail;
    cJSON_AddStringToObject(m, "name", child);
    if (ns)
        cJSON_AddStringToObject(m, "namespace", ns);
    cJSON *labels = cJSON_AddObjectToObject(m, "labels");
    cJSON *ann = cJSON_AddObjectToObject(m, "annotations");
    if (!labels || !ann || !cJSON_AddStringToObject(labels, RCJ_LABEL_NAME, name) ||
        !cJSON_AddStringToObject(ann, RCJ_ANNOTATION_TS, ts))
        goto fail;
    /* ctrl.SetControllerReference: the owner's GVK, name, uid, controller and
     * blockOwnerDeletion, so deleting the RayCronJob collects its RayJobs */
    if (!(refs = kobj_controller_refs("ray.io/v1", "RayCronJob", rcj)))
        goto fail;
    cJSON_AddItemToObject(m, "ownerReferences", refs);
    if (!(spec = cJSON_Duplicate(get_path(rcj, "spec", "jobTemplate"), 1)))
        goto fail;
    cJSON_AddItemToObject(o, "spec", spec);
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Creates the tick's RayJob; an existing one (same deterministic name) counts. */
static int create_child(struct host_ctx *ctx, const cJSON *rcj, int64_t tick)
{
    cJSON *job = raycronjob_child(rcj, tick);
    if (!job)
        return -ENOMEM;
    const char *jname = get_str(job, "metadata", "name");
    struct kube_result kr = { 0 };
    int rc = host_create(ctx, &KUBE_RES_RAYJOBS, ctx->ns, job, &kr);
    if (rc == 0) {
        host_log(ctx, LOG_INFO, "Successfully created RayJob", "rayJobName", jname, NULL);
    } else if (rc == -EEXIST) {
        host_log(ctx, LOG_INFO, "RayJob for this tick already exists, skipping creation",
                 "rayJobName", jname, NULL);
        rc = 0;
    } else {
        host_log(ctx, LOG_ERROR, "Failed to create RayJob from RayCronJob", "rayJobName", jname,
                 "error", kube_strerror(rc), "message", kr.status.message, NULL);
    }
    kube_result_release(&kr);
    cJSON_Delete(job);
    return rc;
}

static int write_last_schedule(struct host_ctx *ctx, const char *rv, int64_t tick)
{
    char ts[32], patch[256];
    util_format_time((time_t)tick, ts);
    int n = snprintf(patch, sizeof(patch),
                     "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":"
                     "{\"lastScheduleTime\":\"%s\"}}", rv, ts);
    if (n < 0 || (size_t)n >= sizeof(patch))
        return -EINVAL;
    struct kube_result kr = { 0 };
    struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE, .subresource = "status" };
    int rc = host_patch(ctx, &RCJ_RES_RAYCRONJOBS, ctx->ns, ctx->name, patch, (size_t)n, &po,
                        &kr);
    if (rc < 0)
        host_log(ctx, LOG_INFO, "Failed to update RayCronJob status", "error", kube_strerror(rc),
                 NULL);
    kube_result_release(&kr);
    return rc;
}

int raycronjob_reconcile(struct host_ctx *ctx, struct host_result *res)
{
    cJSON *rcj = NULL;
    struct tz *zone = NULL;
    struct cron_schedule sched;
    char err[1024], rv[IPC_RV_MAX];
    static atomic_flag gate_logged = ATOMIC_FLAG_INIT;
    res->outcome = HOST_OK;
    /* KubeRay runs this controller only with --feature-gates=RayCronJob=true (alpha) */
    if (!host_feature_enabled(ctx, "RayCronJob", false)) {
        if (!atomic_flag_test_and_set(&gate_logged))
            host_log(ctx, LOG_INFO, "RayCronJob feature gate is disabled: RayCronJobs are not "
                     "reconciled (enable with --feature-gates=RayCronJob=true)", NULL);
        return 0;
    }
    int rc = host_get(ctx, RCJ_CACHE_TYPE, ctx->ns, ctx->name, &rcj);
    if (rc == -ENOENT) {
        host_log(ctx, LOG_INFO, "RayCronJob resource not found.", NULL);
        return 0;
    }
    if (rc < 0)
        return rc;
    const char *rvs = get_str(rcj, "metadata", "resourceVersion");
    snprintf(rv, sizeof(rv), "%s", rvs ? rvs : "");

    /* the RayJob controller's settings, so the template is judged as its children will be */
    struct rj_config cfg;
    rj_config_default(&cfg);
    rj_config_from_env(&cfg);
    cfg.deletion_policy_gate = host_feature_enabled(ctx, "RayJobDeletionPolicy", true);
    cfg.sidecar_restart_gate = host_feature_enabled(ctx, "SidecarSubmitterRestart", false);
    rc_gates_from_host(ctx, &cfg.rc_gates);
    if ((rc = raycronjob_validate(rcj, &cfg, &sched, &zone, err, sizeof(err))) < 0) {
        if (rc == -EINVAL) {
            host_log(ctx, LOG_WARN, "invalid RayCronJob", "error", err, NULL);
            host_event(ctx, rcj, HOST_EVENT_WARNING, "InvalidRayCronJobSpec", "Validate",
                       "%s/%s: %s", ctx->ns, ctx->name, err);
            rc = 0;   /* no retry until the object changes, as KubeRay */
        }
        goto out;
    }
    if (cJSON_IsTrue(get_path(rcj, "spec", "suspend"))) {
        host_log(ctx, LOG_DEBUG, "RayCronJob suspended, no new RayJobs will be created.", NULL);
        host_event(ctx, rcj, HOST_EVENT_NORMAL, "SuspendedRayCronJob", "Suspend",
                   "RayCronJob suspended, no new RayJobs will be created");
        goto out;
    }

    time_t earliest;
    const char *last = get_str(rcj, "status", "lastScheduleTime");
    const char *created = get_str(rcj, "metadata", "creationTimestamp");
    if (util_parse_time(last ? last : created, &earliest) < 0) {
        /* the schema checks the format; a retry could not fix a bad value anyway */
        snprintf(err, sizeof(err), "unreadable %s \"%.64s\"",
                 last ? "status.lastScheduleTime" : "metadata.creationTimestamp",
                 last ? last : created ? created : "");
        host_log(ctx, LOG_WARN, "invalid RayCronJob", "error", err, NULL);
        host_event(ctx, rcj, HOST_EVENT_WARNING, "InvalidRayCronJobSpec", "Validate",
                   "%s/%s: %s", ctx->ns, ctx->name, err);
        goto out;
    }
    int64_t now = now_ms();
    int64_t tick = cron_next(&sched, zone, (int64_t)earliest);
    if (tick == CRON_NEVER) {
        /* robfig returns the zero time here and KubeRay would name a RayJob after
         * year 1; say what is wrong instead */
        snprintf(err, sizeof(err), "schedule \"%s\" has no fire time within five years",
                 get_str(rcj, "spec", "schedule"));
        host_log(ctx, LOG_WARN, "invalid RayCronJob", "error", err, NULL);
        host_event(ctx, rcj, HOST_EVENT_WARNING, "InvalidRayCronJobSpec", "Validate",
                   "%s/%s: %s", ctx->ns, ctx->name, err);
        goto out;
    }
    if (tick * 1000 > now) {
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = (uint64_t)(tick * 1000 - now);
        goto out;
    }

    if ((rc = create_child(ctx, rcj, tick)) < 0)
        goto out;
    if ((rc = write_last_schedule(ctx, rv, tick)) < 0)
        goto out;

    int64_t next = cron_next(&sched, zone, tick);
    char nows[32], nexts[32] = "never", after[32] = "none";
    util_format_time((time_t)(now / 1000), nows);
    if (next != CRON_NEVER) {
        util_format_time((time_t)next, nexts);
        snprintf(after, sizeof(after), "%lldms", (long long)(next * 1000 - now));
    }
    host_log(ctx, LOG_INFO, "Schedule timing", "now", nows, "nextScheduledTime", nexts,
             "requeueAfter", after, NULL);
    /* a tick already due needs no timer: the status write above brings this key back */
    if (next != CRON_NEVER && next * 1000 > now) {
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = (uint64_t)(next * 1000 - now);
    }
out:
    tz_free(zone);
    cJSON_Delete(rcj);
    return rc;
}

/*
 * jobs_sync.c - one sync of a Job, after kubernetes pkg/controller/job
 * syncJob (1.33): count the Job's Pods, decide whether it failed (backoffLimit,
 * OnFailure restarts, activeDeadlineSeconds) or succeeded, create or delete Pods
 * towards parallelism/completions (suspend, the Pod failure back-off, Indexed
 * completion), then count finished Pods through uncountedTerminatedPods and the
 * tracking finalizer and add the interim and terminal conditions. Tables and
 * writes are in jobs.c; runs on the cluster thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "kobj/json_equal.h"
#include "util/util.h"

#define MAX_CREATE_DELETE 500     /* per sync, as MaxPodCreateDeletePerSync */
#define MAX_INDEXES 10000000      /* bitmap bound for Indexed Jobs (1.25 MB) */

enum { FIN_NONE, FIN_FAIL, FIN_SUCCESS };

static const char *phase_of(const cJSON *pod)
{
    const char *ph = kobj_str(kobj_get(pod, "status"), "phase");
    return ph ? ph : "";
}

static long num_or(const cJSON *o, const char *k, long def)
{
    const cJSON *v = kobj_get(o, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

/* The completion index annotation, or -1. */
static long pod_index(const cJSON *pod)
{
    const char *s = kobj_str(kobj_get(kobj_get(pod, "metadata"), "annotations"), INDEX_KEY);
    char *end;
    long v;

    if (!s || !*s || strlen(s) > 9)
        return -1;
    v = strtol(s, &end, 10);
    return *end || v < 0 ? -1 : v;
}

static cJSON *child_obj(cJSON *o, const char *k)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

    if (cJSON_IsObject(v))
        return v;
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    return cJSON_AddObjectToObject(o, k);
}

static void set_num(cJSON *o, const char *k, long v, bool omit_zero)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v || !omit_zero)
        cJSON_AddNumberToObject(o, k, (double)v);
}

static void set_now(cJSON *o, const char *k)
{
    char ts[32];

    util_format_time(time(NULL), ts);
    cluster__job_set_str(o, k, ts);
}

/* ensureJobConditionStatus: a condition of that type gets these values (times
 * renewed) if any differ; a missing one is appended unless status is False. */
static bool cond_set(cJSON *status, const char *type, const char *st, const char *reason,
                     const char *message)
{
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions"), *cd;
    const cJSON *old = cluster__job_cond_find(status, type);

    if (old && !strcmp(kobj_str(old, "status") ? kobj_str(old, "status") : "", st) &&
        !strcmp(kobj_str(old, "reason") ? kobj_str(old, "reason") : "", reason) &&
        !strcmp(kobj_str(old, "message") ? kobj_str(old, "message") : "", message))
        return false;
    if (!old && !strcmp(st, "False"))
        return false;
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
        conds = cJSON_AddArrayToObject(status, "conditions");
    }
    cd = (cJSON *)old;
    if (!cd) {
        cd = cJSON_CreateObject();
        cJSON_AddItemToArray(conds, cd);
        cluster__job_set_str(cd, "type", type);
    }
    cluster__job_set_str(cd, "status", st);
    set_now(cd, "lastProbeTime");
    set_now(cd, "lastTransitionTime");
    cluster__job_set_str(cd, "reason", reason[0] ? reason : NULL);
    cluster__job_set_str(cd, "message", message[0] ? message : NULL);
    return true;
}

static void uid_add(cJSON *unc, const char *k, const char *uid)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(unc, k);

    if (!cJSON_IsArray(a)) {
        cJSON_DeleteItemFromObjectCaseSensitive(unc, k);
        a = cJSON_AddArrayToObject(unc, k);
    }
    cJSON_AddItemToArray(a, cJSON_CreateString(uid));
}

/* ---- sync ------------------------------------------------------------------------------ */

struct jsync {
    struct cluster *c;
    struct cl_job *j;
    const cJSON *spec;
    cJSON *st;                   /* the status being built; owned */
    bool indexed, suspended, deleting, only_failed;
    long completions;            /* -1: unset */
    long parallelism, backoff_limit;
    long active, ready, terminating;
    long succeeded, failed;
    unsigned char *idx;          /* Indexed: succeeded indexes, completions bits */
    int finish;                  /* FIN_* */
    const char *reason, *message;
};

static bool pod_failed(const struct jsync *x, const cJSON *pod)
{
    const char *ph = phase_of(pod);

    if (!strcmp(ph, "Failed"))
        return true;
    /* a deleted Pod counts as failed unless only Failed Pods are replaced */
    return !x->only_failed && cluster__job_deleting(pod) && strcmp(ph, "Succeeded");
}

static bool pod_terminal(const cJSON *pod)
{
    const char *ph = phase_of(pod);
    return !strcmp(ph, "Succeeded") || !strcmp(ph, "Failed");
}

static bool pod_active(const cJSON *pod)
{
    return !pod_terminal(pod) && !cluster__job_deleting(pod);
}

static bool index_valid(const struct jsync *x, long ix)
{
    return ix >= 0 && ix < x->completions;
}

/* Counts the Pods and finds the newly finished ones (with the finalizer, not yet
 * in uncountedTerminatedPods). */
static void count_pods(struct jsync *x, long *new_succ, long *new_fail, long *restarts)
{
    const cJSON *unc = kobj_get(x->st, "uncountedTerminatedPods");
    struct cl_jpod *jp, *tmp;

    *new_succ = *new_fail = *restarts = 0;
    HASH_ITER(hj, x->j->pods, jp, tmp) {
        const cJSON *p = store_obj_json(jp->obj), *cs;
        const char *ph = phase_of(p);
        long ix = x->indexed ? pod_index(p) : -1;

        if (pod_active(p)) {
            x->active++;
            x->ready += cluster__pod_ready(p);
        } else if (cluster__job_deleting(p) && !pod_terminal(p)) {
            x->terminating++;
        }
        if (x->indexed && !strcmp(ph, "Succeeded") && index_valid(x, ix))
            x->idx[ix / 8] |= (unsigned char)(1u << (ix % 8));
        if (!strcmp(ph, "Running") || !strcmp(ph, "Pending")) {
            cJSON_ArrayForEach(cs, kobj_get(kobj_get(p, "status"), "containerStatuses"))
                *restarts += num_or(cs, "restartCount", 0);
            cJSON_ArrayForEach(cs, kobj_get(kobj_get(p, "status"), "initContainerStatuses"))
                *restarts += num_or(cs, "restartCount", 0);
        }
        if (!cluster__job_has_finalizer(p, TRACKING_FIN) ||
            cluster__job_uid_in(kobj_get(unc, "succeeded"), jp->obj->uid) ||
            cluster__job_uid_in(kobj_get(unc, "failed"), jp->obj->uid) ||
            (x->indexed && !index_valid(x, ix)))
            continue;
        if (!strcmp(ph, "Succeeded"))
            (*new_succ)++;
        else if (pod_failed(x, p))
            (*new_fail)++;
    }
}

static void decide_finish(struct jsync *x, long restarts)
{
    const cJSON *ft;
    const char *start = kobj_str(x->st, "startTime");
    const cJSON *ads = kobj_get(x->spec, "activeDeadlineSeconds");
    time_t t0, now = time(NULL);
    bool on_failure = kobj_str(kobj_get(kobj_get(x->spec, "template"), "spec"), "restartPolicy") &&
                      !strcmp(kobj_str(kobj_get(kobj_get(x->spec, "template"), "spec"),
                                      "restartPolicy"), "OnFailure");

    if (cluster__job_cond_true(x->st, "SuccessCriteriaMet")) {
        x->finish = FIN_SUCCESS;
        return;
    }
    if (cluster__job_cond_true(x->st, "FailureTarget")) {
        ft = cluster__job_cond_find(x->st, "FailureTarget");
        x->finish = FIN_FAIL;
        x->reason = kobj_str(ft, "reason") ? kobj_str(ft, "reason") : "";
        x->message = kobj_str(ft, "message") ? kobj_str(ft, "message") : "";
        return;
    }
    if (x->failed > x->backoff_limit ||
        (on_failure && (x->backoff_limit == 0 ? restarts > 0 : restarts >= x->backoff_limit))) {
        x->finish = FIN_FAIL;
        x->reason = "BackoffLimitExceeded";
        x->message = "Job has reached the specified backoff limit";
        return;
    }
    if (!cJSON_IsNumber(ads) || x->suspended || !start || util_parse_time(start, &t0) < 0)
        return;
    if (now - t0 >= (time_t)ads->valuedouble) {
        x->finish = FIN_FAIL;
        x->reason = "DeadlineExceeded";
        x->message = "Job was active longer than specified deadline";
    } else {
        cluster__job_wake(x->c, x->j, (uint64_t)((time_t)ads->valuedouble - (now - t0)) * 1000);
    }
}

/* deleteJobPods: suspend or scale-down deletes drop the finalizer first, so these
 * Pods are not counted as failed. Not-ready Pods go before ready ones. */
static void delete_some(struct jsync *x, long n, bool drop_finalizer)
{
    for (int pass = 0; pass < 2 && n > 0; pass++) {
        struct cl_jpod *jp, *tmp;
        HASH_ITER(hj, x->j->pods, jp, tmp) {
            bool ready;
            struct store_obj *out = NULL;

            if (n <= 0)
                break;
            if (!pod_active(store_obj_json(jp->obj)))
                continue;
            ready = cluster__pod_ready(store_obj_json(jp->obj));
            if (ready != (pass == 1))
                continue;
            if (drop_finalizer && cluster__job_has_finalizer(store_obj_json(jp->obj), TRACKING_FIN)) {
                if (cluster__job_drop_finalizer(x->c, jp->obj, &out) < 0)
                    continue;
                if (out) {
                    cluster__jpod_set(x->c, x->j, out);
                    store_obj_unref(out);
                }
            }
            if (cluster__job_pod_delete(x->c, x->j, jp) < 0)
                continue;
            n--;
            x->active--;
            x->terminating++;
            x->ready -= ready;
        }
    }
}

/* One Pod. A failed create stops this sync's creates (the real controller's slow
 * start stops after a failed batch) and retries after 1 s doubling to 1 min, as
 * the controller's rate-limited requeue, so a Job that cannot create Pods does not
 * flood FailedCreate Events. */
static int create_one(struct jsync *x, long index)
{
    if (cluster__job_pod_create(x->c, x->j, index) < 0) {
        long ms = 1000L << (x->j->create_errors < 6 ? x->j->create_errors : 6);
        x->j->create_errors++;
        cluster__job_wake(x->c, x->j, (uint64_t)(ms > 60000 ? 60000 : ms));
        return -1;
    }
    x->j->create_errors = 0;
    x->active++;
    return 0;
}

/* manageJob: creates or deletes Pods towards the wanted number; suspend. */
static void manage(struct jsync *x)
{
    long want, diff;
    uint64_t now = util_now_ms();

    if (x->suspended) {
        delete_some(x, x->active, true);
        if (cond_set(x->st, "Suspended", "True", "JobSuspended", "Job suspended"))
            cluster__event(x->c, store_obj_json(x->j->obj), "Normal", "Suspended", "Job suspended", COMPONENT,
                           NULL, NULL);
        return;
    }
    if (cluster__job_cond_find(x->st, "Suspended") &&
        cond_set(x->st, "Suspended", "False", "JobResumed", "Job resumed")) {
        cluster__event(x->c, store_obj_json(x->j->obj), "Normal", "Resumed", "Job resumed", COMPONENT, NULL, NULL);
        /* activeDeadlineSeconds counts from the resume */
        set_now(x->st, "startTime");
    }
    want = cluster_job_want_active(x->completions, x->parallelism, x->succeeded, x->active);
    if (x->active > want) {
        delete_some(x, x->active - want > MAX_CREATE_DELETE ? MAX_CREATE_DELETE
                                                             : x->active - want, true);
        return;
    }
    diff = want - (x->only_failed ? x->terminating : 0) - x->active;
    if (diff <= 0)
        return;
    if (x->j->fail_streak > 0) {
        uint64_t due = x->j->last_fail_ms + (uint64_t)cluster_job_backoff_ms(x->j->fail_streak);
        if (due > now) {
            cluster__job_wake(x->c, x->j, due - now);
            return;
        }
    }
    if (diff > MAX_CREATE_DELETE)
        diff = MAX_CREATE_DELETE;
    if (!x->indexed) {
        for (long i = 0; i < diff; i++)
            if (create_one(x, -1) < 0)
                break;
        return;
    }
    {
        /* the lowest indexes neither succeeded nor held by an active Pod */
        unsigned char *held = calloc((size_t)(x->completions + 7) / 8 + 1, 1);
        struct cl_jpod *jp, *tmp;

        if (!held)
            return;
        HASH_ITER(hj, x->j->pods, jp, tmp) {
            long ix = pod_index(store_obj_json(jp->obj));
            if (pod_active(store_obj_json(jp->obj)) && index_valid(x, ix))
                held[ix / 8] |= (unsigned char)(1u << (ix % 8));
        }
        for (long ix = 0; ix < x->completions && diff > 0; ix++) {
            if (((x->idx[ix / 8] | held[ix / 8]) >> (ix % 8)) & 1)
                continue;
            if (create_one(x, ix) < 0)
                break;
            diff--;
        }
        free(held);
    }
}

/* Moves the uncounted UIDs whose Pod no longer has the finalizer (removed, or the
 * Pod is gone) into the succeeded / failed counters. */
static void flush_uncounted(struct jsync *x)
{
    cJSON *unc = child_obj(x->st, "uncountedTerminatedPods");
    static const char *const kinds[2] = { "succeeded", "failed" };

    for (int k = 0; k < 2; k++) {
        cJSON *a = cJSON_GetObjectItemCaseSensitive(unc, kinds[k]), *u, *next;
        long moved = 0;

        for (u = a ? a->child : NULL; u; u = next) {
            struct cl_jpod *jp, *tmp;
            bool held = false;

            next = u->next;
            HASH_ITER(hj, x->j->pods, jp, tmp)
                if (cJSON_IsString(u) && !strcmp(jp->obj->uid, u->valuestring) &&
                    cluster__job_has_finalizer(store_obj_json(jp->obj), TRACKING_FIN))
                    held = true;
            if (held)
                continue;
            cJSON_Delete(cJSON_DetachItemViaPointer(a, u));
            moved++;
        }
        if (a && !a->child)
            cJSON_DeleteItemFromObjectCaseSensitive(unc, kinds[k]);
        if (moved && !(k == 0 && x->indexed))
            set_num(x->st, kinds[k], num_or(x->st, kinds[k], 0) + moved, true);
    }
}

/* trackJobStatusAndRemoveFinalizers: finished Pods into uncountedTerminatedPods
 * (and the interim condition) first, then their finalizers off, then counted. */
static int track(struct jsync *x, const cJSON *old_status)
{
    cJSON *unc = child_obj(x->st, "uncountedTerminatedPods");
    struct cl_jpod **rm = NULL, *jp, *tmp;
    size_t nrm = 0, cap = HASH_CNT(hj, x->j->pods);
    int rc = 0;

    if (cap && !(rm = calloc(cap, sizeof(*rm))))
        return -ENOMEM;
    HASH_ITER(hj, x->j->pods, jp, tmp) {
        const cJSON *p = store_obj_json(jp->obj);
        const char *uid = jp->obj->uid;
        bool failed = pod_failed(x, p), succ = !strcmp(phase_of(p), "Succeeded");
        long ix = x->indexed ? pod_index(p) : -1;

        if (!cluster__job_has_finalizer(p, TRACKING_FIN))
            continue;
        if (!(x->deleting || x->finish != FIN_NONE || succ || failed))
            continue;
        rm[nrm++] = jp;
        if (succ && !cluster__job_uid_in(kobj_get(unc, "failed"), uid)) {
            if (!x->indexed && !cluster__job_uid_in(kobj_get(unc, "succeeded"), uid))
                uid_add(unc, "succeeded", uid);
        } else if ((failed || x->finish == FIN_FAIL) &&
                   !cluster__job_uid_in(kobj_get(unc, "failed"), uid) &&
                   (!x->indexed || index_valid(x, ix))) {
            uid_add(unc, "failed", uid);
        }
    }
    if (x->indexed) {
        char *txt = cluster_job_indexes_format(x->idx, x->completions);
        cluster__job_set_str(x->st, "completedIndexes", txt && txt[0] ? txt : NULL);
        set_num(x->st, "succeeded", cluster_job_indexes_count(x->idx, x->completions), true);
        free(txt);
    }
    if (x->finish == FIN_FAIL)
        cond_set(x->st, "FailureTarget", "True", x->reason, x->message);
    if (x->finish == FIN_SUCCESS && !cluster__job_cond_true(x->st, "SuccessCriteriaMet"))
        cond_set(x->st, "SuccessCriteriaMet", "True", "CompletionsReached",
                 "Reached expected number of succeeded pods");
    if (!json_equal(x->st, old_status) && (rc = cluster__job_status_write(x->c, x->j, x->st)) < 0)
        goto out;
    for (size_t i = 0; i < nrm; i++) {
        struct store_obj *o = NULL;
        if (cluster__job_drop_finalizer(x->c, rm[i]->obj, &o) < 0)
            continue;
        if (!o || cluster__job_has_finalizer(store_obj_json(o), TRACKING_FIN))
            cluster__jpod_free(x->c, rm[i]);   /* gone: 404, or the patch was its removal */
        else
            cluster__jpod_set(x->c, x->j, o);
        store_obj_unref(o);
    }
out:
    free(rm);
    return rc;
}

/* enactJobFinished: the terminal condition once nothing is uncounted or terminating. */
static bool enact_finished(struct jsync *x)
{
    const cJSON *unc = kobj_get(x->st, "uncountedTerminatedPods");

    if (x->finish == FIN_NONE || cJSON_GetArraySize(kobj_get(unc, "succeeded")) ||
        cJSON_GetArraySize(kobj_get(unc, "failed")) || x->terminating > 0)
        return false;
    if (x->finish == FIN_SUCCESS) {
        cond_set(x->st, "Complete", "True", "CompletionsReached",
                 "Reached expected number of succeeded pods");
        set_now(x->st, "completionTime");
    } else {
        cond_set(x->st, "Failed", "True", x->reason, x->message);
    }
    return true;
}

void cluster__job_sync(struct cluster *c, struct cl_job *j)
{
    const cJSON *job = store_obj_json(j->obj), *old = kobj_get(job, "status");
    struct jsync x = { .c = c, .j = j, .spec = kobj_get(job, "spec") };
    const char *mode = kobj_str(x.spec, "completionMode"), *rpp;
    long new_succ, new_fail, restarts;
    cJSON *old_status = NULL;

    if (cluster__job_cond_true(old, "Complete") || cluster__job_cond_true(old, "Failed")) {
        cluster__job_ttl(c, j);
        return;
    }
    x.st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
    old_status = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
    if (!x.st || !old_status)
        goto out;
    x.indexed = mode && !strcmp(mode, "Indexed");
    x.suspended = cJSON_IsTrue(kobj_get(x.spec, "suspend"));
    x.deleting = cluster__job_deleting(job);
    rpp = kobj_str(x.spec, "podReplacementPolicy");
    x.only_failed = (rpp && !strcmp(rpp, "Failed")) || kobj_get(x.spec, "podFailurePolicy");
    x.completions = cJSON_IsNumber(kobj_get(x.spec, "completions"))
                        ? num_or(x.spec, "completions", 1) : -1;
    if (x.indexed && x.completions < 0)
        x.indexed = false;   /* the API requires completions for Indexed Jobs */
    if (x.indexed && x.completions > MAX_INDEXES) {
        log_warn("jobs: Indexed Job with more completions than kubesim tracks, capped",
                 "job", j->key, NULL);
        x.completions = MAX_INDEXES;
    }
    x.parallelism = num_or(x.spec, "parallelism", 1);
    x.backoff_limit = num_or(x.spec, "backoffLimit", 6);
    child_obj(x.st, "uncountedTerminatedPods");
    if (x.indexed) {
        const char *ci = kobj_str(x.st, "completedIndexes");
        if (!(x.idx = calloc((size_t)(x.completions + 7) / 8 + 1, 1)))
            goto out;
        if (ci && cluster_job_indexes_parse(ci, strlen(ci), x.completions, x.idx) < 0)
            log_warn("jobs: malformed status.completedIndexes ignored", "job", j->key, NULL);
    }
    count_pods(&x, &new_succ, &new_fail, &restarts);
    {
        const cJSON *unc = kobj_get(x.st, "uncountedTerminatedPods");
        x.succeeded = num_or(x.st, "succeeded", 0) + new_succ +
                      cJSON_GetArraySize(kobj_get(unc, "succeeded"));
        x.failed = num_or(x.st, "failed", 0) + new_fail +
                   cJSON_GetArraySize(kobj_get(unc, "failed"));
    }
    if (x.indexed)
        x.succeeded = cluster_job_indexes_count(x.idx, x.completions);
    if (new_succ)
        j->fail_streak = 0;
    if (new_fail) {
        j->fail_streak += (int)new_fail;
        j->last_fail_ms = util_now_ms();
    }
    if (!kobj_str(x.st, "startTime") && !x.suspended)
        set_now(x.st, "startTime");
    decide_finish(&x, restarts);
    if (x.finish != FIN_NONE) {
        /* deleteActivePods keeps the finalizers: these Pods count as failed */
        struct cl_jpod *jp, *tmp;
        HASH_ITER(hj, j->pods, jp, tmp)
            if (pod_active(store_obj_json(jp->obj))) {
                bool ready = cluster__pod_ready(store_obj_json(jp->obj));
                if (cluster__job_pod_delete(c, j, jp) == 0) {
                    x.active--;
                    x.terminating++;
                    x.ready -= ready;
                }
            }
    } else {
        if (!x.deleting)
            manage(&x);
        if (x.completions < 0 ? x.succeeded > 0 && x.active == 0
                              : x.succeeded >= x.completions && x.active == 0)
            x.finish = FIN_SUCCESS;
    }
    set_num(x.st, "active", x.active, true);
    set_num(x.st, "ready", x.ready, false);
    set_num(x.st, "terminating", x.terminating, false);
    if (track(&x, old_status) < 0)
        goto out;
    cJSON_Delete(old_status);
    old_status = cJSON_Duplicate(x.st, true);
    flush_uncounted(&x);
    if (enact_finished(&x) && cluster__job_status_write(c, j, x.st) == 0) {
        if (x.finish == FIN_SUCCESS) {
            if (x.completions >= 0 && num_or(x.st, "succeeded", 0) > x.completions)
                cluster__event(c, store_obj_json(j->obj), "Warning", "TooManySucceededPods",
                               "Too many succeeded pods running after completion count reached",
                               COMPONENT, NULL, NULL);
            cluster__event(c, store_obj_json(j->obj), "Normal", "Completed", "Job completed", COMPONENT, NULL,
                           NULL);
        } else {
            cluster__event(c, store_obj_json(j->obj), "Warning", x.reason, x.message, COMPONENT, NULL, NULL);
        }
        cluster__job_ttl(c, j);
    } else if (old_status && !json_equal(x.st, old_status)) {
        cluster__job_status_write(c, j, x.st);
    }
out:
    cJSON_Delete(old_status);
    cJSON_Delete(x.st);
    free(x.idx);
}

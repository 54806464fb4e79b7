/*
 * cluster_jobs.c - kubesim's batch/v1 Job controller and TTL-after-finished
 * controller, on the cluster thread like the scheduler and kubelet. It follows
 * kubernetes pkg/controller/job as of 1.33: Pods from the template (generateName
 * "JOB-", the template's labels, the tracking finalizer, a controller
 * ownerReference), parallelism/completions (NonIndexed and Indexed), Pod
 * failures against backoffLimit (and restarts under OnFailure), activeDeadline-
 * Seconds, suspend, and status counted through uncountedTerminatedPods and the
 * batch.kubernetes.io/job-tracking finalizer; the terminal condition comes after
 * the interim FailureTarget / SuccessCriteriaMet once no Pod is terminating.
 *
 * Bookkeeping: every Pod event looks the Pod up in c->jpods by key and its
 * controller reference in c->jobs_uid, so Pods no Job owns cost two hash probes.
 * A Job touched by an event or timer is synced once per cluster turn
 * (cl_jobs_sync). The arithmetic is in cluster_jobcalc.c. Behaviour and gaps:
 * docs/kubesim-cluster.md ("Jobs").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cluster_int.h"
#include "sim/json_equal.h"
#include "util/util.h"

#define TRACKING_FIN "batch.kubernetes.io/job-tracking"
#define INDEX_KEY "batch.kubernetes.io/job-completion-index"
#define MANAGER "kube-controller-manager"
#define COMPONENT "job-controller"
#define MAX_CREATE_DELETE 500     /* per sync, as MaxPodCreateDeletePerSync */
#define MAX_COMPLETIONS 100000    /* bitmap bound for Indexed Jobs (the API's limit) */

enum { FIN_NONE, FIN_FAIL, FIN_SUCCESS };

/* ---- small JSON helpers ----------------------------------------------------------- */

const cJSON *cl_controller_ref(const cJSON *obj, const char *api_group, const char *kind)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, cl_jget(cl_jget(obj, "metadata"), "ownerReferences")) {
        const char *k = cl_jstr(r, "kind"), *av = cl_jstr(r, "apiVersion");
        if (!cJSON_IsTrue(cl_jget(r, "controller")))
            continue;
        return k && av && !strcmp(k, kind) && !strncmp(av, api_group, strlen(api_group)) ? r
                                                                                         : NULL;
    }
    return NULL;
}

static bool has_finalizer(const cJSON *obj, const char *f)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, cl_jget(cl_jget(obj, "metadata"), "finalizers"))
        if (cJSON_IsString(x) && !strcmp(x->valuestring, f))
            return true;
    return false;
}

static const char *phase_of(const cJSON *pod)
{
    const char *ph = cl_jstr(cl_jget(pod, "status"), "phase");
    return ph ? ph : "";
}

static bool deleting(const cJSON *obj)
{
    return cl_jget(cl_jget(obj, "metadata"), "deletionTimestamp") != NULL;
}

static bool pod_ready(const cJSON *pod)
{
    const cJSON *cd;

    cJSON_ArrayForEach(cd, cl_jget(cl_jget(pod, "status"), "conditions"))
        if (cl_jstr(cd, "type") && !strcmp(cl_jstr(cd, "type"), "Ready"))
            return cl_jstr(cd, "status") && !strcmp(cl_jstr(cd, "status"), "True");
    return false;
}

static long num_or(const cJSON *o, const char *k, long def)
{
    const cJSON *v = cl_jget(o, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

/* The completion index annotation, or -1. */
static long pod_index(const cJSON *pod)
{
    const char *s = cl_jstr(cl_jget(cl_jget(pod, "metadata"), "annotations"), INDEX_KEY);
    char *end;
    long v;

    if (!s || !*s || strlen(s) > 9)
        return -1;
    v = strtol(s, &end, 10);
    return *end || v < 0 ? -1 : v;
}

static const cJSON *cond_find(const cJSON *status, const char *type)
{
    const cJSON *cd;

    cJSON_ArrayForEach(cd, cl_jget(status, "conditions"))
        if (cl_jstr(cd, "type") && !strcmp(cl_jstr(cd, "type"), type))
            return cd;
    return NULL;
}

static bool cond_true(const cJSON *status, const char *type)
{
    const char *s = cl_jstr(cond_find(status, type), "status");
    return s && !strcmp(s, "True");
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

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v)
        cJSON_AddStringToObject(o, k, v);
}

static void set_now(cJSON *o, const char *k)
{
    char ts[32];

    util_format_time(time(NULL), ts);
    set_str(o, k, ts);
}

/* ensureJobConditionStatus: a condition of that type gets these values (times
 * renewed) if any differ; a missing one is appended unless status is False. */
static bool cond_set(cJSON *status, const char *type, const char *st, const char *reason,
                     const char *message)
{
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions"), *cd;
    const cJSON *old = cond_find(status, type);

    if (old && !strcmp(cl_jstr(old, "status") ? cl_jstr(old, "status") : "", st) &&
        !strcmp(cl_jstr(old, "reason") ? cl_jstr(old, "reason") : "", reason) &&
        !strcmp(cl_jstr(old, "message") ? cl_jstr(old, "message") : "", message))
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
        set_str(cd, "type", type);
    }
    set_str(cd, "status", st);
    set_now(cd, "lastProbeTime");
    set_now(cd, "lastTransitionTime");
    set_str(cd, "reason", reason[0] ? reason : NULL);
    set_str(cd, "message", message[0] ? message : NULL);
    return true;
}

static bool uid_in(const cJSON *arr, const char *uid)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, arr)
        if (cJSON_IsString(x) && !strcmp(x->valuestring, uid))
            return true;
    return false;
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

/* ---- tables ----------------------------------------------------------------------- */

static void job_mark(struct cluster *c, struct cl_job *j)
{
    if (!j || j->dirty)
        return;
    if (c->njob_dirty == c->capjob_dirty) {
        size_t ncap = c->capjob_dirty ? c->capjob_dirty * 2 : 64;
        char **nd = realloc(c->job_dirty, ncap * sizeof(*nd));
        if (!nd)
            return;
        c->job_dirty = nd;
        c->capjob_dirty = ncap;
    }
    if (!(c->job_dirty[c->njob_dirty] = strdup(j->key)))
        return;
    c->njob_dirty++;
    j->dirty = true;
}

static void jpod_free(struct cluster *c, struct cl_jpod *jp)
{
    HASH_DELETE(hh, c->jpods, jp);
    if (jp->job)
        HASH_DELETE(hj, jp->job->pods, jp);
    store_obj_unref(jp->obj);
    free(jp->key);
    free(jp);
}

/* Records o as j's Pod (newer than what the table holds). */
static void jpod_set(struct cluster *c, struct cl_job *j, struct store_obj *o)
{
    char key[600];
    struct cl_jpod *jp;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND(hh, c->jpods, key, strlen(key), jp);
    if (jp && !strcmp(jp->obj->uid, o->uid) && o->rv < jp->obj->rv)
        return;
    if (jp && jp->job != j) {
        job_mark(c, jp->job);
        HASH_DELETE(hj, jp->job->pods, jp);
        jp->job = NULL;
    }
    if (!jp) {
        if (!(jp = calloc(1, sizeof(*jp))) || !(jp->key = strdup(key))) {
            free(jp);
            return;
        }
        HASH_ADD_KEYPTR(hh, c->jpods, jp->key, strlen(jp->key), jp);
    } else {
        store_obj_unref(jp->obj);
    }
    jp->obj = store_obj_ref(o);
    if (!jp->job) {
        jp->job = j;
        HASH_ADD_KEYPTR(hj, j->pods, jp->key, strlen(jp->key), jp);
    }
}

static struct cl_job *job_by_uid(struct cluster *c, const char *uid)
{
    struct cl_job *j = NULL;

    if (uid)
        HASH_FIND(hu, c->jobs_uid, uid, strlen(uid), j);
    return j;
}

/* ---- writes ----------------------------------------------------------------------- */

/* Drops the tracking finalizer the way the controller does (a strategic merge
 * patch with $deleteFromPrimitiveList). 0 when it is gone (or the Pod is). */
static int pod_drop_finalizer(struct cluster *c, struct store_obj *pod, struct store_obj **out)
{
    static const char body[] =
        "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"" TRACKING_FIN "\"]}}";
    struct store_write_opts w = { .field_manager = MANAGER };
    struct store_status st = { 0 };
    int rc;

    *out = NULL;
    rc = store_patch(c->store, c->r_pods, pod->ns, pod->name, NULL, PATCH_STRATEGIC, body,
                     sizeof(body) - 1, &w, out, NULL, &st);
    if (rc < 0 && st.code == 404)
        rc = 0;
    else if (rc < 0)
        log_warn("jobs: cannot remove the tracking finalizer", "pod", pod->name,
                 "error", st.message, NULL);
    store_status_clear(&st);
    return rc;
}

/* A finished or gone Job's Pods keep no tracking finalizer (the orphan path). */
static void orphan_finalizer(struct cluster *c, struct store_obj *pod)
{
    struct store_obj *out = NULL;

    if (has_finalizer(pod->json, TRACKING_FIN) && pod_drop_finalizer(c, pod, &out) == 0)
        store_obj_unref(out);
}

static int pod_delete(struct cluster *c, struct cl_job *j, struct cl_jpod *jp)
{
    struct store_delete_opts o = { .grace_seconds = -1, .precondition_uid = jp->obj->uid };
    struct store_status st = { 0 };
    struct store_obj *out = NULL;
    char msg[400];
    int rc;

    rc = store_delete(c->store, c->r_pods, jp->obj->ns, jp->obj->name, &o, &out, NULL, &st);
    if (rc == 0) {
        if (out && out->res == c->r_pods)
            jpod_set(c, j, out);
        snprintf(msg, sizeof(msg), "Deleted pod: %s", jp->obj->name);
        cl_event(c, j->obj->json, "Normal", "SuccessfulDelete", msg, COMPONENT, NULL, NULL);
    } else if (st.code == 404) {
        rc = 0;
    } else {
        snprintf(msg, sizeof(msg), "Error deleting: %.300s", st.message);
        cl_event(c, j->obj->json, "Warning", "FailedDelete", msg, COMPONENT, NULL, NULL);
    }
    store_obj_unref(out);
    store_status_clear(&st);
    return rc;
}

static void add_index_env(cJSON *containers)
{
    cJSON *ct;

    cJSON_ArrayForEach(ct, containers) {
        cJSON *env = cJSON_GetObjectItemCaseSensitive(ct, "env"), *e, *vf;
        const cJSON *x;
        bool have = false;

        cJSON_ArrayForEach(x, env)
            have |= cl_jstr(x, "name") && !strcmp(cl_jstr(x, "name"), "JOB_COMPLETION_INDEX");
        if (have)
            continue;
        if (!cJSON_IsArray(env)) {
            cJSON_DeleteItemFromObjectCaseSensitive(ct, "env");
            env = cJSON_AddArrayToObject(ct, "env");
        }
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", "JOB_COMPLETION_INDEX");
        vf = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "fieldRef");
        cJSON_AddStringToObject(vf, "fieldPath", "metadata.annotations['" INDEX_KEY "']");
        cJSON_AddItemToArray(env, e);
    }
}

/* A Pod from the template, owned by the Job; index -1 for NonIndexed Jobs. */
static int pod_create(struct cluster *c, struct cl_job *j, long index)
{
    const cJSON *job = j->obj->json, *tmpl = cl_jget(cl_jget(job, "spec"), "template");
    const cJSON *tmd = cl_jget(tmpl, "metadata");
    const char *name = j->obj->name;
    cJSON *pod = cJSON_CreateObject(), *md, *spec, *lb, *an, *fin, *refs, *ref;
    struct store_write_opts w = { .field_manager = MANAGER };
    struct store_status st = { 0 };
    struct store_obj *out = NULL;
    char gen[300], ix[24], msg[1200];
    int rc;

    if (!pod)
        return -ENOMEM;
    snprintf(ix, sizeof(ix), "%ld", index);
    if (index >= 0)
        snprintf(gen, sizeof(gen), "%.*s-%ld-", 48, name, index);
    else
        snprintf(gen, sizeof(gen), "%.*s-", 57, name);
    cJSON_AddStringToObject(pod, "apiVersion", "v1");
    cJSON_AddStringToObject(pod, "kind", "Pod");
    md = cJSON_AddObjectToObject(pod, "metadata");
    cJSON_AddStringToObject(md, "generateName", gen);
    cJSON_AddStringToObject(md, "namespace", j->obj->ns);
    lb = cJSON_IsObject(cl_jget(tmd, "labels")) ? cJSON_Duplicate(cl_jget(tmd, "labels"), true)
                                                : cJSON_CreateObject();
    an = cJSON_IsObject(cl_jget(tmd, "annotations"))
             ? cJSON_Duplicate(cl_jget(tmd, "annotations"), true) : NULL;
    if (index >= 0) {
        if (!an)
            an = cJSON_CreateObject();
        set_str(an, INDEX_KEY, ix);
        set_str(lb, INDEX_KEY, ix);
    }
    cJSON_AddItemToObject(md, "labels", lb);
    if (an)
        cJSON_AddItemToObject(md, "annotations", an);
    fin = cJSON_IsArray(cl_jget(tmd, "finalizers"))
              ? cJSON_Duplicate(cl_jget(tmd, "finalizers"), true) : cJSON_CreateArray();
    if (!uid_in(fin, TRACKING_FIN))
        cJSON_AddItemToArray(fin, cJSON_CreateString(TRACKING_FIN));
    cJSON_AddItemToObject(md, "finalizers", fin);
    refs = cJSON_AddArrayToObject(md, "ownerReferences");
    ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", "batch/v1");
    cJSON_AddStringToObject(ref, "kind", "Job");
    cJSON_AddStringToObject(ref, "name", name);
    cJSON_AddStringToObject(ref, "uid", j->uid);
    cJSON_AddBoolToObject(ref, "controller", true);
    cJSON_AddBoolToObject(ref, "blockOwnerDeletion", true);
    cJSON_AddItemToArray(refs, ref);
    spec = cJSON_Duplicate(cl_jget(tmpl, "spec"), true);
    if (!spec)
        spec = cJSON_CreateObject();
    if (index >= 0) {
        char host[80];
        snprintf(host, sizeof(host), "%.*s-%ld", 52, name, index);
        set_str(spec, "hostname", host);
        add_index_env(cJSON_GetObjectItemCaseSensitive(spec, "containers"));
        add_index_env(cJSON_GetObjectItemCaseSensitive(spec, "initContainers"));
    }
    cJSON_AddItemToObject(pod, "spec", spec);
    rc = store_create(c->store, c->r_pods, j->obj->ns, pod, &w, &out, &st);
    if (rc == 0) {
        jpod_set(c, j, out);
        snprintf(msg, sizeof(msg), "Created pod: %s", out->name);
        cl_event(c, j->obj->json, "Normal", "SuccessfulCreate", msg, COMPONENT, NULL, NULL);
    } else {
        snprintf(msg, sizeof(msg), "Error creating: %.1000s", st.message);
        cl_event(c, j->obj->json, "Warning", "FailedCreate", msg, COMPONENT, NULL, NULL);
    }
    store_obj_unref(out);
    store_status_clear(&st);
    return rc;
}

/* A copy of status with its fields in the order of the JobStatus struct, as the
 * real API server serialises it (clients do not care; people reading -o json do). */
static cJSON *status_ordered(const cJSON *status)
{
    static const char *const order[] = {
        "conditions", "startTime", "completionTime", "active", "succeeded", "failed",
        "terminating", "completedIndexes", "failedIndexes", "uncountedTerminatedPods", "ready",
    };
    cJSON *rest = cJSON_Duplicate(status, true), *out = cJSON_CreateObject(), *v;

    if (!rest || !out) {
        cJSON_Delete(out);
        return rest;
    }
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if ((v = cJSON_DetachItemFromObjectCaseSensitive(rest, order[i])))
            cJSON_AddItemToObject(out, order[i], v);
    while (rest->child) {
        /* fields this controller does not know, kept after the known ones */
        char *k = strdup(rest->child->string ? rest->child->string : "");
        v = cJSON_DetachItemViaPointer(rest, rest->child);
        if (k)
            cJSON_AddItemToObject(out, k, v);
        else
            cJSON_Delete(v);
        free(k);
    }
    cJSON_Delete(rest);
    return out;
}

/* PUT of /status with the Job's whole object as last seen: a conflict (someone
 * changed the Job meanwhile) ends the sync; the event that came with the change
 * syncs it again. */
static int status_write(struct cluster *c, struct cl_job *j, cJSON *status)
{
    cJSON *obj = cJSON_Duplicate(j->obj->json, true);
    struct store_write_opts w = { .field_manager = MANAGER };
    struct store_status st = { 0 };
    struct store_obj *out = NULL;
    int rc;

    if (!obj)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", status_ordered(status));
    rc = store_update(c->store, c->r_jobs, j->obj->ns, j->obj->name, "status", obj, &w, &out,
                      &st);
    if (rc == 0 && out) {
        store_obj_unref(j->obj);
        j->obj = out;
        out = NULL;
    } else if (rc < 0 && st.code != 409 && st.code != 404) {
        log_warn("jobs: status write failed", "job", j->key, "error", st.message, NULL);
    }
    store_obj_unref(out);
    store_status_clear(&st);
    return rc;
}

/* Arms a T_JOB timer unless an earlier one is already due first. */
static void job_wake(struct cluster *c, struct cl_job *j, uint64_t delay_ms)
{
    uint64_t due = util_now_ms() + delay_ms;

    if (j->wake_ms && j->wake_ms <= due && j->wake_ms > util_now_ms())
        return;
    j->wake_ms = due;
    cl_timer_add_key(c, delay_ms, T_JOB, j->key, j->epoch);
}

/* ---- TTL after finished --------------------------------------------------------------- */

static void job_ttl(struct cluster *c, struct cl_job *j)
{
    const cJSON *job = j->obj->json, *ttl = cl_jget(cl_jget(job, "spec"), "ttlSecondsAfterFinished");
    const cJSON *status = cl_jget(job, "status");
    const cJSON *cd = cond_true(status, "Complete") ? cond_find(status, "Complete")
                                                    : cond_find(status, "Failed");
    const char *ts = cl_jstr(cd, "lastTransitionTime");
    time_t fin, now = time(NULL);

    if (!cJSON_IsNumber(ttl) || ttl->valuedouble < 0 || deleting(job) || !ts ||
        util_parse_time(ts, &fin) < 0)
        return;
    if (now < fin + (time_t)ttl->valuedouble) {
        job_wake(c, j, (uint64_t)(fin + (time_t)ttl->valuedouble - now) * 1000);
        return;
    }
    /* the real TTL controller deletes in the foreground: the Pods go first */
    {
        struct store_delete_opts o = { .grace_seconds = -1, .propagation = "Foreground",
                                       .precondition_uid = j->uid };
        struct store_status st = { 0 };

        if (store_delete(c->store, c->r_jobs, j->obj->ns, j->obj->name, &o, NULL, NULL, &st) < 0 &&
            st.code != 404 && st.code != 409)
            log_warn("jobs: TTL deletion failed", "job", j->key, "error", st.message, NULL);
        else
            log_info("jobs: TTL after finished expired, job deleted", "job", j->key, NULL);
        store_status_clear(&st);
    }
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
    return !x->only_failed && deleting(pod) && strcmp(ph, "Succeeded");
}

static bool pod_terminal(const cJSON *pod)
{
    const char *ph = phase_of(pod);
    return !strcmp(ph, "Succeeded") || !strcmp(ph, "Failed");
}

static bool pod_active(const cJSON *pod)
{
    return !pod_terminal(pod) && !deleting(pod);
}

static bool index_valid(const struct jsync *x, long ix)
{
    return ix >= 0 && ix < x->completions;
}

/* Counts the Pods and finds the newly finished ones (with the finalizer, not yet
 * in uncountedTerminatedPods). */
static void count_pods(struct jsync *x, long *new_succ, long *new_fail, long *restarts)
{
    const cJSON *unc = cl_jget(x->st, "uncountedTerminatedPods");
    struct cl_jpod *jp, *tmp;

    *new_succ = *new_fail = *restarts = 0;
    HASH_ITER(hj, x->j->pods, jp, tmp) {
        const cJSON *p = jp->obj->json, *cs;
        const char *ph = phase_of(p);
        long ix = x->indexed ? pod_index(p) : -1;

        if (pod_active(p)) {
            x->active++;
            x->ready += pod_ready(p);
        } else if (deleting(p) && !pod_terminal(p)) {
            x->terminating++;
        }
        if (x->indexed && !strcmp(ph, "Succeeded") && index_valid(x, ix))
            x->idx[ix / 8] |= (unsigned char)(1u << (ix % 8));
        if (!strcmp(ph, "Running") || !strcmp(ph, "Pending")) {
            cJSON_ArrayForEach(cs, cl_jget(cl_jget(p, "status"), "containerStatuses"))
                *restarts += num_or(cs, "restartCount", 0);
            cJSON_ArrayForEach(cs, cl_jget(cl_jget(p, "status"), "initContainerStatuses"))
                *restarts += num_or(cs, "restartCount", 0);
        }
        if (!has_finalizer(p, TRACKING_FIN) || uid_in(cl_jget(unc, "succeeded"), jp->obj->uid) ||
            uid_in(cl_jget(unc, "failed"), jp->obj->uid) || (x->indexed && !index_valid(x, ix)))
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
    const char *start = cl_jstr(x->st, "startTime");
    const cJSON *ads = cl_jget(x->spec, "activeDeadlineSeconds");
    time_t t0, now = time(NULL);
    bool on_failure = cl_jstr(cl_jget(cl_jget(x->spec, "template"), "spec"), "restartPolicy") &&
                      !strcmp(cl_jstr(cl_jget(cl_jget(x->spec, "template"), "spec"),
                                      "restartPolicy"), "OnFailure");

    if (cond_true(x->st, "SuccessCriteriaMet")) {
        x->finish = FIN_SUCCESS;
        return;
    }
    if (cond_true(x->st, "FailureTarget")) {
        ft = cond_find(x->st, "FailureTarget");
        x->finish = FIN_FAIL;
        x->reason = cl_jstr(ft, "reason") ? cl_jstr(ft, "reason") : "";
        x->message = cl_jstr(ft, "message") ? cl_jstr(ft, "message") : "";
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
        job_wake(x->c, x->j, (uint64_t)((time_t)ads->valuedouble - (now - t0)) * 1000);
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
            if (!pod_active(jp->obj->json))
                continue;
            ready = pod_ready(jp->obj->json);
            if (ready != (pass == 1))
                continue;
            if (drop_finalizer && has_finalizer(jp->obj->json, TRACKING_FIN)) {
                if (pod_drop_finalizer(x->c, jp->obj, &out) < 0)
                    continue;
                if (out) {
                    jpod_set(x->c, x->j, out);
                    store_obj_unref(out);
                }
            }
            if (pod_delete(x->c, x->j, jp) < 0)
                continue;
            n--;
            x->active--;
            x->terminating++;
            x->ready -= ready;
        }
    }
}

/* manageJob: creates or deletes Pods towards the wanted number; suspend. */
static void manage(struct jsync *x)
{
    long want, diff;
    uint64_t now = util_now_ms();

    if (x->suspended) {
        delete_some(x, x->active, true);
        if (cond_set(x->st, "Suspended", "True", "JobSuspended", "Job suspended"))
            cl_event(x->c, x->j->obj->json, "Normal", "Suspended", "Job suspended", COMPONENT,
                     NULL, NULL);
        return;
    }
    if (cond_find(x->st, "Suspended") &&
        cond_set(x->st, "Suspended", "False", "JobResumed", "Job resumed")) {
        cl_event(x->c, x->j->obj->json, "Normal", "Resumed", "Job resumed", COMPONENT, NULL, NULL);
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
            job_wake(x->c, x->j, due - now);
            return;
        }
    }
    if (diff > MAX_CREATE_DELETE)
        diff = MAX_CREATE_DELETE;
    if (!x->indexed) {
        for (long i = 0; i < diff; i++)
            if (pod_create(x->c, x->j, -1) == 0)
                x->active++;
        return;
    }
    {
        /* the lowest indexes neither succeeded nor held by an active Pod */
        unsigned char *held = calloc((size_t)(x->completions + 7) / 8 + 1, 1);
        struct cl_jpod *jp, *tmp;

        if (!held)
            return;
        HASH_ITER(hj, x->j->pods, jp, tmp) {
            long ix = pod_index(jp->obj->json);
            if (pod_active(jp->obj->json) && index_valid(x, ix))
                held[ix / 8] |= (unsigned char)(1u << (ix % 8));
        }
        for (long ix = 0; ix < x->completions && diff > 0; ix++) {
            if (((x->idx[ix / 8] | held[ix / 8]) >> (ix % 8)) & 1)
                continue;
            if (pod_create(x->c, x->j, ix) == 0)
                x->active++;
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
                    has_finalizer(jp->obj->json, TRACKING_FIN))
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
        const cJSON *p = jp->obj->json;
        const char *uid = jp->obj->uid;
        bool failed = pod_failed(x, p), succ = !strcmp(phase_of(p), "Succeeded");
        long ix = x->indexed ? pod_index(p) : -1;

        if (!has_finalizer(p, TRACKING_FIN))
            continue;
        if (!(x->deleting || x->finish != FIN_NONE || succ || failed))
            continue;
        rm[nrm++] = jp;
        if (succ && !uid_in(cl_jget(unc, "failed"), uid)) {
            if (!x->indexed && !uid_in(cl_jget(unc, "succeeded"), uid))
                uid_add(unc, "succeeded", uid);
        } else if ((failed || x->finish == FIN_FAIL) && !uid_in(cl_jget(unc, "failed"), uid) &&
                   (!x->indexed || index_valid(x, ix))) {
            uid_add(unc, "failed", uid);
        }
    }
    if (x->indexed) {
        char *txt = cluster_job_indexes_format(x->idx, x->completions);
        set_str(x->st, "completedIndexes", txt && txt[0] ? txt : NULL);
        set_num(x->st, "succeeded", cluster_job_indexes_count(x->idx, x->completions), true);
        free(txt);
    }
    if (x->finish == FIN_FAIL)
        cond_set(x->st, "FailureTarget", "True", x->reason, x->message);
    if (x->finish == FIN_SUCCESS && !cond_true(x->st, "SuccessCriteriaMet"))
        cond_set(x->st, "SuccessCriteriaMet", "True", "CompletionsReached",
                 "Reached expected number of succeeded pods");
    if (!json_equal(x->st, old_status) && (rc = status_write(x->c, x->j, x->st)) < 0)
        goto out;
    for (size_t i = 0; i < nrm; i++) {
        struct store_obj *o = NULL;
        if (pod_drop_finalizer(x->c, rm[i]->obj, &o) < 0)
            continue;
        if (!o || has_finalizer(o->json, TRACKING_FIN))
            jpod_free(x->c, rm[i]);   /* gone: 404, or the patch was its removal */
        else
            jpod_set(x->c, x->j, o);
        store_obj_unref(o);
    }
out:
    free(rm);
    return rc;
}

/* enactJobFinished: the terminal condition once nothing is uncounted or terminating. */
static bool enact_finished(struct jsync *x)
{
    const cJSON *unc = cl_jget(x->st, "uncountedTerminatedPods");

    if (x->finish == FIN_NONE || cJSON_GetArraySize(cl_jget(unc, "succeeded")) ||
        cJSON_GetArraySize(cl_jget(unc, "failed")) || x->terminating > 0)
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

static void job_sync(struct cluster *c, struct cl_job *j)
{
    const cJSON *job = j->obj->json, *old = cl_jget(job, "status");
    struct jsync x = { .c = c, .j = j, .spec = cl_jget(job, "spec") };
    const char *mode = cl_jstr(x.spec, "completionMode"), *rpp;
    long new_succ, new_fail, restarts;
    cJSON *old_status = NULL;

    if (cond_true(old, "Complete") || cond_true(old, "Failed")) {
        job_ttl(c, j);
        return;
    }
    x.st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
    old_status = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
    if (!x.st || !old_status)
        goto out;
    x.indexed = mode && !strcmp(mode, "Indexed");
    x.suspended = cJSON_IsTrue(cl_jget(x.spec, "suspend"));
    x.deleting = deleting(job);
    rpp = cl_jstr(x.spec, "podReplacementPolicy");
    x.only_failed = (rpp && !strcmp(rpp, "Failed")) || cl_jget(x.spec, "podFailurePolicy");
    x.completions = cJSON_IsNumber(cl_jget(x.spec, "completions"))
                        ? num_or(x.spec, "completions", 1) : -1;
    if (x.completions > MAX_COMPLETIONS)
        x.completions = MAX_COMPLETIONS;
    if (x.indexed && x.completions < 0)
        x.indexed = false;   /* the API requires completions for Indexed Jobs */
    x.parallelism = num_or(x.spec, "parallelism", 1);
    x.backoff_limit = num_or(x.spec, "backoffLimit", 6);
    child_obj(x.st, "uncountedTerminatedPods");
    if (x.indexed) {
        const char *ci = cl_jstr(x.st, "completedIndexes");
        if (!(x.idx = calloc((size_t)(x.completions + 7) / 8 + 1, 1)))
            goto out;
        if (ci && cluster_job_indexes_parse(ci, strlen(ci), x.completions, x.idx) < 0)
            log_warn("jobs: malformed status.completedIndexes ignored", "job", j->key, NULL);
    }
    count_pods(&x, &new_succ, &new_fail, &restarts);
    x.succeeded = num_or(x.st, "succeeded", 0) + new_succ +
                  cJSON_GetArraySize(cl_jget(cl_jget(x.st, "uncountedTerminatedPods"), "succeeded"));
    x.failed = num_or(x.st, "failed", 0) + new_fail +
               cJSON_GetArraySize(cl_jget(cl_jget(x.st, "uncountedTerminatedPods"), "failed"));
    if (x.indexed)
        x.succeeded = cluster_job_indexes_count(x.idx, x.completions);
    if (new_succ)
        j->fail_streak = 0;
    if (new_fail) {
        j->fail_streak += (int)new_fail;
        j->last_fail_ms = util_now_ms();
    }
    if (!cl_jstr(x.st, "startTime") && !x.suspended)
        set_now(x.st, "startTime");
    decide_finish(&x, restarts);
    if (x.finish != FIN_NONE) {
        /* deleteActivePods keeps the finalizers: these Pods count as failed */
        struct cl_jpod *jp, *tmp;
        HASH_ITER(hj, j->pods, jp, tmp)
            if (pod_active(jp->obj->json)) {
                bool ready = pod_ready(jp->obj->json);
                if (pod_delete(c, j, jp) == 0) {
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
    if (enact_finished(&x) && status_write(c, j, x.st) == 0) {
        if (x.finish == FIN_SUCCESS) {
            if (x.completions >= 0 && num_or(x.st, "succeeded", 0) > x.completions)
                cl_event(c, j->obj->json, "Warning", "TooManySucceededPods",
                         "Too many succeeded pods running after completion count reached",
                         COMPONENT, NULL, NULL);
            cl_event(c, j->obj->json, "Normal", "Completed", "Job completed", COMPONENT, NULL,
                     NULL);
        } else {
            cl_event(c, j->obj->json, "Warning", x.reason, x.message, COMPONENT, NULL, NULL);
        }
        job_ttl(c, j);
    } else if (old_status && !json_equal(x.st, old_status)) {
        status_write(c, j, x.st);
    }
out:
    cJSON_Delete(old_status);
    cJSON_Delete(x.st);
    free(x.idx);
}

/* ---- events and entry points ------------------------------------------------------------ */

static void job_free(struct cluster *c, struct cl_job *j, bool orphan_pods)
{
    struct cl_jpod *jp, *tmp;

    HASH_ITER(hj, j->pods, jp, tmp) {
        if (orphan_pods)
            orphan_finalizer(c, jp->obj);
        jp->job = NULL;
        HASH_DELETE(hj, j->pods, jp);
        jpod_free(c, jp);
    }
    HASH_DELETE(hh, c->jobs, j);
    HASH_DELETE(hu, c->jobs_uid, j);
    store_obj_unref(j->obj);
    free(j->uid);
    free(j->key);
    free(j);
}

void cl_job_event(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    char key[600];
    struct cl_job *j = NULL;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND(hh, c->jobs, key, strlen(key), j);
    if (j && strcmp(j->uid, o->uid)) {
        job_free(c, j, true);   /* deleted and re-created between two looks */
        j = NULL;
    }
    if (type == EV_DELETED) {
        if (j)
            job_free(c, j, true);
        return;
    }
    if (j && o->rv <= j->obj->rv)
        return;   /* a replayed snapshot, or our own write already applied */
    if (!j) {
        if (!(j = calloc(1, sizeof(*j))) || !(j->key = strdup(key)) || !(j->uid = strdup(o->uid))) {
            if (j)
                free(j->key);
            free(j);
            return;
        }
        j->epoch = ++c->next_epoch;
        HASH_ADD_KEYPTR(hh, c->jobs, j->key, strlen(j->key), j);
        HASH_ADD_KEYPTR(hu, c->jobs_uid, j->uid, strlen(j->uid), j);
    } else {
        store_obj_unref(j->obj);
    }
    j->obj = store_obj_ref(o);
    job_mark(c, j);
}

void cl_jobs_pod(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    char key[600];
    struct cl_jpod *jp = NULL;
    struct cl_job *j;
    const cJSON *ref;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND(hh, c->jpods, key, strlen(key), jp);
    if (type == EV_DELETED) {
        if (jp && !strcmp(jp->obj->uid, o->uid)) {
            job_mark(c, jp->job);
            jpod_free(c, jp);
        }
        return;
    }
    ref = cl_controller_ref(o->json, "batch/", "Job");
    j = ref ? job_by_uid(c, cl_jstr(ref, "uid")) : NULL;
    if (!j) {
        if (jp) {
            job_mark(c, jp->job);
            jpod_free(c, jp);
        }
        /* no Job of ours controls it (anymore): nobody will count it */
        orphan_finalizer(c, o);
        return;
    }
    jpod_set(c, j, o);
    job_mark(c, j);
}

void cl_jobs_timer(struct cluster *c, const char *key, unsigned long epoch)
{
    struct cl_job *j = NULL;

    HASH_FIND(hh, c->jobs, key, strlen(key), j);
    if (!j || j->epoch != epoch)
        return;
    if (j->wake_ms <= util_now_ms())
        j->wake_ms = 0;
    job_mark(c, j);
}

void cl_jobs_sync(struct cluster *c)
{
    /* syncing writes; the events come back next turn (then no-ops unless changed) */
    size_t n = c->njob_dirty;
    char **keys = c->job_dirty;

    c->job_dirty = NULL;
    c->njob_dirty = c->capjob_dirty = 0;
    for (size_t i = 0; i < n; i++) {
        struct cl_job *j = NULL;
        HASH_FIND(hh, c->jobs, keys[i], strlen(keys[i]), j);
        if (j) {
            j->dirty = false;
            job_sync(c, j);
        }
        free(keys[i]);
    }
    free(keys);
}

void cl_jobs_free(struct cluster *c)
{
    struct cl_job *j, *tj;
    struct cl_jpod *jp, *tp;

    HASH_ITER(hh, c->jobs, j, tj)
        job_free(c, j, false);
    HASH_ITER(hh, c->jpods, jp, tp)
        jpod_free(c, jp);
    for (size_t i = 0; i < c->njob_dirty; i++)
        free(c->job_dirty[i]);
    free(c->job_dirty);
    c->job_dirty = NULL;
    c->njob_dirty = c->capjob_dirty = 0;
}

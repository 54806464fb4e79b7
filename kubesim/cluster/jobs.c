/*
 * jobs.c - kubesim's batch/v1 Job controller and TTL-after-finished
 * controller, on the cluster thread like the scheduler and kubelet: the Job and
 * Job-Pod tables fed by store events, the controller's writes (Pods from the
 * template, deletions, tracking-finalizer removal, PUT of the Job's /status), the
 * TTL-after-finished deletion and the entry points run.c calls. The sync
 * itself (kubernetes pkg/controller/job syncJob, as of 1.33) is in
 * jobs_sync.c, its arithmetic in jobcalc.c.
 *
 * Bookkeeping: every Pod event looks the Pod up in c->jpods by key and its
 * controller reference in c->jobs_uid, so Pods no Job owns cost two hash probes.
 * A Job touched by an event or timer is synced once per cluster turn
 * (cluster__jobs_sync). Behaviour and gaps: docs/kubesim-cluster.md ("Jobs").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "util/util.h"

#define MANAGER "kube-controller-manager"

const cJSON *cluster__controller_ref(const cJSON *obj, const char *api_group, const char *kind)
{
    const cJSON *r = kobj_controller_ref(obj);
    const char *k = kobj_str(r, "kind"), *av = kobj_str(r, "apiVersion");

    return k && av && !strcmp(k, kind) && !strncmp(av, api_group, strlen(api_group)) ? r : NULL;
}

bool cluster__job_has_finalizer(const cJSON *obj, const char *f)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, kobj_get(kobj_get(obj, "metadata"), "finalizers"))
        if (cJSON_IsString(x) && !strcmp(x->valuestring, f))
            return true;
    return false;
}

bool cluster__job_deleting(const cJSON *obj)
{
    return kobj_get(kobj_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

const cJSON *cluster__job_cond_find(const cJSON *status, const char *type)
{
    const cJSON *cd;

    cJSON_ArrayForEach(cd, kobj_get(status, "conditions"))
        if (kobj_str(cd, "type") && !strcmp(kobj_str(cd, "type"), type))
            return cd;
    return NULL;
}

bool cluster__job_cond_true(const cJSON *status, const char *type)
{
    const char *s = kobj_str(cluster__job_cond_find(status, type), "status");
    return s && !strcmp(s, "True");
}

void cluster__job_set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v)
        cJSON_AddStringToObject(o, k, v);
}

bool cluster__job_uid_in(const cJSON *arr, const char *uid)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, arr)
        if (cJSON_IsString(x) && !strcmp(x->valuestring, uid))
            return true;
    return false;
}

/* ---- tables ----------------------------------------------------------------------- */

static void cluster__job_mark(struct cluster *c, struct cl_job *j)
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

void cluster__jpod_free(struct cluster *c, struct cl_jpod *jp)
{
    HASH_DELETE(hh, c->jpods, jp);
    if (jp->job)
        HASH_DELETE(hj, jp->job->pods, jp);
    store_obj_unref(jp->obj);
    free(jp->key);
    free(jp);
}

/* Records o as j's Pod (newer than what the table holds). */
void cluster__jpod_set(struct cluster *c, struct cl_job *j, struct store_obj *o)
{
    char key[600];
    struct cl_jpod *jp;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND(hh, c->jpods, key, strlen(key), jp);
    if (jp && !strcmp(jp->obj->uid, o->uid) && o->rv < jp->obj->rv)
        return;
    if (jp && jp->job != j) {
        cluster__job_mark(c, jp->job);
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
int cluster__job_drop_finalizer(struct cluster *c, struct store_obj *pod, struct store_obj **out)
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

    if (cluster__job_has_finalizer(store_obj_json(pod), TRACKING_FIN) && cluster__job_drop_finalizer(c, pod, &out) == 0)
        store_obj_unref(out);
}

/* The Job's Event for a Pod it created or deleted (rc 0), or failed to (st says why). */
static void pod_write_event(struct cluster *c, struct cl_job *j, bool create, int rc,
                            const char *pod, const struct store_status *st)
{
    char msg[1200];

    if (rc == 0) {
        snprintf(msg, sizeof(msg), "%s pod: %s", create ? "Created" : "Deleted", pod);
        cluster__event(c, store_obj_json(j->obj), "Normal", create ? "SuccessfulCreate" : "SuccessfulDelete",
                       msg, COMPONENT, NULL, NULL);
    } else {
        snprintf(msg, sizeof(msg), "Error %s: %.*s", create ? "creating" : "deleting",
                 create ? 1000 : 300, st->message);
        cluster__event(c, store_obj_json(j->obj), "Warning", create ? "FailedCreate" : "FailedDelete", msg,
                       COMPONENT, NULL, NULL);
    }
}

int cluster__job_pod_delete(struct cluster *c, struct cl_job *j, struct cl_jpod *jp)
{
    struct store_delete_opts o = { .grace_seconds = -1, .precondition_uid = jp->obj->uid };
    struct store_status st = { 0 };
    struct store_obj *out = NULL;
    int rc;

    rc = store_delete(c->store, c->r_pods, jp->obj->ns, jp->obj->name, &o, &out, NULL, &st);
    if (rc == 0 && out && out->res == c->r_pods)
        cluster__jpod_set(c, j, out);
    if (rc < 0 && st.code == 404)
        rc = 0;   /* already gone: nothing to report */
    else
        pod_write_event(c, j, false, rc, jp->obj->name, &st);
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
            have |= kobj_str(x, "name") && !strcmp(kobj_str(x, "name"), "JOB_COMPLETION_INDEX");
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
int cluster__job_pod_create(struct cluster *c, struct cl_job *j, long index)
{
    const cJSON *job = store_obj_json(j->obj), *tmpl = kobj_get(kobj_get(job, "spec"), "template");
    const cJSON *tmd = kobj_get(tmpl, "metadata");
    const char *name = j->obj->name;
    cJSON *pod = cJSON_CreateObject(), *md, *spec, *lb, *an, *fin, *refs, *ref;
    struct store_write_opts w = { .field_manager = MANAGER };
    struct store_status st = { 0 };
    struct store_obj *out = NULL;
    char gen[300], ix[24];
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
    lb = cJSON_IsObject(kobj_get(tmd, "labels")) ? cJSON_Duplicate(kobj_get(tmd, "labels"), true)
                                                : cJSON_CreateObject();
    an = cJSON_IsObject(kobj_get(tmd, "annotations"))
             ? cJSON_Duplicate(kobj_get(tmd, "annotations"), true) : NULL;
    if (index >= 0) {
        if (!an)
            an = cJSON_CreateObject();
        cluster__job_set_str(an, INDEX_KEY, ix);
        cluster__job_set_str(lb, INDEX_KEY, ix);
    }
    cJSON_AddItemToObject(md, "labels", lb);
    if (an)
        cJSON_AddItemToObject(md, "annotations", an);
    fin = cJSON_IsArray(kobj_get(tmd, "finalizers"))
              ? cJSON_Duplicate(kobj_get(tmd, "finalizers"), true) : cJSON_CreateArray();
    if (!cluster__job_uid_in(fin, TRACKING_FIN))
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
    spec = cJSON_Duplicate(kobj_get(tmpl, "spec"), true);
    if (!spec)
        spec = cJSON_CreateObject();
    if (index >= 0) {
        char host[80];
        snprintf(host, sizeof(host), "%.*s-%ld", 52, name, index);
        cluster__job_set_str(spec, "hostname", host);
        add_index_env(cJSON_GetObjectItemCaseSensitive(spec, "containers"));
        add_index_env(cJSON_GetObjectItemCaseSensitive(spec, "initContainers"));
    }
    cJSON_AddItemToObject(pod, "spec", spec);
    rc = store_create(c->store, c->r_pods, j->obj->ns, pod, &w, &out, &st);
    if (rc == 0)
        cluster__jpod_set(c, j, out);
    pod_write_event(c, j, true, rc, rc == 0 ? out->name : NULL, &st);
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
int cluster__job_status_write(struct cluster *c, struct cl_job *j, cJSON *status)
{
    cJSON *obj = cJSON_Duplicate(store_obj_json(j->obj), true);
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
void cluster__job_wake(struct cluster *c, struct cl_job *j, uint64_t delay_ms)
{
    uint64_t due = util_now_ms() + delay_ms;

    if (j->wake_ms && j->wake_ms <= due && j->wake_ms > util_now_ms())
        return;
    j->wake_ms = due;
    cluster__timer_add_key(c, delay_ms, T_JOB, j->key, j->epoch);
}

/* ---- TTL after finished --------------------------------------------------------------- */

void cluster__job_ttl(struct cluster *c, struct cl_job *j)
{
    const cJSON *job = store_obj_json(j->obj);
    const cJSON *ttl = kobj_get(kobj_get(job, "spec"), "ttlSecondsAfterFinished");
    const cJSON *status = kobj_get(job, "status");
    const cJSON *cd = cluster__job_cond_true(status, "Complete") ? cluster__job_cond_find(status, "Complete")
                                                    : cluster__job_cond_find(status, "Failed");
    const char *ts = kobj_str(cd, "lastTransitionTime");
    time_t fin, now = time(NULL);

    if (!cJSON_IsNumber(ttl) || ttl->valuedouble < 0 || cluster__job_deleting(job) || !ts ||
        util_parse_time(ts, &fin) < 0)
        return;
    if (now < fin + (time_t)ttl->valuedouble) {
        cluster__job_wake(c, j, (uint64_t)(fin + (time_t)ttl->valuedouble - now) * 1000);
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

/* ---- events and entry points ------------------------------------------------------------ */

static void job_free(struct cluster *c, struct cl_job *j, bool orphan_pods)
{
    struct cl_jpod *jp, *tmp;

    HASH_ITER(hj, j->pods, jp, tmp) {
        if (orphan_pods)
            orphan_finalizer(c, jp->obj);
        jp->job = NULL;
        HASH_DELETE(hj, j->pods, jp);
        cluster__jpod_free(c, jp);
    }
    HASH_DELETE(hh, c->jobs, j);
    HASH_DELETE(hu, c->jobs_uid, j);
    store_obj_unref(j->obj);
    free(j->uid);
    free(j->key);
    free(j);
}

void cluster__job_event(struct cluster *c, enum store_event_type type, struct store_obj *o)
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
    cluster__job_mark(c, j);
}

void cluster__jobs_pod(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    char key[600];
    struct cl_jpod *jp = NULL;
    struct cl_job *j;
    const struct cl_pod *p;
    const cJSON *ref;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND(hh, c->jpods, key, strlen(key), jp);
    if (type == EV_DELETED) {
        if (jp && !strcmp(jp->obj->uid, o->uid)) {
            cluster__job_mark(c, jp->job);
            cluster__jpod_free(c, jp);
        }
        return;
    }
    /* the Pod record holds its controller and finalizer: most Pods no Job controls, and
     * their snapshots need not be parsed for that (pods.c) */
    if ((p = cluster__pod_rec(c, o)))
        j = p->v.ctl == CL_CTL_JOB ? job_by_uid(c, p->v.ctl_uid) : NULL;
    else
        j = (ref = cluster__controller_ref(store_obj_json(o), "batch/", "Job")) ?
            job_by_uid(c, kobj_str(ref, "uid")) : NULL;
    if (!j) {
        if (jp) {
            cluster__job_mark(c, jp->job);
            cluster__jpod_free(c, jp);
        }
        /* no Job of ours controls it (anymore): nobody will count it */
        if (p ? p->v.job_fin : cluster__job_has_finalizer(store_obj_json(o), TRACKING_FIN))
            orphan_finalizer(c, o);
        return;
    }
    cluster__jpod_set(c, j, o);
    cluster__job_mark(c, j);
}

void cluster__jobs_timer(struct cluster *c, const char *key, unsigned long epoch)
{
    struct cl_job *j = NULL;

    HASH_FIND(hh, c->jobs, key, strlen(key), j);
    if (!j || j->epoch != epoch)
        return;
    if (j->wake_ms <= util_now_ms())
        j->wake_ms = 0;
    cluster__job_mark(c, j);
}

void cluster__jobs_sync(struct cluster *c)
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
            cluster__job_sync(c, j);
        }
        free(keys[i]);
    }
    free(keys);
}

void cluster__jobs_free(struct cluster *c)
{
    struct cl_job *j, *tj;
    struct cl_jpod *jp, *tp;

    HASH_ITER(hh, c->jobs, j, tj)
        job_free(c, j, false);
    HASH_ITER(hh, c->jpods, jp, tp)
        cluster__jpod_free(c, jp);
    for (size_t i = 0; i < c->njob_dirty; i++)
        free(c->job_dirty[i]);
    free(c->job_dirty);
    c->job_dirty = NULL;
    c->njob_dirty = c->capjob_dirty = 0;
}


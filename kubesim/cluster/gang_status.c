/*
 * gang_status.c - the PodGroup status the gang step (gang.c) writes for the
 * schedulers other than Volcano (whose status is in gang_volcano.c):
 *
 *  - scheduler-plugins (scheduling.x-k8s.io/v1alpha1): what its PodGroup controller
 *    and the coscheduling plugin keep there together: phase (Pending, PreScheduling,
 *    Scheduled, Running, Finished, Failed), the scheduled/running/succeeded/failed
 *    counts, occupiedBy and scheduleStartTime.
 *  - Kubernetes WAS (scheduling.k8s.io/v1alpha2): the PodGroupScheduled condition,
 *    True with reason Scheduled once minCount Pods are bound (terminal: later
 *    evictions do not turn it back), False with reason Unschedulable and the gang's
 *    text while it does not fit.
 *
 * Written only when something changed, through the status subresource. Cluster
 * thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/cluster/internal.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

static void now_rfc3339(char *out, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int64_t num(const cJSON *o, const char *k)
{
    const cJSON *v = kobj_get(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static void status_patch(struct cluster *c, const struct reg_resource *r, const struct gang *g,
                         cJSON *body, const char *manager)
{
    struct store_write_opts w = { .field_manager = manager };
    struct store_status st = { 0 };
    char *text = cJSON_PrintUnformatted(body);
    if (text && store_patch(c->store, r, g->ns, g->name, "status", PATCH_MERGE, text, strlen(text),
                            &w, NULL, NULL, &st) < 0)
        log_debug("gang: PodGroup status", "podgroup", g->name, "error", st.message, NULL);
    free(text);
    store_status_clear(&st);
}

/* The coscheduling phase: the controller's count-based phases win over the
 * scheduling ones, as its reconcile applies them last. */
static const char *sp_phase(const struct gang *g, const struct outcome *o, size_t live)
{
    if (!g->n || (int64_t)live < g->min)
        return "Pending";
    if (o->failed && o->failed + o->running + o->succeeded >= g->min)
        return "Failed";
    if (o->succeeded >= g->min)
        return "Finished";
    if (o->running + o->succeeded >= g->min)
        return "Running";
    if (o->scheduled >= g->min)
        return "Scheduled";
    return o->scheduled ? "Scheduling" : "PreScheduling";
}

static void sp_status(struct cluster *c, const struct gang *g, const struct outcome *o)
{
    const struct reg_resource *r = cluster__gang_find(c, SP_GROUP, "v1alpha1", "podgroups");
    const cJSON *old = kobj_get(store_obj_json(g->pg), "status");
    const char *old_phase = kobj_str(old, "phase") ? kobj_str(old, "phase") : "";
    const char *old_start = kobj_str(old, "scheduleStartTime");
    char occupied[300] = "", now[40];
    size_t live = 0;
    cJSON *body, *st;
    if (!r)
        return;
    for (size_t i = 0; i < g->n; i++) {
        const cJSON *meta = kobj_get(store_obj_json(g->m[i]->obj), "metadata");
        const cJSON *owner = cJSON_GetArrayItem(kobj_get(meta, "ownerReferences"), 0);
        if (!kobj_get(meta, "deletionTimestamp"))
            live++;
        /* the controller records the owner of the Pods that took the group */
        if (!occupied[0] && kobj_str(owner, "name"))
            snprintf(occupied, sizeof(occupied), "%s/%s", g->ns, kobj_str(owner, "name"));
    }
    const char *phase = sp_phase(g, o, live);
    const int64_t counts[4] = { o->scheduled, o->running, o->succeeded, o->failed };
    static const char *const names[4] = { "scheduled", "running", "succeeded", "failed" };
    bool changed = strcmp(old_phase, phase) != 0 || (occupied[0] && !kobj_str(old, "occupiedBy")) ||
                   (!old_start && strcmp(phase, "Pending"));
    for (int k = 0; k < 4; k++)
        changed = changed || num(old, names[k]) != counts[k];
    if (!changed || !(body = cJSON_CreateObject()))
        return;
    st = cJSON_AddObjectToObject(body, "status");
    cJSON_AddStringToObject(st, "phase", phase);
    for (int k = 0; k < 4; k++) {   /* omitempty: a zero goes as null */
        if (counts[k])
            cJSON_AddNumberToObject(st, names[k], (double)counts[k]);
        else if (kobj_get(old, names[k]))
            cJSON_AddNullToObject(st, names[k]);
    }
    if (occupied[0] && !kobj_str(old, "occupiedBy"))
        cJSON_AddStringToObject(st, "occupiedBy", occupied);
    if (!old_start && strcmp(phase, "Pending")) {
        now_rfc3339(now, sizeof(now));
        cJSON_AddStringToObject(st, "scheduleStartTime", now);
    }
    status_patch(c, r, g, body, "scheduler-plugins-controller");
    cJSON_Delete(body);
}

static void was_status(struct cluster *c, const struct gang *g, const struct outcome *o,
                       const char *unsched_msg)
{
    const struct reg_resource *r = cluster__gang_find(c, "scheduling.k8s.io", "v1alpha2",
                                                      "podgroups");
    const cJSON *old = kobj_get(store_obj_json(g->pg), "status"), *e, *have = NULL;
    const char *status, *reason, *msg, *hs;
    char now[40];
    cJSON *body, *conds, *cond;
    if (!r)
        return;
    cJSON_ArrayForEach(e, kobj_get(old, "conditions"))
        if (kobj_str(e, "type") && !strcmp(kobj_str(e, "type"), "PodGroupScheduled"))
            have = e;
    hs = have && kobj_str(have, "status") ? kobj_str(have, "status") : "";
    /* True is the initial scheduling decision, never revised */
    if (!strcmp(hs, "True"))
        return;
    if (o->scheduled >= g->min && o->scheduled > 0) {
        status = "True", reason = "Scheduled", msg = "";
    } else if (unsched_msg) {
        status = "False", reason = "Unschedulable", msg = unsched_msg;
    } else {
        return;
    }
    if (have && !strcmp(hs, status) &&
        !strcmp(kobj_str(have, "reason") ? kobj_str(have, "reason") : "", reason) &&
        !strcmp(kobj_str(have, "message") ? kobj_str(have, "message") : "", msg))
        return;
    if (!(body = cJSON_CreateObject()))
        return;
    now_rfc3339(now, sizeof(now));
    /* a merge patch replaces the list: the other conditions go back as they were */
    conds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "conditions");
    cJSON_ArrayForEach(e, kobj_get(old, "conditions"))
        if (e != have)
            cJSON_AddItemToArray(conds, cJSON_Duplicate(e, 1));
    cond = cJSON_CreateObject();
    cJSON_AddItemToArray(conds, cond);
    cJSON_AddStringToObject(cond, "type", "PodGroupScheduled");
    cJSON_AddStringToObject(cond, "status", status);
    cJSON_AddNumberToObject(cond, "observedGeneration",
                            (double)num(kobj_get(store_obj_json(g->pg), "metadata"), "generation"));
    /* the transition time moves only when the status does */
    cJSON_AddStringToObject(cond, "lastTransitionTime",
                            have && kobj_str(have, "lastTransitionTime") && !strcmp(hs, status)
                                ? kobj_str(have, "lastTransitionTime") : now);
    cJSON_AddStringToObject(cond, "reason", reason);
    cJSON_AddStringToObject(cond, "message", msg);
    status_patch(c, r, g, body, "kube-scheduler");
    cJSON_Delete(body);
}

void cluster__gang_pg_status(struct cluster *c, const struct gang *g, const struct outcome *o,
                             const char *unsched_msg)
{
    if (!g->pg)
        return;
    if (g->kind == G_SP)
        sp_status(c, g, o);
    else if (g->kind == G_WAS)
        was_status(c, g, o, unsched_msg);
}

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
 * Written only when something changed, through the status subresource.
 *
 * And what those two scheduler profiles say of a gang that waits, in the
 * kube-scheduler's words (FitError: "0/N nodes are available: PREFILTER. FILTER.
 * POSTFILTER"): the coscheduling plugin's (scheduler-plugins, with the profile of its
 * own sample configuration: DefaultPreemption, then Coscheduling, at PostFilter) and
 * the pod group cycle's (WAS: the GangScheduling plugin's PreEnqueue and
 * PlacementFeasible). Read from scheduler-plugins v0.35 and Kubernetes 1.36; not
 * checked against a running scheduler. Cluster thread only.
 */
#include <inttypes.h>
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

/* ---- what the kube-scheduler profiles say ----------------------------------------- */

/* A resource.Quantity as Go holds it on the fast path (int64 value x 10^scale), and its
 * Format: what fmt's %v prints of a Quantity that is not addressable. */
struct goq {
    int64_t value;
    int scale;
    const char *format;
};

/* ParseQuantity's fast path for the canonical strings the API server stores ("3",
 * "3500m", "4Gi", "1G"); false for anything else (a fraction with a binary suffix
 * takes Go's inf.Dec path, whose print is a pointer). */
static bool goq_parse(const char *s, struct goq *q)
{
    static const struct { const char *sfx; int exp; bool bin; } sf[] = {
        { "Ki", 10, true }, { "Mi", 20, true }, { "Gi", 30, true }, { "Ti", 40, true },
        { "Pi", 50, true }, { "Ei", 60, true }, { "n", -9, false }, { "u", -6, false },
        { "m", -3, false }, { "k", 3, false }, { "M", 6, false }, { "G", 9, false },
        { "T", 12, false }, { "P", 15, false }, { "E", 18, false }, { "", 0, false },
    };
    char digits[24];
    size_t nd = 0, nfrac = 0;
    const char *p = s;
    bool neg = false, frac = false;
    if (!s)
        return false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !frac); p++) {
        if (*p == '.') {
            frac = true;
            continue;
        }
        if (nd + 1 >= sizeof(digits))
            return false;
        digits[nd++] = *p;
        nfrac += frac;
    }
    digits[nd] = '\0';
    if (!nd)
        return false;
    for (size_t k = 0; k < sizeof(sf) / sizeof(sf[0]); k++) {
        if (strcmp(p, sf[k].sfx))
            continue;
        int64_t v = strtoll(digits, NULL, 10);
        if (sf[k].bin) {
            if (nfrac || v > (INT64_MAX >> sf[k].exp))
                return false;
            q->value = v << sf[k].exp;
            q->scale = 0;
            q->format = "BinarySI";
        } else {
            q->value = v;
            q->scale = sf[k].exp - (int)nfrac;
            q->format = "DecimalSI";
        }
        q->value = neg ? -q->value : q->value;
        return true;
    }
    return false;
}

/* Quantity.Sub on the int64 path (int64Amount.Add of the negation): the result takes
 * the smaller scale; a zero keeps the other's format. */
static void goq_sub(struct goq *a, const struct goq *b)
{
    int64_t bv = -b->value;
    if (a->value == 0)
        a->format = b->format;
    if (bv == 0)
        return;
    if (a->value == 0) {
        a->value = bv;
        a->scale = b->scale;
        return;
    }
    while (a->scale > b->scale) {   /* bounded: scales are within -9..18 */
        a->value *= 10;
        a->scale--;
    }
    for (int s = b->scale; s > a->scale; s--)
        bv *= 10;
    a->value += bv;
}

/* The coscheduling plugin's PreFilter resource check (CheckClusterResource): the
 * PodGroup's minResources plus minMember Pods, less what each node has left once the
 * group's own Pods are taken off it; "resource gap: map[...]" with what remains, or
 * false when the nodes hold it all. */
bool cluster__sp_gap(const struct gang *g, const struct nodes *ns, char *out, size_t cap)
{
    const cJSON *mr = kobj_get(kobj_get(store_obj_json(g->pg), "spec"), "minResources"), *e;
    struct { char name[64]; struct goq q; bool live; } rq[9];
    size_t n = 0, off;
    if (!g->pg || !cJSON_IsObject(mr))
        return false;
    cJSON_ArrayForEach(e, mr) {
        if (n >= 8 || !cJSON_IsString(e) || !goq_parse(e->valuestring, &rq[n].q))
            continue;
        snprintf(rq[n].name, sizeof(rq[n].name), "%s", e->string);
        rq[n++].live = true;
    }
    snprintf(rq[n].name, sizeof(rq[n].name), "pods");
    rq[n].q = (struct goq){ g->min, 0, "DecimalSI" };
    rq[n++].live = true;
    for (size_t i = 0; i < ns->count; i++) {
        struct cluster_res left = ns->n[i]->alloc;
        int64_t pods = left.pods;
        cluster__gang_res_add(&left, &ns->n[i]->used, -1);
        pods -= ns->n[i]->used.pods;
        for (size_t m = 0; m < g->n; m++) {
            const struct cl_pod *p = g->m[m];
            if (p->acct_node && !strcmp(p->acct_node, ns->n[i]->name)) {
                cluster__gang_res_add(&left, &p->req, 1);
                pods++;
            }
        }
        for (size_t k = 0; k < n; k++) {
            struct goq have = { 0, 0, "DecimalSI" };
            if (!rq[k].live)
                continue;
            if (!strcmp(rq[k].name, "cpu"))
                have = (struct goq){ left.cpu_m, -3, "DecimalSI" };
            else if (!strcmp(rq[k].name, "memory"))
                have = (struct goq){ left.mem, 0, "BinarySI" };
            else if (!strcmp(rq[k].name, "pods"))
                have = (struct goq){ pods, 0, "BinarySI" };
            else if (!strcmp(rq[k].name, "nvidia.com/gpu"))
                have = (struct goq){ left.gpu, 0, "DecimalSI" };
            else if (!strcmp(rq[k].name, "google.com/tpu"))
                have = (struct goq){ left.tpu, 0, "DecimalSI" };
            goq_sub(&rq[k].q, &have);
            rq[k].live = rq[k].q.value > 0;
        }
    }
    /* Go prints a map sorted by key */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(rq[j - 1].name, rq[j].name) > 0; j--) {
            __typeof__(rq[0]) t = rq[j];
            rq[j] = rq[j - 1];
            rq[j - 1] = t;
        }
    off = (size_t)snprintf(out, cap, "resource gap: map[");
    bool any = false;
    for (size_t k = 0; k < n && off < cap; k++) {
        if (!rq[k].live)
            continue;
        off += (size_t)snprintf(out + off, cap - off, "%s%s:{{%" PRId64 " %d} {<nil>}  %s}",
                                any ? " " : "", rq[k].name, rq[k].q.value, rq[k].q.scale,
                                rq[k].q.format);
        any = true;
    }
    if (off < cap)
        snprintf(out + off, cap - off, "]");
    return any;
}

void cluster__sp_texts(struct cluster *c, const struct gang *g, const struct outcome *o,
                       const struct nodes *ns)
{
    char pre[400] = "", post[400] = "", msg[1300];
    int64_t assigned = o->scheduled;
    const char *comp = "scheduler-plugins-scheduler";
    bool few = (int64_t)g->n < g->min;
    if (!g->pg)
        return;
    /* PreFilter: enough Pods in the group, then its minResources against the nodes */
    if (few)
        snprintf(pre, sizeof(pre), "cannot find enough sibling pods, current pods number: "
                 "%zu, minMember of group: %" PRId64, g->n, g->min);
    else if (!cluster__sp_gap(g, ns, pre, sizeof(pre)))
        pre[0] = '\0';
    for (size_t i = 0; i < g->n; i++) {
        struct cl_pod *p = g->m[i];
        const struct gang_try *t = o->tries ? &o->tries[i] : NULL;
        if (!cluster__gang_waiting(p))
            continue;
        /* PostFilter, Coscheduling: the whole group is turned back unless it is within
         * PodGroupRejectPercentage (10) of minMember */
        int64_t before = assigned + (t && t->tried ? t->before : 0);
        bool reject = before < g->min && (g->min - before) * 10 > g->min;
        snprintf(post, sizeof(post), ", PodGroup %.100s/%.100s gets rejected due to Pod %.100s "
                 "is unschedulable even after PostFilter", g->ns, g->name, p->obj->name);
        if (few) {
            snprintf(msg, sizeof(msg), "0/%zu nodes are available: pre-filter pod %.100s %s. "
                     "preemption: 0/%zu nodes are available: %zu Preemption is not helpful for "
                     "scheduling.%s", o->nodes, p->obj->name, pre, o->nodes, o->nodes,
                     reject ? post : "");
        } else if (pre[0]) {
            snprintf(msg, sizeof(msg), "0/%zu nodes are available: %s. preemption: 0/%zu nodes "
                     "are available: %zu Preemption is not helpful for scheduling.%s", o->nodes,
                     pre, o->nodes, o->nodes, reject ? post : "");
        } else if (t && t->unfit) {
            char fit[400];
            cluster_unsched_message(o->nodes, t->fits, t->taint, fit, sizeof(fit));
            snprintf(msg, sizeof(msg), "%s%s", fit, reject ? post : "");
        } else if (t && t->tried) {
            /* assumed and waiting at Permit when another Pod of the group failed: its
             * PostFilter turns the waiting ones back, else they wait */
            int64_t first_fail = -1;
            for (size_t k = 0; k < g->n && first_fail < 0; k++)
                if (o->tries[k].unfit)
                    first_fail = assigned + o->tries[k].before;
            if (first_fail < 0 || first_fail >= g->min || (g->min - first_fail) * 10 <= g->min)
                continue;
            snprintf(msg, sizeof(msg), "optimistic rejection in PostFilter");
        } else {
            continue;
        }
        cluster__gang_tell(c, p, msg, "Warning", "FailedScheduling", msg, comp);
    }
}

const char *cluster__was_texts(struct cluster *c, const struct gang *g, const struct outcome *o,
                               char *msg, size_t cap)
{
    char pod[CL_UNSCHED_MSG_MAX];
    /* PreEnqueue holds the Pods back until minCount exist: no cycle, nothing said */
    if (!g->pg || (int64_t)g->n < g->min)
        return NULL;
    /* PlacementFeasible after the last Pod of the cycle: the ones bound or placed */
    snprintf(msg, cap, "minCount (%" PRId64 ") cannot be satisfied: %" PRId64 " scheduled, "
             "0 remaining", g->min, o->scheduled + o->placed);
    for (size_t i = 0; i < g->n; i++) {
        struct cl_pod *p = g->m[i];
        const struct gang_try *t = o->tries ? &o->tries[i] : NULL;
        if (!cluster__gang_waiting(p))
            continue;
        if (t && t->unfit)
            cluster_unsched_message(o->nodes, t->fits, t->taint, pod, sizeof(pod));
        else
            snprintf(pod, sizeof(pod), "pod group is unschedulable, %s", msg);
        cluster__gang_tell(c, p, pod, "Warning", "FailedScheduling", pod, "default-scheduler");
    }
    return msg;
}

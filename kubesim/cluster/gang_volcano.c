/*
 * gang_volcano.c - what kubesim's gang step (gang.c) does as Volcano: its Queues
 * (loaded per session, the default Queue made as Volcano's controller makes it,
 * status counts kept), the proportion plugin's deserved share by weight, the
 * enqueue action's checks (queue capability, the overcommit plugin's 1.2 of idle
 * resources), and the PodGroup status, conditions and Events Volcano writes.
 * Cluster thread only. What is simulated: docs/batch-scheduling.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/cluster/internal.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

#define OVERCOMMIT 1.2   /* Volcano's overcommit plugin default factor */

void cluster__volcano_queues_load(struct cluster *c, const struct reg_resource *rq,
                                  struct gqueue **qs, struct store_list *ql)
{
    static const char *const dims[] = { "cpu", "memory", "nvidia.com/gpu", "google.com/tpu" };
    if (cluster__gang_list(c, rq, ql) < 0)
        return;
    for (size_t i = 0; i < ql->n; i++) {
        struct gqueue *q = calloc(1, sizeof(*q));
        const cJSON *capj = kobj_get(kobj_get(store_obj_json(ql->items[i]), "spec"), "capability");
        const char *state = kobj_str(kobj_get(store_obj_json(ql->items[i]), "status"), "state");
        if (!q)
            continue;
        snprintf(q->name, sizeof(q->name), "%s", ql->items[i]->name);
        q->obj = ql->items[i];
        q->open = !state || !*state || !strcmp(state, "Open");
        const cJSON *spec = kobj_get(store_obj_json(ql->items[i]), "spec");
        const cJSON *wj = kobj_get(spec, "weight"), *pj = kobj_get(spec, "priority");
        q->weight = cJSON_IsNumber(wj) && wj->valuedouble >= 1 ? wj->valuedouble : 1;
        q->priority = cJSON_IsNumber(pj) ? (int64_t)pj->valuedouble : 0;
        q->reclaimable = !cJSON_IsFalse(kobj_get(spec, "reclaimable"));
        cluster__gang_reslist(capj, &q->cap);
        for (int d = 0; d < 4; d++)
            q->has_cap[d] = kobj_get(capj, dims[d]) != NULL;
        cluster__gang_reslist(kobj_get(kobj_get(spec, "guarantee"), "resource"), &q->guarantee);
        /* the queue controller puts a queue without a parent under root */
        snprintf(q->parent, sizeof(q->parent), "%s",
                 kobj_str(spec, "parent") && *kobj_str(spec, "parent") ? kobj_str(spec, "parent")
                 : strcmp(q->name, "root") ? "root" : "");
        HASH_ADD_STR(*qs, name, q);
    }
}

/* The Queues Volcano's scheduler creates at start when missing: root (not reclaimable)
 * and default; this session already treats them as there (Open, no capability). */
static void make_queue(struct cluster *c, const struct reg_resource *rq, struct gqueue **qs,
                       const char *name, bool reclaimable)
{
    struct gqueue *q = NULL;
    struct store_write_opts w = { .field_manager = "volcano-scheduler" };
    struct store_status st = { 0 };
    struct store_obj *made = NULL;
    char text[300];
    HASH_FIND_STR(*qs, name, q);
    if (q || !rq)
        return;
    snprintf(text, sizeof(text), "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
             "\"Queue\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"reclaimable\":%s,"
             "\"weight\":1}}", name, reclaimable ? "true" : "false");
    cJSON *o = cJSON_Parse(text);
    /* store_create consumes o */
    if (o && store_create(c->store, rq, "", o, &w, &made, &st) < 0)
        log_debug("gang: volcano queue", "queue", name, "error", st.message, NULL);
    store_status_clear(&st);
    if (made && (q = calloc(1, sizeof(*q)))) {
        snprintf(q->name, sizeof(q->name), "%s", name);
        snprintf(q->parent, sizeof(q->parent), "%s", strcmp(name, "root") ? "root" : "");
        q->obj = made;
        q->owned = true;
        q->open = true;
        q->reclaimable = reclaimable;
        q->weight = 1;
        HASH_ADD_STR(*qs, name, q);
    } else {
        store_obj_unref(made);
    }
}

void cluster__volcano_default_queue(struct cluster *c, const struct reg_resource *rq,
                                    struct gqueue **qs)
{
    make_queue(c, rq, qs, "root", false);
    make_queue(c, rq, qs, "default", true);
}

/* ---- the capacity plugin's hierarchy ------------------------------------------------ */

#define HIER_DEPTH 16                 /* parent links followed; a cycle ends there */
#define HIER_INF (INT64_MAX / 4)      /* an unset capability: no limit */

static int64_t *hdim(struct cluster_res *r, int d)
{
    return d == 0 ? &r->cpu_m : d == 1 ? &r->mem : d == 2 ? &r->gpu : &r->tpu;
}

bool cluster__volcano_hierarchy(struct gqueue *qs, struct gang **all, size_t n)
{
    struct gqueue *q, *qt;
    bool blocked = false;
    HASH_ITER(hh, qs, q, qt) {
        q->up = NULL;
        q->has_children = false;
        q->has_deserved = false;   /* the capacity plugin replaces proportion's shares */
    }
    HASH_ITER(hh, qs, q, qt) {
        if (q->parent[0])
            HASH_FIND_STR(qs, q->parent, q->up);
        if (q->up == q)
            q->up = NULL;
        if (q->up)
            q->up->has_children = true;
    }
    /* the descendants' allocated and inqueue count in each ancestor */
    HASH_ITER(hh, qs, q, qt) {
        struct gqueue *a = q->up;
        for (int depth = 0; a && depth < HIER_DEPTH; depth++, a = a->up) {
            cluster__gang_res_add(&a->allocated, &q->allocated, 1);
            cluster__gang_res_add(&a->inqueue, &q->inqueue, 1);
        }
    }
    HASH_ITER(hh, qs, q, qt)
        q->share_used = q->allocated;
    /* realCapability top down: a queue is done once its parent is (bounded passes) */
    bool done_any = true;
    HASH_ITER(hh, qs, q, qt) {
        q->real_set = !q->up;
        if (!q->up)
            for (int d = 0; d < 4; d++)
                *hdim(&q->real, d) = q->has_cap[d] ? *hdim(&q->cap, d) : HIER_INF;
    }
    for (int pass = 0; done_any && pass < HIER_DEPTH; pass++) {
        done_any = false;
        HASH_ITER(hh, qs, q, qt) {
            if (q->real_set || !q->up->real_set)
                continue;
            struct gqueue *p = q->up, *s, *st2;
            struct cluster_res sibs = { 0 };
            HASH_ITER(hh, qs, s, st2)
                if (s->up == p)
                    cluster__gang_res_add(&sibs, &s->guarantee, 1);
            for (int d = 0; d < 4; d++) {
                /* what the child does not set it takes from its parent */
                int64_t capd = q->has_cap[d] ? *hdim(&q->cap, d) : *hdim(&p->real, d);
                int64_t room = *hdim(&p->real, d) >= HIER_INF ? HIER_INF
                               : *hdim(&p->real, d) - *hdim(&sibs, d);
                if (room < 0)
                    room = 0;
                if (room < HIER_INF)
                    room += *hdim(&q->guarantee, d);
                *hdim(&q->real, d) = capd < room ? capd : room;
            }
            q->real_set = true;
            done_any = true;
        }
    }
    HASH_ITER(hh, qs, q, qt)
        if (!q->real_set)   /* in a cycle: no room */
            memset(&q->real, 0, sizeof(q->real));
    for (size_t k = 0; k < n; k++)
        if (all[k]->kind == G_VOLCANO && all[k]->pg && all[k]->q && all[k]->q->has_children)
            blocked = true;
    return blocked;
}

const char *cluster__volcano_hier_enqueue(const struct gang *g, const struct gqueue *q,
                                          char *why, size_t cap)
{
    static const char *const names[] = { "cpu", "memory", "nvidia.com/gpu", "google.com/tpu" };
    const int64_t need[4] = { g->minres.cpu_m, g->minres.mem, g->minres.gpu, g->minres.tpu };
    bool shy[4] = { false };
    size_t off = 0;
    why[0] = '\0';
    if (!g->has_minres)
        return NULL;
    /* from the root down to the queue, as Volcano walks the list; the first short one speaks */
    const struct gqueue *path[HIER_DEPTH];
    int np = 0;
    for (const struct gqueue *a = q; a && np < HIER_DEPTH; a = a->up)
        path[np++] = a;
    for (int i = np - 1; i >= 0 && !off; i--) {
        const struct gqueue *a = path[i];
        const int64_t used[4] = { a->allocated.cpu_m + a->inqueue.cpu_m, a->allocated.mem + a->inqueue.mem,
                                  a->allocated.gpu + a->inqueue.gpu, a->allocated.tpu + a->inqueue.tpu };
        const int64_t real[4] = { a->real.cpu_m, a->real.mem, a->real.gpu, a->real.tpu };
        for (int d = 0; d < 4; d++)
            shy[d] = need[d] > 0 && need[d] + used[d] > real[d];
        for (int d = 0; d < 4; d++)
            if (shy[d])
                off += (size_t)snprintf(why + off, off < cap ? cap - off : 0, "%sinsufficient %s",
                                        off ? ", " : "queue resource quota insufficient: ", names[d]);
    }
    return why[0] ? why : NULL;
}

bool cluster__volcano_hier_fits(const struct gqueue *q, const struct cluster_res *extra,
                                const struct cluster_res *req)
{
    int depth = 0;
    for (const struct gqueue *a = q; a && depth < HIER_DEPTH; a = a->up, depth++)
        for (int d = 0; d < 4; d++) {
            struct cluster_res u = a->share_used;
            int64_t r = *hdim((struct cluster_res *)req, d);
            cluster__gang_res_add(&u, extra, 1);
            if (r > 0 && *hdim(&u, d) + r > *hdim((struct cluster_res *)&a->real, d))
                return false;
        }
    return true;
}

/* A cluster_res as Volcano's Resource dimensions (millicores, bytes, GPUs, TPUs). */
static void res_dims(const struct cluster_res *r, double d[4])
{
    d[0] = (double)r->cpu_m;
    d[1] = (double)r->mem;
    d[2] = (double)r->gpu;
    d[3] = (double)r->tpu;
}

/* Volcano's proportion plugin (OnSessionOpen, v1.14.1). The queues that take part are
 * those with a PodGroup in the session. Each one's realCapability is the nodes' total
 * less every queue's guarantee, plus its own guarantee, within its capability (a
 * capability's cpu or memory at 0 or below is no limit). Then, round by round, each
 * queue not yet met gets its weight's part of what remains, held within its
 * realCapability and its request and raised to its guarantee, dimension by dimension;
 * it is met once its request fits or its share stops moving, and what the round handed
 * out (or took back) changes what remains, until nothing remains or nothing moves. A
 * gang's task is allocated only while its queue's allocated stays within that share;
 * a gang is enqueued only while its queue's allocated, inqueue and minResources stay
 * within the realCapability. */
void cluster__volcano_deserved(struct gqueue *qs, const struct cluster_res *total)
{
    struct pp {
        struct gqueue *q;
        double des[4], real[4], req[4], guar[4];
        bool met;
    } *a = NULL;
    struct gqueue *q, *qt;
    double rem[4], tg[4] = { 0 }, g[4];
    size_t n = 0, i;
    res_dims(total, rem);
    HASH_ITER(hh, qs, q, qt) {
        res_dims(&q->guarantee, g);
        for (int d = 0; d < 4; d++)
            tg[d] += g[d];
        q->share_used = q->allocated;
        q->has_deserved = false;
        n += q->has_job;
    }
    if (!n || !(a = calloc(n, sizeof(*a))))
        return;   /* no shares: within_share lets every task through */
    i = 0;
    HASH_ITER(hh, qs, q, qt) {
        double cap[4];
        if (!q->has_job)
            continue;
        struct pp *x = &a[i++];
        x->q = q;
        q->has_deserved = true;
        res_dims(&q->request, x->req);
        res_dims(&q->guarantee, x->guar);
        res_dims(&q->cap, cap);
        for (int d = 0; d < 4; d++) {
            x->real[d] = (rem[d] > tg[d] ? rem[d] - tg[d] : 0) + x->guar[d];
            if (q->has_cap[d] && (d >= 2 || cap[d] > 0) && cap[d] < x->real[d])
                x->real[d] = cap[d];
        }
    }
    for (int round = 0; round < 64; round++) {
        double w = 0, inc[4] = { 0 }, dec[4] = { 0 };
        bool empty = true, still = true;
        for (i = 0; i < n; i++)
            w += a[i].met ? 0 : a[i].q->weight;
        if (w <= 0)
            break;
        for (i = 0; i < n; i++) {
            struct pp *x = &a[i];
            bool fits = true, same = true;
            if (x->met)
                continue;
            for (int d = 0; d < 4; d++) {
                double was = x->des[d], v = was + rem[d] * x->q->weight / w;
                v = v < x->real[d] ? v : x->real[d];
                v = v < x->req[d] ? v : x->req[d];
                v = v > x->guar[d] ? v : x->guar[d];
                x->des[d] = v;
                /* Resource.LessEqual's tolerance (minResource, 0.1) */
                fits = fits && (x->req[d] < v || x->req[d] - v < 0.1);
                same = same && v == was;
                if (v > was)
                    inc[d] += v - was;
                else
                    dec[d] += was - v;
            }
            x->met = fits || same;
        }
        for (int d = 0; d < 4; d++) {
            double r = rem[d] + dec[d] - inc[d];
            r = r > 0 ? r : 0;
            empty = empty && r < 0.1;
            still = still && r == rem[d];
            rem[d] = r;
        }
        if (empty || still)
            break;
    }
    for (i = 0; i < n; i++) {
        struct gqueue *x = a[i].q;
        x->deserved.cpu_m = (int64_t)a[i].des[0];
        x->deserved.mem = (int64_t)a[i].des[1];
        x->deserved.gpu = (int64_t)a[i].des[2];
        x->deserved.tpu = (int64_t)a[i].des[3];
        x->prop_real.cpu_m = (int64_t)a[i].real[0];
        x->prop_real.mem = (int64_t)a[i].real[1];
        x->prop_real.gpu = (int64_t)a[i].real[2];
        x->prop_real.tpu = (int64_t)a[i].real[3];
    }
    free(a);
}

/* Would the queue stay within its share with req more allocated (dimensions req asks for)? */
bool cluster__volcano_within_share(const struct gqueue *q, const struct cluster_res *used,
                                   const struct cluster_res *req)
{
    if (!q || !q->has_deserved)
        return true;
    return (req->cpu_m <= 0 || used->cpu_m + req->cpu_m <= q->deserved.cpu_m) &&
           (req->mem <= 0 || used->mem + req->mem <= q->deserved.mem) &&
           (req->gpu <= 0 || used->gpu + req->gpu <= q->deserved.gpu) &&
           (req->tpu <= 0 || used->tpu + req->tpu <= q->deserved.tpu);
}

/* Replaces (or appends) the condition of type in conds. */
static void set_condition(cJSON *conds, const char *type, const char *reason, const char *msg,
                          const char *tid, const char *now)
{
    cJSON *c = cJSON_CreateObject(), *e;
    int i = 0;
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", "True");
    cJSON_AddStringToObject(c, "transitionID", tid);
    cJSON_AddStringToObject(c, "lastTransitionTime", now);
    cJSON_AddStringToObject(c, "reason", reason);
    if (msg && *msg)
        cJSON_AddStringToObject(c, "message", msg);
    cJSON_ArrayForEach(e, conds) {
        if (kobj_str(e, "type") && !strcmp(kobj_str(e, "type"), type)) {
            cJSON_ReplaceItemInArray(conds, i, c);
            return;
        }
        i++;
    }
    cJSON_AddItemToArray(conds, c);
}


static const char *cond_message(const cJSON *status, const char *type)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, kobj_get(status, "conditions"))
        if (kobj_str(e, "type") && !strcmp(kobj_str(e, "type"), type))
            return kobj_str(e, "message") ? kobj_str(e, "message") : "";
    return NULL;
}

/* Writes the Volcano PodGroup's status (merge patch; the CRD has no /status)
 * when it changed, with the Events Volcano records. */
void cluster__volcano_pg_status(struct cluster *c, struct gang *g, const struct reg_resource *rpg,
                                const char *phase, const struct outcome *o,
                                const char *unsched_msg, const char *enq_reason)
{
    const cJSON *old = kobj_get(store_obj_json(g->pg), "status");
    const char *old_phase = kobj_str(old, "phase") ? kobj_str(old, "phase") : "";
    cJSON *body = cJSON_CreateObject(), *st, *conds;
    char tid[64], now[40];
    bool changed;
    struct store_write_opts w = { .field_manager = "volcano" };
    struct store_status sst = { 0 };
    time_t t = time(NULL);
    struct tm tm;
    if (!body)
        return;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(tid, sizeof(tid), "kubesim-session-%lu", c->gang_session);
    st = cJSON_AddObjectToObject(body, "status");
    cJSON_AddStringToObject(st, "phase", phase);
    conds = cJSON_Duplicate(kobj_get(old, "conditions"), 1);
    if (!cJSON_IsArray(conds)) {
        cJSON_Delete(conds);
        conds = cJSON_CreateArray();
    }
    /* the condition counts the tasks short of minAvailable after the schedulable ones,
     * the Event those not bound (as Volcano v1.14 writes them: "2/3" and "3/3") */
    char cond_text[700];
    int64_t short_ = g->min - o->scheduled - o->placed;
    if (unsched_msg)
        snprintf(cond_text, sizeof(cond_text), "%lld/%zu tasks in gang unschedulable: %s",
                 (long long)(short_ > 0 ? short_ : 0), g->n, unsched_msg);
    const char *old_un = cond_message(old, "Unschedulable");
    bool new_unsched = unsched_msg && (!old_un || strcmp(old_un, cond_text));
    bool new_sched = o->ready && !cond_message(old, "Scheduled");
    if (new_unsched)
        set_condition(conds, "Unschedulable", "NotEnoughResources", cond_text, tid, now);
    if (new_sched)
        set_condition(conds, "Scheduled", "tasks in gang are ready to be scheduled", "", tid, now);
    if (cJSON_GetArraySize(conds))
        cJSON_AddItemToObject(st, "conditions", conds);
    else
        cJSON_Delete(conds);
    /* omitempty counts */
    if (o->running) cJSON_AddNumberToObject(st, "running", (double)o->running);
    if (o->succeeded) cJSON_AddNumberToObject(st, "succeeded", (double)o->succeeded);
    if (o->failed) cJSON_AddNumberToObject(st, "failed", (double)o->failed);
    {
        const cJSON *r = kobj_get(old, "running"), *s = kobj_get(old, "succeeded"),
                    *f = kobj_get(old, "failed");
        changed = strcmp(old_phase, phase) || new_unsched || new_sched ||
                  (cJSON_IsNumber(r) ? (int64_t)r->valuedouble : 0) != o->running ||
                  (cJSON_IsNumber(s) ? (int64_t)s->valuedouble : 0) != o->succeeded ||
                  (cJSON_IsNumber(f) ? (int64_t)f->valuedouble : 0) != o->failed;
    }
    if (changed) {
        /* the counts a merge patch cannot drop by omission go as null */
        if (!o->running && kobj_get(old, "running")) cJSON_AddNullToObject(st, "running");
        if (!o->succeeded && kobj_get(old, "succeeded")) cJSON_AddNullToObject(st, "succeeded");
        if (!o->failed && kobj_get(old, "failed")) cJSON_AddNullToObject(st, "failed");
        char *text = cJSON_PrintUnformatted(body);
        if (text && store_patch(c->store, rpg, g->ns, g->name, NULL, PATCH_MERGE, text,
                                strlen(text), &w, NULL, NULL, &sst) < 0)
            log_debug("gang: PodGroup status", "podgroup", g->name, "error", sst.message, NULL);
        free(text);
        store_status_clear(&sst);
    }
    cJSON_Delete(body);
    if (new_unsched && enq_reason)
        cluster__event(c, store_obj_json(g->pg), "Normal", "Unschedulable", enq_reason, "volcano", NULL, NULL);
    if (new_unsched) {
        char ev[700];
        /* counting the tasks neither bound nor pipelined */
        int64_t left = g->min - o->scheduled - o->pipelined;
        snprintf(ev, sizeof(ev), "%lld/%zu tasks in gang unschedulable: %s",
                 (long long)(left > 0 ? left : 0), g->n, unsched_msg);
        cluster__event(c, store_obj_json(g->pg), "Warning", "Unschedulable", ev, "volcano", NULL, NULL);
    }
    if (strcmp(old_phase, phase) && (!strcmp(phase, "Running")) && o->bound_now)
        cluster__event(c, store_obj_json(g->pg), "Normal", "Scheduled", "pod group is ready", "volcano", NULL, NULL);
}

/* Volcano's enqueue (v1.14 checks no queue state here: a gang in a Closed queue is
 * Inqueue, and allocate gives it nothing): the queue must have room under its capability for
 * the gang's minResources, and the overcommit plugin's idle (the nodes' allocatable
 * times the factor, less what is in use) must cover every Inqueue gang's. Returns NULL
 * to enqueue, or the reason. */
const char *cluster__volcano_enqueue_check(const struct gang *g, struct gqueue *q,
                                           bool have_queues, const struct cluster_res *total,
                                           const struct cluster_res *idle,
                                           const struct cluster_res *inqueue, char *why,
                                           size_t cap)
{
    static const char *const names[] = { "cpu", "memory", "nvidia.com/gpu", "google.com/tpu" };
    (void)have_queues;   /* a job of a missing Queue never gets here (gang.c) */
    if (!g->has_minres)
        return NULL;
    /* what the gang still needs: its Pods already bound (a running gang whose
     * minMember grew) count in the queue's allocated and the nodes' usage */
    struct cluster_res rest = g->minres;
    for (size_t k = 0; k < g->n; k++)
        if (cluster__gang_bound(g->m[k]) && !cluster__gang_pod_terminal(store_obj_json(g->m[k]->obj)))
            cluster__gang_res_add(&rest, &g->m[k]->req, -1);
    int64_t need[4] = { rest.cpu_m > 0 ? rest.cpu_m : 0, rest.mem > 0 ? rest.mem : 0,
                        rest.gpu > 0 ? rest.gpu : 0, rest.tpu > 0 ? rest.tpu : 0 };
    size_t off = 0;
    why[0] = '\0';
    /* the plugins of tier 2 in Volcano's order, the first to refuse says why:
     * overcommit, then proportion */
    /* the overcommit plugin's idle: the nodes' total times the factor, less what is used */
    int64_t idlev[4] = { idle->cpu_m, idle->mem, idle->gpu, idle->tpu };
    const int64_t totv[4] = { total->cpu_m, total->mem, total->gpu, total->tpu };
    int64_t inq[4] = { inqueue->cpu_m, inqueue->mem, inqueue->gpu, inqueue->tpu };
    for (int d = 0; d < 4; d++)
        if (need[d] > 0 && (double)(inq[d] + need[d]) >
                               (double)totv[d] * OVERCOMMIT - (double)(totv[d] - idlev[d]))
            off += (size_t)snprintf(why + off, off < cap ? cap - off : 0, "%soverused %s",
                                    off ? ", " : "resource in cluster is overused: ", names[d]);
    if (why[0])
        return why;
    /* proportion refuses a job of a queue that is not Open, in its log only (the enqueue
     * action asks the plugins only for a PodGroup with minResources: one without them is
     * Inqueue in a Closed queue, and allocate gives it nothing) */
    if (q && !q->open)
        return "";
    for (int d = 0; q && d < 4; d++) {
        /* allocated + inqueue - elastic, as proportion counts the queue's use */
        int64_t used[4] = { q->allocated.cpu_m + q->inqueue.cpu_m - q->elastic.cpu_m,
                            q->allocated.mem + q->inqueue.mem - q->elastic.mem,
                            q->allocated.gpu + q->inqueue.gpu - q->elastic.gpu,
                            q->allocated.tpu + q->inqueue.tpu - q->elastic.tpu };
        /* proportion's realCapability (its guarantees and the nodes' total within the
         * capability); the capability alone where proportion gave no share */
        const struct cluster_res *lim = q->has_deserved ? &q->prop_real : &q->cap;
        int64_t capv[4] = { lim->cpu_m, lim->mem, lim->gpu, lim->tpu };
        if ((q->has_deserved || q->has_cap[d]) && need[d] > 0 && used[d] + need[d] > capv[d])
            off += (size_t)snprintf(why + off, off < cap ? cap - off : 0, "%sinsufficient %s",
                                    off ? ", " : "queue resource quota insufficient: ", names[d]);
    }
    return why[0] ? why : NULL;
}


void cluster__volcano_queue_status(struct cluster *c, const struct reg_resource *rq,
                                   struct gqueue *q)
{
    const cJSON *old = kobj_get(store_obj_json(q->obj), "status");
    const char *state = kobj_str(old, "state");
    struct store_write_opts w = { .field_manager = "volcano-controllers" };
    struct store_status st = { 0 };
    char body[300];
    const cJSON *p = kobj_get(old, "pending"), *i = kobj_get(old, "inqueue"),
                *r = kobj_get(old, "running"), *cm = kobj_get(old, "completed");
    if (state && *state && (cJSON_IsNumber(p) ? p->valueint : 0) == q->pending &&
        (cJSON_IsNumber(i) ? i->valueint : 0) == q->inqueue_n &&
        (cJSON_IsNumber(r) ? r->valueint : 0) == q->running &&
        (cJSON_IsNumber(cm) ? cm->valueint : 0) == q->completed)
        return;
    snprintf(body, sizeof(body), "{\"status\":{\"state\":\"%s\",\"pending\":%d,\"inqueue\":%d,"
             "\"running\":%d,\"completed\":%d}}", state && *state ? state : "Open", q->pending,
             q->inqueue_n, q->running, q->completed);
    if (store_patch(c->store, rq, "", q->name, "status", PATCH_MERGE, body, strlen(body), &w,
                    NULL, NULL, &st) < 0)
        log_debug("gang: queue status", "queue", q->name, "error", st.message, NULL);
    store_status_clear(&st);
}

/* helpers.Share per dimension, the largest: used/deserved, 1 for use without a share. */
double cluster__volcano_share(const struct gqueue *q)
{
    const int64_t used[4] = { q->share_used.cpu_m, q->share_used.mem, q->share_used.gpu,
                              q->share_used.tpu };
    const int64_t des[4] = { q->deserved.cpu_m, q->deserved.mem, q->deserved.gpu,
                             q->deserved.tpu };
    double res = 0;
    for (int d = 0; d < 4; d++) {
        double s = des[d] > 0 ? (double)used[d] / (double)des[d] : used[d] > 0 ? 1 : 0;
        res = s > res ? s : res;
    }
    return res;
}

/* ---- the scheduler's configuration ------------------------------------------------- */

#define CONF_MAX (64 * 1024)   /* the scheduler's conf is small; past this is not read */

static bool conf_sep(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '"' || ch == '\'' || ch == ',' ||
           ch == '[' || ch == ']' || ch == '\0';
}

/* The line [i, e) without its indent and a list dash: "name: capacity". */
static size_t conf_trim(const char *conf, size_t i, size_t e, const char **out)
{
    while (i < e && (conf[i] == ' ' || conf[i] == '\t' || conf[i] == '-'))
        i++;
    while (e > i && (conf[e - 1] == ' ' || conf[e - 1] == '\t' || conf[e - 1] == '\r'))
        e--;
    *out = conf + i;
    return e - i;
}

unsigned cluster__volcano_actions_parse(const char *conf, size_t len)
{
    unsigned acts = 0;
    size_t i = 0;
    /* the plugin whose keys follow, and its bits for enablePreemptable / enableReclaimable */
    static const struct { const char *name; unsigned nopreempt, noreclaim; } plugins[] = {
        { "priority", VOLCANO_NOPREEMPT_PRIORITY, 0 },
        { "gang", VOLCANO_NOPREEMPT_GANG, VOLCANO_NORECLAIM_GANG },
        { "conformance", VOLCANO_NOPREEMPT_CONFORMANCE, VOLCANO_NORECLAIM_CONFORMANCE },
        { "drf", VOLCANO_NOPREEMPT_DRF, 0 },
        { "proportion", 0, VOLCANO_NORECLAIM_PROPORTION },
        { "capacity", 0, 0 },
    };
    int cur = -1;
    bool seen_actions = false;
    if (!conf)
        return 0;
    if (len > CONF_MAX)
        len = CONF_MAX;
    while (i < len) {
        size_t e = i, p, tl;
        const char *t;
        while (e < len && conf[e] != '\n')
            e++;
        /* a top-level key only: "actions:" at the start of the line */
        if (!seen_actions && e - i >= 8 && !memcmp(conf + i, "actions:", 8)) {
            seen_actions = true;
            for (p = i + 8; p < e;) {
                size_t start;
                while (p < e && conf_sep(conf[p]))
                    p++;
                if (p < e && conf[p] == '#')
                    break;
                start = p;
                while (p < e && !conf_sep(conf[p]) && conf[p] != '#')
                    p++;
                if (p - start == 7 && !memcmp(conf + start, "reclaim", 7))
                    acts |= VOLCANO_RECLAIM;
                else if (p - start == 7 && !memcmp(conf + start, "preempt", 7))
                    acts |= VOLCANO_PREEMPT;
            }
        }
        /* a tier's plugin: "- name: capacity" and, among its keys, "enableHierarchy: true" */
        tl = conf_trim(conf, i, e, &t);
        if (tl >= 5 && !memcmp(t, "name:", 5)) {
            const char *v = t + 5;
            size_t vl = tl - 5;
            while (vl && (*v == ' ' || *v == '"' || *v == '\'')) {
                v++;
                vl--;
            }
            while (vl && (v[vl - 1] == '"' || v[vl - 1] == '\''))
                vl--;
            cur = -1;
            for (int k = 0; k < (int)(sizeof(plugins) / sizeof(plugins[0])); k++)
                if (vl == strlen(plugins[k].name) && !memcmp(v, plugins[k].name, vl))
                    cur = k;
        } else if (cur == 5 && tl == 21 && !memcmp(t, "enableHierarchy: true", 21)) {
            acts |= VOLCANO_HIERARCHY;
        } else if (cur >= 0 && tl == 24 && !memcmp(t, "enablePreemptable: false", 24)) {
            acts |= plugins[cur].nopreempt;
        } else if (cur >= 0 && tl == 24 && !memcmp(t, "enableReclaimable: false", 24)) {
            acts |= plugins[cur].noreclaim;
        }
        i = e + 1;
    }
    return acts;
}

unsigned cluster__volcano_actions(struct cluster *c)
{
    const struct reg_resource *r = cluster__gang_find(c, "", "v1", "configmaps");
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    unsigned acts = 0;
    if (r && store_get(c->store, r, "volcano-system", "volcano-scheduler-configmap", &o, &st) == 0) {
        const char *conf = kobj_str(kobj_get(store_obj_json(o), "data"), "volcano-scheduler.conf");
        acts = conf ? cluster__volcano_actions_parse(conf, strlen(conf)) : 0;
        store_obj_unref(o);
    }
    store_status_clear(&st);
    return acts;
}

/* ---- preempt and reclaim ------------------------------------------------------------ */

/* cluster_node_fits bits about room (pods, cpu, memory, GPUs, TPUs), not about the node
 * taking the Pod at all */
#define FIT_RESOURCES 0xf8u

/* volcano.sh/preemptable (annotation, else label), as strconv.ParseBool reads it;
 * absent means preemptable. */
static bool preemptable(const cJSON *pod)
{
    static const char *const yes[] = { "1", "t", "T", "true", "TRUE", "True" };
    const char *v = kobj_annotation(pod, "volcano.sh/preemptable");
    if (!v)
        v = kobj_label(pod, "volcano.sh/preemptable");
    if (!v)
        return true;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!strcmp(v, yes[i]))
            return true;
    return false;
}

static bool deleting(const struct cl_pod *p)
{
    return kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp") != NULL;
}

static bool running(const struct cl_pod *p)
{
    const char *ph = kobj_str(kobj_get(store_obj_json(p->obj), "status"), "phase");
    return cluster__gang_bound(p) && ph && !strcmp(ph, "Running") && !deleting(p);
}

static bool res_le(const struct cluster_res *a, const struct cluster_res *b)
{
    return a->cpu_m <= b->cpu_m && a->mem <= b->mem && a->gpu <= b->gpu && a->tpu <= b->tpu;
}

/* The proportion plugin's overused: deserved <= allocated in every dimension. */
static bool overused(const struct gqueue *q)
{
    return q->has_deserved && res_le(&q->deserved, &q->share_used);
}

struct cand {
    struct cl_pod *p;
    struct gang *g;
};

/* Victims first: the lowest job priority, then the youngest job, then the last task. */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->g->prio != y->g->prio)
        return x->g->prio < y->g->prio ? -1 : 1;
    int t = strcmp(y->g->ctime ? y->g->ctime : "", x->g->ctime ? x->g->ctime : "");
    return t ? t : strcmp(y->p->key, x->p->key);
}

struct evict_run {
    struct cluster *c;
    struct gang **order;
    size_t ng;
    struct nodes *ns;
    unsigned action;
    struct cluster_res total;        /* the nodes' allocatable (the drf plugin's shares) */
    struct cluster_res *releasing;   /* per node: what deleting Pods give back (FutureIdle) */
    struct cand *victims;            /* chosen this session; [0, committed) are evicted */
    size_t nvictims;
    struct cand *cands, *picked;
    unsigned off;                    /* VOLCANO_PLUGIN_OFF: plugins that choose no victims */
};

static bool is_victim(const struct evict_run *r, const struct cl_pod *p)
{
    for (size_t i = 0; i < r->nvictims; i++)
        if (r->victims[i].p == p)
            return true;
    return false;
}

/* The session's use of node i with the releasing Pods counted as gone. */
static struct cluster_res future_used(const struct evict_run *r, size_t i)
{
    struct cluster_res u = r->ns->used[i];
    cluster__gang_res_add(&u, &r->releasing[i], -1);
    return u;
}

static double drf_share(const struct cluster_res *a, const struct cluster_res *total)
{
    const int64_t v[4] = { a->cpu_m, a->mem, a->gpu, a->tpu };
    const int64_t t[4] = { total->cpu_m, total->mem, total->gpu, total->tpu };
    double res = 0;
    for (int d = 0; d < 4; d++) {
        double sh = t[d] > 0 ? (double)v[d] / (double)t[d] : 0;
        res = sh > res ? sh : res;
    }
    return res;
}

/* Volcano's tiers over the candidates cands[0, nc) for preemptor p of gang g; the
 * victims go to picked, their number is returned. Tier 1 (priority for preempt, gang,
 * conformance): a lower-priority job's task (preempt), from a job that keeps minMember
 * running, not a critical Pod. When tier 1 lets none go, tier 2 decides (over all the
 * candidates again, critical ones included, as Volcano's tiers do): for reclaim the proportion plugin
 * (tasks of a queue above its deserved share), for preempt the drf plugin (tasks of a
 * job whose dominant share, less the task, stays at or above the preemptor's with it).
 * Each plugin counts down, per job or queue, the victims it already let go (the
 * gangs' and queues' scratch fields). */
/* The conformance plugin's critical Pods: system-cluster-critical or system-node-critical
 * priority classes, or anything in kube-system. */
static bool critical(const struct cl_pod *p)
{
    const char *pc = kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "priorityClassName");
    return (pc && (!strcmp(pc, "system-cluster-critical") || !strcmp(pc, "system-node-critical"))) ||
           (p->obj->ns && !strcmp(p->obj->ns, "kube-system"));
}

static size_t tiers(struct evict_run *r, const struct gang *g, const struct cl_pod *p, size_t nc)
{
    size_t np = 0;
    bool preempt = r->action == VOLCANO_PREEMPT;
    /* the plugins the configuration leaves in (enablePreemptable / enableReclaimable) */
    bool use_gang = !(r->off & (preempt ? VOLCANO_NOPREEMPT_GANG : VOLCANO_NORECLAIM_GANG));
    bool use_prio = preempt && !(r->off & VOLCANO_NOPREEMPT_PRIORITY);
    bool use_conf = !(r->off & (preempt ? VOLCANO_NOPREEMPT_CONFORMANCE : VOLCANO_NORECLAIM_CONFORMANCE));
    for (size_t k = 0; k < nc; k++) {
        r->cands[k].g->scratch_n = r->cands[k].g->ready;
        r->cands[k].g->scratch = r->cands[k].g->alloc;
        r->cands[k].g->q->scratch = r->cands[k].g->q->share_used;
    }
    for (size_t k = 0; (use_gang || use_prio || use_conf) && k < nc; k++) {
        struct gang *v = r->cands[k].g;
        bool gang_ok = v->scratch_n > v->min;
        if (gang_ok)
            v->scratch_n--;
        /* the tier's plugins agree: gang, priority (preempt), conformance (no critical Pod) */
        if ((!use_gang || gang_ok) && (!use_prio || v->prio < g->prio) &&
            (!use_conf || !critical(r->cands[k].p)))
            r->picked[np++] = r->cands[k];
    }
    if (np)
        return np;
    if (r->action == VOLCANO_RECLAIM) {
        for (size_t k = 0; !(r->off & VOLCANO_NORECLAIM_PROPORTION) && k < nc; k++) {
            struct gqueue *vq = r->cands[k].g->q;
            if (!res_le(&vq->scratch, &vq->deserved)) {
                cluster__gang_res_add(&vq->scratch, &r->cands[k].p->req, -1);
                r->picked[np++] = r->cands[k];
            }
        }
        return np;
    }
    if (r->off & VOLCANO_NOPREEMPT_DRF)   /* no plugin of tier 2 chooses: no victims */
        return 0;
    struct cluster_res mine = g->alloc;
    cluster__gang_res_add(&mine, &p->req, 1);
    double ls = drf_share(&mine, &r->total);
    for (size_t k = 0; k < nc; k++) {
        struct gang *v = r->cands[k].g;
        cluster__gang_res_add(&v->scratch, &r->cands[k].p->req, -1);
        double rs = drf_share(&v->scratch, &r->total);
        if (ls < rs || ls - rs <= 1e-6)
            r->picked[np++] = r->cands[k];
    }
    return np;
}

/* Tries node i for task p of gang g: victims taken until p fits. True when it does
 * (p is then counted on the node). Victims stay taken even when it does not, as in
 * Volcano's statement. */
static bool evict_on_node(struct evict_run *r, struct gang *g, struct cl_pod *p, size_t i)
{
    struct cl_node *node = r->ns->n[i];
    struct cluster_res fu = future_used(r, i);
    size_t nc = 0, np;
    unsigned f = cluster_node_fits(store_obj_json(p->obj), &p->req, store_obj_json(node->obj), &node->alloc, &fu,
                                   NULL, 0);
    if (f & ~FIT_RESOURCES)
        return false;
    if (!f)
        goto place;
    for (size_t k = 0; k < r->ng; k++) {
        struct gang *v = r->order[k];
        if (v == g || v->kind != G_VOLCANO || !v->pg || !v->q)
            continue;
        if (r->action == VOLCANO_RECLAIM ? v->q == g->q || !v->q->reclaimable : v->q != g->q)
            continue;
        for (size_t m = 0; m < v->n; m++) {
            const char *on = kobj_str(kobj_get(store_obj_json(v->m[m]->obj), "spec"), "nodeName");
            if (running(v->m[m]) && on && !strcmp(on, node->name) &&
                preemptable(store_obj_json(v->m[m]->obj)) && !is_victim(r, v->m[m]))
                r->cands[nc++] = (struct cand){ v->m[m], v };
        }
    }
    if (!nc)
        return false;
    qsort(r->cands, nc, sizeof(*r->cands), cand_cmp);
    np = tiers(r, g, p, nc);
    for (size_t k = 0; k < np && f; k++) {
        struct cand *v = &r->picked[k];
        v->g->ready--;
        cluster__gang_res_add(&v->g->alloc, &v->p->req, -1);
        cluster__gang_res_add(&v->g->q->share_used, &v->p->req, -1);
        cluster__gang_res_add(&r->releasing[i], &v->p->req, 1);
        r->victims[r->nvictims++] = *v;
        fu = future_used(r, i);
        f = cluster_node_fits(store_obj_json(p->obj), &p->req, store_obj_json(node->obj), &node->alloc, &fu, NULL, 0);
    }
    if (f)
        return false;
place:
    cluster__gang_res_add(&r->ns->used[i], &p->req, 1);
    cluster__gang_res_add(&g->q->share_used, &p->req, 1);
    cluster__gang_res_add(&g->alloc, &p->req, 1);
    return true;
}

/* What Volcano's evictor does: the Pod's Evict Event and DisruptionTarget condition,
 * then its deletion (with its grace period); the PodGroup's Normal Evict Event. */
static void evict_pod(struct cluster *c, const struct cand *v, const char *why)
{
    struct store_delete_opts o = { .grace_seconds = -1, .precondition_uid = v->p->obj->uid };
    struct store_status st = { 0 };
    char msg[100];
    snprintf(msg, sizeof(msg), "Pod is evicted, because of %s", why);
    cluster__event(c, store_obj_json(v->p->obj), "Warning", "Evict", msg, "volcano", NULL, NULL);
    v->p->disrupted = true;
    cluster__kubelet_write(c, v->p);
    if (store_delete(c->store, c->r_pods, v->p->obj->ns, v->p->obj->name, &o, NULL, NULL, &st) < 0 &&
        st.code != 404)
        log_debug("gang: evict", "pod", v->p->key, "error", st.message, NULL);
    store_status_clear(&st);
    cluster__event(c, store_obj_json(v->g->pg), "Normal", "Evict", why, "volcano", NULL, NULL);
}

/* One gang as preemptor: its Pending tasks in order while it starves. */
static void evict_for(struct evict_run *r, struct gang *g, struct gqueue *qs)
{
    size_t nq = HASH_COUNT(qs), k = 0, nv0 = r->nvictims;
    struct cluster_res *used0 = malloc((r->ns->count + 1) * sizeof(*used0));
    struct cluster_res *rel0 = malloc((r->ns->count + 1) * sizeof(*rel0));
    struct cluster_res *share0 = malloc((nq + 1) * sizeof(*share0));
    int64_t *ready0 = malloc((r->ng + 1) * sizeof(*ready0));
    struct cluster_res *alloc0 = malloc((r->ng + 1) * sizeof(*alloc0));
    struct gqueue *q, *qt;
    int64_t pipelined = 0;
    if (!used0 || !rel0 || !share0 || !ready0 || !alloc0)
        goto out;
    memcpy(used0, r->ns->used, r->ns->count * sizeof(*used0));
    memcpy(rel0, r->releasing, r->ns->count * sizeof(*rel0));
    HASH_ITER(hh, qs, q, qt)
        share0[k++] = q->share_used;
    for (k = 0; k < r->ng; k++) {
        ready0[k] = r->order[k]->ready;
        alloc0[k] = r->order[k]->alloc;
    }
    for (size_t m = 0; m < g->n && g->scheduled + pipelined < g->min; m++) {
        struct cl_pod *p = g->m[m];
        const char *pol = kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "preemptionPolicy");
        if (cluster__gang_bound(p) || cluster__gang_pod_terminal(store_obj_json(p->obj)) || deleting(p) ||
            (pol && !strcmp(pol, "Never")))
            continue;
        /* reclaim: the preemptor's queue must have room for it within its share */
        if (r->action == VOLCANO_RECLAIM &&
            !cluster__volcano_within_share(g->q, &g->q->share_used, &p->req))
            continue;
        for (size_t i = 0; i < r->ns->count; i++)
            if (evict_on_node(r, g, p, i)) {
                pipelined++;
                break;
            }
    }
    if (g->scheduled + pipelined >= g->min && r->nvictims > nv0) {
        /* its tasks are pipelined on the victims: an action after this one (reclaim after
         * preempt) finds the gang no longer starving, as Volcano's shared session does */
        g->pipelined += pipelined;
        for (size_t v = nv0; v < r->nvictims; v++)
            evict_pod(r->c, &r->victims[v], r->action == VOLCANO_RECLAIM ? "reclaim" : "preempt");
        goto out;
    }
    /* the gang would still not run: nothing is evicted (Volcano discards the statement) */
    r->nvictims = nv0;
    memcpy(r->ns->used, used0, r->ns->count * sizeof(*used0));
    memcpy(r->releasing, rel0, r->ns->count * sizeof(*rel0));
    k = 0;
    HASH_ITER(hh, qs, q, qt)
        q->share_used = share0[k++];
    for (k = 0; k < r->ng; k++) {
        r->order[k]->ready = ready0[k];
        r->order[k]->alloc = alloc0[k];
    }
out:
    free(alloc0);
    free(used0);
    free(rel0);
    free(share0);
    free(ready0);
}

void cluster__volcano_evict(struct cluster *c, struct gang **order, size_t n, struct gqueue *qs,
                            struct nodes *ns, unsigned action)
{
    struct evict_run r = { .c = c, .order = order, .ng = n, .ns = ns,
                           .action = action & (VOLCANO_PREEMPT | VOLCANO_RECLAIM),
                           .off = action & VOLCANO_PLUGIN_OFF };
    size_t members = 0;
    for (size_t k = 0; k < n; k++)
        members += order[k]->n;
    r.releasing = calloc(ns->count + 1, sizeof(*r.releasing));
    r.victims = calloc(members + 1, sizeof(*r.victims));
    r.cands = calloc(members + 1, sizeof(*r.cands));
    r.picked = calloc(members + 1, sizeof(*r.picked));
    if (!r.releasing || !r.victims || !r.cands || !r.picked)
        goto out;
    for (size_t i = 0; i < ns->count; i++)
        cluster__gang_res_add(&r.total, &ns->n[i]->alloc, 1);
    /* Pods already on their way out count as free (Volcano's FutureIdle), so a
     * preemptor waiting for its victims to end takes no more */
    if (ns->releasing)
        memcpy(r.releasing, ns->releasing, ns->count * sizeof(*r.releasing));
    for (size_t k = 0; k < n; k++) {
        struct gang *g = order[k];
        /* an Inqueue gang (not Pending) short of minMember, counting its tasks pipelined
         * on what is being released (JobStarving), in an Open queue */
        if (g->kind != G_VOLCANO || !g->pg || !g->q || !g->q->open || !g->phase ||
            !strcmp(g->phase, "Pending") || g->scheduled + g->pipelined >= g->min)
            continue;
        if (action == VOLCANO_RECLAIM && overused(g->q))
            continue;
        evict_for(&r, g, qs);
    }
out:
    free(r.releasing);
    free(r.victims);
    free(r.cands);
    free(r.picked);
}

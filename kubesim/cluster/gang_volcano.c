/*
 * gang_volcano.c - what kubesim's gang step (gang.c) does as Volcano: its Queues
 * (loaded per session, the default Queue made as Volcano's controller makes it,
 * status counts kept), the proportion plugin's deserved share by weight, the
 * enqueue action's checks (queue capability, the overcommit plugin's 1.2 of idle
 * resources), and the PodGroup status, conditions and Events Volcano writes.
 * Cluster thread only. What is simulated: docs/batch-scheduling.md.
 */
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
        const cJSON *capj = kobj_get(kobj_get(ql->items[i]->json, "spec"), "capability");
        const char *state = kobj_str(kobj_get(ql->items[i]->json, "status"), "state");
        if (!q)
            continue;
        snprintf(q->name, sizeof(q->name), "%s", ql->items[i]->name);
        q->obj = ql->items[i];
        q->open = !state || !*state || !strcmp(state, "Open");
        const cJSON *wj = kobj_get(kobj_get(ql->items[i]->json, "spec"), "weight");
        q->weight = cJSON_IsNumber(wj) && wj->valuedouble >= 1 ? wj->valuedouble : 1;
        cluster__gang_reslist(capj, &q->cap);
        for (int d = 0; d < 4; d++)
            q->has_cap[d] = kobj_get(capj, dims[d]) != NULL;
        HASH_ADD_STR(*qs, name, q);
    }
}

/* The default Queue Volcano's controller creates at start; this session already
 * treats it as there (Open, no capability). */
void cluster__volcano_default_queue(struct cluster *c, const struct reg_resource *rq,
                                    struct gqueue **qs)
{
    struct gqueue *q = NULL;
    struct store_write_opts w = { .field_manager = "volcano-controllers" };
    struct store_status st = { 0 };
    struct store_obj *made = NULL;
    HASH_FIND_STR(*qs, "default", q);
    if (q || !rq)
        return;
    cJSON *o = cJSON_Parse("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                           "\"metadata\":{\"name\":\"default\"},"
                           "\"spec\":{\"reclaimable\":true,\"weight\":1}}");
    /* store_create consumes o */
    if (o && store_create(c->store, rq, "", o, &w, &made, &st) < 0)
        log_debug("gang: default queue", "error", st.message, NULL);
    store_status_clear(&st);
    if (made && (q = calloc(1, sizeof(*q)))) {
        snprintf(q->name, sizeof(q->name), "default");
        q->obj = made;
        q->owned = true;
        q->open = true;
        q->weight = 1;
        HASH_ADD_STR(*qs, name, q);
    } else {
        store_obj_unref(made);
    }
}

/* Volcano's proportion plugin: the nodes' resources shared among the queues with work
 * in proportion to their weights, each share capped by the queue's capability; a queue
 * whose request is met keeps just that and the rest goes round again to the others. A
 * gang's task is allocated only while its queue's allocated stays within that share. */
void cluster__volcano_deserved(struct gqueue *qs, const struct cluster_res *total)
{
    struct gqueue *q, *qt;
    double tot[4] = { (double)total->cpu_m, (double)total->mem, (double)total->gpu,
                      (double)total->tpu };
    double des[64][4] = { { 0 } };
    bool met[64] = { false };
    size_t n = 0, i;
    HASH_ITER(hh, qs, q, qt) {
        q->share_used = q->allocated;
        q->has_deserved = false;
        if (n < 64 && (q->request.cpu_m > 0 || q->request.mem > 0 || q->request.gpu > 0 ||
                       q->request.tpu > 0))
            q->has_deserved = true, n++;
    }
    for (int round = 0; round < 16; round++) {
        double w = 0, rem[4], given = 0;
        memcpy(rem, tot, sizeof(rem));
        i = 0;
        HASH_ITER(hh, qs, q, qt) {
            if (!q->has_deserved)
                continue;
            for (int d = 0; d < 4; d++)
                rem[d] -= des[i][d];
            w += met[i] ? 0 : q->weight;
            i++;
        }
        if (w <= 0)
            break;
        i = 0;
        HASH_ITER(hh, qs, q, qt) {
            if (!q->has_deserved)
                continue;
            if (!met[i]) {
                int64_t req[4] = { q->request.cpu_m, q->request.mem, q->request.gpu, q->request.tpu };
                int64_t cap[4] = { q->cap.cpu_m, q->cap.mem, q->cap.gpu, q->cap.tpu };
                bool enough = true;
                for (int d = 0; d < 4; d++) {
                    double was = des[i][d];
                    des[i][d] += (rem[d] > 0 ? rem[d] : 0) * q->weight / w;
                    if (q->has_cap[d] && des[i][d] > (double)cap[d])
                        des[i][d] = (double)cap[d];
                    enough = enough && (double)req[d] <= des[i][d];
                    given += des[i][d] - was;
                }
                if (enough) {   /* the request is met: keep only that */
                    for (int d = 0; d < 4; d++)
                        des[i][d] = des[i][d] < (double)req[d] ? des[i][d] : (double)req[d];
                    met[i] = true;
                }
            }
            i++;
        }
        if (given < 1)
            break;
    }
    i = 0;
    HASH_ITER(hh, qs, q, qt) {
        if (!q->has_deserved)
            continue;
        q->deserved.cpu_m = (int64_t)des[i][0];
        q->deserved.mem = (int64_t)des[i][1];
        q->deserved.gpu = (int64_t)des[i][2];
        q->deserved.tpu = (int64_t)des[i][3];
        i++;
    }
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
    const cJSON *old = kobj_get(g->pg->json, "status");
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
        cluster__event(c, g->pg->json, "Normal", "Unschedulable", enq_reason, "volcano", NULL, NULL);
    if (new_unsched) {
        char ev[700];
        snprintf(ev, sizeof(ev), "%lld/%zu tasks in gang unschedulable: %s",
                 (long long)(g->min - o->scheduled > 0 ? g->min - o->scheduled : 0), g->n, unsched_msg);
        cluster__event(c, g->pg->json, "Warning", "Unschedulable", ev, "volcano", NULL, NULL);
    }
    if (strcmp(old_phase, phase) && (!strcmp(phase, "Running")) && o->bound_now)
        cluster__event(c, g->pg->json, "Normal", "Scheduled", "pod group is ready", "volcano", NULL, NULL);
}

/* Volcano's enqueue (v1.14 checks no queue state here: a gang in a Closed queue is
 * Inqueue, and allocate gives it nothing): the queue must have room under its capability for
 * the gang's minResources, and the cluster's idle resources (times the overcommit
 * factor) must cover every Inqueue gang's. Returns NULL to enqueue, or the reason. */
const char *cluster__volcano_enqueue_check(const struct gang *g, struct gqueue *q,
                                           bool have_queues, const struct cluster_res *idle,
                                           const struct cluster_res *inqueue, char *why,
                                           size_t cap)
{
    static const char *const names[] = { "cpu", "memory", "nvidia.com/gpu", "google.com/tpu" };
    if (!q && have_queues)
        return snprintf(why, cap, "queue %s is not found", g->queue), why;
    if (!g->has_minres)
        return NULL;
    /* what the gang still needs: its Pods already bound (a running gang whose
     * minMember grew) count in the queue's allocated and the nodes' usage */
    struct cluster_res rest = g->minres;
    for (size_t k = 0; k < g->n; k++)
        if (cluster__gang_bound(g->m[k]) && !cluster__gang_pod_terminal(g->m[k]->obj->json))
            cluster__gang_res_add(&rest, &g->m[k]->req, -1);
    int64_t need[4] = { rest.cpu_m > 0 ? rest.cpu_m : 0, rest.mem > 0 ? rest.mem : 0,
                        rest.gpu > 0 ? rest.gpu : 0, rest.tpu > 0 ? rest.tpu : 0 };
    size_t off = 0;
    why[0] = '\0';
    for (int d = 0; q && d < 4; d++) {
        int64_t used[4] = { q->allocated.cpu_m + q->inqueue.cpu_m, q->allocated.mem + q->inqueue.mem,
                            q->allocated.gpu + q->inqueue.gpu, q->allocated.tpu + q->inqueue.tpu };
        int64_t capv[4] = { q->cap.cpu_m, q->cap.mem, q->cap.gpu, q->cap.tpu };
        if (q->has_cap[d] && need[d] > 0 && used[d] + need[d] > capv[d])
            off += (size_t)snprintf(why + off, off < cap ? cap - off : 0, "%sinsufficient %s",
                                    off ? ", " : "queue resource quota insufficient: ", names[d]);
    }
    if (why[0])
        return why;
    int64_t idlev[4] = { idle->cpu_m, idle->mem, idle->gpu, idle->tpu };
    int64_t inq[4] = { inqueue->cpu_m, inqueue->mem, inqueue->gpu, inqueue->tpu };
    for (int d = 0; d < 4; d++)
        if (need[d] > 0 && (double)(inq[d] + need[d]) > (double)idlev[d] * OVERCOMMIT)
            off += (size_t)snprintf(why + off, off < cap ? cap - off : 0, "%soverused %s",
                                    off ? ", " : "resource in cluster is overused: ", names[d]);
    return why[0] ? why : NULL;
}


void cluster__volcano_queue_status(struct cluster *c, const struct reg_resource *rq,
                                   struct gqueue *q)
{
    const cJSON *old = kobj_get(q->obj->json, "status");
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

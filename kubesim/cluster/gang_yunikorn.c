/*
 * gang_yunikorn.c - YuniKorn in kubesim's gang step (gang.c): an application's task
 * groups (the members that exist and the placeholders of those to come), and the queue
 * tree of the ConfigMap yunikorn/yunikorn-configs, key queues.yaml (its first
 * partition), read each session. A queue's resources.max caps what the applications in it and in the
 * queues under it hold (placeholders of members not created yet included);
 * resources.guaranteed orders the queues (the least used against its guarantee first).
 * An application's queue is its Pods' queue label (yunikorn.apache.org/queue
 * annotation, else root.default); a queue the config does not name has no limit (YuniKorn
 * would create it under its parent). What a waiting application hears is what the
 * core and the shim say (yunikorn-core's request events, the shim's pod condition).
 * Cluster thread only. What is simulated: docs/batch-scheduling.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/quantity.h"
#include "kobj/yamljson.h"
#include "kubesim/cluster/internal.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

#define YK_DEPTH 16   /* queue nesting taken from the config */

/* YuniKorn gangs with placeholders: the application's task groups (the
 * task-groups annotation) ask for minMember Pods each; the members that exist must
 * all be placeable and the resources of those that do not exist yet (YuniKorn holds
 * them with placeholder Pods) must fit in what is left. g->min becomes the members
 * the task groups count among the existing Pods. */
void cluster__yunikorn_groups(struct gang *g)
{
    const char *tg = g->n ? kobj_annotation(store_obj_json(g->m[0]->obj), "yunikorn.apache.org/task-groups") : NULL;
    cJSON *arr = tg ? cJSON_Parse(tg) : NULL;
    const cJSON *t;
    g->min = 0;
    memset(&g->reserve, 0, sizeof(g->reserve));
    if (!cJSON_IsArray(arr)) {
        g->min = g->n ? 1 : 0;   /* no gang: each Pod on its own */
        cJSON_Delete(arr);
        return;
    }
    cJSON_ArrayForEach(t, arr) {
        const cJSON *mm = kobj_get(t, "minMember");
        const char *name = kobj_str(t, "name");
        int64_t want = cJSON_IsNumber(mm) && mm->valuedouble > 0 ? (int64_t)mm->valuedouble : 0, have = 0;
        struct cluster_res one;
        for (size_t i = 0; name && i < g->n; i++) {
            const char *n = kobj_annotation(store_obj_json(g->m[i]->obj), "yunikorn.apache.org/task-group-name");
            if (n && !strcmp(n, name))
                have++;
        }
        g->min += have < want ? have : want;
        if (have < want) {
            cluster__gang_reslist(kobj_get(t, "minResource"), &one);
            for (int64_t k = have; k < want; k++)
                cluster__gang_res_add(&g->reserve, &one, 1);
        }
    }
    cJSON_Delete(arr);
}

/* YuniKorn's resource names as a Kubernetes ResourceList (vcore is cpu). */
static void yk_res(const cJSON *res, struct cluster_res *out, bool *has)
{
    cJSON *list = cJSON_CreateObject();
    const cJSON *e;
    cJSON_ArrayForEach(e, res) {
        const char *k = !strcmp(e->string, "vcore") ? "cpu" : e->string;
        if (cJSON_IsString(e) || cJSON_IsNumber(e))
            cJSON_AddItemToObject(list, k, cJSON_IsString(e) ? cJSON_CreateString(e->valuestring)
                                                             : cJSON_CreateNumber(e->valuedouble));
    }
    cluster__gang_reslist(list, out);
    if (has) {
        has[0] = kobj_get(list, "cpu") != NULL;
        has[1] = kobj_get(list, "memory") != NULL;
        has[2] = kobj_get(list, "nvidia.com/gpu") != NULL;
        has[3] = kobj_get(list, "google.com/tpu") != NULL;
    }
    cJSON_Delete(list);
}

static void yk_walk(struct gqueue **qs, const cJSON *list, const char *parent, int depth)
{
    const cJSON *e;
    if (depth > YK_DEPTH)
        return;
    cJSON_ArrayForEach(e, list) {
        const char *name = kobj_str(e, "name");
        const cJSON *res = kobj_get(e, "resources");
        struct gqueue *q;
        if (!name || !*name || !(q = calloc(1, sizeof(*q))))
            continue;
        snprintf(q->name, sizeof(q->name), "%s%s%s", parent ? parent : "", parent ? "." : "", name);
        snprintf(q->parent, sizeof(q->parent), "%s", parent ? parent : "");
        q->open = true;
        q->has_deserved = true;
        yk_res(kobj_get(res, "max"), &q->cap, q->has_cap);
        yk_res(kobj_get(res, "guaranteed"), &q->deserved, NULL);
        struct gqueue *dup = NULL;
        HASH_FIND_STR(*qs, q->name, dup);
        if (dup) {
            free(q);
            continue;
        }
        HASH_ADD_STR(*qs, name, q);
        yk_walk(qs, kobj_get(e, "queues"), q->name, depth + 1);
    }
}

/* YuniKorn counts what is bound, both as allocated and as the share used. */
static void yk_charge(struct gqueue *q, const struct cl_pod *p)
{
    if (!cluster__gang_bound(p))
        return;
    cluster__gang_res_add(&q->allocated, &p->req, 1);
    cluster__gang_res_add(&q->share_used, &p->req, 1);
}

struct gqueue *cluster__yunikorn_queues(struct cluster *c, struct gang **all, size_t n)
{
    const struct reg_resource *r = cluster__gang_find(c, "", "v1", "configmaps");
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    struct gqueue *qs = NULL;
    cJSON *docs = NULL;
    char err[200];
    if (!r || store_get(c->store, r, "yunikorn", "yunikorn-configs", &o, &st) != 0)
        goto out;
    const char *text = kobj_str(kobj_get(store_obj_json(o), "data"), "queues.yaml");
    if (!text || yamljson_parse_one(text, strlen(text), &docs, err, sizeof(err)) < 0) {
        log_debug("gang: yunikorn queues.yaml", "error", text ? err : "no queues.yaml", NULL);
        goto out;
    }
    yk_walk(&qs, kobj_get(cJSON_GetArrayItem(kobj_get(docs, "partitions"), 0), "queues"), NULL, 0);
    cluster__gang_queue_usage(all, n, G_YUNIKORN, qs, yk_charge);
out:
    cJSON_Delete(docs);
    store_obj_unref(o);
    store_status_clear(&st);
    return qs;
}

const char *cluster__yunikorn_max_check(const struct gang *g, struct gqueue *qs, char *why,
                                        size_t cap)
{
    static const char *const names[] = { "vcore", "memory", "nvidia.com/gpu", "google.com/tpu" };
    struct cluster_res need = g->reserve;
    struct gqueue *q = g->q;
    for (size_t m = 0; m < g->n; m++)
        if (!cluster__gang_bound(g->m[m]) && !cluster__gang_pod_terminal(store_obj_json(g->m[m]->obj)) &&
            !kobj_get(kobj_get(store_obj_json(g->m[m]->obj), "metadata"), "deletionTimestamp"))
            cluster__gang_res_add(&need, &g->m[m]->req, 1);
    for (int depth = 0; q && depth < YK_DEPTH; depth++) {
        const int64_t nd[4] = { need.cpu_m, need.mem, need.gpu, need.tpu };
        const int64_t al[4] = { q->allocated.cpu_m, q->allocated.mem, q->allocated.gpu,
                                q->allocated.tpu };
        const int64_t mx[4] = { q->cap.cpu_m, q->cap.mem, q->cap.gpu, q->cap.tpu };
        for (int d = 0; d < 4; d++) {
            if (!q->has_cap[d] || nd[d] <= 0 || al[d] + nd[d] <= mx[d])
                continue;
            /* vcore in millicores, as YuniKorn reports it */
            snprintf(why, cap, "queue %.200s has not enough headroom for the application: "
                     "%s max %lld, used %lld, asked %lld", q->name, names[d], (long long)mx[d],
                     (long long)al[d], (long long)nd[d]);
            return why;
        }
        struct gqueue *up = NULL;
        if (q->parent[0])
            HASH_FIND_STR(qs, q->parent, up);
        q = up;
    }
    return NULL;
}

/* ---- what YuniKorn says ------------------------------------------------------------- */

/* A YuniKorn resource: its names sorted as Go prints a map. */
enum { YR_EPH, YR_TPU, YR_MEM, YR_GPU, YR_PODS, YR_VCORE, YR_N };
static const char *const yr_name[YR_N] = { "ephemeral-storage", "google.com/tpu", "memory",
                                           "nvidia.com/gpu", "pods", "vcore" };
struct yres {
    int64_t v[YR_N];
    bool has[YR_N];
};

/* The shim's resource of a Pod: pods 1, and what it requests. */
static void yr_pod(const struct cl_pod *p, struct yres *r)
{
    memset(r, 0, sizeof(*r));
    r->has[YR_PODS] = true, r->v[YR_PODS] = 1;
    r->has[YR_VCORE] = p->req.cpu_m > 0, r->v[YR_VCORE] = p->req.cpu_m;
    r->has[YR_MEM] = p->req.mem > 0, r->v[YR_MEM] = p->req.mem;
    r->has[YR_GPU] = p->req.gpu > 0, r->v[YR_GPU] = p->req.gpu;
    r->has[YR_TPU] = p->req.tpu > 0, r->v[YR_TPU] = p->req.tpu;
}

static void yr_print(const struct yres *r, char *out, size_t cap)
{
    size_t off = (size_t)snprintf(out, cap, "map[");
    bool any = false;
    for (int k = 0; k < YR_N && off < cap; k++) {
        if (!r->has[k])
            continue;
        off += (size_t)snprintf(out + off, cap - off, "%s%s:%" PRId64, any ? " " : "", yr_name[k],
                                r->v[k]);
        any = true;
    }
    if (off < cap)
        snprintf(out + off, cap - off, "]");
}

/* ComponentWiseMin, permissive: a name only one side has keeps its value. */
static void yr_min(struct yres *h, int k, int64_t v)
{
    if (!h->has[k] || v < h->v[k])
        h->v[k] = v;
    h->has[k] = true;
}

/* The queue's headroom (getHeadRoom): along the path to the root, each max less what
 * is allocated, for the names the max sets; the root's max is the cluster's size. */
static void yr_headroom(struct cluster *c, const struct gang *g, struct gqueue *qs, struct yres *h)
{
    static const int dims[4] = { YR_VCORE, YR_MEM, YR_GPU, YR_TPU };
    struct gqueue *q = g->q;
    struct cl_node *n, *nt;
    struct cl_pod *p, *pt;
    struct yres used;
    memset(h, 0, sizeof(*h));
    for (int depth = 0; q && depth < YK_DEPTH; depth++) {
        const int64_t mx[4] = { q->cap.cpu_m, q->cap.mem, q->cap.gpu, q->cap.tpu };
        const int64_t al[4] = { q->allocated.cpu_m, q->allocated.mem, q->allocated.gpu,
                                q->allocated.tpu };
        for (int d = 0; d < 4; d++)
            if (q->has_cap[d])
                yr_min(h, dims[d], mx[d] - al[d] > 0 ? mx[d] - al[d] : 0);
        struct gqueue *up = NULL;
        if (q->parent[0])
            HASH_FIND_STR(qs, q->parent, up);
        q = up;
    }
    /* the root: every node's allocatable, less what YuniKorn placed */
    struct yres total = { 0 };
    HASH_ITER(hh, c->nodes, n, nt) {
        int64_t eph = 0;
        const char *e = kobj_str(kobj_get(kobj_get(store_obj_json(n->obj), "status"), "allocatable"),
                                 "ephemeral-storage");
        total.v[YR_VCORE] += n->alloc.cpu_m;
        total.v[YR_MEM] += n->alloc.mem;
        total.v[YR_PODS] += n->alloc.pods;
        total.v[YR_GPU] += n->alloc.gpu;
        total.v[YR_TPU] += n->alloc.tpu;
        if (e && kobj_quantity_parse(e, &eph) == 0) {
            total.v[YR_EPH] += eph / 1000;
            total.has[YR_EPH] = true;
        }
    }
    total.has[YR_VCORE] = total.has[YR_MEM] = total.has[YR_PODS] = true;
    total.has[YR_GPU] = total.v[YR_GPU] > 0;
    total.has[YR_TPU] = total.v[YR_TPU] > 0;
    memset(&used, 0, sizeof(used));
    HASH_ITER(hh, c->pods, p, pt) {
        const char *sn = kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "schedulerName");
        struct yres one;
        if (!sn || strcmp(sn, "yunikorn") || !p->acct_node)
            continue;
        yr_pod(p, &one);
        for (int k = 0; k < YR_N; k++)
            used.v[k] += one.v[k];
    }
    for (int k = 0; k < YR_N; k++)
        if (total.has[k])
            yr_min(h, k, total.v[k] - used.v[k] > 0 ? total.v[k] - used.v[k] : 0);
}

void cluster__yunikorn_submit(struct cluster *c, const struct gang *g)
{
    char key[200], msg[700];
    for (size_t m = 0; m < g->n; m++) {
        const cJSON *pod = store_obj_json(g->m[m]->obj);
        const char *uid = kobj_meta_str(pod, "uid"), *tg;
        if (!cluster__gang_waiting(g->m[m]) || !uid)
            continue;
        snprintf(key, sizeof(key), "yk-submit/%.100s", uid);
        if (!cluster__gang_note(c, key, "submitted"))
            continue;
        /* the shim's handleSubmitTaskEvent, once per task */
        snprintf(msg, sizeof(msg), "%.300s/%.300s is queued and waiting for allocation",
                 g->m[m]->obj->ns, g->m[m]->obj->name);
        cluster__event(c, pod, "Normal", "Scheduling", msg, "yunikorn", NULL, NULL);
        tg = kobj_annotation(pod, "yunikorn.apache.org/task-group-name");
        if (tg && *tg) {
            snprintf(msg, sizeof(msg), "Pod belongs to the taskGroup %.300s, it will be scheduled "
                     "as a gang member", tg);
            cluster__event(c, pod, "Normal", "GangScheduling", msg, "yunikorn", NULL, NULL);
        }
    }
}

void cluster__yunikorn_texts(struct cluster *c, const struct gang *g, struct gqueue *qs,
                             const struct nodes *ns, bool over)
{
    char msg[900], req[180], avail[280];
    struct yres h;
    (void)ns;
    if (over)
        yr_headroom(c, g, qs, &h);
    for (size_t m = 0; m < g->n; m++) {
        struct cl_pod *p = g->m[m];
        struct yres r;
        bool fits = true;
        if (!cluster__gang_waiting(p))
            continue;
        if (!over) {
            /* the core's outstanding requests: the queue has room, the cluster has not */
            snprintf(msg, sizeof(msg), "Task %s/%s is pending for the requested resources "
                     "become available", p->obj->ns, p->obj->name);
            cluster__gang_tell(c, p, "request is waiting for cluster resources become available",
                               "Normal", "PodUnschedulable", msg, "yunikorn");
            continue;
        }
        /* FitInMaxUndef: each name the headroom sets must hold the request */
        yr_pod(p, &r);
        for (int k = 0; k < YR_N; k++)
            if (r.has[k] && h.has[k] && r.v[k] > h.v[k])
                fits = false;
        if (fits) {
            for (int k = 0; k < YR_N; k++)
                if (r.has[k] && h.has[k])
                    h.v[k] -= r.v[k];
            continue;
        }
        yr_print(&r, req, sizeof(req));
        yr_print(&h, avail, sizeof(avail));
        const char *uid = kobj_meta_str(store_obj_json(p->obj), "uid");
        snprintf(msg, sizeof(msg), "Request '%.64s' does not fit in queue '%.200s' (requested "
                 "%.180s, available %.280s)", uid ? uid : "", g->queue, req, avail);
        cluster__gang_tell(c, p, NULL, "Normal", "Informational", msg, "yunikorn");
    }
}

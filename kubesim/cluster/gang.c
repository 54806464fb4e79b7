/*
 * gang.c - kubesim's gang schedulers: the step the scheduling pass runs before
 * the default scheduler's, for Pods whose schedulerName is volcano,
 * scheduler-plugins-scheduler, yunikorn or kai-scheduler, and default-scheduler Pods
 * in a Kubernetes WAS PodGroup (spec.schedulingGroup).
 *
 * One call is one scheduling session, as Volcano runs them: every gang (a
 * Volcano PodGroup scheduling.volcano.sh/v1beta1, a scheduler-plugins PodGroup
 * scheduling.x-k8s.io/v1alpha1, a YuniKorn application's task groups, a KAI
 * pod-grouper group, a WAS PodGroup scheduling.k8s.io/v1alpha2, or a lone Pod) is
 * taken in priority order (PriorityClass value, then age), Volcano's enqueued
 * against its Queue, then placed on a trial copy of the nodes' free resources: when
 * at least minMember of its Pods are bound or placeable they are all bound, else
 * none is and each Pending Pod gets the scheduler's FailedScheduling text. This file
 * holds the session and the placement; Volcano's queues, PodGroup status, preempt and
 * reclaim are in gang_volcano.c, KAI's pod-grouper and queues in gang_kai.c,
 * YuniKorn's task groups and queues in gang_yunikorn.c, the scheduler-plugins and WAS
 * PodGroup status in gang_status.c. Runs on the cluster thread only.
 * What is simulated and what is not: docs/batch-scheduling.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/cluster/internal.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

static const char *const component[] = { "volcano", "scheduler-plugins-scheduler", "yunikorn",
                                         "kai-scheduler", "default-scheduler" };

static bool cluster__gang_scheduler(const char *s)
{
    return s && (!strcmp(s, "volcano") || !strcmp(s, "scheduler-plugins-scheduler") ||
                 !strcmp(s, "yunikorn") || !strcmp(s, "kai-scheduler"));
}

/* The default scheduler's workload-aware gang (KubernetesWAS): a Pod naming a
 * scheduling.k8s.io/v1alpha2 PodGroup in spec.schedulingGroup. */
static const char *was_group(const cJSON *pod)
{
    const cJSON *spec = kobj_get(pod, "spec");
    const char *s = kobj_str(spec, "schedulerName");
    const char *g = kobj_str(kobj_get(spec, "schedulingGroup"), "podGroupName");
    return (!s || !*s || !strcmp(s, "default-scheduler")) && g && *g ? g : NULL;
}

bool cluster__gang_pod(const cJSON *pod)
{
    return cluster__gang_scheduler(kobj_str(kobj_get(pod, "spec"), "schedulerName")) || was_group(pod);
}

bool cluster__gang_resource(const struct reg_resource *r)
{
    return r && ((!strcmp(r->group, VOLCANO_GROUP) &&
                  (!strcmp(r->plural, "podgroups") || !strcmp(r->plural, "queues"))) ||
                 (!strcmp(r->group, SP_GROUP) && !strcmp(r->plural, "podgroups")) ||
                 (!strcmp(r->group, "scheduling.k8s.io") && !strcmp(r->version, "v1alpha2") &&
                  !strcmp(r->plural, "podgroups")));
}

/* ---- reading ----------------------------------------------------------------- */

const struct reg_resource *cluster__gang_find(struct cluster *c, const char *g, const char *v,
                                              const char *plural)
{
    const struct registry *r = store_registry_rdlock(c->store);
    const struct reg_resource *res = registry_find(r, g, v, plural);
    store_registry_unlock(c->store);
    return res;
}

int cluster__gang_list(struct cluster *c, const struct reg_resource *r, struct store_list *l)
{
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };
    memset(l, 0, sizeof(*l));
    if (!r)
        return 0;
    int rc = store_list(c->store, r, "", &lo, l, &st);
    store_status_clear(&st);
    return rc;
}

/* A ResourceList as Pod requests (cluster_pod_requests reads container requests). */
void cluster__gang_reslist(const cJSON *list, struct cluster_res *out)
{
    cJSON *pod = cJSON_CreateObject(), *spec, *cs, *ctr, *res;
    memset(out, 0, sizeof(*out));
    if (!pod || !cJSON_IsObject(list))
        goto out;
    spec = cJSON_AddObjectToObject(pod, "spec");
    cs = cJSON_AddArrayToObject(spec, "containers");
    ctr = cJSON_CreateObject();
    cJSON_AddItemToArray(cs, ctr);
    res = cJSON_AddObjectToObject(ctr, "resources");
    cJSON_AddItemToObject(res, "requests", cJSON_Duplicate(list, 1));
    cluster_pod_requests(pod, out);
    out->pods = 0;
out:
    cJSON_Delete(pod);
}

bool cluster__gang_pod_terminal(const cJSON *pod)
{
    const char *ph = kobj_str(kobj_get(pod, "status"), "phase");
    return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

static const char *pod_phase(const cJSON *pod)
{
    const char *ph = kobj_str(kobj_get(pod, "status"), "phase");
    return ph ? ph : "";
}

bool cluster__gang_bound(const struct cl_pod *p)
{
    const char *n = kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "nodeName");
    return n && *n;
}

int64_t cluster__gang_priority(struct cluster *c, const char *pc_name)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    const struct reg_resource *r;
    int64_t v = 0;
    if (!pc_name || !*pc_name)
        return 0;
    if (!strcmp(pc_name, "system-node-critical"))
        return 2000001000;
    if (!strcmp(pc_name, "system-cluster-critical"))
        return 2000000000;
    if ((r = cluster__gang_find(c, "scheduling.k8s.io", "v1", "priorityclasses")) &&
        store_get(c->store, r, "", pc_name, &o, &st) == 0) {
        const cJSON *val = kobj_get(store_obj_json(o), "value");
        v = cJSON_IsNumber(val) ? (int64_t)val->valuedouble : 0;
        store_obj_unref(o);
    }
    store_status_clear(&st);
    return v;
}

void cluster__gang_queue_usage(struct gang **all, size_t n, enum gkind kind, struct gqueue *qs,
                               void (*charge)(struct gqueue *q, const struct cl_pod *p))
{
    for (size_t k = 0; k < n; k++) {
        struct gang *g = all[k];
        struct gqueue *q = NULL;
        if (g->kind != kind)
            continue;
        HASH_FIND_STR(qs, g->queue, q);
        g->q = q;
        for (size_t m = 0; q && m < g->n; m++) {
            const struct cl_pod *p = g->m[m];
            struct gqueue *up = q;
            if (cluster__gang_pod_terminal(store_obj_json(p->obj)) ||
                kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp"))
                continue;
            for (int d = 0; up && d < 16; d++) {
                struct gqueue *next = NULL;
                charge(up, p);
                if (up->parent[0])
                    HASH_FIND_STR(qs, up->parent, next);
                up = next != up ? next : NULL;
            }
        }
    }
}

void cluster__gang_res_add(struct cluster_res *a, const struct cluster_res *b, int sign)
{
    a->cpu_m += sign * b->cpu_m;
    a->mem += sign * b->mem;
    a->gpu += sign * b->gpu;
    a->tpu += sign * b->tpu;
    a->pods += sign * b->pods;
}

/* ---- gangs and queues ---------------------------------------------------------- */

static struct gang *gang_get(struct gang **all, enum gkind k, const char *ns, const char *name,
                             bool create)
{
    char key[700];
    struct gang *g = NULL;
    snprintf(key, sizeof(key), "%d/%s/%s", (int)k, ns, name);
    HASH_FIND_STR(*all, key, g);
    if (g || !create)
        return g;
    if (!(g = calloc(1, sizeof(*g))))
        return NULL;
    snprintf(g->key, sizeof(g->key), "%s", key);
    g->kind = k;
    g->min = 1;
    HASH_ADD_STR(*all, key, g);
    return g;
}

static int gang_add(struct gang *g, struct cl_pod *p)
{
    if (util_array_grow(&g->m, sizeof(*g->m), g->n, &g->cap, 8) < 0)
        return -ENOMEM;
    g->m[g->n++] = p;
    return 0;
}

static void gang_from_pg(struct cluster *c, struct gang *g, struct store_obj *o)
{
    const cJSON *spec = kobj_get(store_obj_json(o), "spec"), *mm = kobj_get(spec, "minMember");
    if (g->kind == G_WAS) {
        const cJSON *gang = kobj_get(kobj_get(spec, "schedulingPolicy"), "gang");
        mm = gang ? kobj_get(gang, "minCount") : NULL;
        if (!gang)
            mm = NULL;   /* basic policy: no minimum beyond one Pod */
    }
    g->pg = store_obj_ref(o);
    g->ns = o->ns;
    g->name = o->name;
    g->min = cJSON_IsNumber(mm) ? (int64_t)mm->valuedouble : (g->kind == G_WAS ? 1 : 0);
    g->has_minres = cJSON_IsObject(kobj_get(spec, "minResources"));
    cluster__gang_reslist(kobj_get(spec, "minResources"), &g->minres);
    snprintf(g->queue, sizeof(g->queue), "%s",
             kobj_str(spec, "queue") && *kobj_str(spec, "queue") ? kobj_str(spec, "queue") : "default");
    g->prio = cluster__gang_priority(c, kobj_str(spec, "priorityClassName"));
    g->ctime = kobj_meta_str(store_obj_json(o), "creationTimestamp");
}

/* FNV-1a: what was last said of a Pod is kept as a hash, not a copy */
static uint64_t said_hash(const char *a, const char *b)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = a; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *s = b; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

void cluster__gang_tell(struct cluster *c, struct cl_pod *p, const char *cond,
                        const char *ev_type, const char *ev_reason, const char *msg,
                        const char *comp)
{
    /* Volcano's PodScheduled reason for a task that would fit once its gang does */
    bool waiting = cond && strstr(cond, "once minAvailable is satisfied") != NULL;
    uint64_t h = said_hash(ev_reason, msg);
    bool cond_new = cond && (strcmp(cond, cluster__pod_unsched(p)) || waiting != p->sched_waiting);
    if (!cond_new && h == p->said)
        return;
    if (cond_new) {
        p->sched_waiting = waiting;
        cluster__pod_set_unsched(p, cond);
        cluster__kubelet_set_cond(p, C_SCHED, false);
        cluster__kubelet_write(c, p);
    }
    p->said = h;
    cluster__event(c, store_obj_json(p->obj), ev_type, ev_reason, msg, comp, NULL, NULL);
}

/* Volcano's and the default scheduler's way: the Event and the condition say the same */
static void set_unsched(struct cluster *c, struct cl_pod *p, const char *msg, const char *comp)
{
    cluster__gang_tell(c, p, msg, "Warning", "FailedScheduling", msg, comp);
}

bool cluster__gang_waiting(const struct cl_pod *p)
{
    return !cluster__gang_bound(p) && !cluster__gang_pod_terminal(store_obj_json(p->obj)) &&
           !kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp");
}

/* What was last said of a PodGroup, so that a session repeats no Event. */
struct gang_note {
    char *key;
    uint64_t said;
    UT_hash_handle hh;
};

void cluster__gang_free(struct cluster *c)
{
    struct gang_note *n, *t;
    HASH_ITER(hh, c->gang_notes, n, t) {
        HASH_DEL(c->gang_notes, n);
        free(n->key);
        free(n);
    }
}

bool cluster__gang_note(struct cluster *c, const char *key, const char *msg)
{
    struct gang_note *n = NULL;
    uint64_t h = said_hash(key, msg);
    HASH_FIND_STR(c->gang_notes, key, n);
    if (n && n->said == h)
        return false;
    if (!n) {
        /* bounded: past it everything is forgotten (an Event may then be said again) */
        if (HASH_COUNT(c->gang_notes) >= 8192)
            cluster__gang_free(c);
        if (!(n = calloc(1, sizeof(*n))) || !(n->key = strdup(key))) {
            free(n);
            return true;
        }
        HASH_ADD_KEYPTR(hh, c->gang_notes, n->key, strlen(n->key), n);
    }
    n->said = h;
    return true;
}


/* Sorts the gang's Pods: the head first, then by name (the order Volcano's task
 * ordering gives equal-priority tasks of one job is creation, which the names of a
 * RayCluster's Pods follow closely enough here). */
static int member_cmp(const void *a, const void *b)
{
    const struct cl_pod *x = *(struct cl_pod *const *)a, *y = *(struct cl_pod *const *)b;
    const char *tx = kobj_label(store_obj_json(x->obj), "ray.io/node-type");
    const char *ty = kobj_label(store_obj_json(y->obj), "ray.io/node-type");
    int hx = tx && !strcmp(tx, "head"), hy = ty && !strcmp(ty, "head");
    if (hx != hy)
        return hy - hx;
    return strcmp(x->key, y->key);
}

static int gang_cmp(const void *a, const void *b)
{
    const struct gang *x = *(struct gang *const *)a, *y = *(struct gang *const *)b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    int t = strcmp(x->ctime ? x->ctime : "", y->ctime ? y->ctime : "");
    return t ? t : strcmp(x->key, y->key);
}

/* Best node for p on the session's view (with future, counting the Pods being deleted
 * as gone); fills fits[] (count entries). */
static int place(const struct cl_pod *p, const struct nodes *ns, unsigned *fits, bool future,
                 char *taint, size_t taint_cap)
{
    int best = -1, best_score = -1;
    for (size_t i = 0; i < ns->count; i++) {
        struct cluster_res u = ns->used[i];
        if (future && ns->releasing)
            cluster__gang_res_add(&u, &ns->releasing[i], -1);
        fits[i] = cluster_node_fits(store_obj_json(p->obj), &p->req, store_obj_json(ns->n[i]->obj), &ns->n[i]->alloc,
                                    &u, taint && !*taint ? taint : NULL, taint_cap);
        if (!fits[i]) {
            int sc = cluster_node_score(&p->req, &ns->n[i]->alloc, &u);
            if (sc > best_score) {
                best = (int)i;
                best_score = sc;
            }
        }
    }
    return best;
}

/* Volcano's FitErrors text: "0/N nodes are unavailable: 3 Insufficient cpu." */
static void fit_error(const unsigned *fits, size_t n, char *out, size_t cap)
{
    static const char *const text[] = { "node(s) were unschedulable", "node(s) had untolerated taint",
        "node(s) didn't match Pod's node affinity/selector", "Too many pods", "Insufficient cpu",
        "Insufficient memory", "Insufficient nvidia.com/gpu", "Insufficient google.com/tpu" };
    size_t count[8] = { 0 }, off;
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            if (fits[i] & (1u << b))
                count[b]++;
    off = (size_t)snprintf(out, cap, "0/%zu nodes are unavailable", n);
    const char *sep = ": ";
    /* sorted as the "COUNT reason" strings sort; equal counts keep this order, which
     * is already alphabetical for the resource reasons */
    for (int b = 0; b < 8 && off < cap; b++) {
        if (!count[b])
            continue;
        off += (size_t)snprintf(out + off, cap - off, "%s%zu %s", sep, count[b], text[b]);
        sep = ", ";
    }
    if (off < cap)
        snprintf(out + off, cap - off, ".");
}

static void fit_message(const struct gang *g, const struct outcome *o, bool origin, char *out,
                        size_t cap);

/* Trial placement of the gang's Pending Pods; binds them all when the gang is
 * ready (bound + placed >= min), else none. */
static void allocate(struct cluster *c, struct gang *g, struct nodes *ns, struct outcome *o,
                     bool may_bind, struct gqueue *q)
{
    struct cluster_res qused = q ? q->share_used : (struct cluster_res){ 0 };
    unsigned *fits = calloc(ns->count + 1, sizeof(*fits));
    int *where = calloc(g->n + 1, sizeof(*where));
    bool *piped = calloc(g->n + 1, sizeof(*piped));
    struct cluster_res *save = malloc((ns->count + 1) * sizeof(*save));
    if (!fits || !where || !piped || !save)
        goto out;
    memcpy(save, ns->used, ns->count * sizeof(*save));
    for (size_t i = 0; i < g->n; i++) {
        struct cl_pod *p = g->m[i];
        where[i] = -1;
        if (!may_bind || cluster__gang_bound(p) || cluster__gang_pod_terminal(store_obj_json(p->obj)) ||
            kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp"))
            continue;
        struct cluster_res extra = qused;
        if (q)
            cluster__gang_res_add(&extra, &q->share_used, -1);
        if (q && q->real_set ? !cluster__volcano_hier_fits(q, &extra, &p->req)
                             : !cluster__volcano_within_share(q, &qused, &p->req)) {
            /* "Queue <q> is overused when considering task": the task is left out */
            if (!o->fit[0])
                snprintf(o->fit, sizeof(o->fit), "queue %.200s is overused", q->name);
            continue;
        }
        struct gang_try *t = o->tries ? &o->tries[i] : NULL;
        if (t)
            t->taint[0] = '\0';
        int best = place(p, ns, fits, false, t ? t->taint : NULL, t ? sizeof(t->taint) : 0);
        if (best < 0 && !o->fit[0]) {
            fit_error(fits, ns->count, o->fit, sizeof(o->fit));
            snprintf(o->first_unfit, sizeof(o->first_unfit), "%s", p->obj->name);
        }
        if (t) {
            /* what the schedulers that word it per Pod need: the trial up to here */
            t->tried = true;
            t->unfit = best < 0;
            t->before = o->placed;
            if (best < 0 && t->fits)
                memcpy(t->fits, fits, ns->count * sizeof(*fits));
        }
        /* Volcano pipelines a task that fits once the Pods being deleted are gone */
        if (best < 0 && g->kind == G_VOLCANO && (best = place(p, ns, fits, true, NULL, 0)) >= 0)
            piped[i] = true;
        if (best >= 0) {
            where[i] = best;
            cluster__gang_res_add(&ns->used[best], &p->req, 1);
            cluster__gang_res_add(&qused, &p->req, 1);
            if (piped[i])
                o->pipelined++;
            else
                o->placed++;
        }
    }
    bool reserve_fits = true;
    if (g->reserve.cpu_m || g->reserve.mem || g->reserve.gpu || g->reserve.tpu) {
        struct cluster_res free_ = { 0 };
        for (size_t i = 0; i < ns->count; i++) {
            cluster__gang_res_add(&free_, &ns->n[i]->alloc, 1);
            cluster__gang_res_add(&free_, &ns->used[i], -1);
        }
        reserve_fits = free_.cpu_m >= g->reserve.cpu_m && free_.mem >= g->reserve.mem &&
                       free_.gpu >= g->reserve.gpu && free_.tpu >= g->reserve.tpu;
        if (!reserve_fits && !o->fit[0]) {
            snprintf(o->fit, sizeof(o->fit), "the placeholders of the task groups do not fit");
            snprintf(o->first_unfit, sizeof(o->first_unfit), "%s", g->name);
        }
    }
    if (may_bind && reserve_fits && o->scheduled + o->placed >= g->min && o->placed > 0) {
        for (size_t i = 0; i < g->n; i++) {
            if (where[i] < 0 || piped[i])
                continue;
            if (cluster__bind_pod(c, g->m[i], ns->n[where[i]], component[g->kind]) == 0) {
                o->scheduled++;
                o->bound_now = true;
                /* with the hierarchy, the ancestors' too */
                for (struct gqueue *a = q; a; a = a->real_set ? a->up : NULL)
                    cluster__gang_res_add(&a->share_used, &g->m[i]->req, 1);
            }
        }
        o->ready = o->scheduled >= g->min;
        goto out;
    }
    /* pipelined: the gang has its members once the Pods being deleted are gone; nothing
     * is bound yet, the places stay taken for this session, as Volcano keeps them */
    bool pipelined = may_bind && o->pipelined && o->scheduled + o->placed + o->pipelined >= g->min;
    /* not enough for the gang: nothing is bound, the trial is undone */
    if (!pipelined) {
        memcpy(ns->used, save, ns->count * sizeof(*save));
        o->pipelined = 0;
    }
    for (size_t i = 0; i < g->n; i++)
        if (where[i] >= 0)
            where[i] = -(where[i] + 2);   /* "could be placed", for the message */
    {
        /* Volcano words it per task: a task that fits is told it waits for the gang,
         * the others get the gang's text (the other schedulers': from the caller) */
        char msg[CL_UNSCHED_MSG_MAX], gang_msg[sizeof(msg)];
        o->placed = 0;   /* now "schedulable", in Volcano's words */
        for (size_t i = 0; i < g->n; i++)
            o->placed += where[i] <= -2 && !piped[i] && !cluster__gang_bound(g->m[i]) &&
                         !cluster__gang_pod_terminal(store_obj_json(g->m[i]->obj));
        /* kept, they hold their places for this session as the pipelined ones do */
        o->held = pipelined ? o->placed : 0;
        fit_message(g, o, pipelined, gang_msg, sizeof(gang_msg));
        for (size_t i = 0; may_bind && g->kind == G_VOLCANO && i < g->n; i++) {
            struct cl_pod *p = g->m[i];
            if (cluster__gang_bound(p) || cluster__gang_pod_terminal(store_obj_json(p->obj)))
                continue;
            if (where[i] <= -2)
                snprintf(msg, sizeof(msg), "Pod %s/%s can possibly be assigned to %s, once "
                         "%sminAvailable is satisfied", p->obj->ns, p->obj->name,
                         ns->n[-where[i] - 2]->name,
                         pipelined && piped[i] ? "resource is released and " : "");
            else
                snprintf(msg, sizeof(msg), "%s", gang_msg);
            set_unsched(c, p, msg, component[g->kind]);
        }
    }
out:
    free(fits);
    free(where);
    free(piped);
    free(save);
}

/* "pod group is not ready, 3 Pending, 3 minAvailable; Pending: 1 Schedulable, 2
 * Unschedulable" (JobInfo.FitError, as Volcano v1.14 writes it: the real scheduler
 * adds no node fit error); with origin, kubesim's ". Origin reason is NAME: FIT"
 * for the other gang schedulers, whose texts are kubesim's own. */
static void fit_message(const struct gang *g, const struct outcome *o, bool origin, char *out,
                        size_t cap)
{
    char hist[5][64];
    int nh = 0;
    size_t off;
    int64_t pending = o->pending - o->pipelined;
    if (pending > 0)
        snprintf(hist[nh++], sizeof(hist[0]), "%lld Pending", (long long)pending);
    if (o->pipelined)
        snprintf(hist[nh++], sizeof(hist[0]), "%lld Pipelined", (long long)o->pipelined);
    if (o->running)
        snprintf(hist[nh++], sizeof(hist[0]), "%lld Running", (long long)o->running);
    if (o->scheduled - o->running - o->succeeded - o->failed > 0)
        snprintf(hist[nh++], sizeof(hist[0]), "%lld Bound",
                 (long long)(o->scheduled - o->running - o->succeeded - o->failed));
    snprintf(hist[nh++], sizeof(hist[0]), "%lld minAvailable", (long long)g->min);
    qsort(hist, (size_t)nh, sizeof(hist[0]), (int (*)(const void *, const void *))strcmp);
    off = (size_t)snprintf(out, cap, "%s", o->ready ? "pod group is ready" : "pod group is not ready");
    for (int i = 0; i < nh && off < cap; i++)
        off += (size_t)snprintf(out + off, cap - off, ", %s", hist[i]);
    if (pending > 0 && off < cap) {
        int64_t un = pending - o->placed;
        if (o->placed && un)
            off += (size_t)snprintf(out + off, cap - off, "; Pending: %lld Schedulable, %lld Unschedulable",
                                    (long long)o->placed, (long long)un);
        else if (o->placed)
            off += (size_t)snprintf(out + off, cap - off, "; Pending: %lld Schedulable",
                                    (long long)o->placed);
        else
            off += (size_t)snprintf(out + off, cap - off, "; Pending: %lld Unschedulable",
                                    (long long)un);
    }
    if (origin && o->fit[0] && off < cap &&
        snprintf(out + off, cap - off, ". Origin reason is %s: %s", o->first_unfit, o->fit) < 0)
        out[off] = '\0';
}

static void count(const struct gang *g, struct outcome *o)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct cl_pod *p = g->m[i];
        const char *ph = pod_phase(store_obj_json(p->obj));
        if (cluster__gang_bound(p)) {
            o->scheduled++;
            if (!strcmp(ph, "Running"))
                o->running++;
            else if (!strcmp(ph, "Succeeded"))
                o->succeeded++;
            else if (!strcmp(ph, "Failed"))
                o->failed++;
        } else if (!cluster__gang_pod_terminal(store_obj_json(p->obj)) &&
                   !kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp")) {
            o->pending++;
        }
    }
}

/* ---- the session ------------------------------------------------------------------ */

/* Volcano's ExceededPart: a less b, dimension by dimension, none below 0. */
static struct cluster_res res_over(const struct cluster_res *a, const struct cluster_res *b)
{
    struct cluster_res r = { 0 };
    r.cpu_m = a->cpu_m > b->cpu_m ? a->cpu_m - b->cpu_m : 0;
    r.mem = a->mem > b->mem ? a->mem - b->mem : 0;
    r.gpu = a->gpu > b->gpu ? a->gpu - b->gpu : 0;
    r.tpu = a->tpu > b->tpu ? a->tpu - b->tpu : 0;
    return r;
}

/* Puts each gang Pod in its gang; true when one of them was bound by the cluster's own
 * write whose event has not been taken yet (accounted on a node, no nodeName in its tree). */
static bool collect_members(struct cluster *c, struct gang **all)
{
    struct cl_pod *p, *tmp;
    bool unseen = false;
    HASH_ITER(hh, c->pods, p, tmp) {
        const cJSON *pod = store_obj_json(p->obj);
        const char *sched = kobj_str(kobj_get(pod, "spec"), "schedulerName");
        const char *wg = was_group(pod);
        struct gang *g = NULL;
        if (wg) {
            /* a Pod naming a PodGroup that does not exist yet waits for it */
            g = gang_get(all, G_WAS, p->obj->ns, wg, false);
        } else if (!cluster__gang_scheduler(sched)) {
            continue;
        } else if (!strcmp(sched, "volcano") || !strcmp(sched, "scheduler-plugins-scheduler")) {
            /* Both name a PodGroup, Volcano by annotation and scheduler-plugins by label.
             * A Pod naming a PodGroup that does not exist waits for it; a Pod naming
             * none is a gang of one (Volcano's controller would make it a PodGroup) */
            bool vc = !strcmp(sched, "volcano");
            enum gkind k = vc ? G_VOLCANO : G_SP;
            const char *grp = vc ? kobj_annotation(pod, "scheduling.k8s.io/group-name")
                                 : kobj_label(pod, "scheduling.x-k8s.io/pod-group");
            g = grp && *grp ? gang_get(all, k, p->obj->ns, grp, false)
                            : gang_get(all, k, p->obj->ns, p->obj->name, true);
            if (g && !g->ns) {
                g->ns = p->obj->ns;
                g->name = p->obj->name;
                if (vc)
                    snprintf(g->queue, sizeof(g->queue), "default");
            }
        } else if (!strcmp(sched, "yunikorn")) {
            const char *app = kobj_label(pod, "applicationId");
            g = gang_get(all, G_YUNIKORN, p->obj->ns, app && *app ? app : p->obj->name, true);
            if (g && !g->ns) {
                const char *yq = kobj_label(pod, "queue");
                if (!yq || !*yq)
                    yq = kobj_annotation(pod, "yunikorn.apache.org/queue");
                g->ns = p->obj->ns;
                g->name = app && *app ? app : p->obj->name;
                snprintf(g->queue, sizeof(g->queue), "%s", yq && *yq ? yq : "root.default");
            }
        } else {
            const cJSON *rc = cluster__controller_ref(pod, "ray.io/", "RayCluster");
            const char *rcname = kobj_str(rc, "name");
            g = gang_get(all, G_KAI, p->obj->ns, rcname && *rcname ? rcname : p->obj->name, true);
            if (g && !g->ns) {
                g->ns = p->obj->ns;
                cluster__kai_gang_init(c, g, pod);
            }
        }
        if (g) {
            if (!g->ctime)
                g->ctime = kobj_meta_str(pod, "creationTimestamp");
            gang_add(g, p);
            unseen = unseen || (p->acct_node && !cluster__gang_bound(p));
        }
    }
    return unseen;
}

/* What a KAI gang or YuniKorn application just bound counts in its queue and those
 * above it (limits, order). Bound this session: accounted on a node, not yet seen with
 * a nodeName. */
static void queue_charge(struct gang *g, struct gqueue *kqs)
{
    for (size_t m = 0; g->q && m < g->n; m++) {
        struct cl_pod *p = g->m[m];
        if (!p->acct_node || cluster__gang_bound(p))
            continue;
        int depth = 0;   /* a parent cycle ends at the bound */
        for (struct gqueue *q = g->q; q && depth++ < 16;) {
            struct gqueue *up = NULL;
            cluster__gang_res_add(&q->allocated, &p->req, 1);
            cluster__gang_res_add(&q->share_used, &p->req, 1);
            if (q->parent[0])
                HASH_FIND_STR(kqs, q->parent, up);
            q = up != q ? up : NULL;
        }
    }
}

/* Volcano's allocate takes the queue that ranks first (spec.priority, then the smallest
 * share of its deserved resources, which each binding raises), then that queue's first
 * gang; KAI's likewise by priority, then by allocated over fair share. order[k..n) is in
 * gang order; when order[k] is a gang in a queue, the first gang of the best queue among
 * the gangs of the same scheduler left is brought to k, the others keep their order
 * (the other schedulers' gangs keep their places). */
static void pick_next(struct gang **order, size_t k, size_t n)
{
    struct gang *g = order[k];
    struct gqueue *best = NULL;
    double best_share = 0;
    size_t at = k;
    if (!g->q)
        return;
    for (size_t i = k; i < n; i++) {
        struct gqueue *q = order[i]->q;
        double sh;
        if (order[i]->kind != g->kind || !q || q == best)
            continue;
        sh = cluster__volcano_share(q);
        if (!best || q->priority > best->priority ||
            (q->priority == best->priority && sh < best_share)) {
            best = q;
            best_share = sh;
            at = i;
        }
    }
    /* at is the first gang of its queue (the scan meets each queue's first gang first) */
    if (at != k) {
        g = order[at];
        memmove(&order[k + 1], &order[k], (at - k) * sizeof(*order));
        order[k] = g;
    }
}

void cluster__gang_pass(struct cluster *c)
{
    struct gang *all = NULL, *g, *tmp, **order = NULL;
    struct gqueue *qs = NULL, *kqs = NULL, *yqs = NULL, *q, *qt;
    struct store_list vpg = { 0 }, spg = { 0 }, ql = { 0 };
    struct nodes ns = { 0 };
    struct cluster_res idle = { 0 }, inqueue = { 0 }, total = { 0 };
    struct cl_node *n, *nt;
    size_t ng = 0, i = 0;
    if (!c->gang_dirty) {
        /* Volcano's controller makes the default Queue once its CRD is served */
        if (c->gang_queue_crd || !cluster__gang_find(c, VOLCANO_GROUP, "v1beta1", "queues"))
            return;
        c->gang_queue_crd = true;
    }
    c->gang_dirty = false;
    c->gang_session++;
    const struct reg_resource *rpg = cluster__gang_find(c, VOLCANO_GROUP, "v1beta1", "podgroups");
    const struct reg_resource *rq = cluster__gang_find(c, VOLCANO_GROUP, "v1beta1", "queues");
    const struct reg_resource *rsp = cluster__gang_find(c, SP_GROUP, "v1alpha1", "podgroups");
    const struct reg_resource *rwas = cluster__gang_find(c, "scheduling.k8s.io", "v1alpha2", "podgroups");
    struct store_list wpg = { 0 };

    cluster__volcano_queues_load(c, rq, &qs, &ql);
    cluster__volcano_default_queue(c, rq, &qs);
    if (cluster__gang_list(c, rpg, &vpg) == 0)
        for (i = 0; i < vpg.n; i++)
            if ((g = gang_get(&all, G_VOLCANO, vpg.items[i]->ns, vpg.items[i]->name, true)))
                gang_from_pg(c, g, vpg.items[i]);
    if (cluster__gang_list(c, rsp, &spg) == 0)
        for (i = 0; i < spg.n; i++)
            if ((g = gang_get(&all, G_SP, spg.items[i]->ns, spg.items[i]->name, true)))
                gang_from_pg(c, g, spg.items[i]);
    if (cluster__gang_list(c, rwas, &wpg) == 0)
        for (i = 0; i < wpg.n; i++)
            if ((g = gang_get(&all, G_WAS, wpg.items[i]->ns, wpg.items[i]->name, true)))
                gang_from_pg(c, g, wpg.items[i]);
    if (collect_members(c, &all)) {
        /* a later pass of the same long batch (run.c) than the one that bound it: the
         * session would take the Pod for Pending and bind it again (a second Scheduled
         * Event, its requests counted twice on the node). Its event is queued: the next
         * loop turn takes it, then runs the session. */
        c->gang_dirty = true;
        goto out;
    }

    /* the session's node view */
    ns.count = HASH_COUNT(c->nodes);
    ns.n = calloc(ns.count + 1, sizeof(*ns.n));
    ns.used = calloc(ns.count + 1, sizeof(*ns.used));
    ns.releasing = calloc(ns.count + 1, sizeof(*ns.releasing));
    order = calloc(HASH_COUNT(all) + 1, sizeof(*order));
    if (!ns.n || !ns.used || !ns.releasing || !order)
        goto out;
    i = 0;
    HASH_ITER(hh, c->nodes, n, nt) {
        ns.n[i] = n;
        ns.used[i] = n->used;
        if (!cJSON_IsTrue(kobj_get(kobj_get(store_obj_json(n->obj), "spec"), "unschedulable"))) {
            struct cluster_res free_ = n->alloc;
            cluster__gang_res_add(&free_, &n->used, -1);
            cluster__gang_res_add(&idle, &free_, 1);
            cluster__gang_res_add(&total, &n->alloc, 1);
        }
        i++;
    }
    {
        /* Pods on their way out: Volcano counts them as free in the future (FutureIdle) */
        struct cl_pod *p, *pt;
        HASH_ITER(hh, c->pods, p, pt) {
            if (!p->acct_node || !kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp"))
                continue;
            for (size_t k = 0; k < ns.count; k++)
                if (!strcmp(ns.n[k]->name, p->acct_node))
                    cluster__gang_res_add(&ns.releasing[k], &p->req, 1);
        }
    }
    HASH_ITER(hh, all, g, tmp) {
        order[ng++] = g;
        if (g->n > 1)
            qsort(g->m, g->n, sizeof(*g->m), member_cmp);
        if (g->kind == G_YUNIKORN)
            cluster__yunikorn_groups(g);
        if (g->kind == G_VOLCANO && g->pg) {
            HASH_FIND_STR(qs, g->queue, q);
            g->q = q;
            if (q)
                q->has_job = true;
            const char *ph = kobj_str(kobj_get(store_obj_json(g->pg), "status"), "phase");
            struct cluster_res held = { 0 };   /* what its Pods hold in the queue */
            for (size_t k = 0; k < g->n; k++) {
                const cJSON *pod = store_obj_json(g->m[k]->obj);
                /* a Pod on its way out is Releasing: no longer the queue's */
                bool going = kobj_get(kobj_get(pod, "metadata"), "deletionTimestamp") != NULL;
                const char *pph = kobj_str(kobj_get(pod, "status"), "phase");
                if (cluster__gang_bound(g->m[k]) && !going && !(pph && !strcmp(pph, "Failed"))) {
                    g->ready++;
                    cluster__gang_res_add(&g->alloc, &g->m[k]->req, 1);
                }
                if (!q || cluster__gang_pod_terminal(pod) || going)
                    continue;
                if (cluster__gang_bound(g->m[k])) {
                    cluster__gang_res_add(&q->allocated, &g->m[k]->req, 1);
                    cluster__gang_res_add(&held, &g->m[k]->req, 1);
                }
                cluster__gang_res_add(&q->request, &g->m[k]->req, 1);
            }
            /* an Inqueue gang not yet running holds its minResources; a Running one with
             * its members holds what its minResources name beyond what it was given (a
             * RayJob's submitter still to come), as the overcommit and proportion plugins
             * count it */
            if (q && ph && !strcmp(ph, "Inqueue")) {
                cluster__gang_res_add(&q->inqueue, &g->minres, 1);
                cluster__gang_res_add(&inqueue, &g->minres, 1);
            } else if (q && ph && !strcmp(ph, "Running") && g->has_minres && g->ready >= g->min) {
                struct cluster_res rest = res_over(&g->minres, &g->alloc);
                cluster__gang_res_add(&q->inqueue, &rest, 1);
                cluster__gang_res_add(&inqueue, &rest, 1);
            }
            /* what it holds beyond its minResources (all of it without them) is elastic:
             * proportion's enqueue takes it off the queue's use */
            if (q) {
                struct cluster_res none = { 0 }, el = res_over(&held, g->has_minres ? &g->minres : &none);
                cluster__gang_res_add(&q->elastic, &el, 1);
            }
        }
    }
    qsort(order, ng, sizeof(*order), gang_cmp);
    /* the scheduler's configuration: the actions after allocate, and the capacity plugin
     * with hierarchical queues in place of proportion's shares */
    unsigned acts = cluster__volcano_actions(c);
    bool hier = acts & VOLCANO_HIERARCHY, vblock = false;
    if (hier)
        vblock = cluster__volcano_hierarchy(qs, order, ng);
    else
        cluster__volcano_deserved(qs, &total);
    kqs = cluster__kai_queues(c, order, ng, &total);
    yqs = cluster__yunikorn_queues(c, order, ng);

    for (size_t k = 0; k < ng; k++) {
        struct outcome o;
        char why[300], msg[1000];
        pick_next(order, k, ng);
        g = order[k];
        memset(&o, 0, sizeof(o));
        count(g, &o);
        o.ready = o.scheduled >= g->min;
        if (g->kind != G_VOLCANO || !g->pg) {
            if (g->n == 0) {
                cluster__gang_pg_status(c, g, &o, NULL);
                continue;
            }
            struct store_obj *kpg = NULL;
            const char *job_err = NULL;
            if (g->kind == G_KAI) {
                if (!g->kai_err[0])
                    kpg = cluster__kai_podgroup(c, g);
                /* the scheduler goes by the PodGroup's queue (a user may have moved it) */
                const char *pq = kpg ? kobj_str(kobj_get(store_obj_json(kpg), "spec"), "queue") : NULL;
                if (pq && *pq && strcmp(pq, g->queue)) {
                    snprintf(g->queue, sizeof(g->queue), "%s", pq);
                    HASH_FIND_STR(kqs, g->queue, g->q);
                }
                if (g->kai_err[0]) {
                    /* the pod-grouper made no PodGroup: it says so on each Pod */
                    for (size_t m = 0; m < g->n; m++)
                        if (cluster__gang_waiting(g->m[m]))
                            cluster__gang_tell(c, g->m[m], NULL, "Warning", "PodGrouperWarning",
                                               g->kai_err, "pod-grouper");
                    continue;
                }
                job_err = cluster__kai_queue_check(c, g, why, sizeof(why));
                if (!job_err && o.pending)
                    job_err = cluster__kai_limit_check(g, kqs, why, sizeof(why));
                if (!job_err)
                    cluster__kai_annotate(c, g);
            }
            if (g->kind == G_YUNIKORN)
                cluster__yunikorn_submit(c, g);
            bool over = (g->kind == G_YUNIKORN && o.pending &&
                         cluster__yunikorn_max_check(g, yqs, why, sizeof(why)) != NULL) ||
                        /* coscheduling's PreFilter: too few Pods, or minResources exceed the nodes */
                        (g->kind == G_SP && o.pending && g->pg &&
                         ((int64_t)g->n < g->min || cluster__sp_gap(g, &ns, why, sizeof(why))));
            struct gang_try *tries = NULL;
            unsigned *fitbuf = NULL;
            if (o.pending && !job_err && !over) {
                /* the per-Pod texts of these schedulers need what the trial found */
                tries = calloc(g->n, sizeof(*tries));
                fitbuf = calloc(g->n * ns.count + 1, sizeof(*fitbuf));
                for (size_t m = 0; tries && fitbuf && m < g->n; m++)
                    tries[m].fits = fitbuf + m * ns.count;
                o.tries = fitbuf ? tries : NULL;
                o.nodes = ns.count;
                allocate(c, g, &ns, &o, true, NULL);
            }
            if (o.bound_now)
                queue_charge(g, g->kind == G_KAI ? kqs : yqs);
            const char *said = NULL;
            if (o.pending && !o.bound_now) {
                o.nodes = ns.count;
                if (g->kind == G_KAI)
                    said = cluster__kai_texts(c, g, &o, kpg, job_err, msg, sizeof(msg));
                else if (g->kind == G_YUNIKORN)
                    cluster__yunikorn_texts(c, g, yqs, &ns, over);
                else if (g->kind == G_SP)
                    cluster__sp_texts(c, g, &o, &ns);
                else if (g->kind == G_WAS)
                    said = cluster__was_texts(c, g, &o, msg, sizeof(msg));
            }
            free(tries);
            free(fitbuf);
            o.tries = NULL;
            cluster__gang_pg_status(c, g, &o, g->kind == G_WAS ? said : NULL);
            /* a gang that is not ready leaves the PodGroup's status as it was */
            if (kpg && (said || !o.pending || o.bound_now))
                cluster__kai_pg_status(c, kpg, said);
            if (kpg)
                cluster__kai_pg_resources(c, kpg, g);
            store_obj_unref(kpg);
            continue;
        }
        /* a Volcano PodGroup */
        HASH_FIND_STR(qs, g->queue, q);
        /* the scheduler cache leaves out a job whose Queue does not exist: no status, no
         * Event, its Pods wait unspoken to (its admission webhook would have refused it) */
        if (!q && rq)
            continue;
        const char *phase = kobj_str(kobj_get(store_obj_json(g->pg), "status"), "phase");
        if (!phase || !*phase)
            phase = "Pending";
        bool inq = !strcmp(phase, "Inqueue") || !strcmp(phase, "Running") ||
                   !strcmp(phase, "Unknown") || !strcmp(phase, "Completed");
        const char *unsched_msg = NULL, *enq_reason = NULL;
        /* a job in a queue with children: the capacity plugin refuses the session */
        if (!o.ready && !inq && !vblock) {
            const char *reason = hier ? cluster__volcano_hier_enqueue(g, q, why, sizeof(why)) : NULL;
            if (!reason)
                reason = cluster__volcano_enqueue_check(g, q, rq != NULL, &total, &idle, &inqueue, why,
                                                        sizeof(why));
            if (!reason) {
                inq = true;
                phase = "Inqueue";
                for (struct gqueue *a = q; a; a = hier ? a->up : NULL)
                    cluster__gang_res_add(&a->inqueue, &g->minres, 1);
                cluster__gang_res_add(&inqueue, &g->minres, 1);
            } else if (g->n && *reason) {
                enq_reason = reason;   /* the proportion / overcommit plugins' Normal Event */
            }
        }
        /* a Closed queue takes gangs in but allocate gives them nothing */
        bool open = !q || q->open;
        if (inq && open && o.pending && !vblock)
            allocate(c, g, &ns, &o, true, q);
        if (!o.ready && g->n) {   /* a PodGroup without Pods yet has nothing to say */
            /* pipelined, Volcano says why the tasks do not fit now ("Origin reason") */
            fit_message(g, &o, o.pipelined > 0, msg, sizeof(msg));
            unsched_msg = msg;
            if (!inq || !open)   /* no allocation tried: each waiting task gets the gang's text */
                for (size_t m = 0; m < g->n; m++)
                    if (!cluster__gang_bound(g->m[m]) && !cluster__gang_pod_terminal(store_obj_json(g->m[m]->obj)))
                        set_unsched(c, g->m[m], msg, "volcano");
        }
        /* getPodGroupPhase: some running while the gang cannot be placed is Unknown */
        int64_t completed = o.succeeded + o.failed;
        if (o.running && unsched_msg)
            phase = "Unknown";
        else if (o.scheduled >= g->min)
            phase = o.scheduled == completed ? "Completed" : "Running";
        else if (strcmp(phase, "Inqueue") != 0)
            phase = "Pending";
        cluster__volcano_pg_status(c, g, rpg, phase, &o, unsched_msg, enq_reason);
        g->phase = phase;
        g->scheduled = o.scheduled;
        /* JobStarving counts the tasks the session holds (Allocated, Pipelined) as
         * occupied: without those placed now, a gang pipelined beside them looked short of
         * minMember and reclaim took more for tasks already placed */
        g->pipelined = o.pipelined + o.held;
        if (q) {
            if (!strcmp(phase, "Pending")) q->pending++;
            else if (!strcmp(phase, "Inqueue")) q->inqueue_n++;
            else if (!strcmp(phase, "Running")) q->running++;
            else if (!strcmp(phase, "Completed")) q->completed++;
        }
    }
    /* the actions after allocate, as the scheduler's configuration lists them (not with
     * the capacity plugin's hierarchy: its reclaim is not simulated) */
    if (hier)
        acts &= ~(VOLCANO_PREEMPT | VOLCANO_RECLAIM);
    if (acts & VOLCANO_PREEMPT)
        cluster__volcano_evict(c, order, ng, qs, &ns, VOLCANO_PREEMPT | (acts & VOLCANO_PLUGIN_OFF));
    if (acts & VOLCANO_RECLAIM)
        cluster__volcano_evict(c, order, ng, qs, &ns, VOLCANO_RECLAIM | (acts & VOLCANO_PLUGIN_OFF));
    HASH_ITER(hh, qs, q, qt)
        cluster__volcano_queue_status(c, rq, q);
    cluster__kai_queue_status(c, kqs);
out:
    HASH_ITER(hh, all, g, tmp) {
        HASH_DEL(all, g);
        store_obj_unref(g->pg);
        cJSON_Delete(g->kai_obj);
        free(g->m);
        free(g);
    }
    HASH_ITER(hh, qs, q, qt) {
        HASH_DEL(qs, q);
        if (q->owned)
            store_obj_unref(q->obj);
        free(q);
    }
    HASH_ITER(hh, kqs, q, qt) {
        HASH_DEL(kqs, q);
        store_obj_unref(q->obj);
        free(q);
    }
    HASH_ITER(hh, yqs, q, qt) {
        HASH_DEL(yqs, q);
        free(q);
    }
    store_list_free(&vpg);
    store_list_free(&spg);
    store_list_free(&wpg);
    store_list_free(&ql);
    free(ns.n);
    free(ns.used);
    free(ns.releasing);
    free(order);
}

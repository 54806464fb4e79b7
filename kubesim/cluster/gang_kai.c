/*
 * gang_kai.c - what kubesim's gang step (gang.c) does as KAI: the pod-grouper's
 * grouping of a Ray cluster's Pods (one PodGroup per top owner, its minMember and
 * priority, the pod-group-name annotation), the check that the queue takes Pods, and
 * what KAI's status updater says of a gang that waits (its Pods' Unschedulable Events
 * and condition, the PodGroup's Event and schedulingConditions, in the words of KAI's
 * JobFitErrors and TasksFitErrors). Cluster thread only. What is simulated:
 * docs/batch-scheduling.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kobj/json_equal.h"
#include "kubesim/cluster/internal.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

#define KAI_PG_ANNOTATION "pod-group-name"
#define KAI_SUBGROUP_LABEL "kai.scheduler/subgroup-name"

/* The number in member k of a worker group (an integer or absent = dflt). */
static int64_t kai_int(const cJSON *grp, const char *k, int64_t dflt)
{
    const cJSON *v = kobj_get(grp, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

/* The labels or annotations of o, copied (an empty object when it has none). */
static cJSON *meta_copy(const cJSON *o, const char *k)
{
    const cJSON *m = kobj_get(kobj_get(o, "metadata"), k);
    return cJSON_IsObject(m) ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
}

/* The PodGroup the pod-grouper writes for top owner top (a RayJob, RayService,
 * RayCluster or the Pod itself): named pg-NAME-UID, owned by top (not as controller),
 * with top's labels and annotations plus kai.scheduler/top-owner-metadata, the queue
 * (top's kai.scheduler/queue label, else the Pod's, else default-queue), minMember,
 * the priority class and the sub-groups (subs, taken over; NULL for none). */
static cJSON *kai_pg_build(const struct gang *g, const cJSON *top, const cJSON *pod,
                           const char *pc, cJSON *subs)
{
    cJSON *o = cJSON_CreateObject(), *md, *ann, *ref, *spec;
    const char *av = kobj_str(top, "apiVersion") ? kobj_str(top, "apiVersion") : "v1";
    const char *kind = kobj_str(top, "kind") ? kobj_str(top, "kind") : "Pod";
    const char *slash = strchr(av, '/');
    const char *q = kobj_label(top, "kai.scheduler/queue");
    char tom[600];
    if (!q)
        q = kobj_label(pod, "kai.scheduler/queue");
    cJSON_AddStringToObject(o, "apiVersion", "scheduling.run.ai/v2alpha2");
    cJSON_AddStringToObject(o, "kind", "PodGroup");
    md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", g->kai_pg);
    cJSON_AddStringToObject(md, "namespace", g->ns);
    cJSON_AddItemToObject(md, "labels", meta_copy(top, "labels"));
    ann = meta_copy(top, "annotations");
    /* yaml.v3's rendering of the top owner's name, uid, group, version and kind */
    snprintf(tom, sizeof(tom), "name: %.200s\nuid: %.64s\ngroup: %.*s\nversion: %.40s\nkind: %.60s\n",
             kobj_meta_str(top, "name") ? kobj_meta_str(top, "name") : "",
             kobj_meta_str(top, "uid") ? kobj_meta_str(top, "uid") : "",
             slash ? (int)(slash - av) : 0, av, slash ? slash + 1 : av, kind);
    cJSON_DeleteItemFromObjectCaseSensitive(ann, "kai.scheduler/top-owner-metadata");
    cJSON_AddStringToObject(ann, "kai.scheduler/top-owner-metadata", tom);
    cJSON_AddItemToObject(md, "annotations", ann);
    ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", av);
    cJSON_AddStringToObject(ref, "kind", kind);
    cJSON_AddStringToObject(ref, "name", kobj_meta_str(top, "name") ? kobj_meta_str(top, "name") : "");
    cJSON_AddStringToObject(ref, "uid", kobj_meta_str(top, "uid") ? kobj_meta_str(top, "uid") : "");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(md, "ownerReferences"), ref);
    spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddNumberToObject(spec, "minMember", (double)g->min);
    cJSON_AddStringToObject(spec, "queue", q && *q ? q : "default-queue");
    cJSON_AddStringToObject(spec, "priorityClassName", pc);
    if (cJSON_GetArraySize(subs) > 0)   /* omitempty */
        cJSON_AddItemToObject(spec, "subGroups", subs);
    else
        cJSON_Delete(subs);
    cJSON_AddObjectToObject(spec, "topologyConstraint");
    return o;
}

static void kai_sub(cJSON *subs, const char *name, int64_t min)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddNumberToObject(e, "minMember", (double)min);
    cJSON_AddItemToArray(subs, e);
}

/* KAI's pod-grouper for a Pod of a RayCluster: one PodGroup per top owner (the
 * RayJob or RayService that controls the RayCluster, else the RayCluster), named
 * pg-NAME-UID, with the queue label and a minMember of the head plus, per worker
 * group not suspended, minReplicas (replicas when minReplicas is 0) times numOfHosts,
 * one sub-group each (the head's "headgroup" of 1). Its priority class: the Pod's,
 * else the top owner's ray.io/priority-class-name or priorityClassName label, else
 * KAI's "train". A Pod no RayCluster controls is a group of one, under its own name.
 * g->name points into g->key; g->kai_obj is the PodGroup to write. */
void cluster__kai_gang_init(struct cluster *c, struct gang *g, const cJSON *pod)
{
    const cJSON *ref = cluster__controller_ref(pod, "ray.io/", "RayCluster"), *grp, *top = NULL;
    const struct reg_resource *rrc = ref ? cluster__gang_find(c, "ray.io", "v1", "rayclusters") : NULL;
    struct store_obj *rc = NULL, *topo = NULL;
    struct store_status st = { 0 };
    const char *pc = kobj_str(kobj_get(pod, "spec"), "priorityClassName");
    cJSON *subs = NULL;
    int gi = 0;

    g->name = strchr(strchr(g->key, '/') + 1, '/') + 1;
    g->min = 1;
    /* the pod-grouper's queue: the Pod's label, else default-queue (the top owner's
     * label first once the PodGroup is built) */
    snprintf(g->queue, sizeof(g->queue), "%s",
             kobj_label(pod, "kai.scheduler/queue") ? kobj_label(pod, "kai.scheduler/queue")
                                                     : "default-queue");
    if (rrc && store_get(c->store, rrc, g->ns, kobj_str(ref, "name"), &rc, &st) == 0) {
        top = cluster__controller_ref(store_obj_json(rc), "ray.io/", "RayJob");
        if (!top)
            top = cluster__controller_ref(store_obj_json(rc), "ray.io/", "RayService");
        snprintf(g->kai_pg, sizeof(g->kai_pg), "pg-%s-%s",
                 top ? kobj_str(top, "name") : rc->name, top ? kobj_str(top, "uid") : rc->uid);
        subs = cJSON_CreateArray();
        kai_sub(subs, "headgroup", 1);
        cJSON_ArrayForEach(grp, kobj_get(kobj_get(store_obj_json(rc), "spec"), "workerGroupSpecs")) {
            int64_t want = kai_int(grp, "replicas", 0), min = kai_int(grp, "minReplicas", 0);
            char gname[100];
            if (cJSON_IsTrue(kobj_get(grp, "suspended")) || (!want && !min)) {
                gi++;
                continue;
            }
            if (min > want) {
                snprintf(g->kai_err, sizeof(g->kai_err), "ray-cluster replicas for a "
                         "workerGroupsSpec can't be less than minReplicas. Given %lld replicas and "
                         "%lld minReplicas. Please fix the replicas field for group number %d",
                         (long long)want, (long long)min, gi);
                break;
            }
            int64_t n = (min > 0 ? min : want) * kai_int(grp, "numOfHosts", 1);
            g->min += n;
            if (kobj_str(grp, "groupName") && *kobj_str(grp, "groupName"))
                snprintf(gname, sizeof(gname), "%.99s", kobj_str(grp, "groupName"));
            else
                snprintf(gname, sizeof(gname), "worker-group-%d", gi);
            kai_sub(subs, gname, n);
            gi++;
        }
        if (!pc || !*pc) {
            /* the top owner's labels: a RayJob's are on the RayCluster it made too */
            pc = kobj_label(store_obj_json(rc), "ray.io/priority-class-name");
            if (!pc)
                pc = kobj_label(store_obj_json(rc), "priorityClassName");
        }
        if (top) {
            const char *kind = kobj_str(top, "kind");
            const struct reg_resource *rt = cluster__gang_find(
                c, "ray.io", "v1", kind && !strcmp(kind, "RayJob") ? "rayjobs" : "rayservices");
            store_status_clear(&st);
            if (rt && store_get(c->store, rt, g->ns, kobj_str(top, "name"), &topo, &st) != 0)
                topo = NULL;
        }
    } else {
        snprintf(g->kai_pg, sizeof(g->kai_pg), "pg-%s-%s", kobj_meta_str(pod, "name"),
                 kobj_meta_str(pod, "uid") ? kobj_meta_str(pod, "uid") : "");
    }
    pc = pc && *pc ? pc : "train";
    g->prio = cluster__gang_priority(c, pc);
    if (!g->kai_err[0]) {
        g->kai_obj = kai_pg_build(g, topo ? store_obj_json(topo) : rc ? store_obj_json(rc) : pod, pod, pc, subs);
        snprintf(g->queue, sizeof(g->queue), "%s",
                 kobj_str(kobj_get(g->kai_obj, "spec"), "queue"));
    } else {
        cJSON_Delete(subs);
    }
    store_obj_unref(topo);
    store_obj_unref(rc);
    store_status_clear(&st);
}

/* KAI's Queue (scheduling.run.ai/v2) when that type is served: the gang's queue must
 * exist and be a leaf. Returns NULL, or why not. Without the type, any name goes. */
const char *cluster__kai_queue_check(struct cluster *c, const struct gang *g, char *why,
                                     size_t cap)
{
    const struct reg_resource *rq = cluster__gang_find(c, "scheduling.run.ai", "v2", "queues");
    struct store_list l;
    const char *res = NULL;
    bool found = false;
    if (!rq || cluster__gang_list(c, rq, &l) < 0)
        return NULL;
    for (size_t i = 0; i < l.n; i++) {
        const char *parent = kobj_str(kobj_get(store_obj_json(l.items[i]), "spec"), "parentQueue");
        if (!strcmp(l.items[i]->name, g->queue))
            found = true;
        else if (parent && !strcmp(parent, g->queue) && !res)
            res = (snprintf(why, cap, "queue %.200s is not a leaf queue: Pods go to the queues "
                            "under it", g->queue), why);
    }
    if (!found)   /* KAI's cluster_info: QueueDoesNotExist, as JobFitErrorsToMessage words it */
        res = (snprintf(why, cap, "QueueDoesNotExist: Queue '%.200s' does not exist.", g->queue), why);
    store_list_free(&l);
    return res;
}

/* The pod-group-name annotation KAI's pod-grouper puts on each member, and the
 * kai.scheduler/subgroup-name label (the Pod's ray.io/group) when the PodGroup has
 * sub-groups. */
void cluster__kai_annotate(struct cluster *c, const struct gang *g)
{
    bool subs = cJSON_GetArraySize(kobj_get(kobj_get(g->kai_obj, "spec"), "subGroups")) > 0;
    for (size_t i = 0; i < g->n; i++) {
        const cJSON *pod = store_obj_json(g->m[i]->obj);
        const char *have = kobj_annotation(pod, KAI_PG_ANNOTATION);
        const char *grp = kobj_label(pod, "ray.io/group");
        const char *sub = kobj_label(pod, KAI_SUBGROUP_LABEL);
        struct store_write_opts w = { .field_manager = "pod-grouper" };
        struct store_status st = { 0 };
        char body[700];
        bool want_sub = subs && grp && (!sub || strcmp(sub, grp));
        if (have && !strcmp(have, g->kai_pg) && !want_sub)
            continue;
        snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{\"" KAI_PG_ANNOTATION
                 "\":\"%s\"}%s%.200s%s}}", g->kai_pg,
                 want_sub ? ",\"labels\":{\"" KAI_SUBGROUP_LABEL "\":\"" : "",
                 want_sub ? grp : "", want_sub ? "\"}" : "");
        if (store_patch(c->store, c->r_pods, g->m[i]->obj->ns, g->m[i]->obj->name, NULL,
                        PATCH_MERGE, body, strlen(body), &w, NULL, NULL, &st) < 0)
            log_debug("gang: pod-group-name", "pod", g->m[i]->key, "error", st.message, NULL);
        store_status_clear(&st);
    }
}

/* ---- the PodGroup object ---------------------------------------------------------- */

/* The pod-grouper's update of an existing PodGroup: labels, annotations, minMember,
 * priority class and (only if it has them already) sub-groups follow; the queue stays
 * as it is (a user may have moved it). Returns the merge patch, or NULL when nothing
 * differs. */
static cJSON *kai_pg_diff(const cJSON *have, const cJSON *want)
{
    static const char *const mk[] = { "labels", "annotations" };
    static const char *const sk[] = { "minMember", "priorityClassName", "subGroups" };
    cJSON *patch = cJSON_CreateObject(), *md = NULL, *spec = NULL;
    bool any = false;
    for (int i = 0; i < 2; i++) {
        const cJSON *h = kobj_get(kobj_get(have, "metadata"), mk[i]);
        const cJSON *w = kobj_get(kobj_get(want, "metadata"), mk[i]);
        const cJSON *e;
        cJSON_ArrayForEach(e, w) {   /* the pod-grouper adds; it does not take away */
            const cJSON *hv = kobj_get(h, e->string);
            if (hv && cJSON_Compare(hv, e, 1))
                continue;
            if (!md)
                md = cJSON_AddObjectToObject(patch, "metadata");
            cJSON *sub = kobj_get(md, mk[i]) ? (cJSON *)kobj_get(md, mk[i])
                                             : cJSON_AddObjectToObject(md, mk[i]);
            cJSON_AddItemToObject(sub, e->string, cJSON_Duplicate(e, 1));
            any = true;
        }
    }
    for (int i = 0; i < 3; i++) {
        const cJSON *h = kobj_get(kobj_get(have, "spec"), sk[i]);
        const cJSON *w = kobj_get(kobj_get(want, "spec"), sk[i]);
        if (i == 2 && cJSON_GetArraySize(h) == 0)
            continue;   /* made without sub-groups: kept without */
        if ((!h && !w) || (h && w && cJSON_Compare(h, w, 1)))
            continue;
        if (!spec)
            spec = cJSON_AddObjectToObject(patch, "spec");
        cJSON_AddItemToObject(spec, sk[i], w ? cJSON_Duplicate(w, 1) : cJSON_CreateNull());
        any = true;
    }
    if (!any) {
        cJSON_Delete(patch);
        return NULL;
    }
    return patch;
}

struct store_obj *cluster__kai_podgroup(struct cluster *c, const struct gang *g)
{
    const struct reg_resource *r = cluster__gang_find(c, "scheduling.run.ai", "v2alpha2",
                                                      "podgroups");
    struct store_write_opts w = { .field_manager = "pod-grouper" };
    struct store_status st = { 0 };
    struct store_obj *have = NULL, *out = NULL;
    cJSON *patch;
    if (!r || !g->kai_obj)
        return NULL;
    if (store_get(c->store, r, g->ns, g->kai_pg, &have, &st) != 0) {
        store_status_clear(&st);
        /* store_create consumes the object */
        if (store_create(c->store, r, g->ns, cJSON_Duplicate(g->kai_obj, 1), &w, &out, &st) < 0)
            log_debug("gang: KAI PodGroup", "podgroup", g->kai_pg, "error", st.message, NULL);
        store_status_clear(&st);
        return out;
    }
    if ((patch = kai_pg_diff(store_obj_json(have), g->kai_obj))) {
        char *text = cJSON_PrintUnformatted(patch);
        if (text && store_patch(c->store, r, g->ns, g->kai_pg, NULL, PATCH_MERGE, text,
                                strlen(text), &w, &out, NULL, &st) == 0) {
            store_obj_unref(have);
            have = out;
        } else {
            log_debug("gang: KAI PodGroup", "podgroup", g->kai_pg, "error", st.message, NULL);
        }
        free(text);
        cJSON_Delete(patch);
    }
    store_status_clear(&st);
    return have;
}

/* Writes body (a merge patch of the PodGroup's status) through the status subresource
 * when the CRD has one, else on the object; body is consumed. */
static void kai_pg_patch(struct cluster *c, const struct reg_resource *r, const struct store_obj *pg,
                         cJSON *body, const char *manager)
{
    struct store_write_opts w = { .field_manager = manager };
    struct store_status st = { 0 };
    char *text = cJSON_PrintUnformatted(body);
    if (text && store_patch(c->store, r, pg->ns, pg->name, "status", PATCH_MERGE, text,
                            strlen(text), &w, NULL, NULL, &st) < 0) {
        store_status_clear(&st);
        if (store_patch(c->store, r, pg->ns, pg->name, NULL, PATCH_MERGE, text, strlen(text), &w,
                        NULL, NULL, &st) < 0)
            log_debug("gang: KAI PodGroup status", "podgroup", pg->name, "error", st.message, NULL);
    }
    free(text);
    cJSON_Delete(body);
    store_status_clear(&st);
}

void cluster__kai_pg_status(struct cluster *c, struct store_obj *pg, const char *msg)
{
    const struct reg_resource *r = cluster__gang_find(c, "scheduling.run.ai", "v2alpha2",
                                                      "podgroups");
    const cJSON *old = kobj_get(kobj_get(store_obj_json(pg), "status"), "schedulingConditions");
    const cJSON *first = cJSON_GetArrayItem(old, 0);
    char now[40];
    cJSON *body, *list, *e;
    time_t t = time(NULL);
    struct tm tm;
    char key[300];
    snprintf(key, sizeof(key), "kai/%.140s/%.140s", pg->ns, pg->name);
    /* markPodGroupUnschedulable: the Event each time it says so (kept to changes here) */
    if (msg && cluster__gang_note(c, key, msg))
        cluster__event(c, store_obj_json(pg), "Normal", "Unschedulable", msg, "kai-scheduler", NULL, NULL);
    if (!msg)
        cluster__gang_note(c, key, "");
    if (!r || (!msg && !first) ||
        (msg && first && kobj_str(first, "message") && !strcmp(kobj_str(first, "message"), msg)))
        return;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    body = cJSON_CreateObject();
    list = cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "status"), "schedulingConditions");
    if (msg) {
        e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "type", "UnschedulableOnNodePool");
        cJSON_AddStringToObject(e, "nodePool", "default");
        cJSON_AddStringToObject(e, "reason", "Unschedulable");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddStringToObject(e, "lastTransitionTime", now);
        cJSON_AddStringToObject(e, "status", "True");
        cJSON_AddItemToArray(list, e);
    }
    kai_pg_patch(c, r, pg, body, "kai-scheduler");
}

/* ---- queues: limits and fair share ------------------------------------------------ */

/* KAI's units: CPU in millicores, memory in MB (10^6 bytes), GPUs in units; -1 is
 * unlimited. An absent entry is taken as unlimited too (see docs/batch-scheduling.md). */
static void kai_res(const cJSON *res, const char *k, struct cluster_res *out, bool *has)
{
    static const char *const dims[] = { "cpu", "memory", "gpu" };
    for (int d = 0; d < 3; d++) {
        const cJSON *v = kobj_get(kobj_get(res, dims[d]), k);
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
        int64_t val = x < 0 ? -1 : d == 1 ? (int64_t)(x * 1e6) : d == 2 ? (int64_t)x : (int64_t)x;
        if (d == 0) out->cpu_m = val;
        else if (d == 1) out->mem = val;
        else out->gpu = val;
        if (has)
            has[d] = val >= 0;
    }
}

static int64_t *dim(struct cluster_res *r, int d)
{
    return d == 0 ? &r->cpu_m : d == 1 ? &r->mem : &r->gpu;
}

/* KAI's usage: bound Pods count as allocated, all live Pods as requested. */
static void kai_charge(struct gqueue *q, const struct cl_pod *p)
{
    if (cluster__gang_bound(p))
        cluster__gang_res_add(&q->allocated, &p->req, 1);
    cluster__gang_res_add(&q->request, &p->req, 1);
}

struct gqueue *cluster__kai_queues(struct cluster *c, struct gang **all, size_t n,
                                   const struct cluster_res *total)
{
    const struct reg_resource *rq = cluster__gang_find(c, "scheduling.run.ai", "v2", "queues");
    struct gqueue *qs = NULL, *q, *qt, *p, *pt;
    struct store_list l;
    if (!rq || cluster__gang_list(c, rq, &l) < 0)
        return NULL;
    for (size_t i = 0; i < l.n; i++) {
        const cJSON *spec = kobj_get(store_obj_json(l.items[i]), "spec");
        const cJSON *res = kobj_get(spec, "resources"), *pr = kobj_get(spec, "priority");
        const cJSON *wt = kobj_get(kobj_get(res, "cpu"), "overQuotaWeight");
        if (!(q = calloc(1, sizeof(*q))))
            continue;
        snprintf(q->name, sizeof(q->name), "%s", l.items[i]->name);
        q->obj = store_obj_ref(l.items[i]);
        q->owned = true;
        snprintf(q->parent, sizeof(q->parent), "%s",
                 kobj_str(spec, "parentQueue") ? kobj_str(spec, "parentQueue") : "");
        q->priority = cJSON_IsNumber(pr) ? (int64_t)pr->valuedouble : 100;
        q->weight = cJSON_IsNumber(wt) && wt->valuedouble > 0 ? wt->valuedouble : 1;
        q->open = true;
        kai_res(res, "quota", &q->quota, NULL);
        kai_res(res, "limit", &q->cap, q->has_cap);
        q->has_deserved = true;
        HASH_ADD_STR(qs, name, q);
    }
    store_list_free(&l);
    HASH_ITER(hh, qs, q, qt) {
        q->leaf = true;
        HASH_ITER(hh, qs, p, pt)
            q->leaf = q->leaf && strcmp(p->parent, q->name) != 0;
    }
    cluster__gang_queue_usage(all, n, G_KAI, qs, kai_charge);
    /* fair share, per resource over the queues that ask: first each its quota (all it
     * asks when the quota is unlimited), then what is left by priority, higher first,
     * and within one priority in proportion to the over-quota weights, never beyond a
     * queue's request or limit (KAI does this level by level down the hierarchy;
     * kubesim over the leaves at once) */
    for (int d = 0; d < 3; d++) {
        double left = (double)*dim((struct cluster_res *)total, d);
        HASH_ITER(hh, qs, q, qt) {
            double req = (double)*dim(&q->request, d), quota = (double)*dim(&q->quota, d);
            double fs = quota < 0 || quota > req ? req : quota;
            if (!q->leaf)
                continue;
            *dim(&q->deserved, d) = (int64_t)fs;
            left -= fs;
        }
        for (int round = 0; round < 16 && left >= 1; round++) {
            int64_t best = INT64_MIN;
            double wsum = 0, given = 0;
            HASH_ITER(hh, qs, q, qt) {   /* the highest priority that still wants more */
                double room = (double)*dim(&q->request, d) - (double)*dim(&q->deserved, d);
                if (q->has_cap[d])
                    room = fmin(room, (double)*dim(&q->cap, d) - (double)*dim(&q->deserved, d));
                if (q->leaf && room >= 1 && q->priority > best)
                    best = q->priority;
            }
            if (best == INT64_MIN)
                break;
            HASH_ITER(hh, qs, q, qt)
                if (q->leaf && q->priority == best)
                    wsum += q->weight;
            HASH_ITER(hh, qs, q, qt) {
                if (!q->leaf || q->priority != best)
                    continue;
                double room = (double)*dim(&q->request, d) - (double)*dim(&q->deserved, d);
                if (q->has_cap[d])
                    room = fmin(room, (double)*dim(&q->cap, d) - (double)*dim(&q->deserved, d));
                double add = fmin(left * q->weight / wsum, room > 0 ? room : 0);
                *dim(&q->deserved, d) += (int64_t)add;
                given += (double)(int64_t)add;
            }
            left -= given;
            if (given < 1)
                break;
        }
    }
    HASH_ITER(hh, qs, q, qt)
        q->share_used = q->allocated;
    return qs;
}

/* HumanizeResource: up to 3 decimals, trailing zeros dropped. */
static void humanize(double v, char *out, size_t cap)
{
    size_t n;
    snprintf(out, cap, "%.3f", v);
    n = strlen(out);
    while (n > 0 && out[n - 1] == '0')
        out[--n] = '\0';
    if (n > 0 && out[n - 1] == '.')
        out[--n] = '\0';
}

const char *cluster__kai_limit_check(const struct gang *g, struct gqueue *kqs, char *why,
                                     size_t cap)
{
    static const char *const what[] = { "CPU cores", "memory", "GPUs" };
    static const char *const unit[] = { "cores", "GB", "GPUs" };
    static const double scale[] = { 1000, 1e9, 1 };
    struct cluster_res need = { 0 };
    struct gqueue *q = g->q;
    for (size_t m = 0; m < g->n; m++)
        if (!cluster__gang_bound(g->m[m]) && !cluster__gang_pod_terminal(store_obj_json(g->m[m]->obj)) &&
            !kobj_get(kobj_get(store_obj_json(g->m[m]->obj), "metadata"), "deletionTimestamp"))
            cluster__gang_res_add(&need, &g->m[m]->req, 1);
    for (int depth = 0; q && depth < 16; depth++) {
        for (int d = 0; d < 3; d++) {
            int64_t nd = *dim(&need, d), al = *dim(&q->allocated, d), lim = *dim(&q->cap, d);
            char a[32], b[32], r[32];
            if (!q->has_cap[d] || nd <= 0 || al + nd <= lim)
                continue;
            humanize((double)lim / scale[d], a, sizeof(a));
            humanize((double)al / scale[d], b, sizeof(b));
            humanize((double)nd / scale[d], r, sizeof(r));
            snprintf(why, cap, "OverLimit: %.200s quota has reached the allowable limit of %s. Limit is %s "
                     "%s, currently %s %s allocated and workload requested %s %s.", q->name,
                     what[d], a, unit[d], b, unit[d], r, unit[d]);
            return why;
        }
        struct gqueue *up = NULL;
        if (q->parent[0])
            HASH_FIND_STR(kqs, q->parent, up);
        q = up != q ? up : NULL;
    }
    return NULL;
}

/* A quantity as the API prints it: cpu in cores or millicores, memory with a binary
 * suffix when it divides, GPUs in units. */
static void quantity(int d, int64_t v, char *out, size_t cap)
{
    static const char *const sfx[] = { "Gi", "Mi", "Ki" };
    static const int64_t div[] = { 1ll << 30, 1ll << 20, 1ll << 10 };
    if (d == 0) {
        if (v % 1000)
            snprintf(out, cap, "%lldm", (long long)v);
        else
            snprintf(out, cap, "%lld", (long long)(v / 1000));
        return;
    }
    for (int k = 0; d == 1 && v && k < 3; k++)
        if (v % div[k] == 0) {
            snprintf(out, cap, "%lld%s", (long long)(v / div[k]), sfx[k]);
            return;
        }
    snprintf(out, cap, "%lld", (long long)v);
}

static cJSON *res_list(const struct cluster_res *r)
{
    static const char *const names[] = { "cpu", "memory", "nvidia.com/gpu" };
    const int64_t v[3] = { r->cpu_m, r->mem, r->gpu };
    cJSON *o = cJSON_CreateObject();
    char q[48];
    for (int d = 0; d < 3; d++) {
        if (!v[d])
            continue;
        quantity(d, v[d], q, sizeof(q));
        cJSON_AddStringToObject(o, names[d], q);
    }
    return o;
}

void cluster__kai_pg_resources(struct cluster *c, struct store_obj *pg, const struct gang *g)
{
    const struct reg_resource *r = cluster__gang_find(c, "scheduling.run.ai", "v2alpha2",
                                                      "podgroups");
    const cJSON *old = kobj_get(kobj_get(store_obj_json(pg), "status"), "resourcesStatus");
    struct cluster_res req = { 0 }, alloc = { 0 };
    cJSON *body, *rs, *want;
    if (!r)
        return;
    for (size_t m = 0; m < g->n; m++) {
        const struct cl_pod *p = g->m[m];
        if (cluster__gang_pod_terminal(store_obj_json(p->obj)))
            continue;   /* a finished Pod neither asks nor holds */
        cluster__gang_res_add(&req, &p->req, 1);
        if (p->acct_node || cluster__gang_bound(p))
            cluster__gang_res_add(&alloc, &p->req, 1);
    }
    want = cJSON_CreateObject();
    /* omitempty: an empty list is left out */
    cJSON *a = res_list(&alloc), *q = res_list(&req);
    if (cJSON_GetArraySize(a))
        cJSON_AddItemToObject(want, "allocated", a);
    else
        cJSON_Delete(a);
    /* below priority 100 (or marked so) a PodGroup is preemptible; else what it holds is
     * not */
    const char *pre = kobj_str(kobj_get(store_obj_json(pg), "spec"), "preemptibility");
    bool preemptible = pre && *pre ? !strcmp(pre, "preemptible") : g->prio < 100;
    if (!preemptible && cJSON_GetArraySize(kobj_get(want, "allocated")))
        cJSON_AddItemToObject(want, "allocatedNonPreemptible",
                              cJSON_Duplicate(kobj_get(want, "allocated"), 1));
    if (cJSON_GetArraySize(q))
        cJSON_AddItemToObject(want, "requested", q);
    else
        cJSON_Delete(q);
    if (json_equal(old ? old : want, want) && (old || !cJSON_GetArraySize(want))) {
        cJSON_Delete(want);
        return;
    }
    body = cJSON_CreateObject();
    rs = cJSON_AddObjectToObject(body, "status");
    /* a merge patch: null clears a list that went empty */
    static const char *const keys[] = { "allocated", "allocatedNonPreemptible", "requested" };
    for (int k = 0; k < 3; k++)
        if (!kobj_get(want, keys[k]) && kobj_get(old, keys[k]))
            cJSON_AddNullToObject(want, keys[k]);
    cJSON_AddItemToObject(rs, "resourcesStatus", want);
    kai_pg_patch(c, r, pg, body, "podgroup-controller");
}

/* What KAI's queue controller keeps in a Queue's status: allocated, requested and the
 * child queues (written when they change). */
void cluster__kai_queue_status(struct cluster *c, struct gqueue *kqs)
{
    const struct reg_resource *rq = cluster__gang_find(c, "scheduling.run.ai", "v2", "queues");
    struct gqueue *q, *qt, *ch, *cht;
    HASH_ITER(hh, kqs, q, qt) {
        struct store_write_opts w = { .field_manager = "queue-controller" };
        struct store_status st = { 0 };
        const cJSON *old = kobj_get(q->obj ? store_obj_json(q->obj) : NULL, "status");
        cJSON *body = cJSON_CreateObject(), *sts = cJSON_AddObjectToObject(body, "status");
        cJSON *kids = cJSON_CreateArray();
        bool same = true;
        char *text;
        HASH_ITER(hh, kqs, ch, cht)
            if (!strcmp(ch->parent, q->name))
                cJSON_AddItemToArray(kids, cJSON_CreateString(ch->name));
        cJSON_AddItemToObject(sts, "allocated", res_list(&q->allocated));
        cJSON_AddItemToObject(sts, "requested", res_list(&q->request));
        if (cJSON_GetArraySize(kids))
            cJSON_AddItemToObject(sts, "childQueues", kids);
        else
            cJSON_Delete(kids);
        static const char *const keys[] = { "allocated", "requested", "childQueues" };
        for (int k = 0; k < 3; k++) {
            const cJSON *a = kobj_get(old, keys[k]), *b = kobj_get(sts, keys[k]);
            bool empty_a = !a || !cJSON_GetArraySize(a), empty_b = !b || !cJSON_GetArraySize(b);
            if (!(empty_a && empty_b) && !(a && b && cJSON_Compare(a, b, 1))) {
                same = false;
                /* a merge patch drops what is gone only when told so */
                if (!b)
                    cJSON_AddNullToObject(sts, keys[k]);
            }
        }
        if (!same && rq && (text = cJSON_PrintUnformatted(body))) {
            if (store_patch(c->store, rq, "", q->name, "status", PATCH_MERGE, text, strlen(text),
                            &w, NULL, NULL, &st) < 0) {
                store_status_clear(&st);
                if (store_patch(c->store, rq, "", q->name, NULL, PATCH_MERGE, text, strlen(text),
                                &w, NULL, NULL, &st) < 0)
                    log_debug("gang: KAI queue status", "queue", q->name, "error", st.message, NULL);
            }
            free(text);
        }
        store_status_clear(&st);
        cJSON_Delete(body);
    }
}

/* ---- what KAI says of a waiting gang ------------------------------------------------ */

/* The Pod's sub-group: the label the pod-grouper set, else its Ray group. */
static const char *kai_subgroup(const cJSON *pod)
{
    const char *s = kobj_label(pod, KAI_SUBGROUP_LABEL);
    return s ? s : kobj_label(pod, "ray.io/group");
}

/* TasksFitErrors.Error(): "no nodes with enough resources were found: 2 node(s) didn't
 * have enough resources: CPU cores." - per node the predicates' reasons when one
 * fails, else each resource short, counted over the nodes. */
static void kai_task_error(const struct gang_try *t, size_t nodes, char *out, size_t cap)
{
    char why[8][200];
    size_t count[8] = { 0 }, nr = 0, off;
    char items[8][240];
    snprintf(why[0], sizeof(why[0]), "node(s) were unschedulable");
    snprintf(why[1], sizeof(why[1]), "node(s) had untolerated taint %s", t->taint[0] ? t->taint : "{}");
    snprintf(why[2], sizeof(why[2]), "node(s) didn't match Pod's node affinity/selector");
    snprintf(why[3], sizeof(why[3]), "Too many pods");
    snprintf(why[4], sizeof(why[4]), "node(s) didn't have enough resources: CPU cores");
    snprintf(why[5], sizeof(why[5]), "node(s) didn't have enough resources: memory");
    snprintf(why[6], sizeof(why[6]), "node(s) didn't have enough resources: GPUs");
    snprintf(why[7], sizeof(why[7]), "node(s) didn't have enough resources: google.com/tpu");
    for (size_t i = 0; t->fits && i < nodes; i++) {
        unsigned bits = t->fits[i];
        if (bits & ~CLUSTER_FIT_RESOURCES)
            bits &= ~CLUSTER_FIT_RESOURCES;   /* a predicate failed: its reasons only */
        for (int b = 0; b < 8; b++)
            count[b] += (bits >> b) & 1u;
    }
    for (int b = 0; b < 8; b++)
        if (count[b])
            snprintf(items[nr++], sizeof(items[0]), "%zu %.200s", count[b], why[b]);
    qsort(items, nr, sizeof(items[0]), (int (*)(const void *, const void *))strcmp);
    off = (size_t)snprintf(out, cap, "no nodes with enough resources were found");
    for (size_t k = 0; k < nr && off < cap; k++)
        off += (size_t)snprintf(out + off, cap - off, "%s%s", k ? ". \n" : ": ", items[k]);
    if (nr && off < cap)
        snprintf(out + off, cap - off, ".");
}

/* The sub-groups of the gang's PodGroup as the pod-grouper wrote them: name and
 * minMember; none for a gang without (one default sub-group of g->min). */
static size_t kai_subgroups(const struct gang *g, const char **name, int64_t *min, size_t cap)
{
    const cJSON *e;
    size_t n = 0;
    cJSON_ArrayForEach(e, kobj_get(kobj_get(g->kai_obj, "spec"), "subGroups")) {
        if (n == cap)
            break;
        name[n] = kobj_str(e, "name");
        min[n++] = kai_int(e, "minMember", 0);
    }
    return n;
}

const char *cluster__kai_texts(struct cluster *c, const struct gang *g, const struct outcome *o,
                               struct store_obj *kpg, const char *job_err, char *msg,
                               size_t cap)
{
    const char *name[32];
    int64_t min[32];
    size_t ns = kai_subgroups(g, name, min, 32), off;
    char task[400], pod[CL_UNSCHED_MSG_MAX];
    const struct gang_try *unfit = NULL;
    const struct cl_pod *unfit_pod = NULL;
    bool ready = true;

    /* recordJobNotReadyEvent: fewer Pods than a sub-group needs; the Pods hear nothing */
    off = (size_t)snprintf(msg, cap, "Job is not ready for scheduling.");
    for (size_t k = 0; k < (ns ? ns : 1); k++) {
        int64_t alive = 0, gated = 0, want = ns ? min[k] : g->min;
        for (size_t m = 0; m < g->n; m++) {
            const cJSON *pod_json = store_obj_json(g->m[m]->obj);
            const char *sg = kai_subgroup(pod_json);
            if (ns && (!sg || !name[k] || strcmp(sg, name[k])))
                continue;
            if (cluster__gang_pod_terminal(pod_json) ||
                kobj_get(kobj_get(pod_json, "metadata"), "deletionTimestamp"))
                continue;
            alive++;
            gated += cJSON_GetArraySize(kobj_get(kobj_get(pod_json, "spec"), "schedulingGates")) > 0;
        }
        if (alive - gated >= want || off >= cap)
            continue;
        ready = false;
        if (ns)
            off += (size_t)snprintf(msg + off, cap - off, " Waiting for %lld pods for SubGroup %s, "
                                    "currently %lld exist, %lld are gated.", (long long)want,
                                    name[k] ? name[k] : "", (long long)alive, (long long)gated);
        else
            off += (size_t)snprintf(msg + off, cap - off, " Waiting for %lld pods, currently %lld "
                                    "exist, %lld are gated", (long long)want, (long long)alive,
                                    (long long)gated);
    }
    if (!ready) {
        char key[300];
        snprintf(key, sizeof(key), "kai-notready/%.140s/%.140s", g->ns, g->kai_pg);
        if (kpg && cluster__gang_note(c, key, msg))
            cluster__event(c, store_obj_json(kpg), "Normal", "NotReady", msg, "kai-scheduler", NULL, NULL);
        return NULL;
    }

    if (job_err) {
        snprintf(msg, cap, "%s", job_err);
    } else {
        for (size_t m = 0; o->tries && m < g->n && !unfit; m++)
            if (o->tries[m].unfit) {
                unfit = &o->tries[m];
                unfit_pod = g->m[m];
            }
        if (!unfit) {
            /* all of it placeable yet not bound: nothing KAI would leave waiting */
            snprintf(msg, cap, "Unable to schedule podgroup");
            return msg;
        }
        kai_task_error(unfit, o->nodes, task, sizeof(task));
        /* handleFailedTaskAllocation: the gang's words, or the one Pod's when its
         * sub-group (the tasks allocated so far counted) has what it needs */
        const char *sg = kai_subgroup(store_obj_json(unfit_pod->obj));
        int64_t sg_min = g->min, sg_used = 0;
        bool gang = !ns && g->min > 1;
        for (size_t k = 0; k < ns; k++) {
            gang = gang || min[k] > 1;
            if (sg && name[k] && !strcmp(sg, name[k]))
                sg_min = min[k];
        }
        for (size_t m = 0; m < g->n; m++) {
            const char *s2 = kai_subgroup(store_obj_json(g->m[m]->obj));
            bool same = !ns || (sg && s2 && !strcmp(sg, s2));
            if (same && (cluster__gang_bound(g->m[m]) ||
                         (o->tries[m].tried && !o->tries[m].unfit && o->tries[m].before < unfit->before)))
                sg_used++;
        }
        if (!gang || sg_used >= sg_min)
            snprintf(msg, cap, "PodSchedulingErrors: Resources were not found for pod %s/%s due to: "
                     "%s.", unfit_pod->obj->ns, unfit_pod->obj->name, task);
        else if (!ns)
            snprintf(msg, cap, "PodSchedulingErrors: Resources were found for %lld pods while %lld "
                     "are required for gang scheduling. Additional pods cannot be scheduled due "
                     "to: %s.", (long long)unfit->before, (long long)sg_min, task);
        else
            snprintf(msg, cap, "PodSchedulingErrors: Resources were found for %lld pods from all "
                     "sub-groups while sub-group %s requires %lld pods for gang scheduling. "
                     "Additional pods cannot be scheduled in this sub-group due to: %s.",
                     (long long)unfit->before, sg ? sg : "", (long long)sg_min, task);
    }
    for (size_t m = 0; m < g->n; m++) {
        struct cl_pod *p = g->m[m];
        if (!cluster__gang_waiting(p))
            continue;
        /* the Pod that failed has its own TasksFitErrors; the others the job's */
        snprintf(pod, sizeof(pod), "%s", p == unfit_pod ? task : msg);
        cluster__gang_tell(c, p, pod, "Warning", "Unschedulable", pod, "kai-scheduler");
    }
    return msg;
}

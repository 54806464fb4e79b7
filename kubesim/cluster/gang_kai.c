/*
 * gang_kai.c - what kubesim's gang step (gang.c) does as KAI: the pod-grouper's
 * grouping of a Ray cluster's Pods (one PodGroup per top owner, its minMember and
 * priority, the pod-group-name annotation) and the check that the queue takes Pods.
 * Cluster thread only. What is simulated: docs/batch-scheduling.md.
 */
#include <stdio.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

#define KAI_PG_ANNOTATION "pod-group-name"

/* The number in member k of a worker group (an integer or absent = dflt). */
static int64_t kai_int(const cJSON *grp, const char *k, int64_t dflt)
{
    const cJSON *v = kobj_get(grp, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

/* KAI's pod-grouper for a Pod of a RayCluster: one PodGroup per top owner (the
 * RayJob or RayService that controls the RayCluster, else the RayCluster), named
 * pg-NAME-UID, with the queue label and a minMember of the head plus, per worker
 * group not suspended, minReplicas (replicas when minReplicas is 0) times numOfHosts.
 * Its priority class: the Pod's, else the top owner's ray.io/priority-class-name or
 * priorityClassName label, else KAI's "train". A Pod no RayCluster controls is a
 * group of one, under its own name. g->name points into g->key. */
void cluster__kai_gang_init(struct cluster *c, struct gang *g, const cJSON *pod)
{
    const cJSON *ref = cluster__controller_ref(pod, "ray.io/", "RayCluster"), *grp, *top = NULL;
    const struct reg_resource *rrc = ref ? cluster__gang_find(c, "ray.io", "v1", "rayclusters") : NULL;
    struct store_obj *rc = NULL;
    struct store_status st = { 0 };
    const char *pc = kobj_str(kobj_get(pod, "spec"), "priorityClassName");
    int gi = 0;

    g->name = strchr(strchr(g->key, '/') + 1, '/') + 1;
    g->min = 1;
    snprintf(g->queue, sizeof(g->queue), "%s", kobj_label(pod, "kai.scheduler/queue"));
    if (rrc && store_get(c->store, rrc, g->ns, kobj_str(ref, "name"), &rc, &st) == 0) {
        top = cluster__controller_ref(rc->json, "ray.io/", "RayJob");
        if (!top)
            top = cluster__controller_ref(rc->json, "ray.io/", "RayService");
        snprintf(g->kai_pg, sizeof(g->kai_pg), "pg-%s-%s",
                 top ? kobj_str(top, "name") : rc->name, top ? kobj_str(top, "uid") : rc->uid);
        cJSON_ArrayForEach(grp, kobj_get(kobj_get(rc->json, "spec"), "workerGroupSpecs")) {
            int64_t want = kai_int(grp, "replicas", 0), min = kai_int(grp, "minReplicas", 0);
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
            g->min += (min > 0 ? min : want) * kai_int(grp, "numOfHosts", 1);
            gi++;
        }
        if (!pc || !*pc) {
            /* the top owner's labels: a RayJob's are on the RayCluster it made too */
            pc = kobj_label(rc->json, "ray.io/priority-class-name");
            if (!pc)
                pc = kobj_label(rc->json, "priorityClassName");
        }
    } else {
        snprintf(g->kai_pg, sizeof(g->kai_pg), "pg-%s-%s", kobj_meta_str(pod, "name"),
                 kobj_meta_str(pod, "uid") ? kobj_meta_str(pod, "uid") : "");
    }
    g->prio = cluster__gang_priority(c, pc && *pc ? pc : "train");
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
        const char *parent = kobj_str(kobj_get(l.items[i]->json, "spec"), "parentQueue");
        if (!strcmp(l.items[i]->name, g->queue))
            found = true;
        else if (parent && !strcmp(parent, g->queue) && !res)
            res = (snprintf(why, cap, "queue %.200s is not a leaf queue: Pods go to the queues "
                            "under it", g->queue), why);
    }
    if (!found)
        res = (snprintf(why, cap, "queue %.200s does not exist", g->queue), why);
    store_list_free(&l);
    return res;
}

/* The pod-group-name annotation KAI's pod-grouper puts on each member. */
void cluster__kai_annotate(struct cluster *c, const struct gang *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const char *have = kobj_annotation(g->m[i]->obj->json, KAI_PG_ANNOTATION);
        struct store_write_opts w = { .field_manager = "pod-grouper" };
        struct store_status st = { 0 };
        char body[500];
        if (have && !strcmp(have, g->kai_pg))
            continue;
        snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{\"" KAI_PG_ANNOTATION
                 "\":\"%s\"}}}", g->kai_pg);
        if (store_patch(c->store, c->r_pods, g->m[i]->obj->ns, g->m[i]->obj->name, NULL,
                        PATCH_MERGE, body, strlen(body), &w, NULL, NULL, &st) < 0)
            log_debug("gang: pod-group-name", "pod", g->m[i]->key, "error", st.message, NULL);
        store_status_clear(&st);
    }
}

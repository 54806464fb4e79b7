/*
 * gang_yunikorn.c - YuniKorn in kubesim's gang step (gang.c): an application's task
 * groups (the members that exist and the placeholders of those to come), and the queue
 * tree of the ConfigMap yunikorn/yunikorn-configs, key queues.yaml (its first
 * partition), read each session. A queue's resources.max caps what the applications in it and in the
 * queues under it hold (placeholders of members not created yet included);
 * resources.guaranteed orders the queues (the least used against its guarantee first).
 * An application's queue is its Pods' queue label (yunikorn.apache.org/queue
 * annotation, else root.default); a queue the config does not name has no limit (YuniKorn
 * would create it under its parent). Cluster thread only. What is simulated:
 * docs/batch-scheduling.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct gqueue *cluster__yunikorn_queues(struct cluster *c, struct gang **all, size_t n)
{
    const struct reg_resource *r = cluster__gang_find(c, "", "v1", "configmaps");
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    struct gqueue *qs = NULL, *q;
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
    for (size_t k = 0; k < n; k++) {
        struct gang *g = all[k];
        if (g->kind != G_YUNIKORN)
            continue;
        HASH_FIND_STR(qs, g->queue, q);
        g->q = q;
        for (size_t m = 0; q && m < g->n; m++) {
            const struct cl_pod *p = g->m[m];
            if (!cluster__gang_bound(p) || cluster__gang_pod_terminal(store_obj_json(p->obj)) ||
                kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "deletionTimestamp"))
                continue;
            struct gqueue *up = q;
            for (int d = 0; up && d < YK_DEPTH; d++) {
                struct gqueue *next = NULL;
                cluster__gang_res_add(&up->allocated, &p->req, 1);
                cluster__gang_res_add(&up->share_used, &p->req, 1);
                if (up->parent[0])
                    HASH_FIND_STR(qs, up->parent, next);
                up = next;
            }
        }
    }
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

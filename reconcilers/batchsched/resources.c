/*
 * resources.c - ResourceList sums as KubeRay computes them for PodGroups and
 * task groups (utils.CalculatePodResource, SumResourceList, calculatePodResources,
 * CalculateDesiredReplicas / CalculateMinReplicas), with resource.Quantity's
 * arithmetic: exact thousandths, the format of the first non-zero operand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "kobj/quantity.h"
#include "reconcilers/batchsched/internal.h"
#include "reconcilers/raycluster/build.h"

static struct bs_res *slot(struct bs_reslist *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->r[i].name, name) == 0)
            return &l->r[i];
    if (l->n >= BS_MAX_RES || strlen(name) >= sizeof(l->r[0].name))
        return NULL;
    struct bs_res *r = &l->r[l->n++];
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->milli = 0;
    r->binary = -1;
    return r;
}

static int value_milli(const cJSON *v, int64_t *milli)
{
    if (cJSON_IsString(v))
        return kobj_quantity_parse(v->valuestring, milli);
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e12) {
        *milli = (int64_t)(v->valuedouble * 1000.0);
        return 0;
    }
    return -EINVAL;
}

static void add_one(struct bs_reslist *l, const cJSON *e, int64_t n)
{
    int64_t m;
    struct bs_res *r;
    if (!e->string || value_milli(e, &m) < 0 || !(r = slot(l, e->string)))
        return;
    const char *s = cJSON_IsString(e) ? e->valuestring : "";
    size_t len = strlen(s);
    int bin = len >= 2 && s[len - 1] == 'i';
    if (m != 0 && n != 0 && (r->binary < 0 || r->milli == 0))
        r->binary = bin;
    else if (r->binary < 0)
        r->binary = bin;
    r->milli += (__int128)m * n;
}

static void batchsched__res_add_container(struct bs_reslist *l, const cJSON *c, int64_t n)
{
    const cJSON *res = kobj_get(c, "resources");
    const cJSON *req = kobj_get(res, "requests"), *lim = kobj_get(res, "limits"), *e;
    if (!cJSON_IsObject(req))
        req = NULL;
    cJSON_ArrayForEach(e, req)
        add_one(l, e, n);
    cJSON_ArrayForEach(e, (cJSON_IsObject(lim) ? lim : NULL)) {
        if (e->string && req && cJSON_GetObjectItemCaseSensitive(req, e->string))
            continue; /* the request wins over its limit */
        add_one(l, e, n);
    }
}

void batchsched__res_add_podspec(struct bs_reslist *l, const cJSON *podspec, int64_t n)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, kobj_get(podspec, "containers"))
        batchsched__res_add_container(l, c, n);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct bs_res *)a)->name, ((const struct bs_res *)b)->name);
}

cJSON *batchsched__res_json(const struct bs_reslist *l)
{
    struct bs_res sorted[BS_MAX_RES];
    char q[64];
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    memcpy(sorted, l->r, l->n * sizeof(sorted[0]));
    qsort(sorted, l->n, sizeof(sorted[0]), by_name);
    for (size_t i = 0; i < l->n; i++) {
        rc_quantity_string(sorted[i].milli, sorted[i].binary == 1, q, sizeof(q));
        if (!cJSON_AddStringToObject(o, sorted[i].name, q)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

static void batchsched__res_from_json(struct bs_reslist *l, const cJSON *obj)
{
    const cJSON *e;
    memset(l, 0, sizeof(*l));
    cJSON_ArrayForEach(e, (cJSON_IsObject(obj) ? obj : NULL))
        add_one(l, e, 1);
}

bool batchsched__res_equal(const cJSON *obj, const struct bs_reslist *l)
{
    struct bs_reslist have;
    if (!cJSON_IsObject(obj))
        return false;
    batchsched__res_from_json(&have, obj);
    if (have.n != l->n || (size_t)cJSON_GetArraySize(obj) != l->n)
        return false;
    for (size_t i = 0; i < l->n; i++) {
        bool found = false;
        for (size_t j = 0; j < have.n && !found; j++)
            found = strcmp(have.r[j].name, l->r[i].name) == 0 && have.r[j].milli == l->r[i].milli;
        if (!found)
            return false;
    }
    return true;
}

static bool group_suspended(const cJSON *g)
{
    return cJSON_IsTrue(kobj_get(g, "suspend"));
}

static int64_t int_or(const cJSON *o, const char *key, int64_t dflt)
{
    const cJSON *v = kobj_get(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

int32_t batchsched__desired_workers(const cJSON *spec)
{
    int64_t n = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, kobj_get(spec, "workerGroupSpecs"))
        n += rc_worker_desired_replicas(g);
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

int32_t batchsched__cluster_params(const cJSON *spec, struct bs_reslist *l)
{
    bool autoscaling = cJSON_IsTrue(kobj_get(spec, "enableInTreeAutoscaling"));
    const cJSON *g;
    int64_t members = 0;
    batchsched__res_add_podspec(l, kobj_get(kobj_get(kobj_get(spec, "headGroupSpec"), "template"), "spec"),
                       1);
    cJSON_ArrayForEach(g, kobj_get(spec, "workerGroupSpecs")) {
        if (group_suspended(g))
            continue;
        int64_t hosts = int_or(g, "numOfHosts", 1);
        /* desired: spec replicas as written (CalculateDesiredResources does not clamp) */
        int64_t n = autoscaling ? int_or(g, "minReplicas", 0) : int_or(g, "replicas", 0);
        batchsched__res_add_podspec(l, kobj_get(kobj_get(g, "template"), "spec"), n * hosts);
        if (autoscaling)
            members += int_or(g, "minReplicas", 0) * hosts;
    }
    if (!autoscaling)
        members = batchsched__desired_workers(spec);
    members += 1;
    return members > INT32_MAX ? INT32_MAX : (int32_t)members;
}

/*
 * sched.c - the scheduler's arithmetic: Pod requests, Node allocatable, the filter plugins kubesim models (NodeUnschedulable,
 * TaintToleration, NodeSelector, NodeResourcesFit), LeastAllocated scoring and the
 * FailedScheduling message text. Pure functions on cJSON; the loop that uses them
 * is in run.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/quantity.h"
#include "kubesim/cluster/cluster.h"

static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Amounts are clamped to [0, 1e15] thousandths (10^12 units: more than any node has) so that sums over many containers and pods cannot overflow. */
#define QTY_CLAMP 1000000000000000LL

static int64_t qty(const cJSON *list, const char *name)
{
    int64_t m = 0;
    const char *s = cJSON_GetStringValue(jget(list, name));

    if (s) {
        if (kobj_quantity_parse(s, &m) < 0)
            return 0;
    } else if (cJSON_IsNumber(jget(list, name))) {
        double d = cJSON_GetNumberValue(jget(list, name)) * 1000.0;
        m = d > (double)QTY_CLAMP ? QTY_CLAMP : d < 0 ? 0 : (int64_t)d;
    }
    return m < 0 ? 0 : m > QTY_CLAMP ? QTY_CLAMP : m;
}

static int64_t qty_or(const cJSON *req, const cJSON *lim, const char *name)
{
    return jget(req, name) ? qty(req, name) : qty(lim, name);
}

static void container_res(const cJSON *c, struct cluster_res *r)
{
    const cJSON *res = jget(c, "resources");
    const cJSON *req = jget(res, "requests"), *lim = jget(res, "limits");

    r->cpu_m = qty_or(req, lim, "cpu");
    r->mem = (qty_or(req, lim, "memory") + 999) / 1000;
    r->gpu = (qty_or(req, lim, "nvidia.com/gpu") + 999) / 1000;
    r->tpu = (qty_or(req, lim, "google.com/tpu") + 999) / 1000;
}

#define MAX64(a, b) ((a) > (b) ? (a) : (b))

void cluster_pod_requests(const cJSON *pod, struct cluster_res *out)
{
    const cJSON *spec = jget(pod, "spec"), *c;
    struct cluster_res r;

    memset(out, 0, sizeof(*out));
    cJSON_ArrayForEach(c, jget(spec, "containers")) {
        container_res(c, &r);
        out->cpu_m += r.cpu_m;
        out->mem += r.mem;
        out->gpu += r.gpu;
        out->tpu += r.tpu;
    }
    cJSON_ArrayForEach(c, jget(spec, "initContainers")) {
        container_res(c, &r);
        out->cpu_m = MAX64(out->cpu_m, r.cpu_m);
        out->mem = MAX64(out->mem, r.mem);
        out->gpu = MAX64(out->gpu, r.gpu);
        out->tpu = MAX64(out->tpu, r.tpu);
    }
    out->pods = 1;
}

void cluster_node_allocatable(const cJSON *node, struct cluster_res *out)
{
    const cJSON *st = jget(node, "status");
    const cJSON *a = jget(st, "allocatable") ? jget(st, "allocatable") : jget(st, "capacity");

    out->cpu_m = qty(a, "cpu");
    out->mem = qty(a, "memory") / 1000;
    out->gpu = qty(a, "nvidia.com/gpu") / 1000;
    out->tpu = qty(a, "google.com/tpu") / 1000;
    out->pods = qty(a, "pods") / 1000;
}

static bool str_eq(const cJSON *a, const char *b)
{
    const char *s = cJSON_GetStringValue(a);
    return (s ? s : "")[0] == b[0] && !strcmp(s ? s : "", b);
}

static bool cluster_tolerates(const cJSON *tolerations, const cJSON *taint)
{
    const cJSON *t;
    const char *key = cJSON_GetStringValue(jget(taint, "key"));
    const char *val = cJSON_GetStringValue(jget(taint, "value"));
    const char *eff = cJSON_GetStringValue(jget(taint, "effect"));

    cJSON_ArrayForEach(t, tolerations) {
        const char *op = cJSON_GetStringValue(jget(t, "operator"));
        const char *te = cJSON_GetStringValue(jget(t, "effect"));
        const char *tk = cJSON_GetStringValue(jget(t, "key"));
        bool exists = op && !strcmp(op, "Exists");

        if (te && te[0] && (!eff || strcmp(te, eff)))
            continue;
        if (tk && tk[0]) {
            if (!key || strcmp(tk, key))
                continue;
        } else if (!exists) {
            continue;   /* an empty key only makes sense with Exists */
        }
        if (exists || str_eq(jget(t, "value"), val ? val : ""))
            return true;
    }
    return false;
}

#define MAX_TERMS 64

static bool in_values(const cJSON *values, const char *v)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, values)
        if (v && cJSON_IsString(x) && !strcmp(x->valuestring, v))
            return true;
    return false;
}

/* One nodeSelectorRequirement against a value (a label's, or metadata.name for
 * matchFields); v NULL when the label is absent. Unknown operators never match. */
static bool requirement_ok(const cJSON *r, const char *v)
{
    const char *op = cJSON_GetStringValue(jget(r, "operator"));
    const cJSON *values = jget(r, "values");
    char *end;
    long long have, want;

    if (!op)
        return false;
    if (!strcmp(op, "In"))
        return in_values(values, v);
    if (!strcmp(op, "NotIn"))
        return !in_values(values, v);
    if (!strcmp(op, "Exists"))
        return v != NULL;
    if (!strcmp(op, "DoesNotExist"))
        return v == NULL;
    if ((strcmp(op, "Gt") && strcmp(op, "Lt")) || !v || cJSON_GetArraySize(values) != 1 ||
        !cJSON_IsString(values->child))
        return false;
    errno = 0;
    have = strtoll(v, &end, 10);
    if (errno || *end || end == v)
        return false;
    want = strtoll(values->child->valuestring, &end, 10);
    if (errno || *end || end == values->child->valuestring)
        return false;
    return op[0] == 'G' ? have > want : have < want;
}

/* requiredDuringSchedulingIgnoredDuringExecution: terms ORed, requirements ANDed; an
 * empty term (or an empty term list) matches nothing, as in the real NodeAffinity. */
static bool node_affinity_ok(const cJSON *spec, const cJSON *node)
{
    const cJSON *req = jget(jget(jget(spec, "affinity"), "nodeAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *labels = jget(jget(node, "metadata"), "labels"), *term, *r;
    const char *name = cJSON_GetStringValue(jget(jget(node, "metadata"), "name"));
    int n = 0;

    if (!req)
        return true;
    cJSON_ArrayForEach(term, jget(req, "nodeSelectorTerms")) {
        bool ok = true, any = false;
        if (++n > MAX_TERMS)
            break;
        cJSON_ArrayForEach(r, jget(term, "matchExpressions")) {
            const char *k = cJSON_GetStringValue(jget(r, "key"));
            any = true;
            ok = ok && k && requirement_ok(r, cJSON_GetStringValue(jget(labels, k)));
        }
        cJSON_ArrayForEach(r, jget(term, "matchFields")) {
            const char *k = cJSON_GetStringValue(jget(r, "key"));
            any = true;
            ok = ok && k && !strcmp(k, "metadata.name") && requirement_ok(r, name);
        }
        if (any && ok)
            return true;
    }
    return false;
}

unsigned cluster_node_fits(const cJSON *pod, const struct cluster_res *req,
                           const cJSON *node, const struct cluster_res *alloc,
                           const struct cluster_res *used, char *taint, size_t taintlen)
{
    const cJSON *spec = jget(pod, "spec"), *nspec = jget(node, "spec"), *t, *kv;
    const cJSON *labels = jget(jget(node, "metadata"), "labels");
    unsigned bits = 0;

    if (cJSON_IsTrue(jget(nspec, "unschedulable")))
        return CLUSTER_FIT_UNSCHEDULABLE;
    cJSON_ArrayForEach(t, jget(nspec, "taints")) {
        const char *eff = cJSON_GetStringValue(jget(t, "effect"));
        if (!eff || (strcmp(eff, "NoSchedule") && strcmp(eff, "NoExecute")))
            continue;
        if (!cluster_tolerates(jget(spec, "tolerations"), t)) {
            if (taint && taintlen) {
                const char *k = cJSON_GetStringValue(jget(t, "key"));
                const char *v = cJSON_GetStringValue(jget(t, "value"));
                snprintf(taint, taintlen, "{%s: %s}", k ? k : "", v ? v : "");
            }
            return CLUSTER_FIT_TAINT;
        }
    }
    cJSON_ArrayForEach(kv, jget(spec, "nodeSelector")) {
        if (!cJSON_IsString(kv) || !str_eq(jget(labels, kv->string), kv->valuestring) ||
            !jget(labels, kv->string))
            return CLUSTER_FIT_SELECTOR;
    }
    if (!node_affinity_ok(spec, node))
        return CLUSTER_FIT_SELECTOR;
    if (used->pods + req->pods > alloc->pods)
        bits |= CLUSTER_FIT_PODS;
    if (req->cpu_m && used->cpu_m + req->cpu_m > alloc->cpu_m)
        bits |= CLUSTER_FIT_CPU;
    if (req->mem && used->mem + req->mem > alloc->mem)
        bits |= CLUSTER_FIT_MEMORY;
    if (req->gpu && used->gpu + req->gpu > alloc->gpu)
        bits |= CLUSTER_FIT_GPU;
    if (req->tpu && used->tpu + req->tpu > alloc->tpu)
        bits |= CLUSTER_FIT_TPU;
    return bits;
}

/* Pods without requests count as 100m / 200Mi when scoring (the scheduler's
 * non-zero defaults), so that empty pods spread too. */
static int64_t free_share(int64_t alloc, int64_t used, int64_t req)
{
    if (alloc <= 0 || used + req > alloc)
        return 0;
    return (alloc - used - req) * 100 / alloc;
}

int cluster_node_score(const struct cluster_res *req, const struct cluster_res *alloc,
                       const struct cluster_res *used)
{
    int64_t cpu = req->cpu_m ? req->cpu_m : 100;
    int64_t mem = req->mem ? req->mem : 200ll * 1024 * 1024;

    return (int)((free_share(alloc->cpu_m, used->cpu_m, cpu) +
                  free_share(alloc->mem, used->mem, mem)) / 2);
}

struct reason { const char *text; size_t count; bool resource; };

static int reason_cmp(const void *a, const void *b)
{
    const char *x = a, *y = b;
    return strcmp(x, y);
}

void cluster_unsched_message(size_t n, const unsigned *fits, const char *taint,
                             char *out, size_t len)
{
    char taint_text[192];
    struct reason rs[] = {
        { "node(s) were unschedulable", 0, false },
        { taint_text, 0, false },
        { "node(s) didn't match Pod's node affinity/selector", 0, false },
        { "Too many pods", 0, true },
        { "Insufficient cpu", 0, true },
        { "Insufficient memory", 0, true },
        { "Insufficient nvidia.com/gpu", 0, true },
        { "Insufficient google.com/tpu", 0, true },
    };
    const size_t nr = sizeof(rs) / sizeof(rs[0]);
    char items[8][256], pre[2][256];
    size_t ni = 0, np = 0, victims = 0, helpless = 0, off;

    snprintf(taint_text, sizeof(taint_text), "node(s) had untolerated taint %s",
             taint && taint[0] ? taint : "{}");
    if (n == 0) {
        snprintf(out, len, "no nodes available to schedule pods");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t b = 0; b < nr; b++)
            if (fits[i] & (1u << b))
                rs[b].count++;
        if (fits[i] & CLUSTER_FIT_RESOURCES)
            victims++;
        else
            helpless++;
    }
    for (size_t b = 0; b < nr; b++)
        if (rs[b].count)
            snprintf(items[ni++], sizeof(items[0]), "%zu %s", rs[b].count, rs[b].text);
    /* the real FitError sorts "COUNT reason" strings */
    qsort(items, ni, sizeof(items[0]), reason_cmp);
    if (helpless)
        snprintf(pre[np++], sizeof(pre[0]), "%zu Preemption is not helpful for scheduling",
                 helpless);
    if (victims)
        snprintf(pre[np++], sizeof(pre[0]), "%zu No preemption victims found for incoming pod",
                 victims);
    qsort(pre, np, sizeof(pre[0]), reason_cmp);
    off = (size_t)snprintf(out, len, "0/%zu nodes are available: ", n);
    for (size_t i = 0; i < ni && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", items[i]);
    if (off < len)
        off += (size_t)snprintf(out + off, len - off, ". preemption: 0/%zu nodes are available: ", n);
    for (size_t i = 0; i < np && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ", " : "", pre[i]);
    if (off < len)
        snprintf(out + off, len - off, ".");
}

/*
 * build_status.c - the desired resources a RayCluster's status reports
 * (utils.CalculateDesiredResources, sumGPUs): the head Pod plus every
 * non-suspended worker group's Pod times replicas times numOfHosts, requests
 * with limits filling in, formatted the way resource.Quantity prints.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reconcilers/raycluster/internal.h"

/* One resource total and the format of the quantity it started from (Go keeps the
 * format of the first non-zero operand of an Add). */
struct total {
    __int128 milli;
    int binary; /* -1 unset, 0 DecimalSI, 1 BinarySI */
};

static int quantity_format(const cJSON *v)
{
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    size_t n = s ? strlen(s) : 0;
    return n >= 2 && s[n - 1] == 'i' ? 1 : 0;
}

static void add(struct total *t, int64_t milli, int64_t times, int fmt)
{
    if (milli == 0 || times == 0)
        return;
    if (t->binary < 0 || t->milli == 0)
        t->binary = fmt;
    t->milli += (__int128)milli * times;
}

/* CalculatePodResource for the named resource(s) of one Pod template, times n. */
static void pod_add(const cJSON *group, int64_t n, struct total *cpu, struct total *mem,
                    struct total *gpu, struct total *tpu)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, raycluster__json_path(group, "template", "spec", "containers", NULL)) {
        const cJSON *res = kobj_get(c, "resources");
        const cJSON *req = kobj_get(res, "requests"), *lim = kobj_get(res, "limits");
        const cJSON *srcs[2] = { cJSON_IsObject(req) ? req : NULL, cJSON_IsObject(lim) ? lim : NULL };
        for (int s = 0; s < 2; s++) {
            const cJSON *e;
            cJSON_ArrayForEach(e, srcs[s]) {
                int64_t milli;
                struct total *t = NULL;
                if (!e->string || (s == 1 && srcs[0] &&
                                   cJSON_GetObjectItemCaseSensitive(srcs[0], e->string)))
                    continue; /* a request wins over its limit */
                if (raycluster__quantity_milli(e, &milli) < 0)
                    continue;
                if (!strcmp(e->string, "cpu"))
                    t = cpu;
                else if (!strcmp(e->string, "memory"))
                    t = mem;
                else if (!strcmp(e->string, "google.com/tpu"))
                    t = tpu;
                if (t)
                    add(t, milli, n, quantity_format(e));
                if (raycluster__is_gpu_resource(e->string))
                    add(gpu, milli, n, quantity_format(e));
            }
        }
    }
}

/* resource.Quantity.String() of a canonical value (also the Volcano PodGroup's
 * minResources, reconcilers/batchsched). */
void rc_quantity_string(__int128 milli, bool binary, char *out, size_t cap)
{
    static const char *const dec[] = { "", "k", "M", "G", "T", "P", "E" };
    static const char *const bin[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
    __int128 m = milli;
    long long v;
    int k = 0;
    if (m == 0) {
        snprintf(out, cap, "0");
        return;
    }
    if (m % 1000 != 0 || m < 0) {
        snprintf(out, cap, "%lldm", (long long)m);
        return;
    }
    m /= 1000;
    if (binary && m >= 1024) {
        while (k < 6 && m % 1024 == 0) {
            m /= 1024;
            k++;
        }
        v = (long long)m;
        snprintf(out, cap, "%lld%s", v, bin[k]);
        return;
    }
    while (k < 6 && m % 1000 == 0) {
        m /= 1000;
        k++;
    }
    v = (long long)m;
    snprintf(out, cap, "%lld%s", v, dec[k]);
}

static void format_quantity(const struct total *t, char *out, size_t cap)
{
    rc_quantity_string(t->milli, t->binary == 1, out, cap);
}

int rc_desired_resources(const cJSON *rc, struct rc_resources *out)
{
    struct total cpu = { 0, -1 }, mem = { 0, -1 }, gpu = { 0, -1 }, tpu = { 0, -1 };
    const cJSON *g;
    if (!out)
        return -EINVAL;
    pod_add(raycluster__head_group(rc), 1, &cpu, &mem, &gpu, &tpu);
    cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs")) {
        if (raycluster__json_bool(g, "suspend", false))
            continue;
        /* Spec replicas as written (not clamped to min/max), as KubeRay counts them. */
        int64_t n = raycluster__json_int(g, "replicas", 0) * raycluster__group_num_hosts(g);
        pod_add(g, n, &cpu, &mem, &gpu, &tpu);
    }
    format_quantity(&cpu, out->cpu, sizeof(out->cpu));
    format_quantity(&mem, out->memory, sizeof(out->memory));
    format_quantity(&gpu, out->gpu, sizeof(out->gpu));
    format_quantity(&tpu, out->tpu, sizeof(out->tpu));
    return 0;
}

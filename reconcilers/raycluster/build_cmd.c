/*
 * build_cmd.c - the `ray start` command KubeRay generates for a node: the
 * group's rayStartParams completed with the top-level resources/labels fields,
 * KubeRay's defaults (updateRayStartParamsResources/Labels, setMissingRayStartParams),
 * the autoscaler and GCS FT parameters, then num-cpus/memory/num-gpus and the
 * accelerator resources taken from the Ray container's resources
 * (generateRayStartCommand, addWellKnownAcceleratorResources), rendered with
 * convertParamMap's sorted " --key=value " flags.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kobj/gotypes.h"
#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

/* json.Marshal(map[string]float64) wrapped in single quotes, keys sorted. */
static char *resources_json(const cJSON *map)
{
    struct buf out = { 0 };
    const cJSON **items = NULL;
    size_t n = 0;
    if (kobj_members_sorted(map, &items, &n) < 0 || buf_puts(&out, "'{") < 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        char num[64];
        gotypes_float(items[i]->valuedouble, num, sizeof(num));
        if ((i && buf_puts(&out, ",") < 0) || buf_append_json_string(&out, items[i]->string) < 0 ||
            buf_puts(&out, ":") < 0 || buf_puts(&out, num) < 0)
            goto fail;
    }
    if (buf_puts(&out, "}'") < 0)
        goto fail;
    free(items);
    return buf_steal(&out);
fail:
    free(items);
    buf_free(&out);
    return NULL;
}

static int set_int_param(struct rc_params *p, const char *k, int64_t v)
{
    char s[32];
    snprintf(s, sizeof(s), "%lld", (long long)v);
    return raycluster__params_set(p, k, s);
}

/* updateRayStartParamsResources: the group's top-level resources override the flags. */
static int apply_group_resources(struct rc_params *p, const cJSON *res)
{
    cJSON *custom = cJSON_CreateObject();
    const cJSON *e;
    int r = 0;
    if (!custom)
        return -ENOMEM;
    cJSON_ArrayForEach(e, (cJSON_IsObject(res) ? res : NULL)) {
        int64_t milli;
        if (!e->string || raycluster__quantity_milli(e, &milli) < 0)
            continue; /* KubeRay logs and skips an unparsable quantity */
        if (!strcasecmp(e->string, "cpu"))
            r = set_int_param(p, "num-cpus", raycluster__milli_ceil(milli));
        else if (!strcasecmp(e->string, "memory"))
            r = set_int_param(p, "memory", raycluster__milli_ceil(milli));
        else {
            char lower[256];
            size_t i;
            for (i = 0; e->string[i] && i + 1 < sizeof(lower); i++)
                lower[i] = (char)(e->string[i] >= 'A' && e->string[i] <= 'Z' ? e->string[i] + 32
                                                                               : e->string[i]);
            lower[i] = '\0';
            if (raycluster__is_gpu_resource(lower))
                r = set_int_param(p, "num-gpus", raycluster__milli_ceil(milli));
            else if (!cJSON_GetObjectItemCaseSensitive(custom, e->string) &&
                     !cJSON_AddNumberToObject(custom, e->string, (double)milli / 1000.0))
                r = -ENOMEM;
        }
        if (r < 0)
            goto out;
    }
    if (cJSON_GetArraySize(custom) > 0) {
        char *j = resources_json(custom);
        r = j ? raycluster__params_set(p, "resources", j) : -ENOMEM;
        free(j);
    }
out:
    cJSON_Delete(custom);
    return r;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* updateRayStartParamsLabels: labels=k1=v1,k2=v2 sorted by key. */
static int apply_group_labels(struct rc_params *p, const cJSON *labels)
{
    const cJSON *e;
    const char **keys = NULL;
    size_t n = 0;
    struct buf out = { 0 };
    int r = -ENOMEM;
    if (!cJSON_IsObject(labels) || cJSON_GetArraySize(labels) == 0)
        return 0;
    if (!(keys = calloc((size_t)cJSON_GetArraySize(labels), sizeof(*keys))))
        return -ENOMEM;
    cJSON_ArrayForEach(e, labels)
        if (e->string && cJSON_IsString(e))
            keys[n++] = e->string;
    qsort(keys, n, sizeof(*keys), str_cmp);
    if (buf_puts(&out, "") < 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (buf_printf(&out, "%s%s=%s", i ? "," : "", keys[i],
                       cJSON_GetObjectItemCaseSensitive(labels, keys[i])->valuestring) < 0)
            goto out;
    r = raycluster__params_set(p, "labels", out.data);
out:
    buf_free(&out);
    free(keys);
    return r;
}

int raycluster__params_for_node(const cJSON *rc, const cJSON *group, const struct rc_build_opts *o,
                                struct rc_params *p)
{
    bool head = group == NULL;
    const cJSON *g = head ? raycluster__head_group(rc) : group;
    char port[64], fqdn[512], addr[600];
    int r;
    memset(p, 0, sizeof(*p));
    if ((r = raycluster__params_load(p, kobj_get(g, "rayStartParams"))) < 0 ||
        (r = apply_group_resources(p, kobj_get(g, "resources"))) < 0 ||
        (r = apply_group_labels(p, kobj_get(g, "labels"))) < 0)
        goto fail;
    raycluster__head_port_str(rc, port, sizeof(port));
    if (!head && !raycluster__params_get(p, "address")) {
        if ((r = rc_head_service_fqdn(rc, o, fqdn, sizeof(fqdn))) < 0)
            goto fail;
        snprintf(addr, sizeof(addr), "%s:%s", fqdn, port);
        if ((r = raycluster__params_set(p, "address", addr)) < 0)
            goto fail;
    }
    if (head && !raycluster__params_get(p, "dashboard-host") &&
        (r = raycluster__params_set(p, "dashboard-host", "0.0.0.0")) < 0)
        goto fail;
    if (!raycluster__params_get(p, "metrics-export-port") &&
        (r = raycluster__params_set(p, "metrics-export-port", "8080")) < 0)
        goto fail;
    if ((r = raycluster__params_set(p, "block", "true")) < 0)
        goto fail;
    if (!raycluster__params_get(p, "dashboard-agent-listen-port") &&
        (r = raycluster__params_set(p, "dashboard-agent-listen-port", "52365")) < 0)
        goto fail;
    if (head && rc_autoscaling_enabled(rc) && (r = raycluster__params_set(p, "no-monitor", "true")) < 0)
        goto fail;
    if (head && rc_gcs_ft_enabled(rc)) {
        /* configureRedisFT points the flags at the env vars it injects. */
        const cJSON *ft = kobj_get(raycluster__spec(rc), "gcsFaultToleranceOptions");
        if (cJSON_IsObject(ft) && kobj_get(ft, "redisUsername") &&
            (r = raycluster__params_set(p, "redis-username", "$REDIS_USERNAME")) < 0)
            goto fail;
        if (cJSON_IsObject(ft) && kobj_get(ft, "redisPassword") &&
            (r = raycluster__params_set(p, "redis-password", "$REDIS_PASSWORD")) < 0)
            goto fail;
    }
    return 0;
fail:
    raycluster__params_free(p);
    return r;
}

/* getResourcesMap: the "resources" flag as a JSON object of numbers (quotes trimmed). */
static cJSON *params_resources_map(const struct rc_params *p, bool *bad)
{
    const char *s = raycluster__params_get(p, "resources");
    const cJSON *e;
    cJSON *m;
    *bad = false;
    if (!s)
        return cJSON_CreateObject();
    while (*s && strchr("'\"` ", *s))
        s++;
    size_t n = strlen(s);
    while (n && strchr("'\"` ", s[n - 1]))
        n--;
    m = cJSON_ParseWithLength(s, n);
    if (!cJSON_IsObject(m)) {
        cJSON_Delete(m);
        *bad = true;
        return NULL;
    }
    cJSON_ArrayForEach(e, m) {
        if (!cJSON_IsNumber(e)) {
            cJSON_Delete(m);
            *bad = true;
            return NULL;
        }
    }
    return m;
}

/* addWellKnownAcceleratorResources: num-gpus from the first GPU limit, the first of
 * neuroncore / TPU limits into the resources JSON, scanning limits in key order. */
static int add_accelerators(struct rc_params *p, const cJSON *limits)
{
    static const char *const accel[][2] = { { "aws.amazon.com/neuroncore", "neuron_cores" },
                                            { "google.com/tpu", "TPU" } };
    const cJSON **keys = NULL;
    size_t n = 0;
    bool bad, added;
    cJSON *map;
    int r = 0;
    if (!cJSON_IsObject(limits) || cJSON_GetArraySize(limits) == 0)
        return 0;
    if (!(map = params_resources_map(p, &bad)))
        return bad ? 0 : -ENOMEM; /* KubeRay logs the unmarshal error and adds nothing */
    added = cJSON_GetObjectItemCaseSensitive(map, "neuron_cores") ||
            cJSON_GetObjectItemCaseSensitive(map, "TPU");
    if ((r = kobj_members_sorted(limits, &keys, &n)) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        int64_t milli;
        if (raycluster__quantity_milli(keys[i], &milli) < 0)
            continue;
        if (!raycluster__params_get(p, "num-gpus") && raycluster__is_gpu_resource(keys[i]->string) && milli != 0 &&
            (r = set_int_param(p, "num-gpus", raycluster__milli_ceil(milli))) < 0)
            goto out;
        for (size_t a = 0; !added && a < 2; a++) {
            if (strcmp(keys[i]->string, accel[a][0]) || milli == 0)
                continue;
            if (!cJSON_GetObjectItemCaseSensitive(map, accel[a][1])) {
                char *j;
                if (!cJSON_AddNumberToObject(map, accel[a][1], (double)milli / 1000.0)) {
                    r = -ENOMEM;
                    goto out;
                }
                if (!(j = resources_json(map))) {
                    r = -ENOMEM;
                    goto out;
                }
                r = raycluster__params_set(p, "resources", j);
                free(j);
                if (r < 0)
                    goto out;
            }
            added = true;
        }
    }
out:
    free(keys);
    cJSON_Delete(map);
    return r;
}

char *raycluster__ray_start_from_params(struct rc_params *p, bool head, const cJSON *container)
{
    const cJSON *res = kobj_get(container, "resources");
    const cJSON *lim = kobj_get(res, "limits"), *req = kobj_get(res, "requests");
    int64_t milli;
    char *flags, *cmd;
    if (!raycluster__params_get(p, "num-cpus")) {
        if (raycluster__quantity_milli(kobj_get(lim, "cpu"), &milli) == 0 && milli != 0) {
            if (set_int_param(p, "num-cpus", raycluster__milli_ceil(milli)) < 0)
                return NULL;
        } else if (raycluster__quantity_milli(kobj_get(req, "cpu"), &milli) == 0 && milli != 0) {
            if (set_int_param(p, "num-cpus", raycluster__milli_ceil(milli)) < 0)
                return NULL;
        }
    }
    if (!raycluster__params_get(p, "memory") && raycluster__quantity_milli(kobj_get(lim, "memory"), &milli) == 0 &&
        milli != 0 && set_int_param(p, "memory", raycluster__milli_ceil(milli)) < 0)
        return NULL;
    if (add_accelerators(p, lim) < 0)
        return NULL;
    if (!(flags = raycluster__params_render(p)))
        return NULL;
    cmd = malloc(strlen(flags) + 32);
    if (cmd)
        sprintf(cmd, "ray start%s %s", head ? " --head" : "", flags);
    free(flags);
    return cmd;
}

char *rc_build_ray_start_cmd(const cJSON *rc, const cJSON *group, const struct rc_build_opts *o)
{
    struct rc_params p;
    const cJSON *g = group ? group : raycluster__head_group(rc);
    char *cmd;
    if (raycluster__params_for_node(rc, group, o, &p) < 0)
        return NULL;
    cmd = raycluster__ray_start_from_params(&p, group == NULL, raycluster__group_container0(g));
    raycluster__params_free(&p);
    return cmd;
}

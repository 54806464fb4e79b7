/*
 * build_names.c - operator options, the names KubeRay gives a RayCluster's
 * objects (utils.GenerateHeadServiceName and friends), small spec helpers the
 * reconcile loop shares (desired replicas, head port, managedBy) and the spec
 * hash of the Recreate upgrade strategy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/gnutls.h>

#include "kobj/gotypes.h"
#include "reconcilers/raycluster/internal.h"

void rc_build_opts_default(struct rc_build_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->enable_init_container_injection = true;
    o->use_deterministic_head_name = false;
    o->enable_probes_injection = true;
    o->enable_head_cluster_ip_service = false;
    o->enable_login_shell = false;
    snprintf(o->cluster_domain, sizeof(o->cluster_domain), "cluster.local");
}

static bool env_is(const char *name, const char *val)
{
    const char *v = getenv(name);
    return v && !strcasecmp(v, val);
}

void rc_build_opts_from_env(struct rc_build_opts *o)
{
    const char *d = getenv("CLUSTER_DOMAIN");
    rc_build_opts_default(o);
    /* Each switch is read the way KubeRay reads it: "false" disables a default-on
     * feature, only "true" enables a default-off one. */
    o->enable_init_container_injection = !env_is("ENABLE_INIT_CONTAINER_INJECTION", "false");
    o->use_deterministic_head_name = env_is("ENABLE_DETERMINISTIC_HEAD_POD_NAME", "true");
    o->enable_probes_injection = !env_is("ENABLE_PROBES_INJECTION", "false");
    o->enable_head_cluster_ip_service = env_is("ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", "true");
    o->enable_login_shell = env_is("ENABLE_LOGIN_SHELL", "true");
    if (d && *d)
        snprintf(o->cluster_domain, sizeof(o->cluster_domain), "%s", d);
}

static int put(char *out, size_t cap, const char *fmt, const char *a, const char *b)
{
    int n = snprintf(out, cap, fmt, a, b);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int rc_head_service_name(const cJSON *rc, char *out, size_t cap)
{
    /* No shortening: KubeRay v1.7 limits cluster names to 53 characters instead,
     * so NAME-head-svc always fits a 63-character DNS label. */
    const char *custom = kobj_str(raycluster__json_path(raycluster__head_group(rc), "headService", "metadata", NULL),
                                 "name");
    if (custom && *custom)
        return put(out, cap, "%s%s", custom, "");
    return put(out, cap, "%s%s", raycluster__name(rc), "-head-svc");
}

int rc_headless_service_name(const cJSON *rc, char *out, size_t cap)
{
    return put(out, cap, "%s%s", raycluster__name(rc), "-headless");
}

int rc_serve_service_name(const cJSON *rc, char *out, size_t cap)
{
    return put(out, cap, "%s%s", raycluster__name(rc), "-serve-svc");
}

int rc_head_service_fqdn(const cJSON *rc, const struct rc_build_opts *o, char *out, size_t cap)
{
    char svc[256];
    int n, r;
    if ((r = rc_head_service_name(rc, svc, sizeof(svc))) < 0)
        return r;
    n = snprintf(out, cap, "%s.%s.svc.%s", svc, raycluster__namespace(rc),
                 o && o->cluster_domain[0] ? o->cluster_domain : "cluster.local");
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* utils.FindContainerPort on the head's Ray container. */
static int head_container_port(const cJSON *rc, const char *name, int dflt)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, kobj_get(raycluster__group_container0(raycluster__head_group(rc)), "ports")) {
        const char *n = kobj_str(p, "name");
        if (n && !strcmp(n, name) && raycluster__json_has_int(p, "containerPort"))
            return (int)raycluster__json_int(p, "containerPort", dflt);
    }
    return dflt;
}

int rc_dashboard_port(const cJSON *rc)
{
    return head_container_port(rc, "dashboard", 8265);
}

void raycluster__head_port_str(const cJSON *rc, char *out, size_t cap)
{
    const cJSON *v = kobj_get(kobj_get(raycluster__head_group(rc), "rayStartParams"), "port");
    if (cJSON_IsString(v))
        snprintf(out, cap, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        gotypes_float(v->valuedouble, out, cap);
    else
        snprintf(out, cap, "6379");
}

int rc_head_port(const cJSON *rc)
{
    char s[64], *end;
    long v;
    raycluster__head_port_str(rc, s, sizeof(s));
    v = strtol(s, &end, 10);
    return *s && !*end && v > 0 && v < 65536 ? (int)v : 6379;
}

int64_t rc_worker_desired_replicas(const cJSON *group)
{
    int64_t min = raycluster__json_int(group, "minReplicas", 0);
    int64_t max = raycluster__json_int(group, "maxReplicas", 2147483647);
    int64_t hosts = raycluster__group_num_hosts(group);
    int64_t n;
    if (raycluster__json_bool(group, "suspend", false))
        return 0;
    if (!raycluster__json_has_int(group, "replicas") || raycluster__json_int(group, "replicas", 0) < min)
        n = min;
    else if (raycluster__json_int(group, "replicas", 0) > max)
        n = max;
    else
        n = raycluster__json_int(group, "replicas", 0);
    return n * hosts;
}

bool rc_gcs_ft_enabled(const cJSON *rc)
{
    const char *a = kobj_annotation(rc, RC_ANN_FT_ENABLED);
    const cJSON *opts = kobj_get(raycluster__spec(rc), "gcsFaultToleranceOptions");
    return (a && !strcasecmp(a, "true")) || (opts && !cJSON_IsNull(opts));
}

bool rc_managed_elsewhere(const cJSON *rc)
{
    const char *m = kobj_str(raycluster__spec(rc), "managedBy");
    return m && strcmp(m, RC_MANAGED_BY_KUBERAY) != 0;
}

int rc_gcs_ft_deletion_timeout(const cJSON *rc)
{
    int n;
    /* strconv.Atoi accepts an optional sign and digits only; non-positive falls back. */
    if (raycluster__parse_int32(kobj_annotation(rc, RC_ANN_GCS_FT_DELETION_TIMEOUT), &n) < 0 ||
        n <= 0)
        return RC_GCS_FT_DELETION_TIMEOUT_S;
    return n;
}

/* ---- spec hash ---- */

int rc_spec_hash(const cJSON *rc, char *out, size_t cap)
{
    cJSON *spec;
    int ret;
    if (cap < 33)
        return -ENAMETOOLONG;
    spec = raycluster__spec(rc) ? cJSON_Duplicate(raycluster__spec(rc), 1) : cJSON_CreateObject();
    if (!spec)
        return -ENOMEM;
    /* GenerateHashWithoutReplicasAndWorkersToDelete: what an autoscaler or a queueing
     * controller changes is muted */
    gotypes_spec_mute(spec);
    /* Go's encoding/json of the typed spec, so the text (and the hash) is KubeRay's */
    ret = gotypes_spec_hash(spec, out);
    cJSON_Delete(spec);
    return ret;
}

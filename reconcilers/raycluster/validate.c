/*
 * validate.c - the checks KubeRay v1.7 runs on a RayCluster before reconciling it
 * (utils.ValidateRayClusterMetadata, ValidateRayClusterSpec, ValidateRayClusterUpgradeOptions,
 * ValidateRayClusterStatus), in its order and with its messages, plus the two
 * admission-time rules the RayCluster webhook / CRD enforce (unique worker group
 * names, managedBy values) and rayop's own numOfHosts >= 1.
 *
 * Feature gates: RayJobDeletionPolicy on; RayClusterNetworkPolicy, RayClusterMTLS,
 * RayClusterHistoryServer and GCSFaultToleranceEmbeddedStorage as struct rc_gates says
 * (off by default, as in KubeRay): a spec that needs a gate that is off is rejected with
 * KubeRay's message, and with it on the feature's own rules apply.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/internal.h"

/* The error text of one failed rule (Go's error string). */
struct verr {
    char msg[960];
};

static int fail(struct verr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct verr *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static const char *group_name(const cJSON *g)
{
    const char *n = kobj_str(g, "groupName");
    return n ? n : "";
}

static int containers_count(const cJSON *group)
{
    const cJSON *c = raycluster__json_path(group, "template", "spec", "containers", NULL);
    return cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0;
}

static const char *param(const cJSON *group, const char *k)
{
    return kobj_str(kobj_get(group, "rayStartParams"), k);
}

static bool param_set(const cJSON *group, const char *k)
{
    const char *v = param(group, k);
    return v && *v;
}

/* ---- metadata ---- */

static int validate_metadata(const cJSON *rc, struct verr *e)
{
    const char *name = raycluster__name(rc);
    if (strlen(name) > RC_MAX_NAME_LEN)
        return fail(e, "RayCluster name should be no more than %d characters", RC_MAX_NAME_LEN);
    if (!kobj_dns1035_label(name))
        return fail(e, "RayCluster name should be a valid DNS1035 label: [%s]",
                    raycluster__dns1035_error(name));
    return 0;
}

int rc_dns1035_check(const char *name, char *msg, size_t cap)
{
    if (kobj_dns1035_label(name)) {
        snprintf(msg, cap, "%s", "");
        return 0;
    }
    snprintf(msg, cap, "[%s]", raycluster__dns1035_error(name));
    return -EINVAL;
}

/* ---- spec ---- */

static int validate_group_resources(const char *gname, const cJSON *group, struct verr *e)
{
    bool in_params = param_set(group, "num-cpus") || param_set(group, "num-gpus") ||
                     param_set(group, "memory") || param_set(group, "resources");
    const cJSON *res = kobj_get(group, "resources");
    if (in_params && cJSON_IsObject(res) && cJSON_GetArraySize(res) > 0)
        return fail(e, "resource fields should not be set in both rayStartParams and Resources "
                       "for %s group; please use only one", gname);
    return 0;
}

static int validate_group_labels(const char *gname, const cJSON *group, struct verr *e)
{
    const cJSON *l;
    size_t w = 0;
    if (kobj_get(kobj_get(group, "rayStartParams"), "labels"))
        return fail(e, "rayStartParams['labels'] is not supported for %s group; please use the "
                       "top-level Labels field instead", gname);
    e->msg[0] = '\0';
    cJSON_ArrayForEach(l, (cJSON_IsObject(kobj_get(group, "labels")) ? kobj_get(group, "labels")
                                                                    : NULL)) {
        char kerr[640], verr_[640];
        const char *val = cJSON_IsString(l) ? l->valuestring : "";
        if (!l->string)
            continue;
        /* One entry per apimachinery error, joined by "; " as KubeRay joins them. */
        if (raycluster__qualified_name_error(l->string, kerr, sizeof(kerr)))
            for (char *m = kerr, *nl; m && w < sizeof(e->msg); m = nl ? nl + 1 : NULL) {
                if ((nl = strchr(m, '\n')))
                    *nl = '\0';
                w += (size_t)snprintf(e->msg + w, sizeof(e->msg) - w,
                                      "%sinvalid label key for %s group: '%s', error: %s",
                                      w ? "; " : "", gname, l->string, m);
            }
        if (w >= sizeof(e->msg))
            break;
        if (raycluster__label_value_error(val, verr_, sizeof(verr_)))
            for (char *m = verr_, *nl; m && w < sizeof(e->msg); m = nl ? nl + 1 : NULL) {
                if ((nl = strchr(m, '\n')))
                    *nl = '\0';
                w += (size_t)snprintf(e->msg + w, sizeof(e->msg) - w,
                                      "%sinvalid label value for key '%s' in %s group: '%s', "
                                      "error: %s", w ? "; " : "", l->string, gname, val, m);
            }
        if (w >= sizeof(e->msg))
            break;
    }
    return e->msg[0] ? -EINVAL : 0;
}

/* The head Pod env var RAY_enable_autoscaler_v2 set to "1" or "true". */
static const char *head_v2_env_on(const cJSON *rc)
{
    const char *v = kobj_str(raycluster__env_find(raycluster__group_container0(raycluster__head_group(rc)),
                                        "RAY_enable_autoscaler_v2"), "value");
    return v && (!strcmp(v, "1") || !strcmp(v, "true")) ? v : NULL;
}

static int validate_idle_timeout(const cJSON *rc, const cJSON *g, struct verr *e)
{
    if (!kobj_get(g, "idleTimeoutSeconds"))
        return 0;
    int64_t t = raycluster__json_int(g, "idleTimeoutSeconds", 0);
    if (t < 0)
        return fail(e, "worker group %s: idleTimeoutSeconds must be non-negative, got %lld",
                    group_name(g), (long long)t);
    if (raycluster__autoscaling_v2(rc) || head_v2_env_on(rc))
        return 0;
    return fail(e, "worker group %s: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. "
                   "Please set .spec.autoscalerOptions.version to 'v2' (or set "
                   "RAY_enable_autoscaler_v2 environment variable to 'true' in the head pod if "
                   "using KubeRay < 1.4.0)", group_name(g));
}

static int validate_priority(const cJSON *rc, const cJSON *g, struct verr *e)
{
    int64_t prio = raycluster__json_int(g, "priority", 0);
    const char *ver = kobj_str(raycluster__spec(rc), "rayVersion");
    int cmp;
    if (prio == 0)
        return 0;
    if (!ver || !*ver)
        return fail(e, "worker group %s: priority is set, but RayVersion was not specified. Ray "
                       "version 2.56.0 or later is required", group_name(g));
    if (raycluster__version_cmp(ver, "2.56.0", &cmp) < 0)
        return fail(e, "worker group %s: priority is set, but RayVersion format is invalid: %s, "
                       "could not parse \"%s\" as version", group_name(g), ver, ver);
    if (cmp < 0)
        return fail(e, "worker group %s: priority is set, but minimum Ray version is 2.56.0, got %s",
                    group_name(g), ver);
    if (raycluster__autoscaling_v2(rc) || head_v2_env_on(rc))
        return 0;
    return fail(e, "worker group %s: priority is set to %lld, but autoscaler v2 is not enabled. "
                   "Priority is only supported with autoscaler v2 enabled", group_name(g),
                (long long)prio);
}

static int validate_workers(const cJSON *rc, bool autoscaling, struct verr *e)
{
    const cJSON *groups = kobj_get(raycluster__spec(rc), "workerGroupSpecs"), *g;
    int r;
    cJSON_ArrayForEach(g, (cJSON_IsArray(groups) ? groups : NULL)) {
        const char *gn = group_name(g);
        if (containers_count(g) == 0)
            return fail(e, "workerGroupSpec should have at least one container");
        if (!autoscaling && (!raycluster__json_has_int(g, "minReplicas") || !raycluster__json_has_int(g, "maxReplicas")))
            return fail(e, "worker group %s must set both minReplicas and maxReplicas when "
                           "autoscaling is disabled", gn);
        int64_t mn = raycluster__json_int(g, "minReplicas", 0), mx = raycluster__json_int(g, "maxReplicas", 0);
        if (raycluster__json_has_int(g, "minReplicas") && mn < 0)
            return fail(e, "worker group %s has negative minReplicas %lld", gn, (long long)mn);
        if (raycluster__json_has_int(g, "maxReplicas") && mx < 0)
            return fail(e, "worker group %s has negative maxReplicas %lld", gn, (long long)mx);
        if (raycluster__json_has_int(g, "minReplicas") && raycluster__json_has_int(g, "maxReplicas") && mn > mx)
            return fail(e, "worker group %s has minReplicas %lld greater than maxReplicas %lld", gn,
                        (long long)mn, (long long)mx);
        if ((r = validate_group_resources(gn, g, e)) < 0 ||
            (r = validate_group_labels(gn, g, e)) < 0 || (r = validate_idle_timeout(rc, g, e)) < 0 ||
            (r = validate_priority(rc, g, e)) < 0)
            return r;
        /* rayop: a group of zero hosts per replica would never get a Pod; KubeRay lets
         * it through silently. */
        if (raycluster__group_num_hosts(g) < 1)
            return fail(e, "worker group %s has numOfHosts %lld; it must be at least 1", gn,
                        (long long)raycluster__group_num_hosts(g));
    }
    return 0;
}

/* Admission-time rules (CRD schema, RayCluster webhook) KubeRay's controller never sees
 * violated; rayop may receive such objects from an API server without the webhook. */
static int validate_admission(const cJSON *rc, struct verr *e)
{
    const cJSON *groups = kobj_get(raycluster__spec(rc), "workerGroupSpecs"), *g, *h;
    const char *mb = kobj_str(raycluster__spec(rc), "managedBy");
    int i = 0;
    if (mb && strcmp(mb, RC_MANAGED_BY_KUBERAY) && strcmp(mb, RC_MANAGED_BY_MULTIKUEUE))
        return fail(e, "spec.managedBy: Invalid value: \"%s\": the managedBy field value must be "
                       "either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'", mb);
    if (!cJSON_IsObject(raycluster__head_group(rc)))
        return fail(e, "spec.headGroupSpec: Required value");
    cJSON_ArrayForEach(g, (cJSON_IsArray(groups) ? groups : NULL)) {
        int j = 0;
        if (!kobj_str(g, "groupName"))
            return fail(e, "spec.workerGroupSpecs[%d].groupName: Required value", i);
        cJSON_ArrayForEach(h, groups) {
            if (j >= i)
                break;
            if (kobj_str(h, "groupName") && !strcmp(kobj_str(h, "groupName"), group_name(g)))
                return fail(e, "spec.workerGroupSpecs[%d]: Invalid value: \"%s\": worker group "
                               "names must be unique", i, group_name(g));
            j++;
        }
        i++;
    }
    return 0;
}

static bool field_set(const cJSON *spec, const char *key)
{
    const cJSON *v = kobj_get(spec, key);
    return v && !cJSON_IsNull(v);
}

/* validateGcsFaultToleranceBackend, rocksdb: no Redis settings, a claim name alone, and
 * none of the env, mount or volume KubeRay adds itself */
static int validate_gcs_embedded(const cJSON *opts, const cJSON *head, struct verr *e)
{
    static const char *const redis_only[][2] = {
        { "redisAddress", "RedisAddress" }, { "redisUsername", "RedisUsername" },
        { "redisPassword", "RedisPassword" },
        { "externalStorageNamespace", "ExternalStorageNamespace" },
    };
    const cJSON *st = kobj_get(opts, "storage"), *m, *hc = raycluster__group_container0(head);
    const char *claim = kobj_str(st, "claimName");
    for (size_t i = 0; i < sizeof(redis_only) / sizeof(redis_only[0]); i++) {
        const cJSON *v = kobj_get(opts, redis_only[i][0]);
        /* strings count when non-empty, credentials when present at all */
        if (v && !cJSON_IsNull(v) && (!cJSON_IsString(v) || *v->valuestring))
            return fail(e, "cannot set GcsFaultToleranceOptions.%s when backend is 'rocksdb'",
                        redis_only[i][1]);
    }
    if (claim && *claim &&
        ((kobj_get(st, "size") && !cJSON_IsNull(kobj_get(st, "size"))) ||
         (kobj_get(st, "storageClassName") && !cJSON_IsNull(kobj_get(st, "storageClassName"))) ||
         cJSON_GetArraySize(kobj_get(st, "accessModes")) > 0))
        return fail(e, "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with "
                       "size, storageClassName, and accessModes");
    if (raycluster__env_exists(hc, RC_ENV_GCS_STORAGE) || raycluster__env_exists(hc, RC_ENV_GCS_STORAGE_PATH))
        return fail(e, "cannot set `%s` or `%s` env var in head Pod when the embedded GCS FT "
                       "backend is used - these are managed by KubeRay", RC_ENV_GCS_STORAGE,
                    RC_ENV_GCS_STORAGE_PATH);
    cJSON_ArrayForEach(m, kobj_get(hc, "volumeMounts")) {
        const char *mp = kobj_str(m, "mountPath"), *n = kobj_str(m, "name");
        if ((mp && !strcmp(mp, RC_GCS_STORAGE_PATH)) || (n && !strcmp(n, RC_GCS_STORAGE_VOLUME)))
            return fail(e, "cannot set a volume mount named \"%s\" or mounted at %s in the head "
                           "container when the embedded GCS FT backend is used - it is managed "
                           "by KubeRay", RC_GCS_STORAGE_VOLUME, RC_GCS_STORAGE_PATH);
    }
    cJSON_ArrayForEach(m, raycluster__json_path(head, "template", "spec", "volumes", NULL)) {
        const char *n = kobj_str(m, "name");
        if (n && !strcmp(n, RC_GCS_STORAGE_VOLUME))
            return fail(e, "cannot set a volume named \"%s\" in the head Pod when the embedded "
                           "GCS FT backend is used - it is managed by KubeRay",
                        RC_GCS_STORAGE_VOLUME);
    }
    return 0;
}

static int validate_gcs_ft(const cJSON *rc, const struct rc_gates *g, struct verr *e)
{
    const cJSON *spec = raycluster__spec(rc), *head = raycluster__head_group(rc);
    const cJSON *hc = raycluster__group_container0(head);
    const cJSON *opts = kobj_get(spec, "gcsFaultToleranceOptions");
    const char *ft = kobj_annotation(rc, RC_ANN_FT_ENABLED);
    if (ft && *ft && opts)
        return fail(e, "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. "
                       "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance");
    if (!rc_gcs_ft_enabled(rc) && raycluster__env_exists(hc, "RAY_REDIS_ADDRESS"))
        return fail(e, "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but "
                       "GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions "
                       "to enable GCS fault tolerance");
    if (opts) {
        const char *backend = kobj_str(opts, "backend");
        if (param_set(head, "redis-password"))
            return fail(e, "cannot set `redis-password` in rayStartParams when "
                           "GcsFaultToleranceOptions is enabled - use "
                           "GcsFaultToleranceOptions.RedisPassword instead");
        if (raycluster__env_exists(hc, "REDIS_PASSWORD"))
            return fail(e, "cannot set `REDIS_PASSWORD` env var in head Pod when "
                           "GcsFaultToleranceOptions is enabled - use "
                           "GcsFaultToleranceOptions.RedisPassword instead");
        if (raycluster__env_exists(hc, "RAY_REDIS_ADDRESS"))
            return fail(e, "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when "
                           "GcsFaultToleranceOptions is enabled - use "
                           "GcsFaultToleranceOptions.RedisAddress instead");
        const char *ns = kobj_annotation(rc, RC_ANN_EXTERNAL_STORAGE_NS);
        if (ns && *ns)
            return fail(e, "cannot set `ray.io/external-storage-namespace` annotation when "
                           "GcsFaultToleranceOptions is enabled - use "
                           "GcsFaultToleranceOptions.ExternalStorageNamespace instead");
        if (backend && !strcmp(backend, "rocksdb")) {
            if (!g->gcs_ft_embedded)
                return fail(e, "the embedded RocksDB GCS fault tolerance backend "
                               "(GcsFaultToleranceOptions.Backend: 'rocksdb') requires the "
                               "GCSFaultToleranceEmbeddedStorage feature gate to be enabled");
            return validate_gcs_embedded(opts, head, e);
        }
        if (kobj_get(opts, "storage") && !cJSON_IsNull(kobj_get(opts, "storage")))
            return fail(e, "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - "
                           "it only applies to the 'rocksdb' backend");
    }
    if (param_set(head, "redis-username") || raycluster__env_exists(hc, "REDIS_USERNAME"))
        return fail(e, "cannot set redis username in rayStartParams or environment variables - "
                       "use GcsFaultToleranceOptions.RedisUsername instead");
    return 0;
}

static int validate_autoscaler(const cJSON *rc, bool autoscaling, struct verr *e)
{
    const cJSON *spec = raycluster__spec(rc), *g;
    const cJSON *aopts = kobj_get(spec, "autoscalerOptions");
    const cJSON *hc = raycluster__group_container0(raycluster__head_group(rc));
    const char *v2env = head_v2_env_on(rc);
    if (!autoscaling && v2env)
        return fail(e, "environment variable RAY_enable_autoscaler_v2 cannot be set to '%s' when "
                       "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true "
                       "to use autoscaler v2", v2env);
    if (autoscaling) {
        cJSON_ArrayForEach(g, kobj_get(spec, "workerGroupSpecs")) {
            if (raycluster__json_bool(g, "suspend", false))
                return fail(e, "worker group %s cannot be suspended with Autoscaler enabled",
                            group_name(g));
        }
        if (kobj_str(aopts, "version") && raycluster__env_exists(hc, "RAY_enable_autoscaler_v2"))
            return fail(e, "both .spec.autoscalerOptions.version and head Pod env var "
                           "RAY_enable_autoscaler_v2 are set, please only use the former");
        if (raycluster__autoscaling_v2(rc)) {
            const char *rp = kobj_str(raycluster__json_path(raycluster__head_group(rc), "template", "spec", NULL),
                                     "restartPolicy");
            if (rp && *rp && strcmp(rp, "Never"))
                return fail(e, "restartPolicy for head Pod should be Never or unset when using "
                               "autoscaler V2");
            cJSON_ArrayForEach(g, kobj_get(spec, "workerGroupSpecs")) {
                rp = kobj_str(raycluster__json_path(g, "template", "spec", NULL), "restartPolicy");
                if (rp && *rp && strcmp(rp, "Never"))
                    return fail(e, "restartPolicy for worker group %s should be Never or unset "
                                   "when using autoscaler V2", group_name(g));
            }
        }
    }
    if (kobj_get(aopts, "idleTimeoutSeconds") && raycluster__json_int(aopts, "idleTimeoutSeconds", 0) < 0)
        return fail(e, "autoscalerOptions.idleTimeoutSeconds must be non-negative, got %lld",
                    (long long)raycluster__json_int(aopts, "idleTimeoutSeconds", 0));
    if (raycluster__env_exists(aopts, "KUBERAY_GEN_AUTOSCALER_START_CMD"))
        return fail(e, "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: "
                       "it is managed by KubeRay and injected automatically into the autoscaler "
                       "container");
    return 0;
}

static int validate_auth(const cJSON *rc, struct verr *e)
{
    const cJSON *auth = kobj_get(raycluster__spec(rc), "authOptions");
    const char *ver = kobj_str(raycluster__spec(rc), "rayVersion");
    int cmp;
    if (!raycluster__auth_token_enabled(rc)) {
        if (raycluster__k8s_token_auth(rc))
            return fail(e, "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not "
                           "set to 'token'");
        return 0;
    }
    if (!ver || !*ver)
        return fail(e, "authOptions.mode is 'token' but RayVersion was not specified. Ray version "
                       "2.52.0 or later is required");
    if (raycluster__version_cmp(ver, "2.52.0", &cmp) < 0)
        return fail(e, "authOptions.mode is 'token' but RayVersion format is invalid: %s, could "
                       "not parse \"%s\" as version", ver, ver);
    if (cmp < 0)
        return fail(e, "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got %s", ver);
    if (raycluster__k8s_token_auth(rc)) {
        const char *sn = kobj_str(auth, "secretName");
        raycluster__version_cmp(ver, "2.55.0", &cmp);
        if (cmp < 0)
            return fail(e, "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is "
                           "2.55.0, got %s", ver);
        if (sn && *sn)
            return fail(e, "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName "
                           "is also set");
    }
    return 0;
}

/* an env entry of the collector's options: 1 with a literal value or a valueFrom, 0 with
 * neither, -1 absent */
static int collector_env(const cJSON *env, const char *name, const char **value)
{
    const cJSON *v;
    *value = "";
    cJSON_ArrayForEach(v, env) {
        const char *n = kobj_str(v, "name");
        if (!n || strcmp(n, name))
            continue;
        *value = kobj_str(v, "value") ? kobj_str(v, "value") : "";
        return **value || kobj_get(v, "valueFrom") ? 1 : 0;
    }
    return -1;
}

static bool has_env_value(const cJSON *env, const char *name)
{
    const char *v;
    return collector_env(env, name, &v) == 1;
}

/* validateCollectorOptions: the image, no env KubeRay injects itself, and a storage
 * backend with the settings it needs */
static int validate_collector(const cJSON *co, struct verr *e)
{
    static const char *const managed[] = { "POD_IP", "FQ_RAY_IP", "RAY_CLUSTER_NAME",
                                           "RAY_CLUSTER_NAMESPACE", "RAY_ROLE", "OWNER_KIND",
                                           "OWNER_NAME", "EVENTS_PORT" };
    const cJSON *env = kobj_get(co, "env");
    const char *image = kobj_str(co, "image"), *backend, *mode;
    char lower[64];
    if (!image || !*image)
        return fail(e, "historyServerOptions.collectorOptions.image must be set");
    for (size_t i = 0; i < sizeof(managed) / sizeof(managed[0]); i++)
        if (collector_env(env, managed[i], &backend) >= 0)
            return fail(e, "historyServerOptions.collectorOptions.env must not contain %s: it is "
                           "managed by KubeRay and injected automatically into the collector "
                           "container", managed[i]);
    if (collector_env(env, "STORAGE_BACKEND", &backend) < 0 || !*backend)
        return fail(e, "STORAGE_BACKEND environment variable must be set with a literal string "
                       "value in historyServerOptions.collectorOptions.env");
    if (!strcasecmp(backend, "GCS") && !has_env_value(env, "GCS_BUCKET"))
        return fail(e, "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS");
    if (!strcasecmp(backend, "S3") && !has_env_value(env, "S3_REGION"))
        return fail(e, "S3_REGION environment variable must be set when STORAGE_BACKEND is S3");
    if (!strcasecmp(backend, "AZUREBLOB")) {
        size_t n = 0;
        collector_env(env, "AZURE_STORAGE_AUTH_MODE", &mode);
        while (*mode == ' ' || *mode == '\t' || *mode == '\n')
            mode++;
        for (; mode[n] && n < sizeof(lower) - 1; n++)
            lower[n] = (char)(mode[n] >= 'A' && mode[n] <= 'Z' ? mode[n] + 32 : mode[n]);
        while (n > 0 && (lower[n - 1] == ' ' || lower[n - 1] == '\t' || lower[n - 1] == '\n'))
            n--;
        lower[n] = '\0';
        if (!strcmp(lower, "connection_string")) {
            if (!has_env_value(env, "AZURE_STORAGE_CONNECTION_STRING"))
                return fail(e, "AZURE_STORAGE_CONNECTION_STRING environment variable must be set "
                               "when STORAGE_BACKEND is AZUREBLOB and AZURE_STORAGE_AUTH_MODE is "
                               "connection_string");
        } else if (!strcmp(lower, "workload_identity") || !strcmp(lower, "default")) {
            if (!has_env_value(env, "AZURE_STORAGE_ACCOUNT_URL"))
                return fail(e, "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when "
                               "STORAGE_BACKEND is AZUREBLOB and AZURE_STORAGE_AUTH_MODE is %s",
                            lower);
        } else if (!has_env_value(env, "AZURE_STORAGE_CONNECTION_STRING") &&
                   !has_env_value(env, "AZURE_STORAGE_ACCOUNT_URL")) {
            return fail(e, "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL "
                           "environment variable must be set when STORAGE_BACKEND is AZUREBLOB");
        }
    }
    if (!strcasecmp(backend, "ALIYUNOSS")) {
        static const char *const need[] = { "OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION" };
        for (size_t i = 0; i < 3; i++)
            if (!has_env_value(env, need[i]))
                return fail(e, "%s environment variable must be set when STORAGE_BACKEND is "
                               "ALIYUNOSS", need[i]);
    }
    return 0;
}

/* spec.historyServerOptions (RayClusterHistoryServer, alpha): the gate, the collector's
 * options, and no user container already named like the collector */
static int validate_history(const cJSON *rc, const struct rc_gates *g, struct verr *e)
{
    const cJSON *co = kobj_get(kobj_get(raycluster__spec(rc), "historyServerOptions"), "collectorOptions");
    const cJSON *grp, *c;
    int r;
    if (!g->history_server)
        return fail(e, "RayClusterHistoryServer feature gate is not enabled");
    if (!co || cJSON_IsNull(co))
        return fail(e, "historyServerOptions.collectorOptions must be set");
    if ((r = validate_collector(co, e)) < 0)
        return r;
    cJSON_ArrayForEach(c, kobj_get(kobj_get(kobj_get(raycluster__head_group(rc), "template"), "spec"),
                                   "containers"))
        if (kobj_str(c, "name") && !strcmp(kobj_str(c, "name"), RC_COLLECTOR_CONTAINER))
            return fail(e, "head pod template must not define a container with name '%s' when "
                           "history server collector options are enabled", RC_COLLECTOR_CONTAINER);
    cJSON_ArrayForEach(grp, kobj_get(raycluster__spec(rc), "workerGroupSpecs"))
        cJSON_ArrayForEach(c, kobj_get(kobj_get(kobj_get(grp, "template"), "spec"), "containers"))
            if (kobj_str(c, "name") && !strcmp(kobj_str(c, "name"), RC_COLLECTOR_CONTAINER))
                return fail(e, "worker group %s pod template must not define a container with "
                               "name '%s' when history server collector options are enabled",
                            group_name(grp), RC_COLLECTOR_CONTAINER);
    return 0;
}

/* rules of one direction given while the mode leaves that direction open */
static int netpol_rules_unused(const cJSON *rules, const char *what, const char *mode,
                               struct verr *e)
{
    bool in_open = !strcmp(mode, RC_NETPOL_DENY_EGRESS);
    bool out_open = !strcmp(mode, RC_NETPOL_DENY_INGRESS);
    if (in_open && cJSON_GetArraySize(kobj_get(rules, "ingressRules")) > 0)
        return fail(e, "networkPolicy.%s.ingressRules cannot be set when mode is \"%s\" "
                       "(ingress is not restricted)", what, mode);
    if (out_open && cJSON_GetArraySize(kobj_get(rules, "egressRules")) > 0)
        return fail(e, "networkPolicy.%s.egressRules cannot be set when mode is \"%s\" "
                       "(egress is not restricted)", what, mode);
    return 0;
}

/* validateNetworkPolicy: rules only for the directions the mode denies; worker group
 * names usable in a NetworkPolicy's name; per-group rules only for existing groups */
static int validate_netpol(const cJSON *rc, struct verr *e)
{
    const cJSON *np = kobj_get(raycluster__spec(rc), "networkPolicy"), *g, *h;
    const char *mode = rc_netpol_mode(rc), *bad;
    char what[300];
    int r;
    if ((r = netpol_rules_unused(kobj_get(np, "head"), "head", mode, e)) < 0 ||
        (r = netpol_rules_unused(kobj_get(np, "worker"), "worker", mode, e)) < 0)
        return r;
    cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs"))
        if ((bad = raycluster__dns1123_label_error(group_name(g))))
            return fail(e, "worker group name \"%s\" must be a valid DNS1123 label when "
                           "networkPolicy is enabled (it is embedded in the NetworkPolicy name): "
                           "[%s]", group_name(g), bad);
    cJSON_ArrayForEach(h, kobj_get(np, "workerGroups")) {
        const char *want = group_name(h);
        bool found = false;
        snprintf(what, sizeof(what), "workerGroups[\"%s\"]", want);
        if ((r = netpol_rules_unused(h, what, mode, e)) < 0)
            return r;
        cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs"))
            found = found || !strcmp(group_name(g), want);
        if (!found)
            return fail(e, "networkPolicy.workerGroups[\"%s\"] does not match any group name in "
                           "workerGroupSpecs", want);
    }
    return 0;
}

static const char *const tls_env[] = { "RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY",
                                       "RAY_TLS_CA_CERT" };

/* validateNoConflictingTLSVolumeMount */
static int tls_mount_conflict(const cJSON *c, const char *where, struct verr *e)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, kobj_get(c, "volumeMounts")) {
        const char *n = kobj_str(m, "name"), *p = kobj_str(m, "mountPath");
        if (n && !strcmp(n, RC_TLS_VOLUME))
            return fail(e, "cannot use volume mount named \"%s\" in %s when tlsOptions is set - "
                           "the operator manages TLS configuration automatically", RC_TLS_VOLUME,
                        where);
        if (p && !strcmp(p, "/etc/ray/tls"))
            return fail(e, "cannot use volume mount at path \"/etc/ray/tls\" in %s when "
                           "tlsOptions is set - the operator manages TLS configuration "
                           "automatically", where);
    }
    return 0;
}

/* validateTLSOptions: none of the env or mounts the operator adds, anywhere it adds them */
static int validate_tls(const cJSON *rc, struct verr *e)
{
    const cJSON *hc = raycluster__group_container0(raycluster__head_group(rc)), *g, *m;
    const cJSON *ao = kobj_get(raycluster__spec(rc), "autoscalerOptions");
    char where[300];
    int r;
    size_t i;
    if (hc) {
        for (i = 0; i < 4; i++)
            if (raycluster__env_exists(hc, tls_env[i]))
                return fail(e, "cannot set %s environment variable in head Pod when tlsOptions is "
                               "set - the operator manages TLS configuration automatically",
                            tls_env[i]);
        if ((r = tls_mount_conflict(hc, "head Pod", e)) < 0)
            return r;
    }
    cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs")) {
        const cJSON *wc = raycluster__group_container0(g);
        if (!wc)
            continue;
        for (i = 0; i < 4; i++)
            if (raycluster__env_exists(wc, tls_env[i]))
                return fail(e, "cannot set %s environment variable in worker group \"%s\" when "
                               "tlsOptions is set - the operator manages TLS configuration "
                               "automatically", tls_env[i], group_name(g));
        snprintf(where, sizeof(where), "worker group \"%s\"", group_name(g));
        if ((r = tls_mount_conflict(wc, where, e)) < 0)
            return r;
    }
    if (!cJSON_IsObject(ao))
        return 0;
    for (i = 0; i < 4; i++)
        if (raycluster__env_exists(ao, tls_env[i]))
            return fail(e, "cannot set %s environment variable in autoscalerOptions.env when "
                           "tlsOptions is set - the operator manages TLS configuration for the "
                           "autoscaler automatically", tls_env[i]);
    cJSON_ArrayForEach(m, kobj_get(ao, "volumeMounts")) {
        const char *n = kobj_str(m, "name"), *p = kobj_str(m, "mountPath");
        if (n && !strcmp(n, RC_TLS_VOLUME))
            return fail(e, "cannot use volume mount named \"%s\" in autoscalerOptions.volumeMounts "
                           "when tlsOptions is set - the operator manages TLS configuration "
                           "automatically", RC_TLS_VOLUME);
        if (p && !strcmp(p, "/etc/ray/tls"))
            return fail(e, "cannot use volume mount at path \"/etc/ray/tls\" in "
                           "autoscalerOptions.volumeMounts when tlsOptions is set - the operator "
                           "manages TLS configuration automatically");
    }
    return 0;
}

static int validate_spec(const cJSON *rc, const struct rc_gates *g, struct verr *e)
{
    const cJSON *spec = raycluster__spec(rc), *head = raycluster__head_group(rc);
    bool autoscaling = rc_autoscaling_enabled(rc);
    int r;
    if ((r = validate_admission(rc, e)) < 0)
        return r;
    if (containers_count(head) == 0)
        return fail(e, "headGroupSpec should have at least one container");
    if ((r = validate_group_resources("Head", head, e)) < 0 ||
        (r = validate_group_labels("Head", head, e)) < 0 ||
        (r = validate_workers(rc, autoscaling, e)) < 0 || (r = validate_gcs_ft(rc, g, e)) < 0 ||
        (r = validate_autoscaler(rc, autoscaling, e)) < 0)
        return r;
    if (field_set(spec, "historyServerOptions") && (r = validate_history(rc, g, e)) < 0)
        return r;
    if ((r = validate_auth(rc, e)) < 0)
        return r;
    if (field_set(spec, "networkPolicy") && !g->network_policy)
        return fail(e, "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to "
                       "be enabled");
    if (field_set(spec, "networkPolicy") && (r = validate_netpol(rc, e)) < 0)
        return r;
    if (field_set(spec, "tlsOptions") && !g->mtls)
        return fail(e, "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled");
    if (rc_tls_enabled(rc) && (r = validate_tls(rc, e)) < 0)
        return r;
    return 0;
}

static int validate_upgrade(const cJSON *rc, struct verr *e)
{
    const cJSON *us = kobj_get(raycluster__spec(rc), "upgradeStrategy");
    const char *t = kobj_str(us, "type");
    const char *creator = raycluster__creator_crd(rc);
    if (!t)
        return 0;
    if (strcmp(t, "Recreate") && strcmp(t, "None"))
        return fail(e, "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value %s is "
                       "invalid, valid options are Recreate or None", t);
    if (strcmp(creator, "RayCluster"))
        return fail(e, "upgradeStrategy cannot be set when RayCluster is created by %s", creator);
    return 0;
}

static bool condition_true(const cJSON *rc, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, raycluster__json_path(rc, "status", "conditions", NULL)) {
        const char *t = kobj_str(c, "type"), *s = kobj_str(c, "status");
        if (t && s && !strcmp(t, type) && !strcmp(s, "True"))
            return true;
    }
    return false;
}

static int validate_status(const cJSON *rc, struct verr *e)
{
    if (condition_true(rc, "RayClusterSuspending") && condition_true(rc, "RayClusterSuspended"))
        return fail(e, "invalid RayCluster State: rayv1.RayClusterSuspending and "
                       "rayv1.RayClusterSuspended conditions should not be both true");
    return 0;
}

int rc_validate(const cJSON *rc, const struct rc_gates *gates, struct rc_invalid *why)
{
    static const struct rc_gates all_off;
    const struct rc_gates *g = gates ? gates : &all_off;
    struct verr e = { { 0 } };
    const char *ns = raycluster__namespace(rc), *name = raycluster__name(rc);
    const char *reason = NULL, *fmt = NULL;
    if (!cJSON_IsObject(rc)) {
        reason = RC_REASON_INVALID_SPEC;
        fmt = "The RayCluster spec is invalid %s/%s: %s";
        snprintf(e.msg, sizeof(e.msg), "the object is not a RayCluster");
    } else if (validate_metadata(rc, &e) < 0) {
        reason = RC_REASON_INVALID_METADATA;
        fmt = "The RayCluster metadata is invalid %s/%s: %s";
    } else if (validate_spec(rc, g, &e) < 0) {
        reason = RC_REASON_INVALID_SPEC;
        fmt = "The RayCluster spec is invalid %s/%s: %s";
    } else if (validate_upgrade(rc, &e) < 0) {
        reason = RC_REASON_INVALID_SPEC;
        fmt = "The RayCluster UpgradeStrategy is invalid %s/%s: %s";
    } else if (validate_status(rc, &e) < 0) {
        reason = RC_REASON_INVALID_STATUS;
        fmt = "The RayCluster status is invalid %s/%s, %s";
    }
    if (!reason)
        return 0;
    if (why) {
        snprintf(why->reason, sizeof(why->reason), "%s", reason);
        /* Bounded: a long message is cut, never overflows. */
        snprintf(why->message, sizeof(why->message), fmt, ns, name, e.msg);
    }
    return -EINVAL;
}

int rc_validate_warning(const cJSON *rc, struct rc_invalid *why)
{
    const cJSON *g;
    char names[400] = "";
    size_t w = 0;
    if (!rc_autoscaling_enabled(rc) || !raycluster__autoscaling_v1_explicit(rc))
        return 0;
    cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs")) {
        const char *rp = kobj_str(raycluster__json_path(g, "template", "spec", NULL), "restartPolicy");
        if (rp && *rp && strcmp(rp, "Never") && w < sizeof(names))
            w += (size_t)snprintf(names + w, sizeof(names) - w, "%s%s", w ? ", " : "",
                                  group_name(g));
    }
    if (!names[0])
        return 0;
    if (why) {
        snprintf(why->reason, sizeof(why->reason), "%s", RC_REASON_INVALID_SPEC);
        snprintf(why->message, sizeof(why->message),
                 "RayCluster spec warning %s/%s: restartPolicy for worker groups [%s] should be "
                 "Never or unset when using autoscaler V1", raycluster__namespace(rc), raycluster__name(rc), names);
    }
    return 1;
}

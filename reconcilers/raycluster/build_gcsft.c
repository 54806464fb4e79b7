/*
 * build_gcsft.c - GCS fault tolerance with an external Redis: the head and
 * worker settings (configureGCSFaultTolerance, configureRedisFT in common/pod.go)
 * and the Redis cleanup Job KubeRay runs when such a cluster is deleted
 * (buildRedisCleanupJob in raycluster_controller.go).
 *
 * The embedded RocksDB backend sits behind a feature gate that is off by
 * default; rc_validate rejects it as KubeRay does, so it is not built here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "reconcilers/raycluster/internal.h"

bool rc_gcs_ft_enabled(const cJSON *rc)
{
    const char *a = kobj_annotation(rc, RC_ANN_FT_ENABLED);
    const cJSON *opts = kobj_get(rc_spec(rc), "gcsFaultToleranceOptions");
    return (a && !strcasecmp(a, "true")) || (opts && !cJSON_IsNull(opts));
}

/* {name, value?, valueFrom?} from a RedisCredential {value, valueFrom}. */
static void env_credential(struct rcb *b, cJSON *container, const char *name, const cJSON *cred)
{
    cJSON *e = cJSON_CreateObject();
    const char *v = kobj_str(cred, "value");
    if (!e) {
        b->err = -ENOMEM;
        return;
    }
    rcb_append(b, rcb_arr(b, container, "env"), e);
    rcb_set_str(b, e, "name", name);
    if (v && *v)
        rcb_set_str(b, e, "value", v);
    if (cJSON_IsObject(kobj_get(cred, "valueFrom")))
        rcb_set(b, e, "valueFrom", rcb_dup(b, kobj_get(cred, "valueFrom")));
}

void rc_gcs_ft_configure(struct rcb *b, const cJSON *rc, bool head, cJSON *pod_meta,
                         cJSON *container)
{
    bool ft = rc_gcs_ft_enabled(rc);
    const cJSON *opts = kobj_get(rc_spec(rc), "gcsFaultToleranceOptions");
    if (b->err)
        return;
    if (head)
        rcb_set_str(b, rcb_obj(b, pod_meta, "annotations"), RC_ANN_FT_ENABLED,
                    ft ? "true" : "false");
    if (!ft)
        return;
    if (!head) {
        /* Workers wait for a restarted GCS up to 600 s instead of Ray's 60 s. */
        if (!rc_env_exists(container, "RAY_gcs_rpc_server_reconnect_timeout_s"))
            rcb_env_value(b, container, "RAY_gcs_rpc_server_reconnect_timeout_s", "600");
        return;
    }
    /* Storage namespace: the cluster UID, the annotation, then the option, last wins. */
    const char *ns = kobj_str(kobj_get(rc, "metadata"), "uid");
    const char *ann = kobj_annotation(rc, RC_ANN_EXTERNAL_STORAGE_NS);
    const char *opt_ns = kobj_str(opts, "externalStorageNamespace");
    if (ann)
        ns = ann;
    if (opt_ns && *opt_ns)
        ns = opt_ns;
    rcb_set_str(b, rcb_obj(b, pod_meta, "annotations"), RC_ANN_EXTERNAL_STORAGE_NS, ns ? ns : "");
    if (!rc_env_exists(container, "RAY_external_storage_namespace"))
        rcb_env_value(b, container, "RAY_external_storage_namespace", ns ? ns : "");
    if (cJSON_IsObject(opts)) {
        const char *addr = kobj_str(opts, "redisAddress");
        rcb_env_value(b, container, "RAY_REDIS_ADDRESS", addr ? addr : "");
        if (kobj_get(opts, "redisUsername") && !cJSON_IsNull(kobj_get(opts, "redisUsername")))
            env_credential(b, container, "REDIS_USERNAME", kobj_get(opts, "redisUsername"));
        if (kobj_get(opts, "redisPassword") && !cJSON_IsNull(kobj_get(opts, "redisPassword")))
            env_credential(b, container, "REDIS_PASSWORD", kobj_get(opts, "redisPassword"));
    } else if (!rc_env_exists(container, "REDIS_PASSWORD")) {
        /* A password given inline in rayStartParams also reaches the cleanup Job. */
        const char *pw = kobj_str(kobj_get(rc_head_group(rc), "rayStartParams"), "redis-password");
        if (pw)
            rcb_env_value(b, container, "REDIS_PASSWORD", pw);
    }
}

#define CLEANUP_PREFIX \
    "echo \"To get more information about manually deleting the storage namespace in Redis and " \
    "removing the RayCluster's finalizer, please check " \
    "https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more " \
    "details.\" && python -c \"from ray._private.gcs_utils import cleanup_redis_storage; from " \
    "urllib.parse import urlparse; import os; import sys; redis_address = " \
    "os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; redis_address = redis_address if '://' in " \
    "redis_address else 'redis://' + redis_address; parsed = urlparse(redis_address); "
#define CLEANUP_WITH_USER \
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, " \
    "username=os.getenv('REDIS_USERNAME', parsed.username), password=os.getenv('REDIS_PASSWORD', " \
    "parsed.password or ''), use_ssl=parsed.scheme=='rediss', " \
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\""
#define CLEANUP_NO_USER \
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, " \
    "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), " \
    "use_ssl=parsed.scheme=='rediss', " \
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\""

cJSON *rc_build_redis_cleanup_job(const cJSON *rc, const struct rc_build_opts *o, int *err)
{
    struct rc_build_opts dflt;
    struct rcb b = { 0 };
    cJSON *pod, *job = NULL, *meta, *spec, *ray, *containers, *tmpl, *jm;
    char name[300], tmp[300];
    int e = 0;
    if (!rc_gcs_ft_enabled(rc))
        return NULL;
    if (!o) {
        rc_build_opts_default(&dflt);
        o = &dflt;
    }
    /* buildHeadPod, without the upgrade hash createHeadPod adds. */
    if (!(pod = rc_pod_build(rc, NULL, NULL, 0, 0, o, &e))) {
        if (err)
            *err = e;
        return NULL;
    }
    meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    rcb_set_str(&b, rcb_obj(&b, meta, "labels"), RC_LABEL_NODE_TYPE, RC_NODE_REDIS_CLEANUP);
    /* Only the Ray container. */
    containers = cJSON_GetObjectItemCaseSensitive(spec, "containers");
    while (cJSON_GetArraySize(containers) > 1)
        cJSON_DeleteItemFromArray(containers, 1);
    ray = cJSON_GetArrayItem(containers, 0);
    {
        const char *shell[3] = { "/bin/bash", o->enable_login_shell ? "-cl" : "-c", "--" };
        const char *arg = rc_env_exists(ray, "REDIS_USERNAME") ? CLEANUP_PREFIX CLEANUP_WITH_USER
                                                               : CLEANUP_PREFIX CLEANUP_NO_USER;
        rcb_set(&b, ray, "command", rcb_str_array(&b, shell, 3));
        rcb_set(&b, ray, "args", rcb_str_array(&b, &arg, 1));
    }
    cJSON_DeleteItemFromObjectCaseSensitive(ray, "livenessProbe");
    cJSON_DeleteItemFromObjectCaseSensitive(ray, "readinessProbe");
    rcb_env_value(&b, ray, "RAY_redis_db_connect_retries", "120");
    rcb_env_value(&b, ray, "RAY_redis_db_connect_wait_milliseconds", "500");
    rcb_set(&b, ray, "resources", rcb_fixed_resources(&b, "200m", "256Mi"));
    rcb_set_str(&b, spec, "restartPolicy", "Never");
    if (b.err)
        goto out;

    snprintf(tmp, sizeof(tmp), "%s-redis-cleanup", rc_name(rc));
    rc_check_label(tmp, name, sizeof(name));
    job = rcb_object(&b, "batch/v1", "Job", name, rc_namespace(rc), &jm);
    rcb_set(&b, jm, "labels", rcb_dup(&b, kobj_get(meta, "labels")));
    rcb_set(&b, jm, "annotations", rcb_dup(&b, kobj_get(meta, "annotations")));
    cJSON *js = rcb_obj(&b, job, "spec");
    rcb_set_num(&b, js, "backoffLimit", 0);
    rcb_set_num(&b, js, "activeDeadlineSeconds", 300);
    tmpl = rcb_obj(&b, js, "template");
    /* The template carries the head Pod's whole metadata, as KubeRay's does. */
    if (!b.err) {
        cJSON_DetachItemViaPointer(pod, meta);
        rcb_set(&b, tmpl, "metadata", meta);
        cJSON_DetachItemViaPointer(pod, spec);
        rcb_set(&b, tmpl, "spec", spec);
    }
    rcb_owner_ref(&b, job, rc);
out:
    cJSON_Delete(pod);
    if (b.err) {
        cJSON_Delete(job);
        if (err)
            *err = b.err;
        return NULL;
    }
    return job;
}

/*
 * build_cleanup.c - the Redis cleanup Job KubeRay runs when a RayCluster with GCS fault
 * tolerance on an external Redis is deleted (buildRedisCleanupJob in
 * raycluster_controller.go): the head Pod (build_pod.c) cut down to its Ray container,
 * running Ray's cleanup_redis_storage. Apart from build_gcsft.c because it is built
 * from the head Pod, and the head Pod's builder calls build_gcsft.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reconcilers/raycluster/internal.h"

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
    if (!(pod = raycluster__pod_build(rc, NULL, NULL, 0, 0, o, &e))) {
        if (err)
            *err = e;
        return NULL;
    }
    meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    raycluster__build_set_str(&b, raycluster__build_obj(&b, meta, "labels"), RC_LABEL_NODE_TYPE, RC_NODE_REDIS_CLEANUP);
    /* Only the Ray container. */
    containers = cJSON_GetObjectItemCaseSensitive(spec, "containers");
    while (cJSON_GetArraySize(containers) > 1)
        cJSON_DeleteItemFromArray(containers, 1);
    ray = cJSON_GetArrayItem(containers, 0);
    {
        const char *shell[3] = { "/bin/bash", o->enable_login_shell ? "-cl" : "-c", "--" };
        const char *arg = raycluster__env_exists(ray, "REDIS_USERNAME") ? CLEANUP_PREFIX CLEANUP_WITH_USER
                                                               : CLEANUP_PREFIX CLEANUP_NO_USER;
        raycluster__build_set(&b, ray, "command", raycluster__build_str_array(&b, shell, 3));
        raycluster__build_set(&b, ray, "args", raycluster__build_str_array(&b, &arg, 1));
    }
    cJSON_DeleteItemFromObjectCaseSensitive(ray, "livenessProbe");
    cJSON_DeleteItemFromObjectCaseSensitive(ray, "readinessProbe");
    raycluster__build_env_value(&b, ray, "RAY_redis_db_connect_retries", "120");
    raycluster__build_env_value(&b, ray, "RAY_redis_db_connect_wait_milliseconds", "500");
    raycluster__build_set(&b, ray, "resources", raycluster__build_fixed_resources(&b, "200m", "256Mi"));
    raycluster__build_set_str(&b, spec, "restartPolicy", "Never");
    if (b.err)
        goto out;

    snprintf(tmp, sizeof(tmp), "%s-redis-cleanup", raycluster__name(rc));
    raycluster__check_label(tmp, name, sizeof(name));
    job = raycluster__build_object(&b, "batch/v1", "Job", name, raycluster__namespace(rc), &jm);
    raycluster__build_set(&b, jm, "labels", raycluster__build_dup(&b, kobj_get(meta, "labels")));
    raycluster__build_set(&b, jm, "annotations", raycluster__build_dup(&b, kobj_get(meta, "annotations")));
    cJSON *js = raycluster__build_obj(&b, job, "spec");
    raycluster__build_set_num(&b, js, "backoffLimit", 0);
    raycluster__build_set_num(&b, js, "activeDeadlineSeconds", 300);
    tmpl = raycluster__build_obj(&b, js, "template");
    /* The template carries the head Pod's whole metadata, as KubeRay's does. */
    if (!b.err) {
        cJSON_DetachItemViaPointer(pod, meta);
        raycluster__build_set(&b, tmpl, "metadata", meta);
        cJSON_DetachItemViaPointer(pod, spec);
        raycluster__build_set(&b, tmpl, "spec", spec);
    }
    raycluster__build_owner_ref(&b, job, rc);
out:
    cJSON_Delete(pod);
    return raycluster__build_done(&b, job, err);
}

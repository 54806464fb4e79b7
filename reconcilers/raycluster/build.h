/*
 * build.h - what a RayCluster should look like in Kubernetes: the pure functions
 * that turn a RayCluster object into the Pods, Services and supporting objects
 * KubeRay v1.7 would create for it, and the validation KubeRay applies first.
 *
 * No I/O and no cache access: every function takes the RayCluster as stored
 * (a cJSON object, never modified) and returns new objects the caller owns
 * (cJSON_Delete). The reconcile loop (reconcile.c) compares these against what
 * the cache holds and writes the difference; the RayJob and RayService
 * controllers call the naming helpers to find a cluster's head Service.
 * Unit tests: tests/unit/test_rc_build.c against fixtures written from KubeRay's
 * documented behaviour. docs/raycluster.md.
 */
#ifndef RAYOP_RC_BUILD_H
#define RAYOP_RC_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Operator-wide settings that change generated objects (KubeRay flags/env). */
struct rc_build_opts {
    bool enable_init_container_injection;  /* ENABLE_INIT_CONTAINER_INJECTION (default true) */
    bool use_deterministic_head_name;      /* see KubeRay's head Pod naming (default: as v1.7) */
    char default_autoscaler_image[256];    /* autoscaler sidecar image when none is given */
    char cluster_domain[128];              /* CLUSTER_DOMAIN, default "cluster.local" */
};
void rc_build_opts_default(struct rc_build_opts *o);

/* Why a RayCluster is invalid: the condition reason KubeRay sets and a message. */
struct rc_invalid {
    char reason[64];
    char message[512];
};

/* 0 if rc passes KubeRay's validation (ValidateRayClusterSpec and friends),
 * -EINVAL with *why filled otherwise. */
int rc_validate(const cJSON *rc, struct rc_invalid *why);

/* ---- names ---------------------------------------------------------------- */

/* Head Service name (NAME-head-svc, shortened as KubeRay does; or the custom
 * headService's name). 0 or -ENAMETOOLONG. */
int rc_head_service_name(const cJSON *rc, char *out, size_t cap);
/* The headless Service name of multi-host worker groups. */
int rc_headless_service_name(const cJSON *rc, char *out, size_t cap);
/* The serve Service name (NAME-serve-svc). */
int rc_serve_service_name(const cJSON *rc, char *out, size_t cap);
/* The FQDN of the head Service: NAME.NS.svc.DOMAIN. */
int rc_head_service_fqdn(const cJSON *rc, const struct rc_build_opts *o, char *out, size_t cap);
/* Dashboard port of the head (the "dashboard" container port, default 8265). */
int rc_dashboard_port(const cJSON *rc);

/* ---- objects ---------------------------------------------------------------- */

/* Each returns a new object (caller owns) or NULL when the object is not wanted
 * (serve Service not asked, no multi-host group, autoscaling off ...). On an
 * internal error (out of memory) they return NULL and set *err < 0 when err is
 * given. Owner references (controller=true) to rc are set on every object. */
cJSON *rc_build_head_service(const cJSON *rc, const struct rc_build_opts *o, int *err);
cJSON *rc_build_serve_service(const cJSON *rc, const struct rc_build_opts *o, int *err);
cJSON *rc_build_headless_service(const cJSON *rc, const struct rc_build_opts *o, int *err);

/* The head Pod. Its name is set (or generateName, as KubeRay does). */
cJSON *rc_build_head_pod(const cJSON *rc, const struct rc_build_opts *o, int *err);
/* A worker Pod of group (an element of spec.workerGroupSpecs). For multi-host
 * groups (numOfHosts > 1) replica_name names the replica and host_index is the
 * host's index in it (labels ray.io/worker-group-replica-name/-index,
 * ray.io/replica-host-index); for single-host groups pass NULL and 0. */
cJSON *rc_build_worker_pod(const cJSON *rc, const cJSON *group, const char *replica_name,
                           int replica_index, int host_index, const struct rc_build_opts *o,
                           int *err);

/* Autoscaler RBAC (enableInTreeAutoscaling): ServiceAccount, Role, RoleBinding.
 * 0 with all three set, 0 with all NULL when autoscaling is off, or -errno. */
int rc_build_autoscaler_rbac(const cJSON *rc, cJSON **sa, cJSON **role, cJSON **binding);

/* GCS fault tolerance: true when the cluster uses it (gcsFaultToleranceOptions or
 * the ray.io/ft-enabled annotation), and the Redis cleanup Job run on deletion. */
bool rc_gcs_ft_enabled(const cJSON *rc);
cJSON *rc_build_redis_cleanup_job(const cJSON *rc, const struct rc_build_opts *o, int *err);

/* The `ray start` command KubeRay generates from rayStartParams for the head
 * (group NULL) or a worker group; what KUBERAY_GEN_RAY_START_CMD carries.
 * Caller frees. NULL on out of memory. */
char *rc_build_ray_start_cmd(const cJSON *rc, const cJSON *group, const struct rc_build_opts *o);

/* Desired resources of the whole cluster as KubeRay's status reports them
 * (desiredCPU, desiredMemory, desiredGPU, desiredTPU), as quantity strings. */
struct rc_resources {
    char cpu[32], memory[32], gpu[32], tpu[32];
};
int rc_desired_resources(const cJSON *rc, struct rc_resources *out);

#endif

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
 * Unit tests: tests/unit/test_rc_build.c, test_rc_build_options.c, test_rc_validate.c
 * (expected values and fixtures written from KubeRay's behaviour; every sample);
 * fuzz: tests/fuzz/fuzz_rc_build.c. docs/raycluster.md, section Objects.
 */
#ifndef RAYOP_RC_BUILD_H
#define RAYOP_RC_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* ---- KubeRay v1.7 names the reconcile loop shares (utils/constant.go) ---- */

#define RC_KUBERAY_VERSION            "v1.7.0"
#define RC_LABEL_CLUSTER              "ray.io/cluster"
#define RC_LABEL_NODE_TYPE            "ray.io/node-type"
#define RC_LABEL_GROUP                "ray.io/group"
#define RC_LABEL_IS_RAY_NODE          "ray.io/is-ray-node"
#define RC_LABEL_IDENTIFIER           "ray.io/identifier"
#define RC_LABEL_SERVE                "ray.io/serve"
#define RC_LABEL_HEADLESS_SVC         "ray.io/headless-worker-svc"
#define RC_LABEL_REPLICA_NAME         "ray.io/worker-group-replica-name"
#define RC_LABEL_REPLICA_INDEX        "ray.io/worker-group-replica-index"
#define RC_LABEL_HOST_INDEX           "ray.io/replica-host-index"
#define RC_LABEL_ORIGINATED_CR_NAME   "ray.io/originated-from-cr-name"
#define RC_LABEL_ORIGINATED_CRD       "ray.io/originated-from-crd"
#define RC_LABEL_APP_NAME             "app.kubernetes.io/name"
#define RC_LABEL_CREATED_BY           "app.kubernetes.io/created-by"
#define RC_APP_NAME                   "kuberay"
#define RC_CREATED_BY                 "kuberay-operator"
#define RC_NODE_HEAD                  "head"
#define RC_NODE_WORKER                "worker"
#define RC_NODE_REDIS_CLEANUP         "redis-cleanup"
#define RC_HEAD_GROUP_NAME            "headgroup"
#define RC_ANN_FT_ENABLED             "ray.io/ft-enabled"
#define RC_ANN_EXTERNAL_STORAGE_NS    "ray.io/external-storage-namespace"
#define RC_ANN_GCS_FT_DELETION_TIMEOUT "ray.io/gcs-ft-deletion-timeout"
#define RC_ANN_OVERWRITE_CMD          "ray.io/overwrite-container-cmd"
#define RC_ANN_ENABLE_SERVE_SERVICE   "ray.io/enable-serve-service"
#define RC_ANN_UPGRADE_HASH           "ray.io/upgrade-strategy-recreate-hash"
#define RC_ANN_KUBERAY_VERSION        "ray.io/kuberay-version"
#define RC_ANN_DISABLE_HEAD_RESTART   "ray.io/disable-provisioned-head-restart"
#define RC_FINALIZER_GCS_FT           "ray.io/gcs-ft-redis-cleanup-finalizer"
#define RC_MANAGED_BY_KUBERAY         "ray.io/kuberay-operator"
#define RC_MANAGED_BY_MULTIKUEUE      "kueue.x-k8s.io/multikueue"
#define RC_GCS_FT_DELETION_TIMEOUT_S  300   /* default of ray.io/gcs-ft-deletion-timeout */
#define RC_MAX_NAME_LEN               53    /* 63 - len("-serve-svc") */
#define RC_RAY_CONTAINER              0     /* the Ray container is containers[0] */
#define RC_AUTOSCALER_CONTAINER       "autoscaler"
#define RC_WAIT_GCS_CONTAINER         "wait-gcs-ready"
#define RC_COLLECTOR_CONTAINER        "ray-history-collector"  /* CollectorContainerName */

/* Event / condition reasons KubeRay uses when validation fails (K8sEventType). */
#define RC_REASON_INVALID_METADATA    "InvalidRayClusterMetadata"
#define RC_REASON_INVALID_SPEC        "InvalidRayClusterSpec"
#define RC_REASON_INVALID_STATUS      "InvalidRayClusterStatus"

/* Operator-wide settings that change generated objects (KubeRay flags/env). */
struct rc_build_opts {
    bool enable_init_container_injection;  /* ENABLE_INIT_CONTAINER_INJECTION (default true) */
    bool use_deterministic_head_name;      /* see KubeRay's head Pod naming (default: as v1.7) */
    char default_autoscaler_image[256];    /* autoscaler sidecar image when none is given */
    char cluster_domain[128];              /* CLUSTER_DOMAIN, default "cluster.local" */
    bool enable_probes_injection;          /* ENABLE_PROBES_INJECTION (default true) */
    bool enable_head_cluster_ip_service;   /* ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE (default false) */
    bool enable_login_shell;               /* ENABLE_LOGIN_SHELL: bash -lc (default false) */
    /* KubeRay's operator configuration (config file), borrowed, NULL when unset:
     * containers appended to head / worker Pods, env vars added to the Ray container
     * unless it sets them, annotations and labels added to every Ray Pod unless present. */
    const cJSON *head_sidecar_containers;  /* array of Container */
    const cJSON *worker_sidecar_containers;/* array of Container */
    const cJSON *default_container_envs;   /* array of EnvVar */
    const cJSON *default_pod_annotations;  /* object of strings */
    const cJSON *default_pod_labels;       /* object of strings */
    int batch_scheduler;                   /* enum batchsched_kind: --batch-scheduler (0: none) */
};
void rc_build_opts_default(struct rc_build_opts *o);
/* Defaults, then KubeRay's operator environment variables (ENABLE_INIT_CONTAINER_
 * INJECTION, ENABLE_DETERMINISTIC_HEAD_POD_NAME, CLUSTER_DOMAIN, ENABLE_PROBES_INJECTION,
 * ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE, ENABLE_LOGIN_SHELL) read as KubeRay reads them. */
void rc_build_opts_from_env(struct rc_build_opts *o);

/* Why a RayCluster is invalid: the condition reason KubeRay sets and a message. */
struct rc_invalid {
    char reason[64];
    char message[1024];
};

/* The KubeRay feature gates (--feature-gates, pkg/features/features.go) that
 * change what validation accepts. All four are alpha and off by default; a
 * NULL gates pointer means all off. With a gate off, a spec that needs it is
 * rejected with KubeRay's message. */
struct rc_gates {
    bool network_policy;       /* RayClusterNetworkPolicy: spec.networkPolicy */
    bool mtls;                 /* RayClusterMTLS: spec.tlsOptions */
    bool gcs_ft_embedded;      /* GCSFaultToleranceEmbeddedStorage: backend rocksdb */
    bool history_server;       /* RayClusterHistoryServer: spec.historyServerOptions */
};

/* 0 if rc passes KubeRay's validation (ValidateRayClusterSpec and friends),
 * -EINVAL with *why filled otherwise. Checked in KubeRay's order: metadata
 * (reason InvalidRayClusterMetadata), spec and upgradeStrategy (InvalidRayClusterSpec),
 * status (InvalidRayClusterStatus; KubeRay requeues this one after 2 s, the others
 * wait for the next change). why->message is the Warning Event's message exactly
 * as KubeRay words it ("The RayCluster spec is invalid NS/NAME: ...").
 * Call rc_managed_elsewhere first: KubeRay skips such clusters before validating. */
int rc_validate(const cJSON *rc, const struct rc_gates *gates, struct rc_invalid *why);
/* validation.IsDNS1035Label: 0, or -EINVAL with "[...]" (Go's %v of its errors) in msg. */
int rc_dns1035_check(const char *name, char *msg, size_t cap);
/* The warning KubeRay records but does not stop on (autoscaler v1 with a worker
 * restartPolicy other than Never): 1 with *why filled, 0 when there is none. */
int rc_validate_warning(const cJSON *rc, struct rc_invalid *why);
/* True when spec.managedBy names another controller (KubeRay skips the cluster). */
bool rc_managed_elsewhere(const cJSON *rc);

/* ---- spec helpers --------------------------------------------------------- */

bool rc_autoscaling_enabled(const cJSON *rc);
/* GetWorkerGroupDesiredReplicas: suspend -> 0; replicas clamped to [min, max];
 * times numOfHosts. */
int64_t rc_worker_desired_replicas(const cJSON *group);
/* The head's GCS port (rayStartParams.port, default 6379). */
int rc_head_port(const cJSON *rc);
/* ray.io/gcs-ft-deletion-timeout in seconds (default 300). */
int rc_gcs_ft_deletion_timeout(const cJSON *rc);
/* The spec hash stored in the head Pod's ray.io/upgrade-strategy-recreate-hash
 * (spec without replicas/min/max/workersToDelete/tolerations/schedulingGates/
 * upgradeStrategy; base32hex of SHA-1). out needs 33 bytes. 0 or -ENOMEM. */
int rc_spec_hash(const cJSON *rc, char *out, size_t cap);

/* ---- names ---------------------------------------------------------------- */

/* Head Service name (NAME-head-svc, or the custom headService's name). KubeRay v1.7
 * does not shorten it: it limits cluster names to 53 characters (rc_validate).
 * 0 or -ENAMETOOLONG when it does not fit cap. */
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
 * error they return NULL and set *err < 0 when err is given: -ENOMEM, -EINVAL
 * when the group has no Ray container, -ENOENT from rc_build_serve_service when
 * it is asked for but the head lists no serve port (KubeRay fails the reconcile).
 * Owner references (controller=true) to rc are set on every object. o may be NULL
 * (rc_build_opts_default). */
cJSON *rc_build_head_service(const cJSON *rc, const struct rc_build_opts *o, int *err);
cJSON *rc_build_serve_service(const cJSON *rc, const struct rc_build_opts *o, int *err);
cJSON *rc_build_headless_service(const cJSON *rc, const struct rc_build_opts *o, int *err);

/* The head Pod: generateName NAME-head- (name NAME-head with use_deterministic_head_name),
 * with the ray.io/upgrade-strategy-recreate-hash and ray.io/kuberay-version annotations
 * createHeadPod adds. */
cJSON *rc_build_head_pod(const cJSON *rc, const struct rc_build_opts *o, int *err);
/* A worker Pod of group (an element of spec.workerGroupSpecs). replica_index becomes
 * ray.io/worker-group-replica-index on every worker (RayMultiHostIndexing). For
 * multi-host groups (numOfHosts > 1) replica_name names the replica and host_index is
 * the host's index in it (ray.io/worker-group-replica-name, ray.io/replica-host-index);
 * single-host groups ignore both (pass NULL and 0). */
cJSON *rc_build_worker_pod(const cJSON *rc, const cJSON *group, const char *replica_name,
                           int replica_index, int host_index, const struct rc_build_opts *o,
                           int *err);

/* Autoscaler RBAC (enableInTreeAutoscaling): ServiceAccount, Role, RoleBinding.
 * 0 with all three set, 0 with all NULL when autoscaling is off, or -errno.
 * When the head template names its own serviceAccountName, *sa is NULL: KubeRay
 * expects the user to create that ServiceAccount (the binding still names it). */
int rc_build_autoscaler_rbac(const cJSON *rc, cJSON **sa, cJSON **role, cJSON **binding);

/* The dashboard Ingress of headGroupSpec.enableIngress (NULL when off): CheckName(NAME-head-
 * ingress), to the head Service's dashboard port, path "/" Prefix unless ingressOptions say
 * otherwise, host and tls from ingressOptions, every cluster annotation but
 * kubernetes.io/ingress.class, which becomes spec.ingressClassName. */
cJSON *rc_build_head_ingress(const cJSON *rc, const struct rc_build_opts *o, int *err);
/* The OpenShift Route that replaces that Ingress when the API server serves OpenShift's
 * groups (BuildRouteForHeadService; NULL when enableIngress is off): CheckRouteName(NAME-
 * head-route) (cut to 51 - len(namespace)), to the head Service with weight 100, target
 * port the dashboard port, wildcardPolicy None, every cluster annotation, owned. */
cJSON *rc_build_head_route(const cJSON *rc, int *err);

/* The token Secret KubeRay creates for authOptions.mode "token" (no secretName, no
 * enableK8sTokenAuth): the same condition under which the Pods reference it
 * (raycluster__auth_token_enabled). Name CheckName(NAME) ("" in out when no Secret is wanted);
 * the token is base64 of the n random bytes the caller draws (KubeRay: 32 from
 * crypto/rand), stored as data.auth_token (so base64 once more, as the API server
 * stores KubeRay's stringData). NULL when not wanted. A credential: never log the
 * object. The reconcile loop (reconcile.c) creates it with this builder. */
int rc_auth_secret_name(const cJSON *rc, char *out, size_t cap);
/* The Secret whose auth_token the operator sends to rc's dashboard and the RayJob
 * submitter reads (KubeRay: authOptions.mode "token" -> secretName, else CheckName(NAME));
 * "" when the cluster does not use token auth. */
int rc_auth_token_secret(const cJSON *rc, char *out, size_t cap);
/* Adds RAY_AUTH_MODE / RAY_AUTH_TOKEN (or the K8s token auth env and mount) to a
 * container that talks to rc's Ray, as KubeRay's SetContainerTokenAuthEnvVars (used for
 * the RayJob submitter). No-op unless authOptions.mode is "token". 0 or -ENOMEM. */
int rc_auth_env_for(const cJSON *rc, cJSON *container);
cJSON *rc_build_auth_secret(const cJSON *rc, const unsigned char *token, size_t n, int *err);

/* spec.networkPolicy (gate RayClusterNetworkPolicy), as KubeRay's NetworkPolicyController:
 * an array [NAME-head, NAME-workers-GROUP...] of NetworkPolicies (owned, labelled
 * ray.io/cluster, ray.io/group, app.kubernetes.io/name and created-by), NULL when the
 * field is absent (and *err < 0 on out of memory). rc_netpol_mode is the mode with its
 * default; rc_netpol_normalize gives a port without protocol TCP, as the API server does. */
#define RC_NETPOL_DENY_ALL     "DenyAll"
#define RC_NETPOL_DENY_INGRESS "DenyAllIngress"
#define RC_NETPOL_DENY_EGRESS  "DenyAllEgress"
cJSON *rc_build_network_policies(const cJSON *rc, int *err);
const char *rc_netpol_mode(const cJSON *rc);
void rc_netpol_normalize(cJSON *np);

/* mTLS (tlsOptions.enabled, gate RayClusterMTLS), as KubeRay's RayClusterMTLSController and
 * configureTLS. rc_tls_name names its objects (ray-head-cert-NAME, NAME-ca-secret-UID8...).
 * rc_build_tls_objects returns [self-signed Issuer, CA Certificate, CA Issuer, head
 * Certificate, worker Certificate], owned and labelled as KubeRay makes them, the leaf
 * Certificates' ipAddresses the given Pod IPs with 127.0.0.1, sorted; NULL when TLS is off.
 * The Pod builders add the ray-tls volume, env and mounts and the wait-for-tls-ip-san init
 * container themselves. */
#define RC_TLS_VOLUME         "ray-tls"
#define RC_TLS_WAIT_CONTAINER "wait-for-tls-ip-san"
enum rc_tls_obj {
    RC_TLS_SELFSIGNED_ISSUER, RC_TLS_CA_CERT, RC_TLS_CA_ISSUER, RC_TLS_HEAD_CERT,
    RC_TLS_WORKER_CERT, RC_TLS_HEAD_SECRET, RC_TLS_WORKER_SECRET, RC_TLS_CA_SECRET,
};
bool rc_tls_enabled(const cJSON *rc);
int rc_tls_name(const cJSON *rc, enum rc_tls_obj which, char *out, size_t cap);
cJSON *rc_build_tls_objects(const cJSON *rc, const struct rc_build_opts *o,
                            const char *const *head_ips, size_t nhead,
                            const char *const *worker_ips, size_t nworker, int *err);

/* GCS fault tolerance: true when the cluster uses it (gcsFaultToleranceOptions or
 * the ray.io/ft-enabled annotation), and the Redis cleanup Job run on deletion. */
bool rc_gcs_ft_enabled(const cJSON *rc);
/* The embedded RocksDB backend (gcsFaultToleranceOptions.backend rocksdb, gate
 * GCSFaultToleranceEmbeddedStorage): the head gets RAY_gcs_storage=rocksdb,
 * RAY_gcs_storage_path=/data/gcs and the volume gcs-storage mounted there, on the claim
 * rc_gcs_pvc_name names (storage.claimName, else NAME-gcs-pvc). rc_build_gcs_pvc is the
 * PVC KubeRay creates for it (BuildGCSStoragePVC): NULL when the backend is not rocksdb
 * or the user brings the claim; owned by the cluster unless storage.deletionPolicy is
 * Retain (rc_gcs_pvc_retain). rc_gcs_pvc_drift writes what an existing PVC differs in
 * (size, an explicitly asked class, access modes) as KubeRay words it, "" when nothing. */
#define RC_ENV_GCS_STORAGE      "RAY_gcs_storage"
#define RC_ENV_GCS_STORAGE_PATH "RAY_gcs_storage_path"
#define RC_GCS_STORAGE_VOLUME   "gcs-storage"
#define RC_GCS_STORAGE_PATH     "/data/gcs"
bool rc_gcs_ft_embedded(const cJSON *rc);
int rc_gcs_pvc_name(const cJSON *rc, char *out, size_t cap);
bool rc_gcs_pvc_retain(const cJSON *rc);
cJSON *rc_build_gcs_pvc(const cJSON *rc, int *err);
void rc_gcs_pvc_drift(const cJSON *want, const cJSON *have, char *out, size_t cap);
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
/* resource.Quantity.String() of milli thousandths of a unit; binary when the
 * quantity it came from had a binary suffix ("Gi"). */
void rc_quantity_string(__int128 milli, bool binary, char *out, size_t cap);

#endif

/*
 * internal.h - what the RayCluster reconcile files share (reconcile.c,
 * reconcile_pods.c, reconcile_delete.c, metrics.c); not for other modules.
 */
#ifndef RAYOP_RAYCLUSTER_INTERNAL_H
#define RAYOP_RAYCLUSTER_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "kobj/kobj.h"

/* KubeRay's requeue periods (DefaultRequeueDuration, RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV). */
#define RC_REQUEUE_SHORT_MS 2000u
#define RC_REQUEUE_IDLE_MS 300000u
#define RC_REQUEUE_HEAD_GONE_MS 10000u

/* One reconcile of one RayCluster. */
struct rc_run {
    struct host_ctx *ctx;
    cJSON *rc;                  /* the RayCluster as cached (owned) */
    const char *ns, *name, *uid;
    struct rc_build_opts bo;
    cJSON *pods;                /* Pods labelled ray.io/cluster=NAME (cache, owned) */
    cJSON *live;                /* the same from the API server, fetched before creates (owned) */
    bool live_skipped;          /* the Pod LIST was not needed (reconcile_pods.c fence) */
    enum rc_err err;            /* what the pod reconcile ran into */
    char err_msg[512];
    uint64_t requeue_ms;        /* > 0: ask for a requeue after this long */
    bool gone;                  /* the API server has no such cluster (found before creating) */
    bool tls_ready;             /* raycluster__tls_secrets_ready passed in this reconcile */
};

/* Records the first error of the reconcile (later ones keep the first, as
 * KubeRay stops at the first). Returns -EIO for `return raycluster__fail(...)`. Here, not
 * in reconcile.c, so that the steps (reconcile_pods.c, reconcile_delete.c) do not
 * call back up into the file that drives them. */
static inline __attribute__((format(printf, 3, 4)))
int raycluster__fail(struct rc_run *r, enum rc_err e, const char *fmt, ...)
{
    if (r->err == RC_ERR_NONE) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
        va_end(ap);
        r->err = e;
    }
    return -EIO;
}

/* reconcile_pods.c: head and worker Pods (KubeRay's reconcilePods). 0 or the
 * raycluster__fail() error; never writes status. */
int raycluster__reconcile_pods(struct rc_run *r);
bool raycluster__pod_terminating(const cJSON *pod);

/* reconcile_delete.c: spec.managedBy, GCS FT finalizer and deletion. 1 when
 * the reconcile is finished (res filled), 0 to go on, or -errno. */
int raycluster__reconcile_finalizer(struct rc_run *r, struct host_result *res);

/* reconcile_netpol.c: spec.networkPolicy's NetworkPolicies (gate RayClusterNetworkPolicy).
 * 0, or < 0 with what went wrong in msg; the cluster's status is not touched. */
int raycluster__reconcile_netpol(struct rc_run *r, char *msg, size_t cap);

/* reconcile_tls.c: tlsOptions (gate RayClusterMTLS). raycluster__tls_precheck: 1 when the cluster
 * asks for TLS and cert-manager is not served (refused, res filled), 0 to go on.
 * raycluster__reconcile_tls: the cert-manager PKI; 0, or < 0 with msg set (the status is not
 * touched). raycluster__tls_secrets_ready: before creating Pods, 0 when both leaf certificates are
 * ready and their Secrets complete, else raycluster__fail(). */
int raycluster__tls_precheck(struct rc_run *r, struct host_result *res);
int raycluster__reconcile_tls(struct rc_run *r, char *msg, size_t cap);
int raycluster__tls_secrets_ready(struct rc_run *r);

/* platform.c: what start-up found (1/0), asked now when the start hook did not run. */
int raycluster__platform_openshift(struct rc_run *r);
int raycluster__platform_cert_manager(struct rc_run *r);

/* metrics.c: provisioned-duration bookkeeping. */
void raycluster__metrics_observe_provisioned(const cJSON *rc, const cJSON *old_status,
                                             const cJSON *new_status);
void raycluster__metrics_forget(const char *ns, const char *name);

/* Kubernetes resources the controller writes that kube/ has no constant for. */
extern const struct kube_resource RC_RES_SERVICEACCOUNTS, RC_RES_ROLES, RC_RES_ROLEBINDINGS;

/*
 * ---- internals shared by the RayCluster object builders (build_*.c, validate.c); not part of
 * the module's public face (build.h).  Builders mutate a fresh cJSON tree. Every allocation
 * failure is recorded in a sticky error (struct rcb) instead of being checked at each of
 * hundreds of call sites: helpers become no-ops once it is set, and each public function
 * checks it once before handing the object to its caller.
 */

/* Sticky build error: 0 or the first negative errno. */
struct rcb {
    int err;
};

/* ---- reading the RayCluster (never modified) ---- */

const cJSON *raycluster__json_path(const cJSON *o, ...);                     /* NULL-terminated keys */
bool raycluster__json_bool(const cJSON *o, const char *key, bool dflt);
/* Integer member (number, in int32 range); dflt when absent or not a number. */
int64_t raycluster__json_int(const cJSON *o, const char *key, int64_t dflt);
/* s as a decimal int32, as strconv.ParseInt(s, 10, 32) reads a flag or an annotation:
 * 0, or -EINVAL (empty, not a number, out of range). */
int raycluster__parse_int32(const char *s, int *out);
bool raycluster__json_has_int(const cJSON *o, const char *key);

const char *raycluster__name(const cJSON *rc);                           /* "" when absent */
const char *raycluster__namespace(const cJSON *rc);                      /* "default" when absent */
const cJSON *raycluster__spec(const cJSON *rc);
const cJSON *raycluster__head_group(const cJSON *rc);
const cJSON *raycluster__group_container0(const cJSON *group);           /* template.spec.containers[0] */
bool raycluster__autoscaling_v2(const cJSON *rc);
bool raycluster__autoscaling_v1_explicit(const cJSON *rc);
bool raycluster__auth_token_enabled(const cJSON *rc);
bool raycluster__k8s_token_auth(const cJSON *rc);
/* CRD type that created the cluster (ray.io/originated-from-crd label):
 * "RayCluster" (default), "RayJob" or "RayService". */
const char *raycluster__creator_crd(const cJSON *rc);
/* numOfHosts with the CRD default of 1. */
int64_t raycluster__group_num_hosts(const cJSON *group);
bool raycluster__env_exists(const cJSON *container, const char *name);
const cJSON *raycluster__env_find(const cJSON *container, const char *name);

/* ---- building ---- */

cJSON *raycluster__build_obj(struct rcb *b, cJSON *parent, const char *key);   /* get or create object */
cJSON *raycluster__build_arr(struct rcb *b, cJSON *parent, const char *key);   /* get or create array */
void raycluster__build_set_str(struct rcb *b, cJSON *o, const char *key, const char *val);
void raycluster__build_set_num(struct rcb *b, cJSON *o, const char *key, double val);
void raycluster__build_set_bool(struct rcb *b, cJSON *o, const char *key, bool val);
void raycluster__build_set(struct rcb *b, cJSON *o, const char *key, cJSON *val); /* takes val */
cJSON *raycluster__build_dup(struct rcb *b, const cJSON *src);                  /* NULL src -> {} */
/* A new {apiVersion, kind, metadata: {name, namespace}}; *meta gets its metadata. */
cJSON *raycluster__build_object(struct rcb *b, const char *api_version, const char *kind, const char *name,
                                const char *ns, cJSON **meta);
void raycluster__build_append(struct rcb *b, cJSON *arr, cJSON *item);          /* takes item */
/* The end of every builder: obj when the build went well; else obj is deleted, *err
 * (when err is set) gets the first error and the result is NULL. */
cJSON *raycluster__build_done(const struct rcb *b, cJSON *obj, int *err);
/* A new empty object appended to the array parent[key] (created when missing); NULL
 * after an error. */
cJSON *raycluster__build_push(struct rcb *b, cJSON *parent, const char *key);
/* Appends {name, mountPath[, readOnly: true]} to the container's volumeMounts, in
 * that key order (the order of corev1.VolumeMount's fields); NULL after an error. */
cJSON *raycluster__build_mount(struct rcb *b, cJSON *container, const char *name, const char *path,
                               bool read_only);
cJSON *raycluster__build_str_array(struct rcb *b, const char *const *vals, size_t n);
/* Go's %v of a []string (a JSON array of strings): "[a b c]", cut to cap. */
void raycluster__go_strings_text(const cJSON *arr, char *out, size_t cap);
/* Appends {"name":..,"value":..} / {"name":..,"valueFrom":{"fieldRef":{"fieldPath":..}}}. */
void raycluster__build_env_value(struct rcb *b, cJSON *container, const char *name, const char *value);
void raycluster__build_env_fieldref(struct rcb *b, cJSON *container, const char *name, const char *path);
/* ownerReferences: [{RayCluster rc, controller, blockOwnerDeletion}] on obj's metadata. */
void raycluster__build_owner_ref(struct rcb *b, cJSON *obj, const cJSON *rc);
/* {cpu, memory} limits and requests, equal: the fixed sizes of injected containers. */
cJSON *raycluster__build_fixed_resources(struct rcb *b, const char *cpu, const char *mem);

/* ---- names (utils.CheckName / CheckLabel) ---- */

/* Keeps the last 50 (CheckName) or 63 (CheckLabel) characters and replaces a
 * leading digit (CheckName) or punctuation with 'r'. out has cap bytes. */
void raycluster__check_name(const char *s, char *out, size_t cap);
void raycluster__check_label(const char *s, char *out, size_t cap);

/* ---- quantities ---- */

/* A container resource value (string or number) in thousandths of its unit. */
int raycluster__quantity_milli(const cJSON *v, int64_t *milli);
/* Quantity.Value(): rounded up to a whole unit. */
int64_t raycluster__milli_ceil(int64_t milli);

/* ---- rayStartParams ---- */

struct rc_kv {
    char *k, *v;
};
struct rc_params {
    struct rc_kv *kv;
    size_t n, cap;
};
/* Loads a rayStartParams object (string values; numbers and booleans as text). */
int raycluster__params_load(struct rc_params *p, const cJSON *map);
const char *raycluster__params_get(const struct rc_params *p, const char *k);
int raycluster__params_set(struct rc_params *p, const char *k, const char *v);
void raycluster__params_free(struct rc_params *p);
/* convertParamMap: keys sorted, " --k " for true, nothing for false, " --k=v " else. */
char *raycluster__params_render(const struct rc_params *p);

/* The complete rayStartParams of a node (head: group NULL) as BuildPod sees them,
 * before the container resources are folded in: top-level resources/labels,
 * defaults (dashboard-host, metrics-export-port, block, dashboard-agent-listen-port,
 * address), no-monitor, GCS FT redis parameters. */
int raycluster__params_for_node(const cJSON *rc, const cJSON *group, const struct rc_build_opts *o,
                                struct rc_params *p);
/* generateRayStartCommand: folds num-cpus/memory/num-gpus/accelerators from the
 * container's resources into p and renders "ray start [--head] ...". Caller frees. */
char *raycluster__ray_start_from_params(struct rc_params *p, bool head, const cJSON *container);

/* utils.IsGPUResourceKey (build_util.c). */
bool raycluster__is_gpu_resource(const char *key);

/* Head port string: rayStartParams.port or "6379". */
void raycluster__head_port_str(const cJSON *rc, char *out, size_t cap);

/* ---- pods ---- */

/* BuildPod's common tail on a pod whose metadata/template prelude is done. */
cJSON *raycluster__pod_build(const cJSON *rc, const cJSON *group, const char *replica_name,
                             int replica_index, int host_index, const struct rc_build_opts *o, int *err);
/* The autoscaler sidecar container (BuildAutoscalerContainer + overrides). */
void raycluster__autoscaler_container(struct rcb *b, const cJSON *rc, const struct rc_build_opts *o,
                                      cJSON *pod_spec);
/* configureGCSFaultTolerance for node (head: group == NULL). */
/* configureTLS on a Pod template (build_tls.c); SetContainerTLSConfig on one container. */
void raycluster__tls_configure(struct rcb *b, const cJSON *rc, bool head, cJSON *pod_spec, cJSON *ray);
void raycluster__tls_container(struct rcb *b, cJSON *c);
void raycluster__gcs_ft_configure(struct rcb *b, const cJSON *rc, bool head, cJSON *pod_meta,
                                  cJSON *pod_spec, cJSON *container);
/* SetContainerTokenAuthEnvVars. */
void raycluster__auth_env(struct rcb *b, const cJSON *rc, cJSON *container);

/*
 * ---- the syntax checks validate.c borrows from Kubernetes' apimachinery (IsDNS1035Label,
 * IsQualifiedName, IsValidLabelValue) and version.ParseGeneric, with the error texts they
 * produce.
 * The label check itself is kobj_dns1035_label (kobj/kobj.h).
 */

/* The IsDNS1035Label error list joined by " " (as %v prints a []string, minus brackets). */
const char *raycluster__dns1035_error(const char *s);
/* validation.IsDNS1123Label's errors as Go's %v prints them without the brackets, NULL
 * when s is a valid label. */
const char *raycluster__dns1123_label_error(const char *s);
/* 0 when valid; else 1 with apimachinery's messages, one per line, in err. */
int raycluster__qualified_name_error(const char *s, char *err, size_t cap);
int raycluster__label_value_error(const char *s, char *err, size_t cap);
/* Compares a generic version ("2.52.0", "2.9", "2.41.0rc1") with want: *cmp < 0, 0, > 0.
 * -EINVAL when ver is not a version (fewer than two numeric fields). */
int raycluster__version_cmp(const char *ver, const char *want, int *cmp);

#endif

/*
 * build_int.h - internals shared by the RayCluster object builders (build_*.c,
 * validate.c); not part of the module's public face (build.h).
 *
 * Builders mutate a fresh cJSON tree. Every allocation failure is recorded in a
 * sticky error (struct rcb) instead of being checked at each of hundreds of
 * call sites: helpers become no-ops once it is set, and each public function
 * checks it once before handing the object to its caller.
 */
#ifndef RAYOP_RC_BUILD_INT_H
#define RAYOP_RC_BUILD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/build.h"

/* Sticky build error: 0 or the first negative errno. */
struct rcb {
    int err;
};

/* ---- reading the RayCluster (never modified) ---- */

const cJSON *rcj_path(const cJSON *o, ...);                     /* NULL-terminated keys */
bool rcj_bool(const cJSON *o, const char *key, bool dflt);
/* Integer member (number, in int32 range); dflt when absent or not a number. */
int64_t rcj_int(const cJSON *o, const char *key, int64_t dflt);
bool rcj_has_int(const cJSON *o, const char *key);

const char *rc_name(const cJSON *rc);                           /* "" when absent */
const char *rc_namespace(const cJSON *rc);                      /* "default" when absent */
const cJSON *rc_spec(const cJSON *rc);
const cJSON *rc_head_group(const cJSON *rc);
const cJSON *rc_group_container0(const cJSON *group);           /* template.spec.containers[0] */
bool rc_autoscaling_v2(const cJSON *rc);
bool rc_autoscaling_v1_explicit(const cJSON *rc);
bool rc_auth_token_enabled(const cJSON *rc);
bool rc_k8s_token_auth(const cJSON *rc);
/* CRD type that created the cluster (ray.io/originated-from-crd label):
 * "RayCluster" (default), "RayJob" or "RayService". */
const char *rc_creator_crd(const cJSON *rc);
/* numOfHosts with the CRD default of 1. */
int64_t rc_group_num_hosts(const cJSON *group);
bool rc_env_exists(const cJSON *container, const char *name);
const cJSON *rc_env_find(const cJSON *container, const char *name);

/* ---- building ---- */

cJSON *rcb_obj(struct rcb *b, cJSON *parent, const char *key);   /* get or create object */
cJSON *rcb_arr(struct rcb *b, cJSON *parent, const char *key);   /* get or create array */
void rcb_set_str(struct rcb *b, cJSON *o, const char *key, const char *val);
void rcb_set_num(struct rcb *b, cJSON *o, const char *key, double val);
void rcb_set_bool(struct rcb *b, cJSON *o, const char *key, bool val);
void rcb_set(struct rcb *b, cJSON *o, const char *key, cJSON *val); /* takes val */
cJSON *rcb_dup(struct rcb *b, const cJSON *src);                  /* NULL src -> {} */
void rcb_append(struct rcb *b, cJSON *arr, cJSON *item);          /* takes item */
cJSON *rcb_str_array(struct rcb *b, const char *const *vals, size_t n);
/* Appends {"name":..,"value":..} / {"name":..,"valueFrom":{"fieldRef":{"fieldPath":..}}}. */
void rcb_env_value(struct rcb *b, cJSON *container, const char *name, const char *value);
void rcb_env_fieldref(struct rcb *b, cJSON *container, const char *name, const char *path);
/* ownerReferences: [{RayCluster rc, controller, blockOwnerDeletion}] on obj's metadata. */
void rcb_owner_ref(struct rcb *b, cJSON *obj, const cJSON *rc);
/* {cpu, memory} limits and requests, equal: the fixed sizes of injected containers. */
cJSON *rcb_fixed_resources(struct rcb *b, const char *cpu, const char *mem);

/* ---- names (utils.CheckName / CheckLabel) ---- */

/* Keeps the last 50 (CheckName) or 63 (CheckLabel) characters and replaces a
 * leading digit (CheckName) or punctuation with 'r'. out has cap bytes. */
void rc_check_name(const char *s, char *out, size_t cap);
void rc_check_label(const char *s, char *out, size_t cap);

/* ---- quantities ---- */

/* A container resource value (string or number) in thousandths of its unit. */
int rc_quantity_milli(const cJSON *v, int64_t *milli);
/* Quantity.Value(): rounded up to a whole unit. */
int64_t rc_milli_ceil(int64_t milli);
/* Go's json.Marshal of a float64 (shortest round-trip form). */
void rc_format_float(double v, char *out, size_t cap);

/* ---- rayStartParams ---- */

struct rc_kv {
    char *k, *v;
};
struct rc_params {
    struct rc_kv *kv;
    size_t n, cap;
};
/* Loads a rayStartParams object (string values; numbers and booleans as text). */
int rc_params_load(struct rc_params *p, const cJSON *map);
const char *rc_params_get(const struct rc_params *p, const char *k);
int rc_params_set(struct rc_params *p, const char *k, const char *v);
void rc_params_free(struct rc_params *p);
/* convertParamMap: keys sorted, " --k " for true, nothing for false, " --k=v " else. */
char *rc_params_render(const struct rc_params *p);

/* The complete rayStartParams of a node (head: group NULL) as BuildPod sees them,
 * before the container resources are folded in: top-level resources/labels,
 * defaults (dashboard-host, metrics-export-port, block, dashboard-agent-listen-port,
 * address), no-monitor, GCS FT redis parameters. */
int rc_params_for_node(const cJSON *rc, const cJSON *group, const struct rc_build_opts *o,
                       struct rc_params *p);
/* generateRayStartCommand: folds num-cpus/memory/num-gpus/accelerators from the
 * container's resources into p and renders "ray start [--head] ...". Caller frees. */
char *rc_ray_start_from_params(struct rc_params *p, bool head, const cJSON *container);

/* utils.IsGPUResourceKey. */
bool rc_is_gpu_resource(const char *key);

/* Head port string: rayStartParams.port or "6379". */
void rc_head_port_str(const cJSON *rc, char *out, size_t cap);

/* ---- pods ---- */

/* BuildPod's common tail on a pod whose metadata/template prelude is done. */
cJSON *rc_pod_build(const cJSON *rc, const cJSON *group, const char *replica_name,
                    int replica_index, int host_index, const struct rc_build_opts *o, int *err);
/* The autoscaler sidecar container (BuildAutoscalerContainer + overrides). */
void rc_autoscaler_container(struct rcb *b, const cJSON *rc, const struct rc_build_opts *o,
                             cJSON *pod_spec);
/* configureGCSFaultTolerance for node (head: group == NULL). */
void rc_gcs_ft_configure(struct rcb *b, const cJSON *rc, bool head, cJSON *pod_meta,
                         cJSON *container);
/* SetContainerTokenAuthEnvVars. */
void rc_auth_env(struct rcb *b, const cJSON *rc, cJSON *container);

#endif

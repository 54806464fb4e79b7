/*
 * rayservice.h - `rayop controller rayservice`: KubeRay v1.7's RayService controller
 * (rayservice_controller.go, common/service.go, utils/validation.go) in C.
 * docs/rayservice.md.
 *
 *  - hash.c, gotypes*.c: the managed cluster's ray.io/hash-without-replicas-and-
 *    workers-to-delete, computed byte for byte as KubeRay does;
 *  - serve.c: serveConfigV2 -> the JSON PUT to /api/serve/applications/, the Serve
 *    status parser, and the bounded memory of what was submitted per (RayService,
 *    cluster) (memo);
 *  - build.c: the RayCluster, the head and serve Services, Gateway and HTTPRoute;
 *  - validate.c: KubeRay's validation;
 *  - status.c: conditions and the status comparison;
 *  - reconcile.c, upgrade.c: one reconcile, in KubeRay's order;
 *  - metrics.c: the kuberay_service_* metrics.
 * Objects are cJSON as stored; the caller owns what a function returns.
 */
#ifndef RAYOP_RAYSERVICE_H
#define RAYOP_RAYSERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct host_ctx;
struct host_result;
struct host_view;
struct buf;

/* The kind's entry points (registered in reconcilers/kinds.c). */
int rayservice_reconcile(struct host_ctx *ctx, struct host_result *res);
int rayservice_metrics(struct host_view *view, struct buf *out);

/* KubeRay names (utils/constant.go) */
#define RS_FINALIZER "ray.io/rayservice-finalizer"
#define RS_ANN_HASH "ray.io/hash-without-replicas-and-workers-to-delete"
#define RS_ANN_NUM_WORKER_GROUPS "ray.io/num-worker-groups"
#define RS_ANN_INIT_TIMEOUT "ray.io/initializing-timeout"
#define RS_REQUEUE_MS 2000              /* ServiceDefaultRequeueDuration */
#define RS_DELETION_DELAY_S 60          /* RayClusterDeletionDelayDuration */
#define RS_MAX_NAME 47                  /* MaxRayServiceNameLength */
#define RS_DEFAULT_APP "default"        /* DefaultServeAppName */

/* ---- hash (hash.c) ------------------------------------------------------------------ */

/* KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete(rayClusterSpecForHashing(rs))
 * of a rayClusterConfig: suspend, replicas, min/maxReplicas, workersToDelete,
 * tolerations, schedulingGates and upgradeStrategy muted; Go json.Marshal; SHA-1;
 * base32hex. With ngroups >= 0 only the first ngroups worker groups are hashed (the
 * partial comparison of isClusterSpecHashEqual). out: 33 bytes. 0, -ENOMEM, -EINVAL. */
int rs_cluster_hash(const cJSON *cluster_spec, int ngroups, char out[33]);
/* The Go JSON text the hash is taken of (tests). Caller frees. */
char *rs_cluster_hash_text(const cJSON *cluster_spec, int ngroups);

/* ---- Serve (serve.c) ---------------------------------------------------------------- */

#define RS_SERVE_MAX_CONFIG (1u << 20)  /* serveConfigV2 larger than this is refused */

/* serveConfigV2 (YAML) as the JSON body of PUT /api/serve/applications/: yaml.Unmarshal
 * into a map, "target_capacity" set when target_capacity >= 0, json.Marshal (keys
 * sorted). *out owned by the caller. -EINVAL (err filled) for YAML that is not a
 * mapping, -E2BIG past RS_SERVE_MAX_CONFIG or the YAML bounds, -ENOMEM. */
int rs_serve_config_json(const char *yaml, size_t len, int target_capacity, char **out,
                         char *err, size_t errlen);

/* GET /api/serve/applications/?api_type=declarative as KubeRay reads it
 * (getAndCheckServeStatus): *apps = a new object {APP: {status, message,
 * serveDeploymentStatuses: {DEP: {status, message}}}} ("" app name -> "default"),
 * *ready = every application RUNNING and at least one. Bounded (DASH_MAX_BODY,
 * 4096 applications, 4096 deployments each, strings cut at 4 KiB); a wrong type is
 * -EPROTO. */
#define RS_SERVE_MAX_APPS 4096
int rs_serve_parse(const char *body, size_t len, cJSON **apps, bool *ready);

/* Whether the GET /api/serve/applications/ answer body shows the cluster running exactly
 * put_body (a PUT body from rs_serve_config_json): the same applications, each one's
 * deployed_app_config equal to the body's (its name aside), the same target_capacity, and
 * no other top-level setting in the body (those Ray does not report as sent). False for
 * anything unreadable. Bounded as rs_serve_parse. */
bool rs_serve_runs_config(const char *body, size_t len, const char *put_body);

/* What KubeRay's checkIfNeedSubmitServeApplications decides: true (and *why) when
 * nothing was submitted to this cluster, no application is found (a head restarted
 * without GCS FT), or the config changed. */
bool rs_serve_need_submit(const char *memo, const char *config, const cJSON *apps,
                          const char **why);

/* The bounded memory of what was PUT, per (RayService key, cluster name): KubeRay's
 * ServeConfigs LRU (1000 RayServices, unbounded per entry, the reported leak) with a
 * bound on entries (RS_MEMO_MAX) and on bytes (RS_MEMO_MAX_BYTES); the least recently
 * used goes first. Thread-safe. */
#define RS_MEMO_MAX 2000
#define RS_MEMO_MAX_BYTES (64u << 20)
/* A copy of the remembered config (caller frees) or NULL. */
char *rs_memo_get(const char *key, const char *cluster);
int rs_memo_put(const char *key, const char *cluster, const char *config);
/* Forgets the key's clusters other than keep1/keep2 (NULL/"" keep nothing). */
void rs_memo_prune(const char *key, const char *keep1, const char *keep2);
void rs_memo_stats(size_t *entries, size_t *bytes);
void rs_memo_clear(void);

/* ---- validation (validate.c) -------------------------------------------------------- */

struct rs_invalid {
    char reason[40];                 /* InvalidRayServiceMetadata / InvalidRayServiceSpec */
    char message[1024];
};
struct rc_gates;
struct rs_gates {
    bool incremental_upgrade;        /* RayServiceIncrementalUpgrade (beta, default on) */
    /* the RayCluster gates the cluster spec is validated with, as KubeRay's
     * ValidateRayClusterSpec reads the same process-wide gates (NULL: all off) */
    const struct rc_gates *cluster;
};
int rs_validate(const cJSON *rs, const struct rs_gates *g, struct rs_invalid *why);
/* ValidateRayServiceMetadata alone (name length, DNS-1035, the initializing-timeout
 * annotation), the part KubeRay's RayService webhook checks. 0 or -EINVAL with why set. */
int rs_validate_metadata(const cJSON *rs, struct rs_invalid *why);
/* ray.io/initializing-timeout in ms: Go duration or integer seconds; 0 when absent,
 * -EINVAL when invalid or not positive. */
int64_t rs_initializing_timeout_ms(const cJSON *rs);

/* ---- objects (build.c) -------------------------------------------------------------- */

bool rs_incremental(const cJSON *rs, const struct rs_gates *g);
/* constructRayClusterForRayService. NULL with *err. */
cJSON *rs_build_cluster(const cJSON *rs, const char *name, const struct rs_gates *g, int *err);
/* NAME-head-svc pointing at cluster's head (BuildHeadServiceForRayService). */
cJSON *rs_build_head_service(const cJSON *rs, const cJSON *cluster, int *err);
/* NAME-serve-svc (or serveService) selecting cluster's serve-ready Pods; per_cluster:
 * the incremental upgrade's CLUSTER-serve-svc. -ENOENT in *err when no serve port. */
cJSON *rs_build_serve_service(const cJSON *rs, const cJSON *cluster, bool per_cluster,
                              const struct rs_gates *g, int *err);
/* The serve port of cluster's head (container port "serve", default 8000). */
int rs_serve_port(const cJSON *cluster);
cJSON *rs_build_gateway(const cJSON *rs, int *err);
cJSON *rs_build_httproute(const cJSON *rs, const cJSON *active, int active_weight,
                          const cJSON *pending, int pending_weight, int *err);

/* ---- small helpers (status.c) ------------------------------------------------------- */

const char *rs_str(const cJSON *obj, const char *path);      /* "" if absent; path "": obj */
int rs_int(const cJSON *obj, const char *path, int64_t *out);/* -ENOENT if absent */
bool rs_cond_true(const cJSON *status, const char *type);
const cJSON *rs_cond(const cJSON *status, const char *type);
/* meta.SetStatusCondition: lastTransitionTime changes only with status. now RFC 3339. */
int rs_cond_set(cJSON *status, const char *type, const char *st, const char *reason,
                const char *message, int64_t generation, const char *now);
void rs_cond_remove(cJSON *status, const char *type);
/* InconsistentRayServiceStatuses (values compared where KubeRay compares pointers). */
bool rs_status_changed(const cJSON *old_status, const cJSON *new_status);
void rs_format_time(int64_t ms, char out[32]);
int64_t rs_parse_time_ms(const char *s);

#endif

/*
 * rayjob.h - `rayop controller rayjob`: KubeRay v1.7's RayJob controller
 * (rayjob_controller.go, common/job.go) in C. docs/rayjob.md.
 *
 * Split in two so the behaviour is testable without a server:
 *  - decide.c/terminal.c: rj_decide(), a pure function of what one reconcile
 *    observed (the RayJob, its RayCluster, submitter Job, head Pod, the Ray
 *    job's info from the dashboard, the time) to a plan: the new status and
 *    the writes to make, in order, and when to look again;
 *  - build.c/validate.c: the objects KubeRay creates (the RayCluster, the
 *    submitter batch Job and its `ray job submit` command, the sidecar
 *    container, the Jobs API submit body) and KubeRay's validation;
 *  - reconcile.c: reads the cache, asks the dashboard, runs rj_decide and
 *    carries out the plan through the host's write helpers.
 * Objects are cJSON as stored; the caller owns what a function returns.
 */
#ifndef RAYOP_RAYJOB_H
#define RAYOP_RAYJOB_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "dashboard/dashboard.h"
#include "reconcilers/raycluster/build.h"

struct host_ctx;
struct host_result;
struct host_view;
struct buf;

/* The kind's entry points (registered in reconcilers/kinds.c). */
int rayjob_reconcile(struct host_ctx *ctx, struct host_result *res);
int rayjob_metrics(struct host_view *view, struct buf *out);

/* KubeRay names */
#define RJ_FINALIZER "ray.io/rayjob-finalizer"
#define RJ_SUBMITTER_CONTAINER "ray-job-submitter"
#define RJ_REQUEUE_MS 3000                    /* RayJobDefaultRequeueDuration */
/* rayop: a dashboard call still out (dash_async_call gave -EINPROGRESS) is looked at
 * again this much later; a reconcile waits at most RJ_DASH_WAIT_MS for an answer */
#define RJ_DASH_PENDING_MS 1000
#define RJ_DASH_WAIT_MS 200
#define RJ_SUBMITTER_FINISHED_TIMEOUT_S 30    /* DefaultSubmitterFinishedTimeout */
#define RJ_MAX_NAME 47                        /* MaxRayJobNameLength */

/* Operator settings that change decisions (KubeRay flags, gates, env). */
struct rj_config {
    bool deletion_policy_gate;       /* RayJobDeletionPolicy (default true) */
    bool sidecar_restart_gate;       /* SidecarSubmitterRestart (default false) */
    bool delete_cr_after_finish;     /* DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true */
    int grace_period_s;              /* RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS, 300 */
    int status_check_timeout_s;      /* RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS, 300 */
    struct rc_gates rc_gates;        /* the RayCluster gates, for the cluster spec */
};
void rj_config_default(struct rj_config *c);
/* Reads the env overrides KubeRay reads (invalid values keep the default). */
void rj_config_from_env(struct rj_config *c);

/* ---- validation (validate.c) ------------------------------------------------ */

struct rj_invalid {
    char reason[40];                 /* the Event reason: InvalidRayJobMetadata|Spec|Status */
    char message[768];
};
/* 0 if valid, -EINVAL with *why filled as KubeRay's validateRayJob. */
int rj_validate(const cJSON *rayjob, const struct rj_config *cfg, struct rj_invalid *why);

/* ---- what one reconcile saw, and what to do (decide.c) ---------------------- */

#define RJ_INFO_NONE 1               /* info_rc: the dashboard was not asked */

struct rj_in {
    const cJSON *rayjob;             /* as cached (never modified) */
    const cJSON *cluster;            /* RayCluster status.rayClusterName, NULL if absent */
    const cJSON *submitter;          /* batch Job named after the RayJob, NULL if absent */
    const cJSON *head_pod;           /* SidecarMode: the cluster's head Pod, NULL if none */
    const char *dashboard_url;       /* head Service FQDN:port of cluster, NULL if unknown */
    int info_rc;                     /* 0 info valid, -ENOENT unknown job, -EINPROGRESS
                                        asked but not answered yet, < 0 error, RJ_INFO_NONE */
    const struct dash_job_info *info;
    int64_t now_ms;                  /* wall clock, Unix ms */
    char suffix_job[6];              /* 5 random chars for a new submission id */
    char suffix_cluster[6];          /* ... and for a new RayCluster name */
    struct rj_config cfg;
};

/* Writes a plan asks for, run by reconcile.c in this order. */
enum {
    RJ_ADD_FINALIZER    = 1 << 0,
    RJ_STOP_JOB         = 1 << 1,    /* finalizer: stop the Ray job (failure only logged) */
    RJ_REMOVE_FINALIZER = 1 << 2,
    RJ_CREATE_CLUSTER   = 1 << 3,
    RJ_CREATE_SUBMITTER = 1 << 4,
    RJ_SUBMIT_HTTP      = 1 << 5,    /* HTTPMode; outcome fed back with rj_after_submit */
    RJ_DELETE_CLUSTER   = 1 << 6,
    RJ_DELETE_SUBMITTER = 1 << 7,
    RJ_SUSPEND_WORKERS  = 1 << 8,    /* DeleteWorkers: suspend every worker group */
    RJ_DELETE_SELF      = 1 << 9,
    RJ_HEAD_SERVICE     = 1 << 10,   /* NAME-head-svc follows the current RayCluster */
};

/* A Kubernetes Event the decision implies (writes add their own). */
struct rj_event {
    const char *type;                /* HOST_EVENT_NORMAL / _WARNING */
    char reason[48];
    const char *action;              /* "Validate", "Create", ... */
    char message[800];
};

struct rj_plan {
    cJSON *status;                   /* the status as the decision left it (owned) */
    bool write_status;               /* ... and whether KubeRay would write it */
    unsigned actions;
    int error;                       /* < 0: return this error after the actions (requeue 3 s) */
    char error_msg[256];
    bool requeue;                    /* look again after requeue_ms */
    int64_t requeue_ms;
    struct rj_event events[2];
    int nevents;
    bool info_used;                  /* the decision read the dashboard's job info */
};

/* Decides one reconcile. 0 with *plan filled (rj_plan_free), -ENOMEM. */
int rj_decide(const struct rj_in *in, struct rj_plan *plan);
void rj_plan_free(struct rj_plan *plan);
/* true when a reconcile of rayjob should fetch the Ray job's info first
 * (jobDeploymentStatus Running with a jobId, not being deleted). */
bool rj_wants_job_info(const cJSON *rayjob);
/* HTTPMode: the submission asked by RJ_SUBMIT_HTTP returned rc. Updates
 * plan->status as KubeRay does (a failure starts the status-check timer). */
int rj_after_submit(const struct rj_in *in, struct rj_plan *plan, int rc);

/* ---- helpers shared by the files (status and spec access) -------------------- */

const char *rj_str(const cJSON *obj, const char *path);      /* "a.b.c", "" if absent */
bool rj_bool(const cJSON *obj, const char *path);
/* 0 with *out, -ENOENT when absent or not a number */
int rj_int(const cJSON *obj, const char *path, int64_t *out);
const char *rj_mode(const cJSON *rayjob);                    /* spec.submissionMode, default K8sJobMode */
bool rj_has_selector(const cJSON *rayjob);
bool rj_job_terminal(const char *job_status);                /* STOPPED SUCCEEDED FAILED */
bool rj_deploy_terminal(const char *deploy_status);          /* Complete Failed */
void rj_format_time(int64_t ms, char out[32]);               /* RFC 3339, seconds */
int64_t rj_parse_time_ms(const char *s);                     /* -1 if absent/bad */

/* ---- objects (build.c) ------------------------------------------------------ */

/* The RayCluster KubeRay creates for rayjob (constructRayClusterForRayJob),
 * named status.rayClusterName, owned by the RayJob; SidecarMode adds the
 * submitter container to the head (with sidecar_restart, the SidecarSubmitterRestart
 * gate, it checks `ray job status` first and restarts OnFailure). NULL with *err < 0. */
cJSON *rj_build_cluster(const cJSON *rayjob, const cJSON *status, bool sidecar_restart, int *err);
/* The submitter batch Job (createNewK8sJob + getSubmitterTemplate). status
 * carries dashboardURL and jobId; without a submitterPodTemplate the container
 * takes the image of cluster's head (the RayCluster the job runs on, which a
 * clusterSelector picks; NULL falls back to spec.rayClusterSpec); a token-auth
 * cluster also gives the submitter its RAY_AUTH_MODE / RAY_AUTH_TOKEN. */
cJSON *rj_build_submitter(const cJSON *rayjob, const cJSON *cluster, const cJSON *status,
                          int *err);
/* The shell command KubeRay's BuildJobSubmitCommand joins with spaces for
 * mode "K8sJobMode" or "SidecarMode". Caller frees. NULL with *err. */
char *rj_build_submit_command(const cJSON *rayjob, const cJSON *status, const char *mode,
                              bool sidecar_restart, int *err);
/* The Service NAME-head-svc KubeRay keeps pointing at the RayJob's current
 * cluster (common.BuildHeadServiceForRayJob): the cluster's head Service under
 * the RayJob's name, labels and ownership. NULL with *err. */
cJSON *rj_build_head_service(const cJSON *rayjob, const cJSON *cluster, int *err);
/* The Jobs API body of an HTTPMode submission (ConvertRayJobToReq). Caller frees. */
char *rj_build_submit_body(const cJSON *rayjob, const cJSON *status, int *err);
/* spec.runtimeEnvYAML as a JSON object (NULL *out when empty). -EINVAL when
 * not valid YAML of a mapping, with err filled. */
int rj_runtime_env(const cJSON *rayjob, cJSON **out, char *err, size_t errlen);

#endif

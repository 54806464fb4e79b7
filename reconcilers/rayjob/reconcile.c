/*
 * reconcile.c - one RayJob reconcile: gather what rj_decide() needs from the
 * shared cache (the RayJob, its RayCluster, the submitter Job, the head Pod in
 * SidecarMode) and from the Ray dashboard (the job's info while Running),
 * decide, then carry out the plan through the host's write helpers in
 * KubeRay's order: metadata (finalizer), the finalizer's StopJob, creations
 * and deletions, then the one status write. Any failed write returns an error
 * before the status is written, as KubeRay's early returns do, so the next
 * reconcile decides again from what the cache shows.
 *
 * Exactly-once submission: the submission id is chosen and written in the
 * New -> Initializing status write before anything can submit; the submitter
 * Job is named after the RayJob (a second create is AlreadyExists) and its
 * script asks `ray job status` before `ray job submit`; HTTPMode submits only
 * when the dashboard does not know the id. A controller killed at any point
 * resumes from the cached status and submits nothing twice.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/host/host.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/rayjob/internal.h"
#include "util/util.h"

#define T_RAYJOBS "ray.io/v1/rayjobs"
#define T_RAYCLUSTERS "ray.io/v1/rayclusters"
#define T_JOBS "batch/v1/jobs"
#define T_PODS "v1/pods"
#define T_SERVICES "v1/services"

static void load_config(struct host_ctx *ctx, struct rj_config *cfg)
{
    rj_config_default(cfg);
    rj_config_from_env(cfg);
    cfg->deletion_policy_gate = host_feature_enabled(ctx, "RayJobDeletionPolicy", true);
    cfg->sidecar_restart_gate = host_feature_enabled(ctx, "SidecarSubmitterRestart", false);
    rc_gates_from_host(ctx, &cfg->rc_gates);
}

/* The head Service's dashboard address (utils.FetchHeadServiceURL). */
static int dashboard_url(const cJSON *cluster, char *out, size_t cap)
{
    struct rc_build_opts o;
    char fqdn[512];
    rc_build_opts_default(&o);
    int rc = rc_head_service_fqdn(cluster, &o, fqdn, sizeof(fqdn));
    if (rc < 0)
        return rc;
    int n = snprintf(out, cap, "%s:%d", fqdn, rc_dashboard_port(cluster));
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* A client of cluster's dashboard: through the API server's service proxy with
 * --use-kubernetes-proxy, else straight at url (status.dashboardURL). */
/* A token-auth cluster's token (GetRayDashboardClientFunc), wiped from every buffer
 * but t's. */
static int target_token(struct host_ctx *ctx, const cJSON *cluster, struct dash_target *t)
{
    struct kube_result kr = { 0 };
    int rc = rc_dashboard_token(ctx, cluster, t, &kr);
    kube_result_release(&kr);
    return rc;
}

static int target_for(struct host_ctx *ctx, const cJSON *cluster, const char *url,
                      struct dash_target *t)
{
    int rc;
    if (ctx->settings && ctx->settings->use_kubernetes_proxy) {
        char svc[254];
        const char *s = rj_str(cluster, "status.head.serviceName");
        struct kube_client *kc = host_kube(ctx);
        if (!kc)
            return -ENOTCONN;
        if (!*s) {
            rc = rc_head_service_name(cluster, svc, sizeof(svc));
            if (rc < 0)
                return rc;
            s = svc;
        }
        rc = dash_target_proxy(t, kc, rj_str(cluster, "metadata.namespace"), s, "dashboard");
    } else {
        rc = dash_target_direct(t, url);
    }
    if (rc == 0 && (rc = target_token(ctx, cluster, t)) < 0)
        dash_target_wipe(t);
    return rc;
}

static const cJSON *find_head(const cJSON *pods)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(p, "metadata"), "labels");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "ray.io/node-type");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "head") == 0)
            return p;
    }
    return NULL;
}

/* Everything the decision reads; owns the cJSON it fetched. */
struct observed {
    cJSON *rj, *cluster, *submitter, *pods;
    char url[600];
    struct dash_job_info info;
    struct dash_reply reply;     /* of the last dashboard_call */
    struct rj_in in;
    char err[600];      /* the last API error as the server put it, for the requeue log */
};

static void observed_free(struct observed *o)
{
    cJSON_Delete(o->rj);
    cJSON_Delete(o->cluster);
    cJSON_Delete(o->submitter);
    cJSON_Delete(o->pods);
    dash_reply_free(&o->reply);
}

/* One call to the cluster's dashboard, off the worker thread (dashboard/async.c): a slow
 * or dead head delays only its own RayJob, never the worker (kuberay#2646). 0 with
 * o->reply set (the caller frees it), -EINPROGRESS while it is out (the same call from a
 * later reconcile takes the answer), or a negative errno. op names the call in its key. */
static int dashboard_call(struct host_ctx *ctx, struct observed *o, const char *op,
                          const char *method, const char *path, const char *body)
{
    struct dash_target t;
    char key[400];
    int rc = target_for(ctx, o->cluster, rj_str(o->rj, "status.dashboardURL"), &t);
    dash_reply_free(&o->reply);
    if (rc == 0) {
        /* the cluster is in the key: a retry's new cluster never takes an old answer */
        snprintf(key, sizeof(key), "rayjob\n%s/%s\n%s\n%s", ctx->ns, ctx->name,
                 rj_str(o->cluster, "metadata.name"), op);
        rc = dash_async_call(key, &t, method, path, body, body ? strlen(body) : 0,
                             RJ_DASH_WAIT_MS, &o->reply);
    }
    dash_target_wipe(&t);
    return rc;
}

static int get_opt(struct host_ctx *ctx, const char *type, const char *name, cJSON **out)
{
    *out = NULL;
    if (!name || !*name)
        return 0;
    int rc = host_get(ctx, type, ctx->ns, name, out);
    return rc == -ENOENT ? 0 : rc;
}

/* The first time a dashboard cannot be reached at all, say once, at warning,
 * what usually causes it: an operator outside the cluster dialling Pod
 * addresses. Later failures stay at info (KubeRay's "Failed to get job info"). */
static void dashboard_unreachable_hint(struct host_ctx *ctx, int rc, const char *url)
{
    static atomic_bool said;
    bool proxy = ctx->settings && ctx->settings->use_kubernetes_proxy;
    if ((rc != -EHOSTUNREACH && rc != -ECONNREFUSED && rc != -ETIMEDOUT && rc != -ENETUNREACH) ||
        atomic_exchange(&said, true))
        return;
    host_log(ctx, LOG_WARN, "cannot reach the Ray dashboard", "dashboardURL", url,
             "error", kube_strerror(rc), "hint", proxy
             ? "through the API server proxy: check that the head Pod is Running and its "
               "Service has the dashboard port"
             : "rayop dials the head's Service directly; outside the cluster run it with "
               "--use-kubernetes-proxy=true (rayop up does so by default when not in a Pod)",
             NULL);
}

static int observe(struct host_ctx *ctx, struct observed *o)
{
    struct rj_in *in = &o->in;
    const char *cname = rj_str(o->rj, "status.rayClusterName");
    int rc;
    if ((rc = get_opt(ctx, T_RAYCLUSTERS, cname, &o->cluster)) < 0 ||
        (rc = get_opt(ctx, T_JOBS, ctx->name, &o->submitter)) < 0)
        return rc;
    if (o->cluster && strcmp(rj_mode(o->rj), "SidecarMode") == 0 &&
        (rc = host_list_cluster(ctx, T_PODS, ctx->ns, cname, &o->pods)) < 0 && rc != -ENOENT)
        return rc;
    memset(in, 0, sizeof(*in));
    in->rayjob = o->rj;
    in->cluster = o->cluster;
    in->submitter = o->submitter;
    in->head_pod = find_head(o->pods);
    in->info_rc = RJ_INFO_NONE;
    in->info = &o->info;
    in->now_ms = host_wall_ms();
    host_rand_suffix(in->suffix_job);
    host_rand_suffix(in->suffix_cluster);
    load_config(ctx, &in->cfg);
    if (o->cluster && dashboard_url(o->cluster, o->url, sizeof(o->url)) == 0)
        in->dashboard_url = o->url;
    if (o->cluster && rj_wants_job_info(o->rj)) {
        char path[64 + DASH_ID_MAX];
        in->info_rc = dash_job_path(path, sizeof(path), rj_str(o->rj, "status.jobId"), "");
        if (in->info_rc == 0)
            in->info_rc = dashboard_call(ctx, o, "info", "GET", path, NULL);
        if (in->info_rc == 0) {
            in->info_rc = dash_job_info_reply(&o->reply, &o->info);
            dash_reply_free(&o->reply);
        }
        if (in->info_rc < 0 && in->info_rc != -ENOENT && in->info_rc != -EINPROGRESS) {
            host_log(ctx, LOG_INFO, "Failed to get job info", "JobId",
                     rj_str(o->rj, "status.jobId"), "error", kube_strerror(in->info_rc), NULL);
            dashboard_unreachable_hint(ctx, in->info_rc, rj_str(o->rj, "status.dashboardURL"));
        }
    }
    return 0;
}

/* JSON merge patch of metadata.finalizers guarded by the rv we read; the
 * object the server answers replaces o->rj so the status write uses its rv. */
static int patch_finalizers(struct host_ctx *ctx, struct observed *o, bool add)
{
    struct kube_result kr = { 0 };
    int rc = host_patch_finalizer(ctx, &KUBE_RES_RAYJOBS, o->rj, RJ_FINALIZER, add, &kr);
    if (rc == 0 && kr.body) {
        cJSON_Delete(o->rj);
        o->rj = kr.body;
        o->in.rayjob = o->rj;
        kr.body = NULL;
    }
    if (!add && rc == -ENOENT)   /* deleted already (the cache was behind): nothing to do */
        host_log(ctx, LOG_INFO, "Remove the finalizer: the RayJob is already gone",
                 "finalizer", RJ_FINALIZER, NULL);
    else
        host_log(ctx, rc < 0 ? LOG_ERROR : LOG_INFO, add ? "Add a finalizer" : "Remove the finalizer",
                 "finalizer", RJ_FINALIZER, "error", rc < 0 ? kube_strerror(rc) : NULL, NULL);
    kube_result_release(&kr);
    return rc;
}

/* -EINPROGRESS while the dashboard has not answered (the finalizer stays until it has);
 * else 0, whatever the answer: the finalizer goes no matter what, as in KubeRay. */
static int stop_job(struct host_ctx *ctx, struct observed *o)
{
    const char *id = rj_str(o->rj, "status.jobId");
    char path[64 + DASH_ID_MAX];
    bool stopped = false;
    int rc = -ENOENT;
    if (o->cluster && *id && (rc = dash_job_path(path, sizeof(path), id, "/stop")) == 0 &&
        (rc = dashboard_call(ctx, o, "stop", "POST", path, NULL)) == 0) {
        rc = dash_job_stop_reply(&o->reply, &stopped);
        dash_reply_free(&o->reply);
    }
    if (rc == -EINPROGRESS)
        return rc;
    if (rc == 0 && !stopped)
        host_log(ctx, LOG_INFO, "The dashboard did not stop the Ray job (it may have ended "
                 "already)", "JobId", id, NULL);
    else
        host_log(ctx, rc < 0 ? LOG_WARN : LOG_INFO, rc < 0 ? "Failed to stop job for RayJob"
                 : "Stopped the Ray job of the RayJob being deleted", "JobId", id,
                 "error", rc < 0 ? kube_strerror(rc) : NULL, NULL);
    return 0;
}

/* Creates a child the RayJob owns (its RayCluster, or its submitter Job when
 * submitter), as built (obj NULL: the build failed with err; obj is consumed), after
 * tagging it for the batch scheduler. */
static int create_child(struct host_ctx *ctx, struct observed *o, const struct kube_resource *r,
                        cJSON *obj, int err, bool submitter, const char *ok_reason,
                        const char *fail_reason, const char *what)
{
    struct kube_result kr = { 0 };
    const char *name = rj_str(obj, "metadata.name");
    int rc = obj ? rayjob__batch_child(ctx, o->rj, obj, submitter) : 0;
    if (rc < 0) {
        cJSON_Delete(obj);
        return rc;
    }
    rc = obj ? host_create(ctx, r, ctx->ns, obj, &kr) : (err ? err : -ENOMEM);
    if (rc == -EEXIST)
        rc = 0;   /* made by an earlier reconcile the cache had not shown yet */
    if (rc < 0)
        host_event(ctx, o->rj, HOST_EVENT_WARNING, fail_reason, "Create",
                   "Failed to create new %s %s/%s: %s", what, ctx->ns, name,
                   kube_result_error(&kr, rc, o->err, sizeof(o->err)));
    else if (kr.http_code)
        host_event(ctx, o->rj, HOST_EVENT_NORMAL, ok_reason, "Create", "Created %s %s/%s", what,
                   ctx->ns, name);
    kube_result_release(&kr);
    cJSON_Delete(obj);   /* name points into it */
    return rc;
}

/* host_update of obj (named name) with KubeRay's Event for the outcome: Normal
 * ok_reason "OK_TEXT ns/name", or Warning fail_reason "FAIL_TEXT ns/name<sep> error". */
static int update_obj(struct host_ctx *ctx, struct observed *o, const struct kube_resource *r,
                      cJSON *obj, const char *name, const char *ok_reason, const char *ok_text,
                      const char *fail_reason, const char *fail_text, char sep)
{
    struct kube_result kr = { 0 };
    int rc = host_update(ctx, r, ctx->ns, obj, &kr);
    if (rc < 0)
        host_event(ctx, o->rj, HOST_EVENT_WARNING, fail_reason, "Update", "%s %s/%s%c %s",
                   fail_text, ctx->ns, name, sep,
                   kube_result_error(&kr, rc, o->err, sizeof(o->err)));
    else
        host_event(ctx, o->rj, HOST_EVENT_NORMAL, ok_reason, "Update", "%s %s/%s", ok_text,
                   ctx->ns, name);
    kube_result_release(&kr);
    return rc;
}

static int delete_obj(struct host_ctx *ctx, struct observed *o, const struct kube_resource *r,
                      const char *name, const char *ok_reason, const char *fail_reason,
                      const char *what)
{
    struct kube_result kr = { 0 };
    struct kube_delete_opts d = { .propagation = "Background", .grace_seconds = -1 };
    int rc = host_delete(ctx, r, ctx->ns, name, &d, &kr);
    if (rc < 0 && rc != -ENOENT)
        host_event(ctx, o->rj, HOST_EVENT_WARNING, fail_reason, "Delete", "Failed to delete %s %s/%s: %s",
                   what, ctx->ns, name, kube_result_error(&kr, rc, o->err, sizeof(o->err)));
    else if (rc == 0)
        host_event(ctx, o->rj, HOST_EVENT_NORMAL, ok_reason, "Delete", "Deleted %s %s/%s", what,
                   ctx->ns, name);
    kube_result_release(&kr);
    if (rc == -ENOENT)
        return 0;
    return rc;
}

/* DeleteWorkers: suspend every worker group of the cluster (an update guarded
 * by the cluster's resourceVersion). */
static int suspend_workers(struct host_ctx *ctx, struct observed *o)
{
    if (!o->cluster)
        return 0;
    cJSON *c = cJSON_Duplicate(o->cluster, 1), *g;
    if (!c)
        return -ENOMEM;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(c, "spec"), "workerGroupSpecs")) {
        cJSON_DeleteItemFromObjectCaseSensitive(g, "suspend");
        cJSON_AddBoolToObject(g, "suspend", 1);
    }
    int rc = update_obj(ctx, o, &KUBE_RES_RAYCLUSTERS, c, rj_str(o->cluster, "metadata.name"),
                        "UpdatedRayCluster",
                        "Set the `suspend` field to true for all worker groups in cluster",
                        "FailedToUpdateRayCluster", "Failed to suspend worker groups in cluster",
                        ':');
    cJSON_Delete(c);
    return rc;
}

/* A Service of that name exists but is not in the cache: it lacks the
 * created-by label (made by KubeRay, whose cache needs no label, or by an
 * older rayop). Read it live so the update below labels it (bringing it into the
 * cache) and re-points it. 0 with *old set, or a negative errno. */
static int head_service_adopt(struct host_ctx *ctx, const char *name, cJSON **old)
{
    struct kube_result kr = { 0 };
    struct kube_client *kc = host_kube(ctx);
    int rc = kc ? kube_get(kc, &KUBE_RES_SERVICES, ctx->ns, name, &kr) : -ENOTCONN;
    if (rc == 0) {
        *old = kr.body;
        kr.body = NULL;
    }
    kube_result_release(&kr);
    return rc;
}

/* True when the Service svc (live or cached) already has every label of want. */
static bool labels_cover(const cJSON *svc, const cJSON *want)
{
    const cJSON *have = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(svc, "metadata"), "labels");
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(want, "metadata"), "labels")) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, l->string);
        if (!cJSON_IsString(h) || !cJSON_IsString(l) || strcmp(h->valuestring, l->valuestring))
            return false;
    }
    return true;
}

/* reconcileServices: create NAME-head-svc, or re-point it when the RayJob's
 * cluster changed (a retry); the cluster IP is kept (immutable). */
static int head_service(struct host_ctx *ctx, struct observed *o)
{
    struct kube_result kr = { 0 };
    cJSON *old = NULL;
    int err = 0, rc;
    if (!o->cluster)
        return 0;
    cJSON *svc = rj_build_head_service(o->rj, o->cluster, &err);
    if (!svc)
        return err ? err : -ENOMEM;
    const char *name = rj_str(svc, "metadata.name");
    rc = host_get(ctx, T_SERVICES, ctx->ns, name, &old);
    if (rc == -ENOENT) {
        rc = host_create(ctx, &KUBE_RES_SERVICES, ctx->ns, svc, &kr);
        if (rc == -EEXIST) {
            kube_result_release(&kr);
            rc = head_service_adopt(ctx, name, &old);
            if (rc == 0)
                goto update;
            if (rc == -ENOENT)
                rc = 0;     /* deleted meanwhile: the next reconcile creates it */
        } else if (rc < 0)
            host_event(ctx, o->rj, HOST_EVENT_WARNING, "FailedToCreateService", "Create",
                       "Failed to create the service %s/%s, %s", ctx->ns, name,
                       kube_result_error(&kr, rc, o->err, sizeof(o->err)));
        else
            host_event(ctx, o->rj, HOST_EVENT_NORMAL, "CreatedService", "Create",
                       "Created the service %s/%s", ctx->ns, name);
    } else if (rc == 0) {
update:;
        const cJSON *os = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(old, "spec"), "selector");
        const cJSON *ns_ = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(svc, "spec"), "selector");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(os, "ray.io/cluster");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(ns_, "ray.io/cluster");
        if (cJSON_IsString(a) && cJSON_IsString(b) && strcmp(a->valuestring, b->valuestring) == 0 &&
            labels_cover(old, svc))
            goto out;
        /* our labels join the ones already there (an adopted Service keeps its own) */
        cJSON *omd = cJSON_GetObjectItemCaseSensitive(old, "metadata");
        cJSON *ol = cJSON_GetObjectItemCaseSensitive(omd, "labels");
        if (!cJSON_IsObject(ol)) {
            cJSON_DeleteItemFromObjectCaseSensitive(omd, "labels");
            ol = cJSON_AddObjectToObject(omd, "labels");
        }
        const cJSON *l;
        cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(
                                  cJSON_GetObjectItemCaseSensitive(svc, "metadata"), "labels")) {
            cJSON_DeleteItemFromObjectCaseSensitive(ol, l->string);
            cJSON_AddItemToObject(ol, l->string, cJSON_Duplicate(l, 1));
        }
        cJSON *spec = cJSON_DetachItemFromObjectCaseSensitive(svc, "spec");
        const char *ip = rj_str(old, "spec.clusterIP");
        if (spec && *ip) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "clusterIP");
            cJSON_AddStringToObject(spec, "clusterIP", ip);
        }
        cJSON_ReplaceItemInObjectCaseSensitive(old, "spec", spec);
        rc = update_obj(ctx, o, &KUBE_RES_SERVICES, old, name, "UpdatedService",
                        "Updated the service", "FailedToUpdateService",
                        "Failed to update the service", ',');
    }
out:
    kube_result_release(&kr);
    cJSON_Delete(old);
    cJSON_Delete(svc);
    return rc;
}

static int submit_http(struct host_ctx *ctx, struct observed *o, struct rj_plan *p)
{
    char id[DASH_ID_MAX];
    int err = 0, rc;
    char *body = rj_build_submit_body(o->rj, p->status, &err);
    if (!body)
        rc = err ? err : -ENOMEM;
    else if ((rc = dashboard_call(ctx, o, "submit", "POST", "/api/jobs/", body)) == 0) {
        rc = dash_job_submit_reply(&o->reply, id, sizeof(id));
        dash_reply_free(&o->reply);
    }
    free(body);
    if (rc != -EINPROGRESS)   /* logged once, when the answer is taken */
        host_log(ctx, rc < 0 ? LOG_ERROR : LOG_INFO,
                 rc < 0 ? "Failed to submit the Ray job" : "Submitted the Ray job", "JobId",
                 rj_str(o->rj, "status.jobId"), "error", rc < 0 ? kube_strerror(rc) : NULL, NULL);
    return rj_after_submit(&o->in, p, rc);
}

/* run_actions' answer when the StopJob call is still out: nothing more this time */
#define STOP_PENDING 1
/* run_actions' answer when the RayJob turned out to be deleted already: done, no retry */
#define RAYJOB_GONE 2

/* 0, STOP_PENDING, RAYJOB_GONE, or a negative errno (a failed write: the caller requeues) */
static int run_actions(struct host_ctx *ctx, struct observed *o, struct rj_plan *p)
{
    unsigned a = p->actions;
    int rc = 0, err = 0;
    if ((a & RJ_ADD_FINALIZER) && (rc = patch_finalizers(ctx, o, true)) < 0)
        return rc;
    if ((a & RJ_STOP_JOB) && stop_job(ctx, o) == -EINPROGRESS)
        return STOP_PENDING;   /* the finalizer stays until the dashboard has answered */
    if ((a & RJ_REMOVE_FINALIZER) && (rc = patch_finalizers(ctx, o, false)) < 0)
        return rc == -ENOENT ? RAYJOB_GONE : rc;
    if (a & RJ_CREATE_CLUSTER) {
        cJSON *c = rj_build_cluster(o->rj, p->status, o->in.cfg.sidecar_restart_gate, &err);
        rc = create_child(ctx, o, &KUBE_RES_RAYCLUSTERS, c, err, false, "CreatedRayCluster",
                          "FailedToCreateRayCluster", "RayCluster");
        if (rc < 0)
            return rc;
    }
    if (a & RJ_CREATE_SUBMITTER) {
        cJSON *j = rj_build_submitter(o->rj, o->cluster, p->status, &err);
        rc = create_child(ctx, o, &KUBE_RES_JOBS, j, err, true, "CreatedRayJobSubmitter",
                          "FailedToCreateRayJobSubmitter", "Kubernetes Job");
        if (rc < 0)
            return rc;
    }
    if ((a & RJ_HEAD_SERVICE) && (rc = head_service(ctx, o)) < 0)
        return rc;
    if ((a & RJ_SUBMIT_HTTP) && (rc = submit_http(ctx, o, p)) < 0)
        return rc;
    if ((a & RJ_DELETE_CLUSTER) && o->cluster &&
        (rc = delete_obj(ctx, o, &KUBE_RES_RAYCLUSTERS, rj_str(o->cluster, "metadata.name"),
                         "DeletedRayCluster", "FailedToDeleteRayCluster", "cluster")) < 0)
        return rc;
    if ((a & RJ_DELETE_SUBMITTER) && o->submitter &&
        (rc = delete_obj(ctx, o, &KUBE_RES_JOBS, ctx->name, "DeletedRayJobSubmitter",
                         "FailedToDeleteRayJobSubmitter", "submitter K8s Job")) < 0)
        return rc;
    if ((a & RJ_SUSPEND_WORKERS) && (rc = suspend_workers(ctx, o)) < 0)
        return rc;
    if (a & RJ_DELETE_SELF) {
        struct kube_result kr = { 0 };
        rc = host_delete(ctx, &KUBE_RES_RAYJOBS, ctx->ns, ctx->name, NULL, &kr);
        kube_result_release(&kr);
        host_log(ctx, LOG_INFO, "RayJob is deleted", "error", rc < 0 ? kube_strerror(rc) : NULL, NULL);
        if (rc < 0 && rc != -ENOENT)
            return rc;
    }
    return 0;
}

static int write_status(struct host_ctx *ctx, struct observed *o, struct rj_plan *p)
{
    struct kube_result kr = { 0 };
    cJSON *obj = cJSON_Duplicate(o->rj, 1);
    if (!obj)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemReferenceToObject(obj, "status", p->status);
    int rc = host_update_status(ctx, &KUBE_RES_RAYJOBS, ctx->ns, obj, &kr);
    /* KubeRay logs every status write; the two states are what a reader
     * follows, so a write that keeps both (a timestamp, a message) is debug */
    bool changed = strcmp(rj_str(o->rj, "status.jobDeploymentStatus"),
                          rj_str(p->status, "jobDeploymentStatus")) != 0 ||
                   strcmp(rj_str(o->rj, "status.jobStatus"), rj_str(p->status, "jobStatus")) != 0;
    host_log(ctx, rc < 0 ? LOG_WARN : changed ? LOG_INFO : LOG_DEBUG,
             rc < 0 ? "Failed to update RayJob status" : "updateRayJobStatus",
             "oldJobDeploymentStatus", rj_str(o->rj, "status.jobDeploymentStatus"),
             "newJobDeploymentStatus", rj_str(p->status, "jobDeploymentStatus"),
             "oldJobStatus", rj_str(o->rj, "status.jobStatus"),
             "newJobStatus", rj_str(p->status, "jobStatus"),
             "error", rc < 0 ? kube_result_error(&kr, rc, o->err, sizeof(o->err)) : NULL, NULL);
    kube_result_release(&kr);
    cJSON_Delete(obj);
    return rc;
}

int rayjob_reconcile(struct host_ctx *ctx, struct host_result *res)
{
    struct observed o;
    struct rj_plan plan = { 0 };
    memset(&o, 0, sizeof(o));
    int rc = host_get(ctx, T_RAYJOBS, ctx->ns, ctx->name, &o.rj);
    if (rc == -ENOENT) {
        host_log(ctx, LOG_INFO, "RayJob resource not found.", NULL);
        rayjob__metrics_forget(ctx->ns, ctx->name);
        return 0;
    }
    if (rc < 0)
        return rc;
    const char *managed = rj_str(o.rj, "spec.managedBy");
    if (*managed && strcmp(managed, "ray.io/kuberay-operator") != 0) {
        host_log(ctx, LOG_INFO, "Skipping RayJob managed by a custom controller", "managed-by",
                 managed, NULL);
        goto out;
    }
    if ((rc = observe(ctx, &o)) < 0 || (rc = rj_decide(&o.in, &plan)) < 0)
        goto out;
    host_log(ctx, LOG_DEBUG, "RayJob", "JobStatus", rj_str(o.rj, "status.jobStatus"),
             "JobDeploymentStatus", rj_str(o.rj, "status.jobDeploymentStatus"),
             "SubmissionMode", rj_mode(o.rj), NULL);
    for (int i = 0; i < plan.nevents; i++)
        host_event(ctx, o.rj, plan.events[i].type, plan.events[i].reason, plan.events[i].action,
                   "%s", plan.events[i].message);
    char old_deploy[32];
    snprintf(old_deploy, sizeof(old_deploy), "%s", rj_str(o.rj, "status.jobDeploymentStatus"));
    if (strcmp(old_deploy, "Initializing") == 0 &&
        (rc = rayjob__batch_submit(ctx, o.rj, res->message, sizeof(res->message))) < 0)
        goto out;   /* KubeRay: nothing else happens until the scheduler takes it */
    if ((rc = run_actions(ctx, &o, &plan)) < 0)
        goto requeue;
    if (rc == RAYJOB_GONE) {   /* the delete's watch event ends its key; no status to write */
        rc = 0;
        goto out;
    }
    if (rc == STOP_PENDING) {
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = RJ_DASH_PENDING_MS;
        rc = 0;
        goto out;
    }
    {
        /* CleanupOnCompletion: every reconcile of a finished RayJob, and when a
         * suspend or retry has released the cluster */
        const char *nd = rj_str(plan.status, "jobDeploymentStatus");
        if (!strcmp(old_deploy, "Complete") || !strcmp(old_deploy, "Failed") ||
            ((!strcmp(old_deploy, "Suspending") || !strcmp(old_deploy, "Retrying")) &&
             plan.write_status && (!strcmp(nd, "Suspended") || !strcmp(nd, "New"))))
            rayjob__batch_cleanup(ctx, o.rj, o.cluster);
    }
    if (plan.error < 0) {
        rc = plan.error;
        snprintf(res->message, sizeof(res->message), "%s", plan.error_msg);
        goto out;
    }
    if (plan.write_status) {
        if ((rc = write_status(ctx, &o, &plan)) < 0)
            goto requeue;
        rayjob__metrics_observe(o.rj, old_deploy, plan.status, o.in.now_ms);
    }
    if (plan.requeue) {
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = (uint64_t)plan.requeue_ms;
    }
    goto out;
requeue:
    snprintf(res->message, sizeof(res->message), "%.255s", o.err[0] ? o.err : kube_strerror(rc));
out:
    rj_plan_free(&plan);
    observed_free(&o);
    return rc;
}

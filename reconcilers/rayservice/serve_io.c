/*
 * serve_io.c - a RayService's calls into its Ray clusters (reconcileServe,
 * updateHeadPodServeLabel): the Serve applications' status, the PUT of serveConfigV2
 * when KubeRay's rule asks for it, and the head Pod's ray.io/serve label from its Serve
 * proxy's /-/healthz. Every call has KubeRay's deadline (2 s direct, 10 s through the
 * API server proxy, dashboard/).
 *
 * What was PUT is remembered in memory (rs_memo, bounded) and, as a SHA-1 of the config,
 * in the cluster's rayop.io/serve-config-hash annotation: a controller restarted in the
 * middle of an upgrade knows the cluster already has the config and does not PUT again
 * (KubeRay's memory is in-process only and re-PUTs after a restart).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "dashboard/dashboard.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/rayservice/internal.h"
#include "util/json.h"
#include "util/util.h"

static int config_hash(const char *config, char out[41])
{
    unsigned char d[20];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA1, config, strlen(config), d) < 0)
        return -EIO;
    for (int i = 0; i < 20; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* The cluster's Serve applications; *runs: whether it runs exactly the PUT body want
 * already (NULL: not asked). */
static int get_status(struct rsr *r, const cJSON *cluster, const struct dash_target *t,
                      const char *want, bool *runs, cJSON **apps, bool *ready, char *err, size_t n)
{
    struct dash_reply rep = { 0 };
    char key[600];
    rayservice__call_key(r, cluster, "status", key, sizeof(key));
    int rc = dash_async_call(key, t, "GET", "/api/serve/applications/?api_type=declarative", NULL, 0,
                           RS_ASYNC_WAIT_MS, &rep);
    if (rc == 0 && (rep.code < 200 || rep.code > 299)) {
        util_format_err(err, n, "GetServeDetails: HTTP %d: %.200s", rep.code, rep.body ? rep.body : "");
        rc = -EIO;
    } else if (rc == 0 && (rc = rs_serve_parse(rep.body, rep.len, apps, ready)) < 0) {
        util_format_err(err, n, "GetServeDetails: unreadable answer (%s)", kube_strerror(rc));
    } else if (rc == 0) {
        *runs = want && rs_serve_runs_config(rep.body, rep.len, want);
    } else if (rc < 0) {
        util_format_err(err, n, "GetServeDetails: %s", kube_strerror(rc));
    }
    dash_reply_free(&rep);
    return rc;
}

/* A take-over from KubeRay, which keeps the config it sent in memory only: the cluster
 * carries no serve-config-hash (rayop never sent it anything), and the status as read says
 * it is the active cluster, no upgrade is pending, the status is of the current generation
 * and every application is RUNNING. Then what runs is the current serveConfigV2 and it is
 * adopted instead of sent again (an identical PUT is harmless to Ray, but a take-over
 * promises no Serve re-deployment). A cluster rayop has sent a config to is never adopted
 * this way: its hash annotation decides. */
static bool adopt_running(const struct rsr *r, const cJSON *cluster, const char *cname)
{
    const cJSON *ann = json_get(cluster, "metadata.annotations"), *apps, *a;
    int64_t og = -1;

    if (cJSON_GetObjectItemCaseSensitive(ann, RS_ANN_SERVE_HASH) ||
        rs_int(r->orig, "observedGeneration", &og) < 0 || og != r->generation ||
        strcmp(cname, rs_str(r->orig, "activeServiceStatus.rayClusterName")) != 0 ||
        *rs_str(r->orig, "pendingServiceStatus.rayClusterName"))
        return false;
    apps = json_get(r->orig, "activeServiceStatus.applicationStatuses");
    if (!cJSON_IsObject(apps) || !apps->child)
        return false;
    cJSON_ArrayForEach(a, apps)
        if (strcmp(rs_str(a, "status"), "RUNNING") != 0)
            return false;
    return true;
}

/* One cluster's Serve: KubeRay's reconcileServe, or with restore_only (a cluster this
 * reconcile does not serve to) only the re-deploy of applications it lost. A cluster that
 * is not to get a new config (restore_only; the active one of an incremental upgrade, the
 * pending one of its rollback) and reports no application at all gets again the config last
 * sent to it (the current one when this process never sent it any): KubeRay leaves such a
 * cluster without applications until the upgrade switches away from it, and the serve
 * Service selects it meanwhile. */
static int serve_cluster(struct rsr *r, const cJSON *cluster, bool restore_only, bool *ready,
                         cJSON **apps)
{
    const char *cname = rs_str(cluster, "metadata.name");
    const char *cfg = rs_str(r->rs, "spec.serveConfigV2");
    struct dash_target t;
    char key[320], err[512] = "", hash[41];
    const char *why = "";
    char *memo = NULL, *want = NULL;
    bool runs = false;
    int rc, tc = -1;
    *ready = false;
    *apps = NULL;
    /* the head must be ready (RayClusterStatusConditions, on by default in KubeRay) */
    if (!rs_cond_true(json_get(cluster, "status"), "HeadPodReady")) {
        host_log(r->ctx, LOG_INFO, "The head Pod is not ready, requeue the resource event to avoid "
                 "redundant custom resource status updates.", "clusterName", cname, NULL);
        return 0;
    }
    if ((rc = rayservice__dashboard(r, cluster, &t)) < 0)
        return rc;
    bool active = !strcmp(cname, rs_str(r->st, "activeServiceStatus.rayClusterName"));
    bool incr = rs_incremental(r->rs, &r->gates);
    bool upgrading = incr && rs_cond_true(r->st, "UpgradeInProgress");
    bool rollback = incr && rs_cond_true(r->st, "RollbackInProgress");
    bool skip = restore_only || (active && upgrading && !rollback) || (!active && rollback);
    snprintf(key, sizeof(key), "%s/%s", r->ctx->ns, r->ctx->name);
    memo = rs_memo_get(key, cname);
    if (!memo && *cfg && config_hash(cfg, hash) == 0 &&
        !strcmp(rs_str(cJSON_GetObjectItemCaseSensitive(json_get(cluster, "metadata.annotations"),
                                                        RS_ANN_SERVE_HASH), ""), hash)) {
        /* a restarted controller: the cluster says it has this config already */
        memo = strdup(cfg);
        if (memo)
            rs_memo_put(key, cname, cfg);
    } else if (!memo && *cfg && active && !restore_only && adopt_running(r, cluster, cname) &&
               (memo = strdup(cfg))) {
        host_log(r->ctx, LOG_INFO, "Adopting the Serve applications running on the cluster "
                 "(taken over: every application RUNNING for this generation)",
                 "clusterName", cname, NULL);
        rs_memo_put(key, cname, cfg);
        if (config_hash(cfg, hash) == 0)
            rayservice__patch_annotation(r, cluster, RS_ANN_SERVE_HASH, hash);
    }
    if (incr) {
        const cJSON *s = active ? json_get(r->st, "activeServiceStatus")
                                : json_get(r->st, "pendingServiceStatus");
        tc = rayservice__target_capacity(s);
    }
    /* what a PUT would send, to see whether the cluster runs it already (NULL: unknown) */
    if (*cfg && rs_serve_config_json(cfg, strlen(cfg), tc, &want, err, sizeof(err)) < 0)
        want = NULL;
    err[0] = '\0';
    if ((rc = get_status(r, cluster, &t, want, &runs, apps, ready, err, sizeof(err))) == -EINPROGRESS) {
        /* a slow dashboard: keep what the status says, look again soon (async.c) */
        host_log(r->ctx, LOG_INFO, "Serve status not answered yet; keeping the last one",
                 "clusterName", cname, NULL);
        const cJSON *prev = json_get(r->st, active ? "activeServiceStatus.applicationStatuses"
                                                   : "pendingServiceStatus.applicationStatuses");
        *apps = prev ? cJSON_Duplicate(prev, 1) : NULL;
        *ready = false;
        r->requeue_ms = 300;
        rc = 0;
        goto out;
    }
    if (rc < 0) {
        host_log(r->ctx, LOG_WARN, "failed to get Serve application statuses from the dashboard",
                 "clusterName", cname, "error", err, NULL);
        goto out;
    }
    bool need = rs_serve_need_submit(memo, cfg, *apps, &why);
    bool lost = !*apps || !(*apps)->child;
    /* what a PUT sends: a cluster that is not to get a new config gets back what it lost */
    const char *put_cfg = skip && memo ? memo : cfg;
    if (need && skip && lost)
        why = "The cluster lost its Serve applications (a head restarted without GCS FT): "
              "deploying again the config last sent to it.";
    char put_key[600];
    rayservice__call_key(r, cluster, "put", put_key, sizeof(put_key));
    if (need && runs && !skip && dash_async_pending(put_key, "PUT")) {
        /* Our own PUT runs already but its answer has not been taken (a slow proxy: the
         * PUT outlived the reconcile's wait, and this reconcile's status read came after
         * Ray applied it). The answer is taken below, with its Event, as KubeRay records
         * UpdatedServeApplications after every PUT it makes. */
        runs = false;
    }
    if (need && runs) {
        /* The cluster runs this very config: sent by this controller's previous life (killed
         * before the cluster's hash annotation was written) or by another. Sending it again
         * would change nothing; remember it instead. */
        need = false;
        why = "The cluster's applications already run the current V2 Serve config.";
        rs_memo_put(key, cname, cfg);
        if (config_hash(cfg, hash) == 0 &&
            strcmp(rs_str(cJSON_GetObjectItemCaseSensitive(json_get(cluster, "metadata.annotations"),
                                                           RS_ANN_SERVE_HASH), ""), hash) != 0)
            rayservice__patch_annotation(r, cluster, RS_ANN_SERVE_HASH, hash);
    }
    host_log(r->ctx, LOG_INFO, "checkIfNeedSubmitServeApplications", "shouldUpdate",
             need ? "true" : "false", "reason", why, "clusterName", cname, NULL);
    if (need && (!skip || lost)) {
        rc = rayservice__put_config(r, cluster, &t, put_cfg, tc, "put", err, sizeof(err));
        if (rc == -EINPROGRESS) {
            *ready = false;
            r->requeue_ms = 300;
            rc = 0;
            goto out;
        }
        if (rc < 0) {
            rayservice__event(r, HOST_EVENT_WARNING, "FailedToUpdateServeApplications", "Update",
                              "Failed to update serve applications to the RayCluster %s/%s: %s", r->ctx->ns,
                              cname, err);
            goto out;
        }
        rs_memo_put(key, cname, put_cfg);
        if (*put_cfg && config_hash(put_cfg, hash) == 0)
            rayservice__patch_annotation(r, cluster, RS_ANN_SERVE_HASH, hash);
        rayservice__event(r, HOST_EVENT_NORMAL, "UpdatedServeApplications", "Update",
                          "Updated serve applications to the RayCluster %s/%s", r->ctx->ns, cname);
        /* Deliberately stricter than KubeRay: what was read before this PUT says nothing
         * about the config just sent, so the cluster is not "ready" until the next read. */
        *ready = false;
    }
    if (incr && upgrading && !restore_only && (rc = rayservice__incremental_capacity(r, cluster)) < 0)
        goto out;
    rc = 0;
out:
    dash_target_wipe(&t);
    free(memo);
    free(want);
    return rc;
}

int rayservice__reconcile_serve(struct rsr *r, const cJSON *cluster, bool *ready, cJSON **apps)
{
    return serve_cluster(r, cluster, false, ready, apps);
}

void rayservice__restore_serve(struct rsr *r, const cJSON *cluster)
{
    bool ready = false;
    cJSON *apps = NULL;
    int rc = serve_cluster(r, cluster, true, &ready, &apps);
    /* the status reports no applications for it, as KubeRay's does not read them */
    cJSON_Delete(apps);
    if (rc < 0) {
        host_log(r->ctx, LOG_WARN, "could not check the Serve applications of the cluster not being "
                 "upgraded to", "clusterName", rs_str(cluster, "metadata.name"), "error",
                 kube_strerror(rc), NULL);
        r->err_rc = 0;
    }
}

static const cJSON *head_pod(const cJSON *pods)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(json_get(p, "metadata.labels"), RC_LABEL_NODE_TYPE);
        if (cJSON_IsString(t) && !strcmp(t->valuestring, RC_NODE_HEAD))
            return p;
    }
    return NULL;
}

/* The Serve proxy's /-/healthz on the head Pod: through the API server's pod proxy with
 * --use-kubernetes-proxy, else http://POD-IP:PORT. */
/* 1 healthy, 0 not, -EINPROGRESS not answered yet */
static int proxy_healthy(struct rsr *r, const cJSON *cluster, const cJSON *pod, int port)
{
    char key[600];
    struct dash_target t;
    struct dash_reply rep = { 0 };
    char addr[128];
    int rc;
    if (r->ctx->settings && r->ctx->settings->use_kubernetes_proxy) {
        memset(&t, 0, sizeof(t));
        t.mode = DASH_PROXY;
        t.kube = host_kube(r->ctx);
        t.timeout_ms = DASH_PROXY_TIMEOUT_MS;
        /* a Serve proxy that answers 503 is unhealthy now: retrying it for seconds held
         * up every RayService behind this one (all of them after a kubesim restart) */
        t.probe = true;
        rc = snprintf(t.base, sizeof(t.base), "/api/v1/namespaces/%s/pods/%s:%d/proxy", r->ctx->ns,
                      rs_str(pod, "metadata.name"), port);
        if (!t.kube || rc < 0 || (size_t)rc >= sizeof(t.base))
            return 0;
    } else {
        const char *ip = rs_str(pod, "status.podIP");
        if (!*ip)
            return 0;
        snprintf(addr, sizeof(addr), strchr(ip, ':') ? "[%s]:%d" : "%s:%d", ip, port);
        if (dash_target_direct(&t, addr) < 0)
            return 0;
    }
    rayservice__call_key(r, cluster, "healthz", key, sizeof(key));
    rc = dash_async_call(key, &t, "GET", "/-/healthz", NULL, 0, RS_ASYNC_WAIT_MS, &rep);
    if (rc == -EINPROGRESS)
        return rc;
    bool ok = rc == 0 && rep.code == 200;
    dash_reply_free(&rep);
    return ok;
}

int rayservice__head_serve_label(struct rsr *r, const cJSON *cluster)
{
    cJSON *pods = NULL;
    int rc;
    if (!cluster)
        return 0;
    const char *cname = rs_str(cluster, "metadata.name");
    rc = host_list_cluster(r->ctx, T_PODS, r->ctx->ns, cname, &pods);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    const cJSON *head = head_pod(pods);
    if (!head) {
        cJSON_Delete(pods);
        host_log(r->ctx, LOG_INFO, "found 0 head", "clusterName", cname, NULL);
        return -ENOENT;   /* KubeRay: "found 0 head. cluster name ..." */
    }
    const cJSON *c0 = cJSON_GetArrayItem(json_get(head, "spec.containers"), 0), *p;
    int port = 8000;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c0, "ports")) {
        int64_t v;
        if (!strcmp(rs_str(p, "name"), "serve") && rs_int(p, "containerPort", &v) == 0)
            port = (int)v;
    }
    const char *old = rs_str(cJSON_GetObjectItemCaseSensitive(json_get(head, "metadata.labels"),
                                                              RC_LABEL_SERVE), "");
    const char *want = "false";
    if (!cJSON_IsTrue(json_get(r->rs, "spec.excludeHeadPodFromServeSvc"))) {
        int h = proxy_healthy(r, cluster, head, port);
        if (h == -EINPROGRESS) {   /* not answered yet: the label stays as it is */
            r->requeue_ms = 300;
            want = old;
        } else if (h == 1) {
            want = "true";
        }
    }
    if (*want && strcmp(old, want)) {
        char patch[160];
        struct kube_result kr = { 0 };
        struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
        int n = snprintf(patch, sizeof(patch), "{\"metadata\":{\"labels\":{\"%s\":\"%s\"}}}",
                         RC_LABEL_SERVE, want);
        rc = host_patch(r->ctx, &KUBE_RES_PODS, r->ctx->ns, rs_str(head, "metadata.name"), patch,
                        (size_t)n, &po, &kr);
        if (rc < 0)
            rayservice__event(r, HOST_EVENT_WARNING, "FailedToUpdateHeadPodServeLabel", "Update",
                              "Failed to update the serve label to \"%s\" for the Head Pod %s/%s: %s", want,
                              r->ctx->ns, rs_str(head, "metadata.name"), rayservice__api_error(r, &kr, rc));
        else
            rayservice__event(r, HOST_EVENT_NORMAL, "UpdatedHeadPodServeLabel", "Update",
                              "Updated the serve label to \"%s\" for the Head Pod %s/%s", want, r->ctx->ns,
                              rs_str(head, "metadata.name"));
        kube_result_release(&kr);
    } else {
        rc = 0;
    }
    cJSON_Delete(pods);
    return rc;
}

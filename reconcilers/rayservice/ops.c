/*
 * ops.c - the small operations the RayService steps (reconcile.c, serve_io.c,
 * upgrade.c) share: an Event on the RayService, the active or pending service status
 * object, a merge patch of one annotation on a RayCluster, the Serve target capacity
 * of a status, and the calls into a cluster's dashboard (its target with the Ray
 * token, the key of an async call, the PUT of serveConfigV2). It calls none of the
 * steps, so they call each other one way: reconcile -> serve_io -> upgrade -> ops.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard/dashboard.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/rayservice/internal.h"
#include "util/json.h"
#include "util/util.h"

const struct kube_resource RS_RES_ENDPOINTSLICES = { "discovery.k8s.io", "v1", "endpointslices", 1 };
const struct kube_resource RS_RES_GATEWAYS = { "gateway.networking.k8s.io", "v1", "gateways", 1 };
const struct kube_resource RS_RES_HTTPROUTES = { "gateway.networking.k8s.io", "v1", "httproutes", 1 };

void rayservice__event(struct rsr *r, const char *type, const char *reason, const char *action,
                       const char *fmt, ...)
{
    char note[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof(note), fmt, ap);
    va_end(ap);
    host_event(r->ctx, r->rs, type, reason, action, "%s", note);
}

cJSON *rayservice__service_status(struct rsr *r, const char *which)
{
    cJSON *s = cJSON_GetObjectItemCaseSensitive(r->st, which);
    if (!cJSON_IsObject(s)) {
        cJSON_DeleteItemFromObjectCaseSensitive(r->st, which);
        s = cJSON_AddObjectToObject(r->st, which);
    }
    return s;
}

int rayservice__target_capacity(const cJSON *s)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "targetCapacity");
    return cJSON_IsNumber(v) ? (int)v->valuedouble : -1;
}

int rayservice__patch_annotation(struct rsr *r, const cJSON *cluster, const char *key, const char *val)
{
    struct kube_result kr = { 0 };
    cJSON *p = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(p, "metadata");
    cJSON *a = cJSON_AddObjectToObject(md, "annotations");
    char *text = NULL;
    int rc = -ENOMEM;
    if (!a)
        goto out;
    if (val)
        cJSON_AddStringToObject(a, key, val);
    else
        cJSON_AddNullToObject(a, key);
    if (!(text = cJSON_PrintUnformatted(p)))
        goto out;
    struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
    rc = host_patch(r->ctx, &KUBE_RES_RAYCLUSTERS, r->ctx->ns, rs_str(cluster, "metadata.name"),
                    text, strlen(text), &po, &kr);
out:
    kube_result_release(&kr);
    free(text);
    cJSON_Delete(p);
    return rc;
}

/* A token-auth cluster's token (authOptions.mode token, Ray >= 2.52), sent as
 * x-ray-authorization as KubeRay's dashboard client does: the cluster's Secret from the
 * cache when rayop made it, else read live (a user-named Secret is not cached). */
static int dashboard_token(struct rsr *r, const cJSON *cluster, struct dash_target *t)
{
    struct kube_result kr = { 0 };
    int rc = rc_dashboard_token(r->ctx, cluster, t, &kr);
    if (rc < 0)
        rayservice__api_error(r, &kr, rc);   /* kept for the reconcile's error message */
    kube_result_release(&kr);
    return rc;
}

/* The cluster's dashboard without the token. */
static int dashboard_target(struct rsr *r, const cJSON *cluster, struct dash_target *t)
{
    char svc[254], url[600];
    int rc;
    if (r->ctx->settings && r->ctx->settings->use_kubernetes_proxy) {
        struct kube_client *kc = host_kube(r->ctx);
        const char *s = rs_str(cluster, "status.head.serviceName");
        if (!kc)
            return -ENOTCONN;
        if (!*s) {
            if ((rc = rc_head_service_name(cluster, svc, sizeof(svc))) < 0)
                return rc;
            s = svc;
        }
        return dash_target_proxy(t, kc, r->ctx->ns, s, "dashboard");
    }
    struct rc_build_opts o;
    char fqdn[512];
    rc_build_opts_from_env(&o);
    if ((rc = rc_head_service_fqdn(cluster, &o, fqdn, sizeof(fqdn))) < 0)
        return rc;
    snprintf(url, sizeof(url), "%s:%d", fqdn, rc_dashboard_port(cluster));
    return dash_target_direct(t, url);
}

/* The cluster's dashboard: its head Service through the API server's proxy with
 * --use-kubernetes-proxy, else http://HEAD-SVC-FQDN:DASHBOARD-PORT; with the cluster's Ray
 * token when it uses token auth. */
int rayservice__dashboard(struct rsr *r, const cJSON *cluster, struct dash_target *t)
{
    int rc = dashboard_target(r, cluster, t);
    if (rc == 0 && (rc = dashboard_token(r, cluster, t)) < 0)
        dash_target_wipe(t);
    return rc;
}


void rayservice__call_key(struct rsr *r, const cJSON *cluster, const char *op, char *out, size_t n)
{
    snprintf(out, n, "%s/%s\n%s\n%s", r->ctx->ns, r->ctx->name, rs_str(cluster, "metadata.name"), op);
}

int rayservice__put_config(struct rsr *r, const cJSON *cluster, const struct dash_target *t,
                           int target_capacity, const char *op, char *err, size_t n)
{
    char key[600];
    const char *cfg = rs_str(r->rs, "spec.serveConfigV2");
    char *body = NULL;
    char perr[256] = "";
    struct dash_reply rep = { 0 };
    int rc = rs_serve_config_json(cfg, strlen(cfg), target_capacity, &body, perr, sizeof(perr));
    if (rc < 0) {
        util_format_err(err, n, "%s", perr);
        return rc;
    }
    rayservice__call_key(r, cluster, op, key, sizeof(key));
    rc = dash_async_call(key, t, "PUT", "/api/serve/applications/", body, strlen(body), RS_ASYNC_WAIT_MS,
                       &rep);
    if (rc != -EINPROGRESS)   /* logged once, when the PUT's answer is taken */
        host_log(r->ctx, LOG_INFO, "updateServeDeployment", "clusterName",
                 rs_str(cluster, "metadata.name"), "error", rc < 0 ? kube_strerror(rc) : NULL, NULL);
    if (rc == 0 && (rep.code < 200 || rep.code > 299)) {
        util_format_err(err, n, "UpdateDeployments fail: %d %.300s", rep.code, rep.body ? rep.body : "");
        rc = -EIO;
    } else if (rc < 0 && rc != -EINPROGRESS) {
        util_format_err(err, n, "%s", kube_strerror(rc));
    }
    dash_reply_free(&rep);
    free(body);
    return rc;
}

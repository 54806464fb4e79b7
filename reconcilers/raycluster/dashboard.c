/*
 * dashboard.c - a RayCluster's dashboard credentials, for the kinds that talk to the
 * cluster's Ray dashboard (RayJob submits and polls jobs, RayService reads and pushes
 * Serve applications). KubeRay's GetRayDashboardClientFunc sends a token-auth
 * cluster's token as x-ray-authorization; both kinds need exactly that, so it lives
 * once here, beside rc_auth_token_secret which names the Secret.
 */
#include <errno.h>

#include "dashboard/dashboard.h"
#include "kube/kube.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "util/util.h"

int rc_dashboard_token(struct host_ctx *ctx, const cJSON *cluster, struct dash_target *t,
                       struct kube_result *kr)
{
    char name[300], why[256];
    cJSON *sec = NULL;
    const char *ns = kobj_meta_str(cluster, "namespace");
    int rc = rc_auth_token_secret(cluster, name, sizeof(name));
    if (rc < 0 || !name[0])
        return rc;
    /* from the cache when rayop made the Secret (it is labelled created-by and so
     * cached); a user-named Secret is not, so it is read live */
    rc = host_get(ctx, "v1/secrets", ns, name, &sec);
    if (rc == -ENOENT) {
        struct kube_client *kc = host_kube(ctx);
        rc = kc ? kube_get(kc, &KUBE_RES_SECRETS, ns, name, kr) : -ENOTCONN;
        if (rc == 0) {
            sec = kr->body;
            kr->body = NULL;
        }
    }
    if (rc == 0)
        rc = dash_target_token_from_secret(t, sec);
    if (rc < 0)
        host_log(ctx, LOG_WARN, "Failed to read the Ray auth token", "secret", name, "error",
                 kube_result_error(kr, rc, why, sizeof(why)), NULL);
    cJSON_Delete(sec);
    return rc;
}

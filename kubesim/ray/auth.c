/*
 * auth.c - Ray's token authentication (Ray >= 2.52, RAY_AUTH_MODE=token) as kubesim's
 * simulated dashboards play it. A head Pod whose Ray container has RAY_AUTH_MODE=token
 * makes a cluster that checks every dashboard request the way Ray's token_auth_middleware
 * does: the token from "Authorization", else "X-Ray-Authorization" (the header KubeRay
 * and proxies use, since the API server's proxy consumes Authorization), as
 * "Bearer TOKEN"; none -> 401 "Unauthorized: Missing authentication token", a wrong one
 * -> 403 "Forbidden: Invalid authentication token". The expected token is RAY_AUTH_TOKEN
 * of that container: a value, or a secretKeyRef read from the store when the cluster
 * comes up. Containers' env is resolved the same way for the submitters kubesim plays,
 * so `ray job submit` in a Pod sends what its env gives it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "kubesim/ray/internal.h"
#include "kubesim/store/store.h"

/* The value of a Secret key (data, base64) in ns, or NULL. Caller frees (a credential:
 * wiped first). */
static char *secret_value(struct ray *r, const char *ns, const cJSON *ref)
{
    const char *name = kobj_str(ref, "name"), *key = kobj_str(ref, "key");
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    char *out = NULL;
    size_t n = 0;

    if (!r->r_secrets || !name || !key)
        return NULL;
    if (store_get(r->store, r->r_secrets, ns, name, &o, &st) == 0) {
        const char *v = kobj_str(kobj_get(store_obj_json(o), "data"), key);
        if (v && kobj_base64_decode(v, strlen(v), &out, &n) < 0)
            out = NULL;
        store_obj_unref(o);
    }
    store_status_clear(&st);
    return out;
}

cJSON *ray__env_resolve(struct ray *r, const char *ns, const cJSON *env)
{
    cJSON *out = env ? cJSON_Duplicate(env, true) : NULL, *e;

    cJSON_ArrayForEach(e, out) {
        const cJSON *ref = kobj_get(kobj_get(e, "valueFrom"), "secretKeyRef");
        char *v;
        if (!ref || kobj_get(e, "value") || !(v = secret_value(r, ns, ref)))
            continue;
        cJSON_AddStringToObject(e, "value", v);
        explicit_bzero(v, strlen(v));
        free(v);
    }
    return out;
}

/* The Ray container: KubeRay's is the first one. */
static const cJSON *ray_container(const cJSON *pod)
{
    const cJSON *cts = kobj_get(kobj_get(pod, "spec"), "containers");
    return cJSON_IsArray(cts) ? cts->child : NULL;
}

char *ray__pod_auth_token(struct ray *r, const cJSON *pod)
{
    const cJSON *md = kobj_get(pod, "metadata"), *e;
    const char *ns = kobj_str(md, "namespace"), *mode = NULL;
    const cJSON *tok = NULL;

    cJSON_ArrayForEach(e, kobj_get(ray_container(pod), "env")) {
        const char *n = kobj_str(e, "name");
        if (n && !strcmp(n, "RAY_AUTH_MODE"))
            mode = kobj_str(e, "value");
        else if (n && !strcmp(n, "RAY_AUTH_TOKEN"))
            tok = e;
    }
    if (!mode || strcmp(mode, "token") != 0)
        return NULL;
    if (kobj_str(tok, "value"))
        return strdup(kobj_str(tok, "value"));
    char *v = ns ? secret_value(r, ns, kobj_get(kobj_get(tok, "valueFrom"), "secretKeyRef"))
                 : NULL;
    /* token mode without a token Ray can read: no request can be authenticated */
    return v ? v : strdup("");
}

/* Health paths Ray leaves open so probes work without a token. */
static bool open_path(const char *path)
{
    static const char *const open[] = { "/api/healthz", "/api/gcs_healthz",
                                        "/api/local_raylet_healthz", NULL };
    for (size_t i = 0; open[i]; i++)
        if (!strcmp(path, open[i]))
            return true;
    return false;
}

int ray__auth_check(const struct ray_cluster *c, const char *path, const char *authz,
                    const char *x_ray_authz, struct ray_resp *out)
{
    const char *h = authz && *authz ? authz : x_ray_authz;
    size_t n;

    if (!c->auth_token || open_path(path))
        return 0;
    if (!h || !*h)
        return ray__resp_text(out, 401, "Unauthorized: Missing authentication token") < 0
                   ? -ENOMEM : 1;
    n = strlen(c->auth_token);
    if (strncmp(h, "Bearer ", 7) != 0 || !*c->auth_token || strlen(h + 7) != n ||
        memcmp(h + 7, c->auth_token, n) != 0)
        return ray__resp_text(out, 403, "Forbidden: Invalid authentication token") < 0
                   ? -ENOMEM : 1;
    return 0;
}

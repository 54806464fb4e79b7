/*
 * build_access.c - the objects that let users reach a RayCluster: the dashboard
 * Ingress of `headGroupSpec.enableIngress` (common/ingress.go
 * BuildIngressForHeadService) and the token Secret of `authOptions`
 * (reconcileAuthSecret / createAuthSecret in raycluster_controller.go).
 *
 * The token itself is random; the caller draws it (KubeRay: 32 bytes of
 * crypto/rand) so these stay pure functions. The Secret must never be logged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/internal.h"

int rc_auth_secret_name(const cJSON *rc, char *out, size_t cap)
{
    const cJSON *auth = kobj_get(raycluster__spec(rc), "authOptions");
    const char *sn = kobj_str(auth, "secretName");
    if (cap == 0)
        return -ENAMETOOLONG;
    out[0] = '\0';
    /* Only for mode "token" (the Pods reference the Secret exactly then), unless the
     * API server checks tokens (enableK8sTokenAuth) or the user names a Secret. */
    if (!raycluster__auth_token_enabled(rc) || raycluster__k8s_token_auth(rc) || (sn && *sn))
        return 0;
    raycluster__check_name(raycluster__name(rc), out, cap);
    return 0;
}

int rc_auth_token_secret(const cJSON *rc, char *out, size_t cap)
{
    const char *sn = kobj_str(kobj_get(raycluster__spec(rc), "authOptions"), "secretName");
    if (cap == 0)
        return -ENAMETOOLONG;
    out[0] = '\0';
    if (!raycluster__auth_token_enabled(rc))
        return 0;
    if (sn && *sn)
        snprintf(out, cap, "%s", sn);
    else
        raycluster__check_name(raycluster__name(rc), out, cap);
    return 0;
}

/* The token text (base64 of the random bytes, as KubeRay makes it) as the API server
 * stores it in data: base64 once more. KubeRay sends stringData and lets the server
 * encode; we send data, which every server (kubesim included) stores as is. */
static char *token_data(const unsigned char *in, size_t n)
{
    size_t tl = kobj_base64_len(n);
    char *text = malloc(tl), *out = malloc(kobj_base64_len(tl - 1));
    if (text && out) {
        kobj_base64_encode(in, n, text);
        kobj_base64_encode((const unsigned char *)text, tl - 1, out);
    }
    if (text) {
        explicit_bzero(text, tl);
        free(text);
    }
    if (!text && out) {
        free(out);
        out = NULL;
    }
    return out;
}

cJSON *rc_build_auth_secret(const cJSON *rc, const unsigned char *token, size_t n, int *err)
{
    struct rcb b = { 0 };
    char name[128];
    char *text;
    cJSON *s, *meta;
    if (rc_auth_secret_name(rc, name, sizeof(name)) < 0 || !name[0])
        return NULL;
    if (!token || n == 0) {
        if (err)
            *err = -EINVAL;
        return NULL;
    }
    if (!(text = token_data(token, n))) {
        if (err)
            *err = -ENOMEM;
        return NULL;
    }
    s = raycluster__build_object(&b, "v1", "Secret", name, raycluster__namespace(rc), &meta);
    raycluster__build_set_str(&b, raycluster__build_obj(&b, meta, "labels"), RC_LABEL_CLUSTER, raycluster__name(rc));
    /* rayop: the watcher caches Secrets by this label (KubeRay sets only ray.io/cluster). */
    raycluster__build_set_str(&b, raycluster__build_obj(&b, meta, "labels"), RC_LABEL_CREATED_BY, RC_CREATED_BY);
    raycluster__build_set_str(&b, raycluster__build_obj(&b, s, "data"), "auth_token", text);
    raycluster__build_owner_ref(&b, s, rc);
    /* The token is a credential: wipe the copy we made before freeing it. */
    explicit_bzero(text, strlen(text));
    free(text);
    return raycluster__build_done(&b, s, err);
}

/* The object the head is exposed with (Ingress or Route): apiVersion, kind, metadata with
 * name (checked, after a cut to max characters when max >= 0), namespace and the labels
 * KubeRay gives both, and every cluster annotation but skip (may be NULL). Returns the
 * object (b->err on failure); *meta receives its metadata. */
static cJSON *head_access_object(struct rcb *b, const cJSON *rc, const char *api, const char *kind,
                                 const char *suffix, int max, const char *skip, cJSON **meta)
{
    const cJSON *anns = raycluster__json_path(rc, "metadata", "annotations", NULL), *a;
    char name[300], tmp[300], id[300];
    cJSON *obj, *labels;
    snprintf(tmp, sizeof(tmp), "%s-%s", raycluster__name(rc), suffix);
    if (max >= 0 && (int)strlen(tmp) > max)
        tmp[max] = '\0';
    raycluster__check_name(tmp, name, sizeof(name));
    snprintf(tmp, sizeof(tmp), "%s-head", raycluster__name(rc));
    raycluster__check_label(tmp, id, sizeof(id));
    obj = raycluster__build_object(b, api, kind, name, raycluster__namespace(rc), meta);
    labels = raycluster__build_obj(b, *meta, "labels");
    raycluster__build_set_str(b, labels, RC_LABEL_CLUSTER, raycluster__name(rc));
    raycluster__build_set_str(b, labels, RC_LABEL_IDENTIFIER, id);
    raycluster__build_set_str(b, labels, RC_LABEL_APP_NAME, RC_APP_NAME);
    raycluster__build_set_str(b, labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    cJSON_ArrayForEach(a, (cJSON_IsObject(anns) ? anns : NULL))
        if (a->string && cJSON_IsString(a) && (!skip || strcmp(a->string, skip)))
            raycluster__build_set_str(b, raycluster__build_obj(b, *meta, "annotations"), a->string, a->valuestring);
    return obj;
}

cJSON *rc_build_head_ingress(const cJSON *rc, const struct rc_build_opts *o, int *err)
{
    struct rcb b = { 0 };
    const cJSON *head = raycluster__head_group(rc);
    const cJSON *io = kobj_get(head, "ingressOptions");
    const cJSON *anns = raycluster__json_path(rc, "metadata", "annotations", NULL);
    const char *path = kobj_str(io, "path"), *ptype = kobj_str(io, "pathType");
    const char *host = kobj_str(io, "host");
    const char *klass = kobj_str(anns, "kubernetes.io/ingress.class");
    char svc[300];
    cJSON *ing, *meta, *spec, *rule, *p, *backend;
    int r;
    (void)o;
    if (!raycluster__json_bool(head, "enableIngress", false))
        return NULL;
    if ((r = rc_head_service_name(rc, svc, sizeof(svc))) < 0) {
        if (err)
            *err = r;
        return NULL;
    }
    /* every cluster annotation but the ingress class, which becomes ingressClassName */
    ing = head_access_object(&b, rc, "networking.k8s.io/v1", "Ingress", "head-ingress", -1,
                             "kubernetes.io/ingress.class", &meta);
    spec = raycluster__build_obj(&b, ing, "spec");
    if (klass)
        raycluster__build_set_str(&b, spec, "ingressClassName", klass);
    if (!b.err && !(rule = cJSON_CreateObject()))
        b.err = -ENOMEM;
    if (!b.err) {
        raycluster__build_append(&b, raycluster__build_arr(&b, spec, "rules"), rule);
        if (host)
            raycluster__build_set_str(&b, rule, "host", host);
        if (!b.err && !(p = cJSON_CreateObject()))
            b.err = -ENOMEM;
        if (!b.err) {
            raycluster__build_append(&b, raycluster__build_arr(&b, raycluster__build_obj(&b, rule, "http"), "paths"), p);
            raycluster__build_set_str(&b, p, "path", path ? path : "/");
            raycluster__build_set_str(&b, p, "pathType", ptype ? ptype : "Prefix");
            backend = raycluster__build_obj(&b, raycluster__build_obj(&b, p, "backend"), "service");
            raycluster__build_set_str(&b, backend, "name", svc);
            raycluster__build_set_num(&b, raycluster__build_obj(&b, backend, "port"), "number", rc_dashboard_port(rc));
        }
    }
    if (cJSON_IsArray(kobj_get(io, "tls")) && cJSON_GetArraySize(kobj_get(io, "tls")) > 0)
        raycluster__build_set(&b, spec, "tls", raycluster__build_dup(&b, kobj_get(io, "tls")));
    raycluster__build_owner_ref(&b, ing, rc);
    return raycluster__build_done(&b, ing, err);
}

cJSON *rc_build_head_route(const cJSON *rc, int *err)
{
    struct rcb b = { 0 };
    const cJSON *head = raycluster__head_group(rc);
    char svc[300];
    cJSON *route, *meta, *spec, *to;
    int r;
    if (!raycluster__json_bool(head, "enableIngress", false))
        return NULL;
    if ((r = rc_head_service_name(rc, svc, sizeof(svc))) < 0) {
        if (err)
            *err = r;
        return NULL;
    }
    /* CheckRouteName: room for "-head-" + 5 characters and "-NAMESPACE" in the first DNS
     * label of the host OpenShift makes from the Route's name; every cluster annotation,
     * the way a user tunes the Route (KubeRay copies them all) */
    route = head_access_object(&b, rc, "route.openshift.io/v1", "Route", "head-route",
                               51 - (int)strlen(raycluster__namespace(rc)), NULL, &meta);
    spec = raycluster__build_obj(&b, route, "spec");
    to = raycluster__build_obj(&b, spec, "to");
    raycluster__build_set_str(&b, to, "kind", "Service");
    raycluster__build_set_str(&b, to, "name", svc);
    raycluster__build_set_num(&b, to, "weight", 100);
    raycluster__build_set_num(&b, raycluster__build_obj(&b, spec, "port"), "targetPort", rc_dashboard_port(rc));
    raycluster__build_set_str(&b, spec, "wildcardPolicy", "None");
    raycluster__build_owner_ref(&b, route, rc);
    return raycluster__build_done(&b, route, err);
}

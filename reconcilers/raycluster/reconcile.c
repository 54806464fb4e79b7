/*
 * reconcile.c - one RayCluster reconcile, in KubeRay v1.7's order
 * (raycluster_controller.go rayClusterReconcile): skip clusters managed
 * elsewhere; validate (Warning Event, terminal until the spec changes); the
 * GCS FT finalizer and deletion (reconcile_delete.c); autoscaler RBAC; head,
 * headless and serve Services; the embedded GCS store's PVC; the mTLS PKI
 * (reconcile_tls.c); Pods
 * (reconcile_pods.c); the NetworkPolicies
 * (reconcile_netpol.c); then always the status (status.c), written through
 * /status only when it changed.
 *
 * Reads come from the shared cache; every create/delete/update goes through
 * the host's write helpers, which record the resourceVersions so the key is
 * not handed out again before the cache shows them (no stale-cache duplicates).
 * Outcome: an error is retried with the queue's backoff; a status write or a
 * pending step requeues after 2 s (KubeRay's DefaultRequeueDuration), an
 * idle cluster after 300 s (RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "kobj/json_equal.h"
#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

const struct kube_resource RC_RES_SERVICEACCOUNTS = { "", "v1", "serviceaccounts", 1 };
const struct kube_resource RC_RES_ROLES = { "rbac.authorization.k8s.io", "v1", "roles", 1 };
const struct kube_resource RC_RES_ROLEBINDINGS = { "rbac.authorization.k8s.io", "v1", "rolebindings", 1 };

/* res->message is shorter than the messages: keep the head of it. */
static void set_message(struct host_result *res, const char *msg)
{
    size_t n = strlen(msg);
    if (n >= sizeof(res->message))
        n = sizeof(res->message) - 1;
    memcpy(res->message, msg, n);
    res->message[n] = '\0';
}

/* ---- autoscaler RBAC ---------------------------------------------------------- */

/* ServiceAccount/Role/RoleBinding and the auth Secret carry the created-by
 * label, so the watcher caches them (watcher/types.c) and a change to one of
 * them (a delete by hand included) enqueues its RayCluster, as KubeRay's
 * Owns(). An object the cache already holds is left alone (KubeRay never
 * updates them); one it lacks is created, and AlreadyExists (a cache that has
 * not yet seen our own create) counts as done. */
#define RC_CACHE_SERVICEACCOUNTS "v1/serviceaccounts"
#define RC_CACHE_ROLES "rbac.authorization.k8s.io/v1/roles"
#define RC_CACHE_ROLEBINDINGS "rbac.authorization.k8s.io/v1/rolebindings"
#define RC_CACHE_SECRETS "v1/secrets"
#define RC_CACHE_INGRESSES "networking.k8s.io/v1/ingresses"
static const struct kube_resource RC_RES_INGRESSES = { "networking.k8s.io", "v1", "ingresses", 1 };

/* 1 when the cache holds NS/name of cache_type, 0 when not, < 0 on error. */
static int cached(struct rc_run *r, const char *cache_type, const char *name)
{
    cJSON *have = NULL;
    int rc = host_get(r->ctx, cache_type, r->ns, name, &have);
    cJSON_Delete(have);
    if (rc == 0)
        return 1;
    return rc == -ENOENT ? 0 : rc;
}

/* Creates obj unless it exists; Normal/Warning Events named as KubeRay's
 * (none when ok_reason is NULL, as for KubeRay's auth Secret). */
static int create_absent(struct rc_run *r, const char *cache_type,
                         const struct kube_resource *res, cJSON *obj, const char *ok_reason,
                         const char *fail_reason, const char *what)
{
    struct kube_client *kc = host_kube(r->ctx);
    struct kube_result kr = { 0 };
    const char *name = rc_meta(obj, "name");
    int rc = cached(r, cache_type, name);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    if (!kc)
        return -ENOTCONN;
    rc = kube_create(kc, res, r->ns, obj, &kr);
    if (rc == 0) {
        host_log(r->ctx, LOG_INFO, "Created", "object", what, "name", name, NULL);
        if (ok_reason)
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, ok_reason, "Create", "Created %s %s/%s",
                       what, r->ns, name);
    } else if (rc == -EEXIST) {
        rc = 0;
    } else if (fail_reason) {
        char why[640];
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, fail_reason, "Create",
                   "Failed creating %s %s/%s, %s", what, r->ns, name,
                   kube_result_error(&kr, rc, why, sizeof(why)));
    }
    kube_result_release(&kr);
    return rc;
}

static int reconcile_rbac(struct rc_run *r)
{
    if (!rc_autoscaling_enabled(r->rc))
        return 0;
    cJSON *sa = NULL, *role = NULL, *binding = NULL;
    int rc = rc_build_autoscaler_rbac(r->rc, &sa, &role, &binding);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "building the autoscaler RBAC objects: %s", strerror(-rc));
    if (sa)
        rc = create_absent(r, RC_CACHE_SERVICEACCOUNTS, &RC_RES_SERVICEACCOUNTS, sa, "CreatedServiceAccount",
                             "FailedToCreateServiceAccount", "service account");
    if (rc == 0 && role)
        rc = create_absent(r, RC_CACHE_ROLES, &RC_RES_ROLES, role, "CreatedRole", "FailedToCreateRole", "role");
    if (rc == 0 && binding)
        rc = create_absent(r, RC_CACHE_ROLEBINDINGS, &RC_RES_ROLEBINDINGS, binding, "CreatedRoleBinding",
                             "FailedToCreateRoleBinding", "role binding");
    cJSON_Delete(sa);
    cJSON_Delete(role);
    cJSON_Delete(binding);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "autoscaler RBAC: %s", kube_strerror(rc));
    return 0;
}

/* ---- dashboard Ingress (reconcileIngressKubernetes) --------------------------------- */

/* metadata.KEY of o, absent and empty maps alike (Go's maps.Equal) */
static bool same_map(const cJSON *a, const cJSON *b, const char *key)
{
    const cJSON *x = kobj_get(kobj_get(a, "metadata"), key), *y = kobj_get(kobj_get(b, "metadata"), key);
    bool ex = !cJSON_IsObject(x) || !x->child, ey = !cJSON_IsObject(y) || !y->child;
    return (ex && ey) || json_equal(x, y);
}

/* ingressNeedsUpdate: labels, annotations and spec to the desired ones (an ingress class
 * the cluster does not ask for is left as the API server set it). true when changed. */
static bool ingress_adopt(cJSON *have, const cJSON *want)
{
    static const char *const keys[] = { "labels", "annotations" };
    cJSON *md = kobj_get(have, "metadata") ? cJSON_GetObjectItemCaseSensitive(have, "metadata") : NULL;
    bool changed = false;
    for (int i = 0; i < 2; i++) {
        if (same_map(have, want, keys[i]))
            continue;
        const cJSON *w = kobj_get(kobj_get(want, "metadata"), keys[i]);
        cJSON_DeleteItemFromObjectCaseSensitive(md, keys[i]);
        if (w)
            cJSON_AddItemToObject(md, keys[i], cJSON_Duplicate(w, 1));
        changed = true;
    }
    cJSON *ws = cJSON_Duplicate(kobj_get(want, "spec"), 1);
    const cJSON *cls = kobj_get(kobj_get(have, "spec"), "ingressClassName");
    if (ws && !kobj_get(ws, "ingressClassName") && cJSON_IsString(cls))
        cJSON_AddStringToObject(ws, "ingressClassName", cls->valuestring);
    if (ws && !json_equal(kobj_get(have, "spec"), ws)) {
        cJSON_DeleteItemFromObjectCaseSensitive(have, "spec");
        cJSON_AddItemToObject(have, "spec", ws);
        ws = NULL;
        changed = true;
    }
    cJSON_Delete(ws);
    return changed;
}

/* ---- OpenShift Route (reconcileRouteOpenShift) ------------------------------------ */

static const struct kube_resource RC_RES_ROUTES = { "route.openshift.io", "v1", "routes", 1 };

/* KubeRay's ShouldUseIngressOnOpenShift */
static bool ingress_on_openshift(void)
{
    const char *v = getenv("USE_INGRESS_ON_OPENSHIFT");
    return v && !strcasecmp(v, "true");
}

/* A Route labelled ray.io/cluster=NAME exists: done (KubeRay neither updates nor
 * deletes it); none: NAME-head-route is created, owned (CreatedRoute / FailedToCreateRoute).
 * Routes are not cached (OpenShift only): listed live. */
static int reconcile_route(struct rc_run *r)
{
    int err = 0, rc;
    char sel[320];
    struct kube_result kr = { 0 };
    struct kube_client *kc = host_kube(r->ctx);
    cJSON *route = rc_build_head_route(r->rc, &err);
    if (!route)
        return err < 0 ? raycluster__fail(r, RC_ERR_OTHER, "building the head Route: %s", strerror(-err))
                       : 0;
    const char *name = rc_meta(route, "name");
    snprintf(sel, sizeof(sel), "%s=%s", RC_LABEL_CLUSTER, r->name);
    struct kube_list_opts lo = { .label_selector = sel };
    rc = kc ? kube_list(kc, &RC_RES_ROUTES, r->ns, &lo, &kr) : -ENOTCONN;
    if (rc == 0 && cJSON_GetArraySize(kobj_get(kr.body, "items")) > 0)
        goto out;
    kube_result_release(&kr);
    if (rc == 0) {
        rc = kube_create(kc, &RC_RES_ROUTES, r->ns, route, &kr);   /* not cached: no rv to wait for */
        if (rc == 0) {
            host_log(r->ctx, LOG_INFO, "Created route for RayCluster", "name", name, NULL);
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "CreatedRoute", "Create",
                       "Created route %s/%s", r->ns, name);
        } else if (rc == -EEXIST) {
            rc = 0;   /* "Route already exists, no need to create" */
        } else {
            char why[640];
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateRoute", "Create",
                       "Failed creating route %s/%s, %s", r->ns, name,
                       kube_result_error(&kr, rc, why, sizeof(why)));
        }
    }
out:
    kube_result_release(&kr);
    cJSON_Delete(route);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "head Route: %s", kube_strerror(rc));
    return 0;
}

/* headGroupSpec.enableIngress (reconcileIngressKubernetes, KubeRay v1.7): created when
 * absent; one of that name we do not control is left alone with a Warning; ours is
 * updated when its labels, annotations or spec drifted (UpdatedIngress). */
static int reconcile_ingress(struct rc_run *r)
{
    int err = 0, os;
    if (!raycluster__json_bool(raycluster__head_group(r->rc), "enableIngress", false))
        return 0;
    /* shouldCreateOpenShiftRoute */
    if (!ingress_on_openshift() && (os = raycluster__platform_openshift(r)) != 0)
        return os > 0 ? reconcile_route(r)
                      : raycluster__fail(r, RC_ERR_OTHER, "telling whether this is OpenShift: %s",
                                         kube_strerror(os));
    cJSON *ing = rc_build_head_ingress(r->rc, &r->bo, &err), *have = NULL;
    struct kube_result kr = { 0 };
    if (!ing)
        return err < 0 ? raycluster__fail(r, RC_ERR_OTHER, "building the head Ingress: %s", strerror(-err))
                       : 0;
    const char *name = rc_meta(ing, "name");
    int rc = host_get(r->ctx, RC_CACHE_INGRESSES, r->ns, name, &have);
    if (rc == -ENOENT) {
        /* not in the cache: absent, or someone else's without our created-by label */
        struct kube_client *kc = host_kube(r->ctx);
        rc = kc ? kube_create(kc, &RC_RES_INGRESSES, r->ns, ing, &kr) : -ENOTCONN;
        if (rc == 0) {
            host_log(r->ctx, LOG_INFO, "Created", "object", "ingress", "name", name, NULL);
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "CreatedIngress", "Create",
                       "Created ingress %s/%s", r->ns, name);
        } else if (rc == -EEXIST) {
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateIngress", "Create",
                       "Ingress %s/%s already exists and is not owned by this RayCluster; not "
                       "modifying it", r->ns, name);
            rc = 0;
        } else {
            char why[640];
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateIngress", "Create",
                       "Failed creating ingress %s/%s, %s", r->ns, name,
                       kube_result_error(&kr, rc, why, sizeof(why)));
        }
    } else if (rc == 0) {
        const char *owner = kobj_controller_uid(have);
        if (!owner || strcmp(owner, r->uid) != 0) {
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateIngress", "Create",
                       "Ingress %s/%s already exists and is not owned by this RayCluster; not "
                       "modifying it", r->ns, name);
        } else if (ingress_adopt(have, ing)) {
            rc = host_update(r->ctx, &RC_RES_INGRESSES, r->ns, have, &kr);
            if (rc < 0) {
                char why[640];
                host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToUpdateIngress", "Update",
                           "Failed updating ingress %s/%s, %s", r->ns, name,
                           kube_result_error(&kr, rc, why, sizeof(why)));
            } else {
                host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "UpdatedIngress", "Update",
                           "Updated ingress %s/%s", r->ns, name);
            }
        }
    }
    kube_result_release(&kr);
    cJSON_Delete(have);
    cJSON_Delete(ing);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "head Ingress: %s", kube_strerror(rc));
    return 0;
}

/* ---- auth Secret (reconcileAuthSecret) -------------------------------------------- */

/* The Secret rc_build_auth_secret describes (authOptions.mode token, no secretName,
 * not K8s token auth), created once with 32 random bytes, as KubeRay does. No Event,
 * as KubeRay. */
static int reconcile_auth_secret(struct rc_run *r)
{
    unsigned char raw[32];
    char name[128];
    cJSON *s = NULL;
    int rc = rc_auth_secret_name(r->rc, name, sizeof(name));
    if (rc < 0 || !name[0])
        return 0;
    /* cached first: no random token is drawn for a Secret that exists */
    if ((rc = cached(r, RC_CACHE_SECRETS, name)) != 0)
        return rc < 0 ? raycluster__fail(r, RC_ERR_OTHER, "reading the auth Secret: %s", strerror(-rc)) : 0;
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return raycluster__fail(r, RC_ERR_OTHER, "no randomness for the auth token");
    rc = -ENOMEM;
    if ((s = rc_build_auth_secret(r->rc, raw, sizeof(raw), &rc)))
        rc = create_absent(r, RC_CACHE_SECRETS, &KUBE_RES_SECRETS, s, NULL, NULL, "secret");
    explicit_bzero(raw, sizeof(raw));
    if (s) {
        /* the token is in the tree: wipe it before freeing */
        cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "data"),
                                                    "auth_token");
        if (cJSON_IsString(t))
            explicit_bzero(t->valuestring, strlen(t->valuestring));
        cJSON_Delete(s);
    }
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "auth Secret: %s", kube_strerror(rc));
    return 0;
}

/* ---- Services ------------------------------------------------------------------ */

static int ensure_service(struct rc_run *r, cJSON *svc)
{
    const char *name = rc_meta(svc, "name");
    cJSON *have = NULL;
    int rc = host_get(r->ctx, "v1/services", r->ns, name, &have);
    cJSON_Delete(have);
    if (rc == 0)
        return 0;
    if (rc != -ENOENT)
        return raycluster__fail(r, RC_ERR_OTHER, "reading Service %s: %s", name, strerror(-rc));
    struct kube_result kr = { 0 };
    rc = host_create(r->ctx, &KUBE_RES_SERVICES, r->ns, svc, &kr);
    char why[640];
    kube_result_error(&kr, rc, why, sizeof(why));
    kube_result_release(&kr);
    if (rc == -EEXIST)
        return 0;   /* not ours to cache (no created-by label) or a race: it exists */
    if (rc < 0) {
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateService", "Create",
                   "Failed creating service %s/%s, %s", r->ns, name, why);
        return raycluster__fail(r, RC_ERR_OTHER, "creating Service %s: %s", name, why);
    }
    host_log(r->ctx, LOG_INFO, "Created service for RayCluster", "service", name, NULL);
    host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "CreatedService", "Create",
               "Created service %s/%s", r->ns, name);
    return 0;
}

static int reconcile_services(struct rc_run *r)
{
    cJSON *(*const builders[])(const cJSON *, const struct rc_build_opts *, int *) = {
        rc_build_head_service, rc_build_headless_service, rc_build_serve_service,
    };
    for (size_t i = 0; i < sizeof(builders) / sizeof(builders[0]); i++) {
        int err = 0;
        cJSON *svc = builders[i](r->rc, &r->bo, &err);
        if (!svc && err < 0)
            return raycluster__fail(r, RC_ERR_OTHER, "building a Service: %s", strerror(-err));
        if (!svc)
            continue;
        int rc = ensure_service(r, svc);
        cJSON_Delete(svc);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- embedded GCS storage PVC (reconcileGCSStoragePVC) ---------------------------- */

static const struct kube_resource RC_RES_PVCS = { "", "v1", "persistentvolumeclaims", 1 };

/* SetControllerReference / RemoveControllerReference on an existing PVC so that a changed
 * deletionPolicy takes effect on it (reconcileGCSStoragePVCOwnerRef). */
static int gcs_pvc_owner(struct rc_run *r, cJSON *pvc)
{
    bool retain = rc_gcs_pvc_retain(r->rc);
    const char *ctl = kobj_controller_uid(pvc);
    bool ours = ctl && !strcmp(ctl, r->uid);
    struct kube_result kr = { 0 };
    cJSON *md = cJSON_GetObjectItemCaseSensitive(pvc, "metadata"), *refs, *ref;
    int rc;
    if (retain == !ours)
        return 0;
    if (!retain && ctl)
        return raycluster__fail(r, RC_ERR_OTHER, "GCS storage PVC %s is already controlled by another "
                                "object", rc_meta(pvc, "name"));
    refs = cJSON_GetObjectItemCaseSensitive(md, "ownerReferences");
    if (retain) {
        for (ref = refs ? refs->child : NULL; ref; ref = ref->next)
            if (cJSON_IsTrue(kobj_get(ref, "controller")) && kobj_str(ref, "uid") &&
                !strcmp(kobj_str(ref, "uid"), r->uid)) {
                cJSON_DetachItemViaPointer(refs, ref);
                cJSON_Delete(ref);
                break;
            }
    } else {
        struct rcb b = { 0 };
        cJSON *tmp = cJSON_CreateObject();
        raycluster__build_owner_ref(&b, tmp, r->rc);
        ref = cJSON_DetachItemFromArray(raycluster__json_path(tmp, "metadata", "ownerReferences", NULL)
                                            ? (cJSON *)raycluster__json_path(tmp, "metadata",
                                                                             "ownerReferences", NULL)
                                            : NULL, 0);
        cJSON_Delete(tmp);
        if (!ref)
            return raycluster__fail(r, RC_ERR_OTHER, "out of memory");
        if (!cJSON_IsArray(refs)) {
            cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
            refs = cJSON_AddArrayToObject(md, "ownerReferences");
        }
        cJSON_AddItemToArray(refs, ref);
    }
    rc = host_update(r->ctx, &RC_RES_PVCS, r->ns, pvc, &kr);
    kube_result_release(&kr);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "GCS storage PVC %s: %s", rc_meta(pvc, "name"),
                                kube_strerror(rc));
    return 0;
}

/* The PVC of the embedded RocksDB backend: a user's claim is only checked for; ours is
 * created when absent, and kept as it is when it exists (a Warning says how it differs
 * from what is asked: a PVC cannot be reshaped in place), its owner reference following
 * deletionPolicy. An existing NAME-gcs-pvc is adopted, as KubeRay does, so that a cluster
 * recreated after a Retain delete finds its store again. */
static int reconcile_gcs_pvc(struct rc_run *r)
{
    char name[300], drift[600], why[640];
    struct kube_client *kc = host_kube(r->ctx);
    struct kube_result kr = { 0 };
    cJSON *want, *have = NULL;
    int err = 0, rc;
    if (!rc_gcs_ft_enabled(r->rc) || !rc_gcs_ft_embedded(r->rc))
        return 0;
    if (rc_gcs_pvc_name(r->rc, name, sizeof(name)) < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "GCS storage PVC name too long");
    if (!kc)
        return raycluster__fail(r, RC_ERR_OTHER, "no API connection");
    if (!(want = rc_build_gcs_pvc(r->rc, &err))) {
        if (err < 0)
            return raycluster__fail(r, RC_ERR_OTHER, "building the GCS storage PVC: %s", strerror(-err));
        /* storage.claimName: the user's, read live (it need not carry our labels) */
        rc = kube_get(kc, &RC_RES_PVCS, r->ns, name, &kr);
        kube_result_release(&kr);
        if (rc == -ENOENT) {
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreatePVC", "Validate",
                       "GcsFaultToleranceOptions.Storage.ClaimName \"%s\" not found in namespace "
                       "%s; the head Pod will not start until it exists", name, r->ns);
            return 0;
        }
        return rc < 0 ? raycluster__fail(r, RC_ERR_OTHER, "reading PVC %s: %s", name, kube_strerror(rc)) : 0;
    }
    rc = host_get(r->ctx, "v1/persistentvolumeclaims", r->ns, name, &have);
    if (rc == -ENOENT) {
        rc = host_create(r->ctx, &RC_RES_PVCS, r->ns, want, &kr);
        if (rc == 0) {
            host_log(r->ctx, LOG_INFO, "Created GCS storage PVC for embedded RocksDB backend",
                     "name", name, NULL);
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "CreatedPVC", "Create",
                       "Created GCS storage PVC %s/%s", r->ns, name);
        } else if (rc == -EEXIST) {
            /* not cached (no ray.io/cluster label): adopted as it is, owner as asked */
            kube_result_release(&kr);
            if ((rc = kube_get(kc, &RC_RES_PVCS, r->ns, name, &kr)) == 0 && kr.body) {
                have = kr.body;
                kr.body = NULL;
            }
        } else {
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreatePVC", "Create",
                       "Failed to create GCS storage PVC %s/%s, %s", r->ns, name,
                       kube_result_error(&kr, rc, why, sizeof(why)));
        }
        kube_result_release(&kr);
        if (rc < 0 || !have) {
            cJSON_Delete(want);
            return rc < 0 ? raycluster__fail(r, RC_ERR_OTHER, "GCS storage PVC %s: %s", name,
                                             kube_strerror(rc)) : 0;
        }
    } else if (rc < 0) {
        cJSON_Delete(want);
        return raycluster__fail(r, RC_ERR_OTHER, "reading PVC %s: %s", name, strerror(-rc));
    }
    rc_gcs_pvc_drift(want, have, drift, sizeof(drift));
    if (drift[0])
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreatePVC", "Update",
                   "GCS storage PVC %s/%s already exists and cannot be reconfigured in place "
                   "(%s); delete the PVC to recreate it with the new settings", r->ns, name, drift);
    rc = gcs_pvc_owner(r, have);
    cJSON_Delete(have);
    cJSON_Delete(want);
    return rc;
}

/* ---- status -------------------------------------------------------------------- */

static void now_time(char out[32])
{
    util_format_time(time(NULL), out);
}

/* ms until the next wall-clock second, and a little */
static uint64_t ms_to_next_second(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return 1000u - (uint64_t)(ts.tv_nsec / 1000000L) + 20u;
}

/* calculateStatus + updateRayClusterStatus. 1 written, 0 unchanged, -errno. */
static int write_status(struct rc_run *r)
{
    cJSON *svcs = NULL, *st = NULL;
    char now[32];
    now_time(now);
    int rc = host_list_cluster(r->ctx, "v1/services", r->ns, r->name, &svcs);
    if (rc < 0)
        return rc;
    struct rc_status_in in = { .rc = r->rc, .pods = r->pods, .services = svcs, .err = r->err,
                               .err_message = r->err_msg, .now = now };
    rc = rc_status_compute(&in, &st);
    cJSON_Delete(svcs);
    if (rc < 0) {
        host_log(r->ctx, LOG_INFO, "Got error when calculating new status", "error",
                 rc == -ENOENT ? "head service not found" :
                 rc == -EAGAIN ? "head service IP is empty" : strerror(-rc), NULL);
        return rc;
    }
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(r->rc, "status");
    char changed[160];
    /* KubeRay never writes a status whose only news is observedGeneration. Then a spec
     * change no reconcile saw on its own (replicas 1 -> 3 -> 1 in the cache at once, or
     * made while the operator restarted) leaves observedGeneration behind for good, and
     * whoever waits for it to reach metadata.generation waits forever: write it. */
    bool gen_behind = !json_equal(kobj_get(old, "observedGeneration"),
                                  kobj_get(st, "observedGeneration"));
    if (rc_status_changes(old, st, changed, sizeof(changed)) == 0) {
        if (!gen_behind) {
            cJSON_Delete(st);
            return 0;
        }
        snprintf(changed, sizeof(changed), "observedGeneration");
    }
    /* Progress (a Pod running, another ready) is written at most once per
     * second of lastUpdateTime: Pods of a new cluster come up within moments of
     * each other, and writing each step cost several writes per cluster that a
     * moment later say nothing. A state change, a condition flip and the step
     * that makes every desired worker ready (a scale-up served: what a client
     * waits for) go at once; the rest waits for the next second's reconcile. */
    const char *lut = kobj_str(old, "lastUpdateTime");
    if (lut && strcmp(lut, now) == 0 && !gen_behind && rc_status_progress_only(old, st)) {
        uint64_t wait = ms_to_next_second();
        if (!r->requeue_ms || r->requeue_ms > wait)
            r->requeue_ms = wait;
        cJSON_Delete(st);
        return 0;
    }
    cJSON *obj = cJSON_Duplicate(r->rc, 1);
    if (!obj) {
        cJSON_Delete(st);
        return -ENOMEM;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", st);
    struct kube_result kr = { 0 };
    rc = host_update_status(r->ctx, &KUBE_RES_RAYCLUSTERS, r->ns, obj, &kr);
    kube_result_release(&kr);
    if (rc == 0) {
        const cJSON *ns_state = cJSON_GetObjectItemCaseSensitive(st, "state");
        host_log(r->ctx, LOG_INFO, "updateRayClusterStatus", "state",
                 cJSON_IsString(ns_state) ? ns_state->valuestring : "", "changed", changed, NULL);
        raycluster__metrics_observe_provisioned(r->rc, old, st);
    } else {
        host_log(r->ctx, LOG_INFO, "Error updating status", "error", kube_strerror(rc), NULL);
    }
    cJSON_Delete(obj);
    return rc < 0 ? rc : 1;
}

/* ---- the reconcile ------------------------------------------------------------- */

/* KubeRay's Configuration (--config) fields that shape Ray Pods: sidecars for
 * head/worker Pods, default env vars, annotations and labels (borrowed). */
static void apply_operator_config(struct rc_run *r)
{
    const cJSON *cfg = r->ctx->settings ? r->ctx->settings->operator_config : NULL;
    const cJSON *v;
    if (!cJSON_IsObject(cfg))
        return;
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(cfg, "headSidecarContainers")))
        r->bo.head_sidecar_containers = v;
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(cfg, "workerSidecarContainers")))
        r->bo.worker_sidecar_containers = v;
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(cfg, "defaultContainerEnvs")))
        r->bo.default_container_envs = v;
    if (cJSON_IsObject(v = cJSON_GetObjectItemCaseSensitive(cfg, "defaultPodAnnotations")))
        r->bo.default_pod_annotations = v;
    if (cJSON_IsObject(v = cJSON_GetObjectItemCaseSensitive(cfg, "defaultPodLabels")))
        r->bo.default_pod_labels = v;
}

/* KubeRay's RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV (whole seconds, default 300);
 * RAYOP_RAYCLUSTER_IDLE_REQUEUE_MS overrides it in milliseconds (benchmarks:
 * bench/raycluster.sh re-queues converged clusters continuously with 1). */
static uint64_t idle_requeue_ms(void)
{
    const char *ms = getenv("RAYOP_RAYCLUSTER_IDLE_REQUEUE_MS");
    const char *sec = getenv("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV");
    char *end;
    if (ms && *ms) {
        unsigned long long v = strtoull(ms, &end, 10);
        if (!*end && v > 0 && v <= 86400000ull)
            return v;
    }
    if (sec && *sec) {
        long v = strtol(sec, &end, 10);
        if (!*end && v > 0 && v <= 86400)
            return (uint64_t)v * 1000u;
    }
    return RC_REQUEUE_IDLE_MS;
}

/* An invalid cluster gets status.reason (rayop's addition: KubeRay v1.7 only
 * records the Event) so `kubectl get -o yaml` shows why nothing happens; state
 * and conditions are left as they were. Written only when it differs. */
static void write_invalid_reason(struct rc_run *r, const char *why)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(r->rc, "status");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(old, "reason");
    if (cJSON_IsString(reason) && strcmp(reason->valuestring, why) == 0)
        return;
    cJSON *obj = cJSON_Duplicate(r->rc, 1), *st;
    if (!obj)
        return;
    st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    if (st) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "reason");
        cJSON_AddStringToObject(st, "reason", why);
        struct kube_result kr = { 0 };
        int rc = host_update_status(r->ctx, &KUBE_RES_RAYCLUSTERS, r->ns, obj, &kr);
        if (rc < 0)
            host_log(r->ctx, LOG_INFO, "Error updating status", "error", kube_strerror(rc), NULL);
        kube_result_release(&kr);
    }
    cJSON_Delete(obj);
}

void rc_gates_from_host(const struct host_ctx *ctx, struct rc_gates *g)
{
    g->network_policy = host_feature_enabled(ctx, "RayClusterNetworkPolicy", false);
    g->mtls = host_feature_enabled(ctx, "RayClusterMTLS", false);
    g->gcs_ft_embedded = host_feature_enabled(ctx, "GCSFaultToleranceEmbeddedStorage", false);
    g->history_server = host_feature_enabled(ctx, "RayClusterHistoryServer", false);
}

static int validate(struct rc_run *r, struct host_result *res)
{
    struct rc_invalid why;
    struct rc_gates gates;
    rc_gates_from_host(r->ctx, &gates);
    memset(&why, 0, sizeof(why));
    if (rc_validate(r->rc, &gates, &why) < 0) {
        host_log(r->ctx, LOG_ERROR, "The RayCluster is invalid", "reason", why.reason,
                 "error", why.message, NULL);
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, why.reason, "Validate", "%s", why.message);
        write_invalid_reason(r, why.message);
        set_message(res, why.message);
        /* KubeRay: an invalid status is retried after 2 s; metadata and spec wait
         * for the next change of the object */
        res->outcome = strcmp(why.reason, RC_REASON_INVALID_STATUS) == 0 ? HOST_ERROR
                                                                         : HOST_TERMINAL;
        return 1;
    }
    memset(&why, 0, sizeof(why));
    if (rc_validate_warning(r->rc, &why) == 1)
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, why.reason, "Validate", "%s", why.message);
    return 0;
}

int rc_reconcile(struct host_ctx *ctx, struct host_result *res)
{
    struct rc_run r;
    memset(&r, 0, sizeof(r));
    r.ctx = ctx;
    int rc = host_get(ctx, RC_CACHE_TYPE, ctx->ns, ctx->name, &r.rc);
    if (rc == -ENOENT) {
        raycluster__metrics_forget(ctx->ns, ctx->name);
        return 0;
    }
    if (rc < 0)
        return rc;
    r.ns = ctx->ns;
    r.name = ctx->name;
    r.uid = rc_meta(r.rc, "uid");
    rc_build_opts_from_env(&r.bo);
    apply_operator_config(&r);
    r.bo.batch_scheduler = ctx->settings ? ctx->settings->batch_scheduler : 0;

    if (rc_managed_elsewhere(r.rc)) {
        host_log(ctx, LOG_INFO, "Skipping RayCluster managed by a custom controller", NULL);
        goto out;
    }
    if (validate(&r, res) == 1 || raycluster__tls_precheck(&r, res) == 1)
        goto out;
    if ((rc = raycluster__reconcile_finalizer(&r, res)) != 0)
        goto out;   /* 1: finished (finalizer added, deletion in progress) */
    if (*rc_meta(r.rc, "deletionTimestamp")) {
        host_log(ctx, LOG_INFO, "RayCluster is being deleted, just ignore", NULL);
        goto out;
    }
    if ((rc = host_list_cluster(ctx, "v1/pods", r.ns, r.name, &r.pods)) < 0)
        goto out;
    char tls_msg[512] = "";
    int tls = 0;
    /* stops at the first failing step, as KubeRay; the status is computed anyway */
    if (reconcile_rbac(&r) == 0 && reconcile_ingress(&r) == 0 && reconcile_auth_secret(&r) == 0 &&
        reconcile_services(&r) == 0 && reconcile_gcs_pvc(&r) == 0) {
        /* KubeRay's mTLS controller runs apart: its failure only retries */
        tls = raycluster__reconcile_tls(&r, tls_msg, sizeof(tls_msg));
        (void)raycluster__reconcile_pods(&r);
    }
    /* KubeRay's NetworkPolicy controller runs apart from the RayCluster's: its failure
     * only retries, and does not stop the steps above */
    char np_msg[512] = "";
    int np = r.gone ? 0 : raycluster__reconcile_netpol(&r, np_msg, sizeof(np_msg));
    if (r.gone) {
        /* deleted on the API server, not yet in the cache: no status to write,
         * and the deletion's watch event brings the key back (file comment of
         * reconcile_pods.c) */
        host_log(ctx, LOG_INFO, "RayCluster already deleted on the API server; nothing created",
                 NULL);
        rc = 0;
        goto out;
    }
    if (r.err != RC_ERR_NONE)
        host_log(ctx, LOG_ERROR, "Error reconcile resources", "error", r.err_msg, NULL);

    /* the Pods this reconcile just wrote are not in r.pods: the status counts
     * them on the next reconcile, which the watch events of those writes bring
     * (KubeRay's calculateStatus reads its cache at this point too) */
    int wrote = write_status(&r);
    if (r.err != RC_ERR_NONE) {
        set_message(res, r.err_msg);
        res->outcome = HOST_ERROR;
    } else if (tls < 0) {
        host_log(ctx, LOG_ERROR, "Error reconcile mTLS", "error", tls_msg, NULL);
        set_message(res, tls_msg);
        res->outcome = HOST_ERROR;
    } else if (np < 0) {
        host_log(ctx, LOG_ERROR, "Error reconcile NetworkPolicies", "error", np_msg, NULL);
        set_message(res, np_msg);
        res->outcome = HOST_ERROR;
    } else if (wrote < 0 && wrote != -ENOENT && wrote != -EAGAIN) {
        rc = wrote;
    } else if (wrote != 0 || r.requeue_ms) {
        /* a status write (e.g. Suspending set) or a pending step: look again soon */
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = r.requeue_ms ? r.requeue_ms : RC_REQUEUE_SHORT_MS;
    } else {
        res->outcome = HOST_REQUEUE_AFTER;
        res->after_ms = idle_requeue_ms();
    }
    rc = rc < 0 ? rc : 0;
out:
    cJSON_Delete(r.live);
    cJSON_Delete(r.pods);
    cJSON_Delete(r.rc);
    return rc < 0 ? rc : 0;
}

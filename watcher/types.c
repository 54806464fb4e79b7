/*
 * types.c - the watcher's two declarative tables and the event-to-key mapping.
 *
 * watcher_types lists what the watcher lists and watches into the cache, with
 * the label selectors KubeRay's manager cache uses so unrelated objects stay
 * out. watcher_owner_rules says which owner key an event on an owned object
 * enqueues (controller-runtime's Owns(), matched on the controller
 * ownerReference). Changing what rayop watches or maps means editing a table
 * row here, nothing else.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kobj/kobj.h"
#include "watcher/watcher.h"

#define CREATED_BY "app.kubernetes.io/created-by=kuberay-operator"

const struct watcher_type watcher_types[] = {
    /* cache type                 group      ver   plural                    kind                     apiVersion   selector                                         queue         meta-only */
    { "ray.io/v1/rayclusters",    "ray.io",  "v1", "rayclusters",          "RayCluster",            "ray.io/v1", NULL,                                             "raycluster", 1 },
    { "ray.io/v1/rayjobs",        "ray.io",  "v1", "rayjobs",              "RayJob",                "ray.io/v1", NULL,                                             "rayjob",     0 },
    { "ray.io/v1/rayservices",    "ray.io",  "v1", "rayservices",          "RayService",            "ray.io/v1", NULL,                                             "rayservice", 1 },
    { "ray.io/v1/raycronjobs",    "ray.io",  "v1", "raycronjobs",          "RayCronJob",            "ray.io/v1", NULL,                                             "raycronjob", 0 },
    { "v1/pods",                  "",        "v1", "pods",                 "Pod",                   "v1",        "ray.io/node-type in (head,worker,redis-cleanup)", NULL,         0 },
    { "v1/services",              "",        "v1", "services",             "Service",               "v1",        CREATED_BY,                                       NULL,         0 },
    { "batch/v1/jobs",            "batch",   "v1", "jobs",                 "Job",                   "batch/v1",  CREATED_BY,                                       NULL,         0 },
    { "v1/secrets",               "",        "v1", "secrets",              "Secret",                "v1",        CREATED_BY,                                       NULL,         0 },
    { "v1/persistentvolumeclaims","",        "v1", "persistentvolumeclaims","PersistentVolumeClaim","v1",        "ray.io/cluster",                                 NULL,         0 },
    /* the RayCluster autoscaler's RBAC objects (recreated when deleted) */
    { "v1/serviceaccounts",       "",        "v1", "serviceaccounts",      "ServiceAccount",        "v1",        CREATED_BY,                                       NULL,         0 },
    { "rbac.authorization.k8s.io/v1/roles", "rbac.authorization.k8s.io", "v1", "roles", "Role", "rbac.authorization.k8s.io/v1", CREATED_BY,              NULL,         0 },
    { "rbac.authorization.k8s.io/v1/rolebindings", "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", "rbac.authorization.k8s.io/v1", CREATED_BY, NULL, 0 },
    /* numServeEndpoints of a RayService: the serve Service's EndpointSlices */
    { "discovery.k8s.io/v1/endpointslices", "discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", "discovery.k8s.io/v1", "kubernetes.io/service-name", NULL, 0 },
    /* the RayCluster's dashboard Ingress (headGroupSpec.enableIngress) */
    { "networking.k8s.io/v1/ingresses", "networking.k8s.io", "v1", "ingresses", "Ingress", "networking.k8s.io/v1", CREATED_BY,                     NULL,         0 },
    /* spec.networkPolicy's policies (gate RayClusterNetworkPolicy) */
    { "networking.k8s.io/v1/networkpolicies", "networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", "networking.k8s.io/v1", CREATED_BY, NULL,   0 },
    /* gang scheduling (reconcilers/batchsched): Volcano's and scheduler-plugins'
     * PodGroups, Kubernetes WAS Workloads and PodGroups. Listed only where the API
     * is served (a missing CRD is watched for: optional.c, docs/watcher.md) */
    { "scheduling.volcano.sh/v1beta1/podgroups", "scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", "scheduling.volcano.sh/v1beta1", NULL, NULL, 0 },
    { "scheduling.x-k8s.io/v1alpha1/podgroups", "scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", "scheduling.x-k8s.io/v1alpha1", NULL, NULL, 0 },
    { "scheduling.k8s.io/v1alpha2/workloads", "scheduling.k8s.io", "v1alpha2", "workloads", "Workload", "scheduling.k8s.io/v1alpha2", "ray.io/cluster", NULL, 0 },
    { "scheduling.k8s.io/v1alpha2/podgroups", "scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup", "scheduling.k8s.io/v1alpha2", "ray.io/cluster", NULL, 0 },
};
const size_t watcher_ntypes = sizeof(watcher_types) / sizeof(watcher_types[0]);

const struct watcher_owner_rule watcher_owner_rules[] = {
    /* child                         owner kind     owner apiVersion  queue */
    { "v1/pods",                     "RayCluster",  "ray.io/v1",      "raycluster" },
    { "v1/services",                 "RayCluster",  "ray.io/v1",      "raycluster" },
    { "v1/secrets",                  "RayCluster",  "ray.io/v1",      "raycluster" },
    { "v1/persistentvolumeclaims",   "RayCluster",  "ray.io/v1",      "raycluster" },
    { "v1/serviceaccounts",          "RayCluster",  "ray.io/v1",      "raycluster" },
    { "rbac.authorization.k8s.io/v1/roles",        "RayCluster", "ray.io/v1", "raycluster" },
    { "rbac.authorization.k8s.io/v1/rolebindings", "RayCluster", "ray.io/v1", "raycluster" },
    { "networking.k8s.io/v1/ingresses",            "RayCluster", "ray.io/v1", "raycluster" },
    { "networking.k8s.io/v1/networkpolicies",      "RayCluster", "ray.io/v1", "raycluster" },
    { "ray.io/v1/rayclusters",       "RayJob",      "ray.io/v1",      "rayjob" },
    { "ray.io/v1/rayclusters",       "RayService",  "ray.io/v1",      "rayservice" },
    { "batch/v1/jobs",               "RayJob",      "ray.io/v1",      "rayjob" },
    { "v1/services",                 "RayJob",      "ray.io/v1",      "rayjob" },
    { "v1/services",                 "RayService",  "ray.io/v1",      "rayservice" },
    { "ray.io/v1/rayjobs",           "RayCronJob",  "ray.io/v1",      "raycronjob" },
    { "scheduling.volcano.sh/v1beta1/podgroups", "RayCluster", "ray.io/v1", "raycluster" },
    { "scheduling.volcano.sh/v1beta1/podgroups", "RayJob",     "ray.io/v1", "rayjob" },
    { "scheduling.k8s.io/v1alpha2/workloads",    "RayCluster", "ray.io/v1", "raycluster" },
    { "scheduling.k8s.io/v1alpha2/podgroups",    "RayCluster", "ray.io/v1", "raycluster" },
};
const size_t watcher_nowner_rules = sizeof(watcher_owner_rules) / sizeof(watcher_owner_rules[0]);

int watcher_type_index(const char *cache_type)
{
    for (size_t i = 0; i < watcher_ntypes; i++)
        if (strcmp(watcher_types[i].cache_type, cache_type) == 0)
            return (int)i;
    return -1;
}

/* The group part of an apiVersion ("ray.io/v1" -> "ray.io", "v1" -> ""), as
 * controller-runtime compares owners by group and kind, not version. */
static size_t group_len(const char *api_version)
{
    const char *slash = strchr(api_version, '/');
    return slash ? (size_t)(slash - api_version) : 0;
}

static int same_group(const char *a, const char *b)
{
    size_t la = group_len(a), lb = group_len(b);
    return la == lb && memcmp(a, b, la) == 0;
}

static int push_key(struct watcher_key *out, size_t cap, size_t *n, const char *queue,
                    const char *ns, const char *name)
{
    if (!ns || !name || !*name)
        return 0;
    /* the same key twice in one event (e.g. old and new owner equal) is one add */
    for (size_t i = 0; i < *n && i < cap; i++) {
        if (strcmp(out[i].queue, queue) == 0) {
            size_t nl = strlen(ns);
            if (strncmp(out[i].key, ns, nl) == 0 && out[i].key[nl] == '/' &&
                strcmp(out[i].key + nl + 1, name) == 0)
                return 0;
        }
    }
    if (*n >= cap)
        return -ENOBUFS;
    int len = snprintf(out[*n].key, sizeof(out[*n].key), "%s/%s", ns, name);
    if (len < 0 || (size_t)len >= sizeof(out[*n].key))
        return -EINVAL;
    out[*n].queue = queue;
    (*n)++;
    return 0;
}

/* Keys for obj's controller owner under every rule of child type ct. */
static int map_owner(const char *ct, const cJSON *obj, struct watcher_key *out, size_t cap,
                     size_t *n)
{
    const cJSON *ref = kobj_controller_ref(obj);
    if (!ref)
        return 0;
    const char *kind = kobj_str(ref, "kind"), *av = kobj_str(ref, "apiVersion");
    const char *oname = kobj_str(ref, "name");
    const char *ns = kobj_meta_str(obj, "namespace");
    if (!kind || !av || !oname)
        return 0;
    for (size_t i = 0; i < watcher_nowner_rules; i++) {
        const struct watcher_owner_rule *r = &watcher_owner_rules[i];
        if (strcmp(r->child_cache_type, ct) != 0 || strcmp(r->owner_kind, kind) != 0 ||
            !same_group(r->owner_api_version, av))
            continue;
        int rc = push_key(out, cap, n, r->queue, ns ? ns : "", oname);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* KubeRay's predicate: GenerationChanged OR LabelChanged OR AnnotationChanged. */
static int meta_changed(const cJSON *obj, const cJSON *old)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *om = cJSON_GetObjectItemCaseSensitive(old, "metadata");
    static const char *const fields[] = { "generation", "labels", "annotations" };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, fields[i]);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(om, fields[i]);
        /* an empty map and an absent one are the same to the API */
        if (cJSON_IsObject(a) && !a->child) a = NULL;
        if (cJSON_IsObject(b) && !b->child) b = NULL;
        if (!json_equal(a, b))
            return 1;
    }
    return 0;
}

int watcher_map_event(int t, enum watcher_ev ev, const cJSON *obj, const cJSON *old,
                      struct watcher_key *out, size_t cap)
{
    if (t < 0 || (size_t)t >= watcher_ntypes || !cJSON_IsObject(obj) || !out)
        return -EINVAL;
    const struct watcher_type *ty = &watcher_types[t];
    size_t n = 0;
    int rc;

    if (ty->queue) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        int want = ev != WATCHER_EV_UPDATE || !ty->filter_meta_only || !old ||
                   meta_changed(obj, old);
        if (want && (rc = push_key(out, cap, &n, ty->queue, kobj_str(m, "namespace") ?
                                   kobj_str(m, "namespace") : "", kobj_str(m, "name"))) < 0)
            return rc;
    }
    if ((rc = map_owner(ty->cache_type, obj, out, cap, &n)) < 0)
        return rc;
    /* an owner change notifies the previous owner too */
    if (ev == WATCHER_EV_UPDATE && old && (rc = map_owner(ty->cache_type, old, out, cap, &n)) < 0)
        return rc;
    return (int)n;
}

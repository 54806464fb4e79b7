/*
 * builtin.c - the built-in API types kubesim serves, with the discovery
 * data a real 1.3x API server publishes for them (names, short names, categories,
 * verbs, subresources) and the behaviour switches the store needs (field selector
 * labels, graceful deletion, generation rules, strategic-merge table name).
 *
 * The table is plain data so it can be checked against `kubectl api-resources` of a
 * real cluster line by line. registry_new() starts every registry from it; the
 * table operations it uses are registry.c's, which calls nothing here.
 */
#include "kubesim/registry/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ALL REG_ALL
#define NO_DC (REG_ALL & ~REG_DELETECOLLECTION)
#define GPU (REG_GET | REG_PATCH | REG_UPDATE)

struct sub_spec {
    const char *name, *group, *version, *kind;
    unsigned verbs;
};

struct builtin_spec {
    const char *group, *version, *plural, *singular, *kind;
    bool namespaced;
    unsigned verbs;
    const char *short_names;          /* comma separated */
    const char *categories;
    bool has_status;
    const char *smp_kind;
    const char *const *field_labels;
    unsigned flags;
    const struct sub_spec *subs;      /* terminated by a NULL name */
};

/* metadata.name and metadata.namespace are supported for every type by the selector
 * code itself; these are the type-specific extras. */
static const char *const pod_fields[] = {
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
    "status.nominatedNodeName", NULL,
};
static const char *const event_fields[] = {
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type", NULL,
};
static const char *const events_v1_fields[] = {
    "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
    "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath", "reason",
    "reportingController", "type", NULL,
};
static const char *const secret_fields[] = { "type", NULL };
static const char *const namespace_fields[] = { "status.phase", NULL };
static const char *const node_fields[] = { "spec.unschedulable", NULL };
static const char *const job_fields[] = { "status.successful", NULL };
static const char *const no_fields[] = { NULL };

static const struct sub_spec pod_subs[] = {
    { "binding", "", "v1", "Binding", REG_CREATE },
    { "eviction", "policy", "v1", "Eviction", REG_CREATE },
    { "log", "", "v1", "Pod", REG_GET },
    { NULL, NULL, NULL, NULL, 0 },
};
static const struct sub_spec service_subs[] = {
    { "proxy", "", "v1", "ServiceProxyOptions",
      REG_CREATE | REG_DELETE | REG_GET | REG_PATCH | REG_UPDATE },
    { NULL, NULL, NULL, NULL, 0 },
};
static const struct sub_spec namespace_subs[] = {
    { "finalize", "", "v1", "Namespace", REG_UPDATE },
    { NULL, NULL, NULL, NULL, 0 },
};
static const struct sub_spec sa_subs[] = {
    { "token", "authentication.k8s.io", "v1", "TokenRequest", REG_CREATE },
    { NULL, NULL, NULL, NULL, 0 },
};
static const struct sub_spec no_subs[] = {
    { NULL, NULL, NULL, NULL, 0 },
};

#define NOGEN REG_FLAG_NO_GENERATION
#define SPECGEN REG_FLAG_SPEC_GENERATION

static const struct builtin_spec builtins[] = {
    /* core/v1, in the order /api/v1 lists them */
    { "", "v1", "configmaps", "configmap", "ConfigMap", true, ALL, "cm", "", false,
      "ConfigMap", no_fields, NOGEN, no_subs },
    { "", "v1", "endpoints", "endpoints", "Endpoints", true, ALL, "ep", "", false,
      "Endpoints", no_fields, NOGEN, no_subs },
    { "", "v1", "events", "event", "Event", true, ALL, "ev", "", false,
      "Event", event_fields, NOGEN | REG_FLAG_NO_GC_POLICY, no_subs },
    { "", "v1", "namespaces", "namespace", "Namespace", false, NO_DC, "ns", "", true,
      "Namespace", namespace_fields, NOGEN, namespace_subs },
    { "", "v1", "nodes", "node", "Node", false, ALL, "no", "", true,
      "Node", node_fields, NOGEN, no_subs },
    { "", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim",
      true, ALL, "pvc", "", true, "PersistentVolumeClaim", no_fields, NOGEN, no_subs },
    { "", "v1", "pods", "pod", "Pod", true, ALL, "po", "all", true,
      "Pod", pod_fields, NOGEN | REG_FLAG_GRACEFUL_DELETE, pod_subs },
    { "", "v1", "secrets", "secret", "Secret", true, ALL, "", "", false,
      "Secret", secret_fields, NOGEN, no_subs },
    { "", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, ALL, "sa", "",
      false, "ServiceAccount", no_fields, NOGEN, sa_subs },
    { "", "v1", "services", "service", "Service", true, ALL, "svc", "all", true,
      "Service", no_fields, NOGEN, service_subs },
    /* named groups */
    { "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
      "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false, ALL, "", "api-extensions",
      false, "ValidatingWebhookConfiguration", no_fields, NOGEN, no_subs },
    { "apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
      "CustomResourceDefinition", false, ALL, "crd,crds", "api-extensions", true,
      "CustomResourceDefinition", no_fields, SPECGEN, no_subs },
    { "apps", "v1", "deployments", "deployment", "Deployment", true, ALL, "deploy", "all", true,
      "Deployment", no_fields, SPECGEN, no_subs },
    { "apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, ALL, "rs", "all", true,
      "ReplicaSet", no_fields, SPECGEN, no_subs },
    { "batch", "v1", "jobs", "job", "Job", true, ALL, "", "all", true,
      "Job", job_fields, SPECGEN | REG_FLAG_ORPHAN_DEFAULT, no_subs },
    { "coordination.k8s.io", "v1", "leases", "lease", "Lease", true, ALL, "", "", false,
      "Lease", no_fields, NOGEN, no_subs },
    { "discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", true,
      ALL, "", "", false, "EndpointSlice", no_fields, NOGEN, no_subs },
    { "events.k8s.io", "v1", "events", "event", "Event", true, ALL, "ev", "", false,
      "Event", events_v1_fields, NOGEN | REG_FLAG_NO_GC_POLICY, no_subs },
    { "networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass", false, ALL,
      "", "", false, "IngressClass", no_fields, SPECGEN, no_subs },
    { "networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", true, ALL, "ing", "", true,
      "Ingress", no_fields, SPECGEN, no_subs },
    /* stored and validated, not enforced: kubesim has no pod network to filter */
    { "networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", true, ALL,
      "netpol", "", false, "NetworkPolicy", no_fields, SPECGEN, no_subs },
    { "policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget",
      true, ALL, "pdb", "", true, "PodDisruptionBudget", no_fields, SPECGEN, no_subs },
    { "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
      "ClusterRoleBinding", false, ALL, "", "", false, "ClusterRoleBinding", no_fields,
      NOGEN, no_subs },
    { "rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", false,
      ALL, "", "", false, "ClusterRole", no_fields, NOGEN, no_subs },
    { "rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", true,
      ALL, "", "", false, "RoleBinding", no_fields, NOGEN, no_subs },
    { "rbac.authorization.k8s.io", "v1", "roles", "role", "Role", true, ALL, "", "", false,
      "Role", no_fields, NOGEN, no_subs },
    /* Volcano's priority order reads PriorityClass values (kubesim/cluster/gang.c) */
    { "scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", false, ALL,
      "pc", "", false, NULL, no_fields, NOGEN, no_subs },
    /* Kubernetes workload-aware scheduling (KubeRay's KubernetesWAS gate) */
    { "scheduling.k8s.io", "v1alpha2", "podgroups", "podgroup", "PodGroup", true, ALL, "", "",
      true, NULL, no_fields, SPECGEN, no_subs },
    { "scheduling.k8s.io", "v1alpha2", "workloads", "workload", "Workload", true, ALL, "", "",
      false, NULL, no_fields, SPECGEN, no_subs },
};

static int add_one(struct registry *r, const struct builtin_spec *b)
{
    struct reg_resource *res;
    size_t nsub = 0;
    int rc = -ENOMEM;

    res = calloc(1, sizeof(*res));
    if (!res)
        return -ENOMEM;
    res->group = strdup(b->group);
    res->version = strdup(b->version);
    res->plural = strdup(b->plural);
    res->singular = strdup(b->singular);
    res->kind = strdup(b->kind);
    res->list_kind = malloc(strlen(b->kind) + 5);
    res->short_names = registry__strv_split(b->short_names);
    res->categories = registry__strv_split(b->categories);
    if (!res->group || !res->version || !res->plural || !res->singular || !res->kind ||
        !res->list_kind || !res->short_names || !res->categories)
        goto out;
    strcpy(res->list_kind, b->kind);
    strcat(res->list_kind, "List");
    res->namespaced = b->namespaced;
    res->verbs = b->verbs;
    res->has_status = b->has_status;
    res->smp_kind = b->smp_kind;
    res->field_labels = b->field_labels;
    res->flags = b->flags;
    res->builtin = true;
    res->storage = true;
    if (!strcmp(b->group, "apps")) {
        /* /scale as the real server maps it for Deployments and ReplicaSets */
        res->has_scale = true;
        res->scale_spec_path = strdup(".spec.replicas");
        res->scale_status_path = strdup(".status.replicas");
        if (!res->scale_spec_path || !res->scale_status_path)
            goto out;
    }
    while (b->subs[nsub].name)
        nsub++;
    if (nsub) {
        res->subresources = calloc(nsub, sizeof(*res->subresources));
        if (!res->subresources)
            goto out;
        for (size_t i = 0; i < nsub; i++) {
            struct reg_subresource *s = &res->subresources[i];
            s->name = strdup(b->subs[i].name);
            s->group = strdup(b->subs[i].group);
            s->version = strdup(b->subs[i].version);
            s->kind = strdup(b->subs[i].kind);
            s->verbs = b->subs[i].verbs;
            res->n_subresources = i + 1;
            if (!s->name || !s->group || !s->version || !s->kind)
                goto out;
        }
    }
    rc = registry__insert(r, res);
out:
    if (rc < 0)
        registry__resource_free(res);
    return rc;
}

static int add_builtins(struct registry *r)
{
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
        int rc = add_one(r, &builtins[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int registry_new(struct registry **out)
{
    struct registry *r;
    int rc;

    *out = NULL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    rc = add_builtins(r);
    if (rc < 0) {
        registry_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

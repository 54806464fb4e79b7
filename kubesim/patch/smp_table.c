/*
 * patch_smp_table.c - the strategic-merge-patch metadata of the built-in kinds kubesim
 * serves: which lists merge by which key, which merge as sets of primitives, and which
 * honour $retainKeys. Taken from the patchStrategy/patchMergeKey struct tags in
 * k8s.io/api (core/v1, batch/v1, apps/v1, rbac/v1, coordination/v1, events/v1).
 * Every list not named here is atomic: a patch replaces it whole.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"

struct rule_row {
    const char *path; /* relative to the table's base */
    enum smp_list kind;
    const char *key;
    bool retain_keys;
};

/* core/v1 PodSpec, used wherever a pod template appears. */
static const struct rule_row pod_spec_rows[] = {
    { "containers", SMP_MERGE_KEY, "name", false },
    { "initContainers", SMP_MERGE_KEY, "name", false },
    { "ephemeralContainers", SMP_MERGE_KEY, "name", false },
    { "volumes", SMP_MERGE_KEY, "name", true },
    { "imagePullSecrets", SMP_MERGE_KEY, "name", false },
    { "hostAliases", SMP_MERGE_KEY, "ip", false },
    { "topologySpreadConstraints", SMP_MERGE_KEY, "topologyKey", false },
    { "schedulingGates", SMP_MERGE_KEY, "name", false },
    { "resourceClaims", SMP_MERGE_KEY, "name", true },
    /* inside any of the three container lists */
    { "*.env", SMP_MERGE_KEY, "name", false },
    { "*.ports", SMP_MERGE_KEY, "containerPort", false },
    { "*.volumeMounts", SMP_MERGE_KEY, "mountPath", false },
    { "*.volumeDevices", SMP_MERGE_KEY, "devicePath", false },
    { NULL, SMP_ATOMIC, NULL, false },
};

/* ObjectMeta, for every kind and every embedded template. */
static const struct rule_row meta_rows[] = {
    { "finalizers", SMP_MERGE_PRIMITIVE, NULL, false },
    { "ownerReferences", SMP_MERGE_KEY, "uid", false },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row pod_rows[] = {
    { "status.conditions", SMP_MERGE_KEY, "type", false },
    { "status.podIPs", SMP_MERGE_KEY, "ip", false },
    { "status.hostIPs", SMP_MERGE_KEY, "ip", false },
    { "status.resourceClaimStatuses", SMP_MERGE_KEY, "name", true },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row service_rows[] = {
    { "spec.ports", SMP_MERGE_KEY, "port", false },
    { "status.conditions", SMP_MERGE_KEY, "type", false },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row conditions_rows[] = {
    { "status.conditions", SMP_MERGE_KEY, "type", false },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row node_rows[] = {
    { "spec.podCIDRs", SMP_MERGE_PRIMITIVE, NULL, false },
    { "status.conditions", SMP_MERGE_KEY, "type", false },
    { "status.addresses", SMP_MERGE_KEY, "type", false },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row sa_rows[] = {
    { "secrets", SMP_MERGE_KEY, "name", false },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row deploy_rows[] = {
    { "status.conditions", SMP_MERGE_KEY, "type", false },
    { "spec.strategy", SMP_ATOMIC, NULL, true },
    { NULL, SMP_ATOMIC, NULL, false },
};

static const struct rule_row empty_rows[] = {
    { NULL, SMP_ATOMIC, NULL, false },
};

struct kind_row {
    const char *kind;
    const struct rule_row *rows;
    const char *pod_spec; /* where a PodSpec sits, or NULL */
};

static const struct kind_row kinds[] = {
    { "Pod", pod_rows, "spec" },
    { "PodTemplate", empty_rows, "template.spec" },
    { "Service", service_rows, NULL },
    { "Job", conditions_rows, "spec.template.spec" },
    { "CronJob", empty_rows, "spec.jobTemplate.spec.template.spec" },
    { "Deployment", deploy_rows, "spec.template.spec" },
    { "ReplicaSet", conditions_rows, "spec.template.spec" },
    { "StatefulSet", conditions_rows, "spec.template.spec" },
    { "DaemonSet", conditions_rows, "spec.template.spec" },
    { "ReplicationController", conditions_rows, "spec.template.spec" },
    { "ConfigMap", empty_rows, NULL },
    { "Secret", empty_rows, NULL },
    { "ServiceAccount", sa_rows, NULL },
    { "Namespace", conditions_rows, NULL },
    { "Node", node_rows, NULL },
    { "Endpoints", empty_rows, NULL },
    { "EndpointSlice", empty_rows, NULL },
    /* apiextensions types carry no patchStrategy tags (status.conditions is only a
     * listType=map): kubectl apply of a CRD still sends a strategic merge patch, in
     * which every list is atomic */
    { "CustomResourceDefinition", empty_rows, NULL },
    { "PersistentVolumeClaim", conditions_rows, NULL },
    { "PersistentVolume", empty_rows, NULL },
    { "Event", empty_rows, NULL },
    { "Lease", empty_rows, NULL },
    { "Role", empty_rows, NULL },
    { "RoleBinding", empty_rows, NULL },
    { "ClusterRole", empty_rows, NULL },
    { "ClusterRoleBinding", empty_rows, NULL },
    { "PodDisruptionBudget", conditions_rows, NULL },
    { "ResourceQuota", empty_rows, NULL },
    { "LimitRange", empty_rows, NULL },
    { "Ingress", empty_rows, NULL },
    { "IngressClass", empty_rows, NULL },
    { "ValidatingWebhookConfiguration", empty_rows, NULL },
    { "NetworkPolicy", empty_rows, NULL },
    { "PriorityClass", empty_rows, NULL },
    { NULL, NULL, NULL },
};

bool patch__path_push(char *path, size_t *len, const char *name)
{
    size_t n = strlen(name), need = *len + (*len ? 1 : 0) + n;
    if (need >= PATCH_PATH_MAX)
        return false;
    if (*len)
        path[(*len)++] = '.';
    memcpy(path + *len, name, n);
    *len += n;
    path[*len] = '\0';
    return true;
}

static const struct kind_row *find_kind(const char *kind)
{
    if (!kind)
        return NULL;
    for (const struct kind_row *k = kinds; k->kind; k++)
        if (!strcmp(k->kind, kind))
            return k;
    return NULL;
}

bool patch_smp_kind_known(const char *smp_kind)
{
    return find_kind(smp_kind) != NULL;
}

static bool row_find(const struct rule_row *rows, const char *path, struct smp_rule *out)
{
    for (const struct rule_row *r = rows; r->path; r++) {
        bool hit;
        if (r->path[0] == '*' && r->path[1] == '.') {
            /* "*.env": one field name, then the rest */
            const char *dot = strchr(path, '.');
            hit = dot && !strchr(dot + 1, '.') && !strcmp(dot + 1, r->path + 2);
        } else {
            hit = !strcmp(path, r->path);
        }
        if (hit) {
            out->kind = r->kind;
            out->key = r->key;
            out->retain_keys = r->retain_keys;
            return true;
        }
    }
    return false;
}

/* If path starts with prefix + ".", returns the remainder, else NULL. */
static const char *under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (!strncmp(path, prefix, n) && path[n] == '.')
        return path + n + 1;
    return NULL;
}

struct smp_rule patch__smp_rule(const char *smp_kind, const char *path)
{
    struct smp_rule r = { SMP_ATOMIC, NULL, false };
    const struct kind_row *k = find_kind(smp_kind);
    const char *rest;
    char tmeta[PATCH_PATH_MAX];

    if (!k || !path)
        return r;
    if ((rest = under(path, "metadata")) && row_find(meta_rows, rest, &r))
        return r;
    if (k->pod_spec) {
        if ((rest = under(path, k->pod_spec)) && row_find(pod_spec_rows, rest, &r))
            return r;
        /* the template's own metadata: "<template>.metadata.finalizers" */
        size_t n = strlen(k->pod_spec);
        if (n > 4 && n + 5 < sizeof(tmeta)) {
            memcpy(tmeta, k->pod_spec, n - 4);
            memcpy(tmeta + n - 4, "metadata", 9);
            if ((rest = under(path, tmeta)) && row_find(meta_rows, rest, &r))
                return r;
        }
    }
    row_find(k->rows, path, &r);
    return r;
}

int patch__set_member(cJSON *obj, cJSON *cur, const char *name, cJSON *v)
{
    char *key;

    if (!v)
        return -ENOMEM;
    if (!cur) {
        if (!cJSON_AddItemToObject(obj, name, v))
            goto nomem;
        return 0;
    }
    /* cJSON_ReplaceItemViaPointer keeps v's own name; the member must keep cur's */
    if (!(key = strdup(cur->string ? cur->string : "")))
        goto nomem;
    if (v->string && !(v->type & cJSON_StringIsConst))
        cJSON_free(v->string);
    v->type &= ~cJSON_StringIsConst;
    v->string = key;
    cJSON_ReplaceItemViaPointer(obj, cur, v);
    return 0;
nomem:
    cJSON_Delete(v);
    return -ENOMEM;
}

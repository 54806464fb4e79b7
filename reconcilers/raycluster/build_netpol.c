/*
 * build_netpol.c - the NetworkPolicies of `spec.networkPolicy` (gate RayClusterNetworkPolicy),
 * as KubeRay v1.7's NetworkPolicyController builds them: NAME-head for the head Pod and
 * NAME-workers-GROUP for each worker group.
 *
 * Every policy lets the cluster's own Pods talk to each other (all ports, both ways);
 * the mode says which directions are denied otherwise (DenyAll, DenyAllIngress,
 * DenyAllEgress). The head also admits the submitter Pod of the K8sJobMode RayJob that
 * owns the cluster, on the dashboard port. The user's rules are appended after these.
 * DNS is not allowed by default, as in KubeRay: the user adds it.
 * Pure functions; reconcile_netpol.c writes what they return.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/internal.h"

#define NP_DEFAULT_DASHBOARD_PORT 8265

const char *rc_netpol_mode(const cJSON *rc)
{
    const char *m = kobj_str(kobj_get(raycluster__spec(rc), "networkPolicy"), "mode");
    return m ? m : RC_NETPOL_DENY_ALL;
}

/* {"podSelector": {"matchLabels": {k1: v1[, k2: v2]}}} */
static cJSON *peer(struct rcb *b, const char *k1, const char *v1, const char *k2, const char *v2)
{
    cJSON *p = cJSON_CreateObject();
    if (!p) {
        b->err = -ENOMEM;
        return NULL;
    }
    cJSON *ml = raycluster__build_obj(b, raycluster__build_obj(b, p, "podSelector"), "matchLabels");
    raycluster__build_set_str(b, ml, k1, v1);
    if (k2)
        raycluster__build_set_str(b, ml, k2, v2);
    return p;
}

/* The intra-cluster rule: from (ingress) or to (egress) any Pod of the cluster. */
static cJSON *cluster_rule(struct rcb *b, const cJSON *rc, const char *dir)
{
    cJSON *r = cJSON_CreateObject();
    if (!r) {
        b->err = -ENOMEM;
        return NULL;
    }
    raycluster__build_append(b, raycluster__build_arr(b, r, dir), peer(b, RC_LABEL_CLUSTER, raycluster__name(rc), NULL, NULL));
    return r;
}

/* getHeadPort: rayStartParams["dashboard-port"] when it parses as an int32, else 8265 */
static int head_dashboard_port(const cJSON *rc)
{
    const char *s = kobj_str(kobj_get(raycluster__head_group(rc), "rayStartParams"), "dashboard-port");
    char *end;
    long v;
    if (!s || !*s)
        return NP_DEFAULT_DASHBOARD_PORT;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < INT32_MIN || v > INT32_MAX || s[0] == ' ')
        return NP_DEFAULT_DASHBOARD_PORT;
    return (int)v;
}

/* buildRayJobPeer: the owning RayJob's name when the cluster runs a K8sJobMode job (its
 * submitter is a separate Pod), NULL otherwise. */
static const char *k8s_job_owner(const cJSON *rc)
{
    const char *mode = kobj_str(kobj_get(kobj_get(rc, "metadata"), "labels"),
                                "ray.io/job-submission-mode");
    const cJSON *o;
    if (!mode || strcmp(mode, "K8sJobMode"))
        return NULL;
    cJSON_ArrayForEach(o, kobj_get(kobj_get(rc, "metadata"), "ownerReferences")) {
        const char *kind = kobj_str(o, "kind"), *api = kobj_str(o, "apiVersion");
        if (kind && !strcmp(kind, "RayJob") && cJSON_IsTrue(kobj_get(o, "controller")) && api &&
            !strncmp(api, "ray.io/", 7) && kobj_str(o, "name"))
            return kobj_str(o, "name");
    }
    return NULL;
}

/* Appends a copy of each element of the user's rules array (nothing when absent). */
static void append_rules(struct rcb *b, cJSON *arr, const cJSON *user)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, (cJSON_IsArray(user) ? user : NULL))
        raycluster__build_append(b, arr, raycluster__build_dup(b, r));
}

/* workerGroupCustomRules: the group's own entry, else networkPolicy.worker */
static const cJSON *group_rules(const cJSON *np, const char *group)
{
    const cJSON *g;
    cJSON_ArrayForEach(g, kobj_get(np, "workerGroups")) {
        const char *n = kobj_str(g, "groupName");
        if (n && !strcmp(n, group))
            return g;
    }
    return kobj_get(np, "worker");
}

/* One policy. group NULL: the head's. custom: the user's NetworkPolicyRules or NULL. */
static cJSON *policy(struct rcb *b, const cJSON *rc, const char *group, const cJSON *custom)
{
    const char *mode = rc_netpol_mode(rc), *cname = raycluster__name(rc);
    bool deny_in = !strcmp(mode, RC_NETPOL_DENY_ALL) || !strcmp(mode, RC_NETPOL_DENY_INGRESS);
    bool deny_out = !strcmp(mode, RC_NETPOL_DENY_ALL) || !strcmp(mode, RC_NETPOL_DENY_EGRESS);
    char name[320];
    cJSON *meta, *np, *spec, *labels, *ml, *types;
    if (group)
        snprintf(name, sizeof(name), "%s-workers-%s", cname, group);
    else
        snprintf(name, sizeof(name), "%s-head", cname);
    np = raycluster__build_object(b, "networking.k8s.io/v1", "NetworkPolicy", name, raycluster__namespace(rc), &meta);
    labels = raycluster__build_obj(b, meta, "labels");
    raycluster__build_set_str(b, labels, RC_LABEL_CLUSTER, cname);
    raycluster__build_set_str(b, labels, RC_LABEL_GROUP, group ? group : RC_HEAD_GROUP_NAME);
    raycluster__build_set_str(b, labels, RC_LABEL_APP_NAME, RC_APP_NAME);
    raycluster__build_set_str(b, labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    raycluster__build_owner_ref(b, np, rc);
    spec = raycluster__build_obj(b, np, "spec");
    ml = raycluster__build_obj(b, raycluster__build_obj(b, spec, "podSelector"), "matchLabels");
    raycluster__build_set_str(b, ml, RC_LABEL_CLUSTER, cname);
    raycluster__build_set_str(b, ml, RC_LABEL_NODE_TYPE, group ? RC_NODE_WORKER : RC_NODE_HEAD);
    if (group)
        raycluster__build_set_str(b, ml, RC_LABEL_GROUP, group);
    types = raycluster__build_arr(b, spec, "policyTypes");
    if (deny_in) {
        cJSON *in = raycluster__build_arr(b, spec, "ingress");
        const char *job = group ? NULL : k8s_job_owner(rc);
        raycluster__build_append(b, types, cJSON_CreateString("Ingress"));
        raycluster__build_append(b, in, cluster_rule(b, rc, "from"));
        if (job) {
            cJSON *r = cJSON_CreateObject(), *port = cJSON_CreateObject();
            if (!r || !port)
                b->err = -ENOMEM;
            raycluster__build_append(b, raycluster__build_arr(b, r, "from"),
                                     peer(b, RC_LABEL_ORIGINATED_CR_NAME, job, RC_LABEL_ORIGINATED_CRD, "RayJob"));
            raycluster__build_set_str(b, port, "protocol", "TCP");
            raycluster__build_set_num(b, port, "port", head_dashboard_port(rc));
            raycluster__build_append(b, raycluster__build_arr(b, r, "ports"), port);
            raycluster__build_append(b, in, r);
        }
        append_rules(b, in, kobj_get(custom, "ingressRules"));
    }
    if (deny_out) {
        cJSON *out = raycluster__build_arr(b, spec, "egress");
        raycluster__build_append(b, types, cJSON_CreateString("Egress"));
        raycluster__build_append(b, out, cluster_rule(b, rc, "to"));
        append_rules(b, out, kobj_get(custom, "egressRules"));
    }
    return np;
}

cJSON *rc_build_network_policies(const cJSON *rc, int *err)
{
    const cJSON *np = kobj_get(raycluster__spec(rc), "networkPolicy"), *g;
    struct rcb b = { 0 };
    cJSON *all;
    if (!cJSON_IsObject(np))
        return NULL;
    if (!(all = cJSON_CreateArray())) {
        b.err = -ENOMEM;
        goto out;
    }
    raycluster__build_append(&b, all, policy(&b, rc, NULL, kobj_get(np, "head")));
    cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs")) {
        const char *gn = kobj_str(g, "groupName");
        raycluster__build_append(&b, all, policy(&b, rc, gn ? gn : "", group_rules(np, gn ? gn : "")));
    }
out:
    return raycluster__build_done(&b, all, err);
}

/* normalizeNetworkPolicyPorts: a port without a protocol is TCP, as the API server
 * stores it, so a user's rule does not look drifted after every write. */
void rc_netpol_normalize(cJSON *np)
{
    static const char *const dirs[] = { "ingress", "egress" };
    const cJSON *spec = kobj_get(np, "spec"), *rule;
    cJSON *port;
    for (size_t d = 0; d < 2; d++)
        cJSON_ArrayForEach(rule, kobj_get(spec, dirs[d]))
            cJSON_ArrayForEach(port, kobj_get(rule, "ports"))
                if (cJSON_IsObject(port) && !kobj_str(port, "protocol")) {
                    cJSON_DeleteItemFromObjectCaseSensitive(port, "protocol");
                    cJSON_AddStringToObject(port, "protocol", "TCP");
                }
}

/*
 * build.c - the objects a RayService owns, as KubeRay v1.7 builds them: the RayCluster
 * (constructRayClusterForRayService), NAME-head-svc (BuildHeadServiceForRayService: the
 * cluster's head Service under the RayService's name), NAME-serve-svc or the user's
 * serveService (BuildServeService), and for incremental upgrades the Gateway and the
 * HTTPRoute. Pure functions of the cached objects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/json.h"

bool rs_incremental(const cJSON *rs, const struct rs_gates *g)
{
    return g && g->incremental_upgrade &&
           !strcmp(rs_str(rs, "spec.upgradeStrategy.type"), "NewClusterWithIncrementalUpgrade");
}

static cJSON *owner_refs(const cJSON *rs)
{
    return kobj_controller_refs("ray.io/v1", "RayService", rs);
}

static cJSON *copy_map(const cJSON *m)
{
    return cJSON_IsObject(m) ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
}

static void put(cJSON *m, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(m, k);
    cJSON_AddStringToObject(m, k, v);
}

cJSON *rs_build_cluster(const cJSON *rs, const char *name, const struct rs_gates *g, int *err)
{
    const cJSON *spec = json_get(rs, "spec.rayClusterConfig");
    char hash[33], n[16];
    int rc = rs_cluster_hash(spec, -1, hash);
    cJSON *c = NULL, *md, *labels, *ann, *cs, *grp;
    if (rc < 0)
        goto fail;
    rc = -ENOMEM;
    if (!(c = cJSON_CreateObject()))
        goto fail;
    cJSON_AddStringToObject(c, "apiVersion", "ray.io/v1");
    cJSON_AddStringToObject(c, "kind", "RayCluster");
    md = cJSON_AddObjectToObject(c, "metadata");
    labels = copy_map(json_get(rs, "metadata.labels"));
    ann = copy_map(json_get(rs, "metadata.annotations"));
    if (!md || !labels || !ann) {
        cJSON_Delete(labels);
        cJSON_Delete(ann);
        goto fail;
    }
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", rs_str(rs, "metadata.namespace"));
    put(labels, RC_LABEL_ORIGINATED_CR_NAME, rs_str(rs, "metadata.name"));
    put(labels, RC_LABEL_ORIGINATED_CRD, "RayService");
    cJSON_AddItemToObject(md, "labels", labels);
    put(ann, RS_ANN_HASH, hash);
    snprintf(n, sizeof(n), "%d", cJSON_GetArraySize(json_get(spec, "workerGroupSpecs")));
    put(ann, RS_ANN_NUM_WORKER_GROUPS, n);
    put(ann, RC_ANN_KUBERAY_VERSION, RC_KUBERAY_VERSION);
    cJSON_AddItemToObject(md, "annotations", ann);
    cJSON_AddItemToObject(md, "ownerReferences", owner_refs(rs));
    cs = spec ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject();
    if (!cs)
        goto fail;
    cJSON_AddItemToObject(c, "spec", cs);
    /* an incremental upgrade's pending cluster starts without replicas: it autoscales
     * from minReplicas as target_capacity grows */
    if (rs_incremental(rs, g) && *rs_str(rs, "status.activeServiceStatus.rayClusterName"))
        cJSON_ArrayForEach(grp, cJSON_GetObjectItemCaseSensitive(cs, "workerGroupSpecs"))
            cJSON_DeleteItemFromObjectCaseSensitive(grp, "replicas");
    return c;
fail:
    cJSON_Delete(c);
    if (err)
        *err = rc;
    return NULL;
}

cJSON *rs_build_head_service(const cJSON *rs, const cJSON *cluster, int *err)
{
    struct rc_build_opts o;
    char id[80];
    rc_build_opts_from_env(&o);
    cJSON *svc = rc_build_head_service(cluster, &o, err);
    if (!svc)
        return NULL;
    cJSON *md = cJSON_GetObjectItemCaseSensitive(svc, "metadata");
    cJSON *labels = cJSON_CreateObject();
    char name[300];
    snprintf(name, sizeof(name), "%s-head-svc", rs_str(rs, "metadata.name"));
    put(md, "name", name);
    put(md, "namespace", rs_str(rs, "metadata.namespace"));
    put(labels, RC_LABEL_ORIGINATED_CR_NAME, rs_str(rs, "metadata.name"));
    put(labels, RC_LABEL_ORIGINATED_CRD, "RayService");
    put(labels, RC_LABEL_NODE_TYPE, RC_NODE_HEAD);
    /* CheckLabel(NAME-head): RayService names are at most 47 characters, so it fits */
    snprintf(id, sizeof(id), "%s-head", rs_str(rs, "metadata.name"));
    put(labels, RC_LABEL_IDENTIFIER, id);
    /* not in KubeRay's label set: rayop's watcher caches Services by this label */
    put(labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    cJSON_ReplaceItemInObjectCaseSensitive(md, "labels", labels);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
    cJSON_AddItemToObject(md, "ownerReferences", owner_refs(rs));
    return svc;
}

static int rs_serve_port(const cJSON *cluster)
{
    const cJSON *c = cJSON_GetArrayItem(json_get(cluster, "spec.headGroupSpec.template.spec.containers"), 0);
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "ports")) {
        int64_t v;
        if (!strcmp(rs_str(p, "name"), "serve") && rs_int(p, "containerPort", &v) == 0)
            return (int)v;
    }
    return 8000;
}

static bool serving_port(const char *n)
{
    return !strcmp(n, "serve") || !strncmp(n, "serve-", 6);
}

/* getServicePorts filtered by isServingPort: the head container's named ports (unnamed
 * ones are "N-port", never serving), or the defaults (serve 8000) when it lists none.
 * Sorted by name (KubeRay iterates a map: its order is random). */
static cJSON *serve_ports(const cJSON *cluster)
{
    const cJSON *c = cJSON_GetArrayItem(json_get(cluster, "spec.headGroupSpec.template.spec.containers"), 0);
    const cJSON *ports = cJSON_GetObjectItemCaseSensitive(c, "ports"), *p;
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return NULL;
    if (!cJSON_GetArraySize(ports)) {
        cJSON *sp = cJSON_CreateObject();
        cJSON_AddStringToObject(sp, "name", "serve");
        cJSON_AddNumberToObject(sp, "port", 8000);
        cJSON_AddItemToArray(out, sp);
        return out;
    }
    cJSON_ArrayForEach(p, ports) {
        const char *n = rs_str(p, "name");
        int64_t v = 0;
        if (!serving_port(n))
            continue;
        rs_int(p, "containerPort", &v);
        /* a later duplicate name wins, as in the map */
        cJSON *e, *at = NULL;
        int i = 0, pos = 0;
        cJSON_ArrayForEach(e, out) {
            int cmp = strcmp(rs_str(e, "name"), n);
            if (cmp == 0) {
                cJSON_ReplaceItemInObjectCaseSensitive(e, "port", cJSON_CreateNumber((double)v));
                goto next;
            }
            if (cmp < 0)
                pos = i + 1;
            i++;
        }
        at = cJSON_CreateObject();
        cJSON_AddStringToObject(at, "name", n);
        cJSON_AddNumberToObject(at, "port", (double)v);
        cJSON_InsertItemInArray(out, pos, at);
next:;
    }
    return out;
}

cJSON *rs_build_serve_service(const cJSON *rs, const cJSON *cluster, bool per_cluster,
                              const struct rs_gates *g, int *err)
{
    bool incr = rs_incremental(rs, g);
    const char *base = per_cluster || incr ? rs_str(cluster, "metadata.name") : rs_str(rs, "metadata.name");
    char name[300], lab[300];
    cJSON *ports = serve_ports(cluster), *svc = NULL, *md, *spec, *sel, *labels;
    const cJSON *user = json_get(rs, "spec.serveService");
    const char *type = rs_str(rs, "spec.rayClusterConfig.headGroupSpec.serviceType");
    if (!ports)
        goto nomem;
    if (!ports->child && (!user || per_cluster || incr)) {
        cJSON_Delete(ports);
        if (err)
            *err = -ENOENT;
        return NULL;
    }
    snprintf(name, sizeof(name), "%s-serve-svc", base);
    snprintf(lab, sizeof(lab), "%s-serve", base);
    if (user && cJSON_IsObject(user) && !incr && !per_cluster) {
        svc = cJSON_Duplicate(user, 1);
        if (!svc)
            goto nomem;
        /* user ports replace ours by name; without serving ports the user's stay */
        spec = cJSON_GetObjectItemCaseSensitive(svc, "spec");
        if (!spec)
            spec = cJSON_AddObjectToObject(svc, "spec");
        if (ports->child) {
            cJSON *merged = cJSON_CreateArray(), *ap;
            cJSON_ArrayForEach(ap, ports) {
                const cJSON *up, *hit = NULL;
                cJSON_ArrayForEach(up, cJSON_GetObjectItemCaseSensitive(spec, "ports"))
                    if (!strcmp(rs_str(up, "name"), rs_str(ap, "name")))
                        hit = up;
                cJSON_AddItemToArray(merged, cJSON_Duplicate(hit ? hit : ap, 1));
            }
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "ports");
            cJSON_AddItemToObject(spec, "ports", merged);
        }
        md = cJSON_GetObjectItemCaseSensitive(svc, "metadata");
        if (!md)
            md = cJSON_AddObjectToObject(svc, "metadata");
        labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
        if (!labels)
            labels = cJSON_AddObjectToObject(md, "labels");
        if (!*rs_str(md, "name"))
            put(md, "name", name);
        put(md, "namespace", rs_str(rs, "metadata.namespace"));
        if (!cJSON_GetObjectItemCaseSensitive(md, "annotations"))
            cJSON_AddObjectToObject(md, "annotations");
        if (!*rs_str(spec, "type") && *type)
            put(spec, "type", type);
    } else {
        if (!(svc = cJSON_CreateObject()))
            goto nomem;
        md = cJSON_AddObjectToObject(svc, "metadata");
        labels = cJSON_AddObjectToObject(md, "labels");
        cJSON_AddStringToObject(md, "name", name);
        cJSON_AddStringToObject(md, "namespace", rs_str(rs, "metadata.namespace"));
        spec = cJSON_AddObjectToObject(svc, "spec");
        cJSON_AddItemToObject(spec, "ports", ports);
        ports = NULL;
        if (*type)
            cJSON_AddStringToObject(spec, "type", type);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(svc, "status");
    cJSON_AddStringToObject(svc, "apiVersion", "v1");
    cJSON_AddStringToObject(svc, "kind", "Service");
    put(labels, RC_LABEL_ORIGINATED_CR_NAME, base);
    put(labels, RC_LABEL_ORIGINATED_CRD, "RayService");
    put(labels, RC_LABEL_SERVE, lab);
    put(labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);   /* what rayop's watcher caches */
    sel = cJSON_CreateObject();
    cJSON_AddStringToObject(sel, RC_LABEL_CLUSTER, rs_str(cluster, "metadata.name"));
    cJSON_AddStringToObject(sel, RC_LABEL_SERVE, "true");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "selector");
    cJSON_AddItemToObject(spec, "selector", sel);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
    if (per_cluster) {
        /* owned by its RayCluster: it goes with the cluster */
        cJSON_AddItemToObject(md, "ownerReferences",
                              kobj_controller_refs("ray.io/v1", "RayCluster", cluster));
    } else {
        cJSON_AddItemToObject(md, "ownerReferences", owner_refs(rs));
    }
    cJSON_Delete(ports);
    return svc;
nomem:
    cJSON_Delete(ports);
    cJSON_Delete(svc);
    if (err)
        *err = -ENOMEM;
    return NULL;
}

/* apiVersion, kind and metadata of the Gateway API object KIND named
 * RAYSERVICE-SUFFIX that rs owns; returns its new, empty spec. */
static cJSON *gateway_api_object(cJSON *o, const cJSON *rs, const char *kind, const char *suffix)
{
    char name[300];
    cJSON *md;
    snprintf(name, sizeof(name), "%s-%s", rs_str(rs, "metadata.name"), suffix);
    cJSON_AddStringToObject(o, "apiVersion", "gateway.networking.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", kind);
    md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", rs_str(rs, "metadata.namespace"));
    cJSON_AddItemToObject(md, "ownerReferences", owner_refs(rs));
    return cJSON_AddObjectToObject(o, "spec");
}

cJSON *rs_build_gateway(const cJSON *rs, int *err)
{
    cJSON *gw = cJSON_CreateObject(), *spec, *ls, *l;
    if (!gw) {
        if (err)
            *err = -ENOMEM;
        return NULL;
    }
    spec = gateway_api_object(gw, rs, "Gateway", "gateway");
    cJSON_AddStringToObject(spec, "gatewayClassName",
                            rs_str(rs, "spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName"));
    ls = cJSON_AddArrayToObject(spec, "listeners");
    l = cJSON_CreateObject();
    cJSON_AddItemToArray(ls, l);
    cJSON_AddStringToObject(l, "name", "http");
    cJSON_AddStringToObject(l, "protocol", "HTTP");
    cJSON_AddNumberToObject(l, "port", 80);
    return gw;
}

static void backend(cJSON *refs, const cJSON *rs, const cJSON *cluster, int weight)
{
    char name[300];
    cJSON *b = cJSON_CreateObject();
    snprintf(name, sizeof(name), "%s-serve-svc", rs_str(cluster, "metadata.name"));
    cJSON_AddStringToObject(b, "group", "");
    cJSON_AddStringToObject(b, "kind", "Service");
    cJSON_AddStringToObject(b, "name", name);
    cJSON_AddStringToObject(b, "namespace", rs_str(rs, "metadata.namespace"));
    cJSON_AddNumberToObject(b, "port", rs_serve_port(cluster));
    cJSON_AddNumberToObject(b, "weight", weight);
    cJSON_AddItemToArray(refs, b);
}

cJSON *rs_build_httproute(const cJSON *rs, const cJSON *active, int active_weight,
                          const cJSON *pending, int pending_weight, int *err)
{
    char gw[300];
    cJSON *r = cJSON_CreateObject(), *spec, *pr, *p, *rules, *rule, *m, *path;
    if (!r || !active) {
        cJSON_Delete(r);
        if (err)
            *err = active ? -ENOMEM : -ENOENT;
        return NULL;
    }
    snprintf(gw, sizeof(gw), "%s-gateway", rs_str(rs, "metadata.name"));
    spec = gateway_api_object(r, rs, "HTTPRoute", "httproute");
    pr = cJSON_AddArrayToObject(spec, "parentRefs");
    p = cJSON_CreateObject();
    cJSON_AddItemToArray(pr, p);
    cJSON_AddStringToObject(p, "group", "gateway.networking.k8s.io");
    cJSON_AddStringToObject(p, "kind", "Gateway");
    cJSON_AddStringToObject(p, "name", gw);
    cJSON_AddStringToObject(p, "namespace", rs_str(rs, "metadata.namespace"));
    rules = cJSON_AddArrayToObject(spec, "rules");
    rule = cJSON_CreateObject();
    cJSON_AddItemToArray(rules, rule);
    m = cJSON_AddArrayToObject(rule, "matches");
    cJSON *mm = cJSON_CreateObject();
    cJSON_AddItemToArray(m, mm);
    path = cJSON_AddObjectToObject(mm, "path");
    cJSON_AddStringToObject(path, "type", "PathPrefix");
    cJSON_AddStringToObject(path, "value", "/");
    cJSON *refs = cJSON_AddArrayToObject(rule, "backendRefs");
    backend(refs, rs, active, active_weight);
    if (pending)
        backend(refs, rs, pending, pending_weight);
    return r;
}

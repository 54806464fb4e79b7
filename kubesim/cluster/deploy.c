/*
 * deploy.c - the Deployment and ReplicaSet controllers, reduced to what an operator's own
 * Deployment needs: a Deployment owns one ReplicaSet per Pod template (named by the
 * template's hash, label pod-template-hash), the current one scaled to spec.replicas and
 * the older ones to 0 (both strategies end there; no surge/unavailable pacing); a
 * ReplicaSet keeps spec.replicas Pods it controls, creating or deleting (not-ready and
 * newest first). Status: replicas, ready/available/updated counts, observedGeneration and
 * the Available condition. Level-triggered: events mark owners dirty and
 * cluster__deploy_sync() recomputes each from the store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "util/util.h"

#define MANAGER "deployment-controller"

static void mark(char ***set, size_t *n, size_t *cap, const char *ns, const char *name)
{
    char key[400];

    snprintf(key, sizeof(key), "%s/%s", ns, name);
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*set)[i], key))
            return;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char **ns2 = realloc(*set, nc * sizeof(*ns2));
        if (!ns2)
            return;
        *set = ns2;
        *cap = nc;
    }
    if (((*set)[*n] = strdup(key)))
        (*n)++;
}

void cluster__deploy_event(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    const cJSON *ref;

    (void)type;
    if (o->res == c->r_deploy) {
        mark(&c->deploy_dirty, &c->ndeploy_dirty, &c->capdeploy_dirty, o->ns, o->name);
    } else if (o->res == c->r_rs) {
        mark(&c->rs_dirty, &c->nrs_dirty, &c->caprs_dirty, o->ns, o->name);
        if ((ref = cluster__controller_ref(store_obj_json(o), "apps/", "Deployment")))
            mark(&c->deploy_dirty, &c->ndeploy_dirty, &c->capdeploy_dirty, o->ns,
                 kobj_str(ref, "name"));
    } else if (o->res == c->r_pods) {
        /* the Pod record holds its controller (pods.c): no parse for the Pods of others */
        const struct cl_pod *p = cluster__pod_rec(c, o);
        if (p && p->v.ctl == CL_CTL_RS)
            mark(&c->rs_dirty, &c->nrs_dirty, &c->caprs_dirty, o->ns, p->v.ctl_name);
        else if (!p && (ref = cluster__controller_ref(store_obj_json(o), "apps/", "ReplicaSet")))
            mark(&c->rs_dirty, &c->nrs_dirty, &c->caprs_dirty, o->ns, kobj_str(ref, "name"));
    }
}

static struct store_obj *get(struct cluster *c, const struct reg_resource *r, const char *key)
{
    char ns[300];
    const char *slash = strchr(key, '/');
    struct store_obj *o = NULL;
    struct store_status st = { 0 };

    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return NULL;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    if (store_get(c->store, r, ns, slash + 1, &o, &st) < 0)
        o = NULL;
    store_status_clear(&st);
    return o;
}

/* Objects of r in ns whose controller reference is uid. */
static int owned(struct cluster *c, const struct reg_resource *r, const char *ns, const char *uid,
                 struct store_list *out)
{
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };
    size_t k = 0;

    if (store_list(c->store, r, ns, &lo, out, &st) < 0) {
        store_status_clear(&st);
        return -EIO;
    }
    for (size_t i = 0; i < out->n; i++) {
        const char *cu = kobj_controller_uid(store_obj_json(out->items[i]));
        if (cu && !strcmp(cu, uid))
            out->items[k++] = out->items[i];
        else
            store_obj_unref(out->items[i]);
    }
    out->n = k;
    return 0;
}

static bool terminating(const cJSON *o)
{
    return kobj_get(kobj_get(o, "metadata"), "deletionTimestamp") != NULL;
}

static void owner_ref(cJSON *md, const char *api, const char *kind, const struct store_obj *o)
{
    cJSON *refs = cJSON_AddArrayToObject(md, "ownerReferences"), *ref = cJSON_CreateObject();
    cJSON_AddStringToObject(ref, "apiVersion", api);
    cJSON_AddStringToObject(ref, "kind", kind);
    cJSON_AddStringToObject(ref, "name", o->name);
    cJSON_AddStringToObject(ref, "uid", o->uid);
    cJSON_AddBoolToObject(ref, "controller", true);
    cJSON_AddBoolToObject(ref, "blockOwnerDeletion", true);
    cJSON_AddItemToArray(refs, ref);
}

static void status_patch(struct cluster *c, const struct reg_resource *r, const struct store_obj *o,
                         cJSON *status)
{
    cJSON *body = cJSON_CreateObject();
    struct store_write_opts w = { .field_manager = MANAGER };
    struct store_status st = { 0 };
    char *txt;

    cJSON_AddItemToObject(body, "status", status);
    txt = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (txt && store_patch(c->store, r, o->ns, o->name, "status", PATCH_MERGE, txt, strlen(txt),
                           &w, NULL, NULL, &st) < 0 && st.code != 404)
        log_warn("cluster: status write failed", "object", o->name, "error", st.message, NULL);
    store_status_clear(&st);
    free(txt);
}

static void rs_sync(struct cluster *c, const char *key)
{
    struct store_obj *rs = get(c, c->r_rs, key);
    struct store_list pods = { 0 };
    const cJSON *spec;
    long want, active = 0, ready = 0;
    cJSON *status;

    if (!rs)
        return;
    spec = kobj_get(store_obj_json(rs), "spec");
    want = cJSON_IsNumber(kobj_get(spec, "replicas")) ? (long)kobj_get(spec, "replicas")->valuedouble : 1;
    if (terminating(store_obj_json(rs)) || owned(c, c->r_pods, rs->ns, rs->uid, &pods) < 0)
        goto out;
    for (size_t i = 0; i < pods.n; i++)
        if (!terminating(store_obj_json(pods.items[i]))) {
            active++;
            ready += cluster__pod_ready(store_obj_json(pods.items[i]));
        }
    for (long n = active; n < want; n++) {
        const cJSON *tmpl = kobj_get(spec, "template");
        cJSON *pod = cJSON_CreateObject(), *md;
        struct store_write_opts w = { .field_manager = "replicaset-controller" };
        struct store_status st = { 0 };
        struct store_obj *out = NULL;
        char gen[300], msg[600];
        cJSON_AddStringToObject(pod, "apiVersion", "v1");
        cJSON_AddStringToObject(pod, "kind", "Pod");
        md = cJSON_AddObjectToObject(pod, "metadata");
        snprintf(gen, sizeof(gen), "%.*s-", 57, rs->name);
        cJSON_AddStringToObject(md, "generateName", gen);
        cJSON_AddStringToObject(md, "namespace", rs->ns);
        if (kobj_get(kobj_get(tmpl, "metadata"), "labels"))
            cJSON_AddItemToObject(md, "labels", cJSON_Duplicate(kobj_get(kobj_get(tmpl, "metadata"), "labels"), true));
        if (kobj_get(kobj_get(tmpl, "metadata"), "annotations"))
            cJSON_AddItemToObject(md, "annotations", cJSON_Duplicate(kobj_get(kobj_get(tmpl, "metadata"), "annotations"), true));
        owner_ref(md, "apps/v1", "ReplicaSet", rs);
        cJSON_AddItemToObject(pod, "spec", kobj_get(tmpl, "spec") ? cJSON_Duplicate(kobj_get(tmpl, "spec"), true)
                                                                 : cJSON_CreateObject());
        if (store_create(c->store, c->r_pods, rs->ns, pod, &w, &out, &st) == 0) {
            snprintf(msg, sizeof(msg), "Created pod: %s", out->name);
            cluster__event(c, store_obj_json(rs), "Normal", "SuccessfulCreate", msg, "replicaset-controller", NULL, NULL);
            active++;
        } else {
            snprintf(msg, sizeof(msg), "Error creating: %.500s", st.message);
            cluster__event(c, store_obj_json(rs), "Warning", "FailedCreate", msg, "replicaset-controller", NULL, NULL);
        }
        store_obj_unref(out);
        store_status_clear(&st);
    }
    /* scale down: not-ready Pods first, then the newest */
    for (int pass = 0; pass < 2 && active > want; pass++)
        for (size_t i = pods.n; i-- > 0 && active > want;) {
            const cJSON *p = store_obj_json(pods.items[i]);
            struct store_delete_opts dopt = { .grace_seconds = -1, .precondition_uid = pods.items[i]->uid };
            struct store_status st = { 0 };
            char msg[600];
            if (terminating(p) || (pass == 0 && cluster__pod_ready(p)))
                continue;
            if (store_delete(c->store, c->r_pods, pods.items[i]->ns, pods.items[i]->name, &dopt,
                             NULL, NULL, &st) == 0) {
                snprintf(msg, sizeof(msg), "Deleted pod: %s", pods.items[i]->name);
                cluster__event(c, store_obj_json(rs), "Normal", "SuccessfulDelete", msg, "replicaset-controller", NULL, NULL);
                active--;
                if (cluster__pod_ready(p))
                    ready--;
            }
            store_status_clear(&st);
        }
    status = cJSON_CreateObject();
    cJSON_AddNumberToObject(status, "replicas", (double)active);
    cJSON_AddNumberToObject(status, "fullyLabeledReplicas", (double)active);
    cJSON_AddNumberToObject(status, "readyReplicas", (double)ready);
    cJSON_AddNumberToObject(status, "availableReplicas", (double)ready);
    if (kobj_get(kobj_get(store_obj_json(rs), "metadata"), "generation"))
        cJSON_AddNumberToObject(status, "observedGeneration",
                                kobj_get(kobj_get(store_obj_json(rs), "metadata"), "generation")->valuedouble);
    status_patch(c, c->r_rs, rs, status);
out:
    store_list_free(&pods);
    store_obj_unref(rs);
}

static void deploy_sync(struct cluster *c, const char *key)
{
    struct store_obj *d = get(c, c->r_deploy, key);
    struct store_list rss = { 0 };
    const cJSON *spec, *tmpl;
    char hash[16], name[300], *txt = NULL;
    long want, replicas = 0, ready = 0, updated = 0;
    bool have = false;
    uint32_t h = 2166136261u;
    cJSON *status, *conds, *cd;

    if (!d)
        return;
    spec = kobj_get(store_obj_json(d), "spec");
    tmpl = kobj_get(spec, "template");
    want = cJSON_IsNumber(kobj_get(spec, "replicas")) ? (long)kobj_get(spec, "replicas")->valuedouble : 1;
    if (terminating(store_obj_json(d)) || !(txt = cJSON_PrintUnformatted(tmpl)) ||
        owned(c, c->r_rs, d->ns, d->uid, &rss) < 0)
        goto out;
    for (const char *s = txt; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    snprintf(hash, sizeof(hash), "%08x", h);
    snprintf(name, sizeof(name), "%.*s-%.10s", 240, d->name, hash);
    for (size_t i = 0; i < rss.n; i++) {
        struct store_obj *rs = rss.items[i];
        const cJSON *rst = kobj_get(store_obj_json(rs), "status");
        long cur = (long)cJSON_GetNumberValue(kobj_get(kobj_get(store_obj_json(rs), "spec"), "replicas"));
        long target = strcmp(rs->name, name) ? 0 : want;
        replicas += (long)cJSON_GetNumberValue(kobj_get(rst, "replicas")) > 0 ?
                    (long)cJSON_GetNumberValue(kobj_get(rst, "replicas")) : 0;
        if (!strcmp(rs->name, name)) {
            have = true;
            updated = cJSON_IsNumber(kobj_get(rst, "replicas")) ? (long)kobj_get(rst, "replicas")->valuedouble : 0;
            ready = cJSON_IsNumber(kobj_get(rst, "readyReplicas")) ? (long)kobj_get(rst, "readyReplicas")->valuedouble : 0;
        }
        if (cur != target) {
            char body[64];
            struct store_write_opts w = { .field_manager = MANAGER };
            struct store_status st = { 0 };
            snprintf(body, sizeof(body), "{\"spec\":{\"replicas\":%ld}}", target);
            store_patch(c->store, c->r_rs, rs->ns, rs->name, NULL, PATCH_MERGE, body, strlen(body),
                        &w, NULL, NULL, &st);
            store_status_clear(&st);
        }
    }
    if (!have) {
        cJSON *rs = cJSON_CreateObject(), *md, *rspec, *t, *lb, *sel;
        struct store_write_opts w = { .field_manager = MANAGER };
        struct store_status st = { 0 };
        char msg[600];
        cJSON_AddStringToObject(rs, "apiVersion", "apps/v1");
        cJSON_AddStringToObject(rs, "kind", "ReplicaSet");
        md = cJSON_AddObjectToObject(rs, "metadata");
        cJSON_AddStringToObject(md, "name", name);
        cJSON_AddStringToObject(md, "namespace", d->ns);
        t = cJSON_Duplicate(tmpl, true);
        if (!cJSON_IsObject(kobj_get(t, "metadata")))
            cJSON_AddObjectToObject(t, "metadata");
        lb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "metadata"), "labels");
        if (!lb)
            lb = cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(t, "metadata"), "labels");
        cJSON_AddStringToObject(lb, "pod-template-hash", hash);
        cJSON_AddItemToObject(md, "labels", cJSON_Duplicate(lb, true));
        owner_ref(md, "apps/v1", "Deployment", d);
        rspec = cJSON_AddObjectToObject(rs, "spec");
        cJSON_AddNumberToObject(rspec, "replicas", (double)want);
        sel = cJSON_Duplicate(kobj_get(spec, "selector"), true);
        if (!sel)
            sel = cJSON_CreateObject();
        if (!cJSON_GetObjectItemCaseSensitive(sel, "matchLabels"))
            cJSON_AddObjectToObject(sel, "matchLabels");
        cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(sel, "matchLabels"), "pod-template-hash", hash);
        cJSON_AddItemToObject(rspec, "selector", sel);
        cJSON_AddItemToObject(rspec, "template", t);
        if (store_create(c->store, c->r_rs, d->ns, rs, &w, NULL, &st) == 0) {
            snprintf(msg, sizeof(msg), "Scaled up replica set %s from 0 to %ld", name, want);
            cluster__event(c, store_obj_json(d), "Normal", "ScalingReplicaSet", msg, MANAGER, NULL, NULL);
        }
        store_status_clear(&st);
    }
    status = cJSON_CreateObject();
    if (kobj_get(kobj_get(store_obj_json(d), "metadata"), "generation"))
        cJSON_AddNumberToObject(status, "observedGeneration",
                                kobj_get(kobj_get(store_obj_json(d), "metadata"), "generation")->valuedouble);
    cJSON_AddNumberToObject(status, "replicas", (double)replicas);
    cJSON_AddNumberToObject(status, "updatedReplicas", (double)updated);
    cJSON_AddNumberToObject(status, "readyReplicas", (double)ready);
    cJSON_AddNumberToObject(status, "availableReplicas", (double)ready);
    if (replicas > ready)
        cJSON_AddNumberToObject(status, "unavailableReplicas", (double)(replicas - ready));
    conds = cJSON_AddArrayToObject(status, "conditions");
    cd = cJSON_CreateObject();
    cJSON_AddStringToObject(cd, "type", "Available");
    cJSON_AddStringToObject(cd, "status", ready >= want ? "True" : "False");
    cJSON_AddStringToObject(cd, "reason", ready >= want ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable");
    cJSON_AddStringToObject(cd, "message", ready >= want ? "Deployment has minimum availability."
                                                         : "Deployment does not have minimum availability.");
    cJSON_AddItemToArray(conds, cd);
    status_patch(c, c->r_deploy, d, status);
out:
    free(txt);
    store_list_free(&rss);
    store_obj_unref(d);
}

void cluster__deploy_sync(struct cluster *c)
{
    /* ReplicaSets first: the Deployments' status sums theirs */
    for (size_t i = 0; i < c->nrs_dirty; i++) {
        rs_sync(c, c->rs_dirty[i]);
        free(c->rs_dirty[i]);
    }
    c->nrs_dirty = 0;
    for (size_t i = 0; i < c->ndeploy_dirty; i++) {
        deploy_sync(c, c->deploy_dirty[i]);
        free(c->deploy_dirty[i]);
    }
    c->ndeploy_dirty = 0;
}

void cluster__deploy_free(struct cluster *c)
{
    for (size_t i = 0; i < c->nrs_dirty; i++)
        free(c->rs_dirty[i]);
    for (size_t i = 0; i < c->ndeploy_dirty; i++)
        free(c->deploy_dirty[i]);
    free(c->rs_dirty);
    free(c->deploy_dirty);
    c->rs_dirty = c->deploy_dirty = NULL;
    c->nrs_dirty = c->ndeploy_dirty = 0;
}

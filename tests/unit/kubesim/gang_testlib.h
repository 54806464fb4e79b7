/*
 * gang_testlib.h - a cluster thread without the thread, for the gang step's unit
 * tests (test_cluster_gang.c): a memory store with the batch schedulers' CRDs,
 * nodes, and a commit queue the test drains by hand, so that one session() is
 * exactly one cluster__gang_pass over what the previous writes committed. The tests then
 * read the outcome from the store (nodeName, PodGroup and Queue status, Events) as
 * a client would. Header-only, static functions.
 */
#ifndef RAYOP_TESTS_GANG_TESTLIB_H
#define RAYOP_TESTS_GANG_TESTLIB_H

#include <pthread.h>

#include "kubesim/cluster/internal.h"
#include "store_testlib.h"

/* The CRDs as the gang step needs them: the Volcano PodGroup has no status
 * subresource (Volcano writes status on the object), the Queue and the
 * scheduler-plugins PodGroup have one. */
#define GT_CRD(plural, kind, group, version, scope, sub)                                        \
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","        \
    "\"metadata\":{\"name\":\"" plural "." group "\"},\"spec\":{\"group\":\"" group "\","        \
    "\"names\":{\"plural\":\"" plural "\",\"kind\":\"" kind "\",\"listKind\":\"" kind "List\"},"  \
    "\"scope\":\"" scope "\",\"versions\":[{\"name\":\"" version "\",\"served\":true,"           \
    "\"storage\":true" sub ",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","              \
    "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}"

struct gt_item {
    enum store_event_type type;
    struct store_obj *obj;
};

struct gt {
    struct store *s;
    struct cluster *c;
    const struct reg_resource *pods, *nodes, *events, *vpg, *queues, *sppg, *pc, *waspg;
    const struct reg_resource *rayclusters, *rayjobs;   /* gt_ray_crds */
    const struct reg_resource *cms;
    pthread_mutex_t lock;        /* the store's GC thread may commit too */
    struct gt_item *q;
    size_t qn, qcap;
};

static void gt_commit(void *arg, enum store_event_type type, struct store_obj *obj)
{
    struct gt *t = arg;

    if (!obj)
        return;
    pthread_mutex_lock(&t->lock);
    if (t->qn == t->qcap) {
        size_t nc = t->qcap ? t->qcap * 2 : 256;
        struct gt_item *nq = realloc(t->q, nc * sizeof(*nq));
        if (!nq) {
            pthread_mutex_unlock(&t->lock);
            return;
        }
        t->q = nq;
        t->qcap = nc;
    }
    t->q[t->qn].type = type;
    t->q[t->qn++].obj = store_obj_ref(obj);
    pthread_mutex_unlock(&t->lock);
}

/* What cluster_main does with a batch, for the kinds these tests write. */
static void gt_pump(struct gt *t)
{
    struct cluster *c = t->c;
    struct gt_item *batch;
    size_t n;

    pthread_mutex_lock(&t->lock);
    batch = t->q;
    n = t->qn;
    t->q = NULL;
    t->qn = t->qcap = 0;
    pthread_mutex_unlock(&t->lock);
    for (size_t i = 0; i < n; i++) {
        struct store_obj *o = batch[i].obj;
        if (o->res == t->pods) {
            cluster__pod_event(c, batch[i].type, o);
        } else if (o->res == t->nodes) {
            cluster__node_event(c, batch[i].type, o);
        } else if (c->r_svc && o->res == c->r_svc) {
            cluster__svc_event(c, batch[i].type, o);
        } else if (cluster__gang_resource(o->res) || o->res == t->pc) {
            c->gang_dirty = true;
        }
        store_obj_unref(o);
    }
    free(batch);
}

static void gt_patch(struct gt *t, const struct reg_resource *r, const char *ns, const char *name,
                     const char *sub, const char *body)
{
    struct store_status st = { 0 };

    if (store_patch(t->s, r, ns, name, sub, PATCH_MERGE, body, strlen(body), NULL, NULL, NULL, &st))
        fail_msg("patch %s: %s", name, st.message);
    store_status_clear(&st);
}

static const struct reg_resource *gt_crd(struct store *s, const char *text, const char *g,
                                         const char *v, const char *plural)
{
    const struct reg_resource *crd = tl_res(s, "apiextensions.k8s.io", "v1",
                                            "customresourcedefinitions");
    store_obj_unref(tl_create(s, crd, "", cJSON_Parse(text)));
    return tl_res(s, g, v, plural);
}

/* RayCluster and RayJob, as far as KAI's pod-grouper reads them. */
static void gt_ray_crds(struct gt *t)
{
    t->rayclusters = gt_crd(t->s, GT_CRD("rayclusters", "RayCluster", "ray.io", "v1", "Namespaced",
                                         ",\"subresources\":{\"status\":{}}"),
                            "ray.io", "v1", "rayclusters");
    t->rayjobs = gt_crd(t->s, GT_CRD("rayjobs", "RayJob", "ray.io", "v1", "Namespaced",
                                     ",\"subresources\":{\"status\":{}}"),
                        "ray.io", "v1", "rayjobs");
}

/* nodes nodes of cpu CPUs and 8Gi each, named n1, n2, ... */
static struct gt *gt_new(int nodes, const char *cpu)
{
    struct gt *t = calloc(1, sizeof(*t));

    assert_non_null(t);
    assert_non_null(t->c = calloc(1, sizeof(*t->c)));
    pthread_mutex_init(&t->lock, NULL);
    t->s = tl_open(NULL, 1000);
    t->c->store = t->s;
    t->pods = t->c->r_pods = tl_res(t->s, "", "v1", "pods");
    t->nodes = t->c->r_nodes = tl_res(t->s, "", "v1", "nodes");
    t->events = t->c->r_events = tl_res(t->s, "", "v1", "events");
    t->pc = tl_res(t->s, "scheduling.k8s.io", "v1", "priorityclasses");
    t->waspg = tl_res(t->s, "scheduling.k8s.io", "v1alpha2", "podgroups");
    t->cms = tl_res(t->s, "", "v1", "configmaps");
    t->vpg = gt_crd(t->s, GT_CRD("podgroups", "PodGroup", "scheduling.volcano.sh", "v1beta1",
                                 "Namespaced", ""),
                    "scheduling.volcano.sh", "v1beta1", "podgroups");
    t->queues = gt_crd(t->s, GT_CRD("queues", "Queue", "scheduling.volcano.sh", "v1beta1",
                                    "Cluster", ",\"subresources\":{\"status\":{}}"),
                       "scheduling.volcano.sh", "v1beta1", "queues");
    t->sppg = gt_crd(t->s, GT_CRD("podgroups", "PodGroup", "scheduling.x-k8s.io", "v1alpha1",
                                  "Namespaced", ",\"subresources\":{\"status\":{}}"),
                     "scheduling.x-k8s.io", "v1alpha1", "podgroups");
    assert_int_equal(store_subscribe(t->s, gt_commit, t), 0);
    for (int i = 1; i <= nodes; i++) {
        char name[32], body[256];
        snprintf(name, sizeof(name), "n%d", i);
        store_obj_unref(tl_create(t->s, t->nodes, "", tl_json("{\"metadata\":{\"name\":\"%s\"}}", name)));
        /* status does not survive a create: the kubelet writes it after */
        snprintf(body, sizeof(body), "{\"status\":{\"allocatable\":{\"cpu\":\"%s\","
                 "\"memory\":\"8Gi\",\"pods\":\"110\"}}}", cpu);
        gt_patch(t, t->nodes, "", name, "status", body);
    }
    gt_pump(t);
    return t;
}

static void gt_free(struct gt *t)
{
    struct cl_node *n, *tn;

    gt_pump(t);
    cluster__pods_free(t->c);
    cluster__node_index_free(t->c);
    cluster__gang_free(t->c);
    HASH_ITER(hh, t->c->nodes, n, tn) {
        HASH_DEL(t->c->nodes, n);
        store_obj_unref(n->obj);
        free(n->name);
        free(n);
    }
    for (size_t i = 0; i < t->c->nheap; i++)
        free(t->c->heap[i].key);
    free(t->c->heap);
    store_close(t->s);
    /* commits the close may still have queued */
    for (size_t i = 0; i < t->qn; i++)
        store_obj_unref(t->q[i].obj);
    free(t->q);
    pthread_mutex_destroy(&t->lock);
    free(t->c);
    free(t);
}

/* One scheduling session over everything committed so far. */
static void gt_session(struct gt *t)
{
    gt_pump(t);
    t->c->gang_dirty = true;
    cluster__gang_pass(t->c);
    gt_pump(t);
}

/* A Pod in "default" asking for cpu; meta is extra metadata members (",\"labels\":{..}"). */
static void gt_pod(struct gt *t, const char *name, const char *sched, const char *cpu,
                   const char *meta)
{
    store_obj_unref(tl_create(t->s, t->pods, "default", tl_json(
        "{\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"schedulerName\":\"%s\",\"containers\":"
        "[{\"name\":\"c\",\"image\":\"busybox:1.36\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}",
        name, meta ? meta : "", sched, cpu)));
}

/* n Volcano Pods NAME-0.. of PodGroup group. */
static void gt_volcano_pods(struct gt *t, const char *group, int from, int n, const char *cpu)
{
    char name[128], meta[256];

    snprintf(meta, sizeof(meta), ",\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}", group);
    for (int i = from; i < from + n; i++) {
        snprintf(name, sizeof(name), "%s-%d", group, i);
        gt_pod(t, name, "volcano", cpu, meta);
    }
}

/* A Volcano PodGroup; spec_extra is extra spec members (",\"queue\":\"q\""). */
static void gt_volcano_pg(struct gt *t, const char *name, int min, const char *spec_extra)
{
    store_obj_unref(tl_create(t->s, t->vpg, "default", tl_json(
        "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"minMember\":%d%s}}",
        name, min, spec_extra ? spec_extra : "")));
}

static void gt_delete(struct gt *t, const struct reg_resource *r, const char *ns, const char *name)
{
    struct store_delete_opts o = { .grace_seconds = 0 };
    struct store_status st = { 0 };
    bool gone = false;

    if (store_delete(t->s, r, ns, name, &o, NULL, &gone, &st))
        fail_msg("delete %s: %s", name, st.message);
    store_status_clear(&st);
}

/* The stored object (a copy the caller deletes), or NULL when it is not there. */
static cJSON *gt_get(struct gt *t, const struct reg_resource *r, const char *ns, const char *name)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    cJSON *j = NULL;

    if (store_get(t->s, r, ns, name, &o, &st) == 0) {
        j = cJSON_Duplicate(store_obj_json(o), 1);
        store_obj_unref(o);
    }
    store_status_clear(&st);
    return j;
}

/* A Volcano Queue of weight w (Open: the gang step treats an empty state so). */
static void gt_queue(struct gt *t, const char *name, int w)
{
    store_obj_unref(tl_create(t->s, t->queues, "", tl_json(
        "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"weight\":%d}}", name, w)));
}

/* The scheduler's configuration as Volcano's chart installs it, with these actions. */
static void gt_volcano_conf(struct gt *t, const char *actions)
{
    const struct reg_resource *nsr = tl_res(t->s, "", "v1", "namespaces");
    cJSON *have = gt_get(t, nsr, "", "volcano-system");

    if (!have)
        store_obj_unref(tl_create(t->s, nsr, "", tl_json("{\"metadata\":{\"name\":\"volcano-system\"}}")));
    cJSON_Delete(have);
    store_obj_unref(tl_create(t->s, t->cms, "volcano-system", tl_json(
        "{\"metadata\":{\"name\":\"volcano-scheduler-configmap\"},\"data\":"
        "{\"volcano-scheduler.conf\":\"actions: \\\"%s\\\"\\ntiers:\\n- plugins:\\n"
        "  - name: priority\\n  - name: gang\\n\"}}", actions)));
}

/* The Pods NAME-from .. NAME-(from+n-1) run (the kubelet's phase). */
static void gt_running(struct gt *t, const char *prefix, int from, int n)
{
    char name[128];

    for (int i = from; i < from + n; i++) {
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        gt_patch(t, t->pods, "default", name, "status", "{\"status\":{\"phase\":\"Running\"}}");
    }
}

/* How many of the Pods NAME-from .. NAME-(from+n-1) are being deleted. */
static int gt_deleting(struct gt *t, const char *prefix, int from, int n)
{
    char name[128];
    int k = 0;

    for (int i = from; i < from + n; i++) {
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        cJSON *p = gt_get(t, t->pods, "default", name);
        k += p && tl_str(p, "metadata.deletionTimestamp") != NULL;
        cJSON_Delete(p);
    }
    return k;
}

/* How many of the Pods NAME-from .. NAME-(from+n-1) have a node. */
static int gt_bound(struct gt *t, const char *prefix, int from, int n)
{
    char name[128];
    int k = 0;

    for (int i = from; i < from + n; i++) {
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        cJSON *p = gt_get(t, t->pods, "default", name);
        const char *node = tl_str(p, "spec.nodeName");
        k += node && *node;
        cJSON_Delete(p);
    }
    return k;
}

/* The value at path of an object, copied into out ("" when absent). */
static const char *gt_field(struct gt *t, const struct reg_resource *r, const char *ns,
                            const char *name, const char *path, char *out, size_t cap)
{
    cJSON *o = gt_get(t, r, ns, name);
    const char *v = tl_str(o, path);

    snprintf(out, cap, "%s", v ? v : "");
    cJSON_Delete(o);
    return out;
}

/* The condition of type in a status.conditions list (a copy), or NULL. */
static cJSON *gt_cond(struct gt *t, const struct reg_resource *r, const char *name, const char *type)
{
    cJSON *o = gt_get(t, r, "default", name), *e, *found = NULL;

    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(o, "status"), "conditions")) {
        const char *ty = tl_str(e, "type");
        if (ty && !strcmp(ty, type))
            found = cJSON_Duplicate(e, 1);
    }
    cJSON_Delete(o);
    return found;
}

/* Events about object name (in ns) with this reason whose message holds text; with
 * source non-NULL, from that component only. */
static int gt_events(struct gt *t, const char *ns, const char *name, const char *reason,
                     const char *text, const char *source)
{
    struct store_list l = { 0 };
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };
    int k = 0;

    assert_int_equal(store_list(t->s, t->events, ns, &lo, &l, &st), 0);
    for (size_t i = 0; i < l.n; i++) {
        const cJSON *e = store_obj_json(l.items[i]);
        const char *io = tl_str(e, "involvedObject.name"), *re = tl_str(e, "reason");
        const char *msg = tl_str(e, "message"), *src = tl_str(e, "source.component");
        if (io && !strcmp(io, name) && (!reason || (re && !strcmp(re, reason))) &&
            (!text || (msg && strstr(msg, text))) && (!source || (src && !strcmp(src, source))))
            k++;
    }
    store_list_free(&l);
    store_status_clear(&st);
    return k;
}

#endif

/*
 * reconcile_pods.c - KubeRay v1.7's reconcilePods: suspension (delete every
 * Pod, then stop), the Recreate upgrade strategy (delete every Pod when the
 * head's spec hash differs), the head Pod (recreated when it is gone or
 * terminated for good), and per worker group: group suspension, unhealthy Pods
 * deleted first, scaleStrategy.workersToDelete, then scale up or down to the
 * desired replicas (single-host with replica indices, multi-host as whole
 * replicas of numOfHosts Pods).
 *
 * Counting comes from the cache, whose read-your-writes gate means this
 * worker's own earlier creates and deletes are in it. One window is left: a
 * controller killed after creating Pods but before reporting them leaves writes
 * the queue never heard of, and the next reconcile may read a cache without
 * them. So before creating, the count is confirmed against one live LIST of
 * the cluster's Pods (made at most once per reconcile); if the API server
 * disagrees with the cache the reconcile creates nothing and retries once the
 * cache has caught up. Converged clusters
 * never pay for it (no creates, no LIST).
 *
 * Each create is preceded by one live GET of the RayCluster itself: the cache
 * can be behind on the cluster as well as on its Pods, and a cluster can go
 * while a reconcile creates a group's Pods one by one (the chaos soak saw five
 * workers created in the 90 ms after their cluster's deletion when the check
 * was made once per reconcile). A cluster already deleted
 * (or deleted and recreated under a new uid) gets no Pods at all (they would be
 * orphans the garbage collector removes) and the reconcile ends quietly, the
 * deletion's watch event is on its way; a newer generation or a deletion in
 * progress means the cached spec is stale (scaled 2 -> 1 while the cache still
 * says 2), so nothing is created until the cache has the spec the API has.
 *
 * The window of the Pod LIST belongs to writes made before this process
 * started, so it closes for good: the latest LIST's resourceVersion is a fence,
 * and once the cache's Pods have caught up with it (host_cache_seen) every
 * earlier write is in the cache and later ones are this process's own, which
 * the read-your-writes gate covers, for as long as the watcher connection lasts
 * (a restarted watcher's gate does not know them: the fence starts over on the
 * next connection) and as long as the cache has this process's own newest Pod
 * write for the cluster (a read-your-writes wait that expired hands a key out before
 * it does: the count is then a LIST again). From then on no reconcile lists Pods
 * (before, a burst of new clusters cost one LIST each); the GET of the cluster
 * stays, as the cluster's spec can change under the cache at any time.
 *
 * What is left between that GET and the create's commit is one request's time:
 * the create's rate-limit token is taken before the GET (host_ticket_take), so
 * a create waiting at the QPS bound waits before it reads, and creates are made
 * in one attempt (host_create_once), as a create the client
 * retried after a 429 or a refused connection would commit after a wait the GET
 * does not cover. A create sent without an answer (a reset) may exist: the fence
 * starts over, so the next count is a live LIST.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <uthash.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/batchsched.h"
#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

/* A borrowed view of some Pods of r->pods. */
struct podv {
    const cJSON **p;
    int n;
    size_t cap;
};

static int podv_push(struct podv *v, const cJSON *pod)
{
    if (util_array_grow(&v->p, sizeof(*v->p), (size_t)v->n, &v->cap, 16) < 0)
        return -ENOMEM;
    v->p[v->n++] = pod;
    return 0;
}

static void podv_free(struct podv *v)
{
    free(v->p);
    memset(v, 0, sizeof(*v));
}

/* Pods of r->pods whose label key equals value (and node-type, when given). */
static int pods_where(const cJSON *pods, const char *key, const char *value,
                      const char *node_type, struct podv *out)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        const char *v = kobj_label(p, key), *t = kobj_label(p, RC_LABEL_NODE_TYPE);
        if (!v || strcmp(v, value) != 0)
            continue;
        if (node_type && (!t || strcmp(t, node_type) != 0))
            continue;
        if (podv_push(out, p) < 0)
            return -ENOMEM;
    }
    return 0;
}

bool raycluster__pod_terminating(const cJSON *pod)
{
    return *rc_meta(pod, "deletionTimestamp") != '\0';
}

/* getRayContainerStateTerminated: the Ray container (containers[0]) status by name. */
static const cJSON *ray_container_terminated(const cJSON *pod)
{
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"), RC_RAY_CONTAINER);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(c0, "name");
    const cJSON *cs;
    if (!cJSON_IsString(n))
        return NULL;
    cJSON_ArrayForEach(cs, cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(pod, "status"), "containerStatuses")) {
        const cJSON *cn = cJSON_GetObjectItemCaseSensitive(cs, "name");
        if (cJSON_IsString(cn) && strcmp(cn->valuestring, n->valuestring) == 0)
            return cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(cs, "state"), "terminated");
    }
    return NULL;
}

/* shouldDeletePod: terminal phase, or Running with the Ray container
 * terminated and restartPolicy Never (kubelet will not restart it). */
static bool should_delete_pod(const cJSON *pod, const char *node_type, char *why, size_t cap)
{
    const char *phase = rc_pod_phase(pod), *name = rc_meta(pod, "name");
    if (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0) {
        snprintf(why, cap, "The %s Pod %s status is %s which is a terminal state. KubeRay will "
                 "delete the Pod and create new Pods in the next reconciliation if necessary.",
                 node_type, name, phase);
        return true;
    }
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "spec"), "restartPolicy");
    if (strcmp(phase, "Running") == 0 && ray_container_terminated(pod) && cJSON_IsString(rp) &&
        strcmp(rp->valuestring, "Never") == 0) {
        snprintf(why, cap, "The Pod status of the %s Pod %s is Running, and the Ray container "
                 "terminated. The container is unable to restart due to its restart policy "
                 "Never, so KubeRay will delete it.", node_type, name);
        return true;
    }
    return false;
}

/* One Pod delete; NotFound is success (already gone). */
/* The newest Pod write (create or delete) of each cluster this process wrote Pods
 * for: its resourceVersion, per "ns/name" key. Bounded: past OWN_WRITES_MAX keys the
 * oldest entry goes (its cluster's writes are long in the cache by then). */
#define OWN_WRITES_MAX 4096
struct own_write {
    UT_hash_handle hh;
    char rv[IPC_RV_MAX];
    char key[];
};
static struct {
    pthread_mutex_t mu;
    struct own_write *by_key;
} own_writes = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void own_write_note(struct rc_run *r, const char *rv)
{
    char key[IPC_KEY_MAX];
    struct own_write *w;
    if (!rv || !*rv || strlen(rv) >= IPC_RV_MAX)
        return;
    snprintf(key, sizeof(key), "%s/%s", r->ns, r->name);
    pthread_mutex_lock(&own_writes.mu);
    HASH_FIND_STR(own_writes.by_key, key, w);
    if (w) {
        HASH_DEL(own_writes.by_key, w);   /* re-added below: the table stays in write order */
    } else if ((w = calloc(1, sizeof(*w) + strlen(key) + 1))) {
        memcpy(w->key, key, strlen(key) + 1);
    }
    if (w) {
        if (!w->rv[0] || kobj_rv_cmp(rv, w->rv) > 0)
            memcpy(w->rv, rv, strlen(rv) + 1);
        HASH_ADD_STR(own_writes.by_key, key, w);
        if (HASH_COUNT(own_writes.by_key) > OWN_WRITES_MAX) {
            struct own_write *old = own_writes.by_key;
            HASH_DEL(own_writes.by_key, old);
            free(old);
        }
    }
    pthread_mutex_unlock(&own_writes.mu);
}

/* true when the cache has this process's own Pod writes for this cluster. The
 * read-your-writes gate makes that so before a key comes back, unless its wait
 * expired (5 s: the API server was restarting, the watch down): the key is then
 * handed out anyway, and a count from the cache would miss the Pod we just created
 * (the chaos soak saw a third worker for two that way, after a kubesim restart).
 * Then the count is a LIST again. Per cluster, so that with several workers one
 * cluster's fresh writes do not send the others to the API server. */
static bool own_writes_seen(struct rc_run *r)
{
    char key[IPC_KEY_MAX], rv[IPC_RV_MAX] = "";
    struct own_write *w;
    snprintf(key, sizeof(key), "%s/%s", r->ns, r->name);
    pthread_mutex_lock(&own_writes.mu);
    HASH_FIND_STR(own_writes.by_key, key, w);
    if (w)
        memcpy(rv, w->rv, sizeof(rv));
    pthread_mutex_unlock(&own_writes.mu);
    if (!rv[0] || host_cache_seen(r->ctx, "v1/pods", rv) == 1)
        return true;
    host_log(r->ctx, LOG_INFO, "the cache is behind this process's own Pod writes; confirming "
             "with a LIST", "resourceVersion", rv, NULL);
    return false;
}

static int delete_pod(struct rc_run *r, const char *name)
{
    struct kube_result kr = { 0 };
    int rc = host_delete(r->ctx, &KUBE_RES_PODS, r->ns, name, NULL, &kr);
    if (rc == 0)
        own_write_note(r, kr.resource_version);
    kube_result_release(&kr);
    return rc == -ENOENT ? 0 : rc;
}

static int raycluster__delete_pods(struct rc_run *r, const cJSON *pods, enum rc_err e)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        if (raycluster__pod_terminating(p))
            continue;
        int rc = delete_pod(r, rc_meta(p, "name"));
        if (rc < 0)
            return raycluster__fail(r, e, "deleting Pod %s: %s", rc_meta(p, "name"), kube_strerror(rc));
    }
    return 0;
}

static int delete_podv(struct rc_run *r, const struct podv *v, const char *group,
                       const char *reason)
{
    for (int i = 0; i < v->n; i++) {
        const char *name = rc_meta(v->p[i], "name");
        if (raycluster__pod_terminating(v->p[i]))
            continue;
        int rc = delete_pod(r, name);
        if (rc < 0) {
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToDeleteWorkerPod", "Delete",
                       "Failed deleting worker Pod %s/%s for group %s, %s", r->ns, name, group,
                       kube_strerror(rc));
            return raycluster__fail(r, RC_ERR_DELETE_WORKER, "deleting worker Pod %s: %s", name,
                                    kube_strerror(rc));
        }
        host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "DeletedWorkerPod", "Delete",
                   "Deleted worker Pod %s/%s for group %s: %s", r->ns, name, group, reason);
    }
    return 0;
}

/* The process-wide fence (file comment): "" until the first confirming LIST on the
 * current watcher connection. */
static struct {
    pthread_mutex_t mu;
    char rv[IPC_RV_MAX];
    bool passed;
    uint64_t gen;       /* the watcher connection it belongs to */
} fence = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* true once the cache holds every Pod written before this process (or this watcher
 * connection) started. A restarted watcher resumes from the rv it last applied and
 * does not know the writes this process made since, so its read-your-writes gate
 * does not cover them: a key that came on a newer connection starts the fence over
 * (the chaos soak saw a whole second set of Pods created without that). */
static bool fence_passed(struct rc_run *r)
{
    char rv[IPC_RV_MAX];
    uint64_t gen = r->ctx->conn_gen;
    pthread_mutex_lock(&fence.mu);
    if (gen > fence.gen) {
        fence.gen = gen;
        fence.rv[0] = '\0';
        fence.passed = false;
    }
    bool passed = fence.passed && gen == fence.gen;
    bool mine = gen == fence.gen;
    memcpy(rv, fence.rv, sizeof(rv));
    pthread_mutex_unlock(&fence.mu);
    if (passed || !mine || !rv[0])
        return passed;
    if (host_cache_seen(r->ctx, "v1/pods", rv) != 1)
        return false;
    pthread_mutex_lock(&fence.mu);
    passed = fence.gen == gen && strcmp(fence.rv, rv) == 0;   /* not moved up meanwhile */
    if (passed)
        fence.passed = true;
    pthread_mutex_unlock(&fence.mu);
    if (!passed)
        return false;
    host_log(r->ctx, LOG_INFO, "the cache has every Pod written before this watcher "
             "connection; no more confirming LISTs", "resourceVersion", rv, NULL);
    return true;
}

/* Every confirming LIST moves the fence up to its rv, not only the first: a write
 * the previous process had in flight can commit after our first LIST (its request
 * was still on the server when it died), and a LIST that shows it must be waited
 * for too (raycluster_crash.py saw a 25th worker created for 24 without this). */
static void fence_set(uint64_t gen, const char *rv)
{
    if (!rv || !*rv || strlen(rv) >= IPC_RV_MAX)
        return;
    pthread_mutex_lock(&fence.mu);
    if (gen == fence.gen && !fence.passed && (!fence.rv[0] || kobj_rv_cmp(rv, fence.rv) > 0))
        memcpy(fence.rv, rv, strlen(rv) + 1);
    pthread_mutex_unlock(&fence.mu);
}

static void raycluster__pods_fence_reset(void)
{
    pthread_mutex_lock(&fence.mu);
    fence.rv[0] = '\0';
    fence.passed = false;
    fence.gen = 0;
    pthread_mutex_unlock(&fence.mu);
}

static int64_t generation_of(const cJSON *obj)
{
    return raycluster__json_int(kobj_get(obj, "metadata"), "generation", 0);
}

/* The live half of the check in the file comment: 0 when the API server has
 * the cached RayCluster (same uid, same generation, not being deleted),
 * -ENOENT with r->gone set when it has no such cluster, -EAGAIN when the cache
 * is behind, another -errno when the GET failed. */
static int live_cluster(struct rc_run *r, struct kube_client *kc)
{
    struct kube_result kr = { 0 };
    int rc = kube_get(kc, &KUBE_RES_RAYCLUSTERS, r->ns, r->name, &kr);
    if (rc == -ENOENT || (rc == 0 && strcmp(rc_meta(kr.body, "uid"), r->uid) != 0)) {
        r->gone = true;
        rc = -ENOENT;
    } else if (rc == 0 && (generation_of(kr.body) != generation_of(r->rc) ||
                           *rc_meta(kr.body, "deletionTimestamp"))) {
        char a[24], b[24];
        snprintf(a, sizeof(a), "%lld", (long long)generation_of(r->rc));
        snprintf(b, sizeof(b), "%lld", (long long)generation_of(kr.body));
        host_log(r->ctx, LOG_INFO, "cached RayCluster behind the API server; not creating Pods yet",
                 "cachedGeneration", a, "liveGeneration", b, "deleting",
                 *rc_meta(kr.body, "deletionTimestamp") ? "true" : "false", NULL);
        rc = -EAGAIN;
    }
    kube_result_release(&kr);
    return rc;
}

/* The cluster's Pods as the API server has them (one LIST per reconcile, kept
 * in r->live), to confirm the cache's count before creating (file comment).
 * 0 or raycluster__fail(). */
static int live_pods(struct rc_run *r)
{
    if (r->live || r->live_skipped)
        return 0;
    struct kube_client *kc = host_kube(r->ctx);
    if (!kc)
        return -ENOTCONN;
    if (fence_passed(r) && own_writes_seen(r)) {
        r->live_skipped = true;   /* the cache has every Pod the LIST would show */
        return 0;
    }
    char sel[320];
    snprintf(sel, sizeof(sel), "%s=%s", RC_LABEL_CLUSTER, r->name);
    struct kube_list_opts lo = { .label_selector = sel };
    struct kube_result kr = { 0 };
    int rc = kube_list(kc, &KUBE_RES_PODS, r->ns, &lo, &kr);
    if (rc == 0) {
        fence_set(r->ctx->conn_gen, kr.resource_version);
        r->live = cJSON_DetachItemFromObjectCaseSensitive(kr.body, "items");
        if (!cJSON_IsArray(r->live)) {
            cJSON_Delete(r->live);
            r->live = cJSON_CreateArray();
        }
        if (!r->live)
            rc = -ENOMEM;
    }
    kube_result_release(&kr);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "listing the Pods of %s: %s", r->name, kube_strerror(rc));
    return 0;
}

/* 0 when the API server has as many Pods with label key=value as the cache
 * (cached), else the reconcile fails and is retried once the cache caught up. */
static int confirm_count(struct rc_run *r, const char *key, const char *value, int cached)
{
    int rc = live_pods(r);
    if (rc < 0 || !r->live)
        return rc;
    struct podv v = { 0 };
    if ((rc = pods_where(r->live, key, value, NULL, &v)) < 0)
        return rc;
    int live = v.n;
    podv_free(&v);
    if (live != cached) {
        char a[16], b[16];
        snprintf(a, sizeof(a), "%d", cached);
        snprintf(b, sizeof(b), "%d", live);
        host_log(r->ctx, LOG_INFO, "cache behind the API server; not creating Pods yet",
                 "label", key, "value", value, "cached", a, "live", b, NULL);
        return raycluster__fail(r, RC_ERR_OTHER, "the cache has %d Pods with %s=%s, the API server %d; "
                                "waiting for the cache", cached, key, value, live);
    }
    return 0;
}

/* 0 when the API server still has the cluster as cached (file comment), else
 * raycluster__fail(): nothing may be created. */
static int confirm_cluster(struct rc_run *r)
{
    struct kube_client *kc = host_kube(r->ctx);
    int rc = kc ? live_cluster(r, kc) : -ENOTCONN;
    if (rc == -ENOENT)
        return raycluster__fail(r, RC_ERR_OTHER, "RayCluster %s is gone from the API server", r->name);
    if (rc == -EAGAIN)
        return raycluster__fail(r, RC_ERR_OTHER, "the cached spec of %s is older than the API server's; "
                                "waiting for the cache", r->name);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "reading RayCluster %s: %s", r->name, kube_strerror(rc));
    return 0;
}

/* Creates pod; Events as KubeRay's createHeadPod/createWorkerPod. */
static int create_pod(struct rc_run *r, cJSON *pod, bool head)
{
    struct kube_result kr = { 0 };
    struct kube_ticket t = { 0 };
    /* the create's rate-limit token first: at the QPS bound it can take seconds, and
     * the GET below must be the last word before the create, not before that wait */
    int rc = host_ticket_take(r->ctx, &KUBE_RES_PODS, &t);
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "creating a Pod: %s", kube_strerror(rc));
    if ((rc = confirm_cluster(r)) < 0)
        return rc;
    /* one attempt: a create the client retried after a 429 or a refused connection
     * would commit later than the GET above vouches for (the soak saw one commit 158 ms
     * later, after the group was scaled down); the next reconcile reads again instead */
    rc = host_create_once(r->ctx, &KUBE_RES_PODS, r->ns, pod, &t, &kr);
    if (rc < 0 && kr.http_code == 0 && rc != -ECONNREFUSED)
        raycluster__pods_fence_reset();   /* sent, no answer: it may exist; the next count is a LIST */
    if (rc == -EAGAIN || rc == -ECONNREFUSED) {
        /* what the client used to retry: no Warning Event for it */
        host_log(r->ctx, LOG_INFO, "API server busy; the Pod is created after the cluster is "
                 "read again", "error", kube_strerror(rc), NULL);
        kube_result_release(&kr);
        return raycluster__fail(r, head ? RC_ERR_CREATE_HEAD : RC_ERR_CREATE_WORKER,
                                "creating a %s Pod: %s (retried)", head ? "head" : "worker",
                                kube_strerror(rc));
    }
    if (rc < 0) {
        char why[640];
        kube_result_error(&kr, rc, why, sizeof(why));
        if (head)
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateHeadPod", "Create",
                       "Failed to create head Pod %s/%s, %s", r->ns, rc_meta(pod, "name"), why);
        else
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToCreateWorkerPod", "Create",
                       "Failed to create worker Pod for the cluster %s/%s, %s", r->ns, r->name,
                       why);
        kube_result_release(&kr);
        return raycluster__fail(r, head ? RC_ERR_CREATE_HEAD : RC_ERR_CREATE_WORKER,
                                "creating a %s Pod: %s", head ? "head" : "worker", why);
    }
    own_write_note(r, kr.resource_version);
    const char *name = rc_meta(kr.body, "name");
    host_log(r->ctx, LOG_INFO, head ? "Created head Pod for RayCluster"
                                    : "Created worker Pod for RayCluster", "pod", name, NULL);
    host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, head ? "CreatedHeadPod" : "CreatedWorkerPod",
               "Create", "Created %s Pod %s/%s", head ? "head" : "worker", r->ns, name);
    kube_result_release(&kr);
    return 0;
}

static void set_annotation(cJSON *obj, const char *key, const char *value)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "annotations");
    if (!cJSON_IsObject(a)) {
        cJSON_DeleteItemFromObjectCaseSensitive(m, "annotations");
        a = cJSON_AddObjectToObject(m, "annotations");
    }
    if (!a)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(a, key);
    cJSON_AddStringToObject(a, key, value);
}

/* ---- head ---------------------------------------------------------------------- */

static int reconcile_head(struct rc_run *r, const char *hash)
{
    struct podv heads = { 0 };
    char why[512];
    int rc = pods_where(r->pods, RC_LABEL_NODE_TYPE, RC_NODE_HEAD, NULL, &heads);
    if (rc < 0)
        goto out;
    if (heads.n == 1) {
        const cJSON *h = heads.p[0];
        if (!raycluster__pod_terminating(h) && should_delete_pod(h, RC_NODE_HEAD, why, sizeof(why))) {
            const char *name = rc_meta(h, "name");
            host_log(r->ctx, LOG_INFO, "reconcilePods: deleting the head Pod", "pod", name,
                     "reason", why, NULL);
            if ((rc = delete_pod(r, name)) < 0) {
                host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToDeleteHeadPod", "Delete",
                           "Failed deleting head Pod %s/%s; Pod status: %s, %s", r->ns, name,
                           rc_pod_phase(h), kube_strerror(rc));
                rc = raycluster__fail(r, RC_ERR_DELETE_HEAD, "deleting head Pod %s: %s", name,
                                      kube_strerror(rc));
                goto out;
            }
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "DeletedHeadPod", "Delete",
                       "Deleted head Pod %s/%s; Pod status: %s", r->ns, name, rc_pod_phase(h));
            rc = raycluster__fail(r, RC_ERR_OTHER, "%s", why);
        }
    } else if (heads.n == 0) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(r->rc, "status");
        const char *skip = kobj_annotation(r->rc, RC_ANN_DISABLE_HEAD_RESTART);
        if (rc_cond_true(st, "RayClusterProvisioned") && skip && strcmp(skip, "true") == 0) {
            host_log(r->ctx, LOG_INFO, "reconcilePods: Found 0 head Pods for the RayCluster; "
                     "Skipped head recreation due to ray.io/disable-provisioned-head-restart", NULL);
            goto out;
        }
        if ((rc = confirm_count(r, RC_LABEL_NODE_TYPE, RC_NODE_HEAD, 0)) < 0)
            goto out;
        if ((rc = raycluster__tls_secrets_ready(r)) < 0)
            goto out;
        int err = 0;
        cJSON *pod = rc_build_head_pod(r->rc, &r->bo, &err);
        if (!pod) {
            rc = raycluster__fail(r, RC_ERR_CREATE_HEAD, "building the head Pod: %s", strerror(-err));
            goto out;
        }
        set_annotation(pod, RC_ANN_UPGRADE_HASH, hash);
        set_annotation(pod, RC_ANN_KUBERAY_VERSION, RC_KUBERAY_VERSION);
        rc = create_pod(r, pod, true);
        cJSON_Delete(pod);
    } else {
        rc = raycluster__fail(r, RC_ERR_OTHER, "%d head pods found. Please delete extra head pods",
                              heads.n);
    }
out:
    podv_free(&heads);
    return rc;
}

/* shouldRecreatePodsForUpgrade (Recreate only). An operator-version change
 * re-stamps the head instead of recreating. */
static bool should_recreate(struct rc_run *r, const char *hash)
{
    const cJSON *us = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r->rc, "spec"), "upgradeStrategy");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(us, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "Recreate") != 0)
        return false;
    struct podv heads = { 0 };
    bool recreate = false;
    if (pods_where(r->pods, RC_LABEL_NODE_TYPE, RC_NODE_HEAD, NULL, &heads) < 0 || heads.n == 0)
        goto out;
    const cJSON *h = heads.p[0];
    const char *ver = kobj_annotation(h, RC_ANN_KUBERAY_VERSION), *have = kobj_annotation(h, RC_ANN_UPGRADE_HASH);
    if (ver && *ver && strcmp(ver, RC_KUBERAY_VERSION) != 0) {
        char patch[512];
        int n = snprintf(patch, sizeof(patch), "{\"metadata\":{\"annotations\":{\"%s\":\"%s\",\"%s\":\"%s\"}}}",
                         RC_ANN_UPGRADE_HASH, hash, RC_ANN_KUBERAY_VERSION, RC_KUBERAY_VERSION);
        struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
        struct kube_result kr = { 0 };
        if (host_patch(r->ctx, &KUBE_RES_PODS, r->ns, rc_meta(h, "name"), patch, (size_t)n, &po,
                       &kr) < 0)
            host_log(r->ctx, LOG_ERROR, "Failed to update head pod annotations after "
                     "KUBERAY_VERSION change", NULL);
        kube_result_release(&kr);
        goto out;
    }
    recreate = have && *have && strcmp(have, hash) != 0;
out:
    podv_free(&heads);
    return recreate;
}

/* ---- workers ------------------------------------------------------------------- */

static bool random_delete_allowed(const cJSON *rc)
{
    if (!rc_autoscaling_enabled(rc))
        return true;
    const char *e = getenv("ENABLE_RANDOM_POD_DELETE");
    return e && strcasecmp(e, "true") == 0;
}

static bool in_list(const cJSON *arr, const char *name)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, arr)
        if (cJSON_IsString(s) && strcmp(s->valuestring, name) == 0)
            return true;
    return false;
}

static int index_label(const cJSON *pod)
{
    const char *v = kobj_label(pod, RC_LABEL_REPLICA_INDEX);
    char *end;
    if (!v || !*v)
        return -1;
    long i = strtol(v, &end, 10);
    return *end || i < 0 || i > 1000000 ? -1 : (int)i;
}

/* The lowest replica index not in used[0..n) (KubeRay fills gaps first). */
static int next_index(const int *used, int n, int from)
{
    for (int i = from;; i++) {
        bool taken = false;
        for (int j = 0; j < n && !taken; j++)
            taken = used[j] == i;
        if (!taken)
            return i;
    }
}

/* GenerateRayWorkerReplicaGroupName: GROUP-<5 chars of the apimachinery alphabet>. */
static void replica_name(const char *group, char *out, size_t cap)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)(util_now_ns() >> (i * 7));
    char sfx[6];
    for (int i = 0; i < 5; i++)
        sfx[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
    sfx[5] = 0;
    snprintf(out, cap, "%s-%s", group, sfx);
}

static int create_workers(struct rc_run *r, const cJSON *g, const char *group, int cached,
                          int replicas, int hosts, int *used, int nused)
{
    int rc = confirm_count(r, RC_LABEL_GROUP, group, cached);
    int idx = -1;
    if (rc == 0)
        rc = raycluster__tls_secrets_ready(r);
    for (int i = 0; rc == 0 && i < replicas; i++) {
        idx = next_index(used, nused, idx + 1);
        char rname[300];
        if (hosts > 1)
            replica_name(group, rname, sizeof(rname));
        for (int h = 0; rc == 0 && h < hosts; h++) {
            int err = 0;
            cJSON *pod = rc_build_worker_pod(r->rc, g, hosts > 1 ? rname : NULL, idx, h,
                                             &r->bo, &err);
            if (!pod)
                return raycluster__fail(r, RC_ERR_CREATE_WORKER, "building a worker Pod of %s: %s",
                                        group, strerror(-err));
            rc = create_pod(r, pod, false);
            cJSON_Delete(pod);
        }
    }
    return rc;
}

/* Victims of a random scale-down: terminating Pods first (they still count),
 * then Pods not running, then the rest, in cache order. */
static int victim_rank(const cJSON *p)
{
    return raycluster__pod_terminating(p) ? 0 : strcmp(rc_pod_phase(p), "Running") != 0 ? 1 : 2;
}

static int reconcile_single_host(struct rc_run *r, const cJSON *g, const char *group,
                                 struct podv *pods)
{
    char why[512];
    int unhealthy = 0, rc;
    for (int i = 0; i < pods->n; i++) {
        const cJSON *p = pods->p[i];
        if (raycluster__pod_terminating(p) || !should_delete_pod(p, RC_NODE_WORKER, why, sizeof(why)))
            continue;
        unhealthy++;
        struct podv one = { .p = &pods->p[i], .n = 1, .cap = 1 };
        if ((rc = delete_podv(r, &one, group, why)) < 0)
            return rc;
    }
    if (unhealthy)
        return raycluster__fail(r, RC_ERR_OTHER, "delete %d unhealthy worker Pods", unhealthy);

    /* workersToDelete always go, whatever replicas says (the autoscaler's request) */
    const cJSON *wtd = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(g, "scaleStrategy"), "workersToDelete");
    struct podv live = { 0 }, del = { 0 };
    for (int i = 0; i < pods->n; i++) {
        const cJSON *p = pods->p[i];
        bool named = in_list(wtd, rc_meta(p, "name"));
        if ((named ? podv_push(&del, p) : podv_push(&live, p)) < 0) {
            rc = -ENOMEM;
            goto out;
        }
    }
    if ((rc = delete_podv(r, &del, group, "scaleStrategy.workersToDelete")) < 0)
        goto out;
    int desired = (int)rc_worker_desired_replicas(g);
    int diff = desired - live.n;
    if (diff > 0) {
        int *used = calloc((size_t)live.n + 1, sizeof(int)), nused = 0;
        if (!used) {
            rc = -ENOMEM;
            goto out;
        }
        for (int i = 0; i < live.n; i++)
            if (index_label(live.p[i]) >= 0)
                used[nused++] = index_label(live.p[i]);
        host_log(r->ctx, LOG_INFO, "reconcilePods: adding workers", "group", group, NULL);
        rc = create_workers(r, g, group, pods->n, diff, 1, used, nused);
        free(used);
    } else if (diff < 0) {
        if (!random_delete_allowed(r->rc)) {
            host_log(r->ctx, LOG_INFO, "Random Pod deletion is disabled for the cluster. The only "
                     "decision-maker for Pod deletions is Autoscaler.", "group", group, NULL);
            goto out;
        }
        struct podv victims = { 0 };
        for (int rank = 0; rank < 3 && victims.n < -diff; rank++)
            for (int i = 0; i < live.n && victims.n < -diff; i++)
                if (victim_rank(live.p[i]) == rank && podv_push(&victims, live.p[i]) < 0)
                    rc = -ENOMEM;
        if (rc == 0)
            rc = delete_podv(r, &victims, group, "scaling down");
        podv_free(&victims);
    }
out:
    podv_free(&live);
    podv_free(&del);
    return rc;
}

/* reconcileMultiHostWorkerGroup: replicas of numOfHosts Pods sharing
 * ray.io/worker-group-replica-name are created and deleted whole. */
static int reconcile_multi_host(struct rc_run *r, const cJSON *g, const char *group, int hosts,
                                struct podv *pods)
{
    /* replicas by name: names[i] with count */
    int n = pods->n, rc = 0;
    const char **names = calloc((size_t)n + 1, sizeof(*names));
    int *count = calloc((size_t)n + 1, sizeof(int)), *bad = calloc((size_t)n + 1, sizeof(int));
    int *idx = calloc((size_t)n + 1, sizeof(int)), nrep = 0;
    struct podv del = { 0 };
    char why[512];
    if (!names || !count || !bad || !idx) {
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const char *rn = kobj_label(pods->p[i], RC_LABEL_REPLICA_NAME);
        if (!rn)
            continue;
        int j = 0;
        while (j < nrep && strcmp(names[j], rn) != 0)
            j++;
        if (j == nrep) {
            names[nrep] = rn;
            idx[nrep] = index_label(pods->p[i]);
            nrep++;
        }
        count[j]++;
        if (!raycluster__pod_terminating(pods->p[i]) &&
            should_delete_pod(pods->p[i], RC_NODE_WORKER, why, sizeof(why)))
            bad[j] = 1;
    }
    const cJSON *wtd = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(g, "scaleStrategy"), "workersToDelete");
    /* incomplete replicas (a host deleted from outside) go whole, then requeue */
    for (int j = 0; j < nrep; j++) {
        if (count[j] >= hosts)
            continue;
        for (int i = 0; i < n; i++) {
            const char *rn = kobj_label(pods->p[i], RC_LABEL_REPLICA_NAME);
            if (rn && strcmp(rn, names[j]) == 0 && podv_push(&del, pods->p[i]) < 0)
                rc = -ENOMEM;
        }
        if (rc == 0 && (rc = delete_podv(r, &del, group, "cleanup of incomplete multi-host group")) == 0)
            rc = raycluster__fail(r, RC_ERR_OTHER, "cleaned up incomplete replica group %s, requeueing",
                                  names[j]);
        goto out;
    }
    /* unhealthy replicas and those named in workersToDelete go whole */
    bool explicit = false;
    for (int j = 0; j < nrep; j++) {
        bool named = false;
        for (int i = 0; i < n && !named; i++) {
            const char *rn = kobj_label(pods->p[i], RC_LABEL_REPLICA_NAME);
            named = rn && strcmp(rn, names[j]) == 0 && in_list(wtd, rc_meta(pods->p[i], "name"));
        }
        if (!bad[j] && !named)
            continue;
        explicit |= named && !bad[j];
        bad[j] = 1;
        for (int i = 0; i < n; i++) {
            const char *rn = kobj_label(pods->p[i], RC_LABEL_REPLICA_NAME);
            if (rn && strcmp(rn, names[j]) == 0 && podv_push(&del, pods->p[i]) < 0)
                rc = -ENOMEM;
        }
    }
    if (rc == 0 && del.n)
        rc = delete_podv(r, &del, group, explicit ? "autoscaler scale-down request"
                                                  : "unhealthy multi-host replica");
    if (rc < 0)
        goto out;
    if (explicit) {
        rc = raycluster__fail(r, RC_ERR_OTHER, "deleted %d worker Pods based on ScaleStrategy, requeueing",
                              del.n);
        goto out;
    }
    int valid = 0, *used = idx, nused = 0;
    for (int j = 0; j < nrep; j++)
        if (!bad[j]) {
            valid++;
            if (idx[j] >= 0)
                used[nused++] = idx[j];
        }
    int desired_pods = (int)rc_worker_desired_replicas(g);
    if (desired_pods % hosts != 0) {
        rc = raycluster__fail(r, RC_ERR_OTHER, "desired worker pods (%d) is not a multiple of NumOfHosts "
                              "(%d) for group %s", desired_pods, hosts, group);
        goto out;
    }
    int diff = desired_pods / hosts - valid;
    if (diff > 0) {
        rc = create_workers(r, g, group, n, diff, hosts, used, nused);
    } else if (diff < 0 && random_delete_allowed(r->rc)) {
        podv_free(&del);
        for (int j = 0, gone = 0; j < nrep && gone < -diff; j++) {
            if (bad[j])
                continue;
            gone++;
            for (int i = 0; i < n; i++) {
                const char *rn = kobj_label(pods->p[i], RC_LABEL_REPLICA_NAME);
                if (rn && strcmp(rn, names[j]) == 0 && podv_push(&del, pods->p[i]) < 0)
                    rc = -ENOMEM;
            }
        }
        if (rc == 0)
            rc = delete_podv(r, &del, group, "scaling down");
    }
out:
    podv_free(&del);
    free(names);
    free(count);
    free(bad);
    free(idx);
    return rc;
}

static int reconcile_group(struct rc_run *r, const cJSON *g)
{
    const cJSON *gn = cJSON_GetObjectItemCaseSensitive(g, "groupName");
    const char *group = cJSON_IsString(gn) ? gn->valuestring : "";
    struct podv pods = { 0 };
    int rc = pods_where(r->pods, RC_LABEL_GROUP, group, NULL, &pods);
    if (rc < 0)
        goto out;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "suspend"))) {
        int active = 0;
        for (int i = 0; i < pods.n; i++)
            active += !raycluster__pod_terminating(pods.p[i]);
        for (int i = 0; rc == 0 && i < pods.n; i++)
            if (!raycluster__pod_terminating(pods.p[i]) && (rc = delete_pod(r, rc_meta(pods.p[i], "name"))) < 0) {
                host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToDeleteWorkerPodCollection",
                           "Delete", "Failed deleting worker Pods for suspended group %s in "
                           "RayCluster %s/%s, %s", group, r->ns, r->name, kube_strerror(rc));
                rc = raycluster__fail(r, RC_ERR_DELETE_WORKER, "deleting Pods of suspended group %s: %s",
                                      group, kube_strerror(rc));
            }
        if (rc == 0 && active)
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "DeletedWorkerPod", "Delete",
                       "Deleted all pods for suspended worker group %s in RayCluster %s/%s",
                       group, r->ns, r->name);
        goto out;
    }
    const cJSON *nh = cJSON_GetObjectItemCaseSensitive(g, "numOfHosts");
    int hosts = cJSON_IsNumber(nh) && nh->valuedouble >= 1 ? (int)nh->valuedouble : 1;
    rc = hosts > 1 ? reconcile_multi_host(r, g, group, hosts, &pods)
                   : reconcile_single_host(r, g, group, &pods);
out:
    podv_free(&pods);
    return rc;
}

/* Deletes every Pod of the cluster (suspension, Recreate); one Event. */
static int delete_all(struct rc_run *r, const char *why_event)
{
    int active = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, r->pods)
        active += !raycluster__pod_terminating(p);
    if (!active)
        return 0;
    int rc = raycluster__delete_pods(r, r->pods, RC_ERR_DELETE_ALL);
    if (rc < 0) {
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "FailedToDeletePodCollection", "Delete",
                   "Failed deleting Pods %s for RayCluster %s/%s, %s", why_event, r->ns, r->name,
                   r->err_msg);
        return rc;
    }
    host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "DeletedPod", "Delete",
               "Deleted Pods for RayCluster %s/%s %s", r->ns, r->name, why_event);
    return 0;
}

int raycluster__reconcile_pods(struct rc_run *r)
{
    char hash[64] = "";
    int rc = rc_spec_hash(r->rc, hash, sizeof(hash));
    if (rc < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "hashing the spec: %s", strerror(-rc));
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(r->rc, "spec");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(r->rc, "status");
    if (rc_cond_true(st, "RayClusterSuspending"))
        return delete_all(r, "due to suspension");
    if (rc_cond_true(st, "RayClusterSuspended") ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "suspend")))
        return 0;   /* suspended, or about to be (the status sets Suspending first) */
    if (should_recreate(r, hash)) {
        host_log(r->ctx, LOG_INFO, "RayCluster spec changed with Recreate upgradeStrategy, "
                 "deleting all pods", NULL);
        return delete_all(r, "due to spec change with Recreate upgradeStrategy");
    }
    if (r->bo.batch_scheduler) {
        /* DoBatchSchedulingOnSubmission: the gang's PodGroup before its Pods */
        struct batchsched_parent parent = { .obj = r->rc };
        char msg[400];
        if ((rc = batchsched_submit(r->ctx, (enum batchsched_kind)r->bo.batch_scheduler, &parent,
                                    msg, sizeof(msg))) < 0)
            return raycluster__fail(r, RC_ERR_OTHER, "%s", msg[0] ? msg : strerror(-rc));
    }
    if ((rc = reconcile_head(r, hash)) < 0)
        return rc;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs"))
        if ((rc = reconcile_group(r, g)) < 0)
            return rc;
    return 0;
}

/*
 * pods.c - the cluster thread's Pod and Service tables: every Pod event
 * updates the per-node accounting of requests, queues unbound Pods for the
 * scheduler and hands bound ones to the kubelet (kubelet.c); the
 * scheduling pass binds queued Pods or marks them Unschedulable until capacity
 * frees up. Runs on the cluster thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "util/util.h"

static bool pod_terminal(const cJSON *pod)
{
    const char *ph = kobj_str(kobj_get(pod, "status"), "phase");
    return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

static void res_add(struct cluster_res *a, const struct cluster_res *b, int sign)
{
    a->cpu_m += sign * b->cpu_m;
    a->mem += sign * b->mem;
    a->gpu += sign * b->gpu;
    a->tpu += sign * b->tpu;
    a->pods += sign * b->pods;
}

static void unaccount(struct cluster *c, struct cl_pod *p)
{
    struct cl_node *n = cluster__node_find(c, p->acct_node);

    if (n) {
        res_add(&n->used, &p->req, -1);
        cluster__node_index_update(c, n);
    }
    if (p->acct_node)
        c->capacity_changed = true;
    free(p->acct_node);
    p->acct_node = NULL;
}

static void account(struct cluster *c, struct cl_pod *p, const char *node)
{
    struct cl_node *n = cluster__node_find(c, node);

    if (!(p->acct_node = strdup(node)))
        return;
    if (n) {
        res_add(&n->used, &p->req, 1);
        cluster__node_index_update(c, n);
    }
}

static void pending_push(struct cluster *c, struct cl_pod *p)
{
    if (!p->queued && cluster__keys_push(&c->pending, &c->npending, &c->cappending, p->key))
        p->queued = true;
}

const char *cluster__pod_unsched(const struct cl_pod *p)
{
    return p->unsched_msg ? p->unsched_msg : "";
}

void cluster__pod_set_unsched(struct cl_pod *p, const char *msg)
{
    free(p->unsched_msg);
    /* on ENOMEM the Pod has no message: the next pass writes it again */
    p->unsched_msg = msg && msg[0] ? strndup(msg, CL_UNSCHED_MSG_MAX - 1) : NULL;
}

static void view_clear(struct cl_pod *p)
{
    free(p->v.ctl_name);
    free(p->v.ctl_uid);
    cJSON_Delete(p->v.sched);
    memset(&p->v, 0, sizeof(p->v));
}

static void pod_free(struct cl_pod *p)
{
    store_obj_unref(p->obj);
    free(p->unsched_msg);
    free(p->backoff_ev);
    free(p->acct_node);
    free(p->ep.node);
    view_clear(p);
    free(p->key);
    free(p);
}

/* Takes what the endpoints sync needs from pod (the tree p->obj now holds). */
static void ep_fields(struct cl_pod *p, const cJSON *pod)
{
    const cJSON *status = kobj_get(pod, "status");
    const char *ip = kobj_str(status, "podIP"), *node = kobj_str(kobj_get(pod, "spec"), "nodeName");

    free(p->ep.node);
    memset(&p->ep, 0, sizeof(p->ep));
    if ((ip && strlen(ip) >= sizeof(p->ep.ip)) || (node && !(p->ep.node = strdup(node))))
        return;   /* known stays false: the sync parses this Pod */
    snprintf(p->ep.ip, sizeof(p->ep.ip), "%s", ip ? ip : "");
    p->ep.terminating = kobj_get(kobj_get(pod, "metadata"), "deletionTimestamp") != NULL;
    p->ep.ready = cluster__pod_ready(pod);
    p->ep.known = true;
}

/* What the node filters read of a Pod (a copy of the members set, NULL when none is):
 * most Pods set none, and the scheduler then reads no tree. */
static cJSON *sched_spec(const cJSON *spec)
{
    static const char *const keys[] = { "tolerations", "nodeSelector", "affinity" };
    cJSON *out = NULL, *s = NULL;

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *m = kobj_get(spec, keys[i]);
        if (!m)
            continue;
        if (!out && (!(out = cJSON_CreateObject()) || !(s = cJSON_AddObjectToObject(out, "spec"))))
            break;
        cJSON_AddItemToObject(s, keys[i], cJSON_Duplicate(m, true));
    }
    return out;
}

/* Takes the view of p from pod, the tree of a snapshot a client wrote (or the first). */
static void view_take(struct cl_pod *p, const cJSON *pod)
{
    const cJSON *spec = kobj_get(pod, "spec"), *md = kobj_get(pod, "metadata"), *v;
    const cJSON *g = kobj_get(md, "deletionGracePeriodSeconds"), *ref = kobj_controller_ref(pod);
    const char *sched = kobj_str(spec, "schedulerName"), *k = kobj_str(ref, "kind");
    const char *av = kobj_str(ref, "apiVersion");

    view_clear(p);
    p->v.gang = cluster__gang_pod(pod);
    p->v.default_sched = !sched || !sched[0] || !strcmp(sched, "default-scheduler");
    p->v.terminal = pod_terminal(pod);
    p->v.deleting = kobj_get(md, "deletionTimestamp") != NULL;
    p->v.grace_ms = cJSON_IsNumber(g) ? (long)(cJSON_GetNumberValue(g) * 1000) : -1;
    p->v.init = kobj_get(spec, "initContainers") != NULL;
    p->v.job_fin = cluster__job_has_finalizer(pod, TRACKING_FIN);
    cJSON_ArrayForEach(v, kobj_get(spec, "volumes"))
        if (kobj_get(v, "persistentVolumeClaim"))
            p->v.pvc = true;
    p->v.ctl = !ref ? CL_CTL_NONE : CL_CTL_OTHER;
    if (k && av && ((!strcmp(k, "Job") && !strncmp(av, "batch/", 6)) ||
                    (!strcmp(k, "ReplicaSet") && !strncmp(av, "apps/", 5)))) {
        p->v.ctl_name = kobj_str(ref, "name") ? strdup(kobj_str(ref, "name")) : NULL;
        p->v.ctl_uid = kobj_str(ref, "uid") ? strdup(kobj_str(ref, "uid")) : NULL;
        if (p->v.ctl_name && p->v.ctl_uid)
            p->v.ctl = k[0] == 'J' ? CL_CTL_JOB : CL_CTL_RS;
    }
    p->v.sched = sched_spec(spec);
    cluster__kubelet_take(p, pod);
}

/* The endpoints fields after the cluster's own write w, on top of the snapshot before
 * it (the record holds that one's); true when what the endpoints sync reads changed. */
static bool view_own(struct cl_pod *p, const struct cl_own *w)
{
    bool changed;

    if (w->bind) {
        char *n;
        if (p->ep.node && !strcmp(p->ep.node, p->acct_node))
            return false;
        if (!(n = strdup(p->acct_node))) {
            p->ep.known = false;   /* the sync and the kubelet read the tree */
            return true;
        }
        free(p->ep.node);
        p->ep.node = n;
        return true;
    }
    changed = w->ready != p->ep.ready || (w->ip && strcmp(p->ep.ip, p->ip));
    if (w->ip)
        snprintf(p->ep.ip, sizeof(p->ep.ip), "%s", p->ip);
    p->ep.ready = w->ready;
    p->v.terminal = w->terminal;
    return changed;
}

/* The pending own write with o's resourceVersion, taken off the list (with any older
 * one whose event was lost); false when o is not one of them. */
static bool own_take(struct cl_pod *p, const struct store_obj *o, struct cl_own *out)
{
    bool hit = false;

    for (size_t i = 0; i < sizeof(p->own) / sizeof(p->own[0]); i++) {
        if (!p->own[i].rv || p->own[i].rv > o->rv)
            continue;
        if (p->own[i].rv == o->rv) {
            *out = p->own[i];
            hit = true;
        }
        p->own[i].rv = 0;
    }
    return hit;
}

void cluster__pod_own(struct cluster *c, struct cl_pod *p, const struct store_obj *o,
                      uint64_t rv_before, bool bind)
{
    size_t n = sizeof(p->own) / sizeof(p->own[0]), at = 0;
    bool bound = (p->stage != ST_NONE && p->stage != ST_BOUND) || (p->cond[C_SCHED] && p->acct_node);

    /* a gang member's record is read by the gang step from trees; the runtime's Pods
     * are written by the runtime too: both keep parsing every snapshot */
    if (!o || p->v.gang || c->o.runtime || (bind && !p->acct_node) || strcmp(o->uid, p->obj->uid))
        return;
    /* a write that changed nothing hands back the stored snapshot, which may be a client's
     * whose event has not come yet: only a snapshot newer than any before the call is ours */
    if (o->rv <= rv_before)
        return;
    for (size_t i = 0; i < n; i++)
        if (!p->own[i].rv || p->own[i].rv < p->own[at].rv)
            at = i;   /* a free slot, else the oldest (its event then parses) */
    p->own[at] = (struct cl_own){ .rv = o->rv, .bind = bind, .ip = bound && p->ip[0],
                                  .ready = bound && p->cond[C_READY],
                                  .terminal = p->stage == ST_DONE };
}

const struct cl_pod *cluster__pod_rec(struct cluster *c, const struct store_obj *o)
{
    char key[600];
    struct cl_pod *p = NULL;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND_STR(c->pods, key, p);
    return p && p->obj == o ? p : NULL;
}

void cluster__pod_event(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    char key[600];
    struct cl_pod *p = NULL;
    struct cl_own own;
    bool mine = false;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND_STR(c->pods, key, p);
    if (type == EV_DELETED) {
        if (p ? p->v.gang : cluster__gang_pod(store_obj_json(o)))
            c->gang_dirty = c->gang_seen = true;
        cluster__endpoints_pod(c, key, o->ns, NULL);
        store_tree_scope_forget(o);
        if (p) {
            store_tree_scope_forget(p->obj);
            unaccount(c, p);
            HASH_DEL(c->pods, p);
            pod_free(p);
        }
        return;
    }
    if (p && !strcmp(p->obj->uid, o->uid) && o->rv < p->obj->rv)
        return;   /* a replayed snapshot older than what an event brought */
    if (p && strcmp(p->obj->uid, o->uid)) {
        /* deleted and re-created between two looks: a new Pod */
        unaccount(c, p);
        HASH_DEL(c->pods, p);
        pod_free(p);
        p = NULL;
    }
    if (!p) {
        if (!(p = calloc(1, sizeof(*p))) || !(p->key = strdup(key))) {
            free(p);
            return;
        }
        p->epoch = ++c->next_epoch;
        snprintf(p->cid, sizeof(p->cid), "%08x%08lx", c->rng ^ (unsigned)util_now_ns(), p->epoch);
        cluster_pod_requests(store_obj_json(o), &p->req);
        HASH_ADD_KEYPTR(hh, c->pods, p->key, strlen(p->key), p);
    } else {
        mine = p->ep.known && own_take(p, o, &own) && (!own.bind || p->acct_node);
        /* the snapshot before is read no more: its tree would only crowd the scope, whose
         * budget must keep the trees of the Pods the next writes merge into */
        store_tree_scope_forget(p->obj);
        store_obj_unref(p->obj);
    }
    p->obj = store_obj_ref(o);
    if (mine) {
        /* the cluster's own bind or status write: labels, spec and metadata are those
         * of the snapshot before it, so its Services change only when what the sync
         * reads of it does */
        if (view_own(p, &own))
            cluster__endpoints_pod_touch(c, key);
    } else {
        memset(p->own, 0, sizeof(p->own));   /* older own writes are folded in this one */
        view_take(p, store_obj_json(o));
        ep_fields(p, store_obj_json(o));
        cluster__endpoints_pod(c, key, o->ns, o);
    }
    if (p->v.gang)
        c->gang_dirty = c->gang_seen = true;   /* a gang member changed: the gang step looks again */

    /* resources stay taken from binding until the Pod ends */
    {
        const char *node = p->ep.known ? p->ep.node :
                           kobj_str(kobj_get(store_obj_json(o), "spec"), "nodeName");
        const char *want = node && node[0] && !p->v.terminal ? node : NULL;
        if (!want || !p->acct_node || strcmp(want, p->acct_node)) {
            if (p->acct_node)
                unaccount(c, p);
            if (want)
                account(c, p, want);
        }
        if ((!node || !node[0]) && !p->v.terminal && !p->unsched && p->v.default_sched &&
            !p->v.gang && !p->v.deleting)
            pending_push(c, p);
    }
    cluster__kubelet_pod(c, p);
}

void cluster__svc_event(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    char key[600];
    struct cl_svc *s = NULL;

    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND_STR(c->svcs, key, s);
    if (type == EV_DELETED) {
        cluster__endpoints_drop(c, o->ns, o->name);
        if (s) {
            cluster__endpoints_svc_forget(c, s->key);
            cluster__endpoints_svc_free(s);
            HASH_DEL(c->svcs, s);
            store_obj_unref(s->obj);
            free(s->key);
            free(s);
        }
        return;
    }
    if (s && o->rv < s->obj->rv)
        return;
    if (!s) {
        if (!(s = calloc(1, sizeof(*s))) || !(s->key = strdup(key))) {
            free(s);
            return;
        }
        HASH_ADD_KEYPTR(hh, c->svcs, s->key, strlen(s->key), s);
    } else {
        store_obj_unref(s->obj);
    }
    s->obj = store_obj_ref(o);
    cluster__endpoints_svc(c, s);
}

int cluster__bind_pod(struct cluster *c, struct cl_pod *p, struct cl_node *n, const char *component)
{
    bool cond[C_N];
    time_t cond_time[C_N], start_time = p->start_time;
    char msg[700];
    int rc;

    memcpy(cond, p->cond, sizeof(cond));
    memcpy(cond_time, p->cond_time, sizeof(cond_time));
    account(c, p, n->name);   /* the status reads it (hostIP) */
    cluster__kubelet_set_cond(p, C_SCHED, true);
    /* what the node's kubelet reports at once: created, not yet started. It goes in the
     * binding's write: a patch of spec.nodeName and then a status write were two writes
     * (and two events) per Pod on the cluster thread */
    cluster__kubelet_set_cond(p, C_READYTOSTART, false);
    cluster__kubelet_set_cond(p, C_INIT, !p->v.init);
    cluster__kubelet_set_cond(p, C_CONTAINERS, false);
    cluster__kubelet_set_cond(p, C_READY, false);
    p->start_time = time(NULL);
    rc = cluster__kubelet_write_bind(c, p, n->name);
    if (rc < 0) {
        /* not bound: the record stays as it was, the next event retries (no capacity
         * was freed: the Unschedulable Pods need no new look) */
        bool changed = c->capacity_changed;
        unaccount(c, p);
        c->capacity_changed = changed;
        memcpy(p->cond, cond, sizeof(cond));
        memcpy(p->cond_time, cond_time, sizeof(cond_time));
        p->start_time = start_time;
        return rc;
    }
    cluster__pod_set_unsched(p, NULL);
    snprintf(msg, sizeof(msg), "Successfully assigned %s to %s", p->key, n->name);
    cluster__event_of(c, p->obj, "Normal", "Scheduled", msg, component, NULL, NULL);
    return 0;
}

/* VolumeBinding's PreFilter: the first persistentVolumeClaim volume whose claim does not
 * exist (the Pod is unschedulable until it does), NULL when all are there. */
static const char *missing_claim(struct cluster *c, const cJSON *pod)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, kobj_get(kobj_get(pod, "spec"), "volumes")) {
        const char *claim = kobj_str(kobj_get(v, "persistentVolumeClaim"), "claimName");
        struct store_obj *o = NULL;
        struct store_status st = { 0 };
        if (!claim || !c->r_pvcs)
            continue;
        int rc = store_get(c->store, c->r_pvcs, kobj_str(kobj_get(pod, "metadata"), "namespace"),
                           claim, &o, &st);
        store_obj_unref(o);
        store_status_clear(&st);
        if (rc == -ENOENT)
            return claim;
    }
    return NULL;
}

/* Places p on the emptiest node that passes every filter: the index is walked from the
 * front, so a Pod that fits costs the nodes ahead of its own, not the whole table. Only
 * when no node fits are they all asked why, for the FailedScheduling message. */
static void schedule_one(struct cluster *c, struct cl_pod *p, unsigned *fits, size_t cap)
{
    struct cl_node *n, *tmp, *best = NULL;
    size_t i = 0;
    char taint[160] = "", msg[CL_UNSCHED_MSG_MAX];
    const char *claim = p->v.pvc ? missing_claim(c, store_obj_json(p->obj)) : NULL;
    if (claim) {
        size_t nn = HASH_COUNT(c->nodes);
        snprintf(msg, sizeof(msg), "0/%zu nodes are available: persistentvolumeclaim \"%.200s\" not "
                 "found. preemption: 0/%zu nodes are available: %zu Preemption is not helpful for "
                 "scheduling.", nn, claim, nn, nn);
        goto unschedulable;
    }

    for (size_t k = 0; (n = cluster__node_index_at(c, k)); k++) {
        c->sched_visited++;
        if (!cluster_node_fits(p->v.sched, &p->req, store_obj_json(n->obj), &n->alloc, &n->used,
                               NULL, 0)) {
            best = n;
            break;
        }
    }
    if (!best) {
        HASH_ITER(hh, c->nodes, n, tmp) {
            unsigned f = cluster_node_fits(p->v.sched, &p->req, store_obj_json(n->obj), &n->alloc,
                                           &n->used, taint[0] ? NULL : taint, sizeof(taint));
            c->sched_visited++;
            if (i < cap)
                fits[i++] = f;
            if (!f && !best)
                best = n;   /* left out of the index (its allocation failed) */
        }
    }
    if (best && cluster__bind_pod(c, p, best, "default-scheduler") == 0)
        return;
    if (best)
        return;   /* the write failed (conflict, deleted): the next event retries */
    cluster_unsched_message(i, fits, taint, msg, sizeof(msg));
unschedulable:
    p->unsched = true;
    cluster__keys_push(&c->unsched, &c->nunsched, &c->capunsched, p->key);
    if (!strcmp(msg, cluster__pod_unsched(p)))
        return;
    cluster__pod_set_unsched(p, msg);
    cluster__kubelet_set_cond(p, C_SCHED, false);
    cluster__kubelet_write(c, p);
    cluster__event_of(c, p->obj, "Warning", "FailedScheduling", msg, "default-scheduler", NULL, NULL);
}

void cluster__schedule_pass(struct cluster *c)
{
    struct cl_pod *p;
    unsigned *fits;
    size_t nn = HASH_COUNT(c->nodes);

    /* freed capacity concerns the gang step only once there are gangs: its session
     * walks every Pod, which a cluster of default-scheduler Pods need not pay for each
     * Pod that ends */
    if (c->capacity_changed && c->gang_seen)
        c->gang_dirty = true;
    if (c->capacity_changed) {
        /* a node came or a Pod let go of its resources: try the waiting ones again */
        c->capacity_changed = false;
        for (size_t i = 0; i < c->nunsched; i++) {
            HASH_FIND_STR(c->pods, c->unsched[i], p);
            free(c->unsched[i]);
            if (p && p->unsched) {
                p->unsched = false;
                pending_push(c, p);
            }
        }
        c->nunsched = 0;
    }
    /* gangs first: a gang that fits takes its nodes before single Pods spread over them */
    cluster__gang_pass(c);
    if (!c->npending)
        return;
    if (!(fits = calloc(nn + 1, sizeof(*fits))))
        return;
    for (size_t i = 0; i < c->npending; i++) {
        HASH_FIND_STR(c->pods, c->pending[i], p);
        free(c->pending[i]);
        if (!p)
            continue;
        p->queued = false;
        const char *nn_ = p->ep.known ? p->ep.node :
                          kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "nodeName");
        if ((nn_ && nn_[0]) || p->v.terminal || p->v.deleting)
            continue;
        schedule_one(c, p, fits, nn);
        /* 30,000 Pods pending at once must not all hold a tree until the pass ends */
        store_tree_scope_trim(CLUSTER_SCOPE_BYTES);
    }
    c->npending = 0;
    free(fits);
}

void cluster__pods_free(struct cluster *c)
{
    struct cl_pod *p, *tp;
    struct cl_svc *s, *ts;

    HASH_ITER(hh, c->pods, p, tp) {
        HASH_DEL(c->pods, p);
        pod_free(p);
    }
    HASH_ITER(hh, c->svcs, s, ts) {
        cluster__endpoints_svc_free(s);
        HASH_DEL(c->svcs, s);
        store_obj_unref(s->obj);
        free(s->key);
        free(s);
    }
    cluster__endpoints_index_free(c);
    for (size_t i = 0; i < c->npending; i++)
        free(c->pending[i]);
    free(c->pending);
    c->pending = NULL;
    c->npending = c->cappending = 0;
    for (size_t i = 0; i < c->nunsched; i++)
        free(c->unsched[i]);
    free(c->unsched);
    c->unsched = NULL;
    c->nunsched = c->capunsched = 0;
}

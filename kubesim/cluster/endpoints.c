/*
 * endpoints.c - the endpoints and endpointslice controllers: every
 * Service with a selector gets an Endpoints object (ready Pods in addresses,
 * others in notReadyAddresses) and one discovery.k8s.io/v1 EndpointSlice
 * labelled kubernetes.io/service-name, kept in sync after Pod or Service changes.
 * Runs on the cluster thread, batched: each Service keeps the set of Pods its
 * selector matches; a Pod event marks the Services it belongs to dirty, and one
 * sync per 50 ms rebuilds the dirty ones from their members and writes only what
 * changed.
 *
 * A Pod or Service event costs what it touches, not what exists: an index keeps
 * every Pod under each of its (namespace, label=value) pairs, and every Service
 * with a selector under one of its selector's pairs - the one with the fewest
 * Services at the time, so a pair every Service shares (created-by) does not
 * become one huge bucket. A Service can only select a Pod that carries its
 * indexed pair, so a Pod event looks at the Services indexed under its labels
 * (now and before the change), and a Service event at the Pods under its pair.
 * With 10,000 RayClusters in one namespace the scan of every Service per Pod
 * event was what starved kubesim's scheduler and kubelet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "util/util.h"

static void svc_mark(struct cluster *c, struct cl_svc *s);

#define ENDPOINTS_MAX 1000

static bool labels_match(const cJSON *selector, const cJSON *labels)
{
    const cJSON *kv;

    cJSON_ArrayForEach(kv, selector) {
        const char *v = kobj_str(labels, kv->string);
        if (!cJSON_IsString(kv) || !v || strcmp(v, kv->valuestring))
            return false;
    }
    return true;
}

/* A Service port's target on this Pod: a number, or a named container port. 0 = none.
 * Only a named port reads the Pod's spec. */
static int target_port(const cJSON *sp, const struct cl_pod *p)
{
    const cJSON *tp = kobj_get(sp, "targetPort"), *ct, *pt;

    if (cJSON_IsNumber(tp))
        return (int)cJSON_GetNumberValue(tp);
    if (!cJSON_IsString(tp))
        return (int)cJSON_GetNumberValue(kobj_get(sp, "port"));
    if (!p)
        return 0;
    cJSON_ArrayForEach(ct, kobj_get(kobj_get(store_obj_json(p->obj), "spec"), "containers"))
        cJSON_ArrayForEach(pt, kobj_get(ct, "ports"))
            if (kobj_str(pt, "name") && !strcmp(kobj_str(pt, "name"), tp->valuestring))
                return (int)cJSON_GetNumberValue(kobj_get(pt, "containerPort"));
    return 0;
}

static cJSON *target_ref(const struct cl_pod *p)
{
    cJSON *r = cJSON_CreateObject();

    cJSON_AddStringToObject(r, "kind", "Pod");
    cJSON_AddStringToObject(r, "namespace", p->obj->ns);
    cJSON_AddStringToObject(r, "name", p->obj->name);
    cJSON_AddStringToObject(r, "uid", p->obj->uid);
    return r;
}

/* What a sync reads of a member Pod. */
struct member_view {
    const char *ip, *node;       /* NULL: none */
    bool ready, terminating;
};

/* From the Pod record (pods.c took it from the snapshot it holds); parsed from the
 * snapshot only when a field did not fit the record. */
static void member_view(const struct cl_pod *p, struct member_view *v)
{
    const cJSON *pod;

    memset(v, 0, sizeof(*v));
    if (p->ep.known) {
        v->ip = p->ep.ip[0] ? p->ep.ip : NULL;
        v->node = p->ep.node;
        v->ready = p->ep.ready;
        v->terminating = p->ep.terminating;
        return;
    }
    pod = store_obj_json(p->obj);
    v->ip = kobj_str(kobj_get(pod, "status"), "podIP");
    v->node = kobj_str(kobj_get(pod, "spec"), "nodeName");
    v->terminating = kobj_get(kobj_get(pod, "metadata"), "deletionTimestamp") != NULL;
    v->ready = cluster__pod_ready(pod);
}

/* A hash of the members of obj named in keys, in order. */
static uint64_t keys_hash(const cJSON *obj, const char *const *keys)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (const char *const *k = keys; *k; k++)
        h = (h ^ store_json_hash(kobj_get(obj, *k))) * 0x100000001b3ULL;
    return h;
}

/* Writes obj (consumed) over the stored object of that name unless compare_keys
 * already match: create when missing, update at the stored resourceVersion. last is
 * what this sync wrote or found there the time before: while the stored object is
 * still that version, the hash decides, and the stored object is not parsed. */
static void put_if_changed(struct cluster *c, const struct reg_resource *res, const char *ns,
                           const char *name, cJSON *obj, const char *const *keys,
                           struct cl_put *last)
{
    struct store_obj *cur = NULL, *out = NULL;
    struct store_status st = { 0 };
    struct store_write_opts w = { .field_manager = "endpoint-controller" };
    uint64_t h = keys_hash(obj, keys);
    bool same = true;
    char rv[24];

    if (store_get(c->store, res, ns, name, &cur, &st) < 0) {
        store_status_clear(&st);
        last->rv = 0;
        if (store_create(c->store, res, ns, obj, &w, &out, &st) < 0 && st.code != 409)
            log_warn("cluster: endpoints create failed", "name", name, "error", st.message, NULL);
        else if (out)
            *last = (struct cl_put){ out->rv, h };
        store_obj_unref(out);
        store_status_clear(&st);
        return;
    }
    if (last->rv && last->rv == cur->rv) {
        same = last->hash == h;
    } else {
        /* written by someone else since (or not known yet): compare with what is there */
        for (const char *const *k = keys; *k; k++) {
            const cJSON *a = kobj_get(store_obj_json(cur), *k), *b = kobj_get(obj, *k);
            if (!a != !b || (a && !cJSON_Compare(a, b, true)))
                same = false;
        }
    }
    if (same) {
        *last = (struct cl_put){ cur->rv, h };
        cJSON_Delete(obj);
        store_obj_unref(cur);
        return;
    }
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)cur->rv);
    cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion", rv);
    store_obj_unref(cur);
    last->rv = 0;
    /* a conflict means someone wrote in between; their event brings us back */
    if (store_update(c->store, res, ns, name, NULL, obj, &w, &out, &st) < 0 && st.code != 409)
        log_warn("cluster: endpoints update failed", "name", name, "error", st.message, NULL);
    else if (out)
        *last = (struct cl_put){ out->rv, h };
    store_obj_unref(out);
    store_status_clear(&st);
}

static cJSON *meta(const cJSON *svc, const char *name, bool slice)
{
    cJSON *m = cJSON_CreateObject(), *lb;
    const cJSON *smd = kobj_get(svc, "metadata"), *kv;

    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", kobj_str(smd, "namespace"));
    lb = cJSON_AddObjectToObject(m, "labels");
    cJSON_ArrayForEach(kv, kobj_get(smd, "labels"))
        cJSON_AddItemToObject(lb, kv->string, cJSON_Duplicate(kv, true));
    if (slice) {
        cJSON *or = cJSON_AddArrayToObject(m, "ownerReferences"), *r = cJSON_CreateObject();
        cJSON_AddStringToObject(lb, "kubernetes.io/service-name", kobj_str(smd, "name"));
        cJSON_AddStringToObject(lb, "endpointslice.kubernetes.io/managed-by",
                                "endpointslice-controller.k8s.io");
        cJSON_AddStringToObject(r, "apiVersion", "v1");
        cJSON_AddStringToObject(r, "kind", "Service");
        cJSON_AddStringToObject(r, "name", kobj_str(smd, "name"));
        cJSON_AddStringToObject(r, "uid", kobj_str(smd, "uid"));
        cJSON_AddBoolToObject(r, "controller", true);
        cJSON_AddBoolToObject(r, "blockOwnerDeletion", true);
        cJSON_AddItemToArray(or, r);
    }
    return m;
}

/* ---- the label index ------------------------------------------------------------- */

struct ep_key {                  /* a set of object keys ("ns/name") */
    char *key;
    UT_hash_handle hh;
};

struct ep_bucket {               /* "ns\x1fk\x1fv" -> the objects indexed under it */
    char *lkey;
    struct ep_key *keys;
    unsigned n;
    UT_hash_handle hh;
};

struct ep_entry {                /* an object -> the bucket keys it is indexed under */
    char *key;
    char **lkeys;
    size_t n;
    UT_hash_handle hh;
};

struct cl_ep_index {
    struct ep_bucket *svc_by_pair, *pod_by_pair;
    struct ep_entry *svcs, *pods;
};

static struct cl_ep_index *epx(struct cluster *c)
{
    if (!c->epx)
        c->epx = calloc(1, sizeof(*c->epx));
    return c->epx;
}

static char *pair_key(const char *ns, const char *k, const char *v)
{
    char *out = NULL;

    if (asprintf(&out, "%s\x1f%s\x1f%s", ns, k, v) < 0)
        return NULL;
    return out;
}

static struct ep_bucket *bucket_find(struct ep_bucket *head, const char *lkey)
{
    struct ep_bucket *b = NULL;

    HASH_FIND_STR(head, lkey, b);
    return b;
}

static void bucket_add(struct ep_bucket **head, const char *lkey, const char *key)
{
    struct ep_bucket *b = bucket_find(*head, lkey);
    struct ep_key *k = NULL;

    if (!b) {
        if (!(b = calloc(1, sizeof(*b))) || !(b->lkey = strdup(lkey))) {
            free(b);
            return;
        }
        HASH_ADD_KEYPTR(hh, *head, b->lkey, strlen(b->lkey), b);
    }
    HASH_FIND_STR(b->keys, key, k);
    if (k)
        return;
    if (!(k = calloc(1, sizeof(*k))) || !(k->key = strdup(key))) {
        free(k);
        return;
    }
    HASH_ADD_KEYPTR(hh, b->keys, k->key, strlen(k->key), k);
    b->n++;
}

static void bucket_del(struct ep_bucket **head, const char *lkey, const char *key)
{
    struct ep_bucket *b = bucket_find(*head, lkey);
    struct ep_key *k = NULL;

    if (!b)
        return;
    HASH_FIND_STR(b->keys, key, k);
    if (k) {
        HASH_DEL(b->keys, k);
        free(k->key);
        free(k);
        b->n--;
    }
    if (!b->keys) {
        HASH_DEL(*head, b);
        free(b->lkey);
        free(b);
    }
}

static void entry_free(struct ep_entry *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->lkeys[i]);
    free(e->lkeys);
    free(e->key);
    free(e);
}

/* Takes key out of every bucket its entry lists and drops the entry. */
static void entry_forget(struct ep_entry **entries, struct ep_bucket **buckets, const char *key)
{
    struct ep_entry *e = NULL;

    HASH_FIND_STR(*entries, key, e);
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        bucket_del(buckets, e->lkeys[i], key);
    HASH_DEL(*entries, e);
    entry_free(e);
}

/* Indexes key under lkeys[0..n) (consumed), replacing what it was indexed under. */
static void entry_set(struct ep_entry **entries, struct ep_bucket **buckets, const char *key,
                      char **lkeys, size_t n)
{
    struct ep_entry *e;

    entry_forget(entries, buckets, key);
    if (!(e = calloc(1, sizeof(*e))) || !(e->key = strdup(key))) {
        free(e);
        goto drop;
    }
    e->lkeys = lkeys;
    e->n = n;
    for (size_t i = 0; i < n; i++)
        bucket_add(buckets, lkeys[i], key);
    HASH_ADD_KEYPTR(hh, *entries, e->key, strlen(e->key), e);
    return;
drop:
    for (size_t i = 0; i < n; i++)
        free(lkeys[i]);
    free(lkeys);
}

/* The pair keys of a Pod's labels (an array the caller owns), or NULL with *n = 0. */
static char **pod_pairs(const char *ns, const cJSON *labels, size_t *n)
{
    const cJSON *kv;
    size_t cap = (size_t)cJSON_GetArraySize(labels), i = 0;
    char **out;

    *n = 0;
    if (!cJSON_IsObject(labels) || !cap || !(out = calloc(cap, sizeof(*out))))
        return NULL;
    cJSON_ArrayForEach(kv, labels)
        if (cJSON_IsString(kv) && i < cap && (out[i] = pair_key(ns, kv->string, kv->valuestring)))
            i++;
    *n = i;
    return out;
}

void cluster__endpoints_svc_forget(struct cluster *c, const char *key)
{
    struct cl_ep_index *x = epx(c);

    if (x)
        entry_forget(&x->svcs, &x->svc_by_pair, key);
}

static size_t ep_buckets_bytes(const struct ep_bucket *head)
{
    size_t n = head ? store_mem_table(&head->hh) : 0;

    for (const struct ep_bucket *b = head; b; b = b->hh.next) {
        n += store_mem_chunk(b) + store_mem_chunk(b->lkey);
        n += cluster__mem_keyed_table(b->keys ? &b->keys->hh : NULL);
    }
    return n;
}

static size_t ep_entries_bytes(const struct ep_entry *head)
{
    size_t n = head ? store_mem_table(&head->hh) : 0;

    for (const struct ep_entry *e = head; e; e = e->hh.next) {
        n += store_mem_chunk(e) + store_mem_chunk(e->key) + store_mem_chunk(e->lkeys);
        for (size_t i = 0; i < e->n; i++)
            n += store_mem_chunk(e->lkeys[i]);
    }
    return n;
}

size_t cluster__endpoints_index_bytes(const struct cluster *c)
{
    const struct cl_ep_index *x = c->epx;

    return x ? store_mem_chunk(x) + ep_buckets_bytes(x->svc_by_pair) +
               ep_buckets_bytes(x->pod_by_pair) + ep_entries_bytes(x->svcs) +
               ep_entries_bytes(x->pods) : 0;
}

void cluster__endpoints_index_free(struct cluster *c)
{
    struct cl_ep_index *x = c->epx;
    struct ep_entry *e, *te;

    for (size_t i = 0; i < c->nep_dirty; i++)
        free(c->ep_dirty[i]);
    free(c->ep_dirty);
    c->ep_dirty = NULL;
    c->nep_dirty = c->capep_dirty = 0;
    if (!x)
        return;
    HASH_ITER(hh, x->svcs, e, te)
        entry_forget(&x->svcs, &x->svc_by_pair, e->key);
    HASH_ITER(hh, x->pods, e, te)
        entry_forget(&x->pods, &x->pod_by_pair, e->key);
    free(x);
    c->epx = NULL;
}

static void sync_service(struct cluster *c, struct cl_svc *s)
{
    const cJSON *svc = s->view ? s->view : store_obj_json(s->obj), *spec = kobj_get(svc, "spec");
    const cJSON *selector = kobj_get(spec, "selector"), *sp;
    bool publish = cJSON_IsTrue(kobj_get(spec, "publishNotReadyAddresses"));
    cJSON *ep, *subset, *addrs, *nready, *ports, *slice, *sends, *sports;
    const struct cl_pod *first = NULL;
    struct cl_member *m, *tmp;
    size_t n_addrs = 0;
    char slice_name[300];
    static const char *const ep_keys[] = { "subsets", NULL };
    static const char *const slice_keys[] = { "endpoints", "ports", NULL };

    if (!cJSON_IsObject(selector) || !selector->child)
        return;   /* no selector: the user manages the Endpoints */
    ep = cJSON_CreateObject();
    cJSON_AddStringToObject(ep, "apiVersion", "v1");
    cJSON_AddStringToObject(ep, "kind", "Endpoints");
    cJSON_AddItemToObject(ep, "metadata", meta(svc, s->obj->name, false));
    subset = cJSON_CreateObject();
    addrs = cJSON_CreateArray();
    nready = cJSON_CreateArray();
    slice = cJSON_CreateObject();
    snprintf(slice_name, sizeof(slice_name), "%.240s-%.5s", s->obj->name, s->obj->uid);
    cJSON_AddStringToObject(slice, "apiVersion", "discovery.k8s.io/v1");
    cJSON_AddStringToObject(slice, "kind", "EndpointSlice");
    cJSON_AddItemToObject(slice, "metadata", meta(svc, slice_name, true));
    cJSON_AddStringToObject(slice, "addressType", "IPv4");
    sends = cJSON_AddArrayToObject(slice, "endpoints");

    HASH_ITER(hh, s->members, m, tmp) {
        struct cl_pod *p = NULL;
        struct member_view v;
        bool ready;
        cJSON *a, *e, *cond;

        HASH_FIND_STR(c->pods, m->key, p);
        if (!p)
            continue;
        member_view(p, &v);
        if (!v.ip || !v.ip[0])
            continue;
        ready = v.ready && !v.terminating;
        if (!first)
            first = p;
        if (!v.terminating) {
            a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "ip", v.ip);
            if (v.node)
                cJSON_AddStringToObject(a, "nodeName", v.node);
            cJSON_AddItemToObject(a, "targetRef", target_ref(p));
            /* the endpoints controller truncates at 1000 addresses (over-capacity) */
            if (n_addrs++ < ENDPOINTS_MAX)
                cJSON_AddItemToArray(ready || publish ? addrs : nready, a);
            else
                cJSON_Delete(a);
        }
        e = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(e, "addresses"), cJSON_CreateString(v.ip));
        cond = cJSON_AddObjectToObject(e, "conditions");
        cJSON_AddBoolToObject(cond, "ready", ready || (publish && !v.terminating));
        cJSON_AddBoolToObject(cond, "serving", v.ready);
        cJSON_AddBoolToObject(cond, "terminating", v.terminating);
        if (v.node)
            cJSON_AddStringToObject(e, "nodeName", v.node);
        cJSON_AddItemToObject(e, "targetRef", target_ref(p));
        cJSON_AddItemToArray(sends, e);
    }
    ports = cJSON_CreateArray();
    sports = cJSON_AddArrayToObject(slice, "ports");
    cJSON_ArrayForEach(sp, kobj_get(spec, "ports")) {
        int port = target_port(sp, first);
        const char *proto = kobj_str(sp, "protocol");
        cJSON *o;

        if (port <= 0)
            continue;
        o = cJSON_CreateObject();
        if (kobj_str(sp, "name"))
            cJSON_AddStringToObject(o, "name", kobj_str(sp, "name"));
        cJSON_AddNumberToObject(o, "port", port);
        cJSON_AddStringToObject(o, "protocol", proto ? proto : "TCP");
        if (kobj_str(sp, "appProtocol"))
            cJSON_AddStringToObject(o, "appProtocol", kobj_str(sp, "appProtocol"));
        cJSON_AddItemToArray(sports, cJSON_Duplicate(o, true));
        cJSON_AddItemToArray(ports, o);
    }
    if (cJSON_GetArraySize(addrs) || cJSON_GetArraySize(nready)) {
        if (cJSON_GetArraySize(addrs))
            cJSON_AddItemToObject(subset, "addresses", addrs);
        else
            cJSON_Delete(addrs);
        if (cJSON_GetArraySize(nready))
            cJSON_AddItemToObject(subset, "notReadyAddresses", nready);
        else
            cJSON_Delete(nready);
        cJSON_AddItemToObject(subset, "ports", ports);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(ep, "subsets"), subset);
    } else {
        cJSON_Delete(addrs);
        cJSON_Delete(nready);
        cJSON_Delete(ports);
        cJSON_Delete(subset);
    }
    if (n_addrs > ENDPOINTS_MAX)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_GetObjectItem(ep, "metadata"),
                                "annotations"), "endpoints.kubernetes.io/over-capacity", "truncated");
    put_if_changed(c, c->r_ep, s->obj->ns, s->obj->name, ep, ep_keys, &s->put_ep);
    put_if_changed(c, c->r_eps, s->obj->ns, slice_name, slice, slice_keys, &s->put_eps);
}

void cluster__endpoints_drop(struct cluster *c, const char *ns, const char *name)
{
    struct store_delete_opts o = { .grace_seconds = -1 };
    struct store_status st = { 0 };

    /* the EndpointSlice goes with the Service through its ownerReference */
    store_delete(c->store, c->r_ep, ns, name, &o, NULL, NULL, &st);
    store_status_clear(&st);
}

void cluster__endpoints_sync(struct cluster *c)
{
    struct cl_svc *s, *tmp;

    char **keys = c->ep_dirty;
    size_t n = c->nep_dirty;

    c->endpoints_dirty = false;
    /* the Services marked since the last sync, not a walk of all of them: 10,000
     * RayClusters have as many Services, and this runs every 50 ms while Pods change */
    c->ep_dirty = NULL;
    c->nep_dirty = c->capep_dirty = 0;
    for (size_t i = 0; i < n; i++) {
        c->ep_visited++;
        HASH_FIND_STR(c->svcs, keys[i], s);
        free(keys[i]);
        if (s && s->dirty) {
            s->dirty = false;
            sync_service(c, s);
        }
        store_tree_scope_trim(CLUSTER_SCOPE_BYTES);   /* a sync holds no tree after it */
    }
    free(keys);
    if (c->ep_dirty_lost) {
        /* a mark that could not be listed (out of memory): look at them all once */
        c->ep_dirty_lost = false;
        HASH_ITER(hh, c->svcs, s, tmp) {
            c->ep_visited++;
            if (s->dirty) {
                s->dirty = false;
                sync_service(c, s);
            }
            store_tree_scope_trim(CLUSTER_SCOPE_BYTES);
        }
    }
}

/* Marks s for the next sync (once: a marked Service is listed already). */
static void svc_mark(struct cluster *c, struct cl_svc *s)
{
    if (!s->dirty && !cluster__keys_push(&c->ep_dirty, &c->nep_dirty, &c->capep_dirty, s->key))
        c->ep_dirty_lost = true;
    s->dirty = true;
    c->endpoints_dirty = true;
}

static const cJSON *svc_selector(const struct cl_svc *s)
{
    const cJSON *sel = kobj_get(kobj_get(s->view, "spec"), "selector");
    return cJSON_IsObject(sel) && sel->child ? sel : NULL;
}

/* What the endpoints read of a Service (struct cl_svc, view), copied; NULL on ENOMEM. */
static cJSON *svc_view(const cJSON *obj)
{
    static const char *const keep[][2] = {
        { "metadata", "name" }, { "metadata", "namespace" }, { "metadata", "uid" },
        { "metadata", "labels" }, { "spec", "selector" }, { "spec", "ports" },
        { "spec", "publishNotReadyAddresses" },
    };
    cJSON *v = cJSON_CreateObject();

    for (size_t i = 0; v && i < sizeof(keep) / sizeof(keep[0]); i++) {
        const cJSON *m = kobj_get(kobj_get(obj, keep[i][0]), keep[i][1]);
        cJSON *parent = cJSON_GetObjectItemCaseSensitive(v, keep[i][0]), *dup;
        if (!m)
            continue;
        if ((!parent && !(parent = cJSON_AddObjectToObject(v, keep[i][0]))) ||
            !(dup = cJSON_Duplicate(m, true)) || !cJSON_AddItemToObject(parent, keep[i][1], dup)) {
            cJSON_Delete(v);
            return NULL;   /* the sync then reads the tree */
        }
    }
    return v;
}

static void member_set(struct cluster *c, struct cl_svc *s, const char *key, bool in)
{
    struct cl_member *m = NULL;

    HASH_FIND_STR(s->members, key, m);
    if (in && !m) {
        if (!(m = calloc(1, sizeof(*m))) || !(m->key = strdup(key))) {
            free(m);
            return;
        }
        HASH_ADD_KEYPTR(hh, s->members, m->key, strlen(m->key), m);
    } else if (!in && m) {
        HASH_DEL(s->members, m);
        free(m->key);
        free(m);
    } else if (!in) {
        return;   /* neither before nor now: nothing to resync */
    }
    svc_mark(c, s);
}

/* Re-decides key's membership in the Service indexed as skey. */
static void pod_vs_service(struct cluster *c, const char *skey, const char *key, const cJSON *labels)
{
    struct cl_svc *s = NULL;
    const cJSON *sel;

    HASH_FIND_STR(c->svcs, skey, s);
    if (s && (sel = svc_selector(s)))
        member_set(c, s, key, labels && labels_match(sel, labels));
}

/* Every Service indexed under lkey, checked against the Pod. */
static void pod_vs_bucket(struct cluster *c, const char *lkey, const char *key, const cJSON *labels)
{
    struct ep_bucket *b = bucket_find(c->epx->svc_by_pair, lkey);
    struct ep_key *k, *tk;

    if (b)
        HASH_ITER(hh, b->keys, k, tk)
            pod_vs_service(c, k->key, key, labels);
}

void cluster__endpoints_pod(struct cluster *c, const char *key, const char *ns, const struct store_obj *o)
{
    struct cl_ep_index *x = epx(c);
    const cJSON *labels = o ? kobj_get(kobj_get(store_obj_json(o), "metadata"), "labels") : NULL;
    struct ep_entry *old = NULL;
    char **now;
    size_t n;

    if (!x)
        return;
    /* the Services the Pod may have left: those indexed under its previous labels */
    HASH_FIND_STR(x->pods, key, old);
    if (old)
        for (size_t i = 0; i < old->n; i++)
            pod_vs_bucket(c, old->lkeys[i], key, labels);
    if (!o) {
        entry_forget(&x->pods, &x->pod_by_pair, key);
        return;
    }
    now = pod_pairs(ns, labels, &n);
    for (size_t i = 0; i < n; i++)
        pod_vs_bucket(c, now[i], key, labels);
    entry_set(&x->pods, &x->pod_by_pair, key, now, n);
}

void cluster__endpoints_pod_touch(struct cluster *c, const char *key)
{
    struct ep_entry *e = NULL;

    if (!c->epx)
        return;
    HASH_FIND_STR(c->epx->pods, key, e);
    /* the Services that select it are among those indexed under its labels */
    for (size_t i = 0; e && i < e->n; i++) {
        struct ep_bucket *b = bucket_find(c->epx->svc_by_pair, e->lkeys[i]);
        struct ep_key *k, *tk;

        if (!b)
            continue;
        HASH_ITER(hh, b->keys, k, tk) {
            struct cl_svc *s = NULL;
            struct cl_member *m = NULL;

            HASH_FIND_STR(c->svcs, k->key, s);
            if (s)
                HASH_FIND_STR(s->members, key, m);
            if (m)
                svc_mark(c, s);
        }
    }
}

/* The selector pair to index s under: the one fewest Services share now. */
static char *svc_pair(struct cl_ep_index *x, const struct cl_svc *s, const cJSON *sel)
{
    const cJSON *kv;
    char *best = NULL;
    unsigned best_n = 0;

    cJSON_ArrayForEach(kv, sel) {
        char *lk;
        struct ep_bucket *b;
        unsigned n;

        if (!cJSON_IsString(kv) || !(lk = pair_key(s->obj->ns, kv->string, kv->valuestring)))
            continue;
        b = bucket_find(x->svc_by_pair, lk);
        n = b ? b->n : 0;
        if (!best || n < best_n) {
            free(best);
            best = lk;
            best_n = n;
        } else {
            free(lk);
        }
    }
    return best;
}

void cluster__endpoints_svc(struct cluster *c, struct cl_svc *s)
{
    struct cl_ep_index *x = epx(c);
    const cJSON *sel = svc_selector(s);
    struct ep_bucket *b;
    struct ep_key *k, *tk;
    char **lk;

    cluster__endpoints_svc_free(s);
    s->view = svc_view(store_obj_json(s->obj));   /* NULL on ENOMEM: selects nothing */
    sel = svc_selector(s);
    svc_mark(c, s);
    if (!x)
        return;
    entry_forget(&x->svcs, &x->svc_by_pair, s->key);
    if (!sel || !(lk = calloc(1, sizeof(*lk))))
        return;
    if (!(lk[0] = svc_pair(x, s, sel))) {
        free(lk);
        return;
    }
    entry_set(&x->svcs, &x->svc_by_pair, s->key, lk, 1);
    /* only Pods carrying the indexed pair can match */
    if (!(b = bucket_find(x->pod_by_pair, lk[0])))
        return;
    HASH_ITER(hh, b->keys, k, tk) {
        struct cl_pod *p = NULL;

        HASH_FIND_STR(c->pods, k->key, p);
        if (p && labels_match(sel, kobj_get(kobj_get(store_obj_json(p->obj), "metadata"), "labels")))
            member_set(c, s, p->key, true);
    }
}

void cluster__endpoints_svc_free(struct cl_svc *s)
{
    struct cl_member *m, *tmp;

    cJSON_Delete(s->view);
    s->view = NULL;
    HASH_ITER(hh, s->members, m, tmp) {
        HASH_DEL(s->members, m);
        free(m->key);
        free(m);
    }
}

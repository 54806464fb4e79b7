/*
 * store.c - the heart of kubesim's object store: the per-type hash tables
 * (uthash, keyed "ns/name"), the global uid table, the single resourceVersion
 * counter and the commit path every write goes through (journal, indexes, watch
 * rings, subscribers, GC queue), plus open/close, GET and stats. The snapshots
 * themselves are obj.c; the verbs live in write.c, list.c and patch.c.
 *
 * Concurrency: one rwlock (s->lock). Reads take it shared; a write holds it
 * exclusively to commit: most writes are prepared without it against a snapshot
 * and committed only if that snapshot is still current (write.c), the rest hold
 * it from reading the old state to publishing the new one.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- types and entries ---- */

void store__type_key(const struct reg_resource *res, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s", res->group, res->plural);
}

/* The version a CRD's objects are kept in. */
static const struct reg_resource *storage_res(struct store *s, const struct reg_resource *res)
{
    if (store__events_v1(res) && s->res_events)
        return s->res_events;
    if (res->builtin || res->storage)
        return res;
    for (size_t i = 0, n = registry_count(s->reg); i < n; i++) {
        const struct reg_resource *r = registry_at(s->reg, i);
        if (r->storage && !strcmp(r->group, res->group) && !strcmp(r->plural, res->plural))
            return r;
    }
    return res;
}

struct stype *store__type_get(struct store *s, const struct reg_resource *res, bool create)
{
    char key[512];
    struct stype *t;

    res = storage_res(s, res);
    store__type_key(res, key, sizeof(key));
    HASH_FIND_STR(s->types, key, t);
    if (t) {
        if (t->res != res)      /* only after a CRD change: watchers read it */
            t->res = res;
        return t;
    }
    if (!create)
        return NULL;
    t = calloc(1, sizeof(*t));
    if (!t || !(t->key = strdup(key))) {
        free(t);
        return NULL;
    }
    t->res = res;
    store__watch_type_init(t, s->window, s->start_rv);
    if (!t->ring) {
        free(t->key);
        free(t);
        return NULL;
    }
    HASH_ADD_KEYPTR(hh, s->types, t->key, strlen(t->key), t);
    return t;
}

struct sentry *store__entry_find(struct stype *t, const char *ns, const char *name)
{
    size_t nl = ns ? strlen(ns) : 0, ml = strlen(name);
    char key[600];
    struct sentry *e;

    if (!t || nl + ml + 2 > sizeof(key))
        return NULL;
    memcpy(key, ns ? ns : "", nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml + 1);
    HASH_FIND(hh, t->objs, key, nl + 1 + ml, e);
    return e;
}

struct sentry *store__entry_lookup(struct store *s, const struct reg_resource *res,
                                   const char *ns, const char *name, struct store_status *st)
{
    struct sentry *e = store__entry_find(store__type_get(s, res, false),
                                         res->namespaced ? ns : "", name);

    if (!e)
        store__status_not_found(st, res, name);
    return e;
}

const struct reg_resource *store__find_builtin(struct store *s, const char *group,
                                               const char *plural)
{
    /* the hot ones are looked up on every create/delete: cached (built-ins never move) */
    if (!group[0] && !strcmp(plural, "namespaces") && s->res_namespaces)
        return s->res_namespaces;
    if (!group[0] && !strcmp(plural, "nodes") && s->res_nodes)
        return s->res_nodes;
    for (size_t i = 0, n = registry_count(s->reg); i < n; i++) {
        const struct reg_resource *r = registry_at(s->reg, i);
        if (r->builtin && !strcmp(r->group, group) && !strcmp(r->plural, plural))
            return r;
    }
    return NULL;
}

/* ---- commit path ---- */

uint64_t store__next_rv(struct store *s)
{
    return ++s->rv;
}

static void notice_push(struct store *s, enum store_event_type type, struct store_obj *o)
{
    struct notice *n;

    if (!s->n_subs)
        return;
    n = malloc(sizeof(*n));
    if (!n) {
        log_error("store: subscriber notice dropped", "reason", "ENOMEM", NULL);
        return;
    }
    n->type = type;
    n->obj = store_obj_ref(o);
    n->next = NULL;
    pthread_mutex_lock(&s->nq_mu);
    if (s->nq_tail)
        s->nq_tail->next = n;
    else
        s->nq_head = n;
    s->nq_tail = n;
    pthread_mutex_unlock(&s->nq_mu);
}

static _Thread_local struct store *draining_store;

/*
 * Delivers queued notices in commit order, outside s->lock. Whoever holds
 * notify_mu drains everything; a subscriber that writes to the store from inside
 * its callback only queues (draining_store), the outer loop delivers it next.
 */
int store__write_done(struct store *s, int rc, struct store_status *st)
{
    if (rc == -ENOMEM)
        store__status_set(st, 500, "InternalError", "out of memory");
    store__notify_drain(s);
    return rc;
}

void store__notify_drain(struct store *s)
{
    store__watch_wake_deferred();
    if (!s->n_subs || draining_store == s)
        return;
    pthread_mutex_lock(&s->notify_mu);
    draining_store = s;
    for (;;) {
        struct notice *n;
        pthread_mutex_lock(&s->nq_mu);
        n = s->nq_head;
        s->nq_head = s->nq_tail = NULL;
        pthread_mutex_unlock(&s->nq_mu);
        if (!n)
            break;
        while (n) {
            struct notice *next = n->next;
            for (size_t i = 0; i < s->n_subs; i++)
                s->subs[i].fn(s->subs[i].arg, n->type, n->obj);
            store_obj_unref(n->obj);
            free(n);
            n = next;
        }
    }
    draining_store = NULL;
    pthread_mutex_unlock(&s->notify_mu);
}

int store__commit_put(struct store *s, struct stype *t, struct sentry *old,
                      struct store_obj *obj, struct sentry **out)
{
    struct sentry *e = old;
    struct store_obj *prev = NULL;
    bool owned, owner_gone, dependent, same_labels;
    uint64_t old_labels = 0, old_refs = 0;
    const cJSON *j;

    /* first: compressing moves obj's names, which the indexes below key on */
    store__obj_compact(t, obj);
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e) {
            store_obj_unref(obj);
            return -ENOMEM;
        }
        if (asprintf(&e->key, "%s/%s", obj->ns, obj->name) < 0) {
            free(e);
            store_obj_unref(obj);
            return -ENOMEM;
        }
        e->t = t;
        e->obj = obj;
        HASH_ADD_KEYPTR(hh, t->objs, e->key, strlen(e->key), e);
        HASH_ADD_KEYPTR(hu, s->by_uid, obj->uid, strlen(obj->uid), e);
        t->n++;
        s->objects++;
    } else {
        prev = e->obj;
        old_labels = e->labels_hash;
        old_refs = e->refs_hash;
        store__gc_index_remove(s, e);
        /* uid never changes, but the key string in the uid table belongs to the
         * old snapshot: re-key it on the new one. */
        HASH_DELETE(hu, s->by_uid, e);
        e->obj = obj;
        HASH_ADD_KEYPTR(hu, s->by_uid, obj->uid, strlen(obj->uid), e);
    }
    if (store__gc_index_add(s, e) || store__index_update(t, e))
        log_warn("store: an index is incomplete", "reason", "ENOMEM", NULL);
    if (obj->res == s->res_events)
        store__gc_event_written(s, e);   /* replayed ones too, dated by their own timestamps */
    /* the previous snapshot may be text alone: its labels and ownerReferences are
     * compared by the hashes its commit kept, not by parsing it again */
    j = store_obj_json(obj);
    e->labels_hash = store__obj_meta_hash(j, "labels");
    e->refs_hash = store__obj_meta_hash(j, "ownerReferences");
    dependent = e->refs_hash && (!prev || e->refs_hash != old_refs);
    owned = store__has_finalizer(j, "orphan") || store__has_finalizer(j, "foregroundDeletion");
    owner_gone = owned && kobj_meta_str(j, "deletionTimestamp");
    same_labels = prev && e->labels_hash == old_labels;
    /* Last use of the tree on this thread, and no other has seen obj yet (the lock is
     * held and it is not in a watch ring): a text-only type lets it go here. */
    store__obj_settle(obj);
    if (!s->replaying) {
        store__persist_put(s, obj);
        store__watch_append(s, t, prev ? EV_MODIFIED : EV_ADDED, obj, prev, same_labels,
                            &e->ring_seq);
        notice_push(s, prev ? EV_MODIFIED : EV_ADDED, obj);
        if (dependent)
            store__gc_enqueue(s, GC_DEPENDENT, obj->uid);
        if (owner_gone)
            store__gc_enqueue(s, GC_OWNER, obj->uid);
        atomic_store_explicit(&s->committed_rv, s->rv, memory_order_release);
    }
    store_obj_unref(prev);
    if (out)
        *out = e;
    return 0;
}

int store__commit_delete(struct store *s, struct sentry *e)
{
    struct stype *t = e->t;
    struct store_obj *last = e->obj;
    struct owner_deps *od;

    HASH_DELETE(hh, t->objs, e);
    HASH_DELETE(hu, s->by_uid, e);
    store__index_remove(t, e);
    t->n--;
    s->objects--;
    if (!s->replaying) {
        uint64_t rv = store__next_rv(s);
        struct store_obj *d = store__obj_with_rv(last, rv);
        store__persist_delete(s, last, rv);
        if (d) {
            store__watch_append(s, t, EV_DELETED, d, last, false, &e->ring_seq);
            notice_push(s, EV_DELETED, d);
            store_obj_unref(d);
        } else {
            log_error("store: DELETED event lost", "reason", "ENOMEM", NULL);
        }
        HASH_FIND_STR(s->owners, last->uid, od);
        if (od)
            store__gc_enqueue(s, GC_OWNER, last->uid);
        for (size_t i = 0; i < e->n_owners; i++)
            store__gc_enqueue(s, GC_OWNER, e->owners[i]);
        if (last->ns[0]) {
            const struct reg_resource *nsr = store__find_builtin(s, "", "namespaces");
            struct sentry *ns = nsr ? store__entry_find(store__type_get(s, nsr, false), "",
                                                        last->ns) : NULL;
            if (ns && kobj_meta_str(store_obj_json(ns->obj), "deletionTimestamp"))
                store__gc_enqueue(s, GC_NAMESPACE, last->ns);
        }
        atomic_store_explicit(&s->committed_rv, s->rv, memory_order_release);
    }
    store__gc_index_remove(s, e);
    free(e->key);
    free(e);
    /* however a CRD goes (DELETE, last finalizer, collection, GC), its types go too */
    if (!s->replaying && t->res && t->res->builtin &&
        !strcmp(t->res->group, "apiextensions.k8s.io") &&
        !strcmp(t->res->plural, "customresourcedefinitions"))
        store__crd_changed(s, store_obj_json(last), true);
    store_obj_unref(last);
    return 0;
}

/* ---- open / close ---- */

static int bootstrap(struct store *s)
{
    static const char *const names[] = { "default", "kube-system", "kube-public",
                                         "kube-node-lease" };
    const struct reg_resource *nsr = store__find_builtin(s, "", "namespaces");
    const struct reg_resource *sar = store__find_builtin(s, "", "serviceaccounts");
    struct store_status st = { 0 };
    int rc;

    if (!nsr)
        return 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddObjectToObject(o, "metadata");
        cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "name",
                                names[i]);
        rc = store_create(s, nsr, "", o, NULL, NULL, &st);
        if (rc && rc != -EEXIST)
            goto out;
        store_status_clear(&st);
        if (!sar)
            continue;
        o = cJSON_Parse("{\"metadata\":{\"name\":\"default\"}}");
        rc = store_create(s, sar, names[i], o, NULL, NULL, &st);
        if (rc && rc != -EEXIST)
            goto out;
        store_status_clear(&st);
    }
    rc = 0;
out:
    if (rc)
        log_error("store: bootstrap failed", "message", st.message, NULL);
    store_status_clear(&st);
    return rc;
}

int store_open(const struct store_opts *o, struct registry *reg, struct store **out,
               char *err, size_t errlen)
{
    struct store *s = calloc(1, sizeof(*s));
    int rc;

    if (!s) {
        registry_free(reg);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->notify_mu, NULL);
    pthread_mutex_init(&s->nq_mu, NULL);
    pthread_mutex_init(&s->gc_mu, NULL);
    pthread_cond_init(&s->gc_cond, NULL);
    s->reg = reg;
    s->journal_fd = -1;
    s->window = o && o->watch_window ? o->watch_window : 5000;
    s->bookmark_ms = o && o->bookmark_ms ? o->bookmark_ms : 1000;
    s->event_ttl_ms = o && o->event_ttl_ms ? o->event_ttl_ms : 3600u * 1000u;
    s->svc_next_ip = 2;    /* 10.96.0.1 is the `kubernetes` Service's, as in a real cluster */
    s->res_namespaces = store__find_builtin(s, "", "namespaces");
    s->res_nodes = store__find_builtin(s, "", "nodes");
    s->res_events = store__find_builtin(s, "", "events");
    if (o && o->state_dir) {
        s->state_dir = strdup(o->state_dir);
        if (!s->state_dir) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        rc = store__persist_open(s, err, errlen);
        if (rc)
            goto fail;
        store__gc_events_replayed(s);
    }
    s->start_rv = s->rv;
    atomic_store(&s->committed_rv, s->rv);
    /* types materialised during replay must also refuse older watch positions */
    for (struct stype *t = s->types; t; t = t->hh.next)
        t->evicted_rv = s->start_rv;
    rc = store__gc_start(s);
    if (rc) {
        snprintf(err, errlen, "cannot start the garbage collector: %s", strerror(-rc));
        goto fail;
    }
    if (!s->objects) {
        rc = bootstrap(s);
        if (rc) {
            snprintf(err, errlen, "cannot create the initial namespaces");
            goto fail;
        }
    }
    *out = s;
    return 0;
fail:
    store_close(s);
    return rc;
}

void store_close(struct store *s)
{
    struct stype *t, *tt;
    struct sentry *e, *et;

    if (!s)
        return;
    store__gc_stop(s);
    store__persist_close(s);
    HASH_CLEAR(hu, s->by_uid);     /* its bookkeeping lives in the entries freed below */
    HASH_ITER(hh, s->types, t, tt) {
        HASH_ITER(hh, t->objs, e, et) {
            HASH_DELETE(hh, t->objs, e);
            store__gc_index_remove(s, e);
            store_obj_unref(e->obj);
            free(e->key);
            free(e);
        }
        store__index_free(t);
        store__watch_type_free(t);
        store__zdict_unref(t->zd);   /* snapshots still held elsewhere keep their own reference */
        HASH_DELETE(hh, s->types, t);
        free(t->key);
        free(t);
    }
    while (s->nq_head) {
        struct notice *n = s->nq_head;
        s->nq_head = n->next;
        store_obj_unref(n->obj);
        free(n);
    }
    store__handoff_clear();   /* the trees of every store: only a cache */
    registry_free(s->reg);
    free(s->state_dir);
    pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->notify_mu);
    pthread_mutex_destroy(&s->nq_mu);
    pthread_mutex_destroy(&s->gc_mu);
    pthread_cond_destroy(&s->gc_cond);
    free(s);
}

const struct registry *store_registry_rdlock(struct store *s)
{
    pthread_rwlock_rdlock(&s->lock);
    return s->reg;
}

void store_registry_unlock(struct store *s)
{
    pthread_rwlock_unlock(&s->lock);
}

uint64_t store_current_rv(struct store *s)
{
    uint64_t rv;

    pthread_rwlock_rdlock(&s->lock);
    rv = s->rv;
    pthread_rwlock_unlock(&s->lock);
    return rv;
}

int store_get(struct store *s, const struct reg_resource *res, const char *ns,
              const char *name, struct store_obj **out, struct store_status *st)
{
    struct sentry *e;
    int rc = 0;

    pthread_rwlock_rdlock(&s->lock);
    if (!(e = store__entry_lookup(s, res, ns, name, st))) {
        rc = -ENOENT;
        goto out;
    }
    *out = store__obj_as(e->obj, res);
    if (!*out)
        rc = -ENOMEM;
out:
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

int store_subscribe(struct store *s, store_subscriber_fn fn, void *arg)
{
    int rc = 0;

    pthread_mutex_lock(&s->notify_mu);
    pthread_rwlock_wrlock(&s->lock);
    if (s->n_subs >= STORE_MAX_SUBSCRIBERS) {
        rc = -ENOSPC;
    } else {
        s->subs[s->n_subs].fn = fn;
        s->subs[s->n_subs].arg = arg;
        s->n_subs++;
    }
    pthread_rwlock_unlock(&s->lock);
    pthread_mutex_unlock(&s->notify_mu);
    return rc;
}

void store_get_stats(struct store *s, struct store_stats *out)
{
    pthread_rwlock_rdlock(&s->lock);
    out->objects = s->objects;
    out->rv = s->rv;
    pthread_rwlock_unlock(&s->lock);
    out->watchers = atomic_load(&s->watchers);
    out->events = atomic_load(&s->events);
    out->text_parses = store__text_parses();
    out->label_peeks = store__label_peeks();
}

void store_set_watch_delay_ms(struct store *s, unsigned ms)
{
    atomic_store(&s->watch_delay_ms, ms);
}

int store_wait_gc_idle(struct store *s, int timeout_ms)
{
    return store__gc_wait_idle(s, timeout_ms);
}

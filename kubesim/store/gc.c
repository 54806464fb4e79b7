/*
 * gc.c - the garbage collector and namespace finalizer of kubesim, one background
 * thread fed by the commit path (store.c) through a de-duplicated work queue:
 *
 *   GC_OWNER uid      an owner went away or is being deleted with the orphan or
 *                     foregroundDeletion finalizer: act on its dependents.
 *   GC_DEPENDENT uid  an object gained ownerReferences: delete it if every owner
 *                     is gone (dangling), drop the references to absent owners
 *                     if only some are.
 *   GC_NAMESPACE name a namespace is terminating: delete what it holds, then
 *                     drop the "kubernetes" finalizer so the namespace goes away.
 *
 * The same thread expires Events event_ttl_ms after their last write (the real
 * API server stores each Event write under an etcd lease of --event-ttl, 1 h):
 * without it every Event of a long run stays, and under churn kubesim grew
 * without bound (the chaos soak: ~2 MB/s, almost all of it Events).
 *
 * Dependents are indexed by owner uid (s->owners), so work is O(dependents).
 * Like the real garbage collector, owners are identified by uid only, and an
 * owner in another namespace than a namespaced dependent counts as absent.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define jget cJSON_GetObjectItemCaseSensitive

/* The thread woke once per queued item: each commit that queues one wakes it, and it
 * went back to sleep after each (at 10,000 RayClusters a quarter of its samples were
 * context switches). Woken from idle to a short queue, it first lets the queue fill
 * for GC_LINGER_NS, then takes up to GC_BATCH items under one hold of the store's
 * lock, which it lets go between items once it held it GC_HOLD_NS (writers wait on it).
 * Nothing waits on the collector that soon: the real one acts seconds later. */
#define GC_LINGER_NS 5000000L
#define GC_BATCH 32
#define GC_HOLD_NS 1000000L

struct ev_expiry {
    struct ev_expiry *next;
    uint64_t due_ms, rv;
    char key[];                     /* "ns/name" */
};

struct gc_pending {                 /* queued (kind, id) pairs, for de-duplication */
    char *key;
    UT_hash_handle hh;
};

/* ---- dependents index ---- */

void store__gc_measure(const struct store *s, size_t *owners, size_t *expiry)
{
    const struct owner_deps *od;
    const struct depref *d;

    *owners = s->owners ? store_mem_table(&s->owners->hh) : 0;
    for (od = s->owners; od; od = od->hh.next) {
        *owners += store_mem_chunk(od) + store_mem_chunk(od->uid);
        if (od->deps)
            *owners += store_mem_table(&od->deps->hh);
        for (d = od->deps; d; d = d->hh.next)
            *owners += store_mem_chunk(d);
    }
    *expiry = 0;
    for (const struct ev_expiry *x = s->exp_head; x; x = x->next)
        *expiry += store_mem_chunk(x);
}


int store__gc_index_add(struct store *s, struct sentry *e)
{
    const cJSON *refs = jget(jget(store_obj_json(e->obj), "metadata"), "ownerReferences");
    const cJSON *r;
    int n = cJSON_GetArraySize(refs);

    if (n <= 0)
        return 0;
    e->owners = calloc((size_t)n, sizeof(*e->owners));
    if (!e->owners)
        return -ENOMEM;
    cJSON_ArrayForEach(r, refs) {
        const char *uid = cJSON_GetStringValue(jget(r, "uid"));
        struct owner_deps *od;
        struct depref *d;
        bool dup = false;
        if (!uid || !uid[0])
            continue;
        for (size_t i = 0; i < e->n_owners; i++)
            dup |= !strcmp(e->owners[i], uid);
        if (dup)
            continue;
        HASH_FIND_STR(s->owners, uid, od);
        if (!od) {
            od = calloc(1, sizeof(*od));
            if (!od || !(od->uid = strdup(uid))) {
                free(od);
                return -ENOMEM;
            }
            HASH_ADD_KEYPTR(hh, s->owners, od->uid, strlen(od->uid), od);
        }
        d = calloc(1, sizeof(*d));
        if (!d)
            return -ENOMEM;
        d->e = e;
        HASH_ADD_PTR(od->deps, e, d);
        e->owners[e->n_owners] = od->uid;
        e->n_owners++;
    }
    return 0;
}

void store__gc_index_remove(struct store *s, struct sentry *e)
{
    for (size_t i = 0; i < e->n_owners; i++) {
        struct owner_deps *od;
        struct depref *d;
        HASH_FIND_STR(s->owners, e->owners[i], od);
        if (!od)
            continue;
        HASH_FIND_PTR(od->deps, &e, d);
        if (d) {
            HASH_DEL(od->deps, d);
            free(d);
        }
        if (!od->deps) {
            HASH_DEL(s->owners, od);
            free(od->uid);
            free(od);
        }
    }
    free(e->owners);
    e->owners = NULL;
    e->n_owners = 0;
}

/* ---- queue ---- */

void store__gc_enqueue(struct store *s, int kind, const char *id)
{
    struct gc_pending *p;
    struct gc_item *it;
    char *key;

    if (asprintf(&key, "%d:%s", kind, id) < 0)
        return;
    pthread_mutex_lock(&s->gc_mu);
    HASH_FIND_STR(s->gc_pending, key, p);
    if (p) {
        pthread_mutex_unlock(&s->gc_mu);
        free(key);
        return;
    }
    p = calloc(1, sizeof(*p));
    it = calloc(1, sizeof(*it));
    if (!p || !it || !(it->id = strdup(id))) {
        pthread_mutex_unlock(&s->gc_mu);
        log_error("store: GC work dropped", "reason", "ENOMEM", NULL);
        free(p);
        free(it);
        free(key);
        return;
    }
    p->key = key;
    HASH_ADD_KEYPTR(hh, s->gc_pending, p->key, strlen(p->key), p);
    it->kind = kind;
    if (s->gq_tail)
        s->gq_tail->next = it;
    else
        s->gq_head = it;
    s->gq_tail = it;
    pthread_cond_broadcast(&s->gc_cond);
    pthread_mutex_unlock(&s->gc_mu);
}

/* ---- work ---- */

static bool owner_alive(struct store *s, const struct sentry *dep, const char *uid)
{
    struct sentry *o;

    HASH_FIND(hu, s->by_uid, uid, strlen(uid), o);
    if (!o)
        return false;
    return !o->obj->ns[0] || !strcmp(o->obj->ns, dep->obj->ns);
}

/* Writes nj (consumed) as e's new state through the ordinary update path. */
static void gc_write(struct store *s, struct sentry *e, cJSON *nj)
{
    struct store_status st = { 0 };

    if (store__write_prepared(s, e->t->res, e, NULL, nj, NULL, NULL, &st))
        log_warn("store: GC update failed", "name", e->obj->name, "message", st.message,
                 NULL);
    store_status_clear(&st);
}

static void gc_delete(struct store *s, struct sentry *e, const char *propagation)
{
    struct store_delete_opts o = { .propagation = propagation, .grace_seconds = -1 };
    struct store_status st = { 0 };
    struct store_obj *r = NULL;
    bool gone;

    if (store__delete_entry(s, e, &o, &r, &gone, &st))
        log_warn("store: GC delete failed", "message", st.message, NULL);
    store_obj_unref(r);
    store_status_clear(&st);
}

/* Removes the ownerReferences of e that satisfy drop(uid). */
static void strip_refs(struct store *s, struct sentry *e, const char *only_uid)
{
    cJSON *nj = store__obj_copy(e->obj);
    cJSON *refs = jget(store__meta(nj), "ownerReferences");
    int i = 0;
    cJSON *r = refs ? refs->child : NULL;

    while (r) {
        cJSON *next = r->next;
        const char *uid = cJSON_GetStringValue(jget(r, "uid"));
        bool drop = only_uid ? (uid && !strcmp(uid, only_uid))
                             : (!uid || !owner_alive(s, e, uid));
        if (drop)
            cJSON_DeleteItemFromArray(refs, i);
        else
            i++;
        r = next;
    }
    if (refs && cJSON_GetArraySize(refs) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(store__meta(nj), "ownerReferences");
    gc_write(s, e, nj);
}

static void process_dependent(struct store *s, struct sentry *e)
{
    /* the references' bytes alone: nearly every dependent's owners are alive, and
     * parsing each new Pod, Service and slice whole was half the GC's CPU at 10,000
     * RayClusters (issue 18) */
    cJSON *tmp = NULL;
    const cJSON *refs = store__obj_meta_peek(e->obj, "ownerReferences", &tmp);
    const cJSON *r;
    int alive = 0, dead = 0;

    cJSON_ArrayForEach(r, refs) {
        const char *uid = cJSON_GetStringValue(jget(r, "uid"));
        if (uid && owner_alive(s, e, uid))
            alive++;
        else
            dead++;
    }
    cJSON_Delete(tmp);
    if (!dead)
        return;
    if (!alive) {
        if (!kobj_meta_str(store_obj_json(e->obj), "deletionTimestamp"))
            gc_delete(s, e, "Background");
    } else {
        strip_refs(s, e, NULL);
    }
}

static void drop_finalizer_write(struct store *s, struct sentry *e, const char *f)
{
    cJSON *nj = store__obj_copy(e->obj);
    cJSON *fin = jget(store__meta(nj), "finalizers");
    int i = 0;
    cJSON *x;

    cJSON_ArrayForEach(x, fin) {
        if (cJSON_GetStringValue(x) && !strcmp(cJSON_GetStringValue(x), f))
            break;
        i++;
    }
    if (x)
        cJSON_DeleteItemFromArray(fin, i);
    gc_write(s, e, nj);
}

/* Snapshot of an owner's dependents (they change while we act on them). */
static struct sentry **deps_of(struct store *s, const char *uid, size_t *n)
{
    struct owner_deps *od;
    struct depref *d, *tmp;
    struct sentry **v;
    size_t k = 0;

    *n = 0;
    HASH_FIND_STR(s->owners, uid, od);
    if (!od)
        return NULL;
    v = malloc(HASH_COUNT(od->deps) * sizeof(*v));
    if (!v)
        return NULL;
    HASH_ITER(hh, od->deps, d, tmp)
        v[k++] = d->e;
    *n = k;
    return v;
}

static bool still_indexed(struct store *s, const char *uid, struct sentry *e)
{
    struct owner_deps *od;
    struct depref *d = NULL;

    HASH_FIND_STR(s->owners, uid, od);
    if (od)
        HASH_FIND_PTR(od->deps, &e, d);
    return d != NULL;
}

static bool ref_blocks(const struct sentry *e, const char *uid)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, jget(jget(store_obj_json(e->obj), "metadata"), "ownerReferences")) {
        const char *u = cJSON_GetStringValue(jget(r, "uid"));
        if (u && !strcmp(u, uid) && cJSON_IsTrue(jget(r, "blockOwnerDeletion")))
            return true;
    }
    return false;
}

static void process_owner(struct store *s, const char *uid)
{
    struct sentry *owner, **deps;
    size_t n;

    HASH_FIND(hu, s->by_uid, uid, strlen(uid), owner);
    deps = deps_of(s, uid, &n);
    if (!owner) {
        for (size_t i = 0; i < n; i++)
            if (still_indexed(s, uid, deps[i]))
                process_dependent(s, deps[i]);
    } else if (kobj_meta_str(store_obj_json(owner->obj), "deletionTimestamp")) {
        if (store__has_finalizer(store_obj_json(owner->obj), "orphan")) {
            for (size_t i = 0; i < n; i++)
                if (still_indexed(s, uid, deps[i]))
                    strip_refs(s, deps[i], uid);
            drop_finalizer_write(s, owner, "orphan");
        } else if (store__has_finalizer(store_obj_json(owner->obj), "foregroundDeletion")) {
            size_t blocking = 0;
            for (size_t i = 0; i < n; i++) {
                if (!still_indexed(s, uid, deps[i]))
                    continue;
                if (!kobj_meta_str(store_obj_json(deps[i]->obj), "deletionTimestamp"))
                    gc_delete(s, deps[i], "Foreground");
                if (still_indexed(s, uid, deps[i]) && ref_blocks(deps[i], uid))
                    blocking++;
            }
            if (!blocking) {
                HASH_FIND(hu, s->by_uid, uid, strlen(uid), owner);
                if (owner)
                    drop_finalizer_write(s, owner, "foregroundDeletion");
            }
        }
    }
    free(deps);
}

static void process_namespace(struct store *s, const char *name)
{
    const struct reg_resource *nsr = store__find_builtin(s, "", "namespaces");
    struct sentry *ns = nsr ? store__entry_find(store__type_get(s, nsr, false), "", name) : NULL;
    size_t left = 0;
    cJSON *nj, *spec;

    if (!ns || !kobj_meta_str(store_obj_json(ns->obj), "deletionTimestamp"))
        return;
    for (struct stype *t = s->types; t; t = t->hh.next) {
        struct sentry *e, *tmp;
        if (!t->res || !t->res->namespaced)
            continue;
        HASH_ITER(hh, t->objs, e, tmp) {
            if (strcmp(e->obj->ns, name))
                continue;
            /* explicit Background, as the namespace deleter sends: a Job's
             * default (Orphan) would only add a round trip through GC */
            if (!kobj_meta_str(store_obj_json(e->obj), "deletionTimestamp"))
                gc_delete(s, e, "Background");
        }
    }
    for (struct stype *t = s->types; t; t = t->hh.next) {
        struct sentry *e, *tmp;
        HASH_ITER(hh, t->objs, e, tmp)
            left += t->res && t->res->namespaced && !strcmp(e->obj->ns, name);
    }
    if (left)
        return;       /* re-queued when the last of them goes (store__commit_delete) */
    nj = store__obj_copy(ns->obj);
    spec = jget(nj, "spec");
    if (spec)
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "finalizers");
    gc_write(s, ns, nj);
}

/* Wall-clock ms: the dates of replayed Events are wall-clock too. */
static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* When a replayed Event was last written, from its own dates (the latest of
 * creationTimestamp, lastTimestamp, eventTime, series.lastObservedTime); now
 * when it has none. Its TTL runs on from there, as an etcd lease outlives a
 * restart of the API server. */
static uint64_t event_written_ms(const cJSON *ev)
{
    const char *dates[4] = {
        kobj_meta_str(ev, "creationTimestamp"),
        cJSON_GetStringValue(jget(ev, "lastTimestamp")),
        cJSON_GetStringValue(jget(ev, "eventTime")),
        cJSON_GetStringValue(jget(jget(ev, "series"), "lastObservedTime")),
    };
    time_t best = 0, t;
    for (int i = 0; i < 4; i++)
        if (dates[i] && util_parse_time(dates[i], &t) == 0 && t > best)
            best = t;
    uint64_t now = wall_ms();
    return best && (uint64_t)best * 1000u < now ? (uint64_t)best * 1000u : now;
}

void store__gc_event_written(struct store *s, const struct sentry *e)
{
    size_t n = strlen(e->key) + 1;
    struct ev_expiry *x = malloc(sizeof(*x) + n);
    if (!x)
        return;   /* this write's Event lives until its next write: not worth failing it */
    x->next = NULL;
    x->due_ms = (s->replaying ? event_written_ms(store_obj_json(e->obj)) : wall_ms()) + s->event_ttl_ms;
    x->rv = e->obj->rv;
    memcpy(x->key, e->key, n);
    if (s->exp_tail)
        s->exp_tail->next = x;
    else
        s->exp_head = x;
    s->exp_tail = x;
    if (atomic_fetch_add(&s->n_expiring, 1) == 0 && !s->replaying) {
        /* the thread may sleep without a timeout: it had nothing to expire */
        pthread_mutex_lock(&s->gc_mu);
        pthread_cond_broadcast(&s->gc_cond);
        pthread_mutex_unlock(&s->gc_mu);
    }
}

static int cmp_due(const void *a, const void *b)
{
    const struct ev_expiry *x = *(const struct ev_expiry *const *)a;
    const struct ev_expiry *y = *(const struct ev_expiry *const *)b;
    return x->due_ms < y->due_ms ? -1 : x->due_ms > y->due_ms;
}

void store__gc_events_replayed(struct store *s)
{
    size_t n = atomic_load(&s->n_expiring), i = 0;
    struct ev_expiry **v = n ? malloc(n * sizeof(*v)) : NULL;
    if (!v)
        return;   /* unsorted, expiry is only late for the ones behind a later head */
    for (struct ev_expiry *x = s->exp_head; x && i < n; x = x->next)
        v[i++] = x;
    qsort(v, i, sizeof(*v), cmp_due);
    for (size_t k = 0; k + 1 < i; k++)
        v[k]->next = v[k + 1];
    if (i) {
        v[i - 1]->next = NULL;
        s->exp_head = v[0];
        s->exp_tail = v[i - 1];
    }
    free(v);
}

/* Deletes the Events whose last write is event_ttl_ms old. Takes s->lock. */
static void expire_events(struct store *s)
{
    uint64_t now = wall_ms();
    bool any = false;

    store_tree_scope_begin();
    pthread_rwlock_wrlock(&s->lock);
    struct stype *t = s->res_events ? store__type_get(s, s->res_events, false) : NULL;
    while (s->exp_head && s->exp_head->due_ms <= now) {
        struct ev_expiry *x = s->exp_head;
        struct sentry *e = NULL;
        s->exp_head = x->next;
        if (!s->exp_head)
            s->exp_tail = NULL;
        atomic_fetch_sub(&s->n_expiring, 1);
        if (t)
            HASH_FIND(hh, t->objs, x->key, strlen(x->key), e);
        if (e && e->obj->rv == x->rv && !kobj_meta_str(store_obj_json(e->obj), "deletionTimestamp")) {
            gc_delete(s, e, "Background");
            any = true;
        }
        free(x);
    }
    pthread_rwlock_unlock(&s->lock);
    store_tree_scope_end();
    if (any)
        store__notify_drain(s);
}

static void free_expiries(struct store *s)
{
    while (s->exp_head) {
        struct ev_expiry *x = s->exp_head;
        s->exp_head = x->next;
        free(x);
    }
    s->exp_tail = NULL;
    atomic_store(&s->n_expiring, 0);
}

/* Handles one queued item; the store's lock is held. */
static void gc_item_process(struct store *s, const struct gc_item *it)
{
    if (it->kind == GC_OWNER) {
        process_owner(s, it->id);
    } else if (it->kind == GC_DEPENDENT) {
        struct sentry *e;
        HASH_FIND(hu, s->by_uid, it->id, strlen(it->id), e);
        if (e)
            process_dependent(s, e);
    } else if (it->kind == GC_NAMESPACE) {
        process_namespace(s, it->id);
    }
}

/* Takes up to GC_BATCH items off the queue (gc_mu held), dropping their de-duplication
 * keys: an item queued again from here on is handled again. */
static struct gc_item *gc_batch_take(struct store *s)
{
    struct gc_item *first = s->gq_head, *last = NULL, *it;
    int n = 0;

    for (it = first; it && n < GC_BATCH; it = it->next, n++) {
        struct gc_pending *p;
        char key[600];

        snprintf(key, sizeof(key), "%d:%s", it->kind, it->id);
        HASH_FIND_STR(s->gc_pending, key, p);
        if (p) {
            HASH_DEL(s->gc_pending, p);
            free(p->key);
            free(p);
        }
        last = it;
    }
    s->gq_head = last->next;
    if (!s->gq_head)
        s->gq_tail = NULL;
    last->next = NULL;
    return first;
}

static bool gc_queue_short(const struct store *s)
{
    int n = 0;

    for (const struct gc_item *it = s->gq_head; it; it = it->next)
        if (++n >= GC_BATCH)
            return false;
    return true;
}

static void *gc_main(void *arg)
{
    struct store *s = arg;
    uint64_t next_expiry = 0;
    bool woke = false;

    pthread_mutex_lock(&s->gc_mu);
    for (;;) {
        struct gc_item *batch, *it;
        uint64_t held;

        /* Events to expire: looked at once a second (a TTL is minutes or hours),
         * busy or idle; under churn the work queue is rarely empty, and expiry
         * only on idle wake-ups ran minutes late */
        if (atomic_load(&s->n_expiring) && wall_ms() >= next_expiry) {
            pthread_mutex_unlock(&s->gc_mu);
            expire_events(s);
            pthread_mutex_lock(&s->gc_mu);
            next_expiry = wall_ms() + 1000;
        }
        if (!s->store__gc_stop && !s->gq_head) {
            s->gc_busy = false;
            pthread_cond_broadcast(&s->gc_cond);
            if (!atomic_load(&s->n_expiring)) {
                pthread_cond_wait(&s->gc_cond, &s->gc_mu);
            } else {
                struct timespec until;
                uint64_t ms = next_expiry > wall_ms() ? next_expiry - wall_ms() : 0;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += (time_t)(ms / 1000);
                until.tv_nsec += (long)(ms % 1000) * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&s->gc_cond, &s->gc_mu, &until);
            }
            woke = true;
            continue;
        }
        if (s->store__gc_stop)
            break;
        if (woke && gc_queue_short(s)) {
            woke = false;
            store__linger(&s->gc_mu, GC_LINGER_NS);
            continue;
        }
        woke = false;
        batch = gc_batch_take(s);
        s->gc_busy = true;
        pthread_mutex_unlock(&s->gc_mu);

        /* the dependents and owners read here are mostly text-only snapshots */
        store_tree_scope_begin();
        pthread_rwlock_wrlock(&s->lock);
        held = util_now_ns();
        for (it = batch; it; it = it->next) {
            if (util_now_ns() - held > GC_HOLD_NS) {
                pthread_rwlock_unlock(&s->lock);
                store__notify_drain(s);
                pthread_rwlock_wrlock(&s->lock);
                held = util_now_ns();
            }
            gc_item_process(s, it);
        }
        pthread_rwlock_unlock(&s->lock);
        store_tree_scope_end();
        store__notify_drain(s);
        while (batch) {
            it = batch;
            batch = it->next;
            free(it->id);
            free(it);
        }
        pthread_mutex_lock(&s->gc_mu);
    }
    s->gc_busy = false;
    pthread_cond_broadcast(&s->gc_cond);
    pthread_mutex_unlock(&s->gc_mu);
    return NULL;
}

int store__gc_start(struct store *s)
{
    int rc;

    /* work found while replaying (dangling owners, terminating namespaces) is
     * queued by store__gc_enqueue before the thread starts and handled first */
    rc = pthread_create(&s->gc_thread, NULL, gc_main, s);
    if (rc)
        return -rc;
    pthread_setname_np(s->gc_thread, "kubesim-gc");   /* readable in profiles and /proc */
    s->gc_started = true;
    return 0;
}

void store__gc_stop(struct store *s)
{
    struct gc_pending *p, *tmp;

    if (s->gc_started) {
        pthread_mutex_lock(&s->gc_mu);
        s->store__gc_stop = true;
        pthread_cond_broadcast(&s->gc_cond);
        pthread_mutex_unlock(&s->gc_mu);
        pthread_join(s->gc_thread, NULL);
        s->gc_started = false;
    }
    free_expiries(s);
    while (s->gq_head) {
        struct gc_item *it = s->gq_head;
        s->gq_head = it->next;
        free(it->id);
        free(it);
    }
    s->gq_tail = NULL;
    HASH_ITER(hh, s->gc_pending, p, tmp) {
        HASH_DEL(s->gc_pending, p);
        free(p->key);
        free(p);
    }
}

int store__gc_wait_idle(struct store *s, int timeout_ms)
{
    struct timespec ts;
    int rc = 0;

    util_deadline_ms(&ts, timeout_ms);
    pthread_mutex_lock(&s->gc_mu);
    while ((s->gq_head || s->gc_busy) && s->gc_started && !rc)
        rc = pthread_cond_timedwait(&s->gc_cond, &s->gc_mu, &ts);
    pthread_mutex_unlock(&s->gc_mu);
    return rc ? -ETIMEDOUT : 0;
}

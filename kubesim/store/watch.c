/*
 * watch.c - per-type watch history and the watchers reading it.
 *
 * Every type keeps a ring of its last --watch-window events (sequence numbers
 * head..tail). An event holds references to the immutable objects, so the
 * server writes their bytes without re-serialising. A watch from resourceVersion
 * R is valid while no event of the type with rv > R has been evicted
 * (t->evicted_rv <= R); otherwise the watcher yields one 410 Expired ERROR, as the
 * cacher does. Watchers copy up to WATCH_BATCH events per lock acquisition into a
 * private batch, then filter (namespace, label and field selectors, with the
 * cacher's ADDED/DELETED transitions) without any lock.
 *
 * Bookmarks carry s->committed_rv, read while the watcher is caught up: every
 * event of the type with a smaller rv is then already in the ring.
 */
#include "kubesim/store/internal.h"
#include "kubesim/schema/selector.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCH_BATCH 64
/* A watcher of a type with many watchers (>= WATCH_LINGER_FANOUT) that wakes to
 * only a few events while events are streaming (it took a batch less than
 * WATCH_STREAM_NS ago, i.e. >= 500 events/s) sleeps this long before taking them,
 * so a burst reaches 100 watchers as a few large batches instead of one wake-up
 * per event per watcher (the cost that dominates on a 2-core machine). A sparse
 * event (nothing taken recently), or any event of a type watched by only a few
 * clients (an operator's informers: the API server does not hold their events
 * back either), is delivered at once: event-to-reconcile latency must not carry
 * the fan-out optimisation. */
#define WATCH_LINGER_NS 2000000L
#define WATCH_STREAM_NS WATCH_LINGER_NS
#define WATCH_LINGER_FANOUT 8
/* Any watcher, however few share its type, also lingers while its own stream runs:
 * its last batch found WATCH_LINGER_MIN_EVENTS or more events waiting, or events that
 * came while it was away sending the batch before, at WATCH_LINGER_MIN_EVENTS per
 * linger or more (1,000 events/s: the batch's events over the time since the batch
 * before). An operator's Pod informer at 10,000 RayClusters gets about 2,000 events/s
 * and took each in a wake-up and a TCP send of its own, on both sides. Such a watcher
 * sleeps the linger before it waits too, so a batch costs one wake-up instead of two.
 * At most one linger per refill, so an event is held back at most WATCH_LINGER_NS. A
 * client that waits for each event before it writes the next (one event per batch
 * however fast, none while the batch before is sent) is never held back, nor is a
 * slower stream or a lone event. */
#define WATCH_LINGER_MIN_EVENTS 2

static _Atomic uint64_t stream_lingers;

uint64_t store__watch_stream_lingers(void)
{
    return atomic_load_explicit(&stream_lingers, memory_order_relaxed);
}

struct store_watch {
    struct store *s;
    struct stype *t;
    const struct reg_resource *res;   /* the version the client asked for */
    const struct reg_resource *stored; /* the version objects are kept in, at open */
    char *ns;                         /* "" = all namespaces */
    const struct sel *labels;
    const struct fsel *fields;
    uint64_t pos;                     /* next ring sequence to read */
    uint64_t last_take_ns;            /* when the last batch was taken (linger heuristic) */
    bool streaming;                   /* its last batch came at >= 1,000 events/s */
    unsigned gen;
    struct store_obj **initial;       /* synthetic ADDED events still to deliver */
    size_t n_initial, i_initial;
    bool end_bookmark;                /* sendInitialEvents: BOOKMARK still owed */
    uint64_t initial_rv;
    bool bookmarks;
    uint64_t next_bookmark_ms;
    bool expired;
    struct store_status expired_st;
    bool ended;
    _Atomic bool cancelled;
    struct wev batch[WATCH_BATCH];
    size_t nb, ib;
};

void store__watch_type_init(struct stype *t, size_t cap, uint64_t evicted_rv)
{
    pthread_condattr_t ca;

    pthread_mutex_init(&t->wmu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->wcond, &ca);
    pthread_condattr_destroy(&ca);
    t->cap = cap ? cap : 1;
    t->ring = calloc(t->cap, sizeof(*t->ring));
    t->evicted_rv = evicted_rv;
}

void store__watch_type_free(struct stype *t)
{
    for (uint64_t q = t->head; q < t->tail; q++) {
        struct wev *ev = &t->ring[q % t->cap];
        store_obj_unref(ev->obj);
        store_obj_unref(ev->prev);
    }
    free(t->ring);
    pthread_mutex_destroy(&t->wmu);
    pthread_cond_destroy(&t->wcond);
}

/*
 * Watchers are woken after the committing thread leaves s->lock, not from inside the
 * commit: a watcher woken there ran on the committer's core while the committer still
 * held the write lock (issue 18: about 4,000 such preemptions in 10 s of creates, each
 * one stalling every other writer). The types this thread appended to since its last
 * flush; a commit that finds the list full wakes its own type at once.
 */
#define WAKE_DEFERRED_MAX 8
static _Thread_local struct stype *wake_deferred[WAKE_DEFERRED_MAX];
static _Thread_local size_t n_wake_deferred;

static bool wake_defer(struct stype *t)
{
    for (size_t i = 0; i < n_wake_deferred; i++)
        if (wake_deferred[i] == t)
            return true;
    if (n_wake_deferred == WAKE_DEFERRED_MAX)
        return false;
    wake_deferred[n_wake_deferred++] = t;
    return true;
}

void store__watch_wake_deferred(void)
{
    /* a broadcast needs no mutex: the ring's tail moved under t->wmu, and a watcher
     * tests it under t->wmu before it waits */
    for (size_t i = 0; i < n_wake_deferred; i++)
        pthread_cond_broadcast(&wake_deferred[i]->wcond);
    n_wake_deferred = 0;
}

void store__watch_append(struct store *s, struct stype *t, enum store_event_type type,
                         struct store_obj *obj, struct store_obj *prev, bool same_labels,
                         uint64_t *seq)
{
    /* the replaced snapshot's tree is 2-3x its text; watchers parse the text if they
     * ever need the tree of an old version (selectors) */
    struct store_obj *kept = prev && __atomic_load_n(&prev->tree, __ATOMIC_ACQUIRE) ?
                             store__obj_text_only(prev) : NULL;
    struct wev *ev;

    pthread_mutex_lock(&t->wmu);
    if (t->tail - t->head == t->cap) {
        ev = &t->ring[t->head % t->cap];
        t->evicted_rv = ev->rv;
        store_obj_unref(ev->obj);
        store_obj_unref(ev->prev);
        t->head++;
    }
    if (kept && *seq >= t->head && *seq < t->tail && t->ring[*seq % t->cap].obj == prev) {
        ev = &t->ring[*seq % t->cap];
        ev->obj = store_obj_ref(kept);
        store_obj_unref(prev);
    }
    ev = &t->ring[t->tail % t->cap];
    ev->type = type;
    ev->same_labels = same_labels;
    ev->obj = store_obj_ref(obj);
    ev->prev = store_obj_ref(kept ? kept : prev);
    ev->rv = s->rv;
    ev->commit_ms = util_now_ms();
    *seq = t->tail++;
    if (!wake_defer(t))
        pthread_cond_broadcast(&t->wcond);
    pthread_mutex_unlock(&t->wmu);
    store_obj_unref(kept);
    atomic_fetch_add_explicit(&s->events, 1, memory_order_relaxed);
}

/* The type stopped being served (its CRD was deleted): end its watches. */
void store__watch_type_end(struct stype *t)
{
    pthread_mutex_lock(&t->wmu);
    t->gen++;
    pthread_cond_broadcast(&t->wcond);
    pthread_mutex_unlock(&t->wmu);
}

static bool watch_matches(const struct store_watch *w, const struct store_obj *o)
{
    cJSON *tmp;
    const cJSON *j;
    bool ok;

    if (w->ns[0] && strcmp(w->ns, o->ns))
        return false;
    if (!w->labels && !w->fields)
        return true;
    if (!w->fields) {
        /* labels alone: the labels' bytes are parsed, not the whole object */
        ok = sel_matches(w->labels, store__obj_labels_peek(o, &tmp));
        cJSON_Delete(tmp);
        return ok;
    }
    j = store__obj_peek(o, &tmp);
    ok = (!w->labels || sel_matches(w->labels, cJSON_GetObjectItemCaseSensitive(
              cJSON_GetObjectItemCaseSensitive(j, "metadata"), "labels"))) &&
         (!w->fields || store__fields_match(w->res, w->fields, j));
    cJSON_Delete(tmp);
    return ok;
}

static int parse_rv(const char *s, uint64_t *out)
{
    char *end;

    if (!s || !s[0] || s[0] == '-')
        return -EINVAL;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno || *end ? -EINVAL : 0;
}

int store_watch_open(struct store *s, const struct reg_resource *res, const char *ns,
                     const struct store_watch_opts *o, struct store_watch **out,
                     struct store_status *st)
{
    struct store_watch *w = calloc(1, sizeof(*w));
    const char *rvs = o ? o->resource_version : NULL;
    bool synthetic = !rvs || !rvs[0] || !strcmp(rvs, "0") || (o && o->send_initial_events);
    uint64_t from = 0;
    int rc = 0;

    if (!w || !(w->ns = strdup(res->namespaced && ns ? ns : ""))) {
        free(w);
        store__status_set(st, 500, "InternalError", "out of memory");
        return -ENOMEM;
    }
    rc = store__check_fields(res, o ? o->fields : NULL, st);
    if (rc)
        goto fail;
    if (rvs && rvs[0] && parse_rv(rvs, &from)) {
        store__status_set(st, 400, "BadRequest", "invalid resource version: strconv.ParseUint: parsing "
                          "\"%.100s\": invalid syntax", rvs);
        rc = -EINVAL;
        goto fail;
    }
    w->s = s;
    w->res = res;
    /* an empty selector (`?labelSelector=`, or none given) matches every object: no
     * filter, so no event is parsed to test it */
    w->labels = o && o->labels && !sel_is_empty(o->labels) ? o->labels : NULL;
    w->fields = o && o->fields && fsel_count(o->fields) ? o->fields : NULL;
    w->bookmarks = o && o->bookmarks;
    w->next_bookmark_ms = util_now_ms() + s->bookmark_ms;
    pthread_rwlock_wrlock(&s->lock);
    w->t = store__type_get(s, res, true);
    if (!w->t) {
        pthread_rwlock_unlock(&s->lock);
        rc = -ENOMEM;
        store__status_set(st, 500, "InternalError", "out of memory");
        goto fail;
    }
    if (synthetic) {
        struct sentry *e, *tmp;
        w->initial = calloc(w->t->n ? w->t->n : 1, sizeof(*w->initial));
        if (!w->initial) {
            pthread_rwlock_unlock(&s->lock);
            rc = -ENOMEM;
            store__status_set(st, 500, "InternalError", "out of memory");
            goto fail;
        }
        HASH_ITER(hh, w->t->objs, e, tmp) {
            if (watch_matches(w, e->obj))
                w->initial[w->n_initial++] = store_obj_ref(e->obj);
        }
        w->initial_rv = s->rv;
        w->end_bookmark = o && o->send_initial_events;
    }
    w->stored = w->t->res;
    pthread_mutex_lock(&w->t->wmu);
    w->gen = w->t->gen;
    if (synthetic) {
        w->pos = w->t->tail;
    } else if (from < w->t->evicted_rv) {
        w->expired = true;
        store__status_set(&w->expired_st, 410, "Expired", "too old resource version: %llu (%llu)",
                          (unsigned long long)from, (unsigned long long)w->t->evicted_rv);
    } else {
        /* first event after `from`: rvs grow along the ring */
        uint64_t lo = w->t->head, hi = w->t->tail;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (w->t->ring[mid % w->t->cap].rv <= from)
                lo = mid + 1;
            else
                hi = mid;
        }
        w->pos = lo;
    }
    pthread_mutex_unlock(&w->t->wmu);
    pthread_rwlock_unlock(&s->lock);
    atomic_fetch_add(&s->watchers, 1);
    atomic_fetch_add(&w->t->nwatchers, 1);
    *out = w;
    return 0;
fail:
    free(w->ns);
    free(w);
    return rc;
}

static void abstime_after(struct timespec *ts, uint64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/*
 * Refills the private batch. 0 with events or a bookmark (*bookmark_rv != 0),
 * -ETIMEDOUT, or -EPIPE when the watch ended.
 */
static int watch_refill(struct store_watch *w, uint64_t deadline, uint64_t *bookmark_rv)
{
    struct stype *t = w->t;
    unsigned delay = atomic_load(&w->s->watch_delay_ms);
    bool lingered = false, came_away;
    int rc = -ETIMEDOUT;

    *bookmark_rv = 0;
    pthread_mutex_lock(&t->wmu);
    came_away = w->pos < t->tail;
    for (;;) {
        uint64_t now = util_now_ms(), wake = deadline;
        uint64_t committed;
        struct timespec ts;

        if (atomic_load(&w->cancelled) || w->gen != t->gen) {
            rc = -EPIPE;
            break;
        }
        if (w->pos < t->head) {
            /* fell a whole window behind: the cacher closes such watchers too */
            log_warn("store: watcher too slow, closing", "type", t->key, NULL);
            rc = -EPIPE;
            break;
        }
        if (!lingered && w->streaming && t->tail - w->pos < WATCH_BATCH / 2 && now < deadline &&
            (!delay || w->pos == t->tail)) {
            /* before the wait as well as after it: the events of the linger come in
             * one wake-up */
            lingered = true;
            atomic_fetch_add_explicit(&stream_lingers, 1, memory_order_relaxed);
            store__linger(&t->wmu, WATCH_LINGER_NS);
            continue;
        }
        if (w->pos < t->tail) {
            uint64_t ready = t->ring[w->pos % t->cap].commit_ms + delay;
            if (!lingered && t->tail - w->pos < WATCH_BATCH / 2 &&
                atomic_load_explicit(&t->nwatchers, memory_order_relaxed) >= WATCH_LINGER_FANOUT &&
                util_now_ns() - w->last_take_ns < WATCH_STREAM_NS) {
                lingered = true;
                store__linger(&t->wmu, WATCH_LINGER_NS);
                continue;
            }
            if (!delay || ready <= now) {
                uint64_t took = w->nb, now_ns;
                while (w->nb < WATCH_BATCH && w->pos < t->tail) {
                    struct wev *ev = &t->ring[w->pos % t->cap];
                    if (delay && ev->commit_ms + delay > now)
                        break;
                    w->batch[w->nb] = *ev;
                    store_obj_ref(ev->obj);
                    store_obj_ref(ev->prev);
                    w->nb++;
                    w->pos++;
                }
                now_ns = util_now_ns();
                took = w->nb - took;
                w->streaming = (came_away || took >= WATCH_LINGER_MIN_EVENTS) &&
                               took * (uint64_t)WATCH_LINGER_NS >=
                               WATCH_LINGER_MIN_EVENTS * (now_ns - w->last_take_ns);
                w->last_take_ns = now_ns;
                rc = 0;
                break;
            }
            if (ready < wake)
                wake = ready;
        } else if (w->bookmarks) {
            committed = atomic_load_explicit(&w->s->committed_rv, memory_order_acquire);
            if (now >= w->next_bookmark_ms) {
                w->next_bookmark_ms = now + w->s->bookmark_ms;
                *bookmark_rv = committed ? committed : 1;
                rc = 0;
                break;
            }
            if (w->next_bookmark_ms < wake)
                wake = w->next_bookmark_ms;
        }
        if (now >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        abstime_after(&ts, wake > now ? wake - now : 0);
        pthread_cond_timedwait(&t->wcond, &t->wmu, &ts);
    }
    pthread_mutex_unlock(&t->wmu);
    return rc;
}

/* Turns a ring event into what this watcher sees (selector transitions). */
static int watch_convert(struct store_watch *w, struct wev *ev, struct store_event *out)
{
    bool cur = watch_matches(w, ev->obj);
    /* equal labels and no field selector: the old version matched as the new one does */
    bool old = ev->type == EV_MODIFIED && ev->prev &&
               (ev->same_labels && !w->fields ? cur : watch_matches(w, ev->prev));
    struct store_obj *o = NULL;

    switch (ev->type) {
    case EV_ADDED:
    case EV_DELETED:
        if (!cur)
            return 0;
        out->type = ev->type;
        o = store_obj_ref(ev->obj);
        break;
    case EV_MODIFIED:
        if (cur) {
            out->type = old ? EV_MODIFIED : EV_ADDED;
            o = store_obj_ref(ev->obj);
        } else if (old) {
            /* stopped matching: the previous content, at the new rv */
            out->type = EV_DELETED;
            o = store__obj_with_rv(ev->prev, ev->rv);
            if (!o)
                return -ENOMEM;
        } else {
            return 0;
        }
        break;
    default:
        return 0;
    }
    if (w->stored && w->res != w->stored && !w->res->builtin) {
        struct store_obj *c = store__obj_as(o, w->res);
        store_obj_unref(o);
        o = c;
        if (!o)
            return -ENOMEM;
    }
    out->obj = o;
    out->rv = ev->rv;
    return 1;
}

int store_watch_next(struct store_watch *w, int timeout_ms, struct store_event *ev)
{
    uint64_t deadline = util_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);

    memset(ev, 0, sizeof(*ev));
    if (w->ended || atomic_load(&w->cancelled))
        return -EPIPE;
    if (w->expired) {
        ev->type = EV_ERROR;
        ev->status = w->expired_st;
        w->expired_st.causes = NULL;
        w->ended = true;
        return 0;
    }
    if (w->i_initial < w->n_initial) {
        struct store_obj *o = w->initial[w->i_initial];
        w->initial[w->i_initial++] = NULL;
        ev->type = EV_ADDED;
        ev->obj = store__obj_as(o, w->res);
        ev->rv = o->rv;
        store_obj_unref(o);
        return ev->obj ? 0 : -ENOMEM;
    }
    if (w->end_bookmark) {
        w->end_bookmark = false;
        ev->type = EV_BOOKMARK;
        ev->rv = w->initial_rv;
        ev->initial_events_end = true;
        return 0;
    }
    for (;;) {
        uint64_t bm;
        int rc;

        while (w->ib < w->nb) {
            struct wev *b = &w->batch[w->ib++];
            rc = watch_convert(w, b, ev);
            store_obj_unref(b->obj);
            store_obj_unref(b->prev);
            if (rc < 0)
                return rc;
            if (rc > 0)
                return 0;
        }
        w->ib = w->nb = 0;
        rc = watch_refill(w, deadline, &bm);
        if (rc == -EPIPE)
            w->ended = true;
        if (rc)
            return rc;
        if (bm) {
            ev->type = EV_BOOKMARK;
            ev->rv = bm;
            return 0;
        }
    }
}

void store_watch_cancel(struct store_watch *w)
{
    atomic_store(&w->cancelled, true);
    pthread_mutex_lock(&w->t->wmu);
    pthread_cond_broadcast(&w->t->wcond);
    pthread_mutex_unlock(&w->t->wmu);
}

void store_watch_close(struct store_watch *w)
{
    if (!w)
        return;
    for (size_t i = w->i_initial; i < w->n_initial; i++)
        store_obj_unref(w->initial[i]);
    free(w->initial);
    for (size_t i = w->ib; i < w->nb; i++) {
        store_obj_unref(w->batch[i].obj);
        store_obj_unref(w->batch[i].prev);
    }
    store_status_clear(&w->expired_st);
    atomic_fetch_sub(&w->s->watchers, 1);
    atomic_fetch_sub(&w->t->nwatchers, 1);
    free(w->ns);
    free(w);
}

void store_event_clear(struct store_event *ev)
{
    if (!ev)
        return;
    store_obj_unref(ev->obj);
    store_status_clear(&ev->status);
    memset(ev, 0, sizeof(*ev));
}

/*
 * sync.c - the watcher's engine: per (type, namespace) stream, LIST (paged)
 * then WATCH from the list's resourceVersion with bookmarks; every event is
 * applied to the cache first, then mapped to keys (types.c) and added to the
 * queues (list items and the start resync on the low-priority lane), and only
 * then is the stream's resourceVersion stored (a crash in between re-delivers
 * the event on resume instead of losing it; the queue's gate reads that rv).
 *
 * LISTs run on the libuv threadpool so the loop keeps serving the queues; the
 * list thread hands pages to the loop thread (the cache's single writer)
 * through a two-page buffer, so a 100,000-object list never sits in memory
 * whole. A resumed stream (segment re-attached, type synced, rv stored)
 * starts with a WATCH from the stored rv and lists only if that gets 410.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "kobj/kobj.h"
#include "util/util.h"
#include "watcher/internal.h"

#define BACKOFF_MIN_MS 200u
#define BACKOFF_MAX_MS 30000u
#define MAP_KEYS_MAX   16

struct seen_key {
    UT_hash_handle hh;
    char key[CACHE_NS_MAX + CACHE_NAME_MAX + 2];
};

int watcher__sync_seen(void *ud, const char *type, const char *rv)
{
    struct watcher *w = ud;
    struct cache_type_info ti;
    if (!w->cache)
        return 0; /* a DONE in the instant before the segment is open: gate it */
    int id = cache_type_lookup(w->cache, type);
    if (id < 0 || cache_type_info(w->cache, id, &ti) < 0)
        return 1; /* a type we do not cache cannot gate anyone */
    return ti.rv[0] && kobj_rv_cmp(ti.rv, rv) >= 0;
}

static const char *sname(const struct wstream *s)
{
    return watcher_types[s->t].cache_type;
}

static const char *sns(const struct wstream *s)
{
    return s->ns ? s->ns : "";
}

/* ---- queues ---------------------------------------------------------------- */

/* low: the keys of a list (initial or relist) go to the low-priority lane, so that
 * after a start with many cached objects a real event's key overtakes them (what
 * controller-runtime does for the initial list). */
static void enqueue(struct watcher *w, int t, enum watcher_ev ev, const cJSON *obj,
                    const cJSON *old, bool low)
{
    struct watcher_key keys[MAP_KEYS_MAX];
    int n = watcher_map_event(t, ev, obj, old, keys, MAP_KEYS_MAX);
    for (int i = 0; i < n; i++) {
        int rc = low ? ipc_server_add_low(w->ipc, keys[i].queue, keys[i].key)
                     : ipc_server_add(w->ipc, keys[i].queue, keys[i].key);
        if (rc < 0)
            log_warn("enqueue failed", "queue", keys[i].queue, "key", keys[i].key,
                     "error", strerror(-rc), NULL);
    }
}


struct resync_arg {
    struct watcher *w;
    const char *queue;
    size_t n;
};

static int resync_visit(const struct cache_obj *o, void *arg)
{
    struct resync_arg *a = arg;
    char key[IPC_KEY_MAX];
    int len = snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    if (len > 0 && (size_t)len < sizeof(key) && ipc_server_add_low(a->w->ipc, a->queue, key) == 0)
        a->n++;
    return 0;
}

int watcher__sync_resync(struct watcher *w)
{
    size_t total = 0;
    for (size_t t = 0; t < watcher_ntypes; t++) {
        if (!watcher_types[t].queue)
            continue;
        int id = cache_type_lookup(w->cache, watcher_types[t].cache_type);
        if (id < 0)
            continue;
        struct resync_arg a = { w, watcher_types[t].queue, 0 };
        int rc = cache_foreach(w->cache, id, NULL, resync_visit, &a);
        if (rc < 0)
            return rc;
        total += a.n;
    }
    char n[32];
    snprintf(n, sizeof(n), "%zu", total);
    log_info("resync: cached primary keys queued", "keys", n, NULL);
    return 0;
}

/* ---- cache updates ---------------------------------------------------------- */

/*
 * Stores obj and enqueues what it maps to. from_list: skip the keys when the
 * cache already holds this resourceVersion (a relist of an unchanged object).
 * The previous object is decoded only when the mapping needs it: for
 * predicate-filtered primaries, and when the controller owner changed.
 */
static void apply_put(struct wstream *s, const cJSON *obj, int from_list)
{
    struct watcher *w = s->w;
    const struct watcher_type *ty = &watcher_types[s->t];
    const char *ns = kobj_meta_str(obj, "namespace"), *name = kobj_meta_str(obj, "name");
    const char *rv = kobj_meta_str(obj, "resourceVersion");
    const char *owner_uid = kobj_controller_uid(obj);
    struct cache_meta old_meta;
    cJSON *old = NULL;
    bool created = false;

    if (!name)
        return;
    int have_old = cache_stat(w->cache, s->cid, ns ? ns : "", name, &old_meta) == 0;
    if (have_old && from_list && rv && strcmp(old_meta.rv, rv) == 0)
        return;
    if (have_old && (ty->filter_meta_only || strcmp(old_meta.owner_uid, owner_uid ? owner_uid : "") != 0))
        (void)cache_get_json(w->cache, s->cid, ns ? ns : "", name, &old);

    int rc = cache_put(w->cache, s->cid, obj, &created);
    if (rc < 0) {
        /* the cache logs and counts refusals; the key still goes out so a
         * reconciler can act (it will miss the object in the cache) */
        log_error("cache put failed", "type", sname(s), "namespace", ns, "name", name,
                  "error", strerror(-rc), NULL);
    }
    enqueue(w, s->t, have_old ? WATCHER_EV_UPDATE : WATCHER_EV_ADD, obj, old, from_list);
    cJSON_Delete(old);
}

static void apply_delete(struct wstream *s, const cJSON *obj)
{
    const char *ns = kobj_meta_str(obj, "namespace"), *name = kobj_meta_str(obj, "name");
    if (!name)
        return;
    int rc = cache_delete(s->w->cache, s->cid, ns ? ns : "", name);
    if (rc < 0 && rc != -ENOENT)
        log_error("cache delete failed", "type", sname(s), "namespace", ns, "name", name,
                  "error", strerror(-rc), NULL);
    enqueue(s->w, s->t, WATCHER_EV_DELETE, obj, NULL, false);
}

/* The type's stored rv is the oldest of its streams' (one per namespace), so a
 * resume from it never skips an event in any namespace. */
static void store_type_rv(struct watcher *w, int t)
{
    const char *min = NULL;
    int cid = -1;
    for (size_t i = 0; i < w->nstreams; i++) {
        struct wstream *s = &w->streams[i];
        if (s->t != t)
            continue;
        cid = s->cid;
        if (!s->rv[0])
            return;
        if (!min || kobj_rv_cmp(s->rv, min) < 0)
            min = s->rv;
    }
    if (min && cache_set_rv(w->cache, cid, min) == 0)
        w->progress_dirty = 1;
}

static void store_type_synced(struct watcher *w, int t)
{
    int cid = -1;
    for (size_t i = 0; i < w->nstreams; i++) {
        if (w->streams[i].t != t)
            continue;
        if (!w->streams[i].synced)
            return;
        cid = w->streams[i].cid;
    }
    if (cid >= 0)
        (void)cache_set_synced(w->cache, cid, true);
}

static void log_all_synced(struct watcher *w)
{
    if (w->synced_logged)
        return;
    for (size_t i = 0; i < w->nstreams; i++)
        if (!w->streams[i].synced && !w->streams[i].absent)
            return;
    w->synced_logged = 1;
    char ms[32];
    snprintf(ms, sizeof(ms), "%.1f", (double)(util_now_ns() - w->start_ns) / 1e6);
    log_info("all types synced", "ms", ms, NULL);
}

/* ---- backoff ------------------------------------------------------------------ */

static void start_list(struct wstream *s);
static void start_watch(struct wstream *s);

static void retry_cb(uv_timer_t *t)
{
    struct wstream *s = t->data;
    if (s->w->stopping)
        return;
    if (s->need_list)
        start_list(s);
    else
        start_watch(s);
}

/* Exponential backoff with equal jitter: half the step fixed, half random. */
static bool transport_error(int err)
{
    return err == -ECONNREFUSED || err == -EHOSTUNREACH || err == -ETIMEDOUT ||
           err == -ECONNRESET || err == -ENETUNREACH || err == -ENOTCONN;
}

/* A list or watch of s failed with err. Said once, clearly, then retried with
 * back-off in silence (debug) until it works again: an unreachable server is
 * one warning naming its URL for the whole watcher, not one per type and
 * retry; a type the server does not serve names its CRD and how to install
 * it (the batch-scheduler types are optional: info). */
static void report_failure(struct wstream *s, const char *what, int err, const char *message)
{
    struct watcher *w = s->w;
    const struct watcher_type *ty = &watcher_types[s->t];
    bool repeat = s->last_err == err;
    s->last_err = err;
    if (transport_error(err)) {
        if (!w->unreachable)
            log_warn("cannot reach the API server; retrying with back-off (up to 30 s apart)",
                     "server", w->server, "error", kube_strerror(err), NULL);
        else
            log_debug(what, "type", sname(s), "error", kube_strerror(err), NULL);
        w->unreachable = 1;
        return;
    }
    if (repeat) {
        log_debug(what, "type", sname(s), "namespace", sns(s), "error", kube_strerror(err),
                  "message", message, NULL);
        return;
    }
    if (err == -ENOENT) {
        char crd[200];
        snprintf(crd, sizeof(crd), "%s.%s", ty->plural, ty->group);
        if (strcmp(ty->group, "ray.io") == 0)
            log_warn("the API server does not serve this type: KubeRay's CRD is not installed. "
                     "Install KubeRay's CRDs (kubectl create -f DIR/crds/ with KubeRay's "
                     "ray-operator/config/crd/bases, or the kuberay-operator Helm chart); "
                     "retrying with back-off", "type", sname(s), "crd", crd, NULL);
        else
            log_info("optional type not served by the API server (its CRD is not installed); "
                     "watched once it is", "type", sname(s), "crd", crd, NULL);
        return;
    }
    log_warn(what, "type", sname(s), "namespace", sns(s), "error", kube_strerror(err),
             "message", message, NULL);
}

/* s listed or saw an event: failures are news again */
static void report_success(struct wstream *s)
{
    if (s->w->unreachable) {
        s->w->unreachable = 0;
        log_info("the API server is reachable again", "server", s->w->server, NULL);
    }
    s->last_err = 0;
}

/* Not one of KubeRay's own types: a 404 means an optional API (optional.c). */
static bool optional_type(const struct wstream *s)
{
    return strcmp(watcher_types[s->t].group, "ray.io") != 0;
}

static void schedule_retry(struct wstream *s)
{
    s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (s->backoff_ms > BACKOFF_MAX_MS)
        s->backoff_ms = BACKOFF_MAX_MS;
    uint64_t d = s->backoff_ms / 2 + (uint64_t)rand() % (s->backoff_ms / 2 + 1);
    uv_timer_start(&s->retry, retry_cb, d, 0);
}

/* ---- watch --------------------------------------------------------------------- */

static void on_event(struct kube_watch *kw, struct kube_event *ev, void *arg)
{
    struct wstream *s = arg;
    (void)kw;
    if (s->last_err || s->w->unreachable)
        report_success(s);
    switch (ev->type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
        if (ev->object)
            apply_put(s, ev->object, 0);
        break;
    case KUBE_EVENT_DELETED:
        if (ev->object)
            apply_delete(s, ev->object);
        break;
    case KUBE_EVENT_BOOKMARK:
        break;
    case KUBE_EVENT_ERROR:
        return; /* on_end follows with the Status */
    }
    s->events++;
    s->backoff_ms = 0;
    if (ev->resource_version && ev->resource_version[0] &&
        strlen(ev->resource_version) < sizeof(s->rv)) {
        strcpy(s->rv, ev->resource_version);
        store_type_rv(s->w, s->t);
    }
}

static void on_end(struct kube_watch *kw, int err, const struct kube_status *st, void *arg)
{
    struct wstream *s = arg;
    (void)kw;
    s->watch = NULL;
    if (s->w->stopping)
        return;
    if (err == 0) {
        /* the server closed it (timeout): resume where we were, unless it keeps
         * closing at once (a broken proxy would otherwise make this a busy loop) */
        if (util_now_ns() - s->watch_start_ns < 1000000000ull)
            schedule_retry(s);
        else
            start_watch(s);
        return;
    }
    if (err == -KUBE_EGONE) {
        log_info("resourceVersion expired, relisting", "type", sname(s), "namespace", sns(s),
                 "rv", s->rv, NULL);
        s->need_list = 1;
        start_list(s);
        return;
    }
    report_failure(s, "watch ended", err, st ? st->message : NULL);
    if (err == -ENOENT && optional_type(s) && s->w->on_absent) {
        s->w->on_absent(s);   /* its CRD went: wait for it to come back */
        log_all_synced(s->w);
        return;
    }
    if (err == -ENOENT)
        s->need_list = 1; /* resource not served (CRD missing): list when it appears */
    schedule_retry(s);
}

static void start_watch(struct wstream *s)
{
    const struct watcher_type *ty = &watcher_types[s->t];
    struct kube_watch_opts o = {
        .resource_version = s->rv,
        .label_selector = ty->label_selector,
        .allow_bookmarks = 1,
        /* client-go picks 5-10 min so watches of many types do not all end together */
        .timeout_seconds = 300 + rand() % 300,
        .on_event = on_event,
        .on_end = on_end,
        .arg = s,
    };
    s->watches++;
    s->watch_start_ns = util_now_ns();
    int rc = kube_watch_start(s->w->kw, &s->res, s->ns, &o, &s->watch);
    if (rc < 0) {
        s->watch = NULL;
        report_failure(s, "watch start failed", rc, NULL);
        schedule_retry(s);
    }
}

/* ---- list -------------------------------------------------------------------- */

/* List thread: hands each page's items to the loop, at most WATCHER_LIST_PAGES ahead. */
static int list_page(void *arg, cJSON *list)
{
    struct wstream *s = arg;
    cJSON *items = cJSON_DetachItemFromObjectCaseSensitive(list, "items");
    if (!items)
        items = cJSON_CreateArray();
    if (!items)
        return -ENOMEM;
    pthread_mutex_lock(&s->mu);
    while (s->npages >= WATCHER_LIST_PAGES && !s->w->stopping)
        pthread_cond_wait(&s->cv, &s->mu);
    int stop = s->w->stopping;
    if (!stop)
        s->pages[s->npages++] = items;
    pthread_mutex_unlock(&s->mu);
    if (stop) {
        cJSON_Delete(items);
        return -ECANCELED;
    }
    uv_async_send(&s->w->pages_async);
    return 0;
}

static void list_work(uv_work_t *req)
{
    struct wstream *s = req->data;
    struct kube_list_opts o = { .label_selector = watcher_types[s->t].label_selector,
                                .limit = 500 };
    char rv[CACHE_RV_MAX] = "";
    int rc = kube_list_each(s->w->kc, &s->res, s->ns, &o, list_page, s, rv, sizeof(rv));
    pthread_mutex_lock(&s->mu);
    s->list_rc = rc;
    memcpy(s->list_rv, rv, sizeof(rv));
    pthread_mutex_unlock(&s->mu);
}

static void seen_add(struct wstream *s, const char *ns, const char *name)
{
    struct seen_key *k = calloc(1, sizeof(*k));
    if (!k)
        return; /* worst case the sweep re-checks an object the server still has */
    snprintf(k->key, sizeof(k->key), "%s/%s", ns, name);
    struct seen_key *dup;
    HASH_FIND_STR(s->seen, k->key, dup);
    if (dup) {
        free(k);
        return;
    }
    HASH_ADD_STR(s->seen, key, k);
}

static void seen_clear(struct wstream *s)
{
    struct seen_key *k, *tmp;
    HASH_ITER(hh, s->seen, k, tmp) {
        HASH_DEL(s->seen, k);
        free(k);
    }
}

static void apply_items(struct wstream *s, cJSON *items)
{
    const struct watcher_type *ty = &watcher_types[s->t];
    cJSON *it;
    cJSON_ArrayForEach(it, items) {
        /* list items carry no kind/apiVersion; readers want them like watch objects */
        if (!cJSON_GetObjectItemCaseSensitive(it, "kind"))
            cJSON_AddStringToObject(it, "kind", ty->kind);
        if (!cJSON_GetObjectItemCaseSensitive(it, "apiVersion"))
            cJSON_AddStringToObject(it, "apiVersion", ty->api_version);
        apply_put(s, it, 1);
        if (s->track_seen) {
            const char *ns = kobj_meta_str(it, "namespace"), *name = kobj_meta_str(it, "name");
            if (name)
                seen_add(s, ns ? ns : "", name);
        }
    }
}

static void drain_pages(struct wstream *s)
{
    cJSON *pages[WATCHER_LIST_PAGES];
    int n;
    pthread_mutex_lock(&s->mu);
    n = s->npages;
    memcpy(pages, s->pages, sizeof(pages));
    s->npages = 0;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++) {
        apply_items(s, pages[i]);
        cJSON_Delete(pages[i]);
    }
}

static void pages_cb(uv_async_t *a)
{
    struct watcher *w = a->data;
    for (size_t i = 0; i < w->nstreams; i++)
        if (w->streams[i].listing)
            drain_pages(&w->streams[i]);
}

struct sweep {
    struct wstream *s;
    struct cache_key *gone;
    size_t n, cap;
};

static int sweep_visit(const struct cache_obj *o, void *arg)
{
    struct sweep *sw = arg;
    struct seen_key *k;
    char key[sizeof(k->key)];
    snprintf(key, sizeof(key), "%s/%s", o->ns, o->name);
    HASH_FIND_STR(sw->s->seen, key, k);
    if (k)
        return 0;
    if (util_array_grow(&sw->gone, sizeof(*sw->gone), sw->n, &sw->cap, 64) < 0)
        return -ENOMEM;
    snprintf(sw->gone[sw->n].ns, CACHE_NS_MAX, "%s", o->ns);
    snprintf(sw->gone[sw->n].name, CACHE_NAME_MAX, "%s", o->name);
    sw->n++;
    /* the deleted object's owners hear about it, as with a DELETED event */
    cJSON *obj = NULL;
    if (cache_decode(o->data, o->len, &obj) == 0) {
        enqueue(sw->s->w, sw->s->t, WATCHER_EV_DELETE, obj, NULL, false);
        cJSON_Delete(obj);
    }
    return 0;
}

/* After a relist: objects in the cache the list did not return were deleted
 * while we were not watching. */
static int sweep_unseen(struct wstream *s)
{
    struct sweep sw = { s, NULL, 0, 0 };
    int rc = cache_foreach(s->w->cache, s->cid, s->ns, sweep_visit, &sw);
    for (size_t i = 0; i < sw.n; i++)
        (void)cache_delete(s->w->cache, s->cid, sw.gone[i].ns, sw.gone[i].name);
    if (sw.n) {
        char n[32];
        snprintf(n, sizeof(n), "%zu", sw.n);
        log_info("relist removed objects the server no longer has", "type", sname(s),
                 "namespace", sns(s), "count", n, NULL);
    }
    free(sw.gone);
    return rc < 0 ? rc : 0;
}

static void maybe_close_async(struct watcher *w);

static void list_after(uv_work_t *req, int status)
{
    struct wstream *s = req->data;
    struct watcher *w = s->w;
    drain_pages(s);
    s->listing = 0;
    if (w->stopping || status == UV_ECANCELED) {
        seen_clear(s);
        maybe_close_async(w);
        return;
    }
    if (s->list_rc < 0) {
        report_failure(s, "list failed", s->list_rc, NULL);
        seen_clear(s);
        /* not served (404): an optional type such as a batch scheduler's PodGroup whose CRD
         * is not installed must not keep /readyz at 503; it is listed again on the retry */
        s->absent = s->list_rc == -ENOENT;
        if (s->absent)
            log_all_synced(w);
        if (s->absent && optional_type(s) && w->on_absent)
            w->on_absent(s);
        else
            schedule_retry(s);
        return;
    }
    s->absent = 0;
    if (s->track_seen)
        (void)sweep_unseen(s);
    seen_clear(s);
    snprintf(s->rv, sizeof(s->rv), "%s", s->list_rv);
    s->need_list = 0;
    s->synced = 1;
    s->backoff_ms = 0;
    report_success(s);
    store_type_rv(w, s->t);
    store_type_synced(w, s->t);
    log_info("listed", "type", sname(s), "namespace", sns(s), "rv", s->rv, NULL);
    log_all_synced(w);
    start_watch(s);
}

static void start_list(struct wstream *s)
{
    struct cache_type_info ti;
    s->lists++;
    s->need_list = 1;
    s->listing = 1;
    s->npages = 0;
    s->list_rc = 0;
    s->list_rv[0] = '\0';
    s->track_seen = cache_type_info(s->w->cache, s->cid, &ti) == 0 && ti.objects > 0;
    s->work.data = s;
    int rc = uv_queue_work(s->w->loop, &s->work, list_work, list_after);
    if (rc < 0) {
        s->listing = 0;
        log_error("cannot queue list", "type", sname(s), "error", uv_strerror(rc), NULL);
        schedule_retry(s);
    }
}

void watcher__sync_relist(struct wstream *s)
{
    start_list(s);
}

/* ---- lifecycle ------------------------------------------------------------------- */

static void check_cb(uv_check_t *h)
{
    struct watcher *w = h->data;
    /* once per loop iteration, i.e. after each batch of events */
    if (w->progress_dirty) {
        w->progress_dirty = 0;
        ipc_server_progress(w->ipc);
    }
}

int watcher__sync_init(struct watcher *w, const char *const *namespaces, size_t nns)
{
    size_t per = nns ? nns : 1;
    if (watcher_ntypes > WATCHER_TYPES_MAX)
        return -E2BIG;
    w->streams = calloc(watcher_ntypes * per, sizeof(*w->streams));
    if (!w->streams)
        return -ENOMEM;
    for (size_t t = 0; t < watcher_ntypes; t++) {
        const struct watcher_type *ty = &watcher_types[t];
        int cid = cache_type_ensure(w->cache, ty->cache_type);
        if (cid < 0)
            return cid;
        struct cache_type_info ti;
        int have = cache_type_info(w->cache, cid, &ti) == 0;
        for (size_t j = 0; j < per; j++) {
            struct wstream *s = &w->streams[w->nstreams++];
            s->w = w;
            s->t = (int)t;
            s->cid = cid;
            s->ns = nns ? namespaces[j] : NULL;
            s->res = (struct kube_resource){ ty->group, ty->version, ty->plural, 1 };
            pthread_mutex_init(&s->mu, NULL);
            pthread_cond_init(&s->cv, NULL);
            uv_timer_init(w->loop, &s->retry);
            s->retry.data = s;
            /* resume from the stored rv only if the type finished a list before */
            if (have && ti.synced && ti.rv[0]) {
                snprintf(s->rv, sizeof(s->rv), "%s", ti.rv);
                s->synced = 1;
            } else {
                s->need_list = 1;
            }
        }
    }
    w->pages_async.data = w;
    int rc = uv_async_init(w->loop, &w->pages_async, pages_cb);
    if (rc < 0)
        return rc;
    uv_check_init(w->loop, &w->check);
    w->check.data = w;
    uv_check_start(&w->check, check_cb);
    w->handles_ready = 1;
    return 0;
}

void watcher__sync_start(struct watcher *w)
{
    for (size_t i = 0; i < w->nstreams; i++) {
        struct wstream *s = &w->streams[i];
        if (s->need_list) {
            start_list(s);
        } else {
            log_info("resuming watch from stored resourceVersion", "type", sname(s),
                     "namespace", sns(s), "rv", s->rv, NULL);
            start_watch(s);
        }
    }
    log_all_synced(w);
}

static void maybe_close_async(struct watcher *w)
{
    if (!w->stopping || w->async_closed)
        return;
    for (size_t i = 0; i < w->nstreams; i++)
        if (w->streams[i].listing)
            return;
    w->async_closed = 1;
    uv_close((uv_handle_t *)&w->pages_async, NULL);
}

void watcher__sync_stop(struct watcher *w)
{
    w->stopping = 1;
    for (size_t i = 0; i < w->nstreams; i++) {
        struct wstream *s = &w->streams[i];
        pthread_mutex_lock(&s->mu);
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        if (s->watch) {
            kube_watch_stop(s->watch);
            s->watch = NULL;
        }
        uv_close((uv_handle_t *)&s->retry, NULL);
    }
    if (w->handles_ready) {
        uv_close((uv_handle_t *)&w->check, NULL);
        maybe_close_async(w);
    }
}

void watcher__sync_free(struct watcher *w)
{
    for (size_t i = 0; i < w->nstreams; i++) {
        struct wstream *s = &w->streams[i];
        for (int p = 0; p < s->npages; p++)
            cJSON_Delete(s->pages[p]);
        seen_clear(s);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    free(w->streams);
    w->streams = NULL;
    w->nstreams = 0;
}

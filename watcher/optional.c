/*
 * optional.c - types the API server may not serve (the batch schedulers' PodGroups
 * and Workloads: their CRDs are installed by the user, or not at all). A LIST that
 * says 404 is the discovery: the type is marked absent, does not hold up "all types
 * synced", and is not listed again on a back-off timer (that was about 15 LISTs per
 * type and namespace in the first 20 s, each answered 404). Instead one WATCH of the
 * CRD itself (customresourcedefinitions, fieldSelector metadata.name=PLURAL.GROUP)
 * waits for it to be created and Established; then every stream of the type lists.
 *
 * A type of a built-in group (*.k8s.io: the server turns it on with a flag, no CRD
 * will appear) and a CRD watch the server refuses (no RBAC to read CRDs) fall back to
 * listing again on a slow back-off (1 minute, then up to 10 minutes apart).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "util/util.h"
#include "watcher/internal.h"

#define SLOW_RETRY_MIN_MS 60000u
#define SLOW_RETRY_MAX_MS 600000u

static const struct kube_resource crd_res = { "apiextensions.k8s.io", "v1",
                                              "customresourcedefinitions", 0 };

/* A CRD can only bring a type back when its group is not one of Kubernetes' own. */
static bool crd_backed(const struct watcher_type *ty)
{
    size_t n = strlen(ty->group);
    return n && strcmp(ty->group, "k8s.io") != 0 &&
           !(n > 7 && strcmp(ty->group + n - 7, ".k8s.io") == 0);
}

/* The CRD, Established, serving the type's version. */
static bool crd_serves(const cJSON *crd, const struct watcher_type *ty)
{
    const cJSON *c, *v, *st = kobj_get(crd, "status");
    bool established = false, served = false;

    cJSON_ArrayForEach(c, kobj_get(st, "conditions"))
        if (kobj_str(c, "type") && !strcmp(kobj_str(c, "type"), "Established") &&
            kobj_str(c, "status") && !strcmp(kobj_str(c, "status"), "True"))
            established = true;
    cJSON_ArrayForEach(v, kobj_get(kobj_get(crd, "spec"), "versions"))
        if (kobj_str(v, "name") && !strcmp(kobj_str(v, "name"), ty->version) &&
            cJSON_IsTrue(kobj_get(v, "served")))
            served = true;
    return established && served;
}

static void slow_retry_cb(uv_timer_t *t)
{
    struct wstream *s = t->data;

    if (!s->w->stopping && s->absent && !s->listing)
        watcher__sync_relist(s);
}

/* Lists s again after a minute, doubling to ten (the fallback without a CRD watch). */
static void slow_retry(struct wstream *s)
{
    s->backoff_ms = s->backoff_ms < SLOW_RETRY_MIN_MS ? SLOW_RETRY_MIN_MS : s->backoff_ms * 2;
    if (s->backoff_ms > SLOW_RETRY_MAX_MS)
        s->backoff_ms = SLOW_RETRY_MAX_MS;
    uv_timer_start(&s->retry, slow_retry_cb, s->backoff_ms, 0);
}

static void crd_start(struct watcher *w, int t);

static void crd_on_event(struct kube_watch *kw, struct kube_event *ev, void *arg)
{
    struct watcher *w = arg;
    const struct watcher_type *ty = NULL;
    const char *name;
    int t = -1;

    if ((ev->type != KUBE_EVENT_ADDED && ev->type != KUBE_EVENT_MODIFIED) || !ev->object)
        return;
    name = kobj_meta_str(ev->object, "name");
    for (size_t i = 0; i < watcher_ntypes && name; i++)
        if (w->crd_watch[i] == kw) {
            t = (int)i;
            ty = &watcher_types[i];
        }
    if (!ty || !crd_serves(ev->object, ty))
        return;
    log_info("optional type's CRD is installed; listing it", "type", ty->cache_type, "crd",
             name, NULL);
    kube_watch_stop(kw);
    w->crd_watch[t] = NULL;
    for (size_t i = 0; i < w->nstreams; i++) {
        struct wstream *s = &w->streams[i];
        if (s->t == t && s->absent && !s->listing) {
            uv_timer_stop(&s->retry);
            s->backoff_ms = 0;
            watcher__sync_relist(s);
        }
    }
}

static void crd_on_end(struct kube_watch *kw, int err, const struct kube_status *st, void *arg)
{
    struct watcher *w = arg;
    int t = -1;

    for (size_t i = 0; i < watcher_ntypes; i++)
        if (w->crd_watch[i] == kw)
            t = (int)i;
    if (t < 0)
        return;
    w->crd_watch[t] = NULL;
    if (w->stopping)
        return;
    if (err == 0) {   /* the server's timeout: watch on (the CRD is re-sent if it exists) */
        crd_start(w, t);
        return;
    }
    log_info("cannot watch for the optional type's CRD; listing it again every few minutes",
             "type", watcher_types[t].cache_type, "error", kube_strerror(err), "message",
             st && st->message[0] ? st->message : "", NULL);
    w->crd_refused[t] = 1;
    for (size_t i = 0; i < w->nstreams; i++)
        if (w->streams[i].t == t && w->streams[i].absent)
            slow_retry(&w->streams[i]);
}

static void crd_start(struct watcher *w, int t)
{
    const struct watcher_type *ty = &watcher_types[t];
    char sel[300];
    struct kube_watch_opts o = {
        .field_selector = sel,
        .timeout_seconds = 300 + rand() % 300,
        .on_event = crd_on_event,
        .on_end = crd_on_end,
        .arg = w,
    };
    int rc;

    snprintf(sel, sizeof(sel), "metadata.name=%s.%s", ty->plural, ty->group);
    rc = kube_watch_start(w->kw, &crd_res, NULL, &o, &w->crd_watch[t]);
    if (rc < 0) {
        w->crd_watch[t] = NULL;
        log_info("cannot watch for the optional type's CRD; listing it again every few "
                 "minutes", "type", ty->cache_type, "error", kube_strerror(rc), NULL);
        w->crd_refused[t] = 1;
        for (size_t i = 0; i < w->nstreams; i++)
            if (w->streams[i].t == t && w->streams[i].absent)
                slow_retry(&w->streams[i]);
    }
}

void watcher__optional_absent(struct wstream *s)
{
    struct watcher *w = s->w;
    const struct watcher_type *ty = &watcher_types[s->t];

    s->absent = 1;
    s->need_list = 1;
    if (!crd_backed(ty) || w->crd_refused[s->t]) {
        slow_retry(s);
        return;
    }
    if (!w->crd_watch[s->t])
        crd_start(w, s->t);
}

void watcher__optional_stop(struct watcher *w)
{
    for (size_t i = 0; i < watcher_ntypes; i++) {
        if (w->crd_watch[i])
            kube_watch_stop(w->crd_watch[i]);
        w->crd_watch[i] = NULL;
    }
}

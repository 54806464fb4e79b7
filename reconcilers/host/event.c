/*
 * event.c - the Kubernetes Event recorder every controller kind uses
 * (host_event in host.h).
 *
 * KubeRay v1.7 records through controller-runtime's GetEventRecorder, i.e.
 * client-go's tools/events: events.k8s.io/v1 Events named
 * "<regarding name>.<unix nanos in hex>" in the regarding object's namespace,
 * reportingController "<kind>-controller", reportingInstance
 * "<kind>-controller-<hostname>", an action and a note. Repeats are folded the
 * way that recorder does: the first occurrence creates the Event, the second
 * sets series {count: 2, lastObservedTime}, later ones bump the series, written
 * at most once per HOST_EVENT_SERIES_FLUSH_MS (client-go refreshes series on a
 * 30 min heartbeat; we write sooner so `kubectl get events` counts move). A
 * series unobserved for 6 minutes is forgotten, as client-go's finishSeries.
 *
 * Events are not cached by the watcher, so the writes go to kube/ directly and
 * are NOT recorded for read-your-writes (recording them would hold the key back
 * until the ryw timeout). A failed Event write is logged and otherwise ignored,
 * as client-go drops events it cannot write: reconciles never fail on Events.
 *
 * Once host_events_start has run (the controller host does), the writes leave
 * the reconcile: one writer thread sends them in order from a queue of at most
 * EV_QUEUE_MAX, dropping past that, as client-go's broadcaster does (its
 * maxQueuedEvents, DropIfChannelFull). A reconcile that creates Pods thus waits
 * for the creates only, not for an Event after each. The writes take the client's own Events
 * bucket (kube/ limits per resource), as KubeRay's recorder has its own client.
 * Without the writer (tools, unit tests) host_event writes before returning.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "reconcilers/host/internal.h"
#include "util/util.h"

#define EV_SLOTS 512                        /* remembered series (per process) */
#define EV_SERIES_TTL_MS (6 * 60 * 1000)    /* client-go finishSeries: 6 min */
#define HOST_EVENT_SERIES_FLUSH_MS 10000
#define EV_NOTE_MAX 1024                    /* client-go's note length limit */
#define EV_QUEUE_MAX 1000                   /* client-go's maxQueuedEvents */

const struct kube_resource HOST_RES_EVENTS_V1 = { "events.k8s.io", "v1", "events", 1 };

struct ev_slot {
    uint64_t hash;                 /* 0: free */
    char ns[64];
    char name[320];                /* the Event object's name */
    int32_t count;
    int32_t written_count;         /* count the server has */
    uint64_t last_seen_ms, last_write_ms;
};

static struct {
    pthread_mutex_t mu;
    struct ev_slot slots[EV_SLOTS];
} ev = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    h ^= 0xff;   /* field separator: ("ab","c") != ("a","bc") */
    return h * 1099511628211ull;
}

static const char *meta_str(const cJSON *obj, const char *field)
{
    const char *s = kobj_meta_str(obj, field);
    return s ? s : "";
}

static const char *str_or(const cJSON *obj, const char *field, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

static void host__event_reporter(const struct host_ctx *ctx, char *controller, size_t ccap,
                          char *instance, size_t icap)
{
    char host[128] = "";
    if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
        snprintf(host, sizeof(host), "unknown");
    const char *kind = ctx && ctx->kind ? ctx->kind->name : "rayop";
    snprintf(controller, ccap, "%s-controller", kind);
    snprintf(instance, icap, "%s-controller-%s", kind, host);
}

/* The Event object (events.k8s.io/v1). Caller owns. */
static cJSON *event_build(const struct host_ctx *ctx, const cJSON *obj, const char *name,
                          const char *type, const char *reason, const char *action,
                          const char *note, const char *when)
{
    char rc_name[128], inst[320];
    host__event_reporter(ctx, rc_name, sizeof(rc_name), inst, sizeof(inst));
    cJSON *e = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(e, "metadata");
    cJSON *r = cJSON_AddObjectToObject(e, "regarding");
    if (!e || !m || !r) {
        cJSON_Delete(e);
        return NULL;
    }
    cJSON_AddStringToObject(e, "apiVersion", "events.k8s.io/v1");
    cJSON_AddStringToObject(e, "kind", "Event");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", meta_str(obj, "namespace"));
    cJSON_AddStringToObject(e, "eventTime", when);
    cJSON_AddStringToObject(e, "reportingController", rc_name);
    cJSON_AddStringToObject(e, "reportingInstance", inst);
    cJSON_AddStringToObject(e, "action", action);
    cJSON_AddStringToObject(e, "reason", reason);
    cJSON_AddStringToObject(e, "note", note);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddStringToObject(r, "apiVersion", str_or(obj, "apiVersion", ""));
    cJSON_AddStringToObject(r, "kind", str_or(obj, "kind", ""));
    cJSON_AddStringToObject(r, "namespace", meta_str(obj, "namespace"));
    cJSON_AddStringToObject(r, "name", meta_str(obj, "name"));
    cJSON_AddStringToObject(r, "uid", meta_str(obj, "uid"));
    cJSON_AddStringToObject(r, "resourceVersion", meta_str(obj, "resourceVersion"));
    return e;
}

/* The slot for hash: the matching one, else a free or expired one, else the
 * least recently seen (its series is simply forgotten). Called locked. */
static struct ev_slot *slot_for(uint64_t hash, uint64_t now, bool *found)
{
    struct ev_slot *victim = NULL;
    size_t start = (size_t)(hash % EV_SLOTS);
    for (size_t i = 0; i < EV_SLOTS; i++) {
        struct ev_slot *s = &ev.slots[(start + i) % EV_SLOTS];
        if (s->hash == hash && now - s->last_seen_ms < EV_SERIES_TTL_MS) {
            *found = true;
            return s;
        }
        if (s->hash == 0 || now - s->last_seen_ms >= EV_SERIES_TTL_MS) {
            if (!victim || victim->hash != 0)
                victim = s;
            if (s->hash == 0 && i > 16)
                break;   /* probing far past a free slot: the key is not here */
        } else if (!victim || (victim->hash != 0 && s->last_seen_ms < victim->last_seen_ms)) {
            victim = s;
        }
    }
    *found = false;
    memset(victim, 0, sizeof(*victim));
    return victim;
}

static void now_micro(char out[40])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    util_format_microtime(&ts, out);
}

/* ---- the writer ------------------------------------------------------------ */

/* One Event write: a create, or a series patch that falls back to creating the
 * Event when it is gone (deleted by its TTL meanwhile). */
static int ev_write(struct kube_client *kc, const char *ns, const char *name, const char *patch,
                    const cJSON *event)
{
    struct kube_result kr = { 0 };
    int rc;
    if (patch) {
        struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
        rc = kube_patch(kc, &HOST_RES_EVENTS_V1, ns, name, patch, strlen(patch), &po, &kr);
        kube_result_release(&kr);
        if (rc != -ENOENT)
            return rc;
    }
    rc = kube_create(kc, &HOST_RES_EVENTS_V1, ns, event, &kr);
    kube_result_release(&kr);
    return rc;
}

struct ev_job {
    struct ev_job *next;
    struct kube_client *kc;     /* borrowed: host_events_stop runs before the client goes */
    char ns[64], name[320], reason[128];
    char *patch;                /* NULL: create */
    cJSON *event;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    struct ev_job *head, *tail;
    size_t queued;
    bool running, stopping, busy;
    uint64_t stop_by_ms;        /* stopping: writes still attempted until then */
    uint64_t dropped;
    pthread_t thread;
} wq = { .mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
         .idle = PTHREAD_COND_INITIALIZER };

static void job_free(struct ev_job *j)
{
    if (!j)
        return;
    free(j->patch);
    cJSON_Delete(j->event);
    free(j);
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wq.mu);
    for (;;) {
        while (!wq.head && !wq.stopping)
            pthread_cond_wait(&wq.wake, &wq.mu);
        struct ev_job *j = wq.head;
        if (!j)
            break;   /* stopping and drained */
        wq.head = j->next;
        if (!wq.head)
            wq.tail = NULL;
        wq.queued--;
        bool late = wq.stopping && util_now_ms() >= wq.stop_by_ms;
        if (late)
            wq.dropped++;
        wq.busy = true;
        pthread_mutex_unlock(&wq.mu);
        if (!late) {
            int rc = ev_write(j->kc, j->ns, j->name, j->patch, j->event);
            if (rc < 0)
                log_warn("could not record an Event", "namespace", j->ns, "event", j->name,
                         "reason", j->reason, "error", kube_strerror(rc), NULL);
        }
        job_free(j);
        pthread_mutex_lock(&wq.mu);
        wq.busy = false;
        if (!wq.head)
            pthread_cond_broadcast(&wq.idle);
    }
    pthread_mutex_unlock(&wq.mu);
    return NULL;
}

int host_events_start(void)
{
    int rc = 0;
    pthread_mutex_lock(&wq.mu);
    if (!wq.running) {
        wq.stopping = false;
        rc = -pthread_create(&wq.thread, NULL, writer_main, NULL);
        wq.running = rc == 0;
    }
    pthread_mutex_unlock(&wq.mu);
    return rc;
}

int host__events_flush(uint64_t timeout_ms)
{
    struct timespec until;
    util_deadline_ms(&until, (long)timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&wq.mu);
    while (wq.running && (wq.head || wq.busy) && rc == 0)
        rc = -pthread_cond_timedwait(&wq.idle, &wq.mu, &until);
    pthread_mutex_unlock(&wq.mu);
    return rc;
}

void host_events_stop(uint64_t timeout_ms)
{
    pthread_mutex_lock(&wq.mu);
    if (!wq.running) {
        pthread_mutex_unlock(&wq.mu);
        return;
    }
    wq.stopping = true;
    wq.stop_by_ms = util_now_ms() + timeout_ms;
    pthread_cond_broadcast(&wq.wake);
    pthread_mutex_unlock(&wq.mu);
    pthread_join(wq.thread, NULL);
    pthread_mutex_lock(&wq.mu);
    wq.running = false;
    uint64_t dropped = wq.dropped;
    pthread_mutex_unlock(&wq.mu);
    if (dropped) {
        char n[24];
        snprintf(n, sizeof(n), "%" PRIu64, dropped);
        log_warn("Events dropped (queue full, or still queued at exit)", "count", n, NULL);
    }
}

uint64_t host__events_dropped(void)
{
    pthread_mutex_lock(&wq.mu);
    uint64_t n = wq.dropped;
    pthread_mutex_unlock(&wq.mu);
    return n;
}

/* Hands the write to the writer thread; false when it is not running. Takes
 * event and patch either way. */
static bool ev_enqueue(struct kube_client *kc, const char *ns, const char *name,
                       const char *reason, char *patch, cJSON *event, int *rc)
{
    pthread_mutex_lock(&wq.mu);
    if (!wq.running || wq.stopping) {
        pthread_mutex_unlock(&wq.mu);
        return false;
    }
    struct ev_job *j = NULL;
    *rc = 0;
    if (wq.queued >= EV_QUEUE_MAX) {
        /* client-go's broadcaster drops when its queue is full; so do we */
        bool first = wq.dropped++ == 0;
        pthread_mutex_unlock(&wq.mu);
        if (first)
            log_warn("Event queue full; dropping Events", "reason", reason, NULL);
        *rc = -EAGAIN;
        goto out;
    }
    if (!(j = calloc(1, sizeof(*j)))) {
        pthread_mutex_unlock(&wq.mu);
        *rc = -ENOMEM;
        goto out;
    }
    j->kc = kc;
    snprintf(j->ns, sizeof(j->ns), "%s", ns);
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->reason, sizeof(j->reason), "%s", reason);
    j->patch = patch;
    j->event = event;
    if (wq.tail)
        wq.tail->next = j;
    else
        wq.head = j;
    wq.tail = j;
    wq.queued++;
    pthread_cond_signal(&wq.wake);
    pthread_mutex_unlock(&wq.mu);
    return true;
out:
    free(patch);
    cJSON_Delete(event);
    return true;
}

int host_event(struct host_ctx *ctx, const cJSON *obj, const char *type, const char *reason,
               const char *action, const char *fmt, ...)
{
    char note[EV_NOTE_MAX + 1], when[40], name[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof(note), fmt, ap);   /* truncated at 1024 as client-go */
    va_end(ap);
    if (!ctx || !cJSON_IsObject(obj) || !type || !reason || !action)
        return -EINVAL;
    const char *ons = meta_str(obj, "namespace"), *oname = meta_str(obj, "name");
    if (!*oname)
        return -EINVAL;
    uint64_t h = 1469598103934665603ull;
    h = fnv(h, ctx->kind ? ctx->kind->name : "");
    h = fnv(h, ons);
    h = fnv(h, oname);
    h = fnv(h, meta_str(obj, "uid"));
    h = fnv(h, type);
    h = fnv(h, reason);
    h = fnv(h, action);
    h = fnv(h, note);
    if (h == 0)
        h = 1;
    now_micro(when);
    uint64_t now = util_now_ms();

    struct kube_client *kc = host_kube(ctx);
    if (!kc)
        return -ENOTCONN;
    bool found;
    int32_t count = 0;
    bool write_series = false;
    pthread_mutex_lock(&ev.mu);
    struct ev_slot *s = slot_for(h, now, &found);
    if (found) {
        s->count++;
        s->last_seen_ms = now;
        /* the second occurrence is written at once (client-go does), later ones
         * at most every flush period */
        if (s->written_count < 2 || now - s->last_write_ms >= HOST_EVENT_SERIES_FLUSH_MS) {
            write_series = true;
            s->written_count = s->count;
            s->last_write_ms = now;
        }
        count = s->count;
        snprintf(name, sizeof(name), "%s", s->name);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(name, sizeof(name), "%.253s.%" PRIx64, oname,
                 (uint64_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec));
        s->hash = h;
        s->count = s->written_count = 1;
        s->last_seen_ms = s->last_write_ms = now;
        snprintf(s->ns, sizeof(s->ns), "%s", ons);
        snprintf(s->name, sizeof(s->name), "%s", name);
    }
    pthread_mutex_unlock(&ev.mu);

    if (found && !write_series)
        return 0;
    char *patch = NULL;
    if (found && asprintf(&patch, "{\"series\":{\"count\":%" PRId32 ",\"lastObservedTime\":\"%s\"}}",
                          count, when) < 0)
        return -ENOMEM;
    cJSON *e = event_build(ctx, obj, name, type, reason, action, note, when);
    if (!e) {
        free(patch);
        return -ENOMEM;
    }
    int rc;
    if (ev_enqueue(kc, ons, name, reason, patch, e, &rc))
        return rc;
    rc = ev_write(kc, ons, name, patch, e);
    free(patch);
    cJSON_Delete(e);
    if (rc < 0)
        host_log(ctx, LOG_WARN, "could not record an Event", "reason", reason,
                 "error", kube_strerror(rc), NULL);
    return rc;
}

void host__event_forget_all(void)
{
    pthread_mutex_lock(&ev.mu);
    memset(ev.slots, 0, sizeof(ev.slots));
    pthread_mutex_unlock(&ev.mu);
}

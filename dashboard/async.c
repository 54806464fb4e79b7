/*
 * async.c - dashboard calls off the reconcile worker, so a slow or dead Ray head delays
 * only its own RayJob or RayService (ray-project/kuberay#2646, #3907, #4087: reconciles
 * queued behind dashboard calls). Both the RayJob and the RayService controllers use it.
 *
 * A reconcile asks for a call by a key (its object, cluster and operation); the call runs
 * on its own thread with the client's deadline (2 s direct, 10 s proxied) and the
 * reconcile waits for it at most wait_ms. A dashboard that answers in time changes
 * nothing; one that does not gives -EINPROGRESS: the reconcile keeps what it knew and
 * looks again shortly, and the answer, when it comes, is taken by that later reconcile.
 *
 * A dashboard whose last answer took longer than wait_ms is not waited for at all: with
 * a hundred RayJobs on one slow head, waiting even a fraction of a second per poll would
 * again fill the worker's time. The memory of slow dashboards is keyed by the target's
 * base address and forgotten after SLOW_KEEP_MS.
 *
 * At most one call per key is in flight (no pile-up of POSTs or PUTs); finished answers
 * nobody took are dropped after KEEP_MS; at most DASH_ASYNC_MAX calls exist at once.
 *
 * A call borrows its target's kube client (proxied calls) and outlives the reconcile that
 * started it: a controller stopping on SIGTERM must not free the client under a call still
 * out, so it asks dash_async_stop() first (the chaos soak's heap-use-after-free: a
 * RayService controller freed its client while a Serve status call was waiting for a slow
 * head, and the call's thread woke into the freed client).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

#include "dashboard/dashboard.h"
#include "util/util.h"

#define KEEP_MS 60000
#define SLOW_KEEP_MS 600000
#define SLOW_MAX 4096

struct call {
    char *key;
    struct dash_target t;
    char method[8];
    char *path, *body;
    size_t len;
    bool done;
    int rc;
    struct dash_reply reply;
    uint64_t start_ms, done_ms;
    UT_hash_handle hh;
};

/* how long a target's last answer took */
struct slow {
    char base[sizeof(((struct dash_target *)0)->base)];
    uint64_t took_ms, at_ms;
    UT_hash_handle hh;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct call *calls;
static struct slow *slows;
static bool stopped;   /* dash_async_stop: no call starts any more */

static uint64_t now_ms(void)
{
    return util_now_ns() / 1000000;
}

static void call_free(struct call *c)
{
    dash_target_wipe(&c->t);   /* it may carry a Ray token */
    dash_reply_free(&c->reply);
    free(c->key);
    free(c->path);
    free(c->body);
    free(c);
}

/* remembers how long base took (mu held); an allocation failure only forgets */
static void slow_note(const char *base, uint64_t took, uint64_t now)
{
    struct slow *s = NULL;
    HASH_FIND_STR(slows, base, s);
    if (!s) {
        if (HASH_COUNT(slows) >= SLOW_MAX || !(s = calloc(1, sizeof(*s))))
            return;
        snprintf(s->base, sizeof(s->base), "%s", base);
        HASH_ADD_STR(slows, base, s);
    }
    s->took_ms = took;
    s->at_ms = now;
}

static void *run(void *arg)
{
    struct call *c = arg;
    struct dash_reply rep = { 0 };
    int rc = dash_call(&c->t, c->method, c->path, c->body, c->len, &rep);
    pthread_mutex_lock(&mu);
    c->rc = rc;
    c->reply = rep;
    c->done = true;
    c->done_ms = now_ms();
    slow_note(c->t.base, c->done_ms - c->start_ms, c->done_ms);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static bool same_request(const struct call *c, const char *method, const char *path,
                         const char *body, size_t len)
{
    return !strcmp(c->method, method) && !strcmp(c->path, path) && c->len == len &&
           (len == 0 || !memcmp(c->body, body, len));
}

/* drops answers nobody came back for and old memories of slowness (mu held) */
static void sweep(uint64_t now)
{
    struct call *c, *tmp;
    struct slow *s, *stmp;
    HASH_ITER(hh, calls, c, tmp)
        if (c->done && now - c->done_ms > KEEP_MS) {
            HASH_DEL(calls, c);
            call_free(c);
        }
    HASH_ITER(hh, slows, s, stmp)
        if (now - s->at_ms > SLOW_KEEP_MS) {
            HASH_DEL(slows, s);
            free(s);
        }
}

/* true when t's last answer (or the call still out for it) took longer than wait_ms */
static bool known_slow(const struct dash_target *t, const struct call *c, int wait_ms,
                       uint64_t now)
{
    struct slow *s = NULL;
    if (c && !c->done && now - c->start_ms > (uint64_t)wait_ms)
        return true;
    HASH_FIND_STR(slows, t->base, s);
    return s && s->took_ms > (uint64_t)wait_ms;
}

static int start(const char *key, const struct dash_target *t, const char *method,
                 const char *path, const char *body, size_t len, uint64_t now, struct call **out)
{
    struct call *c;
    if (stopped)
        return -ESHUTDOWN;
    if (HASH_COUNT(calls) >= DASH_ASYNC_MAX)
        return -EBUSY;
    if (!(c = calloc(1, sizeof(*c))) || !(c->key = strdup(key)) || !(c->path = strdup(path)) ||
        (len && !(c->body = malloc(len + 1)))) {
        if (c)
            call_free(c);
        return -ENOMEM;
    }
    c->t = *t;
    snprintf(c->method, sizeof(c->method), "%s", method);
    if (len) {
        memcpy(c->body, body, len);
        c->body[len] = '\0';
    }
    c->len = len;
    c->start_ms = now;
    if (util_thread_detached(run, c) < 0) {
        call_free(c);
        return -EAGAIN;
    }
    HASH_ADD_KEYPTR(hh, calls, c->key, strlen(c->key), c);
    *out = c;
    return 0;
}

int dash_async_call(const char *key, const struct dash_target *t, const char *method,
                    const char *path, const char *body, size_t len, int wait_ms,
                    struct dash_reply *out)
{
    struct call *c = NULL;
    struct timespec until;
    int rc = -EINPROGRESS;
    memset(out, 0, sizeof(*out));
    if (!key || !t || !method || !path || (len && !body) || wait_ms < 0)
        return -EINVAL;
    pthread_mutex_lock(&mu);
    uint64_t now = now_ms();
    sweep(now);
    HASH_FIND_STR(calls, key, c);
    if (c && c->done && !same_request(c, method, path, body, len)) {
        /* the answer to an earlier, different request (an older config): not ours */
        HASH_DEL(calls, c);
        call_free(c);
        c = NULL;
    }
    if (c && !c->done && !same_request(c, method, path, body, len))
        goto out;   /* an earlier request still runs: this one is asked again later */
    if (!c && (rc = start(key, t, method, path, body, len, now, &c)) < 0)
        goto out;
    rc = -EINPROGRESS;
    if (!c->done && !known_slow(t, c, wait_ms, now)) {
        util_deadline_ms(&until, wait_ms);
        while (!c->done)
            if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
                break;
    }
    if (c->done) {
        rc = c->rc;
        *out = c->reply;
        memset(&c->reply, 0, sizeof(c->reply));
        HASH_DEL(calls, c);
        call_free(c);
    }
out:
    pthread_mutex_unlock(&mu);
    return rc;
}

bool dash_async_pending(const char *key, const char *method)
{
    struct call *c = NULL;
    bool pending;
    if (!key || !method)
        return false;
    pthread_mutex_lock(&mu);
    sweep(now_ms());
    HASH_FIND_STR(calls, key, c);
    pending = c && !strcmp(c->method, method);
    pthread_mutex_unlock(&mu);
    return pending;
}

size_t dash_async_in_flight(void)
{
    struct call *c, *tmp;
    size_t n = 0;
    pthread_mutex_lock(&mu);
    HASH_ITER(hh, calls, c, tmp)
        n += !c->done;
    pthread_mutex_unlock(&mu);
    return n;
}

int dash_async_stop(uint64_t timeout_ms)
{
    struct call *c, *tmp;
    struct timespec until;
    size_t out;
    util_deadline_ms(&until, (long)timeout_ms);
    pthread_mutex_lock(&mu);
    stopped = true;
    bool late = false;
    for (;;) {
        out = 0;
        HASH_ITER(hh, calls, c, tmp)
            out += !c->done;
        if (out == 0 || late)
            break;
        late = pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT;   /* counted once more */
    }
    if (out == 0)
        HASH_ITER(hh, calls, c, tmp) {
            HASH_DEL(calls, c);
            call_free(c);
        }
    pthread_mutex_unlock(&mu);
    return out == 0 ? 0 : -ETIMEDOUT;
}

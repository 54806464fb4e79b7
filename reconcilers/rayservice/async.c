/*
 * async.c - dashboard calls off the worker thread, so a slow or dead Ray head delays only
 * its own RayService (ray-project/kuberay#3907, #4087: reconciles queued behind dashboard
 * calls). A reconcile asks for a call by a key (RayService, cluster, operation); the call
 * runs on its own thread with the client's deadline (2 s direct, 10 s proxied) and the
 * reconcile waits for it at most RS_ASYNC_WAIT_MS. A dashboard that answers in time changes
 * nothing; one that does not gives -EINPROGRESS: the reconcile keeps what it knew and
 * looks again shortly, and the answer, when it comes, is taken by that later reconcile.
 * At most one call per key is in flight (no pile-up of PUTs); finished answers nobody took
 * are dropped after a minute; at most RS_ASYNC_MAX calls exist at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

#include "reconcilers/rayservice/internal.h"
#include "util/util.h"

#define RS_ASYNC_MAX 256
#define RS_ASYNC_KEEP_MS 60000

struct call {
    char *key;
    struct dash_target t;
    char method[8];
    char *path, *body;
    size_t len;
    bool done;
    int rc;
    struct dash_reply reply;
    uint64_t done_ms;
    UT_hash_handle hh;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct call *calls;

static void call_free(struct call *c)
{
    dash_target_wipe(&c->t);   /* it may carry a Ray token */
    dash_reply_free(&c->reply);
    free(c->key);
    free(c->path);
    free(c->body);
    free(c);
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
    c->done_ms = util_now_ns() / 1000000;
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

/* drops answers nobody came back for (called with mu held) */
static void sweep(uint64_t now)
{
    struct call *c, *tmp;
    HASH_ITER(hh, calls, c, tmp)
        if (c->done && now - c->done_ms > RS_ASYNC_KEEP_MS) {
            HASH_DEL(calls, c);
            call_free(c);
        }
}

int rs_async_call(const char *key, const struct dash_target *t, const char *method,
                  const char *path, const char *body, size_t len, int wait_ms,
                  struct dash_reply *out)
{
    struct call *c = NULL;
    struct timespec until;
    int rc = -EINPROGRESS;
    memset(out, 0, sizeof(*out));
    util_deadline_ms(&until, wait_ms);
    pthread_mutex_lock(&mu);
    sweep(util_now_ns() / 1000000);
    HASH_FIND_STR(calls, key, c);
    if (c && c->done && !same_request(c, method, path, body, len)) {
        /* the answer to an earlier, different request (an older config): not ours */
        HASH_DEL(calls, c);
        call_free(c);
        c = NULL;
    }
    if (c && !c->done && !same_request(c, method, path, body, len))
        goto out;   /* an earlier request still runs: this one is asked again later */
    if (!c) {
        pthread_t th;
        pthread_attr_t at;
        if (HASH_COUNT(calls) >= RS_ASYNC_MAX) {
            rc = -EBUSY;
            goto out;
        }
        if (!(c = calloc(1, sizeof(*c))) || !(c->key = strdup(key)) || !(c->path = strdup(path)) ||
            (len && !(c->body = malloc(len + 1)))) {
            if (c)
                call_free(c);
            rc = -ENOMEM;
            goto out;
        }
        c->t = *t;
        snprintf(c->method, sizeof(c->method), "%s", method);
        if (len) {
            memcpy(c->body, body, len);
            c->body[len] = '\0';
        }
        c->len = len;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, run, c) != 0) {
            pthread_attr_destroy(&at);
            call_free(c);
            rc = -EAGAIN;
            goto out;
        }
        pthread_attr_destroy(&at);
        HASH_ADD_KEYPTR(hh, calls, c->key, strlen(c->key), c);
    }
    while (!c->done)
        if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
            break;
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

size_t rs_async_in_flight(void)
{
    struct call *c, *tmp;
    size_t n = 0;
    pthread_mutex_lock(&mu);
    HASH_ITER(hh, calls, c, tmp)
        n += !c->done;
    pthread_mutex_unlock(&mu);
    return n;
}

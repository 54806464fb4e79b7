/*
 * watch.c - streaming watches: many long-lived GET ?watch=1 transfers on one
 * curl multi handle, driven by a libuv loop with the standard
 * curl_multi_socket_action integration (a uv_poll_t per socket curl asks us
 * to watch, one uv_timer_t for curl's timeouts, one "gate" timer for watch
 * starts the QPS limiter held back).
 *
 * Each transfer's body is split into lines by stream.c (one JSON event per
 * line, as the API server writes them); a line longer than the configured
 * bound ends the watch with -EMSGSIZE rather than growing without limit.
 * Every event is parsed once and handed to the caller with its raw bytes, so
 * a consumer that needs both never parses twice.
 *
 * Lifetimes: curl forbids adding or removing transfers from inside its own
 * callbacks, so kube_watch_stop()/kube_watch_start() called while curl is
 * dispatching only mark the watch; after_dispatch() frees or adds it once
 * curl returns. A stopped watch never gets on_end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"

#define WATCH_DEFAULT_MAX_LINE (8u << 20)
#define WATCH_ERROR_BODY_MAX (1u << 20)
#define WATCH_TIMEOUT_SLACK_S 30

struct sockctx {
    uv_poll_t poll;
    curl_socket_t fd;
    struct kube_watcher *wd;
    struct sockctx *prev, *next;
};

struct kube_watcher {
    struct kube_client *client;
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;          /* curl's timeouts */
    uv_timer_t gate;           /* starts watches the QPS limiter held back */
    int open_handles;          /* timers not yet closed; the struct goes with the last */
    struct sockctx *socks;
    struct kube_watch *watches;
    int dispatching;           /* inside curl_multi_socket_action */
    int closing;               /* inside curl_multi_cleanup: do not call back into curl */
};

struct kube_watch {
    struct kube_watcher *wd;
    struct kube_watch *prev, *next;
    struct kube_watch_opts o;
    CURL *easy;
    struct curl_slist *headers;
    struct buf url;
    struct kube_lines lines;   /* 200: the event stream being framed */
    struct buf errbody;        /* non-200: the (bounded) Status body */
    long http_code;            /* 0 until the first body byte */
    int err;                   /* first error seen (ends the watch) */
    int stopped;               /* kube_watch_stop while curl was dispatching */
    int added;                 /* easy handle is in the multi */
    int finishing;             /* on_end running: the watch is freed after it */
    uint64_t not_before;       /* uv_now() before which the limiter holds it back */
    int saw_error_event;
    struct kube_status error_status;
    char last_rv[128];
};

/* ---- events ------------------------------------------------------------------ */

/* kube_line_cb for one complete line: hook, parse, deliver. Nonzero ends the feed. */
static int watch_line(void *arg, const char *p, size_t len)
{
    struct kube_watch *w = arg;
    struct kube_event ev;
    struct kube_status st;

    if (w->o.on_line != NULL) {
        int consumed = w->o.on_line(w, p, len, w->o.arg);
        if (w->stopped)
            return 1;
        if (consumed)
            return 0;
    }
    if (kube__event_parse(p, len, &ev, &st) < 0)
        return -EPROTO;
    if (ev.type == KUBE_EVENT_ERROR) {
        w->error_status = st;
        w->saw_error_event = 1;
        ev.status = &w->error_status;
    } else if (ev.resource_version[0] != '\0') {
        snprintf(w->last_rv, sizeof(w->last_rv), "%s", ev.resource_version);
    }
    if (w->o.on_event != NULL)
        w->o.on_event(w, &ev, w->o.arg);
    cJSON_Delete(ev.object); /* NULL when the callback kept it */
    return w->stopped ? 1 : 0;
}

static size_t on_watch_body(char *p, size_t size, size_t n, void *arg)
{
    struct kube_watch *w = arg;
    size_t len = size * n;

    if (w->stopped || w->err != 0)
        return 0;
    if (w->http_code == 0)
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->http_code);
    if (w->http_code != 200) {
        /* An error response: keep (a bounded amount of) the Status body. */
        if (w->errbody.len + len > WATCH_ERROR_BODY_MAX)
            return len;
        return buf_append(&w->errbody, p, len) < 0 ? 0 : len;
    }
    int rc = kube__lines_feed(&w->lines, p, len, watch_line, w);
    if (rc < 0)
        w->err = rc;
    return (rc != 0 || w->stopped) ? 0 : len;
}

/* ---- lifecycle -------------------------------------------------------------- */

static void watch_free(struct kube_watch *w)
{
    struct kube_watcher *wd = w->wd;
    if (w->easy != NULL) {
        if (w->added)
            curl_multi_remove_handle(wd->multi, w->easy);
        curl_easy_cleanup(w->easy);
    }
    if (w->prev != NULL)
        w->prev->next = w->next;
    else if (wd->watches == w)
        wd->watches = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    curl_slist_free_all(w->headers);
    buf_free(&w->url);
    kube__lines_release(&w->lines);
    buf_free(&w->errbody);
    free(w);
}

/* The transfer is over: report how it ended and free the watch. */
static void watch_finish(struct kube_watch *w, CURLcode cc)
{
    struct kube_status st = { 0 };
    const struct kube_status *stp = NULL;
    int err = w->err;

    if (w->stopped) {
        watch_free(w);
        return;
    }
    if (w->http_code == 0)
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->http_code);
    if (err == 0 && cc == CURLE_OK && w->http_code != 200) {
        if (kube_status_parse(w->errbody.data, w->errbody.len, &st) < 0 || st.code == 0)
            kube__status_from_code(&st, (int)w->http_code, NULL);
        err = kube_status_errno(&st);
        stp = &st;
        if (w->http_code == 401) {
            /* Re-read a rotated token now so the caller's next watch carries it. */
            char *tok = NULL;
            if (kube_config_token(w->wd->client->cfg, 1, &tok) == 0 && tok != NULL) {
                explicit_bzero(tok, strlen(tok));
                free(tok);
            }
        }
    } else if (err == 0 && cc != CURLE_OK) {
        err = kube__errno_from_curl((int)cc);
        snprintf(st.message, sizeof(st.message), "%s", curl_easy_strerror(cc));
        stp = &st;
    } else if (err == 0) {
        /* A last event without its newline. */
        w->wd->dispatching = 1; /* a stop from the callback must not free w under us */
        err = kube__lines_finish(&w->lines, watch_line, w);
        w->wd->dispatching = 0;
        if (err > 0)
            err = 0;
        if (w->stopped) {
            watch_free(w);
            return;
        }
    }
    if (err == 0 && w->saw_error_event) {
        err = kube_status_errno(&w->error_status);
        stp = &w->error_status;
    }
    log_debug("kube watch ended", "url", w->url.data, "error", err ? kube_strerror(err) : NULL,
              NULL);
    w->finishing = 1;
    if (w->o.on_end != NULL)
        w->o.on_end(w, err, stp, w->o.arg);
    watch_free(w);
}

static void check_multi_info(struct kube_watcher *wd)
{
    CURLMsg *msg;
    int pending;

    while ((msg = curl_multi_info_read(wd->multi, &pending)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct kube_watch *w = NULL;
        CURLcode cc = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
        if (w != NULL)
            watch_finish(w, cc);
    }
}

/*
 * Runs after every dispatch, outside curl: frees watches stopped from inside
 * callbacks and adds transfers started from inside them (curl refuses both
 * while it is dispatching).
 */
static void on_gate(uv_timer_t *t);

static void after_dispatch(struct kube_watcher *wd)
{
    struct kube_watch *w = wd->watches, *next;
    uint64_t now, earliest = UINT64_MAX;

    uv_update_time(wd->loop); /* the cached loop time may be a whole iteration old */
    now = uv_now(wd->loop);
    for (; w != NULL; w = next) {
        next = w->next;
        if (w->stopped) {
            watch_free(w);
        } else if (!w->added && w->not_before > now) {
            if (w->not_before < earliest)
                earliest = w->not_before;
        } else if (!w->added) {
            if (curl_multi_add_handle(wd->multi, w->easy) == CURLM_OK) {
                w->added = 1;
            } else {
                w->finishing = 1;
                if (w->o.on_end != NULL)
                    w->o.on_end(w, -ENOMEM, NULL, w->o.arg);
                watch_free(w);
                next = wd->watches; /* on_end may have changed the list */
            }
        }
    }
    if (earliest != UINT64_MAX)
        uv_timer_start(&wd->gate, on_gate, earliest - now, 0);
}

static void on_gate(uv_timer_t *t)
{
    after_dispatch(t->data);
}

static void dispatch(struct kube_watcher *wd, curl_socket_t fd, int flags)
{
    int running;
    wd->dispatching = 1;
    curl_multi_socket_action(wd->multi, fd, flags, &running);
    wd->dispatching = 0;
    check_multi_info(wd);
    after_dispatch(wd);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct sockctx *sc = h->data;
    struct kube_watcher *wd = sc->wd;
    int flags = 0;

    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    dispatch(wd, sc->fd, flags);
}

static void on_timer(uv_timer_t *t)
{
    dispatch(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *arg)
{
    struct kube_watcher *wd = arg;
    (void)m;
    if (timeout_ms < 0)
        uv_timer_stop(&wd->timer);
    else
        uv_timer_start(&wd->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

static void sock_closed(uv_handle_t *h)
{
    free(h->data);
}

static void sock_release(struct sockctx *sc)
{
    struct kube_watcher *wd = sc->wd;
    if (sc->prev != NULL)
        sc->prev->next = sc->next;
    else
        wd->socks = sc->next;
    if (sc->next != NULL)
        sc->next->prev = sc->prev;
    uv_poll_stop(&sc->poll);
    uv_close((uv_handle_t *)&sc->poll, sock_closed);
}

static int on_curl_socket(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp)
{
    struct kube_watcher *wd = arg;
    struct sockctx *sc = sockp;
    int events = 0;
    (void)e;

    if (what == CURL_POLL_REMOVE) {
        if (sc != NULL) {
            if (!wd->closing)
                curl_multi_assign(wd->multi, fd, NULL);
            sock_release(sc);
        }
        return 0;
    }
    if (sc == NULL) {
        sc = calloc(1, sizeof(*sc));
        if (sc == NULL)
            return -1;
        sc->fd = fd;
        sc->wd = wd;
        if (uv_poll_init_socket(wd->loop, &sc->poll, fd) < 0) {
            free(sc);
            return -1;
        }
        sc->poll.data = sc;
        sc->next = wd->socks;
        if (wd->socks != NULL)
            wd->socks->prev = sc;
        wd->socks = sc;
        curl_multi_assign(wd->multi, fd, sc);
    }
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    uv_poll_start(&sc->poll, events, on_poll);
    return 0;
}

int kube_watcher_new(struct kube_client *c, uv_loop_t *loop, struct kube_watcher **out)
{
    struct kube_watcher *wd;

    *out = NULL;
    wd = calloc(1, sizeof(*wd));
    if (wd == NULL)
        return -ENOMEM;
    wd->client = c;
    wd->loop = loop;
    wd->multi = curl_multi_init();
    if (wd->multi == NULL) {
        free(wd);
        return -ENOMEM;
    }
    uv_timer_init(loop, &wd->timer);
    wd->timer.data = wd;
    uv_timer_init(loop, &wd->gate);
    wd->gate.data = wd;
    wd->open_handles = 2;
    curl_multi_setopt(wd->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(wd->multi, CURLMOPT_SOCKETDATA, wd);
    curl_multi_setopt(wd->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(wd->multi, CURLMOPT_TIMERDATA, wd);
    *out = wd;
    return 0;
}

static void watcher_closed(uv_handle_t *h)
{
    struct kube_watcher *wd = h->data;
    if (--wd->open_handles == 0)
        free(wd);
}

void kube_watcher_free(struct kube_watcher *wd)
{
    if (wd == NULL)
        return;
    while (wd->watches != NULL) {
        wd->watches->stopped = 1;
        watch_free(wd->watches);
    }
    wd->closing = 1;
    curl_multi_cleanup(wd->multi);
    wd->multi = NULL;
    while (wd->socks != NULL)
        sock_release(wd->socks);
    uv_timer_stop(&wd->timer);
    uv_timer_stop(&wd->gate);
    /* The struct goes with the timers' close callbacks: run the loop once more. */
    uv_close((uv_handle_t *)&wd->timer, watcher_closed);
    uv_close((uv_handle_t *)&wd->gate, watcher_closed);
}

int kube_watch_start(struct kube_watcher *wd, const struct kube_resource *r, const char *ns,
                     const struct kube_watch_opts *opts, struct kube_watch **out)
{
    struct kube_client *c = wd->client;
    struct kube_list_opts lo = { 0 };
    struct kube_watch *w;
    char *path;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (opts == NULL || opts->on_event == NULL)
        return -EINVAL;
    path = kube_resource_path(r, ns, NULL, NULL);
    if (path == NULL)
        return -EINVAL;
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        free(path);
        return -ENOMEM;
    }
    w->wd = wd;
    w->o = *opts;
    kube__lines_init(&w->lines,
                     opts->max_line_bytes ? opts->max_line_bytes : WATCH_DEFAULT_MAX_LINE);
    if (opts->resource_version != NULL)
        snprintf(w->last_rv, sizeof(w->last_rv), "%s", opts->resource_version);
    /* The caller's strings are only needed to build the URL. */
    w->o.resource_version = w->o.resource_version_match = NULL;
    w->o.label_selector = w->o.field_selector = NULL;
    lo.label_selector = opts->label_selector;
    lo.field_selector = opts->field_selector;
    lo.resource_version = opts->resource_version;
    lo.resource_version_match = opts->resource_version_match;
    lo.timeout_seconds = opts->timeout_seconds;
    struct buf pq = { 0 };
    rc = buf_puts(&pq, path);
    if (rc == 0)
        rc = kube__append_list_query(&pq, &lo, 1, opts->allow_bookmarks,
                                     opts->send_initial_events);
    free(path);
    if (rc < 0)
        goto fail_pq;
    w->easy = curl_easy_init();
    if (w->easy == NULL) {
        rc = -ENOMEM;
        goto fail_pq;
    }
    rc = kube__easy_setup(c, w->easy, pq.data, &w->url);
    if (rc == 0)
        rc = kube__build_headers(c, NULL, NULL, 0, (void **)&w->headers);
    buf_free(&pq);
    if (rc < 0)
        goto fail;
    curl_easy_setopt(w->easy, CURLOPT_HTTPGET, 1L);
    /* The server ends the stream at timeoutSeconds; one that is still open well
     * after that is a half-open connection: give up instead of hanging forever. */
    if (opts->timeout_seconds > 0)
        curl_easy_setopt(w->easy, CURLOPT_TIMEOUT_MS,
                         ((long)opts->timeout_seconds + WATCH_TIMEOUT_SLACK_S) * 1000L);
    curl_easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->headers);
    curl_easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, on_watch_body);
    curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->easy, CURLOPT_PRIVATE, (char *)w);
    /* Watches count against the client's QPS limiter like any request, but the
     * loop must not block: a held-back watch waits for the gate timer. */
    uint64_t wait = kube__limiter_reserve(kube__limiter_for(c, r, true), kube__now(c));
    if (wait > 0) {
        atomic_fetch_add(&c->st_throttled_ns, wait);
        uv_update_time(wd->loop);
        w->not_before = uv_now(wd->loop) + (wait + 999999) / 1000000;
    } else if (!wd->dispatching) {
        if (curl_multi_add_handle(wd->multi, w->easy) != CURLM_OK) {
            rc = -ENOMEM;
            goto fail;
        }
        w->added = 1;
    }
    w->next = wd->watches;
    if (wd->watches != NULL)
        wd->watches->prev = w;
    wd->watches = w;
    if (wait > 0 && !wd->dispatching)
        after_dispatch(wd); /* arms the gate */
    atomic_fetch_add(&c->st_requests, 1);
    log_debug("kube watch", "url", w->url.data, NULL);
    if (out != NULL)
        *out = w;
    return 0;
fail_pq:
    buf_free(&pq);
fail:
    if (w->easy != NULL)
        curl_easy_cleanup(w->easy);
    w->easy = NULL;
    curl_slist_free_all(w->headers);
    buf_free(&w->url);
    free(w);
    return rc;
}

void kube_watch_stop(struct kube_watch *w)
{
    if (w == NULL || w->finishing)
        return;
    w->stopped = 1;
    if (!w->wd->dispatching)
        watch_free(w);
    /* else freed by after_dispatch once curl lets go */
}

const char *kube_watch_last_rv(const struct kube_watch *w)
{
    return w->last_rv;
}

/*
 * watch.c - watch streams: a chunked 200 whose reader blocks in
 * store_watch_next and writes newline-delimited {"type":...,"object":...}
 * events (one-row Tables when the client asked for Tables).
 *
 * Lifetime: a stream is registered in the server's list while open, so that
 * shutdown can cancel every watch and wait for the terminating zero-length
 * chunk to go out (client-node informers die on an abrupt close). The reader
 * wakes at least once a second to notice a client that went away (the socket
 * reports RDHUP) and returns an error so MHD drops the connection; MHD then
 * destroys the response, whose free callback closes the store watch. So no
 * watcher outlives its connection by more than about a second.
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/present/present.h"
#include "kubesim/schema/selector.h"
#include "kubesim/store/store.h"

#define WAKE_MS 1000

struct watch_stream {
    struct server *srv;
    struct watch_stream *prev, *next;
    struct store_watch *w;           /* NULL for a stream that only reports an error */
    const struct reg_resource *res;
    struct sel *labels;
    struct fsel *fields;
    bool table;
    char include[16];             /* includeObject for Table events */
    bool done;
    uint64_t deadline_ms;
    int fd;
    struct buf out;
    size_t off;
};

static const char *const event_names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };

static void render_bookmark(struct watch_stream *ws, const struct store_event *ev)
{
    char gv[300];

    api__api_version(ws->res, gv, sizeof(gv));
    buf_printf(&ws->out, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":"
               "{\"resourceVersion\":\"%llu\"", ws->res->kind, gv, (unsigned long long)ev->rv);
    if (ev->initial_events_end)
        buf_puts(&ws->out, ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}");
    buf_puts(&ws->out, "}}");
}

/* Appends one event line to ws->out. */
static void render_event(struct watch_stream *ws, struct store_event *ev)
{
    unsigned t = (unsigned)ev->type;

    buf_printf(&ws->out, "{\"type\":\"%s\",\"object\":", t < 5 ? event_names[t] : "ERROR");
    if (ev->type == EV_ERROR) {
        char *st = store_status_json(&ev->status);
        buf_puts(&ws->out, st ? st : "{}");
        free(st);
    } else if (ev->type == EV_BOOKMARK || !ev->obj) {
        render_bookmark(ws, ev);
    } else if (ws->table) {
        store_tree_scope_begin();   /* the tree is read for this row only */
        const cJSON *items[1] = { store_obj_json(ev->obj) };
        size_t before = ws->out.len;
        if (present_table(ws->res, items, 1, NULL, NULL, false, time(NULL), &ws->out) < 0 ||
            api__table_include(&ws->out, before, items, 1, ws->include) < 0) {
            ws->out.len = before;
            store_obj_text_append(ev->obj, &ws->out);
        }
        store_tree_scope_end();
    } else {
        store_obj_text_append(ev->obj, &ws->out);
    }
    buf_puts(&ws->out, "}\n");
}

/* The peer closed its end (or the socket broke): no one will read more events. */
static bool client_gone(const struct watch_stream *ws)
{
    struct pollfd p = { .fd = ws->fd, .events = POLLRDHUP };

    if (ws->fd < 0)
        return false;
    if (poll(&p, 1, 0) <= 0)
        return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static ssize_t watch_read(void *arg, char *buf, size_t max)
{
    struct watch_stream *ws = arg;
    struct store_event ev;

    for (;;) {
        if (ws->off < ws->out.len) {
            size_t n = ws->out.len - ws->off;
            if (n > max)
                n = max;
            memcpy(buf, ws->out.data + ws->off, n);
            ws->off += n;
            if (ws->off == ws->out.len) {
                buf_reset(&ws->out);
                ws->off = 0;
            }
            return (ssize_t)n;
        }
        if (ws->done || !ws->w)
            return SERVER_STREAM_END;

        uint64_t now = util_now_ms();
        if (now >= ws->deadline_ms || atomic_load(&ws->srv->stopping)) {
            ws->done = true;
            continue;
        }
        uint64_t left = ws->deadline_ms - now;
        int rc = store_watch_next(ws->w, left < WAKE_MS ? (int)left : WAKE_MS, &ev);
        if (rc == 0) {
            render_event(ws, &ev);
            if (ev.type == EV_ERROR)
                ws->done = true;
            store_event_clear(&ev);
            /* batch whatever is already queued, up to one buffer */
            while (!ws->done && ws->out.len < max &&
                   store_watch_next(ws->w, 0, &ev) == 0) {
                render_event(ws, &ev);
                if (ev.type == EV_ERROR)
                    ws->done = true;
                store_event_clear(&ev);
            }
        } else if (rc == -ETIMEDOUT) {
            if (client_gone(ws))
                return SERVER_STREAM_ABORT;
        } else {
            ws->done = true;   /* -EPIPE: cancelled, or ended after an ERROR */
        }
    }
}

static void watch_free(void *arg)
{
    struct watch_stream *ws = arg;
    struct server *s = ws->srv;

    pthread_mutex_lock(&s->mu);
    if (ws->prev)
        ws->prev->next = ws->next;
    else if (s->watches == ws)
        s->watches = ws->next;
    if (ws->next)
        ws->next->prev = ws->prev;
    s->n_watches--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);

    if (ws->w)
        store_watch_close(ws->w);
    sel_free(ws->labels);
    fsel_free(ws->fields);
    buf_free(&ws->out);
    free(ws);
}

void api__watch_cancel_all(struct server *s)
{
    pthread_mutex_lock(&s->mu);
    for (struct watch_stream *ws = s->watches; ws; ws = ws->next)
        if (ws->w)
            store_watch_cancel(ws->w);
    pthread_mutex_unlock(&s->mu);
}

/* "metadata.name=NAME[,user selector]", escaping as apimachinery's fields.EscapeValue. */
static int name_selector(const char *name, const char *user, struct buf *b)
{
    buf_puts(b, "metadata.name=");
    for (const char *p = name; *p; p++) {
        if (*p == '\\' || *p == ',' || *p == '=')
            buf_append(b, "\\", 1);
        buf_append(b, p, 1);
    }
    if (user && *user) {
        buf_puts(b, ",");
        buf_puts(b, user);
    }
    return b->data ? 0 : -ENOMEM;
}

static int check_watch_params(struct server_req *req)
{
    const struct route_query *q = req->query;
    bool sie = q->send_initial_events == ROUTE_TRUE;

    if (q->send_initial_events != ROUTE_UNSET &&
        (!q->rv_match || strcmp(q->rv_match, "NotOlderThan") != 0)) {
        server_reply_status(req, 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                            "resourceVersionMatch to NotOlderThan");
        return -EINVAL;
    }
    if (sie && !q->allow_bookmarks) {
        server_reply_status(req, 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                            "allowWatchBookmarks: Forbidden: sendInitialEvents requires "
                            "setting allowWatchBookmarks to true");
        return -EINVAL;
    }
    if (q->rv_match && *q->rv_match && q->send_initial_events == ROUTE_UNSET) {
        server_reply_status(req, 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: "
                            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
                            "for watch unless sendInitialEvents is provided");
        return -EINVAL;
    }
    return 0;
}

int api__handle_watch(struct server_req *req, const struct reg_resource *res)
{
    struct server *s = req->srv;
    const struct route_query *q = req->query;
    struct watch_stream *ws;
    struct store_watch_opts wo = { 0 };
    struct store_status st = { 0 };
    const union MHD_ConnectionInfo *ci;
    struct buf fsel_text = { 0 };
    const char *fs = q->field_selector;
    char err[300];
    long timeout;
    int rc;

    req->verb = "watch";
    if (check_watch_params(req) < 0)
        return 0;
    if (!(ws = calloc(1, sizeof(*ws))))
        return server_reply_status(req, 500, "InternalError", "out of memory");
    ws->srv = s;
    ws->res = res;
    ws->fd = -1;
    ws->table = req->accept.table;
    if (q->include_object)
        snprintf(ws->include, sizeof(ws->include), "%s", q->include_object);
    if (req->route->name[0]) {
        if (name_selector(req->route->name, q->field_selector, &fsel_text) < 0)
            goto oom;
        fs = fsel_text.data;
    }
    if (sel_parse(q->label_selector, &ws->labels, err, sizeof(err)) < 0 ||
        fsel_parse(fs, &ws->fields, err, sizeof(err)) < 0) {
        server_reply_status(req, 400, "BadRequest", err);
        goto fail;
    }
    /* No timeoutSeconds: the apiserver picks 30-60 minutes. */
    timeout = q->timeout_seconds > 0 ? q->timeout_seconds : 1800 + (long)(util_now_ns() % 1800);
    ws->deadline_ms = util_now_ms() + (uint64_t)timeout * 1000;
    ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
        ws->fd = ci->connect_fd;

    wo.labels = ws->labels;
    wo.fields = ws->fields;
    wo.resource_version = q->resource_version;
    wo.send_initial_events = q->send_initial_events == ROUTE_TRUE;
    wo.bookmarks = q->allow_bookmarks;
    if (store_watch_open(s->store, res, req->route->ns, &wo, &ws->w, &st) < 0) {
        if (st.code != 410) {
            api__reply_store_status(req, &st);
            goto fail;
        }
        /* too old: a 200 stream with one ERROR event, then a clean close */
        struct store_event ev = { .type = EV_ERROR, .status = st };
        render_event(ws, &ev);
        store_status_clear(&st);
        ws->w = NULL;
        ws->done = true;
    }

    pthread_mutex_lock(&s->mu);
    ws->next = s->watches;
    if (s->watches)
        s->watches->prev = ws;
    s->watches = ws;
    s->n_watches++;
    pthread_mutex_unlock(&s->mu);
    buf_free(&fsel_text);
    /* From here on watch_free owns ws, whether or not the reply is created. */
    rc = server_reply_stream(req, 200, "application/json", watch_read, ws, watch_free);
    if (rc < 0 && rc != -EALREADY)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    return 0;
oom:
    server_reply_status(req, 500, "InternalError", "out of memory");
fail:
    buf_free(&fsel_text);
    sel_free(ws->labels);
    fsel_free(ws->fields);
    buf_free(&ws->out);
    free(ws);
    return 0;
}

/*
 * server.c - the queue server inside the watcher: one ipc_queue per kind,
 * served to reconciler processes over a Unix socket on the watcher's libuv
 * loop. Everything here runs on that loop's thread.
 *
 * A connection says HELLO (optionally registering as a worker for one kind
 * with a capacity), then asks for keys with PULL n ("credits"). Keys are
 * handed out round-robin across the kind's connections that have both credit
 * and spare capacity, so many processes share a queue fairly and none holds
 * more than it declared. Each handed-out key is remembered per connection
 * (lease id -> key); when the connection drops, every key it held is Done'd
 * as an error, i.e. requeued with backoff. Since the queue itself never hands
 * a processing key to anyone, two holders of one key are impossible.
 *
 * Slow or hung workers: keys are never taken back from a live connection (no
 * leases). An optional processing deadline only reports: overdue keys are
 * counted in STATUS and logged once. A worker that is really stuck is for its
 * supervisor to kill; its keys come back when the socket closes.
 *
 * Frames are validated by proto.c; a frame that does not decode, or a message
 * that makes no sense in the connection's state, gets an ERROR frame and the
 * connection is closed after the ERROR is flushed (its keys requeued at once).
 *
 * This file is the connection machinery and the status snapshot; server_api.c
 * has the public calls and the listening socket (it calls into this file, never
 * the reverse); ipc/internal.h the shared structs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>
#include <utlist.h>

#include "ipc/internal.h"

struct kq *ipc__find_kind(struct ipc_server *s, const char *kind)
{
    for (int i = 0; i < s->n_kinds; i++)
        if (strcmp(ipc_queue_kind(s->kinds[i].q), kind) == 0)
            return &s->kinds[i];
    return NULL;
}

/* ---- handle bookkeeping: the server is freed after its last close callback ---- */

static void server_free(struct ipc_server *s)
{
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_free(s->kinds[i].q);
    free(s->path);
    free(s);
}

void ipc__handle_closed(uv_handle_t *h)
{
    struct ipc_server *s = h->data;
    if (--s->open_handles == 0 && s->closing)
        server_free(s);
}

/* ---- writing ------------------------------------------------------------------ */

static void write_done(uv_write_t *req, int status)
{
    (void)status; /* a failed write surfaces as a read error / EOF */
    free(req);
}

/* Queues m on c; drops c if it cannot keep up. 0 or negative errno. */
static int conn_send(struct conn *c, const struct ipc_msg *m)
{
    struct buf b = {0};
    struct wreq *w = NULL;
    int rc = ipc_proto_encode(m, &b);
    if (rc < 0)
        goto out;
    w = malloc(sizeof(*w) + b.len);
    if (!w) {
        rc = -ENOMEM;
        goto out;
    }
    memcpy(w->data, b.data, b.len);
    w->len = b.len;
    uv_buf_t ub = uv_buf_init(w->data, (unsigned)w->len);
    rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, &ub, 1, write_done);
    if (rc < 0) {
        free(w);
        goto out;
    }
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) > c->s->cfg.max_write_queue)
        rc = -ENOBUFS;
out:
    buf_free(&b);
    return rc;
}

static void send_error(struct conn *c, int code, const char *why)
{
    struct ipc_msg *m = calloc(1, sizeof(*m));
    if (!m)
        return;
    m->type = IPC_MSG_ERROR;
    m->code = (uint32_t)(code < 0 ? -code : code);
    snprintf(m->msg, sizeof(m->msg), "%s", why);
    (void)conn_send(c, m);
    free(m);
}

/* ---- handing out keys ------------------------------------------------------------ */

static bool conn_can_take(const struct conn *c)
{
    return !c->closing && c->credits > 0 && c->n_inflight < c->capacity;
}

static void wall_ms_of(struct ipc_server *s, uint64_t mono_ns, uint64_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t wall = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    uint64_t now = ipc__now(s);
    uint64_t ago = now > mono_ns ? (now - mono_ns) / 1000000u : 0;
    *out = wall > ago ? wall - ago : 0;
}

/* Hands ready keys to the kind's connections, round-robin. */
void ipc__dispatch(struct ipc_server *s, struct kq *kq)
{
    struct ipc_msg *m = &s->out;
    if (s->grace_end_ns && ipc__now(s) < s->grace_end_ns)
        return;   /* arm_timer wakes us at the end of the grace period */
    s->grace_end_ns = 0;
    while (kq->workers) {
        struct conn *start = kq->rr ? kq->rr : kq->workers, *c = start, *pick = NULL;
        do {
            if (conn_can_take(c)) {
                pick = c;
                break;
            }
            c = c->wnext ? c->wnext : kq->workers;
        } while (c != start);
        if (!pick)
            return;
        struct ipc_lease l;
        if (ipc_queue_get(kq->q, &l) != 0)
            return;
        size_t klen = strlen(l.key);
        struct inflight *f = malloc(sizeof(*f) + klen + 1);
        if (!f) {
            struct ipc_outcome rel = {.kind = IPC_OUTCOME_RELEASE};
            ipc_queue_done(kq->q, l.key, l.id, &rel);
            return;
        }
        memcpy(f->key, l.key, klen + 1);
        f->id = l.id;
        f->got_ns = l.got_ns;
        f->overdue_logged = false;
        HASH_ADD(hh, pick->inflight, id, sizeof(f->id), f);
        pick->n_inflight++;
        pick->credits--;
        kq->rr = pick->wnext ? pick->wnext : kq->workers;

        memset(m, 0, sizeof(*m));
        m->type = IPC_MSG_KEY;
        m->id = l.id;
        memcpy(m->key, l.key, klen + 1);
        m->requeues = l.requeues;
        m->wait_ms = l.got_ns > l.added_ns ? (l.got_ns - l.added_ns) / 1000000u : 0;
        wall_ms_of(s, l.added_ns, &m->added_ms);
        int rc = conn_send(pick, m);
        if (rc < 0)
            ipc__conn_drop(pick, rc, rc == -ENOBUFS ? "peer is not reading" : "write failed");
    }
}

void ipc__dispatch_all(struct ipc_server *s)
{
    for (int i = 0; i < s->n_kinds; i++)
        ipc__dispatch(s, &s->kinds[i]);
    ipc__arm_timer(s);
}

/* ---- timers ---------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
    struct ipc_server *s = t->data;
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_tick(s->kinds[i].q);
    ipc__dispatch_all(s);
}

void ipc__arm_timer(struct ipc_server *s)
{
    if (s->closing)
        return;
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < s->n_kinds; i++) {
        uint64_t d = ipc_queue_next_deadline(s->kinds[i].q);
        if (d < next)
            next = d;
    }
    if (s->grace_end_ns && s->grace_end_ns < next)
        next = s->grace_end_ns;
    if (next == UINT64_MAX) {
        uv_timer_stop(&s->timer);
        return;
    }
    uint64_t now = ipc__now(s);
    uint64_t ms = next > now ? (next - now + 999999u) / 1000000u : 0;
    uv_timer_start(&s->timer, on_timer, ms, 0);
}

void ipc__on_overdue_timer(uv_timer_t *t)
{
    struct ipc_server *s = t->data;
    uint64_t now = ipc__now(s);
    for (struct conn *c = s->conns; c; c = c->next) {
        struct inflight *f, *tmp;
        HASH_ITER(hh, c->inflight, f, tmp) {
            if (f->overdue_logged || now - f->got_ns < s->cfg.processing_deadline_ns)
                continue;
            f->overdue_logged = true;
            char pid[16], held[32];
            snprintf(pid, sizeof(pid), "%d", (int)c->pid);
            snprintf(held, sizeof(held), "%" PRIu64, (now - f->got_ns) / 1000000u);
            log_warn("worker holds a key past the processing deadline", "kind",
                     ipc_queue_kind(c->kq->q), "key", f->key, "worker", c->worker, "pid", pid,
                     "held_ms", held, NULL);
        }
    }
}

/* ---- connections ------------------------------------------------------------------ */

static void conn_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct ipc_server *s = c->s;
    DL_DELETE(s->conns, c);
    buf_free(&c->rbuf);
    free(c);
    if (--s->open_handles == 0 && s->closing)
        server_free(s);
}

static void conn_shutdown_done(uv_shutdown_t *req, int status)
{
    (void)status;
    struct conn *c = req->data;
    uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

/* Requeues c's keys (as errors: backoff), unregisters it, and closes it; with
 * code != 0 an ERROR frame is flushed first. Safe to call twice. */
void ipc__conn_drop(struct conn *c, int code, const char *why)
{
    struct ipc_server *s = c->s;
    if (c->closing)
        return;
    c->closing = true;
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", (int)c->pid);
    if (code)
        log_warn("closing ipc connection", "worker", c->worker, "pid", pid, "reason", why, NULL);
    else if (c->kq)
        log_info("ipc connection closed", "worker", c->worker, "pid", pid, NULL);
    else    /* a client without a kind (`rayop status`, a probe): routine, not news */
        log_debug("ipc connection closed", "worker", c->worker, "pid", pid, NULL);

    struct inflight *f, *tmp;
    struct ipc_outcome lost = {.kind = IPC_OUTCOME_ERROR, .message = "worker connection lost"};
    HASH_ITER(hh, c->inflight, f, tmp) {
        HASH_DEL(c->inflight, f);
        ipc_queue_done(c->kq->q, f->key, f->id, &lost);
        free(f);
    }
    c->n_inflight = 0;
    struct kq *kq = c->kq;
    if (kq) {
        if (kq->rr == c)
            kq->rr = c->wnext;
        DL_DELETE2(kq->workers, c, wprev, wnext);
        c->kq = NULL;
    }
    uv_read_stop((uv_stream_t *)&c->pipe);
    if (code)
        send_error(c, code, why);
    c->shut.data = c;
    if (uv_shutdown(&c->shut, (uv_stream_t *)&c->pipe, conn_shutdown_done) < 0)
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
    if (kq && !s->closing) {
        ipc__dispatch(s, kq);
        ipc__arm_timer(s);
    }
}

/* A snapshot of the queues and their workers (at most max_workers per kind). */
int ipc__status_fill(struct ipc_server *s, struct ipc_status *out, uint32_t max_workers)
{
    uint64_t now = ipc__now(s);
    memset(out, 0, sizeof(*out));
    out->pid = (int32_t)getpid();
    if (s->n_kinds == 0)
        return 0;
    out->queues = calloc((size_t)s->n_kinds, sizeof(*out->queues));
    if (!out->queues)
        return -ENOMEM;
    out->n_queues = (uint32_t)s->n_kinds;
    for (int i = 0; i < s->n_kinds; i++) {
        struct kq *kq = &s->kinds[i];
        struct ipc_status_queue *q = &out->queues[i];
        struct ipc_queue_stats st;
        ipc_queue_stats(kq->q, &st);
        snprintf(q->kind, sizeof(q->kind), "%s", ipc_queue_kind(kq->q));
        q->depth = st.depth;
        q->in_flight = st.in_flight;
        q->waiting = st.waiting;
        q->retrying = st.retrying;
        q->gated = st.gated;
        q->keys = st.keys;
        q->adds_total = st.adds_total;
        q->retries_total = st.retries_total;
        q->ryw_timeouts_total = st.ryw_timeouts_total;
        q->oldest_wait_ms = st.oldest_ready_ns / 1000000u;
        q->oldest_wait_known = true;
        uint32_t n = 0;
        struct conn *c;
        DL_FOREACH2(kq->workers, c, wnext) n++;
        if (n > max_workers)
            n = max_workers;
        if (n) {
            q->workers = calloc(n, sizeof(*q->workers));
            if (!q->workers) {
                ipc_status_free(out);
                return -ENOMEM;
            }
        }
        uint32_t k = 0;
        DL_FOREACH2(kq->workers, c, wnext) {
            uint64_t oldest = 0;
            struct inflight *f, *tmp;
            HASH_ITER(hh, c->inflight, f, tmp) {
                uint64_t age = now > f->got_ns ? now - f->got_ns : 0;
                if (age > oldest)
                    oldest = age;
                if (s->cfg.processing_deadline_ns && age >= s->cfg.processing_deadline_ns)
                    q->overdue++;
            }
            if (k < n) {
                struct ipc_status_worker *w = &q->workers[k++];
                w->pid = c->pid;
                snprintf(w->worker, sizeof(w->worker), "%s", c->worker);
                w->capacity = c->capacity;
                w->in_flight = c->n_inflight;
                w->oldest_ms = oldest / 1000000u;
            }
        }
        q->n_workers = k;
    }
    return 0;
}

static void reply_status(struct conn *c)
{
    struct ipc_server *s = c->s;
    struct ipc_status st;
    struct ipc_msg *m = &s->out;
    /* Shrink the worker lists until the reply fits one frame. */
    for (uint32_t maxw = IPC_STATUS_WORKERS_MAX;; maxw /= 2) {
        if (ipc__status_fill(s, &st, maxw) < 0) {
            send_error(c, ENOMEM, "out of memory building status");
            return;
        }
        memset(m, 0, sizeof(*m));
        m->type = IPC_MSG_STATUS;
        m->pid = st.pid;
        m->status = &st;
        int rc = conn_send(c, m);
        m->status = NULL;
        ipc_status_free(&st);
        if (rc != -EMSGSIZE || maxw == 0) {
            if (rc < 0 && rc != -EMSGSIZE)
                ipc__conn_drop(c, rc, rc == -ENOBUFS ? "peer is not reading" : "write failed");
            return;
        }
    }
}

/* A reconnected worker still holds m->key from the previous server: lease it
 * to this connection so nobody else gets it until the worker says Done. */
static bool conn_adopt(struct conn *c, const struct ipc_msg *m)
{
    struct ipc_server *s = c->s;
    struct ipc_msg *out = &s->out;
    struct ipc_lease l;
    if (!c->kq) {
        ipc__conn_drop(c, EPROTO, "ADOPT from a connection without a kind");
        return false;
    }
    memset(out, 0, sizeof(*out));
    out->type = IPC_MSG_ADOPTED;
    snprintf(out->key, sizeof(out->key), "%s", m->key);
    size_t klen = strlen(m->key);
    struct inflight *f = malloc(sizeof(*f) + klen + 1);
    int rc = -ENOSPC;
    if (f && c->n_inflight < c->capacity)
        rc = ipc_queue_adopt(c->kq->q, m->key, &l);
    if (rc == 0) {
        memcpy(f->key, m->key, klen + 1);
        f->id = l.id;
        f->got_ns = l.got_ns;
        f->overdue_logged = false;
        HASH_ADD(hh, c->inflight, id, sizeof(f->id), f);
        c->n_inflight++;
        if (c->credits > c->capacity - c->n_inflight)
            c->credits = c->capacity - c->n_inflight;
        out->id = l.id;
    } else {
        free(f);
        log_warn("cannot adopt a key a reconnected worker still holds", "kind",
                 ipc_queue_kind(c->kq->q), "key", m->key, "worker", c->worker,
                 "error", strerror(-rc), NULL);
    }
    if (conn_send(c, out) < 0) {
        ipc__conn_drop(c, EIO, "write failed");
        return false;
    }
    return true;
}

/* The startup grace keeps keys back so surviving workers can re-adopt what
 * they hold before the resync hands it to someone else. A worker adopts
 * before its first PULL (the client sends ADOPT on WELCOME, ahead of any
 * pull), so once every kind has a worker again the grace has done its job
 * for them: it ends then instead of after the full period. (With two workers
 * of one kind the second may still be away: the window docs/ipc.md names.) */
static void end_grace_if_all_back(struct ipc_server *s)
{
    if (!s->grace_end_ns)
        return;
    for (int i = 0; i < s->n_kinds; i++)
        if (!s->kinds[i].workers)
            return;
    s->grace_end_ns = 0;
    log_info("startup grace ended early: every kind has a worker", NULL);
    for (int i = 0; i < s->n_kinds; i++)
        ipc__dispatch(s, &s->kinds[i]);   /* workers that pulled during the grace */
}

/* One decoded frame. Returns false once c is closing. */
static bool conn_handle(struct conn *c, struct ipc_msg *m)
{
    struct ipc_server *s = c->s;
    if (!c->hello && m->type != IPC_MSG_HELLO) {
        ipc__conn_drop(c, EPROTO, "HELLO must come first");
        return false;
    }
    switch (m->type) {
    case IPC_MSG_HELLO: {
        if (c->hello) {
            ipc__conn_drop(c, EPROTO, "duplicate HELLO");
            return false;
        }
        c->hello = true;
        snprintf(c->worker, sizeof(c->worker), "%s", m->worker);
        if (m->kind[0]) {
            struct kq *kq = ipc__find_kind(s, m->kind);
            if (!kq) {
                ipc__conn_drop(c, ENOENT, "no queue for that kind");
                return false;
            }
            c->kq = kq;
            c->capacity = m->capacity;
            DL_APPEND2(kq->workers, c, wprev, wnext);
            end_grace_if_all_back(s);
        }
        char pid[16], cap[16];
        snprintf(pid, sizeof(pid), "%d", (int)c->pid);
        snprintf(cap, sizeof(cap), "%u", c->capacity);
        if (c->kq)
            log_info("ipc worker connected", "kind", m->kind, "worker", c->worker, "pid", pid,
                     "capacity", cap, NULL);
        else
            log_debug("ipc client connected", "worker", c->worker, "pid", pid, NULL);
        memset(m, 0, sizeof(*m));
        m->type = IPC_MSG_WELCOME;
        m->version = IPC_PROTO_VERSION;
        m->pid = (int32_t)getpid();
        m->boot = s->boot;
        if (conn_send(c, m) < 0) {
            ipc__conn_drop(c, EIO, "write failed");
            return false;
        }
        return true;
    }
    case IPC_MSG_PULL: {
        if (!c->kq) {
            ipc__conn_drop(c, EPROTO, "PULL from a connection without a kind");
            return false;
        }
        uint64_t room = c->capacity - c->n_inflight;
        uint64_t cr = (uint64_t)c->credits + m->n;
        c->credits = (uint32_t)(cr > room ? room : cr);
        ipc__dispatch(s, c->kq);
        ipc__arm_timer(s);
        return !c->closing;
    }
    case IPC_MSG_DONE: {
        struct inflight *f = NULL;
        if (c->kq)
            HASH_FIND(hh, c->inflight, &m->id, sizeof(m->id), f);
        if (!f) {
            ipc__conn_drop(c, ENOENT, "DONE for a key this connection does not hold");
            return false;
        }
        HASH_DEL(c->inflight, f);
        c->n_inflight--;
        if (c->credits > c->capacity - c->n_inflight)
            c->credits = c->capacity - c->n_inflight;
        struct ipc_outcome oc = {
            .kind = (enum ipc_outcome_kind)m->outcome,
            .after_ns = m->after_ms * 1000000u,
            .message = m->msg,
            .n_written = m->n_written,
            .written = m->written,
        };
        int rc = ipc_queue_done(c->kq->q, f->key, f->id, &oc);
        if (rc < 0 && rc != -ENOENT)
            log_warn("queue done failed", "kind", ipc_queue_kind(c->kq->q), "key", f->key,
                     "error", strerror(-rc), NULL);
        free(f);
        ipc__dispatch(s, c->kq);
        ipc__arm_timer(s);
        return !c->closing;
    }
    case IPC_MSG_ADD: {
        struct kq *kq = ipc__find_kind(s, m->kind);
        if (!kq) {
            send_error(c, ENOENT, "ADD for an unknown kind");
            return true;
        }
        ipc_queue_add_after(kq->q, m->key, m->after_ms * 1000000u);
        ipc__dispatch(s, kq);
        ipc__arm_timer(s);
        return !c->closing;
    }
    case IPC_MSG_STATUS_REQ:
        reply_status(c);
        return !c->closing;
    case IPC_MSG_ADOPT:
        return conn_adopt(c, m);
    case IPC_MSG_ERROR:
        ipc__conn_drop(c, 0, m->msg);
        return false;
    default:
        ipc__conn_drop(c, EPROTO, "message type not accepted by the server");
        return false;
    }
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    struct conn *c = h->data;
    (void)suggested;
    if (buf_reserve(&c->rbuf, IPC_FRAME_MAX) < 0) {
        *out = uv_buf_init(NULL, 0);
        return;
    }
    *out = uv_buf_init(c->rbuf.data + c->rbuf.len, (unsigned)(c->rbuf.cap - c->rbuf.len - 1));
}

static void conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *ub)
{
    struct conn *c = st->data;
    (void)ub;
    if (nread < 0) {
        ipc__conn_drop(c, 0, uv_strerror((int)nread));
        return;
    }
    c->rbuf.len += (size_t)nread;
    size_t off = 0;
    while (!c->closing) {
        const uint8_t *body;
        size_t blen, used;
        int rc = ipc_proto_frame(c->rbuf.data + off, c->rbuf.len - off, &body, &blen, &used);
        if (rc == -EAGAIN)
            break;
        if (rc < 0) {
            ipc__conn_drop(c, EMSGSIZE, "frame length out of range");
            return;
        }
        const char *why = NULL;
        struct ipc_msg *m = &c->s->scratch;
        if (ipc_proto_decode(body, blen, m, &why) < 0) {
            ipc__conn_drop(c, EBADMSG, why);
            return;
        }
        off += used;
        bool go_on = conn_handle(c, m);
        ipc_msg_clear(m);
        if (!go_on)
            return;
    }
    if (off) {
        memmove(c->rbuf.data, c->rbuf.data + off, c->rbuf.len - off);
        c->rbuf.len -= off;
    }
}

/* A connection object on s with its pipe handle initialised; NULL on ENOMEM. */
static struct conn *conn_new(struct ipc_server *s, uint32_t *n_conns)
{
    *n_conns = 0;
    for (struct conn *o = s->conns; o; o = o->next)
        (*n_conns)++;
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->s = s;
    uv_pipe_init(s->loop, &c->pipe, 0);
    c->pipe.data = c;
    s->open_handles++;
    DL_APPEND(s->conns, c);
    snprintf(c->worker, sizeof(c->worker), "?");
    return c;
}

/* Applies the connection limit and the peer check, then starts reading. */
static void conn_start(struct conn *c, uint32_t n_conns)
{
    struct ipc_server *s = c->s;
    if (n_conns >= s->cfg.max_connections) {
        ipc__conn_drop(c, EMFILE, "too many connections");
        return;
    }
    /* The socket file is 0600; the peer's credentials are checked anyway. */
    uv_os_fd_t fd;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
        c->pid = cred.pid;
        if (cred.uid != geteuid() && cred.uid != 0) {
            ipc__conn_drop(c, EACCES, "peer runs as another user");
            return;
        }
    }
    if (uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0)
        ipc__conn_drop(c, 0, "read start failed");
}

void ipc__on_connection(uv_stream_t *server, int status)
{
    struct ipc_server *s = server->data;
    uint32_t n_conns;
    if (status < 0 || s->closing)
        return;
    struct conn *c = conn_new(s, &n_conns);
    if (!c)
        return;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
        return;
    }
    conn_start(c, n_conns);
}

int ipc__accept_fd(struct ipc_server *s, int fd)
{
    uint32_t n_conns;
    if (s->closing)
        return -ESHUTDOWN;
    struct conn *c = conn_new(s, &n_conns);
    if (!c)
        return -ENOMEM;
    int rc = uv_pipe_open(&c->pipe, fd);
    if (rc < 0) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
        return rc;
    }
    conn_start(c, n_conns);
    return 0;
}

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
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>
#include <utlist.h>
#include <uv.h>

#include "ipc/proto.h"

struct inflight {
    UT_hash_handle hh;
    uint64_t id;
    uint64_t got_ns;
    bool overdue_logged;
    char key[];
};

struct kq {
    struct ipc_queue *q;
    struct conn *workers;   /* registered connections, in arrival order */
    struct conn *rr;        /* the connection to offer the next key to first */
};

struct conn {
    struct ipc_server *s;
    uv_pipe_t pipe;
    uv_shutdown_t shut;
    struct conn *prev, *next;     /* all connections */
    struct conn *wprev, *wnext;   /* the kind's workers */
    struct kq *kq;
    bool hello, closing;
    uint32_t capacity, credits, n_inflight;
    struct inflight *inflight;
    int32_t pid;
    char worker[IPC_WORKER_MAX];
    struct buf rbuf;
};

struct ipc_server {
    uv_loop_t *loop;
    struct ipc_server_config cfg;
    ipc_now_fn now;
    void *now_ud;
    uv_pipe_t listener;
    uv_timer_t timer, overdue_timer;
    bool listener_init, listening, closing;
    int open_handles;
    char *path;
    struct kq kinds[IPC_KINDS_MAX];
    int n_kinds;
    struct conn *conns;
    ipc_seen_fn seen;
    void *seen_ud;
    uint64_t boot;
    uint64_t grace_end_ns;        /* no hand-out before this clock time */
    struct ipc_msg scratch;       /* decode target; too big for the stack of a callback */
    struct ipc_msg out;           /* what dispatch and reply_status encode */
};

struct wreq {
    uv_write_t req;
    size_t len;
    char data[];
};

static void conn_drop(struct conn *c, int code, const char *why);
static void arm_timer(struct ipc_server *s);

static uint64_t srv_now(struct ipc_server *s)
{
    return s->now(s->now_ud);
}

static uint64_t default_now(void *ud)
{
    (void)ud;
    return util_now_ns();
}

static struct kq *find_kind(struct ipc_server *s, const char *kind)
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

static void handle_closed(uv_handle_t *h)
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
    uint64_t now = srv_now(s);
    uint64_t ago = now > mono_ns ? (now - mono_ns) / 1000000u : 0;
    *out = wall > ago ? wall - ago : 0;
}

/* Hands ready keys to the kind's connections, round-robin. */
static void dispatch(struct ipc_server *s, struct kq *kq)
{
    struct ipc_msg *m = &s->out;
    if (s->grace_end_ns && srv_now(s) < s->grace_end_ns)
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
            conn_drop(pick, rc, rc == -ENOBUFS ? "peer is not reading" : "write failed");
    }
}

static void dispatch_all(struct ipc_server *s)
{
    for (int i = 0; i < s->n_kinds; i++)
        dispatch(s, &s->kinds[i]);
    arm_timer(s);
}

/* ---- timers ---------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
    struct ipc_server *s = t->data;
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_tick(s->kinds[i].q);
    dispatch_all(s);
}

static void arm_timer(struct ipc_server *s)
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
    uint64_t now = srv_now(s);
    uint64_t ms = next > now ? (next - now + 999999u) / 1000000u : 0;
    uv_timer_start(&s->timer, on_timer, ms, 0);
}

static void on_overdue_timer(uv_timer_t *t)
{
    struct ipc_server *s = t->data;
    uint64_t now = srv_now(s);
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
static void conn_drop(struct conn *c, int code, const char *why)
{
    struct ipc_server *s = c->s;
    if (c->closing)
        return;
    c->closing = true;
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", (int)c->pid);
    if (code)
        log_warn("closing ipc connection", "worker", c->worker, "pid", pid, "reason", why, NULL);
    else
        log_info("ipc connection closed", "worker", c->worker, "pid", pid, NULL);

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
        dispatch(s, kq);
        arm_timer(s);
    }
}

static int status_fill(struct ipc_server *s, struct ipc_status *out, uint32_t max_workers)
{
    uint64_t now = srv_now(s);
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
        if (status_fill(s, &st, maxw) < 0) {
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
                conn_drop(c, rc, "write failed");
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
        conn_drop(c, EPROTO, "ADOPT from a connection without a kind");
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
        conn_drop(c, EIO, "write failed");
        return false;
    }
    return true;
}

/* One decoded frame. Returns false once c is closing. */
static bool conn_handle(struct conn *c, struct ipc_msg *m)
{
    struct ipc_server *s = c->s;
    if (!c->hello && m->type != IPC_MSG_HELLO) {
        conn_drop(c, EPROTO, "HELLO must come first");
        return false;
    }
    switch (m->type) {
    case IPC_MSG_HELLO: {
        if (c->hello) {
            conn_drop(c, EPROTO, "duplicate HELLO");
            return false;
        }
        c->hello = true;
        snprintf(c->worker, sizeof(c->worker), "%s", m->worker);
        if (m->kind[0]) {
            struct kq *kq = find_kind(s, m->kind);
            if (!kq) {
                conn_drop(c, ENOENT, "no queue for that kind");
                return false;
            }
            c->kq = kq;
            c->capacity = m->capacity;
            DL_APPEND2(kq->workers, c, wprev, wnext);
        }
        char pid[16], cap[16];
        snprintf(pid, sizeof(pid), "%d", (int)c->pid);
        snprintf(cap, sizeof(cap), "%u", c->capacity);
        log_info("ipc worker connected", "kind", m->kind[0] ? m->kind : NULL, "worker", c->worker,
                 "pid", pid, "capacity", cap, NULL);
        memset(m, 0, sizeof(*m));
        m->type = IPC_MSG_WELCOME;
        m->version = IPC_PROTO_VERSION;
        m->pid = (int32_t)getpid();
        m->boot = s->boot;
        if (conn_send(c, m) < 0) {
            conn_drop(c, EIO, "write failed");
            return false;
        }
        return true;
    }
    case IPC_MSG_PULL: {
        if (!c->kq) {
            conn_drop(c, EPROTO, "PULL from a connection without a kind");
            return false;
        }
        uint64_t room = c->capacity - c->n_inflight;
        uint64_t cr = (uint64_t)c->credits + m->n;
        c->credits = (uint32_t)(cr > room ? room : cr);
        dispatch(s, c->kq);
        arm_timer(s);
        return !c->closing;
    }
    case IPC_MSG_DONE: {
        struct inflight *f = NULL;
        if (c->kq)
            HASH_FIND(hh, c->inflight, &m->id, sizeof(m->id), f);
        if (!f) {
            conn_drop(c, ENOENT, "DONE for a key this connection does not hold");
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
        dispatch(s, c->kq);
        arm_timer(s);
        return !c->closing;
    }
    case IPC_MSG_ADD: {
        struct kq *kq = find_kind(s, m->kind);
        if (!kq) {
            send_error(c, ENOENT, "ADD for an unknown kind");
            return true;
        }
        ipc_queue_add_after(kq->q, m->key, m->after_ms * 1000000u);
        dispatch(s, kq);
        arm_timer(s);
        return !c->closing;
    }
    case IPC_MSG_STATUS_REQ:
        reply_status(c);
        return !c->closing;
    case IPC_MSG_ADOPT:
        return conn_adopt(c, m);
    case IPC_MSG_ERROR:
        conn_drop(c, 0, m->msg);
        return false;
    default:
        conn_drop(c, EPROTO, "message type not accepted by the server");
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
        conn_drop(c, 0, uv_strerror((int)nread));
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
            conn_drop(c, EMSGSIZE, "frame length out of range");
            return;
        }
        const char *why = NULL;
        struct ipc_msg *m = &c->s->scratch;
        if (ipc_proto_decode(body, blen, m, &why) < 0) {
            conn_drop(c, EBADMSG, why);
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

static void on_connection(uv_stream_t *server, int status)
{
    struct ipc_server *s = server->data;
    if (status < 0 || s->closing)
        return;
    struct conn *c = calloc(1, sizeof(*c));
    uint32_t n_conns = 0;
    for (struct conn *o = s->conns; o; o = o->next)
        n_conns++;
    if (!c)
        return;
    c->s = s;
    uv_pipe_init(s->loop, &c->pipe, 0);
    c->pipe.data = c;
    s->open_handles++;
    DL_APPEND(s->conns, c);
    snprintf(c->worker, sizeof(c->worker), "?");
    if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->pipe, conn_closed);
        return;
    }
    if (n_conns >= s->cfg.max_connections) {
        conn_drop(c, EMFILE, "too many connections");
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
            conn_drop(c, EACCES, "peer runs as another user");
            return;
        }
    }
    if (uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0)
        conn_drop(c, 0, "read start failed");
}

/* ---- public API --------------------------------------------------------------------- */

int ipc_server_new(uv_loop_t *loop, const struct ipc_server_config *cfg, struct ipc_server **out)
{
    struct ipc_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    if (cfg)
        s->cfg = *cfg;
    if (!s->cfg.max_write_queue)
        s->cfg.max_write_queue = 4u << 20;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = 1024;
    s->now = s->cfg.now ? s->cfg.now : default_now;
    s->now_ud = s->cfg.now ? s->cfg.now_ud : NULL;
    if (s->cfg.startup_grace_ns)
        s->grace_end_ns = srv_now(s) + s->cfg.startup_grace_ns;
    if (getrandom(&s->boot, sizeof(s->boot), GRND_NONBLOCK) != (ssize_t)sizeof(s->boot))
        s->boot = util_now_ns() ^ ((uint64_t)getpid() << 32);
    uv_timer_init(loop, &s->timer);
    s->timer.data = s;
    uv_timer_init(loop, &s->overdue_timer);
    s->overdue_timer.data = s;
    s->open_handles = 2;
    if (s->cfg.processing_deadline_ns) {
        uint64_t every = s->cfg.processing_deadline_ns / 2000000u;
        if (every < 100)
            every = 100;
        uv_timer_start(&s->overdue_timer, on_overdue_timer, every, every);
    }
    *out = s;
    return 0;
}

int ipc_server_add_kind(struct ipc_server *s, const char *kind, const struct ipc_queue_config *qcfg)
{
    if (!kind || find_kind(s, kind))
        return -EINVAL;
    if (s->n_kinds == IPC_KINDS_MAX)
        return -ENOSPC;
    struct kq *kq = &s->kinds[s->n_kinds];
    memset(kq, 0, sizeof(*kq));
    int rc = ipc_queue_new(kind, qcfg, s->now, s->now_ud, &kq->q);
    if (rc < 0)
        return rc;
    if (s->seen)
        ipc_queue_set_seen(kq->q, s->seen, s->seen_ud);
    s->n_kinds++;
    return 0;
}

/* A socket file at path: live server -> -EADDRINUSE, dead -> unlinked. */
static int clear_stale(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int err = errno;
    close(fd);
    if (rc == 0)
        return -EADDRINUSE;
    if (err != ECONNREFUSED && err != ENOENT)
        return -err;
    log_info("replacing stale ipc socket", "path", path, NULL);
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

static void check_state_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    struct stat st;
    const char *dir = dirname(copy);
    if (stat(dir, &st) == 0 && ((st.st_mode & 077) || st.st_uid != geteuid()))
        log_warn("state directory should be mode 0700 and owned by this user", "dir", dir, NULL);
    free(copy);
}

int ipc_server_listen(struct ipc_server *s, const char *path)
{
    struct sockaddr_un sa;
    if (!path || strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    if (s->listener_init || s->closing)
        return -EALREADY;
    check_state_dir(path);
    int rc = clear_stale(path);
    if (rc < 0)
        return rc;
    s->path = strdup(path);
    if (!s->path)
        return -ENOMEM;
    uv_pipe_init(s->loop, &s->listener, 0);
    s->listener.data = s;
    s->listener_init = true;
    s->open_handles++;
    rc = uv_pipe_bind(&s->listener, path);
    if (rc < 0)
        return rc;
    /* Bound but not listening yet: nobody can connect before the mode is tight. */
    if (chmod(path, 0600) < 0) {
        rc = -errno;
        unlink(path);
        return rc;
    }
    rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
    if (rc < 0) {
        unlink(path);
        return rc;
    }
    s->listening = true;
    return 0;
}

void ipc_server_set_seen(struct ipc_server *s, ipc_seen_fn seen, void *ud)
{
    s->seen = seen;
    s->seen_ud = ud;
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_set_seen(s->kinds[i].q, seen, ud);
}

int ipc_server_add_after(struct ipc_server *s, const char *kind, const char *key, uint64_t delay_ns)
{
    struct kq *kq = kind ? find_kind(s, kind) : NULL;
    if (!kq)
        return -ENOENT;
    int rc = ipc_queue_add_after(kq->q, key, delay_ns);
    if (rc < 0)
        return rc;
    dispatch(s, kq);
    arm_timer(s);
    return 0;
}

int ipc_server_add_low(struct ipc_server *s, const char *kind, const char *key)
{
    struct kq *kq = kind ? find_kind(s, kind) : NULL;
    if (!kq)
        return -ENOENT;
    int rc = ipc_queue_add_low(kq->q, key);
    if (rc < 0)
        return rc;
    dispatch(s, kq);
    arm_timer(s);
    return 0;
}

int ipc_server_add(struct ipc_server *s, const char *kind, const char *key)
{
    return ipc_server_add_after(s, kind, key, 0);
}

void ipc_server_progress(struct ipc_server *s)
{
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_progress(s->kinds[i].q);
    dispatch_all(s);
}

struct ipc_queue *ipc_server_queue(struct ipc_server *s, const char *kind)
{
    struct kq *kq = kind ? find_kind(s, kind) : NULL;
    return kq ? kq->q : NULL;
}

int ipc_server_status(struct ipc_server *s, struct ipc_status *out)
{
    return status_fill(s, out, IPC_STATUS_WORKERS_MAX);
}

int ipc_server_metrics_text(struct ipc_server *s, struct buf *out)
{
    struct ipc_queue *qs[IPC_KINDS_MAX];
    for (int i = 0; i < s->n_kinds; i++)
        qs[i] = s->kinds[i].q;
    return ipc_metrics_text(qs, (size_t)s->n_kinds, out);
}

void ipc_server_close(struct ipc_server *s)
{
    if (s->closing)
        return;
    s->closing = true;
    for (struct conn *c = s->conns; c; c = c->next)
        conn_drop(c, 0, "server closing");
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_shutdown(s->kinds[i].q);
    if (s->listening && s->path)
        unlink(s->path);
    if (s->listener_init)
        uv_close((uv_handle_t *)&s->listener, handle_closed);
    uv_close((uv_handle_t *)&s->timer, handle_closed);
    uv_close((uv_handle_t *)&s->overdue_timer, handle_closed);
}

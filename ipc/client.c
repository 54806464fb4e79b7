/*
 * client.c - the worker side of the ipc protocol, for the N worker threads of
 * one reconciler process.
 *
 * One connection per process, multiplexed: a reader thread owns the socket's
 * read side (connects, says HELLO, reconnects with backoff after a drop) and
 * parks incoming KEYs in a small buffer; worker threads block in
 * ipc_client_pull on a condition variable, and write their own PULL/DONE/ADD
 * frames under a write lock. One connection keeps the server's per-connection
 * capacity equal to the process's worker count and costs one fd.
 *
 * Credits: a pulling thread sends "PULL 1" only when fewer PULLs are
 * outstanding than threads are waiting, so the server never sends a key no
 * thread asked for; a key that arrives after its puller timed out waits in the
 * buffer for the next pull.
 *
 * Wake-ups: pullers wait on their own condition variable (kcv), and a KEY wakes
 * one of them. A broadcast woke every idle worker for each key and all but one
 * went back to sleep (10,000 RayClusters: 0.3-0.7 context switches per
 * reconcile, issue 18). What every puller must see (a connection up or down, a
 * refusal, stop) still wakes them all (wake_all).
 *
 * Reconnects: each connection has a generation. The client remembers every
 * key its threads hold (pulled, not Done). After a reconnect it sends ADOPT
 * for each, so the new watcher leases them to this connection and hands them
 * to nobody else while our threads still work on them (one holder per key
 * survives a watcher restart); a later Done is sent under the adopted lease
 * id. A key that could not be adopted, or was finished while disconnected,
 * gets -ESTALE: the new watcher rebuilds its queues by a full resync, so the
 * key comes back by itself. Keys buffered but not yet pulled when a
 * connection drops are discarded for the same reason.
 *
 * Lock order: mu (state) may be held while taking wmu (socket writes); never
 * the other way round.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc/proto.h"

/* A key a worker thread holds, and the lease it is held under right now. */
struct held {
    uint64_t orig_id, orig_gen;   /* what the thread's ipc_key says */
    uint64_t cur_id, cur_gen;     /* lease on the current connection, if adopted */
    bool adopting;                /* ADOPT sent, ADOPTED not back yet */
    char key[IPC_KEY_MAX];
};

struct ipc_client {
    char *path, *kind, *worker;
    uint32_t capacity;

    pthread_mutex_t mu;
    pthread_cond_t cv;            /* open and ipc_client_status wait here */
    pthread_cond_t kcv;           /* pullers wait here */
    bool stop, connected;
    int fatal;                    /* the server refused us before the first WELCOME */
    uint32_t requested, waiting;
    uint64_t idle_wakeups;        /* pullers woken with no key to take */
    struct ipc_key *ready;        /* ring of capacity entries */
    uint32_t r_head, r_len, r_cap;
    uint64_t st_sent, st_recv;    /* STATUS requests/replies on this connection */
    uint64_t live_gen;            /* generation of the welcomed connection */
    struct held *held;            /* keys in worker threads' hands */
    uint32_t n_held, cap_held;
    struct ipc_status status;     /* the last reply */
    bool status_valid;

    pthread_mutex_t wmu;          /* guards fd and gen for writers */
    int fd;
    uint64_t gen;

    pthread_mutex_t smu;          /* one STATUS request at a time */
    pthread_t reader;
    bool reader_started;
};

static void deadline_after(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* News for every waiter: the connection changed, a refusal, or stop. Called with mu held. */
static void wake_all(struct ipc_client *c)
{
    pthread_cond_broadcast(&c->cv);
    pthread_cond_broadcast(&c->kcv);
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *b = p;
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -ECONNRESET;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Sends m on the connection of generation gen (0 = whatever is current). */
static int send_msg(struct ipc_client *c, const struct ipc_msg *m, uint64_t gen)
{
    struct buf b = {0};
    int rc = ipc_proto_encode(m, &b);
    if (rc < 0)
        goto out;
    pthread_mutex_lock(&c->wmu);
    if (c->fd < 0)
        rc = -ENOTCONN;
    else if (gen && gen != c->gen)
        rc = -ESTALE;
    else {
        rc = write_all(c->fd, b.data, b.len);
        /* A failed (maybe partial) write leaves the stream unusable: cut it so
         * the reader reconnects instead of another thread writing after a torn frame. */
        if (rc < 0) {
            shutdown(c->fd, SHUT_RDWR);
            rc = -ENOTCONN;
        }
    }
    pthread_mutex_unlock(&c->wmu);
out:
    buf_free(&b);
    return rc;
}

static int connect_once(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

/* After a reconnect: ask the new server to lease us the keys our threads
 * still hold, so it hands them to nobody else meanwhile. Called with mu held. */
static void adopt_held(struct ipc_client *c)
{
    struct ipc_msg *m = calloc(1, sizeof(*m));
    if (!m)
        return;
    m->type = IPC_MSG_ADOPT;
    for (uint32_t i = 0; i < c->n_held; i++) {
        struct held *h = &c->held[i];
        snprintf(m->key, sizeof(m->key), "%s", h->key);
        h->adopting = send_msg(c, m, c->live_gen) == 0;
    }
    free(m);
}

/* The server's answer to ADOPT. Called with mu held. */
static void adopted(struct ipc_client *c, uint64_t id, const char *key)
{
    for (uint32_t i = 0; i < c->n_held; i++) {
        struct held *h = &c->held[i];
        if (!h->adopting || strcmp(h->key, key) != 0)
            continue;
        h->adopting = false;
        if (id) {
            h->cur_id = id;
            h->cur_gen = c->live_gen;
        }
        return;
    }
    if (id) {
        /* The thread finished while ADOPT was on the wire: give the lease back. */
        struct ipc_msg rel = {.type = IPC_MSG_DONE, .id = id, .outcome = IPC_OUTCOME_RELEASE};
        (void)send_msg(c, &rel, c->live_gen);
    }
}

/* Reader side of one connection, until it drops. Returns when it does. */
static void serve_connection(struct ipc_client *c, int fd, struct ipc_msg *m, uint8_t *body)
{
    bool welcomed = false;
    for (;;) {
        uint8_t hdr[4];
        if (read_all(fd, hdr, 4) < 0)
            return;
        uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
        if (n == 0 || n > IPC_FRAME_MAX || read_all(fd, body, n) < 0)
            return;
        const char *why = NULL;
        if (ipc_proto_decode(body, n, m, &why) < 0) {
            log_warn("bad frame from the ipc server; reconnecting", "reason", why, NULL);
            return;
        }
        pthread_mutex_lock(&c->mu);
        bool keep = true;
        switch (m->type) {
        case IPC_MSG_WELCOME:
            if (welcomed) {
                keep = false;
                break;
            }
            welcomed = true;
            c->connected = true;
            c->requested = 0;
            c->st_sent = c->st_recv = 0;
            c->live_gen = c->gen;   /* gen only changes on this thread */
            adopt_held(c);
            wake_all(c);
            break;
        case IPC_MSG_ADOPTED:
            adopted(c, m->id, m->key);
            break;
        case IPC_MSG_KEY:
            if (!welcomed || c->r_len == c->r_cap) {
                keep = false;   /* more keys than we asked for */
                break;
            }
            struct ipc_key *k = &c->ready[(c->r_head + c->r_len) % c->r_cap];
            c->r_len++;
            snprintf(k->key, sizeof(k->key), "%s", m->key);
            k->id = m->id;
            k->conn_gen = c->gen;
            k->requeues = m->requeues;
            k->added_unix_ms = m->added_ms;
            k->wait_ms = m->wait_ms;
            if (c->requested)
                c->requested--;
            pthread_cond_signal(&c->kcv);   /* one key, one puller */
            break;
        case IPC_MSG_STATUS:
            ipc_status_free(&c->status);
            c->status = *m->status;
            free(m->status);
            m->status = NULL;
            c->status_valid = true;
            c->st_recv++;
            pthread_cond_broadcast(&c->cv);
            break;
        case IPC_MSG_ERROR:
            log_warn("ipc server sent an error", "error", m->msg, NULL);
            if (!welcomed) {
                c->fatal = -(int)(m->code ? m->code : EPROTO);
                wake_all(c);
            }
            keep = false;
            break;
        default:
            keep = false;
            break;
        }
        pthread_mutex_unlock(&c->mu);
        ipc_msg_clear(m);
        if (!keep)
            return;
    }
}

static void *reader_main(void *arg)
{
    struct ipc_client *c = arg;
    struct ipc_msg *m = calloc(1, sizeof(*m));
    struct ipc_msg *hello = calloc(1, sizeof(*hello));
    uint8_t *body = malloc(IPC_FRAME_MAX);
    int backoff_ms = 20;
    if (!m || !hello || !body) {
        pthread_mutex_lock(&c->mu);
        c->fatal = -ENOMEM;
        wake_all(c);
        pthread_mutex_unlock(&c->mu);
        goto out;
    }
    hello->type = IPC_MSG_HELLO;
    hello->version = IPC_PROTO_VERSION;
    snprintf(hello->kind, sizeof(hello->kind), "%s", c->kind ? c->kind : "");
    snprintf(hello->worker, sizeof(hello->worker), "%s", c->worker);
    hello->pid = (int32_t)getpid();
    hello->capacity = c->kind ? c->capacity : 0;

    for (;;) {
        pthread_mutex_lock(&c->mu);
        bool stop = c->stop || c->fatal;
        pthread_mutex_unlock(&c->mu);
        if (stop)
            break;
        int fd = connect_once(c->path);
        if (fd >= 0) {
            pthread_mutex_lock(&c->wmu);
            c->fd = fd;
            c->gen++;
            pthread_mutex_unlock(&c->wmu);
            if (send_msg(c, hello, 0) == 0) {
                backoff_ms = 20;
                serve_connection(c, fd, m, body);
            }
            pthread_mutex_lock(&c->mu);
            c->connected = false;
            c->requested = 0;
            c->r_len = 0;   /* keys of a dead connection: the server requeues them */
            wake_all(c);
            pthread_mutex_lock(&c->wmu);
            close(c->fd);
            c->fd = -1;
            pthread_mutex_unlock(&c->wmu);
            pthread_mutex_unlock(&c->mu);
        }
        /* Back off before the next attempt; close() wakes us through the cv. */
        struct timespec ts;
        deadline_after(&ts, backoff_ms);
        pthread_mutex_lock(&c->mu);
        while (!c->stop && !c->fatal && pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&c->mu);
        backoff_ms = backoff_ms * 2 > 1000 ? 1000 : backoff_ms * 2;
    }
out:
    free(m);
    free(hello);
    free(body);
    return NULL;
}

static void client_free(struct ipc_client *c)
{
    ipc_status_free(&c->status);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->wmu);
    pthread_mutex_destroy(&c->smu);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->kcv);
    free(c->ready);
    free(c->held);
    free(c->path);
    free(c->kind);
    free(c->worker);
    free(c);
}

static void stop_reader(struct ipc_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    wake_all(c);
    pthread_mutex_lock(&c->wmu);
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);   /* wakes the blocked read */
    pthread_mutex_unlock(&c->wmu);
    pthread_mutex_unlock(&c->mu);
    if (c->reader_started)
        pthread_join(c->reader, NULL);
    c->reader_started = false;
}

int ipc_client_open(const struct ipc_client_config *cfg, struct ipc_client **out)
{
    struct sockaddr_un sa;
    if (!cfg || !cfg->path || strlen(cfg->path) >= sizeof(sa.sun_path))
        return -EINVAL;
    if (cfg->kind && (!*cfg->kind || strlen(cfg->kind) >= IPC_KIND_MAX))
        return -EINVAL;
    if (cfg->capacity > IPC_CAPACITY_MAX)
        return -EINVAL;
    struct ipc_client *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    char wname[IPC_WORKER_MAX];
    if (cfg->worker)
        snprintf(wname, sizeof(wname), "%s", cfg->worker);
    else
        snprintf(wname, sizeof(wname), "pid-%d", (int)getpid());
    c->fd = -1;
    c->capacity = cfg->capacity ? cfg->capacity : 1;
    c->r_cap = c->capacity;
    c->path = strdup(cfg->path);
    c->kind = cfg->kind ? strdup(cfg->kind) : NULL;
    c->worker = strdup(wname);
    c->ready = calloc(c->r_cap, sizeof(*c->ready));
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->wmu, NULL);
    pthread_mutex_init(&c->smu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_cond_init(&c->kcv, &ca);
    pthread_condattr_destroy(&ca);
    if (!c->path || !c->worker || !c->ready || (cfg->kind && !c->kind)) {
        client_free(c);
        return -ENOMEM;
    }
    if (ipc_key_check(c->worker, strlen(c->worker)) < 0) {
        client_free(c);
        return -EINVAL;
    }
    int rc = pthread_create(&c->reader, NULL, reader_main, c);
    if (rc) {
        client_free(c);
        return -rc;
    }
    c->reader_started = true;

    struct timespec ts;
    deadline_after(&ts, cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 5000);
    pthread_mutex_lock(&c->mu);
    rc = 0;
    while (!c->connected && !c->fatal && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    int result = c->connected ? 0 : c->fatal ? c->fatal : -ETIMEDOUT;
    pthread_mutex_unlock(&c->mu);
    if (result < 0) {
        stop_reader(c);
        client_free(c);
        return result;
    }
    *out = c;
    return 0;
}

int ipc_client_pull(struct ipc_client *c, int timeout_ms, struct ipc_key *out)
{
    struct timespec ts;
    if (!c->kind)
        return -EINVAL;
    if (timeout_ms >= 0)
        deadline_after(&ts, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    c->waiting++;
    for (;;) {
        if (c->stop) {
            rc = -ESHUTDOWN;
            break;
        }
        if (c->fatal && !c->r_len) {
            rc = c->fatal;   /* a restarted server refused us: let the supervisor restart us */
            break;
        }
        if (c->r_len) {
            if (c->n_held == c->cap_held) {
                uint32_t nc = c->cap_held ? c->cap_held * 2 : 8;
                struct held *nh = realloc(c->held, nc * sizeof(*nh));
                if (!nh) {
                    rc = -ENOMEM;
                    break;
                }
                c->held = nh;
                c->cap_held = nc;
            }
            *out = c->ready[c->r_head];
            c->r_head = (c->r_head + 1) % c->r_cap;
            c->r_len--;
            struct held *h = &c->held[c->n_held++];
            h->orig_id = h->cur_id = out->id;
            h->orig_gen = h->cur_gen = out->conn_gen;
            h->adopting = false;
            snprintf(h->key, sizeof(h->key), "%s", out->key);
            rc = 0;
            break;
        }
        if (c->connected && c->requested < c->waiting) {
            struct ipc_msg pull = {.type = IPC_MSG_PULL, .n = 1};
            if (send_msg(c, &pull, 0) == 0)
                c->requested++;
        }
        int w = timeout_ms >= 0 ? pthread_cond_timedwait(&c->kcv, &c->mu, &ts)
                                : pthread_cond_wait(&c->kcv, &c->mu);
        if (w == ETIMEDOUT && !c->r_len) {
            rc = -ETIMEDOUT;
            break;
        }
        if (!c->r_len && !c->stop && !c->fatal)
            c->idle_wakeups++;
    }
    c->waiting--;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int ipc_client_done(struct ipc_client *c, const struct ipc_key *k, const struct ipc_outcome *oc)
{
    if (!k || !oc || (unsigned)oc->kind >= IPC_OUTCOME_MAX_ || oc->n_written > IPC_WRITTEN_MAX ||
        (oc->n_written && !oc->written))
        return -EINVAL;
    /* On the stack, as in ipc_client_status: a 10 KiB calloc per reconcile made
     * glibc consolidate the worker threads' fastbins every time (issue 18). */
    struct ipc_msg msg = {.type = IPC_MSG_DONE}, *m = &msg;
    m->id = k->id;
    m->outcome = (uint32_t)oc->kind;
    if (oc->kind == IPC_OUTCOME_REQUEUE_AFTER) {
        /* Round up: a requeue after 0.4 ms must not become an immediate one. */
        uint64_t ms = (oc->after_ns + 999999u) / 1000000u;
        m->after_ms = ms > IPC_AFTER_MS_MAX ? IPC_AFTER_MS_MAX : ms;
    }
    if (oc->message) {
        /* Messages are free text but must not carry a NUL; truncate to fit. */
        snprintf(m->msg, sizeof(m->msg), "%s", oc->message);
    }
    m->n_written = (uint32_t)oc->n_written;
    for (size_t i = 0; i < oc->n_written; i++)
        m->written[i] = oc->written[i];
    int rc = -ENOENT;
    pthread_mutex_lock(&c->mu);
    for (uint32_t i = 0; i < c->n_held; i++) {
        struct held *h = &c->held[i];
        if (h->orig_id != k->id || h->orig_gen != k->conn_gen)
            continue;
        /* The lease may have moved to a new connection by adoption. */
        if (h->cur_gen == c->live_gen && c->connected) {
            m->id = h->cur_id;
            rc = send_msg(c, m, h->cur_gen);
        } else {
            rc = -ESTALE;
        }
        c->held[i] = c->held[--c->n_held];
        break;
    }
    pthread_mutex_unlock(&c->mu);
    if (rc == -ENOTCONN)
        rc = -ESTALE;   /* the connection it came on is gone: the key comes back by itself */
    return rc;
}

int ipc_client_add(struct ipc_client *c, const char *kind, const char *key, uint64_t after_ms)
{
    if (!kind || !key || strlen(kind) >= IPC_KIND_MAX || ipc_key_check(key, strlen(key)) < 0 ||
        after_ms > IPC_AFTER_MS_MAX)
        return -EINVAL;
    struct ipc_msg msg = {.type = IPC_MSG_ADD}, *m = &msg;
    snprintf(m->kind, sizeof(m->kind), "%s", kind);
    snprintf(m->key, sizeof(m->key), "%s", key);
    m->after_ms = after_ms;
    return send_msg(c, m, 0);
}

int ipc_client_status(struct ipc_client *c, int timeout_ms, struct ipc_status *out)
{
    struct timespec ts;
    deadline_after(&ts, timeout_ms >= 0 ? timeout_ms : 5000);
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->smu);
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    if (!c->connected) {
        rc = -ENOTCONN;
        goto out;
    }
    struct ipc_msg req = {.type = IPC_MSG_STATUS_REQ};
    uint64_t want = ++c->st_sent;
    uint64_t gen = c->gen;
    rc = send_msg(c, &req, gen);
    if (rc < 0)
        goto out;
    while (c->st_recv < want) {
        if (!c->connected || c->gen != gen) {
            rc = -ECONNRESET;
            goto out;
        }
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT && c->st_recv < want) {
            rc = -ETIMEDOUT;
            goto out;
        }
    }
    /* Hand the reply over; the client keeps nothing. */
    *out = c->status;
    memset(&c->status, 0, sizeof(c->status));
    c->status_valid = false;
out:
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&c->smu);
    return rc;
}

void ipc_client_stats(struct ipc_client *c, struct ipc_client_stats *out)
{
    pthread_mutex_lock(&c->mu);
    out->waiting = c->waiting;
    out->idle_wakeups = c->idle_wakeups;
    pthread_mutex_unlock(&c->mu);
}

bool ipc_client_connected(struct ipc_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool v = c->connected;
    pthread_mutex_unlock(&c->mu);
    return v;
}

uint64_t ipc_client_generation(struct ipc_client *c)
{
    pthread_mutex_lock(&c->wmu);
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->wmu);
    return g;
}

void ipc_client_close(struct ipc_client *c)
{
    if (!c)
        return;
    /* Hand back what arrived but was never pulled, so nobody waits on backoff for it. */
    pthread_mutex_lock(&c->mu);
    while (c->r_len) {
        struct ipc_key *k = &c->ready[c->r_head];
        c->r_head = (c->r_head + 1) % c->r_cap;
        c->r_len--;
        struct ipc_msg rel = {.type = IPC_MSG_DONE, .id = k->id, .outcome = IPC_OUTCOME_RELEASE};
        (void)send_msg(c, &rel, k->conn_gen);
    }
    pthread_mutex_unlock(&c->mu);
    stop_reader(c);
    client_free(c);
}

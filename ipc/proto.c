/*
 * proto.c - encoding and strict decoding of ipc frames (see proto.h and
 * docs/ipc.md for the grammar).
 *
 * The decoder is a tiny cursor over the body: it understands only the msgpack
 * forms the grammar uses (maps, arrays, strings, unsigned integers), checks
 * every length against the bytes left before touching them, and never
 * allocates except the bounded arrays of a STATUS reply. A generic msgpack
 * unpacker is deliberately not used: it would allocate what a hostile header
 * announces (an array "of 4 billion elements") before noticing the body is
 * 20 bytes long.
 *
 * The encoder writes the same subset and then decodes its own output, so the
 * two cannot drift apart: anything we send, we would accept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/proto.h"

/* ---- field table -------------------------------------------------------------- */

enum fld {
    F_T, F_V, F_KIND, F_WORKER, F_PID, F_CAP, F_BOOT, F_N, F_ID, F_KEY, F_REQUEUES,
    F_ADDED_MS, F_WAIT_MS, F_O, F_AFTER_MS, F_MSG, F_W, F_CODE, F_QUEUES, F_COUNT_
};

static const char *const fld_name[F_COUNT_] = {
    "t", "v", "kind", "worker", "pid", "cap", "boot", "n", "id", "key", "requeues",
    "added_ms", "wait_ms", "o", "after_ms", "msg", "w", "code", "queues",
};

#define B(f) (1u << (f))

/* Per message type: fields that must be present, fields that may be. */
static const struct {
    uint32_t req, opt;
} shape[IPC_MSG_MAX_] = {
    [IPC_MSG_HELLO] = {B(F_T) | B(F_V) | B(F_WORKER) | B(F_PID) | B(F_CAP), B(F_KIND)},
    [IPC_MSG_WELCOME] = {B(F_T) | B(F_V) | B(F_PID) | B(F_BOOT), 0},
    [IPC_MSG_PULL] = {B(F_T) | B(F_N), 0},
    [IPC_MSG_KEY] = {B(F_T) | B(F_ID) | B(F_KEY) | B(F_REQUEUES) | B(F_ADDED_MS) | B(F_WAIT_MS), 0},
    [IPC_MSG_DONE] = {B(F_T) | B(F_ID) | B(F_O), B(F_AFTER_MS) | B(F_MSG) | B(F_W)},
    [IPC_MSG_ADD] = {B(F_T) | B(F_KIND) | B(F_KEY), B(F_AFTER_MS)},
    [IPC_MSG_STATUS_REQ] = {B(F_T), 0},
    [IPC_MSG_STATUS] = {B(F_T) | B(F_PID) | B(F_QUEUES), 0},
    [IPC_MSG_ERROR] = {B(F_T) | B(F_CODE) | B(F_MSG), 0},
    [IPC_MSG_ADOPT] = {B(F_T) | B(F_KEY), 0},
    [IPC_MSG_ADOPTED] = {B(F_T) | B(F_ID) | B(F_KEY), 0},
};

/* ---- bounded reader ------------------------------------------------------------- */

struct rd {
    const uint8_t *p;
    size_t n;
};

static int rd_take(struct rd *r, size_t k, const uint8_t **out)
{
    if (r->n < k)
        return -1;
    *out = r->p;
    r->p += k;
    r->n -= k;
    return 0;
}

static int rd_be(struct rd *r, size_t k, uint64_t *v)
{
    const uint8_t *b;
    if (rd_take(r, k, &b) < 0)
        return -1;
    *v = 0;
    for (size_t i = 0; i < k; i++)
        *v = (*v << 8) | b[i];
    return 0;
}

/* Container header: fixmap/map16/map32 (want_map) or fixarray/array16/array32. */
static int rd_container(struct rd *r, bool want_map, uint32_t *count)
{
    const uint8_t *b;
    uint64_t v;
    if (rd_take(r, 1, &b) < 0)
        return -1;
    uint8_t fix = want_map ? 0x80 : 0x90, m16 = want_map ? 0xde : 0xdc, m32 = want_map ? 0xdf : 0xdd;
    if ((*b & 0xf0) == fix) {
        *count = *b & 0x0f;
    } else if (*b == m16) {
        if (rd_be(r, 2, &v) < 0)
            return -1;
        *count = (uint32_t)v;
    } else if (*b == m32) {
        if (rd_be(r, 4, &v) < 0)
            return -1;
        *count = (uint32_t)v;
    } else {
        return -1;
    }
    /* Every element takes at least one byte (two for a map entry). */
    if ((uint64_t)*count * (want_map ? 2u : 1u) > r->n)
        return -1;
    return 0;
}

static int rd_str(struct rd *r, const char **s, uint32_t *len)
{
    const uint8_t *b;
    uint64_t v;
    if (rd_take(r, 1, &b) < 0)
        return -1;
    if ((*b & 0xe0) == 0xa0)
        v = *b & 0x1f;
    else if (*b == 0xd9 || *b == 0xda || *b == 0xdb) {
        if (rd_be(r, *b == 0xd9 ? 1 : *b == 0xda ? 2 : 4, &v) < 0)
            return -1;
    } else
        return -1;
    if (rd_take(r, (size_t)v, &b) < 0)
        return -1;
    *s = (const char *)b;
    *len = (uint32_t)v;
    return 0;
}

/* Non-negative integers in any width (signed forms only when >= 0). */
static int rd_uint(struct rd *r, uint64_t *v)
{
    const uint8_t *b;
    if (rd_take(r, 1, &b) < 0)
        return -1;
    uint8_t t = *b;
    if (t <= 0x7f) {
        *v = t;
        return 0;
    }
    if (t >= 0xcc && t <= 0xcf)
        return rd_be(r, (size_t)1 << (t - 0xcc), v);
    if (t >= 0xd0 && t <= 0xd3) {
        size_t k = (size_t)1 << (t - 0xd0);
        if (rd_be(r, k, v) < 0)
            return -1;
        if (*v >> (k * 8 - 1))
            return -1; /* negative */
        return 0;
    }
    return -1;
}

/* ---- value checks ------------------------------------------------------------- */

static bool printable(const char *s, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* Identifier-like string (kind, worker, type, rv, key): 1..cap-1 printable bytes. */
static int take_ident(struct rd *r, char *dst, size_t cap, bool allow_empty)
{
    const char *s;
    uint32_t len;
    if (rd_str(r, &s, &len) < 0 || len >= cap || (!allow_empty && len == 0) || !printable(s, len))
        return -1;
    memcpy(dst, s, len);
    dst[len] = 0;
    return 0;
}

/* Free text (messages): no NUL, bounded. */
static int take_text(struct rd *r, char *dst, size_t cap)
{
    const char *s;
    uint32_t len;
    if (rd_str(r, &s, &len) < 0 || len >= cap || memchr(s, 0, len))
        return -1;
    memcpy(dst, s, len);
    dst[len] = 0;
    return 0;
}

static int take_uint(struct rd *r, uint64_t max, uint64_t *v)
{
    if (rd_uint(r, v) < 0 || *v > max)
        return -1;
    return 0;
}

/* Matches a map key against names[0..n) and marks it in *seen (a bit per name):
 * its index, -1 for a key that is not a name, -2 for one seen before. */
static int take_field(struct rd *r, const char *const *names, int n, uint32_t *seen)
{
    const char *s;
    uint32_t len;
    if (rd_str(r, &s, &len) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) {
            if (*seen & B(i))
                return -2;
            *seen |= B(i);
            return i;
        }
    return -1;
}

/* ---- STATUS body ---------------------------------------------------------------- */

enum { W_PID, W_WORKER, W_CAP, W_IN_FLIGHT, W_OLDEST, W_COUNT_ };
static const char *const wname[W_COUNT_] = {"pid", "worker", "cap", "in_flight", "oldest_ms"};

enum {
    Q_KIND, Q_DEPTH, Q_IN_FLIGHT, Q_WAITING, Q_RETRYING, Q_GATED, Q_KEYS, Q_ADDS, Q_RETRIES,
    Q_RYW_TIMEOUTS, Q_OVERDUE, Q_WORKERS, Q_OLDEST_WAIT, Q_COUNT_
};
static const char *const qname[Q_COUNT_] = {
    "kind", "depth", "in_flight", "waiting", "retrying", "gated", "keys", "adds", "retries",
    "ryw_timeouts", "overdue", "workers", "oldest_wait_ms",
};
/* Fields a watcher from before oldest_wait_ms does not send: a new `rayop
 * status` still reads an instance started by the previous binary. */
#define Q_OPTIONAL B(Q_OLDEST_WAIT)
#define Q_ALL (B(Q_COUNT_) - 1u)

static int dec_worker(struct rd *r, struct ipc_status_worker *w)
{
    uint32_t n, seen = 0;
    uint64_t v;
    if (rd_container(r, true, &n) < 0 || n != W_COUNT_)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        int f = take_field(r, wname, W_COUNT_, &seen);
        if (f < 0)
            return -1;
        switch (f) {
        case W_PID: if (take_uint(r, INT32_MAX, &v) < 0) return -1; w->pid = (int32_t)v; break;
        case W_WORKER: if (take_ident(r, w->worker, sizeof(w->worker), false) < 0) return -1; break;
        case W_CAP: if (take_uint(r, IPC_CAPACITY_MAX, &v) < 0) return -1; w->capacity = (uint32_t)v; break;
        case W_IN_FLIGHT: if (take_uint(r, IPC_CAPACITY_MAX, &v) < 0) return -1; w->in_flight = (uint32_t)v; break;
        default: if (take_uint(r, UINT64_MAX, &w->oldest_ms) < 0) return -1; break;
        }
    }
    return 0;
}

static int dec_queue(struct rd *r, struct ipc_status_queue *q)
{
    uint32_t n, seen = 0;
    uint64_t *nums[Q_COUNT_] = {
        NULL, &q->depth, &q->in_flight, &q->waiting, &q->retrying, &q->gated, &q->keys,
        &q->adds_total, &q->retries_total, &q->ryw_timeouts_total, &q->overdue, NULL,
        &q->oldest_wait_ms,
    };
    if (rd_container(r, true, &n) < 0 || n > Q_COUNT_)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        int f = take_field(r, qname, Q_COUNT_, &seen);
        if (f < 0)
            return -1;
        if (f == Q_KIND) {
            if (take_ident(r, q->kind, sizeof(q->kind), false) < 0)
                return -1;
        } else if (f == Q_WORKERS) {
            uint32_t nw;
            if (rd_container(r, false, &nw) < 0 || nw > IPC_STATUS_WORKERS_MAX)
                return -1;
            if (nw) {
                q->workers = calloc(nw, sizeof(*q->workers));
                if (!q->workers)
                    return -1;
            }
            q->n_workers = nw;
            for (uint32_t k = 0; k < nw; k++)
                if (dec_worker(r, &q->workers[k]) < 0)
                    return -1;
        } else if (take_uint(r, UINT64_MAX, nums[f]) < 0) {
            return -1;
        }
    }
    if ((seen | Q_OPTIONAL) != Q_ALL)
        return -1; /* a required field is missing */
    q->oldest_wait_known = (seen & B(Q_OLDEST_WAIT)) != 0;
    return 0;
}

static int dec_status(struct rd *r, struct ipc_msg *m)
{
    uint32_t n;
    if (rd_container(r, false, &n) < 0 || n > IPC_STATUS_QUEUES_MAX)
        return -1;
    m->status = calloc(1, sizeof(*m->status));
    if (!m->status)
        return -1;
    if (n) {
        m->status->queues = calloc(n, sizeof(*m->status->queues));
        if (!m->status->queues)
            return -1;
    }
    m->status->n_queues = n;
    for (uint32_t i = 0; i < n; i++)
        if (dec_queue(r, &m->status->queues[i]) < 0)
            return -1;
    return 0;
}

/* ---- DONE's written list ---------------------------------------------------------- */

static int dec_written(struct rd *r, struct ipc_msg *m)
{
    uint32_t n, two;
    if (rd_container(r, false, &n) < 0 || n > IPC_WRITTEN_MAX)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (rd_container(r, false, &two) < 0 || two != 2 ||
            take_ident(r, m->written[i].type, IPC_TYPE_MAX, false) < 0 ||
            take_ident(r, m->written[i].rv, IPC_RV_MAX, false) < 0)
            return -1;
    }
    m->n_written = n;
    return 0;
}

/* ---- decode ---------------------------------------------------------------------- */

void ipc_status_free(struct ipc_status *st)
{
    if (!st)
        return;
    for (uint32_t i = 0; st->queues && i < st->n_queues; i++)
        free(st->queues[i].workers);
    free(st->queues);
    st->queues = NULL;
    st->n_queues = 0;
}

void ipc_msg_clear(struct ipc_msg *m)
{
    if (m->status) {
        ipc_status_free(m->status);
        free(m->status);
        m->status = NULL;
    }
}

#define FAIL(why) do { *err = (why); goto bad; } while (0)

int ipc_proto_decode(const uint8_t *body, size_t len, struct ipc_msg *m, const char **err)
{
    struct rd r = {body, len};
    uint32_t n, seen = 0;
    uint64_t v;
    const char *dummy;
    if (!err)
        err = &dummy;
    memset(m, 0, sizeof(*m));
    if (len == 0 || len > IPC_FRAME_MAX)
        FAIL("frame size out of range");
    if (rd_container(&r, true, &n) < 0 || n > F_COUNT_)
        FAIL("frame body is not a map of at most 19 fields");
    for (uint32_t i = 0; i < n; i++) {
        int f = take_field(&r, fld_name, F_COUNT_, &seen);
        if (f == -1)
            FAIL("unknown field");
        if (f < 0)
            FAIL("duplicate field");
        int rc = 0;
        switch (f) {
        case F_T:
            rc = take_uint(&r, IPC_MSG_MAX_ - 1, &v);
            if (rc == 0 && v == 0)
                rc = -1;
            m->type = (enum ipc_msg_type)v;
            break;
        case F_V: rc = take_uint(&r, UINT32_MAX, &v); m->version = (uint32_t)v; break;
        case F_KIND: rc = take_ident(&r, m->kind, sizeof(m->kind), false); break;
        case F_WORKER: rc = take_ident(&r, m->worker, sizeof(m->worker), false); break;
        case F_PID: rc = take_uint(&r, INT32_MAX, &v); m->pid = (int32_t)v; break;
        case F_CAP: rc = take_uint(&r, IPC_CAPACITY_MAX, &v); m->capacity = (uint32_t)v; break;
        case F_BOOT: rc = take_uint(&r, UINT64_MAX, &m->boot); break;
        case F_N:
            rc = take_uint(&r, IPC_CAPACITY_MAX, &v);
            if (rc == 0 && v == 0)
                rc = -1;
            m->n = (uint32_t)v;
            break;
        case F_ID: rc = take_uint(&r, UINT64_MAX, &m->id); break;
        case F_KEY: rc = take_ident(&r, m->key, sizeof(m->key), false); break;
        case F_REQUEUES: rc = take_uint(&r, UINT32_MAX, &v); m->requeues = (uint32_t)v; break;
        case F_ADDED_MS: rc = take_uint(&r, UINT64_MAX, &m->added_ms); break;
        case F_WAIT_MS: rc = take_uint(&r, UINT64_MAX, &m->wait_ms); break;
        case F_O: rc = take_uint(&r, IPC_OUTCOME_MAX_ - 1, &v); m->outcome = (uint32_t)v; break;
        case F_AFTER_MS: rc = take_uint(&r, IPC_AFTER_MS_MAX, &m->after_ms); break;
        case F_MSG: rc = take_text(&r, m->msg, sizeof(m->msg)); break;
        case F_W: rc = dec_written(&r, m); break;
        case F_CODE:
            rc = take_uint(&r, 4095, &v);
            m->code = (uint32_t)v;
            break;
        case F_QUEUES: rc = dec_status(&r, m); break;
        }
        if (rc < 0) {
            *err = "field has the wrong type, length, count or value";
            goto bad;
        }
    }
    if (r.n != 0)
        FAIL("trailing bytes after the map");
    if (!(seen & B(F_T)))
        FAIL("missing message type");
    if ((seen & shape[m->type].req) != shape[m->type].req)
        FAIL("missing required field");
    if (seen & ~(shape[m->type].req | shape[m->type].opt))
        FAIL("field not allowed in this message type");
    if (m->status)
        m->status->pid = m->pid;
    if (m->type == IPC_MSG_HELLO || m->type == IPC_MSG_WELCOME) {
        if (m->version != IPC_PROTO_VERSION)
            FAIL("unsupported protocol version");
    }
    if (m->type == IPC_MSG_HELLO && (seen & B(F_KIND)) && m->capacity == 0)
        FAIL("a worker needs a capacity of at least 1");
    if (m->type == IPC_MSG_DONE && (seen & B(F_AFTER_MS)) && m->outcome != IPC_OUTCOME_REQUEUE_AFTER)
        FAIL("after_ms is only meaningful with outcome requeue_after");
    if (m->type == IPC_MSG_DONE && m->outcome == IPC_OUTCOME_REQUEUE_AFTER && !(seen & B(F_AFTER_MS)))
        FAIL("outcome requeue_after needs after_ms");
    return 0;
bad:
    ipc_msg_clear(m);
    return -EBADMSG;
}

int ipc_proto_frame(const void *data, size_t len, const uint8_t **body, size_t *body_len,
                    size_t *consumed)
{
    const uint8_t *p = data;
    if (len < 4)
        return -EAGAIN;
    uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    if (n == 0 || n > IPC_FRAME_MAX)
        return -EMSGSIZE;
    if (len - 4 < n)
        return -EAGAIN;
    *body = p + 4;
    *body_len = n;
    *consumed = 4 + (size_t)n;
    return 0;
}

/* ---- encode ---------------------------------------------------------------------- */

static int w_hdr(struct buf *b, uint8_t fix, uint8_t m16, uint8_t m32, uint64_t n)
{
    uint8_t h[5];
    if (n < 16) {
        h[0] = (uint8_t)(fix | n);
        return buf_append(b, h, 1);
    }
    if (n <= 0xffff) {
        h[0] = m16; h[1] = (uint8_t)(n >> 8); h[2] = (uint8_t)n;
        return buf_append(b, h, 3);
    }
    h[0] = m32; h[1] = (uint8_t)(n >> 24); h[2] = (uint8_t)(n >> 16);
    h[3] = (uint8_t)(n >> 8); h[4] = (uint8_t)n;
    return buf_append(b, h, 5);
}

static int w_map(struct buf *b, uint64_t n) { return w_hdr(b, 0x80, 0xde, 0xdf, n); }
static int w_arr(struct buf *b, uint64_t n) { return w_hdr(b, 0x90, 0xdc, 0xdd, n); }

static int w_str(struct buf *b, const char *s)
{
    size_t n = strlen(s);
    uint8_t h[5];
    int rc;
    if (n >= UINT32_MAX)
        return -EMSGSIZE;
    if (n < 32) {
        h[0] = (uint8_t)(0xa0 | n);
        rc = buf_append(b, h, 1);
    } else if (n <= 0xff) {
        h[0] = 0xd9; h[1] = (uint8_t)n;
        rc = buf_append(b, h, 2);
    } else if (n <= 0xffff) {
        h[0] = 0xda; h[1] = (uint8_t)(n >> 8); h[2] = (uint8_t)n;
        rc = buf_append(b, h, 3);
    } else {
        h[0] = 0xdb; h[1] = (uint8_t)(n >> 24); h[2] = (uint8_t)(n >> 16);
        h[3] = (uint8_t)(n >> 8); h[4] = (uint8_t)n;
        rc = buf_append(b, h, 5);
    }
    return rc < 0 ? rc : buf_append(b, s, n);
}

static int w_uint(struct buf *b, uint64_t v)
{
    uint8_t h[9];
    size_t k;
    if (v <= 0x7f) {
        h[0] = (uint8_t)v;
        return buf_append(b, h, 1);
    }
    if (v <= 0xff) { h[0] = 0xcc; k = 1; }
    else if (v <= 0xffff) { h[0] = 0xcd; k = 2; }
    else if (v <= 0xffffffffu) { h[0] = 0xce; k = 4; }
    else { h[0] = 0xcf; k = 8; }
    for (size_t i = 0; i < k; i++)
        h[1 + i] = (uint8_t)(v >> (8 * (k - 1 - i)));
    return buf_append(b, h, 1 + k);
}

static int w_kv_uint(struct buf *b, const char *k, uint64_t v)
{
    int rc = w_str(b, k);
    return rc < 0 ? rc : w_uint(b, v);
}

static int w_kv_str(struct buf *b, const char *k, const char *v)
{
    int rc = w_str(b, k);
    return rc < 0 ? rc : w_str(b, v);
}

static int enc_status(struct buf *b, const struct ipc_status *st)
{
    int rc = 0;
    if (!st)
        return -EINVAL;
    rc |= w_arr(b, st->n_queues);
    for (uint32_t i = 0; i < st->n_queues && rc == 0; i++) {
        const struct ipc_status_queue *q = &st->queues[i];
        rc |= w_map(b, q->oldest_wait_known ? Q_COUNT_ : Q_COUNT_ - 1);
        rc |= w_kv_str(b, "kind", q->kind);
        rc |= w_kv_uint(b, "depth", q->depth);
        rc |= w_kv_uint(b, "in_flight", q->in_flight);
        rc |= w_kv_uint(b, "waiting", q->waiting);
        rc |= w_kv_uint(b, "retrying", q->retrying);
        rc |= w_kv_uint(b, "gated", q->gated);
        rc |= w_kv_uint(b, "keys", q->keys);
        rc |= w_kv_uint(b, "adds", q->adds_total);
        rc |= w_kv_uint(b, "retries", q->retries_total);
        rc |= w_kv_uint(b, "ryw_timeouts", q->ryw_timeouts_total);
        rc |= w_kv_uint(b, "overdue", q->overdue);
        if (q->oldest_wait_known)
            rc |= w_kv_uint(b, "oldest_wait_ms", q->oldest_wait_ms);
        rc |= w_str(b, "workers");
        rc |= w_arr(b, q->n_workers);
        for (uint32_t k = 0; k < q->n_workers && rc == 0; k++) {
            const struct ipc_status_worker *w = &q->workers[k];
            rc |= w_map(b, W_COUNT_);
            rc |= w_kv_uint(b, "pid", w->pid < 0 ? 0 : (uint64_t)w->pid);
            rc |= w_kv_str(b, "worker", w->worker);
            rc |= w_kv_uint(b, "cap", w->capacity);
            rc |= w_kv_uint(b, "in_flight", w->in_flight);
            rc |= w_kv_uint(b, "oldest_ms", w->oldest_ms);
        }
    }
    return rc ? -ENOMEM : 0;
}

static int enc_body(const struct ipc_msg *m, struct buf *b)
{
    int rc = 0;
    uint32_t nf;
    if ((unsigned)m->type >= IPC_MSG_MAX_ || m->type == 0)
        return -EINVAL;
    bool has_kind = m->type == IPC_MSG_ADD || (m->type == IPC_MSG_HELLO && m->kind[0]);
    bool has_after = (m->type == IPC_MSG_DONE && m->outcome == IPC_OUTCOME_REQUEUE_AFTER) ||
                     (m->type == IPC_MSG_ADD && m->after_ms);
    bool has_msg = m->type == IPC_MSG_ERROR || (m->type == IPC_MSG_DONE && m->msg[0]);
    bool has_w = m->type == IPC_MSG_DONE && m->n_written;
    uint32_t fields = shape[m->type].req;
    if (has_kind)
        fields |= B(F_KIND);
    if (has_after)
        fields |= B(F_AFTER_MS);
    if (has_msg)
        fields |= B(F_MSG);
    if (has_w)
        fields |= B(F_W);
    nf = (uint32_t)__builtin_popcount(fields);
    rc |= w_map(b, nf);
    for (int f = 0; f < F_COUNT_ && rc == 0; f++) {
        if (!(fields & B(f)))
            continue;
        rc |= w_str(b, fld_name[f]);
        switch (f) {
        case F_T: rc |= w_uint(b, m->type); break;
        case F_V: rc |= w_uint(b, m->version); break;
        case F_KIND: rc |= w_str(b, m->kind); break;
        case F_WORKER: rc |= w_str(b, m->worker); break;
        case F_PID: rc |= w_uint(b, m->pid < 0 ? 0 : (uint64_t)m->pid); break;
        case F_CAP: rc |= w_uint(b, m->capacity); break;
        case F_BOOT: rc |= w_uint(b, m->boot); break;
        case F_N: rc |= w_uint(b, m->n); break;
        case F_ID: rc |= w_uint(b, m->id); break;
        case F_KEY: rc |= w_str(b, m->key); break;
        case F_REQUEUES: rc |= w_uint(b, m->requeues); break;
        case F_ADDED_MS: rc |= w_uint(b, m->added_ms); break;
        case F_WAIT_MS: rc |= w_uint(b, m->wait_ms); break;
        case F_O: rc |= w_uint(b, m->outcome); break;
        case F_AFTER_MS: rc |= w_uint(b, m->after_ms); break;
        case F_MSG: rc |= w_str(b, m->msg); break;
        case F_W:
            if (m->n_written > IPC_WRITTEN_MAX)
                return -EINVAL;
            rc |= w_arr(b, m->n_written);
            for (uint32_t i = 0; i < m->n_written && rc == 0; i++) {
                rc |= w_arr(b, 2);
                rc |= w_str(b, m->written[i].type);
                rc |= w_str(b, m->written[i].rv);
            }
            break;
        case F_CODE: rc |= w_uint(b, m->code); break;
        case F_QUEUES:
            if (enc_status(b, m->status) < 0)
                return -EINVAL;
            break;
        }
    }
    return rc ? -ENOMEM : 0;
}

int ipc_proto_encode(const struct ipc_msg *m, struct buf *out)
{
    struct buf body = {0};
    struct ipc_msg *check = NULL;
    int rc = enc_body(m, &body);
    if (rc < 0)
        goto out;
    if (body.len > IPC_FRAME_MAX) {
        rc = -EMSGSIZE;
        goto out;
    }
    /* Self-check: refuse to send what the peer's decoder would reject. */
    check = malloc(sizeof(*check));
    if (!check) {
        rc = -ENOMEM;
        goto out;
    }
    if (ipc_proto_decode((const uint8_t *)body.data, body.len, check, NULL) < 0) {
        rc = -EINVAL;
        goto out;
    }
    ipc_msg_clear(check);
    uint8_t hdr[4] = {(uint8_t)(body.len >> 24), (uint8_t)(body.len >> 16),
                      (uint8_t)(body.len >> 8), (uint8_t)body.len};
    rc = buf_append(out, hdr, 4);
    if (rc == 0)
        rc = buf_append(out, body.data, body.len);
out:
    free(check);
    buf_free(&body);
    return rc;
}

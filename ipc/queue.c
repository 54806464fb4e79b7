/*
 * queue.c - one kind's work queue: client-go's rate-limited delaying workqueue
 * as a single-threaded data structure, plus the read-your-writes gate.
 *
 * Every key the queue knows has one entry (hash by key) carrying its state:
 *   dirty       wants processing (an Add happened since it was last handed out)
 *   in_ready    sits in the ready FIFO (dirty, not processing, not gated)
 *   processing  handed out under lease_id, not Done yet
 *   gated       Done reported writes the cache has not shown yet
 *   heap_idx    waiting in the delay heap until ready_at
 *   failures    per-item backoff exponent (NumRequeues)
 * An entry with none of these is freed, so memory follows the live keys.
 *
 * A key is in the ready FIFO only if dirty && !processing && !gated, which is
 * what makes "one holder per key" and "no hand-out before the cache caught up"
 * true by construction; the server only ever hands out what get() returns.
 * Time comes from the injected clock; nothing here blocks or sleeps.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>
#include <utlist.h>

#include "ipc/ipc.h"
#include "util/util.h"

#define HEAP_NONE SIZE_MAX

const uint64_t ipc_hist_bounds_ns[IPC_HIST_BUCKETS] = {
    10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
};

struct qent {
    UT_hash_handle hh;
    struct qent *rprev, *rnext;   /* ready FIFO */
    struct qent *pprev, *pnext;   /* processing list, oldest first */
    struct qent *gprev, *gnext;   /* gated list, earliest deadline first */
    size_t heap_idx;
    uint64_t ready_at;            /* delay heap order */
    uint64_t added_ns;            /* became dirty (queue duration start) */
    uint64_t got_ns;
    uint64_t lease_id;
    uint64_t gate_deadline;
    uint32_t failures;
    uint32_t gate_n;
    struct ipc_written *gate_w;   /* owned */
    unsigned dirty : 1, in_ready : 1, processing : 1, gated : 1, low : 1;
    char key[];
};

struct ipc_queue {
    char kind[IPC_KIND_MAX];
    struct ipc_queue_config cfg;
    ipc_now_fn now;
    void *now_ud;
    ipc_seen_fn seen;
    void *seen_ud;
    struct qent *table;
    struct qent *ready, *ready_low, *proc, *gate;  /* ready_low: background adds */
    struct qent **heap;
    size_t heap_len, heap_cap;
    uint64_t next_id;
    double tokens;
    uint64_t bucket_last;
    bool shut;
    uint64_t n_ready, n_proc, n_gated, n_retrying;
    struct ipc_queue_stats st;    /* counters and histograms only */
};

static uint64_t default_now(void *ud)
{
    (void)ud;
    return util_now_ns();
}

static uint64_t qnow(const struct ipc_queue *q)
{
    return q->now(q->now_ud);
}

void ipc_queue_config_default(struct ipc_queue_config *cfg)
{
    cfg->base_delay_ns = 5000000ull;
    cfg->max_delay_ns = 1000ull * 1000000000ull;
    cfg->bucket_qps = 10.0;
    cfg->bucket_burst = 100;
    cfg->ryw_timeout_ns = 5ull * 1000000000ull;
}

int ipc_key_check(const char *key, size_t len)
{
    if (!key || len == 0 || len >= IPC_KEY_MAX)
        return -EINVAL;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
            return -EINVAL;
    return 0;
}

void ipc_hist_observe(struct ipc_hist *h, uint64_t ns)
{
    size_t i = 0;
    while (i < IPC_HIST_BUCKETS && ns > ipc_hist_bounds_ns[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum_ns += ns;
}

/* ---- delay heap (min by ready_at) ------------------------------------------ */

static void heap_swap(struct ipc_queue *q, size_t a, size_t b)
{
    struct qent *t = q->heap[a];
    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a]->heap_idx = a;
    q->heap[b]->heap_idx = b;
}

static void heap_up(struct ipc_queue *q, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (q->heap[p]->ready_at <= q->heap[i]->ready_at)
            break;
        heap_swap(q, p, i);
        i = p;
    }
}

static void heap_down(struct ipc_queue *q, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->heap_len && q->heap[l]->ready_at < q->heap[m]->ready_at)
            m = l;
        if (r < q->heap_len && q->heap[r]->ready_at < q->heap[m]->ready_at)
            m = r;
        if (m == i)
            return;
        heap_swap(q, i, m);
        i = m;
    }
}

static int heap_push(struct ipc_queue *q, struct qent *e)
{
    if (util_array_grow(&q->heap, sizeof(*q->heap), q->heap_len, &q->heap_cap, 64) < 0)
        return -ENOMEM;
    e->heap_idx = q->heap_len;
    q->heap[q->heap_len++] = e;
    heap_up(q, e->heap_idx);
    return 0;
}

static void heap_remove(struct ipc_queue *q, struct qent *e)
{
    size_t i = e->heap_idx;
    if (i == HEAP_NONE)
        return;
    size_t last = q->heap_len - 1;
    if (i != last) {
        heap_swap(q, i, last);
        q->heap_len--;
        heap_down(q, i);
        heap_up(q, i);
    } else {
        q->heap_len--;
    }
    e->heap_idx = HEAP_NONE;
}

/* ---- entries --------------------------------------------------------------- */

static struct qent *ent_find(struct ipc_queue *q, const char *key)
{
    struct qent *e = NULL;
    HASH_FIND_STR(q->table, key, e);
    return e;
}

static struct qent *ent_get(struct ipc_queue *q, const char *key, size_t len)
{
    struct qent *e = ent_find(q, key);
    if (e)
        return e;
    e = calloc(1, sizeof(*e) + len + 1);
    if (!e)
        return NULL;
    memcpy(e->key, key, len);
    e->heap_idx = HEAP_NONE;
    HASH_ADD_KEYPTR(hh, q->table, e->key, len, e);
    return e;
}

static void ent_set_failures(struct ipc_queue *q, struct qent *e, uint32_t f)
{
    if (e->failures == 0 && f > 0)
        q->n_retrying++;
    else if (e->failures > 0 && f == 0)
        q->n_retrying--;
    e->failures = f;
}

/* Frees e once nothing refers to it any more. */
static void ent_maybe_free(struct ipc_queue *q, struct qent *e)
{
    if (e->dirty || e->processing || e->gated || e->heap_idx != HEAP_NONE || e->failures)
        return;
    HASH_DEL(q->table, e);
    free(e->gate_w);
    free(e);
}

/* The ready list of e's lane. */
static struct qent **ready_lane(struct ipc_queue *q, const struct qent *e)
{
    return e->low ? &q->ready_low : &q->ready;
}

static void ready_push(struct ipc_queue *q, struct qent *e)
{
    struct qent **lane = ready_lane(q, e);

    if (e->in_ready)
        return;
    DL_APPEND2(*lane, e, rprev, rnext);
    e->in_ready = 1;
    q->n_ready++;
}

static void ready_remove(struct ipc_queue *q, struct qent *e)
{
    struct qent **lane = ready_lane(q, e);

    if (!e->in_ready)
        return;
    DL_DELETE2(*lane, e, rprev, rnext);
    e->in_ready = 0;
    q->n_ready--;
}

/* Add on an existing entry: the one place a key becomes dirty. A low add
 * (resync, initial list) queues behind every normal one; adds merge to the
 * higher priority, like controller-runtime's priority queue. */
static void ent_add_prio(struct ipc_queue *q, struct qent *e, bool low)
{
    if (q->shut)
        return;
    if (e->dirty) {
        if (!low && e->low) {
            bool was_ready = e->in_ready;
            ready_remove(q, e);
            e->low = 0;
            if (was_ready)
                ready_push(q, e);
        }
        return;
    }
    q->st.adds_total++;
    e->dirty = 1;
    e->low = low;
    e->added_ns = qnow(q);
    if (!e->processing && !e->gated)
        ready_push(q, e);
}

static void ent_add(struct ipc_queue *q, struct qent *e)
{
    ent_add_prio(q, e, false);
}

static int ent_add_after(struct ipc_queue *q, struct qent *e, uint64_t delay_ns)
{
    if (q->shut)
        return 0;
    if (delay_ns == 0) {
        ent_add(q, e);
        return 0;
    }
    uint64_t now = qnow(q);
    uint64_t at = delay_ns > UINT64_MAX - now ? UINT64_MAX : now + delay_ns;
    if (e->heap_idx != HEAP_NONE) {
        /* The earliest readiness wins: only ever move a waiting key earlier. */
        if (at < e->ready_at) {
            e->ready_at = at;
            heap_up(q, e->heap_idx);
        }
        return 0;
    }
    e->ready_at = at;
    return heap_push(q, e);
}

/* The limiter's When: max of the per-item exponential backoff and the bucket. */
static uint64_t ent_when(struct ipc_queue *q, struct qent *e)
{
    uint32_t exp = e->failures;
    ent_set_failures(q, e, e->failures == UINT32_MAX ? UINT32_MAX : e->failures + 1);
    uint64_t d = q->cfg.max_delay_ns;
    if (exp < 63 && q->cfg.base_delay_ns <= (q->cfg.max_delay_ns >> exp))
        d = q->cfg.base_delay_ns << exp;
    if (d > q->cfg.max_delay_ns)
        d = q->cfg.max_delay_ns;

    if (q->cfg.bucket_qps > 0) {
        uint64_t now = qnow(q);
        if (now > q->bucket_last) {
            q->tokens += (double)(now - q->bucket_last) * q->cfg.bucket_qps / 1e9;
            if (q->tokens > (double)q->cfg.bucket_burst)
                q->tokens = (double)q->cfg.bucket_burst;
            q->bucket_last = now;
        }
        q->tokens -= 1.0;
        if (q->tokens < 0) {
            double wait = -q->tokens / q->cfg.bucket_qps * 1e9;
            uint64_t bd = wait >= 1.8e19 ? UINT64_MAX : (uint64_t)(wait + 0.5);
            if (bd > d)
                d = bd;
        }
    }
    return d;
}

/* ---- read-your-writes gate ------------------------------------------------- */

static bool gate_seen(struct ipc_queue *q, const struct ipc_written *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (q->seen(q->seen_ud, w[i].type, w[i].rv) != 1)
            return false;
    return true;
}

/* Takes e off the gate list and forgets the rvs it waited for. */
static void gate_drop(struct ipc_queue *q, struct qent *e)
{
    DL_DELETE2(q->gate, e, gprev, gnext);
    e->gated = 0;
    q->n_gated--;
    free(e->gate_w);
    e->gate_w = NULL;
    e->gate_n = 0;
}

static void gate_release(struct ipc_queue *q, struct qent *e)
{
    gate_drop(q, e);
    if (e->dirty && !e->processing)
        ready_push(q, e);
    ent_maybe_free(q, e);
}

/* Holds e until the cache shows every write, or the bounded wait ends. */
static int gate_hold(struct ipc_queue *q, struct qent *e, const struct ipc_written *w, size_t n)
{
    if (n == 0 || !q->seen || gate_seen(q, w, n))
        return 0;
    e->gate_w = malloc(n * sizeof(*w));
    if (!e->gate_w)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        snprintf(e->gate_w[i].type, sizeof(e->gate_w[i].type), "%s", w[i].type);
        snprintf(e->gate_w[i].rv, sizeof(e->gate_w[i].rv), "%s", w[i].rv);
    }
    e->gate_n = (uint32_t)n;
    e->gated = 1;
    uint64_t now = qnow(q);
    e->gate_deadline = q->cfg.ryw_timeout_ns > UINT64_MAX - now ? UINT64_MAX
                                                                : now + q->cfg.ryw_timeout_ns;
    /* A constant timeout on a monotonic clock keeps the list in deadline order. */
    DL_APPEND2(q->gate, e, gprev, gnext);
    q->n_gated++;
    q->st.gated_total++;
    return 0;
}

/* ---- public API ------------------------------------------------------------ */

int ipc_queue_new(const char *kind, const struct ipc_queue_config *cfg,
                  ipc_now_fn now, void *now_ud, struct ipc_queue **out)
{
    if (!kind || !*kind || strlen(kind) >= IPC_KIND_MAX || !out)
        return -EINVAL;
    struct ipc_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    snprintf(q->kind, sizeof(q->kind), "%s", kind);
    if (cfg)
        q->cfg = *cfg;
    else
        ipc_queue_config_default(&q->cfg);
    if (q->cfg.max_delay_ns < q->cfg.base_delay_ns)
        q->cfg.max_delay_ns = q->cfg.base_delay_ns;
    q->now = now ? now : default_now;
    q->now_ud = now ? now_ud : NULL;
    q->tokens = (double)q->cfg.bucket_burst;
    q->bucket_last = qnow(q);
    *out = q;
    return 0;
}

void ipc_queue_free(struct ipc_queue *q)
{
    if (!q)
        return;
    struct qent *e, *tmp;
    HASH_ITER(hh, q->table, e, tmp) {
        HASH_DEL(q->table, e);
        free(e->gate_w);
        free(e);
    }
    free(q->heap);
    free(q);
}

const char *ipc_queue_kind(const struct ipc_queue *q)
{
    return q->kind;
}

void ipc_queue_set_seen(struct ipc_queue *q, ipc_seen_fn seen, void *ud)
{
    q->seen = seen;
    q->seen_ud = ud;
}

int ipc_queue_add(struct ipc_queue *q, const char *key)
{
    return ipc_queue_add_after(q, key, 0);
}

/* Validates key and finds (or creates) its entry. 0 with *out set; 0 with *out NULL
 * after shutdown (adds are then ignored); -EINVAL for a bad key; -ENOMEM. */
static int ent_lookup(struct ipc_queue *q, const char *key, struct qent **out)
{
    size_t len = key ? strlen(key) : 0;

    *out = NULL;
    if (ipc_key_check(key, len) < 0)
        return -EINVAL;
    if (q->shut)
        return 0;
    return (*out = ent_get(q, key, len)) ? 0 : -ENOMEM;
}

int ipc_queue_add_low(struct ipc_queue *q, const char *key)
{
    struct qent *e;
    int rc = ent_lookup(q, key, &e);
    if (rc < 0 || !e)
        return rc;
    ent_add_prio(q, e, true);
    ent_maybe_free(q, e);
    return 0;
}

int ipc_queue_add_after(struct ipc_queue *q, const char *key, uint64_t delay_ns)
{
    struct qent *e;
    int rc = ent_lookup(q, key, &e);
    if (rc < 0 || !e)
        return rc;
    rc = ent_add_after(q, e, delay_ns);
    ent_maybe_free(q, e);
    return rc;
}

int ipc_queue_add_rate_limited(struct ipc_queue *q, const char *key)
{
    struct qent *e;
    int rc = ent_lookup(q, key, &e);
    if (rc < 0 || !e)
        return rc;
    q->st.retries_total++;
    rc = ent_add_after(q, e, ent_when(q, e));
    ent_maybe_free(q, e);
    return rc;
}

void ipc_queue_forget(struct ipc_queue *q, const char *key)
{
    struct qent *e = key ? ent_find(q, key) : NULL;
    if (!e)
        return;
    ent_set_failures(q, e, 0);
    ent_maybe_free(q, e);
}

uint32_t ipc_queue_num_requeues(struct ipc_queue *q, const char *key)
{
    struct qent *e = key ? ent_find(q, key) : NULL;
    return e ? e->failures : 0;
}

int ipc_queue_get(struct ipc_queue *q, struct ipc_lease *out)
{
    struct qent *e = q->ready ? q->ready : q->ready_low;
    if (!e)
        return q->shut ? -ESHUTDOWN : -EAGAIN;
    ready_remove(q, e);
    e->dirty = 0;
    e->low = 0;
    e->processing = 1;
    e->lease_id = ++q->next_id;
    e->got_ns = qnow(q);
    DL_APPEND2(q->proc, e, pprev, pnext);
    q->n_proc++;
    ipc_hist_observe(&q->st.queue_duration, e->got_ns >= e->added_ns ? e->got_ns - e->added_ns : 0);
    out->key = e->key;
    out->id = e->lease_id;
    out->requeues = e->failures;
    out->added_ns = e->added_ns;
    out->got_ns = e->got_ns;
    return 0;
}

int ipc_queue_adopt(struct ipc_queue *q, const char *key, struct ipc_lease *out)
{
    size_t len = key ? strlen(key) : 0;
    if (ipc_key_check(key, len) < 0)
        return -EINVAL;
    struct qent *e = ent_get(q, key, len);
    if (!e)
        return -ENOMEM;
    if (e->processing)
        return -EBUSY;
    if (e->gated)   /* the gate guarded a hand-out; the key is already in a worker's hands */
        gate_drop(q, e);
    /* A queued add is not consumed: it stays dirty and is delivered after Done,
     * because it may be news the adopting worker has not seen. */
    ready_remove(q, e);
    e->processing = 1;
    e->lease_id = ++q->next_id;
    e->got_ns = qnow(q);
    DL_APPEND2(q->proc, e, pprev, pnext);
    q->n_proc++;
    out->key = e->key;
    out->id = e->lease_id;
    out->requeues = e->failures;
    out->added_ns = e->got_ns;
    out->got_ns = e->got_ns;
    return 0;
}

int ipc_queue_done(struct ipc_queue *q, const char *key, uint64_t id,
                   const struct ipc_outcome *oc)
{
    if (!key || !oc || (unsigned)oc->kind >= IPC_OUTCOME_MAX_ || oc->n_written > IPC_WRITTEN_MAX ||
        (oc->n_written && !oc->written))
        return -EINVAL;
    struct qent *e = ent_find(q, key);
    if (!e || !e->processing || e->lease_id != id)
        return -ENOENT;
    uint64_t now = qnow(q);
    e->processing = 0;
    DL_DELETE2(q->proc, e, pprev, pnext);
    q->n_proc--;
    ipc_hist_observe(&q->st.work_duration, now >= e->got_ns ? now - e->got_ns : 0);
    q->st.done_total[oc->kind]++;

    /* Gate before requeueing, so the requeue cannot slip into the ready FIFO. */
    int rc = gate_hold(q, e, oc->written, oc->n_written);

    int rc2 = 0;
    switch (oc->kind) {
    case IPC_OUTCOME_OK:
        ent_set_failures(q, e, 0);
        break;
    case IPC_OUTCOME_REQUEUE_AFTER:
        ent_set_failures(q, e, 0);
        rc2 = ent_add_after(q, e, oc->after_ns);
        break;
    case IPC_OUTCOME_ERROR:
        q->st.retries_total++;
        rc2 = ent_add_after(q, e, ent_when(q, e));
        break;
    case IPC_OUTCOME_TERMINAL:
        /* No retry until the next event: drop a pending delayed retry too.
         * The backoff is reset so that event is handled promptly. */
        heap_remove(q, e);
        ent_set_failures(q, e, 0);
        break;
    case IPC_OUTCOME_RELEASE:
    default:
        ent_add(q, e);
        break;
    }
    if (e->dirty && !e->gated)
        ready_push(q, e);
    ent_maybe_free(q, e);
    return rc < 0 ? rc : rc2;
}

void ipc_queue_tick(struct ipc_queue *q)
{
    uint64_t now = qnow(q);
    while (q->heap_len && q->heap[0]->ready_at <= now) {
        struct qent *e = q->heap[0];
        heap_remove(q, e);
        ent_add(q, e);
        ent_maybe_free(q, e);
    }
    while (q->gate && q->gate->gate_deadline <= now) {
        struct qent *e = q->gate;
        char waited[32];
        snprintf(waited, sizeof(waited), "%" PRIu64, q->cfg.ryw_timeout_ns / 1000000u);
        q->st.ryw_timeouts_total++;
        log_warn("read-your-writes wait expired; handing the key out anyway",
                 "kind", q->kind, "key", e->key, "type", e->gate_w[0].type,
                 "rv", e->gate_w[0].rv, "waited_ms", waited, NULL);
        gate_release(q, e);
    }
}

void ipc_queue_progress(struct ipc_queue *q)
{
    struct qent *e, *tmp;
    if (!q->seen)
        return;
    DL_FOREACH_SAFE2(q->gate, e, tmp, gnext) {
        if (gate_seen(q, e->gate_w, e->gate_n))
            gate_release(q, e);
    }
}

uint64_t ipc_queue_next_deadline(const struct ipc_queue *q)
{
    uint64_t d = UINT64_MAX;
    if (q->heap_len)
        d = q->heap[0]->ready_at;
    if (q->gate && q->gate->gate_deadline < d)
        d = q->gate->gate_deadline;
    return d;
}

void ipc_queue_shutdown(struct ipc_queue *q)
{
    q->shut = true;
}

void ipc_queue_stats(const struct ipc_queue *q, struct ipc_queue_stats *out)
{
    *out = q->st;
    out->depth = q->n_ready;
    out->in_flight = q->n_proc;
    out->waiting = q->heap_len;
    out->retrying = q->n_retrying;
    out->gated = q->n_gated;
    out->keys = HASH_COUNT(q->table);
    uint64_t now = qnow(q), sum = 0;
    const struct qent *e;
    for (e = q->proc; e; e = e->pnext)
        sum += now >= e->got_ns ? now - e->got_ns : 0;
    out->unfinished_work_ns = sum;
    out->longest_running_ns = q->proc && now >= q->proc->got_ns ? now - q->proc->got_ns : 0;
    /* Both FIFOs are walked: a key dirtied while it was processing joins the
     * FIFO at Done with its older added_ns, so the head is not always oldest. */
    uint64_t oldest = 0;
    for (e = q->ready; e; e = e->rnext)
        if (now > e->added_ns && now - e->added_ns > oldest)
            oldest = now - e->added_ns;
    for (e = q->ready_low; e; e = e->rnext)
        if (now > e->added_ns && now - e->added_ns > oldest)
            oldest = now - e->added_ns;
    out->oldest_ready_ns = oldest;
}

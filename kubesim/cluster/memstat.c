/*
 * memstat.c - the simulated cluster's share of GET /kubesim/memory: the Pod,
 * Service and Node tables, the endpoints label index, the timer heap, the key lists
 * and the work queue, as the malloc chunks behind them (store_mem_chunk), so the
 * answer's sum compares with malloc's in-use bytes.
 *
 * The tables belong to the cluster thread and are walked by it alone: the reporter
 * the store calls from an HTTP thread asks the thread for a measure and waits for it
 * (at most MEM_WAIT_MS), then reads the sums the thread published into atomics and the
 * queue, under the queue's lock. The thread measures only when asked: walking every
 * Pod's record once a second was 4 % of its CPU at 10,000 RayClusters (issue 18).
 */
#include "kubesim/cluster/internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "util/util.h"

static size_t keys_bytes(char *const *v, size_t n)
{
    size_t b = store_mem_chunk(v);

    for (size_t i = 0; i < n; i++)
        b += store_mem_chunk(v[i]);
    return b;
}

/* A cJSON tree's nodes, keys and strings (the copies the records keep). */
static size_t json_bytes(const cJSON *j)
{
    size_t b = 0;

    for (; j; j = j->next) {
        b += store_mem_chunk(j) + json_bytes(j->child);
        if (!(j->type & cJSON_StringIsConst))
            b += store_mem_chunk(j->string);
        if (!(j->type & cJSON_IsReference))
            b += store_mem_chunk(j->valuestring);
    }
    return b;
}

static size_t pods_bytes(const struct cluster *c)
{
    size_t b = c->pods ? store_mem_table(&c->pods->hh) : 0;

    for (const struct cl_pod *p = c->pods; p; p = p->hh.next)
        b += store_mem_chunk(p) + store_mem_chunk(p->key) + store_mem_chunk(p->acct_node) +
             store_mem_chunk(p->unsched_msg) + store_mem_chunk(p->backoff_ev) +
             store_mem_chunk(p->ep.node) + store_mem_chunk(p->v.ctl_name) +
             store_mem_chunk(p->v.ctl_uid) + json_bytes(p->v.sched);
    return b;
}

static size_t svcs_bytes(const struct cluster *c)
{
    size_t b = c->svcs ? store_mem_table(&c->svcs->hh) : 0;

    for (const struct cl_svc *s = c->svcs; s; s = s->hh.next) {
        b += store_mem_chunk(s) + store_mem_chunk(s->key) + json_bytes(s->view);
        b += cluster__mem_keyed_table(s->members ? &s->members->hh : NULL);
    }
    return b;
}

static size_t nodes_bytes(const struct cluster *c)
{
    size_t b = c->nodes ? store_mem_table(&c->nodes->hh) : 0;

    for (const struct cl_node *n = c->nodes; n; n = n->hh.next)
        b += store_mem_chunk(n) + store_mem_chunk(n->name);
    return b + store_mem_chunk(c->free_idx);
}

static size_t jobs_bytes(const struct cluster *c)
{
    size_t b = c->jobs ? store_mem_table(&c->jobs->hh) + store_mem_table(&c->jobs->hu) : 0;

    for (const struct cl_job *j = c->jobs; j; j = j->hh.next) {
        b += store_mem_chunk(j) + store_mem_chunk(j->key) + store_mem_chunk(j->uid);
        if (j->pods)
            b += store_mem_table(&j->pods->hj);
    }
    return b + cluster__mem_keyed_table(c->jpods ? &c->jpods->hh : NULL);
}

static size_t timers_bytes(const struct cluster *c)
{
    size_t b = store_mem_chunk(c->heap);

    for (size_t i = 0; i < c->nheap; i++)
        b += store_mem_chunk(c->heap[i].key);
    return b;
}

/* How long a report waits for the thread's measure: a turn at 10,000 RayClusters
 * takes up to a second or two; past this the report gives the last measure. */
#define MEM_WAIT_MS 5000

void cluster__memory_publish(struct cluster *c)
{
    atomic_store_explicit(&c->mem.pods, pods_bytes(c), memory_order_relaxed);
    atomic_store_explicit(&c->mem.n_pods, HASH_COUNT(c->pods), memory_order_relaxed);
    atomic_store_explicit(&c->mem.svcs, svcs_bytes(c), memory_order_relaxed);
    atomic_store_explicit(&c->mem.nodes, nodes_bytes(c), memory_order_relaxed);
    atomic_store_explicit(&c->mem.jobs, jobs_bytes(c), memory_order_relaxed);
    atomic_store_explicit(&c->mem.ep_index, cluster__endpoints_index_bytes(c),
                          memory_order_relaxed);
    atomic_store_explicit(&c->mem.timers, timers_bytes(c), memory_order_relaxed);
    atomic_store_explicit(&c->mem.lists,
                          keys_bytes(c->pending, c->npending) +
                          keys_bytes(c->unsched, c->nunsched) +
                          keys_bytes(c->ep_dirty, c->nep_dirty) +
                          keys_bytes(c->job_dirty, c->njob_dirty) +
                          keys_bytes(c->deploy_dirty, c->ndeploy_dirty) +
                          keys_bytes(c->rs_dirty, c->nrs_dirty), memory_order_relaxed);
}

void cluster__memory_serve(struct cluster *c)
{
    uint64_t asked;

    pthread_mutex_lock(&c->qlock);
    asked = c->mem.asked;
    pthread_mutex_unlock(&c->qlock);
    if (asked == c->mem.done)   /* done is written by this thread alone */
        return;
    cluster__memory_publish(c);
    pthread_mutex_lock(&c->qlock);
    c->mem.done = asked;
    pthread_cond_broadcast(&c->mem.measured);
    pthread_mutex_unlock(&c->qlock);
}

/* Asks the running thread for a measure and waits for it. qlock held. */
static void measure_wait(struct cluster *c)
{
    uint64_t want;
    struct timespec ts;

    if (!c->started || c->stop)
        return;   /* no thread (a test measures itself), or it has ended */
    want = ++c->mem.asked;
    pthread_cond_signal(&c->qcond);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += MEM_WAIT_MS / 1000;
    while (c->mem.done < want && !c->stop)
        if (pthread_cond_timedwait(&c->mem.measured, &c->qlock, &ts) == ETIMEDOUT)
            break;
}

size_t cluster__memory_report(void *arg, struct buf *out)
{
    struct cluster *c = arg;
    size_t q, qn, qtext = 0, sum, pods, svcs, nodes, jobs, epx, timers, lists;

    /* the queue holds a reference to each committed snapshot until the thread takes
     * it: in a burst those are older snapshots nothing else keeps */
    pthread_mutex_lock(&c->qlock);
    measure_wait(c);
    pods = atomic_load_explicit(&c->mem.pods, memory_order_relaxed);
    svcs = atomic_load_explicit(&c->mem.svcs, memory_order_relaxed);
    nodes = atomic_load_explicit(&c->mem.nodes, memory_order_relaxed);
    jobs = atomic_load_explicit(&c->mem.jobs, memory_order_relaxed);
    epx = atomic_load_explicit(&c->mem.ep_index, memory_order_relaxed);
    timers = atomic_load_explicit(&c->mem.timers, memory_order_relaxed);
    lists = atomic_load_explicit(&c->mem.lists, memory_order_relaxed);
    q = store_mem_chunk(c->q);
    qn = c->qlen;
    for (size_t i = 0; i < c->qlen; i++)
        qtext += c->q[i].obj->len;
    pthread_mutex_unlock(&c->qlock);
    sum = pods + svcs + nodes + jobs + epx + timers + lists + q;
    buf_printf(out, "\"pods\":%zu,\"podBytes\":%zu,\"serviceBytes\":%zu,\"nodeBytes\":%zu,"
               "\"jobBytes\":%zu,\"endpointsIndexBytes\":%zu,\"timerBytes\":%zu,"
               "\"listBytes\":%zu,\"queueBytes\":%zu,\"queued\":%zu,\"queuedTextBytes\":%zu",
               atomic_load_explicit(&c->mem.n_pods, memory_order_relaxed), pods, svcs, nodes,
               jobs, epx, timers, lists, q, qn, qtext);
    return sum;
}

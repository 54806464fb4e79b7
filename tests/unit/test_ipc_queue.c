/*
 * test_ipc_queue.c - every rule of ipc/queue.c on a fake clock: dedupe,
 * dirty-while-processing, backoff sequence and cap, bucket limiting, forget,
 * requeue-after, terminal, release, earliest-delay-wins, read-your-writes
 * gating and its timeout, shutdown, metrics.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ipc/ipc.h"
#include "util/util.h"

#define MS 1000000ull
#define SEC 1000000000ull

static uint64_t fake_ns;
static uint64_t cache_rv;   /* the fake cache's rv for every type */
static int seen_calls;

static uint64_t fake_now(void *ud)
{
    (void)ud;
    return fake_ns;
}

static int fake_seen(void *ud, const char *type, const char *rv)
{
    (void)ud;
    seen_calls++;
    if (strcmp(type, "ray.io/v1/rayclusters") != 0 && strcmp(type, "v1/pods") != 0)
        return 0;
    return strtoull(rv, NULL, 10) <= cache_rv;
}

static struct ipc_queue *mkq(const struct ipc_queue_config *cfg)
{
    struct ipc_queue *q = NULL;
    fake_ns = 1000 * SEC;
    cache_rv = 0;
    seen_calls = 0;
    assert_int_equal(ipc_queue_new("raycluster", cfg, fake_now, NULL, &q), 0);
    ipc_queue_set_seen(q, fake_seen, NULL);
    return q;
}

static struct ipc_queue_config nobucket(void)
{
    struct ipc_queue_config c;
    ipc_queue_config_default(&c);
    c.bucket_qps = 0;
    return c;
}

static const struct ipc_outcome OK = {.kind = IPC_OUTCOME_OK};
static const struct ipc_outcome ERR = {.kind = IPC_OUTCOME_ERROR, .message = "boom"};

/* Gets one key and checks its name. */
static struct ipc_lease get_key(struct ipc_queue *q, const char *want)
{
    struct ipc_lease l;
    assert_int_equal(ipc_queue_get(q, &l), 0);
    assert_string_equal(l.key, want);
    return l;
}

static void assert_empty(struct ipc_queue *q)
{
    struct ipc_lease l;
    assert_int_equal(ipc_queue_get(q, &l), -EAGAIN);
}

static void test_fifo_and_dedupe(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    assert_int_equal(ipc_queue_add(q, "ns/a"), 0);
    assert_int_equal(ipc_queue_add(q, "ns/b"), 0);
    assert_int_equal(ipc_queue_add(q, "ns/a"), 0);
    assert_int_equal(ipc_queue_add(q, "ns/c"), 0);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.depth, 3);
    assert_int_equal(st.adds_total, 3);
    struct ipc_lease a = get_key(q, "ns/a"), b = get_key(q, "ns/b"), c = get_key(q, "ns/c");
    assert_empty(q);
    assert_true(a.id != b.id && b.id != c.id);
    ipc_queue_done(q, "ns/a", a.id, &OK);
    ipc_queue_done(q, "ns/b", b.id, &OK);
    ipc_queue_done(q, "ns/c", c.id, &OK);
    ipc_queue_stats(q, &st);
    assert_int_equal(st.keys, 0);
    ipc_queue_free(q);
}

static void test_dirty_while_processing(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    ipc_queue_add(q, "ns/a");
    struct ipc_lease l = get_key(q, "ns/a");
    ipc_queue_add(q, "ns/a");
    ipc_queue_add(q, "ns/a");
    /* Never a second holder while the first has not said Done. */
    assert_empty(q);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.depth, 0);
    assert_int_equal(st.in_flight, 1);
    assert_int_equal(st.adds_total, 2);
    assert_int_equal(ipc_queue_done(q, "ns/a", l.id, &OK), 0);
    struct ipc_lease l2 = get_key(q, "ns/a");
    assert_true(l2.id != l.id);
    assert_empty(q);
    /* The old lease cannot finish the new one. */
    assert_int_equal(ipc_queue_done(q, "ns/a", l.id, &OK), -ENOENT);
    assert_int_equal(ipc_queue_done(q, "ns/a", l2.id, &OK), 0);
    assert_int_equal(ipc_queue_done(q, "ns/a", l2.id, &OK), -ENOENT);
    assert_int_equal(ipc_queue_done(q, "ns/zz", 1, &OK), -ENOENT);
    assert_empty(q);
    ipc_queue_free(q);
}

/* One error per round; returns the delay until the key is ready again and
 * checks it is not ready a nanosecond earlier. */
static uint64_t fail_once(struct ipc_queue *q, const char *key)
{
    struct ipc_lease l = get_key(q, key);
    assert_int_equal(ipc_queue_done(q, key, l.id, &ERR), 0);
    uint64_t d = ipc_queue_next_deadline(q) - fake_ns;
    fake_ns += d - 1;
    ipc_queue_tick(q);
    assert_empty(q);
    fake_ns += 1;
    ipc_queue_tick(q);
    return d;
}

static void test_backoff_sequence_and_cap(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "ns/a");
    uint64_t want = 5 * MS;
    for (int i = 0; i < 25; i++) {
        uint64_t d = fail_once(q, "ns/a");
        assert_int_equal(d, want);
        assert_int_equal(ipc_queue_num_requeues(q, "ns/a"), (uint32_t)i + 1);
        want = want * 2 > 1000 * SEC ? 1000 * SEC : want * 2;
    }
    /* 5 ms * 2^17 = 655 s < 1000 s, 2^18 would be 1310 s: capped from the 19th. */
    assert_int_equal(want, 1000 * SEC);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.retries_total, 25);
    assert_int_equal(st.retrying, 1);
    assert_int_equal(st.done_total[IPC_OUTCOME_ERROR], 25);
    ipc_queue_free(q);
}

static void test_backoff_configurable(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    c.base_delay_ns = 1 * MS;
    c.max_delay_ns = 3 * MS;
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    assert_int_equal(fail_once(q, "a"), 1 * MS);
    assert_int_equal(fail_once(q, "a"), 2 * MS);
    assert_int_equal(fail_once(q, "a"), 3 * MS);
    assert_int_equal(fail_once(q, "a"), 3 * MS);
    ipc_queue_free(q);
}

static void test_bucket_limits_overall_rate(void **state)
{
    (void)state;
    struct ipc_queue_config c;
    ipc_queue_config_default(&c);
    c.base_delay_ns = 1;       /* the per-item part stays out of the way */
    c.bucket_qps = 10;
    c.bucket_burst = 3;
    struct ipc_queue *q = mkq(&c);
    const char *keys[] = {"k0", "k1", "k2", "k3", "k4", "k5"};
    for (int i = 0; i < 6; i++)
        assert_int_equal(ipc_queue_add_rate_limited(q, keys[i]), 0);
    /* Burst 3 pass (1 ns), then one token per 100 ms. */
    uint64_t t0 = fake_ns;
    fake_ns = t0 + 1;
    ipc_queue_tick(q);
    get_key(q, "k0"); get_key(q, "k1"); get_key(q, "k2");
    assert_empty(q);
    fake_ns = t0 + 100 * MS - 1;
    ipc_queue_tick(q);
    assert_empty(q);
    fake_ns = t0 + 100 * MS;
    ipc_queue_tick(q);
    get_key(q, "k3");
    assert_empty(q);
    fake_ns = t0 + 200 * MS;
    ipc_queue_tick(q);
    get_key(q, "k4");
    fake_ns = t0 + 300 * MS;
    ipc_queue_tick(q);
    get_key(q, "k5");
    /* Refills at 10/s up to the burst: 10 s later three pass at once again. */
    fake_ns += 10 * SEC;
    for (int i = 0; i < 4; i++)
        ipc_queue_add_rate_limited(q, i == 3 ? "late" : keys[i]);
    uint64_t t1 = fake_ns;
    fake_ns += 10;
    ipc_queue_tick(q);
    /* k0..k2 are in flight (not Done) so they wait dirty; "late" is bucket-limited. */
    assert_empty(q);
    assert_int_equal(ipc_queue_next_deadline(q), t1 + 100 * MS);
    ipc_queue_free(q);
}

static void test_max_of_item_and_bucket(void **state)
{
    (void)state;
    struct ipc_queue_config c;
    ipc_queue_config_default(&c);   /* 5 ms, 10/s burst 100 */
    struct ipc_queue *q = mkq(&c);
    /* Per-item dominates while the bucket has tokens. */
    ipc_queue_add(q, "a");
    assert_int_equal(fail_once(q, "a"), 5 * MS);
    /* Drain the bucket with 100 other keys; then the bucket dominates. */
    char k[16];
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof(k), "x%d", i);
        ipc_queue_add_rate_limited(q, k);
    }
    struct ipc_lease l = get_key(q, "a");
    uint64_t t0 = fake_ns;
    ipc_queue_done(q, "a", l.id, &ERR);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.waiting, 101);
    /* Per-item would say 10 ms; the bucket is ~1.95 tokens short: ~195 ms. */
    fake_ns = t0 + 190 * MS;
    ipc_queue_tick(q);
    int got = 0;
    while (ipc_queue_get(q, &l) == 0) {
        assert_string_not_equal(l.key, "a");
        got++;
    }
    assert_int_equal(got, 100);
    fake_ns = t0 + 200 * MS;
    ipc_queue_tick(q);
    get_key(q, "a");
    ipc_queue_forget(q, "a");
    assert_int_equal(ipc_queue_num_requeues(q, "a"), 0);
    ipc_queue_free(q);
}

static void test_forget_on_success(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    fail_once(q, "a");
    fail_once(q, "a");
    assert_int_equal(fail_once(q, "a"), 20 * MS);
    struct ipc_lease l = get_key(q, "a");
    assert_int_equal(l.requeues, 3);
    ipc_queue_done(q, "a", l.id, &OK);
    assert_int_equal(ipc_queue_num_requeues(q, "a"), 0);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.keys, 0);
    assert_int_equal(st.retrying, 0);
    ipc_queue_add(q, "a");
    assert_int_equal(fail_once(q, "a"), 5 * MS);
    ipc_queue_free(q);
}

static void test_requeue_after(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    fail_once(q, "a");
    struct ipc_lease l = get_key(q, "a");
    struct ipc_outcome ra = {.kind = IPC_OUTCOME_REQUEUE_AFTER, .after_ns = 30 * SEC};
    ipc_queue_done(q, "a", l.id, &ra);
    assert_int_equal(ipc_queue_num_requeues(q, "a"), 0);
    assert_int_equal(ipc_queue_next_deadline(q) - fake_ns, 30 * SEC);
    fake_ns += 30 * SEC - 1;
    ipc_queue_tick(q);
    assert_empty(q);
    fake_ns += 1;
    ipc_queue_tick(q);
    l = get_key(q, "a");
    /* requeue_after 0 is an immediate add */
    ra.after_ns = 0;
    ipc_queue_done(q, "a", l.id, &ra);
    get_key(q, "a");
    ipc_queue_free(q);
}

static void test_terminal_waits_for_event(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    fail_once(q, "a");
    struct ipc_lease l = get_key(q, "a");
    /* A delayed retry pending from elsewhere is dropped by the terminal outcome. */
    ipc_queue_add_after(q, "a", 10 * SEC);
    struct ipc_outcome term = {.kind = IPC_OUTCOME_TERMINAL, .message = "bad spec"};
    ipc_queue_done(q, "a", l.id, &term);
    assert_int_equal(ipc_queue_next_deadline(q), UINT64_MAX);
    fake_ns += 2000 * SEC;
    ipc_queue_tick(q);
    assert_empty(q);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.keys, 0);
    assert_int_equal(st.done_total[IPC_OUTCOME_TERMINAL], 1);
    ipc_queue_add(q, "a");
    get_key(q, "a");
    ipc_queue_free(q);
}

static void test_terminal_keeps_dirty(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    ipc_queue_add(q, "a");
    struct ipc_lease l = get_key(q, "a");
    ipc_queue_add(q, "a");  /* an event during processing */
    struct ipc_outcome term = {.kind = IPC_OUTCOME_TERMINAL};
    ipc_queue_done(q, "a", l.id, &term);
    get_key(q, "a");
    ipc_queue_free(q);
}

static void test_error_while_dirty(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    struct ipc_lease l = get_key(q, "a");
    ipc_queue_add(q, "a");
    ipc_queue_done(q, "a", l.id, &ERR);
    /* client-go: the dirty add is delivered now, the rate-limited one later. */
    l = get_key(q, "a");
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.waiting, 1);
    ipc_queue_done(q, "a", l.id, &OK);
    fake_ns += 5 * MS;
    ipc_queue_tick(q);
    get_key(q, "a");
    ipc_queue_free(q);
}

static void test_release(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    fail_once(q, "a");
    struct ipc_lease l = get_key(q, "a");
    struct ipc_outcome rel = {.kind = IPC_OUTCOME_RELEASE};
    ipc_queue_done(q, "a", l.id, &rel);
    l = get_key(q, "a");
    assert_int_equal(l.requeues, 1);
    ipc_queue_free(q);
}

static void test_earliest_delay_wins(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    uint64_t t0 = fake_ns;
    ipc_queue_add_after(q, "a", 10 * SEC);
    ipc_queue_add_after(q, "a", 5 * SEC);
    ipc_queue_add_after(q, "a", 20 * SEC);
    ipc_queue_add_after(q, "b", 7 * SEC);
    assert_int_equal(ipc_queue_next_deadline(q), t0 + 5 * SEC);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.waiting, 2);
    assert_int_equal(st.depth, 0);
    fake_ns = t0 + 5 * SEC - 1;
    ipc_queue_tick(q);
    assert_empty(q);
    fake_ns = t0 + 5 * SEC;
    ipc_queue_tick(q);
    struct ipc_lease l = get_key(q, "a");
    assert_empty(q);
    assert_int_equal(ipc_queue_next_deadline(q), t0 + 7 * SEC);
    fake_ns = t0 + 7 * SEC;
    ipc_queue_tick(q);
    get_key(q, "b");
    ipc_queue_done(q, "a", l.id, &OK);
    /* Nothing else was left waiting: a later add_after did not add a second entry. */
    fake_ns = t0 + 100 * SEC;
    ipc_queue_tick(q);
    assert_empty(q);
    /* add_after 0 is an add */
    ipc_queue_add_after(q, "c", 0);
    get_key(q, "c");
    ipc_queue_free(q);
}

static void test_delay_heap_order_many(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    uint64_t t0 = fake_ns;
    char k[16];
    /* Insert in a scrambled order; keys must come out sorted by delay. */
    for (int i = 0; i < 200; i++) {
        int v = (i * 73) % 200;
        snprintf(k, sizeof(k), "k%03d", v);
        ipc_queue_add_after(q, k, (uint64_t)(v + 1) * MS);
    }
    for (int v = 0; v < 200; v++) {
        fake_ns = t0 + (uint64_t)(v + 1) * MS;
        ipc_queue_tick(q);
        snprintf(k, sizeof(k), "k%03d", v);
        get_key(q, k);
        assert_empty(q);
    }
    ipc_queue_free(q);
}

static void test_ryw_gate_until_seen(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    cache_rv = 5;
    ipc_queue_add(q, "ns/a");
    struct ipc_lease l = get_key(q, "ns/a");
    struct ipc_written w[2] = {{"ray.io/v1/rayclusters", "10"}, {"v1/pods", "12"}};
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_OK, .n_written = 2, .written = w};
    assert_int_equal(ipc_queue_done(q, "ns/a", l.id, &oc), 0);
    ipc_queue_add(q, "ns/a");  /* the watch event of our own write, say */
    assert_empty(q);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.gated, 1);
    assert_int_equal(st.gated_total, 1);
    assert_int_equal(ipc_queue_next_deadline(q), fake_ns + 5 * SEC);
    cache_rv = 11;   /* the cluster write is visible, the pod write not yet */
    ipc_queue_progress(q);
    assert_empty(q);
    cache_rv = 12;
    ipc_queue_progress(q);
    get_key(q, "ns/a");
    ipc_queue_stats(q, &st);
    assert_int_equal(st.gated, 0);
    assert_int_equal(st.ryw_timeouts_total, 0);
    ipc_queue_free(q);
}

static void test_ryw_gate_holds_requeue(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    ipc_queue_add(q, "a");
    struct ipc_lease l = get_key(q, "a");
    struct ipc_written w = {"v1/pods", "3"};
    /* Even an immediate requeue waits for the cache. */
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_RELEASE, .n_written = 1, .written = &w};
    ipc_queue_done(q, "a", l.id, &oc);
    assert_empty(q);
    cache_rv = 3;
    ipc_queue_progress(q);
    get_key(q, "a");
    ipc_queue_free(q);
}

static void test_ryw_gate_timeout(void **state)
{
    (void)state;
    struct ipc_queue_config c;
    ipc_queue_config_default(&c);
    c.ryw_timeout_ns = 2 * SEC;
    struct ipc_queue *q = mkq(&c);
    ipc_queue_add(q, "a");
    struct ipc_lease l = get_key(q, "a");
    struct ipc_written w = {"v1/pods", "99"};
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_OK, .n_written = 1, .written = &w};
    ipc_queue_done(q, "a", l.id, &oc);
    ipc_queue_add(q, "a");
    uint64_t t0 = fake_ns;
    fake_ns = t0 + 2 * SEC - 1;
    ipc_queue_tick(q);
    assert_empty(q);
    fake_ns = t0 + 2 * SEC;
    ipc_queue_tick(q);
    get_key(q, "a");
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.ryw_timeouts_total, 1);
    assert_int_equal(st.gated, 0);
    ipc_queue_free(q);
}

static void test_ryw_already_seen_no_gate(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    cache_rv = 50;
    ipc_queue_add(q, "a");
    struct ipc_lease l = get_key(q, "a");
    struct ipc_written w = {"v1/pods", "50"};
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_OK, .n_written = 1, .written = &w};
    ipc_queue_done(q, "a", l.id, &oc);
    assert_true(seen_calls >= 1);
    ipc_queue_add(q, "a");
    get_key(q, "a");
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.gated_total, 0);
    ipc_queue_free(q);
}

static void test_metrics(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    ipc_queue_add(q, "a");
    ipc_queue_add(q, "b");
    fake_ns += 1 * MS;                   /* 1 ms in the queue: bucket <= 1e-3 s */
    struct ipc_lease la = get_key(q, "a");
    fake_ns += 2 * SEC;                  /* b waited 2 s: bucket <= 10 s */
    struct ipc_lease lb = get_key(q, "b");
    fake_ns += 3 * SEC;
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.in_flight, 2);
    assert_int_equal(st.longest_running_ns, 5 * SEC);
    assert_int_equal(st.unfinished_work_ns, 8 * SEC);
    assert_int_equal(st.queue_duration.count, 2);
    assert_int_equal(st.queue_duration.counts[5], 1);
    assert_int_equal(st.queue_duration.counts[9], 1);
    assert_int_equal(st.queue_duration.sum_ns, 1 * MS + 2 * SEC + 1 * MS);
    ipc_queue_done(q, "a", la.id, &OK);
    ipc_queue_done(q, "b", lb.id, &ERR);
    ipc_queue_stats(q, &st);
    assert_int_equal(st.work_duration.count, 2);
    assert_int_equal(st.work_duration.counts[9], 2);   /* 5 s and 3 s */
    assert_int_equal(st.done_total[IPC_OUTCOME_OK], 1);
    assert_int_equal(st.done_total[IPC_OUTCOME_ERROR], 1);
    assert_int_equal(st.retries_total, 1);
    assert_int_equal(st.adds_total, 2);
    assert_int_equal(st.in_flight, 0);
    assert_int_equal(st.longest_running_ns, 0);
    assert_int_equal(st.retrying, 1);
    assert_int_equal(st.waiting, 1);
    fake_ns += 10 * MS;
    ipc_queue_tick(q);
    ipc_queue_stats(q, &st);
    assert_int_equal(st.adds_total, 3);
    assert_int_equal(st.depth, 1);

    /* Prometheus text: cumulative buckets, controller-runtime names. */
    struct buf b = {0};
    assert_int_equal(ipc_metrics_text(&q, 1, &b), 0);
    const char *want[] = {
        "workqueue_depth{name=\"raycluster\"} 1\n",
        "workqueue_adds_total{name=\"raycluster\"} 3\n",
        "workqueue_retries_total{name=\"raycluster\"} 1\n",
        "workqueue_queue_duration_seconds_bucket{name=\"raycluster\",le=\"0.0001\"} 0\n",
        "workqueue_queue_duration_seconds_bucket{name=\"raycluster\",le=\"0.001\"} 1\n",
        "workqueue_queue_duration_seconds_bucket{name=\"raycluster\",le=\"1\"} 1\n",
        "workqueue_queue_duration_seconds_bucket{name=\"raycluster\",le=\"10\"} 2\n",
        "workqueue_queue_duration_seconds_bucket{name=\"raycluster\",le=\"+Inf\"} 2\n",
        "workqueue_queue_duration_seconds_count{name=\"raycluster\"} 2\n",
        "workqueue_work_duration_seconds_sum{name=\"raycluster\"} 8.000000000\n",
        "rayop_ipc_done_total{name=\"raycluster\",outcome=\"error\"} 1\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!strstr(b.data, want[i]))
            fail_msg("missing metric line: %s", want[i]);
    }
    buf_free(&b);
    ipc_queue_free(q);
}

/* oldest_ready_ns: how long the oldest key due for a worker has waited. Keys
 * held, gated or delayed do not count; a low-priority key does; a key dirtied
 * while processing counts from its add, though it joins the FIFO at Done. */
static void test_oldest_ready(void **state)
{
    (void)state;
    struct ipc_queue_config c = nobucket();
    struct ipc_queue *q = mkq(&c);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.oldest_ready_ns, 0);
    ipc_queue_add(q, "a");
    fake_ns += 1 * SEC;
    struct ipc_lease la = get_key(q, "a");
    ipc_queue_add(q, "a");               /* dirty while held: not ready yet */
    ipc_queue_add_after(q, "late", 10 * SEC);
    fake_ns += 2 * SEC;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.oldest_ready_ns, 0);
    ipc_queue_add_low(q, "low");
    fake_ns += 1 * SEC;
    ipc_queue_add(q, "b");
    fake_ns += 1 * SEC;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.oldest_ready_ns, 2 * SEC);     /* "low", behind "b" in order */
    assert_int_equal(ipc_queue_done(q, "a", la.id, &OK), 0);
    ipc_queue_stats(q, &st);
    assert_int_equal(st.oldest_ready_ns, 4 * SEC);     /* "a", appended last */
    get_key(q, "b");
    get_key(q, "a");
    ipc_queue_stats(q, &st);
    assert_int_equal(st.oldest_ready_ns, 2 * SEC);
    get_key(q, "low");
    ipc_queue_stats(q, &st);
    assert_int_equal(st.oldest_ready_ns, 0);
    ipc_queue_free(q);
}

static void test_shutdown(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    ipc_queue_add(q, "a");
    ipc_queue_add(q, "b");
    struct ipc_lease la = get_key(q, "a");
    ipc_queue_shutdown(q);
    ipc_queue_add(q, "c");
    get_key(q, "b");   /* drains what was ready */
    struct ipc_lease l;
    assert_int_equal(ipc_queue_get(q, &l), -ESHUTDOWN);
    assert_int_equal(ipc_queue_done(q, "a", la.id, &ERR), 0);
    assert_int_equal(ipc_queue_get(q, &l), -ESHUTDOWN);
    ipc_queue_free(q);
}

static void test_bad_keys(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    char big[IPC_KEY_MAX + 1];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    assert_int_equal(ipc_queue_add(q, ""), -EINVAL);
    assert_int_equal(ipc_queue_add(q, NULL), -EINVAL);
    assert_int_equal(ipc_queue_add(q, "ns/a b"), -EINVAL);
    assert_int_equal(ipc_queue_add(q, "ns/\x01"), -EINVAL);
    assert_int_equal(ipc_queue_add(q, big), -EINVAL);
    big[IPC_KEY_MAX - 1] = 0;   /* 511 bytes: the longest allowed */
    assert_int_equal(ipc_queue_add(q, big), 0);
    assert_int_equal(ipc_queue_add_rate_limited(q, "x y"), -EINVAL);
    struct ipc_outcome bad = {.kind = IPC_OUTCOME_MAX_};
    struct ipc_lease l = get_key(q, big);
    assert_int_equal(ipc_queue_done(q, big, l.id, &bad), -EINVAL);
    struct ipc_outcome toomany = {.kind = IPC_OUTCOME_OK, .n_written = IPC_WRITTEN_MAX + 1};
    assert_int_equal(ipc_queue_done(q, big, l.id, &toomany), -EINVAL);
    assert_int_equal(ipc_queue_done(q, big, l.id, &OK), 0);
    struct ipc_queue *q2 = NULL;
    assert_int_equal(ipc_queue_new("", NULL, NULL, NULL, &q2), -EINVAL);
    ipc_queue_free(q);
}

static void test_many_keys_memory_returns(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    char k[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(k, sizeof(k), "ns%d/rc-%d", i % 50, i);
        assert_int_equal(ipc_queue_add(q, k), 0);
    }
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.depth, 10000);
    struct ipc_lease l;
    int n = 0;
    while (ipc_queue_get(q, &l) == 0) {
        char key[IPC_KEY_MAX];
        snprintf(key, sizeof(key), "%s", l.key);
        assert_int_equal(ipc_queue_done(q, key, l.id, &OK), 0);
        n++;
    }
    assert_int_equal(n, 10000);
    ipc_queue_stats(q, &st);
    assert_int_equal(st.keys, 0);
    ipc_queue_free(q);
}

static void test_adopt(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    /* Adopting a key nobody knows: processing at once, nothing pending. */
    struct ipc_lease a;
    assert_int_equal(ipc_queue_adopt(q, "ns/a", &a), 0);
    assert_empty(q);
    ipc_queue_add(q, "ns/a");          /* the new watcher's resync */
    assert_empty(q);                   /* held: not handed out again */
    struct ipc_lease l;
    assert_int_equal(ipc_queue_adopt(q, "ns/a", &l), -EBUSY);
    assert_int_equal(ipc_queue_done(q, "ns/a", a.id, &OK), 0);
    get_key(q, "ns/a");                /* the pending add, after Done */
    /* Adopting a key that was ready takes it out of the FIFO but keeps it dirty. */
    ipc_queue_add(q, "ns/b");
    struct ipc_lease b;
    assert_int_equal(ipc_queue_adopt(q, "ns/b", &b), 0);
    assert_empty(q);
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.depth, 0);
    assert_int_equal(st.in_flight, 2);
    assert_int_equal(ipc_queue_done(q, "ns/b", b.id, &OK), 0);
    get_key(q, "ns/b");
    /* Adopting a gated key drops the gate (its holder already has it). */
    ipc_queue_add(q, "ns/c");
    struct ipc_lease c = get_key(q, "ns/c");
    struct ipc_written w = {"v1/pods", "99"};
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_OK, .n_written = 1, .written = &w};
    ipc_queue_done(q, "ns/c", c.id, &oc);
    assert_int_equal(ipc_queue_adopt(q, "ns/c", &c), 0);
    ipc_queue_stats(q, &st);
    assert_int_equal(st.gated, 0);
    assert_int_equal(ipc_queue_done(q, "ns/c", c.id, &OK), 0);
    assert_int_equal(ipc_queue_adopt(q, "bad key", &c), -EINVAL);
    ipc_queue_free(q);
}

static void test_low_priority(void **state)
{
    (void)state;
    struct ipc_queue *q = mkq(NULL);
    ipc_queue_add_low(q, "r/1");
    ipc_queue_add_low(q, "r/2");
    ipc_queue_add_low(q, "r/3");
    ipc_queue_add(q, "ev/x");          /* a real event: ahead of the resync */
    ipc_queue_add(q, "r/3");           /* raises r/3 to normal, FIFO among normals */
    ipc_queue_add_low(q, "ev/x");      /* merging keeps the higher priority */
    struct ipc_queue_stats st;
    ipc_queue_stats(q, &st);
    assert_int_equal(st.depth, 4);
    assert_int_equal(st.adds_total, 4);
    struct ipc_lease x = get_key(q, "ev/x");
    get_key(q, "r/3");
    /* A low add while processing comes back low after Done. */
    ipc_queue_add_low(q, "ev/x");
    ipc_queue_add(q, "ev/y");
    ipc_queue_done(q, "ev/x", x.id, &OK);
    get_key(q, "ev/y");
    get_key(q, "r/1");
    get_key(q, "r/2");
    get_key(q, "ev/x");
    assert_empty(q);
    assert_int_equal(ipc_queue_add_low(q, "bad key"), -EINVAL);
    ipc_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_dedupe),
        cmocka_unit_test(test_dirty_while_processing),
        cmocka_unit_test(test_backoff_sequence_and_cap),
        cmocka_unit_test(test_backoff_configurable),
        cmocka_unit_test(test_bucket_limits_overall_rate),
        cmocka_unit_test(test_max_of_item_and_bucket),
        cmocka_unit_test(test_forget_on_success),
        cmocka_unit_test(test_requeue_after),
        cmocka_unit_test(test_terminal_waits_for_event),
        cmocka_unit_test(test_terminal_keeps_dirty),
        cmocka_unit_test(test_error_while_dirty),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_earliest_delay_wins),
        cmocka_unit_test(test_delay_heap_order_many),
        cmocka_unit_test(test_ryw_gate_until_seen),
        cmocka_unit_test(test_ryw_gate_holds_requeue),
        cmocka_unit_test(test_ryw_gate_timeout),
        cmocka_unit_test(test_ryw_already_seen_no_gate),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_many_keys_memory_returns),
        cmocka_unit_test(test_adopt),
        cmocka_unit_test(test_low_priority),
        cmocka_unit_test(test_oldest_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

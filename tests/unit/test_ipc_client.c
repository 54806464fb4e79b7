/*
 * test_ipc_client.c - the worker-side client against a real server (see
 * ipc_fixture.h): read-your-writes across the socket, requeue-after timing,
 * adoption of held keys after a watcher restart, handing back buffered
 * keys on close, and one puller woken per key.
 */
#include <sched.h>
#include "tests/unit/ipc_fixture.h"

static void test_ryw_over_the_wire(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    atomic_store(&cache_rv, 5);
    add_key(sv, "ns/rc");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    struct ipc_written w = {"ray.io/v1/rayclusters", "10"};
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_OK, .n_written = 1, .written = &w};
    assert_int_equal(ipc_client_done(c, &k, &oc), 0);
    add_key(sv, "ns/rc");   /* the event of our own write; the Done may still be on the wire */
    struct ipc_queue_stats qs;
    for (int i = 0; i < 1000; i++) {
        srv_call(sv, do_stats, &qs);
        if (qs.gated == 1)
            break;
        struct ipc_status st;
        ipc_client_status(c, 1000, &st);   /* a round trip: the Done is read before the reply */
        ipc_status_free(&st);
    }
    assert_int_equal(qs.gated, 1);
    assert_int_equal(ipc_client_pull(c, 100, &k), -ETIMEDOUT);
    atomic_store(&cache_rv, 10);
    srv_call(sv, do_progress, NULL);
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    assert_string_equal(k.key, "ns/rc");
    ipc_client_close(c);
    srv_stop(sv);
}

static void test_requeue_after_over_the_wire(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    add_key(sv, "ns/rc");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    uint64_t t0 = util_now_ns();
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_REQUEUE_AFTER, .after_ns = 80ull * 1000000};
    assert_int_equal(ipc_client_done(c, &k, &oc), 0);
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    uint64_t dt = util_now_ns() - t0;
    assert_true(dt >= 80ull * 1000000);
    assert_true(dt < 2000ull * 1000000);
    ipc_client_close(c);
    srv_stop(sv);
}

/* Bounded wait until c's connection state is want (and, if want, newer than gen). */
static void wait_connected(struct ipc_client *c, bool want, uint64_t gen)
{
    uint64_t deadline = util_now_ns() + 10ull * 1000000000ull;
    while (util_now_ns() < deadline) {
        bool up = ipc_client_connected(c);
        if (up == want && (!want || ipc_client_generation(c) > gen))
            return;
        struct ipc_key tmp;
        assert_int_equal(ipc_client_pull(c, 10, &tmp), -ETIMEDOUT);
    }
    fail_msg("connection state did not change in time");
}

static void test_reconnect_adopts_held_keys(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 3);
    uint64_t gen = ipc_client_generation(c);
    add_key(sv, "ns/held");
    struct ipc_key k1, k2;
    assert_int_equal(ipc_client_pull(c, 5000, &k1), 0);
    add_key(sv, "ns/finished");
    assert_int_equal(ipc_client_pull(c, 5000, &k2), 0);
    srv_stop(sv);   /* the watcher dies while a thread still works on ns/held */
    wait_connected(c, false, 0);
    /* Finished while no server was there: stale; the new watcher's resync brings it back. */
    assert_int_equal(ipc_client_done(c, &k2, &OK), -ESTALE);

    sv = srv_start_at(sock_path, 0);
    wait_connected(c, true, gen);
    struct ipc_queue_stats qs = {0};
    uint64_t deadline = util_now_ns() + 10ull * 1000000000ull;
    while (qs.in_flight != 1 && util_now_ns() < deadline)
        srv_call(sv, do_stats, &qs);
    assert_int_equal(qs.in_flight, 1);   /* ns/held adopted by its holder */

    /* The resync adds the key again: nobody else may get it while it is held. */
    struct ipc_client *other = open_worker("other", 1);
    add_key(sv, "ns/held");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(other, 100, &k), -ETIMEDOUT);
    /* The holder's Done goes to the new server under the adopted lease. */
    assert_int_equal(ipc_client_done(c, &k1, &OK), 0);
    /* Then the pending add is delivered, to whichever worker has credit (c
     * may, from the pulls it made while waiting for the reconnect). */
    struct ipc_client *got = NULL;
    deadline = util_now_ns() + 10ull * 1000000000ull;
    while (!got && util_now_ns() < deadline) {
        if (ipc_client_pull(other, 10, &k) == 0)
            got = other;
        else if (ipc_client_pull(c, 10, &k) == 0)
            got = c;
    }
    assert_non_null(got);
    assert_string_equal(k.key, "ns/held");
    assert_int_equal(ipc_client_done(got, &k, &OK), 0);
    assert_int_equal(ipc_client_done(c, &k1, &OK), -ENOENT);   /* not held any more */
    ipc_client_close(other);
    ipc_client_close(c);
    srv_stop(sv);
}

static void test_client_close_hands_back_buffered(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    struct ipc_key k;
    /* The pull times out but leaves its PULL outstanding; the key lands in the buffer. */
    assert_int_equal(ipc_client_pull(c, 0, &k), -ETIMEDOUT);
    add_key(sv, "ns/buffered");
    struct ipc_queue_stats qs;
    for (int i = 0; i < 1000; i++) {
        srv_call(sv, do_stats, &qs);
        if (qs.in_flight == 1)
            break;
    }
    assert_int_equal(qs.in_flight, 1);
    /* A STATUS round trip: the KEY frame was sent before the reply, so it is buffered now. */
    struct ipc_status st;
    assert_int_equal(ipc_client_status(c, 5000, &st), 0);
    ipc_status_free(&st);
    ipc_client_close(c);
    struct ipc_client *c2 = open_worker("w2", 1);
    assert_int_equal(ipc_client_pull(c2, 5000, &k), 0);
    assert_string_equal(k.key, "ns/buffered");
    assert_int_equal(k.requeues, 0);   /* released, not failed */
    ipc_client_close(c2);
    srv_stop(sv);
}

static void test_refused_after_restart_surfaces(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    srv_stop(sv);
    next_without_raycluster = true;   /* the new watcher no longer serves our kind */
    sv = srv_start_at(sock_path, 0);
    struct ipc_key k;
    int rc = -ETIMEDOUT;
    uint64_t deadline = util_now_ns() + 10ull * 1000000000ull;
    while (rc == -ETIMEDOUT && util_now_ns() < deadline)
        rc = ipc_client_pull(c, 100, &k);
    assert_int_equal(rc, -ENOENT);
    assert_false(ipc_client_connected(c));
    ipc_client_close(c);
    srv_stop(sv);
}

struct puller {
    struct ipc_client *c;
    pthread_t th;
    int rc;
    struct ipc_key k;
    atomic_int *got;
};

static void *puller_main(void *arg)
{
    struct puller *p = arg;
    p->rc = ipc_client_pull(p->c, 10000, &p->k);
    atomic_fetch_add(p->got, 1);
    return NULL;
}

/* Bounded wait until got reaches n and the client counts waiting pullers. */
static void wait_pullers(struct ipc_client *c, atomic_int *got, int n, uint32_t waiting)
{
    uint64_t deadline = util_now_ns() + 10ull * 1000000000ull;
    struct ipc_client_stats cs;
    do {
        ipc_client_stats(c, &cs);
        if (atomic_load(got) == n && cs.waiting == waiting)
            return;
        sched_yield();
    } while (util_now_ns() < deadline);
    fail_msg("got %d of %d keys, %u pullers waiting (want %u)", atomic_load(got), n,
             cs.waiting, waiting);
}

/* Four threads blocked in pull, keys arriving one at a time: each key wakes the
 * one thread that takes it. A broadcast woke all of them per key, 3 + 2 + 1 of
 * them for nothing (issue 18). Pull holds the client's lock from counting itself
 * waiting until it blocks, so "4 waiting" means all four are asleep. */
static void test_one_key_wakes_one_puller(void **state)
{
    (void)state;
    enum { N = 4 };
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", N);
    atomic_int got = 0;
    struct puller p[N];
    for (int i = 0; i < N; i++) {
        p[i] = (struct puller){.c = c, .got = &got};
        assert_int_equal(pthread_create(&p[i].th, NULL, puller_main, &p[i]), 0);
    }
    wait_pullers(c, &got, 0, N);
    for (int i = 0; i < N; i++) {
        char key[32];
        snprintf(key, sizeof(key), "ns/rc-%d", i);
        add_key(sv, key);
        wait_pullers(c, &got, i + 1, (uint32_t)(N - i - 1));
    }
    bool seen[N] = {false};
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(p[i].th, NULL), 0);
        assert_int_equal(p[i].rc, 0);
        int j = -1;
        assert_int_equal(sscanf(p[i].k.key, "ns/rc-%d", &j), 1);
        assert_true(j >= 0 && j < N && !seen[j]);
        seen[j] = true;
        assert_int_equal(ipc_client_done(c, &p[i].k, &OK), 0);
    }
    struct ipc_client_stats cs;
    ipc_client_stats(c, &cs);
    assert_int_equal(cs.idle_wakeups, 0);
    ipc_client_close(c);
    srv_stop(sv);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ryw_over_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeue_after_over_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_adopts_held_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_close_hands_back_buffered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_after_restart_surfaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_key_wakes_one_puller, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

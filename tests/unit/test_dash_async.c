/* test_dash_async.c - dashboard/async.c, the dashboard calls the RayJob and RayService
 * controllers make off their worker threads, against a tiny HTTP server on loopback that
 * answers only when the test lets it (a head that is slow exactly as long as the test
 * wants): a fast answer comes back within the wait; a held one gives -EINPROGRESS, runs
 * once however often it is asked, and is taken by a later ask; a dashboard known to be
 * slow is not waited for; a call is pending until its answer is taken; stopping waits
 * for the calls out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dashboard/dashboard.h"
#include "util/util.h"

struct held {
    int lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open_gate, stop;
    int requests;              /* requests read */
};

static struct held srv = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* one connection: read the request head, wait for the gate, answer {} */
static void serve(int fd)
{
    char buf[4096];
    size_t n = 0;
    while (n < sizeof(buf) - 1) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            break;
    }
    pthread_mutex_lock(&srv.mu);
    srv.requests++;
    pthread_cond_broadcast(&srv.cv);
    while (!srv.open_gate && !srv.stop)
        pthread_cond_wait(&srv.cv, &srv.mu);
    pthread_mutex_unlock(&srv.mu);
    static const char ans[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    ssize_t w = write(fd, ans, sizeof(ans) - 1);
    (void)w;
    close(fd);
}

static void *server(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(srv.lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        serve(fd);   /* one at a time: the tests keep one call out per gate */
    }
}

static void gate(bool open)
{
    pthread_mutex_lock(&srv.mu);
    srv.open_gate = open;
    pthread_cond_broadcast(&srv.cv);
    pthread_mutex_unlock(&srv.mu);
}

static int requests(void)
{
    pthread_mutex_lock(&srv.mu);
    int n = srv.requests;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

/* waits (bounded) until the server has read more than before requests */
static void wait_request(int before)
{
    uint64_t until = util_now_ns() + 5000000000ull;
    while (requests() == before && util_now_ns() < until)
        usleep(2000);
}

/* waits (bounded) until no call is out */
static void drain(void)
{
    uint64_t until = util_now_ns() + 10ull * 1000000000ull;
    while (dash_async_in_flight() > 0 && util_now_ns() < until)
        usleep(5000);
    assert_int_equal(dash_async_in_flight(), 0);
}

static int setup(void **state)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    (void)state;
    if ((srv.lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        bind(srv.lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(srv.lfd, 16) < 0 ||
        getsockname(srv.lfd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    srv.port = ntohs(a.sin_port);
    return pthread_create(&srv.th, NULL, server, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pthread_mutex_lock(&srv.mu);
    srv.stop = true;
    pthread_cond_broadcast(&srv.cv);
    pthread_mutex_unlock(&srv.mu);
    shutdown(srv.lfd, SHUT_RDWR);
    close(srv.lfd);
    pthread_join(srv.th, NULL);
    return 0;
}

static void target(struct dash_target *t)
{
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
    assert_int_equal(dash_target_direct(t, addr), 0);
}

/* closes the gate and asks GET /api/jobs/x under key: -EINPROGRESS, no reply. Returns
 * the requests the server had read before. */
static int start_held(const struct dash_target *t, const char *key, int wait_ms)
{
    struct dash_reply r;
    gate(false);
    int before = requests();
    assert_int_equal(dash_async_call(key, t, "GET", "/api/jobs/x", NULL, 0, wait_ms, &r),
                     -EINPROGRESS);
    assert_null(r.body);
    return before;
}

static void test_fast_answer(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_reply r;
    target(&t);
    gate(true);
    int before = requests();
    assert_int_equal(dash_async_call("a\nfast", &t, "GET", "/api/jobs/x", NULL, 0, 5000, &r), 0);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.body, "{}");
    dash_reply_free(&r);
    assert_int_equal(requests(), before + 1);
    drain();
}

static void test_held_answer_taken_later(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_reply r;
    target(&t);
    int before = start_held(&t, "a\nheld", 20);
    /* asked again (and with another request under the key): still one call out */
    assert_int_equal(dash_async_call("a\nheld", &t, "GET", "/api/jobs/x", NULL, 0, 20, &r),
                     -EINPROGRESS);
    assert_int_equal(dash_async_call("a\nheld", &t, "POST", "/api/jobs/", "{}", 2, 20, &r),
                     -EINPROGRESS);
    wait_request(before);
    assert_int_equal(requests(), before + 1);
    assert_int_equal(dash_async_in_flight(), 1);
    gate(true);
    drain();
    /* the answer waits for the next ask of the same request */
    assert_int_equal(dash_async_call("a\nheld", &t, "GET", "/api/jobs/x", NULL, 0, 20, &r), 0);
    assert_int_equal(r.code, 200);
    dash_reply_free(&r);
    assert_int_equal(requests(), before + 1);
    /* a different request under a key whose answer is finished: a new call */
    assert_int_equal(dash_async_call("a\nheld", &t, "GET", "/api/jobs/y", NULL, 0, 5000, &r), 0);
    dash_reply_free(&r);
    assert_int_equal(requests(), before + 2);
    drain();
}

static void test_known_slow_not_waited_for(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_reply r;
    target(&t);
    /* make the target's last answer take 1.2 s (under the 2 s direct deadline) */
    int before = start_held(&t, "b\nfirst", 10);
    wait_request(before);
    usleep(1200000);
    gate(true);
    drain();
    assert_int_equal(dash_async_call("b\nfirst", &t, "GET", "/api/jobs/x", NULL, 0, 10, &r), 0);
    dash_reply_free(&r);
    /* held again: a new call willing to wait 1 s returns at once, the head being known
     * slower than that (it would otherwise sit out the whole second) */
    gate(false);
    uint64_t t0 = util_now_ns();
    assert_int_equal(dash_async_call("b\nsecond", &t, "GET", "/api/jobs/x", NULL, 0, 1000, &r),
                     -EINPROGRESS);
    assert_true(util_now_ns() - t0 < 500ull * 1000000ull);
    gate(true);
    drain();
    assert_int_equal(dash_async_call("b\nsecond", &t, "GET", "/api/jobs/x", NULL, 0, 10, &r), 0);
    dash_reply_free(&r);
}

/* a call stays pending from its start until its answer is taken, in flight or answered,
 * and only for its own method */
static void test_pending_until_taken(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_reply r;
    target(&t);
    assert_false(dash_async_pending("c\nput", "PUT"));
    gate(false);
    int before = requests();
    assert_int_equal(dash_async_call("c\nput", &t, "PUT", "/api/serve/applications/", "{}", 2,
                                     10, &r), -EINPROGRESS);
    assert_true(dash_async_pending("c\nput", "PUT"));
    assert_false(dash_async_pending("c\nput", "GET"));
    assert_false(dash_async_pending("c\nother", "PUT"));
    wait_request(before);
    gate(true);
    drain();
    /* answered, not taken: still pending */
    assert_true(dash_async_pending("c\nput", "PUT"));
    assert_int_equal(dash_async_call("c\nput", &t, "PUT", "/api/serve/applications/", "{}", 2,
                                     10, &r), 0);
    dash_reply_free(&r);
    assert_false(dash_async_pending("c\nput", "PUT"));
    assert_false(dash_async_pending(NULL, "PUT"));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_reply r;
    target(&t);
    assert_int_equal(dash_async_call(NULL, &t, "GET", "/", NULL, 0, 10, &r), -EINVAL);
    assert_int_equal(dash_async_call("k", &t, "POST", "/", NULL, 3, 10, &r), -EINVAL);
    assert_int_equal(dash_async_call("k", &t, "GET", "/", NULL, 0, -1, &r), -EINVAL);
}

/* dash_async_stop: a controller about to free the kube client its calls borrow waits for
 * the calls out; one that does not end in time is reported, none starts afterwards, and
 * once the last has ended stop says so (and the answers nobody took are gone). Runs last:
 * a stopped module stays stopped. */
static void test_stop_waits_for_calls_out(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_reply r;
    target(&t);
    int before = start_held(&t, "d\nout", 10);
    wait_request(before);
    assert_int_equal(dash_async_in_flight(), 1);
    uint64_t t0 = util_now_ns();
    assert_int_equal(dash_async_stop(200), -ETIMEDOUT);
    assert_true(util_now_ns() - t0 >= 150ull * 1000000ull);
    assert_int_equal(dash_async_in_flight(), 1);
    /* stopped: nothing new goes out, whatever the key */
    assert_int_equal(dash_async_call("d\nnew", &t, "GET", "/api/jobs/x", NULL, 0, 10, &r),
                     -ESHUTDOWN);
    assert_int_equal(requests(), before + 1);
    /* the call ends while stop waits for it: stop returns as soon as it has */
    gate(true);
    t0 = util_now_ns();
    assert_int_equal(dash_async_stop(5000), 0);
    assert_true(util_now_ns() - t0 < 4000ull * 1000000ull);
    assert_int_equal(dash_async_in_flight(), 0);
    assert_false(dash_async_pending("d\nout", "GET"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_answer),
        cmocka_unit_test(test_held_answer_taken_later),
        cmocka_unit_test(test_known_slow_not_waited_for),
        cmocka_unit_test(test_pending_until_taken),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_stop_waits_for_calls_out),   /* last: stops the module */
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

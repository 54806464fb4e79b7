/*
 * test_host_metrics.c - the controller's Prometheus text: controller-runtime's
 * metric names and labels, counters per result, cumulative histogram buckets
 * that end in +Inf = _count, the queue gauges taken from the watcher's STATUS
 * for this kind's queue only, every sample line well-formed; and the HTTP
 * endpoints (/metrics, /healthz, /readyz following the ready callback, 404).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "reconcilers/host/internal.h"
#include "util/util.h"

/* The value of the sample line that starts with prefix (name{labels}), or -1. */
static double sample(const char *text, const char *prefix)
{
    size_t pl = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, prefix, pl) == 0 && p[pl] == ' ')
            return strtod(p + pl + 1, NULL);
    }
    return -1;
}

/* Every non-comment line is NAME{LABELS} VALUE or NAME VALUE with a number. */
static void assert_well_formed(const char *text)
{
    char *copy = strdup(text), *save = NULL;
    int lines = 0;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '#') {
            assert_true(strncmp(l, "# HELP ", 7) == 0 || strncmp(l, "# TYPE ", 7) == 0);
            continue;
        }
        char *sp = strrchr(l, ' ');
        assert_non_null(sp);
        char *end;
        strtod(sp + 1, &end);
        assert_true(*end == '\0');
        for (char *c = l; c < sp && *c != '{'; c++)
            assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
        lines++;
    }
    assert_true(lines > 20);
    free(copy);
}

static void test_counters_and_results(void **state)
{
    (void)state;
    struct host_metrics m;
    struct buf b = { 0 };
    host__metrics_init(&m, "raycluster", "raycluster", 3);
    host__metrics_observe(&m, HOST_M_SUCCESS, false, 2000000, 1000);          /* 2 ms */
    host__metrics_observe(&m, HOST_M_SUCCESS, false, 30000000, 1000);         /* 30 ms */
    host__metrics_observe(&m, HOST_M_ERROR, false, 700000000, 1000);          /* 0.7 s */
    host__metrics_observe(&m, HOST_M_ERROR, true, 1000, 1000);
    host__metrics_observe(&m, HOST_M_REQUEUE_AFTER, false, 90000000000ull, 5); /* 90 s: +Inf */
    host__metrics_active(&m, 2);
    assert_int_equal(host__metrics_text(&m, &b), 0);
    const char *t = b.data;
    assert_true(sample(t, "controller_runtime_reconcile_total{controller=\"raycluster\",result=\"success\"}") == 2);
    assert_true(sample(t, "controller_runtime_reconcile_total{controller=\"raycluster\",result=\"error\"}") == 2);
    assert_true(sample(t, "controller_runtime_reconcile_total{controller=\"raycluster\",result=\"requeue\"}") == 0);
    assert_true(sample(t, "controller_runtime_reconcile_total{controller=\"raycluster\",result=\"requeue_after\"}") == 1);
    assert_true(sample(t, "controller_runtime_reconcile_errors_total{controller=\"raycluster\"}") == 2);
    assert_true(sample(t, "controller_runtime_terminal_reconcile_errors_total{controller=\"raycluster\"}") == 1);
    assert_true(sample(t, "controller_runtime_active_workers{controller=\"raycluster\"}") == 2);
    assert_true(sample(t, "controller_runtime_max_concurrent_reconciles{controller=\"raycluster\"}") == 3);
    /* cumulative buckets */
    assert_true(sample(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"0.005\"}") == 2);
    assert_true(sample(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"0.05\"}") == 3);
    assert_true(sample(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"0.7\"}") == 4);
    assert_true(sample(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"60\"}") == 4);
    assert_true(sample(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"raycluster\",le=\"+Inf\"}") == 5);
    assert_true(sample(t, "controller_runtime_reconcile_time_seconds_count{controller=\"raycluster\"}") == 5);
    double sum = sample(t, "controller_runtime_reconcile_time_seconds_sum{controller=\"raycluster\"}");
    assert_true(sum > 90.73 && sum < 90.74);
    assert_true(sample(t, "workqueue_work_duration_seconds_count{name=\"raycluster\"}") == 5);
    assert_true(sample(t, "workqueue_queue_duration_seconds_bucket{name=\"raycluster\",le=\"1e-05\"}") == 5);
    /* no STATUS yet: the watcher's gauges are absent rather than a made-up 0 */
    assert_true(sample(t, "workqueue_depth{name=\"raycluster\"}") < 0);
    assert_well_formed(t);
    buf_free(&b);
    host__metrics_destroy(&m);
}

static void test_queue_figures_from_status(void **state)
{
    (void)state;
    struct host_metrics m;
    struct buf b = { 0 };
    struct ipc_status_queue qs[2];
    memset(qs, 0, sizeof(qs));
    strcpy(qs[0].kind, "rayjob");
    qs[0].depth = 99;
    strcpy(qs[1].kind, "raycluster");
    qs[1].depth = 4;
    qs[1].adds_total = 120;
    qs[1].retries_total = 7;
    struct ipc_status st = { .pid = 1, .n_queues = 2, .queues = qs };
    host__metrics_init(&m, "test", "raycluster", 1);
    host__metrics_set_status(&m, &st);
    host__metrics_set_status(&m, NULL);    /* a failed refresh keeps the last figures */
    assert_int_equal(host__metrics_text(&m, &b), 0);
    assert_true(sample(b.data, "workqueue_depth{name=\"raycluster\"}") == 4);
    assert_true(sample(b.data, "workqueue_adds_total{name=\"raycluster\"}") == 120);
    assert_true(sample(b.data, "workqueue_retries_total{name=\"raycluster\"}") == 7);
    assert_true(sample(b.data, "workqueue_depth{name=\"rayjob\"}") < 0);
    assert_true(sample(b.data, "rayop_host_status_errors_total{controller=\"test\"}") == 1);
    assert_non_null(strstr(b.data, "# TYPE workqueue_depth gauge\n"));
    assert_non_null(strstr(b.data, "# TYPE controller_runtime_reconcile_time_seconds histogram\n"));
    buf_free(&b);
    host__metrics_destroy(&m);
}

/* One HTTP/1.0 GET; returns the status code, body in out (caller frees). */
static int http_get(int port, const char *path, char **out)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char req[256];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    struct buf b = { 0 };
    char chunk[4096];
    ssize_t r;
    while ((r = read(fd, chunk, sizeof(chunk))) > 0)
        buf_append(&b, chunk, (size_t)r);
    close(fd);
    int code = 0;
    assert_non_null(b.data);
    sscanf(b.data, "HTTP/1.%*d %d", &code);
    const char *body = strstr(b.data, "\r\n\r\n");
    *out = strdup(body ? body + 4 : "");
    buf_free(&b);
    return code;
}

static int ready_flag;
static int ready_cb(void *arg)
{
    (void)arg;
    return ready_flag;
}

static void test_http_endpoints(void **state)
{
    (void)state;
    struct host_metrics m;
    struct host_http *h;
    char *body;
    log_set_level(LOG_ERROR);
    host__metrics_init(&m, "test", "raycluster", 1);
    host__metrics_observe(&m, HOST_M_SUCCESS, false, 1000, 1000);
    assert_int_equal(host__http_start("127.0.0.1:0", "127.0.0.1:0", &m, ready_cb, NULL, &h), 0);
    int mp = host__http_port(h, 0), pp = host__http_port(h, 1);
    assert_true(mp > 0 && pp > 0 && mp != pp);

    assert_int_equal(http_get(mp, "/metrics", &body), 200);
    assert_true(sample(body, "controller_runtime_reconcile_total{controller=\"test\",result=\"success\"}") == 1);
    free(body);
    assert_int_equal(http_get(mp, "/healthz", &body), 404);   /* probes live on their own port */
    free(body);
    assert_int_equal(http_get(pp, "/healthz", &body), 200);
    free(body);
    ready_flag = 0;
    assert_int_equal(http_get(pp, "/readyz", &body), 503);
    free(body);
    ready_flag = 1;
    assert_int_equal(http_get(pp, "/readyz", &body), 200);
    free(body);
    assert_int_equal(http_get(pp, "/nope", &body), 404);
    free(body);
    host__http_stop(h);

    /* "0" turns a listener off; a bad address is an error */
    assert_int_equal(host__http_start("0", "0", &m, ready_cb, NULL, &h), 0);
    assert_int_equal(host__http_port(h, 0), -1);
    host__http_stop(h);
    assert_int_equal(host__http_start("nonsense", "0", &m, ready_cb, NULL, &h), -EINVAL);
    host__metrics_destroy(&m);
    log_set_level(LOG_INFO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_and_results),
        cmocka_unit_test(test_queue_figures_from_status),
        cmocka_unit_test(test_http_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

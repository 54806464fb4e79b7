/* test_util.c - unit tests of util/: buffer growth, JSON escaping, time round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>

#include "util/json.h"
#include "util/util.h"

static void test_buf_grows_and_terminates(void **state)
{
    struct buf b = { 0 };
    (void)state;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(buf_printf(&b, "%d,", i), 0);
    assert_int_equal(strlen(b.data), b.len);
    assert_memory_equal(b.data, "0,1,2,", 6);
    assert_string_equal(b.data + b.len - 4, "999,");
    buf_free(&b);
    assert_null(b.data);
}

/* util_array_grow doubles from first, keeps the contents, and leaves the array as it
 * was when the size would overflow. */
static void test_array_grow(void **state)
{
    (void)state;
    int *v = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(util_array_grow(&v, sizeof(*v), n, &cap, 4), 0);
        assert_true(cap > n);
        v[n++] = i;
    }
    assert_int_equal(cap, 128);   /* 4, 8, ..., 128 */
    for (int i = 0; i < 100; i++)
        assert_int_equal(v[i], i);
    assert_int_equal(util_array_grow(&v, sizeof(*v), 5, &cap, 4), 0);   /* room: no change */
    assert_int_equal(cap, 128);
    int *keep = v;
    size_t huge = SIZE_MAX / 2 + 1;
    assert_int_equal(util_array_grow(&v, sizeof(*v), huge, &huge, 4), -ENOMEM);
    assert_int_equal(huge, SIZE_MAX / 2 + 1);
    assert_ptr_equal(v, keep);
    free(v);
}

static void test_buf_json_escape(void **state)
{
    struct buf b = { 0 };
    (void)state;
    assert_int_equal(buf_append_json_string(&b, "a\"b\\c\n\x01z"), 0);
    assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\u0001z\"");
    buf_free(&b);
}

static void test_time_round_trip(void **state)
{
    char out[32];
    time_t t;
    (void)state;
    util_format_time(1700000000, out);
    assert_string_equal(out, "2023-11-14T22:13:20Z");
    assert_int_equal(util_parse_time(out, &t), 0);
    assert_int_equal(t, 1700000000);
    assert_int_equal(util_parse_time("2023-11-14T23:13:20.5+01:00", &t), 0);
    assert_int_equal(t, 1700000000);
    assert_int_equal(util_parse_time("2023-11-14 nope", &t), -EINVAL);
}

/* A 1 MiB write through a pipe (short writes while the reader drains it), a
 * closed pipe (-EPIPE), and the (err, errlen) formatter's NULL/0 cases. */
static void test_write_all_and_format_err(void **state)
{
    static char big[1 << 20];
    int fds[2];
    pid_t pid;
    char err[8] = "keep";

    (void)state;
    memset(big, 'x', sizeof(big));
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char rb[4096];
        size_t total = 0;
        ssize_t n;
        close(fds[1]);
        while ((n = read(fds[0], rb, sizeof(rb))) > 0)
            total += (size_t)n;
        _exit(total == sizeof(big) ? 0 : 1);
    }
    close(fds[0]);
    assert_int_equal(util_write_all(fds[1], big, sizeof(big)), 0);
    close(fds[1]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(util_write_all(fds[1], "x", 1), -EPIPE);
    close(fds[1]);

    util_format_err(NULL, 10, "x %d", 1);
    util_format_err(err, 0, "x %d", 1);
    assert_string_equal(err, "keep");
    util_format_err(err, sizeof(err), "value %d too long", 12345);
    assert_string_equal(err, "value 1");
}

/* Runs one log_write with stderr redirected into a pipe; returns the line. */
static void capture_log(int encoder, char *out, size_t cap)
{
    int fds[2], saved = dup(STDERR_FILENO);
    ssize_t n;

    assert_int_equal(pipe(fds), 0);
    assert_true(saved >= 0);
    dup2(fds[1], STDERR_FILENO);
    log_set_encoder(encoder);
    log_set_component("controller");
    log_write(LOG_WARN, "reconcile\tfailed", "name", "a\"b", "skipped", NULL, "ns", "x", NULL);
    log_set_encoder(LOG_ENCODER_JSON);
    log_set_component(NULL);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[1]);
    n = read(fds[0], out, cap - 1);
    close(fds[0]);
    assert_true(n > 0);
    out[n] = '\0';
}

/* JSON stays the default; console is zap's layout with the fields as
 * key=value pairs (quoted when needed) and the message kept on one line. */
static void test_log_encoders(void **state)
{
    char line[512], *tab;
    (void)state;
    assert_int_equal(log_parse_encoder("json"), LOG_ENCODER_JSON);
    assert_int_equal(log_parse_encoder("console"), LOG_ENCODER_CONSOLE);
    assert_int_equal(log_parse_encoder("logfmt"), -1);

    capture_log(LOG_ENCODER_JSON, line, sizeof(line));
    assert_true(line[0] == '{');
    assert_non_null(strstr(line, "\"level\":\"warn\",\"component\":\"controller\","
                                 "\"msg\":\"reconcile\\tfailed\",\"name\":\"a\\\"b\",\"ns\":\"x\"}\n"));

    capture_log(LOG_ENCODER_CONSOLE, line, sizeof(line));
    tab = strchr(line, '\t');
    assert_non_null(tab);
    assert_int_equal(tab - line, 27); /* 2026-12-02T17:00:00.000000Z */
    assert_true(line[4] == '-' && line[26] == 'Z');
    assert_string_equal(tab, "\tWARN\tcontroller\treconcile failed\tname=\"a\\\"b\" ns=x\n");
}

/* json_path_next: one member name at a time, and refusal of one that does not fit. */
/* util_flag_split: the "--name[=value]" form, help, non-flags and names too long. */
static void test_flag_split(void **state)
{
    char name[8];
    const char *v = "x";
    (void)state;
    assert_int_equal(util_flag_split("t", "--qps=5", name, sizeof(name), &v), 0);
    assert_string_equal(name, "qps");
    assert_string_equal(v, "5");
    assert_int_equal(util_flag_split("t", "--workers", name, sizeof(name), &v), 0);
    assert_string_equal(name, "workers");
    assert_null(v);
    assert_int_equal(util_flag_split("t", "--a=b=c", name, sizeof(name), &v), 0);
    assert_string_equal(v, "b=c");
    assert_int_equal(util_flag_split("t", "-h", name, sizeof(name), &v), 1);
    assert_int_equal(util_flag_split("t", "--help", name, sizeof(name), &v), 1);
    assert_int_equal(util_flag_split("t", "-qps", name, sizeof(name), &v), -EINVAL);
    assert_int_equal(util_flag_split("t", "stray", name, sizeof(name), &v), -EINVAL);
    assert_int_equal(util_flag_split("t", "--toolongname=1", name, sizeof(name), &v), -EINVAL);
    assert_int_equal(util_flag_split("t", "--1234567", name, sizeof(name), &v), 0);
    assert_int_equal(util_flag_split("t", "--12345678", name, sizeof(name), &v), -EINVAL);
}

static void test_json_path_next(void **state)
{
    (void)state;
    const char *p = "spec.template.x";
    char seg[9];
    assert_int_equal(json_path_next(&p, seg, sizeof(seg)), 0);
    assert_string_equal(seg, "spec");
    assert_string_equal(p, "template.x");
    assert_int_equal(json_path_next(&p, seg, sizeof(seg)), 0);
    assert_string_equal(seg, "template");
    assert_int_equal(json_path_next(&p, seg, sizeof(seg)), 0);
    assert_string_equal(seg, "x");
    assert_string_equal(p, "");
    p = "metadata9.x";   /* 9 bytes do not fit in 9 with the NUL */
    assert_int_equal(json_path_next(&p, seg, sizeof(seg)), -1);
    assert_string_equal(p, "metadata9.x");
}

static void test_json_get_paths(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"spec\":{\"replicas\":3,\"template\":{\"metadata\":{\"name\":\"n\"}},"
                           "\"list\":[1]},\"s\":\"x\"}");
    assert_non_null(o);
    assert_int_equal(json_get(o, "spec.replicas")->valueint, 3);
    assert_int_equal(json_get(o, ".spec.replicas")->valueint, 3);      /* scale path form */
    assert_string_equal(json_get_str(o, "spec.template.metadata.name"), "n");
    assert_ptr_equal(json_get(o, ""), o);
    assert_null(json_get(o, "spec.missing.x"));
    assert_null(json_get(o, "s.below"));                  /* through a string */
    assert_null(json_get(o, "spec.list.0"));              /* arrays are not objects */
    assert_null(json_get_str(o, "spec.replicas"));        /* not a string */
    assert_null(json_get(NULL, "spec"));
    assert_null(json_get(o, NULL));
    char long_key[300];
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = 0;
    assert_null(json_get(o, long_key));                   /* over 255 bytes: refused */
    cJSON_Delete(o);
}

/* The allocator's figures follow what the program allocates, whichever allocator the
 * build runs on; release builds run on jemalloc, so that a build which silently fell
 * back to glibc's malloc (the 10,000-cluster bench's CPU doubled) fails here. */
static void test_heap_stats_follow_malloc(void **state)
{
    struct util_heap h0, h1, h2;
    const size_t n = 8u << 20;
    char *p;
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    assert_string_equal(util_heap_name(), "sanitizer");
    return;   /* the sanitizer's allocator reports nothing through these */
#elif defined(RAYOP_JEMALLOC)
    assert_string_equal(util_heap_name(), "jemalloc");
    assert_int_equal(util_heap_chunk_header(), 0);
#else
    assert_string_equal(util_heap_name(), "glibc");
    assert_int_equal(util_heap_chunk_header(), sizeof(size_t));
#endif
    assert_int_equal(util_heap_stats(&h0), 0);
    p = malloc(n);
    assert_non_null(p);
    memset(p, 1, n);
    assert_int_equal(util_heap_stats(&h1), 0);
    assert_true(h1.in_use >= h0.in_use + n);
    assert_true(h1.mapped >= h1.in_use);
    free(p);
    assert_int_equal(util_heap_stats(&h2), 0);
    assert_true(h2.in_use + n <= h1.in_use);
    util_heap_release();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_grows_and_terminates),
        cmocka_unit_test(test_json_get_paths),
        cmocka_unit_test(test_json_path_next),
        cmocka_unit_test(test_flag_split),
        cmocka_unit_test(test_buf_json_escape),
        cmocka_unit_test(test_array_grow),
        cmocka_unit_test(test_time_round_trip),
        cmocka_unit_test(test_write_all_and_format_err),
        cmocka_unit_test(test_log_encoders),
        cmocka_unit_test(test_heap_stats_follow_malloc),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}

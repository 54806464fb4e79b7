/* test_cluster_jobs.c - the simulated Job controller's arithmetic
 * (kubesim/cluster/jobcalc.c): how many Pods a Job wants active, the Pod-failure
 * back-off, and the completedIndexes interval text both ways, including
 * malformed texts a client could write into a Job's status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/cluster.h"

static void test_want_active(void **state)
{
    (void)state;
    /* completions 3, parallelism 2: 2 at first, then only what is left */
    assert_int_equal(cluster_job_want_active(3, 2, 0, 0), 2);
    assert_int_equal(cluster_job_want_active(3, 2, 2, 1), 1);
    assert_int_equal(cluster_job_want_active(3, 2, 3, 0), 0);
    assert_int_equal(cluster_job_want_active(3, 2, 5, 0), 0);   /* never negative */
    /* no completions: parallelism until the first success, then what runs */
    assert_int_equal(cluster_job_want_active(-1, 4, 0, 1), 4);
    assert_int_equal(cluster_job_want_active(-1, 4, 1, 3), 3);
    /* parallelism 0 stops a Job */
    assert_int_equal(cluster_job_want_active(5, 0, 0, 2), 0);
}

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(cluster_job_backoff_ms(0), 0);
    assert_int_equal(cluster_job_backoff_ms(-3), 0);
    assert_int_equal(cluster_job_backoff_ms(1), 500);
    assert_int_equal(cluster_job_backoff_ms(2), 1000);
    assert_int_equal(cluster_job_backoff_ms(4), 4000);
    assert_int_equal(cluster_job_backoff_ms(7), 30000);    /* capped */
    assert_int_equal(cluster_job_backoff_ms(1000000), 30000);
}

static void roundtrip(const char *in, long n, const char *want, long count)
{
    unsigned char bits[64] = { 0 };
    char *out;

    assert_true(n <= 64 * 8);
    assert_int_equal(cluster_job_indexes_parse(in, strlen(in), n, bits), 0);
    assert_int_equal(cluster_job_indexes_count(bits, n), count);
    out = cluster_job_indexes_format(bits, n);
    assert_non_null(out);
    assert_string_equal(out, want);
    free(out);
}

static void test_indexes(void **state)
{
    (void)state;
    roundtrip("", 10, "", 0);
    roundtrip("0-2", 3, "0-2", 3);
    roundtrip("1,3,5-7", 10, "1,3,5-7", 5);
    roundtrip("0,1,2,4", 10, "0-2,4", 4);         /* adjacent singles merge */
    roundtrip("5-9,0-1", 10, "0-1,5-9", 7);       /* order does not matter */
    roundtrip("2-4,3-6", 10, "2-6", 5);           /* overlaps */
    roundtrip("0-2,8-12", 10, "0-2,8-9", 5);      /* past completions ignored */
    roundtrip("999999999", 10, "", 0);
}

static void test_indexes_malformed(void **state)
{
    static const char *const bad[] = {
        "a", "1-", "-1", "3-1", "1,,2", ",1", "1,", "1 ", " 1", "1-2-3", "+1", "1e3",
        "1234567890", "0-1234567890", "1;2", "0x10",
    };
    unsigned char bits[4];
    char *out;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(bits, 0, sizeof(bits));
        if (cluster_job_indexes_parse(bad[i], strlen(bad[i]), 20, bits) != -EINVAL)
            fail_msg("'%s' was accepted", bad[i]);
    }
    /* the length bounds the read: "12" given as 1 byte is "1" */
    memset(bits, 0, sizeof(bits));
    assert_int_equal(cluster_job_indexes_parse("12", 1, 20, bits), 0);
    out = cluster_job_indexes_format(bits, 20);
    assert_string_equal(out, "1");
    free(out);
    /* an embedded NUL is malformed, not a shorter text */
    assert_int_equal(cluster_job_indexes_parse("1\0" "2", 3, 20, bits), -EINVAL);
}

static void test_format_large(void **state)
{
    long n = 100000;
    unsigned char *bits = calloc((size_t)n / 8 + 1, 1);
    char *out;

    (void)state;
    assert_non_null(bits);
    for (long i = 0; i < n; i += 2)   /* every other index: 50,000 items */
        bits[i / 8] |= (unsigned char)(1u << (i % 8));
    out = cluster_job_indexes_format(bits, n);
    assert_non_null(out);
    assert_int_equal(strncmp(out, "0,2,4,", 6), 0);
    assert_string_equal(out + strlen(out) - 6, ",99998");
    memset(bits, 0, (size_t)n / 8 + 1);
    assert_int_equal(cluster_job_indexes_parse(out, strlen(out), n, bits), 0);
    assert_int_equal(cluster_job_indexes_count(bits, n), n / 2);
    free(out);
    free(bits);
}

static void test_job_pod_flag(void **state)
{
    struct cluster_opts *o = NULL;
    char err[256];

    (void)state;
    assert_int_equal(cluster_parse_flag(&o, "nodes", "1", err, sizeof(err)), 0);
    assert_int_equal(o->job_pod_ms, 1500);   /* the default */
    assert_int_equal(cluster_parse_flag(&o, "job-pod-ms", "0", err, sizeof(err)), 0);
    assert_int_equal(o->job_pod_ms, 0);
    assert_int_equal(cluster_parse_flag(&o, "job-pod-ms", "-1", err, sizeof(err)), -EINVAL);
    assert_int_equal(cluster_parse_flag(&o, "job-pod-ms", "soon", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--job-pod-ms"));
    cluster_opts_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_want_active),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_indexes),
        cmocka_unit_test(test_indexes_malformed),
        cmocka_unit_test(test_format_large),
        cmocka_unit_test(test_job_pod_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

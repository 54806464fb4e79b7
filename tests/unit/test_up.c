/*
 * test_up.c - `rayop up`'s pure parts: the kubelet-style restart backoff
 * (initial, doubling, cap, reset after a long run, no overflow) and the log
 * line tagging (JSON lines get a leading "proc" member and stay valid JSON,
 * other lines a prefix).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "cmd/up/internal.h"

static void test_backoff(void **state)
{
    (void)state;
    /* initial 1 s, cap 10 s, reset after 600 s */
    uint64_t d = 0, seq[6];
    for (int i = 0; i < 6; i++)
        seq[i] = d = up__next_backoff(d, 50, 1000, 10000, 600000);
    assert_int_equal(seq[0], 1000);
    assert_int_equal(seq[1], 2000);
    assert_int_equal(seq[2], 4000);
    assert_int_equal(seq[3], 8000);
    assert_int_equal(seq[4], 10000);
    assert_int_equal(seq[5], 10000);
    /* ran long enough (a kill, not a crash loop): at once, then over from the initial delay */
    assert_int_equal(up__next_backoff(10000, 600000, 1000, 10000, 600000), 0);
    assert_int_equal(up__next_backoff(0, 50, 1000, 10000, 600000), 1000);
    assert_int_equal(up__next_backoff(10000, 599999, 1000, 10000, 600000), 10000);
    assert_int_equal(up__next_backoff(8000, 10000, 1000, 10000, 10000), 0);
    /* a huge previous delay does not overflow past the cap */
    assert_int_equal(up__next_backoff(UINT64_MAX - 1, 0, 1, UINT64_MAX - 5, UINT64_MAX), UINT64_MAX - 5);
    /* initial above the cap is capped */
    assert_int_equal(up__next_backoff(0, 0, 50000, 10000, 600000), 10000);
}

static void tag(const char *proc, const char *line, char *out, size_t cap)
{
    struct buf b = { 0 };
    assert_int_equal(up__tag_line(proc, line, strlen(line), &b), 0);
    assert_true(b.len < cap);
    memcpy(out, b.data, b.len + 1);
    buf_free(&b);
}

static void test_tag_lines(void **state)
{
    (void)state;
    char out[512];
    tag("watcher", "{\"ts\":\"x\",\"msg\":\"hi\"}", out, sizeof(out));
    assert_string_equal(out, "{\"proc\":\"watcher\",\"ts\":\"x\",\"msg\":\"hi\"}\n");
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "proc")->valuestring, "watcher");
    cJSON_Delete(j);

    tag("raycluster", "{}", out, sizeof(out));
    assert_string_equal(out, "{\"proc\":\"raycluster\"}\n");
    tag("raycluster", "{ }", out, sizeof(out));
    j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON_Delete(j);

    tag("rayjob", "rayop controller: unknown flag", out, sizeof(out));
    assert_string_equal(out, "[rayjob] rayop controller: unknown flag\n");
    tag("rayjob", "{not closed", out, sizeof(out));
    assert_string_equal(out, "[rayjob] {not closed\n");
    tag("rayjob", "", out, sizeof(out));
    assert_string_equal(out, "[rayjob] \n");
    /* a name needing escapes stays valid JSON */
    tag("a\"b", "{\"k\":1}", out, sizeof(out));
    j = cJSON_Parse(out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "proc")->valuestring, "a\"b");
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_tag_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

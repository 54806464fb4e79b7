/* test_util.c - unit tests of util/: buffer growth, JSON escaping, time round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_grows_and_terminates),
        cmocka_unit_test(test_buf_json_escape),
        cmocka_unit_test(test_time_round_trip),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}

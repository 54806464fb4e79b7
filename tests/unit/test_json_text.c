/* test_json_text.c - kobj/json_text.c: every byte value is escaped as cJSON
 * escapes it, json_text_str_len predicts the written length exactly, and map
 * keys come out in Go's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "kobj/json_text.h"

static void check_one(const char *s, size_t n)
{
    char *out = malloc(6 * n + 3);
    char *nul = malloc(n + 1);
    cJSON *j;
    char *want;
    size_t len;

    assert_non_null(out);
    assert_non_null(nul);
    memcpy(nul, s, n);
    nul[n] = 0;
    len = (size_t)(json_text_put_str(out, s, n) - out);
    assert_int_equal(len, json_text_str_len(s, n));
    out[len] = 0;
    j = cJSON_CreateString(nul);
    want = cJSON_PrintUnformatted(j);
    assert_string_equal(out, want);
    cJSON_free(want);
    cJSON_Delete(j);
    free(nul);
    free(out);
}

static void test_every_byte(void **state)
{
    char s[4];

    (void)state;
    for (int c = 1; c < 256; c++) {
        s[0] = 'a';
        s[1] = (char)c;
        s[2] = 'z';
        check_one(s, 3);
        check_one(s + 1, 1);
    }
}

static void test_runs(void **state)
{
    static const char *const cases[] = {
        "", "plain", "\"\"", "a\\b", "tab\there\nnew\rline", "caf\xc3\xa9 \xe2\x98\x83",
        "\x01\x02\x1f end", "quote at end\"",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_one(cases[i], strlen(cases[i]));
    assert_int_equal(json_text_str_len("x", SIZE_MAX / 2), SIZE_MAX);
}

/* String members only, sorted bytewise (upper case before lower), capped at max. */
static void test_sorted_keys(void **state)
{
    cJSON *o = cJSON_Parse("{\"b\":\"1\",\"a\":\"2\",\"n\":3,\"B\":\"4\",\"a.x/y\":\"5\"}");
    const char *k[8];

    (void)state;
    assert_int_equal(json_text_sorted_keys(o, k, 8), 4);
    assert_string_equal(k[0], "B");
    assert_string_equal(k[1], "a");
    assert_string_equal(k[2], "a.x/y");
    assert_string_equal(k[3], "b");
    assert_int_equal(json_text_sorted_keys(o, k, 2), 2);
    assert_int_equal(json_text_sorted_keys(cJSON_GetObjectItem(o, "n"), k, 8), 0);
    assert_int_equal(json_text_sorted_keys(NULL, k, 8), 0);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_byte),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_sorted_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

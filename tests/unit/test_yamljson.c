/* test_yamljson.c - YAML to JSON: Kubernetes scalar typing, multi-document files,
 * anchors, bounds and error reporting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/yamljson.h"

static void assert_yaml(const char *yaml, const char *want_json)
{
    cJSON *got = NULL, *want = cJSON_Parse(want_json);
    char err[256] = "";
    assert_non_null(want);
    int rc = yamljson_parse_one(yaml, strlen(yaml), &got, err, sizeof(err));
    if (rc)
        fail_msg("parse of %s failed: %d %s", yaml, rc, err);
    if (!cJSON_Compare(got, want, true)) {
        char *g = cJSON_PrintUnformatted(got);
        print_error("got %s want %s\n", g, want_json);
        free(g);
        fail();
    }
    cJSON_Delete(got);
    cJSON_Delete(want);
}

static void test_scalar_typing(void **state)
{
    (void)state;
    assert_yaml("a: true\nb: False\nc: yes\nd: off\ne: null\nf: ~\ng:\n",
                "{\"a\":true,\"b\":false,\"c\":true,\"d\":false,\"e\":null,\"f\":null,\"g\":null}");
    assert_yaml("i: 42\nn: -7\nh: 0x1F\no: 0o17\nl: 017\nu: 1_000\n",
                "{\"i\":42,\"n\":-7,\"h\":31,\"o\":15,\"l\":15,\"u\":1000}");
    assert_yaml("f: 1.5\ne: 1e3\ng: -.5\nh: 2.\n", "{\"f\":1.5,\"e\":1000,\"g\":-0.5,\"h\":2}");
    /* "08" is not octal, but go-yaml v2 still reads it as the float 8 */
    assert_yaml("s: \"true\"\nt: '42'\nu: 1.2.3\nv: 08\nw: abc\nx: \"\"\n",
                "{\"s\":\"true\",\"t\":\"42\",\"u\":\"1.2.3\",\"v\":8,\"w\":\"abc\",\"x\":\"\"}");
    assert_yaml("s: !!str 42\nb: !!bool true\n", "{\"s\":\"42\",\"b\":true}");
    assert_yaml("cmd: |\n  line1\n  line2\n", "{\"cmd\":\"line1\\nline2\\n\"}");
    assert_yaml("1: a\ntrue: b\n", "{\"1\":\"a\",\"true\":\"b\"}");
    assert_yaml("{\"json\": [1, \"two\", {\"x\": null}]}", "{\"json\":[1,\"two\",{\"x\":null}]}");
    assert_yaml("image: rayproject/ray:2.9.0\nport: 6379\n",
                "{\"image\":\"rayproject/ray:2.9.0\",\"port\":6379}");
}

static void test_structure_and_anchors(void **state)
{
    (void)state;
    assert_yaml("a:\n  - x\n  - {y: 1}\n  -\n    - 2\n", "{\"a\":[\"x\",{\"y\":1},[2]]}");
    assert_yaml("base: &b {cpu: 1}\nuse: *b\n", "{\"base\":{\"cpu\":1},\"use\":{\"cpu\":1}}");
    assert_yaml("a: 1\na: 2\n", "{\"a\":2}");
    assert_yaml("a: &x 1\na: *x\n", "{\"a\":1}");
}

static void test_multi_document(void **state)
{
    cJSON *docs = NULL;
    char err[128];
    (void)state;
    const char *y = "---\napiVersion: v1\nkind: Pod\n---\n# only a comment\n---\n"
                    "apiVersion: v1\nkind: Service\n...\n";
    assert_int_equal(yamljson_parse_all(y, strlen(y), &docs, err, sizeof(err)), 0);
    assert_int_equal(cJSON_GetArraySize(docs), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 1), "kind")->valuestring,
                        "Service");
    cJSON_Delete(docs);
    cJSON *one = NULL;
    assert_int_equal(yamljson_parse_one(y, strlen(y), &one, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "exactly one"));
    assert_int_equal(yamljson_parse_one("", 0, &one, err, sizeof(err)), -EINVAL);
    assert_int_equal(yamljson_parse_all("", 0, &docs, err, sizeof(err)), 0);
    assert_int_equal(cJSON_GetArraySize(docs), 0);
    cJSON_Delete(docs);
}

static void test_errors(void **state)
{
    cJSON *o = NULL;
    char err[256];
    (void)state;
    const char *bad = "a: [1, 2\nb: c\n";
    assert_int_equal(yamljson_parse_one(bad, strlen(bad), &o, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "yaml: line"));
    assert_null(o);
    const char *unk = "a: *nope\n";
    assert_int_equal(yamljson_parse_one(unk, strlen(unk), &o, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unknown anchor"));
    const char *cx = "? [a, b]\n: c\n";
    assert_int_equal(yamljson_parse_one(cx, strlen(cx), &o, err, sizeof(err)), -EINVAL);
    const char *inf = "a: .inf\n";
    assert_int_equal(yamljson_parse_one(inf, strlen(inf), &o, err, sizeof(err)), -EINVAL);
    const char *tab = "a:\n\tb: 1\n";
    assert_int_equal(yamljson_parse_one(tab, strlen(tab), &o, err, sizeof(err)), -EINVAL);
}

static void test_bounds(void **state)
{
    cJSON *o = NULL;
    char err[256];
    (void)state;
    /* nesting */
    size_t n = YAMLJSON_MAX_DEPTH + 10;
    char *deep = malloc(2 * n + 1);
    assert_non_null(deep);
    for (size_t i = 0; i < n; i++) {
        deep[i] = '[';
        deep[n + i] = ']';
    }
    deep[2 * n] = '\0';
    assert_int_equal(yamljson_parse_one(deep, 2 * n, &o, err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "nesting"));
    free(deep);
    /* billion laughs: each level doubles; aliases count every copy */
    char lol[4096];
    size_t off = (size_t)snprintf(lol, sizeof(lol), "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++)
        off += (size_t)snprintf(lol + off, sizeof(lol) - off,
                                "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n",
                                i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
                                i - 1, i - 1);
    assert_int_equal(yamljson_parse_one(lol, off, &o, err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "too large"));
    assert_null(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar_typing),
        cmocka_unit_test(test_structure_and_anchors),
        cmocka_unit_test(test_multi_document),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

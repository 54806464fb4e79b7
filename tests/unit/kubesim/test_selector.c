/* test_selector.c - label selector grammar, validation, LabelSelector objects, field selectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/schema/selector.h"

/* Parses sel and reports whether it matches the labels given as a JSON object text. */
static bool match(const char *sel, const char *labels_json)
{
    struct sel *s = NULL;
    char err[512] = "";
    cJSON *labels = labels_json ? cJSON_Parse(labels_json) : NULL;
    int rc = sel_parse(sel, &s, err, sizeof(err));
    if (rc)
        fail_msg("parse of '%s' failed: %s", sel, err);
    bool m = sel_matches(s, labels);
    sel_free(s);
    cJSON_Delete(labels);
    return m;
}

static int parse_err(const char *sel, char *err, size_t errlen)
{
    struct sel *s = NULL;
    int rc = sel_parse(sel, &s, err, errlen);
    assert_null(s);
    return rc;
}

static void test_equality(void **state)
{
    (void)state;
    assert_true(match("app=ray", "{\"app\":\"ray\"}"));
    assert_true(match("app==ray", "{\"app\":\"ray\",\"x\":\"y\"}"));
    assert_false(match("app=ray", "{\"app\":\"other\"}"));
    assert_false(match("app=ray", "{}"));
    assert_false(match("app=ray", NULL));
    assert_true(match("app!=ray", "{\"app\":\"other\"}"));
    assert_true(match("app!=ray", "{}")); /* != matches objects without the key */
    assert_false(match("app!=ray", "{\"app\":\"ray\"}"));
    assert_true(match("a=1,b=2", "{\"a\":\"1\",\"b\":\"2\"}"));
    assert_false(match("a=1,b=2", "{\"a\":\"1\",\"b\":\"3\"}"));
    assert_true(match(" a = 1 , b = 2 ", "{\"a\":\"1\",\"b\":\"2\"}"));
    assert_true(match("a=", "{\"a\":\"\"}"));
    assert_false(match("a=", "{\"a\":\"x\"}"));
}

static void test_set_based(void **state)
{
    (void)state;
    const char *s = "ray.io/node-type in (head,worker,redis-cleanup)";
    assert_true(match(s, "{\"ray.io/node-type\":\"head\"}"));
    assert_true(match(s, "{\"ray.io/node-type\":\"redis-cleanup\"}"));
    assert_false(match(s, "{\"ray.io/node-type\":\"other\"}"));
    assert_false(match(s, "{}"));
    assert_true(match("env notin (prod, staging)", "{\"env\":\"dev\"}"));
    assert_true(match("env notin (prod, staging)", "{}"));
    assert_false(match("env notin (prod,staging)", "{\"env\":\"prod\"}"));
    assert_true(match("env", "{\"env\":\"\"}"));
    assert_false(match("env", "{}"));
    assert_true(match("!env", "{}"));
    assert_false(match("!env", "{\"env\":\"x\"}"));
    assert_true(match("x in (a),!y,z", "{\"x\":\"a\",\"z\":\"1\"}"));
}

static void test_gt_lt(void **state)
{
    (void)state;
    assert_true(match("n>3", "{\"n\":\"4\"}"));
    assert_false(match("n>3", "{\"n\":\"3\"}"));
    assert_false(match("n>3", "{\"n\":\"abc\"}"));
    assert_false(match("n>3", "{}"));
    assert_true(match("n<3", "{\"n\":\"-2\"}"));
    assert_false(match("n < 3", "{\"n\":\"10\"}"));
}

static void test_empty_matches_everything(void **state)
{
    struct sel *s = NULL;
    char err[64];
    (void)state;
    assert_int_equal(sel_parse(NULL, &s, err, sizeof(err)), 0);
    assert_true(sel_is_empty(s));
    assert_true(sel_matches(s, NULL));
    sel_free(s);
    assert_int_equal(sel_parse("  ", &s, err, sizeof(err)), 0);
    assert_true(sel_is_empty(s));
    sel_free(s);
    assert_int_equal(sel_parse("a=b", &s, err, sizeof(err)), 0);
    assert_false(sel_is_empty(s));
    sel_free(s);
}

static void test_syntax_errors(void **state)
{
    char err[512];
    (void)state;
    const char *bad[] = {
        "a=b,", ",a=b", "a in b", "a in (b", "a in (b c)", "!a=b", "a b", "=b", "a=b=c",
        "a>b", "a>", "a notin", "!", "a,,b", "(a)", "a!b",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc = parse_err(bad[i], err, sizeof(err));
        if (rc != -EINVAL)
            fail_msg("'%s' parsed (rc %d)", bad[i], rc);
        assert_true(strlen(err) > 0);
    }
    parse_err("a in b", err, sizeof(err));
    assert_non_null(strstr(err, "expected: '('"));
}

static void test_validation(void **state)
{
    char err[1024];
    char longv[80];
    (void)state;
    assert_int_equal(parse_err("-a=b", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "Invalid value: \"-a\""));
    assert_non_null(strstr(err, "name part must consist of alphanumeric characters"));
    assert_int_equal(parse_err("a=-b", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "a valid label must be an empty string"));
    assert_int_equal(parse_err("Ray.IO/x=b", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "prefix part"));
    assert_int_equal(parse_err("a/b/c=d", err, sizeof(err)), -EINVAL);
    memset(longv, 'v', 64);
    longv[64] = '\0';
    char sel[200];
    snprintf(sel, sizeof(sel), "a=%s", longv);
    assert_int_equal(parse_err(sel, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no more than 63 characters"));
    snprintf(sel, sizeof(sel), "%s=a", longv);
    assert_int_equal(parse_err(sel, err, sizeof(err)), -EINVAL);
    longv[63] = '\0';
    snprintf(sel, sizeof(sel), "%s=%s", longv, longv);
    assert_true(match(sel, NULL) == false);
    assert_true(match("example.com/My_Name.x-1=A.b_c-9", "{\"example.com/My_Name.x-1\":\"A.b_c-9\"}"));
}

static void test_too_long(void **state)
{
    char err[128];
    size_t n = SEL_MAX_INPUT + 10;
    char *s = malloc(n + 1);
    (void)state;
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = (i % 4 == 3) ? ',' : 'a';
    s[n] = '\0';
    assert_int_equal(parse_err(s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "too long"));
    free(s);
}

static void test_required_value(void **state)
{
    struct sel *s;
    char err[128];
    (void)state;
    assert_int_equal(sel_parse("ray.io/cluster=demo,x!=y", &s, err, sizeof(err)), 0);
    assert_string_equal(sel_required_value(s, "ray.io/cluster"), "demo");
    assert_null(sel_required_value(s, "x"));
    assert_null(sel_required_value(s, "missing"));
    sel_free(s);
    assert_int_equal(sel_parse("k in (only)", &s, err, sizeof(err)), 0);
    assert_string_equal(sel_required_value(s, "k"), "only");
    sel_free(s);
    assert_int_equal(sel_parse("k in (a,b)", &s, err, sizeof(err)), 0);
    assert_null(sel_required_value(s, "k"));
    sel_free(s);
}

static int from_ls(const char *json, struct sel **s, char *err, size_t errlen)
{
    cJSON *j = cJSON_Parse(json);
    int rc = sel_from_label_selector(j, s, err, errlen);
    cJSON_Delete(j);
    return rc;
}

static void test_label_selector_object(void **state)
{
    struct sel *s;
    char err[512];
    (void)state;
    assert_int_equal(from_ls("{\"matchLabels\":{\"app\":\"ray\"},\"matchExpressions\":["
                             "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]},"
                             "{\"key\":\"gone\",\"operator\":\"DoesNotExist\"},"
                             "{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"prod\"]},"
                             "{\"key\":\"has\",\"operator\":\"Exists\"}]}", &s, err, sizeof(err)), 0);
    cJSON *ok = cJSON_Parse("{\"app\":\"ray\",\"tier\":\"b\",\"has\":\"\"}");
    cJSON *bad = cJSON_Parse("{\"app\":\"ray\",\"tier\":\"b\",\"has\":\"\",\"gone\":\"x\"}");
    assert_true(sel_matches(s, ok));
    assert_false(sel_matches(s, bad));
    assert_string_equal(sel_required_value(s, "app"), "ray");
    cJSON_Delete(ok);
    cJSON_Delete(bad);
    sel_free(s);

    assert_int_equal(sel_from_label_selector(NULL, &s, err, sizeof(err)), 0);
    assert_true(sel_is_empty(s));
    sel_free(s);
    assert_int_equal(from_ls("{}", &s, err, sizeof(err)), 0);
    assert_true(sel_is_empty(s));
    sel_free(s);

    assert_int_equal(from_ls("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}",
                             &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "Required value"));
    assert_int_equal(from_ls("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\","
                             "\"values\":[\"x\"]}]}", &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "Forbidden"));
    assert_int_equal(from_ls("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\","
                             "\"values\":[\"1\"]}]}", &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not a valid selector operator"));
    assert_int_equal(from_ls("{\"matchLabels\":{\"a\":1}}", &s, err, sizeof(err)), -EINVAL);
    assert_int_equal(from_ls("{\"matchLabels\":{\"-bad\":\"x\"}}", &s, err, sizeof(err)), -EINVAL);
    assert_int_equal(from_ls("[]", &s, err, sizeof(err)), -EINVAL);
}

static bool fmatch(const char *f, const char *obj_json)
{
    struct fsel *fs;
    char err[256];
    cJSON *obj = cJSON_Parse(obj_json);
    if (fsel_parse(f, &fs, err, sizeof(err)))
        fail_msg("fsel '%s': %s", f, err);
    bool m = fsel_matches(fs, obj);
    fsel_free(fs);
    cJSON_Delete(obj);
    return m;
}

static void test_field_selectors(void **state)
{
    struct fsel *fs;
    char err[256];
    (void)state;
    const char *ev = "{\"metadata\":{\"name\":\"e1\",\"namespace\":\"default\"},"
                     "\"involvedObject\":{\"name\":\"raycluster-demo\",\"kind\":\"RayCluster\"},"
                     "\"spec\":{\"hostNetwork\":true,\"n\":3}}";
    assert_true(fmatch("metadata.name=e1", ev));
    assert_true(fmatch("involvedObject.name=raycluster-demo,involvedObject.kind==RayCluster", ev));
    assert_false(fmatch("involvedObject.name=other", ev));
    assert_true(fmatch("involvedObject.name!=other", ev));
    assert_true(fmatch("spec.nodeName=", ev)); /* missing field reads as "" */
    assert_false(fmatch("spec.nodeName!=", ev));
    assert_true(fmatch("spec.hostNetwork=true", ev));
    assert_true(fmatch("spec.n=3", ev));
    assert_true(fmatch("", ev));

    assert_int_equal(fsel_parse("metadata.name=a\\,b\\=c\\\\d,status.phase!=Running", &fs,
                                err, sizeof(err)), 0);
    assert_int_equal(fsel_count(fs), 2);
    assert_string_equal(fsel_field(fs, 0), "metadata.name");
    assert_string_equal(fsel_field(fs, 1), "status.phase");
    assert_null(fsel_field(fs, 2));
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"a,b=c\\\\d\"},\"status\":{\"phase\":\"Pending\"}}");
    assert_true(fsel_matches(fs, o));
    cJSON_Delete(o);
    fsel_free(fs);

    assert_int_equal(fsel_parse("metadata.name", &fs, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "can't understand"));
    assert_int_equal(fsel_parse("a=b\\x", &fs, err, sizeof(err)), -EINVAL);
    assert_int_equal(fsel_parse("a=b=c", &fs, err, sizeof(err)), -EINVAL);
    assert_int_equal(fsel_parse("=b", &fs, err, sizeof(err)), -EINVAL);
    assert_null(fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equality),
        cmocka_unit_test(test_set_based),
        cmocka_unit_test(test_gt_lt),
        cmocka_unit_test(test_empty_matches_everything),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_required_value),
        cmocka_unit_test(test_label_selector_object),
        cmocka_unit_test(test_field_selectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

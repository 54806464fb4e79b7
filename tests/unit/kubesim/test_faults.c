/* test_faults.c - kubesim fault rules: the compact and JSON syntax (valid rules,
 * defaults, garbage), the text form parsing back to the same rule, and the table's
 * choices (every-N, count limits, seeded probabilities, verb/resource matching,
 * delays adding up before a failure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/api/faults.h"

static struct faults_rule parse_ok(const char *text)
{
    struct faults_rule r;
    char err[256] = "";

    if (faults_rule_parse(text, &r, err, sizeof(err)) != 0)
        fail_msg("'%s' did not parse: %s", text, err);
    return r;
}

static void test_parse_status(void **state)
{
    struct faults_rule r = parse_ok("verb=list,code=429,p=0.5,retry-after=2");

    (void)state;
    assert_string_equal(r.verb, "list");
    assert_string_equal(r.resource, "");
    assert_int_equal(r.action, FAULTS_STATUS);
    assert_int_equal(r.code, 429);
    assert_int_equal(r.retry_after, 2);
    assert_true(r.p == 0.5);
    assert_int_equal(r.every, 0);
    assert_int_equal(r.count, 0);

    r = parse_ok("code=429");            /* defaults: any verb, p=1, Retry-After 1 */
    assert_string_equal(r.verb, "*");
    assert_true(r.p == 1.0);
    assert_int_equal(r.retry_after, 1);
    r = parse_ok("verb=create,resource=pods,code=503");
    assert_int_equal(r.retry_after, 0);  /* 503 sends no Retry-After unless asked */
    assert_string_equal(r.resource, "pods");
    r = parse_ok("code=500,action=status,count=3,resource=rayclusters/status");
    assert_int_equal(r.code, 500);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.resource, "rayclusters/status");
}

static void test_parse_reset_delay(void **state)
{
    struct faults_rule r = parse_ok("verb=*,action=reset,every=10");

    (void)state;
    assert_int_equal(r.action, FAULTS_RESET);
    assert_int_equal(r.every, 10);
    r = parse_ok("verb=get,action=delay,ms=250");
    assert_int_equal(r.action, FAULTS_DELAY);
    assert_int_equal(r.delay_ms, 250);
    r = parse_ok("ms=40");               /* ms alone means a delay */
    assert_int_equal(r.action, FAULTS_DELAY);
}

static void test_parse_garbage(void **state)
{
    static const char *const bad[] = {
        "", ",", "verb", "verb=", "=x", "verb=list", "verb=foo,code=429", "code=404",
        "code=4290", "code=429x", "code= 429", "code=+429", "code=-429", "code=429,,verb=get",
        "code=429,", ",code=429", "code=429,action=reset", "code=429,action=delay",
        "action=delay", "action=delay,ms=0", "action=delay,ms=600001", "action=reset,ms=5",
        "action=boom", "code=500,retry-after=3", "code=429,retry-after=3601",
        "code=500,p=1.5", "code=500,p=-0.1", "code=500,p=nan", "code=500,p=inf", "code=500,p=",
        "code=500,p=0.5x", "code=500,p=0.5,every=2", "code=500,every=0", "code=500,count=-1",
        "resource=Pods,code=500", "resource=a/b/c,code=500", "resource=/pods,code=500",
        "resource=pods/,code=500", "resource=,code=500", "VERB=get,code=500", "unknown=1",
        "verb=get,code=500,ms=3", "code=500\n", "verb=get;code=500",
    };
    struct faults_rule r;
    char err[256], long_rule[2048];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (faults_rule_parse(bad[i], &r, err, sizeof(err)) != -EINVAL)
            fail_msg("'%s' was accepted", bad[i]);
        if (!err[0])
            fail_msg("'%s' gave no message", bad[i]);
    }
    assert_int_equal(faults_rule_parse(NULL, &r, err, sizeof(err)), -EINVAL);
    memset(long_rule, 'a', sizeof(long_rule) - 1);
    long_rule[sizeof(long_rule) - 1] = '\0';
    memcpy(long_rule, "code=500,resource=", 18);
    assert_int_equal(faults_rule_parse(long_rule, &r, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "longer"));
    /* the message names the problem */
    faults_rule_parse("code=404", &r, err, sizeof(err));
    assert_non_null(strstr(err, "404"));
}

static void test_format_roundtrip(void **state)
{
    static const char *const rules[] = {
        "verb=list,code=429,p=0.5,retry-after=1", "verb=*,action=reset,every=10",
        "verb=get,resource=pods/status,action=delay,ms=7,count=2", "code=503,retry-after=5",
        "code=500,p=0.1", "verb=watch,code=429,p=0",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        struct faults_rule a = parse_ok(rules[i]), b;
        struct buf text = { 0 };
        assert_int_equal(faults_rule_format(&a, &text), 0);
        b = parse_ok(text.data);
        assert_string_equal(a.verb, b.verb);
        assert_string_equal(a.resource, b.resource);
        assert_int_equal(a.action, b.action);
        assert_int_equal(a.code, b.code);
        assert_int_equal(a.retry_after, b.retry_after);
        assert_int_equal(a.delay_ms, b.delay_ms);
        assert_true(a.p == b.p);
        assert_int_equal(a.every, b.every);
        assert_int_equal(a.count, b.count);
        buf_free(&text);
    }
}

static void test_json(void **state)
{
    struct faults_rule r;
    char err[256];
    cJSON *j;

    (void)state;
    j = cJSON_Parse("{\"verb\":\"list\",\"code\":429,\"p\":0.25,\"retry-after\":3}");
    assert_int_equal(faults_rule_from_json(j, &r, err, sizeof(err)), 0);
    assert_int_equal(r.code, 429);
    assert_int_equal(r.retry_after, 3);
    assert_true(r.p == 0.25);
    cJSON_Delete(j);
    j = cJSON_Parse("\"verb=delete,action=reset\"");
    assert_int_equal(faults_rule_from_json(j, &r, err, sizeof(err)), 0);
    assert_int_equal(r.action, FAULTS_RESET);
    cJSON_Delete(j);
    /* a listing's counters and text form are accepted back */
    j = cJSON_Parse("{\"rule\":\"x\",\"verb\":\"get\",\"action\":\"delay\",\"ms\":5,"
                    "\"matched\":3,\"fired\":1}");
    assert_int_equal(faults_rule_from_json(j, &r, err, sizeof(err)), 0);
    assert_int_equal(r.delay_ms, 5);
    cJSON_Delete(j);

    static const char *const bad[] = {
        "{\"code\":429.5}", "{\"code\":true}", "{\"code\":[429]}", "{\"code\":{}}",
        "{\"code\":null}", "{\"code\":429,\"x\":1}", "{}", "[]", "5", "\"\"",
        "{\"code\":1e400}", "{\"verb\":\"list,code=500\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = cJSON_Parse(bad[i]);
        if (faults_rule_from_json(j, &r, err, sizeof(err)) != -EINVAL)
            fail_msg("%s was accepted", bad[i]);
        cJSON_Delete(j);
    }
    assert_int_equal(faults_rule_from_json(NULL, &r, err, sizeof(err)), -EINVAL);
}

static struct faults *table(uint64_t seed, const char *rule)
{
    struct faults *f = NULL;
    struct faults_rule r = parse_ok(rule);

    assert_int_equal(faults_new(seed, &f), 0);
    assert_int_equal(faults_set_rules(f, &r, 1), 0);
    return f;
}

static int decide_code(struct faults *f, const char *verb, const char *plural, const char *sub)
{
    struct faults_decision d;

    faults_decide(f, verb, plural, sub, &d);
    return d.reset ? -1 : d.code;
}

static void test_every_and_count(void **state)
{
    struct faults *f = table(1, "verb=list,code=500,every=3");

    (void)state;
    for (int i = 1; i <= 9; i++)
        assert_int_equal(decide_code(f, "list", "pods", ""), i % 3 == 0 ? 500 : 0);
    faults_free(f);

    f = table(1, "code=503,count=2");
    assert_int_equal(decide_code(f, "get", "pods", ""), 503);
    assert_int_equal(decide_code(f, "create", "pods", ""), 503);
    for (int i = 0; i < 5; i++)
        assert_int_equal(decide_code(f, "get", "pods", ""), 0);
    /* replacing the rules restarts the count */
    struct faults_rule r = parse_ok("code=503,count=2");
    assert_int_equal(faults_set_rules(f, &r, 1), 0);
    assert_int_equal(decide_code(f, "get", "pods", ""), 503);
    faults_free(f);
}

static void test_probability_seeded(void **state)
{
    struct faults *a = table(42, "code=429,p=0.3"), *b = table(42, "code=429,p=0.3");
    struct faults *c = table(43, "code=429,p=0.3");
    int fired = 0, differ = 0;

    (void)state;
    for (int i = 0; i < 2000; i++) {
        int x = decide_code(a, "get", "pods", ""), y = decide_code(b, "get", "pods", "");
        int z = decide_code(c, "get", "pods", "");
        assert_int_equal(x, y);          /* same seed, same sequence */
        fired += x == 429;
        differ += x != z;
    }
    assert_in_range(fired, 480, 720);    /* 600 expected; > 5 sigma either way */
    assert_true(differ > 0);             /* another seed gives another sequence */

    /* reseeding restarts the sequence */
    int first[32];
    faults_set_seed(a, 7);
    for (int i = 0; i < 32; i++)
        first[i] = decide_code(a, "get", "pods", "");
    faults_set_seed(a, 7);
    for (int i = 0; i < 32; i++)
        assert_int_equal(decide_code(a, "get", "pods", ""), first[i]);
    faults_free(a);
    faults_free(b);
    faults_free(c);

    a = table(1, "code=500,p=0");
    b = table(1, "code=500,p=1");
    for (int i = 0; i < 200; i++) {
        assert_int_equal(decide_code(a, "get", "pods", ""), 0);
        assert_int_equal(decide_code(b, "get", "pods", ""), 500);
    }
    faults_free(a);
    faults_free(b);
}

static void test_matching(void **state)
{
    struct faults *f = table(1, "verb=update,resource=pods/status,code=500");

    (void)state;
    assert_int_equal(decide_code(f, "update", "pods", "status"), 500);
    assert_int_equal(decide_code(f, "update", "pods", ""), 0);
    assert_int_equal(decide_code(f, "update", "podsx", "status"), 0);
    assert_int_equal(decide_code(f, "update", "pod", "status"), 0);
    assert_int_equal(decide_code(f, "patch", "pods", "status"), 0);
    faults_free(f);

    f = table(1, "resource=pods,action=reset");
    assert_int_equal(decide_code(f, "get", "pods", "log"), -1);   /* any subresource */
    assert_int_equal(decide_code(f, "watch", "pods", ""), -1);
    assert_int_equal(decide_code(f, "get", "services", ""), 0);
    assert_int_equal(decide_code(f, NULL, "", ""), 0);         /* non-resource paths */
    faults_free(f);
}

static void test_order_and_delay(void **state)
{
    struct faults_rule r[3] = { parse_ok("verb=get,ms=30"), parse_ok("ms=20"),
                                parse_ok("verb=get,code=429,retry-after=4") };
    struct faults *f = NULL;
    struct faults_decision d;
    struct buf b = { 0 };

    (void)state;
    assert_int_equal(faults_new(1, &f), 0);
    faults_decide(f, "get", "pods", "", &d);       /* empty table: nothing */
    assert_int_equal(d.code + (int)d.delay_ms + d.reset, 0);
    assert_int_equal(faults_set_rules(f, r, 3), 0);
    faults_decide(f, "get", "pods", "", &d);
    assert_int_equal(d.delay_ms, 50);              /* delays add up ... */
    assert_int_equal(d.code, 429);                 /* ... and a failure still follows */
    assert_int_equal(d.retry_after, 4);
    faults_decide(f, "list", "pods", "", &d);
    assert_int_equal(d.delay_ms, 20);
    assert_int_equal(d.code, 0);

    /* the first failing rule wins */
    struct faults_rule two[2] = { parse_ok("action=reset,every=2"), parse_ok("code=503") };
    assert_int_equal(faults_set_rules(f, two, 2), 0);
    assert_int_equal(decide_code(f, "get", "pods", ""), 503);
    assert_int_equal(decide_code(f, "get", "pods", ""), -1);

    /* the listing counts matches and firings */
    assert_int_equal(faults_rules_json(f, &b), 0);
    cJSON *j = cJSON_Parse(b.data);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(j), 2);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "fired")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "matched")->valueint, 1);
    cJSON_Delete(j);
    buf_free(&b);

    struct faults_rule many[FAULTS_MAX_RULES + 1];
    for (size_t i = 0; i <= FAULTS_MAX_RULES; i++)
        many[i] = r[0];
    assert_int_equal(faults_set_rules(f, many, FAULTS_MAX_RULES + 1), -E2BIG);
    assert_int_equal(faults_set_rules(f, many, FAULTS_MAX_RULES), 0);
    assert_int_equal(faults_add_rule(f, &r[0]), -E2BIG);
    faults_free(f);
}

static void test_flags(void **state)
{
    struct faults *f = NULL;
    char err[256];

    (void)state;
    assert_int_equal(faults_parse_flag(&f, "listen", "x", err, sizeof(err)), -ENOENT);
    assert_null(f);
    assert_int_equal(faults_parse_flag(&f, "fault", "verb=get,code=500,every=2", err,
                                       sizeof(err)), 0);
    assert_non_null(f);
    assert_int_equal(faults_parse_flag(&f, "fault", "verb=get,code=600", err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, "600"));
    assert_int_equal(faults_parse_flag(&f, "fault-seed", "12345", err, sizeof(err)), 0);
    assert_int_equal(faults_parse_flag(&f, "fault-seed", "-1", err, sizeof(err)), -EINVAL);
    assert_int_equal(faults_parse_flag(&f, "watch-cut-seconds", "5", err, sizeof(err)), 0);
    assert_int_equal(faults_parse_flag(&f, "watch-cut-seconds", "86401", err, sizeof(err)),
                     -EINVAL);
    assert_int_equal(faults_parse_flag(&f, "watch-delay-ms", "abc", err, sizeof(err)),
                     -EINVAL);
    assert_int_equal(faults_parse_flag(&f, "watch-delay-ms", "300", err, sizeof(err)), 0);
    /* the rule given by flag is live */
    assert_int_equal(decide_code(f, "get", "pods", ""), 0);
    assert_int_equal(decide_code(f, "get", "pods", ""), 500);
    faults_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_status),
        cmocka_unit_test(test_parse_reset_delay),
        cmocka_unit_test(test_parse_garbage),
        cmocka_unit_test(test_format_roundtrip),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_every_and_count),
        cmocka_unit_test(test_probability_seeded),
        cmocka_unit_test(test_matching),
        cmocka_unit_test(test_order_and_delay),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

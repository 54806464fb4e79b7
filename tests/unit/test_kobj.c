/* test_kobj.c - kobj/kobj.c: member and metadata lookups are NULL-safe and type
 * checked, only a controller: true ownerReference owns, resourceVersions order as
 * numbers (any length) and fall back to bytes, base64 matches Go's StdEncoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "kobj/kobj.h"

static const char *obj_text =
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\",\"generation\":3,"
    "\"labels\":{\"ray.io/cluster\":\"rc\",\"n\":1},\"annotations\":{\"x\":\"y\"},"
    "\"ownerReferences\":[{\"kind\":\"Job\",\"uid\":\"j\"},"
    "{\"kind\":\"RayCluster\",\"uid\":\"owner\",\"controller\":true}]},"
    "\"spec\":{\"replicas\":2,\"s\":\"t\"}}";

static void test_members(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(obj_text);
    assert_non_null(o);
    assert_string_equal(kobj_meta_str(o, "name"), "a");
    assert_string_equal(kobj_meta_str(o, "namespace"), "ns");
    assert_string_equal(kobj_meta_str(o, "uid"), "u1");
    assert_null(kobj_meta_str(o, "generation"));       /* a number, not a string */
    assert_null(kobj_meta_str(o, "missing"));
    assert_string_equal(kobj_label(o, "ray.io/cluster"), "rc");
    assert_null(kobj_label(o, "n"));
    assert_string_equal(kobj_annotation(o, "x"), "y");
    assert_null(kobj_annotation(o, "ray.io/cluster"));
    assert_string_equal(kobj_str(kobj_get(o, "spec"), "s"), "t");
    assert_null(kobj_str(kobj_get(o, "spec"), "replicas"));
    assert_int_equal(kobj_get(kobj_get(o, "spec"), "replicas")->valueint, 2);
    assert_string_equal(json_get_str(o, "spec.s"), "t");
    /* NULL and non-objects are never walked */
    assert_null(kobj_get(NULL, "a"));
    assert_null(kobj_str(NULL, "a"));
    assert_null(kobj_meta_str(NULL, "name"));
    assert_null(kobj_get(kobj_get(kobj_get(o, "metadata"), "ownerReferences"), "kind"));
    cJSON_Delete(o);
}

static void test_controller_ref(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(obj_text);
    const cJSON *r = kobj_controller_ref(o);
    assert_non_null(r);
    assert_string_equal(kobj_str(r, "kind"), "RayCluster");
    assert_string_equal(kobj_controller_uid(o), "owner");
    cJSON_Delete(o);

    /* a reference without controller: true is not the controller */
    o = cJSON_Parse("{\"metadata\":{\"ownerReferences\":[{\"uid\":\"j\",\"controller\":false}]}}");
    assert_null(kobj_controller_ref(o));
    assert_null(kobj_controller_uid(o));
    cJSON_Delete(o);
    /* the first controller wins; a non-string uid is no uid */
    o = cJSON_Parse("{\"metadata\":{\"ownerReferences\":[{\"uid\":1,\"controller\":true},"
                    "{\"uid\":\"b\",\"controller\":true}]}}");
    assert_non_null(kobj_controller_ref(o));
    assert_null(kobj_controller_uid(o));
    cJSON_Delete(o);
    /* ownerReferences that is not a list owns nothing */
    o = cJSON_Parse("{\"metadata\":{\"ownerReferences\":{\"a\":{\"uid\":\"b\",\"controller\":true}}}}");
    assert_null(kobj_controller_ref(o));
    cJSON_Delete(o);
    assert_null(kobj_controller_ref(NULL));
}

static void test_rv_cmp(void **state)
{
    (void)state;
    assert_true(kobj_rv_cmp("9", "10") < 0);
    assert_true(kobj_rv_cmp("100", "99") > 0);
    assert_int_equal(kobj_rv_cmp("42", "42"), 0);
    assert_int_equal(kobj_rv_cmp("007", "7"), 0);
    assert_true(kobj_rv_cmp("0", "1") < 0);
    /* longer than any integer type */
    assert_true(kobj_rv_cmp("123456789012345678901234567890", "99999999999999999999") > 0);
    /* not numeric: bytewise */
    assert_true(kobj_rv_cmp("abc", "abd") < 0);
    assert_true(kobj_rv_cmp("9a", "10") > 0);
    assert_true(kobj_rv_numeric("0123"));
    assert_false(kobj_rv_numeric(""));
    assert_false(kobj_rv_numeric("12a"));
    assert_false(kobj_rv_numeric(NULL));
}

static void test_base64(void **state)
{
    (void)state;
    static const struct { const char *in, *out; } v[] = {
        { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
        { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
        { "\xff\xfe\xfd", "//79" },
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char out[32];
        size_t n = strlen(v[i].in);
        memset(out, 'X', sizeof(out));
        kobj_base64_encode((const unsigned char *)v[i].in, n, out);
        assert_string_equal(out, v[i].out);
        assert_int_equal(strlen(out) + 1, kobj_base64_len(n));
    }
}

/* apimachinery's IsDNS1035Label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63. */
static void test_dns1035_label(void **state)
{
    (void)state;
    char max[64], over[65];
    memset(max, 'a', 63);
    max[63] = '\0';
    memset(over, 'a', 64);
    over[64] = '\0';
    assert_true(kobj_dns1035_label("a"));
    assert_true(kobj_dns1035_label("raycluster-1"));
    assert_true(kobj_dns1035_label("a-b-0"));
    assert_true(kobj_dns1035_label(max));
    assert_false(kobj_dns1035_label(""));
    assert_false(kobj_dns1035_label(over));
    assert_false(kobj_dns1035_label("1abc"));     /* must start with a letter */
    assert_false(kobj_dns1035_label("abc-"));     /* must end alphanumeric */
    assert_false(kobj_dns1035_label("-abc"));
    assert_false(kobj_dns1035_label("Abc"));      /* lower case only */
    assert_false(kobj_dns1035_label("a.b"));      /* a label, not a subdomain */
    assert_false(kobj_dns1035_label("a_b"));
}

/* kobj_find: the first element whose string member matches, NULL-safe. */
static void test_find(void **state)
{
    (void)state;
    cJSON *a = cJSON_Parse("[{\"name\":\"x\",\"mountPath\":\"/a\"},{\"name\":1},"
                           "{\"name\":\"y\",\"mountPath\":\"/b\"},{\"name\":\"y\"}]");
    assert_non_null(a);
    assert_ptr_equal(kobj_find(a, "name", "y"), cJSON_GetArrayItem(a, 2));
    assert_ptr_equal(kobj_find(a, "mountPath", "/a"), cJSON_GetArrayItem(a, 0));
    assert_null(kobj_find(a, "name", "z"));
    assert_null(kobj_find(a, "name", NULL));
    assert_null(kobj_find(NULL, "name", "x"));
    cJSON_Delete(a);
}

/* kobj_members_sorted: byte order of the names (Go's map order), borrowed members. */
static void test_members_sorted(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"b\":1,\"B\":2,\"a\":3,\"aa\":4}");
    const cJSON **m = (const cJSON **)1;
    size_t n = 99;
    assert_int_equal(kobj_members_sorted(o, &m, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(m[0]->string, "B");
    assert_string_equal(m[1]->string, "a");
    assert_string_equal(m[2]->string, "aa");
    assert_string_equal(m[3]->string, "b");
    assert_ptr_equal(m[3], cJSON_GetObjectItemCaseSensitive(o, "b"));
    free(m);
    cJSON *e = cJSON_CreateObject();
    assert_int_equal(kobj_members_sorted(e, &m, &n), 0);
    assert_null(m);
    assert_int_equal(n, 0);
    assert_int_equal(kobj_members_sorted(NULL, &m, &n), 0);
    assert_int_equal(n, 0);
    cJSON_Delete(e);
    cJSON_Delete(o);
}

/* kobj_set_copy replaces the member with a deep copy, and NULL removes it. */
static void test_set_copy(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"k\":1,\"z\":2}"), *v = cJSON_Parse("{\"x\":[1,2]}");
    assert_int_equal(kobj_set_copy(o, "k", v), 0);
    assert_int_equal(cJSON_GetArraySize(o), 2);
    assert_true(cJSON_Compare(kobj_get(o, "k"), v, 1));
    assert_ptr_not_equal(kobj_get(o, "k"), v);
    cJSON_Delete(v);    /* the copy stands alone */
    assert_int_equal(cJSON_GetArraySize(kobj_get(kobj_get(o, "k"), "x")), 2);
    assert_int_equal(kobj_set_copy(o, "k", NULL), 0);
    assert_null(kobj_get(o, "k"));
    assert_int_equal(kobj_set_copy(o, "new", NULL), 0);
    assert_int_equal(cJSON_GetArraySize(o), 1);
    cJSON_Delete(o);
}

/* kobj_controller_refs: SetControllerReference's one reference, in its key order. */
static void test_controller_refs(void **state)
{
    (void)state;
    cJSON *owner = cJSON_Parse("{\"metadata\":{\"name\":\"rj\",\"uid\":\"u-1\"}}");
    cJSON *refs = kobj_controller_refs("ray.io/v1", "RayJob", owner);
    char *text = cJSON_PrintUnformatted(refs);
    assert_string_equal(text, "[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"name\":\"rj\","
                              "\"uid\":\"u-1\",\"controller\":true,\"blockOwnerDeletion\":true}]");
    free(text);
    cJSON_Delete(refs);
    refs = kobj_controller_refs("ray.io/v1", "RayCluster", NULL);   /* no metadata: "" */
    assert_string_equal(kobj_str(cJSON_GetArrayItem(refs, 0), "name"), "");
    assert_string_equal(kobj_str(cJSON_GetArrayItem(refs, 0), "uid"), "");
    cJSON_Delete(refs);
    cJSON_Delete(owner);
}

/* kobj_finalizers_patch keeps the other finalizers in order, adds or drops ours and
 * carries the rv; kobj_has_finalizer finds only a string equal to the name. */
static void test_finalizers(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"metadata\":{\"resourceVersion\":\"42\","
                           "\"finalizers\":[\"a\",\"ours\",1,\"b\"]}}");
    char *add = kobj_finalizers_patch(o, "ours", true), *del = kobj_finalizers_patch(o, "ours", false);
    assert_string_equal(add, "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"ours\"],"
                             "\"resourceVersion\":\"42\"}}");
    assert_string_equal(del, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],"
                             "\"resourceVersion\":\"42\"}}");
    assert_true(kobj_has_finalizer(o, "ours"));
    assert_false(kobj_has_finalizer(o, "our"));
    assert_false(kobj_has_finalizer(NULL, "ours"));
    free(add);
    free(del);
    add = kobj_finalizers_patch(NULL, "ours", true);   /* nothing read: no rv */
    assert_string_equal(add, "{\"metadata\":{\"finalizers\":[\"ours\"],\"resourceVersion\":\"\"}}");
    free(add);
    cJSON_Delete(o);
}

/* kobj_condition_set: lastTransitionTime moves only with the status. */
static void test_conditions(void **state)
{
    (void)state;
    cJSON *st = cJSON_Parse("{\"conditions\":7}");   /* not an array: replaced */
    cJSON *c = kobj_condition_set(st, "Ready", "False", "Starting", NULL, "t1");
    assert_non_null(c);
    assert_string_equal(kobj_str(c, "lastTransitionTime"), "t1");
    assert_string_equal(kobj_str(c, "message"), "");
    c = kobj_condition_set(st, "Ready", "False", "Still", "m", "t2");
    assert_string_equal(kobj_str(c, "lastTransitionTime"), "t1");
    assert_string_equal(kobj_str(c, "reason"), "Still");
    c = kobj_condition_set(st, "Ready", "True", "Up", "m", "t3");
    assert_string_equal(kobj_str(c, "lastTransitionTime"), "t3");
    assert_non_null(kobj_condition_set(st, "Other", "True", "r", "m", "t4"));
    assert_int_equal(cJSON_GetArraySize(kobj_get(st, "conditions")), 2);
    assert_ptr_equal(kobj_condition_find(st, "Ready"), cJSON_GetArrayItem(kobj_get(st, "conditions"), 0));
    kobj_condition_remove(st, "Ready");
    assert_null(kobj_condition_find(st, "Ready"));
    assert_non_null(kobj_condition_find(st, "Other"));
    cJSON_Delete(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_controller_ref),
        cmocka_unit_test(test_rv_cmp),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_dns1035_label),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_members_sorted),
        cmocka_unit_test(test_set_copy),
        cmocka_unit_test(test_controller_refs),
        cmocka_unit_test(test_finalizers),
        cmocka_unit_test(test_conditions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_sim_perf.c - the shortcuts taken for kubesim's throughput give the same results
 * as the general code they bypass: managedFields of a create (patch_record_managed_fields
 * with no old object) against the general path (an empty old object, which makes every
 * field new and resolves every path again); and the fieldsV1 text written straight from
 * the field set (patch_record_managed_fields_raw) against the printed tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json_equal.h"
#include "sim/patch.h"

/* A Pod with maps, keyed lists (containers, env, ports, volumes), nested keyed lists,
 * a set of primitives (finalizers) and an atomic list (command). */
static const char *const POD =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
    "\"labels\":{\"app\":\"a\",\"ray.io/cluster\":\"c\"},\"annotations\":{\"x\":\"y\"},"
    "\"finalizers\":[\"f/one\",\"f/two\"]},"
    "\"spec\":{\"restartPolicy\":\"Always\",\"containers\":[{\"name\":\"ray\",\"image\":\"i\","
    "\"command\":[\"a\",\"b\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\"}],"
    "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}],"
    "\"resources\":{\"limits\":{\"cpu\":\"1\"}},"
    "\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/m\"}]},{\"name\":\"side\",\"image\":\"j\"}],"
    "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"tolerations\":[{\"key\":\"k\"}]},"
    "\"status\":{\"phase\":\"Pending\"}}";

/* managedFields[0].fieldsV1 after recording obj_json as a create (old NULL) or against
 * an empty old object. Caller frees. */
static cJSON *record(const char *obj_json, bool empty_old)
{
    cJSON *obj = cJSON_Parse(obj_json), *old = empty_old ? cJSON_CreateObject() : NULL;
    assert_non_null(obj);
    assert_int_equal(patch_record_managed_fields(obj, old, "bench", "Update", "v1", NULL), 0);
    cJSON *mf = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "managedFields");
    assert_int_equal(cJSON_GetArraySize(mf), 1);
    cJSON *f = cJSON_DetachItemFromObjectCaseSensitive(cJSON_GetArrayItem(mf, 0), "fieldsV1");
    assert_non_null(f);
    cJSON_Delete(obj);
    cJSON_Delete(old);
    return f;
}

static void assert_same(const cJSON *a, const cJSON *b)
{
    if (!json_equal(a, b)) {
        char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
        print_error("create: %s\ngeneral: %s\n", x ? x : "", y ? y : "");
        free(x);
        free(y);
        fail();
    }
}

static void test_create_fields_match_general_path(void **state)
{
    (void)state;
    cJSON *fast = record(POD, false), *slow = record(POD, true);
    assert_same(fast, slow);
    /* and the set is the one the real server records for these shapes */
    char *txt = cJSON_PrintUnformatted(fast);
    assert_non_null(strstr(txt, "\"k:{\\\"name\\\":\\\"ray\\\"}\":{\".\":{}"));
    assert_non_null(strstr(txt, "\"k:{\\\"mountPath\\\":\\\"/m\\\"}\":{\".\":{}"));
    assert_non_null(strstr(txt, "\"v:\\\"f/one\\\"\":{}"));
    assert_non_null(strstr(txt, "\"f:command\":{}"));
    assert_non_null(strstr(txt, "\"f:ray.io/cluster\":{},\".\":{}"));
    assert_null(strstr(txt, "\"f:name\":{},\"f:namespace\""));   /* server-owned: skipped */
    free(txt);
    cJSON_Delete(fast);
    cJSON_Delete(slow);
}

/* A member name holding the path separator cannot be resolved again: the general path
 * drops it, and the create shortcut must not be taken for such an object. */
static void test_separator_in_name_takes_general_path(void **state)
{
    (void)state;
    const char *obj = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                      "\"data\":{\"a\\u001fb\":\"1\",\"ok\":\"2\"}}";
    cJSON *fast = record(obj, false), *slow = record(obj, true);
    assert_same(fast, slow);
    char *txt = cJSON_PrintUnformatted(fast);
    assert_non_null(strstr(txt, "\"f:ok\":{}"));
    assert_null(strstr(txt, "f:a\\u001fb"));
    free(txt);
    cJSON_Delete(fast);
    cJSON_Delete(slow);
}

/* fieldsV1 of manager "bench" as compact text: printed from the tree (raw false) or
 * the cJSON_Raw node's text (raw true). Caller frees. */
static char *fields_text(const char *obj_json, bool empty_old, bool raw)
{
    cJSON *obj = cJSON_Parse(obj_json), *old = empty_old ? cJSON_CreateObject() : NULL;
    assert_non_null(obj);
    assert_int_equal((raw ? patch_record_managed_fields_raw : patch_record_managed_fields)(
                         obj, old, "bench", "Update", "v1", NULL), 0);
    cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                         "managedFields"), 0), "fieldsV1");
    assert_true(raw ? cJSON_IsRaw(f) : cJSON_IsObject(f));
    char *txt = raw ? strdup(f->valuestring) : cJSON_PrintUnformatted(f);
    assert_non_null(txt);
    cJSON_Delete(obj);
    cJSON_Delete(old);
    return txt;
}

/* Same bytes as the tree, member order included, for the create shortcut and the
 * general path, with names that need escaping (quote, backslash, control bytes). */
static void test_raw_fieldsv1_text_matches_tree(void **state)
{
    (void)state;
    const char *esc = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\","
                      "\"labels\":{\"q\\\"b\\\\s\":\"1\",\"t\\tn\\n\\u0001\":\"2\"}},"
                      "\"data\":{\"z\":\"1\",\"a\":\"2\"}}";
    const char *objs[] = { POD, esc };
    for (size_t i = 0; i < 2; i++)
        for (int old = 0; old < 2; old++) {
            char *tree = fields_text(objs[i], old, false), *raw = fields_text(objs[i], old, true);
            assert_string_equal(raw, tree);
            free(tree);
            free(raw);
        }
    char *t = fields_text(esc, false, true);
    assert_non_null(strstr(t, "\"f:q\\\"b\\\\s\":{}"));
    assert_non_null(strstr(t, "\"f:t\\tn\\n\\u0001\":{}"));
    assert_non_null(strstr(t, "\"f:z\":{},\"f:a\":{}"));
    free(t);
    /* list element keys: escaped string members, numbers (ports are keyed by
     * containerPort in the SMP table) */
    t = fields_text("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                    "\"spec\":{\"containers\":[{\"name\":\"q\\\"b\\\\s\",\"ports\":"
                    "[{\"protocol\":\"UDP\",\"containerPort\":53}]}]}}", false, true);
    assert_non_null(strstr(t, "\"k:{\\\"name\\\":\\\"q\\\\\\\"b\\\\\\\\s\\\"}\":{"));
    assert_non_null(strstr(t, "\"k:{\\\"containerPort\\\":53}\":{"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_fieldsv1_text_matches_tree),
        cmocka_unit_test(test_create_fields_match_general_path),
        cmocka_unit_test(test_separator_in_name_takes_general_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_sim_perf.c - the shortcuts taken for kubesim's throughput give the same results
 * as the general code they bypass: managedFields of a create (patch_record_managed_fields
 * with no old object) against the general path (an empty old object, which makes every
 * field new and resolves every path again); the fieldsV1 text written straight from
 * the field set (patch_record_managed_fields_raw) against the printed tree; and a
 * create's fieldsV1 printed straight from the object (patch__fs_print_object_fieldsv1)
 * against the field set it replaces, on hand-made shapes and every KubeRay sample. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <errno.h>

#include "kobj/json_equal.h"
#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"
#include "kobj/yamljson.h"
#include "util/util.h"
#include "tests/unit/shared_fixture.h"

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


/* Direct print of obj against patch__fs_print_fieldsv1(patch__fs_from_object(obj)): the same bytes
 * when the direct print answers, else -EAGAIN. Returns the direct print's rc. */
static int direct_vs_set(const cJSON *obj, const char *smp_kind)
{
    struct fs_keys k = { smp_kind && patch_smp_kind_known(smp_kind) ? smp_kind : NULL, NULL };
    struct fs_set set = { 0 };
    struct buf a = { 0 }, b = { 0 };
    size_t n = 0;
    int rc = patch__fs_print_object_fieldsv1(obj, &k, &a, &n);
    assert_true(rc == 0 || rc == -EAGAIN);
    if (rc == 0) {
        assert_int_equal(patch__fs_from_object(obj, &k, &set), 0);
        assert_int_equal(n, set.n);
        if (set.n) {
            assert_int_equal(patch__fs_print_fieldsv1(&set, &b), 0);
            assert_int_equal(buf_append(&a, "", 1), 0);
            assert_int_equal(buf_append(&b, "", 1), 0);
            assert_string_equal(a.data, b.data);
        } else {
            assert_int_equal(a.len, 0);
        }
    }
    patch__fs_free(&set);
    buf_free(&a);
    buf_free(&b);
    return rc;
}

/* patch__fs_walker_resolve gives patch__fs_resolve's node for every path of a set, walked in set
 * order and backwards, in the object the set came from and in a different one (paths
 * missing there, keyed list elements in another order). */
static void test_walker_matches_resolve(void **state)
{
    static struct fs_walker w;
    const char *other =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"b\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"side\",\"image\":\"j\"},{\"name\":\"ray\","
        "\"env\":[{\"name\":\"B\"}],\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]}]},"
        "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";
    cJSON *a = cJSON_Parse(POD), *b = cJSON_Parse(other);
    struct fs_keys k = { "Pod", NULL };
    struct fs_set set = { 0 };
    size_t hits = 0;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(patch__fs_from_object(a, &k, &set), 0);
    assert_true(set.n > 20);
    for (int pass = 0; pass < 4; pass++) {
        const cJSON *obj = pass & 1 ? b : a;
        patch__fs_walker_init(&w, obj);
        for (size_t j = 0; j < set.n; j++) {
            const char *p = set.v[pass & 2 ? set.n - 1 - j : j].p;
            const cJSON *want = patch__fs_resolve(obj, p);
            assert_ptr_equal(patch__fs_walker_resolve(&w, p), want);
            hits += want != NULL;
        }
    }
    assert_true(hits > set.n * 2);   /* every path in a, some in b */
    patch__fs_free(&set);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static int direct_vs_set_text(const char *json, const char *smp_kind)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    int rc = direct_vs_set(o, smp_kind);
    cJSON_Delete(o);
    return rc;
}

static void test_direct_print_matches_set(void **state)
{
    (void)state;
    assert_int_equal(direct_vs_set_text(POD, "Pod"), 0);
    /* nothing owned below metadata (only server-owned fields): no node at all */
    assert_int_equal(direct_vs_set_text(
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
        "\"data\":{\"a\":\"1\",\"e\":{},\"n\":{\"m\":{}}}}", "ConfigMap"), 0);
    /* only apiVersion and kind: an empty set */
    assert_int_equal(direct_vs_set_text("{\"apiVersion\":\"v1\",\"kind\":\"X\"}", NULL), 0);
    /* an element without its key makes the list atomic; empty lists are leaves */
    assert_int_equal(direct_vs_set_text(
        "{\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\"},{\"image\":\"b\"}],"
        "\"volumes\":[],\"initContainers\":[{\"name\":\"i\",\"env\":[]}]}}", "Pod"), 0);
    /* no SMP table (a CR): every list atomic, maps keep "." */
    assert_int_equal(direct_vs_set_text(
        "{\"kind\":\"RayCluster\",\"spec\":{\"workerGroupSpecs\":[{\"groupName\":\"g\"}],"
        "\"rayStartParams\":{\"a\":\"b\"}}}", "RayCluster"), 0);
    /* what only the set handles: repeated member names, list keys, set values, FS_SEP */
    assert_int_equal(direct_vs_set_text("{\"kind\":\"ConfigMap\",\"data\":{\"a\":\"1\",\"a\":\"2\"}}",
                                        "ConfigMap"), -EAGAIN);
    assert_int_equal(direct_vs_set_text(
        "{\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"a\"}]}}", "Pod"),
        -EAGAIN);
    assert_int_equal(direct_vs_set_text(
        "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"x\",\"x\"]}}", "Pod"), -EAGAIN);
    assert_int_equal(direct_vs_set_text(
        "{\"kind\":\"ConfigMap\",\"data\":{\"a\\u001fb\":\"1\"}}", "ConfigMap"), -EAGAIN);
}

/* Every object of every KubeRay sample (CRs and the built-ins they carry). */
static void test_direct_print_matches_set_on_samples(void **state)
{
    (void)state;
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/kuberay/samples", shared_fixture_dir());
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("%s: %s", dir, strerror(errno));
    size_t objects = 0, direct = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t nl = strlen(de->d_name);
        if (nl < 6 || strcmp(de->d_name + nl - 5, ".yaml"))
            continue;
        char path[1000], err[256];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        struct buf text = { 0 };
        char chunk[8192];
        size_t got;
        while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
            assert_int_equal(buf_append(&text, chunk, got), 0);
        fclose(f);
        cJSON *docs = NULL, *doc;
        if (yamljson_parse_all(text.data ? text.data : "", text.len, &docs, err, sizeof(err)) == 0) {
            cJSON_ArrayForEach(doc, docs) {
                objects++;
                if (direct_vs_set(doc, cJSON_GetStringValue(
                        cJSON_GetObjectItemCaseSensitive(doc, "kind"))) == 0)
                    direct++;
            }
        }
        cJSON_Delete(docs);
        buf_free(&text);
    }
    closedir(d);
    assert_true(objects > 50);
    assert_int_equal(direct, objects);   /* no sample needs the set */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_fieldsv1_text_matches_tree),
        cmocka_unit_test(test_direct_print_matches_set),
        cmocka_unit_test(test_walker_matches_resolve),
        cmocka_unit_test(test_direct_print_matches_set_on_samples),
        cmocka_unit_test(test_create_fields_match_general_path),
        cmocka_unit_test(test_separator_in_name_takes_general_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

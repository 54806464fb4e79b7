/*
 * test_host_view.c - the reconcile context's cache view over a real segment:
 * a writer handle fills it, the view maps it read-only and answers get (with
 * trimmed objects), get_rv, list by controller owner uid and by ray.io/cluster
 * label (namespace-scoped), absent objects and types, and readiness (synced
 * flags of every listed type).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/tools/test_kind.h"
#include "cache/cache.h"
#include "reconcilers/host/host.h"
#include "util/util.h"

static void put(struct cache *w, int type, const char *json)
{
    assert_int_equal(cache_put_json(w, type, json, strlen(json), NULL), 0);
}

static void pod(struct cache *w, int type, const char *ns, const char *name, const char *cluster,
                const char *owner_uid)
{
    char js[1024];
    snprintf(js, sizeof(js),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
             "\"resourceVersion\":\"%zu\",\"labels\":{\"ray.io/cluster\":\"%s\"},"
             "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":\"%s\","
             "\"uid\":\"%s\",\"controller\":true}]}}",
             name, ns, strlen(name) + 100, cluster, cluster, owner_uid);
    put(w, type, js);
}

static size_t names_in(const cJSON *arr, const char *want)
{
    size_t n = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        const cJSON *m = cJSON_GetObjectItem(o, "metadata");
        if (strstr(want, cJSON_GetObjectItem(m, "name")->valuestring))
            n++;
    }
    return n;
}

static void test_view_reads(void **state)
{
    (void)state;
    char seg[64];
    snprintf(seg, sizeof(seg), "/rayop-test-host-view-%d", (int)getpid());
    struct cache_config cfg = { .name = seg, .bytes = 8u << 20, .max_objects = 1024 };
    struct cache *w;
    log_set_level(LOG_ERROR);
    (void)cache_unlink(seg);
    assert_int_equal(cache_writer_open(&cfg, &w), 0);
    int rc_t = cache_type_ensure(w, "ray.io/v1/rayclusters");
    int pod_t = cache_type_ensure(w, "v1/pods");
    assert_true(rc_t >= 0 && pod_t >= 0);
    put(w, rc_t, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"c1\","
                 "\"namespace\":\"ns1\",\"uid\":\"u-c1\",\"resourceVersion\":\"42\",\"generation\":3,"
                 "\"managedFields\":[{\"manager\":\"x\"}]},\"spec\":{\"rayVersion\":\"2.9\"}}");
    pod(w, pod_t, "ns1", "c1-head", "c1", "u-c1");
    pod(w, pod_t, "ns1", "c1-worker-a", "c1", "u-c1");
    pod(w, pod_t, "ns1", "c2-head", "c2", "u-c2");
    pod(w, pod_t, "ns2", "other-c1-head", "c1", "u-other");  /* same label, other namespace */
    assert_int_equal(cache_set_synced(w, rc_t, true), 0);

    struct host_view *v;
    assert_int_equal(host_view_open(seg, &v), 0);
    struct host_ctx ctx;
    assert_int_equal(host_ctx_init(&ctx, &host_test_kind, "ns1/c1", NULL, v), 0);

    cJSON *obj = NULL;
    assert_int_equal(host_get(&ctx, "ray.io/v1/rayclusters", "ns1", "c1", &obj), 0);
    const cJSON *m = cJSON_GetObjectItem(obj, "metadata");
    assert_string_equal(cJSON_GetObjectItem(m, "resourceVersion")->valuestring, "42");
    assert_int_equal(cJSON_GetObjectItem(m, "generation")->valueint, 3);
    assert_null(cJSON_GetObjectItem(m, "managedFields"));   /* trimmed by the cache */
    cJSON_Delete(obj);
    char rv[IPC_RV_MAX];
    assert_int_equal(host_get_rv(&ctx, "ray.io/v1/rayclusters", "ns1", "c1", rv), 0);
    assert_string_equal(rv, "42");
    assert_int_equal(host_get(&ctx, "ray.io/v1/rayclusters", "ns1", "nope", &obj), -ENOENT);
    assert_int_equal(host_get_rv(&ctx, "ray.io/v1/rayclusters", "ns1", "nope", rv), -ENOENT);
    assert_string_equal(rv, "");
    assert_int_equal(host_get(&ctx, "batch/v1/jobs", "ns1", "c1", &obj), -ENOENT);

    cJSON *arr = NULL;
    assert_int_equal(host_list_owner(&ctx, "v1/pods", "u-c1", &arr), 0);
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_int_equal(names_in(arr, "c1-head c1-worker-a"), 2);
    cJSON_Delete(arr);
    assert_int_equal(host_list_cluster(&ctx, "v1/pods", "ns1", "c1", &arr), 0);
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_int_equal(names_in(arr, "c1-head c1-worker-a"), 2);
    cJSON_Delete(arr);
    assert_int_equal(host_list_cluster(&ctx, "v1/pods", "ns1", "none", &arr), 0);
    assert_int_equal(cJSON_GetArraySize(arr), 0);
    cJSON_Delete(arr);
    assert_int_equal(host_list_owner(&ctx, "v1/pods", "", &arr), -EINVAL);

    /* readiness: every listed type registered and synced */
    const char *const only_rc[] = { "ray.io/v1/rayclusters", NULL };
    const char *const rc_and_pods[] = { "ray.io/v1/rayclusters", "v1/pods", NULL };
    const char *const unknown[] = { "v1/services", NULL };
    assert_int_equal(host_view_synced(v, only_rc), 1);
    assert_int_equal(host_view_synced(v, rc_and_pods), 0);
    assert_int_equal(host_view_synced(v, unknown), 0);
    assert_int_equal(cache_set_synced(w, pod_t, true), 0);
    assert_int_equal(host_view_synced(v, rc_and_pods), 1);
    assert_int_equal(host_view_synced(NULL, rc_and_pods), 0);

    /* a write after the view was opened is visible to it */
    pod(w, pod_t, "ns1", "c1-worker-b", "c1", "u-c1");
    assert_int_equal(host_list_owner(&ctx, "v1/pods", "u-c1", &arr), 0);
    assert_int_equal(cJSON_GetArraySize(arr), 3);
    cJSON_Delete(arr);

    host_view_close(v);
    cache_close(w);
    assert_int_equal(cache_unlink(seg), 0);
    assert_int_equal(host_view_open(seg, &v), -ENOENT);
    log_set_level(LOG_INFO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

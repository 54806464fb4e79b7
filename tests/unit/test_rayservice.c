/* test_rayservice.c - the RayService controller's pure parts (reconcilers/rayservice/):
 * the cluster hash against values computed by KubeRay's own Go code (json.Marshal of
 * rayv1.RayClusterSpec, SHA-1, base32hex), Quantity canonical forms, the Serve config
 * conversion and status parser, KubeRay's re-submit rule, the bounded memory,
 * validation messages, the initializing timeout, and the objects built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/gotypes.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/json.h"

/* ray-service.sample.yaml's rayClusterConfig, abridged to what the hash reads */
static const char *SPEC2 =
    "{\"rayVersion\":\"2.52.0\",\"suspend\":true,\"headGroupSpec\":{\"rayStartParams\":{\"num-cpus\":\"0\"},"
    "\"template\":{\"metadata\":{\"labels\":{\"a\":\"<b>&\"}},\"spec\":{\"tolerations\":[{\"key\":\"x\"}],"
    "\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",\"ports\":[{\"containerPort\":8000,"
    "\"name\":\"serve\"}],\"resources\":{\"limits\":{\"cpu\":\"1000m\",\"memory\":\"1024Mi\"},\"requests\":"
    "{\"cpu\":0.5,\"memory\":\"2000M\",\"nvidia.com/gpu\":1}},\"readinessProbe\":{\"httpGet\":{\"port\":8000,"
    "\"path\":\"/\"}},\"livenessProbe\":{\"tcpSocket\":{\"port\":\"serve\"}}}]}}},\"workerGroupSpecs\":"
    "[{\"groupName\":\"g\",\"replicas\":3,\"minReplicas\":1,\"maxReplicas\":5,\"scaleStrategy\":"
    "{\"workersToDelete\":[\"a\"]},\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\","
    "\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"1.5\",\"memory\":\"8Gi\"}}}]}}},{\"groupName\":\"h\",\"minReplicas\":0,\"maxReplicas\":1,"
    "\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"i\"}]}}}]}";

/* What Go's json.Marshal writes for SPEC2 after KubeRay mutes its fields. */
static const char *SPEC2_GO =
    "{\"headGroupSpec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"\\u003cb\\u003e\\u0026\"}},\"spec\":"
    "{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",\"ports\":[{\"name\":\"serve\","
    "\"containerPort\":8000}],\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":"
    "\"500m\",\"memory\":\"2G\",\"nvidia.com/gpu\":\"1\"}},\"livenessProbe\":{\"tcpSocket\":{\"port\":\"serve\"}},"
    "\"readinessProbe\":{\"httpGet\":{\"path\":\"/\",\"port\":8000}}}]}},\"rayStartParams\":{\"num-cpus\":\"0\"}},"
    "\"rayVersion\":\"2.52.0\",\"workerGroupSpecs\":[{\"groupName\":\"g\",\"minReplicas\":null,\"maxReplicas\":null,"
    "\"rayStartParams\":{},\"template\":{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"i\","
    "\"resources\":{\"limits\":{\"cpu\":\"1500m\",\"memory\":\"8Gi\"}}}]}},\"scaleStrategy\":{}},{\"groupName\":\"h\","
    "\"minReplicas\":null,\"maxReplicas\":null,\"rayStartParams\":{},\"template\":{\"metadata\":{},\"spec\":"
    "{\"containers\":[{\"name\":\"w\",\"image\":\"i\",\"resources\":{}}]}},\"scaleStrategy\":{}}]}";

static void test_hash_matches_kuberay(void **state)
{
    (void)state;
    cJSON *spec = cJSON_Parse(SPEC2);
    char h[33];
    assert_non_null(spec);
    char *text = rs_cluster_hash_text(spec, -1);
    assert_string_equal(text, SPEC2_GO);
    free(text);
    /* values printed by KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete */
    assert_int_equal(rs_cluster_hash(spec, -1, h), 0);
    assert_string_equal(h, "8M2IORU0VEJ4TVL440RFGO42RD81Q5D7");
    /* the partial comparison: only the first worker group */
    assert_int_equal(rs_cluster_hash(spec, 1, h), 0);
    assert_string_equal(h, "AS003TAUPDBUA2G81BSCVIECFCNHFUOF");
    /* replicas, min/max, workersToDelete, tolerations, suspend do not change it */
    cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "workerGroupSpecs"), 0);
    cJSON_ReplaceItemInObject(g, "replicas", cJSON_CreateNumber(7));
    cJSON_DeleteItemFromObject(spec, "suspend");
    assert_int_equal(rs_cluster_hash(spec, -1, h), 0);
    assert_string_equal(h, "8M2IORU0VEJ4TVL440RFGO42RD81Q5D7");
    /* the image does */
    const cJSON *c = json_get(g, "template.spec");
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem((cJSON *)c, "containers"), 0), "image",
                              cJSON_CreateString("j"));
    assert_int_equal(rs_cluster_hash(spec, -1, h), 0);
    assert_string_not_equal(h, "8M2IORU0VEJ4TVL440RFGO42RD81Q5D7");
    cJSON_Delete(spec);
}

static void test_quantity(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        { "2", "2" }, { "1000m", "1" }, { "0.5", "500m" }, { "500m", "500m" }, { "1000", "1k" },
        { "1024Mi", "1Gi" }, { "5Gi", "5Gi" }, { "8Gi", "8Gi" }, { "2000M", "2G" }, { "100M", "100M" },
        { "1.5", "1500m" }, { "0", "0" }, { "0m", "0" }, { "12e2", "1200" }, { "1e3", "1e3" },
        { "1536Mi", "1536Mi" }, { "100m", "100m" }, { "0.1", "100m" }, { "512Mi", "512Mi" },
    };
    char out[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gotypes_quantity(cases[i][0], out, sizeof(out));
        assert_string_equal(out, cases[i][1]);
    }
    gotypes_float(1e21, out, sizeof(out));
    assert_string_equal(out, "1e+21");
    gotypes_float(1e-7, out, sizeof(out));
    assert_string_equal(out, "1e-7");
    gotypes_float(0.1, out, sizeof(out));
    assert_string_equal(out, "0.1");
    gotypes_float(123456.5, out, sizeof(out));
    assert_string_equal(out, "123456.5");
}

static void test_serve_config(void **state)
{
    (void)state;
    char *out = NULL, err[256];
    const char *y = "applications:\n  - name: b\n    import_path: m.app\n    route_prefix: /x\n"
                    "    deployments:\n      - name: D\n        num_replicas: 2\n        ray_actor_options:\n"
                    "          num_cpus: 0.1\n";
    assert_int_equal(rs_serve_config_json(y, strlen(y), -1, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "{\"applications\":[{\"deployments\":[{\"name\":\"D\",\"num_replicas\":2,"
                             "\"ray_actor_options\":{\"num_cpus\":0.1}}],\"import_path\":\"m.app\","
                             "\"name\":\"b\",\"route_prefix\":\"/x\"}]}");
    free(out);
    assert_int_equal(rs_serve_config_json(y, strlen(y), 30, &out, err, sizeof(err)), 0);
    assert_non_null(strstr(out, "\"target_capacity\":30}"));
    free(out);
    assert_int_equal(rs_serve_config_json("", 0, -1, &out, err, sizeof(err)), 0);
    assert_string_equal(out, "{}");
    free(out);
    assert_int_equal(rs_serve_config_json("- a\n", 4, -1, &out, err, sizeof(err)), -EINVAL);
    assert_null(out);
    assert_int_equal(rs_serve_config_json("a: [", 4, -1, &out, err, sizeof(err)), -EINVAL);
}

/* Does the cluster run the config a PUT would send? Each application's deployed_app_config
 * against the body's (names aside), the same set, the same target_capacity; a body with
 * settings Ray does not report back is never taken as running. */
static void test_serve_runs_config(void **state)
{
    (void)state;
    const char *put = "{\"applications\":[{\"import_path\":\"m.app\",\"name\":\"app\","
                      "\"deployments\":[{\"name\":\"D\",\"user_config\":{\"v\":2}}]}]}";
    const char *got = "{\"applications\":{\"app\":{\"status\":\"RUNNING\",\"deployed_app_config\":"
                      "{\"name\":\"app\",\"deployments\":[{\"user_config\":{\"v\":2.0},\"name\":\"D\"}],"
                      "\"import_path\":\"m.app\"}}},\"target_capacity\":null}";
    assert_true(rs_serve_runs_config(got, strlen(got), put));
    assert_false(rs_serve_runs_config(got, strlen(got) - 1, put));   /* cut short */
    const char *v1 = "{\"applications\":[{\"import_path\":\"m.app\",\"name\":\"app\","
                     "\"deployments\":[{\"name\":\"D\",\"user_config\":{\"v\":1}}]}]}";
    assert_false(rs_serve_runs_config(got, strlen(got), v1));
    /* the default name: left out of the body, reported by Ray (or the other way round) */
    const char *dflt = "{\"applications\":[{\"import_path\":\"m.app\"}]}";
    const char *got_d = "{\"applications\":{\"default\":{\"deployed_app_config\":"
                        "{\"name\":\"default\",\"import_path\":\"m.app\"}}}}";
    assert_true(rs_serve_runs_config(got_d, strlen(got_d), dflt));
    /* one application more on the cluster, lost applications, another target_capacity */
    const char *two = "{\"applications\":{\"default\":{\"deployed_app_config\":{\"import_path\":"
                      "\"m.app\"}},\"b\":{\"deployed_app_config\":{\"import_path\":\"m.b\"}}}}";
    assert_false(rs_serve_runs_config(two, strlen(two), dflt));
    const char *none = "{\"applications\":{}}";
    assert_false(rs_serve_runs_config(none, strlen(none), dflt));
    const char *tc = "{\"applications\":[{\"import_path\":\"m.app\"}],\"target_capacity\":50}";
    assert_false(rs_serve_runs_config(got_d, strlen(got_d), tc));
    const char *got_tc = "{\"applications\":{\"default\":{\"deployed_app_config\":"
                         "{\"import_path\":\"m.app\"}}},\"target_capacity\":50}";
    assert_true(rs_serve_runs_config(got_tc, strlen(got_tc), tc));
    assert_false(rs_serve_runs_config(got_tc, strlen(got_tc), dflt));
    /* settings Ray reports in its own form: never matched */
    const char *http = "{\"applications\":[{\"import_path\":\"m.app\"}],\"http_options\":{\"port\":8000}}";
    assert_false(rs_serve_runs_config(got_d, strlen(got_d), http));
    /* an empty config, garbage, NULLs */
    const char *empty = "{\"applications\":[]}";
    assert_false(rs_serve_runs_config(none, strlen(none), empty));
    assert_false(rs_serve_runs_config("[1]", 3, dflt));
    assert_false(rs_serve_runs_config(got_d, strlen(got_d), "{"));
    assert_false(rs_serve_runs_config(NULL, 0, dflt));
    assert_false(rs_serve_runs_config(got_d, strlen(got_d), NULL));
}

static void test_serve_status(void **state)
{
    (void)state;
    cJSON *apps = NULL;
    bool ready = true;
    const char *b = "{\"applications\":{\"\":{\"status\":\"RUNNING\",\"message\":\"\",\"deployments\":"
                    "{\"D\":{\"status\":\"HEALTHY\",\"message\":\"ok\"}}},\"x\":{\"status\":\"RUNNING\"}}}";
    assert_int_equal(rs_serve_parse(b, strlen(b), &apps, &ready), 0);
    assert_true(ready);
    assert_string_equal(rs_str(apps, "default.status"), "RUNNING");
    assert_string_equal(rs_str(apps, "default.serveDeploymentStatuses.D.message"), "ok");
    assert_null(json_get(apps, "default.message"));   /* omitempty */
    cJSON_Delete(apps);
    b = "{\"applications\":{\"a\":{\"status\":\"DEPLOY_FAILED\",\"message\":\"boom\"}}}";
    assert_int_equal(rs_serve_parse(b, strlen(b), &apps, &ready), 0);
    assert_false(ready);
    cJSON_Delete(apps);
    b = "{\"applications\":{}}";
    assert_int_equal(rs_serve_parse(b, strlen(b), &apps, &ready), 0);
    assert_false(ready);   /* no application is not ready */
    cJSON_Delete(apps);
    b = "{\"applications\":{\"a\":{\"status\":3}}}";
    assert_int_equal(rs_serve_parse(b, strlen(b), &apps, &ready), -EPROTO);
    assert_null(apps);
    assert_int_equal(rs_serve_parse("[", 1, &apps, &ready), -EPROTO);
    b = "{\"applications\":[1]}";
    assert_int_equal(rs_serve_parse(b, strlen(b), &apps, &ready), -EPROTO);
}

static void test_need_submit_and_memo(void **state)
{
    (void)state;
    cJSON *apps = cJSON_Parse("{\"a\":{\"status\":\"RUNNING\"}}"), *none = cJSON_CreateObject();
    const char *why;
    assert_true(rs_serve_need_submit(NULL, "c", apps, &why));
    assert_string_equal(why, "Nothing has been cached for the cluster.");
    assert_true(rs_serve_need_submit("c", "c", none, &why));      /* head restarted */
    assert_true(rs_serve_need_submit("c", "d", apps, &why));
    assert_false(rs_serve_need_submit("c", "c", apps, &why));
    cJSON_Delete(apps);
    cJSON_Delete(none);

    rs_memo_clear();
    assert_int_equal(rs_memo_put("ns/a", "a-1", "cfg1"), 0);
    assert_int_equal(rs_memo_put("ns/a", "a-2", "cfg2"), 0);
    char *m = rs_memo_get("ns/a", "a-1");
    assert_string_equal(m, "cfg1");
    free(m);
    rs_memo_prune("ns/a", "a-2", NULL);
    assert_null(rs_memo_get("ns/a", "a-1"));
    m = rs_memo_get("ns/a", "a-2");
    assert_string_equal(m, "cfg2");
    free(m);
    /* bounded: the least recently used go first */
    char key[32];
    for (int i = 0; i < RS_MEMO_MAX + 50; i++) {
        snprintf(key, sizeof(key), "ns/s%d", i);
        assert_int_equal(rs_memo_put(key, "c", "x"), 0);
    }
    size_t n, bytes;
    rs_memo_stats(&n, &bytes);
    assert_int_equal(n, RS_MEMO_MAX);
    assert_null(rs_memo_get("ns/s0", "c"));
    m = rs_memo_get("ns/s2049", "c");
    assert_non_null(m);
    free(m);
    rs_memo_clear();
    rs_memo_stats(&n, &bytes);
    assert_int_equal(n, 0);
    assert_int_equal(bytes, 0);
}

static cJSON *rayservice(const char *name, const char *ann, const char *extra)
{
    char buf[8192];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayService\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"ns\",\"uid\":\"u-1\",\"labels\":{\"team\":\"a\"},\"annotations\":{%s}},"
             "\"spec\":{\"rayClusterConfig\":%s%s%s}}", name, ann, SPEC2, *extra ? "," : "", extra);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static void test_validation(void **state)
{
    (void)state;
    struct rs_invalid why;
    struct rs_gates g = { .incremental_upgrade = true };
    cJSON *rs = rayservice("svc", "", "");
    assert_int_equal(rs_validate(rs, &g, &why), 0);
    cJSON_Delete(rs);
    rs = rayservice("this-name-is-far-too-long-for-a-rayservice-xxxxxxx", "", "");
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_string_equal(why.reason, "InvalidRayServiceMetadata");
    assert_string_equal(why.message, "The RayService metadata is invalid: RayService name should be no "
                                     "more than 47 characters");
    cJSON_Delete(rs);
    rs = rayservice("svc", "\"ray.io/initializing-timeout\":\"-5m\"", "");
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_string_equal(why.message, "The RayService metadata is invalid: RayService annotations is invalid: "
                                     "annotation ray.io/initializing-timeout must be a positive duration, got: -5m");
    cJSON_Delete(rs);
    rs = rayservice("svc", "\"ray.io/initializing-timeout\":\"soon\"", "");
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_non_null(strstr(why.message, "has invalid format: soon"));
    cJSON_Delete(rs);
    rs = rayservice("svc", "", "\"upgradeStrategy\":{\"type\":\"Blue\"}");
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_string_equal(why.reason, "InvalidRayServiceSpec");
    assert_string_equal(why.message, "The RayService spec is invalid: Spec.UpgradeStrategy.Type value Blue is "
                                     "invalid, valid options are NewClusterWithIncrementalUpgrade, NewCluster, or None");
    cJSON_Delete(rs);
    rs = rayservice("svc", "", "\"rayClusterDeletionDelaySeconds\":-1");
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_string_equal(why.message, "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds "
                                     "should be a non-negative integer, got -1");
    cJSON_Delete(rs);
    rs = rayservice("svc", "", "\"upgradeStrategy\":{\"type\":\"NewClusterWithIncrementalUpgrade\"}");
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_string_equal(why.message, "The RayService spec is invalid: Ray Autoscaler is required for "
                                     "NewClusterWithIncrementalUpgrade");
    g.incremental_upgrade = false;   /* the gate off: the options are not checked */
    assert_int_equal(rs_validate(rs, &g, &why), 0);
    cJSON_Delete(rs);

    /* the cluster spec is validated with the process's RayCluster gates, as KubeRay's
     * ValidateRayClusterSpec reads them: spec.networkPolicy is refused with the gate off
     * (no gates given counts as off) and accepted with it on */
    rs = rayservice("svc", "", "");
    cJSON_AddItemToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(rs, "spec"), "rayClusterConfig"),
                          "networkPolicy", cJSON_Parse("{\"mode\":\"DenyAllIngress\"}"));
    assert_int_equal(rs_validate(rs, &g, &why), -EINVAL);
    assert_string_equal(why.message, "The RayService spec is invalid: spec.networkPolicy requires the "
                                     "RayClusterNetworkPolicy feature gate to be enabled");
    struct rc_gates cg = { .network_policy = true };
    g.cluster = &cg;
    assert_int_equal(rs_validate(rs, &g, &why), 0);
    g.cluster = NULL;
    cJSON_Delete(rs);

    rs = rayservice("svc", "\"ray.io/initializing-timeout\":\"1m30s\"", "");
    assert_int_equal(rs_initializing_timeout_ms(rs), 90000);
    cJSON_Delete(rs);
    rs = rayservice("svc", "\"ray.io/initializing-timeout\":\"45\"", "");
    assert_int_equal(rs_initializing_timeout_ms(rs), 45000);
    cJSON_Delete(rs);
    rs = rayservice("svc", "", "");
    assert_int_equal(rs_initializing_timeout_ms(rs), 0);
    cJSON_Delete(rs);
}

static void test_objects(void **state)
{
    (void)state;
    struct rs_gates g = { .incremental_upgrade = true };
    int err = 0;
    cJSON *rs = rayservice("svc", "\"x\":\"y\"", "");
    cJSON *c = rs_build_cluster(rs, "svc-abcde", &g, &err);
    assert_non_null(c);
    assert_string_equal(rs_str(c, "metadata.name"), "svc-abcde");
    const cJSON *ann = json_get(c, "metadata.annotations");
    assert_string_equal(rs_str(cJSON_GetObjectItem(ann, RS_ANN_HASH), ""), "8M2IORU0VEJ4TVL440RFGO42RD81Q5D7");
    assert_string_equal(rs_str(cJSON_GetObjectItem(ann, RS_ANN_NUM_WORKER_GROUPS), ""), "2");
    assert_string_equal(rs_str(cJSON_GetObjectItem(ann, "ray.io/kuberay-version"), ""), "v1.7.0");
    assert_string_equal(rs_str(cJSON_GetObjectItem(ann, "x"), ""), "y");
    const cJSON *lab = json_get(c, "metadata.labels");
    assert_string_equal(rs_str(cJSON_GetObjectItem(lab, "ray.io/originated-from-crd"), ""), "RayService");
    assert_string_equal(rs_str(cJSON_GetObjectItem(lab, "ray.io/originated-from-cr-name"), ""), "svc");
    assert_string_equal(rs_str(cJSON_GetObjectItem(lab, "team"), ""), "a");
    const cJSON *own = cJSON_GetArrayItem(json_get(c, "metadata.ownerReferences"), 0);
    assert_string_equal(rs_str(own, "kind"), "RayService");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(own, "controller")));

    cJSON *svc = rs_build_serve_service(rs, c, false, &g, &err);
    assert_non_null(svc);
    assert_string_equal(rs_str(svc, "metadata.name"), "svc-serve-svc");
    assert_string_equal(rs_str(cJSON_GetObjectItem(json_get(svc, "spec.selector"), "ray.io/cluster"), ""), "svc-abcde");
    assert_string_equal(rs_str(cJSON_GetObjectItem(json_get(svc, "spec.selector"), "ray.io/serve"), ""), "true");
    const cJSON *port = cJSON_GetArrayItem(json_get(svc, "spec.ports"), 0);
    assert_string_equal(rs_str(port, "name"), "serve");
    assert_int_equal(cJSON_GetObjectItem(port, "port")->valueint, 8000);
    cJSON_Delete(svc);
    svc = rs_build_serve_service(rs, c, true, &g, &err);
    assert_string_equal(rs_str(svc, "metadata.name"), "svc-abcde-serve-svc");
    assert_string_equal(rs_str(cJSON_GetArrayItem(json_get(svc, "metadata.ownerReferences"), 0), "kind"),
                        "RayCluster");
    cJSON_Delete(svc);
    cJSON *route = rs_build_httproute(rs, c, 70, c, 30, &err);
    const cJSON *refs = json_get(cJSON_GetArrayItem(json_get(route, "spec.rules"), 0), "backendRefs");
    assert_int_equal(cJSON_GetArraySize(refs), 2);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(refs, 1), "weight")->valueint, 30);
    cJSON_Delete(route);
    cJSON_Delete(c);
    cJSON_Delete(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_matches_kuberay),
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_serve_config),
        cmocka_unit_test(test_serve_status),
        cmocka_unit_test(test_serve_runs_config),
        cmocka_unit_test(test_need_submit_and_memo),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_rc_build.c - the RayCluster object builders (reconcilers/raycluster/build.h)
 * against KubeRay v1.7's behaviour: KubeRay's own samples, defaulted by the real
 * CRD schema, turned into head/worker Pods, Services, RBAC and the Redis cleanup
 * Job, compared field by field or against fixtures written from KubeRay's
 * pod.go / service.go / rbac.go (tests/unit/fixtures/raycluster/).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcilers/raycluster/build.h"
#include "tests/unit/rc_test_lib.h"

/* KubeRay's wait-gcs-ready loop (DefaultWorkerPodTemplate), tabs and all. */
static char *wait_gcs_script(const char *addr)
{
    const char *lines[] = {
        "",
        "\t\t\t\t\tSECONDS=0",
        "\t\t\t\t\twhile true; do",
        "\t\t\t\t\t\tif (( SECONDS <= 120 )); then",
        "\t\t\t\t\t\t\tif ray health-check --address @ > /dev/null 2>&1; then",
        "\t\t\t\t\t\t\t\techo \"GCS is ready.\"",
        "\t\t\t\t\t\t\t\tbreak",
        "\t\t\t\t\t\t\tfi",
        "\t\t\t\t\t\t\techo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"",
        "\t\t\t\t\t\telse",
        "\t\t\t\t\t\t\tif ray health-check --address @; then",
        "\t\t\t\t\t\t\t\techo \"GCS is ready. Any error messages above can be safely ignored.\"",
        "\t\t\t\t\t\t\t\tbreak",
        "\t\t\t\t\t\t\tfi",
        "\t\t\t\t\t\t\techo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready. For "
        "troubleshooting, refer to the FAQ at "
        "https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html.\"",
        "\t\t\t\t\t\tfi",
        "\t\t\t\t\t\tsleep 5",
        "\t\t\t\t\tdone",
        "\t\t\t\t",
    };
    size_t cap = 4096, w = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        for (const char *p = lines[i]; *p; p++) {
            if (*p == '@')
                w += (size_t)snprintf(out + w, cap - w, "%s", addr);
            else
                out[w++] = *p;
        }
        if (i + 1 < sizeof(lines) / sizeof(lines[0]))
            out[w++] = '\n';
    }
    out[w] = '\0';
    return out;
}

/* Replaces a string placeholder anywhere in j. */
static void fill(cJSON *j, const char *placeholder, const char *value)
{
    cJSON *c;
    for (c = j ? j->child : NULL; c; c = c->next) {
        if (cJSON_IsString(c) && !strcmp(c->valuestring, placeholder))
            cJSON_SetValuestring(c, value);
        else
            fill(c, placeholder, value);
    }
}

static void test_names(void **state)
{
    (void)state;
    struct rc_build_opts o;
    char buf[300];
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    rc_build_opts_default(&o);
    assert_int_equal(rc_head_service_name(rc, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "raycluster-kuberay-head-svc");
    assert_int_equal(rc_headless_service_name(rc, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "raycluster-kuberay-headless");
    assert_int_equal(rc_serve_service_name(rc, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "raycluster-kuberay-serve-svc");
    assert_int_equal(rc_head_service_fqdn(rc, &o, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "raycluster-kuberay-head-svc.default.svc.cluster.local");
    snprintf(o.cluster_domain, sizeof(o.cluster_domain), "corp.example");
    assert_int_equal(rc_head_service_fqdn(rc, &o, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "raycluster-kuberay-head-svc.default.svc.corp.example");
    assert_int_equal(rc_head_service_name(rc, buf, 10), -ENAMETOOLONG);
    assert_int_equal(rc_dashboard_port(rc), 8265);
    assert_int_equal(rc_head_port(rc), 6379);
    cJSON_Delete(rc);

    rc = rct_sample("ray-cluster.custom-head-service.yaml");
    assert_int_equal(rc_head_service_name(rc, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "custom-ray-head-service-name");
    cJSON_Delete(rc);
}

static void test_sample_head_pod(void **state)
{
    (void)state;
    int err = 0;
    char hash[40];
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    cJSON *pod = rc_build_head_pod(rc, NULL, &err), *want = rct_fixture("sample-head-pod.json");
    assert_non_null(pod);
    assert_int_equal(rc_spec_hash(rc, hash, sizeof(hash)), 0);
    assert_int_equal(strlen(hash), 32);
    fill(want, "@HASH@", hash);
    rct_assert_json(pod, want, "head Pod of ray-cluster.sample.yaml");
    cJSON_Delete(want);
    cJSON_Delete(pod);
    cJSON_Delete(rc);
}

static void test_sample_worker_pod(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    cJSON *group = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "spec"),
                                                          "workerGroupSpecs"), 0);
    cJSON *pod = rc_build_worker_pod(rc, group, NULL, 0, 0, NULL, &err);
    cJSON *want = rct_fixture("sample-worker-pod.json");
    char *script = wait_gcs_script("raycluster-kuberay-head-svc.default.svc.cluster.local:6379");
    assert_non_null(pod);
    fill(want, "@WAIT_GCS@", script);
    rct_assert_json(pod, want, "worker Pod of ray-cluster.sample.yaml");
    free(script);
    cJSON_Delete(want);
    cJSON_Delete(pod);

    /* ENABLE_INIT_CONTAINER_INJECTION=false: no wait-gcs-ready. */
    struct rc_build_opts o;
    rc_build_opts_default(&o);
    o.enable_init_container_injection = false;
    pod = rc_build_worker_pod(rc, group, NULL, 3, 0, &o, &err);
    assert_non_null(pod);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "initContainers"));
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
                            pod, "metadata"), "labels"), "ray.io/worker-group-replica-index")), "3");
    cJSON_Delete(pod);
    cJSON_Delete(rc);
}

static void test_sample_head_service(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    cJSON *svc = rc_build_head_service(rc, NULL, &err), *want = rct_fixture("sample-head-svc.json");
    assert_non_null(svc);
    rct_assert_json(svc, want, "head Service of ray-cluster.sample.yaml");
    cJSON_Delete(svc);
    /* Not asked for: no serve Service; no multi-host group: no headless Service. */
    err = 0;
    assert_null(rc_build_serve_service(rc, NULL, &err));
    assert_int_equal(err, 0);
    assert_null(rc_build_headless_service(rc, NULL, &err));
    assert_int_equal(err, 0);
    /* ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true: a normal ClusterIP Service. */
    struct rc_build_opts o;
    rc_build_opts_default(&o);
    o.enable_head_cluster_ip_service = true;
    svc = rc_build_head_service(rc, &o, &err);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "spec"), "clusterIP"));
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "spec"), "publishNotReadyAddresses"));
    cJSON_Delete(svc);
    cJSON_Delete(want);
    cJSON_Delete(rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_sample_head_pod),
        cmocka_unit_test(test_sample_worker_pod),
        cmocka_unit_test(test_sample_head_service),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    schema_free(rct_schema);
    return r;
}

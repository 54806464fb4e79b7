/*
 * test_rc_validate.c - rc_validate (KubeRay's ValidateRayClusterMetadata/Spec/
 * UpgradeOptions/Status and the admission rules) rule by rule, with KubeRay's
 * reasons and messages; and every RayCluster in KubeRay's samples folder
 * (including the clusters embedded in RayJob and RayService samples) either
 * validating and building every object without error, or being rejected exactly
 * where KubeRay v1.7 with its default feature gates rejects it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "reconcilers/raycluster/build.h"
#include "tests/unit/rc_test_lib.h"

/* A valid base cluster to break one rule at a time. */
static const char *base_yaml =
    "apiVersion: ray.io/v1\n"
    "kind: RayCluster\n"
    "metadata: {name: rc, namespace: ns}\n"
    "spec:\n"
    "  rayVersion: '2.52.0'\n"
    "  headGroupSpec:\n"
    "    rayStartParams: {}\n"
    "    template:\n"
    "      spec:\n"
    "        containers:\n"
    "        - name: ray-head\n"
    "          image: rayproject/ray:2.52.0\n"
    "  workerGroupSpecs:\n"
    "  - groupName: g1\n"
    "    replicas: 1\n"
    "    minReplicas: 0\n"
    "    maxReplicas: 3\n"
    "    rayStartParams: {}\n"
    "    template:\n"
    "      spec:\n"
    "        containers:\n"
    "        - name: ray-worker\n"
    "          image: rayproject/ray:2.52.0\n";

static cJSON *base(void)
{
    char err[256];
    cJSON *rc;
    if (yamljson_parse_one(base_yaml, strlen(base_yaml), &rc, err, sizeof(err)))
        fail_msg("%s", err);
    return rc;
}

/* Applies a JSON merge-style edit: path "a.b.0.c" set to value (parsed JSON), or
 * removed when value is NULL. */
static void edit(cJSON *o, const char *path, const char *value)
{
    char buf[256], *save = NULL, *tok, *next;
    cJSON *cur = o;
    snprintf(buf, sizeof(buf), "%s", path);
    tok = strtok_r(buf, ".", &save);
    while (tok) {
        next = strtok_r(NULL, ".", &save);
        bool idx = tok[0] >= '0' && tok[0] <= '9';
        if (!next) {
            cJSON *v = value ? cJSON_Parse(value) : NULL;
            if (value && !v)
                fail_msg("bad JSON %s", value);
            if (idx) {
                if (v && atoi(tok) >= cJSON_GetArraySize(cur))
                    cJSON_AddItemToArray(cur, v);
                else if (v)
                    cJSON_ReplaceItemInArray(cur, atoi(tok), v);
                else
                    cJSON_DeleteItemFromArray(cur, atoi(tok));
            } else {
                cJSON_DeleteItemFromObjectCaseSensitive(cur, tok);
                if (v)
                    cJSON_AddItemToObject(cur, tok, v);
            }
            return;
        }
        cJSON *child = idx ? cJSON_GetArrayItem(cur, atoi(tok))
                           : cJSON_GetObjectItemCaseSensitive(cur, tok);
        if (!child) {
            child = (next[0] >= '0' && next[0] <= '9') ? cJSON_CreateArray() : cJSON_CreateObject();
            cJSON_AddItemToObject(cur, tok, child);
        }
        cur = child;
        tok = next;
    }
}

struct rule {
    const char *path, *value;   /* one edit ... */
    const char *path2, *value2; /* ... and optionally a second */
    const char *reason, *message;
};

static const struct rule rules[] = {
    /* metadata */
    { "metadata.name", "\"a234567890123456789012345678901234567890123456789012345\"", NULL, NULL,
      "InvalidRayClusterMetadata",
      "The RayCluster metadata is invalid ns/a234567890123456789012345678901234567890123456789012345: "
      "RayCluster name should be no more than 53 characters" },
    { "metadata.name", "\"1rc\"", NULL, NULL, "InvalidRayClusterMetadata",
      "The RayCluster metadata is invalid ns/1rc: RayCluster name should be a valid DNS1035 label: "
      "[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
      "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
      "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]" },
    /* spec: groups */
    { "spec.headGroupSpec.template.spec.containers", "[]", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: headGroupSpec should have at least one container" },
    { "spec.headGroupSpec", NULL, NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: spec.headGroupSpec: Required value" },
    { "spec.workerGroupSpecs.0.template.spec.containers", "[]", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: workerGroupSpec should have at least one container" },
    { "spec.workerGroupSpecs.0.minReplicas", NULL, NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 must set both minReplicas and "
      "maxReplicas when autoscaling is disabled" },
    { "spec.workerGroupSpecs.0.minReplicas", "-1", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 has negative minReplicas -1" },
    { "spec.workerGroupSpecs.0.maxReplicas", "-2", "spec.workerGroupSpecs.0.minReplicas", "-3",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 has negative minReplicas -3" },
    { "spec.workerGroupSpecs.0.maxReplicas", "-2", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 has negative maxReplicas -2" },
    { "spec.workerGroupSpecs.0.minReplicas", "5", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 has minReplicas 5 greater than "
      "maxReplicas 3" },
    { "spec.workerGroupSpecs.0.numOfHosts", "0", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 has numOfHosts 0; it must be at least 1" },
    { "spec.workerGroupSpecs.1", "{\"groupName\":\"g1\",\"minReplicas\":0,\"maxReplicas\":1,"
      "\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"i\"}]}}}", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: spec.workerGroupSpecs[1]: Invalid value: \"g1\": "
      "worker group names must be unique" },
    { "spec.workerGroupSpecs.0.groupName", NULL, NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: spec.workerGroupSpecs[0].groupName: Required value" },
    /* resources / labels */
    { "spec.headGroupSpec.rayStartParams.num-cpus", "\"1\"", "spec.headGroupSpec.resources",
      "{\"CPU\":\"1\"}", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: resource fields should not be set in both "
      "rayStartParams and Resources for Head group; please use only one" },
    { "spec.workerGroupSpecs.0.rayStartParams.resources", "\"'{\\\"A\\\":1}'\"",
      "spec.workerGroupSpecs.0.resources", "{\"A\":\"1\"}", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: resource fields should not be set in both "
      "rayStartParams and Resources for g1 group; please use only one" },
    { "spec.headGroupSpec.rayStartParams.labels", "\"a=b\"", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: rayStartParams['labels'] is not supported for Head "
      "group; please use the top-level Labels field instead" },
    { "spec.workerGroupSpecs.0.labels", "{\"ok\":\"-bad\"}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: invalid label value for key 'ok' in g1 group: "
      "'-bad', error: a valid label must be an empty string or consist of alphanumeric "
      "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
      "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')" },
    { "spec.headGroupSpec.labels", "{\"/x\":\"v\"}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: invalid label key for Head group: '/x', error: "
      "prefix part must be non-empty" },
    /* idle timeout / priority */
    { "spec.workerGroupSpecs.0.idleTimeoutSeconds", "-1", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1: idleTimeoutSeconds must be "
      "non-negative, got -1" },
    { "spec.workerGroupSpecs.0.idleTimeoutSeconds", "30", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1: idleTimeoutSeconds is set, but "
      "autoscaler v2 is not enabled. Please set .spec.autoscalerOptions.version to 'v2' (or set "
      "RAY_enable_autoscaler_v2 environment variable to 'true' in the head pod if using KubeRay < "
      "1.4.0)" },
    { "spec.workerGroupSpecs.0.priority", "2", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1: priority is set, but minimum Ray "
      "version is 2.56.0, got 2.52.0" },
    { "spec.workerGroupSpecs.0.priority", "2", "spec.rayVersion", "\"2.56.0\"",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1: priority is set to 2, but "
      "autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled" },
    /* GCS FT */
    { "metadata.annotations", "{\"ray.io/ft-enabled\":\"true\"}", "spec.gcsFaultToleranceOptions",
      "{\"redisAddress\":\"r:6379\"}", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: ray.io/ft-enabled annotation and "
      "GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to "
      "configure GCS fault tolerance" },
    { "spec.headGroupSpec.template.spec.containers.0.env",
      "[{\"name\":\"RAY_REDIS_ADDRESS\",\"value\":\"r:6379\"}]", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: RAY_REDIS_ADDRESS is set which implicitly enables GCS "
      "fault tolerance, but GcsFaultToleranceOptions is not set. Please set "
      "GcsFaultToleranceOptions to enable GCS fault tolerance" },
    { "spec.gcsFaultToleranceOptions", "{\"redisAddress\":\"r:6379\"}",
      "spec.headGroupSpec.rayStartParams.redis-password", "\"pw\"", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: cannot set `redis-password` in rayStartParams when "
      "GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead" },
    { "spec.gcsFaultToleranceOptions", "{\"redisAddress\":\"r:6379\"}",
      "spec.headGroupSpec.template.spec.containers.0.env",
      "[{\"name\":\"REDIS_PASSWORD\",\"value\":\"x\"}]", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: cannot set `REDIS_PASSWORD` env var in head Pod when "
      "GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead" },
    { "spec.gcsFaultToleranceOptions", "{\"redisAddress\":\"r:6379\"}", "metadata.annotations",
      "{\"ray.io/external-storage-namespace\":\"x\"}", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: cannot set `ray.io/external-storage-namespace` "
      "annotation when GcsFaultToleranceOptions is enabled - use "
      "GcsFaultToleranceOptions.ExternalStorageNamespace instead" },
    { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\"}", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: the embedded RocksDB GCS fault tolerance backend "
      "(GcsFaultToleranceOptions.Backend: 'rocksdb') requires the GCSFaultToleranceEmbeddedStorage "
      "feature gate to be enabled" },
    { "spec.headGroupSpec.rayStartParams.redis-username", "\"u\"", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: cannot set redis username in rayStartParams or "
      "environment variables - use GcsFaultToleranceOptions.RedisUsername instead" },
    /* autoscaler */
    { "spec.headGroupSpec.template.spec.containers.0.env",
      "[{\"name\":\"RAY_enable_autoscaler_v2\",\"value\":\"1\"}]", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: environment variable RAY_enable_autoscaler_v2 cannot "
      "be set to '1' when enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: "
      "true to use autoscaler v2" },
    { "spec.enableInTreeAutoscaling", "true", "spec.workerGroupSpecs.0.suspend", "true",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: worker group g1 cannot be suspended with Autoscaler "
      "enabled" },
    { "spec.enableInTreeAutoscaling", "true", "spec.autoscalerOptions",
      "{\"version\":\"v2\",\"env\":[{\"name\":\"KUBERAY_GEN_AUTOSCALER_START_CMD\",\"value\":\"x\"}]}",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: autoscalerOptions.env must not contain "
      "KUBERAY_GEN_AUTOSCALER_START_CMD: it is managed by KubeRay and injected automatically into "
      "the autoscaler container" },
    { "spec.enableInTreeAutoscaling", "true", "spec.autoscalerOptions",
      "{\"version\":\"v2\",\"idleTimeoutSeconds\":-5}", "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: autoscalerOptions.idleTimeoutSeconds must be "
      "non-negative, got -5" },
    { "spec.autoscalerOptions", "{\"version\":\"v2\"}",
      "spec.headGroupSpec.template.spec.restartPolicy", "\"Always\"", NULL, NULL },
    /* auth and gated features */
    { "spec.authOptions", "{\"mode\":\"token\"}", "spec.rayVersion", "\"2.51.0\"",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: authOptions.mode is 'token' but minimum Ray version "
      "is 2.52.0, got 2.51.0" },
    { "spec.authOptions", "{\"mode\":\"token\"}", "spec.rayVersion", NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: authOptions.mode is 'token' but RayVersion was not "
      "specified. Ray version 2.52.0 or later is required" },
    { "spec.authOptions", "{\"mode\":\"token\"}", "spec.rayVersion", "\"latest\"",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: authOptions.mode is 'token' but RayVersion format is "
      "invalid: latest, could not parse \"latest\" as version" },
    { "spec.authOptions", "{\"mode\":\"token\",\"enableK8sTokenAuth\":true}", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: authOptions.enableK8sTokenAuth is enabled but minimum "
      "Ray version is 2.55.0, got 2.52.0" },
    { "spec.authOptions", "{\"enableK8sTokenAuth\":true}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: authOptions.enableK8sTokenAuth is enabled but "
      "authOptions.mode not set to 'token'" },
    { "spec.networkPolicy", "{\"mode\":\"DenyAll\"}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: spec.networkPolicy requires the "
      "RayClusterNetworkPolicy feature gate to be enabled" },
    { "spec.tlsOptions", "{\"enabled\":true}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: spec.tlsOptions requires the RayClusterMTLS feature "
      "gate to be enabled" },
    { "spec.historyServerOptions", "{}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: RayClusterHistoryServer feature gate is not enabled" },
    { "spec.managedBy", "\"someone-else\"", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: spec.managedBy: Invalid value: \"someone-else\": the "
      "managedBy field value must be either 'ray.io/kuberay-operator' or "
      "'kueue.x-k8s.io/multikueue'" },
    { "spec.headGroupSpec.labels", "{\"Example.com/x\":\"v\"}", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: invalid label key for Head group: 'Example.com/x', "
      "error: prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
      "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')" },
    { "spec.headGroupSpec.labels",
      "{\"a234567890123456789012345678901234567890123456789012345678901234\":\"v\"}", NULL, NULL,
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: invalid label key for Head group: "
      "'a234567890123456789012345678901234567890123456789012345678901234', error: name part must "
      "be no more than 63 characters" },
    { "spec.authOptions", "{\"mode\":\"token\"}", "spec.rayVersion", "\"2\"",
      "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: authOptions.mode is 'token' but RayVersion format is "
      "invalid: 2, could not parse \"2\" as version" },
    { "spec.headGroupSpec.labels", "{\"a/\":\"v\"}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster spec is invalid ns/rc: invalid label key for Head group: 'a/', error: name "
      "part must be non-empty; invalid label key for Head group: 'a/', error: name part must "
      "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')" },
    /* upgrade strategy and status */
    { "spec.upgradeStrategy", "{\"type\":\"Rolling\"}", NULL, NULL, "InvalidRayClusterSpec",
      "The RayCluster UpgradeStrategy is invalid ns/rc: The RayCluster spec is invalid: "
      "Spec.UpgradeStrategy.Type value Rolling is invalid, valid options are Recreate or None" },
    { "spec.upgradeStrategy", "{\"type\":\"Recreate\"}", "metadata.labels",
      "{\"ray.io/originated-from-crd\":\"RayJob\"}", "InvalidRayClusterSpec",
      "The RayCluster UpgradeStrategy is invalid ns/rc: upgradeStrategy cannot be set when "
      "RayCluster is created by RayJob" },
    { "status.conditions", "[{\"type\":\"RayClusterSuspending\",\"status\":\"True\"},"
      "{\"type\":\"RayClusterSuspended\",\"status\":\"True\"}]", NULL, NULL,
      "InvalidRayClusterStatus",
      "The RayCluster status is invalid ns/rc, invalid RayCluster State: "
      "rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both "
      "true" },
};

static void test_rules(void **state)
{
    (void)state;
    struct rc_invalid why;
    cJSON *rc = base();
    assert_int_equal(rc_validate(rc, NULL, &why), 0);
    cJSON_Delete(rc);
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        const struct rule *r = &rules[i];
        rc = base();
        edit(rc, r->path, r->value);
        if (r->path2)
            edit(rc, r->path2, r->value2);
        memset(&why, 0, sizeof(why));
        int ret = rc_validate(rc, NULL, &why);
        if (!r->reason) {
            /* restartPolicy only matters once autoscaling is on */
            assert_int_equal(ret, 0);
            edit(rc, "spec.enableInTreeAutoscaling", "true");
            assert_int_equal(rc_validate(rc, NULL, &why), -EINVAL);
            assert_string_equal(why.message,
                                "The RayCluster spec is invalid ns/rc: restartPolicy for head Pod "
                                "should be Never or unset when using autoscaler V2");
            cJSON_Delete(rc);
            continue;
        }
        if (ret != -EINVAL)
            fail_msg("rule %zu (%s) not rejected", i, r->path);
        assert_string_equal(why.reason, r->reason);
        assert_string_equal(why.message, r->message);
        cJSON_Delete(rc);
    }
}

/* Edits that must keep the base cluster valid. */
static const struct rule accepted[] = {
    { "spec.headGroupSpec.labels", "{\"example.com/My_Name\":\"v_1.x\",\"k\":\"\"}", NULL, NULL,
      NULL, NULL },
    { "spec.enableInTreeAutoscaling", "true", "spec.autoscalerOptions",
      "{\"version\":\"v2\",\"idleTimeoutSeconds\":0}", NULL, NULL },
    { "spec.enableInTreeAutoscaling", "true", "spec.headGroupSpec.template.spec.containers.0.env",
      "[{\"name\":\"RAY_enable_autoscaler_v2\",\"value\":\"true\"}]", NULL, NULL },
    { "spec.authOptions", "{\"mode\":\"token\"}", "spec.rayVersion", "\"2.52\"", NULL, NULL },
    { "spec.authOptions", "{\"mode\":\"token\"}", "spec.rayVersion", "\"v2.60.1-rc1\"", NULL,
      NULL },
    { "spec.upgradeStrategy", "{\"type\":\"Recreate\"}", NULL, NULL, NULL, NULL },
    { "spec.managedBy", "\"kueue.x-k8s.io/multikueue\"", NULL, NULL, NULL, NULL },
    { "spec.workerGroupSpecs.0.minReplicas", NULL, "spec.enableInTreeAutoscaling", "true", NULL,
      NULL },
    { "spec.gcsFaultToleranceOptions", "{\"redisAddress\":\"r:6379\",\"backend\":\"redis\"}",
      NULL, NULL, NULL, NULL },
    { "metadata.annotations", "{\"ray.io/ft-enabled\":\"true\"}",
      "spec.headGroupSpec.template.spec.containers.0.env",
      "[{\"name\":\"RAY_REDIS_ADDRESS\",\"value\":\"r:6379\"}]", NULL, NULL },
};

static void test_accepted(void **state)
{
    (void)state;
    struct rc_invalid why;
    for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
        cJSON *rc = base();
        edit(rc, accepted[i].path, accepted[i].value);
        if (accepted[i].path2)
            edit(rc, accepted[i].path2, accepted[i].value2);
        if (rc_validate(rc, NULL, &why) != 0)
            fail_msg("case %zu (%s) rejected: %s", i, accepted[i].path, why.message);
        cJSON_Delete(rc);
    }
}

static void test_managed_by_and_warning(void **state)
{
    (void)state;
    struct rc_invalid why;
    cJSON *rc = base();
    assert_false(rc_managed_elsewhere(rc));
    edit(rc, "spec.managedBy", "\"ray.io/kuberay-operator\"");
    assert_false(rc_managed_elsewhere(rc));
    edit(rc, "spec.managedBy", "\"kueue.x-k8s.io/multikueue\"");
    assert_true(rc_managed_elsewhere(rc));
    assert_int_equal(rc_validate(rc, NULL, &why), 0);
    cJSON_Delete(rc);

    rc = base();
    assert_int_equal(rc_validate_warning(rc, &why), 0);
    edit(rc, "spec.enableInTreeAutoscaling", "true");
    edit(rc, "spec.autoscalerOptions", "{\"version\":\"v1\"}");
    edit(rc, "spec.workerGroupSpecs.0.template.spec.restartPolicy", "\"Always\"");
    assert_int_equal(rc_validate(rc, NULL, &why), 0);
    assert_int_equal(rc_validate_warning(rc, &why), 1);
    assert_string_equal(why.reason, "InvalidRayClusterSpec");
    assert_string_equal(why.message, "RayCluster spec warning ns/rc: restartPolicy for worker "
                                     "groups [g1] should be Never or unset when using autoscaler V1");
    cJSON_Delete(rc);
}

/* With its gate off, a gated field is rejected with KubeRay's message; with it on, the
 * feature's own rules apply; the gate of one feature does not let another through. */
static void test_gates(void **state)
{
    (void)state;
    static const struct {
        const char *path, *value, *gate_off_fragment, *gate_on_fragment;
        size_t gate;   /* which field of struct rc_gates */
    } cases[] = {
        { "spec.networkPolicy", "{\"mode\":\"DenyAllEgress\",\"head\":{\"ingressRules\":[{}]}}",
          "requires the RayClusterNetworkPolicy feature gate to be enabled",
          "networkPolicy.head.ingressRules cannot be set when mode is \"DenyAllEgress\" (ingress "
          "is not restricted)",   /* built: its own rules */
          offsetof(struct rc_gates, network_policy) },
        { "spec.tlsOptions", "{\"enabled\":true}",
          "requires the RayClusterMTLS feature gate to be enabled", NULL,   /* built: accepted */
          offsetof(struct rc_gates, mtls) },
        { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\",\"redisAddress\":\"r:6379\"}",
          "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
          "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'",
          offsetof(struct rc_gates, gcs_ft_embedded) },   /* built: its own rules */
        { "spec.historyServerOptions", "{}", "RayClusterHistoryServer feature gate is not enabled",
          "historyServerOptions.collectorOptions must be set",   /* built: its own rules */
          offsetof(struct rc_gates, history_server) },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rc_gates on, others;
        struct rc_invalid why;
        memset(&on, 0, sizeof(on));
        *(bool *)((char *)&on + cases[i].gate) = true;
        memset(&others, 1, sizeof(others));   /* every gate but this one */
        *(bool *)((char *)&others + cases[i].gate) = false;
        cJSON *rc = base();
        edit(rc, cases[i].path, cases[i].value);
        assert_int_equal(rc_validate(rc, NULL, &why), -EINVAL);
        assert_non_null(strstr(why.message, cases[i].gate_off_fragment));
        assert_int_equal(rc_validate(rc, &others, &why), -EINVAL);
        assert_non_null(strstr(why.message, cases[i].gate_off_fragment));
        memset(&why, 0, sizeof(why));
        if (!cases[i].gate_on_fragment) {
            if (rc_validate(rc, &on, &why) != 0)
                fail_msg("%s with its gate on: %s", cases[i].path, why.message);
            cJSON_Delete(rc);
            continue;
        }
        assert_int_equal(rc_validate(rc, &on, &why), -EINVAL);
        assert_string_equal(why.reason, "InvalidRayClusterSpec");
        if (!strstr(why.message, cases[i].gate_on_fragment))
            fail_msg("%s with its gate on: %s", cases[i].path, why.message);
        cJSON_Delete(rc);
    }
}

/* RayClusterMTLS on: validateTLSOptions' rules and messages */
static void test_tls_options(void **state)
{
    (void)state;
    static const struct {
        const char *path, *value, *msg;
    } cases[] = {
        { "spec.headGroupSpec.template.spec.containers.0.env",
          "[{\"name\":\"RAY_USE_TLS\",\"value\":\"1\"}]",
          "cannot set RAY_USE_TLS environment variable in head Pod when tlsOptions is set - the "
          "operator manages TLS configuration automatically" },
        { "spec.headGroupSpec.template.spec.containers.0.volumeMounts",
          "[{\"name\":\"certs\",\"mountPath\":\"/etc/ray/tls\"}]",
          "cannot use volume mount at path \"/etc/ray/tls\" in head Pod when tlsOptions is set" },
        { "spec.workerGroupSpecs.0.template.spec.containers.0.env",
          "[{\"name\":\"RAY_TLS_CA_CERT\",\"value\":\"x\"}]",
          "cannot set RAY_TLS_CA_CERT environment variable in worker group \"g1\" when tlsOptions "
          "is set" },
        { "spec.workerGroupSpecs.0.template.spec.containers.0.volumeMounts",
          "[{\"name\":\"ray-tls\",\"mountPath\":\"/x\"}]",
          "cannot use volume mount named \"ray-tls\" in worker group \"g1\" when tlsOptions is set" },
        { "spec.autoscalerOptions", "{\"env\":[{\"name\":\"RAY_TLS_SERVER_KEY\",\"value\":\"k\"}]}",
          "cannot set RAY_TLS_SERVER_KEY environment variable in autoscalerOptions.env when "
          "tlsOptions is set - the operator manages TLS configuration for the autoscaler "
          "automatically" },
        { "spec.autoscalerOptions", "{\"volumeMounts\":[{\"name\":\"ray-tls\",\"mountPath\":\"/y\"}]}",
          "cannot use volume mount named \"ray-tls\" in autoscalerOptions.volumeMounts when "
          "tlsOptions is set" },
    };
    struct rc_gates on;
    memset(&on, 0, sizeof(on));
    on.mtls = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rc_invalid why;
        cJSON *rc = base();
        edit(rc, "spec.tlsOptions", "{\"enabled\":true}");
        edit(rc, cases[i].path, cases[i].value);
        assert_int_equal(rc_validate(rc, &on, &why), -EINVAL);
        if (!strstr(why.message, cases[i].msg))
            fail_msg("case %zu: %s", i, why.message);
        /* tlsOptions.enabled false: the operator adds nothing, so nothing conflicts */
        edit(rc, "spec.tlsOptions", "{\"enabled\":false}");
        assert_int_equal(rc_validate(rc, &on, &why), 0);
        cJSON_Delete(rc);
    }
}

/* GCSFaultToleranceEmbeddedStorage on: validateGcsFaultToleranceBackend's rocksdb rules */
static void test_gcs_embedded(void **state)
{
    (void)state;
    static const struct {
        const char *path, *value, *msg;   /* msg NULL: valid */
    } cases[] = {
        { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\"}", NULL },
        { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\",\"storage\":{\"size\":\"2Gi\","
          "\"deletionPolicy\":\"Retain\"}}", NULL },
        { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\",\"redisPassword\":{}}",
          "cannot set GcsFaultToleranceOptions.RedisPassword when backend is 'rocksdb'" },
        { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\",\"externalStorageNamespace\":\"x\"}",
          "cannot set GcsFaultToleranceOptions.ExternalStorageNamespace when backend is 'rocksdb'" },
        { "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\",\"storage\":{\"claimName\":\"c\","
          "\"accessModes\":[\"ReadWriteMany\"]}}",
          "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, "
          "storageClassName, and accessModes" },
        { "spec.headGroupSpec.template.spec.containers.0.env",
          "[{\"name\":\"RAY_gcs_storage_path\",\"value\":\"/x\"}]",
          "cannot set `RAY_gcs_storage` or `RAY_gcs_storage_path` env var in head Pod when the "
          "embedded GCS FT backend is used - these are managed by KubeRay" },
        { "spec.headGroupSpec.template.spec.containers.0.volumeMounts",
          "[{\"name\":\"data\",\"mountPath\":\"/data/gcs\"}]",
          "cannot set a volume mount named \"gcs-storage\" or mounted at /data/gcs in the head "
          "container when the embedded GCS FT backend is used - it is managed by KubeRay" },
        { "spec.headGroupSpec.template.spec.volumes", "[{\"name\":\"gcs-storage\",\"emptyDir\":{}}]",
          "cannot set a volume named \"gcs-storage\" in the head Pod when the embedded GCS FT "
          "backend is used - it is managed by KubeRay" },
    };
    struct rc_gates on;
    memset(&on, 0, sizeof(on));
    on.gcs_ft_embedded = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rc_invalid why;
        cJSON *rc = base();
        if (strcmp(cases[i].path, "spec.gcsFaultToleranceOptions"))
            edit(rc, "spec.gcsFaultToleranceOptions", "{\"backend\":\"rocksdb\"}");
        edit(rc, cases[i].path, cases[i].value);
        memset(&why, 0, sizeof(why));
        int r = rc_validate(rc, &on, &why);
        if (!cases[i].msg) {
            if (r != 0)
                fail_msg("case %zu: %s", i, why.message);
        } else {
            assert_int_equal(r, -EINVAL);
            if (!strstr(why.message, cases[i].msg))
                fail_msg("case %zu: %s", i, why.message);
        }
        cJSON_Delete(rc);
    }
}

/* RayClusterNetworkPolicy on: validateNetworkPolicy's rules and messages */
static void test_network_policy(void **state)
{
    (void)state;
    static const struct {
        const char *value, *msg;   /* msg NULL: valid */
    } cases[] = {
        { "{}", NULL },
        { "{\"mode\":\"DenyAll\",\"head\":{\"ingressRules\":[{}],\"egressRules\":[{}]}}", NULL },
        { "{\"mode\":\"DenyAllIngress\",\"head\":{\"egressRules\":[{}]}}",
          "networkPolicy.head.egressRules cannot be set when mode is \"DenyAllIngress\" (egress "
          "is not restricted)" },
        { "{\"mode\":\"DenyAllEgress\",\"worker\":{\"ingressRules\":[{}]}}",
          "networkPolicy.worker.ingressRules cannot be set when mode is \"DenyAllEgress\" "
          "(ingress is not restricted)" },
        { "{\"mode\":\"DenyAllIngress\",\"workerGroups\":[{\"groupName\":\"g1\","
          "\"egressRules\":[{}]}]}",
          "networkPolicy.workerGroups[\"g1\"].egressRules cannot be set when mode is "
          "\"DenyAllIngress\" (egress is not restricted)" },
        { "{\"workerGroups\":[{\"groupName\":\"nope\"}]}",
          "networkPolicy.workerGroups[\"nope\"] does not match any group name in workerGroupSpecs" },
        { "{\"workerGroups\":[{\"groupName\":\"g1\",\"ingressRules\":[{}]}]}", NULL },
    };
    struct rc_gates on;
    memset(&on, 0, sizeof(on));
    on.network_policy = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rc_invalid why;
        cJSON *rc = base();
        edit(rc, "spec.networkPolicy", cases[i].value);
        memset(&why, 0, sizeof(why));
        int r = rc_validate(rc, &on, &why);
        if (!cases[i].msg) {
            if (r != 0)
                fail_msg("case %zu: %s", i, why.message);
        } else {
            assert_int_equal(r, -EINVAL);
            if (!strstr(why.message, cases[i].msg))
                fail_msg("case %zu: %s", i, why.message);
        }
        cJSON_Delete(rc);
    }
    /* group names go into policy names: DNS-1123 labels only */
    cJSON *rc = base();
    struct rc_invalid why;
    edit(rc, "spec.networkPolicy", "{}");
    edit(rc, "spec.workerGroupSpecs.0.groupName", "\"GPU_group\"");
    assert_int_equal(rc_validate(rc, &on, &why), -EINVAL);
    assert_non_null(strstr(why.message, "worker group name \"GPU_group\" must be a valid DNS1123 "
                           "label when networkPolicy is enabled (it is embedded in the "
                           "NetworkPolicy name): [a lowercase RFC 1123 label must consist of"));
    cJSON_Delete(rc);
}

/* RayClusterHistoryServer on: validateCollectorOptions and the container-name rule,
 * KubeRay's messages */
static void test_history_server(void **state)
{
    (void)state;
    static const struct {
        const char *value, *msg;
    } cases[] = {
        { "{\"collectorOptions\":{}}", "historyServerOptions.collectorOptions.image must be set" },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"RAY_ROLE\",\"value\":\"x\"}]}}",
          "historyServerOptions.collectorOptions.env must not contain RAY_ROLE: it is managed by "
          "KubeRay and injected automatically into the collector container" },
        { "{\"collectorOptions\":{\"image\":\"c\"}}",
          "STORAGE_BACKEND environment variable must be set with a literal string value in "
          "historyServerOptions.collectorOptions.env" },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"gcs\"}]}}",
          "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS" },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"S3\"}]}}",
          "S3_REGION environment variable must be set when STORAGE_BACKEND is S3" },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"AzureBlob\"},"
          "{\"name\":\"AZURE_STORAGE_AUTH_MODE\",\"value\":\" Default \"}]}}",
          "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is "
          "AZUREBLOB and AZURE_STORAGE_AUTH_MODE is default" },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"AZUREBLOB\"}]}}",
          "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment "
          "variable must be set when STORAGE_BACKEND is AZUREBLOB" },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"ALIYUNOSS\"},"
          "{\"name\":\"OSS_BUCKET\",\"value\":\"b\"}]}}",
          "OSS_ENDPOINT environment variable must be set when STORAGE_BACKEND is ALIYUNOSS" },
        /* a valueFrom counts as a value; an unknown backend needs nothing more */
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"GCS\"},"
          "{\"name\":\"GCS_BUCKET\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}}", NULL },
        { "{\"collectorOptions\":{\"image\":\"c\",\"env\":[{\"name\":\"STORAGE_BACKEND\",\"value\":\"local\"}]}}", NULL },
    };
    struct rc_gates on;
    memset(&on, 0, sizeof(on));
    on.history_server = true;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rc_invalid why;
        cJSON *rc = base();
        edit(rc, "spec.historyServerOptions", cases[i].value);
        memset(&why, 0, sizeof(why));
        int r = rc_validate(rc, &on, &why);
        if (!cases[i].msg) {
            if (r != 0)
                fail_msg("case %zu: %s", i, why.message);
        } else if (r != -EINVAL || !strstr(why.message, cases[i].msg)) {
            fail_msg("case %zu: want \"%s\", got \"%s\"", i, cases[i].msg, why.message);
        }
        cJSON_Delete(rc);
    }
    /* a user container named like the collector */
    cJSON *rc = base();
    edit(rc, "spec.historyServerOptions", cases[8].value);
    edit(rc, "spec.headGroupSpec.template.spec.containers",
         "[{\"name\":\"ray-head\",\"image\":\"r\"},{\"name\":\"ray-history-collector\",\"image\":\"x\"}]");
    struct rc_invalid why;
    assert_int_equal(rc_validate(rc, &on, &why), -EINVAL);
    assert_non_null(strstr(why.message, "head pod template must not define a container with name "
                                        "'ray-history-collector' when history server collector "
                                        "options are enabled"));
    cJSON_Delete(rc);
}

/* ---- every sample ---- */

/* Where KubeRay v1.7 (default feature gates) stops a sample, by file. */
static const struct {
    const char *file, *reason, *fragment;
} expected_rejects[] = {
    /* feature gates that are off in a default KubeRay install */
    { "ray-cluster.network-policy-deny-all.yaml", "InvalidRayClusterSpec",
      "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled" },
    { "ray-cluster.mtls.yaml", "InvalidRayClusterSpec",
      "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled" },
    { "ray-cluster.embedded-gcs-ft.yaml", "InvalidRayClusterSpec",
      "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled" },
    { "ray-cluster.historyserver.yaml", "InvalidRayClusterSpec",
      "RayClusterHistoryServer feature gate is not enabled" },
    { NULL, NULL, NULL },
};

static int checked, rejected, unexpected;

/* Validates rc and, when valid, builds every object it implies. */
static void check_cluster(cJSON *rc, const char *file)
{
    struct rc_invalid why;
    struct rc_resources res;
    int err = 0;
    const char *base_name = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    if (rc_validate(rc, NULL, &why) < 0) {
        for (size_t i = 0; expected_rejects[i].file; i++) {
            if (!strcmp(expected_rejects[i].file, base_name)) {
                assert_string_equal(why.reason, expected_rejects[i].reason);
                if (!strstr(why.message, expected_rejects[i].fragment))
                    fail_msg("%s: rejected with %s", file, why.message);
                rejected++;
                return;
            }
        }
        print_error("%s: unexpectedly invalid: %s: %s\n", file, why.reason, why.message);
        unexpected++;
        return;
    }
    for (size_t i = 0; expected_rejects[i].file; i++)
        if (!strcmp(expected_rejects[i].file, base_name))
            fail_msg("%s: KubeRay rejects it, rayop accepted it", file);
    cJSON *o = rc_build_head_pod(rc, NULL, &err);
    if (!o)
        fail_msg("%s: head Pod: %d", file, err);
    cJSON_Delete(o);
    cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "spec"), "workerGroupSpecs")) {
        o = rc_build_worker_pod(rc, g, "grp-abcde", 0, 0, NULL, &err);
        if (!o)
            fail_msg("%s: worker Pod: %d", file, err);
        cJSON_Delete(o);
    }
    if (!(o = rc_build_head_service(rc, NULL, &err)))
        fail_msg("%s: head Service: %d", file, err);
    cJSON_Delete(o);
    err = 0;
    o = rc_build_serve_service(rc, NULL, &err);
    assert_int_equal(err, 0);
    cJSON_Delete(o);
    o = rc_build_headless_service(rc, NULL, &err);
    assert_int_equal(err, 0);
    cJSON_Delete(o);
    o = rc_build_redis_cleanup_job(rc, NULL, &err);
    assert_int_equal(err, 0);
    assert_true(rc_gcs_ft_enabled(rc) == (o != NULL));
    cJSON_Delete(o);
    cJSON *sa, *role, *rb;
    assert_int_equal(rc_build_autoscaler_rbac(rc, &sa, &role, &rb), 0);
    cJSON_Delete(sa);
    cJSON_Delete(role);
    cJSON_Delete(rb);
    o = rc_build_head_ingress(rc, NULL, &err);
    assert_int_equal(err, 0);
    cJSON_Delete(o);
    o = rc_build_auth_secret(rc, (const unsigned char *)"0123456789abcdef", 16, &err);
    assert_int_equal(err, 0);
    cJSON_Delete(o);
    assert_int_equal(rc_desired_resources(rc, &res), 0);
    checked++;
}

/* A RayCluster named after a RayJob/RayService, from its embedded cluster spec. */
static cJSON *embedded_cluster(const cJSON *doc, const char *kind)
{
    const cJSON *spec = cJSON_GetObjectItem(doc, "spec");
    const cJSON *cs = cJSON_GetObjectItem(spec, !strcmp(kind, "RayJob") ? "rayClusterSpec"
                                                                          : "rayClusterConfig");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "metadata"),
                                                                "name"));
    cJSON *rc, *meta, *labels;
    if (!cs || !name)
        return NULL;
    rc = cJSON_CreateObject();
    cJSON_AddStringToObject(rc, "apiVersion", "ray.io/v1");
    cJSON_AddStringToObject(rc, "kind", "RayCluster");
    meta = cJSON_AddObjectToObject(rc, "metadata");
    char n[128];
    snprintf(n, sizeof(n), "%.40s-abcde", name);
    cJSON_AddStringToObject(meta, "name", n);
    labels = cJSON_AddObjectToObject(meta, "labels");
    cJSON_AddStringToObject(labels, "ray.io/originated-from-crd", kind);
    cJSON_AddStringToObject(labels, "ray.io/originated-from-cr-name", name);
    cJSON_AddItemToObject(rc, "spec", cJSON_Duplicate(cs, 1));
    return rc;
}

static void walk(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    assert_non_null(d);
    while ((de = readdir(d))) {
        char path[1200];
        struct stat st;
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (stat(path, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            walk(path);
            continue;
        }
        if (n < 5 || strcmp(de->d_name + n - 5, ".yaml"))
            continue;
        cJSON *docs = rct_load_docs(path), *doc;
        cJSON_ArrayForEach(doc, docs) {
            const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(doc, "kind"));
            cJSON *rc = NULL;
            if (!kind)
                continue;
            if (!strcmp(kind, "RayCluster"))
                rc = cJSON_Duplicate(doc, 1);
            else if (!strcmp(kind, "RayJob") || !strcmp(kind, "RayService"))
                rc = embedded_cluster(doc, kind);
            if (!rc)
                continue;
            if (rct_admit(rc) < 0)
                fail_msg("%s: the CRD schema rejects the %s", path, kind);
            check_cluster(rc, path);
            cJSON_Delete(rc);
        }
        cJSON_Delete(docs);
    }
    closedir(d);
}

static void test_all_samples(void **state)
{
    (void)state;
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/kuberay/samples", shared_fixture_dir());
    walk(dir);
    print_message("samples: %d clusters validated and built, %d rejected as KubeRay does\n",
                  checked, rejected);
    assert_int_equal(unexpected, 0);
    assert_int_equal(rejected, 4);
    assert_true(checked >= 70);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_managed_by_and_warning),
        cmocka_unit_test(test_gates),
        cmocka_unit_test(test_history_server),
        cmocka_unit_test(test_network_policy),
        cmocka_unit_test(test_gcs_embedded),
        cmocka_unit_test(test_tls_options),
        cmocka_unit_test(test_all_samples),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    schema_free(rct_schema);
    return r;
}

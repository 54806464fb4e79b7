/* test_present_table.c - unit tests of kubesim/present/table.c and the printers: Tables with
 * exact cells for pods, services, jobs, nodes, events, configmaps, CRDs and custom
 * resources (printer columns, the JSONPath subset), and human-readable ages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "kubesim/present/present.h"
#include "kubesim/registry/registry.h"
#include "tests/unit/yaml_fixture.h"
#include "tests/unit/shared_fixture.h"
#include "util/util.h"

#define NOW ((time_t)1800000000)

static struct registry *with_crds(void)
{
    static const char *files[] = { "ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml" };
    struct registry *r;
    char err[256];

    assert_int_equal(registry_new(&r), 0);
    for (size_t i = 0; i < 2; i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/kuberay/crds/%s", shared_fixture_dir(), files[i]);
        cJSON *crd = yaml_fixture_load(path);
        assert_non_null(crd);
        assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
        cJSON_Delete(crd);
    }
    return r;
}

static cJSON *parse_buf(struct buf *b)
{
    cJSON *j = cJSON_ParseWithLength(b->data, b->len);
    assert_non_null(j);
    return j;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}



/* ---- Tables --------------------------------------------------------------------- */

static cJSON *table_of(const struct reg_resource *res, const char *obj_json, struct buf *b)
{
    cJSON *obj = cJSON_Parse(obj_json);
    const cJSON *items[1] = { obj };
    cJSON *t;

    assert_non_null(obj);
    buf_reset(b);
    assert_int_equal(present_table(res, items, 1, "42", NULL, true, NOW, b), 0);
    cJSON_Delete(obj);
    t = parse_buf(b);
    assert_string_equal(jstr(t, "kind"), "Table");
    assert_string_equal(jstr(t, "apiVersion"), "meta.k8s.io/v1");
    assert_string_equal(jstr(cJSON_GetObjectItem(t, "metadata"), "resourceVersion"), "42");
    return t;
}

static const cJSON *row_cells(const cJSON *t)
{
    return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "rows"), 0), "cells");
}

static void assert_cells(const cJSON *t, const char *const *want, size_t n)
{
    const cJSON *cells = row_cells(t);
    assert_int_equal(cJSON_GetArraySize(cells), n);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "columnDefinitions")), n);
    for (size_t i = 0; i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(cells, (int)i);
        char *s = cJSON_PrintUnformatted(c);
        if (strcmp(s, want[i]) != 0)
            print_error("cell %zu: got %s want %s\n", i, s, want[i]);
        assert_string_equal(s, want[i]);
        free(s);
    }
}

/* creationTimestamp NOW-300s; lastState finished NOW-120s */
#define CREATED "\"creationTimestamp\":\"2027-01-15T07:55:00Z\""

static void test_table_pods(void **state)
{
    struct registry *r;
    struct buf b = { 0 };
    const struct reg_resource *pods;
    cJSON *t;
    char ts[32];
    (void)state;

    util_format_time(NOW - 300, ts);
    assert_string_equal(ts, "2027-01-15T07:55:00Z");
    assert_int_equal(registry_new(&r), 0);
    pods = registry_find(r, "", "v1", "pods");

    t = table_of(pods,
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"u1\"," CREATED ","
        "\"labels\":{\"app\":\"web\"},\"managedFields\":[{}]},"
        "\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},"
        "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.5\",\"podIPs\":[{\"ip\":\"10.0.0.5\"}],"
        "\"containerStatuses\":[{\"name\":\"a\",\"ready\":true,\"restartCount\":2,"
        "\"state\":{\"running\":{}},\"lastState\":{\"terminated\":{\"exitCode\":1,"
        "\"finishedAt\":\"2027-01-15T07:58:00Z\"}}},"
        "{\"name\":\"b\",\"ready\":false,\"restartCount\":0,\"state\":{\"running\":{}}}]}}", &b);
    {
        static const char *want[] = { "\"web\"", "\"1/2\"", "\"Running\"", "\"2 (2m ago)\"",
                                      "\"5m\"", "\"10.0.0.5\"", "\"node-1\"", "\"<none>\"",
                                      "\"<none>\"" };
        assert_cells(t, want, 9);
    }
    const cJSON *cols = cJSON_GetObjectItem(t, "columnDefinitions");
    assert_string_equal(jstr(cJSON_GetArrayItem(cols, 0), "name"), "Name");
    assert_string_equal(jstr(cJSON_GetArrayItem(cols, 1), "name"), "Ready");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cols, 5), "priority")->valueint, 1);
    const cJSON *obj = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "rows"), 0),
                                           "object");
    assert_string_equal(jstr(obj, "kind"), "PartialObjectMetadata");
    assert_string_equal(jstr(obj, "apiVersion"), "meta.k8s.io/v1");
    assert_string_equal(jstr(cJSON_GetObjectItem(obj, "metadata"), "namespace"), "default");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "labels"));
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "managedFields"));
    cJSON_Delete(t);

    /* waiting container: its reason is the status */
    t = table_of(pods,
        "{\"metadata\":{\"name\":\"p\"," CREATED "},\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
        "\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"a\",\"ready\":false,"
        "\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}", &b);
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 2)->valuestring, "ContainerCreating");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 1)->valuestring, "0/1");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 3)->valuestring, "0");
    cJSON_Delete(t);

    /* deletionTimestamp on a running pod: Terminating */
    t = table_of(pods,
        "{\"metadata\":{\"name\":\"p\"," CREATED ",\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"},"
        "\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Running\"}}", &b);
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 2)->valuestring, "Terminating");
    cJSON_Delete(t);

    /* failing init container, and a plain Pending pod without statuses */
    t = table_of(pods,
        "{\"metadata\":{\"name\":\"p\"," CREATED "},\"spec\":{\"initContainers\":[{\"name\":\"i\"}],"
        "\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Pending\","
        "\"initContainerStatuses\":[{\"name\":\"i\",\"restartCount\":3,\"state\":{\"waiting\":"
        "{\"reason\":\"CrashLoopBackOff\"}}}]}}", &b);
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 2)->valuestring, "Init:CrashLoopBackOff");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 3)->valuestring, "3");
    cJSON_Delete(t);
    t = table_of(pods, "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Pending\"}}", &b);
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 2)->valuestring, "Pending");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 4)->valuestring, "<unknown>");
    cJSON_Delete(t);
    /* completed container: reason from its terminated state */
    t = table_of(pods,
        "{\"metadata\":{\"name\":\"p\"," CREATED "},\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
        "\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"name\":\"a\",\"ready\":false,"
        "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}", &b);
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 2)->valuestring, "Completed");
    cJSON_Delete(t);
    registry_free(r);
    buf_free(&b);
}

static void test_table_services_jobs_misc(void **state)
{
    struct registry *r;
    struct buf b = { 0 };
    cJSON *t;
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    t = table_of(registry_find(r, "", "v1", "services"),
        "{\"metadata\":{\"name\":\"svc\"," CREATED "},\"spec\":{\"type\":\"NodePort\","
        "\"clusterIP\":\"10.96.0.10\",\"clusterIPs\":[\"10.96.0.10\"],"
        "\"ports\":[{\"port\":80,\"protocol\":\"TCP\"},{\"port\":443,\"nodePort\":30443}],"
        "\"selector\":{\"tier\":\"be\",\"app\":\"x\"}}}", &b);
    {
        static const char *want[] = { "\"svc\"", "\"NodePort\"", "\"10.96.0.10\"", "\"<none>\"",
                                      "\"80/TCP,443:30443/TCP\"", "\"5m\"", "\"app=x,tier=be\"" };
        assert_cells(t, want, 7);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "", "v1", "services"),
        "{\"metadata\":{\"name\":\"lb\"},\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"None\"}}",
        &b);
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 2)->valuestring, "None");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 3)->valuestring, "<pending>");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 4)->valuestring, "<none>");
    assert_string_equal(cJSON_GetArrayItem(row_cells(t), 6)->valuestring, "<none>");
    cJSON_Delete(t);

    t = table_of(registry_find(r, "batch", "v1", "jobs"),
        "{\"metadata\":{\"name\":\"j\"," CREATED "},\"spec\":{\"completions\":1,"
        "\"selector\":{\"matchLabels\":{\"job\":\"j\"}},\"template\":{\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"busybox\"}]}}},\"status\":{\"succeeded\":1,"
        "\"startTime\":\"2027-01-15T07:55:00Z\",\"completionTime\":\"2027-01-15T07:55:30Z\","
        "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}", &b);
    {
        static const char *want[] = { "\"j\"", "\"Complete\"", "\"1/1\"", "\"30s\"", "\"5m\"",
                                      "\"c\"", "\"busybox\"", "\"job=j\"" };
        assert_cells(t, want, 8);
    }
    cJSON_Delete(t);

    t = table_of(registry_find(r, "", "v1", "namespaces"),
                 "{\"metadata\":{\"name\":\"default\"," CREATED "},\"status\":{\"phase\":\"Active\"}}",
                 &b);
    {
        static const char *want[] = { "\"default\"", "\"Active\"", "\"5m\"" };
        assert_cells(t, want, 3);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "", "v1", "configmaps"),
                 "{\"metadata\":{\"name\":\"cm\"," CREATED "},\"data\":{\"a\":\"1\",\"b\":\"2\"}}",
                 &b);
    {
        static const char *want[] = { "\"cm\"", "2", "\"5m\"" };
        assert_cells(t, want, 3);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "", "v1", "events"),
        "{\"metadata\":{\"name\":\"e1\"},\"type\":\"Normal\",\"reason\":\"Scheduled\","
        "\"message\":\" assigned \\n\",\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"web\"},"
        "\"firstTimestamp\":\"2027-01-15T07:55:00Z\",\"lastTimestamp\":\"2027-01-15T07:59:00Z\","
        "\"count\":3,\"source\":{\"component\":\"kubelet\",\"host\":\"n1\"}}", &b);
    {
        static const char *want[] = { "\"60s\"", "\"Normal\"", "\"Scheduled\"", "\"pod/web\"",
                                      "\"\"", "\"kubelet, n1\"", "\"assigned\"", "\"5m\"", "3",
                                      "\"e1\"" };
        assert_cells(t, want, 10);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "", "v1", "nodes"),
        "{\"metadata\":{\"name\":\"n1\"," CREATED ",\"labels\":{\"node-role.kubernetes.io/"
        "control-plane\":\"\"}},\"spec\":{\"unschedulable\":true},\"status\":{\"conditions\":"
        "[{\"type\":\"Ready\",\"status\":\"True\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.33.0\"},"
        "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.1.1.1\"}]}}", &b);
    {
        static const char *want[] = { "\"n1\"", "\"Ready,SchedulingDisabled\"",
                                      "\"control-plane\"", "\"5m\"", "\"v1.33.0\"",
                                      "\"10.1.1.1\"", "\"<none>\"", "\"<unknown>\"",
                                      "\"<unknown>\"", "\"<unknown>\"" };
        assert_cells(t, want, 10);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                 "{\"metadata\":{\"name\":\"x.y.z\"," CREATED "}}", &b);
    {
        static const char *want[] = { "\"x.y.z\"", "\"2027-01-15T07:55:00Z\"" };
        assert_cells(t, want, 2);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "discovery.k8s.io", "v1", "endpointslices"),
        "{\"metadata\":{\"name\":\"s\"," CREATED "},\"addressType\":\"IPv4\","
        "\"ports\":[{\"port\":80},{}],\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]},"
        "{\"addresses\":[\"10.0.0.2\",\"10.0.0.3\",\"10.0.0.4\"]}]}", &b);
    {
        static const char *want[] = { "\"s\"", "\"IPv4\"", "\"80,<unset>\"",
                                      "\"10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...\"", "\"5m\"" };
        assert_cells(t, want, 5);
    }
    cJSON_Delete(t);
    t = table_of(registry_find(r, "rbac.authorization.k8s.io", "v1", "rolebindings"),
        "{\"metadata\":{\"name\":\"rb\"," CREATED "},\"roleRef\":{\"kind\":\"Role\","
        "\"name\":\"edit\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"al\"},"
        "{\"kind\":\"ServiceAccount\",\"name\":\"op\",\"namespace\":\"ray\"},"
        "{\"kind\":\"User\",\"name\":\"bo\"}]}", &b);
    {
        static const char *want[] = { "\"rb\"", "\"Role/edit\"", "\"5m\"", "\"al, bo\"",
                                      "\"\"", "\"ray:op\"" };
        assert_cells(t, want, 6);
    }
    cJSON_Delete(t);
    /* events.k8s.io/v1 prints like core events, from its own field names */
    t = table_of(registry_find(r, "events.k8s.io", "v1", "events"),
        "{\"metadata\":{\"name\":\"e2\"},\"type\":\"Warning\",\"reason\":\"Failed\","
        "\"note\":\"boom\",\"regarding\":{\"kind\":\"RayCluster\",\"name\":\"rc\"},"
        "\"eventTime\":\"2027-01-15T07:59:58.000000Z\",\"reportingController\":\"rayop\"}", &b);
    {
        static const char *want[] = { "\"2s\"", "\"Warning\"", "\"Failed\"",
                                      "\"raycluster/rc\"", "\"\"", "\"rayop\"", "\"boom\"",
                                      "\"2s\"", "1", "\"e2\"" };
        assert_cells(t, want, 10);
    }
    cJSON_Delete(t);
    registry_free(r);
    buf_free(&b);
}

static void test_table_crd_columns(void **state)
{
    struct registry *r = with_crds();
    struct buf b = { 0 };
    const cJSON *cols;
    cJSON *t;
    (void)state;

    t = table_of(registry_find(r, "ray.io", "v1", "rayclusters"),
        "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rc\","
        "\"namespace\":\"default\"," CREATED "},\"status\":{\"desiredWorkerReplicas\":2,"
        "\"availableWorkerReplicas\":1,\"desiredCPU\":\"3\",\"desiredMemory\":\"6G\","
        "\"desiredGPU\":\"0\",\"state\":\"ready\",\"head\":{\"podIP\":\"10.0.0.9\"}}}", &b);
    {
        static const char *want[] = { "\"rc\"", "2", "1", "\"3\"", "\"6G\"", "\"0\"", "null",
                                      "\"ready\"", "\"5m\"", "\"10.0.0.9\"", "null" };
        assert_cells(t, want, 11);
    }
    cols = cJSON_GetObjectItem(t, "columnDefinitions");
    assert_string_equal(jstr(cJSON_GetArrayItem(cols, 0), "name"), "Name");
    assert_string_equal(jstr(cJSON_GetArrayItem(cols, 0), "format"), "name");
    assert_string_equal(jstr(cJSON_GetArrayItem(cols, 1), "name"), "desired workers");
    assert_string_equal(jstr(cJSON_GetArrayItem(cols, 1), "type"), "integer");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cols, 9), "priority")->valueint, 1);
    cJSON_Delete(t);

    /* without columns (a watch event): rows only */
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"rc\"}}");
    const cJSON *items[1] = { obj };
    buf_reset(&b);
    assert_int_equal(present_table(registry_find(r, "ray.io", "v1", "rayclusters"), items, 1,
                                   NULL, "tok", false, NOW, &b), 0);
    t = parse_buf(&b);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "columnDefinitions")), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "rows")), 1);
    assert_string_equal(jstr(cJSON_GetObjectItem(t, "metadata"), "continue"), "tok");
    cJSON_Delete(t);
    cJSON_Delete(obj);
    registry_free(r);
    buf_free(&b);
}

static void test_table_jsonpath_forms(void **state)
{
    struct registry *r;
    struct buf b = { 0 };
    char err[256];
    cJSON *crd, *t;
    (void)state;

    crd = cJSON_Parse(
        "{\"metadata\":{\"name\":\"things.example.com\"},\"spec\":{\"group\":\"example.com\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"things\",\"kind\":\"Thing\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}},\"additionalPrinterColumns\":["
        "{\"name\":\"replicas\",\"type\":\"string\",\"jsonPath\":\".spec.groups[*].replicas\"},"
        "{\"name\":\"first\",\"type\":\"integer\",\"jsonPath\":\".spec.groups[0].replicas\"},"
        "{\"name\":\"last\",\"type\":\"string\",\"jsonPath\":\".spec.groups[-1].name\"},"
        "{\"name\":\"label\",\"type\":\"string\",\"jsonPath\":\".metadata.labels.app\\\\.k8s\\\\.io/n\"},"
        "{\"name\":\"quoted\",\"type\":\"string\",\"jsonPath\":\".metadata.labels['app.k8s.io/n']\"},"
        "{\"name\":\"ok\",\"type\":\"boolean\",\"jsonPath\":\".status.ok\"},"
        "{\"name\":\"ratio\",\"type\":\"number\",\"jsonPath\":\".status.ratio\"},"
        "{\"name\":\"obj\",\"type\":\"string\",\"jsonPath\":\".status.obj\"},"
        "{\"name\":\"bad\",\"type\":\"string\",\"jsonPath\":\"spec[\"},"
        "{\"name\":\"when\",\"type\":\"date\",\"jsonPath\":\".status.when\"}]}]}}");
    assert_non_null(crd);
    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
    t = table_of(registry_find(r, "example.com", "v1", "things"),
        "{\"metadata\":{\"name\":\"t\",\"labels\":{\"app.k8s.io/n\":\"web\"}},"
        "\"spec\":{\"groups\":[{\"name\":\"a\",\"replicas\":1},{\"name\":\"b\",\"replicas\":3}]},"
        "\"status\":{\"ok\":true,\"ratio\":0.5,\"obj\":{\"k\":1},\"when\":\"garbage\"}}", &b);
    {
        static const char *want[] = { "\"t\"", "\"1,3\"", "1", "\"b\"", "\"web\"", "\"web\"",
                                      "true", "0.5", "\"{\\\"k\\\":1}\"", "null",
                                      "\"<invalid>\"" };
        assert_cells(t, want, 11);
    }
    cJSON_Delete(t);
    cJSON_Delete(crd);
    /* a custom resource whose CRD has no printer columns: Name, Age */
    crd = cJSON_Parse(
        "{\"metadata\":{\"name\":\"plains.example.com\"},\"spec\":{\"group\":\"example.com\","
        "\"scope\":\"Cluster\",\"names\":{\"plural\":\"plains\",\"kind\":\"Plain\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}");
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
    t = table_of(registry_find(r, "example.com", "v1", "plains"),
                 "{\"metadata\":{\"name\":\"p\"," CREATED "}}", &b);
    {
        static const char *want[] = { "\"p\"", "\"5m\"" };
        assert_cells(t, want, 2);
    }
    assert_string_equal(jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "columnDefinitions"), 1),
                             "type"), "date");
    cJSON_Delete(t);
    cJSON_Delete(crd);
    registry_free(r);
    buf_free(&b);
}

static void test_human_age(void **state)
{
    static const struct {
        long secs;
        const char *want;
    } cases[] = {
        { 0, "0s" }, { -1, "0s" }, { -5, "<invalid>" }, { 5, "5s" }, { 119, "119s" },
        { 120, "2m" }, { 200, "3m20s" }, { 599, "9m59s" }, { 600, "10m" }, { 179 * 60, "179m" },
        { 3 * 3600, "3h" }, { 3 * 3600 + 60 * 5, "3h5m" }, { 8 * 3600, "8h" },
        { 47 * 3600, "47h" }, { 48 * 3600, "2d" }, { 50 * 3600, "2d2h" },
        { 8 * 86400, "8d" }, { 729L * 86400, "729d" }, { 730L * 86400, "2y" },
        { 731L * 86400, "2y1d" }, { 8L * 365 * 86400, "8y" }, { 20L * 365 * 86400, "20y" },
    };
    char out[16];
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        present_human_age(NOW - cases[i].secs, NOW, out);
        assert_string_equal(out, cases[i].want);
    }
    present_human_age(0, NOW, out);
    assert_string_equal(out, "<unknown>");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_pods),
        cmocka_unit_test(test_table_services_jobs_misc),
        cmocka_unit_test(test_table_crd_columns),
        cmocka_unit_test(test_table_jsonpath_forms),
        cmocka_unit_test(test_human_age),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

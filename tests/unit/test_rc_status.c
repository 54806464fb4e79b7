/*
 * test_rc_status.c - the RayCluster status as a pure function
 * (reconcilers/raycluster/status.c): KubeRay's calculateStatus rules for
 * state (ready needs every desired Pod Running and Ready; sticky; suspended),
 * the conditions and their transition times, replica counts, head and
 * endpoints, ReplicaFailure from the reconcile error, the errors that stop a
 * status write, and the "changed" test that keeps lastUpdateTime churn off
 * the API server. Also the provisioned-duration gauge's bookkeeping
 * (reconcilers/raycluster/metrics.c): one entry per (namespace, name), kept
 * through removals, at most 4096.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcilers/raycluster/internal.h"
#include "reconcilers/raycluster/raycluster.h"
#include "util/util.h"

#define T0 "2026-12-02T10:00:00Z"
#define T1 "2026-12-02T10:05:00Z"

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    return j;
}

/* A RayCluster "c" with one worker group "g" (replicas, min 1, max 5), the
 * given extra spec members and old status. */
static cJSON *cluster(int replicas, const char *spec_extra, const char *status)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"c\","
             "\"namespace\":\"ns\",\"uid\":\"u1\",\"generation\":3},\"spec\":{%s%s"
             "\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":"
             "[{\"name\":\"ray-head\",\"image\":\"ray\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}},"
             "\"workerGroupSpecs\":[{\"groupName\":\"g\",\"replicas\":%d,\"minReplicas\":1,"
             "\"maxReplicas\":5,\"numOfHosts\":1,\"rayStartParams\":{},\"template\":{\"spec\":"
             "{\"containers\":[{\"name\":\"ray-worker\",\"image\":\"ray\",\"resources\":"
             "{\"requests\":{\"cpu\":\"2\"}}}]}}}]}%s%s}",
             spec_extra ? spec_extra : "", spec_extra ? "," : "", replicas,
             status ? ",\"status\":" : "", status ? status : "");
    return parse(buf);
}

static void add_pod(cJSON *pods, const char *name, const char *type, const char *phase, bool ready,
                    const char *ip)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"labels\":{\"ray.io/cluster\":\"c\","
             "\"ray.io/node-type\":\"%s\",\"ray.io/group\":\"%s\"}},\"spec\":{\"containers\":"
             "[{\"name\":\"ray\"}]},\"status\":{\"phase\":\"%s\",\"podIP\":\"%s\",\"conditions\":"
             "[{\"type\":\"Ready\",\"status\":\"%s\"%s}],\"containerStatuses\":[{\"name\":\"ray\","
             "\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\",\"message\":\"pulling\"}}}]}}",
             name, type, strcmp(type, "head") == 0 ? "headgroup" : "g", phase, ip ? ip : "",
             ready ? "True" : "False", ready ? "" : ",\"reason\":\"ContainersNotReady\"");
    cJSON_AddItemToArray(pods, parse(buf));
}

static cJSON *head_service(const char *cluster_ip, const char *ports)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "[{\"metadata\":{\"name\":\"c-head-svc\",\"namespace\":\"ns\",\"labels\":"
             "{\"ray.io/cluster\":\"c\",\"ray.io/node-type\":\"head\",\"ray.io/identifier\":\"c-head\","
             "\"app.kubernetes.io/created-by\":\"kuberay-operator\"}},\"spec\":{\"clusterIP\":\"%s\","
             "\"ports\":%s}}]", cluster_ip,
             ports ? ports : "[{\"name\":\"dashboard\",\"port\":8265,\"targetPort\":8265},"
                             "{\"name\":\"gcs-server\",\"port\":6379,\"targetPort\":6379}]");
    return parse(buf);
}

static const char *sget(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int iget(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

static const char *cond(const cJSON *st, const char *type, const char *field)
{
    return sget(rc_cond_find(st, type), field, NULL);
}

static cJSON *compute(const cJSON *rc, const cJSON *pods, const cJSON *svcs, enum rc_err e,
                      const char *now, int want_rc)
{
    cJSON *st = NULL;
    struct rc_status_in in = { .rc = rc, .pods = pods, .services = svcs, .err = e,
                               .err_message = e ? "boom" : "", .now = now };
    assert_int_equal(rc_status_compute(&in, &st), want_rc);
    return st;
}

/* status of rc replaced by st (st consumed) */
static void set_status(cJSON *rc, cJSON *st)
{
    cJSON_DeleteItemFromObjectCaseSensitive(rc, "status");
    cJSON_AddItemToObject(rc, "status", st);
}

static void test_ready_cluster(void **state)
{
    (void)state;
    cJSON *rc = cluster(2, NULL, NULL), *pods = cJSON_CreateArray();
    cJSON *svcs = head_service("None", NULL);
    add_pod(pods, "c-head-x", "head", "Running", true, "10.0.0.1");
    add_pod(pods, "w1", "worker", "Running", true, "10.0.0.2");
    add_pod(pods, "w2", "worker", "Running", true, "10.0.0.3");
    cJSON *st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_string_equal(sget(st, "state", NULL), "ready");
    assert_int_equal(iget(st, "readyWorkerReplicas"), 2);
    assert_int_equal(iget(st, "availableWorkerReplicas"), 2);
    assert_int_equal(iget(st, "desiredWorkerReplicas"), 2);
    assert_int_equal(iget(st, "minWorkerReplicas"), 1);
    assert_int_equal(iget(st, "maxWorkerReplicas"), 5);
    assert_int_equal(iget(st, "observedGeneration"), 3);
    assert_string_equal(sget(st, "desiredCPU", NULL), "5");
    assert_string_equal(sget(st, "head", "podName"), "c-head-x");
    assert_string_equal(sget(st, "head", "podIP"), "10.0.0.1");
    /* headless head Service: the head Pod's IP */
    assert_string_equal(sget(st, "head", "serviceIP"), "10.0.0.1");
    assert_string_equal(sget(st, "head", "serviceName"), "c-head-svc");
    assert_string_equal(sget(st, "endpoints", "dashboard"), "8265");
    assert_string_equal(sget(st, "endpoints", "gcs-server"), "6379");
    assert_string_equal(cond(st, "HeadPodReady", "status"), "True");
    assert_string_equal(cond(st, "HeadPodReady", "reason"), "HeadPodRunningAndReady");
    assert_string_equal(cond(st, "RayClusterProvisioned", "status"), "True");
    assert_string_equal(cond(st, "RayClusterProvisioned", "reason"), "AllPodRunningAndReadyFirstTime");
    assert_string_equal(cond(st, "RayClusterSuspended", "status"), "False");
    assert_string_equal(cond(st, "RayClusterSuspending", "status"), "False");
    assert_null(rc_cond_find(st, "ReplicaFailure"));
    assert_string_equal(sget(st, "stateTransitionTimes", "ready"), T0);
    assert_string_equal(sget(st, "lastUpdateTime", NULL), T0);
    assert_true(rc_status_differs(NULL, st));

    /* recomputed later from its own result: nothing to write, times kept */
    set_status(rc, st);
    cJSON *st2 = compute(rc, pods, svcs, RC_ERR_NONE, T1, 0);
    assert_false(rc_status_differs(cJSON_GetObjectItemCaseSensitive(rc, "status"), st2));
    assert_string_equal(sget(st2, "lastUpdateTime", NULL), T1);
    assert_string_equal(sget(st2, "stateTransitionTimes", "ready"), T0);
    assert_string_equal(cond(st2, "HeadPodReady", "lastTransitionTime"), T0);
    cJSON_Delete(st2);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_not_ready_until_every_pod(void **state)
{
    (void)state;
    cJSON *rc = cluster(2, NULL, NULL), *pods = cJSON_CreateArray();
    cJSON *svcs = head_service("10.96.0.10", NULL);
    add_pod(pods, "h", "head", "Running", true, "10.0.0.1");
    add_pod(pods, "w1", "worker", "Running", true, "10.0.0.2");
    /* one worker missing: no state */
    cJSON *st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_null(sget(st, "state", NULL));
    assert_string_equal(sget(st, "head", "serviceIP"), "10.96.0.10");
    /* KubeRay's Provisioned only asks "every Pod there Running and Ready" */
    assert_string_equal(cond(st, "RayClusterProvisioned", "status"), "True");
    cJSON_Delete(st);
    /* a worker Running but not Ready: not ready, counted available */
    add_pod(pods, "w2", "worker", "Running", false, "10.0.0.3");
    st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_null(sget(st, "state", NULL));
    assert_int_equal(iget(st, "readyWorkerReplicas"), 1);
    assert_int_equal(iget(st, "availableWorkerReplicas"), 2);
    cJSON_Delete(st);
    /* a Pending worker: not provisioned either */
    cJSON_DeleteItemFromArray(pods, 2);
    add_pod(pods, "w2", "worker", "Pending", false, NULL);
    st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_null(sget(st, "state", NULL));
    assert_string_equal(cond(st, "RayClusterProvisioned", "status"), "False");
    assert_string_equal(cond(st, "RayClusterProvisioned", "reason"), "RayClusterPodsProvisioning");
    assert_int_equal(iget(st, "availableWorkerReplicas"), 1);
    cJSON_Delete(st);
    /* every Pod ready, but the reconcile failed: not ready */
    cJSON_DeleteItemFromArray(pods, 2);
    add_pod(pods, "w2", "worker", "Running", true, "10.0.0.3");
    st = compute(rc, pods, svcs, RC_ERR_OTHER, T0, 0);
    assert_null(sget(st, "state", NULL));
    cJSON_Delete(st);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_head_not_ready_reason(void **state)
{
    (void)state;
    cJSON *rc = cluster(0, NULL, NULL), *pods = cJSON_CreateArray();
    cJSON *svcs = head_service("None", NULL);
    cJSON *st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_string_equal(cond(st, "HeadPodReady", "reason"), "HeadPodNotFound");
    assert_string_equal(cond(st, "HeadPodReady", "status"), "False");
    cJSON_Delete(st);
    add_pod(pods, "h", "head", "Running", false, "10.0.0.1");
    st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    /* ContainersNotReady is replaced by the container's own waiting reason */
    assert_string_equal(cond(st, "HeadPodReady", "reason"), "ContainerCreating");
    assert_non_null(strstr(cond(st, "HeadPodReady", "message"), "ray: pulling"));
    cJSON_Delete(st);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_replica_failure_condition(void **state)
{
    (void)state;
    cJSON *rc = cluster(1, NULL, NULL), *pods = cJSON_CreateArray();
    cJSON *svcs = head_service("None", NULL);
    add_pod(pods, "h", "head", "Running", true, "10.0.0.1");
    cJSON *st = compute(rc, pods, svcs, RC_ERR_CREATE_WORKER, T0, 0);
    assert_string_equal(cond(st, "ReplicaFailure", "status"), "True");
    assert_string_equal(cond(st, "ReplicaFailure", "reason"), "FailedCreateWorkerPod");
    assert_string_equal(cond(st, "ReplicaFailure", "message"), "boom");
    set_status(rc, st);
    /* an error without a replica reason leaves it */
    st = compute(rc, pods, svcs, RC_ERR_OTHER, T1, 0);
    assert_string_equal(cond(st, "ReplicaFailure", "reason"), "FailedCreateWorkerPod");
    assert_false(rc_status_differs(cJSON_GetObjectItemCaseSensitive(rc, "status"), st));
    cJSON_Delete(st);
    /* a clean reconcile removes it: a change to write */
    st = compute(rc, pods, svcs, RC_ERR_NONE, T1, 0);
    assert_null(rc_cond_find(st, "ReplicaFailure"));
    assert_true(rc_status_differs(cJSON_GetObjectItemCaseSensitive(rc, "status"), st));
    cJSON_Delete(st);
    assert_string_equal(rc_err_reason(RC_ERR_DELETE_ALL), "FailedDeleteAllPods");
    assert_string_equal(rc_err_reason(RC_ERR_OTHER), "");
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_suspend_cycle(void **state)
{
    (void)state;
    cJSON *rc = cluster(1, "\"suspend\":true", NULL), *pods = cJSON_CreateArray();
    cJSON *svcs = head_service("None", NULL);
    add_pod(pods, "h", "head", "Running", true, "10.0.0.1");
    add_pod(pods, "w1", "worker", "Running", true, "10.0.0.2");
    /* spec.suspend seen: Suspending, Pods still there */
    cJSON *st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_string_equal(cond(st, "RayClusterSuspending", "status"), "True");
    assert_string_equal(cond(st, "RayClusterSuspended", "status"), "False");
    assert_string_equal(sget(st, "state", NULL), "ready");
    set_status(rc, st);
    /* while Pods remain nothing changes */
    st = compute(rc, pods, svcs, RC_ERR_NONE, T1, 0);
    assert_string_equal(cond(st, "RayClusterSuspending", "status"), "True");
    assert_string_equal(sget(st, "state", NULL), "ready");
    cJSON_Delete(st);
    /* all gone: Suspended, state suspended, Provisioned reset */
    cJSON *none = cJSON_CreateArray();
    st = compute(rc, none, svcs, RC_ERR_NONE, T1, 0);
    assert_string_equal(cond(st, "RayClusterSuspending", "status"), "False");
    assert_string_equal(cond(st, "RayClusterSuspended", "status"), "True");
    assert_string_equal(cond(st, "RayClusterSuspended", "lastTransitionTime"), T1);
    assert_string_equal(cond(st, "RayClusterProvisioned", "status"), "False");
    assert_string_equal(sget(st, "state", NULL), "suspended");
    assert_string_equal(sget(st, "stateTransitionTimes", "suspended"), T1);
    assert_null(sget(st, "head", "podName"));
    set_status(rc, st);
    /* resume: Suspended False, state stays suspended until every Pod is back */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(rc, "spec"), "suspend");
    st = compute(rc, none, svcs, RC_ERR_NONE, T1, 0);
    assert_string_equal(cond(st, "RayClusterSuspended", "status"), "False");
    assert_string_equal(sget(st, "state", NULL), "suspended");
    set_status(rc, st);
    st = compute(rc, pods, svcs, RC_ERR_NONE, T1, 0);
    assert_string_equal(sget(st, "state", NULL), "ready");
    assert_string_equal(cond(st, "RayClusterProvisioned", "status"), "True");
    cJSON_Delete(st);
    cJSON_Delete(none);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_sticky_state_and_provisioned(void **state)
{
    (void)state;
    cJSON *rc = cluster(1, NULL, "{\"state\":\"ready\",\"conditions\":[{\"type\":"
                        "\"RayClusterProvisioned\",\"status\":\"True\",\"reason\":"
                        "\"AllPodRunningAndReadyFirstTime\",\"message\":\"m\","
                        "\"lastTransitionTime\":\"" T0 "\"}]}");
    cJSON *pods = cJSON_CreateArray(), *svcs = head_service("None", NULL);
    add_pod(pods, "h", "head", "Running", true, "10.0.0.1");
    add_pod(pods, "w1", "worker", "Failed", false, NULL);
    cJSON *st = compute(rc, pods, svcs, RC_ERR_NONE, T1, 0);
    assert_string_equal(sget(st, "state", NULL), "ready");
    assert_string_equal(cond(st, "RayClusterProvisioned", "status"), "True");
    assert_null(sget(st, "stateTransitionTimes", "ready"));
    cJSON_Delete(st);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_errors_stop_the_write(void **state)
{
    (void)state;
    cJSON *rc = cluster(0, NULL, NULL), *pods = cJSON_CreateArray();
    cJSON *none = cJSON_CreateArray(), *noip = head_service("", NULL);
    add_pod(pods, "h", "head", "Running", true, "10.0.0.1");
    assert_null(compute(rc, pods, none, RC_ERR_NONE, T0, -ENOENT));
    assert_null(compute(rc, pods, noip, RC_ERR_NONE, T0, -EAGAIN));
    cJSON *svcs = head_service("None", NULL);
    add_pod(pods, "h2", "head", "Running", true, "10.0.0.9");
    assert_null(compute(rc, pods, svcs, RC_ERR_NONE, T0, -EINVAL));
    struct rc_status_in bad = { .rc = rc, .pods = NULL, .services = svcs, .now = T0 };
    cJSON *st = NULL;
    assert_int_equal(rc_status_compute(&bad, &st), -EINVAL);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(none);
    cJSON_Delete(noip);
    cJSON_Delete(svcs);
}

static void test_counts_and_endpoints(void **state)
{
    (void)state;
    /* replicas above max clamp; no maxReplicas saturates at int32 max; a suspended
     * group counts for nothing */
    cJSON *rc = parse("{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":{\"headGroupSpec\":"
                      "{\"template\":{\"spec\":{\"containers\":[{\"name\":\"h\"}]}}},\"workerGroupSpecs\":["
                      "{\"groupName\":\"a\",\"replicas\":9,\"minReplicas\":0,\"maxReplicas\":3,\"numOfHosts\":2,"
                      "\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\"}]}}},"
                      "{\"groupName\":\"b\",\"replicas\":1,\"numOfHosts\":1,"
                      "\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\"}]}}},"
                      "{\"groupName\":\"s\",\"replicas\":4,\"minReplicas\":2,\"maxReplicas\":4,\"suspend\":true,"
                      "\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\"}]}}}]},"
                      "\"status\":{\"endpoints\":{\"old\":\"1\"}}}");
    cJSON *pods = cJSON_CreateArray();
    cJSON *svcs = head_service("10.96.0.1", "[{\"name\":\"dashboard\",\"port\":8265,\"nodePort\":30265,"
                               "\"targetPort\":8265},{\"name\":\"client\",\"port\":10001,"
                               "\"targetPort\":\"client\"},{\"port\":1}]");
    cJSON *st = compute(rc, pods, svcs, RC_ERR_NONE, T0, 0);
    assert_int_equal(iget(st, "desiredWorkerReplicas"), 3 * 2 + 1);
    assert_int_equal(iget(st, "minWorkerReplicas"), 0);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "maxWorkerReplicas")->valuedouble, 2147483647.0);
    assert_null(cJSON_GetObjectItemCaseSensitive(st, "readyWorkerReplicas"));   /* 0: omitted */
    assert_string_equal(sget(st, "endpoints", "dashboard"), "30265");
    assert_string_equal(sget(st, "endpoints", "client"), "client");
    assert_string_equal(sget(st, "endpoints", "old"), "1");   /* merged, never pruned */
    assert_string_equal(sget(st, "head", "serviceIP"), "10.96.0.1");
    assert_null(sget(st, "head", "podName"));
    cJSON_Delete(st);
    cJSON_Delete(rc);
    cJSON_Delete(pods);
    cJSON_Delete(svcs);
}

static void test_progress_only(void **state)
{
    (void)state;
    cJSON *a = parse("{\"state\":\"\",\"readyWorkerReplicas\":0,\"head\":{\"podName\":\"h\"},"
                     "\"conditions\":[{\"type\":\"HeadPodReady\",\"status\":\"False\","
                     "\"reason\":\"HeadPodNotFound\"}]}");
    /* counts, head details, a condition's reason: progress */
    cJSON *b = parse("{\"state\":\"\",\"readyWorkerReplicas\":2,\"availableWorkerReplicas\":3,"
                     "\"head\":{\"podName\":\"h\",\"podIP\":\"10.0.0.1\"},"
                     "\"conditions\":[{\"type\":\"HeadPodReady\",\"status\":\"False\","
                     "\"reason\":\"ContainersNotReady\"}]}");
    assert_true(rc_status_progress_only(a, b));
    /* a condition flipping, appearing, or the state changing: not */
    cJSON *c = parse("{\"state\":\"\",\"conditions\":[{\"type\":\"HeadPodReady\",\"status\":\"True\"}]}");
    assert_false(rc_status_progress_only(a, c));
    cJSON *d = parse("{\"state\":\"\",\"conditions\":[{\"type\":\"HeadPodReady\",\"status\":\"False\"},"
                     "{\"type\":\"RayClusterProvisioned\",\"status\":\"False\"}]}");
    assert_false(rc_status_progress_only(a, d));
    cJSON *e = parse("{\"state\":\"ready\",\"conditions\":[{\"type\":\"HeadPodReady\",\"status\":\"False\"}]}");
    assert_false(rc_status_progress_only(a, e));
    cJSON *f = parse("{\"state\":\"\",\"desiredWorkerReplicas\":4,"
                     "\"conditions\":[{\"type\":\"HeadPodReady\",\"status\":\"False\"}]}");
    assert_false(rc_status_progress_only(a, f));
    /* the step on which every desired worker is ready is written at once (a scale-up
     * 1 -> 2 is served when the second worker is Ready: its status must say so then);
     * the steps before it, and the counts moving once there, coalesce */
    cJSON *g = parse("{\"state\":\"ready\",\"desiredWorkerReplicas\":2,\"readyWorkerReplicas\":1,"
                     "\"availableWorkerReplicas\":1}");
    cJSON *h = parse("{\"state\":\"ready\",\"desiredWorkerReplicas\":2,\"readyWorkerReplicas\":1,"
                     "\"availableWorkerReplicas\":2}");
    cJSON *i = parse("{\"state\":\"ready\",\"desiredWorkerReplicas\":2,\"readyWorkerReplicas\":2,"
                     "\"availableWorkerReplicas\":2}");
    assert_true(rc_status_progress_only(g, h));
    assert_false(rc_status_progress_only(h, i));
    assert_false(rc_status_progress_only(g, i));
    cJSON *j = parse("{\"state\":\"ready\",\"desiredWorkerReplicas\":2,\"readyWorkerReplicas\":2,"
                     "\"availableWorkerReplicas\":3}");
    assert_true(rc_status_progress_only(i, j));
    cJSON_Delete(g);
    cJSON_Delete(h);
    cJSON_Delete(i);
    cJSON_Delete(j);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    cJSON_Delete(d);
    cJSON_Delete(e);
    cJSON_Delete(f);
}

static void test_differs_ignores_noise(void **state)
{
    (void)state;
    cJSON *a = parse("{\"state\":\"ready\",\"lastUpdateTime\":\"" T0 "\",\"observedGeneration\":1,"
                     "\"desiredCPU\":\"1\",\"head\":{},\"endpoints\":{}}");
    cJSON *b = parse("{\"state\":\"ready\",\"lastUpdateTime\":\"" T1 "\",\"observedGeneration\":2,"
                     "\"desiredCPU\":\"2\",\"readyWorkerReplicas\":0}");
    assert_false(rc_status_differs(a, b));
    cJSON *c = parse("{\"state\":\"ready\",\"readyWorkerReplicas\":1}");
    assert_true(rc_status_differs(a, c));
    cJSON *d = parse("{\"state\":\"ready\",\"conditions\":[{\"type\":\"X\",\"status\":\"True\"}]}");
    assert_true(rc_status_differs(a, d));
    char names[64];
    assert_int_equal(rc_status_changes(a, b, names, sizeof(names)), 0);
    assert_string_equal(names, "");
    cJSON *e = parse("{\"state\":\"suspended\",\"readyWorkerReplicas\":1,"
                     "\"conditions\":[{\"type\":\"X\",\"status\":\"True\"}]}");
    assert_int_equal(rc_status_changes(a, e, names, sizeof(names)), 3);
    assert_string_equal(names, "state,readyWorkerReplicas,conditions");
    /* a short buffer keeps whole names only */
    assert_int_equal(rc_status_changes(a, e, names, 12), 3);
    assert_string_equal(names, "state");
    cJSON_Delete(e);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    cJSON_Delete(d);
}

/* Observes RayCluster ns/name turning provisioned (uid "u-ns-name"). */
static void observe(const char *ns, const char *name)
{
    char j[512];
    snprintf(j, sizeof(j), "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"u-%s-%s\","
             "\"creationTimestamp\":\"%s\"}}", ns, name, ns, name, T0);
    cJSON *rc = parse(j);
    cJSON *st = parse("{\"conditions\":[{\"type\":\"RayClusterProvisioned\",\"status\":\"True\"}]}");
    raycluster__metrics_observe_provisioned(rc, NULL, st);
    cJSON_Delete(rc);
    cJSON_Delete(st);
}

/* How many gauge lines name ns/name (0 or 1 when the bookkeeping is right). */
static int gauge_lines(const char *out, const char *ns, const char *name)
{
    char want[512];
    snprintf(want, sizeof(want), "{name=\"%s\",namespace=\"%s\",uid=\"u-%s-%s\"}", name, ns, ns,
             name);
    int n = 0;
    for (const char *p = out; (p = strstr(p, want)) != NULL; p++)
        n++;
    return n;
}

static int count_lines(const char *out, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, len) == 0;
    return n;
}

static void test_provisioned_durations(void **state)
{
    (void)state;
    char name[32];
    struct buf out = { 0 };
    /* the same names in two namespaces are two clusters */
    for (int i = 0; i < 1500; i++) {
        snprintf(name, sizeof(name), "c-%d", i);
        observe("a", name);
        observe("b", name);
    }
    observe("a", "c-7"); /* again: updated in place, not added */
    for (int i = 0; i < 1500; i += 3) {
        snprintf(name, sizeof(name), "c-%d", i);
        raycluster__metrics_forget("a", name);
    }
    raycluster__metrics_forget("a", "c-0"); /* gone already: nothing happens */
    raycluster__metrics_forget("zz", "c-1");
    observe("a", "c-3"); /* back after being forgotten */
    assert_int_equal(rc_metrics(NULL, &out), 0);
    assert_int_equal(count_lines(out.data, "kuberay_cluster_provisioned_duration_seconds{"),
                     3000 - 500 + 1);
    for (int i = 0; i < 1500; i++) {
        snprintf(name, sizeof(name), "c-%d", i);
        assert_int_equal(gauge_lines(out.data, "b", name), 1);
        assert_int_equal(gauge_lines(out.data, "a", name), i % 3 != 0 || i == 3);
    }
    /* full at 4096: later clusters are not recorded, removals make room */
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof(name), "d-%d", i);
        observe("c", name);
    }
    out.len = 0;
    assert_int_equal(rc_metrics(NULL, &out), 0);
    assert_int_equal(count_lines(out.data, "kuberay_cluster_provisioned_duration_seconds{"), 4096);
    raycluster__metrics_forget("b", "c-5");
    observe("c", "late");
    out.len = 0;
    assert_int_equal(rc_metrics(NULL, &out), 0);
    assert_int_equal(gauge_lines(out.data, "c", "late"), 1);
    assert_int_equal(gauge_lines(out.data, "b", "c-5"), 0);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_cluster),
        cmocka_unit_test(test_not_ready_until_every_pod),
        cmocka_unit_test(test_head_not_ready_reason),
        cmocka_unit_test(test_replica_failure_condition),
        cmocka_unit_test(test_suspend_cycle),
        cmocka_unit_test(test_sticky_state_and_provisioned),
        cmocka_unit_test(test_errors_stop_the_write),
        cmocka_unit_test(test_counts_and_endpoints),
        cmocka_unit_test(test_differs_ignores_noise),
        cmocka_unit_test(test_progress_only),
        cmocka_unit_test(test_provisioned_durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_rayjob.c - the RayJob controller's pure parts (reconcilers/rayjob/): the
 * state machine rj_decide() walked through KubeRay's transitions (statuses,
 * reasons, messages, actions, requeues), the terminal cleanup rules, the
 * validation messages, and the objects and `ray job submit` command built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/rayjob/rayjob.h"
#include "util/json.h"

#define NOW 1800000000000LL   /* 2027-01-15T08:00:00Z */

static const char *HEAD =
    "\"rayClusterSpec\":{\"rayVersion\":\"2.52.0\",\"headGroupSpec\":{\"rayStartParams\":{},"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\","
    "\"ports\":[{\"containerPort\":8265,\"name\":\"dashboard\"}]}]}}},"
    "\"workerGroupSpecs\":[{\"groupName\":\"g\",\"replicas\":1,\"minReplicas\":0,\"maxReplicas\":5,\"rayStartParams\":{},"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"ray\"}]}}}]}";

/* A RayJob "rj" in ns "ns" with extra spec fields and a status (JSON members). */
static cJSON *rayjob(const char *spec_extra, const char *status)
{
    char buf[8192];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"rj\","
             "\"namespace\":\"ns\",\"uid\":\"u-1\",\"generation\":2,\"resourceVersion\":\"10\","
             "\"labels\":{\"team\":\"a\"},\"finalizers\":[\"ray.io/rayjob-finalizer\"]},"
             "\"spec\":{\"entrypoint\":\"python x.py\",%s%s%s},\"status\":{%s}}",
             HEAD, *spec_extra ? "," : "", spec_extra, status);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static cJSON *parse(const char *s)
{
    cJSON *o = cJSON_Parse(s);
    assert_non_null(o);
    return o;
}

static void in_init(struct rj_in *in, const cJSON *rj)
{
    memset(in, 0, sizeof(*in));
    in->rayjob = rj;
    in->info_rc = RJ_INFO_NONE;
    in->now_ms = NOW;
    strcpy(in->suffix_job, "abcde");
    strcpy(in->suffix_cluster, "vwxyz");
    rj_config_default(&in->cfg);
}

static const char *st(const struct rj_plan *p, const char *path)
{
    return rj_str(p->status, path);
}

#define RUNNING_ST "\"jobDeploymentStatus\":\"Running\",\"jobId\":\"rj-abcde\"," \
                   "\"rayClusterName\":\"rj-vwxyz\",\"dashboardURL\":\"rj-vwxyz-head-svc.ns.svc.cluster.local:8265\"," \
                   "\"startTime\":\"2027-01-15T07:59:00Z\""

static cJSON *ready_cluster(void)
{
    return parse("{\"metadata\":{\"name\":\"rj-vwxyz\",\"namespace\":\"ns\"},\"spec\":{\"workerGroupSpecs\":"
                 "[{\"groupName\":\"g\"}]},\"status\":{\"state\":\"ready\",\"readyWorkerReplicas\":1}}");
}

static void test_new_initializes(void **state)
{
    (void)state;
    cJSON *rj = rayjob("", "");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(rj, "metadata"), "finalizers");
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.actions & RJ_ADD_FINALIZER);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Initializing");
    assert_string_equal(st(&p, "jobId"), "rj-abcde");
    assert_string_equal(st(&p, "rayClusterName"), "rj-vwxyz");
    assert_string_equal(st(&p, "startTime"), "2027-01-15T08:00:00Z");
    assert_string_equal(st(&p, "jobStatus"), "");
    int64_t v;
    assert_int_equal(rj_int(p.status, "observedGeneration", &v), 0);
    assert_int_equal(v, 2);
    assert_int_equal(rj_int(p.status, "failed", &v), 0);
    assert_int_equal(v, 0);
    assert_true(p.requeue && p.requeue_ms == RJ_REQUEUE_MS);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* spec.jobId is used as the submission id; clusterSelector names the cluster */
    rj = rayjob("\"jobId\":\"mine\",\"clusterSelector\":{\"ray.io/cluster\":\"shared\"}", "");
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_false(p.actions & RJ_ADD_FINALIZER);
    assert_string_equal(st(&p, "jobId"), "mine");
    assert_string_equal(st(&p, "rayClusterName"), "shared");
    rj_plan_free(&p);
    cJSON_Delete(rj);
}

static void test_initializing(void **state)
{
    (void)state;
    cJSON *rj = rayjob("", "\"jobDeploymentStatus\":\"Initializing\",\"jobId\":\"rj-abcde\","
                       "\"rayClusterName\":\"rj-vwxyz\",\"startTime\":\"2027-01-15T07:59:00Z\"");
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    /* no cluster yet: create it, nothing to write */
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_CREATE_CLUSTER);
    assert_false(p.write_status);
    rj_plan_free(&p);
    /* cluster not ready: its status is mirrored */
    cJSON *c = parse("{\"metadata\":{\"name\":\"rj-vwxyz\"},\"status\":{\"state\":\"\",\"desiredWorkerReplicas\":1}}");
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Initializing");
    rj_plan_free(&p);
    cJSON_Delete(c);
    /* ready: dashboard URL, submitter Job, Running */
    c = ready_cluster();
    in.cluster = c;
    in.dashboard_url = "rj-vwxyz-head-svc.ns.svc.cluster.local:8265";
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_CREATE_SUBMITTER);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Running");
    assert_string_equal(st(&p, "dashboardURL"), "rj-vwxyz-head-svc.ns.svc.cluster.local:8265");
    rj_plan_free(&p);
    /* the submitter already exists (killed before the status write): not created again */
    cJSON *job = parse("{\"metadata\":{\"name\":\"rj\"}}");
    in.submitter = job;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Running");
    rj_plan_free(&p);
    cJSON_Delete(job);
    cJSON_Delete(rj);
    /* InteractiveMode waits for spec.jobId */
    rj = rayjob("\"submissionMode\":\"InteractiveMode\"",
                "\"jobDeploymentStatus\":\"Initializing\",\"rayClusterName\":\"rj-vwxyz\","
                "\"startTime\":\"2027-01-15T07:59:00Z\"");
    in_init(&in, rj);
    in.cluster = c;
    in.dashboard_url = "x:8265";
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Waiting");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"submissionMode\":\"InteractiveMode\"", "\"jobDeploymentStatus\":\"Waiting\","
                "\"rayClusterName\":\"rj-vwxyz\",\"startTime\":\"2027-01-15T07:59:00Z\"");
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_false(p.write_status);
    assert_true(p.requeue);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"submissionMode\":\"InteractiveMode\",\"jobId\":\"user-1\"",
                "\"jobDeploymentStatus\":\"Waiting\",\"rayClusterName\":\"rj-vwxyz\","
                "\"startTime\":\"2027-01-15T07:59:00Z\"");
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Running");
    assert_string_equal(st(&p, "jobId"), "user-1");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    cJSON_Delete(c);
}

static void test_selector_cluster_missing(void **state)
{
    (void)state;
    cJSON *rj = rayjob("\"clusterSelector\":{\"ray.io/cluster\":\"shared\"}",
                       "\"jobDeploymentStatus\":\"Initializing\",\"jobId\":\"rj-abcde\","
                       "\"rayClusterName\":\"shared\",\"startTime\":\"2027-01-15T07:59:00Z\"");
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.error, -ENOENT);
    assert_int_equal(p.actions, 0);   /* never created */
    assert_int_equal(p.nevents, 1);
    assert_string_equal(p.events[0].reason, "RayClusterNotFound");
    assert_string_equal(p.events[0].message, "RayCluster ns/shared set in the clusterSelector is not "
                        "found. It must be created manually");
    rj_plan_free(&p);
    cJSON_Delete(rj);
}

static void test_running_k8sjob(void **state)
{
    (void)state;
    cJSON *rj = rayjob("", RUNNING_ST);
    cJSON *c = ready_cluster();
    cJSON *job = parse("{\"metadata\":{\"name\":\"rj\"},\"status\":{\"active\":1}}");
    struct dash_job_info info = { .status = "RUNNING", .message = "Job is currently running.",
                                  .start_time_ms = 1800000000123ull };
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    in.cluster = c;
    in.submitter = job;
    in.info_rc = 0;
    in.info = &info;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobStatus"), "RUNNING");
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Running");
    assert_string_equal(st(&p, "message"), "Job is currently running.");
    assert_string_equal(st(&p, "rayJobInfo.startTime"), "2027-01-15T08:00:00Z");
    assert_string_equal(st(&p, "rayClusterStatus.state"), "ready");
    rj_plan_free(&p);
    /* SUCCEEDED but the submitter still follows the logs: not terminal yet */
    strcpy(info.status, "SUCCEEDED");
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Running");
    rj_plan_free(&p);
    cJSON_Delete(job);
    job = parse("{\"metadata\":{\"name\":\"rj\"},\"status\":{\"conditions\":[{\"type\":\"Complete\","
                "\"status\":\"True\",\"lastTransitionTime\":\"2027-01-15T07:59:59Z\"}]}}");
    in.submitter = job;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Complete");
    assert_string_equal(st(&p, "jobStatus"), "SUCCEEDED");
    assert_string_equal(st(&p, "reason"), "");
    assert_string_equal(st(&p, "endTime"), "2027-01-15T08:00:00Z");
    int64_t v;
    assert_int_equal(rj_int(p.status, "succeeded", &v), 0);
    assert_int_equal(v, 1);
    rj_plan_free(&p);
    /* not found on the dashboard while the submitter is done: AppFailed */
    in.info_rc = -ENOENT;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Failed");
    assert_string_equal(st(&p, "reason"), "AppFailed");
    assert_string_equal(st(&p, "message"), "Submitter completed but Ray job not found in RayCluster.");
    rj_plan_free(&p);
    cJSON_Delete(job);
    cJSON_Delete(c);
    cJSON_Delete(rj);
}

static void test_failures_and_backoff(void **state)
{
    (void)state;
    cJSON *rj = rayjob("\"backoffLimit\":1", RUNNING_ST ",\"jobStatus\":\"RUNNING\"");
    cJSON *c = ready_cluster();
    cJSON *job = parse("{\"metadata\":{\"name\":\"rj\"},\"status\":{\"conditions\":[{\"type\":\"Failed\","
                       "\"status\":\"True\",\"reason\":\"BackoffLimitExceeded\",\"message\":\"Job has "
                       "reached the specified backoff limit\",\"lastTransitionTime\":\"2027-01-15T07:59:59Z\"}]}}");
    struct dash_job_info info = { .status = "FAILED", .message = "Job entrypoint command failed with exit code 1" };
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    in.cluster = c;
    in.submitter = job;
    in.info_rc = 0;
    in.info = &info;
    /* the submitter failed while the job was RUNNING: SubmissionFailed, retried */
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Retrying");
    assert_string_equal(st(&p, "reason"), "SubmissionFailed");
    assert_string_equal(st(&p, "message"), "Job submission has failed. Reason: BackoffLimitExceeded. "
                        "Message: Job has reached the specified backoff limit");
    int64_t v;
    assert_int_equal(rj_int(p.status, "failed", &v), 0);
    assert_int_equal(v, 1);
    assert_string_equal(st(&p, "endTime"), "");   /* Retrying is not terminal */
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* second failure: backoffLimit 1 is used up, Failed with AppFailed */
    rj = rayjob("\"backoffLimit\":1", RUNNING_ST ",\"jobStatus\":\"FAILED\",\"failed\":1");
    in.rayjob = rj;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Failed");
    assert_string_equal(st(&p, "reason"), "AppFailed");
    assert_int_equal(rj_int(p.status, "failed", &v), 0);
    assert_int_equal(v, 2);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* retrying releases the cluster and the submitter, then starts anew with new names */
    rj = rayjob("\"backoffLimit\":1", RUNNING_ST ",\"jobStatus\":\"FAILED\",\"failed\":1");
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(rj, "status"), "jobDeploymentStatus",
                              cJSON_CreateString("Retrying"));
    in.rayjob = rj;
    in.info_rc = RJ_INFO_NONE;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_DELETE_CLUSTER | RJ_DELETE_SUBMITTER);
    assert_false(p.write_status);
    rj_plan_free(&p);
    in.cluster = NULL;
    in.submitter = NULL;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "");
    assert_string_equal(st(&p, "jobId"), "");
    assert_string_equal(st(&p, "rayClusterName"), "");
    assert_string_equal(st(&p, "jobStatus"), "");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    cJSON_Delete(job);
    cJSON_Delete(c);
}

static void test_deadlines_and_timeouts(void **state)
{
    (void)state;
    cJSON *rj = rayjob("\"activeDeadlineSeconds\":30,\"backoffLimit\":3", RUNNING_ST);
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);   /* 60 s after start */
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Failed");   /* never retried */
    assert_string_equal(st(&p, "reason"), "DeadlineExceeded");
    assert_string_equal(st(&p, "message"), "The RayJob has passed the activeDeadlineSeconds. "
                        "StartTime: 2027-01-15 07:59:00 +0000 UTC. ActiveDeadlineSeconds: 30");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* dashboard unreachable: the timer starts, then fails the job after the timeout */
    rj = rayjob("\"submissionMode\":\"HTTPMode\"", RUNNING_ST);
    cJSON *c = ready_cluster();
    in_init(&in, rj);
    in.cluster = c;
    in.info_rc = -ECONNREFUSED;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobStatusCheckFailureStartTime"), "2027-01-15T08:00:00Z");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"submissionMode\":\"HTTPMode\"", RUNNING_ST ",\"jobStatusCheckFailureStartTime\":"
                "\"2027-01-15T07:54:00Z\"");
    in.rayjob = rj;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Failed");
    assert_string_equal(st(&p, "reason"), "JobStatusCheckTimeoutExceeded");
    assert_string_equal(st(&p, "message"), "Job status checks have been failing since 2027-01-15 "
                        "07:54:00; exceeded timeout of 300s");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* HTTPMode: unknown to the dashboard -> submit; a failed submit starts the timer */
    rj = rayjob("\"submissionMode\":\"HTTPMode\"", RUNNING_ST);
    in.rayjob = rj;
    in.info_rc = -ENOENT;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_SUBMIT_HTTP | RJ_HEAD_SERVICE);
    assert_false(p.write_status);
    assert_int_equal(rj_after_submit(&in, &p, 0), 0);
    assert_false(p.write_status);
    assert_int_equal(rj_after_submit(&in, &p, -EEXIST), 0);   /* as KubeRay: a failed check */
    assert_true(p.write_status);
    assert_int_equal(rj_after_submit(&in, &p, -EIO), 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobStatusCheckFailureStartTime"), "2027-01-15T08:00:00Z");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    cJSON_Delete(c);
}

static void test_suspend_resume(void **state)
{
    (void)state;
    cJSON *rj = rayjob("\"suspend\":true,\"shutdownAfterJobFinishes\":true", RUNNING_ST);
    cJSON *c = ready_cluster(), *job = parse("{\"metadata\":{\"name\":\"rj\"}}");
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Suspending");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"suspend\":true,\"shutdownAfterJobFinishes\":true", RUNNING_ST);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(rj, "status"), "jobDeploymentStatus",
                              cJSON_CreateString("Suspending"));
    in_init(&in, rj);
    in.cluster = c;
    in.submitter = job;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_DELETE_CLUSTER | RJ_DELETE_SUBMITTER);
    rj_plan_free(&p);
    in.cluster = in.submitter = NULL;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Suspended");
    assert_string_equal(st(&p, "dashboardURL"), "");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"suspend\":true,\"shutdownAfterJobFinishes\":true", "\"jobDeploymentStatus\":\"Suspended\"");
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_false(p.write_status);
    assert_false(p.requeue);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"suspend\":false,\"shutdownAfterJobFinishes\":true", "\"jobDeploymentStatus\":\"Suspended\"");
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    cJSON_Delete(c);
    cJSON_Delete(job);
}

#define DONE_ST(js, ds, end) "\"jobStatus\":\"" js "\",\"jobDeploymentStatus\":\"" ds "\"," \
                             "\"rayClusterName\":\"rj-vwxyz\",\"endTime\":\"" end "\""

/* A spec change that moves no state (here a new ttlSecondsAfterFinished on a finished job,
 * generation 2) is still acknowledged: observedGeneration 1 -> 2 is written alone, endTime
 * kept; once current, nothing is written. A status KubeRay wrote (no observedGeneration,
 * KubeRay never sets it) is left as it is until its next change. */
static void test_observed_generation(void **state)
{
    (void)state;
    struct rj_in in;
    struct rj_plan p;
    int64_t v;
    cJSON *c = ready_cluster();
    cJSON *rj = rayjob("\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":600",
                       DONE_ST("SUCCEEDED", "Complete", "2027-01-15T07:59:55Z") ",\"observedGeneration\":1");
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_int_equal(rj_int(p.status, "observedGeneration", &v), 0);
    assert_int_equal(v, 2);
    assert_string_equal(st(&p, "endTime"), "2027-01-15T07:59:55Z");
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Complete");
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":600",
                DONE_ST("SUCCEEDED", "Complete", "2027-01-15T07:59:55Z") ",\"observedGeneration\":2");
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_false(p.write_status);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":600",
                DONE_ST("SUCCEEDED", "Complete", "2027-01-15T07:59:55Z"));
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_false(p.write_status);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* a running job whose state does not move: the same */
    cJSON *job = parse("{\"metadata\":{\"name\":\"rj\"},\"status\":{\"active\":1}}");
    struct dash_job_info info = { .status = "RUNNING", .message = "Job is currently running.",
                                  .start_time_ms = 1800000000123ull };
    rj = rayjob("", RUNNING_ST);
    in_init(&in, rj);
    in.cluster = c;
    in.submitter = job;
    in.info_rc = 0;
    in.info = &info;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);   /* RUNNING seen: a state change */
    cJSON *now_st = cJSON_Duplicate(p.status, 1);
    rj_plan_free(&p);
    assert_non_null(now_st);
    cJSON_ReplaceItemInObject(now_st, "observedGeneration", cJSON_CreateNumber(1));
    cJSON_ReplaceItemInObject(rj, "status", now_st);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_int_equal(rj_int(p.status, "observedGeneration", &v), 0);
    assert_int_equal(v, 2);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Running");
    rj_plan_free(&p);
    cJSON_ReplaceItemInObject(now_st, "observedGeneration", cJSON_CreateNumber(2));
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_false(p.write_status);
    rj_plan_free(&p);
    cJSON_Delete(job);
    cJSON_Delete(rj);
    cJSON_Delete(c);
}

static void test_terminal_cleanup(void **state)
{
    (void)state;
    struct rj_in in;
    struct rj_plan p;
    cJSON *c = ready_cluster();
    /* shutdownAfterJobFinishes: wait for the TTL (+2 s), then delete the cluster */
    cJSON *rj = rayjob("\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":10",
                       DONE_ST("SUCCEEDED", "Complete", "2027-01-15T07:59:55Z"));
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, 0);
    assert_true(p.requeue);
    assert_int_equal(p.requeue_ms, 7000);
    assert_false(p.write_status);
    rj_plan_free(&p);
    in.now_ms = NOW + 6000;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_DELETE_CLUSTER);
    assert_false(p.requeue);
    rj_plan_free(&p);
    in.cfg.delete_cr_after_finish = true;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_DELETE_SELF);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* clusterSelector: never */
    rj = rayjob("\"clusterSelector\":{\"ray.io/cluster\":\"shared\"}",
                DONE_ST("SUCCEEDED", "Complete", "2027-01-15T07:00:00Z"));
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, 0);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    /* deletion rules: the most destructive overdue rule, then requeue for the next */
    const char *rules = "\"deletionStrategy\":{\"deletionRules\":["
        "{\"condition\":{\"jobStatus\":\"SUCCEEDED\",\"ttlSeconds\":30},\"policy\":\"DeleteWorkers\"},"
        "{\"condition\":{\"jobStatus\":\"SUCCEEDED\",\"ttlSeconds\":60},\"policy\":\"DeleteCluster\"},"
        "{\"condition\":{\"jobStatus\":\"SUCCEEDED\",\"ttlSeconds\":90},\"policy\":\"DeleteSelf\"},"
        "{\"condition\":{\"jobStatus\":\"FAILED\",\"ttlSeconds\":0},\"policy\":\"DeleteCluster\"}]}";
    rj = rayjob(rules, DONE_ST("SUCCEEDED", "Complete", "2027-01-15T07:59:25Z"));
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);   /* 35 s after the end */
    assert_int_equal(p.actions, RJ_SUSPEND_WORKERS);
    assert_int_equal(p.requeue_ms, 25000 + 2000);
    rj_plan_free(&p);
    cJSON *suspended = parse("{\"metadata\":{\"name\":\"rj-vwxyz\"},\"spec\":{\"workerGroupSpecs\":"
                             "[{\"groupName\":\"g\",\"suspend\":true}]}}");
    in.cluster = suspended;
    assert_int_equal(rj_decide(&in, &p), 0);   /* workers done: nothing */
    assert_int_equal(p.actions, 0);
    rj_plan_free(&p);
    in.now_ms = NOW + 60000;                   /* 95 s: Cluster and Self overdue -> Self */
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_DELETE_SELF);
    assert_false(p.requeue);
    rj_plan_free(&p);
    in.cfg.deletion_policy_gate = false;       /* gate off: the strategy is invalid */
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "ValidationFailed");
    rj_plan_free(&p);
    cJSON_Delete(suspended);
    cJSON_Delete(rj);
    /* legacy onSuccess / onFailure with the top-level TTL */
    rj = rayjob("\"deletionStrategy\":{\"onSuccess\":{\"policy\":\"DeleteNone\"},"
                "\"onFailure\":{\"policy\":\"DeleteCluster\"}}",
                DONE_ST("FAILED", "Failed", "2027-01-15T07:59:00Z"));
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_DELETE_CLUSTER);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    cJSON_Delete(c);
}

static void test_deleting_stops_job(void **state)
{
    (void)state;
    cJSON *rj = rayjob("", RUNNING_ST ",\"jobStatus\":\"RUNNING\"");
    cJSON_AddStringToObject(cJSON_GetObjectItem(rj, "metadata"), "deletionTimestamp", "2027-01-15T08:00:00Z");
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_STOP_JOB | RJ_REMOVE_FINALIZER);
    assert_false(p.write_status);
    rj_plan_free(&p);
    cJSON_Delete(rj);
    rj = rayjob("", RUNNING_ST ",\"jobStatus\":\"SUCCEEDED\"");
    cJSON_AddStringToObject(cJSON_GetObjectItem(rj, "metadata"), "deletionTimestamp", "2027-01-15T08:00:00Z");
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_int_equal(p.actions, RJ_REMOVE_FINALIZER);
    rj_plan_free(&p);
    cJSON_Delete(rj);
}

static void test_sidecar(void **state)
{
    (void)state;
    cJSON *rj = rayjob("\"submissionMode\":\"SidecarMode\"", RUNNING_ST);
    cJSON *c = ready_cluster();
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    in.cluster = c;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "Failed");
    assert_string_equal(st(&p, "message"), "Ray head pod not found.");
    rj_plan_free(&p);
    cJSON *pod = parse("{\"status\":{\"containerStatuses\":[{\"name\":\"ray-head\"},{\"name\":"
                       "\"ray-job-submitter\",\"state\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
                       "\"finishedAt\":\"2027-01-15T07:59:59Z\"}}}]}}");
    in.head_pod = pod;
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_string_equal(st(&p, "reason"), "SubmissionFailed");
    assert_string_equal(st(&p, "message"), "Ray head pod container ray-job-submitter terminated with exit code 1: Error");
    rj_plan_free(&p);
    cJSON_Delete(pod);
    cJSON_Delete(c);
    cJSON_Delete(rj);
}

static void test_validation(void **state)
{
    (void)state;
    struct rj_config cfg;
    struct rj_invalid why;
    rj_config_default(&cfg);
    cJSON *rj = rayjob("\"suspend\":true", "");
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    assert_string_equal(why.reason, "InvalidRayJobSpec");
    assert_string_equal(why.message, "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes "
                        "set to false is not allowed to be suspended");
    cJSON_Delete(rj);
    rj = rayjob("\"ttlSecondsAfterFinished\":5", "");
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    assert_string_equal(why.message, "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes "
                        "set to false cannot have TTLSecondsAfterFinished");
    cJSON_Delete(rj);
    rj = rayjob("\"clusterSelector\":{\"ray.io/cluster\":\"c\"},\"backoffLimit\":2", "");
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    assert_string_equal(why.message, "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode");
    cJSON_Delete(rj);
    rj = rayjob("\"runtimeEnvYAML\":\"- a\\n- b\\n\"", "");
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    cJSON_Delete(rj);
    rj = rayjob("\"deletionStrategy\":{\"deletionRules\":[{\"condition\":{\"jobStatus\":\"FAILED\",\"ttlSeconds\":60},"
                "\"policy\":\"DeleteWorkers\"},{\"condition\":{\"jobStatus\":\"FAILED\",\"ttlSeconds\":30},"
                "\"policy\":\"DeleteCluster\"}]}", "");
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    assert_string_equal(why.message, "for JobStatus 'FAILED': DeleteCluster TTL (30) must be >= DeleteWorkers TTL (60)");
    cJSON_Delete(rj);
    rj = rayjob("\"submissionMode\":\"HTTPMode\",\"runtimeEnvYAML\":\"pip: [a]\\n\"", "");
    assert_int_equal(rj_validate(rj, &cfg, &why), 0);
    /* the embedded cluster spec goes through the RayCluster rules, KubeRay's wrapping */
    cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rj, "spec"),
                                                      "rayClusterSpec"), "workerGroupSpecs"), 0);
    cJSON_DeleteItemFromObject(g, "maxReplicas");
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    assert_string_equal(why.message, "The RayJob spec is invalid: worker group g must set both "
                        "minReplicas and maxReplicas when autoscaling is disabled");
    cJSON_Delete(rj);
    /* K8s token auth is refused for RayJobs (utils.IsK8sAuthEnabled), whatever the mode */
    rj = rayjob("", "");
    cJSON *rcs = cJSON_GetObjectItem(cJSON_GetObjectItem(rj, "spec"), "rayClusterSpec");
    cJSON_ReplaceItemInObject(rcs, "rayVersion", cJSON_CreateString("2.55.0"));
    cJSON *ao = cJSON_AddObjectToObject(rcs, "authOptions");
    cJSON_AddStringToObject(ao, "mode", "token");
    cJSON_AddBoolToObject(ao, "enableK8sTokenAuth", 1);
    assert_int_equal(rj_validate(rj, &cfg, &why), -EINVAL);
    assert_string_equal(why.message, "The RayJob spec is invalid: K8s token auth mode is currently "
                        "not supported for RayJob");
    cJSON_ReplaceItemInObject(ao, "enableK8sTokenAuth", cJSON_CreateFalse());
    assert_int_equal(rj_validate(rj, &cfg, &why), 0);
    cJSON_Delete(rj);
    /* a long name: ValidationFailed with a Warning Event */
    rj = rayjob("", "");
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(rj, "metadata"), "name",
                              cJSON_CreateString("a-very-long-rayjob-name-that-is-over-47-characters"));
    struct rj_in in;
    struct rj_plan p;
    in_init(&in, rj);
    assert_int_equal(rj_decide(&in, &p), 0);
    assert_true(p.write_status);
    assert_string_equal(st(&p, "jobDeploymentStatus"), "ValidationFailed");
    assert_string_equal(st(&p, "reason"), "ValidationFailed");
    assert_int_equal(p.nevents, 1);
    assert_string_equal(p.events[0].reason, "InvalidRayJobMetadata");
    assert_false(p.requeue);
    rj_plan_free(&p);
    cJSON_Delete(rj);
}

static void test_submit_command(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rj = rayjob("\"runtimeEnvYAML\":\"pip:\\n  - requests==2.26.0\\nenv_vars:\\n  counter_name: \\\"c\\\"\\n\","
                       "\"metadata\":{\"team\":\"a\"},\"entrypointNumCpus\":1.5",
                       RUNNING_ST);
    const cJSON *status = cJSON_GetObjectItem(rj, "status");
    char *cmd = rj_build_submit_command(rj, status, "K8sJobMode", false, &err);
    assert_non_null(cmd);
    const char *A = "http://rj-vwxyz-head-svc.ns.svc.cluster.local:8265";
    char want[4096];
    snprintf(want, sizeof(want),
             "until python -c \"import urllib.request; r=urllib.request.urlopen('%s/api/gcs_healthz', "
             "timeout=10); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; do echo "
             "\"Waiting for Ray Dashboard GCS to become healthy at %s ...\" ; sleep 2 ; done ; "
             "if ! ray job status --address %s rj-abcde >/dev/null 2>&1 ; then ray job submit "
             "--address %s --no-wait --runtime-env-json "
             "\"{\\\"env_vars\\\":{\\\"counter_name\\\":\\\"c\\\"},\\\"pip\\\":[\\\"requests==2.26.0\\\"]}\" "
             "--metadata-json \"{\\\"team\\\":\\\"a\\\"}\" --submission-id rj-abcde "
             "--entrypoint-num-cpus 1.500000 -- python x.py ; fi ; ray job logs --address %s "
             "--follow rj-abcde", A, A, A, A, A);
    assert_string_equal(cmd, want);
    free(cmd);
    cmd = rj_build_submit_command(rj, status, "SidecarMode", false, &err);
    assert_non_null(cmd);
    assert_non_null(strstr(cmd, "urlopen('http://localhost:8265/api/gcs_healthz'"));
    assert_non_null(strstr(cmd, "; ray job submit --address http://127.0.0.1:8265 --runtime-env-json"));
    assert_null(strstr(cmd, "--no-wait"));
    assert_null(strstr(cmd, "ray job logs"));
    assert_string_equal(cmd + strlen(cmd) - strlen("-- python x.py ;"), "-- python x.py ;");
    free(cmd);
    cJSON_Delete(rj);
}

/* An env entry of container c by name, or NULL. */
static const cJSON *env_named(const cJSON *c, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "env"))
        if (!strcmp(rj_str(e, "name"), name))
            return e;
    return NULL;
}

/* Token auth: the submitter of a token-auth cluster gets RAY_AUTH_MODE and the token from
 * the cluster's Secret (KubeRay's configureSubmitterContainer), in both submitter modes. */
static void test_submitter_token_auth(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rj = rayjob("", RUNNING_ST);
    const cJSON *status = cJSON_GetObjectItem(rj, "status");
    cJSON *cl = parse("{\"metadata\":{\"name\":\"rj-vwxyz\",\"namespace\":\"ns\"},"
                      "\"spec\":{\"authOptions\":{\"mode\":\"token\"}}}");
    cJSON *job = rj_build_submitter(rj, cl, status, &err);
    assert_non_null(job);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(job, "spec"), "template"), "spec"), "containers"), 0);
    assert_string_equal(rj_str(env_named(c0, "RAY_AUTH_MODE"), "value"), "token");
    assert_string_equal(rj_str(env_named(c0, "RAY_AUTH_TOKEN"), "valueFrom.secretKeyRef.name"), "rj-vwxyz");
    assert_string_equal(rj_str(env_named(c0, "RAY_AUTH_TOKEN"), "valueFrom.secretKeyRef.key"), "auth_token");
    cJSON_Delete(job);
    /* a user-named Secret */
    cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cl, "spec"), "authOptions"),
                            "secretName", "mine");
    job = rj_build_submitter(rj, cl, status, &err);
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(job, "spec"), "template"), "spec"), "containers"), 0);
    assert_string_equal(rj_str(env_named(c0, "RAY_AUTH_TOKEN"), "valueFrom.secretKeyRef.name"), "mine");
    cJSON_Delete(job);
    /* no token auth: no auth env */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cl, "spec"), "authOptions"),
                              "mode", cJSON_CreateString("disabled"));
    job = rj_build_submitter(rj, cl, status, &err);
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(job, "spec"), "template"), "spec"), "containers"), 0);
    assert_null(env_named(c0, "RAY_AUTH_MODE"));
    assert_null(env_named(c0, "RAY_AUTH_TOKEN"));
    cJSON_Delete(job);
    cJSON_Delete(cl);
    cJSON_Delete(rj);
    /* SidecarMode: the submitter in the head reads the new cluster's own Secret */
    rj = rayjob("\"submissionMode\":\"SidecarMode\"", RUNNING_ST);
    cJSON_AddItemToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(rj, "spec"), "rayClusterSpec"),
                          "authOptions", parse("{\"mode\":\"token\"}"));
    cJSON *c = rj_build_cluster(rj, cJSON_GetObjectItem(rj, "status"), false, &err);
    assert_non_null(c);
    const cJSON *sub = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(c, "spec"), "headGroupSpec"), "template"), "spec"),
        "containers"), 1);
    assert_string_equal(rj_str(sub, "name"), "ray-job-submitter");
    assert_string_equal(rj_str(env_named(sub, "RAY_AUTH_MODE"), "value"), "token");
    assert_string_equal(rj_str(env_named(sub, "RAY_AUTH_TOKEN"), "valueFrom.secretKeyRef.name"), "rj-vwxyz");
    cJSON_Delete(c);
    cJSON_Delete(rj);
}

static void test_objects(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rj = rayjob("\"submitterConfig\":{\"backoffLimit\":5}", RUNNING_ST);
    const cJSON *status = cJSON_GetObjectItem(rj, "status");
    cJSON *c = rj_build_cluster(rj, status, false, &err);
    assert_non_null(c);
    assert_string_equal(rj_str(c, "metadata.name"), "rj-vwxyz");
    assert_string_equal(rj_str(c, "metadata.labels.team"), "a");
    const cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "metadata"), "labels");
    assert_string_equal(cJSON_GetObjectItem(labels, "ray.io/originated-from-crd")->valuestring, "RayJob");
    assert_string_equal(cJSON_GetObjectItem(labels, "ray.io/job-submission-mode")->valuestring, "K8sJobMode");
    const cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "metadata"),
                                                             "ownerReferences"), 0);
    assert_string_equal(rj_str(ref, "uid"), "u-1");
    assert_true(rj_bool(ref, "controller"));
    assert_string_equal(rj_str(c, "spec.rayVersion"), "2.52.0");
    cJSON_Delete(c);
    cJSON *job = rj_build_submitter(rj, NULL, status, &err);
    assert_non_null(job);
    assert_string_equal(rj_str(job, "metadata.name"), "rj");
    int64_t v;
    assert_int_equal(rj_int(job, "spec.backoffLimit", &v), 0);
    assert_int_equal(v, 5);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(job, "spec"), "template"), "spec"), "containers"), 0);
    assert_string_equal(rj_str(c0, "name"), "ray-job-submitter");
    assert_string_equal(rj_str(c0, "image"), "rayproject/ray:2.52.0");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(c0, "command"), 1)->valuestring, "-ce");
    const cJSON *env = cJSON_GetObjectItem(c0, "env");
    assert_string_equal(rj_str(cJSON_GetArrayItem(env, 2), "name"), "RAY_JOB_SUBMISSION_ID");
    assert_string_equal(rj_str(cJSON_GetArrayItem(env, 2), "value"), "rj-abcde");
    assert_string_equal(rj_str(job, "spec.template.spec.restartPolicy"), "Never");
    cJSON_Delete(job);
    cJSON_Delete(rj);
    /* clusterSelector: no rayClusterSpec; the image is the selected cluster's head's */
    rj = parse("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"sel\","
               "\"namespace\":\"ns\",\"uid\":\"u-2\"},\"spec\":{\"entrypoint\":\"python x.py\","
               "\"clusterSelector\":{\"ray.io/cluster\":\"rc\"}},\"status\":{\"jobId\":\"sel-1\","
               "\"dashboardURL\":\"rc-head-svc.ns.svc.cluster.local:8265\"}}");
    cJSON *picked = parse("{\"metadata\":{\"name\":\"rc\"},\"spec\":{\"headGroupSpec\":{\"template\":"
                          "{\"spec\":{\"containers\":[{\"name\":\"ray-head\","
                          "\"image\":\"rayproject/ray:2.46.0\"}]}}}}}");
    job = rj_build_submitter(rj, picked, cJSON_GetObjectItem(rj, "status"), &err);
    assert_non_null(job);
    assert_string_equal(rj_str(cJSON_GetArrayItem(json_get(job, "spec.template.spec.containers"), 0),
                               "image"), "rayproject/ray:2.46.0");
    cJSON_Delete(job);
    cJSON_Delete(picked);
    cJSON_Delete(rj);
    /* SidecarMode: the submitter goes into the head Pod, which never restarts */
    rj = rayjob("\"submissionMode\":\"SidecarMode\"", RUNNING_ST);
    c = rj_build_cluster(rj, cJSON_GetObjectItem(rj, "status"), false, &err);
    assert_non_null(c);
    const cJSON *tspec = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(c, "spec"), "headGroupSpec"), "template"), "spec");
    assert_string_equal(rj_str(tspec, "restartPolicy"), "Never");
    const cJSON *sub = cJSON_GetArrayItem(cJSON_GetObjectItem(tspec, "containers"), 1);
    assert_string_equal(rj_str(sub, "name"), "ray-job-submitter");
    assert_string_equal(rj_str(sub, "restartPolicy"), "");
    assert_null(strstr(cJSON_GetArrayItem(cJSON_GetObjectItem(sub, "args"), 0)->valuestring, "ray job status"));
    cJSON_Delete(c);
    /* SidecarSubmitterRestart: the submitter restarts on failure and guards with ray job status */
    c = rj_build_cluster(rj, cJSON_GetObjectItem(rj, "status"), true, &err);
    assert_non_null(c);
    tspec = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(c, "spec"), "headGroupSpec"), "template"), "spec");
    sub = cJSON_GetArrayItem(cJSON_GetObjectItem(tspec, "containers"), 1);
    assert_string_equal(rj_str(sub, "restartPolicy"), "OnFailure");
    assert_non_null(strstr(cJSON_GetArrayItem(cJSON_GetObjectItem(sub, "args"), 0)->valuestring,
                           "if ! ray job status --address http://127.0.0.1:8265 rj-abcde"));
    assert_string_equal(rj_str(c, "metadata.annotations.ray\\.io/x"), "");
    cJSON_Delete(c);
    cJSON_Delete(rj);
    /* the status has no dashboardURL yet: RAY_DASHBOARD_ADDRESS goes without a value, as Go's
     * omitempty EnvVar sends it (not "value": "") */
    rj = rayjob("\"submissionMode\":\"SidecarMode\"",
                "\"jobDeploymentStatus\":\"Initializing\",\"jobId\":\"rj-abcde\"");
    c = rj_build_cluster(rj, cJSON_GetObjectItem(rj, "status"), false, &err);
    assert_non_null(c);
    tspec = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(c, "spec"), "headGroupSpec"), "template"), "spec");
    sub = cJSON_GetArrayItem(cJSON_GetObjectItem(tspec, "containers"), 1);
    {
        const cJSON *e, *addr = NULL, *id = NULL;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(sub, "env")) {
            if (!strcmp(rj_str(e, "name"), "RAY_DASHBOARD_ADDRESS"))
                addr = e;
            if (!strcmp(rj_str(e, "name"), "RAY_JOB_SUBMISSION_ID"))
                id = e;
        }
        assert_non_null(addr);
        assert_null(cJSON_GetObjectItem(addr, "value"));
        assert_non_null(id);
        assert_string_equal(rj_str(id, "value"), "rj-abcde");
    }
    cJSON_Delete(c);
    cJSON_Delete(rj);
    /* NAME-head-svc: the cluster's head Service under the RayJob's name and ownership */
    rj = rayjob("", RUNNING_ST);
    cJSON *cl = parse("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rj-vwxyz\","
                      "\"namespace\":\"ns\",\"uid\":\"c-1\"},\"spec\":{\"headGroupSpec\":{\"rayStartParams\":{},"
                      "\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"r\",\"ports\":"
                      "[{\"containerPort\":8265,\"name\":\"dashboard\"}]}]}}}}}");
    cJSON *svc = rj_build_head_service(rj, cl, &err);
    assert_non_null(svc);
    assert_string_equal(rj_str(svc, "metadata.name"), "rj-head-svc");
    assert_string_equal(rj_str(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "metadata"),
                                                  "ownerReferences"), 0), "uid"), "u-1");
    const cJSON *sel = cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "spec"), "selector");
    assert_string_equal(cJSON_GetObjectItem(sel, "ray.io/cluster")->valuestring, "rj-vwxyz");
    const cJSON *sl = cJSON_GetObjectItem(cJSON_GetObjectItem(svc, "metadata"), "labels");
    assert_string_equal(cJSON_GetObjectItem(sl, "ray.io/identifier")->valuestring, "rj-head");
    assert_string_equal(cJSON_GetObjectItem(sl, "ray.io/originated-from-cr-name")->valuestring, "rj");
    /* the label the watcher caches Services by: without it the Service is never seen */
    assert_string_equal(cJSON_GetObjectItem(sl, "app.kubernetes.io/created-by")->valuestring,
                        "kuberay-operator");
    cJSON_Delete(svc);
    cJSON_Delete(cl);
    cJSON_Delete(rj);
    /* HTTPMode body */
    rj = rayjob("\"submissionMode\":\"HTTPMode\",\"entrypointResources\":\"{\\\"r\\\":1}\"", RUNNING_ST);
    char *body = rj_build_submit_body(rj, cJSON_GetObjectItem(rj, "status"), &err);
    assert_non_null(body);
    cJSON *b = parse(body);
    assert_string_equal(rj_str(b, "submission_id"), "rj-abcde");
    assert_string_equal(rj_str(b, "entrypoint"), "python x.py");
    assert_int_equal(rj_int(b, "entrypoint_resources.r", &v), 0);
    cJSON_Delete(b);
    free(body);
    cJSON_Delete(rj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_initializes),
        cmocka_unit_test(test_initializing),
        cmocka_unit_test(test_selector_cluster_missing),
        cmocka_unit_test(test_running_k8sjob),
        cmocka_unit_test(test_submitter_token_auth),
        cmocka_unit_test(test_failures_and_backoff),
        cmocka_unit_test(test_deadlines_and_timeouts),
        cmocka_unit_test(test_suspend_resume),
        cmocka_unit_test(test_terminal_cleanup),
        cmocka_unit_test(test_observed_generation),
        cmocka_unit_test(test_deleting_stops_job),
        cmocka_unit_test(test_sidecar),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_submit_command),
        cmocka_unit_test(test_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_ray.c - kubesim's simulated Ray runtime, pure parts: the submitter command parser
 * (KubeRay's generated command, argv forms, env expansion, errors and bounds) and the
 * dashboard handlers at chosen times (job states, errors real Ray gives, Serve states). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/ray/internal.h"

/* The args[0] KubeRay v1.7 builds for K8sJobMode (common/job.go BuildJobSubmitCommand). */
static const char kuberay_cmd[] =
    "until python -c \"import urllib.request; r=urllib.request.urlopen('http://rj-head-svc.ns1."
    "svc.cluster.local:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() "
    "else 1)\" >/dev/null 2>&1 ; do echo \"Waiting for Ray Dashboard GCS to become healthy at "
    "http://rj-head-svc.ns1.svc.cluster.local:8265 ...\" ; sleep 2 ; done ; if ! ray job status "
    "--address http://rj-head-svc.ns1.svc.cluster.local:8265 rj-abc12 >/dev/null 2>&1 ; then ray "
    "job submit --address http://rj-head-svc.ns1.svc.cluster.local:8265 --no-wait "
    "--runtime-env-json \"{\\\"env_vars\\\":{\\\"counter_name\\\":\\\"test_counter\\\"},\\\"pip\\\""
    ":[\\\"requests==2.26.0\\\"]}\" --metadata-json \"{\\\"a\\\":\\\"b\\\"}\" --submission-id "
    "rj-abc12 --entrypoint-num-cpus 1.000000 -- python /home/ray/samples/sample_code.py ; fi ; "
    "ray job logs --address http://rj-head-svc.ns1.svc.cluster.local:8265 --follow rj-abc12";

static cJSON *container(const char *command_json, const char *args_json, const char *env_json)
{
    char txt[16384];

    snprintf(txt, sizeof(txt), "{\"name\":\"c\",\"command\":%s,\"args\":%s,\"env\":%s}",
             command_json, args_json, env_json ? env_json : "[]");
    cJSON *c = cJSON_Parse(txt);
    assert_non_null(c);
    return c;
}

static int from_container(cJSON *ct, struct ray_script **s, char *err, size_t n)
{
    int rc = ray__script_from_container(ct, s, err, n);
    cJSON_Delete(ct);
    return rc;
}

static void test_kuberay_command(void **state)
{
    cJSON *args = cJSON_CreateArray(), *ct;
    struct ray_script *s = NULL;
    const struct ray_node *n, *c;
    char err[256] = "", *argv_txt;

    (void)state;
    cJSON_AddItemToArray(args, cJSON_CreateString(kuberay_cmd));
    argv_txt = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    ct = container("[\"/bin/bash\",\"-ce\",\"--\"]", argv_txt, NULL);
    free(argv_txt);
    assert_int_equal(from_container(ct, &s, err, sizeof(err)), 0);
    assert_true(s->errexit);
    /* until <health> ; do echo ... ; sleep 2 ; done */
    n = s->list;
    assert_int_equal(n->kind, RN_UNTIL);
    assert_int_equal(n->cond->kind, RN_CMD);
    assert_string_equal(n->cond->argv[0], "python");
    assert_string_equal(n->cond->argv[1], "-c");
    assert_non_null(strstr(n->cond->argv[2], "urlopen('http://rj-head-svc.ns1.svc.cluster.local:"
                                              "8265/api/gcs_healthz', timeout=10)"));
    assert_true(n->cond->quiet_out && n->cond->quiet_err);
    assert_string_equal(n->body->argv[0], "echo");
    assert_string_equal(n->body->argv[1], "Waiting for Ray Dashboard GCS to become healthy at "
                        "http://rj-head-svc.ns1.svc.cluster.local:8265 ...");
    assert_string_equal(n->body->next->argv[0], "sleep");
    /* if ! ray job status ... ; then ray job submit ... ; fi */
    n = n->next;
    assert_int_equal(n->kind, RN_IF);
    c = n->cond;
    assert_true(c->negate);
    assert_int_equal(c->argc, 6);
    assert_string_equal(c->argv[2], "status");
    assert_string_equal(c->argv[5], "rj-abc12");
    assert_true(c->quiet_out && c->quiet_err);
    c = n->body;
    assert_string_equal(c->argv[2], "submit");
    assert_string_equal(c->argv[5], "--no-wait");
    assert_string_equal(c->argv[6], "--runtime-env-json");
    assert_string_equal(c->argv[7], "{\"env_vars\":{\"counter_name\":\"test_counter\"},"
                                    "\"pip\":[\"requests==2.26.0\"]}");
    assert_string_equal(c->argv[9], "{\"a\":\"b\"}");
    assert_string_equal(c->argv[c->argc - 3], "--");
    assert_string_equal(c->argv[c->argc - 2], "python");
    assert_string_equal(c->argv[c->argc - 1], "/home/ray/samples/sample_code.py");
    assert_null(n->els);
    /* ray job logs --address ... --follow ID */
    n = n->next;
    assert_int_equal(n->kind, RN_CMD);
    assert_string_equal(n->argv[2], "logs");
    assert_string_equal(n->argv[5], "--follow");
    assert_null(n->next);
    ray__script_free(s);
}

static void test_argv_forms(void **state)
{
    struct ray_script *s = NULL;
    char err[256];

    (void)state;
    /* a plain argv keeps its words whole */
    assert_int_equal(from_container(container("[\"ray\",\"job\",\"submit\"]",
        "[\"--address\",\"http://h:8265\",\"--\",\"python\",\"a b.py\",\"it's\"]", NULL),
        &s, err, sizeof(err)), 0);
    assert_false(s->errexit);
    assert_int_equal(s->list->argc, 9);
    assert_string_equal(s->list->argv[7], "a b.py");
    assert_string_equal(s->list->argv[8], "it's");
    ray__script_free(s);
    /* the light-weight submitter, env expansion in a bash script */
    assert_int_equal(from_container(container("[\"/submitter\"]",
        "[\"--runtime-env-json\",\"{}\",\"--\",\"python\",\"x.py\"]", NULL), &s, err, sizeof(err)), 0);
    assert_string_equal(s->list->argv[0], "/submitter");
    ray__script_free(s);
    assert_int_equal(from_container(container("[\"sh\",\"-c\"]",
        "[\"ray job submit --address=http://$RAY_DASHBOARD_ADDRESS --submission-id=${ID}x -- 'a'\\\"b\\\" && echo ok || false\"]",
        "[{\"name\":\"RAY_DASHBOARD_ADDRESS\",\"value\":\"svc:8265\"},{\"name\":\"ID\",\"value\":\"j1\"}]"),
        &s, err, sizeof(err)), 0);
    assert_string_equal(s->list->argv[3], "--address=http://svc:8265");
    assert_string_equal(s->list->argv[4], "--submission-id=j1x");
    assert_string_equal(s->list->argv[6], "ab");
    assert_int_equal(s->list->next->join, RJ_AND);
    assert_int_equal(s->list->next->next->join, RJ_OR);
    ray__script_free(s);
    /* elif/else nest under one fi; comments are skipped */
    assert_int_equal(from_container(container("[\"bash\",\"-c\"]",
        "[\"# submit\\nif false; then echo a; elif true; then ray job list; else echo c; fi\"]", NULL),
        &s, err, sizeof(err)), 0);
    assert_int_equal(s->list->kind, RN_IF);
    assert_int_equal(s->list->els->kind, RN_IF);
    assert_string_equal(s->list->els->els->argv[1], "c");
    ray__script_free(s);
    /* KubeRay v1.5's sidecar wait: a pipe joins wget to grep (the redirections are grep's),
     * a newline after '|' continues the pipeline */
    assert_int_equal(from_container(container("[\"/bin/bash\",\"-ce\",\"--\"]",
        "[\"until wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz |\\n"
        " grep success >/dev/null 2>&1 ; do sleep 2 ; done ; ray job submit -- python a.py\"]",
        NULL), &s, err, sizeof(err)), 0);
    assert_int_equal(s->list->kind, RN_UNTIL);
    assert_string_equal(s->list->cond->argv[0], "wget");
    assert_false(s->list->cond->quiet_out);
    assert_non_null(s->list->cond->next);
    assert_int_equal(s->list->cond->next->join, RJ_PIPE);
    assert_string_equal(s->list->cond->next->argv[0], "grep");
    assert_true(s->list->cond->next->quiet_out && s->list->cond->next->quiet_err);
    assert_null(s->list->cond->next->next);
    assert_int_equal(s->list->next->join, RJ_SEQ);
    ray__script_free(s);
}

static void test_not_submitters_and_errors(void **state)
{
    struct ray_script *s = NULL;
    char err[256];
    struct buf deep = { 0 };

    (void)state;
    assert_int_equal(from_container(container("[\"sleep\"]", "[\"10\"]", NULL), &s, err, sizeof(err)),
                     -ENOENT);
    assert_int_equal(from_container(container("[\"/bin/bash\",\"-c\"]", "[\"echo ray job\"]", NULL),
                                    &s, err, sizeof(err)), -ENOENT);
    assert_int_equal(from_container(container("[]", "[]", NULL), &s, err, sizeof(err)), -ENOENT);
    /* bash without -c runs a script file: not something we can read */
    assert_int_equal(from_container(container("[\"bash\"]", "[\"run.sh\"]", NULL), &s, err, sizeof(err)),
                     -ENOENT);
    assert_int_equal(from_container(container("[\"bash\",\"-c\"]", "[\"ray job submit 'x\"]", NULL),
                                    &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "unexpected EOF"));
    assert_int_equal(from_container(container("[\"bash\",\"-c\"]",
        "[\"if ray job status x; then echo\"]", NULL), &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "syntax error"));
    assert_int_equal(from_container(container("[\"bash\",\"-c\"]", "[\"ray job list; fi\"]", NULL),
                                    &s, err, sizeof(err)), -EINVAL);
    /* nesting is bounded */
    for (int i = 0; i < 40; i++)
        buf_puts(&deep, "if true; then ");
    buf_puts(&deep, "ray job list");
    for (int i = 0; i < 40; i++)
        buf_puts(&deep, "; fi");
    {
        struct ray_node *n = NULL;
        assert_int_equal(ray__script_parse_text(deep.data, deep.len, NULL, &n, err, sizeof(err)), -E2BIG);
        assert_null(n);
    }
    buf_free(&deep);
    assert_null(s);
}

/* ---- dashboard ---------------------------------------------------------------------------- */

static struct ray_resp call(struct ray_cluster *c, uint64_t now, const char *method,
                            const char *path, const char *body)
{
    struct ray_resp r;

    assert_int_equal(ray_dashboard_serve(c, now, method, path, body, body ? strlen(body) : 0, &r), 0);
    assert_non_null(r.body);
    return r;
}

static char *field(struct ray_resp r, const char *k)
{
    cJSON *j = cJSON_Parse(r.body);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    char *s = cJSON_IsString(v) ? strdup(v->valuestring) : cJSON_IsBool(v) ?
              strdup(cJSON_IsTrue(v) ? "true" : "false") : cJSON_PrintUnformatted(v);
    cJSON_Delete(j);
    free(r.body);
    return s;
}

static void expect(struct ray_cluster *c, uint64_t now, const char *method, const char *path,
                   const char *body, const char *k, const char *want)
{
    char *got = field(call(c, now, method, path, body), k);

    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_jobs(void **state)
{
    struct ray_cluster *c = ray_cluster_new("ns", "rc", "10.0.0.5");
    const uint64_t t0 = 1700000000000ull;
    struct ray_resp r;

    (void)state;
    expect(c, t0, "POST", "/api/jobs/", "{\"entrypoint\":\"python a.py\",\"submission_id\":\"j1\","
           "\"runtime_env\":{\"env_vars\":{\"KUBESIM_JOB_SECONDS\":\"10\"}}}", "job_id", "j1");
    expect(c, t0 + 100, "GET", "/api/jobs/j1", NULL, "status", "PENDING");
    expect(c, t0 + 100, "GET", "/api/jobs/j1", NULL, "message",
           "Job has not started yet. It may be waiting for the runtime environment to be set up.");
    expect(c, t0 + 100, "GET", "/api/jobs/j1", NULL, "driver_info", "null");
    expect(c, t0 + 600, "GET", "/api/jobs/j1", NULL, "status", "RUNNING");
    expect(c, t0 + 600, "GET", "/api/jobs/j1", NULL, "driver_agent_http_address",
           "http://10.0.0.5:52365");
    expect(c, t0 + 11000, "GET", "/api/jobs/j1", NULL, "status", "SUCCEEDED");
    expect(c, t0 + 11000, "GET", "/api/jobs/j1", NULL, "end_time", "1700000010500");
    expect(c, t0 + 11000, "GET", "/api/jobs/j1", NULL, "driver_exit_code", "0");
    /* duplicate: 500 with the agent's ValueError, which KubeRay matches on */
    r = call(c, t0 + 1, "POST", "/api/jobs/", "{\"entrypoint\":\"x\",\"submission_id\":\"j1\"}");
    assert_int_equal(r.code, 500);
    assert_non_null(strstr(r.body, "Job with submission_id j1 already exists. Please use a "
                                   "different submission_id."));
    free(r.body);
    /* a failing job, stop while running, stop when finished, delete rules */
    free(call(c, t0, "POST", "/api/jobs/", "{\"entrypoint\":\"b\",\"submission_id\":\"j2\","
              "\"metadata\":{\"KUBESIM_JOB_EXIT\":\"3\",\"KUBESIM_JOB_SECONDS\":\"1\"}}").body);
    expect(c, t0 + 2000, "GET", "/api/jobs/j2", NULL, "status", "FAILED");
    expect(c, t0 + 2000, "GET", "/api/jobs/j2", NULL, "error_type", "JOB_ENTRYPOINT_COMMAND_ERROR");
    expect(c, t0 + 2000, "GET", "/api/jobs/j2", NULL, "driver_exit_code", "3");
    free(call(c, t0, "POST", "/api/jobs/", "{\"entrypoint\":\"c\",\"submission_id\":\"j3\"}").body);
    r = call(c, t0 + 1000, "DELETE", "/api/jobs/j3", NULL);
    assert_int_equal(r.code, 500);
    assert_non_null(strstr(r.body, "non-terminal state RUNNING"));
    free(r.body);
    expect(c, t0 + 1000, "POST", "/api/jobs/j3/stop", NULL, "stopped", "true");
    expect(c, t0 + 1001, "GET", "/api/jobs/j3", NULL, "status", "STOPPED");
    expect(c, t0 + 9000, "GET", "/api/jobs/j3", NULL, "status", "STOPPED");
    expect(c, t0 + 9000, "POST", "/api/jobs/j3/stop", NULL, "stopped", "false");
    expect(c, t0 + 9000, "DELETE", "/api/jobs/j3", NULL, "deleted", "true");
    r = call(c, t0 + 9000, "GET", "/api/jobs/j3", NULL);
    assert_int_equal(r.code, 404);
    assert_string_equal(r.body, "Job j3 does not exist");
    free(r.body);
    /* logs grow with time and name the entrypoint */
    r = call(c, t0 + 100, "GET", "/api/jobs/j1/logs", NULL);
    assert_string_equal(r.body, "{\"logs\":\"\"}");
    free(r.body);
    r = call(c, t0 + 11000, "GET", "/api/jobs/j1/logs", NULL);
    assert_non_null(strstr(r.body, "running entrypoint for job j1: python a.py"));
    assert_non_null(strstr(r.body, "step 10/10"));
    free(r.body);
    /* list in submission order; generated ids */
    r = call(c, t0, "GET", "/api/jobs/", NULL);
    assert_true(strstr(r.body, "\"j1\"") < strstr(r.body, "\"j2\""));
    free(r.body);
    r = call(c, t0, "POST", "/api/jobs/", "{\"entrypoint\":\"d\"}");
    assert_non_null(strstr(r.body, "\"raysubmit_"));
    free(r.body);
    /* bad input */
    assert_int_equal((r = call(c, t0, "POST", "/api/jobs/", "{}")).code, 400);
    free(r.body);
    assert_int_equal((r = call(c, t0, "POST", "/api/jobs/", "[1")).code, 400);
    free(r.body);
    assert_int_equal((r = call(c, t0, "POST", "/api/jobs/", "{\"entrypoint\":\"x\",\"metadata\":"
                                "{\"a\":1}}")).code, 400);
    free(r.body);
    assert_int_equal((r = call(c, t0, "PATCH", "/api/jobs/", NULL)).code, 405);
    free(r.body);
    assert_int_equal((r = call(c, t0, "GET", "/api/nothing", NULL)).code, 404);
    free(r.body);
    expect(c, t0, "GET", "/api/version", NULL, "version", "4");
    r = call(c, t0, "GET", "/api/gcs_healthz", NULL);
    assert_string_equal(r.body, "success");
    free(r.body);
    ray_cluster_free(c);
}

static void test_serve(void **state)
{
    struct ray_cluster *c = ray_cluster_new("ns", "rc", "10.0.0.5");
    const uint64_t t0 = 1700000000000ull;
    const char *cfg = "{\"applications\":[{\"name\":\"a\",\"import_path\":\"m:app\",\"route_prefix\":"
                      "\"/a\"},{\"name\":\"b\",\"import_path\":\"m:b\",\"runtime_env\":{\"env_vars\":"
                      "{\"KUBESIM_SERVE_STATUS\":\"DEPLOY_FAILED\"}}}]}";
    struct ray_resp r;
    cJSON *j;

    (void)state;
    r = call(c, t0, "GET", "/api/serve/applications/", NULL);
    assert_non_null(strstr(r.body, "\"applications\":{}"));
    free(r.body);
    assert_int_equal((r = call(c, t0, "PUT", "/api/serve/applications/", cfg)).code, 200);
    free(r.body);
    assert_int_equal(c->serve_puts, 1);
    assert_int_equal(c->serve_puts_same, 0);
    /* the same config again changes nothing: counted apart; a target_capacity is a change */
    assert_int_equal((r = call(c, t0 + 1, "PUT", "/api/serve/applications/", cfg)).code, 200);
    free(r.body);
    assert_int_equal(c->serve_puts_same, 1);
    {
        char *tc = strdup(cfg);
        assert_non_null(tc);
        tc[strlen(tc) - 1] = '\0';
        char with_tc[600];
        snprintf(with_tc, sizeof(with_tc), "%s,\"target_capacity\":50}", tc);
        free(tc);
        assert_int_equal((r = call(c, t0 + 2, "PUT", "/api/serve/applications/", with_tc)).code, 200);
        free(r.body);
        assert_int_equal((r = call(c, t0 + 3, "PUT", "/api/serve/applications/", cfg)).code, 200);
        free(r.body);
    }
    assert_int_equal(c->serve_puts, 4);
    assert_int_equal(c->serve_puts_same, 1);
    r = call(c, t0 + 10, "GET", "/api/serve/applications/", NULL);
    j = cJSON_Parse(r.body);
    free(r.body);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(j, "applications"), "a"), "status")), "DEPLOYING");
    cJSON_Delete(j);
    r = call(c, t0 + 5000, "GET", "/api/serve/applications/", NULL);
    j = cJSON_Parse(r.body);
    free(r.body);
    {
        const cJSON *apps = cJSON_GetObjectItem(j, "applications");
        const cJSON *a = cJSON_GetObjectItem(apps, "a"), *b = cJSON_GetObjectItem(apps, "b");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(a, "status")), "RUNNING");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
            cJSON_GetObjectItem(a, "deployments"), "app"), "status")), "HEALTHY");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(b, "status")), "DEPLOY_FAILED");
    }
    cJSON_Delete(j);
    /* Serve's HTTP proxy: health, routes (only deployed apps), longest route_prefix */
    assert_int_equal(ray__serve_http(c, t0 + 5000, "GET", "/-/healthz", &r), 0);
    assert_string_equal(r.body, "success");
    free(r.body);
    assert_int_equal(ray__serve_http(c, t0 + 5000, "GET", "/-/routes", &r), 0);
    assert_string_equal(r.body, "{\"/a\":\"a\"}");
    free(r.body);
    assert_int_equal(ray__serve_http(c, t0 + 5000, "POST", "/a/predict", &r), 0);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(r.body, "application 'a'"));
    free(r.body);
    assert_int_equal(ray__serve_http(c, t0 + 5000, "GET", "/ab", &r), 0);
    assert_int_equal(r.code, 404);
    free(r.body);
    assert_int_equal(ray__serve_http(c, t0 + 10, "GET", "/a", &r), 0);
    assert_int_equal(r.code, 404);   /* still DEPLOYING */
    free(r.body);
    /* forced unhealthy, then a re-PUT without b: a keeps its state (same config), b goes */
    assert_int_equal(ray__serve_force(c, "a", "UNHEALTHY", "boom"), 0);
    assert_int_equal(ray__serve_force(c, "a", "BOGUS", NULL), -EINVAL);
    assert_int_equal(ray__serve_force(c, "zz", "UNHEALTHY", NULL), -ENOENT);
    free(call(c, t0 + 6000, "PUT", "/api/serve/applications/", "{\"applications\":[{\"name\":\"a\","
              "\"import_path\":\"m:app\",\"route_prefix\":\"/a\"}]}").body);
    assert_int_equal(c->serve_puts_same, 1);   /* b went: a change */
    r = call(c, t0 + 6001, "GET", "/api/serve/applications/", NULL);
    assert_non_null(strstr(r.body, "\"status\":\"UNHEALTHY\""));
    assert_null(strstr(r.body, "\"b\":"));
    free(r.body);
    /* validation */
    assert_int_equal((r = call(c, t0, "PUT", "/api/serve/applications/", "{}")).code, 400);
    free(r.body);
    assert_int_equal((r = call(c, t0, "PUT", "/api/serve/applications/",
                               "{\"applications\":[{\"name\":\"x\"}]}")).code, 400);
    free(r.body);
    assert_int_equal((r = call(c, t0, "PUT", "/api/serve/applications/", "{\"applications\":["
                               "{\"import_path\":\"a\"},{\"import_path\":\"b\"}]}")).code, 400);
    assert_non_null(strstr(r.body, "duplicate application names"));
    free(r.body);
    assert_int_equal((r = call(c, t0, "DELETE", "/api/serve/applications/", NULL)).code, 200);
    free(r.body);
    r = call(c, t0, "GET", "/api/serve/applications/", NULL);
    assert_non_null(strstr(r.body, "\"applications\":{}"));
    free(r.body);
    ray_cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kuberay_command),
        cmocka_unit_test(test_argv_forms),
        cmocka_unit_test(test_not_submitters_and_errors),
        cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

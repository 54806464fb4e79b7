/* test_dashboard.c - the Ray Dashboard client (dashboard/) against a
 * scripted HTTP server: request shapes (method, path, body) of each Jobs API
 * call in direct and API-server-proxy mode, the mapping of answers (404, the
 * duplicate submission id, stop of an ended job, bad bodies) to errors, and the
 * pure codecs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "dashboard/dashboard.h"
#include "util/util.h"
#include "tests/unit/kube_testsrv.h"

struct fixture {
    struct ts_server srv;
    struct kube_config *cfg;
    struct kube_client *kc;
    struct dash_target direct, proxy;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    char addr[64];
    if (!f || ts_start(&f->srv, NULL, NULL) < 0)
        return -1;
    f->cfg = ts_config(&f->srv, 0, "tok-secret");
    struct kube_client_opts o = { .max_retries = -1 };
    if (kube_client_new(f->cfg, &o, &f->kc) < 0)
        return -1;
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->srv.port);
    if (dash_target_direct(&f->direct, addr) < 0 ||
        dash_target_proxy(&f->proxy, f->kc, "ns1", "rc-head-svc", "dashboard") < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    kube_client_free(f->kc);
    kube_config_free(f->cfg);
    ts_stop(&f->srv);
    free(f);
    return 0;
}

static struct ts_request *last(struct fixture *f)
{
    int n = ts_nlog(&f->srv);
    assert_true(n > 0);
    return &f->srv.log[n - 1];
}

static void test_targets(void **state)
{
    (void)state;
    struct dash_target t;
    assert_int_equal(dash_target_direct(&t, "svc.ns.svc.cluster.local:8265"), 0);
    assert_string_equal(t.base, "http://svc.ns.svc.cluster.local:8265");
    assert_int_equal(t.timeout_ms, DASH_DIRECT_TIMEOUT_MS);
    assert_int_equal(dash_target_direct(&t, "http://h:1/"), 0);
    assert_string_equal(t.base, "http://h:1");
    assert_int_equal(dash_target_direct(&t, "file:///etc/passwd"), -EINVAL);
    assert_int_equal(dash_target_direct(&t, ""), -EINVAL);
    struct kube_client *fake = (struct kube_client *)&t;   /* only stored */
    assert_int_equal(dash_target_proxy(&t, fake, "ns", "a/b", "dashboard"), -EINVAL);
    assert_int_equal(dash_target_proxy(&t, fake, "ns", "svc", "8265"), 0);
    assert_string_equal(t.base, "/api/v1/namespaces/ns/services/svc:8265/proxy");
    assert_int_equal(t.timeout_ms, DASH_PROXY_TIMEOUT_MS);
}

static void check_get(struct fixture *f, const struct dash_target *t, const char *want_path)
{
    struct dash_job_info info;
    ts_push(&f->srv, 200,
            "{\"status\":\"SUCCEEDED\",\"message\":\"Job finished successfully.\","
            "\"job_id\":\"02000000\",\"submission_id\":\"rj-abcde\",\"start_time\":1700000000123,"
            "\"end_time\":1700000005123,\"entrypoint\":\"python x.py\",\"error_type\":null}",
            NULL, NULL, 0);
    assert_int_equal(dash_job_get(t, "rj-abcde", &info), 0);
    assert_string_equal(last(f)->method, "GET");
    assert_string_equal(last(f)->path, want_path);
    assert_string_equal(info.status, "SUCCEEDED");
    assert_string_equal(info.message, "Job finished successfully.");
    assert_string_equal(info.submission_id, "rj-abcde");
    assert_true(info.start_time_ms == 1700000000123ull);
    assert_true(info.end_time_ms == 1700000005123ull);
    ts_push(&f->srv, 404, "Job rj-nope does not exist", NULL, NULL, 0);
    assert_int_equal(dash_job_get(t, "rj-nope", &info), -ENOENT);
    ts_push(&f->srv, 503, "busy", NULL, NULL, 0);
    assert_int_equal(dash_job_get(t, "rj-x", &info), -EIO);
    ts_push(&f->srv, 200, "not json", NULL, NULL, 0);
    assert_int_equal(dash_job_get(t, "rj-x", &info), -EPROTO);
    assert_int_equal(dash_job_get(t, "../../etc", &info), -EINVAL);
}

static void test_get_direct(void **state)
{
    struct fixture *f = *state;
    check_get(f, &f->direct, "/api/jobs/rj-abcde");
}

static void test_get_proxy(void **state)
{
    struct fixture *f = *state;
    check_get(f, &f->proxy, "/api/v1/namespaces/ns1/services/rc-head-svc:dashboard/proxy/api/jobs/rj-abcde");
    /* through the API server: the client's bearer token went along */
    assert_string_equal(last(f)->auth, "Bearer tok-secret");
    assert_string_equal(last(f)->x_ray_auth, "");
}

/* A token-auth cluster: x-ray-authorization on every call, direct and proxied (the API
 * server keeps Authorization for itself); a token that could inject a header is refused. */
static void test_ray_token(void **state)
{
    struct fixture *f = *state;
    struct dash_job_info info;
    assert_int_equal(dash_target_set_token(&f->direct, "abc\r\nX-Evil: 1", 14), -EINVAL);
    assert_int_equal(dash_target_set_token(&f->direct, "", 0), -EINVAL);
    assert_int_equal(dash_target_set_token(&f->direct, "ray-tok", 7), 0);
    assert_int_equal(dash_target_set_token(&f->proxy, "ray-tok", 7), 0);
    for (int i = 0; i < 2; i++) {
        ts_push(&f->srv, 200, "{\"status\":\"RUNNING\"}", NULL, NULL, 0);
        assert_int_equal(dash_job_get(i ? &f->proxy : &f->direct, "rj-a", &info), 0);
        assert_string_equal(last(f)->x_ray_auth, "Bearer ray-tok");
    }
    assert_string_equal(last(f)->auth, "Bearer tok-secret");
    dash_target_wipe(&f->direct);
    assert_string_equal(f->direct.auth_header, "");
    ts_push(&f->srv, 200, "{\"status\":\"RUNNING\"}", NULL, NULL, 0);
    assert_int_equal(dash_job_get(&f->direct, "rj-a", &info), 0);
    assert_string_equal(last(f)->x_ray_auth, "");
}

static void check_submit(struct fixture *f, const struct dash_target *t, const char *want_path)
{
    char id[DASH_ID_MAX];
    cJSON *env = cJSON_Parse("{\"pip\":[\"requests\"]}");
    cJSON *md = cJSON_Parse("{\"team\":\"a\"}");
    struct dash_submit s = { .entrypoint = "python x.py", .submission_id = "rj-abcde",
                             .runtime_env = env, .metadata = md, .num_cpus = 1.5 };
    char *body = dash_submit_body(&s);
    assert_non_null(body);
    ts_push(&f->srv, 200, "{\"job_id\":\"rj-abcde\",\"submission_id\":\"rj-abcde\"}", NULL, NULL, 0);
    assert_int_equal(dash_job_submit(t, body, strlen(body), id, sizeof(id)), 0);
    assert_string_equal(id, "rj-abcde");
    assert_string_equal(last(f)->method, "POST");
    assert_string_equal(last(f)->path, want_path);
    cJSON *sent = cJSON_Parse(last(f)->body);
    assert_non_null(sent);
    assert_string_equal(cJSON_GetObjectItem(sent, "entrypoint")->valuestring, "python x.py");
    assert_string_equal(cJSON_GetObjectItem(sent, "submission_id")->valuestring, "rj-abcde");
    assert_true(cJSON_GetObjectItem(sent, "entrypoint_num_cpus")->valuedouble == 1.5);
    assert_null(cJSON_GetObjectItem(sent, "entrypoint_num_gpus"));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(sent, "metadata"), "team")->valuestring, "a");
    assert_non_null(cJSON_GetObjectItem(sent, "runtime_env"));
    cJSON_Delete(sent);
    ts_push(&f->srv, 500, "ValueError: Job with submission_id rj-abcde already exists. "
            "Please use a different submission_id.", NULL, NULL, 0);
    assert_int_equal(dash_job_submit(t, body, strlen(body), id, sizeof(id)), -EEXIST);
    ts_push(&f->srv, 400, "bad entrypoint", NULL, NULL, 0);
    assert_int_equal(dash_job_submit(t, body, strlen(body), id, sizeof(id)), -EIO);
    free(body);
    cJSON_Delete(env);
    cJSON_Delete(md);
}

static void test_submit_direct(void **state)
{
    struct fixture *f = *state;
    check_submit(f, &f->direct, "/api/jobs/");
}

static void test_submit_proxy(void **state)
{
    struct fixture *f = *state;
    check_submit(f, &f->proxy, "/api/v1/namespaces/ns1/services/rc-head-svc:dashboard/proxy/api/jobs/");
}

static void test_stop_delete_logs(void **state)
{
    struct fixture *f = *state;
    ts_push(&f->srv, 200, "{\"stopped\":true}", NULL, NULL, 0);
    assert_int_equal(dash_job_stop(&f->direct, "rj-1"), 0);
    assert_string_equal(last(f)->method, "POST");
    assert_string_equal(last(f)->path, "/api/jobs/rj-1/stop");
    /* not stopped but already over: fine; not stopped and running: -EBUSY */
    ts_push(&f->srv, 200, "{\"stopped\":false}", NULL, NULL, 0);
    ts_push(&f->srv, 200, "{\"status\":\"FAILED\"}", NULL, NULL, 0);
    assert_int_equal(dash_job_stop(&f->direct, "rj-1"), 0);
    ts_push(&f->srv, 200, "{\"stopped\":false}", NULL, NULL, 0);
    ts_push(&f->srv, 200, "{\"status\":\"RUNNING\"}", NULL, NULL, 0);
    assert_int_equal(dash_job_stop(&f->direct, "rj-1"), -EBUSY);
    ts_push(&f->srv, 404, "no such job", NULL, NULL, 0);
    assert_int_equal(dash_job_stop(&f->proxy, "rj-1"), -ENOENT);

    ts_push(&f->srv, 200, "true", NULL, NULL, 0);
    assert_int_equal(dash_job_delete(&f->proxy, "rj-1"), 0);
    assert_string_equal(last(f)->method, "DELETE");

    char *logs = NULL;
    ts_push(&f->srv, 200, "{\"logs\":\"hello\\nworld\\n\"}", NULL, NULL, 0);
    assert_int_equal(dash_job_logs(&f->direct, "rj-1", &logs), 0);
    assert_string_equal(logs, "hello\nworld\n");
    assert_string_equal(last(f)->path, "/api/jobs/rj-1/logs");
    free(logs);
    ts_push(&f->srv, 404, "", NULL, NULL, 0);
    assert_int_equal(dash_job_logs(&f->direct, "rj-1", &logs), -ENOENT);
    assert_null(logs);
}

/* Through the API server a GET's 5xx is retried with back-off, but a probe's is its
 * answer: the Serve proxy health check of a head that lost its Ray state answered 503, and
 * the retries held up every RayService queued behind it for seconds (the chaos soak). */
static void test_probe_not_retried(void **state)
{
    struct fixture *f = *state;
    struct kube_client_opts o = { .backoff_base_ms = 1, .backoff_max_ms = 2 };
    struct kube_client *kc = NULL;
    struct dash_target t;
    struct dash_reply r = { 0 };
    assert_int_equal(kube_client_new(f->cfg, &o, &kc), 0);
    assert_int_equal(dash_target_proxy(&t, kc, "ns1", "rc-head-svc", "dashboard"), 0);

    /* a plain GET: the 503 is retried, the 200 after it is the answer */
    ts_push(&f->srv, 503, "no healthy upstream", NULL, NULL, 0);
    ts_push(&f->srv, 200, "success", NULL, NULL, 0);
    int n0 = ts_nlog(&f->srv);
    assert_int_equal(dash_call(&t, "GET", "/-/healthz", NULL, 0, &r), 0);
    assert_int_equal(r.code, 200);
    assert_int_equal(ts_nlog(&f->srv) - n0, 2);
    dash_reply_free(&r);

    /* a probe: one request, its 503 returned */
    t.probe = true;
    ts_push(&f->srv, 503, "no healthy upstream", NULL, NULL, 0);
    ts_push(&f->srv, 200, "success", NULL, NULL, 0);
    n0 = ts_nlog(&f->srv);
    assert_int_equal(dash_call(&t, "GET", "/-/healthz", NULL, 0, &r), 0);
    assert_int_equal(r.code, 503);
    assert_int_equal(ts_nlog(&f->srv) - n0, 1);
    dash_reply_free(&r);
    kube_client_free(kc);
}

static void test_unreachable(void **state)
{
    (void)state;
    struct dash_target t;
    struct dash_job_info info;
    assert_int_equal(dash_target_direct(&t, "127.0.0.1:1"), 0);
    assert_int_equal(dash_job_get(&t, "rj-1", &info), -ECONNREFUSED);
}

static void test_codecs(void **state)
{
    (void)state;
    struct dash_job_info info;
    char id[DASH_ID_MAX];
    bool stopped;
    assert_int_equal(dash_parse_job_info("{\"status\":\"WEIRD\"}", 18, &info), -EPROTO);
    assert_int_equal(dash_parse_job_info("{\"status\":7}", 12, &info), -EPROTO);
    assert_int_equal(dash_parse_job_info("{\"start_time\":-1}", 17, &info), -EPROTO);
    assert_int_equal(dash_parse_job_info("[]", 2, &info), -EPROTO);
    assert_int_equal(dash_parse_job_info("{}", 2, &info), 0);
    assert_string_equal(info.status, "");
    assert_int_equal(dash_parse_submit("{\"submission_id\":\"s1\"}", 22, id, sizeof(id)), 0);
    assert_string_equal(id, "s1");
    assert_int_equal(dash_parse_submit("{}", 2, id, sizeof(id)), -EPROTO);
    assert_int_equal(dash_parse_stop("{\"stopped\":\"yes\"}", 17, &stopped), -EPROTO);
    assert_true(dash_job_status_terminal("STOPPED"));
    assert_false(dash_job_status_terminal("RUNNING"));
    assert_int_equal(dash_id_valid("raysubmit_ABC.1-2"), 0);
    assert_int_equal(dash_id_valid("a b"), -EINVAL);
    struct dash_submit s = { .entrypoint = NULL };
    assert_null(dash_submit_body(&s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test_setup_teardown(test_get_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_proxy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ray_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_proxy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_delete_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_not_retried, setup, teardown),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_codecs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

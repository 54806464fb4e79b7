/* test_kube_client.c - the blocking kube/ client against a scripted libmicrohttpd
 * server: request shape (paths, queries, headers, bodies), retry policy (429 with
 * Retry-After, 5xx, non-idempotent calls, connection refused), Status parsing and
 * errno mapping, the QPS limiter on a fake clock, keep-alive reuse counted on the
 * server, response size bounds, token secrecy in debug logs and 401 token reload,
 * and TLS verification against a throwaway CA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "util/util.h"

#include "kube_testsrv.h"

/* A fake clock whose sleeps advance time; records every sleep. */
struct fake_clock {
    uint64_t now;
    uint64_t slept;
    int nsleeps;
    uint64_t sleeps[64];
};

static uint64_t fake_now(void *arg)
{
    return ((struct fake_clock *)arg)->now;
}

static void fake_sleep(void *arg, uint64_t ns)
{
    struct fake_clock *fc = arg;
    fc->now += ns;
    fc->slept += ns;
    if (fc->nsleeps < 64)
        fc->sleeps[fc->nsleeps] = ns;
    fc->nsleeps++;
}

struct fixture {
    struct ts_server srv;
    struct kube_config *cfg;
    struct kube_client *c;
    struct fake_clock fc;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (ts_start(&f->srv, NULL, NULL) < 0)
        return -1;
    f->cfg = ts_config(&f->srv, 0, "tok-abc");
    f->fc.now = 1000000000ull;
    struct kube_client_opts o = { 0 };
    o.clock.now_ns = fake_now;
    o.clock.sleep_ns = fake_sleep;
    o.clock.arg = &f->fc;
    if (kube_client_new(f->cfg, &o, &f->c) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    kube_client_free(f->c);
    kube_config_free(f->cfg);
    ts_stop(&f->srv);
    free(f);
    return 0;
}

static void test_get_request_shape_and_result(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    ts_push(&f->srv, 200, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"42\"}}",
            NULL, NULL, 0);
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns1", "p1", &res), 0);
    assert_int_equal(res.http_code, 200);
    assert_int_equal(res.attempts, 1);
    assert_string_equal(res.resource_version, "42");
    assert_string_equal(cJSON_GetObjectItem(res.body, "kind")->valuestring, "Pod");
    struct ts_request *q = &f->srv.log[0];
    assert_string_equal(q->method, "GET");
    assert_string_equal(q->path, "/api/v1/namespaces/ns1/pods/p1");
    assert_string_equal(q->auth, "Bearer tok-abc");
    assert_non_null(strstr(q->user_agent, "rayop/" KUBE_VERSION " ("));
    assert_non_null(strstr(q->accept_encoding, "gzip"));
    kube_result_release(&res);
    assert_null(res.body);

    /* Group resources and cluster scope. */
    assert_int_equal(kube_get(f->c, &KUBE_RES_RAYCLUSTERS, "ray", "rc", &res), 0);
    assert_string_equal(f->srv.log[1].path, "/apis/ray.io/v1/namespaces/ray/rayclusters/rc");
    kube_result_release(&res);
    assert_int_equal(kube_get(f->c, &KUBE_RES_NAMESPACES, "ignored", "ns9", &res), 0);
    assert_string_equal(f->srv.log[2].path, "/api/v1/namespaces/ns9");
    kube_result_release(&res);
    /* A name that would escape the path, or a namespaced object without a
     * namespace, is refused before any request. */
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns1", "../x", &res), -EINVAL);
    kube_result_release(&res);
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, NULL, "p1", &res), -EINVAL);
    kube_result_release(&res);
    cJSON *nons = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
    assert_int_equal(kube_create(f->c, &KUBE_RES_PODS, NULL, nons, &res), -EINVAL);
    kube_result_release(&res);
    cJSON_Delete(nons);
    assert_int_equal(ts_nlog(&f->srv), 3);
}

static void test_list_query_is_escaped(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_list_opts lo = {
        .label_selector = "ray.io/node-type in (head,worker)",
        .field_selector = "status.phase!=Failed",
        .limit = 500, .continue_token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==",
        .resource_version = "0", .resource_version_match = "NotOlderThan",
    };
    ts_push(&f->srv, 200, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"77\"},\"items\":[]}",
            NULL, NULL, 0);
    assert_int_equal(kube_list(f->c, &KUBE_RES_PODS, NULL, &lo, &res), 0);
    assert_string_equal(f->srv.log[0].path, "/api/v1/pods");
    assert_string_equal(f->srv.log[0].query,
                        "labelSelector=ray.io/node-type in (head,worker)&"
                        "fieldSelector=status.phase!=Failed&limit=500&"
                        "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==&resourceVersion=0&"
                        "resourceVersionMatch=NotOlderThan");
    assert_string_equal(res.resource_version, "77");
    kube_result_release(&res);
}

static void test_write_verbs(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    cJSON *obj = cJSON_Parse("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                             "\"metadata\":{\"name\":\"rc\",\"namespace\":\"ray\"}}");

    ts_push(&f->srv, 201, "{\"metadata\":{\"name\":\"rc\",\"resourceVersion\":\"5\"}}", NULL, NULL, 0);
    assert_int_equal(kube_create(f->c, &KUBE_RES_RAYCLUSTERS, NULL, obj, &res), 0);
    assert_string_equal(res.resource_version, "5");
    assert_string_equal(f->srv.log[0].method, "POST");
    assert_string_equal(f->srv.log[0].path, "/apis/ray.io/v1/namespaces/ray/rayclusters");
    assert_string_equal(f->srv.log[0].content_type, "application/json");
    assert_non_null(strstr(f->srv.log[0].body, "\"kind\":\"RayCluster\""));
    kube_result_release(&res);

    cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion", "5");
    ts_push(&f->srv, 200, "{\"metadata\":{\"resourceVersion\":\"6\"}}", NULL, NULL, 0);
    assert_int_equal(kube_update_status(f->c, &KUBE_RES_RAYCLUSTERS, NULL, obj, &res), 0);
    assert_string_equal(f->srv.log[1].method, "PUT");
    assert_string_equal(f->srv.log[1].path, "/apis/ray.io/v1/namespaces/ray/rayclusters/rc/status");
    assert_string_equal(res.resource_version, "6");
    kube_result_release(&res);

    struct kube_patch_opts po = { KUBE_PATCH_APPLY, "rayop", 1, NULL };
    const char *patch = "{\"spec\":{}}";
    assert_int_equal(kube_patch(f->c, &KUBE_RES_RAYCLUSTERS, "ray", "rc", patch, strlen(patch),
                                &po, &res), 0);
    assert_string_equal(f->srv.log[2].method, "PATCH");
    assert_string_equal(f->srv.log[2].content_type, "application/apply-patch+yaml");
    assert_string_equal(f->srv.log[2].query, "fieldManager=rayop&force=true");
    assert_string_equal(f->srv.log[2].body, patch);
    kube_result_release(&res);
    po.field_manager = NULL; /* apply without a field manager is refused locally */
    assert_int_equal(kube_patch(f->c, &KUBE_RES_RAYCLUSTERS, "ray", "rc", patch, strlen(patch),
                                &po, &res), -EINVAL);
    assert_int_equal(ts_nlog(&f->srv), 3);
    kube_result_release(&res);
    struct kube_patch_opts mp = { KUBE_PATCH_MERGE, NULL, 0, "status" };
    assert_int_equal(kube_patch(f->c, &KUBE_RES_RAYCLUSTERS, "ray", "rc", patch, strlen(patch),
                                &mp, &res), 0);
    assert_string_equal(f->srv.log[3].content_type, "application/merge-patch+json");
    assert_string_equal(f->srv.log[3].path, "/apis/ray.io/v1/namespaces/ray/rayclusters/rc/status");
    kube_result_release(&res);

    struct kube_delete_opts dopt = { "Foreground", 0, "uid-1", "6" };
    assert_int_equal(kube_delete(f->c, &KUBE_RES_RAYCLUSTERS, "ray", "rc", &dopt, &res), 0);
    assert_string_equal(f->srv.log[4].method, "DELETE");
    cJSON *body = cJSON_Parse(f->srv.log[4].body);
    assert_string_equal(cJSON_GetObjectItem(body, "propagationPolicy")->valuestring, "Foreground");
    assert_int_equal(cJSON_GetObjectItem(body, "gracePeriodSeconds")->valueint, 0);
    cJSON *pre = cJSON_GetObjectItem(body, "preconditions");
    assert_string_equal(cJSON_GetObjectItem(pre, "uid")->valuestring, "uid-1");
    assert_string_equal(cJSON_GetObjectItem(pre, "resourceVersion")->valuestring, "6");
    cJSON_Delete(body);
    kube_result_release(&res);

    struct kube_list_opts sel = { .label_selector = "ray.io/cluster=rc" };
    struct kube_delete_opts bg = { "Background", -1, NULL, NULL };
    assert_int_equal(kube_delete_collection(f->c, &KUBE_RES_PODS, "ray", &sel, &bg, &res), 0);
    assert_string_equal(f->srv.log[5].path, "/api/v1/namespaces/ray/pods");
    assert_string_equal(f->srv.log[5].query, "labelSelector=ray.io/cluster=rc");
    assert_null(strstr(f->srv.log[5].body, "gracePeriodSeconds"));
    kube_result_release(&res);
    cJSON_Delete(obj);
}

static void test_429_retry_after_is_honoured(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    ts_push(&f->srv, 429, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
            "\"code\":429}", "Retry-After", "3", 0);
    ts_push(&f->srv, 200, "{\"metadata\":{\"resourceVersion\":\"9\"}}", NULL, NULL, 0);
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    assert_int_equal(res.attempts, 2);
    assert_int_equal(f->fc.nsleeps, 1);
    assert_int_equal(f->fc.sleeps[0], 3000000000ull);
    kube_result_release(&res);

    /* Retry-After from Status details when there is no header; POSTs retry on 429 too. */
    ts_push(&f->srv, 429, "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"code\":429,"
            "\"details\":{\"retryAfterSeconds\":2}}", NULL, NULL, 0);
    ts_push(&f->srv, 201, "{}", NULL, NULL, 0);
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
    assert_int_equal(kube_create(f->c, &KUBE_RES_PODS, "ns", obj, &res), 0);
    assert_int_equal(res.attempts, 2);
    assert_int_equal(f->fc.sleeps[1], 2000000000ull);
    kube_result_release(&res);

    /* kube_create_once: the 429 comes back to the caller, no wait, no second POST */
    ts_push(&f->srv, 429, "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"code\":429}",
            NULL, NULL, 0);
    ts_push(&f->srv, 201, "{}", NULL, NULL, 0);
    int posts = ts_nlog(&f->srv);
    assert_int_equal(kube_create_once(f->c, &KUBE_RES_PODS, "ns", obj, NULL, &res), -EAGAIN);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(res.http_code, 429);
    assert_int_equal(f->fc.nsleeps, 2);
    assert_int_equal(ts_nlog(&f->srv), posts + 1);
    kube_result_release(&res);
    assert_int_equal(kube_create_once(f->c, &KUBE_RES_PODS, "ns", obj, NULL, &res), 0);
    assert_int_equal(res.attempts, 1);
    cJSON_Delete(obj);
    kube_result_release(&res);
}

static void test_5xx_retried_with_growing_backoff_for_idempotent(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    ts_push(&f->srv, 500, "oops", NULL, NULL, 0);
    ts_push(&f->srv, 503, "", NULL, NULL, 0);
    ts_push(&f->srv, 504, "", NULL, NULL, 0);
    ts_push(&f->srv, 200, "{}", NULL, NULL, 0);
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    assert_int_equal(res.attempts, 4);
    assert_int_equal(f->fc.nsleeps, 3);
    /* base 200 ms doubled per attempt, jittered within the upper half. */
    for (int i = 0; i < 3; i++) {
        uint64_t d = 200000000ull << i;
        assert_in_range(f->fc.sleeps[i], d / 2, d);
    }
    kube_result_release(&res);

    /* Always failing: gives up after max_retries (5) with the mapped error. */
    f->srv.dflt.code = 503;
    assert_int_equal(kube_delete(f->c, &KUBE_RES_PODS, "ns", "p", NULL, &res), -EIO);
    assert_int_equal(res.attempts, 6);
    assert_int_equal(res.status.code, 503);
    assert_string_equal(res.status.reason, "ServiceUnavailable");
    kube_result_release(&res);
    f->srv.dflt.code = 0;
}

static void test_non_idempotent_not_retried_on_500(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
    ts_push(&f->srv, 500, "{\"kind\":\"Status\",\"code\":500,\"reason\":\"InternalError\","
            "\"message\":\"etcd hiccup\"}", NULL, NULL, 0);
    assert_int_equal(kube_create(f->c, &KUBE_RES_PODS, "ns", obj, &res), -EIO);
    assert_int_equal(res.attempts, 1);
    assert_string_equal(res.status.message, "etcd hiccup");
    kube_result_release(&res);
    /* PUT without resourceVersion is not idempotent either; PATCH never is. */
    ts_push(&f->srv, 502, "", NULL, NULL, 0);
    assert_int_equal(kube_update(f->c, &KUBE_RES_PODS, "ns", obj, &res), -EIO);
    assert_int_equal(res.attempts, 1);
    kube_result_release(&res);
    ts_push(&f->srv, 503, "", NULL, NULL, 0);
    assert_int_equal(kube_patch(f->c, &KUBE_RES_PODS, "ns", "x", "{}", 2, NULL, &res), -EIO);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(ts_nlog(&f->srv), 3);
    assert_int_equal(f->fc.nsleeps, 0);
    kube_result_release(&res);
    cJSON_Delete(obj);
}

static void test_status_errors_are_typed(void **state)
{
    struct fixture *f = *state;
    static const struct { int code; const char *reason; int err; } cases[] = {
        { 404, "NotFound", -ENOENT }, { 409, "AlreadyExists", -EEXIST },
        { 409, "Conflict", -ESTALE }, { 403, "Forbidden", -EACCES },
        { 401, "Unauthorized", -EACCES }, { 410, "Expired", -KUBE_EGONE },
        { 400, "BadRequest", -EINVAL }, { 415, "UnsupportedMediaType", -ENOTSUP },
    };
    struct kube_result res = { 0 };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
                 "\"Failure\",\"message\":\"m%zu\",\"reason\":\"%s\",\"code\":%d}", i,
                 cases[i].reason, cases[i].code);
        ts_push(&f->srv, cases[i].code, body, NULL, NULL, 0);
        int rc = kube_get(f->c, &KUBE_RES_PODS, "ns", "p", &res);
        if (rc != cases[i].err)
            fail_msg("%s: got %d (%s)", cases[i].reason, rc, kube_strerror(rc));
        assert_int_equal(res.status.code, cases[i].code);
        assert_string_equal(res.status.reason, cases[i].reason);
        assert_int_equal(res.attempts, 1);
        kube_result_release(&res);
    }
    ts_push(&f->srv, 422, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Invalid\",\"code\":422,"
            "\"message\":\"RayCluster.ray.io \\\"x\\\" is invalid\",\"details\":{\"causes\":["
            "{\"reason\":\"FieldValueRequired\",\"message\":\"Required value\",\"field\":\"spec.headGroupSpec\"},"
            "{\"reason\":\"FieldValueInvalid\",\"message\":\"bad\",\"field\":\"spec.x\"}]}}",
            NULL, NULL, 0);
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "p", &res), -EINVAL);
    assert_int_equal(res.status.ncauses, 2);
    assert_string_equal(res.status.causes[0].field, "spec.headGroupSpec");
    assert_string_equal(res.status.causes[1].reason, "FieldValueInvalid");
    assert_non_null(res.body); /* the Status object itself */
    /* what a reconciler reports: the server's words and every field cause,
     * not "invalid" */
    char why[512];
    assert_string_equal(kube_result_error(&res, -EINVAL, why, sizeof(why)),
                        "RayCluster.ray.io \"x\" is invalid; spec.headGroupSpec: Required value; "
                        "spec.x: bad");
    kube_result_release(&res);
    struct kube_result none = { 0 };
    assert_string_equal(kube_result_error(&none, -EINVAL, why, sizeof(why)), "invalid");
    /* A 2xx body that is not JSON is a protocol error. */
    ts_push(&f->srv, 200, "<html>", NULL, NULL, 0);
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "p", &res), -EPROTO);
    kube_result_release(&res);
    /* kube_status_parse refuses non-Status JSON and garbage. */
    struct kube_status st;
    assert_int_equal(kube_status_parse("{\"kind\":\"Pod\"}", 14, &st), -EPROTO);
    assert_int_equal(kube_status_parse("{", 1, &st), -EPROTO);
}

static void test_connection_refused(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_config *cfg = ts_config(&f->srv, 0, NULL);
    struct kube_client *c;
    struct fake_clock fc = { .now = 1 };
    struct kube_client_opts o = { .max_retries = 2 };
    /* Port 1 on loopback: nothing listens, the kernel refuses at once. */
    free(cfg->server);
    cfg->server = strdup("http://127.0.0.1:1");
    o.clock.now_ns = fake_now;
    o.clock.sleep_ns = fake_sleep;
    o.clock.arg = &fc;
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
    /* Refused means no byte reached a server: even POST is retried. */
    assert_int_equal(kube_create(c, &KUBE_RES_PODS, "ns", obj, &res), -ECONNREFUSED);
    assert_int_equal(res.attempts, 3);
    assert_int_equal(fc.nsleeps, 2);
    kube_result_release(&res);
    cJSON_Delete(obj);
    kube_client_free(c);
    kube_config_free(cfg);
}

static void test_limiter_rates_on_fake_clock(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_client *c;
    struct fake_clock fc = { .now = 5000000000ull };
    struct kube_client_opts o = { .qps = 10, .burst = 5 };
    struct kube_client_stats st;
    (void)state;
    o.clock.now_ns = fake_now;
    o.clock.sleep_ns = fake_sleep;
    o.clock.arg = &fc;
    assert_int_equal(kube_client_new(f->cfg, &o, &c), 0);
    for (int i = 0; i < 25; i++) {
        assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
        kube_result_release(&res);
    }
    /* 5 from the burst, then 20 at 10/s: 2 s of waiting, in 100 ms steps. */
    assert_int_equal(fc.nsleeps, 20);
    assert_in_range(fc.slept, 1999000000ull, 2001000000ull);
    assert_in_range(fc.sleeps[0], 99000000ull, 101000000ull);
    kube_client_get_stats(c, &st);
    assert_int_equal(st.requests, 25);
    assert_in_range(st.throttled_ns, 1999000000ull, 2001000000ull);
    kube_client_free(c);

    /* The bucket itself: reservations queue up, idle time refills up to burst. */
    struct kube_limiter l;
    kube__limiter_init(&l, 2, 2, 0);
    assert_int_equal(kube__limiter_reserve(&l, 0), 0);
    assert_int_equal(kube__limiter_reserve(&l, 0), 0);
    assert_int_equal(kube__limiter_reserve(&l, 0), 500000000ull);
    assert_int_equal(kube__limiter_reserve(&l, 0), 1000000000ull);
    assert_int_equal(kube__limiter_reserve(&l, 100000000000ull), 0); /* refilled, capped at 2 */
    assert_int_equal(kube__limiter_reserve(&l, 100000000000ull), 0);
    assert_int_equal(kube__limiter_reserve(&l, 100000000000ull), 500000000ull);
    kube__limiter_destroy(&l);
}

/* One bucket per resource (client-go's per-RESTClient limiter): Pods spending
 * their burst do not hold Services back; raw requests share their own bucket. */
static void test_limiter_per_resource(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_client *c;
    struct fake_clock fc = { .now = 5000000000ull };
    struct kube_client_opts o = { .qps = 10, .burst = 2 };
    o.clock.now_ns = fake_now;
    o.clock.sleep_ns = fake_sleep;
    o.clock.arg = &fc;
    assert_int_equal(kube_client_new(f->cfg, &o, &c), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
        kube_result_release(&res);
    }
    assert_int_equal(fc.nsleeps, 0);
    /* the status subresource and a list are the same resource: they wait */
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    kube_result_release(&res);
    assert_int_equal(fc.nsleeps, 1);
    /* another resource (and another group) starts with a full burst */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kube_get(c, &KUBE_RES_SERVICES, "ns", "p", &res), 0);
        kube_result_release(&res);
        assert_int_equal(kube_get(c, &KUBE_RES_RAYCLUSTERS, "ns", "p", &res), 0);
        kube_result_release(&res);
    }
    assert_int_equal(fc.nsleeps, 1);
    /* writes on a resource are apart from its reads (the API reader is a client of its
     * own): the Pods' read bucket is empty, its write bucket full */
    for (int i = 0; i < 2; i++) {
        cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"p\"}}");
        assert_int_equal(kube_create(c, &KUBE_RES_PODS, "ns", pod, &res), 0);
        kube_result_release(&res);
        cJSON_Delete(pod);
    }
    assert_int_equal(fc.nsleeps, 1);
    struct kube_request raw = { .method = "GET", .path = "/api/v1/namespaces/ns/pods/p" };
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kube_raw(c, &raw, &res), 0);
        kube_result_release(&res);
    }
    assert_int_equal(fc.nsleeps, 2);
    kube_client_free(c);
}

/* A ticket moves a create's token wait ahead of the read that vouches for the create
 * (a RayCluster's Pod follows a GET of the cluster): the create itself then does not
 * wait, so nothing sleeps between the read and the write. */
static void test_ticket_waits_before_the_read(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_client *c;
    struct fake_clock fc = { .now = 5000000000ull };
    struct kube_client_opts o = { .qps = 10, .burst = 1 };
    o.clock.now_ns = fake_now;
    o.clock.sleep_ns = fake_sleep;
    o.clock.arg = &fc;
    assert_int_equal(kube_client_new(f->cfg, &o, &c), 0);
    cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"p\"}}");
    assert_int_equal(kube_create(c, &KUBE_RES_PODS, "ns", pod, &res), 0);   /* the burst */
    kube_result_release(&res);
    assert_int_equal(fc.nsleeps, 0);

    struct kube_ticket t = { 0 };
    kube_ticket_take(c, &KUBE_RES_PODS, &t);        /* the bucket is empty: waits here */
    assert_int_equal(fc.nsleeps, 1);
    assert_int_equal(fc.sleeps[0], 100000000ull);
    assert_true(t.taken);
    assert_int_equal(kube_get(c, &KUBE_RES_RAYCLUSTERS, "ns", "rc", &res), 0);
    kube_result_release(&res);
    int before = ts_nlog(&f->srv);
    assert_int_equal(kube_create_once(c, &KUBE_RES_PODS, "ns", pod, &t, &res), 0);
    kube_result_release(&res);
    assert_int_equal(fc.nsleeps, 1);                /* no wait between the GET and the POST */
    assert_int_equal(ts_nlog(&f->srv), before + 1);
    assert_string_equal(f->srv.log[before].method, "POST");
    assert_false(t.taken);                          /* spent */

    /* a spent ticket, or one of another bucket, pays for nothing: the create waits */
    assert_int_equal(kube_create_once(c, &KUBE_RES_PODS, "ns", pod, &t, &res), 0);
    kube_result_release(&res);
    assert_int_equal(fc.nsleeps, 2);
    kube_ticket_take(c, &KUBE_RES_SERVICES, &t);
    assert_int_equal(fc.nsleeps, 2);                /* the Services' bucket is full */
    assert_int_equal(kube_create_once(c, &KUBE_RES_PODS, "ns", pod, &t, &res), 0);
    kube_result_release(&res);
    assert_int_equal(fc.nsleeps, 3);
    assert_false(t.taken);
    cJSON_Delete(pod);
    kube_client_free(c);
}

struct thread_arg {
    struct kube_client *c;
    int failures;
};

static void *hammer(void *p)
{
    struct thread_arg *a = p;
    for (int i = 0; i < 25; i++) {
        struct kube_result res = { 0 };
        if (kube_get(a->c, &KUBE_RES_PODS, "ns", "p", &res) != 0)
            a->failures++;
        kube_result_release(&res);
    }
    return NULL;
}

static void test_keepalive_reuses_connections(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_client_stats st;
    for (int i = 0; i < 30; i++) {
        assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "p", &res), 0);
        kube_result_release(&res);
    }
    assert_int_equal(f->srv.connections, 1);
    kube_client_get_stats(f->c, &st);
    assert_int_equal(st.connects, 1);

    /* Four threads share one client (real clock): at most one connection each. */
    struct kube_client *c;
    pthread_t th[4];
    struct thread_arg args[4];
    assert_int_equal(kube_client_new(f->cfg, NULL, &c), 0);
    for (int i = 0; i < 4; i++) {
        args[i].c = c;
        args[i].failures = 0;
        pthread_create(&th[i], NULL, hammer, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    assert_int_equal(ts_nlog(&f->srv), 30 + 100);
    assert_in_range(f->srv.connections, 2, 1 + 4);
    kube_client_free(c);
}

static void test_response_size_is_bounded(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    struct kube_client *c;
    struct kube_client_opts o = { .max_response_bytes = 1000 };
    struct buf big = { 0 };
    buf_puts(&big, "{\"items\":[");
    for (int i = 0; i < 500; i++)
        buf_printf(&big, "%s\"item-%d\"", i ? "," : "", i);
    buf_puts(&big, "]}");
    assert_int_equal(kube_client_new(f->cfg, &o, &c), 0);
    ts_push(&f->srv, 200, big.data, NULL, NULL, 0);
    assert_int_equal(kube_list(c, &KUBE_RES_PODS, "ns", NULL, &res), -EMSGSIZE);
    assert_int_equal(res.attempts, 1); /* a too-big answer is not retried */
    assert_null(res.body);
    kube_result_release(&res);
    /* The raw call may ask for a larger limit. */
    ts_push(&f->srv, 200, big.data, NULL, NULL, 0);
    struct kube_request rq = { .method = "GET", .path = "/api/v1/namespaces/ns/services/"
                               "head:8265/proxy/api/jobs/", .idempotent = 1,
                               .max_response_bytes = 1 << 20 };
    assert_int_equal(kube_raw(c, &rq, &res), 0);
    assert_int_equal(res.raw_len, big.len);
    assert_memory_equal(res.raw, big.data, big.len);
    assert_null(res.body);
    assert_string_equal(f->srv.log[ts_nlog(&f->srv) - 1].path,
                        "/api/v1/namespaces/ns/services/head:8265/proxy/api/jobs/");
    kube_result_release(&res);
    kube_client_free(c);
    buf_free(&big);
}

struct pages {
    int pages, items, stop_at;
};

static int count_page(void *arg, cJSON *list)
{
    struct pages *p = arg;
    p->pages++;
    p->items += cJSON_GetArraySize(cJSON_GetObjectItem(list, "items"));
    return p->pages == p->stop_at ? 42 : 0;
}

static void test_list_each_follows_continue(void **state)
{
    struct fixture *f = *state;
    struct pages pg = { 0 };
    char rv[64] = "";
    struct kube_list_opts lo = { .label_selector = "a=b", .limit = 2, .resource_version = "0",
                                 .resource_version_match = "NotOlderThan" };
    ts_push(&f->srv, 200, "{\"metadata\":{\"resourceVersion\":\"100\",\"continue\":\"c1\"},"
            "\"items\":[{},{}]}", NULL, NULL, 0);
    ts_push(&f->srv, 200, "{\"metadata\":{\"resourceVersion\":\"100\",\"continue\":\"c2\"},"
            "\"items\":[{},{}]}", NULL, NULL, 0);
    ts_push(&f->srv, 200, "{\"metadata\":{\"resourceVersion\":\"100\"},\"items\":[{}]}",
            NULL, NULL, 0);
    assert_int_equal(kube_list_each(f->c, &KUBE_RES_PODS, "ns", &lo, count_page, &pg, rv,
                                    sizeof(rv)), 0);
    assert_int_equal(pg.pages, 3);
    assert_int_equal(pg.items, 5);
    assert_string_equal(rv, "100");
    assert_string_equal(f->srv.log[0].query, "labelSelector=a=b&limit=2&resourceVersion=0&"
                                             "resourceVersionMatch=NotOlderThan");
    /* Later pages carry the continue token and the selector, not the resourceVersion. */
    assert_string_equal(f->srv.log[1].query, "labelSelector=a=b&limit=2&continue=c1");
    assert_string_equal(f->srv.log[2].query, "labelSelector=a=b&limit=2&continue=c2");

    /* The callback can stop the walk; its value comes back. */
    memset(&pg, 0, sizeof(pg));
    pg.stop_at = 1;
    ts_push(&f->srv, 200, "{\"metadata\":{\"continue\":\"c1\"},\"items\":[{}]}", NULL, NULL, 0);
    assert_int_equal(kube_list_each(f->c, &KUBE_RES_PODS, "ns", NULL, count_page, &pg, NULL, 0), 42);
    assert_string_equal(f->srv.log[3].query, "limit=500");
    assert_int_equal(ts_nlog(&f->srv), 4);

    /* An expired continue token: relist from scratch. */
    memset(&pg, 0, sizeof(pg));
    ts_push(&f->srv, 200, "{\"metadata\":{\"continue\":\"old\"},\"items\":[]}", NULL, NULL, 0);
    ts_push(&f->srv, 410, "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
            "\"message\":\"The provided continue parameter is too old\"}", NULL, NULL, 0);
    assert_int_equal(kube_list_each(f->c, &KUBE_RES_PODS, "ns", NULL, count_page, &pg, NULL, 0),
                     -KUBE_EGONE);
    assert_int_equal(pg.pages, 1);
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

/* gzip of data as one stored (uncompressed) deflate block: no zlib needed. */
static size_t gzip_stored(const char *data, unsigned char *out)
{
    size_t len = strlen(data), o = 0;
    static const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff };
    uint32_t crc = crc32_of((const unsigned char *)data, len);
    memcpy(out, hdr, 10);
    o = 10;
    out[o++] = 0x01; /* final block, stored */
    out[o++] = (unsigned char)(len & 0xff);
    out[o++] = (unsigned char)(len >> 8);
    out[o++] = (unsigned char)(~len & 0xff);
    out[o++] = (unsigned char)((~len >> 8) & 0xff);
    memcpy(out + o, data, len);
    o += len;
    for (int i = 0; i < 4; i++)
        out[o++] = (unsigned char)(crc >> (8 * i));
    for (int i = 0; i < 4; i++)
        out[o++] = (unsigned char)(len >> (8 * i));
    return o;
}

static void test_gzip_response_is_decoded(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    unsigned char gz[512];
    const char *json = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"gz\",\"resourceVersion\":\"7\"}}";
    size_t n = gzip_stored(json, gz);
    ts_push_raw(&f->srv, 200, (const char *)gz, n, 0, 0);
    ts_last_header(&f->srv, "Content-Encoding", "gzip");
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "gz", &res), 0);
    assert_string_equal(res.resource_version, "7");
    assert_non_null(strstr(f->srv.log[0].accept_encoding, "gzip"));
    kube_result_release(&res);
    /* disable-compression: no Accept-Encoding at all. */
    struct kube_client *plain;
    f->cfg->disable_compression = 1;
    assert_int_equal(kube_client_new(f->cfg, NULL, &plain), 0);
    assert_int_equal(kube_get(plain, &KUBE_RES_PODS, "ns", "x", &res), 0);
    assert_string_equal(f->srv.log[1].accept_encoding, "");
    kube_result_release(&res);
    kube_client_free(plain);
    f->cfg->disable_compression = 0;
    /* A corrupt gzip body is an error, not garbage JSON. */
    gz[10] = 0x07; /* deflate block type 3 is reserved: undecodable */
    ts_push_raw(&f->srv, 200, (const char *)gz, n, 0, 0);
    ts_last_header(&f->srv, "Content-Encoding", "gzip");
    assert_int_equal(kube_get(f->c, &KUBE_RES_PODS, "ns", "gz", &res), -EPROTO);
    kube_result_release(&res);
}

static void test_token_never_logged_and_reloaded_after_401(void **state)
{
    struct fixture *f = *state;
    struct kube_result res = { 0 };
    char logpath[] = "/tmp/test_kube_client_log.XXXXXX", tokpath[] = "/tmp/test_kube_tok.XXXXXX";
    int lfd = mkstemp(logpath), tfd = mkstemp(tokpath), saved = dup(2);
    assert_true(lfd >= 0 && tfd >= 0);
    assert_int_equal(write(tfd, "SECRET-one-111\n", 15), 15);
    close(tfd);

    struct kube_config *cfg = ts_config(&f->srv, 0, NULL);
    cfg->token_file = strdup(tokpath);
    assert_int_equal(kube__token_state_new(&cfg->token_state), 0);
    struct kube_client *c;
    assert_int_equal(kube_client_new(cfg, NULL, &c), 0);

    log_set_level(LOG_DEBUG);
    dup2(lfd, 2);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    kube_result_release(&res);
    /* Rotate the token; the server says 401 once, the client re-reads and retries. */
    FILE *tf = fopen(tokpath, "w");
    fputs("SECRET-two-2222\n", tf);
    fclose(tf);
    ts_push(&f->srv, 401, "{\"kind\":\"Status\",\"code\":401,\"reason\":\"Unauthorized\"}", NULL, NULL, 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    assert_int_equal(res.attempts, 2);
    kube_result_release(&res);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    log_set_level(LOG_INFO);

    int n = ts_nlog(&f->srv);
    assert_string_equal(f->srv.log[n - 3].auth, "Bearer SECRET-one-111");
    assert_string_equal(f->srv.log[n - 2].auth, "Bearer SECRET-one-111");
    assert_string_equal(f->srv.log[n - 1].auth, "Bearer SECRET-two-2222");
    char *logs = NULL;
    assert_int_equal(kube__read_file(logpath, 1 << 20, &logs, NULL), 0);
    assert_non_null(strstr(logs, "\"msg\":\"kube request\""));
    assert_non_null(strstr(logs, "/api/v1/namespaces/ns/pods/p"));
    assert_null(strstr(logs, "SECRET"));
    free(logs);
    close(lfd);
    unlink(logpath);
    unlink(tokpath);
    kube_client_free(c);
    kube_config_free(cfg);
}

static void test_tls_verified_against_ca(void **state)
{
    struct ts_pki pki = { 0 };
    struct ts_server srv;
    struct kube_result res = { 0 };
    struct kube_client *c;
    struct kube_client_opts o = { .max_retries = -1 };
    (void)state;
    if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
        skip();
    assert_int_equal(ts_pki_make(&pki, "kube.test"), 0);
    assert_int_equal(ts_start_tls(&srv, pki.server_cert_pem, pki.server_key_pem, pki.ca_pem), 0);
    struct kube_config *cfg = ts_config(&srv, 1, "t");

    /* System roots do not know our CA: refused. */
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), -EACCES);
    kube_result_release(&res);
    kube_client_free(c);

    /* With the CA (as certificate-authority-data): verified. */
    cfg->ca_pem = strdup(pki.ca_pem);
    cfg->ca_pem_len = strlen(pki.ca_pem);
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    assert_int_equal(srv.log[0].client_cert_ok, 0);
    kube_result_release(&res);
    kube_client_free(c);

    /* A client certificate from -data blobs is presented and verifies. */
    cfg->cert_pem = strdup(pki.client_cert_pem);
    cfg->cert_pem_len = strlen(pki.client_cert_pem);
    cfg->key_pem = strdup(pki.client_key_pem);
    cfg->key_pem_len = strlen(pki.client_key_pem);
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    assert_int_equal(srv.log[1].client_cert_ok, 1);
    kube_result_release(&res);
    kube_client_free(c);

    /* tls-server-name: verify against a name while connecting to 127.0.0.1. */
    cfg->tls_server_name = strdup("kube.test");
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    kube_result_release(&res);
    kube_client_free(c);
    free(cfg->tls_server_name);
    cfg->tls_server_name = strdup("other.test");
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), -EACCES);
    kube_result_release(&res);
    kube_client_free(c);
    free(cfg->tls_server_name);
    cfg->tls_server_name = NULL;

    /* insecure-skip-tls-verify without a CA. */
    free(cfg->ca_pem);
    cfg->ca_pem = NULL;
    cfg->insecure_skip_tls_verify = 1;
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    assert_int_equal(kube_get(c, &KUBE_RES_PODS, "ns", "p", &res), 0);
    kube_result_release(&res);
    kube_client_free(c);

    assert_int_equal(ts_nlog(&srv), 4);
    kube_config_free(cfg);
    ts_stop(&srv);
    ts_pki_free(&pki);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_request_shape_and_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_query_is_escaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_verbs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_429_retry_after_is_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_5xx_retried_with_growing_backoff_for_idempotent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_non_idempotent_not_retried_on_500, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_errors_are_typed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limiter_per_resource, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limiter_rates_on_fake_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ticket_waits_before_the_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_reuses_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_response_size_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_each_follows_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gzip_response_is_decoded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_never_logged_and_reloaded_after_401, setup,
                                        teardown),
        cmocka_unit_test(test_tls_verified_against_ca),
    };
    return cmocka_run_group_tests_name("kube_client", tests, NULL, NULL);
}

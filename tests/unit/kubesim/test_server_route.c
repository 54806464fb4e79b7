/* test_server_route.c - kubesim's request parsing (kubesim/api/route.h): every path shape
 * the server routes, query parameters, Accept negotiation, patch types, verbs,
 * and garbage that must come out as "not found" or a 400 rather than a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/api/route.h"
#include "kubesim/store/store.h"
#include "util/util.h"

static struct route R;

static const struct route *P(const char *path)
{
    route_parse_path(path, &R);
    return &R;
}

static void test_discovery_paths(void **state)
{
    (void)state;
    assert_int_equal(P("/version")->kind, ROUTE_VERSION);
    assert_int_equal(P("/version/")->kind, ROUTE_VERSION);
    assert_int_equal(P("/healthz")->kind, ROUTE_HEALTH);
    assert_int_equal(P("/readyz")->kind, ROUTE_HEALTH);
    assert_int_equal(P("/livez/ping")->kind, ROUTE_HEALTH);
    assert_int_equal(P("/api")->kind, ROUTE_API);
    assert_int_equal(P("/apis")->kind, ROUTE_APIS);
    assert_int_equal(P("/api/v1")->kind, ROUTE_GROUP_VERSION);
    assert_string_equal(R.group, "");
    assert_string_equal(R.version, "v1");
    assert_int_equal(P("/apis/ray.io")->kind, ROUTE_GROUP);
    assert_string_equal(R.group, "ray.io");
    assert_int_equal(P("/apis/ray.io/v1")->kind, ROUTE_GROUP_VERSION);
    assert_string_equal(R.group, "ray.io");
    assert_string_equal(R.version, "v1");
    assert_int_equal(P("/openapi/v2")->kind, ROUTE_OPENAPI_V2);
    assert_int_equal(P("/openapi/v3")->kind, ROUTE_OPENAPI_V3);
    assert_int_equal(P("/openapi/v3/apis/ray.io/v1")->kind, ROUTE_OPENAPI_V3_PATH);
    assert_string_equal(R.oapi_path, "apis/ray.io/v1");
    assert_int_equal(P("/openapi/v3/api/v1")->kind, ROUTE_OPENAPI_V3_PATH);
    assert_string_equal(R.oapi_path, "api/v1");
}

static void test_namespaced_resource_paths(void **state)
{
    (void)state;
    assert_int_equal(P("/api/v1/namespaces/default/pods")->kind, ROUTE_RESOURCE);
    assert_string_equal(R.ns, "default");
    assert_string_equal(R.plural, "pods");
    assert_string_equal(R.name, "");
    assert_false(R.legacy_watch);

    P("/api/v1/namespaces/default/pods/web-0");
    assert_string_equal(R.name, "web-0");
    assert_string_equal(R.sub, "");

    P("/apis/ray.io/v1/namespaces/team-a/rayclusters/rc/status");
    assert_int_equal(R.kind, ROUTE_RESOURCE);
    assert_string_equal(R.group, "ray.io");
    assert_string_equal(R.version, "v1");
    assert_string_equal(R.ns, "team-a");
    assert_string_equal(R.plural, "rayclusters");
    assert_string_equal(R.name, "rc");
    assert_string_equal(R.sub, "status");
    assert_string_equal(R.rest, "");

    /* all-namespace collections */
    P("/api/v1/pods");
    assert_int_equal(R.kind, ROUTE_RESOURCE);
    assert_string_equal(R.ns, "");
    assert_string_equal(R.plural, "pods");
    P("/apis/ray.io/v1/rayclusters");
    assert_string_equal(R.plural, "rayclusters");
    assert_string_equal(R.ns, "");
}

static void test_cluster_scoped_and_namespaces(void **state)
{
    (void)state;
    P("/api/v1/namespaces");
    assert_int_equal(R.kind, ROUTE_RESOURCE);
    assert_string_equal(R.plural, "namespaces");
    assert_string_equal(R.name, "");
    assert_string_equal(R.ns, "");

    P("/api/v1/namespaces/kube-system");
    assert_string_equal(R.plural, "namespaces");
    assert_string_equal(R.name, "kube-system");
    assert_string_equal(R.ns, "");

    P("/api/v1/namespaces/foo/status");
    assert_string_equal(R.plural, "namespaces");
    assert_string_equal(R.name, "foo");
    assert_string_equal(R.sub, "status");

    P("/api/v1/namespaces/foo/finalize");
    assert_string_equal(R.sub, "finalize");

    /* namespaces/NS/RES beats the namespace-subresource reading for other words */
    P("/api/v1/namespaces/foo/configmaps");
    assert_string_equal(R.ns, "foo");
    assert_string_equal(R.plural, "configmaps");

    P("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayclusters.ray.io");
    assert_int_equal(R.kind, ROUTE_RESOURCE);
    assert_string_equal(R.plural, "customresourcedefinitions");
    assert_string_equal(R.name, "rayclusters.ray.io");
}

static void test_subresource_rest(void **state)
{
    (void)state;
    P("/api/v1/namespaces/default/services/head-svc:dashboard/proxy/api/jobs/");
    assert_int_equal(R.kind, ROUTE_RESOURCE);
    assert_string_equal(R.plural, "services");
    assert_string_equal(R.name, "head-svc:dashboard");
    assert_string_equal(R.sub, "proxy");
    assert_string_equal(R.rest, "/api/jobs/");

    P("/api/v1/namespaces/default/services/http:head-svc:8265/proxy");
    assert_string_equal(R.name, "http:head-svc:8265");
    assert_string_equal(R.rest, "");

    P("/api/v1/namespaces/default/pods/web/log");
    assert_string_equal(R.sub, "log");
    assert_string_equal(R.rest, "");
}

static void test_legacy_watch_paths(void **state)
{
    (void)state;
    P("/api/v1/watch/namespaces/default/pods");
    assert_int_equal(R.kind, ROUTE_RESOURCE);
    assert_true(R.legacy_watch);
    assert_string_equal(R.ns, "default");
    assert_string_equal(R.plural, "pods");

    P("/api/v1/watch/namespaces/default/pods/p1");
    assert_true(R.legacy_watch);
    assert_string_equal(R.name, "p1");

    P("/apis/ray.io/v1/watch/rayclusters");
    assert_true(R.legacy_watch);
    assert_string_equal(R.plural, "rayclusters");

    P("/api/v1/watch/namespaces");
    assert_true(R.legacy_watch);
    assert_string_equal(R.plural, "namespaces");

    /* a watch path has no subresources */
    assert_int_equal(P("/api/v1/watch/namespaces/default/pods/p1/status")->kind, ROUTE_NONE);
    assert_int_equal(P("/api/v1/watch")->kind, ROUTE_NONE);
}

static void test_garbage_paths(void **state)
{
    static const char *const bad[] = {
        "", "x", "api", "/", "//", "/api//v1", "/api/v1//pods", "/apis/ray.io//",
        "/nope", "/apiz/v1", "/openapi", "/openapi/v4", "/openapi/v3/../x",
        "/api/v1/namespaces/../pods", "/api/v1/namespaces/default/pods/..",
        "/api/v1/namespaces/default/pods/a\x01b", "/version/x", "/healthz/a/b",
    };
    char *longp;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        P(bad[i]);
        if (R.kind != ROUTE_NONE)
            fail_msg("path \"%s\" parsed as kind %d", bad[i], (int)R.kind);
    }
    assert_int_equal(P(NULL)->kind, ROUTE_NONE);

    /* a segment one byte longer than any name can be */
    longp = malloc(ROUTE_MAX_SEG + 64);
    strcpy(longp, "/api/v1/namespaces/default/pods/");
    memset(longp + strlen(longp), 'a', ROUTE_MAX_SEG);
    longp[strlen("/api/v1/namespaces/default/pods/") + ROUTE_MAX_SEG] = '\0';
    assert_int_equal(P(longp)->kind, ROUTE_NONE);
    longp[strlen("/api/v1/namespaces/default/pods/") + ROUTE_MAX_SEG - 1] = '\0';
    assert_int_equal(P(longp)->kind, ROUTE_RESOURCE);
    assert_int_equal(strlen(R.name), ROUTE_MAX_SEG - 1);
    free(longp);

    /* an over-long path and a path of many segments */
    longp = malloc(ROUTE_MAX_PATH + 16);
    longp[0] = '/';
    for (size_t i = 1; i < ROUTE_MAX_PATH + 8; i++)
        longp[i] = (i % 2) ? 'a' : '/';
    longp[ROUTE_MAX_PATH + 8] = '\0';
    assert_int_equal(P(longp)->kind, ROUTE_NONE);
    free(longp);
    assert_int_equal(P("/api/v1/namespaces/default/services/s:p/proxy/a/b/c/d/e/f/g/h/i/j/k/l/m/n")->kind,
                     ROUTE_RESOURCE);
    assert_string_equal(R.rest, "/a/b/c/d/e/f/g/h/i/j/k/l/m/n");
}

static void test_query_parsing(void **state)
{
    struct route_query q;
    const char *raw = "labelSelector=app%3Dray%2Cenv+in+%28a%2Cb%29&fieldSelector=metadata.name%3Dx"
                      "&limit=500&continue=abc&resourceVersion=42&resourceVersionMatch=NotOlderThan"
                      "&timeoutSeconds=306&allowWatchBookmarks=true&watch=True&sendInitialEvents=false"
                      "&fieldManager=kubectl-client-side-apply&fieldValidation=Strict&dryRun=All"
                      "&force=1&propagationPolicy=Foreground&gracePeriodSeconds=0&pretty=true"
                      "&timeout=32s&unknownThing=%zz";
    (void)state;
    route_query_init(&q);
    assert_int_equal(route_query_parse(&q, raw, strlen(raw)), 0);
    assert_string_equal(q.err, "");
    assert_string_equal(q.label_selector, "app=ray,env in (a,b)");
    assert_string_equal(q.field_selector, "metadata.name=x");
    assert_int_equal(q.limit, 500);
    assert_string_equal(q.continue_token, "abc");
    assert_string_equal(q.resource_version, "42");
    assert_string_equal(q.rv_match, "NotOlderThan");
    assert_int_equal(q.timeout_seconds, 306);
    assert_true(q.allow_bookmarks);
    assert_true(q.watch);
    assert_int_equal(q.send_initial_events, ROUTE_FALSE);
    assert_string_equal(q.field_manager, "kubectl-client-side-apply");
    assert_string_equal(q.field_validation, "Strict");
    assert_true(q.dry_run);
    assert_true(q.force);
    assert_string_equal(q.propagation, "Foreground");
    assert_int_equal(q.grace_seconds, 0);
    route_query_free(&q);
    assert_null(q.label_selector);
}

static void test_query_watch_spellings_and_errors(void **state)
{
    static const char *const yes[] = { "watch=true", "watch=1", "watch=True", "watch=t" };
    static const char *const bad[] = { "watch=yes", "limit=abc", "limit=-1",
                                       "timeoutSeconds=1e3", "gracePeriodSeconds=",
                                       "dryRun=Some", "allowWatchBookmarks=maybe",
                                       "limit=99999999999999999999999" };
    struct route_query q;
    (void)state;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        route_query_init(&q);
        route_query_parse(&q, yes[i], strlen(yes[i]));
        assert_true(q.watch);
        assert_string_equal(q.err, "");
        route_query_free(&q);
    }
    route_query_init(&q);
    route_query_parse(&q, "watch=false", 11);
    assert_false(q.watch);
    route_query_free(&q);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        route_query_init(&q);
        route_query_parse(&q, bad[i], strlen(bad[i]));
        if (q.err[0] == '\0')
            fail_msg("\"%s\" was accepted", bad[i]);
        route_query_free(&q);
    }
    /* defaults, and a parameter without '=' */
    route_query_init(&q);
    route_query_parse(&q, "&&pretty&=x&", 12);
    assert_int_equal(q.timeout_seconds, -1);
    assert_int_equal(q.grace_seconds, -1);
    assert_int_equal(q.limit, 0);
    assert_false(q.watch);
    assert_string_equal(q.err, "");
    route_query_free(&q);
}

static void test_query_bounds(void **state)
{
    struct route_query q;
    struct buf b = { 0 };
    (void)state;
    /* more parameters than ROUTE_MAX_PARAMS: the tail is ignored, not an error */
    for (int i = 0; i < ROUTE_MAX_PARAMS + 10; i++)
        buf_printf(&b, "p%d=1&", i);
    buf_puts(&b, "limit=7");
    route_query_init(&q);
    assert_int_equal(route_query_parse(&q, b.data, b.len), 0);
    assert_int_equal(q.limit, 0);
    route_query_free(&q);

    /* an over-long value is a 400, not a truncation */
    buf_reset(&b);
    buf_puts(&b, "labelSelector=");
    for (int i = 0; i < ROUTE_MAX_VALUE + 5; i++)
        buf_puts(&b, "a");
    route_query_init(&q);
    assert_int_equal(route_query_parse(&q, b.data, b.len), 0);
    assert_null(q.label_selector);
    assert_string_not_equal(q.err, "");
    route_query_free(&q);
    buf_free(&b);

    /* a truncated escape is kept literally */
    route_query_init(&q);
    route_query_parse(&q, "labelSelector=a%2", 17);
    assert_string_equal(q.label_selector, "a%2");
    route_query_free(&q);
}

static void test_accept(void **state)
{
    struct route_accept a;
    (void)state;
    route_parse_accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;"
                       "v=v1beta1;g=meta.k8s.io,application/json", &a);
    assert_true(a.table);
    assert_false(a.table_v1beta1);
    assert_int_equal(a.discovery, ROUTE_DISC_LEGACY);

    route_parse_accept("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", &a);
    assert_true(a.table);
    assert_true(a.table_v1beta1);

    route_parse_accept("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                       "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                       "application/json", &a);
    assert_int_equal(a.discovery, ROUTE_DISC_V2);
    assert_false(a.table);

    route_parse_accept("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                       "application/json", &a);
    assert_int_equal(a.discovery, ROUTE_DISC_V2BETA1);

    /* plain JSON first: no Table, no aggregated discovery */
    route_parse_accept("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", &a);
    assert_false(a.table);
    route_parse_accept("application/json, */*", &a);
    assert_false(a.table);
    assert_int_equal(a.discovery, ROUTE_DISC_LEGACY);
    /* protobuf offered first is answered with JSON: it decides nothing */
    route_parse_accept("application/vnd.kubernetes.protobuf,application/json", &a);
    assert_false(a.table);
    route_parse_accept("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
                       "application/json;as=Table;v=v1;g=meta.k8s.io", &a);
    assert_true(a.table);
    route_parse_accept(NULL, &a);
    assert_false(a.table);
    route_parse_accept(";;;,,,=;=,as=Table", &a);
    assert_false(a.table);
}

static void test_patch_types(void **state)
{
    (void)state;
    assert_int_equal(route_patch_type("application/merge-patch+json"), PATCH_MERGE);
    assert_int_equal(route_patch_type("application/json-patch+json"), PATCH_JSON);
    assert_int_equal(route_patch_type("application/strategic-merge-patch+json"), PATCH_STRATEGIC);
    assert_int_equal(route_patch_type("application/apply-patch+yaml"), PATCH_APPLY);
    assert_int_equal(route_patch_type("application/merge-patch+json; charset=utf-8"), PATCH_MERGE);
    assert_int_equal(route_patch_type(" Application/JSON-Patch+JSON "), PATCH_JSON);
    assert_int_equal(route_patch_type("application/json"), -1);
    assert_int_equal(route_patch_type(""), -1);
    assert_int_equal(route_patch_type(NULL), -1);
    assert_int_equal(route_patch_type("application/merge-patch+jsonx"), -1);
}

static void test_verbs(void **state)
{
    (void)state;
    P("/api/v1/namespaces/default/pods");
    assert_string_equal(route_verb("GET", &R, false), "list");
    assert_string_equal(route_verb("GET", &R, true), "watch");
    assert_string_equal(route_verb("POST", &R, false), "create");
    assert_string_equal(route_verb("DELETE", &R, false), "deletecollection");
    assert_null(route_verb("PUT", &R, false));
    assert_null(route_verb("PATCH", &R, false));
    assert_null(route_verb("OPTIONS", &R, false));

    P("/api/v1/namespaces/default/pods/p");
    assert_string_equal(route_verb("GET", &R, false), "get");
    assert_string_equal(route_verb("GET", &R, true), "watch");
    assert_string_equal(route_verb("PUT", &R, false), "update");
    assert_string_equal(route_verb("PATCH", &R, false), "patch");
    assert_string_equal(route_verb("DELETE", &R, false), "delete");
    assert_null(route_verb("POST", &R, false));

    P("/api/v1/namespaces/default/pods/p/status");
    assert_string_equal(route_verb("PUT", &R, false), "update");
    assert_null(route_verb("DELETE", &R, false));

    P("/api/v1/watch/namespaces/default/pods");
    assert_string_equal(route_verb("GET", &R, false), "watch");
    assert_null(route_verb("DELETE", &R, false));

    P("/version");
    assert_null(route_verb("GET", &R, false));
}

static void test_default_manager(void **state)
{
    char m[129];
    char ua[300];
    (void)state;
    route_default_manager("kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19", m);
    assert_string_equal(m, "kubectl");
    route_default_manager("OpenAPI-Generator/22.6.0/python", m);
    assert_string_equal(m, "OpenAPI-Generator");
    route_default_manager("", m);
    assert_string_equal(m, "unknown");
    route_default_manager(NULL, m);
    assert_string_equal(m, "unknown");
    memset(ua, 'x', sizeof(ua) - 1);
    ua[sizeof(ua) - 1] = '\0';
    route_default_manager(ua, m);
    assert_int_equal(strlen(m), 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovery_paths),
        cmocka_unit_test(test_namespaced_resource_paths),
        cmocka_unit_test(test_cluster_scoped_and_namespaces),
        cmocka_unit_test(test_subresource_rest),
        cmocka_unit_test(test_legacy_watch_paths),
        cmocka_unit_test(test_garbage_paths),
        cmocka_unit_test(test_query_parsing),
        cmocka_unit_test(test_query_watch_spellings_and_errors),
        cmocka_unit_test(test_query_bounds),
        cmocka_unit_test(test_accept),
        cmocka_unit_test(test_patch_types),
        cmocka_unit_test(test_verbs),
        cmocka_unit_test(test_default_manager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

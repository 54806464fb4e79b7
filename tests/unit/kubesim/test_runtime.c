/* test_runtime.c - the pure parts of kubesim's Pod runtime (kubesim/runtime): image
 * matching, $(VAR) expansion and its bound, downward-API field paths, emptyDir sizes,
 * probe thresholds and ports, the HTTP probe's status line, Endpoints selection for the
 * Service proxy, the proxy's request check, the exec helper's spec check and the clamping
 * of the Pod's numbers. The processes, namespaces and routing are covered by
 * tests/integration/kubesim_runtime.sh and deploy_pod.sh (root only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/runtime/internal.h"

static cJSON *J(const char *text)
{
    cJSON *o = cJSON_Parse(text);
    if (!o)
        fail_msg("bad test JSON: %s", text);
    return o;
}

static void test_image_match(void **state)
{
    struct runtime_opts o = { .nimages = 2 };
    char longimg[700];

    (void)state;
    snprintf(o.repo[0], sizeof(o.repo[0]), "rayop");
    snprintf(o.repo[1], sizeof(o.repo[1]), "demo");
    assert_int_equal(runtime__image_match(&o, "rayop"), 0);
    assert_int_equal(runtime__image_match(&o, "rayop:0.1.0"), 0);
    assert_int_equal(runtime__image_match(&o, "registry.example.com/team/rayop@sha256:abcd"), 0);
    assert_int_equal(runtime__image_match(&o, "registry:5000/rayop"), 0);
    assert_int_equal(runtime__image_match(&o, "registry:5000/rayop:1"), 0);
    assert_int_equal(runtime__image_match(&o, "x/demo:1"), 1);
    /* a repository that merely ends in the name, or a registry named like it, is not it */
    assert_int_equal(runtime__image_match(&o, "notrayop"), -1);
    assert_int_equal(runtime__image_match(&o, "rayop-x"), -1);
    assert_int_equal(runtime__image_match(&o, "rayop/other"), -1);
    assert_int_equal(runtime__image_match(&o, ""), -1);
    assert_int_equal(runtime__image_match(&o, NULL), -1);
    memset(longimg, 'a', sizeof(longimg) - 7);
    snprintf(longimg + sizeof(longimg) - 7, 7, "/rayop");
    assert_int_equal(runtime__image_match(&o, longimg), -1);   /* over the bound: refused */
}

static char *expand(const cJSON *env, const char *in, int *rc)
{
    struct buf b = { 0 };
    *rc = runtime__env_expand(env, in, &b);
    return buf_steal(&b);
}

static void test_env_expand(void **state)
{
    cJSON *env = J("[\"A=1\", \"B=two\", \"A=3\", \"EMPTY=\"]");
    const char *cases[][2] = {
        { "$(A)", "3" },                 /* the last definition wins */
        { "x$(B)y$(A)", "xtwoy3" },
        { "$$(A)", "$(A)" },             /* $$ escapes */
        { "a$$b", "a$b" },
        { "$(C)", "$(C)" },              /* unknown: as written */
        { "$(A", "$(A" },                /* unclosed */
        { "$(EMPTY)|", "|" },
        { "$", "$" },
        { "", "" },
        { "$()", "$()" },
    };
    int rc;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = expand(env, cases[i][0], &rc);
        assert_int_equal(rc, 0);
        assert_string_equal(out, cases[i][1]);
        free(out);
    }
    cJSON_Delete(env);
}

/* Definitions that double each other: 2^40 bytes if unbounded. */
static void test_env_expand_bound(void **state)
{
    cJSON *env = cJSON_CreateArray();
    struct buf v = { 0 };
    char def[64];
    int rc = 0, i;

    (void)state;
    cJSON_AddItemToArray(env, cJSON_CreateString("V0=xxxxxxxxxxxxxxxx"));
    for (i = 1; i <= 40 && rc == 0; i++) {
        snprintf(def, sizeof(def), "$(V%d)$(V%d)", i - 1, i - 1);
        buf_reset(&v);
        buf_printf(&v, "V%d=", i);
        rc = runtime__env_expand(env, def, &v);
        if (rc == 0)
            cJSON_AddItemToArray(env, cJSON_CreateString(v.data));
    }
    assert_int_equal(rc, -E2BIG);
    assert_true(i < 40);
    /* it stops within one value past the bound: each value is under the bound */
    assert_true(v.len <= 2 * RT_ENV_MAX_VALUE + 64);
    buf_free(&v);
    cJSON_Delete(env);
}

static char *field(const struct rt_pod *p, const char *path, int *rc)
{
    struct buf b = { 0 };
    *rc = runtime__field_value(p, path, &b);
    if (!b.data)
        buf_puts(&b, "");
    return buf_steal(&b);
}

static void test_field_value(void **state)
{
    struct rt_pod p = { .uid = "u-1", .ns = "ns1", .name = "pod1", .ip = "10.244.0.7" };
    const char *ok[][2] = {
        { "metadata.name", "pod1" },
        { "metadata.namespace", "ns1" },
        { "metadata.uid", "u-1" },
        { "status.podIP", "10.244.0.7" },
        { "spec.nodeName", "node-0" },
        { "spec.serviceAccountName", "default" },
        { "metadata.labels['app']", "web" },
        { "metadata.labels['none']", "" },
        { "metadata.annotations['a/b']", "c" },
        { "metadata.labels", "app=\"web\"\n" },
    };
    const char *bad[] = { "metadata.labels['app'", "metadata.labels[app]", "metadata.labels['a']x",
                          "spec.containers", "", "status", "metadata.labelsX['a']" };
    int rc;

    (void)state;
    p.json = J("{\"metadata\":{\"labels\":{\"app\":\"web\"},\"annotations\":{\"a/b\":\"c\"}},"
               "\"spec\":{\"nodeName\":\"node-0\"}}");
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char *v = field(&p, ok[i][0], &rc);
        assert_int_equal(rc, 0);
        assert_string_equal(v, ok[i][1]);
        free(v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *v = field(&p, bad[i], &rc);
        if (rc != -EINVAL)
            fail_msg("fieldPath \"%s\" accepted", bad[i]);
        free(v);
    }
    free(field(&p, NULL, &rc));
    assert_int_equal(rc, -EINVAL);
    cJSON_Delete(p.json);
}

static void test_size_text(void **state)
{
    char out[32];

    (void)state;
    runtime__size_text("64Mi", out, sizeof(out));
    assert_string_equal(out, "67108864");
    runtime__size_text("1G", out, sizeof(out));
    assert_string_equal(out, "1000000000");
    runtime__size_text("1500m", out, sizeof(out));       /* 1.5 bytes: rounded up */
    assert_string_equal(out, "2");
    runtime__size_text(NULL, out, sizeof(out));           /* no sizeLimit: tmpfs's default */
    assert_string_equal(out, "0");
    runtime__size_text("lots", out, sizeof(out));
    assert_string_equal(out, "0");
    runtime__size_text("-1Gi", out, sizeof(out));
    assert_string_equal(out, "0");
}

static void test_probe_thresholds(void **state)
{
    struct rt_ctr c = { 0 };
    cJSON *rdy = J("{\"successThreshold\":2,\"failureThreshold\":3}");
    cJSON *live = J("{\"failureThreshold\":2}");
    bool kill = false;

    (void)state;
    c.rdy.spec = rdy;
    c.live.spec = live;
    /* readiness: two passes in a row to become ready */
    assert_false(runtime__probe_apply(&c, &c.rdy, true, &kill));
    assert_false(c.ready);
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, true, &kill));
    assert_true(runtime__probe_apply(&c, &c.rdy, true, &kill));
    assert_true(c.ready);
    /* three failures in a row to become unready; a pass resets the count */
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, true, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_true(c.ready);
    assert_true(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_false(c.ready);
    assert_false(kill);
    /* liveness: the second failure in a row kills */
    assert_false(runtime__probe_apply(&c, &c.live, false, &kill));
    assert_false(kill);
    assert_false(runtime__probe_apply(&c, &c.live, true, &kill));
    assert_false(runtime__probe_apply(&c, &c.live, false, &kill));
    assert_true(runtime__probe_apply(&c, &c.live, false, &kill));
    assert_true(kill);
    cJSON_Delete(rdy);
    cJSON_Delete(live);
}

static void test_probe_defaults_and_ports(void **state)
{
    struct rt_ctr c = { 0 };
    cJSON *spec = J("{\"ports\":[{\"name\":\"http\",\"containerPort\":8080},{\"containerPort\":9}]}");
    cJSON *huge = J("{\"initialDelaySeconds\":1e300,\"periodSeconds\":-5}");
    cJSON *p;
    bool kill = false;

    (void)state;
    c.spec = spec;
    p = cJSON_CreateString("http");
    assert_int_equal(runtime__port_of(&c, p), 8080);
    cJSON_SetValuestring(p, "9090");
    assert_int_equal(runtime__port_of(&c, p), 9090);
    cJSON_SetValuestring(p, "metrics");
    assert_int_equal(runtime__port_of(&c, p), -1);
    cJSON_Delete(p);
    p = cJSON_CreateNumber(7);
    assert_int_equal(runtime__port_of(&c, p), 7);
    cJSON_Delete(p);
    assert_int_equal(runtime__port_of(&c, NULL), -1);
    /* no thresholds given: readiness flips on the first pass, failureThreshold 3 */
    c.rdy.spec = cJSON_CreateObject();
    assert_true(runtime__probe_apply(&c, &c.rdy, true, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_false(runtime__probe_apply(&c, &c.rdy, false, &kill));
    assert_true(runtime__probe_apply(&c, &c.rdy, false, &kill));
    cJSON_Delete((cJSON *)c.rdy.spec);
    /* out-of-range numbers are clamped (int32), never cast out of range */
    assert_int_equal(runtime__jnum(huge, "initialDelaySeconds", 0), 2147483647L);
    assert_int_equal(runtime__jnum(huge, "periodSeconds", 0), -5);
    assert_int_equal(runtime__jnum(huge, "missing", 42), 42);
    c.live.spec = huge;
    c.rdy.spec = NULL;
    c.live.exec_fd = c.rdy.exec_fd = -1;    /* no exec probe in flight */
    runtime__probe_reset(&c, 1000);
    assert_true(c.live.next_ms >= 2147483647ull * 1000);
    assert_int_equal(runtime__probe_next(&c), c.live.next_ms);
    cJSON_Delete(huge);
    cJSON_Delete(spec);
}

static void test_http_status(void **state)
{
    const char *ok[][2] = {
        { "HTTP/1.1 200 OK\r\n", "200" },
        { "HTTP/1.0 404 Not Found\r\n", "404" },
        { "HTTP/1.1 503\r\n\r\n", "503" },
        { "HTTP/2 301 Moved\r\n", "301" },
    };
    const char *bad[] = { "HTTP/1.1 20 OK\r\n", "HTTP/1.1 2000 OK\r\n", "FTP/1.1 200 OK\r\n",
                          "HTTP/1.1  200 OK\r\n", "HTTP/1.1 2x0 OK\r\n", "HTTP/1.1", "",
                          "HTTP/1.1111111111111111 200 OK\r\n" };
    int code;

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        code = 0;
        assert_int_equal(runtime__http_status(ok[i][0], strlen(ok[i][0]), &code), 0);
        assert_int_equal(code, atoi(ok[i][1]));
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (runtime__http_status(bad[i], strlen(bad[i]), &code) != -EPROTO)
            fail_msg("status line \"%s\" accepted", bad[i]);
    /* the length bounds the read: a good line cut short is refused */
    assert_int_equal(runtime__http_status("HTTP/1.1 200 OK\r\n", 11, &code), -EPROTO);
}

static void test_svc_endpoint(void **state)
{
    cJSON *ep = J("{\"subsets\":["
                  "{\"addresses\":[{\"ip\":\"10.244.0.1\"},{\"ip\":\"bogus\"},{\"ip\":\"10.244.0.2\"}],"
                  " \"ports\":[{\"name\":\"web\",\"port\":8080},{\"name\":\"dns\",\"port\":53,\"protocol\":\"UDP\"}]},"
                  "{\"addresses\":[{\"ip\":\"10.244.0.3\"}],\"ports\":[{\"name\":\"web\",\"port\":8081}]},"
                  "{\"notReadyAddresses\":[{\"ip\":\"10.244.0.9\"}],\"ports\":[{\"name\":\"admin\",\"port\":9}]},"
                  "{\"addresses\":[{\"ip\":\"10.244.0.4\"}],\"ports\":[{\"port\":70000}]}]}");
    char ip[INET_ADDRSTRLEN];
    const char *want_ip[] = { "10.244.0.1", "10.244.0.2", "10.244.0.3", "10.244.0.1" };
    const int want_port[] = { 8080, 8080, 8081, 8080 };
    int port;

    (void)state;
    for (unsigned n = 0; n < 4; n++) {   /* round robin over the ready addresses */
        assert_int_equal(runtime__svc_endpoint(ep, "web", n, ip, sizeof(ip), &port), 0);
        assert_string_equal(ip, want_ip[n]);
        assert_int_equal(port, want_port[n]);
    }
    assert_int_equal(runtime__svc_endpoint(ep, "dns", 0, ip, sizeof(ip), &port), -ENOENT);   /* UDP */
    assert_int_equal(runtime__svc_endpoint(ep, "admin", 0, ip, sizeof(ip), &port), -ENOENT); /* not ready */
    assert_int_equal(runtime__svc_endpoint(ep, "", 0, ip, sizeof(ip), &port), -ENOENT);      /* bad port */
    assert_int_equal(runtime__svc_endpoint(ep, "other", 0, ip, sizeof(ip), &port), -ENOENT);
    assert_int_equal(runtime__svc_endpoint(NULL, "web", 0, ip, sizeof(ip), &port), -ENOENT);
    cJSON_Delete(ep);
    ep = J("{\"subsets\":[{\"addresses\":[{\"ip\":\"10.244.1.1\"}],\"ports\":[{\"port\":80}]}]}");
    assert_int_equal(runtime__svc_endpoint(ep, "", 7, ip, sizeof(ip), &port), 0);   /* unnamed port */
    assert_string_equal(ip, "10.244.1.1");
    assert_int_equal(port, 80);
    cJSON_Delete(ep);
}

static void test_forward_check(void **state)
{
    char longpath[RUNTIME_HTTP_MAX_PATH + 2];

    (void)state;
    assert_int_equal(runtime__forward_check("GET", "/metrics?a=b%20c", NULL, NULL), 0);
    assert_int_equal(runtime__forward_check("POST", "/", "application/json", "*/*"), 0);
    assert_int_equal(runtime__forward_check("get", "/", NULL, NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("GET /x HTTP/1.1\r\nHost", "/", NULL, NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("", "/", NULL, NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("GET", "metrics", NULL, NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("GET", "/a b", NULL, NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("GET", "/a\r\nX-Evil: 1", NULL, NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("GET", "/", "text/plain\r\nX-Evil: 1", NULL), -EINVAL);
    assert_int_equal(runtime__forward_check("GET", "/", NULL, "a\nb"), -EINVAL);
    assert_int_equal(runtime__forward_check("GET", NULL, NULL, NULL), -EINVAL);
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(runtime__forward_check("GET", longpath, NULL, NULL), -EINVAL);
}

static void test_spec_check(void **state)
{
    const char *good[] = {
        "{\"sandbox\":12,\"scratch\":\"/tmp/x\",\"mounts\":[{\"src\":\"/a\",\"dst\":\"/b\",\"readOnly\":true}],"
        "\"uid\":65532,\"gid\":65532,\"fsGroup\":0,\"cwd\":\"/\",\"argv\":[\"rayop\",\"watcher\"],"
        "\"env\":[\"PATH=/bin\",\"EMPTY=\"]}",
        "{\"join\":5,\"argv\":[\"true\"]}",
    };
    const char *bad[] = {
        "[]", "{}", "{\"argv\":[]}", "{\"argv\":[\"\"]}", "{\"argv\":[\"a\",1]}",
        "{\"argv\":\"sh\"}", "{\"argv\":[\"a\"],\"env\":[\"NOEQUALS\"]}",
        "{\"argv\":[\"a\"],\"env\":[\"=x\"]}", "{\"argv\":[\"a\"],\"env\":{}}",
        "{\"argv\":[\"a\"],\"mounts\":[{\"src\":\"rel\",\"dst\":\"/b\"}]}",
        "{\"argv\":[\"a\"],\"mounts\":[{\"src\":\"/a\"}]}",
        "{\"argv\":[\"a\"],\"mounts\":[{\"src\":\"/a\",\"dst\":\"/b\",\"readOnly\":1}]}",
        "{\"argv\":[\"a\"],\"uid\":-1}", "{\"argv\":[\"a\"],\"uid\":1.5}",
        "{\"argv\":[\"a\"],\"gid\":1e12}", "{\"argv\":[\"a\"],\"sandbox\":\"1\"}",
        "{\"argv\":[\"a\"],\"cwd\":7}", "{\"argv\":[\"a\"],\"scratch\":\"tmp\"}",
    };
    char err[128];

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cJSON *s = J(good[i]);
        err[0] = '\0';
        if (runtime__spec_check(s, err, sizeof(err)) != 0)
            fail_msg("good spec %zu refused: %s", i, err);
        cJSON_Delete(s);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *s = J(bad[i]);
        err[0] = '\0';
        if (runtime__spec_check(s, err, sizeof(err)) != -EINVAL || !err[0])
            fail_msg("bad spec accepted: %s", bad[i]);
        cJSON_Delete(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_match),
        cmocka_unit_test(test_env_expand),
        cmocka_unit_test(test_env_expand_bound),
        cmocka_unit_test(test_field_value),
        cmocka_unit_test(test_size_text),
        cmocka_unit_test(test_probe_thresholds),
        cmocka_unit_test(test_probe_defaults_and_ports),
        cmocka_unit_test(test_http_status),
        cmocka_unit_test(test_svc_endpoint),
        cmocka_unit_test(test_forward_check),
        cmocka_unit_test(test_spec_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

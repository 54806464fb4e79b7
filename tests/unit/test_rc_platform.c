/* test_rc_platform.c - the RayCluster controller's start-up question (reconcilers/raycluster/
 * platform.c: OpenShift? cert-manager?) against a scripted API server: an API server that
 * does not answer (busy, 5xx) at start-up does not stop the controller - the first
 * reconcile that needs to know asks again -, one that refuses the question does, as
 * KubeRay's exitOnError; an answer is taken. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "reconcilers/raycluster/raycluster.h"
#include "util/util.h"

#include "kube_testsrv.h"

static uint64_t fake_now_ns;
static uint64_t fake_now(void *arg)
{
    (void)arg;
    return fake_now_ns;
}
static void fake_sleep(void *arg, uint64_t ns)
{
    (void)arg;
    fake_now_ns += ns;   /* the client's retry backoff takes no time */
}

static void test_start(void **state)
{
    struct ts_server srv;
    struct kube_config *cfg;
    struct kube_client *c;
    struct kube_client_opts o = { 0 };

    (void)state;
    fake_now_ns = 1000000000ull;
    o.clock.now_ns = fake_now;
    o.clock.sleep_ns = fake_sleep;
    assert_int_equal(ts_start(&srv, NULL, NULL), 0);
    assert_non_null(cfg = ts_config(&srv, 0, "tok"));
    assert_int_equal(kube_client_new(cfg, &o, &c), 0);
    /* a restarting API server: every attempt answered 503 */
    for (int i = 0; i < 40; i++)
        ts_push(&srv, 503, "", NULL, NULL, 0);
    assert_int_equal(rc_platform_start(c), 0);
    assert_true(ts_nlog(&srv) >= 1);
    /* a refusal stops it */
    pthread_mutex_lock(&srv.mu);
    for (int i = 0; i < srv.nscript; i++)   /* the 503s the client did not use */
        ts_response_clear(&srv.script[i]);
    srv.nscript = srv.next = 0;
    pthread_mutex_unlock(&srv.mu);
    ts_push(&srv, 403, "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\",\"message\":\"no\"}",
            NULL, NULL, 0);
    assert_true(rc_platform_start(c) < 0);
    /* an answer is taken */
    ts_push(&srv, 200, "{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"cert-manager.io\","
            "\"versions\":[{\"version\":\"v1\"}]}]}", NULL, NULL, 0);
    assert_int_equal(rc_platform_start(c), 0);
    kube_client_free(c);
    kube_config_free(cfg);
    ts_stop(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

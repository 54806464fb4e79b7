/*
 * test_host_ctx.c - the reconcile context: written-rv recording (one entry
 * per type, highest numeric rv kept, non-numeric kept beside, bounds and
 * overflow), key splitting, cache type names, the outcome mapping, the flag
 * and KubeRay config-file parser, and the write helpers recording the
 * resourceVersion an in-process kubesim answered with.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/tools/test_kind.h"
#include "reconcilers/host/internal.h"
#include "kubesim/registry/registry.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"
#include "util/util.h"

static const struct host_kind *test_kind(void)
{
    return &host_test_kind;
}

static void test_record_keeps_highest_per_type(void **state)
{
    (void)state;
    struct host_ctx ctx;
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "ns1/a", NULL, NULL), 0);
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", "100"), 0);
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", "99"), 0);
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", "1000"), 0);  /* longer = larger */
    assert_int_equal(host_ctx_record_write(&ctx, "ray.io/v1/rayclusters", "7"), 0);
    assert_int_equal(host_ctx_record_write(&ctx, "ray.io/v1/rayclusters", "7"), 0);
    assert_int_equal(ctx.n_written, 2);
    assert_string_equal(ctx.written[0].type, "v1/pods");
    assert_string_equal(ctx.written[0].rv, "1000");
    assert_string_equal(ctx.written[1].type, "ray.io/v1/rayclusters");
    assert_string_equal(ctx.written[1].rv, "7");
    /* an opaque rv cannot be ordered: kept as its own entry */
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", "abc"), 0);
    assert_int_equal(ctx.n_written, 3);
    assert_string_equal(ctx.written[2].rv, "abc");
    assert_false(ctx.written_overflow);
}

static void test_record_bounds(void **state)
{
    (void)state;
    struct host_ctx ctx;
    char longrv[IPC_RV_MAX + 4], type[32];
    memset(longrv, '1', sizeof(longrv) - 1);
    longrv[sizeof(longrv) - 1] = '\0';
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "ns1/a", NULL, NULL), 0);
    assert_int_equal(host_ctx_record_write(&ctx, "", "1"), -EINVAL);
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", ""), -EINVAL);
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", longrv), -EINVAL);
    assert_int_equal(host_ctx_record_write(&ctx, NULL, "1"), -EINVAL);
    assert_int_equal(ctx.n_written, 0);
    log_set_level(LOG_ERROR);
    for (int i = 0; i < IPC_WRITTEN_MAX; i++) {
        snprintf(type, sizeof(type), "g/v1/t%d", i);
        assert_int_equal(host_ctx_record_write(&ctx, type, "5"), 0);
    }
    assert_int_equal(host_ctx_record_write(&ctx, "g/v1/one-too-many", "5"), -ENOSPC);
    assert_true(ctx.written_overflow);
    assert_int_equal(ctx.n_written, IPC_WRITTEN_MAX);
    /* a known type still advances when full */
    assert_int_equal(host_ctx_record_write(&ctx, "g/v1/t3", "6"), 0);
    assert_string_equal(ctx.written[3].rv, "6");
    log_set_level(LOG_INFO);
}

static void test_ctx_init_splits_key(void **state)
{
    (void)state;
    struct host_ctx ctx;
    char big[300];
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "default/c1", NULL, NULL), 0);
    assert_string_equal(ctx.ns, "default");
    assert_string_equal(ctx.name, "c1");
    assert_int_equal(strlen(ctx.reconcile_id), 36);
    char id1[40];
    strcpy(id1, ctx.reconcile_id);
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "node1", NULL, NULL), 0);
    assert_string_equal(ctx.ns, "");
    assert_string_equal(ctx.name, "node1");
    assert_string_not_equal(ctx.reconcile_id, id1);
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "ns/", NULL, NULL), -EINVAL);
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "a/b/c", NULL, NULL), -EINVAL);
    memset(big, 'n', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    big[100] = '/';
    assert_int_equal(host_ctx_init(&ctx, test_kind(), big, NULL, NULL), -EINVAL);
}

static void test_cache_type_names(void **state)
{
    (void)state;
    char t[IPC_TYPE_MAX];
    assert_int_equal(host_cache_type(&KUBE_RES_PODS, t, sizeof(t)), 0);
    assert_string_equal(t, "v1/pods");
    assert_int_equal(host_cache_type(&KUBE_RES_RAYCLUSTERS, t, sizeof(t)), 0);
    assert_string_equal(t, "ray.io/v1/rayclusters");
    assert_int_equal(host_cache_type(&KUBE_RES_JOBS, t, sizeof(t)), 0);
    assert_string_equal(t, "batch/v1/jobs");
    assert_int_equal(host_cache_type(&KUBE_RES_JOBS, t, 5), -EINVAL);
}

static void test_outcome_mapping(void **state)
{
    (void)state;
    struct host_ctx ctx;
    struct host_result r = { .outcome = HOST_OK };
    struct ipc_outcome oc;
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "ns/a", NULL, NULL), 0);
    assert_int_equal(host_ctx_record_write(&ctx, "v1/pods", "12"), 0);

    host__outcome_to_ipc(0, &r, &ctx, &oc);
    assert_int_equal(oc.kind, IPC_OUTCOME_OK);
    assert_int_equal(oc.n_written, 1);
    assert_ptr_equal(oc.written, ctx.written);
    assert_int_equal(host__metrics_result_of(&oc, 0, &r), HOST_M_SUCCESS);

    host__outcome_to_ipc(-EIO, &r, &ctx, &oc);   /* an error return wins over OK */
    assert_int_equal(oc.kind, IPC_OUTCOME_ERROR);
    assert_non_null(oc.message);
    assert_int_equal(oc.n_written, 1);          /* writes before the error still gate */
    assert_int_equal(host__metrics_result_of(&oc, -EIO, &r), HOST_M_ERROR);

    host__outcome_to_ipc(-ESTALE, &r, &ctx, &oc);  /* a 409, not "Stale file handle" */
    assert_int_equal(oc.kind, IPC_OUTCOME_ERROR);
    assert_string_equal(oc.message, "conflict (stale resourceVersion)");
    assert_int_equal(host__outcome_log_level(-ESTALE, &oc), LOG_INFO);  /* not paged */
    host__outcome_to_ipc(-EIO, &r, &ctx, &oc);
    assert_int_equal(host__outcome_log_level(-EIO, &oc), LOG_ERROR);

    r.outcome = HOST_REQUEUE_AFTER;
    r.after_ms = 1500;
    host__outcome_to_ipc(0, &r, &ctx, &oc);
    assert_int_equal(oc.kind, IPC_OUTCOME_REQUEUE_AFTER);
    assert_int_equal(oc.after_ns, 1500000000ull);
    assert_int_equal(host__metrics_result_of(&oc, 0, &r), HOST_M_REQUEUE_AFTER);

    r.outcome = HOST_REQUEUE;
    host__outcome_to_ipc(0, &r, &ctx, &oc);
    assert_int_equal(oc.kind, IPC_OUTCOME_ERROR);  /* rate-limited re-add */
    assert_int_equal(host__metrics_result_of(&oc, 0, &r), HOST_M_REQUEUE);
    assert_int_equal(host__outcome_log_level(0, &oc), -1);  /* a requeue is no error */

    r.outcome = HOST_TERMINAL;
    snprintf(r.message, sizeof(r.message), "bad spec");
    host__outcome_to_ipc(-EINVAL, &r, &ctx, &oc);
    assert_int_equal(oc.kind, IPC_OUTCOME_TERMINAL);
    assert_string_equal(oc.message, "bad spec");
    assert_int_equal(host__outcome_log_level(-EINVAL, &oc), LOG_ERROR);
}

static void test_opts_flags(void **state)
{
    (void)state;
    struct host_opts o;
    char *argv[] = { "controller", "test", "--reconcile-concurrency", "4",
                     "--watch-namespace=a,b", "--namespace", "c", "--qps", "50",
                     "--burst=80", "--enable-leader-election", "--metrics-addr", "127.0.0.1:0",
                     "--health-probe-bind-address=0", "--log-stdout-encoder", "console",
                     "--feature-gates", "RayJobDeletionPolicy=true", "--use-kubernetes-proxy" };
    int argc = (int)(sizeof(argv) / sizeof(argv[0]));
    assert_int_equal(host_opts_parse(&o, argc, argv), 0);
    assert_string_equal(o.kind, "test");
    assert_int_equal(o.workers, 4);
    assert_int_equal(o.nnamespaces, 3);
    assert_string_equal(o.namespaces[1], "b");
    assert_true(o.qps == 50.0);
    assert_int_equal(o.burst, 80);
    assert_true(o.leader_election);
    assert_true(o.use_kubernetes_proxy);
    assert_string_equal(o.metrics_addr, "127.0.0.1:0");
    assert_string_equal(o.probe_addr, "0");
    assert_string_equal(o.log_encoder, "console");
    assert_string_equal(o.feature_gates, "RayJobDeletionPolicy=true");
    assert_string_equal(o.state_dir, "/run/rayop");
    host_opts_free(&o);

    char *bad1[] = { "controller", "test", "--workers", "0" };
    char *bad2[] = { "controller", "test", "--no-such-flag", "1" };
    char *bad3[] = { "controller", "test", "--qps" };
    char *bad4[] = { "controller", "test", "--log-stdout-encoder", "xml" };
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    assert_int_equal(host_opts_parse(&o, 4, bad1), -EINVAL);
    host_opts_free(&o);
    assert_int_equal(host_opts_parse(&o, 4, bad2), -EINVAL);
    host_opts_free(&o);
    assert_int_equal(host_opts_parse(&o, 3, bad3), -EINVAL);
    host_opts_free(&o);
    assert_int_equal(host_opts_parse(&o, 4, bad4), -EINVAL);
    host_opts_free(&o);
    fclose(stderr);
    stderr = saved;

    char host[64];
    int port;
    assert_int_equal(host_parse_addr(":8080", host, sizeof(host), &port), 0);
    assert_string_equal(host, "");
    assert_int_equal(port, 8080);
    assert_int_equal(host_parse_addr("0", host, sizeof(host), &port), 0);
    assert_int_equal(port, -1);
    assert_int_equal(host_parse_addr("127.0.0.1:99999", host, sizeof(host), &port), -EINVAL);
    assert_int_equal(host_parse_addr("nocolon", host, sizeof(host), &port), -EINVAL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_opts_config_file(void **state)
{
    (void)state;
    struct host_opts o;
    char path[64], err[256] = "";
    char *argv[] = { "controller", "rayjob", "--workers", "2", "--use-kubernetes-proxy=true",
                     "--watch-namespace", "flags-ns" };
    snprintf(path, sizeof(path), "/tmp/test_host_cfg.%d.yaml", (int)getpid());
    write_file(path,
               "apiVersion: config.ray.io/v1alpha1\n"
               "kind: Configuration\n"
               "metricsAddr: 127.0.0.1:9090\n"
               "probeAddr: 127.0.0.1:9091\n"
               "reconcileConcurrency: 7\n"
               "watchNamespace: team-a,team-b\n"
               "enableLeaderElection: false\n"
               "headSidecarContainers:\n"
               "- name: fluentbit\n"
               "  image: fluent/fluent-bit\n"
               "featureGates:\n"
               "  RayClusterStatusConditions: true\n"
               "  RayJobDeletionPolicy: false\n"
               "qps: 30\n");
    assert_int_equal(host_opts_parse(&o, 7, argv), 0);
    assert_true(o.use_kubernetes_proxy);
    assert_int_equal(host_opts_load_config(&o, path, err, sizeof(err)), 0);
    assert_int_equal(o.workers, 7);   /* the file wins, as in KubeRay */
    /* and the flags are ignored: useKubernetesProxy is not in the file -> its default */
    assert_false(o.use_kubernetes_proxy);
    assert_string_equal(o.metrics_addr, "127.0.0.1:9090");
    assert_string_equal(o.probe_addr, "127.0.0.1:9091");
    assert_int_equal(o.nnamespaces, 2);
    assert_string_equal(o.namespaces[0], "team-a");
    assert_false(o.leader_election);
    assert_string_equal(o.feature_gates, "RayClusterStatusConditions=true,RayJobDeletionPolicy=false");
    assert_true(o.qps == 30.0);
    /* the whole file is kept as JSON for what the flags do not cover */
    const cJSON *hs = cJSON_GetObjectItemCaseSensitive(o.config_json, "headSidecarContainers");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(hs, 0), "name")->valuestring,
                        "fluentbit");
    host_opts_free(&o);
    assert_null(o.config_json);

    /* under rayop up (--supervised) the addresses are up's: a Configuration's metricsAddr and
     * probeAddr (or their defaults) would put every controller of the Pod on one port */
    char *sv[] = { "controller", "rayjob", "--metrics-addr", "0", "--supervised",
                   "--health-probe-bind-address", "127.0.0.1:7003" };
    assert_int_equal(host_opts_parse(&o, 7, sv), 0);
    assert_true(o.supervised);
    assert_int_equal(host_opts_load_config(&o, path, err, sizeof(err)), 0);
    assert_int_equal(o.workers, 7);   /* the rest of the file still wins */
    assert_string_equal(o.metrics_addr, "0");
    assert_string_equal(o.probe_addr, "127.0.0.1:7003");
    host_opts_free(&o);

    write_file(path, "reconcileConcurrency: lots\n");
    assert_int_equal(host_opts_parse(&o, 4, argv), 0);
    assert_int_equal(host_opts_load_config(&o, path, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "reconcileConcurrency"));
    host_opts_free(&o);

    write_file(path, "a: [1, 2\n");
    assert_int_equal(host_opts_parse(&o, 4, argv), 0);
    assert_int_equal(host_opts_load_config(&o, path, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "YAML"));
    host_opts_free(&o);

    write_file(path, "a: [[[[[[[[[[1]]]]]]]]]]\n");
    assert_int_equal(host_opts_parse(&o, 4, argv), 0);
    assert_int_equal(host_opts_load_config(&o, path, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "deeper"));
    host_opts_free(&o);
    unlink(path);
    assert_true(host_opts_load_config(&o, path, err, sizeof(err)) < 0);
}

/* ---- write helpers against an in-process kubesim ------------------------------------ */

struct sim {
    struct store *store;
    struct server *srv;
    struct kube_config *cfg;
    struct kube_client *kube;
};

static int sim_setup(void **state)
{
    struct sim *s = calloc(1, sizeof(*s));
    struct registry *reg;
    struct store_opts so = { 0 };
    struct server_opts o = { .host = "127.0.0.1", .port = 0 };
    char err[256], kc[512];
    log_set_level(LOG_ERROR);
    if (registry_new(&reg) < 0 || store_open(&so, reg, &s->store, err, sizeof(err)) < 0 ||
        server_new(&o, s->store, &s->srv, err, sizeof(err)) < 0 ||
        server_start(s->srv, err, sizeof(err)) < 0)
        return -1;
    snprintf(kc, sizeof(kc),
             "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
             "clusters: [{name: t, cluster: {server: \"%s\"}}]\n"
             "users: [{name: t, user: {}}]\n"
             "contexts: [{name: t, context: {cluster: t, user: t}}]\n", server_url(s->srv));
    if (kube_config_parse(kc, strlen(kc), NULL, NULL, &s->cfg, err, sizeof(err)) < 0 ||
        kube_client_new(s->cfg, NULL, &s->kube) < 0)
        return -1;
    *state = s;
    return 0;
}

static int sim_teardown(void **state)
{
    struct sim *s = *state;
    kube_client_free(s->kube);
    kube_config_free(s->cfg);
    server_free(s->srv);
    store_close(s->store);
    free(s);
    log_set_level(LOG_INFO);
    return 0;
}

static void test_writes_record_server_rv(void **state)
{
    struct sim *s = *state;
    struct host_ctx ctx;
    struct kube_result r = { 0 };
    assert_int_equal(host_ctx_init(&ctx, test_kind(), "default/p1", s->kube, NULL), 0);
    cJSON *pod = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"},"
                             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
    assert_int_equal(host_create(&ctx, &KUBE_RES_PODS, "default", pod, &r), 0);
    cJSON_Delete(pod);
    assert_int_equal(ctx.n_written, 1);
    assert_string_equal(ctx.written[0].type, "v1/pods");
    assert_string_equal(ctx.written[0].rv, r.resource_version);
    char created_rv[64];
    strcpy(created_rv, r.resource_version);
    kube_result_release(&r);

    const char *patch = "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}";
    struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
    memset(&r, 0, sizeof(r));
    assert_int_equal(host_patch(&ctx, &KUBE_RES_PODS, "default", "p1", patch, strlen(patch),
                                &po, &r), 0);
    assert_int_equal(ctx.n_written, 1);
    assert_string_equal(ctx.written[0].rv, r.resource_version);
    assert_string_not_equal(ctx.written[0].rv, created_rv);
    kube_result_release(&r);

    /* a failed write records nothing */
    memset(&r, 0, sizeof(r));
    assert_int_equal(host_patch(&ctx, &KUBE_RES_PODS, "default", "nope", patch, strlen(patch),
                                &po, &r), -ENOENT);
    kube_result_release(&r);
    memset(&r, 0, sizeof(r));
    assert_int_equal(host_delete(&ctx, &KUBE_RES_PODS, "default", "nope", NULL, &r), -ENOENT);
    kube_result_release(&r);
    assert_int_equal(ctx.n_written, 1);

    struct kube_delete_opts dopt = { .grace_seconds = -1 };
    memset(&r, 0, sizeof(r));
    assert_int_equal(host_delete(&ctx, &KUBE_RES_PODS, "default", "p1", &dopt, &r), 0);
    kube_result_release(&r);
}

static void test_feature_gates(void **state)
{
    (void)state;
    struct host_ctx ctx;
    struct host_settings st = { .feature_gates = "RayJobDeletionPolicy=false, Foo=true,Foo=false,Bar=TRUE" };
    assert_int_equal(host_ctx_init(&ctx, NULL, "ns1/a", NULL, NULL), 0);
    assert_true(host_feature_enabled(&ctx, "RayJobDeletionPolicy", true));   /* no settings */
    ctx.settings = &st;
    assert_false(host_feature_enabled(&ctx, "RayJobDeletionPolicy", true));
    assert_false(host_feature_enabled(&ctx, "Foo", true));                   /* last wins */
    assert_true(host_feature_enabled(&ctx, "Bar", false));
    assert_false(host_feature_enabled(&ctx, "Ba", false));                   /* whole names */
    assert_true(host_feature_enabled(&ctx, "Other", true));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_keeps_highest_per_type),
        cmocka_unit_test(test_record_bounds),
        cmocka_unit_test(test_ctx_init_splits_key),
        cmocka_unit_test(test_cache_type_names),
        cmocka_unit_test(test_outcome_mapping),
        cmocka_unit_test(test_opts_flags),
        cmocka_unit_test(test_feature_gates),
        cmocka_unit_test(test_opts_config_file),
        cmocka_unit_test_setup_teardown(test_writes_record_server_rv, sim_setup, sim_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

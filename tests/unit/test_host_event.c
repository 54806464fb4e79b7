/*
 * test_host_event.c - the Event recorder (reconcilers/host/event.c) against an
 * in-process kubesim: an events.k8s.io/v1 Event with KubeRay's fields, repeats
 * folded into one Event's series, distinct notes kept apart, nothing recorded
 * for read-your-writes; the writer thread (writes leave the reconcile, in
 * order); and a kind's own metrics appended to /metrics text.
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

#include "reconcilers/kinds.h"
#include "reconcilers/host/internal.h"
#include "kubesim/registry/registry.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"
#include "util/util.h"

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
    host__event_forget_all();
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

static cJSON *list_events(struct sim *s)
{
    struct kube_result r = { 0 };
    assert_int_equal(kube_list(s->kube, &HOST_RES_EVENTS_V1, "default", NULL, &r), 0);
    cJSON *items = cJSON_DetachItemFromObjectCaseSensitive(r.body, "items");
    kube_result_release(&r);
    assert_non_null(items);
    return items;
}

static const char *jstr(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_event_fields_and_series(void **state)
{
    struct sim *s = *state;
    struct host_ctx ctx;
    const struct host_kind *k = host_kind_find(reconcilers_kinds, reconcilers_nkinds, "raycluster");
    assert_non_null(k);
    assert_int_equal(host_ctx_init(&ctx, k, "default/rc1", s->kube, NULL), 0);
    cJSON *rc = cJSON_Parse("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":"
                            "{\"name\":\"rc1\",\"namespace\":\"default\",\"uid\":\"u-1\","
                            "\"resourceVersion\":\"7\"}}");
    assert_int_equal(host_event(&ctx, rc, HOST_EVENT_NORMAL, "CreatedWorkerPod", "Create",
                                "Created worker Pod %s/%s", "default", "w1"), 0);
    cJSON *items = list_events(s);
    assert_int_equal(cJSON_GetArraySize(items), 1);
    const cJSON *e = cJSON_GetArrayItem(items, 0);
    assert_string_equal(jstr(e, "reason", NULL), "CreatedWorkerPod");
    assert_string_equal(jstr(e, "type", NULL), "Normal");
    assert_string_equal(jstr(e, "action", NULL), "Create");
    assert_string_equal(jstr(e, "note", NULL), "Created worker Pod default/w1");
    assert_string_equal(jstr(e, "reportingController", NULL), "raycluster-controller");
    assert_true(strncmp(jstr(e, "reportingInstance", NULL), "raycluster-controller-", 22) == 0);
    assert_string_equal(jstr(e, "regarding", "kind"), "RayCluster");
    assert_string_equal(jstr(e, "regarding", "uid"), "u-1");
    assert_string_equal(jstr(e, "regarding", "name"), "rc1");
    assert_true(strncmp(jstr(e, "metadata", "name"), "rc1.", 4) == 0);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(e, "eventTime"));
    assert_null(cJSON_GetObjectItemCaseSensitive(e, "series"));
    cJSON_Delete(items);

    /* the same again: one Event, series count 2 */
    assert_int_equal(host_event(&ctx, rc, HOST_EVENT_NORMAL, "CreatedWorkerPod", "Create",
                                "Created worker Pod %s/%s", "default", "w1"), 0);
    items = list_events(s);
    assert_int_equal(cJSON_GetArraySize(items), 1);
    const cJSON *series = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(items, 0), "series");
    assert_non_null(series);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(series, "count")->valueint, 2);
    cJSON_Delete(items);

    /* another note or type is another Event */
    assert_int_equal(host_event(&ctx, rc, HOST_EVENT_NORMAL, "CreatedWorkerPod", "Create",
                                "Created worker Pod %s/%s", "default", "w2"), 0);
    assert_int_equal(host_event(&ctx, rc, HOST_EVENT_WARNING, "InvalidRayClusterSpec", "Validate",
                                "bad"), 0);
    items = list_events(s);
    assert_int_equal(cJSON_GetArraySize(items), 3);
    cJSON_Delete(items);

    /* Events are not cached: nothing for read-your-writes */
    assert_int_equal(ctx.n_written, 0);
    /* an object without a name is refused */
    cJSON *bad = cJSON_Parse("{\"metadata\":{}}");
    assert_int_equal(host_event(&ctx, bad, HOST_EVENT_NORMAL, "R", "A", "x"), -EINVAL);
    cJSON_Delete(bad);
    cJSON_Delete(rc);
}

/* With the writer thread running, host_event returns before the write and the
 * writes still land in order: a create and then its series patch (count 3),
 * and a burst of distinct Events, all there after a flush; nothing dropped;
 * stop with an empty queue returns; afterwards writes are inline again. */
static void test_event_writer_thread(void **state)
{
    struct sim *s = *state;
    struct host_ctx ctx;
    const struct host_kind *k = host_kind_find(reconcilers_kinds, reconcilers_nkinds, "raycluster");
    assert_int_equal(host_ctx_init(&ctx, k, "default/rc2", s->kube, NULL), 0);
    cJSON *rc = cJSON_Parse("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":"
                            "{\"name\":\"rc2\",\"namespace\":\"default\",\"uid\":\"u-2\"}}");
    assert_int_equal(host_events_start(), 0);
    assert_int_equal(host_events_start(), 0);   /* idempotent */
    for (int i = 0; i < 3; i++)
        assert_int_equal(host_event(&ctx, rc, HOST_EVENT_NORMAL, "CreatedHeadPod", "Create",
                                    "Created head Pod"), 0);
    for (int i = 0; i < 40; i++)
        assert_int_equal(host_event(&ctx, rc, HOST_EVENT_NORMAL, "CreatedWorkerPod", "Create",
                                    "Created worker Pod w%d", i), 0);
    assert_int_equal(host__events_flush(30000), 0);
    cJSON *items = list_events(s);
    assert_int_equal(cJSON_GetArraySize(items), 41);
    int heads = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, items) {
        if (strcmp(jstr(e, "reason", NULL), "CreatedHeadPod") != 0)
            continue;
        heads++;
        /* the third occurrence is within the flush period: series count 2 */
        const cJSON *series = cJSON_GetObjectItemCaseSensitive(e, "series");
        assert_non_null(series);
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(series, "count")->valueint, 2);
    }
    assert_int_equal(heads, 1);
    cJSON_Delete(items);
    assert_int_equal(host__events_dropped(), 0);
    assert_int_equal(ctx.n_written, 0);
    host_events_stop(1000);
    assert_int_equal(host__events_flush(10), 0);   /* not running: nothing to wait for */
    /* inline again: the write is there as soon as host_event returns */
    assert_int_equal(host_event(&ctx, rc, HOST_EVENT_WARNING, "Other", "Validate", "x"), 0);
    items = list_events(s);
    assert_int_equal(cJSON_GetArraySize(items), 42);
    cJSON_Delete(items);
    cJSON_Delete(rc);
}

static int kind_metrics(struct host_view *v, struct buf *out)
{
    assert_ptr_equal(v, (struct host_view *)0x1);
    return buf_puts(out, "# TYPE kind_metric gauge\nkind_metric{a=\"b\"} 3\n");
}

static void test_kind_metrics_appended(void **state)
{
    (void)state;
    struct host_metrics m;
    struct buf b = { 0 };
    host__metrics_init(&m, "raycluster", "raycluster", 1);
    assert_int_equal(host__metrics_text(&m, &b), 0);
    assert_null(strstr(b.data ? b.data : "", "kind_metric"));
    buf_reset(&b);
    m.kind_metrics = kind_metrics;
    m.kind_view = (struct host_view *)0x1;
    assert_int_equal(host__metrics_text(&m, &b), 0);
    assert_non_null(b.data);
    const char *at = strstr(b.data, "kind_metric{a=\"b\"} 3\n");
    assert_non_null(at);
    /* after the host's own lines */
    assert_true(at > strstr(b.data, "rayop_host_status_errors_total"));
    buf_free(&b);
    host__metrics_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_event_fields_and_series, sim_setup, sim_teardown),
        cmocka_unit_test_setup_teardown(test_event_writer_thread, sim_setup, sim_teardown),
        cmocka_unit_test(test_kind_metrics_appended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

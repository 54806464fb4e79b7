/* test_kube_kubesim.c - the kube/ client against a live kubesim: config loaded from
 * the kubeconfig kubesim wrote ($KUBECONFIG), then create/get/update/patch/list
 * (selectors, paging by hand and with kube_list_each)/delete of Pods with typed errors, and a watch from a list's
 * resourceVersion that sees ADDED, MODIFIED and DELETED.
 *
 * Skipped (with a message) unless RAYOP_KUBESIM_URL is set; the integration script
 * tests/integration/kube_client.sh starts kubesim and sets it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/internal.h"
#include "util/util.h"

struct env {
    struct kube_config *cfg;
    struct kube_client *c;
    char prefix[32];
};

static int setup(void **state)
{
    static struct env e;
    char err[256] = "";
    const char *url = getenv("RAYOP_KUBESIM_URL");
    if (url == NULL || url[0] == '\0') {
        *state = NULL;
        return 0;
    }
    if (kube_config_load(NULL, &e.cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "kubeconfig: %s\n", err);
        return -1;
    }
    if (strcmp(e.cfg->server, url) != 0) {
        fprintf(stderr, "kubeconfig server %s != RAYOP_KUBESIM_URL %s\n", e.cfg->server, url);
        return -1;
    }
    if (kube_client_new(e.cfg, NULL, &e.c) < 0)
        return -1;
    snprintf(e.prefix, sizeof(e.prefix), "kt%d", (int)getpid());
    *state = &e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    if (e != NULL) {
        kube_client_free(e->c);
        kube_config_free(e->cfg);
    }
    return 0;
}

#define NEED_KUBESIM(e)                                                                    \
    do {                                                                                   \
        if ((e) == NULL) {                                                                 \
            fprintf(stderr, "skipped: RAYOP_KUBESIM_URL is unset (run "                    \
                            "tests/integration/kube_client.sh)\n");                        \
            skip();                                                                        \
        }                                                                                  \
    } while (0)

static cJSON *pod(const char *name, const char *app)
{
    char js[512];
    snprintf(js, sizeof(js),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"image\":\"busybox\"}]}}", name, app);
    return cJSON_Parse(js);
}

static void test_crud_and_typed_errors(void **state)
{
    struct env *e = *state;
    NEED_KUBESIM(e);
    struct kube_result res = { 0 };
    char name[64], rv1[64];
    snprintf(name, sizeof(name), "%s-crud", e->prefix);
    cJSON *p = pod(name, "crud");

    assert_int_equal(kube_create(e->c, &KUBE_RES_PODS, "default", p, &res), 0);
    assert_true(res.resource_version[0] != '\0');
    snprintf(rv1, sizeof(rv1), "%s", res.resource_version);
    kube_result_release(&res);
    assert_int_equal(kube_create(e->c, &KUBE_RES_PODS, "default", p, &res), -EEXIST);
    assert_string_equal(res.status.reason, "AlreadyExists");
    kube_result_release(&res);

    assert_int_equal(kube_get(e->c, &KUBE_RES_PODS, "default", name, &res), 0);
    assert_string_equal(res.resource_version, rv1);
    cJSON *live = res.body;
    res.body = NULL;
    kube_result_release(&res);

    /* Update with the live resourceVersion, then again with the stale one: Conflict. */
    cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(live, "metadata"), "labels");
    cJSON_ReplaceItemInObject(labels, "app", cJSON_CreateString("crud2"));
    assert_int_equal(kube_update(e->c, &KUBE_RES_PODS, "default", live, &res), 0);
    assert_string_not_equal(res.resource_version, rv1);
    kube_result_release(&res);
    assert_int_equal(kube_update(e->c, &KUBE_RES_PODS, "default", live, &res), -ESTALE);
    assert_string_equal(res.status.reason, "Conflict");
    kube_result_release(&res);
    cJSON_Delete(live);

    const char *mp = "{\"metadata\":{\"labels\":{\"patched\":\"yes\"}}}";
    struct kube_patch_opts po = { KUBE_PATCH_MERGE, NULL, 0, NULL };
    assert_int_equal(kube_patch(e->c, &KUBE_RES_PODS, "default", name, mp, strlen(mp), &po, &res), 0);
    labels = cJSON_GetObjectItem(cJSON_GetObjectItem(res.body, "metadata"), "labels");
    assert_string_equal(cJSON_GetObjectItem(labels, "patched")->valuestring, "yes");
    assert_string_equal(cJSON_GetObjectItem(labels, "app")->valuestring, "crud2");
    kube_result_release(&res);

    struct kube_delete_opts dopt = { "Background", 0, NULL, NULL };
    assert_int_equal(kube_delete(e->c, &KUBE_RES_PODS, "default", name, &dopt, &res), 0);
    kube_result_release(&res);
    assert_int_equal(kube_get(e->c, &KUBE_RES_PODS, "default", name, &res), -ENOENT);
    assert_string_equal(res.status.reason, "NotFound");
    assert_int_equal(res.status.code, 404);
    kube_result_release(&res);
    cJSON_Delete(p);
}

struct pagecount {
    int pages, items;
};

static int count_page(void *arg, cJSON *list)
{
    struct pagecount *pc = arg;
    pc->pages++;
    pc->items += cJSON_GetArraySize(cJSON_GetObjectItem(list, "items"));
    return 0;
}

static void test_list_selectors_and_paging(void **state)
{
    struct env *e = *state;
    NEED_KUBESIM(e);
    struct kube_result res = { 0 };
    char name[64], sel[96];
    snprintf(sel, sizeof(sel), "app=%s-page", e->prefix);
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "%s-page-%d", e->prefix, i);
        char app[64];
        snprintf(app, sizeof(app), "%s-page", e->prefix);
        cJSON *p = pod(name, app);
        assert_int_equal(kube_create(e->c, &KUBE_RES_PODS, "default", p, &res), 0);
        kube_result_release(&res);
        cJSON_Delete(p);
    }
    struct kube_list_opts lo = { .label_selector = sel, .limit = 2 };
    int total = 0, pages = 0;
    char cont[1024] = "";
    do {
        lo.continue_token = cont[0] ? cont : NULL;
        assert_int_equal(kube_list(e->c, &KUBE_RES_PODS, "default", &lo, &res), 0);
        assert_true(res.resource_version[0] != '\0');
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(res.body, "items"));
        assert_in_range(n, 0, 2);
        total += n;
        pages++;
        const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(res.body, "metadata"), "continue");
        snprintf(cont, sizeof(cont), "%s", cJSON_IsString(c) ? c->valuestring : "");
        kube_result_release(&res);
    } while (cont[0] != '\0' && pages < 10);
    assert_int_equal(total, 5);
    assert_int_equal(pages, 3);

    /* The same walk through kube_list_each. */
    struct pagecount pc = { 0 };
    char rv[64] = "";
    struct kube_list_opts lo2 = { .label_selector = sel, .limit = 2 };
    assert_int_equal(kube_list_each(e->c, &KUBE_RES_PODS, "default", &lo2, count_page, &pc, rv,
                                    sizeof(rv)), 0);
    assert_int_equal(pc.items, 5);
    assert_int_equal(pc.pages, 3);
    assert_true(rv[0] != '\0');

    struct kube_list_opts none = { .label_selector = "app=no-such-app" };
    assert_int_equal(kube_list(e->c, &KUBE_RES_PODS, "default", &none, &res), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(res.body, "items")), 0);
    kube_result_release(&res);

    struct kube_list_opts del = { .label_selector = sel };
    assert_int_equal(kube_delete_collection(e->c, &KUBE_RES_PODS, "default", &del, NULL, &res), 0);
    kube_result_release(&res);
    assert_int_equal(kube_list(e->c, &KUBE_RES_PODS, "default", &del, &res), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(res.body, "items")), 0);
    kube_result_release(&res);
}

static void test_status_patch_types_apply_raw(void **state)
{
    struct env *e = *state;
    NEED_KUBESIM(e);
    struct kube_result res = { 0 };
    char name[64];
    snprintf(name, sizeof(name), "%s-sub", e->prefix);
    cJSON *p = pod(name, "sub");
    assert_int_equal(kube_create(e->c, &KUBE_RES_PODS, "default", p, &res), 0);
    cJSON *live = res.body;
    res.body = NULL;
    kube_result_release(&res);

    /* /status: only the status changes, and a new resourceVersion comes back. */
    cJSON_DeleteItemFromObject(live, "status");
    cJSON *st = cJSON_AddObjectToObject(live, "status");
    cJSON_AddStringToObject(st, "phase", "Running");
    char rv_before[64];
    snprintf(rv_before, sizeof(rv_before), "%s",
             cJSON_GetObjectItem(cJSON_GetObjectItem(live, "metadata"), "resourceVersion")->valuestring);
    assert_int_equal(kube_update_status(e->c, &KUBE_RES_PODS, "default", live, &res), 0);
    assert_string_not_equal(res.resource_version, rv_before);
    kube_result_release(&res);
    assert_int_equal(kube_get(e->c, &KUBE_RES_PODS, "default", name, &res), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(res.body, "status"), "phase")->valuestring,
                        "Running");
    kube_result_release(&res);
    cJSON_Delete(live);

    /* Strategic merge patch on a built-in type, and JSON patch. */
    const char *smp = "{\"metadata\":{\"labels\":{\"smp\":\"1\"}}}";
    struct kube_patch_opts po = { KUBE_PATCH_STRATEGIC, NULL, 0, NULL };
    assert_int_equal(kube_patch(e->c, &KUBE_RES_PODS, "default", name, smp, strlen(smp), &po, &res), 0);
    kube_result_release(&res);
    const char *jp = "[{\"op\":\"add\",\"path\":\"/metadata/labels/jp\",\"value\":\"2\"}]";
    po.type = KUBE_PATCH_JSON;
    assert_int_equal(kube_patch(e->c, &KUBE_RES_PODS, "default", name, jp, strlen(jp), &po, &res), 0);
    const cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(res.body, "metadata"), "labels");
    assert_string_equal(cJSON_GetObjectItem(labels, "smp")->valuestring, "1");
    assert_string_equal(cJSON_GetObjectItem(labels, "jp")->valuestring, "2");
    kube_result_release(&res);

    /* A delete whose resourceVersion precondition is stale is a Conflict. */
    struct kube_delete_opts stale = { NULL, -1, NULL, "1" };
    assert_int_equal(kube_delete(e->c, &KUBE_RES_PODS, "default", name, &stale, &res), -ESTALE);
    kube_result_release(&res);
    assert_int_equal(kube_delete(e->c, &KUBE_RES_PODS, "default", name, NULL, &res), 0);
    kube_result_release(&res);
    cJSON_Delete(p);

    /* Server-side apply creates a ConfigMap under our field manager. */
    const struct kube_resource cms = { "", "v1", "configmaps", 1 };
    char cm[256];
    snprintf(cm, sizeof(cm), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
             "{\"name\":\"%s-cm\"},\"data\":{\"k\":\"v\"}}", e->prefix);
    char cmname[64];
    snprintf(cmname, sizeof(cmname), "%s-cm", e->prefix);
    struct kube_patch_opts ap = { KUBE_PATCH_APPLY, "rayop-test", 1, NULL };
    assert_int_equal(kube_patch(e->c, &cms, "default", cmname, cm, strlen(cm), &ap, &res), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(res.body, "data"), "k")->valuestring, "v");
    kube_result_release(&res);
    assert_int_equal(kube_delete(e->c, &cms, "default", cmname, NULL, &res), 0);
    kube_result_release(&res);

    /* Raw call: /version. */
    struct kube_request rq = { .method = "GET", .path = "/version", .idempotent = 1, .parse_json = 1 };
    assert_int_equal(kube_raw(e->c, &rq, &res), 0);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(res.body, "gitVersion")));
    assert_true(res.raw_len > 0);
    kube_result_release(&res);
}

struct wstate {
    const char *name;
    int added, modified, deleted, others;
    int ended, end_err, end_code;
};

static void w_event(struct kube_watch *w, struct kube_event *ev, void *arg)
{
    struct wstate *s = arg;
    const cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(ev->object, "metadata"), "name");
    (void)w;
    if (ev->type == KUBE_EVENT_BOOKMARK || !cJSON_IsString(n) || strcmp(n->valuestring, s->name))
        return;
    switch (ev->type) {
    case KUBE_EVENT_ADDED: s->added++; break;
    case KUBE_EVENT_MODIFIED: s->modified++; break;
    case KUBE_EVENT_DELETED: s->deleted++; break;
    default: s->others++; break;
    }
}

static void w_end(struct kube_watch *w, int err, const struct kube_status *st, void *arg)
{
    struct wstate *s = arg;
    (void)w;
    s->ended = 1;
    s->end_err = err;
    s->end_code = st != NULL ? st->code : 0;
}

static void tick(uv_timer_t *t)
{
    (void)t;
}

static void test_watch_sees_writes(void **state)
{
    struct env *e = *state;
    NEED_KUBESIM(e);
    struct kube_result res = { 0 };
    char name[64], rv[64];
    struct wstate ws = { 0 };
    uv_loop_t loop;
    uv_timer_t t;
    struct kube_watcher *wd;
    struct kube_watch *w;

    snprintf(name, sizeof(name), "%s-watch", e->prefix);
    ws.name = name;
    assert_int_equal(kube_list(e->c, &KUBE_RES_PODS, "default", NULL, &res), 0);
    snprintf(rv, sizeof(rv), "%s", res.resource_version);
    kube_result_release(&res);

    /* Writes after the list's rv; the watch from that rv must replay them. */
    cJSON *p = pod(name, "watch");
    assert_int_equal(kube_create(e->c, &KUBE_RES_PODS, "default", p, &res), 0);
    kube_result_release(&res);
    const char *mp = "{\"metadata\":{\"labels\":{\"step\":\"2\"}}}";
    assert_int_equal(kube_patch(e->c, &KUBE_RES_PODS, "default", name, mp, strlen(mp), NULL, &res), 0);
    kube_result_release(&res);
    struct kube_delete_opts dopt = { NULL, 0, NULL, NULL };
    assert_int_equal(kube_delete(e->c, &KUBE_RES_PODS, "default", name, &dopt, &res), 0);
    kube_result_release(&res);
    cJSON_Delete(p);

    uv_loop_init(&loop);
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, tick, 20, 20);
    assert_int_equal(kube_watcher_new(e->c, &loop, &wd), 0);
    struct kube_watch_opts o = { .resource_version = rv, .allow_bookmarks = 1,
                                 .on_event = w_event, .on_end = w_end, .arg = &ws };
    assert_int_equal(kube_watch_start(wd, &KUBE_RES_PODS, "default", &o, &w), 0);
    uint64_t deadline = util_now_ms() + 10000;
    while (ws.deleted == 0 && !ws.ended && util_now_ms() < deadline)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(ws.ended, 0);
    assert_int_equal(ws.added, 1);
    assert_true(ws.modified >= 1);
    assert_int_equal(ws.deleted, 1);
    assert_int_equal(ws.others, 0);
    assert_true(strcmp(kube_watch_last_rv(w), rv) != 0);
    kube_watch_stop(w);
    kube_watcher_free(wd);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * With a small server watch window (kubesim --watch-window N, announced through
 * RAYOP_KUBESIM_WATCH_WINDOW), a watch from a resourceVersion older than the
 * window gets the ERROR 410 Expired event and ends with -KUBE_EGONE: the signal
 * the watcher relists on.
 */
static void test_expired_rv_watch_ends_gone(void **state)
{
    struct env *e = *state;
    NEED_KUBESIM(e);
    const char *win = getenv("RAYOP_KUBESIM_WATCH_WINDOW");
    if (win == NULL || atoi(win) <= 0 || atoi(win) > 50) {
        fprintf(stderr, "skipped: RAYOP_KUBESIM_WATCH_WINDOW (<= 50) is unset\n");
        skip();
    }
    struct kube_result res = { 0 };
    char rv[64], name[64];
    assert_int_equal(kube_list(e->c, &KUBE_RES_PODS, "default", NULL, &res), 0);
    snprintf(rv, sizeof(rv), "%s", res.resource_version);
    kube_result_release(&res);
    for (int i = 0; i < 2 * atoi(win) + 2; i++) {
        snprintf(name, sizeof(name), "%s-exp-%d", e->prefix, i);
        cJSON *p = pod(name, "exp");
        assert_int_equal(kube_create(e->c, &KUBE_RES_PODS, "default", p, &res), 0);
        kube_result_release(&res);
        cJSON_Delete(p);
    }
    struct wstate ws = { .name = "" };
    uv_loop_t loop;
    uv_timer_t t;
    struct kube_watcher *wd;
    uv_loop_init(&loop);
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, tick, 20, 20);
    assert_int_equal(kube_watcher_new(e->c, &loop, &wd), 0);
    struct kube_watch_opts o = { .resource_version = rv, .on_event = w_event, .on_end = w_end,
                                 .arg = &ws };
    assert_int_equal(kube_watch_start(wd, &KUBE_RES_PODS, "default", &o, NULL), 0);
    uint64_t deadline = util_now_ms() + 10000;
    while (!ws.ended && util_now_ms() < deadline)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(ws.ended, 1);
    assert_int_equal(ws.end_err, -KUBE_EGONE);
    assert_int_equal(ws.end_code, 410);
    kube_watcher_free(wd);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    struct kube_list_opts sel = { .label_selector = "app=exp" };
    assert_int_equal(kube_delete_collection(e->c, &KUBE_RES_PODS, "default", &sel, NULL, &res), 0);
    kube_result_release(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crud_and_typed_errors),
        cmocka_unit_test(test_list_selectors_and_paging),
        cmocka_unit_test(test_status_patch_types_apply_raw),
        cmocka_unit_test(test_watch_sees_writes),
        cmocka_unit_test(test_expired_rv_watch_ends_gone),
    };
    return cmocka_run_group_tests_name("kube_kubesim", tests, setup, teardown);
}

/* test_kube_watch.c - streaming watches on the curl multi + libuv driver against a
 * scripted server: line framing across chunk boundaries, bookmarks and the last
 * resourceVersion, ERROR events (410 Expired), refused watches, over-long lines,
 * aborted streams, stop from a callback, the raw-line hook, and many watches on
 * one loop. */
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

#include "kube/internal.h"
#include "kube/kube.h"
#include "util/util.h"

#include "kube_testsrv.h"

struct collect {
    int nevents;
    enum kube_event_type types[64];
    char names[64][32];
    char rvs[64][32];
    int raw_ok;                /* every raw slice parsed back to the same type */
    int ended;
    int end_err;
    struct kube_status end_st;
    int have_end_st;
    int stop_after;            /* > 0: stop the watch after this many events */
    struct kube_watch *self;
    cJSON *kept;               /* first object, taken from the event */
    int lines_seen, consume_odd;
    int initial_end_at;        /* 1-based index of the initial-events-end bookmark */
    uint64_t first_event_ms;   /* real time of the first event */
    struct kube_status err_st;
};

static void on_event(struct kube_watch *w, struct kube_event *ev, void *arg)
{
    struct collect *c = arg;
    int i = c->nevents++;
    if (i == 0)
        c->first_event_ms = util_now_ms();
    if (i < 64) {
        const cJSON *md = cJSON_GetObjectItem(ev->object, "metadata");
        const cJSON *name = cJSON_GetObjectItem(md, "name");
        c->types[i] = ev->type;
        snprintf(c->names[i], sizeof(c->names[i]), "%s",
                 cJSON_IsString(name) ? name->valuestring : "");
        snprintf(c->rvs[i], sizeof(c->rvs[i]), "%s", ev->resource_version);
    }
    char *raw = strndup(ev->raw, ev->raw_len);
    cJSON *again = cJSON_Parse(raw);
    const cJSON *t = cJSON_GetObjectItem(again, "type");
    if (!cJSON_IsString(t) || strcmp(t->valuestring, kube_event_type_name(ev->type)) != 0)
        c->raw_ok = 0;
    cJSON_Delete(again);
    free(raw);
    if (ev->type == KUBE_EVENT_ERROR)
        c->err_st = *ev->status;
    if (ev->initial_events_end)
        c->initial_end_at = c->nevents;
    if (c->kept == NULL) {
        c->kept = ev->object; /* take ownership */
        ev->object = NULL;
    }
    if (c->stop_after > 0 && c->nevents == c->stop_after) {
        kube_watch_stop(w);
        c->ended = 1; /* no on_end follows a stop */
    }
}

static int on_line(struct kube_watch *w, const char *line, size_t len, void *arg)
{
    struct collect *c = arg;
    (void)w;
    (void)line;
    (void)len;
    return c->consume_odd && (c->lines_seen++ % 2 == 0);
}

static void on_end(struct kube_watch *w, int err, const struct kube_status *st, void *arg)
{
    struct collect *c = arg;
    (void)w;
    c->ended = 1;
    c->end_err = err;
    if (st != NULL) {
        c->end_st = *st;
        c->have_end_st = 1;
    }
}

struct wfix {
    struct ts_server srv;
    struct kube_config *cfg;
    struct kube_client *c;
    uv_loop_t loop;
    uv_timer_t tick;
    struct kube_watcher *wd;
};

static void tick_cb(uv_timer_t *t)
{
    (void)t;
}

static int setup(void **state)
{
    struct wfix *f = calloc(1, sizeof(*f));
    if (ts_start(&f->srv, NULL, NULL) < 0)
        return -1;
    f->cfg = ts_config(&f->srv, 0, "wtok");
    if (kube_client_new(f->cfg, NULL, &f->c) < 0)
        return -1;
    uv_loop_init(&f->loop);
    uv_timer_init(&f->loop, &f->tick);
    uv_timer_start(&f->tick, tick_cb, 20, 20); /* wakes the loop to re-check deadlines */
    if (kube_watcher_new(f->c, &f->loop, &f->wd) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct wfix *f = *state;
    kube_watcher_free(f->wd);
    uv_close((uv_handle_t *)&f->tick, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&f->loop);
    kube_client_free(f->c);
    kube_config_free(f->cfg);
    ts_stop(&f->srv);
    free(f);
    return rc == 0 ? 0 : -1; /* a leaked uv handle fails the test */
}

/* Runs the loop until all n collectors ended or 5 s passed. */
static int run_until_ended(struct wfix *f, struct collect *cs, int n)
{
    uint64_t deadline = util_now_ms() + 5000;
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= cs[i].ended;
        if (all)
            return 0;
        if (util_now_ms() > deadline)
            return -ETIMEDOUT;
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

static struct kube_watch_opts wopts(struct collect *c)
{
    struct kube_watch_opts o = { 0 };
    o.on_event = on_event;
    o.on_end = on_end;
    o.arg = c;
    c->raw_ok = 1;
    return o;
}

static const char stream3[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"11\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"12\"}}}\r\n"
    "\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"20\"}}}\n";

static void test_framing_across_chunks_and_bookmark(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    struct kube_watch *w;
    o.resource_version = "10";
    o.allow_bookmarks = 1;
    o.timeout_seconds = 300;
    o.label_selector = "ray.io/node-type in (head,worker)";
    o.send_initial_events = 1;
    o.resource_version_match = "NotOlderThan";
    /* 7-byte chunks: every line is split across several chunk boundaries. */
    ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 7, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns1", &o, &w), 0);
    assert_string_equal(kube_watch_last_rv(w), "10");
    assert_int_equal(run_until_ended(f, &c, 1), 0);
    assert_int_equal(c.end_err, 0);
    assert_int_equal(c.have_end_st, 0);
    assert_int_equal(c.nevents, 4);
    assert_int_equal(c.types[0], KUBE_EVENT_ADDED);
    assert_int_equal(c.types[1], KUBE_EVENT_MODIFIED);
    assert_int_equal(c.types[2], KUBE_EVENT_DELETED);
    assert_int_equal(c.types[3], KUBE_EVENT_BOOKMARK);
    assert_string_equal(c.names[2], "b");
    assert_string_equal(c.rvs[3], "20");
    assert_int_equal(c.raw_ok, 1);
    struct ts_request *q = &f->srv.log[0];
    assert_string_equal(q->path, "/api/v1/namespaces/ns1/pods");
    assert_string_equal(q->query, "watch=1&allowWatchBookmarks=true&sendInitialEvents=true&"
                                  "labelSelector=ray.io/node-type in (head,worker)&"
                                  "resourceVersion=10&resourceVersionMatch=NotOlderThan&"
                                  "timeoutSeconds=300");
    assert_string_equal(q->auth, "Bearer wtok");
    assert_non_null(c.kept);
    cJSON_Delete(c.kept);
}

static void test_last_event_without_newline_and_last_rv(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    const char body[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"z\",\"resourceVersion\":\"99\"}}}";
    ts_push_raw(&f->srv, 200, body, strlen(body), 5, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_RAYCLUSTERS, NULL, &o, NULL), 0);
    assert_int_equal(run_until_ended(f, &c, 1), 0);
    assert_int_equal(c.end_err, 0);
    assert_int_equal(c.nevents, 1);
    assert_string_equal(c.rvs[0], "99");
    assert_string_equal(f->srv.log[0].path, "/apis/ray.io/v1/rayclusters");
    cJSON_Delete(c.kept);
}

static void test_error_event_410_expired(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    const char body[] =
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
        "\"status\":\"Failure\",\"message\":\"too old resource version: 1 (1029)\","
        "\"reason\":\"Expired\",\"code\":410}}\n";
    o.resource_version = "1";
    ts_push_raw(&f->srv, 200, body, strlen(body), 64, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, NULL), 0);
    assert_int_equal(run_until_ended(f, &c, 1), 0);
    assert_int_equal(c.nevents, 1);
    assert_int_equal(c.types[0], KUBE_EVENT_ERROR);
    assert_int_equal(c.err_st.code, 410);
    assert_string_equal(c.err_st.reason, "Expired");
    /* The end names the error class the watcher acts on: relist. */
    assert_int_equal(c.end_err, -KUBE_EGONE);
    assert_int_equal(c.have_end_st, 1);
    assert_int_equal(c.end_st.code, 410);
    cJSON_Delete(c.kept);
}

static void test_refused_watch_reports_status(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    ts_push(&f->srv, 403, "{\"kind\":\"Status\",\"code\":403,\"reason\":\"Forbidden\","
            "\"message\":\"pods is forbidden\"}", NULL, NULL, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, NULL), 0);
    assert_int_equal(run_until_ended(f, &c, 1), 0);
    assert_int_equal(c.nevents, 0);
    assert_int_equal(c.end_err, -EACCES);
    assert_string_equal(c.end_st.message, "pods is forbidden");
}

static void test_overlong_line_is_rejected(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    struct buf b = { 0 };
    buf_puts(&b, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\",\"resourceVersion\":\"1\"}}}\n");
    buf_puts(&b, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"");
    for (int i = 0; i < 5000; i++)
        buf_puts(&b, "x");
    buf_puts(&b, "\"}}}\n");
    o.max_line_bytes = 1024;
    ts_push_raw(&f->srv, 200, b.data, b.len, 300, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, NULL), 0);
    assert_int_equal(run_until_ended(f, &c, 1), 0);
    assert_int_equal(c.nevents, 1);
    assert_int_equal(c.end_err, -EMSGSIZE);
    buf_free(&b);
    cJSON_Delete(c.kept);
}

static void test_garbage_and_aborted_streams(void **state)
{
    struct wfix *f = *state;
    struct collect c[2] = { { 0 } };
    struct kube_watch_opts o0 = wopts(&c[0]), o1 = wopts(&c[1]);
    const char garbage[] = "{\"type\":\"ADDED\",\"object\":{}}\nnot json at all\n";
    const char partial[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\"}}}\n{\"type\":";
    ts_push_raw(&f->srv, 200, garbage, strlen(garbage), 10, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o0, NULL), 0);
    assert_int_equal(run_until_ended(f, &c[0], 1), 0);
    assert_int_equal(c[0].nevents, 1);
    assert_int_equal(c[0].end_err, -EPROTO);
    cJSON_Delete(c[0].kept);
    ts_push_raw(&f->srv, 200, partial, strlen(partial), 10, 1);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o1, NULL), 0);
    assert_int_equal(run_until_ended(f, &c[1], 1), 0);
    assert_int_equal(c[1].nevents, 1);
    assert_true(c[1].end_err < 0); /* an aborted stream is not a clean close */
    cJSON_Delete(c[1].kept);
}

static void test_stop_from_callback_and_line_hook(void **state)
{
    struct wfix *f = *state;
    struct collect c[2] = { { 0 } };
    struct kube_watch_opts o0 = wopts(&c[0]), o1 = wopts(&c[1]);
    c[0].stop_after = 2;
    ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 4096, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o0, NULL), 0);
    assert_int_equal(run_until_ended(f, &c[0], 1), 0);
    assert_int_equal(c[0].nevents, 2); /* nothing after the stop, and no on_end */
    cJSON_Delete(c[0].kept);
    /* The raw hook consumes every other line: those are never parsed. */
    o1.on_line = on_line;
    c[1].consume_odd = 1;
    ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 4096, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o1, NULL), 0);
    assert_int_equal(run_until_ended(f, &c[1], 1), 0);
    assert_int_equal(c[1].lines_seen, 4);
    assert_int_equal(c[1].nevents, 2);
    assert_int_equal(c[1].types[0], KUBE_EVENT_MODIFIED);
    assert_int_equal(c[1].types[1], KUBE_EVENT_BOOKMARK);
    cJSON_Delete(c[1].kept);
}

static void test_watch_list_initial_events_end(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    const char body[] =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"6\"}}}\n"
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\","
        "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"8\"}}}\n";
    o.send_initial_events = 1;
    o.allow_bookmarks = 1;
    o.resource_version_match = "NotOlderThan";
    ts_push_raw(&f->srv, 200, body, strlen(body), 4096, 0);
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, NULL), 0);
    assert_int_equal(run_until_ended(f, &c, 1), 0);
    assert_int_equal(c.nevents, 4);
    assert_int_equal(c.initial_end_at, 3); /* the plain bookmark does not count */
    cJSON_Delete(c.kept);
}

/* Chaining: a watch started from inside on_event (curl is dispatching, so the
 * start is deferred) and another from on_end (re-watch, as the watcher does). */
struct chain {
    struct kube_watcher *wd;
    struct collect first, from_event, from_end;
    int started_from_event, started_from_end;
};

static void chain_event(struct kube_watch *w, struct kube_event *ev, void *arg)
{
    struct chain *ch = arg;
    struct kube_watch_opts o;
    ch->first.nevents++;
    (void)w;
    (void)ev;
    if (!ch->started_from_event) {
        o = wopts(&ch->from_event);
        o.resource_version = kube_watch_last_rv(w);
        ch->started_from_event = kube_watch_start(ch->wd, &KUBE_RES_PODS, "ev", &o, NULL) == 0;
    }
}

static void chain_end(struct kube_watch *w, int err, const struct kube_status *st, void *arg)
{
    struct chain *ch = arg;
    struct kube_watch_opts o = wopts(&ch->from_end);
    (void)st;
    ch->first.ended = 1;
    ch->first.end_err = err;
    o.resource_version = kube_watch_last_rv(w);
    ch->started_from_end = kube_watch_start(ch->wd, &KUBE_RES_PODS, "end", &o, NULL) == 0;
}

static void test_watch_started_from_callbacks(void **state)
{
    struct wfix *f = *state;
    struct chain ch;
    memset(&ch, 0, sizeof(ch));
    ch.wd = f->wd;
    for (int i = 0; i < 3; i++)
        ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 9, 0);
    struct kube_watch_opts o = { .on_event = chain_event, .on_end = chain_end, .arg = &ch };
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "first", &o, NULL), 0);
    struct collect *all[2] = { &ch.from_event, &ch.from_end };
    uint64_t deadline = util_now_ms() + 5000;
    while (!(ch.first.ended && all[0]->ended && all[1]->ended) && util_now_ms() < deadline)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(ch.started_from_event, 1);
    assert_int_equal(ch.started_from_end, 1);
    assert_int_equal(ch.first.nevents, 4);
    assert_int_equal(ch.from_event.nevents, 4);
    assert_int_equal(ch.from_end.nevents, 4);
    assert_int_equal(ch.from_end.end_err, 0);
    /* Each resumed from the resourceVersion its starter had seen. */
    int n = ts_nlog(&f->srv);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) {
        if (strcmp(f->srv.log[i].path, "/api/v1/namespaces/ev/pods") == 0)
            assert_string_equal(f->srv.log[i].query, "watch=1&resourceVersion=11");
        else if (strcmp(f->srv.log[i].path, "/api/v1/namespaces/end/pods") == 0)
            assert_string_equal(f->srv.log[i].query, "watch=1&resourceVersion=20");
        else
            assert_string_equal(f->srv.log[i].path, "/api/v1/namespaces/first/pods");
    }
    cJSON_Delete(ch.from_event.kept);
    cJSON_Delete(ch.from_end.kept);
}

/* A watch refused with 401 makes the client re-read a rotated token file, so
 * the next watch carries the new token. */
static void test_watch_401_rereads_token(void **state)
{
    struct wfix *f = *state;
    char tokpath[] = "/tmp/test_kube_watch_tok.XXXXXX";
    int fd = mkstemp(tokpath);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "old-token\n", 10), 10);
    close(fd);
    struct kube_config *cfg = ts_config(&f->srv, 0, NULL);
    cfg->token_file = strdup(tokpath);
    assert_int_equal(kube__token_state_new(&cfg->token_state), 0);
    struct kube_client *c;
    struct kube_watcher *wd;
    assert_int_equal(kube_client_new(cfg, NULL, &c), 0);
    assert_int_equal(kube_watcher_new(c, &f->loop, &wd), 0);

    struct collect a = { 0 }, b = { 0 };
    struct kube_watch_opts oa = wopts(&a), ob = wopts(&b);
    ts_push(&f->srv, 401, "{\"kind\":\"Status\",\"code\":401,\"reason\":\"Unauthorized\"}",
            NULL, NULL, 0);
    assert_int_equal(kube_watch_start(wd, &KUBE_RES_PODS, "ns", &oa, NULL), 0);
    /* Rotate as the kubelet does: a new file renamed over the old (new inode). */
    char newpath[64];
    snprintf(newpath, sizeof(newpath), "%s.new", tokpath);
    FILE *tf = fopen(newpath, "w");
    fputs("new-token\n", tf);
    fclose(tf);
    assert_int_equal(rename(newpath, tokpath), 0);
    assert_int_equal(run_until_ended(f, &a, 1), 0);
    assert_int_equal(a.end_err, -EACCES);
    ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 4096, 0);
    assert_int_equal(kube_watch_start(wd, &KUBE_RES_PODS, "ns", &ob, NULL), 0);
    assert_int_equal(run_until_ended(f, &b, 1), 0);
    assert_int_equal(b.end_err, 0);
    assert_string_equal(f->srv.log[0].auth, "Bearer old-token");
    assert_string_equal(f->srv.log[1].auth, "Bearer new-token");
    cJSON_Delete(b.kept);
    kube_watcher_free(wd);
    kube_client_free(c);
    kube_config_free(cfg);
    unlink(tokpath);
}

/* Watch starts go through the client's QPS limiter without blocking the loop:
 * at 5/s with burst 1, three watches open about 200 ms apart. */
static void test_watch_starts_are_rate_limited(void **state)
{
    struct wfix *f = *state;
    struct kube_client *c;
    struct kube_watcher *wd;
    struct kube_client_opts o = { .qps = 5, .burst = 1 };
    struct collect cs[3];
    struct kube_client_stats st;
    memset(cs, 0, sizeof(cs));
    assert_int_equal(kube_client_new(f->cfg, &o, &c), 0);
    assert_int_equal(kube_watcher_new(c, &f->loop, &wd), 0);
    for (int i = 0; i < 3; i++)
        ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 4096, 0);
    uint64_t t0 = util_now_ms();
    for (int i = 0; i < 3; i++) {
        struct kube_watch_opts wo = wopts(&cs[i]);
        assert_int_equal(kube_watch_start(wd, &KUBE_RES_PODS, "ns", &wo, NULL), 0);
    }
    assert_int_equal(run_until_ended(f, cs, 3), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cs[i].nevents, 4);
    /* Lower bounds are the limiter's (the gate timer cannot fire early); upper
     * bounds only catch a stall, with room for a loaded machine. */
    assert_in_range(cs[0].first_event_ms - t0, 0, 1000);
    assert_in_range(cs[1].first_event_ms - t0, 195, 3000);
    assert_in_range(cs[2].first_event_ms - t0, 395, 3000);
    kube_client_get_stats(c, &st);
    assert_in_range(st.throttled_ns / 1000000, 590, 610); /* 200 + 400 ms reserved */
    for (int i = 0; i < 3; i++)
        cJSON_Delete(cs[i].kept);
    kube_watcher_free(wd);
    kube_client_free(c);
}

static void test_many_watches_one_loop(void **state)
{
    struct wfix *f = *state;
    enum { N = 8 };
    struct collect c[N];
    memset(c, 0, sizeof(c));
    for (int i = 0; i < N; i++)
        ts_push_raw(&f->srv, 200, stream3, strlen(stream3), 9, 0);
    for (int i = 0; i < N; i++) {
        struct kube_watch_opts o = wopts(&c[i]);
        assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, NULL), 0);
    }
    assert_int_equal(run_until_ended(f, c, N), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(c[i].end_err, 0);
        assert_int_equal(c[i].nevents, 4);
        assert_string_equal(c[i].rvs[3], "20");
        cJSON_Delete(c[i].kept);
    }
}

static void test_stop_outside_callback_and_free_with_open_watch(void **state)
{
    struct wfix *f = *state;
    struct collect c = { 0 };
    struct kube_watch_opts o = wopts(&c);
    struct kube_watch *w;
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, &w), 0);
    kube_watch_stop(w); /* before it even connected */
    assert_int_equal(kube_watch_start(f->wd, &KUBE_RES_PODS, "ns", &o, &w), 0);
    /* left open: kube_watcher_free in teardown must release it without on_end */
    assert_int_equal(c.ended, 0);
}

/* ---- the line splitter on its own -------------------------------------------- */

struct lines_got {
    struct buf all;  /* every delivered line, each followed by '|' */
    int n, stop_at;  /* stop_at > 0: the stop_at-th line returns 1 */
};

static int lines_cb(void *arg, const char *p, size_t len)
{
    struct lines_got *g = arg;
    assert_null(memchr(p, '\n', len));
    buf_append(&g->all, p, len);
    buf_puts(&g->all, "|");
    return ++g->n == g->stop_at ? 1 : 0;
}

/* The stream split at every chunk size from 1 to its length, and at two-cut
 * splits around every line end, gives the same lines as the whole stream in one
 * chunk: blanks dropped, '\r' and trailing blanks trimmed, a last line without
 * newline delivered by finish. */
static void test_lines_any_chunking(void **state)
{
    (void)state;
    const char *stream = "{\"a\":1}\n\n  \r\n{\"b\":\"two words\"} \t\r\n"
                         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                         "\n\n{\"c\":3}\r\nlast-without-newline";
    const char *want = "{\"a\":1}|{\"b\":\"two words\"}|"
                       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx|{\"c\":3}|"
                       "last-without-newline|";
    size_t n = strlen(stream);
    for (size_t step = 1; step <= n; step++) {
        struct kube_lines l;
        struct lines_got g = { 0 };
        kube__lines_init(&l, 64);
        for (size_t off = 0; off < n; off += step)
            assert_int_equal(kube__lines_feed(&l, stream + off, off + step > n ? n - off : step,
                                              lines_cb, &g), 0);
        assert_int_equal(kube__lines_finish(&l, lines_cb, &g), 0);
        assert_string_equal(g.all.data, want);
        kube__lines_release(&l);
        buf_free(&g.all);
    }
    for (size_t a = 0; a <= n; a++) {
        for (size_t b = a; b <= n; b++) {
            struct kube_lines l;
            struct lines_got g = { 0 };
            kube__lines_init(&l, 64);
            assert_int_equal(kube__lines_feed(&l, stream, a, lines_cb, &g), 0);
            assert_int_equal(kube__lines_feed(&l, stream + a, b - a, lines_cb, &g), 0);
            assert_int_equal(kube__lines_feed(&l, stream + b, n - b, lines_cb, &g), 0);
            assert_int_equal(kube__lines_finish(&l, lines_cb, &g), 0);
            assert_string_equal(g.all.data, want);
            kube__lines_release(&l);
            buf_free(&g.all);
        }
    }
}

/* A line over the bound fails however it arrives (complete in one chunk,
 * completed from the buffer, or still unterminated); a callback's stop keeps
 * the rest of the chunk for nobody: nothing after it is delivered. */
static void test_lines_bound_and_stop(void **state)
{
    (void)state;
    char line[80];
    memset(line, 'y', sizeof(line) - 1);
    line[sizeof(line) - 1] = 0;
    struct buf s = { 0 };
    buf_puts(&s, "ok\n");
    buf_puts(&s, line);   /* 79 bytes > 64 */
    buf_puts(&s, "\nnever\n");
    for (size_t step = 1; step <= s.len; step++) {
        struct kube_lines l;
        struct lines_got g = { 0 };
        int rc = 0;
        kube__lines_init(&l, 64);
        for (size_t off = 0; off < s.len && rc == 0; off += step)
            rc = kube__lines_feed(&l, s.data + off, off + step > s.len ? s.len - off : step,
                                  lines_cb, &g);
        assert_int_equal(rc, -EMSGSIZE);
        assert_string_equal(g.all.data, "ok|");
        kube__lines_release(&l);
        buf_free(&g.all);
    }
    struct kube_lines l;
    struct lines_got g = { .stop_at = 2 };
    kube__lines_init(&l, 64);
    assert_int_equal(kube__lines_feed(&l, "one\ntwo\nthree\nfour", 19, lines_cb, &g), 1);
    assert_string_equal(g.all.data, "one|two|");
    kube__lines_release(&l);
    buf_free(&g.all);
    buf_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_any_chunking),
        cmocka_unit_test(test_lines_bound_and_stop),
        cmocka_unit_test_setup_teardown(test_framing_across_chunks_and_bookmark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_event_without_newline_and_last_rv, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_error_event_410_expired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_watch_reports_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlong_line_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_and_aborted_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_from_callback_and_line_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_list_initial_events_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_started_from_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_401_rereads_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_starts_are_rate_limited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_watches_one_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_outside_callback_and_free_with_open_watch,
                                        setup, teardown),
    };
    return cmocka_run_group_tests_name("kube_watch", tests, NULL, NULL);
}

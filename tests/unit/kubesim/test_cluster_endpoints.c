/* test_cluster_endpoints.c - the simulated endpoints controller's work follows what
 * changed: a Pod change syncs the Services that select it, not every Service (the sync
 * ran every 50 ms over 10,000 Services at 10,000 RayClusters), and the Endpoints it
 * writes still name the ready Pods. Uses the cluster thread without the thread
 * (gang_testlib.h). */
/* a header of static helpers made for the gang tests: this file uses a few of them */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gang_testlib.h"
#pragma GCC diagnostic pop
#include "kubesim/store/internal.h"

#define NSVC 300

static void sync_now(struct gt *t)
{
    gt_pump(t);
    cluster__endpoints_sync(t->c);
    gt_pump(t);
}

/* NSVC Services s<i>, each selecting the one Pod p<i> (app=a<i>, bound to n1). */
static void svcs_and_pods(struct gt *t)
{
    const struct reg_resource *svcs = tl_res(t->s, "", "v1", "services");

    t->c->r_svc = svcs;
    t->c->r_ep = tl_res(t->s, "", "v1", "endpoints");
    t->c->r_eps = tl_res(t->s, "discovery.k8s.io", "v1", "endpointslices");
    for (int i = 0; i < NSVC; i++) {
        store_obj_unref(tl_create(t->s, svcs, "default", tl_json(
            "{\"metadata\":{\"name\":\"s%d\"},\"spec\":{\"selector\":{\"app\":\"a%d\"},"
            "\"ports\":[{\"port\":80}]}}", i, i)));
        store_obj_unref(tl_create(t->s, t->pods, "default", tl_json(
            "{\"metadata\":{\"name\":\"p%d\",\"labels\":{\"app\":\"a%d\"}},\"spec\":{\"nodeName\":"
            "\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}", i, i)));
    }
}

static void test_sync_follows_change(void **state)
{
    struct gt *t = gt_new(1, "64");
    char ip[64];
    (void)state;

    svcs_and_pods(t);
    t->c->ep_visited = 0;
    sync_now(t);
    assert_int_equal(t->c->ep_visited, NSVC);   /* each new Service once */
    t->c->ep_visited = 0;
    sync_now(t);
    assert_int_equal(t->c->ep_visited, 0);      /* nothing changed: nothing looked at */
    /* one Pod becomes ready: its Service alone */
    gt_patch(t, t->pods, "default", "p7", "status", "{\"status\":{\"phase\":\"Running\",\"podIP\":"
             "\"10.1.0.7\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    t->c->ep_visited = 0;
    sync_now(t);
    assert_int_equal(t->c->ep_visited, 1);
    cJSON *ep = gt_get(t, tl_res(t->s, "", "v1", "endpoints"), "default", "s7");
    const cJSON *addr = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
        cJSON_GetObjectItem(ep, "subsets"), 0), "addresses"), 0);
    snprintf(ip, sizeof(ip), "%s", tl_str(addr, "ip") ? tl_str(addr, "ip") : "");
    cJSON_Delete(ep);
    assert_string_equal(ip, "10.1.0.7");
    gt_free(t);
}

/* A cluster with the endpoints controller's types and a Service NAME selecting app=NAME
 * (port 80), created inside a tree scope the caller ends. */
static struct gt *ep_new(const char *name)
{
    struct gt *t = gt_new(1, "64");

    t->c->r_svc = tl_res(t->s, "", "v1", "services");
    t->c->r_ep = tl_res(t->s, "", "v1", "endpoints");
    t->c->r_eps = tl_res(t->s, "discovery.k8s.io", "v1", "endpointslices");
    store_tree_scope_begin();
    store_obj_unref(tl_create(t->s, t->c->r_svc, "default", tl_json(
        "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"selector\":{\"app\":\"%s\"},"
        "\"ports\":[{\"port\":80}]}}", name, name)));
    return t;
}

#define NREADY 200

/* A sync reads each member's IP, readiness, node and deletion from the cluster's Pod
 * record, not by parsing the stored Pod again: at 10,000 RayClusters the Pods had left
 * the cluster thread's tree scope by the time of the sync, and re-parsing them was a
 * fifth of kubesim's samples. The text parses across the sync must not grow with the
 * number of ready members; the Endpoints still list every one of them. */
static void test_sync_reads_pod_record(void **state)
{
    struct gt *t = ep_new("big");
    char name[64], body[256];
    uint64_t before, parses;
    cJSON *ep;
    (void)state;

    for (int i = 0; i < NREADY; i++) {
        snprintf(name, sizeof(name), "b%d", i);
        store_obj_unref(tl_create(t->s, t->pods, "default", tl_json(
            "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"big\"}},\"spec\":{"
            "\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}",
            name)));
        snprintf(body, sizeof(body), "{\"status\":{\"phase\":\"Running\",\"podIP\":\"10.2.%d.%d\","
                 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", i / 250, i % 250 + 1);
        gt_patch(t, t->pods, "default", name, "status", body);
    }
    gt_pump(t);
    store_tree_scope_trim(0);   /* as on the cluster thread: the Pods' trees are gone */
    before = store__text_parses();
    cluster__endpoints_sync(t->c);
    parses = store__text_parses() - before;
    store_tree_scope_end();
    gt_pump(t);
    /* the Endpoints/EndpointSlice it compares with at most: not one per Pod */
    assert_true(parses <= 4);
    ep = gt_get(t, t->c->r_ep, "default", "big");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(
        cJSON_GetObjectItem(ep, "subsets"), 0), "addresses")), NREADY);
    cJSON_Delete(ep);
    gt_free(t);
}

/* A sync whose result is what the controller last wrote, with the stored Endpoints and
 * EndpointSlice still at that version, decides by a hash kept in its table and reads the
 * Service from the copy in its table: it parses nothing and writes nothing. A write by
 * someone else is compared with what is there and put right. */
static void test_unchanged_sync_parses_nothing(void **state)
{
    struct gt *t = ep_new("web");
    uint64_t before, parses;
    char rv0[32], rv1[32];
    cJSON *ep;
    (void)state;

    store_obj_unref(tl_create(t->s, t->pods, "default", tl_json(
        "{\"metadata\":{\"name\":\"w\",\"labels\":{\"app\":\"web\"}},\"spec\":{"
        "\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}")));
    gt_patch(t, t->pods, "default", "w", "status", "{\"status\":{\"phase\":\"Running\","
             "\"podIP\":\"10.3.0.1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    sync_now(t);
    gt_field(t, t->c->r_ep, "default", "web", "metadata.resourceVersion", rv0, sizeof(rv0));
    /* a change the sync does not read (another label) marks the Service again */
    gt_patch(t, t->pods, "default", "w", NULL, "{\"metadata\":{\"labels\":{\"tier\":\"a\"}}}");
    gt_pump(t);
    /* the count is process-wide: the GC reads the slice's ownerReference once */
    assert_int_equal(store_wait_gc_idle(t->s, 5000), 0);
    store_tree_scope_trim(0);
    before = store__text_parses();
    t->c->ep_visited = 0;
    cluster__endpoints_sync(t->c);
    parses = store__text_parses() - before;
    assert_int_equal(t->c->ep_visited, 1);
    assert_int_equal(parses, 0);   /* not the Service, its Endpoints, nor its slice */
    gt_pump(t);
    gt_field(t, t->c->r_ep, "default", "web", "metadata.resourceVersion", rv1, sizeof(rv1));
    assert_string_equal(rv0, rv1);   /* nothing written */
    /* a client empties the Endpoints: the next sync compares with what is there */
    gt_patch(t, t->c->r_ep, "default", "web", NULL, "{\"subsets\":null}");
    gt_patch(t, t->pods, "default", "w", NULL, "{\"metadata\":{\"labels\":{\"tier\":\"b\"}}}");
    sync_now(t);
    ep = gt_get(t, t->c->r_ep, "default", "web");
    assert_string_equal(tl_str(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
        cJSON_GetObjectItem(ep, "subsets"), 0), "addresses"), 0), "ip"), "10.3.0.1");
    cJSON_Delete(ep);
    store_tree_scope_end();
    gt_free(t);
}

/* GET /kubesim/memory's "cluster" member: the tables the cluster thread keeps, measured
 * by that thread and reported from another. 300 Pods and Services each: the Pod table
 * holds a record per Pod, the Services their members, and the endpoints index a key
 * per Pod and label pair. */
static void test_memory_report(void **state)
{
    struct gt *t = gt_new(1, "64");
    struct buf b = { 0 };
    size_t sum;
    cJSON *m;
    (void)state;

    svcs_and_pods(t);
    sync_now(t);
    cluster__memory_publish(t->c);
    /* the reporter writes the members of one object */
    assert_int_equal(buf_puts(&b, "{"), 0);
    sum = cluster__memory_report(t->c, &b);
    assert_int_equal(buf_puts(&b, "}"), 0);
    assert_non_null(m = cJSON_Parse(b.data));
    assert_int_equal(tl_num(m, "pods"), NSVC);
    assert_true(tl_num(m, "podBytes") >= NSVC * (sizeof(struct cl_pod) + sizeof("default/p0")));
    assert_true(tl_num(m, "serviceBytes") >= NSVC * (sizeof(struct cl_svc) + sizeof(struct cl_member)));
    /* each Pod's key under its one label pair, and the pair's text */
    assert_true(tl_num(m, "endpointsIndexBytes") >= NSVC * (sizeof("default/p0") + sizeof("default\x1f" "app\x1f" "a0")));
    assert_true(tl_num(m, "nodeBytes") > 0);
    assert_true(sum >= tl_num(m, "podBytes") + tl_num(m, "serviceBytes") +
                tl_num(m, "endpointsIndexBytes") + tl_num(m, "nodeBytes"));
    cJSON_Delete(m);
    buf_free(&b);
    gt_free(t);
}

/* The thread's part of a report: it waits for a report to ask, then measures. */
static void *mem_thread(void *arg)
{
    struct cluster *c = arg;

    for (;;) {
        pthread_mutex_lock(&c->qlock);
        while (!c->stop && c->mem.asked == c->mem.done)
            pthread_cond_wait(&c->qcond, &c->qlock);
        bool stop = c->stop;
        pthread_mutex_unlock(&c->qlock);
        if (stop)
            return NULL;
        cluster__memory_serve(c);
    }
}

/* The cluster thread walks its tables only for a report that asks (it did once a
 * second, 4 % of its CPU at 10,000 RayClusters), and the report gives that measure. */
static void test_memory_measured_when_asked(void **state)
{
    struct gt *t = gt_new(1, "64");
    struct buf b = { 0 };
    pthread_condattr_t ca;
    pthread_t th;
    cJSON *m;
    (void)state;

    svcs_and_pods(t);
    sync_now(t);
    cluster__memory_serve(t->c);   /* nothing asked: nothing measured */
    assert_int_equal(atomic_load(&t->c->mem.n_pods), 0);
    assert_int_equal(t->c->mem.done, 0);

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->c->mem.measured, &ca);
    pthread_condattr_destroy(&ca);
    t->c->started = true;
    assert_int_equal(pthread_create(&th, NULL, mem_thread, t->c), 0);
    assert_int_equal(buf_puts(&b, "{"), 0);
    cluster__memory_report(t->c, &b);
    assert_int_equal(buf_puts(&b, "}"), 0);
    pthread_mutex_lock(&t->c->qlock);
    t->c->stop = true;
    pthread_cond_signal(&t->c->qcond);
    pthread_mutex_unlock(&t->c->qlock);
    pthread_join(th, NULL);
    t->c->started = t->c->stop = false;
    assert_int_equal(t->c->mem.done, 1);
    assert_non_null(m = cJSON_Parse(b.data));
    assert_int_equal(tl_num(m, "pods"), NSVC);
    cJSON_Delete(m);
    buf_free(&b);
    pthread_cond_destroy(&t->c->mem.measured);
    gt_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_follows_change),
        cmocka_unit_test(test_sync_reads_pod_record),
        cmocka_unit_test(test_unchanged_sync_parses_nothing),
        cmocka_unit_test(test_memory_report),
        cmocka_unit_test(test_memory_measured_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

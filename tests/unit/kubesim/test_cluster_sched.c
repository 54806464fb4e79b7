/* test_cluster_sched.c - the simulated scheduler's pure parts: quantities, Pod
 * requests (limits standing in, init containers), node fit filters (resources,
 * nodeSelector, taints/tolerations, unschedulable), LeastAllocated spreading and
 * the FailedScheduling message; and its loop on a store (gang_testlib.h): the nodes
 * looked at per Pod placed, spreading through the free-capacity index, and the
 * Unschedulable Pods retried when capacity frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a header of static helpers made for the gang tests: this file uses a few of them */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gang_testlib.h"
#pragma GCC diagnostic pop
#include "kobj/quantity.h"
#include "kubesim/cluster/cluster.h"
#include "kubesim/store/internal.h"

static cJSON *js(const char *text)
{
    cJSON *o = cJSON_Parse(text);
    if (!o)
        fail_msg("bad fixture JSON: %s", text);
    return o;
}

static int64_t q(const char *s)
{
    int64_t m = -1;
    int rc = kobj_quantity_parse(s, &m);
    if (rc)
        fail_msg("quantity '%s' rejected: %d", s, rc);
    return m;
}

static void test_quantity(void **state)
{
    int64_t m;
    (void)state;
    assert_int_equal(q("500m"), 500);
    assert_int_equal(q("2"), 2000);
    assert_int_equal(q("1.5"), 1500);
    assert_int_equal(q("2Ki"), 2048000);
    assert_int_equal(q("1Gi"), 1073741824000LL);
    assert_int_equal(q("1G"), 1000000000000LL);
    assert_int_equal(q("1e3"), 1000000);
    assert_int_equal(q("128974848"), 128974848000LL);
    assert_int_equal(q("0.1m"), 1);                    /* rounds up */
    assert_int_equal(kobj_quantity_parse("", &m), -EINVAL);
    assert_int_equal(kobj_quantity_parse("abc", &m), -EINVAL);
    assert_int_equal(kobj_quantity_parse("1Qi", &m), -EINVAL);
    assert_int_equal(kobj_quantity_parse("1e", &m), -EINVAL);   /* not an exponent, not a suffix */
    assert_int_equal(kobj_quantity_parse("1e99", &m), -EINVAL);
    assert_int_equal(kobj_quantity_parse("9Ei", &m), -ERANGE);
    assert_int_equal(kobj_quantity_parse(NULL, &m), -EINVAL);
    char big[200];
    memset(big, '1', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(kobj_quantity_parse(big, &m), -EINVAL);
}

static void test_requests(void **state)
{
    struct cluster_res r;
    (void)state;
    cJSON *p = js("{\"spec\":{\"containers\":["
                  "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}},"
                  "{\"name\":\"b\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"2\"}}}],"
                  "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}");
    cluster_pod_requests(p, &r);
    assert_int_equal(r.cpu_m, 3000);            /* the init container's 3 beats 0.5 + 1 */
    assert_int_equal(r.mem, 1073741824LL);
    assert_int_equal(r.gpu, 2);                 /* limit stands in for the missing request */
    assert_int_equal(r.tpu, 0);
    assert_int_equal(r.pods, 1);
    cJSON_Delete(p);

    /* a request wins over a limit of the same resource */
    p = js("{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"100m\"},"
           "\"limits\":{\"cpu\":\"2\",\"google.com/tpu\":\"4\"}}}]}}");
    cluster_pod_requests(p, &r);
    assert_int_equal(r.cpu_m, 100);
    assert_int_equal(r.tpu, 4);
    cJSON_Delete(p);

    /* absurd or negative amounts are clamped, so sums cannot overflow */
    p = js("{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"9P\"}}},"
           "{\"resources\":{\"requests\":{\"cpu\":\"9P\"}}},{\"resources\":{\"requests\":{\"cpu\":\"-5\"}}}]}}");
    cluster_pod_requests(p, &r);
    assert_int_equal(r.cpu_m, 2000000000000000LL);
    cJSON_Delete(p);
}

#define NODE(extra_spec, labels) \
    "{\"metadata\":{\"name\":\"n\",\"labels\":" labels "},\"spec\":{" extra_spec "}," \
    "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"1\"}}}"

static unsigned fit(const char *pod, const char *node, const struct cluster_res *used,
                    char *taint, size_t tl)
{
    cJSON *p = js(pod), *n = js(node);
    struct cluster_res req, alloc;
    struct cluster_res none = { 0 };

    cluster_pod_requests(p, &req);
    cluster_node_allocatable(n, &alloc);
    unsigned f = cluster_node_fits(p, &req, n, &alloc, used ? used : &none, taint, tl);
    cJSON_Delete(p);
    cJSON_Delete(n);
    return f;
}

static void test_fit_resources(void **state)
{
    (void)state;
    const char *node = NODE("", "{}");
    const char *small = "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}";
    const char *huge = "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"5\",\"memory\":\"9Gi\"}}}]}}";
    const char *gpu2 = "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}}";
    const char *tpu = "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"google.com/tpu\":\"1\"}}}]}}";
    struct cluster_res used = { .cpu_m = 3500, .pods = 3 };
    struct cluster_res full = { .pods = 110 };

    assert_int_equal(fit(small, node, NULL, NULL, 0), 0);
    assert_int_equal(fit(small, node, &used, NULL, 0), CLUSTER_FIT_CPU);
    assert_int_equal(fit(huge, node, NULL, NULL, 0), CLUSTER_FIT_CPU | CLUSTER_FIT_MEMORY);
    assert_int_equal(fit(gpu2, node, NULL, NULL, 0), CLUSTER_FIT_GPU);
    assert_int_equal(fit(tpu, node, NULL, NULL, 0), CLUSTER_FIT_TPU);
    assert_int_equal(fit(small, node, &full, NULL, 0), CLUSTER_FIT_PODS);
}

static void test_fit_selector_taints(void **state)
{
    char taint[128] = "";
    (void)state;
    const char *labelled = NODE("", "{\"pool\":\"gpu\",\"zone\":\"a\"}");
    const char *tainted = NODE("\"taints\":[{\"key\":\"dedicated\",\"value\":\"ray\",\"effect\":\"NoSchedule\"}]", "{}");
    const char *soft = NODE("\"taints\":[{\"key\":\"x\",\"effect\":\"PreferNoSchedule\"}]", "{}");
    const char *cordoned = NODE("\"unschedulable\":true", "{}");

    assert_int_equal(fit("{\"spec\":{\"nodeSelector\":{\"pool\":\"gpu\"}}}", labelled, NULL, NULL, 0), 0);
    assert_int_equal(fit("{\"spec\":{\"nodeSelector\":{\"pool\":\"cpu\"}}}", labelled, NULL, NULL, 0),
                     CLUSTER_FIT_SELECTOR);
    assert_int_equal(fit("{\"spec\":{\"nodeSelector\":{\"missing\":\"\"}}}", labelled, NULL, NULL, 0),
                     CLUSTER_FIT_SELECTOR);
    assert_int_equal(fit("{\"spec\":{}}", tainted, NULL, taint, sizeof(taint)), CLUSTER_FIT_TAINT);
    assert_string_equal(taint, "{dedicated: ray}");
    assert_int_equal(fit("{\"spec\":{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\","
                         "\"value\":\"ray\",\"effect\":\"NoSchedule\"}]}}", tainted, NULL, NULL, 0), 0);
    assert_int_equal(fit("{\"spec\":{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\"}]}}",
                         tainted, NULL, NULL, 0), 0);
    assert_int_equal(fit("{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\"}]}}", tainted, NULL, NULL, 0), 0);
    assert_int_equal(fit("{\"spec\":{\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"other\"}]}}",
                         tainted, NULL, NULL, 0), CLUSTER_FIT_TAINT);
    assert_int_equal(fit("{\"spec\":{\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"ray\","
                         "\"effect\":\"NoExecute\"}]}}", tainted, NULL, NULL, 0), CLUSTER_FIT_TAINT);
    assert_int_equal(fit("{\"spec\":{}}", soft, NULL, NULL, 0), 0);   /* a preference, not a filter */
    assert_int_equal(fit("{\"spec\":{}}", cordoned, NULL, NULL, 0), CLUSTER_FIT_UNSCHEDULABLE);
}

#define AFF(terms) "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
                   "{\"nodeSelectorTerms\":" terms "}}}}}"

static void test_fit_node_affinity(void **state)
{
    (void)state;
    const char *node = NODE("", "{\"pool\":\"gpu\",\"zone\":\"a\",\"gen\":\"5\"}");

    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\",\"values\":[\"cpu\",\"gpu\"]}]}]"),
                         node, NULL, NULL, 0), 0);
    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"NotIn\",\"values\":[\"gpu\"]}]}]"),
                         node, NULL, NULL, 0), CLUSTER_FIT_SELECTOR);
    /* terms are ORed: the second matches */
    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"Exists\"}]},"
                             "{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"DoesNotExist\"}]}]"),
                         node, NULL, NULL, 0), 0);
    /* requirements are ANDed */
    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"},"
                             "{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"5\"]}]}]"),
                         node, NULL, NULL, 0), CLUSTER_FIT_SELECTOR);
    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"4\"]},"
                             "{\"key\":\"gen\",\"operator\":\"Lt\",\"values\":[\"6\"]}]}]"),
                         node, NULL, NULL, 0), 0);
    assert_int_equal(fit(AFF("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n\"]}]}]"),
                         node, NULL, NULL, 0), 0);
    /* an empty term, an empty list, a bad operator or a non-numeric Gt match nothing */
    assert_int_equal(fit(AFF("[{}]"), node, NULL, NULL, 0), CLUSTER_FIT_SELECTOR);
    assert_int_equal(fit(AFF("[]"), node, NULL, NULL, 0), CLUSTER_FIT_SELECTOR);
    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"Like\",\"values\":[\"gpu\"]}]}]"),
                         node, NULL, NULL, 0), CLUSTER_FIT_SELECTOR);
    assert_int_equal(fit(AFF("[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}]"),
                         node, NULL, NULL, 0), CLUSTER_FIT_SELECTOR);
}

static void test_spreading(void **state)
{
    struct cluster_res req = { .cpu_m = 1000, .mem = 1LL << 30, .pods = 1 };
    struct cluster_res alloc = { .cpu_m = 4000, .mem = 8LL << 30, .pods = 110 };
    struct cluster_res empty = { 0 }, busy = { .cpu_m = 2000, .mem = 4LL << 30, .pods = 2 };
    struct cluster_res none = { .pods = 1 };
    (void)state;

    int se = cluster_node_score(&req, &alloc, &empty);
    int sb = cluster_node_score(&req, &alloc, &busy);
    assert_true(se > sb);                                   /* least allocated wins */
    assert_int_equal(se, (75 + 87) / 2);
    assert_int_equal(cluster_node_score(&req, &alloc, &(struct cluster_res){ .cpu_m = 4000 }), 43);
    /* pods without requests still prefer the emptier node (non-zero defaults) */
    assert_true(cluster_node_score(&none, &alloc, &empty) > cluster_node_score(&none, &alloc, &busy));
}

static void test_message(void **state)
{
    char msg[512];
    (void)state;
    unsigned three_cpu[] = { CLUSTER_FIT_CPU, CLUSTER_FIT_CPU, CLUSTER_FIT_CPU };
    cluster_unsched_message(3, three_cpu, NULL, msg, sizeof(msg));
    assert_string_equal(msg, "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                             "available: 3 No preemption victims found for incoming pod.");

    unsigned mixed[] = { CLUSTER_FIT_CPU | CLUSTER_FIT_MEMORY, CLUSTER_FIT_SELECTOR, CLUSTER_FIT_TAINT,
                         CLUSTER_FIT_CPU };
    cluster_unsched_message(4, mixed, "{dedicated: ray}", msg, sizeof(msg));
    assert_string_equal(msg, "0/4 nodes are available: 1 Insufficient memory, 1 node(s) didn't match "
                             "Pod's node affinity/selector, 1 node(s) had untolerated taint "
                             "{dedicated: ray}, 2 Insufficient cpu. preemption: 0/4 nodes are "
                             "available: 2 No preemption victims found for incoming pod, "
                             "2 Preemption is not helpful for scheduling.");
    cluster_unsched_message(0, NULL, NULL, msg, sizeof(msg));
    assert_string_equal(msg, "no nodes available to schedule pods");
    /* a short buffer truncates, never overflows */
    char tiny[16];
    cluster_unsched_message(3, three_cpu, NULL, tiny, sizeof(tiny));
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
}

static void test_parse_flag(void **state)
{
    struct cluster_opts *o = NULL;
    char err[256];
    (void)state;
    assert_int_equal(cluster_parse_flag(&o, "nodes", "100", err, sizeof(err)), 0);
    assert_int_equal(o->nodes, 100);
    assert_int_equal(o->pod_start_ms, 300);
    assert_int_equal(o->pod_ready_ms, 500);
    assert_int_equal(o->pod_stop_ms, 200);
    assert_int_equal(cluster_parse_flag(&o, "node-memory", "64Gi", err, sizeof(err)), 0);
    assert_string_equal(o->node_memory, "64Gi");
    assert_int_equal(cluster_parse_flag(&o, "node-cpu", "lots", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "--node-cpu"));
    assert_int_equal(cluster_parse_flag(&o, "nodes", "-1", err, sizeof(err)), -EINVAL);
    assert_int_equal(cluster_parse_flag(&o, "node-gpu", "8x", err, sizeof(err)), -EINVAL);
    assert_int_equal(cluster_parse_flag(&o, "watch-window", "1", err, sizeof(err)), -ENOENT);
    assert_int_equal(cluster_parse_flag(&o, "node-labels", "pool=gpu,zone=a", err, sizeof(err)), 0);
    assert_string_equal(o->node_labels, "pool=gpu,zone=a");
    assert_int_equal(cluster_parse_flag(&o, "node-labels", "pool=,x=", err, sizeof(err)), 0);
    const char *bad[] = { "", "=v", "k", "k=v,", ",k=v", "k=v,,j=w", "k=a=b", "k=v w", "k=\x01" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (cluster_parse_flag(&o, "node-labels", bad[i], err, sizeof(err)) != -EINVAL)
            fail_msg("--node-labels '%s' was accepted", bad[i]);
    char many[400] = "";
    for (int i = 0; i < 33; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%d=v", i ? "," : "", i);
    assert_int_equal(cluster_parse_flag(&o, "node-labels", many, err, sizeof(err)), -EINVAL);
    many[strlen(many) - strlen(",k32=v")] = '\0';
    assert_int_equal(cluster_parse_flag(&o, "node-labels", many, err, sizeof(err)), 0);
    cluster_opts_free(o);
}

/* One default-scheduler pass over everything committed so far. */
static void sched_pass(struct gt *t)
{
    gt_pump(t);
    cluster__schedule_pass(t->c);
    gt_pump(t);
}

static int pods_on(struct gt *t, const char *node)
{
    struct cl_node *n = cluster__node_find(t->c, node);
    assert_non_null(n);
    return (int)n->used.pods;
}

/* The scheduler's work per Pod placed does not grow with the nodes: each of 400 Pods
 * that fit looks at one node (the front of the index), where scoring looked at all 200
 * (80,000 visits); they still spread evenly, 2 a node. */
static void test_sched_work_per_pod(void **state)
{
    struct gt *t = gt_new(200, "4");
    char name[32];
    (void)state;

    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof(name), "p-%d", i);
        gt_pod(t, name, "default-scheduler", "100m", NULL);
    }
    t->c->sched_visited = 0;
    sched_pass(t);
    assert_int_equal(gt_bound(t, "p", 0, 400), 400);
    assert_int_equal(t->c->sched_visited, 400);
    for (int i = 1; i <= 200; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(pods_on(t, name), 2);
    }
    /* the emptiest node takes the next Pod: p-7 and p-207 shared a node (Pods went round
     * the nodes in one order twice); with both gone, the new Pod lands there */
    gt_delete(t, t->pods, "default", "p-7");
    gt_delete(t, t->pods, "default", "p-207");
    gt_pod(t, "late", "default-scheduler", "100m", NULL);
    t->c->sched_visited = 0;
    sched_pass(t);
    assert_int_equal(t->c->sched_visited, 1);
    char late[64];
    gt_field(t, t->pods, "default", "late", "spec.nodeName", late, sizeof(late));
    assert_true(late[0]);
    assert_int_equal(pods_on(t, late), 1);   /* the node that had lost a Pod */
    gt_free(t);
}

/* A Pod that fits nowhere asks every node why (the message counts them all), and is
 * looked at again only when capacity frees, not on every pass. */
static void test_sched_unschedulable_retry(void **state)
{
    struct gt *t = gt_new(3, "2");
    char msg[512];
    (void)state;

    gt_pod(t, "a", "default-scheduler", "1500m", NULL);
    gt_pod(t, "b", "default-scheduler", "1500m", NULL);
    gt_pod(t, "c", "default-scheduler", "1500m", NULL);
    sched_pass(t);
    assert_int_equal(t->c->nunsched, 0);
    gt_pod(t, "big", "default-scheduler", "1", NULL);
    t->c->sched_visited = 0;
    sched_pass(t);
    assert_int_equal(t->c->sched_visited, 6);   /* the index, then every node for the message */
    cJSON *cond = gt_cond(t, t->pods, "big", "PodScheduled");
    assert_non_null(cond);
    snprintf(msg, sizeof(msg), "%s", tl_str(cond, "message") ? tl_str(cond, "message") : "");
    cJSON_Delete(cond);
    assert_string_equal(msg, "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes "
                             "are available: 3 No preemption victims found for incoming pod.");
    assert_int_equal(t->c->nunsched, 1);
    /* nothing freed: an unrelated Pod event does not bring it back */
    gt_patch(t, t->pods, "default", "a", NULL, "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}");
    t->c->sched_visited = 0;
    sched_pass(t);
    assert_int_equal(t->c->sched_visited, 0);
    /* a bound Pod goes: the waiting one is placed */
    gt_delete(t, t->pods, "default", "b");
    sched_pass(t);
    char node[64];
    gt_field(t, t->pods, "default", "big", "spec.nodeName", node, sizeof(node));
    assert_true(node[0]);
    assert_int_equal(t->c->nunsched, 0);
    gt_free(t);
}

#define NOWN 100

static struct cl_pod *pod_rec(struct gt *t, const char *name)
{
    char key[64];
    struct cl_pod *p = NULL;

    snprintf(key, sizeof(key), "default/%s", name);
    HASH_FIND_STR(t->c->pods, key, p);
    assert_non_null(p);
    return p;
}

/* Text parses while the queued events are handed to the cluster, with every tree
 * trimmed first (as on the cluster thread once its scope has moved on). */
static uint64_t pump_parses(struct gt *t)
{
    uint64_t before;

    store_tree_scope_trim(0);
    before = store__text_parses();
    gt_pump(t);
    return store__text_parses() - before;
}

/* The events of the cluster's own writes (a bind, the kubelet's status writes) are not
 * parsed again: at 1,000 RayClusters the Pods' trees had left the cluster thread's scope
 * by the time those events came, and each was parsed (with its packing, a third of the
 * thread). The record follows what the cluster wrote (node, IP, readiness), and a
 * client's write to the Pod is still read. */
static void test_own_writes_not_parsed(void **state)
{
    struct gt *t = gt_new(4, "8");
    char name[32], node[64];
    struct cl_pod *p;
    (void)state;

    store_tree_scope_begin();
    for (int i = 0; i < NOWN; i++) {
        snprintf(name, sizeof(name), "p-%d", i);
        gt_pod(t, name, "default-scheduler", "10m", ",\"labels\":{\"app\":\"x\"}");
    }
    assert_int_equal(pump_parses(t), NOWN);   /* a client's Pod: read once */
    cluster__schedule_pass(t->c);
    /* a bind (with the node's first status) per Pod; its event is not parsed */
    assert_int_equal(pump_parses(t), 0);
    assert_int_equal(gt_bound(t, "p", 0, NOWN), NOWN);
    p = pod_rec(t, "p-3");
    gt_field(t, t->pods, "default", "p-3", "spec.nodeName", node, sizeof(node));
    assert_true(p->ep.known);
    assert_string_equal(p->ep.node, node);
    assert_int_equal(p->stage, ST_BOUND);       /* the kubelet took it from the record */
    assert_false(p->ep.ready);
    /* started, then ready: the record follows the kubelet's own writes */
    cluster__kubelet_timer(t->c, p, T_START);
    assert_int_equal(pump_parses(t), 0);
    p = pod_rec(t, "p-3");
    assert_string_equal(p->ep.ip, p->ip);
    assert_true(p->ip[0]);
    cluster__kubelet_timer(t->c, p, T_READY);
    assert_int_equal(pump_parses(t), 0);
    assert_true(pod_rec(t, "p-3")->ep.ready);
    assert_false(pod_rec(t, "p-3")->v.deleting);
    /* a client's write is read: its deletion reaches the kubelet, even when a status
     * write that changes nothing (it hands back the client's snapshot) came between */
    struct store_delete_opts del = { .grace_seconds = 30 };
    struct store_status st = { 0 };
    assert_int_equal(store_delete(t->s, t->pods, "default", "p-3", &del, NULL, NULL, &st), 0);
    store_status_clear(&st);
    p = pod_rec(t, "p-3");
    assert_int_equal(cluster__kubelet_write(t->c, p), 0);
    assert_int_equal(pump_parses(t), 1);
    assert_true(pod_rec(t, "p-3")->v.deleting);
    assert_true(pod_rec(t, "p-3")->deleting);
    store_tree_scope_end();
    gt_free(t);
}

/* The scheduler binds with one write that carries spec.nodeName, PodScheduled and the
 * node's first report (the pods/binding subresource), not a patch of spec and then a
 * status write: each Pod's bind is one commit and one watch event. The store's
 * "binding" leaves managedFields as they were, as the real binding does. */
static void test_bind_one_write(void **state)
{
    struct gt *t = gt_new(4, "8");
    struct store_list l = { 0 };
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };
    char name[32], buf[128];
    size_t pods_mod = 0, events = 0;
    cJSON *o, *c;
    (void)state;

    for (int i = 0; i < NOWN; i++) {
        snprintf(name, sizeof(name), "b-%d", i);
        gt_pod(t, name, "default-scheduler", "10m", NULL);
    }
    gt_pump(t);
    cluster__schedule_pass(t->c);
    /* per Pod one commit (and one watch event) for the bind, where a patch of spec and a
     * status write were two; and the Scheduled Event */
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->qn; i++) {
        pods_mod += t->q[i].obj->res == t->pods && t->q[i].type == EV_MODIFIED;
        events += t->q[i].obj->res == t->events;
    }
    pthread_mutex_unlock(&t->lock);
    assert_int_equal(pods_mod, NOWN);
    assert_int_equal(events, NOWN);
    gt_pump(t);
    assert_int_equal(gt_bound(t, "b", 0, NOWN), NOWN);
    o = gt_get(t, t->pods, "default", "b-7");
    assert_non_null(o);
    assert_string_equal(tl_str(o, "status.phase"), "Pending");
    assert_non_null(tl_str(o, "status.startTime"));
    c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "status"), "containerStatuses"), 0);
    assert_string_equal(tl_str(c, "state.waiting.reason"), "ContainerCreating");
    /* managedFields: only the creator's entry (the client's create had no manager) */
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(o, "metadata"), "managedFields"))
        assert_string_not_equal(tl_str(c, "manager"), "kube-scheduler");
    cJSON_Delete(o);
    c = gt_cond(t, t->pods, "b-7", "PodScheduled");
    assert_non_null(c);
    assert_string_equal(tl_str(c, "status"), "True");
    cJSON_Delete(c);
    assert_int_equal(gt_events(t, "default", "b-7", "Scheduled", "Successfully assigned", NULL), 1);
    /* the kubelet goes on from the record: started, then ready, with the node's IP */
    cluster__kubelet_timer(t->c, pod_rec(t, "b-7"), T_START);
    gt_pump(t);
    assert_string_equal(gt_field(t, t->pods, "default", "b-7", "status.phase", buf, sizeof(buf)),
                        "Running");
    assert_int_equal(store_list(t->s, t->pods, "default", &lo, &l, &st), 0);
    assert_int_equal(l.n, NOWN);
    store_list_free(&l);
    store_status_clear(&st);
    gt_free(t);
}

/* The kubelet's start timer fires a few hundred ms after the bind, and its status write
 * merges into the Pod's current tree: at 10,000 RayClusters the cluster thread binds
 * thousands of Pods in that time, and with a 16 MiB scope their trees had left it, so
 * each start (and ready) parsed its Pod again (a zstd decompression and a JSON parse).
 * NSCOPE Pods of about 24 KB of tree each (19 MiB) bound in one pass keep their trees
 * in the cluster's scope until their starts. */
#define NSCOPE 800
static void test_scope_holds_bound_trees(void **state)
{
    struct gt *t = gt_new(8, "64");
    size_t pad = 24 * 1024;
    char *big = malloc(pad + 1), name[32];
    uint64_t before;
    (void)state;

    assert_non_null(big);
    memset(big, 'x', pad);
    big[pad] = '\0';
    store_tree_scope_begin();
    for (int i = 0; i < NSCOPE; i++) {
        cJSON *pod = tl_json("{\"metadata\":{\"name\":\"s-%d\",\"annotations\":{}},\"spec\":"
                             "{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\","
                             "\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]}}", i);
        cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"),
                                                    "annotations"), "pad", big);
        store_obj_unref(tl_create(t->s, t->pods, "default", pod));
    }
    gt_pump(t);
    cluster__schedule_pass(t->c);
    gt_pump(t);
    assert_int_equal(gt_bound(t, "s", 0, NSCOPE), NSCOPE);
    store_tree_scope_trim(CLUSTER_SCOPE_BYTES);   /* as the cluster thread between turns */
    before = store__text_parses();
    for (int i = 0; i < NSCOPE; i++) {
        snprintf(name, sizeof(name), "s-%d", i);
        cluster__kubelet_timer(t->c, pod_rec(t, name), T_START);
    }
    assert_int_equal(store__text_parses() - before, 0);
    gt_pump(t);
    store_tree_scope_end();
    free(big);
    gt_free(t);
}

/* A long batch of the commit queue fires the timers that are due on its way, with each
 * scheduling pass, not only once the whole batch is through: while clients keep creating
 * Pods the batches run for seconds, and the kubelets' start and Ready timers waited for
 * them (issue 18: at 10,000 RayClusters Ready fell 30 s behind the creates). */
static void test_timers_fire_mid_batch(void **state)
{
    struct gt *t = gt_new(1, "4");
    struct cluster *c = t->c;
    struct cl_qitem *batch;
    size_t n;

    (void)state;
    for (int i = 0; i < 3 * CLUSTER_SCHED_EVERY; i++)
        store_obj_unref(tl_create(t->s, t->cms, "default",
                                  tl_json("{\"metadata\":{\"name\":\"cm%d\"}}", i)));
    n = t->qn;
    assert_true(n >= 3 * CLUSTER_SCHED_EVERY);
    assert_non_null(batch = calloc(n, sizeof(*batch)));
    for (size_t i = 0; i < n; i++) {
        batch[i].type = t->q[i].type;
        batch[i].obj = t->q[i].obj;   /* the batch takes the queue's references */
    }
    t->qn = 0;
    c->certmgr_timer = true;
    cluster__timer_add(c, 0, T_CERTMGR, NULL);
    cluster__batch_run(c, batch, n);
    /* fired at the first pass, a third of the way in */
    assert_int_equal(c->timers_mid_batch, 1);
    assert_true(c->certmgr_dirty);
    assert_false(c->certmgr_timer);
    assert_int_equal(c->nheap, 0);
    free(batch);
    gt_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timers_fire_mid_batch),
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_fit_resources),
        cmocka_unit_test(test_fit_selector_taints),
        cmocka_unit_test(test_fit_node_affinity),
        cmocka_unit_test(test_spreading),
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_parse_flag),
        cmocka_unit_test(test_sched_work_per_pod),
        cmocka_unit_test(test_sched_unschedulable_retry),
        cmocka_unit_test(test_own_writes_not_parsed),
        cmocka_unit_test(test_bind_one_write),
        cmocka_unit_test(test_scope_holds_bound_trees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_watcher_map.c - the watcher's event-to-key table (watcher/types.c):
 * predicates on primaries, controller-owner mapping by kind and API group,
 * owner changes, and the selectors of the watched-type table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "watcher/internal.h"
#include "watcher/watcher.h"

/* Builds an object: kind's metadata with labels/annotations/generation and an
 * optional controller ownerReference (owner "Kind/apiVersion/name"). */
static cJSON *obj(const char *ns, const char *name, int generation, const char *labels,
                  const char *owner_kind, const char *owner_av, const char *owner_name,
                  int controller)
{
    char text[2048];
    char refs[512] = "";
    if (owner_kind)
        snprintf(refs, sizeof(refs),
                 ",\"ownerReferences\":[{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"name\":\"%s\","
                 "\"uid\":\"u-%s\",\"controller\":%s}]",
                 owner_av, owner_kind, owner_name, owner_name, controller ? "true" : "false");
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"generation\":%d,"
             "\"labels\":%s%s},\"status\":{\"state\":\"x\"}}",
             ns, name, generation, labels ? labels : "{}", refs);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    return o;
}

static int map(const char *type, enum watcher_ev ev, const cJSON *o, const cJSON *old,
               struct watcher_key *keys)
{
    int t = watcher_type_index(type);
    assert_true(t >= 0);
    return watcher_map_event(t, ev, o, old, keys, 16);
}

static int has_key(const struct watcher_key *keys, int n, const char *queue, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i].queue, queue) == 0 && strcmp(keys[i].key, key) == 0)
            return 1;
    return 0;
}

static void test_raycluster_predicates(void **state)
{
    (void)state;
    struct watcher_key k[16];
    cJSON *a = obj("ns1", "c1", 1, "{\"a\":\"1\"}", NULL, NULL, NULL, 0);
    cJSON *status_only = obj("ns1", "c1", 1, "{\"a\":\"1\"}", NULL, NULL, NULL, 0);
    cJSON_ReplaceItemInObject(status_only, "status", cJSON_CreateString("changed"));
    cJSON *gen = obj("ns1", "c1", 2, "{\"a\":\"1\"}", NULL, NULL, NULL, 0);
    cJSON *lab = obj("ns1", "c1", 1, "{\"a\":\"2\"}", NULL, NULL, NULL, 0);
    cJSON *ann = obj("ns1", "c1", 1, "{\"a\":\"1\"}", NULL, NULL, NULL, 0);
    cJSON_AddItemToObject(cJSON_GetObjectItem(ann, "metadata"), "annotations",
                          cJSON_Parse("{\"x\":\"y\"}"));

    int n = map("ray.io/v1/rayclusters", WATCHER_EV_ADD, a, NULL, k);
    assert_int_equal(n, 1);
    assert_true(has_key(k, n, "raycluster", "ns1/c1"));
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, status_only, a, k), 0);
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, gen, a, k), 1);
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, lab, a, k), 1);
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, ann, a, k), 1);
    /* unknown previous object: treated as a change */
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, status_only, NULL, k), 1);
    n = map("ray.io/v1/rayclusters", WATCHER_EV_DELETE, a, NULL, k);
    assert_int_equal(n, 1);
    assert_true(has_key(k, n, "raycluster", "ns1/c1"));

    /* an empty annotations map equals an absent one */
    cJSON *empty_ann = obj("ns1", "c1", 1, "{\"a\":\"1\"}", NULL, NULL, NULL, 0);
    cJSON_AddItemToObject(cJSON_GetObjectItem(empty_ann, "metadata"), "annotations",
                          cJSON_CreateObject());
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, empty_ann, a, k), 0);

    cJSON_Delete(a); cJSON_Delete(status_only); cJSON_Delete(gen); cJSON_Delete(lab);
    cJSON_Delete(ann); cJSON_Delete(empty_ann);
}

static void test_rayjob_no_predicate(void **state)
{
    (void)state;
    struct watcher_key k[16];
    cJSON *a = obj("ns", "j", 1, NULL, NULL, NULL, NULL, 0);
    cJSON *b = obj("ns", "j", 1, NULL, NULL, NULL, NULL, 0);
    int n = map("ray.io/v1/rayjobs", WATCHER_EV_UPDATE, b, a, k);
    assert_int_equal(n, 1);
    assert_true(has_key(k, n, "rayjob", "ns/j"));
    cJSON_Delete(a); cJSON_Delete(b);
}

static void test_pod_to_raycluster(void **state)
{
    (void)state;
    struct watcher_key k[16];
    cJSON *p = obj("ns", "p1", 1, NULL, "RayCluster", "ray.io/v1", "c1", 1);
    int n = map("v1/pods", WATCHER_EV_UPDATE, p, NULL, k);
    assert_int_equal(n, 1);
    assert_true(has_key(k, n, "raycluster", "ns/c1"));
    /* another version of the same group still matches (controller-runtime compares groups) */
    cJSON *p2 = obj("ns", "p1", 1, NULL, "RayCluster", "ray.io/v1alpha1", "c1", 1);
    assert_int_equal(map("v1/pods", WATCHER_EV_ADD, p2, NULL, k), 1);
    /* not the controller: ignored; another group or kind: ignored */
    cJSON *p3 = obj("ns", "p1", 1, NULL, "RayCluster", "ray.io/v1", "c1", 0);
    assert_int_equal(map("v1/pods", WATCHER_EV_ADD, p3, NULL, k), 0);
    cJSON *p4 = obj("ns", "p1", 1, NULL, "RayCluster", "other.io/v1", "c1", 1);
    assert_int_equal(map("v1/pods", WATCHER_EV_ADD, p4, NULL, k), 0);
    cJSON *p5 = obj("ns", "p1", 1, NULL, "ReplicaSet", "apps/v1", "rs", 1);
    assert_int_equal(map("v1/pods", WATCHER_EV_DELETE, p5, NULL, k), 0);
    /* a Pod owned by a RayJob has no rule */
    cJSON *p6 = obj("ns", "p1", 1, NULL, "RayJob", "ray.io/v1", "j", 1);
    assert_int_equal(map("v1/pods", WATCHER_EV_ADD, p6, NULL, k), 0);
    cJSON_Delete(p); cJSON_Delete(p2); cJSON_Delete(p3); cJSON_Delete(p4);
    cJSON_Delete(p5); cJSON_Delete(p6);
}

static void test_owned_kinds(void **state)
{
    (void)state;
    struct watcher_key k[16];
    struct { const char *type, *okind, *queue; } cases[] = {
        { "v1/services", "RayCluster", "raycluster" },
        { "v1/services", "RayJob", "rayjob" },
        { "v1/services", "RayService", "rayservice" },
        { "ray.io/v1/rayclusters", "RayJob", "rayjob" },
        { "ray.io/v1/rayclusters", "RayService", "rayservice" },
        { "batch/v1/jobs", "RayJob", "rayjob" },
        { "v1/secrets", "RayCluster", "raycluster" },
        { "v1/persistentvolumeclaims", "RayCluster", "raycluster" },
        { "v1/serviceaccounts", "RayCluster", "raycluster" },
        { "rbac.authorization.k8s.io/v1/roles", "RayCluster", "raycluster" },
        { "rbac.authorization.k8s.io/v1/rolebindings", "RayCluster", "raycluster" },
        { "networking.k8s.io/v1/ingresses", "RayCluster", "raycluster" },
        { "networking.k8s.io/v1/networkpolicies", "RayCluster", "raycluster" },
        /* gang scheduling: a Volcano PodGroup is the RayCluster's, or the RayJob's for
         * the cluster a RayJob created; a WAS PodGroup / Workload the RayCluster's */
        { "scheduling.volcano.sh/v1beta1/podgroups", "RayCluster", "raycluster" },
        { "scheduling.volcano.sh/v1beta1/podgroups", "RayJob", "rayjob" },
        { "scheduling.k8s.io/v1alpha2/podgroups", "RayCluster", "raycluster" },
        { "scheduling.k8s.io/v1alpha2/workloads", "RayCluster", "raycluster" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *o = obj("ns", "child", 1, NULL, cases[i].okind, "ray.io/v1", "owner", 1);
        int n = map(cases[i].type, WATCHER_EV_ADD, o, NULL, k);
        assert_true(has_key(k, n, cases[i].queue, "ns/owner"));
        /* a RayCluster also enqueues itself; nothing else is expected */
        int self = strcmp(cases[i].type, "ray.io/v1/rayclusters") == 0;
        assert_int_equal(n, 1 + self);
        if (self)
            assert_true(has_key(k, n, "raycluster", "ns/child"));
        cJSON_Delete(o);
    }
    /* a Job owned by a RayCluster maps nowhere */
    cJSON *j = obj("ns", "job", 1, NULL, "RayCluster", "ray.io/v1", "c", 1);
    assert_int_equal(map("batch/v1/jobs", WATCHER_EV_ADD, j, NULL, k), 0);
    cJSON_Delete(j);
}

static void test_status_update_of_owned_raycluster_reaches_owner(void **state)
{
    (void)state;
    struct watcher_key k[16];
    cJSON *a = obj("ns", "c", 1, NULL, "RayJob", "ray.io/v1", "j", 1);
    cJSON *b = obj("ns", "c", 1, NULL, "RayJob", "ray.io/v1", "j", 1);
    cJSON_ReplaceItemInObject(b, "status", cJSON_CreateString("ready"));
    /* the RayCluster queue is filtered out, the owning RayJob still hears it */
    int n = map("ray.io/v1/rayclusters", WATCHER_EV_UPDATE, b, a, k);
    assert_int_equal(n, 1);
    assert_true(has_key(k, n, "rayjob", "ns/j"));
    cJSON_Delete(a); cJSON_Delete(b);
}

static void test_owner_change_enqueues_both(void **state)
{
    (void)state;
    struct watcher_key k[16];
    cJSON *old = obj("ns", "p", 1, NULL, "RayCluster", "ray.io/v1", "old", 1);
    cJSON *neu = obj("ns", "p", 1, NULL, "RayCluster", "ray.io/v1", "new", 1);
    int n = map("v1/pods", WATCHER_EV_UPDATE, neu, old, k);
    assert_int_equal(n, 2);
    assert_true(has_key(k, n, "raycluster", "ns/new"));
    assert_true(has_key(k, n, "raycluster", "ns/old"));
    /* same owner before and after: one key, not two */
    assert_int_equal(map("v1/pods", WATCHER_EV_UPDATE, neu, neu, k), 1);
    cJSON_Delete(old); cJSON_Delete(neu);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct watcher_key k[1];
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(watcher_map_event(-1, WATCHER_EV_ADD, arr, NULL, k, 1), -EINVAL);
    assert_int_equal(watcher_map_event(0, WATCHER_EV_ADD, arr, NULL, k, 1), -EINVAL);
    assert_int_equal(watcher_map_event((int)watcher_ntypes, WATCHER_EV_ADD, arr, NULL, k, 1),
                     -EINVAL);
    cJSON_Delete(arr);
    /* no metadata at all: nothing to enqueue, not a crash */
    cJSON *empty = cJSON_CreateObject();
    assert_int_equal(map("ray.io/v1/rayclusters", WATCHER_EV_ADD, empty, NULL, k), 0);
    cJSON_Delete(empty);
    /* a key that does not fit the buffer is refused */
    char name[600];
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    cJSON *big = obj("ns", name, 1, NULL, NULL, NULL, NULL, 0);
    assert_int_equal(map("ray.io/v1/rayjobs", WATCHER_EV_ADD, big, NULL, k), -EINVAL);
    cJSON_Delete(big);
    /* more keys than room: -ENOBUFS */
    cJSON *c = obj("ns", "c", 1, NULL, "RayJob", "ray.io/v1", "j", 1);
    assert_int_equal(watcher_map_event(watcher_type_index("ray.io/v1/rayclusters"),
                                       WATCHER_EV_ADD, c, NULL, k, 1), -ENOBUFS);
    cJSON_Delete(c);
}

static void test_type_table(void **state)
{
    (void)state;
    int pods = watcher_type_index("v1/pods");
    assert_true(pods >= 0);
    assert_string_equal(watcher_types[pods].label_selector,
                        "ray.io/node-type in (head,worker,redis-cleanup)");
    int jobs = watcher_type_index("batch/v1/jobs");
    assert_string_equal(watcher_types[jobs].label_selector,
                        "app.kubernetes.io/created-by=kuberay-operator");
    int svc = watcher_type_index("v1/services");
    assert_string_equal(watcher_types[svc].label_selector,
                        "app.kubernetes.io/created-by=kuberay-operator");
    assert_int_equal(watcher_type_index("v1/nothing"), -1);
    /* every rule names a watched child type and a queue some type is primary of */
    for (size_t i = 0; i < watcher_nowner_rules; i++) {
        assert_true(watcher_type_index(watcher_owner_rules[i].child_cache_type) >= 0);
        int found = 0;
        for (size_t t = 0; t < watcher_ntypes; t++)
            if (watcher_types[t].queue &&
                strcmp(watcher_types[t].queue, watcher_owner_rules[i].queue) == 0 &&
                strcmp(watcher_types[t].kind, watcher_owner_rules[i].owner_kind) == 0)
                found = 1;
        assert_true(found);
    }
}

static void test_rv_compare(void **state)
{
    (void)state;
    assert_true(kobj_rv_cmp("9", "10") < 0);
    assert_true(kobj_rv_cmp("100", "99") > 0);
    assert_int_equal(kobj_rv_cmp("42", "42"), 0);
    assert_int_equal(kobj_rv_cmp("007", "7"), 0);
    assert_true(kobj_rv_cmp("abc", "abd") < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raycluster_predicates),
        cmocka_unit_test(test_rayjob_no_predicate),
        cmocka_unit_test(test_pod_to_raycluster),
        cmocka_unit_test(test_owned_kinds),
        cmocka_unit_test(test_status_update_of_owned_raycluster_reaches_owner),
        cmocka_unit_test(test_owner_change_enqueues_both),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_type_table),
        cmocka_unit_test(test_rv_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_store.c - unit tests of kubesim's store verbs: metadata, generation,
 * conflicts, status/scale subresources, finalizers and graceful deletion, list
 * paging and selectors, built-in defaults and validation, CRDs, Status JSON. */
#include "tests/unit/kubesim/store_testlib.h"

#include <malloc.h>
#include <regex.h>

#include "kobj/json_equal.h"
#include "kubesim/store/internal.h"

static struct store *S;

static int setup(void **state)
{
    (void)state;
    S = tl_open(NULL, 100);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(S);
    S = NULL;
    return 0;
}

static void test_create_sets_system_metadata(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    uint64_t before = store_current_rv(S);
    struct store_obj *a = tl_create(S, cm, "default",
                                    tl_json("{\"metadata\":{\"name\":\"a\",\"uid\":\"x\","
                                            "\"creationTimestamp\":\"2000-01-01T00:00:00Z\"}}"));
    struct store_obj *b = tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"b\"}}"));
    regex_t re;

    (void)state;
    assert_int_equal(regcomp(&re, "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                  "[0-9a-f]{12}$", REG_EXTENDED), 0);
    assert_int_equal(regexec(&re, a->uid, 0, NULL, 0), 0);
    regfree(&re);
    assert_string_not_equal(a->uid, b->uid);
    assert_string_not_equal(tl_meta(a, "creationTimestamp"), "2000-01-01T00:00:00Z");
    assert_int_equal(a->rv, before + 1);
    assert_int_equal(b->rv, before + 2);
    assert_string_equal(tl_str(store_obj_json(a), "kind"), "ConfigMap");
    assert_string_equal(tl_str(store_obj_json(a), "apiVersion"), "v1");
    assert_string_equal(a->ns, "default");
    assert_int_equal(store_current_rv(S), before + 2);
    /* bytes are the compact serialisation of json */
    char *p = cJSON_PrintUnformatted(store_obj_json(a));
    assert_string_equal(p, store_obj_text(a));
    assert_int_equal(strlen(p), a->len);
    free(p);
    store_obj_unref(a);
    store_obj_unref(b);
}

static void test_create_errors(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    const struct reg_resource *svc = tl_res(S, "", "v1", "services");
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    char big[300000];

    (void)state;
    assert_int_equal(store_create(S, cm, "nope", tl_json("{\"metadata\":{\"name\":\"a\"}}"),
                                  NULL, &o, &st), -ENOENT);
    assert_int_equal(st.code, 404);
    assert_string_equal(st.message, "namespaces \"nope\" not found");
    assert_string_equal(st.kind, "namespaces");
    store_status_clear(&st);

    assert_int_equal(store_create(S, cm, "default",
                                  tl_json("{\"metadata\":{\"name\":\"a\",\"namespace\":\"kube-system\"}}"),
                                  NULL, &o, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    assert_string_equal(st.reason, "BadRequest");
    store_status_clear(&st);

    assert_int_equal(store_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"Bad_Name\"}}"),
                                  NULL, &o, &st), -EINVAL);
    assert_int_equal(st.code, 422);
    assert_non_null(strstr(st.message, "ConfigMap \"Bad_Name\" is invalid: metadata.name: "
                                       "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
    assert_string_equal(st.kind, "ConfigMap");
    assert_int_equal(cJSON_GetArraySize(st.causes), 1);
    store_status_clear(&st);

    /* services use DNS-1035: a leading digit is refused */
    assert_int_equal(store_create(S, svc, "default",
                                  tl_json("{\"metadata\":{\"name\":\"1svc\"},\"spec\":{\"ports\":[{\"port\":80}]}}"),
                                  NULL, &o, &st), -EINVAL);
    assert_non_null(strstr(st.message, "a DNS-1035 label must consist"));
    store_status_clear(&st);

    assert_int_equal(store_create(S, cm, "default", tl_json("{\"metadata\":{}}"), NULL, &o, &st),
                     -EINVAL);
    assert_string_equal(st.message, "ConfigMap \"\" is invalid: metadata.name: Required value: "
                                    "name or generateName is required");
    store_status_clear(&st);

    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    cJSON *j = tl_json("{\"metadata\":{\"name\":\"big\",\"annotations\":{}}}");
    cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "annotations"),
                            "a", big);
    assert_int_equal(store_create(S, cm, "default", j, NULL, &o, &st), -EINVAL);
    assert_string_equal(st.message, "ConfigMap \"big\" is invalid: metadata.annotations: Too "
                                    "long: must have at most 262144 bytes");
    store_status_clear(&st);

    assert_int_equal(store_create(S, cm, "default",
                                  tl_json("{\"metadata\":{\"name\":\"l\",\"labels\":{\"a\":\"-bad\"}}}"),
                                  NULL, &o, &st), -EINVAL);
    assert_non_null(strstr(st.message, "metadata.labels: Invalid value: \"-bad\""));
    store_status_clear(&st);

    store_obj_unref(tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"dup\"}}")));
    assert_int_equal(store_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"dup\"}}"),
                                  NULL, &o, &st), -EEXIST);
    assert_int_equal(st.code, 409);
    assert_string_equal(st.reason, "AlreadyExists");
    assert_string_equal(st.message, "configmaps \"dup\" already exists");
    store_status_clear(&st);
    assert_null(o);
}

static void test_generate_name(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    regex_t re;

    (void)state;
    assert_int_equal(regcomp(&re, "^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$", REG_EXTENDED), 0);
    for (int i = 0; i < 20; i++) {
        struct store_obj *o = tl_create(S, cm, "default",
                                        tl_json("{\"metadata\":{\"generateName\":\"gen-\"}}"));
        assert_int_equal(regexec(&re, o->name, 0, NULL, 0), 0);
        store_obj_unref(o);
    }
    regfree(&re);
}

/* The no-op test ignores managedFields and resourceVersion only, without copying. */
static void test_same_object(void **state)
{
    static const struct { const char *a, *b; bool same; } cases[] = {
        { "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\",\"managedFields\":[1]},"
          "\"spec\":{\"x\":1}}",
          "{\"spec\":{\"x\":1},\"metadata\":{\"resourceVersion\":\"2\",\"name\":\"a\"}}", true },
        { "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":1}}",
          "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":2}}", false },
        { "{\"metadata\":{\"name\":\"a\"}}", "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"}}", false },
        { "{\"metadata\":{\"name\":\"a\"},\"status\":{}}", "{\"metadata\":{\"name\":\"a\"}}", false },
        { "{\"metadata\":{\"resourceVersion\":\"3\"},\"spec\":1}", "{\"spec\":1}", true },
        { "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}", "{\"metadata\":{\"labels\":{\"a\":\"2\"}}}", false },
        { "[1]", "[1]", true },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *a = tl_json(cases[i].a), *b = tl_json(cases[i].b);
        assert_int_equal(store__same_object(a, b), cases[i].same);
        assert_int_equal(store__same_object(b, a), cases[i].same);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}

/* A packed tree reads like the tree it copies: same members, order, values, last-child
 * links (cJSON_AddItemToArray relies on them), and a cJSON_Duplicate owns its strings. */
static void test_json_pack(void **state)
{
    cJSON *t = tl_json("{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\",\"b\":\"\"}},"
                       "\"spec\":{\"n\":3,\"f\":1.5,\"ok\":true,\"no\":null,\"l\":[1,\"x\",[],{}]}}");
    cJSON *p, *d;
    char *a, *b;

    (void)state;
    assert_non_null(t);
    cJSON_AddItemToObject(t, "raw", cJSON_CreateRaw("{\"f:x\":{}}"));
    p = store__json_pack(t);
    assert_non_null(p);
    assert_true(json_equal(t, p));
    a = cJSON_PrintUnformatted(t);
    b = cJSON_PrintUnformatted(p);
    assert_string_equal(a, b);
    free(b);
    assert_ptr_equal(p->child->prev, cJSON_GetObjectItem(p, "raw"));
    assert_ptr_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "spec"), "l")->child->prev->prev,
                     cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "spec"), "l"), 2));
    d = cJSON_Duplicate(p, true);
    free(p);                        /* the copy must not point into the block */
    cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "spec"), "l"), cJSON_CreateNumber(5));
    b = cJSON_PrintUnformatted(d);
    assert_non_null(strstr(b, "[1,\"x\",[],{},5]"));
    assert_int_equal(strlen(b), strlen(a) + 2);
    free(a);
    free(b);
    cJSON_Delete(d);
    cJSON_Delete(t);
}

static void test_update_conflict_and_noop(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, cm, "default",
                                    tl_json("{\"metadata\":{\"name\":\"u\"},\"data\":{\"k\":\"1\"}}"));
    struct store_obj *n = NULL, *same = NULL;
    uint64_t rv0 = o->rv;

    (void)state;
    cJSON *j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "data"), "k", cJSON_CreateString("2"));
    assert_int_equal(store_update(S, cm, "default", "u", NULL, j, NULL, &n, &st), 0);
    assert_true(n->rv > rv0);
    assert_string_equal(tl_meta(n, "uid"), o->uid);
    /* stale resourceVersion */
    j = cJSON_Duplicate(store_obj_json(o), true);
    assert_int_equal(store_update(S, cm, "default", "u", NULL, j, NULL, &same, &st), -EBUSY);
    assert_int_equal(st.code, 409);
    assert_string_equal(st.message, "Operation cannot be fulfilled on configmaps \"u\": the "
                                    "object has been modified; please apply your changes to the "
                                    "latest version and try again");
    store_status_clear(&st);
    /* same content: no new rv */
    uint64_t cur = store_current_rv(S);
    j = cJSON_Duplicate(store_obj_json(n), true);
    assert_int_equal(store_update(S, cm, "default", "u", NULL, j, NULL, &same, &st), 0);
    assert_int_equal(same->rv, n->rv);
    assert_int_equal(store_current_rv(S), cur);
    store_obj_unref(same);
    /* built-ins accept an unconditional update; uid stays */
    j = tl_json("{\"metadata\":{\"name\":\"u\",\"uid\":\"forged\"},\"data\":{\"k\":\"3\"}}");
    assert_int_equal(store_update(S, cm, "default", "u", NULL, j, NULL, &same, &st), 0);
    assert_string_equal(same->uid, o->uid);
    assert_string_equal(tl_str(store_obj_json(same), "data.k"), "3");
    store_obj_unref(same);
    /* name mismatch */
    j = tl_json("{\"metadata\":{\"name\":\"other\"}}");
    assert_int_equal(store_update(S, cm, "default", "u", NULL, j, NULL, &same, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    store_status_clear(&st);
    /* missing */
    j = tl_json("{\"metadata\":{\"name\":\"gone\"}}");
    assert_int_equal(store_update(S, cm, "default", "gone", NULL, j, NULL, &same, &st), -ENOENT);
    assert_int_equal(st.code, 404);
    store_status_clear(&st);
    store_obj_unref(o);
    store_obj_unref(n);
}

static void test_cr_generation_and_status_split(void **state)
{
    const struct reg_resource *w = tl_install_widgets(S);
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, w, "default",
                                    tl_json("{\"apiVersion\":\"test.io/v1\",\"kind\":\"Widget\","
                                            "\"metadata\":{\"name\":\"w\"},\"spec\":{\"replicas\":1},"
                                            "\"status\":{\"state\":\"dropped\"}}"));
    struct store_obj *n = NULL;
    cJSON *j;

    (void)state;
    assert_int_equal(tl_num(store_obj_json(o), "metadata.generation"), 1);
    assert_null(cJSON_GetObjectItem(store_obj_json(o), "status"));     /* dropped on create */
    /* labels only: no generation bump */
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_AddItemToObject(cJSON_GetObjectItem(j, "metadata"), "labels", tl_json("{\"a\":\"b\"}"));
    assert_int_equal(store_update(S, w, "default", "w", NULL, j, NULL, &n, &st), 0);
    assert_int_equal(tl_num(store_obj_json(n), "metadata.generation"), 1);
    assert_true(n->rv > o->rv);
    store_obj_unref(o);
    o = n;
    /* spec change: +1; a status change through the main endpoint is ignored */
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "spec"), "replicas", cJSON_CreateNumber(3));
    cJSON_AddItemToObject(j, "status", tl_json("{\"state\":\"ignored\"}"));
    assert_int_equal(store_update(S, w, "default", "w", NULL, j, NULL, &n, &st), 0);
    assert_int_equal(tl_num(store_obj_json(n), "metadata.generation"), 2);
    assert_null(cJSON_GetObjectItem(store_obj_json(n), "status"));
    store_obj_unref(o);
    o = n;
    /* /status: only status is taken; generation stays */
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "spec"), "replicas", cJSON_CreateNumber(9));
    cJSON_AddItemToObject(j, "status", tl_json("{\"state\":\"ready\",\"replicas\":3}"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "metadata"), "labels", tl_json("{\"x\":\"y\"}"));
    assert_int_equal(store_update(S, w, "default", "w", "status", j, NULL, &n, &st), 0);
    assert_string_equal(tl_str(store_obj_json(n), "status.state"), "ready");
    assert_int_equal(tl_num(store_obj_json(n), "spec.replicas"), 3);
    assert_string_equal(tl_str(store_obj_json(n), "metadata.labels.a"), "b");
    assert_int_equal(tl_num(store_obj_json(n), "metadata.generation"), 2);
    store_obj_unref(o);
    o = n;
    /* CRs refuse unconditional updates */
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "metadata"), "resourceVersion");
    assert_int_equal(store_update(S, w, "default", "w", NULL, j, NULL, &n, &st), -EINVAL);
    assert_string_equal(st.message, "Widget.test.io \"w\" is invalid: metadata.resourceVersion: "
                                    "Invalid value: 0: must be specified for an update");
    store_status_clear(&st);
    /* stale rv on a CR */
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "metadata"), "resourceVersion",
                              cJSON_CreateString("1"));
    assert_int_equal(store_update(S, w, "default", "w", NULL, j, NULL, &n, &st), -EBUSY);
    assert_string_equal(st.message, "Operation cannot be fulfilled on widgets.test.io \"w\": the "
                                    "object has been modified; please apply your changes to the "
                                    "latest version and try again");
    assert_string_equal(st.group, "test.io");
    store_status_clear(&st);
    store_obj_unref(o);
}

static void test_cr_versions_scale_and_validation(void **state)
{
    const struct reg_resource *w = tl_install_widgets(S);
    const struct reg_resource *wb = tl_res(S, "test.io", "v1beta1", "widgets");
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    cJSON *scale = NULL;

    (void)state;
    /* created through v1beta1, stored as v1, served back as asked */
    o = tl_create(S, wb, "default", tl_json("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"replicas\":2}}"));
    assert_string_equal(tl_str(store_obj_json(o), "apiVersion"), "test.io/v1beta1");
    store_obj_unref(o);
    assert_int_equal(store_get(S, w, "default", "b", &o, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "apiVersion"), "test.io/v1");
    store_obj_unref(o);

    assert_int_equal(store_get_scale(S, w, "default", "b", &scale, &st), 0);
    assert_string_equal(tl_str(scale, "kind"), "Scale");
    assert_string_equal(tl_str(scale, "apiVersion"), "autoscaling/v1");
    assert_int_equal(tl_num(scale, "spec.replicas"), 2);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(scale, "spec"), "replicas", cJSON_CreateNumber(5));
    assert_int_equal(store_update(S, w, "default", "b", "scale", scale, NULL, &o, &st), 0);
    assert_int_equal(tl_num(store_obj_json(o), "spec.replicas"), 5);
    assert_int_equal(tl_num(store_obj_json(o), "metadata.generation"), 2);
    store_obj_unref(o);
    bool created = true;
    const char *p = "{\"spec\":{\"replicas\":7}}";
    assert_int_equal(store_patch(S, w, "default", "b", "scale", PATCH_MERGE, p, strlen(p), NULL,
                                 &o, &created, &st), 0);
    assert_false(created);
    assert_int_equal(tl_num(store_obj_json(o), "spec.replicas"), 7);
    store_obj_unref(o);

    /* strategic merge on a CR: 415 */
    assert_int_equal(store_patch(S, w, "default", "b", NULL, PATCH_STRATEGIC, "{}", 2, NULL, &o,
                                 &created, &st), -EPROTONOSUPPORT);
    assert_int_equal(st.code, 415);
    assert_string_equal(st.reason, "UnsupportedMediaType");
    store_status_clear(&st);
}

static void test_cr_schema_validation(void **state)
{
    const struct reg_resource *w = tl_install_widgets(S);
    struct store_status st = { 0 };
    struct store_write_opts strict = { .field_validation = "Strict" };
    struct store_write_opts warn = { .field_validation = "Warn", .warnings = cJSON_CreateArray() };
    struct store_obj *o = NULL;

    (void)state;
    if (!w->schema) {
        /* kubesim/schema/schema.c has not landed: the CRD carries no compiled schema */
        cJSON_Delete(warn.warnings);
        skip();
    }
    /* strict field validation rejects pruned fields, warn reports them */
    assert_int_equal(store_create(S, w, "default",
                                  tl_json("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"foo\":1}}"),
                                  &strict, &o, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    assert_string_equal(st.message, "strict decoding error: unknown field \"spec.foo\"");
    store_status_clear(&st);
    o = NULL;
    assert_int_equal(store_create(S, w, "default",
                                  tl_json("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"foo\":1}}"),
                                  &warn, &o, &st), 0);
    assert_int_equal(cJSON_GetArraySize(warn.warnings), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(warn.warnings, 0)),
                        "unknown field \"spec.foo\"");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(o), "spec"), "foo"));
    store_obj_unref(o);
    cJSON_Delete(warn.warnings);

    /* schema causes become 422 with the Kind.group prefix */
    assert_int_equal(store_create(S, w, "default",
                                  tl_json("{\"metadata\":{\"name\":\"neg\"},\"spec\":{\"replicas\":-1}}"),
                                  NULL, &o, &st), -EINVAL);
    assert_int_equal(st.code, 422);
    assert_true(!strncmp(st.message, "Widget.test.io \"neg\" is invalid: spec.replicas: ", 46));
    assert_string_equal(st.kind, "Widget");
    store_status_clear(&st);

}

static void test_crd_delete_removes_objects(void **state)
{
    const struct reg_resource *w = tl_install_widgets(S);
    const struct reg_resource *crd = tl_res(S, "apiextensions.k8s.io", "v1",
                                            "customresourcedefinitions");
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    bool gone = false;

    (void)state;
    store_obj_unref(tl_create(S, w, "default", tl_json("{\"metadata\":{\"name\":\"x\"}}")));
    assert_int_equal(store_get(S, crd, "", "widgets.test.io", &o, &st), 0);
    assert_string_equal(tl_str(cJSON_GetArrayItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(store_obj_json(o), "status"), "conditions"), 0), "status"), "True");
    store_obj_unref(o);
    assert_int_equal(store_delete(S, crd, "", "widgets.test.io", NULL, &o, &gone, &st), 0);
    assert_true(gone);
    store_obj_unref(o);
    const struct registry *r = store_registry_rdlock(S);
    assert_null(registry_find(r, "test.io", "v1", "widgets"));
    store_registry_unlock(S);
    /* re-create: the old object did not survive */
    w = tl_install_widgets(S);
    assert_int_equal(store_get(S, w, "default", "x", &o, &st), -ENOENT);
    assert_string_equal(st.message, "widgets.test.io \"x\" not found");
    store_status_clear(&st);
    /* the group of a CRD is immutable */
    assert_int_equal(store_get(S, crd, "", "widgets.test.io", &o, &st), 0);
    cJSON *j = cJSON_Duplicate(store_obj_json(o), true);
    store_obj_unref(o);
    cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItem(j, "spec"), "group",
                                           cJSON_CreateString("other.io"));
    assert_int_equal(store_update(S, crd, "", "widgets.test.io", NULL, j, NULL, &o, &st), -EINVAL);
    assert_int_equal(st.code, 422);
    assert_non_null(strstr(st.message, "spec.group"));
    store_status_clear(&st);
    /* a collection delete unregisters too */
    struct store_delete_opts dopt = { .grace_seconds = -1 };
    assert_int_equal(store_delete_collection(S, crd, "", NULL, &dopt, &st), 0);
    r = store_registry_rdlock(S);
    assert_null(registry_find(r, "test.io", "v1", "widgets"));
    store_registry_unlock(S);
}

static void test_finalizers(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, cm, "default",
                                    tl_json("{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"a/b\"]}}"));
    struct store_obj *d = NULL, *d2 = NULL, *n = NULL;
    bool gone = true;
    cJSON *j;

    (void)state;
    assert_int_equal(store_delete(S, cm, "default", "f", NULL, &d, &gone, &st), 0);
    assert_false(gone);
    assert_non_null(tl_meta(d, "deletionTimestamp"));
    assert_int_equal(tl_num(store_obj_json(d), "metadata.deletionGracePeriodSeconds"), 0);
    assert_true(d->rv > o->rv);
    assert_int_equal(store_delete(S, cm, "default", "f", NULL, &d2, &gone, &st), 0);
    assert_string_equal(tl_meta(d2, "deletionTimestamp"), tl_meta(d, "deletionTimestamp"));
    assert_int_equal(d2->rv, d->rv);
    /* no new finalizers once deleting */
    j = cJSON_Duplicate(store_obj_json(d), true);
    cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "finalizers"),
                         cJSON_CreateString("c/d"));
    assert_int_equal(store_update(S, cm, "default", "f", NULL, j, NULL, &n, &st), -EINVAL);
    assert_non_null(strstr(st.message, "no new finalizers can be added if the object is being deleted"));
    store_status_clear(&st);
    /* dropping the last finalizer removes the object */
    j = cJSON_Duplicate(store_obj_json(d), true);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "metadata"), "finalizers");
    assert_int_equal(store_update(S, cm, "default", "f", NULL, j, NULL, &n, &st), 0);
    store_obj_unref(n);
    assert_int_equal(store_get(S, cm, "default", "f", &n, &st), -ENOENT);
    store_status_clear(&st);
    store_obj_unref(o);
    store_obj_unref(d);
    store_obj_unref(d2);
}

static void test_delete_preconditions(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"p\"}}"));
    struct store_delete_opts bad_uid = { .precondition_uid = "nope", .grace_seconds = -1 };
    struct store_delete_opts bad_rv = { .precondition_rv = "1", .grace_seconds = -1 };
    struct store_delete_opts ok = { .precondition_uid = o->uid, .grace_seconds = -1 };
    struct store_obj *d = NULL;
    bool gone = false;

    (void)state;
    assert_int_equal(store_delete(S, cm, "default", "p", &bad_uid, &d, &gone, &st), -EBUSY);
    assert_int_equal(st.code, 409);
    assert_non_null(strstr(st.message, "Precondition failed: UID in precondition: nope"));
    store_status_clear(&st);
    assert_int_equal(store_delete(S, cm, "default", "p", &bad_rv, &d, &gone, &st), -EBUSY);
    store_status_clear(&st);
    assert_int_equal(store_delete(S, cm, "default", "p", &ok, &d, &gone, &st), 0);
    assert_true(gone);
    store_obj_unref(d);
    assert_int_equal(store_delete(S, cm, "default", "p", &ok, &d, &gone, &st), -ENOENT);
    store_status_clear(&st);
    store_obj_unref(o);
}

static void test_pod_graceful_delete(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    const struct reg_resource *nodes = tl_res(S, "", "v1", "nodes");
    struct store_status st = { 0 };
    struct store_obj *d = NULL;
    struct store_delete_opts now = { .grace_seconds = 0 };
    bool gone = false;

    (void)state;
    /* unscheduled: removed at once */
    store_obj_unref(tl_create(S, pods, "default", tl_pod("p0", NULL)));
    assert_int_equal(store_delete(S, pods, "default", "p0", NULL, &d, &gone, &st), 0);
    assert_true(gone);
    store_obj_unref(d);
    /* on an existing node: stays with the pod's grace until a grace-0 delete */
    store_obj_unref(tl_create(S, nodes, "", tl_json("{\"metadata\":{\"name\":\"n1\"}}")));
    cJSON *p = tl_pod("p1", NULL);
    cJSON_AddStringToObject(cJSON_GetObjectItem(p, "spec"), "nodeName", "n1");
    cJSON_AddNumberToObject(cJSON_GetObjectItem(p, "spec"), "terminationGracePeriodSeconds", 12);
    store_obj_unref(tl_create(S, pods, "default", p));
    assert_int_equal(store_delete(S, pods, "default", "p1", NULL, &d, &gone, &st), 0);
    assert_false(gone);
    assert_int_equal(tl_num(store_obj_json(d), "metadata.deletionGracePeriodSeconds"), 12);
    store_obj_unref(d);
    assert_int_equal(store_delete(S, pods, "default", "p1", &now, &d, &gone, &st), 0);
    assert_true(gone);
    store_obj_unref(d);
    /* a node name that does not exist: immediate */
    p = tl_pod("p2", NULL);
    cJSON_AddStringToObject(cJSON_GetObjectItem(p, "spec"), "nodeName", "ghost");
    store_obj_unref(tl_create(S, pods, "default", p));
    assert_int_equal(store_delete(S, pods, "default", "p2", NULL, &d, &gone, &st), 0);
    assert_true(gone);
    store_obj_unref(d);
}

static void test_pod_defaults_and_validation(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, pods, "default",
                                    tl_json("{\"metadata\":{\"name\":\"d\"},\"spec\":{\"containers\":"
                                            "[{\"name\":\"a\",\"image\":\"nginx\",\"ports\":[{\"containerPort\":80}]},"
                                            "{\"name\":\"b\",\"image\":\"x:1.0\"}]}}"));
    const cJSON *spec = cJSON_GetObjectItem(store_obj_json(o), "spec");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 0);
    const cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 1);
    struct store_obj *n = NULL;
    cJSON *j;

    (void)state;
    assert_string_equal(tl_str(spec, "restartPolicy"), "Always");
    assert_string_equal(tl_str(spec, "dnsPolicy"), "ClusterFirst");
    assert_string_equal(tl_str(spec, "schedulerName"), "default-scheduler");
    assert_string_equal(tl_str(spec, "serviceAccountName"), "default");
    assert_string_equal(tl_str(spec, "serviceAccount"), "default");
    assert_int_equal(tl_num(spec, "terminationGracePeriodSeconds"), 30);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(spec, "enableServiceLinks")));
    assert_int_equal(tl_num(spec, "priority"), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "tolerations")), 2);
    assert_int_equal(tl_num(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "tolerations"), 0),
                            "tolerationSeconds"), 300);
    assert_string_equal(tl_str(c0, "imagePullPolicy"), "Always");
    assert_string_equal(tl_str(c1, "imagePullPolicy"), "IfNotPresent");
    assert_string_equal(tl_str(c0, "terminationMessagePath"), "/dev/termination-log");
    assert_string_equal(tl_str(cJSON_GetArrayItem(cJSON_GetObjectItem(c0, "ports"), 0), "protocol"), "TCP");
    assert_string_equal(tl_str(store_obj_json(o), "status.phase"), "Pending");
    assert_string_equal(tl_str(store_obj_json(o), "status.qosClass"), "BestEffort");

    /* image may change, other spec fields may not */
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "spec"), "containers");
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cs, 0), "image", cJSON_CreateString("nginx:2"));
    assert_int_equal(store_update(S, pods, "default", "d", NULL, j, NULL, &n, &st), 0);
    store_obj_unref(n);
    j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "metadata"), "resourceVersion");
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "spec"), "dnsPolicy", cJSON_CreateString("Default"));
    assert_int_equal(store_update(S, pods, "default", "d", NULL, j, NULL, &n, &st), -EINVAL);
    assert_true(!strncmp(st.message, "Pod \"d\" is invalid: spec: Forbidden: pod updates may not "
                                     "change fields other than", 80));
    store_status_clear(&st);

    assert_int_equal(store_create(S, pods, "default",
                                  tl_json("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"containers\":[{\"name\":\"a\"}]}}"),
                                  NULL, &n, &st), -EINVAL);
    assert_string_equal(st.message, "Pod \"bad\" is invalid: spec.containers[0].image: Required value");
    store_status_clear(&st);
    assert_int_equal(store_create(S, pods, "default",
                                  tl_json("{\"metadata\":{\"name\":\"bad\"},\"spec\":{}}"),
                                  NULL, &n, &st), -EINVAL);
    assert_string_equal(st.message, "Pod \"bad\" is invalid: spec.containers: Required value");
    store_status_clear(&st);
    store_obj_unref(o);
}

static void test_service_and_job_defaults(void **state)
{
    const struct reg_resource *svc = tl_res(S, "", "v1", "services");
    const struct reg_resource *jobs = tl_res(S, "batch", "v1", "jobs");
    struct store_status st = { 0 };
    struct store_obj *a = tl_create(S, svc, "default",
                                    tl_json("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":80}]}}"));
    struct store_obj *b = tl_create(S, svc, "default",
                                    tl_json("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"ports\":[{\"port\":80}]}}"));
    struct store_obj *h = tl_create(S, svc, "default",
                                    tl_json("{\"metadata\":{\"name\":\"h\"},\"spec\":{\"clusterIP\":\"None\"}}"));
    struct store_obj *n = NULL;

    (void)state;
    const char *ipa = tl_str(store_obj_json(a), "spec.clusterIP"), *ipb = tl_str(store_obj_json(b), "spec.clusterIP");
    assert_non_null(ipa);
    assert_true(!strncmp(ipa, "10.96.", 6) || !strncmp(ipa, "10.1", 4));
    assert_string_not_equal(ipa, ipb);
    assert_string_equal(tl_str(store_obj_json(h), "spec.clusterIP"), "None");
    assert_string_equal(tl_str(store_obj_json(a), "spec.type"), "ClusterIP");
    assert_string_equal(tl_str(store_obj_json(a), "spec.sessionAffinity"), "None");
    assert_string_equal(tl_str(store_obj_json(a), "spec.ipFamilyPolicy"), "SingleStack");
    assert_string_equal(tl_str(store_obj_json(a), "spec.internalTrafficPolicy"), "Cluster");
    const cJSON *port = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(a), "spec"), "ports"), 0);
    assert_string_equal(tl_str(port, "protocol"), "TCP");
    assert_int_equal(tl_num(port, "targetPort"), 80);
    /* clusterIP is kept when an update leaves it out, refused when changed */
    cJSON *j = tl_json("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":81}]}}");
    assert_int_equal(store_update(S, svc, "default", "a", NULL, j, NULL, &n, &st), 0);
    assert_string_equal(tl_str(store_obj_json(n), "spec.clusterIP"), ipa);
    store_obj_unref(n);
    j = tl_json("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"clusterIP\":\"10.96.99.99\",\"ports\":[{\"port\":81}]}}");
    assert_int_equal(store_update(S, svc, "default", "a", NULL, j, NULL, &n, &st), -EINVAL);
    assert_non_null(strstr(st.message, "may not change once set"));
    store_status_clear(&st);

    struct store_obj *job = tl_create(S, jobs, "default",
                                      tl_json("{\"metadata\":{\"name\":\"j\"},\"spec\":{\"template\":{\"spec\":"
                                              "{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}"));
    const cJSON *js = cJSON_GetObjectItem(store_obj_json(job), "spec");
    assert_int_equal(tl_num(js, "parallelism"), 1);
    assert_int_equal(tl_num(js, "completions"), 1);
    assert_int_equal(tl_num(js, "backoffLimit"), 6);
    assert_string_equal(tl_str(js, "completionMode"), "NonIndexed");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(js, "suspend")));
    assert_string_equal(tl_str(js, "podReplacementPolicy"), "TerminatingOrFailed");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(js, "selector"), "matchLabels"), "batch.kubernetes.io/controller-uid")), job->uid);
    const cJSON *tl = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(js, "template"), "metadata"), "labels");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(tl, "job-name")), "j");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(tl, "controller-uid")), job->uid);
    assert_string_equal(tl_str(js, "template.spec.dnsPolicy"), "ClusterFirst");
    /* a Job without labels takes its template's, generated ones included */
    {
        const cJSON *jl = cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(job), "metadata"), "labels");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(jl, "batch.kubernetes.io/job-name")), "j");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(jl, "controller-uid")), job->uid);
    }
    {
        struct store_obj *own = tl_create(S, jobs, "default",
            tl_json("{\"metadata\":{\"name\":\"own\",\"labels\":{\"team\":\"x\"}},\"spec\":{\"template\":"
                    "{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}"));
        const cJSON *ol = cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(own), "metadata"), "labels");
        assert_int_equal(cJSON_GetArraySize(ol), 1);   /* its own labels are kept as they are */
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(ol, "team")), "x");
        store_obj_unref(own);
    }
    assert_int_equal(tl_num(store_obj_json(job), "metadata.generation"), 1);
    assert_int_equal(store_create(S, jobs, "default",
                                  tl_json("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"template\":{\"spec\":"
                                          "{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}"),
                                  NULL, &n, &st), -EINVAL);
    assert_string_equal(st.message, "Job.batch \"bad\" is invalid: spec.template.spec.restartPolicy: "
                                    "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"");
    store_status_clear(&st);
    store_obj_unref(job);
    store_obj_unref(a);
    store_obj_unref(b);
    store_obj_unref(h);
}

static void test_list_paging_and_selectors(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_list l = { 0 };
    struct store_list_opts lo = { .limit = 7 };
    int seen[100] = { 0 };
    size_t total = 0;
    char *tok = NULL;
    struct sel *sel = NULL;
    struct fsel *fs = NULL;
    char err[128];

    (void)state;
    for (int i = 0; i < 50; i++) {
        char meta[64];
        snprintf(meta, sizeof(meta), ",\"labels\":{\"par\":\"%s\"}", i % 2 ? "odd" : "even");
        cJSON *j = tl_json("{\"metadata\":{\"name\":\"c%02d\"%s}}", i, meta);
        store_obj_unref(tl_create(S, cm, i < 40 ? "default" : "kube-system", j));
    }
    uint64_t first_rv = 0;
    do {
        lo.continue_token = tok;
        assert_int_equal(store_list(S, cm, "", &lo, &l, &st), 0);
        if (!first_rv)
            first_rv = l.rv;
        assert_int_equal(l.rv, first_rv);
        assert_true(l.n <= 7);
        for (size_t i = 0; i < l.n; i++) {
            int k = atoi(l.items[i]->name + 1);
            assert_int_equal(seen[k], 0);
            seen[k]++;
            total++;
        }
        free(tok);
        tok = l.continue_token ? strdup(l.continue_token) : NULL;
        if (tok)
            assert_int_equal(l.remaining, (long)(50 - total));
        store_list_free(&l);
    } while (tok);
    assert_int_equal(total, 50);

    assert_int_equal(store_list(S, cm, "kube-system", NULL, &l, &st), 0);
    assert_int_equal(l.n, 10);
    assert_string_equal(l.items[0]->name, "c40");    /* sorted by key */
    store_list_free(&l);

    assert_int_equal(sel_parse("par=odd", &sel, err, sizeof(err)), 0);
    struct store_list_opts so = { .labels = sel };
    assert_int_equal(store_list(S, cm, "default", &so, &l, &st), 0);
    assert_int_equal(l.n, 20);
    store_list_free(&l);
    sel_free(sel);

    assert_int_equal(fsel_parse("metadata.name=c03", &fs, err, sizeof(err)), 0);
    struct store_list_opts fo = { .fields = fs };
    assert_int_equal(store_list(S, cm, "", &fo, &l, &st), 0);
    assert_int_equal(l.n, 1);
    store_list_free(&l);
    fsel_free(fs);
    assert_int_equal(fsel_parse("spec.nodeName=x", &fs, err, sizeof(err)), 0);
    fo.fields = fs;
    assert_int_equal(store_list(S, cm, "", &fo, &l, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    assert_string_equal(st.message, "field label not supported: spec.nodeName");
    store_status_clear(&st);
    fsel_free(fs);

    struct store_list_opts ex = { .resource_version = "1", .rv_match = "Exact" };
    assert_int_equal(store_list(S, cm, "", &ex, &l, &st), -ESTALE);
    assert_int_equal(st.code, 410);
    assert_string_equal(st.reason, "Expired");
    store_status_clear(&st);
    struct store_list_opts badm = { .rv_match = "NotOlderThan" };
    assert_int_equal(store_list(S, cm, "", &badm, &l, &st), -EINVAL);
    assert_int_equal(st.code, 422);
    store_status_clear(&st);
    struct store_list_opts badtok = { .continue_token = "!!!" };
    assert_int_equal(store_list(S, cm, "", &badtok, &l, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    store_status_clear(&st);

    struct store_delete_opts dopt = { .grace_seconds = -1 };
    assert_int_equal(store_delete_collection(S, cm, "kube-system", NULL, &dopt, &st), 0);
    assert_int_equal(store_list(S, cm, "kube-system", NULL, &l, &st), 0);
    assert_int_equal(l.n, 0);
    store_list_free(&l);
}

/*
 * A paged selector LIST costs its pages, not the objects after each continue key:
 * Pods are text-only, so every object a selector tests is a parse (of its labels).
 * 2,400 Pods, 1,000 of them matching in "default": 20 pages of 50 must test about
 * the objects they walk past, where testing everything after the key made it ~12,000.
 */
static void test_list_selector_pages_cost_their_items(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_status st = { 0 };
    struct store_list l = { 0 };
    struct store_stats before, after;
    struct sel *sel = NULL;
    char err[128], last[64] = "";
    static int seen[2000];
    size_t total = 0, pages = 0;
    char *tok = NULL;

    (void)state;
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < 2400; i++) {
        char name[32], meta[64];
        snprintf(name, sizeof(name), "p%04d", i % 2000);
        snprintf(meta, sizeof(meta), ",\"labels\":{\"par\":\"%s\"}", i % 2 ? "odd" : "even");
        store_obj_unref(tl_create(S, pods, i < 2000 ? "default" : "kube-system", tl_pod(name, meta)));
    }
    assert_int_equal(sel_parse("par=odd", &sel, err, sizeof(err)), 0);
    store_get_stats(S, &before);
    do {
        struct store_list_opts o = { .labels = sel, .limit = 50, .continue_token = tok };
        assert_int_equal(store_list(S, pods, "default", &o, &l, &st), 0);
        pages++;
        assert_true(l.n == 50);
        for (size_t i = 0; i < l.n; i++) {
            int k = atoi(l.items[i]->name + 1);
            assert_string_equal(l.items[i]->ns, "default");
            assert_int_equal(k % 2, 1);
            assert_int_equal(seen[k]++, 0);
            assert_true(strcmp(l.items[i]->name, last) > 0);     /* key order */
            snprintf(last, sizeof(last), "%s", l.items[i]->name);
            total++;
        }
        assert_int_equal(l.remaining, -1);          /* a selector cannot count the rest */
        free(tok);
        tok = l.continue_token ? strdup(l.continue_token) : NULL;
        store_list_free(&l);
    } while (tok);
    store_get_stats(S, &after);
    sel_free(sel);
    /* the last page is full and nothing matches after it: no token, no empty page */
    assert_int_equal(pages, 20);
    assert_int_equal(total, 1000);
    assert_true(after.text_parses - before.text_parses + after.label_peeks - before.label_peeks <=
                2 * 2000);
}

/*
 * The API hands a LIST without selectors empty ones (sel_parse(NULL)). They select
 * everything: no object is parsed to test them, and a page still says how many
 * items remain, as it does without them.
 */
static void test_list_empty_selectors(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_status st = { 0 };
    struct store_list l = { 0 };
    struct store_stats before, after;
    struct sel *sel = NULL;
    struct fsel *fs = NULL;
    char err[128];

    (void)state;
    for (int i = 0; i < 30; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%02d", i);
        store_obj_unref(tl_create(S, pods, "default", tl_pod(name, ",\"labels\":{\"a\":\"b\"}")));
    }
    assert_int_equal(sel_parse(NULL, &sel, err, sizeof(err)), 0);
    assert_int_equal(fsel_parse("", &fs, err, sizeof(err)), 0);
    store_get_stats(S, &before);
    struct store_list_opts o = { .labels = sel, .fields = fs, .limit = 7 };
    assert_int_equal(store_list(S, pods, "default", &o, &l, &st), 0);
    store_get_stats(S, &after);
    assert_int_equal(l.n, 7);
    assert_string_equal(l.items[0]->name, "p00");
    assert_non_null(l.continue_token);
    assert_int_equal(l.remaining, 23);
    assert_int_equal(after.text_parses - before.text_parses, 0);
    assert_int_equal(after.label_peeks - before.label_peeks, 0);
    store_list_free(&l);
    sel_free(sel);
    fsel_free(fs);
}

static int count_sel(const struct reg_resource *r, const char *ns, const char *selector)
{
    struct store_status st = { 0 };
    struct store_list l = { 0 };
    struct sel *sel = NULL;
    char err[128];
    int n;

    assert_int_equal(sel_parse(selector, &sel, err, sizeof(err)), 0);
    struct store_list_opts o = { .labels = sel };
    assert_int_equal(store_list(S, r, ns, &o, &l, &st), 0);
    n = (int)l.n;
    for (size_t i = 0; i < l.n; i++)
        assert_non_null(strstr(store_obj_text(l.items[i]), "ray.io/cluster"));
    store_list_free(&l);
    sel_free(sel);
    return n;
}

static void test_cluster_label_index(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_obj *o = NULL;

    (void)state;
    for (int i = 0; i < 30; i++)
        store_obj_unref(tl_create(S, cm, i < 20 ? "default" : "kube-system",
                                  tl_json("{\"metadata\":{\"name\":\"x%d\",\"labels\":{"
                                          "\"ray.io/cluster\":\"c%d\",\"odd\":\"%d\"}}}",
                                          i, i % 3, i % 2)));
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=c0"), 10);
    assert_int_equal(count_sel(cm, "default", "ray.io/cluster=c0"), 7);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=c0,odd=1"), 5);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster in (c1)"), 10);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=none"), 0);
    /* relabel x0 from c0 to c1: the index follows */
    assert_int_equal(store_update(S, cm, "default", "x0", NULL,
                                  tl_json("{\"metadata\":{\"name\":\"x0\",\"labels\":{"
                                          "\"ray.io/cluster\":\"c1\"}}}"), NULL, &o, &st), 0);
    store_obj_unref(o);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=c0"), 9);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=c1"), 11);
    /* DeleteAllOf by cluster label */
    struct sel *sel = NULL;
    char err[64];
    assert_int_equal(sel_parse("ray.io/cluster=c1", &sel, err, sizeof(err)), 0);
    struct store_list_opts lo = { .labels = sel };
    struct store_delete_opts dopt = { .grace_seconds = -1 };
    assert_int_equal(store_delete_collection(S, cm, "default", &lo, &dopt, &st), 0);
    sel_free(sel);
    assert_int_equal(count_sel(cm, "default", "ray.io/cluster=c1"), 0);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=c1"), 3);
    assert_int_equal(count_sel(cm, "", "ray.io/cluster=c0"), 9);
}

static void test_status_json(void **state)
{
    struct store_status st = { 0 };
    const struct reg_resource *rc;
    char *j;

    (void)state;
    tl_install_widgets(S);
    rc = tl_res(S, "test.io", "v1", "widgets");
    struct store_obj *o = NULL;
    assert_int_equal(store_get(S, rc, "default", "nope", &o, &st), -ENOENT);
    j = store_status_json(&st);
    assert_string_equal(j, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                           "\"status\":\"Failure\",\"message\":\"widgets.test.io \\\"nope\\\" "
                           "not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\","
                           "\"group\":\"test.io\",\"kind\":\"widgets\"},\"code\":404}");
    free(j);
    store_status_clear(&st);
    assert_int_equal(st.code, 0);
}

static void test_apply_creates_then_patches(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_write_opts w = { .field_manager = "kubectl" };
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    bool created = false;
    const char *b1 = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ap\"},\"data\":{\"a\":\"1\"}}";
    const char *b2 = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ap\"},\"data\":{\"a\":\"2\"}}";

    (void)state;
    assert_int_equal(store_patch(S, cm, "default", "ap", NULL, PATCH_APPLY, b1, strlen(b1), &w,
                                 &o, &created, &st), 0);
    assert_true(created);
    store_obj_unref(o);
    assert_int_equal(store_patch(S, cm, "default", "ap", NULL, PATCH_APPLY, b2, strlen(b2), &w,
                                 &o, &created, &st), 0);
    assert_false(created);
    assert_string_equal(tl_str(store_obj_json(o), "data.a"), "2");
    store_obj_unref(o);
    /* merge patch with a stale resourceVersion is a conflict */
    const char *p = "{\"metadata\":{\"resourceVersion\":\"1\"},\"data\":{\"a\":\"3\"}}";
    assert_int_equal(store_patch(S, cm, "default", "ap", NULL, PATCH_MERGE, p, strlen(p), &w,
                                 &o, &created, &st), -EBUSY);
    assert_int_equal(st.code, 409);
    store_status_clear(&st);
    assert_int_equal(store_patch(S, cm, "default", "nope", NULL, PATCH_MERGE, "{}", 2, &w,
                                 &o, &created, &st), -ENOENT);
    store_status_clear(&st);
    assert_int_equal(store_patch(S, cm, "default", "ap", NULL, PATCH_MERGE, "{nope", 5, &w,
                                 &o, &created, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    store_status_clear(&st);
}

static void test_patch_types_on_builtins(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    bool created;
    uint64_t rv;

    (void)state;
    store_obj_unref(tl_create(S, pods, "default", tl_pod("sp", ",\"labels\":{\"a\":\"1\"}")));
    /* strategic merge: containers merge by name, so the image change keeps the rest */
    const char *smp = "{\"metadata\":{\"labels\":{\"b\":\"2\"}},\"spec\":{\"containers\":"
                      "[{\"name\":\"c\",\"image\":\"busybox:1.37\"}]}}";
    assert_int_equal(store_patch(S, pods, "default", "sp", NULL, PATCH_STRATEGIC, smp, strlen(smp),
                                 NULL, &o, &created, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "metadata.labels.a"), "1");
    assert_string_equal(tl_str(store_obj_json(o), "metadata.labels.b"), "2");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(o), "spec"),
                                                             "containers"), 0);
    assert_string_equal(tl_str(c0, "image"), "busybox:1.37");
    assert_string_equal(tl_str(c0, "terminationMessagePath"), "/dev/termination-log");
    rv = o->rv;
    store_obj_unref(o);
    /* the same patch again changes nothing: same rv */
    assert_int_equal(store_patch(S, pods, "default", "sp", NULL, PATCH_STRATEGIC, smp, strlen(smp),
                                 NULL, &o, &created, &st), 0);
    assert_int_equal(o->rv, rv);
    store_obj_unref(o);
    /* pod /status through a merge patch: status changes, spec stays */
    const char *sp = "{\"status\":{\"phase\":\"Running\"},\"spec\":{\"nodeName\":\"x\"}}";
    assert_int_equal(store_patch(S, pods, "default", "sp", "status", PATCH_MERGE, sp, strlen(sp),
                                 NULL, &o, &created, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "status.phase"), "Running");
    assert_null(tl_str(store_obj_json(o), "spec.nodeName"));
    store_obj_unref(o);
    /* JSON patch, including a failing test op (422) */
    store_obj_unref(tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"jp\"},\"data\":{\"k\":\"v\"}}")));
    const char *jp = "[{\"op\":\"replace\",\"path\":\"/data/k\",\"value\":\"w\"}]";
    assert_int_equal(store_patch(S, cm, "default", "jp", NULL, PATCH_JSON, jp, strlen(jp), NULL, &o,
                                 &created, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "data.k"), "w");
    store_obj_unref(o);
    const char *bad = "[{\"op\":\"test\",\"path\":\"/data/k\",\"value\":\"nope\"}]";
    assert_int_equal(store_patch(S, cm, "default", "jp", NULL, PATCH_JSON, bad, strlen(bad), NULL,
                                 &o, &created, &st), -EINVAL);
    assert_int_equal(st.code, 422);
    store_status_clear(&st);
    /* /status on a type without one */
    assert_int_equal(store_patch(S, cm, "default", "jp", "status", PATCH_MERGE, "{}", 2, NULL, &o,
                                 &created, &st), -ENOENT);
    assert_int_equal(st.code, 404);
    store_status_clear(&st);
}

static size_t hook_allocs;

static void *count_malloc(size_t n)
{
    hook_allocs++;
    return malloc(n);
}

/* A merge patch of a Pod's /status copies the Pod about once: it used to copy it in the
 * merge, copy the status again there, copy the whole Pod once more to split status
 * from the rest, and its spec again to check the update. The result is unchanged: status from the patch, labels too (the Pod
 * status strategy allows them), spec from the stored Pod, the kubelet's managedFields. */
static void test_status_write_copies_once(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    cJSON_Hooks hooks = { count_malloc, free };
    struct store_write_opts w = { .field_manager = "kubelet" };
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    char ctrs[8192];
    size_t off = 0, whole, total = 0;
    (void)state;

    for (int i = 0; i < 30; i++)
        off += (size_t)snprintf(ctrs + off, sizeof(ctrs) - off,
                                "%s{\"name\":\"c%d\",\"image\":\"busybox:1.36\",\"env\":[{\"name\":"
                                "\"A\",\"value\":\"1\"}]}", i ? "," : "", i);
    store_obj_unref(tl_create(S, pods, "default", tl_json(
        "{\"metadata\":{\"name\":\"big\"},\"spec\":{\"containers\":[%s]}}", ctrs)));
    assert_int_equal(store_get(S, pods, "default", "big", &o, &st), 0);
    cJSON_InitHooks(&hooks);
    hook_allocs = 0;
    cJSON *copy = cJSON_Duplicate(store_obj_json(o), true);
    whole = hook_allocs;
    cJSON_Delete(copy);
    store_obj_unref(o);
    for (int i = 0; i < 3; i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.0.%d\"}}",
                 i + 1);
        hook_allocs = 0;
        assert_int_equal(store_patch(S, pods, "default", "big", "status", PATCH_MERGE, body,
                                     strlen(body), &w, &o, NULL, &st), 0);
        total += hook_allocs;
        store_obj_unref(o);
    }
    cJSON_InitHooks(NULL);
    /* once for the merge, a little for the body and the new status, and the managedFields
     * (read and written back whole: about one copy more); it was 4.4 copies: the merge,
     * status again, the whole Pod for the status split, and its spec for the Pod update
     * check */
    if (total / 3 > whole * 5 / 2)
        fail_msg("a status write made %zu allocations; copying the Pod takes %zu", total / 3, whole);
    /* what a /status write may change: status and labels; spec stays as stored */
    const char *more = "{\"metadata\":{\"labels\":{\"l\":\"2\"}},\"spec\":{\"nodeName\":\"x\"},"
                       "\"status\":{\"podIP\":\"10.1.0.3\"}}";
    assert_int_equal(store_patch(S, pods, "default", "big", "status", PATCH_MERGE, more,
                                 strlen(more), &w, &o, NULL, &st), 0);
    store_obj_unref(o);
    assert_int_equal(store_get(S, pods, "default", "big", &o, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "status.podIP"), "10.1.0.3");
    assert_string_equal(tl_str(store_obj_json(o), "metadata.labels.l"), "2");
    assert_null(tl_str(store_obj_json(o), "spec.nodeName"));
    assert_string_equal(tl_str(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(o),
                        "spec"), "containers"), 29), "name"), "c29");
    const cJSON *mf;
    bool kubelet = false;
    cJSON_ArrayForEach(mf, cJSON_GetObjectItem(cJSON_GetObjectItem(store_obj_json(o), "metadata"), "managedFields"))
        kubelet |= tl_str(mf, "manager") && !strcmp(tl_str(mf, "manager"), "kubelet") &&
                   tl_str(mf, "subresource") && !strcmp(tl_str(mf, "subresource"), "status");
    assert_true(kubelet);
    store_obj_unref(o);
}

/* A patch handed over parsed (the simulated kubelet's status writes) is applied as the
 * same text would be; the wrong shape for its type is a 400, and nothing leaks. */
static void test_patch_json_tree(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_write_opts w = { .field_manager = "kubelet" };
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    (void)state;

    store_obj_unref(tl_create(S, pods, "default", tl_pod("tree", NULL)));
    assert_int_equal(store_patch_json(S, pods, "default", "tree", "status", PATCH_MERGE,
                                      cJSON_Parse("{\"status\":{\"phase\":\"Running\"},"
                                                  "\"spec\":{\"nodeName\":\"x\"}}"),
                                      &w, &o, NULL, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "status.phase"), "Running");
    assert_null(tl_str(store_obj_json(o), "spec.nodeName"));
    store_obj_unref(o);
    assert_int_equal(store_patch_json(S, pods, "default", "tree", "status", PATCH_MERGE,
                                      cJSON_Parse("[1]"), &w, &o, NULL, &st), -EINVAL);
    assert_int_equal(st.code, 400);
    store_status_clear(&st);
    assert_int_equal(store_patch_json(S, pods, "default", "nope", "status", PATCH_MERGE,
                                      cJSON_Parse("{}"), &w, &o, NULL, &st), -ENOENT);
    store_status_clear(&st);
    assert_int_equal(store_patch_json(S, pods, "default", "tree", "bogus", PATCH_MERGE,
                                      cJSON_Parse("{}"), &w, &o, NULL, &st), -ENOENT);
    store_status_clear(&st);
    assert_int_equal(store_patch_json(S, pods, "default", "tree", "status", PATCH_MERGE, NULL,
                                      &w, &o, NULL, &st), -ENOMEM);
    store_status_clear(&st);
}

static void test_serialiser_matches_cjson(void **state)
{
    static const char *const docs[] = {
        "{}", "[]", "{\"a\":[]}", "null", "true", "[false,null,true]",
        "{\"n\":[0,-1,1,2147483647,-2147483648,4294967296,1e300,-0.5,0.1,3.14159,"
        "123456789012345678,1.5e-7]}",
        "{\"s\":\"q\\\"b\\\\s\\/ \\b\\f\\n\\r\\t \\u0001 \\u001f caf\\u00e9 \\u2603\"}",
        "{\"k\\n\":{\"deep\":[[[{\"x\":\"\"}]]]},\"e\":{}}",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        cJSON *j = cJSON_Parse(docs[i]);
        struct buf b = { 0 };
        char *want;
        assert_non_null(j);
        want = cJSON_PrintUnformatted(j);
        assert_int_equal(store__json_print(j, &b), 0);
        assert_string_equal(b.data, want);
        assert_int_equal(b.len, strlen(want));
        cJSON_free(want);
        buf_free(&b);
        cJSON_Delete(j);
    }
}

static void test_namespace_lifecycle(void **state)
{
    const struct reg_resource *nsr = tl_res(S, "", "v1", "namespaces");
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, nsr, "", tl_json("{\"metadata\":{\"name\":\"tmp\"}}"));
    struct store_obj *d = NULL;
    bool gone = true;

    (void)state;
    assert_string_equal(tl_str(store_obj_json(o), "status.phase"), "Active");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(store_obj_json(o), "spec"), "finalizers"), 0)), "kubernetes");
    store_obj_unref(o);
    store_obj_unref(tl_create(S, cm, "tmp", tl_json("{\"metadata\":{\"name\":\"x\",\"finalizers\":[\"t/hold\"]}}")));
    assert_int_equal(store_delete(S, nsr, "", "tmp", NULL, &d, &gone, &st), 0);
    assert_false(gone);
    assert_string_equal(tl_str(store_obj_json(d), "status.phase"), "Terminating");
    store_obj_unref(d);
    assert_int_equal(store_create(S, cm, "tmp", tl_json("{\"metadata\":{\"name\":\"y\"}}"), NULL,
                                  &o, &st), -EACCES);
    assert_int_equal(st.code, 403);
    assert_string_equal(st.message, "configmaps \"y\" is forbidden: unable to create new content "
                                    "in namespace tmp because it is being terminated");
    store_status_clear(&st);
    assert_int_equal(store_wait_gc_idle(S, 5000), 0);
    /* x is held by its finalizer, so the namespace stays */
    assert_int_equal(store_get(S, nsr, "", "tmp", &o, &st), 0);
    store_obj_unref(o);
    assert_int_equal(store_get(S, cm, "tmp", "x", &o, &st), 0);
    cJSON *j = cJSON_Duplicate(store_obj_json(o), true);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "metadata"), "finalizers");
    store_obj_unref(o);
    assert_int_equal(store_update(S, cm, "tmp", "x", NULL, j, NULL, &o, &st), 0);
    store_obj_unref(o);
    assert_int_equal(store_wait_gc_idle(S, 5000), 0);
    assert_int_equal(store_get(S, nsr, "", "tmp", &o, &st), -ENOENT);
    store_status_clear(&st);
}


/* events.k8s.io/v1 and core/v1 Events are one resource (events.c): what one
 * version writes, the other reads, converted field by field, with the same
 * uid and resourceVersion; field selectors use the version asked for; a
 * patch in v1 terms lands in the stored core object. */
static void test_events_one_resource(void **state)
{
    const struct reg_resource *v1 = tl_res(S, "events.k8s.io", "v1", "events");
    const struct reg_resource *core = tl_res(S, "", "v1", "events");
    struct store_status st = { 0 };
    struct store_obj *o = NULL, *c = NULL;
    struct store_list l = { 0 };
    struct fsel *fs = NULL;
    char err[128];

    (void)state;
    o = tl_create(S, v1, "default", tl_json(
        "{\"metadata\":{\"name\":\"rc.1\"},\"eventTime\":\"2026-01-01T00:00:00.000000Z\","
        "\"reportingController\":\"ray.io/rayop\",\"reportingInstance\":\"rayop-1\","
        "\"action\":\"Validate\",\"reason\":\"InvalidRayClusterSpec\",\"type\":\"Warning\","
        "\"note\":\"bad spec\",\"regarding\":{\"kind\":\"RayCluster\",\"name\":\"rc\","
        "\"namespace\":\"default\",\"uid\":\"u1\"}}"));
    assert_non_null(o);
    assert_string_equal(tl_str(store_obj_json(o), "apiVersion"), "events.k8s.io/v1");
    assert_string_equal(tl_str(store_obj_json(o), "note"), "bad spec");
    assert_null(cJSON_GetObjectItem(store_obj_json(o), "message"));
    assert_int_equal(store_get(S, core, "default", "rc.1", &c, &st), 0);
    assert_string_equal(tl_str(store_obj_json(c), "apiVersion"), "v1");
    assert_string_equal(tl_str(store_obj_json(c), "message"), "bad spec");
    assert_string_equal(tl_str(store_obj_json(c), "involvedObject.name"), "rc");
    assert_string_equal(tl_str(store_obj_json(c), "reportingComponent"), "ray.io/rayop");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(store_obj_json(c), "lastTimestamp")));
    assert_null(cJSON_GetObjectItem(store_obj_json(c), "regarding"));
    assert_string_equal(c->uid, o->uid);
    assert_int_equal(c->rv, o->rv);
    store_obj_unref(c);
    store_obj_unref(o);

    /* what kubectl describe asks for */
    assert_int_equal(fsel_parse("involvedObject.name=rc,involvedObject.kind=RayCluster", &fs,
                                err, sizeof(err)), 0);
    struct store_list_opts fo = { .fields = fs };
    assert_int_equal(store_list(S, core, "default", &fo, &l, &st), 0);
    assert_int_equal(l.n, 1);
    store_list_free(&l);
    fsel_free(fs);
    assert_int_equal(fsel_parse("regarding.name=rc", &fs, err, sizeof(err)), 0);
    fo.fields = fs;
    assert_int_equal(store_list(S, v1, "", &fo, &l, &st), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(tl_str(store_obj_json(l.items[0]), "regarding.kind"), "RayCluster");
    store_list_free(&l);
    fsel_free(fs);

    /* a v1 merge patch (the series a recorder writes) lands in the core object */
    static const char series[] = "{\"series\":{\"count\":3,\"lastObservedTime\":"
                                 "\"2026-01-01T00:01:00.000000Z\"},\"note\":\"still bad\"}";
    assert_int_equal(store_patch(S, v1, "default", "rc.1", NULL, PATCH_MERGE, series,
                                 strlen(series), NULL, &o, NULL, &st), 0);
    assert_string_equal(tl_str(store_obj_json(o), "note"), "still bad");
    store_obj_unref(o);
    assert_int_equal(store_get(S, core, "default", "rc.1", &c, &st), 0);
    assert_string_equal(tl_str(store_obj_json(c), "message"), "still bad");
    assert_true(tl_num(store_obj_json(c), "series.count") == 3);
    store_obj_unref(c);

    /* and a core Event reads back as v1 */
    store_obj_unref(tl_create(S, core, "default", tl_json(
        "{\"metadata\":{\"name\":\"p.2\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
        "\"reason\":\"FailedScheduling\",\"message\":\"0/0 nodes are available\",\"count\":2,"
        "\"type\":\"Warning\",\"source\":{\"component\":\"default-scheduler\"}}")));
    assert_int_equal(store_get(S, v1, "default", "p.2", &c, &st), 0);
    assert_string_equal(tl_str(store_obj_json(c), "note"), "0/0 nodes are available");
    assert_string_equal(tl_str(store_obj_json(c), "regarding.kind"), "Pod");
    assert_string_equal(tl_str(store_obj_json(c), "deprecatedSource.component"), "default-scheduler");
    assert_true(tl_num(store_obj_json(c), "deprecatedCount") == 2);
    store_obj_unref(c);
    assert_int_equal(store_list(S, core, "default", NULL, &l, &st), 0);
    assert_int_equal(l.n, 2);
    store_list_free(&l);
}

/* GET /kubesim/memory's breakdown: live objects per type with their bytes, and the
 * older snapshots only the watch ring still holds. */
static void test_memory_breakdown(void **state)
{
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    static const char *const patches[] = { "{\"data\":{\"v\":\"1\"}}",
                                           "{\"data\":{\"v\":\"2\"}}" };
    struct store_status st = { 0 };
    struct buf b = { 0 };
    size_t text = 0;
    cJSON *m, *t;

    (void)state;
    for (int i = 0; i < 3; i++)
        store_obj_unref(tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"m%d\"}}", i)));
    for (int v = 0; v < 2; v++) {
        struct store_obj *o = NULL;
        assert_int_equal(store_patch(S, cm, "default", "m0", NULL, PATCH_MERGE, patches[v],
                                     strlen(patches[v]), NULL, &o, NULL, &st), 0);
        store_obj_unref(o);
    }
    for (int i = 0; i < 3; i++) {
        char name[16];
        struct store_obj *o = NULL;
        snprintf(name, sizeof(name), "m%d", i);
        assert_int_equal(store_get(S, cm, "default", name, &o, &st), 0);
        text += o->len + 1 + sizeof(*o);
        store_obj_unref(o);
    }
    assert_int_equal(store_memory_json(S, &b), 0);
    assert_non_null(m = cJSON_Parse(b.data));
    assert_non_null(t = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(m, "types"), "/configmaps"));
    assert_int_equal(tl_num(t, "objects"), 3);
    assert_int_equal(tl_num(t, "textBytes"), text);
    /* the created m0 and its first patch are kept only by the ring */
    assert_int_equal(tl_num(t, "ringEvents"), 5);
    assert_int_equal(tl_num(t, "ringOnlyObjects"), 2);
    assert_true(tl_num(t, "treeNodes") >= 3 * 6);    /* root, kind, apiVersion, metadata, ... */
    assert_true(tl_num(t, "treeBytes") >= tl_num(t, "treeNodes") * sizeof(cJSON));
    assert_true(tl_num(m, "total.objects") >= 3);
    /* the structures around the text, as malloc chunks: entries with their keys, the
     * type's table, the ring's slots; the snapshots' chunks hold at least their text */
    assert_true(tl_num(t, "entryBytes") >= 3 * (sizeof(struct sentry) + sizeof("default/m0")));
    assert_true(tl_num(t, "tableBytes") > 0);
    assert_true(tl_num(t, "ringSlotBytes") >= tl_num(t, "ringEvents") * sizeof(struct wev));
    assert_true(tl_num(t, "chunkBytes") >= tl_num(t, "textBytes"));
    assert_true(tl_num(t, "ringOnlyChunkBytes") >= tl_num(t, "ringOnlyTextBytes"));
    assert_true(tl_num(m, "store.uidIndexBytes") > 0);
    assert_true(tl_num(m, "countedBytes") >= tl_num(m, "total.chunkBytes") +
                tl_num(m, "total.entryBytes") + tl_num(m, "store.uidIndexBytes"));
#if !defined(__SANITIZE_ADDRESS__)
    /* under ASan malloc is ASan's own, and glibc's mallinfo2 reports nothing */
    assert_true(tl_num(m, "malloc.inUseBytes") > 0);
    /* what is counted is part of what malloc has handed out */
    assert_true(tl_num(m, "countedBytes") <= tl_num(m, "malloc.inUseBytes"));
#endif
    assert_true(tl_num(m, "rssBytes") > 0);
    cJSON_Delete(m);
    buf_free(&b);
}

/* A number from GET /kubesim/memory's answer (dotted path). */
static double memory_num(const char *path)
{
    struct buf b = { 0 };
    cJSON *m;
    double v;

    assert_int_equal(store_memory_json(S, &b), 0);
    assert_non_null(m = cJSON_Parse(b.data));
    v = tl_num(m, path);
    cJSON_Delete(m);
    buf_free(&b);
    return v;
}

/* The indexes are counted: a labelled Pod with an owner adds to its type's label
 * index and to the dependents index, and deleting it takes both back. */
static void test_memory_indexes(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_obj *owner;
    struct store_status st = { 0 };
    double labels0, owners0, labels1, owners1;
    (void)state;

    /* a Pod without labels or owners: the type is in the answer, its indexes empty */
    store_obj_unref(tl_create(S, pods, "default", tl_json(
        "{\"metadata\":{\"name\":\"plain\"},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}")));
    /* an owner that exists, so the garbage collector leaves the dependent alone */
    owner = tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"o\"}}"));
    labels0 = memory_num("types./pods.labelIndexBytes");
    owners0 = memory_num("store.ownerIndexBytes");
    assert_true(labels0 == 0);
    assert_true(owners0 == 0);
    store_obj_unref(tl_create(S, pods, "default", tl_json(
        "{\"metadata\":{\"name\":\"mi\",\"labels\":{\"ray.io/cluster\":\"c1\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"o\","
        "\"uid\":\"%s\"}]},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", owner->uid)));
    labels1 = memory_num("types./pods.labelIndexBytes");
    owners1 = memory_num("store.ownerIndexBytes");
    /* a bucket, its value, one ref and their hash tables */
    assert_true(labels1 >= labels0 + sizeof(struct sentry *) + sizeof("c1"));
    assert_true(owners1 >= owners0 + strlen(owner->uid) + 1);
    assert_int_equal(store_delete(S, pods, "default", "mi", NULL, NULL, NULL, &st), 0);
    assert_true(memory_num("types./pods.labelIndexBytes") == labels0);
    assert_true(memory_num("store.ownerIndexBytes") == owners0);
    store_obj_unref(owner);
    /* one cluster's objects per bucket, as at 10,000 RayClusters: a bucket is its value
     * and a small array, not a hash set of its own (over 700 bytes a bucket) */
    for (int i = 0; i < 100; i++)
        store_obj_unref(tl_create(S, pods, "default", tl_json(
            "{\"metadata\":{\"name\":\"b%d\",\"labels\":{\"ray.io/cluster\":\"cluster-%d\"}},"
            "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}", i, i)));
    assert_true(memory_num("types./pods.labelIndexBytes") < 100 * 300);
}

/* Text kept compressed (ztext.c): once a text-only type holds a few objects it gets a
 * dictionary made of them, and later snapshots keep their text as a zstd frame against
 * it. What a reader gets is the same text: GET, LIST, a patch of a compressed object,
 * the watch window's copy; and the memory answer shows the bytes saved. */
static void test_text_compressed(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_status st = { 0 };
    struct store_list l = { 0 };
    struct buf b = { 0 };
    char name[32];
    size_t compressed = 0;
    (void)state;
    size_t fresh_max = store__fresh_max_bytes;
    store__fresh_max_bytes = 0;   /* Pending Pods compressed at once, as they were */

    for (int i = 0; i < 48; i++)
        store_obj_unref(tl_create(S, pods, "default", tl_json(
            "{\"metadata\":{\"name\":\"p%d\",\"labels\":{\"ray.io/cluster\":\"c%d\","
            "\"app\":\"v%d\"}},\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":"
            "\"rayproject/ray:2.9.0\",\"env\":[{\"name\":\"RAY_CLUSTER_NAME\",\"value\":\"c%d\"}],"
            "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]}}", i, i, i, i)));
    for (int i = 0; i < 48; i++) {
        struct store_obj *o = NULL;
        const char *text;
        cJSON *j;
        char *again;
        snprintf(name, sizeof(name), "p%d", i);
        assert_int_equal(store_get(S, pods, "default", name, &o, &st), 0);
        compressed += o->zlen != 0;
        if (o->zlen)
            assert_true(o->zlen < o->len / 2);
        assert_non_null(text = store_obj_text(o));
        assert_int_equal(strlen(text), o->len);
        /* the exact compact text of this object */
        assert_non_null(j = cJSON_Parse(text));
        assert_string_equal(tl_str(j, "metadata.name"), name);
        snprintf(name, sizeof(name), "v%d", i);
        assert_string_equal(tl_str(j, "metadata.labels.app"), name);
        assert_string_equal(tl_str(j, "metadata.uid"), o->uid);
        assert_non_null(again = cJSON_PrintUnformatted(j));
        assert_string_equal(again, text);
        buf_reset(&b);
        assert_int_equal(store_obj_text_append(o, &b), 0);
        assert_int_equal(b.len, o->len);
        assert_memory_equal(b.data, again, o->len);
        free(again);
        cJSON_Delete(j);
        store_obj_unref(o);
    }
    /* the type's first 16 are its dictionary and stay plain; the rest are frames */
    assert_true(compressed >= 48 - 17);
    assert_true(memory_num("types./pods.compressedObjects") == compressed);
    assert_true(memory_num("types./pods.dictBytes") > 0);
    assert_true(memory_num("types./pods.chunkBytes") < memory_num("types./pods.textBytes"));
    /* a patch of a compressed Pod reads its text and stores the new one compressed */
    {
        const char *patch = "{\"metadata\":{\"labels\":{\"app\":\"changed\"}}}";
        struct store_obj *o = NULL, *ring = NULL;
        assert_int_equal(store_patch(S, pods, "default", "p40", NULL, PATCH_MERGE, patch,
                                     strlen(patch), NULL, &o, NULL, &st), 0);
        assert_true(o->zlen > 0);
        assert_non_null(strstr(store_obj_text(o), "\"app\":\"changed\""));
        assert_string_equal(tl_str(store_obj_json(o), "metadata.name"), "p40");
        /* the watch window's text-only copy is the same text */
        assert_non_null(ring = store__obj_text_only(o));
        assert_int_equal(ring->zlen, o->zlen);
        assert_string_equal(ring->name, "p40");
        assert_string_equal(ring->uid, o->uid);
        buf_reset(&b);
        assert_int_equal(store_obj_text_append(ring, &b), 0);
        assert_string_equal(b.data, store_obj_text(o));
        store_obj_unref(ring);
        store_obj_unref(o);
    }
    /* a LIST by the indexed label finds the compressed Pod by its labels */
    {
        struct store_list_opts lo = { 0 };
        struct sel *sel = NULL;
        char err[128];
        assert_int_equal(sel_parse("ray.io/cluster=c45", &sel, err, sizeof(err)), 0);
        lo.labels = sel;
        assert_int_equal(store_list(S, pods, "default", &lo, &l, &st), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0]->name, "p45");
        assert_true(l.items[0]->zlen > 0);
        store_list_free(&l);
        sel_free(sel);
    }
    buf_free(&b);
    store__fresh_max_bytes = fresh_max;
}

/* Events are kept as text alone: the tree is parsed on first read, then kept, and is
 * the object the bytes say; names stay valid without it. */
static void test_events_text_only(void **state)
{
    const struct reg_resource *ev = tl_res(S, "", "v1", "events");
    const struct reg_resource *cm = tl_res(S, "", "v1", "configmaps");
    struct store_obj *e = tl_create(S, ev, "default", tl_json(
        "{\"metadata\":{\"name\":\"e1\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},"
        "\"reason\":\"Started\",\"message\":\"caf\\u00e9 \\\"q\\\"\",\"count\":3}"));
    struct store_obj *c = tl_create(S, cm, "default", tl_json("{\"metadata\":{\"name\":\"c1\"}}"));
    struct store_obj *got = NULL;
    struct store_status st = { 0 };
    const cJSON *t;
    char *p;

    (void)state;
    assert_null(__atomic_load_n(&e->tree, __ATOMIC_ACQUIRE));
    assert_non_null(__atomic_load_n(&c->tree, __ATOMIC_ACQUIRE));
    assert_string_equal(e->name, "e1");
    assert_string_equal(e->ns, "default");
    assert_int_equal(strlen(e->uid), 36);
    assert_non_null(t = store_obj_json(e));
    assert_ptr_equal(store_obj_json(e), t);          /* parsed once, then kept */
    assert_string_equal(tl_str(t, "message"), "caf\u00e9 \"q\"");
    assert_int_equal(tl_num(t, "count"), 3);
    assert_string_equal(tl_str(t, "metadata.uid"), e->uid);
    p = cJSON_PrintUnformatted(t);
    assert_string_equal(p, store_obj_text(e));
    free(p);
    /* reads through the tree work on it: a GET and a merge patch */
    assert_int_equal(store_get(S, ev, "default", "e1", &got, &st), 0);
    assert_ptr_equal(got, e);
    store_obj_unref(got);
    got = NULL;
    assert_int_equal(store_patch(S, ev, "default", "e1", NULL, PATCH_MERGE, "{\"count\":4}",
                                 strlen("{\"count\":4}"), NULL, &got, NULL, &st), 0);
    assert_null(__atomic_load_n(&got->tree, __ATOMIC_ACQUIRE));
    assert_int_equal(tl_num(store_obj_json(got), "count"), 4);
    assert_string_equal(tl_str(store_obj_json(got), "reason"), "Started");
    store_obj_unref(got);
    got = NULL;
    /* nor does an events.k8s.io/v1 write, answered in v1 from the stored core Event */
    {
        const struct reg_resource *v1 = tl_res(S, "events.k8s.io", "v1", "events");
        struct store_obj *o = tl_create(S, v1, "default", tl_json(
            "{\"metadata\":{\"name\":\"e2\"},\"eventTime\":\"2026-01-01T00:00:00.000000Z\","
            "\"reportingController\":\"x\",\"reportingInstance\":\"x-1\",\"action\":\"A\","
            "\"reason\":\"R\",\"type\":\"Normal\",\"regarding\":{\"kind\":\"Pod\",\"name\":\"p\"}}"));
        assert_string_equal(tl_str(store_obj_json(o), "apiVersion"), "events.k8s.io/v1");
        assert_int_equal(store_get(S, ev, "default", "e2", &got, &st), 0);
        assert_null(__atomic_load_n(&got->tree, __ATOMIC_ACQUIRE));
        assert_string_equal(tl_str(store_obj_json(got), "apiVersion"), "v1");
        store_obj_unref(got);
        store_obj_unref(o);
    }
    store_obj_unref(e);
    store_obj_unref(c);
}

/* Pods are kept as text alone too. Inside a tree scope a read leaves no tree on the
 * snapshot: the scope holds it until the outermost scope ends; outside a scope the tree
 * is parsed once and kept. A write inside a scope hands its tree to the scope. */
static bool has_tree(const struct store_obj *o)
{
    return __atomic_load_n(&o->tree, __ATOMIC_ACQUIRE) != NULL;
}

static void test_tree_scope(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_obj *p = tl_create(S, pods, "default", tl_pod("p1", ",\"labels\":{\"a\":\"b\"}"));
    struct store_obj *got = NULL;
    struct store_status st = { 0 };
    const char *body = "{\"metadata\":{\"labels\":{\"a\":\"c\"}}}";
    const cJSON *t;

    (void)state;
    assert_false(has_tree(p));
    store_tree_scope_begin();
    assert_non_null(t = store_obj_json(p));
    assert_ptr_equal(store_obj_json(p), t);             /* parsed once per scope */
    assert_string_equal(tl_str(t, "metadata.labels.a"), "b");
    store_tree_scope_begin();                            /* nested: the outer one frees */
    assert_ptr_equal(store_obj_json(p), t);
    store_tree_scope_end();
    assert_ptr_equal(store_obj_json(p), t);
    assert_false(has_tree(p));
    assert_int_equal(store_patch(S, pods, "default", "p1", NULL, PATCH_MERGE, body, strlen(body),
                                 NULL, &got, NULL, &st), 0);
    assert_false(has_tree(got));
    assert_string_equal(tl_str(store_obj_json(got), "metadata.labels.a"), "c");
    store_tree_scope_trim(1u << 20);                     /* two trees: kept */
    assert_ptr_equal(store_obj_json(p), t);
    store_tree_scope_end();
    assert_false(has_tree(p));
    assert_false(has_tree(got));
    /* outside a scope: parsed once and kept with the snapshot */
    assert_non_null(t = store_obj_json(got));
    assert_true(has_tree(got));
    assert_ptr_equal(store_obj_json(got), t);
    assert_string_equal(tl_str(t, "metadata.labels.a"), "c");
    store_obj_unref(got);
    store_obj_unref(p);
}

/* Held by the thread's scope (or the snapshot): a peek needs no parse. */
static bool at_hand(const struct store_obj *o)
{
    cJSON *tmp;

    store__obj_peek(o, &tmp);
    cJSON_Delete(tmp);
    return tmp == NULL;
}

/* A trim frees the trees read longest ago and keeps the recent ones, so a thread that
 * reads the same Pods again a few turns later (the cluster's bind, status writes and
 * timers) does not parse them again; a read moves a tree to the recent end. */
static void test_tree_scope_trim_keeps_recent(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_obj *a = tl_create(S, pods, "default", tl_pod("a", ""));
    struct store_obj *b = tl_create(S, pods, "default", tl_pod("b", ""));
    struct store_obj *c = tl_create(S, pods, "default", tl_pod("c", ""));
    size_t two;

    (void)state;
    store_tree_scope_begin();
    assert_non_null(store_obj_json(a));
    assert_non_null(store_obj_json(b));
    assert_non_null(store_obj_json(c));
    assert_non_null(store_obj_json(a));                  /* a is now the most recent */
    two = malloc_usable_size((void *)store_obj_json(a)) + malloc_usable_size((void *)store_obj_json(c));
    assert_true(at_hand(b) && at_hand(a) && at_hand(c));   /* b stays the oldest */
    store_tree_scope_trim(two);                          /* b was read longest ago */
    assert_false(at_hand(b));
    assert_true(at_hand(a));
    assert_true(at_hand(c));
    store_tree_scope_trim(0);
    assert_false(at_hand(a) || at_hand(c));
    store_tree_scope_end();
    store_obj_unref(a);
    store_obj_unref(b);
    store_obj_unref(c);
}

/* A reader that moved on to a newer snapshot lets the old one's tree go at once (the
 * simulated cluster, whose budget must hold the trees it merges into next); the others
 * stay, and a tree the scope does not hold is left alone. */
static void test_tree_scope_forget(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    struct store_obj *a = tl_create(S, pods, "default", tl_pod("fa", ""));
    struct store_obj *b = tl_create(S, pods, "default", tl_pod("fb", ""));

    (void)state;
    store_tree_scope_forget(a);                          /* none held: nothing happens */
    store_tree_scope_begin();
    assert_non_null(store_obj_json(a));
    assert_non_null(store_obj_json(b));
    assert_true(at_hand(a) && at_hand(b));
    store_tree_scope_forget(a);
    assert_false(at_hand(a));
    assert_true(at_hand(b));
    assert_false(has_tree(a));
    assert_string_equal(tl_str(store_obj_json(a), "metadata.name"), "fa");   /* parsed again */
    store_tree_scope_end();
    store_obj_unref(a);
    store_obj_unref(b);
}

/* A snapshot written outside any scope (a client's create, on an HTTP thread) hands its
 * writer's tree to the first reader that would parse it (the simulated cluster): no
 * second parse, and the tree is what parsing the stored text gives, resourceVersion
 * included. An Event is not handed over, and a tree goes to one reader only. */
static void test_tree_handoff(void **state)
{
    const struct reg_resource *pods = tl_res(S, "", "v1", "pods");
    const struct reg_resource *events = tl_res(S, "", "v1", "events");
    struct store_obj *p = tl_create(S, pods, "default", tl_pod("h1", ",\"labels\":{\"a\":\"b\"}"));
    struct store_obj *ev = tl_create(S, events, "default",
                                     tl_json("{\"metadata\":{\"name\":\"e1\"},"
                                             "\"involvedObject\":{\"kind\":\"Pod\","
                                             "\"name\":\"h1\"},\"reason\":\"X\"}"));
    uint64_t parses = store__text_parses(), taken = store__handoff_taken();
    cJSON *want = cJSON_Parse(store_obj_text(p));
    const cJSON *t;

    (void)state;
    assert_false(has_tree(p));
    store_tree_scope_begin();
    assert_non_null(t = store_obj_json(p));
    assert_int_equal(store__text_parses(), parses);      /* the writer's tree */
    assert_int_equal(store__handoff_taken(), taken + 1);
    assert_true(json_equal(t, want));
    assert_string_equal(tl_str(t, "metadata.resourceVersion"), tl_str(want, "metadata.resourceVersion"));
    assert_non_null(store_obj_json(ev));
    assert_int_equal(store__text_parses(), parses + 1);  /* an Event's was not kept */
    store_tree_scope_end();
    store_tree_scope_begin();
    assert_non_null(t = store_obj_json(p));              /* taken once: parsed now */
    assert_int_equal(store__text_parses(), parses + 2);
    assert_true(json_equal(t, want));
    store_tree_scope_end();
    cJSON_Delete(want);
    store_obj_unref(ev);
    store_obj_unref(p);
}

/* A Pod still Pending and just created is rewritten within seconds: its text stays
 * plain (no compression to throw away) until it is Running, then it is compressed as
 * before; the texts so kept are bounded, and counted until they are freed. */
static void test_fresh_pods_plain(void **state)
{
    struct store *s = tl_open(NULL, 100);
    const struct reg_resource *pods = tl_res(s, "", "v1", "pods");
    const char *running = "{\"status\":{\"phase\":\"Running\"}}";
    size_t base = store__fresh_bytes(), fresh_max = store__fresh_max_bytes;
    struct store_status st = { 0 };
    struct store_obj *o = NULL, *got = NULL;
    char name[16], *plain;

    (void)state;
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        store_obj_unref(tl_create(s, pods, "default", tl_pod(name, "")));
    }
    assert_int_equal(store_get(s, pods, "default", "f19", &o, &st), 0);
    assert_int_equal(o->zlen, 0);                        /* the type has a dictionary */
    assert_true(store__fresh_bytes() >= base + o->len + 1);
    assert_non_null(plain = strdup(store_obj_text(o)));
    store_obj_unref(o);
    assert_int_equal(store_patch(s, pods, "default", "f19", "status", PATCH_MERGE, running,
                                 strlen(running), NULL, &o, NULL, &st), 0);
    assert_true(o->zlen > 0);                            /* Running: compressed */
    assert_int_equal(store_get(s, pods, "default", "f19", &got, &st), 0);
    assert_ptr_equal(got, o);
    assert_string_equal(tl_str(store_obj_json(o), "status.phase"), "Running");
    assert_string_equal(tl_str(store_obj_json(o), "metadata.name"), "f19");
    assert_true(strcmp(store_obj_text(o), plain) != 0);
    store_obj_unref(got);
    store_obj_unref(o);
    free(plain);
    store__fresh_max_bytes = store__fresh_bytes();       /* full: the next is compressed */
    o = tl_create(s, pods, "default", tl_pod("f20", ""));
    assert_true(o->zlen > 0);
    store_obj_unref(o);
    store__fresh_max_bytes = fresh_max;
    store_close(s);
    assert_int_equal(store__fresh_bytes(), base);        /* every plain text freed */
}

/* store__text_member finds a member's bytes in any JSON text without reading past it. */
static void test_text_member(void **state)
{
    const char *t = " { \"a\" : \"x}\\\"{\" , \"metadata\" :{\"n\":[1,{\"labels\":2}],"
                    "\"labels\" : {\"k\":\"v,}\"} } }";
    const char *v;
    size_t n = 0;

    (void)state;
    assert_non_null(v = store__text_member(t, strlen(t), "metadata", "labels", &n));
    assert_int_equal(n, strlen("{\"k\":\"v,}\"}"));
    assert_memory_equal(v, "{\"k\":\"v,}\"}", n);
    assert_non_null(v = store__text_member(t, strlen(t), "a", NULL, &n));
    assert_memory_equal(v, "\"x}\\\"{\"", n);
    assert_null(store__text_member(t, strlen(t), "metadata", "k", &n));     /* not nested */
    assert_null(store__text_member(t, strlen(t), "n", NULL, &n));
    for (size_t cut = 0; cut < strlen(t) - 4; cut++)                        /* ends inside */
        assert_null(store__text_member(t, cut, "metadata", "labels", &n));
    assert_null(store__text_member("[{\"metadata\":{}}]", 17, "metadata", NULL, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_sets_system_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generate_name, setup, teardown),
        cmocka_unit_test(test_same_object),
        cmocka_unit_test(test_json_pack),
        cmocka_unit_test_setup_teardown(test_update_conflict_and_noop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cr_generation_and_status_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cr_versions_scale_and_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cr_schema_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crd_delete_removes_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finalizers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_graceful_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_defaults_and_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_and_job_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_paging_and_selectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_selector_pages_cost_their_items, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_empty_selectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_label_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_creates_then_patches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_types_on_builtins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_write_copies_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_json_tree, setup, teardown),
        cmocka_unit_test(test_serialiser_matches_cjson),
        cmocka_unit_test_setup_teardown(test_namespace_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_one_resource, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_breakdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_compressed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_text_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_scope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_scope_trim_keeps_recent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_scope_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_handoff, setup, teardown),
        cmocka_unit_test(test_fresh_pods_plain),
        cmocka_unit_test(test_text_member),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

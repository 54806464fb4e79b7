/* test_present.c - unit tests of kubesim/present/present.c and present_openapi.c: discovery document
 * shapes (legacy and aggregated), the OpenAPI v2 protobuf (decoded back with a small
 * decoder below), the OpenAPI v3 root and group-version documents. Tables and ages are
 * in test_present_table.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "kubesim/present/present.h"
#include "kubesim/registry/registry.h"
#include "tests/unit/yaml_fixture.h"
#include "tests/unit/shared_fixture.h"
#include "util/util.h"

#define NOW ((time_t)1800000000)

static struct registry *with_crds(void)
{
    static const char *files[] = { "ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml" };
    struct registry *r;
    char err[256];

    assert_int_equal(registry_new(&r), 0);
    for (size_t i = 0; i < 2; i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/kuberay/crds/%s", shared_fixture_dir(), files[i]);
        cJSON *crd = yaml_fixture_load(path);
        assert_non_null(crd);
        assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
        cJSON_Delete(crd);
    }
    return r;
}

static cJSON *parse_buf(struct buf *b)
{
    cJSON *j = cJSON_ParseWithLength(b->data, b->len);
    assert_non_null(j);
    return j;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static const cJSON *find_by(const cJSON *arr, const char *key, const char *value)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);
        if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0)
            return it;
    }
    return NULL;
}

static bool arr_has(const cJSON *arr, const char *s)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
        if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0)
            return true;
    return false;
}

/* ---- discovery ---------------------------------------------------------------- */

static void test_version_and_api(void **state)
{
    struct buf b = { 0 };
    struct registry *r;
    cJSON *j;
    (void)state;

    assert_int_equal(present_version(&b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "major"), "1");
    assert_string_equal(jstr(j, "minor"), "33");
    assert_non_null(strstr(jstr(j, "gitVersion"), "v1.33"));
    cJSON_Delete(j);
    buf_reset(&b);

    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(present_api_versions(r, "127.0.0.1:18080", &b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "kind"), "APIVersions");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "versions"), 0)->valuestring,
                        "v1");
    assert_string_equal(jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(j,
                                "serverAddressByClientCIDRs"), 0), "serverAddress"),
                        "127.0.0.1:18080");
    cJSON_Delete(j);
    registry_free(r);
    buf_free(&b);
}

static void test_api_groups_preferred_versions(void **state)
{
    struct registry *r = with_crds();
    struct buf b = { 0 };
    const cJSON *g, *groups;
    cJSON *j;
    (void)state;

    assert_int_equal(present_api_groups(r, &b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "kind"), "APIGroupList");
    groups = cJSON_GetObjectItem(j, "groups");
    assert_null(find_by(groups, "name", ""));   /* core lives at /api */
    g = find_by(groups, "name", "batch");
    assert_non_null(g);
    assert_string_equal(jstr(cJSON_GetObjectItem(g, "preferredVersion"), "groupVersion"),
                        "batch/v1");
    g = find_by(groups, "name", "ray.io");
    assert_non_null(g);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "versions")), 2);
    /* v1 outranks v1alpha1 whatever the registration order */
    assert_string_equal(jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "versions"), 0),
                             "version"), "v1");
    assert_string_equal(jstr(cJSON_GetObjectItem(g, "preferredVersion"), "version"), "v1");
    assert_non_null(find_by(groups, "name", "coordination.k8s.io"));
    assert_non_null(find_by(groups, "name", "rbac.authorization.k8s.io"));
    cJSON_Delete(j);
    registry_free(r);
    buf_free(&b);
}

static void test_resource_list_core(void **state)
{
    struct registry *r;
    struct buf b = { 0 };
    const cJSON *res, *pods, *st, *ev, *prev = NULL, *it;
    cJSON *j;
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(present_resource_list(r, "", "v1", &b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "kind"), "APIResourceList");
    assert_string_equal(jstr(j, "groupVersion"), "v1");
    res = cJSON_GetObjectItem(j, "resources");
    pods = find_by(res, "name", "pods");
    assert_non_null(pods);
    assert_string_equal(jstr(pods, "singularName"), "pod");
    assert_string_equal(jstr(pods, "kind"), "Pod");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(pods, "namespaced")));
    assert_true(arr_has(cJSON_GetObjectItem(pods, "shortNames"), "po"));
    assert_true(arr_has(cJSON_GetObjectItem(pods, "categories"), "all"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(pods, "verbs")), 8);
    st = find_by(res, "name", "pods/status");
    assert_non_null(st);
    assert_string_equal(jstr(st, "singularName"), "");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(st, "verbs")), 3);
    assert_true(arr_has(cJSON_GetObjectItem(st, "verbs"), "patch"));
    assert_non_null(find_by(res, "name", "pods/log"));
    ev = find_by(res, "name", "pods/eviction");
    assert_string_equal(jstr(ev, "group"), "policy");
    assert_string_equal(jstr(ev, "kind"), "Eviction");
    assert_non_null(find_by(res, "name", "services/proxy"));
    assert_non_null(find_by(res, "name", "namespaces/finalize"));
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(find_by(res, "name", "namespaces"),
                                                  "namespaced")));
    /* no empty shortNames/categories arrays: absent instead */
    assert_null(cJSON_GetObjectItem(find_by(res, "name", "secrets"), "shortNames"));
    /* sorted by name, as the server lists them */
    cJSON_ArrayForEach(it, res) {
        if (prev)
            assert_true(strcmp(jstr(prev, "name"), jstr(it, "name")) < 0);
        prev = it;
    }
    cJSON_Delete(j);
    buf_reset(&b);
    assert_int_equal(present_resource_list(r, "ray.io", "v1", &b), -ENOENT);
    assert_int_equal(present_resource_list(r, "", "v2", &b), -ENOENT);
    registry_free(r);
    buf_free(&b);
}

static void test_resource_list_crd(void **state)
{
    struct registry *r = with_crds();
    struct buf b = { 0 };
    const cJSON *res, *rc;
    cJSON *j;
    (void)state;

    assert_int_equal(present_resource_list(r, "ray.io", "v1", &b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "groupVersion"), "ray.io/v1");
    res = cJSON_GetObjectItem(j, "resources");
    rc = find_by(res, "name", "rayclusters");
    assert_string_equal(jstr(rc, "kind"), "RayCluster");
    assert_true(arr_has(cJSON_GetObjectItem(rc, "categories"), "all"));
    assert_non_null(find_by(res, "name", "rayclusters/status"));
    assert_non_null(find_by(res, "name", "rayjobs/status"));
    assert_null(find_by(res, "name", "rayclusters/scale"));
    assert_int_equal(cJSON_GetArraySize(res), 4);
    cJSON_Delete(j);
    registry_free(r);
    buf_free(&b);
}

static void test_aggregated(void **state)
{
    struct registry *r = with_crds();
    struct buf b = { 0 };
    const cJSON *items, *vers, *res, *rc, *sub;
    cJSON *j;
    (void)state;

    assert_int_equal(present_aggregated(r, true, false, &b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "kind"), "APIGroupDiscoveryList");
    assert_string_equal(jstr(j, "apiVersion"), "apidiscovery.k8s.io/v2");
    items = cJSON_GetObjectItem(j, "items");
    assert_int_equal(cJSON_GetArraySize(items), 1);
    assert_string_equal(jstr(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 0), "metadata"),
                             "name"), "");
    vers = cJSON_GetObjectItem(cJSON_GetArrayItem(items, 0), "versions");
    res = cJSON_GetObjectItem(cJSON_GetArrayItem(vers, 0), "resources");
    rc = find_by(res, "resource", "pods");
    assert_string_equal(jstr(rc, "scope"), "Namespaced");
    assert_string_equal(jstr(rc, "singularResource"), "pod");
    assert_true(arr_has(cJSON_GetObjectItem(rc, "shortNames"), "po"));
    sub = find_by(cJSON_GetObjectItem(rc, "subresources"), "subresource", "status");
    assert_string_equal(jstr(cJSON_GetObjectItem(sub, "responseKind"), "kind"), "Pod");
    assert_string_equal(jstr(find_by(res, "resource", "namespaces"), "scope"), "Cluster");
    cJSON_Delete(j);
    buf_reset(&b);

    assert_int_equal(present_aggregated(r, false, true, &b), 0);
    j = parse_buf(&b);
    assert_string_equal(jstr(j, "apiVersion"), "apidiscovery.k8s.io/v2beta1");
    items = cJSON_GetObjectItem(j, "items");
    assert_null(find_by(items, "kind", "x"));
    const cJSON *ray = NULL, *it;
    cJSON_ArrayForEach(it, items) {
        const char *n = jstr(cJSON_GetObjectItem(it, "metadata"), "name");
        assert_string_not_equal(n, "");
        if (strcmp(n, "ray.io") == 0)
            ray = it;
    }
    assert_non_null(ray);
    vers = cJSON_GetObjectItem(ray, "versions");
    assert_string_equal(jstr(cJSON_GetArrayItem(vers, 0), "version"), "v1");
    assert_string_equal(jstr(cJSON_GetArrayItem(vers, 0), "freshness"), "Current");
    rc = find_by(cJSON_GetObjectItem(cJSON_GetArrayItem(vers, 0), "resources"), "resource",
                 "rayclusters");
    assert_non_null(rc);
    assert_string_equal(jstr(cJSON_GetObjectItem(rc, "responseKind"), "group"), "ray.io");
    assert_string_equal(jstr(rc, "singularResource"), "raycluster");
    assert_true(arr_has(cJSON_GetObjectItem(rc, "verbs"), "watch"));
    sub = find_by(cJSON_GetObjectItem(rc, "subresources"), "subresource", "status");
    assert_non_null(sub);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sub, "verbs")), 3);
    cJSON_Delete(j);
    registry_free(r);
    buf_free(&b);
}

/* ---- OpenAPI v2: a minimal protobuf decoder ------------------------------------- */

struct pb_field {
    unsigned num;
    const unsigned char *p;   /* length-delimited payload */
    size_t len;
};

static int pb_next(const unsigned char **p, const unsigned char *end, struct pb_field *f)
{
    uint64_t key = 0, len = 0;
    int shift = 0;

    if (*p >= end)
        return 0;
    do {
        assert_true(*p < end && shift < 64);
        key |= (uint64_t)(**p & 0x7f) << shift;
        shift += 7;
    } while (*(*p)++ & 0x80);
    assert_int_equal(key & 7, 2);   /* the document only uses length-delimited fields */
    shift = 0;
    do {
        assert_true(*p < end && shift < 64);
        len |= (uint64_t)(**p & 0x7f) << shift;
        shift += 7;
    } while (*(*p)++ & 0x80);
    assert_true(len <= (uint64_t)(end - *p));
    f->num = (unsigned)(key >> 3);
    f->p = *p;
    f->len = (size_t)len;
    *p += len;
    return 1;
}

/* The first field num of a message, or a zero-length field with p NULL. */
static struct pb_field pb_find(const unsigned char *p, size_t len, unsigned num)
{
    const unsigned char *end = p + len;
    struct pb_field f = { 0 };

    while (pb_next(&p, end, &f))
        if (f.num == num)
            return f;
    memset(&f, 0, sizeof(f));
    return f;
}

static bool pb_str_is(struct pb_field f, const char *s)
{
    return f.p && f.len == strlen(s) && memcmp(f.p, s, f.len) == 0;
}

/* The Schema of property name inside Schema s (Properties field 25). */
static struct pb_field pb_prop(struct pb_field s, const char *name)
{
    struct pb_field props = pb_find(s.p, s.len, 25), prop, none = { 0 };
    const unsigned char *p = props.p, *end = props.p + props.len;

    while (props.p && pb_next(&p, end, &prop))
        if (pb_str_is(pb_find(prop.p, prop.len, 1), name))
            return pb_find(prop.p, prop.len, 2);
    return none;
}

static bool pb_has_repeated(struct pb_field s, unsigned num, const char *value)
{
    const unsigned char *p = s.p, *end = s.p + s.len;
    struct pb_field f;

    while (pb_next(&p, end, &f))
        if (f.num == num && pb_str_is(f, value))
            return true;
    return false;
}

static void test_openapi_v2_minimal_without_crds(void **state)
{
    struct registry *r;
    struct buf b = { 0 };
    struct pb_field f, info;
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(present_openapi_v2(r, &b), 0);
    /* swagger "2.0", then info, then an empty paths message (0x42 0x00) and nothing else */
    assert_memory_equal(b.data, "\x0a\x03" "2.0" "\x12", 6);
    assert_memory_equal(b.data + b.len - 2, "\x42\x00", 2);
    f = pb_find((const unsigned char *)b.data, b.len, 1);
    assert_true(pb_str_is(f, "2.0"));
    info = pb_find((const unsigned char *)b.data, b.len, 2);
    assert_true(pb_str_is(pb_find(info.p, info.len, 1), "Kubernetes"));
    assert_null(pb_find((const unsigned char *)b.data, b.len, 9).p);   /* no definitions */
    registry_free(r);
    buf_free(&b);
}

static void test_openapi_v2_crd_definitions(void **state)
{
    struct registry *r = with_crds();
    struct buf b = { 0 };
    struct pb_field defs, named, schema, props, spec, ext, any, f;
    const unsigned char *p, *end;
    bool found = false;
    int ndefs = 0;
    (void)state;

    assert_int_equal(present_openapi_v2(r, &b), 0);
    defs = pb_find((const unsigned char *)b.data, b.len, 9);
    assert_non_null(defs.p);
    p = defs.p;
    end = defs.p + defs.len;
    while (pb_next(&p, end, &named)) {
        assert_int_equal(named.num, 1);
        ndefs++;
        if (!pb_str_is(pb_find(named.p, named.len, 1), "io.ray.v1.RayCluster"))
            continue;
        found = true;
        schema = pb_find(named.p, named.len, 2);
        /* type object, properties with spec.headGroupSpec */
        f = pb_find(schema.p, schema.len, 22);
        assert_true(pb_str_is(pb_find(f.p, f.len, 1), "object"));
        props = pb_find(schema.p, schema.len, 25);
        assert_non_null(props.p);
        const unsigned char *pp = props.p, *pend = props.p + props.len;
        struct pb_field prop;
        spec.p = NULL;
        while (pb_next(&pp, pend, &prop))
            if (pb_str_is(pb_find(prop.p, prop.len, 1), "spec"))
                spec = pb_find(prop.p, prop.len, 2);
        assert_non_null(spec.p);
        assert_true(memmem(spec.p, spec.len, "headGroupSpec", 13) != NULL);
        /* required fields with a default are dropped (kubectl 1.20 validates with them) */
        struct pb_field wg = pb_prop(spec, "workerGroupSpecs"), items, item;
        assert_non_null(wg.p);
        items = pb_find(wg.p, wg.len, 23);
        item = pb_find(items.p, items.len, 1);
        assert_non_null(item.p);
        assert_true(pb_has_repeated(item, 19, "groupName"));
        assert_true(pb_has_repeated(item, 19, "template"));
        assert_false(pb_has_repeated(item, 19, "maxReplicas"));
        assert_false(pb_has_repeated(item, 19, "minReplicas"));
        assert_non_null(pb_prop(item, "replicas").p);
        /* the GVK vendor extension kubectl looks resources up by */
        ext = pb_find(schema.p, schema.len, 31);
        assert_true(pb_str_is(pb_find(ext.p, ext.len, 1), "x-kubernetes-group-version-kind"));
        any = pb_find(ext.p, ext.len, 2);
        f = pb_find(any.p, any.len, 2);
        assert_non_null(f.p);
        assert_true(memmem(f.p, f.len, "kind: RayCluster", 16) != NULL);
        assert_true(memmem(f.p, f.len, "version: v1", 11) != NULL);
    }
    assert_true(found);
    assert_int_equal(ndefs, 4);   /* RayCluster and RayJob, v1 and v1alpha1 */
    registry_free(r);
    buf_free(&b);
}

/* ---- OpenAPI v3 ----------------------------------------------------------------- */

static void test_openapi_v3_root_and_doc(void **state)
{
    struct registry *r = with_crds();
    struct buf b = { 0 }, b2 = { 0 };
    const cJSON *paths, *schemas, *rc, *patch, *it;
    cJSON *j;
    bool fv = false, dry = false;
    (void)state;

    assert_int_equal(present_openapi_v3_root(r, &b), 0);
    j = parse_buf(&b);
    paths = cJSON_GetObjectItem(j, "paths");
    assert_non_null(cJSON_GetObjectItem(paths, "apis/ray.io/v1"));
    assert_non_null(cJSON_GetObjectItem(paths, "apis/ray.io/v1alpha1"));
    assert_null(cJSON_GetObjectItem(paths, "api/v1"));    /* built-ins deliberately absent */
    assert_null(cJSON_GetObjectItem(paths, "apis/batch/v1"));
    const char *url = jstr(cJSON_GetObjectItem(paths, "apis/ray.io/v1"), "serverRelativeURL");
    assert_true(strncmp(url, "/openapi/v3/apis/ray.io/v1?hash=", 32) == 0);
    assert_int_equal(strlen(url), 32 + 16);
    /* stable */
    assert_int_equal(present_openapi_v3_root(r, &b2), 0);
    assert_string_equal(b.data, b2.data);
    cJSON_Delete(j);
    buf_reset(&b);

    assert_int_equal(present_openapi_v3_path(r, "apis/ray.io/v1", &b), 0);
    j = parse_buf(&b);
    schemas = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "components"), "schemas");
    rc = cJSON_GetObjectItem(schemas, "io.ray.v1.RayCluster");
    assert_non_null(rc);
    assert_string_equal(jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(rc,
                                "x-kubernetes-group-version-kind"), 0), "kind"), "RayCluster");
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(rc, "properties"), "spec"), "properties"), "headGroupSpec"));
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "properties"), "metadata"));
    assert_non_null(cJSON_GetObjectItem(schemas, "io.ray.v1.RayJobList"));
    patch = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "paths"),
                                "/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"),
                                "patch");
    assert_non_null(patch);
    assert_string_equal(jstr(cJSON_GetObjectItem(patch, "x-kubernetes-group-version-kind"),
                             "kind"), "RayCluster");
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(patch, "parameters")) {
        fv |= strcmp(jstr(it, "name"), "fieldValidation") == 0 &&
              strcmp(jstr(it, "in"), "query") == 0;
        dry |= strcmp(jstr(it, "name"), "dryRun") == 0;
    }
    assert_true(fv);
    assert_true(dry);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "paths"),
                    "/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}/status"));
    cJSON_Delete(j);
    buf_reset(&b);
    assert_int_equal(present_openapi_v3_path(r, "api/v1", &b), -ENOENT);
    assert_int_equal(present_openapi_v3_path(r, "apis/ray.io", &b), -ENOENT);
    assert_int_equal(present_openapi_v3_path(r, "apis/ray.io/v1/x", &b), -ENOENT);
    assert_int_equal(present_openapi_v3_path(r, "nonsense", &b), -ENOENT);
    assert_int_equal(present_openapi_v3_path(r, "apis/ray.io/v2", &b), -ENOENT);
    /* the hash follows the document: dropping rayjobs changes ray.io/v1's URL */
    buf_reset(&b);
    buf_reset(&b2);
    assert_int_equal(present_openapi_v3_root(r, &b), 0);
    registry_remove_crd(r, "rayjobs.ray.io");
    assert_int_equal(present_openapi_v3_root(r, &b2), 0);
    assert_string_not_equal(b.data, b2.data);
    registry_free(r);
    buf_free(&b);
    buf_free(&b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_api),
        cmocka_unit_test(test_api_groups_preferred_versions),
        cmocka_unit_test(test_resource_list_core),
        cmocka_unit_test(test_resource_list_crd),
        cmocka_unit_test(test_aggregated),
        cmocka_unit_test(test_openapi_v2_minimal_without_crds),
        cmocka_unit_test(test_openapi_v2_crd_definitions),
        cmocka_unit_test(test_openapi_v3_root_and_doc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

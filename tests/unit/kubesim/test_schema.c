/* test_schema.c - CRD schema compilation, pruning, defaulting, validation causes, the CEL
 * subset, and every KubeRay sample against its real CRD (loaded from RAYOP_SHARED). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <time.h>

#include "kubesim/patch/patch.h"
#include "kubesim/schema/schema.h"
#include "kobj/yamljson.h"
#include "util/util.h"
#include "kubesim/schema/internal.h"
#include "tests/unit/shared_fixture.h"

static struct schema *compile_yaml(const char *yaml)
{
    cJSON *j = NULL;
    struct schema *s = NULL;
    char err[256];
    if (yamljson_parse_one(yaml, strlen(yaml), &j, err, sizeof(err)))
        fail_msg("schema yaml: %s", err);
    if (schema_compile(j, &s, err, sizeof(err)))
        fail_msg("compile: %s", err);
    cJSON_Delete(j);
    return s;
}

static const char *small_schema =
    "type: object\n"
    "properties:\n"
    "  apiVersion: {type: string}\n"
    "  kind: {type: string}\n"
    "  metadata: {type: object}\n"
    "  spec:\n"
    "    type: object\n"
    "    required: [name]\n"
    "    properties:\n"
    "      name: {type: string, maxLength: 5, pattern: '^[a-z]+$'}\n"
    "      replicas: {type: integer, format: int32, minimum: 0, default: 1}\n"
    "      mode: {type: string, enum: [a, b]}\n"
    "      ratio: {type: number, maximum: 1, exclusiveMaximum: true}\n"
    "      when: {type: string, format: date-time}\n"
    "      flag: {type: boolean, nullable: true}\n"
    "      port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}\n"
    "      tags: {type: array, items: {type: string}, x-kubernetes-list-type: set, maxItems: 3}\n"
    "      ports:\n"
    "        type: array\n"
    "        x-kubernetes-list-type: map\n"
    "        x-kubernetes-list-map-keys: [port, protocol]\n"
    "        items:\n"
    "          type: object\n"
    "          properties:\n"
    "            port: {type: integer}\n"
    "            protocol: {type: string, default: TCP}\n"
    "      labels: {type: object, additionalProperties: {type: string}}\n"
    "      free: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
    "      embedded:\n"
    "        type: object\n"
    "        x-kubernetes-embedded-resource: true\n"
    "        properties: {spec: {type: object, properties: {x: {type: integer}}}}\n"
    "      managedBy:\n"
    "        type: string\n"
    "        x-kubernetes-validations:\n"
    "        - {rule: self == oldSelf, message: the managedBy field is immutable}\n"
    "        - {rule: \"self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']\",\n"
    "           message: bad managedBy}\n"
    "      policy:\n"
    "        type: object\n"
    "        properties: {onSuccess: {type: string}, onFailure: {type: string},\n"
    "                     deletionRules: {type: array, items: {type: string}}}\n"
    "        x-kubernetes-validations:\n"
    "        - rule: '!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))'\n"
    "          message: legacy policies and deletionRules cannot be used together\n"
    "        - rule: self.onSuccess.size() > 0\n"
    "          message: unsupported\n";

/* Runs schema_apply on obj_json; returns causes (caller frees) and sets *rc. */
static cJSON *run(const struct schema *s, const char *obj_json, const char *old_json,
                  cJSON **obj_out, cJSON **unknown_out, int *rc)
{
    cJSON *obj = cJSON_Parse(obj_json), *old = old_json ? cJSON_Parse(old_json) : NULL;
    cJSON *causes = cJSON_CreateArray(), *unknown = cJSON_CreateArray();
    assert_non_null(obj);
    *rc = schema_apply(s, obj, old, causes, unknown);
    cJSON_Delete(old);
    if (obj_out)
        *obj_out = obj;
    else
        cJSON_Delete(obj);
    if (unknown_out)
        *unknown_out = unknown;
    else
        cJSON_Delete(unknown);
    return causes;
}

/* Asserts exactly one cause with the given reason and field, and a message containing part.
 * A blocking error (NotSupported, Required, TypeInvalid) in a schema with rules also brings
 * the server's "some validation rules were not checked" cause (field "<nil>", value null,
 * as kube-apiserver 1.34 answers), which is asserted too. */
static void expect_one(const struct schema *s, const char *obj, const char *old,
                       const char *reason, const char *field, const char *part)
{
    int rc;
    cJSON *causes = run(s, obj, old, NULL, NULL, &rc);
    char *txt = cJSON_PrintUnformatted(causes);
    bool blocking = schema_rules_total(s) > 0 && (!strcmp(reason, "FieldValueNotSupported") ||
                                                  !strcmp(reason, "FieldValueRequired") ||
                                                  !strcmp(reason, "FieldValueTypeInvalid"));
    if (rc != -EINVAL || cJSON_GetArraySize(causes) != 1 + blocking)
        fail_msg("%s: want %d cause(s), got rc %d %s", obj, 1 + blocking, rc, txt);
    if (blocking) {
        cJSON *nc = cJSON_GetArrayItem(causes, 1);
        assert_string_equal(cJSON_GetObjectItem(nc, "field")->valuestring, "<nil>");
        assert_non_null(strstr(cJSON_GetObjectItem(nc, "message")->valuestring,
                               "Invalid value: null: some validation rules were not checked"));
    }
    cJSON *c = cJSON_GetArrayItem(causes, 0);
    assert_string_equal(cJSON_GetObjectItem(c, "reason")->valuestring, reason);
    assert_string_equal(cJSON_GetObjectItem(c, "field")->valuestring, field);
    if (part && !strstr(cJSON_GetObjectItem(c, "message")->valuestring, part))
        fail_msg("message %s lacks %s", cJSON_GetObjectItem(c, "message")->valuestring, part);
    free(txt);
    cJSON_Delete(causes);
}

static void expect_valid(const struct schema *s, const char *obj, const char *old)
{
    int rc;
    cJSON *causes = run(s, obj, old, NULL, NULL, &rc);
    if (rc) {
        char *t = cJSON_PrintUnformatted(causes);
        fail_msg("%s: unexpected causes %s", obj, t);
    }
    cJSON_Delete(causes);
}

#define OBJ(spec) "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"X\",\"metadata\":{\"name\":\"n\"," \
                  "\"labels\":{\"a\":\"b\"}},\"spec\":" spec "}"

static void test_types_and_values(void **state)
{
    struct schema *s = compile_yaml(small_schema);
    (void)state;
    expect_valid(s, OBJ("{\"name\":\"abc\"}"), NULL);
    expect_one(s, OBJ("{}"), NULL, "FieldValueRequired", "spec.name", "Required value");
    expect_one(s, OBJ("{\"name\":\"abc\",\"replicas\":\"2\"}"), NULL, "FieldValueTypeInvalid",
               "spec.replicas", "spec.replicas in body must be of type integer: \"string\"");
    expect_one(s, OBJ("{\"name\":\"abc\",\"replicas\":1.5}"), NULL, "FieldValueTypeInvalid",
               "spec.replicas", "must be of type integer");
    expect_one(s, OBJ("{\"name\":\"abc\",\"replicas\":-1}"), NULL, "FieldValueInvalid",
               "spec.replicas", "should be greater than or equal to 0");
    expect_one(s, OBJ("{\"name\":\"abc\",\"replicas\":3000000000}"), NULL, "FieldValueInvalid",
               "spec.replicas", "must be of type int32");
    expect_one(s, OBJ("{\"name\":\"abc\",\"mode\":\"c\"}"), NULL, "FieldValueNotSupported",
               "spec.mode", "supported values: \"a\", \"b\"");
    expect_one(s, OBJ("{\"name\":\"abcdef\"}"), NULL, "FieldValueTooLong", "spec.name",
               "may not be more than 5");
    expect_one(s, OBJ("{\"name\":\"AB\"}"), NULL, "FieldValueInvalid", "spec.name",
               "should match '^[a-z]+$'");
    expect_one(s, OBJ("{\"name\":\"a\",\"ratio\":1}"), NULL, "FieldValueInvalid", "spec.ratio",
               "should be less than 1");
    expect_one(s, OBJ("{\"name\":\"a\",\"when\":\"yesterday\"}"), NULL, "FieldValueInvalid",
               "spec.when", "date-time");
    expect_valid(s, OBJ("{\"name\":\"a\",\"when\":\"2024-01-02T03:04:05Z\",\"flag\":null,"
                        "\"port\":8080}"), NULL);
    expect_valid(s, OBJ("{\"name\":\"a\",\"port\":\"http\"}"), NULL);
    expect_one(s, OBJ("{\"name\":\"a\",\"port\":true}"), NULL, "FieldValueTypeInvalid",
               "spec.port", "integer or string");
    expect_one(s, OBJ("{\"name\":\"a\",\"labels\":{\"k\":1}}"), NULL, "FieldValueTypeInvalid",
               "spec.labels[k]", NULL);
    expect_one(s, OBJ("{\"name\":\"a\",\"tags\":[\"x\",\"y\",\"x\"]}"), NULL,
               "FieldValueDuplicate", "spec.tags[2]", "Duplicate value: \"x\"");
    expect_one(s, OBJ("{\"name\":\"a\",\"tags\":[\"1\",\"2\",\"3\",\"4\"]}"), NULL,
               "FieldValueTooMany", "spec.tags", "must have at most 3 items");
    /* map list: defaults fill protocol before uniqueness is checked */
    expect_one(s, OBJ("{\"name\":\"a\",\"ports\":[{\"port\":1},{\"port\":1,\"protocol\":\"TCP\"}]}"),
               NULL, "FieldValueDuplicate", "spec.ports[1]",
               "{\"port\":1,\"protocol\":\"TCP\"}");
    expect_valid(s, OBJ("{\"name\":\"a\",\"ports\":[{\"port\":1},{\"port\":1,\"protocol\":\"UDP\"}]}"),
                 NULL);
    schema_free(s);
}

static void test_pruning_and_defaults(void **state)
{
    struct schema *s = compile_yaml(small_schema);
    cJSON *obj, *unknown;
    int rc;
    (void)state;
    cJSON *causes = run(s, OBJ("{\"name\":\"a\",\"bogus\":1,\"flag\":null,\"replicas\":null,"
                               "\"free\":{\"any\":{\"thing\":1}},"
                               "\"embedded\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
                               "\"metadata\":{\"name\":\"p\"},\"spec\":{\"x\":1,\"y\":2}}}"),
                        NULL, &obj, &unknown, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(cJSON_GetArraySize(causes), 0);
    cJSON *spec = cJSON_GetObjectItem(obj, "spec");
    assert_null(cJSON_GetObjectItem(spec, "bogus"));
    /* nullable keeps its null; a non-nullable null is pruned, then defaulted */
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(spec, "flag")));
    assert_int_equal(cJSON_GetObjectItem(spec, "replicas")->valueint, 1);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "free"),
                                                            "any"), "thing"));
    cJSON *emb = cJSON_GetObjectItem(spec, "embedded");
    assert_string_equal(cJSON_GetObjectItem(emb, "kind")->valuestring, "Pod");
    assert_non_null(cJSON_GetObjectItem(emb, "metadata"));
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(emb, "spec"), "y"));
    /* root metadata survives the schema's bare `metadata: {type: object}` */
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(obj,
                        "metadata"), "labels"), "a")->valuestring, "b");
    assert_int_equal(cJSON_GetArraySize(unknown), 2);
    assert_string_equal(cJSON_GetArrayItem(unknown, 0)->valuestring, ".spec.bogus");
    assert_string_equal(cJSON_GetArrayItem(unknown, 1)->valuestring, ".spec.embedded.spec.y");
    cJSON_Delete(causes);
    cJSON_Delete(obj);
    cJSON_Delete(unknown);
    schema_free(s);
}

static void test_cel_rules(void **state)
{
    struct schema *s = compile_yaml(small_schema);
    (void)state;
    assert_int_equal(schema_rules_total(s), 4);
    assert_int_equal(schema_rules_unsupported(s), 1); /* .size() is outside the subset */
    expect_valid(s, OBJ("{\"name\":\"a\",\"managedBy\":\"ray.io/kuberay-operator\"}"), NULL);
    expect_one(s, OBJ("{\"name\":\"a\",\"managedBy\":\"me\"}"), NULL, "FieldValueInvalid",
               "spec.managedBy", "Invalid value: \"string\": bad managedBy");
    /* transition rule: only on update with an old value */
    expect_one(s, OBJ("{\"name\":\"a\",\"managedBy\":\"kueue.x-k8s.io/multikueue\"}"),
               OBJ("{\"name\":\"a\",\"managedBy\":\"ray.io/kuberay-operator\"}"),
               "FieldValueInvalid", "spec.managedBy", "the managedBy field is immutable");
    expect_valid(s, OBJ("{\"name\":\"a\",\"managedBy\":\"ray.io/kuberay-operator\"}"),
                 OBJ("{\"name\":\"a\",\"managedBy\":\"ray.io/kuberay-operator\"}"));
    expect_valid(s, OBJ("{\"name\":\"a\",\"managedBy\":\"ray.io/kuberay-operator\"}"),
                 OBJ("{\"name\":\"a\"}"));
    expect_one(s, OBJ("{\"name\":\"a\",\"policy\":{\"onFailure\":\"x\",\"deletionRules\":[]}}"),
               NULL, "FieldValueInvalid", "spec.policy", "cannot be used together");
    expect_valid(s, OBJ("{\"name\":\"a\",\"policy\":{\"onFailure\":\"x\",\"onSuccess\":\"y\"}}"),
                 NULL);
    /* a type error elsewhere suppresses the rule's verdict (one cause, plus "not checked") */
    expect_one(s, OBJ("{\"name\":\"a\",\"replicas\":\"x\",\"managedBy\":\"me\"}"), NULL,
               "FieldValueTypeInvalid", "spec.replicas", NULL);
    /* a plain Invalid error does not: both the range and the rule are reported */
    int rc;
    cJSON *causes = run(s, OBJ("{\"name\":\"a\",\"replicas\":-1,\"managedBy\":\"me\"}"), NULL,
                        NULL, NULL, &rc);
    assert_int_equal(rc, -EINVAL);
    assert_int_equal(cJSON_GetArraySize(causes), 2);
    cJSON_Delete(causes);
    schema_free(s);
}

static void test_compile_errors_and_list_keys(void **state)
{
    struct schema *s = NULL;
    char err[256];
    (void)state;
    cJSON *j = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"thing\"}}}");
    assert_int_equal(schema_compile(j, &s, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "Unsupported value: \"thing\""));
    cJSON_Delete(j);
    j = cJSON_Parse("{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\"}");
    assert_int_equal(schema_compile(j, &s, err, sizeof(err)), -EINVAL);
    cJSON_Delete(j);
    j = cJSON_Parse("[1]");
    assert_int_equal(schema_compile(j, &s, err, sizeof(err)), -EINVAL);
    cJSON_Delete(j);
    s = compile_yaml(small_schema);
    const char *const *k = schema_list_map_keys(s, "spec.ports");
    assert_non_null(k);
    assert_string_equal(k[0], "port");
    assert_string_equal(k[1], "protocol");
    assert_null(k[2]);
    assert_null(schema_list_map_keys(s, "spec.tags"));
    assert_null(schema_list_map_keys(s, "spec.nope"));
    schema_free(s);
}

/* ---- the real CRDs and samples ---- */


static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

struct crd {
    char kind[64];
    struct schema *v1;
};

static struct crd crds[8];
static size_t ncrds;

static const cJSON *v1_schema(const cJSON *crd)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(crd, "spec"), "versions")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(v, "name")), "v1"))
            return cJSON_GetObjectItem(cJSON_GetObjectItem(v, "schema"), "openAPIV3Schema");
    }
    return NULL;
}

static long heap_kb(void)
{
    struct util_heap h;
    return util_heap_stats(&h) == 0 ? (long)(h.in_use / 1024) : 0;
}

static void load_crds(void)
{
    const char *names[] = { "ray.io_rayclusters.yaml", "ray.io_rayjobs.yaml",
                            "ray.io_rayservices.yaml", "ray.io_raycronjobs.yaml" };
    ncrds = 0;
    for (size_t i = 0; i < 4; i++) {
        char path[700], err[256];
        size_t len;
        cJSON *docs;
        snprintf(path, sizeof(path), "%s/kuberay/crds/%s", shared_fixture_dir(), names[i]);
        char *buf = read_file(path, &len);
        assert_non_null(buf);
        uint64_t t0 = util_now_ns();
        if (yamljson_parse_all(buf, len, &docs, err, sizeof(err)))
            fail_msg("%s: %s", path, err);
        uint64_t t1 = util_now_ns();
        long h0 = heap_kb();
        const cJSON *crd = cJSON_GetArrayItem(docs, 0);
        struct crd *c = &crds[ncrds++];
        snprintf(c->kind, sizeof(c->kind), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(
                 cJSON_GetObjectItem(cJSON_GetObjectItem(crd, "spec"), "names"), "kind")));
        if (schema_compile(v1_schema(crd), &c->v1, err, sizeof(err)))
            fail_msg("%s: %s", names[i], err);
        uint64_t t2 = util_now_ns();
        print_message("%s: %zu bytes, yaml->json %.1f ms, compile %.1f ms, compiled schema %ld KiB, "
                      "%zu CEL rules (%zu unsupported)\n", names[i], len, (t1 - t0) / 1e6,
                      (t2 - t1) / 1e6, heap_kb() - h0, schema_rules_total(c->v1),
                      schema_rules_unsupported(c->v1));
        cJSON_Delete(docs);
        free(buf);
    }
}

static struct schema *schema_for(const char *kind)
{
    for (size_t i = 0; i < ncrds; i++)
        if (!strcmp(crds[i].kind, kind))
            return crds[i].v1;
    return NULL;
}

static int validated;

static void check_sample_file(const char *path)
{
    size_t len;
    char err[256];
    cJSON *docs, *d;
    char *buf = read_file(path, &len);
    assert_non_null(buf);
    if (yamljson_parse_all(buf, len, &docs, err, sizeof(err)))
        fail_msg("%s: %s", path, err);
    cJSON_ArrayForEach(d, docs) {
        const char *av = cJSON_GetStringValue(cJSON_GetObjectItem(d, "apiVersion"));
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(d, "kind"));
        struct schema *s;
        if (!av || strcmp(av, "ray.io/v1") || !kind || !(s = schema_for(kind)))
            continue;
        cJSON *causes = cJSON_CreateArray(), *unknown = cJSON_CreateArray();
        uint64_t t0 = util_now_ns();
        int rc = schema_apply(s, d, NULL, causes, unknown);
        uint64_t t1 = util_now_ns();
        if (rc || cJSON_GetArraySize(causes)) {
            char *t = cJSON_PrintUnformatted(causes);
            fail_msg("%s (%s): rc %d causes %s", path, kind, rc, t);
        }
        if (!strcmp(kind, "RayJob") && strstr(path, "ray-job.sample.yaml"))
            print_message("validate %s: %.3f ms\n", path, (t1 - t0) / 1e6);
        validated++;
        cJSON_Delete(causes);
        cJSON_Delete(unknown);
    }
    cJSON_Delete(docs);
    free(buf);
}

static void walk_samples(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d))) {
        char p[1024];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (e->d_type == DT_DIR && depth < 4)
            walk_samples(p, depth + 1);
        else if (n > 5 && (!strcmp(e->d_name + n - 5, ".yaml") || !strcmp(e->d_name + n - 4, ".yml")))
            check_sample_file(p);
    }
    closedir(d);
}

static void test_kuberay_samples_validate(void **state)
{
    char dir[700];
    (void)state;
    load_crds();
    snprintf(dir, sizeof(dir), "%s/kuberay/samples", shared_fixture_dir());
    validated = 0;
    walk_samples(dir, 0);
    print_message("%d ray.io/v1 objects validated with no causes\n", validated);
    assert_true(validated >= 40);
    /* and a broken sample is caught where the real server would catch it */
    struct schema *rc = schema_for("RayCluster");
    assert_non_null(rc);
    expect_one(rc, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"x\"},"
               "\"spec\":{\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":"
               "{\"containers\":[{\"name\":\"h\",\"image\":\"i\"}]}}},\"workerGroupSpecs\":"
               "[{\"groupName\":\"w\",\"replicas\":\"two\",\"rayStartParams\":{},\"template\":"
               "{\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"i\"}]}}}]}}", NULL,
               "FieldValueTypeInvalid", "spec.workerGroupSpecs[0].replicas", "must be of type integer");
    for (size_t i = 0; i < ncrds; i++)
        schema_free(crds[i].v1);
    ncrds = 0;
}

static cJSON *load_doc(const char *rel)
{
    char path[800], err[256];
    size_t len;
    cJSON *doc = NULL;
    snprintf(path, sizeof(path), "%s/kuberay/samples/%s", shared_fixture_dir(), rel);
    char *buf = read_file(path, &len);
    assert_non_null(buf);
    if (yamljson_parse_one(buf, len, &doc, err, sizeof(err)))
        fail_msg("%s: %s", path, err);
    free(buf);
    return doc;
}

/* `kubectl apply --server-side` of a sample: create, re-apply with a change, re-apply
 * unchanged, then a second manager's conflicting apply, as the store will run them. */
static void test_server_side_apply_sample(void **state)
{
    char err[512];
    cJSON *live = NULL, *next = NULL;
    (void)state;
    load_crds();
    struct schema *s = schema_for("RayCluster");
    const char *ckeys = "spec.headGroupSpec.template.spec.containers";
    const char *const *keys = schema_list_map_keys(s, ckeys);
    assert_non_null(keys);
    assert_string_equal(keys[0], "name");
    cJSON *applied = load_doc("ray-cluster.sample.yaml");

    assert_int_equal(patch_apply_schema(NULL, applied, "kubectl", false, "ray.io/v1", NULL, s,
                                        &live, err, sizeof(err)), 0);
    cJSON *causes = cJSON_CreateArray();
    assert_int_equal(schema_apply(s, live, NULL, causes, NULL), 0);
    cJSON_Delete(causes);
    cJSON *mf = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(live, "metadata"),
                                                       "managedFields"), 0);
    char *fv = cJSON_PrintUnformatted(cJSON_GetObjectItem(mf, "fieldsV1"));
    assert_non_null(strstr(fv, "\"k:{\\\"name\\\":\\\"ray-head\\\"}\""));
    free(fv);

    /* change: worker replicas 1 -> 2 and a new label */
    cJSON *changed = cJSON_Duplicate(applied, true);
    cJSON *wg = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(changed, "spec"),
                                                       "workerGroupSpecs"), 0);
    cJSON_ReplaceItemInObject(wg, "replicas", cJSON_CreateNumber(2));
    cJSON *labels = cJSON_AddObjectToObject(cJSON_GetObjectItem(changed, "metadata"), "labels");
    cJSON_AddStringToObject(labels, "tier", "compute");
    assert_int_equal(patch_apply_schema(live, changed, "kubectl", false, "ray.io/v1", NULL, s,
                                        &next, err, sizeof(err)), 0);
    cJSON *nwg = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(next, "spec"),
                                                        "workerGroupSpecs"), 0);
    assert_int_equal(cJSON_GetObjectItem(nwg, "replicas")->valueint, 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(next,
                        "metadata"), "labels"), "tier")->valuestring, "compute");
    cJSON_Delete(live);
    live = next;

    /* unchanged re-apply: same spec and metadata apart from managedFields' time */
    assert_int_equal(patch_apply_schema(live, changed, "kubectl", false, "ray.io/v1", NULL, s,
                                        &next, err, sizeof(err)), 0);
    assert_true(cJSON_Compare(cJSON_GetObjectItem(live, "spec"),
                              cJSON_GetObjectItem(next, "spec"), true));
    cJSON_Delete(next);

    /* another manager changing the replicas conflicts, unless forced */
    cJSON *other = cJSON_Parse("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                               "\"metadata\":{\"name\":\"raycluster-kuberay\"},\"spec\":"
                               "{\"rayVersion\":\"2.9.0\"}}");
    next = NULL;
    assert_int_equal(patch_apply_schema(live, other, "helm", false, "ray.io/v1", NULL, s, &next,
                                        err, sizeof(err)), -EEXIST);
    assert_non_null(strstr(err, "conflict with \"kubectl\""));
    assert_non_null(strstr(err, ".spec.rayVersion"));
    assert_int_equal(patch_apply_schema(live, other, "helm", true, "ray.io/v1", NULL, s, &next,
                                        err, sizeof(err)), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(next, "spec"),
                                            "rayVersion")->valuestring, "2.9.0");
    cJSON_Delete(next);
    cJSON_Delete(other);
    cJSON_Delete(live);
    cJSON_Delete(changed);
    cJSON_Delete(applied);
    for (size_t i = 0; i < ncrds; i++)
        schema_free(crds[i].v1);
    ncrds = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_and_values),
        cmocka_unit_test(test_pruning_and_defaults),
        cmocka_unit_test(test_cel_rules),
        cmocka_unit_test(test_compile_errors_and_list_keys),
        cmocka_unit_test(test_kuberay_samples_validate),
        cmocka_unit_test(test_server_side_apply_sample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

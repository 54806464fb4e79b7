/*
 * rc_test_lib.h - helpers shared by the RayCluster builder unit tests
 * (test_rc_build.c, test_rc_validate.c, test_batchsched.c): load a sample RayCluster
 * from the KubeRay folder (shared_fixture.h) and default it against the real CRD schema (as the
 * API server would before rayop ever sees it), load a JSON fixture, and compare
 * JSON with a readable failure. Header-only: each test binary is one file.
 */
#ifndef RAYOP_RC_TEST_LIB_H
#define RAYOP_RC_TEST_LIB_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kubesim/schema/schema.h"
#include "kobj/yamljson.h"
#include "tests/unit/shared_fixture.h"

static struct schema *rct_schema;

static __attribute__((unused)) char *rct_read_file(const char *path, size_t *len)
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


/* Compiles the RayCluster CRD's v1 schema once. */
static __attribute__((unused)) void rct_load_schema(void)
{
    char path[700], err[256];
    size_t len;
    cJSON *docs, *v;
    if (rct_schema)
        return;
    snprintf(path, sizeof(path), "%s/kuberay/crds/ray.io_rayclusters.yaml", shared_fixture_dir());
    char *buf = rct_read_file(path, &len);
    assert_non_null(buf);
    if (yamljson_parse_all(buf, len, &docs, err, sizeof(err)))
        fail_msg("%s: %s", path, err);
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 0),
                                                                  "spec"), "versions")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(v, "name")), "v1") &&
            schema_compile(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "schema"), "openAPIV3Schema"),
                           &rct_schema, err, sizeof(err)))
            fail_msg("compile: %s", err);
    }
    assert_non_null(rct_schema);
    cJSON_Delete(docs);
    free(buf);
}

#define RCT_UID "0b4c2a1e-0000-4000-8000-000000000001"

/* Defaults rc against the CRD (pruning, defaults) and gives it the namespace and
 * uid the API server would. 0, or the schema's rc when the object is invalid. */
static __attribute__((unused)) int rct_admit(cJSON *rc)
{
    cJSON *meta = cJSON_GetObjectItem(rc, "metadata");
    int r;
    cJSON *causes = cJSON_CreateArray();
    rct_load_schema();
    r = schema_apply(rct_schema, rc, NULL, causes, NULL);
    if (r < 0) {
        char *t = cJSON_PrintUnformatted(causes);
        print_error("schema: %s\n", t);
        free(t);
    }
    cJSON_Delete(causes);
    if (!meta)
        meta = cJSON_AddObjectToObject(rc, "metadata");
    if (!cJSON_GetObjectItem(meta, "namespace"))
        cJSON_AddStringToObject(meta, "namespace", "default");
    if (!cJSON_GetObjectItem(meta, "uid"))
        cJSON_AddStringToObject(meta, "uid", RCT_UID);
    return r;
}

/* Every document of a sample file (caller frees the array). */
static __attribute__((unused)) cJSON *rct_load_docs(const char *path)
{
    char err[256];
    size_t len;
    cJSON *docs;
    char *buf = rct_read_file(path, &len);
    if (!buf)
        fail_msg("cannot read %s", path);
    if (yamljson_parse_all(buf, len, &docs, err, sizeof(err)))
        fail_msg("%s: %s", path, err);
    free(buf);
    return docs;
}

/* The first RayCluster of samples/NAME, admitted. Caller frees. */
static __attribute__((unused)) cJSON *rct_sample(const char *name)
{
    char path[800];
    cJSON *docs, *d, *rc = NULL;
    snprintf(path, sizeof(path), "%s/kuberay/samples/%s", shared_fixture_dir(), name);
    docs = rct_load_docs(path);
    cJSON_ArrayForEach(d, docs) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(d, "kind"));
        if (kind && !strcmp(kind, "RayCluster")) {
            rc = cJSON_Duplicate(d, 1);
            break;
        }
    }
    cJSON_Delete(docs);
    if (!rc)
        fail_msg("no RayCluster in %s", name);
    if (rct_admit(rc) < 0)
        fail_msg("%s does not pass the CRD schema", name);
    return rc;
}

static __attribute__((unused)) cJSON *rct_fixture(const char *name)
{
    const char *root = getenv("RAYOP_ROOT");
    char path[800];
    size_t len;
    cJSON *j;
    snprintf(path, sizeof(path), "%s/tests/unit/fixtures/raycluster/%s", root ? root : ".", name);
    char *buf = rct_read_file(path, &len);
    if (!buf)
        fail_msg("cannot read fixture %s", path);
    j = cJSON_Parse(buf);
    free(buf);
    if (!j)
        fail_msg("fixture %s is not JSON", name);
    return j;
}

/* Prints where a and b first differ (path, both values). */
static void rct_diff(const cJSON *a, const cJSON *e, const char *path)
{
    char sub[1024];
    const cJSON *c;
    if (json_equal(a, e))
        return;
    if (cJSON_IsObject(a) && cJSON_IsObject(e)) {
        cJSON_ArrayForEach(c, e) {
            snprintf(sub, sizeof(sub), "%s.%s", path, c->string);
            rct_diff(cJSON_GetObjectItemCaseSensitive(a, c->string), c, sub);
        }
        cJSON_ArrayForEach(c, a) {
            if (!cJSON_GetObjectItemCaseSensitive(e, c->string)) {
                char *t = cJSON_PrintUnformatted(c);
                print_error("  %s.%s: unexpected %s\n", path, c->string, t);
                free(t);
            }
        }
        return;
    }
    if (cJSON_IsArray(a) && cJSON_IsArray(e) && cJSON_GetArraySize(a) == cJSON_GetArraySize(e)) {
        for (int i = 0; i < cJSON_GetArraySize(e); i++) {
            snprintf(sub, sizeof(sub), "%s[%d]", path, i);
            rct_diff(cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(e, i), sub);
        }
        return;
    }
    char *ta = a ? cJSON_PrintUnformatted(a) : NULL, *te = e ? cJSON_PrintUnformatted(e) : NULL;
    print_error("  %s:\n    expected %.1500s\n    actual   %.1500s\n", path, te ? te : "(absent)",
                ta ? ta : "(absent)");
    free(ta);
    free(te);
}

static __attribute__((unused)) void rct_assert_json(const cJSON *actual, const cJSON *expected, const char *what)
{
    if (!json_equal(actual, expected)) {
        print_error("%s differs:\n", what);
        rct_diff(actual, expected, "");
        fail_msg("%s differs from the expected object", what);
    }
}

/* The value of env var name in container (value or NULL), and its index. */
static __attribute__((unused)) const cJSON *rct_env(const cJSON *container, const char *name, int *index)
{
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(container, "env")) {
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), name)) {
            if (index)
                *index = i;
            return e;
        }
        i++;
    }
    return NULL;
}

static __attribute__((unused)) const char *rct_env_value(const cJSON *container, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(rct_env(container, name, NULL), "value"));
}

static __attribute__((unused)) const cJSON *rct_container(const cJSON *pod, const char *name)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"))
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")), name))
            return c;
    return NULL;
}

static __attribute__((unused)) const char *rct_str_at(const cJSON *o, const char *path)
{
    char buf[512], *save = NULL, *tok;
    snprintf(buf, sizeof(buf), "%s", path);
    for (tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save)) {
        if (cJSON_IsArray(o))
            o = cJSON_GetArrayItem(o, atoi(tok));
        else
            o = cJSON_GetObjectItemCaseSensitive(o, tok);
    }
    return cJSON_GetStringValue(o);
}

/* ---- field access for the checks ---- */

static __attribute__((unused)) const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static __attribute__((unused)) const char *jstr(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(jget(o, k));
}

static __attribute__((unused)) const cJSON *label_map(const cJSON *obj)
{
    return jget(jget(obj, "metadata"), "labels");
}

static __attribute__((unused)) const cJSON *ann_map(const cJSON *obj)
{
    return jget(jget(obj, "metadata"), "annotations");
}

static __attribute__((unused)) const cJSON *ray0(const cJSON *pod)
{
    return cJSON_GetArrayItem(jget(jget(pod, "spec"), "containers"), 0);
}

static __attribute__((unused)) const char *arg0(const cJSON *c)
{
    return cJSON_GetStringValue(cJSON_GetArrayItem(jget(c, "args"), 0));
}

/* The env var names of c, space-separated. */
static __attribute__((unused)) void env_names(const cJSON *c, char *out, size_t cap)
{
    const cJSON *e;
    size_t w = 0;
    out[0] = '\0';
    cJSON_ArrayForEach(e, jget(c, "env"))
        w += (size_t)snprintf(out + w, w < cap ? cap - w : 0, "%s%s", w ? " " : "", jstr(e, "name"));
}

static __attribute__((unused)) cJSON *group_at(const cJSON *rc, int i)
{
    return cJSON_GetArrayItem(jget(jget(rc, "spec"), "workerGroupSpecs"), i);
}

static __attribute__((unused)) cJSON *yaml_rc(const char *yaml)
{
    char err[256];
    cJSON *rc;
    if (yamljson_parse_one(yaml, strlen(yaml), &rc, err, sizeof(err)))
        fail_msg("%s", err);
    if (rct_admit(rc) < 0)
        fail_msg("test cluster does not pass the CRD schema");
    return rc;
}

#endif

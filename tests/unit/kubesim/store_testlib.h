/*
 * store_testlib.h - helpers shared by the store's unit tests (test_store*.c):
 * opening a store over the real registry, a small CRD with status and scale
 * subresources, and one-line object builders. Header-only, static functions.
 */
#ifndef RAYOP_TESTS_STORE_TESTLIB_H
#define RAYOP_TESTS_STORE_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/registry/registry.h"
#include "kubesim/schema/selector.h"
#include "kubesim/store/internal.h"
#include "kubesim/store/store.h"

/* Widget: group test.io, v1 (storage, status + scale) and v1beta1 (served). */
static const char WIDGET_CRD[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.test.io\"},\"spec\":{\"group\":\"test.io\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\","
    "\"listKind\":\"WidgetList\"},\"scope\":\"Namespaced\",\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{},"
    "\"scale\":{\"specReplicasPath\":\".spec.replicas\",\"statusReplicasPath\":"
    "\".status.replicas\"}},\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":"
    "\"integer\",\"minimum\":0},\"color\":{\"type\":\"string\"}}},\"status\":{\"type\":"
    "\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"},\"state\":{\"type\":"
    "\"string\"}}}}}}},"
    "{\"name\":\"v1beta1\",\"served\":true,\"storage\":false,\"subresources\":{\"status\":{}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-"
    "fields\":true}}}]}}";

static inline struct store *tl_open(const char *dir, size_t window)
{
    struct registry *reg = NULL;
    struct store *s = NULL;
    struct store_opts o = { .state_dir = dir, .watch_window = window, .bookmark_ms = 50 };
    char err[256];

    assert_int_equal(registry_new(&reg), 0);
    if (store_open(&o, reg, &s, err, sizeof(err)))
        fail_msg("store_open: %s", err);
    return s;
}

static inline const struct reg_resource *tl_res(struct store *s, const char *g, const char *v,
                                                const char *p)
{
    const struct reg_resource *r = registry_find(store_registry_rdlock(s), g, v, p);
    store_registry_unlock(s);
    assert_non_null(r);
    return r;
}

static inline cJSON *tl_json(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    cJSON *j;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    j = cJSON_Parse(buf);
    if (!j)
        fail_msg("bad test JSON: %s", buf);
    return j;
}

/* Creates and returns the stored object (reference); fails the test on error. */
static inline struct store_obj *tl_create(struct store *s, const struct reg_resource *r,
                                          const char *ns, cJSON *obj)
{
    struct store_status st = { 0 };
    struct store_obj *o = NULL;

    if (store_create(s, r, ns, obj, NULL, &o, &st))
        fail_msg("create failed: %d %s", st.code, st.message);
    return o;
}

static inline const struct reg_resource *tl_install_widgets(struct store *s)
{
    const struct reg_resource *crd = tl_res(s, "apiextensions.k8s.io", "v1",
                                            "customresourcedefinitions");
    store_obj_unref(tl_create(s, crd, "", cJSON_Parse(WIDGET_CRD)));
    return tl_res(s, "test.io", "v1", "widgets");
}

static inline cJSON *tl_pod(const char *name, const char *extra_meta)
{
    return tl_json("{\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"containers\":[{\"name\":"
                   "\"c\",\"image\":\"busybox:1.36\"}]}}", name, extra_meta ? extra_meta : "");
}

static inline const char *tl_meta(const struct store_obj *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(store_obj_json(o), "metadata"), k));
}

static inline double tl_num(const cJSON *j, const char *path)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *t = strtok_r(buf, ".", &save); t && j; t = strtok_r(NULL, ".", &save))
        j = cJSON_GetObjectItemCaseSensitive(j, t);
    return cJSON_IsNumber(j) ? j->valuedouble : -12345;
}

static inline const char *tl_str(const cJSON *j, const char *path)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *t = strtok_r(buf, ".", &save); t && j; t = strtok_r(NULL, ".", &save))
        j = cJSON_GetObjectItemCaseSensitive(j, t);
    return cJSON_GetStringValue(j);
}

#endif

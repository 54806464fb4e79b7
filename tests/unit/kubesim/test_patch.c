/* test_patch.c - merge patch, JSON patch, strategic merge (with the bodies kubectl sends),
 * server-side apply and managedFields bookkeeping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"

/* Asserts that JSON texts a and b are structurally equal. */
static void assert_json(const cJSON *got, const char *want)
{
    cJSON *w = cJSON_Parse(want);
    if (!w)
        fail_msg("bad expected JSON: %s", want);
    if (!cJSON_Compare(got, w, true)) {
        char *g = cJSON_PrintUnformatted(got);
        print_error("got:  %s\nwant: %s\n", g ? g : "(null)", want);
        free(g);
        cJSON_Delete(w);
        fail();
    }
    cJSON_Delete(w);
}

enum kind { MERGE, JSONP, SMP };

static int run(enum kind k, const char *target, const char *patch, const char *smp_kind,
               cJSON **out, char *err, size_t errlen)
{
    cJSON *t = target ? cJSON_Parse(target) : NULL, *p = cJSON_Parse(patch);
    int rc;
    assert_non_null(p);
    err[0] = '\0';
    if (k == MERGE)
        rc = patch_merge(t, p, out, err, errlen);
    else if (k == JSONP)
        rc = patch_json(t, p, out, err, errlen);
    else
        rc = patch_strategic(t, p, smp_kind, out, err, errlen);
    cJSON_Delete(t);
    cJSON_Delete(p);
    return rc;
}

static void ok(enum kind k, const char *target, const char *patch, const char *kind,
               const char *want)
{
    cJSON *out = NULL;
    char err[512];
    int rc = run(k, target, patch, kind, &out, err, sizeof(err));
    if (rc)
        fail_msg("patch %s failed: %d %s", patch, rc, err);
    assert_json(out, want);
    cJSON_Delete(out);
}

static void bad(enum kind k, const char *target, const char *patch, const char *kind,
                int want_rc, const char *msg_part)
{
    cJSON *out = NULL;
    char err[512];
    int rc = run(k, target, patch, kind, &out, err, sizeof(err));
    if (rc != want_rc)
        fail_msg("patch %s: rc %d, want %d (%s)", patch, rc, want_rc, err);
    assert_null(out);
    if (msg_part && !strstr(err, msg_part))
        fail_msg("error '%s' lacks '%s'", err, msg_part);
}

/* ---- RFC 7386 (the RFC's appendix A cases and kubectl's bodies) ---- */

static void test_merge_rfc7386(void **state)
{
    (void)state;
    ok(MERGE, "{\"a\":\"b\"}", "{\"a\":\"c\"}", NULL, "{\"a\":\"c\"}");
    ok(MERGE, "{\"a\":\"b\"}", "{\"b\":\"c\"}", NULL, "{\"a\":\"b\",\"b\":\"c\"}");
    ok(MERGE, "{\"a\":\"b\"}", "{\"a\":null}", NULL, "{}");
    ok(MERGE, "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", NULL, "{\"b\":\"c\"}");
    ok(MERGE, "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", NULL, "{\"a\":\"c\"}");
    ok(MERGE, "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", NULL, "{\"a\":[\"b\"]}");
    ok(MERGE, "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", NULL,
       "{\"a\":{\"b\":\"d\"}}");
    ok(MERGE, "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", NULL, "{\"a\":[1]}");
    ok(MERGE, "[\"a\",\"b\"]", "[\"c\",\"d\"]", NULL, "[\"c\",\"d\"]");
    ok(MERGE, "{\"a\":\"b\"}", "[\"c\"]", NULL, "[\"c\"]");
    ok(MERGE, "{\"e\":null}", "{\"a\":1}", NULL, "{\"e\":null,\"a\":1}");
    ok(MERGE, "[1,2]", "{\"a\":\"b\",\"c\":null}", NULL, "{\"a\":\"b\"}");
    ok(MERGE, "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", NULL, "{\"a\":{\"bb\":{}}}");
    ok(MERGE, NULL, "{\"a\":1}", NULL, "{\"a\":1}");
    /* kubectl label / client-side apply on a CR */
    ok(MERGE, "{\"metadata\":{\"name\":\"rc\",\"labels\":{\"a\":\"1\"}},\"spec\":{\"workerGroupSpecs\":"
       "[{\"groupName\":\"w\",\"replicas\":1}]}}",
       "{\"metadata\":{\"labels\":{\"tier\":\"compute\"}},\"spec\":{\"workerGroupSpecs\":"
       "[{\"groupName\":\"w\",\"replicas\":2}]}}", NULL,
       "{\"metadata\":{\"name\":\"rc\",\"labels\":{\"a\":\"1\",\"tier\":\"compute\"}},"
       "\"spec\":{\"workerGroupSpecs\":[{\"groupName\":\"w\",\"replicas\":2}]}}");
}

static void test_merge_does_not_modify_inputs(void **state)
{
    cJSON *t = cJSON_Parse("{\"a\":{\"b\":1}}"), *p = cJSON_Parse("{\"a\":{\"b\":null}}"), *out;
    char err[64];
    (void)state;
    assert_int_equal(patch_merge(t, p, &out, err, sizeof(err)), 0);
    assert_json(t, "{\"a\":{\"b\":1}}");
    assert_json(p, "{\"a\":{\"b\":null}}");
    assert_json(out, "{\"a\":{}}");
    cJSON_Delete(t);
    cJSON_Delete(p);
    cJSON_Delete(out);
}

/* Exact text: member order is part of what a merge keeps. */
static void merge_text(const char *target, const char *patch, const char *want)
{
    cJSON *out = NULL;
    char err[256], *txt;
    assert_int_equal(run(MERGE, target, patch, NULL, &out, err, sizeof(err)), 0);
    txt = cJSON_PrintUnformatted(out);
    assert_string_equal(txt, want);
    free(txt);
    cJSON_Delete(out);
}

static void test_merge_order_and_repeats(void **state)
{
    (void)state;
    /* target's members in place, new ones after in patch order */
    merge_text("{\"a\":1,\"b\":{\"x\":1,\"y\":2},\"c\":3}", "{\"z\":9,\"b\":{\"y\":null,\"w\":4},\"a\":0}",
               "{\"a\":0,\"b\":{\"x\":1,\"w\":4},\"c\":3,\"z\":9}");
    /* a repeated name in the target: the first is the one patched or removed */
    merge_text("{\"a\":1,\"a\":2}", "{\"a\":5}", "{\"a\":5,\"a\":2}");
    merge_text("{\"a\":1,\"a\":2}", "{\"a\":null}", "{\"a\":2}");
    /* a repeated name in the patch: each applies in turn */
    merge_text("{\"a\":{\"x\":1}}", "{\"a\":{\"y\":2},\"a\":{\"x\":null}}", "{\"a\":{\"y\":2}}");
    merge_text("{}", "{\"n\":{\"a\":null,\"b\":1}}", "{\"n\":{\"b\":1}}");
}

static size_t merge_allocs;

static void *counting_malloc(size_t n)
{
    merge_allocs++;
    return malloc(n);
}

/* A status patch onto a Pod-like object copies the object once: each member once,
 * merged where the patch names it (it used to copy the object, then the patched member
 * again at each level). */
static void test_merge_copies_once(void **state)
{
    cJSON_Hooks hooks = { counting_malloc, free };
    cJSON *t, *p, *out = NULL;
    char big[16384], err[64];
    size_t off, whole;
    (void)state;

    off = (size_t)snprintf(big, sizeof(big), "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"c\":[");
    for (int i = 0; i < 40; i++)
        off += (size_t)snprintf(big + off, sizeof(big) - off, "%s{\"n\":\"c%d\",\"i\":\"img\"}",
                                i ? "," : "", i);
    off += (size_t)snprintf(big + off, sizeof(big) - off, "]},\"status\":{\"phase\":\"Pending\","
                            "\"conditions\":[");
    for (int i = 0; i < 40; i++)
        off += (size_t)snprintf(big + off, sizeof(big) - off, "%s{\"type\":\"T%d\",\"status\":\"False\"}",
                                i ? "," : "", i);
    snprintf(big + off, sizeof(big) - off, "],\"x\":{\"a\":{\"b\":1}}}}");
    assert_non_null(t = cJSON_Parse(big));
    assert_non_null(p = cJSON_Parse("{\"status\":{\"phase\":\"Running\",\"x\":{\"a\":{\"b\":2}}}}"));
    cJSON_InitHooks(&hooks);
    merge_allocs = 0;
    cJSON *copy = cJSON_Duplicate(t, true);
    whole = merge_allocs;
    merge_allocs = 0;
    assert_int_equal(patch_merge(t, p, &out, err, sizeof(err)), 0);
    cJSON_InitHooks(NULL);
    assert_true(merge_allocs <= whole + 16);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "status"),
                                                                 "phase")), "Running");
    cJSON_Delete(copy);
    cJSON_Delete(out);
    cJSON_Delete(t);
    cJSON_Delete(p);
}

/* ---- RFC 6902 ---- */

static void test_json_patch_ops(void **state)
{
    (void)state;
    const char *doc = "{\"a\":{\"b\":[1,2,3]},\"c\":\"d\"}";
    ok(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/x\",\"value\":5}]", NULL,
       "{\"a\":{\"b\":[1,2,3],\"x\":5},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/-\",\"value\":4}]", NULL,
       "{\"a\":{\"b\":[1,2,3,4]},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/0\",\"value\":0}]", NULL,
       "{\"a\":{\"b\":[0,1,2,3]},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/3\",\"value\":9}]", NULL,
       "{\"a\":{\"b\":[1,2,3,9]},\"c\":\"d\"}");
    /* mid-array inserts (this libcjson's cJSON_InsertItemInArray drops them), then
     * walk the list both ways: an append and a remove after the insert */
    ok(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/1\",\"value\":7}]", NULL,
       "{\"a\":{\"b\":[1,7,2,3]},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/2\",\"value\":7},"
       "{\"op\":\"add\",\"path\":\"/a/b/-\",\"value\":8},"
       "{\"op\":\"remove\",\"path\":\"/a/b/1\"}]", NULL,
       "{\"a\":{\"b\":[1,7,3,8]},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"remove\",\"path\":\"/a/b/1\"}]", NULL,
       "{\"a\":{\"b\":[1,3]},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"replace\",\"path\":\"/c\",\"value\":{\"e\":1}}]", NULL,
       "{\"a\":{\"b\":[1,2,3]},\"c\":{\"e\":1}}");
    ok(JSONP, doc, "[{\"op\":\"move\",\"from\":\"/c\",\"path\":\"/a/c\"}]", NULL,
       "{\"a\":{\"b\":[1,2,3],\"c\":\"d\"}}");
    ok(JSONP, doc, "[{\"op\":\"copy\",\"from\":\"/a/b\",\"path\":\"/z\"}]", NULL,
       "{\"a\":{\"b\":[1,2,3]},\"c\":\"d\",\"z\":[1,2,3]}");
    ok(JSONP, doc, "[{\"op\":\"test\",\"path\":\"/a/b\",\"value\":[1,2,3]},"
       "{\"op\":\"replace\",\"path\":\"/a/b/2\",\"value\":7}]", NULL,
       "{\"a\":{\"b\":[1,2,7]},\"c\":\"d\"}");
    ok(JSONP, doc, "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", NULL, "[1]");
    ok(JSONP, doc, "[]", NULL, doc);
    /* ~0 and ~1 escapes: labels with '/' in them, as client-node sends */
    ok(JSONP, "{\"metadata\":{\"labels\":{\"ray.io/x\":\"1\",\"a~b\":\"2\"}}}",
       "[{\"op\":\"replace\",\"path\":\"/metadata/labels/ray.io~1x\",\"value\":\"9\"},"
       "{\"op\":\"remove\",\"path\":\"/metadata/labels/a~0b\"}]", NULL,
       "{\"metadata\":{\"labels\":{\"ray.io/x\":\"9\"}}}");
}

static void test_json_patch_errors(void **state)
{
    (void)state;
    const char *doc = "{\"a\":{\"b\":[1,2,3]},\"c\":\"d\"}";
    bad(JSONP, doc, "[{\"op\":\"remove\",\"path\":\"/nope\"}]", NULL, -EINVAL, "missing");
    bad(JSONP, doc, "[{\"op\":\"replace\",\"path\":\"/nope\",\"value\":1}]", NULL, -EINVAL,
        "missing");
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", NULL, -EINVAL,
        "missing path");
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/9\",\"value\":1}]", NULL, -EINVAL,
        "out of range");
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a/b/01\",\"value\":1}]", NULL, -EINVAL, NULL);
    bad(JSONP, doc, "[{\"op\":\"test\",\"path\":\"/c\",\"value\":\"x\"}]", NULL, -EINVAL,
        "test failed");
    bad(JSONP, doc, "[{\"op\":\"frobnicate\",\"path\":\"/c\"}]", NULL, -EINVAL,
        "Unexpected kind");
    bad(JSONP, doc, "[{\"path\":\"/c\"}]", NULL, -EINVAL, NULL);
    bad(JSONP, doc, "[{\"op\":\"add\",\"value\":1}]", NULL, -EINVAL, "path");
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/c\"}]", NULL, -EINVAL, "value");
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"c\",\"value\":1}]", NULL, -EINVAL, "pointer");
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", NULL, -EINVAL, NULL);
    bad(JSONP, doc, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/x\"}]", NULL, -EINVAL,
        "own child");
    bad(JSONP, doc, "{\"op\":\"add\"}", NULL, -EINVAL, NULL);
    /* an error in the second op leaves nothing half applied: out stays NULL */
    bad(JSONP, doc, "[{\"op\":\"add\",\"path\":\"/q\",\"value\":1},{\"op\":\"remove\","
        "\"path\":\"/zz\"}]", NULL, -EINVAL, NULL);
}

static void test_json_patch_op_cap(void **state)
{
    cJSON *ops = cJSON_CreateArray(), *out = NULL;
    char err[256];
    (void)state;
    for (int i = 0; i <= PATCH_MAX_OPS; i++) {
        cJSON *op = cJSON_CreateObject();
        cJSON_AddStringToObject(op, "op", "test");
        cJSON_AddStringToObject(op, "path", "");
        cJSON_AddItemToArray(ops, op);
    }
    cJSON *doc = cJSON_CreateObject();
    assert_int_equal(patch_json(doc, ops, &out, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "maximum operations"));
    cJSON_Delete(ops);
    cJSON_Delete(doc);
}

/* ---- strategic merge ---- */

static const char *pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"demo-pod\","
    "\"finalizers\":[\"a\",\"b\"],\"labels\":{\"app\":\"demo\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\","
    "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"x\"}],"
    "\"ports\":[{\"containerPort\":80}],\"args\":[\"-a\"]},"
    "{\"name\":\"side\",\"image\":\"busybox\"}],"
    "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"tolerations\":[{\"key\":\"k\"}]}}";

static void test_smp_kubectl_apply_body(void **state)
{
    cJSON *out = NULL;
    char err[256];
    (void)state;
    /* real-clients.md 5.3: re-apply with image and env changes */
    assert_int_equal(run(SMP, pod,
        "{\"metadata\":{\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\\n\"}},"
        "\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"web\"}],"
        "\"containers\":[{\"$setElementOrder/env\":[{\"name\":\"A\"}],"
        "\"env\":[{\"name\":\"A\",\"value\":\"2\"}],\"image\":\"nginx:1.26\",\"name\":\"web\"}]}}",
        "Pod", &out, err, sizeof(err)), 0);
    cJSON *spec = cJSON_GetObjectItem(out, "spec");
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "containers"), 0);
    assert_string_equal(cJSON_GetObjectItem(c0, "name")->valuestring, "web");
    assert_string_equal(cJSON_GetObjectItem(c0, "image")->valuestring, "nginx:1.26");
    assert_json(cJSON_GetObjectItem(c0, "env"),
                "[{\"name\":\"A\",\"value\":\"2\"},{\"name\":\"B\",\"value\":\"x\"}]");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "containers")), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(out,
        "metadata"), "annotations"), "kubectl.kubernetes.io/last-applied-configuration")
        ->valuestring, "{}\n");
    /* no directive survives into the stored object */
    char *s = cJSON_PrintUnformatted(out);
    assert_null(strstr(s, "$setElementOrder"));
    free(s);
    cJSON_Delete(out);
}

static void test_smp_kubectl_edit_body(void **state)
{
    cJSON *out = NULL;
    char err[256];
    (void)state;
    assert_int_equal(run(SMP, pod, "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"web\"}],"
                         "\"containers\":[{\"image\":\"nginx:1.27\",\"name\":\"web\"}]}}", "Pod",
                         &out, err, sizeof(err)), 0);
    cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(out, "spec"), "containers");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 0), "image")->valuestring,
                        "nginx:1.27");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 1), "name")->valuestring,
                        "side");
    cJSON_Delete(out);
}

static void test_smp_directives(void **state)
{
    (void)state;
    /* $patch: delete on a list element, by merge key */
    ok(SMP, "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
       "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}", "Pod",
       "{\"spec\":{\"containers\":[{\"name\":\"b\"}]}}");
    /* $patch: replace on a list */
    ok(SMP, "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
       "{\"spec\":{\"containers\":[{\"name\":\"c\"},{\"$patch\":\"replace\"}]}}", "Pod",
       "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    /* $patch: replace on a map */
    ok(SMP, "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
       "{\"metadata\":{\"labels\":{\"c\":\"3\",\"$patch\":\"replace\"}}}", "ConfigMap",
       "{\"metadata\":{\"labels\":{\"c\":\"3\"}}}");
    /* $patch: delete on a map */
    ok(SMP, "{\"data\":{\"a\":\"1\"},\"x\":1}", "{\"data\":{\"$patch\":\"delete\"}}", "ConfigMap",
       "{\"x\":1}");
    /* $deleteFromPrimitiveList and the merge of primitive finalizers */
    ok(SMP, "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
       "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\"]}}", "Pod",
       "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}");
    ok(SMP, "{\"metadata\":{\"finalizers\":[\"a\"]}}",
       "{\"metadata\":{\"finalizers\":[\"b\",\"a\"]}}", "Job",
       "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}");
    /* $retainKeys on a volume: the old source is dropped */
    ok(SMP, "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
       "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"$retainKeys\":[\"configMap\",\"name\"],"
       "\"configMap\":{\"name\":\"cm\"}}]}}", "Pod",
       "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"cm\"}}]}}");
    /* null deletes */
    ok(SMP, "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
       "{\"metadata\":{\"labels\":{\"a\":null}}}", "Service",
       "{\"metadata\":{\"labels\":{\"b\":\"2\"}}}");
    /* $setElementOrder reorders */
    ok(SMP, "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}",
       "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}", "Pod",
       "{\"spec\":{\"containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}");
    /* server-only elements (s1, s2) keep their places between the listed ones */
    ok(SMP, "{\"spec\":{\"containers\":[{\"name\":\"s1\"},{\"name\":\"a\"},{\"name\":\"s2\"},"
       "{\"name\":\"b\"}]}}",
       "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},{\"name\":\"c\"},"
       "{\"name\":\"b\"}],\"containers\":[{\"name\":\"c\"}]}}", "Pod",
       "{\"spec\":{\"containers\":[{\"name\":\"s1\"},{\"name\":\"a\"},{\"name\":\"c\"},"
       "{\"name\":\"s2\"},{\"name\":\"b\"}]}}");
    /* primitive set with an order */
    ok(SMP, "{\"metadata\":{\"finalizers\":[\"x\",\"y\"]}}",
       "{\"metadata\":{\"$setElementOrder/finalizers\":[\"z\",\"y\",\"x\"],"
       "\"finalizers\":[\"z\"]}}", "Pod",
       "{\"metadata\":{\"finalizers\":[\"z\",\"y\",\"x\"]}}");
}

static void test_smp_table(void **state)
{
    (void)state;
    /* atomic lists are replaced: tolerations, args */
    ok(SMP, "{\"spec\":{\"tolerations\":[{\"key\":\"a\"}],\"containers\":[{\"name\":\"w\","
       "\"args\":[\"1\",\"2\"]}]}}",
       "{\"spec\":{\"tolerations\":[{\"key\":\"b\"}],\"containers\":[{\"name\":\"w\","
       "\"args\":[\"3\"]}]}}", "Pod",
       "{\"spec\":{\"tolerations\":[{\"key\":\"b\"}],\"containers\":[{\"name\":\"w\","
       "\"args\":[\"3\"]}]}}");
    /* ports merge by containerPort, volumeMounts by mountPath */
    ok(SMP, "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"ports\":[{\"containerPort\":1,"
       "\"name\":\"a\"}],\"volumeMounts\":[{\"mountPath\":\"/x\",\"name\":\"v\"}]}]}}",
       "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"ports\":[{\"containerPort\":2}],"
       "\"volumeMounts\":[{\"mountPath\":\"/x\",\"readOnly\":true}]}]}}", "Pod",
       "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"ports\":[{\"containerPort\":1,"
       "\"name\":\"a\"},{\"containerPort\":2}],\"volumeMounts\":[{\"mountPath\":\"/x\","
       "\"name\":\"v\",\"readOnly\":true}]}]}}");
    /* Service ports by port */
    ok(SMP, "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"}]}}",
       "{\"spec\":{\"ports\":[{\"port\":443,\"name\":\"https\"}]}}", "Service",
       "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"},{\"port\":443,\"name\":\"https\"}]}}");
    /* Job pod template under spec.template.spec */
    ok(SMP, "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},"
       "{\"name\":\"b\"}]}}}}",
       "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"}]}}}}",
       "Job",
       "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"},"
       "{\"name\":\"b\"}]}}}}");
    /* status.conditions by type */
    ok(SMP, "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
       "{\"type\":\"X\",\"status\":\"True\"}]}}",
       "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", "Pod",
       "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
       "{\"type\":\"X\",\"status\":\"True\"}]}}");
    /* ownerReferences by uid */
    ok(SMP, "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"a\"}]}}",
       "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"2\",\"name\":\"b\"}]}}", "Secret",
       "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"a\"},{\"uid\":\"2\","
       "\"name\":\"b\"}]}}");
    /* an Event is all maps and atomic lists */
    ok(SMP, "{\"count\":1,\"series\":{\"count\":1}}", "{\"count\":2,\"series\":{\"count\":3}}",
       "Event", "{\"count\":2,\"series\":{\"count\":3}}");
    assert_true(patch_smp_kind_known("Lease"));
    assert_true(patch_smp_kind_known("RoleBinding"));
    assert_true(patch_smp_kind_known("CustomResourceDefinition"));
    assert_true(patch_smp_kind_known("EndpointSlice"));
    assert_false(patch_smp_kind_known("RayCluster"));
    assert_false(patch_smp_kind_known(NULL));
}

static void test_smp_errors(void **state)
{
    (void)state;
    bad(SMP, "{}", "{\"a\":1}", "RayCluster", -EPROTONOSUPPORT, "unknown format");
    bad(SMP, "{}", "[1]", "Pod", -EINVAL, NULL);
    bad(SMP, "{\"spec\":{\"containers\":[]}}", "{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}",
        "Pod", -EINVAL, "merge key: name");
    bad(SMP, "{}", "{\"spec\":{\"$patch\":\"frob\"}}", "Pod", -EINVAL, "Unknown patch type");
    bad(SMP, "{}", "{\"$bogus\":1}", "Pod", -EINVAL, "unknown directive");
}

/* ---- server-side apply ---- */

static cJSON *apply(const cJSON *live, const char *body, const char *mgr, bool force,
                    const char *kind, int want_rc, char *err, size_t errlen)
{
    cJSON *b = cJSON_Parse(body), *out = NULL;
    assert_non_null(b);
    err[0] = '\0';
    int rc = patch_apply(live, b, mgr, force, "v1", kind, &out, err, errlen);
    if (rc != want_rc)
        fail_msg("apply rc %d want %d: %s", rc, want_rc, err);
    cJSON_Delete(b);
    return out;
}

static const cJSON *mf_entry(const cJSON *obj, const char *mgr, const char *op)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"),
                                              "managedFields")) {
        if (!strcmp(cJSON_GetObjectItem(e, "manager")->valuestring, mgr) &&
            !strcmp(cJSON_GetObjectItem(e, "operation")->valuestring, op))
            return e;
    }
    return NULL;
}

static void test_apply_create_and_fields(void **state)
{
    char err[512];
    (void)state;
    cJSON *o = apply(NULL, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\","
                     "\"labels\":{\"app\":\"x\"}},\"data\":{\"k\":\"v\"}}", "kubectl", false,
                     "ConfigMap", 0, err, sizeof(err));
    const cJSON *e = mf_entry(o, "kubectl", "Apply");
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "fieldsType")->valuestring, "FieldsV1");
    assert_string_equal(cJSON_GetObjectItem(e, "apiVersion")->valuestring, "v1");
    assert_non_null(cJSON_GetObjectItem(e, "time"));
    assert_json(cJSON_GetObjectItem(e, "fieldsV1"),
                "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}},\"f:data\":{\".\":{},"
                "\"f:k\":{}}}");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "k")->valuestring, "v");
    cJSON_Delete(o);
}

static void test_apply_keyed_list_fields(void **state)
{
    char err[512];
    (void)state;
    cJSON *o = apply(NULL, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                     "\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"nginx\"}]}}",
                     "kubectl", false, "Pod", 0, err, sizeof(err));
    assert_json(cJSON_GetObjectItem(mf_entry(o, "kubectl", "Apply"), "fieldsV1"),
                "{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"web\\\"}\":"
                "{\".\":{},\"f:name\":{},\"f:image\":{}}}}}");
    /* a second manager adds a container; the first re-applies without it: kept */
    cJSON *o2 = apply(o, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                      "\"spec\":{\"containers\":[{\"name\":\"side\",\"image\":\"busybox\"}]}}",
                      "other", false, "Pod", 0, err, sizeof(err));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o2, "spec"),
                                                            "containers")), 2);
    /* the first manager drops "web": removed, "side" (owned by other) stays */
    cJSON *o3 = apply(o2, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                      "\"spec\":{}}", "kubectl", false, "Pod", 0, err, sizeof(err));
    cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(o3, "spec"), "containers");
    assert_int_equal(cJSON_GetArraySize(cs), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 0), "name")->valuestring,
                        "side");
    cJSON_Delete(o);
    cJSON_Delete(o2);
    cJSON_Delete(o3);
}

static void test_apply_keyless_elements_are_atomic(void **state)
{
    char err[512];
    (void)state;
    /* containers without a name cannot merge by key: the list is owned and replaced whole */
    const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                       "\"spec\":{\"containers\":[{\"image\":\"a\"}]}}";
    cJSON *o = apply(NULL, body, "m", false, "Pod", 0, err, sizeof(err));
    cJSON *o2 = apply(o, body, "m", false, "Pod", 0, err, sizeof(err));
    assert_json(cJSON_GetObjectItem(o2, "spec"), "{\"containers\":[{\"image\":\"a\"}]}");
    assert_json(cJSON_GetObjectItem(mf_entry(o2, "m", "Apply"), "fieldsV1"),
                "{\"f:spec\":{\"f:containers\":{}}}");
    cJSON_Delete(o);
    cJSON_Delete(o2);
}

static void test_apply_reapply_change_and_removal(void **state)
{
    char err[512];
    (void)state;
    const char *v1 = "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"r\","
                     "\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"replicas\":1,\"x\":\"y\"}}";
    const char *v2 = "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"r\","
                     "\"labels\":{\"a\":\"1\"}},\"spec\":{\"replicas\":2}}";
    cJSON *o = apply(NULL, v1, "kubectl", false, NULL, 0, err, sizeof(err));
    cJSON *o2 = apply(o, v2, "kubectl", false, NULL, 0, err, sizeof(err));
    assert_json(cJSON_GetObjectItem(o2, "spec"), "{\"replicas\":2}");
    assert_json(cJSON_GetObjectItem(cJSON_GetObjectItem(o2, "metadata"), "labels"),
                "{\"a\":\"1\"}");
    /* unchanged re-apply gives the same object apart from the timestamp */
    cJSON *o3 = apply(o2, v2, "kubectl", false, NULL, 0, err, sizeof(err));
    assert_json(cJSON_GetObjectItem(o3, "spec"), "{\"replicas\":2}");
    assert_json(cJSON_GetObjectItem(mf_entry(o3, "kubectl", "Apply"), "fieldsV1"),
                "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{}}},\"f:spec\":{"
                "\"f:replicas\":{}}}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o3, "metadata"),
                                                            "managedFields")), 1);
    cJSON_Delete(o);
    cJSON_Delete(o2);
    cJSON_Delete(o3);
}

static void test_apply_conflicts(void **state)
{
    char err[512];
    (void)state;
    cJSON *o = apply(NULL, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                     "\"data\":{\"k\":\"v\",\"s\":\"same\"}}", "alice", false, "ConfigMap", 0, err,
                     sizeof(err));
    /* same value: shared ownership, no conflict */
    cJSON *o2 = apply(o, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                      "\"data\":{\"s\":\"same\"}}", "bob", false, "ConfigMap", 0, err, sizeof(err));
    assert_non_null(o2);
    /* different value: conflict naming the field and the manager */
    cJSON *none = apply(o2, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                        "\"data\":{\"k\":\"other\"}}", "bob", false, "ConfigMap", -EEXIST, err,
                        sizeof(err));
    assert_null(none);
    assert_non_null(strstr(err, "Apply failed with 1 conflict"));
    assert_non_null(strstr(err, "conflict with \"alice\""));
    assert_non_null(strstr(err, ".data.k"));
    /* force takes it over; alice no longer owns data.k */
    cJSON *o3 = apply(o2, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                      "\"data\":{\"k\":\"other\"}}", "bob", true, "ConfigMap", 0, err, sizeof(err));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o3, "data"), "k")->valuestring,
                        "other");
    assert_json(cJSON_GetObjectItem(mf_entry(o3, "alice", "Apply"), "fieldsV1"),
                "{\"f:data\":{\".\":{},\"f:s\":{}}}");
    /* bad input */
    cJSON *x = apply(NULL, "{\"kind\":\"ConfigMap\"}", "m", false, "ConfigMap", -EINVAL, err,
                     sizeof(err));
    assert_null(x);
    x = apply(NULL, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}", "", false, "ConfigMap",
              -EINVAL, err, sizeof(err));
    assert_non_null(strstr(err, "fieldManager"));
    cJSON_Delete(o);
    cJSON_Delete(o2);
    cJSON_Delete(o3);
}

static void test_record_managed_fields(void **state)
{
    (void)state;
    cJSON *old = cJSON_Parse("{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                             "\"data\":{\"a\":\"1\"}}");
    assert_int_equal(patch_record_managed_fields(old, NULL, "creator", "Update", "v1", NULL), 0);
    assert_json(cJSON_GetObjectItem(mf_entry(old, "creator", "Update"), "fieldsV1"),
                "{\"f:data\":{\".\":{},\"f:a\":{}}}");
    cJSON *nw = cJSON_Duplicate(old, true);
    cJSON_AddStringToObject(cJSON_GetObjectItem(nw, "data"), "b", "2");
    assert_int_equal(patch_record_managed_fields(nw, old, "editor", "Update", "v1", NULL), 0);
    assert_json(cJSON_GetObjectItem(mf_entry(nw, "editor", "Update"), "fieldsV1"),
                "{\"f:data\":{\"f:b\":{}}}");
    assert_non_null(mf_entry(nw, "creator", "Update"));
    /* the editor changes a: the creator loses it, and its now-empty entry goes */
    cJSON *nw2 = cJSON_Duplicate(nw, true);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(nw2, "data"), "a", cJSON_CreateString("9"));
    assert_int_equal(patch_record_managed_fields(nw2, nw, "editor", "Update", "v1", NULL), 0);
    assert_json(cJSON_GetObjectItem(mf_entry(nw2, "creator", "Update"), "fieldsV1"),
                "{\"f:data\":{\".\":{}}}");
    assert_json(cJSON_GetObjectItem(mf_entry(nw2, "editor", "Update"), "fieldsV1"),
                "{\"f:data\":{\"f:b\":{},\"f:a\":{}}}");
    /* status subresource entry */
    cJSON *st = cJSON_Duplicate(nw2, true);
    cJSON_AddObjectToObject(st, "status");
    cJSON_AddStringToObject(cJSON_GetObjectItem(st, "status"), "phase", "Ready");
    assert_int_equal(patch_record_managed_fields(st, nw2, "ctl", "Update", "v1", "status"), 0);
    const cJSON *e = mf_entry(st, "ctl", "Update");
    assert_string_equal(cJSON_GetObjectItem(e, "subresource")->valuestring, "status");
    cJSON_Delete(old);
    cJSON_Delete(nw);
    cJSON_Delete(nw2);
    cJSON_Delete(st);
}

/* An update's ownership record looks only where the object changed: a status write's
 * candidate paths hold nothing of spec, and every path it names is under status, a
 * label that changed, or what is new; the entries it then writes are the same as before
 * (the creator keeps spec and the labels it set, the writer owns what it changed). */
static void test_record_managed_fields_changed_only(void **state)
{
    (void)state;
    cJSON *old = cJSON_Parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\","
                             "\"b\":\"2\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\","
                             "\"ports\":[{\"containerPort\":80}]}],\"tolerations\":[{\"key\":\"k\"}]},"
                             "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\","
                             "\"status\":\"False\"}]}}");
    struct fs_keys keys = { "Pod", NULL };
    struct fs_set set = { 0 };
    assert_non_null(old);
    assert_int_equal(patch_record_managed_fields(old, NULL, "creator", "Update", "v1", NULL), 0);
    cJSON *nw = cJSON_Duplicate(old, true);
    cJSON *status = cJSON_GetObjectItem(nw, "status");
    cJSON_ReplaceItemInObject(status, "phase", cJSON_CreateString("Running"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(nw, "metadata"), "labels"), "b",
                              cJSON_CreateString("3"));
    cJSON_AddStringToObject(status, "podIP", "10.0.0.1");
    assert_int_equal(patch__fs_changed(nw, old, &keys, &set), 0);
    assert_true(set.n > 0);
    for (size_t i = 0; i < set.n; i++) {
        const char *p = set.v[i].p;
        if (!strncmp(p, "f:spec", 6) || strstr(p, "f:a") || strstr(p, "f:name"))
            fail_msg("unchanged path %s among the candidates", p);
    }
    patch__fs_free(&set);
    assert_int_equal(patch_record_managed_fields(nw, old, "kubelet", "Update", "v1", "status"), 0);
    assert_json(cJSON_GetObjectItem(mf_entry(nw, "kubelet", "Update"), "fieldsV1"),
                "{\"f:metadata\":{\"f:labels\":{\"f:b\":{}}},"
                "\"f:status\":{\"f:phase\":{},\"f:podIP\":{}}}");
    const cJSON *cr = cJSON_GetObjectItem(mf_entry(nw, "creator", "Update"), "fieldsV1");
    cJSON *want = cJSON_Parse("{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{}}},\"f:spec\":{"
                              "\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},\"f:image\":{},"
                              "\"f:name\":{},\"f:ports\":{\"k:{\\\"containerPort\\\":80}\":{\".\":{},\"f:containerPort\":{}}}}},\"f:tolerations\":{}},"
                              "\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},"
                              "\"f:status\":{},\"f:type\":{}}}}}");
    if (!cr || !patch__json_equal(cr, want)) {
        char *got = cJSON_PrintUnformatted(cr);
        fail_msg("creator's fields: %s", got ? got : "(none)");
    }
    cJSON_Delete(want);
    cJSON_Delete(old);
    cJSON_Delete(nw);
}

/* A chain of n nested objects, each with two members: {"a":{...},"b":1}. */
static cJSON *nested(int n, int leaf)
{
    cJSON *o = cJSON_CreateNumber(leaf);
    for (int i = 0; i < n; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddItemToObject(p, "a", o);
        cJSON_AddNumberToObject(p, "b", 1);
        o = p;
    }
    return o;
}

static void test_json_equal_deep(void **state)
{
    (void)state;
    /* cJSON_Compare would take 2^60 steps here; this must be immediate */
    cJSON *x = nested(60, 1), *y = nested(60, 1), *z = nested(60, 2);
    assert_true(json_equal(x, y));
    assert_false(json_equal(x, z));
    cJSON *p = cJSON_Parse("{\"a\":[1,{\"b\":null}],\"c\":\"s\"}");
    cJSON *q = cJSON_Parse("{\"c\":\"s\",\"a\":[1,{\"b\":null}]}");
    cJSON *r = cJSON_Parse("{\"c\":\"s\",\"a\":[{\"b\":null},1]}");
    cJSON *t = cJSON_Parse("{\"c\":\"s\",\"a\":[1,{\"b\":null}],\"d\":1}");
    assert_true(json_equal(p, q));
    assert_false(json_equal(p, r));
    assert_false(json_equal(p, t));
    assert_false(json_equal(t, p));
    assert_true(json_equal(NULL, NULL));
    assert_false(json_equal(p, NULL));
    cJSON_Delete(x);
    cJSON_Delete(y);
    cJSON_Delete(z);
    cJSON_Delete(p);
    cJSON_Delete(q);
    cJSON_Delete(r);
    cJSON_Delete(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_rfc7386),
        cmocka_unit_test(test_merge_does_not_modify_inputs),
        cmocka_unit_test(test_merge_order_and_repeats),
        cmocka_unit_test(test_merge_copies_once),
        cmocka_unit_test(test_json_patch_ops),
        cmocka_unit_test(test_json_patch_errors),
        cmocka_unit_test(test_json_patch_op_cap),
        cmocka_unit_test(test_smp_kubectl_apply_body),
        cmocka_unit_test(test_smp_kubectl_edit_body),
        cmocka_unit_test(test_smp_directives),
        cmocka_unit_test(test_smp_table),
        cmocka_unit_test(test_smp_errors),
        cmocka_unit_test(test_apply_create_and_fields),
        cmocka_unit_test(test_apply_keyed_list_fields),
        cmocka_unit_test(test_apply_keyless_elements_are_atomic),
        cmocka_unit_test(test_apply_reapply_change_and_removal),
        cmocka_unit_test(test_apply_conflicts),
        cmocka_unit_test(test_record_managed_fields),
        cmocka_unit_test(test_record_managed_fields_changed_only),
        cmocka_unit_test(test_json_equal_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_cache.c - unit tests of cache/: segment create/attach/re-attach, put/update/
 * delete, the owner and cluster indexes, iteration, the trim table and codec,
 * capacity exhaustion, per-type rv/synced, and that a reader cannot write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/internal.h"
#include "tests/unit/cache_fixture.h"
#include "util/util.h"

static char segname[CACHE_SEGNAME_MAX];

static int setup(void **state)
{
    static int n;
    (void)state;
    snprintf(segname, sizeof(segname), "/rayop-test-cache-%d-%d", (int)getpid(), n++);
    shm_unlink(segname);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    shm_unlink(segname);
    return 0;
}

static struct cache *open_writer(size_t bytes, uint32_t objs)
{
    struct cache_config cfg = { .name = segname, .bytes = bytes, .max_objects = objs };
    struct cache *c = NULL;
    assert_int_equal(cache_writer_open(&cfg, &c), 0);
    assert_non_null(c);
    return c;
}

/* A Pod object: name, namespace, controller owner uid (NULL: none), cluster label. */
static cJSON *make_pod(const char *ns, const char *name, const char *owner, const char *cluster,
                       const char *rv)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", "Pod");
    cJSON *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(m, "resourceVersion", rv);
    if (cluster) {
        cJSON *l = cJSON_AddObjectToObject(m, "labels");
        cJSON_AddStringToObject(l, CACHE_CLUSTER_LABEL, cluster);
    }
    if (owner) {
        cJSON *refs = cJSON_AddArrayToObject(m, "ownerReferences");
        cJSON *other = cJSON_CreateObject();
        cJSON_AddStringToObject(other, "uid", "not-the-controller");
        cJSON_AddItemToArray(refs, other);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "uid", owner);
        cJSON_AddBoolToObject(r, "controller", 1);
        cJSON_AddItemToArray(refs, r);
    }
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "status"), "phase", "Running");
    return o;
}

static void put_pod(struct cache *c, int t, const char *ns, const char *name, const char *owner,
                    const char *cluster, const char *rv)
{
    cJSON *o = make_pod(ns, name, owner, cluster, rv);
    assert_int_equal(cache_put(c, t, o, NULL), 0);
    cJSON_Delete(o);
}

static void test_create_get_decode(void **state)
{
    (void)state;
    struct cache *w = open_writer(8 << 20, 1024);
    int t = cache_type_ensure(w, "v1/pods");
    assert_int_equal(t, 0);
    assert_int_equal(cache_type_ensure(w, "v1/pods"), 0);
    assert_int_equal(cache_type_ensure(w, "v1/services"), 1);
    bool created = false;
    assert_int_equal(cache_put_json(w, t, cache_fixture_worker_pod,
                                    strlen(cache_fixture_worker_pod), &created), 0);
    assert_true(created);

    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), 0);
    assert_int_equal(cache_type_lookup(r, "v1/pods"), t);
    assert_int_equal(cache_type_lookup(r, "v1/nodes"), -ENOENT);
    char buf[16384], rv[CACHE_RV_MAX];
    size_t len = 0;
    const char *name = "raycluster-kuberay-workergroup-worker-x7k2p";
    assert_int_equal(cache_get(r, t, "default", name, buf, sizeof(buf), &len, rv), 0);
    assert_string_equal(rv, "184467");
    assert_true(len > 100);
    /* too small a buffer reports the size it needs */
    size_t need = 0;
    assert_int_equal(cache_get(r, t, "default", name, buf, 10, &need, NULL), -ENOBUFS);
    assert_int_equal(need, len);
    assert_int_equal(cache_get(r, t, "other", name, buf, sizeof(buf), &len, NULL), -ENOENT);
    assert_int_equal(cache_get(r, 1, "default", name, buf, sizeof(buf), &len, NULL), -ENOENT);

    /* the stored object is the trimmed original, nothing else */
    cJSON *got = NULL;
    assert_int_equal(cache_get_json(r, t, "default", name, &got), 0);
    cJSON *want = cJSON_Parse(cache_fixture_worker_pod);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(want, "metadata"), "managedFields"));
    cache_trim(want);
    assert_true(cJSON_Compare(got, want, 1));
    cJSON_Delete(got);
    cJSON_Delete(want);

    struct cache_info info;
    assert_int_equal(cache_info(r, &info), 0);
    assert_int_equal(info.layout_version, CACHE_LAYOUT_VERSION);
    assert_int_equal(info.writer_pid, getpid());
    assert_int_equal(info.objects, 1);
    assert_int_equal(info.ntypes, 2);
    assert_true(info.generation >= 1);
    assert_true(info.bytes_used > 0 && info.bytes_used < info.blob_bytes);

    /* segment mode 0600 */
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm%s", segname);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    cache_close(r);
    cache_close(w);
}

static void test_trim_table(void **state)
{
    (void)state;
    const char *js =
        "{\"metadata\":{\"name\":\"a\",\"selfLink\":\"/api/v1/x\","
        "\"managedFields\":[{\"manager\":\"m\"}],"
        "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\","
        "\"keep\":\"me\"}},\"spec\":{\"managedFields\":1,"
        "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"x\"}}}";
    const char *trimmed =
        "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"keep\":\"me\"}},"
        "\"spec\":{\"managedFields\":1,"
        "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"x\"}}}";
    cJSON *o = cJSON_Parse(js), *want = cJSON_Parse(trimmed);
    /* on the fly (what cache_put stores) and in place agree, and only the
     * listed paths go: same-named members elsewhere stay */
    struct buf a = { 0 }, b = { 0 };
    assert_int_equal(cache__encode_opts(o, &a, true), 0);
    cache_trim(o);
    assert_true(cJSON_Compare(o, want, 1));
    assert_int_equal(cache_encode(o, &b), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    cJSON *back = NULL;
    assert_int_equal(cache_decode(a.data, a.len, &back), 0);
    assert_true(cJSON_Compare(back, want, 1));
    cJSON_Delete(back);
    cJSON_Delete(o);
    cJSON_Delete(want);
    buf_free(&a);
    buf_free(&b);
}

static void test_codec_round_trip(void **state)
{
    (void)state;
    const char *cases[] = {
        "{}", "[]", "null", "true", "0", "-1", "-33", "127", "128", "-129", "65536",
        "4294967296", "-9007199254740991", "1.5", "-2.25e-7", "1e300", "\"\"",
        "\"short\"", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"x\":\"IfNotPresent\"}",
        "[\"repeated-string\",\"repeated-string\",{\"repeated-string\":\"repeated-string\"}]",
        "{\"unknownKeyName\":{\"unknownKeyName\":[1,2,3]}}",
        "\"caf\\u00e9 \\u65e5\\u672c\"",
        "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *in = cJSON_Parse(cases[i]), *out = NULL;
        assert_non_null(in);
        struct buf b = { 0 };
        assert_int_equal(cache_encode(in, &b), 0);
        assert_int_equal(cache_decode(b.data, b.len, &out), 0);
        if (!cJSON_Compare(in, out, 1))
            fail_msg("round trip differs for %s", cases[i]);
        cJSON_Delete(in);
        cJSON_Delete(out);
        buf_free(&b);
    }
    /* a long string of 300 distinct entries exercises 2-byte lengths and refs */
    cJSON *arr = cJSON_CreateArray();
    char s[400];
    for (int i = 0; i < 300; i++) {
        memset(s, 'a' + i % 26, sizeof(s) - 1);
        s[sizeof(s) - 1] = 0;
        char num[16];
        snprintf(num, sizeof(num), "%05d", i);
        memcpy(s, num, 5); /* distinct prefixes: no accidental references */
        cJSON_AddItemToArray(arr, cJSON_CreateString(s));
        cJSON_AddItemToArray(arr, cJSON_CreateString(s));
    }
    struct buf b = { 0 };
    cJSON *out = NULL;
    assert_int_equal(cache_encode(arr, &b), 0);
    assert_true(b.len < 300 * 410); /* second copies are references */
    assert_int_equal(cache_decode(b.data, b.len, &out), 0);
    assert_true(cJSON_Compare(arr, out, 1));
    cJSON_Delete(arr);
    cJSON_Delete(out);
    buf_free(&b);
}

/* Decoded trees point their dictionary keys at the codec's static strings
 * (cJSON_StringIsConst) instead of copies: they must still compare equal to the
 * parsed JSON, and survive what reconcilers do to them (duplicate, replace,
 * detach and re-add under another key, delete) without a bad free (ASan). */
static void test_decoded_tree_is_mutable(void **state)
{
    (void)state;
    cJSON *in = cJSON_Parse(cache_fixture_worker_pod), *out = NULL;
    assert_non_null(in);
    struct buf b = { 0 };
    assert_int_equal(cache_encode(in, &b), 0);
    assert_int_equal(cache_decode(b.data, b.len, &out), 0);
    assert_true(cJSON_Compare(in, out, 1));
    cJSON *md = cJSON_GetObjectItemCaseSensitive(out, "metadata");
    assert_non_null(md);
    assert_true(cJSON_GetObjectItemCaseSensitive(out, "apiVersion")->type & cJSON_StringIsConst);
    cJSON *dup = cJSON_Duplicate(out, 1);
    assert_true(cJSON_Compare(in, dup, 1));
    assert_true(cJSON_ReplaceItemInObjectCaseSensitive(md, "labels", cJSON_CreateObject()));
    cJSON *spec = cJSON_DetachItemFromObjectCaseSensitive(out, "spec");
    assert_non_null(spec);
    cJSON_AddItemToObject(out, "renamedSpec", spec);
    assert_string_equal(spec->string, "renamedSpec");
    cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(out, "status");
    cJSON_AddItemToObject(dup, "status2", st);
    assert_false(cJSON_Compare(in, out, 1));
    cJSON_Delete(in);
    cJSON_Delete(out);
    cJSON_Delete(dup);
    buf_free(&b);
}

static void test_decode_rejects_malformed(void **state)
{
    (void)state;
    cJSON *out = (cJSON *)1;
    const struct { const char *b; size_t n; } bad[] = {
        { "", 0 },
        { "\x81", 1 },                        /* map with no entry */
        { "\xdd\xff\xff\xff\xff", 5 },        /* 4G-element array, no bytes */
        { "\xa5" "abc", 4 },                  /* short string */
        { "\x81\xcd\xff\xff\xc0", 5 },        /* key index past the dictionary */
        { "\xd4\x01\xff", 3 },                /* value index past the dictionary */
        { "\xd5\x02\x00\x00", 4 },            /* reference to no earlier string */
        { "\xd4\x07\x00", 3 },                /* unknown ext type */
        { "\xc0\xc0", 2 },                    /* trailing bytes */
        { "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", 9 }, /* NaN */
        { "\x81\xc0\xc0", 3 },                /* nil as a key */
        { "\xc1", 1 },                        /* never-used byte */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        out = (cJSON *)1;
        if (cache_decode(bad[i].b, bad[i].n, &out) != -EIO)
            fail_msg("case %zu decoded", i);
        assert_null(out);
    }
    /* nesting past the bound */
    char deep[100];
    memset(deep, 0x91, sizeof(deep));
    deep[99] = 0xc0;
    assert_int_equal(cache_decode(deep, sizeof(deep), &out), -EIO);
    cJSON *d = cJSON_CreateArray(), *cur = d;
    for (int i = 0; i < 80; i++) {
        cJSON *n = cJSON_CreateArray();
        cJSON_AddItemToArray(cur, n);
        cur = n;
    }
    struct buf b = { 0 };
    assert_int_equal(cache_encode(d, &b), -EINVAL);
    cJSON_Delete(d);
    buf_free(&b);
}

static void test_put_update_delete(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 256);
    int t = cache_type_ensure(w, "v1/pods");
    bool created = true;
    put_pod(w, t, "ns1", "a", NULL, NULL, "1");
    cJSON *o = make_pod("ns1", "a", NULL, NULL, "2");
    assert_int_equal(cache_put(w, t, o, &created), 0);
    assert_false(created);
    cJSON_Delete(o);
    char rv[CACHE_RV_MAX];
    assert_int_equal(cache_get(w, t, "ns1", "a", NULL, 0, NULL, rv), -ENOBUFS);
    assert_string_equal(rv, "2");
    struct cache_type_info ti;
    assert_int_equal(cache_type_info(w, t, &ti), 0);
    assert_int_equal(ti.objects, 1);
    put_pod(w, t, "ns2", "a", NULL, NULL, "3");
    assert_int_equal(cache_type_info(w, t, &ti), 0);
    assert_int_equal(ti.objects, 2);
    assert_int_equal(cache_delete(w, t, "ns1", "a"), 0);
    assert_int_equal(cache_delete(w, t, "ns1", "a"), -ENOENT);
    assert_int_equal(cache_get(w, t, "ns1", "a", NULL, 0, NULL, NULL), -ENOENT);
    assert_int_equal(cache_get(w, t, "ns2", "a", NULL, 0, NULL, rv), -ENOBUFS);
    assert_string_equal(rv, "3");
    /* cluster-scoped objects have namespace "" */
    cJSON *node = cJSON_Parse("{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"9\"}}");
    assert_int_equal(cache_put(w, t, node, NULL), 0);
    cJSON_Delete(node);
    assert_int_equal(cache_get(w, t, NULL, "n1", NULL, 0, NULL, rv), -ENOBUFS);
    assert_string_equal(rv, "9");
    struct cache_info info;
    cache_info(w, &info);
    assert_int_equal(info.objects, 2);
    /* bad input */
    cJSON *noname = cJSON_Parse("{\"metadata\":{\"namespace\":\"x\"}}");
    assert_int_equal(cache_put(w, t, noname, NULL), -EINVAL);
    cJSON_Delete(noname);
    assert_int_equal(cache_put_json(w, t, "{not json", 9, NULL), -EINVAL);
    assert_int_equal(cache_put(w, 7, o = make_pod("a", "b", NULL, NULL, "1"), NULL), -ENOENT);
    cJSON_Delete(o);
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    o = make_pod("ns", longname, NULL, NULL, "1");
    assert_int_equal(cache_put(w, t, o, NULL), -EINVAL);
    cJSON_Delete(o);
    assert_int_equal(cache_get(w, t, "ns", longname, NULL, 0, NULL, NULL), -EINVAL);
    assert_int_equal(cache_type_ensure(w, "x/this-type-name-is-far-too-long-to-fit-in-the-"
                                          "sixty-four-byte-table-entry"), -EINVAL);
    cache_close(w);
}

struct seen {
    int n;
    char names[64][32];
    int stop_after;
};

static int visit(const struct cache_obj *o, void *arg)
{
    struct seen *s = arg;
    if (s->n < 64)
        snprintf(s->names[s->n], sizeof(s->names[0]), "%s/%s", o->ns, o->name);
    s->n++;
    cJSON *j = NULL;
    assert_int_equal(cache_decode(o->data, o->len, &j), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "name")->valuestring,
                        o->name);
    cJSON_Delete(j);
    return s->stop_after && s->n >= s->stop_after ? 42 : 0;
}

static bool has_key(const struct cache_key *k, int n, const char *ns, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].ns, ns) && !strcmp(k[i].name, name))
            return true;
    return false;
}

static void test_indexes_follow_updates(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 256);
    int pods = cache_type_ensure(w, "v1/pods");
    int svcs = cache_type_ensure(w, "v1/services");
    put_pod(w, pods, "ns", "p1", "uid-A", "c1", "1");
    put_pod(w, pods, "ns", "p2", "uid-A", "c1", "2");
    put_pod(w, pods, "ns", "p3", "uid-B", "c2", "3");
    put_pod(w, pods, "other", "p4", "uid-A", "c1", "4");
    put_pod(w, svcs, "ns", "s1", "uid-A", "c1", "5");
    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), 0);
    struct cache_key k[8];
    assert_int_equal(cache_list_owner(r, pods, "uid-A", k, 8), 3);
    assert_true(has_key(k, 3, "ns", "p1") && has_key(k, 3, "ns", "p2") &&
                has_key(k, 3, "other", "p4"));
    assert_int_equal(cache_list_owner(r, svcs, "uid-A", k, 8), 1);
    assert_string_equal(k[0].name, "s1");
    assert_int_equal(cache_list_owner(r, pods, "not-the-controller", k, 8), 0);
    assert_int_equal(cache_list_owner(r, pods, "uid-A", k, 1), 3); /* count beyond cap */
    assert_int_equal(cache_list_owner(r, pods, "uid-A", NULL, 0), 3);
    assert_int_equal(cache_list_cluster(r, pods, "ns", "c1", k, 8), 2);
    assert_int_equal(cache_list_cluster(r, pods, "other", "c1", k, 8), 1);
    assert_int_equal(cache_list_cluster(r, pods, "ns", "c9", k, 8), 0);

    struct cache_meta meta;
    assert_int_equal(cache_stat(r, pods, "ns", "p1", &meta), 0);
    assert_string_equal(meta.owner_uid, "uid-A");
    assert_string_equal(meta.cluster, "c1");
    assert_string_equal(meta.rv, "1");
    char body[4096];
    size_t blen = 0;
    assert_int_equal(cache_get(r, pods, "ns", "p1", body, sizeof(body), &blen, NULL), 0);
    assert_int_equal(meta.len, blen);
    assert_int_equal(cache_stat(r, pods, "ns", "nope", &meta), -ENOENT);

    /* owner and label change on update: the indexes follow */
    put_pod(w, pods, "ns", "p1", "uid-B", "c2", "6");
    assert_int_equal(cache_stat(r, pods, "ns", "p1", &meta), 0);
    assert_string_equal(meta.owner_uid, "uid-B");
    assert_string_equal(meta.cluster, "c2");
    assert_string_equal(meta.rv, "6");
    assert_int_equal(cache_list_owner(r, pods, "uid-A", k, 8), 2);
    assert_false(has_key(k, 2, "ns", "p1"));
    assert_int_equal(cache_list_owner(r, pods, "uid-B", k, 8), 2);
    assert_true(has_key(k, 2, "ns", "p1"));
    assert_int_equal(cache_list_cluster(r, pods, "ns", "c2", k, 8), 2);
    assert_int_equal(cache_list_cluster(r, pods, "ns", "c1", k, 8), 1);
    /* losing owner and label drops it from both */
    put_pod(w, pods, "ns", "p1", NULL, NULL, "7");
    assert_int_equal(cache_list_owner(r, pods, "uid-B", k, 8), 1);
    assert_int_equal(cache_list_cluster(r, pods, "ns", "c2", k, 8), 1);
    /* delete removes from the indexes */
    assert_int_equal(cache_delete(w, pods, "ns", "p2"), 0);
    assert_int_equal(cache_list_owner(r, pods, "uid-A", k, 8), 1);
    assert_string_equal(k[0].name, "p4");

    struct seen s = { 0 };
    assert_int_equal(cache_foreach_owner(r, pods, "uid-B", visit, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.names[0], "ns/p3");
    memset(&s, 0, sizeof(s));
    assert_int_equal(cache_foreach_cluster(r, pods, "other", "c1", visit, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.names[0], "other/p4");
    cache_close(r);
    cache_close(w);
}

static void test_iteration(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 256);
    int pods = cache_type_ensure(w, "v1/pods");
    int svcs = cache_type_ensure(w, "v1/services");
    char name[32];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(w, pods, i % 3 ? "a" : "b", name, NULL, NULL, "1");
    }
    put_pod(w, svcs, "a", "s", NULL, NULL, "1");
    assert_int_equal(cache_delete(w, pods, "b", "p0"), 0);
    struct seen s = { 0 };
    assert_int_equal(cache_foreach(w, pods, NULL, visit, &s), 0);
    assert_int_equal(s.n, 29);
    memset(&s, 0, sizeof(s));
    assert_int_equal(cache_foreach(w, pods, "b", visit, &s), 0);
    assert_int_equal(s.n, 9);
    for (int i = 0; i < s.n; i++)
        assert_memory_equal(s.names[i], "b/", 2);
    memset(&s, 0, sizeof(s));
    assert_int_equal(cache_foreach(w, svcs, NULL, visit, &s), 0);
    assert_int_equal(s.n, 1);
    memset(&s, 0, sizeof(s));
    s.stop_after = 5;
    assert_int_equal(cache_foreach(w, pods, NULL, visit, &s), 42);
    assert_int_equal(s.n, 5);
    assert_int_equal(cache_foreach(w, 9, NULL, visit, &s), -ENOENT);
    cache_close(w);
}

static void test_rv_synced(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 64);
    int t = cache_type_ensure(w, "ray.io/v1/rayclusters");
    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), 0);
    struct cache_type_info ti;
    assert_int_equal(cache_type_info(r, t, &ti), 0);
    assert_string_equal(ti.name, "ray.io/v1/rayclusters");
    assert_string_equal(ti.rv, "");
    assert_false(ti.synced);
    assert_int_equal(cache_set_rv(w, t, "12345"), 0);
    assert_int_equal(cache_set_synced(w, t, true), 0);
    assert_int_equal(cache_type_info(r, t, &ti), 0);
    assert_string_equal(ti.rv, "12345");
    assert_true(ti.synced);
    assert_int_equal(cache_type_info(r, 5, &ti), -ENOENT);
    /* readers cannot use writer calls */
    assert_int_equal(cache_set_rv(r, t, "1"), -EINVAL);
    assert_int_equal(cache_type_ensure(r, "v1/pods"), -EINVAL);
    cJSON *o = make_pod("a", "b", NULL, NULL, "1");
    assert_int_equal(cache_put(r, t, o, NULL), -EINVAL);
    cJSON_Delete(o);
    cache_close(r);
    cache_close(w);
}

static void test_reattach_keeps_objects(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 256);
    int t = cache_type_ensure(w, "v1/pods");
    char name[32];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(w, t, "ns", name, i % 2 ? "uid-odd" : "uid-even", "c", "1");
    }
    cache_delete(w, t, "ns", "p7");
    cache_set_rv(w, t, "777");
    cache_set_synced(w, t, true);
    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), 0);
    struct cache_info before;
    cache_info(r, &before);
    cache_close(w);

    /* a reader keeps working while no writer is attached */
    struct cache_key k[64];
    assert_int_equal(cache_list_owner(r, t, "uid-odd", k, 64), 24);

    w = open_writer(4 << 20, 256);
    struct cache_info after;
    cache_info(r, &after);
    assert_true(after.epoch > before.epoch);
    assert_int_equal(after.objects, 49);
    assert_int_equal(after.bytes_used, before.bytes_used);
    assert_int_equal(cache_type_lookup(w, "v1/pods"), t);
    struct cache_type_info ti;
    assert_int_equal(cache_type_info(w, t, &ti), 0);
    assert_string_equal(ti.rv, "777");
    assert_true(ti.synced);
    assert_int_equal(ti.objects, 49);
    assert_int_equal(cache_list_owner(r, t, "uid-odd", k, 64), 24);
    assert_int_equal(cache_list_cluster(r, t, "ns", "c", k, 64), 49);
    assert_int_equal(cache_get(r, t, "ns", "p7", NULL, 0, NULL, NULL), -ENOENT);
    /* and the writer carries on: update, delete, new objects reuse space */
    put_pod(w, t, "ns", "p1", "uid-even", "c", "2");
    assert_int_equal(cache_list_owner(r, t, "uid-odd", k, 64), 23);
    assert_int_equal(cache_delete(w, t, "ns", "p2"), 0);
    put_pod(w, t, "ns", "p100", NULL, NULL, "3");
    assert_int_equal(cache_get(r, t, "ns", "p100", NULL, 0, NULL, NULL), -ENOBUFS);
    cache_close(r);
    cache_close(w);

    /* another capacity replaces the segment instead of misreading it */
    w = open_writer(8 << 20, 256);
    struct cache_info fresh;
    cache_info(w, &fresh);
    assert_int_equal(fresh.objects, 0);
    cache_close(w);
}

static void test_reattach_drops_torn_write(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 64);
    int t = cache_type_ensure(w, "v1/pods");
    put_pod(w, t, "ns", "a", "u", "c", "1");
    put_pod(w, t, "ns", "b", "u", "c", "1");
    put_pod(w, t, "ns", "c", "u", "c", "1");
    /* simulate a writer killed mid-update: slot 1's seq odd and its record
     * half-written; slot 2's seq odd but its record intact (died while
     * relinking a neighbour) */
    struct cache_slot *s1 = &w->slots[1], *s2 = &w->slots[2];
    atomic_fetch_add(&s1->seq, 1);
    atomic_fetch_add(&s2->seq, 1);
    w->blob[LD(s1->blob_off) + sizeof(struct cache_rec) + 5] ^= 0x55;
    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), 0);
    /* readers of the stuck slot give up with -EAGAIN, boundedly */
    uint64_t t0 = util_now_ns();
    assert_int_equal(cache_get(r, t, "ns", "b", NULL, 0, NULL, NULL), -EAGAIN);
    assert_true(util_now_ns() - t0 < 2000ull * 1000 * 1000);
    cache_close(w);

    w = open_writer(4 << 20, 64);
    assert_int_equal(cache_get(r, t, "ns", "a", NULL, 0, NULL, NULL), -ENOBUFS);
    assert_int_equal(cache_get(r, t, "ns", "b", NULL, 0, NULL, NULL), -ENOENT);
    assert_int_equal(cache_get(r, t, "ns", "c", NULL, 0, NULL, NULL), -ENOBUFS);
    struct cache_key k[4];
    assert_int_equal(cache_list_owner(r, t, "u", k, 4), 2);
    struct cache_info info;
    cache_info(r, &info);
    assert_int_equal(info.objects, 2);
    /* the re-delivered event restores it */
    put_pod(w, t, "ns", "b", "u", "c", "2");
    assert_int_equal(cache_list_owner(r, t, "u", k, 4), 3);
    cache_close(r);
    cache_close(w);
}

static void test_capacity_objects(void **state)
{
    (void)state;
    struct cache *w = open_writer(2 << 20, 8);
    int t = cache_type_ensure(w, "v1/pods");
    char name[16];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(w, t, "ns", name, NULL, NULL, "1");
    }
    cJSON *o = make_pod("ns", "p8", NULL, NULL, "1");
    assert_int_equal(cache_put(w, t, o, NULL), -ENOSPC);
    struct cache_info info;
    cache_info(w, &info);
    assert_int_equal(info.refused_writes, 1);
    assert_int_equal(info.objects, 8);
    /* updates of stored objects still go through; a delete makes room */
    put_pod(w, t, "ns", "p3", NULL, NULL, "2");
    assert_int_equal(cache_delete(w, t, "ns", "p0"), 0);
    assert_int_equal(cache_put(w, t, o, NULL), 0);
    cJSON_Delete(o);
    cache_close(w);
}

static cJSON *pod_with_payload(const char *name, size_t n, char fill)
{
    cJSON *o = make_pod("ns", name, NULL, NULL, "1");
    char *p = malloc(n + 1);
    memset(p, fill, n);
    p[n] = 0;
    cJSON_AddStringToObject(cJSON_GetObjectItem(o, "status"), "blob", p);
    free(p);
    return o;
}

static void test_capacity_bytes_and_compaction(void **state)
{
    (void)state;
    struct cache *w = open_writer(CACHE_MIN_BYTES, 4096);
    int t = cache_type_ensure(w, "v1/pods");
    struct cache_info info;
    cache_info(w, &info);
    /* fill with 1000-byte objects until refused */
    char name[16];
    int n = 0;
    for (;; n++) {
        snprintf(name, sizeof(name), "p%d", n);
        cJSON *o = pod_with_payload(name, 1000, 'a' + n % 26);
        int rc = cache_put(w, t, o, NULL);
        cJSON_Delete(o);
        if (rc) {
            assert_int_equal(rc, -ENOSPC);
            break;
        }
    }
    assert_true(n > 100);
    cache_info(w, &info);
    assert_int_equal(info.refused_writes, 1);
    /* free every other one: plenty of bytes, but only in 1 KiB holes */
    for (int i = 0; i < n; i += 2) {
        snprintf(name, sizeof(name), "p%d", i);
        assert_int_equal(cache_delete(w, t, "ns", name), 0);
    }
    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), 0);
    /* 3000-byte objects fit only after compaction */
    for (int i = 0; i < n / 8; i++) {
        snprintf(name, sizeof(name), "big%d", i);
        cJSON *o = pod_with_payload(name, 3000, 'z');
        assert_int_equal(cache_put(w, t, o, NULL), 0);
        cJSON_Delete(o);
    }
    cache_info(r, &info);
    assert_true(info.compactions >= 1);
    /* everything survived the moves intact */
    for (int i = 1; i < n; i += 2) {
        snprintf(name, sizeof(name), "p%d", i);
        cJSON *j = NULL;
        assert_int_equal(cache_get_json(r, t, "ns", name, &j), 0);
        const char *b = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"), "blob")->valuestring;
        assert_int_equal(strlen(b), 1000);
        assert_int_equal(b[0], 'a' + i % 26);
        cJSON_Delete(j);
    }
    cache_close(r);
    cache_close(w);
}


static void test_growth(void **state)
{
    (void)state;
    struct cache_config cfg = { .name = segname, .bytes = CACHE_MIN_BYTES, .max_objects = 8,
                                .max_bytes = 4 * CACHE_MIN_BYTES };
    struct cache *w = NULL, *r = NULL;
    assert_int_equal(cache_writer_open(&cfg, &w), 0);
    int t = cache_type_ensure(w, "v1/pods");
    cache_set_rv(w, t, "55");
    cache_set_synced(w, t, true);
    assert_int_equal(cache_reader_open(segname, &r), 0);
    char name[16];
    for (int i = 0; i < 20; i++) { /* 8 slots -> 16 -> 32 */
        snprintf(name, sizeof(name), "p%d", i);
        put_pod(w, t, "ns", name, "uid-1", "c", "1");
    }
    struct cache_info info;
    cache_info(w, &info);
    assert_int_equal(info.grows, 2);
    assert_int_equal(info.max_objects, 32);
    assert_int_equal(info.objects, 20);
    assert_int_equal(info.refused_writes, 0);
    /* the old reader is told, and follows */
    assert_int_equal(cache_get(r, t, "ns", "p0", NULL, 0, NULL, NULL), -ESTALE);
    cache_info(r, &info);
    assert_string_equal(info.moved_to, segname);
    assert_int_equal(cache_reader_refresh(r), 0);
    assert_int_equal(cache_reader_refresh(r), 0);
    struct cache_key k[32];
    assert_int_equal(cache_list_owner(r, t, "uid-1", k, 32), 20);
    struct cache_type_info ti;
    assert_int_equal(cache_type_info(r, t, &ti), 0);
    assert_string_equal(ti.rv, "55");
    assert_true(ti.synced);
    assert_int_equal(ti.objects, 20);
    /* a restarted writer with the original flags keeps the grown segment */
    cache_close(w);
    assert_int_equal(cache_writer_open(&cfg, &w), 0);
    cache_info(w, &info);
    assert_int_equal(info.objects, 20);
    assert_int_equal(info.max_objects, 32);
    assert_int_equal(cache_reader_refresh(r), 0);
    assert_int_equal(cache_get(r, t, "ns", "p19", NULL, 0, NULL, NULL), -ENOBUFS);
    /* past max_bytes it refuses, loudly */
    int refused = 0;
    for (int i = 20; i < 200 && !refused; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        cJSON *o = pod_with_payload(name, 20000, 'g');
        int rc = cache_put(w, t, o, NULL);
        cJSON_Delete(o);
        if (rc) {
            assert_int_equal(rc, -ENOSPC);
            refused = 1;
        }
    }
    assert_true(refused);
    cache_info(w, &info);
    assert_int_equal(info.bytes_total, 4 * CACHE_MIN_BYTES);
    assert_int_equal(info.refused_writes, 1);
    cache_close(r);
    cache_close(w);
    char tmp[CACHE_SEGNAME_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.grow", segname);
    assert_int_equal(shm_unlink(tmp), -1); /* nothing left behind */

    /* a writer that died after retiring the old segment but before the switch:
     * readers get -ESTALE (never a frozen view), the next writer clears it */
    assert_int_equal(cache_writer_open(&cfg, &w), 0);
    assert_int_equal(cache_reader_open(segname, &r), 0);
    atomic_store(&w->hdr->retired, 1);
    assert_int_equal(cache_get(r, t, "ns", "p3", NULL, 0, NULL, NULL), -ESTALE);
    assert_int_equal(cache_reader_refresh(r), -EAGAIN);
    cache_close(w);
    assert_int_equal(cache_writer_open(&cfg, &w), 0);
    assert_int_equal(cache_get(r, t, "ns", "p3", NULL, 0, NULL, NULL), -ENOBUFS);
    cache_close(r);
    cache_close(w);
}

static void test_reader_cannot_write(void **state)
{
    (void)state;
    struct cache *w = open_writer(2 << 20, 16);
    cache_type_ensure(w, "v1/pods");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct cache *r = NULL;
        signal(SIGSEGV, SIG_DFL); /* cmocka's handler would catch it */
        if (cache_reader_open(segname, &r))
            _exit(3);
        /* the mapping is PROT_READ: this store must fault */
        ((volatile uint8_t *)r->base)[CACHE_HDR_SIZE + 1] = 1;
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    cache_close(w);
}

static void test_reader_rejects_foreign_segments(void **state)
{
    (void)state;
    struct cache *r = NULL;
    assert_int_equal(cache_reader_open(segname, &r), -ENOENT);
    assert_int_equal(cache_reader_open("no-slash", &r), -EINVAL);
    /* garbage of a plausible size: the writer replaces it, a reader refuses it */
    int fd = shm_open(segname, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 2 << 20), 0);
    char junk[4096];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    close(fd);
    assert_int_equal(cache_reader_open(segname, &r), -EIO);
    struct cache *w = open_writer(2 << 20, 16);
    assert_int_equal(cache_reader_open(segname, &r), 0);
    cache_close(r);
    cache_close(w);
}

static void test_size_target(void **state)
{
    (void)state;
    struct cache *w = open_writer(4 << 20, 16);
    int t = cache_type_ensure(w, "v1/pods");
    size_t json = strlen(cache_fixture_worker_pod);
    assert_int_equal(cache_put_json(w, t, cache_fixture_worker_pod, json, NULL), 0);
    struct cache_info info;
    cache_info(w, &info);
    /* record + slot + three bucket words: everything a cached Pod costs */
    size_t per = info.bytes_used + sizeof(struct cache_slot) + 12;
    printf("# worker pod: %zu JSON bytes -> %zu cached bytes (%.1f%%)\n", json, per,
           100.0 * (double)per / (double)json);
    assert_true(per * 3 <= json);
    cache_close(w);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_get_decode, setup, teardown),
        cmocka_unit_test(test_trim_table),
        cmocka_unit_test(test_codec_round_trip),
        cmocka_unit_test(test_decoded_tree_is_mutable),
        cmocka_unit_test(test_decode_rejects_malformed),
        cmocka_unit_test_setup_teardown(test_put_update_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indexes_follow_updates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iteration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rv_synced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reattach_keeps_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reattach_drops_torn_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_bytes_and_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_cannot_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_rejects_foreign_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_target, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

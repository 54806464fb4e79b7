/*
 * cache_bench_main.c - bin/cache_bench: the shared cache against a naive
 * in-process informer on the same Pods.
 *
 * Builds a segment of N KubeRay worker Pods (tests/unit/cache_fixture.h with
 * name, uid, owner, cluster label and IP varied; 10 Pods per RayCluster) and,
 * in the same process, a uthash of cJSON trees with an owner index - the way a
 * client-go style informer written in C would hold them. Prints put rate,
 * get and index-list latency (p50/p99, per call, clock overhead included and
 * reported) and bytes per object against the JSON the server sent.
 *
 *   cache_bench [--pods N] [--per-owner K] [--samples S] [--list podlist.json]
 *
 * --list takes the Pods from a List as a server sent it instead of the fixture.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "cache/cache.h"
#include "tests/unit/cache_fixture.h"
#include "util/util.h"

struct base_obj { /* the naive informer's store entry */
    char key[320];
    cJSON *obj;
    UT_hash_handle hh;
};

struct base_owner {
    char uid[64];
    struct base_obj **items;
    size_t n, cap;
    UT_hash_handle hh;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void pct(const char *what, uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    printf("  %-44s p50 %8.0f ns   p99 %8.0f ns\n", what, (double)v[n / 2],
           (double)v[n * 99 / 100]);
}

static int count_obj(const struct cache_obj *o, void *arg)
{
    (void)o;
    (*(int *)arg)++;
    return 0;
}

struct podkey { /* what the latency loops pick from */
    char ns[CACHE_NS_MAX];
    char name[CACHE_NAME_MAX];
    char owner[CACHE_UID_MAX];
    char cluster[CACHE_LABEL_MAX];
};

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = 0;
}

/* Fills k from an object's metadata (controller owner, cluster label). */
static void podkey_from(struct podkey *k, const cJSON *obj)
{
    const cJSON *m = cJSON_GetObjectItem(obj, "metadata"), *r;
    copy_str(k->ns, sizeof(k->ns), cJSON_GetStringValue(cJSON_GetObjectItem(m, "namespace")));
    copy_str(k->name, sizeof(k->name), cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")));
    copy_str(k->cluster, sizeof(k->cluster), cJSON_GetStringValue(cJSON_GetObjectItem(
                 cJSON_GetObjectItem(m, "labels"), CACHE_CLUSTER_LABEL)));
    k->owner[0] = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(m, "ownerReferences"))
        if (cJSON_IsTrue(cJSON_GetObjectItem(r, "controller")))
            copy_str(k->owner, sizeof(k->owner), cJSON_GetStringValue(cJSON_GetObjectItem(r, "uid")));
}

/* Pods from a List the server sent (e.g. `curl .../api/v1/pods > list.json`). */
static int load_list(const char *path, char ***jsons, int *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    struct buf b = { 0 };
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (buf_append(&b, chunk, got))
            break;
    fclose(f);
    cJSON *list = cJSON_ParseWithLength(b.data ? b.data : "", b.len);
    buf_free(&b);
    cJSON *items = cJSON_GetObjectItem(list, "items"), *it;
    int count = cJSON_GetArraySize(items);
    if (!list || count < 1) {
        cJSON_Delete(list);
        return -EINVAL;
    }
    *jsons = calloc((size_t)count, sizeof(**jsons));
    *n = 0;
    cJSON_ArrayForEach(it, items)
        (*jsons)[(*n)++] = cJSON_PrintUnformatted(it); /* about the bytes a GET would send */
    cJSON_Delete(list);
    return 0;
}

/* npods variations of the fixture: name, uid, owner, cluster label and IP differ. */
static char **fixture_pods(int npods, int per_owner)
{
    cJSON *pod = cJSON_Parse(cache_fixture_worker_pod);
    cJSON *meta = cJSON_GetObjectItem(pod, "metadata");
    cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(meta, "ownerReferences"), 0);
    cJSON *labels = cJSON_GetObjectItem(meta, "labels");
    cJSON *status = cJSON_GetObjectItem(pod, "status");
    char **jsons = calloc((size_t)npods, sizeof(*jsons));
    char nm[128], buf[64];
    for (int i = 0; i < npods; i++) {
        snprintf(nm, sizeof(nm), "raycluster-%05d-workergroup-worker-%05d", i / per_owner, i);
        cJSON_SetValuestring(cJSON_GetObjectItem(meta, "name"), nm);
        snprintf(buf, sizeof(buf), "5d3c8a8e-1f0b-4c1e-9a3f-%012d", i);
        cJSON_SetValuestring(cJSON_GetObjectItem(meta, "uid"), buf);
        snprintf(buf, sizeof(buf), "0b9f3e2a-7c41-4d7e-8f20-%012d", i / per_owner);
        cJSON_SetValuestring(cJSON_GetObjectItem(ref, "uid"), buf);
        snprintf(buf, sizeof(buf), "raycluster-%05d", i / per_owner);
        cJSON_SetValuestring(cJSON_GetObjectItem(labels, CACHE_CLUSTER_LABEL), buf);
        cJSON_SetValuestring(cJSON_GetObjectItem(ref, "name"), buf);
        snprintf(buf, sizeof(buf), "10.%d.%d.%d", i >> 16 & 255, i >> 8 & 255, i & 255);
        cJSON_SetValuestring(cJSON_GetObjectItem(status, "podIP"), buf);
        jsons[i] = cJSON_PrintUnformatted(pod);
    }
    cJSON_Delete(pod);
    return jsons;
}

int main(int argc, char **argv)
{
    int npods = 10000, per_owner = 10;
    size_t samples = 200000;
    const char *list_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--list"))
            list_path = argv[i + 1];
        else if (!strcmp(argv[i], "--pods"))
            npods = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--per-owner"))
            per_owner = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--samples"))
            samples = (size_t)atol(argv[i + 1]);
    }
    if (npods < 1 || per_owner < 1 || samples < 100) {
        fprintf(stderr, "usage: cache_bench [--pods N>=1] [--per-owner K>=1] [--samples S>=100] "
                        "[--list podlist.json]\n");
        return 2;
    }
    log_set_level(LOG_WARN);
    int rc;

    char **jsons = NULL;
    if (list_path) {
        if ((rc = load_list(list_path, &jsons, &npods))) {
            fprintf(stderr, "%s: %s\n", list_path, strerror(-rc));
            return 1;
        }
    } else {
        jsons = fixture_pods(npods, per_owner);
    }
    size_t json_bytes = 0;
    struct podkey *keyv = calloc((size_t)npods, sizeof(*keyv));
    for (int i = 0; i < npods; i++) {
        cJSON *o = cJSON_Parse(jsons[i]);
        podkey_from(&keyv[i], o);
        cJSON_Delete(o);
        json_bytes += strlen(jsons[i]);
    }

    char seg[CACHE_SEGNAME_MAX];
    snprintf(seg, sizeof(seg), "/rayop-bench-%d", (int)getpid());
    struct cache_config cfg = { .name = seg, .bytes = (size_t)npods * 8192 + (16u << 20),
                                .max_objects = (uint32_t)npods + 1024 };
    struct cache *w = NULL, *r = NULL;
    rc = cache_writer_open(&cfg, &w);
    if (rc) {
        fprintf(stderr, "cache_writer_open: %s\n", strerror(-rc));
        return 1;
    }
    int t = cache_type_ensure(w, "v1/pods");

    /* ---- fill the segment (what the watcher does per event: parse + put) */
    uint64_t t0 = util_now_ns();
    for (int i = 0; i < npods; i++)
        if ((rc = cache_put_json(w, t, jsons[i], strlen(jsons[i]), NULL))) {
            fprintf(stderr, "put: %s\n", strerror(-rc));
            return 1;
        }
    uint64_t put_ns = util_now_ns() - t0;
    cJSON *pre = cJSON_Parse(jsons[0]);
    t0 = util_now_ns();
    for (int i = 0; i < 20000; i++)
        cache_put(w, t, pre, NULL); /* same key: update path, JSON parse excluded */
    uint64_t upd_ns = (util_now_ns() - t0) / 20000;
    cJSON_Delete(pre);

    /* ---- the naive informer: parsed trees in a hash, plus an owner index */
    struct util_heap m0, m1;
    util_heap_stats(&m0);
    struct base_obj *store = NULL;
    struct base_owner *owners = NULL;
    t0 = util_now_ns();
    for (int i = 0; i < npods; i++) {
        struct base_obj *o = calloc(1, sizeof(*o));
        o->obj = cJSON_Parse(jsons[i]);
        cJSON *mt = cJSON_GetObjectItem(o->obj, "metadata");
        cJSON_DeleteItemFromObject(mt, "managedFields"); /* TransformStripManagedFields */
        snprintf(o->key, sizeof(o->key), "%s/%s",
                 cJSON_GetStringValue(cJSON_GetObjectItem(mt, "namespace")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(mt, "name")));
        HASH_ADD_STR(store, key, o);
        const char *uid = keyv[i].owner;
        struct base_owner *ow;
        HASH_FIND_STR(owners, uid, ow);
        if (!ow) {
            ow = calloc(1, sizeof(*ow));
            snprintf(ow->uid, sizeof(ow->uid), "%s", uid);
            HASH_ADD_STR(owners, uid, ow);
        }
        if (ow->n == ow->cap) {
            ow->cap = ow->cap ? ow->cap * 2 : 8;
            ow->items = realloc(ow->items, ow->cap * sizeof(*ow->items));
        }
        ow->items[ow->n++] = o;
    }
    uint64_t base_fill_ns = util_now_ns() - t0;
    util_heap_stats(&m1);
    size_t base_bytes = m1.in_use - m0.in_use;

    if ((rc = cache_reader_open(seg, &r))) {
        fprintf(stderr, "cache_reader_open: %s\n", strerror(-rc));
        return 1;
    }
    struct cache_info info;
    cache_info(r, &info);
    /* steady state: fault the reader's fresh mapping in once, as a running
     * reconciler would have (otherwise p99 measures minor page faults) */
    int warm = 0;
    cache_foreach(r, t, NULL, count_obj, &warm);

    /* ---- latencies */
    uint64_t *lat = malloc(samples * sizeof(*lat));
    static char out[65536];
    size_t len;
    struct timespec a, b;
    srand48(1);
#define TIMED(stmt)                                                                  \
    do {                                                                             \
        clock_gettime(CLOCK_MONOTONIC, &a);                                          \
        stmt;                                                                        \
        clock_gettime(CLOCK_MONOTONIC, &b);                                          \
        lat[s] = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec)); \
    } while (0)

    if (list_path)
        printf("cache_bench: %d Pods from %s, %zu samples per figure\n", npods, list_path, samples);
    else
        printf("cache_bench: %d worker Pods, %d per RayCluster, %zu samples per figure\n", npods,
               per_owner, samples);
    printf("\nlatency (per call, timer overhead included):\n");
    for (size_t s = 0; s < samples; s++)
        TIMED((void)0);
    pct("clock_gettime pair (overhead)", lat, samples);
    for (size_t s = 0; s < samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        TIMED(rc = cache_get(r, t, k->ns, k->name, out, sizeof(out), &len, NULL));
        if (rc) {
            fprintf(stderr, "get %s/%s: %s\n", k->ns, k->name, strerror(-rc));
            return 1;
        }
    }
    pct("shm cache_get (copy msgpack out)", lat, samples);
    size_t dec_samples = samples / 10;
    for (size_t s = 0; s < dec_samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        cJSON *j = NULL;
        TIMED(rc = cache_get_json(r, t, k->ns, k->name, &j));
        cJSON_Delete(j);
    }
    pct("shm cache_get_json (copy + decode)", lat, dec_samples);
    for (size_t s = 0; s < samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", k->ns, k->name);
        struct base_obj *o;
        TIMED(HASH_FIND_STR(store, key, o));
        if (!o)
            return 1;
    }
    pct("baseline hash lookup (pointer, no copy)", lat, samples);
    for (size_t s = 0; s < dec_samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", k->ns, k->name);
        struct base_obj *o;
        cJSON *copy = NULL;
        TIMED(HASH_FIND_STR(store, key, o); copy = cJSON_Duplicate(o->obj, 1));
        cJSON_Delete(copy);
    }
    pct("baseline lookup + deep copy (c-r Get)", lat, dec_samples);

    struct cache_key keys[256];
    for (size_t s = 0; s < samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        TIMED(rc = cache_list_owner(r, t, k->owner, keys, 256));
        if (rc < (k->owner[0] ? 1 : 0))
            return 1;
    }
    pct("shm owner-index list (keys)", lat, samples);
    for (size_t s = 0; s < samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        TIMED(rc = cache_list_cluster(r, t, k->ns, k->cluster, keys, 256));
        if (rc < (k->cluster[0] ? 1 : 0))
            return 1;
    }
    pct("shm ray.io/cluster label list (keys)", lat, samples);
    for (size_t s = 0; s < samples; s++) {
        const struct podkey *k = &keyv[lrand48() % npods];
        struct base_owner *ow;
        /* copy the keys out, as the shm list does */
        TIMED(HASH_FIND_STR(owners, k->owner, ow); for (size_t j = 0; ow && j < ow->n && j < 256; j++)
              memcpy(keys[j].name, ow->items[j]->key, sizeof(keys[j].name)));
    }
    pct("baseline owner index (keys)", lat, samples);

    printf("\nsize per Pod:\n");
    double jpp = (double)json_bytes / npods;
    double spp = (double)info.bytes_used / (double)info.objects;
    double slot = 64.0 + 12.0; /* slot + three bucket words */
    printf("  JSON as served (with managedFields)       %8.0f bytes\n", jpp);
    printf("  shm record (trimmed, dictionary msgpack)  %8.0f bytes  (%.1f%% of JSON)\n", spp,
           100.0 * spp / jpp);
    printf("  shm record + slot + index words           %8.0f bytes  (%.1f%% of JSON)\n",
           spp + slot, 100.0 * (spp + slot) / jpp);
    printf("  baseline cJSON tree (managedFields gone)  %8.0f bytes  (%.1f%% of JSON, malloc'd)\n",
           (double)base_bytes / npods, 100.0 * (double)base_bytes / npods / jpp);
    printf("\nwrite path:\n");
    printf("  cache_put_json (parse+trim+encode+store)  %8.2f us/object (%d objects, fresh)\n",
           (double)put_ns / 1e3 / npods, npods);
    printf("  cache_put of a parsed object (update)     %8.2f us\n", (double)upd_ns / 1e3);
    printf("  baseline parse + store                    %8.2f us/object\n",
           (double)base_fill_ns / 1e3 / npods);
    printf("  segment: %llu of %llu object bytes used, %llu objects, %llu compactions\n",
           (unsigned long long)info.bytes_used, (unsigned long long)info.blob_bytes,
           (unsigned long long)info.objects, (unsigned long long)info.compactions);

    /* ---- restarts: a reconciler mapping the segment and reading its first
     * object; the watcher re-attaching (rebuild over every stored object) */
    cache_close(r);
    const struct podkey *k0 = &keyv[npods / 2];
    t0 = util_now_ns();
    if ((rc = cache_reader_open(seg, &r)) ||
        (rc = cache_get(r, cache_type_lookup(r, "v1/pods"), k0->ns, k0->name, out, sizeof(out),
                        &len, NULL))) {
        fprintf(stderr, "reader reopen: %s\n", strerror(-rc));
        return 1;
    }
    uint64_t ropen_ns = util_now_ns() - t0;
    cache_close(w);
    t0 = util_now_ns();
    if ((rc = cache_writer_open(&cfg, &w))) {
        fprintf(stderr, "writer re-attach: %s\n", strerror(-rc));
        return 1;
    }
    uint64_t wopen_ns = util_now_ns() - t0;
    cache_info(r, &info);
    printf("\nrestart:\n");
    printf("  reader open + first get                   %8.3f ms\n", (double)ropen_ns / 1e6);
    printf("  writer re-attach (rebuild, %llu objects)  %8.3f ms\n",
           (unsigned long long)info.objects, (double)wopen_ns / 1e6);

    cache_close(r);
    cache_close(w);
    cache_unlink(seg);
    struct base_obj *o, *tmp;
    HASH_ITER(hh, store, o, tmp) {
        HASH_DEL(store, o);
        cJSON_Delete(o->obj);
        free(o);
    }
    struct base_owner *ow, *otmp;
    HASH_ITER(hh, owners, ow, otmp) {
        HASH_DEL(owners, ow);
        free(ow->items);
        free(ow);
    }
    for (int i = 0; i < npods; i++)
        cJSON_free(jsons[i]);
    free(jsons);
    free(keyv);
    free(lat);
    return 0;
}

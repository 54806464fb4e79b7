/* fuzz_cache_segment.c - fuzzed bytes as a cache segment image, then every reader
 * call on it; and the same bytes through the msgpack decoder.
 *
 * A real segment (40 Pods with owners and cluster labels, one deleted) is built
 * once; each input patches a copy of it:
 *   byte 0 even: the rest is a list of patches {u32 offset (LE, taken modulo the
 *                image size), u8 length, length bytes};
 *   byte 0 odd:  the rest overwrites the image from offset 0 (the header).
 * Readers must return a result or an error - never read outside the image
 * (ASan), crash or spin (the wait deadline is set to zero). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/internal.h"
#include "util/util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *tmpl, *img;
static size_t tmpl_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_ERROR);
    char name[CACHE_SEGNAME_MAX];
    snprintf(name, sizeof(name), "/rayop-fuzz-cache-%d", (int)getpid());
    shm_unlink(name);
    struct cache_config cfg = { .name = name, .bytes = CACHE_MIN_BYTES, .max_objects = 64 };
    struct cache *w = NULL;
    if (cache_writer_open(&cfg, &w))
        abort();
    int pods = cache_type_ensure(w, "v1/pods");
    cache_type_ensure(w, "ray.io/v1/rayclusters");
    char js[512];
    for (int i = 0; i < 40; i++) {
        int n = snprintf(js, sizeof(js),
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%d\","
                         "\"namespace\":\"ns\",\"resourceVersion\":\"%d\",\"labels\":{"
                         "\"ray.io/cluster\":\"cluster-%d\"},\"ownerReferences\":[{\"uid\":"
                         "\"owner-%d\",\"controller\":true}]},\"spec\":{\"containers\":[{\"name\":"
                         "\"ray-worker\",\"image\":\"rayproject/ray:2.46.0\"}]},\"status\":{"
                         "\"phase\":\"Running\",\"podIP\":\"10.0.0.%d\"}}",
                         i, 100 + i, i % 4, i % 4, i);
        if (cache_put_json(w, pods, js, (size_t)n, NULL))
            abort();
    }
    cache_delete(w, pods, "ns", "pod-5");
    cache_set_rv(w, pods, "140");
    tmpl_len = w->size;
    tmpl = malloc(tmpl_len);
    img = malloc(tmpl_len);
    if (!tmpl || !img)
        abort();
    memcpy(tmpl, w->base, tmpl_len);
    cache_close(w);
    shm_unlink(name);
    cache__wait_deadline_ns = 0;
    return 0;
}

static int visit(const struct cache_obj *o, void *arg)
{
    cJSON *j = NULL;
    if (cache_decode(o->data, o->len, &j) == 0)
        cJSON_Delete(j);
    (*(int *)arg)++;
    return 0;
}

static void reader_calls(struct cache *c)
{
    char buf[4096], rv[CACHE_RV_MAX], nm[32];
    size_t len;
    int n = 0;
    struct cache_key keys[4];
    struct cache_info info;
    struct cache_type_info ti;
    (void)cache_info(c, &info);
    (void)cache_type_lookup(c, "v1/pods");
    for (int t = -1; t <= 2; t++)
        (void)cache_type_info(c, t, &ti);
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < 40; i += 7) {
            snprintf(nm, sizeof(nm), "pod-%d", i);
            (void)cache_get(c, t, "ns", nm, buf, sizeof(buf), &len, rv);
            struct cache_meta meta;
            (void)cache_stat(c, t, "ns", nm, &meta);
            cJSON *j = NULL;
            if (cache_get_json(c, t, "ns", nm, &j) == 0)
                cJSON_Delete(j);
        }
        (void)cache_list_owner(c, t, "owner-1", keys, 4);
        (void)cache_list_cluster(c, t, "ns", "cluster-2", keys, 4);
        (void)cache_foreach(c, t, NULL, visit, &n);
        (void)cache_foreach(c, t, "ns", visit, &n);
        (void)cache_foreach_owner(c, t, "owner-3", visit, &n);
        (void)cache_foreach_cluster(c, t, "ns", "cluster-0", visit, &n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    cJSON *j = NULL;
    if (cache_decode(data + 1, size - 1, &j) == 0)
        cJSON_Delete(j);
    memcpy(img, tmpl, tmpl_len);
    if (data[0] & 1) {
        size_t n = size - 1 < tmpl_len ? size - 1 : tmpl_len;
        memcpy(img, data + 1, n);
    } else {
        for (size_t i = 1; i + 5 <= size;) {
            uint32_t off = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 |
                           (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24;
            size_t n = data[i + 4];
            i += 5;
            if (n > size - i)
                n = size - i;
            size_t at = off % tmpl_len;
            if (n > tmpl_len - at)
                n = tmpl_len - at;
            memcpy(img + at, data + i, n);
            i += n;
        }
    }
    struct cache *c = NULL;
    if (cache__open_image(img, tmpl_len, &c) == 0) {
        reader_calls(c);
        cache_close(c);
    }
    return 0;
}

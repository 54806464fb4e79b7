/* test_cache_corrupt.c - readers over a segment full of garbage: a copy of a real
 * segment is filled with random bytes (whole, by region, or a few flipped bytes,
 * plus hand-made cycles and out-of-range offsets) and every reader call runs on
 * it. They must return (an error or a result), quickly, without touching memory
 * outside the image - the ASan build turns any stray read into a failure.
 * RAYOP_CORRUPT_ROUNDS sets the number of images (default 3000, 600 under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/internal.h"
#include "tests/unit/cache_fixture.h"
#include "util/util.h"

static uint8_t *tmpl;
static size_t tmpl_len;
static struct cache_hdr geo; /* the template's geometry */

static int visit(const struct cache_obj *o, void *arg)
{
    int *n = arg;
    cJSON *j = NULL;
    if (cache_decode(o->data, o->len, &j) == 0)
        cJSON_Delete(j);
    (*n)++;
    return 0;
}

/* Every reader call; returns how many succeeded (for the report). */
static int run_reader_calls(struct cache *c)
{
    int ok = 0, n = 0;
    char buf[16384], rv[CACHE_RV_MAX], nm[32];
    size_t len;
    struct cache_key keys[8];
    struct cache_info info;
    struct cache_type_info ti;
    ok += cache_info(c, &info) == 0;
    ok += cache_type_lookup(c, "v1/pods") >= 0;
    ok += cache_type_lookup(c, "ray.io/v1/rayclusters") >= 0;
    for (int t = -1; t <= CACHE_MAX_TYPES; t++)
        ok += cache_type_info(c, t, &ti) == 0;
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < 40; i += 3) {
            snprintf(nm, sizeof(nm), "pod-%d", i);
            ok += cache_get(c, t, "ns", nm, buf, sizeof(buf), &len, rv) == 0;
            ok += cache_get(c, t, "ns", nm, buf, 8, &len, NULL) == 0;
            struct cache_meta meta;
            ok += cache_stat(c, t, "ns", nm, &meta) == 0;
            cJSON *j = NULL;
            if (cache_get_json(c, t, "ns", nm, &j) == 0) {
                ok++;
                cJSON_Delete(j);
            }
        }
        ok += cache_list_owner(c, t, "owner-1", keys, 8) >= 0;
        ok += cache_list_cluster(c, t, "ns", "cluster-2", keys, 8) >= 0;
        ok += cache_foreach(c, t, NULL, visit, &n) == 0;
        ok += cache_foreach(c, t, "ns", visit, &n) == 0;
        ok += cache_foreach_owner(c, t, "owner-2", visit, &n) == 0;
        ok += cache_foreach_cluster(c, t, "ns", "cluster-1", visit, &n) == 0;
    }
    return ok;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static void fill_random(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        rng ^= rng << 13; /* xorshift64: lrand48 per byte would dominate the run */
        rng ^= rng >> 7;
        rng ^= rng << 17;
        memcpy(p + i, &rng, n - i < 8 ? n - i : 8);
    }
}

static int setup_group(void **state)
{
    (void)state;
    char name[CACHE_SEGNAME_MAX];
    snprintf(name, sizeof(name), "/rayop-test-corrupt-%d", (int)getpid());
    shm_unlink(name);
    struct cache_config cfg = { .name = name, .bytes = CACHE_MIN_BYTES, .max_objects = 64 };
    struct cache *w = NULL;
    if (cache_writer_open(&cfg, &w))
        return -1;
    int pods = cache_type_ensure(w, "v1/pods");
    cache_type_ensure(w, "ray.io/v1/rayclusters");
    cJSON *pod = cJSON_Parse(cache_fixture_worker_pod);
    cJSON *meta = cJSON_GetObjectItem(pod, "metadata");
    cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(meta, "ownerReferences"), 0);
    cJSON *labels = cJSON_GetObjectItem(meta, "labels");
    char buf[32];
    for (int i = 0; i < 40; i++) {
        snprintf(buf, sizeof(buf), "pod-%d", i);
        cJSON_SetValuestring(cJSON_GetObjectItem(meta, "name"), buf);
        cJSON_SetValuestring(cJSON_GetObjectItem(meta, "namespace"), "ns");
        snprintf(buf, sizeof(buf), "owner-%d", i % 4);
        cJSON_SetValuestring(cJSON_GetObjectItem(ref, "uid"), buf);
        snprintf(buf, sizeof(buf), "cluster-%d", i % 4);
        cJSON_SetValuestring(cJSON_GetObjectItem(labels, CACHE_CLUSTER_LABEL), buf);
        if (cache_put(w, pods, pod, NULL))
            return -1;
    }
    cache_delete(w, pods, "ns", "pod-5"); /* a free slot and a hole */
    cache_set_rv(w, pods, "42");
    cJSON_Delete(pod);
    tmpl_len = w->size;
    tmpl = malloc(tmpl_len);
    memcpy(tmpl, w->base, tmpl_len);
    memcpy(&geo, w->base, sizeof(geo));
    cache_close(w);
    shm_unlink(name);
    cache__wait_deadline_ns = 0; /* a stuck slot gives up after the spins */
    return 0;
}

static int teardown_group(void **state)
{
    (void)state;
    free(tmpl);
    return 0;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_template_is_readable(void **state)
{
    (void)state;
    uint8_t *img = malloc(tmpl_len);
    memcpy(img, tmpl, tmpl_len);
    struct cache *c = NULL;
    assert_int_equal(cache__open_image(img, tmpl_len, &c), 0);
    char buf[16384];
    size_t len;
    assert_int_equal(cache_get(c, 0, "ns", "pod-3", buf, sizeof(buf), &len, NULL), 0);
    assert_int_equal(cache_get(c, 0, "ns", "pod-5", buf, sizeof(buf), &len, NULL), -ENOENT);
    struct cache_key k[16];
    assert_int_equal(cache_list_owner(c, 0, "owner-1", k, 16), 9); /* pod-5 deleted */
    cache_close(c);
    free(img);
}

static void test_random_images(void **state)
{
    (void)state;
    const char *e = getenv("RAYOP_CORRUPT_ROUNDS");
#if defined(__SANITIZE_ADDRESS__)
    long rounds = e && *e ? atol(e) : 600; /* every decode allocates: ASan is slow at it */
#else
    long rounds = e && *e ? atol(e) : 3000;
#endif
    size_t geo_end = offsetof(struct cache_hdr, writer_pid);
    uint8_t *img = malloc(tmpl_len);
    long opened = 0, calls_ok = 0;
    uint64_t worst = 0;
    srand48(12345);
    for (long r = 0; r < rounds; r++) {
        memcpy(img, tmpl, tmpl_len);
        int mode = (int)(r % 8);
        switch (mode) {
        case 0: /* everything, header included */
            fill_random(img, tmpl_len);
            break;
        case 1: /* everything past the geometry */
            fill_random(img + geo_end, tmpl_len - geo_end);
            break;
        case 2:
            fill_random(img + geo.slots_off, (size_t)(geo.key_off - geo.slots_off));
            break;
        case 3:
            fill_random(img + geo.key_off, (size_t)(geo.blob_off - geo.key_off));
            break;
        case 4:
            fill_random(img + geo.blob_off, (size_t)geo.blob_size);
            break;
        case 5: /* a few flipped bytes anywhere past the geometry */
            for (int k = 1 + (int)(lrand48() % 64); k > 0; k--)
                img[geo_end + (size_t)lrand48() % (tmpl_len - geo_end)] ^= (uint8_t)(1 + lrand48() % 255);
            break;
        case 6: { /* adversarial slot fields: cycles, edge offsets, huge lengths */
            struct cache_slot *s = (struct cache_slot *)(img + geo.slots_off);
            for (int k = 0; k < 16; k++) {
                struct cache_slot *x = &s[lrand48() % 64];
                switch (lrand48() % 5) {
                case 0: ST(x->key_next, (uint32_t)(x - s) + 1); break;       /* self loop */
                case 1: ST(x->blob_off, geo.blob_size - 8); break;
                case 2: ST(x->blob_len, 0xffffffffu); break;
                case 3: ST(x->owner_next, (uint32_t)lrand48()); break;
                default: ST(x->blob_off, (uint64_t)lrand48() << 20); break;
                }
            }
            break;
        }
        default: { /* records whose inner lengths lie */
            struct cache_slot *s = (struct cache_slot *)(img + geo.slots_off);
            for (int k = 0; k < 8; k++) {
                struct cache_slot *x = &s[lrand48() % 40];
                uint64_t off = LD(x->blob_off);
                if (off + sizeof(struct cache_rec) <= geo.blob_size)
                    fill_random(img + geo.blob_off + off + 8, sizeof(struct cache_rec) - 8);
            }
            break;
        }
        }
        /* half the time, force the gate open so the walks really run */
        if (mode != 0 && (r & 8)) {
            struct cache_hdr *h = (struct cache_hdr *)img;
            ST(h->state, CACHE_STATE_OK);
            ST(h->retired, 0);
            ST(h->ntypes, 2);
        }
        struct cache *c = NULL;
        if (cache__open_image(img, tmpl_len, &c) != 0)
            continue;
        opened++;
        /* CPU time, not wall time: what a looping reader burns; a loaded machine
         * (CI runs tests side by side) stretches wall time without any loop */
        uint64_t t0 = thread_cpu_ns();
        calls_ok += run_reader_calls(c);
        uint64_t dt = thread_cpu_ns() - t0;
        worst = dt > worst ? dt : worst;
        cache_close(c);
    }
    free(img);
    printf("# %ld images, %ld opened, %ld reader calls succeeded, slowest round %.1f ms of CPU\n",
           rounds, opened, calls_ok, (double)worst / 1e6);
    assert_true(opened > rounds / 2);
    assert_true(worst < 2000ull * 1000 * 1000);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_is_readable),
        cmocka_unit_test(test_random_images),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}

/* test_cache_stress.c - one writer process and several reader processes hammer one
 * segment; every object embeds a checksum of its own content, and readers verify
 * every object they copy out: a single torn read fails the test.
 *
 * RAYOP_STRESS_UPDATES sets the writer's update count (default 1,000,000),
 * RAYOP_STRESS_SECONDS a time cap on it (default 12, so a loaded 2-core machine
 * stays under ~20 s; at least 10,000 updates must happen), RAYOP_STRESS_READERS
 * the reader count (default 3). The second test
 * SIGKILLs the writer again and again mid-stream and restarts it: readers still
 * never see a torn object, and the re-attached writer carries on. */
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/internal.h"
#include "util/util.h"

#define NOBJ    2000
#define NOWNERS 50
#define MAXRD   16

struct shared { /* anonymous shared memory between the test processes */
    _Atomic int stop;
    uint64_t writer_deadline_ms; /* the writer stops here even if updates remain */
    _Atomic uint64_t updates;
    _Atomic uint64_t verified[MAXRD];
    _Atomic uint64_t listed[MAXRD];
    _Atomic uint64_t eagain[MAXRD];
    _Atomic uint64_t torn[MAXRD];
    _Atomic uint64_t other_err[MAXRD];
    _Atomic int last_err[MAXRD];
};

static char segname[CACHE_SEGNAME_MAX];
static char payload_src[4096];

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

static uint64_t content_sum(const char *name, const char *rv, const char *owner, const char *pl)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(fnv(fnv(fnv(h, name), rv), owner), pl);
    return h;
}

static uint64_t env_u64(const char *k, uint64_t def)
{
    const char *v = getenv(k);
    return v && *v ? strtoull(v, NULL, 10) : def;
}

/* The object: metadata (name, rv, controller owner, cluster label) and a
 * spec whose sum covers name, rv, owner and a payload of varying length. */
static cJSON *make_obj(cJSON **rv, cJSON **uid, cJSON **lbl, cJSON **owner, cJSON **pl, cJSON **sum)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(m, "name", "x");
    cJSON_AddStringToObject(m, "namespace", "stress");
    *rv = cJSON_AddStringToObject(m, "resourceVersion", "0");
    cJSON *r = cJSON_CreateObject();
    *uid = cJSON_AddStringToObject(r, "uid", "owner-0");
    cJSON_AddBoolToObject(r, "controller", 1);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "ownerReferences"), r);
    *lbl = cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "labels"), CACHE_CLUSTER_LABEL, "c");
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    *owner = cJSON_AddStringToObject(spec, "owner", "owner-0");
    *pl = cJSON_AddStringToObject(spec, "payload", "");
    *sum = cJSON_AddStringToObject(spec, "sum", "0");
    return o;
}

static void writer_loop(struct shared *sh, uint64_t updates, uint64_t seed)
{
    struct cache_config cfg = { .name = segname, .bytes = 5 << 19, .max_objects = 4096 };
    struct cache *c = NULL;
    if (cache_writer_open(&cfg, &c))
        _exit(2);
    int t = cache_type_ensure(c, "stress/v1/things");
    cJSON *rv, *uid, *lbl, *owner, *pl, *sum;
    cJSON *o = make_obj(&rv, &uid, &lbl, &owner, &pl, &sum);
    cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name");
    srand48((long)seed);
    char buf[4096], nm[32], rvs[32], own[32], lb[32], sums[32];
    while (atomic_load(&sh->updates) < updates && util_now_ms() < sh->writer_deadline_ms) {
        uint64_t u = atomic_fetch_add(&sh->updates, 1);
        int i = (int)(lrand48() % NOBJ);
        snprintf(nm, sizeof(nm), "obj-%d", i);
        if (lrand48() % 10 == 0) {
            int rc = cache_delete(c, t, "stress", nm);
            if (rc && rc != -ENOENT)
                _exit(3);
            continue;
        }
        size_t len = (size_t)(lrand48() % 1500);
        size_t at = (size_t)(lrand48() % (long)(sizeof(payload_src) - len - 1));
        memcpy(buf, payload_src + at, len);
        buf[len] = 0;
        snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)u);
        snprintf(own, sizeof(own), "owner-%ld", lrand48() % NOWNERS);
        snprintf(lb, sizeof(lb), "c-%ld", lrand48() % NOWNERS);
        snprintf(sums, sizeof(sums), "%016llx", (unsigned long long)content_sum(nm, rvs, own, buf));
        cJSON_SetValuestring(name, nm);
        cJSON_SetValuestring(rv, rvs);
        cJSON_SetValuestring(uid, own);
        cJSON_SetValuestring(owner, own);
        cJSON_SetValuestring(lbl, lb);
        cJSON_SetValuestring(pl, buf);
        cJSON_SetValuestring(sum, sums);
        if (cache_put(c, t, o, NULL))
            _exit(4);
    }
    cJSON_Delete(o);
    cache_close(c);
    _exit(0);
}

/* 0 if the copied object is intact, 1 if torn. */
static int verify(const void *data, size_t len, const char *key_name, const char *rec_owner)
{
    cJSON *j = NULL;
    if (cache_decode(data, len, &j))
        return 1;
    cJSON *m = cJSON_GetObjectItem(j, "metadata"), *spec = cJSON_GetObjectItem(j, "spec");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
    const char *rv = cJSON_GetStringValue(cJSON_GetObjectItem(m, "resourceVersion"));
    const char *owner = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "owner"));
    const char *pl = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "payload"));
    const char *sum = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "sum"));
    int bad = 1;
    if (name && rv && owner && pl && sum && !strcmp(name, key_name) &&
        (!rec_owner || !strcmp(rec_owner, owner))) {
        char want[32];
        snprintf(want, sizeof(want), "%016llx", (unsigned long long)content_sum(name, rv, owner, pl));
        bad = strcmp(want, sum) != 0;
    }
    cJSON_Delete(j);
    return bad;
}

struct fe_arg {
    struct shared *sh;
    int id;
};

static int fe_visit(const struct cache_obj *o, void *arg)
{
    struct fe_arg *a = arg;
    if (verify(o->data, o->len, o->name, o->owner_uid))
        atomic_fetch_add(&a->sh->torn[a->id], 1);
    else
        atomic_fetch_add(&a->sh->verified[a->id], 1);
    return 0;
}

static void note(struct shared *sh, int id, int rc)
{
    if (rc == -EAGAIN) {
        /* the writer is rebuilding or dead: back off instead of starving it */
        atomic_fetch_add(&sh->eagain[id], 1);
        usleep(200);
    } else if (rc && rc != -ENOENT) {
        atomic_fetch_add(&sh->other_err[id], 1);
        atomic_store(&sh->last_err[id], rc);
    }
}

static void reader_loop(struct shared *sh, int id)
{
    struct cache *c = NULL;
    uint64_t deadline = util_now_ns() + 10ull * 1000 * 1000 * 1000;
    int rc;
    while ((rc = cache_reader_open(segname, &c)) != 0) {
        if (util_now_ns() > deadline)
            _exit(2);
        usleep(1000);
    }
    int t = -1;
    while ((t = cache_type_lookup(c, "stress/v1/things")) < 0) {
        if (util_now_ns() > deadline)
            _exit(3);
        usleep(1000);
    }
    srand48(id * 7919 + 1);
    static char buf[8192];
    struct cache_key keys[NOBJ];
    struct fe_arg fa = { sh, id };
    for (uint64_t n = 0; !atomic_load(&sh->stop); n++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "obj-%ld", lrand48() % NOBJ);
        size_t len = 0;
        if (n % 1000 == 999) {
            note(sh, id, cache_foreach(c, t, "stress", fe_visit, &fa));
            continue;
        }
        if (n % 50 == 49) {
            char own[32];
            snprintf(own, sizeof(own), "owner-%ld", lrand48() % NOWNERS);
            rc = cache_list_owner(c, t, own, keys, NOBJ);
            note(sh, id, rc < 0 ? rc : 0);
            for (int k = 0; k < rc && k < NOBJ; k++) {
                /* a torn index entry would show as a key that was never written */
                int idx;
                char tail;
                if (strcmp(keys[k].ns, "stress") ||
                    sscanf(keys[k].name, "obj-%d%c", &idx, &tail) != 1 || idx < 0 || idx >= NOBJ)
                    atomic_fetch_add(&sh->torn[id], 1);
            }
            if (rc >= 0)
                atomic_fetch_add(&sh->listed[id], 1);
            continue;
        }
        rc = cache_get(c, t, "stress", nm, buf, sizeof(buf), &len, NULL);
        if (rc == 0) {
            if (verify(buf, len, nm, NULL))
                atomic_fetch_add(&sh->torn[id], 1);
            else
                atomic_fetch_add(&sh->verified[id], 1);
        } else {
            note(sh, id, rc);
        }
    }
    cache_close(c);
    _exit(0);
}

static struct shared *shared_new(void)
{
    struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    return sh;
}

static int setup(void **state)
{
    (void)state;
    snprintf(segname, sizeof(segname), "/rayop-test-stress-%d", (int)getpid());
    shm_unlink(segname);
    for (size_t i = 0; i < sizeof(payload_src); i++)
        payload_src[i] = (char)('a' + (i * 7 + i / 13) % 26);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    shm_unlink(segname);
    return 0;
}

static void report(struct shared *sh, int nr, const char *what, uint64_t ms)
{
    uint64_t v = 0, l = 0, e = 0, t = 0, o = 0;
    for (int i = 0; i < nr; i++) {
        v += sh->verified[i];
        l += sh->listed[i];
        e += sh->eagain[i];
        t += sh->torn[i];
        o += sh->other_err[i];
        if (sh->other_err[i])
            printf("# reader %d: last error %d\n", i, sh->last_err[i]);
    }
    printf("# %s: %llu updates in %llu ms, readers verified %llu objects, %llu index lists, "
           "%llu EAGAIN, %llu torn, %llu other errors\n",
           what, (unsigned long long)sh->updates, (unsigned long long)ms, (unsigned long long)v,
           (unsigned long long)l, (unsigned long long)e, (unsigned long long)t,
           (unsigned long long)o);
    assert_int_equal(t, 0);
    assert_int_equal(o, 0);
    assert_true(v > 10000);
    assert_true(l > 100);
}

static pid_t spawn_writer(struct shared *sh, uint64_t updates, uint64_t seed)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        signal(SIGSEGV, SIG_DFL);
        writer_loop(sh, updates, seed);
    }
    return p;
}

static void wait_ok(pid_t p)
{
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("child %d: status %#x", (int)p, st);
}

static void test_no_torn_reads(void **state)
{
    (void)state;
    struct shared *sh = shared_new();
    uint64_t updates = env_u64("RAYOP_STRESS_UPDATES", 1000000);
    int nr = (int)env_u64("RAYOP_STRESS_READERS", 3);
    nr = nr < 1 ? 1 : nr > MAXRD ? MAXRD : nr;
    uint64_t t0 = util_now_ms();
    sh->writer_deadline_ms = t0 + 1000 * env_u64("RAYOP_STRESS_SECONDS", 12);
    pid_t w = spawn_writer(sh, updates, 1);
    pid_t r[MAXRD];
    for (int i = 0; i < nr; i++) {
        r[i] = fork();
        assert_true(r[i] >= 0);
        if (r[i] == 0) {
            signal(SIGSEGV, SIG_DFL);
            reader_loop(sh, i);
        }
    }
    wait_ok(w);
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < nr; i++)
        wait_ok(r[i]);
    report(sh, nr, "steady", util_now_ms() - t0);
    assert_true(sh->updates >= (updates < 10000 ? updates : 10000)); /* ASan under load is slow */

    /* the final state is whole: every stored object verifies */
    struct cache *c = NULL;
    assert_int_equal(cache_reader_open(segname, &c), 0);
    struct shared *chk = shared_new();
    struct fe_arg fa = { chk, 0 };
    assert_int_equal(cache_foreach(c, cache_type_lookup(c, "stress/v1/things"), NULL, fe_visit, &fa), 0);
    struct cache_info info;
    cache_info(c, &info);
    assert_int_equal(chk->torn[0], 0);
    assert_int_equal(chk->verified[0], info.objects);
    printf("# final: %llu objects, %llu compactions\n", (unsigned long long)info.objects,
           (unsigned long long)info.compactions);
    cache_close(c);
    munmap(chk, sizeof(*chk));
    munmap(sh, sizeof(*sh));
}

static void test_writer_killed_and_restarted(void **state)
{
    (void)state;
    struct shared *sh = shared_new();
    uint64_t updates = env_u64("RAYOP_STRESS_UPDATES", 1000000) / 4;
    int nr = 2;
    uint64_t t0 = util_now_ms();
    sh->writer_deadline_ms = t0 + 1000 * env_u64("RAYOP_STRESS_SECONDS", 12) / 2;
    pid_t w = spawn_writer(sh, updates, 2);
    pid_t r[2];
    for (int i = 0; i < nr; i++) {
        r[i] = fork();
        assert_true(r[i] >= 0);
        if (r[i] == 0) {
            signal(SIGSEGV, SIG_DFL);
            reader_loop(sh, i);
        }
    }
    int kills = 0;
    srand48(3);
    uint64_t since = 0;
    for (;;) {
        struct timespec ts = { 0, (20 + lrand48() % 60) * 1000000L };
        nanosleep(&ts, NULL);
        int st;
        pid_t done = waitpid(w, &st, WNOHANG);
        if (done == w) {
            assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
            break;
        }
        /* kill only a writer that got going (slow under ASan and load): each kill
         * then lands mid-stream, and the run always makes progress */
        if (atomic_load(&sh->updates) < since + 100)
            continue;
        kill(w, SIGKILL);
        assert_int_equal(waitpid(w, &st, 0), w);
        kills++;
        since = atomic_load(&sh->updates);
        w = spawn_writer(sh, updates, 10 + (uint64_t)kills);
    }
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < nr; i++)
        wait_ok(r[i]);
    printf("# writer SIGKILLed and re-attached %d times\n", kills);
    report(sh, nr, "killed", util_now_ms() - t0);
    assert_true(kills >= 3);

    struct cache *c = NULL;
    assert_int_equal(cache_reader_open(segname, &c), 0);
    struct shared *chk = shared_new();
    struct fe_arg fa = { chk, 0 };
    assert_int_equal(cache_foreach(c, cache_type_lookup(c, "stress/v1/things"), NULL, fe_visit, &fa), 0);
    struct cache_info info;
    cache_info(c, &info);
    assert_int_equal(chk->torn[0], 0);
    assert_int_equal(chk->verified[0], info.objects);
    assert_true(info.epoch >= 2); /* at least one re-attach got as far as the rebuild */
    assert_true(sh->updates >= 100u * (uint64_t)kills);
    cache_close(c);
    munmap(chk, sizeof(*chk));
    munmap(sh, sizeof(*sh));
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_torn_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer_killed_and_restarted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

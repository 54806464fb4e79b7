/* test_store_prepare.c - writes prepared outside the store's lock (write.c, patch.c):
 * a write held in its validation does not hold up other writes or reads, and the
 * commit of a write prepared against an object that changed meanwhile is redone
 * (patch), refused with the real Conflict (PUT with a resourceVersion) or
 * AlreadyExists (create of a taken name); a guessed resourceVersion is corrected,
 * and watchers see the events in resourceVersion order.
 *
 * A test hook (store__test_prepare_hook) holds the first write of a given name at the
 * start of its validation until the test opens the gate. Every wait has a deadline;
 * on a missed deadline the gate is opened before the test fails, so a write that
 * blocked on the lock can finish and the store can close. */
#include "tests/unit/kubesim/store_testlib.h"

#include <pthread.h>

#include "kubesim/store/internal.h"
#include "util/util.h"

#define DEADLINE_MS 10000

static struct store *S;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static char gate_name[64];      /* the first write of this name waits in validation */
static bool gate_entered, gate_open;

static void gate_hook(const char *name)
{
    pthread_mutex_lock(&gate_mu);
    if (gate_name[0] && !strcmp(name, gate_name) && !gate_entered) {
        gate_entered = true;
        pthread_cond_broadcast(&gate_cv);
        while (!gate_open)
            pthread_cond_wait(&gate_cv, &gate_mu);
    }
    pthread_mutex_unlock(&gate_mu);
}

static void gate_release(void)
{
    pthread_mutex_lock(&gate_mu);
    gate_open = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

static int setup(void **state)
{
    (void)state;
    S = tl_open(NULL, 100);
    gate_name[0] = 0;
    gate_entered = gate_open = false;
    store__test_prepare_hook = gate_hook;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gate_release();
    store__test_prepare_hook = NULL;
    store_close(S);
    S = NULL;
    return 0;
}

/* Waits until *flag (under gate_mu) is true; false when the deadline passed. */
static bool wait_flag(bool *flag)
{
    struct timespec ts;
    bool ok;

    util_deadline_ms(&ts, DEADLINE_MS);
    pthread_mutex_lock(&gate_mu);
    while (!*flag && pthread_cond_timedwait(&gate_cv, &gate_mu, &ts) == 0)
        ;
    ok = *flag;
    pthread_mutex_unlock(&gate_mu);
    return ok;
}

/* One write run on its own thread: what it did and what it got. */
struct job {
    enum { JOB_CREATE, JOB_MERGE_STATUS, JOB_MERGE, JOB_PUT } kind;
    const char *name;
    const char *body;           /* JSON: the object, or the patch */
    int rc;
    struct store_status st;
    struct store_obj *out;
    bool done;                  /* under gate_mu */
    bool joined;
    pthread_t th;
};

static const struct reg_resource *pods(void)
{
    return tl_res(S, "", "v1", "pods");
}

static void *job_run(void *arg)
{
    struct job *j = arg;

    switch (j->kind) {
    case JOB_CREATE:
        j->rc = store_create(S, pods(), "default", cJSON_Parse(j->body), NULL, &j->out, &j->st);
        break;
    case JOB_MERGE_STATUS:
    case JOB_MERGE:
        j->rc = store_patch(S, pods(), "default", j->name,
                            j->kind == JOB_MERGE_STATUS ? "status" : NULL, PATCH_MERGE, j->body,
                            strlen(j->body), NULL, &j->out, NULL, &j->st);
        break;
    case JOB_PUT:
        j->rc = store_update(S, pods(), "default", j->name, NULL, cJSON_Parse(j->body), NULL,
                             &j->out, &j->st);
        break;
    }
    pthread_mutex_lock(&gate_mu);
    j->done = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    return NULL;
}

static void job_start(struct job *j)
{
    assert_int_equal(pthread_create(&j->th, NULL, job_run, j), 0);
}

static void job_join(struct job *j)
{
    if (!j->joined)
        pthread_join(j->th, NULL);
    j->joined = true;
}

static void job_end(struct job *j)
{
    job_join(j);
    store_status_clear(&j->st);
    store_obj_unref(j->out);
}

/* Starts j and waits until it is held at the gate (its name is gate_name). */
static void job_start_held(struct job *j)
{
    pthread_mutex_lock(&gate_mu);
    snprintf(gate_name, sizeof(gate_name), "%s", j->name);
    gate_entered = gate_open = false;
    pthread_mutex_unlock(&gate_mu);
    job_start(j);
    if (!wait_flag(&gate_entered)) {
        gate_release();
        job_join(j);
        fail_msg("the write of %s never reached its validation", j->name);
    }
}

/* Waits for j to finish while the held write is still held; on a missed deadline
 * opens the gate (so j can finish), then fails. */
static void job_wait_while_held(struct job *j, struct job *held)
{
    if (wait_flag(&j->done))
        return;
    gate_release();
    job_join(held);
    job_join(j);
    fail_msg("%s waited for the write held in its validation", j->name);
}

static char *pod_body(const char *name, const char *labels)
{
    static char b[512];

    snprintf(b, sizeof(b), "{\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"containers\":"
             "[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}", name, labels ? labels : "");
    return strdup(b);
}

static uint64_t stored_rv(const char *name)
{
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    uint64_t rv;

    assert_int_equal(store_get(S, pods(), "default", name, &o, &st), 0);
    rv = o->rv;
    /* the text agrees with the number (a Pod is kept as text alone) */
    assert_int_equal(strtoull(tl_meta(o, "resourceVersion"), NULL, 10), rv);
    store_obj_unref(o);
    return rv;
}

/* A create held in its validation holds up neither other creates, status patches
 * nor reads; committed later, it gets the next resourceVersion even when the one it
 * was printed with was taken meanwhile by a number with fewer digits (99 -> 101). */
static void test_prepare_holds_no_lock(void **state)
{
    (void)state;
    char *slow = pod_body("slow", NULL), *fast = pod_body("fast", NULL),
         *other = pod_body("other", NULL), *slow2 = pod_body("slow2", NULL);
    struct job a = { .kind = JOB_CREATE, .name = "slow", .body = slow };
    struct job b = { .kind = JOB_CREATE, .name = "fast", .body = fast };
    struct job c = { .kind = JOB_MERGE_STATUS, .name = "other",
                     .body = "{\"status\":{\"phase\":\"Running\"}}" };
    struct store_watch_opts wo = { .resource_version = NULL };
    struct store_status st = { 0 };
    struct store_watch *w = NULL;
    struct store_event ev = { 0 };
    char nm[32];
    uint64_t from;

    store_obj_unref(tl_create(S, pods(), "default", cJSON_Parse(other)));
    for (int i = 0; store_current_rv(S) < 97; i++) {
        snprintf(nm, sizeof(nm), "filler-%d", i);
        store_obj_unref(tl_create(S, tl_res(S, "", "v1", "configmaps"), "default",
                                  tl_json("{\"metadata\":{\"name\":\"%s\"}}", nm)));
    }
    from = store_current_rv(S);
    assert_int_equal(from, 97);
    snprintf(nm, sizeof(nm), "%llu", (unsigned long long)from);
    wo.resource_version = nm;
    assert_int_equal(store_watch_open(S, pods(), "default", &wo, &w, &st), 0);

    job_start_held(&a);         /* printed with resourceVersion 98 */
    job_start(&b);
    job_wait_while_held(&b, &a);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.out->rv, 98);
    job_start(&c);
    job_wait_while_held(&c, &a);
    assert_int_equal(c.rc, 0);
    assert_int_equal(c.out->rv, 99);
    store_obj_unref(tl_create(S, tl_res(S, "", "v1", "configmaps"), "default",
                              tl_json("{\"metadata\":{\"name\":\"cm-100\"}}")));
    assert_int_equal(stored_rv("fast"), 98);

    gate_release();
    job_join(&a);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.out->rv, 101);
    assert_int_equal(stored_rv("slow"), 101);
    assert_string_equal(tl_meta(a.out, "resourceVersion"), "101");

    /* the Pods' watch: fast (98), other (99), slow (101), in that order */
    const char *want[] = { "fast", "other", "slow" };
    const uint64_t want_rv[] = { 98, 99, 101 };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(store_watch_next(w, DEADLINE_MS, &ev), 0);
        assert_string_equal(ev.obj->name, want[i]);
        assert_int_equal(ev.obj->rv, want_rv[i]);
        store_event_clear(&ev);
    }
    store_watch_close(w);

    /* printed with 102, committed as 103: the same number of digits, set in place */
    struct job d = { .kind = JOB_CREATE, .name = "slow2", .body = slow2 };
    job_start_held(&d);
    store_obj_unref(tl_create(S, tl_res(S, "", "v1", "configmaps"), "default",
                              tl_json("{\"metadata\":{\"name\":\"cm-102\"}}")));
    gate_release();
    job_join(&d);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.out->rv, 103);
    assert_int_equal(stored_rv("slow2"), 103);
    job_end(&a);
    job_end(&b);
    job_end(&c);
    job_end(&d);
    free(slow2);
    free(slow);
    free(fast);
    free(other);
}

/* Two merge patches of one Pod, the first prepared before the second commits: the
 * first is applied again to the second's result, so neither change is lost. */
static void test_patch_redone_when_changed(void **state)
{
    (void)state;
    char *p = pod_body("p", NULL);
    struct job a = { .kind = JOB_MERGE, .name = "p",
                     .body = "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}" };
    struct store_status st = { 0 };
    struct store_obj *o = NULL, *got = NULL;
    const cJSON *labels;

    store_obj_unref(tl_create(S, pods(), "default", cJSON_Parse(p)));
    job_start_held(&a);
    assert_int_equal(store_patch(S, pods(), "default", "p", NULL, PATCH_MERGE,
                                 "{\"metadata\":{\"labels\":{\"b\":\"2\"}}}", 35, NULL, &o, NULL,
                                 &st), 0);
    gate_release();
    job_join(&a);
    assert_int_equal(a.rc, 0);
    assert_true(a.out->rv > o->rv);
    assert_int_equal(store_get(S, pods(), "default", "p", &got, &st), 0);
    assert_int_equal(got->rv, a.out->rv);
    labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(store_obj_json(got), "metadata"), "labels");
    assert_string_equal(tl_str(labels, "a"), "1");
    assert_string_equal(tl_str(labels, "b"), "2");
    store_obj_unref(got);
    store_obj_unref(o);
    job_end(&a);
    free(p);
}

/* A PUT carrying the resourceVersion it read, prepared before another write commits:
 * 409 Conflict with the real message, and the other write stays. A patch whose body
 * carries the old resourceVersion: the same. */
static void test_put_conflict_when_changed(void **state)
{
    (void)state;
    char *p = pod_body("q", NULL), put[512];
    struct job a = { .kind = JOB_PUT, .name = "q", .body = put };
    struct job b = { .kind = JOB_MERGE, .name = "q", .body = NULL };
    struct store_status st = { 0 };
    struct store_obj *o = tl_create(S, pods(), "default", cJSON_Parse(p)), *m = NULL;
    char pb[128];

    snprintf(put, sizeof(put), "{\"metadata\":{\"name\":\"q\",\"resourceVersion\":\"%llu\","
             "\"labels\":{\"put\":\"1\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"image\":\"busybox:1.36\"}]}}", (unsigned long long)o->rv);
    job_start_held(&a);
    assert_int_equal(store_patch(S, pods(), "default", "q", NULL, PATCH_MERGE,
                                 "{\"metadata\":{\"labels\":{\"b\":\"2\"}}}", 35, NULL, &m, NULL,
                                 &st), 0);
    gate_release();
    job_join(&a);
    assert_int_equal(a.rc, -EBUSY);
    assert_int_equal(a.st.code, 409);
    assert_string_equal(a.st.reason, "Conflict");
    assert_non_null(strstr(a.st.message, "the object has been modified"));
    assert_int_equal(stored_rv("q"), m->rv);
    job_end(&a);

    /* a patch with the stale resourceVersion as its precondition, held, then beaten */
    snprintf(pb, sizeof(pb), "{\"metadata\":{\"resourceVersion\":\"%llu\",\"labels\":"
             "{\"c\":\"3\"}}}", (unsigned long long)m->rv);
    b.body = pb;
    job_start_held(&b);
    store_obj_unref(m);
    m = NULL;
    assert_int_equal(store_patch(S, pods(), "default", "q", "status", PATCH_MERGE,
                                 "{\"status\":{\"phase\":\"Running\"}}", 31, NULL, &m, NULL,
                                 &st), 0);
    gate_release();
    job_join(&b);
    assert_int_equal(b.rc, -EBUSY);
    assert_int_equal(b.st.code, 409);
    assert_int_equal(stored_rv("q"), m->rv);
    job_end(&b);
    store_obj_unref(m);
    store_obj_unref(o);
    free(p);
}

/* Two creates of one name, the first prepared before the second commits: the second
 * is not held up, the first gets 409 AlreadyExists. */
static void test_create_taken_meanwhile(void **state)
{
    (void)state;
    char *d = pod_body("dup", NULL), *d2 = pod_body("dup", ",\"labels\":{\"second\":\"1\"}");
    struct job a = { .kind = JOB_CREATE, .name = "dup", .body = d };
    struct job b = { .kind = JOB_CREATE, .name = "dup", .body = d2 };

    job_start_held(&a);
    job_start(&b);
    job_wait_while_held(&b, &a);
    assert_int_equal(b.rc, 0);
    gate_release();
    job_join(&a);
    assert_int_equal(a.rc, -EEXIST);
    assert_int_equal(a.st.code, 409);
    assert_string_equal(a.st.reason, "AlreadyExists");
    assert_int_equal(stored_rv("dup"), b.out->rv);
    job_end(&a);
    job_end(&b);
    free(d);
    free(d2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prepare_holds_no_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_redone_when_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_conflict_when_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_taken_meanwhile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_store_persist.c - unit tests of --state DIR: round trip of objects, the rv
 * counter and CRD registrations across a restart, survival of kill -9 (journal
 * without compaction), torn last lines, rejection of garbage, file modes, and
 * watch histories starting empty after a restart. */
#include "tests/unit/kubesim/store_testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char DIR_[64];

static int setup(void **state)
{
    (void)state;
    snprintf(DIR_, sizeof(DIR_), "/tmp/store-persist-XXXXXX");
    assert_non_null(mkdtemp(DIR_));
    rmdir(DIR_);                  /* store_open creates it, with its own mode */
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", DIR_);
    return system(cmd) == 0 ? 0 : -1;
}

static void append(const char *file, const char *text)
{
    char path[128];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", DIR_, file);
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void test_round_trip(void **state)
{
    struct store *s = tl_open(DIR_, 100);
    const struct reg_resource *cm = tl_res(s, "", "v1", "configmaps");
    const struct reg_resource *w = tl_install_widgets(s);
    struct store_status st = { 0 };
    struct store_obj *a, *o = NULL;
    struct stat sb;
    char path[128], uid[64];
    bool gone;
    uint64_t rv;

    (void)state;
    a = tl_create(s, cm, "default", tl_json("{\"metadata\":{\"name\":\"keep\"},\"data\":{\"k\":\"v\"}}"));
    snprintf(uid, sizeof(uid), "%s", a->uid);
    store_obj_unref(tl_create(s, cm, "default", tl_json("{\"metadata\":{\"name\":\"drop\"}}")));
    store_obj_unref(tl_create(s, w, "default", tl_json("{\"metadata\":{\"name\":\"wid\"},\"spec\":{\"replicas\":3}}")));
    assert_int_equal(store_delete(s, cm, "default", "drop", NULL, &o, &gone, &st), 0);
    store_obj_unref(o);
    rv = store_current_rv(s);
    store_obj_unref(a);
    store_close(s);

    assert_int_equal(stat(DIR_, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    snprintf(path, sizeof(path), "%s/snapshot", DIR_);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    snprintf(path, sizeof(path), "%s/journal", DIR_);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    s = tl_open(DIR_, 100);
    cm = tl_res(s, "", "v1", "configmaps");
    w = tl_res(s, "test.io", "v1", "widgets");     /* the CRD is served again */
    assert_int_equal(store_current_rv(s), rv);
    assert_int_equal(store_get(s, cm, "default", "keep", &o, &st), 0);
    assert_string_equal(o->uid, uid);
    assert_string_equal(tl_str(store_obj_json(o), "data.k"), "v");
    store_obj_unref(o);
    assert_int_equal(store_get(s, cm, "default", "drop", &o, &st), -ENOENT);
    store_status_clear(&st);
    assert_int_equal(store_get(s, w, "default", "wid", &o, &st), 0);
    assert_int_equal(tl_num(store_obj_json(o), "spec.replicas"), 3);
    store_obj_unref(o);
    a = tl_create(s, cm, "default", tl_json("{\"metadata\":{\"name\":\"new\"}}"));
    assert_int_equal(a->rv, rv + 1);
    store_obj_unref(a);

    /* watch history starts empty: an older rv is expired, the current one is fine */
    struct store_watch *wt = NULL;
    struct store_event ev;
    struct store_watch_opts wo = { .resource_version = "2" };
    assert_int_equal(store_watch_open(s, cm, "default", &wo, &wt, &st), 0);
    assert_int_equal(store_watch_next(wt, 1000, &ev), 0);
    assert_int_equal(ev.type, EV_ERROR);
    assert_int_equal(ev.status.code, 410);
    store_event_clear(&ev);
    store_watch_close(wt);
    store_close(s);
}

static void test_survives_kill(void **state)
{
    pid_t pid;
    int status;

    (void)state;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct store *s = tl_open(DIR_, 100);
        const struct reg_resource *cm = tl_res(s, "", "v1", "configmaps");
        for (int i = 0; i < 50; i++) {
            struct store_status st = { 0 };
            cJSON *j = tl_json("{\"metadata\":{\"name\":\"k%d\"}}", i);
            if (store_create(s, cm, "default", j, NULL, NULL, &st))
                _exit(3);
        }
        raise(SIGKILL);
        _exit(4);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    struct store *s = tl_open(DIR_, 100);
    const struct reg_resource *cm = tl_res(s, "", "v1", "configmaps");
    struct store_list l = { 0 };
    struct store_status st = { 0 };
    assert_int_equal(store_list(s, cm, "default", NULL, &l, &st), 0);
    assert_int_equal(l.n, 50);
    store_list_free(&l);
    store_close(s);
}

static void test_torn_line_and_garbage(void **state)
{
    struct registry *reg = NULL;
    struct store *s = tl_open(DIR_, 100);
    const struct reg_resource *cm = tl_res(s, "", "v1", "configmaps");
    char err[256] = "";

    (void)state;
    store_obj_unref(tl_create(s, cm, "default", tl_json("{\"metadata\":{\"name\":\"x\"}}")));
    store_close(s);
    append("journal", "{\"rv\":99,\"op\":\"put\",\"g\":\"\",\"p\":\"configmaps\",\"obj\":{\"meta");
    s = tl_open(DIR_, 100);          /* the torn record is ignored */
    cm = tl_res(s, "", "v1", "configmaps");
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    assert_int_equal(store_get(s, cm, "default", "x", &o, &st), 0);
    store_obj_unref(o);
    store_close(s);

    append("journal", "this is not json\n");
    assert_int_equal(registry_new(&reg), 0);
    struct store_opts opts = { .state_dir = DIR_ };
    s = NULL;
    assert_int_equal(store_open(&opts, reg, &s, err, sizeof(err)), -EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "journal: line 1: malformed record"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_survives_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_line_and_garbage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

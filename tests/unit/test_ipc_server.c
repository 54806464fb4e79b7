/*
 * test_ipc_server.c - the ipc server on a libuv loop in its own thread, with
 * clients in threads and in forked processes: socket mode and stale-socket
 * handling, hand-out and status, capacity and fairness, one holder per key
 * under contention, kill -9 of a worker process holding keys, an invalid
 * frame closing the connection with its keys requeued, read-your-writes over
 * the wire, requeue-after timing, and reconnect after a server restart.
 * Every wait is on a condition with a deadline.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "ipc/proto.h"

/* ---- a server running on its own loop thread ------------------------------------- */

struct srv {
    pthread_t th;
    uv_loop_t loop;
    uv_async_t async;
    struct ipc_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(struct srv *, void *);
    void *arg;
    bool pending, ready, stop;
    int listen_rc;
    char path[108];
};

static atomic_ulong cache_rv;
static atomic_ullong fake_ns;
static struct ipc_server_config next_cfg;   /* config for the next srv_start_at */

static uint64_t fake_now(void *ud)
{
    (void)ud;
    return atomic_load(&fake_ns);
}
static char dir[64];

static int seen_rv(void *ud, const char *type, const char *rv)
{
    (void)ud;
    (void)type;
    return strtoull(rv, NULL, 10) <= atomic_load(&cache_rv);
}

static void on_async(uv_async_t *a)
{
    struct srv *sv = a->data;
    pthread_mutex_lock(&sv->mu);
    if (sv->pending) {
        sv->fn(sv, sv->arg);
        sv->pending = false;
        pthread_cond_broadcast(&sv->cv);
    }
    if (sv->stop) {
        ipc_server_close(sv->s);
        uv_close((uv_handle_t *)&sv->async, NULL);
    }
    pthread_mutex_unlock(&sv->mu);
}

static void *srv_main(void *arg)
{
    struct srv *sv = arg;
    struct ipc_queue_config qc;
    ipc_queue_config_default(&qc);
    qc.ryw_timeout_ns = 30ull * 1000000000ull;
    uv_loop_init(&sv->loop);
    uv_async_init(&sv->loop, &sv->async, on_async);
    sv->async.data = sv;
    struct ipc_server_config cfg = next_cfg;
    assert_int_equal(ipc_server_new(&sv->loop, &cfg, &sv->s), 0);
    assert_int_equal(ipc_server_add_kind(sv->s, "raycluster", &qc), 0);
    assert_int_equal(ipc_server_add_kind(sv->s, "rayjob", &qc), 0);
    assert_int_equal(ipc_server_add_kind(sv->s, "rayjob", &qc), -EINVAL);
    ipc_server_set_seen(sv->s, seen_rv, NULL);
    int rc = ipc_server_listen(sv->s, sv->path);
    pthread_mutex_lock(&sv->mu);
    sv->listen_rc = rc;
    sv->ready = true;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    if (rc < 0) {
        ipc_server_close(sv->s);
        uv_close((uv_handle_t *)&sv->async, NULL);
    }
    uv_run(&sv->loop, UV_RUN_DEFAULT);
    uv_loop_close(&sv->loop);
    return NULL;
}

static struct srv *srv_start_at(const char *path, int want_rc)
{
    struct srv *sv = calloc(1, sizeof(*sv));
    pthread_mutex_init(&sv->mu, NULL);
    pthread_cond_init(&sv->cv, NULL);
    snprintf(sv->path, sizeof(sv->path), "%s", path);
    pthread_create(&sv->th, NULL, srv_main, sv);
    pthread_mutex_lock(&sv->mu);
    while (!sv->ready)
        pthread_cond_wait(&sv->cv, &sv->mu);
    pthread_mutex_unlock(&sv->mu);
    assert_int_equal(sv->listen_rc, want_rc);
    return sv;
}

static void srv_stop(struct srv *sv)
{
    if (sv->listen_rc == 0) {
        pthread_mutex_lock(&sv->mu);
        sv->stop = true;
        pthread_mutex_unlock(&sv->mu);
        uv_async_send(&sv->async);
    }
    pthread_join(sv->th, NULL);
    pthread_mutex_destroy(&sv->mu);
    pthread_cond_destroy(&sv->cv);
    free(sv);
}

/* Runs fn(sv, arg) on the loop thread and waits for it. */
static void srv_call(struct srv *sv, void (*fn)(struct srv *, void *), void *arg)
{
    pthread_mutex_lock(&sv->mu);
    sv->fn = fn;
    sv->arg = arg;
    sv->pending = true;
    uv_async_send(&sv->async);
    while (sv->pending)
        pthread_cond_wait(&sv->cv, &sv->mu);
    pthread_mutex_unlock(&sv->mu);
}

static void do_add(struct srv *sv, void *arg)
{
    assert_int_equal(ipc_server_add(sv->s, "raycluster", arg), 0);
}

static void add_key(struct srv *sv, const char *key)
{
    srv_call(sv, do_add, (void *)key);
}

struct add_many { int n; const char *fmt; };
static void do_add_many(struct srv *sv, void *arg)
{
    struct add_many *a = arg;
    char k[64];
    for (int i = 0; i < a->n; i++) {
        snprintf(k, sizeof(k), a->fmt, i);
        assert_int_equal(ipc_server_add(sv->s, "raycluster", k), 0);
    }
}

static void do_progress(struct srv *sv, void *arg)
{
    (void)arg;
    ipc_server_progress(sv->s);
}

static void do_stats(struct srv *sv, void *arg)
{
    ipc_queue_stats(ipc_server_queue(sv->s, "raycluster"), arg);
}

static char sock_path[108];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ipc-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0700);
    snprintf(sock_path, sizeof(sock_path), "%s/queues.sock", dir);
    atomic_store(&cache_rv, 0);
    memset(&next_cfg, 0, sizeof(next_cfg));
    next_cfg.processing_deadline_ns = 60ull * 1000000000ull;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(sock_path);
    rmdir(dir);
    return 0;
}

static struct ipc_client *open_worker(const char *name, uint32_t cap)
{
    struct ipc_client_config cc = {.path = sock_path, .kind = "raycluster", .worker = name,
                                   .capacity = cap, .connect_timeout_ms = 5000};
    struct ipc_client *c = NULL;
    assert_int_equal(ipc_client_open(&cc, &c), 0);
    return c;
}

static const struct ipc_outcome OK = {.kind = IPC_OUTCOME_OK};

/* ---- tests ------------------------------------------------------------------------ */

static void test_socket_mode_and_stale(void **state)
{
    (void)state;
    /* A stale socket file (bound, nobody listening) is replaced. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    struct srv *sv = srv_start_at(sock_path, 0);
    struct stat st;
    assert_int_equal(stat(sock_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    /* A live server is not replaced. */
    struct srv *sv2 = srv_start_at(sock_path, -EADDRINUSE);
    srv_stop(sv2);
    struct ipc_client *c = open_worker("w", 1);
    ipc_client_close(c);
    srv_stop(sv);
    /* The path is removed on close; a regular file there is refused. */
    assert_int_equal(access(sock_path, F_OK), -1);
    FILE *f = fopen(sock_path, "w");
    fclose(f);
    struct srv *sv3 = srv_start_at(sock_path, -EEXIST);
    srv_stop(sv3);
    unlink(sock_path);
}

static void test_handout_and_status(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w-1", 2);
    assert_true(ipc_client_connected(c));
    add_key(sv, "default/rc-1");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    assert_string_equal(k.key, "default/rc-1");
    assert_int_equal(k.requeues, 0);
    assert_true(k.added_unix_ms > 1700000000000ull);

    struct ipc_client_config sc = {.path = sock_path, .connect_timeout_ms = 5000};
    struct ipc_client *stc = NULL;
    assert_int_equal(ipc_client_open(&sc, &stc), 0);
    struct ipc_key dummy;
    assert_int_equal(ipc_client_pull(stc, 0, &dummy), -EINVAL);
    /* A client may add to any kind. */
    assert_int_equal(ipc_client_add(stc, "rayjob", "ns/job-1", 0), 0);
    assert_int_equal(ipc_client_add(stc, "rayjob", "bad key", 0), -EINVAL);
    struct ipc_status st;
    assert_int_equal(ipc_client_status(stc, 5000, &st), 0);
    assert_int_equal(st.pid, getpid());
    assert_int_equal(st.n_queues, 2);
    assert_string_equal(st.queues[0].kind, "raycluster");
    assert_int_equal(st.queues[0].in_flight, 1);
    assert_int_equal(st.queues[0].adds_total, 1);
    assert_int_equal(st.queues[0].n_workers, 1);
    assert_int_equal(st.queues[0].workers[0].pid, getpid());
    assert_string_equal(st.queues[0].workers[0].worker, "w-1");
    assert_int_equal(st.queues[0].workers[0].capacity, 2);
    assert_int_equal(st.queues[0].workers[0].in_flight, 1);
    assert_string_equal(st.queues[1].kind, "rayjob");
    assert_int_equal(st.queues[1].depth, 1);
    assert_int_equal(st.queues[1].n_workers, 0);
    ipc_status_free(&st);

    assert_int_equal(ipc_client_done(c, &k, &OK), 0);
    /* Wait (bounded) until the server has applied the Done. */
    struct ipc_queue_stats qs;
    for (int i = 0; i < 500; i++) {
        assert_int_equal(ipc_client_status(stc, 5000, &st), 0);
        uint64_t inflight = st.queues[0].in_flight;
        ipc_status_free(&st);
        if (inflight == 0)
            break;
    }
    srv_call(sv, do_stats, &qs);
    assert_int_equal(qs.in_flight, 0);
    assert_int_equal(qs.done_total[IPC_OUTCOME_OK], 1);
    assert_int_equal(qs.keys, 0);
    ipc_client_close(stc);
    ipc_client_close(c);
    srv_stop(sv);
}

static void test_unknown_kind_refused(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client_config cc = {.path = sock_path, .kind = "nosuchkind", .capacity = 1,
                                   .connect_timeout_ms = 5000};
    struct ipc_client *c = NULL;
    assert_int_equal(ipc_client_open(&cc, &c), -ENOENT);
    srv_stop(sv);
}

struct holder_args {
    struct ipc_client *c;
    int want;
    int got;
    char keys[8][IPC_KEY_MAX];
};

static void *hold_keys(void *arg)
{
    struct holder_args *h = arg;
    struct ipc_key k;
    while (h->got < h->want && ipc_client_pull(h->c, 5000, &k) == 0)
        snprintf(h->keys[h->got++], IPC_KEY_MAX, "%s", k.key);
    return NULL;
}

static void test_capacity_spreads_keys(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct holder_args h[3] = {0};
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "w%d", i);
        h[i].c = open_worker(name, 2);
        h[i].want = 2;
        pthread_create(&th[i], NULL, hold_keys, &h[i]);
    }
    struct add_many am = {6, "ns/k%d"};
    srv_call(sv, do_add_many, &am);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    /* Nobody holds more than its capacity, so the six keys land two per worker. */
    int seen[6] = {0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(h[i].got, 2);
        for (int j = 0; j < 2; j++)
            seen[atoi(h[i].keys[j] + 4)]++;
    }
    for (int i = 0; i < 6; i++)
        assert_int_equal(seen[i], 1);
    for (int i = 0; i < 3; i++)
        ipc_client_close(h[i].c);
    srv_stop(sv);
}

/* ---- contention: one holder per key ------------------------------------------------------ */

#define NKEYS 40
struct contention {
    atomic_int holders[NKEYS];
    atomic_int violations;
    atomic_int processed;
    atomic_int done_errors;
    atomic_int by_proc[4];   /* [0] this process, [1..3] forked workers */
    atomic_int stop;
};

struct worker_args {
    struct contention *ct;
    struct ipc_client *c;
    unsigned seed;
    int proc;
};

static void *contend(void *arg)
{
    struct worker_args *w = arg;
    struct ipc_key k;
    while (!atomic_load(&w->ct->stop)) {
        int rc = ipc_client_pull(w->c, 50, &k);
        if (rc == -ETIMEDOUT)
            continue;
        if (rc < 0)
            break;
        int idx = atoi(k.key + 2);
        if (atomic_fetch_add(&w->ct->holders[idx], 1) != 0)
            atomic_fetch_add(&w->ct->violations, 1);
        for (volatile int spin = 0; spin < (int)(rand_r(&w->seed) % 2000); spin++)
            ;
        atomic_fetch_sub(&w->ct->holders[idx], 1);
        atomic_fetch_add(&w->ct->processed, 1);
        atomic_fetch_add(&w->ct->by_proc[w->proc], 1);
        struct ipc_outcome oc = {.kind = (enum ipc_outcome_kind)(rand_r(&w->seed) % 5)};
        if (oc.kind == IPC_OUTCOME_REQUEUE_AFTER)
            oc.after_ns = 1000000;
        if (oc.kind == IPC_OUTCOME_ERROR || oc.kind == IPC_OUTCOME_TERMINAL)
            oc.message = "injected";
        if (ipc_client_done(w->c, &k, &oc) != 0)
            atomic_fetch_add(&w->ct->done_errors, 1);
    }
    return NULL;
}

/* A forked worker process: its own connection with two threads. */
static void contend_process(struct contention *ct, int proc)
{
    struct ipc_client_config cc = {.path = sock_path, .kind = "raycluster", .worker = "forked",
                                   .capacity = 2, .connect_timeout_ms = 5000};
    struct ipc_client *c = NULL;
    if (ipc_client_open(&cc, &c) < 0)
        _exit(2);
    struct worker_args wa[2] = {{ct, c, (unsigned)proc * 101u, proc}, {ct, c, (unsigned)proc * 103u, proc}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, contend, &wa[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    ipc_client_close(c);
    _exit(0);
}

struct add_rounds { int rounds; unsigned seed; };
static void do_add_random(struct srv *sv, void *arg)
{
    struct add_rounds *a = arg;
    char k[16];
    for (int i = 0; i < a->rounds; i++) {
        snprintf(k, sizeof(k), "k/%d", rand_r(&a->seed) % NKEYS);
        ipc_server_add(sv->s, "raycluster", k);
    }
}

static void test_one_holder_per_key(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    /* Shared with the forked workers: the holder table spans processes. */
    struct contention *ct = mmap(NULL, sizeof(*ct), PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(ct != MAP_FAILED);
    memset(ct, 0, sizeof(*ct));
    pid_t kids[3];
    for (int p = 0; p < 3; p++) {
        kids[p] = fork();
        assert_true(kids[p] >= 0);
        if (kids[p] == 0)
            contend_process(ct, p + 1);
    }
    enum { NW = 4, THREADS = 2 };
    struct ipc_client *cl[NW];
    struct worker_args wa[NW * THREADS];
    pthread_t th[NW * THREADS];
    for (int i = 0; i < NW; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        cl[i] = open_worker(name, THREADS);
        for (int t = 0; t < THREADS; t++) {
            wa[i * THREADS + t] = (struct worker_args){ct, cl[i], (unsigned)(i * 31 + t), 0};
            pthread_create(&th[i * THREADS + t], NULL, contend, &wa[i * THREADS + t]);
        }
    }
    struct add_rounds ar = {50, 7};
    for (int r = 0; r < 100; r++)
        srv_call(sv, do_add_random, &ar);
    /* Keep events coming until a good amount of work has flowed (30 s deadline). */
    uint64_t deadline = util_now_ns() + 30ull * 1000000000ull;
    while (atomic_load(&ct->processed) < 2000 && util_now_ns() < deadline)
        srv_call(sv, do_add_random, &ar);
    atomic_store(&ct->stop, 1);
    for (int i = 0; i < NW * THREADS; i++)
        pthread_join(th[i], NULL);
    for (int p = 0; p < 3; p++) {
        int status;
        assert_int_equal(waitpid(kids[p], &status, 0), kids[p]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(atomic_load(&ct->violations), 0);
    assert_int_equal(atomic_load(&ct->done_errors), 0);
    assert_true(atomic_load(&ct->processed) >= 2000);
    for (int p = 0; p < 4; p++)
        assert_true(atomic_load(&ct->by_proc[p]) > 0);
    for (int i = 0; i < NW; i++)
        ipc_client_close(cl[i]);
    srv_stop(sv);
    munmap(ct, sizeof(*ct));
}

/* ---- kill -9 of a worker process holding keys ------------------------------------------ */

static void test_kill9_worker_keys_come_back(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        struct ipc_client_config cc = {.path = sock_path, .kind = "raycluster", .worker = "doomed",
                                       .capacity = 3, .connect_timeout_ms = 5000};
        struct ipc_client *c = NULL;
        if (ipc_client_open(&cc, &c) < 0)
            _exit(2);
        if (write(pfd[1], "C", 1) != 1)
            _exit(3);
        for (int i = 0; i < 3; i++) {
            struct ipc_key k;
            if (ipc_client_pull(c, 10000, &k) < 0)
                _exit(4);
            char line[IPC_KEY_MAX + 1];
            int n = snprintf(line, sizeof(line), "%s\n", k.key);
            if (write(pfd[1], line, (size_t)n) != n)
                _exit(5);
        }
        for (;;)
            pause();
    }
    close(pfd[1]);
    FILE *in = fdopen(pfd[0], "r");
    assert_int_equal(fgetc(in), 'C');
    struct add_many am = {3, "ns/held-%d"};
    srv_call(sv, do_add_many, &am);
    char line[IPC_KEY_MAX + 2];
    int got[3] = {0};
    for (int i = 0; i < 3; i++) {
        assert_non_null(fgets(line, sizeof(line), in));
        got[atoi(line + 8)]++;
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(got[i], 1);
    /* Held by the child: another worker gets nothing. */
    struct ipc_client *c = open_worker("survivor", 3);
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 100, &k), -ETIMEDOUT);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    int back[3] = {0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
        back[atoi(k.key + 8)]++;
        assert_int_equal(k.requeues, 1);  /* requeued as an error: with backoff */
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(back[i], 1);
    struct ipc_queue_stats qs;
    srv_call(sv, do_stats, &qs);
    assert_int_equal(qs.retries_total, 3);
    assert_int_equal(qs.in_flight, 3);
    fclose(in);
    ipc_client_close(c);
    srv_stop(sv);
}

/* ---- invalid frame: ERROR, close, keys requeued ------------------------------------------ */

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void raw_send(int fd, const struct ipc_msg *m)
{
    struct buf b = {0};
    assert_int_equal(ipc_proto_encode(m, &b), 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    buf_free(&b);
}

/* Reads one frame; returns its type, or 0 on EOF. */
static int raw_recv(int fd, struct ipc_msg *m)
{
    uint8_t hdr[4];
    static uint8_t body[IPC_FRAME_MAX];
    ssize_t n = recv(fd, hdr, 4, MSG_WAITALL);
    if (n == 0)
        return 0;
    assert_int_equal(n, 4);
    uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    assert_true(len > 0 && len <= IPC_FRAME_MAX);
    assert_int_equal(recv(fd, body, len, MSG_WAITALL), (ssize_t)len);
    assert_int_equal(ipc_proto_decode(body, len, m, NULL), 0);
    return m->type;
}

static void test_invalid_frame_disconnects(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_msg *m = calloc(1, sizeof(*m));
    static const uint8_t garbage[][9] = {
        {0, 0, 0, 5, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1},  /* not msgpack */
        {0xff, 0xff, 0xff, 0xff},                     /* length too big */
        {0, 0, 0, 1, 0x80},                           /* empty map: no type */
    };
    static const size_t glen[] = {9, 4, 5};
    for (int g = 0; g < 3; g++) {
        int fd = raw_connect();
        memset(m, 0, sizeof(*m));
        m->type = IPC_MSG_HELLO; m->version = 1; strcpy(m->kind, "raycluster");
        strcpy(m->worker, "raw"); m->pid = 1; m->capacity = 1;
        raw_send(fd, m);
        assert_int_equal(raw_recv(fd, m), IPC_MSG_WELCOME);
        memset(m, 0, sizeof(*m));
        m->type = IPC_MSG_PULL; m->n = 1;
        raw_send(fd, m);
        char key[32];
        snprintf(key, sizeof(key), "ns/raw-%d", g);
        add_key(sv, key);
        assert_int_equal(raw_recv(fd, m), IPC_MSG_KEY);
        assert_string_equal(m->key, key);
        assert_int_equal(write(fd, garbage[g], glen[g]), (ssize_t)glen[g]);
        assert_int_equal(raw_recv(fd, m), IPC_MSG_ERROR);
        assert_true(m->code == EBADMSG || m->code == EMSGSIZE);
        assert_int_equal(raw_recv(fd, m), 0);   /* then EOF */
        close(fd);
        /* The key it held is handed to the next worker. */
        struct ipc_client *c = open_worker("next", 1);
        struct ipc_key k;
        assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
        assert_string_equal(k.key, key);
        assert_int_equal(ipc_client_done(c, &k, &OK), 0);
        ipc_client_close(c);
    }
    /* Protocol misuse: PULL before HELLO; DONE for a key never held. */
    int fd = raw_connect();
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_PULL; m->n = 1;
    raw_send(fd, m);
    assert_int_equal(raw_recv(fd, m), IPC_MSG_ERROR);
    assert_int_equal(m->code, EPROTO);
    assert_int_equal(raw_recv(fd, m), 0);
    close(fd);
    fd = raw_connect();
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_HELLO; m->version = 1; strcpy(m->kind, "raycluster");
    strcpy(m->worker, "raw"); m->pid = 1; m->capacity = 1;
    raw_send(fd, m);
    assert_int_equal(raw_recv(fd, m), IPC_MSG_WELCOME);
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_DONE; m->id = 12345; m->outcome = IPC_OUTCOME_OK;
    raw_send(fd, m);
    assert_int_equal(raw_recv(fd, m), IPC_MSG_ERROR);
    assert_int_equal(m->code, ENOENT);
    assert_int_equal(raw_recv(fd, m), 0);
    close(fd);
    free(m);
    srv_stop(sv);
}

/* ---- read-your-writes over the wire ----------------------------------------------------- */

static void test_ryw_over_the_wire(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    atomic_store(&cache_rv, 5);
    add_key(sv, "ns/rc");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    struct ipc_written w = {"ray.io/v1/rayclusters", "10"};
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_OK, .n_written = 1, .written = &w};
    assert_int_equal(ipc_client_done(c, &k, &oc), 0);
    add_key(sv, "ns/rc");   /* srv_call runs after the Done was read? not guaranteed: check stats */
    struct ipc_queue_stats qs;
    for (int i = 0; i < 1000; i++) {
        srv_call(sv, do_stats, &qs);
        if (qs.gated == 1)
            break;
        struct ipc_status st;
        ipc_client_status(c, 1000, &st);   /* a round trip: the Done is read before the reply */
        ipc_status_free(&st);
    }
    assert_int_equal(qs.gated, 1);
    assert_int_equal(ipc_client_pull(c, 100, &k), -ETIMEDOUT);
    atomic_store(&cache_rv, 10);
    srv_call(sv, do_progress, NULL);
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    assert_string_equal(k.key, "ns/rc");
    ipc_client_close(c);
    srv_stop(sv);
}

static void test_requeue_after_over_the_wire(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    add_key(sv, "ns/rc");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    uint64_t t0 = util_now_ns();
    struct ipc_outcome oc = {.kind = IPC_OUTCOME_REQUEUE_AFTER, .after_ns = 80ull * 1000000};
    assert_int_equal(ipc_client_done(c, &k, &oc), 0);
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    uint64_t dt = util_now_ns() - t0;
    assert_true(dt >= 80ull * 1000000);
    assert_true(dt < 2000ull * 1000000);
    ipc_client_close(c);
    srv_stop(sv);
}

/* Bounded wait until c's connection state is want (and, if want, newer than gen). */
static void wait_connected(struct ipc_client *c, bool want, uint64_t gen)
{
    uint64_t deadline = util_now_ns() + 10ull * 1000000000ull;
    while (util_now_ns() < deadline) {
        bool up = ipc_client_connected(c);
        if (up == want && (!want || ipc_client_generation(c) > gen))
            return;
        struct ipc_key tmp;
        assert_int_equal(ipc_client_pull(c, 10, &tmp), -ETIMEDOUT);
    }
    fail_msg("connection state did not change in time");
}

static void test_reconnect_adopts_held_keys(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 3);
    uint64_t gen = ipc_client_generation(c);
    add_key(sv, "ns/held");
    struct ipc_key k1, k2;
    assert_int_equal(ipc_client_pull(c, 5000, &k1), 0);
    add_key(sv, "ns/finished");
    assert_int_equal(ipc_client_pull(c, 5000, &k2), 0);
    srv_stop(sv);   /* the watcher dies while a thread still works on ns/held */
    wait_connected(c, false, 0);
    /* Finished while no server was there: stale; the new watcher's resync brings it back. */
    assert_int_equal(ipc_client_done(c, &k2, &OK), -ESTALE);

    sv = srv_start_at(sock_path, 0);
    wait_connected(c, true, gen);
    struct ipc_queue_stats qs = {0};
    uint64_t deadline = util_now_ns() + 10ull * 1000000000ull;
    while (qs.in_flight != 1 && util_now_ns() < deadline)
        srv_call(sv, do_stats, &qs);
    assert_int_equal(qs.in_flight, 1);   /* ns/held adopted by its holder */

    /* The resync adds the key again: nobody else may get it while it is held. */
    struct ipc_client *other = open_worker("other", 1);
    add_key(sv, "ns/held");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(other, 100, &k), -ETIMEDOUT);
    /* The holder's Done goes to the new server under the adopted lease. */
    assert_int_equal(ipc_client_done(c, &k1, &OK), 0);
    /* Then the pending add is delivered, to whichever worker has credit (c
     * may, from the pulls it made while waiting for the reconnect). */
    struct ipc_client *got = NULL;
    deadline = util_now_ns() + 10ull * 1000000000ull;
    while (!got && util_now_ns() < deadline) {
        if (ipc_client_pull(other, 10, &k) == 0)
            got = other;
        else if (ipc_client_pull(c, 10, &k) == 0)
            got = c;
    }
    assert_non_null(got);
    assert_string_equal(k.key, "ns/held");
    assert_int_equal(ipc_client_done(got, &k, &OK), 0);
    assert_int_equal(ipc_client_done(c, &k1, &OK), -ENOENT);   /* not held any more */
    ipc_client_close(other);
    ipc_client_close(c);
    srv_stop(sv);
}

static void test_startup_grace(void **state)
{
    (void)state;
    atomic_store(&fake_ns, 1000ull * 1000000000ull);
    next_cfg.now = fake_now;
    next_cfg.startup_grace_ns = 2ull * 1000000000ull;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    add_key(sv, "ns/a");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 100, &k), -ETIMEDOUT);
    atomic_fetch_add(&fake_ns, 2ull * 1000000000ull);
    add_key(sv, "ns/b");   /* any event after the grace period dispatches */
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    assert_string_equal(k.key, "ns/a");
    ipc_client_close(c);
    srv_stop(sv);
}

static void test_client_close_hands_back_buffered(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    struct ipc_key k;
    /* The pull times out but leaves its PULL outstanding; the key lands in the buffer. */
    assert_int_equal(ipc_client_pull(c, 0, &k), -ETIMEDOUT);
    add_key(sv, "ns/buffered");
    struct ipc_queue_stats qs;
    for (int i = 0; i < 1000; i++) {
        srv_call(sv, do_stats, &qs);
        if (qs.in_flight == 1)
            break;
    }
    assert_int_equal(qs.in_flight, 1);
    /* A STATUS round trip: the KEY frame was sent before the reply, so it is buffered now. */
    struct ipc_status st;
    assert_int_equal(ipc_client_status(c, 5000, &st), 0);
    ipc_status_free(&st);
    ipc_client_close(c);
    struct ipc_client *c2 = open_worker("w2", 1);
    assert_int_equal(ipc_client_pull(c2, 5000, &k), 0);
    assert_string_equal(k.key, "ns/buffered");
    assert_int_equal(k.requeues, 0);   /* released, not failed */
    ipc_client_close(c2);
    srv_stop(sv);
}

static void test_overdue_reported_not_stolen(void **state)
{
    (void)state;
    atomic_store(&fake_ns, 1000ull * 1000000000ull);
    next_cfg.now = fake_now;
    next_cfg.processing_deadline_ns = 10ull * 1000000000ull;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("slow", 1);
    struct ipc_client *other = open_worker("idle", 1);
    add_key(sv, "ns/slow");
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    atomic_fetch_add(&fake_ns, 11ull * 1000000000ull);
    struct ipc_status st;
    assert_int_equal(ipc_client_status(c, 5000, &st), 0);
    assert_int_equal(st.queues[0].overdue, 1);
    assert_int_equal(st.queues[0].n_workers, 2);
    assert_string_equal(st.queues[0].workers[0].worker, "slow");
    assert_int_equal(st.queues[0].workers[0].oldest_ms, 11000);
    assert_int_equal(st.queues[0].workers[1].in_flight, 0);
    ipc_status_free(&st);
    /* Overdue is reported only: the key is not handed to anyone else. */
    add_key(sv, "ns/slow");
    assert_int_equal(ipc_client_pull(other, 100, &k), -ETIMEDOUT);
    ipc_client_close(other);
    ipc_client_close(c);
    srv_stop(sv);
}

/* Registers a raw worker connection with capacity cap and cap credits; returns
 * once the server has processed the PULL (a STATUS round trip proves it). */
static int raw_worker(uint32_t cap, struct ipc_msg *m)
{
    int fd = raw_connect();
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_HELLO; m->version = 1; strcpy(m->kind, "raycluster");
    strcpy(m->worker, "rr"); m->pid = 1; m->capacity = cap;
    raw_send(fd, m);
    assert_int_equal(raw_recv(fd, m), IPC_MSG_WELCOME);
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_PULL; m->n = cap;
    raw_send(fd, m);
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_STATUS_REQ;
    raw_send(fd, m);
    assert_int_equal(raw_recv(fd, m), IPC_MSG_STATUS);
    ipc_msg_clear(m);
    return fd;
}

static void test_round_robin_across_workers(void **state)
{
    (void)state;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_msg *m = calloc(1, sizeof(*m));
    int fd[3];
    for (int i = 0; i < 3; i++)
        fd[i] = raw_worker(3, m);
    /* Every worker could take all three keys; round-robin gives one each. */
    struct add_many am = {3, "ns/rr-%d"};
    srv_call(sv, do_add_many, &am);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(raw_recv(fd[i], m), IPC_MSG_KEY);
        char want[32];
        snprintf(want, sizeof(want), "ns/rr-%d", i);
        assert_string_equal(m->key, want);
    }
    /* Six more: two each, continuing the rotation. */
    struct add_many am2 = {9, "ns/rr-%d"};
    srv_call(sv, do_add_many, &am2);   /* rr-0..2 are in flight: only rr-3..8 are new */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            assert_int_equal(raw_recv(fd[i], m), IPC_MSG_KEY);
            char want[32];
            snprintf(want, sizeof(want), "ns/rr-%d", 3 + round * 3 + i);
            assert_string_equal(m->key, want);
        }
    }
    for (int i = 0; i < 3; i++)
        close(fd[i]);
    free(m);
    srv_stop(sv);
}

static void test_connection_limit(void **state)
{
    (void)state;
    next_cfg.max_connections = 2;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *a = open_worker("a", 1), *b = open_worker("b", 1), *c = NULL;
    struct ipc_client_config cc = {.path = sock_path, .kind = "raycluster", .capacity = 1,
                                   .connect_timeout_ms = 5000};
    assert_int_equal(ipc_client_open(&cc, &c), -EMFILE);
    ipc_client_close(b);
    /* A slot frees once the server has seen b go; retry within a deadline. */
    int rc = -EMFILE;
    uint64_t deadline = util_now_ns() + 5ull * 1000000000ull;
    while (rc == -EMFILE && util_now_ns() < deadline)
        rc = ipc_client_open(&cc, &c);
    assert_int_equal(rc, 0);
    ipc_client_close(c);
    ipc_client_close(a);
    srv_stop(sv);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_socket_mode_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handout_and_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_kind_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_spreads_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_holder_per_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_worker_keys_come_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_frame_disconnects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ryw_over_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeue_after_over_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect_adopts_held_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_startup_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_close_hands_back_buffered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overdue_reported_not_stolen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_robin_across_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

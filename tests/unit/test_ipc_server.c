/*
 * test_ipc_server.c - the ipc server on a libuv loop in its own thread, with
 * clients in threads and in forked processes: socket mode and stale-socket
 * handling, hand-out and status, capacity, strict round-robin, one holder per
 * key under contention across processes, kill -9 of a worker process holding
 * keys, invalid frames closing the connection with its keys requeued, overdue
 * reporting, the connection limit and the startup grace. Client-side
 * behaviour is in test_ipc_client.c. Every wait is on a condition with a deadline.
 */
#include "tests/unit/ipc_fixture.h"

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

static bool every_proc_worked(struct contention *ct)
{
    for (int p = 0; p < 4; p++)
        if (atomic_load(&ct->by_proc[p]) == 0)
            return false;
    return true;
}

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
    /* Keep events coming until a good amount of work has flowed and every process
     * has taken part (30 s deadline): on a loaded machine a forked process can be
     * scheduled late, so a fixed amount of work does not guarantee it got a key. */
    uint64_t deadline = util_now_ns() + 30ull * 1000000000ull;
    while ((atomic_load(&ct->processed) < 2000 || !every_proc_worked(ct)) &&
           util_now_ns() < deadline)
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

/* STATUS carries how long the oldest ready key has waited for a worker. The
 * start-up grace holds keys back, so one waits while a worker is connected. */
static void test_status_oldest_wait(void **state)
{
    (void)state;
    atomic_store(&fake_ns, 1000ull * 1000000000ull);
    next_cfg.now = fake_now;
    next_cfg.startup_grace_ns = 10ull * 1000000000ull;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_client *c = open_worker("w", 1);
    add_key(sv, "ns/a");
    atomic_fetch_add(&fake_ns, 3ull * 1000000000ull);
    add_key(sv, "ns/b");
    atomic_fetch_add(&fake_ns, 500ull * 1000000ull);
    struct ipc_status st;
    assert_int_equal(ipc_client_status(c, 5000, &st), 0);
    assert_int_equal(st.queues[0].depth, 2);
    assert_true(st.queues[0].oldest_wait_known);
    assert_int_equal(st.queues[0].oldest_wait_ms, 3500);
    ipc_status_free(&st);
    ipc_client_close(c);
    srv_stop(sv);
}

/* A server in its 2 s startup grace (fake clock) with one raycluster worker, c, and key
 * ns/a held back from it. */
static struct srv *start_in_grace(struct ipc_client **c)
{
    struct ipc_key k;

    atomic_store(&fake_ns, 1000ull * 1000000000ull);
    next_cfg.now = fake_now;
    next_cfg.startup_grace_ns = 2ull * 1000000000ull;
    struct srv *sv = srv_start_at(sock_path, 0);
    *c = open_worker("w", 1);
    add_key(sv, "ns/a");
    assert_int_equal(ipc_client_pull(*c, 100, &k), -ETIMEDOUT);  /* the grace holds it */
    return sv;
}

/* Once every kind has a worker again the grace ends: no wait for the clock. */
static void test_startup_grace_ends_when_all_back(void **state)
{
    (void)state;
    struct ipc_client *c;
    struct srv *sv = start_in_grace(&c);   /* rayjob has nobody yet */
    struct ipc_key k;
    struct ipc_client_config cc = {.path = sock_path, .kind = "rayjob", .worker = "j",
                                   .capacity = 1, .connect_timeout_ms = 5000};
    struct ipc_client *j = NULL;
    assert_int_equal(ipc_client_open(&cc, &j), 0);
    add_key(sv, "ns/b");   /* an event dispatches; the fake clock has not moved */
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    assert_string_equal(k.key, "ns/a");
    ipc_client_close(j);
    ipc_client_close(c);
    srv_stop(sv);
}

static void end_grace_cb(struct srv *sv, void *arg)
{
    (void)arg;
    ipc_server_end_grace(sv->s);
}

/* A watcher with a new segment ends the grace itself: keys go out at once. */
static void test_startup_grace_ended(void **state)
{
    (void)state;
    struct ipc_client *c;
    struct srv *sv = start_in_grace(&c);
    struct ipc_key k;
    srv_call(sv, end_grace_cb, NULL);
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);           /* the clock has not moved */
    assert_string_equal(k.key, "ns/a");
    ipc_client_close(c);
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

static void do_count_workers(struct srv *sv, void *arg)
{
    struct ipc_status st;
    assert_int_equal(ipc_server_status(sv->s, &st), 0);
    *(uint32_t *)arg = st.queues[0].n_workers;
    ipc_status_free(&st);
}

static void test_peer_not_reading_is_cut(void **state)
{
    (void)state;
    next_cfg.max_write_queue = 16 * 1024;
    struct srv *sv = srv_start_at(sock_path, 0);
    struct ipc_msg *m = calloc(1, sizeof(*m));
    int fd = raw_worker(1, m);
    add_key(sv, "ns/held-by-slow");
    assert_int_equal(raw_recv(fd, m), IPC_MSG_KEY);
    /* Ask for far more replies than the socket buffer and the write queue hold,
     * without reading any of them. */
    enum { ASKS = 20000 };
    struct buf b = {0};
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_STATUS_REQ;
    for (int i = 0; i < ASKS; i++)
        assert_int_equal(ipc_proto_encode(m, &b), 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    buf_free(&b);
    /* Without reading, wait (bounded) until the server has given up on us. */
    uint32_t workers = 1;
    uint64_t deadline = util_now_ns() + 20ull * 1000000000ull;
    while (workers && util_now_ns() < deadline)
        srv_call(sv, do_count_workers, &workers);
    assert_int_equal(workers, 0);
    /* Now read: some replies, then the end - never all of them. The server
     * closed with our requests unread, so the end may be ECONNRESET, not EOF. */
    int replies = 0;
    static uint8_t body[IPC_FRAME_MAX];
    for (;;) {
        uint8_t hdr[4];
        if (recv(fd, hdr, 4, MSG_WAITALL) != 4)
            break;
        uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
        assert_true(len > 0 && len <= IPC_FRAME_MAX);
        if (recv(fd, body, len, MSG_WAITALL) != (ssize_t)len)
            break;
        assert_int_equal(ipc_proto_decode(body, len, m, NULL), 0);
        if (m->type == IPC_MSG_STATUS)
            replies++;
        ipc_msg_clear(m);
    }
    assert_true(replies < ASKS);
    close(fd);
    /* The key it held went back to the queue. */
    struct ipc_client *c = open_worker("next", 1);
    struct ipc_key k;
    assert_int_equal(ipc_client_pull(c, 5000, &k), 0);
    assert_string_equal(k.key, "ns/held-by-slow");
    ipc_client_close(c);
    free(m);
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
        cmocka_unit_test_setup_teardown(test_startup_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_startup_grace_ends_when_all_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_startup_grace_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overdue_reported_not_stolen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_oldest_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_robin_across_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_not_reading_is_cut, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * ipc_fixture.h - shared by test_ipc_server.c and test_ipc_client.c: an ipc
 * server on a libuv loop in its own thread (srv_start_at / srv_call / srv_stop),
 * a fake read-your-writes oracle and clock, worker clients, and raw-socket
 * helpers for speaking the protocol by hand. Every wait has a deadline.
 */
#ifndef RAYOP_TEST_IPC_FIXTURE_H
#define RAYOP_TEST_IPC_FIXTURE_H

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
#include "ipc/internal.h"

#define IPC_FIX static __attribute__((unused))

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

IPC_FIX atomic_ulong cache_rv;
IPC_FIX atomic_ullong fake_ns;
IPC_FIX struct ipc_server_config next_cfg;   /* config for the next srv_start_at */
IPC_FIX bool next_without_raycluster;        /* the next server has no raycluster queue */

IPC_FIX uint64_t fake_now(void *ud)
{
    (void)ud;
    return atomic_load(&fake_ns);
}
IPC_FIX char dir[64];

IPC_FIX int seen_rv(void *ud, const char *type, const char *rv)
{
    (void)ud;
    (void)type;
    return strtoull(rv, NULL, 10) <= atomic_load(&cache_rv);
}

IPC_FIX void on_async(uv_async_t *a)
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

IPC_FIX void *srv_main(void *arg)
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
    if (!next_without_raycluster)
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

IPC_FIX struct srv *srv_start_at(const char *path, int want_rc)
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

IPC_FIX void srv_stop(struct srv *sv)
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
IPC_FIX void srv_call(struct srv *sv, void (*fn)(struct srv *, void *), void *arg)
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

IPC_FIX void do_add(struct srv *sv, void *arg)
{
    assert_int_equal(ipc_server_add(sv->s, "raycluster", arg), 0);
}

IPC_FIX void add_key(struct srv *sv, const char *key)
{
    srv_call(sv, do_add, (void *)key);
}

struct add_many { int n; const char *fmt; };
IPC_FIX void do_add_many(struct srv *sv, void *arg)
{
    struct add_many *a = arg;
    char k[64];
    for (int i = 0; i < a->n; i++) {
        snprintf(k, sizeof(k), a->fmt, i);
        assert_int_equal(ipc_server_add(sv->s, "raycluster", k), 0);
    }
}

IPC_FIX void do_progress(struct srv *sv, void *arg)
{
    (void)arg;
    ipc_server_progress(sv->s);
}

IPC_FIX void do_stats(struct srv *sv, void *arg)
{
    ipc_queue_stats(ipc_server_queue(sv->s, "raycluster"), arg);
}

IPC_FIX char sock_path[108];

IPC_FIX int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ipc-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0700);
    snprintf(sock_path, sizeof(sock_path), "%s/queues.sock", dir);
    atomic_store(&cache_rv, 0);
    memset(&next_cfg, 0, sizeof(next_cfg));
    next_without_raycluster = false;
    next_cfg.processing_deadline_ns = 60ull * 1000000000ull;
    return 0;
}

IPC_FIX int teardown(void **state)
{
    (void)state;
    unlink(sock_path);
    rmdir(dir);
    return 0;
}

IPC_FIX struct ipc_client *open_worker(const char *name, uint32_t cap)
{
    struct ipc_client_config cc = {.path = sock_path, .kind = "raycluster", .worker = name,
                                   .capacity = cap, .connect_timeout_ms = 5000};
    struct ipc_client *c = NULL;
    assert_int_equal(ipc_client_open(&cc, &c), 0);
    return c;
}

IPC_FIX const struct ipc_outcome OK = {.kind = IPC_OUTCOME_OK};


IPC_FIX int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

IPC_FIX void raw_send(int fd, const struct ipc_msg *m)
{
    struct buf b = {0};
    assert_int_equal(ipc_proto_encode(m, &b), 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    buf_free(&b);
}

/* Reads one frame; returns its type, or 0 on EOF. */
IPC_FIX int raw_recv(int fd, struct ipc_msg *m)
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

#endif

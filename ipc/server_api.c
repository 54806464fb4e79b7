/*
 * server_api.c - the public face of the queue server (ipc.h): creation, kinds,
 * the listening socket (mode 0600, stale-socket replacement, state-dir check),
 * the watcher's add/progress calls, status, metrics and close. The
 * connection machinery and the status snapshot of the queues and their workers
 * live in server.c.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uthash.h>
#include <utlist.h>

#include "ipc/internal.h"

static uint64_t default_now(void *ud)
{
    (void)ud;
    return util_now_ns();
}

/* ---- public API --------------------------------------------------------------------- */

int ipc_server_new(uv_loop_t *loop, const struct ipc_server_config *cfg, struct ipc_server **out)
{
    struct ipc_server *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    if (cfg)
        s->cfg = *cfg;
    if (!s->cfg.max_write_queue)
        s->cfg.max_write_queue = 4u << 20;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = 1024;
    s->now = s->cfg.now ? s->cfg.now : default_now;
    s->now_ud = s->cfg.now ? s->cfg.now_ud : NULL;
    if (s->cfg.startup_grace_ns)
        s->grace_end_ns = ipc__now(s) + s->cfg.startup_grace_ns;
    if (getrandom(&s->boot, sizeof(s->boot), GRND_NONBLOCK) != (ssize_t)sizeof(s->boot))
        s->boot = util_now_ns() ^ ((uint64_t)getpid() << 32);
    uv_timer_init(loop, &s->timer);
    s->timer.data = s;
    uv_timer_init(loop, &s->overdue_timer);
    s->overdue_timer.data = s;
    s->open_handles = 2;
    if (s->cfg.processing_deadline_ns) {
        uint64_t every = s->cfg.processing_deadline_ns / 2000000u;
        if (every < 100)
            every = 100;
        uv_timer_start(&s->overdue_timer, ipc__on_overdue_timer, every, every);
    }
    *out = s;
    return 0;
}

void ipc_server_end_grace(struct ipc_server *s)
{
    if (!s->grace_end_ns)
        return;
    s->grace_end_ns = 0;
    ipc__dispatch_all(s);
}

int ipc_server_add_kind(struct ipc_server *s, const char *kind, const struct ipc_queue_config *qcfg)
{
    if (!kind || ipc__find_kind(s, kind))
        return -EINVAL;
    if (s->n_kinds == IPC_KINDS_MAX)
        return -ENOSPC;
    struct kq *kq = &s->kinds[s->n_kinds];
    memset(kq, 0, sizeof(*kq));
    int rc = ipc_queue_new(kind, qcfg, s->now, s->now_ud, &kq->q);
    if (rc < 0)
        return rc;
    if (s->seen)
        ipc_queue_set_seen(kq->q, s->seen, s->seen_ud);
    s->n_kinds++;
    return 0;
}

/* A socket file at path: live server -> -EADDRINUSE, dead -> unlinked. */
static int clear_stale(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int err = errno;
    close(fd);
    if (rc == 0)
        return -EADDRINUSE;
    if (err != ECONNREFUSED && err != ENOENT)
        return -err;
    log_info("replacing stale ipc socket", "path", path, NULL);
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

static void check_state_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    struct stat st;
    const char *dir = dirname(copy);
    if (stat(dir, &st) == 0 && ((st.st_mode & 077) || st.st_uid != geteuid()))
        log_warn("state directory should be mode 0700 and owned by this user", "dir", dir, NULL);
    free(copy);
}

int ipc_server_listen(struct ipc_server *s, const char *path)
{
    struct sockaddr_un sa;
    if (!path || strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    if (s->listener_init || s->closing)
        return -EALREADY;
    check_state_dir(path);
    int rc = clear_stale(path);
    if (rc < 0)
        return rc;
    s->path = strdup(path);
    if (!s->path)
        return -ENOMEM;
    uv_pipe_init(s->loop, &s->listener, 0);
    s->listener.data = s;
    s->listener_init = true;
    s->open_handles++;
    rc = uv_pipe_bind(&s->listener, path);
    if (rc < 0)
        return rc;
    /* Bound but not listening yet: nobody can connect before the mode is tight. */
    if (chmod(path, 0600) < 0) {
        rc = -errno;
        unlink(path);
        return rc;
    }
    rc = uv_listen((uv_stream_t *)&s->listener, 128, ipc__on_connection);
    if (rc < 0) {
        unlink(path);
        return rc;
    }
    s->listening = true;
    return 0;
}

int ipc_server_accept_fd(struct ipc_server *s, int fd)
{
    return ipc__accept_fd(s, fd);
}

void ipc_server_set_seen(struct ipc_server *s, ipc_seen_fn seen, void *ud)
{
    s->seen = seen;
    s->seen_ud = ud;
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_set_seen(s->kinds[i].q, seen, ud);
}

/* After an add to kq's queue (rc its result): hand ready keys to idle workers and
 * re-arm the timer for delayed ones. */
static int added(struct ipc_server *s, struct kq *kq, int rc)
{
    if (rc < 0)
        return rc;
    ipc__dispatch(s, kq);
    ipc__arm_timer(s);
    return 0;
}

static int ipc_server_add_after(struct ipc_server *s, const char *kind, const char *key, uint64_t delay_ns)
{
    struct kq *kq = kind ? ipc__find_kind(s, kind) : NULL;
    return kq ? added(s, kq, ipc_queue_add_after(kq->q, key, delay_ns)) : -ENOENT;
}

int ipc_server_add_low(struct ipc_server *s, const char *kind, const char *key)
{
    struct kq *kq = kind ? ipc__find_kind(s, kind) : NULL;
    return kq ? added(s, kq, ipc_queue_add_low(kq->q, key)) : -ENOENT;
}

int ipc_server_add(struct ipc_server *s, const char *kind, const char *key)
{
    return ipc_server_add_after(s, kind, key, 0);
}

void ipc_server_progress(struct ipc_server *s)
{
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_progress(s->kinds[i].q);
    ipc__dispatch_all(s);
}

struct ipc_queue *ipc_server_queue(struct ipc_server *s, const char *kind)
{
    struct kq *kq = kind ? ipc__find_kind(s, kind) : NULL;
    return kq ? kq->q : NULL;
}

int ipc_server_status(struct ipc_server *s, struct ipc_status *out)
{
    return ipc__status_fill(s, out, IPC_STATUS_WORKERS_MAX);
}

int ipc_server_metrics_text(struct ipc_server *s, struct buf *out)
{
    struct ipc_queue *qs[IPC_KINDS_MAX];
    for (int i = 0; i < s->n_kinds; i++)
        qs[i] = s->kinds[i].q;
    return ipc_metrics_text(qs, (size_t)s->n_kinds, out);
}

void ipc_server_close(struct ipc_server *s)
{
    if (s->closing)
        return;
    s->closing = true;
    for (struct conn *c = s->conns; c; c = c->next)
        ipc__conn_drop(c, 0, "server closing");
    for (int i = 0; i < s->n_kinds; i++)
        ipc_queue_shutdown(s->kinds[i].q);
    if (s->listening && s->path)
        unlink(s->path);
    if (s->listener_init)
        uv_close((uv_handle_t *)&s->listener, ipc__handle_closed);
    uv_close((uv_handle_t *)&s->timer, ipc__handle_closed);
    uv_close((uv_handle_t *)&s->overdue_timer, ipc__handle_closed);
}

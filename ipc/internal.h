/*
 * internal.h - the server's structures, shared by server.c (connections,
 * frames, hand-out, timers, status snapshots) and server_api.c (the public
 * ipc_server_* calls and the listening socket), which calls into server.c and
 * never the other way round. Not for other modules; names are ipc__*.
 */
#ifndef RAYOP_IPC_INTERNAL_H
#define RAYOP_IPC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>
#include <uv.h>

#include "ipc/proto.h"

struct inflight {
    UT_hash_handle hh;
    uint64_t id;
    uint64_t got_ns;
    bool overdue_logged;
    char key[];
};

struct kq {
    struct ipc_queue *q;
    struct conn *workers;   /* registered connections, in arrival order */
    struct conn *rr;        /* the connection to offer the next key to first */
};

struct conn {
    struct ipc_server *s;
    uv_pipe_t pipe;
    uv_shutdown_t shut;
    struct conn *prev, *next;     /* all connections */
    struct conn *wprev, *wnext;   /* the kind's workers */
    struct kq *kq;
    bool hello, closing;
    uint32_t capacity, credits, n_inflight;
    struct inflight *inflight;
    int32_t pid;
    char worker[IPC_WORKER_MAX];
    struct buf rbuf;
};

struct ipc_server {
    uv_loop_t *loop;
    struct ipc_server_config cfg;
    ipc_now_fn now;
    void *now_ud;
    uv_pipe_t listener;
    uv_timer_t timer, overdue_timer;
    bool listener_init, listening, closing;
    int open_handles;
    char *path;
    struct kq kinds[IPC_KINDS_MAX];
    int n_kinds;
    struct conn *conns;
    ipc_seen_fn seen;
    void *seen_ud;
    uint64_t boot;
    uint64_t grace_end_ns;        /* no hand-out before this clock time */
    struct ipc_msg scratch;       /* decode target; too big for the stack of a callback */
    struct ipc_msg out;           /* what dispatch and reply_status encode */
};

struct wreq {
    uv_write_t req;
    size_t len;
    char data[];
};

static inline uint64_t ipc__now(struct ipc_server *s)
{
    return s->now(s->now_ud);
}

struct kq *ipc__find_kind(struct ipc_server *s, const char *kind);
/* Hands ready keys of kq to its connections, round-robin. */
void ipc__dispatch(struct ipc_server *s, struct kq *kq);
/* ipc__dispatch for every kind, then ipc__arm_timer. */
void ipc__dispatch_all(struct ipc_server *s);
/* Re-arms the queue timer at the earliest queue deadline (or grace end). */
void ipc__arm_timer(struct ipc_server *s);
void ipc__conn_drop(struct conn *c, int code, const char *why);
void ipc__on_connection(uv_stream_t *server, int status);
int ipc__accept_fd(struct ipc_server *s, int fd);
void ipc__on_overdue_timer(uv_timer_t *t);
/* Close callback of the server's own handles; frees s after the last one. */
void ipc__handle_closed(uv_handle_t *h);
/* Fills out (caller frees with ipc_status_free), listing <= max_workers per kind. */
int ipc__status_fill(struct ipc_server *s, struct ipc_status *out, uint32_t max_workers);

/* ---- test hooks: for the module's unit tests and fuzz targets, not for callers ---- */

/* Connections made so far (1 after open, +1 per reconnect). */
uint64_t ipc_client_generation(struct ipc_client *c);

/* NULL if kind is unknown. The queue belongs to the server. */
struct ipc_queue *ipc_server_queue(struct ipc_server *s, const char *kind);

/* Serves an already-connected Unix stream socket as if it had been accepted
 * (socket activation, tests, fuzzing). Takes ownership of fd on success (0);
 * on error the caller keeps it. */
int ipc_server_accept_fd(struct ipc_server *s, int fd);

#endif

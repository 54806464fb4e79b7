/*
 * proto.h - frames of the ipc protocol: a 4-byte big-endian body length, then
 * one msgpack map. Shared by server.c, client.c, the unit test and the fuzz
 * target; not for other modules (they use ipc.h).
 *
 * Decoding is strict and allocation-free except for STATUS replies: a small
 * bounded msgpack reader (no recursion beyond the fixed message shapes) checks
 * every type, length and count; unknown or duplicate fields are rejected.
 * docs/ipc.md has the grammar.
 */
#ifndef RAYOP_IPC_PROTO_H
#define RAYOP_IPC_PROTO_H

#include "ipc/ipc.h"
#include "util/util.h"

enum ipc_msg_type {
    IPC_MSG_HELLO = 1,      /* c->s: v, kind?, worker, pid, cap */
    IPC_MSG_WELCOME = 2,    /* s->c: v, pid, boot */
    IPC_MSG_PULL = 3,       /* c->s: n (more keys the connection can take) */
    IPC_MSG_KEY = 4,        /* s->c: id, key, requeues, added_ms, wait_ms */
    IPC_MSG_DONE = 5,       /* c->s: id, o, after_ms?, msg?, w? */
    IPC_MSG_ADD = 6,        /* c->s: kind, key, after_ms? */
    IPC_MSG_STATUS_REQ = 7, /* c->s: (nothing) */
    IPC_MSG_STATUS = 8,     /* s->c: pid, queues */
    IPC_MSG_ERROR = 9,      /* both: code, msg */
    IPC_MSG_ADOPT = 10,     /* c->s: key (still held from a previous server) */
    IPC_MSG_ADOPTED = 11,   /* s->c: id (0 = refused), key */
    IPC_MSG_MAX_ = 12
};

#define IPC_AFTER_MS_MAX (30ull * 24 * 3600 * 1000) /* 30 days */
#define IPC_STATUS_QUEUES_MAX IPC_KINDS_MAX

/* One decoded message. Strings are NUL-terminated copies. */
struct ipc_msg {
    enum ipc_msg_type type;
    uint32_t version;               /* HELLO, WELCOME */
    char kind[IPC_KIND_MAX];        /* HELLO (may be ""), ADD */
    char worker[IPC_WORKER_MAX];    /* HELLO */
    int32_t pid;                    /* HELLO, WELCOME, STATUS */
    uint32_t capacity;              /* HELLO: 0 for status/add-only clients */
    uint64_t boot;                  /* WELCOME: random id of the server instance */
    uint32_t n;                     /* PULL */
    uint64_t id;                    /* KEY, DONE */
    char key[IPC_KEY_MAX];          /* KEY, ADD */
    uint32_t requeues;              /* KEY */
    uint64_t added_ms, wait_ms;     /* KEY */
    uint32_t outcome;               /* DONE */
    uint64_t after_ms;              /* DONE (requeue_after), ADD */
    char msg[IPC_MSG_MAX];          /* DONE, ERROR */
    uint32_t code;                  /* ERROR: a positive errno */
    uint32_t n_written;             /* DONE */
    struct ipc_written written[IPC_WRITTEN_MAX];
    struct ipc_status *status;      /* STATUS: owned by the msg (ipc_msg_clear) */
};

/* Frees what a decoded msg owns (the status) and zeroes the pointer. */
void ipc_msg_clear(struct ipc_msg *m);

/*
 * Appends one frame (length + body) for m to out. -EINVAL if m is not
 * encodable under the same rules the decoder enforces, -EMSGSIZE if the body
 * would exceed IPC_FRAME_MAX, -ENOMEM.
 */
int ipc_proto_encode(const struct ipc_msg *m, struct buf *out);

/*
 * Splits a frame off the front of data: 0 and body, body_len, consumed set when a
 * whole frame is present, -EAGAIN when more bytes are needed, -EMSGSIZE if the
 * announced length is 0 or over IPC_FRAME_MAX (the stream is unusable).
 */
int ipc_proto_frame(const void *data, size_t len, const uint8_t **body,
                    size_t *body_len, size_t *consumed);

/*
 * Decodes one frame body into m (zeroed first). 0 or -EBADMSG with a reason
 * in err (static string) for the ERROR frame sent back. m->status, if set, is
 * owned by m.
 */
int ipc_proto_decode(const uint8_t *body, size_t len, struct ipc_msg *m,
                     const char **err);

#endif

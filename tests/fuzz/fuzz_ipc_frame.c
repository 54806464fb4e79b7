/* fuzz_ipc_frame.c - the ipc frame splitter and decoder on arbitrary bytes: any
 * stream gives frames or an error, never a crash; and whatever decodes must
 * re-encode and decode to the same message (the encoder accepts all the
 * decoder accepts, and nothing is lost on the way). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_roundtrip(const struct ipc_msg *m)
{
    struct buf b = {0};
    struct ipc_msg *again = calloc(1, sizeof(*again));
    const uint8_t *body;
    size_t blen, used;
    if (!again)
        return;
    if (ipc_proto_encode(m, &b) != 0)
        abort();
    if (ipc_proto_frame(b.data, b.len, &body, &blen, &used) != 0 || used != b.len)
        abort();
    if (ipc_proto_decode(body, blen, again, NULL) != 0)
        abort();
    if (again->type != m->type || again->id != m->id || again->n_written != m->n_written ||
        strcmp(again->key, m->key) != 0 || strcmp(again->msg, m->msg) != 0 ||
        again->after_ms != m->after_ms || again->outcome != m->outcome)
        abort();
    for (uint32_t i = 0; i < m->n_written; i++)
        if (strcmp(again->written[i].rv, m->written[i].rv) != 0)
            abort();
    if (m->status && (!again->status || again->status->n_queues != m->status->n_queues))
        abort();
    ipc_msg_clear(again);
    free(again);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ipc_msg *m = calloc(1, sizeof(*m));
    if (!m)
        return 0;
    /* As a whole body (most interesting for the decoder) ... */
    if (ipc_proto_decode(data, size, m, NULL) == 0) {
        check_roundtrip(m);
        ipc_msg_clear(m);
    }
    /* ... and as a stream of frames, the way a socket delivers them. */
    size_t off = 0;
    for (int i = 0; i < 64 && off < size; i++) {
        const uint8_t *body;
        size_t blen, used;
        if (ipc_proto_frame(data + off, size - off, &body, &blen, &used) != 0)
            break;
        if (ipc_proto_decode(body, blen, m, NULL) == 0)
            ipc_msg_clear(m);
        off += used;
    }
    free(m);
    return 0;
}

/* fuzz_ipc_server.c - the server's connection state machine on arbitrary bytes:
 * the input is written into a socketpair served by a real ipc_server (keys
 * queued, a read-your-writes oracle set), as a worker would send it. Any byte
 * stream must end with the server closing the connection - no crash, no leak,
 * no sanitizer report, no hang - and with no key left leased to the closed
 * connection (in-flight keys are requeued when it goes). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "ipc/ipc.h"
#include "ipc/internal.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int seen_upto5(void *ud, const char *type, const char *rv)
{
    (void)ud;
    (void)type;
    return strtoull(rv, NULL, 10) <= 5;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) {
        log_set_level(LOG_ERROR + 1);
        quiet = true;
    }
    uv_loop_t loop;
    struct ipc_server *s = NULL;
    int sv[2];
    if (size > 200000 || uv_loop_init(&loop) != 0)
        return 0;
    if (ipc_server_new(&loop, NULL, &s) != 0)
        abort();
    ipc_server_add_kind(s, "raycluster", NULL);
    ipc_server_add_kind(s, "rayjob", NULL);
    ipc_server_set_seen(s, seen_upto5, NULL);
    ipc_server_add(s, "raycluster", "ns/a");
    ipc_server_add(s, "raycluster", "ns/b");
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    if (ipc_server_accept_fd(s, sv[0]) != 0)
        abort();
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    size_t off = 0;
    char sink[4096];
    bool eof = false;
    if (size == 0)
        shutdown(sv[1], SHUT_WR);
    /* Feed the bytes, keep the reply side drained, let the loop work, until
     * the server closes its end (it always does after our EOF). */
    for (int round = 0; round < 5000 && !eof; round++) {
        if (off < size) {
            ssize_t w = write(sv[1], data + off, size - off);
            if (w > 0)
                off += (size_t)w;
            if (off == size)
                shutdown(sv[1], SHUT_WR);
        }
        ssize_t r;
        while ((r = read(sv[1], sink, sizeof(sink))) > 0)
            ;
        if (r == 0 || (r < 0 && errno != EAGAIN))
            eof = true;
        uv_run(&loop, UV_RUN_NOWAIT);
    }
    close(sv[1]);
    if (!eof)
        abort();   /* the server neither finished nor dropped the connection */
    /* The connection is gone: nothing may stay leased to it. */
    struct ipc_status st;
    if (ipc_server_status(s, &st) == 0) {
        if (st.queues[0].in_flight + st.queues[1].in_flight != 0)
            abort();
        ipc_status_free(&st);
    }
    ipc_server_close(s);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        abort();
    return 0;
}

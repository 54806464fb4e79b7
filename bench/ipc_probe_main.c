/*
 * ipc_probe_main.c - bin/ipc_probe: a minimal worker for tests and benches.
 * Connects to a watcher's queue socket for one kind, pulls keys and prints
 * one line per key, "<unix time ns> <key>", flushing each, and reports
 * success for every key. Exits after --count keys, or when no key came for
 * --idle-ms; exit code 0 when --count keys (or, without --count, any key) arrived.
 * --work-ms MS holds each key that long before reporting it done, like a worker
 * with real reconciles to do (so a queue drains at a known pace).
 *
 *   ipc_probe --socket /run/rayop/queues.sock --kind raycluster [--count N] [--idle-ms MS]
 *             [--work-ms MS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ipc/ipc.h"

int main(int argc, char **argv)
{
    const char *sock = NULL, *kind = NULL;
    long count = -1, idle_ms = 10000, work_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--socket") == 0) sock = argv[i + 1];
        else if (strcmp(argv[i], "--kind") == 0) kind = argv[i + 1];
        else if (strcmp(argv[i], "--count") == 0) count = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--idle-ms") == 0) idle_ms = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--work-ms") == 0) work_ms = strtol(argv[i + 1], NULL, 10);
        else { fprintf(stderr, "ipc_probe: unknown flag %s\n", argv[i]); return 2; }
    }
    if (!sock || !kind) {
        fprintf(stderr, "usage: ipc_probe --socket PATH --kind KIND [--count N] [--idle-ms MS] "
                "[--work-ms MS]\n");
        return 2;
    }
    struct ipc_client_config cc = { .path = sock, .kind = kind, .worker = "ipc-probe",
                                    .capacity = 1, .connect_timeout_ms = 10000 };
    struct ipc_client *c;
    int rc = ipc_client_open(&cc, &c);
    if (rc < 0) {
        fprintf(stderr, "ipc_probe: connect %s: %s\n", sock, strerror(-rc));
        return 1;
    }
    fprintf(stderr, "ipc_probe: connected\n");
    long got = 0;
    while (count < 0 || got < count) {
        struct ipc_key k;
        rc = ipc_client_pull(c, (int)idle_ms, &k);
        if (rc < 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        printf("%lld%09ld %s\n", (long long)ts.tv_sec, ts.tv_nsec, k.key);
        fflush(stdout);
        if (work_ms > 0) {
            struct timespec w = { work_ms / 1000, (work_ms % 1000) * 1000000L };
            nanosleep(&w, NULL);
        }
        struct ipc_outcome oc = { .kind = IPC_OUTCOME_OK };
        (void)ipc_client_done(c, &k, &oc);
        got++;
    }
    ipc_client_close(c);
    return (count < 0 ? got > 0 : got >= count) ? 0 : 1;
}

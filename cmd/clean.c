/*
 * clean.c - `rayop clean --state-dir DIR`: removes what a stopped operator instance
 * leaves behind on purpose. The cache segment outlives the watcher so a restart
 * resumes without a LIST; when the instance is gone for good (a demo, a test, a
 * state dir about to be deleted) this is how its segment leaves /dev/shm.
 * Refuses while a watcher still serves the state dir's queue socket.
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cache/cache.h"

/* 1 when something accepts connections on path, 0 otherwise. */
static int socket_is_live(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd, live;

    if (strlen(path) >= sizeof(sa.sun_path))
        return 0;
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return live;
}

int clean_state_dir(const char *dir, int *seg_removed, char *seg, size_t segcap)
{
    char sock[PATH_MAX];
    int rc;

    *seg_removed = 0;
    if ((size_t)snprintf(sock, sizeof(sock), "%s/queues.sock", dir) >= sizeof(sock))
        return -ENAMETOOLONG;
    if ((rc = cache_segment_name(dir, seg, segcap)) < 0)
        return rc;
    if (socket_is_live(sock))
        return -EBUSY;
    rc = cache_unlink(seg);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    *seg_removed = rc == 0;
    if (unlink(sock) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int clean_main(int argc, char **argv)
{
    const char *dir = "/run/rayop";
    char seg[CACHE_SEGNAME_MAX], sock[PATH_MAX];
    int rc, print_only = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--print-segment") == 0) {
            print_only = 1;
        } else if (strncmp(argv[i], "--state-dir=", 12) == 0) {
            dir = argv[i] + 12;
        } else {
            fprintf(stderr, "usage: rayop clean [--state-dir DIR] [--print-segment]\n"
                            "  removes the cache segment and queue socket of a stopped instance;\n"
                            "  --print-segment only prints the segment's shm name\n");
            return 2;
        }
    }
    if (print_only) {
        if ((rc = cache_segment_name(dir, seg, sizeof(seg))) < 0) {
            fprintf(stderr, "rayop clean: %s\n", strerror(-rc));
            return 1;
        }
        printf("%s\n", seg);
        return 0;
    }
    int removed = 0;
    rc = clean_state_dir(dir, &removed, seg, sizeof(seg));
    if (rc == -EBUSY) {
        fprintf(stderr, "rayop clean: a watcher is still serving %s/queues.sock; stop it first\n", dir);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "rayop clean: %s: %s\n", dir, strerror(-rc));
        return 1;
    }
    if ((size_t)snprintf(sock, sizeof(sock), "%s/queues.sock", dir) >= sizeof(sock))
        sock[0] = '\0';
    printf("%s segment %s; socket %s removed\n", removed ? "removed" : "no", seg, sock);
    return 0;
}

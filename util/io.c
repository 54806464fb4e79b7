/*
 * io.c - the small I/O and error-text helpers several modules had written for
 * themselves: writing a whole buffer to a descriptor, reading a bounded file
 * whole (the Configuration file is read by up, the watcher and every controller),
 * and formatting a message into a caller's (err, errlen) pair, the error
 * convention of the parsers.
 */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int util_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

void util_format_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int util_read_file(const char *path, size_t max, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    size_t n = 0;
    int rc = 0;

    *out = NULL;
    *len = 0;
    if (!f)
        return -errno;
    if (!(data = malloc(max + 1))) {
        rc = -ENOMEM;
        goto out;
    }
    n = fread(data, 1, max + 1, f);
    if (ferror(f))
        rc = -EIO;
    else if (n > max)
        rc = -E2BIG;
out:
    fclose(f);
    if (rc < 0) {
        free(data);
        return rc;
    }
    data[n] = '\0';
    *out = data;
    *len = n;
    return 0;
}

/*
 * io.c - the small I/O and error-text helpers several modules had written for
 * themselves: writing a whole buffer to a descriptor, and formatting a message
 * into a caller's (err, errlen) pair, the error convention of the parsers.
 */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
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

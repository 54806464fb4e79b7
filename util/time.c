/*
 * time.c - monotonic clocks for intervals and RFC 3339 formatting for object
 * timestamps (creationTimestamp and friends are UTC, second precision).
 */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

uint64_t util_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t util_now_ms(void)
{
    return util_now_ns() / 1000000ull;
}

void util_format_time(time_t t, char out[32])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void util_format_microtime(const struct timespec *ts, char out[40])
{
    struct tm tm;
    char base[24];
    gmtime_r(&ts->tv_sec, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%.20s.%06uZ", base, (unsigned)((ts->tv_nsec / 1000) % 1000000));
}

int util_parse_time(const char *s, time_t *out)
{
    struct tm tm;
    const char *p;
    long off = 0;

    memset(&tm, 0, sizeof(tm));
    if (!s)
        return -EINVAL;
    p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -EINVAL;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || hh > 23 || mm > 59)
            return -EINVAL;
        off = (hh * 3600L + mm * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    *out = timegm(&tm) - off;
    return 0;
}

void util_deadline_ms(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

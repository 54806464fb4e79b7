/*
 * jobcalc.c - the arithmetic of the simulated Job controller
 * (jobs.c) as pure functions, so tests/unit/kubesim/test_cluster_jobs.c can check
 * them without a store: how many Pods a Job wants running, the Pod-failure
 * back-off before a replacement is created, and the completed-indexes interval
 * text of Indexed Jobs ("0-2,4,7-9"), which is also parsed back from the Job's
 * status (outside bytes: bounded and fuzzed by tests/fuzz/fuzz_job_indexes.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/cluster.h"

/* The real controller waits 10 s doubling to 10 min; scaled by 1/20 like the
 * kubelet's crash-loop back-off so that tests are fast. */
#define JOB_BACKOFF_BASE_MS 500
#define JOB_BACKOFF_MAX_MS 30000

long cluster_job_want_active(long completions, long parallelism, long succeeded, long active)
{
    long want;

    if (completions < 0)   /* no completions: work queue style, done at the first success */
        return succeeded > 0 ? active : parallelism;
    want = completions - succeeded;
    if (want > parallelism)
        want = parallelism;
    return want < 0 ? 0 : want;
}

long cluster_job_backoff_ms(int failures)
{
    long ms = JOB_BACKOFF_BASE_MS;

    if (failures <= 0)
        return 0;
    for (int i = 1; i < failures && ms < JOB_BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms > JOB_BACKOFF_MAX_MS ? JOB_BACKOFF_MAX_MS : ms;
}

/* A decimal number of at most 9 digits at *s; advances *s. */
static int read_index(const char **s, long *out)
{
    long v = 0;
    int n = 0;

    while (**s >= '0' && **s <= '9') {
        if (++n > 9)
            return -EINVAL;
        v = v * 10 + (**s - '0');
        (*s)++;
    }
    if (!n)
        return -EINVAL;
    *out = v;
    return 0;
}

int cluster_job_indexes_parse(const char *s, size_t len, long n, unsigned char *bits)
{
    const char *p = s, *end = s + len;

    if (!s || len == 0)
        return 0;
    if (memchr(s, '\0', len))
        return -EINVAL;
    while (p < end) {
        long a, b;
        char buf[24];
        const char *q = buf;
        size_t k = 0;

        /* copy one "a" or "a-b" item into buf so that reads stay inside len */
        while (p < end && *p != ',' && k < sizeof(buf) - 1)
            buf[k++] = *p++;
        buf[k] = '\0';
        if (p < end && *p != ',')
            return -EINVAL;       /* item longer than any valid one */
        if (p < end && ++p == end)
            return -EINVAL;       /* a trailing comma */
        if (read_index(&q, &a) < 0)
            return -EINVAL;
        b = a;
        if (*q == '-') {
            q++;
            if (read_index(&q, &b) < 0 || b < a)
                return -EINVAL;
        }
        if (*q)
            return -EINVAL;
        /* indexes past completions are ignored, as the controller does */
        for (long i = a; i <= b && i < n; i++)
            bits[i / 8] |= (unsigned char)(1u << (i % 8));
    }
    return 0;
}

long cluster_job_indexes_count(const unsigned char *bits, long n)
{
    long c = 0;

    for (long i = 0; i < n; i++)
        c += (bits[i / 8] >> (i % 8)) & 1;
    return c;
}

char *cluster_job_indexes_format(const unsigned char *bits, long n)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);

    if (!out)
        return NULL;
    out[0] = '\0';
    for (long i = 0; i < n; i++) {
        long j = i;
        char item[48];
        int k;

        if (!((bits[i / 8] >> (i % 8)) & 1))
            continue;
        while (j + 1 < n && ((bits[(j + 1) / 8] >> ((j + 1) % 8)) & 1))
            j++;
        k = j > i ? snprintf(item, sizeof(item), "%s%ld-%ld", len ? "," : "", i, j)
                  : snprintf(item, sizeof(item), "%s%ld", len ? "," : "", i);
        if (len + (size_t)k + 1 > cap) {
            char *nb;
            while (len + (size_t)k + 1 > cap)
                cap *= 2;
            if (!(nb = realloc(out, cap))) {
                free(out);
                return NULL;
            }
            out = nb;
        }
        memcpy(out + len, item, (size_t)k + 1);
        len += (size_t)k;
        i = j;
    }
    return out;
}

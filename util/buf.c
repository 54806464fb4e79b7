/*
 * buf.c - growable byte buffer used for building HTTP bodies, JSON and log lines,
 * and the one doubling rule every growable array in the tree uses.
 */
#include "util/util.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int buf_reserve(struct buf *b, size_t extra)
{
    size_t need, ncap;
    char *p;

    if (extra > SIZE_MAX - b->len - 1)
        return -ENOMEM;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    p = realloc(b->data, ncap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = ncap;
    return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -ENOMEM;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    if (buf_reserve(b, (size_t)n) < 0)
        return -ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int buf_append_json_string(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0;

    if (buf_append(b, "\"", 1) < 0)
        return -ENOMEM;
    for (;; p++) {
        unsigned char c = *p;
        char esc[7];
        const char *e = NULL;
        size_t elen = 2;

        if (c >= 0x20 && c != '"' && c != '\\') {
            run++;
            continue;
        }
        if (run && buf_append(b, p - run, run) < 0)
            return -ENOMEM;
        run = 0;
        if (c == '\0')
            break;
        switch (c) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default:
            esc[0] = '\\'; esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15]; esc[6] = 0;
            e = esc;
            elen = 6;
        }
        if (buf_append(b, e, elen) < 0)
            return -ENOMEM;
    }
    return buf_append(b, "\"", 1);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *buf_steal(struct buf *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

static size_t buf_sink_write(char *p, size_t size, size_t n, void *arg)
{
    struct buf_sink *s = arg;
    size_t len = size * n;
    if (s->b.len + len > s->max) {
        s->too_big = 1;
        return 0;   /* aborts the transfer */
    }
    return buf_append(&s->b, p, len) == 0 ? len : 0;
}

void *buf_sink_easy(const char *url, const char *protocols, struct buf_sink *sink)
{
    CURL *h = curl_easy_init();

    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, protocols);
#else
    (void)protocols;
#endif
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    return h;
}

int util_array_grow(void *items, size_t elem, size_t n, size_t *cap, size_t first)
{
    void *p, *np;
    size_t ncap;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap : (first ? first : 1);
    while (ncap <= n) {
        if (ncap > SIZE_MAX / 2)
            return -ENOMEM;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem)
        return -ENOMEM;
    /* items points at a T*: copy it through memcpy rather than casting to void **,
     * which would break the aliasing rules for T * != void *. */
    memcpy(&p, items, sizeof(p));
    np = realloc(p, ncap * elem);
    if (!np)
        return -ENOMEM;
    memcpy(items, &np, sizeof(np));
    *cap = ncap;
    return 0;
}

/* fuzz_kube_watch.c - libFuzzer target for what a watch does with server bytes:
 * line framing under a length bound with arbitrary chunking, event parsing, and
 * Status parsing. Input: byte 0 picks the chunk size, byte 1 the line bound, the
 * rest is the stream. Checks the framing contract (no delivered line holds a
 * newline, exceeds the bound, or ends in blanks). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kube/internal.h"

struct fz {
    size_t max_line;
    int lines;
};

static int on_line(void *arg, const char *line, size_t len)
{
    struct fz *f = arg;
    struct kube_event ev;
    struct kube_status st;

    if (len == 0 || len > f->max_line || memchr(line, '\n', len) != NULL ||
        line[len - 1] == '\r' || line[len - 1] == ' ')
        __builtin_trap();
    f->lines++;
    if (kube__event_parse(line, len, &ev, &st) == 0) {
        if (ev.object == NULL || ev.resource_version == NULL ||
            (ev.type == KUBE_EVENT_ERROR) != (ev.status != NULL))
            __builtin_trap();
        cJSON_Delete(ev.object);
    }
    return f->lines > 10000 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_lines l;
    struct kube_status st;
    struct fz f = { 0 };

    if (size < 2)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    f.max_line = (size_t)data[1] * 8 + 1;
    data += 2;
    size -= 2;
    kube_status_parse((const char *)data, size, &st);
    kube__lines_init(&l, f.max_line);
    int rc = 0;
    for (size_t off = 0; off < size && rc == 0; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        rc = kube__lines_feed(&l, (const char *)data + off, n, on_line, &f);
        if (rc == 0 && l.b.len > f.max_line)
            __builtin_trap(); /* the tail is bounded too */
    }
    if (rc == 0)
        kube__lines_finish(&l, on_line, &f);
    kube__lines_release(&l);
    return 0;
}

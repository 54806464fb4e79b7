/*
 * heap.c - which allocator the process runs on, and its own figures.
 *
 * Release builds link jemalloc (docs/dependencies.md): at 10,000 RayClusters glibc's
 * malloc was a third of every process's CPU (arena locks, malloc_consolidate on
 * large frees), and the ready time halved without it. The sanitizer builds keep the
 * sanitizer's allocator, so the same calls fall back to glibc's interfaces there.
 * Callers (kubesim's GET /kubesim/memory, its idle trim, the cache bench) see one
 * shape whichever allocator it is.
 */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef RAYOP_JEMALLOC
#include <jemalloc/jemalloc.h>

static size_t stat_read(const char *name)
{
    size_t v = 0, len = sizeof(v);

    return mallctl(name, &v, &len, NULL, 0) == 0 ? v : 0;
}

const char *util_heap_name(void)
{
    return "jemalloc";
}

int util_heap_stats(struct util_heap *out)
{
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    int rc;

    memset(out, 0, sizeof(*out));
    /* the stats are a snapshot taken when the epoch advances */
    if ((rc = mallctl("epoch", &epoch, &len, &epoch, len)) != 0)
        return -rc;
    out->in_use = stat_read("stats.allocated");
    out->mapped = stat_read("stats.mapped");
    out->resident = stat_read("stats.resident");
    out->free = out->resident > out->in_use ? out->resident - out->in_use : 0;
    return 0;
}

size_t util_heap_chunk_header(void)
{
    return 0;   /* size classes: the block's size is known from its page */
}

void util_heap_release(void)
{
    char name[64];

    /* purge what decay says has aged, in every arena: cheap when nothing has */
    snprintf(name, sizeof(name), "arena.%u.decay", (unsigned)MALLCTL_ARENAS_ALL);
    mallctl(name, NULL, NULL, NULL, 0);
}

#else
#include <malloc.h>

const char *util_heap_name(void)
{
#ifdef __SANITIZE_ADDRESS__
    return "sanitizer";
#else
    return "glibc";
#endif
}

int util_heap_stats(struct util_heap *out)
{
    struct mallinfo2 mi = mallinfo2();

    memset(out, 0, sizeof(*out));
    /* glibc: small chunks in arenas, large ones mmapped apiece */
    out->in_use = mi.uordblks + mi.hblkhd;
    out->free = mi.fordblks;
    out->mapped = mi.arena + mi.hblkhd;
    out->resident = 0;
    return 0;
}

size_t util_heap_chunk_header(void)
{
    return sizeof(size_t);   /* the size word before each chunk */
}

void util_heap_release(void)
{
    malloc_trim(0);
}

#endif

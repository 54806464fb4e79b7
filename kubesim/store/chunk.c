/*
 * chunk.c - the malloc bytes behind a pointer and behind a uthash table, for
 * GET /kubesim/memory: every part of the store (and the simulated cluster) counts
 * its structures with these, so the answer's sums compare with malloc's own in-use
 * bytes. Calls nothing else in the store: the files that measure sit above it.
 */
#include "kubesim/store/internal.h"

#include <malloc.h>

size_t store_mem_chunk(const void *p)
{
    /* usable size plus the header the allocator keeps beside it */
    return p ? malloc_usable_size((void *)p) + util_heap_chunk_header() : 0;
}

size_t store_mem_table(const struct UT_hash_handle *hh)
{
    const UT_hash_table *tbl = hh ? hh->tbl : NULL;

    return tbl ? store_mem_chunk(tbl) + store_mem_chunk(tbl->buckets) : 0;
}

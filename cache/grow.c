/*
 * grow.c - when the segment is full and growth is allowed (cache_config.max_bytes),
 * the writer builds a segment twice the size under a temporary name, copies every
 * object and the per-type table into it, renames it over the well-known name
 * (readers opening from now on get the new one) and marks the old one retired:
 * readers still mapping it get -ESTALE and call cache_reader_refresh. The old
 * mapping stays valid until they do (POSIX unlink semantics), so no reader is
 * left with a dangling view.
 *
 * Linux-specific: glibc keeps shm_open names as files in /dev/shm, and rename(2)
 * there is the atomic switch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cache/internal.h"
#include "util/util.h"

#define SHM_DIR "/dev/shm"

/* Moves the mapping and geometry of src into dst (the handle callers hold). */
static void adopt(struct cache *dst, struct cache *src)
{
    char name[CACHE_SEGNAME_MAX];
    size_t max_bytes = dst->max_bytes;
    memcpy(name, dst->name, sizeof(name));
    *dst = *src;
    memcpy(dst->name, name, sizeof(name));
    dst->max_bytes = max_bytes;
    src->w = NULL;
    src->base = NULL;
}

int cache__grow(struct cache *c)
{
    if (!c->writer || !c->max_bytes)
        return -ENOSPC;
    size_t bytes = c->size * 2;
    uint64_t objs = (uint64_t)c->max_objects * 2;
    if (bytes > c->max_bytes)
        bytes = c->max_bytes;
    if (objs > CACHE_MAX_OBJECTS)
        objs = CACHE_MAX_OBJECTS;
    if (bytes <= c->size)
        return -ENOSPC; /* at the limit: the caller refuses the write */
    char tmp[CACHE_SEGNAME_MAX + 8], from[sizeof(SHM_DIR) + sizeof(tmp)],
        to[sizeof(SHM_DIR) + CACHE_SEGNAME_MAX];
    snprintf(tmp, sizeof(tmp), "%s.grow", c->name);
    snprintf(from, sizeof(from), SHM_DIR "%s", tmp);
    snprintf(to, sizeof(to), SHM_DIR "%s", c->name);
    shm_unlink(tmp); /* a leftover from a writer that died while growing */
    struct cache *n = cache__handle_alloc(tmp, true);
    if (!n)
        return -ENOMEM;
    int rc = cache__segment_create(n, tmp, bytes, (uint32_t)objs);
    if (rc) {
        free(n);
        return rc;
    }
    if ((rc = cache__writer_init_state(n)))
        goto fail;
    struct cache_hdr *oh = c->hdr, *nh = n->hdr;
    uint32_t ntypes = atomic_load_explicit(&oh->ntypes, memory_order_relaxed);
    for (uint32_t i = 0; i < ntypes && i < CACHE_MAX_TYPES; i++) {
        memcpy(nh->types[i].name, oh->types[i].name, CACHE_TYPE_MAX);
        memcpy(nh->types[i].rv, oh->types[i].rv, CACHE_RV_MAX);
        ST(nh->types[i].synced, LD(oh->types[i].synced));
    }
    atomic_store_explicit(&nh->ntypes, ntypes, memory_order_relaxed);
    if ((rc = cache__writer_copy(n, c)))
        goto fail;
    ST(nh->refused_writes, LD(oh->refused_writes));
    ST(nh->compactions, LD(oh->compactions));
    ST(nh->grows, LD(oh->grows) + 1);
    ST(nh->epoch, LD(oh->epoch) + 1);
    atomic_store_explicit(&nh->generation, LD(oh->generation) + 1, memory_order_release);
    /* Retire the old segment before the switch: a writer dying between the two
     * leaves readers on -ESTALE (never silently on a frozen copy), and its
     * successor's re-attach clears the flag on whichever segment the name holds. */
    snprintf(oh->moved_to, sizeof(oh->moved_to), "%s", c->name);
    atomic_store_explicit(&oh->retired, 1, memory_order_seq_cst);
    if (rename(from, to)) {
        rc = -errno;
        atomic_store_explicit(&oh->retired, 0, memory_order_release);
        memset(oh->moved_to, 0, sizeof(oh->moved_to));
        goto fail;
    }
    char ob[24], nb[24], oo[16], no[16];
    snprintf(ob, sizeof(ob), "%zu", c->size);
    snprintf(nb, sizeof(nb), "%zu", bytes);
    snprintf(oo, sizeof(oo), "%u", c->max_objects);
    snprintf(no, sizeof(no), "%u", (uint32_t)objs);
    log_warn("cache segment full: grew into a larger one", "segment", c->name, "old_bytes", ob,
             "new_bytes", nb, "old_objects", oo, "new_objects", no, NULL);
    struct cache old = *c;
    adopt(c, n);
    free(n);
    cache__writer_free_state(&old);
    munmap(old.base, old.size);
    return 0;
fail:
    cache_close(n);
    shm_unlink(tmp);
    return rc;
}

int cache_reader_refresh(struct cache *c)
{
    if (!c || c->writer || !c->owns_map)
        return -EINVAL;
    if (!atomic_load_explicit(&c->hdr->retired, memory_order_acquire))
        return 0;
    struct cache *n = NULL;
    int rc = cache_reader_open(c->name, &n);
    if (rc)
        return rc;
    if (atomic_load_explicit(&n->hdr->retired, memory_order_acquire)) {
        cache_close(n); /* the writer is between retiring and switching */
        return -EAGAIN;
    }
    struct cache old = *c;
    adopt(c, n);
    free(n);
    munmap(old.base, old.size);
    return 0;
}

/*
 * internal.h - the segment layout and the helpers the cache module's .c files share.
 * Not for other modules (tests and the fuzz target include it to build images).
 *
 * Segment (all offsets from the start, every region 64-byte aligned):
 *
 *   [ header            CACHE_HDR_SIZE ]  geometry, writer pid, epoch, generation,
 *                                          stats, per-type table
 *   [ slots             max_objects x 64 ] one seqlocked slot per object
 *   [ key buckets       nbuckets x 4    ]  chained hash on (type, ns, name)
 *   [ owner buckets     nbuckets x 4    ]  chained hash on (type, owner uid)
 *   [ cluster buckets   nbuckets x 4    ]  chained hash on (type, ns, ray.io/cluster)
 *   [ blob area         blob_size       ]  object records, 16-byte aligned
 *
 * Concurrency contract (docs/cache.md has the proof sketch):
 *  - Only the writer stores to the segment. Geometry fields never change after
 *    creation; readers copy them into their handle at open, validate them once
 *    against the mapped size and never re-read them.
 *  - Every slot field, every chain link (slot *_next) and the slot's blob record
 *    are covered by the slot's seq: the writer makes seq odd, changes them,
 *    makes it even again (seq_write_begin/seq_write_end). A slot's blob is
 *    freed (and may be reused) only while its seq is odd or after it changed,
 *    so a reader whose seq did not change copied a record nobody touched.
 *  - Bucket heads are published with release stores after the slot they point
 *    to is complete (seq even); readers load them with acquire.
 *  - A slot in a chain is only unlinked while both it and its predecessor have
 *    an odd seq, so a reader standing on either notices and restarts.
 */
#ifndef RAYOP_CACHE_INTERNAL_H
#define RAYOP_CACHE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cache/cache.h"

#define CACHE_MAGIC          0x3148434f50594152ULL /* "RAYOPCH1" little-endian */
#define CACHE_LAYOUT_VERSION 2u /* 2: four-lane record checksum */
#define CACHE_HDR_SIZE       8192u
#define CACHE_ALIGN          16u
#define CACHE_SLOT_FREE      0xffffffffu
#define CACHE_MIN_BYTES      (1u << 20)
#define CACHE_DEFAULT_BYTES  ((size_t)256 << 20)
#define CACHE_DEFAULT_OBJECTS 131072u
#define CACHE_MAX_OBJECTS    (1u << 24)

/* Reader retry bounds: spins before yielding, and an overall deadline. */
#define CACHE_SPINS          200
#define CACHE_DEADLINE_NS    (20u * 1000u * 1000u)
#define CACHE_MAX_RESTARTS   100000

enum { CACHE_STATE_OK = 0, CACHE_STATE_REBUILDING = 1 };

struct cache_type_ent {
    _Atomic uint32_t seq;     /* guards name (set once), rv, synced */
    _Atomic uint32_t synced;
    _Atomic uint64_t objects;
    char name[CACHE_TYPE_MAX];
    char rv[CACHE_RV_MAX];
    uint8_t pad[48];
};

struct cache_hdr {
    /* geometry: written once before magic is published, then immutable */
    _Atomic uint64_t magic;
    uint32_t layout_version;
    uint32_t hdr_size;
    uint32_t slot_size;
    uint32_t type_ent_size;
    uint64_t total_size;
    uint32_t max_objects;
    uint32_t nbuckets;
    uint64_t slots_off;
    uint64_t key_off;
    uint64_t owner_off;
    uint64_t label_off;
    uint64_t blob_off;
    uint64_t blob_size;
    /* writer identity and progress */
    _Atomic int32_t writer_pid;
    _Atomic uint32_t state;       /* CACHE_STATE_*; REBUILDING while a writer re-attaches */
    _Atomic uint32_t retired;     /* 1: replaced, readers get -ESTALE and reopen */
    _Atomic uint32_t ntypes;      /* published after the entry is filled */
    _Atomic uint64_t epoch;       /* bumped when a writer attaches (before any rebuild) */
    _Atomic uint64_t generation;  /* bumped after every committed change */
    _Atomic uint64_t slot_hw;     /* slots [0, slot_hw) have ever been used */
    /* stats */
    _Atomic uint64_t bytes_used;
    _Atomic uint64_t objects;
    _Atomic uint64_t refused_writes;
    _Atomic uint64_t compactions;
    _Atomic uint64_t grows;
    char moved_to[CACHE_SEGNAME_MAX];
    uint8_t pad0[64];
    struct cache_type_ent types[CACHE_MAX_TYPES];
};

struct cache_slot {
    _Atomic uint32_t seq;
    _Atomic uint32_t type;       /* CACHE_SLOT_FREE when unused */
    _Atomic uint64_t blob_off;   /* from the start of the blob area */
    _Atomic uint32_t blob_len;   /* exact record length (allocation rounds up to 16) */
    _Atomic uint32_t key_next;   /* slot index + 1; 0 ends the chain */
    _Atomic uint64_t key_hash;
    _Atomic uint64_t owner_hash; /* 0: no controller owner */
    _Atomic uint64_t label_hash; /* 0: no ray.io/cluster label */
    _Atomic uint32_t owner_next;
    _Atomic uint32_t label_next;
    uint8_t pad[8];
};

/*
 * Object record in the blob area: this header, then ns, name, owner uid,
 * cluster label, rv (no NULs), then the msgpack body. check is a hash over
 * everything after it, so a re-attaching writer can tell a complete record
 * from one a dead writer left half-written.
 */
struct cache_rec {
    uint64_t check;
    uint32_t body_len;
    uint16_t name_len;
    uint8_t ns_len;
    uint8_t uid_len;
    uint8_t label_len;
    uint8_t rv_len;
    uint8_t pad[6];
};

_Static_assert(sizeof(struct cache_slot) == 64, "slot is one cache line");
_Static_assert(sizeof(struct cache_type_ent) == 192, "type entry size");
_Static_assert(sizeof(struct cache_hdr) <= CACHE_HDR_SIZE, "header fits");
_Static_assert(sizeof(struct cache_rec) == 24, "record header size");

struct cache_wstate; /* writer-private bookkeeping (writer.c) */

struct cache {
    bool writer;
    bool owns_map;          /* false for cache__open_image */
    uint8_t *base;
    size_t size;
    struct cache_hdr *hdr;
    /* geometry validated at open (never re-read from the segment) */
    uint32_t max_objects;
    uint32_t nbuckets;
    struct cache_slot *slots;
    _Atomic uint32_t *key_b;
    _Atomic uint32_t *owner_b;
    _Atomic uint32_t *label_b;
    uint8_t *blob;
    uint64_t blob_size;
    char name[CACHE_SEGNAME_MAX];
    size_t max_bytes;       /* writer: growth limit (0 = no growth) */
    struct cache_wstate *w;
};

/* ---- seqlock (Boehm, "Can seqlocks get along with programming language memory models?") */

static inline uint32_t cache_seq_begin(const _Atomic uint32_t *s)
{
    return atomic_load_explicit(s, memory_order_acquire);
}

/* After the reads: did the writer touch the protected data meanwhile? */
static inline bool cache_seq_ok(const _Atomic uint32_t *s, uint32_t s1)
{
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(s, memory_order_relaxed) == s1;
}

static inline void cache_seq_write_begin(_Atomic uint32_t *s)
{
    uint32_t v = atomic_load_explicit(s, memory_order_relaxed);
    atomic_store_explicit(s, v + 1, memory_order_relaxed);
    /* the odd value must be visible before any of the data stores that follow */
    atomic_thread_fence(memory_order_release);
}

static inline void cache_seq_write_end(_Atomic uint32_t *s)
{
    uint32_t v = atomic_load_explicit(s, memory_order_relaxed);
    atomic_store_explicit(s, v + 1, memory_order_release);
}

#define LD(p)     atomic_load_explicit(&(p), memory_order_relaxed)
#define ST(p, v)  atomic_store_explicit(&(p), (v), memory_order_relaxed)

/* ---- hashing --------------------------------------------------------------- */

uint64_t cache__hash(const void *p, size_t n, uint64_t h);
uint64_t cache__key_hash(uint32_t type, const char *ns, size_t nslen,
                        const char *name, size_t namelen);
uint64_t cache__owner_hash(uint32_t type, const char *uid, size_t len);
uint64_t cache__label_hash(uint32_t type, const char *ns, size_t nslen,
                          const char *value, size_t len);
uint64_t cache__rec_check(const uint8_t *rec, size_t len);

/* ---- shared internals ------------------------------------------------------- */

/* Opens a reader handle over bytes the caller owns (tests, fuzzing): nothing is
 * mapped or copied; img must outlive the handle. */
int cache__open_image(const void *img, size_t len, struct cache **out);

/* How long a reader waits for a slot the writer holds (tests and fuzzing lower it). */
extern uint64_t cache__wait_deadline_ns;
/* Bounded wait helper: returns false when the deadline passed. */
struct cache_wait {
    int spins;
    uint64_t deadline;
};
bool cache__wait_more(struct cache_wait *w);

/* Reads and validates the record of slot s (caller holds an even seq snapshot).
 * Copies the record header into *rec; returns a pointer to the record or NULL if
 * off/len/lengths are out of bounds. */
const uint8_t *cache__rec_at(struct cache *c, uint64_t off, uint32_t len, struct cache_rec *rec);

/* Writer internals shared between segment.c, writer.c and grow.c. */
int cache__segment_create(struct cache *c, const char *name, size_t bytes, uint32_t max_objects);
struct cache *cache__handle_alloc(const char *name, bool writer);
/* Copies every live object of src into the empty writer dst (same type ids). */
int cache__writer_copy(struct cache *dst, struct cache *src);
/* Moves the writer into a segment twice the size (bounded by c->max_bytes);
 * -ENOSPC if it may not grow. */
int cache__grow(struct cache *c);
int cache__writer_init_state(struct cache *c);
int cache__writer_rebuild(struct cache *c);
void cache__writer_free_state(struct cache *c);

/* cache_encode, optionally applying the trim table on the fly (obj untouched). */
int cache__encode_opts(const cJSON *obj, struct buf *out, bool trim);

#endif

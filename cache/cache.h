/*
 * cache.h - the shared-memory informer cache: one writer (the watcher) keeps
 * trimmed, msgpack-encoded Kubernetes objects in a POSIX shm segment; any
 * number of reader processes (reconcilers, `rayop status`) map it read-only.
 *
 * Readers take no locks and never write the segment: every slot is guarded by
 * a seqlock, readers copy out and re-check, and every offset they follow is
 * bounds-checked, so a torn, stale or corrupt segment yields an error, never a
 * crash. docs/cache.md has the layout and the consistency argument.
 *
 * Types are named by strings of the writer's choosing; the convention is
 * "group/version/resource" with "" for the core group, e.g. "v1/pods",
 * "ray.io/v1/rayclusters", "batch/v1/jobs". The writer registers them
 * (cache_type_ensure), everyone maps a name to a small integer id once
 * (cache_type_lookup) and passes the id to every other call.
 *
 * Return values: 0 (or a count where stated) on success, a negative errno:
 *   -ENOENT   no such object / type
 *   -ENOBUFS  caller buffer too small (the needed size is reported)
 *   -ENOSPC   writer: segment full (object slots or bytes); the write is refused,
 *             counted in the header (refused_writes) and logged - never lost silently
 *   -EAGAIN   reader: the writer kept the object busy past the retry bound
 *             (e.g. it died mid-update, or is rebuilding after a restart); retry later
 *   -EIO      reader: the segment holds inconsistent bytes (corruption)
 *   -EINVAL   bad argument (names too long, object without metadata.name, ...)
 *   -ESTALE   reader: the segment was replaced (moved_to set); reopen by name
 *
 * Threads: a writer handle is used by one thread. Reader calls are thread-safe
 * on one handle (they keep no mutable state in it).
 */
#ifndef RAYOP_CACHE_H
#define RAYOP_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define CACHE_MAX_TYPES   32
#define CACHE_TYPE_MAX    64   /* type name incl. NUL */
#define CACHE_NS_MAX      64   /* DNS-1123 label (63) + NUL */
#define CACHE_NAME_MAX    254  /* DNS-1123 subdomain (253) + NUL */
#define CACHE_UID_MAX     64
#define CACHE_LABEL_MAX   64   /* label value (63) + NUL */
#define CACHE_RV_MAX      64
#define CACHE_SEGNAME_MAX 64   /* shm name incl. leading '/' and NUL */

/* The label the cluster index is built on. */
#define CACHE_CLUSTER_LABEL "ray.io/cluster"

struct cache;

struct cache_config {
    const char *name;      /* shm name, "/..." (see cache_segment_name) */
    size_t bytes;          /* total segment size; 0 = default 256 MiB */
    uint32_t max_objects;  /* object slots; 0 = default 131072 */
    size_t max_bytes;      /* growth limit: when full, the writer moves everything into
                            * a segment twice the size (bytes and slots) up to this;
                            * 0 = never grow, refuse instead */
};

/* Derives the segment name for an operator instance from its state dir, e.g.
 * "/run/rayop" -> "/rayop-<16 hex digits>". out >= CACHE_SEGNAME_MAX. */
int cache_segment_name(const char *state_dir, char *out, size_t cap);

/*
 * Writer: create the segment (mode 0600, O_EXCL) or, if one exists with a valid
 * header and the same capacity, re-attach to it: the new pid goes into the header,
 * indexes are rebuilt from the stored objects (a write torn by the previous
 * writer's death is dropped and its type flagged not-synced) and all stored
 * objects and per-type resourceVersions are kept - no relist needed. An existing
 * segment that fails validation or is smaller than asked is replaced (unlinked and
 * created afresh, logged); a larger one (the writer grew it) is kept.
 * *out is owned by the caller: cache_close().
 */
int cache_writer_open(const struct cache_config *cfg, struct cache **out);

/* Reader: shm_open O_RDONLY + mmap PROT_READ; validates the header.
 * *out is owned by the caller: cache_close(). */
int cache_reader_open(const char *name, struct cache **out);

/*
 * After the writer grew the segment, calls on an old reader handle return
 * -ESTALE: this remaps the handle onto the current segment (same name). Not
 * thread-safe: no other thread may be using the handle meanwhile. 0 if the
 * handle was current or was refreshed; -EAGAIN if the writer is mid-switch.
 */
int cache_reader_refresh(struct cache *c);

/* Unmaps and frees the handle; the segment stays (cache_unlink removes it). */
void cache_close(struct cache *c);
int cache_unlink(const char *name);

/* ---- types ------------------------------------------------------------------ */

/* Writer: id of type name, registering it if new (-ENOSPC past CACHE_MAX_TYPES). */
int cache_type_ensure(struct cache *c, const char *type);
/* Anyone: id of a registered type, or -ENOENT. */
int cache_type_lookup(struct cache *c, const char *type);

struct cache_type_info {
    char name[CACHE_TYPE_MAX];
    char rv[CACHE_RV_MAX];  /* last resourceVersion the writer stored for the type */
    bool synced;            /* initial list applied */
    uint64_t objects;
};
int cache_type_info(struct cache *c, int type, struct cache_type_info *out);

/* ---- writer: objects -------------------------------------------------------- */

/*
 * Stores obj (a full API object) under (type, metadata.namespace, metadata.name):
 * trims it (cache_trim), encodes it and updates the owner/label indexes. The
 * controller ownerReference uid, the ray.io/cluster label and
 * metadata.resourceVersion are taken from obj. *created (may be NULL) says
 * whether this added a new key. obj is not modified or kept.
 * Contract with the watcher: apply the event first, then cache_set_rv - a crash
 * in between re-delivers the event on resume instead of losing it.
 */
int cache_put(struct cache *c, int type, const cJSON *obj, bool *created);
/* Same from JSON text (parsed, trimmed, encoded). */
int cache_put_json(struct cache *c, int type, const char *json, size_t len, bool *created);
/* Removes the key; -ENOENT if absent. */
int cache_delete(struct cache *c, int type, const char *ns, const char *name);

int cache_set_rv(struct cache *c, int type, const char *rv);
int cache_set_synced(struct cache *c, int type, bool synced);

/* ---- readers (also usable on a writer handle) ------------------------------- */

/*
 * Copies the stored msgpack bytes of the object into buf (no decode). *len gets
 * the size; if cap is too small returns -ENOBUFS with *len = size needed.
 * Optional rv (may be NULL, >= CACHE_RV_MAX bytes) gets metadata.resourceVersion.
 */
int cache_get(struct cache *c, int type, const char *ns, const char *name,
              void *buf, size_t cap, size_t *len, char *rv);
/* The indexed fields of a stored object, without copying or decoding it: what the
 * watcher needs before an update (the old controller owner, to enqueue it too) and
 * the read-your-writes check (the stored resourceVersion). */
struct cache_meta {
    char rv[CACHE_RV_MAX];
    char owner_uid[CACHE_UID_MAX];  /* "" if none */
    char cluster[CACHE_LABEL_MAX];  /* "" if none */
    size_t len;                     /* msgpack size (a cache_get buffer of this size fits) */
};
int cache_stat(struct cache *c, int type, const char *ns, const char *name,
               struct cache_meta *out);

/* Decodes the object into a new cJSON tree; *out owned by the caller (cJSON_Delete). */
int cache_get_json(struct cache *c, int type, const char *ns, const char *name, cJSON **out);

/* A stored object as handed to callbacks: private copies valid during the call. */
struct cache_obj {
    int type;
    const char *ns;
    const char *name;
    const char *owner_uid;  /* controller ownerReference uid, "" if none */
    const char *cluster;    /* ray.io/cluster label value, "" if none */
    const char *rv;         /* metadata.resourceVersion */
    const void *data;       /* msgpack (cache_decode turns it into cJSON) */
    size_t len;
};
/* Return nonzero from a callback to stop; that value is returned by the walk. */
typedef int (*cache_visit_fn)(const struct cache_obj *obj, void *arg);

/* Every object of type, or only those in ns when ns != NULL. */
int cache_foreach(struct cache *c, int type, const char *ns, cache_visit_fn fn, void *arg);

struct cache_key {
    char ns[CACHE_NS_MAX];
    char name[CACHE_NAME_MAX];
};
/*
 * Index lists: keys of objects of type whose controller owner has uid
 * (cache_list_owner) or whose ray.io/cluster label in ns equals value
 * (cache_list_cluster). Fills up to cap keys; returns the total count (may
 * exceed cap: call again with a larger array) or a negative errno.
 */
int cache_list_owner(struct cache *c, int type, const char *uid,
                     struct cache_key *keys, size_t cap);
int cache_list_cluster(struct cache *c, int type, const char *ns, const char *value,
                       struct cache_key *keys, size_t cap);
/* Same, visiting each object (a list, then a get per key). */
int cache_foreach_owner(struct cache *c, int type, const char *uid,
                        cache_visit_fn fn, void *arg);
int cache_foreach_cluster(struct cache *c, int type, const char *ns, const char *value,
                          cache_visit_fn fn, void *arg);

/* Header figures for `rayop status` and metrics. */
struct cache_info {
    uint32_t layout_version;
    int32_t writer_pid;
    uint64_t generation;     /* bumped on every committed change */
    uint64_t epoch;          /* bumped each time a writer attaches */
    uint64_t bytes_total;    /* segment size */
    uint64_t blob_bytes;     /* capacity of the object area */
    uint64_t bytes_used;     /* live object bytes (incl. per-object headers) */
    uint32_t max_objects;
    uint64_t objects;
    uint64_t refused_writes; /* puts refused for lack of space */
    uint64_t compactions;    /* object-area compactions run */
    uint64_t grows;          /* times the segment moved to a larger one */
    uint32_t ntypes;
    char moved_to[CACHE_SEGNAME_MAX]; /* "" unless replaced */
};
int cache_info(struct cache *c, struct cache_info *out);

/* ---- encoding (pure functions, exposed for tests, tools and the bench) ------- */

/* Removes, in place, what the trim table (cache/codec.c, docs/cache.md) lists. */
void cache_trim(cJSON *obj);
/* Encodes obj as msgpack with the key dictionary; out (caller's) is appended to. */
struct buf;
int cache_encode(const cJSON *obj, struct buf *out);
/* Bounded, total decoder of cache_encode's output (depth, counts, lengths checked);
 * *out owned by the caller. -EIO on malformed input. */
int cache_decode(const void *data, size_t len, cJSON **out);

#endif

/*
 * segment.c - the lifecycle of the shared segment: naming, creating, validating,
 * re-attaching (writer) and mapping read-only (readers); the per-type table and
 * the header figures `rayop status` shows.
 *
 * Every reader treats the segment as untrusted input: the geometry is checked
 * once at open against the mapped size and copied into the private handle, and
 * everything else is bounds-checked where it is used (reader.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/internal.h"
#include "util/util.h"

/* ---- hashing ---------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

uint64_t cache__hash(const void *p, size_t n, uint64_t h)
{
    const uint8_t *s = p;
    h ^= 0x9e3779b97f4a7c15ULL * (n + 1);
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = (h ^ v) * 0x100000001b3ULL * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)s[i] << (8 * i);
    return mix64(h ^ v);
}

uint64_t cache__key_hash(uint32_t type, const char *ns, size_t nslen,
                        const char *name, size_t namelen)
{
    uint64_t h = cache__hash(ns, nslen, 0x6b6579ULL + type);
    return cache__hash(name, namelen, h) | 1;
}

uint64_t cache__owner_hash(uint32_t type, const char *uid, size_t len)
{
    return cache__hash(uid, len, 0x6f776eULL + type) | 1;
}

uint64_t cache__label_hash(uint32_t type, const char *ns, size_t nslen,
                          const char *value, size_t len)
{
    uint64_t h = cache__hash(ns, nslen, 0x6c626cULL + type);
    return cache__hash(value, len, h) | 1;
}

/* Record checksum: four independent lanes, so it runs at memory speed rather than
 * at the latency of one multiply chain (the re-attach checks every record). */
uint64_t cache__rec_check(const uint8_t *rec, size_t len)
{
    const uint8_t *p = rec + 8;
    size_t n = len - 8;
    uint64_t a = 0x636bULL, b = 0x9e3779b97f4a7c15ULL, c = 0xbf58476d1ce4e5b9ULL,
             d = 0x94d049bb133111ebULL;
    while (n >= 32) {
        uint64_t v[4];
        memcpy(v, p, 32);
        a = (a ^ v[0]) * 0x100000001b3ULL;
        b = (b ^ v[1]) * 0x100000001b3ULL;
        c = (c ^ v[2]) * 0x100000001b3ULL;
        d = (d ^ v[3]) * 0x100000001b3ULL;
        a ^= a >> 29;
        b ^= b >> 29;
        c ^= c >> 29;
        d ^= d >> 29;
        p += 32;
        n -= 32;
    }
    return cache__hash(p, n, mix64(a) ^ mix64(b + 1) ^ mix64(c + 2) ^ mix64(d + 3));
}

/* ---- names ------------------------------------------------------------------ */

int cache_segment_name(const char *state_dir, char *out, size_t cap)
{
    if (!state_dir || !out || cap < CACHE_SEGNAME_MAX)
        return -EINVAL;
    uint64_t h = cache__hash(state_dir, strlen(state_dir), 0x7261796f70ULL);
    snprintf(out, cap, "/rayop-%016llx", (unsigned long long)h);
    return 0;
}

static int check_name(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 2 || n >= CACHE_SEGNAME_MAX || name[0] != '/' || strchr(name + 1, '/'))
        return -EINVAL;
    return 0;
}

/* ---- layout ----------------------------------------------------------------- */

static uint64_t align64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

static int cache__layout(size_t bytes, uint32_t max_objects, struct cache_hdr *h)
{
    if (max_objects == 0 || max_objects > CACHE_MAX_OBJECTS || bytes < CACHE_MIN_BYTES)
        return -EINVAL;
    uint32_t nb = 1;
    while (nb < max_objects)
        nb <<= 1;
    uint64_t off = CACHE_HDR_SIZE;
    h->slots_off = off;
    off = align64(off + (uint64_t)max_objects * sizeof(struct cache_slot));
    h->key_off = off;
    off = align64(off + (uint64_t)nb * 4);
    h->owner_off = off;
    off = align64(off + (uint64_t)nb * 4);
    h->label_off = off;
    off = align64(off + (uint64_t)nb * 4);
    h->blob_off = off;
    if (off + 4096 > bytes)
        return -EINVAL; /* not even a page of object space */
    h->blob_size = (bytes - off) & ~(uint64_t)(CACHE_ALIGN - 1);
    h->total_size = bytes;
    h->max_objects = max_objects;
    h->nbuckets = nb;
    h->layout_version = CACHE_LAYOUT_VERSION;
    h->hdr_size = CACHE_HDR_SIZE;
    h->slot_size = sizeof(struct cache_slot);
    h->type_ent_size = sizeof(struct cache_type_ent);
    return 0;
}

static int cache__attach_geometry(struct cache *c, const uint8_t *base, size_t size)
{
    if (size < CACHE_HDR_SIZE)
        return -EIO;
    const struct cache_hdr *h = (const struct cache_hdr *)base;
    uint64_t magic = atomic_load_explicit(&((struct cache_hdr *)base)->magic, memory_order_acquire);
    if (magic == 0)
        return -EAGAIN; /* a writer is still initialising it */
    if (magic != CACHE_MAGIC)
        return -EIO;
    /* recompute the layout from the capacities and demand an exact match */
    struct cache_hdr want;
    memset(&want, 0, sizeof(want));
    if (h->layout_version != CACHE_LAYOUT_VERSION || h->hdr_size != CACHE_HDR_SIZE ||
        h->slot_size != sizeof(struct cache_slot) ||
        h->type_ent_size != sizeof(struct cache_type_ent) || h->total_size != size ||
        cache__layout(size, h->max_objects, &want) != 0 || want.nbuckets != h->nbuckets ||
        want.slots_off != h->slots_off || want.key_off != h->key_off ||
        want.owner_off != h->owner_off || want.label_off != h->label_off ||
        want.blob_off != h->blob_off || want.blob_size != h->blob_size)
        return -EIO;
    c->base = (uint8_t *)base;
    c->size = size;
    c->hdr = (struct cache_hdr *)base;
    c->max_objects = want.max_objects;
    c->nbuckets = want.nbuckets;
    c->slots = (struct cache_slot *)(c->base + want.slots_off);
    c->key_b = (_Atomic uint32_t *)(c->base + want.key_off);
    c->owner_b = (_Atomic uint32_t *)(c->base + want.owner_off);
    c->label_b = (_Atomic uint32_t *)(c->base + want.label_off);
    c->blob = c->base + want.blob_off;
    c->blob_size = want.blob_size;
    return 0;
}

/* ---- open / close ------------------------------------------------------------ */

static int map_fd(int fd, size_t size, int prot, uint8_t **out)
{
    void *p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    *out = p;
    return 0;
}

/* tmpfs: allocate now so running out shows up as ENOSPC here, not as SIGBUS later */
static int reserve(int fd, size_t size)
{
    int rc;
    do
        rc = posix_fallocate(fd, 0, (off_t)size);
    while (rc == EINTR);
    if (rc == EOPNOTSUPP || rc == EINVAL)
        rc = ftruncate(fd, (off_t)size) ? errno : 0;
    return -rc;
}

int cache__segment_create(struct cache *c, const char *name, size_t bytes, uint32_t max_objects)
{
    struct cache_hdr geo;
    memset(&geo, 0, sizeof(geo));
    int rc = cache__layout(bytes, max_objects, &geo);
    if (rc)
        return rc;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return -errno;
    uint8_t *base = NULL;
    if ((rc = fchmod(fd, 0600) ? -errno : 0) || (rc = reserve(fd, bytes)) ||
        (rc = map_fd(fd, bytes, PROT_READ | PROT_WRITE, &base))) {
        close(fd);
        shm_unlink(name);
        return rc;
    }
    close(fd);
    struct cache_hdr *h = (struct cache_hdr *)base;
    memcpy((uint8_t *)h + sizeof(h->magic), (uint8_t *)&geo + sizeof(geo.magic),
           offsetof(struct cache_hdr, writer_pid) - sizeof(h->magic));
    struct cache_slot *slots = (struct cache_slot *)(base + geo.slots_off);
    for (uint32_t i = 0; i < max_objects; i++)
        ST(slots[i].type, CACHE_SLOT_FREE);
    atomic_store_explicit(&h->writer_pid, (int32_t)getpid(), memory_order_relaxed);
    atomic_store_explicit(&h->epoch, 1, memory_order_relaxed);
    /* geometry before magic: a reader that sees the magic sees a complete header */
    atomic_store_explicit(&h->magic, CACHE_MAGIC, memory_order_release);
    rc = cache__attach_geometry(c, base, bytes);
    if (rc) {
        munmap(base, bytes);
        shm_unlink(name);
    }
    return rc;
}

/* Existing segment: 0 and mapped if it is ours, sane and of the asked capacity. */
static int attach_existing(struct cache *c, const char *name, size_t bytes, uint32_t max_objects)
{
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    uint8_t *base = NULL;
    if (fstat(fd, &st)) {
        rc = -errno;
    } else if (st.st_uid != geteuid() || (st.st_mode & 077)) {
        rc = -EPERM; /* not ours or readable by others: never trust it */
    } else if ((size_t)st.st_size < bytes) {
        rc = -EMSGSIZE;
    } else if (!(rc = map_fd(fd, (size_t)st.st_size, PROT_READ | PROT_WRITE, &base))) {
        /* larger than asked is fine: a previous writer grew it */
        rc = cache__attach_geometry(c, base, (size_t)st.st_size);
        if (!rc && c->max_objects < max_objects)
            rc = -EMSGSIZE;
        if (rc)
            munmap(base, (size_t)st.st_size);
    }
    close(fd);
    return rc;
}

struct cache *cache__handle_alloc(const char *name, bool writer)
{
    struct cache *c = calloc(1, sizeof(*c));
    if (c) {
        c->writer = writer;
        c->owns_map = true;
        snprintf(c->name, sizeof(c->name), "%s", name);
    }
    return c;
}

int cache_writer_open(const struct cache_config *cfg, struct cache **out)
{
    int rc;
    *out = NULL;
    if (!cfg || (rc = check_name(cfg->name)))
        return -EINVAL;
    size_t bytes = cfg->bytes ? cfg->bytes : CACHE_DEFAULT_BYTES;
    uint32_t maxo = cfg->max_objects ? cfg->max_objects : CACHE_DEFAULT_OBJECTS;
    struct cache_hdr probe;
    if ((rc = cache__layout(bytes, maxo, &probe)))
        return rc;
    struct cache *c = cache__handle_alloc(cfg->name, true);
    if (!c)
        return -ENOMEM;
    c->max_bytes = cfg->max_bytes;
    bool attached = false;
    rc = attach_existing(c, cfg->name, bytes, maxo);
    if (rc == 0) {
        attached = true;
    } else if (rc != -ENOENT) {
        char e[16];
        snprintf(e, sizeof(e), "%d", rc);
        log_warn("cache segment unusable, replacing it", "segment", cfg->name, "error", e, NULL);
        shm_unlink(cfg->name);
    }
    if (!attached && (rc = cache__segment_create(c, cfg->name, bytes, maxo)))
        goto out;
    if ((rc = cache__writer_init_state(c)))
        goto out;
    if (attached) {
        struct cache_hdr *h = c->hdr;
        int32_t old = atomic_load_explicit(&h->writer_pid, memory_order_relaxed);
        atomic_store_explicit(&h->writer_pid, (int32_t)getpid(), memory_order_relaxed);
        if ((rc = cache__writer_rebuild(c)))
            goto out;
        char pid[16], objs[24];
        snprintf(pid, sizeof(pid), "%d", old);
        snprintf(objs, sizeof(objs), "%llu",
                 (unsigned long long)atomic_load_explicit(&h->objects, memory_order_relaxed));
        log_info("cache segment re-attached", "segment", cfg->name, "previous_pid", pid,
                 "objects", objs, NULL);
    }
    *out = c;
    c = NULL;
out:
    if (c)
        cache_close(c);
    return rc;
}

int cache_reader_open(const char *name, struct cache **out)
{
    int rc;
    *out = NULL;
    if ((rc = check_name(name)))
        return rc;
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return -errno;
    struct stat st;
    struct cache *c = NULL;
    uint8_t *base = NULL;
    if (fstat(fd, &st)) {
        rc = -errno;
        goto out;
    }
    if (st.st_size < (off_t)CACHE_HDR_SIZE) {
        rc = st.st_size == 0 ? -EAGAIN : -EIO;
        goto out;
    }
    if ((rc = map_fd(fd, (size_t)st.st_size, PROT_READ, &base)))
        goto out;
    if (!(c = cache__handle_alloc(name, false))) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = cache__attach_geometry(c, base, (size_t)st.st_size)))
        goto out;
    *out = c;
    c = NULL;
    base = NULL;
out:
    if (base)
        munmap(base, (size_t)st.st_size);
    free(c);
    close(fd);
    return rc;
}

int cache__open_image(const void *img, size_t len, struct cache **out)
{
    *out = NULL;
    struct cache *c = cache__handle_alloc("/image", false);
    if (!c)
        return -ENOMEM;
    c->owns_map = false;
    int rc = cache__attach_geometry(c, img, len);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void cache_close(struct cache *c)
{
    if (!c)
        return;
    cache__writer_free_state(c);
    if (c->base && c->owns_map)
        munmap(c->base, c->size);
    free(c);
}

int cache_unlink(const char *name)
{
    int rc = check_name(name);
    if (rc)
        return rc;
    return shm_unlink(name) ? -errno : 0;
}

/* ---- reader plumbing ---------------------------------------------------------- */

uint64_t cache__wait_deadline_ns = CACHE_DEADLINE_NS;

bool cache__wait_more(struct cache_wait *w)
{
    if (w->spins < CACHE_SPINS) {
        w->spins++;
        return true;
    }
    uint64_t now = util_now_ns();
    if (!w->deadline)
        w->deadline = now + cache__wait_deadline_ns;
    if (now > w->deadline)
        return false;
    /* the writer may be descheduled inside its critical section: let it run */
    sched_yield();
    return true;
}

const uint8_t *cache__rec_at(struct cache *c, uint64_t off, uint32_t len, struct cache_rec *rec)
{
    if (len < sizeof(*rec) || off > c->blob_size || len > c->blob_size - off ||
        (off & (CACHE_ALIGN - 1)))
        return NULL;
    const uint8_t *p = c->blob + off;
    memcpy(rec, p, sizeof(*rec));
    uint64_t need = (uint64_t)sizeof(*rec) + rec->ns_len + rec->name_len + rec->uid_len +
                    rec->label_len + rec->rv_len + rec->body_len;
    if (need != len || rec->ns_len >= CACHE_NS_MAX || rec->name_len >= CACHE_NAME_MAX ||
        rec->uid_len >= CACHE_UID_MAX || rec->label_len >= CACHE_LABEL_MAX ||
        rec->rv_len >= CACHE_RV_MAX)
        return NULL;
    return p;
}

/* ---- types -------------------------------------------------------------------- */

static uint32_t ntypes(struct cache *c)
{
    uint32_t n = atomic_load_explicit(&c->hdr->ntypes, memory_order_acquire);
    return n > CACHE_MAX_TYPES ? CACHE_MAX_TYPES : n;
}

int cache_type_lookup(struct cache *c, const char *type)
{
    if (!c || !type || strlen(type) >= CACHE_TYPE_MAX)
        return -EINVAL;
    uint32_t n = ntypes(c);
    for (uint32_t i = 0; i < n; i++) {
        /* names are written once, before ntypes is published: no seq needed */
        char name[CACHE_TYPE_MAX];
        memcpy(name, c->hdr->types[i].name, sizeof(name));
        name[CACHE_TYPE_MAX - 1] = 0;
        if (strcmp(name, type) == 0)
            return (int)i;
    }
    return -ENOENT;
}

int cache_type_ensure(struct cache *c, const char *type)
{
    if (!c || !c->writer || !type || !*type || strlen(type) >= CACHE_TYPE_MAX)
        return -EINVAL;
    int id = cache_type_lookup(c, type);
    if (id != -ENOENT)
        return id;
    uint32_t n = ntypes(c);
    if (n >= CACHE_MAX_TYPES)
        return -ENOSPC;
    struct cache_type_ent *t = &c->hdr->types[n];
    cache_seq_write_begin(&t->seq);
    memset(t->name, 0, sizeof(t->name));
    memcpy(t->name, type, strlen(type));
    memset(t->rv, 0, sizeof(t->rv));
    ST(t->synced, 0);
    ST(t->objects, 0);
    cache_seq_write_end(&t->seq);
    atomic_store_explicit(&c->hdr->ntypes, n + 1, memory_order_release);
    return (int)n;
}

int cache_type_info(struct cache *c, int type, struct cache_type_info *out)
{
    if (!c || !out || type < 0 || (uint32_t)type >= ntypes(c))
        return -ENOENT;
    const struct cache_type_ent *t = &c->hdr->types[type];
    struct cache_wait w = { 0 };
    for (;;) {
        uint32_t s1 = cache_seq_begin(&t->seq);
        if (!(s1 & 1)) {
            memcpy(out->name, t->name, sizeof(out->name));
            memcpy(out->rv, t->rv, sizeof(out->rv));
            out->synced = LD(t->synced) != 0;
            out->objects = LD(t->objects);
            if (cache_seq_ok(&t->seq, s1))
                break;
        }
        if (!cache__wait_more(&w))
            return -EAGAIN;
    }
    out->name[sizeof(out->name) - 1] = 0;
    out->rv[sizeof(out->rv) - 1] = 0;
    return 0;
}

int cache_set_rv(struct cache *c, int type, const char *rv)
{
    if (!c || !c->writer || !rv || strlen(rv) >= CACHE_RV_MAX)
        return -EINVAL;
    if (type < 0 || (uint32_t)type >= ntypes(c))
        return -ENOENT;
    struct cache_type_ent *t = &c->hdr->types[type];
    cache_seq_write_begin(&t->seq);
    memset(t->rv, 0, sizeof(t->rv));
    memcpy(t->rv, rv, strlen(rv));
    cache_seq_write_end(&t->seq);
    atomic_fetch_add_explicit(&c->hdr->generation, 1, memory_order_release);
    return 0;
}

int cache_set_synced(struct cache *c, int type, bool synced)
{
    if (!c || !c->writer)
        return -EINVAL;
    if (type < 0 || (uint32_t)type >= ntypes(c))
        return -ENOENT;
    struct cache_type_ent *t = &c->hdr->types[type];
    cache_seq_write_begin(&t->seq);
    ST(t->synced, synced ? 1u : 0u);
    cache_seq_write_end(&t->seq);
    atomic_fetch_add_explicit(&c->hdr->generation, 1, memory_order_release);
    return 0;
}

int cache_info(struct cache *c, struct cache_info *out)
{
    if (!c || !out)
        return -EINVAL;
    struct cache_hdr *h = c->hdr;
    memset(out, 0, sizeof(*out));
    out->layout_version = h->layout_version;
    out->writer_pid = atomic_load_explicit(&h->writer_pid, memory_order_relaxed);
    out->generation = atomic_load_explicit(&h->generation, memory_order_acquire);
    out->epoch = atomic_load_explicit(&h->epoch, memory_order_relaxed);
    out->bytes_total = c->size;
    out->blob_bytes = c->blob_size;
    out->bytes_used = atomic_load_explicit(&h->bytes_used, memory_order_relaxed);
    out->max_objects = c->max_objects;
    out->objects = atomic_load_explicit(&h->objects, memory_order_relaxed);
    out->refused_writes = atomic_load_explicit(&h->refused_writes, memory_order_relaxed);
    out->compactions = atomic_load_explicit(&h->compactions, memory_order_relaxed);
    out->grows = atomic_load_explicit(&h->grows, memory_order_relaxed);
    out->ntypes = ntypes(c);
    memcpy(out->moved_to, h->moved_to, sizeof(out->moved_to));
    out->moved_to[sizeof(out->moved_to) - 1] = 0;
    return 0;
}

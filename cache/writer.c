/*
 * writer.c - the watcher's side of the cache: put/delete with the index
 * chains, the object-area allocator (size-class free lists, a
 * bump pointer, compaction when fragmented) and the rebuild a re-attaching
 * writer runs over what its predecessor left.
 *
 * All allocator and free-slot bookkeeping is private to the writer process and
 * rebuilt from the slots on attach, so the only shared truth is the slots and
 * their records - which the seqlocks protect (cache/internal.h, docs/cache.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "cache/internal.h"
#include "util/util.h"

#define NBINS      1024                 /* exact free lists for 16 .. 16 KiB */
#define BIN_MAX    ((uint64_t)NBINS * CACHE_ALIGN)

struct extent {
    uint64_t off;
    uint64_t size;
};

struct offstack {
    uint64_t *v;
    size_t n;
    size_t cap;
};

struct cache_wstate {
    uint32_t *free_slots; /* stack of free slot indexes */
    uint32_t nfree;
    uint32_t hw;          /* slots [0, hw) have been handed out */
    uint64_t top;         /* bump pointer in the object area */
    uint64_t live;        /* allocated bytes (rounded) */
    struct offstack bins[NBINS];
    struct extent *large; /* free extents > BIN_MAX */
    size_t nlarge;
    size_t cap_large;
    struct buf rec;       /* record being built */
};

static uint64_t round16(uint64_t n)
{
    return (n + CACHE_ALIGN - 1) & ~(uint64_t)(CACHE_ALIGN - 1);
}

/* ---- allocator ----------------------------------------------------------------- */

static int push_free(struct cache_wstate *w, uint64_t off, uint64_t size)
{
    if (size == 0)
        return 0;
    if (size <= BIN_MAX) {
        struct offstack *b = &w->bins[size / CACHE_ALIGN - 1];
        if (util_array_grow(&b->v, sizeof(*b->v), b->n, &b->cap, 16) < 0)
            return -ENOMEM;
        b->v[b->n++] = off;
        return 0;
    }
    if (util_array_grow(&w->large, sizeof(*w->large), w->nlarge, &w->cap_large, 16) < 0)
        return -ENOMEM;
    w->large[w->nlarge++] = (struct extent){ off, size };
    return 0;
}

static void clear_free(struct cache_wstate *w)
{
    for (int i = 0; i < NBINS; i++)
        w->bins[i].n = 0;
    w->nlarge = 0;
}

/* Takes size bytes (a multiple of 16) from a free extent of at least size. */
static int take_free(struct cache_wstate *w, uint64_t size, uint64_t *off)
{
    if (size <= BIN_MAX && w->bins[size / CACHE_ALIGN - 1].n) {
        struct offstack *b = &w->bins[size / CACHE_ALIGN - 1];
        *off = b->v[--b->n];
        return 0;
    }
    for (uint32_t i = 0; i < w->nlarge; i++) {
        if (w->large[i].size < size)
            continue;
        struct extent e = w->large[i];
        w->large[i] = w->large[--w->nlarge];
        *off = e.off;
        return push_free(w, e.off + size, e.size - size);
    }
    /* split a bigger small extent: worst case a scan of the bins */
    for (uint64_t s = size + CACHE_ALIGN; s <= BIN_MAX; s += CACHE_ALIGN) {
        struct offstack *b = &w->bins[s / CACHE_ALIGN - 1];
        if (!b->n)
            continue;
        *off = b->v[--b->n];
        return push_free(w, *off + size, s - size);
    }
    return -ENOSPC;
}

static int cmp_slot_off(const void *a, const void *b, void *arg)
{
    struct cache_slot *slots = arg;
    uint64_t x = LD(slots[*(const uint32_t *)a].blob_off);
    uint64_t y = LD(slots[*(const uint32_t *)b].blob_off);
    return x < y ? -1 : x > y;
}

/* Live slot indexes sorted by record offset, *out malloc'd (caller frees), with the
 * free lists emptied: both callers (compaction, re-attach) rebuild them from this
 * order. */
static int live_by_offset(struct cache *c, uint32_t **out, uint32_t *n)
{
    struct cache_wstate *w = c->w;
    uint32_t *v = malloc(((size_t)w->hw + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    clear_free(w);
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->hw; i++)
        if (LD(c->slots[i].type) != CACHE_SLOT_FREE)
            v[k++] = i;
    qsort_r(v, k, sizeof(*v), cmp_slot_off, c->slots);
    *out = v;
    *n = k;
    return 0;
}

/*
 * Slides records down to close the holes, lowest offset first. A record moves
 * only into a hole at least its own size: the copy never overlaps its source,
 * so if the writer dies mid-move the old record is still whole where the slot
 * points and the re-attach keeps it. Each move happens with the slot's seq odd,
 * and the destination is free space, so a reader copying any other record is
 * never disturbed and one copying the moved record retries.
 */
static int compact(struct cache *c)
{
    struct cache_wstate *w = c->w;
    uint32_t *order, n;
    int rc = live_by_offset(c, &order, &n);
    if (rc)
        return rc;
    uint64_t cursor = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        struct cache_slot *s = &c->slots[order[i]];
        uint64_t off = LD(s->blob_off);
        uint32_t len = LD(s->blob_len);
        if (off != cursor && cursor + round16(len) > off) {
            rc = push_free(w, cursor, off - cursor); /* hole too small: keep it */
            cursor = off;
        } else if (off != cursor) {
            cache_seq_write_begin(&s->seq);
            memcpy(c->blob + cursor, c->blob + off, len);
            ST(s->blob_off, cursor);
            cache_seq_write_end(&s->seq);
        }
        cursor += round16(len);
    }
    free(order);
    if (rc)
        return rc;
    w->top = cursor;
    atomic_fetch_add_explicit(&c->hdr->compactions, 1, memory_order_relaxed);
    log_info("cache object area compacted", "segment", c->name, NULL);
    return 0;
}

static int blob_alloc(struct cache *c, uint64_t size, uint64_t *off)
{
    struct cache_wstate *w = c->w;
    if (size <= BIN_MAX && w->bins[size / CACHE_ALIGN - 1].n)
        return take_free(w, size, off);
    if (w->top + size <= c->blob_size) {
        *off = w->top;
        w->top += size;
        return 0;
    }
    int rc = take_free(w, size, off);
    if (rc != -ENOSPC)
        return rc;
    if (c->blob_size - w->live < size)
        return -ENOSPC;
    if ((rc = compact(c)))
        return rc;
    if (w->top + size > c->blob_size)
        return -ENOSPC;
    *off = w->top;
    w->top += size;
    return 0;
}

static void blob_free(struct cache *c, uint64_t off, uint32_t len)
{
    struct cache_wstate *w = c->w;
    uint64_t size = round16(len);
    w->live -= size;
    if (off + size == w->top) {
        w->top = off;
        return;
    }
    /* on ENOMEM the extent is leaked until the next compaction, which finds it */
    (void)push_free(w, off, size);
}

/* ---- state -------------------------------------------------------------------- */

int cache__writer_init_state(struct cache *c)
{
    struct cache_wstate *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->free_slots = malloc((size_t)c->max_objects * sizeof(*w->free_slots));
    if (!w->free_slots) {
        free(w);
        return -ENOMEM;
    }
    c->w = w;
    return 0;
}

void cache__writer_free_state(struct cache *c)
{
    struct cache_wstate *w = c->w;
    if (!w)
        return;
    for (int i = 0; i < NBINS; i++)
        free(w->bins[i].v);
    free(w->large);
    free(w->free_slots);
    buf_free(&w->rec);
    free(w);
    c->w = NULL;
}

/* ---- chains ------------------------------------------------------------------- */

enum chain { CH_KEY, CH_OWNER, CH_LABEL };

static _Atomic uint32_t *chain_head(struct cache *c, enum chain ch, uint64_t h)
{
    _Atomic uint32_t *b = ch == CH_KEY ? c->key_b : ch == CH_OWNER ? c->owner_b : c->label_b;
    return &b[h & (c->nbuckets - 1)];
}

static _Atomic uint32_t *chain_next(struct cache_slot *s, enum chain ch)
{
    return ch == CH_KEY ? &s->key_next : ch == CH_OWNER ? &s->owner_next : &s->label_next;
}

/* Removes slot idx (whose seq the caller holds odd) from chain ch at hash h. */
static void chain_unlink(struct cache *c, enum chain ch, uint64_t h, uint32_t idx)
{
    _Atomic uint32_t *head = chain_head(c, ch, h);
    uint32_t next = LD(*chain_next(&c->slots[idx], ch));
    uint32_t cur = atomic_load_explicit(head, memory_order_relaxed);
    if (cur == idx + 1) {
        atomic_store_explicit(head, next, memory_order_release);
        return;
    }
    for (uint32_t steps = 0; cur && steps < c->max_objects; steps++) {
        struct cache_slot *p = &c->slots[cur - 1];
        _Atomic uint32_t *pn = chain_next(p, ch);
        if (LD(*pn) == idx + 1) {
            /* a reader standing on p must notice that its next changed */
            cache_seq_write_begin(&p->seq);
            ST(*pn, next);
            cache_seq_write_end(&p->seq);
            return;
        }
        cur = LD(*pn);
    }
}

/* Pushes slot idx (seq held odd by the caller) on chain ch; the head store
 * publishes it (release) - readers reaching it wait for the even seq. */
static void chain_link(struct cache *c, enum chain ch, uint64_t h, uint32_t idx)
{
    _Atomic uint32_t *head = chain_head(c, ch, h);
    ST(*chain_next(&c->slots[idx], ch), atomic_load_explicit(head, memory_order_relaxed));
    atomic_store_explicit(head, idx + 1, memory_order_release);
}

/* A new record: slot idx (seq held odd) on its key chain, and on the owner and label
 * chains when it has those hashes (0: none). */
static void chain_link_all(struct cache *c, uint64_t kh, uint64_t oh, uint64_t lh, uint32_t idx)
{
    chain_link(c, CH_KEY, kh, idx);
    if (oh)
        chain_link(c, CH_OWNER, oh, idx);
    if (lh)
        chain_link(c, CH_LABEL, lh, idx);
}

/* A record's owner or label changed: moves slot idx (seq held odd by the caller) from
 * the chain of hash old to that of hash now (0: no chain), storing now in the slot's
 * hash field between the two. */
static void chain_move(struct cache *c, enum chain ch, _Atomic uint64_t *field, uint64_t old,
                       uint64_t now, uint32_t idx)
{
    if (old == now)
        return;
    if (old)
        chain_unlink(c, ch, old, idx);
    ST(*field, now);
    if (now)
        chain_link(c, ch, now, idx);
}

/* The writer reads its own data: no seq dance. Slot index + 1 or 0. */
static uint32_t find_key(struct cache *c, uint32_t type, uint64_t h, const char *ns,
                         size_t nslen, const char *name, size_t namelen)
{
    uint32_t cur = atomic_load_explicit(chain_head(c, CH_KEY, h), memory_order_relaxed);
    for (uint32_t steps = 0; cur && steps < c->max_objects; steps++) {
        struct cache_slot *s = &c->slots[cur - 1];
        if (LD(s->type) == type && LD(s->key_hash) == h) {
            struct cache_rec r;
            const uint8_t *p = cache__rec_at(c, LD(s->blob_off), LD(s->blob_len), &r);
            if (p && r.ns_len == nslen && r.name_len == namelen &&
                memcmp(p + sizeof(r), ns, nslen) == 0 &&
                memcmp(p + sizeof(r) + nslen, name, namelen) == 0)
                return cur;
        }
        cur = LD(s->key_next);
    }
    return 0;
}

/* ---- put / delete ---------------------------------------------------------------- */

static bool fits(const char *s, size_t max)
{
    return strnlen(s, max) < max;
}

static int type_ok(struct cache *c, int type)
{
    if (!c || !c->writer)
        return -EINVAL;
    uint32_t n = atomic_load_explicit(&c->hdr->ntypes, memory_order_relaxed);
    return type >= 0 && (uint32_t)type < n && type < CACHE_MAX_TYPES ? 0 : -ENOENT;
}

static void refuse(struct cache *c, const char *what, const char *ns, const char *name)
{
    uint64_t n = atomic_fetch_add_explicit(&c->hdr->refused_writes, 1, memory_order_relaxed) + 1;
    /* every refusal is returned to the caller; the log line is rate-limited */
    if ((n & (n - 1)) == 0 || n % 1000 == 0) {
        char cnt[24];
        snprintf(cnt, sizeof(cnt), "%llu", (unsigned long long)n);
        log_error("cache full: write refused", "segment", c->name, "exhausted", what,
                  "namespace", ns, "name", name, "refused_total", cnt, NULL);
    }
}

static int put_once(struct cache *c, int type, const cJSON *obj, bool *created, bool may_grow);

int cache_put(struct cache *c, int type, const cJSON *obj, bool *created)
{
    return put_once(c, type, obj, created, true);
}

static int put_once(struct cache *c, int type, const cJSON *obj, bool *created, bool may_grow)
{
    int rc = type_ok(c, type);
    if (rc)
        return rc;
    const char *name = kobj_meta_str(obj, "name");
    const char *ns = kobj_meta_str(obj, "namespace");
    const char *rv = kobj_meta_str(obj, "resourceVersion");
    const char *uid = kobj_controller_uid(obj);
    const char *label = kobj_label(obj, CACHE_CLUSTER_LABEL);
    ns = ns ? ns : "";
    rv = rv ? rv : "";
    uid = uid ? uid : "";
    label = label ? label : "";
    if (!name || !*name || !fits(name, CACHE_NAME_MAX) || !fits(ns, CACHE_NS_MAX) ||
        !fits(rv, CACHE_RV_MAX) || !fits(uid, CACHE_UID_MAX) || !fits(label, CACHE_LABEL_MAX))
        return -EINVAL;

    struct cache_wstate *w = c->w;
    struct cache_rec r = { 0 };
    r.ns_len = (uint8_t)strlen(ns);
    r.name_len = (uint16_t)strlen(name);
    r.uid_len = (uint8_t)strlen(uid);
    r.label_len = (uint8_t)strlen(label);
    r.rv_len = (uint8_t)strlen(rv);
    buf_reset(&w->rec);
    if ((rc = buf_append(&w->rec, &r, sizeof(r))) || (rc = buf_append(&w->rec, ns, r.ns_len)) ||
        (rc = buf_append(&w->rec, name, r.name_len)) ||
        (rc = buf_append(&w->rec, uid, r.uid_len)) ||
        (rc = buf_append(&w->rec, label, r.label_len)) ||
        (rc = buf_append(&w->rec, rv, r.rv_len)))
        return rc;
    size_t body_at = w->rec.len;
    if ((rc = cache__encode_opts(obj, &w->rec, true)))
        return rc;
    if (w->rec.len > UINT32_MAX / 2)
        return -EINVAL;
    r.body_len = (uint32_t)(w->rec.len - body_at);
    memcpy(w->rec.data, &r, sizeof(r));
    uint64_t check = cache__rec_check((const uint8_t *)w->rec.data, w->rec.len);
    memcpy(w->rec.data, &check, sizeof(check));
    uint32_t len = (uint32_t)w->rec.len;

    uint64_t kh = cache__key_hash((uint32_t)type, ns, r.ns_len, name, r.name_len);
    uint64_t oh = *uid ? cache__owner_hash((uint32_t)type, uid, r.uid_len) : 0;
    uint64_t lh = *label ? cache__label_hash((uint32_t)type, ns, r.ns_len, label, r.label_len) : 0;
    uint32_t cur = find_key(c, (uint32_t)type, kh, ns, r.ns_len, name, r.name_len);
    if (!cur && w->nfree == 0 && w->hw >= c->max_objects) {
        if (may_grow && c->max_bytes && cache__grow(c) == 0)
            return put_once(c, type, obj, created, false);
        refuse(c, "objects", ns, name);
        return -ENOSPC;
    }
    uint64_t off;
    if ((rc = blob_alloc(c, round16(len), &off))) {
        if (rc == -ENOSPC && may_grow && c->max_bytes && cache__grow(c) == 0)
            return put_once(c, type, obj, created, false);
        if (rc == -ENOSPC)
            refuse(c, "bytes", ns, name);
        return rc;
    }
    w->live += round16(len);
    /* nobody reaches this space until a slot points at it (see blob_free's callers) */
    memcpy(c->blob + off, w->rec.data, len);

    struct cache_hdr *h = c->hdr;
    bool isnew = cur == 0;
    if (cur) {
        struct cache_slot *s = &c->slots[cur - 1];
        uint64_t old_off = LD(s->blob_off);
        uint32_t old_len = LD(s->blob_len);
        uint64_t old_oh = LD(s->owner_hash), old_lh = LD(s->label_hash);
        cache_seq_write_begin(&s->seq);
        ST(s->blob_off, off);
        ST(s->blob_len, len);
        chain_move(c, CH_OWNER, &s->owner_hash, old_oh, oh, cur - 1);
        chain_move(c, CH_LABEL, &s->label_hash, old_lh, lh, cur - 1);
        cache_seq_write_end(&s->seq);
        /* the seq moved on: readers of the old record retry, so it may be reused */
        blob_free(c, old_off, old_len);
        atomic_fetch_add_explicit(&h->bytes_used, (uint64_t)len - old_len, memory_order_relaxed);
    } else {
        uint32_t idx;
        if (w->nfree) {
            idx = w->free_slots[--w->nfree];
        } else {
            idx = w->hw++;
            atomic_store_explicit(&h->slot_hw, w->hw, memory_order_release);
        }
        struct cache_slot *s = &c->slots[idx];
        cache_seq_write_begin(&s->seq);
        ST(s->type, (uint32_t)type);
        ST(s->blob_off, off);
        ST(s->blob_len, len);
        ST(s->key_hash, kh);
        ST(s->owner_hash, oh);
        ST(s->label_hash, lh);
        ST(s->owner_next, 0);
        ST(s->label_next, 0);
        chain_link_all(c, kh, oh, lh, idx);
        cache_seq_write_end(&s->seq);
        cur = idx + 1;
        atomic_fetch_add_explicit(&h->types[type].objects, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->objects, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->bytes_used, len, memory_order_relaxed);
    }
    if (created)
        *created = isnew;
    atomic_fetch_add_explicit(&h->generation, 1, memory_order_release);
    return 0;
}

int cache_put_json(struct cache *c, int type, const char *json, size_t len, bool *created)
{
    if (!json)
        return -EINVAL;
    cJSON *obj = cJSON_ParseWithLength(json, len);
    if (!obj)
        return -EINVAL;
    int rc = cache_put(c, type, obj, created);
    cJSON_Delete(obj);
    return rc;
}

/* Unlinks and frees slot idx (the writer's own, known live). */
static void remove_slot(struct cache *c, uint32_t idx)
{
    struct cache_slot *s = &c->slots[idx];
    uint32_t type = LD(s->type);
    uint64_t off = LD(s->blob_off);
    uint32_t len = LD(s->blob_len);
    uint64_t oh = LD(s->owner_hash), lh = LD(s->label_hash);
    cache_seq_write_begin(&s->seq);
    chain_unlink(c, CH_KEY, LD(s->key_hash), idx);
    if (oh)
        chain_unlink(c, CH_OWNER, oh, idx);
    if (lh)
        chain_unlink(c, CH_LABEL, lh, idx);
    ST(s->type, CACHE_SLOT_FREE);
    ST(s->owner_hash, 0);
    ST(s->label_hash, 0);
    cache_seq_write_end(&s->seq);
    blob_free(c, off, len);
    c->w->free_slots[c->w->nfree++] = idx;
    struct cache_hdr *h = c->hdr;
    if (type < CACHE_MAX_TYPES)
        atomic_fetch_sub_explicit(&h->types[type].objects, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&h->objects, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&h->bytes_used, len, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->generation, 1, memory_order_release);
}

int cache_delete(struct cache *c, int type, const char *ns, const char *name)
{
    int rc = type_ok(c, type);
    if (rc)
        return rc;
    ns = ns ? ns : "";
    if (!name || !fits(name, CACHE_NAME_MAX) || !fits(ns, CACHE_NS_MAX))
        return -EINVAL;
    size_t nsl = strlen(ns), nl = strlen(name);
    uint32_t cur = find_key(c, (uint32_t)type, cache__key_hash((uint32_t)type, ns, nsl, name, nl),
                            ns, nsl, name, nl);
    if (!cur)
        return -ENOENT;
    remove_slot(c, cur - 1);
    return 0;
}

/* ---- re-attach ------------------------------------------------------------------- */

/*
 * Is slot i's record complete and self-consistent? Fills the hashes if so. The
 * checksum pass (memory bandwidth over every record) is only needed for a slot
 * the dead writer left odd: an even seq means its last change was finished.
 */
static bool slot_valid(struct cache *c, uint32_t i, uint32_t ntypes, bool torn, uint64_t *kh,
                       uint64_t *oh, uint64_t *lh)
{
    struct cache_slot *s = &c->slots[i];
    uint32_t type = LD(s->type);
    struct cache_rec r;
    const uint8_t *p = cache__rec_at(c, LD(s->blob_off), LD(s->blob_len), &r);
    if (type >= ntypes || !p || r.name_len == 0 ||
        (torn && cache__rec_check(p, LD(s->blob_len)) != r.check))
        return false;
    const char *ns = (const char *)p + sizeof(r);
    const char *name = ns + r.ns_len;
    const char *uid = name + r.name_len;
    const char *label = uid + r.uid_len;
    *kh = cache__key_hash(type, ns, r.ns_len, name, r.name_len);
    *oh = r.uid_len ? cache__owner_hash(type, uid, r.uid_len) : 0;
    *lh = r.label_len ? cache__label_hash(type, ns, r.ns_len, label, r.label_len) : 0;
    return true;
}

static void slot_drop(struct cache_slot *s)
{
    cache_seq_write_begin(&s->seq);
    ST(s->type, CACHE_SLOT_FREE);
    ST(s->owner_hash, 0);
    ST(s->label_hash, 0);
    cache_seq_write_end(&s->seq);
}

/*
 * A new writer takes over: readers are told to wait (state REBUILDING, epoch
 * bumped first so a lookup that began before notices), every chain and counter
 * is rebuilt from the records, a record the previous writer left half-written
 * (seq odd and the checksum wrong) or that overlaps another is dropped - its
 * event is re-delivered because the type's rv was stored after it (see
 * cache_put's contract) - and the private allocator is rebuilt around the
 * surviving records.
 */
int cache__writer_rebuild(struct cache *c)
{
    struct cache_hdr *h = c->hdr;
    struct cache_wstate *w = c->w;
    atomic_store_explicit(&h->state, CACHE_STATE_REBUILDING, memory_order_seq_cst);
    atomic_fetch_add_explicit(&h->epoch, 1, memory_order_seq_cst);
    /* the name leads here, so this is the current segment even if a writer died
     * growing out of it (grow.c) */
    memset(h->moved_to, 0, sizeof(h->moved_to));
    atomic_store_explicit(&h->retired, 0, memory_order_release);
    uint32_t ntypes = atomic_load_explicit(&h->ntypes, memory_order_relaxed);
    if (ntypes > CACHE_MAX_TYPES) {
        ntypes = CACHE_MAX_TYPES;
        atomic_store_explicit(&h->ntypes, ntypes, memory_order_relaxed);
    }
    for (uint32_t b = 0; b < c->nbuckets; b++) {
        ST(c->key_b[b], 0);
        ST(c->owner_b[b], 0);
        ST(c->label_b[b], 0);
    }
    for (uint32_t t = 0; t < CACHE_MAX_TYPES; t++) {
        struct cache_type_ent *te = &h->types[t];
        if (LD(te->seq) & 1)
            cache_seq_write_end(&te->seq); /* died inside set_rv: rv may be torn */
        te->name[CACHE_TYPE_MAX - 1] = 0;
        te->rv[CACHE_RV_MAX - 1] = 0;
        ST(te->objects, 0);
    }
    uint64_t objects = 0, bytes = 0, dropped = 0;
    w->hw = 0;
    w->nfree = 0;
    for (uint32_t i = 0; i < c->max_objects; i++) {
        struct cache_slot *s = &c->slots[i];
        uint64_t kh, oh, lh;
        bool torn = LD(s->seq) & 1;
        if (LD(s->type) == CACHE_SLOT_FREE) {
            if (torn)
                cache_seq_write_end(&s->seq);
            continue;
        }
        if (torn)
            cache_seq_write_end(&s->seq);
        if (!slot_valid(c, i, ntypes, torn, &kh, &oh, &lh)) {
            slot_drop(s);
            dropped++;
            continue;
        }
        cache_seq_write_begin(&s->seq);
        ST(s->key_hash, kh);
        ST(s->owner_hash, oh);
        ST(s->label_hash, lh);
        chain_link_all(c, kh, oh, lh, i);
        cache_seq_write_end(&s->seq);
        w->hw = i + 1;
    }
    /* allocator: records sorted by offset; overlapping ones are corrupt */
    uint32_t *order, n;
    int rc = live_by_offset(c, &order, &n);
    if (rc)
        return rc;
    uint64_t end = 0;
    for (uint32_t k = 0; k < n; k++) {
        struct cache_slot *s = &c->slots[order[k]];
        uint64_t off = LD(s->blob_off), size = round16(LD(s->blob_len));
        if (off < end) {
            chain_unlink(c, CH_KEY, LD(s->key_hash), order[k]);
            if (LD(s->owner_hash))
                chain_unlink(c, CH_OWNER, LD(s->owner_hash), order[k]);
            if (LD(s->label_hash))
                chain_unlink(c, CH_LABEL, LD(s->label_hash), order[k]);
            slot_drop(s);
            dropped++;
            continue;
        }
        if ((rc = push_free(w, end, off - end)))
            break;
        end = off + size;
        objects++;
        bytes += LD(s->blob_len);
        atomic_fetch_add_explicit(&h->types[LD(s->type)].objects, 1, memory_order_relaxed);
    }
    free(order);
    if (rc)
        return rc;
    w->top = end;
    w->live = 0;
    for (uint32_t i = w->hw; i-- > 0;) {
        if (LD(c->slots[i].type) == CACHE_SLOT_FREE)
            w->free_slots[w->nfree++] = i;
        else
            w->live += round16(LD(c->slots[i].blob_len));
    }
    atomic_store_explicit(&h->objects, objects, memory_order_relaxed);
    atomic_store_explicit(&h->bytes_used, bytes, memory_order_relaxed);
    atomic_store_explicit(&h->slot_hw, w->hw, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->generation, 1, memory_order_relaxed);
    atomic_store_explicit(&h->state, CACHE_STATE_OK, memory_order_release);
    if (dropped) {
        char d[24];
        snprintf(d, sizeof(d), "%llu", (unsigned long long)dropped);
        log_warn("cache re-attach dropped torn or corrupt objects", "segment", c->name,
                 "dropped", d, NULL);
    }
    return 0;
}

/* ---- growth: bulk copy into a fresh, larger segment ------------------------------ */

int cache__writer_copy(struct cache *dst, struct cache *src)
{
    struct cache_wstate *w = dst->w;
    uint64_t objects = 0, bytes = 0;
    for (uint32_t i = 0; i < src->w->hw; i++) {
        struct cache_slot *s = &src->slots[i];
        uint32_t type = LD(s->type);
        if (type == CACHE_SLOT_FREE)
            continue;
        uint32_t len = LD(s->blob_len);
        uint64_t size = round16(len);
        if (w->hw >= dst->max_objects || w->top + size > dst->blob_size)
            return -ENOSPC;
        uint32_t idx = w->hw++;
        uint64_t off = w->top;
        w->top += size;
        w->live += size;
        memcpy(dst->blob + off, src->blob + LD(s->blob_off), len);
        struct cache_slot *d = &dst->slots[idx];
        /* nobody maps dst yet: no seqlock dance needed */
        ST(d->type, type);
        ST(d->blob_off, off);
        ST(d->blob_len, len);
        ST(d->key_hash, LD(s->key_hash));
        ST(d->owner_hash, LD(s->owner_hash));
        ST(d->label_hash, LD(s->label_hash));
        ST(d->owner_next, 0);
        ST(d->label_next, 0);
        chain_link(dst, CH_KEY, LD(s->key_hash), idx);
        if (LD(s->owner_hash))
            chain_link(dst, CH_OWNER, LD(s->owner_hash), idx);
        if (LD(s->label_hash))
            chain_link(dst, CH_LABEL, LD(s->label_hash), idx);
        if (type < CACHE_MAX_TYPES)
            atomic_fetch_add_explicit(&dst->hdr->types[type].objects, 1, memory_order_relaxed);
        objects++;
        bytes += len;
    }
    atomic_store_explicit(&dst->hdr->objects, objects, memory_order_relaxed);
    atomic_store_explicit(&dst->hdr->bytes_used, bytes, memory_order_relaxed);
    atomic_store_explicit(&dst->hdr->slot_hw, w->hw, memory_order_relaxed);
    return 0;
}

/*
 * reader.c - lock-free reads of the segment: get by key, index lists (controller
 * owner uid, ray.io/cluster label), iteration by type and namespace.
 *
 * Every read follows the same pattern (docs/cache.md): load a bucket head
 * (acquire), and for each slot on the chain take its seq (must be even), read
 * the slot and whatever record bytes are needed into private memory, then
 * re-check the seq; any change restarts the walk. Every index and offset comes
 * from untrusted memory and is checked before use, walks are bounded by the
 * slot count, and retries by cache_wait_more's deadline, so a corrupt or
 * abandoned segment gives -EIO or -EAGAIN, never a crash or a hang.
 * A negative answer (not found, short list) is only trusted if no writer
 * re-attached meanwhile (the rebuild empties the chains first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/internal.h"
#include "util/util.h"

static uint64_t epoch_now(struct cache *c)
{
    return atomic_load_explicit(&c->hdr->epoch, memory_order_acquire);
}

/* After a walk: was the segment stable (no re-attach, not rebuilding)? */
static bool epoch_stable(struct cache *c, uint64_t e1)
{
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&c->hdr->state, memory_order_relaxed) == CACHE_STATE_OK &&
           atomic_load_explicit(&c->hdr->epoch, memory_order_relaxed) == e1;
}

static int check_type(struct cache *c, int type)
{
    if (!c)
        return -EINVAL;
    uint32_t n = atomic_load_explicit(&c->hdr->ntypes, memory_order_acquire);
    return type >= 0 && type < CACHE_MAX_TYPES && (uint32_t)type < n ? 0 : -ENOENT;
}

/* Grows b to hold n bytes (contents not kept). */
static int scratch_fit(struct buf *b, size_t n)
{
    if (b->cap >= n + 1)
        return 0;
    b->len = 0;
    return buf_reserve(b, n);
}

/* Where a lookup puts what it found. */
struct sink {
    void *buf;          /* body only (cache_get), or NULL */
    size_t cap;
    size_t len;
    char *rv;           /* optional */
    struct buf *rec;    /* whole record (callbacks), or NULL */
    struct cache_meta *meta; /* indexed fields only, or NULL */
};

/*
 * Finds (type, ns, name) and copies it to the sink. 0, -ENOENT, -ENOBUFS
 * (sink->len = needed body size), -EAGAIN, -EIO, -ESTALE, -ENOMEM.
 */
static int lookup(struct cache *c, int type, const char *ns, const char *name, struct sink *k)
{
    int rc = check_type(c, type);
    if (rc)
        return rc;
    ns = ns ? ns : "";
    if (!name)
        return -EINVAL;
    size_t nsl = strnlen(ns, CACHE_NS_MAX), nl = strnlen(name, CACHE_NAME_MAX);
    if (nsl >= CACHE_NS_MAX || nl >= CACHE_NAME_MAX)
        return -EINVAL;
    uint64_t kh = cache_key_hash((uint32_t)type, ns, nsl, name, nl);
    struct cache_wait wt = { 0 };
    for (int restarts = 0; restarts < CACHE_MAX_RESTARTS; restarts++) {
        if ((rc = cache_reader_gate(c)))
            return rc;
        uint64_t e1 = epoch_now(c);
        uint32_t cur = atomic_load_explicit(&c->key_b[kh & (c->nbuckets - 1)], memory_order_acquire);
        bool again = false;
        for (uint32_t steps = 0; cur && !again; steps++) {
            if (cur > c->max_objects || steps >= c->max_objects)
                return -EIO;
            struct cache_slot *s = &c->slots[cur - 1];
            uint32_t s1 = cache_seq_begin(&s->seq);
            if (s1 & 1) {
                again = true;
                break;
            }
            uint32_t stype = LD(s->type);
            uint64_t h = LD(s->key_hash);
            uint32_t next = LD(s->key_next);
            uint64_t off = LD(s->blob_off);
            uint32_t len = LD(s->blob_len);
            int found = 0;
            if (stype == (uint32_t)type && h == kh) {
                struct cache_rec r;
                const uint8_t *p = cache_rec_at(c, off, len, &r);
                if (!p) {
                    found = -EIO;
                } else if (r.ns_len == nsl && r.name_len == nl &&
                           memcmp(p + sizeof(r), ns, nsl) == 0 &&
                           memcmp(p + sizeof(r) + nsl, name, nl) == 0) {
                    const uint8_t *uid = p + sizeof(r) + nsl + nl;
                    const uint8_t *rvp = uid + r.uid_len + r.label_len;
                    found = 1;
                    k->len = r.body_len;
                    if (k->meta) {
                        memcpy(k->meta->owner_uid, uid, r.uid_len);
                        k->meta->owner_uid[r.uid_len] = 0;
                        memcpy(k->meta->cluster, uid + r.uid_len, r.label_len);
                        k->meta->cluster[r.label_len] = 0;
                        memcpy(k->meta->rv, rvp, r.rv_len);
                        k->meta->rv[r.rv_len] = 0;
                        k->meta->len = r.body_len;
                    } else if (k->rec) {
                        if ((rc = scratch_fit(k->rec, len)))
                            return rc;
                        memcpy(k->rec->data, p, len);
                        k->rec->len = len;
                    } else if (r.body_len <= k->cap) {
                        memcpy(k->buf, rvp + r.rv_len, r.body_len);
                    } else {
                        found = 2;
                    }
                    if (k->rv) {
                        memcpy(k->rv, rvp, r.rv_len);
                        k->rv[r.rv_len] = 0;
                    }
                }
            }
            if (!cache_seq_ok(&s->seq, s1)) {
                again = true;
                break;
            }
            if (found < 0)
                return found;
            if (found)
                return found == 2 ? -ENOBUFS : 0;
            cur = next;
        }
        if (!again) {
            if (epoch_stable(c, e1))
                return -ENOENT;
            continue; /* a writer re-attached: the gate decides */
        }
        if (!cache_wait_more(&wt))
            return -EAGAIN;
    }
    return -EAGAIN;
}

int cache_get(struct cache *c, int type, const char *ns, const char *name,
              void *buf, size_t cap, size_t *len, char *rv)
{
    struct sink k = { .buf = buf, .cap = buf ? cap : 0, .rv = rv };
    int rc = lookup(c, type, ns, name, &k);
    if (len && (rc == 0 || rc == -ENOBUFS))
        *len = k.len;
    return rc;
}

int cache_stat(struct cache *c, int type, const char *ns, const char *name,
               struct cache_meta *out)
{
    if (!out)
        return -EINVAL;
    struct sink k = { .meta = out };
    return lookup(c, type, ns, name, &k);
}

/* Splits a private record copy into the callback view. */
static int rec_view(int type, struct buf *rec, struct cache_obj *o, char strs[5][CACHE_NAME_MAX])
{
    struct cache_rec r;
    if (rec->len < sizeof(r))
        return -EIO;
    memcpy(&r, rec->data, sizeof(r));
    const char *p = rec->data + sizeof(r);
    size_t lens[5] = { r.ns_len, r.name_len, r.uid_len, r.label_len, r.rv_len };
    if (sizeof(r) + lens[0] + lens[1] + lens[2] + lens[3] + lens[4] + r.body_len != rec->len)
        return -EIO;
    for (int i = 0; i < 5; i++) {
        if (lens[i] >= CACHE_NAME_MAX)
            return -EIO;
        memcpy(strs[i], p, lens[i]);
        strs[i][lens[i]] = 0;
        p += lens[i];
    }
    o->type = type;
    o->ns = strs[0];
    o->name = strs[1];
    o->owner_uid = strs[2];
    o->cluster = strs[3];
    o->rv = strs[4];
    o->data = p;
    o->len = r.body_len;
    return 0;
}

int cache_get_json(struct cache *c, int type, const char *ns, const char *name, cJSON **out)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    struct buf rec = { 0 };
    struct sink k = { .rec = &rec };
    int rc = lookup(c, type, ns, name, &k);
    if (!rc) {
        struct cache_obj o;
        char strs[5][CACHE_NAME_MAX];
        if (!(rc = rec_view(type, &rec, &o, strs)))
            rc = cache_decode(o.data, o.len, out);
    }
    buf_free(&rec);
    return rc;
}

/* ---- iteration ------------------------------------------------------------------ */

int cache_foreach(struct cache *c, int type, const char *ns, cache_visit_fn fn, void *arg)
{
    int rc = check_type(c, type);
    if (rc)
        return rc;
    if (!fn)
        return -EINVAL;
    size_t nsl = ns ? strnlen(ns, CACHE_NS_MAX) : 0;
    if (nsl >= CACHE_NS_MAX)
        return -EINVAL;
    if ((rc = cache_reader_gate(c)))
        return rc;
    struct buf rec = { 0 };
    uint64_t hw = atomic_load_explicit(&c->hdr->slot_hw, memory_order_acquire);
    if (hw > c->max_objects)
        hw = c->max_objects;
    for (uint64_t i = 0; i < hw && !rc; i++) {
        struct cache_slot *s = &c->slots[i];
        struct cache_wait wt = { 0 };
        bool have = false;
        for (;;) {
            uint32_t s1 = cache_seq_begin(&s->seq);
            if (!(s1 & 1)) {
                have = false;
                if (LD(s->type) == (uint32_t)type) {
                    struct cache_rec r;
                    uint64_t off = LD(s->blob_off);
                    uint32_t len = LD(s->blob_len);
                    const uint8_t *p = cache_rec_at(c, off, len, &r);
                    if (p && (!ns || (r.ns_len == nsl && memcmp(p + sizeof(r), ns, nsl) == 0))) {
                        if ((rc = scratch_fit(&rec, len)))
                            break;
                        memcpy(rec.data, p, len);
                        rec.len = len;
                        have = true;
                    } else if (!p) {
                        rc = -EIO; /* unless the seq says it was torn */
                    }
                }
                if (cache_seq_ok(&s->seq, s1))
                    break;
                rc = 0;
            }
            if (!cache_wait_more(&wt)) {
                rc = -EAGAIN;
                break;
            }
        }
        if (rc || !have)
            continue;
        struct cache_obj o;
        char strs[5][CACHE_NAME_MAX];
        if (!(rc = rec_view(type, &rec, &o, strs)))
            rc = fn(&o, arg);
    }
    buf_free(&rec);
    return rc;
}

/* Walks the owner or cluster chain for matching objects and collects keys. */
static int list_index(struct cache *c, int type, bool owner, const char *ns, const char *value,
                      struct cache_key *keys, size_t cap)
{
    int rc = check_type(c, type);
    if (rc)
        return rc;
    ns = ns ? ns : "";
    if (!value)
        return -EINVAL;
    size_t nsl = strnlen(ns, CACHE_NS_MAX);
    size_t vl = strnlen(value, owner ? CACHE_UID_MAX : CACHE_LABEL_MAX);
    if (nsl >= CACHE_NS_MAX || vl >= (owner ? CACHE_UID_MAX : CACHE_LABEL_MAX))
        return -EINVAL;
    if (vl == 0)
        return 0; /* objects without an owner or label are not indexed */
    uint64_t want = owner ? cache_owner_hash((uint32_t)type, value, vl)
                          : cache_label_hash((uint32_t)type, ns, nsl, value, vl);
    _Atomic uint32_t *heads = owner ? c->owner_b : c->label_b;
    struct cache_wait wt = { 0 };
    for (int restarts = 0; restarts < CACHE_MAX_RESTARTS; restarts++) {
        if ((rc = cache_reader_gate(c)))
            return rc;
        uint64_t e1 = epoch_now(c);
        size_t n = 0;
        bool again = false;
        uint32_t cur = atomic_load_explicit(&heads[want & (c->nbuckets - 1)], memory_order_acquire);
        for (uint32_t steps = 0; cur; steps++) {
            if (cur > c->max_objects || steps >= c->max_objects)
                return -EIO;
            struct cache_slot *s = &c->slots[cur - 1];
            uint32_t s1 = cache_seq_begin(&s->seq);
            if (s1 & 1) {
                again = true;
                break;
            }
            uint32_t stype = LD(s->type);
            uint64_t h = owner ? LD(s->owner_hash) : LD(s->label_hash);
            uint32_t next = owner ? LD(s->owner_next) : LD(s->label_next);
            uint64_t off = LD(s->blob_off);
            uint32_t len = LD(s->blob_len);
            bool bad = false, match = false;
            if (stype == (uint32_t)type && h == want) {
                struct cache_rec r;
                const uint8_t *p = cache_rec_at(c, off, len, &r);
                if (!p) {
                    bad = true;
                } else {
                    const uint8_t *sns = p + sizeof(r);
                    const uint8_t *uid = sns + r.ns_len + r.name_len;
                    const uint8_t *lbl = uid + r.uid_len;
                    match = owner ? (r.uid_len == vl && memcmp(uid, value, vl) == 0)
                                  : (r.ns_len == nsl && memcmp(sns, ns, nsl) == 0 &&
                                     r.label_len == vl && memcmp(lbl, value, vl) == 0);
                    if (match && n < cap) {
                        memcpy(keys[n].ns, sns, r.ns_len);
                        keys[n].ns[r.ns_len] = 0;
                        memcpy(keys[n].name, sns + r.ns_len, r.name_len);
                        keys[n].name[r.name_len] = 0;
                    }
                }
            }
            if (!cache_seq_ok(&s->seq, s1)) {
                again = true;
                break;
            }
            if (bad)
                return -EIO;
            n += match;
            cur = next;
        }
        if (!again) {
            if (epoch_stable(c, e1))
                return n > INT32_MAX ? -EOVERFLOW : (int)n;
            continue;
        }
        if (!cache_wait_more(&wt))
            return -EAGAIN;
    }
    return -EAGAIN;
}

int cache_list_owner(struct cache *c, int type, const char *uid,
                     struct cache_key *keys, size_t cap)
{
    return list_index(c, type, true, NULL, uid, keys, keys ? cap : 0);
}

int cache_list_cluster(struct cache *c, int type, const char *ns, const char *value,
                       struct cache_key *keys, size_t cap)
{
    return list_index(c, type, false, ns, value, keys, keys ? cap : 0);
}

static int foreach_index(struct cache *c, int type, bool owner, const char *ns,
                         const char *value, cache_visit_fn fn, void *arg)
{
    if (!fn)
        return -EINVAL;
    struct cache_key stack[16], *keys = stack;
    size_t cap = 16;
    int n = -EAGAIN;
    for (int tries = 0; tries < 8; tries++) { /* the list may grow between calls */
        n = list_index(c, type, owner, ns, value, keys, cap);
        if (n < 0 || (size_t)n <= cap)
            break;
        if (keys != stack)
            free(keys);
        cap = (size_t)n + 16;
        if (!(keys = malloc(cap * sizeof(*keys))))
            return -ENOMEM;
        n = -EAGAIN;
    }
    int rc = n < 0 ? n : 0;
    struct buf rec = { 0 };
    for (int i = 0; i < n && !rc; i++) {
        struct sink k = { .rec = &rec };
        rc = lookup(c, type, keys[i].ns, keys[i].name, &k);
        if (rc == -ENOENT) { /* deleted since the list: skip, as an informer would */
            rc = 0;
            continue;
        }
        struct cache_obj o;
        char strs[5][CACHE_NAME_MAX];
        if (!rc && !(rc = rec_view(type, &rec, &o, strs)))
            rc = fn(&o, arg);
    }
    buf_free(&rec);
    if (keys != stack)
        free(keys);
    return rc;
}

int cache_foreach_owner(struct cache *c, int type, const char *uid, cache_visit_fn fn, void *arg)
{
    return foreach_index(c, type, true, NULL, uid, fn, arg);
}

int cache_foreach_cluster(struct cache *c, int type, const char *ns, const char *value,
                          cache_visit_fn fn, void *arg)
{
    return foreach_index(c, type, false, ns, value, fn, arg);
}

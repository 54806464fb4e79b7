/*
 * reader.c - lock-free reads of the segment: get by key, index lists (controller
 * owner uid, ray.io/cluster label), iteration by type and namespace.
 *
 * Every read follows the same pattern (docs/cache.md): load a bucket head
 * (acquire), and for each slot on the chain take its seq (must be even), read
 * the slot and whatever record bytes are needed into private memory, then
 * re-check the seq; any change restarts the walk. Every index and offset comes
 * from untrusted memory and is checked before use, walks are bounded by the
 * slot count, and retries by cache__wait_more's deadline, so a corrupt or
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

/* Every read starts here: -ESTALE once the segment is retired (grown: refresh the
 * handle), a bounded wait while a re-attaching writer rebuilds, else 0. */
static int reader_gate(struct cache *c)
{
    struct cache_wait w = { 0 };
    for (;;) {
        if (atomic_load_explicit(&c->hdr->retired, memory_order_acquire))
            return -ESTALE;
        /* a re-attaching writer rebuilds in milliseconds: wait for it, boundedly */
        if (atomic_load_explicit(&c->hdr->state, memory_order_acquire) == CACHE_STATE_OK)
            return 0;
        if (!cache__wait_more(&w))
            return -EAGAIN;
    }
}

static int check_type(struct cache *c, int type)
{
    if (!c)
        return -EINVAL;
    uint32_t n = atomic_load_explicit(&c->hdr->ntypes, memory_order_acquire);
    return type >= 0 && type < CACHE_MAX_TYPES && (uint32_t)type < n ? 0 : -ENOENT;
}

/* The arguments of a lookup or an index list: a known type, ns (NULL is "") and the
 * name or index value s, both shorter than their bounds; *ns, *nsl and *sl set. */
static int check_args(struct cache *c, int type, const char **ns, const char *s, size_t smax,
                      size_t *nsl, size_t *sl)
{
    int rc = check_type(c, type);
    if (rc)
        return rc;
    *ns = *ns ? *ns : "";
    if (!s)
        return -EINVAL;
    *nsl = strnlen(*ns, CACHE_NS_MAX);
    *sl = strnlen(s, smax);
    return *nsl >= CACHE_NS_MAX || *sl >= smax ? -EINVAL : 0;
}

/* Grows b to hold n bytes (contents not kept). */
static int scratch_fit(struct buf *b, size_t n)
{
    if (b->cap >= n + 1)
        return 0;
    b->len = 0;
    return buf_reserve(b, n);
}

/* ---- the one seqlock walk ------------------------------------------------------- */

/* Which slot link a walk follows: a bucket chain, or every slot in turn (iteration). */
enum chain { CHAIN_KEY, CHAIN_OWNER, CHAIN_LABEL, CHAIN_NONE };

/* A slot as one read saw it: only what the visitor needs, read between the seq checks. */
struct slot_view {
    const uint8_t *p;   /* the record (cache__rec_at checked its bounds), or NULL if corrupt */
    struct cache_rec r; /* its header */
    uint32_t len;       /* its length */
};

/*
 * A walk: the slots of `type` on `chain` (with `hash`; any slot with CHAIN_NONE) are
 * handed to visit, between the slot's seq begin and check. visit copies what it needs
 * into private memory, because a torn read (the writer held or changed the slot) runs
 * it again: 0 goes on, 1 stops the walk (found), negative fails it. A chain walk that
 * restarts calls reset first, so a count taken on the way starts over.
 */
struct walk {
    uint32_t type;
    enum chain chain;
    uint64_t hash;
    int (*visit)(struct walk *w, const struct slot_view *v);
    void (*reset)(struct walk *w);
};

#define SLOT_TORN 2

/* Reads slot s once under its seqlock and runs w->visit if it is w's: visit's result,
 * or SLOT_TORN when the writer held or changed the slot meanwhile (read it again).
 * *next gets the slot's link on w's chain. */
static int slot_read(struct cache *c, struct cache_slot *s, struct walk *w, uint32_t *next)
{
    uint32_t s1 = cache_seq_begin(&s->seq);
    if (s1 & 1)
        return SLOT_TORN;
    uint32_t stype = LD(s->type);
    uint64_t h = 0;
    switch (w->chain) {
    case CHAIN_KEY:   h = LD(s->key_hash);   *next = LD(s->key_next);   break;
    case CHAIN_OWNER: h = LD(s->owner_hash); *next = LD(s->owner_next); break;
    case CHAIN_LABEL: h = LD(s->label_hash); *next = LD(s->label_next); break;
    case CHAIN_NONE:  break;
    }
    uint64_t off = LD(s->blob_off);
    struct slot_view v = { .len = LD(s->blob_len) };
    int rc = 0;
    if (stype == w->type && (w->chain == CHAIN_NONE || h == w->hash)) {
        v.p = cache__rec_at(c, off, v.len, &v.r);
        rc = w->visit(w, &v);
    }
    return cache_seq_ok(&s->seq, s1) ? rc : SLOT_TORN;
}

/*
 * Walks w's chain from the bucket of w->hash: 1 when visit stopped it, 0 at the end of
 * the chain, or -EIO (a link out of bounds, a chain longer than the slots), -EAGAIN,
 * -ESTALE or visit's error. A torn slot restarts the walk (bounded by cache__wait_more);
 * the end of the chain is trusted only if no writer re-attached meanwhile.
 */
static int chain_walk(struct cache *c, struct walk *w)
{
    _Atomic uint32_t *heads = w->chain == CHAIN_KEY ? c->key_b
                            : w->chain == CHAIN_OWNER ? c->owner_b : c->label_b;
    struct cache_wait wt = { 0 };
    int rc;
    for (int restarts = 0; restarts < CACHE_MAX_RESTARTS; restarts++) {
        if ((rc = reader_gate(c)))
            return rc;
        uint64_t e1 = epoch_now(c);
        uint32_t cur = atomic_load_explicit(&heads[w->hash & (c->nbuckets - 1)], memory_order_acquire);
        if (w->reset)
            w->reset(w);
        rc = 0;
        for (uint32_t steps = 0; cur && rc == 0; steps++) {
            if (cur > c->max_objects || steps >= c->max_objects)
                return -EIO;
            rc = slot_read(c, &c->slots[cur - 1], w, &cur);
        }
        if (rc == SLOT_TORN) {
            if (!cache__wait_more(&wt))
                return -EAGAIN;
            continue;
        }
        if (rc != 0 || epoch_stable(c, e1))
            return rc;
        /* a writer re-attached: the gate decides */
    }
    return -EAGAIN;
}

/* ---- get ------------------------------------------------------------------------ */

/* A lookup: the key it wants and where it puts what it found. */
struct lookup {
    struct walk w;
    const char *ns, *name;
    size_t nsl, nl;
    void *buf;          /* body only (cache_get), or NULL */
    size_t cap;
    size_t len;         /* the body's size */
    bool nobufs;        /* the body did not fit in buf */
    char *rv;           /* optional */
    struct buf *rec;    /* whole record (callbacks), or NULL */
    struct cache_meta *meta; /* indexed fields only, or NULL */
};

static int lookup_visit(struct walk *w, const struct slot_view *v)
{
    struct lookup *k = (struct lookup *)w;
    const struct cache_rec *r = &v->r;
    const uint8_t *p = v->p;
    int rc;
    if (!p)
        return -EIO;
    if (r->ns_len != k->nsl || r->name_len != k->nl || memcmp(p + sizeof(*r), k->ns, k->nsl) ||
        memcmp(p + sizeof(*r) + k->nsl, k->name, k->nl))
        return 0;
    const uint8_t *uid = p + sizeof(*r) + k->nsl + k->nl;
    const uint8_t *rvp = uid + r->uid_len + r->label_len;
    k->len = r->body_len;
    k->nobufs = false;
    if (k->meta) {
        memcpy(k->meta->owner_uid, uid, r->uid_len);
        k->meta->owner_uid[r->uid_len] = 0;
        memcpy(k->meta->cluster, uid + r->uid_len, r->label_len);
        k->meta->cluster[r->label_len] = 0;
        memcpy(k->meta->rv, rvp, r->rv_len);
        k->meta->rv[r->rv_len] = 0;
        k->meta->len = r->body_len;
    } else if (k->rec) {
        if ((rc = scratch_fit(k->rec, v->len)))
            return rc;
        memcpy(k->rec->data, p, v->len);
        k->rec->len = v->len;
    } else if (r->body_len <= k->cap) {
        memcpy(k->buf, rvp + r->rv_len, r->body_len);
    } else {
        k->nobufs = true;
    }
    if (k->rv) {
        memcpy(k->rv, rvp, r->rv_len);
        k->rv[r->rv_len] = 0;
    }
    return 1;
}

/*
 * Finds (type, ns, name) and copies it to k. 0, -ENOENT, -ENOBUFS
 * (k->len = needed body size), -EAGAIN, -EIO, -ESTALE, -ENOMEM.
 */
static int lookup(struct cache *c, int type, const char *ns, const char *name, struct lookup *k)
{
    int rc = check_args(c, type, &ns, name, CACHE_NAME_MAX, &k->nsl, &k->nl);
    if (rc)
        return rc;
    k->ns = ns;
    k->name = name;
    k->w = (struct walk){ .type = (uint32_t)type, .chain = CHAIN_KEY, .visit = lookup_visit,
                          .hash = cache__key_hash((uint32_t)type, ns, k->nsl, name, k->nl) };
    rc = chain_walk(c, &k->w);
    if (rc == 0)
        return -ENOENT;
    if (rc < 0)
        return rc;
    return k->nobufs ? -ENOBUFS : 0;
}

int cache_get(struct cache *c, int type, const char *ns, const char *name,
              void *buf, size_t cap, size_t *len, char *rv)
{
    struct lookup k = { .buf = buf, .cap = buf ? cap : 0, .rv = rv };
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
    struct lookup k = { .meta = out };
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
    struct lookup k = { .rec = &rec };
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

/* Iteration copies a slot's record when it is in the namespace wanted. */
struct iter {
    struct walk w;
    const char *ns;     /* NULL: all */
    size_t nsl;
    struct buf rec;
};

static int iter_visit(struct walk *w, const struct slot_view *v)
{
    struct iter *it = (struct iter *)w;
    int rc;
    if (!v->p)
        return -EIO;    /* unless the seq says it was torn */
    if (it->ns && (v->r.ns_len != it->nsl || memcmp(v->p + sizeof(v->r), it->ns, it->nsl)))
        return 0;
    if ((rc = scratch_fit(&it->rec, v->len)))
        return rc;
    memcpy(it->rec.data, v->p, v->len);
    it->rec.len = v->len;
    return 1;
}

int cache_foreach(struct cache *c, int type, const char *ns, cache_visit_fn fn, void *arg)
{
    int rc = check_type(c, type);
    if (rc)
        return rc;
    if (!fn)
        return -EINVAL;
    struct iter it = { .w = { .type = (uint32_t)type, .chain = CHAIN_NONE, .visit = iter_visit },
                       .ns = ns, .nsl = ns ? strnlen(ns, CACHE_NS_MAX) : 0 };
    if (it.nsl >= CACHE_NS_MAX)
        return -EINVAL;
    if ((rc = reader_gate(c)))
        return rc;
    uint64_t hw = atomic_load_explicit(&c->hdr->slot_hw, memory_order_acquire);
    if (hw > c->max_objects)
        hw = c->max_objects;
    for (uint64_t i = 0; i < hw && !rc; i++) {
        struct cache_wait wt = { 0 };
        uint32_t next;
        while ((rc = slot_read(c, &c->slots[i], &it.w, &next)) == SLOT_TORN)
            if (!cache__wait_more(&wt)) {
                rc = -EAGAIN;
                break;
            }
        if (rc != 1)
            continue;
        struct cache_obj o;
        char strs[5][CACHE_NAME_MAX];
        if (!(rc = rec_view(type, &it.rec, &o, strs)))
            rc = fn(&o, arg);
    }
    buf_free(&it.rec);
    return rc;
}

/* An index list: the keys of the objects with the owner uid or ray.io/cluster label. */
struct index_list {
    struct walk w;
    const char *ns, *value;
    size_t nsl, vl;
    struct cache_key *keys;
    size_t cap, n;
};

static int index_visit(struct walk *w, const struct slot_view *v)
{
    struct index_list *l = (struct index_list *)w;
    const struct cache_rec *r = &v->r;
    if (!v->p)
        return -EIO;
    const uint8_t *sns = v->p + sizeof(*r);
    const uint8_t *uid = sns + r->ns_len + r->name_len;
    const uint8_t *lbl = uid + r->uid_len;
    bool match = w->chain == CHAIN_OWNER
                     ? r->uid_len == l->vl && memcmp(uid, l->value, l->vl) == 0
                     : r->ns_len == l->nsl && memcmp(sns, l->ns, l->nsl) == 0 &&
                       r->label_len == l->vl && memcmp(lbl, l->value, l->vl) == 0;
    if (!match)
        return 0;
    if (l->n < l->cap) {
        struct cache_key *k = &l->keys[l->n];
        memcpy(k->ns, sns, r->ns_len);
        k->ns[r->ns_len] = 0;
        memcpy(k->name, sns + r->ns_len, r->name_len);
        k->name[r->name_len] = 0;
    }
    l->n++;
    return 0;
}

static void index_reset(struct walk *w)
{
    ((struct index_list *)w)->n = 0;
}

/* Walks the owner or cluster chain for matching objects and collects keys. */
static int list_index(struct cache *c, int type, bool owner, const char *ns, const char *value,
                      struct cache_key *keys, size_t cap)
{
    struct index_list l = { .value = value, .keys = keys, .cap = cap };
    int rc = check_args(c, type, &ns, value, owner ? CACHE_UID_MAX : CACHE_LABEL_MAX, &l.nsl,
                        &l.vl);
    if (rc)
        return rc;
    l.ns = ns;
    if (l.vl == 0)
        return 0; /* objects without an owner or label are not indexed */
    l.w = (struct walk){ .type = (uint32_t)type, .chain = owner ? CHAIN_OWNER : CHAIN_LABEL,
                         .hash = owner ? cache__owner_hash((uint32_t)type, value, l.vl)
                                       : cache__label_hash((uint32_t)type, ns, l.nsl, value, l.vl),
                         .visit = index_visit, .reset = index_reset };
    if ((rc = chain_walk(c, &l.w)) < 0)
        return rc;
    return l.n > INT32_MAX ? -EOVERFLOW : (int)l.n;
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
        struct lookup k = { .rec = &rec };
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

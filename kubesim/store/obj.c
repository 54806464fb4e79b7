/*
 * obj.c - kubesim's stored object snapshots: immutable, reference-counted, their
 * compact JSON text with the names behind it, and the tree a reader gets from
 * store_obj_json.
 *
 * Memory: most snapshots of a busy cluster (Pods, Events, Services, Endpoints,
 * EndpointSlices, RayClusters) are kept as text alone, since a cJSON tree takes 2-3x
 * the bytes of its text. Readers that go through many of them (the simulated
 * cluster's turn, the GC, a table of a list) open a tree scope on their thread: the
 * trees they read are parsed into the scope and freed when it ends, rather than
 * staying with snapshots that live on in the cluster's tables. Other types keep the
 * tree their writer built, packed into one block.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct store_obj *store_obj_ref(struct store_obj *o)
{
    if (o)
        __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
    return o;
}

/* Bytes of the fresh snapshots kept plain (store__obj_compact), process-wide. */
static _Atomic size_t fresh_bytes;

void store_obj_unref(struct store_obj *o)
{
    if (!o || __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (o->fresh)
        atomic_fetch_sub_explicit(&fresh_bytes, o->len + 1, memory_order_relaxed);
    free(__atomic_load_n(&o->tree, __ATOMIC_ACQUIRE));
    free((char *)o->blob);
    store__zdict_unref(o->zd);
    free(o);
}

/*
 * Objects are printed into a per-thread scratch buffer (json.c) and copied
 * once into an exact-size allocation that lives as long as the snapshot.
 */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *v)
{
    buf_free(v);
    free(v);
}

static void scratch_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
}

/* The text and, after its NUL, room for `extra` more bytes (the names). */
static char *print_compact(const cJSON *json, size_t *len, size_t extra)
{
    struct buf *sc;
    char *out = NULL;

    pthread_once(&scratch_once, scratch_init);
    sc = pthread_getspecific(scratch_key);
    if (!sc) {
        sc = calloc(1, sizeof(*sc));
        if (!sc || pthread_setspecific(scratch_key, sc)) {
            free(sc);
            return NULL;
        }
    }
    buf_reset(sc);
    if (store__json_print(json, sc) == 0 && (out = malloc(sc->len + 1 + extra))) {
        memcpy(out, sc->data, sc->len);
        out[sc->len] = 0;
        *len = sc->len;
    }
    if (sc->cap > (8u << 20)) {
        /* do not keep a huge CRD's buffer around per thread */
        buf_free(sc);
    }
    return out;
}

/*
 * Stores each metadata.managedFields[].fieldsV1 of a snapshot as one cJSON_Raw node
 * holding its compact JSON, instead of a tree of a hundred small nodes and keys: on
 * a Pod that is a third of the snapshot's memory, and every new page costs a page
 * fault (see docs/kubesim-store.md, Performance). The bytes printed are the same;
 * patch_apply's mf_load reads either form. A fieldsV1 that cannot be converted
 * stays a tree.
 */
static void compact_managed_fields(cJSON *json)
{
    cJSON *mf = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(json, "metadata"), "managedFields"), *e;
    struct buf b = {0};

    if (!cJSON_IsArray(mf))
        return;
    cJSON_ArrayForEach(e, mf) {
        cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "fieldsV1"), *raw;
        if (!cJSON_IsObject(f))
            continue;
        buf_reset(&b);
        if (store__json_print(f, &b) || buf_append(&b, "", 1) || !(raw = cJSON_CreateRaw(b.data)))
            continue;
        cJSON_ReplaceItemInObjectCaseSensitive(e, "fieldsV1", raw);
    }
    buf_free(&b);
}

/* A text-only type gets its compression dictionary once it holds this many objects
 * (ztext.c): enough to cover its usual shapes (a RayCluster's head and worker Pods). */
#define ZDICT_AFTER 16

/* Types whose objects are kept as text alone: read as trees by the simulated cluster
 * (inside its tree scope) and the write path, and most of the objects of a busy
 * cluster. Nodes, Namespaces, CRDs and the rest keep their trees: few, and read
 * outside any scope (scheduling, validation). */
static bool text_only(const struct reg_resource *res)
{
    static const char *const core[] = { "events", "pods", "services", "endpoints" };

    if (store__events_v1(res) || !strcmp(res->group, "ray.io"))
        return true;
    if (!strcmp(res->group, "discovery.k8s.io"))
        return !strcmp(res->plural, "endpointslices");
    if (res->group[0])
        return false;
    for (size_t i = 0; i < sizeof(core) / sizeof(core[0]); i++)
        if (!strcmp(res->plural, core[i]))
            return true;
    return false;
}

/* ---- tree scopes (per thread) ---- */

/* A tree read inside the thread's scope. The entry holds a reference to its snapshot,
 * so the address cannot be reused by another snapshot while the entry lives. The
 * table's insertion order is the order of last use (a hit moves the entry to the end),
 * so a trim frees the trees read longest ago and keeps the ones the thread is working
 * on: a Pod's bind, status writes and timers read the same snapshots again within a
 * few turns, and freeing every tree at once made each of those reads parse the Pod. */
struct scope_tree {
    const struct store_obj *o;
    cJSON *tree;                /* packed: one block */
    size_t bytes;               /* its allocation */
    UT_hash_handle hh;
};

static _Thread_local struct scope_tree *scope_trees;
static _Thread_local size_t scope_bytes;
static _Thread_local unsigned scope_depth;
/* every thread's scopes together, for GET /kubesim/memory */
static _Atomic size_t scopes_trees, scopes_bytes;

static void scope_drop(struct scope_tree *e)
{
    HASH_DEL(scope_trees, e);
    scope_bytes -= e->bytes;
    atomic_fetch_sub_explicit(&scopes_trees, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&scopes_bytes, e->bytes + sizeof(*e), memory_order_relaxed);
    free(e->tree);
    store_obj_unref((struct store_obj *)e->o);
    free(e);
}

/* Frees the least recently used trees until at most keep bytes of trees are left. */
static void scope_shrink(size_t keep)
{
    while (scope_trees && scope_bytes > keep)
        scope_drop(scope_trees);   /* the head is the least recently used */
}

static cJSON *scope_find(const struct store_obj *o)
{
    struct scope_tree *e;

    if (!scope_trees)
        return NULL;
    HASH_FIND_PTR(scope_trees, &o, e);
    if (e && e->hh.next) {
        /* used again: to the end of the order */
        HASH_DEL(scope_trees, e);
        HASH_ADD_PTR(scope_trees, o, e);
    }
    return e ? e->tree : NULL;
}

/* Hands the packed tree of o (consumed only on success) to the scope. 0 or -ENOMEM. */
static int scope_put(const struct store_obj *o, cJSON *tree)
{
    struct scope_tree *e = malloc(sizeof(*e));

    if (!e)
        return -ENOMEM;
    memset(e, 0, sizeof(*e));
    e->o = store_obj_ref((struct store_obj *)o);
    e->tree = tree;
    e->bytes = malloc_usable_size(tree);
    HASH_ADD_PTR(scope_trees, o, e);
    scope_bytes += e->bytes;
    atomic_fetch_add_explicit(&scopes_trees, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&scopes_bytes, e->bytes + sizeof(*e), memory_order_relaxed);
    return 0;
}

void store__scope_measure(size_t *trees, size_t *bytes)
{
    *trees = atomic_load_explicit(&scopes_trees, memory_order_relaxed);
    *bytes = atomic_load_explicit(&scopes_bytes, memory_order_relaxed);
}

void store_tree_scope_begin(void)
{
    scope_depth++;
}

void store_tree_scope_end(void)
{
    if (scope_depth && --scope_depth == 0)
        scope_shrink(0);
}

void store_tree_scope_trim(size_t keep_bytes)
{
    scope_shrink(keep_bytes);
}

void store_tree_scope_forget(const struct store_obj *o)
{
    struct scope_tree *e = NULL;

    if (scope_trees && o)
        HASH_FIND_PTR(scope_trees, &o, e);
    if (e)
        scope_drop(e);
}

/* ---- trees handed over (process-wide) ---- */

/*
 * A Pod or Service written outside any tree scope (a client's create or update, on an
 * HTTP thread) is read next by the simulated cluster, which parsed its text again into
 * its scope: every Pod rayop creates was parsed twice. The writer's packed tree is what
 * that parse gives (a scope already keeps its own writer's trees), so the commit hands
 * it over here and the first reader that parses the snapshot takes it instead. Other
 * types are not read back on every change (rayop's RayCluster status writes would only
 * crowd the Pods out).
 *
 * Bounded to HANDOFF_MAX_BYTES of trees. The cluster reads changes in commit order, so
 * when it is behind, the oldest trees are the next it takes: a full handoff refuses new
 * trees rather than dropping the old ones, except ones older than HANDOFF_MAX_AGE_S
 * (nobody is coming for those). Each entry holds a reference to its snapshot, so the
 * address it is found by is never another snapshot's.
 */
#define HANDOFF_MAX_BYTES (32u << 20)
#define HANDOFF_MAX_AGE_S 30

struct handoff {
    const struct store_obj *o;
    cJSON *tree;                /* packed: one block */
    size_t bytes;               /* its allocation */
    time_t at;                  /* when it was handed over (monotonic) */
    UT_hash_handle hh;          /* insertion order: the oldest first */
};

static pthread_mutex_t handoff_mu = PTHREAD_MUTEX_INITIALIZER;
static struct handoff *handoffs;        /* under handoff_mu */
static size_t handoff_bytes;            /* under handoff_mu */
static _Atomic size_t handoff_n;        /* read without the mutex by the early exit */
static _Atomic unsigned long long handoff_taken;

static void handoff_free(struct handoff *h)
{
    atomic_fetch_sub_explicit(&scopes_trees, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&scopes_bytes, h->bytes + sizeof(*h), memory_order_relaxed);
    free(h->tree);
    store_obj_unref((struct store_obj *)h->o);
    free(h);
}

static bool handed_over(const struct reg_resource *res)
{
    return res->builtin && !res->group[0] &&
           (!strcmp(res->plural, "pods") || !strcmp(res->plural, "services"));
}

/* Hands o's packed tree (consumed on success) to the next reader. 0, -ENOSPC (full) or
 * -ENOMEM. */
static int handoff_put(const struct store_obj *o, cJSON *tree)
{
    struct handoff *h, *stale = NULL, *old;
    struct timespec now;
    size_t bytes = malloc_usable_size(tree);

    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&handoff_mu);
    while (handoff_bytes + bytes > HANDOFF_MAX_BYTES && handoffs &&
           handoffs->at + HANDOFF_MAX_AGE_S <= now.tv_sec) {
        old = handoffs;
        HASH_DEL(handoffs, old);
        handoff_bytes -= old->bytes;
        atomic_fetch_sub_explicit(&handoff_n, 1, memory_order_relaxed);
        old->hh.next = stale;   /* freed outside the mutex */
        stale = old;
    }
    if (handoff_bytes + bytes > HANDOFF_MAX_BYTES) {
        pthread_mutex_unlock(&handoff_mu);
        h = NULL;
        goto out;
    }
    pthread_mutex_unlock(&handoff_mu);
    if (!(h = malloc(sizeof(*h))))
        goto out;
    memset(h, 0, sizeof(*h));
    h->o = store_obj_ref((struct store_obj *)o);
    h->tree = tree;
    h->bytes = bytes;
    h->at = now.tv_sec;
    atomic_fetch_add_explicit(&scopes_trees, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&scopes_bytes, bytes + sizeof(*h), memory_order_relaxed);
    pthread_mutex_lock(&handoff_mu);
    HASH_ADD_PTR(handoffs, o, h);
    handoff_bytes += bytes;
    atomic_fetch_add_explicit(&handoff_n, 1, memory_order_relaxed);
    pthread_mutex_unlock(&handoff_mu);
out:
    while (stale) {
        old = stale;
        stale = old->hh.next;
        handoff_free(old);
    }
    return h ? 0 : -ENOSPC;
}

/* o's tree handed over by its writer (the caller's now), or NULL. The caller holds a
 * reference to o, so dropping the entry's never frees o. */
static cJSON *handoff_take(const struct store_obj *o)
{
    struct handoff *h = NULL;
    cJSON *t;

    if (!atomic_load_explicit(&handoff_n, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&handoff_mu);
    HASH_FIND_PTR(handoffs, &o, h);
    if (h) {
        HASH_DEL(handoffs, h);
        handoff_bytes -= h->bytes;
        atomic_fetch_sub_explicit(&handoff_n, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&handoff_mu);
    if (!h)
        return NULL;
    atomic_fetch_add_explicit(&handoff_taken, 1, memory_order_relaxed);
    t = h->tree;
    h->tree = NULL;
    handoff_free(h);
    return t;
}

uint64_t store__handoff_taken(void)
{
    return atomic_load_explicit(&handoff_taken, memory_order_relaxed);
}

void store__handoff_clear(void)
{
    struct handoff *h, *tmp, *all;

    pthread_mutex_lock(&handoff_mu);
    all = handoffs;
    handoffs = NULL;
    handoff_bytes = 0;
    atomic_store_explicit(&handoff_n, 0, memory_order_relaxed);
    pthread_mutex_unlock(&handoff_mu);
    HASH_ITER(hh, all, h, tmp) {
        HASH_DEL(all, h);
        handoff_free(h);
    }
}

/* A tree packed into one block, fieldsV1 compacted; json is consumed. */
static cJSON *tree_pack(cJSON *json)
{
    cJSON *packed;

    compact_managed_fields(json);
    packed = store__json_pack(json);
    cJSON_Delete(json);
    return packed;
}

static const char *md_str(const cJSON *md, const char *k)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, k));
    return v ? v : "";
}

/* A snapshot of bytes (len, with room after its NUL for the names) holding tree
 * (may be NULL: parsed when read); both consumed. The names are copied behind the
 * text so they outlive a tree parsed on demand. */
static struct store_obj *obj_build(const struct reg_resource *res, char *bytes, size_t len,
                                   const cJSON *md, cJSON *tree)
{
    /* malloc, not calloc: glibc's calloc skips the thread cache (one per write) */
    struct store_obj *o = malloc(sizeof(*o));
    const char *rv = md_str(md, "resourceVersion");
    char *p = bytes + len + 1;

    if (!o) {
        free(bytes);
        free(tree);
        return NULL;
    }
    memset(o, 0, sizeof(*o));
    o->res = res;
    o->blob = bytes;
    o->len = len;
    o->rv = strtoull(rv, NULL, 10);
    o->ns = p;
    p = stpcpy(p, md_str(md, "namespace")) + 1;
    o->name = p;
    p = stpcpy(p, md_str(md, "name")) + 1;
    o->uid = p;
    stpcpy(p, md_str(md, "uid"));
    o->tree = tree;
    o->refs = 1;
    return o;
}

static size_t names_len(const cJSON *md)
{
    return strlen(md_str(md, "namespace")) + strlen(md_str(md, "name")) +
           strlen(md_str(md, "uid")) + 3;
}

struct store_obj *store__obj_new(const struct reg_resource *res, cJSON *json)
{
    struct store_obj *o = NULL;
    const cJSON *md;
    cJSON *tree = NULL;
    char *bytes;
    size_t len = 0;

    if (!json)
        return NULL;
    compact_managed_fields(json);
    md = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    if (!(bytes = print_compact(json, &len, names_len(md))))
        goto out;
    if (!(tree = store__json_pack(json))) {
        free(bytes);
        goto out;
    }
    /* before json goes: md and the names point into it */
    o = obj_build(res, bytes, len, md, tree);
out:
    cJSON_Delete(json);
    return o;
}

/* Bytes of o's block: the text with its NUL (or the frame), then the names. */
static size_t block_len(const struct store_obj *o)
{
    return (o->zlen ? o->zlen : o->len + 1) + strlen(o->ns) + strlen(o->name) +
           strlen(o->uid) + 3;
}

struct store_obj *store__obj_text_only(struct store_obj *o)
{
    size_t n = block_len(o);
    char *bytes = malloc(n);
    struct store_obj *c;

    if (!bytes)
        return NULL;
    memcpy(bytes, o->blob, n);   /* the text or frame, then the names */
    if (!(c = malloc(sizeof(*c)))) {
        free(bytes);
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->res = o->res;
    c->blob = bytes;
    c->len = o->len;
    c->zlen = o->zlen;
    c->zd = store__zdict_ref(o->zd);
    c->rv = o->rv;
    c->ns = bytes + (o->ns - o->blob);
    c->name = bytes + (o->name - o->blob);
    c->uid = bytes + (o->uid - o->blob);
    c->refs = 1;
    return c;
}

/* Keeps o's text compressed with zd: the frame and the names in a new block. Only
 * before o is published (the commit, lock held). */
static void obj_compress(struct store_obj *o, struct store_zdict *zd)
{
    size_t names = block_len(o) - (o->len + 1), zlen = 0;
    const char *old = o->blob;
    char *z;

    if (o->zlen || !(z = store__ztext_compress(zd, old, o->len, names, &zlen)))
        return;   /* kept plain: still exact */
    memcpy(z + zlen, old + o->len + 1, names);
    o->ns = z + zlen + (o->ns - (old + o->len + 1));
    o->name = z + zlen + (o->name - (old + o->len + 1));
    o->uid = z + zlen + (o->uid - (old + o->len + 1));
    o->blob = z;
    o->zlen = (uint32_t)zlen;
    o->zd = store__zdict_ref(zd);
    free((char *)old);
}

/* Every parse of stored text, process-wide: what the text-only store costs in CPU,
 * and what a test of an O(changed) path counts (store_get_stats). */
static _Atomic unsigned long long text_parses;

static cJSON *parse_text(const struct store_obj *o)
{
    const char *text = store_obj_text(o);

    atomic_fetch_add_explicit(&text_parses, 1, memory_order_relaxed);
    return text ? cJSON_ParseWithLength(text, o->len) : NULL;
}

uint64_t store__text_parses(void)
{
    return atomic_load_explicit(&text_parses, memory_order_relaxed);
}

const cJSON *store_obj_json(const struct store_obj *o)
{
    cJSON *t, *parsed, *expect = NULL;

    if (!o)
        return NULL;
    if ((t = __atomic_load_n(&o->tree, __ATOMIC_ACQUIRE)))
        return t;
    if (scope_depth) {
        if ((t = scope_find(o)))
            return t;
        /* packed like a kept tree: a trim then frees one block per tree, where freeing
         * 512 loose trees of hundreds of nodes each overflowed malloc's thread cache and
         * made malloc_consolidate and free half of kubesim's CPU */
        if (!(t = handoff_take(o)) && (!(parsed = parse_text(o)) || !(t = tree_pack(parsed))))
            return NULL;
        if (scope_put(o, t)) {
            free(t);
            return NULL;
        }
        return t;
    }
    if (!(t = handoff_take(o)) && (!(parsed = parse_text(o)) || !(t = tree_pack(parsed))))
        return NULL;
    /* the snapshot is shared: another reader may have parsed it first */
    if (!__atomic_compare_exchange_n(&((struct store_obj *)o)->tree, &expect, t, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(t);
        t = expect;
    }
    return t;
}

static void set_rv_string(cJSON *obj, uint64_t rv)
{
    char b[24];
    cJSON *md = store__meta(obj);

    snprintf(b, sizeof(b), "%llu", (unsigned long long)rv);
    if (cJSON_GetObjectItemCaseSensitive(md, "resourceVersion"))
        cJSON_ReplaceItemInObjectCaseSensitive(md, "resourceVersion", cJSON_CreateString(b));
    else
        cJSON_AddStringToObject(md, "resourceVersion", b);
}

struct store_obj *store__obj_with_rv(struct store_obj *o, uint64_t rv)
{
    cJSON *j = store__obj_copy(o);

    if (!j)
        return NULL;
    set_rv_string(j, rv);
    return store__obj_new(o->res, j);
}

struct store_obj *store__obj_as(struct store_obj *o, const struct reg_resource *res)
{
    char av[300];
    cJSON *j;

    if (o && o->res != res && (store__events_v1(res) || store__events_v1(o->res))) {
        if (!(j = store__obj_copy(o)))
            return NULL;
        if (store__events_v1(res))
            store__event_to_v1(j);
        else
            store__event_to_core(j);
        return store__obj_new(res, j);
    }
    if (!o || o->res == res || res->builtin)
        return store_obj_ref(o);
    j = store__obj_copy(o);
    if (!j)
        return NULL;
    snprintf(av, sizeof(av), "%s/%s", res->group, res->version);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "apiVersion");
    cJSON_AddStringToObject(j, "apiVersion", av);
    return store__obj_new(res, j);
}

const cJSON *store__obj_tree_at_hand(const struct store_obj *o)
{
    const cJSON *t = __atomic_load_n(&o->tree, __ATOMIC_ACQUIRE);

    return t ? t : scope_depth ? scope_find(o) : NULL;
}

cJSON *store__obj_copy(const struct store_obj *o)
{
    const cJSON *t = store__obj_tree_at_hand(o);

    /* a text-only snapshot is parsed straight into the copy: caching its tree for
     * one conversion would keep it for the snapshot's life */
    return t ? cJSON_Duplicate(t, true) : parse_text(o);
}

const cJSON *store__obj_peek(const struct store_obj *o, cJSON **tmp)
{
    const cJSON *t = store__obj_tree_at_hand(o);

    *tmp = NULL;
    return t ? t : (*tmp = parse_text(o));
}

/* FNV-1a over a tree's member names, types and values, in order. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_tree(const cJSON *j, uint64_t h, int depth)
{
    for (; j && depth < 64; j = j->next) {
        int type = j->type & 0xff;

        if (j->string)
            h = hash_bytes(h, j->string, strlen(j->string) + 1);
        h = hash_bytes(h, &type, sizeof(type));
        if (cJSON_IsString(j) || cJSON_IsRaw(j))
            h = hash_bytes(h, j->valuestring, strlen(j->valuestring) + 1);
        else if (cJSON_IsNumber(j))
            h = hash_bytes(h, &j->valuedouble, sizeof(j->valuedouble));
        else if (j->child)
            h = hash_tree(j->child, h, depth + 1);
        h = hash_bytes(h, "}", 1);   /* where a container ends */
    }
    return h;
}

uint64_t store_json_hash(const cJSON *m)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int type;

    if (!m)
        return 0;
    type = m->type & 0xff;
    h = hash_bytes(h, &type, sizeof(type));
    if (cJSON_IsString(m))
        h = hash_bytes(h, m->valuestring, strlen(m->valuestring) + 1);
    h = hash_tree(m->child, h, 0);   /* m alone, not the members after it */
    return h ? h : 1;   /* 0 is "absent" */
}

uint64_t store__obj_meta_hash(const cJSON *obj, const char *member)
{
    return store_json_hash(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), member));
}

/* A text-only type's snapshot drops the tree its writer built: called by the commit
 * before obj is published, when only the writing thread has used that tree. A writer
 * inside a tree scope (the simulated cluster) keeps it there for what it reads next;
 * another hands a Pod's or Service's over to whoever reads it first (the cluster). Not an
 * Event's: no one reads Events back as they are written, and four per Pod would crowd
 * the Pods out of a trimmed scope. */
void store__obj_settle(struct store_obj *o)
{
    bool event = store__events_v1(o->res) || (!o->res->group[0] && !strcmp(o->res->plural, "events"));

    if (!text_only(o->res))
        return;
    if (o->tree) {
        if (event || (scope_depth ? scope_put(o, o->tree) :
                      !handed_over(o->res) || handoff_put(o, o->tree)))
            free(o->tree);
        o->tree = NULL;
    }
}

/*
 * A Pod is written four or five times within seconds of its creation (created, bound,
 * scheduled, ContainerCreating, Running and Ready), and each of those texts but the
 * last is superseded at once: compressing them was a tenth of the cluster thread's
 * CPU. A Pod still Pending and created less than FRESH_MAX_AGE_S ago keeps its text
 * plain; the write that makes it Running (or ends it) is compressed as before. Bounded:
 * past store__fresh_max_bytes of such texts alive (a Pod that stays Pending, the watch
 * window's copies), they are compressed too.
 */
size_t store__fresh_max_bytes = 64u << 20;
#define FRESH_MAX_AGE_S 60

/* The creationTimestamp FRESH_MAX_AGE_S ago, as RFC 3339 text (which sorts as time
 * does); renewed once a second per thread. */
static const char *fresh_since(void)
{
    static _Thread_local char since[32];
    static _Thread_local time_t at;
    time_t now = time(NULL), then = now - FRESH_MAX_AGE_S;
    struct tm tm;

    if (now != at && gmtime_r(&then, &tm)) {
        strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
        at = now;
    }
    return since;
}

static bool fresh_pod(const struct store_obj *o)
{
    const cJSON *t = o->tree, *md, *status, *ct;
    const char *phase;

    if (!t || !o->res->builtin || o->res->group[0] || strcmp(o->res->plural, "pods"))
        return false;
    status = cJSON_GetObjectItemCaseSensitive(t, "status");
    phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(status, "phase"));
    if (phase && strcmp(phase, "Pending"))
        return false;
    md = cJSON_GetObjectItemCaseSensitive(t, "metadata");
    ct = cJSON_GetObjectItemCaseSensitive(md, "creationTimestamp");
    if (!cJSON_IsString(ct) || strcmp(ct->valuestring, fresh_since()) < 0)
        return false;
    return atomic_load_explicit(&fresh_bytes, memory_order_relaxed) + o->len + 1 <=
           store__fresh_max_bytes;
}

void store__obj_compact(struct stype *t, struct store_obj *o)
{
    if (!text_only(o->res))
        return;
    /* the type's first objects are its dictionary: made once it holds a few */
    if (!t->zd_tried && t->n >= ZDICT_AFTER) {
        t->zd = store__zdict_build(t);
        t->zd_tried = true;
    }
    if (!t->zd || o->zlen || o->fresh)
        return;
    if (fresh_pod(o)) {
        o->fresh = true;
        atomic_fetch_add_explicit(&fresh_bytes, o->len + 1, memory_order_relaxed);
        return;
    }
    obj_compress(o, t->zd);
}

size_t store__fresh_bytes(void)
{
    return atomic_load_explicit(&fresh_bytes, memory_order_relaxed);
}

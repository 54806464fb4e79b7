/*
 * memstat.c - where kubesim's memory goes: per stored type, the objects' compact
 * text, their cJSON trees and the snapshots kept only by the watch ring; the
 * entries, every index and hash table, the watch rings' slots, the tree scopes and
 * the simulated cluster's tables (through its reporter); beside malloc's own totals
 * (in use, free inside its arenas, mapped; util/heap.c). Each structure is counted as the malloc
 * chunks behind it (usable size plus header), so "counted" compares with malloc's
 * in-use bytes and what is left over ("uncountedBytes") is the part nobody has
 * explained yet. Served as GET /kubesim/memory so a scale run can be broken down
 * without a profiler; it walks every object under the read lock, so it is a
 * diagnostic, not a metric to poll.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct memstat {
    size_t n, text, tree, nodes;
    size_t ring_events, ring_only, ring_only_text, ring_only_tree;
    size_t chunks, ring_only_chunks;   /* malloc bytes of the snapshots (text, struct, tree) */
    size_t entries, table, ring_slots, label_index;
    size_t compressed, dict;   /* snapshots kept compressed; the type's dictionary */
};

/* An object's text, and the bytes of its tree: packed trees are one block of nodes then
 * strings; a loose tree is counted the same way (malloc's headers left out). *chunks
 * gets the malloc bytes of all of it. */
static void obj_measure(const struct store_obj *o, size_t *text, size_t *tree, size_t *nodes,
                        size_t *chunks)
{
    /* the tree as it is: store_obj_json would parse the text-only ones */
    const cJSON *t = __atomic_load_n(&o->tree, __ATOMIC_ACQUIRE);
    size_t n = 0, bytes = 0;

    *text += o->len + 1 + sizeof(*o);
    *chunks += store_mem_chunk(o) + store_mem_chunk(o->blob);
    if (!t)
        return;
    store__json_measure(t, &n, &bytes);
    *tree += n * sizeof(cJSON) + bytes;
    *nodes += n;
    /* a packed tree is one block; a loose one (a writer's, not yet packed) is not */
    *chunks += n * sizeof(cJSON) + bytes;
}

/* The entry's own allocations: the struct, its key and its owner list. */
static size_t entry_measure(const struct sentry *e)
{
    return store_mem_chunk(e) + store_mem_chunk(e->key) + store_mem_chunk(e->owners);
}

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

    return x < y ? -1 : x > y;
}

/* Snapshots referenced by t's ring that are no longer the current object of their
 * key: what the watch window costs beyond the live objects. Lock held (read). */
static int ring_measure(struct stype *t, struct memstat *m)
{
    struct store_obj **v;
    size_t n = 0;

    pthread_mutex_lock(&t->wmu);
    m->ring_events = (size_t)(t->tail - t->head);
    v = malloc((2 * m->ring_events + 1) * sizeof(*v));
    if (!v) {
        pthread_mutex_unlock(&t->wmu);
        return -ENOMEM;
    }
    for (uint64_t q = t->head; q < t->tail; q++) {
        const struct wev *ev = &t->ring[q % t->cap];
        if (ev->obj)
            v[n++] = ev->obj;
        if (ev->prev)
            v[n++] = ev->prev;
    }
    m->ring_slots = store_mem_chunk(t->ring);
    pthread_mutex_unlock(&t->wmu);
    qsort(v, n, sizeof(*v), ptr_cmp);
    for (size_t i = 0; i < n; i++) {
        struct sentry *e;
        if (i && v[i] == v[i - 1])
            continue;
        e = store__entry_find(t, v[i]->ns, v[i]->name);
        if (e && e->obj == v[i])
            continue;
        m->ring_only++;
        obj_measure(v[i], &m->ring_only_text, &m->ring_only_tree, &(size_t){ 0 },
                    &m->ring_only_chunks);
    }
    free(v);
    return 0;
}

static long rss_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

void store_memory_reporter_set(struct store *s, store_memory_reporter_fn fn, void *arg)
{
    pthread_rwlock_wrlock(&s->lock);
    s->mem_fn = fn;
    s->mem_arg = arg;
    pthread_rwlock_unlock(&s->lock);
}

static void memstat_add(struct memstat *all, const struct memstat *m)
{
    all->n += m->n;
    all->text += m->text;
    all->tree += m->tree;
    all->nodes += m->nodes;
    all->ring_events += m->ring_events;
    all->ring_only += m->ring_only;
    all->ring_only_text += m->ring_only_text;
    all->ring_only_tree += m->ring_only_tree;
    all->chunks += m->chunks;
    all->ring_only_chunks += m->ring_only_chunks;
    all->entries += m->entries;
    all->table += m->table;
    all->ring_slots += m->ring_slots;
    all->label_index += m->label_index;
    all->compressed += m->compressed;
    all->dict += m->dict;
}

static int memstat_print(struct buf *out, const char *sep, const char *name, const struct memstat *m)
{
    return buf_printf(out, "%s\"%s\":{\"objects\":%zu,\"textBytes\":%zu,\"treeBytes\":%zu,"
                      "\"treeNodes\":%zu,\"ringEvents\":%zu,\"ringOnlyObjects\":%zu,"
                      "\"ringOnlyTextBytes\":%zu,\"ringOnlyTreeBytes\":%zu,\"chunkBytes\":%zu,"
                      "\"ringOnlyChunkBytes\":%zu,\"entryBytes\":%zu,\"tableBytes\":%zu,"
                      "\"ringSlotBytes\":%zu,\"labelIndexBytes\":%zu,\"compressedObjects\":%zu,"
                      "\"dictBytes\":%zu}",
                      sep, name, m->n, m->text, m->tree, m->nodes, m->ring_events, m->ring_only,
                      m->ring_only_text, m->ring_only_tree, m->chunks, m->ring_only_chunks,
                      m->entries, m->table, m->ring_slots, m->label_index, m->compressed,
                      m->dict);
}

static size_t memstat_counted(const struct memstat *m)
{
    return m->chunks + m->ring_only_chunks + m->entries + m->table + m->ring_slots +
           m->label_index + m->dict;
}

int store_memory_json(struct store *s, struct buf *out)
{
    struct memstat all = { 0 };
    struct util_heap mi;
    struct stype *t, *tmp;
    const char *sep = "";
    size_t uid_index = 0, owners = 0, expiry = 0, types = 0, scope_trees, scope_bytes;
    size_t counted, cluster = 0;
    store_memory_reporter_fn fn;
    void *arg;
    int rc = buf_puts(out, "{\"kind\":\"KubesimMemory\",\"types\":{");

    pthread_rwlock_rdlock(&s->lock);
    types = s->types ? store_mem_table(&s->types->hh) : 0;
    uid_index = s->by_uid ? store_mem_table(&s->by_uid->hu) : 0;
    store__gc_measure(s, &owners, &expiry);
    HASH_ITER(hh, s->types, t, tmp) {
        struct memstat m = { 0 };
        struct sentry *e, *etmp;
        types += store_mem_chunk(t) + store_mem_chunk(t->key);
        HASH_ITER(hh, t->objs, e, etmp) {
            m.n++;
            m.compressed += e->obj->zlen != 0;
            obj_measure(e->obj, &m.text, &m.tree, &m.nodes, &m.chunks);
            m.entries += entry_measure(e);
        }
        m.table = t->objs ? store_mem_table(&t->objs->hh) : 0;
        m.label_index = store__index_measure(t);
        m.dict = store__zdict_bytes(t->zd);
        if (ring_measure(t, &m)) {
            rc = -ENOMEM;
            break;
        }
        memstat_add(&all, &m);
        if (!m.n && !m.ring_events)
            continue;
        rc |= memstat_print(out, sep, t->key, &m);
        sep = ",";
    }
    fn = s->mem_fn;
    arg = s->mem_arg;
    pthread_rwlock_unlock(&s->lock);
    store__scope_measure(&scope_trees, &scope_bytes);
    rc |= buf_puts(out, "},");
    rc |= memstat_print(out, "", "total", &all);
    rc |= buf_printf(out, ",\"store\":{\"typeBytes\":%zu,\"uidIndexBytes\":%zu,"
                     "\"ownerIndexBytes\":%zu,\"eventExpiryBytes\":%zu},"
                     "\"scopes\":{\"trees\":%zu,\"bytes\":%zu},\"cluster\":{",
                     types, uid_index, owners, expiry, scope_trees, scope_bytes);
    if (fn)
        cluster = fn(arg, out);
    counted = memstat_counted(&all) + types + uid_index + owners + expiry + scope_bytes + cluster;
    util_heap_stats(&mi);
    rc |= buf_printf(out, "},\"countedBytes\":%zu,"
                     "\"malloc\":{\"allocator\":\"%s\",\"inUseBytes\":%zu,\"freeBytes\":%zu,"
                     "\"mappedBytes\":%zu,\"residentBytes\":%zu,\"uncountedBytes\":%lld},"
                     "\"rssBytes\":%ld}\n",
                     counted, util_heap_name(), mi.in_use, mi.free, mi.mapped, mi.resident,
                     (long long)mi.in_use - (long long)counted, rss_bytes());
    return rc ? -ENOMEM : 0;
}

/*
 * memstat.c - where kubesim's memory goes: per stored type, the objects' compact
 * text, their cJSON trees and the snapshots kept only by the watch ring, beside
 * malloc's own totals (in use, free inside its arenas, mapped). Served as
 * GET /kubesim/memory so a scale run can be broken down without a profiler;
 * it walks every object under the read lock, so it is a diagnostic, not a metric
 * to poll.
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
};

/* An object's text, and the bytes of its tree: packed trees are one block of nodes then
 * strings; a loose tree is counted the same way (malloc's headers left out). */
static void obj_measure(const struct store_obj *o, size_t *text, size_t *tree, size_t *nodes)
{
    /* the tree as it is: store_obj_json would parse the text-only ones */
    const cJSON *t = __atomic_load_n(&o->tree, __ATOMIC_ACQUIRE);
    size_t n = 0;

    *text += o->len + 1 + sizeof(*o);
    if (!t)
        return;
    store__json_measure(t, &n, tree);
    *tree += n * sizeof(cJSON);
    *nodes += n;
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
        obj_measure(v[i], &m->ring_only_text, &m->ring_only_tree, &(size_t){ 0 });
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

int store_memory_json(struct store *s, struct buf *out)
{
    struct memstat all = { 0 };
    struct mallinfo2 mi;
    struct stype *t, *tmp;
    const char *sep = "";
    int rc = buf_puts(out, "{\"kind\":\"KubesimMemory\",\"types\":{");

    pthread_rwlock_rdlock(&s->lock);
    HASH_ITER(hh, s->types, t, tmp) {
        struct memstat m = { 0 };
        struct sentry *e, *etmp;
        HASH_ITER(hh, t->objs, e, etmp) {
            m.n++;
            obj_measure(e->obj, &m.text, &m.tree, &m.nodes);
        }
        if (ring_measure(t, &m)) {
            rc = -ENOMEM;
            break;
        }
        if (!m.n && !m.ring_events)
            continue;
        rc |= buf_printf(out, "%s\"%s\":{\"objects\":%zu,\"textBytes\":%zu,\"treeBytes\":%zu,"
                         "\"treeNodes\":%zu,\"ringEvents\":%zu,\"ringOnlyObjects\":%zu,"
                         "\"ringOnlyTextBytes\":%zu,\"ringOnlyTreeBytes\":%zu}",
                         sep, t->key, m.n, m.text, m.tree, m.nodes, m.ring_events, m.ring_only,
                         m.ring_only_text, m.ring_only_tree);
        sep = ",";
        all.n += m.n;
        all.text += m.text;
        all.tree += m.tree;
        all.nodes += m.nodes;
        all.ring_events += m.ring_events;
        all.ring_only += m.ring_only;
        all.ring_only_text += m.ring_only_text;
        all.ring_only_tree += m.ring_only_tree;
    }
    pthread_rwlock_unlock(&s->lock);
    mi = mallinfo2();
    rc |= buf_printf(out, "},\"total\":{\"objects\":%zu,\"textBytes\":%zu,\"treeBytes\":%zu,"
                     "\"treeNodes\":%zu,\"ringEvents\":%zu,\"ringOnlyObjects\":%zu,"
                     "\"ringOnlyTextBytes\":%zu,\"ringOnlyTreeBytes\":%zu},"
                     "\"malloc\":{\"arenaBytes\":%zu,\"inUseBytes\":%zu,\"freeBytes\":%zu,"
                     "\"mmapBytes\":%zu},\"rssBytes\":%ld}\n",
                     all.n, all.text, all.tree, all.nodes, all.ring_events, all.ring_only,
                     all.ring_only_text, all.ring_only_tree, mi.arena, mi.uordblks, mi.fordblks,
                     mi.hblkhd, rss_bytes());
    return rc ? -ENOMEM : 0;
}

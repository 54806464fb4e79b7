/*
 * index.c - the label index of the store: objects by their "ray.io/cluster"
 * label value, per type. KubeRay-style operators list and delete Pods, Services
 * and Jobs by `ray.io/cluster=NAME`; with the index such a LIST or DELETE of a
 * collection touches one cluster's objects instead of scanning the whole type.
 * Maintained by the commit path (store.c) under the store's write lock.
 */
#include "kubesim/store/internal.h"
#include "kubesim/schema/selector.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A bucket's entries are a plain array: most hold one cluster's few objects of a type,
 * and a hash set per bucket (a table of 32 buckets plus a node per entry) cost more
 * than 600 bytes per RayCluster and type at 10,000 clusters. An entry leaves its
 * bucket only when it is deleted or its label changes (store__index_update), so the
 * linear search on removal is rare. */
struct label_bucket {
    char *value;
    struct sentry **refs;
    size_t n, cap;
    UT_hash_handle hh;
};

static const char *cluster_of(const struct store_obj *o)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(store_obj_json(o), "metadata"),
                                         "labels"), STORE_INDEXED_LABEL));
}

static int index_add(struct stype *t, struct sentry *e, const char *v)
{
    struct label_bucket *b;

    HASH_FIND_STR(t->by_label, v, b);
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b || !(b->value = strdup(v))) {
            free(b);
            return -ENOMEM;
        }
        HASH_ADD_KEYPTR(hh, t->by_label, b->value, strlen(b->value), b);
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4;
        struct sentry **r = realloc(b->refs, cap * sizeof(*r));
        if (!r) {
            if (!b->n) {
                HASH_DEL(t->by_label, b);
                free(b->value);
                free(b);
            }
            return -ENOMEM;
        }
        b->refs = r;
        b->cap = cap;
    }
    b->refs[b->n++] = e;
    e->label_bucket = b;
    return 0;
}

int store__index_update(struct stype *t, struct sentry *e)
{
    const char *v = cluster_of(e->obj);

    if (e->label_bucket && v && !strcmp(e->label_bucket->value, v))
        return 0;   /* the same cluster: nothing moves (most writes) */
    store__index_remove(t, e);
    return v ? index_add(t, e, v) : 0;
}

void store__index_remove(struct stype *t, struct sentry *e)
{
    struct label_bucket *b = e->label_bucket;

    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        if (b->refs[i] == e) {
            b->refs[i] = b->refs[--b->n];   /* order does not matter: LIST sorts */
            break;
        }
    }
    if (!b->n) {
        HASH_DEL(t->by_label, b);
        free(b->refs);
        free(b->value);
        free(b);
    }
    e->label_bucket = NULL;
}

/*
 * When sel requires ray.io/cluster=V, fills *out with the entries labelled V
 * (malloc'd array of borrowed entries, possibly empty) and returns 1; returns 0
 * when the index cannot answer (the caller scans), -ENOMEM on failure.
 */
int store__index_lookup(struct stype *t, const struct sel *sel, struct sentry ***out, size_t *n)
{
    const char *v = sel ? sel_required_value(sel, STORE_INDEXED_LABEL) : NULL;
    struct label_bucket *b;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if (!v)
        return 0;
    HASH_FIND_STR(t->by_label, v, b);
    *out = malloc((b ? b->n : 0) * sizeof(**out) + 1);
    if (!*out)
        return -ENOMEM;
    if (b) {
        memcpy(*out, b->refs, b->n * sizeof(**out));
        k = b->n;
    }
    *n = k;
    return 1;
}

void store__index_free(struct stype *t)
{
    struct label_bucket *b, *bt;

    HASH_ITER(hh, t->by_label, b, bt) {
        HASH_DEL(t->by_label, b);
        free(b->refs);
        free(b->value);
        free(b);
    }
}

size_t store__index_measure(const struct stype *t)
{
    const struct label_bucket *b;
    size_t n = t->by_label ? store_mem_table(&t->by_label->hh) : 0;

    for (b = t->by_label; b; b = b->hh.next)
        n += store_mem_chunk(b) + store_mem_chunk(b->value) + store_mem_chunk(b->refs);
    return n;
}

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

struct label_ref {
    struct sentry *e;
    UT_hash_handle hh;
};

struct label_bucket {
    char *value;
    struct label_ref *refs;
    size_t n;
    UT_hash_handle hh;
};

static const char *cluster_of(const struct store_obj *o)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(store_obj_json(o), "metadata"),
                                         "labels"), STORE_INDEXED_LABEL));
}

int store__index_add(struct stype *t, struct sentry *e)
{
    const char *v = cluster_of(e->obj);
    struct label_bucket *b;
    struct label_ref *r;

    if (!v)
        return 0;
    HASH_FIND_STR(t->by_label, v, b);
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b || !(b->value = strdup(v))) {
            free(b);
            return -ENOMEM;
        }
        HASH_ADD_KEYPTR(hh, t->by_label, b->value, strlen(b->value), b);
    }
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->e = e;
    HASH_ADD_PTR(b->refs, e, r);
    b->n++;
    e->label_bucket = b;
    return 0;
}

void store__index_remove(struct stype *t, struct sentry *e)
{
    struct label_bucket *b = e->label_bucket;
    struct label_ref *r;

    if (!b)
        return;
    HASH_FIND_PTR(b->refs, &e, r);
    if (r) {
        HASH_DEL(b->refs, r);
        free(r);
        b->n--;
    }
    if (!b->refs) {
        HASH_DEL(t->by_label, b);
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
    struct label_ref *r, *tmp;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if (!v)
        return 0;
    HASH_FIND_STR(t->by_label, v, b);
    *out = malloc((b ? b->n : 0) * sizeof(**out) + 1);
    if (!*out)
        return -ENOMEM;
    if (b)
        HASH_ITER(hh, b->refs, r, tmp)
            (*out)[k++] = r->e;
    *n = k;
    return 1;
}

void store__index_free(struct stype *t)
{
    struct label_bucket *b, *bt;
    struct label_ref *r, *rt;

    HASH_ITER(hh, t->by_label, b, bt) {
        HASH_ITER(hh, b->refs, r, rt) {
            HASH_DEL(b->refs, r);
            free(r);
        }
        HASH_DEL(t->by_label, b);
        free(b->value);
        free(b);
    }
}

size_t store__index_measure(const struct stype *t)
{
    const struct label_bucket *b;
    const struct label_ref *r;
    size_t n = t->by_label ? store_mem_table(&t->by_label->hh) : 0;

    for (b = t->by_label; b; b = b->hh.next) {
        n += store_mem_chunk(b) + store_mem_chunk(b->value);
        if (b->refs)
            n += store_mem_table(&b->refs->hh);
        for (r = b->refs; r; r = r->hh.next)
            n += store_mem_chunk(r);
    }
    return n;
}

/*
 * node_index.c - the scheduler's view of the nodes ordered by free capacity, emptiest
 * first, so that placing a Pod looks at the few nodes at the front instead of scoring
 * every node (issue 18: 40,000 Pods on 401 nodes spent a tenth of the cluster thread in
 * the filter loop). A sorted array of node pointers: a node whose use changes moves by
 * one memmove, which for the few thousand nodes kubesim allows is cheaper than any
 * tree. Cluster thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"

/* Free share of one resource in thousandths; a node without any counts as full. */
static int64_t free_permille(int64_t alloc, int64_t used)
{
    if (alloc <= 0 || used >= alloc)
        return 0;
    return (alloc - used) * 1000 / alloc;
}

/* The LeastAllocated order without a Pod's own request: the sum of the free cpu and
 * memory shares. It ranks nodes as cluster_node_score does for any request that fits
 * both, up to its rounding. */
static int64_t node_free_key(const struct cl_node *n)
{
    return free_permille(n->alloc.cpu_m, n->used.cpu_m) + free_permille(n->alloc.mem, n->used.mem);
}

/* Emptiest first; among equals the node with fewer Pods (the spreading the score's ties
 * had), then by name so that the order is total and a node can be found again. */
static int node_cmp(const struct cl_node *a, const struct cl_node *b)
{
    if (a->free_key != b->free_key)
        return a->free_key > b->free_key ? -1 : 1;
    if (a->free_pods != b->free_pods)
        return a->free_pods > b->free_pods ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The first slot whose node does not sort before n. */
static size_t lower_bound(const struct cluster *c, const struct cl_node *n)
{
    size_t lo = 0, hi = c->nfree_idx;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (node_cmp(c->free_idx[mid], n) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void cluster__node_index_remove(struct cluster *c, struct cl_node *n)
{
    size_t i;

    if (!n->indexed)
        return;
    i = lower_bound(c, n);   /* the keys are the ones n was inserted with */
    if (i < c->nfree_idx && c->free_idx[i] == n) {
        memmove(&c->free_idx[i], &c->free_idx[i + 1], (c->nfree_idx - i - 1) * sizeof(n));
        c->nfree_idx--;
    }
    n->indexed = false;
}

void cluster__node_index_update(struct cluster *c, struct cl_node *n)
{
    size_t i;

    cluster__node_index_remove(c, n);
    if (c->nfree_idx == c->capfree_idx) {
        size_t ncap = c->capfree_idx ? c->capfree_idx * 2 : 64;
        struct cl_node **nx = realloc(c->free_idx, ncap * sizeof(*nx));
        if (!nx)
            return;   /* left out: the scheduler still finds it in the node table */
        c->free_idx = nx;
        c->capfree_idx = ncap;
    }
    n->free_key = node_free_key(n);
    n->free_pods = -n->used.pods;
    i = lower_bound(c, n);
    memmove(&c->free_idx[i + 1], &c->free_idx[i], (c->nfree_idx - i) * sizeof(n));
    c->free_idx[i] = n;
    c->nfree_idx++;
    n->indexed = true;
}

struct cl_node *cluster__node_index_at(const struct cluster *c, size_t i)
{
    return i < c->nfree_idx ? c->free_idx[i] : NULL;
}

void cluster__node_index_free(struct cluster *c)
{
    free(c->free_idx);
    c->free_idx = NULL;
    c->nfree_idx = c->capfree_idx = 0;
}

/*
 * view.c - the reconcile context's read-only view of the shared cache.
 *
 * Wraps a cache reader handle so worker threads can share it: reads take a
 * read lock; when the watcher grew the segment (-ESTALE) one thread takes the
 * write lock and remaps (cache_reader_refresh is not thread-safe), then the
 * read is retried. Objects come back decoded to cJSON, owned by the caller.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "kobj/kobj.h"
#include "reconcilers/host/host.h"
#include "util/util.h"

struct host_view {
    pthread_rwlock_t lock;
    struct cache *c;
};

int host_view_open(const char *segname, struct host_view **out)
{
    struct host_view *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    int rc = cache_reader_open(segname, &v->c);
    if (rc < 0) {
        free(v);
        return rc;
    }
    pthread_rwlock_init(&v->lock, NULL);
    *out = v;
    return 0;
}

void host_view_close(struct host_view *v)
{
    if (!v)
        return;
    cache_close(v->c);
    pthread_rwlock_destroy(&v->lock);
    free(v);
}

/* Remaps after -ESTALE; only one thread does it, the others find it done. */
static int view_refresh(struct host_view *v)
{
    pthread_rwlock_wrlock(&v->lock);
    int rc = cache_reader_refresh(v->c);
    pthread_rwlock_unlock(&v->lock);
    if (rc == 0)
        log_info("cache segment moved; view remapped", NULL);
    return rc;
}

/* Runs op under the read lock, remapping and retrying once on -ESTALE.
 * -EAGAIN (a busy slot) is retried a few times: the writer finishes quickly. */
#define VIEW_CALL(v, rc, expr)                                      \
    do {                                                            \
        for (int try_ = 0; try_ < 4; try_++) {                      \
            pthread_rwlock_rdlock(&(v)->lock);                      \
            (rc) = (expr);                                          \
            pthread_rwlock_unlock(&(v)->lock);                      \
            if ((rc) == -ESTALE) {                                  \
                if (view_refresh(v) < 0)                            \
                    break;                                          \
                continue;                                           \
            }                                                       \
            if ((rc) != -EAGAIN)                                    \
                break;                                              \
        }                                                           \
    } while (0)

static int type_id(struct host_view *v, const char *type)
{
    int rc;
    VIEW_CALL(v, rc, cache_type_lookup(v->c, type));
    return rc;
}

int host_view_synced(struct host_view *v, const char *const *types)
{
    if (!v)
        return 0;
    for (size_t i = 0; types && types[i]; i++) {
        int t = type_id(v, types[i]), rc;
        if (t < 0)
            return 0;
        struct cache_type_info ti;
        VIEW_CALL(v, rc, cache_type_info(v->c, t, &ti));
        if (rc < 0 || !ti.synced)
            return 0;
    }
    return 1;
}

int host_get(struct host_ctx *ctx, const char *cache_type, const char *ns, const char *name,
             cJSON **out)
{
    struct host_view *v = ctx->view;
    int t = type_id(v, cache_type), rc;
    if (t < 0)
        return t;
    VIEW_CALL(v, rc, cache_get_json(v->c, t, ns ? ns : "", name, out));
    return rc;
}

int host_cache_seen(struct host_ctx *ctx, const char *cache_type, const char *rv)
{
    struct host_view *v = ctx->view;
    struct cache_type_info ti;
    int t, rc;
    if (!v || !rv || !*rv)
        return -EINVAL;
    if ((t = type_id(v, cache_type)) < 0)
        return t;
    VIEW_CALL(v, rc, cache_type_info(v->c, t, &ti));
    if (rc < 0)
        return rc;
    return ti.synced && ti.rv[0] && kobj_rv_cmp(ti.rv, rv) >= 0;
}

int host_get_rv(struct host_ctx *ctx, const char *cache_type, const char *ns,
                const char *name, char rv[IPC_RV_MAX])
{
    struct host_view *v = ctx->view;
    struct cache_meta m;
    int t = type_id(v, cache_type), rc;
    rv[0] = '\0';
    if (t < 0)
        return t;
    VIEW_CALL(v, rc, cache_stat(v->c, t, ns ? ns : "", name, &m));
    if (rc == 0)
        snprintf(rv, IPC_RV_MAX, "%s", m.rv);
    return rc;
}

/* Collects decoded objects into an array; a decode error ends the walk. */
static int collect(const struct cache_obj *o, void *arg)
{
    cJSON *arr = arg, *obj = NULL;
    int rc = cache_decode(o->data, o->len, &obj);
    if (rc < 0)
        return rc;
    cJSON_AddItemToArray(arr, obj);
    return 0;
}

/* The objects of cache_type: those whose controller owner has uid, else those of
 * ray.io/cluster label cluster in ns, else all of ns ("" or NULL: every namespace).
 * A segment replaced under the walk (-ESTALE) is followed once. */
static int view_collect(struct host_view *v, const char *cache_type, const char *ns,
                        const char *uid, const char *cluster, cJSON **out)
{
    int t = type_id(v, cache_type), rc;
    if (t < 0)
        return t;
    for (int attempt = 0; attempt < 2; attempt++) {
        cJSON *arr = cJSON_CreateArray();
        if (!arr)
            return -ENOMEM;
        pthread_rwlock_rdlock(&v->lock);
        rc = uid ? cache_foreach_owner(v->c, t, uid, collect, arr)
           : cluster ? cache_foreach_cluster(v->c, t, ns ? ns : "", cluster, collect, arr)
           : cache_foreach(v->c, t, ns, collect, arr);
        pthread_rwlock_unlock(&v->lock);
        if (rc >= 0) {
            *out = arr;
            return 0;
        }
        cJSON_Delete(arr);
        if (rc != -ESTALE || view_refresh(v) < 0)
            break;
    }
    return rc;
}

int host_list_owner(struct host_ctx *ctx, const char *cache_type, const char *uid,
                    cJSON **out)
{
    if (!uid || !*uid)
        return -EINVAL;
    return view_collect(ctx->view, cache_type, NULL, uid, NULL, out);
}

int host_list_cluster(struct host_ctx *ctx, const char *cache_type, const char *ns,
                      const char *cluster, cJSON **out)
{
    if (!cluster || !*cluster)
        return -EINVAL;
    return view_collect(ctx->view, cache_type, ns, NULL, cluster, out);
}

int host_view_list(struct host_view *v, const char *cache_type, const char *ns, cJSON **out)
{
    if (!v || !cache_type || !out)
        return -EINVAL;
    return view_collect(v, cache_type, ns, NULL, NULL, out);
}

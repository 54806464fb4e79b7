/*
 * delete.c - DELETE of one object: preconditions, propagation policy
 * (orphan/foregroundDeletion finalizers, the type's default policy), finalizers keeping an object with
 * deletionTimestamp, graceful Pod deletion, namespaces entering Terminating.
 * store__delete_entry() is shared with delete-collection, GC and the namespace
 * finalizer; the removal itself is store__commit_delete() (store.c).
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define jget cJSON_GetObjectItemCaseSensitive

static bool is_res(const struct reg_resource *r, const char *group, const char *plural)
{
    return r->builtin && !strcmp(r->group, group) && !strcmp(r->plural, plural);
}

static void add_finalizer(cJSON *obj, const char *f)
{
    cJSON *md = store__meta(obj);
    cJSON *fin = jget(md, "finalizers");

    if (store__has_finalizer(obj, f))
        return;
    if (!cJSON_IsArray(fin)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "finalizers");
        fin = cJSON_AddArrayToObject(md, "finalizers");
    }
    cJSON_AddItemToArray(fin, cJSON_CreateString(f));
}

static void drop_finalizer(cJSON *obj, const char *f)
{
    cJSON *fin = jget(store__meta(obj), "finalizers");
    int i = 0;
    cJSON *x;

    cJSON_ArrayForEach(x, fin) {
        if (cJSON_GetStringValue(x) && !strcmp(cJSON_GetStringValue(x), f)) {
            cJSON_DeleteItemFromArray(fin, i);
            return;
        }
        i++;
    }
}

/*
 * The orphan/foregroundDeletion finalizers a DELETE leaves on obj, in the order
 * of the real registry (deletionFinalizersForGarbageCollection): an explicit
 * policy wins; without one, a GC finalizer the object already carries stays;
 * otherwise the type's default applies - Background for most, Orphan for
 * batch/v1 Jobs. Types whose strategy does not support GC (Events) keep neither.
 */
static void set_gc_finalizers(const struct reg_resource *res, cJSON *obj, const char *prop)
{
    bool orphan = false, foreground = false;

    if (res->flags & REG_FLAG_NO_GC_POLICY) {
        /* both false */
    } else if (prop) {
        orphan = !strcmp(prop, "Orphan");
        foreground = !strcmp(prop, "Foreground");
    } else if (store__has_finalizer(obj, "orphan") ||
               store__has_finalizer(obj, "foregroundDeletion")) {
        return;
    } else {
        orphan = (res->flags & REG_FLAG_ORPHAN_DEFAULT) != 0;
    }
    if (orphan)
        add_finalizer(obj, "orphan");
    else
        drop_finalizer(obj, "orphan");
    if (foreground)
        add_finalizer(obj, "foregroundDeletion");
    else
        drop_finalizer(obj, "foregroundDeletion");
}

/* Pods: the grace period to apply (CheckGracefulDelete), 0 for an immediate removal. */
static long pod_grace(struct store *s, const cJSON *pod, long requested)
{
    const cJSON *spec = jget(pod, "spec");
    const char *node = cJSON_GetStringValue(jget(spec, "nodeName"));
    const char *phase = cJSON_GetStringValue(jget(jget(pod, "status"), "phase"));
    const struct reg_resource *nr = store__find_builtin(s, "", "nodes");
    long g;

    if (!node || !node[0] || !nr || !store__entry_find(store__type_get(s, nr, false), "", node))
        return 0;
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
        return 0;
    if (requested >= 0) {
        g = requested;
    } else {
        const cJSON *t = jget(spec, "terminationGracePeriodSeconds");
        g = cJSON_IsNumber(t) ? (long)cJSON_GetNumberValue(t) : 30;
    }
    return g < 0 ? 1 : g;
}

int store__delete_entry(struct store *s, struct sentry *e, const struct store_delete_opts *o,
                        struct store_obj **out, bool *gone, struct store_status *st)
{
    const struct reg_resource *res = e->t->res;
    const cJSON *old = store_obj_json(e->obj);
    bool deleting = kobj_meta_str(old, "deletionTimestamp") != NULL;
    bool is_ns = is_res(res, "", "namespaces");
    long grace = 0;
    cJSON *nobj;
    cJSON *md;
    int rc;

    *gone = false;
    if (o && o->precondition_uid && o->precondition_uid[0] &&
        strcmp(o->precondition_uid, e->obj->uid)) {
        char q[256];
        store__status_qualified(res, q, sizeof(q));
        store__status_set(st, 409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": "
                          "Precondition failed: UID in precondition: %s, UID in object meta: %s", q,
                          e->obj->name, o->precondition_uid, e->obj->uid);
        store__status_details(st, res, e->obj->name, false);
        return -EBUSY;
    }
    if (o && o->precondition_rv && o->precondition_rv[0] &&
        strtoull(o->precondition_rv, NULL, 10) != e->obj->rv) {
        char q[256];
        store__status_qualified(res, q, sizeof(q));
        store__status_set(st, 409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": "
                          "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
                          "object meta: %llu", q, e->obj->name, o->precondition_rv,
                          (unsigned long long)e->obj->rv);
        store__status_details(st, res, e->obj->name, false);
        return -EBUSY;
    }
    if (res->flags & REG_FLAG_GRACEFUL_DELETE)
        grace = pod_grace(s, old, o ? o->grace_seconds : -1);
    nobj = cJSON_Duplicate(old, true);
    if (!nobj)
        return -ENOMEM;
    md = store__meta(nobj);
    set_gc_finalizers(res, nobj, o ? o->propagation : NULL);
    if (is_ns && !deleting) {
        cJSON *status = jget(nobj, "status");
        if (!cJSON_IsObject(status)) {
            cJSON_DeleteItemFromObjectCaseSensitive(nobj, "status");
            status = cJSON_AddObjectToObject(nobj, "status");
        }
        store__set_str(status, "phase", "Terminating");
    }
    if (store__finalizers_empty(res, nobj) && grace == 0) {
        cJSON_Delete(nobj);
        if (o && o->dry_run) {
            *out = store_obj_ref(e->obj);
            *gone = true;
            return 0;
        }
        *out = store_obj_ref(e->obj);
        *gone = true;
        return store__commit_delete(s, e);
    }
    if (deleting) {
        /* a second DELETE keeps the timestamp; it may only shorten the grace period */
        double og = cJSON_GetNumberValue(jget(md, "deletionGracePeriodSeconds"));
        if (grace < og) {
            char ts[32];
            util_format_time(time(NULL) + grace, ts);
            store__set_str(md, "deletionTimestamp", ts);
            store__set_num(md, "deletionGracePeriodSeconds", (double)grace);
        }
    } else {
        char ts[32];
        double g = cJSON_GetNumberValue(jget(md, "generation"));
        util_format_time(time(NULL) + grace, ts);
        store__set_str(md, "deletionTimestamp", ts);
        store__set_num(md, "deletionGracePeriodSeconds", (double)grace);
        if (g > 0)
            store__set_num(md, "generation", g + 1);
    }
    if (store__same_object(nobj, old) || (o && o->dry_run)) {
        cJSON_Delete(nobj);
        *out = store_obj_ref(e->obj);
        return 0;
    }
    {
        char rvb[24];
        struct store_obj *no;
        snprintf(rvb, sizeof(rvb), "%llu", (unsigned long long)(s->rv + 1));
        store__set_str(md, "resourceVersion", rvb);
        no = store__obj_new(e->t->res, nobj);
        if (!no)
            return -ENOMEM;
        store__next_rv(s);
        *out = store_obj_ref(no);
        rc = store__commit_put(s, e->t, e, no, NULL);
    }
    if (!rc && is_ns)
        store__gc_enqueue(s, GC_NAMESPACE, e->obj->name);
    return rc;
}

int store_delete(struct store *s, const struct reg_resource *res, const char *ns,
                 const char *name, const struct store_delete_opts *o,
                 struct store_obj **out, bool *gone, struct store_status *st)
{
    struct sentry *e;
    struct store_obj *r = NULL;
    bool g = false;
    int rc;

    if (out)
        *out = NULL;
    pthread_rwlock_wrlock(&s->lock);
    if (!(e = store__entry_lookup(s, res, ns, name, st))) {
        rc = -ENOENT;
        goto out;
    }
    rc = store__delete_entry(s, e, o, &r, &g, st);
out:
    pthread_rwlock_unlock(&s->lock);
    if (!rc && out)
        *out = r ? store__obj_as(r, res) : NULL;
    store_obj_unref(r);
    if (gone)
        *gone = g;
    return store__write_done(s, rc, st);
}

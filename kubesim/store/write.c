/*
 * write.c - the writing verbs create and update (main, /status) and the commit of a
 * prepared write (prepare.c): under the write lock, the check that what it was
 * prepared against is still current, its resourceVersion, the commit path, and CRD
 * (un)registration. Patch (patch.c) reuses store__write_prepare/commit.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define jget cJSON_GetObjectItemCaseSensitive

/* Registers or unregisters the served types behind a CRD change (lock held). */
static void crd_changed(struct store *s, const cJSON *crd, bool removed)
{
    char err[256];
    const char *name = kobj_meta_str(crd, "name");

    if (removed) {
        const char *group = cJSON_GetStringValue(jget(jget(crd, "spec"), "group"));
        const char *plural = cJSON_GetStringValue(jget(jget(jget(crd, "spec"), "names"),
                                                       "plural"));
        char key[512];
        struct stype *t;
        snprintf(key, sizeof(key), "%s/%s", group ? group : "", plural ? plural : "");
        HASH_FIND_STR(s->types, key, t);
        if (t) {
            struct sentry *e, *tmp;
            HASH_ITER(hh, t->objs, e, tmp)
                store__commit_delete(s, e);
            t->res = NULL;
            store__watch_type_end(t);
        }
        registry_remove_crd(s->reg, name);
        return;
    }
    if (registry_add_crd(s->reg, crd, err, sizeof(err)))
        log_warn("store: CRD not served", "crd", name, "error", err, NULL);
    /* re-point the type at the (possibly re-allocated) storage version */
    for (struct stype *t = s->types; t; t = t->hh.next) {
        if (!t->res || t->res->builtin)
            continue;
        for (size_t i = 0, n = registry_count(s->reg); i < n; i++) {
            const struct reg_resource *r = registry_at(s->reg, i);
            char key[512];
            store__type_key(r, key, sizeof(key));
            if (r->storage && !strcmp(key, t->key))
                t->res = r;
        }
    }
}

void store__crd_changed(struct store *s, const cJSON *crd, bool removed)
{
    crd_changed(s, crd, removed);
}

/* ---- create ---- */

/* create and update take any parsed body; anything but an object is consumed and 400. */
static int require_object(cJSON *obj, struct store_status *st)
{
    if (cJSON_IsObject(obj))
        return 0;
    cJSON_Delete(obj);
    store__status_set(st, 400, "BadRequest", "the request body must be a JSON object");
    return -EINVAL;
}

/* An events.k8s.io/v1 write is a core/v1 write (events.c); the answer goes
 * back in the version asked for. */
static int as_requested(int rc, const struct reg_resource *res, struct store_obj **out)
{
    if (rc == 0 && out && *out) {
        struct store_obj *c = store__obj_as(*out, res);
        store_obj_unref(*out);
        *out = c;
        if (!c)
            return -ENOMEM;
    }
    return rc;
}

/*
 * Gives o (prepared with a guessed resourceVersion, not yet published: its text and
 * tree are still the writer's own) the resourceVersion rv, in place when the number
 * has as many digits as the guess, else in a copy printed again. o is consumed;
 * returns it or its replacement, NULL on ENOMEM. Lock held.
 */
static struct store_obj *settle_rv(struct store_obj *o, uint64_t rv)
{
    cJSON *tree = __atomic_load_n(&o->tree, __ATOMIC_ACQUIRE), *rvn = NULL;
    struct store_obj *c;
    const char *v;
    size_t vlen = 0;
    char d[24];
    int n;

    if (o->rv == rv)
        return o;
    n = snprintf(d, sizeof(d), "%llu", (unsigned long long)rv);
    /* not yet committed, so not yet compressed: blob is the plain text */
    v = o->zlen ? NULL : store__text_member(o->blob, o->len, "metadata", "resourceVersion", &vlen);
    if (tree)
        rvn = jget(jget(tree, "metadata"), "resourceVersion");
    if (v && vlen == (size_t)n + 2 && v[0] == '"' &&
        (!tree || (cJSON_IsString(rvn) && strlen(rvn->valuestring) == (size_t)n))) {
        memcpy((char *)v + 1, d, (size_t)n);
        if (rvn)
            memcpy(rvn->valuestring, d, (size_t)n);
        o->rv = rv;
        return o;
    }
    c = store__obj_with_rv(o, rv);
    store_obj_unref(o);
    return c;
}

/* o (consumed, unpublished) named name instead: a generateName that collided at the
 * commit. NULL on ENOMEM. */
static struct store_obj *renamed(struct store_obj *o, const struct reg_resource *res,
                                 const char *name)
{
    cJSON *j = store__obj_copy(o);

    store_obj_unref(o);
    if (!j)
        return NULL;
    store__set_str(store__meta(j), "name", name);
    return store__obj_new(res, j);
}

/*
 * The end of a create (write lock held): the namespace is still there (when the
 * preparation did not hold the lock), the name is free, else a generated name is drawn
 * again (8 attempts in all), the resourceVersion is the next one. p->o is consumed.
 */
static int create_commit(struct store *s, const struct reg_resource *res, struct stype *t,
                         struct store_prep_create *p, bool recheck_ns,
                         const struct store_write_opts *w, struct store_obj **out,
                         struct store_status *st)
{
    struct store_obj *o = p->o;
    struct sentry *e;
    int rc;

    p->o = NULL;
    if (recheck_ns && res->namespaced && !s->replaying) {
        rc = store__check_namespace(s, res, o->ns, o->name, st);
        if (rc)
            goto out;
    }
    for (int tries = 1; store__entry_find(t, o->ns, o->name); tries++) {
        char nm[300], suf[6];
        if (!p->generated || tries >= 8) {
            store__status_already_exists(st, res, o->name);
            rc = -EEXIST;
            goto out;
        }
        store__random_suffix(suf);
        snprintf(nm, sizeof(nm), "%s%s", p->gen_name, suf);
        if (!(o = renamed(o, o->res, nm))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    if (w && w->dry_run) {
        if (out)
            *out = store_obj_ref(o);
        rc = 0;
        goto out;
    }
    if (!(o = settle_rv(o, s->rv + 1))) {
        rc = -ENOMEM;
        goto out;
    }
    store__next_rv(s);
    rc = store__commit_put(s, t, NULL, store_obj_ref(o), &e);
    if (rc)
        goto out;
    if (store__is_crd(res))
        crd_changed(s, store_obj_json(o), false);
    if (out)
        *out = store__obj_as(o, res);
out:
    store_obj_unref(o);
    return rc;
}

int store_create(struct store *s, const struct reg_resource *res, const char *ns,
                 cJSON *obj, const struct store_write_opts *w, struct store_obj **out,
                 struct store_status *st)
{
    if (store__events_v1(res) && s->res_events) {
        if (cJSON_IsObject(obj))
            store__event_to_core(obj);
        return as_requested(store_create(s, s->res_events, ns, obj, w, out, st), res, out);
    }

    struct store_prep_create p = { 0 };
    bool unlocked = store__prepare_unlocked(res);
    struct stype *t = NULL;
    int rc;

    if (out)
        *out = NULL;
    if ((rc = require_object(obj, st)))
        return rc;
    if (unlocked) {
        /* a built-in is stored in the version asked for */
        rc = store__create_prepare(s, res, res, ns, obj, w, false, &p, st);
        if (rc)
            goto out;
        pthread_rwlock_wrlock(&s->lock);
    } else {
        pthread_rwlock_wrlock(&s->lock);
        t = store__type_get(s, res, true);
        if (!t) {
            cJSON_Delete(obj);
            rc = -ENOMEM;
            goto unlock;
        }
        rc = store__create_prepare(s, res, t->res ? t->res : res, ns, obj, w, true, &p, st);
        if (rc)
            goto unlock;
    }
    if (!t && !(t = store__type_get(s, res, true))) {
        rc = -ENOMEM;
        goto unlock;
    }
    rc = create_commit(s, res, t, &p, unlocked, w, out, st);
unlock:
    pthread_rwlock_unlock(&s->lock);
out:
    store_obj_unref(p.o);
    return store__write_done(s, rc, st);
}

/* ---- update ---- */
/* The commit of a prepared update (write lock held, e->obj is still pl->base):
 * the removal, or the new snapshot with the next resourceVersion. pl->o is consumed. */
int store__write_commit(struct store *s, const struct reg_resource *res, struct sentry *e,
                        struct write_plan *pl, struct store_obj **out,
                        struct store_status *st)
{
    struct store_obj *o = pl->o;
    int rc = 0;

    pl->o = NULL;
    switch (pl->kind) {
    case WRITE_DONE:
        break;
    case WRITE_REMOVE:
        if (out)
            *out = store_obj_ref(e->obj);
        rc = store__commit_delete(s, e);
        break;
    case WRITE_PUT:
        if (!(o = settle_rv(o, s->rv + 1))) {
            rc = -ENOMEM;
            break;
        }
        store__next_rv(s);
        if (out)
            *out = store__obj_as(o, res);
        rc = store__commit_put(s, e->t, e, o, NULL);
        o = NULL;
        if (!rc && store__is_crd(res))
            crd_changed(s, store_obj_json(e->obj), false);
        break;
    }
    store_obj_unref(o);
    if (rc == -ENOMEM)
        store__status_set(st, 500, "InternalError", "out of memory");
    return rc;
}

int store__write_prepared(struct store *s, const struct reg_resource *res, struct sentry *e,
                          const char *sub, cJSON *obj, const struct store_write_opts *w,
                          struct store_obj **out, struct store_status *st)
{
    struct write_plan pl;
    int rc;

    rc = store__write_prepare(s, res, e->t->res ? e->t->res : res, e->obj, sub, obj, w, true,
                              &pl, out, st);
    if (rc || pl.kind == WRITE_DONE)
        return rc;
    return store__write_commit(s, res, e, &pl, out, st);
}

/*
 * A PUT of a type prepared outside the lock, carrying resourceVersion brv: prepared
 * against the snapshot of that version; if another write came before the commit, the
 * version is stale and the answer is the Conflict the locked path would give.
 */
static int update_unlocked(struct store *s, const struct reg_resource *res, const char *ns,
                           const char *name, const char *sub, cJSON *obj, uint64_t brv,
                           const struct store_write_opts *w, struct store_obj **out,
                           struct store_status *st)
{
    struct store_obj *base = NULL;
    struct write_plan pl = { 0 };
    struct sentry *e;
    int rc;

    pthread_rwlock_rdlock(&s->lock);
    if ((e = store__entry_lookup(s, res, ns, name, st)))
        base = store_obj_ref(e->obj);
    pthread_rwlock_unlock(&s->lock);
    if (!base) {
        cJSON_Delete(obj);
        return -ENOENT;
    }
    if (brv != base->rv) {
        cJSON_Delete(obj);
        store__status_conflict(st, res, name);
        rc = -EBUSY;
        goto out;
    }
    rc = store__write_prepare(s, res, res, base, sub, obj, w, false, &pl, out, st);
    if (rc || pl.kind == WRITE_DONE)
        goto out;
    pthread_rwlock_wrlock(&s->lock);
    if (!(e = store__entry_lookup(s, res, ns, name, st))) {
        rc = -ENOENT;
    } else if (e->obj != base) {
        store__status_conflict(st, res, name);
        rc = -EBUSY;
    } else {
        rc = store__write_commit(s, res, e, &pl, out, st);
    }
    pthread_rwlock_unlock(&s->lock);
out:
    store_obj_unref(pl.o);
    store_obj_unref(base);
    return rc;
}

int store_update(struct store *s, const struct reg_resource *res, const char *ns,
                 const char *name, const char *subresource, cJSON *obj,
                 const struct store_write_opts *w, struct store_obj **out,
                 struct store_status *st)
{
    struct sentry *e;
    const char *bname, *bns, *brv;
    int rc;

    if (out)
        *out = NULL;
    if ((rc = require_object(obj, st)))
        return rc;
    if (store__events_v1(res) && s->res_events) {
        store__event_to_core(obj);
        return as_requested(store_update(s, s->res_events, ns, name, subresource, obj, w, out,
                                         st), res, out);
    }
    if (subresource && !strcmp(subresource, "scale"))
        return store__scale_update(s, res, ns, name, obj, w, out, st);
    if (subresource && subresource[0] && (strcmp(subresource, "status") || !res->has_status)) {
        cJSON_Delete(obj);
        store__status_set(st, 404, "NotFound", "the server could not find the requested resource");
        return -ENOENT;
    }
    bname = kobj_meta_str(obj, "name");
    bns = kobj_meta_str(obj, "namespace");
    brv = kobj_meta_str(obj, "resourceVersion");
    if (bname && strcmp(bname, name)) {
        store__status_set(st, 400, "BadRequest", "the name of the object (%s) does not match the name on "
                          "the URL (%s)", bname, name);
        cJSON_Delete(obj);
        return -EINVAL;
    }
    if (res->namespaced && bns && bns[0] && strcmp(bns, ns)) {
        store__status_set(st, 400, "BadRequest", "the namespace of the provided object does not match "
                                      "the namespace sent on the request");
        cJSON_Delete(obj);
        return -EINVAL;
    }
    if (brv && brv[0] && store__prepare_unlocked(res)) {
        /* an unconditional PUT would have to be prepared again when the object changes
         * under it: those stay under the lock */
        rc = update_unlocked(s, res, ns, name, subresource, obj, strtoull(brv, NULL, 10), w,
                             out, st);
        return store__write_done(s, rc, st);
    }
    pthread_rwlock_wrlock(&s->lock);
    if (!(e = store__entry_lookup(s, res, ns, name, st))) {
        rc = -ENOENT;
        goto out;
    }
    if (!brv || !brv[0]) {
        if (!res->builtin) {
            /* apiextensions: AllowUnconditionalUpdate() is false for custom resources */
            cJSON *causes = cJSON_CreateArray();
            status_cause_add(causes, "FieldValueInvalid", "metadata.resourceVersion",
                             "Invalid value: 0: must be specified for an update");
            rc = store__status_invalid(st, res, name, causes);
            goto out;
        }
    } else if (strtoull(brv, NULL, 10) != e->obj->rv) {
        store__status_conflict(st, res, name);
        rc = -EBUSY;
        goto out;
    }
    rc = store__write_prepared(s, res, e, subresource, obj, w, out, st);
    obj = NULL;
out:
    pthread_rwlock_unlock(&s->lock);
    cJSON_Delete(obj);
    store__notify_drain(s);
    return rc;
}

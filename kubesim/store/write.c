/*
 * write.c - every write, from its preparation to its commit.
 *
 * Preparation: system metadata, generation, the status-subresource split, built-in
 * defaulting/validation or CRD schema validation with fieldValidation, managedFields,
 * no-op detection, and printing the new snapshot. This work is the expensive part of
 * a write and depends on the object alone, so for most types (store__prepare_unlocked)
 * it runs without the store's lock, against a referenced snapshot of the old object.
 *
 * Commit: under the write lock, the check that what the write was prepared against is
 * still there (the name is free, the stored snapshot is the same one), its
 * resourceVersion, the commit path, and CRD (un)registration. A write whose object
 * changed meanwhile is prepared again, as the real server's GuaranteedUpdate retries on
 * a changed mod_revision, so the simulated cluster's status writes and the clients'
 * creates do not wait on each other's preparation. Patch (patch.c) reuses
 * store__write_prepare/commit.
 *
 * The two halves share one file because the store's lookups (store.c) call back into
 * the commit: a preparation in a file of its own would join that circle.
 */
#include "kobj/json_equal.h"
#include "kubesim/store/internal.h"
#include "kubesim/patch/patch.h"
#include "kubesim/schema/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define jget cJSON_GetObjectItemCaseSensitive

/* ---- preparation ---- */

static bool is_res(const struct reg_resource *r, const char *group, const char *plural)
{
    return r->builtin && !strcmp(r->group, group) && !strcmp(r->plural, plural);
}

/* Copies key k of metadata from `from` into `to` (or removes it when absent). */
static void copy_meta(cJSON *to, const cJSON *from, const char *k)
{
    cJSON *md = store__meta(to);
    const cJSON *v = jget(jget(from, "metadata"), k);

    cJSON_DeleteItemFromObjectCaseSensitive(md, k);
    if (v)
        cJSON_AddItemToObject(md, k, cJSON_Duplicate(v, true));
}

static void copy_top(cJSON *to, const cJSON *from, const char *k)
{
    const cJSON *v = jget(from, k);

    cJSON_DeleteItemFromObjectCaseSensitive(to, k);
    if (v)
        cJSON_AddItemToObject(to, k, cJSON_Duplicate(v, true));
}

/*
 * The start of a /status write's object: old's members but status, each taken from obj
 * when obj holds it unchanged (moved out, not copied: a merge patch leaves all but
 * status as it found them, and copying the whole Pod again was a quarter of a kubelet
 * status write, issue 18), else copied from old. *same_md tells that metadata came from
 * obj whole, so its labels, annotations and managedFields are already obj's.
 */
static cJSON *status_base(const cJSON *old, cJSON *obj, bool *same_md)
{
    cJSON *n = cJSON_CreateObject();
    const cJSON *t;

    *same_md = false;
    if (!n)
        return NULL;
    cJSON_ArrayForEach(t, old) {
        cJSON *mine;
        if (!t->string || !strcmp(t->string, "status"))
            continue;
        mine = cJSON_GetObjectItemCaseSensitive(obj, t->string);
        if (mine && json_equal(mine, t)) {
            mine = cJSON_DetachItemViaPointer(obj, mine);
            if (!strcmp(t->string, "metadata"))
                *same_md = true;
        } else {
            mine = cJSON_Duplicate(t, true);
        }
        if (!mine || !cJSON_AddItemToObject(n, t->string, mine)) {
            cJSON_Delete(mine);
            cJSON_Delete(n);
            return NULL;
        }
    }
    return n;
}

/* Puts key k with string v first in obj (apiVersion and kind lead, as served). */
static void set_str_first(cJSON *obj, const char *k, const char *v)
{
    cJSON *item = cJSON_CreateString(v);

    cJSON_DeleteItemFromObjectCaseSensitive(obj, k);
    if (!item)
        return;
    cJSON_AddItemToObject(obj, k, item);
    if (obj->child != item) {
        cJSON_DetachItemViaPointer(obj, item);
        /* InsertItemInArray keeps item->string, which makes it an object member */
        cJSON_InsertItemInArray(obj, 0, item);
    }
}

static void set_api_version(cJSON *obj, const struct reg_resource *res)
{
    char av[300];

    if (res->group[0])
        snprintf(av, sizeof(av), "%s/%s", res->group, res->version);
    else
        snprintf(av, sizeof(av), "%s", res->version);
    set_str_first(obj, "kind", res->kind);
    set_str_first(obj, "apiVersion", av);
}

/* Namespace must exist and not be terminating (NamespaceLifecycle admission). */
int store__check_namespace(struct store *s, const struct reg_resource *res, const char *ns,
                           const char *name, struct store_status *st)
{
    const struct reg_resource *nsr = store__find_builtin(s, "", "namespaces");
    struct sentry *e;
    char q[256];

    if (!nsr)
        return 0;
    e = store__entry_find(store__type_get(s, nsr, false), "", ns);
    if (!e) {
        store__status_not_found(st, nsr, ns);
        return -ENOENT;
    }
    if (kobj_meta_str(store_obj_json(e->obj), "deletionTimestamp")) {
        store__status_qualified(res, q, sizeof(q));
        store__status_set(st, 403, "Forbidden",
                          "%s \"%s\" is forbidden: unable to create new content in namespace %s because "
                          "it is being terminated", q, name, ns);
        store__status_details(st, res, name, false);
        return -EACCES;
    }
    return 0;
}

/* Custom resources: schema defaults/pruning/validation and fieldValidation. */
static int validate_custom(const struct reg_resource *res, cJSON *obj, const cJSON *old,
                           const struct store_write_opts *w, cJSON *causes,
                           struct store_status *st)
{
    cJSON *unknown;
    const char *fv = w && w->field_validation ? w->field_validation : "Warn";
    int rc = 0, n;

    if (!res->schema)
        return 0;
    unknown = cJSON_CreateArray();
    if (!unknown)
        return -ENOMEM;
    rc = schema_apply(res->schema, obj, old, causes, unknown);
    if (rc == -ENOMEM)
        goto out;
    rc = 0;
    n = cJSON_GetArraySize(unknown);
    if (n && !strcmp(fv, "Strict")) {
        struct buf b = { 0 };
        const cJSON *u;
        buf_puts(&b, "strict decoding error: ");
        cJSON_ArrayForEach(u, unknown) {
            const char *p = cJSON_GetStringValue(u);
            if (!p)
                continue;
            buf_printf(&b, "%sunknown field \"%s\"", b.len > 23 ? ", " : "",
                       p[0] == '.' ? p + 1 : p);
        }
        store__status_set(st, 400, "BadRequest", "%s", b.data ? b.data : "strict decoding error");
        buf_free(&b);
        rc = -EINVAL;
    } else if (n && !strcmp(fv, "Warn") && w && w->warnings) {
        const cJSON *u;
        cJSON_ArrayForEach(u, unknown) {
            const char *p = cJSON_GetStringValue(u);
            char msg[600];
            if (!p)
                continue;
            snprintf(msg, sizeof(msg), "unknown field \"%s\"", p[0] == '.' ? p + 1 : p);
            cJSON_AddItemToArray(w->warnings, cJSON_CreateString(msg));
        }
    }
out:
    cJSON_Delete(unknown);
    return rc;
}

bool store__is_crd(const struct reg_resource *res)
{
    return is_res(res, "apiextensions.k8s.io", "customresourcedefinitions");
}

bool store__is_pods(const struct reg_resource *res)
{
    return is_res(res, "", "pods");
}

static void validate_crd(const cJSON *obj, cJSON *causes)
{
    const cJSON *spec = jget(obj, "spec");
    const char *plural = cJSON_GetStringValue(jget(jget(spec, "names"), "plural"));
    const char *group = cJSON_GetStringValue(jget(spec, "group"));
    const char *name = kobj_meta_str(obj, "name");
    char want[600];

    registry_validate_crd(obj, causes);
    if (plural && group && name) {
        snprintf(want, sizeof(want), "%s.%s", plural, group);
        if (strcmp(want, name))
            status_cause_add(causes, "FieldValueInvalid", "metadata.name",
                             "Invalid value: \"%s\": must be spec.names.plural+\".\"+"
                             "spec.group", name);
    }
}

/* Warnings the real registry strategies give on a valid write (WarningsOnCreate/Update):
 * the deprecated Ingress class annotation, warned when it is set, not when it was kept. */
static void builtin_warnings(const struct reg_resource *res, const cJSON *obj, const cJSON *old,
                             const struct store_write_opts *w)
{
    static const char ann[] = "kubernetes.io/ingress.class";

    if (!w || !w->warnings || !is_res(res, "networking.k8s.io", "ingresses"))
        return;
    if (!jget(jget(jget(obj, "metadata"), "annotations"), ann) ||
        (old && jget(jget(jget(old, "metadata"), "annotations"), ann)))
        return;
    cJSON_AddItemToArray(w->warnings, cJSON_CreateString(
        "annotation \"kubernetes.io/ingress.class\" is deprecated, please use "
        "'spec.ingressClassName' instead"));
}

/*
 * Validation and defaulting common to create and update. obj is the would-be new
 * object (modified in place), old the stored one (NULL on create).
 */
static int prepare_common(struct store *s, const struct reg_resource *res, cJSON *obj,
                          const cJSON *old, const struct store_write_opts *w,
                          struct store_status *st)
{
    cJSON *causes = cJSON_CreateArray();
    const char *name = kobj_meta_str(obj, "name");
    int rc;

    if (!causes)
        return -ENOMEM;
    if (store__test_prepare_hook)
        store__test_prepare_hook(name ? name : "");
    if (name && !old)
        schema_check_name(name, store__name_rule(res), "metadata.name", causes);
    if (res->builtin) {
        rc = store__builtin_default(s, res, obj, old);
        if (rc)
            goto fail;
        store__builtin_validate(res, obj, old, causes);
        builtin_warnings(res, obj, old, w);
        if (store__is_crd(res)) {
            validate_crd(obj, causes);
            if (old)
                registry_validate_crd_update(old, obj, causes);
        }
    } else {
        rc = validate_custom(res, obj, old, w, causes, st);
        if (rc)
            goto fail;
    }
    store__check_meta(obj, old, res, causes);
    if (cJSON_GetArraySize(causes))
        return store__status_invalid(st, res, name ? name : "", causes);
    cJSON_Delete(causes);
    if (store__is_crd(res))
        registry_crd_set_status(obj);
    return 0;
fail:
    cJSON_Delete(causes);
    return rc;
}

static void record_managed(cJSON *obj, const cJSON *old, const struct reg_resource *res,
                           const struct store_write_opts *w, const char *sub)
{
    const char *av = cJSON_GetStringValue(jget(obj, "apiVersion"));

    if (!w || !w->field_manager)
        return;
    /* fieldsV1 as text straight away, for updates too: store__obj_new would print the
     * tree and replace it anyway (building it, then printing it, was 17 % of a Pod's
     * status patch, issue 18) */
    patch_record_managed_fields_raw(obj, old, w->field_manager, "Update",
                                    av ? av : res->version, sub && sub[0] ? sub : NULL);
}

void (*store__test_prepare_hook)(const char *name);

bool store__prepare_unlocked(const struct reg_resource *res)
{
    /* Services take their clusterIP from the store's table, CRDs change the registry,
     * and a custom resource's storage version is the type's, read under the lock */
    return res->builtin && !store__is_crd(res) && !is_res(res, "", "services") &&
           !store__events_v1(res);
}

/* The resourceVersion the next commit is likely to give: printed into a write prepared
 * outside the lock, corrected by settle_rv when another commit came first. */
static uint64_t rv_guess(struct store *s)
{
    return atomic_load_explicit(&s->committed_rv, memory_order_acquire) + 1;
}

/* See internal.h. */
int store__create_prepare(struct store *s, const struct reg_resource *res,
                          const struct reg_resource *sres, const char *ns, cJSON *obj,
                          const struct store_write_opts *w, bool locked,
                          struct store_prep_create *p, struct store_status *st)
{
    cJSON *md = store__meta(obj);
    const char *name, *gen_name, *bns;
    char nm[300], uid[37], now[32];
    int rc;

    name = cJSON_GetStringValue(jget(md, "name"));
    gen_name = cJSON_GetStringValue(jget(md, "generateName"));
    bns = cJSON_GetStringValue(jget(md, "namespace"));
    if (!res->namespaced) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "namespace");
        ns = "";
    } else if (bns && bns[0] && ns && ns[0] && strcmp(bns, ns)) {
        store__status_set(st, 400, "BadRequest", "the namespace of the provided object does not match "
                                      "the namespace sent on the request");
        rc = -EINVAL;
        goto out;
    } else if (!ns || !ns[0]) {
        ns = bns && bns[0] ? bns : "default";
    }
    if (res->namespaced)
        store__set_str(md, "namespace", ns);
    ns = res->namespaced ? cJSON_GetStringValue(jget(md, "namespace")) : "";
    {
        const char *rvs = cJSON_GetStringValue(jget(md, "resourceVersion"));
        if (rvs && rvs[0]) {
            store__status_set(st, 400, "BadRequest", "resourceVersion should not be set on objects to "
                                          "be created");
            rc = -EINVAL;
            goto out;
        }
    }
    if ((!name || !name[0]) && (!gen_name || !gen_name[0])) {
        cJSON *causes = cJSON_CreateArray();
        status_cause_add(causes, "FieldValueRequired", "metadata.name",
                         "Required value: name or generateName is required");
        rc = store__status_invalid(st, res, "", causes);
        goto out;
    }
    if (res->namespaced && !s->replaying) {
        /* checked again by the commit: the namespace may go meanwhile */
        if (!locked)
            pthread_rwlock_rdlock(&s->lock);
        rc = store__check_namespace(s, res, ns, name && name[0] ? name : gen_name, st);
        if (!locked)
            pthread_rwlock_unlock(&s->lock);
        if (rc)
            goto out;
    }
    /* system fields are the server's: FillObjectMetaSystemFields + BeforeCreate */
    for (const char *const *k = (const char *const[]){ "uid", "creationTimestamp",
            "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
            "resourceVersion", NULL }; *k; k++)
        cJSON_DeleteItemFromObjectCaseSensitive(md, *k);
    store__random_uid(uid);
    store__now(now);
    store__set_str(md, "uid", uid);
    store__set_str(md, "creationTimestamp", now);
    if (!(res->flags & REG_FLAG_NO_GENERATION))
        store__set_num(md, "generation", 1);
    if (res->has_status)
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    set_api_version(obj, sres);
    p->generated = !name || !name[0];
    if (p->generated) {
        char suf[6];
        snprintf(p->gen_name, sizeof(p->gen_name), "%.58s", gen_name);
        store__random_suffix(suf);
        snprintf(nm, sizeof(nm), "%s%s", p->gen_name, suf);
        store__set_str(md, "name", nm);
    }
    rc = prepare_common(s, res, obj, NULL, w, st);
    if (rc)
        goto out;
    record_managed(obj, NULL, res, w, NULL);
    if (!(w && w->dry_run)) {
        char rvb[24];
        snprintf(rvb, sizeof(rvb), "%llu",
                 (unsigned long long)(locked ? s->rv + 1 : rv_guess(s)));
        store__set_str(md, "resourceVersion", rvb);
    }
    p->o = store__obj_new(w && w->dry_run ? res : sres, obj);
    obj = NULL;
    rc = p->o ? 0 : -ENOMEM;
out:
    cJSON_Delete(obj);
    return rc;
}

/*
 * The tail shared by PUT and PATCH, up to the commit: obj (consumed) is the proposed
 * new state of the object whose stored snapshot is base (referenced by the caller).
 * Applies the subresource split, immutable system fields, defaults/validation,
 * generation, no-op detection and managedFields, and prints the new snapshot. Runs
 * without the lock for the types store__prepare_unlocked() names (locked false: the
 * resourceVersion printed is a guess the commit corrects). sres is the type's storage
 * version. A no-op or a dry run is answered here (pl->kind WRITE_DONE, *out set).
 */
int store__write_prepare(struct store *s, const struct reg_resource *res,
                         const struct reg_resource *sres, struct store_obj *base,
                         const char *sub, cJSON *obj, const struct store_write_opts *w,
                         bool locked, struct write_plan *pl, struct store_obj **out,
                         struct store_status *st)
{
    const cJSON *old = store_obj_json(base);
    const char *name = base->name;
    cJSON *md, *nobj = NULL;
    bool status_sub = sub && !strcmp(sub, "status");
    bool binding = sub && !strcmp(sub, "binding");
    int rc;

    memset(pl, 0, sizeof(*pl));
    pl->base = base;
    if (!old) {
        rc = -ENOMEM;
        goto out;
    }
    if (status_sub) {
        /* /status: everything but status (and, for built-ins, labels and
         * annotations as the pod/service status strategies allow) comes from old */
        bool same_md = false;
        nobj = status_base(old, obj, &same_md);
        if (!nobj) {
            rc = -ENOMEM;
            goto out;
        }
        cJSON *stv = cJSON_DetachItemFromObjectCaseSensitive(obj, "status");
        if (stv)
            cJSON_AddItemToObject(nobj, "status", stv);
        if (!same_md) {
            if (res->builtin) {
                copy_meta(nobj, obj, "labels");
                copy_meta(nobj, obj, "annotations");
            }
            copy_meta(nobj, obj, "managedFields");
        }
        cJSON_Delete(obj);
        obj = nobj;
        nobj = NULL;
    } else if (res->has_status && !binding) {
        copy_top(obj, old, "status");
    }
    md = store__meta(obj);
    for (const char *const *k = (const char *const[]){ "uid", "creationTimestamp",
            "deletionTimestamp", "deletionGracePeriodSeconds", "generation", NULL }; *k; k++)
        copy_meta(obj, old, *k);
    store__set_str(md, "name", name);
    if (res->namespaced)
        store__set_str(md, "namespace", base->ns);
    else
        cJSON_DeleteItemFromObjectCaseSensitive(md, "namespace");
    set_api_version(obj, sres);
    rc = prepare_common(s, res, obj, old, w, st);
    if (rc)
        goto out;
    if (!status_sub && !(res->flags & REG_FLAG_NO_GENERATION) &&
        store__spec_changed(res, old, obj)) {
        double g = cJSON_GetNumberValue(jget(jget(old, "metadata"), "generation"));
        store__set_num(md, "generation", (g > 0 ? g : 0) + 1);
    }
    store__set_str(md, "resourceVersion", kobj_meta_str(old, "resourceVersion"));
    if (!jget(md, "managedFields") && jget(jget(old, "metadata"), "managedFields"))
        copy_meta(obj, old, "managedFields");
    if (store__same_object(obj, old)) {
        pl->kind = WRITE_DONE;
        if (out && !(*out = store__obj_as(base, res)))
            rc = -ENOMEM;
        goto out;
    }
    if (!binding)
        record_managed(obj, old, res, w, sub);   /* the real binding writes storage directly */
    if (w && w->dry_run) {
        struct store_obj *o = store__obj_new(res, obj);
        obj = NULL;
        pl->kind = WRITE_DONE;
        if (out)
            *out = o;
        else
            store_obj_unref(o);
        rc = 0;
        goto out;
    }
    if (kobj_meta_str(old, "deletionTimestamp") && store__finalizers_empty(res, obj)) {
        const cJSON *g = jget(jget(old, "metadata"), "deletionGracePeriodSeconds");
        if (!g || cJSON_GetNumberValue(g) == 0) {
            /* the write that drops the last finalizer is the removal */
            pl->kind = WRITE_REMOVE;
            rc = 0;
            goto out;
        }
    }
    {
        char rvb[24];
        snprintf(rvb, sizeof(rvb), "%llu",
                 (unsigned long long)(locked ? s->rv + 1 : rv_guess(s)));
        store__set_str(md, "resourceVersion", rvb);
        pl->o = store__obj_new(sres, obj);
        obj = NULL;
        if (!pl->o) {
            rc = -ENOMEM;
            goto out;
        }
        pl->kind = WRITE_PUT;
    }
out:
    cJSON_Delete(obj);
    cJSON_Delete(nobj);
    if (rc == -ENOMEM)
        store__status_set(st, 500, "InternalError", "out of memory");
    return rc;
}

/* ---- commit ---- */

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

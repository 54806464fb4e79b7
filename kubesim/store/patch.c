/*
 * patch.c - PATCH (merge, JSON, strategic, server-side apply) and the
 * /scale subresource (autoscaling/v1 Scale mapped through the CRD's scale paths).
 *
 * A patch is applied to the current object and the result goes through the same
 * tail as PUT (store__write_prepare), so validation, status split, generation and
 * no-op detection are identical. For most built-in types the patch and that tail
 * run without the store's lock against a referenced snapshot, and the commit
 * applies the patch again if the object changed meanwhile (patch_unlocked); other
 * types, and a patch that keeps losing that race, hold the write lock from read to
 * write. An apply that finds nothing creates, and retries once as a patch if a
 * concurrent create won.
 */
#include "kubesim/store/internal.h"
#include "kubesim/patch/patch.h"
#include "kobj/yamljson.h"
#include "util/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define jget cJSON_GetObjectItemCaseSensitive
#define PATCH_BODY_MAX (3u << 20)       /* the server's default request size limit */

static int patch_error(struct store_status *st, const struct reg_resource *res,
                       const char *name, int rc, const char *err)
{
    switch (rc) {
    case -EEXIST:
        store__status_set(st, 409, "Conflict", "%s", err[0] ? err : "Apply failed with conflicts");
        store__status_details(st, res, name, false);
        return -EBUSY;
    case -EPROTONOSUPPORT:
        store__status_set(st, 415, "UnsupportedMediaType", "the body of the request was in an unknown "
                          "format - accepted media types include: application/json-patch+json, "
                          "application/merge-patch+json, application/apply-patch+yaml");
        return rc;
    case -E2BIG:
        store__status_set(st, 413, "RequestEntityTooLarge", "%s", err[0] ? err : "too many operations");
        return rc;
    case -ENOMEM:
        store__status_set(st, 500, "InternalError", "out of memory");
        return rc;
    default:
        store__status_set(st, 422, "Invalid", "%s", err[0] ? err : "the patch could not be applied");
        store__status_details(st, res, name, true);
        return -EINVAL;
    }
}

static cJSON *parse_body(enum store_patch_type type, const char *body, size_t len,
                         struct store_status *st)
{
    cJSON *j;

    if (!body || len > PATCH_BODY_MAX) {
        store__status_set(st, 413, "RequestEntityTooLarge", "the request body is too large");
        return NULL;
    }
    j = cJSON_ParseWithLength(body, len);
    if (!j && type == PATCH_APPLY) {
        /* apply-patch+yaml: kubectl sends JSON, other clients YAML */
        char err[256] = "";
        int rc = yamljson_parse_one(body, len, &j, err, sizeof(err));
        if (rc == -E2BIG) {
            store__status_set(st, 413, "RequestEntityTooLarge", "the request body is too large: %s", err);
            return NULL;
        }
        if (rc) {
            store__status_set(st, 400, "BadRequest", "error decoding YAML: %s", err);
            return NULL;
        }
    }
    if (!j) {
        store__status_set(st, 400, "BadRequest", "error decoding patch: invalid JSON near offset %ld",
                          (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - body : 0));
        return NULL;
    }
    if (type == PATCH_JSON ? !cJSON_IsArray(j) : !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        store__status_set(st, 400, "BadRequest", type == PATCH_JSON ?
                          "error decoding patch: a JSON patch must be a list of operations" :
                          "error decoding patch: the patch must be a JSON object");
        return NULL;
    }
    return j;
}

static int apply_one(const struct reg_resource *res, enum store_patch_type type,
                     const cJSON *cur, const cJSON *patch, const struct store_write_opts *w,
                     cJSON **out, char *err, size_t errlen)
{
    char av[300];

    switch (type) {
    case PATCH_MERGE:
        return patch_merge(cur, patch, out, err, errlen);
    case PATCH_JSON:
        return patch_json(cur, patch, out, err, errlen);
    case PATCH_STRATEGIC:
        if (!res->builtin || !res->smp_kind)
            return -EPROTONOSUPPORT;
        return patch_strategic(cur, patch, res->smp_kind, out, err, errlen);
    case PATCH_APPLY:
        if (res->group[0])
            snprintf(av, sizeof(av), "%s/%s", res->group, res->version);
        else
            snprintf(av, sizeof(av), "%s", res->version);
        if (!res->builtin)
            return patch_apply_schema(cur, patch, w && w->field_manager ? w->field_manager :
                                      "unknown", w && w->force, av, NULL, res->schema, out,
                                      err, errlen);
        return patch_apply(cur, patch, w && w->field_manager ? w->field_manager : "unknown",
                           w && w->force, av, res->smp_kind, out, err, errlen);
    }
    return -EINVAL;
}

/* ---- scale ---- */


static int path_set_number(cJSON *obj, const char *path, double v)
{
    char buf[256], *save = NULL, *tok, *next;

    if (!path || snprintf(buf, sizeof(buf), "%s", path[0] == '.' ? path + 1 : path) >=
                     (int)sizeof(buf))
        return -EINVAL;
    tok = strtok_r(buf, ".", &save);
    while (tok) {
        next = strtok_r(NULL, ".", &save);
        if (!next) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, tok);
            return cJSON_AddNumberToObject(obj, tok, v) ? 0 : -ENOMEM;
        }
        cJSON *c = jget(obj, tok);
        if (!cJSON_IsObject(c)) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, tok);
            c = cJSON_AddObjectToObject(obj, tok);
            if (!c)
                return -ENOMEM;
        }
        obj = c;
        tok = next;
    }
    return -EINVAL;
}

static cJSON *scale_of(const struct reg_resource *res, const struct store_obj *o)
{
    cJSON *sc = cJSON_CreateObject(), *md, *spec, *status;
    const cJSON *v;

    if (!sc)
        return NULL;
    cJSON_AddStringToObject(sc, "kind", "Scale");
    cJSON_AddStringToObject(sc, "apiVersion", "autoscaling/v1");
    md = cJSON_AddObjectToObject(sc, "metadata");
    cJSON_AddStringToObject(md, "name", o->name);
    if (o->ns[0])
        cJSON_AddStringToObject(md, "namespace", o->ns);
    cJSON_AddStringToObject(md, "uid", o->uid);
    v = jget(jget(store_obj_json(o), "metadata"), "resourceVersion");
    if (v)
        cJSON_AddItemToObject(md, "resourceVersion", cJSON_Duplicate(v, true));
    v = jget(jget(store_obj_json(o), "metadata"), "creationTimestamp");
    if (v)
        cJSON_AddItemToObject(md, "creationTimestamp", cJSON_Duplicate(v, true));
    spec = cJSON_AddObjectToObject(sc, "spec");
    v = json_get(store_obj_json(o), res->scale_spec_path);
    cJSON_AddNumberToObject(spec, "replicas", cJSON_IsNumber(v) ? v->valuedouble : 0);
    status = cJSON_AddObjectToObject(sc, "status");
    v = json_get(store_obj_json(o), res->scale_status_path);
    cJSON_AddNumberToObject(status, "replicas", cJSON_IsNumber(v) ? v->valuedouble : 0);
    v = json_get(store_obj_json(o), res->scale_selector_path);
    if (cJSON_GetStringValue(v))
        cJSON_AddStringToObject(status, "selector", cJSON_GetStringValue(v));
    return sc;
}

static int no_scale(struct store_status *st)
{
    store__status_set(st, 404, "NotFound", "the server could not find the requested resource");
    return -ENOENT;
}

int store_get_scale(struct store *s, const struct reg_resource *res, const char *ns,
                    const char *name, cJSON **out, struct store_status *st)
{
    struct store_obj *o = NULL;
    int rc;

    *out = NULL;
    if (!res->has_scale || !res->scale_spec_path)
        return no_scale(st);
    rc = store_get(s, res, ns, name, &o, st);
    if (rc)
        return rc;
    *out = scale_of(res, o);
    store_obj_unref(o);
    if (!*out) {
        store__status_set(st, 500, "InternalError", "out of memory");
        return -ENOMEM;
    }
    return 0;
}

/* Applies a Scale (consumed) to entry e (lock held). */
static int scale_write(struct store *s, const struct reg_resource *res, struct sentry *e,
                       cJSON *scale, const struct store_write_opts *w, struct store_obj **out,
                       struct store_status *st)
{
    const cJSON *rep = jget(jget(scale, "spec"), "replicas");
    const char *rv = kobj_meta_str(scale, "resourceVersion");
    cJSON *nobj;
    int rc;

    if (rv && rv[0] && strtoull(rv, NULL, 10) != e->obj->rv) {
        cJSON_Delete(scale);
        store__status_conflict(st, res, e->obj->name);
        return -EBUSY;
    }
    if (!cJSON_IsNumber(rep) || rep->valuedouble < 0 || rep->valuedouble > 2147483647.0) {
        cJSON *causes = cJSON_CreateArray();
        status_cause_add(causes, "FieldValueInvalid", "spec.replicas",
                         "Invalid value: %g: must be greater than or equal to 0",
                         cJSON_IsNumber(rep) ? rep->valuedouble : -1.0);
        cJSON_Delete(scale);
        return store__status_invalid(st, res, e->obj->name, causes);
    }
    nobj = store__obj_copy(e->obj);
    rc = nobj ? path_set_number(nobj, res->scale_spec_path, rep->valuedouble) : -ENOMEM;
    cJSON_Delete(scale);
    if (rc) {
        cJSON_Delete(nobj);
        store__status_set(st, 500, "InternalError", "cannot apply the scale");
        return rc;
    }
    return store__write_prepared(s, res, e, NULL, nobj, w, out, st);
}

int store__scale_update(struct store *s, const struct reg_resource *res, const char *ns,
                        const char *name, cJSON *scale, const struct store_write_opts *w,
                        struct store_obj **out, struct store_status *st)
{
    struct sentry *e;
    int rc;

    if (!res->has_scale || !res->scale_spec_path) {
        cJSON_Delete(scale);
        return no_scale(st);
    }
    pthread_rwlock_wrlock(&s->lock);
    if (!(e = store__entry_lookup(s, res, ns, name, st))) {
        cJSON_Delete(scale);
        rc = -ENOENT;
    } else {
        rc = scale_write(s, res, e, scale, w, out, st);
    }
    pthread_rwlock_unlock(&s->lock);
    store__notify_drain(s);
    return rc;
}

/* ---- patch ---- */

/* Optimistic attempts of a patch before it is applied under the lock: each one
 * failed because another write changed the object meanwhile, so this bounds a
 * patch's work when one object is written very often. */
#define PATCH_OPTIMISTIC_TRIES 8

/*
 * A patch of a type prepared outside the lock (store__prepare_unlocked): applied to a
 * referenced snapshot and prepared without the lock, committed under it if the stored
 * snapshot is still that one, else applied again to the new one. -EAGAIN (nothing
 * answered) sends the caller to the locked path: the object is missing (an apply may
 * create it) or it kept changing.
 */
static int patch_unlocked(struct store *s, const struct reg_resource *res, const char *ns,
                          const char *name, const char *sub, enum store_patch_type type,
                          const cJSON *patch, const struct store_write_opts *w,
                          const struct store_write_opts *wp, struct store_obj **out,
                          struct store_status *st)
{
    char err[1024] = "";
    int rc = -EAGAIN;

    for (int attempt = 0; attempt < PATCH_OPTIMISTIC_TRIES; attempt++) {
        struct write_plan pl = { 0 };
        struct store_obj *base = NULL;
        cJSON *next = NULL;
        struct sentry *e;

        pthread_rwlock_rdlock(&s->lock);
        e = store__entry_find(store__type_get(s, res, false), res->namespaced ? ns : "", name);
        if (e)
            base = store_obj_ref(e->obj);
        pthread_rwlock_unlock(&s->lock);
        if (!base)
            return -EAGAIN;
        rc = apply_one(res, type, store_obj_json(base), patch, w, &next, err, sizeof(err));
        if (rc) {
            store_obj_unref(base);
            return patch_error(st, res, name, rc, err);
        }
        /* a resourceVersion inside the patch is a precondition */
        const char *prv = kobj_meta_str(next, "resourceVersion");
        if (prv && prv[0] && strtoull(prv, NULL, 10) != base->rv) {
            cJSON_Delete(next);
            store_obj_unref(base);
            store__status_conflict(st, res, name);
            return -EBUSY;
        }
        rc = store__write_prepare(s, res, res, base, sub, next, wp, false, &pl, out, st);
        if (rc || pl.kind == WRITE_DONE) {
            store_obj_unref(base);
            return rc;
        }
        pthread_rwlock_wrlock(&s->lock);
        e = store__entry_find(store__type_get(s, res, false), res->namespaced ? ns : "", name);
        if (e && e->obj == base)
            rc = store__write_commit(s, res, e, &pl, out, st);
        else
            rc = -EAGAIN;       /* changed or gone meanwhile: prepare again */
        pthread_rwlock_unlock(&s->lock);
        store_obj_unref(pl.o);
        store_obj_unref(base);
        if (rc != -EAGAIN)
            return rc;
    }
    return rc;
}

/* store_patch and store_patch_json: the body as text, or parsed already (parsed,
 * consumed; then body is unused). */
static int patch_any(struct store *s, const struct reg_resource *res, const char *ns,
                     const char *name, const char *subresource, enum store_patch_type type,
                     const char *body, size_t len, cJSON *parsed,
                     const struct store_write_opts *w, struct store_obj **out, bool *created,
                     struct store_status *st)
{
    bool scale = subresource && !strcmp(subresource, "scale");
    struct store_write_opts wa = { 0 };
    char err[1024] = "";
    cJSON *patch = parsed, *cur = NULL, *next = NULL;
    struct sentry *e;
    int rc, attempt = 0;

    if (out)
        *out = NULL;
    if (created)
        *created = false;
    if (type == PATCH_STRATEGIC && (!res->builtin || !res->smp_kind)) {
        rc = patch_error(st, res, name, -EPROTONOSUPPORT, err);
        goto out;
    }
    if (scale && (!res->has_scale || !res->scale_spec_path)) {
        rc = no_scale(st);
        goto out;
    }
    if (!scale && subresource && subresource[0] &&
        (strcmp(subresource, "status") || !res->has_status) &&
        (strcmp(subresource, "binding") || !store__is_pods(res))) {
        store__status_set(st, 404, "NotFound", "the server could not find the requested resource");
        rc = -ENOENT;
        goto out;
    }
    if (patch && (type == PATCH_JSON ? !cJSON_IsArray(patch) : !cJSON_IsObject(patch))) {
        store__status_set(st, 400, "BadRequest", "error decoding patch: the patch has the "
                          "wrong shape for its type");
        rc = -EINVAL;
        goto out;
    }
    if (!patch && !(patch = parse_body(type, body, len, st)))
        return -EINVAL;
    if (type == PATCH_APPLY) {
        /* patch_apply keeps managedFields itself (operation Apply): no Update entry */
        if (w)
            wa = *w;
        wa.field_manager = NULL;
    }
    if (!scale && store__prepare_unlocked(res)) {
        rc = patch_unlocked(s, res, ns, name, subresource, type, patch, w,
                            type == PATCH_APPLY ? &wa : w, out, st);
        if (rc != -EAGAIN)
            goto out;
    }
again:
    pthread_rwlock_wrlock(&s->lock);
    e = store__entry_find(store__type_get(s, res, false), res->namespaced ? ns : "", name);
    if (!e) {
        pthread_rwlock_unlock(&s->lock);
        if (type != PATCH_APPLY || scale || (subresource && subresource[0]) || attempt++) {
            store__status_not_found(st, res, name);
            rc = -ENOENT;
            goto out;
        }
        rc = apply_one(res, type, NULL, patch, w, &next, err, sizeof(err));
        if (rc) {
            rc = patch_error(st, res, name, rc, err);
            goto out;
        }
        cJSON *md = store__meta(next);
        if (!jget(md, "name"))
            cJSON_AddStringToObject(md, "name", name);
        rc = store_create(s, res, ns, next, &wa, out, st);
        next = NULL;
        if (rc == -EEXIST) {
            store_status_clear(st);
            goto again;         /* lost a race with another create: patch it instead */
        }
        if (!rc && created)
            *created = true;
        goto out;
    }
    if (scale) {
        cur = scale_of(res, e->obj);
        rc = cur ? apply_one(res, type == PATCH_STRATEGIC ? PATCH_MERGE : type, cur, patch, w,
                             &next, err, sizeof(err)) : -ENOMEM;
        if (rc) {
            pthread_rwlock_unlock(&s->lock);
            rc = patch_error(st, res, name, rc, err);
            goto out;
        }
        rc = scale_write(s, res, e, next, w, out, st);
        next = NULL;
        pthread_rwlock_unlock(&s->lock);
        goto out;
    }
    /* an events.k8s.io/v1 patch names that version's fields: patch the object
     * as that version shows it, keep it as core/v1 (events.c) */
    const struct reg_resource *kept = e->obj->res;
    bool convert = kept != res && store__events_v1(res);
    if (convert && !(cur = store__obj_copy(e->obj))) {
        pthread_rwlock_unlock(&s->lock);
        rc = -ENOMEM;
        goto out;
    }
    if (convert)
        store__event_to_v1(cur);
    rc = apply_one(res, type, convert ? cur : store_obj_json(e->obj), patch, w, &next, err, sizeof(err));
    if (rc) {
        pthread_rwlock_unlock(&s->lock);
        rc = patch_error(st, res, name, rc, err);
        goto out;
    }
    if (convert)
        store__event_to_core(next);
    {
        /* a resourceVersion inside the patch is a precondition */
        const char *prv = kobj_meta_str(next, "resourceVersion");
        if (prv && prv[0] && strtoull(prv, NULL, 10) != e->obj->rv) {
            pthread_rwlock_unlock(&s->lock);
            store__status_conflict(st, res, name);
            rc = -EBUSY;
            goto out;
        }
    }
    rc = store__write_prepared(s, convert ? kept : res, e, subresource, next,
                               type == PATCH_APPLY ? &wa : w, out, st);
    next = NULL;
    pthread_rwlock_unlock(&s->lock);
    if (convert && rc == 0 && out && *out) {
        struct store_obj *c = store__obj_as(*out, res);
        store_obj_unref(*out);
        if (!(*out = c))
            rc = -ENOMEM;
    }
out:
    cJSON_Delete(patch);
    cJSON_Delete(cur);
    cJSON_Delete(next);
    store__notify_drain(s);
    return rc;
}

int store_patch(struct store *s, const struct reg_resource *res, const char *ns,
                const char *name, const char *subresource, enum store_patch_type type,
                const char *body, size_t len, const struct store_write_opts *w,
                struct store_obj **out, bool *created, struct store_status *st)
{
    return patch_any(s, res, ns, name, subresource, type, body, len, NULL, w, out, created, st);
}

int store_patch_json(struct store *s, const struct reg_resource *res, const char *ns,
                     const char *name, const char *subresource, enum store_patch_type type,
                     cJSON *patch, const struct store_write_opts *w, struct store_obj **out,
                     bool *created, struct store_status *st)
{
    if (!patch) {
        store__status_set(st, 500, "InternalError", "out of memory");
        return -ENOMEM;
    }
    return patch_any(s, res, ns, name, subresource, type, NULL, 0, patch, w, out, created, st);
}

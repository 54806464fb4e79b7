/*
 * patch_apply.c - server-side apply (application/apply-patch+yaml) and the managedFields
 * bookkeeping of ordinary writes.
 *
 * Apply, as the API server does it in outline:
 *   1. the applier's new field set is the set of fields in the applied configuration;
 *   2. a field it sets to a different value than live, owned by another manager, is a
 *      conflict (-EEXIST listing field and manager) unless force, which takes ownership;
 *   3. the configuration is merged into live (keyed lists by key, sets as unions, other
 *      lists replaced, maps recursively);
 *   4. fields the applier owned before, no longer applies and nobody else owns are
 *      removed;
 *   5. managedFields records the new sets.
 * Ownership is shared without conflict when values agree, as the real server does.
 * Simplifications: fields whose value did not change are not moved between Update
 * managers, and a failed apply reports every conflict of the first manager pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"
#include "util/util.h"

#define MF_MAX_ENTRIES 256

struct mf_entry {
    char *manager, *operation, *api_version, *subresource, *time;
    struct fs_set set;
    char *fields_text;          /* fieldsV1 already printed (a create's), instead of set */
};

struct mf_list {
    struct mf_entry *v;
    size_t n;
};

static char *dup_str(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

static void mf_free(struct mf_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        struct mf_entry *e = &l->v[i];
        free(e->manager);
        free(e->operation);
        free(e->api_version);
        free(e->subresource);
        free(e->time);
        free(e->fields_text);
        patch__fs_free(&e->set);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* Loads obj.metadata.managedFields; malformed entries are dropped, as the server drops
 * managedFields it cannot decode. */
static int mf_load(const cJSON *obj, struct mf_list *l)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(meta, "managedFields"), *e;
    size_t n = 0;
    int rc;

    memset(l, 0, sizeof(*l));
    if (!cJSON_IsArray(arr))
        return 0;
    n = (size_t)cJSON_GetArraySize(arr);
    if (n > MF_MAX_ENTRIES)
        n = MF_MAX_ENTRIES;
    if (n == 0 || !(l->v = calloc(n + 1, sizeof(*l->v))))
        return n == 0 ? 0 : -ENOMEM;
    cJSON_ArrayForEach(e, arr) {
        if (l->n >= n)
            break;
        struct mf_entry *m = &l->v[l->n];
        const cJSON *mgr = cJSON_GetObjectItemCaseSensitive(e, "manager");
        if (!cJSON_IsObject(e) || !cJSON_IsString(mgr))
            continue;
        m->manager = dup_str(e, "manager");
        m->operation = dup_str(e, "operation");
        m->api_version = dup_str(e, "apiVersion");
        m->subresource = dup_str(e, "subresource");
        m->time = dup_str(e, "time");
        l->n++;
        if (!m->manager)
            return -ENOMEM;
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "fieldsV1");
        cJSON *parsed = NULL;
        if (cJSON_IsRaw(f)) {
            /* stored snapshots keep fieldsV1 as compact JSON text (store.c) */
            if (!(parsed = cJSON_Parse(f->valuestring)))
                return -ENOMEM;
            f = parsed;
        }
        rc = patch__fs_from_fieldsv1(f, &m->set);
        cJSON_Delete(parsed);
        if (rc == -ENOMEM)
            return rc;
    }
    return 0;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Index of (manager, operation, subresource), adding an empty entry when absent. */
static int mf_find_or_add(struct mf_list *l, const char *manager, const char *op,
                          const char *subresource)
{
    for (size_t i = 0; i < l->n; i++)
        if (str_eq(l->v[i].manager, manager) && str_eq(l->v[i].operation, op) &&
            str_eq(l->v[i].subresource, subresource))
            return (int)i;
    struct mf_entry *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    l->v = nv;
    memset(&nv[l->n], 0, sizeof(*nv));
    nv[l->n].manager = strdup(manager);
    nv[l->n].operation = strdup(op);
    nv[l->n].subresource = subresource ? strdup(subresource) : NULL;
    l->n++;
    if (!nv[l->n - 1].manager || !nv[l->n - 1].operation)
        return -ENOMEM;
    return (int)(l->n - 1);
}

/* fieldsV1 of a set: a tree, or (raw) one cJSON_Raw node holding its compact text, the
 * form store.c keeps in snapshots; the text is written without building the tree. */
static cJSON *mf_fields(const struct fs_set *set, bool raw)
{
    struct buf b = { 0 };
    cJSON *f = NULL;
    int rc;

    if (!raw)
        return patch__fs_to_fieldsv1(set);
    rc = patch__fs_print_fieldsv1(set, &b);
    if (rc == -E2BIG)
        f = patch__fs_to_fieldsv1(set);
    else if (!rc && !buf_append(&b, "", 1))
        f = cJSON_CreateRaw(b.data);
    buf_free(&b);
    return f;
}

/* Writes the entries back into obj.metadata.managedFields (entries with empty sets are
 * dropped, as the server drops them). */
static int mf_store(cJSON *obj, const struct mf_list *l, bool raw)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata"), *arr;

    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "metadata");
        if (!(meta = cJSON_AddObjectToObject(obj, "metadata")))
            return -ENOMEM;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    if (!(arr = cJSON_CreateArray()))
        return -ENOMEM;
    for (size_t i = 0; i < l->n; i++) {
        const struct mf_entry *e = &l->v[i];
        cJSON *o, *f;
        if (e->set.n == 0 && !e->fields_text)
            continue;
        f = e->fields_text ? cJSON_CreateRaw(e->fields_text) : mf_fields(&e->set, raw);
        if (!(o = cJSON_CreateObject()) || !f) {
            cJSON_Delete(f);
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return -ENOMEM;
        }
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "manager", e->manager);
        if (e->operation)
            cJSON_AddStringToObject(o, "operation", e->operation);
        if (e->api_version)
            cJSON_AddStringToObject(o, "apiVersion", e->api_version);
        if (e->time)
            cJSON_AddStringToObject(o, "time", e->time);
        cJSON_AddStringToObject(o, "fieldsType", "FieldsV1");
        cJSON_AddItemToObject(o, "fieldsV1", f);
        if (e->subresource)
            cJSON_AddStringToObject(o, "subresource", e->subresource);
    }
    if (cJSON_GetArraySize(arr) == 0) {
        cJSON_Delete(arr);
        return 0;
    }
    cJSON_AddItemToObject(meta, "managedFields", arr);
    return 0;
}

static int set_stamp(struct mf_entry *e, const char *api_version)
{
    char ts[32];
    util_format_time(time(NULL), ts);
    free(e->time);
    e->time = strdup(ts);
    if (api_version) {
        free(e->api_version);
        e->api_version = strdup(api_version);
    }
    return e->time && (!api_version || e->api_version) ? 0 : -ENOMEM;
}

/* ---- merge of the applied configuration into live ------------------------------ */

static cJSON *ssa_merge(const cJSON *live, const cJSON *applied, const struct fs_keys *k,
                        const char *dotted, int depth);

static int elem_match(const cJSON *a, const cJSON *b, const char *const *keys,
                      const char *single)
{
    const char *one[2] = { single, NULL };
    if (!keys)
        keys = one;
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b) || !keys[0])
        return 0;
    for (size_t i = 0; keys[i]; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[i]);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, keys[i]);
        if (!x || !y || !patch__json_equal(x, y))
            return 0;
    }
    return 1;
}

static cJSON *ssa_merge_list(const cJSON *live, const cJSON *applied, const struct fs_keys *k,
                             const char *dotted, int depth)
{
    const char *const *keys = NULL;
    int kind = patch__fs_list_keys(k, dotted, &keys);
    const char *single = k->smp_kind ? patch__smp_rule(k->smp_kind, dotted).key : NULL;
    const cJSON *e, *l;
    cJSON *res;

    if (kind == 0 || !cJSON_IsArray(live))
        return cJSON_Duplicate(applied, true);
    /* an element without its keys makes the list atomic, as its field set says */
    if (kind == 1)
        cJSON_ArrayForEach(e, applied)
            if (!elem_match(e, e, keys, single))
                return cJSON_Duplicate(applied, true);
    if (!(res = cJSON_Duplicate(live, true)))
        return NULL;
    cJSON_ArrayForEach(e, applied) {
        int i = 0, hit = -1;
        cJSON_ArrayForEach(l, res) {
            if (kind == 2 ? patch__json_equal(l, e) : elem_match(l, e, keys, single)) {
                hit = i;
                break;
            }
            i++;
        }
        cJSON *v = hit >= 0 && kind == 1 ?
                   ssa_merge(cJSON_GetArrayItem(res, hit), e, k, dotted, depth + 1) :
                   hit >= 0 ? NULL : cJSON_Duplicate(e, true);
        if (hit >= 0 && kind == 2)
            continue;
        if (!v)
            goto nomem;
        if (hit >= 0)
            cJSON_ReplaceItemInArray(res, hit, v);
        else
            cJSON_AddItemToArray(res, v);
    }
    return res;
nomem:
    cJSON_Delete(res);
    return NULL;
}

static cJSON *ssa_merge(const cJSON *live, const cJSON *applied, const struct fs_keys *k,
                        const char *dotted, int depth)
{
    const cJSON *m;
    cJSON *res;
    char sub[PATCH_PATH_MAX];

    if (!cJSON_IsObject(applied) || !cJSON_IsObject(live) || depth > PATCH_MAX_DEPTH)
        return cJSON_Duplicate(applied, true);
    if (!(res = cJSON_Duplicate(live, true)))
        return NULL;
    cJSON_ArrayForEach(m, applied) {
        size_t sl = strlen(dotted);
        cJSON *cur, *v;
        if (!m->string)
            continue;
        memcpy(sub, dotted, sl + 1);
        if (!patch__path_push(sub, &sl, m->string))
            continue;
        cur = cJSON_GetObjectItemCaseSensitive(res, m->string);
        if (cJSON_IsNull(m)) {
            cJSON_DeleteItemFromObjectCaseSensitive(res, m->string);
            continue;
        }
        if (cJSON_IsArray(m))
            v = ssa_merge_list(cur, m, k, sub, depth + 1);
        else
            v = ssa_merge(cur, m, k, sub, depth + 1);
        if (patch__set_member(res, cur, m->string, v))
            goto nomem;
    }
    return res;
nomem:
    cJSON_Delete(res);
    return NULL;
}

/* ---- apply -------------------------------------------------------------------- */

static int conflicts_report(struct buf *msg, size_t count, char *err, size_t errlen)
{
    util_format_err(err, errlen, "Apply failed with %zu conflict%s: %s", count,
                 count == 1 ? "" : "s", msg->data ? msg->data : "");
    return -EEXIST;
}

/* Checks the applier's leaves against every other manager; with force, moves them. */
static int apply_conflicts(const cJSON *live, const cJSON *applied, const struct fs_set *nw,
                           struct mf_list *l, int self, bool force, char *err, size_t errlen)
{
    struct buf msg = { 0 };
    size_t count = 0;
    char disp[1024];
    int rc = 0;

    for (size_t i = 0; i < l->n; i++) {
        if ((int)i == self)
            continue;
        bool first = true;
        for (size_t j = 0; j < nw->n; j++) {
            const char *p = nw->v[j].p;
            if (nw->v[j].self || !patch__fs_has(&l->v[i].set, p))
                continue;
            const cJSON *a = patch__fs_resolve(applied, p), *b = patch__fs_resolve(live, p);
            if (a && b && patch__json_equal(a, b))
                continue; /* same value: shared ownership */
            if (force) {
                patch__fs_remove(&l->v[i].set, p);
                continue;
            }
            patch__fs_display(p, disp, sizeof(disp));
            if (first && buf_printf(&msg, "%sconflict with \"%s\"%s%s: %s", count ? "\n" : "",
                                    l->v[i].manager, l->v[i].api_version ? " using " : "",
                                    l->v[i].api_version ? l->v[i].api_version : "", disp))
                rc = -ENOMEM;
            else if (!first && buf_printf(&msg, ", %s", disp))
                rc = -ENOMEM;
            first = false;
            count++;
        }
    }
    if (!rc && count)
        rc = conflicts_report(&msg, count, err, errlen);
    buf_free(&msg);
    return rc;
}

/* Removes what the applier owned before and dropped, unless somebody else owns it.
 * Parents go first: a list element must be found while its key fields still match. */
static int apply_removals(cJSON *obj, struct fs_set *prev, const struct fs_set *nw,
                          const struct mf_list *l, int self)
{
    struct fs_set kept = { 0 }; /* what someone still owns, with all its ancestors */
    int rc;

    if (prev->n == 0)
        return 0;
    if ((rc = patch__fs_sort_parents_first(prev)) || (rc = patch__fs_add_with_ancestors(&kept, nw)))
        goto out;
    for (size_t i = 0; i < l->n; i++)
        if ((int)i != self && (rc = patch__fs_add_with_ancestors(&kept, &l->v[i].set)))
            goto out;
    for (size_t j = 0; j < prev->n; j++)
        if (!patch__fs_has(&kept, prev->v[j].p))
            patch__fs_delete(obj, prev->v[j].p);
out:
    patch__fs_free(&kept);
    return rc;
}

int patch_apply_schema(const cJSON *live, const cJSON *applied, const char *manager,
                       bool force, const char *api_version, const char *smp_kind,
                       const struct schema *schema, cJSON **out, char *err, size_t errlen)
{
    struct fs_keys keys = { smp_kind, schema };
    struct fs_set nw = { 0 }, prev = { 0 };
    struct mf_list l = { 0 };
    cJSON *res = NULL, *body = NULL;
    int rc, self;

    *out = NULL;
    if (!cJSON_IsObject(applied)) {
        util_format_err(err, errlen, "error decoding YAML: the apply configuration must be an "
                     "object");
        return -EINVAL;
    }
    if (!manager || !*manager || strlen(manager) > 128) {
        util_format_err(err, errlen, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: "
                     "Required value: is required for apply patch");
        return -EINVAL;
    }
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(applied, "apiVersion")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(applied, "kind"))) {
        util_format_err(err, errlen, "apiVersion and kind must be set in an apply configuration");
        return -EINVAL;
    }
    /* the applied body's own managedFields are not configuration */
    if (!(body = cJSON_Duplicate(applied, true)))
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "metadata"),
                                            "managedFields");
    if ((rc = patch__fs_from_object(body, &keys, &nw)))
        goto out;
    if ((rc = mf_load(live, &l)))
        goto out;
    if ((self = mf_find_or_add(&l, manager, "Apply", NULL)) < 0) {
        rc = self;
        goto out;
    }
    /* take the applier's old set out of the list: it is replaced wholesale */
    prev = l.v[self].set;
    memset(&l.v[self].set, 0, sizeof(l.v[self].set));
    if (live && (rc = apply_conflicts(live, body, &nw, &l, self, force, err, errlen)))
        goto out;
    if (live) {
        cJSON *base = cJSON_Duplicate(live, true);
        if (!base) {
            rc = -ENOMEM;
            goto out;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(base,
                                                "metadata"), "managedFields");
        res = ssa_merge(base, body, &keys, "", 0);
        cJSON_Delete(base);
    } else {
        res = cJSON_Duplicate(body, true);
    }
    if (!res) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = apply_removals(res, &prev, &nw, &l, self)))
        goto out;
    l.v[self].set = nw;
    memset(&nw, 0, sizeof(nw));
    if ((rc = set_stamp(&l.v[self], api_version)) || (rc = mf_store(res, &l, false)))
        goto out;
    *out = res;
    res = NULL;
out:
    cJSON_Delete(res);
    cJSON_Delete(body);
    patch__fs_free(&nw);
    patch__fs_free(&prev);
    mf_free(&l);
    return rc;
}

int patch_apply(const cJSON *live, const cJSON *applied, const char *manager, bool force,
                const char *api_version, const char *smp_kind,
                cJSON **out, char *err, size_t errlen)
{
    return patch_apply_schema(live, applied, manager, force, api_version, smp_kind, NULL,
                              out, err, errlen);
}

/* ---- ordinary writes ------------------------------------------------------------ */

/* True when some member name below node holds FS_SEP: its flattened path would not
 * resolve again, so the general path (which drops such fields) must run. */
static bool has_sep_name(const cJSON *node, int depth)
{
    const cJSON *c;
    if (depth > PATCH_MAX_DEPTH)
        return true;
    cJSON_ArrayForEach(c, node) {
        if (c->string && strchr(c->string, FS_SEP))
            return true;
        if (c->child && has_sep_name(c, depth + 1))
            return true;
    }
    return false;
}

static int record_mf(cJSON *obj, const cJSON *old, const char *manager,
                     const char *operation, const char *api_version,
                     const char *subresource, bool raw)
{
    static _Thread_local struct fs_walker wnow, wold;   /* 8 KB each: not on the stack */
    struct fs_keys keys = { NULL, NULL };
    struct fs_set all = { 0 };
    struct mf_list l = { 0 };
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *src = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(meta, "managedFields"))
                       ? obj : old;
    int rc, self;

    if (!cJSON_IsObject(obj) || !manager || !*manager)
        return 0;
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "kind"));
    keys.smp_kind = patch_smp_kind_known(kind) ? kind : NULL;
    if ((rc = mf_load(src, &l)))
        goto out;
    /* A create that carries no managedFields owns every field: print fieldsV1 straight
     * from the object (patch_fields_direct.c), no field set. -EAGAIN: the object has
     * something only the set handles; go the general way. */
    if (raw && !old && l.n == 0) {
        struct buf text = { 0 };
        size_t n_fields;
        rc = patch__fs_print_object_fieldsv1(obj, &keys, &text, &n_fields);
        if (rc == 0 && n_fields > 0 && (rc = buf_append(&text, "", 1)) == 0) {
            if ((self = mf_find_or_add(&l, manager, operation ? operation : "Update",
                                       subresource)) < 0) {
                buf_free(&text);
                rc = self;
                goto out;
            }
            l.v[self].fields_text = text.data;
            goto stamp;
        }
        buf_free(&text);
        if (rc == -ENOMEM)
            goto out;
    }
    /* an update looks only where obj differs from old: the rest changes no owner (a
     * name holding the path separator makes paths ambiguous: look everywhere then) */
    if ((rc = old && !has_sep_name(obj, 0) && !has_sep_name(old, 0)
                  ? patch__fs_changed(obj, old, &keys, &all)
                  : patch__fs_from_object(obj, &keys, &all)) == -ENOMEM)
        goto out;
    if ((self = mf_find_or_add(&l, manager, operation ? operation : "Update",
                               subresource)) < 0) {
        rc = self;
        goto out;
    }
    /* A create that carries no managedFields: every field is new and owned by this
     * manager alone, and every path patch__fs_from_object made resolves in obj again, so the
     * set is all of it. This skips two path resolutions per field (most of the cost
     * of a create; see docs/kubesim-store.md, Performance). */
    if (!old && l.n == 1 && l.v[self].set.n == 0 && !has_sep_name(obj, 0)) {
        patch__fs_free(&l.v[self].set);
        l.v[self].set = all;
        memset(&all, 0, sizeof(all));
        goto stamp;
    }
    patch__fs_walker_init(&wnow, obj);
    patch__fs_walker_init(&wold, old);
    for (size_t j = 0; j < all.n; j++) {
        const char *p = all.v[j].p;
        const cJSON *now = patch__fs_walker_resolve(&wnow, p);
        const cJSON *was = old ? patch__fs_walker_resolve(&wold, p) : NULL;
        if (all.v[j].self ? was != NULL : (was && now && patch__json_equal(was, now)))
            continue;
        /* a changed field now belongs to this manager alone */
        for (size_t i = 0; i < l.n; i++)
            if ((int)i != self)
                patch__fs_remove(&l.v[i].set, p);
        if ((rc = patch__fs_add(&l.v[self].set, p, all.v[j].self)))
            goto out;
    }
    /* fields that no longer exist are owned by nobody */
    for (size_t i = 0; i < l.n; i++) {
        patch__fs_walker_init(&wnow, obj);
        for (size_t j = l.v[i].set.n; j-- > 0;)
            if (!patch__fs_walker_resolve(&wnow, l.v[i].set.v[j].p))
                patch__fs_remove(&l.v[i].set, l.v[i].set.v[j].p);
    }
stamp:
    if ((rc = set_stamp(&l.v[self], api_version)))
        goto out;
    rc = mf_store(obj, &l, raw);
out:
    patch__fs_free(&all);
    mf_free(&l);
    return rc == -E2BIG ? 0 : rc;
}

int patch_record_managed_fields(cJSON *obj, const cJSON *old, const char *manager,
                                const char *operation, const char *api_version,
                                const char *subresource)
{
    return record_mf(obj, old, manager, operation, api_version, subresource, false);
}

int patch_record_managed_fields_raw(cJSON *obj, const cJSON *old, const char *manager,
                                    const char *operation, const char *api_version,
                                    const char *subresource)
{
    return record_mf(obj, old, manager, operation, api_version, subresource, true);
}

/*
 * patch_smp.c - strategic merge patch (application/strategic-merge-patch+json) of
 * built-in kinds, as apimachinery's strategicpatch.StrategicMergePatch applies it.
 *
 * Maps merge recursively and null deletes a key, like RFC 7386. Lists consult the
 * table in patch_smp_table.c: lists of maps with a merge key merge element by element,
 * primitive lists with the "merge" strategy are unions, every other list is replaced.
 * The directives kubectl sends are honoured: $patch (replace|delete|merge),
 * $setElementOrder/<list>, $retainKeys and $deleteFromPrimitiveList/<list>.
 *
 * $setElementOrder follows normalizeElementOrder: listed elements in the given order,
 * server-only elements interleaved by their old positions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"

struct smp_ctx {
    const char *kind;
    char *err;
    size_t errlen;
};

static int smp_map(const cJSON *orig, const cJSON *patch, struct smp_ctx *c, const char *path,
                   int depth, cJSON **out);

static bool is_directive(const char *k)
{
    return k && k[0] == '$';
}

static const char *patch_directive(const cJSON *obj)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "$patch");
    return cJSON_IsString(d) ? d->valuestring : NULL;
}

/* A copy of a value that comes only from the patch, with directives resolved.
 * *out NULL means "deleted" ($patch: delete on a new map). */
static int smp_new_value(const cJSON *v, struct smp_ctx *c, const char *path, int depth,
                         cJSON **out)
{
    if (cJSON_IsObject(v))
        return smp_map(NULL, v, c, path, depth + 1, out);
    if (cJSON_IsArray(v)) {
        const cJSON *e;
        cJSON *arr = cJSON_CreateArray();
        if (!arr)
            return -ENOMEM;
        cJSON_ArrayForEach(e, v) {
            cJSON *ne;
            int rc;
            if (cJSON_IsObject(e) && patch_directive(e))
                continue; /* list-level directives mean nothing in a replaced list */
            if ((rc = smp_new_value(e, c, path, depth + 1, &ne))) {
                cJSON_Delete(arr);
                return rc;
            }
            if (ne)
                cJSON_AddItemToArray(arr, ne);
        }
        *out = arr;
        return 0;
    }
    return (*out = cJSON_Duplicate(v, true)) ? 0 : -ENOMEM;
}

static int find_by_key(const cJSON *arr, const char *key, const cJSON *kv)
{
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, key);
        if (k && patch__json_equal(k, kv))
            return i;
        i++;
    }
    return -1;
}

/* The end of a merge that built res: on success (rc 0) res becomes *out, else it is freed. */
static int hand_over(int rc, cJSON *res, cJSON **out)
{
    if (rc) {
        cJSON_Delete(res);
        return rc;
    }
    *out = res;
    return 0;
}

static int smp_list_maps(const cJSON *orig, const cJSON *patch, const char *key,
                         struct smp_ctx *c, const char *path, int depth, cJSON **out)
{
    const cJSON *e;
    cJSON *res = NULL;
    int rc = 0;

    cJSON_ArrayForEach(e, patch) {
        const char *d = cJSON_IsObject(e) ? patch_directive(e) : NULL;
        if (d && !strcmp(d, "replace")) {
            orig = NULL; /* the patch's elements are the whole list */
            break;
        }
    }
    res = cJSON_IsArray(orig) ? cJSON_Duplicate(orig, true) : cJSON_CreateArray();
    if (!res)
        return -ENOMEM;
    cJSON_ArrayForEach(e, patch) {
        if (!cJSON_IsObject(e)) {
            util_format_err(c->err, c->errlen, "%s: list element is not a map; cannot merge "
                         "by key %s", path, key);
            rc = -EINVAL;
            goto out;
        }
        const char *d = patch_directive(e);
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(e, key);
        if (d && !strcmp(d, "replace"))
            continue;
        if (d && strcmp(d, "delete") && strcmp(d, "merge")) {
            util_format_err(c->err, c->errlen, "Unknown patch type: %s", d);
            rc = -EINVAL;
            goto out;
        }
        if (!kv) {
            util_format_err(c->err, c->errlen, "map: %s does not contain declared merge key: %s",
                         path, key);
            rc = -EINVAL;
            goto out;
        }
        int idx = find_by_key(res, key, kv);
        if (d && !strcmp(d, "delete")) {
            while (idx >= 0) {
                cJSON_DeleteItemFromArray(res, idx);
                idx = find_by_key(res, key, kv);
            }
            continue;
        }
        cJSON *v = NULL;
        if (idx >= 0) {
            if ((rc = smp_map(cJSON_GetArrayItem(res, idx), e, c, path, depth + 1, &v)))
                goto out;
            if (v)
                cJSON_ReplaceItemInArray(res, idx, v);
            else
                cJSON_DeleteItemFromArray(res, idx);
        } else {
            if ((rc = smp_map(NULL, e, c, path, depth + 1, &v)))
                goto out;
            if (v)
                cJSON_AddItemToArray(res, v);
        }
    }
out:
    return hand_over(rc, res, out);
}

static bool array_has(const cJSON *arr, const cJSON *v)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
        if (patch__json_equal(e, v))
            return true;
    return false;
}

static int smp_list_primitives(const cJSON *orig, const cJSON *patch, cJSON **out)
{
    const cJSON *e;
    cJSON *res = cJSON_IsArray(orig) ? cJSON_Duplicate(orig, true) : cJSON_CreateArray();
    if (!res)
        return -ENOMEM;
    cJSON_ArrayForEach(e, patch) {
        if (array_has(res, e))
            continue;
        cJSON *d = cJSON_Duplicate(e, true);
        if (!d) {
            cJSON_Delete(res);
            return -ENOMEM;
        }
        cJSON_AddItemToArray(res, d);
    }
    *out = res;
    return 0;
}

/* Position of e (by merge key, or by value without one) in list, or -1. */
static int index_in(const cJSON *list, const cJSON *e, const char *key)
{
    const cJSON *want = key ? cJSON_GetObjectItemCaseSensitive(e, key) : e, *x;
    int i = 0;
    if (!want)
        return -1;
    cJSON_ArrayForEach(x, list) {
        const cJSON *have = key ? cJSON_GetObjectItemCaseSensitive(x, key) : x;
        if (have && patch__json_equal(have, want))
            return i;
        i++;
    }
    return -1;
}

/*
 * Reorders res[name] per its $setElementOrder list, as strategicpatch's
 * normalizeElementOrder does: the listed elements take the given order, the elements
 * only the server has keep theirs, and the two runs are merged by the positions the
 * elements had on the server (a server-only element goes first only when both are
 * found there and it came earlier).
 */
static int smp_set_order(cJSON *res, const char *name, const cJSON *order, const char *key,
                         const cJSON *server)
{
    cJSON *list = cJSON_GetObjectItemCaseSensitive(res, name), *sorted, *e;
    cJSON **listed = NULL, **rest = NULL;
    size_t nl = 0, nr = 0, n;
    const cJSON *o;
    int rc = -ENOMEM;

    if (!cJSON_IsArray(list) || !cJSON_IsArray(order))
        return 0;
    n = (size_t)cJSON_GetArraySize(list);
    if (!(sorted = cJSON_CreateArray()) || !(listed = calloc(n + 1, sizeof(*listed))) ||
        !(rest = calloc(n + 1, sizeof(*rest))))
        goto out;
    /* listed elements, in the order of the directive */
    cJSON_ArrayForEach(o, order) {
        cJSON_ArrayForEach(e, list) {
            bool taken = false;
            for (size_t k = 0; k < nl; k++)
                taken |= listed[k] == e;
            const cJSON *ok = key && cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : o;
            const cJSON *ek = key ? cJSON_GetObjectItemCaseSensitive(e, key) : e;
            if (!taken && ok && ek && patch__json_equal(ok, ek)) {
                listed[nl++] = e;
                break;
            }
        }
    }
    cJSON_ArrayForEach(e, list) {
        bool in = false;
        for (size_t k = 0; k < nl; k++)
            in |= listed[k] == e;
        if (!in)
            rest[nr++] = e;
    }
    size_t i = 0, j = 0;
    while (i < nr || j < nl) {
        cJSON *pick;
        if (j >= nl) {
            pick = rest[i++];
        } else if (i >= nr) {
            pick = listed[j++];
        } else {
            int si = index_in(server, rest[i], key), sj = index_in(server, listed[j], key);
            pick = (si >= 0 && sj >= 0 && si < sj) ? rest[i++] : listed[j++];
        }
        cJSON_AddItemToArray(sorted, cJSON_DetachItemViaPointer(list, pick));
    }
    rc = patch__set_member(res, list, name, sorted);
    sorted = NULL;
out:
    cJSON_Delete(sorted);
    free(listed);
    free(rest);
    return rc;
}

static void smp_delete_primitives(cJSON *res, const char *name, const cJSON *values)
{
    cJSON *list = cJSON_GetObjectItemCaseSensitive(res, name);
    const cJSON *v;
    if (!cJSON_IsArray(list) || !cJSON_IsArray(values))
        return;
    cJSON_ArrayForEach(v, values) {
        for (int i = cJSON_GetArraySize(list) - 1; i >= 0; i--)
            if (patch__json_equal(cJSON_GetArrayItem(list, i), v))
                cJSON_DeleteItemFromArray(list, i);
    }
}

static void smp_retain_keys(cJSON *res, const cJSON *keep)
{
    cJSON *m = res->child;
    if (!cJSON_IsArray(keep))
        return;
    while (m) {
        cJSON *next = m->next;
        bool keepit = false;
        const cJSON *k;
        cJSON_ArrayForEach(k, keep)
            if (cJSON_IsString(k) && m->string && !strcmp(k->valuestring, m->string))
                keepit = true;
        if (!keepit)
            cJSON_Delete(cJSON_DetachItemViaPointer(res, m));
        m = next;
    }
}

static int smp_member(cJSON *res, const cJSON *m, struct smp_ctx *c, const char *sub,
                      int depth)
{
    cJSON *cur = cJSON_GetObjectItemCaseSensitive(res, m->string), *v = NULL;
    int rc;

    if (cJSON_IsNull(m)) {
        cJSON_DeleteItemFromObjectCaseSensitive(res, m->string);
        return 0;
    }
    if (cJSON_IsObject(m)) {
        rc = smp_map(cJSON_IsObject(cur) ? cur : NULL, m, c, sub, depth + 1, &v);
    } else if (cJSON_IsArray(m)) {
        struct smp_rule r = patch__smp_rule(c->kind, sub);
        if (r.kind == SMP_MERGE_KEY)
            rc = smp_list_maps(cur, m, r.key, c, sub, depth + 1, &v);
        else if (r.kind == SMP_MERGE_PRIMITIVE)
            rc = smp_list_primitives(cur, m, &v);
        else
            rc = smp_new_value(m, c, sub, depth, &v);
    } else {
        rc = (v = cJSON_Duplicate(m, true)) ? 0 : -ENOMEM;
    }
    if (rc)
        return rc;
    if (!v)
        cJSON_DeleteItemFromObjectCaseSensitive(res, m->string);
    else
        return patch__set_member(res, cur, m->string, v);
    return 0;
}

/* Merges patch (an object) onto orig (object or NULL) into a new *out; *out NULL means
 * the map is deleted ($patch: delete). */
static int smp_map(const cJSON *orig, const cJSON *patch, struct smp_ctx *c, const char *path,
                   int depth, cJSON **out)
{
    const char *d = patch_directive(patch);
    const cJSON *m;
    cJSON *res = NULL;
    char sub[PATCH_PATH_MAX];
    size_t plen = strlen(path);
    int rc = 0;

    *out = NULL;
    if (depth > PATCH_MAX_DEPTH) {
        util_format_err(c->err, c->errlen, "patch is nested too deeply (max %d)", PATCH_MAX_DEPTH);
        return -EINVAL;
    }
    if (d && !strcmp(d, "delete"))
        return 0;
    if (d && !strcmp(d, "replace"))
        orig = NULL;
    else if (d && strcmp(d, "merge")) {
        util_format_err(c->err, c->errlen, "Unknown patch type: %s", d);
        return -EINVAL;
    }
    res = cJSON_IsObject(orig) ? cJSON_Duplicate(orig, true) : cJSON_CreateObject();
    if (!res)
        return -ENOMEM;
    cJSON_ArrayForEach(m, patch) {
        if (!m->string || is_directive(m->string))
            continue;
        memcpy(sub, path, plen + 1);
        size_t sl = plen;
        if (!patch__path_push(sub, &sl, m->string)) {
            util_format_err(c->err, c->errlen, "field path too long at %s", path);
            rc = -EINVAL;
            goto out;
        }
        if ((rc = smp_member(res, m, c, sub, depth)))
            goto out;
    }
    cJSON_ArrayForEach(m, patch) {
        const char *k = m->string;
        if (!is_directive(k) || !strcmp(k, "$patch") || !strcmp(k, "$retainKeys"))
            continue;
        if (!strncmp(k, "$deleteFromPrimitiveList/", 25)) {
            smp_delete_primitives(res, k + 25, m);
        } else if (!strncmp(k, "$setElementOrder/", 17)) {
            memcpy(sub, path, plen + 1);
            size_t sl = plen;
            if (!patch__path_push(sub, &sl, k + 17))
                continue;
            struct smp_rule r = patch__smp_rule(c->kind, sub);
            if ((rc = smp_set_order(res, k + 17, m, r.kind == SMP_MERGE_KEY ? r.key : NULL,
                                    cJSON_GetObjectItemCaseSensitive(orig, k + 17))))
                goto out;
        } else {
            util_format_err(c->err, c->errlen, "unknown directive %s in strategic merge patch", k);
            rc = -EINVAL;
            goto out;
        }
    }
    m = cJSON_GetObjectItemCaseSensitive(patch, "$retainKeys");
    if (m)
        smp_retain_keys(res, m);
out:
    return hand_over(rc, res, out);
}

int patch_strategic(const cJSON *target, const cJSON *patch, const char *smp_kind,
                    cJSON **out, char *err, size_t errlen)
{
    struct smp_ctx c = { smp_kind, err, errlen };
    int rc;

    *out = NULL;
    if (!patch_smp_kind_known(smp_kind)) {
        util_format_err(err, errlen, "the body of the request was in an unknown format - "
                     "accepted media types include: application/json-patch+json, "
                     "application/merge-patch+json, application/apply-patch+yaml");
        return -EPROTONOSUPPORT;
    }
    if (!cJSON_IsObject(patch)) {
        util_format_err(err, errlen, "strategic merge patch must be a JSON object");
        return -EINVAL;
    }
    if ((rc = smp_map(target, patch, &c, "", 0, out)))
        return rc;
    if (!*out && !(*out = cJSON_CreateObject()))
        return -ENOMEM;
    return 0;
}

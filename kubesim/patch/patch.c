/*
 * patch.c - JSON merge patch (RFC 7386) and JSON patch (RFC 6902) for kubesim's PATCH verb.
 *
 * Both work on a deep copy of the target, so a failed patch leaves the stored object
 * untouched. Error texts follow the ones the API server's json-patch library produces,
 * because clients show them to users verbatim.
 * Strategic merge lives in patch_smp.c, server-side apply in patch_apply.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"

#define PTR_MAX 4096 /* bytes of one JSON pointer */

bool patch__json_equal(const cJSON *a, const cJSON *b)
{
    return json_equal(a, b);
}

/* ---- RFC 7386 ----------------------------------------------------------------- */

/* The merge applied member by member onto a whole copy of target: the rule, kept for a
 * patch object whose keys repeat (each occurrence applies in turn) or that is too large
 * for the pairwise key check below. Caller owns; NULL = ENOMEM. */
static cJSON *merge_value(const cJSON *target, const cJSON *patch);

static cJSON *merge_in_turn(const cJSON *target, const cJSON *patch)
{
    cJSON *res;
    const cJSON *m;

    res = cJSON_IsObject(target) ? cJSON_Duplicate(target, true) : cJSON_CreateObject();
    if (!res)
        return NULL;
    cJSON_ArrayForEach(m, patch) {
        if (!m->string)
            continue;
        if (cJSON_IsNull(m)) {
            cJSON_DeleteItemFromObjectCaseSensitive(res, m->string);
            continue;
        }
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(res, m->string);
        if (patch__set_member(res, cur, m->string, merge_value(cur, m)))
            goto nomem;
    }
    return res;
nomem:
    cJSON_Delete(res);
    return NULL;
}

#define MERGE_PAIRWISE_MAX 64   /* patch members per object checked for repeats pairwise */

/* A repeated key in a patch object, or more members than are worth checking. */
static bool merge_needs_turns(const cJSON *patch)
{
    int n = 0;

    for (const cJSON *a = patch->child; a; a = a->next) {
        if (++n > MERGE_PAIRWISE_MAX || !a->string)
            return true;
        for (const cJSON *b = a->next; b; b = b->next)
            if (b->string && !strcmp(a->string, b->string))
                return true;
    }
    return false;
}

static bool merge_add(cJSON *res, const char *name, cJSON *v)
{
    if (v && cJSON_AddItemToObject(res, name, v))
        return true;
    cJSON_Delete(v);
    return false;
}

/*
 * Returns the merge of patch onto target (either may be NULL), caller owns; NULL = ENOMEM.
 * Each member of target is copied once, merged where the patch names it. Copying the
 * whole target and then each patched member again, level by level, made a status write
 * to a Pod copy its status twice and the Pod once more (issue 18). The result is the
 * same: target's members in order (the first of a repeated name is the one patched or
 * removed), then the patch's new members in patch order.
 */
static cJSON *merge_value(const cJSON *target, const cJSON *patch)
{
    const cJSON *t, *m;
    cJSON *res;

    if (!cJSON_IsObject(patch))
        return cJSON_Duplicate(patch, true);
    if (merge_needs_turns(patch))
        return merge_in_turn(target, patch);
    if (!(res = cJSON_CreateObject()))
        return NULL;
    if (cJSON_IsObject(target)) {
        cJSON_ArrayForEach(t, target) {
            m = t->string ? cJSON_GetObjectItemCaseSensitive(patch, t->string) : NULL;
            if (m && cJSON_GetObjectItemCaseSensitive(target, t->string) != t)
                m = NULL;   /* a later member of a repeated name: left as it was */
            if (m && cJSON_IsNull(m))
                continue;
            if (!merge_add(res, t->string ? t->string : "",
                           m ? merge_value(t, m) : cJSON_Duplicate(t, true)))
                goto nomem;
        }
    }
    cJSON_ArrayForEach(m, patch) {
        if (cJSON_IsNull(m) ||
            (cJSON_IsObject(target) && cJSON_GetObjectItemCaseSensitive(target, m->string)))
            continue;
        if (!merge_add(res, m->string, merge_value(NULL, m)))
            goto nomem;
    }
    return res;
nomem:
    cJSON_Delete(res);
    return NULL;
}

int patch_merge(const cJSON *target, const cJSON *patch, cJSON **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!patch) {
        util_format_err(err, errlen, "empty merge patch");
        return -EINVAL;
    }
    if (!(*out = merge_value(target, patch)))
        return -ENOMEM;
    return 0;
}

/* ---- RFC 6902 ----------------------------------------------------------------- */

/* Reads the next reference token of pointer *p into tok (unescaped). 1 when a token was
 * read, 0 at the end, -EINVAL for a bad escape or an over-long token. */
static int ptr_next(const char **p, char *tok, size_t toklen)
{
    const char *s = *p;
    size_t n = 0;
    if (*s != '/')
        return 0;
    s++;
    while (*s && *s != '/') {
        char c = *s++;
        if (c == '~') {
            if (*s == '0') c = '~';
            else if (*s == '1') c = '/';
            else return -EINVAL;
            s++;
        }
        if (n + 1 >= toklen)
            return -EINVAL;
        tok[n++] = c;
    }
    tok[n] = '\0';
    *p = s;
    return 1;
}

/* Array index per RFC 6901: "0" or digits without a leading zero. -1 if not one. */
static long ptr_index(const char *tok)
{
    long v = 0;
    if (!*tok || (tok[0] == '0' && tok[1]))
        return -1;
    for (const char *c = tok; *c; c++) {
        if (*c < '0' || *c > '9' || v > 100000000)
            return -1;
        v = v * 10 + (*c - '0');
    }
    return v;
}

static cJSON *child_of(cJSON *node, const char *tok)
{
    if (cJSON_IsObject(node))
        return cJSON_GetObjectItemCaseSensitive(node, tok);
    if (cJSON_IsArray(node)) {
        long i = ptr_index(tok);
        return i < 0 ? NULL : cJSON_GetArrayItem(node, (int)i);
    }
    return NULL;
}

/* Resolves the parent of the last token of path; *parent NULL when path is "" (root).
 * last receives the final token. 0, or -ENOENT for a missing intermediate, -EINVAL for
 * a malformed pointer. */
static int ptr_parent(cJSON *doc, const char *path, cJSON **parent, char *last, size_t lastlen)
{
    char tok[PTR_MAX];
    const char *p = path;
    cJSON *cur = doc;
    bool have_last = false;
    int rc, depth = 0;

    if (strlen(path) >= PTR_MAX || (path[0] && path[0] != '/'))
        return -EINVAL;
    *parent = NULL;
    last[0] = '\0';
    while ((rc = ptr_next(&p, tok, sizeof(tok))) == 1) {
        if (++depth > 1000)
            return -EINVAL;
        if (have_last && !(cur = child_of(cur, last)))
            return -ENOENT;
        if (strlen(tok) >= lastlen)
            return -EINVAL;
        strcpy(last, tok);
        have_last = true;
    }
    if (rc < 0)
        return rc;
    *parent = have_last ? cur : NULL;
    return 0;
}

static cJSON *ptr_get(cJSON *doc, const char *path)
{
    cJSON *parent;
    char last[PTR_MAX];
    if (ptr_parent(doc, path, &parent, last, sizeof(last)))
        return NULL;
    return parent ? child_of(parent, last) : doc;
}

/* Links v in before element i of arr (appends when i is the size). Not
 * cJSON_InsertItemInArray: Debian's libcjson 1.7.15-1+deb12u4 refuses a
 * mid-array insert (returns false, the item is neither linked nor freed), which
 * lost the value and leaked it; found by fuzz_patch. */
static void array_insert(cJSON *arr, long i, cJSON *v)
{
    cJSON *at = arr->child;

    while (at && i-- > 0)
        at = at->next;
    if (!at) {
        cJSON_AddItemToArray(arr, v);
        return;
    }
    v->next = at;
    v->prev = at->prev;
    if (at == arr->child)
        arr->child = v;          /* the head's prev keeps pointing at the tail */
    else
        at->prev->next = v;
    at->prev = v;
}

/* Inserts v (ownership taken) at path. */
static int op_add(cJSON **doc, const char *path, cJSON *v, bool replace_only,
                  char *err, size_t errlen, const char *opname)
{
    cJSON *parent;
    char last[PTR_MAX];
    int rc = ptr_parent(*doc, path, &parent, last, sizeof(last));

    if (rc == -EINVAL) {
        util_format_err(err, errlen, "%s operation does not apply: invalid JSON pointer \"%s\"",
                     opname, path);
        goto fail;
    }
    if (rc) {
        util_format_err(err, errlen, "%s operation does not apply: doc is missing path: \"%s\": "
                     "missing value", opname, path);
        goto fail;
    }
    if (!parent) { /* the whole document */
        cJSON_Delete(*doc);
        *doc = v;
        return 0;
    }
    if (cJSON_IsObject(parent)) {
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(parent, last);
        if (replace_only && !cur) {
            util_format_err(err, errlen, "%s operation does not apply: doc is missing key: %s: "
                         "missing value", opname, path);
            goto fail;
        }
        return patch__set_member(parent, cur, last, v);
    }
    if (cJSON_IsArray(parent)) {
        int n = cJSON_GetArraySize(parent);
        long i = (!replace_only && !strcmp(last, "-")) ? n : ptr_index(last);
        if (i < 0 || i > n || (replace_only && i >= n)) {
            util_format_err(err, errlen, "%s operation does not apply: index out of range: %s",
                         opname, path);
            goto fail;
        }
        if (replace_only)
            cJSON_ReplaceItemInArray(parent, (int)i, v);
        else
            array_insert(parent, i, v);
        return 0;
    }
    util_format_err(err, errlen, "%s operation does not apply: doc is missing path: \"%s\": "
                 "parent is not a container", opname, path);
fail:
    cJSON_Delete(v);
    return -EINVAL;
}

/* Detaches the value at path; NULL with err set when it is missing. Caller owns it. */
static cJSON *op_detach(cJSON *doc, const char *path, char *err, size_t errlen,
                        const char *opname)
{
    cJSON *parent, *v = NULL;
    char last[PTR_MAX];

    if (ptr_parent(doc, path, &parent, last, sizeof(last)) == 0 && parent) {
        if (cJSON_IsObject(parent))
            v = cJSON_DetachItemFromObjectCaseSensitive(parent, last);
        else if (cJSON_IsArray(parent)) {
            long i = ptr_index(last);
            if (i >= 0 && i < cJSON_GetArraySize(parent))
                v = cJSON_DetachItemFromArray(parent, (int)i);
        }
    }
    if (!v)
        util_format_err(err, errlen, "%s operation does not apply: doc is missing path: \"%s\": "
                     "missing value", opname, path[0] ? path : "(root)");
    return v;
}

static const char *op_str(const cJSON *op, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(op, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int apply_op(cJSON **doc, const cJSON *op, char *err, size_t errlen)
{
    const char *name = op_str(op, "op"), *path = op_str(op, "path");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(op, "value");
    cJSON *v;

    if (!cJSON_IsObject(op) || !name) {
        util_format_err(err, errlen, "Unexpected kind: missing or invalid \"op\"");
        return -EINVAL;
    }
    if (!path) {
        util_format_err(err, errlen, "%s operation does not apply: missing \"path\"", name);
        return -EINVAL;
    }
    if (!strcmp(name, "add") || !strcmp(name, "replace")) {
        if (!value) {
            util_format_err(err, errlen, "%s operation does not apply: missing \"value\"", name);
            return -EINVAL;
        }
        if (!(v = cJSON_Duplicate(value, true)))
            return -ENOMEM;
        return op_add(doc, path, v, name[0] == 'r', err, errlen, name);
    }
    if (!strcmp(name, "remove")) {
        if (!path[0]) {
            util_format_err(err, errlen, "remove operation does not apply: cannot remove root");
            return -EINVAL;
        }
        v = op_detach(*doc, path, err, errlen, name);
        if (!v)
            return -EINVAL;
        cJSON_Delete(v);
        return 0;
    }
    if (!strcmp(name, "test")) {
        cJSON *cur = ptr_get(*doc, path);
        if (!cur || !value || !patch__json_equal(cur, value)) {
            util_format_err(err, errlen, "testing value %s failed: test failed", path);
            return -EINVAL;
        }
        return 0;
    }
    if (!strcmp(name, "move") || !strcmp(name, "copy")) {
        const char *from = op_str(op, "from");
        if (!from) {
            util_format_err(err, errlen, "%s operation does not apply: missing \"from\"", name);
            return -EINVAL;
        }
        if (name[0] == 'm') {
            size_t fl = strlen(from);
            if (!strncmp(path, from, fl) && path[fl] == '/') {
                util_format_err(err, errlen, "move operation does not apply: cannot move %s "
                             "into its own child %s", from, path);
                return -EINVAL;
            }
            if (!strcmp(path, from))
                return ptr_get(*doc, from) ? 0 : -EINVAL;
            if (!from[0]) {
                util_format_err(err, errlen, "move operation does not apply: cannot move root");
                return -EINVAL;
            }
            if (!(v = op_detach(*doc, from, err, errlen, name)))
                return -EINVAL;
        } else {
            cJSON *src = ptr_get(*doc, from);
            if (!src) {
                util_format_err(err, errlen, "copy operation does not apply: doc is missing from "
                             "path: \"%s\": missing value", from);
                return -EINVAL;
            }
            if (!(v = cJSON_Duplicate(src, true)))
                return -ENOMEM;
        }
        return op_add(doc, path, v, false, err, errlen, name);
    }
    util_format_err(err, errlen, "Unexpected kind: %s", name);
    return -EINVAL;
}

int patch_json(const cJSON *target, const cJSON *ops, cJSON **out, char *err, size_t errlen)
{
    cJSON *doc;
    const cJSON *op;
    int rc = 0, n;

    *out = NULL;
    if (!cJSON_IsArray(ops)) {
        util_format_err(err, errlen, "json: cannot unmarshal object into Go value of type "
                     "jsonpatch.Patch");
        return -EINVAL;
    }
    n = cJSON_GetArraySize(ops);
    if (n > PATCH_MAX_OPS) {
        util_format_err(err, errlen, "The allowed maximum operations in a JSON patch is %d, got %d",
                     PATCH_MAX_OPS, n);
        return -EINVAL;
    }
    doc = target ? cJSON_Duplicate(target, true) : cJSON_CreateNull();
    if (!doc)
        return -ENOMEM;
    cJSON_ArrayForEach(op, ops) {
        if ((rc = apply_op(&doc, op, err, errlen)))
            break;
    }
    if (rc) {
        cJSON_Delete(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

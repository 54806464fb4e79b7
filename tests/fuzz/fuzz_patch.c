/* fuzz_patch.c - every patch flavour on fuzzed JSON, and a create's fieldsV1 printed
 * straight from the object against the field set. Input: one mode byte, then the
 * target document, a NUL byte, then the patch. Any input must give a result or an
 * error; results must be well-formed and the inputs untouched, and an update's candidate
 * paths for managedFields must leave out only unchanged fields. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = { "Pod", "Service", "Job", "ConfigMap", "Node", "Deployment" };

/* A create's fieldsV1 printed straight from the object must be the bytes of the field
 * set it replaces, whenever it answers at all. */
static void check_direct_print(const cJSON *obj, const char *kind)
{
    struct fs_keys k = { kind, NULL };
    struct fs_set set = { 0 };
    struct buf a = { 0 }, b = { 0 };
    size_t n = 0;
    int rc = patch__fs_print_object_fieldsv1(obj, &k, &a, &n);

    if (rc == 0 && patch__fs_from_object(obj, &k, &set) == 0) {
        if (n != set.n)
            abort();
        if (set.n && (patch__fs_print_fieldsv1(&set, &b) || buf_append(&a, "", 1) ||
                      buf_append(&b, "", 1) || strcmp(a.data, b.data)))
            abort();
    } else if (rc != 0 && rc != -EAGAIN && rc != -ENOMEM) {
        abort();
    }
    patch__fs_free(&set);
    buf_free(&a);
    buf_free(&b);
}

/* A member name repeated in one object, or holding the path separator, anywhere in j. */
static bool repeats_names(const cJSON *j)
{
    for (const cJSON *a = j ? j->child : NULL; a; a = a->next) {
        if (a->string && strchr(a->string, FS_SEP))
            return true;
        if (cJSON_IsObject(j) && a->string)
            for (const cJSON *b = a->next; b; b = b->next)
                if (b->string && !strcmp(a->string, b->string))
                    return true;
        if (repeats_names(a))
            return true;
    }
    return false;
}

/* What an update's ownership record leaves out (patch__fs_changed) is what it would have
 * found unchanged: every path of the object not among the candidates resolves in both
 * objects, to equal values (a "." entry: it exists in old). Objects with a repeated
 * member name or one holding FS_SEP are left out: their paths do not name one node
 * (record_mf looks everywhere for the latter). */
static void check_changed_paths(const cJSON *obj, const cJSON *old)
{
    struct fs_keys k = { "Pod", NULL };
    struct fs_set all = { 0 }, ch = { 0 };

    if (repeats_names(obj) || repeats_names(old))
        return;
    if (patch__fs_from_object(obj, &k, &all) == 0 && patch__fs_changed(obj, old, &k, &ch) == 0) {
        for (size_t i = 0; i < all.n; i++) {
            const cJSON *now, *was;
            if (patch__fs_has(&ch, all.v[i].p))
                continue;
            now = patch__fs_resolve(obj, all.v[i].p);
            was = patch__fs_resolve(old, all.v[i].p);
            if (!was || (!all.v[i].self && (!now || !patch__json_equal(now, was))))
                abort();
        }
    }
    patch__fs_free(&all);
    patch__fs_free(&ch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    cJSON *out = NULL;
    if (size < 2)
        return 0;
    uint8_t mode = data[0];
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    const char *sep = memchr(rest, '\0', n);
    size_t tlen = sep ? (size_t)(sep - rest) : n;
    cJSON *target = cJSON_ParseWithLength(rest, tlen);
    cJSON *patch = sep ? cJSON_ParseWithLength(sep + 1, n - tlen - 1) : NULL;
    if (!patch) {
        cJSON_Delete(target);
        return 0;
    }
    char *before = target ? cJSON_PrintUnformatted(target) : NULL;
    int rc;
    switch (mode % 5) {
    case 0: rc = patch_merge(target, patch, &out, err, sizeof(err)); break;
    case 1: rc = patch_json(target, patch, &out, err, sizeof(err)); break;
    case 2: rc = patch_strategic(target, patch, kinds[(mode / 5) % 6], &out, err, sizeof(err));
            break;
    case 3: rc = patch_apply(cJSON_IsObject(target) ? target : NULL, patch, "fuzz", mode & 0x80,
                             "v1", (mode & 0x40) ? "Pod" : NULL, &out, err, sizeof(err));
            break;
    default:
        rc = -1;
        if (cJSON_IsObject(patch))
            check_direct_print(patch, kinds[(mode / 5) % 6]);
        if (cJSON_IsObject(patch)) {
            cJSON *copy = cJSON_Duplicate(patch, true);
            if (copy)
                (void)patch_record_managed_fields(copy, cJSON_IsObject(target) ? target : NULL,
                                                  "fuzz", "Update", "v1", NULL);
            cJSON_Delete(copy);
        }
        break;
    }
    if (rc == 0) {
        if (!out)
            abort();
        char *s = cJSON_PrintUnformatted(out);
        free(s);
        if (cJSON_IsObject(out) && cJSON_IsObject(target))
            check_changed_paths(out, target);
        /* apply again on its own result: managedFields written must read back */
        if (mode % 5 == 3 && cJSON_IsObject(out)) {
            cJSON *again = NULL;
            if (patch_apply(out, patch, "fuzz2", false, "v1", NULL, &again, err, sizeof(err)) == 0)
                cJSON_Delete(again);
        }
    } else if (out) {
        abort();
    }
    if (before) {
        char *after = cJSON_PrintUnformatted(target);
        if (!after || strcmp(before, after))
            abort(); /* an input was modified */
        free(after);
        free(before);
    }
    cJSON_Delete(out);
    cJSON_Delete(target);
    cJSON_Delete(patch);
    return 0;
}

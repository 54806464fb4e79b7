/* fuzz_patch.c - every patch flavour on fuzzed JSON, and a create's fieldsV1 printed
 * straight from the object against the field set. Input: one mode byte, then the
 * target document, a NUL byte, then the patch. Any input must give a result or an
 * error; results must be well-formed and the inputs untouched. */
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

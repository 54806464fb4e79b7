/*
 * kobj.c - object reading helpers (kobj/kobj.h). Every module that reads a member,
 * the metadata, the controller ownerReference or compares resourceVersions comes
 * here, so a rule such as "only a controller: true reference owns" is written once.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"

const cJSON *kobj_get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

const char *kobj_str(const cJSON *o, const char *key)
{
    const cJSON *v = kobj_get(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *kobj_find(const cJSON *arr, const char *key, const char *value)
{
    const cJSON *e;
    if (!value)
        return NULL;
    cJSON_ArrayForEach(e, arr) {
        const char *v = kobj_str(e, key);
        if (v && strcmp(v, value) == 0)
            return e;
    }
    return NULL;
}

int kobj_members_sorted(const cJSON *o, const cJSON ***out, size_t *n)
{
    const cJSON **m = NULL, *c;
    size_t len = 0, cap = (size_t)cJSON_GetArraySize(o);

    *out = NULL;
    *n = 0;
    if (!cJSON_IsObject(o) || cap == 0)
        return 0;
    if (!(m = calloc(cap, sizeof(*m))))
        return -ENOMEM;
    cJSON_ArrayForEach(c, o)
        if (c->string)
            m[len++] = c;
    /* insertion sort: maps are small, and it keeps equal names (a repeated key in
     * the input) in document order, as a stable sort would */
    for (size_t a = 1; a < len; a++)
        for (size_t k = a; k > 0 && strcmp(m[k - 1]->string, m[k]->string) > 0; k--) {
            const cJSON *t = m[k];
            m[k] = m[k - 1];
            m[k - 1] = t;
        }
    *out = m;
    *n = len;
    return 0;
}

int kobj_set_copy(cJSON *o, const char *name, const cJSON *item)
{
    cJSON *c;
    cJSON_DeleteItemFromObjectCaseSensitive(o, name);
    if (!item)
        return 0;
    c = cJSON_Duplicate(item, 1);
    if (!c || !cJSON_AddItemToObject(o, name, c)) {
        cJSON_Delete(c);
        return -ENOMEM;
    }
    return 0;
}

const char *kobj_meta_str(const cJSON *obj, const char *field)
{
    return kobj_str(kobj_get(obj, "metadata"), field);
}

const char *kobj_label(const cJSON *obj, const char *key)
{
    return kobj_str(kobj_get(kobj_get(obj, "metadata"), "labels"), key);
}

const char *kobj_annotation(const cJSON *obj, const char *key)
{
    return kobj_str(kobj_get(kobj_get(obj, "metadata"), "annotations"), key);
}

const cJSON *kobj_controller_ref(const cJSON *obj)
{
    const cJSON *refs = kobj_get(kobj_get(obj, "metadata"), "ownerReferences"), *r;
    if (!cJSON_IsArray(refs))
        return NULL;
    cJSON_ArrayForEach(r, refs) {
        if (cJSON_IsTrue(kobj_get(r, "controller")))
            return r;
    }
    return NULL;
}

const char *kobj_controller_uid(const cJSON *obj)
{
    return kobj_str(kobj_controller_ref(obj), "uid");
}

const cJSON *kobj_condition_find(const cJSON *status, const char *type)
{
    return kobj_find(kobj_get(status, "conditions"), "type", type);
}

/* Replaces member k of o with the string v ("" for NULL). */
static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v ? v : "");
}

cJSON *kobj_condition_set(cJSON *status, const char *type, const char *st, const char *reason,
                          const char *message, const char *now)
{
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(status, "conditions");
    if (!cJSON_IsArray(arr)) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
        if (!(arr = cJSON_AddArrayToObject(status, "conditions")))
            return NULL;
    }
    cJSON *c = (cJSON *)kobj_condition_find(status, type);
    if (!c) {
        if (!(c = cJSON_CreateObject()))
            return NULL;
        cJSON_AddItemToArray(arr, c);
        set_str(c, "type", type);
        set_str(c, "status", st);
        set_str(c, "lastTransitionTime", now);
    } else {
        const char *old = kobj_str(c, "status");
        if (!old || strcmp(old, st) != 0) {
            set_str(c, "status", st);
            set_str(c, "lastTransitionTime", now);
        }
    }
    set_str(c, "reason", reason);
    set_str(c, "message", message);
    return c;
}

void kobj_condition_remove(cJSON *status, const char *type)
{
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(status, "conditions");
    for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
        const char *t = kobj_str(cJSON_GetArrayItem(arr, i), "type");
        if (t && strcmp(t, type) == 0) {
            cJSON_DeleteItemFromArray(arr, i);
            return;
        }
    }
}

bool kobj_has_finalizer(const cJSON *obj, const char *finalizer)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, kobj_get(kobj_get(obj, "metadata"), "finalizers"))
        if (cJSON_IsString(f) && strcmp(f->valuestring, finalizer) == 0)
            return true;
    return false;
}

char *kobj_finalizers_patch(const cJSON *obj, const char *finalizer, bool add)
{
    cJSON *p = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(p, "metadata");
    cJSON *list = cJSON_AddArrayToObject(md, "finalizers");
    const char *rv = kobj_meta_str(obj, "resourceVersion");
    const cJSON *f;
    char *text = NULL;
    if (!list || !cJSON_AddStringToObject(md, "resourceVersion", rv ? rv : ""))
        goto out;
    cJSON_ArrayForEach(f, kobj_get(kobj_get(obj, "metadata"), "finalizers"))
        if (cJSON_IsString(f) && strcmp(f->valuestring, finalizer) != 0 &&
            !cJSON_AddItemToArray(list, cJSON_CreateString(f->valuestring)))
            goto out;
    if (add && !cJSON_AddItemToArray(list, cJSON_CreateString(finalizer)))
        goto out;
    text = cJSON_PrintUnformatted(p);
out:
    cJSON_Delete(p);
    return text;
}

cJSON *kobj_controller_refs(const char *api_version, const char *kind, const cJSON *owner)
{
    const char *name = kobj_meta_str(owner, "name"), *uid = kobj_meta_str(owner, "uid");
    cJSON *arr = cJSON_CreateArray(), *ref = cJSON_CreateObject();
    if (!arr || !ref || !cJSON_AddItemToArray(arr, ref)) {
        cJSON_Delete(arr);
        cJSON_Delete(ref);
        return NULL;
    }
    if (!cJSON_AddStringToObject(ref, "apiVersion", api_version) ||
        !cJSON_AddStringToObject(ref, "kind", kind) ||
        !cJSON_AddStringToObject(ref, "name", name ? name : "") ||
        !cJSON_AddStringToObject(ref, "uid", uid ? uid : "") ||
        !cJSON_AddBoolToObject(ref, "controller", 1) ||
        !cJSON_AddBoolToObject(ref, "blockOwnerDeletion", 1)) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

bool kobj_rv_numeric(const char *s)
{
    return s && *s && s[strspn(s, "0123456789")] == '\0';
}

int kobj_rv_cmp(const char *a, const char *b)
{
    if (kobj_rv_numeric(a) && kobj_rv_numeric(b)) {
        size_t la = strlen(a), lb = strlen(b);
        while (la > 1 && *a == '0') { a++; la--; }
        while (lb > 1 && *b == '0') { b++; lb--; }
        if (la != lb)
            return la < lb ? -1 : 1;
    }
    return strcmp(a, b);
}

void kobj_base64_encode(const unsigned char *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        *out++ = tab[v >> 18 & 63];
        *out++ = tab[v >> 12 & 63];
        *out++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *out++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *out = '\0';
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int kobj_base64_decode(const char *in, size_t len, char **out, size_t *outlen)
{
    unsigned char *o = malloc(len / 4 * 3 + 4);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0, pad = 0;

    *out = NULL;
    if (o == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad > 0) /* bad character, or data after padding */
            goto bad;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (pad > 2 || bits >= 6)
        goto bad;
    o[n] = '\0';
    *out = (char *)o;
    *outlen = n;
    return 0;
bad:
    free(o);
    return -EINVAL;
}

bool kobj_dns1035_label(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

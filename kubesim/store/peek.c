/*
 * peek.c - one member of a text-only snapshot without parsing all of it.
 *
 * A label-selector watch tests every event of its type against the selector. Pods,
 * Events and the ray.io kinds are kept as text alone (obj.c), so that test parsed the
 * whole object (a Pod of 10 KB with its managedFields) to read metadata.labels, and
 * rayop's and KubeRay's Pod informers both watch with a selector. This finds the
 * labels' bytes in the text with a scanner that only skips over values, and parses
 * those bytes alone. The GC reads a dependent's ownerReferences the same way.
 *
 * The scanner walks any JSON text bounded by its length (no recursion, no reads past
 * the end). Member names are compared byte for byte: the store's printer escapes no
 * letter, so a name it printed is found; a name written with escapes (`\u006c`) is not,
 * which only text that the store did not print can contain.
 */
#include "kubesim/store/internal.h"

#include <stdatomic.h>
#include <string.h>

/* Labels parsed out of stored text, process-wide (store_get_stats). */
static _Atomic unsigned long long label_peeks;

/* Any byte up to the space is whitespace, as cJSON's parser takes it. */
static bool is_ws(char c)
{
    return (unsigned char)c <= 32;
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

/* p at an opening quote: past the closing one, or NULL when the text ends first. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* p at a value: past it, or NULL when the text ends inside it. Containers are skipped
 * by counting brackets outside strings; their contents are not checked. */
static const char *skip_value(const char *p, const char *end)
{
    size_t depth = 0;

    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p != '{' && *p != '[') {
        while (p < end && *p != ',' && *p != '}' && *p != ']' && !is_ws(*p))
            p++;
        return p;
    }
    while (p < end) {
        if (*p == '"') {
            if (!(p = skip_string(p, end)))
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* p at an object: the value of its first member called name (*vend past it), or NULL. */
static const char *object_member(const char *p, const char *end, const char *name,
                                 const char **vend)
{
    size_t nlen = strlen(name);

    if (p >= end || *p != '{')
        return NULL;
    for (p = skip_ws(p + 1, end); p < end && *p == '"';) {
        const char *key = p + 1, *kend = skip_string(p, end), *v, *vn;
        if (!kend || (p = skip_ws(kend, end)) >= end || *p != ':')
            return NULL;
        v = skip_ws(p + 1, end);
        if (!(vn = skip_value(v, end)))
            return NULL;
        if ((size_t)(kend - 1 - key) == nlen && !memcmp(key, name, nlen)) {
            *vend = vn;
            return v;
        }
        p = skip_ws(vn, end);
        if (p >= end || *p != ',')
            return NULL;
        p = skip_ws(p + 1, end);
    }
    return NULL;
}

const char *store__text_member(const char *text, size_t len, const char *outer,
                               const char *inner, size_t *vlen)
{
    const char *end = text + len, *vend = NULL, *v;

    v = object_member(skip_ws(text, end), end, outer, &vend);
    if (v && inner)
        v = object_member(v, vend, inner, &vend);
    if (v)
        *vlen = (size_t)(vend - v);
    return v;
}

const cJSON *store__obj_meta_peek(const struct store_obj *o, const char *member, cJSON **tmp)
{
    const cJSON *t = store__obj_tree_at_hand(o);
    const char *text, *v;
    size_t n = 0;

    *tmp = NULL;
    if (t)
        return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "metadata"),
                                                member);
    if (!(text = store_obj_text(o)) ||
        !(v = store__text_member(text, o->len, "metadata", member, &n)))
        return NULL;
    return *tmp = cJSON_ParseWithLength(v, n);
}

const cJSON *store__obj_labels_peek(const struct store_obj *o, cJSON **tmp)
{
    const cJSON *l = store__obj_meta_peek(o, "labels", tmp);

    if (*tmp)
        atomic_fetch_add_explicit(&label_peeks, 1, memory_order_relaxed);
    return l;
}

uint64_t store__label_peeks(void)
{
    return atomic_load_explicit(&label_peeks, memory_order_relaxed);
}

/*
 * patch_fields.c - field sets, the ownership records behind metadata.managedFields.
 *
 * The wire form is fieldsV1: nested objects keyed "f:<field>", "k:<json of list keys>"
 * (an element of a keyed list), "v:<json>" (an element of a set of primitives), with
 * "." marking a node that is owned itself. Server-side apply needs set operations
 * (difference, membership, "who owns this"), so here a set is flattened into a list of
 * paths whose components are joined by FS_SEP, and converted back for storage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_text.h"
#include "kubesim/patch/patch.h"
#include "kubesim/patch/internal.h"
#include "kubesim/schema/schema.h"
#include "util/util.h"


/* schema.c may be absent from a reduced link (fuzz targets of the patch alone) */
#pragma weak schema_list_map_keys

#define FS_TOMB UINT32_MAX

/* Paths are long (a keyed list element's component is its key as JSON), so the hash
 * takes eight bytes per step; the final mix spreads them into the low bits the table
 * uses. */
static uint64_t fs_hash(const char *p)
{
    size_t n = strlen(p);
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

/* Slot holding p, or the first free slot of its probe sequence (*found false). */
static size_t fs_probe(const struct fs_set *s, const char *p, bool *found)
{
    size_t mask = s->nslots - 1, i = (size_t)fs_hash(p) & mask, free_slot = SIZE_MAX;
    *found = false;
    for (;;) {
        uint32_t v = s->slots[i];
        if (v == 0)
            return free_slot != SIZE_MAX ? free_slot : i;
        if (v == FS_TOMB) {
            if (free_slot == SIZE_MAX)
                free_slot = i;
        } else if (!strcmp(s->v[v - 1].p, p)) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* (Re)builds the index with room for want entries at most half full. */
static int fs_reindex(struct fs_set *s, size_t want)
{
    size_t n = 64;
    bool found;
    while (n < want * 2)
        n *= 2;
    uint32_t *slots = malloc(n * sizeof(*slots));   /* not calloc: see fs_walk_list */
    if (!slots)
        return -ENOMEM;
    memset(slots, 0, n * sizeof(*slots));
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
    s->used = s->n;
    for (size_t i = 0; i < s->n; i++)
        s->slots[fs_probe(s, s->v[i].p, &found)] = (uint32_t)(i + 1);
    return 0;
}

int patch__fs_add(struct fs_set *s, const char *p, bool self)
{
    bool found;
    size_t slot;
    int rc;

    if (!s->slots || (s->used + 1) * 2 > s->nslots) {
        if ((rc = fs_reindex(s, s->n + 1 > 32 ? (s->n + 1) * 2 : 32)))
            return rc;
    }
    slot = fs_probe(s, p, &found);
    if (found) {
        s->v[s->slots[slot] - 1].self |= self;
        return 0;
    }
    if (s->n >= FS_MAX_PATHS)
        return -E2BIG;
    if (util_array_grow(&s->v, sizeof(*s->v), s->n, &s->cap, 32) < 0)
        return -ENOMEM;
    if (!(s->v[s->n].p = strdup(p)))
        return -ENOMEM;
    s->v[s->n].self = self;
    if (s->slots[slot] != FS_TOMB)
        s->used++;
    s->slots[slot] = (uint32_t)(++s->n);
    return 0;
}

bool patch__fs_has(const struct fs_set *s, const char *p)
{
    bool found = false;
    if (s->slots)
        fs_probe(s, p, &found);
    return found;
}

int patch__fs_add_with_ancestors(struct fs_set *dst, const struct fs_set *src)
{
    char buf[FS_PATH_MAX];
    int rc;

    for (size_t i = 0; i < src->n; i++) {
        size_t len = strlen(src->v[i].p);
        if (len >= sizeof(buf))
            return -E2BIG;
        memcpy(buf, src->v[i].p, len + 1);
        if ((rc = patch__fs_add(dst, buf, false)))
            return rc;
        /* each ancestor once: stop at the first one already present */
        for (size_t k = len; k-- > 0;) {
            if (buf[k] != FS_SEP)
                continue;
            buf[k] = '\0';
            if (patch__fs_has(dst, buf))
                break;
            if ((rc = patch__fs_add(dst, buf, false)))
                return rc;
        }
    }
    return 0;
}

void patch__fs_remove(struct fs_set *s, const char *p)
{
    bool found = false;
    size_t slot = s->slots ? fs_probe(s, p, &found) : 0, i, last;

    if (!found)
        return;
    i = s->slots[slot] - 1;
    s->slots[slot] = FS_TOMB;
    free(s->v[i].p);
    last = --s->n;
    if (i != last) {
        /* the last path moves into the hole; its slot follows it */
        s->v[i] = s->v[last];
        size_t ls = fs_probe(s, s->v[i].p, &found);
        if (found)
            s->slots[ls] = (uint32_t)(i + 1);
    }
}

static int cmp_len_asc(const void *a, const void *b)
{
    size_t x = strlen(((const struct fs_path *)a)->p), y = strlen(((const struct fs_path *)b)->p);
    return x < y ? -1 : x > y ? 1 : 0;
}

int patch__fs_sort_parents_first(struct fs_set *s)
{
    if (s->n < 2)
        return 0;
    qsort(s->v, s->n, sizeof(*s->v), cmp_len_asc);
    return fs_reindex(s, s->n);
}

void patch__fs_free(struct fs_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].p);
    free(s->v);
    free(s->slots);
    memset(s, 0, sizeof(*s));
}

int patch__fs_list_keys(const struct fs_keys *k, const char *dotted, const char *const **keys)
{
    if (k->smp_kind) {
        struct smp_rule r = patch__smp_rule(k->smp_kind, dotted);
        if (r.kind == SMP_MERGE_PRIMITIVE)
            return 2;
        if (r.kind == SMP_MERGE_KEY) {
            *keys = NULL;
            return 1;
        }
        return 0;
    }
    if (k->schema && schema_list_map_keys) {
        const char *const *ks = schema_list_map_keys(k->schema, dotted);
        if (ks && ks[0]) {
            *keys = ks;
            return 1;
        }
    }
    return 0;
}

/* Builds "k:{...}" for element e of a keyed list; NULL when e lacks a key (the list is
 * then treated as atomic). Caller frees. */
static int key_put_str(struct buf *b, const char *v)
{
    size_t n = strlen(v);

    if (n > (SIZE_MAX - 8) / 6 || buf_reserve(b, n * 6 + 8))
        return -ENOMEM;
    b->len = (size_t)(json_text_put_str(b->data + b->len, v, n) - b->data);
    b->data[b->len] = 0;
    return 0;
}

char *patch__fs_elem_key(const cJSON *e, const struct fs_keys *k, const char *dotted,
                  const char *const *keys)
{
    /* written as text, the bytes cJSON_PrintUnformatted gives for an object of the key
     * members: no cJSON object is built for every list element */
    struct buf b = { 0 };
    const char *single[2] = { NULL, NULL };

    if (!cJSON_IsObject(e))
        return NULL;
    if (!keys) {
        single[0] = patch__smp_rule(k->smp_kind, dotted).key;
        keys = single;
    }
    if (buf_append(&b, "k:{", 3))
        goto fail;
    for (size_t i = 0; keys[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, keys[i]);
        if (!v || (i && buf_append(&b, ",", 1)) || key_put_str(&b, keys[i]) ||
            buf_append(&b, ":", 1))
            goto fail;
        if (cJSON_IsString(v)) {
            if (key_put_str(&b, v->valuestring))
                goto fail;
        } else {
            char *txt = cJSON_PrintUnformatted(v);
            int rc = txt ? buf_puts(&b, txt) : -ENOMEM;
            free(txt);
            if (rc)
                goto fail;
        }
    }
    if (buf_append(&b, "}", 1) || buf_append(&b, "", 1))
        goto fail;
    return b.data;
fail:
    buf_free(&b);
    return NULL;
}

bool patch__fs_skip_field(const char *dotted, const char *name)
{
    static const char *const meta[] = {
        "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
        "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", NULL,
    };
    if (!dotted[0])
        return !strcmp(name, "apiVersion") || !strcmp(name, "kind");
    if (!strcmp(dotted, "metadata"))
        for (size_t i = 0; meta[i]; i++)
            if (!strcmp(name, meta[i]))
                return true;
    return false;
}

/* Joins prefix and comp into out; false when too long. */
static bool join(char *out, size_t outlen, const char *prefix, const char *comp)
{
    /* memcpy, not snprintf: this runs for every field of every write */
    size_t pl = strlen(prefix), cl = strlen(comp), n = pl + (pl ? 1 : 0) + cl;
    if (n >= outlen)
        return false;
    if (pl) {
        memmove(out, prefix, pl);
        out[pl++] = FS_SEP;
    }
    memmove(out + pl, comp, cl + 1);
    return true;
}

static int fs_walk(const cJSON *obj, const cJSON *was, const struct fs_keys *k,
                   const char *prefix, const char *dotted, int depth, struct fs_set *out);

static int fs_walk_list(const cJSON *list, const struct fs_keys *k, const char *p,
                        const char *dotted, int depth, struct fs_set *out)
{
    const char *const *keys = NULL;
    int kind = patch__fs_list_keys(k, dotted, &keys), rc;
    const cJSON *e;
    char ep[FS_PATH_MAX];

    if (kind == 0 || cJSON_GetArraySize(list) == 0)
        return patch__fs_add(out, p, false);
    if (kind == 2) {
        cJSON_ArrayForEach(e, list) {
            char *json = cJSON_PrintUnformatted(e);
            if (!json)
                return -ENOMEM;
            bool ok = strlen(json) + 2 < FS_PATH_MAX;
            char comp[FS_PATH_MAX];
            if (ok) {
                snprintf(comp, sizeof(comp), "v:%s", json);
                ok = join(ep, sizeof(ep), p, comp);
            }
            free(json);
            if (!ok)
                return -E2BIG;
            if ((rc = patch__fs_add(out, ep, false)))
                return rc;
        }
        return 0;
    }
    /* keyed: if any element lacks its key, own the list atomically. The keys are built
     * once and kept for the walk below. */
    size_t n = (size_t)cJSON_GetArraySize(list), i = 0;
    /* malloc, not calloc: glibc's calloc skips the thread cache, and this runs for
     * every keyed list of every write (it was a tenth of kubesim at 10,000 Pods) */
    char **kcs = malloc((n ? n : 1) * sizeof(*kcs));
    if (!kcs)
        return -ENOMEM;
    memset(kcs, 0, n * sizeof(*kcs));
    rc = 0;
    cJSON_ArrayForEach(e, list) {
        if (i >= n)
            break;
        if (!(kcs[i++] = patch__fs_elem_key(e, k, dotted, keys))) {
            rc = patch__fs_add(out, p, false);
            goto out;
        }
    }
    i = 0;
    cJSON_ArrayForEach(e, list) {
        if (i >= n)
            break;
        if (!join(ep, sizeof(ep), p, kcs[i++])) {
            rc = -E2BIG;
            goto out;
        }
        if ((rc = patch__fs_add(out, ep, true)) ||
            (rc = fs_walk(e, NULL, k, ep, dotted, depth + 1, out)))
            goto out;
    }
out:
    for (i = 0; i < n; i++)
        free(kcs[i]);
    free(kcs);
    return rc;
}

/* was: obj's counterpart in the object before a write, or NULL. A member equal to its
 * counterpart there is left out with everything below it (see patch__fs_changed). */
static int fs_walk(const cJSON *obj, const cJSON *was, const struct fs_keys *k,
                   const char *prefix, const char *dotted, int depth, struct fs_set *out)
{
    const cJSON *m, *mw = NULL;
    char p[FS_PATH_MAX], comp[FS_PATH_MAX], sub[PATCH_PATH_MAX];
    int rc;

    if (depth > FS_MAX_DEPTH)
        return -E2BIG;
    cJSON_ArrayForEach(m, obj) {
        if (!m->string || patch__fs_skip_field(dotted, m->string))
            continue;
        if (was) {
            mw = cJSON_GetObjectItemCaseSensitive(was, m->string);
            if (mw && patch__json_equal(m, mw))
                continue;
        }
        size_t sl = strlen(dotted);
        memcpy(sub, dotted, sl + 1);
        size_t nl = strlen(m->string);
        if (nl + 2 >= sizeof(comp))
            return -E2BIG;
        memcpy(comp, "f:", 2);
        memcpy(comp + 2, m->string, nl + 1);
        if (!join(p, sizeof(p), prefix, comp) || !patch__path_push(sub, &sl, m->string))
            return -E2BIG;
        if (cJSON_IsObject(m) && m->child) {
            size_t before = out->n;
            if ((rc = fs_walk(m, cJSON_IsObject(mw) ? mw : NULL, k, p, sub, depth + 1, out)))
                return rc;
            /* Without a schema, structs and maps look alike; like the real server, mark
             * "." on maps (labels, data, ...) but not on the well-known structs. */
            bool structish = !strcmp(m->string, "metadata") ||
                             !strcmp(m->string, "spec") || !strcmp(m->string, "template") ||
                             !strcmp(m->string, "status");
            if (out->n > before && !structish && (rc = patch__fs_add(out, p, true)))
                return rc;
        } else if (cJSON_IsArray(m)) {
            if ((rc = fs_walk_list(m, k, p, sub, depth + 1, out)))
                return rc;
        } else if ((rc = patch__fs_add(out, p, false))) {
            return rc;
        }
    }
    return 0;
}

int patch__fs_from_object(const cJSON *obj, const struct fs_keys *k, struct fs_set *out)
{
    if (!cJSON_IsObject(obj))
        return 0;
    return fs_walk(obj, NULL, k, "", "", 0, out);
}

int patch__fs_changed(const cJSON *obj, const cJSON *old, const struct fs_keys *k,
                      struct fs_set *out)
{
    if (!cJSON_IsObject(obj))
        return 0;
    return fs_walk(obj, cJSON_IsObject(old) ? old : NULL, k, "", "", 0, out);
}

static int fsv1_walk(const cJSON *node, const char *prefix, int depth, struct fs_set *out)
{
    const cJSON *c;
    char p[FS_PATH_MAX];
    int rc;

    if (depth > FS_MAX_DEPTH)
        return -E2BIG;
    cJSON_ArrayForEach(c, node) {
        if (!c->string || !strcmp(c->string, ".") || !cJSON_IsObject(c))
            continue;
        if (!join(p, sizeof(p), prefix, c->string))
            return -E2BIG;
        bool dot = cJSON_GetObjectItemCaseSensitive(c, ".") != NULL;
        bool kids = false;
        const cJSON *g;
        cJSON_ArrayForEach(g, c)
            if (g->string && strcmp(g->string, "."))
                kids = true;
        /* intermediate nodes without "." are implied by their children */
        if ((dot || !kids) && (rc = patch__fs_add(out, p, dot)))
            return rc;
        if (kids && (rc = fsv1_walk(c, p, depth + 1, out)))
            return rc;
    }
    return 0;
}

int patch__fs_from_fieldsv1(const cJSON *f, struct fs_set *out)
{
    return cJSON_IsObject(f) ? fsv1_walk(f, "", 0, out) : 0;
}

cJSON *patch__fs_to_fieldsv1(const struct fs_set *s)
{
    cJSON *root = cJSON_CreateObject();
    char comp[FS_PATH_MAX];

    if (!root)
        return NULL;
    for (size_t i = 0; i < s->n; i++) {
        cJSON *node = root;
        const char *p = s->v[i].p;
        while (*p) {
            const char *e = strchr(p, FS_SEP);
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n >= sizeof(comp))
                break;
            memcpy(comp, p, n);
            comp[n] = '\0';
            cJSON *c = cJSON_GetObjectItemCaseSensitive(node, comp);
            if (!c && !(c = cJSON_AddObjectToObject(node, comp)))
                goto nomem;
            node = c;
            p += n + (e ? 1 : 0);
        }
        if (s->v[i].self && !cJSON_GetObjectItemCaseSensitive(node, ".") &&
            !cJSON_AddObjectToObject(node, "."))
            goto nomem;
    }
    return root;
nomem:
    cJSON_Delete(root);
    return NULL;
}

/* A node of the fieldsV1 text writer: children kept in first-insertion order, as
 * patch__fs_to_fieldsv1's cJSON tree keeps them, so both print the same bytes. */
struct fv_node {
    const char *name;           /* points into the set's path (or ".") */
    size_t len;
    size_t first, last, next;   /* node indexes; 0 = none (node 0 is the root) */
};

/* The child of parent named name[0..len), added when missing; 0 on ENOMEM. *v may move. */
static size_t fv_child(struct fv_node **vp, size_t *n, size_t *cap, size_t parent,
                       const char *name, size_t len)
{
    struct fv_node *v = *vp;
    size_t c = v[parent].last;

    /* paths arrive depth first, so the wanted child is nearly always the last one */
    if (c && (v[c].len != len || memcmp(v[c].name, name, len)))
        for (c = v[parent].first; c; c = v[c].next)
            if (v[c].len == len && !memcmp(v[c].name, name, len))
                break;
    if (c)
        return c;
    if (*n == *cap) {
        struct fv_node *nv = realloc(v, *cap * 2 * sizeof(*v));
        if (!nv)
            return 0;
        *vp = v = nv;
        *cap *= 2;
    }
    c = (*n)++;
    v[c] = (struct fv_node){ name, len, 0, 0, 0 };
    if (v[parent].last)
        v[v[parent].last].next = c;
    else
        v[parent].first = c;
    v[parent].last = c;
    return c;
}

/* Prints node i's members (its "{" is already written) and the closing "}". */
static int fv_print(const struct fv_node *v, size_t i, int depth, struct buf *b)
{
    if (depth > FS_MAX_DEPTH * 2)
        return -E2BIG;
    for (size_t c = v[i].first; c; c = v[c].next) {
        int rc;
        if (v[c].len > (SIZE_MAX - 8) / 6 || buf_reserve(b, v[c].len * 6 + 8))
            return -ENOMEM;
        char *o = b->data + b->len;
        if (c != v[i].first)
            *o++ = ',';
        o = json_text_put_str(o, v[c].name, v[c].len);
        memcpy(o, ":{", 2);
        b->len = (size_t)(o + 2 - b->data);
        if ((rc = fv_print(v, c, depth + 1, b)))
            return rc;
    }
    return buf_append(b, "}", 1);
}

int patch__fs_print_fieldsv1(const struct fs_set *s, struct buf *out)
{
    size_t cap = 64, n = 1;
    struct fv_node *v = malloc(cap * sizeof(*v));
    int rc = -ENOMEM;

    if (!v)
        return -ENOMEM;
    v[0] = (struct fv_node){ "", 0, 0, 0, 0 };
    for (size_t i = 0; i < s->n; i++) {
        size_t node = 0;
        const char *p = s->v[i].p;
        while (*p) {
            const char *e = strchr(p, FS_SEP);
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (!(node = fv_child(&v, &n, &cap, node, p, len)))
                goto out;
            p += len + (e ? 1 : 0);
        }
        if (s->v[i].self && !fv_child(&v, &n, &cap, node, ".", 1))
            goto out;
    }
    if (!(rc = buf_append(out, "{", 1)))
        rc = fv_print(v, 0, 0, out);
out:
    free(v);
    return rc;
}

/* Finds the child of node named by one component; sets *idx for list elements. */
static cJSON *comp_child(const cJSON *node, const char *comp, int *idx)
{
    *idx = -1;
    if (!strncmp(comp, "f:", 2))
        return cJSON_IsObject(node) ? cJSON_GetObjectItemCaseSensitive(node, comp + 2) : NULL;
    if (!cJSON_IsArray(node) || (strncmp(comp, "k:", 2) && strncmp(comp, "v:", 2)))
        return NULL;
    cJSON *want = cJSON_Parse(comp + 2), *e, *hit = NULL;
    int i = 0;
    if (!want)
        return NULL;
    cJSON_ArrayForEach(e, node) {
        bool ok;
        if (comp[0] == 'v') {
            ok = patch__json_equal(e, want);
        } else {
            const cJSON *kv;
            ok = cJSON_IsObject(want) && cJSON_IsObject(e);
            cJSON_ArrayForEach(kv, want) {
                const cJSON *have = cJSON_GetObjectItemCaseSensitive(e, kv->string);
                if (!ok || !have || !patch__json_equal(have, kv)) {
                    ok = false;
                    break;
                }
            }
        }
        if (ok) {
            hit = e;
            *idx = i;
            break;
        }
        i++;
    }
    cJSON_Delete(want);
    return hit;
}

/* Walks to the parent of the last component; last receives it. */
static cJSON *resolve_parent(const cJSON *obj, const char *p, char *last, size_t lastlen)
{
    const cJSON *node = obj;
    char comp[FS_PATH_MAX];
    int idx;

    for (;;) {
        const char *e = strchr(p, FS_SEP);
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n >= sizeof(comp) || n >= lastlen)
            return NULL;
        memcpy(comp, p, n);
        comp[n] = '\0';
        if (!e) {
            strcpy(last, comp);
            return (cJSON *)node;
        }
        if (!(node = comp_child(node, comp, &idx)))
            return NULL;
        p = e + 1;
    }
}

const cJSON *patch__fs_resolve(const cJSON *obj, const char *p)
{
    char last[FS_PATH_MAX];
    int idx;
    cJSON *parent = resolve_parent(obj, p, last, sizeof(last));
    return parent ? comp_child(parent, last, &idx) : NULL;
}

void patch__fs_walker_init(struct fs_walker *w, const cJSON *root)
{
    w->root = root;
    w->depth = 0;
}

const cJSON *patch__fs_walker_resolve(struct fs_walker *w, const char *p)
{
    char comp[FS_PATH_MAX];
    const cJSON *node;
    size_t len = strnlen(p, FS_PATH_MAX), pos = 0;
    int i = 0, idx;

    if (len >= FS_PATH_MAX)
        return patch__fs_resolve(w->root, p);
    /* the parent components p shares with the previous path */
    while (i < w->depth && w->ends[i] < len && p[w->ends[i]] == FS_SEP &&
           !memcmp(p + pos, w->prev + pos, w->ends[i] - pos)) {
        pos = w->ends[i] + 1;
        i++;
    }
    w->depth = i;
    node = i ? w->nodes[i - 1] : w->root;
    for (;;) {
        const char *e = memchr(p + pos, FS_SEP, len - pos);
        size_t n = e ? (size_t)(e - p) - pos : len - pos;
        memcpy(comp, p + pos, n);
        comp[n] = '\0';
        node = comp_child(node, comp, &idx);
        if (!e || !node)
            return node;
        if (i == FS_MAX_DEPTH)
            return patch__fs_resolve(w->root, p);
        memcpy(w->prev + pos, p + pos, n + 1);
        w->ends[i] = pos + n;
        w->nodes[i] = node;
        w->depth = ++i;
        pos += n + 1;
    }
}

void patch__fs_delete(cJSON *obj, const char *p)
{
    char last[FS_PATH_MAX];
    int idx;
    cJSON *parent = resolve_parent(obj, p, last, sizeof(last));
    cJSON *c = parent ? comp_child(parent, last, &idx) : NULL;
    if (!c)
        return;
    if (idx >= 0)
        cJSON_DeleteItemFromArray(parent, idx);
    else
        cJSON_Delete(cJSON_DetachItemViaPointer(parent, c));
}

void patch__fs_display(const char *p, char *out, size_t outlen)
{
    size_t o = 0;
    char comp[FS_PATH_MAX];

    if (!outlen)
        return;
    out[0] = '\0';
    while (*p) {
        const char *e = strchr(p, FS_SEP);
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int w;
        if (n >= sizeof(comp))
            return;
        memcpy(comp, p, n);
        comp[n] = '\0';
        if (!strncmp(comp, "f:", 2)) {
            w = snprintf(out + o, outlen - o, ".%s", comp + 2);
        } else if (!strncmp(comp, "v:", 2)) {
            w = snprintf(out + o, outlen - o, "[=%s]", comp + 2);
        } else {
            /* k:{"name":"x","port":1} -> [name="x",port=1] */
            cJSON *k = cJSON_Parse(comp + 2), *m;
            w = snprintf(out + o, outlen - o, "[");
            cJSON_ArrayForEach(m, k) {
                char *v = cJSON_PrintUnformatted(m);
                if (o + (size_t)w < outlen)
                    w += snprintf(out + o + w, outlen - o - w, "%s%s=%s",
                                  m == k->child ? "" : ",", m->string, v ? v : "");
                free(v);
            }
            cJSON_Delete(k);
            if (o + (size_t)w < outlen)
                w += snprintf(out + o + w, outlen - o - w, "]");
        }
        if (w < 0 || o + (size_t)w >= outlen)
            return;
        o += (size_t)w;
        p += n + (e ? 1 : 0);
    }
}

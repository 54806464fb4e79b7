/*
 * patch_int.h - internals shared by the patch_*.c files: the strategic-merge table
 * (list merge keys per built-in kind and field path), JSON tree helpers, and the
 * list-key lookup server-side apply uses for both built-ins and custom resources.
 */
#ifndef RAYOP_SIM_PATCH_INT_H
#define RAYOP_SIM_PATCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "util/util.h"   /* util_format_err: the (err, errlen) convention */

#define PATCH_MAX_DEPTH 64    /* nesting of objects/lists a patch may walk */
#define PATCH_PATH_MAX 512    /* dotted field path, list indexes elided */

enum smp_list { SMP_ATOMIC = 0, SMP_MERGE_KEY, SMP_MERGE_PRIMITIVE };

struct smp_rule {
    enum smp_list kind;
    const char *key;  /* merge key for SMP_MERGE_KEY */
    bool retain_keys; /* the elements (or the map) honour $retainKeys */
};

/* Rule of the list at path ("spec.containers.env": list indexes elided) for the
 * built-in kind; kind SMP_ATOMIC (replace) when the table has no entry. */
struct smp_rule patch__smp_rule(const char *smp_kind, const char *path);

/* Appends ".name" (or "name" at the root) to path of length *len; false when too long. */
bool patch__path_push(char *path, size_t *len, const char *name);

/* Stores v (ownership always taken) as member name of obj, replacing cur when non-NULL
 * (cur keeps its place and name). 0 or -ENOMEM, also for a NULL v, so that the result of a
 * merge that ran out of memory can be passed straight in. */
int patch__set_member(cJSON *obj, cJSON *cur, const char *name, cJSON *v);

/* Deep structural equality that ignores object member order. */
bool patch__json_equal(const cJSON *a, const cJSON *b);

#endif

/* ---- field sets (managedFields fieldsV1), patch_fields.c ------------------------ */

#define FS_SEP '\x1f'        /* joins the components of a flattened field path */
#define FS_MAX_PATHS 100000  /* per set: bounds what a stored managedFields can cost */
#define FS_MAX_DEPTH 64      /* object nesting a walk follows */
#define FS_PATH_MAX 4096     /* bytes of one flattened path */

struct schema;

/* One field path, components "f:name", "k:{json}", "v:json" joined by FS_SEP. self is
 * true for nodes that own themselves as well as children (the "." entry). */
struct fs_path {
    char *p;
    bool self;
};

struct fs_set {
    struct fs_path *v;
    size_t n, cap;
    uint32_t *slots;    /* open-addressing index into v: 0 empty, FS_TOMB removed, else i+1 */
    size_t nslots, used;
};

/* Where list keys come from: the SMP table for built-ins, the CRD schema for CRs. */
struct fs_keys {
    const char *smp_kind;
    const struct schema *schema;
};

int patch__fs_add(struct fs_set *s, const char *p, bool self);   /* copies p; 0, -ENOMEM, -E2BIG */
bool patch__fs_has(const struct fs_set *s, const char *p);
/* Adds every path of src and every ancestor of those paths to dst, so that
 * patch__fs_has(dst, p) answers "is p or something below p in src". 0, -ENOMEM, -E2BIG. */
int patch__fs_add_with_ancestors(struct fs_set *dst, const struct fs_set *src);
void patch__fs_remove(struct fs_set *s, const char *p);
/* Orders the paths shortest first (parents before their children). 0 or -ENOMEM. */
int patch__fs_sort_parents_first(struct fs_set *s);
void patch__fs_free(struct fs_set *s);
/* Field set of a whole object (server-owned metadata skipped). */
int patch__fs_from_object(const cJSON *obj, const struct fs_keys *k, struct fs_set *out);
/* The paths of patch__fs_from_object(obj) that may differ from old: a member of an object
 * equal to the member of that name in old's object at the same place is left out with
 * all below it (every path there resolves to equal nodes in both). What an update's
 * ownership record looks at: a status write of a Pod no longer walks its spec. */
int patch__fs_changed(const cJSON *obj, const cJSON *old, const struct fs_keys *k,
                      struct fs_set *out);
int patch__fs_from_fieldsv1(const cJSON *f, struct fs_set *out);
cJSON *patch__fs_to_fieldsv1(const struct fs_set *s); /* caller owns; NULL = ENOMEM */
/* Appends the compact JSON text of patch__fs_to_fieldsv1(s) to out without building the
 * tree. 0, -ENOMEM or -E2BIG. */
struct buf;
int patch__fs_print_fieldsv1(const struct fs_set *s, struct buf *out);
/* The same bytes as patch__fs_print_fieldsv1 of patch__fs_from_object(obj), written in one walk of
 * obj without building the set (patch_fields_direct.c: a create's managedFields).
 * 0 with *n_fields the number of paths the set would hold (0: nothing to own, out
 * untouched), -EAGAIN when obj holds what only the set handles (repeated member
 * names or list keys, a name with FS_SEP, a path over the set's bounds): build the
 * set then. -ENOMEM. */
int patch__fs_print_object_fieldsv1(const cJSON *obj, const struct fs_keys *k, struct buf *out,
                             size_t *n_fields);
/* Shared by the walkers (patch_fields.c). */
char *patch__fs_elem_key(const cJSON *e, const struct fs_keys *k, const char *dotted,
                  const char *const *keys);
bool patch__fs_skip_field(const char *dotted, const char *name);
const cJSON *patch__fs_resolve(const cJSON *obj, const char *p);
/* patch__fs_resolve for many paths of one object in a row: the walk of the parent components
 * a path shares with the previous one is reused (a set's paths come depth first, so
 * most share all but their last). Same answers; the object must not change meanwhile. */
struct fs_walker {
    const cJSON *root;
    int depth;                          /* parent components cached */
    size_t ends[FS_MAX_DEPTH];          /* prev[0..ends[i]) = components 0..i */
    const cJSON *nodes[FS_MAX_DEPTH];   /* the node components 0..i lead to */
    char prev[FS_PATH_MAX];
};
void patch__fs_walker_init(struct fs_walker *w, const cJSON *root);
const cJSON *patch__fs_walker_resolve(struct fs_walker *w, const char *p);
void patch__fs_delete(cJSON *obj, const char *p);
void patch__fs_display(const char *p, char *out, size_t outlen); /* ".spec.containers[name=\"x\"]" */
/* Keys of the list at dotted path: 1 with *keys set (NULL-terminated), 2 for a set of
 * primitives, 0 for an atomic list. */
int patch__fs_list_keys(const struct fs_keys *k, const char *dotted, const char *const **keys);

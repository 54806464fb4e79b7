/*
 * store.h - kubesim's object store: every object of every served type, the
 * resourceVersion counter, per-type watch history, garbage collection,
 * persistence (--state DIR) and the verb semantics of the real API server
 * (create/get/list/update/patch/delete/deletecollection/watch, status and scale
 * subresources, finalizers, graceful deletion, generation, defaulting and
 * validation of built-in types, schema validation of custom resources).
 *
 * The HTTP layer (server.c) only parses requests and renders answers; every rule
 * about objects lives behind this header. In-process cluster components (the
 * scheduler, kubelet, Job controller and Ray runtime of a later issue) use the
 * same calls and store_subscribe().
 *
 * Objects handed out are immutable, reference-counted snapshots: readers never
 * copy under the lock and never see a half-applied write. All functions are
 * thread-safe (one reader/writer lock inside; watch waits on a condition variable).
 *
 * Errors: every call returns 0 or a negative errno and, on error, fills *st with
 * the metav1.Status the server must answer (code, reason, message, details).
 */
#ifndef RAYOP_SIM_STORE_H
#define RAYOP_SIM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "kubesim/registry/registry.h"

struct sel;
struct fsel;
struct store;

/* An immutable stored object. Take a reference with store_obj_ref, drop it with
 * store_obj_unref; its tree and bytes must never be modified. */
struct store_zdict;
struct store_obj {
    const struct reg_resource *res;
    const char *blob;       /* private: the text, or its zstd frame; read store_obj_text */
    size_t len;             /* the length of its compact JSON text (no trailing newline) */
    uint64_t rv;            /* metadata.resourceVersion */
    const char *ns;         /* "" for cluster-scoped */
    const char *name;
    const char *uid;
    int refs;               /* atomic; private to the store */
    uint32_t zlen;          /* private: the frame's bytes when kept compressed, else 0 */
    struct store_zdict *zd; /* private: the dictionary of that frame */
    cJSON *tree;            /* private (atomic): read it through store_obj_json */
    bool fresh;             /* private: kept plain while it is rewritten (obj.c) */
};

/* o's compact JSON serialisation, NUL-terminated: o's own bytes, or (for a snapshot
 * kept compressed) a copy in this thread's buffer, valid until the thread's next call.
 * NULL only on ENOMEM. */
const char *store_obj_text(const struct store_obj *o);
/* Appends o's compact JSON text (o->len bytes) to out. 0 or a negative errno. */
struct buf;
int store_obj_text_append(const struct store_obj *o, struct buf *out);
struct store_obj *store_obj_ref(struct store_obj *o);
void store_obj_unref(struct store_obj *o);
/* The full object as served, as a read-only cJSON tree that lives as long as o (inside
 * a tree scope: until the scope ends, see below). Snapshots stored as text alone are
 * parsed here on first use; NULL only on ENOMEM. */
const cJSON *store_obj_json(const struct store_obj *o);

/*
 * Tree scopes. Most snapshots (Pods, Events, Services, Endpoints, EndpointSlices,
 * RayClusters) are kept as text alone. Outside a scope, store_obj_json parses such a
 * snapshot once and keeps the tree as long as the snapshot; inside one, the tree is
 * kept by the scope instead and freed when the outermost scope ends or is trimmed, so a
 * thread that reads many snapshots (the simulated cluster's turn, a table of a list)
 * leaves no trees behind. Per thread; scopes nest. A tree read inside a scope must not
 * be used after it ends or after store_tree_scope_trim.
 */
void store_tree_scope_begin(void);
void store_tree_scope_end(void);
/* At a point where the thread holds no tree from its scope: frees the trees it read
 * longest ago until the scope holds at most keep_bytes of them. */
void store_tree_scope_trim(size_t keep_bytes);
/* Frees o's tree if this thread's scope holds one: for a reader that has moved on to a
 * newer snapshot of the object, so that the budget keeps trees it will read again. */
void store_tree_scope_forget(const struct store_obj *o);

/* A 64-bit hash of a JSON value (its type, value and members in order; not the members
 * after it), 0 for NULL: what changed, told without keeping a copy. */
uint64_t store_json_hash(const cJSON *j);

/* The metav1.Status of a failed call. Zero-initialise; store_status_clear frees causes. */
struct store_status {
    int code;                /* 404, 409, 422, ... */
    char reason[32];         /* "NotFound", "AlreadyExists", "Conflict", "Invalid", ... */
    char message[1024];
    char kind[64];           /* details.kind  (e.g. "rayclusters" or "pods") */
    char group[128];         /* details.group */
    char name[256];          /* details.name */
    cJSON *causes;           /* details.causes array, or NULL; owned */
    int retry_after;         /* seconds, for 429/410-style answers; 0 = none */
};
void store_status_clear(struct store_status *st);
/* Renders st as a Status JSON object into a new string (caller frees). */
char *store_status_json(const struct store_status *st);

struct store_opts {
    const char *state_dir;   /* NULL: memory only */
    size_t watch_window;     /* events kept per type for resuming watches (default 5000) */
    unsigned bookmark_ms;    /* interval between bookmarks on watches that asked (default 1000) */
    uint64_t event_ttl_ms;   /* Events expire this long after their last write (default 1 h,
                              * kube-apiserver's --event-ttl) */
};

/* Opens the store with the given registry (ownership of reg passes to the store),
 * creating namespaces default, kube-system, kube-public and kube-node-lease (and
 * their default ServiceAccounts) unless loaded from state_dir. */
int store_open(const struct store_opts *o, struct registry *reg, struct store **out,
               char *err, size_t errlen);
/* Flushes state (compacts the journal) and frees everything. */
void store_close(struct store *s);

/* The registry is read under the store's read lock: wrap registry calls in these. */
const struct registry *store_registry_rdlock(struct store *s);
void store_registry_unlock(struct store *s);

uint64_t store_current_rv(struct store *s);

/* Options shared by the writing verbs (query parameters of the request). */
struct store_write_opts {
    const char *field_manager;     /* fieldManager, or derived from the user agent */
    const char *field_validation;  /* "Strict", "Warn", "Ignore" or NULL (= Warn) */
    bool dry_run;                  /* dryRun=All */
    bool force;                    /* force (server-side apply) */
    cJSON *warnings;               /* if non-NULL, receives strings for Warning headers */
};

enum store_patch_type { PATCH_MERGE, PATCH_JSON, PATCH_STRATEGIC, PATCH_APPLY };

struct store_delete_opts {
    const char *propagation;       /* "Background", "Foreground", "Orphan"; NULL = the type's
                                      default (Orphan for batch/v1 Jobs, else Background) */
    long grace_seconds;            /* -1 = type default */
    const char *precondition_uid;  /* NULL = none */
    const char *precondition_rv;
    bool dry_run;
};

struct store_list_opts {
    const struct sel *labels;      /* NULL = everything */
    const struct fsel *fields;     /* NULL = everything */
    long limit;                    /* 0 = no limit */
    const char *continue_token;    /* NULL = from the start */
    const char *resource_version;  /* NULL/"" = most recent, "0" = any */
    const char *rv_match;          /* "NotOlderThan", "Exact" or NULL */
};

struct store_list {
    struct store_obj **items;      /* references, released by store_list_free */
    size_t n;
    uint64_t rv;                   /* list resourceVersion */
    char *continue_token;          /* NULL when complete; owned */
    long remaining;                /* remainingItemCount when limited, -1 unknown */
};
void store_list_free(struct store_list *l);

/* ns is "" for cluster-scoped types and for all-namespace lists. subresource is "" or
 * NULL for the main resource, "status" or "scale" otherwise; a patch of Pods also takes
 * "binding": spec and status both come from the patch and managedFields are left as they
 * are (the real pods/binding writes storage directly), so a bind and the status it sets
 * are one write (kubesim/api checks the Binding's preconditions). obj arguments are
 * consumed (ownership passes to the store) whatever the result. *out, when out is
 * non-NULL, receives a reference to the stored (or, for dry runs, would-be) object. */
int store_get(struct store *s, const struct reg_resource *res, const char *ns,
              const char *name, struct store_obj **out, struct store_status *st);
/* GET of /scale renders an autoscaling/v1 Scale; caller frees. */
int store_get_scale(struct store *s, const struct reg_resource *res, const char *ns,
                    const char *name, cJSON **out, struct store_status *st);
int store_list(struct store *s, const struct reg_resource *res, const char *ns,
               const struct store_list_opts *o, struct store_list *out,
               struct store_status *st);
int store_create(struct store *s, const struct reg_resource *res, const char *ns,
                 cJSON *obj, const struct store_write_opts *w, struct store_obj **out,
                 struct store_status *st);
int store_update(struct store *s, const struct reg_resource *res, const char *ns,
                 const char *name, const char *subresource, cJSON *obj,
                 const struct store_write_opts *w, struct store_obj **out,
                 struct store_status *st);
/* body is the raw request body (JSON, or YAML/JSON for apply). *created tells
 * whether an apply patch created the object (201). */
int store_patch(struct store *s, const struct reg_resource *res, const char *ns,
                const char *name, const char *subresource, enum store_patch_type type,
                const char *body, size_t len, const struct store_write_opts *w,
                struct store_obj **out, bool *created, struct store_status *st);
/* The same with the patch parsed already (consumed, NULL = out of memory): the simulated
 * cluster's status writes, which need not print a body for the store to parse again. */
int store_patch_json(struct store *s, const struct reg_resource *res, const char *ns,
                     const char *name, const char *subresource, enum store_patch_type type,
                     cJSON *patch, const struct store_write_opts *w, struct store_obj **out,
                     bool *created, struct store_status *st);
/* *out gets the object as it stands after the call: with deletionTimestamp set
 * when finalizers or a grace period keep it (the server answers 200/202 with it),
 * or the last state when it is gone (*gone = true; CRs then answer a Success Status). */
int store_delete(struct store *s, const struct reg_resource *res, const char *ns,
                 const char *name, const struct store_delete_opts *o,
                 struct store_obj **out, bool *gone, struct store_status *st);
int store_delete_collection(struct store *s, const struct reg_resource *res, const char *ns,
                            const struct store_list_opts *lo,
                            const struct store_delete_opts *o, struct store_status *st);

/* ---- watch ----------------------------------------------------------------- */

enum store_event_type { EV_ADDED, EV_MODIFIED, EV_DELETED, EV_BOOKMARK, EV_ERROR };

struct store_event {
    enum store_event_type type;
    struct store_obj *obj;         /* reference (NULL for BOOKMARK/ERROR); caller unrefs */
    uint64_t rv;                   /* for BOOKMARK: the resourceVersion to report */
    bool initial_events_end;       /* BOOKMARK closing sendInitialEvents */
    struct store_status status;    /* for ERROR (e.g. 410 Expired) */
};

struct store_watch_opts {
    const struct sel *labels;      /* borrowed for the watch's lifetime */
    const struct fsel *fields;
    const char *resource_version;  /* NULL/""/"0": synthetic ADDED of current objects first */
    bool send_initial_events;      /* sendInitialEvents=true */
    bool bookmarks;                /* allowWatchBookmarks */
};

struct store_watch;
int store_watch_open(struct store *s, const struct reg_resource *res, const char *ns,
                     const struct store_watch_opts *o, struct store_watch **out,
                     struct store_status *st);
/* Waits up to timeout_ms for the next event. 0 with *ev filled; -ETIMEDOUT; -EPIPE
 * once the watch ended (after an ERROR event such as 410, or store_watch_cancel).
 * An ERROR event (410 Expired) is delivered once, then -EPIPE. */
int store_watch_next(struct store_watch *w, int timeout_ms, struct store_event *ev);
/* Wakes a blocked store_watch_next; it and all later calls return -EPIPE. */
void store_watch_cancel(struct store_watch *w);
void store_watch_close(struct store_watch *w);
void store_event_clear(struct store_event *ev);

/* ---- in-process subscribers -------------------------------------------------- */

/* Called after every committed change, outside the store lock, in commit order,
 * from the committing thread. The callback must not block; it may call store
 * functions. Used by kubesim's cluster components to queue work. */
typedef void (*store_subscriber_fn)(void *arg, enum store_event_type type,
                                    struct store_obj *obj);
int store_subscribe(struct store *s, store_subscriber_fn fn, void *arg);

/* ---- stats for /kubesim/status ------------------------------------------------ */
struct store_stats {
    size_t objects;
    size_t watchers;
    uint64_t rv;
    uint64_t events;
    uint64_t text_parses;   /* parses of text-only objects, process-wide */
    uint64_t label_peeks;   /* parses of their labels alone, process-wide */
};
void store_get_stats(struct store *s, struct store_stats *out);
/* Appends a JSON object to out: per type, the bytes of the stored objects' text and
 * trees and of the snapshots only the watch ring keeps, and malloc's totals
 * (GET /kubesim/memory). Walks every object under the read lock: a diagnostic. */
struct buf;
int store_memory_json(struct store *s, struct buf *out);
/* A component above the store (the simulated cluster) that keeps tables of its own
 * reports them in the same answer: fn appends the members of one JSON object (no
 * braces) to out and returns the malloc bytes it counted. Called from the answering
 * thread without the store lock, so fn reads only what is safe to read from there.
 * One reporter; a later call replaces it. */
typedef size_t (*store_memory_reporter_fn)(void *arg, struct buf *out);
void store_memory_reporter_set(struct store *s, store_memory_reporter_fn fn, void *arg);
/* The malloc chunk behind p (its usable size plus the chunk header; 0 for NULL): what
 * the memory answer counts, so that its sums compare with malloc's in-use bytes. */
size_t store_mem_chunk(const void *p);
/* The bytes of a uthash table's bookkeeping (the table and its bucket array), given the
 * handle of any member (NULL: an empty table, 0). */
struct UT_hash_handle;
size_t store_mem_table(const struct UT_hash_handle *hh);

/* ---- fault injection and test hooks -------------------------------------------- */

/* Holds every watch event back from watchers until its commit time + ms (0 = off). */
void store_set_watch_delay_ms(struct store *s, unsigned ms);

#endif

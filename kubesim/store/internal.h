/*
 * internal.h - internals shared by the files of kubesim's object store
 * (store.c verbs, write.c, meta.c metadata rules, list.c, patch.c,
 * status.c, watch.c, gc.c, persist.c, builtin_*.c). Not a public header:
 * the server and cluster components use kubesim/store/store.h only.
 *
 * Locking, in order of acquisition:
 *   s->lock      rwlock over every table below, the registry and the rv counter;
 *                a write holds it exclusively to commit. One prepared without it
 *                (write.c) commits only if the snapshot it read is still the
 *                stored one; the others hold it from reading the old object to
 *                publishing the new one. Either way a read-modify-write never races.
 *   t->wmu       per type: its watch ring; taken inside s->lock by the commit path
 *                and alone by watchers.
 *   s->notify_mu subscriber dispatch, never held together with s->lock.
 *   s->nq_mu     the subscriber notice queue: pushed inside s->lock by the commit,
 *                taken alone by the drain, so delivering takes no write lock.
 *   s->gc_mu     the GC work queue; leaf lock.
 */
#ifndef RAYOP_KUBESIM_STORE_INTERNAL_H
#define RAYOP_KUBESIM_STORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <uthash.h>

#include "kobj/kobj.h"
#include "kubesim/schema/schema.h"
#include "kubesim/schema/status_cause.h"
#include "kubesim/store/store.h"
#include "util/util.h"

#define STORE_MAX_SUBSCRIBERS 16

struct stype;
struct gc_pending;
struct label_bucket;
struct sel;

/* The one label the store indexes (index.c). */
#define STORE_INDEXED_LABEL "ray.io/cluster"

/* Dependents index: one per owner uid, a set of entries referencing it. */
struct depref {
    struct sentry *e;
    UT_hash_handle hh;
};
struct owner_deps {
    char *uid;
    struct depref *deps;
    UT_hash_handle hh;
};

/* One stored object: the current snapshot plus its index memberships. */
struct sentry {
    char *key;                  /* "ns/name" (ns empty for cluster-scoped) */
    struct store_obj *obj;
    struct stype *t;
    char **owners;              /* owner uids this entry is indexed under */
    size_t n_owners;
    struct label_bucket *label_bucket;  /* its STORE_INDEXED_LABEL bucket, or NULL */
    uint64_t ring_seq;          /* ring sequence of its last watch event (may be evicted) */
    uint64_t labels_hash;       /* store__obj_meta_hash of its labels, ownerReferences: */
    uint64_t refs_hash;         /* the next commit compares them without the old tree */
    UT_hash_handle hh;          /* t->objs by key */
    UT_hash_handle hu;          /* s->by_uid by obj->uid */
};

/* One watch history slot. prev is the object before the change (MODIFIED, and
 * DELETED carries the last state in obj), used for selector transitions. */
struct wev {
    enum store_event_type type;
    bool same_labels;           /* MODIFIED: prev has obj's labels (selector shortcut) */
    struct store_obj *obj;
    struct store_obj *prev;
    uint64_t rv;
    uint64_t commit_ms;
};

/* Storage of one resource (all versions of a CRD share one). Never freed before
 * store_close, so watchers may keep a pointer across CRD removal. */
struct stype {
    char *key;                  /* "group/plural" */
    const struct reg_resource *res;   /* NULL while the type is not served */
    struct sentry *objs;
    size_t n;
    struct label_bucket *by_label;      /* STORE_INDEXED_LABEL value -> entries */
    struct store_zdict *zd;     /* ztext.c: the dictionary its text is compressed with */
    bool zd_tried;              /* made (or failed): it never changes */
    pthread_mutex_t wmu;
    pthread_cond_t wcond;
    struct wev *ring;
    size_t cap;
    uint64_t head;              /* sequence number of the oldest kept event */
    uint64_t tail;              /* sequence number of the next event */
    uint64_t evicted_rv;        /* highest rv no longer in the ring */
    unsigned gen;               /* bumped when the type stops being served */
    _Atomic unsigned nwatchers; /* open watches of this type (the linger heuristic) */
    UT_hash_handle hh;
};

struct notice {                 /* a committed change waiting for subscribers */
    enum store_event_type type;
    struct store_obj *obj;
    struct notice *next;
};

struct gc_item {
    int kind;                   /* GC_OWNER, GC_DEPENDENT, GC_NAMESPACE */
    char *id;                   /* uid, or namespace name */
    struct gc_item *next;
};
enum { GC_OWNER = 1, GC_DEPENDENT, GC_NAMESPACE };

struct subscriber {
    store_subscriber_fn fn;
    void *arg;
};

struct store {
    pthread_rwlock_t lock;
    struct registry *reg;
    struct stype *types;
    struct sentry *by_uid;
    struct owner_deps *owners;
    size_t objects;
    uint64_t rv;                /* last issued, under lock */
    _Atomic uint64_t committed_rv; /* last published, for bookmarks */
    uint64_t start_rv;          /* rv at open: older watch positions are gone */
    _Atomic uint64_t events;
    _Atomic size_t watchers;
    size_t window;
    unsigned bookmark_ms;
    _Atomic unsigned watch_delay_ms;
    uint32_t svc_next_ip;       /* offset in 10.96.0.0/12 for the next clusterIP */
    const struct reg_resource *res_namespaces, *res_nodes;   /* cached built-ins */
    const struct reg_resource *res_events;      /* core/v1: events.k8s.io/v1's storage */

    store_memory_reporter_fn mem_fn;    /* GET /kubesim/memory's "cluster" member */
    void *mem_arg;

    struct subscriber subs[STORE_MAX_SUBSCRIBERS];
    _Atomic size_t n_subs;      /* read without notify_mu by the early exits */
    pthread_mutex_t notify_mu;
    pthread_mutex_t nq_mu;              /* the queue below; leaf, taken inside s->lock */
    struct notice *nq_head, *nq_tail;   /* under nq_mu */
    bool draining;                      /* under notify_mu */

    pthread_mutex_t gc_mu;
    struct gc_pending *gc_pending;      /* queued keys, to de-duplicate work */
    pthread_cond_t gc_cond;
    struct gc_item *gq_head, *gq_tail;
    bool store__gc_stop;
    bool gc_busy;
    pthread_t gc_thread;
    bool gc_started;

    /* Event expiry (gc.c): one entry per Event write, in write order, so the
     * head is always the next due; an entry whose Event was written again
     * since (another rv) is skipped. Under s->lock; n_expiring is read without. */
    uint64_t event_ttl_ms;
    struct ev_expiry *exp_head, *exp_tail;
    _Atomic size_t n_expiring;

    /* persistence */
    char *state_dir;
    int journal_fd;             /* -1 without state */
    bool replaying;
};

/* ---- objects (obj.c, json.c) ---- */
/* Appends the compact JSON of json to out (cJSON_PrintUnformatted's output). */
int store__json_print(const cJSON *json, struct buf *out);
/* json copied into one block (json.c, packed trees): read-only, freed with free() on
 * the result. NULL on ENOMEM or for a tree with siblings at the root. */
cJSON *store__json_pack(const cJSON *json);
/* Adds to *nodes the nodes of the tree json and its siblings, and to *bytes the bytes their
 * keys and strings take with their NULs: a packed tree is nodes * sizeof(cJSON) + bytes. */
void store__json_measure(const cJSON *json, size_t *nodes, size_t *bytes);
/* Takes ownership of json; serialises it and keeps it packed. NULL on ENOMEM. */
struct store_obj *store__obj_new(const struct reg_resource *res, cJSON *json);
/* A mutable copy of o's tree (caller deletes), parsed from the text when o keeps
 * none. NULL on ENOMEM. */
cJSON *store__obj_copy(const struct store_obj *o);
/* o's tree, or for a snapshot that keeps none a parse of its text into *tmp (the
 * caller deletes it): filters must not leave a tree on every snapshot they test.
 * NULL on ENOMEM. */
const cJSON *store__obj_peek(const struct store_obj *o, cJSON **tmp);
/* o's tree if it keeps one or this thread's tree scope holds one, else NULL. */
const cJSON *store__obj_tree_at_hand(const struct store_obj *o);
/* peek.c: metadata.labels of o (NULL when absent), from its tree at hand or by parsing
 * only the labels' bytes of its text into *tmp (the caller deletes it). */
const cJSON *store__obj_labels_peek(const struct store_obj *o, cJSON **tmp);
/* The same for metadata.<member>. */
const cJSON *store__obj_meta_peek(const struct store_obj *o, const char *member, cJSON **tmp);
/* The value of member outer (and inside it, of inner when not NULL) of the JSON object
 * text[0..len): its first byte and *vlen, or NULL when absent or the text ends first. */
const char *store__text_member(const char *text, size_t len, const char *outer,
                               const char *inner, size_t *vlen);
/* Parses of stored text so far, in this process. */
uint64_t store__text_parses(void);
/* Lingers taken by watchers of few watchers' types on a stream of their own, process-wide
 * (watch.c; the tests' handle on the heuristic). */
uint64_t store__watch_stream_lingers(void);
/* Parses of the labels alone (store__obj_labels_peek) so far, in this process. */
uint64_t store__label_peeks(void);
/* A copy of o without its tree (parsed again if read): what the watch window keeps
 * of a replaced object. NULL on ENOMEM. */
struct store_obj *store__obj_text_only(struct store_obj *o);
/* A copy of o whose metadata.resourceVersion is rv (DELETED events, transitions). */
struct store_obj *store__obj_with_rv(struct store_obj *o, uint64_t rv);
/* o rendered as res (another version of the same CRD): apiVersion rewritten. */
struct store_obj *store__obj_as(struct store_obj *o, const struct reg_resource *res);
/* The commit's last word on obj's writer tree (lock held, obj not yet published): a
 * text-only type lets it go, into the thread's tree scope when one is open. */
void store__obj_settle(struct store_obj *o);
/* Trees the commit handed from a writer outside any tree scope to the snapshot's first
 * reader (obj.c), taken so far, process-wide; and the ones not yet taken, dropped
 * (store_close). */
uint64_t store__handoff_taken(void);
void store__handoff_clear(void);
/* Bytes of the Pods' texts kept plain while they are rewritten (obj.c), process-wide. */
size_t store__fresh_bytes(void);
/* The commit's first step (lock held, obj not yet published nor indexed: its names
 * move): a text-only type keeps obj's text compressed once t has a dictionary, but
 * for a fresh Pod's (see obj.c). */
void store__obj_compact(struct stype *t, struct store_obj *o);

/* ---- compressed text (ztext.c) ---- */
struct store_zdict *store__zdict_ref(struct store_zdict *zd);
void store__zdict_unref(struct store_zdict *zd);
/* Malloc bytes of zd (both of zstd's digested copies); 0 for NULL. */
size_t store__zdict_bytes(const struct store_zdict *zd);
/* A dictionary from the text of t's objects now (plain, all of them): NULL on ENOMEM
 * or when t has no text. Lock held. */
struct store_zdict *store__zdict_build(const struct stype *t);
/* text[0..len) compressed with zd into a new block with extra bytes of room after the
 * frame (*zlen bytes). NULL on ENOMEM or when the frame would not be smaller. */
char *store__ztext_compress(struct store_zdict *zd, const char *text, size_t len,
                            size_t extra, size_t *zlen);
/* Decompressions of stored text, process-wide: a thread that asks for the text it was
 * last given, or last compressed, is not counted (ztext.c keeps that text). */
uint64_t store__text_decompressions(void);
/* A hash of metadata.<member> of obj (0 when absent): equal members hash equal. */
uint64_t store__obj_meta_hash(const cJSON *obj, const char *member);

struct stype *store__type_get(struct store *s, const struct reg_resource *res, bool create);

/* ---- events.k8s.io/v1 kept as core/v1 Events (events.c) ---- */
struct fsel;
bool store__events_v1(const struct reg_resource *res);
void store__event_to_core(cJSON *obj);   /* in place: events.k8s.io/v1 -> core/v1 */
void store__event_to_v1(cJSON *obj);     /* in place: core/v1 -> events.k8s.io/v1 */
/* fsel_matches on a stored object as the version `want` presents it */
bool store__fields_match(const struct reg_resource *want, const struct fsel *f,
                         const cJSON *stored);
void store__type_key(const struct reg_resource *res, char *out, size_t outlen);
struct sentry *store__entry_find(struct stype *t, const char *ns, const char *name);
/* The entry of res named ns/name (ns ignored when res is cluster-scoped), or NULL with st set
 * to the 404 a client gets. s->lock held. */
struct sentry *store__entry_lookup(struct store *s, const struct reg_resource *res,
                                   const char *ns, const char *name, struct store_status *st);
const struct reg_resource *store__find_builtin(struct store *s, const char *group,
                                               const char *plural);

/* Commit path (s->lock held for writing). Publishes obj (reference consumed) as
 * the new state of (t, key), or removes it when type is EV_DELETED; journals,
 * indexes, feeds watch rings, subscribers and GC. */
int store__commit_put(struct store *s, struct stype *t, struct sentry *old,
                      struct store_obj *obj, struct sentry **out);
int store__commit_delete(struct store *s, struct sentry *e);
uint64_t store__next_rv(struct store *s);
void store__notify_drain(struct store *s);
/* The end of a call that may have written, s->lock released: an -ENOMEM gets its 500 in st,
 * and the subscriber notices the call queued are delivered. Returns rc. */
int store__write_done(struct store *s, int rc, struct store_status *st);

/* The tail of PUT and PATCH (lock held): obj (consumed) is the
 * proposed new state of e. store__write_prepare + store__write_commit. */
int store__write_prepared(struct store *s, const struct reg_resource *res, struct sentry *e,
                          const char *sub, cJSON *obj, const struct store_write_opts *w,
                          struct store_obj **out, struct store_status *st);
/* ---- preparing a write (write.c) ---- */
bool store__is_crd(const struct reg_resource *res);
bool store__is_pods(const struct reg_resource *res);
/* Namespace ns must exist and not be terminating (NamespaceLifecycle admission);
 * -ENOENT (404) or -EACCES (403) in st. s->lock held (read or write). */
int store__check_namespace(struct store *s, const struct reg_resource *res, const char *ns,
                           const char *name, struct store_status *st);
/* A create prepared: the new snapshot and what its commit needs. */
struct store_prep_create {
    struct store_obj *o;        /* owned; rv guessed (none on a dry run) */
    bool generated;
    char gen_name[64];          /* the generateName prefix, cut as names are */
};
/* Everything a create does before it needs the store's tables (obj consumed): the
 * request's metadata rules, server-owned fields, admission, defaulting, validation,
 * managedFields and printing. locked: the caller holds the write lock, else the
 * namespace is read under a short read lock. sres is the type's storage version. */
int store__create_prepare(struct store *s, const struct reg_resource *res,
                          const struct reg_resource *sres, const char *ns, cJSON *obj,
                          const struct store_write_opts *w, bool locked,
                          struct store_prep_create *p, struct store_status *st);
/* Types whose writes are prepared without the store's lock and committed under it
 * when the stored object is still the one they were prepared against (write.c). */
bool store__prepare_unlocked(const struct reg_resource *res);
/* A prepared update: nothing left to commit (a no-op or dry run, answered), the removal
 * of base (its last finalizer went), or o to publish in base's place. */
struct write_plan {
    enum { WRITE_DONE, WRITE_REMOVE, WRITE_PUT } kind;
    struct store_obj *base;     /* the snapshot prepared against (the caller's reference) */
    struct store_obj *o;        /* WRITE_PUT: the new snapshot, rv guessed (owned) */
};
int store__write_prepare(struct store *s, const struct reg_resource *res,
                         const struct reg_resource *sres, struct store_obj *base,
                         const char *sub, cJSON *obj, const struct store_write_opts *w,
                         bool locked, struct write_plan *pl, struct store_obj **out,
                         struct store_status *st);
/* Lock held and e->obj still pl->base: publishes the plan (pl->o consumed). */
int store__write_commit(struct store *s, const struct reg_resource *res, struct sentry *e,
                        struct write_plan *pl, struct store_obj **out,
                        struct store_status *st);
/* PUT of /scale (patch.c): scale (consumed) is an autoscaling/v1 Scale. */
int store__scale_update(struct store *s, const struct reg_resource *res, const char *ns,
                        const char *name, cJSON *scale, const struct store_write_opts *w,
                        struct store_obj **out, struct store_status *st);
/* (Un)registers the types of a CRD and, when removed, drops its objects (lock held). */
void store__crd_changed(struct store *s, const cJSON *crd, bool removed);

/* Deletes e (lock held) honouring finalizers and grace as the DELETE verb does. */
int store__delete_entry(struct store *s, struct sentry *e, const struct store_delete_opts *o,
                        struct store_obj **out, bool *gone, struct store_status *st);

/* ---- label index (index.c), lock held ---- */
/* Puts e (new, or with a new snapshot) in the bucket of its label's value; an entry
 * whose value did not change stays where it is. */
int store__index_update(struct stype *t, struct sentry *e);
void store__index_remove(struct stype *t, struct sentry *e);
int store__index_lookup(struct stype *t, const struct sel *sel, struct sentry ***out,
                        size_t *n);
void store__index_free(struct stype *t);

/* Malloc bytes of t's label index: buckets, their values, refs and hash tables. */
size_t store__index_measure(const struct stype *t);

/* ---- memory accounting (memstat.c) ---- */
/* Trees held by the tree scopes of every thread (obj.c), and their malloc bytes with
 * the scopes' own entries. */
void store__scope_measure(size_t *trees, size_t *bytes);

/* ---- status helpers (status.c) ---- */
void store__status_set(struct store_status *st, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void store__status_details(struct store_status *st, const struct reg_resource *res, const char *name,
                           bool kind_is_kind);
void store__status_not_found(struct store_status *st, const struct reg_resource *res, const char *name);
void store__status_conflict(struct store_status *st, const struct reg_resource *res, const char *name);
void store__status_already_exists(struct store_status *st, const struct reg_resource *res,
                                  const char *name);
/* "plural.group" or "plural" for the core group. */
void store__status_qualified(const struct reg_resource *res, char *out, size_t outlen);
/* Causes ({reason, message, field}, added with status_cause_add) become the 422:
 * its message is built from them as the server's ToAggregate does. */
int store__status_invalid(struct store_status *st, const struct reg_resource *res, const char *name,
                          cJSON *causes);

/* ---- metadata (meta.c) ---- */
/* The name rule of a resource; the checks are schema_check_name & co (schema/names.c). */
enum name_rule store__name_rule(const struct reg_resource *res);
/* Validates metadata of obj (labels, annotations, ownerReferences, finalizers). */
void store__check_meta(const cJSON *obj, const cJSON *old, const struct reg_resource *res,
                       cJSON *causes);
void store__random_uid(char out[37]);
void store__random_suffix(char out[6]);
void store__now(char out[32]);
bool store__spec_changed(const struct reg_resource *res, const cJSON *a, const cJSON *b);
bool store__has_finalizer(const cJSON *obj, const char *f);
cJSON *store__meta(cJSON *obj);   /* metadata object, created when absent */
void store__set_str(cJSON *o, const char *k, const char *v);   /* replace or add */
void store__set_num(cJSON *o, const char *k, double v);
bool store__finalizers_empty(const struct reg_resource *res, const cJSON *obj);
/* Equal apart from managedFields and resourceVersion (a no-op write). */
bool store__same_object(const cJSON *a, const cJSON *b);

/* 400 "field label not supported: x" unless every field is served (list.c). */
struct fsel;
int store__check_fields(const struct reg_resource *res, const struct fsel *f,
                        struct store_status *st);

/* ---- built-ins (builtin_*.c) ---- */
/* Fills the defaults of built-in types (lock held: allocates Service IPs). */
int store__builtin_default(struct store *s, const struct reg_resource *res, cJSON *obj,
                           const cJSON *old);
/* Adds 422 causes for invalid built-in objects (old != NULL on update). */
void store__builtin_validate(const struct reg_resource *res, const cJSON *obj, const cJSON *old,
                             cJSON *causes);

/* ---- watch (watch.c) ---- */
void store__watch_type_init(struct stype *t, size_t cap, uint64_t evicted_rv);
void store__watch_type_free(struct stype *t);
/* Appends an event (references taken); lock held. Its watchers are woken by the
 * thread's next store__watch_wake_deferred(). *seq is the ring sequence of
 * the key's previous event (ignored when not found there) and becomes this one's:
 * a replaced snapshot that keeps a tree is kept in the ring as text alone, in both
 * of its slots. same_labels: prev and obj carry the same labels. */
void store__watch_append(struct store *s, struct stype *t, enum store_event_type type,
                         struct store_obj *obj, struct store_obj *prev, bool same_labels,
                         uint64_t *seq);
void store__watch_type_end(struct stype *t);
/* Wakes the watchers of the types this thread appended events to: called once it left
 * s->lock (store__notify_drain does, at the end of every write). */
void store__watch_wake_deferred(void);

/* ---- gc (gc.c) ---- */
int store__gc_start(struct store *s);
void store__gc_stop(struct store *s);
/* Schedules the expiry of Event e (just written, or replayed: then dated by its
 * own timestamps) event_ttl_ms on. Under s->lock (write) or during replay. */
void store__gc_event_written(struct store *s, const struct sentry *e);
/* After replay: orders the expiries of the replayed Events by due time. */
void store__gc_events_replayed(struct store *s);
void store__gc_enqueue(struct store *s, int kind, const char *id);
/* Index maintenance, lock held. */
int store__gc_index_add(struct store *s, struct sentry *e);
void store__gc_index_remove(struct store *s, struct sentry *e);
/* Malloc bytes of the dependents index (owners, their uids, refs and tables) and of
 * the Event expiry list. Lock held. */
void store__gc_measure(const struct store *s, size_t *owners, size_t *expiry);
/* Waits until the GC queue is empty and idle (tests, close). */
int store__gc_wait_idle(struct store *s, int timeout_ms);

/* ---- persistence (persist.c) ---- */
int store__persist_open(struct store *s, char *err, size_t errlen);
void store__persist_close(struct store *s);
int store__persist_put(struct store *s, const struct store_obj *o);
int store__persist_delete(struct store *s, const struct store_obj *o, uint64_t rv);
/* Replays a journal buffer into s (exposed for the fuzz target). */
int store__persist_replay_buf(struct store *s, const char *data, size_t len, char *err, size_t errlen);

/* Lets mu go for ns nanoseconds so that more work gathers, then takes it again: the
 * linger of the watchers (watch.c) and of the GC (gc.c). */
static inline void store__linger(pthread_mutex_t *mu, long ns)
{
    struct timespec ln = { 0, ns };

    pthread_mutex_unlock(mu);
    nanosleep(&ln, NULL);
    pthread_mutex_lock(mu);
}

/* ---- test hooks: for the module's unit tests and fuzz targets, not for callers ---- */

/* Waits until the garbage collector and namespace finalizer have no queued work.
 * 0, or -ETIMEDOUT. For tests and for the simulated cluster's quiescence checks. */
int store_wait_gc_idle(struct store *s, int timeout_ms);

/* Called with the would-be object's name when a write starts its validation (write.c),
 * NULL in production: a test blocks a write there to show what that phase holds. */
extern void (*store__test_prepare_hook)(const char *name);

/* The bytes of fresh Pods' text kept plain at most (obj.c): a test of compression sets
 * 0 so that its Pending Pods are compressed at once. */
extern size_t store__fresh_max_bytes;

#endif

/*
 * watcher.h - the `rayop watcher` process.
 *
 * The watcher lists and watches every type in the watched-type table
 * (watcher/types.c), applies each event to the shared-memory cache (cache/,
 * the watcher is its single writer), maps events to reconcile keys through the
 * event-to-key table and feeds them to the per-kind work queues it serves over
 * a Unix socket (ipc/). `rayop status` reads the segment read-only and asks the
 * queue server for STATUS (cmd/status.c). docs/watcher.md describes both.
 *
 * The mapping functions are exposed for the unit tests (tests/unit/test_watcher_map.c).
 */
#ifndef RAYOP_WATCHER_H
#define RAYOP_WATCHER_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Entry point of `rayop watcher ARGS` (argv[0] is the subcommand name). Returns a
 * process exit code. */
int watcher_main(int argc, char **argv);

/* ---- the declarative tables --------------------------------------------- */

/* One watched type: where it lives, how it is named in the cache, which
 * objects of it we keep (label selector) and whether it is a queue's primary. */
struct watcher_type {
    const char *cache_type;      /* cache type name: "group/version/resource" */
    const char *group;           /* API group, "" for core */
    const char *version;
    const char *plural;
    const char *kind;            /* Kind as in ownerReferences */
    const char *api_version;     /* apiVersion as in ownerReferences */
    const char *label_selector;  /* NULL: every object */
    const char *queue;           /* queue this type is the primary of, or NULL */
    unsigned filter_meta_only;   /* updates only enqueue when generation/labels/annotations changed */
};

extern const struct watcher_type watcher_types[];
extern const size_t watcher_ntypes;

/* One event-to-key rule: an object of child type whose controller
 * ownerReference is (owner_kind, owner_api_version) enqueues its owner's key
 * "ns/ownername" in queue. */
struct watcher_owner_rule {
    const char *child_cache_type;
    const char *owner_kind;
    const char *owner_api_version;  /* compared by API group only, as controller-runtime does */
    const char *queue;
};

extern const struct watcher_owner_rule watcher_owner_rules[];
extern const size_t watcher_nowner_rules;


enum watcher_ev { WATCHER_EV_ADD, WATCHER_EV_UPDATE, WATCHER_EV_DELETE };

/* A key to enqueue: queue name and "namespace/name". */
struct watcher_key {
    const char *queue;
    char key[512];
};

/*
 * Maps one event on an object of watcher_types[t] to the keys it enqueues
 * (at most cap; returns the count, or a negative errno). obj is the new object
 * (the deleted one for DELETE); old is the previous object for UPDATE or NULL
 * when unknown (then the update is treated as a change). Both borrowed.
 * An update whose old object had a different controller owner also enqueues
 * the old owner, as controller-runtime's EnqueueRequestForOwner does.
 */
int watcher_map_event(int t, enum watcher_ev ev, const cJSON *obj, const cJSON *old,
                      struct watcher_key *out, size_t cap);

#endif

/*
 * server_internal.h - what the server*.c files share and nobody else sees:
 * the server struct, the per-request state, and the handler entry points of
 * server_disc.c (discovery, OpenAPI, version, health), server_api.c (resource
 * verbs) and server_watch.c (watch streams).
 */
#ifndef RAYOP_SIM_SERVER_INTERNAL_H
#define RAYOP_SIM_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "kubesim/api/server.h"
#include "kubesim/registry/registry.h"
#include "kubesim/store/store.h"
#include "util/util.h"
#include "kubesim/api/faults.h"

#define SERVER_MAX_EXT     32
#define SERVER_MAX_HEADERS 16

struct ext_route {
    char *prefix;
    size_t len;
    server_handler_fn fn;
    void *arg;
};

struct ext_sub {
    char *plural;
    char *sub;
    server_handler_fn fn;
    void *arg;
};

struct watch_stream;

/* A document rendered from the registry, kept until the registry changes. */
struct doc_cache {
    unsigned long gen;
    bool valid;
    struct buf body;
    char etag[24];
};

struct server {
    struct store *store;
    struct MHD_Daemon *daemon;
    char *host;
    int port;
    char url[128];
    char *cert, *key, *token;
    size_t max_body;
    int log_fd;                      /* request log, -1 when none */

    struct ext_route routes[SERVER_MAX_EXT];
    size_t n_routes;
    struct ext_sub subs[SERVER_MAX_EXT];
    size_t n_subs;
    server_handler_fn prehook;
    void *prehook_arg;
    server_posthook_fn posthook;
    void *posthook_arg;

    pthread_mutex_t mu;              /* guards the watch list and the caches */
    pthread_cond_t cv;               /* signalled when a watch ends */
    struct watch_stream *watches;    /* open streams, for shutdown */
    size_t n_watches;
    atomic_bool stopping;
    bool stopped;

    struct doc_cache openapi_v2;
    struct doc_cache openapi_v3_root;
};

struct req_header {
    char *name;
    char *value;
};

/* Per-request state behind struct server_req.priv. */
struct req_priv {
    struct server_req req;
    struct route route;
    struct route_query query;
    struct buf body;
    struct buf rawquery;             /* "k=v&k=v" (decoded) for the request log */
    bool too_large;
    uint64_t start_ns;
    /* the reply */
    bool replied;
    bool reset;
    int code;
    struct MHD_Response *resp;
    struct req_header headers[SERVER_MAX_HEADERS];
    size_t n_headers;
};

/* server_disc.c: /version, /healthz..., /api, /apis, /apis/G, GV lists, OpenAPI. */
int server_handle_discovery(struct server_req *req);
/* server_api.c: resource paths (all verbs but watch). */
int server_handle_resource(struct server_req *req);
/* server_watch.c: a watch on res (ns "" = all namespaces); name non-empty adds a
 * metadata.name field selector. */
int server_handle_watch(struct server_req *req, const struct reg_resource *res);
/* server_watch.c: cancels every open watch (shutdown). */
void server_watch_cancel_all(struct server *s);

/* admission.c: calls the ValidatingWebhookConfigurations matching op ("CREATE",
 * "UPDATE") on res; 0 when every matching webhook allowed it (or failed with
 * failurePolicy Ignore), else -EPERM / -EIO with *st the answer to send. */
struct store_status;
int admission_validate(struct server *srv, const struct reg_resource *res, const char *op,
                       const char *ns, const char *name, const cJSON *obj, const cJSON *old,
                       struct store_status *st);

/* admission.c: a PATCH (type an enum store_patch_type) of the main resource reviewed
 * as kube-apiserver reviews it: the object the patch produces (a dry run against the
 * current object) as UPDATE, or CREATE when an apply patch creates it. 0 when admitted
 * (or nothing matches, or the patch itself fails: the real patch answers), else as
 * admission_validate. */
struct store_write_opts;
int admission_validate_patch(struct server *srv, const struct reg_resource *res, const char *ns,
                             const char *name, int type, const char *body, size_t len,
                             const struct store_write_opts *w, struct store_status *st);

/* server_api.c helpers shared with server_watch.c */
/* Answers a store failure (*st) as a Status and clears st. */
int server_reply_store_status(struct server_req *req, struct store_status *st);
/* "v1" or "G/V" of a resource into out. */
void server_api_version(const struct reg_resource *res, char *out, size_t n);
/* Applies includeObject (None: rows without objects; Object: full objects) to the
 * Table rendered into b from offset start; Metadata/NULL leave it as rendered. */
int server_table_include(struct buf *b, size_t start, const cJSON *const *items, size_t n,
                         const char *include);
/* server_proto.c: decodes a Kubernetes protobuf body ("k8s\0" envelope) of a v1
 * ConfigMap, Secret, Namespace or ServiceAccount into JSON (*out, caller owns).
 * -EPROTONOSUPPORT for other kinds, -EINVAL for malformed input (err set). */
int server_proto_decode(const char *body, size_t len, cJSON **out, char *err, size_t errlen);
/* Registry lookup under the store's read lock. */
const struct reg_resource *server_find_resource(struct server *s, const char *group,
                                                const char *version, const char *plural);

/*
 * ---- what faults.c (the table) and faults_http.c (prehook, admin area) share: the table struct.
 * Nobody else includes it.
 */

/* Injected-fault kinds counted for /kubesim/status. */
enum faults_kind {
    FK_429, FK_500, FK_503, FK_RESET, FK_DELAY, FK_WATCH_CUT, FK_EXPIRED, FK_COUNT
};

/* Verbs counted for /kubesim/status (the audit verbs, then everything else). */
#define FAULTS_NVERBS 9
extern const char *const faults_verbs[FAULTS_NVERBS];   /* last is "other" */
#define FAULTS_NCODES 600                                /* byCode slots: 0..599 */

struct faults_slot {
    struct faults_rule rule;
    uint64_t rng;              /* splitmix64 state */
    unsigned long matched;     /* requests the rule matched */
    unsigned long fired;       /* times it fired */
};

struct faults {
    pthread_mutex_t mu;        /* guards slots, n and seed */
    struct faults_slot slots[FAULTS_MAX_RULES];
    size_t n;
    uint64_t seed;
    atomic_size_t n_active;    /* n, read without the lock on the hot path */

    /* watch faults (read on every watch request) */
    atomic_uint watch_delay_ms;
    atomic_uint watch_cut_s;
    atomic_long expire_next;

    /* counters */
    atomic_ulong requests;
    atomic_ulong by_verb[FAULTS_NVERBS];
    atomic_ulong by_code[FAULTS_NCODES];
    atomic_bool codes_seen;    /* faults_note_reply was ever called */
    atomic_ulong injected[FK_COUNT];

    struct server *srv;        /* set by faults_install */
    struct store *store;
    char *token;               /* the API token (owned), or NULL */
};

/* Index of verb in faults_verbs ("other" for NULL/unknown). */
size_t faults_verb_index(const char *verb);
/* A decimal in [min, max] (no sign, no spaces): 0 or -EINVAL. */
int faults_parse_ulong(const char *v, unsigned long min, unsigned long max, unsigned long *out);
/* Name of a kind for JSON ("429", "reset", "watchCut", ...). */
const char *faults_kind_name(enum faults_kind k);

#endif

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

#endif

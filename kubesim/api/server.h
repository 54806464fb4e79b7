/*
 * server.h - kubesim's HTTP(S) front end: a libmicrohttpd daemon (one thread per
 * connection, keep-alive, chunked watch streams) that parses Kubernetes API
 * requests (kubesim/api/route.h) and answers them from the store (kubesim/store/store.h) and the
 * registry renderers (kubesim/present/present.h). No object rule lives here.
 *
 * Extension points, for the parts of kubesim that come later (service proxy,
 * pods/NAME/log, the /kubesim/ admin area, fault injection):
 *
 *   server_add_route(srv, "/kubesim/", fn, arg)
 *       fn answers every request whose path starts with the prefix (longest prefix
 *       wins), before built-in routing and after authentication.
 *   server_add_subresource(srv, "services", "proxy", fn, arg)
 *       fn answers resource paths .../RES/NAME/SUB[/rest] for that (plural, sub)
 *       pair (any group/namespace); req->route has ns, name ("svc:port") and rest.
 *   server_set_prehook(srv, fn, arg)
 *       fn sees every request first (before auth). It may sleep (delay), answer
 *       it (server_reply_status with 429/500/503, ...), or drop the connection
 *       (server_reply_reset); it returns SERVER_NEXT to continue normally.
 *
 * Handlers run on the connection's own thread and may block. They answer with
 * exactly one server_reply_* call; a handler that returns without replying gets
 * a 500. Registration must happen before server_start.
 */
#ifndef RAYOP_SIM_SERVER_H
#define RAYOP_SIM_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kubesim/api/route.h"

struct store;
struct server;

struct server_opts {
    const char *host;          /* "127.0.0.1" (IPv4 literal or "localhost") */
    int port;                  /* 0 = pick a free one */
    const char *tls_cert_pem;  /* NULL: plain HTTP; else PEM strings (copied) */
    const char *tls_key_pem;
    const char *token;         /* NULL: no authentication; else the bearer token required */
    const char *request_log;   /* NULL or a file receiving one JSON line per request */
    size_t max_body;           /* request body limit (default 3 MiB) */
};

/* One request as handlers see it. All pointers stay valid until the reply is sent. */
struct server_req {
    struct server *srv;
    const char *method;        /* "GET", ... */
    const char *path;          /* decoded path, without the query */
    const struct route *route;
    const struct route_query *query;
    struct route_accept accept;
    const char *user_agent;    /* "" when absent */
    const char *content_type;  /* "" when absent */
    const char *body;          /* NUL-terminated; "" when none */
    size_t body_len;
    const char *verb;          /* audit verb for the request log; handlers may set it */
    uint64_t rv;               /* resourceVersion a write produced or a GET returned, for the
                                * request log (0: none) */
    const char *header_accept;
    void *conn;                /* struct MHD_Connection *, for handlers that need more headers */
    void *priv;                /* server internals */
};

enum { SERVER_NEXT = 0, SERVER_HANDLED = 1 };

typedef int (*server_handler_fn)(void *arg, struct server_req *req);

/* Streaming reply reader: fill up to max bytes of buf and return the count; return
 * SERVER_STREAM_END to finish cleanly (the terminating chunk is sent) or
 * SERVER_STREAM_ABORT to drop the connection. It may block. */
#define SERVER_STREAM_END   ((ssize_t)-1)
#define SERVER_STREAM_ABORT ((ssize_t)-2)
typedef ssize_t (*server_stream_fn)(void *arg, char *buf, size_t max);

int server_new(const struct server_opts *o, struct store *store, struct server **out,
               char *err, size_t errlen);
int server_add_route(struct server *s, const char *prefix, server_handler_fn fn, void *arg);
int server_add_subresource(struct server *s, const char *plural, const char *sub,
                           server_handler_fn fn, void *arg);
void server_set_prehook(struct server *s, server_handler_fn fn, void *arg);
/* fn sees every request after its reply was decided (code 0 for a reset), on the
 * connection's thread; for counters such as /kubesim/status's requests by code. */
typedef void (*server_posthook_fn)(void *arg, const struct server_req *req, int code);
void server_set_posthook(struct server *s, server_posthook_fn fn, void *arg);
/* Binds and starts serving. 0 or a negative errno with err set. */
int server_start(struct server *s, char *err, size_t errlen);
int server_port(const struct server *s);
/* "http://127.0.0.1:PORT" or "https://..."; valid while s lives. */
const char *server_url(const struct server *s);
/* Stops accepting, ends open watches cleanly (terminating chunk), waits for them
 * (bounded), then stops the daemon. Idempotent. The store is not closed. */
void server_stop(struct server *s);
void server_free(struct server *s);

/* Number of watch streams currently open (tests: no leaked watchers). */
size_t server_open_watches(struct server *s);

/* ---- replies (exactly one per request) ---------------------------------------- */

/* Adds a header to the coming reply (e.g. Warning, Retry-After). 0 or -ENOMEM. */
int server_reply_header(struct server_req *req, const char *name, const char *value);
/* body is copied. */
int server_reply(struct server_req *req, int code, const char *content_type,
                 const char *body, size_t len);
/* body (from malloc) is taken over. */
int server_reply_take(struct server_req *req, int code, const char *content_type,
                      char *body, size_t len);
/* A metav1.Status failure: {"kind":"Status",...,"reason":reason,"message":message,"code":code}. */
int server_reply_status(struct server_req *req, int code, const char *reason,
                        const char *message);
/* A chunked 200 (or code) stream; free_fn(arg) runs when the reply is done. */
int server_reply_stream(struct server_req *req, int code, const char *content_type,
                        server_stream_fn fn, void *arg, void (*free_fn)(void *));
/* The same for a body of exactly size bytes, rendered as it is sent (Content-Length,
 * not chunked): a large LIST without the whole body in memory at once. */
int server_reply_stream_sized(struct server_req *req, int code, const char *content_type,
                              uint64_t size, server_stream_fn fn, void *arg,
                              void (*free_fn)(void *));
/* Closes the connection without an answer (fault injection: "connection reset"). */
int server_reply_reset(struct server_req *req);

/* Appends the request's query as sent on ("?k=v&...", percent-encoded; nothing when there
 * is none): the service and pod proxy pass it on. 0 or -ENOMEM. */
struct buf;
int server_req_query_string(struct server_req *req, struct buf *out);

/* A request header by name (case-insensitive), or NULL. */
const char *server_req_header(struct server_req *req, const char *name);

#endif

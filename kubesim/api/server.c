/*
 * server.c - kubesim's libmicrohttpd daemon: connection/request lifecycle, body
 * accumulation (bounded), authentication, the request log and the dispatch order
 * (the reply helpers are in reply.c):
 *
 *   prehook (fault injection) -> auth -> extension prefixes -> built-in routes
 *   (health, version, discovery, OpenAPI: discovery.c) -> extension
 *   subresources -> resource verbs (resource.c) and watches (watch.c)
 *
 * MHD runs one thread per connection, so handlers may block (a watch reader
 * waits in store_watch_next) without stalling other clients.
 */
#include "kubesim/api/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY (3u << 20)

struct query_enc {
    struct buf *b;
    int n;
    int rc;
};

/* ?key[=value]&... with what is not unreserved percent-encoded */
static enum MHD_Result encode_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    struct query_enc *q = cls;
    const char *parts[2] = { key ? key : "", value };

    (void)kind;
    q->rc |= buf_puts(q->b, q->n++ ? "&" : "?");
    for (int k = 0; k < 2 && parts[k]; k++) {
        if (k)
            q->rc |= buf_puts(q->b, "=");
        for (const unsigned char *c = (const unsigned char *)parts[k]; *c; c++) {
            char e[3] = { '%', hex[*c >> 4], hex[*c & 15] };
            if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                (*c >= '0' && *c <= '9') || strchr("-._~", *c))
                q->rc |= buf_append(q->b, c, 1);
            else
                q->rc |= buf_append(q->b, e, 3);
        }
    }
    return MHD_YES;
}

int server_req_query_string(struct server_req *req, struct buf *out)
{
    struct query_enc q = { out, 0, 0 };

    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, encode_arg, &q);
    return q.rc ? -ENOMEM : 0;
}

/* ---- request log ------------------------------------------------------------ */

static void log_kv(struct buf *b, const char *k, const char *v)
{
    buf_puts(b, ",\"");
    buf_puts(b, k);
    buf_puts(b, "\":");
    buf_append_json_string(b, v ? v : "");
}

/* One JSON line per request, written with one write(2) so readers never see a
 * torn line; the log is an audit-style record tests read while kubesim runs. */
static void request_log_write(struct server *s, struct req_priv *p)
{
    struct server_req *req = &p->req;
    struct timespec ts;
    char tbuf[40];
    struct buf b = { 0 };
    double ms = (double)(util_now_ns() - p->start_ns) / 1e6;

    if (s->log_fd < 0)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    util_format_microtime(&ts, tbuf);
    buf_printf(&b, "{\"time\":\"%s\"", tbuf);
    log_kv(&b, "verb", req->verb ? req->verb : "");
    log_kv(&b, "method", req->method);
    log_kv(&b, "path", req->path);
    log_kv(&b, "query", p->rawquery.data ? p->rawquery.data : "");
    log_kv(&b, "user_agent", req->user_agent);
    buf_printf(&b, ",\"code\":%d,\"duration_ms\":%.3f", p->reset ? 0 : p->code, ms);
    if (req->rv)
        buf_printf(&b, ",\"rv\":%llu", (unsigned long long)req->rv);
    if (p->route.kind == ROUTE_RESOURCE) {
        log_kv(&b, "resource", p->route.plural);
        log_kv(&b, "subresource", p->route.sub);
        log_kv(&b, "namespace", p->route.ns);
        log_kv(&b, "name", p->route.name);
    }
    /* an access log that cannot be written loses the line, not the request */
    if (buf_puts(&b, "}\n") == 0)
        (void)util_write_all(s->log_fd, b.data, b.len);
    buf_free(&b);
}

/* ---- dispatch ------------------------------------------------------------------ */

static bool is_public_path(const struct route *r)
{
    /* system:public-info-viewer lets anonymous clients read these */
    return r->kind == ROUTE_HEALTH || r->kind == ROUTE_VERSION;
}

static bool token_equal(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = na != nb;

    for (size_t i = 0; i < na && i < nb; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

/* 0 = allowed; otherwise a Status reply has been set. */
static int check_auth(struct server *s, struct server_req *req)
{
    const char *h;
    char msg[1400];

    if (!s->token)
        return 0;
    h = server_req_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || !*h) {
        if (is_public_path(req->route))
            return 0;
        server_reply_status(req, 401, "Unauthorized", "Unauthorized");
        return -EACCES;
    }
    if (strncasecmp(h, "Bearer ", 7) == 0 && token_equal(h + 7, s->token))
        return 0;
    if (req->route->kind == ROUTE_RESOURCE)
        snprintf(msg, sizeof(msg),
                 "%s is forbidden: User \"system:anonymous\" cannot %s resource \"%s\" in API "
                 "group \"%s\"%s%s%s", req->route->plural, req->verb ? req->verb : "get",
                 req->route->plural, req->route->group,
                 req->route->ns[0] ? " in the namespace \"" : " at the cluster scope",
                 req->route->ns, req->route->ns[0] ? "\"" : "");
    else
        snprintf(msg, sizeof(msg), "forbidden: User \"system:anonymous\" cannot get path \"%.512s\"",
                 req->path);
    server_reply_status(req, 403, "Forbidden", msg);
    return -EACCES;
}

static int dispatch(struct server *s, struct server_req *req)
{
    const struct route *r = req->route;

    if (s->prehook && s->prehook(s->prehook_arg, req) == SERVER_HANDLED)
        return 0;
    if (check_auth(s, req) < 0)
        return 0;

    /* extension prefixes: longest first */
    {
        const struct ext_route *best = NULL;
        for (size_t i = 0; i < s->n_routes; i++)
            if (strncmp(req->path, s->routes[i].prefix, s->routes[i].len) == 0 &&
                (!best || s->routes[i].len > best->len))
                best = &s->routes[i];
        if (best)
            return best->fn(best->arg, req);
    }

    switch (r->kind) {
    case ROUTE_NONE:
        break;
    case ROUTE_RESOURCE:
        if (r->sub[0])
            for (size_t i = 0; i < s->n_subs; i++)
                if (strcmp(s->subs[i].plural, r->plural) == 0 &&
                    strcmp(s->subs[i].sub, r->sub) == 0)
                    return s->subs[i].fn(s->subs[i].arg, req);
        return api__handle_resource(req);
    default:
        return api__handle_discovery(req);
    }
    return server_reply_status(req, 404, "NotFound",
                               "the server could not find the requested resource");
}

/* ---- MHD callbacks ---------------------------------------------------------- */

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct req_priv *p = cls;

    (void)kind;
    if (p->rawquery.len)
        buf_puts(&p->rawquery, "&");
    buf_puts(&p->rawquery, key ? key : "");
    if (value) {
        buf_puts(&p->rawquery, "=");
        buf_puts(&p->rawquery, value);
    }
    if (route_query_set(&p->query, key, value) < 0)
        return MHD_NO;
    return MHD_YES;
}

static const char *header_or_empty(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "";
}

static void priv_free(struct req_priv *p)
{
    if (!p)
        return;
    if (p->resp)
        MHD_destroy_response(p->resp);
    for (size_t i = 0; i < p->n_headers; i++) {
        free(p->headers[i].name);
        free(p->headers[i].value);
    }
    route_query_free(&p->query);
    buf_free(&p->body);
    buf_free(&p->rawquery);
    free(p);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    struct server *s = cls;
    struct req_priv *p = *con_cls;
    struct server_req *req;
    enum MHD_Result ret;

    (void)version;
    if (!p) {
        p = calloc(1, sizeof(*p));
        if (!p)
            return MHD_NO;
        p->start_ns = util_now_ns();
        route_query_init(&p->query);
        *con_cls = p;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!p->too_large && p->body.len + *upload_size > s->max_body) {
            p->too_large = true;
            buf_free(&p->body);
        }
        if (!p->too_large && buf_append(&p->body, upload, *upload_size) < 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }

    req = &p->req;
    req->srv = s;
    req->priv = p;
    req->conn = conn;
    req->method = method;
    req->path = url;
    route_parse_path(url, &p->route);
    req->route = &p->route;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, p);
    req->query = &p->query;
    req->header_accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    route_parse_accept(req->header_accept, &req->accept);
    req->user_agent = header_or_empty(conn, MHD_HTTP_HEADER_USER_AGENT);
    req->content_type = header_or_empty(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
    req->body = p->body.data ? p->body.data : "";
    req->body_len = p->body.len;
    req->verb = route_verb(method, &p->route, p->query.watch);

    if (p->too_large) {
        char msg[128];
        snprintf(msg, sizeof(msg), "the request body is larger than the limit of %zu bytes",
                 s->max_body);
        server_reply_status(req, 413, "RequestEntityTooLarge", msg);
    } else {
        dispatch(s, req);
    }
    if (!p->replied)
        server_reply_status(req, 500, "InternalError", "an error on the server (\"no reply\") "
                            "has prevented the request from succeeding");
    request_log_write(s, p);
    if (s->posthook)
        s->posthook(s->posthook_arg, req, p->reset ? 0 : p->code);
    if (p->reset)
        return MHD_NO;
    ret = MHD_queue_response(conn, (unsigned)p->code, p->resp);
    MHD_destroy_response(p->resp);
    p->resp = NULL;
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    priv_free(*con_cls);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_debug("microhttpd", "detail", msg, NULL);
}

/* ---- lifecycle ---------------------------------------------------------------- */

int server_new(const struct server_opts *o, struct store *store, struct server **out,
               char *err, size_t errlen)
{
    struct server *s = calloc(1, sizeof(*s));
    int rc = -ENOMEM;

    if (!s)
        goto fail;
    s->store = store;
    s->log_fd = -1;
    s->port = o->port;
    s->max_body = o->max_body ? o->max_body : DEFAULT_MAX_BODY;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->stopping, false);
    s->host = strdup(o->host ? o->host : "127.0.0.1");
    if (!s->host)
        goto fail;
    if (o->tls_cert_pem && o->tls_key_pem) {
        s->cert = strdup(o->tls_cert_pem);
        s->key = strdup(o->tls_key_pem);
        if (!s->cert || !s->key)
            goto fail;
    }
    if (o->token && *o->token && !(s->token = strdup(o->token)))
        goto fail;
    if (o->request_log) {
        s->log_fd = open(o->request_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (s->log_fd < 0) {
            rc = -errno;
            snprintf(err, errlen, "cannot open request log %s: %s", o->request_log,
                     strerror(errno));
            goto fail;
        }
    }
    *out = s;
    return 0;
fail:
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    server_free(s);
    return rc;
}

int server_add_route(struct server *s, const char *prefix, server_handler_fn fn, void *arg)
{
    struct ext_route *r;

    if (s->n_routes >= SERVER_MAX_EXT || !prefix || prefix[0] != '/')
        return -EINVAL;
    r = &s->routes[s->n_routes];
    if (!(r->prefix = strdup(prefix)))
        return -ENOMEM;
    r->len = strlen(prefix);
    r->fn = fn;
    r->arg = arg;
    s->n_routes++;
    return 0;
}

int server_add_subresource(struct server *s, const char *plural, const char *sub,
                           server_handler_fn fn, void *arg)
{
    struct ext_sub *e;

    if (s->n_subs >= SERVER_MAX_EXT || !plural || !sub)
        return -EINVAL;
    e = &s->subs[s->n_subs];
    if (api__dup_pair(&e->plural, plural, &e->sub, sub) < 0)
        return -ENOMEM;
    e->fn = fn;
    e->arg = arg;
    s->n_subs++;
    return 0;
}

void server_set_prehook(struct server *s, server_handler_fn fn, void *arg)
{
    s->prehook = fn;
    s->prehook_arg = arg;
}

void server_set_posthook(struct server *s, server_posthook_fn fn, void *arg)
{
    s->posthook = fn;
    s->posthook_arg = arg;
}

int server_start(struct server *s, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    const char *host = strcmp(s->host, "localhost") == 0 ? "127.0.0.1" : s->host;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)s->port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "--listen host must be an IPv4 address or localhost, not %s",
                 s->host);
        return -EINVAL;
    }
    if (s->cert)
        flags |= MHD_USE_TLS;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)4000,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)3600,
        /* MHD zeroes the connection's pool between keep-alive requests, so its size is
         * paid per request (64 KiB was ~100 k instructions a create, 9% of kubesim's
         * work); 32 KiB still takes request headers of ~28 KB (real clients send < 4 KB;
         * larger get 431). docs/kubesim-store.md. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
        /* without TLS the option list ends here (the key option is never read) */
        s->cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, s->cert,
        MHD_OPTION_HTTPS_MEM_KEY, s->key,
        MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "cannot listen on %s:%d (port in use, or TLS setup failed)",
                 s->host, s->port);
        return -EADDRINUSE;
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (info)
        s->port = info->port;
    snprintf(s->url, sizeof(s->url), "%s://%s:%d", s->cert ? "https" : "http", host, s->port);
    return 0;
}

int server_port(const struct server *s)
{
    return s->port;
}

const char *server_url(const struct server *s)
{
    return s->url;
}

size_t server_open_watches(struct server *s)
{
    size_t n;

    pthread_mutex_lock(&s->mu);
    n = s->n_watches;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void server_stop(struct server *s)
{
    struct timespec dl;

    if (!s || s->stopped)
        return;
    s->stopped = true;
    atomic_store(&s->stopping, true);
    if (!s->daemon)
        return;
    {
        /* the daemon hands the listening socket back: closing it refuses new clients */
        MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
        if (lfd != MHD_INVALID_SOCKET)
            close(lfd);
    }
    api__watch_cancel_all(s);
    /* Give the streams a moment to send their terminating chunk: clients such as
     * client-node informers treat an abrupt close as fatal. */
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 3;
    pthread_mutex_lock(&s->mu);
    while (s->n_watches > 0)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}

void server_free(struct server *s)
{
    if (!s)
        return;
    server_stop(s);
    for (size_t i = 0; i < s->n_routes; i++)
        free(s->routes[i].prefix);
    for (size_t i = 0; i < s->n_subs; i++) {
        free(s->subs[i].plural);
        free(s->subs[i].sub);
    }
    buf_free(&s->openapi_v2.body);
    buf_free(&s->openapi_v3_root.body);
    if (s->log_fd >= 0)
        close(s->log_fd);
    free(s->host);
    free(s->cert);
    free(s->key);
    free(s->token);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

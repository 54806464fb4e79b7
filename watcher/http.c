/*
 * http.c - the watcher's tiny HTTP endpoint (--metrics-addr): /metrics, the
 * operator Pod's one metrics endpoint (the queues' workqueue_* metrics from ipc/,
 * the watcher's and the cache's own and its API client's rest_client_*, pooled with
 * every controller's snapshot by pool.c), /healthz and /readyz (200 once every type
 * has synced).
 *
 * It runs on the watcher's libuv loop, like everything that touches the
 * queues and the cache writer, so it needs no locking. HTTP is reduced to
 * what Prometheus and kubelet probes send: one GET per connection, request
 * head bounded to 8 KiB, answered with Connection: close.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "watcher/internal.h"

#define HEAD_MAX 8192

struct hconn {
    uv_tcp_t tcp;
    struct watcher *w;
    char head[HEAD_MAX];
    size_t len;
    uv_write_t wr;
    struct buf out;
    int responded;
};

static void conn_closed(uv_handle_t *h)
{
    struct hconn *c = h->data;
    buf_free(&c->out);
    free(c);
}

static void conn_close(struct hconn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct hconn *c = h->data;
    (void)hint;
    b->base = c->head + c->len;
    b->len = HEAD_MAX - 1 - c->len;
}

static void written(uv_write_t *wr, int status)
{
    (void)status;
    conn_close(wr->data);
}

/* One metric family with a sample per list/watch stream, labelled by type and namespace. */
enum stream_figure { STREAM_EVENTS, STREAM_LISTS, STREAM_WATCHES, STREAM_SYNCED };

static void stream_family(struct watcher *w, struct buf *b, const char *name, const char *type,
                          const char *help, enum stream_figure f)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (size_t i = 0; i < w->nstreams; i++) {
        const struct wstream *s = &w->streams[i];
        unsigned long long v = f == STREAM_EVENTS ? s->events : f == STREAM_LISTS ? s->lists
                             : f == STREAM_WATCHES ? s->watches : (unsigned long long)s->synced;
        buf_printf(b, "%s{type=\"%s\",namespace=\"%s\"} %llu\n", name,
                   watcher_types[s->t].cache_type, s->ns ? s->ns : "", v);
    }
}

static int metrics_text(struct watcher *w, struct buf *b)
{
    int rc = ipc_server_metrics_text(w->ipc, b);
    if (rc < 0)
        return rc;
    stream_family(w, b, "rayop_watcher_events_total", "counter", "Watch events applied, by type.",
                  STREAM_EVENTS);
    stream_family(w, b, "rayop_watcher_lists_total", "counter",
                  "LISTs started (initial lists and relists).", STREAM_LISTS);
    stream_family(w, b, "rayop_watcher_watches_total", "counter", "WATCH requests started.",
                  STREAM_WATCHES);
    stream_family(w, b, "rayop_watcher_synced", "gauge",
                  "1 once the stream's initial list is applied.", STREAM_SYNCED);
    struct cache_info ci;
    if (cache_info(w->cache, &ci) == 0)
        buf_printf(b, "# HELP rayop_cache_objects Objects in the shared cache.\n"
                      "# TYPE rayop_cache_objects gauge\nrayop_cache_objects %llu\n"
                      "# HELP rayop_cache_bytes_used Live object bytes in the segment.\n"
                      "# TYPE rayop_cache_bytes_used gauge\nrayop_cache_bytes_used %llu\n"
                      "# HELP rayop_cache_bytes_capacity Object area capacity.\n"
                      "# TYPE rayop_cache_bytes_capacity gauge\nrayop_cache_bytes_capacity %llu\n"
                      "# HELP rayop_cache_refused_writes_total Puts refused for lack of space.\n"
                      "# TYPE rayop_cache_refused_writes_total counter\n"
                      "rayop_cache_refused_writes_total %llu\n",
                   (unsigned long long)ci.objects, (unsigned long long)ci.bytes_used,
                   (unsigned long long)ci.blob_bytes, (unsigned long long)ci.refused_writes);
    return kube_client_metrics_text(w->kc, b);
}

static int all_synced(const struct watcher *w)
{
    for (size_t i = 0; i < w->nstreams; i++)
        if (!w->streams[i].synced && !w->streams[i].absent)
            return 0;    /* a type the server does not serve has nothing to wait for */
    return 1;
}

static void respond(struct hconn *c, int code, const char *ctype, const char *body, size_t len)
{
    const char *reason = code == 200 ? "OK" : code == 404 ? "Not Found" :
                         code == 405 ? "Method Not Allowed" : code == 503 ? "Service Unavailable" :
                         "Bad Request";
    c->responded = 1;
    buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
               "Connection: close\r\n\r\n", code, reason, ctype, len);
    if (buf_append(&c->out, body, len) < 0) {
        conn_close(c);
        return;
    }
    uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, written) < 0)
        conn_close(c);
}

static void handle(struct hconn *c)
{
    char method[8], path[256];
    const char *sp1 = memchr(c->head, ' ', c->len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', c->len - (size_t)(sp1 + 1 - c->head)) : NULL;
    if (!sp1 || !sp2 || (size_t)(sp1 - c->head) >= sizeof(method) ||
        (size_t)(sp2 - sp1 - 1) >= sizeof(path)) {
        respond(c, 400, "text/plain", "bad request\n", 12);
        return;
    }
    memcpy(method, c->head, (size_t)(sp1 - c->head));
    method[sp1 - c->head] = '\0';
    memcpy(path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    path[sp2 - sp1 - 1] = '\0';
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        respond(c, 405, "text/plain", "GET only\n", 9);
    } else if (strcmp(path, "/metrics") == 0) {
        struct buf own = { 0 }, m = { 0 };
        if (metrics_text(c->w, &own) < 0 ||
            watcher__metrics_pool(c->w->metrics_dir, own.data ? own.data : "", own.len, &m) < 0)
            respond(c, 503, "text/plain", "metrics unavailable\n", 20);
        else
            respond(c, 200, "text/plain; version=0.0.4", m.data ? m.data : "", m.len);
        buf_free(&own);
        buf_free(&m);
    } else if (strcmp(path, "/healthz") == 0) {
        respond(c, 200, "text/plain", "ok\n", 3);
    } else if (strcmp(path, "/readyz") == 0) {
        if (all_synced(c->w))
            respond(c, 200, "text/plain", "ok\n", 3);
        else
            respond(c, 503, "text/plain", "caches not synced\n", 18);
    } else {
        respond(c, 404, "text/plain", "not found\n", 10);
    }
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct hconn *c = s->data;
    (void)b;
    if (n < 0) {
        conn_close(c);
        return;
    }
    if (c->responded)
        return;
    c->len += (size_t)n;
    c->head[c->len] = '\0';
    if (strstr(c->head, "\r\n\r\n") || strstr(c->head, "\n\n")) {
        uv_read_stop(s);
        handle(c);
    } else if (c->len >= HEAD_MAX - 1) {
        uv_read_stop(s);
        respond(c, 400, "text/plain", "request head too large\n", 23);
    }
}

static void on_conn(uv_stream_t *server, int status)
{
    struct watcher *w = server->data;
    if (status < 0)
        return;
    struct hconn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->w = w;
    uv_tcp_init(w->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) < 0)
        conn_close(c);
}

/* ":8080" and "8080" listen on every address, "HOST:PORT" on HOST; "0" or "" is off. */
int watcher__http_start(struct watcher *w, const char *addr)
{
    char host[128] = "0.0.0.0";
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    const char *port_s = colon ? colon + 1 : addr;
    struct sockaddr_storage sa;
    if (!addr || !*addr || strcmp(addr, "0") == 0)
        return 0;
    if (colon && colon != addr) {
        size_t hl = (size_t)(colon - addr);
        if (hl >= sizeof(host))
            return -EINVAL;
        memcpy(host, addr, hl);
        host[hl] = '\0';
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    if (*end || end == port_s || port < 0 || port > 65535)
        return -EINVAL;
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)&sa) < 0 &&
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)&sa) < 0)
        return -EINVAL;
    int rc = uv_tcp_init(w->loop, &w->http);
    if (rc < 0)
        return rc;
    w->http.data = w;
    w->http_open = 1;
    if ((rc = uv_tcp_bind(&w->http, (const struct sockaddr *)&sa, 0)) < 0 ||
        (rc = uv_listen((uv_stream_t *)&w->http, 64, on_conn)) < 0) {
        log_error("cannot serve metrics", "addr", addr, "error", uv_strerror(rc), NULL);
        return rc;
    }
    struct sockaddr_storage bound;
    int blen = sizeof(bound);
    char bs[64] = "";
    if (uv_tcp_getsockname(&w->http, (struct sockaddr *)&bound, &blen) == 0) {
        char ip[48] = "";
        int p = 0;
        if (bound.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&bound, ip, sizeof(ip));
            p = ntohs(((struct sockaddr_in *)&bound)->sin_port);
        } else {
            uv_ip6_name((struct sockaddr_in6 *)&bound, ip, sizeof(ip));
            p = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
        }
        snprintf(bs, sizeof(bs), "%s:%d", ip, p);
    }
    log_info("serving /metrics, /healthz, /readyz", "addr", bs, NULL);
    return 0;
}

void watcher__http_stop(struct watcher *w)
{
    if (w->http_open) {
        w->http_open = 0;
        uv_close((uv_handle_t *)&w->http, NULL);
    }
}

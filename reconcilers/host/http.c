/*
 * http.c - the controller's HTTP endpoints on libmicrohttpd: Prometheus
 * /metrics on --metrics-addr, /healthz and /readyz on
 * --health-probe-bind-address (controller-runtime serves them on two
 * listeners too). /healthz is ok while the process serves; /readyz asks the
 * host's ready callback (connected to the watcher and the kind's cache types
 * synced). An address with an empty host (":8080") binds all interfaces, as
 * in Go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/host/internal.h"
#include "util/util.h"

struct host_http;
/* which: 0 metrics listener, 1 probe listener, 2 both (shared address). */
struct handler_arg {
    struct host_http *h;
    int which;
};

struct host_http {
    struct handler_arg arg[2];
    struct MHD_Daemon *d[2];   /* 0 metrics, 1 probes (NULL if off or shared) */
    int port[2];
    struct host_metrics *m;
    host_ready_fn ready;
    void *ready_arg;
    bool shared;               /* one listener serves both */
};

enum MHD_Result host_http_reply(struct MHD_Connection *conn, unsigned code, const char *type,
                                const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **con_cls)
{
    (void)version; (void)upload; (void)upload_len; (void)con_cls;
    struct handler_arg *a = cls;
    struct host_http *h = a->h;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return host_http_reply(conn, 405, "text/plain", "method not allowed\n", 19);
    if (a->which != 1 && strcmp(url, "/metrics") == 0) {
        struct buf b = { 0 };
        if (host__metrics_text(h->m, &b) < 0) {
            buf_free(&b);
            return host_http_reply(conn, 500, "text/plain", "out of memory\n", 14);
        }
        enum MHD_Result r = host_http_reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
                                  b.data ? b.data : "", b.len);
        buf_free(&b);
        return r;
    }
    if (a->which != 0 && strcmp(url, "/healthz") == 0)
        return host_http_reply(conn, 200, "text/plain", "ok", 2);
    if (a->which != 0 && strcmp(url, "/readyz") == 0) {
        if (h->ready && !h->ready(h->ready_arg))
            return host_http_reply(conn, 503, "text/plain", "not ready", 9);
        return host_http_reply(conn, 200, "text/plain", "ok", 2);
    }
    return host_http_reply(conn, 404, "text/plain", "not found\n", 10);
}

static int start_one(struct host_http *h, int slot, int which, const char *addr)
{
    char host[100];
    int port;
    if (host_parse_addr(addr, host, sizeof(host), &port) < 0) {
        log_error("bad listen address", "address", addr, NULL);
        return -EINVAL;
    }
    h->port[slot] = -1;
    if (port < 0)
        return 0;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (!host[0] || strcmp(host, "0.0.0.0") == 0)
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        log_error("listen address must be an IPv4 address", "address", addr, NULL);
        return -EINVAL;
    }
    struct handler_arg *a = &h->arg[slot];
    a->h = h;
    a->which = which;
    h->d[slot] = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                                  0, NULL, NULL, handle, a,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                  MHD_OPTION_END);
    if (!h->d[slot]) {
        log_error("cannot listen", "address", addr, NULL);
        return -EADDRINUSE;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d[slot], MHD_DAEMON_INFO_BIND_PORT);
    h->port[slot] = info ? info->port : port;
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", h->port[slot]);
    log_info(which == 0 ? "serving metrics" : which == 1 ? "serving health probes"
                                                           : "serving metrics and health probes",
             "address", addr, "port", ps, NULL);
    return 0;
}

int host__http_start(const char *metrics_addr, const char *probe_addr, struct host_metrics *m,
                     host_ready_fn ready, void *ready_arg, struct host_http **out)
{
    struct host_http *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->m = m;
    h->ready = ready;
    h->ready_arg = ready_arg;
    h->port[0] = h->port[1] = -1;
    int rc;
    char mh[100], ph[100];
    int mp, pp;
    if (host_parse_addr(metrics_addr, mh, sizeof(mh), &mp) < 0 ||
        host_parse_addr(probe_addr, ph, sizeof(ph), &pp) < 0) {
        log_error("bad listen address", "metrics", metrics_addr, "probes", probe_addr, NULL);
        free(h);
        return -EINVAL;
    }
    if (mp > 0 && mp == pp && strcmp(mh, ph) == 0) {
        h->shared = true;
        rc = start_one(h, 0, 2, metrics_addr);
        h->port[1] = h->port[0];
    } else {
        rc = start_one(h, 0, 0, metrics_addr);
        if (rc == 0)
            rc = start_one(h, 1, 1, probe_addr);
    }
    if (rc < 0) {
        host__http_stop(h);
        return rc;
    }
    *out = h;
    return 0;
}

int host__http_port(struct host_http *h, int which)
{
    return h && which >= 0 && which < 2 ? h->port[which] : -1;
}

void host__http_stop(struct host_http *h)
{
    if (!h)
        return;
    for (int i = 0; i < 2; i++)
        if (h->d[i])
            MHD_stop_daemon(h->d[i]);
    free(h);
}

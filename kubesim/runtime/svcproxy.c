/*
 * svcproxy.c - kube-proxy for run Pods, in its old userspace mode: traffic a Pod sends to a
 * Service's ClusterIP:port reaches a ready endpoint of that Service. The node namespace
 * treats the whole Service range as local (net.c), so one thread there listens on every
 * TCP ClusterIP:port of the stored Services (synced about once a second while any Pod is
 * run) and, per accepted connection, picks the next ready address of the Service's
 * Endpoints for that port (round robin) and pumps bytes both ways on a thread of its own.
 * An endpoint that is not a run Pod (a simulated one) has no route: the connection is
 * closed, as a refused one would be. The `kubernetes` Service (RUNTIME_SERVICE_IP) is the
 * API relay's (net.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kubesim/runtime/internal.h"
#include "kubesim/store/store.h"

#define SVC_SYNC_MS 1000
#define SVC_CONNECT_MS 3000
#define SVC_MAX_LISTEN 256

struct svc_listener {
    char ns[64], name[254], port_name[64];
    char ip[INET_ADDRSTRLEN];
    int port;
    int fd;
    unsigned next;              /* round robin over the endpoints */
    bool seen;
    struct svc_listener *nx;
};

struct svc_conn {
    struct runtime *rt;
    int a;
    char ip[INET_ADDRSTRLEN];
    int port;
};

static void *conn_main(void *arg)
{
    struct svc_conn *c = arg;
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port) };
    int b = runtime__node_socket(c->rt, SOCK_STREAM | SOCK_NONBLOCK), err = 0;
    socklen_t el = sizeof(err);
    struct pollfd pw;

    if (b < 0 || inet_pton(AF_INET, c->ip, &to.sin_addr) != 1)
        goto fail;
    if (connect(b, (struct sockaddr *)&to, sizeof(to)) < 0 && errno != EINPROGRESS)
        goto fail;
    pw.fd = b;
    pw.events = POLLOUT;
    if (poll(&pw, 1, SVC_CONNECT_MS) != 1 || getsockopt(b, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ||
        err || fcntl(b, F_SETFL, fcntl(b, F_GETFL) & ~O_NONBLOCK) < 0)
        goto fail;
    runtime__pump(c->rt, c->a, b);    /* closes both */
    free(c);
    return NULL;
fail:
    if (b >= 0)
        close(b);
    close(c->a);
    free(c);
    return NULL;
}

/* The n-th (mod their count) ready IPv4 address of an Endpoints object serving the Service
 * port named port_name ("" unnamed) over TCP, with the endpoint's port: 0, or -ENOENT. */
int runtime__svc_endpoint(const cJSON *endpoints, const char *port_name, unsigned n, char *ip,
                          size_t iplen, int *port)
{
    const cJSON *ss, *pt, *a;
    int count = 0;

    for (int pass = 0; pass < 2; pass++) {
        int i = 0;
        cJSON_ArrayForEach(ss, kobj_get(endpoints, "subsets")) {
            int num = -1;
            cJSON_ArrayForEach(pt, kobj_get(ss, "ports")) {
                const char *pn = kobj_str(pt, "name");
                const char *proto = kobj_str(pt, "protocol");
                if (!strcmp(pn ? pn : "", port_name) && (!proto || !strcmp(proto, "TCP")))
                    num = (int)runtime__jnum(pt, "port", -1);
            }
            if (num <= 0 || num > 65535)
                continue;
            cJSON_ArrayForEach(a, kobj_get(ss, "addresses")) {
                const char *v = kobj_str(a, "ip");
                struct in_addr ia;
                if (!v || inet_pton(AF_INET, v, &ia) != 1)
                    continue;
                if (pass == 1 && (unsigned)i == n % (unsigned)count) {
                    snprintf(ip, iplen, "%s", v);
                    *port = num;
                    return 0;
                }
                i++;
            }
        }
        if (pass == 0 && !(count = i))
            return -ENOENT;
    }
    return -ENOENT;
}

static void on_accept(struct runtime *rt, struct svc_listener *l)
{
    struct store_obj *ep = NULL;
    struct store_status st = { 0 };
    struct svc_conn *c;
    int a = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC), rc;

    if (a < 0)
        return;
    if (!(c = calloc(1, sizeof(*c))) || !rt->r_ep ||
        store_get(rt->store, rt->r_ep, l->ns, l->name, &ep, &st) < 0)
        goto drop;
    c->rt = rt;
    c->a = a;
    rc = runtime__svc_endpoint(store_obj_json(ep), l->port_name, l->next++, c->ip, sizeof(c->ip), &c->port);
    store_obj_unref(ep);
    if (rc < 0 || runtime__thread_detached(rt, conn_main, c) < 0)
        goto drop;
    store_status_clear(&st);
    return;
drop:
    store_status_clear(&st);
    free(c);
    close(a);   /* no ready endpoint: as refused */
}

/* A listener for ip:port in the node namespace: the fd or -errno. */
static int listen_on(struct runtime *rt, const char *ip, int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int one = 1, s = runtime__node_socket(rt, SOCK_STREAM | SOCK_NONBLOCK), rc;

    if (s < 0)
        return s;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
        close(s);
        return -EINVAL;
    }
    if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 128) < 0) {
        rc = -errno;
        close(s);
        return rc;
    }
    return s;
}

static struct svc_listener *find(struct svc_listener *ls, const char *ip, int port)
{
    for (; ls; ls = ls->nx)
        if (ls->port == port && !strcmp(ls->ip, ip))
            return ls;
    return NULL;
}

static void add_service(struct runtime *rt, struct svc_listener **ls, size_t *n, const struct store_obj *o)
{
    const cJSON *spec = kobj_get(store_obj_json(o), "spec"), *pt;
    const char *ip = kobj_str(spec, "clusterIP"), *type = kobj_str(spec, "type");
    struct in_addr ia;

    if (!ip || inet_pton(AF_INET, ip, &ia) != 1 || !strcmp(ip, RUNTIME_SERVICE_IP) ||
        (type && !strcmp(type, "ExternalName")))
        return;
    cJSON_ArrayForEach(pt, kobj_get(spec, "ports")) {
        const char *proto = kobj_str(pt, "protocol"), *pn = kobj_str(pt, "name");
        int port = (int)runtime__jnum(pt, "port", -1);
        struct svc_listener *l;
        if ((proto && strcmp(proto, "TCP")) || port <= 0 || port > 65535)
            continue;
        if (!(l = find(*ls, ip, port))) {
            int fd;
            if (*n >= SVC_MAX_LISTEN || !(l = calloc(1, sizeof(*l))))
                continue;
            if ((fd = listen_on(rt, ip, port)) < 0) {
                log_warn("runtime: service proxy cannot listen", "service", o->name,
                         "ip", ip, "error", strerror(-fd), NULL);
                free(l);
                continue;
            }
            l->fd = fd;
            l->port = port;
            snprintf(l->ip, sizeof(l->ip), "%s", ip);
            l->nx = *ls;
            *ls = l;
            (*n)++;
        }
        snprintf(l->ns, sizeof(l->ns), "%s", o->ns);
        snprintf(l->name, sizeof(l->name), "%s", o->name);
        snprintf(l->port_name, sizeof(l->port_name), "%s", pn ? pn : "");
        l->seen = true;
    }
}

/* Listeners for the stored Services while any Pod is run; none otherwise. */
static void sync_listeners(struct runtime *rt, struct svc_listener **ls, size_t *n)
{
    struct store_list_opts lo = { 0 };
    struct store_list list = { 0 };
    struct store_status st = { 0 };
    struct svc_listener **pp;
    bool any;

    for (struct svc_listener *l = *ls; l; l = l->nx)
        l->seen = false;
    pthread_mutex_lock(&rt->mu);
    any = rt->pods != NULL;
    pthread_mutex_unlock(&rt->mu);
    if (any && rt->r_svc && store_list(rt->store, rt->r_svc, "", &lo, &list, &st) == 0) {
        for (size_t i = 0; i < list.n; i++)
            add_service(rt, ls, n, list.items[i]);
        store_list_free(&list);
    }
    store_status_clear(&st);
    for (pp = ls; *pp;) {
        struct svc_listener *l = *pp;
        if (l->seen) {
            pp = &l->nx;
            continue;
        }
        *pp = l->nx;
        close(l->fd);
        free(l);
        (*n)--;
    }
}

static void *svc_main(void *arg)
{
    struct runtime *rt = arg;
    struct svc_listener *ls = NULL, *who[SVC_MAX_LISTEN + 1];
    struct pollfd fds[SVC_MAX_LISTEN + 1];
    uint64_t next_sync = 0;
    size_t n = 0;

    for (;;) {
        uint64_t now = runtime__now_ms();
        size_t nf = 0;

        if (runtime__stopping(rt))
            break;
        if (now >= next_sync) {
            sync_listeners(rt, &ls, &n);
            next_sync = now + SVC_SYNC_MS;
        }
        fds[nf].fd = rt->svc_wake[0];
        fds[nf++].events = POLLIN;
        for (struct svc_listener *l = ls; l && nf < SVC_MAX_LISTEN + 1; l = l->nx) {
            who[nf] = l;
            fds[nf].fd = l->fd;
            fds[nf++].events = POLLIN;
        }
        if (poll(fds, nf, (int)(next_sync > now ? next_sync - now : 0)) <= 0)
            continue;
        if (fds[0].revents) {
            char drain[64];
            while (read(rt->svc_wake[0], drain, sizeof(drain)) > 0)
                ;
        }
        for (size_t i = 1; i < nf; i++)
            if (fds[i].revents & POLLIN)
                on_accept(rt, who[i]);
    }
    while (ls) {
        struct svc_listener *l = ls;
        ls = l->nx;
        close(l->fd);
        free(l);
    }
    return NULL;
}

int runtime__svc_start(struct runtime *rt)
{
    int rc;

    if (pipe2(rt->svc_wake, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    if ((rc = pthread_create(&rt->svc_thread, NULL, svc_main, rt)) != 0)
        return -rc;
    rt->svc_started = true;
    return 0;
}

void runtime__svc_stop(struct runtime *rt)
{
    if (rt->svc_started) {
        /* rt->stop is set: the thread ends once woken */
        if (write(rt->svc_wake[1], "x", 1) < 0)
            (void)0;
        pthread_join(rt->svc_thread, NULL);
        rt->svc_started = false;
    }
    for (int i = 0; i < 2; i++)
        if (rt->svc_wake[i] >= 0) {
            close(rt->svc_wake[i]);
            rt->svc_wake[i] = -1;
        }
}

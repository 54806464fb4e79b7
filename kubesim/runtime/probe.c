/*
 * probe.c - liveness and readiness probes as the kubelet runs them: httpGet (a GET to the
 * Pod IP, 200-399 passes), tcpSocket (a connect) and exec (the command inside the container,
 * exit 0 passes), after initialDelaySeconds every periodSeconds, each bounded by
 * timeoutSeconds; readiness flips after successThreshold/failureThreshold results in a row,
 * and failureThreshold liveness failures kill the container. HTTP and TCP probes run on the
 * runtime thread from sockets in the node namespace (non-blocking, bounded by the timeout);
 * exec probes are processes whose pidfd the thread polls.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kubesim/runtime/internal.h"

int runtime__port_of(const struct rt_ctr *c, const cJSON *port)
{
    const cJSON *p;

    if (cJSON_IsNumber(port))
        return (int)port->valuedouble;
    if (!cJSON_IsString(port))
        return -1;
    cJSON_ArrayForEach(p, kobj_get(c->spec, "ports"))
        if (kobj_str(p, "name") && !strcmp(kobj_str(p, "name"), port->valuestring))
            return (int)runtime__jnum(p, "containerPort", -1);
    return atoi(port->valuestring) > 0 ? atoi(port->valuestring) : -1;
}

static long tnum(const cJSON *spec, const char *k, long def, long min)
{
    long v = runtime__jnum(spec, k, def);
    return v < min ? min : v;
}

void runtime__probe_reset(struct rt_ctr *c, uint64_t now)
{
    struct rt_probe *prs[2] = { &c->live, &c->rdy };

    for (int k = 0; k < 2; k++) {
        prs[k]->fails = prs[k]->oks = 0;
        prs[k]->next_ms = now + (uint64_t)tnum(prs[k]->spec, "initialDelaySeconds", 0, 0) * 1000;
    }
}

void runtime__probe_cancel(struct rt_ctr *c)
{
    struct rt_probe *prs[2] = { &c->live, &c->rdy };

    for (int k = 0; k < 2; k++)
        if (prs[k]->exec_fd >= 0) {
            siginfo_t si;
            kill(prs[k]->exec_pid, SIGKILL);
            waitid(P_PIDFD, (id_t)prs[k]->exec_fd, &si, WEXITED);
            close(prs[k]->exec_fd);
            prs[k]->exec_fd = -1;
            prs[k]->exec_pid = 0;
        }
}

uint64_t runtime__probe_next(const struct rt_ctr *c)
{
    uint64_t n = UINT64_MAX;
    const struct rt_probe *prs[2] = { &c->live, &c->rdy };

    for (int k = 0; k < 2; k++) {
        if (!prs[k]->spec)
            continue;
        if (prs[k]->exec_fd >= 0) {
            if (prs[k]->exec_deadline_ms < n)
                n = prs[k]->exec_deadline_ms;
        } else if (prs[k]->next_ms < n) {
            n = prs[k]->next_ms;
        }
    }
    return n;
}

/* Connects to ip:port from the node namespace within ms; the socket or -errno. */
static int probe_connect(struct runtime *rt, const char *ip, int port, int ms)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct pollfd pw;
    int s = runtime__node_socket(rt, SOCK_STREAM | SOCK_NONBLOCK), err = 0;
    socklen_t el = sizeof(err);

    if (s < 0)
        return s;
    inet_pton(AF_INET, ip, &a.sin_addr);
    if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
        err = errno;
        close(s);
        return -err;
    }
    pw.fd = s;
    pw.events = POLLOUT;
    if (poll(&pw, 1, ms) != 1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
        close(s);
        return -(err ? err : ETIMEDOUT);
    }
    return s;
}

int runtime__http_status(const char *resp, size_t len, int *code)
{
    size_t i = 5;

    /* "HTTP/1.1 200 OK": the version, one space, three digits, then a space or the line end */
    if (len < 12 || memcmp(resp, "HTTP/", 5))
        return -EPROTO;
    while (i < len && resp[i] != ' ' && resp[i] != '\r' && resp[i] != '\n' && i < 16)
        i++;
    if (i + 5 > len || resp[i] != ' ')
        return -EPROTO;
    for (int k = 1; k <= 3; k++)
        if (resp[i + k] < '0' || resp[i + k] > '9')
            return -EPROTO;
    if (resp[i + 4] != ' ' && resp[i + 4] != '\r' && resp[i + 4] != '\n')
        return -EPROTO;
    *code = (resp[i + 1] - '0') * 100 + (resp[i + 2] - '0') * 10 + (resp[i + 3] - '0');
    return 0;
}

static bool http_probe(struct runtime *rt, const char *ip, int port, const char *path, int ms,
                       char *why, size_t wl)
{
    char req[1024], resp[256];
    uint64_t end = runtime__now_ms() + (uint64_t)ms;
    size_t got = 0;
    int s = probe_connect(rt, ip, port, ms), code = 0;

    if (s < 0) {
        snprintf(why, wl, "Get \"http://%s:%d%s\": dial tcp %s:%d: connect: %s", ip, port,
                 path, ip, port, strerror(-s));
        return false;
    }
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kube-probe/1.33\r\n"
             "Accept: */*\r\nConnection: close\r\n\r\n", path, ip, port);
    if (util_write_all(s, req, strlen(req)) < 0) {
        close(s);
        snprintf(why, wl, "Get \"http://%s:%d%s\": write failed", ip, port, path);
        return false;
    }
    while (got < sizeof(resp) - 1 && !memchr(resp, '\n', got)) {
        struct pollfd pr = { .fd = s, .events = POLLIN };
        uint64_t now = runtime__now_ms();
        ssize_t n;
        if (now >= end || poll(&pr, 1, (int)(end - now)) != 1)
            break;
        if ((n = read(s, resp + got, sizeof(resp) - 1 - got)) <= 0)
            break;
        got += (size_t)n;
    }
    close(s);
    if (runtime__http_status(resp, got, &code) < 0) {
        snprintf(why, wl, "Get \"http://%s:%d%s\": context deadline exceeded (Client.Timeout "
                 "exceeded while awaiting headers)", ip, port, path);
        return false;
    }
    if (code >= 200 && code < 400)
        return true;
    snprintf(why, wl, "HTTP probe failed with statuscode: %d", code);
    return false;
}

bool runtime__probe_apply(struct rt_ctr *c, struct rt_probe *pr, bool ok, bool *killp)
{
    long succ = tnum(pr->spec, "successThreshold", 1, 1);
    long fail = tnum(pr->spec, "failureThreshold", 3, 1);

    if (ok) {
        pr->fails = 0;
        pr->oks++;
    } else {
        pr->oks = 0;
        pr->fails++;
    }
    if (pr == &c->rdy) {
        if (ok && !c->ready && pr->oks >= succ) {
            c->ready = true;
            return true;
        }
        if (!ok && c->ready && pr->fails >= fail) {
            c->ready = false;
            return true;
        }
        return false;
    }
    if (!ok && pr->fails >= fail) {
        *killp = true;
        return true;
    }
    return false;
}

static void unhealthy(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c,
                      struct rt_probe *pr, const char *why)
{
    char fp[128];
    snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
    runtime__event(rt, p, "Warning", "Unhealthy", fp, "%s probe failed: %s",
                   pr == &c->live ? "Liveness" : "Readiness", why);
}

bool runtime__probe_tick(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, uint64_t now,
                         bool *killp)
{
    struct rt_probe *prs[2] = { &c->live, &c->rdy };
    bool changed = false;

    *killp = false;
    for (int k = 0; k < 2 && !*killp; k++) {
        struct rt_probe *pr = prs[k];
        const cJSON *h, *t, *e;
        long timeout_ms = tnum(pr->spec, "timeoutSeconds", 1, 1) * 1000;
        char why[400] = "";
        bool ok;

        if (!pr->spec)
            continue;
        if (pr->exec_fd >= 0) {
            if (now >= pr->exec_deadline_ms) {
                /* timed out: killed, and counted as a failure when it is reaped */
                kill(pr->exec_pid, SIGKILL);
            }
            continue;
        }
        if (now < pr->next_ms)
            continue;
        pr->next_ms = now + (uint64_t)tnum(pr->spec, "periodSeconds", 10, 1) * 1000;
        if ((h = kobj_get(pr->spec, "httpGet"))) {
            int port = runtime__port_of(c, kobj_get(h, "port"));
            const char *path = kobj_str(h, "path") ? kobj_str(h, "path") : "/";
            ok = port > 0 && http_probe(rt, p->ip, port, path, (int)timeout_ms, why, sizeof(why));
        } else if ((t = kobj_get(pr->spec, "tcpSocket"))) {
            int port = runtime__port_of(c, kobj_get(t, "port"));
            int s = port > 0 ? probe_connect(rt, p->ip, port, (int)timeout_ms) : -EINVAL;
            ok = s >= 0;
            if (ok)
                close(s);
            else
                snprintf(why, sizeof(why), "dial tcp %s:%d: connect: %s", p->ip, port, strerror(-s));
        } else if ((e = kobj_get(pr->spec, "exec"))) {
            if (runtime__exec_spawn(rt, p, c, kobj_get(e, "command"), &pr->exec_pid, &pr->exec_fd) == 0) {
                pr->exec_deadline_ms = now + (uint64_t)timeout_ms;
                continue;
            }
            ok = false;
            snprintf(why, sizeof(why), "exec: cannot start the command");
        } else {
            continue;   /* grpc: not modelled */
        }
        if (!ok)
            unhealthy(rt, p, c, pr, why);
        changed |= runtime__probe_apply(c, pr, ok, killp);
    }
    return changed;
}

bool runtime__probe_exec_done(struct runtime *rt, struct rt_ctr *c, struct rt_probe *pr, int status,
                              bool *killp)
{
    (void)rt;
    close(pr->exec_fd);
    pr->exec_fd = -1;
    pr->exec_pid = 0;
    *killp = false;
    return runtime__probe_apply(c, pr, status == 0, killp);
}

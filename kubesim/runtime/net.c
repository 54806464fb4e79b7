/*
 * net.c - the runtime's network, all of it inside namespaces kubesim creates (never the
 * host's): a node namespace (held by a sandbox process) with the `kubernetes` Service IP
 * on its loopback, and per Pod a veth pair from the node namespace to the Pod's eth0, which
 * holds the Pod IP (/32, default route via a link-local gateway on the node side, as
 * Calico does). kubesim reaches Pod IPs with sockets made in the node namespace
 * (runtime__node_socket: probes); Pods reach kubesim through a TCP relay listening on
 * RUNTIME_SERVICE_IP:443 in the node namespace and connecting to 127.0.0.1:PORT on the host
 * side (TLS passes through untouched). The links are configured with iproute2's `ip -batch`
 * run in the namespace by nsenter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kubesim/runtime/internal.h"

#define RELAY_BUF 65536

extern char **environ;

/* Runs `nsenter -t PID -n ip -batch FILE` with the commands in text; 0 or -EIO with err. */
static int ip_batch(struct runtime *rt, pid_t pid, const char *name, const char *text,
                    char *err, size_t errlen)
{
    char file[600], pids[16], log[620], *out = NULL;
    char *argv[] = { (char *)"nsenter", (char *)"-t", pids, (char *)"-n", (char *)"ip",
                     (char *)"-batch", file, NULL };
    posix_spawn_file_actions_t fa;
    pid_t child;
    int rc, status;

    snprintf(file, sizeof(file), "%s/ip-%s.batch", rt->dir, name);
    snprintf(log, sizeof(log), "%s/ip-%s.out", rt->dir, name);
    snprintf(pids, sizeof(pids), "%d", (int)pid);
    if ((rc = runtime__write_file(file, text, strlen(text), 0600)) < 0)
        return rc;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    rc = posix_spawnp(&child, "nsenter", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        snprintf(err, errlen, "nsenter: %s", strerror(rc));
        return -rc;
    }
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
    if (rc < 0) {
        runtime__read_file(log, 300, &out, NULL);
        snprintf(err, errlen, "network setup (ip -batch) failed: %s", out ? out : "");
        free(out);
    }
    unlink(file);
    unlink(log);
    return rc;
}

int runtime__node_socket(struct runtime *rt, int type)
{
    int s, e;

    if (rt->node_netns < 0 || setns(rt->node_netns, CLONE_NEWNET) < 0)
        return -EIO;
    s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    e = errno;
    if (setns(rt->host_netns, CLONE_NEWNET) < 0)
        log_error("runtime: cannot return to the host network namespace", NULL);
    return s < 0 ? -e : s;
}

int runtime__net_pod(struct runtime *rt, struct rt_pod *p, char *err, size_t errlen)
{
    char node[600], pod[600], name[32];
    int rc;

    snprintf(name, sizeof(name), "vp%d", p->idx);
    snprintf(node, sizeof(node),
             "link add %s type veth peer name eth0 netns %d\n"
             "link set %s up\n"
             "addr add 169.254.1.1/32 dev %s\n"
             "route add %s/32 dev %s\n", name, (int)p->sandbox, name, name, p->ip, name);
    snprintf(pod, sizeof(pod),
             "link set lo up\n"
             "addr add %s/32 dev eth0\n"
             "link set eth0 up\n"
             "route add 169.254.1.1/32 dev eth0 scope link\n"
             "route add default via 169.254.1.1 dev eth0\n", p->ip);
    if ((rc = ip_batch(rt, rt->node, name, node, err, errlen)) < 0)
        return rc;
    return ip_batch(rt, p->sandbox, p->uid, pod, err, errlen);
}

/* ---- the relay to the API server ----------------------------------------------------------- */

void runtime__pump(struct runtime *rt, int a, int b)
{
    char *buf = malloc(RELAY_BUF);
    struct pollfd fds[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };

    while (buf) {
        int n = poll(fds, 2, 500);
        if (runtime__stopping(rt) || n < 0)
            break;
        if (n == 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(fds[i].fd, buf, RELAY_BUF);
            if (r <= 0 || util_write_all(fds[1 - i].fd, buf, (size_t)r) < 0)
                goto done;
        }
    }
done:
    free(buf);
    close(a);
    close(b);
}

struct detached {
    struct runtime *rt;
    void *(*fn)(void *);
    void *arg;
};

static void *detached_main(void *arg)
{
    struct detached d = *(struct detached *)arg;

    free(arg);
    d.fn(d.arg);
    __atomic_sub_fetch(&d.rt->relays_active, 1, __ATOMIC_RELEASE);
    return NULL;
}

int runtime__thread_detached(struct runtime *rt, void *(*fn)(void *), void *arg)
{
    struct detached *d = malloc(sizeof(*d));
    int rc;

    if (!d)
        return -ENOMEM;
    *d = (struct detached){ rt, fn, arg };
    __atomic_add_fetch(&rt->relays_active, 1, __ATOMIC_ACQUIRE);
    if ((rc = util_thread_detached(detached_main, d)) < 0) {
        __atomic_sub_fetch(&rt->relays_active, 1, __ATOMIC_RELEASE);
        free(d);
    }
    return rc;
}

struct relay_conn {
    struct runtime *rt;
    int a, b;
};

static void *relay_pump(void *arg)
{
    struct relay_conn *rc = arg;

    runtime__pump(rc->rt, rc->a, rc->b);
    free(rc);
    return NULL;
}

static void *relay_accept(void *arg)
{
    struct runtime *rt = arg;

    for (;;) {
        struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)rt->conf.api_port) };
        struct relay_conn *rc;
        int a = accept4(rt->relay_lfd, NULL, NULL, SOCK_CLOEXEC), b;
        if (a < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;      /* shut down */
        }
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (b < 0 || connect(b, (struct sockaddr *)&to, sizeof(to)) < 0 ||
            !(rc = calloc(1, sizeof(*rc)))) {
            close(a);
            if (b >= 0)
                close(b);
            continue;
        }
        *rc = (struct relay_conn){ rt, a, b };
        if (runtime__thread_detached(rt, relay_pump, rc) < 0) {
            close(a);
            close(b);
            free(rc);
        }
    }
    return NULL;
}

/* ---- node namespace ----------------------------------------------------------------------- */

int runtime__net_start(struct runtime *rt)
{
    char *argv[] = { (char *)"kubesim", (char *)"__runtime-sandbox", (char *)"200",
                     (char *)"kubesim-node", NULL };
    char path[64], err[400], log[300], ok;
    int pfd[2], rc, fd;
    struct pollfd pw;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(RUNTIME_SERVICE_PORT) };
    int one = 1;

    if ((rt->host_netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -errno;
    snprintf(log, sizeof(log), "%s/node.log", rt->dir);
    rc = runtime__spawn(rt, argv, log, pfd[1], 200, &rt->node, &rt->node_fd);
    close(pfd[1]);
    pw.fd = pfd[0];
    pw.events = POLLIN;
    if (rc == 0 && (poll(&pw, 1, 10000) != 1 || read(pfd[0], &ok, 1) != 1))
        rc = -EIO;
    close(pfd[0]);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)rt->node);
    if ((rt->node_netns = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if ((rc = ip_batch(rt, rt->node, "node", "link set lo up\naddr add " RUNTIME_SERVICE_IP "/32 dev lo\n"
                       /* the whole Service range is local here (AnyIP): the Service proxy
                        * binds each ClusterIP:port without an address per Service */
                       "route add local " RUNTIME_SERVICE_CIDR " dev lo\n",
                       err, sizeof(err))) < 0) {
        log_warn("runtime: node network", "error", err, NULL);
        return rc;
    }
    /* /proc/sys/net is the opener's namespace: Pod-to-Pod traffic is forwarded there */
    if (setns(rt->node_netns, CLONE_NEWNET) < 0)
        return -errno;
    if ((fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC)) >= 0) {
        if (write(fd, "1", 1) != 1)
            log_warn("runtime: ip_forward in the node namespace", NULL);
        close(fd);
    }
    rt->relay_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setns(rt->host_netns, CLONE_NEWNET);
    if (rt->relay_lfd < 0)
        return -errno;
    setsockopt(rt->relay_lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    inet_pton(AF_INET, RUNTIME_SERVICE_IP, &a.sin_addr);
    if (bind(rt->relay_lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(rt->relay_lfd, 128) < 0)
        return -errno;
    if ((rc = pthread_create(&rt->relay_thread, NULL, relay_accept, rt)) != 0)
        return -rc;
    rt->relay_started = true;
    return 0;
}

void runtime__net_stop(struct runtime *rt)
{
    if (rt->relay_lfd >= 0) {
        shutdown(rt->relay_lfd, SHUT_RDWR);
        if (rt->relay_started)
            pthread_join(rt->relay_thread, NULL);
        close(rt->relay_lfd);
        rt->relay_lfd = -1;
    }
    /* the pumps see rt->stop within their poll period; they use rt until they end */
    for (int i = 0; i < 400 && __atomic_load_n(&rt->relays_active, __ATOMIC_ACQUIRE) > 0; i++) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (rt->node > 0) {
        siginfo_t si;
        kill(rt->node, SIGKILL);
        if (rt->node_fd >= 0) {
            waitid(P_PIDFD, (id_t)rt->node_fd, &si, WEXITED);
            close(rt->node_fd);
        }
        rt->node = 0;
    }
    if (rt->node_netns >= 0)
        close(rt->node_netns);
    if (rt->host_netns >= 0)
        close(rt->host_netns);
    rt->node_netns = rt->host_netns = -1;
}

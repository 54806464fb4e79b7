/*
 * kubesim_main.c - the kubesim binary: a Kubernetes-API-compatible server for
 * running rayop and real clients without a cluster. Wiring only: flags ->
 * registry + store -> HTTP server -> kubeconfig -> URL on stdout -> wait for
 * SIGTERM/SIGINT -> orderly shutdown (watches end cleanly, state flushed).
 * Usage and architecture: docs/kubesim.md.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kubesim/cluster/cluster.h"
#include "kubesim/api/faults.h"
#include "kubesim/main/kubeconfig.h"
#include "kubesim/ray/ray.h"
#include "kubesim/registry/registry.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"
#include "kubesim/main/tlsgen.h"
#include "kubesim/runtime/runtime.h"
#include "util/util.h"

#define MAX_PEM (256 * 1024)
/* Nodes without --nodes: the demo's pool, and what the tests' real control plane uses. */
#define DEFAULT_NODES "3"

struct args {
    char host[256];
    int port;
    const char *kubeconfig;
    bool tls;
    const char *token;
    const char *state;
    const char *request_log;
    long watch_window;
    long bookmark_ms;
    long event_ttl_s;
    struct faults *faults;     /* --fault, --watch-*: kubesim/api/faults.h */
    struct cluster_opts *cluster; /* --nodes, --node-*, --pod-*: kubesim/cluster/cluster.h */
    struct runtime_opts *runtime; /* --run-image: kubesim/runtime/runtime.h */
    bool nodes_given;          /* --nodes was on the command line (else the default pool) */
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: kubesim --listen HOST:PORT [--kubeconfig-out FILE] [--tls] [--token TOKEN]\n"
        "               [--state DIR] [--request-log FILE] [--watch-window N]\n"
        "               [--bookmark-interval-ms N] [--event-ttl-seconds N (3600)]\n"
        "               [--log-level debug|info|warn|error]\n"
        "%s%s"
        "               [--run-image REPO=ROOT]... (real processes: docs/kubesim-runtime.md)\n"
        "Serves the Kubernetes API (core, batch, coordination, events, rbac, apiextensions\n"
        "and CRDs) on HOST:PORT (PORT 0 picks a free one). The first line on stdout is the\n"
        "server URL. --tls generates a CA and serving certificate next to the kubeconfig\n"
        "and requires the bearer token (generated unless --token is given).\n", faults_usage,
        cluster_usage);
}

static int parse_listen(const char *s, struct args *a)
{
    const char *colon = strrchr(s, ':');
    char *end;
    long port;

    if (!colon || colon == s || (size_t)(colon - s) >= sizeof(a->host))
        return -EINVAL;
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || *end || port < 0 || port > 65535 || end == colon + 1)
        return -EINVAL;
    memcpy(a->host, s, (size_t)(colon - s));
    a->host[colon - s] = '\0';
    a->port = (int)port;
    return 0;
}

static int parse_num(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        { "listen", required_argument, NULL, 'l' },
        { "kubeconfig-out", required_argument, NULL, 'k' },
        { "tls", no_argument, NULL, 't' },
        { "token", required_argument, NULL, 'T' },
        { "state", required_argument, NULL, 's' },
        { "request-log", required_argument, NULL, 'r' },
        { "watch-window", required_argument, NULL, 'w' },
        { "bookmark-interval-ms", required_argument, NULL, 'b' },
        { "event-ttl-seconds", required_argument, NULL, 'E' },
        { "log-level", required_argument, NULL, 'L' },
        { "fault", required_argument, NULL, 'F' },
        { "fault-seed", required_argument, NULL, 'F' },
        { "watch-cut-seconds", required_argument, NULL, 'F' },
        { "watch-delay-ms", required_argument, NULL, 'F' },
        { "nodes", required_argument, NULL, 'C' },
        { "node-cpu", required_argument, NULL, 'C' },
        { "node-memory", required_argument, NULL, 'C' },
        { "node-gpu", required_argument, NULL, 'C' },
        { "node-tpu", required_argument, NULL, 'C' },
        { "node-labels", required_argument, NULL, 'C' },
        { "pod-start-ms", required_argument, NULL, 'C' },
        { "pod-ready-ms", required_argument, NULL, 'C' },
        { "pod-stop-ms", required_argument, NULL, 'C' },
        { "job-pod-ms", required_argument, NULL, 'C' },
        { "run-image", required_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c, lvl, idx = 0;
    char err[256];

    strcpy(a->host, "127.0.0.1");
    while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
        switch (c) {
        case 'l':
            if (parse_listen(optarg, a) < 0) {
                fprintf(stderr, "kubesim: --listen wants HOST:PORT, got \"%s\"\n", optarg);
                return -EINVAL;
            }
            break;
        case 'k': a->kubeconfig = optarg; break;
        case 't': a->tls = true; break;
        case 'T': a->token = optarg; break;
        case 's': a->state = optarg; break;
        case 'r': a->request_log = optarg; break;
        case 'w':   /* the server's positive numbers, each with its own ceiling */
        case 'b':
        case 'E': {
            long *num = c == 'w' ? &a->watch_window : c == 'b' ? &a->bookmark_ms : &a->event_ttl_s;
            long max = c == 'w' ? 10000000 : c == 'b' ? 3600000 : 31536000;
            if (parse_num(optarg, 1, max, num) < 0) {
                fprintf(stderr, "kubesim: --%s wants a positive number\n", opts[idx].name);
                return -EINVAL;
            }
            break;
        }
        case 'L':
            if ((lvl = log_parse_level(optarg)) < 0) {
                fprintf(stderr, "kubesim: unknown --log-level \"%s\"\n", optarg);
                return -EINVAL;
            }
            log_set_level(lvl);
            break;
        case 'F':   /* the fault, cluster and runtime flags: each layer parses its own */
        case 'C':
        case 'R': {
            const char *name = opts[idx].name;
            int rc;
            if (c == 'C' && !strcmp(name, "nodes"))
                a->nodes_given = true;
            rc = c == 'F' ? faults_parse_flag(&a->faults, name, optarg, err, sizeof(err))
               : c == 'C' ? cluster_parse_flag(&a->cluster, name, optarg, err, sizeof(err))
                          : runtime_parse_flag(&a->runtime, name, optarg, err, sizeof(err));
            if (rc < 0) {
                fprintf(stderr, "kubesim: %s\n", err);
                return -EINVAL;
            }
            break;
        }
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "kubesim: unexpected argument \"%s\"\n", argv[optind]);
        return -EINVAL;
    }
    /* Without --nodes a new user's Pods should run, as on any fresh cluster: a small
     * pool (one node for --run-image, whose Pods are real processes). --nodes 0 keeps
     * an API server only, as the API-level tests want. */
    if (!a->nodes_given && cluster_parse_flag(&a->cluster, "nodes", a->runtime ? "1" : DEFAULT_NODES,
                                           err, sizeof(err)) < 0) {
        fprintf(stderr, "kubesim: %s\n", err);
        return -EINVAL;
    }
    if (a->tls && !a->kubeconfig) {
        fprintf(stderr, "kubesim: --tls needs --kubeconfig-out (certificates go next to it)\n");
        return -EINVAL;
    }
    return 0;
}

/* Reads a whole (small) file into a NUL-terminated string; caller frees. */
static int read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct buf b = { 0 };
    char chunk[4096];
    size_t n;
    int rc = 0;

    if (!f)
        return -errno;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (b.len + n > MAX_PEM || buf_append(&b, chunk, n) < 0) {
            rc = -EFBIG;
            break;
        }
    }
    if (ferror(f))
        rc = -EIO;
    fclose(f);
    if (rc < 0 || !b.data) {
        buf_free(&b);
        return rc < 0 ? rc : -ENODATA;
    }
    *len = b.len;
    *out = buf_steal(&b);
    return 0;
}

static int random_token(char out[65])
{
    unsigned char raw[32];
    FILE *f = fopen("/dev/urandom", "rb");

    if (!f)
        return -errno;
    if (fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
        fclose(f);
        return -EIO;
    }
    fclose(f);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

struct tls_files {
    char *cert, *key, *ca;
    size_t cert_len, key_len, ca_len;
};

static int setup_tls(const char *kubeconfig, const char *host, struct tls_files *t)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    const char *slash = strrchr(kubeconfig, '/');
    int rc;

    if (!slash)
        strcpy(dir, ".");
    else if ((size_t)(slash - kubeconfig) >= sizeof(dir))
        return -ENAMETOOLONG;
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash == kubeconfig ? 1 : slash - kubeconfig),
                 kubeconfig);
    if ((rc = tlsgen_write(dir, host)) < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/server.crt", dir);
    if ((rc = read_file(path, &t->cert, &t->cert_len)) < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/server.key", dir);
    if ((rc = read_file(path, &t->key, &t->key_len)) < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/ca.crt", dir);
    return read_file(path, &t->ca, &t->ca_len);
}

/* Every connection (and so every watch) holds a descriptor; the default soft limit
 * of 1024 would cap concurrent watchers well below the server's connection limit. */
static void raise_fd_limit(void)
{
    struct rlimit rl;

    rlim_t want;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    want = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
    if (want > rl.rlim_cur) {
        rl.rlim_cur = want;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/*
 * Runs kubesim again, once, with the glibc malloc tunables it wants (tunables are read
 * only at start-up, hence the exec; the pid stays the same):
 *  - glibc.malloc.tcache_count=1024: every write copies, merges and prints cJSON trees
 *    of a few hundred 64-byte nodes, more than the 7 chunks a size the default thread
 *    cache keeps; the rest went through the fastbins, and the next large block (a
 *    printed object, a packed tree) consolidated them all again: _int_malloc was 29 % of
 *    kubesim at 40,000 Pods. A 1,024-deep cache cut kubesim's CPU by 13-16 % at 10,000
 *    Pods for 4 % more RSS (docs/kubesim-cluster.md, Scale).
 *  - glibc.malloc.hugetlb=1 only when KUBESIM_HUGETLB=1 asks: it once cut the
 *    first-touch faults of a create-only load (26,450 -> 133 for 5,000 creates), but with
 *    the simulated cluster running every re-grown 2 MB page is zeroed in one fault of a
 *    few ms, and kubesim used 1.5-2x the CPU (docs/kubesim-store.md, Performance).
 * A tunable GLIBC_TUNABLES already names is left as the caller set it (this also ends
 * the recursion). Skipped under valgrind (the exec would escape it) and when the exec
 * fails (the defaults are used). Only builds on glibc's malloc get here: release builds
 * run on jemalloc (util/heap.c), which needs none of this.
 */
static void reexec_with_tunables(char **argv)
{
    const char *cur = getenv("GLIBC_TUNABLES"), *pre = getenv("LD_PRELOAD");
    const char *huge = getenv("KUBESIM_HUGETLB");
    bool want_huge = huge && !strcmp(huge, "1") && !(cur && strstr(cur, "glibc.malloc.hugetlb"));
    bool want_tcache = !(cur && strstr(cur, "glibc.malloc.tcache_count"));
    char val[1024];
    int n;

    if ((!want_huge && !want_tcache) || (pre && strstr(pre, "vgpreload")))
        return;
    n = snprintf(val, sizeof(val), "%s%s%s%s", cur && *cur ? cur : "",
                 cur && *cur ? ":" : "",
                 want_tcache ? "glibc.malloc.tcache_count=1024" : "",
                 want_huge ? (want_tcache ? ":glibc.malloc.hugetlb=1" : "glibc.malloc.hugetlb=1")
                           : "");
    if (n < 0 || (size_t)n >= sizeof(val) || setenv("GLIBC_TUNABLES", val, 1) < 0)
        return;
    execv("/proc/self/exe", argv);
}

/*
 * Waits for SIGINT or SIGTERM, giving the allocator's free pages back every TRIM_MS
 * meanwhile (util_heap_release: on jemalloc the pages its decay has aged out).
 * A burst of writes leaves free chunks between live ones in every thread's arena (at
 * 10,000 RayClusters about 450 MiB of RSS above what malloc had in use); nothing else
 * returns them, as M_TRIM_THRESHOLD above only concerns the top of each heap.
 */
#define TRIM_MS 5000

static void wait_for_signal(const sigset_t *set, int *sig)
{
    struct timespec ts = { TRIM_MS / 1000, (TRIM_MS % 1000) * 1000000L };

    for (;;) {
        int got = sigtimedwait(set, NULL, &ts);
        if (got > 0) {
            *sig = got;
            return;
        }
        if (errno == EAGAIN)
            util_heap_release();
    }
}

/* The service and pod proxy reach run Pods' processes through the runtime. */
static int http_source(void *arg, const char *uid, int port, const struct runtime_http_req *req,
                       struct runtime_http_reply *out)
{
    return runtime_http(arg, uid, port, req, out);
}

int main(int argc, char **argv)
{
    struct args a = { 0 };
    struct tls_files tls = { 0 };
    struct store_opts so = { 0 };
    struct server_opts sv = { 0 };
    struct registry *reg = NULL;
    struct store *store = NULL;
    struct server *srv = NULL;
    struct cluster *cluster = NULL;
    struct ray *ray = NULL;       /* simulated Ray runtime: kubesim/ray/ray.h */
    struct runtime *rt = NULL;    /* real Pod processes: kubesim/runtime/runtime.h */
    char err[512], token[65], num[32];
    sigset_t set;
    int rc, sig = 0, status = 1;

    if ((rc = runtime_helper_main(argc, argv)) >= 0)
        return rc;      /* kubesim re-executed as a Pod sandbox or container */
    if (!strcmp(util_heap_name(), "glibc"))
        reexec_with_tunables(argv);
    log_set_component("kubesim");
    if (parse_args(argc, argv, &a) < 0)
        return 2;

    raise_fd_limit();
    /* On glibc's malloc (a `make HEAP=glibc` build), connection threads allocate
     * from their own arenas, which otherwise grow a page run at a time (sysmalloc +
     * mprotect showed up as ~20% of a create-heavy profile); grow them in large steps
     * and do not hand memory straight back. */
    if (!strcmp(util_heap_name(), "glibc")) {
        mallopt(M_TOP_PAD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
    }
    /* Threads started below inherit this mask; only sigwait sees the signals. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    if (a.tls && (rc = setup_tls(a.kubeconfig, a.host, &tls)) < 0) {
        log_error("kubesim: TLS setup failed", "error", strerror(-rc), NULL);
        goto out;
    }
    if (a.tls && !a.token) {
        if ((rc = random_token(token)) < 0) {
            log_error("kubesim: cannot generate a token", "error", strerror(-rc), NULL);
            goto out;
        }
        a.token = token;
    }

    if ((rc = registry_new(&reg)) < 0) {
        log_error("kubesim: registry", "error", strerror(-rc), NULL);
        goto out;
    }
    so.state_dir = a.state;
    so.watch_window = (size_t)a.watch_window;
    so.event_ttl_ms = (uint64_t)a.event_ttl_s * 1000u;
    so.bookmark_ms = (unsigned)a.bookmark_ms;
    rc = store_open(&so, reg, &store, err, sizeof(err));
    reg = NULL;   /* the store owns it now, whatever the result */
    if (rc < 0) {
        log_error("kubesim: cannot open the store", "error", err, NULL);
        goto out;
    }

    sv.host = a.host;
    sv.port = a.port;
    sv.tls_cert_pem = tls.cert;
    sv.tls_key_pem = tls.key;
    sv.token = a.token;
    sv.request_log = a.request_log;
    if (server_new(&sv, store, &srv, err, sizeof(err)) < 0 ||
        faults_install(&a.faults, srv, store, a.token, err, sizeof(err)) < 0 ||
        (ray_install(srv, store, &ray) < 0 && snprintf(err, sizeof(err), "ray runtime")) ||
        server_start(srv, err, sizeof(err)) < 0) {
        log_error("kubesim: cannot start the server", "error", err, NULL);
        goto out;
    }
    if (a.runtime) {
        struct runtime_conf rc_conf = { .store = store, .api_port = server_port(srv),
                                        .ca_pem = tls.ca, .ca_len = tls.ca_len,
                                        .token = a.token };
        if ((rc = runtime_start(a.runtime, &rc_conf, &rt)) < 0) {
            log_error("kubesim: cannot start the Pod runtime", "error", strerror(-rc), NULL);
            goto out;
        }
        ray_set_log_source(ray, (ray_log_source_fn)runtime_log, rt);
        ray_set_http_source(ray, http_source, rt);
    }
    if (a.cluster) {
        a.cluster->ray = ray;
        a.cluster->runtime = rt;
    }
    if (cluster_start(a.cluster, store, &cluster) < 0)
        goto out;
    if (!cluster)   /* the first thing a newcomer wonders about: why Pods never start */
        log_warn("kubesim: --nodes 0: an API server only (no scheduler, no kubelet), so Pods "
                 "stay Pending; leave --nodes out for a default pool, or give --nodes N", NULL);
    else if (!a.nodes_given)
        log_info("kubesim: no --nodes: a default pool of simulated nodes (--nodes 0 for an API "
                 "server only)", "nodes", a.runtime ? "1" : DEFAULT_NODES, "cpu", a.cluster->node_cpu,
                 "memory", a.cluster->node_memory, NULL);
    if (a.kubeconfig) {
        struct kubeconfig_opts ko = { .server_url = server_url(srv), .ca_pem = tls.ca,
                                      .ca_len = tls.ca_len, .token = a.token };
        if ((rc = kubeconfig_write(a.kubeconfig, &ko)) < 0) {
            log_error("kubesim: cannot write the kubeconfig", "path", a.kubeconfig,
                      "error", strerror(-rc), NULL);
            goto out;
        }
    }
    /* The contract with scripts: the first stdout line is the URL, flushed. */
    printf("%s\n", server_url(srv));
    fflush(stdout);
    snprintf(num, sizeof(num), "%d", server_port(srv));
    log_info("kubesim: serving", "url", server_url(srv), "port", num,
             "kubeconfig", a.kubeconfig, "state", a.state, NULL);

    wait_for_signal(&set, &sig);
    log_info("kubesim: shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
    status = 0;
out:
    cluster_stop(cluster);
    runtime_stop(rt);      /* its processes, namespaces and files go; the Pods stay stored */
    ray_stop(ray);         /* submitter threads end before the server goes */
    server_free(srv);      /* ends watches cleanly before the store goes */
    faults_free(a.faults); /* its prehook and admin route die with the server */
    if (store)
        store_close(store);
    cluster_free(cluster);   /* after the store: it holds the subscription */
    ray_free(ray);           /* same */
    cluster_opts_free(a.cluster);
    free(a.runtime);
    registry_free(reg);
    free(tls.cert);
    free(tls.key);
    free(tls.ca);
    return status;
}

/*
 * main.c - `rayop watcher`: flags, process lifecycle and wiring. Opens (or
 * re-attaches to) the cache segment named after --state-dir, starts the
 * queue server on <state-dir>/queues.sock, queues every cached primary key
 * (restart resync), then runs the sync engine (sync.c) on one libuv loop
 * until SIGTERM/SIGINT.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"
#include "watcher/internal.h"
#include "watcher/opts.h"

#define STARTUP_GRACE_NS (2ull * 1000000000ull)

static void usage(FILE *f)
{
    fputs("usage: rayop watcher [flags]\n"
          "  --kubeconfig FILE        kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
          "  --context NAME           kubeconfig context\n"
          "  --namespace NS           watch only NS (repeatable; default all namespaces)\n"
          "  --watch-namespace A,B    KubeRay's form of --namespace\n"
          "  --state-dir DIR          socket and segment name (default /run/rayop; created 0700)\n"
          "  --qps N --burst N        client-side API rate limit per resource (100 / 200)\n"
          "  --cache-capacity BYTES   initial segment size, suffixes K/M/G (default 32M; reserved\n"
          "                           in /dev/shm up front)\n"
          "  --cache-max-objects N    initial object slots (default 16384)\n"
          "  --cache-max-bytes BYTES  when full, move to a segment twice the size (bytes and\n"
          "                           slots) up to this (default 4G; 0 = refuse writes instead)\n"
          "  --metrics-addr ADDR      serve /metrics, /healthz, /readyz (e.g. :8080; default off)\n"
          "  --log-level LEVEL        debug|info|warn|error\n"
          "  --log-stdout-encoder E   json (default) | console (zap's console layout)\n", f);
}


static void on_signal(uv_signal_t *h, int sig)
{
    struct watcher *w = h->data;
    char s[16];
    snprintf(s, sizeof(s), "%d", sig);
    if (w->stopping)
        return;
    log_info("stopping", "signal", s, NULL);
    watcher__sync_stop(w);
    watcher__optional_stop(w);   /* after: the CRD watches end with w->stopping set */
    watcher__http_stop(w);
    kube_watcher_free(w->kw);
    w->kw = NULL;
    ipc_server_close(w->ipc);
    w->ipc = NULL;
    uv_close((uv_handle_t *)&w->sig_term, NULL);
    uv_close((uv_handle_t *)&w->sig_int, NULL);
}

/*
 * The segment outlives the process on purpose (restart without relisting), but
 * it must belong to this state dir and this API server: a segment found when
 * the state dir was just created, or one written for another server (recorded
 * in <state-dir>/server), is removed so its objects and resourceVersions are
 * never resumed against the wrong cluster.
 */
static int check_identity(const char *state_dir, int fresh_dir, const char *segname,
                          const char *server)
{
    char path[PATH_MAX], old[1024] = "";
    const char *why = fresh_dir ? "new state dir" : NULL;
    if ((size_t)snprintf(path, sizeof(path), "%s/server", state_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    FILE *f = fopen(path, "re");
    if (f) {
        size_t n = fread(old, 1, sizeof(old) - 1, f);
        old[n] = '\0';
        fclose(f);
        old[strcspn(old, "\n")] = '\0';
        if (strcmp(old, server) != 0)
            why = "state dir was used with another API server";
    } else if (!why) {
        why = "state dir has no record of its API server";
    }
    if (why) {
        int rc = cache_unlink(segname);
        if (rc == 0)
            log_warn("removed a cache segment that may belong to another cluster", "segment",
                     segname, "reason", why, NULL);
    }
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    size_t len = strlen(server);
    int ok = write(fd, server, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
    close(fd);
    if (!ok || rename(tmp, path) < 0) {
        log_error("cannot record the API server in the state dir", "path", path, NULL);
        return -EIO;
    }
    return 0;
}

int watcher_main(int argc, char **argv)
{
    struct wopts o;
    struct watcher w;
    struct kube_config *cfg = NULL;
    char err[256] = "", segname[CACHE_SEGNAME_MAX], sock[PATH_MAX];
    uv_loop_t loop;
    int rc, loop_ok = 0, exit_code = 1;

    memset(&w, 0, sizeof(w));
    rc = wopts_parse(&o, argc, argv, WOPTS_WATCHER);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc < 0) {
        usage(stderr);
        return 2;
    }
    log_set_component("watcher");
    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)(time(NULL) ^ getpid()));
    w.start_ns = util_now_ns();

    int fresh_dir;
    if ((rc = fresh_dir = wopts_state_dir(o.state_dir)) < 0)
        goto out;
    if ((rc = cache_segment_name(o.state_dir, segname, sizeof(segname))) < 0) {
        log_error("bad state dir", "dir", o.state_dir, NULL);
        goto out;
    }
    if ((size_t)snprintf(sock, sizeof(sock), "%s/queues.sock", o.state_dir) >= sizeof(sock)) {
        log_error("state dir path too long", "dir", o.state_dir, NULL);
        goto out;
    }

    struct kube_config_opts co = { .kubeconfig = o.kubeconfig, .context = o.context };
    if ((rc = kube_config_load(&co, &cfg, err, sizeof(err))) < 0) {
        log_error("cannot load kubeconfig", "error", err, NULL);
        exit_code = UTIL_EXIT_CONFIG;
        goto out;
    }
    w.server = cfg->server;
    struct kube_client_opts ko = { .qps = o.qps, .burst = o.burst };
    if ((rc = kube_client_new(cfg, &ko, &w.kc)) < 0) {
        log_error("cannot create API client", "error", kube_strerror(rc), NULL);
        goto out;
    }
    if ((rc = uv_loop_init(&loop)) < 0)
        goto out;
    loop_ok = 1;
    w.loop = &loop;
    /* Taken before the rest of start-up: a SIGTERM that comes meanwhile (a Pod deleted while
     * it starts, up stopping) waits in the loop for on_signal and a clean exit 0, instead
     * of the default action's 143 with the socket left behind. */
    uv_signal_init(&loop, &w.sig_term);
    uv_signal_init(&loop, &w.sig_int);
    w.sig_term.data = w.sig_int.data = &w;
    uv_signal_start(&w.sig_term, on_signal, SIGTERM);
    uv_signal_start(&w.sig_int, on_signal, SIGINT);
    if ((rc = kube_watcher_new(w.kc, &loop, &w.kw)) < 0)
        goto out;
    struct ipc_server_config sc = { .startup_grace_ns = STARTUP_GRACE_NS };
    if ((rc = ipc_server_new(&loop, &sc, &w.ipc)) < 0)
        goto out;
    for (size_t t = 0; t < watcher_ntypes; t++)
        if (watcher_types[t].queue &&
            (rc = ipc_server_add_kind(w.ipc, watcher_types[t].queue, NULL)) < 0)
            goto out;
    ipc_server_set_seen(w.ipc, watcher__sync_seen, &w);
    if ((rc = ipc_server_listen(w.ipc, sock)) < 0) {
        log_error("cannot listen", "path", sock, "error", strerror(-rc), NULL);
        goto out;
    }
    /* The cache has one writer. The socket is taken first: a second watcher on
     * the same state dir fails above (-EADDRINUSE) before touching the segment. */
    if ((rc = check_identity(o.state_dir, fresh_dir, segname, cfg->server)) < 0)
        goto out;
    /* start small and grow (docs/cache.md: the segment is reserved in /dev/shm
     * up front, so its size is memory held for as long as it exists) */
    struct cache_config cc = { .name = segname,
                               .bytes = o.cache_bytes ? o.cache_bytes : WATCHER_CACHE_BYTES,
                               .max_objects = o.cache_objects ? o.cache_objects
                                                              : WATCHER_CACHE_OBJECTS,
                               .max_bytes = o.cache_max_bytes_set ? o.cache_max_bytes
                                                                  : WATCHER_CACHE_MAX_BYTES };
    if ((rc = cache_writer_open(&cc, &w.cache)) < 0) {
        log_error("cannot open cache segment", "name", segname, "error", strerror(-rc), NULL);
        goto out;
    }
    /* The startup grace lets workers of a previous watcher re-adopt the keys they hold.
     * Keys are only ever handed out of a segment whose types exist, so a segment without
     * them is new: nobody can hold a key, and the grace would only delay the first
     * reconcile (by 2 s whenever a kind has no controller, e.g. up --controllers). */
    if (cache_type_lookup(w.cache, watcher_types[0].cache_type) < 0) {
        ipc_server_end_grace(w.ipc);
        log_info("new cache segment: no startup grace (no worker can hold a key)", NULL);
    }
    w.on_absent = watcher__optional_absent;   /* the sync engine's 404s go to optional.c */
    if ((rc = watcher__sync_init(&w, (const char *const *)o.namespaces, o.nnamespaces)) < 0) {
        log_error("cannot set up types", "error", strerror(-rc), NULL);
        goto out;
    }
    /* the controllers' metric snapshots, pooled into our /metrics */
    snprintf(w.metrics_dir, sizeof(w.metrics_dir), "%s/metrics", o.state_dir);
    if (mkdir(w.metrics_dir, 0700) < 0 && errno != EEXIST)
        log_warn("cannot create the metrics directory", "dir", w.metrics_dir,
                 "error", strerror(errno), NULL);
    if ((rc = watcher__http_start(&w, o.metrics_addr)) < 0) {
        log_error("bad --metrics-addr", "addr", o.metrics_addr, NULL);
        goto out;
    }
    if ((rc = watcher__sync_resync(&w)) < 0)
        log_warn("resync incomplete", "error", strerror(-rc), NULL);

    log_info("watcher started", "segment", segname, "socket", sock, NULL);
    watcher__sync_start(&w);
    uv_run(&loop, UV_RUN_DEFAULT);
    exit_code = 0;
    rc = 0;
out:
    if (rc < 0 && loop_ok) {
        /* failed during setup: release what was created, then drain the loop */
        if (w.streams) {
            watcher__sync_stop(&w);
            watcher__optional_stop(&w);
        }
        watcher__http_stop(&w);
        if (w.kw)
            kube_watcher_free(w.kw);
        if (w.ipc)
            ipc_server_close(w.ipc);
        uv_close((uv_handle_t *)&w.sig_term, NULL);
        uv_close((uv_handle_t *)&w.sig_int, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    if (loop_ok)
        (void)uv_loop_close(&loop);
    watcher__sync_free(&w);
    if (w.cache)
        cache_close(w.cache);
    if (w.kc)
        kube_client_free(w.kc);
    if (cfg)
        kube_config_free(cfg);
    wopts_free(&o);
    log_info("watcher exited", NULL);
    return exit_code;
}

/*
 * host.c - `rayop controller KIND`: the process around a kind's reconcile
 * function. Start-up: flags and config file, API client, the cache view (the
 * watcher's segment, mapped read-only, waited for), the queue connection
 * (capacity = workers), HTTP endpoints, N worker threads. The main thread
 * waits for SIGTERM/SIGINT and refreshes the queue figures for /metrics
 * from the watcher's STATUS every 2 s.
 *
 * Shutdown (SIGTERM/SIGINT): workers stop pulling; a key pulled after the
 * signal is handed back unprocessed (RELEASE); in-flight reconciles finish
 * within --drain-timeout-ms; then the client closes, which hands back keys
 * delivered but not pulled, and the process exits 0. If the drain times out
 * the process exits 1 without waiting: the watcher requeues what the dropped
 * connection held.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "reconcilers/batchsched/batchsched.h"
#include "reconcilers/host/internal.h"
#include "util/util.h"

/* how long queued Events may still be written at exit */
#define EVENTS_STOP_MS 3000
/* how long the kind's own calls still out (host_kind.stop) may run at exit */
#define KIND_STOP_MS 5000

struct host {
    struct host_opts o;
    const struct host_kind *kind;
    const struct host_kind *kinds;   /* the binary's table (per-kind Leases: leader.c) */
    size_t nkinds;
    struct kube_config *kcfg;
    struct kube_client *kube;        /* owned; published through kube_slot */
    struct host_kube_slot kube_slot;
    pthread_t kube_thread;
    atomic_bool kube_failed;
    atomic_bool kube_config_bad;      /* the kubeconfig cannot be loaded: no restart helps */
    struct host_view *view;
    struct ipc_client *ipc;
    struct host_http *http;
    struct host_metrics metrics;
    struct host_settings settings;   /* what reconciles see of h->o */
    atomic_bool stopping;
    atomic_int running;              /* worker threads not yet returned */
    atomic_bool first_done;
    atomic_bool ipc_open;            /* h->ipc is set (HTTP thread reads it) */
    struct host_leader *leader;      /* --enable-leader-election, else NULL */
    struct host_leader_config lcfg;
    atomic_bool leader_lost;
    uint64_t start_ns;
    pthread_mutex_t mu;
    pthread_cond_t cond;             /* signalled when a worker returns */
};

/* KIND-XXXXXXXXXXXXXXXX.prom: a random instance id, as the processes of one Pod have
 * separate pid namespaces and a restarted process must not overwrite its predecessor's
 * name (the watcher drops files not refreshed for a while). */
static void metrics_file_name(const struct host *h, char *out, size_t cap)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
        id = util_now_ns() ^ (uint64_t)getpid();
    snprintf(out, cap, "%s-%016llx.prom", h->kind->name, (unsigned long long)id);
}

/* Start-up stage timing at debug level: the restart -> first reconcile budget. */
static void log_stage(const struct host *h, const char *stage)
{
    if (!log_enabled(LOG_DEBUG))
        return;
    char ms[32];
    snprintf(ms, sizeof(ms), "%.3f", (double)(util_now_ns() - h->start_ns) / 1e6);
    log_debug("start-up stage done", "stage", stage, "sinceStartMs", ms, NULL);
}

static bool ns_watched(const struct host *h, const char *ns)
{
    if (h->o.nnamespaces == 0)
        return true;
    for (size_t i = 0; i < h->o.nnamespaces; i++)
        if (strcmp(h->o.namespaces[i], ns) == 0)
            return true;
    return false;
}

static void reconcile_one(struct host *h, const struct ipc_key *k)
{
    struct host_ctx ctx;
    struct host_result res = { .outcome = HOST_OK };
    struct ipc_outcome oc;
    int rc = host_ctx_init(&ctx, h->kind, k->key, NULL, h->view);
    ctx.kube_slot = &h->kube_slot;
    ctx.settings = &h->settings;
    ctx.requeues = k->requeues;
    ctx.conn_gen = k->conn_gen;
    uint64_t t0 = util_now_ns();
    if (!atomic_exchange(&h->first_done, true)) {
        char ms[32];
        snprintf(ms, sizeof(ms), "%.3f", (double)(t0 - h->start_ns) / 1e6);
        log_info("first reconcile", "controller", h->kind->name, "key", k->key,
                 "sinceStartMs", ms, NULL);
    }
    if (rc < 0) {
        res.outcome = HOST_TERMINAL;
        snprintf(res.message, sizeof(res.message), "malformed key");
        log_error("malformed key", "controller", h->kind->name, "key", k->key, NULL);
    } else if (!ns_watched(h, ctx.ns)) {
        host_log(&ctx, LOG_DEBUG, "namespace not watched; skipped", NULL);
    } else {
        host_log(&ctx, LOG_DEBUG, "Reconciling", NULL);
        rc = h->kind->reconcile(&ctx, &res);
    }
    uint64_t dur = util_now_ns() - t0;
    host__outcome_to_ipc(rc, &res, &ctx, &oc);
    int level = host__outcome_log_level(rc, &oc);
    if (level >= 0 && oc.kind == IPC_OUTCOME_TERMINAL)
        host_log(&ctx, level, "Reconciler terminal error", "error",
                 oc.message ? oc.message : "", NULL);
    else if (level >= 0)
        host_log(&ctx, level, rc == -ESTALE ? "Reconciler conflict; requeued" : "Reconciler error",
                 "error", oc.message ? oc.message : kube_strerror(rc), NULL);
    int drc = ipc_client_done(h->ipc, k, &oc);
    if (drc < 0 && drc != -ESTALE)
        log_warn("reporting the outcome failed", "key", k->key, "error", strerror(-drc), NULL);
    host__metrics_observe(&h->metrics, host__metrics_result_of(&oc, rc, &res),
                          oc.kind == IPC_OUTCOME_TERMINAL, dur, k->wait_ms * 1000000ull);
}

static void *worker(void *arg)
{
    struct host *h = arg;
    while (!atomic_load(&h->stopping)) {
        struct ipc_key k;
        int rc = ipc_client_pull(h->ipc, 250, &k);
        if (rc == -ETIMEDOUT)
            continue;
        if (rc == -ESHUTDOWN)
            break;
        if (rc < 0) {
            log_warn("pull failed", "error", strerror(-rc), NULL);
            struct timespec ts = { 0, 100 * 1000000L };
            nanosleep(&ts, NULL);
            continue;
        }
        if (atomic_load(&h->stopping)) {
            /* arrived after SIGTERM: hand it back untouched */
            struct ipc_outcome oc = { .kind = IPC_OUTCOME_RELEASE };
            (void)ipc_client_done(h->ipc, &k, &oc);
            break;
        }
        host__metrics_active(&h->metrics, 1);
        reconcile_one(h, &k);
        host__metrics_active(&h->metrics, -1);
    }
    pthread_mutex_lock(&h->mu);
    atomic_fetch_sub(&h->running, 1);
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Creates the API client off the start-up path (see host_kube_slot). A failure
 * stops the process: a controller that cannot write is no use. */
static void *kube_init(void *arg)
{
    struct host *h = arg;
    char err[256] = "";
    /* GnuTLS/libcurl initialisation is CPU-heavy: let the path to the first
     * reconcile (map, connect, pull) have the CPU first on a busy machine */
    (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
    struct kube_config_opts ko = { .kubeconfig = h->o.kubeconfig, .context = h->o.context };
    struct kube_client_opts co = { .qps = h->o.qps, .burst = h->o.burst };
    int rc = kube_config_load(&ko, &h->kcfg, err, sizeof(err));
    if (rc < 0) {
        log_error("cannot load the API server configuration", "error", err, NULL);
        atomic_store(&h->kube_config_bad, true);
    }
    else if ((rc = kube_client_new(h->kcfg, &co, &h->kube)) < 0)
        log_error("cannot create the API client", "error", strerror(-rc), NULL);
    else
        log_stage(h, "api client");
    /* before the slot is set: every reconcile's first API call waits for it */
    if (rc >= 0 && h->kind->start && (rc = h->kind->start(h->kube)) < 0)
        log_error("start-up check failed; stopping", "error", strerror(-rc), NULL);
    host__kube_slot_set(&h->kube_slot, rc < 0 ? NULL : h->kube);
    if (rc < 0) {
        atomic_store(&h->kube_failed, true);
        kill(getpid(), SIGTERM);
    }
    return NULL;
}

static int ready(void *arg)
{
    struct host *h = arg;
    bool kube_ok;
    pthread_mutex_lock(&h->kube_slot.mu);
    kube_ok = h->kube_slot.done && h->kube_slot.client;
    pthread_mutex_unlock(&h->kube_slot.mu);
    /* a standby waiting for the lease is ready, as in controller-runtime
     * (its probes do not depend on leadership); it has no queue connection yet */
    bool queue_ok = host__leader_get_state(h->leader) == HOST_LEADER_WAITING ||
                    (atomic_load(&h->ipc_open) && ipc_client_connected(h->ipc));
    return kube_ok && queue_ok && host_view_synced(h->view, h->kind->cache_types);
}

/* The watcher creates the segment; a controller may start first. */
static int open_view(struct host *h, const char *segname)
{
    uint64_t deadline = util_now_ms() + (uint64_t)h->o.connect_timeout_ms;
    int rc, logged = 0;
    for (;;) {
        rc = host_view_open(segname, &h->view);
        if (rc == 0 || (rc != -ENOENT && rc != -EAGAIN && rc != -EIO) ||
            util_now_ms() >= deadline || atomic_load(&h->stopping) || atomic_load(&h->kube_failed))
            return rc;
        if (!logged++)
            log_info("waiting for the watcher's cache segment", "segment", segname, NULL);
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
    }
}

static void log_settings(struct host *h)
{
    char w[16];
    snprintf(w, sizeof(w), "%d", h->o.workers);
    if (h->o.feature_gates[0])
        log_info("feature gates", "gates", h->o.feature_gates, NULL);
    log_info("controller starting", "controller", h->kind->name, "queue", h->kind->queue,
             "workers", w, "stateDir", h->o.state_dir,
             "useKubernetesProxy", h->o.use_kubernetes_proxy ? "true" : "false", NULL);
}

/* Leadership lost (leader thread): stop pulling and leave through the SIGTERM
 * drain path, exiting non-zero so `rayop up` or the kubelet restarts us. */
static void leader_lost(void *arg)
{
    struct host *h = arg;
    atomic_store(&h->leader_lost, true);
    atomic_store(&h->stopping, true);
    kill(getpid(), SIGTERM);
}

static int start_leader(struct host *h)
{
    struct host_leader_config *c = &h->lcfg;
    int rc;
    if (!h->o.leader_election)
        return 0;
    snprintf(c->name, sizeof(c->name), "rayop-%s-leader", h->kind->name);
    for (size_t i = 0; i < h->nkinds && c->nkinds < HOST_MAX_KINDS; i++)
        c->kinds[c->nkinds++] = h->kinds[i].name;
    /* KubeRay's operator Lease (main.go LeaderElectionID): the migration guard */
    snprintf(c->guard, sizeof(c->guard), "ray-operator-leader");
    host__leader_namespace(h->o.leader_namespace, c->ns, sizeof(c->ns));
    if ((rc = host__leader_identity(c->identity, sizeof(c->identity))) < 0) {
        log_error("no leader election identity (set POD_NAME)", "error", strerror(-rc), NULL);
        return rc;
    }
    /* client-go's defaults 15 s / 10 s / 2 s, scaled with --leader-lease-seconds */
    c->lease_s = h->o.leader_lease_s;
    c->renew_deadline_ms = c->lease_s * 2000 / 3;
    c->retry_ms = c->lease_s * 2000 / 15;
    if (c->retry_ms < 100)
        c->retry_ms = 100;
    if ((rc = host__leader_start(c, &h->kube_slot, leader_lost, h, &h->leader)) < 0) {
        log_error("cannot start leader election", "error", strerror(-rc), NULL);
        return rc;
    }
    h->metrics.leader = h->leader;
    h->metrics.leader_name = c->name;
    return 0;
}

/* Blocks until this process leads (0) or a signal arrives (its number). */
static int wait_leadership(struct host *h, const sigset_t *set)
{
    const struct timespec zero = { 0, 0 };
    if (!h->leader)
        return 0;
    for (;;) {
        if (host__leader_wait(h->leader, 200) == HOST_LEADER_LEADING)
            return 0;
        int sig = sigtimedwait(set, NULL, &zero);
        if (sig > 0)
            return sig;
    }
}

static int open_queue(struct host *h, const char *sock)
{
    char wid[IPC_WORKER_MAX];
    int rc;
    snprintf(wid, sizeof(wid), "%s-%d", h->kind->name, (int)getpid());
    struct ipc_client_config cc = { .path = sock, .kind = h->kind->queue, .worker = wid,
                                    .capacity = (uint32_t)h->o.workers,
                                    .connect_timeout_ms = h->o.connect_timeout_ms };
    if ((rc = ipc_client_open(&cc, &h->ipc)) < 0) {
        log_error("cannot connect to the watcher", "socket", sock, "error", strerror(-rc), NULL);
        return rc;
    }
    atomic_store(&h->ipc_open, true);
    log_stage(h, "queue connection");
    return 0;
}

/* Waits for the workers up to the drain timeout. 0 all returned, -ETIMEDOUT. */
static int drain(struct host *h)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += h->o.drain_timeout_ms / 1000;
    until.tv_nsec += (long)(h->o.drain_timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    while (atomic_load(&h->running) > 0 && rc == 0)
        if (pthread_cond_timedwait(&h->cond, &h->mu, &until) == ETIMEDOUT)
            rc = -ETIMEDOUT;
    pthread_mutex_unlock(&h->mu);
    return atomic_load(&h->running) > 0 ? -ETIMEDOUT : 0;
}

const struct host_kind *host_kind_find(const struct host_kind *kinds, size_t nkinds,
                                       const char *name)
{
    for (size_t i = 0; name && i < nkinds; i++)
        if (strcmp(kinds[i].name, name) == 0)
            return &kinds[i];
    return NULL;
}

static void kinds_usage(FILE *f, const struct host_kind *kinds, size_t nkinds)
{
    fputs("KIND:\n", f);
    for (size_t i = 0; i < nkinds; i++)
        fprintf(f, "  %-12s %s\n", kinds[i].name, kinds[i].about ? kinds[i].about : "");
}

int host_main_controller(int argc, char **argv, const struct host_kind *kinds, size_t nkinds)
{
    struct host h;
    memset(&h, 0, sizeof(h));
    h.start_ns = util_now_ns();
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cond, NULL);
    host__kube_slot_init(&h.kube_slot);
    int rc = host_opts_parse(&h.o, argc, argv), exit_code = 1, sig = 0;
    char err[256] = "", segname[CACHE_SEGNAME_MAX], sock[PATH_MAX];
    char mdir[600] = "", mfile[96] = "";
    bool export_warned = false;
    pthread_t *threads = NULL;
    int nthreads = 0;
    bool kube_started = false;
    if (rc != 0) {
        kinds_usage(rc > 0 ? stdout : stderr, kinds, nkinds);
        return rc > 0 ? 0 : 2;
    }
    if (h.o.log_level >= 0)
        log_set_level(h.o.log_level);
    h.kinds = kinds;
    h.nkinds = nkinds;
    if (!(h.kind = host_kind_find(kinds, nkinds, h.o.kind))) {
        fprintf(stderr, "rayop controller: unknown kind \"%s\"\n", h.o.kind);
        kinds_usage(stderr, kinds, nkinds);
        host_opts_free(&h.o);
        return 2;
    }
    log_set_component("controller");
    if (h.o.config_file && (rc = host_opts_load_config(&h.o, h.o.config_file, err, sizeof(err))) < 0) {
        log_error("bad --config file", "error", err, NULL);
        exit_code = UTIL_EXIT_CONFIG;
        goto out;
    }
    if ((rc = host_feature_gates_check(h.o.feature_gates, err, sizeof(err))) < 0) {
        /* KubeRay: exitOnError(err, "Unable to set flag gates for known features") */
        log_error("Unable to set flag gates for known features", "error", err, NULL);
        exit_code = UTIL_EXIT_CONFIG;
        goto out;
    }
    if (h.o.log_level >= 0)
        log_set_level(h.o.log_level);
    log_set_encoder(log_parse_encoder(h.o.log_encoder) == LOG_ENCODER_CONSOLE
                    ? LOG_ENCODER_CONSOLE : LOG_ENCODER_JSON);
    log_settings(&h);
    h.settings.use_kubernetes_proxy = h.o.use_kubernetes_proxy;
    h.settings.feature_gates = h.o.feature_gates;
    h.settings.operator_config = h.o.config_json;
    {
        /* KubeRay's ValidateBatchSchedulerConfig: a bad choice stops start-up */
        enum batchsched_kind bk;
        char berr[256];
        struct host_ctx gctx = { .settings = &h.settings };
        if (batchsched_select(h.o.batch_scheduler, h.o.enable_batch_scheduler,
                              host_feature_enabled(&gctx, "KubernetesWAS", false), &bk,
                              berr, sizeof(berr)) < 0) {
            log_error("batch scheduler configs validation failed", "error", berr, NULL);
            fprintf(stderr, "rayop controller: batch scheduler configs validation failed: %s\n", berr);
            rc = -EINVAL;
            exit_code = UTIL_EXIT_CONFIG;
            goto out;
        }
        if (h.o.enable_batch_scheduler)
            log_info("Feature flag enable-batch-scheduler is deprecated and will not be supported "
                     "soon. Use batch-scheduler instead. ", NULL);
        else if (bk != BATCHSCHED_NONE)
            log_info("Feature flag batch-scheduler is enabled", "scheduler name",
                     batchsched_name(bk), NULL);
        h.settings.batch_scheduler = (int)bk;
    }

    /* signals go to the main thread only: block them before any thread starts */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if ((rc = -pthread_create(&h.kube_thread, NULL, kube_init, &h)) < 0) {
        log_error("cannot start a thread", "error", strerror(-rc), NULL);
        goto out;
    }
    kube_started = true;
    if ((rc = cache_segment_name(h.o.state_dir, segname, sizeof(segname))) < 0 ||
        (size_t)snprintf(sock, sizeof(sock), "%s/queues.sock", h.o.state_dir) >= sizeof(sock)) {
        log_error("bad --state-dir", "dir", h.o.state_dir, NULL);
        goto out;
    }
    if ((rc = open_view(&h, segname)) < 0) {
        log_error("cannot map the cache segment", "segment", segname, "error", strerror(-rc), NULL);
        goto out;
    }
    log_stage(&h, "cache view");
    host__metrics_init(&h.metrics, h.kind->name, h.kind->queue, h.o.workers);
    /* KubeRay emits its kuberay_* metrics only with --enable-metrics */
    h.metrics.kind_metrics = h.o.enable_metrics ? h.kind->metrics : NULL;
    h.metrics.kind_view = h.view;
    h.metrics.kube_slot = &h.kube_slot;
    metrics_file_name(&h, mfile, sizeof(mfile));
    (void)snprintf(mdir, sizeof(mdir), "%s/metrics", h.o.state_dir);
    if ((rc = start_leader(&h)) < 0)
        goto out_metrics;
    /* without an election connect first: the restart -> first reconcile path */
    if (!h.leader && (rc = open_queue(&h, sock)) < 0)
        goto out_ipc;
    if ((rc = host__http_start(h.o.metrics_addr, h.o.probe_addr, &h.metrics, ready, &h,
                               &h.http)) < 0)
        goto out_ipc;
    log_stage(&h, "http");
    /* a standby does not connect to the queue: the watcher hands keys only to
     * connected workers, so none sit with a process that may not reconcile */
    if ((sig = wait_leadership(&h, &set)) > 0) {
        log_info("signal received while waiting for leadership", "signal", strsignal(sig), NULL);
        exit_code = atomic_load(&h.kube_failed) ? 1 : 0;
        goto out_ipc;
    }
    if (h.leader && (rc = open_queue(&h, sock)) < 0)
        goto out_ipc;
    if (!(threads = calloc((size_t)h.o.workers, sizeof(*threads)))) {
        rc = -ENOMEM;
        goto out_ipc;
    }
    /* Events leave the reconciles (event.c); without the thread they are
     * written inline, so a failure here costs speed, not Events */
    int evrc = host_events_start();
    if (evrc < 0)
        log_warn("cannot start the Event writer; writing Events inline", "error",
                 strerror(-evrc), NULL);
    for (; nthreads < h.o.workers; nthreads++) {
        atomic_fetch_add(&h.running, 1);
        if ((rc = -pthread_create(&threads[nthreads], NULL, worker, &h)) < 0) {
            atomic_fetch_sub(&h.running, 1);
            log_error("cannot start a worker thread", "error", strerror(-rc), NULL);
            break;
        }
    }
    if (nthreads == h.o.workers) {
        for (;;) {
            /* this process's figures for the one /metrics endpoint (the watcher's) */
            int erc = host__metrics_export(&h.metrics, mdir, mfile);
            if (erc < 0 && !export_warned) {
                log_warn("cannot write the metrics snapshot", "dir", mdir, "error", strerror(-erc), NULL);
                export_warned = true;
            }
            struct timespec ts = { 2, 0 };
            sig = sigtimedwait(&set, NULL, &ts);
            if (sig > 0)
                break;
            struct ipc_status st;
            if (ipc_client_status(h.ipc, 1000, &st) == 0) {
                host__metrics_set_status(&h.metrics, &st);
                ipc_status_free(&st);
            } else {
                host__metrics_set_status(&h.metrics, NULL);
            }
        }
        log_info("signal received; draining", "signal", strsignal(sig), NULL);
    }
    atomic_store(&h.stopping, true);
    if (drain(&h) < 0) {
        char n[16];
        snprintf(n, sizeof(n), "%d", atomic_load(&h.running));
        log_error("drain timed out; exiting with reconciles in flight (the watcher requeues "
                  "their keys)", "inFlight", n, NULL);
        _exit(1);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    exit_code = sig > 0 && !atomic_load(&h.kube_failed) && !atomic_load(&h.leader_lost) ? 0 : 1;
    free(threads);
out_ipc:
    host__http_stop(h.http);
    ipc_client_close(h.ipc);   /* hands back keys delivered but not pulled */
    /* after the keys are handed back: the standby may take over at once */
    host__leader_stop(h.leader, !atomic_load(&h.leader_lost));
out_metrics:
    if (mfile[0]) {   /* a clean exit takes its figures out of the pool */
        char p[700];
        snprintf(p, sizeof(p), "%s/%s", mdir, mfile);
        unlink(p);
    }
    host__metrics_destroy(&h.metrics);
out:
    if (kube_started)
        pthread_join(h.kube_thread, NULL);
    /* the kind's calls still out borrow the client too: they end first, or the client stays */
    bool kind_busy = h.kind->stop && h.kind->stop(KIND_STOP_MS) < 0;
    host_events_stop(EVENTS_STOP_MS);   /* before the client it writes through goes */
    host_view_close(h.view);
    if (kind_busy) {
        log_warn("calls still out at exit; exiting without freeing the API client",
                 "controller", h.kind->name, NULL);
        if (exit_code == 0)
            log_info("controller stopped", NULL);
        /* not exit(): atexit handlers and library destructors would run under the calls */
        _exit(atomic_load(&h.kube_config_bad) ? UTIL_EXIT_CONFIG : exit_code);
    }
    kube_client_free(h.kube);
    kube_config_free(h.kcfg);
    host_opts_free(&h.o);
    host__kube_slot_destroy(&h.kube_slot);
    if (atomic_load(&h.kube_config_bad))
        exit_code = UTIL_EXIT_CONFIG;
    if (exit_code == 0)
        log_info("controller stopped", NULL);
    return exit_code;
}

/*
 * up.c - `rayop up`, the local supervisor (see up.h).
 *
 * One thread, one poll loop: each child's stdout and stderr go to one pipe
 * that the loop reads and re-emits line by line (a JSON line gets
 * "proc":"NAME" inserted, any other line a "[NAME] " prefix); a self-pipe
 * carries SIGCHLD/SIGTERM/SIGINT. A child that exits is started again after
 * a delay that doubles per consecutive exit (initial .. max) and resets once
 * it has run reset_ms, as a kubelet does with CrashLoopBackOff (there: 10 s
 * doubling to 5 min, reset after 10 min; here 1 s to 10 s, reset after 10 s,
 * all three scalable by flag). Unlike the kubelet, a child that ran reset_ms
 * or longer restarts at once: its exit was no crash loop (a kill -9, an OOM),
 * and the watcher's restart is a pause for every controller (the chaos soak
 * saw 6 watcher kills in 20 s cost 20-35 s of progress under the kubelet's rule). On SIGTERM/SIGINT every child gets
 * SIGTERM, the supervisor waits up to --shutdown-timeout-ms, then SIGKILLs.
 * Restart counts and pids go to <state-dir>/up.json (mode 0600, replaced
 * atomically) on every change, for `rayop status`. Children get SIGTERM when
 * up dies (PR_SET_PDEATHSIG), so a new up starts on a free state dir; what
 * they log after that goes to <state-dir>/NAME.orphaned.log (appended).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cmd/cmd.h"
#include "cmd/up/internal.h"
#include "kobj/kobj.h"
#include "kobj/yamljson.h"
#include "reconcilers/batchsched/batchsched.h"
#include "cmd/up/up.h"
#include "util/util.h"

#define UP_MAX_PROCS  8
#define UP_MAX_ARGS   64
#define UP_LINE_MAX   65536

struct proc {
    char name[32];                  /* "watcher", "raycluster", ... */
    char *argv[UP_MAX_ARGS + 1];    /* borrowed strings */
    int argc;
    pid_t pid;                      /* 0 when not running */
    int fd;                         /* read end of its output pipe, -1 if none */
    char line[UP_LINE_MAX];
    size_t len;
    uint64_t started_ms, due_ms;    /* due: next start (when pid == 0) */
    uint64_t backoff_ms;
    uint64_t restarts;
    int last_status;
    char last_error[300];           /* its last error-level log line: msg: error */
};

struct up {
    struct proc procs[UP_MAX_PROCS];
    int nprocs;
    const char *state_dir;
    const char *config_file;   /* --config, KubeRay's Configuration */
    uint64_t initial_ms, max_ms, reset_ms, shutdown_ms;
    bool stopping;
    int fatal;              /* a child's usage/config exit code: stop, do not restart */
};

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    if (write(sig_pipe[1], &c, 1) < 0) { /* pipe full: a wakeup is pending anyway */ }
    errno = saved;
}

static void usage(FILE *f)
{
    fputs("usage: rayop up [flags]\n"
          "Runs `rayop watcher` and one `rayop controller KIND` per kind, restarting any that\n"
          "exits (1 s doubling to 10 s). A usage or configuration error (exit 2 / 78) is not\n"
          "retried: up checks flags, feature gates and the kubeconfig before starting anything,\n"
          "and stops everything with the child's code if a child reports one.\n"
          "  --controllers A,B,C         kinds to run (default raycluster,rayjob,rayservice,raycronjob)\n"
          "  ENABLE_WEBHOOKS=true        also runs `rayop webhook` (KubeRay's validating webhooks, :9443);\n"
          "  --config goes to the watcher too; --enable-metrics to the controllers\n"
          "  --kubeconfig, --context, --namespace/--watch-namespace, --state-dir, --qps, --burst,\n"
          "  --log-level, --log-stdout-encoder   passed to every child (the encoder also to up's own lines)\n"
          "  --cache-capacity, --cache-max-objects, --cache-max-bytes   passed to the watcher\n"
          "  --workers/--reconcile-concurrency, --config, --feature-gates, --enable-leader-election,\n"
          "  --leader-election-namespace, --leader-lease-seconds, --batch-scheduler,\n"
          "  --enable-batch-scheduler, --drain-timeout-ms   passed to controllers\n"
          "  --use-kubernetes-proxy BOOL reach Ray dashboards through the API server (default: true\n"
          "                              outside a Pod, false in one, as KubeRay's default)\n"
          "  --metrics-addr ADDR         the watcher's one /metrics for every process (default :8080 in\n"
          "                              a Pod, 127.0.0.1:8080 outside one; 0 off)\n"
          "  --health-probe-bind-address ADDR   the i-th controller's /healthz, /readyz on port+i\n"
          "                              (default :8082 in a Pod, 127.0.0.1:8082 outside one: KubeRay's\n"
          "                              and `rayop controller`'s port for the first, then 8083...; 0 off)\n"
          "  --restart-initial-ms N      first restart delay (default 1000), doubled per exit\n"
          "  --restart-max-ms N          cap (default 10000)\n"
          "  --restart-reset-ms N        a child that ran this long restarts at once (default 10000)\n"
          "  --shutdown-timeout-ms N     SIGKILL children still running after this (default 35000)\n"
          "Exit codes: 0 stopped by a signal, 1 children killed after the timeout, 2 bad flag or value,\n"
          "78 configuration error (kubeconfig, feature gate, --config file).\n", f);
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
        return -EINVAL;
    *out = n;
    return 0;
}

static int add_arg(struct proc *p, char *a)
{
    if (p->argc >= UP_MAX_ARGS)
        return -E2BIG;
    p->argv[p->argc++] = a;
    p->argv[p->argc] = NULL;
    return 0;
}

/* "host:port" shifted by off ("0" stays off). Result in a static-lifetime strdup. */
static char *shift_addr(const char *addr, int off)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || strcmp(addr, "0") == 0)
        return strdup(addr);
    long port = strtol(colon + 1, NULL, 10);
    if (port <= 0)
        return strdup(addr);
    char out[160];
    snprintf(out, sizeof(out), "%.*s:%ld", (int)(colon - addr), addr, port + off);
    return strdup(out);
}

static int write_state(struct up *u)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    if ((size_t)snprintf(path, sizeof(path), "%s/up.json", u->state_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    struct buf b = { 0 };
    buf_printf(&b, "{\"pid\":%d,\"procs\":[", (int)getpid());
    for (int i = 0; i < u->nprocs; i++) {
        struct proc *p = &u->procs[i];
        buf_printf(&b, "%s{\"name\":", i ? "," : "");
        buf_append_json_string(&b, p->name);
        buf_printf(&b, ",\"pid\":%d,\"restarts\":%llu,\"lastExitStatus\":%d,\"lastError\":",
                   (int)p->pid, (unsigned long long)p->restarts, p->last_status);
        buf_append_json_string(&b, p->last_error);
        buf_puts(&b, "}");
    }
    buf_puts(&b, "]}\n");
    int rc = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || !b.data || write(fd, b.data, b.len) != (ssize_t)b.len)
        rc = errno ? -errno : -EIO;
    if (fd >= 0)
        close(fd);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    buf_free(&b);
    return rc;
}

static int start_proc(struct up *u, struct proc *p)
{
    int fds[2];
    char orphaned[PATH_MAX];
    /* where the child's log lines go if up dies before it (util/log.c) */
    if ((size_t)snprintf(orphaned, sizeof(orphaned), "%s/%s.orphaned.log", u->state_dir,
                         p->name) >= sizeof(orphaned))
        orphaned[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_IGN);  /* ^C reaches the whole group: let up forward SIGTERM */
        /* up killed -9 must not leave its children running: orphans keep the
         * socket and the segment, so the next up's watcher cannot start and two
         * controllers of a kind would work at once. SIGTERM drains them as a
         * clean stop does (the segment stays: a crash keeps the cache). */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(1);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        if (orphaned[0])
            setenv("RAYOP_LOG_ORPHANED", orphaned, 1);
        execv("/proc/self/exe", p->argv);
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    p->pid = pid;
    p->fd = fds[0];
    p->len = 0;
    p->started_ms = util_now_ms();
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", (int)pid);
    log_info("started", "proc", p->name, "pid", ps, NULL);
    return 0;
}

uint64_t up__next_backoff(uint64_t prev_ms, uint64_t ran_ms, uint64_t initial_ms,
                         uint64_t max_ms, uint64_t reset_ms)
{
    if (ran_ms >= reset_ms)
        return 0;
    uint64_t next = prev_ms ? (prev_ms > max_ms / 2 ? max_ms : prev_ms * 2) : initial_ms;
    return next > max_ms ? max_ms : next;
}

int up__tag_line(const char *proc, const char *s, size_t n, struct buf *out)
{
    int rc = 0;
    if (n >= 2 && s[0] == '{' && s[n - 1] == '}') {
        rc |= buf_puts(out, "{\"proc\":");
        rc |= buf_append_json_string(out, proc);
        /* "{}" has no fields to separate from */
        size_t i = 1;
        while (i < n - 1 && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n - 1)
            rc |= buf_puts(out, ",");
        rc |= buf_append(out, s + 1, n - 1);
    } else {
        rc |= buf_printf(out, "[%s] ", proc);
        rc |= buf_append(out, s, n);
    }
    rc |= buf_puts(out, "\n");
    return rc ? -ENOMEM : 0;
}

static int write_state(struct up *u);
static struct up *the_up;

/* An error-level JSON line of p: remembered (msg: error) for `rayop status`. */
static void note_error(struct proc *p, const char *s, size_t n)
{
    if (n < 2 || s[0] != '{' || !memmem(s, n, "\"level\":\"error\"", 16))
        return;
    cJSON *j = cJSON_ParseWithLength(s, n);
    const char *msg = kobj_str(j, "msg"), *err = kobj_str(j, "error");
    if (msg) {
        snprintf(p->last_error, sizeof(p->last_error), "%s%s%.200s", msg, err ? ": " : "",
                 err ? err : "");
        if (the_up)
            (void)write_state(the_up);
    }
    cJSON_Delete(j);
}

/* Writes one complete line of p's output to stdout, tagged with the proc. */
static void emit_line(struct proc *p, const char *s, size_t n)
{
    note_error(p, s, n);
    struct buf b = { 0 };
    if (up__tag_line(p->name, s, n, &b) < 0) {
        buf_free(&b);
        return;
    }
    for (size_t off = 0; b.data && off < b.len;) {
        ssize_t w = write(STDOUT_FILENO, b.data + off, b.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    buf_free(&b);
}

/* Reads what p wrote; returns 1 at EOF (fd closed). */
static int drain_output(struct proc *p)
{
    for (;;) {
        ssize_t n = read(p->fd, p->line + p->len, sizeof(p->line) - p->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 0;
        if (n == 0) {
            if (p->len)
                emit_line(p, p->line, p->len);
            p->len = 0;
            close(p->fd);
            p->fd = -1;
            return 1;
        }
        p->len += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < p->len; i++) {
            if (p->line[i] == '\n') {
                emit_line(p, p->line + start, i - start);
                start = i + 1;
            }
        }
        memmove(p->line, p->line + start, p->len - start);
        p->len -= start;
        if (p->len == sizeof(p->line)) {  /* an over-long line: pass it on in pieces */
            emit_line(p, p->line, p->len);
            p->len = 0;
        }
    }
}

static void reap(struct up *u)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < u->nprocs; i++) {
            struct proc *p = &u->procs[i];
            if (p->pid != pid)
                continue;
            uint64_t now = util_now_ms(), ran = now - p->started_ms;
            p->pid = 0;
            p->last_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            p->backoff_ms = up__next_backoff(p->backoff_ms, ran, u->initial_ms, u->max_ms,
                                            u->reset_ms);
            p->due_ms = now + p->backoff_ms;
            char st[16], delay[24];
            snprintf(st, sizeof(st), "%d", p->last_status);
            snprintf(delay, sizeof(delay), "%llu", (unsigned long long)p->backoff_ms);
            if (u->stopping) {
                log_info("exited", "proc", p->name, "status", st, NULL);
            } else if (p->last_status == UTIL_EXIT_USAGE || p->last_status == UTIL_EXIT_CONFIG) {
                /* its own last lines say why; a restart would say it again */
                log_error("exited with a configuration error; stopping instead of restarting",
                          "proc", p->name, "status", st, NULL);
                u->fatal = p->last_status;
            } else {
                log_warn("exited; restarting after backoff", "proc", p->name, "status", st,
                         "backoffMs", delay, NULL);
            }
        }
    }
    (void)write_state(u);
}

static int parse_flag_list(struct up *u, int argc, char **argv, char ***common, int *ncommon,
                           char ***wonly, int *nw, char ***conly, int *nc, const char **kinds,
                           const char **maddr, const char **paddr, bool *proxy_set,
                           const char **bs_name_out, bool *bs_legacy_out);

/* The flags, then KubeRay's batch-scheduler check on what they chose. */
static int parse_flags(struct up *u, int argc, char **argv, char ***common, int *ncommon,
                       char ***wonly, int *nw, char ***conly, int *nc, const char **kinds,
                       const char **maddr, const char **paddr, bool *proxy_set)
{
    const char *bs_name = NULL;
    bool bs_legacy = false;
    int rc = parse_flag_list(u, argc, argv, common, ncommon, wonly, nw, conly, nc, kinds, maddr,
                             paddr, proxy_set, &bs_name, &bs_legacy);
    enum batchsched_kind bk;
    char berr[256];
    /* fail here, as each controller would, rather than restart them forever (the
     * KubernetesWAS gate's combination is left to the controllers, which read --config) */
    if (rc == 0 && batchsched_select(bs_name, bs_legacy, false, &bk, berr, sizeof(berr)) < 0) {
        fprintf(stderr, "rayop up: batch scheduler configs validation failed: %s\n", berr);
        return -EINVAL;
    }
    return rc;
}

static int parse_flag_list(struct up *u, int argc, char **argv, char ***common, int *ncommon,
                           char ***wonly, int *nw, char ***conly, int *nc, const char **kinds,
                           const char **maddr, const char **paddr, bool *proxy_set,
                           const char **bs_name_out, bool *bs_legacy_out)
{
    const char *bs_name = NULL;
    bool bs_legacy = false;
    static const char *const common_flags[] = { "kubeconfig", "context", "namespace", "config",
        "watch-namespace", "state-dir", "qps", "burst", "log-level", "log-stdout-encoder", NULL };
    static const char *const watcher_flags[] = { "cache-capacity", "cache-max-objects",
        "cache-max-bytes", NULL };
    static const char *const ctl_flags[] = { "workers", "reconcile-concurrency",
        "feature-gates", "enable-leader-election", "leader-election-namespace",
        "leader-lease-seconds", "use-kubernetes-proxy", "drain-timeout-ms", "batch-scheduler",
        "enable-batch-scheduler", "enable-metrics", NULL };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq;
        char name[64];
        int fr = util_flag_split("rayop up", a, name, sizeof(name), &eq);
        if (fr == 1)
            usage(stdout);
        if (fr)
            return fr;
        static const char *const own[] = { "controllers", "metrics-addr",
            "health-probe-bind-address", "restart-initial-ms", "restart-max-ms",
            "restart-reset-ms", "shutdown-timeout-ms", NULL };
        bool known = false, is_bool = strcmp(name, "use-kubernetes-proxy") == 0 ||
                                      strcmp(name, "enable-leader-election") == 0 ||
                                      strcmp(name, "enable-batch-scheduler") == 0;
        const char *const *all[] = { own, common_flags, watcher_flags, ctl_flags };
        for (int l = 0; l < 4 && !known; l++)
            for (int k = 0; all[l][k] && !known; k++)
                known = strcmp(all[l][k], name) == 0;
        if (!known)
            goto unknown;   /* before taking a value: "--nosuch" last is unknown, not valueless */
        char *val;
        if (eq)
            val = (char *)eq;
        else if (is_bool && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
            val = "true";   /* KubeRay's bool flags may be given bare */
            a = strcmp(name, "use-kubernetes-proxy") == 0 ? "--use-kubernetes-proxy=true"
                : strcmp(name, "enable-batch-scheduler") == 0 ? "--enable-batch-scheduler=true"
                                                               : "--enable-leader-election=true";
        } else if (i + 1 < argc)
            val = argv[++i];
        else {
            fprintf(stderr, "rayop up: flag --%s needs a value\n", name);
            return -EINVAL;
        }
        if (strcmp(name, "use-kubernetes-proxy") == 0)
            *proxy_set = true;
        if (strcmp(name, "log-stdout-encoder") == 0 && log_parse_encoder(val) >= 0)
            log_set_encoder(log_parse_encoder(val));
        if (strcmp(name, "state-dir") == 0)
            u->state_dir = val;
        if (strcmp(name, "config") == 0)
            u->config_file = val;
        if (strcmp(name, "batch-scheduler") == 0)
            bs_name = val;
        if (strcmp(name, "enable-batch-scheduler") == 0)
            bs_legacy = strcmp(val, "true") == 0 || strcmp(val, "1") == 0;
        if (strcmp(name, "controllers") == 0) { *kinds = val; continue; }
        if (strcmp(name, "metrics-addr") == 0) { *maddr = val; continue; }
        if (strcmp(name, "health-probe-bind-address") == 0) { *paddr = val; continue; }
        uint64_t *num = strcmp(name, "restart-initial-ms") == 0 ? &u->initial_ms
                      : strcmp(name, "restart-max-ms") == 0 ? &u->max_ms
                      : strcmp(name, "restart-reset-ms") == 0 ? &u->reset_ms
                      : strcmp(name, "shutdown-timeout-ms") == 0 ? &u->shutdown_ms : NULL;
        if (num) {
            if (parse_u64(val, num) < 0) {
                fprintf(stderr, "rayop up: bad value \"%s\" for --%s\n", val, name);
                return -EINVAL;
            }
            continue;
        }
        const char *const *lists[] = { common_flags, watcher_flags, ctl_flags };
        char **dst[] = { *common, *wonly, *conly };
        int *cnt[] = { ncommon, nw, nc };
        int found = 0;
        for (int l = 0; l < 3 && !found; l++)
            for (int k = 0; lists[l][k] && !found; k++)
                if (strcmp(lists[l][k], name) == 0) {
                    if (*cnt[l] + 2 > UP_MAX_ARGS / 2)
                        return -E2BIG;
                    dst[l][(*cnt[l])++] = (char *)a;  /* "--name" or "--name=value" */
                    if (!eq && !strchr(a, '='))
                        dst[l][(*cnt[l])++] = val;
                    found = 1;
                }
        if (!found)
            goto unknown;
        continue;
    unknown:
        fprintf(stderr, "rayop up: unknown flag \"%s\"\n", a);
        return -EINVAL;
    }
    *bs_name_out = bs_name;
    *bs_legacy_out = bs_legacy;
    return 0;
}

static void forward(struct up *u, int sig)
{
    for (int i = 0; i < u->nprocs; i++)
        if (u->procs[i].pid > 0)
            kill(u->procs[i].pid, sig);
}

static int running(const struct up *u)
{
    int n = 0;
    for (int i = 0; i < u->nprocs; i++)
        n += u->procs[i].pid > 0 || u->procs[i].fd >= 0;
    return n;
}

/* A Configuration's metricsAddr and probeAddr name the operator's endpoints, which up owns:
 * the watcher serves the one /metrics and controller i probes on probeAddr's port + i (each
 * controller is told --supervised, so the file does not put them all on one port). An
 * unreadable file is left for the children to report with their exit code 78. */
static void config_addrs(const char *path, const char **maddr, const char **paddr)
{
    static char m[128], p[128];
    char err[128], *data;
    cJSON *doc = NULL;
    size_t n;
    if (util_read_file(path, 1u << 20, &data, &n) < 0)
        return;
    if (yamljson_parse_one(data, n, &doc, err, sizeof(err)) == 0) {
        const char *v = kobj_str(doc, "metricsAddr");
        if (v && v[0] && strlen(v) < sizeof(m)) {
            snprintf(m, sizeof(m), "%s", v);
            *maddr = m;
        }
        v = kobj_str(doc, "probeAddr");
        if (v && v[0] && strlen(v) < sizeof(p)) {
            snprintf(p, sizeof(p), "%s", v);
            *paddr = p;
        }
    }
    cJSON_Delete(doc);
    free(data);
}

int up_main(int argc, char **argv)
{
    static struct up u;   /* large line buffers: not on the stack */
    char *common_v[UP_MAX_ARGS / 2], *w_v[UP_MAX_ARGS / 2], *c_v[UP_MAX_ARGS / 2];
    char **common = common_v, **wonly = w_v, **conly = c_v;
    int ncommon = 0, nw = 0, nc = 0, rc;
    bool in_pod = up__in_pod(), proxy_set = false;
    /* outside a Pod nothing but this machine should reach the ports */
    const char *kinds = "raycluster,rayjob,rayservice,raycronjob";
    const char *maddr = in_pod ? ":8080" : "127.0.0.1:8080";
    const char *paddr = in_pod ? ":8082" : "127.0.0.1:8082";   /* KubeRay's probe port */
    memset(&u, 0, sizeof(u));
    the_up = &u;
    u.state_dir = "/run/rayop";
    u.initial_ms = 1000;
    u.max_ms = 10000;
    u.reset_ms = 10000;
    u.shutdown_ms = 35000;
    if ((rc = parse_flags(&u, argc, argv, &common, &ncommon, &wonly, &nw, &conly, &nc, &kinds,
                          &maddr, &paddr, &proxy_set)) != 0)
        return rc > 0 ? 0 : UTIL_EXIT_USAGE;
    log_set_component("up");
    if (u.config_file)
        config_addrs(u.config_file, &maddr, &paddr);
    /* outside a cluster the Ray dashboards (Pod IPs, cluster DNS) are out of
     * reach: go through the API server's service proxy unless told otherwise */
    static char proxy_flag[] = "--use-kubernetes-proxy=true";
    if (!in_pod && !proxy_set && nc < UP_MAX_ARGS / 2)
        conly[nc++] = proxy_flag;

    /* the watcher first: controllers wait for its segment and socket anyway */
    struct proc *p = &u.procs[u.nprocs++];
    snprintf(p->name, sizeof(p->name), "watcher");
    add_arg(p, "rayop");
    add_arg(p, "watcher");
    for (int i = 0; i < ncommon; i++) add_arg(p, common[i]);
    for (int i = 0; i < nw; i++) add_arg(p, wonly[i]);
    /* the Pod's one /metrics: the watcher pools every controller's figures */
    add_arg(p, "--metrics-addr");
    add_arg(p, (char *)maddr);
    for (const char *k = kinds; *k && u.nprocs < UP_MAX_PROCS;) {
        const char *e = strchr(k, ',');
        size_t n = e ? (size_t)(e - k) : strlen(k);
        if (n && n < sizeof(p->name)) {
            int idx = u.nprocs - 1;
            p = &u.procs[u.nprocs++];
            memcpy(p->name, k, n);
            p->name[n] = '\0';
            add_arg(p, "rayop");
            add_arg(p, "controller");
            add_arg(p, p->name);
            for (int i = 0; i < ncommon; i++) add_arg(p, common[i]);
            for (int i = 0; i < nc; i++) add_arg(p, conly[i]);
            /* no per-process /metrics: the snapshots reach the watcher's endpoint */
            add_arg(p, "--metrics-addr");
            add_arg(p, "0");
            add_arg(p, "--health-probe-bind-address");
            add_arg(p, shift_addr(paddr, idx));
            add_arg(p, "--supervised");
        }
        k += n + (e ? 1 : 0);
    }

    /* KubeRay's switch: ENABLE_WEBHOOKS=true serves the validating webhooks (:9443,
     * the serving certificate in controller-runtime's default directory) */
    const char *wh = getenv("ENABLE_WEBHOOKS");
    if (wh && !strcmp(wh, "true") && u.nprocs < UP_MAX_PROCS) {
        p = &u.procs[u.nprocs++];
        snprintf(p->name, sizeof(p->name), "webhook");
        add_arg(p, "rayop");
        add_arg(p, "webhook");
    }
    if (u.nprocs > 1 &&
        (rc = up__preflight(u.procs[0].argv + 1, u.procs[0].argc - 1, u.procs[1].argv + 1,
                           u.procs[1].argc - 1)) != 0)
        return rc;
    if (in_pod)
        log_info("running in a Pod", "controllers", kinds, "stateDir", u.state_dir, NULL);
    else
        log_info(proxy_set ? "running outside a cluster"
                           : "running outside a cluster: Ray dashboards are reached through the "
                             "API server proxy (--use-kubernetes-proxy=true; set it to false to "
                             "connect to them directly)",
                 "controllers", kinds, "metricsAddr", maddr, "healthProbeAddr", paddr,
                 "stateDir", u.state_dir, NULL);

    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* up.json goes in the state dir, which the watcher would create only once started:
     * make it here so `rayop status` sees the processes from the start (a dir with no
     * record of its API server is treated by the watcher as new, as before) */
    if (mkdir(u.state_dir, 0700) < 0 && errno != EEXIST)
        log_warn("cannot create the state dir", "dir", u.state_dir, "error", strerror(errno), NULL);
    for (int i = 0; i < u.nprocs; i++) {
        u.procs[i].fd = -1;
        if ((rc = start_proc(&u, &u.procs[i])) < 0) {
            log_error("cannot start", "proc", u.procs[i].name, "error", strerror(-rc), NULL);
            u.procs[i].due_ms = util_now_ms() + u.initial_ms;
        }
    }
    (void)write_state(&u);

    uint64_t stop_deadline = 0;
    int exit_code = 0;
    while (!u.stopping || running(&u) > 0) {
        struct pollfd pfd[UP_MAX_PROCS + 1];
        int map[UP_MAX_PROCS + 1], n = 0;
        pfd[n].fd = sig_pipe[0];
        pfd[n].events = POLLIN;
        map[n++] = -1;
        uint64_t now = util_now_ms(), next = now + 1000;
        for (int i = 0; i < u.nprocs; i++) {
            struct proc *q = &u.procs[i];
            if (q->fd >= 0) {
                pfd[n].fd = q->fd;
                pfd[n].events = POLLIN;
                map[n++] = i;
            }
            if (!u.stopping && q->pid == 0 && q->due_ms && q->due_ms < next)
                next = q->due_ms;
        }
        if (u.stopping && stop_deadline < next)
            next = stop_deadline;
        int timeout = next > now ? (int)(next - now) : 0;
        if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
            break;
        for (int k = 1; k < n; k++)
            if (pfd[k].revents)
                drain_output(&u.procs[map[k]]);
        if (pfd[0].revents) {
            unsigned char sigs[64];
            ssize_t got = read(sig_pipe[0], sigs, sizeof(sigs));
            for (ssize_t k = 0; k < got; k++) {
                if (sigs[k] == SIGCHLD) {
                    reap(&u);
                } else if (!u.stopping) {
                    log_info("signal received; stopping children", "signal",
                             strsignal(sigs[k]), NULL);
                    u.stopping = true;
                    stop_deadline = util_now_ms() + u.shutdown_ms;
                    forward(&u, SIGTERM);
                }
            }
        }
        if (u.fatal && !u.stopping) {
            u.stopping = true;
            exit_code = u.fatal;
            stop_deadline = util_now_ms() + u.shutdown_ms;
            forward(&u, SIGTERM);
        }
        now = util_now_ms();
        if (u.stopping && now >= stop_deadline && running(&u) > 0) {
            log_error("children still running after the shutdown timeout; killing them", NULL);
            forward(&u, SIGKILL);
            stop_deadline = now + 60000;
            exit_code = 1;
        }
        for (int i = 0; i < u.nprocs && !u.stopping; i++) {
            struct proc *q = &u.procs[i];
            if (q->pid == 0 && q->fd < 0 && q->due_ms && now >= q->due_ms) {
                q->due_ms = 0;
                if ((rc = start_proc(&u, q)) < 0) {
                    log_error("cannot start", "proc", q->name, "error", strerror(-rc), NULL);
                    q->due_ms = now + u.max_ms;
                    continue;
                }
                q->restarts++;
                (void)write_state(&u);
            }
        }
    }
    log_info("all children stopped", NULL);
    /* A clean stop of the whole instance leaves nothing in /dev/shm: the
     * segment is reserved memory, and nothing will read it again soon. A
     * crash (of up, or a child killed) keeps it so the restart skips the LIST;
     * `rayop clean` removes it then. */
    if (exit_code == 0 && !u.fatal) {
        char seg[CACHE_SEGNAME_MAX];
        int removed = 0, crc = clean_state_dir(u.state_dir, &removed, seg, sizeof(seg));
        if (crc < 0)
            log_warn("could not drop the cache segment; `rayop clean` removes it", "stateDir",
                     u.state_dir, "error", strerror(-crc), NULL);
        else if (removed)
            log_info("dropped the cache segment (clean stop)", "segment", seg, NULL);
    }
    return exit_code;
}

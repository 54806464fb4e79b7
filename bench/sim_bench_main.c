/*
 * sim_bench_main.c - bin/sim_bench, kubesim's throughput benchmark (make bench-sim).
 *
 * Two figures from the targets, measured over loopback against a kubesim this
 * program starts itself (--kubesim PATH; its first stdout line carries the URL) or
 * one already running (--url):
 *
 *  1. creates/s from ONE keep-alive client: a single curl easy handle POSTs N
 *     Pod-sized objects one after another (no pipelining, as client-go does).
 *  2. watch fan-out: W threads each hold a streaming watch on the ConfigMaps of a
 *     fresh namespace while one writer creates and then patches M objects. Each
 *     object carries its send time (CLOCK_REALTIME ns) in an annotation, so each
 *     watcher measures the delay of every event it receives. Reported: events/s
 *     delivered to all watchers together, and p50/p99 event delay.
 *  3. watch replay: W fresh watches from the sentinel's resourceVersion read the same
 *     M events from the server's history: the fan-out rate without the writer as a bound.
 *
 * Synchronisation is by condition, never by sleeping: the run starts with a sentinel
 * object every watcher must have seen (so all watches are established), and ends when
 * every watcher has counted its M+1 events or the --seconds bound passes.
 *
 * Exit status: 0 when the measurements completed (PASS or MISS is printed against the
 * targets; --strict turns a MISS into exit 1), 2 on a usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "util/util.h"

#define TARGET_CREATES_PER_SEC  10000.0
#define TARGET_EVENTS_PER_SEC   200000.0
#define MAX_LINE                (1u << 20)   /* longest watch event line we accept */
#define MAX_WATCHERS            1000
#define MAX_OBJECTS             1000000
#define TS_KEY                  "\"bench.rayop.io/ts\""

struct opts {
    const char *url;
    const char *kubesim;
    const char *kubesim_log;
    const char *kargs[16];
    int nkargs;
    long creates;
    long watchers;
    long objects;
    long seconds;
    bool strict;
};

/* One streaming watch. delays holds one entry per event carrying our timestamp. */
struct watcher {
    pthread_t thread;
    const struct opts *o;
    char url[512];
    struct buf line;            /* the partial event line between write callbacks */
    uint64_t *delays;           /* ns; capacity cap_delays; owned */
    size_t ndelays, cap_delays;
    atomic_long events;         /* complete lines received (published per callback) */
    long pending;               /* lines counted in this callback, not yet published */
    long bad_lines;             /* lines without our timestamp (e.g. ERROR events) */
    CURLcode rc;
    long http_code;
};

static atomic_bool g_stop;           /* tells every watcher to hang up */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static atomic_long g_events_total;
static atomic_uint_fast64_t g_last_event_ns;   /* monotonic time of the latest event anywhere */

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: sim_bench (--kubesim PATH [--kubesim-arg ARG]... | --url URL)\n"
            "                 [--creates N] [--watchers W] [--objects M] [--seconds S]\n"
            "                 [--kubesim-log FILE] [--strict]\n"
            "  --creates N   objects POSTed by the single keep-alive client (default 20000)\n"
            "  --watchers W  concurrent streaming watches (default 100, max %d)\n"
            "  --objects M   objects the writer creates and then patches (default 2000)\n"
            "  --seconds S   bound on each phase (default 60)\n",
            MAX_WATCHERS);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.creates = 20000, .watchers = 100, .objects = 2000, .seconds = 60};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        static const char *const valued[] = {"--url", "--kubesim", "--kubesim-log", "--kubesim-arg",
                                             "--creates", "--watchers", "--objects", "--seconds"};
        bool known = false;
        if (!strcmp(a, "--strict")) { o->strict = true; continue; }
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            known |= !strcmp(a, valued[k]);
        if (!known) { fprintf(stderr, "sim_bench: unknown flag %s\n", a); return -EINVAL; }
        if (!v) { fprintf(stderr, "sim_bench: %s needs a value\n", a); return -EINVAL; }
        i++;
        if (!strcmp(a, "--url")) o->url = v;
        else if (!strcmp(a, "--kubesim")) o->kubesim = v;
        else if (!strcmp(a, "--kubesim-log")) o->kubesim_log = v;
        else if (!strcmp(a, "--kubesim-arg")) {
            if (o->nkargs >= (int)(sizeof o->kargs / sizeof o->kargs[0]) - 2) {
                fprintf(stderr, "sim_bench: too many --kubesim-arg\n");
                return -EINVAL;
            }
            o->kargs[o->nkargs++] = v;
        }
        else if (!strcmp(a, "--creates")) rc = parse_long(v, 1, MAX_OBJECTS, &o->creates);
        else if (!strcmp(a, "--watchers")) rc = parse_long(v, 1, MAX_WATCHERS, &o->watchers);
        else if (!strcmp(a, "--objects")) rc = parse_long(v, 1, MAX_OBJECTS, &o->objects);
        else rc = parse_long(v, 1, 3600, &o->seconds);     /* --seconds */
        if (rc) { fprintf(stderr, "sim_bench: bad value for %s: %s\n", a, v); return rc; }
    }
    if (!!o->url == !!o->kubesim) {
        fprintf(stderr, "sim_bench: give exactly one of --url and --kubesim\n");
        return -EINVAL;
    }
    return 0;
}

/* ---- the kubesim child ------------------------------------------------------ */

static pid_t g_child = -1;

/* Drains the child's stdout after the URL line so it never blocks on a full pipe. */
static void *drain_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char tmp[4096];
    while (read(fd, tmp, sizeof tmp) > 0)
        ;
    close(fd);
    return NULL;
}

/*
 * Starts kubesim and reads its first stdout line (within 15 s); the first
 * "http://" or "https://" word of it is copied into url. 0 or negative errno.
 */
static int kubesim_start(const struct opts *o, char *url, size_t urlsz)
{
    int pfd[2];
    int rc = 0;
    if (pipe(pfd) < 0)
        return -errno;
    const char *argv[20];
    int n = 0;
    argv[n++] = o->kubesim;
    for (int i = 0; i < o->nkargs; i++)
        argv[n++] = o->kargs[i];
    argv[n] = NULL;

    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        close(pfd[0]);
        close(pfd[1]);
        return rc;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        int lfd = open(o->kubesim_log ? o->kubesim_log : "/dev/null",
                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (lfd >= 0)
            dup2(lfd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    g_child = pid;
    close(pfd[1]);

    char line[1024];
    size_t len = 0;
    uint64_t deadline = util_now_ms() + 15000;
    while (len < sizeof line - 1 && !memchr(line, '\n', len)) {
        uint64_t now = util_now_ms();
        if (now >= deadline) { rc = -ETIMEDOUT; goto out; }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)(deadline - now));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) { rc = pr < 0 ? -errno : -ETIMEDOUT; goto out; }
        ssize_t r = read(pfd[0], line + len, sizeof line - 1 - len);
        if (r <= 0) { rc = -EPIPE; goto out; }   /* kubesim exited before printing */
        len += (size_t)r;
    }
    line[len] = '\0';
    char *u = strstr(line, "http://");
    if (!u)
        u = strstr(line, "https://");
    if (!u) { rc = -EPROTO; goto out; }
    size_t ul = strcspn(u, " \t\r\n\"'");
    if (ul >= urlsz) { rc = -ENAMETOOLONG; goto out; }
    memcpy(url, u, ul);
    url[ul] = '\0';
    while (ul > 0 && url[ul - 1] == '/')
        url[--ul] = '\0';

    pthread_t t;
    if (pthread_create(&t, NULL, drain_main, (void *)(intptr_t)pfd[0]) == 0) {
        pthread_detach(t);
        return 0;
    }
    rc = -EAGAIN;
out:
    close(pfd[0]);
    return rc;
}

static void kubesim_stop(void)
{
    if (g_child <= 0)
        return;
    kill(g_child, SIGTERM);
    for (int i = 0; i < 50; i++) {      /* up to 5 s for a clean exit, then SIGKILL */
        if (waitpid(g_child, NULL, WNOHANG) == g_child) { g_child = -1; return; }
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    kill(g_child, SIGKILL);
    waitpid(g_child, NULL, 0);
    g_child = -1;
}

/* ---- HTTP helpers ------------------------------------------------------------ */

static size_t sink_body(char *p, size_t size, size_t n, void *ud)
{
    struct buf *b = ud;
    size_t len = size * n;
    if (b && b->len < 65536)             /* keep the start of error bodies for messages */
        buf_append(b, p, len);
    return len;
}

/* One request on a reused handle. Returns the HTTP status, or -1 on a transport error. */
static long http_do(CURL *h, const char *method, const char *url, const char *ctype,
                    const char *body, struct buf *resp)
{
    struct curl_slist *hdrs = NULL;
    char ct[128];
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype ? ctype : "application/json");
    hdrs = curl_slist_append(hdrs, ct);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (resp)
        buf_reset(resp);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode c = curl_easy_perform(h);
    long code = -1;
    if (c == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    else
        fprintf(stderr, "sim_bench: %s %s: %s\n", method, url, curl_easy_strerror(c));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    return code;
}

static CURL *handle_new(void)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);   /* self-signed --tls kubesim */
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    return h;
}

/* Creates namespace ns; an existing one (409) is fine. 0 or -EIO. */
static int ensure_namespace(CURL *h, const char *base, const char *ns)
{
    char url[512], body[256];
    snprintf(url, sizeof url, "%s/api/v1/namespaces", base);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    long code = http_do(h, "POST", url, NULL, body, NULL);
    if (code == 201 || code == 200 || code == 409)
        return 0;
    fprintf(stderr, "sim_bench: creating namespace %s: HTTP %ld\n", ns, code);
    return -EIO;
}

/* ---- phase 1: creates from one keep-alive client ------------------------------ */

/* A realistic Pod (about 1.5 KB, like a small Ray worker's) with a unique name. */
static void pod_body(struct buf *b, const char *ns, long i)
{
    buf_reset(b);
    buf_printf(b,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bench-pod-%ld\","
        "\"namespace\":\"%s\",\"labels\":{\"app.kubernetes.io/name\":\"kuberay\","
        "\"ray.io/cluster\":\"bench\",\"ray.io/group\":\"workers\",\"ray.io/node-type\":\"worker\"},"
        "\"annotations\":{\"ray.io/ft-enabled\":\"false\"}},"
        "\"spec\":{\"restartPolicy\":\"Always\",\"containers\":[{\"name\":\"ray-worker\","
        "\"image\":\"rayproject/ray:2.52.0\",\"imagePullPolicy\":\"IfNotPresent\","
        "\"command\":[\"/bin/bash\",\"-lc\",\"--\"],"
        "\"args\":[\"ulimit -n 65536; ray start --address=bench-head-svc.default.svc.cluster.local:6379 "
        "--block --dashboard-agent-listen-port=52365 --memory=4294967296 --num-cpus=1\"],"
        "\"env\":[{\"name\":\"RAY_CLUSTER_NAME\",\"value\":\"bench\"},"
        "{\"name\":\"RAY_IP\",\"value\":\"bench-head-svc\"},{\"name\":\"RAY_PORT\",\"value\":\"6379\"},"
        "{\"name\":\"RAY_USAGE_STATS_KUBERAY_IN_USE\",\"value\":\"1\"},"
        "{\"name\":\"RAY_ADDRESS\",\"value\":\"bench-head-svc:6379\"},"
        "{\"name\":\"REDIS_PASSWORD\",\"value\":\"\"},{\"name\":\"RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE\",\"value\":\"1\"}],"
        "\"ports\":[{\"containerPort\":8080,\"name\":\"metrics\",\"protocol\":\"TCP\"}],"
        "\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"4Gi\"},\"requests\":{\"cpu\":\"1\",\"memory\":\"4Gi\"}},"
        "\"livenessProbe\":{\"exec\":{\"command\":[\"bash\",\"-c\",\"wget -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success\"]},"
        "\"initialDelaySeconds\":30,\"periodSeconds\":5,\"timeoutSeconds\":2,\"failureThreshold\":120},"
        "\"volumeMounts\":[{\"name\":\"shared-mem\",\"mountPath\":\"/dev/shm\"}]}],"
        "\"volumes\":[{\"name\":\"shared-mem\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"1Gi\"}}]}}",
        i, ns);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(const uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

static const char *verdict(double got, double target)
{
    return got >= target ? "PASS" : "MISS";
}

/* Returns 0 (figures printed; *miss set when below target) or a negative errno. */
static int bench_creates(const struct opts *o, const char *base, bool *miss)
{
    int rc = 0;
    struct buf body = {0}, resp = {0};
    uint64_t *lat = calloc((size_t)o->creates, sizeof *lat);
    CURL *h = handle_new();
    long done = 0;
    if (!lat || !h) { rc = -ENOMEM; goto out; }
    if ((rc = ensure_namespace(h, base, "bench-create")) < 0)
        goto out;

    char url[512];
    snprintf(url, sizeof url, "%s/api/v1/namespaces/bench-create/pods", base);
    uint64_t start = util_now_ns(), bound = start + (uint64_t)o->seconds * 1000000000u;
    for (; done < o->creates; done++) {
        pod_body(&body, "bench-create", done);
        if (!body.data) { rc = -ENOMEM; goto out; }
        uint64_t t0 = util_now_ns();
        long code = http_do(h, "POST", url, NULL, body.data, &resp);
        lat[done] = util_now_ns() - t0;
        if (code != 201) {
            fprintf(stderr, "sim_bench: create %ld: HTTP %ld: %.300s\n", done, code,
                    resp.data ? resp.data : "");
            rc = -EIO;
            goto out;
        }
        if (lat[done] + t0 > bound)
            { done++; break; }
    }
    double secs = (double)(util_now_ns() - start) / 1e9;
    double rate = (double)done / secs;
    qsort(lat, (size_t)done, sizeof *lat, cmp_u64);
    printf("creates: %ld Pods from one keep-alive client in %.2f s: %.0f creates/s "
           "(latency p50 %.3f ms, p99 %.3f ms)   target >= %.0f  %s\n",
           done, secs, rate, pct_ms(lat, (size_t)done, 0.50), pct_ms(lat, (size_t)done, 0.99),
           TARGET_CREATES_PER_SEC, verdict(rate, TARGET_CREATES_PER_SEC));
    if (done < o->creates)
        printf("creates: stopped at the %ld s bound after %ld of %ld\n", o->seconds, done, o->creates);
    *miss |= rate < TARGET_CREATES_PER_SEC;
out:
    if (h)
        curl_easy_cleanup(h);
    free(lat);
    buf_free(&body);
    buf_free(&resp);
    return rc;
}

/* ---- phase 2: watch fan-out --------------------------------------------------- */

/* Handles one complete event line: counts it and records its delay. */
static void watcher_line(struct watcher *w, const char *line, size_t len, uint64_t now_real)
{
    const char *k = memmem(line, len, TS_KEY, sizeof TS_KEY - 1);
    if (!k) {
        w->bad_lines++;
    } else {
        const char *p = k + sizeof TS_KEY - 1, *end = line + len;
        uint64_t ts = 0;
        int digits = 0;
        while (p < end && (*p == ' ' || *p == ':' || *p == '"'))   /* "key": "123" */
            p++;
        while (p < end && *p >= '0' && *p <= '9' && digits < 20) {
            ts = ts * 10 + (uint64_t)(*p++ - '0');
            digits++;
        }
        if (digits && w->ndelays < w->cap_delays)
            w->delays[w->ndelays++] = now_real > ts ? now_real - ts : 0;
    }
    w->pending++;
}

/* Publishes the lines counted since the last call. Once per write callback, not per
 * line: a global lock and shared counters touched per event by 100 threads cost more
 * than the server does per event, and the benchmark measured itself. */
static void watcher_publish(struct watcher *w)
{
    if (!w->pending)
        return;
    atomic_fetch_add(&w->events, w->pending);
    atomic_fetch_add(&g_events_total, w->pending);
    w->pending = 0;
    atomic_store(&g_last_event_ns, util_now_ns());
    pthread_mutex_lock(&g_mu);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

static size_t watcher_write(char *p, size_t size, size_t n, void *ud)
{
    struct watcher *w = ud;
    size_t len = size * n;
    uint64_t now_real = realtime_ns();
    size_t off = 0;
    while (off < len) {
        const char *nl = memchr(p + off, '\n', len - off);
        size_t take = nl ? (size_t)(nl - (p + off)) : len - off;
        if (w->line.len + take > MAX_LINE) {
            watcher_publish(w);
            return 0;                     /* a runaway line: abort this watch */
        }
        if (nl && w->line.len == 0) {
            watcher_line(w, p + off, take, now_real);
        } else {
            if (buf_append(&w->line, p + off, take) < 0) {
                watcher_publish(w);
                return 0;
            }
            if (nl) {
                watcher_line(w, w->line.data, w->line.len, now_real);
                buf_reset(&w->line);
            }
        }
        off += take + (nl ? 1 : 0);
    }
    watcher_publish(w);
    return atomic_load(&g_stop) ? 0 : len;
}

/* libcurl calls this at least once a second; it lets an idle watch notice g_stop. */
static int watcher_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)ud; (void)a; (void)b; (void)c; (void)d;
    return atomic_load(&g_stop) ? 1 : 0;
}

static void *watcher_main(void *arg)
{
    struct watcher *w = arg;
    CURL *h = handle_new();
    if (!h) { w->rc = CURLE_OUT_OF_MEMORY; goto out; }
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    curl_easy_setopt(h, CURLOPT_URL, w->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watcher_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watcher_progress);
    w->rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &w->http_code);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
out:
    pthread_mutex_lock(&g_mu);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

static void cm_body(struct buf *b, const char *name, const char *extra)
{
    buf_reset(b);
    buf_printf(b,
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
        "\"labels\":{\"bench\":\"watch\"},\"annotations\":{\"bench.rayop.io/ts\":\"%" PRIu64 "\"}},"
        "\"data\":{\"k\":\"%s\"}}",
        name, realtime_ns(), extra);
}

/* Waits until every live watcher has counted want events, or the bound passes.
 * Returns true when all got there. */
static bool wait_all(struct watcher *ws, long nw, long want, uint64_t bound_ns)
{
    pthread_mutex_lock(&g_mu);
    for (;;) {
        long behind = 0;
        for (long i = 0; i < nw; i++)
            if (atomic_load(&ws[i].events) < want)
                behind++;
        if (!behind || util_now_ns() >= bound_ns)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;         /* re-check the bound at least every 50 ms */
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&g_cv, &g_mu, &ts);
    }
    pthread_mutex_unlock(&g_mu);
    for (long i = 0; i < nw; i++)
        if (atomic_load(&ws[i].events) < want)
            return false;
    return true;
}

/* Extracts metadata.resourceVersion from a compact object body; 0 when absent. */
static uint64_t body_rv(const char *body)
{
    const char *k = body ? strstr(body, "\"resourceVersion\":\"") : NULL;
    return k ? strtoull(k + sizeof "\"resourceVersion\":\"" - 1, NULL, 10) : 0;
}

/* The live phase. *sentinel_rv receives the sentinel's resourceVersion, from which the
 * replay phase re-reads the same M events. */
static int bench_watch(const struct opts *o, const char *base, bool *miss, uint64_t *sentinel_rv)
{
    int rc = 0;
    long started = 0;
    struct buf body = {0}, resp = {0};
    uint64_t *all = NULL;
    struct watcher *ws = calloc((size_t)o->watchers, sizeof *ws);
    CURL *h = handle_new();
    if (!ws || !h) { rc = -ENOMEM; goto out; }
    const char *ns = "bench-watch";
    if ((rc = ensure_namespace(h, base, ns)) < 0)
        goto out;

    for (long i = 0; i < o->watchers; i++) {
        struct watcher *w = &ws[i];
        w->o = o;
        w->cap_delays = (size_t)o->objects * 2 + 1;
        w->delays = malloc(w->cap_delays * sizeof *w->delays);
        if (!w->delays) { rc = -ENOMEM; goto out; }
        snprintf(w->url, sizeof w->url,
                 "%s/api/v1/namespaces/%s/configmaps?watch=true&timeoutSeconds=%ld",
                 base, ns, o->seconds * 3);
        if (pthread_create(&w->thread, NULL, watcher_main, w) != 0) { rc = -EAGAIN; goto out; }
        started++;
    }

    /* The sentinel: once every watcher has seen it, every watch is established. */
    char url[512], name[64];
    snprintf(url, sizeof url, "%s/api/v1/namespaces/%s/configmaps", base, ns);
    cm_body(&body, "bench-sentinel", "sync");
    long code = http_do(h, "POST", url, NULL, body.data, &resp);
    if (code != 201) {
        fprintf(stderr, "sim_bench: sentinel create: HTTP %ld: %.300s\n", code, resp.data ? resp.data : "");
        rc = -EIO;
        goto out;
    }
    *sentinel_rv = body_rv(resp.data);
    if (!wait_all(ws, o->watchers, 1, util_now_ns() + 20000000000u)) {
        fprintf(stderr, "sim_bench: not every watcher saw the sentinel within 20 s\n");
        rc = -ETIMEDOUT;
        goto out;
    }
    for (long i = 0; i < o->watchers; i++)
        ws[i].ndelays = 0;             /* the sentinel's delay includes connection set-up */
    long base_events = atomic_load(&g_events_total);

    /* The writer: M/2 creates, then patches of those (at least one of each). */
    long ncreate = (o->objects + 1) / 2, npatch = o->objects - ncreate;
    uint64_t start = util_now_ns(), bound = start + (uint64_t)o->seconds * 1000000000u;
    for (long i = 0; i < ncreate; i++) {
        snprintf(name, sizeof name, "bench-cm-%ld", i);
        cm_body(&body, name, "v1");
        code = http_do(h, "POST", url, NULL, body.data, &resp);
        if (code != 201) {
            fprintf(stderr, "sim_bench: create %s: HTTP %ld: %.300s\n", name, code, resp.data ? resp.data : "");
            rc = -EIO;
            goto out;
        }
    }
    for (long i = 0; i < npatch; i++) {
        char purl[640], patch[256];
        snprintf(purl, sizeof purl, "%s/bench-cm-%ld", url, i);
        snprintf(patch, sizeof patch,
                 "{\"metadata\":{\"annotations\":{\"bench.rayop.io/ts\":\"%" PRIu64 "\"}},\"data\":{\"k\":\"v2\"}}",
                 realtime_ns());
        code = http_do(h, "PATCH", purl, "application/merge-patch+json", patch, &resp);
        if (code != 200) {
            fprintf(stderr, "sim_bench: patch bench-cm-%ld: HTTP %ld: %.300s\n", i, code, resp.data ? resp.data : "");
            rc = -EIO;
            goto out;
        }
    }
    double write_secs = (double)(util_now_ns() - start) / 1e9;
    bool complete = wait_all(ws, o->watchers, 1 + o->objects, bound);
    uint64_t last = atomic_load(&g_last_event_ns);
    double secs = (double)(last - start) / 1e9;
    long delivered = atomic_load(&g_events_total) - base_events;
    double rate = secs > 0 ? (double)delivered / secs : 0;

    size_t nall = 0, k = 0;
    for (long i = 0; i < o->watchers; i++)
        nall += ws[i].ndelays;
    all = malloc((nall ? nall : 1) * sizeof *all);
    if (!all) { rc = -ENOMEM; goto out; }
    for (long i = 0; i < o->watchers; i++) {
        memcpy(all + k, ws[i].delays, ws[i].ndelays * sizeof *all);
        k += ws[i].ndelays;
    }
    qsort(all, nall, sizeof *all, cmp_u64);
    printf("watch: %ld watchers, writer did %ld creates + %ld patches in %.2f s (%.0f writes/s)\n",
           o->watchers, ncreate, npatch, write_secs, (double)o->objects / write_secs);
    printf("watch: %ld of %ld events delivered in %.2f s: %.0f events/s   target >= %.0f  %s\n",
           delivered, o->watchers * o->objects, secs, rate, TARGET_EVENTS_PER_SEC,
           verdict(rate, TARGET_EVENTS_PER_SEC));
    printf("watch: event delay p50 %.2f ms, p99 %.2f ms, max %.2f ms (%zu samples)\n",
           pct_ms(all, nall, 0.50), pct_ms(all, nall, 0.99), pct_ms(all, nall, 1.0), nall);
    if (!complete)
        printf("watch: INCOMPLETE: not every watcher received all %ld events within %ld s\n",
               o->objects, o->seconds);
    *miss |= rate < TARGET_EVENTS_PER_SEC || !complete;
out:
    atomic_store(&g_stop, true);
    for (long i = 0; i < started; i++)
        pthread_join(ws[i].thread, NULL);
    if (ws) {
        for (long i = 0; i < o->watchers; i++) {
            free(ws[i].delays);
            buf_free(&ws[i].line);
        }
        free(ws);
    }
    if (h)
        curl_easy_cleanup(h);
    free(all);
    buf_free(&body);
    buf_free(&resp);
    return rc;
}

/*
 * The replay phase: W new watches from the sentinel's resourceVersion each receive the
 * M events the writer produced, straight from the server's watch history. Unlike the live
 * phase this is not bounded by how fast one writer can write, so it shows the fan-out
 * capacity alone. Needs --watch-window >= M (kubesim's default is 5000).
 */
static int bench_replay(const struct opts *o, const char *base, uint64_t rv, bool *miss)
{
    int rc = 0;
    long started = 0;
    struct watcher *ws = calloc((size_t)o->watchers, sizeof *ws);
    if (!ws)
        return -ENOMEM;
    atomic_store(&g_stop, false);
    long base_events = atomic_load(&g_events_total);
    uint64_t start = util_now_ns(), bound = start + (uint64_t)o->seconds * 1000000000u;
    for (long i = 0; i < o->watchers; i++) {
        struct watcher *w = &ws[i];
        w->o = o;
        snprintf(w->url, sizeof w->url,
                 "%s/api/v1/namespaces/bench-watch/configmaps?watch=true&resourceVersion=%" PRIu64
                 "&timeoutSeconds=%ld", base, rv, o->seconds * 3);
        if (pthread_create(&w->thread, NULL, watcher_main, w) != 0) { rc = -EAGAIN; goto out; }
        started++;
    }
    bool complete = wait_all(ws, o->watchers, o->objects, bound);
    double secs = (double)(atomic_load(&g_last_event_ns) - start) / 1e9;
    long delivered = atomic_load(&g_events_total) - base_events;
    double rate = secs > 0 ? (double)delivered / secs : 0;
    printf("replay: %ld watchers from resourceVersion %" PRIu64 ": %ld of %ld events in %.2f s: "
           "%.0f events/s   target >= %.0f  %s\n", o->watchers, rv, delivered,
           o->watchers * o->objects, secs, rate, TARGET_EVENTS_PER_SEC,
           verdict(rate, TARGET_EVENTS_PER_SEC));
    if (!complete)
        printf("replay: INCOMPLETE (a 410 means --watch-window is smaller than --objects)\n");
    *miss |= rate < TARGET_EVENTS_PER_SEC || !complete;
out:
    atomic_store(&g_stop, true);
    for (long i = 0; i < started; i++)
        pthread_join(ws[i].thread, NULL);
    for (long i = 0; i < o->watchers; i++)
        buf_free(&ws[i].line);
    free(ws);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o;
    char url[256];                      /* the base URL; request URLs get 512 bytes */
    bool miss = false;
    int rc;

    if (parse_opts(argc, argv, &o) < 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "sim_bench: curl_global_init failed\n");
        return 2;
    }
    if (o.kubesim) {
        rc = kubesim_start(&o, url, sizeof url);
        if (rc < 0) {
            fprintf(stderr, "sim_bench: starting %s: %s\n", o.kubesim, strerror(-rc));
            kubesim_stop();
            return 2;
        }
    } else if (strlen(o.url) >= sizeof url) {
        fprintf(stderr, "sim_bench: --url is too long\n");
        return 2;
    } else {
        snprintf(url, sizeof url, "%s", o.url);
    }
    printf("sim_bench: kubesim at %s, 3 phases (creates=%ld; watchers=%ld objects=%ld)\n",
           url, o.creates, o.watchers, o.objects);
    fflush(stdout);

    uint64_t sentinel_rv = 0;
    rc = bench_creates(&o, url, &miss);
    if (rc == 0)
        rc = bench_watch(&o, url, &miss, &sentinel_rv);
    if (rc == 0 && sentinel_rv)
        rc = bench_replay(&o, url, sentinel_rv, &miss);
    kubesim_stop();
    curl_global_cleanup();
    if (rc < 0) {
        fprintf(stderr, "sim_bench: failed: %s\n", strerror(-rc));
        return 2;
    }
    return o.strict && miss ? 1 : 0;
}

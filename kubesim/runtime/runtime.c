/*
 * runtime.c - the runtime's thread and the kubelet's part of it: the Pod table, each
 * container's life (start, exit, restart with back-off, liveness kill, termination), and
 * the Pod status derived from it, written as one merge patch of /status like the
 * simulated kubelet's. One thread owns everything; it sleeps in poll() on a wake pipe and
 * the pidfds of the processes it started, so an exit is seen at once and no SIGCHLD
 * handler or waitpid(-1) is needed in the server.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kubesim/registry/registry.h"
#include "kubesim/runtime/internal.h"
#include "kubesim/store/store.h"

#define FIRST_RESTART_MS 100
#define BACKOFF_BASE_MS 500
#define BACKOFF_MAX_MS 8000
#define BACKOFF_RESET_MS 30000   /* a run this long forgets the back-off (kubelet: 10 min) */
#define STOP_GRACE_MS 5000       /* kubesim exit: SIGTERM, then SIGKILL after this */
#define MAX_POLL 512
#define MOUNT_RETRY_MS 1000      /* a missing Secret/ConfigMap of a volume: set up again after */

/* ---- small helpers ----------------------------------------------------------------- */

uint64_t runtime__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool runtime__stopping(struct runtime *rt)
{
    return atomic_load(&rt->stop);
}

long runtime__jnum(const cJSON *o, const char *k, long def)
{
    const cJSON *v = kobj_get(o, k);

    if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble)
        return def;
    /* the Pod's numbers are int32 fields: a larger one is clamped, never cast out of range */
    if (v->valuedouble >= 2147483647.0)
        return 2147483647L;
    if (v->valuedouble <= -2147483648.0)
        return -2147483647L - 1;
    return (long)v->valuedouble;
}

int runtime__read_file(const char *path, size_t max, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
    struct buf b = { 0 };
    char tmp[8192];
    ssize_t n;

    *out = NULL;
    if (fd < 0)
        return -errno;
    while ((n = read(fd, tmp, sizeof(tmp))) > 0) {
        if (b.len + (size_t)n > max) {
            rc = -EFBIG;
            break;
        }
        buf_append(&b, tmp, (size_t)n);
    }
    if (n < 0)
        rc = -errno;
    close(fd);
    if (rc < 0) {
        buf_free(&b);
        return rc;
    }
    if (!b.data)
        buf_puts(&b, "");
    *out = b.data;
    if (len)
        *len = b.len;
    return 0;
}

int runtime__write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode), rc;

    if (fd < 0)
        return -errno;
    rc = util_write_all(fd, data, len);
    if (fchmod(fd, mode) < 0 && rc >= 0)
        rc = -errno;
    close(fd);
    return rc < 0 ? rc : 0;
}

static void runtime__rm_rf(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char sub[4096];

    if (!d) {
        unlink(path);
        return;
    }
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        if (e->d_type == DT_DIR)
            runtime__rm_rf(sub);
        else
            unlink(sub);
    }
    closedir(d);
    rmdir(path);
}

void runtime__event(struct runtime *rt, struct rt_pod *p, const char *type, const char *reason,
                    const char *field_path, const char *fmt, ...)
{
    cJSON *ev = cJSON_CreateObject(), *m, *io, *src;
    struct store_write_opts w = { .field_manager = "kubelet" };
    struct store_status st = { 0 };
    char name[300], ts[32], msg[1024];
    va_list ap;
    static unsigned seq;

    if (!ev || !rt->r_events)
        goto out;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    util_format_time(time(NULL), ts);
    snprintf(name, sizeof(name), "%.200s.%016llx%04x", p->name,
             (unsigned long long)util_now_ns(), __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED) & 0xffff);
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    m = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", p->ns);
    io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", "v1");
    cJSON_AddStringToObject(io, "kind", "Pod");
    cJSON_AddStringToObject(io, "namespace", p->ns);
    cJSON_AddStringToObject(io, "name", p->name);
    cJSON_AddStringToObject(io, "uid", p->uid);
    if (field_path)
        cJSON_AddStringToObject(io, "fieldPath", field_path);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", msg);
    src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", "kubelet");
    if (kobj_str(kobj_get(p->json, "spec"), "nodeName"))
        cJSON_AddStringToObject(src, "host", kobj_str(kobj_get(p->json, "spec"), "nodeName"));
    cJSON_AddStringToObject(ev, "firstTimestamp", ts);
    cJSON_AddStringToObject(ev, "lastTimestamp", ts);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(ev, "type", type);
    store_create(rt->store, rt->r_events, p->ns, ev, &w, NULL, &st);
    ev = NULL;
    store_status_clear(&st);
out:
    cJSON_Delete(ev);
}

/* ---- flags and image matching --------------------------------------------------------- */

int runtime_parse_flag(struct runtime_opts **o, const char *flag, const char *value,
                       char *err, size_t errlen)
{
    const char *eq;
    struct stat st;
    size_t n;

    if (strcmp(flag, "run-image"))
        return -ENOENT;
    if (!*o && !(*o = calloc(1, sizeof(**o))))
        return -ENOMEM;
    eq = value ? strchr(value, '=') : NULL;
    if (!eq || eq == value || !eq[1]) {
        snprintf(err, errlen, "--run-image wants REPO=ROOT, got \"%s\"", value ? value : "");
        return -EINVAL;
    }
    n = (size_t)(eq - value);
    if ((*o)->nimages >= RUNTIME_MAX_IMAGES || n >= sizeof((*o)->repo[0]) ||
        strlen(eq + 1) >= sizeof((*o)->root[0]) - 8) {
        snprintf(err, errlen, "--run-image: too many, or too long: \"%s\"", value);
        return -EINVAL;
    }
    if (stat(eq + 1, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--run-image %s: ROOT \"%s\" is not a directory", value, eq + 1);
        return -EINVAL;
    }
    memcpy((*o)->repo[(*o)->nimages], value, n);
    (*o)->repo[(*o)->nimages][n] = '\0';
    if (!realpath(eq + 1, (*o)->root[(*o)->nimages]))
        snprintf((*o)->root[(*o)->nimages], sizeof((*o)->root[0]), "%s", eq + 1);
    (*o)->nimages++;
    return 0;
}

int runtime__image_match(const struct runtime_opts *o, const char *image)
{
    char repo[512];
    size_t n;
    const char *slash, *colon;

    if (!image)
        return -1;
    n = strcspn(image, "@");
    if (n >= sizeof(repo))
        return -1;
    memcpy(repo, image, n);
    repo[n] = '\0';
    slash = strrchr(repo, '/');
    colon = strrchr(repo, ':');
    if (colon && (!slash || colon > slash))
        repo[colon - repo] = '\0';
    for (size_t i = 0; i < o->nimages; i++) {
        size_t rl = strlen(o->repo[i]), l = strlen(repo);
        if (!strcmp(repo, o->repo[i]) ||
            (l > rl && repo[l - rl - 1] == '/' && !strcmp(repo + l - rl, o->repo[i])))
            return (int)i;
    }
    return -1;
}

static const char *image_root(const struct runtime *rt, const char *image)
{
    int i = runtime__image_match(&rt->o, image);
    return i < 0 ? NULL : rt->o.root[i];
}

bool runtime_claims(const struct runtime *rt, const cJSON *pod)
{
    const cJSON *c;

    if (!rt)
        return false;
    cJSON_ArrayForEach(c, kobj_get(kobj_get(pod, "spec"), "containers"))
        if (image_root(rt, kobj_str(c, "image")))
            return true;
    return false;
}

/* ---- commands from other threads ---------------------------------------------------- */

static void push(struct runtime *rt, struct rt_cmd *cmd)
{
    pthread_mutex_lock(&rt->mu);
    *rt->cmds_tail = cmd;
    rt->cmds_tail = &cmd->next;
    pthread_mutex_unlock(&rt->mu);
    if (write(rt->wake[1], "x", 1) < 0 && errno != EAGAIN)
        log_warn("runtime: wake failed", "error", strerror(errno), NULL);
}

void runtime_pod_run(struct runtime *rt, const cJSON *pod, const char *ip)
{
    struct rt_cmd *cmd = calloc(1, sizeof(*cmd));

    if (!cmd || !(cmd->pod = cJSON_Duplicate(pod, true))) {
        free(cmd);
        return;
    }
    snprintf(cmd->ip, sizeof(cmd->ip), "%s", ip);
    push(rt, cmd);
}

void runtime_pod_delete(struct runtime *rt, const char *uid, long grace_ms)
{
    struct rt_cmd *cmd = calloc(1, sizeof(*cmd));

    if (!cmd)
        return;
    cmd->kind = 1;
    snprintf(cmd->uid, sizeof(cmd->uid), "%s", uid);
    cmd->grace_ms = grace_ms;
    push(rt, cmd);
}

/* ---- status ------------------------------------------------------------------------- */

static void add_time(cJSON *o, const char *k, time_t t)
{
    char ts[32];
    util_format_time(t, ts);
    cJSON_AddStringToObject(o, k, ts);
}

static cJSON *terminated_json(const struct rt_ctr *c, const struct rt_pod *p)
{
    cJSON *t = cJSON_CreateObject();

    cJSON_AddNumberToObject(t, "exitCode", c->last_code);
    if (c->last_signal)
        cJSON_AddNumberToObject(t, "signal", c->last_signal);
    cJSON_AddStringToObject(t, "reason", c->last_reason);
    if (c->last_msg[0])
        cJSON_AddStringToObject(t, "message", c->last_msg);
    add_time(t, "startedAt", c->last_start);
    add_time(t, "finishedAt", c->last_finish);
    (void)p;
    return t;
}

static cJSON *ctr_status(const struct rt_pod *p, const struct rt_ctr *c)
{
    cJSON *s = cJSON_CreateObject(), *st;
    const char *image = kobj_str(c->spec, "image");
    char cid[64];

    cJSON_AddStringToObject(s, "name", c->name);
    cJSON_AddStringToObject(s, "image", image ? image : "");
    cJSON_AddStringToObject(s, "imageID", c->root ? c->root : "");
    if (c->st == RC_RUNNING) {
        snprintf(cid, sizeof(cid), "kubesim://%d", (int)c->pid);
        cJSON_AddStringToObject(s, "containerID", cid);
    }
    cJSON_AddBoolToObject(s, "ready", c->init ? c->st == RC_TERMINATED && c->last_code == 0
                                              : c->st == RC_RUNNING && c->ready);
    cJSON_AddNumberToObject(s, "restartCount", c->restarts);
    cJSON_AddBoolToObject(s, "started", c->st == RC_RUNNING);
    st = cJSON_AddObjectToObject(s, "state");
    switch (c->st) {
    case RC_RUNNING:
        add_time(cJSON_AddObjectToObject(st, "running"), "startedAt", c->started_at);
        break;
    case RC_TERMINATED:
        cJSON_AddItemToObject(st, "terminated", terminated_json(c, p));
        break;
    default: {
        cJSON *w = cJSON_AddObjectToObject(st, "waiting");
        cJSON_AddStringToObject(w, "reason", c->waiting_reason[0] ? c->waiting_reason
                                                                  : "ContainerCreating");
        if (c->waiting_msg[0])
            cJSON_AddStringToObject(w, "message", c->waiting_msg);
    }
    }
    if (c->has_last && c->st != RC_TERMINATED) {
        cJSON_AddItemToObject(cJSON_AddObjectToObject(s, "lastState"), "terminated",
                              terminated_json(c, p));
    } else if (c->has_prev && c->st == RC_TERMINATED) {
        cJSON *t = cJSON_AddObjectToObject(cJSON_AddObjectToObject(s, "lastState"), "terminated");
        cJSON_AddNumberToObject(t, "exitCode", c->prev_code);
        if (c->prev_signal)
            cJSON_AddNumberToObject(t, "signal", c->prev_signal);
        cJSON_AddStringToObject(t, "reason", c->prev_reason);
        add_time(t, "startedAt", c->prev_start);
        add_time(t, "finishedAt", c->prev_finish);
    } else
        cJSON_AddObjectToObject(s, "lastState");
    return s;
}

static void add_cond(cJSON *conds, const char *type, bool v, const char *reason,
                     const char *msg, time_t t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "status", v ? "True" : "False");
    cJSON_AddNullToObject(o, "lastProbeTime");
    add_time(o, "lastTransitionTime", t);
    if (!v && reason)
        cJSON_AddStringToObject(o, "reason", reason);
    if (!v && msg)
        cJSON_AddStringToObject(o, "message", msg);
    cJSON_AddItemToArray(conds, o);
}

static void write_status(struct runtime *rt, struct rt_pod *p)
{
    cJSON *body = cJSON_CreateObject(), *s, *conds, *list, *ips;
    struct store_write_opts w = { .field_manager = "kubelet" };
    struct store_status st = { 0 };
    char unready[512] = "", msg[600];
    char pending[512] = "";
    bool all_ready = p->nc > p->ninit, any_run = false, all_done = p->nc > p->ninit, any_fail = false;
    bool inited = true, init_failed = false;
    const char *phase;
    char *txt;

    p->dirty = false;
    if (!body)
        return;
    for (size_t i = 0; i < p->ninit; i++) {
        struct rt_ctr *c = &p->c[i];
        if (c->st == RC_TERMINATED && c->last_code == 0)
            continue;
        if (c->st == RC_TERMINATED)
            init_failed = true;     /* restartPolicy Never */
        if (inited) {
            size_t off = strlen(pending);
            snprintf(pending + off, sizeof(pending) - off, "%s%s", off ? " " : "", c->name);
        }
        inited = false;
    }
    for (size_t i = p->ninit; i < p->nc; i++) {
        struct rt_ctr *c = &p->c[i];
        if (!(c->st == RC_RUNNING && c->ready)) {
            size_t off = strlen(unready);
            all_ready = false;
            snprintf(unready + off, sizeof(unready) - off, "%s%s", off ? " " : "", c->name);
        }
        if (c->st == RC_RUNNING || c->st == RC_BACKOFF)
            any_run = true;
        if (c->st != RC_TERMINATED)
            all_done = false;
        else if (c->last_code != 0)
            any_fail = true;
    }
    phase = init_failed ? "Failed" : !inited ? "Pending" :
            all_done ? (any_fail ? "Failed" : "Succeeded") : any_run ? "Running" : "Pending";
    s = cJSON_AddObjectToObject(body, "status");
    cJSON_AddStringToObject(s, "phase", phase);
    conds = cJSON_AddArrayToObject(s, "conditions");
    snprintf(msg, sizeof(msg), "containers with unready status: [%s]", unready);
    add_cond(conds, "PodReadyToStartContainers", p->sandbox > 0, "SandboxNotReady", p->fail[0] ? p->fail : NULL, p->start_time);
    {
        char im[600];
        snprintf(im, sizeof(im), "containers with incomplete status: [%s]", pending);
        add_cond(conds, "Initialized", inited, "ContainersNotInitialized", im, p->start_time);
    }
    add_cond(conds, "Ready", all_ready, all_done ? "PodCompleted" : "ContainersNotReady", all_done ? NULL : msg, time(NULL));
    add_cond(conds, "ContainersReady", all_ready, all_done ? "PodCompleted" : "ContainersNotReady", all_done ? NULL : msg, time(NULL));
    add_cond(conds, "PodScheduled", true, NULL, NULL, p->start_time);
    if (p->ip[0]) {
        cJSON_AddStringToObject(s, "podIP", p->ip);
        ips = cJSON_AddArrayToObject(s, "podIPs");
        cJSON_AddItemToArray(ips, cJSON_CreateObject());
        cJSON_AddStringToObject(ips->child, "ip", p->ip);
        cJSON_AddStringToObject(s, "hostIP", "127.0.0.1");
    }
    add_time(s, "startTime", p->start_time);
    if (p->ninit) {
        list = cJSON_AddArrayToObject(s, "initContainerStatuses");
        for (size_t i = 0; i < p->ninit; i++)
            cJSON_AddItemToArray(list, ctr_status(p, &p->c[i]));
    }
    list = cJSON_AddArrayToObject(s, "containerStatuses");
    for (size_t i = p->ninit; i < p->nc; i++)
        cJSON_AddItemToArray(list, ctr_status(p, &p->c[i]));
    txt = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!txt)
        return;
    if (store_patch(rt->store, rt->r_pods, p->ns, p->name, "status", PATCH_MERGE, txt,
                    strlen(txt), &w, NULL, NULL, &st) < 0 && st.code != 404)
        log_warn("runtime: pod status write failed", "pod", p->name, "error", st.message, NULL);
    store_status_clear(&st);
    free(txt);
}

/* ---- container lifecycle ------------------------------------------------------------------ */

static const char *restart_policy(const struct rt_pod *p)
{
    const char *rp = kobj_str(kobj_get(p->json, "spec"), "restartPolicy");
    return rp ? rp : "Always";
}

static void field_path(const struct rt_ctr *c, char *out, size_t len)
{
    snprintf(out, len, "spec.containers{%s}", c->name);
}

static void ctr_start(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c)
{
    char err[400], fp[128];
    uint64_t now = runtime__now_ms();

    field_path(c, fp, sizeof(fp));
    if (runtime__ctr_spawn(rt, p, c, err, sizeof(err)) < 0) {
        /* as the kubelet's StartError: a terminated run with exit code 128, restarted with
         * back-off like a crash */
        c->has_last = true;
        c->last_code = RUNTIME_EXIT_START_ERROR;
        c->last_signal = 0;
        snprintf(c->last_reason, sizeof(c->last_reason), "StartError");
        snprintf(c->last_msg, sizeof(c->last_msg), "%s", err);
        c->last_start = c->last_finish = time(NULL);
        runtime__event(rt, p, "Warning", "Failed", fp, "Error: %s", err);
        c->st = RC_BACKOFF;
        c->backoff_n++;
        c->due_ms = now + BACKOFF_MAX_MS;
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "CrashLoopBackOff");
        snprintf(c->waiting_msg, sizeof(c->waiting_msg), "%s", err);
        p->dirty = true;
        return;
    }
    c->st = RC_RUNNING;
    c->started_at = time(NULL);
    c->ready = false;
    c->kill_ms = 0;
    c->liveness_kill = false;
    c->waiting_reason[0] = c->waiting_msg[0] = '\0';
    runtime__probe_reset(c, now);
    if (!c->rdy.spec)
        c->ready = true;       /* no readiness probe: ready once started */
    runtime__event(rt, p, "Normal", "Pulled", fp, "Container image \"%s\" already present on machine",
                   kobj_str(c->spec, "image") ? kobj_str(c->spec, "image") : "");
    runtime__event(rt, p, "Normal", "Created", fp, "Created container: %s", c->name);
    runtime__event(rt, p, "Normal", "Started", fp, "Started container %s", c->name);
    p->dirty = true;
}

static void start_one(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c)
{
    if (!c->root) {
        /* a container of another image in a run Pod: nothing to run it with */
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "CreateContainerError");
        snprintf(c->waiting_msg, sizeof(c->waiting_msg), "image %s is not one kubesim "
                 "--run-image runs", kobj_str(c->spec, "image"));
        p->dirty = true;
        return;
    }
    ctr_start(rt, p, c);
}

/* Starts what is due, as the kubelet orders it: the init containers one at a time, each
 * once the one before completed, then all the others. */
static void start_next(struct runtime *rt, struct rt_pod *p)
{
    for (size_t i = 0; i < p->ninit; i++) {
        struct rt_ctr *c = &p->c[i];
        if (c->st == RC_TERMINATED && c->last_code == 0)
            continue;
        if (c->st == RC_WAITING && !c->waiting_reason[0])
            start_one(rt, p, c);
        return;     /* running, backing off, or failed for good */
    }
    for (size_t i = p->ninit; i < p->nc; i++)
        if (p->c[i].st == RC_WAITING)
            start_one(rt, p, &p->c[i]);
}

static void ctr_signal(struct rt_ctr *c, int sig)
{
    if (c->st == RC_RUNNING && c->pid > 0) {
        kill(-c->pid, sig);     /* its process group: setsid made it the leader */
        kill(c->pid, sig);
    }
}

static void ctr_exited(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, const siginfo_t *si)
{
    uint64_t now = runtime__now_ms();
    const char *rp = restart_policy(p);
    bool restart;
    long ran_ms = (long)(time(NULL) - c->started_at) * 1000;
    char fp[128];

    close(c->pidfd);
    c->pidfd = -1;
    kill(-c->pid, SIGKILL);     /* what the container left in its group goes with it */
    c->pid = 0;
    runtime__probe_cancel(c);
    if (c->has_last) {
        c->has_prev = true;
        c->prev_code = c->last_code;
        c->prev_signal = c->last_signal;
        snprintf(c->prev_reason, sizeof(c->prev_reason), "%s", c->last_reason);
        c->prev_start = c->last_start;
        c->prev_finish = c->last_finish;
    }
    c->has_last = true;
    c->last_signal = si->si_code == CLD_EXITED ? 0 : si->si_status;
    c->last_code = si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
    snprintf(c->last_reason, sizeof(c->last_reason), "%s",
             c->last_code == 0 ? "Completed" : "Error");
    c->last_msg[0] = '\0';
    c->last_start = c->started_at;
    c->last_finish = time(NULL);
    c->ready = false;
    c->kill_ms = 0;
    p->dirty = true;
    if (c->init)   /* run to completion: a failure is retried unless restartPolicy is Never */
        restart = !p->deleting && c->last_code && strcmp(rp, "Never");
    else
        restart = !p->deleting && (!strcmp(rp, "Always") || (!strcmp(rp, "OnFailure") && c->last_code));
    if (!restart) {
        c->st = RC_TERMINATED;
        if (c->init && !c->last_code && !p->deleting)
            start_next(rt, p);
        return;
    }
    if (ran_ms >= BACKOFF_RESET_MS)
        c->backoff_n = 0;
    c->restarts++;
    c->st = RC_BACKOFF;
    if (c->backoff_n == 0) {
        c->due_ms = now + FIRST_RESTART_MS;
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "ContainerCreating");
        c->waiting_msg[0] = '\0';
    } else {
        long ms = (long)BACKOFF_BASE_MS << (c->backoff_n > 5 ? 4 : c->backoff_n - 1);
        if (ms > BACKOFF_MAX_MS)
            ms = BACKOFF_MAX_MS;
        c->due_ms = now + (uint64_t)ms;
        snprintf(c->waiting_reason, sizeof(c->waiting_reason), "CrashLoopBackOff");
        snprintf(c->waiting_msg, sizeof(c->waiting_msg),
                 "back-off %lds restarting failed container=%s pod=%s_%s(%s)",
                 (ms + 999) / 1000, c->name, p->name, p->ns, p->uid);
        field_path(c, fp, sizeof(fp));
        runtime__event(rt, p, "Warning", "BackOff", fp,
                       "Back-off restarting failed container %s in pod %s_%s(%s)", c->name, p->name,
                       p->ns, p->uid);
    }
    c->backoff_n++;
}

/* ---- Pods --------------------------------------------------------------------------------- */

static struct rt_pod *pod_find(struct runtime *rt, const char *uid)
{
    for (struct rt_pod *p = rt->pods; p; p = p->next)
        if (!strcmp(p->uid, uid))
            return p;
    return NULL;
}

static int pod_setup(struct runtime *rt, struct rt_pod *p, char *err, size_t errlen)
{
    cJSON *mem = cJSON_CreateArray(), *e;
    char *argv[64], fdarg[16], log[600];
    int pfd[2] = { -1, -1 }, n = 0, rc;
    char ok;
    struct pollfd pw;

    if (!mem)
        return -ENOMEM;
    if (mkdir(p->dir, 0755) < 0 && errno != EEXIST) {
        rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", p->dir, strerror(errno));
        goto out;
    }
    if ((rc = runtime__pod_volumes(rt, p, mem, err, errlen)) < 0)
        goto out;
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        rc = -errno;
        goto out;
    }
    /* the read end stays ours; the sandbox gets a non-CLOEXEC duplicate of the write end */
    snprintf(fdarg, sizeof(fdarg), "%d", 200);
    argv[n++] = (char *)"kubesim";
    argv[n++] = (char *)"__runtime-sandbox";
    argv[n++] = fdarg;
    argv[n++] = p->name;
    cJSON_ArrayForEach(e, mem)
        if (n < 60 && cJSON_IsString(e))
            argv[n++] = e->valuestring;
    argv[n] = NULL;
    snprintf(log, sizeof(log), "%s/sandbox.log", p->dir);
    /* the sandbox gets the write end as fd 200 (a dup2 file action clears CLOEXEC) */
    rc = runtime__spawn(rt, argv, log, pfd[1], 200, &p->sandbox, &p->sandbox_fd);
    close(pfd[1]);
    pfd[1] = -1;
    if (rc < 0) {
        snprintf(err, errlen, "sandbox: %s", strerror(-rc));
        goto out;
    }
    pw.fd = pfd[0];
    pw.events = POLLIN;
    if (poll(&pw, 1, 10000) != 1 || read(pfd[0], &ok, 1) != 1) {
        char *txt = NULL;
        runtime__read_file(log, 400, &txt, NULL);
        snprintf(err, errlen, "sandbox did not start: %s", txt ? txt : "");
        free(txt);
        rc = -EIO;
        goto out;
    }
    rc = runtime__net_pod(rt, p, err, errlen);
out:
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    cJSON_Delete(mem);
    return rc;
}

/* Sets the Pod up and starts its containers; a missing Secret or ConfigMap of a volume is
 * retried (FailedMount, as the kubelet does), any other failure is final. */
static void pod_start(struct runtime *rt, struct rt_pod *p)
{
    char err[600] = "";
    int rc = 0;

    p->mount_retry_ms = 0;
    if (!rt->root)
        snprintf(err, sizeof(err), "kubesim --run-image needs root to create the Pod's network "
                 "and mount namespaces (running as uid %d)", (int)geteuid());
    else if (p->nc != 0 && (rc = pod_setup(rt, p, err, sizeof(err))) < 0 && !err[0])
        snprintf(err, sizeof(err), "sandbox setup failed");
    if (rc == -ENOENT && p->sandbox <= 0) {
        if (p->mount_fails++ % 30 == 0)   /* not an Event a second */
            runtime__event(rt, p, "Warning", "FailedMount", NULL, "%s", err);
        p->mount_retry_ms = runtime__now_ms() + MOUNT_RETRY_MS;
        p->dirty = true;
        return;
    }
    if (err[0]) {
        snprintf(p->fail, sizeof(p->fail), "%.*s", (int)sizeof(p->fail) - 1, err);
        for (size_t i = 0; i < p->nc; i++) {
            snprintf(p->c[i].waiting_reason, sizeof(p->c[i].waiting_reason), "CreateContainerError");
            snprintf(p->c[i].waiting_msg, sizeof(p->c[i].waiting_msg), "%s", err);
        }
        runtime__event(rt, p, "Warning", "FailedCreatePodSandBox", NULL,
                       "Failed to create pod sandbox: %s", err);
        log_warn("runtime: pod cannot run", "pod", p->name, "error", err, NULL);
        p->dirty = true;
        return;
    }
    start_next(rt, p);
    p->dirty = true;
}

static void pod_add(struct runtime *rt, cJSON *pod, const char *ip)
{
    const cJSON *md = kobj_get(pod, "metadata"), *cs, *ics, *ct;
    struct rt_pod *p = calloc(1, sizeof(*p));
    size_t n = 0;

    if (!p) {
        cJSON_Delete(pod);
        return;
    }
    p->json = pod;
    snprintf(p->uid, sizeof(p->uid), "%s", kobj_str(md, "uid") ? kobj_str(md, "uid") : "");
    snprintf(p->ns, sizeof(p->ns), "%s", kobj_str(md, "namespace") ? kobj_str(md, "namespace") : "default");
    snprintf(p->name, sizeof(p->name), "%s", kobj_str(md, "name") ? kobj_str(md, "name") : "");
    snprintf(p->ip, sizeof(p->ip), "%s", ip);
    snprintf(p->dir, sizeof(p->dir), "%s/%s", rt->dir, p->uid);
    p->idx = ++rt->next_idx;
    p->sandbox_fd = -1;
    p->start_time = time(NULL);
    if (pod_find(rt, p->uid)) {
        cJSON_Delete(pod);
        free(p);
        return;
    }
    ics = kobj_get(kobj_get(pod, "spec"), "initContainers");
    cs = kobj_get(kobj_get(pod, "spec"), "containers");
    p->c = calloc((size_t)cJSON_GetArraySize(ics) + (size_t)cJSON_GetArraySize(cs) + 1, sizeof(*p->c));
    if (!p->c) {
        cJSON_Delete(pod);
        free(p);
        return;
    }
    for (int k = 0; k < 2; k++)
        cJSON_ArrayForEach(ct, (k ? cs : ics)) {
            struct rt_ctr *c = &p->c[n++];
            c->spec = ct;
            c->init = k == 0;
            snprintf(c->name, sizeof(c->name), "%s", kobj_str(ct, "name") ? kobj_str(ct, "name") : "");
            c->root = image_root(rt, kobj_str(ct, "image"));
            c->pidfd = c->live.exec_fd = c->rdy.exec_fd = -1;
            if (!c->init) {     /* an init container's probes are not run */
                c->live.spec = kobj_get(ct, "livenessProbe");
                c->rdy.spec = kobj_get(ct, "readinessProbe");
            }
            c->st = RC_WAITING;
            if (k == 0)
                p->ninit = n;
            else if (p->ninit)
                snprintf(c->waiting_reason, sizeof(c->waiting_reason), "PodInitializing");
        }
    p->nc = n;
    pthread_mutex_lock(&rt->mu);
    p->next = rt->pods;
    rt->pods = p;
    pthread_mutex_unlock(&rt->mu);
    pod_start(rt, p);
}

/* Every process gone: the sandbox (and with it the namespaces) goes, the files, then the
 * Pod object. */
static void pod_finish(struct runtime *rt, struct rt_pod *p, bool remove_object)
{
    struct rt_pod **pp;

    if (p->sandbox > 0) {
        kill(p->sandbox, SIGKILL);
        if (p->sandbox_fd >= 0) {
            siginfo_t si;
            waitid(P_PIDFD, (id_t)p->sandbox_fd, &si, WEXITED);
            close(p->sandbox_fd);
        }
        p->sandbox = 0;
    }
    runtime__rm_rf(p->dir);
    if (remove_object) {
        struct store_delete_opts o = { .grace_seconds = 0, .precondition_uid = p->uid };
        struct store_status st = { 0 };
        if (store_delete(rt->store, rt->r_pods, p->ns, p->name, &o, NULL, NULL, &st) < 0 &&
            st.code != 404 && st.code != 409)
            log_warn("runtime: pod removal failed", "pod", p->name, "error", st.message, NULL);
        store_status_clear(&st);
    }
    pthread_mutex_lock(&rt->mu);
    for (pp = &rt->pods; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    pthread_mutex_unlock(&rt->mu);
    cJSON_Delete(p->json);
    free(p->c);
    free(p);
}

static void pod_terminate(struct runtime *rt, struct rt_pod *p, long grace_ms)
{
    char fp[128];

    if (p->deleting)
        return;
    p->deleting = true;
    p->delete_ms = runtime__now_ms() + (uint64_t)(grace_ms < 0 ? 0 : grace_ms);
    for (size_t i = 0; i < p->nc; i++) {
        struct rt_ctr *c = &p->c[i];
        if (c->st == RC_RUNNING) {
            field_path(c, fp, sizeof(fp));
            runtime__event(rt, p, "Normal", "Killing", fp, "Stopping container %s", c->name);
            ctr_signal(c, SIGTERM);
        } else if (c->st != RC_TERMINATED) {
            c->st = RC_TERMINATED;
            if (!c->has_last) {
                snprintf(c->last_reason, sizeof(c->last_reason), "ContainerStatusUnknown");
                c->last_start = c->last_finish = time(NULL);
            }
        }
    }
    p->dirty = true;
}

/* ---- the thread ---------------------------------------------------------------------------- */

static bool pod_running(const struct rt_pod *p)
{
    for (size_t i = 0; i < p->nc; i++)
        if (p->c[i].st == RC_RUNNING)
            return true;
    return false;
}

static uint64_t tick(struct runtime *rt)
{
    uint64_t now = runtime__now_ms(), next = now + 1000;
    struct rt_pod *p, *nx;

    for (p = rt->pods; p; p = nx) {
        nx = p->next;
        if (p->mount_retry_ms && !p->deleting) {
            if (p->mount_retry_ms <= now)
                pod_start(rt, p);
            if (p->mount_retry_ms && p->mount_retry_ms < next)
                next = p->mount_retry_ms;
        }
        for (size_t i = 0; i < p->nc; i++) {
            struct rt_ctr *c = &p->c[i];
            bool kill_it = false;
            if (c->st == RC_BACKOFF && !p->deleting) {
                if (c->due_ms <= now)
                    ctr_start(rt, p, c);
                else if (c->due_ms < next)
                    next = c->due_ms;
            }
            if (c->st == RC_RUNNING && c->kill_ms) {
                if (c->kill_ms <= now) {
                    ctr_signal(c, SIGKILL);
                    c->kill_ms = 0;
                } else if (c->kill_ms < next) {
                    next = c->kill_ms;
                }
            }
            if (c->st == RC_RUNNING && !p->deleting && !c->kill_ms) {
                if (runtime__probe_tick(rt, p, c, now, &kill_it))
                    p->dirty = true;
                if (kill_it) {
                    long grace = runtime__jnum(kobj_get(p->json, "spec"), "terminationGracePeriodSeconds", 30);
                    c->liveness_kill = true;
                    ctr_signal(c, SIGTERM);
                    c->kill_ms = now + (uint64_t)grace * 1000 + 1;
                }
                if (runtime__probe_next(c) < next)
                    next = runtime__probe_next(c);
            }
        }
        if (p->deleting) {
            if (!pod_running(p)) {
                if (p->dirty)
                    write_status(rt, p);
                pod_finish(rt, p, true);
                continue;
            }
            if (p->delete_ms <= now) {
                for (size_t i = 0; i < p->nc; i++)
                    ctr_signal(&p->c[i], SIGKILL);
                p->delete_ms = now + 1000;
            }
            if (p->delete_ms < next)
                next = p->delete_ms;
        }
        if (p->dirty)
            write_status(rt, p);
    }
    return next;
}

static void take_commands(struct runtime *rt)
{
    struct rt_cmd *cmd, *nx;
    char drain[64];

    while (read(rt->wake[0], drain, sizeof(drain)) > 0)
        ;
    pthread_mutex_lock(&rt->mu);
    cmd = rt->cmds;
    rt->cmds = NULL;
    rt->cmds_tail = &rt->cmds;
    pthread_mutex_unlock(&rt->mu);
    for (; cmd; cmd = nx) {
        nx = cmd->next;
        if (cmd->kind == 0) {
            pod_add(rt, cmd->pod, cmd->ip);
        } else {
            struct rt_pod *p = pod_find(rt, cmd->uid);
            if (p)
                pod_terminate(rt, p, cmd->grace_ms);
        }
        free(cmd);
    }
}

/* The pidfds to wait on; ctrs[i]/probes[i] say whose. */
struct waiter {
    struct rt_pod *p;
    struct rt_ctr *c;
    struct rt_probe *pr;
};

static void *rt_main(void *arg)
{
    struct runtime *rt = arg;
    struct pollfd fds[MAX_POLL];
    struct waiter who[MAX_POLL];

    for (;;) {
        uint64_t next, now;
        size_t n = 0;

        if (runtime__stopping(rt))
            break;
        take_commands(rt);
        next = tick(rt);
        fds[n].fd = rt->wake[0];
        fds[n++].events = POLLIN;
        for (struct rt_pod *p = rt->pods; p; p = p->next)
            for (size_t i = 0; i < p->nc && n + 3 < MAX_POLL; i++) {
                struct rt_ctr *c = &p->c[i];
                struct rt_probe *prs[2] = { &c->live, &c->rdy };
                if (c->st == RC_RUNNING && c->pidfd >= 0) {
                    who[n] = (struct waiter){ p, c, NULL };
                    fds[n].fd = c->pidfd;
                    fds[n++].events = POLLIN;
                }
                for (int k = 0; k < 2; k++)
                    if (prs[k]->exec_fd >= 0) {
                        who[n] = (struct waiter){ p, c, prs[k] };
                        fds[n].fd = prs[k]->exec_fd;
                        fds[n++].events = POLLIN;
                    }
            }
        now = runtime__now_ms();
        if (poll(fds, n, next > now ? (int)(next - now) : 0) <= 0)
            continue;
        for (size_t i = 1; i < n; i++) {
            siginfo_t si;
            if (!(fds[i].revents & (POLLIN | POLLHUP)))
                continue;
            memset(&si, 0, sizeof(si));
            if (waitid(P_PIDFD, (id_t)fds[i].fd, &si, WEXITED | WNOHANG) < 0 || !si.si_pid)
                continue;
            if (who[i].pr) {
                bool kill_it = false;
                int status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
                if (runtime__probe_exec_done(rt, who[i].c, who[i].pr, status, &kill_it))
                    who[i].p->dirty = true;
                if (kill_it && !who[i].c->kill_ms) {
                    who[i].c->liveness_kill = true;
                    ctr_signal(who[i].c, SIGTERM);
                    who[i].c->kill_ms = runtime__now_ms() + 1000 *
                        (uint64_t)runtime__jnum(kobj_get(who[i].p->json, "spec"), "terminationGracePeriodSeconds", 30) + 1;
                }
            } else {
                ctr_exited(rt, who[i].p, who[i].c, &si);
            }
        }
    }
    return NULL;
}

/* ---- logs ------------------------------------------------------------------------------------ */

void runtime__log_path(const struct rt_pod *p, const char *ctr, int n, char *out, size_t len)
{
    snprintf(out, len, "%s/logs/%s.%d.log", p->dir, ctr, n);
}

int runtime_log(struct runtime *rt, const char *uid, const char *container, bool previous,
                size_t off, struct buf *out, bool *running)
{
    char path[1024];
    int rc = -ENOENT, fd;

    *running = false;
    if (!rt)
        return -ENOENT;
    pthread_mutex_lock(&rt->mu);
    for (struct rt_pod *p = rt->pods; p; p = p->next) {
        if (strcmp(p->uid, uid))
            continue;
        for (size_t i = 0; i < p->nc; i++) {
            struct rt_ctr *c = &p->c[i];
            int n;
            if (strcmp(c->name, container))
                continue;
            /* during a back-off the run that just ended is "current" for kubectl too */
            n = c->st == RC_BACKOFF ? c->restarts - 1 : c->restarts;
            if (previous)
                n--;
            if (n >= 0) {
                runtime__log_path(p, c->name, n, path, sizeof(path));
                rc = 0;
            }
            *running = c->st == RC_RUNNING && !previous;
        }
    }
    pthread_mutex_unlock(&rt->mu);
    if (rc < 0)
        return rc;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (lseek(fd, (off_t)off, SEEK_SET) >= 0) {
        char tmp[16384];
        ssize_t n;
        while ((n = read(fd, tmp, sizeof(tmp))) > 0 && out->len < (64u << 20))
            buf_append(out, tmp, (size_t)n);
    }
    close(fd);
    return 0;
}

/* ---- start / stop ----------------------------------------------------------------------------- */

int runtime_start(const struct runtime_opts *o, const struct runtime_conf *conf,
                  struct runtime **out)
{
    struct runtime *rt;
    const struct registry *reg;
    int rc;
    ssize_t n;

    *out = NULL;
    if (!o || !o->nimages)
        return 0;
    if (!(rt = calloc(1, sizeof(*rt))))
        return -ENOMEM;
    rt->o = *o;
    rt->conf = *conf;
    rt->store = conf->store;
    rt->node_fd = rt->host_netns = rt->node_netns = rt->relay_lfd = -1;
    rt->wake[0] = rt->wake[1] = rt->svc_wake[0] = rt->svc_wake[1] = -1;
    rt->cmds_tail = &rt->cmds;
    pthread_mutex_init(&rt->mu, NULL);
    if (conf->ca_pem && !(rt->ca = strndup(conf->ca_pem, conf->ca_len)))
        goto nomem;
    if (conf->token && !(rt->token = strdup(conf->token)))
        goto nomem;
    reg = store_registry_rdlock(rt->store);
    rt->r_pods = registry_find(reg, "", "v1", "pods");
    rt->r_secrets = registry_find(reg, "", "v1", "secrets");
    rt->r_cms = registry_find(reg, "", "v1", "configmaps");
    rt->r_events = registry_find(reg, "", "v1", "events");
    rt->r_svc = registry_find(reg, "", "v1", "services");
    rt->r_ep = registry_find(reg, "", "v1", "endpoints");
    store_registry_unlock(rt->store);
    if ((n = readlink("/proc/self/exe", rt->self, sizeof(rt->self) - 1)) <= 0) {
        rc = -errno;
        goto fail;
    }
    rt->self[n] = '\0';
    snprintf(rt->dir, sizeof(rt->dir), "/tmp/kubesim-runtime.XXXXXX");
    if (!mkdtemp(rt->dir)) {
        rc = -errno;
        goto fail;
    }
    chmod(rt->dir, 0755);
    if (pipe2(rt->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        rc = -errno;
        goto fail;
    }
    rt->root = geteuid() == 0;
    if (rt->root && (rc = runtime__net_start(rt)) < 0) {
        log_warn("runtime: no node network namespace; Pods will fail", "error", strerror(-rc), NULL);
        rt->root = false;
    }
    if (rt->root && (rc = runtime__svc_start(rt)) < 0)
        log_warn("runtime: no Service proxy: Pods cannot reach ClusterIPs", "error", strerror(-rc), NULL);
    if ((rc = pthread_create(&rt->thread, NULL, rt_main, rt)) != 0) {
        rc = -rc;
        goto fail;
    }
    rt->started = true;
    for (size_t i = 0; i < o->nimages; i++)
        log_info("runtime: running images as processes", "repo", o->repo[i], "root", o->root[i],
                 "dir", rt->dir, NULL);
    *out = rt;
    return 0;
nomem:
    rc = -ENOMEM;
fail:
    runtime_stop(rt);
    return rc;
}

void runtime_stop(struct runtime *rt)
{
    uint64_t deadline;

    if (!rt)
        return;
    atomic_store(&rt->stop, true);
    if (rt->started) {
        if (write(rt->wake[1], "x", 1) < 0)
            (void)0;
        pthread_join(rt->thread, NULL);
    }
    runtime__svc_stop(rt);
    /* the thread is gone: terminate what is left here, SIGTERM then SIGKILL */
    for (struct rt_pod *p = rt->pods; p; p = p->next)
        for (size_t i = 0; i < p->nc; i++)
            ctr_signal(&p->c[i], SIGTERM);
    deadline = runtime__now_ms() + STOP_GRACE_MS;
    for (struct rt_pod *p = rt->pods; p; p = p->next)
        for (size_t i = 0; i < p->nc; i++) {
            struct rt_ctr *c = &p->c[i];
            if (c->st == RC_RUNNING && c->pidfd >= 0) {
                struct pollfd pw = { .fd = c->pidfd, .events = POLLIN };
                uint64_t now = runtime__now_ms();
                siginfo_t si;
                if (poll(&pw, 1, deadline > now ? (int)(deadline - now) : 0) != 1)
                    ctr_signal(c, SIGKILL);
                waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
                kill(-c->pid, SIGKILL);
                close(c->pidfd);
                c->st = RC_TERMINATED;
            }
            runtime__probe_cancel(c);
        }
    while (rt->pods)
        pod_finish(rt, rt->pods, false);
    for (struct rt_cmd *c = rt->cmds, *nx; c; c = nx) {
        nx = c->next;
        cJSON_Delete(c->pod);
        free(c);
    }
    runtime__net_stop(rt);
    if (rt->dir[0])
        runtime__rm_rf(rt->dir);
    if (rt->wake[0] >= 0)
        close(rt->wake[0]);
    if (rt->wake[1] >= 0)
        close(rt->wake[1]);
    pthread_mutex_destroy(&rt->mu);
    free(rt->ca);
    free(rt->token);
    free(rt);
}

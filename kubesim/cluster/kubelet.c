/*
 * kubelet.c - the simulated kubelet: plays each Pod bound to one of our
 * nodes through Pending -> Running -> Ready (or a failure chosen by a kubesim.io/
 * annotation), restarts containers per restartPolicy with a crash-loop back-off,
 * and removes deleted Pods after min(grace period, --pod-stop-ms). The Pod's whole
 * status is derived from struct cl_pod and written as one merge patch of /status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"
#include "kubesim/ray/ray.h"
#include "kubesim/runtime/runtime.h"
#include "util/util.h"

enum { FAIL_NONE, FAIL_CRASHLOOP, FAIL_EXIT, FAIL_OOM, FAIL_IMAGEPULL, FAIL_NEVERREADY };

#define EXIT_AFTER_DEFAULT_MS 500
#define BACKOFF_BASE_MS 500
#define BACKOFF_MAX_MS 8000
#define RAY_POLL_MS 200

/* Crash-loop back-off: the kubelet's 10s doubling to 5m, scaled down to 0.5s .. 8s. */
static long backoff_ms(int restarts)
{
    long ms = (long)BACKOFF_BASE_MS << (restarts > 5 ? 4 : (restarts < 1 ? 0 : restarts - 1));
    return ms > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms;
}

static const char *const cond_names[C_N] = {
    "Initialized", "PodReadyToStartContainers", "ContainersReady", "Ready", "PodScheduled",
};

void cluster__kubelet_set_cond(struct cl_pod *p, int cond, bool v)
{
    if (p->cond[cond] != v || !p->cond_time[cond]) {
        p->cond[cond] = v;
        p->cond_time[cond] = time(NULL);
    }
}

/* kubesim.io/fail: crashloop | exit:<code> | oomkilled | imagepull | never-ready, read
 * from each parsed snapshot into the record (the kubelet acts on them at the bind) */
void cluster__kubelet_take(struct cl_pod *p, const cJSON *pod)
{
    const cJSON *an = kobj_get(kobj_get(pod, "metadata"), "annotations");
    const char *f = kobj_str(an, "kubesim.io/fail"), *ea = kobj_str(an, "kubesim.io/exit-after-ms");
    char *end;

    p->v.ann_fail = FAIL_NONE;
    p->v.ann_code = 0;
    p->v.ann_exit_after = 0;
    if (ea) {
        long v = strtol(ea, &end, 10);
        if (!*end && end != ea && v >= 0 && v <= 86400000)
            p->v.ann_exit_after = v;
    }
    if (!f)
        return;
    if (!strcmp(f, "crashloop")) {
        p->v.ann_fail = FAIL_CRASHLOOP;
        p->v.ann_code = 1;
    } else if (!strcmp(f, "oomkilled")) {
        p->v.ann_fail = FAIL_OOM;
        p->v.ann_code = 137;
    } else if (!strcmp(f, "imagepull")) {
        p->v.ann_fail = FAIL_IMAGEPULL;
    } else if (!strcmp(f, "never-ready")) {
        p->v.ann_fail = FAIL_NEVERREADY;
    } else if (!strncmp(f, "exit:", 5)) {
        long v = strtol(f + 5, &end, 10);
        if (!*end && end != f + 5 && v >= 0 && v <= 255) {
            p->v.ann_fail = FAIL_EXIT;
            p->v.ann_code = (int)v;
        }
    }
}

static void parse_annotations(struct cl_pod *p)
{
    p->fail_kind = p->v.ann_fail;
    p->exit_after_ms = p->v.ann_exit_after;
    if (p->fail_kind == FAIL_CRASHLOOP || p->fail_kind == FAIL_OOM || p->fail_kind == FAIL_EXIT)
        p->exit_code = p->v.ann_code;
    if ((p->fail_kind == FAIL_CRASHLOOP || p->fail_kind == FAIL_OOM ||
         p->fail_kind == FAIL_EXIT) && !p->exit_after_ms)
        p->exit_after_ms = EXIT_AFTER_DEFAULT_MS;
}

/* How the container's run ends when the annotations did not say: the one place
 * where simulated workloads plug in their exit time and code (a Job's Pod runs
 * --job-pod-ms, jittered, then exits 0; other Pods run until deleted). Workload
 * hooks that know better (e.g. a Ray submitter) go before the Job default. */
static void cl_kubelet_exit_plan(struct cluster *c, struct cl_pod *p)
{
    if (p->exit_after_ms > 0 || p->fail_kind == FAIL_IMAGEPULL)
        return;   /* kubesim.io/ annotations decided */
    if (c->o.job_pod_ms > 0 && p->v.ctl == CL_CTL_JOB)
        p->exit_after_ms = (long)cluster__jitter(c, c->o.job_pod_ms);
}

static const char *restart_policy(const struct cl_pod *p)
{
    const char *rp = kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "restartPolicy");
    return rp ? rp : "Always";
}

static const char *node_name(const struct cl_pod *p)
{
    return p->ep.known ? p->ep.node : kobj_str(kobj_get(store_obj_json(p->obj), "spec"), "nodeName");
}

/* ---- status rendering ------------------------------------------------------------- */

static uint32_t fnv(const char *s, uint32_t h)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void hex64(const char *seed, int salt, char out[65])
{
    uint32_t h = fnv(seed, 2166136261u) ^ (uint32_t)salt * 2654435761u;

    for (int i = 0; i < 8; i++) {
        h = h * 1103515245u + 12345u + (uint32_t)i;
        snprintf(out + 8 * i, 9, "%08x", h);
    }
}

static void add_time(cJSON *o, const char *k, time_t t)
{
    char ts[32];

    util_format_time(t, ts);
    cJSON_AddStringToObject(o, k, ts);
}

static cJSON *terminated(const char *reason, int code, time_t started, time_t finished,
                         const char *cid)
{
    cJSON *t = cJSON_CreateObject();

    cJSON_AddNumberToObject(t, "exitCode", code);
    cJSON_AddStringToObject(t, "reason", reason);
    add_time(t, "startedAt", started);
    add_time(t, "finishedAt", finished);
    if (cid)
        cJSON_AddStringToObject(t, "containerID", cid);
    return t;
}

static void image_id(const char *image, char *out, size_t len)
{
    char h[65];
    const char *colon = strrchr(image, ':'), *slash = strrchr(image, '/');
    int n = colon && (!slash || colon > slash) ? (int)(colon - image) : (int)strlen(image);

    hex64(image, 7, h);
    snprintf(out, len, "%s%.*s@sha256:%s", slash ? "docker.io/" : "docker.io/library/", n, image, h);
}

static cJSON *container_status(struct cl_pod *p, const cJSON *spec_c, int idx, bool init)
{
    cJSON *s = cJSON_CreateObject(), *st;
    const char *name = kobj_str(spec_c, "name"), *image = kobj_str(spec_c, "image");
    char cid[96], hex[65], iid[600];
    bool pulled = p->stage == ST_RUNNING || p->stage == ST_READY || p->stage == ST_BACKOFF ||
                  p->stage == ST_DONE;

    hex64(p->cid, idx * 1000 + p->restarts + (init ? 500 : 0), hex);
    snprintf(cid, sizeof(cid), "containerd://%s", hex);
    image_id(image ? image : "", iid, sizeof(iid));
    cJSON_AddStringToObject(s, "name", name ? name : "");
    cJSON_AddStringToObject(s, "image", image ? image : "");
    cJSON_AddStringToObject(s, "imageID", pulled ? iid : "");
    if (pulled)
        cJSON_AddStringToObject(s, "containerID", cid);
    st = cJSON_AddObjectToObject(s, "state");
    if (init) {
        cJSON_AddBoolToObject(s, "ready", true);
        cJSON_AddNumberToObject(s, "restartCount", 0);
        cJSON_AddBoolToObject(s, "started", false);
        cJSON_AddItemToObject(st, "terminated",
                              terminated("Completed", 0, p->start_time, p->start_time, cid));
        return s;
    }
    if (p->side_done && name && !strcmp(name, p->side_name) &&
        (p->stage == ST_RUNNING || p->stage == ST_READY)) {
        /* the sidecar submitter exited (restartPolicy Never) while the Pod runs on; the
         * Pod's Ready condition is left as is: KubeRay's head Service publishes not-ready
         * addresses, so the dashboard stays reachable as it does here */
        cJSON_AddBoolToObject(s, "ready", false);
        cJSON_AddNumberToObject(s, "restartCount", p->restarts);
        cJSON_AddBoolToObject(s, "started", false);
        cJSON_AddItemToObject(st, "terminated", terminated(p->side_exit ? "Error" : "Completed",
                              p->side_exit, p->side_started, p->side_finished, cid));
        cJSON_AddObjectToObject(s, "lastState");
        return s;
    }
    cJSON_AddBoolToObject(s, "ready", p->stage == ST_READY);
    cJSON_AddNumberToObject(s, "restartCount", p->restarts);
    cJSON_AddBoolToObject(s, "started", p->stage == ST_RUNNING || p->stage == ST_READY);
    switch (p->stage) {
    case ST_RUNNING:
    case ST_READY:
        add_time(cJSON_AddObjectToObject(st, "running"), "startedAt", p->run_since);
        break;
    case ST_DONE:
        cJSON_AddItemToObject(st, "terminated", terminated(p->last_reason, p->last_exit,
                              p->term_started, p->term_finished, cid));
        break;
    case ST_BACKOFF: {
        cJSON *w = cJSON_AddObjectToObject(st, "waiting");
        char msg[800];
        snprintf(msg, sizeof(msg), "back-off %ds restarting failed container=%s pod=%s_%s(%s)",
                 (int)((backoff_ms(p->restarts) + 999) / 1000),
                 name ? name : "", p->obj->name, p->obj->ns, p->obj->uid);
        cJSON_AddStringToObject(w, "reason", "CrashLoopBackOff");
        cJSON_AddStringToObject(w, "message", msg);
        break;
    }
    case ST_PULLFAIL: {
        cJSON *w = cJSON_AddObjectToObject(st, "waiting");
        char msg[800];
        if (!strcmp(p->last_reason, "ErrImagePull"))
            snprintf(msg, sizeof(msg), "failed to pull and unpack image \"%s\": failed to resolve "
                     "reference \"%s\": not found", image ? image : "", image ? image : "");
        else
            snprintf(msg, sizeof(msg), "Back-off pulling image \"%s\"", image ? image : "");
        cJSON_AddStringToObject(w, "reason", p->last_reason);
        cJSON_AddStringToObject(w, "message", msg);
        break;
    }
    default:
        cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "waiting"), "reason",
                                "ContainerCreating");
    }
    if (p->has_last && p->stage != ST_DONE) {
        hex64(p->cid, idx * 1000 + p->restarts - 1, hex);
        snprintf(cid, sizeof(cid), "containerd://%s", hex);
        cJSON_AddItemToObject(cJSON_AddObjectToObject(s, "lastState"), "terminated",
                              terminated(p->last_reason, p->last_exit, p->term_started,
                                         p->term_finished, cid));
    } else {
        cJSON_AddObjectToObject(s, "lastState");
    }
    return s;
}

static void add_cond(cJSON *conds, struct cl_pod *p, int k, const char *reason,
                     const char *message)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "type", cond_names[k]);
    cJSON_AddStringToObject(o, "status", p->cond[k] ? "True" : "False");
    cJSON_AddNullToObject(o, "lastProbeTime");
    add_time(o, "lastTransitionTime", p->cond_time[k] ? p->cond_time[k] : time(NULL));
    if (reason)
        cJSON_AddStringToObject(o, "reason", reason);
    if (message)
        cJSON_AddStringToObject(o, "message", message);
    cJSON_AddItemToArray(conds, o);
}

static cJSON *pod_status(struct cluster *cl, struct cl_pod *p)
{
    const cJSON *spec = kobj_get(store_obj_json(p->obj), "spec"), *old = kobj_get(store_obj_json(p->obj), "status");
    const cJSON *c;
    cJSON *s = cJSON_CreateObject(), *conds, *list, *ips;
    struct cl_node *n = NULL;
    const char *phase = "Pending", *nr_reason = NULL;
    char unready[512] = "", msg[600];
    int idx = 0;
    bool started = p->stage != ST_NONE && p->stage != ST_BOUND;
    /* bound by our scheduler but not started: the kubelet's first, ContainerCreating status */
    bool bound = started || (p->cond[C_SCHED] && p->acct_node);
    const char *host = node_name(p) && node_name(p)[0] ? node_name(p) : p->acct_node;

    if (p->stage == ST_RUNNING || p->stage == ST_READY || p->stage == ST_BACKOFF)
        phase = "Running";
    else if (p->stage == ST_DONE)
        phase = p->last_exit == 0 ? "Succeeded" : "Failed";
    cJSON_AddStringToObject(s, "phase", phase);
    conds = cJSON_AddArrayToObject(s, "conditions");
    if (bound) {
        cJSON_ArrayForEach(c, kobj_get(spec, "containers")) {
            size_t off = strlen(unready);
            if (p->stage != ST_READY && off + 2 < sizeof(unready))
                snprintf(unready + off, sizeof(unready) - off, "%s%s", off ? " " : "",
                         kobj_str(c, "name") ? kobj_str(c, "name") : "");
        }
        snprintf(msg, sizeof(msg), "containers with unready status: [%s]", unready);
        nr_reason = p->stage == ST_DONE ? "PodCompleted" : "ContainersNotReady";
        add_cond(conds, p, C_READYTOSTART, NULL, NULL);
        add_cond(conds, p, C_INIT, p->stage == ST_DONE ? "PodCompleted" :
                 p->cond[C_INIT] ? NULL : "ContainersNotInitialized", NULL);
        add_cond(conds, p, C_READY, p->cond[C_READY] ? NULL : nr_reason,
                 p->cond[C_READY] || p->stage == ST_DONE ? NULL : msg);
        add_cond(conds, p, C_CONTAINERS, p->cond[C_CONTAINERS] ? NULL : nr_reason,
                 p->cond[C_CONTAINERS] || p->stage == ST_DONE ? NULL : msg);
    }
    if (p->cond_time[C_SCHED]) {
        add_cond(conds, p, C_SCHED, p->cond[C_SCHED] ? NULL :
                 p->sched_waiting ? "Schedulable" : "Unschedulable",
                 p->cond[C_SCHED] ? NULL : cluster__pod_unsched(p));
    } else {
        /* bound by a client's pods/binding (or another scheduler): its PodScheduled is
         * kept, as the kubelet keeps conditions it does not own */
        cJSON_ArrayForEach(c, kobj_get(old, "conditions"))
            if (kobj_str(c, "type") && !strcmp(kobj_str(c, "type"), "PodScheduled")) {
                cJSON_AddItemToArray(conds, cJSON_Duplicate(c, true));
                break;
            }
    }
    if (p->disrupted) {
        /* a gang scheduler's eviction (gang_volcano.c), kept as the kubelet keeps
         * conditions it does not own */
        cJSON *d = cJSON_CreateObject();
        char dmsg[300];
        cJSON_AddItemToArray(conds, d);
        cJSON_AddStringToObject(d, "type", "DisruptionTarget");
        cJSON_AddStringToObject(d, "status", "True");
        cJSON_AddStringToObject(d, "reason", "PreemptionByScheduler");
        snprintf(dmsg, sizeof(dmsg), "%.200s: preempting to accommodate a higher priority pod",
                 kobj_str(spec, "schedulerName") ? kobj_str(spec, "schedulerName") : "");
        cJSON_AddStringToObject(d, "message", dmsg);
    }
    if (kobj_get(old, "qosClass"))
        cJSON_AddItemToObject(s, "qosClass", cJSON_Duplicate(kobj_get(old, "qosClass"), true));
    if (!bound)
        return s;
    n = cluster__node_find(cl, host);
    if (n && n->ip[0]) {
        cJSON_AddStringToObject(s, "hostIP", n->ip);
        ips = cJSON_AddArrayToObject(s, "hostIPs");
        cJSON_AddItemToArray(ips, cJSON_CreateObject());
        cJSON_AddStringToObject(ips->child, "ip", n->ip);
    }
    if (p->ip[0]) {
        cJSON_AddStringToObject(s, "podIP", p->ip);
        ips = cJSON_AddArrayToObject(s, "podIPs");
        cJSON_AddItemToArray(ips, cJSON_CreateObject());
        cJSON_AddStringToObject(ips->child, "ip", p->ip);
    }
    add_time(s, "startTime", p->start_time);
    if (started && kobj_get(spec, "initContainers")) {
        list = cJSON_AddArrayToObject(s, "initContainerStatuses");
        cJSON_ArrayForEach(c, kobj_get(spec, "initContainers"))
            cJSON_AddItemToArray(list, container_status(p, c, idx++, true));
    }
    list = cJSON_AddArrayToObject(s, "containerStatuses");
    idx = 0;
    cJSON_ArrayForEach(c, kobj_get(spec, "containers"))
        cJSON_AddItemToArray(list, container_status(p, c, idx++, false));
    return s;
}

/* The kubelet's status as a merge patch of /status; with node, of pods/binding, which
 * sets spec.nodeName in the same write (the scheduler's bind with the node's first
 * report: one write instead of a patch of spec and then one of status). */
static int status_write(struct cluster *c, struct cl_pod *p, const char *node)
{
    cJSON *body = cJSON_CreateObject(), *status = pod_status(c, p), *spec = NULL;
    struct store_write_opts w = { .field_manager = node ? "kube-scheduler" : "kubelet" };
    struct store_status st = { 0 };
    struct store_obj *out = NULL;
    uint64_t before = store_current_rv(c->store);
    int rc;

    if (!body || !status || !cJSON_AddItemToObject(body, "status", status)) {
        cJSON_Delete(body);
        cJSON_Delete(status);
        return -ENOMEM;
    }
    if (node && (!(spec = cJSON_AddObjectToObject(body, "spec")) ||
                 !cJSON_AddStringToObject(spec, "nodeName", node))) {
        cJSON_Delete(body);
        return -ENOMEM;
    }
    /* the tree itself: printing it for the store to parse again was 5 % of kubesim */
    rc = store_patch_json(c->store, c->r_pods, p->obj->ns, p->obj->name,
                          node ? "binding" : "status", PATCH_MERGE, body, &w, &out, NULL, &st);
    if (rc < 0 && node)
        log_debug("cluster: bind failed", "pod", p->key, "error", st.message, NULL);
    else if (rc < 0 && st.code != 404)
        log_warn("cluster: pod status write failed", "pod", p->key, "error", st.message, NULL);
    if (rc == 0)
        cluster__pod_own(c, p, out, before, node != NULL);
    store_obj_unref(out);
    store_status_clear(&st);
    return rc;
}

int cluster__kubelet_write(struct cluster *c, struct cl_pod *p)
{
    return status_write(c, p, NULL);
}

int cluster__kubelet_write_bind(struct cluster *c, struct cl_pod *p, const char *node)
{
    return status_write(c, p, node);
}

/* ---- lifecycle ------------------------------------------------------------------------ */

static void container_events(struct cluster *c, struct cl_pod *p, const char *reason,
                             const char *type, const char *fmt)
{
    const cJSON *ct;

    cJSON_ArrayForEach(ct, kobj_get(kobj_get(store_obj_json(p->obj), "spec"), "containers")) {
        const char *name = kobj_str(ct, "name"), *image = kobj_str(ct, "image");
        char msg[700], fp[300];
        /* fmt has one %s: the image for Pulled/Pulling/pull failures, else the name */
        bool by_image = strstr(fmt, "image") != NULL;
        snprintf(msg, sizeof(msg), fmt, by_image ? (image ? image : "") : (name ? name : ""),
                 p->obj->name, p->obj->ns, p->obj->uid);
        snprintf(fp, sizeof(fp), "spec.containers{%s}", name ? name : "");
        cluster__event(c, store_obj_json(p->obj), type, reason, msg, "kubelet", node_name(p), fp);
    }
}

/* One BackOff Event per Pod whose count grows, as the event recorder aggregates a
 * repeating (reason, message, object) instead of writing a new Event each time. */
static void backoff_event(struct cluster *c, struct cl_pod *p)
{
    const cJSON *ct = kobj_get(kobj_get(store_obj_json(p->obj), "spec"), "containers");
    const char *name = kobj_str(ct ? ct->child : NULL, "name");
    char msg[700], fp[300], ev[300] = "";

    if (p->backoff_ev && cluster__event_bump(c, p->obj->ns, p->backoff_ev, ++p->backoff_count) == 0)
        return;
    snprintf(msg, sizeof(msg), "Back-off restarting failed container %s in pod %s_%s(%s)",
             name ? name : "", p->obj->name, p->obj->ns, p->obj->uid);
    snprintf(fp, sizeof(fp), "spec.containers{%s}", name ? name : "");
    cluster__event_named(c, store_obj_json(p->obj), "Warning", "BackOff", msg, "kubelet", node_name(p), fp,
                         ev, sizeof(ev));
    free(p->backoff_ev);
    p->backoff_ev = ev[0] ? strdup(ev) : NULL;   /* NULL (ENOMEM): the next back-off writes anew */
    p->backoff_count = 1;
}

static void assign_ip(struct cluster *c, struct cl_pod *p)
{
    unsigned s = c->ip_seq++ % (256u * 254u);

    if (!p->ip[0])
        snprintf(p->ip, sizeof(p->ip), "10.244.%u.%u", s / 254, s % 254 + 1);
}

static void start_container(struct cluster *c, struct cl_pod *p, bool restart)
{
    if (p->stage != ST_BOUND && p->stage != ST_BACKOFF)
        return;
    assign_ip(c, p);
    if (!p->start_time)
        p->start_time = time(NULL);
    if (p->stage == ST_BOUND && cluster__certmgr_tls_wait(c, store_obj_json(p->obj), p->ip)) {
        /* KubeRay's wait-for-tls-ip-san init container: Pending, with its IP, until the
         * certificate lists it */
        if (!kobj_get(kobj_get(store_obj_json(p->obj), "status"), "podIP"))
            cluster__kubelet_write(c, p);
        cluster__timer_add(c, 200, T_START, p);
        return;
    }
    cluster__kubelet_set_cond(p, C_READYTOSTART, true);
    cluster__kubelet_set_cond(p, C_INIT, true);
    cluster__kubelet_set_cond(p, C_CONTAINERS, false);
    cluster__kubelet_set_cond(p, C_READY, false);
    if (p->fail_kind == FAIL_IMAGEPULL) {
        p->stage = ST_PULLFAIL;
        p->last_reason = "ErrImagePull";
        cluster__kubelet_write(c, p);
        container_events(c, p, "Pulling", "Normal", "Pulling image \"%s\"");
        container_events(c, p, "Failed", "Warning", "Failed to pull image \"%s\": not found");
        cluster__timer_add(c, 1000, T_PULL, p);
        return;
    }
    p->stage = ST_RUNNING;
    p->run_since = time(NULL);
    cluster__kubelet_write(c, p);
    container_events(c, p, "Pulled", "Normal", "Container image \"%s\" already present on machine");
    container_events(c, p, "Created", "Normal", "Created container: %s");
    container_events(c, p, "Started", "Normal", "Started container %s");
    (void)restart;
    p->side_done = false;
    p->side_name[0] = '\0';
    if (c->o.ray && ray_submitter_start(c->o.ray, store_obj_json(p->obj))) {
        /* a Ray submitter: the Ray runtime decides when it exits, and how (kubesim/ray/ray.h) */
        cluster__timer_add(c, RAY_POLL_MS, T_RAY, p);
    } else {
        if (c->o.ray && ray_submitter_sidecar(c->o.ray, p->obj->uid, p->side_name,
                                              sizeof(p->side_name))) {
            /* a sidecar submitter: only its container ends, the Pod runs on */
            p->side_started = time(NULL);
            cluster__timer_add(c, RAY_POLL_MS, T_RAY_SIDE, p);
        }
        if (p->exit_after_ms > 0)
            cluster__timer_add(c, (uint64_t)p->exit_after_ms, T_EXIT, p);
    }
    if (p->fail_kind != FAIL_NEVERREADY)
        cluster__timer_add(c, cluster__jitter(c, c->o.pod_ready_ms), T_READY, p);
}

static void container_exit(struct cluster *c, struct cl_pod *p)
{
    const char *rp = restart_policy(p);
    int code = p->fail_kind == FAIL_NONE ? 0 : p->exit_code;
    bool restart;

    if (p->stage != ST_RUNNING && p->stage != ST_READY)
        return;
    p->last_exit = code;
    p->last_reason = p->fail_kind == FAIL_OOM ? "OOMKilled" : code == 0 ? "Completed" : "Error";
    p->term_started = p->run_since;
    p->term_finished = time(NULL);
    p->has_last = true;
    restart = !strcmp(rp, "Always") || (!strcmp(rp, "OnFailure") && code != 0);
    cluster__kubelet_set_cond(p, C_CONTAINERS, false);
    cluster__kubelet_set_cond(p, C_READY, false);
    if (!restart) {
        p->stage = ST_DONE;
        cluster__kubelet_write(c, p);
        return;
    }
    p->restarts++;
    p->epoch = ++c->next_epoch;   /* the old run's READY/EXIT timers must not fire */
    p->stage = ST_BACKOFF;
    cluster__kubelet_write(c, p);
    backoff_event(c, p);
    cluster__timer_add(c, (uint64_t)backoff_ms(p->restarts), T_RESTART, p);
}

static void delete_now(struct cluster *c, struct cl_pod *p)
{
    struct store_delete_opts o = { .grace_seconds = 0, .precondition_uid = p->obj->uid };
    struct store_status st = { 0 };

    if (store_delete(c->store, c->r_pods, p->obj->ns, p->obj->name, &o, NULL, NULL, &st) < 0 &&
        st.code != 404 && st.code != 409)
        log_warn("cluster: pod removal failed", "pod", p->key, "error", st.message, NULL);
    store_status_clear(&st);
}

void cluster__kubelet_pod(struct cluster *c, struct cl_pod *p)
{
    const char *node = node_name(p);

    if (!node || !node[0] || !cluster__node_find(c, node))
        return;
    if (c->o.runtime && (p->real || runtime_claims(c->o.runtime, store_obj_json(p->obj)))) {
        /* real processes (kubesim/runtime): it writes the status and removes the Pod */
        if (p->v.deleting) {
            if (!p->deleting && p->real)
                runtime_pod_delete(c->o.runtime, p->obj->uid,
                                   p->v.grace_ms >= 0 ? p->v.grace_ms : 30000);
            else if (!p->deleting)
                cluster__timer_add(c, 0, T_DELETE, p);
            p->deleting = true;
            return;
        }
        if (!p->real) {
            if (p->v.terminal)
                return;
            p->real = true;
            assign_ip(c, p);
            runtime_pod_run(c->o.runtime, store_obj_json(p->obj), p->ip);
        }
        return;
    }
    if (p->v.deleting) {
        long ms = p->v.grace_ms >= 0 ? p->v.grace_ms : 0;

        if (p->deleting)
            return;
        p->deleting = true;
        if (c->o.ray)
            ray_submitter_cancel(c->o.ray, p->obj->uid);
        if (ms > c->o.pod_stop_ms)
            ms = c->o.pod_stop_ms;
        if (p->stage == ST_RUNNING || p->stage == ST_READY)
            container_events(c, p, "Killing", "Normal", "Stopping container %s");
        cluster__timer_add(c, (uint64_t)(ms < 0 ? 0 : ms), T_DELETE, p);
        return;
    }
    if (p->stage != ST_NONE || p->v.terminal)
        return;
    parse_annotations(p);
    cl_kubelet_exit_plan(c, p);
    p->stage = ST_BOUND;
    cluster__timer_add(c, cluster__jitter(c, c->o.pod_start_ms), T_START, p);
}

void cluster__kubelet_timer(struct cluster *c, struct cl_pod *p, int kind)
{
    if (p->deleting && kind != T_DELETE)
        return;
    switch (kind) {
    case T_START:
        start_container(c, p, false);
        break;
    case T_RESTART:
        start_container(c, p, true);
        break;
    case T_READY:
        if (p->stage != ST_RUNNING)
            break;
        p->stage = ST_READY;
        cluster__kubelet_set_cond(p, C_CONTAINERS, true);
        cluster__kubelet_set_cond(p, C_READY, true);
        cluster__kubelet_write(c, p);
        break;
    case T_EXIT:
        container_exit(c, p);
        break;
    case T_RAY:        /* the submitter is the main container */
    case T_RAY_SIDE: { /* ... or a sidecar beside it */
        int code;
        if (p->stage != ST_RUNNING && p->stage != ST_READY)
            break;
        if (!ray_submitter_poll(c->o.ray, p->obj->uid, &code)) {
            cluster__timer_add(c, RAY_POLL_MS, kind, p);
            break;
        }
        if (kind == T_RAY) {
            p->fail_kind = code ? FAIL_EXIT : FAIL_NONE;
            p->exit_code = code;
            container_exit(c, p);
        } else {
            p->side_done = true;
            p->side_exit = code;
            p->side_finished = time(NULL);
            cluster__kubelet_write(c, p);
        }
        break;
    }
    case T_PULL:
        if (p->stage != ST_PULLFAIL)
            break;
        p->last_reason = "ImagePullBackOff";
        cluster__kubelet_write(c, p);
        container_events(c, p, "BackOff", "Normal", "Back-off pulling image \"%s\"");
        break;
    case T_DELETE:
        delete_now(c, p);
        break;
    }
}

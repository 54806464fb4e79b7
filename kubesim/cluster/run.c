/*
 * run.c - the simulated cluster's thread: flags, the work queue fed by
 * store_subscribe (the committing thread only appends a reference), a timer heap,
 * the Node objects and their heartbeats, the Pod table with per-node resource
 * accounting, the scheduling pass and Event creation. Pod lifecycle lives in
 * kubelet.c, Service endpoints in endpoints.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/quantity.h"
#include "kubesim/cluster/internal.h"
#include "util/util.h"

#define HEARTBEAT_MS 40000
#define MAX_NODES 5000
#define MAX_NODE_LABELS 32

const char cluster_usage[] =
    "               [--nodes N] [--node-cpu Q] [--node-memory Q] [--node-gpu N]\n"
    "               [--node-tpu N] [--node-labels K=V,...] [--pod-start-ms MS]\n"
    "               [--pod-ready-ms MS] [--pod-stop-ms MS] [--job-pod-ms MS]\n"
    "               (--nodes: default 3, 1 with --run-image; 0 = an API server only;\n"
    "               docs/kubesim-cluster.md)\n";

/* ---- flags ----------------------------------------------------------------------- */

static int flag_num(const char *v, long min, long max, long *out)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max)
        return -EINVAL;
    *out = n;
    return 0;
}

/* "k=v,k2=v2": bounded (length, count), non-empty keys, printable, no spaces. */
static int labels_valid(const char *v)
{
    size_t len = strnlen(v, sizeof(((struct cluster_opts *)0)->node_labels));
    int n = 0;
    bool key = true, empty_key = true;

    if (len >= sizeof(((struct cluster_opts *)0)->node_labels) || len == 0)
        return -EINVAL;
    for (size_t i = 0; i <= len; i++) {
        char ch = v[i];
        if (ch == ',' || ch == '\0') {
            if (key || empty_key || ++n > MAX_NODE_LABELS)
                return -EINVAL;
            key = empty_key = true;
        } else if (ch == '=' && key) {
            key = false;
        } else if (ch <= ' ' || ch > '~' || ch == '=') {
            return -EINVAL;
        } else if (key) {
            empty_key = false;
        }
    }
    return 0;
}

static void add_flag_labels(cJSON *lb, const char *spec)
{
    char buf[sizeof(((struct cluster_opts *)0)->node_labels)], *save = NULL, *kv;

    snprintf(buf, sizeof(buf), "%s", spec);
    for (kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        cJSON_DeleteItemFromObjectCaseSensitive(lb, kv);
        cJSON_AddStringToObject(lb, kv, eq + 1);
    }
}

/* The numeric flags: the field each sets and its ceiling (the floor is 0). */
static const struct {
    const char *name;
    size_t off;
    long max;
} num_flags[] = {
    { "nodes", offsetof(struct cluster_opts, nodes), MAX_NODES },
    { "node-gpu", offsetof(struct cluster_opts, node_gpu), 1024 },
    { "node-tpu", offsetof(struct cluster_opts, node_tpu), 1024 },
    { "pod-start-ms", offsetof(struct cluster_opts, pod_start_ms), 3600000 },
    { "pod-ready-ms", offsetof(struct cluster_opts, pod_ready_ms), 3600000 },
    { "pod-stop-ms", offsetof(struct cluster_opts, pod_stop_ms), 3600000 },
    { "job-pod-ms", offsetof(struct cluster_opts, job_pod_ms), 86400000 },
};

int cluster_parse_flag(struct cluster_opts **op, const char *flag, const char *value,
                       char *err, size_t errlen)
{
    struct cluster_opts *o = *op;
    int64_t m;
    long max;
    char *str;

    if (!o) {
        if (!(o = calloc(1, sizeof(*o))))
            return -ENOMEM;
        strcpy(o->node_cpu, "32");
        strcpy(o->node_memory, "128Gi");
        o->pod_start_ms = 300;
        o->pod_ready_ms = 500;
        o->pod_stop_ms = 200;
        o->job_pod_ms = 1500;
        *op = o;
    }
    for (size_t i = 0; i < sizeof(num_flags) / sizeof(num_flags[0]); i++) {
        if (strcmp(flag, num_flags[i].name))
            continue;
        max = num_flags[i].max;
        if (flag_num(value, 0, max, (long *)((char *)o + num_flags[i].off)) < 0) {
            snprintf(err, errlen, "--%s wants a number from 0 to %ld, got \"%s\"", flag, max,
                     value);
            return -EINVAL;
        }
        return 0;
    }
    if (!strcmp(flag, "node-labels")) {
        if (labels_valid(value) < 0) {
            snprintf(err, errlen, "--node-labels wants KEY=VALUE[,KEY=VALUE]... (at most %d, "
                     "keys non-empty, no spaces), got \"%.200s\"", MAX_NODE_LABELS, value);
            return -EINVAL;
        }
        strcpy(o->node_labels, value);
        return 0;
    }
    if (!strcmp(flag, "node-cpu"))
        str = o->node_cpu;
    else if (!strcmp(flag, "node-memory"))
        str = o->node_memory;
    else
        return -ENOENT;
    if (strlen(value) >= sizeof(o->node_cpu) || kobj_quantity_parse(value, &m) < 0 || m <= 0) {
        snprintf(err, errlen, "--%s wants a positive quantity (e.g. 8, 500m, 64Gi), got \"%s\"",
                 flag, value);
        return -EINVAL;
    }
    strcpy(str, value);
    return 0;
}

void cluster_opts_free(struct cluster_opts *o)
{
    free(o);
}

/* ---- queue and timers ---------------------------------------------------------------- */

static void on_commit(void *arg, enum store_event_type type, struct store_obj *obj)
{
    struct cluster *c = arg;
    const struct reg_resource *r = obj ? obj->res : NULL;

    if (!r || (r != c->r_pods && r != c->r_nodes && r != c->r_svc && r != c->r_jobs &&
               r != c->r_deploy && r != c->r_rs && r != c->r_pvcs &&
               !cluster__gang_resource(r) && !cluster__certmgr_resource(r) &&
               strcmp(r->plural, "customresourcedefinitions") != 0))
        return;   /* a CRD: the gang step looks for Volcano's Queue type */
    pthread_mutex_lock(&c->qlock);
    if (c->stop) {
        pthread_mutex_unlock(&c->qlock);
        return;
    }
    if (c->qlen == c->qcap) {
        size_t ncap = c->qcap ? c->qcap * 2 : 1024;
        struct cl_qitem *nq = realloc(c->q, ncap * sizeof(*nq));
        if (!nq) {
            pthread_mutex_unlock(&c->qlock);
            log_error("cluster: queue allocation failed, event dropped", NULL);
            return;
        }
        c->q = nq;
        c->qcap = ncap;
    }
    c->q[c->qlen].type = type;
    c->q[c->qlen++].obj = store_obj_ref(obj);
    pthread_cond_signal(&c->qcond);
    pthread_mutex_unlock(&c->qlock);
}

static void heap_swap(struct cl_timer *h, size_t a, size_t b)
{
    struct cl_timer t = h[a];
    h[a] = h[b];
    h[b] = t;
}

void cluster__timer_add(struct cluster *c, uint64_t delay_ms, int kind, const struct cl_pod *p)
{
    cluster__timer_add_key(c, delay_ms, kind, p ? p->key : NULL, p ? p->epoch : 0);
}

void cluster__timer_add_key(struct cluster *c, uint64_t delay_ms, int kind, const char *key,
                            unsigned long epoch)
{
    size_t i;

    if (c->nheap == c->capheap) {
        size_t ncap = c->capheap ? c->capheap * 2 : 1024;
        struct cl_timer *nh = realloc(c->heap, ncap * sizeof(*nh));
        if (!nh)
            return;
        c->heap = nh;
        c->capheap = ncap;
    }
    i = c->nheap++;
    c->heap[i] = (struct cl_timer){ util_now_ms() + delay_ms, kind, epoch,
                                    key ? strdup(key) : NULL };
    while (i > 0 && c->heap[(i - 1) / 2].due_ms > c->heap[i].due_ms) {
        heap_swap(c->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static struct cl_timer heap_pop(struct cluster *c)
{
    struct cl_timer top = c->heap[0];
    size_t i = 0;

    c->heap[0] = c->heap[--c->nheap];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->nheap && c->heap[l].due_ms < c->heap[m].due_ms)
            m = l;
        if (r < c->nheap && c->heap[r].due_ms < c->heap[m].due_ms)
            m = r;
        if (m == i)
            break;
        heap_swap(c->heap, i, m);
        i = m;
    }
    return top;
}

/* base * [0.8, 1.2): real start times are never uniform */
uint64_t cluster__jitter(struct cluster *c, long base_ms)
{
    c->rng = c->rng * 1103515245u + 12345u;
    return (uint64_t)base_ms * (800 + (c->rng >> 8) % 400) / 1000;
}

/* ---- Events ---------------------------------------------------------------------------- */

void cluster__event(struct cluster *c, const cJSON *obj, const char *type, const char *reason,
                    const char *message, const char *component, const char *host,
                    const char *field_path)
{
    cluster__event_named(c, obj, type, reason, message, component, host, field_path, NULL, 0);
}

void cluster__event_of(struct cluster *c, const struct store_obj *o, const char *type,
                       const char *reason, const char *message, const char *component,
                       const char *host, const char *field_path)
{
    /* what the Event names of its object: the snapshot's names, not its tree (a Pod
     * whose tree left the cluster's scope would be parsed for four strings) */
    cJSON *io = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(io, "metadata");
    char av[300], rv[24];

    if (o->res->group[0])
        snprintf(av, sizeof(av), "%s/%s", o->res->group, o->res->version);
    else
        snprintf(av, sizeof(av), "%s", o->res->version);
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)o->rv);
    cJSON_AddStringToObject(io, "apiVersion", av);
    cJSON_AddStringToObject(io, "kind", o->res->kind);
    cJSON_AddStringToObject(md, "name", o->name);
    if (o->ns[0])
        cJSON_AddStringToObject(md, "namespace", o->ns);
    if (o->uid[0])
        cJSON_AddStringToObject(md, "uid", o->uid);
    cJSON_AddStringToObject(md, "resourceVersion", rv);
    cluster__event_named(c, io, type, reason, message, component, host, field_path, NULL, 0);
    cJSON_Delete(io);
}

int cluster__event_bump(struct cluster *c, const char *ns, const char *name, int count)
{
    struct store_write_opts w = { .field_manager = "kubelet" };
    struct store_status st = { 0 };
    char body[128], ts[32];
    int rc;

    util_format_time(time(NULL), ts);
    snprintf(body, sizeof(body), "{\"count\":%d,\"lastTimestamp\":\"%s\"}", count, ts);
    rc = store_patch(c->store, c->r_events, ns, name, NULL, PATCH_MERGE, body, strlen(body), &w,
                     NULL, NULL, &st);
    store_status_clear(&st);
    return rc;
}

void cluster__event_named(struct cluster *c, const cJSON *obj, const char *type, const char *reason,
                          const char *message, const char *component, const char *host,
                          const char *field_path, char *name_out, size_t name_len)
{
    const cJSON *md = kobj_get(obj, "metadata");
    const char *ns = kobj_str(md, "namespace");
    cJSON *ev = cJSON_CreateObject(), *m, *io, *src;
    struct store_write_opts w = { .field_manager = component };
    struct store_status st = { 0 };
    char name[300], ts[32];
    uint64_t now = util_now_ns();

    if (!ev)
        return;
    util_format_time(time(NULL), ts);
    c->rng = c->rng * 1103515245u + 12345u;
    snprintf(name, sizeof(name), "%.240s.%016llx", kobj_str(md, "name") ? kobj_str(md, "name") : "x",
             (unsigned long long)(now ^ c->rng));
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    m = cJSON_AddObjectToObject(ev, "metadata");
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", ns ? ns : "default");
    io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", kobj_str(obj, "apiVersion") ? kobj_str(obj, "apiVersion") : "v1");
    cJSON_AddStringToObject(io, "kind", kobj_str(obj, "kind") ? kobj_str(obj, "kind") : "Pod");
    if (ns)
        cJSON_AddStringToObject(io, "namespace", ns);
    cJSON_AddStringToObject(io, "name", kobj_str(md, "name") ? kobj_str(md, "name") : "");
    if (kobj_str(md, "uid"))
        cJSON_AddStringToObject(io, "uid", kobj_str(md, "uid"));
    if (kobj_str(md, "resourceVersion"))
        cJSON_AddStringToObject(io, "resourceVersion", kobj_str(md, "resourceVersion"));
    if (field_path)
        cJSON_AddStringToObject(io, "fieldPath", field_path);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", message);
    src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", component);
    if (host)
        cJSON_AddStringToObject(src, "host", host);
    cJSON_AddStringToObject(ev, "firstTimestamp", ts);
    cJSON_AddStringToObject(ev, "lastTimestamp", ts);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddNullToObject(ev, "eventTime");
    cJSON_AddStringToObject(ev, "reportingComponent", component);
    cJSON_AddStringToObject(ev, "reportingInstance", host ? host : "");
    if (store_create(c->store, c->r_events, ns ? ns : "default", ev, &w, NULL, &st) < 0)
        log_debug("cluster: event not recorded", "reason", reason, "error", st.message, NULL);
    else if (name_out && name_len)
        snprintf(name_out, name_len, "%s", name);
    store_status_clear(&st);
}

/* ---- nodes --------------------------------------------------------------------------- */

struct cl_node *cluster__node_find(struct cluster *c, const char *name)
{
    struct cl_node *n = NULL;

    if (name)
        HASH_FIND_STR(c->nodes, name, n);
    return n;
}

static cJSON *node_conditions(void)
{
    static const char *const types[][4] = {
        { "MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available" },
        { "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure" },
        { "PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available" },
        { "Ready", "True", "KubeletReady", "kubelet is posting ready status" },
    };
    cJSON *a = cJSON_CreateArray();
    char ts[32];

    util_format_time(time(NULL), ts);
    for (size_t i = 0; a && i < 4; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", types[i][0]);
        cJSON_AddStringToObject(o, "status", types[i][1]);
        cJSON_AddStringToObject(o, "lastHeartbeatTime", ts);
        cJSON_AddStringToObject(o, "lastTransitionTime", ts);
        cJSON_AddStringToObject(o, "reason", types[i][2]);
        cJSON_AddStringToObject(o, "message", types[i][3]);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* What every simulated node says about itself: its fixed labels (besides
 * kubernetes.io/hostname) and status.nodeInfo after machineID and systemUUID (in the
 * order the API server writes them). */
static const char *const node_labels[][2] = {
    { "kubernetes.io/os", "linux" },
    { "kubernetes.io/arch", "amd64" },
    { "beta.kubernetes.io/os", "linux" },
    { "beta.kubernetes.io/arch", "amd64" },
    { "node.kubernetes.io/instance-type", "kubesim.standard" },
    { NULL, NULL },
};
static const char *const node_info[][2] = {
    { "bootID", "kubesim" },
    { "kernelVersion", "6.1.0-kubesim" },
    { "osImage", "Debian GNU/Linux 12 (bookworm)" },
    { "containerRuntimeVersion", "containerd://1.7.13" },
    { "kubeletVersion", "v1.33.0" },
    { "kubeProxyVersion", "v1.33.0" },
    { "operatingSystem", "linux" },
    { "architecture", "amd64" },
    { NULL, NULL },
};

static void add_strings(cJSON *o, const char *const kv[][2])
{
    for (; kv[0][0]; kv++)
        cJSON_AddStringToObject(o, kv[0][0], kv[0][1]);
}

static cJSON *node_status(const struct cluster *c, int i)
{
    cJSON *s = cJSON_CreateObject(), *cap, *a, *ad, *ni;
    char ip[20], host[32], gpu[16], tpu[16];

    snprintf(ip, sizeof(ip), "10.0.%d.%d", (i + 1) / 250, (i + 1) % 250 + 2);
    snprintf(host, sizeof(host), "kubesim-node-%d", i);
    snprintf(gpu, sizeof(gpu), "%ld", c->o.node_gpu);
    snprintf(tpu, sizeof(tpu), "%ld", c->o.node_tpu);
    cap = cJSON_AddObjectToObject(s, "capacity");
    cJSON_AddStringToObject(cap, "cpu", c->o.node_cpu);
    cJSON_AddStringToObject(cap, "memory", c->o.node_memory);
    cJSON_AddStringToObject(cap, "pods", "110");
    cJSON_AddStringToObject(cap, "ephemeral-storage", "100Gi");
    if (c->o.node_gpu)
        cJSON_AddStringToObject(cap, "nvidia.com/gpu", gpu);
    if (c->o.node_tpu)
        cJSON_AddStringToObject(cap, "google.com/tpu", tpu);
    cJSON_AddItemToObject(s, "allocatable", cJSON_Duplicate(cap, true));
    cJSON_AddItemToObject(s, "conditions", node_conditions());
    ad = cJSON_AddArrayToObject(s, "addresses");
    a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "type", "InternalIP");
    cJSON_AddStringToObject(a, "address", ip);
    cJSON_AddItemToArray(ad, a);
    a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "type", "Hostname");
    cJSON_AddStringToObject(a, "address", host);
    cJSON_AddItemToArray(ad, a);
    ni = cJSON_AddObjectToObject(s, "nodeInfo");
    cJSON_AddStringToObject(ni, "machineID", "kubesim");
    cJSON_AddStringToObject(ni, "systemUUID", host);
    add_strings(ni, node_info);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(s, "daemonEndpoints"),
                                                    "kubeletEndpoint"), "Port", 10250);
    return s;
}

static int node_patch_status(struct cluster *c, int i)
{
    cJSON *body = cJSON_CreateObject();
    struct store_write_opts w = { .field_manager = "kubelet" };
    struct store_status st = { 0 };
    char name[32], *txt;
    int rc;

    snprintf(name, sizeof(name), "kubesim-node-%d", i);
    cJSON_AddItemToObject(body, "status", node_status(c, i));
    txt = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!txt)
        return -ENOMEM;
    rc = store_patch(c->store, c->r_nodes, "", name, "status", PATCH_MERGE, txt, strlen(txt),
                     &w, NULL, NULL, &st);
    if (rc < 0)
        log_warn("cluster: node status", "node", name, "error", st.message, NULL);
    store_status_clear(&st);
    free(txt);
    return rc;
}

static int nodes_create(struct cluster *c)
{
    for (int i = 0; i < c->o.nodes; i++) {
        cJSON *n = cJSON_CreateObject(), *md, *lb;
        struct store_write_opts w = { .field_manager = "kubelet" };
        struct store_status st = { 0 };
        char name[32];
        int rc;

        snprintf(name, sizeof(name), "kubesim-node-%d", i);
        cJSON_AddStringToObject(n, "apiVersion", "v1");
        cJSON_AddStringToObject(n, "kind", "Node");
        md = cJSON_AddObjectToObject(n, "metadata");
        cJSON_AddStringToObject(md, "name", name);
        lb = cJSON_AddObjectToObject(md, "labels");
        cJSON_AddStringToObject(lb, "kubernetes.io/hostname", name);
        add_strings(lb, node_labels);
        if (c->o.node_labels[0])
            add_flag_labels(lb, c->o.node_labels);
        cJSON_AddObjectToObject(n, "spec");
        rc = store_create(c->store, c->r_nodes, "", n, &w, NULL, &st);
        if (rc < 0 && st.code != 409) {
            log_error("cluster: cannot create node", "node", name, "error", st.message, NULL);
            store_status_clear(&st);
            return rc;
        }
        store_status_clear(&st);
        if ((rc = node_patch_status(c, i)) < 0)
            return rc;
    }
    return 0;
}

void cluster__node_event(struct cluster *c, enum store_event_type type, struct store_obj *o)
{
    struct cl_node *n = cluster__node_find(c, o->name);

    if (type == EV_DELETED) {
        if (n) {
            cluster__node_index_remove(c, n);
            HASH_DEL(c->nodes, n);
            store_obj_unref(n->obj);
            free(n->name);
            free(n);
        }
        return;
    }
    if (n && o->rv < n->obj->rv)
        return;   /* a replayed snapshot older than what an event brought */
    if (!n) {
        if (!(n = calloc(1, sizeof(*n))) || !(n->name = strdup(o->name))) {
            free(n);
            return;
        }
        HASH_ADD_KEYPTR(hh, c->nodes, n->name, strlen(n->name), n);
    } else {
        store_obj_unref(n->obj);
    }
    n->obj = store_obj_ref(o);
    cluster_node_allocatable(store_obj_json(o), &n->alloc);
    {
        const cJSON *a;
        cJSON_ArrayForEach(a, kobj_get(kobj_get(store_obj_json(o), "status"), "addresses"))
            if (kobj_str(a, "type") && !strcmp(kobj_str(a, "type"), "InternalIP") && kobj_str(a, "address"))
                snprintf(n->ip, sizeof(n->ip), "%s", kobj_str(a, "address"));
    }
    cluster__node_index_update(c, n);
    c->capacity_changed = true;
}

/* ---- the thread -------------------------------------------------------------------------- */

static void fire_timer(struct cluster *c, struct cl_timer *t)
{
    struct cl_pod *p = NULL;

    if (t->kind == T_HEARTBEAT) {
        for (int i = 0; i < c->o.nodes; i++)
            node_patch_status(c, i);
        cluster__timer_add(c, HEARTBEAT_MS, T_HEARTBEAT, NULL);
        return;
    }
    if (t->kind == T_ENDPOINTS) {
        c->endpoints_timer = false;
        cluster__endpoints_sync(c);
        return;
    }
    if (t->kind == T_CERTMGR) {
        c->certmgr_timer = false;
        c->certmgr_dirty = true;
        return;
    }
    if (t->kind == T_JOB) {
        if (t->key)
            cluster__jobs_timer(c, t->key, t->epoch);
        return;
    }
    if (t->key)
        HASH_FIND_STR(c->pods, t->key, p);
    if (p && p->epoch == t->epoch)
        cluster__kubelet_timer(c, p, t->kind);
}

/* Fires up to max timers that are due, the earliest first; mid_batch: inside a batch. */
static void fire_due(struct cluster *c, int max, bool mid_batch)
{
    for (int n = 0; n < max && c->nheap && c->heap[0].due_ms <= util_now_ms(); n++) {
        struct cl_timer t = heap_pop(c);
        if (mid_batch)
            c->timers_mid_batch++;
        fire_timer(c, &t);
        free(t.key);
        store_tree_scope_trim(CLUSTER_SCOPE_BYTES);
    }
}

static void deadline_of(uint64_t due_ms, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t now = util_now_ms();
    uint64_t wait = due_ms > now ? due_ms - now : 0;
    if (wait > 1000)
        wait = 1000;
    ts->tv_sec += (time_t)(wait / 1000);
    ts->tv_nsec += (long)(wait % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Hands one batch of the queue, in commit order, to the controllers that follow
 * its types; the Pods waiting are scheduled and the due timers fired every
 * CLUSTER_SCHED_EVERY items on the way (c->timers_mid_batch counts those). The
 * caller holds the references of the batch's snapshots; they are dropped here. */
void cluster__batch_run(struct cluster *c, struct cl_qitem *batch, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct store_obj *o = batch[i].obj;
        if (o->res == c->r_pods) {
            cluster__pod_event(c, batch[i].type, o);
            cluster__jobs_pod(c, batch[i].type, o);
            cluster__deploy_event(c, batch[i].type, o);
        } else if (o->res == c->r_deploy || o->res == c->r_rs)
            cluster__deploy_event(c, batch[i].type, o);
        else if (o->res == c->r_jobs)
            cluster__job_event(c, batch[i].type, o);
        else if (o->res == c->r_nodes)
            cluster__node_event(c, batch[i].type, o);
        else if (o->res == c->r_svc)
            cluster__svc_event(c, batch[i].type, o);
        else if (o->res == c->r_pvcs) {
            /* a claim that came may let a Pod waiting for it be scheduled */
            if (batch[i].type == EV_ADDED)
                c->capacity_changed = true;
        } else if (cluster__certmgr_resource(o->res))
            c->certmgr_dirty = true;
        else if (cluster__gang_resource(o->res))
            c->gang_dirty = c->gang_seen = true;   /* a PodGroup or Queue */
        else
            c->gang_dirty = true;   /* a CRD: the gang step looks for Volcano's Queue type */
        store_obj_unref(o);
        store_tree_scope_trim(CLUSTER_SCOPE_BYTES);
        /* a long queue is scheduled as it goes: a Pod bound after thousands of other
         * events found its tree (parsed for its ADDED event) gone from the scope.
         * The kubelets' due timers go as well: each Pod's start and Ready would
         * otherwise wait for the whole batch, and while clients create Pods the
         * batches never end (issue 18: Ready fell 30 s behind the creates, then came
         * in a burst once they stopped) */
        if ((i + 1) % CLUSTER_SCHED_EVERY == 0) {
            cluster__schedule_pass(c);
            fire_due(c, CLUSTER_SCHED_EVERY, true);
        }
    }
}

static void *cluster_main(void *arg)
{
    struct cluster *c = arg;
    struct cl_qitem *batch = NULL;
    size_t nbatch = 0, capbatch = 0;

    store_tree_scope_begin();
    for (;;) {
        struct timespec ts;

        pthread_mutex_lock(&c->qlock);
        while (!c->stop && !c->qlen && c->mem.asked == c->mem.done &&
               (!c->nheap || c->heap[0].due_ms > util_now_ms())) {
            deadline_of(c->nheap ? c->heap[0].due_ms : util_now_ms() + 1000, &ts);
            pthread_cond_timedwait(&c->qcond, &c->qlock, &ts);
        }
        if (c->stop) {
            pthread_mutex_unlock(&c->qlock);
            break;
        }
        /* take the whole queue: the committing threads keep appending to a fresh one */
        free(batch);
        batch = c->q;
        nbatch = c->qlen;
        capbatch = c->qcap;
        c->q = NULL;
        c->qlen = c->qcap = 0;
        pthread_mutex_unlock(&c->qlock);
        (void)capbatch;

        cluster__batch_run(c, batch, nbatch);
        nbatch = 0;
        cluster__schedule_pass(c);
        /* bounded so that a burst of timers does not starve the queue */
        fire_due(c, 2000, false);
        cluster__jobs_sync(c);
        cluster__deploy_sync(c);
        if (c->certmgr_dirty)
            cluster__certmgr_sync(c);
        if (c->endpoints_dirty && !c->endpoints_timer) {
            c->endpoints_timer = true;
            cluster__timer_add(c, 50, T_ENDPOINTS, NULL);
        }
        store_tree_scope_trim(CLUSTER_SCOPE_BYTES);
        cluster__memory_serve(c);
    }
    store_tree_scope_end();
    free(batch);
    return NULL;
}

static int find_res(struct cluster *c)
{
    const struct registry *r = store_registry_rdlock(c->store);

    c->r_pods = registry_find(r, "", "v1", "pods");
    c->r_nodes = registry_find(r, "", "v1", "nodes");
    c->r_svc = registry_find(r, "", "v1", "services");
    c->r_ep = registry_find(r, "", "v1", "endpoints");
    c->r_eps = registry_find(r, "discovery.k8s.io", "v1", "endpointslices");
    c->r_events = registry_find(r, "", "v1", "events");
    c->r_jobs = registry_find(r, "batch", "v1", "jobs");
    c->r_secrets = registry_find(r, "", "v1", "secrets");
    c->r_pvcs = registry_find(r, "", "v1", "persistentvolumeclaims");
    c->r_deploy = registry_find(r, "apps", "v1", "deployments");
    c->r_rs = registry_find(r, "apps", "v1", "replicasets");
    store_registry_unlock(c->store);
    return c->r_pods && c->r_nodes && c->r_svc && c->r_ep && c->r_eps && c->r_events &&
           c->r_jobs && c->r_deploy && c->r_rs ? 0 : -ENOENT;
}

/* Objects that predate the subscription (--state, or written before start) are
 * queued as ADDED; the handlers drop any that an event already superseded. */
static int replay_existing(struct cluster *c)
{
    /* Jobs before Pods: a Job's Pods find it in the table */
    const struct reg_resource *types[] = { c->r_nodes, c->r_svc, c->r_jobs, c->r_deploy, c->r_rs,
                                           c->r_pods };

    for (size_t t = 0; t < 6; t++) {
        struct store_list l = { 0 };
        struct store_list_opts lo = { 0 };
        struct store_status st = { 0 };

        if (store_list(c->store, types[t], "", &lo, &l, &st) < 0) {
            log_error("cluster: cannot list", "resource", types[t]->plural, "error", st.message, NULL);
            store_status_clear(&st);
            return -EIO;
        }
        for (size_t i = 0; i < l.n; i++)
            on_commit(c, EV_ADDED, l.items[i]);
        store_list_free(&l);
    }
    return 0;
}

int cluster_start(const struct cluster_opts *o, struct store *store, struct cluster **out)
{
    struct cluster *c;
    pthread_condattr_t ca;
    char num[24];
    int rc;

    *out = NULL;
    if (!o || o->nodes <= 0)
        return 0;
    if (!(c = calloc(1, sizeof(*c))))
        return -ENOMEM;
    c->o = *o;
    c->store = store;
    c->rng = (uint32_t)util_now_ns();
    pthread_mutex_init(&c->qlock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->qcond, &ca);
    pthread_cond_init(&c->mem.measured, &ca);
    pthread_condattr_destroy(&ca);
    if (find_res(c) < 0) {
        free(c);
        return -ENOMEM;
    }
    /* subscribe first: the nodes' own ADDED events then feed the node table */
    if ((rc = store_subscribe(store, on_commit, c)) < 0 || (rc = nodes_create(c)) < 0)
        goto fail;
    cluster__timer_add(c, HEARTBEAT_MS, T_HEARTBEAT, NULL);
    if ((rc = replay_existing(c)) < 0)
        goto fail;
    if ((rc = -pthread_create(&c->thread, NULL, cluster_main, c)) < 0)
        goto fail;
    pthread_setname_np(c->thread, "kubesim-cluster");   /* readable in profiles and /proc */
    c->started = true;
    store_memory_reporter_set(store, cluster__memory_report, c);
    *out = c;
    snprintf(num, sizeof(num), "%ld", o->nodes);
    log_info("cluster: started", "nodes", num, NULL);
    return 0;
fail:
    /* the store may already hold the subscription: c stays allocated, inert, until
     * cluster_free after store_close */
    c->stop = true;
    *out = c;
    log_error("cluster: cannot start", "error", strerror(-rc), NULL);
    return rc;
}

void cluster_stop(struct cluster *c)
{
    struct cl_node *n, *tn;

    if (!c)
        return;
    pthread_mutex_lock(&c->qlock);
    c->stop = true;
    pthread_cond_signal(&c->qcond);
    pthread_cond_broadcast(&c->mem.measured);   /* a report waiting gives what it has */
    pthread_mutex_unlock(&c->qlock);
    if (c->started)
        pthread_join(c->thread, NULL);
    /* the store may still call on_commit until it is closed: leave the queue usable
     * but drain what is there now */
    pthread_mutex_lock(&c->qlock);
    for (size_t i = 0; i < c->qlen; i++)
        store_obj_unref(c->q[i].obj);
    c->qlen = 0;
    pthread_mutex_unlock(&c->qlock);
    cluster__jobs_free(c);
    cluster__deploy_free(c);
    cluster__pods_free(c);
    cluster__node_index_free(c);
    cluster__gang_free(c);
    HASH_ITER(hh, c->nodes, n, tn) {
        HASH_DEL(c->nodes, n);
        store_obj_unref(n->obj);
        free(n->name);
        free(n);
    }
    for (size_t i = 0; i < c->nheap; i++)
        free(c->heap[i].key);
    free(c->heap);
    c->heap = NULL;
    c->nheap = 0;
}

void cluster_free(struct cluster *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->qlen; i++)
        store_obj_unref(c->q[i].obj);
    free(c->q);
    pthread_mutex_destroy(&c->qlock);
    pthread_cond_destroy(&c->qcond);
    pthread_cond_destroy(&c->mem.measured);
    free(c);
}

/*
 * pod_log.c - GET /api/v1/namespaces/NS/pods/NAME/log for every Pod, as the kubelet
 * behind the real API server answers it: container= (required when the Pod has several
 * containers; init containers may be named too), previous=, tailLines=, limitBytes=,
 * follow= (a chunked stream until the container ends or the Pod goes). What a container
 * "printed": a Ray submitter's output (submitter_run.c), a short `ray start` log for
 * Ray head/worker containers, nothing for any other container. Errors use the real
 * messages (400 for a container that is waiting to start, an unknown container, or no
 * previous run).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <microhttpd.h>

#include "kubesim/ray/internal.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"

#define FOLLOW_WAIT_MS 200

struct log_stream {
    struct ray *r;
    char uid[64], ns[64], name[254], container[254];
    bool submitter;
    bool source;                 /* from r->log_fn */
    size_t off;                  /* bytes of the submitter log already taken */
    struct buf pending;
    size_t sent;
    long limit;                  /* limitBytes left, -1 = none */
};

static const char *qarg(struct server_req *req, const char *k)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, k);
}

/* The entry named name in pod's section.lists[0], else in section.lists[1]: a container or its
 * status, whether a regular or an init one. */
static const cJSON *find_named(const cJSON *pod, const char *section, const char *const lists[2],
                               const char *name)
{
    const cJSON *it;

    for (int i = 0; i < 2; i++)
        cJSON_ArrayForEach(it, kobj_get(kobj_get(pod, section), lists[i]))
            if (kobj_str(it, "name") && !strcmp(kobj_str(it, "name"), name))
                return it;
    return NULL;
}

static const cJSON *find_status(const cJSON *pod, const char *container)
{
    static const char *const lists[] = { "containerStatuses", "initContainerStatuses" };

    return find_named(pod, "status", lists, container);
}

static const cJSON *find_container(const cJSON *pod, const char *container)
{
    static const char *const lists[] = { "containers", "initContainers" };

    return find_named(pod, "spec", lists, container);
}

/* A few lines of `ray start` for Ray node containers (the first container of a Pod
 * labelled ray.io/node-type). */
static void ray_start_log(const cJSON *pod, const char *container, struct buf *b)
{
    const cJSON *md = kobj_get(pod, "metadata"), *first;
    const char *type = kobj_str(kobj_get(md, "labels"), "ray.io/node-type");
    const char *ip = kobj_str(kobj_get(pod, "status"), "podIP");
    const char *st = kobj_str(kobj_get(pod, "status"), "startTime");
    char ts[40];

    first = kobj_get(kobj_get(pod, "spec"), "containers");
    first = cJSON_IsArray(first) ? first->child : NULL;
    if (!type || !first || !kobj_str(first, "name") || strcmp(kobj_str(first, "name"), container))
        return;
    snprintf(ts, sizeof(ts), "%.10s %.8s,000", st ? st : "1970-01-01T00:00:00Z",
             st && strlen(st) >= 19 ? st + 11 : "00:00:00");
    buf_printf(b, "%s\tINFO usage_lib.py:447 -- Usage stats collection is disabled.\n", ts);
    buf_printf(b, "%s\tINFO scripts.py:865 -- Local node IP: %s\n", ts, ip ? ip : "");
    buf_printf(b, "%s\tSUCC scripts.py:902 -- --------------------\n", ts);
    buf_printf(b, "%s\tSUCC scripts.py:903 -- Ray runtime started.\n", ts);
    buf_printf(b, "%s\tSUCC scripts.py:904 -- --------------------\n", ts);
    if (!strcmp(type, "head"))
        buf_printf(b, "%s\tINFO scripts.py:936 -- To connect to this Ray cluster:\n"
                   "import ray\nray.init()\n", ts);
}

/* Keeps the last n lines of b. */
static void tail_lines(struct buf *b, long n)
{
    size_t i;
    long seen = 0;

    if (n < 0 || !b->len)
        return;
    i = b->len;
    if (b->data[i - 1] == '\n')
        i--;
    while (i > 0) {
        if (b->data[i - 1] == '\n' && ++seen == n)
            break;
        i--;
    }
    if (n == 0)
        i = b->len;
    memmove(b->data, b->data + i, b->len - i);
    b->len -= i;
    b->data[b->len] = '\0';
}

/* Is the container still running (for follow on ordinary containers)? An init
 * container that completed is not. */
static bool still_running(struct log_stream *ls)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    bool run = false;

    if (store_get(ls->r->store, ls->r->r_pods, ls->ns, ls->name, &o, &st) == 0) {
        const cJSON *cs = find_status(store_obj_json(o), ls->container);
        run = !strcmp(o->uid, ls->uid) && kobj_get(kobj_get(cs, "state"), "running") &&
              !kobj_get(kobj_get(store_obj_json(o), "metadata"), "deletionTimestamp");
        store_obj_unref(o);
    }
    store_status_clear(&st);
    return run;
}

static ssize_t stream_read(void *arg, char *buf, size_t max)
{
    struct log_stream *ls = arg;

    for (;;) {
        if (ls->sent < ls->pending.len) {
            size_t n = ls->pending.len - ls->sent;
            if (ls->limit >= 0 && (long)n > ls->limit)
                n = (size_t)ls->limit;
            if (n > max)
                n = max;
            if (n == 0)
                return SERVER_STREAM_END;
            memcpy(buf, ls->pending.data + ls->sent, n);
            ls->sent += n;
            if (ls->limit >= 0)
                ls->limit -= (long)n;
            return (ssize_t)n;
        }
        buf_reset(&ls->pending);
        ls->sent = 0;
        if (ls->limit == 0)
            return SERVER_STREAM_END;
        if (ls->source || ls->submitter) {
            bool running = false;
            size_t before = ls->pending.len;
            int rc = ls->source ? ls->r->log_fn(ls->r->log_arg, ls->uid, ls->container, false,
                                                ls->off, &ls->pending, &running)
                                : ray__submitter_log(ls->r, ls->uid, ls->container, false, ls->off,
                                                     &ls->pending, &running);
            if (rc < 0)
                return SERVER_STREAM_END;
            ls->off += ls->pending.len - before;
            if (ls->pending.len)
                continue;
            if (!running)
                return SERVER_STREAM_END;
        } else if (!still_running(ls)) {
            return SERVER_STREAM_END;
        }
        {
            struct timespec dl;
            bool stop;
            util_deadline_ms(&dl, FOLLOW_WAIT_MS);
            pthread_mutex_lock(&ls->r->mu);
            if (!ls->r->stopping)
                pthread_cond_timedwait(&ls->r->cv, &ls->r->mu, &dl);
            stop = ls->r->stopping;
            pthread_mutex_unlock(&ls->r->mu);
            if (stop)
                return SERVER_STREAM_END;
        }
    }
}

static void stream_free(void *arg)
{
    struct log_stream *ls = arg;

    buf_free(&ls->pending);
    free(ls);
}

static int bad(struct server_req *req, const char *msg)
{
    return server_reply_status(req, 400, "BadRequest", msg);
}

static bool truthy(const char *v)
{
    return v && (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "True"));
}

static int on_log(void *arg, struct server_req *req)
{
    struct ray *r = arg;
    const struct route *rt = req->route;
    const char *container = qarg(req, "container"), *tl = qarg(req, "tailLines");
    const char *lb = qarg(req, "limitBytes");
    bool follow = truthy(qarg(req, "follow")), previous = truthy(qarg(req, "previous"));
    struct store_obj *pod = NULL;
    struct store_status st = { 0 };
    const cJSON *cts, *ct, *cs;
    struct log_stream *ls = NULL;
    struct buf names = { 0 };
    char msg[1400];
    long tail = -1, limit = -1;
    bool running = false;
    int rc, n = 0;

    if (strcmp(req->method, "GET"))
        return server_reply_status(req, 405, "MethodNotAllowed", "the server does not allow "
                                   "this method on the requested resource");
    if (tl) {
        char *end;
        tail = strtol(tl, &end, 10);
        if (end == tl || *end || tail < 0)
            return bad(req, "tailLines: Invalid value: must be greater than or equal to 0");
    }
    if (lb) {
        char *end;
        limit = strtol(lb, &end, 10);
        if (end == lb || *end || limit < 1)
            return bad(req, "limitBytes: Invalid value: must be greater than 0");
    }
    if (store_get(r->store, r->r_pods, rt->ns, rt->name, &pod, &st) < 0) {
        rc = server_reply_status(req, st.code ? st.code : 404,
                                 st.reason[0] ? st.reason : "NotFound", st.message);
        store_status_clear(&st);
        return rc;
    }
    cts = kobj_get(kobj_get(store_obj_json(pod), "spec"), "containers");
    cJSON_ArrayForEach(ct, cts) {
        const char *cn = kobj_str(ct, "name");
        buf_printf(&names, "%s%s", n++ ? " " : "", cn ? cn : "");
    }
    if (!container) {
        if (n != 1) {
            const cJSON *ic = kobj_get(kobj_get(store_obj_json(pod), "spec"), "initContainers");
            int k = 0;
            if (cJSON_GetArraySize(ic) > 0) {
                buf_puts(&names, "] or one of the init containers: [");
                cJSON_ArrayForEach(ct, ic)
                    buf_printf(&names, "%s%s", k++ ? " " : "",
                               kobj_str(ct, "name") ? kobj_str(ct, "name") : "");
            }
            snprintf(msg, sizeof(msg), "a container name must be specified for pod %s, choose "
                     "one of: [%.1000s]", pod->name, names.data ? names.data : "");
            rc = bad(req, msg);
            goto out;
        }
        container = kobj_str(cts->child, "name");
    }
    if (!(ct = find_container(store_obj_json(pod), container))) {
        snprintf(msg, sizeof(msg), "container %.200s is not valid for pod %s", container,
                 pod->name);
        rc = bad(req, msg);
        goto out;
    }
    cs = find_status(store_obj_json(pod), container);
    if (previous) {
        if (!kobj_get(kobj_get(cs, "lastState"), "terminated")) {
            snprintf(msg, sizeof(msg), "previous terminated container \"%.200s\" in pod \"%s\" "
                     "not found", container, pod->name);
            rc = bad(req, msg);
            goto out;
        }
    } else if (!cs || kobj_get(kobj_get(cs, "state"), "waiting") ||
               !kobj_get(cs, "state")) {
        const char *why = kobj_str(kobj_get(kobj_get(cs, "state"), "waiting"), "reason");
        snprintf(msg, sizeof(msg), "container \"%.200s\" in pod \"%s\" is waiting to start: %s",
                 container, pod->name, why ? why : "ContainerCreating");
        rc = bad(req, msg);
        goto out;
    }
    if (!(ls = calloc(1, sizeof(*ls)))) {
        rc = server_reply_status(req, 500, "InternalError", "out of memory");
        goto out;
    }
    ls->r = r;
    ls->limit = limit;
    snprintf(ls->uid, sizeof(ls->uid), "%s", pod->uid);
    snprintf(ls->ns, sizeof(ls->ns), "%s", pod->ns);
    snprintf(ls->name, sizeof(ls->name), "%s", pod->name);
    snprintf(ls->container, sizeof(ls->container), "%s", container);
    if (r->log_fn && r->log_fn(r->log_arg, pod->uid, container, previous, 0, &ls->pending,
                               &running) == 0) {
        ls->source = true;
        ls->off = ls->pending.len;
    } else if (ray__submitter_log(r, pod->uid, container, previous, 0, &ls->pending, &running) == 0) {
        ls->submitter = true;
        ls->off = ls->pending.len;
    } else {
        ray_start_log(store_obj_json(pod), container, &ls->pending);
    }
    tail_lines(&ls->pending, tail);
    if (follow && !previous && (ls->submitter || ls->source ? running : still_running(ls))) {
        rc = server_reply_stream(req, 200, "text/plain", stream_read, ls, stream_free);
        ls = NULL;
        goto out;
    }
    if (limit >= 0 && ls->pending.len > (size_t)limit)
        ls->pending.len = (size_t)limit;
    rc = server_reply(req, 200, "text/plain", ls->pending.data ? ls->pending.data : "",
                      ls->pending.len);
out:
    if (ls)
        stream_free(ls);
    buf_free(&names);
    store_obj_unref(pod);
    return rc;
}

void ray_set_log_source(struct ray *r, ray_log_source_fn fn, void *arg)
{
    if (r) {
        r->log_fn = fn;
        r->log_arg = arg;
    }
}

int ray__pod_log_install(struct ray *r)
{
    int rc = server_add_subresource(r->srv, "pods", "log", on_log, r);

    return rc < 0 ? rc : 0;
}

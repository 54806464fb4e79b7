/*
 * dashboard.c - the Ray dashboard's REST handlers as kubesim plays them: the Jobs
 * API (submit, list, get, stop, delete, logs), /api/version, the health paths KubeRay
 * probes, /api/cluster_status and /api/component_activities; /api/serve/ goes to
 * serve.c. A pure function of (cluster, time, request): the proxy, the submitter
 * and the fuzz target all call ray_dashboard_serve.
 *
 * Field names, messages and error shapes follow Ray's dashboard
 * (python/ray/dashboard/modules/job/: job_head.py, common.py, pydantic_models.py): a
 * duplicate submission_id answers 500 with a traceback ending in "Please use a
 * different submission_id." as the real head relays its agent's error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/ray/internal.h"

#define RAY_VERSION   "2.60.0" /* checked against real Ray: tests/integration/real_ray_contract.py */
#define JOBS_API_VERSION "4"

int ray__resp_text(struct ray_resp *out, int code, const char *text)
{
    out->code = code;
    out->ctype = "text/plain; charset=utf-8";
    out->body = strdup(text);
    out->len = out->body ? strlen(out->body) : 0;
    return out->body ? 0 : -ENOMEM;
}

int ray__resp_json(struct ray_resp *out, int code, cJSON *body)
{
    out->code = code;
    out->ctype = "application/json";
    out->body = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    out->len = out->body ? strlen(out->body) : 0;
    return out->body ? 0 : -ENOMEM;
}

/* A Python traceback as aiohttp's handlers return them (text/plain). */
static int traceback(struct ray_resp *out, int code, const char *where, const char *exc)
{
    struct buf b = { 0 };
    int rc;

    if (buf_printf(&b, "Traceback (most recent call last):\n  File \"%s\", in <module>\n%s\n",
                   where, exc) < 0)
        return -ENOMEM;
    rc = ray__resp_text(out, code, b.data);
    buf_free(&b);
    return rc;
}

/* The head relays an agent failure as RuntimeError carrying the agent's traceback. */
static int agent_error(struct ray_resp *out, int agent_code, const char *exc)
{
    char inner[1200];

    snprintf(inner, sizeof(inner), "RuntimeError: Request failed with status code %d: "
             "Traceback (most recent call last):\n  File \"job_agent.py\", in <module>\n%s\n.",
             agent_code, exc);
    return traceback(out, 500, "job_head.py", inner);
}

static int not_found(struct ray_resp *out)
{
    return ray__resp_text(out, 404, "404: Not Found");
}

static int bad_method(struct ray_resp *out)
{
    return ray__resp_text(out, 405, "405: Method Not Allowed");
}

/* ---- job rendering ---------------------------------------------------------------- */

static void add_opt_str(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static void add_dup(cJSON *o, const char *k, const cJSON *v)
{
    if (v)
        cJSON_AddItemToObject(o, k, cJSON_Duplicate(v, true));
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *job_json(const struct ray_cluster *c, const struct ray_job *j, uint64_t now)
{
    const char *st = ray__job_status(j, now);
    bool started = now >= j->start_ms && !(j->stop_ms && j->stop_ms < j->start_ms);
    bool ended = ray__status_terminal(st);
    cJSON *o = cJSON_CreateObject(), *di;
    char addr[64];
    struct buf msg = { 0 };

    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "type", "SUBMISSION");
    add_opt_str(o, "job_id", started ? j->job_id : NULL);
    cJSON_AddStringToObject(o, "submission_id", j->id);
    if (started) {
        di = cJSON_AddObjectToObject(o, "driver_info");
        cJSON_AddStringToObject(di, "id", j->job_id);
        cJSON_AddStringToObject(di, "node_ip_address", c->head_ip);
        snprintf(addr, sizeof(addr), "%u", 4000 + j->seq);
        cJSON_AddStringToObject(di, "pid", addr);
    } else {
        cJSON_AddNullToObject(o, "driver_info");
    }
    cJSON_AddStringToObject(o, "status", st);
    cJSON_AddStringToObject(o, "entrypoint", j->entrypoint);
    if (!strcmp(st, "PENDING")) {
        buf_puts(&msg, "Job has not started yet.");
        if (j->num_cpus > 0 || j->num_gpus > 0 || j->memory > 0 ||
            (j->resources && j->resources->child))
            buf_puts(&msg, " It may be waiting for resources (CPUs, GPUs, memory, custom "
                     "resources) to become available.");
        if (j->runtime_env && j->runtime_env->child)
            buf_puts(&msg, " It may be waiting for the runtime environment to be set up.");
    } else if (!strcmp(st, "RUNNING")) {
        buf_puts(&msg, "Job is currently running.");
    } else if (!strcmp(st, "STOPPED")) {
        buf_puts(&msg, "Job was intentionally stopped.");
    } else if (!strcmp(st, "SUCCEEDED")) {
        buf_puts(&msg, "Job finished successfully.");
    } else {
        struct buf logs = { 0 };
        size_t off;
        ray__job_logs(c, j, now, &logs);
        off = logs.len > 20000 ? logs.len - 20000 : 0;
        buf_printf(&msg, "Job entrypoint command failed with exit code %d, last available "
                   "logs (truncated to 20,000 chars):\n%s", j->exit_code,
                   logs.data ? logs.data + off : "");
        buf_free(&logs);
    }
    cJSON_AddStringToObject(o, "message", msg.data ? msg.data : "");
    buf_free(&msg);
    add_opt_str(o, "error_type", !strcmp(st, "FAILED") ? "JOB_ENTRYPOINT_COMMAND_ERROR" : NULL);
    cJSON_AddNumberToObject(o, "start_time", (double)j->submit_ms);
    if (ended) {
        uint64_t end = j->stop_ms && j->stop_ms < j->end_ms ? j->stop_ms : j->end_ms;
        cJSON_AddNumberToObject(o, "end_time", (double)end);
    } else {
        cJSON_AddNullToObject(o, "end_time");
    }
    add_dup(o, "metadata", j->metadata);
    add_dup(o, "runtime_env", j->runtime_env);
    if (started) {
        snprintf(addr, sizeof(addr), "http://%s:52365", c->head_ip);
        cJSON_AddStringToObject(o, "driver_agent_http_address", addr);
        cJSON_AddStringToObject(o, "driver_node_id", c->node_id);
    } else {
        cJSON_AddNullToObject(o, "driver_agent_http_address");
        cJSON_AddNullToObject(o, "driver_node_id");
    }
    if (!strcmp(st, "SUCCEEDED") || !strcmp(st, "FAILED"))
        cJSON_AddNumberToObject(o, "driver_exit_code", j->exit_code);
    else
        cJSON_AddNullToObject(o, "driver_exit_code");
    return o;
}

/* ---- submit --------------------------------------------------------------------------- */

static bool num_field(const cJSON *req, const char *k, double *v, bool *has, char *err,
                      size_t errlen, bool integer)
{
    const cJSON *x = kobj_get(req, k);

    if (!x || cJSON_IsNull(x))
        return true;
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||
        (integer && x->valuedouble != floor(x->valuedouble))) {
        snprintf(err, errlen, "TypeError: %s must be %s, got <class '%s'>", k,
                 integer ? "an integer" : "a number", cJSON_IsString(x) ? "str" : "dict");
        return false;
    }
    *v = x->valuedouble;
    *has = true;
    return true;
}

static bool str_map(const cJSON *req, const char *k, bool values_str, bool values_num,
                    char *err, size_t errlen)
{
    const cJSON *x = kobj_get(req, k), *e;

    if (!x || cJSON_IsNull(x))
        return true;
    if (!cJSON_IsObject(x)) {
        snprintf(err, errlen, "TypeError: %s must be a dict, got <class '%s'>", k,
                 cJSON_IsString(x) ? "str" : cJSON_IsArray(x) ? "list" : "int");
        return false;
    }
    cJSON_ArrayForEach(e, x) {
        if ((values_str && !cJSON_IsString(e)) || (values_num && !cJSON_IsNumber(e))) {
            snprintf(err, errlen, "TypeError: %s values must be %s, got <class '%s'>", k,
                     values_str ? "strings" : "numbers", cJSON_IsString(e) ? "str" : "dict");
            return false;
        }
    }
    return true;
}

static double knob_num(const struct ray_job *j, const char *key, double def, double max)
{
    return ray__knob_seconds(ray__knob(j->runtime_env, j->metadata, key), def, max);
}

static void random_id(char *out, size_t n)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNPQRSTUVWXYZ123456789";
    static unsigned seed;
    unsigned s = __atomic_add_fetch(&seed, 0x9e3779b9u, __ATOMIC_RELAXED) ^ (unsigned)ray__now_ms();

    for (size_t i = 0; i + 1 < n; i++) {
        s = s * 1103515245u + 12345u;
        out[i] = al[(s >> 16) % (sizeof(al) - 1)];
    }
    out[n - 1] = '\0';
}

static int jobs_submit(struct ray_cluster *c, uint64_t now, const char *body, size_t len,
                       struct ray_resp *out)
{
    cJSON *req = cJSON_ParseWithLength(body ? body : "", len), *resp;
    const char *sid, *entry;
    char err[512] = "", gen[32];
    struct ray_job *j = NULL, *old = NULL;
    double mem = 0;

    if (!cJSON_IsObject(req)) {
        cJSON_Delete(req);
        return traceback(out, 400, "job_head.py", "json.decoder.JSONDecodeError: Expecting "
                         "value: the request body is not a JSON object");
    }
    entry = kobj_str(req, "entrypoint");
    sid = kobj_str(req, "submission_id");
    if (!sid || !*sid)
        sid = kobj_str(req, "job_id");
    if (!kobj_get(req, "entrypoint"))
        snprintf(err, sizeof(err), "TypeError: JobSubmitRequest.__init__() missing 1 required "
                 "positional argument: 'entrypoint'");
    else if (!entry)
        snprintf(err, sizeof(err), "TypeError: entrypoint must be a string, got <class 'int'>");
    else if (kobj_get(req, "submission_id") && !cJSON_IsNull(kobj_get(req, "submission_id")) &&
             !cJSON_IsString(kobj_get(req, "submission_id")))
        snprintf(err, sizeof(err), "TypeError: submission_id must be a string if provided, "
                 "got <class 'int'>");
    if (err[0])
        goto bad;
    if (!(j = calloc(1, sizeof(*j))))
        goto nomem;
    if (!str_map(req, "runtime_env", false, false, err, sizeof(err)) ||
        !str_map(req, "metadata", true, false, err, sizeof(err)) ||
        !str_map(req, "entrypoint_resources", false, true, err, sizeof(err)) ||
        !num_field(req, "entrypoint_num_cpus", &j->num_cpus, &j->has_cpus, err, sizeof(err),
                   false) ||
        !num_field(req, "entrypoint_num_gpus", &j->num_gpus, &j->has_gpus, err, sizeof(err),
                   false) ||
        !num_field(req, "entrypoint_memory", &mem, &j->has_memory, err, sizeof(err), true))
        goto bad;
    j->memory = (long long)mem;
    if (!sid || !*sid) {
        memcpy(gen, "raysubmit_", 10);
        random_id(gen + 10, 17);
        sid = gen;
    }
    HASH_FIND_STR(c->jobs, sid, old);
    if (old) {
        char exc[512];
        snprintf(exc, sizeof(exc), "ValueError: Job with submission_id %.300s already exists. "
                 "Please use a different submission_id.", sid);
        cJSON_Delete(req);
        ray__job_free(j);
        return agent_error(out, 400, exc);
    }
    if (HASH_COUNT(c->jobs) >= RAY_MAX_JOBS) {
        cJSON_Delete(req);
        ray__job_free(j);
        return agent_error(out, 500, "RuntimeError: kubesim: too many jobs on this cluster");
    }
    if (!(j->id = strdup(sid)) || !(j->entrypoint = strdup(entry)))
        goto nomem;
#define TAKE(field, key) do { cJSON *x_ = cJSON_DetachItemFromObjectCaseSensitive(req, key); \
        if (x_ && cJSON_IsNull(x_)) { cJSON_Delete(x_); x_ = NULL; } j->field = x_; } while (0)
    TAKE(runtime_env, "runtime_env");
    TAKE(metadata, "metadata");
    TAKE(resources, "entrypoint_resources");
#undef TAKE
    j->seq = ++c->job_seq;
    j->submit_ms = now;
    j->start_ms = now + (uint64_t)(knob_num(j, "KUBESIM_JOB_PENDING_SECONDS",
                                            RAY_JOB_PENDING_MS / 1000.0, 3600) * 1000);
    j->end_ms = j->start_ms + (uint64_t)(knob_num(j, "KUBESIM_JOB_SECONDS",
                                                  RAY_JOB_RUN_MS / 1000.0, 86400) * 1000);
    j->exit_code = (int)knob_num(j, "KUBESIM_JOB_EXIT", 0, 255);
    snprintf(j->job_id, sizeof(j->job_id), "%02x000000", (++c->driver_seq) & 0xff);
    HASH_ADD_KEYPTR(hh, c->jobs, j->id, strlen(j->id), j);
    cJSON_Delete(req);
    resp = cJSON_CreateObject();
    if (!resp)
        return -ENOMEM;
    cJSON_AddStringToObject(resp, "job_id", j->id);
    cJSON_AddStringToObject(resp, "submission_id", j->id);
    return ray__resp_json(out, 200, resp);
bad:
    cJSON_Delete(req);
    ray__job_free(j);
    return traceback(out, 400, "job_head.py", err);
nomem:
    cJSON_Delete(req);
    ray__job_free(j);
    return -ENOMEM;
}

static int jobs_list(struct ray_cluster *c, uint64_t now, struct ray_resp *out)
{
    cJSON *arr = cJSON_CreateArray();
    unsigned n = HASH_COUNT(c->jobs), k = 0;
    struct ray_job **v, *j, *jt;

    if (!arr)
        return -ENOMEM;
    v = calloc(n ? n : 1, sizeof(*v));
    if (!v) {
        cJSON_Delete(arr);
        return -ENOMEM;
    }
    HASH_ITER(hh, c->jobs, j, jt)
        v[k++] = j;
    /* submission order (insertion sort: lists are small, and this keeps it stable) */
    for (unsigned a = 1; a < k; a++)
        for (unsigned b = a; b > 0 && v[b - 1]->seq > v[b]->seq; b--) {
            struct ray_job *t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    for (unsigned i = 0; i < k; i++)
        cJSON_AddItemToArray(arr, job_json(c, v[i], now));
    free(v);
    return ray__resp_json(out, 200, arr);
}

static int job_missing(struct ray_resp *out, const char *id)
{
    char msg[400];

    snprintf(msg, sizeof(msg), "Job %.300s does not exist", id);
    return ray__resp_text(out, 404, msg);
}

/* /api/jobs/ID[/op] */
static int jobs_one(struct ray_cluster *c, uint64_t now, const char *method, const char *rest,
                    struct ray_resp *out)
{
    char id[256];
    const char *slash = strchr(rest, '/'), *op = slash ? slash + 1 : "";
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    struct ray_job *j = NULL;

    if (n == 0 || n >= sizeof(id))
        return not_found(out);
    memcpy(id, rest, n);
    id[n] = '\0';
    HASH_FIND_STR(c->jobs, id, j);
    if (!*op) {
        if (!strcmp(method, "GET")) {
            cJSON *o;
            if (!j)
                return job_missing(out, id);
            if (!(o = job_json(c, j, now)))
                return -ENOMEM;
            return ray__resp_json(out, 200, o);
        }
        if (!strcmp(method, "DELETE")) {
            const char *st;
            cJSON *o;
            if (!j)
                return job_missing(out, id);
            st = ray__job_status(j, now);
            if (!ray__status_terminal(st)) {
                char exc[512];
                snprintf(exc, sizeof(exc), "RuntimeError: Attempted to delete job "
                         "'%.300s', but it is in a non-terminal state %s.", id, st);
                return agent_error(out, 500, exc);
            }
            HASH_DEL(c->jobs, j);
            ray__job_free(j);
            if (!(o = cJSON_CreateObject()))
                return -ENOMEM;
            cJSON_AddBoolToObject(o, "deleted", true);
            return ray__resp_json(out, 200, o);
        }
        return bad_method(out);
    }
    if (!strcmp(op, "stop")) {
        cJSON *o;
        bool stopped = false;
        if (strcmp(method, "POST"))
            return bad_method(out);
        if (!j)
            return job_missing(out, id);
        if (!ray__status_terminal(ray__job_status(j, now))) {
            j->stop_ms = now;
            stopped = true;
        }
        if (!(o = cJSON_CreateObject()))
            return -ENOMEM;
        cJSON_AddBoolToObject(o, "stopped", stopped);
        return ray__resp_json(out, 200, o);
    }
    if (!strcmp(op, "logs")) {
        struct buf b = { 0 };
        cJSON *o;
        if (strcmp(method, "GET"))
            return bad_method(out);
        if (!j)
            return job_missing(out, id);
        if (ray__job_logs(c, j, now, &b) < 0 || !(o = cJSON_CreateObject())) {
            buf_free(&b);
            return -ENOMEM;
        }
        cJSON_AddStringToObject(o, "logs", b.data ? b.data : "");
        buf_free(&b);
        return ray__resp_json(out, 200, o);
    }
    if (!strcmp(op, "logs/tail")) {
        if (!j)
            return job_missing(out, id);
        return ray__resp_text(out, 400, "No WebSocket UPGRADE hdr: None\n Can \"Upgrade\" only "
                              "to \"WebSocket\".");
    }
    return not_found(out);
}

/* ---- misc endpoints ------------------------------------------------------------------- */

static int version(struct ray_cluster *c, struct ray_resp *out)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return -ENOMEM;
    cJSON_AddStringToObject(o, "version", JOBS_API_VERSION);
    cJSON_AddStringToObject(o, "ray_version", RAY_VERSION);
    cJSON_AddStringToObject(o, "ray_commit", "kubesim");
    cJSON_AddStringToObject(o, "session_name", c->session);
    return ray__resp_json(out, 200, o);
}

static int cluster_status(struct ray_cluster *c, struct ray_resp *out)
{
    cJSON *o = cJSON_CreateObject(), *d, *cs, *lr, *usage, *u;
    char text[1024];

    if (!o)
        return -ENOMEM;
    cJSON_AddBoolToObject(o, "result", true);
    cJSON_AddStringToObject(o, "msg", "Got cluster status.");
    d = cJSON_AddObjectToObject(o, "data");
    cJSON_AddNullToObject(d, "autoscalingError");
    cs = cJSON_AddObjectToObject(d, "clusterStatus");
    lr = cJSON_AddObjectToObject(cs, "loadMetricsReport");
    usage = cJSON_AddObjectToObject(lr, "usage");
    u = cJSON_AddArrayToObject(usage, "CPU");
    cJSON_AddItemToArray(u, cJSON_CreateNumber(0));
    cJSON_AddItemToArray(u, cJSON_CreateNumber(c->cpus));
    cJSON_AddNumberToObject(cs, "aliveNodes", 1 + c->workers);
    snprintf(text, sizeof(text), "======== Cluster status ========\nNode status\n"
             "---------------------------------------------------------------\nActive:\n"
             " 1 headgroup\n %d workers\nPending:\n (no pending nodes)\nRecent failures:\n"
             " (no failures)\n\nResources\n"
             "---------------------------------------------------------------\nUsage:\n"
             " 0.0/%.1f CPU\n", c->workers, c->cpus);
    cJSON_AddStringToObject(d, "autoscalingStatus", text);
    return ray__resp_json(out, 200, o);
}

static int component_activities(struct ray_cluster *c, uint64_t now, struct ray_resp *out)
{
    cJSON *o = cJSON_CreateObject(), *drv;
    struct ray_job *j, *jt;
    uint64_t last = 0;
    bool active = false;

    if (!o)
        return -ENOMEM;
    HASH_ITER(hh, c->jobs, j, jt) {
        const char *st = ray__job_status(j, now);
        uint64_t t = ray__status_terminal(st) ? (j->stop_ms && j->stop_ms < j->end_ms ?
                                                 j->stop_ms : j->end_ms) : now;
        if (!ray__status_terminal(st))
            active = true;
        if (t > last)
            last = t;
    }
    drv = cJSON_AddObjectToObject(o, "driver");
    cJSON_AddStringToObject(drv, "is_active", active ? "ACTIVE" : "INACTIVE");
    cJSON_AddStringToObject(drv, "reason", active ? "Number of active drivers: 1" : "");
    cJSON_AddNumberToObject(drv, "timestamp", (double)now / 1000.0);
    if (last)
        cJSON_AddNumberToObject(drv, "last_activity_at", (double)last / 1000.0);
    else
        cJSON_AddNullToObject(drv, "last_activity_at");
    return ray__resp_json(out, 200, o);
}

int ray_dashboard_serve(struct ray_cluster *c, uint64_t now, const char *method,
                        const char *path, const char *body, size_t len, struct ray_resp *out)
{
    memset(out, 0, sizeof(*out));
    if (len > RAY_MAX_BODY)
        return ray__resp_text(out, 413, "Maximum request body size 1048576 exceeded");
    if (!path || !*path)
        path = "/";
    if (!strcmp(path, "/api/version"))
        return strcmp(method, "GET") ? bad_method(out) : version(c, out);
    if (!strcmp(path, "/api/gcs_healthz") || !strcmp(path, "/api/local_raylet_healthz") ||
        !strcmp(path, "/api/healthz"))
        return strcmp(method, "GET") ? bad_method(out) : ray__resp_text(out, 200, "success");
    if (!strcmp(path, "/api/cluster_status"))
        return strcmp(method, "GET") ? bad_method(out) : cluster_status(c, out);
    if (!strcmp(path, "/api/component_activities"))
        return strcmp(method, "GET") ? bad_method(out) : component_activities(c, now, out);
    if (!strcmp(path, "/api/jobs/") || !strcmp(path, "/api/jobs")) {
        if (!strcmp(method, "GET"))
            return jobs_list(c, now, out);
        if (!strcmp(method, "POST"))
            return jobs_submit(c, now, body, len, out);
        return bad_method(out);
    }
    if (!strncmp(path, "/api/jobs/", 10))
        return jobs_one(c, now, method, path + 10, out);
    if (!strncmp(path, "/api/serve/", 11))
        return ray__serve_handle(c, now, method, path, body, len, out);
    if (!strcmp(path, "/") && !strcmp(method, "GET")) {
        int rc = ray__resp_text(out, 200, "<!doctype html><html lang=\"en\"><head><title>Ray "
                                "Dashboard</title></head><body><div id=\"root\"></div></body>"
                                "</html>");
        out->ctype = "text/html";
        return rc;
    }
    return not_found(out);
}

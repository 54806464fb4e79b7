/*
 * runtime.c - the simulated Ray runtime's state: one ray_cluster per Ready head
 * Pod (keyed by the Pod's uid), its submitted jobs and Serve applications, and the
 * lifecycle glue (install, store subscription, teardown).
 *
 * A job's status is a function of time: PENDING from submission until start_ms,
 * RUNNING until end_ms, then SUCCEEDED or FAILED by its exit code; STOPPED from a
 * stop request that came before end_ms. Nothing ticks: every reader computes the
 * state for "now", so a job costs nothing while nobody looks at it.
 */
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/ray/internal.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"

uint64_t ray__now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool ray__status_terminal(const char *s)
{
    return !strcmp(s, "SUCCEEDED") || !strcmp(s, "FAILED") || !strcmp(s, "STOPPED");
}

const char *ray__job_status(const struct ray_job *j, uint64_t now)
{
    if (j->stop_ms && j->stop_ms < j->end_ms && now >= j->stop_ms)
        return "STOPPED";
    if (now < j->start_ms)
        return "PENDING";
    if (now < j->end_ms)
        return "RUNNING";
    return j->exit_code == 0 ? "SUCCEEDED" : "FAILED";
}

const char *ray__knob(const cJSON *runtime_env, const cJSON *metadata, const char *key)
{
    const char *v = kobj_str(kobj_get(runtime_env, "env_vars"), key);

    return v ? v : kobj_str(metadata, key);
}

double ray__knob_seconds(const char *v, double def, double max)
{
    char *end;
    double d;

    if (!v)
        return def;
    d = strtod(v, &end);
    if (end == v || *end || !isfinite(d) || d < 0)
        return def;
    return d > max ? max : d;
}

void ray__job_free(struct ray_job *j)
{
    if (!j)
        return;
    free(j->id);
    free(j->entrypoint);
    cJSON_Delete(j->runtime_env);
    cJSON_Delete(j->metadata);
    cJSON_Delete(j->resources);
    free(j);
}

void ray__app_free(struct ray_app *a)
{
    if (!a)
        return;
    free(a->name);
    cJSON_Delete(a->config);
    free(a);
}

/* ---- driver logs ------------------------------------------------------------------ */

/* "2026-12-02 15:32:26,001", the Python logging default the Ray driver uses. */
static void log_ts(uint64_t ms, char out[64])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    snprintf(out, 64, "%04d-%02d-%02d %02d:%02d:%02d,%03u", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
}

int ray__job_logs(const struct ray_cluster *c, const struct ray_job *j, uint64_t now,
                  struct buf *out)
{
    uint64_t until = now, run_ms;
    char ts[64];
    unsigned steps, done;
    int rc = 0;

    if (now < j->start_ms)
        return 0;
    if (j->stop_ms && j->stop_ms < until)
        until = j->stop_ms;
    if (until > j->end_ms)
        until = j->end_ms;
    log_ts(j->start_ms, ts);
    rc |= buf_printf(out, "%s\tINFO worker.py:1692 -- Using address %s:6379 set in the "
                     "environment variable RAY_ADDRESS\n", ts, c->head_ip);
    rc |= buf_printf(out, "%s\tINFO worker.py:1833 -- Connecting to existing Ray cluster at "
                     "address: %s:6379...\n", ts, c->head_ip);
    rc |= buf_printf(out, "%s\tINFO worker.py:2004 -- Connected to Ray cluster. View the "
                     "dashboard at http://%s:8265 \n", ts, c->head_ip);
    rc |= buf_printf(out, "kubesim: running entrypoint for job %s: %s\n", j->id, j->entrypoint);
    run_ms = j->end_ms - j->start_ms;
    steps = (unsigned)(run_ms / 1000);
    if (steps == 0)
        steps = 1;
    done = (unsigned)((until - j->start_ms) * steps / (run_ms ? run_ms : 1));
    for (unsigned i = 1; i <= done && i <= steps && rc == 0; i++)
        rc |= buf_printf(out, "kubesim: step %u/%u\n", i, steps);
    if (until >= j->end_ms && !(j->stop_ms && j->stop_ms < j->end_ms)) {
        if (j->exit_code == 0) {
            rc |= buf_printf(out, "kubesim: entrypoint finished\n");
        } else {
            rc |= buf_printf(out, "Traceback (most recent call last):\n  File \"<kubesim>\", "
                             "line 1, in <module>\nRuntimeError: kubesim: entrypoint exits with "
                             "code %d (KUBESIM_JOB_EXIT)\n", j->exit_code);
        }
    }
    return rc ? -ENOMEM : 0;
}

/* ---- clusters ----------------------------------------------------------------------- */

static void hexid(const char *seed, unsigned salt, char *out, size_t n)
{
    uint32_t h = 2166136261u ^ salt;

    for (const char *s = seed; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    for (size_t i = 0; i + 1 < n; i++) {
        h = h * 1103515245u + 12345u;
        out[i] = "0123456789abcdef"[(h >> 16) & 15];
    }
    out[n - 1] = '\0';
}

struct ray_cluster *ray_cluster_new(const char *ns, const char *name, const char *head_ip)
{
    struct ray_cluster *c = calloc(1, sizeof(*c));
    time_t now = time(NULL);
    struct tm tm;

    if (!c || !(c->uid = strdup(""))) {
        free(c);
        return NULL;
    }
    snprintf(c->ns, sizeof(c->ns), "%s", ns ? ns : "");
    snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
    snprintf(c->head, sizeof(c->head), "%s", name ? name : "");
    snprintf(c->head_ip, sizeof(c->head_ip), "%s", head_ip ? head_ip : "");
    c->created_ms = ray__now_ms();
    hexid(c->name, (unsigned)c->created_ms, c->node_id, sizeof(c->node_id));
    gmtime_r(&now, &tm);
    snprintf(c->session, sizeof(c->session), "session_%04d-%02d-%02d_%02d-%02d-%02d_000000_1",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    c->cpus = 1;
    return c;
}

void ray_cluster_free(struct ray_cluster *c)
{
    struct ray_job *j, *jt;
    struct ray_app *a, *at;

    if (!c)
        return;
    HASH_ITER(hh, c->jobs, j, jt) {
        HASH_DEL(c->jobs, j);
        ray__job_free(j);
    }
    HASH_ITER(hh, c->apps, a, at) {
        HASH_DEL(c->apps, a);
        ray__app_free(a);
    }
    free(c->uid);
    if (c->auth_token) {
        explicit_bzero(c->auth_token, strlen(c->auth_token));
        free(c->auth_token);
    }
    free(c);
}

static int head_restarts(const cJSON *pod)
{
    const cJSON *cs = kobj_get(kobj_get(pod, "status"), "containerStatuses");
    const cJSON *n = kobj_get(cJSON_IsArray(cs) ? cs->child : NULL, "restartCount");

    return cJSON_IsNumber(n) ? n->valueint : 0;
}

static void ray__cluster_drop(struct ray *r, const char *uid)
{
    struct ray_cluster *c = NULL;

    HASH_FIND_STR(r->clusters, uid, c);
    if (!c)
        return;
    log_info("ray: cluster gone with its head pod", "namespace", c->ns, "cluster", c->name,
             "pod", c->head, NULL);
    HASH_DEL(r->clusters, c);
    ray_cluster_free(c);
}

struct ray_cluster *ray__cluster_for_head(struct ray *r, const cJSON *pod, char **token)
{
    const cJSON *md = kobj_get(pod, "metadata");
    const char *uid = kobj_str(md, "uid"), *name = kobj_str(md, "name");
    const char *ns = kobj_str(md, "namespace"), *ip = kobj_str(kobj_get(pod, "status"), "podIP");
    const char *cname = kobj_str(kobj_get(md, "labels"), "ray.io/cluster");
    struct ray_cluster *c = NULL, *o, *ot;
    int restarts = head_restarts(pod);

    if (!uid || !name || !ns)
        return NULL;
    HASH_FIND_STR(r->clusters, uid, c);
    if (c && c->restarts != restarts) {
        /* the head container restarted: a new Ray cluster without the old one's state */
        ray__cluster_drop(r, uid);
        c = NULL;
    }
    if (c && c->auth_token && !*c->auth_token && *token && **token) {
        /* the token Secret appeared after the cluster came up (a real head would not
         * have started without it) */
        free(c->auth_token);
        c->auth_token = *token;
        *token = NULL;
    }
    if (c)
        return c;
    HASH_ITER(hh, r->clusters, o, ot)
        if (!strcmp(o->ns, ns) && !strcmp(o->head, name))
            ray__cluster_drop(r, o->uid);
    if (!(c = ray_cluster_new(ns, cname ? cname : name, ip)))
        return NULL;
    free(c->uid);
    if (!(c->uid = strdup(uid))) {
        c->uid = NULL;
        ray_cluster_free(c);
        return NULL;
    }
    snprintf(c->head, sizeof(c->head), "%s", name);
    c->restarts = restarts;
    c->auth_token = *token;
    *token = NULL;
    HASH_ADD_KEYPTR(hh, r->clusters, c->uid, strlen(c->uid), c);
    log_info("ray: cluster up", "namespace", c->ns, "cluster", c->name, "pod", c->head,
             "ip", c->head_ip, NULL);
    return c;
}

/* ---- install / teardown ------------------------------------------------------------- */

static void on_commit(void *arg, enum store_event_type type, struct store_obj *o)
{
    struct ray *r = arg;

    if (type != EV_DELETED || o->res != r->r_pods || !o->uid)
        return;
    pthread_mutex_lock(&r->mu);
    if (!r->stopping) {
        ray__cluster_drop(r, o->uid);
        ray__submitter_gone(r, o->uid);
    }
    pthread_mutex_unlock(&r->mu);
}

int ray_install(struct server *srv, struct store *store, struct ray **out)
{
    struct ray *r = calloc(1, sizeof(*r));
    const struct registry *reg;
    int rc;

    *out = NULL;
    if (!r)
        return -ENOMEM;
    r->srv = srv;
    r->store = store;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    reg = store_registry_rdlock(store);
    r->r_pods = registry_find(reg, "", "v1", "pods");
    r->r_svc = registry_find(reg, "", "v1", "services");
    r->r_ep = registry_find(reg, "", "v1", "endpoints");
    r->r_secrets = registry_find(reg, "", "v1", "secrets");
    const char *dd = getenv("KUBESIM_RAY_DASHBOARD_DELAY_MS");
    r->dash_delay_ms = dd ? strtol(dd, NULL, 10) : 0;
    if (r->dash_delay_ms < 0 || r->dash_delay_ms > 60000)
        r->dash_delay_ms = 0;
    store_registry_unlock(store);
    if (!r->r_pods || !r->r_svc || !r->r_ep) {
        rc = -ENOENT;
        goto fail;
    }
    if ((rc = ray__proxy_install(r)) < 0 || (rc = ray__pod_log_install(r)) < 0 ||
        (rc = ray__admin_install(r)) < 0 || (rc = ray__gateway_install(r)) < 0)
        goto fail;
    if ((rc = store_subscribe(store, on_commit, r)) < 0)
        goto fail;
    *out = r;
    return 0;
fail:
    /* handlers may already be registered: keep r alive (inert) for the server's sake */
    r->stopping = true;
    *out = r;
    return rc;
}

void ray_stop(struct ray *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_broadcast(&r->cv);
    while (r->threads > 0)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

void ray_free(struct ray *r)
{
    struct ray_cluster *c, *ct;

    if (!r)
        return;
    ray_stop(r);
    HASH_ITER(hh, r->clusters, c, ct) {
        HASH_DEL(r->clusters, c);
        ray_cluster_free(c);
    }
    ray__subs_free(r);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

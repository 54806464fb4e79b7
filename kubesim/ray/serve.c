/*
 * serve.c - the Serve REST API of the simulated dashboard (/api/serve/applications/):
 * PUT a declarative multi-application config (ServeDeploySchema), GET the instance
 * details (ServeInstanceDetails with per-application and per-deployment status), DELETE
 * all applications. Field names follow Ray's python/ray/serve/schema.py, which is what
 * KubeRay's dashboard client decodes (utils/types/serve_api_models.go).
 *
 * An application is DEPLOYING for deploy_ms after it was (re)deployed, then RUNNING, or
 * the status its config asks for through KUBESIM_SERVE_STATUS (UNHEALTHY or
 * DEPLOY_FAILED) in runtime_env.env_vars or a deployment's user_config; the admin
 * route /kubesim/ray/... forces a status on a running one. A PUT whose application
 * config is unchanged keeps that application's state, as Serve does. A config's
 * target_capacity (0..100, what KubeRay's incremental upgrade steps) is reported back by
 * GET and scales each deployment's target_num_replicas (rounded up), as Serve scales them.
 * A PUT that changes nothing at all is counted apart (serve_puts_same): a controller that
 * re-sends what runs is doing work Ray did not need, and a test can see it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kubesim/ray/internal.h"

static const char *app_target(const cJSON *cfg)
{
    const char *v = kobj_str(kobj_get(kobj_get(cfg, "runtime_env"), "env_vars"),
                             "KUBESIM_SERVE_STATUS");
    const cJSON *d;

    cJSON_ArrayForEach(d, kobj_get(cfg, "deployments"))
        if (!v)
            v = kobj_str(kobj_get(d, "user_config"), "KUBESIM_SERVE_STATUS");
    if (v && (!strcmp(v, "UNHEALTHY") || !strcmp(v, "DEPLOY_FAILED")))
        return v;
    return "RUNNING";
}

static uint64_t app_deploy_ms(const cJSON *cfg)
{
    const char *v = kobj_str(kobj_get(kobj_get(cfg, "runtime_env"), "env_vars"),
                             "KUBESIM_SERVE_DEPLOY_SECONDS");

    return (uint64_t)(ray__knob_seconds(v, RAY_APP_DEPLOY_MS / 1000.0, 3600) * 1000);
}

const char *ray__app_status(const struct ray_app *a, uint64_t now)
{
    if (now < a->deployed_ms + a->deploy_ms)
        return "DEPLOYING";
    if (a->forced[0])
        return a->forced;
    return a->target;
}

int ray__serve_force(struct ray_cluster *c, const char *app, const char *status,
                     const char *message)
{
    struct ray_app *a = NULL;

    HASH_FIND_STR(c->apps, app, a);
    if (!a)
        return -ENOENT;
    if (status[0] && strcmp(status, "RUNNING") && strcmp(status, "UNHEALTHY") &&
        strcmp(status, "DEPLOY_FAILED"))
        return -EINVAL;
    snprintf(a->forced, sizeof(a->forced), "%s", status);
    snprintf(a->forced_msg, sizeof(a->forced_msg), "%s", message ? message : "");
    return 0;
}

/* ---- GET: ServeInstanceDetails --------------------------------------------------------- */

static void actor_info(cJSON *o, const struct ray_cluster *c, const char *actor, unsigned salt)
{
    char id[40], path[96];

    cJSON_AddStringToObject(o, "node_id", c->node_id);
    cJSON_AddStringToObject(o, "node_ip", c->head_ip);
    cJSON_AddStringToObject(o, "node_instance_id", "");
    snprintf(id, sizeof(id), "%.24s%08x", c->node_id + 8, salt);
    cJSON_AddStringToObject(o, "actor_id", id);
    cJSON_AddStringToObject(o, "actor_name", actor);
    snprintf(id, sizeof(id), "%.28s%08x", c->node_id + 4, salt * 7u);
    cJSON_AddStringToObject(o, "worker_id", id);
    snprintf(path, sizeof(path), "/serve/%s_%u.log", salt ? "replica" : "controller", 1000 + salt);
    cJSON_AddStringToObject(o, "log_file_path", path);
}

static void deployment_name(const cJSON *cfg, char *out, size_t n)
{
    const char *ip = kobj_str(cfg, "import_path"), *sep;

    sep = ip ? strrchr(ip, ':') : NULL;
    if (!sep && ip)
        sep = strrchr(ip, '.');
    snprintf(out, n, "%s", sep && sep[1] ? sep + 1 : "Deployment");
}

static cJSON *deployment_json(const struct ray_cluster *c, const struct ray_app *a,
                              const char *app_st, const char *name, const cJSON *dcfg,
                              uint64_t now, unsigned salt)
{
    cJSON *d = cJSON_CreateObject(), *conf, *reps, *rep;
    const char *st = "HEALTHY", *trig = "CONFIG_UPDATE_COMPLETED", *msg = "";
    const cJSON *nr = kobj_get(dcfg, "num_replicas");
    int n = cJSON_IsNumber(nr) && nr->valueint >= 0 && nr->valueint <= 64 ? nr->valueint : 1;
    char rid[32], aname[300];

    if (c->has_target_capacity)
        n = (n * c->target_capacity + 99) / 100;

    if (!strcmp(app_st, "DEPLOYING")) {
        st = "UPDATING";
        trig = "CONFIG_UPDATE_STARTED";
    } else if (!strcmp(app_st, "UNHEALTHY")) {
        st = "UNHEALTHY";
        trig = "HEALTH_CHECK_FAILED";
        msg = a->forced_msg[0] ? a->forced_msg : "A replica's health check failed.";
    } else if (!strcmp(app_st, "DEPLOY_FAILED")) {
        st = "DEPLOY_FAILED";
        trig = "REPLICA_STARTUP_FAILED";
        msg = "The deployment failed to start 3 times in a row. This may be due to a problem "
              "with its constructor or initial health check failing.";
    }
    cJSON_AddStringToObject(d, "name", name);
    cJSON_AddStringToObject(d, "status", st);
    cJSON_AddStringToObject(d, "status_trigger", trig);
    cJSON_AddStringToObject(d, "message", msg);
    conf = dcfg ? cJSON_Duplicate(dcfg, true) : cJSON_CreateObject();
    if (conf && !kobj_get(conf, "name"))
        cJSON_AddStringToObject(conf, "name", name);
    if (conf && !kobj_get(conf, "num_replicas"))
        cJSON_AddNumberToObject(conf, "num_replicas", n);
    cJSON_AddItemToObject(d, "deployment_config", conf);
    cJSON_AddNumberToObject(d, "target_num_replicas", n);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(d, "required_resources"), "CPU", 1);
    reps = cJSON_AddArrayToObject(d, "replicas");
    for (int i = 0; i < n && strcmp(st, "DEPLOY_FAILED"); i++) {
        rep = cJSON_CreateObject();
        snprintf(aname, sizeof(aname), "SERVE_REPLICA::%s#%s#r%d", a->name, name, i);
        actor_info(rep, c, aname, salt * 100u + (unsigned)i + 1);
        snprintf(rid, sizeof(rid), "r%08x", salt * 100u + (unsigned)i);
        cJSON_AddStringToObject(rep, "replica_id", rid);
        cJSON_AddStringToObject(rep, "state", !strcmp(st, "UPDATING") ? "STARTING" : "RUNNING");
        cJSON_AddNumberToObject(rep, "pid", 5000 + (int)salt * 10 + i);
        cJSON_AddNumberToObject(rep, "start_time_s", (double)a->deployed_ms / 1000.0);
        cJSON_AddItemToArray(reps, rep);
    }
    cJSON_AddArrayToObject(d, "recent_dead_replicas");
    (void)now;
    return d;
}

/* Ray 2.60's deployment_topology: every deployment a node without outbound edges (the
 * simulation knows no handles between deployments); the ingress is the last one, as Serve
 * binds the application's ingress deployment last. */
static void add_topology(cJSON *app, const char *app_name, const cJSON *deps)
{
    cJSON *t = cJSON_AddObjectToObject(app, "deployment_topology"), *nodes, *n;
    const cJSON *d, *last = NULL;

    cJSON_AddStringToObject(t, "app_name", app_name);
    nodes = cJSON_AddObjectToObject(t, "nodes");
    cJSON_ArrayForEach(d, deps)
        last = d;
    cJSON_ArrayForEach(d, deps) {
        n = cJSON_AddObjectToObject(nodes, d->string);
        cJSON_AddStringToObject(n, "name", d->string);
        cJSON_AddStringToObject(n, "app_name", app_name);
        cJSON_AddArrayToObject(n, "outbound_deployments");
        cJSON_AddBoolToObject(n, "is_ingress", d == last);
    }
    cJSON_AddStringToObject(t, "ingress_deployment", last ? last->string : "");
}

static cJSON *app_json(const struct ray_cluster *c, const struct ray_app *a, uint64_t now)
{
    cJSON *o = cJSON_CreateObject(), *deps;
    const char *st = ray__app_status(a, now), *rp = kobj_str(a->config, "route_prefix");
    const cJSON *d;
    char msg[600] = "", dname[128];
    unsigned k = 0;

    cJSON_AddStringToObject(o, "name", a->name);
    if (rp)
        cJSON_AddStringToObject(o, "route_prefix", rp);
    else
        cJSON_AddStringToObject(o, "route_prefix", "/");
    cJSON_AddNullToObject(o, "docs_path");
    cJSON_AddStringToObject(o, "status", st);
    if (!strcmp(st, "DEPLOY_FAILED"))
        snprintf(msg, sizeof(msg), "Deploying app '%.200s' failed with exception:\n"
                 "RuntimeError: kubesim: KUBESIM_SERVE_STATUS=DEPLOY_FAILED", a->name);
    else if (!strcmp(st, "UNHEALTHY"))
        snprintf(msg, sizeof(msg), "%s", a->forced_msg[0] ? a->forced_msg :
                 "The application is unhealthy: one of its deployments failed its health checks.");
    cJSON_AddStringToObject(o, "message", msg);
    cJSON_AddNumberToObject(o, "last_deployed_time_s", (double)a->deployed_ms / 1000.0);
    cJSON_AddItemToObject(o, "deployed_app_config", cJSON_Duplicate(a->config, true));
    cJSON_AddStringToObject(o, "source", "declarative");
    deps = cJSON_AddObjectToObject(o, "deployments");
    cJSON_ArrayForEach(d, kobj_get(a->config, "deployments")) {
        const char *n = kobj_str(d, "name");
        if (!n || kobj_get(deps, n))
            continue;
        cJSON_AddItemToObject(deps, n, deployment_json(c, a, st, n, d, now, a->seq * 16 + ++k));
    }
    if (!deps->child) {
        deployment_name(a->config, dname, sizeof(dname));
        cJSON_AddItemToObject(deps, dname, deployment_json(c, a, st, dname, NULL, now,
                                                           a->seq * 16 + 1));
    }
    add_topology(o, a->name, deps);
    cJSON_AddBoolToObject(o, "external_scaler_enabled", false);
    return o;
}

/* Ray 2.60 lists where HTTP traffic enters: one target group for the head's proxy. */
static void add_target_groups(cJSON *o, const struct ray_cluster *c, const char *proxy)
{
    cJSON *tg = cJSON_AddArrayToObject(o, "target_groups"), *g = cJSON_CreateObject(), *t;

    cJSON_AddItemToArray(tg, g);
    t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "ip", c->head_ip);
    cJSON_AddNumberToObject(t, "port", RAY_SERVE_PORT);
    cJSON_AddStringToObject(t, "instance_id", "");
    cJSON_AddStringToObject(t, "name", proxy);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(g, "targets"), t);
    cJSON_AddStringToObject(g, "route_prefix", "/");
    cJSON_AddStringToObject(g, "protocol", "HTTP");
    cJSON_AddStringToObject(g, "app_name", "");
    cJSON_AddArrayToObject(g, "ingress_request_router_targets");
    cJSON_AddStringToObject(g, "ingress_deployment_name", "");
}

/* The controller's loop statistics (Ray 2.60): a steady 10 loops a second. */
static void add_health_metrics(cJSON *o, const struct ray_cluster *c, uint64_t now)
{
    cJSON *m = cJSON_AddObjectToObject(o, "controller_health_metrics");
    double t = (double)now / 1000.0;
    double up = now > c->serve_started_ms ? (double)(now - c->serve_started_ms) / 1000.0 : 0;

    cJSON_AddNumberToObject(m, "timestamp", t);
    cJSON_AddNumberToObject(m, "controller_start_time", t - up);
    cJSON_AddNumberToObject(m, "uptime_s", up);
    cJSON_AddNumberToObject(m, "last_control_loop_time", t);
    cJSON_AddNumberToObject(m, "num_control_loops", (double)(uint64_t)(up * 10));
    cJSON_AddNumberToObject(m, "loops_per_second", 10);
    cJSON_AddNumberToObject(m, "expected_sleep_duration_s", 0.1);
}

static int serve_get(struct ray_cluster *c, uint64_t now, struct ray_resp *out)
{
    cJSON *o = cJSON_CreateObject(), *apps, *h, *g, *px, *p;
    char pname[128];
    struct ray_app *a, *at;

    if (!o)
        return -ENOMEM;
    if (!c->serve_started) {
        cJSON_AddObjectToObject(o, "controller_info");
        cJSON_AddNullToObject(o, "proxy_location");
        cJSON_AddNullToObject(o, "http_options");
        cJSON_AddNullToObject(o, "grpc_options");
        cJSON_AddObjectToObject(o, "proxies");
        cJSON_AddObjectToObject(o, "applications");
        cJSON_AddNullToObject(o, "target_capacity");
        cJSON_AddArrayToObject(o, "target_groups");
        cJSON_AddNullToObject(o, "controller_health_metrics");
        cJSON_AddFalseToObject(o, "restores_unset_config_options");
        return ray__resp_json(out, 200, o);
    }
    actor_info(cJSON_AddObjectToObject(o, "controller_info"), c, "SERVE_CONTROLLER_ACTOR", 0);
    cJSON_AddStringToObject(o, "proxy_location", "EveryNode");
    h = cJSON_AddObjectToObject(o, "http_options");
    cJSON_AddStringToObject(h, "host", "0.0.0.0");
    cJSON_AddNumberToObject(h, "port", RAY_SERVE_PORT);
    cJSON_AddStringToObject(h, "root_path", "");
    cJSON_AddNullToObject(h, "request_timeout_s");
    cJSON_AddNumberToObject(h, "keep_alive_timeout_s", 90);
    cJSON_AddNullToObject(h, "ssl_keyfile");
    cJSON_AddNullToObject(h, "ssl_certfile");
    cJSON_AddNullToObject(h, "ssl_keyfile_password");
    cJSON_AddNullToObject(h, "ssl_ca_certs");
    g = cJSON_AddObjectToObject(o, "grpc_options");
    cJSON_AddNumberToObject(g, "port", 9000);
    cJSON_AddArrayToObject(g, "grpc_servicer_functions");
    cJSON_AddNullToObject(g, "request_timeout_s");
    cJSON_AddTrueToObject(g, "enable_reflection");
    px = cJSON_AddObjectToObject(o, "proxies");
    p = cJSON_AddObjectToObject(px, c->node_id);
    snprintf(pname, sizeof(pname), "SERVE_CONTROLLER_ACTOR:SERVE_PROXY_ACTOR-%.56s", c->node_id);
    actor_info(p, c, pname, 1);
    cJSON_AddStringToObject(p, "status", "HEALTHY");
    apps = cJSON_AddObjectToObject(o, "applications");
    HASH_ITER(hh, c->apps, a, at)
        cJSON_AddItemToObject(apps, a->name, app_json(c, a, now));
    if (c->has_target_capacity)
        cJSON_AddNumberToObject(o, "target_capacity", c->target_capacity);
    else
        cJSON_AddNullToObject(o, "target_capacity");
    add_target_groups(o, c, pname);
    add_health_metrics(o, c, now);
    cJSON_AddFalseToObject(o, "restores_unset_config_options");
    return ray__resp_json(out, 200, o);
}

/* ---- PUT / DELETE ------------------------------------------------------------------------ */

static int invalid(struct ray_resp *out, const char *field, const char *what)
{
    char msg[600];

    snprintf(msg, sizeof(msg), "1 validation error for ServeDeploySchema\n%.200s\n  %.300s",
             field, what);
    return ray__resp_text(out, 400, msg);
}

/* Whether a validated config changes nothing on c: Serve running, the same applications
 * with equal configs, the same target_capacity. */
static bool serve_put_unchanged(const struct ray_cluster *c, const cJSON *apps, const cJSON *tc)
{
    const cJSON *e;
    struct ray_app *a;
    bool has_tc = tc && cJSON_IsNumber(tc);

    if (!c->serve_started || c->has_target_capacity != has_tc ||
        (has_tc && c->target_capacity != (int)tc->valuedouble) ||
        (unsigned)cJSON_GetArraySize(apps) != HASH_COUNT(c->apps))
        return false;
    cJSON_ArrayForEach(e, apps) {
        a = NULL;
        HASH_FIND_STR(c->apps, kobj_str(e, "name"), a);
        if (!a || !json_equal(a->config, e))
            return false;
    }
    return true;
}

static int serve_put(struct ray_cluster *c, uint64_t now, const char *body, size_t len,
                     struct ray_resp *out)
{
    cJSON *cfg = cJSON_ParseWithLength(body ? body : "", len), *apps, *e;
    struct ray_app *a, *at;
    int rc = 0, i = 0;

    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return ray__resp_text(out, 400, "Expecting value: the request body is not a JSON object");
    }
    apps = cJSON_GetObjectItemCaseSensitive(cfg, "applications");
    if (!cJSON_IsArray(apps)) {
        cJSON_Delete(cfg);
        return invalid(out, "applications", "field required (type=value_error.missing)");
    }
    if (cJSON_GetArraySize(apps) > RAY_MAX_APPS) {
        cJSON_Delete(cfg);
        return invalid(out, "applications", "too many applications for kubesim (256 at most)");
    }
    const cJSON *tc = kobj_get(cfg, "target_capacity");
    if (tc && !cJSON_IsNull(tc) && (!cJSON_IsNumber(tc) || tc->valuedouble < 0 || tc->valuedouble > 100)) {
        cJSON_Delete(cfg);
        return invalid(out, "target_capacity", "ensure this value is a number from 0 to 100 "
                       "(type=value_error.number)");
    }
    cJSON_ArrayForEach(e, apps) {
        const cJSON *f;
        char field[64];
        snprintf(field, sizeof(field), "applications -> %d", i++);
        if (!cJSON_IsObject(e)) {
            rc = invalid(out, field, "value is not a valid dict (type=type_error.dict)");
            goto out;
        }
        if (!cJSON_IsString(kobj_get(e, "import_path"))) {
            rc = invalid(out, field, "import_path: field required (type=value_error.missing)");
            goto out;
        }
        if ((f = kobj_get(e, "name")) && !cJSON_IsString(f)) {
            rc = invalid(out, field, "name: str type expected (type=type_error.str)");
            goto out;
        }
        if (!f)
            cJSON_AddStringToObject(e, "name", "default");
        for (const cJSON *o = apps->child; o != e; o = o->next)
            if (!strcmp(kobj_str(o, "name"), kobj_str(e, "name"))) {
                char msg[300];
                snprintf(msg, sizeof(msg), "Found duplicate application names: ['%.200s'].",
                         kobj_str(e, "name"));
                rc = invalid(out, "__root__", msg);
                goto out;
            }
    }
    c->serve_puts++;
    if (serve_put_unchanged(c, apps, tc))
        c->serve_puts_same++;
    /* applications no longer in the config are deleted */
    HASH_ITER(hh, c->apps, a, at) {
        bool keep = false;
        cJSON_ArrayForEach(e, apps)
            if (!strcmp(kobj_str(e, "name"), a->name))
                keep = true;
        if (!keep) {
            HASH_DEL(c->apps, a);
            ray__app_free(a);
        }
    }
    cJSON_ArrayForEach(e, apps) {
        const char *name = kobj_str(e, "name");
        a = NULL;
        HASH_FIND_STR(c->apps, name, a);
        if (a && json_equal(a->config, e))
            continue;
        if (!a) {
            if (!(a = calloc(1, sizeof(*a))) || !(a->name = strdup(name))) {
                free(a);
                rc = -ENOMEM;
                goto out;
            }
            a->seq = ++c->app_seq;
            HASH_ADD_KEYPTR(hh, c->apps, a->name, strlen(a->name), a);
        }
        cJSON_Delete(a->config);
        a->config = cJSON_Duplicate(e, true);
        a->deployed_ms = now;
        a->deploy_ms = app_deploy_ms(e);
        snprintf(a->target, sizeof(a->target), "%s", app_target(e));
        a->forced[0] = '\0';
        a->forced_msg[0] = '\0';
    }
    if (!c->serve_started)
        c->serve_started_ms = now;
    c->serve_started = true;
    c->has_target_capacity = tc && cJSON_IsNumber(tc);
    c->target_capacity = c->has_target_capacity ? (int)tc->valuedouble : 0;
    rc = ray__resp_text(out, 200, "");
out:
    cJSON_Delete(cfg);
    return rc;
}

/* ---- Serve's HTTP proxy (port 8000) ------------------------------------------------------ */

int ray__serve_http(struct ray_cluster *c, uint64_t now, const char *method, const char *path,
                    struct ray_resp *out)
{
    struct ray_app *a, *at, *best = NULL;
    size_t best_len = 0;
    char msg[600];

    memset(out, 0, sizeof(*out));
    if (!strcmp(path, "/-/healthz"))
        return ray__resp_text(out, 200, "success");
    if (!strcmp(path, "/-/routes")) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            return -ENOMEM;
        HASH_ITER(hh, c->apps, a, at)
            if (strcmp(ray__app_status(a, now), "DEPLOYING") &&
                strcmp(ray__app_status(a, now), "DEPLOY_FAILED")) {
                const char *rp = kobj_str(a->config, "route_prefix");
                cJSON_AddStringToObject(o, rp ? rp : "/", a->name);
            }
        return ray__resp_json(out, 200, o);
    }
    /* the application whose route_prefix is the longest prefix of path */
    HASH_ITER(hh, c->apps, a, at) {
        const char *rp = kobj_str(a->config, "route_prefix");
        size_t n;
        if (!rp)
            rp = "/";
        n = strlen(rp);
        while (n > 1 && rp[n - 1] == '/')
            n--;
        if (strncmp(path, rp, n) || (n > 1 && path[n] && path[n] != '/'))
            continue;
        if (!best || n > best_len) {
            best = a;
            best_len = n;
        }
    }
    if (!best || !strcmp(ray__app_status(best, now), "DEPLOYING") ||
        !strcmp(ray__app_status(best, now), "DEPLOY_FAILED")) {
        snprintf(msg, sizeof(msg), "Path '%.400s' not found. Ping http://.../-/routes for "
                 "available routes.", path);
        return ray__resp_text(out, 404, msg);
    }
    snprintf(msg, sizeof(msg), "kubesim: %s %.300s served by application '%.200s'\n", method,
             path, best->name);
    return ray__resp_text(out, 200, msg);
}

int ray__serve_handle(struct ray_cluster *c, uint64_t now, const char *method,
                      const char *path, const char *body, size_t len, struct ray_resp *out)
{
    struct ray_app *a, *at;

    if (strcmp(path, "/api/serve/applications/") && strcmp(path, "/api/serve/applications"))
        return ray__resp_text(out, 404, "404: Not Found");
    if (!strcmp(method, "GET"))
        return serve_get(c, now, out);
    if (!strcmp(method, "PUT"))
        return serve_put(c, now, body, len, out);
    if (!strcmp(method, "DELETE")) {
        HASH_ITER(hh, c->apps, a, at) {
            HASH_DEL(c->apps, a);
            ray__app_free(a);
        }
        return ray__resp_text(out, 200, "");
    }
    return ray__resp_text(out, 405, "405: Method Not Allowed");
}

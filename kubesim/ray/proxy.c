/*
 * proxy.c - how requests reach a simulated dashboard:
 *   - services/[SCHEME:]NAME[:PORT]/proxy/PATH, resolved as the real API server does
 *     (pkg/registry/core/service/storage ResourceLocation): a numeric PORT names the
 *     Service port with that number, any other PORT is a port name ("" matches an
 *     unnamed port); the Service's Endpoints give a ready address for that port; none
 *     -> 503 ServiceUnavailable "no endpoints available for service \"NAME\"";
 *   - pods/[SCHEME:]NAME[:PORT]/proxy/PATH (the API server's pod proxy, which KubeRay's
 *     --use-kubernetes-proxy uses for the head's Serve /-/healthz): the Pod's IP and PORT;
 *   - a submitter's --address HOST:PORT (Service DNS name, clusterIP or Pod IP), which
 *     kube-proxy would route (ray__resolve_host);
 *   - the admin route /kubesim/ray/ (list clusters, force a Serve application status).
 * The endpoint must be a Ready, non-terminating Ray head Pod and the port its dashboard
 * port (the container port named "dashboard", else 8265), or any Ready Ray node's Serve
 * port (named "serve", else 8000) once its cluster runs Serve; anything else is a refused
 * connection, which the API server reports as 503 "error trying to reach service".
 * Store reads happen outside ray.mu; only the cluster lookup takes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "kubesim/ray/internal.h"
#include "kubesim/runtime/runtime.h"
#include "kubesim/schema/selector.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"

static void fail(struct ray_target *t, int code, const char *reason, const char *fmt,
                 const char *a, const char *b)
{
    t->code = code;
    snprintf(t->reason, sizeof(t->reason), "%s", reason);
    snprintf(t->message, sizeof(t->message), fmt, a, b ? b : "");
}

static bool pod_ready(const cJSON *pod)
{
    const cJSON *cd;

    if (kobj_get(kobj_get(pod, "metadata"), "deletionTimestamp"))
        return false;
    cJSON_ArrayForEach(cd, kobj_get(kobj_get(pod, "status"), "conditions"))
        if (kobj_str(cd, "type") && !strcmp(kobj_str(cd, "type"), "Ready"))
            return kobj_str(cd, "status") && !strcmp(kobj_str(cd, "status"), "True");
    return false;
}

static bool is_head(const cJSON *pod)
{
    const char *t = kobj_str(kobj_get(kobj_get(pod, "metadata"), "labels"), "ray.io/node-type");

    return t && !strcmp(t, "head");
}

/* The container port named name, else def. */
static int named_port(const cJSON *pod, const char *name, int def)
{
    const cJSON *ct, *pt;

    cJSON_ArrayForEach(ct, kobj_get(kobj_get(pod, "spec"), "containers"))
        cJSON_ArrayForEach(pt, kobj_get(ct, "ports"))
            if (kobj_str(pt, "name") && !strcmp(kobj_str(pt, "name"), name) &&
                cJSON_IsNumber(kobj_get(pt, "containerPort")))
                return kobj_get(pt, "containerPort")->valueint;
    return def;
}

static bool is_ray_node(const cJSON *pod)
{
    const cJSON *l = kobj_get(kobj_get(pod, "metadata"), "labels");
    const char *t = kobj_str(l, "ray.io/node-type");

    return t && (!strcmp(t, "head") || !strcmp(t, "worker")) && kobj_str(l, "ray.io/cluster");
}

/* Ready worker Pods of the head's cluster (for /api/cluster_status). */
static int count_workers(struct ray *r, const cJSON *head)
{
    const cJSON *md = kobj_get(head, "metadata");
    const char *cl = kobj_str(kobj_get(md, "labels"), "ray.io/cluster");
    struct store_list_opts lo = { 0 };
    struct store_list l = { 0 };
    struct store_status st = { 0 };
    struct sel *s = NULL;
    char expr[400], err[128];
    int n = 0;

    if (!cl)
        return 0;
    snprintf(expr, sizeof(expr), "ray.io/cluster=%s,ray.io/node-type=worker", cl);
    if (sel_parse(expr, &s, err, sizeof(err)) < 0)
        return 0;
    lo.labels = s;
    if (store_list(r->store, r->r_pods, kobj_str(md, "namespace"), &lo, &l, &st) == 0) {
        for (size_t i = 0; i < l.n; i++)
            n += pod_ready(store_obj_json(l.items[i]));
        store_list_free(&l);
    }
    store_status_clear(&st);
    sel_free(s);
    return n;
}

/* Serve's HTTP proxy on a Ready Ray node (head or worker) whose cluster runs Serve. */
static void reach_serve(struct ray *r, const cJSON *pod, const char *addr, struct ray_target *t)
{
    const cJSON *md = kobj_get(pod, "metadata");
    const char *ns = kobj_str(md, "namespace");
    const char *cl = kobj_str(kobj_get(md, "labels"), "ray.io/cluster");
    struct ray_cluster *c, *ct, *hit = NULL;

    pthread_mutex_lock(&r->mu);
    HASH_ITER(hh, r->clusters, c, ct)
        if (ns && cl && !strcmp(c->ns, ns) && !strcmp(c->name, cl) && c->serve_started)
            hit = c;
    if (hit && !r->stopping) {
        snprintf(t->uid, sizeof(t->uid), "%s", hit->uid);
        t->serve = true;
        t->code = 0;
    }
    pthread_mutex_unlock(&r->mu);
    if (!t->serve)
        fail(t, 503, "ServiceUnavailable", "error trying to reach service: dial tcp %s: "
             "connect: connection refused", addr, NULL);
}

/* The endpoint Pod at ip:port is reachable as a dashboard (or Serve's proxy): set t to
 * its cluster. */
static void reach_pod(struct ray *r, const cJSON *pod, const char *ip, int port,
                      struct ray_target *t)
{
    struct ray_cluster *c;
    char addr[64];

    snprintf(addr, sizeof(addr), "%s:%d", ip ? ip : "", port);
    if (pod && kobj_str(kobj_get(pod, "metadata"), "uid")) {
        snprintf(t->pod_uid, sizeof(t->pod_uid), "%s", kobj_str(kobj_get(pod, "metadata"), "uid"));
        t->pod_port = port;
    }
    if (pod && pod_ready(pod) && is_ray_node(pod) &&
        port == named_port(pod, "serve", RAY_SERVE_PORT)) {
        reach_serve(r, pod, addr, t);
        return;
    }
    if (!pod || !pod_ready(pod) || !is_head(pod) ||
        port != named_port(pod, "dashboard", RAY_DASHBOARD_PORT)) {
        fail(t, 503, "ServiceUnavailable", "error trying to reach service: dial tcp %s: "
             "connect: connection refused", addr, NULL);
        return;
    }
    t->workers = count_workers(r, pod);
    char *token = ray__pod_auth_token(r, pod);
    pthread_mutex_lock(&r->mu);
    c = r->stopping ? NULL : ray__cluster_for_head(r, pod, &token);
    if (c)
        snprintf(t->uid, sizeof(t->uid), "%s", c->uid);
    pthread_mutex_unlock(&r->mu);
    if (token) {
        explicit_bzero(token, strlen(token));
        free(token);
    }
    if (!c) {
        fail(t, 503, "ServiceUnavailable", "error trying to reach service: dial tcp %s: "
             "connect: connection refused", addr, NULL);
        return;
    }
    t->code = 0;
}

static struct store_obj *get_obj(struct ray *r, const struct reg_resource *res, const char *ns,
                                 const char *name)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };

    if (store_get(r->store, res, ns, name, &o, &st) < 0)
        o = NULL;
    store_status_clear(&st);
    return o;
}

void ray__resolve_service(struct ray *r, const char *ns, const char *name, const char *port,
                          struct ray_target *t)
{
    struct store_obj *svc = NULL, *ep = NULL, *pod = NULL;
    const cJSON *sp, *ss, *pt, *addr = NULL;
    char pname[256], *end;
    long num;
    int epport = 0;

    memset(t, 0, sizeof(*t));
    if (!(svc = get_obj(r, r->r_svc, ns, name))) {
        fail(t, 404, "NotFound", "services \"%s\" not found", name, NULL);
        return;
    }
    snprintf(pname, sizeof(pname), "%s", port);
    num = strtol(port, &end, 10);
    if (*port && !*end) {
        bool found = false;
        cJSON_ArrayForEach(sp, kobj_get(kobj_get(store_obj_json(svc), "spec"), "ports"))
            if (cJSON_IsNumber(kobj_get(sp, "port")) && kobj_get(sp, "port")->valueint == num) {
                const char *spn = kobj_str(sp, "name");
                snprintf(pname, sizeof(pname), "%s", spn ? spn : "");
                found = true;
                break;
            }
        if (!found) {
            t->code = 503;
            snprintf(t->reason, sizeof(t->reason), "ServiceUnavailable");
            snprintf(t->message, sizeof(t->message), "no service port %ld found for service "
                     "\"%.200s\"", num, name);
            goto out;
        }
    }
    ep = get_obj(r, r->r_ep, ns, name);
    cJSON_ArrayForEach(ss, kobj_get(ep ? store_obj_json(ep) : NULL, "subsets")) {
        const cJSON *as = kobj_get(ss, "addresses");
        cJSON_ArrayForEach(pt, kobj_get(ss, "ports")) {
            const char *n = kobj_str(pt, "name");
            if (strcmp(n ? n : "", pname) || !cJSON_IsArray(as) || !as->child)
                continue;
            addr = as->child;
            epport = cJSON_IsNumber(kobj_get(pt, "port")) ? kobj_get(pt, "port")->valueint : 0;
            break;
        }
        if (addr)
            break;
    }
    if (!addr) {
        fail(t, 503, "ServiceUnavailable", "no endpoints available for service \"%s\"", name, NULL);
        goto out;
    }
    {
        const cJSON *ref = kobj_get(addr, "targetRef");
        const char *pn = kobj_str(ref, "name");
        if (pn)
            pod = get_obj(r, r->r_pods, ns, pn);
        /* the Endpoints object can trail the Pod by one sync: trust the Pod */
        if (pod && kobj_str(ref, "uid") && strcmp(pod->uid, kobj_str(ref, "uid"))) {
            store_obj_unref(pod);
            pod = NULL;
        }
        if (pod && !pod_ready(store_obj_json(pod))) {
            fail(t, 503, "ServiceUnavailable", "no endpoints available for service \"%s\"",
                 name, NULL);
            goto out;
        }
        reach_pod(r, pod ? store_obj_json(pod) : NULL, kobj_str(addr, "ip"), epport, t);
    }
out:
    if (pod)
        store_obj_unref(pod);
    if (ep)
        store_obj_unref(ep);
    store_obj_unref(svc);
}

/* The first object of res (all namespaces) whose JSON at a.b equals v, or NULL. */
static struct store_obj *find_by_field(struct ray *r, const struct reg_resource *res,
                                       const char *a, const char *b, const char *v)
{
    struct store_list_opts lo = { 0 };
    struct store_list l = { 0 };
    struct store_status st = { 0 };
    struct store_obj *hit = NULL;

    if (store_list(r->store, res, "", &lo, &l, &st) == 0) {
        for (size_t i = 0; i < l.n && !hit; i++) {
            const char *x = kobj_str(kobj_get(store_obj_json(l.items[i]), a), b);
            if (x && !strcmp(x, v))
                hit = store_obj_ref(l.items[i]);
        }
        store_list_free(&l);
    }
    store_status_clear(&st);
    return hit;
}

void ray__resolve_host(struct ray *r, const char *ns, const cJSON *self, const char *host,
                       int port, struct ray_target *t)
{
    struct in_addr ia;
    char name[254], *dot, num[16];
    size_t n;

    memset(t, 0, sizeof(*t));
    snprintf(num, sizeof(num), "%d", port);
    if (!strcmp(host, "localhost") || !strcmp(host, "127.0.0.1")) {
        /* a sidecar submitter shares the head Pod's network namespace (read it afresh:
         * self is the Pod as its containers started, before it had an IP or was Ready) */
        const cJSON *md = kobj_get(self, "metadata");
        const char *sn = kobj_str(md, "namespace"), *nm = kobj_str(md, "name");
        struct store_obj *o = sn && nm ? get_obj(r, r->r_pods, sn, nm) : NULL;
        bool same = o && kobj_str(md, "uid") && !strcmp(o->uid, kobj_str(md, "uid"));
        reach_pod(r, same ? store_obj_json(o) : NULL, host, port, t);
        if (o)
            store_obj_unref(o);
        return;
    }
    if (inet_pton(AF_INET, host, &ia) == 1) {
        struct store_obj *o = find_by_field(r, r->r_svc, "spec", "clusterIP", host);
        if (o) {
            ray__resolve_service(r, o->ns, o->name, num, t);
            store_obj_unref(o);
            return;
        }
        o = find_by_field(r, r->r_pods, "status", "podIP", host);
        reach_pod(r, o ? store_obj_json(o) : NULL, host, port, t);
        if (o)
            store_obj_unref(o);
        return;
    }
    snprintf(name, sizeof(name), "%s", host);
    n = strlen(name);
    if (n && name[n - 1] == '.')
        name[--n] = '\0';
    if (n > 18 && !strcmp(name + n - 18, ".svc.cluster.local"))
        name[n - 18] = '\0';
    else if (n > 4 && !strcmp(name + n - 4, ".svc"))
        name[n - 4] = '\0';
    if ((dot = strchr(name, '.'))) {
        *dot = '\0';
        if (strchr(dot + 1, '.')) {
            fail(t, 503, "ServiceUnavailable", "dial tcp: lookup %s: no such host", host, NULL);
            return;
        }
        ns = dot + 1;
    }
    ray__resolve_service(r, ns, name, num, t);
    if (t->code == 404)
        fail(t, 503, "ServiceUnavailable", "dial tcp: lookup %s: no such host", host, NULL);
}

int ray__target_request(struct ray *r, const struct ray_target *t, const char *method,
                        const char *path, const char *body, size_t len, const char *authz,
                        const char *x_ray_authz, struct ray_resp *out)
{
    struct ray_cluster *c = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (r->dash_delay_ms > 0 && !t->serve) {
        /* a slow dashboard: the caller's connection waits, nobody else's */
        struct timespec ts = { r->dash_delay_ms / 1000, (r->dash_delay_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->clusters, t->uid, c);
    if (!c || r->stopping) {
        pthread_mutex_unlock(&r->mu);
        return -ENOENT;
    }
    int delay = c->delay_ms;
    if (!t->serve)
        c->dash_asked++;
    if (t->serve) {
        rc = ray__serve_http(c, ray__now_ms(), method, path, out);
    } else {
        c->workers = t->workers;
        c->cpus = 1 + t->workers;
        rc = ray__auth_check(c, path, authz, x_ray_authz, out);
        if (rc == 0)
            rc = ray_dashboard_serve(c, ray__now_ms(), method, path, body, len, out);
        else if (rc == 1)
            rc = 0;
    }
    pthread_mutex_unlock(&r->mu);
    if (delay > 0) {   /* a slow head: this connection's thread waits, nobody else */
        struct timespec ts = { delay / 1000, (long)(delay % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (!t->serve) {   /* the cluster may have gone while this thread slept */
        pthread_mutex_lock(&r->mu);
        HASH_FIND_STR(r->clusters, t->uid, c);
        if (c)
            c->dash_answered++;
        pthread_mutex_unlock(&r->mu);
    }
    return rc;
}

/* ---- services/NAME/proxy ---------------------------------------------------------------- */

/* The endpoint Pod t reached is one whose processes are real (r->http_fn): pass the request
 * on to its port and answer with its reply. -ENOENT when it is not such a Pod. */
static int forward(struct ray *r, struct server_req *req, const struct ray_target *t,
                   const char *path)
{
    struct runtime_http_req fr = { .method = req->method, .ctype = req->content_type,
                                   .accept = server_req_header(req, "Accept"),
                                   .body = req->body, .len = req->body_len };
    struct runtime_http_reply out;
    struct buf p = { 0 };
    int rc;

    if (!t->pod_uid[0] || !r->http_fn)
        return -ENOENT;
    buf_puts(&p, path);
    if (server_req_query_string(req, &p) < 0 || !p.data) {
        buf_free(&p);
        return server_reply_status(req, 500, "InternalError", "kubesim: out of memory");
    }
    fr.path = p.data;
    rc = r->http_fn(r->http_arg, t->pod_uid, t->pod_port, &fr, &out);
    buf_free(&p);
    if (rc == -ENOENT)
        return rc;
    if (rc == -EINVAL)
        return server_reply_status(req, 400, "BadRequest", out.err);
    if (rc < 0)
        return server_reply_status(req, 503, "ServiceUnavailable", out.err);
    rc = server_reply_take(req, (int)out.code, out.ctype, out.body, out.len);
    out.body = NULL;
    return rc;
}

/* Answers with what ray__target_request gave (rc, resp): the simulated Ray's reply,
 * or the API server's errors for a target that is not listening and for ENOMEM. */
static int reply_simulated(struct server_req *req, int rc, struct ray_resp *resp)
{
    if (rc == -ENOENT)
        return server_reply_status(req, 503, "ServiceUnavailable",
                                   "error trying to reach service: connection refused");
    if (rc < 0 || !resp->body) {
        free(resp->body);
        return server_reply_status(req, 500, "InternalError", "kubesim: out of memory");
    }
    return server_reply_take(req, resp->code, resp->ctype, resp->body, resp->len);
}

void ray_set_http_source(struct ray *r, ray_http_source_fn fn, void *arg)
{
    if (r) {
        r->http_fn = fn;
        r->http_arg = arg;
    }
}

static int on_proxy(void *arg, struct server_req *req)
{
    struct ray *r = arg;
    const struct route *rt = req->route;
    char parts[3][ROUTE_MAX_SEG], id[ROUTE_MAX_SEG];
    const char *scheme = "", *name, *port = "", *path;
    struct ray_target t;
    struct ray_resp resp;
    int np = 0, rc;

    if (!rt->ns[0])
        return server_reply_status(req, 404, "NotFound", "the server could not find the "
                                   "requested resource");
    snprintf(id, sizeof(id), "%s", rt->name);
    for (char *p = id, *c; np < 3; np++) {
        c = strchr(p, ':');
        snprintf(parts[np], sizeof(parts[np]), "%.*s", c ? (int)(c - p) : (int)strlen(p), p);
        if (!c) {
            np++;
            break;
        }
        p = c + 1;
        if (np == 2) {
            np = 4;   /* too many parts */
            break;
        }
    }
    if (np == 1) {
        name = parts[0];
    } else if (np == 2) {
        name = parts[0];
        port = parts[1];
    } else if (np == 3) {
        scheme = parts[0];
        name = parts[1];
        port = parts[2];
    } else {
        name = "";
    }
    if (!name[0] || (scheme[0] && strcmp(scheme, "http") && strcmp(scheme, "https"))) {
        char msg[400];
        snprintf(msg, sizeof(msg), "invalid service request \"%.300s\"", rt->name);
        return server_reply_status(req, 400, "BadRequest", msg);
    }
    ray__resolve_service(r, rt->ns, name, port, &t);
    path = rt->rest && rt->rest[0] ? rt->rest : "/";
    if ((rc = forward(r, req, &t, path)) != -ENOENT)
        return rc;
    if (t.code)
        return server_reply_status(req, t.code, t.reason, t.message);
    /* the API server consumes Authorization; only X-Ray-Authorization reaches Ray */
    rc = ray__target_request(r, &t, req->method, path, req->body, req->body_len, NULL,
                             server_req_header(req, "X-Ray-Authorization"), &resp);
    return reply_simulated(req, rc, &resp);
}

/* ---- pods/NAME/proxy ------------------------------------------------------------------------ */

/* pods/[SCHEME:]NAME[:PORT]/proxy/PATH as the API server resolves it (pkg/registry/core/pod
 * ResourceLocation): a missing Pod is 404; no PORT means the Pod's first container port; a
 * Pod without an IP is 503 "address not allowed" in the real server, refused here. */
static int on_pod_proxy(void *arg, struct server_req *req)
{
    struct ray *r = arg;
    const struct route *rt = req->route;
    char id[ROUTE_MAX_SEG], *name = id, *c1, *c2, *end;
    struct ray_target t;
    struct ray_resp resp;
    struct store_obj *pod;
    long port = 0;
    int rc;

    if (!rt->ns[0])
        return server_reply_status(req, 404, "NotFound", "the server could not find the "
                                   "requested resource");
    snprintf(id, sizeof(id), "%s", rt->name);
    c1 = strchr(id, ':');
    c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2) {   /* SCHEME:NAME:PORT */
        *c1 = *c2 = '\0';
        if (strcmp(id, "http") && strcmp(id, "https"))
            name = "";
        else
            name = c1 + 1;
        c1 = c2;
    } else if (c1) {
        *c1 = '\0';
    }
    if (c1) {
        port = strtol(c1 + 1, &end, 10);
        if (*end || port <= 0 || port > 65535)
            name = "";
    }
    if (!name[0]) {
        char msg[400];
        snprintf(msg, sizeof(msg), "invalid pod request \"%.300s\"", rt->name);
        return server_reply_status(req, 400, "BadRequest", msg);
    }
    if (!(pod = get_obj(r, r->r_pods, rt->ns, name))) {
        char msg[400];
        snprintf(msg, sizeof(msg), "pods \"%.300s\" not found", name);
        return server_reply_status(req, 404, "NotFound", msg);
    }
    if (!port) {
        const cJSON *c0 = cJSON_GetArrayItem(kobj_get(kobj_get(store_obj_json(pod), "spec"), "containers"), 0);
        const cJSON *p0 = cJSON_GetArrayItem(kobj_get(c0, "ports"), 0);
        port = cJSON_IsNumber(kobj_get(p0, "containerPort")) ? kobj_get(p0, "containerPort")->valueint : 80;
    }
    memset(&t, 0, sizeof(t));
    reach_pod(r, store_obj_json(pod), kobj_str(kobj_get(store_obj_json(pod), "status"), "podIP"), (int)port, &t);
    store_obj_unref(pod);
    if ((rc = forward(r, req, &t, rt->rest && rt->rest[0] ? rt->rest : "/")) != -ENOENT)
        return rc;
    if (t.code)
        return server_reply_status(req, t.code, t.reason, t.message);
    rc = ray__target_request(r, &t, req->method, rt->rest && rt->rest[0] ? rt->rest : "/", req->body,
                             req->body_len, NULL, server_req_header(req, "X-Ray-Authorization"),
                             &resp);
    return reply_simulated(req, rc, &resp);
}

/* ---- /kubesim/ray/ ------------------------------------------------------------------------ */

/* Each application's status, when it was (re)deployed and its config: what a test needs to
 * judge a RayService's Service switch without asking every dashboard in turn. */
static void add_app_states(cJSON *o, const struct ray_cluster *c, uint64_t now)
{
    cJSON *apps = cJSON_AddObjectToObject(o, "appStates"), *e;
    const struct ray_app *a, *at;

    HASH_ITER(hh, c->apps, a, at) {
        if (!apps || !(e = cJSON_AddObjectToObject(apps, a->name)))
            return;
        cJSON_AddStringToObject(e, "status", ray__app_status(a, now));
        cJSON_AddNumberToObject(e, "deployedMs", (double)a->deployed_ms);
        cJSON_AddItemToObject(e, "config", cJSON_Duplicate(a->config, true));
    }
}

static int admin_list(struct ray *r, struct server_req *req)
{
    cJSON *arr = cJSON_CreateArray();
    struct ray_cluster *c, *ct;
    uint64_t now = ray__now_ms();
    char *txt;

    if (!arr)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    pthread_mutex_lock(&r->mu);
    HASH_ITER(hh, r->clusters, c, ct) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "namespace", c->ns);
        cJSON_AddStringToObject(o, "cluster", c->name);
        cJSON_AddStringToObject(o, "headPod", c->head);
        cJSON_AddStringToObject(o, "headPodUID", c->uid);
        cJSON_AddStringToObject(o, "headIP", c->head_ip);
        cJSON_AddNumberToObject(o, "jobs", HASH_COUNT(c->jobs));
        cJSON_AddNumberToObject(o, "applications", HASH_COUNT(c->apps));
        cJSON_AddNumberToObject(o, "servePuts", c->serve_puts);
        cJSON_AddNumberToObject(o, "servePutsUnchanged", c->serve_puts_same);
        add_app_states(o, c, now);
        cJSON_AddNumberToObject(o, "dashboardAsked", c->dash_asked);
        cJSON_AddNumberToObject(o, "dashboardAnswered", c->dash_answered);
        cJSON_AddItemToArray(arr, o);
    }
    pthread_mutex_unlock(&r->mu);
    txt = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    if (!txt)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    return server_reply_take(req, 200, "application/json", txt, strlen(txt));
}

/* POST /kubesim/ray/NS/CLUSTER/delay {"ms": N}: the cluster's dashboard and Serve proxy
 * answer N ms late (0..600000; 0 = on time) */
static int admin_delay(struct ray *r, struct server_req *req, const char *ns, const char *cl)
{
    cJSON *body = cJSON_ParseWithLength(req->body, req->body_len);
    const cJSON *ms = kobj_get(body, "ms");
    struct ray_cluster *c, *ct;
    bool hit = false;
    if (!cJSON_IsNumber(ms) || ms->valuedouble < 0 || ms->valuedouble > 600000) {
        cJSON_Delete(body);
        return server_reply_status(req, 400, "BadRequest", "want {\"ms\": 0..600000}");
    }
    pthread_mutex_lock(&r->mu);
    HASH_ITER(hh, r->clusters, c, ct)
        if (!strcmp(c->ns, ns) && (!strcmp(c->name, cl) || !strcmp(c->head, cl))) {
            c->delay_ms = (int)ms->valuedouble;
            hit = true;
        }
    pthread_mutex_unlock(&r->mu);
    cJSON_Delete(body);
    if (!hit)
        return server_reply_status(req, 404, "NotFound", "no such Ray cluster");
    return server_reply(req, 200, "application/json", "{}", 2);
}

/* POST /kubesim/ray/NS/CLUSTER/applications/APP {"status": "UNHEALTHY", "message": "..."} */
static int on_admin(void *arg, struct server_req *req)
{
    struct ray *r = arg;
    char ns[64], cl[254], app[254];
    const char *p = req->path + strlen("/kubesim/ray/");
    cJSON *body;
    struct ray_cluster *c, *ct, *hit = NULL;
    int rc = -ENOENT;

    if (!*p || !strcmp(p, "clusters"))
        return strcmp(req->method, "GET") ? server_reply_status(req, 405, "MethodNotAllowed",
                                                               "GET only") : admin_list(r, req);
    if (sscanf(p, "%63[^/]/%253[^/]/%253s", ns, cl, app) == 3 && !strcmp(app, "delay"))
        return strcmp(req->method, "POST") ? server_reply_status(req, 405, "MethodNotAllowed",
                                                                "POST only") : admin_delay(r, req, ns, cl);
    if (sscanf(p, "%63[^/]/%253[^/]/applications/%253[^/]", ns, cl, app) != 3)
        return server_reply_status(req, 404, "NotFound", "want /kubesim/ray/NS/CLUSTER/"
                                   "applications/APP");
    if (strcmp(req->method, "POST"))
        return server_reply_status(req, 405, "MethodNotAllowed", "POST only");
    body = cJSON_ParseWithLength(req->body, req->body_len);
    if (!cJSON_IsObject(body) || !cJSON_IsString(kobj_get(body, "status"))) {
        cJSON_Delete(body);
        return server_reply_status(req, 400, "BadRequest", "want {\"status\": \"UNHEALTHY\"|"
                                   "\"DEPLOY_FAILED\"|\"RUNNING\"|\"\", \"message\": \"...\"}");
    }
    pthread_mutex_lock(&r->mu);
    HASH_ITER(hh, r->clusters, c, ct)
        if (!strcmp(c->ns, ns) && (!strcmp(c->name, cl) || !strcmp(c->head, cl)))
            hit = c;
    if (hit)
        rc = ray__serve_force(hit, app, kobj_str(body, "status"), kobj_str(body, "message"));
    pthread_mutex_unlock(&r->mu);
    cJSON_Delete(body);
    if (rc == -EINVAL)
        return server_reply_status(req, 400, "BadRequest", "status must be UNHEALTHY, "
                                   "DEPLOY_FAILED, RUNNING or \"\"");
    if (rc < 0)
        return server_reply_status(req, 404, "NotFound", "no such Ray cluster or application");
    return server_reply(req, 200, "application/json", "{}", 2);
}

int ray__proxy_install(struct ray *r)
{
    int rc = server_add_subresource(r->srv, "services", "proxy", on_proxy, r);

    if (rc >= 0)
        rc = server_add_subresource(r->srv, "pods", "proxy", on_pod_proxy, r);
    return rc < 0 ? rc : 0;
}

int ray__admin_install(struct ray *r)
{
    int rc = server_add_route(r->srv, "/kubesim/ray/", on_admin, r);

    return rc < 0 ? rc : 0;
}

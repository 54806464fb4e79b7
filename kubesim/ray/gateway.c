/*
 * gateway.c - a simulated Gateway API implementation, as far as RayService incremental
 * upgrades need one (docs/kubesim-ray.md, "Gateways"):
 *   - a controller (a thread polling every 200 ms, once the Gateway API CRDs are
 *     installed) that accepts every Gateway (conditions Accepted and Programmed True, an
 *     address) and every HTTPRoute's parents (Accepted True; ResolvedRefs True when every
 *     backend Service exists, else False BackendNotFound), writing status only when it
 *     differs;
 *   - the data path: /kubesim/gateway/NS/GATEWAY/PATH sends the request to a backend of
 *     the first HTTPRoute attached to GATEWAY whose first rule's PathPrefix matches, chosen
 *     by the backends' weights divided by their greatest common divisor (request n of every
 *     round of sum-of-those requests goes to the backend whose cumulative weight covers n,
 *     so 50/50 alternates and 25/75 is 1 in 4: the split is exact over each round),
 *     through the same Service resolution as the service proxy; the answer carries
 *     X-Kubesim-Backend: SERVICE.
 * Store reads and writes happen outside ray.mu.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/api/server.h"
#include "kubesim/ray/internal.h"
#include "kubesim/store/store.h"

#define GW_CONTROLLER "kubesim.io/gateway-controller"
#define GW_POLL_MS 200

static bool cond_true(const cJSON *conds, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, conds)
        if (kobj_str(c, "type") && !strcmp(kobj_str(c, "type"), type))
            return kobj_str(c, "status") && !strcmp(kobj_str(c, "status"), "True");
    return false;
}

static cJSON *condition(const char *type, bool ok, const char *reason, long long gen, const char *now)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", ok ? "True" : "False");
    cJSON_AddStringToObject(c, "reason", reason);
    cJSON_AddStringToObject(c, "message", ok ? "kubesim" : "a backend Service does not exist");
    cJSON_AddNumberToObject(c, "observedGeneration", (double)gen);
    cJSON_AddStringToObject(c, "lastTransitionTime", now);
    return c;
}

static void patch_status(struct ray *r, const struct reg_resource *res, const char *ns,
                         const char *name, cJSON *status)
{
    cJSON *p = cJSON_CreateObject();
    struct store_status st = { 0 };
    struct store_write_opts w = { 0 };
    cJSON_AddItemToObject(p, "status", status);
    char *txt = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    if (txt)
        store_patch(r->store, res, ns, name, "status", PATCH_MERGE, txt, strlen(txt), &w,
                    NULL, NULL, &st);
    store_status_clear(&st);
    free(txt);
}

static bool service_exists(struct ray *r, const char *ns, const char *name)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    bool ok = name && store_get(r->store, r->r_svc, ns, name, &o, &st) == 0;
    if (o)
        store_obj_unref(o);
    store_status_clear(&st);
    return ok;
}

/* metadata.generation, 1 when unset. */
static long long generation(const cJSON *md)
{
    const cJSON *g = kobj_get(md, "generation");

    return cJSON_IsNumber(g) ? (long long)g->valuedouble : 1;
}

/* A Gateway is Accepted and Programmed, with one address. */
static void sync_gateway(struct ray *r, const struct reg_resource *gw, const cJSON *o,
                         const char *now)
{
    const cJSON *md = kobj_get(o, "metadata");
    const cJSON *conds = kobj_get(kobj_get(o, "status"), "conditions");
    if (cond_true(conds, "Accepted") && cond_true(conds, "Programmed"))
        return;
    long long gen = generation(md);
    cJSON *s = cJSON_CreateObject(), *cs = cJSON_AddArrayToObject(s, "conditions");
    cJSON *addrs = cJSON_AddArrayToObject(s, "addresses"), *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "type", "IPAddress");
    cJSON_AddStringToObject(a, "value", "10.250.0.1");
    cJSON_AddItemToArray(addrs, a);
    cJSON_AddItemToArray(cs, condition("Accepted", true, "Accepted", gen, now));
    cJSON_AddItemToArray(cs, condition("Programmed", true, "Programmed", gen, now));
    patch_status(r, gw, kobj_str(md, "namespace"), kobj_str(md, "name"), s);
}

/* An HTTPRoute has one status per parentRef: Accepted, and ResolvedRefs when every backend
 * Service exists. */
static void sync_route(struct ray *r, const struct reg_resource *hr, const cJSON *o,
                       const char *now)
{
    const cJSON *md = kobj_get(o, "metadata"), *rule, *b, *pr;
    const char *ns = kobj_str(md, "namespace");
    long long gen = generation(md);
    bool resolved = true;
    cJSON_ArrayForEach(rule, kobj_get(kobj_get(o, "spec"), "rules"))
        cJSON_ArrayForEach(b, kobj_get(rule, "backendRefs"))
            if (!service_exists(r, kobj_str(b, "namespace") ? kobj_str(b, "namespace") : ns,
                                kobj_str(b, "name")))
                resolved = false;
    /* up to date: one parent status per parentRef, of this generation and verdict */
    bool fresh = true;
    int nparents = 0;
    cJSON_ArrayForEach(pr, kobj_get(kobj_get(o, "spec"), "parentRefs"))
        nparents++;
    const cJSON *ps = kobj_get(kobj_get(o, "status"), "parents"), *p;
    if (cJSON_GetArraySize(ps) != nparents)
        fresh = false;
    cJSON_ArrayForEach(p, ps) {
        const cJSON *c, *conds = kobj_get(p, "conditions");
        if (!cond_true(conds, "Accepted") || cond_true(conds, "ResolvedRefs") != resolved)
            fresh = false;
        cJSON_ArrayForEach(c, conds)
            if (!cJSON_IsNumber(kobj_get(c, "observedGeneration")) ||
                (long long)kobj_get(c, "observedGeneration")->valuedouble != gen)
                fresh = false;
    }
    if (fresh)
        return;
    cJSON *s = cJSON_CreateObject(), *parents = cJSON_AddArrayToObject(s, "parents");
    cJSON_ArrayForEach(pr, kobj_get(kobj_get(o, "spec"), "parentRefs")) {
        cJSON *e = cJSON_CreateObject(), *cs;
        cJSON_AddItemToObject(e, "parentRef", cJSON_Duplicate(pr, true));
        cJSON_AddStringToObject(e, "controllerName", GW_CONTROLLER);
        cs = cJSON_AddArrayToObject(e, "conditions");
        cJSON_AddItemToArray(cs, condition("Accepted", true, "Accepted", gen, now));
        cJSON_AddItemToArray(cs, condition("ResolvedRefs", resolved,
                                           resolved ? "ResolvedRefs" : "BackendNotFound", gen, now));
        cJSON_AddItemToArray(parents, e);
    }
    patch_status(r, hr, ns, kobj_str(md, "name"), s);
}

/* Brings the status of every object of res, in all namespaces, up to date with sync. */
static void sync_all(struct ray *r, const struct reg_resource *res, const char *now,
                     void (*sync)(struct ray *, const struct reg_resource *, const cJSON *,
                                  const char *))
{
    struct store_list l = { 0 };
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };

    if (store_list(r->store, res, "", &lo, &l, &st) == 0)
        for (size_t i = 0; i < l.n; i++)
            sync(r, res, store_obj_json(l.items[i]), now);
    store_list_free(&l);
    store_status_clear(&st);
}

static void find_types(struct ray *r, const struct reg_resource **gw, const struct reg_resource **hr)
{
    const struct registry *reg = store_registry_rdlock(r->store);
    *gw = registry_find(reg, "gateway.networking.k8s.io", "v1", "gateways");
    *hr = registry_find(reg, "gateway.networking.k8s.io", "v1", "httproutes");
    store_registry_unlock(r->store);
}

static void *controller(void *arg)
{
    struct ray *r = arg;
    for (;;) {
        const struct reg_resource *gw, *hr;
        struct timespec ts;
        char now[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        find_types(r, &gw, &hr);
        if (gw)
            sync_all(r, gw, now, sync_gateway);
        if (hr)
            sync_all(r, hr, now, sync_route);
        pthread_mutex_lock(&r->mu);
        if (r->stopping) {
            r->threads--;
            pthread_cond_broadcast(&r->cv);
            pthread_mutex_unlock(&r->mu);
            return NULL;
        }
        util_deadline_ms(&ts, GW_POLL_MS);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        pthread_mutex_unlock(&r->mu);
    }
}

/* ---- the data path -------------------------------------------------------------------- */

struct gw_counter {
    char key[320];
    unsigned long n;
    UT_hash_handle hh;
};
static struct gw_counter *counters;   /* guarded by ray.mu */

static int on_gateway(void *arg, struct server_req *req)
{
    struct ray *r = arg;
    char ns[64], gwname[254], path[1024] = "/";
    const struct reg_resource *gw, *hr;
    const char *p = req->path + strlen("/kubesim/gateway/");
    int n = 0;
    if (sscanf(p, "%63[^/]/%253[^/]%n", ns, gwname, &n) < 2)
        return server_reply_status(req, 404, "NotFound", "want /kubesim/gateway/NS/GATEWAY/PATH");
    if (p[n])
        snprintf(path, sizeof(path), "%s", p + n);
    find_types(r, &gw, &hr);
    if (!gw || !hr)
        return server_reply_status(req, 404, "NotFound", "the Gateway API is not installed");
    struct store_list l = { 0 };
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };
    char svc[254] = "", port[16] = "";
    int rc = store_list(r->store, hr, ns, &lo, &l, &st);
    for (size_t i = 0; rc == 0 && i < l.n && !svc[0]; i++) {
        const cJSON *o = store_obj_json(l.items[i]), *pr, *rule, *b;
        bool attached = false;
        cJSON_ArrayForEach(pr, kobj_get(kobj_get(o, "spec"), "parentRefs"))
            if (kobj_str(pr, "name") && !strcmp(kobj_str(pr, "name"), gwname))
                attached = true;
        if (!attached)
            continue;
        rule = cJSON_GetArrayItem(kobj_get(kobj_get(o, "spec"), "rules"), 0);
        const char *prefix = kobj_str(kobj_get(cJSON_GetArrayItem(kobj_get(rule, "matches"), 0), "path"), "value");
        if (prefix && strncmp(path, prefix, strlen(prefix)))
            continue;
        long total = 0, g = 0;
        cJSON_ArrayForEach(b, kobj_get(rule, "backendRefs")) {
            const cJSON *w = kobj_get(b, "weight");
            long x = cJSON_IsNumber(w) ? (long)w->valuedouble : 1;
            total += x;
            for (long a = g, m = x; m; ) {   /* g = gcd(g, x) */
                long t = a % m;
                a = m;
                m = t;
                g = a;
            }
        }
        if (total <= 0 || g <= 0)
            break;
        total /= g;
        char key[320];
        struct gw_counter *c = NULL;
        snprintf(key, sizeof(key), "%s/%s", ns, gwname);
        pthread_mutex_lock(&r->mu);
        HASH_FIND_STR(counters, key, c);
        if (!c && (c = calloc(1, sizeof(*c)))) {
            snprintf(c->key, sizeof(c->key), "%s", key);
            HASH_ADD_STR(counters, key, c);
        }
        long pick = c ? (long)(c->n++ % (unsigned long)total) : 0;
        pthread_mutex_unlock(&r->mu);
        cJSON_ArrayForEach(b, kobj_get(rule, "backendRefs")) {
            const cJSON *w = kobj_get(b, "weight");
            pick -= (cJSON_IsNumber(w) ? (long)w->valuedouble : 1) / g;
            if (pick < 0) {
                snprintf(svc, sizeof(svc), "%s", kobj_str(b, "name") ? kobj_str(b, "name") : "");
                if (cJSON_IsNumber(kobj_get(b, "port")))
                    snprintf(port, sizeof(port), "%d", kobj_get(b, "port")->valueint);
                break;
            }
        }
    }
    store_list_free(&l);
    store_status_clear(&st);
    if (!svc[0])
        return server_reply_status(req, 404, "NotFound", "no HTTPRoute of this Gateway matches");
    struct ray_target t;
    struct ray_resp resp;
    ray__resolve_service(r, ns, svc, port, &t);
    server_reply_header(req, "X-Kubesim-Backend", svc);
    if (t.code)
        return server_reply_status(req, t.code, t.reason, t.message);
    /* a Gateway passes Authorization on (unlike the API server's proxy) */
    rc = ray__target_request(r, &t, req->method, path, req->body, req->body_len,
                             server_req_header(req, "Authorization"),
                             server_req_header(req, "X-Ray-Authorization"), &resp);
    if (rc < 0 || !resp.body) {
        free(resp.body);
        return server_reply_status(req, 503, "ServiceUnavailable", "error trying to reach the backend");
    }
    return server_reply_take(req, resp.code, resp.ctype, resp.body, resp.len);
}

int ray__gateway_install(struct ray *r)
{
    int rc = server_add_route(r->srv, "/kubesim/gateway/", on_gateway, r);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&r->mu);
    r->threads++;
    pthread_mutex_unlock(&r->mu);
    if (util_thread_detached(controller, r) < 0) {
        pthread_mutex_lock(&r->mu);
        r->threads--;
        pthread_mutex_unlock(&r->mu);
        rc = -EAGAIN;
    }
    return rc < 0 ? rc : 0;
}

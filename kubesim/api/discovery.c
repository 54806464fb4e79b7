/*
 * discovery.c - the documents kubesim renders from its registry rather than
 * from stored objects: /version, health checks, legacy and aggregated discovery,
 * /apis/G, and OpenAPI v2 (protobuf) / v3 (JSON, with ETags). The bodies come
 * from kubesim/present/present.h; this file picks the document and the Content-Type, which
 * is what clients decide on (kubectl 1.33 recognises aggregated discovery only
 * by its Content-Type, kubectl 1.20 wants v2 as application/octet-stream).
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/present/present.h"
#include "kubesim/store/store.h"

static int reply_405(struct server_req *req)
{
    return server_reply_status(req, 405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource");
}

static int reply_404(struct server_req *req)
{
    return server_reply_status(req, 404, "NotFound",
                               "the server could not find the requested resource");
}

static int reply_500(struct server_req *req, int rc)
{
    char msg[200];

    snprintf(msg, sizeof(msg), "an error on the server (\"%s\") has prevented the request "
             "from succeeding", strerror(-rc));
    return server_reply_status(req, 500, "InternalError", msg);
}

/* FNV-1a over the body, as an ETag: clients only compare it for equality. */
static void etag_of(const char *p, size_t n, char out[24])
{
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    snprintf(out, 24, "\"%016llX\"", (unsigned long long)h);
}

static int reply_with_etag(struct server_req *req, const char *ctype, const char *body,
                           size_t len, const char *etag)
{
    const char *inm = server_req_header(req, "If-None-Match");

    server_reply_header(req, "ETag", etag);
    if (inm && strcmp(inm, etag) == 0)
        return server_reply(req, 304, NULL, "", 0);
    return server_reply(req, 200, ctype, body, len);
}

typedef int (*render_fn)(const struct registry *r, struct buf *out);

/* Renders a registry document once per registry generation (the OpenAPI documents
 * carry every CRD schema: ~MBs with KubeRay, and kubectl 1.20 fetches v2 on every
 * apply) and replies with it. */
static int reply_cached(struct server_req *req, struct doc_cache *c, render_fn render,
                        const char *ctype)
{
    struct server *s = req->srv;
    const struct registry *reg;
    unsigned long gen;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    reg = store_registry_rdlock(s->store);
    gen = registry_generation(reg);
    if (!c->valid || c->gen != gen) {
        buf_reset(&c->body);
        rc = render(reg, &c->body);
        c->valid = rc == 0;
        c->gen = gen;
        if (rc == 0)
            etag_of(c->body.data ? c->body.data : "", c->body.len, c->etag);
    }
    store_registry_unlock(s->store);
    if (rc == 0)
        rc = reply_with_etag(req, ctype, c->body.data ? c->body.data : "", c->body.len,
                             c->etag);
    pthread_mutex_unlock(&s->mu);
    if (rc == -ENOENT)
        return reply_404(req);
    if (rc < 0)
        return reply_500(req, rc);
    return 0;
}

/* /apis/G: an APIGroup, cut out of the APIGroupList (present.h has no separate
 * renderer, and the list is small). */
static int render_group(const struct registry *reg, const char *group, struct buf *out)
{
    struct buf all = { 0 };
    cJSON *doc = NULL, *groups, *g, *copy;
    char *txt = NULL;
    int rc;

    rc = present_api_groups(reg, &all);
    if (rc < 0)
        goto out;
    rc = -ENOENT;
    doc = cJSON_ParseWithLength(all.data, all.len);
    groups = doc ? cJSON_GetObjectItemCaseSensitive(doc, "groups") : NULL;
    cJSON_ArrayForEach(g, groups) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, group) != 0)
            continue;
        copy = cJSON_Duplicate(g, true);
        if (!copy) {
            rc = -ENOMEM;
            goto out;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "kind");
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "apiVersion");
        cJSON_AddStringToObject(copy, "kind", "APIGroup");
        cJSON_AddStringToObject(copy, "apiVersion", "v1");
        txt = cJSON_PrintUnformatted(copy);
        cJSON_Delete(copy);
        rc = txt ? buf_puts(out, txt) : -ENOMEM;
        break;
    }
out:
    free(txt);
    cJSON_Delete(doc);
    buf_free(&all);
    return rc;
}

static int handle_registry_doc(struct server_req *req)
{
    struct server *s = req->srv;
    const struct route *r = req->route;
    const struct registry *reg;
    struct buf b = { 0 };
    const char *ctype = "application/json";
    bool aggregated = req->accept.discovery != ROUTE_DISC_LEGACY;
    bool v2beta1 = req->accept.discovery == ROUTE_DISC_V2BETA1;
    char addr[300];
    int rc;

    snprintf(addr, sizeof(addr), "%s:%d", s->host, s->port);
    reg = store_registry_rdlock(s->store);
    switch (r->kind) {
    case ROUTE_API:
        if (aggregated) {
            rc = present_aggregated(reg, true, v2beta1, &b);
            ctype = v2beta1 ? PRESENT_AGGREGATED_V2BETA1 : PRESENT_AGGREGATED_V2;
        } else {
            rc = present_api_versions(reg, addr, &b);
        }
        break;
    case ROUTE_APIS:
        if (aggregated) {
            rc = present_aggregated(reg, false, v2beta1, &b);
            ctype = v2beta1 ? PRESENT_AGGREGATED_V2BETA1 : PRESENT_AGGREGATED_V2;
        } else {
            rc = present_api_groups(reg, &b);
        }
        break;
    case ROUTE_GROUP:
        rc = render_group(reg, r->group, &b);
        break;
    case ROUTE_GROUP_VERSION:
        rc = present_resource_list(reg, r->group, r->version, &b);
        break;
    case ROUTE_OPENAPI_V3_PATH:
        rc = present_openapi_v3_path(reg, r->oapi_path, &b);
        break;
    default:
        rc = -ENOENT;
        break;
    }
    store_registry_unlock(s->store);

    if (rc == -ENOENT) {
        rc = reply_404(req);
    } else if (rc < 0) {
        rc = reply_500(req, rc);
    } else if (r->kind == ROUTE_OPENAPI_V3_PATH) {
        char etag[24];
        etag_of(b.data ? b.data : "", b.len, etag);
        rc = reply_with_etag(req, "application/json", b.data ? b.data : "", b.len, etag);
    } else {
        size_t len = b.len;
        rc = server_reply_take(req, 200, ctype, buf_steal(&b), len);
    }
    buf_free(&b);
    return rc;
}

int api__handle_discovery(struct server_req *req)
{
    struct server *s = req->srv;
    struct buf b = { 0 };
    int rc;

    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
        return reply_405(req);
    req->verb = "get";
    switch (req->route->kind) {
    case ROUTE_HEALTH:
        return server_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
    case ROUTE_VERSION:
        rc = present_version(&b);
        if (rc < 0) {
            buf_free(&b);
            return reply_500(req, rc);
        }
        return server_reply_take(req, 200, "application/json", b.data, b.len);
    case ROUTE_OPENAPI_V2:
        return reply_cached(req, &s->openapi_v2, present_openapi_v2, "application/octet-stream");
    case ROUTE_OPENAPI_V3:
        return reply_cached(req, &s->openapi_v3_root, present_openapi_v3_root,
                            "application/json");
    default:
        return handle_registry_doc(req);
    }
}

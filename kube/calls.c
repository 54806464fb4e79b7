/*
 * calls.c - the REST verbs (get, list, create, update, update_status, patch,
 * delete, delete_collection, raw) as paths, query strings and bodies handed
 * to the transport in client.c, plus the well-known resource descriptors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "kube/internal.h"

const struct kube_resource KUBE_RES_PODS = { "", "v1", "pods", 1 };
const struct kube_resource KUBE_RES_SERVICES = { "", "v1", "services", 1 };
const struct kube_resource KUBE_RES_EVENTS = { "", "v1", "events", 1 };
const struct kube_resource KUBE_RES_NAMESPACES = { "", "v1", "namespaces", 0 };
const struct kube_resource KUBE_RES_SECRETS = { "", "v1", "secrets", 1 };
const struct kube_resource KUBE_RES_JOBS = { "batch", "v1", "jobs", 1 };
const struct kube_resource KUBE_RES_LEASES = { "coordination.k8s.io", "v1", "leases", 1 };
const struct kube_resource KUBE_RES_RAYCLUSTERS = { "ray.io", "v1", "rayclusters", 1 };
const struct kube_resource KUBE_RES_RAYJOBS = { "ray.io", "v1", "rayjobs", 1 };
const struct kube_resource KUBE_RES_RAYSERVICES = { "ray.io", "v1", "rayservices", 1 };

static int kube__append_escaped(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[3];
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            if (buf_append(b, p, 1) < 0)
                return -ENOMEM;
            continue;
        }
        e[0] = '%';
        e[1] = hex[*p >> 4];
        e[2] = hex[*p & 15];
        if (buf_append(b, e, 3) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Path segments are DNS labels in practice, but callers pass outside data. */
static int seg_ok(const char *s)
{
    return s != NULL && s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

char *kube_resource_path(const struct kube_resource *r, const char *ns, const char *name,
                         const char *sub)
{
    struct buf b = { 0 };
    int rc = 0;

    if (r == NULL || !seg_ok(r->version) || !seg_ok(r->plural) || (name && !seg_ok(name)) ||
        (r->namespaced && ns != NULL && !seg_ok(ns)) || (sub != NULL && !seg_ok(sub)))
        return NULL;
    /* A namespaced object always lives in a namespace; only collections span all. */
    if (r->namespaced && name != NULL && ns == NULL)
        return NULL;
    if (r->group == NULL || r->group[0] == '\0')
        rc |= buf_printf(&b, "/api/%s", r->version);
    else
        rc |= buf_printf(&b, "/apis/%s/%s", r->group, r->version);
    if (r->namespaced && ns != NULL) {
        rc |= buf_puts(&b, "/namespaces/");
        rc |= kube__append_escaped(&b, ns);
    }
    rc |= buf_puts(&b, "/");
    rc |= buf_puts(&b, r->plural);
    if (name != NULL) {
        rc |= buf_puts(&b, "/");
        rc |= kube__append_escaped(&b, name);
    }
    if (sub != NULL) {
        rc |= buf_puts(&b, "/");
        rc |= buf_puts(&b, sub);
    }
    if (rc != 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static int add_param(struct buf *b, const char *key, const char *val)
{
    if (val == NULL || val[0] == '\0')
        return 0;
    if (buf_puts(b, (b->data && strchr(b->data, '?')) ? "&" : "?") < 0 || buf_puts(b, key) < 0 ||
        buf_puts(b, "=") < 0)
        return -ENOMEM;
    return kube__append_escaped(b, val);
}

static int add_long(struct buf *b, const char *key, long v)
{
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%ld", v);
    return add_param(b, key, tmp);
}

int kube__append_list_query(struct buf *b, const struct kube_list_opts *o, int watch,
                            int allow_bookmarks, int send_initial_events)
{
    int rc = 0;
    if (watch)
        rc |= add_param(b, "watch", "1");
    if (allow_bookmarks)
        rc |= add_param(b, "allowWatchBookmarks", "true");
    if (send_initial_events)
        rc |= add_param(b, "sendInitialEvents", "true");
    if (o != NULL) {
        rc |= add_param(b, "labelSelector", o->label_selector);
        rc |= add_param(b, "fieldSelector", o->field_selector);
        if (o->limit > 0)
            rc |= add_long(b, "limit", o->limit);
        rc |= add_param(b, "continue", o->continue_token);
        rc |= add_param(b, "resourceVersion", o->resource_version);
        rc |= add_param(b, "resourceVersionMatch", o->resource_version_match);
        if (o->timeout_seconds > 0)
            rc |= add_long(b, "timeoutSeconds", o->timeout_seconds);
    }
    return rc ? -ENOMEM : 0;
}

/* Runs method on path (owned by the caller) with the given body. */
static int run(struct kube_client *c, const struct kube_resource *r, const char *method,
               const char *path, const char *content_type, const char *body, size_t body_len,
               int idempotent, struct kube_result *res)
{
    struct kube_http rq = {
        .method = method, .path = path, .content_type = content_type, .body = body,
        .body_len = body_len, .idempotent = idempotent, .parse_json = 1, .res = r,
    };
    if (path == NULL) {
        memset(res, 0, sizeof(*res));
        kube__status_from_code(&res->status, 0, "invalid resource, namespace or name");
        return -EINVAL;
    }
    return kube__do(c, &rq, res);
}

int kube_get(struct kube_client *c, const struct kube_resource *r, const char *ns,
             const char *name, struct kube_result *res)
{
    char *path = name != NULL ? kube_resource_path(r, ns, name, NULL) : NULL;
    int rc = run(c, r, "GET", path, NULL, NULL, 0, 1, res);
    free(path);
    return rc;
}

int kube_list(struct kube_client *c, const struct kube_resource *r, const char *ns,
              const struct kube_list_opts *o, struct kube_result *res)
{
    struct buf b = { 0 };
    char *path = kube_resource_path(r, ns, NULL, NULL);
    int rc;

    if (path != NULL && (buf_puts(&b, path) < 0 || kube__append_list_query(&b, o, 0, 0, 0) < 0)) {
        free(path);
        buf_free(&b);
        return -ENOMEM;
    }
    rc = run(c, r, "GET", path ? b.data : NULL, NULL, NULL, 0, 1, res);
    free(path);
    buf_free(&b);
    return rc;
}

static const char *obj_meta(const cJSON *obj, const char *key)
{
    const char *v = kobj_meta_str(obj, key);
    return v && *v ? v : NULL;
}

static int create(struct kube_client *c, const struct kube_resource *r, const char *ns,
                  const cJSON *obj, int once, struct kube_ticket *t, struct kube_result *res)
{
    char *path, *body;
    int rc;

    if (ns == NULL)
        ns = obj_meta(obj, "namespace");
    /* POST to the all-namespaces collection is not a thing: refuse locally. */
    path = (r == NULL || !r->namespaced || ns != NULL) ? kube_resource_path(r, ns, NULL, NULL)
                                                        : NULL;
    body = cJSON_PrintUnformatted(obj);
    if (body == NULL || path == NULL) {
        if (t != NULL)
            t->taken = 0;   /* spent on a call refused locally, as on one sent */
    }
    if (body == NULL) {
        free(path);
        return -ENOMEM;
    }
    if (path == NULL) {
        free(body);
        return run(c, r, "POST", NULL, NULL, NULL, 0, 0, res);   /* the -EINVAL Status */
    }
    /* POST is not idempotent: a retry after a lost response would 409. */
    struct kube_http rq = {
        .method = "POST", .path = path, .content_type = "application/json", .body = body,
        .body_len = strlen(body), .once = once, .parse_json = 1, .res = r, .ticket = t,
    };
    rc = kube__do(c, &rq, res);
    free(body);
    free(path);
    return rc;
}

int kube_create(struct kube_client *c, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res)
{
    return create(c, r, ns, obj, 0, NULL, res);
}

int kube_create_once(struct kube_client *c, const struct kube_resource *r, const char *ns,
                     const cJSON *obj, struct kube_ticket *t, struct kube_result *res)
{
    return create(c, r, ns, obj, 1, t, res);
}

static int put(struct kube_client *c, const struct kube_resource *r, const char *ns,
               const cJSON *obj, const char *sub, struct kube_result *res)
{
    const char *name = obj_meta(obj, "name");
    char *path, *body;
    int rc;

    if (ns == NULL)
        ns = obj_meta(obj, "namespace");
    path = name != NULL ? kube_resource_path(r, ns, name, sub) : NULL;
    body = cJSON_PrintUnformatted(obj);
    if (body == NULL) {
        free(path);
        return -ENOMEM;
    }
    /* With a resourceVersion a repeated PUT cannot apply twice (it 409s). */
    rc = run(c, r, "PUT", path, "application/json", body, strlen(body),
             obj_meta(obj, "resourceVersion") != NULL, res);
    free(body);
    free(path);
    return rc;
}

int kube_update(struct kube_client *c, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res)
{
    return put(c, r, ns, obj, NULL, res);
}

int kube_update_status(struct kube_client *c, const struct kube_resource *r, const char *ns,
                       const cJSON *obj, struct kube_result *res)
{
    return put(c, r, ns, obj, "status", res);
}

int kube_patch(struct kube_client *c, const struct kube_resource *r, const char *ns,
               const char *name, const char *patch, size_t patch_len,
               const struct kube_patch_opts *o, struct kube_result *res)
{
    static const char *const types[] = {
        [KUBE_PATCH_MERGE] = "application/merge-patch+json",
        [KUBE_PATCH_JSON] = "application/json-patch+json",
        [KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
        [KUBE_PATCH_APPLY] = "application/apply-patch+yaml",
    };
    struct kube_patch_opts def = { KUBE_PATCH_MERGE, NULL, 0, NULL };
    struct buf b = { 0 };
    char *path;
    int rc;

    if (o == NULL)
        o = &def;
    memset(res, 0, sizeof(*res));
    if ((unsigned)o->type > KUBE_PATCH_APPLY || patch == NULL ||
        (o->type == KUBE_PATCH_APPLY && (o->field_manager == NULL || !o->field_manager[0]))) {
        kube__status_from_code(&res->status, 0, "bad patch options (apply needs a fieldManager)");
        return -EINVAL;
    }
    path = name != NULL ? kube_resource_path(r, ns, name, o->subresource) : NULL;
    if (path != NULL) {
        rc = buf_puts(&b, path);
        rc |= add_param(&b, "fieldManager", o->field_manager);
        if (o->type == KUBE_PATCH_APPLY && o->force)
            rc |= add_param(&b, "force", "true");
        if (rc != 0) {
            free(path);
            buf_free(&b);
            return -ENOMEM;
        }
    }
    rc = run(c, r, "PATCH", path ? b.data : NULL, types[o->type], patch, patch_len, 0, res);
    free(path);
    buf_free(&b);
    return rc;
}

static char *delete_body(const struct kube_delete_opts *o)
{
    cJSON *d = cJSON_CreateObject();
    char *s = NULL;
    if (d == NULL)
        return NULL;
    cJSON_AddStringToObject(d, "kind", "DeleteOptions");
    cJSON_AddStringToObject(d, "apiVersion", "v1");
    if (o != NULL) {
        if (o->propagation != NULL)
            cJSON_AddStringToObject(d, "propagationPolicy", o->propagation);
        if (o->grace_seconds >= 0)
            cJSON_AddNumberToObject(d, "gracePeriodSeconds", (double)o->grace_seconds);
        if (o->precondition_uid != NULL || o->precondition_rv != NULL) {
            cJSON *p = cJSON_AddObjectToObject(d, "preconditions");
            if (p != NULL && o->precondition_uid != NULL)
                cJSON_AddStringToObject(p, "uid", o->precondition_uid);
            if (p != NULL && o->precondition_rv != NULL)
                cJSON_AddStringToObject(p, "resourceVersion", o->precondition_rv);
        }
    }
    s = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    return s;
}

int kube_delete(struct kube_client *c, const struct kube_resource *r, const char *ns,
                const char *name, const struct kube_delete_opts *o, struct kube_result *res)
{
    char *path = name != NULL ? kube_resource_path(r, ns, name, NULL) : NULL;
    char *body = delete_body(o);
    int rc;

    if (body == NULL) {
        free(path);
        return -ENOMEM;
    }
    rc = run(c, r, "DELETE", path, "application/json", body, strlen(body), 1, res);
    free(body);
    free(path);
    return rc;
}

int kube_delete_collection(struct kube_client *c, const struct kube_resource *r,
                           const char *ns, const struct kube_list_opts *sel,
                           const struct kube_delete_opts *o, struct kube_result *res)
{
    struct buf b = { 0 };
    char *path = kube_resource_path(r, ns, NULL, NULL);
    char *body = delete_body(o);
    int rc = -ENOMEM;

    if (body == NULL)
        goto out;
    if (path != NULL && (buf_puts(&b, path) < 0 || kube__append_list_query(&b, sel, 0, 0, 0) < 0))
        goto out;
    rc = run(c, r, "DELETE", path ? b.data : NULL, "application/json", body, strlen(body), 1, res);
out:
    free(body);
    free(path);
    buf_free(&b);
    return rc;
}

int kube_raw(struct kube_client *c, const struct kube_request *req, struct kube_result *res)
{
    struct kube_http rq = { 0 };

    memset(res, 0, sizeof(*res));
    if (req == NULL || req->method == NULL || req->path == NULL || req->path[0] != '/') {
        kube__status_from_code(&res->status, 0, "raw request needs a method and a /path");
        return -EINVAL;
    }
    rq.method = req->method;
    rq.path = req->path;
    rq.body = req->body;
    rq.body_len = req->body_len;
    rq.content_type = req->content_type != NULL ? req->content_type : "application/json";
    rq.idempotent = req->idempotent;
    rq.parse_json = req->parse_json;
    rq.want_raw = 1;
    rq.max_response = req->max_response_bytes;
    rq.timeout_ms = req->timeout_ms;
    rq.extra_header = req->extra_header;
    return kube__do(c, &rq, res);
}

int kube_list_each(struct kube_client *c, const struct kube_resource *r, const char *ns,
                   const struct kube_list_opts *o, kube_page_fn fn, void *arg, char *rv,
                   size_t rvlen)
{
    struct kube_list_opts lo = { 0 };
    struct kube_result res = { 0 };
    char *cont = NULL;
    int rc;

    if (o != NULL)
        lo = *o;
    if (lo.limit <= 0)
        lo.limit = 500; /* kubectl's and client-go's pager chunk */
    for (;;) {
        lo.continue_token = cont;
        rc = kube_list(c, r, ns, &lo, &res);
        if (rc < 0)
            break;
        /* Later pages are served from the first page's snapshot: only the
         * continue token may be sent with them. */
        lo.resource_version = NULL;
        lo.resource_version_match = NULL;
        if (rv != NULL && rvlen > 0)
            snprintf(rv, rvlen, "%s", res.resource_version);
        rc = fn(arg, res.body);
        if (rc != 0)
            break;
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(res.body, "metadata");
        const cJSON *next = cJSON_GetObjectItemCaseSensitive(md, "continue");
        free(cont);
        cont = NULL;
        if (!cJSON_IsString(next) || next->valuestring[0] == '\0')
            break;
        if ((cont = strdup(next->valuestring)) == NULL) {
            rc = -ENOMEM;
            break;
        }
        kube_result_release(&res);
    }
    kube_result_release(&res);
    free(cont);
    return rc;
}

/*
 * resource.c - the resource verbs of kubesim's HTTP layer: get, list,
 * create, update, patch, delete and deletecollection on
 * /api/v1/... and /apis/G/V/... paths (watches go to watch.c).
 *
 * It turns query parameters and bodies into store.h calls and the results into
 * HTTP answers (codes, Status objects, Warning headers, Tables); every rule about
 * the objects themselves lives in the store.
 */
#include "kobj/kobj.h"
#include "kubesim/api/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kubesim/present/present.h"
#include "kubesim/schema/selector.h"
#include "kubesim/store/store.h"
#include "kobj/yamljson.h"

#define JSON "application/json"

static const struct reg_resource *api__find_resource(struct server *s, const char *group,
                                              const char *version, const char *plural)
{
    const struct reg_resource *res;
    const struct registry *reg = store_registry_rdlock(s->store);

    res = registry_find(reg, group, version, plural);
    store_registry_unlock(s->store);
    return res;
}

static int reply_bad_request(struct server_req *req, const char *msg)
{
    return server_reply_status(req, 400, "BadRequest", msg);
}

/* Warning: 299 - "text" headers from the store's warnings (quotes escaped). */
static void add_warnings(struct server_req *req, const cJSON *warnings)
{
    const cJSON *w;

    cJSON_ArrayForEach(w, warnings) {
        struct buf b = { 0 };
        if (!cJSON_IsString(w))
            continue;
        buf_puts(&b, "299 - \"");
        for (const char *p = w->valuestring; *p && b.len < 2000; p++) {
            if (*p == '"' || *p == '\\')
                buf_append(&b, "\\", 1);
            if ((unsigned char)*p >= 0x20)
                buf_append(&b, p, 1);
        }
        if (buf_puts(&b, "\"") == 0)
            server_reply_header(req, "Warning", b.data);
        buf_free(&b);
    }
}

/* o's JSON text as the body (a snapshot kept compressed is decompressed first). */
static int reply_obj_text(struct server_req *req, int code, const struct store_obj *o)
{
    const char *text = store_obj_text(o);

    if (!text)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    return server_reply(req, code, JSON, text, o->len);
}

static int reply_obj(struct server_req *req, int code, struct store_obj *o)
{
    int rc;

    if (req->accept.table) {
        struct buf b = { 0 };
        char rv[24];
        store_tree_scope_begin();   /* the tree is read for this table only */
        const cJSON *items[1] = { store_obj_json(o) };
        snprintf(rv, sizeof(rv), "%llu", (unsigned long long)o->rv);
        rc = present_table(o->res, items, 1, rv, NULL, true, time(NULL), &b);
        if (rc == 0)
            rc = api__table_include(&b, 0, items, 1, req->query->include_object);
        store_tree_scope_end();
        if (rc == 0) {
            size_t len = b.len;
            rc = server_reply_take(req, code, JSON, buf_steal(&b), len);
        }
        buf_free(&b);
        if (rc == 0)
            return 0;
    }
    return reply_obj_text(req, code, o);
}

static int reply_json_tree(struct server_req *req, int code, cJSON *tree)
{
    char *txt = cJSON_PrintUnformatted(tree);

    cJSON_Delete(tree);
    if (!txt)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    return server_reply_take(req, code, JSON, txt, strlen(txt));
}

enum body_media { BODY_JSON, BODY_YAML, BODY_PROTOBUF, BODY_UNSUPPORTED };

/* The media type of a request body: JSON (also when no Content-Type is given, as
 * the apiserver assumes), YAML, protobuf (decoded for the few kinds kubectl 1.32+
 * generators send that way, see proto.c), or anything else (415). */
static enum body_media body_media(const char *ct)
{
    size_t n = strcspn(ct, ";");

    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    while (n > 0 && (*ct == ' ' || *ct == '\t')) {
        ct++;
        n--;
    }
    if (n == 0 || (n == 16 && strncasecmp(ct, "application/json", 16) == 0))
        return BODY_JSON;
    if ((n == 16 && strncasecmp(ct, "application/yaml", 16) == 0) ||
        (n == 9 && strncasecmp(ct, "text/yaml", 9) == 0))
        return BODY_YAML;
    if (n == 35 && strncasecmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0)
        return BODY_PROTOBUF;
    return BODY_UNSUPPORTED;
}

static int reply_unsupported_body(struct server_req *req)
{
    char msg[400];

    snprintf(msg, sizeof(msg), "the body of the request was in an unknown format - accepted "
             "media types include: application/json, application/yaml (kubesim does not "
             "decode %.64s bodies)", req->content_type);
    return server_reply_status(req, 415, "UnsupportedMediaType", msg);
}

/* Parses a request body that must be a JSON (or YAML) object; on failure replies
 * 400 (malformed) or 415 (unsupported media type) and returns NULL. */
static cJSON *parse_body_object(struct server_req *req)
{
    const char *end = NULL;
    cJSON *o = NULL;
    char msg[300];
    enum body_media media = body_media(req->content_type);

    if (media == BODY_UNSUPPORTED) {
        reply_unsupported_body(req);
        return NULL;
    }
    if (media == BODY_PROTOBUF) {
        char err[200];
        int rc = api__proto_decode(req->body, req->body_len, &o, err, sizeof(err));
        if (rc == -EPROTONOSUPPORT) {
            server_reply_status(req, 415, "UnsupportedMediaType", err);
            return NULL;
        }
        if (rc < 0) {
            reply_bad_request(req, err);
            return NULL;
        }
    } else if (media == BODY_YAML) {
        char err[200];
        if (yamljson_parse_one(req->body, req->body_len, &o, err, sizeof(err)) < 0) {
            snprintf(msg, sizeof(msg), "couldn't get version/kind; %s", err);
            reply_bad_request(req, msg);
            return NULL;
        }
    } else {
        o = cJSON_ParseWithLengthOpts(req->body, req->body_len, &end, false);
    }
    if (!o) {
        size_t off = end && end >= req->body ? (size_t)(end - req->body) : 0;
        unsigned char c = off < req->body_len ? (unsigned char)req->body[off] : 0;
        if (req->body_len == 0)
            snprintf(msg, sizeof(msg), "the request body is empty; an object is required");
        else if (c >= 0x20 && c < 0x7f)
            snprintf(msg, sizeof(msg), "couldn't get version/kind; json parse error: invalid "
                     "character '%c' looking for beginning of value (offset %zu)", c, off);
        else
            snprintf(msg, sizeof(msg), "couldn't get version/kind; json parse error: "
                     "unexpected end of JSON input (offset %zu)", off);
        reply_bad_request(req, msg);
        return NULL;
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        reply_bad_request(req, "couldn't get version/kind; json parse error: json: cannot "
                          "unmarshal non-object into Go value of type struct");
        return NULL;
    }
    return o;
}

/* ---- write options ------------------------------------------------------------ */

struct write_ctx {
    struct store_write_opts w;
    char manager[129];
};

/* Fills w from the query; replies 400/422 and returns -EINVAL on bad options. */
static int write_opts(struct server_req *req, struct write_ctx *c)
{
    const struct route_query *q = req->query;
    const char *fv = q->field_validation;

    memset(c, 0, sizeof(*c));
    if (q->field_manager) {
        if (strlen(q->field_manager) > 128) {
            server_reply_status(req, 422, "Invalid", "fieldManager: Invalid value: "
                                "must be no more than 128 characters");
            return -EINVAL;
        }
        snprintf(c->manager, sizeof(c->manager), "%s", q->field_manager);
    } else {
        route_default_manager(req->user_agent, c->manager);
    }
    if (fv && *fv && strcmp(fv, "Strict") != 0 && strcmp(fv, "Warn") != 0 &&
        strcmp(fv, "Ignore") != 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "fieldValidation: Unsupported value: \"%.64s\": supported "
                 "values: \"Ignore\", \"Strict\", \"Warn\"", fv);
        reply_bad_request(req, msg);
        return -EINVAL;
    }
    c->w.field_manager = c->manager;
    c->w.field_validation = fv && *fv ? fv : NULL;
    c->w.dry_run = q->dry_run;
    c->w.force = q->force;
    c->w.warnings = cJSON_CreateArray();
    return 0;
}

static void write_done(struct write_ctx *c)
{
    cJSON_Delete(c->w.warnings);
}

/* ---- list ------------------------------------------------------------------------ */

struct list_ctx {
    struct store_list_opts lo;
    struct sel *labels;
    struct fsel *fields;
};

static int list_opts(struct server_req *req, struct list_ctx *c)
{
    const struct route_query *q = req->query;
    char err[300], msg[400];

    memset(c, 0, sizeof(*c));
    if (sel_parse(q->label_selector, &c->labels, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "unable to parse requirement: %s", err);
        if (strncmp(err, "unable to parse", 15) == 0)
            snprintf(msg, sizeof(msg), "%s", err);
        reply_bad_request(req, msg);
        return -EINVAL;
    }
    if (fsel_parse(q->field_selector, &c->fields, err, sizeof(err)) < 0) {
        reply_bad_request(req, err);
        return -EINVAL;
    }
    c->lo.labels = c->labels;
    c->lo.fields = c->fields;
    c->lo.limit = q->limit;
    c->lo.continue_token = q->continue_token && *q->continue_token ? q->continue_token : NULL;
    c->lo.resource_version = q->resource_version;
    c->lo.rv_match = q->rv_match && *q->rv_match ? q->rv_match : NULL;
    return 0;
}

static void list_done(struct list_ctx *c)
{
    sel_free(c->labels);
    fsel_free(c->fields);
}

/* The FooList's opening, up to and with `"items":[`. */
static int render_list_head(const struct reg_resource *res, const struct store_list *l,
                            struct buf *b)
{
    char gv[300];
    int rc;

    api__api_version(res, gv, sizeof(gv));
    rc = buf_printf(b, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%llu\"",
                    res->list_kind, gv, (unsigned long long)l->rv);
    if (l->continue_token) {
        rc |= buf_puts(b, ",\"continue\":");
        rc |= buf_append_json_string(b, l->continue_token);
        if (l->remaining >= 0)
            rc |= buf_printf(b, ",\"remainingItemCount\":%ld", l->remaining);
    }
    rc |= buf_puts(b, "},\"items\":[");
    return rc ? -ENOMEM : 0;
}

/* Renders l as a FooList (items spliced from the stored serialisations). */
static int render_list(const struct reg_resource *res, const struct store_list *l,
                       struct buf *b)
{
    int rc = render_list_head(res, l, b);

    for (size_t i = 0; i < l->n; i++) {
        if (i)
            rc |= buf_puts(b, ",");
        rc |= store_obj_text_append(l->items[i], b);
    }
    return rc | buf_puts(b, "]}");
}

static int render_list_table(const struct reg_resource *res, const struct store_list *l,
                             const char *include, struct buf *b)
{
    const cJSON **items = NULL;
    char rv[24];
    int rc;

    if (l->n && !(items = calloc(l->n, sizeof(*items))))
        return -ENOMEM;
    /* a table of every Pod must not leave a tree on every Pod */
    store_tree_scope_begin();
    for (size_t i = 0; i < l->n; i++)
        items[i] = store_obj_json(l->items[i]);
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)l->rv);
    rc = present_table(res, items, l->n, rv, l->continue_token, true, time(NULL), b);
    if (rc == 0)
        rc = api__table_include(b, 0, items, l->n, include);
    store_tree_scope_end();
    free(items);
    return rc;
}

/*
 * A LIST whose JSON exceeds this is rendered while it is sent, one item at a time, not
 * into one buffer first: the text of 30,000 Pods is about 300 MB, and a LIST of them
 * was the highest point of kubesim's memory at 10,000 RayClusters. The length is known
 * beforehand (each item's length is stored), so the answer keeps its Content-Length.
 */
#define LIST_STREAM_MIN (256u << 10)

struct list_stream {
    struct store_list l;         /* taken over from the handler */
    struct buf pend;             /* rendered, not all sent yet */
    size_t off;                  /* sent of pend */
    size_t next;                 /* the next item to render */
    bool ended;                  /* the closing "]}" rendered */
};

static void list_stream_free(void *arg)
{
    struct list_stream *ls = arg;

    store_list_free(&ls->l);
    buf_free(&ls->pend);
    free(ls);
}

/* Renders the next piece of the list into pend: an item (after a comma), then the end. */
static int list_stream_more(struct list_stream *ls)
{
    buf_reset(&ls->pend);
    ls->off = 0;
    if (ls->next < ls->l.n) {
        if (ls->next && buf_puts(&ls->pend, ","))
            return -ENOMEM;
        return store_obj_text_append(ls->l.items[ls->next++], &ls->pend);
    }
    if (ls->ended)
        return 1;
    ls->ended = true;
    return buf_puts(&ls->pend, "]}");
}

static ssize_t list_stream_read(void *arg, char *out, size_t max)
{
    struct list_stream *ls = arg;
    size_t n = 0;

    while (n < max) {
        size_t k;
        int rc;
        if (ls->off == ls->pend.len && (rc = list_stream_more(ls)) != 0) {
            if (rc > 0)
                break;   /* all sent */
            return SERVER_STREAM_ABORT;
        }
        k = ls->pend.len - ls->off < max - n ? ls->pend.len - ls->off : max - n;
        memcpy(out + n, ls->pend.data + ls->off, k);
        ls->off += k;
        n += k;
    }
    return n ? (ssize_t)n : SERVER_STREAM_END;
}

/* Sends l (taken over: *l is emptied) as a FooList rendered while it is sent, when it is
 * large. 1 when it replied, 0 when the list is small enough to render at once (l left
 * alone), or a negative errno (nothing sent). */
static int reply_list_streamed(struct server_req *req, const struct reg_resource *res,
                               struct store_list *l)
{
    struct list_stream *ls;
    uint64_t size = 2 + (l->n ? l->n - 1 : 0);   /* "]}" and the commas */

    for (size_t i = 0; i < l->n; i++)
        size += l->items[i]->len;
    if (size < LIST_STREAM_MIN)
        return 0;
    if (!(ls = calloc(1, sizeof(*ls))))
        return -ENOMEM;
    if (render_list_head(res, l, &ls->pend)) {
        buf_free(&ls->pend);
        free(ls);
        return -ENOMEM;
    }
    size += ls->pend.len;
    ls->l = *l;
    memset(l, 0, sizeof(*l));
    /* the reply owns ls from here, freed when it is done (or on failure) */
    return server_reply_stream_sized(req, 200, JSON, size, list_stream_read, ls,
                                     list_stream_free) < 0 ? -ENOMEM : 1;
}

/* Answers 200 with l as a List (or a Table when table), 500 if it cannot be rendered. */
static void reply_list(struct server_req *req, const struct reg_resource *res,
                       struct store_list *l, bool table)
{
    struct buf b = { 0 };
    size_t len;
    int rc = table ? 0 : reply_list_streamed(req, res, l);

    if (rc > 0)
        return;
    if (rc == 0)
        rc = table ? render_list_table(res, l, req->query->include_object, &b)
                   : render_list(res, l, &b);

    if (rc < 0) {
        buf_free(&b);
        server_reply_status(req, 500, "InternalError", "cannot render the list");
        return;
    }
    len = b.len;
    server_reply_take(req, 200, JSON, buf_steal(&b), len);
}

static int do_list(struct server_req *req, const struct reg_resource *res)
{
    struct list_ctx c;
    struct store_list l = { 0 };
    struct store_status st = { 0 };

    if (list_opts(req, &c) < 0)
        goto out;
    if (store_list(req->srv->store, res, req->route->ns, &c.lo, &l, &st) < 0)
        api__reply_store_status(req, &st);
    else
        reply_list(req, res, &l, req->accept.table);
out:
    store_list_free(&l);
    list_done(&c);
    return 0;
}

/* ---- get / create / update / patch ------------------------------------------------ */

static int reply_scale(struct server_req *req, const struct reg_resource *res, int code)
{
    struct store_status st = { 0 };
    cJSON *scale = NULL;

    if (store_get_scale(req->srv->store, res, req->route->ns, req->route->name, &scale, &st) < 0)
        return api__reply_store_status(req, &st);
    return reply_json_tree(req, code, scale);
}

static int do_get(struct server_req *req, const struct reg_resource *res)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    int rc;

    if (strcmp(req->route->sub, "scale") == 0)
        return reply_scale(req, res, 200);
    if (store_get(req->srv->store, res, req->route->ns, req->route->name, &o, &st) < 0)
        return api__reply_store_status(req, &st);
    req->rv = o->rv;   /* the version a reader saw, for the request log */
    rc = reply_obj(req, 200, o);
    store_obj_unref(o);
    return rc;
}

/* The apiserver refuses a body whose metadata.namespace/name contradicts the URL. */
static int check_body_identity(struct server_req *req, const struct reg_resource *res,
                               cJSON *obj)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    char msg[700];

    if (res->namespaced && cJSON_IsString(ns) && ns->valuestring[0] &&
        strcmp(ns->valuestring, req->route->ns) != 0) {
        reply_bad_request(req, "the namespace of the provided object does not match the "
                          "namespace sent on the request");
        return -EINVAL;
    }
    if (req->route->name[0] && cJSON_IsString(name) && name->valuestring[0] &&
        strcmp(name->valuestring, req->route->name) != 0) {
        snprintf(msg, sizeof(msg), "the name of the object (%.250s) does not match the name "
                 "on the URL (%.250s)", name->valuestring, req->route->name);
        reply_bad_request(req, msg);
        return -EINVAL;
    }
    return 0;
}

/* The answer to a write the store made (rc 0: the object o, 201 when it was created) or
 * refused (rc < 0: st), after the write's warnings. */
static int finish_write(struct server_req *req, const struct reg_resource *res, int rc,
                        bool created, struct write_ctx *c, struct store_obj *o,
                        struct store_status *st)
{
    int code = created ? 201 : 200;

    add_warnings(req, c->w.warnings);
    if (rc < 0)
        return api__reply_store_status(req, st);
    if (strcmp(req->route->sub, "scale") == 0) {
        store_obj_unref(o);
        return reply_scale(req, res, code);
    }
    if (!o)
        return server_reply_status(req, 500, "InternalError", "the store returned no object");
    req->rv = o->rv;   /* which write made which object version: the chaos soak's judge */
    code = reply_obj_text(req, code, o);
    store_obj_unref(o);
    return code;
}

/* POST (create) and PUT (update) of a whole object: same body checks, same answers. */
static int do_write_object(struct server_req *req, const struct reg_resource *res, bool create)
{
    struct write_ctx c;
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    cJSON *obj;
    int rc;

    if (write_opts(req, &c) < 0)
        return 0;
    if (!(obj = parse_body_object(req)) || check_body_identity(req, res, obj) < 0) {
        cJSON_Delete(obj);
        goto out;
    }
    if (!req->route->sub[0] && !c.w.dry_run) {
        /* validating admission webhooks (admission.c): after the body checks, before
         * the object is stored */
        struct store_obj *old = NULL;
        const char *name = kobj_str(kobj_get(obj, "metadata"), "name");
        if (!create)
            (void)store_get(req->srv->store, res, req->route->ns, req->route->name, &old, &st);
        store_status_clear(&st);
        memset(&st, 0, sizeof(st));
        rc = api__admission_validate(req->srv, res, create ? "CREATE" : "UPDATE", req->route->ns,
                                     name ? name : req->route->name, obj, old ? store_obj_json(old) : NULL, &st);
        if (old)
            store_obj_unref(old);
        if (rc < 0) {
            cJSON_Delete(obj);
            add_warnings(req, c.w.warnings);
            api__reply_store_status(req, &st);
            goto out;
        }
    }
    if (create)
        rc = store_create(req->srv->store, res, req->route->ns, obj, &c.w, &o, &st);
    else
        rc = store_update(req->srv->store, res, req->route->ns, req->route->name,
                          req->route->sub, obj, &c.w, &o, &st);
    finish_write(req, res, rc, create, &c, o, &st);
out:
    write_done(&c);
    return 0;
}

static bool is_binding(const struct route *r, const struct reg_resource *res)
{
    return !strcmp(r->sub, "binding") && res->builtin && !res->group[0] &&
           !strcmp(res->plural, "pods");
}

static int do_create(struct server_req *req, const struct reg_resource *res)
{
    if (is_binding(req->route, res)) {
        cJSON *b = parse_body_object(req);
        return b ? api__binding_create(req, res, b, req->query->dry_run) : 0;
    }
    if (req->route->sub[0])
        return server_reply_status(req, 405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested resource");
    return do_write_object(req, res, true);
}

static int do_patch(struct server_req *req, const struct reg_resource *res)
{
    struct write_ctx c;
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    bool created = false;
    int type = route_patch_type(req->content_type), rc;

    if (type < 0 || (type == PATCH_STRATEGIC && !res->smp_kind)) {
        char msg[300];
        snprintf(msg, sizeof(msg), "the body of the request was in an unknown format - "
                 "accepted media types include: application/json-patch+json, "
                 "application/merge-patch+json, application/apply-patch+yaml%s",
                 res->smp_kind ? ", application/strategic-merge-patch+json" : "");
        return server_reply_status(req, 415, "UnsupportedMediaType", msg);
    }
    if (type == PATCH_APPLY && (!req->query->field_manager || !*req->query->field_manager))
        return server_reply_status(req, 422, "Invalid", "PatchOptions.meta.k8s.io \"\" is "
                                   "invalid: fieldManager: Required value: is required for "
                                   "apply patch");
    if (write_opts(req, &c) < 0)
        return 0;
    if (!req->route->sub[0] && !c.w.dry_run &&
        api__admission_validate_patch(req->srv, res, req->route->ns, req->route->name, type, req->body,
                                      req->body_len, &c.w, &st) < 0) {
        add_warnings(req, c.w.warnings);
        api__reply_store_status(req, &st);
        goto out;
    }
    rc = store_patch(req->srv->store, res, req->route->ns, req->route->name, req->route->sub,
                     (enum store_patch_type)type, req->body, req->body_len, &c.w, &o, &created,
                     &st);
    finish_write(req, res, rc, created, &c, o, &st);
out:
    write_done(&c);
    return 0;
}

/* ---- delete ------------------------------------------------------------------------- */

struct delete_ctx {
    struct store_delete_opts o;
    cJSON *body;                 /* owns the strings o points into */
    bool orphan_false;           /* orphanDependents=false was given (query or body) */
};

/* DeleteOptions from the query, then from the body (kubectl sends
 * {"propagationPolicy":"Background"}; python and client-node send nothing, so
 * the type's default applies: see store.h). */
static int delete_opts(struct server_req *req, struct delete_ctx *c)
{
    const struct route_query *q = req->query;
    const cJSON *v;
    size_t i = 0;

    memset(c, 0, sizeof(*c));
    c->o.grace_seconds = q->grace_seconds;
    c->o.propagation = q->propagation;
    if (q->orphan_dependents_set && !c->o.propagation)
        c->o.propagation = q->orphan_dependents ? "Orphan" : "Background";
    c->orphan_false = q->orphan_dependents_set && !q->orphan_dependents;
    c->o.precondition_uid = q->precondition_uid;
    c->o.precondition_rv = q->precondition_rv;
    c->o.dry_run = q->dry_run;

    while (i < req->body_len && (req->body[i] == ' ' || req->body[i] == '\n' ||
                                 req->body[i] == '\r' || req->body[i] == '\t'))
        i++;
    if (i == req->body_len)
        goto check;
    if (!(c->body = parse_body_object(req)))
        return -EINVAL;
    v = cJSON_GetObjectItemCaseSensitive(c->body, "propagationPolicy");
    if (cJSON_IsString(v))
        c->o.propagation = v->valuestring;
    v = cJSON_GetObjectItemCaseSensitive(c->body, "orphanDependents");
    if (cJSON_IsBool(v) && !c->o.propagation)
        c->o.propagation = cJSON_IsTrue(v) ? "Orphan" : "Background";
    if (cJSON_IsBool(v))
        c->orphan_false = !cJSON_IsTrue(v);
    v = cJSON_GetObjectItemCaseSensitive(c->body, "gracePeriodSeconds");
    if (cJSON_IsNumber(v))
        c->o.grace_seconds = v->valuedouble < 0 ? 0 : (long)v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(c->body, "preconditions");
    if (cJSON_IsObject(v)) {
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(v, "uid");
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(v, "resourceVersion");
        if (cJSON_IsString(uid))
            c->o.precondition_uid = uid->valuestring;
        if (cJSON_IsString(rv))
            c->o.precondition_rv = rv->valuestring;
    }
    v = cJSON_GetObjectItemCaseSensitive(c->body, "dryRun");
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0)
        c->o.dry_run = true;
check:
    if (c->o.propagation && strcmp(c->o.propagation, "Background") != 0 &&
        strcmp(c->o.propagation, "Foreground") != 0 && strcmp(c->o.propagation, "Orphan") != 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "DeleteOptions.meta.k8s.io \"\" is invalid: "
                 "propagationPolicy: Unsupported value: \"%.64s\": supported values: "
                 "\"Foreground\", \"Background\", \"Orphan\", \"nil\"", c->o.propagation);
        server_reply_status(req, 422, "Invalid", msg);
        return -EINVAL;
    }
    return 0;
}

/* REST.Delete/DeleteCollection of Jobs: the client left the policy to the
 * batch/v1 default, which orphans the Pods (kubectl always sends one). */
static void warn_default_orphan(struct server_req *req, const struct reg_resource *res,
                                const struct delete_ctx *c)
{
    if ((res->flags & REG_FLAG_ORPHAN_DEFAULT) && !c->o.propagation)
        server_reply_header(req, "Warning", "299 - \"child pods are preserved by default when "
                            "jobs are deleted; set propagationPolicy=Background to remove them "
                            "or set propagationPolicy=Orphan to suppress this warning\"");
}

static int reply_delete_success(struct server_req *req, const struct reg_resource *res,
                                const struct store_obj *o)
{
    cJSON *st = cJSON_CreateObject(), *details;

    if (!st)
        return server_reply_status(req, 500, "InternalError", "out of memory");
    cJSON_AddStringToObject(st, "kind", "Status");
    cJSON_AddStringToObject(st, "apiVersion", "v1");
    cJSON_AddObjectToObject(st, "metadata");
    cJSON_AddStringToObject(st, "status", "Success");
    details = cJSON_AddObjectToObject(st, "details");
    cJSON_AddStringToObject(details, "name", req->route->name);
    cJSON_AddStringToObject(details, "group", res->group);
    cJSON_AddStringToObject(details, "kind", res->plural);
    if (o && o->uid)
        cJSON_AddStringToObject(details, "uid", o->uid);
    return reply_json_tree(req, 200, st);
}

static int do_delete(struct server_req *req, const struct reg_resource *res)
{
    struct delete_ctx c;
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    bool gone = false;
    int code = 200;

    if (delete_opts(req, &c) < 0)
        goto out;
    warn_default_orphan(req, res, &c);
    if (store_delete(req->srv->store, res, req->route->ns, req->route->name, &c.o, &o, &gone,
                     &st) < 0) {
        api__reply_store_status(req, &st);
        goto out;
    }
    if (gone && !res->builtin) {
        reply_delete_success(req, res, o);
    } else if (!o) {
        reply_delete_success(req, res, NULL);
    } else {
        /* The real handler answers 202 only for an object that is not gone yet AND an
         * explicit orphanDependents=false (changing it "will break existing clients"):
         * a graceful Pod deletion is a 200 with the Pod. */
        if (!gone && c.orphan_false)
            code = 202;
        reply_obj_text(req, code, o);
    }
out:
    store_obj_unref(o);
    cJSON_Delete(c.body);
    return 0;
}

/* deletecollection answers the list of what it deleted: list first, then delete
 * with the same selectors (a concurrent create between the two is not reported,
 * which a client cannot tell from a create just after the call). */
static int do_delete_collection(struct server_req *req, const struct reg_resource *res)
{
    struct server *s = req->srv;
    struct list_ctx lc;
    struct delete_ctx dc = { 0 };
    struct store_list l = { 0 };
    struct store_status st = { 0 };
    struct store_list_opts all;

    if (list_opts(req, &lc) < 0)
        goto out;
    if (delete_opts(req, &dc) < 0)
        goto out;
    warn_default_orphan(req, res, &dc);
    all = lc.lo;
    all.limit = 0;
    all.continue_token = NULL;
    if (store_list(s->store, res, req->route->ns, &all, &l, &st) < 0 ||
        store_delete_collection(s->store, res, req->route->ns, &all, &dc.o, &st) < 0)
        api__reply_store_status(req, &st);
    else
        reply_list(req, res, &l, false);
out:
    store_list_free(&l);
    cJSON_Delete(dc.body);
    list_done(&lc);
    return 0;
}

/* ---- entry ------------------------------------------------------------------------------ */

static unsigned verb_bit(const char *verb)
{
    static const struct { const char *name; unsigned bit; } bits[] = {
        { "get", REG_GET }, { "list", REG_LIST }, { "watch", REG_WATCH },
        { "create", REG_CREATE }, { "update", REG_UPDATE }, { "patch", REG_PATCH },
        { "delete", REG_DELETE }, { "deletecollection", REG_DELETECOLLECTION },
    };
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
        if (strcmp(verb, bits[i].name) == 0)
            return bits[i].bit;
    return 0;
}

int api__handle_resource(struct server_req *req)
{
    const struct route *r = req->route;
    const struct reg_resource *res;
    const char *verb = req->verb;

    res = api__find_resource(req->srv, r->group, r->version, r->plural);
    /* Scope mismatches are "not found" on the real server (no route matches). */
    if (!res || (!res->namespaced && r->ns[0]) ||
        (res->namespaced && !r->ns[0] && r->name[0]) ||
        (r->sub[0] && !((strcmp(r->sub, "status") == 0 && res->has_status) ||
                        (strcmp(r->sub, "scale") == 0 && res->has_scale) || is_binding(r, res))))
        return server_reply_status(req, 404, "NotFound",
                                   "the server could not find the requested resource");
    if (!verb || !(res->verbs & verb_bit(verb)) ||
        (res->namespaced && !r->ns[0] && strcmp(verb, "create") == 0) ||
        (r->sub[0] && !is_binding(r, res) && strcmp(verb, "get") != 0 &&
         strcmp(verb, "update") != 0 && strcmp(verb, "patch") != 0) ||
        (is_binding(r, res) && strcmp(verb, "create") != 0))
        return server_reply_status(req, 405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested resource");
    if (req->query->err[0])
        return reply_bad_request(req, req->query->err);

    if (strcmp(verb, "watch") == 0)
        return api__handle_watch(req, res);
    if (strcmp(verb, "list") == 0)
        return do_list(req, res);
    if (strcmp(verb, "get") == 0)
        return do_get(req, res);
    if (strcmp(verb, "create") == 0)
        return do_create(req, res);
    if (strcmp(verb, "update") == 0)
        return do_write_object(req, res, false);
    if (strcmp(verb, "patch") == 0)
        return do_patch(req, res);
    if (strcmp(verb, "delete") == 0)
        return do_delete(req, res);
    return do_delete_collection(req, res);
}

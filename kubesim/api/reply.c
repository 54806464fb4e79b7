/*
 * reply.c - how a handler answers: a body (copied or taken over), a streamed body
 * (watches), a metav1 Status (also from a store status), headers, a connection reset,
 * a Table's includeObject rows, an object's apiVersion; and the request's headers.
 * Every handler file (server.c, discovery.c, resource.c, watch.c) calls these; they
 * call no handler, so the dispatch in server.c and the handlers call one way.
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATUS_FMT "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\"," \
                   "\"message\":%s,\"reason\":\"%s\",\"code\":%d}"

/* ---- replies ------------------------------------------------------------------ */

static struct req_priv *priv_of(struct server_req *req)
{
    return req->priv;
}

int api__dup_pair(char **da, const char *a, char **db, const char *b)
{
    *da = strdup(a);
    *db = strdup(b);
    if (*da && *db)
        return 0;
    free(*da);
    free(*db);
    *da = *db = NULL;
    return -ENOMEM;
}

int server_reply_header(struct server_req *req, const char *name, const char *value)
{
    struct req_priv *p = priv_of(req);
    struct req_header *h;

    if (p->n_headers >= SERVER_MAX_HEADERS)
        return -ENOSPC;
    h = &p->headers[p->n_headers];
    if (api__dup_pair(&h->name, name, &h->value, value) < 0)
        return -ENOMEM;
    p->n_headers++;
    return 0;
}

/* Attaches resp as the reply (taking it over), with the pending headers. */
static int reply_set(struct server_req *req, int code, const char *content_type,
                     struct MHD_Response *resp)
{
    struct req_priv *p = priv_of(req);

    if (!resp)
        return -ENOMEM;
    if (p->replied) {
        /* a second reply is a handler bug: keep the first */
        log_warn("server: handler replied twice", "path", req->path, NULL);
        MHD_destroy_response(resp);
        return -EALREADY;
    }
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    for (size_t i = 0; i < p->n_headers; i++)
        MHD_add_response_header(resp, p->headers[i].name, p->headers[i].value);
    p->resp = resp;
    p->code = code;
    p->replied = true;
    return 0;
}

int server_reply(struct server_req *req, int code, const char *content_type,
                 const char *body, size_t len)
{
    struct MHD_Response *r;

    r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return reply_set(req, code, content_type, r);
}

int server_reply_take(struct server_req *req, int code, const char *content_type,
                      char *body, size_t len)
{
    struct MHD_Response *r;

    r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    if (!r) {
        free(body);
        return -ENOMEM;
    }
    return reply_set(req, code, content_type, r);
}

int server_reply_status(struct server_req *req, int code, const char *reason,
                        const char *message)
{
    struct buf msg = { 0 }, b = { 0 };
    int rc;

    if (buf_append_json_string(&msg, message) < 0 ||
        buf_printf(&b, STATUS_FMT, msg.data, reason, code) < 0) {
        buf_free(&msg);
        buf_free(&b);
        return -ENOMEM;
    }
    buf_free(&msg);
    rc = server_reply_take(req, code, "application/json", b.data, b.len);
    return rc;
}

struct stream_ctx {
    server_stream_fn fn;
    void *arg;
    void (*free_fn)(void *);
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream_ctx *c = cls;
    ssize_t n;

    (void)pos;
    n = c->fn(c->arg, buf, max);
    if (n == SERVER_STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void stream_free(void *cls)
{
    struct stream_ctx *c = cls;

    if (c->free_fn)
        c->free_fn(c->arg);
    free(c);
}

static int reply_stream(struct server_req *req, int code, const char *content_type, uint64_t size,
                        server_stream_fn fn, void *arg, void (*free_fn)(void *))
{
    struct stream_ctx *c = calloc(1, sizeof(*c));
    struct MHD_Response *r;

    if (!c) {
        if (free_fn)
            free_fn(arg);
        return -ENOMEM;
    }
    c->fn = fn;
    c->arg = arg;
    c->free_fn = free_fn;
    r = MHD_create_response_from_callback(size, 64 * 1024, stream_read, c, stream_free);
    if (!r) {
        stream_free(c);
        return -ENOMEM;
    }
    return reply_set(req, code, content_type, r);
}

int server_reply_stream(struct server_req *req, int code, const char *content_type,
                        server_stream_fn fn, void *arg, void (*free_fn)(void *))
{
    return reply_stream(req, code, content_type, MHD_SIZE_UNKNOWN, fn, arg, free_fn);
}

int server_reply_stream_sized(struct server_req *req, int code, const char *content_type,
                              uint64_t size, server_stream_fn fn, void *arg,
                              void (*free_fn)(void *))
{
    return reply_stream(req, code, content_type, size, fn, arg, free_fn);
}

int server_reply_reset(struct server_req *req)
{
    struct req_priv *p = priv_of(req);

    p->reset = true;
    p->replied = true;
    p->code = 0;
    return 0;
}

const char *server_req_header(struct server_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* ---- shared by the resource and watch handlers ---------------------------------- */

void api__api_version(const struct reg_resource *res, char *out, size_t n)
{
    if (res->group[0])
        snprintf(out, n, "%s/%s", res->group, res->version);
    else
        snprintf(out, n, "%s", res->version);
}

int api__reply_store_status(struct server_req *req, struct store_status *st)
{
    char *body;
    int code = st->code >= 400 && st->code < 600 ? st->code : 500;
    int rc;

    if (st->retry_after > 0) {
        char ra[24];
        snprintf(ra, sizeof(ra), "%d", st->retry_after);
        server_reply_header(req, "Retry-After", ra);
    }
    body = store_status_json(st);
    store_status_clear(st);
    if (!body)
        return server_reply_status(req, code, "InternalError", "out of memory");
    rc = server_reply_take(req, code, "application/json", body, strlen(body));
    return rc;
}

int api__table_include(struct buf *b, size_t start, const cJSON *const *items, size_t n,
                       const char *include)
{
    cJSON *table, *rows, *row;
    char *txt;
    size_t i = 0;

    if (!include || (strcmp(include, "None") != 0 && strcmp(include, "Object") != 0))
        return 0;   /* Metadata (PartialObjectMetadata) is what present_table renders */
    table = cJSON_ParseWithLength(b->data + start, b->len - start);
    if (!table)
        return -EINVAL;
    rows = cJSON_GetObjectItemCaseSensitive(table, "rows");
    cJSON_ArrayForEach(row, rows) {
        cJSON_DeleteItemFromObjectCaseSensitive(row, "object");
        if (include[0] == 'O' && i < n)
            cJSON_AddItemToObject(row, "object", cJSON_Duplicate(items[i], true));
        i++;
    }
    txt = cJSON_PrintUnformatted(table);
    cJSON_Delete(table);
    if (!txt)
        return -ENOMEM;
    b->len = start;
    i = (size_t)buf_puts(b, txt);
    free(txt);
    return (int)i;
}

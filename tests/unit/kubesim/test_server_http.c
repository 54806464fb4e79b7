/* test_server_http.c - kubesim's HTTP server in-process, over loopback sockets:
 * the extension API (prefix routes, subresource handlers, the fault-injection
 * prehook with replies and connection resets), authentication, and the watch
 * lifecycle (a disconnected client's watch is closed; shutdown ends an open
 * watch with the terminating chunk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kubesim/registry/registry.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"
#include "util/util.h"

struct fixture {
    struct store *store;
    struct server *srv;
    char seen_name[256];
    char seen_rest[256];
    int prehook_calls;
};

static int connect_port(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void send_all(int fd, const char *s)
{
    size_t n = strlen(s), off = 0;
    while (off < n) {
        ssize_t w = write(fd, s + off, n - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
}

/* Reads until EOF or deadline_ms; returns what arrived (caller frees). */
static char *read_until_eof(int fd, int deadline_ms, bool *eof)
{
    struct buf b = { 0 };
    uint64_t end = util_now_ms() + (uint64_t)deadline_ms;
    char chunk[4096];

    *eof = false;
    buf_puts(&b, "");
    while (util_now_ms() < end) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n <= 0) {
            *eof = true;
            break;
        }
        buf_append(&b, chunk, (size_t)n);
    }
    return buf_steal(&b);
}

/* Reads until `needle` shows up (or the deadline); true if it did. */
static bool read_until(int fd, const char *needle, int deadline_ms, struct buf *b)
{
    uint64_t end = util_now_ms() + (uint64_t)deadline_ms;
    char chunk[4096];

    while (util_now_ms() < end) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (b->data && strstr(b->data, needle))
            return true;
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        buf_append(&b[0], chunk, (size_t)n);
    }
    return b->data && strstr(b->data, needle);
}

/* One request on its own connection ("Connection: close"); returns the status
 * code and fills *resp with the whole response (caller frees), or -1 if the
 * server closed without answering. */
static int request_body(struct fixture *f, const char *method, const char *path,
                        const char *headers, const char *body, char **resp)
{
    char req[4096];
    int fd = connect_port(server_port(f->srv)), code = -1;
    bool eof;
    char *r;

    snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
             "%sContent-Length: %zu\r\n\r\n%s", method, path, headers ? headers : "",
             body ? strlen(body) : 0, body ? body : "");
    send_all(fd, req);
    r = read_until_eof(fd, 10000, &eof);
    close(fd);
    if (strncmp(r, "HTTP/1.1 ", 9) == 0)
        code = atoi(r + 9);
    if (resp)
        *resp = r;
    else
        free(r);
    return code;
}

static int request(struct fixture *f, const char *method, const char *path,
                   const char *headers, char **resp)
{
    return request_body(f, method, path, headers, NULL, resp);
}

static bool wait_watches(struct server *s, size_t want, int deadline_ms)
{
    uint64_t end = util_now_ms() + (uint64_t)deadline_ms;
    while (util_now_ms() < end) {
        if (server_open_watches(s) == want)
            return true;
        struct timespec ts = { 0, 20 * 1000000 };
        nanosleep(&ts, NULL);   /* polling interval of a condition wait with a deadline */
    }
    return server_open_watches(s) == want;
}

/* ---- handlers under test ---------------------------------------------------------- */

static int admin_handler(void *arg, struct server_req *req)
{
    (void)arg;
    return server_reply(req, 200, "text/plain", req->path, strlen(req->path));
}

static int proxy_handler(void *arg, struct server_req *req)
{
    struct fixture *f = arg;
    snprintf(f->seen_name, sizeof(f->seen_name), "%s", req->route->name);
    snprintf(f->seen_rest, sizeof(f->seen_rest), "%s", req->route->rest);
    server_reply_header(req, "X-Proxied", "yes");
    return server_reply(req, 200, "text/plain", "proxied", 7);
}

static int fault_prehook(void *arg, struct server_req *req)
{
    struct fixture *f = arg;
    f->prehook_calls++;
    if (strstr(req->path, "/fail-503")) {
        server_reply_header(req, "Retry-After", "2");
        server_reply_status(req, 503, "ServiceUnavailable", "injected");
        return SERVER_HANDLED;
    }
    if (strstr(req->path, "/reset")) {
        server_reply_reset(req);
        return SERVER_HANDLED;
    }
    return SERVER_NEXT;
}

static int setup_common(void **state, const char *token)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct registry *reg;
    struct store_opts so = { 0 };
    struct server_opts o = { .host = "127.0.0.1", .port = 0, .token = token };
    char err[256];

    log_set_level(LOG_ERROR);
    assert_int_equal(registry_new(&reg), 0);
    assert_int_equal(store_open(&so, reg, &f->store, err, sizeof(err)), 0);
    assert_int_equal(server_new(&o, f->store, &f->srv, err, sizeof(err)), 0);
    assert_int_equal(server_add_route(f->srv, "/kubesim/", admin_handler, f), 0);
    assert_int_equal(server_add_subresource(f->srv, "services", "proxy", proxy_handler, f), 0);
    server_set_prehook(f->srv, fault_prehook, f);
    assert_int_equal(server_start(f->srv, err, sizeof(err)), 0);
    assert_true(server_port(f->srv) > 0);
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_common(state, NULL); }
static int setup_token(void **state) { return setup_common(state, "s3cret"); }

static int teardown(void **state)
{
    struct fixture *f = *state;
    server_free(f->srv);
    store_close(f->store);
    free(f);
    return 0;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_prefix_route(void **state)
{
    struct fixture *f = *state;
    char *r;
    assert_int_equal(request(f, "GET", "/kubesim/status", NULL, &r), 200);
    assert_non_null(strstr(r, "\r\n\r\n/kubesim/status"));
    free(r);
}

static void test_subresource_handler(void **state)
{
    struct fixture *f = *state;
    char *r;
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/services/head:dashboard/proxy/api/jobs/",
                             NULL, &r), 200);
    assert_string_equal(f->seen_name, "head:dashboard");
    assert_string_equal(f->seen_rest, "/api/jobs/");
    assert_non_null(strstr(r, "X-Proxied: yes"));
    free(r);
}

static void test_prehook_reply_and_reset(void **state)
{
    struct fixture *f = *state;
    char *r;
    int before = f->prehook_calls;

    assert_int_equal(request(f, "GET", "/api/v1/fail-503", NULL, &r), 503);
    assert_non_null(strstr(r, "Retry-After: 2"));
    assert_non_null(strstr(r, "\"reason\":\"ServiceUnavailable\""));
    free(r);
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/reset", NULL, NULL), -1);
    /* a normal request still goes through afterwards */
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL), 200);
    assert_int_equal(f->prehook_calls, before + 3);
}

static void test_not_found_and_method(void **state)
{
    struct fixture *f = *state;
    char *r;
    assert_int_equal(request(f, "GET", "/api/v1/nosuch", NULL, &r), 404);
    assert_non_null(strstr(r, "\"reason\":\"NotFound\""));
    free(r);
    assert_int_equal(request_body(f, "PUT", "/api/v1/namespaces/default/configmaps",
                                  "Content-Type: application/json\r\n", "{}", &r), 405);
    assert_non_null(strstr(r, "\"reason\":\"MethodNotAllowed\""));
    free(r);
}

static void test_watch_closed_when_client_leaves(void **state)
{
    struct fixture *f = *state;
    struct buf b = { 0 };
    int fd = connect_port(server_port(f->srv));

    assert_int_equal(server_open_watches(f->srv), 0);
    send_all(fd, "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\n"
                 "Host: x\r\n\r\n");
    assert_true(read_until(fd, "\r\n\r\n", 5000, &b));
    assert_non_null(strstr(b.data, "Transfer-Encoding: chunked"));
    assert_true(wait_watches(f->srv, 1, 5000));
    close(fd);
    /* the reader notices within about a second and the stream's watch is closed */
    assert_true(wait_watches(f->srv, 0, 5000));
    buf_free(&b);
}

static void test_shutdown_ends_watch_cleanly(void **state)
{
    struct fixture *f = *state;
    struct buf b = { 0 };
    int fd = connect_port(server_port(f->srv));
    char *rest;
    bool eof;

    send_all(fd, "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0 HTTP/1.1\r\n"
                 "Host: x\r\n\r\n");
    /* the synthetic ADDED... there may be none in an empty namespace: wait for headers */
    assert_true(read_until(fd, "\r\n\r\n", 5000, &b));
    assert_true(wait_watches(f->srv, 1, 5000));
    server_stop(f->srv);
    rest = read_until_eof(fd, 5000, &eof);
    buf_puts(&b, rest);
    free(rest);
    assert_true(eof);
    /* the terminating zero-length chunk went out before the close */
    assert_true(b.len >= 5);
    assert_memory_equal(b.data + b.len - 5, "0\r\n\r\n", 5);
    assert_int_equal(server_open_watches(f->srv), 0);
    close(fd);
    buf_free(&b);
}

/* A LIST larger than the streaming threshold is rendered while it is sent: the answer
 * still has its exact Content-Length (not chunked), and its items are the objects as a
 * GET answers them, the Pods kept compressed included. */
static void test_large_list_streamed(void **state)
{
    struct fixture *f = *state;
    char body[2048], pad[1025], *resp = NULL, *one = NULL;
    const char *b, *cl;
    cJSON *list, *item;
    int n = 0;

    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = 0;
    for (int i = 0; i < 300; i++) {
        snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
                 "{\"name\":\"p%03d\",\"annotations\":{\"pad\":\"%s\"}},\"spec\":{\"containers\":"
                 "[{\"name\":\"c\",\"image\":\"busybox\"}]}}", i, pad);
        assert_int_equal(request_body(f, "POST", "/api/v1/namespaces/default/pods",
                                      "Content-Type: application/json\r\n", body, NULL), 201);
    }
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/pods", NULL, &resp), 200);
    assert_non_null(b = strstr(resp, "\r\n\r\n"));
    b += 4;
    assert_null(strcasestr(resp, "Transfer-Encoding: chunked"));
    assert_non_null(cl = strcasestr(resp, "Content-Length: "));
    assert_true(strtoul(cl + 16, NULL, 10) == strlen(b));
    assert_true(strlen(b) > (256u << 10));
    assert_non_null(list = cJSON_Parse(b));
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(list, "items")) {
        char path[128], *g;
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(
            cJSON_GetObjectItem(item, "metadata"), "name"));
        char *printed = cJSON_PrintUnformatted(item);
        if (n++ % 50)
            goto next;   /* a GET of every 50th */
        snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
        assert_int_equal(request(f, "GET", path, NULL, &one), 200);
        assert_non_null(g = strstr(one, "\r\n\r\n"));
        assert_string_equal(g + 4, printed);
        free(one);
next:
        free(printed);
    }
    assert_int_equal(n, 300);
    cJSON_Delete(list);
    free(resp);
}

static void test_token_required(void **state)
{
    struct fixture *f = *state;
    char *r;
    assert_int_equal(request(f, "GET", "/api/v1/namespaces", NULL, &r), 401);
    assert_non_null(strstr(r, "\"reason\":\"Unauthorized\""));
    free(r);
    assert_int_equal(request(f, "GET", "/api/v1/namespaces", "Authorization: Bearer nope\r\n", &r), 403);
    assert_non_null(strstr(r, "\"reason\":\"Forbidden\""));
    free(r);
    assert_int_equal(request(f, "GET", "/api/v1/namespaces", "Authorization: Bearer s3cret\r\n", NULL), 200);
    assert_int_equal(request(f, "GET", "/healthz", NULL, NULL), 200);
    assert_int_equal(request(f, "GET", "/version", NULL, NULL), 200);
    /* extension routes sit behind authentication too */
    assert_int_equal(request(f, "GET", "/kubesim/status", NULL, NULL), 401);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prefix_route, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subresource_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prehook_reply_and_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found_and_method, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_closed_when_client_leaves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_ends_watch_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_list_streamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_required, setup_token, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

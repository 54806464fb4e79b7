/* test_faults_http.c - kubesim's fault injection in-process, over loopback sockets:
 * the /kubesim/ admin area (status counts, replacing/appending/clearing rules, bad
 * bodies, methods, the token), injected 429/503 answers and resets on the wire, and
 * the watch faults (an expired resume's ERROR event, a cut ending a watch with the
 * terminating chunk). The Python client's view is in tests/integration/kubesim_faults.py. */
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
#include <unistd.h>

#include "kubesim/api/faults.h"
#include "kubesim/registry/registry.h"
#include "kubesim/api/server.h"
#include "kubesim/store/store.h"
#include "util/util.h"

#define TOKEN "t0ken"
#define AUTH  "Authorization: Bearer " TOKEN "\r\n"

struct fixture {
    struct store *store;
    struct server *srv;
    struct faults *faults;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct store_opts so = { 0 };
    struct server_opts o = { .host = "127.0.0.1", .token = TOKEN };
    struct registry *reg = NULL;
    char err[256];

    assert_non_null(f);
    assert_int_equal(registry_new(&reg), 0);
    assert_int_equal(store_open(&so, reg, &f->store, err, sizeof(err)), 0);
    assert_int_equal(server_new(&o, f->store, &f->srv, err, sizeof(err)), 0);
    assert_int_equal(faults_parse_flag(&f->faults, "fault",
                                       "verb=deletecollection,code=503,retry-after=2", err,
                                       sizeof(err)), 0);
    assert_int_equal(faults_install(&f->faults, f->srv, f->store, TOKEN, err, sizeof(err)), 0);
    assert_int_equal(server_start(f->srv, err, sizeof(err)), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    server_free(f->srv);
    faults_free(f->faults);
    store_close(f->store);
    free(f);
    return 0;
}

/* One request on its own connection; returns the status code (-1: closed without an
 * answer) and the whole response in *resp (caller frees) when resp is non-NULL.
 * Reads until the server closes or deadline_ms pass. */
static int request(struct fixture *f, const char *method, const char *path,
                   const char *headers, const char *body, int deadline_ms, char **resp)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)server_port(f->srv)) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), code = -1;
    uint64_t end = util_now_ms() + (uint64_t)deadline_ms;
    struct buf req = { 0 }, out = { 0 };
    char chunk[4096];

    assert_true(fd >= 0);
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    buf_printf(&req, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%sContent-Length: %zu"
               "\r\n\r\n%s", method, path, headers ? headers : "", body ? strlen(body) : 0,
               body ? body : "");
    assert_int_equal(write(fd, req.data, req.len), (ssize_t)req.len);
    buf_free(&req);
    buf_puts(&out, "");
    while (util_now_ms() < end) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        buf_append(&out, chunk, (size_t)n);
    }
    close(fd);
    if (strncmp(out.data, "HTTP/1.1 ", 9) == 0)
        code = atoi(out.data + 9);
    if (resp)
        *resp = buf_steal(&out);
    else
        buf_free(&out);
    return code;
}

/* The JSON body of a (non-chunked) response; caller deletes. */
static cJSON *body_json(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");
    return b ? cJSON_Parse(b + 4) : NULL;
}

static long status_num(struct fixture *f, const char *section, const char *key)
{
    char *resp = NULL;
    cJSON *j;
    long v;

    assert_int_equal(request(f, "GET", "/kubesim/status", AUTH, NULL, 5000, &resp), 200);
    j = body_json(resp);
    assert_non_null(j);
    const cJSON *s = section ? cJSON_GetObjectItem(j, section) : j;
    if (section && (strcmp(section, "byVerb") == 0 || strcmp(section, "byCode") == 0))
        s = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "requests"), section);
    assert_non_null(s);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(s, key)));
    v = (long)cJSON_GetObjectItem(s, key)->valuedouble;
    cJSON_Delete(j);
    free(resp);
    return v;
}

static void test_admin_auth_and_errors(void **state)
{
    struct fixture *f = *state;
    char *resp = NULL;

    assert_int_equal(request(f, "GET", "/kubesim/status", NULL, NULL, 5000, NULL), 401);
    assert_int_equal(request(f, "GET", "/kubesim/status", "Authorization: Bearer no\r\n", NULL,
                             5000, NULL), 403);
    assert_int_equal(request(f, "POST", "/kubesim/status", AUTH, "{}", 5000, NULL), 405);
    assert_int_equal(request(f, "GET", "/kubesim/nothing", AUTH, NULL, 5000, NULL), 404);
    assert_int_equal(request(f, "PUT", "/kubesim/faults", AUTH, "{not json", 5000, NULL), 400);
    assert_int_equal(request(f, "PUT", "/kubesim/faults", AUTH, "{\"rules\":5}", 5000, NULL),
                     400);
    assert_int_equal(request(f, "PUT", "/kubesim/faults", AUTH, "{\"rules\":[],\"x\":1}", 5000,
                             NULL), 400);
    assert_int_equal(request(f, "PUT", "/kubesim/faults", AUTH, "[\"code=404\"]", 5000, &resp),
                     400);
    assert_non_null(strstr(resp, "404"));
    free(resp);
    assert_int_equal(request(f, "PUT", "/kubesim/watch", AUTH, "{\"cutSeconds\":1.5}", 5000,
                             NULL), 400);
    assert_int_equal(request(f, "PUT", "/kubesim/watch", AUTH, "{\"other\":1}", 5000, NULL), 400);
    /* The server's posthook reports every answer: an API request shows up in byCode. */
    assert_int_equal(request(f, "GET", "/api", AUTH, NULL, 5000, NULL), 200);
    long ok_before = status_num(f, "byCode", "200");
    assert_true(ok_before >= 1);
    faults_note_reply(f->faults, NULL, 200);
    faults_note_reply(f->faults, NULL, 200);
    faults_note_reply(f->faults, NULL, 0);
    faults_note_reply(f->faults, NULL, 1000);          /* out of range: ignored */
    assert_int_equal(status_num(f, "byCode", "200"), ok_before + 2);
    assert_true(status_num(f, "byCode", "0") >= 1);
    /* a failed replacement changed nothing: the --fault rule is still there */
    assert_int_equal(request(f, "GET", "/kubesim/faults", AUTH, NULL, 5000, &resp), 200);
    assert_non_null(strstr(resp, "verb=deletecollection,code=503,retry-after=2"));
    free(resp);
}

static void test_rules_on_the_wire(void **state)
{
    struct fixture *f = *state;
    char *resp = NULL;
    cJSON *j;

    /* the flag's rule */
    assert_int_equal(request(f, "DELETE", "/api/v1/namespaces/default/configmaps", AUTH, NULL,
                             5000, &resp), 503);
    assert_non_null(strstr(resp, "Retry-After: 2\r\n"));
    assert_non_null(strstr(resp, "\"reason\":\"ServiceUnavailable\""));
    free(resp);

    assert_int_equal(request(f, "PUT", "/kubesim/faults", AUTH,
                             "{\"seed\":3,\"rules\":[{\"verb\":\"list\",\"code\":429}]}", 5000,
                             &resp), 200);
    j = body_json(resp);
    assert_int_equal(cJSON_GetObjectItem(j, "seed")->valueint, 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rules")), 1);
    cJSON_Delete(j);
    free(resp);
    long before = status_num(f, "faults", "429");
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/configmaps", AUTH, NULL,
                             5000, &resp), 429);
    assert_non_null(strstr(resp, "Retry-After: 1\r\n"));
    assert_non_null(strstr(resp, "\"retryAfterSeconds\":1"));
    assert_non_null(strstr(resp, "the server has received too many requests"));
    free(resp);
    assert_int_equal(status_num(f, "faults", "429"), before + 1);
    /* no token: the server's own 401, not a fault */
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/configmaps", NULL, NULL,
                             5000, NULL), 401);
    /* other verbs pass */
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default", AUTH, NULL, 5000, NULL),
                     200);

    /* append a reset for gets; the list rule stays */
    assert_int_equal(request(f, "POST", "/kubesim/faults", AUTH, "\"verb=get,action=reset\"",
                             5000, NULL), 200);
    long resets = status_num(f, "faults", "reset");
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default", AUTH, NULL, 5000, NULL),
                     -1);
    assert_int_equal(status_num(f, "faults", "reset"), resets + 1);
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default/configmaps", AUTH, NULL,
                             5000, NULL), 429);

    assert_int_equal(request(f, "DELETE", "/kubesim/faults", AUTH, NULL, 5000, &resp), 200);
    assert_non_null(strstr(resp, "\"rules\":[]"));
    free(resp);
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default", AUTH, NULL, 5000, NULL),
                     200);
    long gets = status_num(f, "byVerb", "get");
    assert_int_equal(request(f, "GET", "/api/v1/namespaces/default", AUTH, NULL, 5000, NULL),
                     200);
    assert_int_equal(status_num(f, "byVerb", "get"), gets + 1);   /* admin calls not counted */
}

static void test_watch_expire_and_cut(void **state)
{
    struct fixture *f = *state;
    char *resp = NULL;
    char path[128];
    uint64_t t0;

    assert_int_equal(request(f, "PUT", "/kubesim/watch", AUTH, "{\"expireNext\":1}", 5000,
                             NULL), 200);
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?watch=1&"
             "resourceVersion=%llu", (unsigned long long)store_current_rv(f->store));
    assert_int_equal(request(f, "GET", path, AUTH, NULL, 5000, &resp), 200);
    assert_non_null(strstr(resp, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\""));
    assert_non_null(strstr(resp, "\"reason\":\"Expired\""));
    assert_non_null(strstr(resp, "\"code\":410"));
    assert_non_null(strstr(resp, "\r\n0\r\n\r\n"));         /* clean end of the chunked body */
    free(resp);
    assert_int_equal(status_num(f, "watch", "expireNext"), 0);
    assert_int_equal(status_num(f, "faults", "expired"), 1);
    /* spent: the same resume now gets the normal stream; a cut ends it */
    assert_int_equal(request(f, "PUT", "/kubesim/watch", AUTH, "{\"cutSeconds\":1}", 5000,
                             NULL), 200);
    t0 = util_now_ms();
    assert_int_equal(request(f, "GET", path, AUTH, NULL, 8000, &resp), 200);
    uint64_t took = util_now_ms() - t0;
    assert_null(strstr(resp, "ERROR"));
    assert_non_null(strstr(resp, "\r\n0\r\n\r\n"));
    assert_in_range(took, 900, 4000);
    free(resp);
    assert_int_equal(status_num(f, "faults", "watchCut"), 1);
    /* a shorter timeoutSeconds of the client's own is kept and not counted */
    assert_int_equal(request(f, "PUT", "/kubesim/watch", AUTH, "{\"cutSeconds\":30}", 5000,
                             NULL), 200);
    t0 = util_now_ms();
    assert_int_equal(request(f, "GET", "/api/v1/configmaps?watch=1&timeoutSeconds=1", AUTH, NULL,
                             8000, NULL), 200);
    assert_in_range(util_now_ms() - t0, 900, 4000);
    assert_int_equal(status_num(f, "faults", "watchCut"), 1);
    assert_int_equal(request(f, "PUT", "/kubesim/watch", AUTH,
                             "{\"cutSeconds\":0,\"delayMs\":250}", 5000, &resp), 200);
    assert_non_null(strstr(resp, "{\"delayMs\":250,\"cutSeconds\":0,\"expireNext\":0}"));
    free(resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_admin_auth_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rules_on_the_wire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_expire_and_cut, setup, teardown),
    };
    log_set_level(log_parse_level("error"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}

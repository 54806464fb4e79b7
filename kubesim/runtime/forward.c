/*
 * forward.c - HTTP requests from kubesim to the processes of a run Pod, as the API server's
 * service and pod proxy (services/NAME:PORT/proxy, pods/NAME:PORT/proxy) make them: to the
 * Pod IP and port, from a socket made in the node namespace (the only place Pod IPs are
 * routed; libcurl is handed that socket through CURLOPT_OPENSOCKETFUNCTION and does the
 * HTTP). The reply is bounded (RUNTIME_HTTP_MAX_BODY); failures are worded as the API
 * server words a refused or timed-out dial.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <curl/curl.h>

#include "kubesim/runtime/internal.h"

#define FORWARD_TIMEOUT_S 30
#define FORWARD_CONNECT_TIMEOUT_S 5

static curl_socket_t open_in_node(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct runtime *rt = arg;
    int s;

    if (purpose != CURLSOCKTYPE_IPCXN || a->family != AF_INET)
        return CURL_SOCKET_BAD;
    s = runtime__node_socket(rt, SOCK_STREAM);
    return s < 0 ? CURL_SOCKET_BAD : s;
}

/* The Pod's IP when the runtime runs Pod uid with a live sandbox: 0, else -ENOENT (not
 * ours) or -ECONNREFUSED (ours, but no network: not root, or being set up). */
static int pod_ip(struct runtime *rt, const char *uid, char *ip, size_t len)
{
    int rc = -ENOENT;

    pthread_mutex_lock(&rt->mu);
    for (struct rt_pod *p = rt->pods; p; p = p->next)
        if (!strcmp(p->uid, uid)) {
            rc = p->sandbox > 0 && p->ip[0] ? 0 : -ECONNREFUSED;
            snprintf(ip, len, "%s", p->ip);
            break;
        }
    pthread_mutex_unlock(&rt->mu);
    return rc;
}

int runtime__forward_check(const char *method, const char *path, const char *ctype, const char *accept)
{
    if (!method || !*method || strlen(method) > 16 || !path || path[0] != '/' ||
        strlen(path) > RUNTIME_HTTP_MAX_PATH)
        return -EINVAL;
    for (const char *s = method; *s; s++)
        if (*s < 'A' || *s > 'Z')
            return -EINVAL;
    for (const char *s = path; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return -EINVAL;    /* no spaces or control bytes: one request line */
    for (int k = 0; k < 2; k++) {
        const char *h = k ? accept : ctype;
        if (h && (strlen(h) > 256 || strpbrk(h, "\r\n")))
            return -EINVAL;
    }
    return 0;
}

int runtime_http(struct runtime *rt, const char *uid, int port, const struct runtime_http_req *req,
                 struct runtime_http_reply *out)
{
    struct buf_sink s = { .max = RUNTIME_HTTP_MAX_BODY };
    struct curl_slist *h = NULL;
    char ip[20], url[RUNTIME_HTTP_MAX_PATH + 64], hdr[300];
    const char *ct = NULL;
    CURL *c = NULL;
    CURLcode r;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!rt || !uid)
        return -ENOENT;
    if ((rc = pod_ip(rt, uid, ip, sizeof(ip))) < 0) {
        if (rc == -ECONNREFUSED)
            snprintf(out->err, sizeof(out->err), "error trying to reach service: dial tcp "
                     "%s:%d: connect: connection refused", ip[0] ? ip : "<nil>", port);
        return rc;
    }
    if (port <= 0 || port > 65535 ||
        runtime__forward_check(req->method, req->path, req->ctype, req->accept) < 0) {
        snprintf(out->err, sizeof(out->err), "invalid proxy request");
        return -EINVAL;
    }
    snprintf(url, sizeof(url), "http://%s:%d%s", ip, port, req->path);
    if (!(c = buf_sink_easy(url, "http", &s)))
        return -ENOMEM;
    if (req->ctype && *req->ctype) {
        snprintf(hdr, sizeof(hdr), "Content-Type: %s", req->ctype);
        h = curl_slist_append(h, hdr);
    }
    snprintf(hdr, sizeof(hdr), "Accept: %s", req->accept && *req->accept ? req->accept : "*/*");
    h = curl_slist_append(h, hdr);
    h = curl_slist_append(h, "Expect:");    /* no 100-continue round trip for bodies */
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_in_node);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, rt);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    if (!strcmp(req->method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (req->len || !strcmp(req->method, "POST") || !strcmp(req->method, "PUT") ||
             !strcmp(req->method, "PATCH")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kubesim-proxy");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)FORWARD_CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)FORWARD_TIMEOUT_S);
    r = curl_easy_perform(c);
    if (r == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->code);
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
        snprintf(out->ctype, sizeof(out->ctype), "%s", ct ? ct : "text/plain; charset=utf-8");
        if (!s.b.data)
            buf_puts(&s.b, "");
        out->len = s.b.len;
        out->body = buf_steal(&s.b);
        rc = out->body ? 0 : -ENOMEM;
    } else if (s.too_big) {
        snprintf(out->err, sizeof(out->err), "error trying to reach service: the reply of "
                 "%s:%d is over %d bytes", ip, port, RUNTIME_HTTP_MAX_BODY);
        rc = -EFBIG;
    } else {
        bool timeout = r == CURLE_OPERATION_TIMEDOUT;
        snprintf(out->err, sizeof(out->err), "error trying to reach service: dial tcp %s:%d: %s",
                 ip, port, r == CURLE_COULDNT_CONNECT ? "connect: connection refused" :
                 timeout ? "i/o timeout" : curl_easy_strerror(r));
        rc = timeout ? -ETIMEDOUT : r == CURLE_COULDNT_CONNECT ? -ECONNREFUSED : -EIO;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    buf_free(&s.b);
    return rc;
}

void runtime_http_reply_free(struct runtime_http_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

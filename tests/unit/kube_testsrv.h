/*
 * kube_testsrv.h - a scripted HTTP(S) server for the kube/ client tests, on
 * libmicrohttpd. Tests queue responses (code, headers, body, optionally
 * dribbled out in small chunks to split lines across chunk boundaries) and
 * read back what the client sent: method, path, decoded query, headers, body,
 * and how many TCP connections it opened. Also makes a throwaway CA and
 * server certificate with GnuTLS for the TLS tests.
 *
 * Header-only (static functions) because every tests/unit/test_*.c is its own
 * binary; included by test_kube_client.c and test_kube_watch.c.
 */
#ifndef RAYOP_TESTS_KUBE_TESTSRV_H
#define RAYOP_TESTS_KUBE_TESTSRV_H

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS_FN static __attribute__((unused))
#define TS_MAX_SCRIPT 64
#define TS_MAX_LOG 256

struct ts_response {
    int code;
    char *body;
    size_t body_len;
    char *header_name, *header_value;
    size_t piece;              /* > 0: stream the body in pieces of this size (chunked) */
    int abort_at_end;          /* stream: end with an error instead of a clean close */
};

struct ts_request {
    char method[16];
    char path[512];
    char query[1024];          /* decoded "k=v&k=v" in arrival order */
    char auth[512];
    char x_ray_auth[512];      /* X-Ray-Authorization (the Ray dashboard's token header) */
    char user_agent[256];
    char content_type[128];
    char accept_encoding[64];
    int client_cert_ok;        /* TLS: the client presented a certificate our CA signed */
    char *body;
};

struct ts_server {
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    struct ts_response script[TS_MAX_SCRIPT];
    int nscript, next;
    struct ts_response dflt;
    struct ts_request log[TS_MAX_LOG];
    int nlog;
    int connections;
};

struct ts_conn_ctx {
    struct buf body;
};

struct ts_stream {
    struct ts_response r;      /* copy; body owned by the stream */
    size_t off;
};

TS_FN void ts_response_clear(struct ts_response *r)
{
    free(r->body);
    free(r->header_name);
    free(r->header_value);
    memset(r, 0, sizeof(*r));
}

/* Queues a response; body may be NULL. Header optional. */
TS_FN void ts_push(struct ts_server *s, int code, const char *body, const char *hname,
                    const char *hvalue, size_t piece)
{
    pthread_mutex_lock(&s->mu);
    struct ts_response *r = &s->script[s->nscript++];
    r->code = code;
    r->body = strdup(body ? body : "");
    r->body_len = strlen(r->body);
    r->header_name = hname ? strdup(hname) : NULL;
    r->header_value = hvalue ? strdup(hvalue) : NULL;
    r->piece = piece;
    pthread_mutex_unlock(&s->mu);
}

/* Same with a body of explicit length (may contain anything). */
TS_FN void ts_push_raw(struct ts_server *s, int code, const char *body, size_t len,
                        size_t piece, int abort_at_end)
{
    pthread_mutex_lock(&s->mu);
    struct ts_response *r = &s->script[s->nscript++];
    r->code = code;
    r->body = malloc(len + 1);
    memcpy(r->body, body, len);
    r->body[len] = '\0';
    r->body_len = len;
    r->piece = piece;
    r->abort_at_end = abort_at_end;
    pthread_mutex_unlock(&s->mu);
}

/* Adds a response header to the most recently queued response. */
TS_FN void ts_last_header(struct ts_server *s, const char *name, const char *value)
{
    pthread_mutex_lock(&s->mu);
    struct ts_response *r = &s->script[s->nscript - 1];
    free(r->header_name);
    free(r->header_value);
    r->header_name = strdup(name);
    r->header_value = strdup(value);
    pthread_mutex_unlock(&s->mu);
}

TS_FN ssize_t ts_stream_cb(void *cls, uint64_t pos, char *out, size_t max)
{
    struct ts_stream *st = cls;
    (void)pos;
    if (st->off >= st->r.body_len)
        return st->r.abort_at_end ? MHD_CONTENT_READER_END_WITH_ERROR
                                  : MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = st->r.body_len - st->off;
    if (n > st->r.piece)
        n = st->r.piece;
    if (n > max)
        n = max;
    memcpy(out, st->r.body + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

TS_FN void ts_stream_free(void *cls)
{
    struct ts_stream *st = cls;
    ts_response_clear(&st->r);
    free(st);
}

struct ts_qctx {
    char *dst;
    size_t cap;
};

TS_FN enum MHD_Result ts_query_it(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct ts_qctx *q = cls;
    size_t l = strlen(q->dst);
    (void)kind;
    snprintf(q->dst + l, q->cap - l, "%s%s=%s", l ? "&" : "", key, value ? value : "");
    return MHD_YES;
}

TS_FN void ts_copy_header(struct MHD_Connection *c, const char *name, char *dst, size_t cap)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    snprintf(dst, cap, "%s", v ? v : "");
}

TS_FN enum MHD_Result ts_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct ts_server *s = cls;
    struct ts_conn_ctx *ctx = *con_cls;
    struct MHD_Response *resp;
    struct ts_response r = { 0 };
    enum MHD_Result ret;
    (void)version;

    if (ctx == NULL) {
        ctx = calloc(1, sizeof(*ctx));
        *con_cls = ctx;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        buf_append(&ctx->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&s->mu);
    if (s->nlog < TS_MAX_LOG) {
        struct ts_request *q = &s->log[s->nlog++];
        struct ts_qctx qc = { q->query, sizeof(q->query) };
        snprintf(q->method, sizeof(q->method), "%s", method);
        snprintf(q->path, sizeof(q->path), "%s", url);
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, ts_query_it, &qc);
        ts_copy_header(conn, "Authorization", q->auth, sizeof(q->auth));
        ts_copy_header(conn, "X-Ray-Authorization", q->x_ray_auth, sizeof(q->x_ray_auth));
        ts_copy_header(conn, "User-Agent", q->user_agent, sizeof(q->user_agent));
        ts_copy_header(conn, "Content-Type", q->content_type, sizeof(q->content_type));
        ts_copy_header(conn, "Accept-Encoding", q->accept_encoding, sizeof(q->accept_encoding));
        q->body = strdup(ctx->body.data ? ctx->body.data : "");
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (ci != NULL && ci->tls_session != NULL) {
            unsigned int vs = 1, n = 0;
            gnutls_session_t ses = (gnutls_session_t)ci->tls_session;
            q->client_cert_ok = gnutls_certificate_get_peers(ses, &n) != NULL && n > 0 &&
                                gnutls_certificate_verify_peers2(ses, &vs) == 0 && vs == 0;
        }
    }
    if (s->next < s->nscript) {
        r = s->script[s->next];
        memset(&s->script[s->next], 0, sizeof(r));
        s->next++;
    } else {
        r.code = s->dflt.code ? s->dflt.code : 200;
        r.body = strdup(s->dflt.body ? s->dflt.body : "{}");
        r.body_len = strlen(r.body);
    }
    pthread_mutex_unlock(&s->mu);

    if (r.piece > 0) {
        struct ts_stream *st = calloc(1, sizeof(*st));
        st->r = r;
        memset(&r, 0, sizeof(r));
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, st->r.piece, ts_stream_cb, st,
                                                 ts_stream_free);
        MHD_add_response_header(resp, "Content-Type", "application/json");
        ret = MHD_queue_response(conn, (unsigned)st->r.code, resp);
    } else {
        resp = MHD_create_response_from_buffer(r.body_len, r.body, MHD_RESPMEM_MUST_COPY);
        MHD_add_response_header(resp, "Content-Type", "application/json");
        if (r.header_name != NULL)
            MHD_add_response_header(resp, r.header_name, r.header_value);
        ret = MHD_queue_response(conn, (unsigned)r.code, resp);
    }
    MHD_destroy_response(resp);
    ts_response_clear(&r);
    return ret;
}

TS_FN void ts_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ts_conn_ctx *ctx = *con_cls;
    (void)cls;
    (void)c;
    (void)toe;
    if (ctx != NULL) {
        buf_free(&ctx->body);
        free(ctx);
        *con_cls = NULL;
    }
}

TS_FN void ts_notify_conn(void *cls, struct MHD_Connection *c, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
{
    struct ts_server *s = cls;
    (void)c;
    (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        pthread_mutex_lock(&s->mu);
        s->connections++;
        pthread_mutex_unlock(&s->mu);
    }
}

/* Starts on 127.0.0.1:random; TLS when cert_pem/key_pem are set; client
 * certificates are requested (not required) and checked against trust_pem. 0 or -1. */
TS_FN int ts_start_tls(struct ts_server *s, const char *cert_pem, const char *key_pem,
                       const char *trust_pem)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_ERROR_LOG;
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    if (cert_pem != NULL)
        flags |= MHD_USE_TLS;
    struct sockaddr_in sa = { 0 };
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (cert_pem != NULL)
        s->d = MHD_start_daemon(flags, 0, NULL, NULL, ts_handler, s, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, ts_completed, s,
                                MHD_OPTION_NOTIFY_CONNECTION, ts_notify_conn, s,
                                MHD_OPTION_HTTPS_MEM_CERT, cert_pem, MHD_OPTION_HTTPS_MEM_KEY,
                                key_pem, trust_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END,
                                trust_pem, MHD_OPTION_END);
    else
        s->d = MHD_start_daemon(flags, 0, NULL, NULL, ts_handler, s, MHD_OPTION_SOCK_ADDR, &sa,
                                MHD_OPTION_NOTIFY_COMPLETED, ts_completed, s,
                                MHD_OPTION_NOTIFY_CONNECTION, ts_notify_conn, s, MHD_OPTION_END);
    if (s->d == NULL)
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return s->port > 0 ? 0 : -1;
}

TS_FN int ts_start(struct ts_server *s, const char *cert_pem, const char *key_pem)
{
    return ts_start_tls(s, cert_pem, key_pem, NULL);
}

TS_FN void ts_stop(struct ts_server *s)
{
    if (s->d != NULL)
        MHD_stop_daemon(s->d);
    for (int i = 0; i < s->nscript; i++)
        ts_response_clear(&s->script[i]);
    for (int i = 0; i < s->nlog; i++)
        free(s->log[i].body);
    pthread_mutex_destroy(&s->mu);
}

TS_FN int ts_nlog(struct ts_server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->nlog;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- throwaway PKI (GnuTLS) ------------------------------------------------- */

struct ts_pki {
    char *ca_pem;
    char *server_cert_pem;
    char *server_key_pem;
    char *client_cert_pem;
    char *client_key_pem;
};

TS_FN char *ts_datum_str(gnutls_datum_t *d)
{
    char *s = malloc(d->size + 1);
    memcpy(s, d->data, d->size);
    s[d->size] = '\0';
    gnutls_free(d->data);
    return s;
}

TS_FN void ts_set_common(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, int serial,
                          const char *cn)
{
    unsigned char ser = (unsigned char)serial;
    time_t now = time(NULL);
    gnutls_x509_crt_set_version(crt, 3);
    gnutls_x509_crt_set_serial(crt, &ser, 1);
    gnutls_x509_crt_set_activation_time(crt, now - 3600);
    gnutls_x509_crt_set_expiration_time(crt, now + 86400);
    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn));
    gnutls_x509_crt_set_key(crt, key);
}

/* A CA, a server certificate for 127.0.0.1 and dns_name, and a client
 * certificate, all ECDSA P-256. 0 or -1. */
TS_FN int ts_pki_make(struct ts_pki *p, const char *dns_name)
{
    gnutls_x509_privkey_t cak, sk, ck;
    gnutls_x509_crt_t ca, sc, cc;
    gnutls_datum_t d;
    unsigned char ip[4] = { 127, 0, 0, 1 };
    unsigned char kid[64];
    size_t kidlen = sizeof(kid);
    int rc = 0;

    gnutls_x509_privkey_init(&cak);
    gnutls_x509_privkey_init(&sk);
    gnutls_x509_privkey_init(&ck);
    rc |= gnutls_x509_privkey_generate(ck, GNUTLS_PK_ECDSA,
                                       GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    rc |= gnutls_x509_privkey_generate(cak, GNUTLS_PK_ECDSA,
                                       GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    rc |= gnutls_x509_privkey_generate(sk, GNUTLS_PK_ECDSA,
                                       GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    gnutls_x509_crt_init(&ca);
    ts_set_common(ca, cak, 1, "rayop-test-ca");
    gnutls_x509_crt_set_basic_constraints(ca, 1, -1);
    gnutls_x509_crt_set_key_usage(ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
    gnutls_x509_crt_get_key_id(ca, 0, kid, &kidlen);
    gnutls_x509_crt_set_subject_key_id(ca, kid, kidlen);
    rc |= gnutls_x509_crt_sign2(ca, ca, cak, GNUTLS_DIG_SHA256, 0);

    gnutls_x509_crt_init(&sc);
    ts_set_common(sc, sk, 2, "rayop-test-server");
    gnutls_x509_crt_set_basic_constraints(sc, 0, -1);
    gnutls_x509_crt_set_key_usage(sc, GNUTLS_KEY_DIGITAL_SIGNATURE);
    gnutls_x509_crt_set_key_purpose_oid(sc, GNUTLS_KP_TLS_WWW_SERVER, 0);
    gnutls_x509_crt_set_subject_alt_name(sc, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_APPEND);
    gnutls_x509_crt_set_subject_alt_name(sc, GNUTLS_SAN_DNSNAME, dns_name, strlen(dns_name),
                                         GNUTLS_FSAN_APPEND);
    gnutls_x509_crt_set_authority_key_id(sc, kid, kidlen);
    rc |= gnutls_x509_crt_sign2(sc, ca, cak, GNUTLS_DIG_SHA256, 0);

    gnutls_x509_crt_init(&cc);
    ts_set_common(cc, ck, 3, "rayop-test-client");
    gnutls_x509_crt_set_basic_constraints(cc, 0, -1);
    gnutls_x509_crt_set_key_usage(cc, GNUTLS_KEY_DIGITAL_SIGNATURE);
    gnutls_x509_crt_set_key_purpose_oid(cc, GNUTLS_KP_TLS_WWW_CLIENT, 0);
    gnutls_x509_crt_set_authority_key_id(cc, kid, kidlen);
    rc |= gnutls_x509_crt_sign2(cc, ca, cak, GNUTLS_DIG_SHA256, 0);
    rc |= gnutls_x509_crt_export2(cc, GNUTLS_X509_FMT_PEM, &d);
    p->client_cert_pem = ts_datum_str(&d);
    rc |= gnutls_x509_privkey_export2(ck, GNUTLS_X509_FMT_PEM, &d);
    p->client_key_pem = ts_datum_str(&d);
    gnutls_x509_crt_deinit(cc);
    gnutls_x509_privkey_deinit(ck);

    rc |= gnutls_x509_crt_export2(ca, GNUTLS_X509_FMT_PEM, &d);
    p->ca_pem = ts_datum_str(&d);
    rc |= gnutls_x509_crt_export2(sc, GNUTLS_X509_FMT_PEM, &d);
    p->server_cert_pem = ts_datum_str(&d);
    rc |= gnutls_x509_privkey_export2(sk, GNUTLS_X509_FMT_PEM, &d);
    p->server_key_pem = ts_datum_str(&d);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(sc);
    gnutls_x509_privkey_deinit(cak);
    gnutls_x509_privkey_deinit(sk);
    return rc == 0 ? 0 : -1;
}

TS_FN void ts_pki_free(struct ts_pki *p)
{
    free(p->ca_pem);
    free(p->server_cert_pem);
    free(p->server_key_pem);
    free(p->client_cert_pem);
    free(p->client_key_pem);
}

/* A config pointing at the test server (caller frees with kube_config_free). */
TS_FN struct kube_config *ts_config(struct ts_server *s, int tls, const char *token)
{
    struct kube_config *cfg = calloc(1, sizeof(*cfg));
    char url[64];
    snprintf(url, sizeof(url), "%s://127.0.0.1:%d", tls ? "https" : "http", s->port);
    cfg->server = strdup(url);
    cfg->namespace = strdup("default");
    if (token != NULL)
        cfg->token = strdup(token);
    return cfg;
}

#endif

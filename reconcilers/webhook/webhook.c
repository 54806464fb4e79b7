/*
 * webhook.c - `rayop webhook`: the validating admission webhook server (webhook.h) as
 * controller-runtime's webhook server runs it for KubeRay: HTTPS on --webhook-addr
 * (:9443) with the serving certificate from --cert-dir (tls.crt, tls.key; re-read when a
 * connection finds them changed is left to a restart, as the Pod's cert is mounted
 * at start), POST only, bodies bounded by WEBHOOK_MAX_BODY. Started by `rayop up` when
 * ENABLE_WEBHOOKS=true (KubeRay's switch).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "reconcilers/host/host.h"
#include "reconcilers/host/http.h"
#include "reconcilers/webhook/webhook.h"
#include "util/util.h"

struct upload {
    struct buf body;
    bool too_big;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_len, void **con_cls)
{
    struct upload *u = *con_cls;
    (void)cls; (void)version;
    if (!u) {
        if (!(u = calloc(1, sizeof(*u))))
            return MHD_NO;
        *con_cls = u;
        return MHD_YES;
    }
    if (*data_len) {
        if (u->body.len + *data_len > WEBHOOK_MAX_BODY)
            u->too_big = true;
        else if (buf_append(&u->body, data, *data_len) < 0)
            return MHD_NO;
        *data_len = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") != 0)
        return host_http_reply(c, 405, "text/plain", "POST only\n", 10);
    if (u->too_big)
        return host_http_reply(c, 413, "text/plain", "request too large\n", 18);
    char *out = NULL;
    int rc = webhook_review(url, u->body.data, u->body.len, &out);
    if (rc == -ENOENT)
        return host_http_reply(c, 404, "text/plain", "not found\n", 10);
    if (rc < 0) {
        log_warn("admission review refused", "path", url, "error", strerror(-rc), NULL);
        return host_http_reply(c, rc == -ENOMEM ? 500 : 400, "text/plain", "bad AdmissionReview\n", 20);
    }
    enum MHD_Result r = host_http_reply(c, 200, "application/json", out, strlen(out));
    free(out);
    return r;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    struct upload *u = *con_cls;
    (void)cls; (void)c; (void)toe;
    if (u) {
        buf_free(&u->body);
        free(u);
        *con_cls = NULL;
    }
}

static void usage(FILE *f)
{
    fputs("usage: rayop webhook [--webhook-addr ADDR] [--cert-dir DIR] [--log-level L]\n"
          "KubeRay's validating admission webhooks over HTTPS (ENABLE_WEBHOOKS=true):\n"
          "  /validate-ray-io-v1-raycluster, /validate-ray-io-v1-rayjob, /validate-ray-io-v1-rayservice\n"
          "  --webhook-addr ADDR   listen address (default :9443; :0 picks a port, logged)\n"
          "  --cert-dir DIR        tls.crt and tls.key (default /tmp/k8s-webhook-server/serving-certs)\n", f);
}

int webhook_main(int argc, char **argv)
{
    const char *addr = ":9443", *dir = "/tmp/k8s-webhook-server/serving-certs";
    char host[100], path[600], bound[16];
    int port, rc = 1;
    char *cert = NULL, *key = NULL;
    struct MHD_Daemon *d = NULL;
    log_set_component("webhook");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        if (!eq)
            i++;
        if (nl == 14 && !strncmp(a, "--webhook-addr", nl))
            addr = v;
        else if (nl == 10 && !strncmp(a, "--cert-dir", nl))
            dir = v;
        else if (nl == 11 && !strncmp(a, "--log-level", nl) && log_parse_level(v) >= 0)
            log_set_level(log_parse_level(v));
        else {
            fprintf(stderr, "rayop webhook: unknown flag \"%.*s\"\n", (int)nl, a);
            return 2;
        }
    }
    if (host_parse_addr(addr, host, sizeof(host), &port) < 0 || port < 0) {
        fprintf(stderr, "rayop webhook: bad --webhook-addr %s\n", addr);
        return 2;
    }
    /* a serving certificate and key are a few KiB; 1 MiB bounds what is read */
    size_t len;
    snprintf(path, sizeof(path), "%s/tls.crt", dir);
    if (util_read_file(path, 1u << 20, &cert, &len) < 0)
        cert = NULL;
    snprintf(path, sizeof(path), "%s/tls.key", dir);
    if (util_read_file(path, 1u << 20, &key, &len) < 0)
        key = NULL;
    if (!cert || !key) {
        log_error("no serving certificate (tls.crt, tls.key)", "dir", dir, NULL);
        goto out;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (!host[0] || !strcmp(host, "0.0.0.0"))
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
    else if (!strcmp(host, "localhost"))
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        log_error("listen address must be an IPv4 address", "address", addr, NULL);
        goto out;
    }
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG, 0,
                         NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                         MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
                         MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
                         MHD_OPTION_END);
    if (!d) {
        log_error("cannot serve the webhooks", "address", addr, NULL);
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(bound, sizeof(bound), "%u", di ? (unsigned)di->port : (unsigned)port);
    log_info("serving webhooks", "address", addr, "port", bound, "certDir", dir, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    int sig = 0;
    sigwait(&set, &sig);
    log_info("signal received; stopping", "signal", strsignal(sig), NULL);
    rc = 0;
out:
    if (d)
        MHD_stop_daemon(d);
    free(cert);
    if (key) {
        explicit_bzero(key, strlen(key));
        free(key);
    }
    return rc;
}

/*
 * runtime.h - kubesim's Pod runtime (`kubesim --run-image REPO=ROOT`): a Pod whose
 * containers' images name a repository REPO (or .../REPO) is not simulated but run: every
 * container is a real process started from the command it states, with ROOT/bin first on
 * PATH. Each such Pod gets a network namespace holding its Pod IP (reached from kubesim
 * through a node namespace kubesim owns, never the host's network), and each container a
 * private mount namespace with the Pod's volumes at their mount paths. Probes, restarts
 * with back-off, per-container logs and graceful termination follow the kubelet.
 *
 * The simulated kubelet (kubesim/cluster) hands such Pods over once bound and on deletion;
 * from then on the runtime alone writes their status and removes them when their
 * processes are gone. Details and limits: docs/kubesim-runtime.md.
 */
#ifndef RAYOP_KUBESIM_RUNTIME_H
#define RAYOP_KUBESIM_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "util/util.h"

struct store;
struct store_obj;
struct runtime;

/* The ClusterIP of the `kubernetes` Service as Pods see it: KUBERNETES_SERVICE_HOST. kubesim's
 * serving certificate carries it as a SAN. */
#define RUNTIME_SERVICE_IP "10.96.0.1"
#define RUNTIME_SERVICE_PORT 443
#define RUNTIME_SERVICE_CIDR "10.96.0.0/12"   /* kubesim's Service range (store/defaults.c) */
#define RUNTIME_MAX_IMAGES 16

struct runtime_opts {
    size_t nimages;
    char repo[RUNTIME_MAX_IMAGES][256];
    char root[RUNTIME_MAX_IMAGES][1024];
};

/* Handles "run-image" (REPO=ROOT, repeatable). 0, -ENOENT for another flag, -EINVAL with
 * err set for a bad value. The first call allocates *o. */
int runtime_parse_flag(struct runtime_opts **o, const char *flag, const char *value,
                       char *err, size_t errlen);

struct runtime_conf {
    struct store *store;
    int api_port;              /* kubesim's port on 127.0.0.1 (Pods reach it via the relay) */
    const char *ca_pem;        /* CA of kubesim's certificate (--tls), or NULL */
    size_t ca_len;
    const char *token;         /* the bearer token Pods present, or NULL */
};

/* Starts the runtime thread (and, as root, the node namespace and the API relay). o NULL or
 * without images: *out NULL, 0. */
int runtime_start(const struct runtime_opts *o, const struct runtime_conf *conf,
                  struct runtime **out);
/* Terminates every Pod's processes (SIGTERM, then SIGKILL after a few seconds), removes
 * namespaces, mounts and files, and frees rt. NULL is fine. */
void runtime_stop(struct runtime *rt);

/* Does a container of pod name an image the runtime runs? */
bool runtime_claims(const struct runtime *rt, const cJSON *pod);
/* Runs a bound Pod (a copy of pod is taken) at ip. Called once per Pod uid. */
void runtime_pod_run(struct runtime *rt, const cJSON *pod, const char *ip);
/* The Pod is being deleted: terminate its containers within grace_ms, then remove it from
 * the store. */
void runtime_pod_delete(struct runtime *rt, const char *uid, long grace_ms);

/* The log of a container of a Pod the runtime runs, from byte off: previous = the run before
 * the current one. *running: the container is running now (for follow). 0, or -ENOENT when
 * the runtime does not run this Pod/container (or has no previous run). */
int runtime_log(struct runtime *rt, const char *uid, const char *container, bool previous,
                size_t off, struct buf *out, bool *running);

/* ---- the API server's service and pod proxy ------------------------------------------- */

#define RUNTIME_HTTP_MAX_BODY (32 << 20)
#define RUNTIME_HTTP_MAX_PATH 8192

struct runtime_http_req {
    const char *method;        /* "GET", ... (upper-case letters) */
    const char *path;          /* "/a/b?q=1": starts with '/', no spaces or control bytes */
    const char *ctype;         /* Content-Type to send, or NULL */
    const char *accept;        /* Accept to send, or NULL */
    const char *body;
    size_t len;
};

struct runtime_http_reply {
    long code;
    char ctype[128];
    char *body;                /* malloc'd, NUL-terminated; the caller frees it */
    size_t len;
    char err[300];             /* on failure: the API server's wording */
};

/* req to port of the Pod uid the runtime runs, at its Pod IP (from the node namespace).
 * 0 with *out; -ENOENT when the runtime does not run that Pod; -ECONNREFUSED,
 * -ETIMEDOUT, -EFBIG, -EINVAL, -EIO with out->err set. Blocks up to 30 s: call it from a
 * connection's thread. */
int runtime_http(struct runtime *rt, const char *uid, int port, const struct runtime_http_req *req,
                 struct runtime_http_reply *out);

/* The hidden subcommands kubesim re-executes itself with ("__runtime-sandbox",
 * "__runtime-exec"): returns an exit status, or -1 when argv is not one of them. */
int runtime_helper_main(int argc, char **argv);

#endif

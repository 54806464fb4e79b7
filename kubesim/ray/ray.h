/*
 * ray.h - kubesim's simulated Ray runtime. When a Pod labelled ray.io/node-type=head
 * is Ready, a Ray cluster exists for it (its workers are the Ready Pods with the same
 * ray.io/cluster label in its namespace). Its dashboard (Jobs and Serve REST APIs,
 * version and health paths) is reached the way a real one is: through the API
 * server's service proxy, /api/v1/namespaces/NS/services/NAME:PORT/proxy/..., which
 * resolves the Service's Endpoints to the head Pod. When the head Pod goes (deleted,
 * or its container restarts), its jobs and applications are lost.
 *
 * The kubelet plays a Pod whose container runs KubeRay's submitter command (`ray job
 * submit ...`, `ray job logs --follow ...`, or the light-weight /submitter) through
 * ray_submitter_*: the runtime runs the command against the cluster its --address
 * names, and decides when the container exits and with what code. Its output is the
 * Pod's log, served by pods/NAME/log (which answers for every Pod).
 *
 * Threads: HTTP handlers run on connection threads, submitters on one thread each;
 * all state sits behind one mutex. Job and application states are functions of time
 * (computed when asked), so no timer thread exists. Behaviour and knobs:
 * docs/kubesim-ray.md.
 */
#ifndef RAYOP_KUBESIM_RAY_H
#define RAYOP_KUBESIM_RAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

struct ray;
struct server;
struct store;

/* Creates the runtime, subscribes to the store (Pod deletions drop clusters) and
 * registers services/proxy, pods/log and the /kubesim/ray/ admin route. Call before
 * server_start. 0 or a negative errno. Free with ray_stop + ray_free (after
 * store_close: the store has no unsubscribe). */
struct buf;
int ray_install(struct server *srv, struct store *store, struct ray **out);
/* pods/log asks fn first: 0 with the log of the container from byte off appended to out
 * (*running: still running, for follow), or -ENOENT when fn does not keep that Pod's logs
 * (kubesim/runtime: real processes). Set before the server starts. */
typedef int (*ray_log_source_fn)(void *arg, const char *uid, const char *container,
                                 bool previous, size_t off, struct buf *out, bool *running);
void ray_set_log_source(struct ray *r, ray_log_source_fn fn, void *arg);
/* The service and pod proxy ask fn first for the Pod (uid) they resolved and its port:
 * 0 with *out answered; -ENOENT when fn does not run that Pod (kubesim/runtime: real
 * processes), so the simulated dashboard answers; another -errno with out->err for a
 * failed dial (503). Set before the server starts. */
struct runtime_http_req;
struct runtime_http_reply;
typedef int (*ray_http_source_fn)(void *arg, const char *uid, int port,
                                  const struct runtime_http_req *req,
                                  struct runtime_http_reply *out);
void ray_set_http_source(struct ray *r, ray_http_source_fn fn, void *arg);
/* Cancels running submitters and waits for their threads. NULL is fine. */
void ray_stop(struct ray *r);
void ray_free(struct ray *r);

/* ---- the kubelet's hook ----------------------------------------------------------- */

/* Called by the kubelet when pod's containers start. true when the Pod runs a Ray
 * submitter command: the runtime then plays it, and the kubelet polls ray_submitter_poll
 * instead of using its own exit timer. */
bool ray_submitter_start(struct ray *r, const cJSON *pod);
/* true with *code set once the submitter of Pod uid has exited. */
bool ray_submitter_poll(struct ray *r, const char *uid, int *code);
/* A Pod of several containers whose submitter the runtime plays (KubeRay's SidecarMode):
 * true with the submitter container's name in container (cap >= 64), so the kubelet can
 * report that container's own exit (ray_submitter_poll) while the Pod runs on. */
bool ray_submitter_sidecar(struct ray *r, const char *uid, char *container, size_t cap);
/* The Pod is going: stop its submitter (its log stays until ray_free). */
void ray_submitter_cancel(struct ray *r, const char *uid);

/* ---- pure parts, for unit tests and fuzzing ----------------------------------------- */

/* A dashboard answer: HTTP code, content type and body (owned, free with free()). */
struct ray_resp {
    int code;
    const char *ctype;
    char *body;
    size_t len;
};

struct ray_cluster;
/* A cluster with no jobs or apps, for tests: ns, name, head IP. Free with ray_cluster_free. */
struct ray_cluster *ray_cluster_new(const char *ns, const char *name, const char *head_ip);
void ray_cluster_free(struct ray_cluster *c);
/* Answers one dashboard request against c at time now_ms (unix ms). path is the path
 * behind the proxy ("/api/jobs/"), body may be NULL. Bounded: bodies over 1 MiB are
 * refused. 0, or -ENOMEM (out->body may then be NULL). */
int ray_dashboard_serve(struct ray_cluster *c, uint64_t now_ms, const char *method,
                        const char *path, const char *body, size_t len, struct ray_resp *out);

#endif

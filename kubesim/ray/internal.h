/*
 * internal.h - state shared by the simulated Ray runtime's parts:
 *   runtime.c        clusters, jobs, Serve applications and their time-derived states
 *   dashboard.c      the dashboard's REST handlers (pure: cluster + request -> answer)
 *   serve.c          Serve REST API (applications PUT/GET/DELETE) and Serve's HTTP proxy
 *   proxy.c          services/NAME/proxy and host resolution (Service -> Endpoints -> Pod)
 *   submitter.c      the submitter command parser (pure, fuzzed)
 *   submitter_run.c  plays a submitter container on its own thread (the bash part)
 *   cli.c            the commands it runs: ray job ..., /submitter, the health check
 *   pod_log.c        pods/NAME/log
 * Everything below struct ray is guarded by ray.mu.
 */
#ifndef RAYOP_KUBESIM_RAY_INTERNAL_H
#define RAYOP_KUBESIM_RAY_INTERNAL_H

#include <pthread.h>
#include <uthash.h>

#include "kobj/kobj.h"
#include "kubesim/ray/ray.h"
#include "kubesim/registry/registry.h"
#include "util/util.h"

#define RAY_MAX_BODY      (1u << 20)   /* dashboard request bodies */
#define RAY_MAX_JOBS      10000        /* per cluster */
#define RAY_MAX_APPS      256          /* per cluster */
#define RAY_DASHBOARD_PORT 8265
#define RAY_SERVE_PORT    8000

/* Default timings (ms); per job or app overridable (docs/kubesim-ray.md). */
#define RAY_JOB_PENDING_MS   500
#define RAY_JOB_RUN_MS       3000
#define RAY_APP_DEPLOY_MS    1000

struct ray_job {
    char *id;                    /* submission_id, hash key */
    char job_id[16];             /* the Ray JobID (hex), set when the driver starts */
    char *entrypoint;
    cJSON *runtime_env, *metadata, *resources;   /* NULL when not given */
    double num_cpus, num_gpus;
    long long memory;
    bool has_cpus, has_gpus, has_memory;
    uint64_t submit_ms, start_ms, end_ms;        /* PENDING until start_ms, RUNNING until end_ms */
    uint64_t stop_ms;                            /* 0, or when stop was asked */
    int exit_code;                               /* the entrypoint's, once it ends */
    unsigned seq;                                /* submission order */
    UT_hash_handle hh;
};

struct ray_app {
    char *name;                  /* hash key */
    cJSON *config;               /* the application's entry of the deployed config */
    uint64_t deployed_ms, deploy_ms;
    char target[16];             /* RUNNING, UNHEALTHY or DEPLOY_FAILED once deployed */
    char forced[16];             /* "" or a status set through /kubesim/ray/ */
    char forced_msg[256];
    unsigned seq;
    UT_hash_handle hh;
};

struct ray_cluster {
    char *uid;                   /* the head Pod's uid, hash key ("" for test clusters) */
    char ns[64];
    char name[254];              /* ray.io/cluster label, else the head Pod's name */
    char head[254];              /* head Pod name */
    char head_ip[20];
    int restarts;                /* head container restarts seen at creation */
    uint64_t created_ms;
    char node_id[57];
    char session[64];
    int workers;                 /* Ready workers, refreshed before each request */
    double cpus, gpus;           /* Ray resources of head + Ready workers */
    struct ray_job *jobs;
    unsigned job_seq, driver_seq;
    struct ray_app *apps;
    unsigned app_seq;
    bool serve_started;
    bool has_target_capacity;    /* the last PUT's target_capacity (0..100), else null */
    int delay_ms;                /* every answer of this cluster's dashboard and Serve proxy
                                    comes this late (admin .../delay): a slow head */
    unsigned dash_asked, dash_answered; /* dashboard requests in, answers out (after the
                                           delay): /kubesim/ray/clusters shows them, so a test
                                           sees a call still out */
    int target_capacity;
    unsigned serve_puts;         /* Serve config PUTs accepted */
    unsigned serve_puts_same;    /* ... of them, ones that changed nothing: every application
                                    and target_capacity as deployed (/kubesim/ray/ shows both,
                                    the chaos soak's "no PUT without a change" invariant) */
    uint64_t serve_started_ms;   /* when the Serve controller first started */
    char *auth_token;            /* RAY_AUTH_MODE=token: the token requests must carry
                                    ("" = none can); NULL: no auth. A credential. */
    UT_hash_handle hh;
};

struct ray_sub;                  /* submitter_run.c */

struct ray {
    struct store *store;
    struct server *srv;
    const struct reg_resource *r_pods, *r_svc, *r_ep;
    const struct reg_resource *r_secrets;   /* NULL if the registry has none */
    long dash_delay_ms;          /* KUBESIM_RAY_DASHBOARD_DELAY_MS: every dashboard answer
                                    waits this long (a slow head; benchmarks) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct ray_cluster *clusters;
    struct ray_sub *subs;
    int threads;                 /* running submitter threads */
    bool stopping;
    ray_log_source_fn log_fn;    /* Pods whose logs another part of kubesim keeps */
    void *log_arg;
    ray_http_source_fn http_fn;  /* Pods whose HTTP ports are real processes */
    void *http_arg;
};

/* ---- runtime.c ---- */
const char *ray__job_status(const struct ray_job *j, uint64_t now_ms);
bool ray__status_terminal(const char *status);
/* The driver log of j as of now_ms (what /logs returns); appended to out. */
int ray__job_logs(const struct ray_cluster *c, const struct ray_job *j, uint64_t now_ms,
                  struct buf *out);
/* Reads KUBESIM_* knobs from runtime_env.env_vars or metadata: the string, or NULL. */
const char *ray__knob(const cJSON *runtime_env, const cJSON *metadata, const char *key);
/* A knob's value as a number of seconds in [0, max]: def when v is NULL, not a
 * number, negative or not finite; capped at max. */
double ray__knob_seconds(const char *v, double def, double max);
void ray__job_free(struct ray_job *j);
void ray__app_free(struct ray_app *a);
uint64_t ray__now_ms(void);      /* unix ms */
/* Finds (creating when new) the cluster of a Ready head Pod; drops a stale one (other
 * uid with the same head name, or a restarted container). A new cluster takes *token
 * (ray__pod_auth_token of pod, read before taking the lock) and sets it NULL. Under r->mu. */
struct ray_cluster *ray__cluster_for_head(struct ray *r, const cJSON *pod, char **token);

/* ---- auth.c: Ray token authentication ---- */
/* The token a head Pod's Ray container expects (RAY_AUTH_MODE=token; RAY_AUTH_TOKEN as a
 * value or Secret reference), "" when it cannot be read, NULL without token auth. Reads
 * the store: call without r->mu. Caller frees. */
char *ray__pod_auth_token(struct ray *r, const cJSON *pod);
/* A copy of a container's env with secretKeyRef values filled in (store reads: call
 * without r->mu). NULL for NULL env or out of memory. */
cJSON *ray__env_resolve(struct ray *r, const char *ns, const cJSON *env);
/* Ray's token_auth_middleware for a request to c: 0 to serve it, 1 with out set to the
 * 401/403 answer, -ENOMEM. authz / x_ray_authz are the header values (NULL if absent). */
int ray__auth_check(const struct ray_cluster *c, const char *path, const char *authz,
                    const char *x_ray_authz, struct ray_resp *out);

/* ---- serve.c ---- */
int ray__serve_handle(struct ray_cluster *c, uint64_t now_ms, const char *method,
                      const char *path, const char *body, size_t len, struct ray_resp *out);
const char *ray__app_status(const struct ray_app *a, uint64_t now_ms);
/* The Serve HTTP proxy (port 8000 of every Ray node once Serve runs): /-/healthz,
 * /-/routes, and application routes by longest route_prefix. */
int ray__serve_http(struct ray_cluster *c, uint64_t now_ms, const char *method,
                    const char *path, struct ray_resp *out);
/* Admin: sets (status "" clears) the forced status of an app. 0 or -ENOENT / -EINVAL. */
int ray__serve_force(struct ray_cluster *c, const char *app, const char *status,
                     const char *message);

/* ---- dashboard.c ---- */
int ray__resp_text(struct ray_resp *out, int code, const char *text);
int ray__resp_json(struct ray_resp *out, int code, cJSON *body);   /* body consumed */

/* ---- proxy.c ---- */
/* Where a connection to HOST:PORT (or a Service port) lands. */
struct ray_target {
    int code;                    /* 0 = reached a dashboard; else the HTTP error to answer */
    char reason[32];
    char message[512];
    char uid[64];                /* head Pod uid when code == 0 */
    int workers;                 /* Ready workers of that cluster */
    bool serve;                  /* the Serve HTTP proxy (port "serve"), not the dashboard */
    char pod_uid[64];            /* the endpoint Pod reached, for r->http_fn ("" none) */
    int pod_port;
};
/* Service ns/name, port (number, name or "" as in the proxy path) -> target. */
void ray__resolve_service(struct ray *r, const char *ns, const char *name, const char *port,
                          struct ray_target *t);
/* A submitter's --address host (DNS name, Service or Pod IP, localhost = its own Pod
 * self) and port, seen from namespace ns -> target; failures are connection errors
 * (t->message as the CLI says). */
void ray__resolve_host(struct ray *r, const char *ns, const cJSON *self, const char *host,
                       int port, struct ray_target *t);
/* One dashboard request against a resolved target (locks r->mu). 0 or -ENOENT when
 * the cluster went in between (the caller answers as for a refused connection). */
/* authz / x_ray_authz: the Authorization / X-Ray-Authorization header values the client
 * sent (NULL if none), checked when the cluster uses token auth. */
int ray__target_request(struct ray *r, const struct ray_target *t, const char *method,
                        const char *path, const char *body, size_t len, const char *authz,
                        const char *x_ray_authz, struct ray_resp *out);

/* ---- submitter.c: a container's command as a script tree ---- */
#define RAY_MAX_SCRIPT (256 * 1024)   /* bytes of script */
#define RAY_MAX_ARGV   4096           /* command + args words */

enum { RN_CMD, RN_IF, RN_UNTIL, RN_WHILE };
/* how a node follows the previous one of its list; RJ_PIPE: the previous one's stdout is
 * this one's stdin (a pipeline is the nodes joined by RJ_PIPE, its status the last's) */
enum { RJ_SEQ, RJ_AND, RJ_OR, RJ_PIPE };

struct ray_node {
    int kind;                    /* RN_* */
    int join;                    /* RJ_* */
    bool negate;                 /* "! cmd" */
    bool quiet_out, quiet_err;   /* redirected to /dev/null */
    char **argv;                 /* RN_CMD: expanded words, NULL-terminated */
    size_t argc;
    struct ray_node *cond, *body, *els;   /* RN_IF (els: else/elif), RN_UNTIL/RN_WHILE */
    struct ray_node *next;
};

struct ray_script {
    struct ray_node *list;
    bool errexit;                /* bash -e */
};

/* Parses a bash script (the subset in submitter.c) with $VAR from env (a container's
 * env array; valueFrom entries expand to ""). 0 with *out (free with
 * ray__script_free_nodes), or -EINVAL/-E2BIG with err set, or -ENOMEM. */
int ray__script_parse_text(const char *text, size_t len, const cJSON *env,
                           struct ray_node **out, char *err, size_t errlen);
/* A container's command/args as a script: 0 with *out (free with ray__script_free),
 * -ENOENT when it does not run `ray job ...` or /submitter, -EINVAL/-E2BIG with err set
 * for a command that cannot be read, -ENOMEM. */
int ray__script_from_container(const cJSON *container, struct ray_script **out, char *err,
                               size_t errlen);
void ray__script_free(struct ray_script *s);
void ray__script_free_nodes(struct ray_node *n);

/* ---- submitter_run.c: one running submitter container; cli.c: its commands ---- */
/* A submitter container (by Pod uid), its output and its run. Under ray.mu. */
struct ray_sub {
    char *uid;                   /* the Pod's, hash key */
    char ns[64];
    char container[254];         /* the submitter container */
    cJSON *pod;                  /* copy: "self" for localhost addresses */
    cJSON *env;                  /* the submitter container's env */
    struct ray_script *script;   /* while running */
    struct buf log, prev;        /* this run's output, the previous run's */
    bool has_prev, running, done, cancel, gone;
    int code;
    UT_hash_handle hh;
};

/* The interpreter's state for one run (owned by the run's thread). */
struct ray_exec {
    struct ray *r;
    struct ray_sub *s;
    bool errexit, exited;
    int code;
    struct buf *pipe_out;        /* this command's stdout feeds the next one (a pipe) */
    const char *pipe_in;         /* this command's stdin: the previous one's stdout */
    size_t pipe_in_len;
};

/* Appends to the container's output unless quiet (its stream is redirected away). */
void ray__exec_write(struct ray_exec *x, bool quiet, const char *text, size_t len);
void ray__exec_printf(struct ray_exec *x, bool quiet, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Standard output of the commands that can sit on the left of a pipe (echo, wget, grep):
 * into the pipe when there is one, otherwise as ray__exec_write. */
void ray__exec_stdout(struct ray_exec *x, bool quiet, const char *text, size_t len);
/* Sleeps ms unless the container is cancelled: 0, or -ECANCELED. */
int ray__exec_nap(struct ray_exec *x, long ms);
/* The container's env value of name, or NULL. */
const char *ray__exec_env(const struct ray_exec *x, const char *name);

/* cli.c: `ray job ...`, the light-weight /submitter, KubeRay's python health check.
 * Each returns the command's exit status. */
int ray__cli_ray(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe);
int ray__cli_lightweight(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe);
int ray__cli_python(struct ray_exec *x, char *const *av, size_t ac, bool qe);
/* GNU wget's `wget [-q] [--tries N] [-T N] [-O FILE] URL` (KubeRay v1.5's probes and its
 * sidecar submitter's wait loop run `wget ... -O- URL | grep success`). */
int ray__cli_wget(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe);

void ray__subs_free(struct ray *r);
/* The Pod left the store: cancel and forget its submitter. Under r->mu. */
void ray__submitter_gone(struct ray *r, const char *uid);
/* Appends the output of Pod uid's submitter (if it runs in container) from byte from on
 * (previous: the run before the last restart) to out; *running tells whether more may
 * come. -ENOENT when the Pod has no submitter (or no previous run). Locks r->mu. */
int ray__submitter_log(struct ray *r, const char *uid, const char *container, bool previous,
                       size_t from,
                       struct buf *out, bool *running);

/* ---- pod_log.c ---- */
int ray__pod_log_install(struct ray *r);
/* The routes of the dashboard proxy and the Serve admin API (proxy.c) and of the
 * Gateway routing (gateway.c), installed by ray_install. */
int ray__proxy_install(struct ray *r);
int ray__admin_install(struct ray *r);
int ray__gateway_install(struct ray *r);

#endif

/*
 * internal.h - state shared by the runtime's files: runtime.c (the thread, Pod table,
 * container lifecycle and status), pod.c (what a container is started with: env, volumes,
 * the spec the exec helper reads), net.c (node namespace, Pod network, API relay),
 * svcproxy.c (ClusterIP routing), forward.c (the API server's service/pod proxy), probe.c,
 * helper.c (the re-executed helpers). The Pod table is the runtime thread's; the mutex guards
 * what other threads read (logs) and the command queue.
 */
#ifndef RAYOP_KUBESIM_RUNTIME_INTERNAL_H
#define RAYOP_KUBESIM_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "kobj/kobj.h"
#include "kubesim/runtime/runtime.h"

#define RUNTIME_EXIT_START_ERROR 128  /* the kubelet's StartError exit code */
#define RUNTIME_EXIT_NOT_FOUND 127

struct reg_resource;

enum rt_cstate { RC_WAITING, RC_RUNNING, RC_BACKOFF, RC_TERMINATED };

struct rt_probe {
    const cJSON *spec;          /* the Pod's probe object, or NULL */
    uint64_t next_ms;
    int fails, oks;
    pid_t exec_pid;             /* an exec probe in flight */
    int exec_fd;                /* its pidfd */
    uint64_t exec_deadline_ms;
};

struct rt_ctr {
    const cJSON *spec;          /* in pod->json */
    bool init;                  /* an init container: runs to completion, in order */
    char name[64];
    const char *root;           /* ROOT of the matching --run-image */
    enum rt_cstate st;
    pid_t pid;
    int pidfd;
    int restarts;               /* restartCount */
    int backoff_n;              /* back-off steps since the last long run */
    time_t started_at;
    bool ready;
    uint64_t due_ms;            /* RC_BACKOFF: restart at */
    uint64_t kill_ms;           /* SIGTERM sent: SIGKILL at (0 = none) */
    bool liveness_kill;
    /* the last termination (lastState, or state when RC_TERMINATED) */
    bool has_last;
    int last_code, last_signal;
    char last_reason[32];
    char last_msg[512];
    time_t last_start, last_finish;
    /* the termination before that one: lastState once the container has terminated for good */
    bool has_prev;
    int prev_code, prev_signal;
    char prev_reason[32];
    time_t prev_start, prev_finish;
    char waiting_reason[32], waiting_msg[800];
    struct rt_probe live, rdy;
};

struct rt_pod {
    char uid[64], ns[64], name[254];
    cJSON *json;
    char ip[20];
    int idx;                    /* veth index in the node namespace */
    char dir[512];              /* RUNDIR/UID */
    pid_t sandbox;
    int sandbox_fd;
    struct rt_ctr *c;           /* the init containers (c[0..ninit)), then the others */
    size_t nc, ninit;
    bool deleting;
    uint64_t delete_ms;         /* SIGKILL what is left at */
    bool dirty;                 /* status to write */
    time_t start_time;
    char fail[300];             /* the Pod cannot run (no root, network): shown as waiting */
    uint64_t mount_retry_ms;    /* a volume's Secret/ConfigMap is missing: set up again at */
    unsigned mount_fails;
    struct rt_pod *next;
};

struct rt_cmd {
    int kind;                   /* 0 run, 1 delete */
    cJSON *pod;
    char uid[64], ip[20];
    long grace_ms;
    struct rt_cmd *next;
};

struct runtime {
    struct runtime_opts o;
    struct runtime_conf conf;
    char *ca, *token;
    struct store *store;
    const struct reg_resource *r_pods, *r_secrets, *r_cms, *r_events;
    char dir[256];              /* RUNDIR */
    char self[4096];           /* /proc/self/exe resolved */
    bool root;                  /* namespaces available */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    struct rt_cmd *cmds, **cmds_tail;
    atomic_bool stop;           /* polled by every thread and pump, set once */
    int wake[2];
    struct rt_pod *pods;        /* under mu for readers; changed by the thread under mu */
    int next_idx;
    /* node namespace and the API relay */
    pid_t node;
    int node_fd, host_netns, node_netns;
    int relay_lfd;
    pthread_t relay_thread;
    bool relay_started;
    int relays_active;          /* pump threads alive (atomic) */
    /* the Service proxy (svcproxy.c) */
    const struct reg_resource *r_svc, *r_ep;
    int svc_wake[2];
    pthread_t svc_thread;
    bool svc_started;
};

/* runtime.c */
uint64_t runtime__now_ms(void);
bool runtime__stopping(struct runtime *rt);   /* runtime_stop has begun */
int runtime__read_file(const char *path, size_t max, char **out, size_t *len);
int runtime__write_file(const char *path, const void *data, size_t len, mode_t mode);
long runtime__jnum(const cJSON *o, const char *k, long def);
void runtime__event(struct runtime *rt, struct rt_pod *p, const char *type, const char *reason,
                    const char *field_path, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* pod.c */
#define RT_ENV_MAX_VALUE (128 * 1024)   /* Linux's MAX_ARG_STRLEN: one exec string */
/* Kubernetes' $(VAR) expansion of in against env (a JSON array of "K=V", the last
 * definition winning), appended to out: $(NAME) of a defined variable becomes its value,
 * $$ a literal $, anything else stays as written. -E2BIG past RT_ENV_MAX_VALUE bytes
 * (definitions that double each other grow exponentially). */
int runtime__env_expand(const cJSON *env, const char *in, struct buf *out);
/* A downward-API fieldPath of p (metadata.name, metadata.labels['k'], status.podIP, ...)
 * appended to out; -EINVAL for a path the kubelet does not serve. */
int runtime__field_value(const struct rt_pod *p, const char *path, struct buf *out);
/* tmpfs size= text for an emptyDir sizeLimit quantity ("0" = the tmpfs default). */
void runtime__size_text(const char *q, char *out, size_t len);
/* Files and directories of the Pod's volumes under p->dir; the Memory ones are listed in
 * memdirs ("DIR SIZE" pairs for the sandbox). -ENOENT: a Secret or ConfigMap it needs is
 * missing (the kubelet retries: FailedMount). */
int runtime__pod_volumes(struct runtime *rt, struct rt_pod *p, cJSON *memdirs, char *err, size_t errlen);
/* Starts kubesim itself with argv (a helper) in a new session, stdout/stderr appended to log
 * (/dev/null when NULL), pass_fd as as_fd when pass_fd >= 0. *pid and a *pidfd. */
int runtime__spawn(struct runtime *rt, char *const *argv, const char *log, int pass_fd, int as_fd,
                   pid_t *pid, int *pidfd);
/* Starts container c of p (its spec file, env, mounts); 0 or -errno with err set. */
int runtime__ctr_spawn(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, char *err, size_t errlen);
/* Runs cmd (a JSON array) inside running container c, output discarded. */
int runtime__exec_spawn(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, const cJSON *cmd,
                        pid_t *pid, int *pidfd);
/* The log file of run n of container c. */
void runtime__log_path(const struct rt_pod *p, const char *ctr, int n, char *out, size_t len);

/* helper.c */
/* The exec helper's spec (written by pod.c) is well formed: argv a non-empty array of
 * strings, env "K=V" strings, mounts with absolute src/dst, ids in range. 0 or -EINVAL
 * with err set. */
int runtime__spec_check(const cJSON *spec, char *err, size_t errlen);

/* net.c */
int runtime__net_start(struct runtime *rt);
void runtime__net_stop(struct runtime *rt);
/* The Pod's eth0 with p->ip, routed from the node namespace. */
int runtime__net_pod(struct runtime *rt, struct rt_pod *p, char *err, size_t errlen);
/* A socket in the node namespace (reaches Pod IPs). */
int runtime__node_socket(struct runtime *rt, int type);
/* Copies bytes both ways between a and b until either ends or the runtime stops; closes
 * both. */
void runtime__pump(struct runtime *rt, int a, int b);
/* fn(arg) on a detached thread counted in rt->relays_active (runtime__net_stop waits for them). */
int runtime__thread_detached(struct runtime *rt, void *(*fn)(void *), void *arg);

/* svcproxy.c */
int runtime__svc_start(struct runtime *rt);
void runtime__svc_stop(struct runtime *rt);
int runtime__svc_endpoint(const cJSON *endpoints, const char *port_name, unsigned n, char *ip,
                          size_t iplen, int *port);

/* forward.c */
/* A proxied request's method, path and headers are safe to put on the wire: 0 or -EINVAL. */
int runtime__forward_check(const char *method, const char *path, const char *ctype, const char *accept);

/* runtime.c */
/* Index of the --run-image whose REPO the image "[registry/]path/REPO[:tag][@digest]"
 * names (its repository is REPO or ends in /REPO), or -1. */
int runtime__image_match(const struct runtime_opts *o, const char *image);

/* probe.c */
/* Applies one probe result to c; true when readiness changed or liveness gave up (*kill). */
bool runtime__probe_apply(struct rt_ctr *c, struct rt_probe *pr, bool ok, bool *kill);
/* The status code of an HTTP response's first line ("HTTP/1.1 200 OK"), of len bytes
 * (not NUL-terminated): 0, or -EPROTO. */
int runtime__http_status(const char *resp, size_t len, int *code);
/* Runs the probes of c that are due; true when its readiness changed or the liveness probe
 * failed for good (then *kill is set). */
bool runtime__probe_tick(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, uint64_t now,
                         bool *kill);
/* The earliest time a probe of c is due (UINT64_MAX none). */
uint64_t runtime__probe_next(const struct rt_ctr *c);
void runtime__probe_reset(struct rt_ctr *c, uint64_t now);
void runtime__probe_cancel(struct rt_ctr *c);
/* An exec probe's process ended with status: apply it. */
bool runtime__probe_exec_done(struct runtime *rt, struct rt_ctr *c, struct rt_probe *pr, int status,
                              bool *kill);
int runtime__port_of(const struct rt_ctr *c, const cJSON *port);


#endif

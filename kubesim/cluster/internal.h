/*
 * internal.h - state shared by the cluster thread's parts (run.c: the
 * thread, queue, timers, nodes, scheduler loop and Events; kubelet.c: the
 * Pod lifecycle; endpoints.c: Endpoints/EndpointSlices). Everything here
 * is touched by the cluster thread only, except the queue (under qlock).
 */
#ifndef RAYOP_KUBESIM_CLUSTER_INTERNAL_H
#define RAYOP_KUBESIM_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "kobj/kobj.h"
#include "kubesim/cluster/cluster.h"
#include "kubesim/store/store.h"

/* The cluster thread reads Pods and Services inside one tree scope for its whole life
 * (its tables keep only their text: kubesim/store/store.h), trimmed to this many bytes
 * of trees (the ones read longest ago go first) at points where no tree pointer is
 * held: between queue items, timers, turns, and the Pods of a scheduling pass or the
 * Services of an endpoints sync. What one turn wrote is read again by the next (a Pod's
 * bind, then its status, then its timers) without a parse, and a burst does not hold a
 * tree of every Pod it touched. At 10,000 RayClusters the Pods bound in the 0.3-0.6 s
 * before their start and ready timers overflowed 16 MiB and each timer parsed its Pod
 * again; 128 MiB holds them, well inside the 1 GiB kubesim is allowed there. */
#define CLUSTER_SCOPE_BYTES (128u << 20)
/* Queue items handled between two scheduling passes: few enough that the trees of the
 * Pods added meanwhile are still in the scope when the pass binds them. */
#define CLUSTER_SCHED_EVERY 256

/* The longest PodScheduled message kept for a Pod (the text is cut there). */
#define CL_UNSCHED_MSG_MAX 768

struct cl_node {
    char *name;
    struct store_obj *obj;
    struct cluster_res alloc, used;
    char ip[20];
    int64_t free_key, free_pods; /* node_index.c: its rank keys while indexed */
    bool indexed;                /* in cluster->free_idx */
    UT_hash_handle hh;
};

enum cl_stage {
    ST_NONE,        /* unbound, or bound to a node that is not ours */
    ST_BOUND,       /* waiting for the container start */
    ST_PULLFAIL,    /* ErrImagePull / ImagePullBackOff */
    ST_RUNNING,     /* running, not (yet) ready */
    ST_READY,
    ST_BACKOFF,     /* terminated, CrashLoopBackOff until the restart timer */
    ST_DONE,        /* Succeeded or Failed */
};

enum { C_INIT, C_READYTOSTART, C_CONTAINERS, C_READY, C_SCHED, C_N };

struct cl_pod {
    char *key;                   /* "ns/name" */
    struct store_obj *obj;       /* latest seen */
    unsigned long epoch;         /* timers carry it; a new Pod under the same key gets a new one */
    char *acct_node;             /* the node whose used includes req */
    struct cluster_res req;
    bool queued, unsched, deleting;
    bool sched_waiting;          /* PodScheduled reason Schedulable: it fits, its gang does not (gang.c) */
    bool disrupted;              /* DisruptionTarget: a gang scheduler evicted it (gang_volcano.c) */
    bool real;                   /* handed to the runtime (kubesim/runtime) */
    char *unsched_msg;           /* the PodScheduled=False message (malloc'd; NULL: none): most
                                  * Pods never get one, so it is not a buffer in every record */
    uint64_t said;               /* hash of the last gang scheduler Event said of it (gang.c) */
    enum cl_stage stage;
    int restarts;
    int fail_kind;               /* FAIL_* */
    int exit_code;
    long exit_after_ms;
    char ip[20];
    time_t start_time, run_since, term_started, term_finished;
    int last_exit;
    const char *last_reason;
    bool has_last;
    bool cond[C_N];
    time_t cond_time[C_N];
    char cid[24];                /* container id seed */
    char *backoff_ev;            /* name of the BackOff Event repeats bump (one container's;
                                  * malloc'd at the first back-off) */
    int backoff_count;
    /* a sidecar Ray submitter (kubesim/ray/ray.h) exits on its own while the Pod runs on */
    char side_name[64];
    bool side_done;
    int side_exit;
    time_t side_started, side_finished;
    /* what the endpoints sync reads of obj, taken when obj is set (its tree is parsed
     * then anyway): by the sync the tree has often left the cluster thread's scope, and
     * parsing each member Pod again was a fifth of kubesim at 10,000 RayClusters */
    struct cl_pod_ep {
        bool known;              /* false: a field did not fit, the sync reads obj */
        bool ready, terminating;
        char ip[48];             /* status.podIP ("" none; an IPv6 address fits) */
        char *node;              /* spec.nodeName (malloc'd; NULL: none) */
    } ep;
    /* the rest of what the cluster reads of obj (scheduler, kubelet, Jobs, Deployments),
     * taken from its tree when a client wrote it (or at the first look), and left as it
     * was when the cluster wrote it itself: those events are not parsed (own[] below) */
    struct cl_pod_view {
        bool gang;               /* cluster__gang_pod: the gang step reads its trees */
        bool default_sched;      /* schedulerName empty or default-scheduler */
        bool terminal;           /* phase Succeeded or Failed */
        bool deleting;           /* deletionTimestamp set */
        bool pvc;                /* a persistentVolumeClaim volume (VolumeBinding reads it) */
        bool init;               /* spec.initContainers */
        bool job_fin;            /* the Job tracking finalizer */
        long grace_ms;           /* deletionGracePeriodSeconds in ms, -1 none */
        int ctl;                 /* CL_CTL_*: the kind of its controller ownerReference */
        char *ctl_name, *ctl_uid; /* a Job's or ReplicaSet's (malloc'd; NULL otherwise) */
        int ann_fail, ann_code;  /* the kubesim.io/ annotations, as kubelet.c reads them */
        long ann_exit_after;
        cJSON *sched;            /* {"spec":{tolerations, nodeSelector, affinity}} as far as
                                  * set (owned), NULL when none is: what the filters read */
    } v;
    /* the cluster's own writes of this Pod whose events have not come: the event of
     * one brings what the cluster wrote on top of the snapshot before it (events come
     * in commit order), so the record is brought forward without parsing the Pod */
    struct cl_own {
        uint64_t rv;             /* 0: free */
        bool bind;               /* spec.nodeName (the node is acct_node) */
        bool ip, ready, terminal; /* a status write: podIP written, Ready, phase ended */
    } own[3];
    UT_hash_handle hh;
};

enum { CL_CTL_NONE, CL_CTL_JOB, CL_CTL_RS, CL_CTL_OTHER };

/* A Pod a Service's selector matches (by key; looked up in the Pod table at sync). */
struct cl_member {
    char *key;
    UT_hash_handle hh;
};

/* What the endpoints sync last wrote (or found equal) of one object: a sync whose
 * result hashes the same while the stored object is still that version writes nothing
 * and parses nothing. */
struct cl_put {
    uint64_t rv;                 /* the stored object's resourceVersion then, 0 unknown */
    uint64_t hash;               /* of the compared members */
};

struct cl_svc {
    char *key;
    struct store_obj *obj;
    cJSON *view;                 /* what the endpoints read of obj (metadata name, namespace,
                                  * uid, labels; spec selector, ports, publishNotReadyAddresses),
                                  * copied from the tree its event parsed: the selector is read
                                  * by every Pod event of its label pair, the rest by each sync,
                                  * and obj's tree has usually left the scope by then */
    struct cl_member *members;
    bool dirty;                  /* members or their state changed since the last sync */
    struct cl_put put_ep, put_eps; /* its Endpoints and EndpointSlice */
    UT_hash_handle hh;
};

enum { T_START, T_READY, T_EXIT, T_RESTART, T_PULL, T_DELETE, T_HEARTBEAT, T_ENDPOINTS, T_JOB,
       T_RAY /* poll a Ray submitter's exit */, T_RAY_SIDE /* ... a sidecar submitter's */,
       T_CERTMGR /* retry Certificates whose issuer was not ready */ };

/* jobs.c: a Pod a Job controls, in the Job's set and in the table by key. */
struct cl_jpod {
    char *key;                   /* "ns/name" */
    struct store_obj *obj;       /* latest seen (an event or the controller's own write) */
    struct cl_job *job;
    UT_hash_handle hh;           /* cluster->jpods */
    UT_hash_handle hj;           /* job->pods */
};

struct cl_job {
    char *key;                   /* "ns/name" */
    char *uid;
    struct store_obj *obj;
    struct cl_jpod *pods;
    unsigned long epoch;         /* T_JOB timers carry it */
    bool dirty;                  /* in cluster->job_dirty */
    int fail_streak;             /* Pod failures since the last success (re-creation back-off) */
    uint64_t last_fail_ms;
    int create_errors;           /* failed Pod creates in a row (retry back-off) */
    uint64_t wake_ms;            /* the earliest T_JOB timer armed, 0 = none */
    UT_hash_handle hh;           /* cluster->jobs by key */
    UT_hash_handle hu;           /* cluster->jobs_uid by uid */
};

struct cl_timer {
    uint64_t due_ms;
    int kind;
    unsigned long epoch;
    char *key;                   /* pod key, or NULL */
};

struct cl_qitem {
    enum store_event_type type;
    struct store_obj *obj;
};

struct cluster {
    struct cluster_opts o;
    struct store *store;
    const struct reg_resource *r_pods, *r_nodes, *r_svc, *r_ep, *r_eps, *r_events, *r_jobs;
    const struct reg_resource *r_deploy, *r_rs, *r_secrets, *r_pvcs;
    pthread_t thread;
    bool started;

    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    struct cl_qitem *q;
    size_t qlen, qcap;
    bool stop;

    struct cl_node *nodes;
    struct cl_pod *pods;
    struct cl_svc *svcs;
    struct cl_ep_index *epx;     /* endpoints.c: Services and Pods by label pair */
    struct cl_timer *heap;
    size_t nheap, capheap;
    unsigned long next_epoch;
    uint32_t rng;
    unsigned ip_seq;
    char **pending;              /* pod keys waiting for the scheduler */
    size_t npending, cappending;
    char **unsched;              /* pod keys found Unschedulable: retried when capacity frees */
    size_t nunsched, capunsched;
    char **ep_dirty;             /* endpoints.c: keys of the Services marked dirty */
    size_t nep_dirty, capep_dirty;
    bool ep_dirty_lost;          /* a mark missed the list (ENOMEM): the next sync scans */
    unsigned long ep_visited;    /* Services a sync looked at (tests: work per change) */
    struct cl_node **free_idx;   /* node_index.c: the nodes, emptiest first */
    size_t nfree_idx, capfree_idx;
    unsigned long sched_visited; /* nodes the scheduler looked at (tests: work per Pod) */
    bool capacity_changed;
    bool endpoints_dirty, endpoints_timer;
    struct cl_job *jobs, *jobs_uid;
    struct cl_jpod *jpods;
    char **job_dirty;            /* job keys to sync after this turn */
    size_t njob_dirty, capjob_dirty;
    char **deploy_dirty, **rs_dirty; /* "ns/name" to sync (deploy.c) */
    size_t ndeploy_dirty, capdeploy_dirty, nrs_dirty, caprs_dirty;
    bool gang_dirty;             /* a gang Pod, PodGroup or Queue changed (gang.c) */
    bool gang_seen;              /* any was ever seen: capacity changes concern the gang step */
    uint64_t timers_mid_batch;   /* timers fired inside a long batch (run.c) */
    bool certmgr_dirty, certmgr_timer; /* a Certificate or Issuer changed (certmgr.c) */
    bool gang_queue_crd;         /* the Volcano Queue CRD was seen (default Queue made) */
    unsigned long gang_session;  /* the gang step's session counter (transitionID) */
    struct gang_note *gang_notes; /* what the gang step last said of a PodGroup (gang.c) */
    struct {                     /* memstat.c: the tables' bytes, published by the thread */
        uint64_t asked, done;    /* reports asked for / measured (under qlock) */
        pthread_cond_t measured; /* with qlock: done moved */
        _Atomic size_t pods, n_pods, svcs, nodes, jobs, ep_index, timers, lists;
    } mem;
};

/* memstat.c: GET /kubesim/memory's "cluster" member */
/* On the cluster thread: measures the tables now. */
void cluster__memory_publish(struct cluster *c);
/* On the cluster thread, between turns: measures them when a report asked (qlock not
 * held). */
void cluster__memory_serve(struct cluster *c);
/* The store's memory reporter (store_memory_reporter_fn); arg is the cluster. */
size_t cluster__memory_report(void *arg, struct buf *out);
/* endpoints.c: malloc bytes of the endpoints label index */
size_t cluster__endpoints_index_bytes(const struct cluster *c);
/* Malloc bytes of a uthash table (hh: its first record's handle, or NULL) whose records
 * own nothing but the string they are hashed by (HASH_ADD_KEYPTR): the table, each record
 * and its key. Inline, so the tables' owners (memstat.c, endpoints.c) do not call each
 * other. */
static inline size_t cluster__mem_keyed_table(const UT_hash_handle *hh)
{
    size_t b = hh ? store_mem_table(hh) : 0;

    for (; hh; hh = hh->next ? (const UT_hash_handle *)((const char *)hh->next + hh->tbl->hho)
                             : NULL)
        b += store_mem_chunk((const char *)hh - hh->tbl->hho) + store_mem_chunk(hh->key);
    return b;
}

/* certmgr.c: the tiny cert-manager (Certificates of selfSigned and ca Issuers) */
bool cluster__certmgr_resource(const struct reg_resource *r);
void cluster__certmgr_sync(struct cluster *c);
bool cluster__certmgr_tls_wait(struct cluster *c, const cJSON *pod, const char *ip);
/* the parts that read a Certificate's spec (fuzz_certmgr.c): Go's duration in seconds
 * (dflt when not one), and a self-signed certificate issued for spec (0 or -EINVAL) */
long cluster__certmgr_duration(const char *s, long dflt);
int cluster__certmgr_selfsign(const cJSON *spec);

/* run.c */
void cluster__timer_add(struct cluster *c, uint64_t delay_ms, int kind, const struct cl_pod *p);
/* The same for a timer not bound to a Pod (key may be NULL). */
void cluster__timer_add_key(struct cluster *c, uint64_t delay_ms, int kind, const char *key,
                            unsigned long epoch);
uint64_t cluster__jitter(struct cluster *c, long base_ms);
void cluster__event(struct cluster *c, const cJSON *obj, const char *type, const char *reason,
                    const char *message, const char *component, const char *host,
                    const char *field_path);
/* The same, handing back the Event's name (for later count bumps). */
void cluster__event_named(struct cluster *c, const cJSON *obj, const char *type, const char *reason,
                          const char *message, const char *component, const char *host,
                          const char *field_path, char *name_out, size_t name_len);
/* Raises count and lastTimestamp of an Event, as the recorder aggregates repeats. */
int cluster__event_bump(struct cluster *c, const char *ns, const char *name, int count);
struct cl_node *cluster__node_find(struct cluster *c, const char *name);
/* A Node committed or deleted: the node table and the scheduler's index follow. */
void cluster__node_event(struct cluster *c, enum store_event_type type, struct store_obj *o);

/* node_index.c: the nodes by free capacity, for the scheduler */
/* (Re)places n after its alloc or used changed (and when it is new). */
void cluster__node_index_update(struct cluster *c, struct cl_node *n);
/* Takes n out (before it is freed). */
void cluster__node_index_remove(struct cluster *c, struct cl_node *n);
/* The i-th emptiest node, NULL past the end. */
struct cl_node *cluster__node_index_at(const struct cluster *c, size_t i);
void cluster__node_index_free(struct cluster *c);

/* keys.c: appends a copy of key to a growing list of keys; false (nothing added) on ENOMEM. */
bool cluster__keys_push(char ***list, size_t *n, size_t *cap, const char *key);

/* pods.c */
/* Binds p to n (spec.nodeName), with the Scheduled Event of component. */
int cluster__bind_pod(struct cluster *c, struct cl_pod *p, struct cl_node *n, const char *component);
/* p's PodScheduled=False message, "" when it has none. */
const char *cluster__pod_unsched(const struct cl_pod *p);
/* Replaces it (msg NULL or "": none; cut at CL_UNSCHED_MSG_MAX - 1 bytes). */
void cluster__pod_set_unsched(struct cl_pod *p, const char *msg);
void cluster__pod_event(struct cluster *c, enum store_event_type type, struct store_obj *o);
/* The record of Pod o when its view is o's (cluster__pod_event took it), else NULL. */
const struct cl_pod *cluster__pod_rec(struct cluster *c, const struct store_obj *o);
/* Notes a write of p by the cluster (o the stored result, rv_before the store's
 * resourceVersion before the call; bind: of spec.nodeName with the status kubelet.c
 * derives from p, else of that status alone), so that its event needs no parse. */
void cluster__pod_own(struct cluster *c, struct cl_pod *p, const struct store_obj *o,
                      uint64_t rv_before, bool bind);
/* An Event about o (involvedObject from its names and resourceVersion, no tree read). */
void cluster__event_of(struct cluster *c, const struct store_obj *o, const char *type,
                       const char *reason, const char *message, const char *component,
                       const char *host, const char *field_path);
void cluster__schedule_pass(struct cluster *c);
/* One batch of the commit queue (run.c; the tests drive it without the thread). */
void cluster__batch_run(struct cluster *c, struct cl_qitem *batch, size_t n);
void cluster__pods_free(struct cluster *c);
void cluster__svc_event(struct cluster *c, enum store_event_type type, struct store_obj *o);

/* gang.c: the gang schedulers (Volcano, scheduler-plugins, YuniKorn, KAI). */
/* True for a Pod the gang step places: a gang scheduler's, or a default-scheduler Pod
 * in a workload-aware PodGroup (spec.schedulingGroup, KubernetesWAS). */
bool cluster__gang_pod(const cJSON *pod);
/* True for a resource whose changes the gang step watches (PodGroups, Queues). */
bool cluster__gang_resource(const struct reg_resource *r);
/* One scheduling session over every gang, when anything it reads changed. */
void cluster__gang_pass(struct cluster *c);

/*
 * ---- what the gang step's files share (gang.c: the session and the placement;
 * gang_volcano.c: Volcano's queues, enqueue and PodGroup status; gang_kai.c: KAI's
 * pod-grouper and queues; gang_yunikorn.c: YuniKorn's queues; gang_status.c: the other
 * PodGroups' status). Cluster thread only; one session's data.
 */

#define VOLCANO_GROUP "scheduling.volcano.sh"
#define SP_GROUP "scheduling.x-k8s.io"

enum gkind { G_VOLCANO, G_SP, G_YUNIKORN, G_KAI, G_WAS };

/* One gang of a session: a PodGroup's (or an application's, or a lone Pod's) members. */
struct gang {
    char key[700];
    enum gkind kind;
    struct store_obj *pg;        /* the PodGroup (Volcano, scheduler-plugins, WAS), else NULL */
    const char *ns, *name;
    int64_t min;
    struct cluster_res minres;
    bool has_minres;
    struct cluster_res reserve;  /* YuniKorn: the placeholders of members not created yet */
    char queue[256];
    char kai_pg[400];            /* KAI: the PodGroup's name (pg-TOPOWNER-UID) */
    char kai_err[300];           /* KAI: why its pod-grouper made no PodGroup, else "" */
    cJSON *kai_obj;              /* KAI: the PodGroup its pod-grouper wants (owned), or NULL */
    int64_t prio;
    const char *ctime;
    struct cl_pod **m;
    size_t n, cap;
    /* Volcano, for preempt and reclaim: the queue, the phase this session gave the
     * PodGroup, its bound members, its running members less the victims taken, and the
     * members the session holds places for unbound (placed or pipelined) */
    struct gqueue *q;
    const char *phase;
    int64_t scheduled, ready, pipelined;
    struct cluster_res alloc;    /* its running members' requests (the drf plugin's share) */
    int64_t scratch_n;           /* a victim choice's count-down (gang_volcano.c) */
    struct cluster_res scratch;
    UT_hash_handle hh;
};

/* A Volcano Queue as one session sees it. */
struct gqueue {
    char name[256];
    struct store_obj *obj;
    bool owned;                  /* obj is a reference of ours (the default Queue just made) */
    bool open;
    bool has_cap[5];
    struct cluster_res cap, allocated, inqueue;
    struct cluster_res request;  /* its gangs' Pods, bound or waiting */
    struct cluster_res deserved; /* its share by weight (proportion), when has_deserved */
    struct cluster_res prop_real; /* proportion's realCapability (the enqueue limit), when
                                     has_deserved */
    bool has_job;                /* a Volcano PodGroup of this session is in it */
    struct cluster_res elastic;  /* what its gangs hold beyond their minResources */
    struct cluster_res share_used; /* allocated, plus what this session bound */
    bool has_deserved;
    bool reclaimable;            /* spec.reclaimable (default true) */
    int64_t priority;            /* spec.priority: queues are ordered by it, then by share */
    struct cluster_res scratch;  /* a victim choice's count-down (gang_volcano.c) */
    /* KAI (gang_kai.c): cap/has_cap are the limits, weight the over-quota weight */
    struct cluster_res quota;    /* -1 in a dimension: unlimited */
    char parent[256];
    /* Volcano's capacity plugin with enableHierarchy (gang_volcano.c): the parent, the
     * guarantee, the realCapability the hierarchy leaves it, whether it has children */
    struct gqueue *up;
    struct cluster_res guarantee, real;
    bool has_children, real_set;
    bool leaf;                   /* no queue names it as parent */
    double weight;
    int pending, inqueue_n, running, completed;
    UT_hash_handle hh;
};

/* The session's view of the nodes: what is bound plus what this session placed. */
struct nodes {
    struct cl_node **n;
    struct cluster_res *used;
    struct cluster_res *releasing;   /* Pods being deleted there (Volcano's FutureIdle) */
    size_t count;
};

/* What the trial placement found for one member of a gang, for the texts of the
 * schedulers that word it per Pod: whether it was tried, whether no node took it, how
 * many members were placed before it, and per node its CLUSTER_FIT_* bits. */
struct gang_try {
    bool tried, unfit;
    int64_t before;
    unsigned *fits;              /* [nodes] */
    char taint[160];             /* the first untolerated taint ("{key: value}") */
};

/* What one gang's Pods are at, and what placing them found. */
struct outcome {
    int64_t scheduled, running, succeeded, failed, pending, placed;
    int64_t pipelined;          /* Volcano: placed on resources still being released */
    int64_t held;               /* Volcano: placed now, not bound, in a trial kept because
                                 * the gang is pipelined (its tasks Allocated) */
    bool ready, bound_now;
    char fit[400];              /* the first unplaceable task's fit error */
    char first_unfit[300];
    struct gang_try *tries;     /* [g->n] when the caller asked for them, else NULL */
    size_t nodes;               /* all nodes, the "0/N" of the texts */
};

/* gang.c: what the gang step says. A waiting Pod gets the Event (ev_type, ev_reason,
 * msg) once per change of msg and, unless cond is NULL, PodScheduled=False with cond. */
void cluster__gang_tell(struct cluster *c, struct cl_pod *p, const char *cond,
                        const char *ev_type, const char *ev_reason, const char *msg,
                        const char *comp);
/* True when msg is new for key (a PodGroup's last Event), remembering it. */
bool cluster__gang_note(struct cluster *c, const char *key, const char *msg);
void cluster__gang_free(struct cluster *c);
/* A Pod waits: neither bound, finished nor being deleted. */
bool cluster__gang_waiting(const struct cl_pod *p);

/* gang.c: reading helpers */
const struct reg_resource *cluster__gang_find(struct cluster *c, const char *g, const char *v,
                                              const char *plural);
/* Every object of r (an empty list when r is NULL); 0 or a negative errno. */
int cluster__gang_list(struct cluster *c, const struct reg_resource *r, struct store_list *l);
/* A ResourceList ({"cpu":"2",...}) as requests. */
void cluster__gang_reslist(const cJSON *list, struct cluster_res *out);
void cluster__gang_res_add(struct cluster_res *a, const struct cluster_res *b, int sign);
bool cluster__gang_pod_terminal(const cJSON *pod);
bool cluster__gang_bound(const struct cl_pod *p);
/* Charges each live Pod (not finished, not being deleted) of the gangs of kind to the queue
 * of qs its gang names (kept in g->q) and to every queue above it, through charge. A parent
 * cycle in user-written queues ends 16 levels up. */
void cluster__gang_queue_usage(struct gang **all, size_t n, enum gkind kind, struct gqueue *qs,
                               void (*charge)(struct gqueue *q, const struct cl_pod *p));
/* The value of PriorityClass pc_name, 0 when there is none. */
int64_t cluster__gang_priority(struct cluster *c, const char *pc_name);

/* gang_volcano.c */
void cluster__volcano_queues_load(struct cluster *c, const struct reg_resource *rq,
                                  struct gqueue **qs, struct store_list *ql);
void cluster__volcano_default_queue(struct cluster *c, const struct reg_resource *rq,
                                    struct gqueue **qs);
void cluster__volcano_deserved(struct gqueue *qs, const struct cluster_res *total);
bool cluster__volcano_within_share(const struct gqueue *q, const struct cluster_res *used,
                                   const struct cluster_res *req);
/* Why the overcommit or proportion plugin refuses to enqueue g (the text of their Normal
 * Event), "" for a refusal they only log (a Closed queue), NULL when g may go Inqueue. */
const char *cluster__volcano_enqueue_check(const struct gang *g, struct gqueue *q,
                                           bool have_queues, const struct cluster_res *total,
                                           const struct cluster_res *idle,
                                           const struct cluster_res *inqueue, char *why,
                                           size_t cap);
/* Volcano's capacity plugin with enableHierarchy: each Queue's parent (spec.parent, else
 * root), the allocated and inqueue of its descendants added up, and its realCapability
 * (its capability, what it does not set taken from its parent, within its parent's
 * realCapability less its siblings' guarantees). Returns true when a Volcano gang sits in
 * a queue with children: the plugin then refuses the whole session, as Volcano's does. */
bool cluster__volcano_hierarchy(struct gqueue *qs, struct gang **all, size_t n);
/* The capacity plugin's checks along the queue and its ancestors: the job's
 * minResources to enqueue (NULL, or "queue resource quota insufficient: ..." in why),
 * and a task's request (with extra, what the trial already placed) to allocate. */
const char *cluster__volcano_hier_enqueue(const struct gang *g, const struct gqueue *q,
                                          char *why, size_t cap);
bool cluster__volcano_hier_fits(const struct gqueue *q, const struct cluster_res *extra,
                                const struct cluster_res *req);
/* The share the proportion plugin orders queues by: the largest of used/deserved. */
double cluster__volcano_share(const struct gqueue *q);
/* The actions of a volcano-scheduler.conf (its top-level "actions:" line) that kubesim
 * acts on beyond enqueue and allocate; bounded, outside bytes. */
#define VOLCANO_PREEMPT 1u
#define VOLCANO_RECLAIM 2u
#define VOLCANO_HIERARCHY 4u   /* the capacity plugin with enableHierarchy: true */
/* a plugin's enablePreemptable: false / enableReclaimable: false (the chart sets the
 * first for gang and drf): it then takes no part in choosing victims */
#define VOLCANO_NOPREEMPT_PRIORITY 8u
#define VOLCANO_NOPREEMPT_GANG 16u
#define VOLCANO_NOPREEMPT_CONFORMANCE 32u
#define VOLCANO_NOPREEMPT_DRF 64u
#define VOLCANO_NORECLAIM_GANG 128u
#define VOLCANO_NORECLAIM_CONFORMANCE 256u
#define VOLCANO_NORECLAIM_PROPORTION 512u
#define VOLCANO_PLUGIN_OFF 1016u   /* all of the above */
unsigned cluster__volcano_actions_parse(const char *conf, size_t len);
/* The same, from the ConfigMap volcano-system/volcano-scheduler-configmap (0 without). */
unsigned cluster__volcano_actions(struct cluster *c);
/* Volcano's preempt (action VOLCANO_PREEMPT: lower-priority gangs of the same queue) or
 * reclaim (VOLCANO_RECLAIM: gangs of other queues above their share) for the starving
 * Inqueue gangs of order: victims are evicted only when the whole gang then fits. The
 * action may carry VOLCANO_PLUGIN_OFF bits: those plugins choose no victims. */
void cluster__volcano_evict(struct cluster *c, struct gang **order, size_t n, struct gqueue *qs,
                            struct nodes *ns, unsigned action);
void cluster__volcano_queue_status(struct cluster *c, const struct reg_resource *rq,
                                   struct gqueue *q);
void cluster__volcano_pg_status(struct cluster *c, struct gang *g, const struct reg_resource *rpg,
                                const char *phase, const struct outcome *o,
                                const char *unsched_msg, const char *enq_reason);

/* gang_yunikorn.c: the application's task groups: g->min becomes the members they
 * count among the existing Pods, g->reserve the placeholders of those to come. */
void cluster__yunikorn_groups(struct gang *g);
/* The queues of yunikorn/yunikorn-configs (NULL without), each
 * YuniKorn gang's q set; freed by the caller (HASH_DEL, free). */
struct gqueue *cluster__yunikorn_queues(struct cluster *c, struct gang **all, size_t n);
/* NULL when the application's waiting Pods and placeholders fit under its queue's and
 * its parents' max, else why not (in why). */
const char *cluster__yunikorn_max_check(const struct gang *g, struct gqueue *qs, char *why,
                                        size_t cap);
/* YuniKorn's texts: over its queue's max, the core's Informational Event on each Pod
 * whose request does not fit the headroom (over true); else, the cluster being short,
 * the shim's PodScheduled=False and PodUnschedulable Event. */
void cluster__yunikorn_texts(struct cluster *c, const struct gang *g, struct gqueue *qs,
                             const struct nodes *ns, bool over);
/* The shim's Events when a task is submitted (once per Pod): Scheduling, and
 * GangScheduling for a member of a task group. */
void cluster__yunikorn_submit(struct cluster *c, const struct gang *g);

/* gang_status.c: the kube-scheduler's texts for a waiting gang of scheduler-plugins
 * (its coscheduling profile) and of WAS (the pod group cycle); the second returns the
 * PodGroupScheduled=False message (in msg) or NULL when the cycle does not run. */
void cluster__sp_texts(struct cluster *c, const struct gang *g, const struct outcome *o,
                       const struct nodes *ns);
/* The coscheduling PreFilter's resource check: true, with "resource gap: map[...]" in
 * out, when the PodGroup's minResources (and minMember Pods) exceed what the nodes have
 * left besides the group's own Pods. */
bool cluster__sp_gap(const struct gang *g, const struct nodes *ns, char *out, size_t cap);
const char *cluster__was_texts(struct cluster *c, const struct gang *g, const struct outcome *o,
                               char *msg, size_t cap);
/* gang_status.c: the scheduler-plugins and WAS PodGroup status (nothing for others) */
void cluster__gang_pg_status(struct cluster *c, const struct gang *g, const struct outcome *o,
                             const char *unsched_msg);

/* gang_kai.c */
void cluster__kai_gang_init(struct cluster *c, struct gang *g, const cJSON *pod);
/* NULL when the gang's KAI queue takes Pods, else why not (in why). */
const char *cluster__kai_queue_check(struct cluster *c, const struct gang *g, char *why,
                                     size_t cap);
void cluster__kai_annotate(struct cluster *c, const struct gang *g);
/* The PodGroup (scheduling.run.ai/v2alpha2, when served) made or brought up to date as
 * the pod-grouper does; returns the stored object (a reference) or NULL. */
struct store_obj *cluster__kai_podgroup(struct cluster *c, const struct gang *g);
/* Its status: the UnschedulableOnNodePool condition with msg, or none (msg NULL); with
 * msg also KAI's Normal Unschedulable Event on the PodGroup (once per change). */
void cluster__kai_pg_status(struct cluster *c, struct store_obj *pg, const char *msg);
/* What KAI's podgroup controller keeps in the PodGroup's status.resourcesStatus: what its
 * live Pods request, what the bound ones hold (allocated) and, for a PodGroup that is not
 * preemptible (priority 100 and up, or spec.preemptibility), allocatedNonPreemptible. */
void cluster__kai_pg_resources(struct cluster *c, struct store_obj *pg, const struct gang *g);
/* KAI's texts for a waiting gang: its Pods' (Warning Unschedulable), and the PodGroup's
 * (returned in msg), job_err KAI's job fit error when set (queue, limit), else the
 * placement's; NULL when the gang is not ready (fewer Pods than its sub-groups need:
 * a NotReady Event on the PodGroup kpg, nothing on the Pods). */
const char *cluster__kai_texts(struct cluster *c, const struct gang *g, const struct outcome *o,
                               struct store_obj *kpg, const char *job_err, char *msg,
                               size_t cap);
/* KAI's Queues (scheduling.run.ai/v2) with their limits and fair share among the KAI
 * gangs of all[0, n) (each gang's q set); NULL without the type. Freed by the caller
 * (HASH_DEL, free). */
struct gqueue *cluster__kai_queues(struct cluster *c, struct gang **all, size_t n,
                                   const struct cluster_res *total);
/* Each KAI Queue's status: allocated, requested, childQueues (when changed). */
void cluster__kai_queue_status(struct cluster *c, struct gqueue *kqs);
/* NULL when the gang's Pending Pods fit under its queue's and its parents' limits, else
 * KAI's message (in why). */
const char *cluster__kai_limit_check(const struct gang *g, struct gqueue *kqs, char *why,
                                     size_t cap);


/* kubelet.c */
void cluster__kubelet_pod(struct cluster *c, struct cl_pod *p);
void cluster__kubelet_timer(struct cluster *c, struct cl_pod *p, int kind);
void cluster__kubelet_set_cond(struct cl_pod *p, int cond, bool v);
/* Reads the kubesim.io/ annotations of pod into p->v (at each parsed snapshot). */
void cluster__kubelet_take(struct cl_pod *p, const cJSON *pod);
/* Writes the status the kubelet derives from p's state (merge patch of /status). */
int cluster__kubelet_write(struct cluster *c, struct cl_pod *p);
/* The same as pods/binding to node: spec.nodeName and that status in one write. */
int cluster__kubelet_write_bind(struct cluster *c, struct cl_pod *p, const char *node);

/* endpoints.c */
void cluster__endpoints_sync(struct cluster *c);
void cluster__endpoints_drop(struct cluster *c, const char *ns, const char *name);
/* A Pod changed (o) or went (o NULL): update the memberships of the Services of ns. */
void cluster__endpoints_pod(struct cluster *c, const char *key, const char *ns, const struct store_obj *o);
/* The Pod's labels did not change, its IP, readiness or node did: mark its Services. */
void cluster__endpoints_pod_touch(struct cluster *c, const char *key);
/* A Service was added or changed: recompute its members from the Pod table. */
void cluster__endpoints_svc(struct cluster *c, struct cl_svc *s);
void cluster__endpoints_svc_free(struct cl_svc *s);
/* Drops a deleted Service from the label index (before its cl_svc is freed). */
void cluster__endpoints_svc_forget(struct cluster *c, const char *key);
/* Frees the label index (at cluster stop). */
void cluster__endpoints_index_free(struct cluster *c);

/* deploy.c: the Deployment and ReplicaSet controllers */
void cluster__deploy_event(struct cluster *c, enum store_event_type type, struct store_obj *o);
void cluster__deploy_sync(struct cluster *c);
void cluster__deploy_free(struct cluster *c);

/* jobs.c: the Job and TTL-after-finished controllers */
void cluster__job_event(struct cluster *c, enum store_event_type type, struct store_obj *o);
/* Every Pod event, after cluster__pod_event: O(1) for Pods no Job controls. */
void cluster__jobs_pod(struct cluster *c, enum store_event_type type, struct store_obj *o);
void cluster__jobs_timer(struct cluster *c, const char *key, unsigned long epoch);
/* Syncs the Jobs that events or timers marked since the last call. */
void cluster__jobs_sync(struct cluster *c);
void cluster__jobs_free(struct cluster *c);
/* The ownerReference with controller: true when it is of this kind (apiVersion
 * group api_group, e.g. "batch/"), else NULL. */
const cJSON *cluster__controller_ref(const cJSON *obj, const char *api_group, const char *kind);

/* The Pod's Ready condition is True. Inline: the scheduler, kubelet, Jobs,
 * Deployments and the endpoints sync all ask, and a call into run.c made each of
 * them a caller of the thread's main file. */
static inline bool cluster__pod_ready(const cJSON *pod)
{
    const cJSON *cd;

    cJSON_ArrayForEach(cd, kobj_get(kobj_get(pod, "status"), "conditions")) {
        const char *t = kobj_str(cd, "type"), *s;
        if (t && !strcmp(t, "Ready"))
            return (s = kobj_str(cd, "status")) && !strcmp(s, "True");
    }
    return false;
}

/*
 * ---- what the Job controller's two files share: the tables and writes of jobs.c that
 * the sync in jobs_sync.c uses, and a few JSON helpers. Cluster thread only; not for
 * the rest of kubesim.
 */

#define TRACKING_FIN "batch.kubernetes.io/job-tracking"
#define INDEX_KEY "batch.kubernetes.io/job-completion-index"
#define COMPONENT "job-controller"

bool cluster__job_has_finalizer(const cJSON *obj, const char *f);
bool cluster__job_deleting(const cJSON *obj);
const cJSON *cluster__job_cond_find(const cJSON *status, const char *type);
bool cluster__job_cond_true(const cJSON *status, const char *type);
/* Sets (or with v NULL removes) a string member. */
void cluster__job_set_str(cJSON *o, const char *k, const char *v);
bool cluster__job_uid_in(const cJSON *arr, const char *uid);

/* Records o as j's Pod unless the table holds a newer version. */
void cluster__jpod_set(struct cluster *c, struct cl_job *j, struct store_obj *o);
void cluster__jpod_free(struct cluster *c, struct cl_jpod *jp);
/* Arms a T_JOB timer unless an earlier one is due first. */
void cluster__job_wake(struct cluster *c, struct cl_job *j, uint64_t delay_ms);

/* Writes: 0 or a negative errno; failures are logged or recorded as Events. */
int cluster__job_drop_finalizer(struct cluster *c, struct store_obj *pod, struct store_obj **out);
int cluster__job_pod_delete(struct cluster *c, struct cl_job *j, struct cl_jpod *jp);
/* A Pod from the template (index -1 for NonIndexed), recorded in j on success. */
int cluster__job_pod_create(struct cluster *c, struct cl_job *j, long index);
/* PUT of /status; j->obj becomes the stored object. */
int cluster__job_status_write(struct cluster *c, struct cl_job *j, cJSON *status);
/* A finished Job: delete it once ttlSecondsAfterFinished passed, else wake then. */
void cluster__job_ttl(struct cluster *c, struct cl_job *j);

/* jobs_sync.c */
void cluster__job_sync(struct cluster *c, struct cl_job *j);

#endif

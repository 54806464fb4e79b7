/*
 * internal.h - declarations shared by the files of kube/ (and by its unit
 * tests); not part of the public API in kube.h.
 */
#ifndef RAYOP_KUBE_INTERNAL_H
#define RAYOP_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <curl/curl.h>

#include "kube/kube.h"
#include "util/util.h"

/* ---- yaml_tree.c: a bounded tree built from libyaml events ---------------- */

enum ynode_kind { YNODE_SCALAR, YNODE_MAP, YNODE_SEQ };

struct ynode {
    enum ynode_kind kind;
    char *value;               /* SCALAR: NUL-terminated */
    size_t len;
    struct ynode **kids;       /* MAP: key, value, key, value...; SEQ: items */
    size_t n;
    size_t cap;
};

/* Parses the first document of data into *out (caller frees with
 * kube__ynode_free). Depth, node count and size are bounded; anchors and
 * aliases are rejected. 0, -EINVAL (syntax; err says where), -E2BIG, -ENOMEM. */
int kube__yaml_parse(const char *data, size_t len, struct ynode **out, char *err, size_t errlen);
void kube__ynode_free(struct ynode *n);
/* MAP lookup by scalar key; NULL when absent or n is not a map. */
const struct ynode *kube__ynode_get(const struct ynode *n, const char *key);
/* Scalar value or NULL. */
const char *kube__ynode_str(const struct ynode *n);

/* ---- token.c --------------------------------------------------------------- */

struct kube_token_state {
    pthread_mutex_t mu;
    char *token;               /* last token read from the file */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t checked_ns;       /* last stat of the file */
    uint64_t (*now_ns)(void);  /* tests may replace the clock */
};

int kube__token_state_new(struct kube_token_state **out);
void kube__token_state_free(struct kube_token_state *ts);

/* Reads at most max bytes of path into a NUL-terminated allocation. */
int kube__read_file(const char *path, size_t max, char **out, size_t *len);

void kube__set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- limiter.c: token bucket shared by the threads of a client ------------ */

struct kube_limiter {
    pthread_mutex_t mu;
    double qps;                /* <= 0: unlimited */
    double burst;
    double tokens;
    uint64_t last_ns;
};

void kube__limiter_init(struct kube_limiter *l, double qps, int burst, uint64_t now_ns);
void kube__limiter_destroy(struct kube_limiter *l);
/* Takes one token; returns how long the caller must wait before proceeding
 * (0 when a token was available). Reservations queue fairly in call order. */
uint64_t kube__limiter_reserve(struct kube_limiter *l, uint64_t now_ns);

/* One bucket per API resource (group + plural), as client-go gives each
 * RESTClient its own (see limiter.c). */
#define KUBE_LIMITERS_MAX 64
struct kube_limiter_slot {
    char key[128];             /* "group/plural", "+r" appended for the readers' bucket */
    struct kube_limiter l;
};
struct kube_client;
struct kube_resource;
/* The bucket requests on r take: r's own for writes, another of r's for reads (GET, LIST,
 * WATCH: controller-runtime's uncached API reader is a client of its own), or the client's
 * shared one for raw requests (r NULL) and past KUBE_LIMITERS_MAX buckets. Never NULL. */
struct kube_limiter *kube__limiter_for(struct kube_client *c, const struct kube_resource *r,
                                       bool read);

/* ---- status.c ------------------------------------------------------------- */

/* Fills st with a synthetic Status for an HTTP code without a Status body. */
void kube__status_from_code(struct kube_status *st, int code, const char *message);

/* ---- stream.c: watch body framing and event parsing ------------------------ */

/* Receives one trimmed, non-empty line; a nonzero return stops the feed and is
 * returned by it. */
typedef int (*kube_line_cb)(void *arg, const char *line, size_t len);

struct kube_lines {
    struct buf b;              /* unterminated tail of the stream: holds no '\n' */
    size_t max_line;
};

void kube__lines_init(struct kube_lines *l, size_t max_line);
void kube__lines_release(struct kube_lines *l);
/* Appends data and calls cb for every complete line. 0, -EMSGSIZE (a line,
 * complete or not, longer than max_line), -ENOMEM, or cb's nonzero result. */
int kube__lines_feed(struct kube_lines *l, const char *data, size_t n, kube_line_cb cb,
                     void *arg);
/* End of stream: delivers a last line that had no newline. */
int kube__lines_finish(struct kube_lines *l, kube_line_cb cb, void *arg);
/* Parses one line into ev: ev->object is owned by the caller, ev->resource_version
 * points into it, ev->raw/raw_len is line. ERROR events fill *st and set
 * ev->status = st. 0 or -EPROTO. */
int kube__event_parse(const char *line, size_t len, struct kube_event *ev,
                      struct kube_status *st);

/* ---- client.c / watch.c shared --------------------------------------------- */

/* Appends "?k=v&..." for list/watch options to b (values URL-escaped). */
int kube__append_list_query(struct buf *b, const struct kube_list_opts *o, int watch,
                            int allow_bookmarks, int send_initial_events);
/* Sets the TLS, auth-independent options of an easy handle for c. */
struct kube_client;
int kube__easy_setup(struct kube_client *c, void *easy, const char *path, struct buf *urlbuf);
/* Builds the header list for a request (auth from the config, then extra, one
 * "Name: value" line or NULL). Caller frees with curl_slist_free_all. force_token
 * re-reads a token file. */
int kube__build_headers(struct kube_client *c, const char *content_type, const char *extra,
                        int force_token, void **out);
int kube__errno_from_curl(int curl_code);

/*
 * ---- the client structure and transport entry point shared by client.c (transport), calls.c
 * (REST verbs) and watch.c (streams).
 */

#define KUBE_POOL_MAX 32

/* client-go's rest_client_* metrics (metrics.c) */
#define KUBE_M_BUCKETS 12
#define KUBE_M_VERBS 8
#define KUBE_M_COUNTS 48
struct kube_m_hist {
    uint64_t b[KUBE_M_BUCKETS], n;
    double sum;
};
struct kube_m_verb {
    char verb[8];
    struct kube_m_hist duration, limiter;
};
struct kube_m_count {
    char verb[8], code[8];
    uint64_t n;
};
struct kube_metrics {
    pthread_mutex_t mu;
    char host[128];
    struct kube_m_verb verbs[KUBE_M_VERBS];
    int nverbs;
    struct kube_m_count requests[KUBE_M_COUNTS], retries[KUBE_M_COUNTS];
    int nrequests, nretries;
};
void kube__metrics_init(struct kube_metrics *m);
void kube__metrics_destroy(struct kube_metrics *m);
/* One HTTP attempt: its answer (0: none), time, the limiter's wait before it, and
 * whether it is retried. */
void kube__metrics_attempt(struct kube_metrics *m, const char *method, long code,
                           double seconds, double limiter_seconds, bool retried);

struct kube_client {
    struct kube_config *cfg;        /* borrowed */
    struct kube_client_opts opts;   /* defaults filled in */
    char *user_agent;
    char *base_url;                 /* scheme://host:port[/prefix], no trailing '/' */
    struct curl_slist *connect_to;  /* tls-server-name mapping or NULL */
    CURLSH *share;                  /* DNS + TLS sessions */
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    pthread_mutex_t pool_mu;
    CURL *pool[KUBE_POOL_MAX];      /* idle easy handles with warm connections */
    size_t npool;
    struct kube_limiter limiter;    /* raw requests, and resources past the table */
    pthread_mutex_t lim_mu;
    struct kube_limiter_slot lims[KUBE_LIMITERS_MAX];
    size_t nlims;
    _Atomic uint32_t rng;
    _Atomic uint64_t st_requests, st_retries, st_throttled_ns, st_connects;
    struct kube_metrics metrics;
};

/* One request as the transport sees it. */
struct kube_http {
    const char *method;
    const char *path;               /* with query, starts with '/' */
    const char *content_type;
    const char *body;
    size_t body_len;
    int idempotent;
    int once;                       /* no retry at all (kube_create_once) */
    int parse_json;
    int want_raw;
    size_t max_response;            /* 0: client default */
    long timeout_ms;                /* 0: client default */
    const char *extra_header;       /* one more "Name: value" line, or NULL */
    const struct kube_resource *res; /* its limiter bucket; NULL: the shared one */
    struct kube_ticket *ticket;     /* a token taken ahead for the first attempt, or NULL */
};

/* Runs rq with limiter, retries and error mapping; fills res (zeroed first). */
int kube__do(struct kube_client *c, const struct kube_http *rq, struct kube_result *res);
/* The client's clock (opts.clock: real time, or a test's), in ns. Inline so that
 * limiter.c, which reads it, does not call back into client.c. */
static inline uint64_t kube__now(struct kube_client *c)
{
    return c->opts.clock.now_ns(c->opts.clock.arg);
}

/* ---- test hooks: for the module's unit tests and fuzz targets, not for callers ---- */

/* The resourceVersion of the last event or bookmark seen ("" before any):
 * where a re-watch resumes. Valid until the watch ends. */
const char *kube_watch_last_rv(const struct kube_watch *w);

#endif

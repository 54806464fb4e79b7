/*
 * client_priv.h - the client structure and transport entry point shared by
 * client.c (transport), calls.c (REST verbs) and watch.c (streams).
 */
#ifndef RAYOP_KUBE_CLIENT_PRIV_H
#define RAYOP_KUBE_CLIENT_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <curl/curl.h>

#include "kube/internal.h"

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
    struct kube_limiter limiter;
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
    int parse_json;
    int want_raw;
    size_t max_response;            /* 0: client default */
    long timeout_ms;                /* 0: client default */
    const char *extra_header;       /* one more "Name: value" line, or NULL */
};

/* Runs rq with limiter, retries and error mapping; fills res (zeroed first). */
int kube__do(struct kube_client *c, const struct kube_http *rq, struct kube_result *res);
uint64_t kube__now(struct kube_client *c);
uint64_t kube__backoff_ns(struct kube_client *c, int attempt);
/* Percent-encodes s (all but RFC 3986 unreserved characters) onto b. */
int kube__append_escaped(struct buf *b, const char *s);

#endif

/*
 * metrics.c - client-go's REST client metrics for one API client, under client-go's
 * names so dashboards written for KubeRay (a client-go program) read them unchanged:
 *
 *   rest_client_requests_total{code,host,method}             every HTTP attempt
 *   rest_client_request_duration_seconds{host,verb}           histogram, per attempt
 *   rest_client_rate_limiter_duration_seconds{host,verb}      histogram, the client-side
 *                                                             limiter's wait per attempt
 *   rest_client_request_retries_total{code,host,verb}         retried attempts
 *
 * code is the HTTP status, "<error>" when no answer came (client-go's label). The
 * tables are small and fixed: methods and codes an operator sees are few; anything
 * past the table counts under the last row rather than growing without bound.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/internal.h"
#include "util/util.h"

/* client-go's defaults for both histograms */
static const double bounds[KUBE_M_BUCKETS] = {
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
};

void kube__metrics_init(struct kube_metrics *m)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
}

void kube__metrics_destroy(struct kube_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

static struct kube_m_verb *verb_row(struct kube_metrics *m, const char *verb)
{
    for (int i = 0; i < m->nverbs; i++)
        if (strcmp(m->verbs[i].verb, verb) == 0)
            return &m->verbs[i];
    if (m->nverbs < KUBE_M_VERBS) {
        snprintf(m->verbs[m->nverbs].verb, sizeof(m->verbs[0].verb), "%s", verb);
        return &m->verbs[m->nverbs++];
    }
    return &m->verbs[KUBE_M_VERBS - 1];
}

static struct kube_m_count *count_row(struct kube_m_count *rows, int *n, const char *verb,
                                      const char *code)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(rows[i].verb, verb) == 0 && strcmp(rows[i].code, code) == 0)
            return &rows[i];
    if (*n < KUBE_M_COUNTS) {
        snprintf(rows[*n].verb, sizeof(rows[0].verb), "%s", verb);
        snprintf(rows[*n].code, sizeof(rows[0].code), "%s", code);
        return &rows[(*n)++];
    }
    return &rows[KUBE_M_COUNTS - 1];
}

static void observe(struct kube_m_hist *h, double v)
{
    for (int i = 0; i < KUBE_M_BUCKETS; i++)
        if (v <= bounds[i])
            h->b[i]++;
    h->n++;
    h->sum += v;
}

static void code_text(long code, char out[8])
{
    if (code > 0 && code < 1000)
        snprintf(out, 8, "%d", (int)code);
    else
        snprintf(out, 8, "<error>");
}

void kube__metrics_attempt(struct kube_metrics *m, const char *method, long code,
                           double seconds, double limiter_seconds, bool retried)
{
    char c[8];
    code_text(code, c);
    pthread_mutex_lock(&m->mu);
    struct kube_m_verb *v = verb_row(m, method);
    observe(&v->duration, seconds);
    observe(&v->limiter, limiter_seconds);
    count_row(m->requests, &m->nrequests, method, c)->n++;
    if (retried)
        count_row(m->retries, &m->nretries, method, c)->n++;
    pthread_mutex_unlock(&m->mu);
}

static int hist_text(struct buf *b, const char *name, const char *host, const char *verb,
                     const struct kube_m_hist *h)
{
    int rc = 0;
    for (int i = 0; i < KUBE_M_BUCKETS; i++)
        rc |= buf_printf(b, "%s_bucket{host=\"%s\",verb=\"%s\",le=\"%g\"} %llu\n", name, host, verb,
                         bounds[i], (unsigned long long)h->b[i]);
    rc |= buf_printf(b, "%s_bucket{host=\"%s\",verb=\"%s\",le=\"+Inf\"} %llu\n", name, host, verb,
                     (unsigned long long)h->n);
    rc |= buf_printf(b, "%s_sum{host=\"%s\",verb=\"%s\"} %.9g\n", name, host, verb, h->sum);
    rc |= buf_printf(b, "%s_count{host=\"%s\",verb=\"%s\"} %llu\n", name, host, verb,
                     (unsigned long long)h->n);
    return rc;
}

/* One histogram family over the verbs seen: the request latency, or the time spent
 * waiting for the client-side rate limiter (limiter). */
static int hist_family(struct buf *b, const struct kube_metrics *m, const char *name,
                       const char *help, bool limiter)
{
    int rc = buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < m->nverbs; i++)
        rc |= hist_text(b, name, m->host, m->verbs[i].verb,
                        limiter ? &m->verbs[i].limiter : &m->verbs[i].duration);
    return rc;
}

int kube_client_metrics_text(struct kube_client *c, struct buf *b)
{
    struct kube_metrics *m = &c->metrics;
    const char *h = strstr(c->base_url ? c->base_url : "", "://");
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    /* client-go's host label: the API server's host:port */
    h = h ? h + 3 : "";
    snprintf(m->host, sizeof(m->host), "%.*s", (int)strcspn(h, "/"), h);
    rc |= buf_puts(b, "# HELP rest_client_requests_total Number of HTTP requests, partitioned by "
                      "status code, method, and host.\n# TYPE rest_client_requests_total counter\n");
    for (int i = 0; i < m->nrequests; i++)
        rc |= buf_printf(b, "rest_client_requests_total{code=\"%s\",host=\"%s\",method=\"%s\"} %llu\n",
                         m->requests[i].code, m->host, m->requests[i].verb,
                         (unsigned long long)m->requests[i].n);
    rc |= hist_family(b, m, "rest_client_request_duration_seconds",
                      "Request latency in seconds. Broken down by verb, and host.", false);
    rc |= hist_family(b, m, "rest_client_rate_limiter_duration_seconds",
                      "Client side rate limiter latency in seconds. Broken down by verb, and host.",
                      true);
    rc |= buf_puts(b, "# HELP rest_client_request_retries_total Number of request retries, "
                      "partitioned by status code, verb, and host.\n"
                      "# TYPE rest_client_request_retries_total counter\n");
    for (int i = 0; i < m->nretries; i++)
        rc |= buf_printf(b, "rest_client_request_retries_total{code=\"%s\",host=\"%s\",verb=\"%s\"} %llu\n",
                         m->retries[i].code, m->host, m->retries[i].verb,
                         (unsigned long long)m->retries[i].n);
    pthread_mutex_unlock(&m->mu);
    return rc ? -ENOMEM : 0;
}

/*
 * metrics.c - KubeRay's RayJob metrics (metrics/ray_job_metrics.go) on the
 * controller's /metrics: kuberay_job_info and kuberay_job_deployment_status,
 * one series per cached RayJob (read from the cache view at scrape time, as
 * KubeRay's collector lists RayJobs), and kuberay_job_execution_duration_seconds,
 * a gauge set when a RayJob goes from a non-terminal state to Complete, Failed
 * or Retrying and dropped when the RayJob is gone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/host/host.h"
#include "reconcilers/rayjob/internal.h"
#include "util/util.h"

#define MAX_SERIES 4096

struct series {
    char ns[64], name[254], uid[64], status[32];
    int retry;
    double seconds;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct series *tab;
static size_t ntab;

void rayjob__metrics_forget(const char *ns, const char *name)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < ntab;) {
        if (strcmp(tab[i].ns, ns) == 0 && strcmp(tab[i].name, name) == 0)
            tab[i] = tab[--ntab];
        else
            i++;
    }
    pthread_mutex_unlock(&mu);
}

/* emitRayJobExecutionDuration */
void rayjob__metrics_observe(const cJSON *rj, const char *old_deploy, const cJSON *st, int64_t now_ms)
{
    const char *d = rj_str(st, "jobDeploymentStatus");
    if (rj_deploy_terminal(old_deploy) || !(rj_deploy_terminal(d) || strcmp(d, "Retrying") == 0))
        return;
    int64_t failed = 0, start = rj_parse_time_ms(rj_str(rj, "status.startTime"));
    (void)rj_int(rj, "status.failed", &failed);
    if (start < 0)
        start = rj_parse_time_ms(rj_str(st, "startTime"));
    struct series s = { .retry = (int)failed,
                        .seconds = start < 0 ? 0 : (double)(now_ms - start) / 1000.0 };
    snprintf(s.ns, sizeof(s.ns), "%s", rj_str(rj, "metadata.namespace"));
    snprintf(s.name, sizeof(s.name), "%s", rj_str(rj, "metadata.name"));
    snprintf(s.uid, sizeof(s.uid), "%s", rj_str(rj, "metadata.uid"));
    snprintf(s.status, sizeof(s.status), "%s", d);
    pthread_mutex_lock(&mu);
    size_t i;
    for (i = 0; i < ntab; i++)
        if (strcmp(tab[i].ns, s.ns) == 0 && strcmp(tab[i].name, s.name) == 0 &&
            strcmp(tab[i].uid, s.uid) == 0 && strcmp(tab[i].status, s.status) == 0 &&
            tab[i].retry == s.retry)
            break;
    if (i == ntab && ntab < MAX_SERIES) {
        struct series *n = realloc(tab, (ntab + 1) * sizeof(*tab));
        if (n) {
            tab = n;
            ntab++;
        } else {
            i = MAX_SERIES;   /* out of memory: the sample is dropped */
        }
    }
    if (i < ntab)
        tab[i] = s;
    pthread_mutex_unlock(&mu);
}

/* Label values are Kubernetes names and enum strings, but escape anyway. */
static int label(struct buf *b, const char *k, const char *v, bool last)
{
    int rc = buf_printf(b, "%s=\"", k);
    for (const char *p = v; rc == 0 && *p; p++)
        rc = *p == '"' || *p == '\\' ? buf_printf(b, "\\%c", *p)
             : *p == '\n'            ? buf_puts(b, "\\n")
                                     : buf_append(b, p, 1);
    return rc ? rc : buf_puts(b, last ? "\"}" : "\",");
}

/* METRIC{name=..,namespace=..,uid=.. : the labels every per-RayJob series starts
 * with; last closes the label set. */
static int job_series(struct buf *b, const char *metric, const cJSON *j, bool last)
{
    int rc = buf_printf(b, "%s{", metric);
    rc |= label(b, "name", rj_str(j, "metadata.name"), false);
    rc |= label(b, "namespace", rj_str(j, "metadata.namespace"), false);
    rc |= label(b, "uid", rj_str(j, "metadata.uid"), last);
    return rc;
}

int rayjob_metrics(struct host_view *view, struct buf *out)
{
    cJSON *jobs = NULL, *j;
    int rc = 0;
    if (host_view_list(view, "ray.io/v1/rayjobs", NULL, &jobs) < 0)
        jobs = NULL;   /* not synced yet: no per-object series */
    rc |= buf_puts(out, "# HELP kuberay_job_info Metadata information about RayJob custom resources\n"
                        "# TYPE kuberay_job_info gauge\n");
    cJSON_ArrayForEach(j, jobs) {
        rc |= job_series(out, "kuberay_job_info", j, true);
        rc |= buf_puts(out, " 1\n");
    }
    rc |= buf_puts(out, "# HELP kuberay_job_deployment_status The RayJob's current deployment status\n"
                        "# TYPE kuberay_job_deployment_status gauge\n");
    cJSON_ArrayForEach(j, jobs) {
        rc |= job_series(out, "kuberay_job_deployment_status", j, false);
        rc |= label(out, "deployment_status", rj_str(j, "status.jobDeploymentStatus"), true);
        rc |= buf_puts(out, " 1\n");
    }
    cJSON_Delete(jobs);
    rc |= buf_puts(out, "# HELP kuberay_job_execution_duration_seconds Duration from when the RayJob "
                        "CR's JobDeploymentStatus transitions from Initializing to either the "
                        "Retrying state or a terminal state, such as Complete or Failed.\n"
                        "# TYPE kuberay_job_execution_duration_seconds gauge\n");
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < ntab; i++) {
        char retry[16];
        snprintf(retry, sizeof(retry), "%d", tab[i].retry);
        rc |= buf_puts(out, "kuberay_job_execution_duration_seconds{");
        rc |= label(out, "name", tab[i].name, false);
        rc |= label(out, "namespace", tab[i].ns, false);
        rc |= label(out, "uid", tab[i].uid, false);
        rc |= label(out, "job_deployment_status", tab[i].status, false);
        rc |= label(out, "retry_count", retry, true);
        rc |= buf_printf(out, " %.3f\n", tab[i].seconds);
    }
    pthread_mutex_unlock(&mu);
    return rc ? -ENOMEM : 0;
}

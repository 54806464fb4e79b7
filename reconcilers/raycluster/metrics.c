/*
 * metrics.c - KubeRay's RayCluster metrics (metrics/ray_cluster_metrics.go),
 * appended to the controller's /metrics by the host (host_kind.metrics):
 *   kuberay_cluster_info{name,namespace,uid,owner_kind} 1
 *   kuberay_cluster_condition_provisioned{name,namespace,uid,condition} 1
 *       - both collected from the cache at scrape time, as KubeRay lists its
 *         informer at collect time
 *   kuberay_cluster_provisioned_duration_seconds{name,namespace,uid}
 *       - set when a status write turns RayClusterProvisioned True (seconds
 *         since creationTimestamp), dropped when the RayCluster is gone.
 * The durations live in this process: like KubeRay's gauge they are not
 * persisted, and with several controller processes each exposes the clusters
 * it provisioned.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

#define DUR_MAX 4096
#define DUR_BUCKETS 8192 /* power of two, 2 x DUR_MAX: chains stay short */

struct dur {
    char ns[64], name[254], uid[40];
    double seconds;
    int next; /* next entry in the same bucket, -1 ends */
};

/* Entries are found through a chained hash of (namespace, name): with
 * thousands of RayClusters provisioned, a linear scan per transition took
 * 8.6 % of the controller's CPU while they turned provisioned (issue 18). */
static struct {
    pthread_mutex_t mu;
    struct dur d[DUR_MAX];
    int head[DUR_BUCKETS]; /* entry index + 1, 0 = empty bucket */
    int n;
} durs = { .mu = PTHREAD_MUTEX_INITIALIZER };

static unsigned dur_bucket(const char *ns, const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a over "ns\0name" */
    for (const char *p = ns; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ 0u) * 16777619u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h & (DUR_BUCKETS - 1);
}

/* The index of (ns, name), or -1. Caller holds durs.mu. */
static int dur_find(const char *ns, const char *name)
{
    for (int i = durs.head[dur_bucket(ns, name)] - 1; i >= 0; i = durs.d[i].next)
        if (strcmp(durs.d[i].name, name) == 0 && strcmp(durs.d[i].ns, ns) == 0)
            return i;
    return -1;
}

/* Replaces the link that points at entry i (a bucket head or another entry's
 * next) by to (an index, or -1 to unlink). Caller holds durs.mu. */
static void dur_relink(int i, int to)
{
    int *link = &durs.head[dur_bucket(durs.d[i].ns, durs.d[i].name)];
    if (*link - 1 == i) {
        *link = (to == -1 ? durs.d[i].next : to) + 1;
        return;
    }
    for (int j = *link - 1; j >= 0; j = durs.d[j].next)
        if (durs.d[j].next == i) {
            durs.d[j].next = to == -1 ? durs.d[i].next : to;
            return;
        }
}

void raycluster__metrics_observe_provisioned(const cJSON *rc, const cJSON *old_status,
                                             const cJSON *new_status)
{
    if (rc_cond_true(old_status, "RayClusterProvisioned") ||
        !rc_cond_true(new_status, "RayClusterProvisioned"))
        return;
    time_t created;
    if (util_parse_time(rc_meta(rc, "creationTimestamp"), &created) < 0)
        return;
    double s = difftime(time(NULL), created);
    const char *ns = rc_meta(rc, "namespace"), *name = rc_meta(rc, "name");
    pthread_mutex_lock(&durs.mu);
    int i = dur_find(ns, name);
    if (i < 0 && durs.n < DUR_MAX) {
        i = durs.n++;
        snprintf(durs.d[i].ns, sizeof(durs.d[i].ns), "%s", ns);
        snprintf(durs.d[i].name, sizeof(durs.d[i].name), "%s", name);
        /* keyed by the stored (possibly truncated) strings, as they are found */
        unsigned b = dur_bucket(durs.d[i].ns, durs.d[i].name);
        durs.d[i].next = durs.head[b] - 1;
        durs.head[b] = i + 1;
    }
    if (i >= 0) {
        snprintf(durs.d[i].uid, sizeof(durs.d[i].uid), "%s", rc_meta(rc, "uid"));
        durs.d[i].seconds = s < 0 ? 0 : s;
    }
    pthread_mutex_unlock(&durs.mu);
}

void raycluster__metrics_forget(const char *ns, const char *name)
{
    pthread_mutex_lock(&durs.mu);
    int i = dur_find(ns, name);
    if (i >= 0) {
        int last = --durs.n;
        dur_relink(i, -1);
        if (i != last) {
            /* the last entry moves into the hole: whatever pointed at it points at i */
            dur_relink(last, i);
            durs.d[i] = durs.d[last];
        }
    }
    pthread_mutex_unlock(&durs.mu);
}

/* Label values are Kubernetes names and uids: no quotes or backslashes to escape. */
int rc_metrics(struct host_view *view, struct buf *out)
{
    int rc = 0;
    cJSON *all = NULL;
    rc |= buf_puts(out, "# HELP kuberay_cluster_provisioned_duration_seconds The time, in seconds, "
                        "when a RayCluster's `RayClusterProvisioned` status transitions from false "
                        "(or unset) to true\n"
                        "# TYPE kuberay_cluster_provisioned_duration_seconds gauge\n");
    pthread_mutex_lock(&durs.mu);
    for (int i = 0; i < durs.n; i++)
        rc |= buf_printf(out, "kuberay_cluster_provisioned_duration_seconds{name=\"%s\","
                              "namespace=\"%s\",uid=\"%s\"} %g\n",
                         durs.d[i].name, durs.d[i].ns, durs.d[i].uid, durs.d[i].seconds);
    pthread_mutex_unlock(&durs.mu);
    if (!view || host_view_list(view, RC_CACHE_TYPE, NULL, &all) < 0)
        return rc ? -ENOMEM : 0;   /* cache not there yet: only what we have */
    rc |= buf_puts(out, "# HELP kuberay_cluster_info Metadata information about RayCluster "
                        "custom resources\n# TYPE kuberay_cluster_info gauge\n");
    const cJSON *c;
    cJSON_ArrayForEach(c, all) {
        const char *owner = kobj_label(c, "ray.io/originated-from-crd");
        rc |= buf_printf(out, "kuberay_cluster_info{name=\"%s\",namespace=\"%s\",uid=\"%s\","
                              "owner_kind=\"%s\"} 1\n", rc_meta(c, "name"),
                         rc_meta(c, "namespace"), rc_meta(c, "uid"), owner ? owner : "None");
    }
    rc |= buf_puts(out, "# HELP kuberay_cluster_condition_provisioned Indicates whether the "
                        "RayCluster is provisioned\n"
                        "# TYPE kuberay_cluster_condition_provisioned gauge\n");
    cJSON_ArrayForEach(c, all) {
        bool prov = rc_cond_true(cJSON_GetObjectItemCaseSensitive(c, "status"),
                                 "RayClusterProvisioned");
        rc |= buf_printf(out, "kuberay_cluster_condition_provisioned{name=\"%s\",namespace=\"%s\","
                              "uid=\"%s\",condition=\"%s\"} 1\n", rc_meta(c, "name"),
                         rc_meta(c, "namespace"), rc_meta(c, "uid"), prov ? "true" : "false");
    }
    cJSON_Delete(all);
    return rc ? -ENOMEM : 0;
}

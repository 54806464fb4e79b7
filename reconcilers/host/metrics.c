/*
 * metrics.c - a controller process's Prometheus metrics in controller-runtime's
 * names, so KubeRay dashboards work unchanged:
 *
 *   controller_runtime_reconcile_total{controller,result}   this process
 *   controller_runtime_reconcile_errors_total{controller}    this process
 *   controller_runtime_terminal_reconcile_errors_total{controller}
 *   controller_runtime_reconcile_time_seconds{controller}   histogram, this process
 *   controller_runtime_active_workers / _max_concurrent_reconciles
 *   workqueue_depth / workqueue_adds_total / workqueue_retries_total{name}
 *        the shared queue as the watcher reports it in STATUS (the same value in
 *        every controller process of the kind: aggregate with max, not sum)
 *   workqueue_queue_duration_seconds / workqueue_work_duration_seconds{name}
 *        histograms of the keys this process pulled (wait from the key's
 *        wait_ms, work measured here): sum over processes is the whole queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconcilers/host/internal.h"
#include "util/util.h"

const double host_rt_bounds[HOST_RT_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9,
    10, 15, 20, 25, 30, 40, 50, 60,
};

static const char *const result_names[HOST_M_NRESULTS] = {
    "success", "error", "requeue", "requeue_after",
};

void host__metrics_init(struct host_metrics *m, const char *controller, const char *queue,
                        int max_workers)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->controller, sizeof(m->controller), "%s", controller);
    snprintf(m->queue, sizeof(m->queue), "%s", queue);
    m->max_workers = max_workers;
}

void host__metrics_destroy(struct host_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

enum host_mresult host__metrics_result_of(const struct ipc_outcome *oc, int rc,
                                          const struct host_result *res)
{
    if (rc < 0 || (res && (res->outcome == HOST_ERROR || res->outcome == HOST_TERMINAL)))
        return HOST_M_ERROR;
    if (oc->kind == IPC_OUTCOME_REQUEUE_AFTER)
        return HOST_M_REQUEUE_AFTER;
    if (res && res->outcome == HOST_REQUEUE)
        return HOST_M_REQUEUE;
    return HOST_M_SUCCESS;
}

void host__metrics_observe(struct host_metrics *m, enum host_mresult r, bool terminal,
                           uint64_t reconcile_ns, uint64_t wait_ns)
{
    double s = (double)reconcile_ns / 1e9;
    int i = 0;
    while (i < HOST_RT_BUCKETS && s > host_rt_bounds[i])
        i++;
    pthread_mutex_lock(&m->mu);
    m->reconcile_total[r]++;
    if (r == HOST_M_ERROR)
        m->errors_total++;
    if (terminal)
        m->terminal_errors_total++;
    m->rt_counts[i]++;
    m->rt_count++;
    m->rt_sum += s;
    ipc_hist_observe(&m->queue_duration, wait_ns);
    ipc_hist_observe(&m->work_duration, reconcile_ns);
    pthread_mutex_unlock(&m->mu);
}

void host__metrics_active(struct host_metrics *m, int delta)
{
    pthread_mutex_lock(&m->mu);
    m->active_workers += delta;
    pthread_mutex_unlock(&m->mu);
}

void host__metrics_set_status(struct host_metrics *m, const struct ipc_status *st)
{
    pthread_mutex_lock(&m->mu);
    if (!st) {
        m->status_errors++;
    } else {
        for (uint32_t i = 0; i < st->n_queues; i++) {
            const struct ipc_status_queue *q = &st->queues[i];
            if (strcmp(q->kind, m->queue) != 0)
                continue;
            m->have_status = true;
            m->depth = q->depth;
            m->adds_total = q->adds_total;
            m->retries_total = q->retries_total;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

int host__metrics_text(struct host_metrics *m, struct buf *out)
{
    struct host_metrics s;
    /* snapshot under the lock, format outside it */
    pthread_mutex_lock(&m->mu);
    memcpy(&s, m, sizeof(s));
    pthread_mutex_unlock(&m->mu);
    const char *c = s.controller, *q = s.queue;
    int rc = 0;

    rc |= buf_puts(out, "# HELP controller_runtime_reconcile_total Total number of reconciliations per controller\n"
                        "# TYPE controller_runtime_reconcile_total counter\n");
    for (int r = 0; r < HOST_M_NRESULTS; r++)
        rc |= buf_printf(out, "controller_runtime_reconcile_total{controller=\"%s\",result=\"%s\"} %" PRIu64 "\n",
                         c, result_names[r], s.reconcile_total[r]);
    rc |= buf_printf(out, "# HELP controller_runtime_reconcile_errors_total Total number of reconciliation errors per controller\n"
                          "# TYPE controller_runtime_reconcile_errors_total counter\n"
                          "controller_runtime_reconcile_errors_total{controller=\"%s\"} %" PRIu64 "\n",
                     c, s.errors_total);
    rc |= buf_printf(out, "# HELP controller_runtime_terminal_reconcile_errors_total Total number of terminal reconciliation errors per controller\n"
                          "# TYPE controller_runtime_terminal_reconcile_errors_total counter\n"
                          "controller_runtime_terminal_reconcile_errors_total{controller=\"%s\"} %" PRIu64 "\n",
                     c, s.terminal_errors_total);
    rc |= buf_puts(out, "# HELP controller_runtime_reconcile_time_seconds Length of time per reconciliation per controller\n"
                        "# TYPE controller_runtime_reconcile_time_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < HOST_RT_BUCKETS; i++) {
        cum += s.rt_counts[i];
        rc |= buf_printf(out, "controller_runtime_reconcile_time_seconds_bucket{controller=\"%s\",le=\"%g\"} %" PRIu64 "\n",
                         c, host_rt_bounds[i], cum);
    }
    cum += s.rt_counts[HOST_RT_BUCKETS];
    rc |= buf_printf(out, "controller_runtime_reconcile_time_seconds_bucket{controller=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
                          "controller_runtime_reconcile_time_seconds_sum{controller=\"%s\"} %.9f\n"
                          "controller_runtime_reconcile_time_seconds_count{controller=\"%s\"} %" PRIu64 "\n",
                     c, cum, c, s.rt_sum, c, s.rt_count);
    rc |= buf_printf(out, "# HELP controller_runtime_active_workers Number of currently used workers per controller\n"
                          "# TYPE controller_runtime_active_workers gauge\n"
                          "controller_runtime_active_workers{controller=\"%s\"} %d\n"
                          "# HELP controller_runtime_max_concurrent_reconciles Maximum number of concurrent reconciles per controller\n"
                          "# TYPE controller_runtime_max_concurrent_reconciles gauge\n"
                          "controller_runtime_max_concurrent_reconciles{controller=\"%s\"} %d\n",
                     c, s.active_workers, c, s.max_workers);
    if (s.have_status) {
        rc |= buf_printf(out, "# HELP workqueue_depth Current depth of workqueue\n"
                              "# TYPE workqueue_depth gauge\n"
                              "workqueue_depth{name=\"%s\"} %" PRIu64 "\n"
                              "# HELP workqueue_adds_total Total number of adds handled by workqueue\n"
                              "# TYPE workqueue_adds_total counter\n"
                              "workqueue_adds_total{name=\"%s\"} %" PRIu64 "\n"
                              "# HELP workqueue_retries_total Total number of retries handled by workqueue\n"
                              "# TYPE workqueue_retries_total counter\n"
                              "workqueue_retries_total{name=\"%s\"} %" PRIu64 "\n",
                         q, s.depth, q, s.adds_total, q, s.retries_total);
    }
    rc |= buf_puts(out, "# HELP workqueue_queue_duration_seconds How long in seconds an item stays in workqueue before being requested\n"
                        "# TYPE workqueue_queue_duration_seconds histogram\n");
    rc |= ipc_hist_text(out, "workqueue_queue_duration_seconds", q, &s.queue_duration);
    rc |= buf_puts(out, "# HELP workqueue_work_duration_seconds How long in seconds processing an item from workqueue takes\n"
                        "# TYPE workqueue_work_duration_seconds histogram\n");
    rc |= ipc_hist_text(out, "workqueue_work_duration_seconds", q, &s.work_duration);
    rc |= buf_printf(out, "# HELP rayop_host_status_errors_total Failed STATUS requests to the watcher\n"
                          "# TYPE rayop_host_status_errors_total counter\n"
                          "rayop_host_status_errors_total{controller=\"%s\"} %" PRIu64 "\n",
                     c, s.status_errors);
    if (s.leader)   /* client-go's gauge: 1 while this process holds the lease */
        rc |= buf_printf(out, "# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.\n"
                              "# TYPE leader_election_master_status gauge\n"
                              "leader_election_master_status{name=\"%s\"} %d\n",
                         s.leader_name, host__leader_get_state(s.leader) == HOST_LEADER_LEADING);
    if (s.kind_metrics && s.kind_metrics(s.kind_view, out) < 0)
        rc = 1;
    if (s.kube_slot) {
        struct kube_client *kc = NULL;
        pthread_mutex_lock(&s.kube_slot->mu);
        if (s.kube_slot->done)
            kc = s.kube_slot->client;
        pthread_mutex_unlock(&s.kube_slot->mu);
        if (kc && kube_client_metrics_text(kc, out) < 0)
            rc = 1;
    }
    return rc ? -ENOMEM : 0;
}

int host__metrics_export(struct host_metrics *m, const char *dir, const char *name)
{
    char path[600], tmp[620];
    struct buf b = { 0 };
    int fd = -1, rc;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= sizeof(tmp))
        return -ENAMETOOLONG;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    if ((rc = host__metrics_text(m, &b)) < 0)
        goto out;
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = util_write_all(fd, b.data ? b.data : "", b.len)) < 0)
        goto out;
    if (close(fd) < 0) {
        fd = -1;
        rc = -errno;
        goto out;
    }
    fd = -1;
    rc = rename(tmp, path) < 0 ? -errno : 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    buf_free(&b);
    return rc;
}

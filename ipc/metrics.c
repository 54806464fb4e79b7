/*
 * metrics.c - Prometheus text exposition of the queues' metrics, in the names
 * client-go / controller-runtime use for their workqueues (label name=<kind>),
 * so existing dashboards read rayop's queues unchanged. The watcher serves
 * this from its metrics endpoint; rayop-specific extras carry a rayop_ipc_
 * prefix.
 */
#include <errno.h>
#include <inttypes.h>

#include "ipc/ipc.h"
#include "util/util.h"

int ipc_hist_text(struct buf *b, const char *name, const char *kind, const struct ipc_hist *h)
{
    uint64_t cum = 0;
    int rc = 0;
    for (int i = 0; i < IPC_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        rc |= buf_printf(b, "%s_bucket{name=\"%s\",le=\"%g\"} %" PRIu64 "\n", name, kind,
                         (double)ipc_hist_bounds_ns[i] / 1e9, cum);
    }
    cum += h->counts[IPC_HIST_BUCKETS];
    rc |= buf_printf(b, "%s_bucket{name=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, kind, cum);
    rc |= buf_printf(b, "%s_sum{name=\"%s\"} %.9f\n", name, kind, (double)h->sum_ns / 1e9);
    rc |= buf_printf(b, "%s_count{name=\"%s\"} %" PRIu64 "\n", name, kind, h->count);
    return rc;
}

int ipc_metrics_text(struct ipc_queue *const *queues, size_t n, struct buf *out)
{
    static const char *const outcome_names[IPC_OUTCOME_MAX_] = {
        "ok", "requeue_after", "error", "terminal", "release",
    };
    int rc = 0;
    rc |= buf_puts(out, "# TYPE workqueue_depth gauge\n"
                        "# TYPE workqueue_adds_total counter\n"
                        "# TYPE workqueue_retries_total counter\n"
                        "# TYPE workqueue_unfinished_work_seconds gauge\n"
                        "# TYPE workqueue_longest_running_processor_seconds gauge\n"
                        "# TYPE workqueue_queue_duration_seconds histogram\n"
                        "# TYPE workqueue_work_duration_seconds histogram\n"
                        "# TYPE rayop_ipc_in_flight gauge\n"
                        "# TYPE rayop_ipc_waiting gauge\n"
                        "# TYPE rayop_ipc_gated gauge\n"
                        "# TYPE rayop_ipc_done_total counter\n"
                        "# TYPE rayop_ipc_ryw_gated_total counter\n"
                        "# TYPE rayop_ipc_ryw_timeouts_total counter\n");
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct ipc_queue_stats st;
        const char *kind = ipc_queue_kind(queues[i]);
        ipc_queue_stats(queues[i], &st);
        rc |= buf_printf(out, "workqueue_depth{name=\"%s\"} %" PRIu64 "\n", kind, st.depth);
        rc |= buf_printf(out, "workqueue_adds_total{name=\"%s\"} %" PRIu64 "\n", kind, st.adds_total);
        rc |= buf_printf(out, "workqueue_retries_total{name=\"%s\"} %" PRIu64 "\n", kind,
                         st.retries_total);
        rc |= buf_printf(out, "workqueue_unfinished_work_seconds{name=\"%s\"} %.9f\n", kind,
                         (double)st.unfinished_work_ns / 1e9);
        rc |= buf_printf(out, "workqueue_longest_running_processor_seconds{name=\"%s\"} %.9f\n",
                         kind, (double)st.longest_running_ns / 1e9);
        rc |= ipc_hist_text(out, "workqueue_queue_duration_seconds", kind, &st.queue_duration);
        rc |= ipc_hist_text(out, "workqueue_work_duration_seconds", kind, &st.work_duration);
        rc |= buf_printf(out, "rayop_ipc_in_flight{name=\"%s\"} %" PRIu64 "\n", kind, st.in_flight);
        rc |= buf_printf(out, "rayop_ipc_waiting{name=\"%s\"} %" PRIu64 "\n", kind, st.waiting);
        rc |= buf_printf(out, "rayop_ipc_gated{name=\"%s\"} %" PRIu64 "\n", kind, st.gated);
        for (int o = 0; o < IPC_OUTCOME_MAX_; o++)
            rc |= buf_printf(out, "rayop_ipc_done_total{name=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
                             kind, outcome_names[o], st.done_total[o]);
        rc |= buf_printf(out, "rayop_ipc_ryw_gated_total{name=\"%s\"} %" PRIu64 "\n", kind,
                         st.gated_total);
        rc |= buf_printf(out, "rayop_ipc_ryw_timeouts_total{name=\"%s\"} %" PRIu64 "\n", kind,
                         st.ryw_timeouts_total);
    }
    return rc ? -ENOMEM : 0;
}

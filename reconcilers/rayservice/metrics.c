/*
 * metrics.c - KubeRay's RayService metrics (metrics/ray_service_metrics.go), computed
 * from the shared cache at scrape time as KubeRay's collector lists RayServices:
 * kuberay_service_info, kuberay_service_condition_ready and
 * kuberay_service_condition_upgrade_in_progress; plus the size of the bounded
 * submitted-config memory (rayop_rayservice_serve_memo_entries / _bytes).
 */
#include <errno.h>
#include <stdio.h>

#include "reconcilers/host/host.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/util.h"

static int labels(struct buf *out, const cJSON *rs)
{
    int rc = buf_puts(out, "name=");
    if (rc == 0) rc = buf_append_json_string(out, rs_str(rs, "metadata.name"));
    if (rc == 0) rc = buf_puts(out, ",namespace=");
    if (rc == 0) rc = buf_append_json_string(out, rs_str(rs, "metadata.namespace"));
    if (rc == 0) rc = buf_puts(out, ",uid=");
    if (rc == 0) rc = buf_append_json_string(out, rs_str(rs, "metadata.uid"));
    return rc;
}

int rayservice_metrics(struct host_view *view, struct buf *out)
{
    cJSON *all = NULL;
    const cJSON *rs;
    size_t entries, bytes;
    int rc = host_view_list(view, "ray.io/v1/rayservices", NULL, &all);
    if (rc < 0 && rc != -ENOENT)
        return 0;   /* the cache is not ready: nothing to report yet */
    static const struct { const char *name, *help, *cond; } m[] = {
        { "kuberay_service_info", "Metadata information about RayService custom resources", NULL },
        { "kuberay_service_condition_ready", "Describes whether the RayService is ready. Ready means "
          "users can send requests to the underlying cluster and the number of serve endpoints is "
          "greater than 0.", "Ready" },
        { "kuberay_service_condition_upgrade_in_progress",
          "Describes whether the RayService is performing a zero-downtime upgrade.", "UpgradeInProgress" },
    };
    rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(m) / sizeof(m[0]); i++) {
        rc = buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", m[i].name, m[i].help, m[i].name);
        cJSON_ArrayForEach(rs, all) {
            if (rc == 0) rc = buf_printf(out, "%s{", m[i].name);
            if (rc == 0) rc = labels(out, rs);
            if (rc == 0 && m[i].cond)
                rc = buf_printf(out, ",condition=\"%s\"",
                                rs_cond_true(cJSON_GetObjectItemCaseSensitive(rs, "status"), m[i].cond)
                                    ? "true" : "false");
            if (rc == 0) rc = buf_puts(out, "} 1\n");
        }
    }
    cJSON_Delete(all);
    rs_memo_stats(&entries, &bytes);
    if (rc == 0)
        rc = buf_printf(out, "# HELP rayop_rayservice_serve_memo_entries Serve configs remembered per "
                        "(RayService, cluster) (bounded, %d)\n# TYPE rayop_rayservice_serve_memo_entries gauge\n"
                        "rayop_rayservice_serve_memo_entries %zu\n"
                        "# HELP rayop_rayservice_serve_memo_bytes Bytes held by that memory (bounded, %u)\n"
                        "# TYPE rayop_rayservice_serve_memo_bytes gauge\nrayop_rayservice_serve_memo_bytes %zu\n",
                        RS_MEMO_MAX, entries, RS_MEMO_MAX_BYTES, bytes);
    return rc;
}

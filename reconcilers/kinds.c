/*
 * kinds.c - bin/rayop's kinds (reconcilers/kinds.h): the name `rayop controller`
 * takes, the watcher queue it pulls, the cache types that must be synced before
 * /readyz, the reconcile function, the kind's own /metrics, its start-up check and
 * what must end before its API client is freed at exit (the dashboard calls off the
 * workers of RayJob and RayService).
 */
#include "reconcilers/kinds.h"
#include "dashboard/dashboard.h"
#include "reconcilers/raycluster/raycluster.h"
#include "reconcilers/raycronjob/raycronjob.h"
#include "reconcilers/rayjob/rayjob.h"
#include "reconcilers/rayservice/rayservice.h"

#define RC_TYPE "ray.io/v1/rayclusters"

static const char *const rc_types[] = { RC_TYPE, "v1/pods", "v1/services", NULL };
static const char *const rj_types[] = { "ray.io/v1/rayjobs", RC_TYPE, "batch/v1/jobs", "v1/pods",
                                         NULL };
static const char *const rs_types[] = { "ray.io/v1/rayservices", RC_TYPE, "v1/services", "v1/pods",
                                         "discovery.k8s.io/v1/endpointslices", NULL };

const struct host_kind reconcilers_kinds[] = {
    { "raycluster", "raycluster", rc_types, rc_reconcile,
      "RayCluster (reconcilers/raycluster: Pods, Services, status, events)", rc_metrics,
      rc_platform_start },
    { "rayjob", "rayjob", rj_types, rayjob_reconcile,
      "RayJob (reconcilers/rayjob: RayCluster, submitter, dashboard, status, events)",
      rayjob_metrics, NULL, dash_async_stop },
    { "rayservice", "rayservice", rs_types, rayservice_reconcile,
      "RayService (reconcilers/rayservice: RayClusters, Serve, Services, upgrades, status)",
      rayservice_metrics, NULL, dash_async_stop },
    { "raycronjob", "raycronjob", raycronjob_cache_types, raycronjob_reconcile,
      "RayCronJob: a RayJob from spec.jobTemplate at each tick of spec.schedule" },
};
const size_t reconcilers_nkinds = sizeof(reconcilers_kinds) / sizeof(reconcilers_kinds[0]);

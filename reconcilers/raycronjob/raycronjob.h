/*
 * raycronjob.h - the RayCronJob controller (`rayop controller raycronjob`):
 * creates a RayJob from spec.jobTemplate at each tick of spec.schedule, as
 * KubeRay v1.7's RayCronJobReconciler does. docs/raycronjob.md.
 *
 * The reconcile function is registered in reconcilers/kinds.c; the pure
 * parts (validation, the child's name and object) are exposed for tests.
 */
#ifndef RAYOP_RAYCRONJOB_H
#define RAYOP_RAYCRONJOB_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "reconcilers/host/host.h"
#include "reconcilers/raycronjob/cron.h"
#include "reconcilers/rayjob/rayjob.h"

#define RCJ_CACHE_TYPE "ray.io/v1/raycronjobs"
#define RCJ_NAME_MAX 36   /* KubeRay MaxRayCronJobNameLength: 53 - 6 - 11 */
#define RCJ_LABEL_NAME "ray.io/cronjob-name"
#define RCJ_ANNOTATION_TS "ray.io/cronjob-scheduled-timestamp"

extern const struct kube_resource RCJ_RES_RAYCRONJOBS;
extern const char *const raycronjob_cache_types[];

int raycronjob_reconcile(struct host_ctx *ctx, struct host_result *res);

/* ValidateRayCronJobSpec: 0, or -EINVAL with KubeRay's message in err. The
 * template is checked with the RayJob controller's validation under cfg (its
 * feature gates and env). On success *sched and *zone (the timeZone, else the
 * operator's local zone; caller frees with tz_free) are filled. */
int raycronjob_validate(const cJSON *rcj, const struct rj_config *cfg,
                        struct cron_schedule *sched, struct tz **zone, char *err, size_t errlen);

/* "<cronjob>-<unix minutes of t>", KubeRay's getRayJobName. */
void raycronjob_child_name(const char *cronjob, int64_t t, char *out, size_t cap);

/* The RayJob KubeRay's constructRayJob builds for tick t. Caller owns. */
cJSON *raycronjob_child(const cJSON *rcj, int64_t t);

#endif

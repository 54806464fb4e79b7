/*
 * batchsched.h - the batch-scheduler integrations KubeRay v1.7 ships
 * (controllers/ray/batchscheduler): Volcano, YuniKorn, KAI, scheduler-plugins
 * and Kubernetes WAS. The RayCluster and RayJob controllers call three hooks,
 * as KubeRay's reconcilers call its BatchScheduler interface:
 *
 *   batchsched_child_meta    AddMetadataToChildResource: schedulerName, labels and
 *                            annotations on a head/worker Pod, the submitter's Pod
 *                            template, or the RayCluster a RayJob creates (pure)
 *   batchsched_submit        DoBatchSchedulingOnSubmission: the PodGroup (Volcano,
 *                            scheduler-plugins) or Workload (WAS) of a RayCluster or
 *                            RayJob, created or kept in step (cache read, API write)
 *   batchsched_completion    CleanupOnCompletion: a finished RayJob's PodGroup shrunk
 *                            to what its cluster still holds
 *
 * The object builders are pure and exported for the unit fixtures
 * (tests/unit/test_batchsched.c). docs/batch-scheduling.md.
 */
#ifndef RAYOP_BATCHSCHED_H
#define RAYOP_BATCHSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum batchsched_kind {
    BATCHSCHED_NONE = 0,          /* KubeRay's default: no scheduler, nothing added */
    BATCHSCHED_VOLCANO,
    BATCHSCHED_YUNIKORN,
    BATCHSCHED_KAI,
    BATCHSCHED_SCHEDULER_PLUGINS,
    BATCHSCHED_KUBERNETES_WAS,    /* feature gate KubernetesWAS */
};

/* Names and keys KubeRay uses. */
#define BATCHSCHED_VOLCANO_QUEUE_LABEL   "volcano.sh/queue-name"
#define BATCHSCHED_VOLCANO_TOPO_MODE     "volcano.sh/network-topology-mode"
#define BATCHSCHED_VOLCANO_TOPO_TIER     "volcano.sh/network-topology-highest-tier-allowed"
#define BATCHSCHED_VOLCANO_GROUP_ANN     "scheduling.k8s.io/group-name"
#define BATCHSCHED_VOLCANO_TASK_SPEC_ANN "volcano.sh/task-spec"
#define BATCHSCHED_PRIORITY_CLASS_LABEL  "ray.io/priority-class-name"
#define BATCHSCHED_GANG_LABEL            "ray.io/gang-scheduling-enabled"
#define BATCHSCHED_SUBMITTER_GROUP       "submittergroup"
#define BATCHSCHED_HEAD_GROUP            "headgroup"
#define BATCHSCHED_VOLCANO_PG_TYPE       "scheduling.volcano.sh/v1beta1/podgroups"
#define BATCHSCHED_SP_PG_TYPE            "scheduling.x-k8s.io/v1alpha1/podgroups"
#define BATCHSCHED_WAS_WORKLOAD_TYPE     "scheduling.k8s.io/v1alpha2/workloads"
#define BATCHSCHED_WAS_PG_TYPE           "scheduling.k8s.io/v1alpha2/podgroups"

/* KubeRay's ValidateBatchSchedulerConfig and getSchedulerFactory: --batch-scheduler
 * (or the config file's batchScheduler), the legacy --enable-batch-scheduler (=
 * volcano) and the KubernetesWAS gate. 0 with *out set, or -EINVAL with err holding
 * KubeRay's message ("scheduler is not supported, name=X", ...). */
int batchsched_select(const char *name, bool enable_legacy, bool was_gate,
                      enum batchsched_kind *out, char *err, size_t errlen);
/* The plugin name ("volcano", "yunikorn", "kai-scheduler", "scheduler-plugins",
 * "kubernetes-was"), "" for NONE. */
const char *batchsched_name(enum batchsched_kind k);

/* The parent a child is built for: a RayCluster, or a RayJob with the Pod spec
 * its submitter runs (the K8sJobMode Job's template spec, or {"containers":
 * [sidecar]} in SidecarMode; NULL in HTTPMode / InteractiveMode). */
struct batchsched_parent {
    const cJSON *obj;
    bool is_job;
    const cJSON *submitter_podspec;
};

/* AddMetadataToChildResource. child is a Pod or Pod template (has_podspec: its
 * spec.schedulerName is set) or a RayCluster; group is the task group
 * ("headgroup", a worker group's name, "submittergroup"; "" for a RayCluster).
 * 0 or -ENOMEM. */
int batchsched_child_meta(enum batchsched_kind k, const struct batchsched_parent *parent,
                          cJSON *child, bool has_podspec, const char *group);

/* ---- pure builders (unit fixtures) ----------------------------------------- */

/* Volcano's calculatePodGroupParams for a RayCluster spec: desired workers + 1
 * and their resources, or min workers + 1 with autoscaling. *res is a new
 * ResourceList object (sorted names, resource.Quantity strings). */
int batchsched_volcano_params(const cJSON *cluster_spec, int32_t *min_member, cJSON **res);
/* The PodGroup KubeRay creates for owner (a RayCluster, or a RayJob with its
 * submitter), or NULL with *err set (-EINVAL: a RayJob without rayClusterSpec,
 * a bad network-topology tier label; -ENOMEM). */
cJSON *batchsched_volcano_podgroup(const struct batchsched_parent *owner, int *err);
/* YuniKorn's task-groups annotation value (JSON text, caller frees). */
char *batchsched_yunikorn_task_groups(const struct batchsched_parent *parent);
/* The scheduler-plugins PodGroup of a RayCluster (NAME, minMember desired + 1). */
cJSON *batchsched_sp_podgroup(const cJSON *rc, int *err);
/* Kubernetes WAS: the Workload NAME and PodGroup NAME-cluster of a RayCluster. */
cJSON *batchsched_was_workload(const cJSON *rc, int *err);
cJSON *batchsched_was_podgroup(const cJSON *rc, int *err);

/* ---- reconcile hooks (cache reads, API writes through the host) ------------- */

struct host_ctx;

/* DoBatchSchedulingOnSubmission for a RayCluster or a RayJob. 0, or a negative
 * errno with msg filled (the reconcile fails and is retried, as in KubeRay). */
int batchsched_submit(struct host_ctx *ctx, enum batchsched_kind k,
                      const struct batchsched_parent *obj, char *msg, size_t msglen);
/* CleanupOnCompletion for a finished RayJob; cluster is its RayCluster as cached
 * (NULL when gone). 1 when the PodGroup was updated, 0 when nothing to do, or a
 * negative errno with msg filled. */
int batchsched_completion(struct host_ctx *ctx, enum batchsched_kind k, const cJSON *rayjob,
                          const cJSON *cluster, char *msg, size_t msglen);

#endif

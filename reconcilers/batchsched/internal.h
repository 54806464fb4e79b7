/*
 * batchsched/internal.h - what the scheduler files of this module share: a
 * ResourceList accumulator with Go's resource.Quantity arithmetic (the sums
 * KubeRay's CalculatePodResource / SumResourceList make), metadata setters, and
 * the per-scheduler hooks select.c dispatches to. Not for other modules.
 */
#ifndef RAYOP_BATCHSCHED_INTERNAL_H
#define RAYOP_BATCHSCHED_INTERNAL_H

#include "reconcilers/batchsched/batchsched.h"

#define BS_MAX_RES 32

/* One resource name's total; binary: the format of its first non-zero operand
 * (Quantity.Add keeps it), -1 while unset. */
struct bs_res {
    char name[128];
    __int128 milli;
    int binary;
};

/* A ResourceList being summed. Names keep their first-seen order here; the JSON
 * form is sorted, as Go marshals a map. */
struct bs_reslist {
    struct bs_res r[BS_MAX_RES];
    size_t n;
};

/* Adds CalculatePodResource(podspec) times n: per container its requests, its
 * limits where no request; every name is added even when n is 0 (Go keeps the
 * zero quantity in the map). */
void batchsched__res_add_podspec(struct bs_reslist *l, const cJSON *podspec, int64_t n);
/* A new ResourceList object (sorted names, Quantity strings) or NULL. */
cJSON *batchsched__res_json(const struct bs_reslist *l);
/* quotav1.Equals of a ResourceList object and a sum: same names, same values. */
bool batchsched__res_equal(const cJSON *obj, const struct bs_reslist *l);

/* Desired (or, with autoscaling, minimum) workers of a RayCluster spec and the
 * resources of those Pods plus the head (KubeRay's calculatePodGroupParams). */
int32_t batchsched__cluster_params(const cJSON *cluster_spec, struct bs_reslist *l);
/* CalculateDesiredReplicas (clamped) of a RayCluster spec. */
int32_t batchsched__desired_workers(const cJSON *cluster_spec);

/* meta.c */
/* A builder's failure path: frees obj, sets *err (when err is not NULL) to code, NULL. */
cJSON *batchsched__build_fail(cJSON *obj, int code, int *err);
/* Sets key=val in obj's metadata.labels / annotations. 0 or -ENOMEM. */
int batchsched__set_label(cJSON *obj, const char *key, const char *val);
int batchsched__set_annotation(cJSON *obj, const char *key, const char *val);
/* The parent's label from, when set and not empty, as the child's label to (the
 * child's labels map is made either way). 0 or -ENOMEM. */
int batchsched__copy_label(const cJSON *parent, cJSON *child, const char *from, const char *to);
/* Sets spec.schedulerName of a Pod or Pod template. 0 or -ENOMEM. */
int batchsched__set_scheduler_name(cJSON *podlike, const char *name);
/* ownerReferences: [{apiVersion ray.io/v1, kind, name, uid, controller, blockOwnerDeletion}]. */
cJSON *batchsched__controller_ref(const cJSON *owner, const char *kind);

/* Per scheduler (volcano.c, yunikorn.c, kai.c, schedplugins.c, was.c). */
int batchsched__volcano_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec,
                     const char *group);
int batchsched__yunikorn_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec,
                      const char *group);
int batchsched__kai_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec);
int batchsched__sp_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec);
int batchsched__was_child(const struct batchsched_parent *p, cJSON *child, bool has_podspec);
/* DoBatchSchedulingOnSubmission / CleanupOnCompletion of each scheduler (hooks.c). */
struct host_ctx;
int batchsched__volcano_submit(struct host_ctx *ctx, const struct batchsched_parent *p, char *msg,
                      size_t msglen);
int batchsched__volcano_completion(struct host_ctx *ctx, const cJSON *rj, const cJSON *cluster,
                          char *msg, size_t msglen);
int batchsched__kai_submit(const struct batchsched_parent *p, char *msg, size_t msglen);
int batchsched__sp_submit(struct host_ctx *ctx, const struct batchsched_parent *p, char *msg,
                 size_t msglen);
int batchsched__was_submit(struct host_ctx *ctx, const struct batchsched_parent *p, char *msg,
                  size_t msglen);

#endif

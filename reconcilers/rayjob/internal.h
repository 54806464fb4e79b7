/*
 * internal.h - what the RayJob controller's files share beyond rayjob.h:
 * status editing helpers and the pieces of the state machine that live in
 * their own files (terminal.c, sidecar checks). Not for other modules.
 */
#ifndef RAYOP_RAYJOB_INTERNAL_H
#define RAYOP_RAYJOB_INTERNAL_H

#include "reconcilers/rayjob/rayjob.h"

/* How a state's branch ends: fall through to the backoff check and the status
 * write (KubeRay's `break`), or return the plan as it is (an early `return`). */
enum flow { BREAK, RETURN };

/* Status edits: an empty/NULL value removes the key (omitempty). 0 or -ENOMEM. */
int rayjob__st_set(cJSON *st, const char *key, const char *val);
int rayjob__st_time(cJSON *st, const char *key, int64_t ms);

void rayjob__plan_event(struct rj_plan *p, const char *type, const char *reason, const char *action,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void rayjob__plan_requeue(struct rj_plan *p, int64_t ms);

/* Complete / Failed: selector, deletion rules, legacy policies, shutdown TTL. */
enum flow rayjob__terminal(const struct rj_in *in, struct rj_plan *p);
/* SidecarMode: the submitter container's state in in->head_pod. true when it
 * failed (status moved to Failed); *finished_ms set when it terminated. */
bool rayjob__check_sidecar(const struct rj_in *in, struct rj_plan *p, int64_t *finished_ms);

/* metrics.c: execution duration on a transition to Complete/Failed/Retrying;
 * forget drops a deleted RayJob's series. */
void rayjob__metrics_observe(const cJSON *rj, const char *old_deploy, const cJSON *new_status,
                             int64_t now_ms);
void rayjob__metrics_forget(const char *ns, const char *name);

/* batch.c: the batch-scheduler hooks (reconcilers/batchsched). submit: 0 or
 * -errno (Warning Event written); child: tags the RayCluster to create, or the
 * submitter Job's Pod template; cleanup: CleanupOnCompletion with its Events. */
struct host_ctx;
int rayjob__batch_submit(struct host_ctx *ctx, const cJSON *rj, char *msg, size_t msglen);
int rayjob__batch_child(struct host_ctx *ctx, const cJSON *rj, cJSON *obj, bool submitter_job);
void rayjob__batch_cleanup(struct host_ctx *ctx, const cJSON *rj, const cJSON *cluster);

#endif

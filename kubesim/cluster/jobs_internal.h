/*
 * cluster_jobs_int.h - what the Job controller's two files share: the tables and
 * writes of cluster_jobs.c that the sync in cluster_jobs_sync.c uses, and a few
 * JSON helpers. Cluster thread only; not for the rest of kubesim.
 */
#ifndef RAYOP_SIM_CLUSTER_JOBS_INT_H
#define RAYOP_SIM_CLUSTER_JOBS_INT_H

#include "kubesim/cluster/internal.h"

#define TRACKING_FIN "batch.kubernetes.io/job-tracking"
#define INDEX_KEY "batch.kubernetes.io/job-completion-index"
#define COMPONENT "job-controller"

bool cl_job_has_finalizer(const cJSON *obj, const char *f);
bool cl_job_deleting(const cJSON *obj);
const cJSON *cl_job_cond_find(const cJSON *status, const char *type);
bool cl_job_cond_true(const cJSON *status, const char *type);
/* Sets (or with v NULL removes) a string member. */
void cl_job_set_str(cJSON *o, const char *k, const char *v);
bool cl_job_uid_in(const cJSON *arr, const char *uid);

/* Queues j for the next cl_jobs_sync (NULL is fine). */
void cl_job_mark(struct cluster *c, struct cl_job *j);
/* Records o as j's Pod unless the table holds a newer version. */
void cl_jpod_set(struct cluster *c, struct cl_job *j, struct store_obj *o);
void cl_jpod_free(struct cluster *c, struct cl_jpod *jp);
/* Arms a T_JOB timer unless an earlier one is due first. */
void cl_job_wake(struct cluster *c, struct cl_job *j, uint64_t delay_ms);

/* Writes: 0 or a negative errno; failures are logged or recorded as Events. */
int cl_job_drop_finalizer(struct cluster *c, struct store_obj *pod, struct store_obj **out);
int cl_job_pod_delete(struct cluster *c, struct cl_job *j, struct cl_jpod *jp);
/* A Pod from the template (index -1 for NonIndexed), recorded in j on success. */
int cl_job_pod_create(struct cluster *c, struct cl_job *j, long index);
/* PUT of /status; j->obj becomes the stored object. */
int cl_job_status_write(struct cluster *c, struct cl_job *j, cJSON *status);
/* A finished Job: delete it once ttlSecondsAfterFinished passed, else wake then. */
void cl_job_ttl(struct cluster *c, struct cl_job *j);

/* cluster_jobs_sync.c */
void cl_job_sync(struct cluster *c, struct cl_job *j);

#endif

/*
 * apierr.c - what a RayService's Events, logs and requeue message say when the API
 * server refuses a write: the server's own message and field causes
 * (kube_result_error), as the RayCluster and RayJob controllers report them, instead
 * of kube_strerror's one word ("invalid", "forbidden"). The words are kept in the
 * reconcile's rsr so the requeue message at the end repeats them.
 */
#include "kube/kube.h"
#include "reconcilers/rayservice/internal.h"

const char *rayservice__api_error(struct rsr *r, const struct kube_result *kr, int rc)
{
    r->err_rc = rc;
    return kube_result_error(kr, rc, r->err, sizeof(r->err));
}

/*
 * platform.c - what the RayCluster controller asks the API server once, at start-up, as
 * KubeRay's main.go does before its manager starts: is this OpenShift (one of
 * route.openshift.io, security.openshift.io, config.openshift.io served: the head is then
 * exposed with a Route, utils.IsOpenShiftCluster), and is cert-manager.io/v1 served (mTLS,
 * certManagerAPIAvailable). A refused OpenShift check stops the controller, as KubeRay's
 * exitOnError does; one the API server did not answer (unreachable - restarting, say -,
 * busy: 429 or 5xx) does not: the first reconcile that needs to know asks again, so an
 * API server that is down for a few seconds while a controller starts does not cost a
 * process. cert-manager that cannot be asked counts as absent.
 *
 * rc_platform_start is the kind's start hook (reconcilers/kinds.c), run on the API
 * client's thread before any reconcile can write. A reconcile run without it (unit tests)
 * asks the first time it needs to know.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

static pthread_mutex_t platform_mu = PTHREAD_MUTEX_INITIALIZER;
static int platform_openshift = -1, platform_cert_manager = -1;

static bool served(const cJSON *groups, const char *group, const char *version)
{
    const cJSON *g, *v;
    cJSON_ArrayForEach(g, groups) {
        const char *n = kobj_str(g, "name");
        if (!n || strcmp(n, group))
            continue;
        if (!version)
            return true;
        cJSON_ArrayForEach(v, kobj_get(g, "versions"))
            if (kobj_str(v, "version") && !strcmp(kobj_str(v, "version"), version))
                return true;
    }
    return false;
}

/* Under platform_mu. 0, or < 0 with why filled when /apis could not be read; *transient
 * (may be NULL) says whether it went unanswered or was answered 429 or 5xx. */
static int detect(struct kube_client *kc, char *why, size_t cap, bool *transient)
{
    static const char *const os_groups[] = { "route.openshift.io", "security.openshift.io",
                                             "config.openshift.io" };
    struct kube_request q = { .method = "GET", .path = "/apis", .idempotent = 1,
                              .parse_json = 1 };
    struct kube_result kr = { 0 };
    int rc = kc ? kube_raw(kc, &q, &kr) : -ENOTCONN;
    if (rc < 0) {
        char err[400];
        snprintf(why, cap, "failed to retrieve server API groups: %s",
                 kube_result_error(&kr, rc, err, sizeof(err)));
        if (transient)
            *transient = kc && (kr.http_code == 0 || kr.http_code == 429 || kr.http_code >= 500);
        goto out;
    }
    const cJSON *groups = kobj_get(kr.body, "groups");
    platform_openshift = 0;
    for (size_t i = 0; i < sizeof(os_groups) / sizeof(os_groups[0]); i++)
        if (served(groups, os_groups[i], NULL))
            platform_openshift = 1;
    platform_cert_manager = served(groups, "cert-manager.io", "v1");
out:
    kube_result_release(&kr);
    return rc;
}

int rc_platform_start(struct kube_client *kc)
{
    char why[512];
    bool transient = false;
    int rc;
    pthread_mutex_lock(&platform_mu);
    rc = detect(kc, why, sizeof(why), &transient);
    pthread_mutex_unlock(&platform_mu);
    if (rc < 0 && transient) {
        log_warn("unable to detect cluster type (OpenShift vs Kubernetes) yet; the first "
                 "reconcile that needs it asks again", "error", why, NULL);
        return 0;
    }
    if (rc < 0) {
        log_error("unable to detect cluster type (OpenShift vs Kubernetes)", "error", why, NULL);
        return rc;
    }
    log_info(platform_openshift ? "OpenShift API groups served: dashboard Ingresses are made "
             "as Routes" : "not OpenShift: dashboard Ingresses are Ingresses", NULL);
    if (!platform_cert_manager)
        log_info("cert-manager API not found; RayClusters with tlsOptions will be refused", NULL);
    return 0;
}

/* 1 / 0 from start-up; a reconcile without the start hook asks once (retried when the
 * question fails). */
static int known(struct rc_run *r, const int *what)
{
    char why[512];
    int rc;
    /* the client first: it waits for the start hook, which takes platform_mu */
    struct kube_client *kc = host_kube(r->ctx);
    pthread_mutex_lock(&platform_mu);
    if (*what < 0 && (rc = detect(kc, why, sizeof(why), NULL)) < 0) {
        pthread_mutex_unlock(&platform_mu);
        host_log(r->ctx, LOG_ERROR, "unable to detect cluster type (OpenShift vs Kubernetes)",
                 "error", why, NULL);
        return rc;
    }
    rc = *what;
    pthread_mutex_unlock(&platform_mu);
    return rc;
}

int raycluster__platform_openshift(struct rc_run *r)
{
    return known(r, &platform_openshift);
}

int raycluster__platform_cert_manager(struct rc_run *r)
{
    return known(r, &platform_cert_manager);
}

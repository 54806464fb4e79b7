/*
 * preflight.c - what `rayop up` checks before it starts anything: the flags
 * it forwards, parsed by the very parsers the watcher and the controllers
 * use (so a bad value is reported once, by up, not by five children in a
 * restart loop), KubeRay's feature-gate and batch-scheduler checks (on the
 * flags and the --config file together), and the kubeconfig. Each of
 * these is an error no restart can fix: up stops with one line and a
 * distinct exit code (UTIL_EXIT_USAGE, UTIL_EXIT_CONFIG).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/up/internal.h"
#include "kube/kube.h"
#include "reconcilers/batchsched/batchsched.h"
#include "reconcilers/host/host.h"
#include "reconcilers/host/opts.h"
#include "watcher/opts.h"

bool up__in_pod(void)
{
    /* what client-go's rest.InClusterConfig looks for */
    return getenv("KUBERNETES_SERVICE_HOST") && getenv("KUBERNETES_SERVICE_PORT") &&
           access("/var/run/secrets/kubernetes.io/serviceaccount/token", R_OK) == 0;
}

int up__preflight(char **wargv, int wargc, char **cargv, int cargc)
{
    struct wopts wo;
    struct host_opts ho;
    char err[512];
    int rc;

    /* the parsers print their own one-line reason */
    if (wopts_parse(&wo, wargc, wargv, WOPTS_WATCHER) < 0)
        return UTIL_EXIT_USAGE;
    rc = host_opts_parse(&ho, cargc, cargv);
    if (rc < 0) {
        wopts_free(&wo);
        return UTIL_EXIT_USAGE;
    }
    rc = 0;
    if (ho.config_file) {
        if (host_opts_load_config(&ho, ho.config_file, err, sizeof(err)) < 0) {
            fprintf(stderr, "rayop up: bad --config file: %s\n", err);
            rc = UTIL_EXIT_CONFIG;
            goto out;
        }
    }
    if (host_feature_gates_check(ho.feature_gates, err, sizeof(err)) < 0) {
        /* KubeRay's words: exitOnError(err, "Unable to set flag gates for known features") */
        fprintf(stderr, "rayop up: Unable to set flag gates for known features: %s\n", err);
        rc = UTIL_EXIT_CONFIG;
        goto out;
    }
    {
        /* KubeRay's ValidateBatchSchedulerConfig on what the flags and the --config file
         * chose together (a file's bad batchScheduler would otherwise stop up only once
         * a controller had started and read it) */
        struct host_settings gs = { .feature_gates = ho.feature_gates };
        struct host_ctx gctx = { .settings = &gs };
        enum batchsched_kind bk;
        if (batchsched_select(ho.batch_scheduler, ho.enable_batch_scheduler,
                              host_feature_enabled(&gctx, "KubernetesWAS", false), &bk, err,
                              sizeof(err)) < 0) {
            fprintf(stderr, "rayop up: batch scheduler configs validation failed: %s\n", err);
            rc = UTIL_EXIT_CONFIG;
            goto out;
        }
    }
    struct kube_config *cfg = NULL;
    struct kube_config_opts co = { .kubeconfig = wo.kubeconfig, .context = wo.context };
    if (kube_config_load(&co, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "rayop up: cannot load the kubeconfig: %s\n", err);
        rc = UTIL_EXIT_CONFIG;
        goto out;
    }
    kube_config_free(cfg);
out:
    host_opts_free(&ho);
    wopts_free(&wo);
    return rc;
}

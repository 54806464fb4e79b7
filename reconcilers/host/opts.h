/*
 * opts.h - the flags of `rayop controller KIND` and the KubeRay Configuration
 * file (config.ray.io/v1alpha1) that may set them (opts.c). Public because
 * `rayop up` checks the same flags in its preflight before it starts the
 * controllers; reconcile code never needs it.
 */
#ifndef RAYOP_HOST_OPTS_H
#define RAYOP_HOST_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define HOST_MAX_NAMESPACES 1024

struct host_opts {
    const char *kind;
    const char *kubeconfig, *context, *state_dir, *config_file;
    char *namespaces[HOST_MAX_NAMESPACES];   /* owned */
    size_t nnamespaces;
    double qps;
    int burst;
    int workers;
    char metrics_addr[128];
    char probe_addr[128];
    bool supervised;        /* --supervised (set by rayop up): the two addresses above are up's
                             * to give, so --config does not replace them */
    bool leader_election;
    char leader_namespace[64];               /* --leader-election-namespace, "" : default */
    int leader_lease_s;                      /* --leader-lease-seconds (15) */
    bool use_kubernetes_proxy;
    bool enable_metrics;              /* --enable-metrics: the kinds' kuberay_* metrics */
    char feature_gates[512];
    char batch_scheduler[64];                /* --batch-scheduler / batchScheduler */
    bool enable_batch_scheduler;             /* --enable-batch-scheduler (legacy: volcano) */
    char log_encoder[16];                    /* json | console */
    int log_level;                           /* -1: unchanged */
    cJSON *config_json;                      /* the --config file as JSON (owned), NULL if none */
    int drain_timeout_ms;                    /* SIGTERM: finish in-flight work within */
    int connect_timeout_ms;
};

/* Parses argv (argv[0] "controller", argv[1] kind). 0, 1 for --help (usage
 * printed), or -EINVAL after printing the reason. host_opts_free releases. */
int host_opts_parse(struct host_opts *o, int argc, char **argv);
void host_opts_free(struct host_opts *o);
/* Applies a KubeRay Configuration file (config.ray.io/v1alpha1) to o.
 * Bounded: 1 MiB, depth 8. 0 or negative errno with err filled. */
int host_opts_load_config(struct host_opts *o, const char *path, char *err, size_t errlen);

#endif

/*
 * opts.h - command-line flags of `rayop watcher` and `rayop status` (shared
 * names and meanings with the other rayop subcommands and KubeRay's operator).
 */
#ifndef RAYOP_WATCHER_OPTS_H
#define RAYOP_WATCHER_OPTS_H

#include <stddef.h>

#include "watcher/internal.h"

#define WOPTS_DEFAULT_STATE_DIR "/run/rayop"

enum wopts_cmd { WOPTS_WATCHER, WOPTS_STATUS };

/* The watcher's cache defaults: start small, grow by doubling when full. */
#define WATCHER_CACHE_BYTES     ((size_t)32 << 20)
#define WATCHER_CACHE_OBJECTS   16384u
#define WATCHER_CACHE_MAX_BYTES ((size_t)4 << 30)

struct wopts {
    const char *kubeconfig, *context, *state_dir;
    const char *config_file;     /* --config: KubeRay's Configuration (watchNamespace, qps, burst) */
    const char *metrics_addr;    /* watcher: /metrics, /healthz, /readyz; NULL = off */
    char *namespaces[WATCHER_MAX_NAMESPACES]; /* owned copies */
    size_t nnamespaces;
    double qps;
    int burst;
    size_t cache_bytes, cache_max_bytes;
    int cache_max_bytes_set;     /* --cache-max-bytes given (0 then means: never grow) */
    unsigned cache_objects;
    int json;                    /* status: -o json */
};

/* Parses argv (argv[0] = subcommand). 0 ok, 1 for --help, -EINVAL after
 * printing the reason to stderr. Sets the log level when --log-level is given.
 * Strings point into argv except namespaces (wopts_free). */
int wopts_parse(struct wopts *o, int argc, char **argv, enum wopts_cmd cmd);
void wopts_free(struct wopts *o);
/* Creates dir (and parents) with mode 0700; warns when an existing one is
 * open to others. 1 if dir was created now, 0 if it existed, or a negative
 * errno (logged). */
int wopts_state_dir(const char *dir);

#endif

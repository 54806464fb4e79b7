/*
 * internal.h - the pure pieces of `rayop up`, exposed for tests/unit/test_up.c.
 */
#ifndef RAYOP_UP_INTERNAL_H
#define RAYOP_UP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* Delay before the next start of a child that exited after running ran_ms,
 * given the previous delay (0 = none yet): initial, doubled per consecutive
 * exit, capped at max. A run of reset_ms or longer was no crash loop (a kill,
 * an OOM, a lost API server): 0, restart at once, and the next quick exit
 * starts over at initial. */
uint64_t up__next_backoff(uint64_t prev_ms, uint64_t ran_ms, uint64_t initial_ms,
                         uint64_t max_ms, uint64_t reset_ms);

/* Appends line s[0..n) (no newline) of child proc to out, tagged: a JSON
 * object gets "proc":"NAME" as its first member, anything else a "[NAME] "
 * prefix; then "\n". 0 or -ENOMEM. */
int up__tag_line(const char *proc, const char *s, size_t n, struct buf *out);

/* true when running in a Pod (the service-account token and the service
 * environment client-go's in-cluster config reads) */
bool up__in_pod(void);
/* Parses the watcher's and a controller's argv as they will, checks the
 * feature gates and loads the kubeconfig: 0, or the exit code after one line
 * on stderr. */
int up__preflight(char **wargv, int wargc, char **cargv, int cargc);

#endif

/*
 * cmd.h - bin/rayop's dispatch, and the subcommands that are not long-running
 * processes of their own module: `rayop status` and `rayop clean` read a stopped or running
 * instance from outside, through the cache segment and the queue socket. The
 * process entry points (watcher_main, host_main_controller, up_main) are declared
 * by their modules.
 */
#ifndef RAYOP_CMD_H
#define RAYOP_CMD_H

#include <stddef.h>

struct host_kind;

/* bin/rayop's subcommand dispatch (cmd/dispatch.c), argv as main's; `rayop controller
 * KIND` serves the kinds of kinds[0..nkinds). Returns a process exit code. */
int cmd_rayop_main(int argc, char **argv, const struct host_kind *kinds, size_t nkinds);

/* `rayop status ARGS` (cmd/status.c) and `rayop clean ARGS` (cmd/clean.c); argv[0]
 * is the subcommand name. Return a process exit code. */
int status_main(int argc, char **argv);
int clean_main(int argc, char **argv);
/* What `rayop clean` does for DIR: removes the cache segment and the queue
 * socket unless a watcher still serves it. 0 (seg_removed: whether there was a
 * segment), -EBUSY while a watcher serves it, or a negative errno. */
int clean_state_dir(const char *dir, int *seg_removed, char *seg, size_t segcap);

#endif

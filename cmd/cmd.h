/*
 * cmd.h - the subcommands of bin/rayop that are not long-running processes of
 * their own module: `rayop status` and `rayop clean` read a stopped or running
 * instance from outside, through the cache segment and the queue socket. The
 * process entry points (watcher_main, host_main_controller, up_main) are declared
 * by their modules.
 */
#ifndef RAYOP_CMD_H
#define RAYOP_CMD_H

/* `rayop status ARGS` (cmd/status.c) and `rayop clean ARGS` (cmd/clean.c); argv[0]
 * is the subcommand name. Return a process exit code. */
int status_main(int argc, char **argv);
int clean_main(int argc, char **argv);

#endif

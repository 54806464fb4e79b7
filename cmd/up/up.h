/*
 * up.h - `rayop up`: a local supervisor that runs `rayop watcher` and one
 * `rayop controller KIND` per kind as child processes of the same binary,
 * restarts a child that exits (exponential backoff, as a kubelet restarts a
 * container), forwards SIGINT/SIGTERM, merges the children's log lines onto
 * stdout with a "proc" field, and keeps restart counts in <state-dir>/up.json
 * for `rayop status`. docs/reconciler-host.md.
 */
#ifndef RAYOP_UP_H
#define RAYOP_UP_H

/* Entry point of `rayop up [flags]` (argv[0] = "up"). Returns an exit code. */
int up_main(int argc, char **argv);

#endif

/*
 * dispatch.c - the subcommand dispatch of bin/rayop (cmd/cmd.h), kept apart from
 * main() so that a test build can run the same binary with its own kinds
 * (tests/tools/rayop_test_main.c adds the host self-test kind).
 *
 *   rayop watcher ...      watcher/ (lists+watches, shared cache, work queues)
 *   rayop status ...       cmd/status.c (reads the segment and the queues)
 *   rayop controller KIND  reconcilers/host/ (one reconciler process)
 *   rayop up ...           cmd/up/ (local supervisor)
 *   rayop clean ...        cmd/clean.c
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/up/up.h"
#include "reconcilers/host/host.h"
#include "reconcilers/webhook/webhook.h"
#include "watcher/watcher.h"

static void usage(FILE *f, const struct host_kind *kinds, size_t nkinds)
{
    fputs("usage: rayop COMMAND [flags]\n"
          "  watcher      list/watch the API server, keep the shared cache, serve work queues\n"
          "  controller   run one reconciler: rayop controller ", f);
    for (size_t i = 0; i < nkinds; i++)
        fprintf(f, "%s%s", i ? "|" : "", kinds[i].name);
    fputs("\n"
          "  up           run the watcher and the controllers under a supervisor\n"
          "  webhook      KubeRay's validating admission webhooks over HTTPS (ENABLE_WEBHOOKS=true)\n"
          "  status       show cache and queue state (-o json for scripts)\n"
          "  clean        remove a stopped instance's cache segment and socket\n"
          "Run rayop COMMAND --help for the flags of each command.\n", f);
}

int cmd_rayop_main(int argc, char **argv, const struct host_kind *kinds, size_t nkinds)
{
    if (argc < 2) {
        usage(stderr, kinds, nkinds);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "watcher") == 0)
        return watcher_main(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0)
        return status_main(argc - 1, argv + 1);
    if (strcmp(cmd, "controller") == 0)
        return host_main_controller(argc - 1, argv + 1, kinds, nkinds);
    if (strcmp(cmd, "clean") == 0)
        return clean_main(argc - 1, argv + 1);
    if (strcmp(cmd, "up") == 0)
        return up_main(argc - 1, argv + 1);
    if (strcmp(cmd, "webhook") == 0)
        return webhook_main(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout, kinds, nkinds);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        puts("rayop 0.1.0");
        return 0;
    }
    fprintf(stderr, "rayop: unknown command \"%s\"\n", cmd);
    usage(stderr, kinds, nkinds);
    return 2;
}

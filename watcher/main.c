/* main.c - placeholder until the watcher loop lands (keeps bin/rayop linking). */
#include <stdio.h>

#include "watcher/watcher.h"

int watcher_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("rayop watcher: not built yet\n", stderr);
    return 2;
}

int status_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("rayop status: not built yet\n", stderr);
    return 2;
}

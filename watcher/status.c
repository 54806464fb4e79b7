/* placeholder */
#include "watcher/watcher.h"
#include <stdio.h>
int status_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("rayop status: not built yet\n", stderr);
    return 2;
}

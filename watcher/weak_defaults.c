/*
 * weak_defaults.c - stand-ins for `rayop controller` and `rayop up` until
 * reconcilers/host and reconcilers/up define the real entry points.
 *
 * Why here and not in cmd/: the archive is built in sorted path order and the
 * linker resolves an undefined symbol from the first member that defines it,
 * weak or not. A weak stand-in in cmd/ (sorted before reconcilers/) would win
 * over the real one; placed under watcher/ (sorted after reconcilers/) the real
 * definition is found first and this member is only pulled in when it is absent.
 */
#include <stdio.h>

int host_main_controller(int argc, char **argv);
int up_main(int argc, char **argv);

__attribute__((weak)) int host_main_controller(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("rayop controller: not built yet\n", stderr);
    return 2;
}

__attribute__((weak)) int up_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("rayop up: not built yet\n", stderr);
    return 2;
}

/*
 * rayop_main.c - bin/rayop: one binary, one process per subcommand (cmd/dispatch.c),
 * with the production kinds of reconcilers/kinds.c. Only wiring lives here.
 */
#include "cmd/cmd.h"
#include "reconcilers/kinds.h"

int main(int argc, char **argv)
{
    return cmd_rayop_main(argc, argv, reconcilers_kinds, reconcilers_nkinds);
}

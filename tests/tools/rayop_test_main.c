/*
 * rayop_test_main.c - bin/rayop_test: bin/rayop for tests. The same dispatch and the
 * same production kinds, plus the host self-test kind (tests/tools/test_kind.h) that
 * tests/integration/host.sh, leader.sh and bench/core.sh run as
 * `rayop_test controller test`. Never shipped: the image carries bin/rayop only.
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "reconcilers/kinds.h"
#include "tests/tools/test_kind.h"

#define KINDS_MAX 16

int main(int argc, char **argv)
{
    struct host_kind kinds[KINDS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < reconcilers_nkinds && n + 1 < KINDS_MAX; i++)
        kinds[n++] = reconcilers_kinds[i];
    kinds[n++] = host_test_kind;
    return cmd_rayop_main(argc, argv, kinds, n);
}

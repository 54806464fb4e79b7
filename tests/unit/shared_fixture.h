/*
 * shared_fixture.h - where the unit tests find KubeRay's CRDs and samples (the shared
 * reference folder, never copied into the project): $RAYOP_SHARED, else ../shared, the
 * folder beside the clone (tests/run.sh runs from the clone's root and sets
 * RAYOP_SHARED). There is no machine-specific fallback: a missing folder fails the
 * test and names the variable. Test-only and header-only.
 */
#ifndef RAYOP_TESTS_SHARED_FIXTURE_H
#define RAYOP_TESTS_SHARED_FIXTURE_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* The shared folder (it holds kuberay/crds and kuberay/samples); fails the test when
 * neither candidate has them. */
static __attribute__((unused)) const char *shared_fixture_dir(void)
{
    static char dir[512];
    const char *cands[] = { getenv("RAYOP_SHARED"), "../shared" };

    if (dir[0])
        return dir;
    for (size_t i = 0; i < 2; i++) {
        char p[600];
        DIR *d;
        if (!cands[i] || !cands[i][0])
            continue;
        snprintf(p, sizeof(p), "%s/kuberay/crds", cands[i]);
        if ((d = opendir(p))) {
            closedir(d);
            snprintf(dir, sizeof(dir), "%s", cands[i]);
            return dir;
        }
    }
    fail_msg("KubeRay's CRDs not found in $RAYOP_SHARED or ../shared (set RAYOP_SHARED to "
             "the folder that holds kuberay/crds and kuberay/samples)");
    return NULL;
}

#endif

/*
 * flag.c - one argument of a rayop command line, in the "--name[=value]" form the
 * KubeRay operator's Go flags take. `rayop up` and `rayop controller` both read their
 * flags this way; each keeps its own flag list and what a value means.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

int util_flag_split(const char *cmd, const char *arg, char *name, size_t cap, const char **value)
{
    const char *eq;
    size_t nl;

    *value = NULL;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
        return 1;
    if (strncmp(arg, "--", 2) != 0) {
        fprintf(stderr, "%s: unexpected argument \"%s\"\n", cmd, arg);
        return -EINVAL;
    }
    eq = strchr(arg + 2, '=');
    nl = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    if (nl >= cap) {   /* no flag has a name that long */
        fprintf(stderr, "%s: unknown flag \"%s\"\n", cmd, arg);
        return -EINVAL;
    }
    memcpy(name, arg + 2, nl);
    name[nl] = '\0';
    *value = eq ? eq + 1 : NULL;
    return 0;
}

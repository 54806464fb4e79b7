/*
 * cache_dump_main.c - bin/cache_dump: prints "namespace/name resourceVersion"
 * for every object of one type in a watcher's segment (read-only), sorted by
 * the caller if needed. Tests compare it with the server's LIST to prove the
 * cache converged.
 *
 *   cache_dump --state-dir DIR --type v1/pods
 *   cache_dump --state-dir DIR --unlink      removes the segment (test cleanup)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cache/cache.h"

static int visit(const struct cache_obj *o, void *arg)
{
    (void)arg;
    printf("%s/%s %s\n", o->ns, o->name, o->rv);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *type = NULL;
    int unlink_it = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--unlink") == 0) unlink_it = 1;
        else if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc) dir = argv[++i];
        else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) type = argv[++i];
    }
    if (!dir || (!type && !unlink_it)) {
        fprintf(stderr, "usage: cache_dump --state-dir DIR (--type TYPE | --unlink)\n");
        return 2;
    }
    char name[CACHE_SEGNAME_MAX];
    struct cache *c;
    int rc = cache_segment_name(dir, name, sizeof(name));
    if (rc == 0 && unlink_it)
        return cache_unlink(name) == 0 ? 0 : 1;
    if (rc == 0)
        rc = cache_reader_open(name, &c);
    if (rc < 0) {
        fprintf(stderr, "cache_dump: %s\n", strerror(-rc));
        return 1;
    }
    int id = cache_type_lookup(c, type);
    rc = id < 0 ? id : cache_foreach(c, id, NULL, visit, NULL);
    cache_close(c);
    if (rc < 0) {
        fprintf(stderr, "cache_dump: %s: %s\n", type, strerror(-rc));
        return 1;
    }
    return 0;
}

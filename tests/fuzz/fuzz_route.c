/* fuzz_route.c - libFuzzer target for kubesim's request parsing (kubesim/api/route.h).
 * The input is split on NUL bytes into: path, raw query string, Accept header,
 * Content-Type, User-Agent and method; every parser must return without a
 * crash, leak or out-of-bounds access, and its outputs must stay within bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/api/route.h"

static const char *next_part(const char **p, const char *end, char *scratch, size_t cap)
{
    const char *nul = memchr(*p, '\0', (size_t)(end - *p));
    size_t n = nul ? (size_t)(nul - *p) : (size_t)(end - *p);

    if (n >= cap)
        n = cap - 1;
    memcpy(scratch, *p, n);
    scratch[n] = '\0';
    *p = nul ? nul + 1 : end;
    return scratch;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[ROUTE_MAX_PATH + 64], query[65536], accept[4096], ctype[1024],
        ua[1024], method[16];
    const char *p = (const char *)data, *end = p + size;
    struct route r;
    struct route_query q;
    struct route_accept a;
    char mgr[129];
    const char *verb;

    next_part(&p, end, path, sizeof(path));
    next_part(&p, end, query, sizeof(query));
    next_part(&p, end, accept, sizeof(accept));
    next_part(&p, end, ctype, sizeof(ctype));
    next_part(&p, end, ua, sizeof(ua));
    next_part(&p, end, method, sizeof(method));

    route_parse_path(path, &r);
    if (r.kind == ROUTE_RESOURCE) {
        if (strlen(r.plural) == 0 || strlen(r.plural) >= ROUTE_MAX_SEG ||
            strlen(r.name) >= ROUTE_MAX_SEG || strlen(r.ns) >= ROUTE_MAX_SEG)
            abort();
        if (r.rest < path || r.rest > path + strlen(path)) {
            if (r.rest[0] != '\0')
                abort();
        }
    }
    route_query_init(&q);
    if (route_query_parse(&q, query, strlen(query)) == 0 && q.limit < 0)
        abort();
    verb = route_verb(method, &r, q.watch);
    if (verb && r.kind != ROUTE_RESOURCE)
        abort();
    route_query_free(&q);
    route_parse_accept(accept, &a);
    (void)route_patch_type(ctype);
    route_default_manager(ua, mgr);
    if (strlen(mgr) > 128)
        abort();
    return 0;
}

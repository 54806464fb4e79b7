/* fuzz_ray_dashboard.c - libFuzzer target for the simulated Ray dashboard's request
 * handlers (kubesim/ray/dashboard.c, kubesim/ray/serve.c, and Serve's HTTP proxy paths): Jobs and
 * Serve REST bodies come from
 * any client through the service proxy. The input is split on NUL bytes into method,
 * path, body and a time offset; each request runs against one long-lived cluster (so
 * jobs and applications accumulate and later requests see them) and must answer with a
 * status code and a body, without a crash, leak or out-of-bounds access. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/ray/internal.h"

static const char *part(const char **p, const char *end, char *out, size_t cap)
{
    const char *nul = memchr(*p, '\0', (size_t)(end - *p));
    size_t n = nul ? (size_t)(nul - *p) : (size_t)(end - *p);

    if (n >= cap)
        n = cap - 1;
    memcpy(out, *p, n);
    out[n] = '\0';
    *p = nul ? nul + 1 : end;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ray_cluster *c;
    static char method[16], path[1024], when[32];
    static char body[1 << 16];
    const char *p = (const char *)data, *end = p + size;
    struct ray_resp r;
    uint64_t t = 1700000000000ull;

    if (!c)
        c = ray_cluster_new("ns", "rc", "10.0.0.1");
    part(&p, end, method, sizeof(method));
    part(&p, end, path, sizeof(path));
    part(&p, end, body, sizeof(body));
    part(&p, end, when, sizeof(when));
    t += (uint64_t)strtoul(when, NULL, 10) % 100000000u;
    if (ray_dashboard_serve(c, t, method, path, body, strlen(body), &r) == 0) {
        if (r.code < 200 || r.code > 599 || !r.body || strlen(r.body) != r.len)
            abort();
    }
    free(r.body);
    if (ray__serve_http(c, t, method, path, &r) == 0 && (!r.body || strlen(r.body) != r.len))
        abort();
    free(r.body);
    /* keep the cluster bounded across runs */
    if (HASH_COUNT(c->jobs) > 200 || HASH_COUNT(c->apps) > 100) {
        ray_cluster_free(c);
        c = NULL;
    }
    return 0;
}

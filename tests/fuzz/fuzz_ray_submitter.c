/* fuzz_ray_submitter.c - libFuzzer target for the Ray submitter command parser
 * (kubesim/ray/submitter.c), which reads any Pod's container command, args and env.
 * The input is used twice: as a bash script text (with a small env), and, when it
 * parses as JSON, as a container object {command, args, env}. Every input must give a
 * script tree or an error, without a crash, leak or out-of-bounds access. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/ray/internal.h"

static size_t count(const struct ray_node *n)
{
    size_t k = 0;

    for (; n; n = n->next) {
        k += 1 + count(n->cond) + count(n->body) + count(n->els);
        for (size_t i = 0; i < n->argc; i++)
            k += strlen(n->argv[i]) > 0;
    }
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *env;
    struct ray_node *n = NULL;
    struct ray_script *s = NULL;
    char err[256];
    cJSON *ct;

    if (!env)
        env = cJSON_Parse("[{\"name\":\"RAY_DASHBOARD_ADDRESS\",\"value\":\"svc:8265\"},"
                          "{\"name\":\"X\"},{\"value\":\"y\"}]");
    if (ray__script_parse_text((const char *)data, size, env, &n, err, sizeof(err)) == 0)
        (void)count(n);
    ray__script_free_nodes(n);
    ct = cJSON_ParseWithLength((const char *)data, size);
    if (ct) {
        if (ray__script_from_container(ct, &s, err, sizeof(err)) == 0)
            (void)count(s->list);
        ray__script_free(s);
        cJSON_Delete(ct);
    }
    return 0;
}

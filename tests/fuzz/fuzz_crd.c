/* fuzz_crd.c - CRD objects from arbitrary bytes through the registry and everything
 * rendered from it: validation must give causes or accept, an accepted CRD must
 * register, get a status, and render in discovery, OpenAPI and a Table (its printer
 * columns' JSONPaths evaluated against the fuzzed object itself). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/present/present.h"
#include "kubesim/registry/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(const struct registry *r, const cJSON *obj)
{
    struct buf b = { 0 };

    (void)present_api_groups(r, &b);
    buf_reset(&b);
    (void)present_aggregated(r, false, false, &b);
    buf_reset(&b);
    (void)present_openapi_v2(r, &b);
    buf_reset(&b);
    (void)present_openapi_v3_root(r, &b);
    for (size_t i = 0; i < registry_count(r); i++) {
        const struct reg_resource *res = registry_at(r, i);
        const cJSON *items[1] = { obj };
        char path[600];
        if (res->builtin)
            continue;
        buf_reset(&b);
        (void)present_resource_list(r, res->group, res->version, &b);
        snprintf(path, sizeof(path), "apis/%s/%s", res->group, res->version);
        buf_reset(&b);
        (void)present_openapi_v3_path(r, path, &b);
        buf_reset(&b);
        (void)present_table(res, items, 1, "1", NULL, true, 1800000000, &b);
    }
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct registry *r = NULL;
    cJSON *crd, *causes, *copy;
    char err[256];

    crd = cJSON_ParseWithLength((const char *)data, size);
    if (!crd)
        return 0;
    causes = cJSON_CreateArray();
    if (registry_validate_crd(crd, causes) == 0 && registry_new(&r) == 0) {
        if (registry_add_crd(r, crd, err, sizeof(err)) == 0) {
            render(r, crd);
            /* re-adding replaces; removing leaves only the built-ins */
            (void)registry_add_crd(r, crd, err, sizeof(err));
            const cJSON *name = cJSON_GetObjectItem(cJSON_GetObjectItem(crd, "metadata"), "name");
            if (cJSON_IsString(name))
                registry_remove_crd(r, name->valuestring);
        }
        copy = cJSON_Duplicate(crd, 1);
        if (copy && registry_crd_set_status(copy) == 0) {
            cJSON *c2 = cJSON_CreateArray();
            /* the fuzzed object as an update of itself once Established, and back */
            (void)registry_validate_crd_update(copy, crd, c2);
            (void)registry_validate_crd_update(crd, copy, c2);
            cJSON_Delete(c2);
        }
        cJSON_Delete(copy);
        registry_free(r);
    } else {
        (void)registry_validate_crd_update(crd, crd, causes);
        /* rejected: add_crd must refuse it too */
        if (registry_new(&r) == 0) {
            if (registry_add_crd(r, crd, err, sizeof(err)) == 0)
                abort();
            registry_free(r);
        }
    }
    cJSON_Delete(causes);
    cJSON_Delete(crd);
    return 0;
}

/* fuzz_rayservice_serve.c - the RayService Serve parsers on arbitrary bytes: the
 * dashboard's GET /api/serve/applications/ answer (rs_serve_parse) gives a result or an
 * error, never a crash (and rs_serve_runs_config a yes or a no), and a result is an object whose "ready" means every application
 * RUNNING; the same bytes as serveConfigV2 (rs_serve_config_json: YAML -> Go-style JSON)
 * give JSON that cJSON reads back, or an error; and as a rayClusterConfig they hash
 * (gotypes.c) without reading out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/rayservice/rayservice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *b = (const char *)data;
    cJSON *apps = NULL;
    bool ready = false;
    if (rs_serve_parse(b, size, &apps, &ready) == 0) {
        if (!cJSON_IsObject(apps))
            abort();
        const cJSON *a;
        cJSON_ArrayForEach(a, apps)
            if (ready && strcmp(rs_str(a, "status"), "RUNNING") != 0)
                abort();
        cJSON_Delete(apps);
    } else if (apps) {
        abort();
    }
    /* the same bytes as a GET answer checked against a config (a fixed one, and below the
     * bytes' own config): a yes or a no, never a crash */
    (void)rs_serve_runs_config(b, size, "{\"applications\":[{\"import_path\":\"m.app\","
                                        "\"name\":\"app\"}],\"target_capacity\":50}");
    /* the YAML parser wants a NUL-terminated copy */
    char *y = malloc(size + 1);
    if (!y)
        return 0;
    memcpy(y, data, size);
    y[size] = '\0';
    char *json = NULL, err[256];
    if (rs_serve_config_json(y, strlen(y), size & 1 ? 50 : -1, &json, err, sizeof(err)) == 0) {
        cJSON *back = cJSON_Parse(json);
        if (!cJSON_IsObject(back))
            abort();
        (void)rs_serve_runs_config(b, size, json);
        cJSON_Delete(back);
        free(json);
    } else if (json) {
        abort();
    }
    cJSON *spec = cJSON_ParseWithLength(b, size);
    if (spec) {
        char h[33];
        if (rs_cluster_hash(spec, size & 2 ? 1 : -1, h) == 0 && strlen(h) != 32)
            abort();
        cJSON_Delete(spec);
    }
    free(y);
    return 0;
}

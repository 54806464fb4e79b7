/* fuzz_schema.c - schema_apply of fuzzed JSON against a small compiled schema that uses
 * every feature (types, formats, enums, patterns, list types, defaults, pruning, CEL);
 * the same bytes are also tried as a schema, to fuzz schema_compile. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/schema/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *schema_json =
    "{\"type\":\"object\",\"properties\":{\"apiVersion\":{\"type\":\"string\"},"
    "\"kind\":{\"type\":\"string\"},\"metadata\":{\"type\":\"object\"},"
    "\"spec\":{\"type\":\"object\",\"required\":[\"name\"],"
    "\"x-kubernetes-validations\":[{\"rule\":\"!(has(self.a) && has(self.b))\",\"message\":\"m\"},"
    "{\"rule\":\"self.mode == oldSelf.mode\",\"message\":\"immutable\"}],"
    "\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8,\"pattern\":\"^[a-z]+$\"},"
    "\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},"
    "\"n\":{\"type\":\"integer\",\"format\":\"int32\",\"minimum\":0,\"default\":1},"
    "\"mode\":{\"type\":\"string\",\"enum\":[\"x\",\"y\"],"
    "\"x-kubernetes-validations\":[{\"rule\":\"self in ['x','y']\"}]},"
    "\"t\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"q\":{\"x-kubernetes-int-or-string\":true},"
    "\"set\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\",\"items\":{\"type\":\"string\"}},"
    "\"map\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"k\"],"
    "\"items\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"},"
    "\"v\":{\"type\":\"number\",\"nullable\":true}}}},"
    "\"m\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}},"
    "\"free\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
    "\"emb\":{\"type\":\"object\",\"x-kubernetes-embedded-resource\":true,"
    "\"properties\":{\"spec\":{\"type\":\"object\"}}}}}}}";

static struct schema *compiled;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    if (!compiled) {
        cJSON *j = cJSON_Parse(schema_json);
        if (!j || schema_compile(j, &compiled, err, sizeof(err)))
            abort();
        cJSON_Delete(j);
    }
    cJSON *obj = cJSON_ParseWithLength((const char *)data, size);
    if (!obj)
        return 0;
    cJSON *old = cJSON_Duplicate(obj, true);
    cJSON *causes = cJSON_CreateArray(), *unknown = cJSON_CreateArray();
    int rc = schema_apply(compiled, obj, old, causes, unknown);
    if (rc == 0 && cJSON_GetArraySize(causes) != 0)
        abort();
    cJSON_Delete(causes);
    cJSON_Delete(unknown);
    struct schema *s = NULL;
    if (schema_compile(old, &s, err, sizeof(err)) == 0) {
        cJSON *c2 = cJSON_CreateArray();
        (void)schema_apply(s, obj, NULL, c2, NULL);
        (void)schema_list_map_keys(s, "spec.map");
        cJSON_Delete(c2);
        schema_free(s);
    }
    cJSON_Delete(old);
    cJSON_Delete(obj);
    return 0;
}

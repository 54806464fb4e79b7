/* fuzz_yamljson.c - YAML to JSON on arbitrary bytes: a result or an error, never a crash,
 * and every result prints as JSON. */
#include <stdint.h>
#include <stdlib.h>

#include "kobj/yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    cJSON *docs = NULL, *one = NULL;
    if (yamljson_parse_all((const char *)data, size, &docs, err, sizeof(err)) == 0) {
        char *s = cJSON_PrintUnformatted(docs);
        if (!s)
            abort();
        free(s);
        cJSON_Delete(docs);
    } else if (docs) {
        abort();
    }
    if (yamljson_parse_one((const char *)data, size, &one, err, sizeof(err)) == 0)
        cJSON_Delete(one);
    return 0;
}

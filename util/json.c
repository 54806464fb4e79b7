/*
 * json.c - dotted-path lookups in cJSON trees (util/json.h). Every module that
 * reads objects by path (kubesim's printers and scale subresource, the
 * controllers' spec readers) walks them here.
 */
#include <string.h>

#include "util/json.h"

const cJSON *json_get(const cJSON *obj, const char *dotted)
{
    char key[256];

    if (!dotted)
        return NULL;
    if (*dotted == '.')
        dotted++;
    while (obj && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, dotted, n);
        key[n] = '\0';
        obj = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
        dotted += n + (dot ? 1 : 0);
    }
    return obj;
}

const char *json_get_str(const cJSON *obj, const char *dotted)
{
    const cJSON *v = json_get(obj, dotted);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

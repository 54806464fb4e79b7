/*
 * json.c - dotted-path lookups in cJSON trees (util/json.h). Every module that
 * reads objects by path (kubesim's printers and scale subresource, the
 * controllers' spec readers) walks them here.
 */
#include <string.h>

#include "util/json.h"

int json_path_next(const char **path, char *seg, size_t cap)
{
    const char *p = *path, *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= cap)
        return -1;
    memcpy(seg, p, n);
    seg[n] = '\0';
    *path = p + n + (dot ? 1 : 0);
    return 0;
}

const cJSON *json_get(const cJSON *obj, const char *dotted)
{
    char key[256];

    if (!dotted)
        return NULL;
    if (*dotted == '.')
        dotted++;
    while (obj && *dotted) {
        if (json_path_next(&dotted, key, sizeof(key)) < 0)
            return NULL;
        obj = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    }
    return obj;
}

const char *json_get_str(const cJSON *obj, const char *dotted)
{
    const cJSON *v = json_get(obj, dotted);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

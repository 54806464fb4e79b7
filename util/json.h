/*
 * json.h - small cJSON helpers shared by kubesim and the controllers.
 */
#ifndef RAYOP_UTIL_JSON_H
#define RAYOP_UTIL_JSON_H

#include <cjson/cJSON.h>

/* Follows a dotted path of object members ("spec.template.metadata") from obj;
 * NULL when a step is missing, is not an object, or a member name is over 255
 * bytes. A leading '.' is ignored (".spec.replicas", as scale paths are written).
 * The result points into obj. */
const cJSON *json_get(const cJSON *obj, const char *dotted);
/* The string at the path, or NULL when absent or not a string. */
const char *json_get_str(const cJSON *obj, const char *dotted);

#endif

/*
 * json.h - small cJSON helpers shared by kubesim and the controllers.
 */
#ifndef RAYOP_UTIL_JSON_H
#define RAYOP_UTIL_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Follows a dotted path of object members ("spec.template.metadata") from obj;
 * NULL when a step is missing, is not an object, or a member name is over 255
 * bytes. A leading '.' is ignored (".spec.replicas", as scale paths are written).
 * The result points into obj. */
const cJSON *json_get(const cJSON *obj, const char *dotted);
/* The string at the path, or NULL when absent or not a string. */
const char *json_get_str(const cJSON *obj, const char *dotted);
/* The next member name of a dotted path: copied into seg (cap bytes, NUL-terminated),
 * and *path moved past it and its dot. 0, or -1 when the name does not fit (nothing
 * moves). For walks of other trees along the same paths (kubesim's schemas). */
int json_path_next(const char **path, char *seg, size_t cap);

#endif

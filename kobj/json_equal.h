/*
 * json_equal.h - deep equality of cJSON values for the patch and schema code.
 *
 * cJSON_Compare walks each object's members from both sides and recurses on both,
 * which doubles the work at every level: exponential on deep documents such as a
 * CRD (2^40 on KubeRay's). This version visits each pair once.
 */
#ifndef RAYOP_SIM_JSON_EQUAL_H
#define RAYOP_SIM_JSON_EQUAL_H

#include <stdbool.h>
#include <cjson/cJSON.h>

/* Structural equality: member order ignored, numbers compared by value, NULL equals
 * only NULL. Objects with repeated keys compare by their first occurrence. */
bool json_equal(const cJSON *a, const cJSON *b);

#endif

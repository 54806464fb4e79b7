/*
 * yamljson.h - YAML to cJSON, the way sigs.k8s.io/yaml reads manifests: plain scalars
 * typed YAML-1.1 style (true/false/yes/no/on/off, null/~, ints incl. 0x/0o/0 octal,
 * floats), quoted scalars stay strings, anchors/aliases expanded, non-string keys turned
 * into strings. Used for application/apply-patch+yaml bodies and to load CRDs/samples.
 *
 * Bounded: YAMLJSON_MAX_INPUT bytes, YAMLJSON_MAX_DEPTH nesting, YAMLJSON_MAX_NODES
 * nodes per call (aliases count every copy, so "billion laughs" input is refused).
 */
#ifndef RAYOP_SIM_YAMLJSON_H
#define RAYOP_SIM_YAMLJSON_H

#include <stddef.h>
#include <cjson/cJSON.h>

#define YAMLJSON_MAX_INPUT (32u << 20)
#define YAMLJSON_MAX_DEPTH 200
#define YAMLJSON_MAX_NODES 4000000

/* Parses every document of buf into a new JSON array (*out, caller owns; empty
 * documents are skipped). 0, -EINVAL with err set ("yaml: line 3: ..."), -ENOMEM,
 * -E2BIG when a bound is hit. */
int yamljson_parse_all(const char *buf, size_t len, cJSON **out, char *err, size_t errlen);

/* Parses exactly one document (an apply body). -EINVAL when there are several or none. */
int yamljson_parse_one(const char *buf, size_t len, cJSON **out, char *err, size_t errlen);

#endif

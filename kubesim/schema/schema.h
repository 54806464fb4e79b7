/*
 * schema.h - validation, pruning and defaulting of custom resources against a CRD
 * version's openAPIV3Schema, as apiextensions-apiserver does it:
 *
 *   - type, format (int32/int64/date-time...), nullable, enum, required, minimum/maximum
 *     (exclusive too), minLength/maxLength, pattern, minItems/maxItems, uniqueItems,
 *     minProperties/maxProperties, additionalProperties, items, properties
 *   - x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields,
 *     x-kubernetes-embedded-resource, x-kubernetes-list-type/-map-keys (uniqueness)
 *   - x-kubernetes-validations: the CEL subset KubeRay's CRDs use (has(), !, &&, ||,
 *     ==, !=, `in [..]`, self/oldSelf transition rules); other rules are skipped and
 *     counted, never guessed at
 *   - pruning of unknown fields (collected so the caller can honour fieldValidation=Strict)
 *   - `default` values applied
 *
 * The compiled schema is immutable and may be shared between threads.
 */
#ifndef RAYOP_SIM_SCHEMA_H
#define RAYOP_SIM_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

struct schema;

/* Compiles an openAPIV3Schema object. 0 and *out (caller frees with schema_free) or
 * -EINVAL with err set (an unsupported or malformed schema). */
int schema_compile(const cJSON *openapi_v3_schema, struct schema **out, char *err, size_t errlen);
void schema_free(struct schema *s);

/*
 * Defaults, prunes and validates obj in place (the whole custom resource; apiVersion,
 * kind and metadata at the root are handled as the server does). old is the stored
 * object on update (for transition rules), NULL on create.
 * causes: if non-NULL, an array that receives one {"reason","message","field"} object
 *   per violation, in the shape of metav1.StatusCause ("FieldValueRequired",
 *   "FieldValueInvalid", "FieldValueNotSupported", "FieldValueTypeMismatch"...;
 *   field like "spec.workerGroupSpecs[0].replicas").
 * unknown: if non-NULL, an array that receives the path string of every pruned field
 *   (".spec.foo" form, as strict field validation reports them).
 * Returns 0 when valid, -EINVAL when any cause was added, -ENOMEM.
 */
int schema_apply(const struct schema *s, cJSON *obj, const cJSON *old, cJSON *causes,
                 cJSON *unknown);

/* List-map keys of the list at a dotted path ("spec.workerGroupSpecs"), for server-side
 * apply of custom resources. Returns a borrowed NULL-terminated array or NULL. */
const char *const *schema_list_map_keys(const struct schema *s, const char *path);


/* ---- names, labels, annotations (names.c) ---------------------------------------- */

#define SCHEMA_ANNOTATIONS_MAX 262144   /* bytes of keys + values, as the API server */
enum name_rule { NAME_SUBDOMAIN, NAME_LABEL_1123, NAME_LABEL_1035 };
/* Appends causes (status_cause_add) for an invalid name; returns true when valid. */
bool schema_check_name(const char *name, enum name_rule r, const char *field, cJSON *causes);
/* Label / annotation syntax (and the annotation budget) with causes at field:
 * "metadata.labels" for objects, "spec.template.labels" for pod templates. */
void schema_check_labels(const cJSON *labels, const char *field, cJSON *causes);
void schema_check_annotations(const cJSON *ann, const char *field, cJSON *causes);

#endif

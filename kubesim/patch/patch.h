/*
 * patch.h - the four PATCH flavours of the API server, plus managedFields.
 *
 *   application/merge-patch+json          patch_merge      (RFC 7386)
 *   application/json-patch+json           patch_json       (RFC 6902, with the server's limits)
 *   application/strategic-merge-patch+json patch_strategic (built-in types only; directives
 *                                          $patch, $setElementOrder/, $retainKeys,
 *                                          $deleteFromPrimitiveList/; merge keys from a table)
 *   application/apply-patch+yaml          patch_apply      (server-side apply, enough for
 *                                          `kubectl apply --server-side`)
 *
 * All functions are pure: they never modify their inputs and return a new tree the
 * caller owns (cJSON_Delete). On failure they return a negative errno (-EINVAL for a
 * malformed patch, -ENOMEM, -EEXIST for an apply conflict) and write a message for the
 * Status object into err.
 */
#ifndef RAYOP_SIM_PATCH_H
#define RAYOP_SIM_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#define PATCH_MAX_OPS 10000   /* JSON patch operations per request, as the server caps them */

int patch_merge(const cJSON *target, const cJSON *patch, cJSON **out, char *err, size_t errlen);
int patch_json(const cJSON *target, const cJSON *ops, cJSON **out, char *err, size_t errlen);
/* smp_kind names the built-in type's strategic-merge table, e.g. "Pod", "Service", "Job",
 * "ConfigMap" (see patch_smp_kind_known); -EPROTONOSUPPORT if unknown (the server then
 * answers 415 as it does for custom resources). */
int patch_strategic(const cJSON *target, const cJSON *patch, const char *smp_kind,
                    cJSON **out, char *err, size_t errlen);
bool patch_smp_kind_known(const char *smp_kind);

/* Server-side apply of `applied` (the whole intended object) by `manager` onto live
 * (NULL when the object does not exist yet). Fields this manager applied before and
 * no longer applies are removed; lists with merge keys (built-in table, or
 * x-kubernetes-list-map-keys when list_keys_from_schema supplies them) merge by key.
 * Conflicts with fields owned by other managers are -EEXIST unless force.
 * The result carries an updated metadata.managedFields. smp_kind is NULL for CRs. */
int patch_apply(const cJSON *live, const cJSON *applied, const char *manager, bool force,
                const char *api_version, const char *smp_kind,
                cJSON **out, char *err, size_t errlen);

/* patch_apply for custom resources: list-map keys come from the CRD's compiled schema
 * (schema_list_map_keys); schema may be NULL (every list is then atomic). */
struct schema;
int patch_apply_schema(const cJSON *live, const cJSON *applied, const char *manager,
                       bool force, const char *api_version, const char *smp_kind,
                       const struct schema *schema, cJSON **out, char *err, size_t errlen);

/* managedFields bookkeeping for ordinary writes (create/update/patch): sets or
 * replaces the entry of (manager, operation) in obj->metadata.managedFields with the
 * fieldsV1 set of `obj` (operation "Update"; subresource "status" when given).
 * Modifies obj in place. 0 or -ENOMEM. */
int patch_record_managed_fields(cJSON *obj, const cJSON *old, const char *manager,
                                const char *operation, const char *api_version,
                                const char *subresource);
/* The same, but every fieldsV1 is one cJSON_Raw node holding its compact JSON (the
 * form store snapshots keep; see store.c), written without building a tree. */
int patch_record_managed_fields_raw(cJSON *obj, const cJSON *old, const char *manager,
                                    const char *operation, const char *api_version,
                                    const char *subresource);

#endif

/*
 * kobj.h - reading Kubernetes objects held as cJSON trees: the one place for member
 * and dotted-path lookups, metadata, labels and annotations, the controller
 * ownerReference, resourceVersion order and base64. Linked by both sides of the wall
 * (the operator and kubesim) through libcommon.a; nothing here allocates except
 * kobj_base64_decode, kobj_members_sorted, kobj_set_copy, kobj_controller_refs and
 * kobj_finalizers_patch, and every lookup is
 * NULL-safe and borrows from the object.
 *
 * Siblings in kobj/: json_equal.h (deep equality), quantity.h (resource.Quantity),
 * yamljson.h (YAML to JSON), json_text.h (cJSON-identical string text). Dotted paths
 * are util/json.h's json_get / json_get_str.
 */
#ifndef RAYOP_KOBJ_KOBJ_H
#define RAYOP_KOBJ_KOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "util/json.h"

/* Member key of o; NULL when o is not an object or has no such member. */
const cJSON *kobj_get(const cJSON *o, const char *key);
/* The string member key of o, or NULL when absent or not a string. */
const char *kobj_str(const cJSON *o, const char *key);

/* The first element of array arr whose string member key equals value, or NULL:
 * the volumeMount with a name, the env var with a name, the container at a path. */
const cJSON *kobj_find(const cJSON *arr, const char *key, const char *value);
/* The named members of object o in byte order of their names, as Go writes a map.
 * *out is an array the caller frees (NULL when there are none), *n its length; the
 * members are borrowed from o. 0 or -ENOMEM. */
int kobj_members_sorted(const cJSON *o, const cJSON ***out, size_t *n);
/* Replaces member name of o with a deep copy of item, or removes it when item is
 * NULL. 0 or -ENOMEM. */
int kobj_set_copy(cJSON *o, const char *name, const cJSON *item);

/* metadata.<field> of obj as a string ("name", "namespace", "uid", ...), or NULL. */
const char *kobj_meta_str(const cJSON *obj, const char *field);
/* metadata.labels[key] / metadata.annotations[key] when a string, else NULL. */
const char *kobj_label(const cJSON *obj, const char *key);
const char *kobj_annotation(const cJSON *obj, const char *key);

/* The ownerReference of obj marked controller: true (at most one is valid), or NULL. */
const cJSON *kobj_controller_ref(const cJSON *obj);
/* Its uid, or NULL when there is no controller or it has no string uid. */
const char *kobj_controller_uid(const cJSON *obj);

/* status.conditions as meta.SetStatusCondition / FindStatusCondition /
 * RemoveStatusCondition keep them. kobj_condition_set makes the condition of type
 * read st, reason and message (NULL: ""), moving lastTransitionTime to now only
 * when the status changes or the condition is new; it returns the condition (for the
 * caller's observedGeneration), or NULL when out of memory. */
const cJSON *kobj_condition_find(const cJSON *status, const char *type);
cJSON *kobj_condition_set(cJSON *status, const char *type, const char *st, const char *reason,
                          const char *message, const char *now);
void kobj_condition_remove(cJSON *status, const char *type);

/* True when obj's metadata.finalizers holds finalizer. */
bool kobj_has_finalizer(const cJSON *obj, const char *finalizer);
/* The JSON merge patch that adds (add) or removes finalizer on obj, as read: every
 * other finalizer kept, guarded by obj's resourceVersion so that a concurrent change
 * is a 409 and never lost. Text the caller frees, or NULL when out of memory. */
char *kobj_finalizers_patch(const cJSON *obj, const char *finalizer, bool add);

/* The ownerReferences ctrl.SetControllerReference writes on what owner controls:
 * [{apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true}], name
 * and uid from owner's metadata ("" when absent). A new array the caller owns, or
 * NULL when out of memory. */
cJSON *kobj_controller_refs(const char *api_version, const char *kind, const cJSON *owner);

/* Orders two resourceVersions: as numbers when both are decimal digits (leading zeros
 * ignored, any length), else bytewise. <0, 0, >0 as strcmp. The API server only
 * promises that an rv is opaque; every server we talk to (etcd, kubesim) hands out
 * growing integers, and the cache and read-your-writes rely on that order. */
int kobj_rv_cmp(const char *a, const char *b);
/* True when s is a non-empty string of decimal digits. */
bool kobj_rv_numeric(const char *s);

/* True when s is an RFC 1035 label, as apimachinery's IsDNS1035Label accepts it:
 * [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters (Service names, RayJob and
 * RayService names, CRD plural names). */
bool kobj_dns1035_label(const char *s);

/* Standard base64 (RFC 4648 with padding, Go's base64.StdEncoding) of in[0..n) into
 * out, which has room for kobj_base64_len(n) bytes including the NUL. */
#define kobj_base64_len(n) (((n) + 2) / 3 * 4 + 1)
void kobj_base64_encode(const unsigned char *in, size_t n, char *out);
/* Strict base64 (standard alphabet, whitespace ignored) of in[0..len) into a
 * NUL-terminated buffer the caller frees. 0, -EINVAL (bad input) or -ENOMEM. */
int kobj_base64_decode(const char *in, size_t len, char **out, size_t *outlen);

#endif

/*
 * events.c - events.k8s.io/v1 Events and core/v1 Events are one resource, as on
 * a real API server: objects are kept in the core/v1 form (the storage version)
 * and an events.k8s.io/v1 request is converted on the way in and out, field by
 * field as Kubernetes' own conversion does it (regarding <-> involvedObject,
 * note <-> message, reportingController <-> reportingComponent, deprecated*
 * <-> the old timestamps, source and count). So `kubectl describe` (core/v1,
 * involvedObject field selectors) sees what an operator wrote with
 * events.k8s.io/v1, and the other way round: one name, one uid, one
 * resourceVersion, one watch stream.
 */
#include <string.h>

#include "kubesim/schema/selector.h"
#include "kubesim/store/internal.h"

#define jget cJSON_GetObjectItemCaseSensitive

bool store__events_v1(const struct reg_resource *res)
{
    return res && !strcmp(res->group, "events.k8s.io") && !strcmp(res->plural, "events");
}

static void rename_key(cJSON *obj, const char *from, const char *to)
{
    cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(obj, from);
    cJSON_DeleteItemFromObjectCaseSensitive(obj, to);
    if (v)
        cJSON_AddItemToObject(obj, to, v);
}

/* Go's omitempty: an empty string, a zero number or a null is not written */
static void drop_empty(cJSON *obj, const char *key)
{
    cJSON *v = jget(obj, key);
    if (v && (cJSON_IsNull(v) || (cJSON_IsString(v) && !v->valuestring[0]) ||
              (cJSON_IsNumber(v) && v->valuedouble == 0)))
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
}

static void set_api_version(cJSON *obj, const char *av)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "apiVersion");
    cJSON_AddStringToObject(obj, "apiVersion", av);
}

/* a field the Go type writes even when zero (a metav1.Time without omitempty
 * semantics in JSON, a struct) */
static void ensure(cJSON *obj, const char *key, cJSON *zero)
{
    if (jget(obj, key))
        cJSON_Delete(zero);
    else
        cJSON_AddItemToObject(obj, key, zero);
}

/* events.k8s.io/v1 field -> core/v1 field; the rest are named alike */
static const char *const renames[][2] = {
    { "regarding", "involvedObject" },
    { "note", "message" },
    { "reportingController", "reportingComponent" },
    { "deprecatedSource", "source" },
    { "deprecatedFirstTimestamp", "firstTimestamp" },
    { "deprecatedLastTimestamp", "lastTimestamp" },
    { "deprecatedCount", "count" },
};
#define NRENAMES (sizeof(renames) / sizeof(renames[0]))

void store__event_to_core(cJSON *obj)
{
    set_api_version(obj, "v1");
    for (size_t i = 0; i < NRENAMES; i++)
        rename_key(obj, renames[i][0], renames[i][1]);
    ensure(obj, "source", cJSON_CreateObject());
    ensure(obj, "firstTimestamp", cJSON_CreateNull());
    ensure(obj, "lastTimestamp", cJSON_CreateNull());
    ensure(obj, "eventTime", cJSON_CreateNull());
}

void store__event_to_v1(cJSON *obj)
{
    set_api_version(obj, "events.k8s.io/v1");
    for (size_t i = 0; i < NRENAMES; i++)
        rename_key(obj, renames[i][1], renames[i][0]);
    static const char *const omitempty[] = { "reportingController", "reportingInstance",
        "action", "reason", "note", "type", "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp", "deprecatedCount", NULL };
    for (int i = 0; omitempty[i]; i++)
        drop_empty(obj, omitempty[i]);
    cJSON *src = jget(obj, "deprecatedSource");
    if (cJSON_IsObject(src) && !src->child)
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "deprecatedSource");
    ensure(obj, "eventTime", cJSON_CreateNull());
}

bool store__fields_match(const struct reg_resource *want, const struct fsel *f,
                         const cJSON *stored)
{
    if (!f)
        return true;
    if (!store__events_v1(want))
        return fsel_matches(f, stored);
    cJSON *v1 = cJSON_Duplicate(stored, 1);
    if (!v1)
        return false;
    store__event_to_v1(v1);
    bool ok = fsel_matches(f, v1);
    cJSON_Delete(v1);
    return ok;
}

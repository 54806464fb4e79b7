/*
 * status.c - RayService status helpers: field access, metav1.Condition handling as
 * apimachinery's meta.SetStatusCondition does it, and KubeRay's "did the status
 * change" test (utils/consistency.go InconsistentRayServiceStatuses), which decides
 * whether a reconcile writes the status at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kobj/kobj.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/json.h"

const char *rs_str(const cJSON *obj, const char *path)
{
    if (!*path)   /* the value itself */
        return cJSON_IsString(obj) ? obj->valuestring : "";
    const char *s = json_get_str(obj, path);
    return s ? s : "";
}

int rs_int(const cJSON *obj, const char *path, int64_t *out)
{
    const cJSON *v = json_get(obj, path);
    if (!cJSON_IsNumber(v))
        return -ENOENT;
    *out = (int64_t)v->valuedouble;
    return 0;
}

const cJSON *rs_cond(const cJSON *status, const char *type)
{
    return kobj_condition_find(status, type);
}

bool rs_cond_true(const cJSON *status, const char *type)
{
    return !strcmp(rs_str(rs_cond(status, type), "status"), "True");
}

int rs_cond_set(cJSON *status, const char *type, const char *st, const char *reason,
                const char *message, int64_t generation, const char *now)
{
    cJSON *c = kobj_condition_set(status, type, st, reason, message, now);
    if (!c)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(c, "observedGeneration");
    if (generation)
        cJSON_AddNumberToObject(c, "observedGeneration", (double)generation);
    return 0;
}

void rs_cond_remove(cJSON *status, const char *type)
{
    kobj_condition_remove(status, type);
}

static bool same(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsObject(a) && !a->child) a = NULL;
    if (cJSON_IsObject(b) && !b->child) b = NULL;
    if (!a || !b)
        return !a && !b;
    return cJSON_Compare(a, b, 1);
}

static bool service_changed(const cJSON *a, const cJSON *b)
{
    static const char *const keys[] = { "rayClusterName", "applicationStatuses", "targetCapacity",
                                        "trafficRoutedPercent", "lastTrafficMigratedTime" };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!same(cJSON_GetObjectItemCaseSensitive(a, keys[i]),
                  cJSON_GetObjectItemCaseSensitive(b, keys[i])))
            return true;
    return false;
}

bool rs_status_changed(const cJSON *o, const cJSON *n)
{
    static const char *const keys[] = { "serviceStatus", "numServeEndpoints", "conditions",
                                        "observedGeneration" };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(n, keys[i]);
        /* omitempty: 0, "" and [] are absent */
        if ((cJSON_IsNumber(a) && a->valuedouble == 0) || (cJSON_IsString(a) && !*a->valuestring) ||
            (cJSON_IsArray(a) && !a->child))
            a = NULL;
        if ((cJSON_IsNumber(b) && b->valuedouble == 0) || (cJSON_IsString(b) && !*b->valuestring) ||
            (cJSON_IsArray(b) && !b->child))
            b = NULL;
        if (!same(a, b))
            return true;
    }
    return service_changed(cJSON_GetObjectItemCaseSensitive(o, "activeServiceStatus"),
                           cJSON_GetObjectItemCaseSensitive(n, "activeServiceStatus")) ||
           service_changed(cJSON_GetObjectItemCaseSensitive(o, "pendingServiceStatus"),
                           cJSON_GetObjectItemCaseSensitive(n, "pendingServiceStatus"));
}

void rs_format_time(int64_t ms, char out[32])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t rs_parse_time_ms(const char *s)
{
    struct tm tm = { 0 };
    if (!s || !*s)
        return -1;
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    return (int64_t)timegm(&tm) * 1000;
}

/*
 * validate.c - KubeRay's RayService validation (utils/validation.go
 * ValidateRayServiceMetadata, ValidateRayServiceSpec, ValidateClusterUpgradeOptions)
 * with its messages; the rayClusterConfig goes through the RayCluster controller's
 * rc_validate, as KubeRay calls ValidateRayClusterSpec. Also the
 * ray.io/initializing-timeout annotation (Go duration or integer seconds).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/json.h"

/* time.ParseDuration: [-+]?(\d*(\.\d*)?(ns|us|µs|ms|s|m|h))+ ; "0" alone. ns result. */
static int go_duration(const char *s, double *ns)
{
    static const struct { const char *u; double ns; } units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "\xc2\xb5s", 1e3 }, { "\xce\xbcs", 1e3 }, { "ms", 1e6 },
        { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 },
    };
    double total = 0;
    int sign = 1;
    if (*s == '-' || *s == '+')
        sign = *s++ == '-' ? -1 : 1;
    if (!strcmp(s, "0")) {
        *ns = 0;
        return 0;
    }
    if (!*s)
        return -EINVAL;
    while (*s) {
        char *end;
        if (!((*s >= '0' && *s <= '9') || *s == '.'))
            return -EINVAL;
        double v = strtod(s, &end);
        if (end == s || (end - s == 1 && *s == '.'))
            return -EINVAL;
        s = end;
        size_t i, best = 0, bl = 0;
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t l = strlen(units[i].u);
            if (!strncmp(s, units[i].u, l) && l > bl)
                best = i, bl = l;
        }
        if (!bl)
            return -EINVAL;   /* "missing unit in duration" */
        total += v * units[best].ns;
        s += bl;
    }
    *ns = sign * total;
    return 0;
}

int64_t rs_initializing_timeout_ms(const cJSON *rs)
{
    const cJSON *a = json_get(rs, "metadata.annotations");
    double ns;
    a = cJSON_GetObjectItemCaseSensitive(a, RS_ANN_INIT_TIMEOUT);
    if (!cJSON_IsString(a) || !*a->valuestring)
        return 0;
    if (go_duration(a->valuestring, &ns) == 0)
        return ns > 0 ? (int64_t)ceil(ns / 1e6) : -EINVAL;
    char *end;
    long sec = strtol(a->valuestring, &end, 10);
    if (*end || end == a->valuestring)
        return -EINVAL;
    return sec > 0 ? (int64_t)sec * 1000 : -EINVAL;
}

#define FAIL(r, ...) do { \
        snprintf(why->reason, sizeof(why->reason), "%s", r); \
        snprintf(why->message, sizeof(why->message), __VA_ARGS__); \
        return -EINVAL; \
    } while (0)

static int validate_upgrade_options(const cJSON *rs, struct rs_invalid *why)
{
    const char *R = "InvalidRayServiceSpec", *P = "The RayService spec is invalid: ";
    const cJSON *spec = json_get(rs, "spec.rayClusterConfig");
    const cJSON *ea = cJSON_GetObjectItemCaseSensitive(spec, "enableInTreeAutoscaling");
    const cJSON *o = json_get(rs, "spec.upgradeStrategy.clusterUpgradeOptions");
    int64_t surge = 100, step, interval;
    if (!cJSON_IsTrue(ea))
        FAIL(R, "%sRay Autoscaler is required for NewClusterWithIncrementalUpgrade", P);
    if (!cJSON_IsObject(o))
        FAIL(R, "%sClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade", P);
    rs_int(o, "maxSurgePercent", &surge);
    if (surge < 0 || surge > 100)
        FAIL(R, "%smaxSurgePercent must be between 0 and 100", P);
    if (rs_int(o, "stepSizePercent", &step) < 0 || step < 0 || step > 100)
        FAIL(R, "%sstepSizePercent must be between 0 and 100", P);
    if (step > surge)
        FAIL(R, "%sstepSizePercent must be less than or equal to maxSurgePercent", P);
    if (rs_int(o, "intervalSeconds", &interval) < 0 || interval <= 0)
        FAIL(R, "%sintervalSeconds must be greater than 0", P);
    if (!*rs_str(o, "gatewayClassName"))
        FAIL(R, "%sgatewayClassName is required for NewClusterWithIncrementalUpgrade", P);
    return 0;
}

int rs_validate_metadata(const cJSON *rs, struct rs_invalid *why)
{
    const char *name = rs_str(rs, "metadata.name");
    const char *M = "InvalidRayServiceMetadata";
    struct rs_invalid dummy;
    if (!why)
        why = &dummy;
    if (strlen(name) > RS_MAX_NAME)
        FAIL(M, "The RayService metadata is invalid: RayService name should be no more than %d "
                "characters", RS_MAX_NAME);
    if (!kobj_dns1035_label(name))
        FAIL(M, "The RayService metadata is invalid: RayService name should be a valid DNS1035 "
                "label: [a DNS-1035 label must consist of lower case alphanumeric characters or "
                "'-', start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')]");
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(json_get(rs, "metadata.annotations"),
                                                        RS_ANN_INIT_TIMEOUT);
    if (cJSON_IsString(ann) && *ann->valuestring && rs_initializing_timeout_ms(rs) < 0) {
        double ns;
        char *end;
        const char *v = ann->valuestring;
        const char *P = "The RayService metadata is invalid: RayService annotations is invalid: ";
        if (go_duration(v, &ns) == 0)
            FAIL(M, "%sannotation %s must be a positive duration, got: %s", P, RS_ANN_INIT_TIMEOUT, v);
        strtol(v, &end, 10);
        if (!*end && end != v)
            FAIL(M, "%sannotation %s must be a positive integer (seconds), got: %s", P,
                 RS_ANN_INIT_TIMEOUT, v);
        FAIL(M, "%sannotation %s has invalid format: %s. Expected Go duration format (e.g., '5m', "
                "'1h') or positive integer seconds", P, RS_ANN_INIT_TIMEOUT, v);
    }
    return 0;
}

int rs_validate(const cJSON *rs, const struct rs_gates *g, struct rs_invalid *why)
{
    const char *name = rs_str(rs, "metadata.name");
    const char *S = "InvalidRayServiceSpec";
    struct rs_invalid dummy;
    int64_t delay;
    int err;
    if (!why)
        why = &dummy;
    if ((err = rs_validate_metadata(rs, why)) < 0)
        return err;
    const cJSON *spec = json_get(rs, "spec.rayClusterConfig");
    if (cJSON_IsTrue(json_get(spec, "authOptions.enableK8sTokenAuth")))
        FAIL(S, "The RayService spec is invalid: K8s token auth mode is currently not supported "
                "for RayService");
    /* ValidateRayClusterSpec through the RayCluster controller's validation */
    cJSON *rc = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(rc, "metadata");
    struct rc_invalid rcw;
    err = 0;
    if (!md)
        err = -ENOMEM;
    else {
        cJSON_AddStringToObject(md, "name", name);
        cJSON_AddStringToObject(md, "namespace", rs_str(rs, "metadata.namespace"));
        if (json_get(rs, "metadata.annotations"))
            cJSON_AddItemToObject(md, "annotations",
                                  cJSON_Duplicate(json_get(rs, "metadata.annotations"), 1));
        cJSON_AddItemToObject(rc, "spec", spec ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject());
        if (rc_validate(rc, g ? g->cluster : NULL, &rcw) < 0 && strcmp(rcw.reason, RC_REASON_INVALID_SPEC) == 0) {
            /* keep the inner text: "The RayCluster spec is invalid NS/NAME: X" -> X */
            const char *inner = strstr(rcw.message, ": ");
            snprintf(why->reason, sizeof(why->reason), "%s", S);
            snprintf(why->message, sizeof(why->message), "The RayService spec is invalid: %.980s",
                     inner ? inner + 2 : rcw.message);
            err = -EINVAL;
        }
    }
    cJSON_Delete(rc);
    if (err)
        return err;
    const char *hs = rs_str(spec, "headGroupSpec.headService.metadata.name");
    if (*hs)
        FAIL(S, "The RayService spec is invalid: spec.rayClusterConfig.headGroupSpec.headService."
                "metadata.name should not be set");
    const cJSON *t = json_get(rs, "spec.upgradeStrategy.type");
    if (cJSON_IsString(t) && strcmp(t->valuestring, "None") &&
        strcmp(t->valuestring, "NewCluster") && strcmp(t->valuestring, "NewClusterWithIncrementalUpgrade"))
        FAIL(S, "The RayService spec is invalid: Spec.UpgradeStrategy.Type value %s is invalid, "
                "valid options are NewClusterWithIncrementalUpgrade, NewCluster, or None",
             t->valuestring);
    if (rs_int(rs, "spec.rayClusterDeletionDelaySeconds", &delay) == 0 && delay < 0)
        FAIL(S, "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a "
                "non-negative integer, got %lld", (long long)delay);
    if (rs_incremental(rs, g))
        return validate_upgrade_options(rs, why);
    return 0;
}

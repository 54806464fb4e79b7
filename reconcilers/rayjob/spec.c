/*
 * spec.c - small readers of RayJob fields shared by the decision, builder and
 * validation code: dotted-path lookups that never trust a field's type,
 * KubeRay's defaults (submissionMode), the terminal-state predicates, the
 * RFC 3339 times status fields carry, and the operator settings read from the
 * environment as KubeRay reads them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "reconcilers/rayjob/rayjob.h"
#include "util/json.h"
#include "util/util.h"

void rj_config_default(struct rj_config *c)
{
    memset(c, 0, sizeof(*c));
    c->deletion_policy_gate = true;
    c->grace_period_s = 300;
    c->status_check_timeout_s = 300;
}

static int env_positive(const char *name, int dflt, bool allow_zero)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return dflt;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 86400 * 365 || (v == 0 && !allow_zero))
        return dflt;
    return (int)v;
}

void rj_config_from_env(struct rj_config *c)
{
    const char *d = getenv("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES");
    c->delete_cr_after_finish = d && strcasecmp(d, "true") == 0;
    /* KubeRay: strconv.Atoi, any integer accepted for the grace period;
     * the status-check timeout must be > 0 */
    c->grace_period_s = env_positive("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS",
                                     300, true);
    c->status_check_timeout_s = env_positive("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", 300, false);
}


const char *rj_str(const cJSON *obj, const char *path)
{
    const cJSON *v = json_get(obj, path);
    return cJSON_IsString(v) ? v->valuestring : "";
}

bool rj_bool(const cJSON *obj, const char *path)
{
    return cJSON_IsTrue(json_get(obj, path));
}

int rj_int(const cJSON *obj, const char *path, int64_t *out)
{
    const cJSON *v = json_get(obj, path);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 9e15)
        return -ENOENT;
    *out = (int64_t)v->valuedouble;
    return 0;
}

const char *rj_mode(const cJSON *rayjob)
{
    const char *m = rj_str(rayjob, "spec.submissionMode");
    return *m ? m : "K8sJobMode";   /* the CRD's default */
}

bool rj_has_selector(const cJSON *rayjob)
{
    const cJSON *sel = json_get(rayjob, "spec.clusterSelector");
    return cJSON_IsObject(sel) && sel->child != NULL;
}

bool rj_job_terminal(const char *s)
{
    return dash_job_status_terminal(s);
}

bool rj_deploy_terminal(const char *s)
{
    return s && (strcmp(s, "Complete") == 0 || strcmp(s, "Failed") == 0);
}

void rj_format_time(int64_t ms, char out[32])
{
    util_format_time((time_t)(ms / 1000), out);
}

int64_t rj_parse_time_ms(const char *s)
{
    time_t t;
    if (!s || !*s || util_parse_time(s, &t) < 0)
        return -1;
    return (int64_t)t * 1000;
}

/*
 * validate.c - KubeRay's RayJob validation (utils/validation.go:
 * ValidateRayJobMetadata, ValidateRayJobSpec with validateDeletionConfiguration,
 * ValidateRayJobStatus), with its messages. A RayJob that fails it ends in
 * ValidationFailed with a Warning Event (decide.c); nothing is created for it.
 * The embedded rayClusterSpec goes through the RayCluster validation
 * (rc_validate, reconcilers/raycluster/build.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayjob/rayjob.h"
#include "util/util.h"

static int fail(struct rj_invalid *why, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct rj_invalid *why, const char *reason, const char *fmt, ...)
{
    va_list ap;
    snprintf(why->reason, sizeof(why->reason), "%s", reason);
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof(why->message), fmt, ap);
    va_end(ap);
    return -EINVAL;
}

#define SPEC(...) fail(why, "InvalidRayJobSpec", __VA_ARGS__)

static bool autoscaling(const cJSON *rj)
{
    return rj_bool(rj, "spec.rayClusterSpec.enableInTreeAutoscaling");
}

static const char *const order[] = { "DeleteWorkers", "DeleteCluster", "DeleteSelf" };

/* Appends "; "-free lines as errors.Join does ("\n" between). */
static void add_err(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_err(struct buf *b, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (b->len)
        buf_puts(b, "\n");
    buf_puts(b, line);
}

/* validateDeletionRules: per-rule checks, uniqueness, TTL order per condition. */
static int deletion_rules(const cJSON *rj, const cJSON *rules, struct rj_invalid *why)
{
    struct buf errs = { 0 };
    bool selector = rj_has_selector(rj);
    int n = cJSON_GetArraySize(rules);
    for (int i = 0; i < n; i++) {
        const cJSON *r = cJSON_GetArrayItem(rules, i);
        const cJSON *cond = cJSON_GetObjectItemCaseSensitive(r, "condition");
        const char *policy = rj_str(r, "policy");
        bool has_js = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cond, "jobStatus"));
        bool has_ds = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cond, "jobDeploymentStatus"));
        int64_t ttl = 0;
        (void)rj_int(cond, "ttlSeconds", &ttl);
        if (has_js && has_ds) {
            add_err(&errs, "deletionRules[%d]: cannot set both JobStatus and JobDeploymentStatus at the same time", i);
            continue;
        }
        if (!has_js && !has_ds) {
            add_err(&errs, "deletionRules[%d]: exactly one of JobStatus and JobDeploymentStatus must be set", i);
            continue;
        }
        if (ttl < 0) {
            add_err(&errs, "deletionRules[%d]: TTLSeconds must be non-negative", i);
            continue;
        }
        if (selector && (strcmp(policy, "DeleteCluster") == 0 || strcmp(policy, "DeleteWorkers") == 0)) {
            add_err(&errs, "deletionRules[%d]: DeletionPolicyType '%s' not supported when ClusterSelector is set", i, policy);
            continue;
        }
        if (autoscaling(rj) && strcmp(policy, "DeleteWorkers") == 0) {
            add_err(&errs, "deletionRules[%d]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled", i);
            continue;
        }
        const char *key = has_js ? "jobStatus" : "jobDeploymentStatus";
        const char *val = rj_str(cond, key);
        /* an earlier valid rule with the same (condition, policy) */
        for (int j = 0; j < i; j++) {
            const cJSON *o = cJSON_GetArrayItem(rules, j);
            const cJSON *oc = cJSON_GetObjectItemCaseSensitive(o, "condition");
            if (strcmp(rj_str(o, "policy"), policy) == 0 && strcmp(rj_str(oc, key), val) == 0 &&
                cJSON_IsString(cJSON_GetObjectItemCaseSensitive(oc, key)) &&
                !(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(oc, "jobStatus")) &&
                  cJSON_IsString(cJSON_GetObjectItemCaseSensitive(oc, "jobDeploymentStatus")))) {
                add_err(&errs, "deletionRules[%d]: duplicate rule for DeletionPolicyType '%s' and %s '%s'",
                        i, policy, has_js ? "JobStatus" : "JobDeploymentStatus", val);
                break;
            }
        }
    }
    /* TTLs must not decrease along Workers -> Cluster -> Self per condition */
    for (int i = 0; i < n && errs.len == 0; i++) {
        const cJSON *cond = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rules, i), "condition");
        bool has_js = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cond, "jobStatus"));
        const char *key = has_js ? "jobStatus" : "jobDeploymentStatus", *val = rj_str(cond, key);
        int64_t prev = -1;
        const char *prev_policy = NULL;
        for (size_t k = 0; k < 3; k++) {
            for (int j = 0; j < n; j++) {
                const cJSON *r = cJSON_GetArrayItem(rules, j);
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "condition");
                int64_t ttl = 0;
                if (strcmp(rj_str(r, "policy"), order[k]) != 0 || strcmp(rj_str(c, key), val) != 0 ||
                    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, key)))
                    continue;
                (void)rj_int(c, "ttlSeconds", &ttl);
                if (prev_policy && ttl < prev)
                    add_err(&errs, "for %s '%s': %s TTL (%lld) must be >= %s TTL (%lld)",
                            has_js ? "JobStatus" : "JobDeploymentStatus", val, order[k],
                            (long long)ttl, prev_policy, (long long)prev);
                prev = ttl;
                prev_policy = order[k];
                break;
            }
        }
    }
    int rc = 0;
    if (errs.len)
        rc = SPEC("%s", errs.data);
    buf_free(&errs);
    return rc;
}

static int legacy_policies(const cJSON *rj, const cJSON *ds, struct rj_invalid *why)
{
    const cJSON *on_s = cJSON_GetObjectItemCaseSensitive(ds, "onSuccess");
    const cJSON *on_f = cJSON_GetObjectItemCaseSensitive(ds, "onFailure");
    if (!on_s || !on_f)
        return SPEC("both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set "
                    "when using the legacy deletion policy fields of DeletionStrategy");
    const char *ps = rj_str(on_s, "policy"), *pf = rj_str(on_f, "policy");
    if (!*ps)
        return SPEC("the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset "
                    "when DeletionStrategy is enabled");
    if (!*pf)
        return SPEC("the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset "
                    "when DeletionStrategy is enabled");
    if (rj_has_selector(rj)) {
        if (strcmp(ps, "DeleteCluster") == 0 || strcmp(ps, "DeleteWorkers") == 0)
            return SPEC("the ClusterSelector mode doesn't support DeletionStrategy=%s on success", ps);
        if (strcmp(pf, "DeleteCluster") == 0 || strcmp(pf, "DeleteWorkers") == 0)
            return SPEC("the ClusterSelector mode doesn't support DeletionStrategy=%s on failure", pf);
    }
    if ((strcmp(ps, "DeleteWorkers") == 0 || strcmp(pf, "DeleteWorkers") == 0) && autoscaling(rj))
        return SPEC("DeletionStrategy=DeleteWorkers currently does not support RayCluster with "
                    "autoscaling enabled");
    if (rj_bool(rj, "spec.shutdownAfterJobFinishes") &&
        (strcmp(ps, "DeleteNone") == 0 || strcmp(pf, "DeleteNone") == 0))
        return SPEC("The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while "
                    "deletion policy is 'DeleteNone'");
    return 0;
}

static int deletion_config(const cJSON *rj, const struct rj_config *cfg, struct rj_invalid *why)
{
    int64_t ttl = 0;
    bool shutdown = rj_bool(rj, "spec.shutdownAfterJobFinishes");
    (void)rj_int(rj, "spec.ttlSecondsAfterFinished", &ttl);
    if (!shutdown && ttl > 0)
        return SPEC("The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to "
                    "false cannot have TTLSecondsAfterFinished");
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rj, "spec"), "deletionStrategy");
    if (!ds || cJSON_IsNull(ds))
        return 0;
    if (!cfg->deletion_policy_gate)
        return SPEC("RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy");
    bool legacy = cJSON_GetObjectItemCaseSensitive(ds, "onSuccess") ||
                  cJSON_GetObjectItemCaseSensitive(ds, "onFailure");
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(ds, "deletionRules");
    bool with_rules = cJSON_GetArraySize(rules) > 0;
    if (with_rules && shutdown)
        return SPEC("The RayJob spec is invalid: spec.shutdownAfterJobFinishes and "
                    "spec.deletionStrategy.deletionRules are mutually exclusive");
    if (with_rules && legacy)
        return SPEC("The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields "
                    "and deletionRules simultaneously");
    if (legacy)
        return legacy_policies(rj, ds, why);
    if (with_rules)
        return deletion_rules(rj, rules, why);
    return SPEC("The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and "
                "onFailure, OR the deletionRules field (cannot be empty)");
}

static int check_spec(const cJSON *rj, const struct rj_config *cfg, struct rj_invalid *why)
{
    const char *mode = rj_mode(rj);
    bool selector = rj_has_selector(rj), suspend = rj_bool(rj, "spec.suspend");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(rj, "spec");
    const cJSON *rcs = cJSON_GetObjectItemCaseSensitive(spec, "rayClusterSpec");
    int64_t v, backoff = 0;
    bool has_backoff = rj_int(rj, "spec.backoffLimit", &backoff) == 0;
    int rc;
    if (suspend && !rj_bool(rj, "spec.shutdownAfterJobFinishes"))
        return SPEC("The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to "
                    "false is not allowed to be suspended");
    if (rj_int(rj, "spec.ttlSecondsAfterFinished", &v) == 0 && v < 0)
        return SPEC("The RayJob spec is invalid: TTLSecondsAfterFinished must be a non-negative integer");
    if ((rc = deletion_config(rj, cfg, why)) < 0)
        return rc;
    if (suspend && selector)
        return SPEC("The RayJob spec is invalid: the ClusterSelector mode doesn't support the "
                    "suspend operation");
    if (!cJSON_IsObject(rcs) && !selector)
        return SPEC("The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set");
    if (selector) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(spec, "clusterSelector"), "ray.io/cluster");
        if (!cJSON_IsString(c) || !*c->valuestring)
            return SPEC("cluster name in ClusterSelector should not be empty");
        if (strcmp(mode, "SidecarMode") == 0)
            return SPEC("ClusterSelector is not supported in SidecarMode");
        if (has_backoff && backoff > 0)
            return SPEC("The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode");
    }
    if (strcmp(mode, "InteractiveMode") == 0 && has_backoff && backoff > 0)
        return SPEC("The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode");
    if (strcmp(mode, "SidecarMode") == 0) {
        const char *rp = rj_str(rcs, "headGroupSpec.template.spec.restartPolicy");
        if (cJSON_GetObjectItemCaseSensitive(spec, "submitterPodTemplate"))
            return SPEC("Currently, SidecarMode doesn't support SubmitterPodTemplate");
        if (cJSON_GetObjectItemCaseSensitive(spec, "submitterConfig"))
            return SPEC("Currently, SidecarMode doesn't support SubmitterConfig");
        if (*rp && strcmp(rp, "Never") != 0)
            return SPEC("restartPolicy for head Pod should be Never or unset when using SidecarMode");
    }
    if (cJSON_IsObject(rcs)) {
        /* utils.IsK8sAuthEnabled: authOptions.enableK8sTokenAuth is true */
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(rcs, "authOptions"), "enableK8sTokenAuth")))
            return SPEC("The RayJob spec is invalid: K8s token auth mode is currently not supported "
                        "for RayJob");
        struct rc_invalid rci;
        cJSON *fake = cJSON_CreateObject(), *md = cJSON_CreateObject();
        if (!fake || !md || !cJSON_AddItemToObject(fake, "metadata", md)) {
            cJSON_Delete(md);
            cJSON_Delete(fake);
            return -ENOMEM;
        }
        const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(rj, "metadata"), "annotations");
        cJSON_AddStringToObject(md, "name", rj_str(rj, "metadata.name"));
        cJSON_AddStringToObject(md, "namespace", rj_str(rj, "metadata.namespace"));
        if (ann)
            cJSON_AddItemReferenceToObject(md, "annotations", (cJSON *)ann);
        cJSON_AddItemReferenceToObject(fake, "spec", (cJSON *)rcs);
        rc = rc_validate(fake, &cfg->rc_gates, &rci);
        cJSON_Delete(fake);
        if (rc < 0) {
            /* KubeRay wraps ValidateRayClusterSpec's own error: drop rc_validate's
             * "The RayCluster spec is invalid NS/NAME: " lead */
            const char *m = rci.message, *lead = strstr(m, " is invalid ");
            const char *colon = lead ? strstr(lead, ": ") : NULL;
            return SPEC("The RayJob spec is invalid: %s", colon ? colon + 2 : m);
        }
    }
    char err[256];
    cJSON *env = NULL;
    if (rj_runtime_env(rj, &env, err, sizeof(err)) < 0)
        return SPEC("failed to unmarshal RuntimeEnvYAML: %s: %s",
                    rj_str(rj, "spec.runtimeEnvYAML"), err);
    cJSON_Delete(env);
    if (rj_int(rj, "spec.activeDeadlineSeconds", &v) == 0 && v <= 0)
        return SPEC("The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer");
    if (rj_int(rj, "spec.preRunningDeadlineSeconds", &v) == 0 && v <= 0)
        return SPEC("The RayJob spec is invalid: preRunningDeadlineSeconds must be a positive integer");
    if (has_backoff && backoff < 0)
        return SPEC("The RayJob spec is invalid: backoffLimit must be a positive integer");
    return 0;
}

int rj_validate(const cJSON *rj, const struct rj_config *cfg, struct rj_invalid *why)
{
    const char *name = rj_str(rj, "metadata.name");
    memset(why, 0, sizeof(*why));
    if (strlen(name) > RJ_MAX_NAME)
        return fail(why, "InvalidRayJobMetadata", "The RayJob metadata is invalid: RayJob name "
                    "should be no more than %d characters", RJ_MAX_NAME);
    if (!kobj_dns1035_label(name))
        return fail(why, "InvalidRayJobMetadata", "The RayJob metadata is invalid: RayJob name "
                    "should be a valid DNS1035 label: [a DNS-1035 label must consist of lower case "
                    "alphanumeric characters or '-', start with an alphabetic character, and end "
                    "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]");
    int rc = check_spec(rj, cfg, why);
    if (rc < 0)
        return rc;
    if (strcmp(rj_str(rj, "status.jobDeploymentStatus"), "Waiting") == 0 &&
        strcmp(rj_mode(rj), "InteractiveMode") != 0)
        return fail(why, "InvalidRayJobStatus", "The RayJob status is invalid: JobDeploymentStatus "
                    "cannot be `Waiting` when SubmissionMode is not InteractiveMode");
    return 0;
}

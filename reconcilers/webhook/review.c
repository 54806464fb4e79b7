/*
 * review.c - one AdmissionReview v1 request in, its response out (webhook.h). Pure and
 * bounded: the body is outside input (the API server relays what any client sent), so
 * it is size-checked, parsed once, and every field is type-checked before use.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kobj/gotypes.h"
#include "kobj/kobj.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayservice/rayservice.h"
#include "reconcilers/webhook/webhook.h"
#include "util/util.h"

#define MAX_NAME_RAYCLUSTER 53       /* utils.MaxRayClusterNameLength */
#define MAX_NAME_RAYJOB (53 - 6)     /* MaxRayJobNameLength */

/* field.ErrorList of one object: up to a few "path: Invalid value: V: detail" */
struct ferrs {
    cJSON *causes;               /* [{reason, message, field}] */
    struct buf text;             /* the errors joined as Go's ErrorList.ToAggregate */
    int n;
};

/* field.Invalid(path, value, detail): value is the JSON text Go prints for it. */
static void add_invalid(struct ferrs *e, const char *field, const char *value, const char *detail)
{
    struct buf m = { 0 };
    cJSON *c = cJSON_CreateObject();
    buf_printf(&m, "Invalid value: %s: %s", value, detail);
    if (c) {
        cJSON_AddStringToObject(c, "reason", "FieldValueInvalid");
        cJSON_AddStringToObject(c, "message", m.data ? m.data : "");
        cJSON_AddStringToObject(c, "field", field);
        cJSON_AddItemToArray(e->causes, c);
    }
    buf_printf(&e->text, "%s%s: %s", e->n ? ", " : "", field, m.data ? m.data : "");
    e->n++;
    buf_free(&m);
}

/* A Go %q of s is what field.Invalid prints for a string value (JSON escaping is the
 * same for the names DNS rules allow; others are refused anyway). */
static void quoted(const char *s, struct buf *out)
{
    gotypes_string(out, s);
}

static void check_name(struct ferrs *e, const char *kind, const char *name, int max,
                       const char *prefix)
{
    char msg[900], dns[700];
    struct buf q = { 0 };
    if ((int)strlen(name) > max)
        snprintf(msg, sizeof(msg), "%s%s name should be no more than %d characters", prefix, kind,
                 max);
    else if (rc_dns1035_check(name, dns, sizeof(dns)) < 0)
        snprintf(msg, sizeof(msg), "%s%s name should be a valid DNS1035 label: %s", prefix, kind,
                 dns);
    else
        return;
    quoted(name, &q);
    add_invalid(e, "metadata.name", q.data ? q.data : "\"\"", msg);
    buf_free(&q);
}

/* RayServiceWebhook: ValidateRayServiceMetadata (the controller's own check: name rules and
 * the ray.io/initializing-timeout annotation), reported on metadata.name as KubeRay does. */
static void check_rayservice(struct ferrs *e, const cJSON *rs, const char *name)
{
    struct rs_invalid why;
    struct buf q = { 0 };
    if (rs_validate_metadata(rs, &why) == 0)
        return;
    quoted(name, &q);
    add_invalid(e, "metadata.name", q.data ? q.data : "\"\"", why.message);
    buf_free(&q);
}

/* RayClusterWebhook.validateWorkerGroups: the first repeated groupName. */
static void check_groups(struct ferrs *e, const cJSON *rc)
{
    const cJSON *groups = kobj_get(kobj_get(rc, "spec"), "workerGroupSpecs"), *g, *h;
    int i = 0;
    cJSON_ArrayForEach(g, groups) {
        const char *name = kobj_str(g, "groupName");
        int j = 0;
        cJSON_ArrayForEach(h, groups) {
            if (j++ >= i)
                break;
            const char *hn = kobj_str(h, "groupName");
            if (strcmp(hn ? hn : "", name ? name : "") == 0) {
                /* field.Invalid prints the WorkerGroupSpec as json.Marshal does */
                int t = gotypes_raycluster_spec;
                for (int f = 0; f < gotypes[t].nfields; f++)
                    if (!strcmp(gotypes[t].fields[f].json, "workerGroupSpecs"))
                        t = gotypes[gotypes[t].fields[f].type].elem;
                struct buf v = { 0 };
                char field[64];
                if (t == gotypes_raycluster_spec || gotypes_marshal(&v, t, g) < 0)
                    buf_puts(&v, "{}");
                snprintf(field, sizeof(field), "spec.workerGroupSpecs[%d]", i);
                add_invalid(e, field, v.data ? v.data : "{}", "worker group names must be unique");
                buf_free(&v);
                return;
            }
        }
        i++;
    }
}

/* apierrors.NewInvalid(GroupKind{ray.io, KIND}, name, errs) as a metav1.Status. */
static cJSON *invalid_status(struct ferrs *e, const char *kind, const char *name)
{
    cJSON *st = cJSON_CreateObject(), *d;
    struct buf msg = { 0 };
    buf_printf(&msg, "%s.ray.io \"%s\" is invalid: %s%s%s", kind, name, e->n > 1 ? "[" : "",
               e->text.data ? e->text.data : "", e->n > 1 ? "]" : "");
    if (!st || !(d = cJSON_CreateObject())) {
        cJSON_Delete(st);
        buf_free(&msg);
        return NULL;
    }
    cJSON_AddStringToObject(st, "status", "Failure");
    cJSON_AddStringToObject(st, "message", msg.data ? msg.data : "");
    cJSON_AddStringToObject(st, "reason", "Invalid");
    cJSON_AddStringToObject(d, "name", name);
    cJSON_AddStringToObject(d, "group", "ray.io");
    cJSON_AddStringToObject(d, "kind", kind);
    cJSON_AddItemToObject(d, "causes", e->causes);
    e->causes = NULL;
    cJSON_AddItemToObject(st, "details", d);
    cJSON_AddNumberToObject(st, "code", 422);
    buf_free(&msg);
    return st;
}

int webhook_review(const char *path, const char *body, size_t len, char **out)
{
    static const struct {
        const char *path, *kind, *prefix;
        int max;
    } kinds[] = {
        { "/validate-ray-io-v1-raycluster", "RayCluster", "", MAX_NAME_RAYCLUSTER },
        { "/validate-ray-io-v1-rayjob", "RayJob", "The RayJob metadata is invalid: ", MAX_NAME_RAYJOB },
        { "/validate-ray-io-v1-rayservice", "RayService", "", 0 },   /* check_rayservice */
    };
    int k = -1, rc = -EINVAL;
    cJSON *rev = NULL, *resp = NULL, *answer = NULL;
    struct ferrs e = { 0 };
    *out = NULL;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (path && strcmp(path, kinds[i].path) == 0)
            k = (int)i;
    if (k < 0)
        return -ENOENT;
    if (!body || len == 0 || len > WEBHOOK_MAX_BODY || !(rev = cJSON_ParseWithLength(body, len)))
        return -EINVAL;
    const cJSON *req = kobj_get(rev, "request");
    const char *api = kobj_str(rev, "apiVersion"), *kind = kobj_str(rev, "kind");
    const char *uid = kobj_str(req, "uid"), *op = kobj_str(req, "operation");
    const cJSON *obj = kobj_get(req, "object");
    if (!api || strcmp(api, "admission.k8s.io/v1") || !kind || strcmp(kind, "AdmissionReview") ||
        !cJSON_IsObject(req) || !uid || !op)
        goto out;
    rc = -ENOMEM;
    if (!(answer = cJSON_CreateObject()) || !(e.causes = cJSON_CreateArray()))
        goto out;
    cJSON_AddStringToObject(answer, "apiVersion", "admission.k8s.io/v1");
    cJSON_AddStringToObject(answer, "kind", "AdmissionReview");
    resp = cJSON_AddObjectToObject(answer, "response");
    cJSON_AddStringToObject(resp, "uid", uid);
    /* ValidateDelete allows everything; create and update check the new object */
    if ((!strcmp(op, "CREATE") || !strcmp(op, "UPDATE")) && cJSON_IsObject(obj)) {
        const char *name = kobj_str(kobj_get(obj, "metadata"), "name");
        if (k == 2)
            check_rayservice(&e, obj, name ? name : "");
        else
            check_name(&e, kinds[k].kind, name ? name : "", kinds[k].max, kinds[k].prefix);
        if (k == 0)
            check_groups(&e, obj);
    }
    if (e.n == 0) {
        cJSON_AddTrueToObject(resp, "allowed");
    } else {
        const char *name = kobj_str(kobj_get(obj, "metadata"), "name");
        cJSON *st = invalid_status(&e, kinds[k].kind, name ? name : "");
        cJSON_AddFalseToObject(resp, "allowed");
        if (st)
            cJSON_AddItemToObject(resp, "status", st);
    }
    rc = (*out = cJSON_PrintUnformatted(answer)) ? 0 : -ENOMEM;
out:
    cJSON_Delete(e.causes);
    buf_free(&e.text);
    cJSON_Delete(answer);
    cJSON_Delete(rev);
    return rc;
}

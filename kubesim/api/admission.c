/*
 * admission.c - validating admission webhooks, called as kube-apiserver calls them:
 * every admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration whose rules
 * match a write (operations, apiGroups, apiVersions, resources, scope; "*" wildcards)
 * gets an AdmissionReview v1 POSTed to its clientConfig.url, over TLS verified with the
 * webhook's caBundle, bounded by timeoutSeconds (default 10, at most 30). A refusal
 * answers as kube-apiserver's webhookerrors.ToStatusErr: the webhook's Status with
 * code >= 400 and the message prefixed `admission webhook "NAME" denied the request: `
 * (causes kept, so kubectl prints them). A call that fails follows failurePolicy: Fail
 * (the default) answers 500 `failed calling webhook`, Ignore lets the write through.
 *
 * Differences from kube-apiserver, on purpose for a sandbox: the review carries the
 * object as the client sent it (before schema defaulting; a PATCH's review carries the
 * object the patch produces, from a dry run of it against the object as it stands, and a
 * write racing in between is not reviewed again), clientConfig.service (no cluster network here),
 * namespaceSelector / objectSelector and matchConditions are not evaluated (match all).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "kobj/kobj.h"
#include "kubesim/api/internal.h"
#include "kubesim/registry/registry.h"
#include "kubesim/store/store.h"
#include "util/util.h"

#define REVIEW_MAX_RESPONSE (3u << 20)


/* true when list (an array of strings) holds want or "*" */
static bool listed(const cJSON *list, const char *want)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
        if (cJSON_IsString(e) && (!strcmp(e->valuestring, "*") || !strcmp(e->valuestring, want)))
            return true;
    return false;
}

static bool rule_matches(const cJSON *rule, const struct reg_resource *res, const char *op)
{
    const char *scope = kobj_str(rule, "scope");
    if (!listed(kobj_get(rule, "operations"), op) ||
        !listed(kobj_get(rule, "apiGroups"), res->group) ||
        !listed(kobj_get(rule, "apiVersions"), res->version) ||
        !listed(kobj_get(rule, "resources"), res->plural))
        return false;
    if (scope && !strcmp(scope, "Namespaced") && !res->namespaced)
        return false;
    if (scope && !strcmp(scope, "Cluster") && res->namespaced)
        return false;
    return true;
}

static char *review_body(const struct reg_resource *res, const char *op, const char *ns,
                         const char *name, const cJSON *obj, const cJSON *old, char uid[40])
{
    cJSON *r = cJSON_CreateObject(), *q, *k, *g;
    char *text;
    snprintf(uid, 40, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)util_now_ns(),
             (unsigned)(util_now_ns() >> 32) & 0xffff, (unsigned)rand() & 0xfff,
             (unsigned)rand() & 0xfff, (unsigned long long)util_now_ns() & 0xffffffffffffull);
    if (!r)
        return NULL;
    cJSON_AddStringToObject(r, "apiVersion", "admission.k8s.io/v1");
    cJSON_AddStringToObject(r, "kind", "AdmissionReview");
    q = cJSON_AddObjectToObject(r, "request");
    cJSON_AddStringToObject(q, "uid", uid);
    k = cJSON_AddObjectToObject(q, "kind");
    cJSON_AddStringToObject(k, "group", res->group);
    cJSON_AddStringToObject(k, "version", res->version);
    cJSON_AddStringToObject(k, "kind", res->kind);
    g = cJSON_AddObjectToObject(q, "resource");
    cJSON_AddStringToObject(g, "group", res->group);
    cJSON_AddStringToObject(g, "version", res->version);
    cJSON_AddStringToObject(g, "resource", res->plural);
    cJSON_AddItemToObject(q, "requestKind", cJSON_Duplicate(k, 1));
    cJSON_AddItemToObject(q, "requestResource", cJSON_Duplicate(g, 1));
    if (name && *name)
        cJSON_AddStringToObject(q, "name", name);
    if (ns && *ns)
        cJSON_AddStringToObject(q, "namespace", ns);
    cJSON_AddStringToObject(q, "operation", op);
    cJSON *ui = cJSON_AddObjectToObject(q, "userInfo");
    cJSON_AddStringToObject(ui, "username", "kubernetes-admin");
    cJSON *groups = cJSON_AddArrayToObject(ui, "groups");
    cJSON_AddItemToArray(groups, cJSON_CreateString("system:masters"));
    cJSON_AddItemToArray(groups, cJSON_CreateString("system:authenticated"));
    cJSON_AddItemToObject(q, "object", obj ? cJSON_Duplicate(obj, 1) : cJSON_CreateNull());
    cJSON_AddItemToObject(q, "oldObject", old ? cJSON_Duplicate(old, 1) : cJSON_CreateNull());
    cJSON_AddFalseToObject(q, "dryRun");
    cJSON *opt = cJSON_AddObjectToObject(q, "options");
    cJSON_AddStringToObject(opt, "kind", !strcmp(op, "CREATE") ? "CreateOptions" : "UpdateOptions");
    cJSON_AddStringToObject(opt, "apiVersion", "meta.k8s.io/v1");
    text = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return text;
}

/* One call: 0 with *resp the parsed AdmissionReview, or -errno with err set. */
static int call(const cJSON *hook, const char *body, cJSON **resp, char *err, size_t errlen)
{
    const cJSON *cc = kobj_get(hook, "clientConfig");
    const char *url = kobj_str(cc, "url"), *ca = kobj_str(cc, "caBundle");
    const cJSON *to = kobj_get(hook, "timeoutSeconds");
    long timeout = cJSON_IsNumber(to) ? (long)to->valuedouble : 10;
    struct buf_sink s = { .max = REVIEW_MAX_RESPONSE };
    struct curl_slist *h = NULL;
    char *pem = NULL;
    size_t pem_len = 0;
    int rc = 0;
    *resp = NULL;
    if (timeout < 1 || timeout > 30)
        timeout = timeout < 1 ? 1 : 30;
    if (!url) {
        snprintf(err, errlen, "kubesim reaches webhooks by clientConfig.url only (no service network)");
        return -ENOTSUP;
    }
    if (ca && *ca && kobj_base64_decode(ca, strlen(ca), &pem, &pem_len) < 0) {
        snprintf(err, errlen, "invalid caBundle");
        return -EINVAL;
    }
    CURL *c = buf_sink_easy(url, "https", &s);
    if (!c) {
        free(pem);
        return -ENOMEM;
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout);
    if (pem) {
        struct curl_blob blob = { .data = pem, .len = pem_len, .flags = CURL_BLOB_COPY };
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    }
    CURLcode r = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (r != CURLE_OK) {
        snprintf(err, errlen, "Post \"%s\": %s", url,
                 r == CURLE_OPERATION_TIMEDOUT ? "context deadline exceeded" : curl_easy_strerror(r));
        rc = -EIO;
    } else if (code != 200) {
        snprintf(err, errlen, "expected response code 200, got %ld", code);
        rc = -EIO;
    } else if (!(*resp = cJSON_ParseWithLength(s.b.data ? s.b.data : "", s.b.len))) {
        snprintf(err, errlen, "the response is not an AdmissionReview");
        rc = -EPROTO;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    buf_free(&s.b);
    free(pem);
    return rc;
}

/* webhookerrors.ToStatusErr into st */
static void denied(struct store_status *st, const char *hook, const cJSON *status)
{
    const cJSON *code = kobj_get(status, "code");
    const char *msg = kobj_str(status, "message"), *reason = kobj_str(status, "reason");
    const cJSON *details = kobj_get(status, "details");
    st->code = cJSON_IsNumber(code) && code->valuedouble >= 400 && code->valuedouble < 600
                   ? (int)code->valuedouble : 400;
    snprintf(st->reason, sizeof(st->reason), "%s", reason ? reason : "");
    if (msg && *msg)
        snprintf(st->message, sizeof(st->message), "admission webhook \"%s\" denied the request: %s",
                 hook, msg);
    else if (reason && *reason)
        snprintf(st->message, sizeof(st->message), "admission webhook \"%s\" denied the request: %s",
                 hook, reason);
    else
        snprintf(st->message, sizeof(st->message),
                 "admission webhook \"%s\" denied the request without explanation", hook);
    snprintf(st->kind, sizeof(st->kind), "%s", kobj_str(details, "kind") ? kobj_str(details, "kind") : "");
    snprintf(st->group, sizeof(st->group), "%s", kobj_str(details, "group") ? kobj_str(details, "group") : "");
    snprintf(st->name, sizeof(st->name), "%s", kobj_str(details, "name") ? kobj_str(details, "name") : "");
    const cJSON *causes = kobj_get(details, "causes");
    if (cJSON_IsArray(causes))
        st->causes = cJSON_Duplicate(causes, 1);
}

/* The ValidatingWebhookConfigurations that may review a write of res into *l (free with
 * store_list_free): -ENOENT when the type is not served, or res is that type itself. */
static int list_configs(struct server *srv, const struct reg_resource *res, struct store_list *l)
{
    const struct registry *reg = store_registry_rdlock(srv->store);
    const struct reg_resource *vwc = registry_find(reg, "admissionregistration.k8s.io", "v1",
                                                   "validatingwebhookconfigurations");
    store_registry_unlock(srv->store);
    struct store_status lst = { 0 };
    if (!vwc || res == vwc)
        return -ENOENT;
    if (store_list(srv->store, vwc, "", NULL, l, &lst) < 0) {
        store_status_clear(&lst);
        return -ENOENT;
    }
    return 0;
}

int api__admission_validate(struct server *srv, const struct reg_resource *res, const char *op,
                            const char *ns, const char *name, const cJSON *obj, const cJSON *old,
                            struct store_status *st)
{
    struct store_list l = { 0 };
    int rc = 0;
    if (list_configs(srv, res, &l) < 0)
        return 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        const cJSON *hook;
        cJSON_ArrayForEach(hook, kobj_get(store_obj_json(l.items[i]), "webhooks")) {
            const cJSON *rule;
            bool match = false;
            cJSON_ArrayForEach(rule, kobj_get(hook, "rules"))
                match = match || rule_matches(rule, res, op);
            if (!match)
                continue;
            const char *hname = kobj_str(hook, "name") ? kobj_str(hook, "name") : "";
            const char *fp = kobj_str(hook, "failurePolicy");
            char uid[40], err[600];
            cJSON *resp = NULL;
            char *body = review_body(res, op, ns, name, obj, old, uid);
            int crc = body ? call(hook, body, &resp, err, sizeof(err)) : -ENOMEM;
            const cJSON *r = kobj_get(resp, "response");
            free(body);
            if (crc == 0 && (!cJSON_IsObject(r) || !kobj_str(r, "uid") || strcmp(kobj_str(r, "uid"), uid))) {
                snprintf(err, sizeof(err), "expected response.uid=\"%s\"", uid);
                crc = -EPROTO;
            }
            if (crc < 0) {
                cJSON_Delete(resp);
                log_warn("admission webhook call failed", "webhook", hname, "error", err, NULL);
                if (fp && !strcmp(fp, "Ignore"))
                    continue;
                st->code = 500;
                snprintf(st->reason, sizeof(st->reason), "InternalError");
                snprintf(st->message, sizeof(st->message), "Internal error occurred: failed calling "
                         "webhook \"%s\": failed to call webhook: %s", hname, err);
                rc = -EIO;
                break;
            }
            if (!cJSON_IsTrue(kobj_get(r, "allowed"))) {
                denied(st, hname, kobj_get(r, "status"));
                cJSON_Delete(resp);
                rc = -EPERM;
                break;
            }
            cJSON_Delete(resp);
        }
    }
    store_list_free(&l);
    return rc;
}

/* true when some webhook's rules match op on res (no VWC listed: false, cheaply) */
static bool any_hook(struct server *srv, const struct reg_resource *res, const char *op)
{
    struct store_list l = { 0 };
    bool hit = false;
    if (list_configs(srv, res, &l) < 0)
        return false;
    for (size_t i = 0; i < l.n && !hit; i++) {
        const cJSON *hook, *rule;
        cJSON_ArrayForEach(hook, kobj_get(store_obj_json(l.items[i]), "webhooks"))
            cJSON_ArrayForEach(rule, kobj_get(hook, "rules"))
                hit = hit || rule_matches(rule, res, op);
    }
    store_list_free(&l);
    return hit;
}

int api__admission_validate_patch(struct server *srv, const struct reg_resource *res, const char *ns,
                                  const char *name, int type, const char *body, size_t len,
                                  const struct store_write_opts *w, struct store_status *st)
{
    struct store_write_opts dry = { 0 };
    struct store_obj *old = NULL, *next = NULL;
    struct store_status ign = { 0 };
    bool created = false;
    int rc;
    if (!any_hook(srv, res, "UPDATE") && !(type == PATCH_APPLY && any_hook(srv, res, "CREATE")))
        return 0;
    if (w)
        dry = *w;
    dry.dry_run = true;
    dry.warnings = NULL;
    (void)store_get(srv->store, res, ns, name, &old, &ign);
    store_status_clear(&ign);
    memset(&ign, 0, sizeof(ign));
    if (store_patch(srv->store, res, ns, name, "", (enum store_patch_type)type, body, len, &dry,
                    &next, &created, &ign) < 0 || !next) {
        /* the real patch fails the same way and answers for it */
        store_status_clear(&ign);
        rc = 0;
        goto out;
    }
    rc = api__admission_validate(srv, res, created ? "CREATE" : "UPDATE", ns, name, store_obj_json(next),
                                 created || !old ? NULL : store_obj_json(old), st);
out:
    if (old)
        store_obj_unref(old);
    if (next)
        store_obj_unref(next);
    return rc;
}

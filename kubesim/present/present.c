/*
 * present.c - discovery documents rendered from the registry: /version, /api,
 * /apis, /api/v1 and /apis/G/V (legacy discovery) and the aggregated
 * apidiscovery.k8s.io v2/v2beta1 APIGroupDiscoveryList kubectl >= 1.26 asks for.
 *
 * The shapes follow what a real 1.3x API server returns (docs/real-clients.md §3):
 * resources and their subresources sorted by name, group versions ordered by
 * Kubernetes version priority with the first one preferred. Documents are built
 * as cJSON trees and printed compactly into the caller's buffer.
 */
#include "kubesim/present/present.h"
#include "kubesim/present/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRESENT_GIT_VERSION "v1.33.0-kubesim"

/* ---- helpers shared with present_openapi.c ---------------------------------------- */

int present__print(cJSON *doc, struct buf *out)
{
    char *txt;
    int rc;

    if (!doc)
        return -ENOMEM;
    txt = cJSON_PrintUnformatted(doc);
    if (!txt)
        return -ENOMEM;
    rc = buf_puts(out, txt);
    free(txt);
    return rc;
}

/* Parses "v1", "v2beta3", "v1alpha1": class 2 GA, 1 beta, 0 alpha; -1 otherwise. */
static int parse_version(const char *v, long *major, int *cls, long *minor)
{
    char *end;

    *minor = 0;
    if (v[0] != 'v' || v[1] < '1' || v[1] > '9')
        return -1;
    *major = strtol(v + 1, &end, 10);
    if (!*end) {
        *cls = 2;
        return 0;
    }
    if (strncmp(end, "beta", 4) == 0)
        *cls = 1, end += 4;
    else if (strncmp(end, "alpha", 5) == 0)
        *cls = 0, end += 5;
    else
        return -1;
    if (*end < '1' || *end > '9')
        return -1;
    *minor = strtol(end, &end, 10);
    return *end ? -1 : 0;
}

static int present__version_cmp(const char *a, const char *b)
{
    long ma, mb, na, nb;
    int ca, cb;
    bool ka = parse_version(a, &ma, &ca, &na) == 0, kb = parse_version(b, &mb, &cb, &nb) == 0;

    if (ka != kb)
        return ka ? -1 : 1;          /* kube-like versions before anything else */
    if (!ka)
        return strcmp(a, b);
    if (ca != cb)
        return cb - ca;              /* GA, then beta, then alpha */
    if (ma != mb)
        return ma > mb ? -1 : 1;
    if (na != nb)
        return na > nb ? -1 : 1;
    return 0;
}

size_t present__group_versions(const struct registry *r, const char *group, const char **out,
                              size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < registry_count(r); i++) {
        const struct reg_resource *res = registry_at(r, i);
        bool seen = false;
        if (strcmp(res->group, group) != 0)
            continue;
        for (size_t j = 0; j < n; j++)
            seen |= strcmp(out[j], res->version) == 0;
        if (seen || n == max)
            continue;
        /* insertion sort by priority: a handful of versions at most */
        size_t k = n++;
        while (k > 0 && present__version_cmp(res->version, out[k - 1]) < 0) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = res->version;
    }
    return n;
}

size_t present__groups(const struct registry *r, const char **out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < registry_count(r); i++) {
        const char *g = registry_at(r, i)->group;
        if (n && strcmp(out[n - 1], g) == 0)
            continue;           /* the registry keeps a group's resources adjacent */
        if (n == max)
            break;
        out[n++] = g;
    }
    return n;
}

static int present__add_strv(cJSON *obj, const char *key, char *const *v, bool omit_empty)
{
    cJSON *arr;

    if (omit_empty && (!v || !v[0]))
        return 0;
    arr = cJSON_AddArrayToObject(obj, key);
    if (!arr)
        return -ENOMEM;
    for (size_t i = 0; v && v[i]; i++) {
        cJSON *s = cJSON_CreateString(v[i]);
        if (!s)
            return -ENOMEM;
        cJSON_AddItemToArray(arr, s);
    }
    return 0;
}

static int add_verbs(cJSON *obj, unsigned verbs)
{
    const char *names[8];
    size_t n = registry_verb_names(verbs, names);
    cJSON *arr = cJSON_AddArrayToObject(obj, "verbs");

    if (!arr)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        cJSON *s = cJSON_CreateString(names[i]);
        if (!s)
            return -ENOMEM;
        cJSON_AddItemToArray(arr, s);
    }
    return 0;
}

/* Resources of one group version, sorted by plural as the server lists them. */
static size_t gv_resources(const struct registry *r, const char *group, const char *version,
                           const struct reg_resource **out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < registry_count(r) && n < max; i++) {
        const struct reg_resource *res = registry_at(r, i);
        if (strcmp(res->group, group) != 0 || strcmp(res->version, version) != 0)
            continue;
        size_t k = n++;
        while (k > 0 && strcmp(res->plural, out[k - 1]->plural) < 0) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = res;
    }
    return n;
}

/* ---- /version, /api, /apis --------------------------------------------------------- */

int present_version(struct buf *out)
{
    return buf_puts(out,
                    "{\"major\":\"1\",\"minor\":\"33\",\"emulationMajor\":\"1\","
                    "\"emulationMinor\":\"33\",\"minCompatibilityMajor\":\"1\","
                    "\"minCompatibilityMinor\":\"32\",\"gitVersion\":\"" PRESENT_GIT_VERSION "\","
                    "\"gitCommit\":\"0000000000000000000000000000000000000000\","
                    "\"gitTreeState\":\"clean\",\"buildDate\":\"2026-12-01T00:00:00Z\","
                    "\"goVersion\":\"go1.24.0\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}");
}

int present_api_versions(const struct registry *r, const char *server_addr, struct buf *out)
{
    cJSON *doc = cJSON_CreateObject(), *vs, *cidrs, *c;
    int rc = -ENOMEM;
    (void)r;

    if (!doc || !cJSON_AddStringToObject(doc, "kind", "APIVersions") ||
        !(vs = cJSON_AddArrayToObject(doc, "versions")) ||
        !(cidrs = cJSON_AddArrayToObject(doc, "serverAddressByClientCIDRs")) ||
        !(c = cJSON_CreateObject()))
        goto out;
    cJSON_AddItemToArray(vs, cJSON_CreateString("v1"));
    cJSON_AddItemToArray(cidrs, c);
    if (!cJSON_AddStringToObject(c, "clientCIDR", "0.0.0.0/0") ||
        !cJSON_AddStringToObject(c, "serverAddress", server_addr ? server_addr : ""))
        goto out;
    rc = present__print(doc, out);
out:
    cJSON_Delete(doc);
    return rc;
}

static cJSON *group_version_obj(const char *group, const char *version)
{
    cJSON *o = cJSON_CreateObject();
    char gv[600];

    snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
    if (!o || !cJSON_AddStringToObject(o, "groupVersion", gv) ||
        !cJSON_AddStringToObject(o, "version", version)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int present_api_groups(const struct registry *r, struct buf *out)
{
    const char *groups[PRESENT_MAX_GROUPS], *versions[PRESENT_MAX_VERSIONS];
    size_t ng = present__groups(r, groups, PRESENT_MAX_GROUPS);
    cJSON *doc = cJSON_CreateObject(), *arr;
    int rc = -ENOMEM;

    if (!doc || !cJSON_AddStringToObject(doc, "kind", "APIGroupList") ||
        !cJSON_AddStringToObject(doc, "apiVersion", "v1") ||
        !(arr = cJSON_AddArrayToObject(doc, "groups")))
        goto out;
    for (size_t i = 0; i < ng; i++) {
        size_t nv;
        cJSON *g, *vs, *pref;
        if (!*groups[i])
            continue;   /* the core group is /api */
        nv = present__group_versions(r, groups[i], versions, PRESENT_MAX_VERSIONS);
        if (!(g = cJSON_CreateObject()))
            goto out;
        cJSON_AddItemToArray(arr, g);
        if (!cJSON_AddStringToObject(g, "name", groups[i]) ||
            !(vs = cJSON_AddArrayToObject(g, "versions")))
            goto out;
        for (size_t j = 0; j < nv; j++) {
            cJSON *v = group_version_obj(groups[i], versions[j]);
            if (!v)
                goto out;
            cJSON_AddItemToArray(vs, v);
        }
        if (!(pref = group_version_obj(groups[i], versions[0])))
            goto out;
        cJSON_AddItemToObject(g, "preferredVersion", pref);
    }
    rc = present__print(doc, out);
out:
    cJSON_Delete(doc);
    return rc;
}

/* ---- /api/v1, /apis/G/V -------------------------------------------------------------- */

static int add_legacy_sub(cJSON *arr, const struct reg_resource *res, const char *sub,
                          const char *group, const char *version, const char *kind,
                          unsigned verbs)
{
    cJSON *o = cJSON_CreateObject();
    char name[600];

    if (!o)
        return -ENOMEM;
    cJSON_AddItemToArray(arr, o);
    snprintf(name, sizeof(name), "%s/%s", res->plural, sub);
    if (!cJSON_AddStringToObject(o, "name", name) ||
        !cJSON_AddStringToObject(o, "singularName", "") ||
        !cJSON_AddBoolToObject(o, "namespaced", res->namespaced))
        return -ENOMEM;
    if (group && (strcmp(group, res->group) != 0 || strcmp(version, res->version) != 0))
        if (!cJSON_AddStringToObject(o, "group", group) ||
            !cJSON_AddStringToObject(o, "version", version))
            return -ENOMEM;
    if (!cJSON_AddStringToObject(o, "kind", kind))
        return -ENOMEM;
    return add_verbs(o, verbs);
}

static int add_legacy_resource(cJSON *arr, const struct reg_resource *res)
{
    cJSON *o = cJSON_CreateObject();
    int rc;

    if (!o)
        return -ENOMEM;
    cJSON_AddItemToArray(arr, o);
    if (!cJSON_AddStringToObject(o, "name", res->plural) ||
        !cJSON_AddStringToObject(o, "singularName", res->singular) ||
        !cJSON_AddBoolToObject(o, "namespaced", res->namespaced) ||
        !cJSON_AddStringToObject(o, "kind", res->kind))
        return -ENOMEM;
    if ((rc = add_verbs(o, res->verbs)) || (rc = present__add_strv(o, "shortNames",
                                                                   res->short_names, true)) ||
        (rc = present__add_strv(o, "categories", res->categories, true)))
        return rc;
    return 0;
}

/* The subresources of res in name order: extras, status and scale merged. */
static int for_each_sub(const struct reg_resource *res,
                        int (*fn)(void *ctx, const struct reg_resource *res, const char *sub,
                                  const char *group, const char *version, const char *kind,
                                  unsigned verbs),
                        void *ctx)
{
    const char *done = "";
    int rc;

    for (;;) {
        const char *best = NULL, *g = NULL, *v = NULL, *k = NULL;
        unsigned verbs = 0;
        for (size_t i = 0; i < res->n_subresources; i++) {
            const struct reg_subresource *s = &res->subresources[i];
            if (strcmp(s->name, done) > 0 && (!best || strcmp(s->name, best) < 0))
                best = s->name, g = s->group, v = s->version, k = s->kind, verbs = s->verbs;
        }
        if (res->has_scale && strcmp("scale", done) > 0 && (!best || strcmp("scale", best) < 0))
            best = "scale", g = "autoscaling", v = "v1", k = "Scale",
            verbs = REG_GET | REG_PATCH | REG_UPDATE;
        if (res->has_status && strcmp("status", done) > 0 &&
            (!best || strcmp("status", best) < 0))
            best = "status", g = res->group, v = res->version, k = res->kind,
            verbs = REG_GET | REG_PATCH | REG_UPDATE;
        if (!best)
            return 0;
        if ((rc = fn(ctx, res, best, g, v, k, verbs)) < 0)
            return rc;
        done = best;
    }
}

static int legacy_sub_cb(void *ctx, const struct reg_resource *res, const char *sub,
                         const char *group, const char *version, const char *kind,
                         unsigned verbs)
{
    return add_legacy_sub(ctx, res, sub, group, version, kind, verbs);
}

int present_resource_list(const struct registry *r, const char *group, const char *version,
                          struct buf *out)
{
    const struct reg_resource *res[PRESENT_MAX_RESOURCES];
    size_t n = gv_resources(r, group, version, res, PRESENT_MAX_RESOURCES);
    cJSON *doc, *arr;
    char gv[600];
    int rc = -ENOMEM;

    if (n == 0)
        return -ENOENT;
    snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
    doc = cJSON_CreateObject();
    if (!doc || !cJSON_AddStringToObject(doc, "kind", "APIResourceList") ||
        !cJSON_AddStringToObject(doc, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(doc, "groupVersion", gv) ||
        !(arr = cJSON_AddArrayToObject(doc, "resources")))
        goto out;
    for (size_t i = 0; i < n; i++)
        if ((rc = add_legacy_resource(arr, res[i])) < 0 ||
            (rc = for_each_sub(res[i], legacy_sub_cb, arr)) < 0)
            goto out;
    rc = present__print(doc, out);
out:
    cJSON_Delete(doc);
    return rc;
}

/* ---- aggregated discovery ------------------------------------------------------------ */

static cJSON *response_kind(const char *group, const char *version, const char *kind)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "group", group) ||
        !cJSON_AddStringToObject(o, "version", version) ||
        !cJSON_AddStringToObject(o, "kind", kind)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int agg_sub_cb(void *ctx, const struct reg_resource *res, const char *sub,
                      const char *group, const char *version, const char *kind, unsigned verbs)
{
    cJSON *o = cJSON_CreateObject(), *rk;
    (void)res;

    if (!o)
        return -ENOMEM;
    cJSON_AddItemToArray(ctx, o);
    if (!cJSON_AddStringToObject(o, "subresource", sub) ||
        !(rk = response_kind(group, version, kind)))
        return -ENOMEM;
    cJSON_AddItemToObject(o, "responseKind", rk);
    return add_verbs(o, verbs);
}

static int add_agg_resource(cJSON *arr, const struct reg_resource *res)
{
    cJSON *o = cJSON_CreateObject(), *rk, *subs;
    int rc;

    if (!o)
        return -ENOMEM;
    cJSON_AddItemToArray(arr, o);
    if (!cJSON_AddStringToObject(o, "resource", res->plural) ||
        !(rk = response_kind(res->group, res->version, res->kind)))
        return -ENOMEM;
    cJSON_AddItemToObject(o, "responseKind", rk);
    if (!cJSON_AddStringToObject(o, "scope", res->namespaced ? "Namespaced" : "Cluster") ||
        !cJSON_AddStringToObject(o, "singularResource", res->singular))
        return -ENOMEM;
    if ((rc = add_verbs(o, res->verbs)) ||
        (rc = present__add_strv(o, "shortNames", res->short_names, true)) ||
        (rc = present__add_strv(o, "categories", res->categories, true)))
        return rc;
    if (!res->has_status && !res->has_scale && !res->n_subresources)
        return 0;
    if (!(subs = cJSON_AddArrayToObject(o, "subresources")))
        return -ENOMEM;
    return for_each_sub(res, agg_sub_cb, subs);
}

static int add_agg_group(const struct registry *r, cJSON *items, const char *group)
{
    const char *versions[PRESENT_MAX_VERSIONS];
    const struct reg_resource *res[PRESENT_MAX_RESOURCES];
    size_t nv = present__group_versions(r, group, versions, PRESENT_MAX_VERSIONS);
    cJSON *g = cJSON_CreateObject(), *meta, *vs;
    int rc;

    if (!g)
        return -ENOMEM;
    cJSON_AddItemToArray(items, g);
    if (!(meta = cJSON_AddObjectToObject(g, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", group) ||
        !cJSON_AddNullToObject(meta, "creationTimestamp") ||
        !(vs = cJSON_AddArrayToObject(g, "versions")))
        return -ENOMEM;
    for (size_t i = 0; i < nv; i++) {
        size_t n = gv_resources(r, group, versions[i], res, PRESENT_MAX_RESOURCES);
        cJSON *v = cJSON_CreateObject(), *arr;
        if (!v)
            return -ENOMEM;
        cJSON_AddItemToArray(vs, v);
        if (!cJSON_AddStringToObject(v, "version", versions[i]) ||
            !(arr = cJSON_AddArrayToObject(v, "resources")))
            return -ENOMEM;
        for (size_t j = 0; j < n; j++)
            if ((rc = add_agg_resource(arr, res[j])) < 0)
                return rc;
        if (!cJSON_AddStringToObject(v, "freshness", "Current"))
            return -ENOMEM;
    }
    return 0;
}

int present_aggregated(const struct registry *r, bool core, bool v2beta1, struct buf *out)
{
    const char *groups[PRESENT_MAX_GROUPS];
    size_t ng = present__groups(r, groups, PRESENT_MAX_GROUPS);
    cJSON *doc = cJSON_CreateObject(), *items;
    int rc = -ENOMEM;

    if (!doc || !cJSON_AddStringToObject(doc, "kind", "APIGroupDiscoveryList") ||
        !cJSON_AddStringToObject(doc, "apiVersion", v2beta1 ? "apidiscovery.k8s.io/v2beta1"
                                                            : "apidiscovery.k8s.io/v2") ||
        !cJSON_AddObjectToObject(doc, "metadata") ||
        !(items = cJSON_AddArrayToObject(doc, "items")))
        goto out;
    for (size_t i = 0; i < ng; i++) {
        if ((*groups[i] == '\0') != core)
            continue;
        if ((rc = add_agg_group(r, items, groups[i])) < 0)
            goto out;
    }
    rc = present__print(doc, out);
out:
    cJSON_Delete(doc);
    return rc;
}

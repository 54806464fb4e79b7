/*
 * present_openapi.c - the OpenAPI documents kubectl downloads:
 *
 *   /openapi/v2  a gnostic openapi_v2.Document in protobuf (field numbers from
 *                gnostic's OpenAPIv2.proto), with a definition per custom resource
 *                kind so kubectl 1.20's client-side validation and `explain` know
 *                them. Built-in kinds are deliberately absent: kubectl then skips
 *                client-side validation for them and takes strategic-merge metadata
 *                from its compiled types, which is always right.
 *   /openapi/v3  the root listing one document per custom resource group-version
 *                (again no built-in group-versions, for the same reason: kubectl 1.33
 *                would compute strategic merge patches from any api/v1 we served),
 *                and those documents: components.schemas per kind and paths whose
 *                operations declare the dryRun/fieldValidation query parameters, so
 *                kubectl trusts server-side validation.
 *
 * Schemas are converted recursively with a depth bound; anything v2 cannot express
 * (int-or-string, preserve-unknown-fields, nullable) is published untyped, as the
 * real apiextensions server does, so kubectl accepts any value there.
 */
#include "kubesim/present/present.h"
#include "kubesim/present/internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_MAX_DEPTH 64

/* ---- protobuf writer -------------------------------------------------------- */

static int pb_varint(struct buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;

    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    return buf_append(b, tmp, n);
}

static int pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
    int rc;

    if ((rc = pb_varint(b, (uint64_t)field << 3 | 2)) || (rc = pb_varint(b, n)))
        return rc;
    return buf_append(b, p, n);
}

static int pb_string(struct buf *b, unsigned field, const char *s)
{
    return pb_bytes(b, field, s, strlen(s));
}

static int pb_msg(struct buf *b, unsigned field, const struct buf *m)
{
    return pb_bytes(b, field, m->len ? m->data : "", m->len);
}

/* ---- schema naming ---------------------------------------------------------- */

/* "ray.io", "v1", "RayCluster" -> "io.ray.v1.RayCluster" (reversed group, as the API
 * server names definitions). */
static void definition_name(const struct reg_resource *res, const char *suffix, char *out,
                            size_t outlen)
{
    char g[REG_MAX_NAME_LEN + 1];
    size_t n = 0;
    const char *end;

    snprintf(g, sizeof(g), "%s", res->group);
    out[0] = '\0';
    end = g + strlen(g);
    while (end > g) {
        const char *dot = end;
        while (dot > g && dot[-1] != '.')
            dot--;
        n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "%.*s.", (int)(end - dot),
                              dot);
        end = dot > g ? dot - 1 : g;
        if (n >= outlen)
            break;
    }
    if (n < outlen)
        snprintf(out + n, outlen - n, "%s.%s%s", res->version, res->kind, suffix);
}

/* ---- v2: JSON schema -> protobuf Schema ---------------------------------------- */

static bool untyped(const cJSON *s)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-int-or-string")) ||
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-preserve-unknown-fields")) ||
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "x-kubernetes-embedded-resource")) ||
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "nullable"));
}

static int v2_schema(const cJSON *s, int depth, struct buf *out);

static int v2_named_schema(struct buf *out, unsigned field, const char *name, const cJSON *s,
                           int depth)
{
    struct buf ns = { 0 }, sch = { 0 };
    int rc;

    if ((rc = v2_schema(s, depth + 1, &sch)) || (rc = pb_string(&ns, 1, name)) ||
        (rc = pb_msg(&ns, 2, &sch)))
        goto out;
    rc = pb_msg(out, field, &ns);
out:
    buf_free(&ns);
    buf_free(&sch);
    return rc;
}

static int v2_schema(const cJSON *s, int depth, struct buf *out)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(s, "description");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *it;
    struct buf tmp = { 0 }, sub = { 0 };
    int rc = 0;

    if (!cJSON_IsObject(s) || depth > SCHEMA_MAX_DEPTH)
        return 0;   /* an empty Schema: anything goes */
    if (cJSON_IsString(desc) && (rc = pb_string(out, 4, desc->valuestring)))
        goto out;
    if (untyped(s) || !cJSON_IsString(type))
        goto out;
    /* An array without items cannot be modelled by kubectl: publish it untyped. */
    if (strcmp(type->valuestring, "array") == 0 && !cJSON_IsObject(items))
        goto out;
    if (cJSON_IsString(fmt) && (rc = pb_string(out, 2, fmt->valuestring)))
        goto out;
    if (!cJSON_IsArray(req))
        req = NULL;
    cJSON_ArrayForEach(it, req) {
        const cJSON *prop = cJSON_GetObjectItemCaseSensitive(props, cJSON_IsString(it) ?
                                                             it->valuestring : "");
        /* Like the API server, drop required fields that have a default: the server
         * fills them in, so kubectl must not reject a manifest that omits them. */
        if (!cJSON_IsString(it) || cJSON_GetObjectItemCaseSensitive(prop, "default"))
            continue;
        if ((rc = pb_string(out, 19, it->valuestring)))
            goto out;
    }
    if (strcmp(type->valuestring, "object") == 0 && cJSON_IsObject(addl) &&
        !cJSON_IsObject(props)) {
        if ((rc = v2_schema(addl, depth + 1, &sub)) || (rc = pb_msg(&tmp, 1, &sub)) ||
            (rc = pb_msg(out, 21, &tmp)))
            goto out;
        buf_reset(&tmp);
        buf_reset(&sub);
    }
    if ((rc = pb_string(&tmp, 1, type->valuestring)) || (rc = pb_msg(out, 22, &tmp)))
        goto out;
    buf_reset(&tmp);
    if (strcmp(type->valuestring, "array") == 0) {
        if ((rc = v2_schema(items, depth + 1, &sub)) || (rc = pb_msg(&tmp, 1, &sub)) ||
            (rc = pb_msg(out, 23, &tmp)))
            goto out;
        buf_reset(&tmp);
    }
    if (cJSON_IsObject(props) && props->child) {
        cJSON_ArrayForEach(it, props)
            if ((rc = v2_named_schema(&tmp, 1, it->string, it, depth)))
                goto out;
        rc = pb_msg(out, 25, &tmp);
    }
out:
    buf_free(&tmp);
    buf_free(&sub);
    return rc;
}

/* NamedAny x-kubernetes-group-version-kind with the YAML list kube-openapi parses. */
static int v2_gvk_extension(const struct reg_resource *res, struct buf *out)
{
    struct buf any = { 0 }, named = { 0 }, yaml = { 0 };
    int rc;

    if ((rc = buf_printf(&yaml, "- group: \"%s\"\n  kind: %s\n  version: %s\n", res->group,
                         res->kind, res->version)) ||
        (rc = pb_string(&any, 2, yaml.data)) ||
        (rc = pb_string(&named, 1, "x-kubernetes-group-version-kind")) ||
        (rc = pb_msg(&named, 2, &any)))
        goto out;
    rc = pb_msg(out, 31, &named);
out:
    buf_free(&any);
    buf_free(&named);
    buf_free(&yaml);
    return rc;
}

/* The CRD schema with apiVersion/kind/metadata guaranteed, as the server publishes it. */
static cJSON *wrapped_schema(const struct reg_resource *res)
{
    cJSON *s = cJSON_Duplicate(res->openapi_schema, 1), *props, *meta;

    if (!s)
        return NULL;
    if (!cJSON_GetObjectItemCaseSensitive(s, "type"))
        cJSON_AddStringToObject(s, "type", "object");
    props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    if (!cJSON_IsObject(props)) {
        cJSON_DeleteItemFromObjectCaseSensitive(s, "properties");
        props = cJSON_AddObjectToObject(s, "properties");
    }
    if (!props)
        goto fail;
    if (!cJSON_GetObjectItemCaseSensitive(props, "apiVersion"))
        cJSON_AddItemToObject(props, "apiVersion",
                              cJSON_Parse("{\"type\":\"string\",\"description\":\"APIVersion "
                                          "defines the versioned schema of this object.\"}"));
    if (!cJSON_GetObjectItemCaseSensitive(props, "kind"))
        cJSON_AddItemToObject(props, "kind",
                              cJSON_Parse("{\"type\":\"string\",\"description\":\"Kind is the "
                                          "REST resource this object represents.\"}"));
    /* metadata is validated by the server; publishing it as a bare object keeps the
     * document free of references to ObjectMeta we would otherwise have to define. */
    cJSON_DeleteItemFromObjectCaseSensitive(props, "metadata");
    meta = cJSON_Parse("{\"type\":\"object\",\"description\":\"Standard object's metadata. More "
                       "info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                       "api-conventions.md#metadata\"}");
    if (!meta)
        goto fail;
    cJSON_AddItemToObject(props, "metadata", meta);
    return s;
fail:
    cJSON_Delete(s);
    return NULL;
}

int present_openapi_v2(const struct registry *r, struct buf *out)
{
    struct buf info = { 0 }, defs = { 0 }, named = { 0 }, sch = { 0 }, empty = { 0 };
    char name[600];
    int rc;

    if ((rc = pb_string(out, 1, "2.0")) || (rc = pb_string(&info, 1, "Kubernetes")) ||
        (rc = pb_string(&info, 2, "v1.33.0")) || (rc = pb_msg(out, 2, &info)) ||
        (rc = pb_msg(out, 8, &empty)))
        goto out;
    for (size_t i = 0; i < registry_count(r); i++) {
        const struct reg_resource *res = registry_at(r, i);
        cJSON *s;
        if (res->builtin || !res->openapi_schema)
            continue;
        if (!(s = wrapped_schema(res))) {
            rc = -ENOMEM;
            goto out;
        }
        definition_name(res, "", name, sizeof(name));
        buf_reset(&named);
        buf_reset(&sch);
        rc = v2_schema(s, 0, &sch);
        cJSON_Delete(s);
        if (rc || (rc = v2_gvk_extension(res, &sch)) || (rc = pb_string(&named, 1, name)) ||
            (rc = pb_msg(&named, 2, &sch)) || (rc = pb_msg(&defs, 1, &named)))
            goto out;
    }
    if (defs.len)
        rc = pb_msg(out, 9, &defs);
out:
    buf_free(&info);
    buf_free(&defs);
    buf_free(&named);
    buf_free(&sch);
    return rc;
}

/* ---- v3 ----------------------------------------------------------------------- */

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void gv_path(const char *group, const char *version, char *out, size_t outlen)
{
    if (*group)
        snprintf(out, outlen, "apis/%s/%s", group, version);
    else
        snprintf(out, outlen, "api/%s", version);
}

static cJSON *gvk_obj(const struct reg_resource *res)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "group", res->group) ||
        !cJSON_AddStringToObject(o, "kind", res->kind) ||
        !cJSON_AddStringToObject(o, "version", res->version)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int add_param(cJSON *params, const char *name, const char *in, bool required,
                     const char *desc)
{
    cJSON *p = cJSON_CreateObject(), *schema;

    if (!p)
        return -ENOMEM;
    cJSON_AddItemToArray(params, p);
    if (!cJSON_AddStringToObject(p, "name", name) || !cJSON_AddStringToObject(p, "in", in) ||
        !cJSON_AddStringToObject(p, "description", desc) ||
        (required && !cJSON_AddTrueToObject(p, "required")) ||
        !(schema = cJSON_AddObjectToObject(p, "schema")) ||
        !cJSON_AddStringToObject(schema, "type", "string") ||
        !cJSON_AddTrueToObject(p, "uniqueItems"))
        return -ENOMEM;
    return 0;
}

enum { P_DRYRUN = 1, P_FV = 2, P_FM = 4, P_FORCE = 8 };

/* One operation object for method on a path, tagged with the GVK kubectl matches on. */
static int add_op(cJSON *path, const char *method, const char *action, const char *op_id,
                  const struct reg_resource *res, const char *ref, unsigned params)
{
    cJSON *op = cJSON_AddObjectToObject(path, method), *ps, *resp, *ok, *content, *json,
          *schema, *gvk;
    int rc;

    if (!op || !cJSON_AddStringToObject(op, "operationId", op_id) ||
        !(ps = cJSON_AddArrayToObject(op, "parameters")))
        return -ENOMEM;
    if ((params & P_DRYRUN) &&
        (rc = add_param(ps, "dryRun", "query", false,
                        "When present, indicates that modifications should not be persisted.")))
        return rc;
    if ((params & P_FM) &&
        (rc = add_param(ps, "fieldManager", "query", false,
                        "fieldManager is a name associated with the actor or entity that is "
                        "making these changes.")))
        return rc;
    if ((params & P_FV) &&
        (rc = add_param(ps, "fieldValidation", "query", false,
                        "fieldValidation instructs the server on how to handle objects in the "
                        "request containing unknown or duplicate fields: Ignore, Warn or "
                        "Strict.")))
        return rc;
    if ((params & P_FORCE) &&
        (rc = add_param(ps, "force", "query", false,
                        "Force is going to \"force\" Apply requests.")))
        return rc;
    if (!(resp = cJSON_AddObjectToObject(op, "responses")) ||
        !(ok = cJSON_AddObjectToObject(resp, "200")) ||
        !cJSON_AddStringToObject(ok, "description", "OK") ||
        !(content = cJSON_AddObjectToObject(ok, "content")) ||
        !(json = cJSON_AddObjectToObject(content, "application/json")) ||
        !(schema = cJSON_AddObjectToObject(json, "schema")) ||
        !cJSON_AddStringToObject(schema, "$ref", ref) ||
        !cJSON_AddStringToObject(op, "x-kubernetes-action", action) ||
        !(gvk = gvk_obj(res)))
        return -ENOMEM;
    cJSON_AddItemToObject(op, "x-kubernetes-group-version-kind", gvk);
    return 0;
}

/* The operations of a resource's three paths, in the order the real document
 * lists them; operationId is verb + Kind + suffix ("listPod", "patchPodStatus"). */
enum op_path { OP_COLLECTION, OP_ITEM, OP_STATUS };
static const struct op_spec {
    enum op_path path;
    const char *method, *action, *verb, *suffix;
    bool list;                     /* answers the List type */
    unsigned params;
} OPS[] = {
    { OP_COLLECTION, "get", "list", "list", "", true, 0 },
    { OP_COLLECTION, "post", "post", "create", "", false, P_DRYRUN | P_FM | P_FV },
    { OP_COLLECTION, "delete", "deletecollection", "deletecollection", "", false, P_DRYRUN },
    { OP_ITEM, "get", "get", "read", "", false, 0 },
    { OP_ITEM, "put", "put", "replace", "", false, P_DRYRUN | P_FM | P_FV },
    { OP_ITEM, "patch", "patch", "patch", "", false, P_DRYRUN | P_FM | P_FV | P_FORCE },
    { OP_ITEM, "delete", "delete", "delete", "", false, P_DRYRUN },
    { OP_STATUS, "get", "get", "read", "Status", false, 0 },
    { OP_STATUS, "put", "put", "replace", "Status", false, P_DRYRUN | P_FM | P_FV },
    { OP_STATUS, "patch", "patch", "patch", "Status", false, P_DRYRUN | P_FM | P_FV | P_FORCE },
};

static int add_ops(cJSON *path, enum op_path which, const struct reg_resource *res,
                   const char *ref, const char *list_ref)
{
    char op[300];
    int rc;

    for (size_t i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++) {
        const struct op_spec *o = &OPS[i];
        if (o->path != which)
            continue;
        snprintf(op, sizeof(op), "%s%s%s", o->verb, res->kind, o->suffix);
        if ((rc = add_op(path, o->method, o->action, op, res, o->list ? list_ref : ref,
                         o->params)))
            return rc;
    }
    return 0;
}

static int add_paths(cJSON *paths, const struct reg_resource *res, const char *def,
                     const char *list_def)
{
    char base[700], coll[800], item[816], status[832];
    char ref[700], list_ref[700];
    cJSON *pc, *pi, *ps, *params;
    int rc;

    if (*res->group)
        snprintf(base, sizeof(base), "/apis/%s/%s", res->group, res->version);
    else
        snprintf(base, sizeof(base), "/api/%s", res->version);
    snprintf(coll, sizeof(coll), "%s%s/%s", base, res->namespaced ? "/namespaces/{namespace}" : "",
             res->plural);
    snprintf(item, sizeof(item), "%s/{name}", coll);
    snprintf(status, sizeof(status), "%s/status", item);
    snprintf(ref, sizeof(ref), "#/components/schemas/%s", def);
    snprintf(list_ref, sizeof(list_ref), "#/components/schemas/%s", list_def);
    if (!(pc = cJSON_AddObjectToObject(paths, coll)) ||
        !(pi = cJSON_AddObjectToObject(paths, item)))
        return -ENOMEM;
    if ((rc = add_ops(pc, OP_COLLECTION, res, ref, list_ref)) ||
        (rc = add_ops(pi, OP_ITEM, res, ref, list_ref)))
        return rc;
    /* path-level parameters: name and namespace */
    for (int i = 0; i < 2; i++) {
        cJSON *p = i ? pi : pc;
        if (!(params = cJSON_AddArrayToObject(p, "parameters")))
            return -ENOMEM;
        if (i && (rc = add_param(params, "name", "path", true, "name of the resource")))
            return rc;
        if (res->namespaced &&
            (rc = add_param(params, "namespace", "path", true,
                            "object name and auth scope, such as for teams and projects")))
            return rc;
    }
    if (!res->has_status)
        return 0;
    if (!(ps = cJSON_AddObjectToObject(paths, status)))
        return -ENOMEM;
    if ((rc = add_ops(ps, OP_STATUS, res, ref, list_ref)))
        return rc;
    if (!(params = cJSON_AddArrayToObject(ps, "parameters")) ||
        (rc = add_param(params, "name", "path", true, "name of the resource")) ||
        (res->namespaced && (rc = add_param(params, "namespace", "path", true,
                                            "object name and auth scope"))))
        return rc ? rc : -ENOMEM;
    return 0;
}

/* Builds the document of one custom group-version; NULL doc when nothing is there. */
static int v3_gv_doc(const struct registry *r, const char *group, const char *version,
                     cJSON **out)
{
    cJSON *doc = cJSON_CreateObject(), *info, *paths, *comps, *schemas;
    char def[600], list_def[620];
    bool any = false;
    int rc = -ENOMEM;

    *out = NULL;
    if (!doc || !cJSON_AddStringToObject(doc, "openapi", "3.0.0") ||
        !(info = cJSON_AddObjectToObject(doc, "info")) ||
        !cJSON_AddStringToObject(info, "title", "Kubernetes CRD Swagger") ||
        !cJSON_AddStringToObject(info, "version", "v0.1.0") ||
        !(paths = cJSON_AddObjectToObject(doc, "paths")) ||
        !(comps = cJSON_AddObjectToObject(doc, "components")) ||
        !(schemas = cJSON_AddObjectToObject(comps, "schemas")))
        goto out;
    for (size_t i = 0; i < registry_count(r); i++) {
        const struct reg_resource *res = registry_at(r, i);
        cJSON *s, *gvks, *list, *lgvks;
        if (res->builtin || !res->openapi_schema || strcmp(res->group, group) != 0 ||
            strcmp(res->version, version) != 0)
            continue;
        any = true;
        definition_name(res, "", def, sizeof(def));
        definition_name(res, "List", list_def, sizeof(list_def));
        if (!(s = wrapped_schema(res)))
            goto out;
        cJSON_AddItemToObject(schemas, def, s);
        if (!(gvks = cJSON_AddArrayToObject(s, "x-kubernetes-group-version-kind")))
            goto out;
        cJSON_AddItemToArray(gvks, gvk_obj(res));
        list = cJSON_CreateObject();
        if (!list)
            goto out;
        cJSON_AddItemToObject(schemas, list_def, list);
        char items_ref[700];
        snprintf(items_ref, sizeof(items_ref),
                 "{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/%s\"}}", def);
        cJSON *props = cJSON_AddObjectToObject(list, "properties");
        if (!props || !cJSON_AddStringToObject(list, "type", "object"))
            goto out;
        cJSON_AddItemToObject(props, "apiVersion", cJSON_Parse("{\"type\":\"string\"}"));
        cJSON_AddItemToObject(props, "kind", cJSON_Parse("{\"type\":\"string\"}"));
        cJSON_AddItemToObject(props, "metadata", cJSON_Parse("{\"type\":\"object\"}"));
        cJSON_AddItemToObject(props, "items", cJSON_Parse(items_ref));
        cJSON *lg = gvk_obj(res);
        if (!(lgvks = cJSON_AddArrayToObject(list, "x-kubernetes-group-version-kind")) || !lg ||
            !cJSON_ReplaceItemInObject(lg, "kind", cJSON_CreateString(res->list_kind))) {
            cJSON_Delete(lg);
            goto out;
        }
        cJSON_AddItemToArray(lgvks, lg);
        if ((rc = add_paths(paths, res, def, list_def)) < 0)
            goto out;
        rc = -ENOMEM;
    }
    rc = 0;
    if (any) {
        *out = doc;
        doc = NULL;
    }
out:
    cJSON_Delete(doc);
    return rc;
}

int present_openapi_v3_root(const struct registry *r, struct buf *out)
{
    const char *groups[PRESENT_MAX_GROUPS], *versions[PRESENT_MAX_VERSIONS];
    size_t ng = present__groups(r, groups, PRESENT_MAX_GROUPS);
    cJSON *root = cJSON_CreateObject(), *paths;
    int rc = -ENOMEM;

    if (!root || !(paths = cJSON_AddObjectToObject(root, "paths")))
        goto out;
    for (size_t i = 0; i < ng; i++) {
        size_t nv = present__group_versions(r, groups[i], versions, PRESENT_MAX_VERSIONS);
        for (size_t j = 0; j < nv; j++) {
            struct buf doc = { 0 };
            cJSON *d, *entry;
            char path[600], url[700];
            if ((rc = v3_gv_doc(r, groups[i], versions[j], &d)) < 0)
                goto out;
            if (!d)
                continue;
            rc = present__print(d, &doc);
            cJSON_Delete(d);
            if (rc < 0) {
                buf_free(&doc);
                goto out;
            }
            gv_path(groups[i], versions[j], path, sizeof(path));
            snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%016llX", path,
                     (unsigned long long)fnv1a(doc.data, doc.len));
            buf_free(&doc);
            rc = -ENOMEM;
            if (!(entry = cJSON_AddObjectToObject(paths, path)) ||
                !cJSON_AddStringToObject(entry, "serverRelativeURL", url))
                goto out;
        }
    }
    rc = present__print(root, out);
out:
    cJSON_Delete(root);
    return rc;
}

int present_openapi_v3_path(const struct registry *r, const char *path, struct buf *out)
{
    char group[REG_MAX_NAME_LEN + 1], version[REG_MAX_NAME_LEN + 1];
    const char *p, *slash;
    cJSON *doc;
    int rc;

    if (!path)
        return -ENOENT;
    if (strncmp(path, "apis/", 5) == 0) {
        p = path + 5;
        slash = strchr(p, '/');
        if (!slash || (size_t)(slash - p) >= sizeof(group) || strchr(slash + 1, '/') ||
            strlen(slash + 1) >= sizeof(version))
            return -ENOENT;
        memcpy(group, p, (size_t)(slash - p));
        group[slash - p] = '\0';
        strcpy(version, slash + 1);
    } else if (strncmp(path, "api/", 4) == 0) {
        if (strchr(path + 4, '/') || strlen(path + 4) >= sizeof(version))
            return -ENOENT;
        group[0] = '\0';
        strcpy(version, path + 4);
    } else {
        return -ENOENT;
    }
    if (!*version)
        return -ENOENT;
    if ((rc = v3_gv_doc(r, group, version, &doc)) < 0)
        return rc;
    if (!doc)
        return -ENOENT;
    rc = present__print(doc, out);
    cJSON_Delete(doc);
    return rc;
}

/*
 * registry_crd.c - customresourcedefinitions as apiextensions-apiserver treats
 * them: validation with field-level causes, registration of every served version
 * as a resource (subresources, names, printer columns, compiled schema) and the
 * status the server writes back (acceptedNames, NamesAccepted/Established,
 * storedVersions).
 *
 * CRD objects come from clients, so every access is type-checked and bounded
 * (REG_MAX_* in registry.h); anything unexpected is a cause, never a crash.
 */
#include "kobj/kobj.h"
#include "kubesim/schema/status_cause.h"
#include "kubesim/registry/internal.h"
#include "kubesim/schema/schema.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- validation ------------------------------------------------------------ */

/* Quotes s for a message, truncated so a huge value cannot flood the cause. */
static const char *shorten(const char *s, char out[80])
{
    size_t n = strlen(s);

    if (n < 72)
        return s;
    memcpy(out, s, 64);
    strcpy(out + 64, "...");
    return out;
}

/* RFC 1123 subdomain: dot-separated labels of [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 253. */
static bool is_dns1123_subdomain(const char *s)
{
    size_t n = strlen(s), lab = 0;

    if (n == 0 || n > REG_MAX_NAME_LEN)
        return false;
    for (size_t i = 0; i <= n; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (lab == 0 || s[i - 1] == '-')
                return false;
            lab = 0;
            continue;
        }
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '-'))
            return false;
        if (lab == 0 && c == '-')
            return false;
        lab++;
    }
    return true;
}

/* A lower-cased copy for the kind checks (kinds are CamelCase, validated as labels lower-cased). */
static void lower_copy(const char *s, char *out, size_t outlen)
{
    size_t i = 0;

    for (; s[i] && i + 1 < outlen; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

static int check_label(cJSON *causes, const char *field, const cJSON *v, bool required,
                       bool lower, int *bad)
{
    char tmp[80], low[REG_MAX_NAME_LEN + 2];

    if (!v || cJSON_IsNull(v)) {
        if (required) {
            *bad = 1;
            return status_cause_add(causes, "FieldValueRequired", field, "Required value");
        }
        return 0;
    }
    if (!cJSON_IsString(v)) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueTypeMismatch", field,
                         "Invalid value: must be a string");
    }
    if (required && !*v->valuestring) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueRequired", field, "Required value");
    }
    if (strlen(v->valuestring) > REG_MAX_NAME_LEN) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%s\": must be no more than 63 characters",
                         shorten(v->valuestring, tmp));
    }
    lower_copy(v->valuestring, low, sizeof(low));
    if (*v->valuestring && !kobj_dns1035_label(lower ? low : v->valuestring)) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: \"%s\": a DNS-1035 label must consist of lower case "
                         "alphanumeric characters or '-', start with an alphabetic character, "
                         "and end with an alphanumeric character",
                         shorten(v->valuestring, tmp));
    }
    return 0;
}

static int check_names(const cJSON *names, cJSON *causes, int *bad)
{
    static const char *const arrays[] = { "shortNames", "categories" };
    char field[64];
    int rc;

    if (!cJSON_IsObject(names)) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueRequired", "spec.names", "Required value");
    }
    if ((rc = check_label(causes, "spec.names.plural",
                          cJSON_GetObjectItemCaseSensitive(names, "plural"), true, false, bad)) ||
        (rc = check_label(causes, "spec.names.singular",
                          cJSON_GetObjectItemCaseSensitive(names, "singular"), false, false, bad)) ||
        (rc = check_label(causes, "spec.names.kind",
                          cJSON_GetObjectItemCaseSensitive(names, "kind"), true, true, bad)) ||
        (rc = check_label(causes, "spec.names.listKind",
                          cJSON_GetObjectItemCaseSensitive(names, "listKind"), false, true, bad)))
        return rc;
    if (kobj_str(names, "kind") && kobj_str(names, "listKind") &&
        strcmp(kobj_str(names, "kind"), kobj_str(names, "listKind")) == 0) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueInvalid", "spec.names.listKind",
                         "Invalid value: \"%.64s\": kind and listKind may not be the same",
                         kobj_str(names, "listKind"));
    }
    for (size_t a = 0; a < 2; a++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(names, arrays[a]), *it;
        int i = 0;
        if (!arr || cJSON_IsNull(arr))
            continue;
        snprintf(field, sizeof(field), "spec.names.%s", arrays[a]);
        if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > REG_MAX_NAMES) {
            *bad = 1;
            return status_cause_add(causes, "FieldValueInvalid", field,
                             "Invalid value: must be a list of at most %d strings",
                             REG_MAX_NAMES);
        }
        cJSON_ArrayForEach(it, arr) {
            snprintf(field, sizeof(field), "spec.names.%s[%d]", arrays[a], i++);
            if ((rc = check_label(causes, field, it, true, false, bad)))
                return rc;
        }
    }
    return 0;
}

static int check_column(const cJSON *col, const char *base, cJSON *causes, int *bad)
{
    static const char *const types[] = { "integer", "number", "string", "boolean", "date" };
    char field[160];
    const char *s;
    bool ok = false;
    const cJSON *prio;

    if (!cJSON_IsObject(col)) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueInvalid", base, "Invalid value: must be an object");
    }
    snprintf(field, sizeof(field), "%s.name", base);
    s = kobj_str(col, "name");
    if (!s || !*s || strlen(s) > REG_MAX_NAME_LEN) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueRequired", field, "Required value");
    }
    snprintf(field, sizeof(field), "%s.type", base);
    s = kobj_str(col, "type");
    for (size_t i = 0; s && i < 5; i++)
        ok |= strcmp(s, types[i]) == 0;
    if (!ok) {
        *bad = 1;
        return status_cause_add(causes, s ? "FieldValueNotSupported" : "FieldValueRequired", field,
                         s ? "Unsupported value: \"%.64s\": supported values: \"boolean\", "
                             "\"date\", \"integer\", \"number\", \"string\""
                           : "Required value%.0s", s ? s : "");
    }
    snprintf(field, sizeof(field), "%s.jsonPath", base);
    s = kobj_str(col, "jsonPath");
    if (!s || !*s || strlen(s) > 1024) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueRequired", field, "Required value");
    }
    prio = cJSON_GetObjectItemCaseSensitive(col, "priority");
    if (prio && !cJSON_IsNull(prio) && (!cJSON_IsNumber(prio) || prio->valuedouble < 0 ||
                                        prio->valuedouble > 2147483647.0)) {
        *bad = 1;
        snprintf(field, sizeof(field), "%s.priority", base);
        return status_cause_add(causes, "FieldValueInvalid", field,
                         "Invalid value: must be a non-negative integer");
    }
    return 0;
}

static int check_version(const cJSON *v, int idx, cJSON *causes, int *bad, int *storage,
                         const char **names, bool compile)
{
    char field[96], base[48];
    const cJSON *served, *stor, *schema, *subs, *cols, *it;
    struct schema *compiled = NULL;
    char err[256];
    int rc, i = 0;

    snprintf(base, sizeof(base), "spec.versions[%d]", idx);
    if (!cJSON_IsObject(v)) {
        *bad = 1;
        return status_cause_add(causes, "FieldValueInvalid", base, "Invalid value: must be an object");
    }
    snprintf(field, sizeof(field), "%s.name", base);
    if ((rc = check_label(causes, field, cJSON_GetObjectItemCaseSensitive(v, "name"), true,
                          false, bad)))
        return rc;
    names[idx] = kobj_str(v, "name");
    for (int j = 0; names[idx] && j < idx; j++)
        if (names[j] && strcmp(names[j], names[idx]) == 0) {
            *bad = 1;
            return status_cause_add(causes, "FieldValueInvalid", "spec.versions",
                             "Invalid value: must contain unique version names");
        }
    served = cJSON_GetObjectItemCaseSensitive(v, "served");
    stor = cJSON_GetObjectItemCaseSensitive(v, "storage");
    snprintf(field, sizeof(field), "%s.served", base);
    if (!cJSON_IsBool(served)) {
        *bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueRequired", field, "Required value")))
            return rc;
    }
    snprintf(field, sizeof(field), "%s.storage", base);
    if (!cJSON_IsBool(stor)) {
        *bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueRequired", field, "Required value")))
            return rc;
    } else if (cJSON_IsTrue(stor)) {
        (*storage)++;
    }
    schema = cJSON_GetObjectItemCaseSensitive(v, "schema");
    schema = cJSON_IsObject(schema) ? cJSON_GetObjectItemCaseSensitive(schema, "openAPIV3Schema")
                                    : NULL;
    snprintf(field, sizeof(field), "%s.schema.openAPIV3Schema", base);
    if (!cJSON_IsObject(schema)) {
        *bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueRequired", field,
                            "Required value: schemas are required")))
            return rc;
    } else if (compile && schema_compile(schema, &compiled, err, sizeof(err)) < 0) {
        *bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: %s", err)))
            return rc;
    } else if (compiled) {
        schema_free(compiled);
    }
    subs = cJSON_GetObjectItemCaseSensitive(v, "subresources");
    if (subs && !cJSON_IsNull(subs)) {
        const cJSON *scale = cJSON_GetObjectItemCaseSensitive(subs, "scale");
        snprintf(field, sizeof(field), "%s.subresources", base);
        if (!cJSON_IsObject(subs)) {
            *bad = 1;
            return status_cause_add(causes, "FieldValueInvalid", field, "Invalid value: must be an object");
        }
        if (scale && !cJSON_IsNull(scale)) {
            const char *sp = kobj_str(scale, "specReplicasPath");
            const char *st = kobj_str(scale, "statusReplicasPath");
            snprintf(field, sizeof(field), "%s.subresources.scale.specReplicasPath", base);
            if (!sp || strncmp(sp, ".spec.", 6) != 0 || strlen(sp) > 256) {
                *bad = 1;
                if ((rc = status_cause_add(causes, "FieldValueInvalid", field,
                                    "Invalid value: should be a json path under .spec")))
                    return rc;
            }
            snprintf(field, sizeof(field), "%s.subresources.scale.statusReplicasPath", base);
            if (!st || strncmp(st, ".status.", 8) != 0 || strlen(st) > 256) {
                *bad = 1;
                if ((rc = status_cause_add(causes, "FieldValueInvalid", field,
                                    "Invalid value: should be a json path under .status")))
                    return rc;
            }
        }
    }
    cols = cJSON_GetObjectItemCaseSensitive(v, "additionalPrinterColumns");
    if (cols && !cJSON_IsNull(cols)) {
        snprintf(field, sizeof(field), "%s.additionalPrinterColumns", base);
        if (!cJSON_IsArray(cols) || cJSON_GetArraySize(cols) > REG_MAX_COLUMNS) {
            *bad = 1;
            return status_cause_add(causes, "FieldValueInvalid", field,
                             "Invalid value: must be a list of at most %d columns",
                             REG_MAX_COLUMNS);
        }
        cJSON_ArrayForEach(it, cols) {
            snprintf(field, sizeof(field), "%s.additionalPrinterColumns[%d]", base, i++);
            if ((rc = check_column(it, field, causes, bad)))
                return rc;
        }
    }
    return 0;
}

/* compile false skips compiling the schemas: registry_add_crd compiles them anyway. */
static int validate_crd(const cJSON *crd, cJSON *causes, bool compile)
{
    const cJSON *meta, *spec, *versions, *it;
    const char *name, *group, *plural, *scope;
    const char *vnames[REG_MAX_VERSIONS] = { 0 };
    char tmp[80], want[2 * REG_MAX_NAME_LEN + 2];
    int bad = 0, storage = 0, rc, i = 0;

    if (!cJSON_IsObject(crd)) {
        rc = status_cause_add(causes, "FieldValueInvalid", "", "Invalid value: must be an object");
        return rc ? rc : -EINVAL;
    }
    meta = cJSON_GetObjectItemCaseSensitive(crd, "metadata");
    spec = cJSON_GetObjectItemCaseSensitive(crd, "spec");
    name = kobj_str(meta, "name");
    if (!cJSON_IsObject(spec)) {
        rc = status_cause_add(causes, "FieldValueRequired", "spec", "Required value");
        return rc ? rc : -EINVAL;
    }
    group = kobj_str(spec, "group");
    if (!group || !*group) {
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueRequired", "spec.group", "Required value")))
            return rc;
    } else if (!is_dns1123_subdomain(group)) {
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueInvalid", "spec.group",
                            "Invalid value: \"%s\": a lowercase RFC 1123 subdomain must consist "
                            "of lower case alphanumeric characters, '-' or '.'",
                            shorten(group, tmp))))
            return rc;
    } else if (!strchr(group, '.')) {
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueInvalid", "spec.group",
                            "Invalid value: \"%s\": should be a domain with at least one dot",
                            group)))
            return rc;
    }
    if ((rc = check_names(cJSON_GetObjectItemCaseSensitive(spec, "names"), causes, &bad)))
        return rc;
    plural = kobj_str(cJSON_GetObjectItemCaseSensitive(spec, "names"), "plural");
    if (plural && group && strlen(plural) + strlen(group) + 2 <= sizeof(want)) {
        size_t pl = strlen(plural);
        memcpy(want, plural, pl);
        want[pl] = '.';
        strcpy(want + pl + 1, group);
        if (!name || strcmp(name, want) != 0) {
            bad = 1;
            if ((rc = status_cause_add(causes, "FieldValueInvalid", "metadata.name",
                                "Invalid value: \"%s\": must be spec.names.plural+\".\"+spec.group",
                                name ? shorten(name, tmp) : "")))
                return rc;
        }
    }
    scope = kobj_str(spec, "scope");
    if (!scope || (strcmp(scope, "Namespaced") != 0 && strcmp(scope, "Cluster") != 0)) {
        bad = 1;
        if ((rc = scope ? status_cause_add(causes, "FieldValueNotSupported", "spec.scope",
                                    "Unsupported value: \"%s\": supported values: \"Cluster\", "
                                    "\"Namespaced\"", shorten(scope, tmp))
                        : status_cause_add(causes, "FieldValueRequired", "spec.scope", "Required value")))
            return rc;
    }
    versions = cJSON_GetObjectItemCaseSensitive(spec, "versions");
    if (!cJSON_IsArray(versions) || cJSON_GetArraySize(versions) == 0) {
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueRequired", "spec.versions",
                            "Required value: must have exactly one version marked as storage "
                            "version")))
            return rc;
    } else if (cJSON_GetArraySize(versions) > REG_MAX_VERSIONS) {
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueTooMany", "spec.versions",
                            "Too many: must have at most %d items", REG_MAX_VERSIONS)))
            return rc;
    } else {
        cJSON_ArrayForEach(it, versions) {
            if ((rc = check_version(it, i, causes, &bad, &storage, vnames, compile)))
                return rc;
            i++;
        }
        if (storage != 1) {
            bad = 1;
            if ((rc = status_cause_add(causes, "FieldValueInvalid", "spec.versions",
                                "Invalid value: must have exactly one version marked as storage "
                                "version")))
                return rc;
        }
    }
    return bad ? -EINVAL : 0;
}

int registry_validate_crd(const cJSON *crd, cJSON *causes)
{
    return validate_crd(crd, causes, true);
}

static bool str_eq(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool established(const cJSON *crd)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(crd, "status"), "conditions")) {
        if (str_eq(kobj_str(c, "type"), "Established") && str_eq(kobj_str(c, "status"), "True"))
            return true;
    }
    return false;
}

int registry_validate_crd_update(const cJSON *old, const cJSON *crd, cJSON *causes)
{
    const cJSON *ospec = cJSON_GetObjectItemCaseSensitive(old, "spec");
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(crd, "spec");
    const cJSON *onames = cJSON_GetObjectItemCaseSensitive(ospec, "names");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(spec, "names");
    const cJSON *stored, *sv, *v;
    bool names_fixed = established(old);
    struct {
        const char *field, *a, *b;
        bool check;
    } imm[] = {
        { "spec.group", kobj_str(spec, "group"), kobj_str(ospec, "group"), true },
        { "spec.names.plural", kobj_str(names, "plural"), kobj_str(onames, "plural"), true },
        { "spec.scope", kobj_str(spec, "scope"), kobj_str(ospec, "scope"), names_fixed },
        { "spec.names.kind", kobj_str(names, "kind"), kobj_str(onames, "kind"), names_fixed },
    };
    char tmp[80];
    int bad = 0, rc, i = 0;

    if (!cJSON_IsObject(old) || !cJSON_IsObject(crd))
        return -EINVAL;
    for (size_t k = 0; k < sizeof(imm) / sizeof(imm[0]); k++) {
        if (!imm[k].check || str_eq(imm[k].a, imm[k].b))
            continue;
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueInvalid", imm[k].field,
                            "Invalid value: \"%s\": field is immutable",
                            imm[k].a ? shorten(imm[k].a, tmp) : "")))
            return rc;
    }
    stored = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(old, "status"),
                                              "storedVersions");
    if (!cJSON_IsArray(stored))
        stored = NULL;
    cJSON_ArrayForEach(sv, stored) {
        bool found = false;
        char field[64];
        if (!cJSON_IsString(sv) || i >= REG_MAX_VERSIONS)
            break;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(spec, "versions"))
            found |= str_eq(kobj_str(v, "name"), sv->valuestring);
        snprintf(field, sizeof(field), "status.storedVersions[%d]", i++);
        if (found)
            continue;
        bad = 1;
        if ((rc = status_cause_add(causes, "FieldValueInvalid", field,
                            "Invalid value: \"%s\": must appear in spec.versions",
                            shorten(sv->valuestring, tmp))))
            return rc;
    }
    return bad ? -EINVAL : 0;
}

/* ---- registration ---------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Copies a JSON string array into a NULL-terminated heap array (empty when absent). */
static char **strv_from_json(const cJSON *arr)
{
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0, i = 0;
    const cJSON *it;
    char **v = calloc(n + 1, sizeof(*v));

    if (!v)
        return NULL;
    if (n)
        cJSON_ArrayForEach(it, arr) {
            if (!cJSON_IsString(it))
                continue;
            if (!(v[i++] = strdup(it->valuestring))) {
                registry__strv_free(v);
                return NULL;
            }
        }
    return v;
}

static int copy_columns(struct reg_resource *res, const cJSON *cols)
{
    const cJSON *it;
    size_t n = cJSON_IsArray(cols) ? (size_t)cJSON_GetArraySize(cols) : 0;

    if (!n)
        return 0;
    res->columns = calloc(n, sizeof(*res->columns));
    if (!res->columns)
        return -ENOMEM;
    cJSON_ArrayForEach(it, cols) {
        struct reg_column *c = &res->columns[res->n_columns++];
        const cJSON *prio = cJSON_GetObjectItemCaseSensitive(it, "priority");
        c->name = strdup(kobj_str(it, "name"));
        c->type = strdup(kobj_str(it, "type"));
        c->format = strdup(kobj_str(it, "format") ? kobj_str(it, "format") : "");
        c->description = strdup(kobj_str(it, "description") ? kobj_str(it, "description") : "");
        c->json_path = strdup(kobj_str(it, "jsonPath"));
        c->priority = cJSON_IsNumber(prio) ? (int)prio->valuedouble : 0;
        if (!c->name || !c->type || !c->format || !c->description || !c->json_path)
            return -ENOMEM;
    }
    return 0;
}

/* Builds the resource of one served version. *out owned by the caller. */
static int build_version(const cJSON *crd, const cJSON *v, struct reg_resource **out,
                         char *err, size_t errlen)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(crd, "spec");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(spec, "names");
    const cJSON *subs = cJSON_GetObjectItemCaseSensitive(v, "subresources");
    const cJSON *scale = cJSON_GetObjectItemCaseSensitive(subs, "scale");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(v, "schema"), "openAPIV3Schema");
    const char *kind = kobj_str(names, "kind"), *plural = kobj_str(names, "plural");
    const char *singular = kobj_str(names, "singular"), *list_kind = kobj_str(names, "listKind");
    struct reg_resource *res;
    char low[REG_MAX_NAME_LEN + 2];
    int rc = -ENOMEM;

    *out = NULL;
    res = calloc(1, sizeof(*res));
    if (!res)
        return -ENOMEM;
    if (!singular || !*singular) {
        lower_copy(kind, low, sizeof(low));
        singular = low;
    }
    res->group = strdup(kobj_str(spec, "group"));
    res->version = strdup(kobj_str(v, "name"));
    res->plural = strdup(plural);
    res->singular = strdup(singular);
    res->kind = strdup(kind);
    if (list_kind && *list_kind) {
        res->list_kind = strdup(list_kind);
    } else if ((res->list_kind = malloc(strlen(kind) + 5))) {
        strcpy(res->list_kind, kind);
        strcat(res->list_kind, "List");
    }
    res->crd_name = strdup(kobj_str(cJSON_GetObjectItemCaseSensitive(crd, "metadata"), "name"));
    res->short_names = strv_from_json(cJSON_GetObjectItemCaseSensitive(names, "shortNames"));
    res->categories = strv_from_json(cJSON_GetObjectItemCaseSensitive(names, "categories"));
    res->openapi_schema = cJSON_Duplicate(schema, 1);
    if (!res->group || !res->version || !res->plural || !res->singular || !res->kind ||
        !res->list_kind || !res->crd_name || !res->short_names || !res->categories ||
        !res->openapi_schema)
        goto out;
    res->namespaced = strcmp(kobj_str(spec, "scope"), "Namespaced") == 0;
    res->verbs = REG_ALL;
    res->has_status = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(subs, "status"));
    res->has_scale = cJSON_IsObject(scale);
    if (res->has_scale) {
        res->scale_spec_path = dup_or_null(kobj_str(scale, "specReplicasPath"));
        res->scale_status_path = dup_or_null(kobj_str(scale, "statusReplicasPath"));
        res->scale_selector_path = dup_or_null(kobj_str(scale, "labelSelectorPath"));
        if (!res->scale_spec_path || !res->scale_status_path)
            goto out;
    }
    res->storage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "storage"));
    res->deprecated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "deprecated"));
    if (res->deprecated) {
        const char *w = kobj_str(v, "deprecationWarning");
        char dflt[600];
        if (!w) {
            snprintf(dflt, sizeof(dflt), "%s/%s %s is deprecated", res->group, res->version,
                     res->kind);
            w = dflt;
        }
        if (!(res->deprecation_warning = strdup(w)))
            goto out;
    }
    res->flags = res->has_status ? REG_FLAG_SPEC_GENERATION : 0;
    if ((rc = copy_columns(res, cJSON_GetObjectItemCaseSensitive(v, "additionalPrinterColumns"))))
        goto out;
    rc = schema_compile(schema, &res->schema, err, errlen);
    if (rc < 0)
        goto out;
    *out = res;
    return 0;
out:
    if (rc == -ENOMEM && err && errlen)
        snprintf(err, errlen, "out of memory");
    registry__resource_free(res);
    return rc;
}

int registry_add_crd(struct registry *r, const cJSON *crd, char *err, size_t errlen)
{
    const cJSON *versions, *v;
    struct reg_resource *built[REG_MAX_VERSIONS] = { 0 };
    size_t n = 0;
    const char *name;
    int rc = 0;

    if (err && errlen)
        err[0] = '\0';
    if (validate_crd(crd, NULL, false) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "invalid CustomResourceDefinition");
        return -EINVAL;
    }
    name = kobj_str(cJSON_GetObjectItemCaseSensitive(crd, "metadata"), "name");
    versions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(crd, "spec"),
                                                "versions");
    /* Build everything first so a failure leaves the old registration in place. */
    cJSON_ArrayForEach(v, versions) {
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "served")))
            continue;
        if ((rc = build_version(crd, v, &built[n], err, errlen)) < 0)
            goto out;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        const struct reg_resource *clash = registry_find(r, built[i]->group, built[i]->version,
                                                         built[i]->plural);
        if (clash && (!clash->crd_name || strcmp(clash->crd_name, name) != 0)) {
            if (err && errlen)
                snprintf(err, errlen, "%s/%s %s is already served", built[i]->group,
                         built[i]->version, built[i]->plural);
            rc = -EEXIST;
            goto out;
        }
    }
    registry_remove_crd(r, name);
    for (size_t i = 0; i < n; i++) {
        if ((rc = registry__insert(r, built[i])) < 0)
            goto out;
        built[i] = NULL;
    }
    r->generation++;
out:
    for (size_t i = 0; i < n; i++)
        registry__resource_free(built[i]);
    return rc;
}

/* ---- status ---------------------------------------------------------------- */

static int set_condition(cJSON *conds, const char *type, const char *reason, const char *msg,
                         const char *now)
{
    cJSON *c = NULL, *it;

    cJSON_ArrayForEach(it, conds) {
        if (cJSON_IsObject(it) && kobj_str(it, "type") && strcmp(kobj_str(it, "type"), type) == 0) {
            c = it;
            break;
        }
    }
    if (c && kobj_str(c, "status") && strcmp(kobj_str(c, "status"), "True") == 0)
        return 0;   /* unchanged: keep its lastTransitionTime */
    if (!c) {
        if (!(c = cJSON_CreateObject()))
            return -ENOMEM;
        cJSON_AddItemToArray(conds, c);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(c, "type");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "status");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "lastTransitionTime");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "reason");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "message");
    if (!cJSON_AddStringToObject(c, "type", type) || !cJSON_AddStringToObject(c, "status", "True") ||
        !cJSON_AddStringToObject(c, "lastTransitionTime", now) ||
        !cJSON_AddStringToObject(c, "reason", reason) ||
        !cJSON_AddStringToObject(c, "message", msg))
        return -ENOMEM;
    return 0;
}

/* parent's member key as an object (array false) or an array; a member of another type is
 * replaced by an empty one, at the end. NULL when out of memory. */
static cJSON *member_of_type(cJSON *parent, const char *key, bool array)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(parent, key);

    if (array ? cJSON_IsArray(m) : cJSON_IsObject(m))
        return m;
    cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
    return array ? cJSON_AddArrayToObject(parent, key) : cJSON_AddObjectToObject(parent, key);
}

int registry_crd_set_status(cJSON *crd)
{
    cJSON *spec, *status, *accepted, *conds, *stored, *it;
    const cJSON *names, *versions, *v;
    char now[32];

    spec = cJSON_GetObjectItemCaseSensitive(crd, "spec");
    names = cJSON_GetObjectItemCaseSensitive(spec, "names");
    versions = cJSON_GetObjectItemCaseSensitive(spec, "versions");
    if (!cJSON_IsObject(crd) || !cJSON_IsObject(names) || !cJSON_IsArray(versions))
        return -EINVAL;
    if (!(status = member_of_type(crd, "status", false)))
        return -ENOMEM;
    util_format_time(time(NULL), now);
    /* acceptedNames: the names with the defaults filled in, as the server reports them. */
    cJSON_DeleteItemFromObjectCaseSensitive(status, "acceptedNames");
    if (!(accepted = cJSON_Duplicate(names, 1)))
        return -ENOMEM;
    cJSON_AddItemToObject(status, "acceptedNames", accepted);
    if (!kobj_str(accepted, "singular") && kobj_str(accepted, "kind")) {
        char low[REG_MAX_NAME_LEN + 2];
        lower_copy(kobj_str(accepted, "kind"), low, sizeof(low));
        if (!cJSON_AddStringToObject(accepted, "singular", low))
            return -ENOMEM;
    }
    if (!kobj_str(accepted, "listKind") && kobj_str(accepted, "kind")) {
        char lk[REG_MAX_NAME_LEN + 8];
        snprintf(lk, sizeof(lk), "%s", kobj_str(accepted, "kind"));
        strncat(lk, "List", sizeof(lk) - strlen(lk) - 1);
        if (!cJSON_AddStringToObject(accepted, "listKind", lk))
            return -ENOMEM;
    }
    if (!(conds = member_of_type(status, "conditions", true)))
        return -ENOMEM;
    if (set_condition(conds, "NamesAccepted", "NoConflicts", "no conflicts found", now) < 0 ||
        set_condition(conds, "Established", "InitialNamesAccepted",
                      "the initial names have been accepted", now) < 0)
        return -ENOMEM;
    /* storedVersions only grows: a version once stored may still exist in etcd. */
    if (!(stored = member_of_type(status, "storedVersions", true)))
        return -ENOMEM;
    cJSON_ArrayForEach(v, versions) {
        const char *vn = kobj_str(v, "name");
        bool have = false;
        if (!vn || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "storage")))
            continue;
        cJSON_ArrayForEach(it, stored)
            have |= cJSON_IsString(it) && strcmp(it->valuestring, vn) == 0;
        if (!have) {
            cJSON *s = cJSON_CreateString(vn);
            if (!s)
                return -ENOMEM;
            cJSON_AddItemToArray(stored, s);
        }
    }
    return 0;
}

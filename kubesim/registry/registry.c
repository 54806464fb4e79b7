/*
 * registry.c - the table of API types kubesim serves: creation with the built-in
 * types, lookups by (group, version, plural|kind), ordered iteration for discovery,
 * and the bookkeeping that keeps resource pointers valid across CRD changes.
 *
 * The built-in rows live in registry_builtin.c, CRD handling in registry_crd.c.
 * Resources of one group are kept adjacent (core first, then groups in the order
 * they were first registered) so discovery can walk the table once.
 */
#include "kubesim/registry/internal.h"
#include "kubesim/schema/schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const verb_names[8] = {
    /* sorted, as the API server lists them */
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
};
static const unsigned verb_bits[8] = {
    REG_CREATE, REG_DELETE, REG_DELETECOLLECTION, REG_GET, REG_LIST, REG_PATCH, REG_UPDATE,
    REG_WATCH,
};

size_t registry_verb_names(unsigned verbs, const char *out[8])
{
    size_t n = 0;

    for (size_t i = 0; i < 8; i++)
        if (verbs & verb_bits[i])
            out[n++] = verb_names[i];
    return n;
}

char **registry__strv_split(const char *csv)
{
    size_t n = 0, i = 0;
    const char *p, *e;
    char **v;

    if (csv && *csv)
        for (n = 1, p = csv; *p; p++)
            n += *p == ',';
    v = calloc(n + 1, sizeof(*v));
    if (!v)
        return NULL;
    for (p = csv; n && p; p = *e ? e + 1 : NULL) {
        e = strchr(p, ',');
        if (!e)
            e = p + strlen(p);
        v[i] = strndup(p, (size_t)(e - p));
        if (!v[i]) {
            registry__strv_free(v);
            return NULL;
        }
        i++;
    }
    return v;
}

void registry__strv_free(char **v)
{
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

void registry__resource_free(struct reg_resource *res)
{
    if (!res)
        return;
    free(res->group);
    free(res->version);
    free(res->plural);
    free(res->singular);
    free(res->kind);
    free(res->list_kind);
    registry__strv_free(res->short_names);
    registry__strv_free(res->categories);
    free(res->scale_spec_path);
    free(res->scale_status_path);
    free(res->scale_selector_path);
    for (size_t i = 0; i < res->n_columns; i++) {
        free(res->columns[i].name);
        free(res->columns[i].type);
        free(res->columns[i].format);
        free(res->columns[i].description);
        free(res->columns[i].json_path);
    }
    free(res->columns);
    for (size_t i = 0; i < res->n_subresources; i++) {
        free(res->subresources[i].name);
        free(res->subresources[i].group);
        free(res->subresources[i].version);
        free(res->subresources[i].kind);
    }
    free(res->subresources);
    if (res->schema)
        schema_free(res->schema);
    cJSON_Delete(res->openapi_schema);
    free(res->crd_name);
    free(res->deprecation_warning);
    free(res);
}

static int grow(struct reg_resource ***v, size_t *cap, size_t need)
{
    struct reg_resource **nv;
    size_t ncap;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    nv = realloc(*v, ncap * sizeof(**v));
    if (!nv)
        return -ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

int registry__insert(struct registry *r, struct reg_resource *res)
{
    size_t pos = r->n;

    if (grow(&r->items, &r->cap, r->n + 1) < 0)
        return -ENOMEM;
    for (size_t i = r->n; i > 0; i--)
        if (strcmp(r->items[i - 1]->group, res->group) == 0) {
            pos = i;
            break;
        }
    memmove(&r->items[pos + 1], &r->items[pos], (r->n - pos) * sizeof(*r->items));
    r->items[pos] = res;
    r->n++;
    r->generation++;
    return 0;
}

void registry_free(struct registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        registry__resource_free(r->items[i]);
    for (size_t i = 0; i < r->n_retired; i++)
        registry__resource_free(r->retired[i]);
    free(r->items);
    free(r->retired);
    free(r);
}

/* The served resource of group/version whose plural (by_kind false) or kind (true) is name. */
static const struct reg_resource *find_by(const struct registry *r, const char *group,
                                          const char *version, const char *name, bool by_kind)
{
    if (!r || !group || !version || !name)
        return NULL;
    for (size_t i = 0; i < r->n; i++) {
        const struct reg_resource *res = r->items[i];
        if (strcmp(by_kind ? res->kind : res->plural, name) == 0 &&
            strcmp(res->version, version) == 0 && strcmp(res->group, group) == 0)
            return res;
    }
    return NULL;
}

const struct reg_resource *registry_find(const struct registry *r, const char *group,
                                         const char *version, const char *plural)
{
    return find_by(r, group, version, plural, false);
}

const struct reg_resource *registry_find_kind(const struct registry *r, const char *group,
                                              const char *version, const char *kind)
{
    return find_by(r, group, version, kind, true);
}

/* Moves every resource of crd_name to the retired list. */
void registry_remove_crd(struct registry *r, const char *crd_name)
{
    size_t j = 0;
    bool changed = false;

    if (!r || !crd_name)
        return;
    for (size_t i = 0; i < r->n; i++) {
        struct reg_resource *res = r->items[i];
        if (res->crd_name && strcmp(res->crd_name, crd_name) == 0 &&
            grow(&r->retired, &r->cap_retired, r->n_retired + 1) == 0) {
            r->retired[r->n_retired++] = res;
            changed = true;
            continue;
        }
        /* On ENOMEM growing the retired list the resource simply stays served. */
        r->items[j++] = res;
    }
    r->n = j;
    if (changed)
        r->generation++;
}

size_t registry_count(const struct registry *r)
{
    return r ? r->n : 0;
}

const struct reg_resource *registry_at(const struct registry *r, size_t i)
{
    return r && i < r->n ? r->items[i] : NULL;
}

unsigned long registry_generation(const struct registry *r)
{
    return r ? r->generation : 0;
}

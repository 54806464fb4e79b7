/*
 * registry_int.h - internals shared by registry.c (table, lookups), registry_builtin.c
 * (the built-in types) and registry_crd.c (CRD validation and registration).
 * Not a public header.
 */
#ifndef RAYOP_SIM_REGISTRY_INT_H
#define RAYOP_SIM_REGISTRY_INT_H

#include "kubesim/registry/registry.h"

struct registry {
    struct reg_resource **items;   /* served, grouped: all of a group's resources adjacent */
    size_t n, cap;
    struct reg_resource **retired; /* removed/replaced, freed by registry_free */
    size_t n_retired, cap_retired;
    unsigned long generation;
};

/* Frees a resource and everything it owns (schema, columns, names). NULL is fine. */
void registry__resource_free(struct reg_resource *res);
/* Inserts res after the last resource of its group (or at the end); takes ownership. */
int registry__insert(struct registry *r, struct reg_resource *res);
/* Copies a NULL-terminated array of strings from a comma-separated list ("po,pod").
 * Returns a heap array (caller frees with registry__strv_free) or NULL on ENOMEM. */
char **registry__strv_split(const char *csv);
void registry__strv_free(char **v);

#endif

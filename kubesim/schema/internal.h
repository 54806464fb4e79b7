/*
 * schema_int.h - the compiled form of a CRD's openAPIV3Schema, shared by schema.c
 * (compilation), schema_validate.c (defaulting, pruning, validation) and cel.c (the
 * x-kubernetes-validations subset). A compiled schema is immutable after
 * schema_compile returns.
 */
#ifndef RAYOP_SIM_SCHEMA_INT_H
#define RAYOP_SIM_SCHEMA_INT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "kubesim/schema/schema.h"

#define SCHEMA_MAX_DEPTH 128     /* nesting of the schema itself */
#define SCHEMA_MAX_NODES 1000000 /* compiled nodes per schema */
#define CEL_MAX_RULE 4096        /* bytes of one rule */

/* ---- CEL subset (cel.c) ---- */
struct cel_expr;
/* 0, -ENOTSUP for a rule outside the subset (never guessed at), -ENOMEM. */
int schema__cel_compile(const char *rule, struct cel_expr **out);
bool schema__cel_uses_old(const struct cel_expr *e);
/* 1 rule holds, 0 it does not, -EINVAL runtime error (msg says why, e.g. no such key). */
int schema__cel_eval(const struct cel_expr *e, const cJSON *self, const cJSON *old, char *msg,
             size_t msglen);
void schema__cel_free(struct cel_expr *e);

/* ---- compiled schema ---- */
enum stype { ST_ANY = 0, ST_OBJECT, ST_ARRAY, ST_STRING, ST_INTEGER, ST_NUMBER, ST_BOOLEAN };
enum sformat { SF_NONE = 0, SF_INT32, SF_INT64, SF_DATETIME };
enum slist { SL_NONE = 0, SL_ATOMIC, SL_SET, SL_MAP };

struct srule {
    struct cel_expr *expr; /* NULL when unsupported: skipped */
    char *message;
    char *reason;          /* optional "reason" of the rule */
    char *rule;
};

struct sprop;

struct snode {
    enum stype type;
    enum sformat format;
    enum slist list_type;
    bool nullable, preserve_unknown, embedded, int_or_string;
    bool has_min, has_max, excl_min, excl_max, unique_items, additional_false;
    double minimum, maximum;
    int64_t min_len, max_len, min_items, max_items, min_props, max_props; /* -1: none */
    const regex_t *pattern;   /* shared, owned by the schema */
    const char *pattern_src;
    cJSON *enum_vals;         /* array, or NULL */
    cJSON *default_val;
    char **required;
    size_t nrequired;
    struct sprop *props;      /* sorted by name */
    size_t nprops;
    struct snode *items;
    struct snode *additional; /* additionalProperties schema */
    char **map_keys;          /* NULL-terminated, for SL_MAP */
    struct srule *rules;
    size_t nrules;
};

struct sprop {
    char *name;
    struct snode *node;
};

struct spattern {
    char *src;
    regex_t re;
    bool ok;
};

struct schema {
    struct snode *root;
    struct spattern *patterns;
    size_t npatterns;
    size_t nodes;
    size_t rules_total, rules_unsupported;
};

const struct snode *schema__prop(const struct snode *n, const char *name);

/* ---- test hooks: for the module's unit tests and fuzz targets, not for callers ---- */

/* x-kubernetes-validations rules in the schema, and how many of them fall outside the
 * supported CEL subset (those are skipped at validation, never guessed at). */
size_t schema_rules_total(const struct schema *s);

size_t schema_rules_unsupported(const struct schema *s);

#endif

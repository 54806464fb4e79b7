/*
 * present_int.h - helpers shared by the present*.c files (discovery, OpenAPI,
 * tables). Not a public header.
 */
#ifndef RAYOP_SIM_PRESENT_INT_H
#define RAYOP_SIM_PRESENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "kubesim/registry/registry.h"
#include "util/util.h"

/* Bounds of one rendering pass; a registry beyond them is rendered truncated. */
#define PRESENT_MAX_GROUPS    128
#define PRESENT_MAX_VERSIONS  REG_MAX_VERSIONS
#define PRESENT_MAX_RESOURCES 256

/* Prints doc compactly into out. 0 or -ENOMEM (also when doc is NULL). */
int present__print(cJSON *doc, struct buf *out);
/* Distinct groups in registry order (core "" first); borrowed pointers. */
size_t present__groups(const struct registry *r, const char **out, size_t max);
/* Versions served for group, highest priority first (out[0] is preferred). */
size_t present__group_versions(const struct registry *r, const char *group, const char **out,
                              size_t max);

/* ---- tables (table.c, cells.c, printers.c, printers_misc.c) ---- */

struct present_col {
    const char *name, *type, *format, *description;
    int priority;
};

/* A built-in type's printer: its columns and a function appending one cell per
 * column (wide ones included: kubectl hides priority > 0 itself) for obj. */
struct present_printer {
    const char *group, *kind;
    const struct present_col *cols;
    size_t n_cols;
    int (*cells)(const cJSON *obj, time_t now, cJSON *cells);
};

/* The printer of a built-in resource, or NULL (then Name/Age is used). */
const struct present_printer *present__builtin_printer(const struct reg_resource *res);

/* The descriptions of the standard Name and Age columns (cells.c). */
extern const char present_name_desc[];
extern const char present_age_desc[];

/* Helpers for cell functions (values at dotted paths: util/json.h): human age of an
 * RFC 3339 timestamp string ("<unknown>" when missing/invalid). */
void present__age_of(const char *ts, time_t now, char out[16]);
int present__add_str(cJSON *cells, const char *s);

/* Cell helpers shared by the printers (cells.c): append a number, the
 * object's name, its age; a number at a dotted path (dflt when absent); s unless
 * NULL/empty, else dflt; member count of an object/array at path; append b's text as
 * a cell and free b (rc passed through, so a failed build of b is reported). */
int present__cell_num(cJSON *cells, double v);
int present__cell_name(cJSON *cells, const cJSON *obj);
int present__cell_age(cJSON *cells, const cJSON *obj, time_t now);
/* The three cells of a Name / <string at path> / Age printer. */
int present__cells_name_str_age(cJSON *cells, const cJSON *obj, const char *path, time_t now);
long present__num(const cJSON *obj, const char *path, long dflt);
const char *present__or(const char *s, const char *dflt);
int present__count_keys(const cJSON *obj, const char *path);
int present__cell_buf(cJSON *cells, struct buf *b, int rc);

/* The printers of printers_misc.c. */
extern const struct present_printer present_printers_misc[];
extern const size_t present_n_printers_misc;

#endif

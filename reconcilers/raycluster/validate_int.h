/*
 * validate_int.h - the syntax checks validate.c borrows from Kubernetes'
 * apimachinery (IsDNS1035Label, IsQualifiedName, IsValidLabelValue) and
 * version.ParseGeneric, with the error texts they produce.
 */
#ifndef RAYOP_RC_VALIDATE_INT_H
#define RAYOP_RC_VALIDATE_INT_H

#include <stdbool.h>
#include <stddef.h>

bool rc_is_dns1035_label(const char *s);
/* The IsDNS1035Label error list joined by " " (as %v prints a []string, minus brackets). */
const char *rc_dns1035_error(const char *s);
/* 0 when valid; else 1 with apimachinery's messages, one per line, in err. */
int rc_qualified_name_error(const char *s, char *err, size_t cap);
int rc_label_value_error(const char *s, char *err, size_t cap);
/* Compares a generic version ("2.52.0", "2.9", "2.41.0rc1") with want: *cmp < 0, 0, > 0.
 * -EINVAL when ver is not a version (fewer than two numeric fields). */
int rc_version_cmp(const char *ver, const char *want, int *cmp);

#endif

/*
 * status_cause.h - one metav1.StatusCause ({"reason","message","field"}) appended to a
 * causes array: the shape every 422 Invalid answer of kubesim carries, whether the
 * store, the CRD registry or a validator found the problem.
 */
#ifndef RAYOP_SIM_STATUS_CAUSE_H
#define RAYOP_SIM_STATUS_CAUSE_H

#include <stdarg.h>
#include <cjson/cJSON.h>

/* Appends a cause with the formatted message (truncated at 1 KiB) to causes; a NULL
 * causes array is accepted and ignored. 0 or -ENOMEM (causes unchanged). */
int status_cause_add(cJSON *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif

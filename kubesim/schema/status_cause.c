/*
 * status_cause.c - builds metav1.StatusCause objects for 422 answers (status_cause.h).
 */
#include "kubesim/schema/status_cause.h"

#include <errno.h>
#include <stdio.h>

static int status_cause_vadd(cJSON *causes, const char *reason, const char *field, const char *fmt,
                      va_list ap)
{
    char msg[1024];
    cJSON *c;

    if (!causes)
        return 0;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    c = cJSON_CreateObject();
    if (!c || !cJSON_AddStringToObject(c, "reason", reason) ||
        !cJSON_AddStringToObject(c, "message", msg) ||
        !cJSON_AddStringToObject(c, "field", field)) {
        cJSON_Delete(c);
        return -ENOMEM;
    }
    cJSON_AddItemToArray(causes, c);
    return 0;
}

int status_cause_add(cJSON *causes, const char *reason, const char *field, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = status_cause_vadd(causes, reason, field, fmt, ap);
    va_end(ap);
    return rc;
}

/*
 * status.c - metav1.Status objects as the real API server builds them
 * (apimachinery pkg/api/errors): the builders the store's verbs use to fill
 * struct store_status, and store_status_json, which the server writes as the
 * body of every failed request and of watch ERROR events.
 */
#include "kubesim/schema/status_cause.h"
#include "kubesim/store/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define jget cJSON_GetObjectItemCaseSensitive

void store_status_clear(struct store_status *st)
{
    if (!st)
        return;
    cJSON_Delete(st->causes);
    memset(st, 0, sizeof(*st));
}

char *store_status_json(const struct store_status *st)
{
    struct buf b = { 0 };
    bool details = st->name[0] || st->group[0] || st->kind[0] || st->causes ||
                   st->retry_after > 0;
    int rc = 0;

    rc |= buf_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                       "\"status\":\"Failure\",\"message\":");
    rc |= buf_append_json_string(&b, st->message);
    rc |= buf_puts(&b, ",\"reason\":");
    rc |= buf_append_json_string(&b, st->reason);
    if (details) {
        const char *sep = "";
        rc |= buf_puts(&b, ",\"details\":{");
        if (st->name[0]) {
            rc |= buf_puts(&b, "\"name\":");
            rc |= buf_append_json_string(&b, st->name);
            sep = ",";
        }
        if (st->group[0]) {
            rc |= buf_printf(&b, "%s\"group\":", sep);
            rc |= buf_append_json_string(&b, st->group);
            sep = ",";
        }
        if (st->kind[0]) {
            rc |= buf_printf(&b, "%s\"kind\":", sep);
            rc |= buf_append_json_string(&b, st->kind);
            sep = ",";
        }
        if (st->causes && cJSON_GetArraySize(st->causes) > 0) {
            char *c = cJSON_PrintUnformatted(st->causes);
            if (!c)
                rc = -ENOMEM;
            else
                rc |= buf_printf(&b, "%s\"causes\":%s", sep, c);
            cJSON_free(c);
            sep = ",";
        }
        if (st->retry_after > 0)
            rc |= buf_printf(&b, "%s\"retryAfterSeconds\":%d", sep, st->retry_after);
        rc |= buf_puts(&b, "}");
    }
    rc |= buf_printf(&b, ",\"code\":%d}", st->code);
    if (rc) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

void store__status_set(struct store_status *st, int code, const char *reason, const char *fmt, ...)
{
    va_list ap;

    if (!st)
        return;
    st->code = code;
    snprintf(st->reason, sizeof(st->reason), "%s", reason);
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof(st->message), fmt, ap);
    va_end(ap);
}

void store__status_qualified(const struct reg_resource *res, char *out, size_t outlen)
{
    if (res->group[0])
        snprintf(out, outlen, "%s.%s", res->plural, res->group);
    else
        snprintf(out, outlen, "%s", res->plural);
}

/* details.kind is the plural resource for NotFound/Conflict/AlreadyExists and
 * the Kind for Invalid, as the errors package fills them. */
void store__status_details(struct store_status *st, const struct reg_resource *res, const char *name,
                           bool kind_is_kind)
{
    if (!st || !res)
        return;
    snprintf(st->name, sizeof(st->name), "%s", name ? name : "");
    snprintf(st->group, sizeof(st->group), "%s", res->group);
    snprintf(st->kind, sizeof(st->kind), "%s", kind_is_kind ? res->kind : res->plural);
}

void store__status_not_found(struct store_status *st, const struct reg_resource *res, const char *name)
{
    char q[256];

    store__status_qualified(res, q, sizeof(q));
    store__status_set(st, 404, "NotFound", "%s \"%s\" not found", q, name);
    store__status_details(st, res, name, false);
}

void store__status_conflict(struct store_status *st, const struct reg_resource *res, const char *name)
{
    char q[256];

    store__status_qualified(res, q, sizeof(q));
    store__status_set(st, 409, "Conflict",
                      "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                      "please apply your changes to the latest version and try again", q, name);
    store__status_details(st, res, name, false);
}

void store__status_already_exists(struct store_status *st, const struct reg_resource *res,
                                  const char *name)
{
    char q[256];

    store__status_qualified(res, q, sizeof(q));
    store__status_set(st, 409, "AlreadyExists", "%s \"%s\" already exists", q, name);
    store__status_details(st, res, name, false);
}

/*
 * 422 Invalid: `Kind.group "name" is invalid: field: msg` for one cause,
 * `[a, b]` for several (apimachinery errors.NewInvalid + ToAggregate).
 * Takes ownership of causes.
 */
int store__status_invalid(struct store_status *st, const struct reg_resource *res, const char *name,
                          cJSON *causes)
{
    struct buf b = { 0 };
    int n = cJSON_GetArraySize(causes);
    cJSON *c;
    int i = 0;

    if (!st) {
        cJSON_Delete(causes);
        return -EINVAL;
    }
    if (res->group[0])
        buf_printf(&b, "%s.%s \"%s\" is invalid: ", res->kind, res->group, name);
    else
        buf_printf(&b, "%s \"%s\" is invalid: ", res->kind, name);
    if (n > 1)
        buf_puts(&b, "[");
    cJSON_ArrayForEach(c, causes) {
        const char *f = cJSON_GetStringValue(jget(c, "field"));
        const char *m = cJSON_GetStringValue(jget(c, "message"));
        if (i++)
            buf_puts(&b, ", ");
        if (f && f[0])
            buf_printf(&b, "%s: %s", f, m ? m : "");
        else
            buf_puts(&b, m ? m : "");
    }
    if (n > 1)
        buf_puts(&b, "]");
    store__status_set(st, 422, "Invalid", "%s", b.data ? b.data : "invalid");
    buf_free(&b);
    store__status_details(st, res, name, true);
    cJSON_Delete(st->causes);
    st->causes = causes;
    return -EINVAL;
}

/*
 * status.c - typed API errors: parses metav1.Status bodies and maps HTTP
 * codes and Status reasons onto the negative errno values kube.h promises,
 * so callers branch on -ENOENT / -ESTALE / ... instead of on strings.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/internal.h"

#define STATUS_MAX_BODY (1u << 20)

static void copy_str(char *dst, size_t cap, const cJSON *v)
{
    if (cJSON_IsString(v) && v->valuestring != NULL)
        snprintf(dst, cap, "%s", v->valuestring);
}

int kube_status_from_json(const cJSON *obj, struct kube_status *st)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *code, *details, *causes, *c;

    memset(st, 0, sizeof(*st));
    if (!cJSON_IsObject(obj) || !cJSON_IsString(kind) || strcmp(kind->valuestring, "Status") != 0)
        return -EPROTO;
    code = cJSON_GetObjectItemCaseSensitive(obj, "code");
    if (cJSON_IsNumber(code) && code->valuedouble >= 0 && code->valuedouble < 1000)
        st->code = (int)code->valuedouble;
    copy_str(st->status, sizeof(st->status), cJSON_GetObjectItemCaseSensitive(obj, "status"));
    copy_str(st->reason, sizeof(st->reason), cJSON_GetObjectItemCaseSensitive(obj, "reason"));
    copy_str(st->message, sizeof(st->message), cJSON_GetObjectItemCaseSensitive(obj, "message"));
    details = cJSON_GetObjectItemCaseSensitive(obj, "details");
    if (cJSON_IsObject(details)) {
        const cJSON *ra = cJSON_GetObjectItemCaseSensitive(details, "retryAfterSeconds");
        if (cJSON_IsNumber(ra) && ra->valuedouble > 0 && ra->valuedouble < 86400)
            st->retry_after_s = (int)ra->valuedouble;
        causes = cJSON_GetObjectItemCaseSensitive(details, "causes");
        cJSON_ArrayForEach(c, causes) {
            if (st->ncauses == KUBE_STATUS_MAX_CAUSES)
                break;
            struct kube_status_cause *sc = &st->causes[st->ncauses++];
            copy_str(sc->reason, sizeof(sc->reason), cJSON_GetObjectItemCaseSensitive(c, "reason"));
            copy_str(sc->field, sizeof(sc->field), cJSON_GetObjectItemCaseSensitive(c, "field"));
            copy_str(sc->message, sizeof(sc->message),
                     cJSON_GetObjectItemCaseSensitive(c, "message"));
        }
    }
    return 0;
}

int kube_status_parse(const char *body, size_t len, struct kube_status *st)
{
    cJSON *obj;
    int rc;

    memset(st, 0, sizeof(*st));
    if (body == NULL || len == 0 || len > STATUS_MAX_BODY)
        return -EPROTO;
    obj = cJSON_ParseWithLength(body, len);
    if (obj == NULL)
        return -EPROTO;
    rc = kube_status_from_json(obj, st);
    cJSON_Delete(obj);
    return rc;
}

void kube__status_from_code(struct kube_status *st, int code, const char *message)
{
    static const struct { int code; const char *reason; } reasons[] = {
        { 400, "BadRequest" }, { 401, "Unauthorized" }, { 403, "Forbidden" },
        { 404, "NotFound" }, { 405, "MethodNotAllowed" }, { 406, "NotAcceptable" },
        { 409, "Conflict" }, { 410, "Gone" }, { 413, "RequestEntityTooLarge" },
        { 415, "UnsupportedMediaType" }, { 422, "Invalid" }, { 429, "TooManyRequests" },
        { 500, "InternalError" }, { 503, "ServiceUnavailable" }, { 504, "Timeout" },
    };
    memset(st, 0, sizeof(*st));
    st->code = code;
    snprintf(st->status, sizeof(st->status), "Failure");
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].code == code)
            snprintf(st->reason, sizeof(st->reason), "%s", reasons[i].reason);
    if (message != NULL)
        snprintf(st->message, sizeof(st->message), "%s", message);
    else
        snprintf(st->message, sizeof(st->message), "the server responded with HTTP %d", code);
}

static int kube__errno_from_code(int code)
{
    if (code >= 200 && code < 300)
        return 0;
    switch (code) {
    case 400: case 422: return -EINVAL;
    case 401: case 403: return -EACCES;
    case 404: return -ENOENT;
    case 405: case 415: return -ENOTSUP;
    case 409: return -ESTALE;
    case 410: return -KUBE_EGONE;
    case 413: return -EMSGSIZE;
    case 429: return -EAGAIN;
    case 504: return -ETIMEDOUT;
    default: break;
    }
    if (code >= 500 && code < 600)
        return -EIO;
    return -EPROTO;
}

int kube_status_errno(const struct kube_status *st)
{
    /* The reason is more precise than the code where they differ (a 409 is
     * AlreadyExists or Conflict; a 500 may be a ServerTimeout). */
    static const struct { const char *reason; int err; } map[] = {
        { "NotFound", -ENOENT }, { "AlreadyExists", -EEXIST }, { "Conflict", -ESTALE },
        { "Invalid", -EINVAL }, { "BadRequest", -EINVAL }, { "Forbidden", -EACCES },
        { "Unauthorized", -EACCES }, { "TooManyRequests", -EAGAIN }, { "Expired", -KUBE_EGONE },
        { "Gone", -KUBE_EGONE }, { "Timeout", -ETIMEDOUT }, { "ServerTimeout", -ETIMEDOUT },
        { "MethodNotAllowed", -ENOTSUP }, { "UnsupportedMediaType", -ENOTSUP },
        { "RequestEntityTooLarge", -EMSGSIZE },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(st->reason, map[i].reason) == 0)
            return map[i].err;
    if (st->code == 0)
        return -EPROTO;
    return kube__errno_from_code(st->code);
}

const char *kube_strerror(int err)
{
    switch (err) {
    case 0: return "ok";
    case -ENOENT: return "not found";
    case -EEXIST: return "already exists";
    case -ESTALE: return "conflict (stale resourceVersion)";
    case -EINVAL: return "invalid";
    case -EACCES: return "forbidden or unauthorized";
    case -EAGAIN: return "too many requests";
    case -ETIMEDOUT: return "timed out";
    case -ECONNREFUSED: return "connection refused";
    case -KUBE_EGONE: return "gone (resourceVersion expired)";
    case -EPROTO: return "bad response";
    case -EMSGSIZE: return "response or event too large";
    case -ENOTSUP: return "not supported";
    case -EIO: return "server error";
    case -ECONNRESET: return "connection reset";
    case -EHOSTUNREACH: return "host unreachable";
    case -ENOMEM: return "out of memory";
    case -E2BIG: return "input too large";
    default: return err < 0 ? strerror(-err) : "unknown";
    }
}

const char *kube_result_error(const struct kube_result *r, int err, char *buf, size_t n)
{
    const struct kube_status *st = r ? &r->status : NULL;
    if (!buf || n == 0)
        return kube_strerror(err);
    if (!st || !st->message[0]) {
        snprintf(buf, n, "%s", kube_strerror(err));
        return buf;
    }
    /* the server's message usually already names each field cause
     * ("Job.batch \"x\" is invalid: spec...image: Required value"); add the
     * ones it leaves out, so nothing the server said is lost */
    size_t len = (size_t)snprintf(buf, n, "%s", st->message);
    for (int i = 0; i < st->ncauses && len < n; i++) {
        const struct kube_status_cause *c = &st->causes[i];
        if (!c->message[0] || (strstr(st->message, c->message) &&
                               (!c->field[0] || strstr(st->message, c->field))))
            continue;
        len += (size_t)snprintf(buf + len, n - len, "; %s%s%s", c->field,
                                c->field[0] ? ": " : "", c->message);
    }
    return buf;
}

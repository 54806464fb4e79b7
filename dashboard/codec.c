/*
 * codec.c - the Ray Dashboard Jobs API bodies: the submit request we send and
 * the responses we read (job info, submit, stop, logs). Pure functions on
 * bytes, no I/O, so the fuzz target (tests/fuzz/fuzz_dashboard.c) reaches
 * every parser. Field names are Ray's (dashboard/modules/job/pydantic_models.py)
 * as KubeRay's utils/types reads them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard/dashboard.h"
#include "kobj/kobj.h"

bool dash_job_status_terminal(const char *s)
{
    return s && (strcmp(s, "STOPPED") == 0 || strcmp(s, "SUCCEEDED") == 0 ||
                 strcmp(s, "FAILED") == 0);
}

static bool known_status(const char *s)
{
    return strcmp(s, "PENDING") == 0 || strcmp(s, "RUNNING") == 0 || dash_job_status_terminal(s);
}

int dash_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= DASH_ID_MAX)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return -EINVAL;
    }
    return 0;
}

/* Parses body as one JSON object. The caller owns *out. */
static int parse_object(const char *body, size_t len, cJSON **out)
{
    if (!body || len == 0)
        return -EPROTO;
    if (len > DASH_MAX_BODY)
        return -EMSGSIZE;
    cJSON *o = cJSON_ParseWithLength(body, len);
    if (!o)
        return -EPROTO;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return -EPROTO;
    }
    *out = o;
    return 0;
}

/* Copies a string field if present (truncating); a non-string value is an error. */
static int copy_str(const cJSON *o, const char *name, char *dst, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    dst[0] = '\0';
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return -EPROTO;
    snprintf(dst, cap, "%s", v->valuestring);
    return 0;
}

/* Unix ms: a non-negative integer below 2^53 (JSON numbers are doubles). */
static int copy_ms(const cJSON *o, const char *name, uint64_t *dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *dst = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 9007199254740992.0)
        return -EPROTO;
    *dst = (uint64_t)v->valuedouble;
    return 0;
}

int dash_parse_job_info(const char *body, size_t len, struct dash_job_info *out)
{
    cJSON *o = NULL;
    memset(out, 0, sizeof(*out));
    int rc = parse_object(body, len, &o);
    if (rc < 0)
        return rc;
    if ((rc = copy_str(o, "status", out->status, sizeof(out->status))) < 0 ||
        (rc = copy_str(o, "message", out->message, sizeof(out->message))) < 0 ||
        (rc = copy_str(o, "job_id", out->job_id, sizeof(out->job_id))) < 0 ||
        (rc = copy_str(o, "submission_id", out->submission_id, sizeof(out->submission_id))) < 0 ||
        (rc = copy_str(o, "error_type", out->error_type, sizeof(out->error_type))) < 0 ||
        (rc = copy_str(o, "entrypoint", out->entrypoint, sizeof(out->entrypoint))) < 0 ||
        (rc = copy_ms(o, "start_time", &out->start_time_ms)) < 0 ||
        (rc = copy_ms(o, "end_time", &out->end_time_ms)) < 0)
        goto out;
    /* the state machine branches on the status: an unknown one is not guessed at */
    if (out->status[0] && !known_status(out->status))
        rc = -EPROTO;
out:
    cJSON_Delete(o);
    if (rc < 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int dash_parse_submit(const char *body, size_t len, char *job_id, size_t cap)
{
    cJSON *o = NULL;
    if (cap)
        job_id[0] = '\0';
    int rc = parse_object(body, len, &o);
    if (rc < 0)
        return rc;
    /* Ray answers {"job_id": ..., "submission_id": ...}; KubeRay reads job_id */
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "job_id");
    if (!cJSON_IsString(v) || !v->valuestring[0])
        v = cJSON_GetObjectItemCaseSensitive(o, "submission_id");
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap)
        rc = -EPROTO;
    else
        strcpy(job_id, v->valuestring);
    cJSON_Delete(o);
    return rc;
}

int dash_parse_stop(const char *body, size_t len, bool *stopped)
{
    cJSON *o = NULL;
    *stopped = false;
    int rc = parse_object(body, len, &o);
    if (rc < 0)
        return rc;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "stopped");
    if (!cJSON_IsBool(v))
        rc = -EPROTO;
    else
        *stopped = cJSON_IsTrue(v);
    cJSON_Delete(o);
    return rc;
}

int dash_parse_logs(const char *body, size_t len, char **logs)
{
    cJSON *o = NULL;
    *logs = NULL;
    int rc = parse_object(body, len, &o);
    if (rc < 0)
        return rc;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "logs");
    if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
        rc = -EPROTO;
    else if (!(*logs = strdup(cJSON_IsString(v) ? v->valuestring : "")))
        rc = -ENOMEM;
    cJSON_Delete(o);
    return rc;
}

char *dash_submit_body(const struct dash_submit *s)
{
    char *text = NULL;
    if (!s || !s->entrypoint)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (kobj_set_copy(o, "runtime_env", s->runtime_env) < 0 ||
        kobj_set_copy(o, "metadata", s->metadata) < 0 ||
        kobj_set_copy(o, "entrypoint_resources", s->resources) < 0 ||
        !cJSON_AddStringToObject(o, "entrypoint", s->entrypoint) ||
        (s->submission_id && s->submission_id[0] &&
         !cJSON_AddStringToObject(o, "submission_id", s->submission_id)) ||
        (s->num_cpus > 0 && !cJSON_AddNumberToObject(o, "entrypoint_num_cpus", s->num_cpus)) ||
        (s->num_gpus > 0 && !cJSON_AddNumberToObject(o, "entrypoint_num_gpus", s->num_gpus)))
        goto out;
    text = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return text;
}

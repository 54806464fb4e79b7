/*
 * dashctl_main.c - bin/dashctl: rayop's Ray Dashboard client (dashboard/) driven
 * from the command line, one call per run, the parsed answer printed as one JSON line. The
 * real-Ray contract test (tests/integration/real_ray_contract.py) runs it against a real
 * `ray start --head` and against kubesim's simulated dashboard, so the client is checked
 * against the real answers, not only against the simulation; it is also a handy probe of a
 * live cluster's head.
 *
 *   dashctl URL get ID | stop ID | delete ID | logs ID
 *   dashctl URL submit FILE     FILE (or -) holds {"entrypoint", "submission_id", "metadata",
 *                               "runtime_env", "entrypoint_resources", "entrypoint_num_cpus",
 *                               "entrypoint_num_gpus"}; the body sent is dash_submit_body's
 *
 * Output: {"rc":0|"ENOENT"|...,...fields}. Exit 0 when the call returned 0, 1 otherwise,
 * 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "dashboard/dashboard.h"

static const char *errname(int rc)
{
    switch (-rc) {
    case 0: return "0";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EBUSY: return "EBUSY";
    case EIO: return "EIO";
    case EPROTO: return "EPROTO";
    case EINVAL: return "EINVAL";
    case EMSGSIZE: return "EMSGSIZE";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    default: return strerror(-rc);
    }
}

static char *slurp(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;

    if (!f)
        return NULL;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            if (cap > DASH_MAX_BODY)
                goto fail;
            cap = cap ? cap * 2 : 8192;
            char *n = realloc(buf, cap);
            if (!n)
                goto fail;
            buf = n;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096)
            break;
    }
    if (ferror(f))
        goto fail;
    buf[len] = '\0';
    if (f != stdin)
        fclose(f);
    return buf;
fail:
    free(buf);
    if (f != stdin)
        fclose(f);
    return NULL;
}

static int do_submit(const struct dash_target *t, const char *file, cJSON *out)
{
    char *text = slurp(file), *body = NULL;
    cJSON *in = text ? cJSON_Parse(text) : NULL;
    char id[DASH_ID_MAX] = "";
    int rc = -EINVAL;

    if (!in || !cJSON_IsObject(in))
        goto out;
    struct dash_submit s = {
        .entrypoint = cJSON_GetStringValue(cJSON_GetObjectItem(in, "entrypoint")),
        .submission_id = cJSON_GetStringValue(cJSON_GetObjectItem(in, "submission_id")),
        .runtime_env = cJSON_GetObjectItem(in, "runtime_env"),
        .metadata = cJSON_GetObjectItem(in, "metadata"),
        .resources = cJSON_GetObjectItem(in, "entrypoint_resources"),
    };
    const cJSON *cpus = cJSON_GetObjectItem(in, "entrypoint_num_cpus");
    const cJSON *gpus = cJSON_GetObjectItem(in, "entrypoint_num_gpus");
    if (cJSON_IsNumber(cpus))
        s.num_cpus = cpus->valuedouble;
    if (cJSON_IsNumber(gpus))
        s.num_gpus = gpus->valuedouble;
    body = dash_submit_body(&s);
    if (!body)
        goto out;
    rc = dash_job_submit(t, body, strlen(body), id, sizeof(id));
    if (rc == 0)
        cJSON_AddStringToObject(out, "job_id", id);
out:
    free(body);
    cJSON_Delete(in);
    free(text);
    return rc;
}

static void add_info(cJSON *out, const struct dash_job_info *ji)
{
    cJSON_AddStringToObject(out, "status", ji->status);
    cJSON_AddStringToObject(out, "message", ji->message);
    cJSON_AddStringToObject(out, "job_id", ji->job_id);
    cJSON_AddStringToObject(out, "submission_id", ji->submission_id);
    cJSON_AddStringToObject(out, "error_type", ji->error_type);
    cJSON_AddStringToObject(out, "entrypoint", ji->entrypoint);
    cJSON_AddNumberToObject(out, "start_time", (double)ji->start_time_ms);
    cJSON_AddNumberToObject(out, "end_time", (double)ji->end_time_ms);
    cJSON_AddBoolToObject(out, "terminal", dash_job_status_terminal(ji->status));
}

int main(int argc, char **argv)
{
    struct dash_target t;
    cJSON *out;
    int rc;

    if (argc != 4 || dash_target_direct(&t, argv[1]) < 0) {
        fputs("usage: dashctl URL get|stop|delete|logs ID | dashctl URL submit FILE\n", stderr);
        return 2;
    }
    t.timeout_ms = 30000; /* a loaded test machine, not KubeRay's 2 s */
    out = cJSON_CreateObject();
    if (!out)
        return 1;
    const char *op = argv[2], *arg = argv[3];
    if (strcmp(op, "get") == 0) {
        struct dash_job_info ji;
        rc = dash_job_get(&t, arg, &ji);
        if (rc == 0)
            add_info(out, &ji);
    } else if (strcmp(op, "stop") == 0) {
        rc = dash_job_stop(&t, arg);
    } else if (strcmp(op, "delete") == 0) {
        rc = dash_job_delete(&t, arg);
    } else if (strcmp(op, "logs") == 0) {
        char *logs = NULL;
        rc = dash_job_logs(&t, arg, &logs);
        if (rc == 0)
            cJSON_AddStringToObject(out, "logs", logs ? logs : "");
        free(logs);
    } else if (strcmp(op, "submit") == 0) {
        rc = do_submit(&t, arg, out);
    } else {
        fprintf(stderr, "dashctl: unknown call %s\n", op);
        cJSON_Delete(out);
        return 2;
    }
    if (rc == 0)
        cJSON_AddNumberToObject(out, "rc", 0);
    else
        cJSON_AddStringToObject(out, "rc", errname(rc));
    char *text = cJSON_PrintUnformatted(out);
    if (text)
        puts(text);
    free(text);
    cJSON_Delete(out);
    return rc == 0 ? 0 : 1;
}

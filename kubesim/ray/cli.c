/*
 * cli.c - the commands a simulated Ray submitter container runs, played against the
 * simulated dashboards in-process (ray__resolve_host + ray__target_request, so an
 * unreachable address fails like a refused connection): `ray job submit|status|logs|
 * stop|delete|list` with the messages and exit codes of Ray's CLI
 * (python/ray/dashboard/modules/job/cli.py), KubeRay's light-weight /submitter
 * (ray-operator/rayjob-submitter/cmd/main.go) and KubeRay's python dashboard health
 * check. Notably `ray job logs --follow` exits 0 whatever the job's outcome, while
 * `ray job submit` without --no-wait exits 1 when the job FAILED.
 * The interpreter that calls these is submitter_run.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/ray/internal.h"

#define FOLLOW_POLL_MS 200

/* A Python exception as the CLI dies with it (stderr). */
static void py_error(struct ray_exec *x, bool quiet, const char *exc, const char *msg)
{
    ray__exec_printf(x, quiet,
        "Traceback (most recent call last):\n  File \"/home/ray/anaconda3/bin/ray\", "
        "line 8, in <module>\n    sys.exit(main())\n%s: %s\n", exc, msg);
}

/* ---- HTTP to a dashboard --------------------------------------------------------------- */

/* address "http://HOST:PORT[/...]" or "HOST:PORT": one request. 0 with resp filled (the
 * caller frees resp->body), or -ECONNREFUSED with err (the connection failed). */
static int http(struct ray_exec *x, const char *address, const char *method, const char *path,
                const char *body, struct ray_resp *resp, char *err, size_t errlen)
{
    const char *a = address, *colon;
    char host[256];
    int port = 80;
    struct ray_target t;
    size_t hl;
    int rc;

    memset(resp, 0, sizeof(*resp));
    if (!strncmp(a, "http://", 7))
        a += 7;
    else if (!strncmp(a, "https://", 8)) {
        a += 8;
        port = 443;
    }
    hl = strcspn(a, ":/");
    if (hl == 0 || hl >= sizeof(host)) {
        snprintf(err, errlen, "invalid address %.200s", address);
        return -ECONNREFUSED;
    }
    memcpy(host, a, hl);
    host[hl] = '\0';
    colon = a[hl] == ':' ? a + hl + 1 : NULL;
    if (colon) {
        char *end;
        long p = strtol(colon, &end, 10);
        if (end == colon || (*end && *end != '/') || p < 1 || p > 65535) {
            snprintf(err, errlen, "invalid port in address %.200s", address);
            return -ECONNREFUSED;
        }
        port = (int)p;
    }
    ray__resolve_host(x->r, x->s->ns, x->s->pod, host, port, &t);
    if (t.code) {
        snprintf(err, errlen, "%s", t.message);
        return -ECONNREFUSED;
    }
    /* Ray's CLI sends its token (AuthenticationTokenLoader: RAY_AUTH_TOKEN) when the
     * environment says token auth */
    const char *mode = ray__exec_env(x, "RAY_AUTH_MODE"), *tok = ray__exec_env(x, "RAY_AUTH_TOKEN");
    struct buf authz = { 0 };
    if (mode && !strcmp(mode, "token") && tok && *tok && buf_printf(&authz, "Bearer %s", tok) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ECONNREFUSED;
    }
    rc = ray__target_request(x->r, &t, method, path, body, body ? strlen(body) : 0, authz.data,
                             NULL, resp);
    if (authz.data)
        explicit_bzero(authz.data, authz.cap);
    buf_free(&authz);
    if (rc == -ENOENT) {
        snprintf(err, errlen, "connection refused");
        return -ECONNREFUSED;
    }
    if (rc < 0 || !resp->body) {
        free(resp->body);
        resp->body = NULL;
        snprintf(err, errlen, "out of memory");
        return -ECONNREFUSED;
    }
    return 0;
}

/* ---- the ray job CLI -------------------------------------------------------------------- */

struct cli {
    const char *sub;             /* submit, status, logs, stop, delete, list */
    const char *address, *submission_id, *runtime_env_json, *metadata_json, *working_dir;
    const char *num_cpus, *num_gpus, *memory, *resources, *runtime_env_file;
    bool no_wait, follow;
    const char *job;             /* positional job id */
    char *const *entry;          /* submit: entrypoint words */
    size_t nentry;
};


/* click's parsing of `ray job SUB ...`: 0, or 2 with the usage error printed. */
static int cli_parse(struct ray_exec *x, char *const *av, size_t ac, struct cli *c, bool qe)
{
    /* the options that take a value, and the field each sets (-1: accepted, not used) */
    static const struct {
        const char *name;
        ptrdiff_t off;
    } valued[] = {
        { "--address", offsetof(struct cli, address) },
        { "--submission-id", offsetof(struct cli, submission_id) },
        { "--job-id", offsetof(struct cli, submission_id) },
        { "--runtime-env", offsetof(struct cli, runtime_env_file) },
        { "--runtime-env-json", offsetof(struct cli, runtime_env_json) },
        { "--working-dir", offsetof(struct cli, working_dir) },
        { "--metadata-json", offsetof(struct cli, metadata_json) },
        { "--entrypoint-num-cpus", offsetof(struct cli, num_cpus) },
        { "--entrypoint-num-gpus", offsetof(struct cli, num_gpus) },
        { "--entrypoint-memory", offsetof(struct cli, memory) },
        { "--entrypoint-resources", offsetof(struct cli, resources) },
        { "--entrypoint-label-selector", -1 },
        { "--headers", -1 },
        { "--verify", -1 },
        { "--log-style", -1 },
        { "--log-color", -1 },
        { NULL, -1 },
    };
    size_t i = 3;

    memset(c, 0, sizeof(*c));
    c->sub = av[2];
    while (i < ac) {
        const char *a = av[i], *eq = strchr(a, '='), *val = NULL;
        char name[64];
        size_t k;

        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || !a[1]) {
            if (!strcmp(c->sub, "submit"))
                break;
            if (c->job) {
                ray__exec_printf(x, qe,
                    "Usage: ray job %s [OPTIONS] JOB_ID\nTry 'ray job %s --help' for "
                    "help.\n\nError: Got unexpected extra argument (%s)\n", c->sub, c->sub, a);
                return 2;
            }
            c->job = a;
            i++;
            continue;
        }
        snprintf(name, sizeof(name), "%.*s", eq && a[1] == '-' ? (int)(eq - a) : (int)strlen(a), a);
        if (!strcmp(name, "--no-wait")) {
            c->no_wait = true;
            i++;
            continue;
        }
        if (!strcmp(name, "-f") || !strcmp(name, "--follow")) {
            c->follow = true;
            i++;
            continue;
        }
        if (!strcmp(name, "-v") || !strcmp(name, "--verbose")) {
            i++;
            continue;
        }
        for (k = 0; valued[k].name && strcmp(valued[k].name, name); k++)
            ;
        if (!valued[k].name) {
            ray__exec_printf(x, qe,
                "Usage: ray job %s [OPTIONS]\nTry 'ray job %s --help' for help.\n\n"
                "Error: No such option: %s\n", c->sub, c->sub, name);
            return 2;
        }
        if (eq && a[1] == '-') {
            val = eq + 1;
            i++;
        } else if (i + 1 < ac) {
            val = av[i + 1];
            i += 2;
        } else {
            ray__exec_printf(x, qe, "Error: Option '%s' requires an argument.\n", name);
            return 2;
        }
        if (valued[k].off >= 0)
            *(const char **)((char *)c + valued[k].off) = val;
    }
    if (!strcmp(c->sub, "submit")) {
        c->entry = av + i;
        c->nentry = ac - i;
        if (!c->nentry) {
            ray__exec_printf(x, qe,
                "Usage: ray job submit [OPTIONS] ENTRYPOINT...\nTry 'ray job submit "
                "--help' for help.\n\nError: Missing argument 'ENTRYPOINT...'.\n");
            return 2;
        }
    } else if (i < ac && !c->job) {
        c->job = av[i];
    }
    if (strcmp(c->sub, "submit") && strcmp(c->sub, "list") && !c->job) {
        ray__exec_printf(x, qe,
            "Usage: ray job %s [OPTIONS] JOB_ID\nTry 'ray job %s --help' for help.\n\n"
            "Error: Missing argument 'JOB_ID'.\n", c->sub, c->sub);
        return 2;
    }
    if (!c->address)
        c->address = ray__exec_env(x, "RAY_API_SERVER_ADDRESS");
    if (!c->address)
        c->address = ray__exec_env(x, "RAY_ADDRESS");
    return 0;
}

/* shlex.join: words that need it are single-quoted. */
static int shlex_join(char *const *w, size_t n, struct buf *b)
{
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *s = w[i];
        bool safe = *s != '\0';
        for (const char *p = s; *p && safe; p++)
            safe = strchr("@%+=:,./-_", *p) || (*p >= '0' && *p <= '9') ||
                   (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
        if (i)
            rc |= buf_puts(b, " ");
        if (safe) {
            rc |= buf_puts(b, s);
            continue;
        }
        rc |= buf_puts(b, "'");
        for (; *s && rc == 0; s++)
            rc |= *s == '\'' ? buf_puts(b, "'\"'\"'") : buf_append(b, s, 1);
        rc |= buf_puts(b, "'");
    }
    return rc ? -ENOMEM : 0;
}

/* The SDK client's constructor: address known and /api/version answering. 0 or exit code. */
static int sdk_connect(struct ray_exec *x, const struct cli *c, bool qo, bool qe)
{
    struct ray_resp resp;
    char err[600], msg[900];

    if (!c->address) {
        py_error(x, qe, "ConnectionError", "Could not find any running Ray instance. Please "
                 "specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` "
                 "environment variable.");
        return 1;
    }
    if (http(x, c->address, "GET", "/api/version", NULL, &resp, err, sizeof(err)) < 0 ||
        resp.code != 200) {
        free(resp.body);
        snprintf(msg, sizeof(msg), "Failed to connect to Ray at address: %s%s.",
                 strncmp(c->address, "http", 4) ? "http://" : "", c->address);
        py_error(x, qe, "ConnectionError", msg);
        return 1;
    }
    free(resp.body);
    ray__exec_printf(x, qo, "Job submission server address: %s%s\n",
        strncmp(c->address, "http", 4) ? "http://" : "", c->address);
    return 0;
}

/* GET /api/jobs/ID: its JSON (caller deletes), or NULL with the HTTP code in *code
 * (0 = connection failure). */
static cJSON *job_get(struct ray_exec *x, const struct cli *c, const char *id, int *code,
                      char *body_out, size_t body_len)
{
    struct ray_resp resp;
    char path[400], err[300];
    cJSON *j = NULL;

    snprintf(path, sizeof(path), "/api/jobs/%.300s", id);
    *code = 0;
    if (http(x, c->address, "GET", path, NULL, &resp, err, sizeof(err)) < 0) {
        snprintf(body_out, body_len, "%s", err);
        return NULL;
    }
    *code = resp.code;
    if (resp.code == 200)
        j = cJSON_Parse(resp.body);
    else
        snprintf(body_out, body_len, "%s", resp.body);
    free(resp.body);
    return j;
}

static void big(struct ray_exec *x, bool q, const char *msg)
{
    char dashes[300];
    size_t n = strlen(msg) < sizeof(dashes) - 1 ? strlen(msg) : sizeof(dashes) - 1;

    memset(dashes, '-', n);
    dashes[n] = '\0';
    ray__exec_printf(x, q, "\n%s\n%s\n%s\n\n", dashes, msg, dashes);
}

/* _log_job_status: prints the outcome; returns the status ("" on error, exit code in *rc). */
static void log_job_status(struct ray_exec *x, const struct cli *c, const char *id, bool qo,
                           bool qe, char *status, size_t slen, int *rc)
{
    char body[600], msg[700];
    int code;
    cJSON *j = job_get(x, c, id, &code, body, sizeof(body));
    const char *st = kobj_str(j, "status"), *m = kobj_str(j, "message");

    *rc = 0;
    status[0] = '\0';
    if (!j) {
        snprintf(msg, sizeof(msg), "Request failed with status code %d: %s.", code, body);
        py_error(x, qe, "RuntimeError", msg);
        *rc = 1;
        return;
    }
    snprintf(status, slen, "%s", st ? st : "");
    if (st && !strcmp(st, "SUCCEEDED")) {
        snprintf(msg, sizeof(msg), "Job '%.300s' succeeded", id);
        big(x, qo, msg);
    } else if (st && !strcmp(st, "STOPPED")) {
        ray__exec_printf(x, qo, "Job '%s' was stopped\n", id);
    } else if (st && !strcmp(st, "FAILED")) {
        snprintf(msg, sizeof(msg), "Job '%.300s' failed", id);
        big(x, qo, msg);
        if (m)
            ray__exec_printf(x, qo, "Status message: %s\n", m);
    } else {
        ray__exec_printf(x, qo, "Status for job '%s': %s\n", id, st ? st : "");
        if (m)
            ray__exec_printf(x, qo, "Status message: %s\n", m);
    }
    cJSON_Delete(j);
}

/* Tails the job's logs until it is terminal (the websocket of /logs/tail). 0, or 1 when
 * the job is unknown or the connection broke. */
static int follow_logs(struct ray_exec *x, const char *address, const char *id, bool qo, bool qe)
{
    char path[400], err[300];
    size_t printed = 0;
    struct ray_resp resp;

    for (;;) {
        cJSON *logs = NULL, *j = NULL;
        const char *txt, *st;
        bool end;

        snprintf(path, sizeof(path), "/api/jobs/%.300s", id);
        if (http(x, address, "GET", path, NULL, &resp, err, sizeof(err)) < 0) {
            py_error(x, qe, "aiohttp.client_exceptions.ClientConnectorError", err);
            return 1;
        }
        if (resp.code != 200) {
            char msg[500];
            snprintf(msg, sizeof(msg), "%d, message='Invalid response status', url='%.200s"
                     "/logs/tail'", resp.code, path);
            free(resp.body);
            py_error(x, qe, "aiohttp.client_exceptions.WSServerHandshakeError", msg);
            return 1;
        }
        j = cJSON_Parse(resp.body);
        free(resp.body);
        st = kobj_str(j, "status");
        end = st && ray__status_terminal(st);
        cJSON_Delete(j);
        snprintf(path, sizeof(path), "/api/jobs/%.300s/logs", id);
        if (http(x, address, "GET", path, NULL, &resp, err, sizeof(err)) == 0) {
            logs = resp.code == 200 ? cJSON_Parse(resp.body) : NULL;
            free(resp.body);
        }
        txt = kobj_str(logs, "logs");
        if (txt && strlen(txt) > printed) {
            ray__exec_write(x, qo, txt + printed, strlen(txt) - printed);
            printed = strlen(txt);
        }
        cJSON_Delete(logs);
        if (end)
            return 0;
        if (ray__exec_nap(x, FOLLOW_POLL_MS) < 0)
            return 143;
    }
}

/* A float (or integer) option as click reads it: 0 with req[key] set (when given), or 2
 * with click's usage error printed. */
static int num_opt(struct ray_exec *x, cJSON *req, const char *opt, const char *flag,
                   const char *key, bool integer, bool qe)
{
    char *end;
    double d;

    if (!opt)
        return 0;
    d = strtod(opt, &end);
    if (end == opt || *end || (integer && d != (double)(long long)d)) {
        ray__exec_printf(x, qe, "Error: Invalid value for '%s': '%s' is not a valid %s.\n", flag,
                         opt, integer ? "integer" : "float");
        return 2;
    }
    cJSON_AddNumberToObject(req, key, d);
    return 0;
}

static int cli_submit(struct ray_exec *x, const struct cli *c, bool qo, bool qe)
{
    cJSON *req = cJSON_CreateObject(), *v;
    struct buf entry = { 0 };
    struct ray_resp resp;
    char err[600], msg[900], status[32];
    const char *id;
    int rc;

    if (!req || shlex_join(c->entry, c->nentry, &entry) < 0) {
        cJSON_Delete(req);
        return 1;
    }
    if (c->runtime_env_file) {
        snprintf(msg, sizeof(msg), "[Errno 2] No such file or directory: '%.300s'",
                 c->runtime_env_file);
        py_error(x, qe, "FileNotFoundError", msg);
        rc = 1;
        goto out;
    }
    cJSON_AddStringToObject(req, "entrypoint", entry.data);
    if (c->submission_id)
        cJSON_AddStringToObject(req, "submission_id", c->submission_id);
#define JSON_OPT(opt, key, what) do { if (opt) { \
        if (!(v = cJSON_Parse(opt)) || !cJSON_IsObject(v)) { \
            cJSON_Delete(v); \
            snprintf(msg, sizeof(msg), "Failed to parse %s into a dictionary: %.300s", what, opt); \
            py_error(x, qe, "ValueError", msg); rc = 1; goto out; } \
        cJSON_AddItemToObject(req, key, v); } } while (0)
    JSON_OPT(c->runtime_env_json, "runtime_env", "--runtime-env-json");
    JSON_OPT(c->metadata_json, "metadata", "--metadata-json");
    JSON_OPT(c->resources, "entrypoint_resources", "--entrypoint-resources");
#undef JSON_OPT
    if (c->working_dir) {
        cJSON *re = cJSON_GetObjectItemCaseSensitive(req, "runtime_env");
        if (!re)
            re = cJSON_AddObjectToObject(req, "runtime_env");
        cJSON_DeleteItemFromObjectCaseSensitive(re, "working_dir");
        cJSON_AddStringToObject(re, "working_dir", c->working_dir);
    }
    if (num_opt(x, req, c->num_cpus, "--entrypoint-num-cpus", "entrypoint_num_cpus", false, qe) ||
        num_opt(x, req, c->num_gpus, "--entrypoint-num-gpus", "entrypoint_num_gpus", false, qe) ||
        num_opt(x, req, c->memory, "--entrypoint-memory", "entrypoint_memory", true, qe)) {
        rc = 2;
        goto out;
    }
    if ((rc = sdk_connect(x, c, qo, qe)) != 0)
        goto out;
    {
        char *body = cJSON_PrintUnformatted(req);
        rc = body ? http(x, c->address, "POST", "/api/jobs/", body, &resp, err, sizeof(err))
                  : -ENOMEM;
        free(body);
    }
    if (rc < 0) {
        py_error(x, qe, "ConnectionError", err);
        rc = 1;
        goto out;
    }
    if (resp.code != 200) {
        snprintf(msg, sizeof(msg), "Request failed with status code %d: %.700s.", resp.code,
                 resp.body);
        free(resp.body);
        py_error(x, qe, "RuntimeError", msg);
        rc = 1;
        goto out;
    }
    v = cJSON_Parse(resp.body);
    free(resp.body);
    if (!(id = kobj_str(v, "submission_id"))) {
        py_error(x, qe, "RuntimeError", "the dashboard's answer has no submission_id");
        cJSON_Delete(v);
        rc = 1;
        goto out;
    }
    snprintf(status, sizeof(status), "%s", "");
    snprintf(msg, sizeof(msg), "Job '%.300s' submitted successfully", id ? id : "");
    big(x, qo, msg);
    ray__exec_printf(x, qo, "Next steps\n  Query the logs of the job:\n    ray job logs %s\n"
        "  Query the status of the job:\n    ray job status %s\n"
        "  Request the job to be stopped:\n    ray job stop %s\n\n", id, id, id);
    rc = 0;
    if (!c->no_wait) {
        char idc[300];
        snprintf(idc, sizeof(idc), "%s", id);
        ray__exec_printf(x, qo, "Tailing logs until the job exits (disable with --no-wait):\n");
        if ((rc = follow_logs(x, c->address, idc, qo, qe)) == 0) {
            log_job_status(x, c, idc, qo, qe, status, sizeof(status), &rc);
            if (rc == 0 && !strcmp(status, "FAILED"))
                rc = 1;
        }
    }
    cJSON_Delete(v);
out:
    cJSON_Delete(req);
    buf_free(&entry);
    return rc;
}

static int cli_simple(struct ray_exec *x, const struct cli *c, const char *method, const char *fmt,
                      bool qo, bool qe, struct ray_resp *resp)
{
    char path[400], err[600], msg[900];

    snprintf(path, sizeof(path), fmt, c->job ? c->job : "");
    if (http(x, c->address, method, path, NULL, resp, err, sizeof(err)) < 0) {
        py_error(x, qe, "ConnectionError", err);
        return 1;
    }
    if (resp->code != 200) {
        snprintf(msg, sizeof(msg), "Request failed with status code %d: %.700s.", resp->code,
                 resp->body);
        free(resp->body);
        resp->body = NULL;
        py_error(x, qe, "RuntimeError", msg);
        return 1;
    }
    (void)qo;
    return 0;
}

int ray__cli_ray(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe)
{
    struct cli c;
    struct ray_resp resp = { 0 };
    char status[32];
    int rc;

    if (ac < 3) {
        ray__exec_printf(x, qe, "Usage: ray job [OPTIONS] COMMAND [ARGS]...\n");
        return ac < 2 ? 0 : 2;
    }
    if (strcmp(av[2], "submit") && strcmp(av[2], "status") && strcmp(av[2], "logs") &&
        strcmp(av[2], "stop") && strcmp(av[2], "delete") && strcmp(av[2], "list")) {
        ray__exec_printf(x, qe,
            "Usage: ray job [OPTIONS] COMMAND [ARGS]...\nTry 'ray job --help' for "
            "help.\n\nError: No such command '%s'.\n", av[2]);
        return 2;
    }
    if ((rc = cli_parse(x, av, ac, &c, qe)) != 0)
        return rc;
    if (!strcmp(c.sub, "submit"))
        return cli_submit(x, &c, qo, qe);
    if ((rc = sdk_connect(x, &c, qo, qe)) != 0)
        return rc;
    if (!strcmp(c.sub, "status")) {
        log_job_status(x, &c, c.job, qo, qe, status, sizeof(status), &rc);
        return rc;
    }
    if (!strcmp(c.sub, "logs")) {
        if (c.follow) {
            if ((rc = follow_logs(x, c.address, c.job, qo, qe)) == 0)
                log_job_status(x, &c, c.job, qo, qe, status, sizeof(status), &rc);
            return rc;
        }
        if ((rc = cli_simple(x, &c, "GET", "/api/jobs/%.300s/logs", qo, qe, &resp)) == 0) {
            cJSON *j = cJSON_Parse(resp.body);
            const char *l = kobj_str(j, "logs");
            ray__exec_write(x, qo, l ? l : "", l ? strlen(l) : 0);
            cJSON_Delete(j);
        }
        free(resp.body);
        return rc;
    }
    if (!strcmp(c.sub, "stop")) {
        ray__exec_printf(x, qo, "Attempting to stop job '%s'\n", c.job);
        if ((rc = cli_simple(x, &c, "POST", "/api/jobs/%.300s/stop", qo, qe, &resp)) != 0)
            return rc;
        free(resp.body);
        if (c.no_wait)
            return 0;
        ray__exec_printf(x, qo, "Waiting for job '%s' to exit (disable with --no-wait):\n", c.job);
        for (;;) {
            char body[600];
            int code;
            cJSON *j = job_get(x, &c, c.job, &code, body, sizeof(body));
            const char *st = kobj_str(j, "status");
            if (st && ray__status_terminal(st)) {
                cJSON_Delete(j);
                log_job_status(x, &c, c.job, qo, qe, status, sizeof(status), &rc);
                return rc;
            }
            ray__exec_printf(x, qo, "Job has not exited yet. Status: %s\n", st ? st : "UNKNOWN");
            cJSON_Delete(j);
            if (!st || ray__exec_nap(x, 1000) < 0)
                return 1;
        }
    }
    if (!strcmp(c.sub, "delete")) {
        if ((rc = cli_simple(x, &c, "DELETE", "/api/jobs/%.300s", qo, qe, &resp)) == 0)
            ray__exec_printf(x, qo, "Job '%s' deleted successfully\n", c.job);
        free(resp.body);
        return rc;
    }
    /* list */
    if ((rc = cli_simple(x, &c, "GET", "/api/jobs/", qo, qe, &resp)) == 0) {
        ray__exec_write(x, qo, resp.body, resp.len);
        ray__exec_printf(x, qo, "\n");
    }
    free(resp.body);
    return rc;
}

/* KubeRay's light-weight submitter (ray-operator/rayjob-submitter/cmd/main.go). */
int ray__cli_lightweight(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe)
{
    const char *addr = ray__exec_env(x, "RAY_DASHBOARD_ADDRESS");
    const char *id = ray__exec_env(x, "RAY_JOB_SUBMISSION_ID");
    cJSON *req = cJSON_CreateObject();
    struct buf entry = { 0 }, url = { 0 };
    char *const *words = NULL;
    struct ray_resp resp;
    char err[600];
    size_t nw = 0, i = 1;
    int rc = 1;

    if (!req)
        return 1;
    if (!addr || !*addr) {
        ray__exec_printf(x, qe,
            "ERROR --  missing RAY_DASHBOARD_ADDRESS in environment variables\n");
        goto out;
    }
    if (!id || !*id) {
        ray__exec_printf(x, qe,
            "ERROR --  missing RAY_JOB_SUBMISSION_ID in environment variables\n");
        goto out;
    }
    while (i < ac) {
        const char *a = av[i];
        const char *key = !strcmp(a, "--runtime-env-json") ? "runtime_env" :
                          !strcmp(a, "--metadata-json") ? "metadata" :
                          !strcmp(a, "--entrypoint-resources") ? "entrypoint_resources" :
                          !strcmp(a, "--entrypoint-num-cpus") ? "entrypoint_num_cpus" :
                          !strcmp(a, "--entrypoint-num-gpus") ? "entrypoint_num_gpus" : NULL;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!key) {
            if (a[0] == '-') {
                ray__exec_printf(x, qe, "unknown flag: %s\n", a);
                rc = 2;
                goto out;
            }
            break;
        }
        if (i + 1 >= ac) {
            ray__exec_printf(x, qe, "flag needs an argument: %s\n", a);
            rc = 2;
            goto out;
        }
        if (!strncmp(key, "entrypoint_num", 14)) {
            cJSON_AddNumberToObject(req, key, strtod(av[i + 1], NULL));
        } else {
            cJSON *v = cJSON_Parse(av[i + 1]);
            if (!cJSON_IsObject(v)) {
                cJSON_Delete(v);
                ray__exec_printf(x, qe, "ERROR --  invalid character in %s\n", a);
                goto out;
            }
            cJSON_AddItemToObject(req, key, v);
        }
        i += 2;
    }
    words = av + i;
    nw = ac - i;
    for (size_t k = 0; k < nw; k++)
        if (buf_puts(&entry, k ? " " : "") < 0 || buf_puts(&entry, words[k]) < 0)
            goto out;
    cJSON_AddStringToObject(req, "entrypoint", entry.data ? entry.data : "");
    cJSON_AddStringToObject(req, "submission_id", id);
    if (buf_printf(&url, "%s%s", strncmp(addr, "http://", 7) ? "http://" : "", addr) < 0)
        goto out;
    {
        char *body = cJSON_PrintUnformatted(req);
        int hr = body ? http(x, url.data, "POST", "/api/jobs/", body, &resp, err, sizeof(err))
                      : -ENOMEM;
        free(body);
        if (hr < 0) {
            ray__exec_printf(x, qe, "ERROR --  Post \"%s/api/jobs/\": %s\n", url.data, err);
            goto out;
        }
    }
    if (resp.code < 200 || resp.code > 299) {
        if (strstr(resp.body, "Please use a different submission_id")) {
            ray__exec_printf(x, qo,
                "INFO -- Job '%s' has already been submitted, tailing logs.\n", id);
        } else {
            ray__exec_printf(x, qe, "ERROR --  SubmitJob fail: %d %s\n", resp.code, resp.body);
            free(resp.body);
            goto out;
        }
    } else {
        ray__exec_printf(x, qo, "SUCC -- Job '%s' submitted successfully\n", id);
    }
    free(resp.body);
    ray__exec_printf(x, qo, "INFO -- Tailing logs until the job finishes:\n");
    if (follow_logs(x, url.data, id, qo, qe) != 0)
        goto out;
    ray__exec_printf(x, qo, "SUCC -- Job '%s' succeeded\n", id);
    rc = 0;
out:
    cJSON_Delete(req);
    buf_free(&entry);
    buf_free(&url);
    return rc;
}

/* python -c "...urlopen('URL', timeout=N)... b'success' in r.read()..." (KubeRay's
 * BasePythonHealthCommand): 0 when URL answers 200 with "success". */
int ray__cli_python(struct ray_exec *x, char *const *av, size_t ac, bool qe)
{
    const char *code = ac >= 3 && !strcmp(av[1], "-c") ? av[2] : NULL, *u, *e;
    char url[512], err[300];
    const char *path;
    struct ray_resp resp;
    int rc;

    if (!code || !(u = strstr(code, "urlopen('")) || !(e = strchr(u + 9, '\''))) {
        ray__exec_printf(x, qe, "bash: line 1: %s: command not found\n", av[0]);
        return 127;
    }
    snprintf(url, sizeof(url), "%.*s", (int)(e - u - 9), u + 9);
    path = strstr(url, "://") ? strchr(strstr(url, "://") + 3, '/') : strchr(url, '/');
    if (http(x, url, "GET", path ? path : "/", NULL, &resp, err, sizeof(err)) < 0) {
        ray__exec_printf(x, qe,
            "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>\n");
        return 1;
    }
    rc = resp.code == 200 && resp.body && strstr(resp.body, "success") ? 0 : 1;
    if (resp.code != 200)
        ray__exec_printf(x, qe, "urllib.error.HTTPError: HTTP Error %d\n", resp.code);
    free(resp.body);
    return rc;
}

/* GNU wget, the part KubeRay v1.5 runs (BaseWgetHealthCommand: `wget --tries 1 -T N -q -O-
 * URL | grep success`, in its exec probes and its sidecar submitter's wait loop): one GET,
 * the body to standard output with -O- (discarded otherwise: the sandbox has no files).
 * Exit codes as wget's: 0, 2 a usage error, 4 the network failed, 8 the server answered
 * with an error status. There is no time to wait for (the dashboards are in-process), so
 * --tries and -T are read and checked, not used. */
int ray__cli_wget(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe)
{
    static const char *const valued[] = { "--tries", "-t", "--timeout", "-T", "-O",
                                          "--output-document", NULL };
    const char *url = NULL, *out = NULL, *path;
    bool quiet = false;
    struct ray_resp resp;
    char err[300];

    for (size_t i = 1; i < ac; i++) {
        const char *a = av[i], *val = NULL;
        char name[32];
        size_t k, nl;

        if (a[0] != '-' || !a[1]) {
            if (url) {
                ray__exec_printf(x, qe, "wget: only one URL is read here: %s\n", a);
                return 2;
            }
            url = a;
            continue;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
            continue;
        }
        /* --name=value, --name value, -Xvalue, -X value */
        nl = a[1] == '-' ? strcspn(a, "=") : 2;
        if (nl >= sizeof(name))
            nl = sizeof(name) - 1;
        memcpy(name, a, nl);
        name[nl] = '\0';
        for (k = 0; valued[k] && strcmp(valued[k], name); k++)
            ;
        if (!valued[k]) {
            ray__exec_printf(x, qe, "wget: unrecognized option '%s'\nUsage: wget [OPTION]... "
                             "[URL]...\n", a);
            return 2;
        }
        if (a[nl] == '=' || (a[1] != '-' && a[nl]))
            val = a + nl + (a[nl] == '=');
        else if (i + 1 < ac)
            val = av[++i];
        else {
            ray__exec_printf(x, qe, "wget: option requires an argument -- '%s'\n", name);
            return 2;
        }
        if (!strcmp(name, "-O") || !strcmp(name, "--output-document")) {
            out = val;
        } else {
            char *end;
            double v = strtod(val, &end);
            if (end == val || *end || v < 0) {
                ray__exec_printf(x, qe, "wget: %s: Invalid number '%s'.\n", name, val);
                return 2;
            }
        }
    }
    if (!url) {
        ray__exec_printf(x, qe, "wget: missing URL\nUsage: wget [OPTION]... [URL]...\n");
        return 1;
    }
    path = strstr(url, "://") ? strchr(strstr(url, "://") + 3, '/') : strchr(url, '/');
    if (!quiet)
        ray__exec_printf(x, qe, "--  %s\n", url);
    if (http(x, url, "GET", path ? path : "/", NULL, &resp, err, sizeof(err)) < 0) {
        if (!quiet)
            ray__exec_printf(x, qe, "Connecting to %s... failed: Connection refused.\n", url);
        return 4;
    }
    if (resp.code < 200 || resp.code > 299) {
        if (!quiet)
            ray__exec_printf(x, qe, "HTTP request sent, awaiting response... %d\nERROR %d.\n",
                             resp.code, resp.code);
        free(resp.body);
        return 8;
    }
    if (!quiet)
        ray__exec_printf(x, qe, "HTTP request sent, awaiting response... %d OK\n", resp.code);
    if (out && !strcmp(out, "-"))
        ray__exec_stdout(x, qo, resp.body, strlen(resp.body));
    free(resp.body);
    return 0;
}

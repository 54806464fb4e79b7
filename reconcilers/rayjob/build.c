/*
 * build.c - the objects the RayJob controller creates, as KubeRay v1.7 builds
 * them: the RayCluster (constructRayClusterForRayJob), the submitter batch Job
 * (createNewK8sJob, common.GetSubmitterTemplate, configureSubmitterContainer),
 * the SidecarMode submitter container, the `ray job submit` shell command
 * (common.BuildJobSubmitCommand, byte for byte: kubesim's submitter player
 * parses it) and the HTTPMode Jobs API body (ConvertRayJobToReq).
 * Pure: every function returns a new object or string the caller owns.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayjob/internal.h"
#include "kobj/yamljson.h"
#include "util/util.h"

#define GCS_HEALTH_PATH "api/gcs_healthz"
#define GCS_HEALTH_TIMEOUT_S 10

/* Go's strconv.Quote for the UTF-8 text KubeRay quotes (JSON, resources). */
static int go_quote(struct buf *b, const char *s)
{
    int rc = buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p && rc == 0; p++) {
        switch (*p) {
        case '"':  rc = buf_puts(b, "\\\""); break;
        case '\\': rc = buf_puts(b, "\\\\"); break;
        case '\a': rc = buf_puts(b, "\\a"); break;
        case '\b': rc = buf_puts(b, "\\b"); break;
        case '\f': rc = buf_puts(b, "\\f"); break;
        case '\n': rc = buf_puts(b, "\\n"); break;
        case '\r': rc = buf_puts(b, "\\r"); break;
        case '\t': rc = buf_puts(b, "\\t"); break;
        case '\v': rc = buf_puts(b, "\\v"); break;
        default:
            rc = *p < 0x20 || *p == 0x7f ? buf_printf(b, "\\x%02x", *p) : buf_append(b, p, 1);
        }
    }
    return rc ? rc : buf_puts(b, "\"");
}

/* Go's encoding/json writes map keys sorted: sort every object the same way
 * so --runtime-env-json / --metadata-json read as KubeRay's. */
static void sort_keys(cJSON *v)
{
    if (!v)
        return;
    for (cJSON *c = v->child; c; c = c->next)
        sort_keys(c);
    if (!cJSON_IsObject(v) || !v->child)
        return;
    /* insertion sort of the child list by key; objects here are small */
    cJSON *sorted = NULL;
    while (v->child) {
        cJSON *c = v->child;
        v->child = c->next;
        cJSON **pp = &sorted;
        while (*pp && strcmp((*pp)->string, c->string) <= 0)
            pp = &(*pp)->next;
        c->next = *pp;
        *pp = c;
    }
    cJSON *prev = NULL;
    for (cJSON *c = sorted; c; c = c->next) {
        c->prev = prev;
        prev = c;
    }
    if (sorted)
        sorted->prev = prev;   /* cJSON keeps the tail in the head's prev */
    v->child = sorted;
}

int rj_runtime_env(const cJSON *rj, cJSON **out, char *err, size_t errlen)
{
    const char *y = rj_str(rj, "spec.runtimeEnvYAML");
    cJSON *docs = NULL, *doc;
    *out = NULL;
    if (!*y)
        return 0;
    int rc = yamljson_parse_all(y, strlen(y), &docs, err, errlen);
    if (rc < 0)
        return rc == -ENOMEM ? rc : -EINVAL;
    /* yaml.Unmarshal reads the first document; none (only comments) is an empty map */
    doc = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    if (!doc)
        return 0;
    if (cJSON_IsNull(doc)) {
        cJSON_Delete(doc);
        return 0;
    }
    if (!cJSON_IsObject(doc)) {
        snprintf(err, errlen, "runtimeEnvYAML is not a mapping");
        cJSON_Delete(doc);
        return -EINVAL;
    }
    *out = doc;
    return 0;
}

/* Compact JSON of v with sorted keys, Go-quoted, appended to b. */
static int add_json_arg(struct buf *b, const char *flag, cJSON *v)
{
    sort_keys(v);
    char *s = cJSON_PrintUnformatted(v);
    if (!s)
        return -ENOMEM;
    int rc = buf_printf(b, " %s ", flag);
    if (rc == 0)
        rc = go_quote(b, s);
    free(s);
    return rc;
}

static int dashboard_port(const cJSON *rj)
{
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(rj, "spec"), "rayClusterSpec"),
                "headGroupSpec"), "template"), "spec"), "containers"), 0);
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c0, "ports")) {
        int64_t port;
        if (strcmp(rj_str(p, "name"), "dashboard") == 0 && rj_int(p, "containerPort", &port) == 0)
            return (int)port;
    }
    return 8265;
}

char *rj_build_submit_command(const cJSON *rj, const cJSON *st, const char *mode,
                              bool sidecar_restart, int *err)
{
    struct buf b = { 0 };
    char address[600], health[700];
    bool sidecar = strcmp(mode, "SidecarMode") == 0;
    const char *job_id = rj_str(st, "jobId");
    cJSON *env = NULL, *md = NULL;
    char yerr[256];
    int rc = 0, port = 8265;
    if (sidecar) {
        port = dashboard_port(rj);
        snprintf(address, sizeof(address), "http://127.0.0.1:%d", port);
        snprintf(health, sizeof(health), "http://localhost:%d/" GCS_HEALTH_PATH, port);
    } else if (strcmp(mode, "K8sJobMode") == 0) {
        const char *url = rj_str(st, "dashboardURL");
        snprintf(address, sizeof(address), "%s%s", strncmp(url, "http://", 7) ? "http://" : "", url);
        snprintf(health, sizeof(health), "%s/" GCS_HEALTH_PATH, address);
    } else {
        rc = -EINVAL;
        goto out;
    }
    bool status_check = !sidecar || sidecar_restart;
    /* wait until the dashboard's GCS is healthy */
    rc = buf_printf(&b, "until python -c \"import urllib.request; r=urllib.request.urlopen('%s', "
                    "timeout=%d); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; do "
                    "echo ", health, GCS_HEALTH_TIMEOUT_S);
    char waitmsg[700];
    snprintf(waitmsg, sizeof(waitmsg), "Waiting for Ray Dashboard GCS to become healthy at %s ...",
             address);
    if (rc == 0)
        rc = go_quote(&b, waitmsg);
    if (rc == 0)
        rc = buf_puts(&b, " ; sleep 2 ; done ;");
    if (rc == 0 && status_check)
        rc = buf_printf(&b, " if ! ray job status --address %s %s >/dev/null 2>&1 ; then", address,
                        job_id);
    if (rc == 0)
        rc = buf_printf(&b, " ray job submit --address %s", address);
    if (rc == 0 && status_check)
        rc = buf_puts(&b, " --no-wait");
    if (rc == 0 && (rc = rj_runtime_env(rj, &env, yerr, sizeof(yerr))) == 0 && env) {
        /* YAMLToJSON */
        rc = add_json_arg(&b, "--runtime-env-json", env);
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rj, "spec"), "metadata");
    if (rc == 0 && cJSON_IsObject(meta) && meta->child) {
        const char *rv = rj_str(rj, "spec.rayClusterSpec.rayVersion");
        int maj = 0, min = 0;
        if (*rv && (sscanf(rv, "%d.%d", &maj, &min) != 2 || maj < 2 || (maj == 2 && min < 6))) {
            rc = -EINVAL;   /* --metadata-json needs Ray >= 2.6.0 */
            goto out;
        }
        if (!(md = cJSON_Duplicate(meta, 1)))
            rc = -ENOMEM;
        else
            rc = add_json_arg(&b, "--metadata-json", md);
    }
    if (rc == 0 && *job_id)
        rc = buf_printf(&b, " --submission-id %s", job_id);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(rj, "spec");
    const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(spec, "entrypointNumCpus");
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(spec, "entrypointNumGpus");
    if (rc == 0 && cJSON_IsNumber(cpus) && cpus->valuedouble > 0)
        rc = buf_printf(&b, " --entrypoint-num-cpus %f", (double)(float)cpus->valuedouble);
    if (rc == 0 && cJSON_IsNumber(gpus) && gpus->valuedouble > 0)
        rc = buf_printf(&b, " --entrypoint-num-gpus %f", (double)(float)gpus->valuedouble);
    const char *res = rj_str(rj, "spec.entrypointResources");
    if (rc == 0 && *res) {
        rc = buf_puts(&b, " --entrypoint-resources ");
        if (rc == 0)
            rc = go_quote(&b, res);
    }
    /* strings.TrimSpace(entrypoint), then "--" ENTRYPOINT ";" */
    const char *ep = rj_str(rj, "spec.entrypoint");
    while (*ep == ' ' || *ep == '\t' || *ep == '\n' || *ep == '\r' || *ep == '\v' || *ep == '\f')
        ep++;
    size_t eplen = strlen(ep);
    while (eplen && strchr(" \t\n\r\v\f", ep[eplen - 1]))
        eplen--;
    if (rc == 0)
        rc = buf_puts(&b, " -- ");
    if (rc == 0)
        rc = buf_append(&b, ep, eplen);
    if (rc == 0)
        rc = buf_puts(&b, " ;");
    if (rc == 0 && status_check)
        rc = buf_printf(&b, " fi ; ray job logs --address %s --follow %s", address, job_id);
out:
    cJSON_Delete(env);
    cJSON_Delete(md);
    if (rc < 0) {
        buf_free(&b);
        if (err)
            *err = rc;
        return NULL;
    }
    return buf_steal(&b);
}

static cJSON *owner_ref(const cJSON *rj)
{
    return kobj_controller_refs("ray.io/v1", "RayJob", rj);
}

/* A copy of rj's metadata.FIELD (labels/annotations), or an empty object. */
static cJSON *copy_map(const cJSON *rj, const char *field)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rj, "metadata"), field);
    return cJSON_IsObject(m) ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
}

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v);
}

static void origin_labels(cJSON *labels, const cJSON *rj, bool created_by)
{
    set_str(labels, "ray.io/originated-from-cr-name", rj_str(rj, "metadata.name"));
    set_str(labels, "ray.io/originated-from-crd", "RayJob");
    if (created_by)
        set_str(labels, "app.kubernetes.io/created-by", "kuberay-operator");
}

/* GetDefaultSubmitterContainer: the head's image, KubeRay's fixed resources. */
static cJSON *default_submitter(const cJSON *rcs)
{
    const cJSON *head = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(rcs, "headGroupSpec"), "template"), "spec"),
        "containers"), 0);
    cJSON *c = cJSON_CreateObject();
    if (!c)
        return NULL;
    cJSON_AddStringToObject(c, "name", RJ_SUBMITTER_CONTAINER);
    cJSON_AddStringToObject(c, "image", rj_str(head, "image"));
    cJSON *res = cJSON_AddObjectToObject(c, "resources");
    cJSON *lim = cJSON_AddObjectToObject(res, "limits");
    cJSON *req = cJSON_AddObjectToObject(res, "requests");
    cJSON_AddStringToObject(lim, "cpu", "1");
    cJSON_AddStringToObject(lim, "memory", "1Gi");
    cJSON_AddStringToObject(req, "cpu", "500m");
    cJSON_AddStringToObject(req, "memory", "200Mi");
    return c;
}

/* An EnvVar as KubeRay's Go client sends it: core/v1 EnvVar's value is omitempty, so an
 * empty value (the sidecar's RAY_DASHBOARD_ADDRESS before the status has a URL) is left
 * out rather than sent as "". */
static void add_env(cJSON *c, const char *name, const char *value)
{
    cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
    if (!cJSON_IsArray(env)) {
        cJSON_DeleteItemFromObjectCaseSensitive(c, "env");
        env = cJSON_AddArrayToObject(c, "env");
    }
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    if (value && *value)
        cJSON_AddStringToObject(e, "value", value);
    cJSON_AddItemToArray(env, e);
}

/* configureSubmitterContainer; cluster (may be NULL) is the RayCluster the job runs
 * on: a token-auth cluster gives the submitter RAY_AUTH_MODE and RAY_AUTH_TOKEN. */
static int configure_submitter(cJSON *c, const cJSON *rj, const cJSON *st, const char *mode,
                               bool sidecar_restart, const cJSON *cluster)
{
    int err = 0;
    char *cmd = rj_build_submit_command(rj, st, mode, sidecar_restart, &err);
    if (!cmd)
        return err ? err : -ENOMEM;
    const cJSON *have = cJSON_GetObjectItemCaseSensitive(c, "command");
    if (cJSON_GetArraySize(have) == 0 || strcmp(mode, "SidecarMode") == 0) {
        const char *login = getenv("ENABLE_LOGIN_SHELL");
        const char *shell_opts = login && strcasecmp(login, "true") == 0 ? "-cel" : "-ce";
        const char *argv0[] = { "/bin/bash", shell_opts, "--" };
        cJSON_DeleteItemFromObjectCaseSensitive(c, "command");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "args");
        cJSON_AddItemToObject(c, "command", cJSON_CreateStringArray(argv0, 3));
        const char *args[] = { cmd };
        cJSON_AddItemToObject(c, "args", cJSON_CreateStringArray(args, 1));
    }
    free(cmd);
    add_env(c, "PYTHONUNBUFFERED", "1");
    add_env(c, "RAY_DASHBOARD_ADDRESS", rj_str(st, "dashboardURL"));
    add_env(c, "RAY_JOB_SUBMISSION_ID", rj_str(st, "jobId"));
    return cluster ? rc_auth_env_for(cluster, c) : 0;
}

cJSON *rj_build_cluster(const cJSON *rj, const cJSON *st, bool sidecar_restart, int *err)
{
    const cJSON *rcs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rj, "spec"), "rayClusterSpec");
    const char *mode = rj_mode(rj);
    int rc = -ENOMEM;
    cJSON *c = cJSON_CreateObject(), *md = NULL, *spec;
    if (!c || !cJSON_IsObject(rcs)) {
        rc = c ? -EINVAL : -ENOMEM;
        goto fail;
    }
    cJSON_AddStringToObject(c, "apiVersion", "ray.io/v1");
    cJSON_AddStringToObject(c, "kind", "RayCluster");
    md = cJSON_AddObjectToObject(c, "metadata");
    cJSON_AddStringToObject(md, "name", rj_str(st, "rayClusterName"));
    cJSON_AddStringToObject(md, "namespace", rj_str(rj, "metadata.namespace"));
    cJSON *labels = copy_map(rj, "labels"), *ann = copy_map(rj, "annotations");
    cJSON_AddItemToObject(md, "labels", labels);
    cJSON_AddItemToObject(md, "annotations", ann);
    if (!labels || !ann)
        goto fail;
    origin_labels(labels, rj, false);
    set_str(labels, "ray.io/job-submission-mode", mode);
    if (strcmp(mode, "SidecarMode") == 0)
        set_str(ann, "ray.io/disable-provisioned-head-restart", "true");
    cJSON_AddItemToObject(md, "ownerReferences", owner_ref(rj));
    if (!(spec = cJSON_Duplicate(rcs, 1)) || !cJSON_AddItemToObject(c, "spec", spec))
        goto fail;
    if (strcmp(mode, "SidecarMode") == 0) {
        cJSON *tspec = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "headGroupSpec"),
                                             "template"), "spec");
        cJSON *containers = cJSON_GetObjectItemCaseSensitive(tspec, "containers");
        cJSON *sub = default_submitter(rcs);
        if (!cJSON_IsArray(containers) || !sub) {
            cJSON_Delete(sub);
            rc = sub ? -EINVAL : -ENOMEM;
            goto fail;
        }
        if ((rc = configure_submitter(sub, rj, st, "SidecarMode", sidecar_restart, c)) < 0) {
            cJSON_Delete(sub);
            goto fail;
        }
        /* SidecarSubmitterRestart: only the submitter restarts, on a non-zero exit */
        if (sidecar_restart)
            cJSON_AddStringToObject(sub, "restartPolicy", "OnFailure");
        cJSON_AddItemToArray(containers, sub);
        set_str(tspec, "restartPolicy", "Never");
    }
    return c;
fail:
    cJSON_Delete(c);
    if (err)
        *err = rc;
    return NULL;
}

cJSON *rj_build_submitter(const cJSON *rj, const cJSON *cluster, const cJSON *st, int *err)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(rj, "spec");
    /* GetDefaultSubmitterTemplate(&rayClusterInstance.Spec): the cluster the
     * job runs on, which with a clusterSelector is not in the RayJob at all */
    const cJSON *rcs = cJSON_GetObjectItemCaseSensitive(cluster, "spec");
    if (!cJSON_IsObject(rcs))
        rcs = cJSON_GetObjectItemCaseSensitive(spec, "rayClusterSpec");
    const cJSON *tmpl_in = cJSON_GetObjectItemCaseSensitive(spec, "submitterPodTemplate");
    int rc = -ENOMEM;
    cJSON *job = cJSON_CreateObject(), *tmpl = NULL;
    if (!job)
        goto fail;
    if (cJSON_IsObject(tmpl_in)) {
        tmpl = cJSON_Duplicate(tmpl_in, 1);
    } else {
        tmpl = cJSON_CreateObject();
        cJSON *ps = cJSON_AddObjectToObject(tmpl, "spec");
        cJSON *cs = cJSON_AddArrayToObject(ps, "containers");
        cJSON_AddItemToArray(cs, default_submitter(rcs));
        cJSON_AddStringToObject(ps, "restartPolicy", "Never");
    }
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(tmpl, "spec"), "containers"), 0);
    if (!c0) {
        rc = -EINVAL;
        goto fail;
    }
    if ((rc = configure_submitter(c0, rj, st, "K8sJobMode", false, cluster)) < 0)
        goto fail;
    cJSON *tmd = cJSON_GetObjectItemCaseSensitive(tmpl, "metadata");
    if (!cJSON_IsObject(tmd)) {
        cJSON_DeleteItemFromObjectCaseSensitive(tmpl, "metadata");
        tmd = cJSON_AddObjectToObject(tmpl, "metadata");
    }
    cJSON *tl = cJSON_GetObjectItemCaseSensitive(tmd, "labels");
    if (!cJSON_IsObject(tl)) {
        cJSON_DeleteItemFromObjectCaseSensitive(tmd, "labels");
        tl = cJSON_AddObjectToObject(tmd, "labels");
    }
    origin_labels(tl, rj, true);

    cJSON_AddStringToObject(job, "apiVersion", "batch/v1");
    cJSON_AddStringToObject(job, "kind", "Job");
    cJSON *md = cJSON_AddObjectToObject(job, "metadata");
    cJSON_AddStringToObject(md, "name", rj_str(rj, "metadata.name"));
    cJSON_AddStringToObject(md, "namespace", rj_str(rj, "metadata.namespace"));
    cJSON *labels = cJSON_AddObjectToObject(md, "labels");
    origin_labels(labels, rj, true);
    cJSON_AddItemToObject(md, "ownerReferences", owner_ref(rj));
    cJSON *js = cJSON_AddObjectToObject(job, "spec");
    int64_t backoff = 2;
    (void)rj_int(rj, "spec.submitterConfig.backoffLimit", &backoff);
    cJSON_AddNumberToObject(js, "backoffLimit", (double)backoff);
    cJSON_AddItemToObject(js, "template", tmpl);
    tmpl = NULL;
    if (!cJSON_GetObjectItemCaseSensitive(md, "ownerReferences"))
        goto fail;
    return job;
fail:
    cJSON_Delete(tmpl);
    cJSON_Delete(job);
    if (err)
        *err = rc;
    return NULL;
}

char *rj_build_submit_body(const cJSON *rj, const cJSON *st, int *err)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(rj, "spec");
    cJSON *env = NULL, *res = NULL;
    char yerr[256], *body = NULL;
    int rc = rj_runtime_env(rj, &env, yerr, sizeof(yerr));
    if (rc < 0)
        goto out;
    const char *r = rj_str(rj, "spec.entrypointResources");
    if (*r && !(res = cJSON_Parse(r))) {
        rc = -EINVAL;   /* json.Unmarshal into map[string]float32 */
        goto out;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(spec, "metadata");
    const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(spec, "entrypointNumCpus");
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(spec, "entrypointNumGpus");
    struct dash_submit s = {
        .entrypoint = rj_str(rj, "spec.entrypoint"),
        .submission_id = rj_str(st, "jobId"),
        .runtime_env = env,
        .metadata = cJSON_IsObject(meta) && meta->child ? meta : NULL,
        .resources = cJSON_IsObject(res) ? res : NULL,
        .num_cpus = cJSON_IsNumber(cpus) ? cpus->valuedouble : 0,
        .num_gpus = cJSON_IsNumber(gpus) ? gpus->valuedouble : 0,
    };
    if (res && !cJSON_IsObject(res))
        rc = -EINVAL;
    else if (!(body = dash_submit_body(&s)))
        rc = -ENOMEM;
out:
    cJSON_Delete(env);
    cJSON_Delete(res);
    if (rc < 0 && err)
        *err = rc;
    return rc < 0 ? NULL : body;
}

cJSON *rj_build_head_service(const cJSON *rj, const cJSON *cluster, int *err)
{
    struct rc_build_opts o;
    char ident[128];
    int rc = 0;
    rc_build_opts_default(&o);
    cJSON *svc = rc_build_head_service(cluster, &o, &rc);
    if (!svc) {
        if (err)
            *err = rc ? rc : -ENOMEM;
        return NULL;
    }
    cJSON *md = cJSON_GetObjectItemCaseSensitive(svc, "metadata");
    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObjectCaseSensitive(svc, "metadata");
        md = cJSON_AddObjectToObject(svc, "metadata");
    }
    char name[300];
    snprintf(name, sizeof(name), "%s-head-svc", rj_str(rj, "metadata.name"));
    set_str(md, "name", name);
    set_str(md, "namespace", rj_str(rj, "metadata.namespace"));
    cJSON_DeleteItemFromObjectCaseSensitive(md, "generateName");
    cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
    cJSON *labels = cJSON_AddObjectToObject(md, "labels");
    /* KubeRay sets no created-by label here (its cache holds every Service);
     * rayop's watcher caches only created-by Services, so without it the
     * Service would never be seen and never re-pointed after a retry. */
    origin_labels(labels, rj, true);
    set_str(labels, "ray.io/node-type", "head");
    /* utils.CheckLabel: a label value keeps its last 63 characters */
    snprintf(ident, sizeof(ident), "%s-head", rj_str(rj, "metadata.name"));
    size_t n = strlen(ident);
    set_str(labels, "ray.io/identifier", n > 63 ? ident + n - 63 : ident);
    cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
    cJSON *refs = owner_ref(rj);
    if (!refs || !cJSON_AddItemToObject(md, "ownerReferences", refs)) {
        cJSON_Delete(refs);
        cJSON_Delete(svc);
        if (err)
            *err = -ENOMEM;
        return NULL;
    }
    return svc;
}

/*
 * build_pod.c - the head and worker Pods of a RayCluster, as KubeRay v1.7 builds
 * them (DefaultHeadPodTemplate / DefaultWorkerPodTemplate, then BuildPod, then
 * buildHeadPod / buildWorkerPod in raycluster_controller.go).
 *
 * Steps run in KubeRay's order because the order is visible: env vars are
 * appended, so the Ray container's env list must come out in the same sequence,
 * and the wait-gcs-ready init container copies the Ray container's env before
 * any of KubeRay's variables are added.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "reconcilers/batchsched/batchsched.h"
#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

/* Everything one Pod build needs, computed once. */
struct podb {
    struct rcb b;
    const cJSON *rc, *group;  /* group: the worker group, or the headGroupSpec */
    bool head;
    const struct rc_build_opts *o;
    char fqdn[512], port[64];
    struct rc_params params;
    cJSON *pod, *meta, *spec, *ray; /* ray: spec.containers[0] */
};

/* utils.PodName: the first 50 characters of prefix, "-head"/"-worker", lower-cased. */
static void pod_name(const char *prefix, const char *type, bool generate, char *out, size_t cap)
{
    snprintf(out, cap, "%.50s-%s%s", prefix, type, generate ? "-" : "");
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
}

/* labelPod over the template labels merged with the group's labels field. */
static void pod_labels(struct podb *pb)
{
    struct rcb *b = &pb->b;
    const char *type = pb->head ? RC_NODE_HEAD : RC_NODE_WORKER;
    const char *gname = pb->head ? RC_HEAD_GROUP_NAME : kobj_str(pb->group, "groupName");
    const cJSON *srcs[2] = { raycluster__json_path(pb->group, "template", "metadata", "labels", NULL),
                             kobj_get(pb->group, "labels") };
    char id[300], tmp[300];
    cJSON *labels = cJSON_CreateObject();
    if (!labels) {
        b->err = -ENOMEM;
        return;
    }
    raycluster__build_set(b, pb->meta, "labels", labels);
    snprintf(tmp, sizeof(tmp), "%s-%s", raycluster__name(pb->rc), type);
    raycluster__check_label(tmp, id, sizeof(id));
    raycluster__build_set_str(b, labels, RC_LABEL_IS_RAY_NODE, "yes");
    raycluster__build_set_str(b, labels, RC_LABEL_CLUSTER, raycluster__name(pb->rc));
    raycluster__build_set_str(b, labels, RC_LABEL_NODE_TYPE, type);
    raycluster__build_set_str(b, labels, RC_LABEL_GROUP, gname ? gname : "");
    raycluster__build_set_str(b, labels, RC_LABEL_IDENTIFIER, id);
    raycluster__build_set_str(b, labels, RC_LABEL_APP_NAME, RC_APP_NAME);
    raycluster__build_set_str(b, labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    for (int i = 0; i < 2; i++) {
        const cJSON *l;
        cJSON_ArrayForEach(l, (cJSON_IsObject(srcs[i]) ? srcs[i] : NULL)) {
            if (!l->string || !cJSON_IsString(l) || !strcmp(l->string, RC_LABEL_NODE_TYPE) ||
                !strcmp(l->string, RC_LABEL_GROUP) || !strcmp(l->string, RC_LABEL_CLUSTER))
                continue; /* not overridable */
            raycluster__build_set_str(b, labels, l->string, l->valuestring);
        }
    }
}

/* The wait-gcs-ready init container (DefaultWorkerPodTemplate), built from the Ray
 * container as the user wrote it. */
static void add_wait_gcs_ready(struct podb *pb)
{
    static const char script[] =
        "\n\t\t\t\t\tSECONDS=0\n\t\t\t\t\twhile true; do\n\t\t\t\t\t\tif (( SECONDS <= 120 )); then\n"
        "\t\t\t\t\t\t\tif ray health-check --address %s:%s > /dev/null 2>&1; then\n"
        "\t\t\t\t\t\t\t\techo \"GCS is ready.\"\n\t\t\t\t\t\t\t\tbreak\n\t\t\t\t\t\t\tfi\n"
        "\t\t\t\t\t\t\techo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"\n"
        "\t\t\t\t\t\telse\n\t\t\t\t\t\t\tif ray health-check --address %s:%s; then\n"
        "\t\t\t\t\t\t\t\techo \"GCS is ready. Any error messages above can be safely ignored.\"\n"
        "\t\t\t\t\t\t\t\tbreak\n\t\t\t\t\t\t\tfi\n"
        "\t\t\t\t\t\t\techo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready. For "
        "troubleshooting, refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/"
        "troubleshooting.html.\"\n\t\t\t\t\t\tfi\n\t\t\t\t\t\tsleep 5\n\t\t\t\t\tdone\n\t\t\t\t";
    struct rcb *b = &pb->b;
    const char *cmd[3] = { "/bin/bash", pb->o->enable_login_shell ? "-cl" : "-c", "--" };
    char *arg;
    size_t n = sizeof(script) + 2 * (strlen(pb->fqdn) + strlen(pb->port));
    cJSON *c;
    if (b->err)
        return;
    if (!(c = cJSON_CreateObject()) || !(arg = malloc(n))) {
        cJSON_Delete(c);
        b->err = -ENOMEM;
        return;
    }
    snprintf(arg, n, script, pb->fqdn, pb->port, pb->fqdn, pb->port);
    raycluster__build_append(b, raycluster__build_arr(b, pb->spec, "initContainers"), c);
    raycluster__build_set_str(b, c, "name", RC_WAIT_GCS_CONTAINER);
    if (kobj_str(pb->ray, "image"))
        raycluster__build_set_str(b, c, "image", kobj_str(pb->ray, "image"));
    if (kobj_str(pb->ray, "imagePullPolicy"))
        raycluster__build_set_str(b, c, "imagePullPolicy", kobj_str(pb->ray, "imagePullPolicy"));
    raycluster__build_set(b, c, "command", raycluster__build_str_array(b, cmd, 3));
    raycluster__build_set(b, c, "args", raycluster__build_str_array(b, (const char *const *)&arg, 1));
    if (kobj_get(pb->ray, "securityContext"))
        raycluster__build_set(b, c, "securityContext", raycluster__build_dup(b, kobj_get(pb->ray, "securityContext")));
    if (kobj_get(pb->ray, "env"))
        raycluster__build_set(b, c, "env", raycluster__build_dup(b, kobj_get(pb->ray, "env")));
    if (kobj_get(pb->ray, "volumeMounts"))
        raycluster__build_set(b, c, "volumeMounts", raycluster__build_dup(b, kobj_get(pb->ray, "volumeMounts")));
    raycluster__build_set(b, c, "resources", raycluster__build_fixed_resources(b, "200m", "256Mi"));
    free(arg);
}

/* FindContainerPort(container, name, -1) != -1, else append {name, containerPort}. */
static void ensure_port(struct podb *pb, const char *name, int port)
{
    struct rcb *b = &pb->b;
    const cJSON *p;
    cJSON *np;
    cJSON_ArrayForEach(p, kobj_get(pb->ray, "ports")) {
        const char *n = kobj_str(p, "name");
        if (n && !strcmp(n, name))
            return;
    }
    np = raycluster__build_push(b, pb->ray, "ports");
    raycluster__build_set_str(b, np, "name", name);
    raycluster__build_set_num(b, np, "containerPort", port);
}

static bool mounted_at(const cJSON *container, const char *path)
{
    return kobj_find(kobj_get(container, "volumeMounts"), "mountPath", path) != NULL;
}

/* addEmptyDir: a volume (if no volume has the name) and a mount (if nothing is mounted
 * at the path yet). A memory-backed one is sized by the container's memory limit, else
 * its request. */
static void add_empty_dir(struct podb *pb, cJSON *container, const char *vol, const char *path,
                          bool memory)
{
    struct rcb *b = &pb->b;
    const cJSON *v;
    bool have = false;
    cJSON *nv, *m;
    if (b->err || mounted_at(container, path))
        return;
    cJSON_ArrayForEach(v, kobj_get(pb->spec, "volumes")) {
        const char *n = kobj_str(v, "name");
        if (n && !strcmp(n, vol))
            have = true;
    }
    if (!have) {
        nv = raycluster__build_push(b, pb->spec, "volumes");
        raycluster__build_set_str(b, nv, "name", vol);
        cJSON *ed = raycluster__build_obj(b, nv, "emptyDir");
        if (memory) {
            const cJSON *res = kobj_get(container, "resources");
            const cJSON *size = kobj_get(kobj_get(res, "limits"), "memory");
            if (!size)
                size = kobj_get(kobj_get(res, "requests"), "memory");
            raycluster__build_set_str(b, ed, "medium", "Memory");
            if (size)
                raycluster__build_set(b, ed, "sizeLimit", raycluster__build_dup(b, size));
        }
    }
    /* mountPath before name: the order this mount has always had (the unit fixtures
     * and the KubeRay diff compare the Pod's bytes) */
    m = raycluster__build_push(b, container, "volumeMounts");
    raycluster__build_set_str(b, m, "mountPath", path);
    raycluster__build_set_str(b, m, "name", vol);
}

/* " %s " for every element of command then args (convertCmdToString). */
static char *user_command(const cJSON *container)
{
    struct buf out = { 0 };
    const char *keys[2] = { "command", "args" };
    if (buf_puts(&out, "") < 0)
        return NULL;
    for (int i = 0; i < 2; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, kobj_get(container, keys[i])) {
            if (cJSON_IsString(e) && buf_printf(&out, " %s ", e->valuestring) < 0) {
                buf_free(&out);
                return NULL;
            }
        }
    }
    return buf_steal(&out);
}

/* BuildPod's command rewrite: unless told not to or the user already runs `ray
 * start`, the container runs bash -c "<user cmd> && ulimit ...; ray start ...". */
static void rewrite_command(struct podb *pb, const char *ray_start)
{
    struct rcb *b = &pb->b;
    const char *ov = kobj_str(kobj_get(pb->meta, "annotations"), RC_ANN_OVERWRITE_CMD);
    const char *shell[3] = { "/bin/bash", pb->o->enable_login_shell ? "-cl" : "-c", "--" };
    char *cmd, *arg;
    size_t n;
    if (b->err)
        return;
    if (!(cmd = user_command(pb->ray))) {
        b->err = -ENOMEM;
        return;
    }
    if ((ov && !strcasecmp(ov, "true")) || strstr(cmd, "ray start")) {
        free(cmd);
        return;
    }
    n = strlen(cmd) + strlen(ray_start) + 64;
    if (!(arg = malloc(n))) {
        free(cmd);
        b->err = -ENOMEM;
        return;
    }
    snprintf(arg, n, "%s%sulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; %s", cmd,
             *cmd ? " && " : "", ray_start);
    raycluster__build_set(b, pb->ray, "command", raycluster__build_str_array(b, shell, 3));
    raycluster__build_set(b, pb->ray, "args", raycluster__build_str_array(b, (const char *const *)&arg, 1));
    free(arg);
    free(cmd);
}

/* setContainerEnvVars, in KubeRay's order. */
/* RayClusterHistoryServer: BuildCollectorContainer, the history server's collector
 * sidecar on every Pod of a cluster with historyServerOptions.collectorOptions (validation
 * refuses the field unless the gate is on). It reads the Ray logs through the shared
 * ray-logs volume and receives Ray's events on port 8084. */
static const cJSON *collector_options(const cJSON *rc)
{
    const cJSON *co = kobj_get(kobj_get(raycluster__spec(rc), "historyServerOptions"), "collectorOptions");
    return cJSON_IsObject(co) ? co : NULL;
}

static cJSON *collector_find(const cJSON *spec)
{
    cJSON *c;
    cJSON_ArrayForEach(c, kobj_get(spec, "containers"))
        if (kobj_str(c, "name") && !strcmp(kobj_str(c, "name"), RC_COLLECTOR_CONTAINER))
            return c;
    return NULL;
}

static void add_collector(struct podb *pb)
{
    struct rcb *b = &pb->b;
    const cJSON *co = collector_options(pb->rc), *e;
    const cJSON *labels = kobj_get(kobj_get(pb->rc, "metadata"), "labels");
    const char *v;
    cJSON *c;
    if (!co || b->err)
        return;
    if (!(c = cJSON_CreateObject())) {
        b->err = -ENOMEM;
        return;
    }
    raycluster__build_append(b, raycluster__build_arr(b, pb->spec, "containers"), c);
    raycluster__build_set_str(b, c, "name", RC_COLLECTOR_CONTAINER);
    raycluster__build_set_str(b, c, "image", kobj_str(co, "image") ? kobj_str(co, "image") : "");
    v = kobj_str(co, "imagePullPolicy");
    raycluster__build_set_str(b, c, "imagePullPolicy", v ? v : "IfNotPresent");
    if (cJSON_IsObject(kobj_get(co, "resources"))) {
        raycluster__build_set(b, c, "resources", raycluster__build_dup(b, kobj_get(co, "resources")));
    } else {
        cJSON *res = raycluster__build_obj(b, c, "resources");
        raycluster__build_set(b, res, "limits", raycluster__build_fixed_resources(b, "200m", "256Mi"));
        raycluster__build_set(b, res, "requests", raycluster__build_fixed_resources(b, "50m", "64Mi"));
    }
    raycluster__build_arr(b, c, "env");
    raycluster__build_env_fieldref(b, c, "POD_IP", "status.podIP");
    raycluster__build_env_value(b, c, "RAY_CLUSTER_NAME", raycluster__name(pb->rc));
    raycluster__build_env_value(b, c, "RAY_CLUSTER_NAMESPACE", raycluster__namespace(pb->rc));
    raycluster__build_env_value(b, c, "RAY_ROLE", pb->head ? "Head" : "Worker");
    raycluster__build_env_value(b, c, "EVENTS_PORT", "8084");
    if (*pb->fqdn)
        raycluster__build_env_value(b, c, "FQ_RAY_IP", pb->fqdn);
    if ((v = kobj_str(labels, RC_LABEL_ORIGINATED_CRD)) && *v)
        raycluster__build_env_value(b, c, "OWNER_KIND", v);
    if ((v = kobj_str(labels, RC_LABEL_ORIGINATED_CR_NAME)) && *v)
        raycluster__build_env_value(b, c, "OWNER_NAME", v);
    if (pb->head && !raycluster__env_exists(co, "RAY_DASHBOARD_ADDRESS"))
        raycluster__build_env_value(b, c, "RAY_DASHBOARD_ADDRESS", "http://localhost:8265");
    cJSON_ArrayForEach(e, kobj_get(co, "env"))
        raycluster__build_append(b, raycluster__build_arr(b, c, "env"), raycluster__build_dup(b, e));
    /* it asks the dashboard, so it needs the Ray container's credentials */
    if (raycluster__auth_token_enabled(pb->rc))
        raycluster__auth_env(b, pb->rc, c);
}

/* the Ray container's side of the collector: Ray's events exported to it */
static void collector_ray_env(struct podb *pb)
{
    static const char *const types = "TASK_DEFINITION_EVENT,TASK_LIFECYCLE_EVENT,"
        "ACTOR_TASK_DEFINITION_EVENT,TASK_PROFILE_EVENT,DRIVER_JOB_DEFINITION_EVENT,"
        "DRIVER_JOB_LIFECYCLE_EVENT,ACTOR_DEFINITION_EVENT,ACTOR_LIFECYCLE_EVENT,"
        "NODE_DEFINITION_EVENT,NODE_LIFECYCLE_EVENT";
    static const char *const kv[][2] = {
        { "RAY_enable_ray_event", "true" },
        { "RAY_enable_core_worker_ray_event_to_aggregator", "true" },
        { "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", "http://localhost:8084/v1/events" },
        { "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", NULL },
        { "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES", NULL },
    };
    if (!collector_options(pb->rc) || !collector_find(pb->spec))
        return;
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (!raycluster__env_exists(pb->ray, kv[i][0]))
            raycluster__build_env_value(&pb->b, pb->ray, kv[i][0], kv[i][1] ? kv[i][1] : types);
}

static void ray_env(struct podb *pb, const char *ray_start)
{
    struct rcb *b = &pb->b;
    cJSON *c = pb->ray;
    char ip[256], addr[600], tags[128];
    const char *crd = raycluster__creator_crd(pb->rc);
    const cJSON *d;
    snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(pb->fqdn, "."), pb->fqdn);
    raycluster__build_arr(b, c, "env");
    /* The operator config's defaultContainerEnvs come first, unless the user set them. */
    cJSON_ArrayForEach(d, (cJSON_IsArray(pb->o->default_container_envs) ?
                           pb->o->default_container_envs : NULL)) {
        const char *n = kobj_str(d, "name");
        if (n && !raycluster__env_exists(c, n))
            raycluster__build_append(b, raycluster__build_arr(b, c, "env"), raycluster__build_dup(b, d));
    }
    if (!pb->head) {
        raycluster__build_env_value(b, c, "FQ_RAY_IP", pb->fqdn);
        raycluster__build_env_value(b, c, "RAY_IP", ip);
    }
    raycluster__build_env_fieldref(b, c, "RAY_CLUSTER_NAME", "metadata.labels['" RC_LABEL_CLUSTER "']");
    raycluster__build_env_fieldref(b, c, "RAY_CLUSTER_NAMESPACE", "metadata.namespace");
    raycluster__build_env_fieldref(b, c, "RAY_CLOUD_INSTANCE_ID", "metadata.name");
    raycluster__build_env_fieldref(b, c, "RAY_NODE_TYPE_NAME", "metadata.labels['" RC_LABEL_GROUP "']");
    raycluster__build_env_value(b, c, "KUBERAY_GEN_RAY_START_CMD", ray_start);
    if (!raycluster__env_exists(c, "RAY_PORT"))
        raycluster__build_env_value(b, c, "RAY_PORT", pb->port);
    if (!strcmp(crd, "RayService")) {
        if (!raycluster__env_exists(c, "RAY_timeout_ms_task_wait_for_death_info"))
            raycluster__build_env_value(b, c, "RAY_timeout_ms_task_wait_for_death_info", "0");
        if (!raycluster__env_exists(c, "RAY_gcs_server_request_timeout_seconds"))
            raycluster__build_env_value(b, c, "RAY_gcs_server_request_timeout_seconds", "5");
        if (!raycluster__env_exists(c, "RAY_SERVE_KV_TIMEOUT_S"))
            raycluster__build_env_value(b, c, "RAY_SERVE_KV_TIMEOUT_S", "5");
    }
    if (!raycluster__env_exists(c, "RAY_ADDRESS")) {
        snprintf(addr, sizeof(addr), "%s:%s", pb->head ? "127.0.0.1" : pb->fqdn, pb->port);
        raycluster__build_env_value(b, c, "RAY_ADDRESS", addr);
    }
    if (!raycluster__env_exists(c, "RAY_USAGE_STATS_KUBERAY_IN_USE"))
        raycluster__build_env_value(b, c, "RAY_USAGE_STATS_KUBERAY_IN_USE", "1");
    if (pb->head) {
        snprintf(tags, sizeof(tags), "kuberay_version=%s;kuberay_crd=%s", RC_KUBERAY_VERSION, crd);
        raycluster__build_env_value(b, c, "RAY_USAGE_STATS_EXTRA_TAGS", tags);
    }
    if (!raycluster__env_exists(c, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"))
        raycluster__build_env_value(b, c, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1");
    collector_ray_env(pb);
}

static int param_port(const struct rc_params *p, const char *k, int dflt)
{
    int v;
    return raycluster__parse_int32(raycluster__params_get(p, k), &v) == 0 ? v : dflt;
}

static cJSON *probe(struct rcb *b, bool http, int agent_port, const char *cmd, int delay,
                    int timeout, int failure)
{
    cJSON *p = cJSON_CreateObject();
    if (!p) {
        b->err = -ENOMEM;
        return NULL;
    }
    if (http) {
        cJSON *h = raycluster__build_obj(b, p, "httpGet");
        raycluster__build_set_str(b, h, "path", "/api/healthz");
        raycluster__build_set_num(b, h, "port", agent_port);
    } else {
        const char *argv[3] = { "bash", "-c", cmd };
        raycluster__build_set(b, raycluster__build_obj(b, p, "exec"), "command", raycluster__build_str_array(b, argv, 3));
    }
    raycluster__build_set_num(b, p, "initialDelaySeconds", delay);
    raycluster__build_set_num(b, p, "timeoutSeconds", timeout);
    raycluster__build_set_num(b, p, "periodSeconds", 5);
    raycluster__build_set_num(b, p, "successThreshold", 1);
    raycluster__build_set_num(b, p, "failureThreshold", failure);
    return p;
}

/* initLivenessAndReadinessProbe: only where the user set no probe. */
static void add_probes(struct podb *pb)
{
    struct rcb *b = &pb->b;
    const char *ver = kobj_str(raycluster__spec(pb->rc), "rayVersion");
    int cmp = -1, agent = param_port(&pb->params, "dashboard-agent-listen-port", 52365);
    bool http = ver && raycluster__version_cmp(ver, "2.53.0", &cmp) == 0 && cmp >= 0;
    bool serve_worker = !pb->head && !strcmp(raycluster__creator_crd(pb->rc), "RayService");
    char cmd[1024];
    int n = snprintf(cmd, sizeof(cmd),
                     "wget --tries 1 -T 2 -q -O- http://localhost:%d/api/local_raylet_healthz | "
                     "grep success", agent);
    if (pb->head)
        n += snprintf(cmd + n, sizeof(cmd) - (size_t)n,
                      " && wget --tries 1 -T 10 -q -O- http://localhost:%d/api/gcs_healthz | "
                      "grep success", param_port(&pb->params, "dashboard-port", 8265));
    if (!kobj_get(pb->ray, "livenessProbe") || cJSON_IsNull(kobj_get(pb->ray, "livenessProbe")))
        raycluster__build_set(b, pb->ray, "livenessProbe",
                              probe(b, http, agent, cmd, 30, pb->head ? 5 : 2, 120));
    if (!kobj_get(pb->ray, "readinessProbe") || cJSON_IsNull(kobj_get(pb->ray, "readinessProbe"))) {
        if (serve_worker) {
            int serve = 8000;
            const cJSON *p;
            cJSON_ArrayForEach(p, kobj_get(pb->ray, "ports")) {
                const char *pn = kobj_str(p, "name");
                if (pn && !strcmp(pn, "serve") && raycluster__json_has_int(p, "containerPort")) {
                    serve = (int)raycluster__json_int(p, "containerPort", 8000);
                    break;
                }
            }
            snprintf(cmd + n, sizeof(cmd) - (size_t)n,
                     " && wget --tries 1 -T 10 -q -O- http://localhost:%d/-/healthz | grep success",
                     serve);
            raycluster__build_set(b, pb->ray, "readinessProbe", probe(b, false, agent, cmd, 10, 2, 1));
        } else {
            raycluster__build_set(b, pb->ray, "readinessProbe",
                                  probe(b, http, agent, cmd, 10, pb->head ? 5 : 2, 10));
        }
    }
}

/* buildHeadPod / buildWorkerPod: the operator config's sidecars, then its default
 * annotations and labels where the Pod has none of that key. */
static void operator_config(struct podb *pb)
{
    struct rcb *b = &pb->b;
    const cJSON *side = pb->head ? pb->o->head_sidecar_containers : pb->o->worker_sidecar_containers;
    const cJSON *e;
    const cJSON *maps[2] = { pb->o->default_pod_annotations, pb->o->default_pod_labels };
    const char *keys[2] = { "annotations", "labels" };
    cJSON_ArrayForEach(e, (cJSON_IsArray(side) ? side : NULL))
        raycluster__build_append(b, raycluster__build_arr(b, pb->spec, "containers"), raycluster__build_dup(b, e));
    for (int i = 0; i < 2; i++) {
        cJSON *dst;
        if (!cJSON_IsObject(maps[i]) || cJSON_GetArraySize(maps[i]) == 0)
            continue;
        dst = raycluster__build_obj(b, pb->meta, keys[i]);
        cJSON_ArrayForEach(e, maps[i]) {
            if (e->string && cJSON_IsString(e) && !cJSON_GetObjectItemCaseSensitive(dst, e->string))
                raycluster__build_set_str(b, dst, e->string, e->valuestring);
        }
    }
}

/* AddMetadataToChildResource of the operator's batch scheduler (reconcilers/
 * batchsched): schedulerName, group labels and annotations; a no-op without one. */
static void scheduler_metadata(struct podb *pb)
{
    struct batchsched_parent parent = { .obj = pb->rc };
    const char *group = pb->head ? RC_HEAD_GROUP_NAME : kobj_str(pb->group, "groupName");
    int r = batchsched_child_meta((enum batchsched_kind)pb->o->batch_scheduler, &parent, pb->pod,
                                  true, group ? group : "");
    if (r < 0 && !pb->b.err)
        pb->b.err = r;
}

static int podb_init(struct podb *pb, const cJSON *rc, const cJSON *group,
                     const struct rc_build_opts *o, const struct rc_build_opts *dflt)
{
    const cJSON *tmpl;
    int r;
    memset(pb, 0, sizeof(*pb));
    pb->rc = rc;
    pb->head = group == NULL;
    pb->group = group ? group : raycluster__head_group(rc);
    pb->o = o ? o : dflt;
    if (!raycluster__group_container0(pb->group))
        return -EINVAL;
    if ((r = rc_head_service_fqdn(rc, pb->o, pb->fqdn, sizeof(pb->fqdn))) < 0)
        return r;
    raycluster__head_port_str(rc, pb->port, sizeof(pb->port));
    tmpl = kobj_get(pb->group, "template");
    if (!(pb->pod = cJSON_CreateObject()))
        return -ENOMEM;
    raycluster__build_set_str(&pb->b, pb->pod, "apiVersion", "v1");
    raycluster__build_set_str(&pb->b, pb->pod, "kind", "Pod");
    raycluster__build_set(&pb->b, pb->pod, "metadata",
                          raycluster__build_dup(&pb->b, cJSON_IsObject(kobj_get(tmpl, "metadata")) ? kobj_get(tmpl, "metadata")
                                                                      : NULL));
    raycluster__build_set(&pb->b, pb->pod, "spec", raycluster__build_dup(&pb->b, kobj_get(tmpl, "spec")));
    if (pb->b.err)
        return pb->b.err;
    pb->meta = cJSON_GetObjectItemCaseSensitive(pb->pod, "metadata");
    pb->spec = cJSON_GetObjectItemCaseSensitive(pb->pod, "spec");
    pb->ray = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pb->spec, "containers"), 0);
    return raycluster__params_for_node(rc, group, pb->o, &pb->params);
}

/* DefaultHeadPodTemplate / DefaultWorkerPodTemplate then BuildPod. */
cJSON *raycluster__pod_build(const cJSON *rc, const cJSON *group, const char *replica_name,
                             int replica_index, int host_index, const struct rc_build_opts *o, int *err)
{
    struct rc_build_opts dflt;
    struct podb pb;
    struct rcb *b = &pb.b;
    char name[128], tmp[600];
    char *ray_start = NULL;
    const char *ov;
    cJSON *ann, *labels;
    int r;
    rc_build_opts_default(&dflt);
    if ((r = podb_init(&pb, rc, group, o, &dflt)) < 0) {
        b->err = r;
        goto out;
    }
    /* Name and namespace. */
    if (pb.head) {
        pod_name(raycluster__name(rc), RC_NODE_HEAD, !pb.o->use_deterministic_head_name, name, sizeof(name));
        raycluster__build_set_str(b, pb.meta, pb.o->use_deterministic_head_name ? "name" : "generateName", name);
    } else {
        snprintf(tmp, sizeof(tmp), "%s-%s", raycluster__name(rc), kobj_str(group, "groupName") ?
                 kobj_str(group, "groupName") : "");
        pod_name(tmp, RC_NODE_WORKER, true, name, sizeof(name));
        raycluster__build_set_str(b, pb.meta, "generateName", name);
    }
    raycluster__build_set_str(b, pb.meta, "namespace", raycluster__namespace(rc));
    if (!pb.head && pb.o->enable_init_container_injection)
        add_wait_gcs_ready(&pb);
    if (!pb.head)
        cJSON_DeleteItemFromObjectCaseSensitive(pb.meta, "name");
    pod_labels(&pb);
    labels = cJSON_GetObjectItemCaseSensitive(pb.meta, "labels");
    if (!pb.head) {
        /* RayMultiHostIndexing (beta, on by default). */
        snprintf(tmp, sizeof(tmp), "%d", replica_index);
        raycluster__build_set_str(b, labels, RC_LABEL_REPLICA_INDEX, tmp);
        if (raycluster__group_num_hosts(group) > 1) {
            raycluster__build_set_str(b, labels, RC_LABEL_REPLICA_NAME, replica_name ? replica_name : "");
            snprintf(tmp, sizeof(tmp), "%d", host_index);
            raycluster__build_set_str(b, labels, RC_LABEL_HOST_INDEX, tmp);
        }
    }
    ann = raycluster__build_obj(b, pb.meta, "annotations");
    ov = kobj_annotation(rc, RC_ANN_OVERWRITE_CMD);
    if (ov && !strcasecmp(ov, "true"))
        raycluster__build_set_str(b, ann, RC_ANN_OVERWRITE_CMD, "true");
    if (pb.head && rc_autoscaling_enabled(rc)) {
        const char *sa = kobj_str(pb.spec, "serviceAccountName");
        raycluster__check_name(sa && *sa ? sa : raycluster__name(rc), tmp, sizeof(tmp));
        raycluster__build_set_str(b, pb.spec, "serviceAccountName", tmp);
        raycluster__autoscaler_container(b, rc, pb.o, pb.spec);
        if (raycluster__autoscaling_v2(rc)) {
            raycluster__build_env_value(b, pb.ray, "RAY_enable_autoscaler_v2", "true");
            raycluster__build_set_str(b, pb.spec, "restartPolicy", "Never");
        } else if (raycluster__autoscaling_v1_explicit(rc)) {
            raycluster__build_env_value(b, pb.ray, "RAY_enable_autoscaler_v2", "false");
        }
    }
    raycluster__gcs_ft_configure(b, rc, pb.head, pb.meta, pb.spec, pb.ray);
    ensure_port(&pb, "metrics", 8080);
    if (!pb.head && rc_autoscaling_enabled(rc) && raycluster__autoscaling_v2(rc))
        raycluster__build_set_str(b, pb.spec, "restartPolicy", "Never");
    if (raycluster__auth_token_enabled(rc)) {
        const cJSON *ic;
        raycluster__auth_env(b, rc, pb.ray);
        if (raycluster__k8s_token_auth(rc)) {
            bool have = false;
            const cJSON *v;
            cJSON_ArrayForEach(v, kobj_get(pb.spec, "volumes")) {
                const char *vn = kobj_str(v, "name");
                if (vn && !strcmp(vn, "ray-token"))
                    have = true;
            }
            if (!have) {
                cJSON *nv = cJSON_CreateObject(), *src, *proj;
                if (!nv)
                    b->err = -ENOMEM;
                raycluster__build_append(b, raycluster__build_arr(b, pb.spec, "volumes"), nv);
                raycluster__build_set_str(b, nv, "name", "ray-token");
                src = raycluster__build_arr(b, raycluster__build_obj(b, nv, "projected"), "sources");
                if (!b->err && (proj = cJSON_CreateObject())) {
                    raycluster__build_append(b, src, proj);
                    raycluster__build_set_str(b, raycluster__build_obj(b, proj, "serviceAccountToken"), "path", "token");
                } else if (!b->err) {
                    b->err = -ENOMEM;
                }
            }
        }
        cJSON_ArrayForEach(ic, kobj_get(pb.spec, "initContainers")) {
            const char *icn = kobj_str(ic, "name");
            if (icn && !strcmp(icn, RC_WAIT_GCS_CONTAINER))
                raycluster__auth_env(b, rc, (cJSON *)ic);
        }
    }
    raycluster__tls_configure(b, rc, pb.head, pb.spec, pb.ray);
    add_collector(&pb);   /* the last container of the template, as KubeRay appends it */
    operator_config(&pb);
    /* BuildPod. */
    if (!strcmp(raycluster__creator_crd(rc), "RayService"))
        raycluster__build_set_str(b, labels, RC_LABEL_SERVE, pb.head ? "false" : "true");
    if (!raycluster__params_get(&pb.params, "plasma-directory"))
        add_empty_dir(&pb, pb.ray, "shared-mem", "/dev/shm", true);
    if (pb.head && rc_autoscaling_enabled(rc)) {
        cJSON *c;
        add_empty_dir(&pb, pb.ray, "ray-logs", "/tmp/ray", false);
        cJSON_ArrayForEach(c, kobj_get(pb.spec, "containers")) {
            const char *cn = kobj_str(c, "name");
            if (cn && !strcmp(cn, RC_AUTOSCALER_CONTAINER)) {
                add_empty_dir(&pb, c, "ray-logs", "/tmp/ray", false);
                break;
            }
        }
    }
    {
        cJSON *col = collector_options(rc) ? collector_find(pb.spec) : NULL;
        if (col) {   /* the collector reads the Ray logs */
            add_empty_dir(&pb, pb.ray, "ray-logs", "/tmp/ray", false);
            add_empty_dir(&pb, col, "ray-logs", "/tmp/ray", false);
        }
    }
    if (b->err)
        goto out;
    if (!(ray_start = raycluster__ray_start_from_params(&pb.params, pb.head, pb.ray))) {
        b->err = -ENOMEM;
        goto out;
    }
    rewrite_command(&pb, ray_start);
    {
        cJSON *ic;
        char ip[256];
        snprintf(ip, sizeof(ip), "%.*s", (int)strcspn(pb.fqdn, "."), pb.fqdn);
        cJSON_ArrayForEach(ic, kobj_get(pb.spec, "initContainers")) {
            if (!cJSON_IsObject(ic))
                continue;
            raycluster__build_env_value(b, ic, "FQ_RAY_IP", pb.fqdn);
            raycluster__build_env_value(b, ic, "RAY_IP", ip);
        }
    }
    ray_env(&pb, ray_start);
    if (pb.o->enable_probes_injection)
        add_probes(&pb);
    scheduler_metadata(&pb);
    raycluster__build_owner_ref(b, pb.pod, rc);
    /* Go's omitempty drops the empty annotations map initTemplateAnnotations makes. */
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(pb.meta, "annotations")) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(pb.meta, "annotations");
out:
    free(ray_start);
    raycluster__params_free(&pb.params);
    if (b->err) {
        cJSON_Delete(pb.pod);
        if (err)
            *err = b->err;
        return NULL;
    }
    return pb.pod;
}

cJSON *rc_build_head_pod(const cJSON *rc, const struct rc_build_opts *o, int *err)
{
    cJSON *pod = raycluster__pod_build(rc, NULL, NULL, 0, 0, o, err);
    char hash[40];
    int r;
    struct rcb b = { 0 };
    if (!pod)
        return NULL;
    /* createHeadPod stamps the spec hash the Recreate upgrade strategy compares. */
    if ((r = rc_spec_hash(rc, hash, sizeof(hash))) < 0) {
        cJSON_Delete(pod);
        if (err)
            *err = r;
        return NULL;
    }
    cJSON *ann = raycluster__build_obj(&b, raycluster__build_obj(&b, pod, "metadata"), "annotations");
    raycluster__build_set_str(&b, ann, RC_ANN_UPGRADE_HASH, hash);
    raycluster__build_set_str(&b, ann, RC_ANN_KUBERAY_VERSION, RC_KUBERAY_VERSION);
    return raycluster__build_done(&b, pod, err);
}

cJSON *rc_build_worker_pod(const cJSON *rc, const cJSON *group, const char *replica_name,
                           int replica_index, int host_index, const struct rc_build_opts *o,
                           int *err)
{
    if (!group) {
        if (err)
            *err = -EINVAL;
        return NULL;
    }
    return raycluster__pod_build(rc, group, replica_name, replica_index, host_index, o, err);
}

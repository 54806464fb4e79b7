/*
 * opts.c - flags of `rayop controller KIND`, named and meant as KubeRay's
 * operator names them (so Helm values and args carry over), plus the
 * KubeRay Configuration file (--config). As in KubeRay, a config file wins
 * over the flags it has fields for; rayop-only flags (--state-dir, --workers,
 * --kubeconfig, ...) still apply. Both --flag VALUE and --flag=VALUE work.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "reconcilers/host/internal.h"
#include "kobj/yamljson.h"
#include "util/util.h"

#define CONFIG_MAX_BYTES (1u << 20)
#define CONFIG_MAX_DEPTH 8

static void usage(FILE *f)
{
    fputs("usage: rayop controller KIND [flags]\n"
          "  --kubeconfig FILE, --context NAME      API server (default $KUBECONFIG, in-cluster, ~/.kube/config)\n"
          "  --namespace NS / --watch-namespace A,B  scope (checked against keys; the watcher decides what is cached)\n"
          "  --state-dir DIR                        watcher socket and cache segment (default /run/rayop)\n"
          "  --workers N / --reconcile-concurrency N worker threads (default 1)\n"
          "  --qps N --burst N                      client-side API rate limit per resource (100/200)\n"
          "  --metrics-addr ADDR                    Prometheus /metrics (default :8080; 0 = off)\n"
          "  --health-probe-bind-address ADDR       /healthz, /readyz (default :8082; 0 = off)\n"
          "  --enable-leader-election BOOL          one active Pod per kind (a Lease rayop-KIND-leader;\n"
          "                                         default true as KubeRay; waits while KubeRay's\n"
          "                                         ray-operator-leader Lease is held)\n"
          "  --leader-election-namespace NS         the Lease's namespace (default: in-cluster namespace, else default)\n"
          "  --leader-lease-seconds N               leaseDurationSeconds (default 15; renew deadline 2/3, retry 2/15 of it)\n"
          "  --use-kubernetes-proxy BOOL            reach Ray dashboards through the API server proxy\n"
          "  --enable-metrics BOOL                  the kinds' kuberay_* metrics (default false, as KubeRay)\n"
          "  --feature-gates A=true,B=false         KubeRay feature gates\n"
          "  --config FILE                          KubeRay Configuration (config.ray.io/v1alpha1)\n"
          "  --batch-scheduler NAME                 volcano|yunikorn|kai-scheduler|scheduler-plugins (docs/batch-scheduling.md)\n"
          "  --enable-batch-scheduler BOOL          deprecated: volcano\n"
          "  --log-stdout-encoder json|console      line layout (zap console: tab-separated)\n"
          "  --log-level debug|info|warn|error\n"
          "  --drain-timeout-ms N                   SIGTERM: finish in-flight work within N ms (default 30000)\n"
          "  --connect-timeout-ms N                 wait for the watcher this long at start (default 60000)\n"
          "  --supervised                           set by rayop up: --metrics-addr and --health-probe-bind-address\n"
          "                                         are up's to give, and --config does not replace them\n", f);
}

static int parse_bool(const char *v, bool *out)
{
    if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0) { *out = true; return 0; }
    if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) { *out = false; return 0; }
    return -EINVAL;
}

static int parse_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi)
        return -EINVAL;
    *out = (int)n;
    return 0;
}

static int parse_double(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || d < 0 || d > 1e6)
        return -EINVAL;
    *out = d;
    return 0;
}

static int copy_str(char *dst, size_t cap, const char *v)
{
    if (strlen(v) >= cap)
        return -EINVAL;
    strcpy(dst, v);
    return 0;
}

/* Adds each comma-separated namespace in v. */
static int add_namespaces(struct host_opts *o, const char *v)
{
    const char *p = v;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n) {
            if (o->nnamespaces >= HOST_MAX_NAMESPACES || n >= 64)
                return -EINVAL;
            if (!(o->namespaces[o->nnamespaces] = strndup(p, n)))
                return -ENOMEM;
            o->nnamespaces++;
        }
        p += n + (e ? 1 : 0);
    }
    return 0;
}

int host_parse_addr(const char *s, char *host, size_t hostcap, int *port)
{
    if (!s || !*s || strcmp(s, "0") == 0) {
        *port = -1;
        host[0] = '\0';
        return 0;
    }
    const char *colon = strrchr(s, ':');
    if (!colon)
        return -EINVAL;
    size_t hl = (size_t)(colon - s);
    if (hl >= hostcap)
        return -EINVAL;
    memcpy(host, s, hl);
    host[hl] = '\0';
    return parse_int(colon + 1, 0, 65535, port);
}

/* Applies one setting by its flag name (without "--"); the config file maps
 * its field names onto the same names so both paths share validation. */
static int apply(struct host_opts *o, const char *name, const char *v)
{
    if (!v)
        return -EINVAL;
    if (strcmp(name, "kubeconfig") == 0) { o->kubeconfig = v; return 0; }
    if (strcmp(name, "context") == 0) { o->context = v; return 0; }
    if (strcmp(name, "state-dir") == 0) { o->state_dir = v; return 0; }
    if (strcmp(name, "config") == 0) { o->config_file = v; return 0; }
    if (strcmp(name, "namespace") == 0 || strcmp(name, "watch-namespace") == 0)
        return add_namespaces(o, v);
    if (strcmp(name, "workers") == 0 || strcmp(name, "reconcile-concurrency") == 0)
        return parse_int(v, 1, 1024, &o->workers);
    if (strcmp(name, "qps") == 0) return parse_double(v, &o->qps);
    if (strcmp(name, "burst") == 0) return parse_int(v, 1, 1000000, &o->burst);
    if (strcmp(name, "metrics-addr") == 0 || strcmp(name, "metrics-bind-address") == 0)
        return copy_str(o->metrics_addr, sizeof(o->metrics_addr), v);
    if (strcmp(name, "health-probe-bind-address") == 0)
        return copy_str(o->probe_addr, sizeof(o->probe_addr), v);
    if (strcmp(name, "enable-leader-election") == 0)
        return parse_bool(v, &o->leader_election);
    if (strcmp(name, "leader-election-namespace") == 0)
        return copy_str(o->leader_namespace, sizeof(o->leader_namespace), v);
    if (strcmp(name, "leader-lease-seconds") == 0)
        return parse_int(v, 1, 3600, &o->leader_lease_s);
    if (strcmp(name, "use-kubernetes-proxy") == 0)
        return parse_bool(v, &o->use_kubernetes_proxy);
    if (strcmp(name, "supervised") == 0)
        return parse_bool(v, &o->supervised);
    if (strcmp(name, "enable-metrics") == 0)
        return parse_bool(v, &o->enable_metrics);
    if (strcmp(name, "feature-gates") == 0)
        return copy_str(o->feature_gates, sizeof(o->feature_gates), v);
    if (strcmp(name, "log-stdout-encoder") == 0 || strcmp(name, "log-file-encoder") == 0) {
        if (strcmp(v, "json") != 0 && strcmp(v, "console") != 0)
            return -EINVAL;
        return copy_str(o->log_encoder, sizeof(o->log_encoder), v);
    }
    if (strcmp(name, "log-level") == 0 || strcmp(name, "zap-log-level") == 0) {
        int l = log_parse_level(v);
        if (l < 0)
            return -EINVAL;
        o->log_level = l;
        return 0;
    }
    if (strcmp(name, "batch-scheduler") == 0)
        return copy_str(o->batch_scheduler, sizeof(o->batch_scheduler), v);
    if (strcmp(name, "enable-batch-scheduler") == 0)
        return parse_bool(v, &o->enable_batch_scheduler);
    if (strcmp(name, "drain-timeout-ms") == 0)
        return parse_int(v, 0, 3600000, &o->drain_timeout_ms);
    if (strcmp(name, "connect-timeout-ms") == 0)
        return parse_int(v, 0, 3600000, &o->connect_timeout_ms);
    return -ENOENT;
}

/* Flags that take no value when given bare (KubeRay's bool flags). */
static int is_bool_flag(const char *name)
{
    return strcmp(name, "enable-leader-election") == 0 ||
           strcmp(name, "use-kubernetes-proxy") == 0 || strcmp(name, "enable-metrics") == 0 ||
           strcmp(name, "enable-batch-scheduler") == 0 || strcmp(name, "supervised") == 0;
}

/* KubeRay flags accepted and ignored: they change nothing rayop does. */
static int is_ignored_flag(const char *name)
{
    static const char *const names[] = {
        "log-file-path", "forced-cluster-upgrade",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

int host_opts_parse(struct host_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->state_dir = "/run/rayop";
    o->workers = 1;
    o->log_level = -1;
    o->drain_timeout_ms = 30000;
    o->leader_lease_s = 15;
    o->leader_election = true;      /* KubeRay's default */
    o->connect_timeout_ms = 60000;
    strcpy(o->metrics_addr, ":8080");
    strcpy(o->probe_addr, ":8082");
    strcpy(o->log_encoder, "json");
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 1;
    }
    if (argc < 2 || argv[1][0] == '-') {
        usage(stderr);
        return -EINVAL;
    }
    o->kind = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *eq, *val;
        char name[64];
        int fr = util_flag_split("rayop controller", a, name, sizeof(name), &eq);
        if (fr == 1)
            usage(stdout);
        if (fr)
            return fr;
        if (eq)
            val = eq;
        else if (is_bool_flag(name) && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
            val = "true";
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            /* the last argument: an unknown flag is named as such, not as one
             * missing its value */
            struct host_opts scratch = { 0 };
            bool known = is_ignored_flag(name) || apply(&scratch, name, "") != -ENOENT;
            host_opts_free(&scratch);
            if (known)
                fprintf(stderr, "rayop controller: flag --%s needs a value\n", name);
            else
                fprintf(stderr, "rayop controller: unknown flag \"--%s\"\n", name);
            return -EINVAL;
        }
        if (is_ignored_flag(name))
            continue;
        int rc = apply(o, name, val);
        if (rc == -ENOENT) {
            fprintf(stderr, "rayop controller: unknown flag \"--%s\"\n", name);
            return -EINVAL;
        }
        if (rc < 0) {
            fprintf(stderr, "rayop controller: bad value \"%s\" for --%s\n", val, name);
            return rc;
        }
    }
    return 0;
}

void host_opts_free(struct host_opts *o)
{
    for (size_t i = 0; i < o->nnamespaces; i++)
        free(o->namespaces[i]);
    o->nnamespaces = 0;
    cJSON_Delete(o->config_json);
    o->config_json = NULL;
}

/* KubeRay Configuration field -> our flag name. */
/* Every field below is copied by apply(), so values need not outlive the parser. */
static const char *config_field(const char *key)
{
    static const char *const map[][2] = {
        { "metricsAddr", "metrics-addr" },
        { "probeAddr", "health-probe-bind-address" },
        { "enableLeaderElection", "enable-leader-election" },
        { "leaderElectionNamespace", "leader-election-namespace" },
        { "reconcileConcurrency", "reconcile-concurrency" },
        { "watchNamespace", "watch-namespace" },
        { "logStdoutEncoder", "log-stdout-encoder" },
        { "useKubernetesProxy", "use-kubernetes-proxy" },
        { "enableMetrics", "enable-metrics" },
        { "qps", "qps" },
        { "batchScheduler", "batch-scheduler" },
        { "enableBatchScheduler", "enable-batch-scheduler" },
        { "burst", "burst" },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(key, map[i][0]) == 0)
            return map[i][1];
    return NULL;
}

int host_opts_load_config(struct host_opts *o, const char *path, char *err, size_t errlen)
{
    /* As KubeRay: with --config the flags KubeRay's Configuration also covers are ignored,
     * so an absent field means its Configuration default, not the flag. Under rayop up the
     * addresses are the exception: KubeRay is one process with one metricsAddr/probeAddr,
     * rayop is several in one Pod, and up gives each its own (a Configuration's ports are
     * up's, see cmd/up); taking the file's here would put every controller on one port. */
    char keep_metrics[sizeof(o->metrics_addr)], keep_probe[sizeof(o->probe_addr)];
    memcpy(keep_metrics, o->metrics_addr, sizeof(keep_metrics));
    memcpy(keep_probe, o->probe_addr, sizeof(keep_probe));
    for (size_t i = 0; i < o->nnamespaces; i++)
        free(o->namespaces[i]);
    o->nnamespaces = 0;
    o->qps = 0;
    o->burst = 0;
    o->workers = 1;
    strcpy(o->metrics_addr, ":8080");
    strcpy(o->probe_addr, ":8082");
    o->leader_election = true;
    o->leader_namespace[0] = '\0';
    o->use_kubernetes_proxy = false;
    o->enable_metrics = false;
    o->feature_gates[0] = '\0';
    o->batch_scheduler[0] = '\0';
    o->enable_batch_scheduler = false;
    strcpy(o->log_encoder, "json");

    char *data;
    size_t n;
    int rrc = util_read_file(path, CONFIG_MAX_BYTES, &data, &n);
    if (rrc == -E2BIG)
        snprintf(err, errlen, "%s is larger than %u bytes", path, CONFIG_MAX_BYTES);
    else if (rrc < 0)
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(-rrc));
    if (rrc < 0)
        return rrc;
    yaml_parser_t p;
    yaml_event_t ev;
    int rc = 0, depth = 0, done = 0, want_key = 1;
    char key[64] = "", gates[512] = "";
    bool in_gates = false;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, n);
    while (!done && rc == 0) {
        if (!yaml_parser_parse(&p, &ev)) {
            snprintf(err, errlen, "%s: YAML error at line %zu: %s", path,
                     p.problem_mark.line + 1, p.problem ? p.problem : "?");
            rc = -EINVAL;
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (++depth > CONFIG_MAX_DEPTH) {
                snprintf(err, errlen, "%s: nested deeper than %d", path, CONFIG_MAX_DEPTH);
                rc = -EINVAL;
            }
            in_gates = depth == 2 && strcmp(key, "featureGates") == 0;
            want_key = 1;
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            depth--;
            if (depth == 1 && in_gates) {
                in_gates = false;
                if (gates[0] && (rc = apply(o, "feature-gates", gates)) < 0)
                    snprintf(err, errlen, "%s: featureGates too long", path);
            }
            want_key = 1;
            break;
        case YAML_SCALAR_EVENT: {
            const char *s = (const char *)ev.data.scalar.value;
            if (want_key) {
                snprintf(key, sizeof(key), "%s", s);
                want_key = 0;
                break;
            }
            want_key = 1;
            if (in_gates && depth == 2) {
                size_t gl = strlen(gates);
                if (snprintf(gates + gl, sizeof(gates) - gl, "%s%s=%s", gl ? "," : "", key, s) >=
                    (int)(sizeof(gates) - gl)) {
                    snprintf(err, errlen, "%s: featureGates too long", path);
                    rc = -EINVAL;
                }
                break;
            }
            const char *flag = depth == 1 ? config_field(key) : NULL;
            if (flag && (rc = apply(o, flag, s)) < 0)
                snprintf(err, errlen, "%s: bad value \"%s\" for %s", path, s, key);
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    /* the whole file as JSON too: kinds read the structured fields the flags do not
     * cover (e.g. headSidecarContainers) through host_settings.operator_config */
    cJSON *doc = NULL;
    if (rc == 0 && yamljson_parse_one(data, n, &doc, err, errlen) == 0 && cJSON_IsObject(doc)) {
        cJSON_Delete(o->config_json);
        o->config_json = doc;
        doc = NULL;
    }
    cJSON_Delete(doc);
    if (o->supervised) {
        memcpy(o->metrics_addr, keep_metrics, sizeof(keep_metrics));
        memcpy(o->probe_addr, keep_probe, sizeof(keep_probe));
    }
    if (rc == 0)
        err[0] = '\0';
    free(data);
    return rc;
}

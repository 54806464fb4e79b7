/*
 * test_rc_build_options.c - the RayCluster builders' inputs beyond the samples:
 * rayStartParams completion and rendering, top-level resources/labels, accelerators,
 * probes; labels, names and env of RayService-created and 53-character clusters; the
 * Ingress and the auth Secret; operator-config sidecars/env/annotations/labels; the
 * spec hash and desired replicas; operator env switches and malformed input.
 * Expected values follow KubeRay v1.7's pod.go/service.go/util.go rules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcilers/raycluster/build.h"
#include "tests/unit/rc_test_lib.h"

static const char *params_yaml =
    "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: p, namespace: ns}\n"
    "spec:\n"
    "  rayVersion: '2.53.0'\n"
    "  headGroupSpec:\n"
    "    rayStartParams: {port: '6380', dashboard-port: '8266', log-color: 'false', "
    "include-dashboard: 'true', disable-usage-stats: 'false', object-store-memory: '100000000', "
    "plasma-directory: /tmp}\n"
    "    resources: {CPU: '2', memory: 1Gi, nvidia.com/gpu: '1', custom: 500m, accel: '3'}\n"
    "    labels: {zone: a, tier: head}\n"
    "    template:\n"
    "      spec:\n"
    "        containers:\n"
    "        - name: ray-head\n"
    "          image: rayproject/ray:2.53.0\n"
    "          readinessProbe: {tcpSocket: {port: 6380}}\n"
    "          resources: {limits: {cpu: 500m, memory: 2Gi}}\n"
    "  workerGroupSpecs:\n"
    "  - groupName: gpu\n"
    "    minReplicas: 0\n"
    "    maxReplicas: 4\n"
    "    replicas: 9\n"
    "    rayStartParams: {address: 'elsewhere:1'}\n"
    "    template:\n"
    "      spec:\n"
    "        containers:\n"
    "        - name: ray-worker\n"
    "          image: rayproject/ray:2.53.0\n"
    "          resources:\n"
    "            requests: {cpu: 1500m}\n"
    "            limits: {nvidia.com/mig-1g.5gb: '2', aws.amazon.com/neuroncore: '2', "
    "google.com/tpu: '4', memory: 3G}\n";

static void test_ray_start_params(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rc = yaml_rc(params_yaml);
    char *cmd = rc_build_ray_start_cmd(rc, NULL, NULL);
    /* top-level resources override the flags (cpu/memory/gpu to flags, the rest as JSON),
     * labels become --labels sorted, explicit booleans only for the three special flags. */
    assert_string_equal(cmd, "ray start --head  --block  --dashboard-agent-listen-port=52365  "
                             "--dashboard-host=0.0.0.0  --dashboard-port=8266  "
                             "--include-dashboard=true  --labels=tier=head,zone=a  "
                             "--log-color=false  --memory=1073741824  --metrics-export-port=8080  "
                             "--num-cpus=2  --num-gpus=1  --object-store-memory=100000000  "
                             "--plasma-directory=/tmp  --port=6380  "
                             "--resources='{\"accel\":3,\"custom\":0.5}' ");
    free(cmd);
    /* Worker: the user's address wins; GPU from the first *gpu / MIG limit, the first
     * of neuroncore/TPU (sorted by name) into resources; CPU request rounded up. */
    cmd = rc_build_ray_start_cmd(rc, group_at(rc, 0), NULL);
    assert_string_equal(cmd, "ray start  --address=elsewhere:1  --block  "
                             "--dashboard-agent-listen-port=52365  --memory=3000000000  "
                             "--metrics-export-port=8080  --num-cpus=2  --num-gpus=2  "
                             "--resources='{\"neuron_cores\":2}' ");
    free(cmd);

    cJSON *head = rc_build_head_pod(rc, NULL, &err);
    assert_non_null(head);
    /* plasma-directory set: no /dev/shm volume */
    assert_null(jget(jget(head, "spec"), "volumes"));
    /* the user's readiness probe stays; Ray >= 2.53 gets the HTTP liveness probe on the
     * agent port */
    assert_non_null(jget(jget(ray0(head), "readinessProbe"), "tcpSocket"));
    assert_string_equal(rct_str_at(ray0(head), "livenessProbe.httpGet.path"), "/api/healthz");
    assert_int_equal(cJSON_GetNumberValue(jget(jget(jget(ray0(head), "livenessProbe"), "httpGet"),
                                               "port")), 52365);
    assert_string_equal(rct_env_value(ray0(head), "RAY_PORT"), "6380");
    assert_string_equal(rct_env_value(ray0(head), "RAY_ADDRESS"), "127.0.0.1:6380");
    cJSON_Delete(head);
    cJSON *w = rc_build_worker_pod(rc, group_at(rc, 0), NULL, 0, 0, NULL, &err);
    assert_string_equal(rct_env_value(ray0(w), "RAY_ADDRESS"), "p-head-svc.ns.svc.cluster.local:6380");
    assert_non_null(strstr(arg0(cJSON_GetArrayItem(jget(jget(w, "spec"), "initContainers"), 0)),
                           "ray health-check --address p-head-svc.ns.svc.cluster.local:6380 >"));
    assert_string_equal(rct_str_at(jget(w, "spec"), "volumes.0.emptyDir.medium"), "Memory");
    assert_string_equal(rct_str_at(jget(w, "spec"), "volumes.0.emptyDir.sizeLimit"), "3G");
    cJSON_Delete(w);

    /* desired resources: head requests (limits fill in) + workers x replicas, unclamped */
    struct rc_resources res;
    assert_int_equal(rc_desired_resources(rc, &res), 0);
    assert_string_equal(res.cpu, "14");      /* 500m + 9 x 1500m */
    assert_string_equal(res.memory, "29147483648"); /* 2Gi + 9 x 3G, not a whole Ki */
    assert_string_equal(res.gpu, "18");
    assert_string_equal(res.tpu, "36");
    cJSON_Delete(rc);
}

static const char *service_yaml =
    "apiVersion: ray.io/v1\nkind: RayCluster\n"
    "metadata:\n  name: a2345678901234567890123456789012345678901234567890123\n  namespace: ns\n"
    "  labels: {ray.io/originated-from-crd: RayService, ray.io/originated-from-cr-name: svc}\n"
    "spec:\n"
    "  rayVersion: '2.52.0'\n"
    "  authOptions: {mode: token}\n"
    "  headGroupSpec:\n"
    "    template:\n"
    "      metadata: {labels: {app.kubernetes.io/name: mine, ray.io/cluster: nope, team: x}}\n"
    "      spec:\n"
    "        containers:\n"
    "        - {name: ray-head, image: 'rayproject/ray:2.52.0'}\n"
    "  workerGroupSpecs:\n"
    "  - groupName: Serve-Group\n"
    "    minReplicas: 1\n"
    "    maxReplicas: 1\n"
    "    labels: {team: 'y'}\n"
    "    template:\n"
    "      metadata: {labels: {team: z}}\n"
    "      spec:\n"
    "        containers:\n"
    "        - name: ray-worker\n"
    "          image: rayproject/ray:2.52.0\n"
    "          ports: [{name: serve, containerPort: 9000}]\n";

static void test_labels_names_and_creators(void **state)
{
    (void)state;
    int err = 0;
    char names[1024];
    cJSON *rc = yaml_rc(service_yaml);
    struct rc_invalid why;
    assert_int_equal(rc_validate(rc, NULL, &why), 0);
    struct rc_build_opts o;
    rc_build_opts_default(&o);
    o.use_deterministic_head_name = true;
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_non_null(head);
    /* 53-character name: PodName keeps the first 50 characters */
    assert_string_equal(rct_str_at(head, "metadata.name"),
                        "a2345678901234567890123456789012345678901234567890-head");
    assert_null(jget(jget(head, "metadata"), "generateName"));
    /* template labels override defaults except cluster/node-type/group; RayService head
     * starts out of the serve rotation */
    assert_string_equal(jstr(label_map(head), "app.kubernetes.io/name"), "mine");
    assert_string_equal(jstr(label_map(head), "ray.io/cluster"),
                        "a2345678901234567890123456789012345678901234567890123");
    assert_string_equal(jstr(label_map(head), "ray.io/serve"), "false");
    assert_string_equal(jstr(label_map(head), "team"), "x");
    assert_string_equal(rct_env_value(ray0(head), "RAY_USAGE_STATS_EXTRA_TAGS"),
                        "kuberay_version=v1.7.0;kuberay_crd=RayService");
    /* token auth: mode + the Secret named CheckName(cluster) (last 50 characters) */
    assert_string_equal(rct_env_value(ray0(head), "RAY_AUTH_MODE"), "token");
    assert_string_equal(rct_str_at(rct_env(ray0(head), "RAY_AUTH_TOKEN", NULL),
                                   "valueFrom.secretKeyRef.name"),
                        "r5678901234567890123456789012345678901234567890123");
    assert_string_equal(rct_str_at(rct_env(ray0(head), "RAY_AUTH_TOKEN", NULL),
                                   "valueFrom.secretKeyRef.key"), "auth_token");
    env_names(ray0(head), names, sizeof(names));
    assert_string_equal(names, "RAY_AUTH_MODE RAY_AUTH_TOKEN RAY_CLUSTER_NAME RAY_CLUSTER_NAMESPACE "
                               "RAY_CLOUD_INSTANCE_ID RAY_NODE_TYPE_NAME KUBERAY_GEN_RAY_START_CMD "
                               "RAY_PORT RAY_timeout_ms_task_wait_for_death_info "
                               "RAY_gcs_server_request_timeout_seconds RAY_SERVE_KV_TIMEOUT_S "
                               "RAY_ADDRESS RAY_USAGE_STATS_KUBERAY_IN_USE RAY_USAGE_STATS_EXTRA_TAGS "
                               "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE");
    cJSON_Delete(head);

    /* head Service: its selector follows the template's app.kubernetes.io/name */
    cJSON *svc = rc_build_head_service(rc, NULL, &err);
    assert_string_equal(rct_str_at(svc, "metadata.name"),
                        "a2345678901234567890123456789012345678901234567890123-head-svc");
    assert_string_equal(jstr(jget(jget(svc, "spec"), "selector"), "app.kubernetes.io/name"), "mine");
    assert_string_equal(jstr(label_map(svc), "app.kubernetes.io/name"), "mine");
    /* CheckLabel keeps the last 63 characters of the identifier */
    assert_string_equal(jstr(label_map(svc), "ray.io/identifier"),
                        "a2345678901234567890123456789012345678901234567890123-head");
    /* the container lists no ports: KubeRay's five defaults */
    assert_int_equal(cJSON_GetArraySize(jget(jget(svc, "spec"), "ports")), 5);
    cJSON_Delete(svc);

    cJSON *w = rc_build_worker_pod(rc, group_at(rc, 0), NULL, 0, 0, NULL, &err);
    assert_non_null(w);
    /* PodName lower-cases and keeps 50 characters of CLUSTER-GROUP */
    assert_string_equal(rct_str_at(w, "metadata.generateName"),
                        "a2345678901234567890123456789012345678901234567890-worker-");
    assert_string_equal(jstr(label_map(w), "ray.io/group"), "Serve-Group");
    assert_string_equal(jstr(label_map(w), "team"), "y"); /* group labels win */
    assert_string_equal(jstr(label_map(w), "ray.io/serve"), "true");
    /* RayService workers: readiness also checks the serve proxy, failureThreshold 1 */
    assert_string_equal(rct_str_at(ray0(w), "readinessProbe.exec.command.2"),
                        "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz"
                        " | grep success && wget --tries 1 -T 10 -q -O- "
                        "http://localhost:9000/-/healthz | grep success");
    assert_int_equal(cJSON_GetNumberValue(jget(jget(ray0(w), "readinessProbe"), "failureThreshold")),
                     1);
    /* token auth on the wait-gcs-ready init container too */
    const cJSON *ic = cJSON_GetArrayItem(jget(jget(w, "spec"), "initContainers"), 0);
    env_names(ic, names, sizeof(names));
    assert_string_equal(names, "RAY_AUTH_MODE RAY_AUTH_TOKEN FQ_RAY_IP RAY_IP");
    cJSON_Delete(w);
    cJSON_Delete(rc);
}

/* BuildRouteForHeadService + CheckRouteName (OpenShift) */
static void test_head_route(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    assert_null(rc_build_head_route(rc, &err)); /* enableIngress not set */
    assert_int_equal(err, 0);
    cJSON *head = (cJSON *)jget(jget(rc, "spec"), "headGroupSpec");
    cJSON_AddBoolToObject(head, "enableIngress", 1);
    cJSON_AddItemToObject(cJSON_GetObjectItem(rc, "metadata"), "annotations",
                          cJSON_Parse("{\"haproxy.router.openshift.io/timeout\":\"5m\"}"));
    cJSON *route = rc_build_head_route(rc, &err);
    cJSON *want = cJSON_Parse(
        "{\"apiVersion\":\"route.openshift.io/v1\",\"kind\":\"Route\",\"metadata\":{\"name\":"
        "\"raycluster-kuberay-head-route\",\"namespace\":\"default\",\"labels\":{"
        "\"ray.io/cluster\":\"raycluster-kuberay\",\"ray.io/identifier\":\"raycluster-kuberay-head\","
        "\"app.kubernetes.io/name\":\"kuberay\",\"app.kubernetes.io/created-by\":\"kuberay-operator\"},"
        "\"annotations\":{\"haproxy.router.openshift.io/timeout\":\"5m\"},\"ownerReferences\":[{"
        "\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":\"raycluster-kuberay\",\"uid\":\""
        RCT_UID "\",\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"to\":{\"kind\":"
        "\"Service\",\"name\":\"raycluster-kuberay-head-svc\",\"weight\":100},\"port\":{"
        "\"targetPort\":8265},\"wildcardPolicy\":\"None\"}}");
    assert_non_null(route);
    rct_assert_json(route, want, "head Route");
    cJSON_Delete(want);
    cJSON_Delete(route);
    /* CheckRouteName: at most 51 - len(namespace) characters ("raycluster-kuberay-head-route"
     * is 29: a 30-character namespace leaves 21, and CheckName drops a trailing '-') */
    cJSON *md = cJSON_GetObjectItem(rc, "metadata");
    cJSON_DeleteItemFromObject(md, "namespace");
    cJSON_AddStringToObject(md, "namespace", "a-namespace-of-thirty-chars-xx");
    route = rc_build_head_route(rc, &err);
    assert_string_equal(rct_str_at(route, "metadata.name"), "raycluster-kuberay-he");
    cJSON_Delete(route);
    cJSON_DeleteItemFromObject(md, "namespace");
    cJSON_AddStringToObject(md, "namespace", "a-namespace-of-thirty-one-chars");
    route = rc_build_head_route(rc, &err);
    assert_string_equal(rct_str_at(route, "metadata.name"), "raycluster-kuberay-h");
    cJSON_Delete(route);
    cJSON_Delete(rc);
}

/* RayClusterHistoryServer: the collector sidecar on head and worker Pods (the sample) */
static void test_history_collector(void **state)
{
    (void)state;
    int err = 0;
    char names[1024];
    cJSON *rc = rct_sample("ray-cluster.historyserver.yaml");
    cJSON *head = rc_build_head_pod(rc, NULL, &err);
    assert_non_null(head);
    const cJSON *cs = jget(jget(head, "spec"), "containers");
    assert_int_equal(cJSON_GetArraySize(cs), 2);
    const cJSON *col = cJSON_GetArrayItem(cs, 1);
    assert_string_equal(rct_str_at(col, "name"), "ray-history-collector");
    assert_string_equal(rct_str_at(col, "image"), "quay.io/kuberay/collector:nightly");
    assert_string_equal(rct_str_at(col, "imagePullPolicy"), "IfNotPresent");
    assert_string_equal(rct_str_at(col, "resources.limits.memory"), "256Mi");
    env_names(col, names, sizeof(names));
    assert_string_equal(names, "POD_IP RAY_CLUSTER_NAME RAY_CLUSTER_NAMESPACE RAY_ROLE EVENTS_PORT "
                               "FQ_RAY_IP RAY_DASHBOARD_ADDRESS STORAGE_BACKEND GCS_BUCKET");
    assert_string_equal(rct_env_value(col, "RAY_ROLE"), "Head");
    assert_string_equal(rct_env_value(col, "EVENTS_PORT"), "8084");
    assert_string_equal(rct_env_value(col, "RAY_DASHBOARD_ADDRESS"), "http://localhost:8265");
    assert_string_equal(rct_env_value(col, "FQ_RAY_IP"),
                        "raycluster-historyserver-head-svc.default.svc.cluster.local");
    /* both share the Ray logs; the Ray container exports its events to the collector */
    assert_string_equal(rct_str_at(col, "volumeMounts.0.mountPath"), "/tmp/ray");
    assert_string_equal(rct_str_at(ray0(head), "volumeMounts.1.name"), "ray-logs");
    assert_string_equal(rct_env_value(ray0(head), "RAY_enable_ray_event"), "true");
    assert_string_equal(rct_env_value(ray0(head), "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"),
                        "http://localhost:8084/v1/events");
    assert_non_null(strstr(rct_env_value(ray0(head),
                                         "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES"),
                           "TASK_DEFINITION_EVENT,"));
    cJSON_Delete(head);
    cJSON *w = rc_build_worker_pod(rc, group_at(rc, 0), NULL, 0, 0, NULL, &err);
    col = cJSON_GetArrayItem(jget(jget(w, "spec"), "containers"), 1);
    assert_string_equal(rct_env_value(col, "RAY_ROLE"), "Worker");
    assert_null(rct_env_value(col, "RAY_DASHBOARD_ADDRESS"));
    cJSON_Delete(w);
    /* without the options: no collector, no event env */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(rc, "spec"), "historyServerOptions");
    head = rc_build_head_pod(rc, NULL, &err);
    assert_int_equal(cJSON_GetArraySize(jget(jget(head, "spec"), "containers")), 1);
    assert_null(rct_env_value(ray0(head), "RAY_enable_ray_event"));
    cJSON_Delete(head);
    cJSON_Delete(rc);
}

/* spec.networkPolicy: KubeRay's NetworkPolicyController objects for its sample, then the
 * modes, per-group rules, the K8sJobMode submitter and the dashboard-port fallback */
static void test_network_policies(void **state)
{
    (void)state;
    int err = 0;
    cJSON *rc = rct_sample("ray-cluster.network-policy-deny-all.yaml");
    cJSON *nps = rc_build_network_policies(rc, &err), *want;
    assert_non_null(nps);
    want = rct_fixture("netpol-deny-all.json");
    rct_assert_json(nps, want, "NetworkPolicies of ray-cluster.network-policy-deny-all.yaml");
    cJSON_Delete(want);
    cJSON_Delete(nps);

    cJSON *np = (cJSON *)jget(jget(rc, "spec"), "networkPolicy");
    /* DenyAllIngress: no egress side at all; the workers keep only the intra-cluster rule */
    cJSON_ReplaceItemInObject(np, "mode", cJSON_CreateString("DenyAllIngress"));
    cJSON_DeleteItemFromObject((cJSON *)jget(np, "head"), "egressRules");
    cJSON_DeleteItemFromObject(np, "worker");
    nps = rc_build_network_policies(rc, &err);
    assert_string_equal(rct_str_at(cJSON_GetArrayItem(nps, 0), "spec.policyTypes.0"), "Ingress");
    assert_int_equal(cJSON_GetArraySize(jget(jget(cJSON_GetArrayItem(nps, 0), "spec"),
                                             "policyTypes")), 1);
    assert_null(jget(jget(cJSON_GetArrayItem(nps, 0), "spec"), "egress"));
    assert_int_equal(cJSON_GetArraySize(jget(jget(cJSON_GetArrayItem(nps, 1), "spec"), "ingress")), 1);
    cJSON_Delete(nps);

    /* DenyAllEgress with a per-group entry: it replaces networkPolicy.worker for that group */
    cJSON_ReplaceItemInObject(np, "mode", cJSON_CreateString("DenyAllEgress"));
    cJSON_AddItemToObject(np, "worker", cJSON_Parse("{\"egressRules\":[{\"to\":[{\"ipBlock\":"
                                                    "{\"cidr\":\"10.0.0.0/8\"}}]}]}"));
    cJSON_AddItemToObject(np, "workerGroups", cJSON_Parse("[{\"groupName\":\"workergroup\","
                          "\"egressRules\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\"}}],"
                          "\"ports\":[{\"port\":443}]}]}]"));
    nps = rc_build_network_policies(rc, &err);
    const cJSON *w = cJSON_GetArrayItem(nps, 1);
    assert_string_equal(rct_str_at(w, "spec.policyTypes.0"), "Egress");
    assert_null(jget(jget(w, "spec"), "ingress"));
    assert_string_equal(rct_str_at(w, "spec.egress.1.to.0.ipBlock.cidr"), "0.0.0.0/0");
    assert_null(rct_str_at(w, "spec.egress.1.ports.0.protocol"));   /* the server's default */
    assert_null(cJSON_GetArrayItem(jget(jget(w, "spec"), "egress"), 2));
    rc_netpol_normalize((cJSON *)w);
    assert_string_equal(rct_str_at(w, "spec.egress.1.ports.0.protocol"), "TCP");
    cJSON_Delete(nps);

    /* a cluster of a K8sJobMode RayJob: its submitter may reach the head's dashboard port */
    cJSON_ReplaceItemInObject(np, "mode", cJSON_CreateString("DenyAll"));
    cJSON *meta = (cJSON *)jget(rc, "metadata");
    cJSON_AddItemToObject(meta, "labels",
                          cJSON_Parse("{\"ray.io/job-submission-mode\":\"K8sJobMode\"}"));
    cJSON_AddItemToObject(meta, "ownerReferences", cJSON_Parse(
        "[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"name\":\"job1\",\"uid\":\"u\","
        "\"controller\":true}]"));
    cJSON_AddStringToObject((cJSON *)jget(jget(jget(rc, "spec"), "headGroupSpec"), "rayStartParams"),
                            "dashboard-port", "8300");
    nps = rc_build_network_policies(rc, &err);
    const cJSON *h = cJSON_GetArrayItem(nps, 0);
    const cJSON *sub = cJSON_GetArrayItem(jget(jget(h, "spec"), "ingress"), 1);
    const cJSON *ml = jget(jget(cJSON_GetArrayItem(jget(sub, "from"), 0), "podSelector"),
                           "matchLabels");
    assert_string_equal(cJSON_GetStringValue(jget(ml, "ray.io/originated-from-cr-name")), "job1");
    assert_string_equal(cJSON_GetStringValue(jget(ml, "ray.io/originated-from-crd")), "RayJob");
    assert_string_equal(rct_str_at(sub, "ports.0.protocol"), "TCP");
    assert_int_equal(jget(cJSON_GetArrayItem(jget(sub, "ports"), 0), "port")->valueint, 8300);
    /* workers get no submitter rule */
    assert_null(cJSON_GetArrayItem(jget(jget(cJSON_GetArrayItem(nps, 1), "spec"), "ingress"), 1));
    cJSON_Delete(nps);
    /* not a number: KubeRay's default 8265 */
    cJSON_ReplaceItemInObject((cJSON *)jget(jget(jget(rc, "spec"), "headGroupSpec"),
                                            "rayStartParams"), "dashboard-port",
                              cJSON_CreateString("x1"));
    nps = rc_build_network_policies(rc, &err);
    sub = cJSON_GetArrayItem(jget(jget(cJSON_GetArrayItem(nps, 0), "spec"), "ingress"), 1);
    assert_int_equal(jget(cJSON_GetArrayItem(jget(sub, "ports"), 0), "port")->valueint, 8265);
    cJSON_Delete(nps);
    /* an HTTPMode job's cluster: no submitter Pod, no rule */
    cJSON_ReplaceItemInObject((cJSON *)jget(meta, "labels"), "ray.io/job-submission-mode",
                              cJSON_CreateString("HTTPMode"));
    nps = rc_build_network_policies(rc, &err);
    assert_null(cJSON_GetArrayItem(jget(jget(cJSON_GetArrayItem(nps, 0), "spec"), "ingress"), 1));
    cJSON_Delete(nps);

    /* no networkPolicy: nothing */
    cJSON_DeleteItemFromObject((cJSON *)jget(rc, "spec"), "networkPolicy");
    err = 0;
    assert_null(rc_build_network_policies(rc, &err));
    assert_int_equal(err, 0);
    cJSON_Delete(rc);
}

/* gcsFaultToleranceOptions.backend rocksdb: configureEmbeddedFT on the head, KubeRay's PVC
 * for its sample, then deletionPolicy, claimName, subPath, size and the drift text */
static void test_gcs_embedded_storage(void **state)
{
    (void)state;
    int err = 0;
    char drift[512];
    cJSON *rc = rct_sample("ray-cluster.embedded-gcs-ft.yaml");
    cJSON *head = rc_build_head_pod(rc, NULL, &err), *pvc, *want;
    assert_non_null(head);
    const cJSON *ray = ray0(head), *vols = jget(jget(head, "spec"), "volumes");
    assert_string_equal(rct_env_value(ray, "RAY_gcs_storage"), "rocksdb");
    assert_string_equal(rct_env_value(ray, "RAY_gcs_storage_path"), "/data/gcs");
    assert_null(rct_env_value(ray, "RAY_REDIS_ADDRESS"));
    assert_null(rct_env_value(ray, "RAY_external_storage_namespace"));
    assert_string_equal(cJSON_GetStringValue(jget(ann_map(head), "ray.io/ft-enabled")), "true");
    assert_null(jget(ann_map(head), "ray.io/external-storage-namespace"));
    /* the sample's own ray-logs mount first, then the store */
    assert_string_equal(rct_str_at(ray, "volumeMounts.1.name"), "gcs-storage");
    assert_string_equal(rct_str_at(ray, "volumeMounts.1.mountPath"), "/data/gcs");
    assert_null(jget(cJSON_GetArrayItem(jget(ray, "volumeMounts"), 1), "subPath"));
    assert_string_equal(rct_str_at(vols, "1.name"), "gcs-storage");
    assert_string_equal(rct_str_at(vols, "1.persistentVolumeClaim.claimName"),
                        "raycluster-embedded-gcs-ft-gcs-pvc");
    cJSON_Delete(head);
    cJSON *w = rc_build_worker_pod(rc, group_at(rc, 0), NULL, 0, 0, NULL, &err);
    assert_string_equal(rct_env_value(ray0(w), "RAY_gcs_rpc_server_reconnect_timeout_s"), "600");
    assert_null(rct_env_value(ray0(w), "RAY_gcs_storage"));
    cJSON_Delete(w);

    pvc = rc_build_gcs_pvc(rc, &err);
    want = rct_fixture("gcs-embedded-pvc.json");
    rct_assert_json(pvc, want, "GCS storage PVC of ray-cluster.embedded-gcs-ft.yaml");
    rc_gcs_pvc_drift(pvc, want, drift, sizeof(drift));
    assert_string_equal(drift, "");
    cJSON_Delete(want);

    /* Retain: no owner; size canonical as Go prints it; class and modes as asked */
    cJSON *st = (cJSON *)jget(jget(jget(rc, "spec"), "gcsFaultToleranceOptions"), "storage");
    cJSON_ReplaceItemInObject(st, "size", cJSON_CreateString("2048Mi"));
    cJSON_AddStringToObject(st, "deletionPolicy", "Retain");
    cJSON_AddStringToObject(st, "storageClassName", "fast");
    cJSON_AddItemToObject(st, "accessModes", cJSON_Parse("[\"ReadWriteMany\"]"));
    cJSON *p2 = rc_build_gcs_pvc(rc, &err);
    assert_null(jget(jget(p2, "metadata"), "ownerReferences"));
    assert_string_equal(rct_str_at(p2, "spec.resources.requests.storage"), "2Gi");
    assert_string_equal(rct_str_at(p2, "spec.storageClassName"), "fast");
    assert_string_equal(rct_str_at(p2, "spec.accessModes.0"), "ReadWriteMany");
    rc_gcs_pvc_drift(p2, pvc, drift, sizeof(drift));
    assert_string_equal(drift, "requested size 2Gi != current 1Gi; storageClassName fast != "
                               "current <default>; accessModes [ReadWriteMany] != current "
                               "[ReadWriteOnce]");
    cJSON_Delete(p2);
    cJSON_Delete(pvc);

    /* a claim of the user's: no PVC made, the volume names it, subPath kept */
    cJSON_DeleteItemFromObject((cJSON *)jget(jget(rc, "spec"), "gcsFaultToleranceOptions"), "storage");
    cJSON_AddItemToObject((cJSON *)jget(jget(rc, "spec"), "gcsFaultToleranceOptions"), "storage",
                          cJSON_Parse("{\"claimName\":\"mine\",\"subPath\":\"gcs\"}"));
    err = 0;
    assert_null(rc_build_gcs_pvc(rc, &err));
    assert_int_equal(err, 0);
    head = rc_build_head_pod(rc, NULL, &err);
    assert_string_equal(rct_str_at(jget(jget(head, "spec"), "volumes"),
                                   "1.persistentVolumeClaim.claimName"), "mine");
    assert_string_equal(rct_str_at(ray0(head), "volumeMounts.1.subPath"), "gcs");
    cJSON_Delete(head);
    /* the Redis backend: none of it */
    cJSON_ReplaceItemInObject((cJSON *)jget(jget(rc, "spec"), "gcsFaultToleranceOptions"), "backend",
                              cJSON_CreateString("redis"));
    assert_null(rc_build_gcs_pvc(rc, &err));
    head = rc_build_head_pod(rc, NULL, &err);
    assert_null(rct_env_value(ray0(head), "RAY_gcs_storage"));
    assert_non_null(rct_env_value(ray0(head), "RAY_REDIS_ADDRESS"));
    cJSON_Delete(head);
    cJSON_Delete(rc);
}

/* tlsOptions.enabled: KubeRay's cert-manager objects for its sample (IP SANs sorted as
 * strings, 127.0.0.1 always, duplicates and "" dropped), and configureTLS on the Pods */
static void test_mtls(void **state)
{
    (void)state;
    int err = 0;
    char names[512];
    cJSON *rc = rct_sample("ray-cluster.mtls.yaml");
    const char *head_ips[] = { "10.0.0.5", "" }, *worker_ips[] = { "10.0.0.9", "10.0.0.10",
                                                                   "10.0.0.9" };
    cJSON *objs = rc_build_tls_objects(rc, NULL, head_ips, 2, worker_ips, 3, &err);
    cJSON *want = rct_fixture("mtls-objects.json");
    rct_assert_json(objs, want, "cert-manager objects of ray-cluster.mtls.yaml");
    cJSON_Delete(want);
    cJSON_Delete(objs);

    cJSON *head = rc_build_head_pod(rc, NULL, &err);
    const cJSON *ic = cJSON_GetArrayItem(jget(jget(head, "spec"), "initContainers"), 0);
    assert_string_equal(jstr(ic, "name"), "wait-for-tls-ip-san");
    assert_string_equal(jstr(ic, "image"), "rayproject/ray:2.55.1");
    assert_non_null(strstr(rct_str_at(ic, "args.0"), "grep -qE \"IP Address:${POD_IP}([^0-9.]|$)\""));
    env_names(ic, names, sizeof(names));
    assert_string_equal(names, "POD_IP FQ_RAY_IP RAY_IP");
    assert_string_equal(rct_str_at(ic, "resources.limits.cpu"), "50m");
    assert_string_equal(rct_str_at(ic, "volumeMounts.0.mountPath"), "/etc/ray/tls");
    assert_true(cJSON_IsTrue(jget(cJSON_GetArrayItem(jget(ic, "volumeMounts"), 0), "readOnly")));
    const cJSON *v = cJSON_GetArrayItem(jget(jget(head, "spec"), "volumes"), 0);
    assert_string_equal(jstr(v, "name"), "ray-tls");
    assert_string_equal(rct_str_at(v, "secret.secretName"), "ray-head-secret-raycluster-mtls");
    assert_string_equal(rct_env_value(ray0(head), "RAY_USE_TLS"), "1");
    assert_string_equal(rct_env_value(ray0(head), "RAY_TLS_SERVER_CERT"), "/etc/ray/tls/tls.crt");
    assert_string_equal(rct_env_value(ray0(head), "RAY_TLS_SERVER_KEY"), "/etc/ray/tls/tls.key");
    assert_string_equal(rct_env_value(ray0(head), "RAY_TLS_CA_CERT"), "/etc/ray/tls/ca.crt");
    cJSON_Delete(head);
    /* a worker: the TLS wait first, then wait-gcs-ready, which gets the TLS env and mount */
    cJSON *w = rc_build_worker_pod(rc, group_at(rc, 0), NULL, 0, 0, NULL, &err);
    const cJSON *ics = jget(jget(w, "spec"), "initContainers");
    assert_string_equal(rct_str_at(ics, "0.name"), "wait-for-tls-ip-san");
    assert_string_equal(rct_str_at(ics, "1.name"), "wait-gcs-ready");
    assert_string_equal(rct_env_value(cJSON_GetArrayItem(ics, 1), "RAY_USE_TLS"), "1");
    assert_string_equal(rct_str_at(jget(jget(w, "spec"), "volumes"), "0.secret.secretName"),
                        "ray-worker-secret-raycluster-mtls");
    cJSON_Delete(w);
    /* the autoscaler sidecar talks to the GCS too */
    cJSON_AddBoolToObject((cJSON *)jget(rc, "spec"), "enableInTreeAutoscaling", 1);
    head = rc_build_head_pod(rc, NULL, &err);
    assert_string_equal(rct_env_value(rct_container(head, "autoscaler"), "RAY_USE_TLS"), "1");
    cJSON_Delete(head);
    /* tlsOptions.enabled false: nothing */
    cJSON_ReplaceItemInObject((cJSON *)jget(jget(rc, "spec"), "tlsOptions"), "enabled",
                              cJSON_CreateFalse());
    err = 0;
    assert_null(rc_build_tls_objects(rc, NULL, NULL, 0, NULL, 0, &err));
    head = rc_build_head_pod(rc, NULL, &err);
    assert_null(jget(jget(head, "spec"), "initContainers"));
    assert_null(rct_env_value(ray0(head), "RAY_USE_TLS"));
    cJSON_Delete(head);
    cJSON_Delete(rc);
}

static void test_ingress_and_auth_secret(void **state)
{
    (void)state;
    int err = 0;
    char name[128];
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    err = 0;
    assert_null(rc_build_head_ingress(rc, NULL, &err)); /* enableIngress not set */
    assert_int_equal(err, 0);
    cJSON *head = (cJSON *)jget(jget(rc, "spec"), "headGroupSpec");
    cJSON_AddBoolToObject(head, "enableIngress", 1);
    cJSON_AddItemToObject(head, "ingressOptions",
                          cJSON_Parse("{\"host\":\"ray.example.com\",\"path\":\"/ray\","
                                      "\"pathType\":\"ImplementationSpecific\",\"tls\":[{\"hosts\":"
                                      "[\"ray.example.com\"],\"secretName\":\"tls\"}]}"));
    cJSON_AddItemToObject(cJSON_GetObjectItem(rc, "metadata"), "annotations",
                          cJSON_Parse("{\"kubernetes.io/ingress.class\":\"nginx\","
                                      "\"nginx.ingress.kubernetes.io/rewrite-target\":\"/\"}"));
    cJSON *ing = rc_build_head_ingress(rc, NULL, &err);
    cJSON *want = cJSON_Parse(
        "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"Ingress\",\"metadata\":{\"name\":"
        "\"raycluster-kuberay-head-ingress\",\"namespace\":\"default\",\"labels\":{"
        "\"ray.io/cluster\":\"raycluster-kuberay\",\"ray.io/identifier\":\"raycluster-kuberay-head\","
        "\"app.kubernetes.io/name\":\"kuberay\",\"app.kubernetes.io/created-by\":\"kuberay-operator\"},"
        "\"annotations\":{\"nginx.ingress.kubernetes.io/rewrite-target\":\"/\"},\"ownerReferences\":[{"
        "\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":\"raycluster-kuberay\",\"uid\":\""
        RCT_UID "\",\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"ingressClassName\":"
        "\"nginx\",\"rules\":[{\"host\":\"ray.example.com\",\"http\":{\"paths\":[{\"path\":\"/ray\","
        "\"pathType\":\"ImplementationSpecific\",\"backend\":{\"service\":{\"name\":"
        "\"raycluster-kuberay-head-svc\",\"port\":{\"number\":8265}}}}]}}],\"tls\":[{\"hosts\":"
        "[\"ray.example.com\"],\"secretName\":\"tls\"}]}}");
    assert_non_null(ing);
    rct_assert_json(ing, want, "head Ingress");
    cJSON_Delete(want);
    cJSON_Delete(ing);
    /* defaults: "/" Prefix, no host, no class */
    cJSON_DeleteItemFromObject(head, "ingressOptions");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(rc, "metadata"), "annotations");
    ing = rc_build_head_ingress(rc, NULL, &err);
    assert_string_equal(rct_str_at(ing, "spec.rules.0.http.paths.0.path"), "/");
    assert_string_equal(rct_str_at(ing, "spec.rules.0.http.paths.0.pathType"), "Prefix");
    assert_null(jget(cJSON_GetArrayItem(jget(jget(ing, "spec"), "rules"), 0), "host"));
    assert_null(jget(jget(ing, "spec"), "ingressClassName"));
    assert_null(jget(jget(ing, "metadata"), "annotations"));
    cJSON_Delete(ing);
    /* no authOptions: no Secret */
    assert_int_equal(rc_auth_secret_name(rc, name, sizeof(name)), 0);
    assert_string_equal(name, "");
    assert_null(rc_build_auth_secret(rc, (const unsigned char *)"x", 1, &err));
    cJSON_Delete(rc);

    /* ray-cluster.auth.yaml: the Secret named after the cluster; the token text is base64
     * of the bytes ("AP8QYWI="), stored base64 once more in data as the API server would */
    rc = rct_sample("ray-cluster.auth.yaml");
    const unsigned char token[5] = { 0x00, 0xff, 0x10, 'a', 'b' };
    cJSON *sec = rc_build_auth_secret(rc, token, sizeof(token), &err);
    want = cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"ray-cluster-with-auth\","
        "\"namespace\":\"default\",\"labels\":{\"ray.io/cluster\":\"ray-cluster-with-auth\","
        "\"app.kubernetes.io/created-by\":\"kuberay-operator\"},\"ownerReferences\":[{"
        "\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":\"ray-cluster-with-auth\","
        "\"uid\":\"" RCT_UID "\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        "\"data\":{\"auth_token\":\"QVA4UVlXST0=\"}}");
    rct_assert_json(sec, want, "auth Secret");
    cJSON_Delete(want);
    cJSON_Delete(sec);
    /* the Pods reference the same Secret */
    cJSON *pod = rc_build_head_pod(rc, NULL, &err);
    assert_string_equal(rct_str_at(rct_env(ray0(pod), "RAY_AUTH_TOKEN", NULL),
                                   "valueFrom.secretKeyRef.name"), "ray-cluster-with-auth");
    cJSON_Delete(pod);
    err = 0;
    assert_null(rc_build_auth_secret(rc, NULL, 0, &err));
    assert_int_equal(err, -EINVAL);
    cJSON_Delete(rc);
    /* authOptions without mode "token" (absent or "disabled"): no Secret, and the Pods
     * reference none either */
    rc = rct_sample("ray-cluster.auth.yaml");
    cJSON *auth = cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "spec"), "authOptions");
    cJSON_DeleteItemFromObject(auth, "mode");
    assert_int_equal(rc_auth_secret_name(rc, name, sizeof(name)), 0);
    assert_string_equal(name, "");
    assert_null(rc_build_auth_secret(rc, token, sizeof(token), &err));
    pod = rc_build_head_pod(rc, NULL, &err);
    assert_null(rct_env(ray0(pod), "RAY_AUTH_TOKEN", NULL));
    cJSON_Delete(pod);
    cJSON_AddStringToObject(auth, "mode", "disabled");
    assert_int_equal(rc_auth_secret_name(rc, name, sizeof(name)), 0);
    assert_string_equal(name, "");
    cJSON_Delete(rc);
    /* a user Secret, or Kubernetes token auth: none */
    rc = rct_sample("ray-cluster.auth.secret-ref.yaml");
    assert_int_equal(rc_auth_secret_name(rc, name, sizeof(name)), 0);
    assert_string_equal(name, "");
    cJSON_Delete(rc);
    rc = rct_sample("ray-cluster.kubernetes.auth.yaml");
    assert_int_equal(rc_auth_secret_name(rc, name, sizeof(name)), 0);
    assert_string_equal(name, "");
    pod = rc_build_head_pod(rc, NULL, &err);
    assert_string_equal(rct_env_value(ray0(pod), "RAY_ENABLE_K8S_TOKEN_AUTH"), "true");
    assert_null(rct_env(ray0(pod), "RAY_AUTH_TOKEN", NULL));
    cJSON_Delete(pod);
    cJSON_Delete(rc);
}

static void test_operator_config(void **state)
{
    (void)state;
    int err = 0, idx = -1;
    struct rc_build_opts o;
    cJSON *hs = cJSON_Parse("[{\"name\":\"log-shipper\",\"image\":\"fluent-bit\"}]");
    cJSON *ws = cJSON_Parse("[{\"name\":\"worker-side\",\"image\":\"busybox\"}]");
    cJSON *envs = cJSON_Parse("[{\"name\":\"TZ\",\"value\":\"UTC\"},{\"name\":\"RAY_PORT\","
                              "\"value\":\"1\"}]");
    cJSON *anns = cJSON_Parse("{\"team\":\"ml\",\"ray.io/ft-enabled\":\"maybe\"}");
    cJSON *labels = cJSON_Parse("{\"cost-center\":\"42\",\"ray.io/cluster\":\"other\"}");
    rc_build_opts_default(&o);
    o.head_sidecar_containers = hs;
    o.worker_sidecar_containers = ws;
    o.default_container_envs = envs;
    o.default_pod_annotations = anns;
    o.default_pod_labels = labels;
    cJSON *rc = rct_sample("ray-cluster.autoscaler.yaml");
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_non_null(head);
    /* sidecar after the autoscaler, as buildHeadPod appends it */
    assert_string_equal(rct_str_at(jget(head, "spec"), "containers.2.name"), "log-shipper");
    assert_null(rct_container(head, "worker-side"));
    /* default envs first; RAY_PORT taken from the config, so KubeRay's is not added */
    assert_non_null(rct_env(ray0(head), "TZ", &idx));
    assert_int_equal(idx, 0);
    assert_string_equal(rct_env_value(ray0(head), "RAY_PORT"), "1");
    /* added where absent, never over what KubeRay set */
    assert_string_equal(jstr(ann_map(head), "team"), "ml");
    assert_string_equal(jstr(ann_map(head), "ray.io/ft-enabled"), "false");
    assert_string_equal(jstr(label_map(head), "cost-center"), "42");
    assert_string_equal(jstr(label_map(head), "ray.io/cluster"), "raycluster-autoscaler");
    cJSON_Delete(head);
    cJSON *w = rc_build_worker_pod(rc, group_at(rc, 0), NULL, 0, 0, &o, &err);
    assert_string_equal(rct_str_at(jget(w, "spec"), "containers.1.name"), "worker-side");
    assert_string_equal(jstr(ann_map(w), "team"), "ml");
    assert_string_equal(jstr(ann_map(w), "ray.io/ft-enabled"), "maybe");
    cJSON_Delete(w);
    cJSON_Delete(rc);
    cJSON_Delete(hs);
    cJSON_Delete(ws);
    cJSON_Delete(envs);
    cJSON_Delete(anns);
    cJSON_Delete(labels);
}

static void test_spec_hash_and_replicas(void **state)
{
    (void)state;
    char h1[40], h2[40];
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    cJSON *g = group_at(rc, 0);
    assert_int_equal(rc_spec_hash(rc, h1, sizeof(h1)), 0);
    /* replicas, min/max, workersToDelete and tolerations do not change it ... */
    cJSON_ReplaceItemInObject(g, "replicas", cJSON_CreateNumber(4));
    cJSON_ReplaceItemInObject(g, "maxReplicas", cJSON_CreateNumber(9));
    cJSON_AddItemToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(g, "template"), "spec"),
                          "tolerations", cJSON_Parse("[{\"key\":\"k\",\"operator\":\"Exists\"}]"));
    assert_int_equal(rc_spec_hash(rc, h2, sizeof(h2)), 0);
    assert_string_equal(h1, h2);
    assert_int_equal(rc_worker_desired_replicas(g), 4);
    cJSON_ReplaceItemInObject(g, "replicas", cJSON_CreateNumber(12));
    assert_int_equal(rc_worker_desired_replicas(g), 9);
    cJSON_ReplaceItemInObject(g, "minReplicas", cJSON_CreateNumber(3));
    cJSON_ReplaceItemInObject(g, "replicas", cJSON_CreateNumber(0));
    assert_int_equal(rc_worker_desired_replicas(g), 3);
    cJSON_AddBoolToObject(g, "suspend", 1);
    assert_int_equal(rc_worker_desired_replicas(g), 0);
    /* ... a template change does */
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(g, "template"), "spec"), "containers"), 0), "image",
        cJSON_CreateString("rayproject/ray:2.53.0"));
    assert_int_equal(rc_spec_hash(rc, h2, sizeof(h2)), 0);
    assert_string_not_equal(h1, h2);
    assert_int_equal(rc_spec_hash(rc, h2, 10), -ENAMETOOLONG);
    /* GCS FT deletion timeout annotation */
    assert_int_equal(rc_gcs_ft_deletion_timeout(rc), 300);
    cJSON *ann = cJSON_AddObjectToObject(cJSON_GetObjectItem(rc, "metadata"), "annotations");
    cJSON_AddStringToObject(ann, "ray.io/gcs-ft-deletion-timeout", "45");
    assert_int_equal(rc_gcs_ft_deletion_timeout(rc), 45);
    cJSON_ReplaceItemInObject(ann, "ray.io/gcs-ft-deletion-timeout", cJSON_CreateString("x"));
    assert_int_equal(rc_gcs_ft_deletion_timeout(rc), 300);
    cJSON_Delete(rc);
}

static void test_opts_from_env(void **state)
{
    (void)state;
    struct rc_build_opts o;
    setenv("ENABLE_INIT_CONTAINER_INJECTION", "FALSE", 1);
    setenv("ENABLE_DETERMINISTIC_HEAD_POD_NAME", "true", 1);
    setenv("CLUSTER_DOMAIN", "k8s.local", 1);
    setenv("ENABLE_PROBES_INJECTION", "yes", 1);
    rc_build_opts_from_env(&o);
    assert_false(o.enable_init_container_injection);
    assert_true(o.use_deterministic_head_name);
    assert_string_equal(o.cluster_domain, "k8s.local");
    assert_true(o.enable_probes_injection); /* only "false" turns it off */
    assert_false(o.enable_head_cluster_ip_service);
    unsetenv("ENABLE_INIT_CONTAINER_INJECTION");
    unsetenv("ENABLE_DETERMINISTIC_HEAD_POD_NAME");
    unsetenv("CLUSTER_DOMAIN");
    unsetenv("ENABLE_PROBES_INJECTION");
    /* no probes when switched off */
    cJSON *rc = rct_sample("ray-cluster.sample.yaml");
    int err = 0;
    rc_build_opts_default(&o);
    o.enable_probes_injection = false;
    cJSON *pod = rc_build_head_pod(rc, &o, &err);
    assert_null(jget(ray0(pod), "livenessProbe"));
    assert_null(jget(ray0(pod), "readinessProbe"));
    cJSON_Delete(pod);
    /* malformed input: no head container -> -EINVAL, never a crash */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(rc, "spec"), "headGroupSpec"), "template"), "spec"), "containers");
    err = 0;
    assert_null(rc_build_head_pod(rc, NULL, &err));
    assert_int_equal(err, -EINVAL);
    err = 0;
    assert_null(rc_build_head_service(rc, NULL, &err));
    assert_int_equal(err, -EINVAL);
    err = 0;
    assert_null(rc_build_worker_pod(rc, NULL, NULL, 0, 0, NULL, &err));
    assert_int_equal(err, -EINVAL);
    cJSON_Delete(rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ray_start_params),
        cmocka_unit_test(test_labels_names_and_creators),
        cmocka_unit_test(test_ingress_and_auth_secret),
        cmocka_unit_test(test_head_route),
        cmocka_unit_test(test_history_collector),
        cmocka_unit_test(test_network_policies),
        cmocka_unit_test(test_gcs_embedded_storage),
        cmocka_unit_test(test_mtls),
        cmocka_unit_test(test_operator_config),
        cmocka_unit_test(test_spec_hash_and_replicas),
        cmocka_unit_test(test_opts_from_env),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    schema_free(rct_schema);
    return r;
}

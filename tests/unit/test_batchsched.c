/*
 * test_batchsched.c - the batch-scheduler integrations' objects, byte for byte as
 * KubeRay v1.7 builds them (batchscheduler/volcano, yunikorn, kai-scheduler,
 * scheduler-plugins, kubernetes-was): scheduler selection and its start-up
 * messages, the Volcano PodGroup of a RayCluster and of a RayJob (submitter
 * included), scale and autoscaling rules, network-topology labels, the metadata
 * every scheduler puts on head/worker Pods, the submitter template and a RayJob's
 * RayCluster, YuniKorn task groups, KAI's K8sJobMode refusal, the
 * scheduler-plugins PodGroup and the WAS Workload / PodGroup. Inputs are the
 * KubeRay samples where one exists.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/batchsched.h"
#include "reconcilers/raycluster/build.h"
#include "reconcilers/rayjob/rayjob.h"
#include "tests/unit/rc_test_lib.h"

static cJSON *sample_with(const char *file, const char *ns, const char *uid)
{
    cJSON *rc = rct_sample(file);
    cJSON *md = cJSON_GetObjectItem(rc, "metadata");
    cJSON_DeleteItemFromObject(md, "namespace");
    cJSON_AddStringToObject(md, "namespace", ns);
    cJSON_DeleteItemFromObject(md, "uid");
    cJSON_AddStringToObject(md, "uid", uid);
    return rc;
}

/* The RayJob of a sample file (rct_sample returns only RayClusters). */
static cJSON *job_sample(const char *file, const char *uid)
{
    char path[800];
    cJSON *docs, *d, *rj = NULL;
    snprintf(path, sizeof(path), "%s/kuberay/samples/%s", shared_fixture_dir(), file);
    docs = rct_load_docs(path);
    cJSON_ArrayForEach(d, docs) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(d, "kind"));
        if (kind && !strcmp(kind, "RayJob")) {
            rj = cJSON_Duplicate(d, 1);
            break;
        }
    }
    cJSON_Delete(docs);
    assert_non_null(rj);
    cJSON *md = cJSON_GetObjectItem(rj, "metadata");
    cJSON_AddStringToObject(md, "namespace", "ns");
    cJSON_AddStringToObject(md, "uid", uid);
    return rj;
}

static void assert_text(const cJSON *obj, const char *want)
{
    char *got = cJSON_PrintUnformatted(obj);
    assert_non_null(got);
    if (strcmp(got, want) != 0)
        fail_msg("got\n  %s\nwant\n  %s", got, want);
    free(got);
}

static const char *ann(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(ann_map(o), k));
}

static const char *lab(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(label_map(o), k));
}

static const char *sched_name(const cJSON *podlike)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(podlike, "spec"),
                                                    "schedulerName"));
}

static void test_select(void **state)
{
    (void)state;
    enum batchsched_kind k;
    char err[256];
    assert_int_equal(batchsched_select("", false, false, &k, err, sizeof(err)), 0);
    assert_int_equal(k, BATCHSCHED_NONE);
    assert_int_equal(batchsched_select(NULL, true, false, &k, err, sizeof(err)), 0);
    assert_int_equal(k, BATCHSCHED_VOLCANO);
    const char *names[] = { "volcano", "yunikorn", "kai-scheduler", "scheduler-plugins" };
    const enum batchsched_kind kinds[] = { BATCHSCHED_VOLCANO, BATCHSCHED_YUNIKORN, BATCHSCHED_KAI,
                                           BATCHSCHED_SCHEDULER_PLUGINS };
    for (int i = 0; i < 4; i++) {
        assert_int_equal(batchsched_select(names[i], false, false, &k, err, sizeof(err)), 0);
        assert_int_equal(k, kinds[i]);
        assert_string_equal(batchsched_name(k), names[i]);
    }
    assert_int_equal(batchsched_select("slurm", false, false, &k, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "scheduler is not supported, name=slurm");
    /* the plugin's instance name is not a valid choice, as in KubeRay */
    assert_int_equal(batchsched_select("scheduler-plugins-scheduler", false, false, &k, err,
                                       sizeof(err)), -EINVAL);
    assert_int_equal(batchsched_select("volcano", true, false, &k, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "both feature flags enable-batch-scheduler (deprecated) and "
                        "batch-scheduler are set. Please use batch-scheduler only");
    assert_int_equal(batchsched_select("", false, true, &k, err, sizeof(err)), 0);
    assert_int_equal(k, BATCHSCHED_KUBERNETES_WAS);
    assert_int_equal(batchsched_select("volcano", false, true, &k, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "the KubernetesWAS feature gate cannot be combined with "
                        "--batch-scheduler or --enable-batch-scheduler");
}

static void test_volcano_cluster_podgroup(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.volcano-scheduler-queue.yaml", "ns", "u1");
    struct batchsched_parent p = { .obj = rc };
    int err = 0;
    cJSON *pg = batchsched_volcano_podgroup(&p, &err);
    assert_non_null(pg);
    assert_text(pg, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"ray-test-cluster-0-pg\",\"namespace\":\"ns\","
                "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                "\"name\":\"test-cluster-0\",\"uid\":\"u1\",\"controller\":true,"
                "\"blockOwnerDeletion\":true}]},\"spec\":{\"minMember\":3,"
                "\"queue\":\"kuberay-test-queue\",\"minResources\":{\"cpu\":\"3\","
                "\"memory\":\"4Gi\"}},\"status\":{\"phase\":\"Pending\"}}");
    cJSON_Delete(pg);

    /* scale-up: replicas 2 -> 4 (max 4) raises minMember and minResources */
    cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "spec"),
                                                      "workerGroupSpecs"), 0);
    cJSON_ReplaceItemInObject(g, "replicas", cJSON_CreateNumber(4));
    cJSON_ReplaceItemInObject(g, "maxReplicas", cJSON_CreateNumber(4));
    int32_t mm;
    cJSON *res;
    assert_int_equal(batchsched_volcano_params(cJSON_GetObjectItem(rc, "spec"), &mm, &res), 0);
    assert_int_equal(mm, 5);
    assert_text(res, "{\"cpu\":\"5\",\"memory\":\"6Gi\"}");
    cJSON_Delete(res);
    /* replicas above maxReplicas: members clamp, resources count the spec as written */
    cJSON_ReplaceItemInObject(g, "maxReplicas", cJSON_CreateNumber(3));
    assert_int_equal(batchsched_volcano_params(cJSON_GetObjectItem(rc, "spec"), &mm, &res), 0);
    assert_int_equal(mm, 4);
    assert_text(res, "{\"cpu\":\"5\",\"memory\":\"6Gi\"}");
    cJSON_Delete(res);
    /* autoscaling: min workers and their resources */
    cJSON_AddTrueToObject(cJSON_GetObjectItem(rc, "spec"), "enableInTreeAutoscaling");
    assert_int_equal(batchsched_volcano_params(cJSON_GetObjectItem(rc, "spec"), &mm, &res), 0);
    assert_int_equal(mm, 3);
    assert_text(res, "{\"cpu\":\"3\",\"memory\":\"4Gi\"}");
    cJSON_Delete(res);
    /* a suspended group counts for nothing */
    cJSON_AddTrueToObject(g, "suspend");
    assert_int_equal(batchsched_volcano_params(cJSON_GetObjectItem(rc, "spec"), &mm, &res), 0);
    assert_int_equal(mm, 1);
    assert_text(res, "{\"cpu\":\"1\",\"memory\":\"2Gi\"}");
    cJSON_Delete(res);
    cJSON_Delete(rc);

    /* the sample without a queue: head only (requests over limits), no queue field */
    rc = sample_with("ray-cluster.volcano-scheduler.yaml", "ns", "u2");
    p.obj = rc;
    pg = batchsched_volcano_podgroup(&p, &err);
    assert_non_null(pg);
    assert_text(pg, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"ray-test-cluster-0-pg\",\"namespace\":\"ns\","
                "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                "\"name\":\"test-cluster-0\",\"uid\":\"u2\",\"controller\":true,"
                "\"blockOwnerDeletion\":true}]},\"spec\":{\"minMember\":1,"
                "\"minResources\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}},"
                "\"status\":{\"phase\":\"Pending\"}}");
    cJSON_Delete(pg);
    cJSON_Delete(rc);
}

static void test_volcano_labels_topology(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.volcano-scheduler-queue.yaml", "ns", "u1");
    cJSON *lb = cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "metadata"), "labels");
    cJSON *md = cJSON_GetObjectItem(rc, "metadata");
    cJSON *an = cJSON_AddObjectToObject(md, "annotations");
    cJSON_AddStringToObject(an, "team", "a");
    cJSON_AddStringToObject(lb, "ray.io/priority-class-name", "high");
    cJSON_AddStringToObject(lb, "volcano.sh/network-topology-mode", "hard");
    cJSON_AddStringToObject(lb, "volcano.sh/network-topology-highest-tier-allowed", "2");
    struct batchsched_parent p = { .obj = rc };
    int err = 0;
    cJSON *pg = batchsched_volcano_podgroup(&p, &err);
    assert_non_null(pg);
    assert_text(cJSON_GetObjectItem(pg, "spec"),
                "{\"minMember\":3,\"queue\":\"kuberay-test-queue\",\"priorityClassName\":\"high\","
                "\"minResources\":{\"cpu\":\"3\",\"memory\":\"4Gi\"},"
                "\"networkTopology\":{\"mode\":\"hard\",\"highestTierAllowed\":2}}");
    /* the owner's annotations are copied onto the PodGroup */
    assert_string_equal(ann(pg, "team"), "a");
    cJSON_Delete(pg);
    cJSON_ReplaceItemInObject(lb, "volcano.sh/network-topology-highest-tier-allowed",
                              cJSON_CreateString("two"));
    assert_null(batchsched_volcano_podgroup(&p, &err));
    assert_int_equal(err, -EINVAL);
    cJSON_Delete(rc);
}

static void test_volcano_rayjob_podgroup(void **state)
{
    (void)state;
    cJSON *rj = job_sample("ray-job.volcano-scheduler-queue.yaml", "j1");
    cJSON *st = cJSON_AddObjectToObject(rj, "status");
    cJSON_AddStringToObject(st, "rayClusterName", "rayjob-sample-0-abcde");
    int err = 0;
    cJSON *job = rj_build_submitter(rj, NULL, st, &err);
    assert_non_null(job);
    const cJSON *podspec = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(job, "spec"),
                                               "template"), "spec");
    struct batchsched_parent p = { .obj = rj, .is_job = true, .submitter_podspec = podspec };
    cJSON *pg = batchsched_volcano_podgroup(&p, &err);
    assert_non_null(pg);
    /* cluster 3 CPU / 4Gi plus the default submitter's 500m / 200Mi requests */
    assert_text(pg, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"ray-rayjob-sample-0-pg\",\"namespace\":\"ns\","
                "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\","
                "\"name\":\"rayjob-sample-0\",\"uid\":\"j1\",\"controller\":true,"
                "\"blockOwnerDeletion\":true}]},\"spec\":{\"minMember\":3,"
                "\"queue\":\"kuberay-test-queue\",\"minResources\":{\"cpu\":\"3500m\","
                "\"memory\":\"4296Mi\"}},\"status\":{\"phase\":\"Pending\"}}");
    cJSON_Delete(pg);

    /* the submitter's Pod template and the RayCluster the RayJob creates */
    cJSON *tmpl = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "spec"), "template");
    assert_int_equal(batchsched_child_meta(BATCHSCHED_VOLCANO, &p, tmpl, true,
                                           BATCHSCHED_SUBMITTER_GROUP), 0);
    assert_string_equal(sched_name(tmpl), "volcano");
    assert_string_equal(ann(tmpl, "scheduling.k8s.io/group-name"), "ray-rayjob-sample-0-pg");
    assert_string_equal(ann(tmpl, "volcano.sh/task-spec"), "submittergroup");
    assert_string_equal(lab(tmpl, "volcano.sh/queue-name"), "kuberay-test-queue");
    cJSON *cluster = rj_build_cluster(rj, st, false, &err);
    assert_non_null(cluster);
    assert_int_equal(batchsched_child_meta(BATCHSCHED_VOLCANO, &p, cluster, false, ""), 0);
    assert_null(sched_name(cluster));
    assert_string_equal(ann(cluster, "volcano.sh/task-spec"), "");
    assert_string_equal(ann(cluster, "scheduling.k8s.io/group-name"), "ray-rayjob-sample-0-pg");
    /* that cluster's Pods join the RayJob's PodGroup (ray.io/originated-from-cr-name) */
    cJSON_AddStringToObject(cJSON_GetObjectItem(cluster, "metadata"), "uid", "c1");
    struct rc_build_opts o;
    rc_build_opts_default(&o);
    o.batch_scheduler = BATCHSCHED_VOLCANO;
    cJSON *worker = rc_build_worker_pod(cluster, cJSON_GetArrayItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cluster, "spec"), "workerGroupSpecs"), 0), NULL, 0, 0, &o, &err);
    assert_non_null(worker);
    assert_string_equal(ann(worker, "scheduling.k8s.io/group-name"), "ray-rayjob-sample-0-pg");
    assert_string_equal(ann(worker, "volcano.sh/task-spec"), "small-group");
    assert_string_equal(sched_name(worker), "volcano");
    cJSON_Delete(worker);
    /* no rayClusterSpec: KubeRay refuses gang scheduling for it */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(rj, "spec"), "rayClusterSpec");
    assert_null(batchsched_volcano_podgroup(&p, &err));
    assert_int_equal(err, -EINVAL);
    char msg[256];
    assert_int_equal(batchsched_submit(NULL, BATCHSCHED_VOLCANO, &p, msg, sizeof(msg)), -EINVAL);
    assert_string_equal(msg, "gang scheduling does not support RayJob ns/rayjob-sample-0 "
                        "referencing an existing RayCluster");
    cJSON_Delete(cluster);
    cJSON_Delete(job);
    cJSON_Delete(rj);
}

static void test_volcano_pods(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.volcano-scheduler-queue.yaml", "ns", "u1");
    struct rc_build_opts o;
    int err = 0;
    rc_build_opts_default(&o);
    cJSON *plain = rc_build_head_pod(rc, &o, &err);
    assert_null(sched_name(plain));   /* no scheduler: the template's (none) */
    assert_null(ann(plain, "scheduling.k8s.io/group-name"));
    o.batch_scheduler = BATCHSCHED_VOLCANO;
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_string_equal(sched_name(head), "volcano");
    assert_string_equal(ann(head, "scheduling.k8s.io/group-name"), "ray-test-cluster-0-pg");
    assert_string_equal(ann(head, "volcano.sh/task-spec"), "headgroup");
    assert_string_equal(lab(head, "volcano.sh/queue-name"), "kuberay-test-queue");
    assert_null(lab(head, "ray.io/priority-class-name"));
    cJSON *worker = rc_build_worker_pod(rc, cJSON_GetArrayItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(rc, "spec"), "workerGroupSpecs"), 0), NULL, 0, 0, &o, &err);
    assert_string_equal(ann(worker, "volcano.sh/task-spec"), "worker");
    assert_string_equal(sched_name(worker), "volcano");
    cJSON_Delete(plain);
    cJSON_Delete(head);
    cJSON_Delete(worker);
    cJSON_Delete(rc);
}

static void test_yunikorn(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.yunikorn-scheduler.yaml", "ns", "u1");
    struct rc_build_opts o;
    int err = 0;
    rc_build_opts_default(&o);
    o.batch_scheduler = BATCHSCHED_YUNIKORN;
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_non_null(head);
    assert_string_equal(sched_name(head), "yunikorn");
    assert_string_equal(lab(head, "applicationId"), "test-yunikorn-0");
    assert_string_equal(lab(head, "queue"), "root.test");
    assert_string_equal(ann(head, "yunikorn.apache.org/task-group-name"), "headgroup");
    assert_string_equal(ann(head, "yunikorn.apache.org/task-groups"),
                        "[{\"minResource\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"name\":\"headgroup\","
                        "\"minMember\":1},{\"minResource\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
                        "\"name\":\"worker\",\"minMember\":2}]");
    cJSON_Delete(head);
    /* without the gang label: labels and schedulerName only */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "metadata"), "labels"),
                               "ray.io/gang-scheduling-enabled");
    head = rc_build_head_pod(rc, &o, &err);
    assert_null(ann(head, "yunikorn.apache.org/task-groups"));
    assert_string_equal(lab(head, "applicationId"), "test-yunikorn-0");
    cJSON_Delete(head);
    cJSON_Delete(rc);

    /* placement fields in TaskGroup's Go order (nodeSelector, affinity before name;
     * tolerations after it), empty ones left out (omitempty); minMember is
     * minReplicas x numOfHosts */
    rc = cJSON_Parse("{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":{"
                     "\"headGroupSpec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"pool\":\"a\"},"
                     "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
                     "\"affinity\":{\"nodeAffinity\":{}},\"containers\":[{\"name\":\"h\","
                     "\"resources\":{\"limits\":{\"cpu\":\"2\"}}}]}}},"
                     "\"workerGroupSpecs\":[{\"groupName\":\"tpu\",\"minReplicas\":2,\"numOfHosts\":4,"
                     "\"template\":{\"spec\":{\"nodeSelector\":{},\"tolerations\":[],"
                     "\"containers\":[{\"name\":\"w\"}]}}}]}}");
    struct batchsched_parent cp = { .obj = rc };
    char *ctg = batchsched_yunikorn_task_groups(&cp);
    assert_string_equal(ctg, "[{\"minResource\":{\"cpu\":\"2\"},\"nodeSelector\":{\"pool\":\"a\"},"
                        "\"affinity\":{\"nodeAffinity\":{}},\"name\":\"headgroup\","
                        "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
                        "\"minMember\":1},{\"minResource\":{},\"name\":\"tpu\",\"minMember\":8}]");
    free(ctg);
    cJSON_Delete(rc);

    /* a RayJob: the submitter group, on the submitter template and the cluster */
    cJSON *rj = job_sample("ray-job.yunikorn-scheduler.yaml", "j1");
    cJSON *st = cJSON_AddObjectToObject(rj, "status");
    cJSON_AddStringToObject(st, "rayClusterName", "rayjob-yunikorn-0-abcde");
    cJSON *job = rj_build_submitter(rj, NULL, st, &err);
    cJSON *tmpl = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "spec"), "template");
    struct batchsched_parent p = { .obj = rj, .is_job = true,
                                   .submitter_podspec = cJSON_GetObjectItem(tmpl, "spec") };
    char *tg = batchsched_yunikorn_task_groups(&p);
    assert_non_null(tg);
    /* TaskGroup's Go field order, omitempty fields left out; the default submitter's
     * requests (500m / 200Mi) win over its limits */
    assert_string_equal(tg, "[{\"minResource\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
                        "\"name\":\"headgroup\",\"minMember\":1},"
                        "{\"minResource\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
                        "\"name\":\"small-group\",\"minMember\":1},"
                        "{\"minResource\":{\"cpu\":\"500m\",\"memory\":\"200Mi\"},"
                        "\"name\":\"submittergroup\",\"minMember\":1}]");
    assert_int_equal(batchsched_child_meta(BATCHSCHED_YUNIKORN, &p, tmpl, true,
                                           BATCHSCHED_SUBMITTER_GROUP), 0);
    assert_string_equal(ann(tmpl, "yunikorn.apache.org/task-groups"), tg);
    assert_string_equal(ann(tmpl, "yunikorn.apache.org/task-group-name"), "submittergroup");
    assert_string_equal(sched_name(tmpl), "yunikorn");
    free(tg);
    cJSON_Delete(job);
    cJSON_Delete(rj);
}

static void test_kai(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.kai-scheduler.yaml", "ns", "u1");
    struct rc_build_opts o;
    int err = 0;
    rc_build_opts_default(&o);
    o.batch_scheduler = BATCHSCHED_KAI;
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_string_equal(sched_name(head), "kai-scheduler");
    assert_string_equal(lab(head, "kai.scheduler/queue"),
                        kobj_label(rc, "kai.scheduler/queue"));
    cJSON_Delete(head);
    cJSON_Delete(rc);
    cJSON *rj = cJSON_Parse("{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\"},"
                            "\"spec\":{\"entrypoint\":\"x\"}}");
    struct batchsched_parent p = { .obj = rj, .is_job = true };
    char msg[256];
    assert_int_equal(batchsched_submit(NULL, BATCHSCHED_KAI, &p, msg, sizeof(msg)), -EINVAL);
    assert_string_equal(msg, "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter "
                        "pod is created after RayCluster is ready, preventing proper gang scheduling");
    cJSON_AddStringToObject(cJSON_GetObjectItem(rj, "spec"), "submissionMode", "HTTPMode");
    assert_int_equal(batchsched_submit(NULL, BATCHSCHED_KAI, &p, msg, sizeof(msg)), 0);
    cJSON_Delete(rj);
}

static void test_scheduler_plugins(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.scheduler-plugins.yaml", "ns", "u1");
    int err = 0;
    cJSON *pg = batchsched_sp_podgroup(rc, &err);
    assert_text(pg, "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"test-podgroup-0\",\"namespace\":\"ns\","
                "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                "\"name\":\"test-podgroup-0\",\"uid\":\"u1\"}]},\"spec\":{\"minMember\":3,"
                "\"minResources\":{\"cpu\":\"3\",\"memory\":\"4Gi\"}}}");
    cJSON_Delete(pg);
    struct rc_build_opts o;
    rc_build_opts_default(&o);
    o.batch_scheduler = BATCHSCHED_SCHEDULER_PLUGINS;
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_string_equal(sched_name(head), "scheduler-plugins-scheduler");
    assert_string_equal(lab(head, "scheduling.x-k8s.io/pod-group"), "test-podgroup-0");
    cJSON_Delete(head);
    cJSON *rj = cJSON_Parse("{\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\"},\"spec\":{}}");
    struct batchsched_parent p = { .obj = rj, .is_job = true };
    char msg[256];
    assert_int_equal(batchsched_submit(NULL, BATCHSCHED_SCHEDULER_PLUGINS, &p, msg, sizeof(msg)),
                     -EINVAL);
    assert_string_equal(msg, "currently only RayCluster is supported, got *v1.RayJob");
    cJSON_Delete(rj);
    cJSON_Delete(rc);
}

static void test_kubernetes_was(void **state)
{
    (void)state;
    cJSON *rc = sample_with("ray-cluster.scheduler-plugins.yaml", "ns", "u1");
    int err = 0;
    cJSON *wl = batchsched_was_workload(rc, &err), *pg = batchsched_was_podgroup(rc, &err);
    const char *owner = "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
                        "\"name\":\"test-podgroup-0\",\"uid\":\"u1\",\"controller\":true,"
                        "\"blockOwnerDeletion\":true}]";
    char want[2048];
    snprintf(want, sizeof(want), "{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"Workload\","
             "\"metadata\":{\"name\":\"test-podgroup-0\",\"namespace\":\"ns\",\"labels\":"
             "{\"ray.io/cluster\":\"test-podgroup-0\"},%s},\"spec\":{\"controllerRef\":"
             "{\"apiGroup\":\"ray.io\",\"kind\":\"RayCluster\",\"name\":\"test-podgroup-0\"},"
             "\"podGroupTemplates\":[{\"name\":\"cluster\",\"schedulingPolicy\":{\"gang\":"
             "{\"minCount\":3}}}]}}", owner);
    assert_text(wl, want);
    snprintf(want, sizeof(want), "{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"name\":\"test-podgroup-0-cluster\",\"namespace\":\"ns\",\"labels\":"
             "{\"ray.io/cluster\":\"test-podgroup-0\"},%s},\"spec\":{\"podGroupTemplateRef\":"
             "{\"workload\":{\"workloadName\":\"test-podgroup-0\",\"podGroupTemplateName\":"
             "\"cluster\"}},\"schedulingPolicy\":{\"gang\":{\"minCount\":3}}}}", owner);
    assert_text(pg, want);
    cJSON_Delete(wl);
    cJSON_Delete(pg);
    struct rc_build_opts o;
    rc_build_opts_default(&o);
    o.batch_scheduler = BATCHSCHED_KUBERNETES_WAS;
    cJSON *head = rc_build_head_pod(rc, &o, &err);
    assert_string_equal(sched_name(head), "default-scheduler");
    assert_text(cJSON_GetObjectItem(cJSON_GetObjectItem(head, "spec"), "schedulingGroup"),
                "{\"podGroupName\":\"test-podgroup-0-cluster\"}");
    cJSON_Delete(head);
    /* autoscaling is not supported: nothing added */
    cJSON_AddTrueToObject(cJSON_GetObjectItem(rc, "spec"), "enableInTreeAutoscaling");
    head = rc_build_head_pod(rc, &o, &err);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(head, "spec"), "schedulingGroup"));
    cJSON_Delete(head);
    cJSON_Delete(rc);
}

static void test_quantities(void **state)
{
    (void)state;
    /* limits fill in where a request is missing; quantities sum exactly and print
     * canonically (1000m -> 1, 1536Mi stays binary, 0.5 -> 500m) */
    cJSON *spec = cJSON_Parse(
        "{\"headGroupSpec\":{\"template\":{\"spec\":{\"containers\":["
        "{\"resources\":{\"requests\":{\"cpu\":\"1000m\"},\"limits\":{\"cpu\":\"2\",\"memory\":\"1536Mi\"}}},"
        "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"0.5\"}}}]}}},"
        "\"workerGroupSpecs\":[{\"groupName\":\"g\",\"replicas\":0,\"template\":{\"spec\":{\"containers\":["
        "{\"resources\":{\"requests\":{\"ephemeral-storage\":\"1G\"}}}]}}}]}");
    int32_t mm;
    cJSON *res;
    assert_int_equal(batchsched_volcano_params(spec, &mm, &res), 0);
    assert_int_equal(mm, 1);
    /* a group at 0 replicas still lists its resource names, at 0 */
    assert_text(res, "{\"cpu\":\"1500m\",\"ephemeral-storage\":\"0\",\"memory\":\"1536Mi\","
                "\"nvidia.com/gpu\":\"1\"}");
    cJSON_Delete(res);
    cJSON_Delete(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_volcano_cluster_podgroup),
        cmocka_unit_test(test_volcano_labels_topology),
        cmocka_unit_test(test_volcano_rayjob_podgroup),
        cmocka_unit_test(test_volcano_pods),
        cmocka_unit_test(test_yunikorn),
        cmocka_unit_test(test_kai),
        cmocka_unit_test(test_scheduler_plugins),
        cmocka_unit_test(test_kubernetes_was),
        cmocka_unit_test(test_quantities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

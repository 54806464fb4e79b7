#!/bin/bash
# deadline: 210
# batch_samples.sh - every Volcano and YuniKorn sample of KubeRay
# (kuberay/samples/*volcano* and *yunikorn*) accepted and reconciled by rayop with the
# matching --batch-scheduler, and scheduled by kubesim's gang step on 2 nodes of
# 4 CPU: the Volcano clusters' gangs run (the queue sample in its queue, the other in the
# default queue), the Volcano RayJob waits on
# the queue's capability until the cluster is gone, then completes; the YuniKorn
# cluster and RayJob run with their task groups (the submitter's held by a
# placeholder); a YuniKorn application over its queue's max (yunikorn-configs) waits.
# KAI's sample (its Queue and PodGroup types served by schema-less CRDs) runs in its leaf
# queue with the pod-grouper's PodGroup; a KAI gang too big for the nodes, one in a parent
# queue and one over its queue's limit get nothing. KubeRay's scheduler-plugins sample runs with
# its coscheduling PodGroup. Then the KubernetesWAS gate: Workload
# and PodGroup scheduling.k8s.io/v1alpha2 served by kubesim, the Pods' schedulingGroup and
# the PodGroupScheduled condition.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gang.sh"

SAMPLES=$SHARED/kuberay/samples
CTL=""
gang_start batch-samples || exit 1
controllers() {   # (re)starts the RayCluster and RayJob controllers with flags "$@"
    [ -n "$CTL" ] && { kill $CTL 2>/dev/null; wait $CTL 2>/dev/null; }
    "$RAYOP" controller raycluster --kubeconfig "$KUBECONFIG" --state-dir "$STATE" "$@" \
        --metrics-addr 0 --health-probe-bind-address 0 2>>"$WORK/raycluster.log" &
    CTL=$!
    "$RAYOP" controller rayjob --kubeconfig "$KUBECONFIG" --state-dir "$STATE" "$@" \
        --use-kubernetes-proxy=true --metrics-addr 0 --health-probe-bind-address 0 2>>"$WORK/rayjob.log" &
    CTL="$CTL $!"
}
pods_of() { kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/cluster=$1"; }
nbound() { pods_of "$1" | jq '[.items[] | select((.spec.nodeName // "") != "")] | length'; }
bound_is() { [ "$(nbound "$1")" = "$2" ]; }
pg_phase_is() { [ "$(kcurl $PGP/$1 | json_get status.phase)" = "$2" ]; }
rj_is() { [ "$(kcurl $NSP/rayjobs/$1 | json_get "$2")" = "$3" ]; }
rc_of_job() { kcurl $NSP/rayjobs/$1 | json_get status.rayClusterName; }
gone() { [ "$(kcode $NSP/rayclusters/$1)" = 404 ]; }

# ---- Volcano ----
controllers --batch-scheduler volcano
kubectl apply -f "$SAMPLES/ray-cluster.volcano-scheduler-queue.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-cluster.volcano-scheduler-queue.yaml" "$(cat "$WORK/apply.err")"
wait_until "volcano cluster sample: PodGroup Running in kuberay-test-queue" 40 pg_phase_is ray-test-cluster-0-pg Running \
    && ok "ray-cluster.volcano-scheduler-queue.yaml reconciled and gang-scheduled"
check "volcano cluster sample: all 3 Pods bound" bound_is test-cluster-0 3
check "volcano cluster sample: PodGroup in the sample's queue" \
    [ "$(kcurl $PGP/ray-test-cluster-0-pg | json_get spec.queue)" = kuberay-test-queue ]
kubectl apply -f "$SAMPLES/ray-job.volcano-scheduler-queue.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-job.volcano-scheduler-queue.yaml" "$(cat "$WORK/apply.err")"
wait_until "volcano job sample: PodGroup created" 20 kcurl -f $PGP/ray-rayjob-sample-0-pg
quota_ev() { kcurl /api/v1/namespaces/default/events | jq -e '.items[] | select(.involvedObject.name=="ray-rayjob-sample-0-pg" and .reason=="Unschedulable" and (.message|contains("queue resource quota insufficient")))' >/dev/null; }
wait_until "volcano job sample: waits on the queue's capability (3.5 + 3 CPU > 4)" 30 quota_ev && \
    ok "the queue's capability holds the second gang back"
check "volcano job sample: PodGroup Pending, nothing of its cluster bound" \
    bash -c "[ \"\$(curl -s $KUBESIM_URL$PGP/ray-rayjob-sample-0-pg | jq -r .status.phase)\" = Pending ]"
kcurl -X DELETE $NSP/rayclusters/test-cluster-0 >/dev/null
wait_until "volcano job sample: its RayJob completes once the cluster is gone" 60 rj_is rayjob-sample-0 status.jobDeploymentStatus Complete \
    && ok "ray-job.volcano-scheduler-queue.yaml reconciled and completed"
kubectl delete -f "$SAMPLES/ray-job.volcano-scheduler-queue.yaml" --wait=false >/dev/null 2>&1
VJC=$(rc_of_job rayjob-sample-0)
[ -n "$VJC" ] && kcurl -X DELETE $NSP/rayclusters/$VJC >/dev/null
[ -n "$VJC" ] && wait_until "the Volcano job's cluster is gone" 30 gone "$VJC"
# the sample without a queue (same cluster name): its gang of one runs in the default queue
pg_gone() { [ "$(kcode $PGP/ray-test-cluster-0-pg)" = 404 ]; }
wait_until "the queue sample's PodGroup is collected" 30 pg_gone
kubectl apply -f "$SAMPLES/ray-cluster.volcano-scheduler.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-cluster.volcano-scheduler.yaml" "$(cat "$WORK/apply.err")"
wait_until "volcano cluster sample (no queue): PodGroup Running" 40 pg_phase_is ray-test-cluster-0-pg Running \
    && ok "ray-cluster.volcano-scheduler.yaml reconciled and gang-scheduled"
check "volcano cluster sample (no queue): minMember 1, the head's requests, the default queue" \
    [ "$(kcurl $PGP/ray-test-cluster-0-pg | jq -c '[.spec.minMember, .spec.minResources, .spec.queue]')" = '[1,{"cpu":"1","memory":"2Gi"},"default"]' ]
check "volcano cluster sample (no queue): its head Pod is bound" bound_is test-cluster-0 1
kcurl -X DELETE $NSP/rayclusters/test-cluster-0 >/dev/null
wait_until "the no-queue sample's cluster is gone" 30 gone test-cluster-0

# ---- YuniKorn ----
controllers --batch-scheduler yunikorn
kubectl apply -f "$SAMPLES/ray-cluster.yunikorn-scheduler.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-cluster.yunikorn-scheduler.yaml" "$(cat "$WORK/apply.err")"
wait_until "yunikorn cluster sample: 3 Pods bound" 40 bound_is test-yunikorn-0 3 && \
    ok "ray-cluster.yunikorn-scheduler.yaml reconciled and gang-scheduled"
check "yunikorn cluster sample: Pods carry yunikorn, applicationId, queue and task groups" \
    [ "$(pods_of test-yunikorn-0 | jq -r '[.items[] | [.spec.schedulerName, .metadata.labels.applicationId, .metadata.labels.queue, (.metadata.annotations["yunikorn.apache.org/task-groups"] | fromjson | length | tostring)] | join(",")] | unique | join(";")')" = "yunikorn,test-yunikorn-0,root.test,2" ]
kubectl apply -f "$SAMPLES/ray-job.yunikorn-scheduler.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-job.yunikorn-scheduler.yaml" "$(cat "$WORK/apply.err")"
wait_until "yunikorn job sample: the RayJob completes" 60 rj_is rayjob-yunikorn-0 status.jobDeploymentStatus Complete \
    && ok "ray-job.yunikorn-scheduler.yaml reconciled and completed"
check "yunikorn job sample: the submitter ran in task group submittergroup" \
    [ "$(kcurl "/api/v1/namespaces/default/pods?labelSelector=batch.kubernetes.io/job-name=rayjob-yunikorn-0" | jq -r '.items[0] | .spec.schedulerName + "/" + .metadata.annotations["yunikorn.apache.org/task-group-name"]')" = yunikorn/submittergroup ]
# YuniKorn's queues (ConfigMap yunikorn/yunikorn-configs): root.capped holds 2 CPUs, a gang of
# head 1 + worker 2 asks 3; the sample's root.test, not named there, has no limit
kubectl create namespace yunikorn >/dev/null
kubectl -n yunikorn create configmap yunikorn-configs --from-literal=queues.yaml='partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: capped
            resources:
              max: {vcore: 2, memory: 16Gi}' >/dev/null
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d '{"apiVersion":"ray.io/v1",
  "kind":"RayCluster","metadata":{"name":"ykcap","labels":{"ray.io/gang-scheduling-enabled":"true",
  "yunikorn.apache.org/app-id":"ykcap","yunikorn.apache.org/queue":"root.capped"}},
  "spec":{"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head",
  "image":"rayproject/ray:2.52.0","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}},"workerGroupSpecs":[{"groupName":"w",
  "replicas":1,"minReplicas":1,"maxReplicas":1,"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-worker",
  "image":"rayproject/ray:2.52.0","resources":{"requests":{"cpu":"2","memory":"1Gi"}}}]}}}]}}' >/dev/null
yk_said() { kcurl /api/v1/namespaces/default/events | jq -e --arg r "$1" --arg t "$2" '.items[] | select(.reason==$r and (.involvedObject.name|startswith("ykcap-")) and (.message|contains($t)))' >/dev/null; }
wait_until "yunikorn: the shim says each task is queued" 30 yk_said Scheduling "is queued and waiting for allocation"
# the head (1 CPU) fits the 2-CPU headroom, the worker (2 CPUs) then does not: the core's event
wait_until "yunikorn: an application over its queue's max is told so, in the core's words" 30 \
    yk_said Informational "does not fit in queue 'root.capped' (requested map[memory:1073741824 pods:1 vcore:2000], available map["
check "yunikorn: nothing of it is bound" bound_is ykcap 0
kcurl -X DELETE $NSP/rayclusters/ykcap >/dev/null

# ---- KAI ----
# KAI's Queue type (scheduling.run.ai/v2), schema-less: the sample creates two queues
kcurl -X POST -H 'Content-Type: application/json' /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
  -d '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":
  "queues.scheduling.run.ai"},"spec":{"group":"scheduling.run.ai","names":{"plural":"queues","singular":
  "queue","kind":"Queue","listKind":"QueueList"},"scope":"Cluster","versions":[{"name":"v2","served":true,
  "storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object",
  "x-kubernetes-preserve-unknown-fields":true}}}]}}' >/dev/null
wait_until "KAI Queue type served" 20 kcurl -f /apis/scheduling.run.ai/v2/queues
# and its PodGroup type (scheduling.run.ai/v2alpha2), which the pod-grouper writes
kcurl -X POST -H 'Content-Type: application/json' /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
  -d '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":
  "podgroups.scheduling.run.ai"},"spec":{"group":"scheduling.run.ai","names":{"plural":"podgroups","singular":
  "podgroup","kind":"PodGroup","listKind":"PodGroupList"},"scope":"Namespaced","versions":[{"name":"v2alpha2",
  "served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object",
  "x-kubernetes-preserve-unknown-fields":true}}}]}}' >/dev/null
wait_until "KAI PodGroup type served" 20 kcurl -f /apis/scheduling.run.ai/v2alpha2/podgroups
controllers --batch-scheduler kai-scheduler
kubectl apply -f "$SAMPLES/ray-cluster.kai-scheduler.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-cluster.kai-scheduler.yaml" "$(cat "$WORK/apply.err")"
wait_until "kai cluster sample: 3 Pods bound" 40 bound_is raycluster-sample 3 && \
    ok "ray-cluster.kai-scheduler.yaml reconciled and gang-scheduled"
check "kai cluster sample: Pods carry kai-scheduler, queue team-a and their PodGroup pg-raycluster-sample-UID" \
    [ "$(pods_of raycluster-sample | jq -r '[.items[] | [.spec.schedulerName, .metadata.labels["kai.scheduler/queue"], (.metadata.annotations["pod-group-name"] // "" | startswith("pg-raycluster-sample-") | tostring)] | join(",")] | unique | join(";")')" = "kai-scheduler,team-a,true" ]
kai_pg() { kcurl /apis/scheduling.run.ai/v2alpha2/namespaces/default/podgroups | jq -c --arg p "pg-$1-" \
    '[.items[] | select(.metadata.name|startswith($p)) | [.spec.minMember, .spec.queue, .metadata.ownerReferences[0].kind, [.spec.subGroups[]?.name]]][0]'; }
check "kai cluster sample: the pod-grouper's PodGroup (minMember 3, queue team-a, owned by the RayCluster, a sub-group per Ray group)" \
    [ "$(kai_pg raycluster-sample)" = '[3,"team-a","RayCluster",["headgroup","worker"]]' ]
kai_cluster() {   # NAME QUEUE WORKERS WORKER_CPU
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d '{"apiVersion":"ray.io/v1",
  "kind":"RayCluster","metadata":{"name":"'$1'","labels":{"kai.scheduler/queue":"'$2'"}},
  "spec":{"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head",
  "image":"rayproject/ray:2.52.0","resources":{"requests":{"cpu":"1"}}}]}}},"workerGroupSpecs":[{"groupName":"w",
  "replicas":'$3',"minReplicas":0,"maxReplicas":'$3',"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-worker",
  "image":"rayproject/ray:2.52.0","resources":{"requests":{"cpu":"'$4'"}}}]}}}]}}' >/dev/null
}
npods_is() { [ "$(pods_of "$1" | jq '.items | length')" = "$2" ]; }
pod_said() {   # CLUSTER TEXT: a Warning Unschedulable Event (KAI's) of one of its Pods holds TEXT
    kcurl /api/v1/namespaces/default/events | jq -e --arg c "$1-" --arg t "$2" '.items[] | select(.reason=="Unschedulable" and .type=="Warning" and (.involvedObject.name|startswith($c)) and (.message|contains($t)))' >/dev/null
}
# head + 4 x 2 CPU (minMember 5) is 9 CPUs on 8: nothing is bound, though some of its Pods would fit
kai_cluster kaibig team-a 4 2
wait_until "kai: the big cluster's 5 Pods exist" 30 npods_is kaibig 5
wait_until "kai: the big gang's Pods say why they wait, in KAI's words" 20 pod_said kaibig \
    "sub-group due to: no nodes with enough resources were found: 2 node(s) didn't have enough resources: CPU cores.."
check "kai: a gang that cannot fit has zero Pods bound" bound_is kaibig 0
kai_cluster kaiparent department-1 1 1
wait_until "kai: a cluster in a parent queue is told so" 30 pod_said kaiparent "not a leaf queue"
check "kai: nothing of it is bound" bound_is kaiparent 0
# a queue's limit: 2 CPUs for a gang of 3 (head 1 + a 2-CPU worker)
kcurl -X POST -H 'Content-Type: application/json' /apis/scheduling.run.ai/v2/queues -d '{"apiVersion":
  "scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"capped"},"spec":{"parentQueue":"department-1",
  "resources":{"cpu":{"quota":0,"limit":2000,"overQuotaWeight":1},"memory":{"quota":-1,"limit":-1},
  "gpu":{"quota":-1,"limit":-1}}}}' >/dev/null
kai_cluster kaicap capped 1 2
wait_until "kai: a gang over its queue's limit is told so, in KAI's words" 30 pod_said kaicap \
    "OverLimit: capped quota has reached the allowable limit of CPU cores. Limit is 2 cores, currently 0 cores allocated and workload requested 3 cores"
check "kai: nothing of it is bound" bound_is kaicap 0
for c in raycluster-sample kaibig kaiparent kaicap; do kcurl -X DELETE $NSP/rayclusters/$c >/dev/null; done

# ---- scheduler-plugins (coscheduling) ----
# (a schema-less CRD: the shared copy of scheduler-plugins' is a dangling link)
kcurl -X POST -H 'Content-Type: application/json' /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
  -d '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":
  "podgroups.scheduling.x-k8s.io"},"spec":{"group":"scheduling.x-k8s.io","names":{"plural":"podgroups",
  "singular":"podgroup","kind":"PodGroup","listKind":"PodGroupList"},"scope":"Namespaced","versions":[{"name":
  "v1alpha1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":
  "object","x-kubernetes-preserve-unknown-fields":true}}}]}}' >/dev/null
SPG=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
wait_until "scheduler-plugins PodGroup type served" 20 kcurl -f $SPG
controllers --batch-scheduler scheduler-plugins
kubectl apply -f "$SAMPLES/ray-cluster.scheduler-plugins.yaml" >/dev/null 2>"$WORK/apply.err" || \
    not_ok "apply ray-cluster.scheduler-plugins.yaml" "$(cat "$WORK/apply.err")"
sp_phase_is() { [ "$(kcurl $SPG/test-podgroup-0 | json_get status.phase)" = "$1" ]; }
wait_until "scheduler-plugins sample: 3 Pods bound" 40 bound_is test-podgroup-0 3 && \
    wait_until "scheduler-plugins sample: PodGroup Running" 20 sp_phase_is Running && \
    ok "ray-cluster.scheduler-plugins.yaml reconciled and gang-scheduled"
check "scheduler-plugins sample: PodGroup minMember 3, minResources 3 CPU / 4Gi, owned by the RayCluster" \
    [ "$(kcurl $SPG/test-podgroup-0 | jq -c '[.spec.minMember, .spec.minResources, .metadata.ownerReferences[0].kind]')" = '[3,{"cpu":"3","memory":"4Gi"},"RayCluster"]' ]
check "scheduler-plugins sample: Pods carry the scheduler and the pod-group label" \
    [ "$(pods_of test-podgroup-0 | jq -r '[.items[] | .spec.schedulerName + "/" + .metadata.labels["scheduling.x-k8s.io/pod-group"]] | unique | join(",")')" = "scheduler-plugins-scheduler/test-podgroup-0" ]
kcurl -X DELETE $NSP/rayclusters/test-podgroup-0 >/dev/null
wait_until "the scheduler-plugins sample's cluster is gone" 30 gone test-podgroup-0

# ---- Kubernetes WAS (feature gate KubernetesWAS) ----
controllers --feature-gates KubernetesWAS=true
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d '{"apiVersion":"ray.io/v1",
  "kind":"RayCluster","metadata":{"name":"was","labels":{"ray.io/gang-scheduling-enabled":"true"}},
  "spec":{"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head",
  "image":"rayproject/ray:2.52.0"}]}}},"workerGroupSpecs":[{"groupName":"w","replicas":2,"minReplicas":0,
  "maxReplicas":3,"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-worker",
  "image":"rayproject/ray:2.52.0"}]}}}]}}' >/dev/null
WAS=/apis/scheduling.k8s.io/v1alpha2/namespaces/default
wait_until "WAS: Workload and PodGroup created" 30 kcurl -f $WAS/podgroups/was-cluster
check "WAS: Workload gang minCount 3, owned by the RayCluster" \
    [ "$(kcurl $WAS/workloads/was | jq -c '[.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount, .metadata.ownerReferences[0].kind]')" = '[3,"RayCluster"]' ]
wait_until "WAS: Pods bound" 30 bound_is was 3
check "WAS: Pods carry default-scheduler and spec.schedulingGroup" \
    [ "$(pods_of was | jq -r '[.items[] | .spec.schedulerName + "/" + .spec.schedulingGroup.podGroupName] | unique | join(",")')" = "default-scheduler/was-cluster" ]
# the scheduler's status on the PodGroup: PodGroupScheduled True once the gang is bound
pg_cond() { kcurl $WAS/podgroups/$1 | jq -r '.status.conditions[]? | select(.type=="PodGroupScheduled") | .status + "/" + .reason'; }
pg_cond_is() { [ "$(pg_cond "$1")" = "$2" ]; }
wait_until "WAS: the PodGroup says PodGroupScheduled True (reason Scheduled)" 20 pg_cond_is was-cluster True/Scheduled
# a WAS gang too big for the nodes (head 1 CPU + 4 x 2 CPU > 8): all or nothing, so nothing
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d '{"apiVersion":"ray.io/v1",
  "kind":"RayCluster","metadata":{"name":"wasbig","labels":{"ray.io/gang-scheduling-enabled":"true"}},
  "spec":{"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head",
  "image":"rayproject/ray:2.52.0","resources":{"requests":{"cpu":"1"}}}]}}},"workerGroupSpecs":[{"groupName":"w",
  "replicas":4,"minReplicas":0,"maxReplicas":4,"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-worker",
  "image":"rayproject/ray:2.52.0","resources":{"requests":{"cpu":"2"}}}]}}}]}}' >/dev/null
wait_until "WAS: the big cluster's 5 Pods exist" 30 npods_is wasbig 5
gang_msg() { kcurl /api/v1/namespaces/default/events | jq -e '.items[] | select(.reason=="FailedScheduling" and (.involvedObject.name|startswith("wasbig-")) and (.message|test("^pod group is unschedulable, minCount \\(5\\) cannot be satisfied: [0-4] scheduled, 0 remaining$")))' >/dev/null; }
wait_until "WAS: the big gang's Pods say why they wait, in the pod group cycle's words" 20 gang_msg
check "WAS: a gang that cannot fit has zero Pods bound (the default scheduler alone would bind 4)" bound_is wasbig 0
wait_until "WAS: the big gang's PodGroup says PodGroupScheduled False (reason Unschedulable)" 20 \
    pg_cond_is wasbig-cluster False/Unschedulable
check "WAS: its message is the GangScheduling plugin's" \
    [ "$(kcurl $WAS/podgroups/wasbig-cluster | jq -r '.status.conditions[] | select(.type=="PodGroupScheduled") | .message' | grep -c '^minCount (5) cannot be satisfied: [0-4] scheduled, 0 remaining$')" = 1 ]
exit "$(lib_failures)"

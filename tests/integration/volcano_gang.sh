#!/bin/bash
# deadline: 120
# volcano_gang.sh - gang scheduling under Volcano end to end: rayop with
# --batch-scheduler volcano against kubesim's Volcano simulation (kubesim/cluster/gang.c)
# on 2 nodes of 4 CPU. Two RayClusters of 5 CPU each fit alone but not together: one
# runs with all its Pods, the other has none bound until the first is deleted; a
# scale-up raises minMember; a Closed queue admits nothing; a RayJob completes with
# its submitter in the gang and its PodGroup shrinks when it finishes; a later gang of a
# higher PriorityClass runs before an older one; an unknown
# --batch-scheduler stops start-up with KubeRay's message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gang.sh"
said() { grep -q -- "$1" <<<"$2"; }                  # TEXT OUTPUT
refused() { [ "$1" -ne 0 ] && said "$2" "$3"; }      # RC TEXT OUTPUT: a non-zero exit that says TEXT

# ---- an unknown scheduler fails start-up (no API server needed) ----
out=$("$RAYOP" controller raycluster --batch-scheduler slurm --state-dir /nonexistent 2>&1); rc=$?
check "controller: unknown --batch-scheduler exits non-zero" [ $rc -ne 0 ]
check "controller: KubeRay's message" said "scheduler is not supported, name=slurm" "$out"
out=$("$RAYOP" up --batch-scheduler slurm --state-dir /nonexistent 2>&1); rc=$?
check "up: unknown --batch-scheduler exits non-zero" [ $rc -ne 0 ]
check "up: KubeRay's message" said "scheduler is not supported, name=slurm" "$out"
out=$("$RAYOP" controller raycluster --batch-scheduler volcano --enable-batch-scheduler=true \
      --state-dir /nonexistent 2>&1); rc=$?
check "controller: both scheduler flags refused" refused $rc "Please use batch-scheduler only" "$out"
out=$("$RAYOP" up --enable-batch-scheduler --batch-scheduler volcano --state-dir /nonexistent 2>&1); rc=$?
check "up: both scheduler flags refused (bare --enable-batch-scheduler)" refused $rc "Please use batch-scheduler only" "$out"
# the Configuration file's batchScheduler / enableBatchScheduler, as KubeRay reads them
CFG=$(mktemp -d /tmp/volcano-gang-cfg.XXXXXX); _LIB_DIRS="$_LIB_DIRS $CFG"
cfg() { printf 'apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n%s\n' "$2" >"$CFG/$1.yaml"; }
cfg bad 'batchScheduler: slurm'; cfg yk 'batchScheduler: yunikorn'; cfg legacy 'enableBatchScheduler: true'
out=$(timeout 10 "$RAYOP" controller raycluster --config "$CFG/bad.yaml" --state-dir /nonexistent 2>&1); rc=$?
check "controller: the config file's unknown batchScheduler fails start-up with KubeRay's message" \
    refused $rc "scheduler is not supported, name=slurm" "$out"
out=$(env -u KUBECONFIG timeout 10 "$RAYOP" up --config "$CFG/bad.yaml" --state-dir /nonexistent 2>&1); rc=$?
check "up: the config file's unknown batchScheduler is refused before anything starts" \
    refused $rc "rayop up: batch scheduler configs validation failed: scheduler is not supported, name=slurm" "$out"
out=$(timeout 10 "$RAYOP" controller raycluster --config "$CFG/yk.yaml" --state-dir /nonexistent 2>&1)
check "controller: the config file's batchScheduler is taken" \
    said '"msg":"Feature flag batch-scheduler is enabled","scheduler name":"yunikorn"' "$out"
out=$(timeout 10 "$RAYOP" controller raycluster --config "$CFG/legacy.yaml" --state-dir /nonexistent 2>&1)
check "controller: the config file's enableBatchScheduler is taken (deprecated, volcano)" \
    said "Feature flag enable-batch-scheduler is deprecated" "$out"

gang_start volcano-gang || exit 1
wait_until "the default queue exists" 20 kcurl -f /apis/scheduling.volcano.sh/v1beta1/queues/default
check "the default queue is Open" [ "$(kcurl /apis/scheduling.volcano.sh/v1beta1/queues/default | json_get status.state)" = Open ]
"$RAYOP" controller raycluster --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --batch-scheduler volcano \
    --metrics-addr 0 --health-probe-bind-address 0 2>"$WORK/raycluster.log" &
"$RAYOP" controller rayjob --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --batch-scheduler volcano \
    --use-kubernetes-proxy=true --metrics-addr 0 --health-probe-bind-address 0 2>"$WORK/rayjob.log" &

# A RayCluster NAME with WORKERS workers of 1 CPU (head 1 CPU), extra labels JSON.
mkrc() {
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d "{
      \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"$1\",\"labels\":{${3:-}}},
      \"spec\":{\"rayVersion\":\"2.52.0\",\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{
        \"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",
          \"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}},
      \"workerGroupSpecs\":[{\"groupName\":\"w\",\"replicas\":$2,\"minReplicas\":0,\"maxReplicas\":10,
        \"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-worker\",
        \"image\":\"rayproject/ray:2.52.0\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}]}}" >/dev/null
}
pods_of() { kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/cluster=$1"; }
npods() { pods_of "$1" | jq '.items | length'; }
nbound() { pods_of "$1" | jq '[.items[] | select(.spec.nodeName != null and .spec.nodeName != "")] | length'; }
pg() { kcurl $PGP/ray-$1-pg; }
pg_phase_is() { [ "$(pg "$1" | json_get status.phase)" = "$2" ]; }
bound_is() { [ "$(nbound "$1")" = "$2" ]; }
pods_are() { [ "$(npods "$1")" = "$2" ]; }
has_event() { kcurl "/api/v1/namespaces/default/events" | jq -e --arg n "$1" --arg r "$2" --arg m "$3" \
    '.items[] | select(.involvedObject.name == $n and .reason == $r and (.message | contains($m)))' >/dev/null; }

# ---- two gangs that fit alone but not together ----
mkrc alpha 4
wait_until "alpha: PodGroup Running" 40 pg_phase_is alpha Running
wait_until "alpha: all 5 Pods bound" 20 bound_is alpha 5
check "alpha: PodGroup minMember 5, minResources 5 CPU, owned by the RayCluster, default queue" \
    [ "$(pg alpha | jq -c '[.spec.minMember, .spec.minResources.cpu, .metadata.ownerReferences[0].kind, .spec.queue]')" = '[5,"5","RayCluster","default"]' ]
check "alpha: Pods carry schedulerName volcano and the group annotations" \
    [ "$(pods_of alpha | jq -r '[.items[] | .spec.schedulerName + "/" + .metadata.annotations["scheduling.k8s.io/group-name"]] | unique | join(",")')" = "volcano/ray-alpha-pg" ]
scheduled_cond() { pg "$1" | jq -e '.status.conditions[] | select(.type=="Scheduled" and .status=="True")' >/dev/null; }
check "alpha: Scheduled condition True" scheduled_cond alpha
wait_until "alpha: Event Scheduled 'pod group is ready'" 10 has_event ray-alpha-pg Scheduled "pod group is ready"
# the watcher maps a PodGroup event to its owner: one deleted by hand is put back at once
uid0=$(pg alpha | json_get metadata.uid)
kcurl -X DELETE $PGP/ray-alpha-pg >/dev/null
recreated() { local u; u=$(pg alpha | json_get metadata.uid); [ -n "$u" ] && [ "$u" != null ] && [ "$u" != "$uid0" ]; }
wait_until "alpha: a PodGroup deleted by hand is recreated" 15 recreated && \
    ok "alpha: a PodGroup deleted by hand is recreated by the RayCluster controller"
mkrc beta 4
wait_until "beta: its 5 Pods exist" 30 pods_are beta 5
wait_until "beta: the PodGroup says why it waits" 20 has_event ray-beta-pg Unschedulable "overused cpu"
check "beta: zero Pods bound while alpha runs" bound_is beta 0
check "beta: PodGroup Pending" pg_phase_is beta Pending
failed_sched() { kcurl /api/v1/namespaces/default/events | jq -e --arg p "$1" '.items[] | select(.reason=="FailedScheduling" and (.involvedObject.name|startswith($p)) and (.message|contains("pod group is not ready")))' >/dev/null; }
wait_until "beta: FailedScheduling on its Pods with Volcano's text" 10 failed_sched beta-

# ---- a scale-up raises minMember (alpha 4 -> 5 workers: 6 CPU of 8) ----
kcurl -X PATCH -H 'Content-Type: application/json-patch+json' $NSP/rayclusters/alpha \
    -d '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":5}]' >/dev/null
mm_is() { [ "$(pg "$1" | json_get spec.minMember)" = "$2" ]; }
wait_until "scale-up: alpha's minMember 6" 20 mm_is alpha 6 && ok "scale-up raises minMember (5 -> 6)"
check "scale-up: minResources follow (6 CPU)" [ "$(pg alpha | json_get spec.minResources.cpu)" = 6 ]
wait_until "scale-up: the 6th Pod is bound" 20 bound_is alpha 6
check "beta: still zero Pods bound" bound_is beta 0

# ---- the waiting gang runs once the first is deleted ----
kcurl -X DELETE $NSP/rayclusters/alpha >/dev/null
wait_until "beta: PodGroup Running after alpha is deleted" 40 pg_phase_is beta Running && \
    ok "beta runs once alpha is deleted"
wait_until "beta: all 5 Pods bound" 20 bound_is beta 5
kcurl -X DELETE $NSP/rayclusters/beta >/dev/null
gone() { pods_are "$1" 0; }
wait_until "beta's Pods are gone" 30 gone beta

# ---- a Closed queue admits nothing ----
kcurl -X POST -H 'Content-Type: application/json' /apis/scheduling.volcano.sh/v1beta1/queues -d \
    '{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"shut"},"spec":{"weight":1}}' >/dev/null
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
    /apis/scheduling.volcano.sh/v1beta1/queues/shut/status -d '{"status":{"state":"Closed"}}' >/dev/null
mkrc gamma 0 '"volcano.sh/queue-name":"shut"'
wait_until "gamma: its head Pod exists" 30 pods_are gamma 1
# as Volcano v1.14.1's enqueue action and proportion plugin do for a PodGroup with
# minResources (KubeRay always sets them): not enqueued, nothing allocated, no word of the queue
closed_cond() { pg gamma | jq -e '.status.conditions[] | select(.type=="Unschedulable" and .message=="1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable")' >/dev/null; }
wait_until "gamma: the PodGroup says its task is unschedulable" 20 closed_cond
check "Closed queue: gamma has zero Pods bound" bound_is gamma 0
check "Closed queue: gamma's PodGroup stays Pending in queue shut" \
    [ "$(pg gamma | jq -c '[.status.phase, .spec.queue]')" = '["Pending","shut"]' ]
check "Closed queue: the head Pod carries the queue label" \
    [ "$(pods_of gamma | jq -r '.items[0].metadata.labels["volcano.sh/queue-name"]')" = shut ]

# ---- a RayJob under Volcano completes, submitter included; its PodGroup shrinks ----
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayjobs -d '{
  "apiVersion":"ray.io/v1","kind":"RayJob","metadata":{"name":"job"},
  "spec":{"entrypoint":"python -c \"print(1)\"","shutdownAfterJobFinishes":true,
    "rayClusterSpec":{"rayVersion":"2.52.0","headGroupSpec":{"rayStartParams":{},
      "template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0",
        "ports":[{"containerPort":6379,"name":"gcs-server"},{"containerPort":8265,"name":"dashboard"}],
        "resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}},
      "workerGroupSpecs":[{"groupName":"small","replicas":1,"minReplicas":1,"maxReplicas":2,"rayStartParams":{},
        "template":{"spec":{"containers":[{"name":"ray-worker","image":"rayproject/ray:2.52.0",
          "resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}]}}}' >/dev/null
wait_until "job: PodGroup ray-job-pg created" 20 kcurl -f $PGP/ray-job-pg
check "job: PodGroup owned by the RayJob, minMember 2, submitter in minResources (2500m)" \
    [ "$(pg job | jq -c '[.metadata.ownerReferences[0].kind, .spec.minMember, .spec.minResources.cpu]')" = '["RayJob",2,"2500m"]' ]
rj_is() { [ "$(kcurl $NSP/rayjobs/job | json_get "$1")" = "$2" ]; }
wait_until "job: the RayJob completes (SUCCEEDED)" 60 rj_is status.jobStatus SUCCEEDED && ok "a RayJob under Volcano completes"
check "job: the submitter Pod ran in the gang (schedulerName volcano, task-spec submittergroup)" \
    [ "$(kcurl "/api/v1/namespaces/default/pods?labelSelector=batch.kubernetes.io/job-name=job" | jq -r '.items[0] | .spec.schedulerName + "/" + .metadata.annotations["volcano.sh/task-spec"] + "/" + .metadata.annotations["scheduling.k8s.io/group-name"]')" = "volcano/submittergroup/ray-job-pg" ]
shrunk() { [ "$(pg job | jq -c '[.spec.minMember // 0, .spec.minResources]')" = '[0,{}]' ]; }
wait_until "job: the finished RayJob's PodGroup shrinks to nothing" 40 shrunk && ok "a finished RayJob shrinks its PodGroup"
cleaned_ev() { kcurl /apis/events.k8s.io/v1/namespaces/default/events | jq -e '.items[] | select(.regarding.name=="job" and .reason=="BatchSchedulerCleanedUp" and .type=="Normal" and .action=="Cleanup" and .note=="Cleaned up batch scheduler resources for RayJob default/job")' >/dev/null; }
wait_until "job: KubeRay's Normal Event BatchSchedulerCleanedUp (action Cleanup, its text)" 10 cleaned_ev
check "Closed queue: gamma still has zero Pods bound" bound_is gamma 0

# ---- priority order between gangs: a later, higher-priority gang goes first ----
kcurl -X POST -H 'Content-Type: application/json' /apis/scheduling.k8s.io/v1/priorityclasses -d \
    '{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000}' >/dev/null
# mkgang NAME MIN CPU_PER_POD NPODS [PRIORITYCLASS]: a PodGroup and its Pods
mkgang() {
    local pc=""; [ -n "${5:-}" ] && pc=",\"priorityClassName\":\"$5\""
    kcurl -X POST -H 'Content-Type: application/json' $PGP -d "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",
      \"kind\":\"PodGroup\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"minMember\":$2$pc,
      \"minResources\":{\"cpu\":\"$(( $3 * $4 ))\"}}}" >/dev/null
    for i in $(seq "$4"); do
        kcurl -X POST -H 'Content-Type: application/json' /api/v1/namespaces/default/pods -d "{\"apiVersion\":\"v1\",
          \"kind\":\"Pod\",\"metadata\":{\"name\":\"$1-$i\",\"labels\":{\"gang\":\"$1\"},
          \"annotations\":{\"scheduling.k8s.io/group-name\":\"$1\"}},\"spec\":{\"schedulerName\":\"volcano\",
          \"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"$3\"}}}]}}" >/dev/null
    done
}
gbound() { kcurl "/api/v1/namespaces/default/pods?labelSelector=gang=$1" | jq '[.items[] | select((.spec.nodeName // "") != "")] | length'; }
gbound_is() { [ "$(gbound "$1")" = "$2" ]; }
mkgang blocker 2 3 2
wait_until "priority: the blocker gang holds 6 of 8 CPU" 20 gbound_is blocker 2
mkgang low 2 3 2
mkgang high 2 3 2 high
lowpending() { [ "$(kcurl $PGP/low | json_get status.phase)" = Pending ] && [ "$(kcurl $PGP/high | json_get status.phase)" = Pending ]; }
wait_until "priority: both new gangs wait (Pending)" 20 lowpending
kcurl -X DELETE "/api/v1/namespaces/default/pods?labelSelector=gang=blocker" >/dev/null
wait_until "priority: the higher-priority gang runs first" 30 gbound_is high 2 && ok "the later, higher-priority gang runs first"
check "priority: the older, lower-priority gang has zero Pods bound" gbound_is low 0
exit "$(lib_failures)"

#!/bin/bash
# deadline: 120
# volcano_reclaim.sh - Volcano's reclaim between queues in kubesim's gang step
# (kubesim/cluster/gang_volcano.c), with rayop --batch-scheduler volcano on 2 nodes of 4
# CPU. The scheduler's ConfigMap lists the reclaim action. An autoscaling RayCluster
# (minMember 1) in queue qa takes 7.5 CPUs while qb has no work; a 2-CPU RayCluster
# comes in qb (equal weights): Volcano reclaims from qa, beyond qa's minMember, just
# enough for qb's whole gang; the evicted workers come back and wait, qa being at its
# share. Without the action nothing is evicted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gang.sh"

gang_start volcano-reclaim || exit 1
"$RAYOP" controller raycluster --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --batch-scheduler volcano \
    --metrics-addr 0 --health-probe-bind-address 0 2>"$WORK/raycluster.log" &
for q in qa qb; do
    kcurl -X POST -H 'Content-Type: application/json' /apis/scheduling.volcano.sh/v1beta1/queues -d \
        "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"$q\"},\"spec\":{\"weight\":1}}" >/dev/null
done
# mkrc NAME QUEUE WORKERS AUTOSCALING
mkrc() {
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d "{
      \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"$1\",
        \"labels\":{\"volcano.sh/queue-name\":\"$2\"}},
      \"spec\":{\"rayVersion\":\"2.52.0\",\"enableInTreeAutoscaling\":$4,
        \"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{
        \"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",
          \"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}},
      \"workerGroupSpecs\":[{\"groupName\":\"w\",\"replicas\":$3,\"minReplicas\":0,\"maxReplicas\":10,
        \"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-worker\",
        \"image\":\"rayproject/ray:2.52.0\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}]}}" >/dev/null
}
pods_of() { kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/cluster=$1"; }
nbound() { pods_of "$1" | jq '[.items[] | select((.spec.nodeName // "") != "" and .metadata.deletionTimestamp == null)] | length'; }
bound_is() { [ "$(nbound "$1")" = "$2" ]; }
pg() { kcurl $PGP/ray-$1-pg; }
evicts() { kcurl /api/v1/namespaces/default/events | jq --arg p "$1" '[.items[] | select(.reason=="Evict" and .involvedObject.kind=="Pod" and (.involvedObject.name|startswith($p)))] | length'; }

mkrc wide qa 6 true
wait_until "wide: head and 6 workers bound (7.5 of 8 CPUs, the autoscaler's 0.5 included)" 40 bound_is wide 7
check "wide: minMember 1 (autoscaling: min workers + 1)" [ "$(pg wide | json_get spec.minMember)" = 1 ]
mkrc narrow qb 1 false
narrow_waits() { pg narrow | jq -e '.status.conditions[]? | select(.type=="Unschedulable")' >/dev/null; }
wait_until "narrow: its gang cannot be placed" 30 narrow_waits
check "default actions (no reclaim): narrow has zero Pods bound" bound_is narrow 0
check "default actions: nothing evicted" [ "$(evicts wide-)" = 0 ]

kubectl create namespace volcano-system >/dev/null
kubectl -n volcano-system create configmap volcano-scheduler-configmap \
    --from-literal=volcano-scheduler.conf='actions: "enqueue, allocate, reclaim, backfill"' >/dev/null
# the session runs on a gang change: a new label on narrow's PodGroup is one
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' $PGP/ray-narrow-pg \
    -d '{"metadata":{"labels":{"poke":"1"}}}' >/dev/null
wait_until "reclaim: narrow's head and worker bound" 60 bound_is narrow 2 && ok "qb's gang runs on what was reclaimed from qa"
check "reclaim: two of wide's Pods evicted, with Volcano's Event" [ "$(evicts wide-)" = 2 ]
pg_evict() { kcurl /api/v1/namespaces/default/events | jq -e '.items[] | select(.involvedObject.name=="ray-wide-pg" and .reason=="Evict" and .message=="reclaim")' >/dev/null; }
check "reclaim: wide's PodGroup has the Evict Event" pg_evict
back() { [ "$(pods_of wide | jq '[.items[] | select(.metadata.deletionTimestamp == null)] | length')" = 7 ]; }
wait_until "wide: the controller recreates the evicted workers" 30 back
check "wide: the new workers wait (qa is at its share): 5 bound" bound_is wide 5
check "reclaim took no more than it needed" [ "$(evicts wide-)" = 2 ]
exit "$(lib_failures)"

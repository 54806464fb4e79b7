#!/bin/bash
# deadline: 90
# rayservice_takeover.sh - a RayService that KubeRay v1.7 left running keeps its cluster when
# rayop takes over: the RayService, its RayCluster "takeover-krkr1" with the annotations KubeRay
# writes (ray.io/hash-without-replicas-and-workers-to-delete = the hash KubeRay's Go code computes
# for the stored rayClusterConfig, F4KMIHUVK845KMCLVK6M11ABUB5LKBPJ; recompute it with
# tools/kuberayhash (`kuberayhash hash FILE` of a RayCluster whose spec is the stored
# rayClusterConfig) when kubesim's defaulting or the spec below changes) and the status naming it active are in place before `rayop controller
# rayservice` starts. It must serve from that cluster: no new cluster, no in-place update.
# A RayService whose cluster carries another hash gets a new cluster (the control).
. "$(dirname "$0")/lib_rayservice.sh"

KUBERAY_HASH=F4KMIHUVK845KMCLVK6M11ABUB5LKBPJ
RS_NO_CTL=1 rs_start || exit 1
adopt() {  # adopt NAME CLUSTER HASH: what KubeRay would have left behind
    local name=$1 cl=$2 hash=$3 uid spec
    rs_create "$name" || { not_ok "create $name"; return 1; }
    uid=$(rs_field "$name" metadata.uid)
    spec=$(rs_field "$name" spec.rayClusterConfig)
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d "{
      \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",
      \"metadata\":{\"name\":\"$cl\",\"labels\":{\"ray.io/originated-from-cr-name\":\"$name\",\"ray.io/originated-from-crd\":\"RayService\"},
        \"annotations\":{\"ray.io/hash-without-replicas-and-workers-to-delete\":\"$hash\",\"ray.io/num-worker-groups\":\"1\",\"ray.io/kuberay-version\":\"v1.7.0\"},
        \"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayService\",\"name\":\"$name\",\"uid\":\"$uid\",\"controller\":true,\"blockOwnerDeletion\":true}]},
      \"spec\":$spec}" | grep -q '"uid"' || not_ok "create $cl"
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d '{"metadata":{"finalizers":["ray.io/rayservice-finalizer"]}}' $NSP/rayservices/$name >/dev/null
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d "{\"status\":{\"activeServiceStatus\":{\"rayClusterName\":\"$cl\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"Initializing\",\"message\":\"RayService is initializing\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}" \
        $NSP/rayservices/$name/status >/dev/null
}
adopt takeover takeover-krkr1 "$KUBERAY_HASH"
adopt other other-krkr1 0123456789ABCDEFGHIJKLMNOPQRSTUV
rs_ctl_start
if rs_wait takeover status.serviceStatus Running 60; then
    check "takeover: serves from KubeRay's cluster takeover-krkr1" rs_is takeover status.activeServiceStatus.rayClusterName takeover-krkr1
    check "takeover: no new cluster, no in-place update" \
        sh -c "! grep -q '\"Created RayCluster for RayService\".*\"name\":\"takeover\"' '$WORK/rayservice.log' &&
               ! grep -q 'Updated the active RayCluster default/takeover-krkr1' '$WORK/rayservice.log' &&
               [ '$(rs_clusters takeover | tr '\n' ' ')' = 'takeover-krkr1 ' ]"
    check "takeover: both Services on takeover-krkr1" \
        [ "$(svc_cluster takeover-serve-svc) $(svc_cluster takeover-head-svc)" = "takeover-krkr1 takeover-krkr1" ]
fi
# the control: another hash means another spec, so a new cluster replaces it
other_new() { a=$(rs_field other status.activeServiceStatus.rayClusterName); [ -n "$a" ] && [ "$a" != other-krkr1 ]; }
wait_until "other: a cluster with a foreign hash is replaced by a new one" 60 other_new &&
    ok "other: a cluster with a foreign hash is replaced by a new one"
exit "$(lib_failures)"

#!/bin/bash
# deadline: 150
# rayservice_samples.sh - every RayService sample of KubeRay v1.7 ($RAYOP_SHARED/kuberay/samples)
# created in kubesim, each file in its own namespace (nodes with 8 GPUs and the nvidia-l4
# accelerator label, no TPU nodes, the Gateway API CRDs installed), run by `rayop controller
# raycluster` + `rayop controller rayservice` (4 workers each). Each reaches Ready: serviceStatus
# Running, every application RUNNING, numServeEndpoints > 0, both Services on the active cluster.
# (The TPU and nvidia-b200 samples' worker Pods cannot be scheduled here; their heads are, and
# kubesim's Serve does not model the resources a deployment asks for, so their applications run
# on the head and they are Ready too - with real Ray they would wait for the accelerators.)
# Objects of kinds kubesim does not serve (apps/v1 Deployment) are skipped, as kubectl fails on
# them ("no matches for kind").
. "$(dirname "$0")/lib_rayservice.sh"

RS_WORKERS=4 rs_start --nodes 6 --node-cpu 256 --node-memory 1024Gi --node-gpu 8 \
    --node-labels cloud.google.com/gke-accelerator=nvidia-l4 || exit 1
for f in $RAYOP_SHARED/crds/gateway-api/*.yaml; do kubectl create -f "$f" >/dev/null 2>&1; done
S=$RAYOP_SHARED/kuberay/samples
i=0; FILES=(); NSS=(); ARGS=()
for f in $(grep -l '^kind: RayService' $S/*.yaml | sort); do
    i=$((i + 1))
    FILES+=("$f"); NSS+=("s$i"); ARGS+=("s$i=$f")
done
check "found the RayService samples (${#FILES[@]})" [ "${#FILES[@]}" -ge 15 ]
KUBESIM_TOKEN=$KUBESIM_TOKEN python3 "$(dirname "$0")/rayservice/create_samples.py" "$KUBESIM_URL" "${ARGS[@]}" \
    >"$WORK/create.out" 2>&1
check "every object of a served kind created" sh -c "! grep -v ' 201$\| skipped$' '$WORK/create.out'"
expect() { echo Running; }
snapshot() { kcurl /apis/ray.io/v1/rayservices >"$WORK/all.json"; }
field() {  # field NS PATH (the one RayService of namespace NS, last snapshot)
    jq -r --arg ns "$1" --arg p "$2" '[.items[] | select(.metadata.namespace == $ns)][0] |
        getpath($p | split(".")) // "" | if type == "object" or type == "array" then tojson else tostring end' "$WORK/all.json"
}
all_running() {
    local k
    snapshot
    for k in "${!FILES[@]}"; do
        [ "$(expect "${FILES[$k]}")" = Running ] || continue
        [ "$(field ${NSS[$k]} status.serviceStatus)" = Running ] || return 1
    done
}
wait_until "every sample is Running" 80 all_running
echo "# settled after $SECONDS s"
snapshot
for k in "${!FILES[@]}"; do
    f=${FILES[$k]#$S/}; ns=${NSS[$k]}
    if [ "$(expect "$f")" = Running ]; then
        apps_ok=$(jq -r --arg ns "$ns" '[.items[] | select(.metadata.namespace == $ns)][0].status.activeServiceStatus.applicationStatuses // {} |
            (length > 0) and all(.[]; .status == "RUNNING")' "$WORK/all.json")
        name=$(jq -r --arg ns "$ns" '[.items[] | select(.metadata.namespace == $ns)][0].metadata.name' "$WORK/all.json")
        serve=$(jq -r --arg ns "$ns" '[.items[] | select(.metadata.namespace == $ns)][0].spec.serveService.metadata.name // empty' "$WORK/all.json")
        act=$(field $ns status.activeServiceStatus.rayClusterName)
        # incremental upgrades serve through the per-cluster Service CLUSTER-serve-svc
        [ "$(field $ns spec.upgradeStrategy.type)" = NewClusterWithIncrementalUpgrade ] && serve=$act-serve-svc
        sel=$(kcurl "/api/v1/namespaces/$ns/services/${serve:-$name-serve-svc}" | jq -r '.spec.selector["ray.io/cluster"]')
        check "$f: Running, every application RUNNING, numServeEndpoints > 0, ${serve:-$name-serve-svc} on $act" \
            [ "$(field $ns status.serviceStatus) $apps_ok $(( $(field $ns status.numServeEndpoints || echo 0) > 0 )) $sel" = "Running true 1 $act" ]
    else
        cl=$(field $ns status.pendingServiceStatus.rayClusterName)
        phase=$(kcurl "/api/v1/namespaces/$ns/pods?labelSelector=ray.io/cluster=$cl,ray.io/node-type=head" | jq -r '.items[0].status.phase // "none"')
        check "$f: Ready False Initializing, its head Pod Pending (unschedulable here)" \
            [ "$(jq -r --arg ns "$ns" '[.items[] | select(.metadata.namespace == $ns)][0].status.conditions[] | select(.type == "Ready") | .status + " " + .reason' "$WORK/all.json") $phase" = "False Initializing Pending" ]
    fi
done
grep ' skipped$' "$WORK/create.out" | sed 's/^/# skipped: /'
exit "$(lib_failures)"

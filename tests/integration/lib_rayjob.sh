# tests/integration/lib_rayjob.sh - helpers of the RayJob end-to-end tests (rayjob_*.sh);
# source after lib.sh. tests/run.sh does not run lib*.sh files.
#
# RJ_IT_RAYOP=BIN runs another rayop build (e.g. ASan); RJ_IT_KEEP=DIR keeps the logs.
#
#   rj_start [kubesim flags...]   kubesim (4 nodes of 16 CPU / 64Gi, fast Pods), the KubeRay
#                                 CRDs, `rayop watcher`, `rayop controller raycluster` and
#                                 `rayop controller rayjob --use-kubernetes-proxy`; logs in
#                                 $WORK; a private copy of bin/rayop; cleans up at exit
#   rj_ctl_start                  (re)starts the rayjob controller; sets RJ_CTL_PID
#   rj_create NAME SPEC_JSON      POSTs a RayJob NAME in default whose spec is a small
#                                 cluster plus the members in SPEC_JSON (a JSON object text);
#                                 RJ_CLUSTER_EXTRA='"k":v,' adds members to rayClusterSpec
#   rj_field NAME PATH            a field of RayJob NAME (json_get path)
#   rj_is NAME PATH VALUE         true when the field equals VALUE
#   rj_wait NAME PATH VALUE SECS  wait_until rj_is ... (not-ok line on timeout)
#   rc_exists NAME                true when RayCluster NAME exists
#   dash NAME PATH                GET PATH from the dashboard of RayCluster NAME (service proxy)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RJ_RAYOP=${RJ_IT_RAYOP:-$LIB_ROOT/bin/rayop}
NSP=/apis/ray.io/v1/namespaces/default
RJ_CTL_PID=""
OP_KEEP=${RJ_IT_KEEP:-}

rj_ctl_start() {
    "$RJ_RAYOP" controller rayjob --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
        --use-kubernetes-proxy=true --enable-metrics --metrics-addr 127.0.0.1:0 \
        --health-probe-bind-address 0 "$@" 2>>"$WORK/rayjob.log" &
    RJ_CTL_PID=$!
    _LIB_PIDS="$_LIB_PIDS $RJ_CTL_PID"
}

rj_start() {
    start_kubesim --nodes 4 --node-cpu 16 --node-memory 64Gi --pod-start-ms 100 \
        --pod-ready-ms 100 "$@" || return 1
    start_operator rayjob "$RJ_RAYOP" || return 1
    RJ_RAYOP=$OP_RAYOP
    rj_ctl_start
}

# A RayJob NAME: entrypoint, a 1-worker cluster, then the members of $2.
rj_create() {
    local name=$1 extra=${2:-}
    [ -n "$extra" ] && extra=",$extra"
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayjobs -d "{
      \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"$name\"},
      \"spec\":{\"entrypoint\":\"python -c 'print(1)'\",
        \"rayClusterSpec\":{${RJ_CLUSTER_EXTRA:-}\"rayVersion\":\"2.52.0\",\"headGroupSpec\":{\"rayStartParams\":{},
          \"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",
            \"ports\":[{\"containerPort\":6379,\"name\":\"gcs-server\"},{\"containerPort\":8265,\"name\":\"dashboard\"}],
            \"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}},
          \"workerGroupSpecs\":[{\"groupName\":\"small\",\"replicas\":1,\"minReplicas\":1,\"maxReplicas\":2,
            \"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-worker\",
            \"image\":\"rayproject/ray:2.52.0\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}]}
        $extra}}" >"$WORK/create-$name.out"
    grep -q '"uid"' "$WORK/create-$name.out"
}

rj_field() { kcurl $NSP/rayjobs/$1 | json_get "$2"; }
rj_is() { [ "$(rj_field "$1" "$2")" = "$3" ]; }
rj_wait() { wait_until "RayJob $1: $2 = $3" "$4" rj_is "$1" "$2" "$3"; }
rc_exists() { [ "$(kcode $NSP/rayclusters/$1)" = 200 ]; }
rc_gone() { [ "$(kcode $NSP/rayclusters/$1)" = 404 ]; }
dash() { kcurl "/api/v1/namespaces/default/services/$1-head-svc:dashboard/proxy$2"; }

# tests/integration/lib_rayservice.sh - helpers of the RayService end-to-end tests
# (rayservice_*.sh); source after nothing (it sources lib.sh). tests/run.sh does not run
# lib*.sh files.
#
# RS_IT_RAYOP=BIN runs another rayop build (e.g. ASan); RS_IT_KEEP=DIR keeps the logs.
#
#   rs_start [kubesim flags...]  kubesim (4 nodes, fast Pods), the KubeRay CRDs, `rayop
#                                watcher`, `rayop controller raycluster` and `rayop controller
#                                rayservice --use-kubernetes-proxy`; cleans up at exit
#   rs_ctl_start [flags]         (re)starts the rayservice controller; sets RS_CTL_PID
#   rs_create NAME [SPEC_EXTRA] [IMAGE] [CONFIG_YAML]
#                                a RayService with a 1-worker cluster and one application
#   rs_field NAME PATH           a field of RayService NAME
#   rs_wait NAME PATH VALUE SECS wait until the field equals VALUE
#   rs_puts NAME                 Serve PUTs the simulated dashboards saw for RayService NAME
#   rs_invariant_start NAME [route]  a poller (every 100 ms) that records any moment the serve
#                                Service selects a cluster whose applications are not all
#                                RUNNING; rs_invariant_check reports and stops it
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RS_RAYOP=${RS_IT_RAYOP:-$LIB_ROOT/bin/rayop}
NSP=/apis/ray.io/v1/namespaces/default
RS_CTL_PID=""
OP_KEEP=${RS_IT_KEEP:-}

rs_ctl_start() {
    "$RS_RAYOP" controller rayservice --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
        --use-kubernetes-proxy=true --enable-metrics --metrics-addr "${RS_METRICS_ADDR:-127.0.0.1:0}" \
        --health-probe-bind-address 0 --workers "${RS_WORKERS:-1}" "$@" 2>>"$WORK/rayservice.log" &
    RS_CTL_PID=$!
    _LIB_PIDS="$_LIB_PIDS $RS_CTL_PID"
}

rs_start() {
    start_kubesim --nodes 4 --node-cpu 32 --node-memory 128Gi --pod-start-ms 100 \
        --pod-ready-ms 100 "$@" || return 1
    start_operator rayservice "$RS_RAYOP" --workers "${RS_WORKERS:-1}" || return 1
    RS_RAYOP=$OP_RAYOP
    [ -n "${RS_NO_CTL:-}" ] || rs_ctl_start   # RS_NO_CTL=1: the caller starts it later
}

# The Serve config of one application; $1 = extra deployment user_config text (YAML flow).
rs_config() {
    local uc=${1:-"{v: 1}"}
    printf 'applications:\n  - name: app\n    import_path: m.app\n    route_prefix: /app\n    runtime_env:\n      env_vars:\n        KUBESIM_SERVE_DEPLOY_SECONDS: "%s"\n    deployments:\n      - name: D\n        num_replicas: 1\n        user_config: %s\n' \
        "${RS_DEPLOY_SECONDS:-1}" "$uc"
}

rs_spec() {  # rs_spec IMAGE CONFIG_YAML EXTRA: the spec JSON text
    local image=$1 cfg extra=${3:-}
    cfg=$(printf '%s' "$2" | jq -Rs .)
    [ -n "$extra" ] && extra=",$extra"
    cat <<JSON
{"serveConfigV2":$cfg,"rayClusterDeletionDelaySeconds":${RS_DELAY:-3},
 "rayClusterConfig":{${RS_CLUSTER_EXTRA:-}"rayVersion":"2.52.0","headGroupSpec":{"rayStartParams":{},
   "template":{"spec":{"containers":[{"name":"ray-head","image":"$image",
     "ports":[{"containerPort":6379,"name":"gcs-server"},{"containerPort":8265,"name":"dashboard"},
              {"containerPort":8000,"name":"serve"}],
     "resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}},
   "workerGroupSpecs":[{"groupName":"small","replicas":1,"minReplicas":1,"maxReplicas":2,
     "rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-worker",
     "image":"$image","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}]}
 $extra}
JSON
}

rs_create() {
    local name=$1 extra=${2:-} image=${3:-rayproject/ray:2.52.0} cfg=${4:-$(rs_config)}
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayservices -d "{
      \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayService\",\"metadata\":{\"name\":\"$name\"},
      \"spec\":$(rs_spec "$image" "$cfg" "$extra")}" >"$WORK/create-$name.out"
    grep -q '"uid"' "$WORK/create-$name.out"
}

# merge-patch the RayService's spec with JSON text $2
rs_patch() {
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' -d "{\"spec\":$2}" \
        $NSP/rayservices/$1 >"$WORK/patch-$1.out"
    grep -q '"uid"' "$WORK/patch-$1.out"
}

rs_field() { kcurl $NSP/rayservices/$1 | json_get "$2"; }
rs_is() { [ "$(rs_field "$1" "$2")" = "$3" ]; }
rs_wait() { wait_until "RayService $1: $2 = $3" "$4" rs_is "$1" "$2" "$3"; }
rc_exists() { [ "$(kcode $NSP/rayclusters/$1)" = 200 ]; }
rc_gone() { [ "$(kcode $NSP/rayclusters/$1)" = 404 ]; }
# RayClusters owned by RayService $1 (names, one a line)
rs_clusters() {
    kcurl "$NSP/rayclusters?labelSelector=ray.io/originated-from-cr-name=$1" | jq -r '.items[].metadata.name'
}
# Serve applications of cluster $1 through its head Service (status of application app)
rs_app_status() {
    kcurl "/api/v1/namespaces/default/services/$1-head-svc:dashboard/proxy/api/serve/applications/" |
        jq -r '.applications.app.status // empty'
}
# the number of "updateServeDeployment" lines the controller logged for RayService $1
rs_puts() { grep -c "\"updateServeDeployment\".*\"name\":\"$1\"" "$WORK/rayservice.log"; }
ev_reason() {  # ev_reason OBJ REASON
    kcurl /apis/events.k8s.io/v1/namespaces/default/events |
        jq -e --arg n "$1" --arg r "$2" '.items[] | select(.regarding.name == $n and .reason == $r)' >/dev/null
}

# The zero-downtime invariant, polled every 100 ms: the serve Service of RayService $1 never
# selects a cluster that has an application that is not RUNNING (asked of the simulated
# dashboard of that cluster). Violations go to $WORK/invariant-$1.txt.
rs_invariant_start() {
    local name=$1 mode=${2:-service}
    : >"$WORK/invariant-$name.txt"
    : >"$WORK/invariant-$name.polls"
    KUBESIM_URL=$KUBESIM_URL KUBESIM_TOKEN=$KUBESIM_TOKEN KUBESIM_CA=$KUBESIM_CA \
        python3 "$LIB_ROOT/tests/integration/rayservice/invariant.py" "$name" \
        "$WORK/invariant-$name.txt" "$WORK/invariant-$name.polls" "$mode" 2>>"$WORK/invariant.log" &
    RS_INV_PID=$!
}
rs_invariant_check() {
    local name=$1 polls gap what
    what="the serve Service of $name never selected"   # after name is set: one `local` expands all first
    [ "${2:-}" = route ] && what="the HTTPRoute of $name never weighted"
    kill "$RS_INV_PID" 2>/dev/null
    wait "$RS_INV_PID" 2>/dev/null
    RS_INV_PID=""
    polls=$(wc -l <"$WORK/invariant-$name.polls")
    # the longest time between two polls (ms), for the record
    gap=$(awk '{ if ($2 > m) m = $2 } END { print m + 0 }' "$WORK/invariant-$name.polls")
    if [ -s "$WORK/invariant-$name.txt" ]; then
        not_ok "invariant: $what a cluster with an application not RUNNING ($polls polls)"
        head -5 "$WORK/invariant-$name.txt" | sed 's/^/# /'
    elif [ "$polls" -lt 10 ]; then
        not_ok "invariant poller of $name ran ($polls polls)"
    else
        ok "invariant: $what a cluster with an application not RUNNING ($polls polls, every 100 ms, longest gap $gap ms)"
    fi
}

# rs_cond NAME TYPE: "STATUS REASON" of condition TYPE
rs_cond() {
    kcurl $NSP/rayservices/$1 | jq -r --arg t "$2" '.status.conditions[]? | select(.type == $t) | .status + " " + .reason'
}
rs_cond_is() { [ "$(rs_cond "$1" "$2")" = "$3" ]; }
# selector ray.io/cluster of Service $1
svc_cluster() { kcurl /api/v1/namespaces/default/services/$1 | jq -r '.spec.selector["ray.io/cluster"] // empty'; }
rs_puts_ge() { [ "$(rs_puts "$1")" -ge "$2" ]; }
rs_app_is() { [ "$(rs_app_status "$1")" = "$2" ]; }
rs_metrics() {
    local port
    port=$(grep '"serving metrics"' "$WORK/rayservice.log" | tail -1 | sed 's/.*"port":"\([0-9]*\)".*/\1/')
    curl -s "127.0.0.1:$port/metrics"
}

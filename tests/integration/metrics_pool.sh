#!/bin/bash
# deadline: 90
# metrics_pool.sh - the operator Pod's one metrics endpoint: `rayop up --enable-metrics true`
# serves, on the watcher's --metrics-addr only, the figures of every process: each kind's
# controller_runtime_* (labelled by controller) and kuberay_* metrics, the queues'
# workqueue_* and client-go's rest_client_* (requests by code/method/host, latency and
# rate-limiter histograms), one HELP/TYPE per family. A controller killed with -9 blanks
# nobody else's metrics. A standalone controller without --enable-metrics has no kuberay_*
# (KubeRay's default).
. "$(dirname "$0")/lib.sh"

RAYOP=$LIB_ROOT/bin/rayop
[ -x "$RAYOP" ] || { not_ok "bin/rayop is built"; exit 1; }
start_kubesim --nodes 2 --pod-start-ms 100 --pod-ready-ms 100 || exit 1
WORK=$KUBESIM_DIR
cp "$RAYOP" "$WORK/rayop" && RAYOP=$WORK/rayop
STATE=$WORK/state
cleanup() {
    [ "$(lib_failures)" -gt 0 ] && { mkdir -p /tmp/metrics-pool-failed.$$; cp "$WORK"/*.log "$WORK"/*.err "$WORK"/*.txt /tmp/metrics-pool-failed.$$/ 2>/dev/null; echo "# logs kept in /tmp/metrics-pool-failed.$$"; }
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
    "$RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1
    _lib_cleanup
}
trap cleanup EXIT
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "CRDs served" 20 kcurl -f /apis/ray.io/v1/rayservices || exit 1
NSP=/apis/ray.io/v1/namespaces/default
HEAD='"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0","ports":[{"containerPort":8265,"name":"dashboard"}]}]}}}'
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d "{\"apiVersion\":\"ray.io/v1\",
  \"kind\":\"RayCluster\",\"metadata\":{\"name\":\"c1\"},\"spec\":{\"rayVersion\":\"2.52.0\",$HEAD}}" >/dev/null
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayjobs -d "{\"apiVersion\":\"ray.io/v1\",
  \"kind\":\"RayJob\",\"metadata\":{\"name\":\"j1\"},\"spec\":{\"entrypoint\":\"python -c 1\",
  \"submissionMode\":\"InteractiveMode\",\"rayClusterSpec\":{\"rayVersion\":\"2.52.0\",$HEAD}}}" >/dev/null
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayservices -d "{\"apiVersion\":\"ray.io/v1\",
  \"kind\":\"RayService\",\"metadata\":{\"name\":\"s1\"},\"spec\":{\"rayClusterConfig\":{\"rayVersion\":\"2.52.0\",$HEAD}}}" >/dev/null

"$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --enable-metrics true \
    --metrics-addr 127.0.0.1:0 --health-probe-bind-address 0 \
    --restart-initial-ms 100 --restart-max-ms 1000 >"$WORK/up.log" 2>&1 &
_LIB_PIDS="$_LIB_PIDS $!"
port() { grep '"msg":"serving /metrics, /healthz, /readyz"' "$WORK/up.log" | head -1 |
         sed 's/.*"addr":"[^"]*:\([0-9]*\)".*/\1/'; }
wait_until "the watcher serves the one /metrics" 30 sh -c "[ -n \"\$(grep '\"msg\":\"serving /metrics, /healthz, /readyz\"' '$WORK/up.log')\" ]" || exit 1
P=$(port)
scrape() { curl -s "127.0.0.1:$P/metrics" >"$WORK/metrics.txt"; }
has() { scrape && grep -q "$1" "$WORK/metrics.txt"; }
for k in raycluster rayjob rayservice raycronjob; do
    wait_until "controller_runtime_reconcile_total of $k on :$P" 40 has "^controller_runtime_reconcile_total{controller=\"$k\",result=\"success\"}" &&
        ok "controller_runtime_reconcile_total of $k on the one endpoint"
done
wait_until "kuberay_cluster_info c1" 30 has '^kuberay_cluster_info{name="c1"' && ok "kuberay_cluster_info (RayCluster controller)"
wait_until "kuberay_job_info j1" 30 has '^kuberay_job_info{name="j1"' && ok "kuberay_job_info (RayJob controller)"
wait_until "kuberay_service_info s1" 30 has '^kuberay_service_info{name="s1"' && ok "kuberay_service_info (RayService controller)"
scrape
check "rest_client_requests_total with code, host and method" \
    grep -qE '^rest_client_requests_total\{code="2[0-9][0-9]",host="127\.0\.0\.1:[0-9]+",method="(GET|POST|PUT|PATCH)"\} [1-9]' "$WORK/metrics.txt"
check "rest_client_request_duration_seconds and rest_client_rate_limiter_duration_seconds histograms" \
    sh -c "grep -q '^rest_client_request_duration_seconds_bucket{host=\"127.0.0.1:[0-9]*\",verb=\"GET\",le=\"+Inf\"}' '$WORK/metrics.txt' &&
           grep -q '^rest_client_rate_limiter_duration_seconds_count{host=' '$WORK/metrics.txt'"
check "workqueue_depth of the raycluster queue (the watcher's)" grep -q '^workqueue_depth{name="raycluster"}' "$WORK/metrics.txt"
dups=$(grep '^# TYPE ' "$WORK/metrics.txt" | sort | uniq -d | head -3)
check "one HELP/TYPE per family${dups:+ (duplicated: $dups)}" [ -z "$dups" ]
check "no controller serves a metrics port of its own under up" \
    sh -c "! grep -q '\"msg\":\"serving metrics\"' '$WORK/up.log'"

# a dead controller blanks nobody else
JPID=$(jq -r '.procs[] | select(.name == "rayjob") | .pid' "$STATE/up.json")
kill -9 "$JPID"
gone() { ! kill -0 "$JPID" 2>/dev/null; }
wait_until "rayjob controller killed" 10 gone
scrape
check "after kill -9 of the rayjob controller: the raycluster figures are still there" \
    sh -c "grep -q '^controller_runtime_reconcile_total{controller=\"raycluster\",result=\"success\"}' '$WORK/metrics.txt' &&
           grep -q '^kuberay_cluster_info{name=\"c1\"' '$WORK/metrics.txt' && grep -q '^kuberay_service_info{name=\"s1\"' '$WORK/metrics.txt'"

# KubeRay's default: no kuberay_* without --enable-metrics (a standalone controller's own port)
"$RAYOP" controller raycluster --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --metrics-addr 127.0.0.1:0 \
    --health-probe-bind-address 0 --enable-leader-election=false 2>"$WORK/plain.log" &
_LIB_PIDS="$_LIB_PIDS $!"
wait_until "standalone controller serves metrics" 20 grep -q '"msg":"serving metrics"' "$WORK/plain.log"
PP=$(grep '"msg":"serving metrics"' "$WORK/plain.log" | head -1 | sed 's/.*"port":"\([0-9]*\)".*/\1/')
plain_ok() { curl -s "127.0.0.1:$PP/metrics" >"$WORK/plain.txt" && grep -q '^controller_runtime_reconcile_total' "$WORK/plain.txt"; }
wait_until "standalone /metrics answers" 20 plain_ok
check "without --enable-metrics: controller_runtime_* but no kuberay_* (KubeRay's default)" \
    sh -c "! grep -q '^kuberay_' '$WORK/plain.txt'"
exit "$(lib_failures)"

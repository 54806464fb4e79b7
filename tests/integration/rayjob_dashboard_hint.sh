#!/bin/bash
# deadline: 120
# rayjob_dashboard_hint.sh - a rayjob controller run with --use-kubernetes-proxy=false outside
# the cluster dials the head Service's in-cluster name, which does not resolve here. The first
# such failure is logged once at warning, naming the dashboard URL and the fix
# (--use-kubernetes-proxy=true); every later failed poll, of this RayJob or another, stays at
# info ("Failed to get job info", KubeRay's words) instead of a warning flood.
. "$(dirname "$0")/lib_rayjob.sh"

start_kubesim --nodes 4 --node-cpu 16 --node-memory 64Gi --pod-start-ms 100 \
    --pod-ready-ms 100 || exit 1
start_operator rayjob "$RJ_RAYOP" || exit 1
"$OP_RAYOP" controller rayjob --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
    --use-kubernetes-proxy=false --metrics-addr 0 --health-probe-bind-address 0 \
    2>>"$WORK/rayjob.log" &
_LIB_PIDS="$_LIB_PIDS $!"
check "RayJob a is created" rj_create a
check "RayJob b is created" rj_create b
rj_wait a status.jobDeploymentStatus Running 60
rj_wait b status.jobDeploymentStatus Running 60

L=$WORK/rayjob.log
polls() { jq -c 'select(.msg == "Failed to get job info")' "$L" 2>/dev/null | wc -l; }
hints() { jq -c 'select(.msg == "cannot reach the Ray dashboard")' "$L" 2>/dev/null; }
polled_both() {  # several failed polls, of both RayJobs
    [ "$(polls)" -ge 6 ] &&
    jq -r 'select(.msg == "Failed to get job info") | .name' "$L" | grep -qx a &&
    jq -r 'select(.msg == "Failed to get job info") | .name' "$L" | grep -qx b
}
wait_until "both RayJobs' dashboards fail to answer several times" 60 polled_both &&
    ok "both RayJobs' dashboards fail to answer several times ($(polls) polls)"
check "exactly one 'cannot reach the Ray dashboard' line (got $(hints | wc -l))" \
    [ "$(hints | wc -l)" -eq 1 ]
check "it is a warning" sh -c "[ \"\$(jq -r 'select(.msg == \"cannot reach the Ray dashboard\") | .level' '$L')\" = warn ] || [ \"\$(jq -r 'select(.msg == \"cannot reach the Ray dashboard\") | .level' '$L')\" = warning ]"
check "it names the dashboard URL" sh -c "jq -r 'select(.msg == \"cannot reach the Ray dashboard\") | .dashboardURL' '$L' | grep -q 'head-svc.default.svc.cluster.local:8265'"
check "it says how to fix it" sh -c "jq -r 'select(.msg == \"cannot reach the Ray dashboard\") | .hint' '$L' | grep -q -- '--use-kubernetes-proxy=true'"
check "the failed polls stay at info" sh -c "! jq -r 'select(.msg == \"Failed to get job info\") | .level' '$L' | grep -vqx info"
exit "$(lib_failures)"

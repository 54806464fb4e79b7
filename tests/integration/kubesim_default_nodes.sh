#!/bin/bash
# deadline: 90
# kubesim_default_nodes.sh - kubesim started as a newcomer starts it, without --nodes, has a
# small default node pool (3 Ready nodes, said in its log), so a Pod is scheduled and runs. A
# Pod that fits no node stays Pending the way the real scheduler leaves it: PodScheduled False
# (Unschedulable) and a FailedScheduling Warning from default-scheduler that `kubectl describe
# pod` shows, with the scheduler's "0/3 nodes are available" text. --nodes 0 keeps the API
# server only and says why Pods will stay Pending.
. "$(dirname "$0")/lib.sh"
D=$(mktemp -d /tmp/kubesim-defnodes.XXXXXX); _LIB_DIRS="$_LIB_DIRS $D"
"$KUBESIM_BIN" --listen 127.0.0.1:0 --kubeconfig-out "$D/kc" --pod-start-ms 100 \
    --pod-ready-ms 100 >"$D/out" 2>"$D/err" &
_LIB_PIDS="$_LIB_PIDS $!"
wait_until "kubesim printed its URL" 10 grep -q '^http' "$D/out" || exit 1
export KUBECONFIG=$D/kc
check "its log says it made a default pool" grep -q 'no --nodes: a default pool' "$D/err"
check "no 'Pods stay Pending' warning" sh -c "! grep -q 'stay Pending' '$D/err'"
wait_until "3 nodes Ready" 20 sh -c "[ \$(kubectl get nodes --no-headers 2>/dev/null | awk '\$2==\"Ready\"' | wc -l) -eq 3 ]" &&
    ok "3 nodes Ready"

kubectl apply -f - >/dev/null <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: small}
spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}
Y
running() { [ "$(kubectl get pod small -o jsonpath='{.status.phase}')" = Running ]; }
wait_until "a small Pod is scheduled and Running" 30 running && ok "a small Pod is scheduled and Running"
check "it is bound to a node" sh -c "[ -n \"\$(kubectl get pod small -o jsonpath='{.spec.nodeName}')\" ]"

kubectl apply -f - >/dev/null <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: "1000"}}}]}
Y
cond() { kubectl get pod huge -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].'"$1"'}'; }
unsched() { [ "$(cond status)" = False ] && [ "$(cond reason)" = Unschedulable ]; }
wait_until "a Pod that fits no node: PodScheduled False, Unschedulable" 30 unsched &&
    ok "a Pod that fits no node: PodScheduled False, Unschedulable"
check "the condition has the scheduler's message ($(cond message))" \
    sh -c "kubectl get pod huge -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].message}' | grep -q '^0/3 nodes are available: 3 Insufficient cpu'"
check "it stays Pending" sh -c "[ \"\$(kubectl get pod huge -o jsonpath='{.status.phase}')\" = Pending ]"
kubectl describe pod huge >"$D/describe" 2>&1
check "kubectl describe pod shows the FailedScheduling Warning from default-scheduler" \
    grep -Eq 'Warning +FailedScheduling +.* default-scheduler +0/3 nodes are available' "$D/describe"

"$KUBESIM_BIN" --listen 127.0.0.1:0 --kubeconfig-out "$D/kc0" --nodes 0 >"$D/out0" 2>"$D/err0" &
_LIB_PIDS="$_LIB_PIDS $!"
wait_until "kubesim --nodes 0 printed its URL" 10 grep -q '^http' "$D/out0" || exit 1
check "--nodes 0: it says Pods will stay Pending, and why" \
    grep -q -- '--nodes 0: an API server only (no scheduler, no kubelet), so Pods stay Pending' "$D/err0"
check "--nodes 0: no nodes" sh -c "[ -z \"\$(KUBECONFIG=$D/kc0 kubectl get nodes --no-headers 2>/dev/null)\" ]"
exit "$(lib_failures)"

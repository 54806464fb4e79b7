#!/bin/bash
# deadline: 60
# leader_guard.sh - the migration guard of leader election (reconcilers/host/leader.c):
# while a KubeRay operator holds its Lease "ray-operator-leader" in the same namespace,
# `rayop controller KIND` (leader election on by default, as KubeRay) does not lead and
# says so in its log, so nothing is reconciled twice; once the Lease is released it
# leads and reconciles. A leader that sees the Lease taken again steps down (exit != 0).
. "$(dirname "$0")/lib.sh"

RAYOP=$LIB_ROOT/bin/rayop_test   # rayop plus the test kind (tests/tools)
[ -x "$RAYOP" ] || { not_ok "bin/rayop_test is built"; exit 1; }
start_kubesim || exit 1
WORK=$KUBESIM_DIR
cp "$RAYOP" "$WORK/rayop" && RAYOP=$WORK/rayop
STATE=$WORK/state
LEASES=/apis/coordination.k8s.io/v1/namespaces/default/leases
cleanup() {
    [ "$(lib_failures)" -gt 0 ] && { mkdir -p /tmp/leader-guard-failed.$$; cp "$WORK"/*.log /tmp/leader-guard-failed.$$/; echo "# logs kept in /tmp/leader-guard-failed.$$"; }
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
    "$RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1
    _lib_cleanup
}
trap cleanup EXIT

kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "RayCluster CRD served" 20 kcurl -f /apis/ray.io/v1/rayclusters || exit 1
# KubeRay's operator leads (a long lease, so its record stays valid without renewals)
kcurl -X POST -H 'Content-Type: application/json' $LEASES -d '{"apiVersion":"coordination.k8s.io/v1",
  "kind":"Lease","metadata":{"name":"ray-operator-leader"},"spec":{"holderIdentity":"kuberay-operator-7d9f_1a2b",
  "leaseDurationSeconds":3600,"acquireTime":"2026-01-01T00:00:00.000000Z","renewTime":"2026-01-01T00:00:00.000000Z"}}' >/dev/null
kcurl -X POST -H 'Content-Type: application/json' /apis/ray.io/v1/namespaces/default/rayclusters \
    -d '{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"c0"},"spec":{"headGroupSpec":
        {"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head","image":"ray"}]}}}}}' >/dev/null
"$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" 2>"$WORK/watcher.log" &
_LIB_PIDS="$_LIB_PIDS $!"
# no --enable-leader-election: it is on by default
POD_NAME=rayop-pod "$RAYOP" controller test --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
    --metrics-addr 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    --leader-election-namespace default --leader-lease-seconds 4 2>"$WORK/ctl.log" &
CPID=$!; _LIB_PIDS="$_LIB_PIDS $CPID"

guard_logged() { grep '"msg":"a KubeRay operator holds its leader Lease' "$WORK/ctl.log" |
                 grep -q '"holder":"kuberay-operator-7d9f_1a2b"'; }
wait_until "rayop logs that it waits for KubeRay's ray-operator-leader holder" 20 guard_logged &&
    ok "rayop logs that it waits for KubeRay's ray-operator-leader holder"
obs() { kcurl /apis/ray.io/v1/namespaces/default/rayclusters/c0 |
        jq -r '.metadata.annotations["rayop.io/test-observed-generation"] // ""'; }
# it keeps checking the guard each retry (0.53 s with a 4 s lease); after three more
# checks of the guard Lease it must still not lead or reconcile
guard_gets() { grep -c '"path":"/apis/coordination.k8s.io/v1/namespaces/default/leases/ray-operator-leader"' "$KUBESIM_REQLOG"; }
n0=$(guard_gets)
three_more() { [ "$(guard_gets)" -ge $((n0 + 3)) ]; }
wait_until "the guard Lease is re-read" 20 three_more
check "no reconcile while KubeRay leads" [ -z "$(obs)" ]
check "rayop-test-leader not taken" [ "$(kcode $LEASES/rayop-test-leader)" = 404 ]

# KubeRay stops (ReleaseOnCancel: holder cleared)
kcurl $LEASES/ray-operator-leader | jq '.spec.holderIdentity = "" | .spec.leaseDurationSeconds = 1' >"$WORK/rel.json"
kcurl -X PUT -H 'Content-Type: application/json' --data-binary @"$WORK/rel.json" $LEASES/ray-operator-leader >/dev/null
led() { grep -q '"msg":"successfully acquired lease"' "$WORK/ctl.log"; }
wait_until "rayop leads once KubeRay released its Lease" 20 led && ok "rayop leads once KubeRay released its Lease"
reconciled() { [ "$(obs)" = 1 ]; }
wait_until "c0 reconciled after the release" 20 reconciled && ok "c0 reconciled after the release"

# KubeRay comes back and leads: rayop steps down rather than double-reconciling
kcurl $LEASES/ray-operator-leader | jq '.spec.holderIdentity = "kuberay-operator-new" | .spec.leaseDurationSeconds = 3600' >"$WORK/back.json"
kcurl -X PUT -H 'Content-Type: application/json' --data-binary @"$WORK/back.json" $LEASES/ray-operator-leader >/dev/null
gone() { ! kill -0 "$CPID" 2>/dev/null || [ "$(ps -o stat= -p "$CPID" 2>/dev/null | cut -c1)" = Z ]; }
wait_until "rayop steps down when KubeRay leads again" 20 gone
wait "$CPID"; rc=$?
check "it exits non-zero (rc $rc), as after a lost Lease" [ "$rc" -ne 0 ]
check "it says why" grep -q '"msg":"leader election lost: another operator holds its leader Lease"' "$WORK/ctl.log"
exit "$(lib_failures)"

#!/bin/bash
# deadline: 60
# leader.sh - leader election of `rayop controller KIND --enable-leader-election`
# (reconcilers/host/leader.c): bin/kubesim + `rayop watcher` + `rayop controller
# test` processes of two "Pods" (POD_NAME=pod-a / pod-b) sharing one Lease
# rayop-test-leader with a 4 s lease (--leader-lease-seconds):
#  - only the leader reconciles; the standby waits, /readyz 200, gauge 0
#  - kill -9 of the leader: the standby takes over once the lease expired
#    (not before), leaseTransitions counts it, and it reconciles
#  - SIGTERM of the leader releases the Lease: the standby leads at once
#  - a second process of the leading Pod leads too (and logs zap console lines)
#  - someone else taking the Lease: the leader's processes exit non-zero
. "$(dirname "$0")/lib.sh"

# bin/rayop_test: bin/rayop plus the self-test kind (tests/tools/); LEADER_IT_RAYOP: e.g. an ASan build
RAYOP=${LEADER_IT_RAYOP:-$LIB_ROOT/bin/rayop_test}
[ -x "$RAYOP" ] || make -s -C "$LIB_ROOT" bin/rayop_test >/dev/null 2>&1
[ -x "$RAYOP" ] || { not_ok "bin/rayop_test is built (make bench-bins)"; exit 1; }
start_kubesim || exit 1
WORK=$KUBESIM_DIR
cp "$RAYOP" "$WORK/rayop" && RAYOP=$WORK/rayop
STATE=$WORK/state
LEASE=/apis/coordination.k8s.io/v1/namespaces/default/leases/rayop-test-leader
cleanup() {
    [ "$(lib_failures)" -gt 0 ] && { mkdir -p /tmp/leader-it-failed.$$; cp "$WORK"/*.log /tmp/leader-it-failed.$$/; echo "# logs kept in /tmp/leader-it-failed.$$"; }
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
    "$RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1
    _lib_cleanup
}
trap cleanup EXIT

kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "RayCluster CRD served" 20 kcurl -f /apis/ray.io/v1/rayclusters || exit 1
mkrc() {
    kcurl -X POST -H 'Content-Type: application/json' /apis/ray.io/v1/namespaces/default/rayclusters \
        -d "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"$1\"},
             \"spec\":{\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":
             {\"containers\":[{\"name\":\"ray-head\",\"image\":\"ray\"}]}}}}}" >/dev/null
}
obs_is() {
    [ "$(kcurl "/apis/ray.io/v1/namespaces/default/rayclusters/$1" |
         jq -r '.metadata.annotations["rayop.io/test-observed-generation"] // ""')" = "$2" ]
}
spec_bump() {
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d "{\"spec\":{\"rayVersion\":\"$(date +%s%N)\"}}" \
        "/apis/ray.io/v1/namespaces/default/rayclusters/$1" >/dev/null
}
reconciles() { grep -a -c '"msg":"test reconcile"' "$WORK/$1.log"; }
holder() { kcurl "$LEASE" | jq -r '.spec.holderIdentity // ""'; }
port_of() { grep "\"$2\"" "$WORK/$1.log" | head -1 | sed 's/.*"port":"\([0-9]*\)".*/\1/'; }
gauge() { curl -s "127.0.0.1:$(port_of "$1" "serving metrics")/metrics" |
          awk '/^leader_election_master_status\{name="rayop-test-leader"\}/ { print $2 }'; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
start_ctl() {  # start_ctl NAME POD: sets CPID
    POD_NAME=$2 "$RAYOP" controller test --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
        --metrics-addr 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
        --enable-leader-election --leader-election-namespace default --leader-lease-seconds 4 \
        2>"$WORK/$1.log" &
    CPID=$!
    _LIB_PIDS="$_LIB_PIDS $CPID"
}

mkrc c0; mkrc c1; mkrc c2
"$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" 2>"$WORK/watcher.log" &
_LIB_PIDS="$_LIB_PIDS $!"

# ---- one leader, one standby ----
start_ctl ctlA pod-a; APID=$CPID
wait_until "pod-a acquires the lease" 20 grep -q '"msg":"successfully acquired lease"' "$WORK/ctlA.log" || exit 1
start_ctl ctlB pod-b; BPID=$CPID
wait_until "pod-b waits for leadership (holder pod-a)" 20 sh -c \
    "grep '\"msg\":\"waiting for leadership\"' '$WORK/ctlB.log' | grep -q '\"holder\":\"pod-a\"'" &&
    ok "the second Pod's controller waits for the lease held by pod-a"
all_obs() { obs_is c0 1 && obs_is c1 1 && obs_is c2 1; }
wait_until "c0..c2 reconciled by the leader" 20 all_obs
spec_bump c0
wait_until "c0 generation 2 written" 20 obs_is c0 2
check "only the leader reconciled (pod-a: $(reconciles ctlA), pod-b: $(reconciles ctlB))" \
    [ "$(reconciles ctlA)" -ge 4 -a "$(reconciles ctlB)" -eq 0 ]
check "Lease rayop-test-leader held by pod-a, leaseDurationSeconds 4" \
    [ "$(kcurl "$LEASE" | jq -r '"\(.spec.holderIdentity) \(.spec.leaseDurationSeconds) \(.spec.leaseTransitions)"')" = "pod-a 4 0" ]
check "leader_election_master_status 1 on the leader, 0 on the standby" \
    [ "$(gauge ctlA)" = 1 -a "$(gauge ctlB)" = 0 ]
check "the standby's /readyz answers 200 (as controller-runtime)" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$(port_of ctlB "serving health probes")/readyz")" = 200 ]

# ---- kill -9 of the leader: takeover after expiry ----
renew_before=$(kcurl "$LEASE" | jq -r .spec.renewTime)
{ kill -9 "$APID"; wait "$APID"; } 2>/dev/null
t0=$(now_ms)
if wait_until "pod-b takes over after kill -9 of pod-a" 20 grep -q '"msg":"successfully acquired lease"' "$WORK/ctlB.log"; then
    took=$(( $(now_ms) - t0 ))
    # expiry is 4 s after pod-b last saw the record change (at most one retry before the kill)
    check "takeover waited for the lease to expire (${took} ms, lease 4000 ms)" [ "$took" -ge 3000 -a "$took" -le 8000 ]
    echo "# figure: takeover after kill -9 of the leader: ${took} ms (lease 4 s)"
    check "Lease now pod-b, leaseTransitions 1" \
        [ "$(kcurl "$LEASE" | jq -r '"\(.spec.holderIdentity) \(.spec.leaseTransitions)"')" = "pod-b 1" ]
    spec_bump c1
    wait_until "c1 generation 2 written by the new leader" 20 obs_is c1 2 &&
        check "pod-b reconciles after the takeover" [ "$(reconciles ctlB)" -ge 1 ]
fi
[ -n "$renew_before" ] || not_ok "renewTime set"

# ---- SIGTERM of the leader releases the Lease ----
start_ctl ctlC pod-c; CPID_C=$CPID
wait_until "pod-c waits for leadership (holder pod-b)" 20 sh -c \
    "grep '\"msg\":\"waiting for leadership\"' '$WORK/ctlC.log' | grep -q '\"holder\":\"pod-b\"'"
kill -TERM "$BPID"; t0=$(now_ms)
wait "$BPID"; brc=$?
check "SIGTERM: the leader exits 0" [ "$brc" -eq 0 ]
check "SIGTERM: the leader logs the release" grep -q '"msg":"lease released"' "$WORK/ctlB.log"
if wait_until "pod-c leads after the release" 10 grep -q '"msg":"successfully acquired lease"' "$WORK/ctlC.log"; then
    took=$(( $(now_ms) - t0 ))
    check "released lease taken at once (${took} ms after SIGTERM, lease 4000 ms)" [ "$took" -lt 2500 ]
    echo "# figure: takeover after SIGTERM of the leader: ${took} ms"
fi

# ---- a second process of the leading Pod shares leadership (console log lines) ----
POD_NAME=pod-c "$RAYOP" controller test --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
    --metrics-addr 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 --enable-leader-election \
    --leader-election-namespace default --leader-lease-seconds 4 --log-stdout-encoder console \
    2>"$WORK/ctlC2.log" &
C2PID=$!; _LIB_PIDS="$_LIB_PIDS $C2PID"
console_led() { grep -qP '^\S+Z\tINFO\tcontroller\tsuccessfully acquired lease\t.*\bidentity=pod-c\b' "$WORK/ctlC2.log"; }
wait_until "a second pod-c process leads too (console-encoded log line)" 10 console_led &&
    ok "a second process of the holder Pod leads at once; its log is zap console lines"
check "both pod-c processes report leader_election_master_status 1" \
    [ "$(gauge ctlC)" = 1 -a "$(curl -s "127.0.0.1:$(grep -P '\tserving metrics\t' "$WORK/ctlC2.log" | head -1 | sed 's/.*\bport[=":]*\([0-9][0-9]*\).*/\1/')/metrics" |
        awk '/^leader_election_master_status/ { print $2 }')" = 1 ]

# ---- someone else takes the Lease: the leader exits non-zero ----
steal() {  # a PUT with the rv read: retried when it races a renew (409)
    kcurl "$LEASE" | jq '.spec.holderIdentity = "pod-z" | .spec.leaseDurationSeconds = 3600 | .spec.renewTime = null' >"$WORK/steal.json"
    [ "$(kcode -X PUT -H 'Content-Type: application/json' --data-binary @"$WORK/steal.json" "$LEASE")" = 200 ]
}
wait_until "Lease taken by pod-z" 10 steal
wait_until "pod-c notices the lost lease" 10 grep -q '"msg":"leader election lost"' "$WORK/ctlC.log"
exited() {  # gone or a zombie (not yet reaped by wait)
    local p st
    for p in "$CPID_C" "$C2PID"; do
        st=$(ps -o stat= -p "$p" 2>/dev/null)
        [ -z "$st" ] || [ "${st#Z}" != "$st" ] || return 1
    done
}
wait_until "both pod-c processes exit" 15 exited || kill -9 "$CPID_C" "$C2PID" 2>/dev/null
wait "$CPID_C"; crc=$?
wait "$C2PID"; c2rc=$?
check "lost lease: both pod-c processes exit non-zero (rc $crc, $c2rc)" [ "$crc" -ne 0 -a "$c2rc" -ne 0 ]
check "lost lease: it did not release pod-z's Lease" [ "$(holder)" = pod-z ]
check "no sanitizer report in the controller logs (LEADER_IT_RAYOP=asan build)" \
    sh -c "! grep -l -a -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' '$WORK'/ctl*.log"
exit 0

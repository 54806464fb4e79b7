#!/bin/bash
# deadline: 90
# up_status.sh - `rayop status` tells the truth: no instance -> one clear line and exit 3 (not
# a raw errno); a running instance -> watcher running, every process ALIVE with its restarts
# and queue depth, type names of any length aligned; after a crash (up and its children gone)
# -> watcher NOT RUNNING, SYNCED "stale" (never "yes"), ALIVE no. Its queue connections are
# not logged at info.
. "$(dirname "$0")/lib.sh"
RAYOP=${UP_IT_RAYOP:-$LIB_ROOT/bin/rayop}
SD=$(mktemp -d /tmp/up-status.XXXXXX); chmod 700 "$SD"; _LIB_DIRS="$_LIB_DIRS $SD"
"$RAYOP" status --state-dir "$SD" >"$SD/none.out" 2>"$SD/none.err"; rc=$?
check "no instance: exit 3 (got $rc)" [ "$rc" -eq 3 ]
check "no instance: one clear line" sh -c "[ \$(wc -l <'$SD/none.err') -eq 1 ] && grep -q 'no rayop instance in $SD' '$SD/none.err'"
check "no instance: no raw errno" sh -c "! grep -q 'No such file' '$SD/none.err'"
start_kubesim || exit 1
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
"$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$SD" --controllers raycluster,rayjob \
    --metrics-addr 0 --health-probe-bind-address 0 >"$SD/up.log" 2>&1 &
UP=$!; _LIB_PIDS="$_LIB_PIDS $UP"
connected() { "$RAYOP" status --state-dir "$SD" >"$SD/run.out" 2>&1 &&
    grep -q '^rayjob .* yes ' "$SD/run.out" && grep -q '^raycluster .* yes ' "$SD/run.out" &&
    grep -q '^raycluster  *[0-9]' "$SD/run.out"; }
wait_until "status: both controllers alive and connected" 40 connected && ok "status: both controllers alive and connected"
check "status: the watcher is running" grep -q '^watcher    running, pid' "$SD/run.out"
check "status: the PROCESS table has ALIVE, RESTARTS, DEPTH, WAIT_MS, OLDEST_MS and LAST ERROR" \
    grep -q '^PROCESS *ALIVE *PID *RESTARTS *LASTEXIT *DEPTH *WAIT_MS *OLDEST_MS *LAST ERROR' "$SD/run.out"
check "status: the KIND table has WAIT_MS beside DEPTH" grep -q '^KIND *DEPTH *WAIT_MS *INFLIGHT' "$SD/run.out"
# No rayservice controller runs here, so a RayService key waits in its queue and its age grows.
kubectl apply -f $RAYOP_SHARED/kuberay/samples/ray-service.sample.yaml >/dev/null
waited() { "$RAYOP" status --state-dir "$SD" -o json >"$SD/run.json" 2>/dev/null &&
    [ "$(jq '.queues.kinds[] | select(.kind=="rayservice") | .oldestWaitMs >= 1500 and .depth == 1' "$SD/run.json")" = true ]; }
wait_until "status: the oldest waiting RayService key's age grows past 1.5 s" 30 waited &&
    ok "status: the oldest waiting RayService key's age grows past 1.5 s"
"$RAYOP" status --state-dir "$SD" >"$SD/wait.out" 2>&1
check "status: the rayservice row shows its wait in WAIT_MS" \
    awk '$1=="rayservice" && $2==1 && $3>=1500 {f=1} END {exit !f}' "$SD/wait.out"
check "status: a queue that handed out its keys waits 0 ms" \
    sh -c "jq -e '.queues.kinds[] | select(.kind==\"raycluster\") | .oldestWaitMs == 0' '$SD/run.json' >/dev/null"
aligned() {  # every type row has its OBJECTS column end where the header's does
    awk '/^TYPE /{hdr=index($0,"OBJECTS")+6; on=1; next} on && NF==0 {on=0} on {
        n=split($0,a," "); p=index($0," " a[2] " ")+length(a[2]); if (p != hdr) bad=1 } END {exit bad}' "$SD/run.out"
}
check "status: type names of any length stay aligned" aligned
check "status: long names shown whole" grep -q '^scheduling.volcano.sh/v1beta1/podgroups ' "$SD/run.out"
check "status queries are not logged at info" sh -c "! grep '\"worker\":\"rayop-status\"' '$SD/up.log' | grep -q '\"level\":\"info\"'"
# a crash: up killed, then its orphaned children
kill -9 $UP; wait $UP 2>/dev/null
for p in $(jq -r '.procs[].pid' "$SD/up.json"); do [ "$p" -gt 0 ] && kill -9 "$p" 2>/dev/null; done
dead() { "$RAYOP" status --state-dir "$SD" >"$SD/dead.out" 2>&1; grep -q 'NOT RUNNING' "$SD/dead.out"; }
wait_until "status after the crash: watcher NOT RUNNING" 20 dead && ok "status after the crash: watcher NOT RUNNING"
check "after the crash: no type says SYNCED yes" sh -c "! awk '/^TYPE /{on=1;next} on&&NF==0{on=0} on' '$SD/dead.out' | grep -q ' yes '"
check "after the crash: SYNCED shows stale" grep -q ' stale ' "$SD/dead.out"
check "after the crash: the supervisor is not running" grep -q 'supervisor rayop up pid [0-9]*: not running' "$SD/dead.out"
check "after the crash: every process ALIVE no" sh -c "grep -Eq '^(watcher|raycluster|rayjob) +no ' '$SD/dead.out' && ! grep -Eq '^(watcher|raycluster|rayjob) +yes ' '$SD/dead.out'"
"$RAYOP" clean --state-dir "$SD" >/dev/null 2>&1
exit "$(lib_failures)"

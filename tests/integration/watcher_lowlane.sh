#!/bin/bash
# deadline: 240
# watcher_lowlane.sh - the resync after a watcher restart goes to the low-priority
# lane: with NRC (10,000) RayClusters cached, a restarted watcher queues every key
# again; a worker (bin/ipc_probe, 2 ms of "work" per key, so the resync takes > 20 s
# to drain) starts pulling them; a RayCluster PATCHed then - the one the resync
# queued last - reaches the worker within a few keys, not after the resync drained.
# Without the low lane it would come ~NRC keys later (it is already queued, FIFO).
. "$(dirname "$0")/lib.sh"

RAYOP=${RAYOP:-$LIB_ROOT/bin/rayop}
PROBE=$LIB_ROOT/bin/ipc_probe
DUMP=$LIB_ROOT/bin/cache_dump
NRC=${LOWLANE_IT_CLUSTERS:-10000}

if [ ! -x "$PROBE" ] || [ ! -x "$DUMP" ]; then
    make -s -C "$LIB_ROOT" bin/ipc_probe bin/cache_dump >/dev/null 2>&1
fi
for b in "$RAYOP" "$PROBE" "$DUMP"; do
    if [ ! -x "$b" ]; then not_ok "$b is built"; exit 1; fi
done

start_kubesim || exit 1
WORK=$KUBESIM_DIR
STATE=$WORK/state
SOCK=$STATE/queues.sock
WPID=""
trap '"$DUMP" --state-dir "$STATE" --unlink 2>/dev/null; _lib_cleanup' EXIT

start_watcher() {  # start_watcher LOGFILE
    "$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --metrics-addr 127.0.0.1:0 \
        --cache-capacity 64M 2>"$1" &
    WPID=$!
    _LIB_PIDS="$_LIB_PIDS $WPID"
}
rc_synced() {
    "$RAYOP" status --state-dir "$STATE" -o json 2>/dev/null |
        jq -e --argjson n "$1" 'any(.cache.types[]; .name == "ray.io/v1/rayclusters"
            and .synced and .objects == $n)' >/dev/null
}

# ---- NRC RayClusters (no worker runs: nothing reconciles them) ----
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "RayCluster CRD served" 20 kcurl -f /apis/ray.io/v1/rayclusters || exit 1
: >"$WORK/create.cfg"
for _ in $(seq 1 "$NRC"); do
    printf 'url = "%s/apis/ray.io/v1/namespaces/default/rayclusters"\noutput = "/dev/null"\n' \
        "$KUBESIM_URL" >>"$WORK/create.cfg"
done
curl -sS --no-progress-meter --parallel --parallel-max 8 -X POST -H 'Content-Type: application/json' \
    --data-binary '{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"generateName":"c-"},
        "spec":{"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[
        {"name":"ray-head","image":"ray"}]}}}}}' -K "$WORK/create.cfg"
n=$(kcurl '/apis/ray.io/v1/namespaces/default/rayclusters' | jq '.items | length')
check "server has $NRC RayClusters" [ "$n" = "$NRC" ]

# ---- first watcher: sync, then a clean stop (the segment stays) ----
start_watcher "$WORK/watcher1.log"
wait_until "watcher synced $NRC RayClusters" 90 rc_synced "$NRC" || exit 1
kill -TERM "$WPID"
wait "$WPID" 2>/dev/null

# ---- restart: the resync queues all NRC keys; a worker starts on them ----
"$DUMP" --state-dir "$STATE" --type ray.io/v1/rayclusters | cut -d' ' -f1 >"$WORK/order.txt"
LAST=$(tail -1 "$WORK/order.txt")
check "cache holds $NRC RayClusters in resync order" [ "$(wc -l <"$WORK/order.txt")" -eq "$NRC" ]
start_watcher "$WORK/watcher2.log"
wait_until "restarted watcher resynced" 60 \
    grep -q 'resync: cached primary keys queued.*"keys":"'"$NRC"'"' "$WORK/watcher2.log" || exit 1
"$PROBE" --socket "$SOCK" --kind raycluster --work-ms 2 --idle-ms 60000 \
    >"$WORK/probe.out" 2>"$WORK/probe.err" &
PROBE_PID=$!
_LIB_PIDS="$_LIB_PIDS $PROBE_PID"
wait_until "worker pulls resync keys" 60 sh -c "[ \$(wc -l <'$WORK/probe.out') -ge 20 ]" || exit 1

# ---- a real event on the key the resync queued last ----
before=$(wc -l <"$WORK/probe.out")
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d '{"metadata":{"labels":{"touched":"yes"}}}' \
    "/apis/ray.io/v1/namespaces/default/rayclusters/${LAST#default/}" >/dev/null
if wait_until "event key reaches the worker" 60 grep -qx "[0-9]* $LAST" "$WORK/probe.out"; then
    at=$(grep -nx "[0-9]* $LAST" "$WORK/probe.out" | head -1 | cut -d: -f1)
    total=$(wc -l <"$WORK/probe.out")
    echo "# figure: PATCH after $before resync keys; its key was key $at of $NRC (worker at $total)"
    # generous: the PATCH's round trip through kubesim and the watch lets a few more
    # resync keys go out first on a loaded machine, but never thousands
    check "the event's key overtook the resync (key $at, patched after $before, of $NRC)" \
        [ "$at" -le $((before + 500)) ]
    check "resync keys were still queued when it arrived" [ "$at" -lt $((NRC / 2)) ]
fi
kill "$PROBE_PID" 2>/dev/null
kill -TERM "$WPID"
wait "$WPID"
check "watcher exits 0 on SIGTERM" [ $? -eq 0 ]
check "no sanitizer reports in the watcher logs" sh -c "! grep -l 'Sanitizer' '$WORK'/watcher*.log"
exit 0

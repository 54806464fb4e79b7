#!/bin/bash
# deadline: 420
# watcher.sh - `rayop watcher` and `rayop status` against a live bin/kubesim:
# syncs 10,000 Pods owned by a RayCluster (time and peak RSS reported as
# "# figure" lines); a Pod update reaches a worker (bin/ipc_probe) as the
# RayCluster's key (latency reported); kill -9 of the watcher under a stream of
# updates: the restarted watcher resumes every watch without a LIST (kubesim's
# request log) and its cache ends equal to the server; changes beyond kubesim's
# --watch-window while the watcher is stopped: 410 -> relist -> converged cache,
# deleted Pods gone; `rayop status` shows the synced types and the queues.
. "$(dirname "$0")/lib.sh"

RAYOP=${RAYOP:-$LIB_ROOT/bin/rayop}   # RAYOP=path runs e.g. an ASan build
PROBE=$LIB_ROOT/bin/ipc_probe
DUMP=$LIB_ROOT/bin/cache_dump
NPODS=${WATCHER_IT_PODS:-10000}
WINDOW=300

if [ ! -x "$PROBE" ] || [ ! -x "$DUMP" ]; then
    # bench tools are built by `make bench`; build just these two
    make -s -C "$LIB_ROOT" bin/ipc_probe bin/cache_dump >/dev/null 2>&1
fi
for b in "$RAYOP" "$PROBE" "$DUMP"; do
    if [ ! -x "$b" ]; then not_ok "$b is built"; exit 1; fi
done

start_kubesim --watch-window $WINDOW --bookmark-interval-ms 500 || exit 1
WORK=$KUBESIM_DIR
STATE=$WORK/state
SOCK=$STATE/queues.sock
WPID=""
# the segment outlives the watcher by design: remove it when the test ends
trap '"$DUMP" --state-dir "$STATE" --unlink 2>/dev/null; _lib_cleanup' EXIT

start_watcher() {  # start_watcher LOGFILE
    "$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --metrics-addr 127.0.0.1:0 \
        --cache-capacity 64M 2>"$1" &
    WPID=$!
    _LIB_PIDS="$_LIB_PIDS $WPID"
}
# lib.sh's LIB_OPTIONAL_TYPES (the batch schedulers' PodGroups) never sync here
all_synced() {
    "$RAYOP" status --state-dir "$STATE" -o json 2>/dev/null |
        jq -e --argjson n "$1" --arg opt "$LIB_OPTIONAL_TYPES" '(.cache.types | length) >= 9
            and all(.cache.types[] | select(.name | test($opt) | not); .synced)
            and any(.cache.types[]; .name == "v1/pods" and .objects == $n)' >/dev/null
}
server_pods() {
    kcurl '/api/v1/namespaces/default/pods?labelSelector=ray.io/node-type' |
        jq -r '.items[] | "\(.metadata.namespace)/\(.metadata.name) \(.metadata.resourceVersion)"' |
        sort
}
cache_pods() { "$DUMP" --state-dir "$STATE" --type v1/pods | sort; }
converged() { [ "$(server_pods)" = "$(cache_pods)" ]; }
rayop_lists_since() {  # rayop_lists_since LINE: LISTs by rayop in the request log after LINE
    tail -n +"$(( $1 + 1 ))" "$KUBESIM_REQLOG" | grep '"user_agent":"rayop' | grep '"verb":"list"' |
        grep -Evc "$LIB_OPTIONAL_TYPES"
}
patch_pods() {  # patch_pods VALUE NAME...: merge-patch a label on each pod, 8 in parallel
    local v=$1 cfg n; shift
    cfg=$(mktemp "$WORK/cfg.XXXXXX")
    for n in "$@"; do
        printf 'url = "%s/api/v1/namespaces/default/pods/%s"\noutput = "/dev/null"\n' \
            "$KUBESIM_URL" "$n" >>"$cfg"
    done
    curl -sS --no-progress-meter --parallel --parallel-max 8 -X PATCH \
        -H 'Content-Type: application/merge-patch+json' \
        --data-binary "{\"metadata\":{\"labels\":{\"step\":\"$v\"}}}" -K "$cfg"
}

# ---- setup: CRDs, a RayCluster, NPODS Pods it controls ----
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "RayCluster CRD served" 20 kcurl -f /apis/ray.io/v1/rayclusters || exit 1
kcurl -X POST -H 'Content-Type: application/json' /apis/ray.io/v1/namespaces/default/rayclusters \
    -d '{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"c1"},"spec":{"headGroupSpec":
        {"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-head","image":"ray"}]}}}}}' \
    >/dev/null
CUID=$(kcurl /apis/ray.io/v1/namespaces/default/rayclusters/c1 | json_get metadata.uid)
[ -n "$CUID" ] || { not_ok "RayCluster c1 created"; exit 1; }
cat >"$WORK/pod.json" <<EOF
{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-","labels":{"ray.io/node-type":"worker",
 "ray.io/cluster":"c1"},"ownerReferences":[{"apiVersion":"ray.io/v1","kind":"RayCluster","name":"c1",
 "uid":"$CUID","controller":true}]},"spec":{"containers":[{"name":"ray-worker","image":"ray"}]}}
EOF
: >"$WORK/create.cfg"
for _ in $(seq 1 "$NPODS"); do
    printf 'url = "%s/api/v1/namespaces/default/pods"\noutput = "/dev/null"\n' "$KUBESIM_URL" \
        >>"$WORK/create.cfg"
done
t0=$(date +%s%N)
curl -sS --no-progress-meter --parallel --parallel-max 8 -X POST -H 'Content-Type: application/json' \
    --data-binary @"$WORK/pod.json" -K "$WORK/create.cfg"
echo "# figure: created $NPODS pods in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
# an unrelated pod (no ray.io/node-type) must stay out of the cache
kcurl -X POST -H 'Content-Type: application/json' /api/v1/namespaces/default/pods \
    -d '{"metadata":{"name":"not-ray"},"spec":{"containers":[{"name":"c","image":"x"}]}}' >/dev/null
mapfile -t PODS < <(kcurl '/api/v1/namespaces/default/pods?labelSelector=ray.io/node-type%3Dworker' |
    jq -r '.items[].metadata.name')
check "server has $NPODS ray pods" [ "${#PODS[@]}" -eq "$NPODS" ]

# ---- initial sync ----
t0=$(date +%s%N)
start_watcher "$WORK/watcher1.log"
if wait_until "watcher synced $NPODS pods" 60 all_synced "$NPODS"; then
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    ok "watcher synced all types with $NPODS pods"
    echo "# figure: sync of $NPODS pods: ${ms} ms wall (incl. process start, status polling at 100 ms);" \
         "watcher log: $(grep -o '"msg":"all types synced","ms":"[0-9.]*"' "$WORK/watcher1.log" | grep -o '[0-9.]*"$' | tr -d '"') ms;" \
         "peak RSS $(awk '/VmHWM/ {print $2, $3}' /proc/$WPID/status);" \
         "CPU $(awk -v hz="$(getconf CLK_TCK)" '{printf "%d ms", ($14 + $15) * 1000 / hz}' /proc/$WPID/stat)"
fi
check "status -o json lists 9 synced types and the 4 queues" sh -c \
    "'$RAYOP' status --state-dir '$STATE' -o json | jq -e '(.queues.kinds | length) == 4 and .cache.refusedWrites == 0' >/dev/null"
MADDR=$(grep -o '"serving /metrics[^}]*' "$WORK/watcher1.log" | grep -o '127.0.0.1:[0-9]*')
check "/readyz is 200 once synced" [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$MADDR/readyz")" = 200 ]
check "/metrics has workqueue and watcher series" sh -c \
    "curl -s 'http://$MADDR/metrics' | grep -q '^workqueue_depth{name=\"raycluster\"}' &&
     curl -s 'http://$MADDR/metrics' | grep -q '^rayop_watcher_synced{type=\"v1/pods\",namespace=\"\"} 1'"
"$RAYOP" status --state-dir "$STATE" >"$WORK/status.txt"
check "status table shows v1/pods synced with $NPODS objects" \
    grep -Eq "^v1/pods +$NPODS +yes" "$WORK/status.txt"
check "cache equals the server (ray pods only)" converged

# ---- event -> key ----
"$PROBE" --socket "$SOCK" --kind raycluster --idle-ms 60000 >"$WORK/probe.out" 2>"$WORK/probe.err" &
PROBE_PID=$!
_LIB_PIDS="$_LIB_PIDS $PROBE_PID"
wait_until "worker got the initial default/c1 key" 20 grep -q ' default/c1$' "$WORK/probe.out"
n_ok=0
for i in $(seq 1 20); do
    before=$(wc -l <"$WORK/probe.out")
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d "{\"metadata\":{\"labels\":{\"probe\":\"$i\"}}}" "/api/v1/namespaces/default/pods/${PODS[$i]}" >/dev/null
    if ! wait_until "key after pod update $i" 10 sh -c "[ \$(wc -l <'$WORK/probe.out') -gt $before ]"; then
        break
    fi
    n_ok=$((n_ok + 1))
done
if [ "$n_ok" -eq 20 ] && [ "$(tail -1 "$WORK/probe.out" | cut -d' ' -f2)" = default/c1 ]; then
    ok "a pod update reaches the worker as its RayCluster's key (20 of 20)"
    # latency: the request log line of each PATCH (written as its response ends) -> probe receipt
    grep '"verb":"patch"' "$KUBESIM_REQLOG" | grep -F '"user_agent":"curl' | tail -20 >"$WORK/patches.log"
    tail -20 "$WORK/probe.out" >"$WORK/keys.log"
    python3 - "$WORK/patches.log" "$WORK/keys.log" <<'PY'
import json, sys, datetime
def ns(t):
    d = datetime.datetime.strptime(t[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp() * 1e6) * 1000
p = [json.loads(l) for l in open(sys.argv[1])]
k = [int(l.split()[0]) for l in open(sys.argv[2])]
lat = sorted((kk - ns(pp["time"])) / 1000 for pp, kk in zip(p, k))
print("# figure: pod PATCH answered by kubesim -> key in the worker's hands: p50 %.0f us, max %.0f us (20 samples)"
      % (lat[len(lat) // 2], lat[-1]))
PY
else
    not_ok "a pod update reaches the worker as its RayCluster's key" "$(tail -3 "$WORK/probe.out")"
fi
kill "$PROBE_PID" 2>/dev/null

# ---- kill -9 under a stream of updates ----
( for i in $(seq 100 249); do
      kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
          -d "{\"metadata\":{\"labels\":{\"stream\":\"$i\"}}}" "/api/v1/namespaces/default/pods/${PODS[$i]}" >/dev/null
  done; touch "$WORK/stream.done" ) &
stream_started() { kcurl "/api/v1/namespaces/default/pods/${PODS[130]}" | grep -q '"stream"'; }
wait_until "stream under way" 20 stream_started
kill -9 "$WPID"
wait "$WPID" 2>/dev/null
mark=$(wc -l <"$KUBESIM_REQLOG")
start_watcher "$WORK/watcher2.log"
wait_until "update stream finished" 60 test -e "$WORK/stream.done"
if wait_until "cache converged after kill -9" 30 converged; then
    ok "after kill -9 the restarted watcher's cache equals the server (no event lost)"
fi
check "restarted watcher resumed without a LIST" [ "$(rayop_lists_since "$mark")" -eq 0 ]
check "restarted watcher re-attached the segment" grep -q '"cache segment re-attached"' "$WORK/watcher2.log"
# the startup grace (keys held back so surviving workers re-adopt theirs) only where a
# worker can hold a key: after a restart, not for a new segment
check "a new segment starts without the grace" \
    grep -q '"new cache segment: no startup grace' "$WORK/watcher1.log"
check "a restarted watcher (segment re-attached) keeps the grace" \
    sh -c "! grep -q 'no startup grace' '$WORK/watcher2.log'"
check "restarted watcher resumed the pods watch from its stored rv" \
    grep -q '"resuming watch from stored resourceVersion","type":"v1/pods"' "$WORK/watcher2.log"

# ---- expired resourceVersion: more changes than the watch window while stopped ----
kill -TERM "$WPID"
wait "$WPID" 2>/dev/null
patch_pods expired "${PODS[@]:300:$((WINDOW + 100))}"
for n in "${PODS[@]:900:50}"; do
    kcurl -o /dev/null -X DELETE "/api/v1/namespaces/default/pods/$n"
done
mark=$(wc -l <"$KUBESIM_REQLOG")
start_watcher "$WORK/watcher3.log"
wait_until "watcher relisted after 410" 30 grep -q '"resourceVersion expired, relisting","type":"v1/pods"' \
    "$WORK/watcher3.log" && ok "expired resourceVersion led to a relist"
if wait_until "cache converged after relist" 30 converged; then
    ok "after the relist the cache equals the server ($(cache_pods | wc -l) pods, 50 deleted ones gone)"
fi
check "status shows every type synced after the relist" all_synced $((NPODS - 50))
check "the relist is a LIST in kubesim's request log" [ "$(rayop_lists_since "$mark")" -ge 1 ]

kill -TERM "$WPID"
wait "$WPID"
check "watcher exits 0 on SIGTERM" [ $? -eq 0 ]
check "no sanitizer reports in the watcher logs" \
    sh -c "! grep -l 'Sanitizer' '$WORK'/watcher*.log"
exit 0

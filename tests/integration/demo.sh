#!/bin/bash
# demo.sh - the README's one-command demo (tools/demo.sh, `make demo`) run non-interactively:
#  1. Ctrl-C (SIGINT to the script, as a terminal sends it) after demo-job is applied: exit 130,
#     kubesim and every rayop process gone, the cache segment and the work dir removed.
#  2. the whole demo with --keep: its output milestones in order (kubesim, CRDs, rayop up,
#     demo-job created, RayJob Running, RayCluster ready, 3 Pods Ready, the submitter's log,
#     SUCCEEDED, the RayCluster deleted after the TTL) within 120 s; then kubectl works with the
#     printed KUBECONFIG, and `tools/demo.sh --stop DIR` stops everything and cleans up.
# deadline: 170
. "$(dirname "$0")/lib.sh"
DEMO=$LIB_ROOT/tools/demo.sh
OUT=$(mktemp -d /tmp/demo-it.XXXXXX); _LIB_DIRS="$_LIB_DIRS $OUT"

workdir_of() { sed -n 's#.*(log \(/tmp/rayop-demo\.[A-Za-z0-9]*\)/rayop.log).*#\1#p' "$1" | head -1; }
segment_of() { "$LIB_ROOT/bin/rayop" clean --print-segment --state-dir "$1/state"; }
all_gone() {  # all_gone PIDS...: none of them is alive (a zombie waiting for init is gone)
    local p; for p in "$@"; do ps -o stat= -p "$p" 2>/dev/null | grep -qv '^Z' && return 1; done; return 0
}

# ---- 1. Ctrl-C ----
# bash starts background jobs with SIGINT ignored, and a shell cannot trap a signal ignored
# at entry: reset it to the default first, as an interactive terminal's job would have it.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    bash "$DEMO" >"$OUT/int.out" 2>&1 &
DPID=$!
if wait_until "demo applied demo-job" 60 grep -q 'demo-job created' "$OUT/int.out"; then
    W=$(workdir_of "$OUT/int.out")
    PIDS=$(cat "$W/pids" 2>/dev/null | tr '\n' ' ')
    SEG=$(segment_of "$W")
    CHILDREN=$(for p in $PIDS; do pgrep -g "$p"; done | tr '\n' ' ')
    [ -n "$PIDS" ] && [ -n "$CHILDREN" ] && ok "demo recorded its process groups ($(echo $CHILDREN | wc -w) processes)" \
        || not_ok "demo recorded its process groups" "pids='$PIDS'"
    kill -INT "$DPID"
    wait "$DPID"; rc=$?
    [ $rc = 130 ] && ok "Ctrl-C: the demo exits 130" || not_ok "Ctrl-C: the demo exits 130" "rc=$rc"
    check "Ctrl-C: it says it is stopping" grep -q 'demo: interrupted - stopping rayop and kubesim' "$OUT/int.out"
    check "Ctrl-C: kubesim, rayop up, the watcher and every controller are gone" all_gone $CHILDREN
    check "Ctrl-C: the work dir (kubeconfig, logs) is removed" test ! -e "$W"
    check "Ctrl-C: the cache segment is removed from /dev/shm" test ! -e "/dev/shm$SEG"
else
    kill "$DPID" 2>/dev/null
    sed 's/^/#   /' "$OUT/int.out" | tail -5
fi

# ---- 2. the whole demo, kept running at the end ----
start=$(date +%s)
timeout -k 5 130 bash "$DEMO" --keep >"$OUT/run.out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
sed 's/\x1b\[[0-9;]*m//g' "$OUT/run.out" >"$OUT/run.txt"
W=$(workdir_of "$OUT/run.txt")
[ $rc = 0 ] && ok "the demo succeeds (exit 0) in ${took}s" || not_ok "the demo succeeds" "exit $rc after ${took}s; last lines: $(tail -5 "$OUT/run.txt")"
[ "$took" -lt 120 ] && ok "it ends well under two minutes (${took}s)" || not_ok "it ends under two minutes" "${took}s"
# milestones, in this order
n=0; prev=0
for pat in 'kubesim serving at http://127.0.0.1:[0-9]* with 3 simulated nodes' \
           'KubeRay CRDs created: rayclusters.ray.io raycronjobs.ray.io rayjobs.ray.io rayservices.ray.io' \
           'rayop up: watcher' \
           'kubectl: rayjob.ray.io/demo-job created' \
           'RayJob Initializing/-' \
           'RayCluster demo-job-[a-z0-9]* ready | Pods 3: 0 Pending 3 Running 3 Ready' \
           'submitter log (kubectl logs -f job/demo-job):' \
           'job log | .*kubesim: running entrypoint for job demo-job-[a-z0-9]*: python /app/main.py' \
           "job log | Job 'demo-job-[a-z0-9]*' succeeded" \
           'demo-job finished: jobStatus SUCCEEDED' \
           'RayCluster demo-job-[a-z0-9]* deleted' \
           'done: demo-job SUCCEEDED and its RayCluster was deleted after the TTL'; do
    n=$((n + 1))
    at=$(grep -n -- "$pat" "$OUT/run.txt" | head -1 | cut -d: -f1)
    if [ -n "$at" ] && [ "$at" -ge "$prev" ]; then
        ok "milestone $n in order: $pat"; prev=$at
    else
        not_ok "milestone $n in order: $pat" "line '${at:-absent}' after line $prev"
    fi
done
# the Ray job's own RUNNING shows between Initializing and the end (the log interleaves with it)
run_at=$(grep -n 'RayJob Running/RUNNING' "$OUT/run.txt" | head -1 | cut -d: -f1)
init_at=$(grep -n 'RayJob Initializing/-' "$OUT/run.txt" | head -1 | cut -d: -f1)
fin_at=$(grep -n 'demo-job finished: jobStatus SUCCEEDED' "$OUT/run.txt" | head -1 | cut -d: -f1)
[ -n "$run_at" ] && [ -n "$init_at" ] && [ -n "$fin_at" ] && [ "$init_at" -lt "$run_at" ] && [ "$run_at" -lt "$fin_at" ] \
    && ok "RayJob Running/RUNNING shows between Initializing and SUCCEEDED" \
    || not_ok "RayJob Running/RUNNING shows between Initializing and SUCCEEDED" "lines $init_at $run_at $fin_at"
check "one line per change: no status line repeats its predecessor" \
    sh -c "grep -o 'RayJob .*' '$OUT/run.txt' | uniq -d | grep -q . && exit 1 || exit 0"
KCF=$(sed -n 's/^ *export KUBECONFIG=//p' "$OUT/run.txt")
check "--keep prints the kubeconfig path" test -s "$KCF"
kc_get() { "${KUBECTL:-kubectl}" --kubeconfig "$KCF" --cache-dir "$OUT/kcache" get rayjob demo-job \
    -o jsonpath='{.status.jobStatus}' 2>/dev/null | grep -qx SUCCEEDED; }
check "--keep: kubectl works against the kept kubesim (demo-job SUCCEEDED)" kc_get
PIDS=$(cat "$W/pids" 2>/dev/null | tr '\n' ' ')
SEG=$(segment_of "$W")
CHILDREN=$(for p in $PIDS; do pgrep -g "$p"; done | tr '\n' ' ')
bash "$DEMO" --stop "$W" >"$OUT/stop.out" 2>&1
check "--stop DIR stops what --keep left" [ $? -eq 0 ]
check "--stop says what it stopped" grep -q "demo: stopped rayop up (watcher + controllers)" "$OUT/stop.out"
check "--stop names kubesim and the work dir" sh -c "grep -q 'demo: stopped kubesim' '$OUT/stop.out' && grep -q 'demo: removed $W' '$OUT/stop.out'"
check "--stop: every process is gone" all_gone $CHILDREN
check "--stop: work dir and cache segment removed" sh -c "test ! -e '$W' && test ! -e '/dev/shm$SEG'"
[ "$(lib_failures)" = 0 ] || { mkdir -p /tmp/demo-it-failed.$$; cp "$OUT"/*.out /tmp/demo-it-failed.$$/; echo "# output kept in /tmp/demo-it-failed.$$"; }
[ "$(lib_failures)" = 0 ]

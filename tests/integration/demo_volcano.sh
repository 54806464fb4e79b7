#!/bin/bash
# demo_volcano.sh - `make demo SCHEDULER=volcano` (tools/demo.sh with SCHEDULER=volcano) run
# non-interactively: Volcano's CRDs, rayop up --batch-scheduler volcano, demo-job in the
# "demo" Queue, the live view showing the PodGroup's phase next to the Pods (Running once
# the gang is bound, Completed with minMember 0 once the job is done and its cluster gone),
# SUCCEEDED, and a clean stop.
# deadline: 90
. "$(dirname "$0")/lib.sh"
OUT=$(mktemp -d /tmp/demo-volcano-it.XXXXXX); _LIB_DIRS="$_LIB_DIRS $OUT"
SCHEDULER=volcano DEMO_DEADLINE_S=70 bash "$LIB_ROOT/tools/demo.sh" >"$OUT/out" 2>&1; rc=$?
check "the Volcano demo exits 0" [ $rc = 0 ]
check "Volcano's CRDs are created" grep -q "Volcano CRDs created" "$OUT/out"
check "rayop runs with --batch-scheduler volcano" grep -q "rayop up --batch-scheduler volcano" "$OUT/out"
check "the Queue and the RayJob are applied" grep -q "queue.scheduling.volcano.sh/demo created" "$OUT/out"
check "the view shows the PodGroup Running with the gang's 3 Pods" \
    grep -q "PodGroup Running (minMember 3) | Pods 3: 0 Pending 3 Running" "$OUT/out"
check "the finished job's PodGroup is Completed and shrunk (minMember 0)" \
    grep -q "PodGroup Completed (minMember 0)" "$OUT/out"
check "demo-job SUCCEEDED and its RayCluster was deleted" grep -q "done: demo-job SUCCEEDED" "$OUT/out"
check "everything stopped" grep -q "demo: stopped kubesim" "$OUT/out"
[ "$(lib_failures)" = 0 ] || sed 's/^/# /' "$OUT/out" | tail -40
exit "$(lib_failures)"

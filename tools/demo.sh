#!/bin/bash
# tools/demo.sh - the README's main job (`make demo`): kubesim with simulated nodes, KubeRay's
# CRDs, `rayop up`, then demo-job (deploy/demo-job.yaml) from `kubectl apply` to a finished Ray
# job, shown live one line per change: the RayJob's deploymentStatus/jobStatus, its RayCluster's
# state, the Pods (Pending/Running/Ready), then the submitter's log, SUCCEEDED, and the cluster
# deleted after ttlSecondsAfterFinished.
#
#   tools/demo.sh            run it, stop everything at the end (or on Ctrl-C)
#   tools/demo.sh --keep     (or KEEP=1) leave kubesim + rayop running for kubectl at the end;
#                            prints the kubeconfig path and the command that stops them
#   tools/demo.sh --stop DIR stop what a --keep run left in DIR and remove it
#   SCHEDULER=volcano tools/demo.sh   (make demo SCHEDULER=volcano) the same job under Volcano
#                            gang scheduling: Volcano's CRDs, `rayop up --batch-scheduler volcano`,
#                            deploy/demo-job-volcano.yaml (a Queue and demo-job in it); kubesim's
#                            gang scheduler stands in for Volcano and the view adds the PodGroup
#                            phase (Pending -> Inqueue -> Running -> Completed)
#
# kubesim and `rayop up` each run in their own process group (setsid), so a Ctrl-C reaches this
# script only and the cleanup stops them in order: rayop up (it drains and stops its watcher and
# controllers), then kubesim; survivors get SIGKILL; `rayop clean` drops the cache segment.
# Exit: 0 SUCCEEDED and cluster deleted, 1 failure (logs kept in /tmp/rayop-demo-failed.*),
# 130 interrupted.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${RAYOP_SHARED:-$ROOT/../shared}
KUBECTL=${KUBECTL:-$(ls /usr/lib/google-cloud-sdk/bin/kubectl.1.33 2>/dev/null || command -v kubectl)}
DEADLINE_S=${DEMO_DEADLINE_S:-110}
KEEP=${KEEP:-0}
SCHEDULER=${SCHEDULER:-}
case "$SCHEDULER" in
    ""|default) SCHEDULER=""; JOBFILE=$ROOT/deploy/demo-job.yaml; SCHED_FLAGS=() ;;
    volcano) JOBFILE=$ROOT/deploy/demo-job-volcano.yaml; SCHED_FLAGS=(--batch-scheduler volcano) ;;
    *) echo "demo: SCHEDULER must be empty or volcano (got \"$SCHEDULER\")"; exit 2 ;;
esac

group_alive() {  # group_alive PGID: a live (not zombie) process is left in the group
    ps -o stat= -g "$1" 2>/dev/null | grep -qv '^Z'
}

stop_group() {  # stop_group PGID WHAT SECONDS: SIGTERM, wait, SIGKILL; says what it did
    local p=$1 what=$2 secs=$3 n
    group_alive "$p" || { echo "demo: $what (process group $p) was not running"; return 0; }
    n=$(ps -o pid= -g "$p" | wc -l)
    kill -TERM -- "-$p" 2>/dev/null
    for _ in $(seq $((secs * 10))); do group_alive "$p" || break; sleep 0.1; done
    if group_alive "$p"; then
        kill -KILL -- "-$p" 2>/dev/null
        echo "demo: killed $what (process group $p, $n processes) after ${secs}s"
    else
        echo "demo: stopped $what (process group $p, $n processes)"
    fi
}

stop_dir() {  # stops the processes a run recorded in DIR/pids and removes DIR
    local dir=$1 kubesim rayop
    [ -f "$dir/pids" ] || { echo "demo: $dir has no pids file"; return 1; }
    kubesim=$(sed -n 1p "$dir/pids"); rayop=$(sed -n 2p "$dir/pids")
    # rayop first, while the API server is there to take its last writes (lease release)
    [ -n "$rayop" ] && stop_group "$rayop" "rayop up (watcher + controllers)" 10
    [ -n "$kubesim" ] && stop_group "$kubesim" "kubesim" 10
    if [ -d "$dir/state" ] && "$ROOT/bin/rayop" clean --state-dir "$dir/state" >/dev/null 2>&1; then
        echo "demo: dropped the cache segment of $dir/state"
    fi
    rm -rf "$dir" && echo "demo: removed $dir"
}

case "${1:-}" in
    --keep) KEEP=1 ;;
    --stop) [ -n "${2:-}" ] || { echo "usage: $0 --stop DIR"; exit 2; }
            stop_dir "$2"; exit $? ;;
    "") ;;
    *) echo "usage: $0 [--keep | --stop DIR]"; exit 2 ;;
esac

[ -d "$SHARED/kuberay/crds" ] || { echo "demo: KubeRay CRDs not found under $SHARED/kuberay/crds (set RAYOP_SHARED)"; exit 1; }
[ -x "$KUBECTL" ] || { echo "demo: kubectl not found (make deps installs it)"; exit 1; }
if [ ! -x "$ROOT/bin/kubesim" ] || [ ! -x "$ROOT/bin/rayop" ]; then
    echo "demo: building kubesim and rayop first (make all)"
    make -C "$ROOT" -j"$(nproc 2>/dev/null || echo 2)" all >/dev/null || exit 1
fi

WORK=$(mktemp -d /tmp/rayop-demo.XXXXXX)
KC=$WORK/kubeconfig
: >"$WORK/pids"
finished=0; interrupted=0; LOGPID=""

cleanup() {
    [ -n "$LOGPID" ] && kill "$LOGPID" 2>/dev/null
    if [ "$KEEP" = 1 ] && [ $interrupted = 0 ] && [ $finished = 1 ]; then
        echo
        echo "kubesim and rayop keep running. Try:"
        echo "    export KUBECONFIG=$KC"
        echo "    kubectl get rayjobs,rayclusters,pods,jobs        # logs: $WORK/*.log"
        echo "Stop them with:  $0 --stop $WORK"
        return
    fi
    stop_dir "$WORK"
}
trap cleanup EXIT
trap 'interrupted=1; echo; echo "demo: interrupted - stopping rayop and kubesim"; exit 130' INT TERM
# a closed terminal or output pipe must not leave the setsid'd processes behind either
trap 'interrupted=1; exit 129' HUP
trap 'interrupted=1; exit 141' PIPE

T0=$(date +%s%N)
say() { local ms=$(( ($(date +%s%N) - T0) / 1000000 )); printf '\033[1m[%3d.%ds]\033[0m %s\n' $((ms / 1000)) $(( (ms % 1000) / 100 )) "$*"; }
k() { "$KUBECTL" --kubeconfig "$KC" --cache-dir "$WORK/kcache" "$@"; }

# Pods take ~1.5 s to start and ~2.5 s more to be Ready (kubesim's defaults are 0.3/0.5 s), so
# the view shows them coming up instead of jumping straight to Ready.
setsid "$ROOT/bin/kubesim" --listen 127.0.0.1:0 --kubeconfig-out "$KC" --nodes 3 \
    --pod-start-ms 1500 --pod-ready-ms 2500 >"$WORK/kubesim.out" 2>"$WORK/kubesim.log" &
echo $! >>"$WORK/pids"
for _ in $(seq 100); do [ -s "$WORK/kubesim.out" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/kubesim.out")
[ -n "$URL" ] || { echo "demo: kubesim did not start:"; tail "$WORK/kubesim.log"; exit 1; }
say "kubesim serving at $URL with 3 simulated nodes (meanwhile: kubectl --kubeconfig $KC ...)"
api() { curl -s --max-time 5 "$URL$1"; }

k create -f "$SHARED/kuberay/crds/" >/dev/null || exit 1
say "KubeRay CRDs created: $(k get crd -o name | sed 's#.*/##' | tr '\n' ' ')"
if [ "$SCHEDULER" = volcano ]; then
    k create -f "$SHARED/crds/volcano/" >/dev/null || exit 1
    say "Volcano CRDs created (PodGroup, Queue); kubesim's gang scheduler plays Volcano's part"
fi

mkdir -p "$WORK/state" && chmod 700 "$WORK/state"
# rayop runs outside the (simulated) cluster, so it reaches Ray dashboards through the API
# server's service proxy, as KubeRay does with the same flag when run out of cluster.
setsid "$ROOT/bin/rayop" up --kubeconfig "$KC" --state-dir "$WORK/state" --use-kubernetes-proxy true \
    --metrics-addr 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 "${SCHED_FLAGS[@]}" \
    >"$WORK/rayop.log" 2>&1 &
echo $! >>"$WORK/pids"
say "rayop up${SCHEDULER:+ --batch-scheduler $SCHEDULER}: watcher + raycluster, rayjob, rayservice, raycronjob controllers (log $WORK/rayop.log)"

k apply -f "$JOBFILE" | sed 's/^/         kubectl: /'
[ "${PIPESTATUS[0]}" = 0 ] || exit 1

# One line per change (status_line sets LINE and the RJ_/RC_/SUBMITTER state the loop reads;
# it runs in this shell, not in a $(...) subshell, so that state survives). Reads go straight to kubesim with curl (a kubectl process a second
# would cost more CPU than everything it watches on a small machine).
status_line() {
    local out
    # three reads, one jq: a tick costs four short processes
    out=$( { api /apis/ray.io/v1/namespaces/default/rayjobs/demo-job; echo
             api /apis/ray.io/v1/namespaces/default/rayclusters; echo
             api /api/v1/namespaces/default/pods; echo
             if [ -n "$SCHEDULER" ]; then api "$PG_PATH"; else echo '{}'; fi; echo; } | jq -rs '
        def st(v): (v // "") | if . == "" then "-" else . end;   # "" is KubeRay'"'"'s New
        .[0] as $rj | .[1] as $cl | .[2] as $po | .[3] as $pg
        | ($rj.status.rayClusterName // "") as $rc
        | ([$cl.items[]? | select(.metadata.name == $rc)] | first) as $c
        | [$po.items[]? | select($rc != "" and .metadata.labels["ray.io/cluster"] == $rc)] as $p
        | ([$po.items[]? | select(.metadata.labels["job-name"] == "demo-job")] | first) as $s
        | [st($rj.status.jobDeploymentStatus), st($rj.status.jobStatus), $rc,
           (if $rc == "" then "" elif $c == null then "deleted" else st($c.status.state) end),
           "Pods \($p | length): \([$p[] | select(.status.phase == "Pending")] | length) Pending \([$p[] | select(.status.phase == "Running")] | length) Running \([$p[] | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length) Ready",
           ($s.status.phase // ""),
           (if $pg.kind == "PodGroup" then "\($pg.status.phase // "-") (minMember \($pg.spec.minMember // 0))" else "" end)
          ] | join("\u001f")')
    # a non-blank separator: read would merge runs of tabs and shift the empty fields
    IFS=$'\x1f' read -r RJ_DEPLOY RJ_JOB rc cl pods SUBMITTER PG <<<"$out"
    [ -n "$rc" ] && RC_NAME=$rc
    RC_GONE=0; [ "$cl" = deleted ] && RC_GONE=1
    [ -z "$rc" ] && [ -n "$RC_NAME" ] && RC_GONE=1   # the RayJob itself forgot it (it should not)
    LINE="RayJob ${RJ_DEPLOY:--}/${RJ_JOB:--} | RayCluster ${RC_NAME:-(none yet)} ${cl:+$cl }| ${SCHEDULER:+PodGroup ${PG:-(none yet)} | }$pods${SUBMITTER:+ | submitter $SUBMITTER}"
}

start_log() {  # follow the submitter's log once its Pod runs
    [ -n "$LOGPID" ] && return
    case "$SUBMITTER" in Running|Succeeded|Failed) ;; *) return ;; esac
    say "submitter log (kubectl logs -f job/demo-job):"
    (k logs -f job/demo-job 2>"$WORK/job.err" | tee "$WORK/job.log" | sed -u 's/^/         job log | /') &
    LOGPID=$!
}

PG_PATH=/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/ray-demo-job-pg
last=""; acted=0; end_ms=""; RC_NAME=""; RC_GONE=0; SUBMITTER=""; LINE=""
deadline=$(( $(date +%s) + DEADLINE_S ))
while [ "$(date +%s)" -lt "$deadline" ]; do
    status_line
    [ "$LINE" != "$last" ] && say "$LINE" && last=$LINE
    [ "$RJ_DEPLOY" != - ] && acted=1
    start_log
    case "$RJ_DEPLOY" in Complete|Failed|ValidationFailed)
        [ -z "$end_ms" ] && end_ms=$(date +%s%N) && say "demo-job finished: jobStatus $RJ_JOB; the RayCluster goes after ttlSecondsAfterFinished ($(grep -o 'ttlSecondsAfterFinished: *[0-9]*' "$JOBFILE" | grep -o '[0-9]*$') s)"
        if [ "$RC_GONE" = 1 ] || [ -z "$RC_NAME" ]; then
            # under a gang scheduler, show the PodGroup's last phase too (its Pods go first)
            [ -n "$SCHEDULER" ] && [ -z "${pg_until:-}" ] && pg_until=$(( $(date +%s) + 15 ))
            if [ -z "$SCHEDULER" ] || [[ "$PG" == Completed* ]] || [ "$(date +%s)" -ge "$pg_until" ]; then
                say "RayCluster ${RC_NAME:-?} deleted"
                break
            fi
        fi ;;
    esac
    if [ $acted = 0 ] && [ $(( ($(date +%s%N) - T0) / 1000000000 )) -ge 20 ]; then
        say "no RayJob status after 20 s; the operator's log: $WORK/rayop.log"
        acted=1
    fi
    sleep 0.5   # the display's refresh period, not synchronisation
done
if [ -n "$LOGPID" ]; then
    for _ in $(seq 30); do kill -0 "$LOGPID" 2>/dev/null || break; sleep 0.1; done
    kill "$LOGPID" 2>/dev/null; wait "$LOGPID" 2>/dev/null; LOGPID=""
fi
if [ ! -s "$WORK/job.log" ]; then   # the follow missed it (or never started): show what is there
    k logs job/demo-job 2>"$WORK/job.err" | tee "$WORK/job.log" | sed 's/^/         job log | /'
    [ -s "$WORK/job.log" ] || say "the submitter's log is not available: $(head -1 "$WORK/job.err" 2>/dev/null)"
fi
final=$(api /apis/ray.io/v1/namespaces/default/rayjobs/demo-job | jq -r '.status.jobStatus // "" | if . == "" then "-" else . end')
finished=1
if [ "$final" = SUCCEEDED ] && [ "$RC_GONE" = 1 ]; then
    say "done: demo-job SUCCEEDED and its RayCluster was deleted after the TTL"
    rc=0
else
    kept=$(mktemp -d /tmp/rayop-demo-failed.XXXXXX)
    cp "$WORK"/*.log "$KC" "$kept"/ 2>/dev/null
    say "demo did not complete: jobStatus $final, RayCluster ${RC_NAME:-none} $( [ "$RC_GONE" = 1 ] && echo deleted || echo present); logs kept in $kept"
    rc=1
fi
[ "$KEEP" = 1 ] || echo "To keep kubesim + rayop running for kubectl afterwards: KEEP=1 make demo  (or $0 --keep)"
exit $rc

# tests/integration/lib.sh - shared helpers for integration tests (bash).
# Source it:   . "$(dirname "$0")/lib.sh"
#
#   start_kubesim [kubesim flags...]
#       starts bin/kubesim on 127.0.0.1:0 (loopback only, the kernel picks a free
#       port) with a kubeconfig and a request log in a private temp dir, waits for
#       the URL line, and sets:
#         KUBESIM_URL        http://127.0.0.1:PORT (or https://)
#         KUBECONFIG         the kubeconfig it wrote (exported)
#         KUBESIM_PID        its pid
#         KUBESIM_DIR        the temp dir (kubeconfig, ca.crt with --tls, logs)
#         KUBESIM_REQLOG     the --request-log file (one JSON line per request)
#         KUBESIM_STDERR     its JSON log lines
#         KUBESIM_TOKEN      the bearer token (with --tls or --token), else empty
#         KUBESIM_CA         the CA file (with --tls), else empty
#       Every kubesim started is killed (and the temp dirs removed) on exit.
#       Returns 1 if it did not come up within 10 s.
#   stop_kubesim            SIGTERM the current kubesim and wait; returns its exit status
#   kcurl ARGS...           curl -sS against KUBESIM_URL-relative paths with the token and
#                           CA applied:  kcurl /api/v1/namespaces    kcurl -X POST -d @f /api/...
#   kcode ARGS...           like kcurl but prints only the HTTP status code
#   wait_until "what" TIMEOUT_S command...
#                           polls command (every 0.1 s) until it succeeds; on timeout prints
#                           a not-ok line and returns 1
#   ok "what" / not_ok "what" [detail]      TAP-ish result lines tests/run.sh counts
#   skip "what" "why"       a check that cannot run here (a missing peer or tool): counted
#                           as skipped, never as passed
#   check "what" command...                 ok if command succeeds, else not_ok
#   json_get FIELD.PATH     reads JSON on stdin, prints the value at a dotted path
#                           (jq, else python3; strings/numbers bare, objects as compact JSON,
#                           missing or unparsable -> empty line)
#
# KUBESIM_BIN overrides the binary (default: bin/kubesim of this tree).
#
# RAYOP_SERVER=real makes start_kubesim start a real control plane instead (tools/realk8s.sh:
# etcd, kube-apiserver, controller-manager, scheduler, kwok nodes, built by `make peers`) in its
# temp dir and set the same variables (KUBESIM_PID and the request log stay empty; kubesim flags
# are ignored). real_server tells a test which one it runs against.

LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# KubeRay's CRDs and samples (and ../shared/crds): tests/run.sh exports RAYOP_SHARED;
# run by hand, the folder beside the clone.
RAYOP_SHARED=${RAYOP_SHARED:-$LIB_ROOT/../shared}
export RAYOP_SHARED
KUBESIM_BIN=${KUBESIM_BIN:-$LIB_ROOT/bin/kubesim}
KUBESIM_URL=""; KUBESIM_PID=""; KUBESIM_DIR=""; KUBESIM_REQLOG=""; KUBESIM_STDERR=""
KUBESIM_TOKEN=""; KUBESIM_CA=""
# The watcher's optional types, the batch schedulers' PodGroups: start_kubesim installs
# no CRD for them, so the watcher probes them with back-off and never marks them synced.
# An "every type synced" check leaves them out (an ERE, also a jq test() pattern).
LIB_OPTIONAL_TYPES='scheduling.volcano.sh|scheduling.x-k8s.io'
_LIB_PIDS=""
_LIB_DIRS=""
_LIB_FAILS=0

ok() { echo "ok - $1"; }
not_ok() {
    echo "not ok - $1"
    [ -n "${2:-}" ] && printf '#   %s\n' "$2" | head -20
    _LIB_FAILS=$((_LIB_FAILS + 1))
    return 0
}
skip() { echo "skip - $1 (${2:-not available here})"; }
check() {
    local what=$1; shift
    if "$@"; then ok "$what"; else not_ok "$what" "command: $*"; fi
}
# Number of not_ok lines so far (a test may `exit $(lib_failures)`-style summarise).
lib_failures() { echo "$_LIB_FAILS"; }

wait_until() {
    local what=$1 timeout=$2; shift 2
    local deadline=$(( $(date +%s%N) / 1000000 + timeout * 1000 ))
    while :; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        if [ $(( $(date +%s%N) / 1000000 )) -ge $deadline ]; then
            not_ok "$what (timed out after ${timeout}s)"
            return 1
        fi
        sleep 0.1
    done
}

real_server() { [ "${RAYOP_SERVER:-}" = real ]; }
_LIB_REAL=""

_lib_cleanup() {
    local p d
    for d in $_LIB_REAL; do "$LIB_ROOT/tools/realk8s.sh" stop "$d" >/dev/null 2>&1; done
    for p in $_LIB_PIDS; do kill "$p" 2>/dev/null; done
    for p in $_LIB_PIDS; do
        for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null
    done
    for d in $_LIB_DIRS; do rm -rf "$d"; done
}
trap _lib_cleanup EXIT

start_kubesim() {
    local dir
    dir=$(mktemp -d /tmp/kubesim-test.XXXXXX) || return 1
    _LIB_DIRS="$_LIB_DIRS $dir"
    KUBESIM_DIR=$dir
    KUBESIM_REQLOG=$dir/requests.log
    KUBESIM_STDERR=$dir/kubesim.stderr
    KUBECONFIG=$dir/kubeconfig
    export KUBECONFIG
    : >"$KUBESIM_REQLOG"
    if real_server; then
        _LIB_REAL="$_LIB_REAL $dir/realk8s"
        if ! "$LIB_ROOT/tools/realk8s.sh" start "$dir/realk8s" --nodes 3 >"$dir/realk8s.out" 2>&1; then
            not_ok "the real control plane starts (tools/realk8s.sh)"
            tail -20 "$dir/realk8s.out" | sed 's/^/#   /'
            return 1
        fi
        cp "$dir/realk8s/kubeconfig" "$KUBECONFIG"
        KUBESIM_URL=$(cat "$dir/realk8s/url")
        KUBESIM_TOKEN=$(cut -d, -f1 "$dir/realk8s/pki/tokens.csv")
        KUBESIM_CA=$dir/realk8s/pki/ca.crt
        KUBESIM_PID=""
        echo "# real control plane at $KUBESIM_URL, up in $(cat "$dir/realk8s/start-ms") ms"
        return 0
    fi
    # kubesim alone starts a default node pool; a test that gives no --nodes asked for
    # the API server only (Pods stay Pending unless the test plays the kubelet)
    local nodes="--nodes 0" f
    for f in "$@"; do [ "$f" = --nodes ] && nodes=""; done
    "$KUBESIM_BIN" --listen 127.0.0.1:0 --kubeconfig-out "$KUBECONFIG" \
        --request-log "$KUBESIM_REQLOG" $nodes "$@" >"$dir/kubesim.stdout" 2>"$KUBESIM_STDERR" &
    KUBESIM_PID=$!
    _LIB_PIDS="$_LIB_PIDS $KUBESIM_PID"
    if ! wait_until "kubesim printed its URL" 10 grep -q '^http' "$dir/kubesim.stdout"; then
        tail -5 "$KUBESIM_STDERR" | sed 's/^/#   /'
        return 1
    fi
    KUBESIM_URL=$(head -1 "$dir/kubesim.stdout")
    KUBESIM_TOKEN=$(sed -n 's/^ *token: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$KUBECONFIG" | head -1)
    KUBESIM_CA=""
    [ -f "$dir/ca.crt" ] && case "$KUBESIM_URL" in https*) KUBESIM_CA=$dir/ca.crt ;; esac
    return 0
}

# start_operator KIND RAYOP [raycluster flags...]: after start_kubesim, the operator for the
# end-to-end tests of KIND (rayjob, rayservice: lib_rayjob.sh, lib_rayservice.sh). Sets
# WORK=$KUBESIM_DIR, STATE=$WORK/state and OP_RAYOP, a private copy of RAYOP in $WORK (other
# builds relink bin/rayop meanwhile); installs KubeRay's RayCluster and KIND CRDs and waits
# until KIND is served; starts `rayop watcher` and `rayop controller raycluster` with the
# flags (logs $WORK/watcher.log, $WORK/raycluster.log). KIND's own controller is the
# caller's. At exit it stops them, removes the segment and keeps the logs in $OP_KEEP, or
# after a failure in /tmp/KIND-it-failed.PID.
start_operator() {
    local kind=$1 bin=$2; shift 2
    [ -x "$bin" ] || { not_ok "bin/rayop is built"; return 1; }
    WORK=$KUBESIM_DIR
    STATE=$WORK/state
    _OP_KIND=$kind
    cp "$bin" "$WORK/rayop" && OP_RAYOP=$WORK/rayop
    trap _op_cleanup EXIT
    kubectl create -f "$RAYOP_SHARED/kuberay/crds/ray.io_rayclusters.yaml" >/dev/null 2>&1
    kubectl create -f "$RAYOP_SHARED/kuberay/crds/ray.io_${kind}s.yaml" >/dev/null 2>&1
    wait_until "$kind CRD served" 20 kcurl -f "/apis/ray.io/v1/namespaces/default/${kind}s" ||
        return 1
    "$OP_RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" 2>"$WORK/watcher.log" &
    _LIB_PIDS="$_LIB_PIDS $!"
    "$OP_RAYOP" controller raycluster --kubeconfig "$KUBECONFIG" --state-dir "$STATE" \
        --metrics-addr 0 --health-probe-bind-address 0 "$@" 2>"$WORK/raycluster.log" &
    _LIB_PIDS="$_LIB_PIDS $!"
}
# logs are kept after the processes exit, so sanitizer reports are in them
_op_cleanup() {
    local keep=${OP_KEEP:-}
    [ -z "$keep" ] && [ "$(lib_failures)" -gt 0 ] && keep=/tmp/$_OP_KIND-it-failed.$$
    kill $(jobs -p) 2>/dev/null
    wait 2>/dev/null
    if [ -n "$keep" ] && [ -n "${WORK:-}" ]; then
        mkdir -p "$keep"
        cp "$WORK"/*.log "$keep"/ 2>/dev/null
        echo "# logs kept in $keep"
    fi
    [ -n "${STATE:-}" ] && "$OP_RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1
    _lib_cleanup
}

stop_kubesim() {
    local pid=$KUBESIM_PID rc
    [ -n "$pid" ] || return 1
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    KUBESIM_PID=""
    return $rc
}

_kcurl_args() {
    _KC=(-sS --max-time "${KCURL_MAX_TIME:-20}")
    [ -n "$KUBESIM_TOKEN" ] && _KC+=(-H "Authorization: Bearer $KUBESIM_TOKEN")
    [ -n "$KUBESIM_CA" ] && _KC+=(--cacert "$KUBESIM_CA")
}

# The last argument that starts with '/' is the path under KUBESIM_URL (so put
# file arguments such as "-o /dev/null" before it).
kcurl() {
    local a i=0 last=-1 out=()
    _kcurl_args
    for a in "$@"; do
        case "$a" in /*) last=$i ;; esac
        i=$((i + 1))
    done
    i=0
    for a in "$@"; do
        if [ $i -eq $last ]; then out+=("$KUBESIM_URL$a"); else out+=("$a"); fi
        i=$((i + 1))
    done
    curl "${_KC[@]}" "${out[@]}"
}

kcode() {
    kcurl -o /dev/null -w '%{http_code}' "$@"
}

json_get() {
    if command -v jq >/dev/null 2>&1; then
        # jq starts in milliseconds; python3 can take a second on a loaded machine
        jq -r --arg p "$1" 'getpath(if $p == "" then [] else ($p | split(".") |
            map(if test("^[0-9]+$") then tonumber else . end)) end) |
            if type == "object" or type == "array" then tojson
            elif . == null then "" else tostring end' 2>/dev/null
        return
    fi
    python3 -c '
import json, sys
v = json.load(sys.stdin)
for part in sys.argv[1].split(".") if sys.argv[1] else []:
    if isinstance(v, list):
        v = v[int(part)] if part.isdigit() and int(part) < len(v) else None
    elif isinstance(v, dict):
        v = v.get(part)
    else:
        v = None
    if v is None:
        break
if isinstance(v, (dict, list)):
    print(json.dumps(v, separators=(",", ":")))
elif v is None:
    print("")
elif isinstance(v, bool):
    print("true" if v else "false")
else:
    print(v)
' "$1" 2>/dev/null
}

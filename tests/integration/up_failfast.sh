#!/bin/bash
# deadline: 90
# up_failfast.sh - `rayop up` stops at once, with one line and a distinct exit code, on what
# no restart can fix (missing kubeconfig: 78; bad flag value, unknown flag even in last
# position: 2; unknown feature gate: 78, with KubeRay's message), and starts nothing. An
# unreachable server gives one warning naming its URL, then quiet back-off; missing CRDs one
# warning per ray.io CRD saying how to install it, not a flood. Outside a Pod, up says in its
# first line that dashboards go through the API server proxy, passes that to the controllers
# and binds its ports on loopback.
. "$(dirname "$0")/lib.sh"
RAYOP=${UP_IT_RAYOP:-$LIB_ROOT/bin/rayop}
T=$(mktemp -d /tmp/up-failfast.XXXXXX); _LIB_DIRS="$_LIB_DIRS $T"

fast() {  # fast NAME WANT_RC PATTERN ARGS...: runs up, expects rc, one stderr line matching
    local name=$1 want=$2 pat=$3; shift 3
    timeout 20 "$RAYOP" up --state-dir "$T/st-$name" "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    check "$name: exit $want (got $rc)" [ "$rc" -eq "$want" ]
    check "$name: one line: $pat" [ "$(grep -c . "$T/$name.err")" -eq 1 ]
    check "$name: says it" grep -q -- "$pat" "$T/$name.err"
    check "$name: nothing started" sh -c "! grep -q '\"msg\":\"started\"' '$T/$name.out'"
}
fast nokubeconfig 78 "cannot load the kubeconfig: kubeconfig $T/none" --kubeconfig "$T/none"
start_kubesim || exit 1
check "kubesim --nodes 0 says why Pods will stay Pending" grep -q -- '--nodes 0: an API server only' "$KUBESIM_STDERR"
fast badvalue 2 'bad value "abc" for --workers' --kubeconfig "$KUBECONFIG" --workers abc
fast unknownlast 2 'unknown flag "--nosuch"' --kubeconfig "$KUBECONFIG" --nosuch
fast gate 78 "Unable to set flag gates for known features: unrecognized feature gate: NoSuchGate" \
    --kubeconfig "$KUBECONFIG" --feature-gates NoSuchGate=true

# no CRDs installed yet: one warning per ray.io type, then quiet retries
"$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$T/st-crd" --metrics-addr 127.0.0.1:0 \
    >"$T/crd.out" 2>&1 &
UP=$!; _LIB_PIDS="$_LIB_PIDS $UP"
crd_warned() { [ "$(grep -c 'KubeRay.s CRD is not installed' "$T/crd.out")" -ge 4 ]; }
wait_until "a warning per missing ray.io CRD" 30 crd_warned && ok "a warning per missing ray.io CRD"
check "the warning names the CRD" grep -q '"crd":"rayclusters.ray.io"' "$T/crd.out"
# several back-off retries happen in 6 s (0.2 s doubling): none of them is logged again
t0=$(date +%s); while [ $(( $(date +%s) - t0 )) -lt 6 ]; do sleep 0.5; done
n=$(grep -c 'KubeRay.s CRD is not installed' "$T/crd.out")
check "no flood: still 4 CRD warnings after 6 s of retries (got $n)" [ "$n" -eq 4 ]
head -1 "$T/crd.out" >"$T/first"
check "first line: outside a cluster, dashboards through the API server proxy" \
    grep -q 'running outside a cluster: Ray dashboards are reached through the API server proxy' "$T/first"
check "controllers run with useKubernetesProxy true" grep -q '"controller":"rayjob".*"useKubernetesProxy":"true"' "$T/crd.out"
check "health probes bound on loopback" grep -q '"msg":"serving health probes","address":"127.0.0.1' "$T/crd.out"
# the probe ports start at KubeRay's (and `rayop controller`'s) :8082, one per controller
probes() { grep '"msg":"serving health probes"' "$T/crd.out" | grep -o '"address":"[^"]*"' |
    cut -d'"' -f4 | sort | tr '\n' ' '; }
check "the four controllers' probes on 8082..8085, 8082 being KubeRay's ($(probes))" \
    [ "$(probes)" = "127.0.0.1:8082 127.0.0.1:8083 127.0.0.1:8084 127.0.0.1:8085 " ]
kill -TERM $UP; wait $UP

# an unreachable server: one warning with its URL
cat >"$T/dead.kc" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "http://127.0.0.1:1"}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: x
current-context: x
users:
- name: u
  user: {token: abc}
KC
"$RAYOP" up --kubeconfig "$T/dead.kc" --state-dir "$T/st-dead" --metrics-addr 0 \
    --health-probe-bind-address 0 >"$T/dead.out" 2>&1 &
UP=$!; _LIB_PIDS="$_LIB_PIDS $UP"
unreach() { grep -q 'cannot reach the API server.*"server":"http://127.0.0.1:1"' "$T/dead.out"; }
wait_until "a warning naming the unreachable URL" 40 unreach && ok "a warning naming the unreachable URL"
t0=$(date +%s); while [ $(( $(date +%s) - t0 )) -lt 4 ]; do sleep 0.5; done
n=$(grep -c '"proc":"watcher".*"level":"warn"' "$T/dead.out")
check "the watcher warned once (got $n)" [ "$n" -eq 1 ]
check "up keeps running (retries, not a stop)" kill -0 $UP
kill -TERM $UP; wait $UP
exit "$(lib_failures)"

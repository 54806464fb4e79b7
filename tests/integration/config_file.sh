#!/bin/bash
# deadline: 90
# config_file.sh - KubeRay's Configuration file (--config) as KubeRay reads it: the watcher
# honours its watchNamespace (LIST/WATCH per namespace, none cluster-wide, so namespace-
# scoped RBAC works), and `rayop up --config` hands the file to the watcher too.
. "$(dirname "$0")/lib.sh"

RAYOP=$LIB_ROOT/bin/rayop
[ -x "$RAYOP" ] || { not_ok "bin/rayop is built"; exit 1; }
start_kubesim || exit 1
WORK=$KUBESIM_DIR
STATE=$WORK/state
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; "$RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1; _lib_cleanup' EXIT
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "CRDs served" 20 kcurl -f /apis/ray.io/v1/rayclusters || exit 1
# a free port P with P + 1 free too (the two controllers' probe ports)
PROBE=$(python3 -c '
import socket
for _ in range(200):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
')
cat >"$WORK/config.yaml" <<YAML
apiVersion: config.ray.io/v1alpha1
kind: Configuration
watchNamespace: team-a,team-b
probeAddr: 127.0.0.1:$PROBE
metricsAddr: "0"
YAML
# a flag the file overrides, as KubeRay ignores flags with --config
"$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --config "$WORK/config.yaml" \
    --watch-namespace default --controllers raycluster,rayjob --metrics-addr 0 \
    --health-probe-bind-address 0 >"$WORK/up.log" 2>&1 &
lists() { grep '"verb":"list"' "$KUBESIM_REQLOG" | grep '"user_agent":"rayop' | grep -c "\"path\":\"$1"; }
scoped() { [ "$(lists /apis/ray.io/v1/namespaces/team-a/rayclusters)" -ge 1 ] &&
           [ "$(lists /apis/ray.io/v1/namespaces/team-b/rayclusters)" -ge 1 ]; }
wait_until "the watcher lists rayclusters in team-a and team-b" 20 scoped &&
    ok "the watcher lists rayclusters in team-a and team-b (the file's watchNamespace)"
check "no cluster-wide LIST of rayclusters" [ "$(lists /apis/ray.io/v1/rayclusters)" = 0 ]
check "the --watch-namespace flag is ignored with --config (no LIST in default)" \
    [ "$(lists /apis/ray.io/v1/namespaces/default/rayclusters)" = 0 ]
# Two controllers in one Pod, one Configuration: the file's probeAddr is the first
# controller's port and the next is 1 above it (KubeRay is one process; rayop is several,
# and the file's one address would put them all on one port, each later one failing to bind).
probe_ok() { curl -fsS "http://127.0.0.1:$1/healthz" >/dev/null 2>&1; }
wait_until "raycluster's /healthz on the file's probeAddr ($PROBE)" 20 probe_ok "$PROBE" &&
    ok "the Configuration's probeAddr is the first controller's probe port"
wait_until "rayjob's /healthz on probeAddr + 1" 20 probe_ok $((PROBE + 1)) &&
    ok "the second controller probes on probeAddr + 1"
check "no controller failed to bind a port" sh -c "! grep -q 'cannot listen' '$WORK/up.log'"
check "no controller restarted" sh -c "jq -e '[.procs[].restarts] | add == 0' '$STATE/up.json' >/dev/null"
exit "$(lib_failures)"

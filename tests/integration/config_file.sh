#!/bin/bash
# deadline: 40
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
cat >"$WORK/config.yaml" <<YAML
apiVersion: config.ray.io/v1alpha1
kind: Configuration
watchNamespace: team-a,team-b
YAML
# a flag the file overrides, as KubeRay ignores flags with --config
"$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --config "$WORK/config.yaml" \
    --watch-namespace default --controllers raycluster --metrics-addr 0 \
    --health-probe-bind-address 0 >"$WORK/up.log" 2>&1 &
lists() { grep '"verb":"list"' "$KUBESIM_REQLOG" | grep '"user_agent":"rayop' | grep -c "\"path\":\"$1"; }
scoped() { [ "$(lists /apis/ray.io/v1/namespaces/team-a/rayclusters)" -ge 1 ] &&
           [ "$(lists /apis/ray.io/v1/namespaces/team-b/rayclusters)" -ge 1 ]; }
wait_until "the watcher lists rayclusters in team-a and team-b" 20 scoped &&
    ok "the watcher lists rayclusters in team-a and team-b (the file's watchNamespace)"
check "no cluster-wide LIST of rayclusters" [ "$(lists /apis/ray.io/v1/rayclusters)" = 0 ]
check "the --watch-namespace flag is ignored with --config (no LIST in default)" \
    [ "$(lists /apis/ray.io/v1/namespaces/default/rayclusters)" = 0 ]
exit "$(lib_failures)"

#!/bin/bash
# deadline: 120
# rayservice_lost_apps.sh - Serve applications lost in the middle of an upgrade (a head
# restarted without GCS FT; the chaos soak's kubesim restarts lose every simulated Ray
# state) are deployed again, on the active cluster as on the pending one:
#   a RayService runs config v1 on C1; an image change with a config whose application
#   fails (DEPLOY_FAILED) makes a pending C2 that never gets ready, so the serve Service
#   stays on C1 for the whole test. Then
#   1. C1's applications are deleted through its dashboard: C1 gets v1 again (the config it
#      had, not the failing one) with one PUT, the serve Service never leaves C1, and the
#      only moments it selects a cluster without every application RUNNING are on C1
#      between the loss and the re-deploy;
#   2. C2's applications are deleted: C2 gets its config again (one PUT);
#   3. no PUT changed nothing (kubesim's count), and a good config finishes the upgrade.
# KubeRay does not look at the active cluster's Serve during a NewCluster upgrade: C1
# would serve nothing until the upgrade switches away from it (here: never).
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
rs_create la || not_ok "create la"
rs_wait la status.serviceStatus Running 60 || exit 1
C1=$(rs_field la status.activeServiceStatus.rayClusterName)

BAD=$(printf 'applications:\n  - name: app\n    import_path: m.app\n    route_prefix: /app\n    runtime_env:\n      env_vars:\n        KUBESIM_SERVE_STATUS: DEPLOY_FAILED\n        KUBESIM_SERVE_DEPLOY_SECONDS: "1"\n' | jq -Rs .)
IMG='"rayClusterConfig":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.1","ports":[{"containerPort":6379,"name":"gcs-server"},{"containerPort":8265,"name":"dashboard"},{"containerPort":8000,"name":"serve"}],"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}'
rs_patch la "{\"serveConfigV2\":$BAD,$IMG}" || not_ok "patch image and failing config"
pending_failed() { rs_is la status.pendingServiceStatus.applicationStatuses.app.status DEPLOY_FAILED; }
wait_until "la: the pending application DEPLOY_FAILED" 40 pending_failed || exit 1
C2=$(rs_field la status.pendingServiceStatus.rayClusterName)
ok "la: $C2 pending (its application DEPLOY_FAILED), $C1 active"

# "PUTS UNCHANGED" of cluster $1 as kubesim's Ray counts them
puts() { kcurl /kubesim/ray/ | jq -r --arg c "$1" '[.[] | select(.cluster == $c)][0] | "\(.servePuts) \(.servePutsUnchanged)"'; }
# the user_config.v the application of cluster $1 was deployed with, and its status
app_of() { kcurl /kubesim/ray/ | jq -r --arg c "$1" '[.[] | select(.cluster == $c)][0].appStates.app |
    "\(.config.deployments[0].user_config.v // "-") \(.status)"'; }
app_none() { [ "$(app_of "$1")" = "- null" ]; }
wipe() {   # the dashboard's DELETE /api/serve/applications/: every application gone
    kcurl -X DELETE "/api/v1/namespaces/default/services/$1-head-svc:dashboard/proxy/api/serve/applications/" >/dev/null
}
P1=$(puts "$C1")
P2=$(puts "$C2")

# 1. the active cluster loses its applications
rs_invariant_start la
npolls() { wc -l <"$WORK/invariant-la.polls"; }
polls_ge() { [ "$(npolls)" -ge "$1" ]; }
wait_until "la: the invariant poller runs" 20 polls_ge 5 || exit 1
TW=$(date +%s.%N)
wipe "$C1"
check "la: $C1's applications are gone" app_none "$C1"
back() { [ "$(app_of "$C1")" = "1 RUNNING" ]; }
if wait_until "la: $C1 runs v1 again" 15 back; then
    TB=$(date +%s.%N)
    ok "la: $C1 runs v1 again ($(awk -v a="$TW" -v b="$TB" 'BEGIN { printf "%d", (b - a) * 1000 }') ms after the loss)"
fi
check "la: one more PUT to $C1, none that changed nothing" [ "$(puts "$C1")" = "$(( ${P1% *} + 1 )) 0" ]
check "la: the serve Service still selects $C1" [ "$(svc_cluster la-serve-svc)" = "$C1" ]
check "la: the controller says why" grep -q "lost its Serve applications" "$WORK/rayservice.log"
N=$(npolls)
wait_until "la: the invariant poller goes on" 20 polls_ge $((N + 5))
kill "$RS_INV_PID" 2>/dev/null
wait "$RS_INV_PID" 2>/dev/null
RS_INV_PID=""
# every violation the poller saw: on C1, between the loss and the re-deploy
late=$(awk -v c="cluster=$C1" -v tb="${TB:-0}" '$0 !~ c || $1 > tb + 0.2' "$WORK/invariant-la.txt" | head -3)
only_loss() { [ -z "$late" ] && [ -n "${TB:-}" ]; }
check "la: the serve Service selected no cluster with an application not RUNNING but $C1 before its re-deploy ($(npolls) polls, $(wc -l <"$WORK/invariant-la.txt") of them in that window)" only_loss
[ -n "$late" ] && echo "$late" | sed 's/^/# /'
check "la: $C2 still pending, $C1 active" [ "$(rs_field la status.activeServiceStatus.rayClusterName) $(rs_field la status.pendingServiceStatus.rayClusterName)" = "$C1 $C2" ]

# 2. the pending cluster loses its applications
wipe "$C2"
back2() { [ "$(app_of "$C2")" = "- DEPLOY_FAILED" ] && [ "${P2% *}" -lt "$(puts "$C2" | cut -d' ' -f1)" ]; }
wait_until "la: $C2 gets its config again" 15 back2 && ok "la: $C2 gets its config again"
check "la: one more PUT to $C2, none that changed nothing" [ "$(puts "$C2")" = "$(( ${P2% *} + 1 )) 0" ]

# 3. a good config: the pending cluster gets ready, the switch
check "la: no PUT to $C1 changed nothing" [ "$(puts "$C1" | cut -d' ' -f2)" = 0 ]
rs_invariant_start la
wait_until "la: the invariant poller runs again" 20 polls_ge 5
rs_patch la "{\"serveConfigV2\":$(rs_config "{v: 3}" | jq -Rs .)}" || not_ok "patch config v3"
switched() { rs_is la status.activeServiceStatus.rayClusterName "$C2"; }
wait_until "la: switched to $C2" 40 switched && ok "la: switched to $C2"
N=$(npolls)
wait_until "la: the invariant poller goes on" 20 polls_ge $((N + 5))
rs_invariant_check la
check "la: no PUT to $C2 changed nothing" [ "$(puts "$C2" | cut -d' ' -f2)" = 0 ]
exit "$(lib_failures)"

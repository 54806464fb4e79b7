#!/bin/bash
# deadline: 90
# rayservice_upgrade.sh - zero-downtime upgrades of a RayService in kubesim, with the
# invariant poller (every 100 ms: the serve Service never selects a cluster whose Serve
# applications are not all RUNNING):
#   an image change -> a pending cluster, UpgradeInProgress, the switch of both Services
#   once its application is RUNNING (not before: its deploy takes 3 s), promotion, the old
#   cluster deleted after rayClusterDeletionDelaySeconds (3 s here), one PUT per cluster;
#   then a change whose application goes DEPLOY_FAILED -> no switch, the pending
#   application's status and message in pendingServiceStatus, Ready stays True.
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
RS_DEPLOY_SECONDS=3 rs_create up || not_ok "create up"
rs_wait up status.serviceStatus Running 60 || exit 1
C1=$(rs_field up status.activeServiceStatus.rayClusterName)
rs_invariant_start up

# 1. an image change: a new cluster
T0=$(date +%s%N)
rs_patch up '{"rayClusterConfig":{"headGroupSpec":{"template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.1","ports":[{"containerPort":6379,"name":"gcs-server"},{"containerPort":8265,"name":"dashboard"},{"containerPort":8000,"name":"serve"}],"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}}' ||
    not_ok "patch image"
pending_set() { [ -n "$(rs_field up status.pendingServiceStatus.rayClusterName)" ]; }
if wait_until "up: a pending cluster after the image change" 20 pending_set; then
    C2=$(rs_field up status.pendingServiceStatus.rayClusterName)
    ok "up: pending cluster $C2 prepared"
    upgrading() { rs_cond_is up UpgradeInProgress "True BothActivePendingClustersExist"; }
    wait_until "up: UpgradeInProgress True BothActivePendingClustersExist" 20 upgrading &&
        ok "up: UpgradeInProgress True BothActivePendingClustersExist"
    check "up: the serve Service still on $C1 while $C2 deploys" [ "$(svc_cluster up-serve-svc)" = "$C1" ]
    switched() { rs_is up status.activeServiceStatus.rayClusterName "$C2"; }
    if wait_until "up: switched to $C2" 60 switched; then
        T1=$(date +%s%N)
        ok "up: $C2 became active ($(( (T1 - T0) / 1000000 )) ms after the patch)"
        check "up: both Services select $C2" [ "$(svc_cluster up-serve-svc) $(svc_cluster up-head-svc)" = "$C2 $C2" ]
        check "up: no pending cluster, UpgradeInProgress False NoPendingCluster" \
            sh -c "[ -z '$(rs_field up status.pendingServiceStatus.rayClusterName)' ] && [ '$(rs_cond up UpgradeInProgress)' = 'False NoPendingCluster' ]"
        check "up: the old cluster still there just after the switch (deletion delay)" rc_exists "$C1"
        wait_until "up: old cluster $C1 deleted after the delay" 20 rc_gone "$C1" && {
            T2=$(date +%s%N)
            ok "up: old cluster deleted $(( (T2 - T1) / 1000000 )) ms after the switch (delay 3 s)"
            check "up: not before the delay" [ $(( (T2 - T1) / 1000000 )) -ge 2500 ]
        }
        check "up: one Serve PUT per cluster (2)" [ "$(rs_puts up)" = 2 ]
        check "up: Ready stayed True (serviceStatus Running)" rs_is up status.serviceStatus Running
        check "up: DeletedRayCluster Event" ev_reason up DeletedRayCluster
        check "up: UpdatedService Event (the switch)" ev_reason up UpdatedService
    fi
fi

# 2. an upgrade whose application fails: no switch
BAD=$(printf 'applications:\n  - name: app\n    import_path: m.app\n    route_prefix: /app\n    runtime_env:\n      env_vars:\n        KUBESIM_SERVE_STATUS: DEPLOY_FAILED\n        KUBESIM_SERVE_DEPLOY_SECONDS: "1"\n' | jq -Rs .)
C2=$(rs_field up status.activeServiceStatus.rayClusterName)
rs_patch up "{\"serveConfigV2\":$BAD,\"rayClusterConfig\":{\"headGroupSpec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.53.0\",\"ports\":[{\"containerPort\":6379,\"name\":\"gcs-server\"},{\"containerPort\":8265,\"name\":\"dashboard\"},{\"containerPort\":8000,\"name\":\"serve\"}],\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}}}" ||
    not_ok "patch bad"
pending_failed() { rs_is up status.pendingServiceStatus.applicationStatuses.app.status DEPLOY_FAILED; }
if wait_until "up: the pending application DEPLOY_FAILED in pendingServiceStatus" 40 pending_failed; then
    ok "up: the pending application DEPLOY_FAILED in pendingServiceStatus"
    C3=$(rs_field up status.pendingServiceStatus.rayClusterName)
    check "up: its message is reported" [ -n "$(rs_field up status.pendingServiceStatus.applicationStatuses.app.message)" ]
    sleep 4   # time for a wrong switch to happen (not synchronisation: the assertion is that nothing changes)
    check "up: no switch: $C2 active, $C3 pending, the serve Service on $C2" \
        [ "$(rs_field up status.activeServiceStatus.rayClusterName) $(rs_field up status.pendingServiceStatus.rayClusterName) $(svc_cluster up-serve-svc)" = "$C2 $C3 $C2" ]
    check "up: UpgradeInProgress True, Ready True NonZeroServeEndpoints" \
        sh -c "[ '$(rs_cond up UpgradeInProgress)' = 'True BothActivePendingClustersExist' ] && [ '$(rs_cond up Ready)' = 'True NonZeroServeEndpoints' ]"
fi
rs_invariant_check up

# negative control: the poller sees a serve Service pointed at the failing cluster
if [ -n "${C3:-}" ]; then
    rs_invariant_start up
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d "{\"spec\":{\"selector\":{\"ray.io/cluster\":\"$C3\"}}}" /api/v1/namespaces/default/services/up-serve-svc >/dev/null
    caught() { [ -s "$WORK/invariant-up.txt" ]; }
    wait_until "negative control: the poller reports a serve Service on $C3" 10 caught &&
        ok "negative control: the poller reports a serve Service on the DEPLOY_FAILED cluster"
    kill "$RS_INV_PID" 2>/dev/null
    RS_INV_PID=""
fi
exit "$(lib_failures)"

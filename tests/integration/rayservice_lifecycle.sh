#!/bin/bash
# deadline: 120
# rayservice_lifecycle.sh - RayService lifecycle in kubesim:
#   suspend (Suspending -> Suspended, every owned RayCluster and Service deleted) and resume
#   (a new cluster, Running again); the ray.io/initializing-timeout annotation (Ready False
#   InitializingTimeout, terminal, clusters deleted, a Warning Event); kill -9 of the
#   rayservice controller in the middle of an upgrade, after the PUT to the pending cluster
#   -> the restarted controller completes the upgrade with no extra cluster and no extra PUT
#   (the invariant poller runs through it).
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
RS_DEPLOY_SECONDS=3 rs_create k9 || not_ok "create k9"
rs_create sus || not_ok "create sus"
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayservices -d "{
  \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayService\",
  \"metadata\":{\"name\":\"slow\",\"annotations\":{\"ray.io/initializing-timeout\":\"4s\"}},
  \"spec\":$(RS_DEPLOY_SECONDS=600 rs_spec rayproject/ray:2.52.0 "$(RS_DEPLOY_SECONDS=600 rs_config)")}" >/dev/null

# kill -9 mid-upgrade
if rs_wait k9 status.serviceStatus Running 60; then
    C1=$(rs_field k9 status.activeServiceStatus.rayClusterName)
    rs_invariant_start k9
    rs_patch k9 '{"rayClusterConfig":{"workerGroupSpecs":[{"groupName":"small","replicas":1,"minReplicas":1,"maxReplicas":2,"rayStartParams":{},"template":{"spec":{"containers":[{"name":"ray-worker","image":"rayproject/ray:2.52.1","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}]}}' ||
        not_ok "patch k9"
    if wait_until "k9: the pending cluster got its PUT" 40 rs_puts_ge k9 2; then
        kill -9 "$RS_CTL_PID"
        wait "$RS_CTL_PID" 2>/dev/null
        ok "k9: controller killed -9 after the PUT to the pending cluster"
        C2=$(rs_field k9 status.pendingServiceStatus.rayClusterName)
        rs_ctl_start
        switched() { [ -n "$C2" ] && rs_is k9 status.activeServiceStatus.rayClusterName "$C2"; }
        wait_until "k9: the restarted controller completes the upgrade ($C2 active)" 60 switched &&
            ok "k9: the restarted controller completes the upgrade"
        wait_until "k9: old cluster deleted" 30 rc_gone "$C1" && ok "k9: old cluster deleted after the delay"
        check "k9: no extra cluster (created: 2)" [ "$(grep -c '"Created RayCluster for RayService".*"name":"k9"' "$WORK/rayservice.log")" = 2 ]
        check "k9: no extra PUT (2: one per cluster)" [ "$(rs_puts k9)" = 2 ]
        check "k9: only $C2 left" [ "$(rs_clusters k9 | tr '\n' ' ')" = "$C2 " ]
    fi
    rs_invariant_check k9
fi

# suspend and resume
if rs_wait sus status.serviceStatus Running 60; then
    S1=$(rs_field sus status.activeServiceStatus.rayClusterName)
    rs_patch sus '{"suspend":true}' || not_ok "suspend"
    if wait_until "sus: Suspended True SuspendComplete" 40 rs_cond_is sus Suspended "True SuspendComplete"; then
        ok "sus: Suspended True SuspendComplete"
        check "sus: Suspending False, Ready False SuspendComplete" \
            sh -c "[ '$(rs_cond sus Suspending)' = 'False SuspendComplete' ] && [ '$(rs_cond sus Ready)' = 'False SuspendComplete' ]"
        check "sus: its RayCluster and Services are gone" \
            sh -c "[ -z '$(rs_clusters sus)' ] && [ '$(kcode /api/v1/namespaces/default/services/sus-serve-svc)' = 404 ] && [ '$(kcode /api/v1/namespaces/default/services/sus-head-svc)' = 404 ]"
        check "sus: no active cluster, serviceStatus empty" \
            sh -c "[ -z '$(rs_field sus status.activeServiceStatus.rayClusterName)$(rs_field sus status.serviceStatus)' ]"
        rs_patch sus '{"suspend":false}' || not_ok "resume"
        if rs_wait sus status.serviceStatus Running 60; then
            ok "sus: resumed and Running again"
            check "sus: on a new cluster" [ "$(rs_field sus status.activeServiceStatus.rayClusterName)" != "$S1" ]
            check "sus: Suspended False RayServiceResumed" rs_cond_is sus Suspended "False RayServiceResumed"
        fi
    fi
fi

# the initializing timeout (4 s; its application never leaves DEPLOYING)
if wait_until "slow: Ready False InitializingTimeout" 40 rs_cond_is slow Ready "False InitializingTimeout"; then
    ok "slow: Ready False InitializingTimeout"
    no_clusters() { [ -z "$(rs_clusters slow)" ]; }
    wait_until "slow: its clusters deleted" 20 no_clusters && ok "slow: its clusters deleted"
    check "slow: Warning RayServiceInitializingTimeout Event" ev_reason slow RayServiceInitializingTimeout
    # terminal: two more reconciles (2 s apart) create nothing
    still_failed() { sleep 4; no_clusters && rs_cond_is slow Ready "False InitializingTimeout"; }
    check "slow: stays failed (terminal), no new cluster" still_failed
fi
exit "$(lib_failures)"

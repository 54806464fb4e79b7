#!/bin/bash
# deadline: 150
# rayservice_incremental.sh - NewClusterWithIncrementalUpgrade in kubesim (the Gateway API CRDs
# installed; kubesim's simulated Gateway controller accepts Gateways and HTTPRoutes and routes
# /kubesim/gateway/NS/GATEWAY/PATH by the route's weights):
#   create -> the Gateway NAME-gateway, the HTTPRoute NAME-httproute with 100 % to the cluster's
#   CLUSTER-serve-svc, requests through the Gateway reach it;
#   an image change -> a pending cluster whose Serve target_capacity and traffic step up
#   (stepSizePercent 50, maxSurgePercent 50, every 1 s) to 100 while the old one's capacity goes to
#   0, then the promotion; requests through the Gateway split as the weights say;
#   a second change reverted mid-way -> RollbackInProgress, traffic back to the active cluster,
#   the pending cluster dropped.
# The invariant poller watches the HTTPRoute: no backend with weight > 0 on a cluster whose
# applications are not all RUNNING.
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
for f in $RAYOP_SHARED/crds/gateway-api/*.yaml; do kubectl create -f "$f" >/dev/null 2>&1; done
wait_until "Gateway API served" 20 kcurl -f /apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes || exit 1
OPTS='"upgradeStrategy":{"type":"NewClusterWithIncrementalUpgrade","clusterUpgradeOptions":{"maxSurgePercent":50,"stepSizePercent":50,"intervalSeconds":1,"gatewayClassName":"kubesim"}}'
spec_image() {  # the rayClusterConfig patch for image $1 (autoscaling on, as required)
    printf '{"rayClusterConfig":{"enableInTreeAutoscaling":true,"headGroupSpec":{"template":{"spec":{"containers":[{"name":"ray-head","image":"%s","ports":[{"containerPort":6379,"name":"gcs-server"},{"containerPort":8265,"name":"dashboard"},{"containerPort":8000,"name":"serve"}],"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}}' "$1"
}
RS_CLUSTER_EXTRA='"enableInTreeAutoscaling":true,' rs_create inc "$OPTS" || not_ok "create inc"
GWP=/apis/gateway.networking.k8s.io/v1/namespaces/default
route_weights() { kcurl $GWP/httproutes/inc-httproute | jq -r '[.spec.rules[0].backendRefs[] | "\(.name)=\(.weight)"] | join(" ")'; }
backend_of() { curl -sS -o /dev/null -D - -H "Authorization: Bearer $KUBESIM_TOKEN" "$KUBESIM_URL/kubesim/gateway/default/inc-gateway/app/x" | tr -d '\r' | sed -n 's/^X-Kubesim-Backend: //p'; }

active_set() { [ -n "$(rs_field inc status.activeServiceStatus.rayClusterName)" ]; }
if rs_wait inc status.serviceStatus Running 60 && wait_until "inc: an active cluster" 20 active_set; then
    C1=$(rs_field inc status.activeServiceStatus.rayClusterName)
    check "inc: Gateway inc-gateway (class kubesim, listener http:80) accepted" \
        sh -c "[ \"\$(echo '$(kcurl $GWP/gateways/inc-gateway)' | jq -r '[.spec.gatewayClassName, .spec.listeners[0].name, (.spec.listeners[0].port|tostring), (.status.conditions[] | select(.type==\"Programmed\") | .status)] | join(\",\")')\" = kubesim,http,80,True ]"
    has_route() { [ "$(route_weights)" = "$C1-serve-svc=100" ]; }
    wait_until "inc: HTTPRoute inc-httproute: 100 % to $C1-serve-svc" 20 has_route && ok "inc: HTTPRoute inc-httproute: 100 % to $C1-serve-svc"
    check "inc: a request through the Gateway reaches $C1" [ "$(backend_of)" = "$C1-serve-svc" ]
    check "inc: activeServiceStatus targetCapacity 100, trafficRoutedPercent 100" \
        [ "$(rs_field inc status.activeServiceStatus.targetCapacity) $(rs_field inc status.activeServiceStatus.trafficRoutedPercent)" = "100 100" ]

    rs_invariant_start inc route
    rs_patch inc "$(spec_image rayproject/ray:2.52.1)" || not_ok "upgrade inc"
    pending() { [ -n "$(rs_field inc status.pendingServiceStatus.rayClusterName)" ]; }
    if wait_until "inc: a pending cluster" 20 pending; then
        C2=$(rs_field inc status.pendingServiceStatus.rayClusterName)
        ok "inc: pending cluster $C2 (targetCapacity $(rs_field inc status.pendingServiceStatus.targetCapacity))"
        : >"$WORK/steps.txt"
        record() {
            echo "$(rs_field inc status.activeServiceStatus.rayClusterName) $(rs_field inc status.pendingServiceStatus.targetCapacity)/$(rs_field inc status.pendingServiceStatus.trafficRoutedPercent) $(route_weights)" >>"$WORK/steps.txt"
            rs_is inc status.activeServiceStatus.rayClusterName "$C2"
        }
        # a split of the traffic while both clusters take some
        split_seen=0
        # the routes seen while waiting for the split count as steps too: under load the 50 %
        # step can be over before the 8 requests below are done and record() starts
        : >"$WORK/routes.txt"
        both() { route_weights | tee -a "$WORK/routes.txt" | grep -q "$C1-serve-svc=50 $C2-serve-svc=50"; }
        if wait_until "inc: traffic split 50/50" 40 both; then
            for _ in 1 2 3 4 5 6 7 8; do backend_of; done >"$WORK/split.txt"
            both && split_seen=1
        fi
        if wait_until "inc: the upgrade completes ($C2 active)" 60 record; then
            ok "inc: $C2 promoted after the steps: $(awk '{print $2}' "$WORK/steps.txt" | uniq | tr '\n' ' ')"
            check "inc: traffic moved in steps (pending trafficRoutedPercent 50 then 100 seen in the route)" \
                sh -c "cat '$WORK/routes.txt' '$WORK/steps.txt' | grep -q '$C2-serve-svc=50' && grep -q '$C2-serve-svc=100' '$WORK/steps.txt'"
            [ $split_seen = 1 ] && check "inc: 8 requests through the Gateway at 50/50 split 4/4" \
                [ "$(grep -c "^$C1-serve-svc$" "$WORK/split.txt") $(grep -c "^$C2-serve-svc$" "$WORK/split.txt")" = "4 4" ]
            tc() { kcurl "/api/v1/namespaces/default/services/$1-head-svc:dashboard/proxy/api/serve/applications/" | jq -r '.target_capacity'; }
            check "inc: Serve target_capacity of $C2 is 100" [ "$(tc $C2)" = 100 ]
            check "inc: UpdatedServeTargetCapacity Events" ev_reason inc UpdatedServeTargetCapacity
            wait_until "inc: old cluster $C1 deleted after the delay" 30 rc_gone "$C1" && ok "inc: old cluster deleted"
        fi
    fi

    # rollback: a change reverted in the middle of its upgrade
    rs_patch inc "$(spec_image rayproject/ray:2.53.0)" || not_ok "upgrade inc again"
    pending2() { p=$(rs_field inc status.pendingServiceStatus.rayClusterName); [ -n "$p" ] && [ "$p" != "$C2" ]; }
    if wait_until "inc: a second pending cluster" 20 pending2; then
        C3=$(rs_field inc status.pendingServiceStatus.rayClusterName)
        half() { rs_is inc status.pendingServiceStatus.trafficRoutedPercent 50; }
        wait_until "inc: $C3 takes 50 % of the traffic" 40 half && ok "inc: $C3 takes 50 % of the traffic"
        rs_patch inc "$(spec_image rayproject/ray:2.52.1)" || not_ok "revert"
        wait_until "inc: RollbackInProgress True DesiredClusterSpecChanged" 20 rs_cond_is inc RollbackInProgress "True DesiredClusterSpecChanged" &&
            ok "inc: revert -> RollbackInProgress True DesiredClusterSpecChanged"
        rolled_back() {
            [ -z "$(rs_cond inc RollbackInProgress)" ] && rs_is inc status.pendingServiceStatus.rayClusterName "" &&
                rs_is inc status.activeServiceStatus.rayClusterName "$C2"
        }
        wait_until "inc: rollback complete: $C2 active, no pending cluster" 60 rolled_back &&
            ok "inc: rollback complete: $C2 active, no pending cluster, RollbackInProgress gone"
        all_on_c2() { [ "$(route_weights)" = "$C2-serve-svc=100" ]; }
        wait_until "inc: all traffic on $C2 again (the route drops $C3)" 20 all_on_c2 &&
            ok "inc: all traffic on $C2 again (the route drops $C3)"
        wait_until "inc: rolled-back cluster $C3 deleted" 30 rc_gone "$C3" && ok "inc: rolled-back cluster deleted"
    fi
    rs_invariant_check inc route
fi
exit "$(lib_failures)"

#!/bin/bash
# deadline: 120
# rayservice_stall.sh - a slow Ray head delays only its own RayService: with one worker
# (`--workers 1`, the default) RayService "slow" whose cluster's dashboard and Serve proxy
# answer 30 s late (kubesim's delay knob, longer than the 10 s proxied deadline) and
# RayService "fast": a serveConfigV2 change of "fast" is PUT within a few seconds while
# "slow" is being reconciled every 2 s (KubeRay: each of slow's reconciles holds the worker
# for up to its deadlines, ray-project/kuberay#3907). "slow" keeps its status (Running) and
# its cluster while its head does not answer. And a RayService on a token-auth cluster
# (the controller sends x-ray-authorization from the cluster's Secret) reaches Running.
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
rs_create slow || not_ok "create slow"
rs_create fast || not_ok "create fast"
# a token-auth cluster (authOptions.mode token): its dashboard answers only with the token
RS_CLUSTER_EXTRA='"authOptions":{"mode":"token"},' rs_create tok || not_ok "create tok"
if rs_wait slow status.serviceStatus Running 60 && rs_wait fast status.serviceStatus Running 60; then
    SC=$(rs_field slow status.activeServiceStatus.rayClusterName)
    kcurl -X POST -H 'Content-Type: application/json' -d '{"ms":30000}' "/kubesim/ray/default/$SC/delay" >/dev/null
    # let slow's reconciles run into the slow head a few times first
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"metadata":{"annotations":{"touch":"1"}}}' \
        $NSP/rayservices/slow >/dev/null
    sleep 3   # not synchronisation: slow's reconciles keep running into the delay meanwhile
    T0=$(date +%s%N)
    rs_patch fast "{\"serveConfigV2\":$(rs_config '{v: 2}' | jq -Rs .)}" || not_ok "patch fast"
    if wait_until "fast: its config PUT while slow's head hangs" 30 rs_puts_ge fast 2; then
        MS=$(( ($(date +%s%N) - T0) / 1000000 ))
        ok "fast: its config PUT ${MS} ms after the change while slow's head hangs"
        check "fast: within 5 s (one slow reconcile would hold the worker 10 s)" [ "$MS" -lt 5000 ]
    fi
    check "slow: still Running on $SC (its status kept while its head does not answer)" \
        sh -c "[ '$(rs_field slow status.serviceStatus) $(rs_field slow status.activeServiceStatus.rayClusterName)' = 'Running $SC' ]"
    check "slow: its reconciles were not held up (logged 'not answered yet')" \
        grep -q '"Serve status not answered yet; keeping the last one".*"name":"slow"' "$WORK/rayservice.log"
fi
if rs_wait tok status.serviceStatus Running 60; then
    TC=$(rs_field tok status.activeServiceStatus.rayClusterName)
    code=$(kcode "/api/v1/namespaces/default/services/$TC-head-svc:dashboard/proxy/api/serve/applications/")
    check "tok: Running on a token-auth cluster whose dashboard refuses a call without the token ($code)" \
        [ "$code" = 401 ]
fi
exit "$(lib_failures)"

#!/bin/bash
# deadline: 120
# rayservice_slow_put.sh - a Serve PUT whose answer comes after the reconcile stopped waiting
# for it still gets its UpdatedServeApplications Event (KubeRay records one after every PUT).
# kubesim delays every PUT through the service proxy by 2 s, longer than the controller waits
# (RS_ASYNC_WAIT_MS); Ray applies the config when the PUT arrives, so a later reconcile's status
# read can show the config running before anyone took the PUT's answer. That reconcile took the
# running config for somebody else's and adopted it silently: a full `make diff-kuberay` on a
# loaded machine lost the Event for 8-13 RayServices this way.
. "$(dirname "$0")/lib_rayservice.sh"

rs_start --fault 'verb=update,resource=services/proxy,ms=2000' || exit 1
rs_create sp || not_ok "create sp"
rs_wait sp status.serviceStatus Running 90 || exit 1
C=$(rs_field sp status.activeServiceStatus.rayClusterName)
puts() { kcurl /kubesim/ray/ | jq -r --arg c "$C" '[.[] | select(.cluster == $c)][0] | "\(.servePuts) \(.servePutsUnchanged)"'; }
check "sp: one Serve PUT, and it changed the config" [ "$(puts)" = "1 0" ]
delayed() { [ "$(kcurl /kubesim/status | jq -r '.faults.delay // 0')" -ge 1 ]; }
check "sp: kubesim delayed the PUT" delayed
ev() { ev_reason sp UpdatedServeApplications; }
wait_until "sp: UpdatedServeApplications Event" 20 ev && ok "sp: the delayed PUT has its UpdatedServeApplications Event"
check "sp: the controller took the PUT's answer" grep -q '"updateServeDeployment".*"name":"sp"' "$WORK/rayservice.log"
check "sp: the config was not adopted as somebody else's" \
    bash -c "! grep -q 'already run the current V2 Serve config' '$WORK/rayservice.log'"
exit "$(lib_failures)"

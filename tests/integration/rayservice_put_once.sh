#!/bin/bash
# deadline: 120
# rayservice_put_once.sh - a Serve config is PUT to a cluster once, even when the controller
# dies between the PUT and the write that remembers it (the cluster's serve-config-hash
# annotation): a RayService runs config v1; with every RayCluster patch answered 503, its
# config goes to v2, the controller PUTs v2, fails to record it and is killed -9; a new
# controller (patches working again) must see that the cluster runs v2 already - from the
# applications' deployed configs - and record it instead of sending v2 again. The chaos
# soak found this (a PUT that changed nothing, after a kill in that window).
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
rs_create po || not_ok "create po"
rs_wait po status.serviceStatus Running 60 || exit 1
C=$(rs_field po status.activeServiceStatus.rayClusterName)
ann() { kcurl $NSP/rayclusters/$C | jq -r '.metadata.annotations["rayop.io/serve-config-hash"] // empty'; }
ann_set() { [ -n "$(ann)" ]; }
wait_until "po: the cluster records the config it runs" 20 ann_set || exit 1
H1=$(ann)
puts() { kcurl /kubesim/ray/ | jq -r --arg c "$C" '[.[] | select(.cluster == $c)][0] | "\(.servePuts) \(.servePutsUnchanged)"'; }
check "po: one PUT so far" [ "$(puts)" = "1 0" ]

kcurl -X PUT -d '{"rules":["verb=patch,resource=rayclusters,code=503"]}' /kubesim/faults >/dev/null
rs_patch po "{\"serveConfigV2\":$(rs_config "{v: 2}" | jq -Rs .)}" || not_ok "patch config v2"
fired() { [ "$(kcurl /kubesim/status | jq -r '.faults["503"] // 0')" -ge 1 ]; }
put_v2() { [ "$(puts)" = "2 0" ]; }
wait_until "po: v2 PUT" 30 put_v2 && ok "po: v2 PUT"
wait_until "po: the patch recording it refused" 30 fired && ok "po: the patch recording v2 was refused (503)"
kill -9 "$RS_CTL_PID"
wait "$RS_CTL_PID" 2>/dev/null
check "po: the cluster still records v1" [ "$(ann)" = "$H1" ]
kcurl -X DELETE /kubesim/faults >/dev/null

rs_ctl_start
ann_v2() { a=$(ann); [ -n "$a" ] && [ "$a" != "$H1" ]; }
wait_until "po: the new controller records v2" 30 ann_v2 && ok "po: the new controller records v2 on the cluster"
rs_wait po status.serviceStatus Running 30 && ok "po: Running"
check "po: v2 was not sent again (2 PUTs, none that changed nothing)" [ "$(puts)" = "2 0" ]
check "po: the new controller says why" grep -q "already run the current V2 Serve config" "$WORK/rayservice.log"
exit "$(lib_failures)"

#!/bin/bash
# deadline: 180
# rayservice_stall.sh - a slow Ray head delays only its own RayService (KubeRay: each of
# slow's reconciles holds the worker for up to its deadlines, ray-project/kuberay#3907). With
# one worker (`--workers 1`, the default), RayService "slow"'s dashboard answers 9 s late
# (kubesim's delay knob, below the 10 s proxied deadline): a serveConfigV2 change of RayService
# "fast" is PUT while one of slow's calls is out, before its answer. Then slow's head answers
# 30 s late (past the deadline): slow keeps its status (Running) and its cluster. And a
# RayService on a token-auth cluster (the controller sends x-ray-authorization from the
# cluster's Secret) reaches Running.
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
rs_create slow || not_ok "create slow"
rs_create fast || not_ok "create fast"
# a token-auth cluster (authOptions.mode token): its dashboard answers only with the token
RS_CLUSTER_EXTRA='"authOptions":{"mode":"token"},' rs_create tok || not_ok "create tok"
# asked / answered dashboard calls of slow's cluster (kubesim counts them)
calls() { kcurl /kubesim/ray/clusters | jq -r --arg c "$SC" \
    '.[] | select(.cluster == $c) | "\(.dashboardAsked) \(.dashboardAnswered)"'; }
call_out() { read -r a d <<<"$(calls)"; [ -n "$a" ] && [ "$a" -gt "$d" ]; }
asked() { read -r a _ <<<"$(calls)"; echo "${a:-0}"; }
answered() { read -r _ d <<<"$(calls)"; echo "${d:-0}"; }
asked_ge() { [ "$(asked)" -ge "$1" ]; }
if rs_wait slow status.serviceStatus Running 60 && rs_wait fast status.serviceStatus Running 60; then
    SC=$(rs_field slow status.activeServiceStatus.rayClusterName)
    # 9 s: below the 10 s proxied deadline, so each of slow's calls is answered, late
    kcurl -X POST -H 'Content-Type: application/json' -d '{"ms":9000}' "/kubesim/ray/default/$SC/delay" >/dev/null
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"metadata":{"annotations":{"touch":"1"}}}' \
        $NSP/rayservices/slow >/dev/null
    # fast's config change is PUT while one of slow's calls is out and before it is answered:
    # a worker held by slow's call could PUT only after the answer. Up to 3 tries, each with
    # a fresh change and a fresh call out; a loaded machine that takes longer than the rest
    # of a 9 s call fails one try only, a held worker fails all of them.
    pass=""
    for i in 1 2 3; do
        wait_until "a dashboard call of slow is out" 40 call_out || break
        before=$(answered)
        rs_patch fast "{\"serveConfigV2\":$(rs_config "{v: $((i + 1))}" | jq -Rs .)}" || { not_ok "patch fast"; break; }
        wait_until "fast: config $((i + 1)) PUT" 40 rs_puts_ge fast $((i + 1)) || break
        after=$(answered)
        echo "# try $i: slow's answered calls $before before fast's change, $after at its PUT"
        if [ "$after" = "$before" ]; then pass=$i; break; fi
    done
    check "fast: its config PUT while one of slow's calls was out (try ${pass:-none})" [ -n "$pass" ]
    # 30 s: longer than the deadline; slow's calls now go unanswered
    kcurl -X POST -H 'Content-Type: application/json' -d '{"ms":30000}' "/kubesim/ray/default/$SC/delay" >/dev/null
    n0=$(asked)
    wait_until "two more of slow's calls asked on the 30 s head" 60 asked_ge $((n0 + 2))
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

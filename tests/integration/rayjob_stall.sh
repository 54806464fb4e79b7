#!/bin/bash
# deadline: 150
# rayjob_stall.sh - a slow Ray head delays only its own RayJob (ray-project/kuberay#2646,
# #3907, #4087). With one worker (`--workers 1`, the default), RayJob "slow" runs a long
# Ray job on a cluster whose dashboard answers 9 s late (kubesim's delay knob, below the
# 10 s proxied deadline, so each of slow's polls does get its answer). While one of slow's
# dashboard calls is out (kubesim counts the calls asked and answered), a new RayJob is
# reconciled: its status is set before that call has been answered. A controller whose
# worker waits for the dashboard cannot do that: the new RayJob's first reconcile would
# come only after the answer. The new RayJob then runs to Complete while slow's head stays
# slow; slow keeps Running (its answers are taken by later reconciles); deleting slow
# waits for the StopJob answer and then removes the finalizer.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
HTTP='"submissionMode":"HTTPMode"'
long='"runtimeEnvYAML":"env_vars:\n  KUBESIM_JOB_SECONDS: \"3600\"\n"'
short='"runtimeEnvYAML":"env_vars:\n  KUBESIM_JOB_SECONDS: \"2\"\n"'
rj_create slow "$HTTP,$long" || not_ok "create slow"
rj_wait slow status.jobDeploymentStatus Running 60 || exit 1
SC=$(rj_field slow status.rayClusterName)
kcurl -X POST -H 'Content-Type: application/json' -d '{"ms":9000}' \
    "/kubesim/ray/default/$SC/delay" >/dev/null || not_ok "delay slow's head"

# asked / answered dashboard calls of slow's cluster
calls() { kcurl /kubesim/ray/clusters | jq -r --arg c "$SC" \
    '.[] | select(.cluster == $c) | "\(.dashboardAsked) \(.dashboardAnswered)"'; }
call_out() { read -r a d <<<"$(calls)"; [ -n "$a" ] && [ "$a" -gt "$d" ]; }
answered() { read -r _ d <<<"$(calls)"; echo "$d"; }
has_status() { [ -n "$(rj_field "$1" status.jobDeploymentStatus)" ]; }

# up to 3 tries, each with a fresh RayJob and a fresh call of slow's out: a worker held
# by the call fails every one of them; a loaded machine that takes longer than the rest
# of a 9 s call to reconcile a new RayJob fails one only
pass=""
for i in 1 2 3; do
    wait_until "a dashboard call of slow is out" 40 call_out || break
    before=$(answered)
    rj_create "fast-$i" "$HTTP,$short" || { not_ok "create fast-$i"; break; }
    wait_until "fast-$i reconciled" 60 has_status "fast-$i" || break
    after=$(answered)
    echo "# try $i: slow's answered calls $before before fast-$i was created, $after when its status was set"
    if [ "$after" = "$before" ]; then pass=$i; break; fi
done
check "a new RayJob is reconciled while slow's dashboard call is out (try ${pass:-none})" [ -n "$pass" ]
if [ -n "$pass" ]; then
    rj_wait "fast-$pass" status.jobDeploymentStatus Complete 90 &&
        check "fast-$pass: SUCCEEDED while slow's head is slow" rj_is "fast-$pass" status.jobStatus SUCCEEDED
fi
answered_gt() { [ "$(answered)" -gt "$1" ]; }
n0=$(answered)
wait_until "another of slow's calls answered" 40 answered_gt "$n0"
check "slow: still Running on its slow head" rj_is slow status.jobDeploymentStatus Running
check "slow: no failed status check recorded" [ -z "$(rj_field slow status.jobStatusCheckFailureStartTime)" ]
kcurl -X DELETE $NSP/rayjobs/slow >/dev/null
gone() { [ "$(kcode $NSP/rayjobs/slow)" = 404 ]; }
wait_until "slow deleted once its StopJob was answered" 60 gone && ok "slow: deleted after its StopJob answer"
exit "$(lib_failures)"

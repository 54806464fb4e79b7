#!/bin/bash
# deadline: 90
# rayjob_crash.sh - `rayop controller rayjob` killed -9 while RayJobs run (K8sJobMode and
# HTTPMode): once right after the New -> Initializing status write, once while the
# RayCluster starts, once while the Ray job runs. Each restart resumes from the cached
# status: every Ray job is submitted exactly once (one job on its cluster's dashboard,
# under the submission id in status.jobId), one RayCluster and one submitter Job exist,
# and both RayJobs still complete.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
ENV='"runtimeEnvYAML":"env_vars:\n  KUBESIM_JOB_SECONDS: \"10\"\n"'
rj_create ck "\"submissionMode\":\"K8sJobMode\",$ENV" || not_ok "create ck"
rj_create ch "\"submissionMode\":\"HTTPMode\",$ENV" || not_ok "create ch"

crash() {  # crash WHY: kill -9 the rayjob controller and start a new one
    kill -9 "$RJ_CTL_PID" 2>/dev/null
    wait "$RJ_CTL_PID" 2>/dev/null
    echo "# killed -9 the rayjob controller: $1"
    rj_ctl_start
}
has_id() { [ -n "$(rj_field ck status.jobId)" ]; }
wait_until "ck has its submission id" 20 has_id && crash "right after the New -> Initializing write"
has_cluster() { rc_exists "$(rj_field ck status.rayClusterName)" && rc_exists "$(rj_field ch status.rayClusterName)"; }
wait_until "both RayClusters created" 20 has_cluster && crash "RayClusters starting"
running() { rj_is ck status.jobStatus RUNNING || rj_is ch status.jobStatus RUNNING; }
wait_until "a Ray job RUNNING" 40 running && crash "a Ray job running"

for j in ck ch; do
    if rj_wait $j status.jobDeploymentStatus Complete 60; then
        c=$(rj_field $j status.rayClusterName); id=$(rj_field $j status.jobId)
        dash "$c" /api/jobs/ >"$WORK/jobs-$j.json"
        check "$j: exactly one Ray job on its dashboard, submitted as $id" \
            [ "$(jq length <"$WORK/jobs-$j.json")" = 1 -a "$(json_get 0.submission_id <"$WORK/jobs-$j.json")" = "$id" ]
        check "$j: SUCCEEDED" rj_is $j status.jobStatus SUCCEEDED
        n=$(kcurl "$NSP/rayclusters?labelSelector=ray.io/originated-from-cr-name=$j" | jq '.items | length')
        check "$j: one RayCluster ($n)" [ "$n" = 1 ]
    fi
done
check "ck: one submitter Job" [ "$(kcurl /apis/batch/v1/namespaces/default/jobs | jq '[.items[] | select(.metadata.name == "ck")] | length')" = 1 ]
check "ch: no submitter Job in HTTPMode" [ "$(kcode /apis/batch/v1/namespaces/default/jobs/ch)" = 404 ]
exit "$(lib_failures)"

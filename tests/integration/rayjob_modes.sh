#!/bin/bash
# deadline: 90
# rayjob_modes.sh - `rayop controller rayjob` end to end in kubesim (with `rayop watcher`,
# `rayop controller raycluster`, kubesim's Job controller and simulated Ray dashboard,
# reached through the API server's service proxy): each submission mode runs a job to
# Complete/SUCCEEDED (K8sJobMode, HTTPMode, SidecarMode, InteractiveMode); a failing
# entrypoint ends Failed with reason AppFailed; a spec KubeRay rejects ends
# ValidationFailed with a Warning Event; the RayCluster is owned by the RayJob; Events
# and kuberay_job_* metrics are there.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
FAST='"runtimeEnvYAML":"env_vars:\n  KUBESIM_JOB_SECONDS: \"2\"\n"'
rj_create k8s "\"submissionMode\":\"K8sJobMode\",$FAST" || not_ok "create k8s"
rj_create http "\"submissionMode\":\"HTTPMode\",$FAST" || not_ok "create http"
rj_create sidecar "\"submissionMode\":\"SidecarMode\",$FAST" || not_ok "create sidecar"
rj_create inter '"submissionMode":"InteractiveMode"' || not_ok "create inter"
rj_create bad '"submissionMode":"HTTPMode","runtimeEnvYAML":"env_vars:\n  KUBESIM_JOB_SECONDS: \"1\"\n  KUBESIM_JOB_EXIT: \"1\"\n"' ||
    not_ok "create bad"
rj_create invalid '"suspend":true' || not_ok "create invalid"

rj_wait invalid status.jobDeploymentStatus ValidationFailed 20 &&
    check "a suspended RayJob without shutdownAfterJobFinishes: KubeRay's message" \
        rj_is invalid status.message "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"
ev_reason() {  # ev_reason RAYJOB REASON: an events.k8s.io Event about the RayJob
    kcurl /apis/events.k8s.io/v1/namespaces/default/events |
        jq -e --arg n "$1" --arg r "$2" '.items[] | select(.regarding.name == $n and .reason == $r)' >/dev/null
}
wait_until "Warning InvalidRayJobSpec Event for invalid" 10 ev_reason invalid InvalidRayJobSpec &&
    ok "Warning InvalidRayJobSpec Event for invalid"

# InteractiveMode waits for the user's job id; submit it ourselves through the proxy
rj_wait inter status.jobDeploymentStatus Waiting 40 && ok "InteractiveMode waits (Waiting)"
IC=$(rj_field inter status.rayClusterName)
kcurl -X POST -H 'Content-Type: application/json' -d '{"entrypoint":"python i.py","submission_id":"inter-1",
  "runtime_env":{"env_vars":{"KUBESIM_JOB_SECONDS":"1"}}}' "/api/v1/namespaces/default/services/$IC-head-svc:dashboard/proxy/api/jobs/" >/dev/null
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"jobId":"inter-1"}}' \
    $NSP/rayjobs/inter >/dev/null

for m in k8s http sidecar inter; do
    if rj_wait $m status.jobDeploymentStatus Complete 40; then
        check "$m: Complete with jobStatus SUCCEEDED, succeeded=1, endTime set" \
            [ "$(rj_field $m status.jobStatus)" = SUCCEEDED -a "$(rj_field $m status.succeeded)" = 1 \
              -a -n "$(rj_field $m status.endTime)" ]
    fi
done
check "inter ran the user's job id" rj_is inter status.jobId inter-1
sidecar_exited() {
    kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/node-type=head,ray.io/cluster=$(rj_field sidecar status.rayClusterName)" |
        jq -e '.items[0].status.containerStatuses[] | select(.name == "ray-job-submitter") |
               .state.terminated.exitCode == 0' >/dev/null
}
check "sidecar: Complete once its ray-job-submitter container exited 0 (no grace-period reason)" \
    sh -c "[ -z \"$(rj_field sidecar status.reason)\" ]" && check "sidecar: the submitter container terminated" sidecar_exited
K8S_CLUSTER=$(rj_field k8s status.rayClusterName)
check "k8s: cluster named k8s-xxxxx, jobId k8s-xxxxx" \
    sh -c "echo '$K8S_CLUSTER $(rj_field k8s status.jobId)' | grep -Eq '^k8s-[a-z0-9]{5} k8s-[a-z0-9]{5}$'"
check "k8s: the RayCluster is controlled by the RayJob" \
    [ "$(kcurl $NSP/rayclusters/$K8S_CLUSTER | json_get metadata.ownerReferences.0.uid)" = "$(rj_field k8s metadata.uid)" ]
check "k8s: the submitter Job exists and completed" \
    [ "$(kcurl /apis/batch/v1/namespaces/default/jobs/k8s | json_get status.succeeded)" = 1 ]
check "k8s: dashboardURL is the head Service FQDN" \
    rj_is k8s status.dashboardURL "$K8S_CLUSTER-head-svc.default.svc.cluster.local:8265"
check "k8s: the finalizer is set" rj_is k8s metadata.finalizers.0 ray.io/rayjob-finalizer
kcurl /api/v1/namespaces/default/services/k8s-head-svc >"$WORK/svc.json"
check "k8s: Service k8s-head-svc, owned by the RayJob, selects its RayCluster's head" \
    jq -e --arg c "$K8S_CLUSTER" --arg u "$(rj_field k8s metadata.uid)" '.spec.selector["ray.io/cluster"] == $c and
        .spec.selector["ray.io/node-type"] == "head" and .metadata.ownerReferences[0].uid == $u' "$WORK/svc.json" >/dev/null
check "k8s: the Ray job ran once on the dashboard" \
    [ "$(dash "$K8S_CLUSTER" /api/jobs/ | jq length)" = 1 ]
head_has_submitter() {
    kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/node-type=head,ray.io/cluster=$(rj_field sidecar status.rayClusterName)" |
        jq -e '.items[0].spec.containers[1].name == "ray-job-submitter" and .items[0].spec.restartPolicy == "Never"' >/dev/null
}
check "sidecar: the head Pod carries the ray-job-submitter container, restartPolicy Never" head_has_submitter

if rj_wait bad status.jobDeploymentStatus Failed 60; then
    check "a failing entrypoint: Failed, jobStatus FAILED, reason AppFailed, Ray's message" \
        [ "$(rj_field bad status.jobStatus)" = FAILED -a "$(rj_field bad status.reason)" = AppFailed ] &&
        rj_field bad status.message | grep -q 'failed with exit code 1'
fi
check "CreatedRayCluster Event for k8s" ev_reason k8s CreatedRayCluster
check "CreatedRayJobSubmitter Event for k8s" ev_reason k8s CreatedRayJobSubmitter
MP=$(grep '"serving metrics"' "$WORK/rayjob.log" | head -1 | sed 's/.*"port":"\([0-9]*\)".*/\1/')
curl -s "127.0.0.1:$MP/metrics" >"$WORK/metrics.txt"
check "kuberay_job_info and kuberay_job_deployment_status on /metrics" \
    grep -q 'kuberay_job_deployment_status{name="k8s",namespace="default",uid=".*",deployment_status="Complete"} 1' "$WORK/metrics.txt"
check "kuberay_job_execution_duration_seconds for the failed job" \
    grep -q 'kuberay_job_execution_duration_seconds{name="bad",namespace="default",uid=".*",job_deployment_status="Failed",retry_count="0"}' "$WORK/metrics.txt"
exit "$(lib_failures)"

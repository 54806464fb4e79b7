#!/bin/bash
# deadline: 120
# rayjob_selector.sh - KubeRay's ray-job.use-existing-raycluster.yaml against a RayCluster of
# the name it selects (ray-cluster.sample.yaml renamed): the submitter Job is built from the
# selected cluster's head template (its image), the job runs to Complete/SUCCEEDED, and the
# cluster is left alone. A second RayJob on the same cluster whose submitterPodTemplate has no
# image is refused by the API server; the Warning Event and the controller log carry the
# server's words (containers[0].image: Required value), not "invalid". The controller logs
# updateRayJobStatus at info only when a state changes.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
S=$RAYOP_SHARED/kuberay/samples
sed 's/^  name: raycluster-kuberay$/  name: ray-cluster-kuberay/' "$S/ray-cluster.sample.yaml" \
    >"$WORK/cluster.yaml"
check "the selected RayCluster is created" kubectl create -f "$WORK/cluster.yaml"
check "the sample RayJob is created" kubectl create -f "$S/ray-job.use-existing-raycluster.yaml"
J=rayjob-use-existing-raycluster
rj_wait $J status.jobDeploymentStatus Complete 90
check "$J: jobStatus SUCCEEDED" rj_is $J status.jobStatus SUCCEEDED
check "$J: runs on the selected cluster" rj_is $J status.rayClusterName ray-cluster-kuberay
img=$(kcurl /apis/batch/v1/namespaces/default/jobs/$J | jq -r '.spec.template.spec.containers[0].image')
want=$(kcurl $NSP/rayclusters/ray-cluster-kuberay | jq -r '.spec.headGroupSpec.template.spec.containers[0].image')
check "submitter image is the selected head's ($img)" [ -n "$want" -a "$img" = "$want" ]
check "the selected RayCluster is kept" rc_exists ray-cluster-kuberay

kcurl -X POST -H 'Content-Type: application/json' $NSP/rayjobs -d '{
  "apiVersion":"ray.io/v1","kind":"RayJob","metadata":{"name":"no-image"},
  "spec":{"entrypoint":"python -c 1","clusterSelector":{"ray.io/cluster":"ray-cluster-kuberay"},
    "submitterPodTemplate":{"spec":{"restartPolicy":"Never","containers":[{"name":"sub"}]}}}}' >/dev/null
ev_msg() { kcurl /apis/events.k8s.io/v1/namespaces/default/events | jq -r \
    '.items[] | select(.regarding.name == "no-image" and .reason == "FailedToCreateRayJobSubmitter") | .note'; }
has_cause() { ev_msg | grep -q 'containers\[0\]\.image: Required value'; }
wait_until "the Warning Event keeps the server's field cause" 60 has_cause &&
    ok "the Warning Event keeps the server's field cause: $(ev_msg | head -1)"
check "the controller log keeps it too" grep -q 'containers\[0\]\.image: Required value' "$WORK/rayjob.log"

same_state_info() {
    jq -c 'select(.msg == "updateRayJobStatus" and .level == "info" and
        .oldJobDeploymentStatus == .newJobDeploymentStatus and .oldJobStatus == .newJobStatus)' \
        "$WORK/rayjob.log" 2>/dev/null | wc -l
}
n=$(same_state_info)
check "updateRayJobStatus at info only on a change ($n without one)" [ "$n" -eq 0 ]
exit "$(lib_failures)"

#!/bin/bash
# deadline: 90
# rayjob_lifecycle.sh - RayJob lifecycle rules end to end in kubesim (HTTPMode, so the
# Ray dashboard behind the service proxy is the only moving part besides the RayCluster
# controller): backoffLimit retries with a new cluster name and submission id;
# activeDeadlineSeconds fires (DeadlineExceeded, no retry); shutdownAfterJobFinishes +
# ttlSecondsAfterFinished deletes the RayCluster and keeps the RayJob; deletionRules
# suspend the workers, delete the cluster, then the RayJob; suspend and resume;
# clusterSelector runs on an existing cluster and leaves it; deleting a running RayJob
# stops its Ray job.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
HTTP='"submissionMode":"HTTPMode"'
envy() { printf '"runtimeEnvYAML":"env_vars:\\n  KUBESIM_JOB_SECONDS: \\"%s\\"\\n  KUBESIM_JOB_EXIT: \\"%s\\"\\n"' "$1" "$2"; }

rj_create retry "$HTTP,\"backoffLimit\":1,$(envy 1 1)" || not_ok "create retry"
rj_create deadline "$HTTP,\"activeDeadlineSeconds\":6,\"backoffLimit\":2,$(envy 300 0)" || not_ok "create deadline"
rj_create ttl "$HTTP,\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":1,$(envy 1 0)" || not_ok "create ttl"
rj_create rules "$HTTP,$(envy 1 0),\"deletionStrategy\":{\"deletionRules\":[
  {\"condition\":{\"jobStatus\":\"SUCCEEDED\",\"ttlSeconds\":0},\"policy\":\"DeleteWorkers\"},
  {\"condition\":{\"jobStatus\":\"SUCCEEDED\",\"ttlSeconds\":4},\"policy\":\"DeleteCluster\"},
  {\"condition\":{\"jobStatus\":\"SUCCEEDED\",\"ttlSeconds\":8},\"policy\":\"DeleteSelf\"}]}" || not_ok "create rules"
rj_create susp "$HTTP,\"suspend\":true,\"shutdownAfterJobFinishes\":true,$(envy 1 0)" || not_ok "create susp"

ev() { kcurl /apis/events.k8s.io/v1/namespaces/default/events | jq -e --arg n "$1" --arg r "$2" \
    '.items[] | select(.regarding.name == $n and .reason == $r)' >/dev/null; }
has_rc() { [ -n "$(rj_field rules status.rayClusterName)" ]; }
wait_until "rules: a RayCluster name" 20 has_rc && RULES_RC=$(rj_field rules status.rayClusterName)

# an existing cluster for the clusterSelector jobs
kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d '{"apiVersion":"ray.io/v1",
  "kind":"RayCluster","metadata":{"name":"shared"},"spec":{"headGroupSpec":{"rayStartParams":{},
  "template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0",
  "ports":[{"containerPort":8265,"name":"dashboard"}]}]}}}}}' >/dev/null
SEL='"clusterSelector":{"ray.io/cluster":"shared"}'
rj_create sel "$HTTP,$SEL,\"shutdownAfterJobFinishes\":true,$(envy 1 0)" || not_ok "create sel"
rj_create long "$HTTP,$SEL,$(envy 300 0)" || not_ok "create long"

# ---- suspend: stays Suspended with nothing running, resumes when unsuspended ----
if rj_wait susp status.jobDeploymentStatus Suspended 30; then
    check "suspended: no RayCluster, no jobId" [ -z "$(rj_field susp status.rayClusterName)" -a \
        "$(kcurl "$NSP/rayclusters?labelSelector=ray.io/originated-from-cr-name=susp" | jq '.items | length')" = 0 ]
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"spec":{"suspend":false}}' \
        $NSP/rayjobs/susp >/dev/null
fi

# ---- deleting a running RayJob stops its Ray job ----
if rj_wait long status.jobStatus RUNNING 40; then
    LID=$(rj_field long status.jobId)
    kcurl -X DELETE $NSP/rayjobs/long >/dev/null
    lgone() { [ "$(kcode $NSP/rayjobs/long)" = 404 ]; }
    wait_until "the running RayJob is gone" 20 lgone && ok "the running RayJob is gone"
    check "its Ray job was stopped (STOPPED on the shared cluster's dashboard)" \
        [ "$(dash shared /api/jobs/$LID | json_get status)" = STOPPED ]
fi

# ---- backoffLimit: two attempts, each with its own cluster and submission id ----
if rj_wait retry status.jobDeploymentStatus Failed 60; then
    check "retry: failed=2, reason AppFailed" [ "$(rj_field retry status.failed)" = 2 -a \
        "$(rj_field retry status.reason)" = AppFailed ]
    n=$(kcurl /apis/events.k8s.io/v1/namespaces/default/events | jq -r '[.items[] |
        select(.regarding.name == "retry" and .reason == "CreatedRayCluster") | .note] | unique | length')
    check "retry: two RayClusters created, with different names ($n)" [ "$n" = 2 ]
    # the head Service is in the watcher's cache (created-by label) and follows the retry
    svc_follows() {
        [ "$(kcurl /api/v1/namespaces/default/services/retry-head-svc |
            jq -r '.spec.selector["ray.io/cluster"]')" = "$(rj_field retry status.rayClusterName)" ]
    }
    wait_until "retry: retry-head-svc selects the second cluster's head" 20 svc_follows &&
        ok "retry: retry-head-svc selects the second cluster's head"
    check "retry: retry-head-svc carries the created-by label the watcher caches by" \
        [ "$(kcurl /api/v1/namespaces/default/services/retry-head-svc |
            jq -r '.metadata.labels["app.kubernetes.io/created-by"]')" = kuberay-operator ]
    ev retry UpdatedService && ok "retry: UpdatedService event" || not_ok "retry: UpdatedService event"
fi

# ---- activeDeadlineSeconds ----
if rj_wait deadline status.jobDeploymentStatus Failed 40; then
    check "deadline: reason DeadlineExceeded, not retried (failed=1)" \
        [ "$(rj_field deadline status.reason)" = DeadlineExceeded -a "$(rj_field deadline status.failed)" = 1 ]
    rj_field deadline status.message | grep -q 'The RayJob has passed the activeDeadlineSeconds' &&
        ok "deadline: KubeRay's message" || not_ok "deadline: KubeRay's message"
fi

# ---- TTL cleanup ----
if rj_wait ttl status.jobDeploymentStatus Complete 40; then
    TC=$(rj_field ttl status.rayClusterName)
    wait_until "ttl: the RayCluster is deleted after the TTL" 20 rc_gone "$TC" &&
        ok "ttl: the RayCluster is deleted after the TTL"
    check "ttl: the RayJob stays" rj_is ttl status.jobDeploymentStatus Complete
fi

# ---- deletion rules (the RayJob deletes itself 8 s after it ends: no status read here) ----
if [ -n "$RULES_RC" ]; then
    wait_until "rules: DeleteWorkers suspends the worker groups (UpdatedRayCluster)" 30 ev rules UpdatedRayCluster &&
        ok "rules: DeleteWorkers suspends the worker groups (UpdatedRayCluster)"
    wait_until "rules: the RayCluster controller deleted the suspended workers" 10 ev "$RULES_RC" DeletedWorkerPod &&
        ok "rules: the RayCluster controller deleted the suspended workers"
    wait_until "rules: DeleteCluster deletes the RayCluster" 20 ev rules DeletedRayCluster &&
        ok "rules: DeleteCluster deletes the RayCluster"
    rgone() { [ "$(kcode $NSP/rayjobs/rules)" = 404 ]; }
    wait_until "rules: DeleteSelf deletes the RayJob" 20 rgone && ok "rules: DeleteSelf deletes the RayJob"
    check "rules: the RayCluster is gone" rc_gone "$RULES_RC"
fi

# ---- clusterSelector leaves the cluster; resume finished ----
rj_wait sel status.jobDeploymentStatus Complete 40 &&
    check "sel: ran on the shared cluster" [ "$(rj_field sel status.rayClusterName)" = shared ]
rj_wait susp status.jobDeploymentStatus Complete 60 && ok "susp: resumed and completed"
# by now sel has been Complete (shutdownAfterJobFinishes, TTL 0) for many reconciles
check "sel: the selected cluster is never deleted" rc_exists shared
exit "$(lib_failures)"

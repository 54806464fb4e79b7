#!/bin/bash
# deadline: 90
# rayjob_token_auth.sh - RayJobs on token-auth clusters (authOptions.mode: token, Ray >=
# 2.52) end to end in kubesim, whose simulated dashboard enforces the token as Ray does
# when the head Pod has RAY_AUTH_MODE=token (401 without it, 403 with a wrong one). Each
# submission mode must run to Complete: K8sJobMode and SidecarMode submitters read
# RAY_AUTH_TOKEN from the cluster's Secret, and the operator sends x-ray-authorization
# for HTTPMode submission and every status poll. A RayJob asking for K8s token auth is
# refused (ValidationFailed), as KubeRay does.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
FAST='"runtimeEnvYAML":"env_vars:\n  KUBESIM_JOB_SECONDS: \"2\"\n"'
export RJ_CLUSTER_EXTRA='"authOptions":{"mode":"token"},'
for m in K8sJobMode HTTPMode SidecarMode; do
    n=$(echo $m | tr 'A-Z' 'a-z' | sed 's/mode$//')
    rj_create "tok-$n" "\"submissionMode\":\"$m\",$FAST" || not_ok "create tok-$n"
done
RJ_CLUSTER_EXTRA='"authOptions":{"mode":"token","enableK8sTokenAuth":true},' \
    rj_create k8sauth "\"submissionMode\":\"HTTPMode\",$FAST" || not_ok "create k8sauth"
# k8sauth asks for Ray 2.55 so only the RayJob rule can refuse it
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d '{"spec":{"rayClusterSpec":{"rayVersion":"2.55.0"}}}' $NSP/rayjobs/k8sauth >/dev/null

rj_wait k8sauth status.jobDeploymentStatus ValidationFailed 30 &&
    check "k8sauth: KubeRay's message" rj_is k8sauth status.message \
        "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob"

for n in k8sjob http sidecar; do
    if rj_wait "tok-$n" status.jobDeploymentStatus Complete 60; then
        check "tok-$n: Complete with jobStatus SUCCEEDED" rj_is "tok-$n" status.jobStatus SUCCEEDED
    fi
done

# the dashboard really checks: through the service proxy without the header -> 401,
# a wrong token -> 403, the Secret's token -> 200
C=$(rj_field tok-http status.rayClusterName)
U="/api/v1/namespaces/default/services/$C-head-svc:dashboard/proxy/api/jobs/"
code=$(kcode "$U")
check "the token-auth dashboard answers 401 without a token ($code)" [ "$code" = 401 ]
kcurl "$U" | grep -q 'Unauthorized: Missing authentication token' &&
    ok "401 body is Ray's" || not_ok "401 body is Ray's"
code=$(kcode -H 'X-Ray-Authorization: Bearer wrong' "$U")
check "a wrong token gets 403 ($code)" [ "$code" = 403 ]
TOKEN=$(kcurl /api/v1/namespaces/default/secrets/$C | jq -r '.data.auth_token' | base64 -d)
code=$(kcode -H "X-Ray-Authorization: Bearer $TOKEN" "$U")
check "the cluster Secret's token gets 200 ($code)" [ "$code" = 200 ]
# the K8sJobMode submitter Pod carries the token env from the Secret
kcurl /apis/batch/v1/namespaces/default/jobs/tok-k8sjob | jq -e --arg c "$(rj_field tok-k8sjob status.rayClusterName)" \
    '.spec.template.spec.containers[0].env | (map(select(.name == "RAY_AUTH_MODE"))[0].value == "token") and
     (map(select(.name == "RAY_AUTH_TOKEN"))[0].valueFrom.secretKeyRef.name == $c)' >/dev/null &&
    ok "tok-k8sjob: submitter has RAY_AUTH_MODE and RAY_AUTH_TOKEN from the cluster Secret" ||
    not_ok "tok-k8sjob: submitter has RAY_AUTH_MODE and RAY_AUTH_TOKEN from the cluster Secret"
# the token never reaches the operator's log
if [ -n "$TOKEN" ] && grep -qF "$TOKEN" "$WORK"/*.log; then not_ok "the token is not logged"; else ok "the token is not logged"; fi
exit "$(lib_failures)"

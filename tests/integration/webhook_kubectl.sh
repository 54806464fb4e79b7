#!/bin/bash
# deadline: 60
# webhook_kubectl.sh - KubeRay's validating admission webhooks end to end: `rayop webhook`
# serves /validate-ray-io-v1-{raycluster,rayjob,rayservice} over HTTPS (a serving
# certificate from a private CA), kubesim calls the ValidatingWebhookConfiguration as
# kube-apiserver does (AdmissionReview v1, caBundle, failurePolicy, rules), and
# `kubectl apply` of an invalid RayCluster is refused at admission with KubeRay's message,
# a valid one is stored; RayJob names are checked too; PATCHes are reviewed as the object
# they produce (kubectl patch, kubectl annotate); the RayService webhook refuses a bad
# ray.io/initializing-timeout annotation; with the webhook down, Fail refuses and Ignore
# lets writes through.
. "$(dirname "$0")/lib.sh"

RAYOP=$LIB_ROOT/bin/rayop
[ -x "$RAYOP" ] || { not_ok "bin/rayop is built"; exit 1; }
command -v openssl >/dev/null || { skip "webhook through kubectl" "no openssl"; exit 0; }
start_kubesim || exit 1
WORK=$KUBESIM_DIR
C=$WORK/certs
mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$C/ca.key" \
    -out "$C/ca.crt" -days 1 -subj "/CN=rayop-webhook-ca" 2>/dev/null &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$C/tls.key" \
    -out "$C/tls.csr" -subj "/CN=webhook-service.system.svc" 2>/dev/null &&
printf 'subjectAltName=IP:127.0.0.1,DNS:webhook-service.system.svc\n' >"$C/ext" &&
openssl x509 -req -in "$C/tls.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial \
    -out "$C/tls.crt" -days 1 -extfile "$C/ext" 2>/dev/null || { not_ok "serving certificate made"; exit 1; }
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
wait_until "RayCluster CRD served" 20 kcurl -f /apis/ray.io/v1/rayclusters || exit 1

"$RAYOP" webhook --webhook-addr 127.0.0.1:0 --cert-dir "$C" 2>"$WORK/webhook.log" &
WPID=$!; _LIB_PIDS="$_LIB_PIDS $WPID"
wait_until "rayop webhook serves" 10 grep -q '"msg":"serving webhooks"' "$WORK/webhook.log" || exit 1
P=$(grep '"msg":"serving webhooks"' "$WORK/webhook.log" | sed 's/.*"port":"\([0-9]*\)".*/\1/')
CA=$(base64 -w0 <"$C/ca.crt")
vwc() {  # vwc FAILURE_POLICY: KubeRay's configuration (config/webhook), reached by URL
    cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: kuberay-validating-webhook-configuration
webhooks:
YAML
    for k in raycluster rayjob rayservice; do cat <<YAML
- name: v$k.kb.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: $1
  timeoutSeconds: 5
  clientConfig:
    url: https://127.0.0.1:$P/validate-ray-io-v1-$k
    caBundle: $CA
  rules:
  - apiGroups: [ray.io]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [${k}s]
YAML
    done
}
vwc Fail >"$WORK/vwc.yaml"
kubectl apply -f "$WORK/vwc.yaml" >"$WORK/vwc.out" 2>&1 && ok "kubectl apply of the ValidatingWebhookConfiguration" ||
    not_ok "kubectl apply of the ValidatingWebhookConfiguration" "$(cat "$WORK/vwc.out")"

rc_yaml() {  # rc_yaml NAME GROUP2: a RayCluster with groups "small" and GROUP2
    cat <<YAML
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: $1
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-head, image: rayproject/ray:2.52.0}]
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 1
    maxReplicas: 2
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-worker, image: rayproject/ray:2.52.0}]
  - groupName: $2
    replicas: 1
    minReplicas: 1
    maxReplicas: 2
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-worker, image: rayproject/ray:2.52.0}]
YAML
}
LONG=a-rather-long-raycluster-name-that-kuberay-refuses-at-54
rc_yaml "$LONG" other >"$WORK/long.yaml"
if kubectl apply -f "$WORK/long.yaml" >"$WORK/long.out" 2>&1; then
    not_ok "kubectl apply of a RayCluster with a 55-character name is refused" "$(cat "$WORK/long.out")"
else
    check "refused at admission with KubeRay's message ($(head -c 300 "$WORK/long.out"))" \
        grep -q "RayCluster name should be no more than 53 characters" "$WORK/long.out"
fi
check "nothing stored" [ "$(kcode /apis/ray.io/v1/namespaces/default/rayclusters/$LONG)" = 404 ]
rc_yaml dup small >"$WORK/dup.yaml"
if kubectl apply -f "$WORK/dup.yaml" >"$WORK/dup.out" 2>&1; then
    not_ok "duplicate worker group names are refused" "$(cat "$WORK/dup.out")"
else
    check "duplicate worker group names: spec.workerGroupSpecs[1] worker group names must be unique" \
        sh -c "grep -q 'spec.workerGroupSpecs\[1\]' '$WORK/dup.out' && grep -q 'worker group names must be unique' '$WORK/dup.out'"
fi
rc_yaml good other >"$WORK/good.yaml"
kubectl apply -f "$WORK/good.yaml" >"$WORK/good.out" 2>&1 && ok "a valid RayCluster is admitted" ||
    not_ok "a valid RayCluster is admitted" "$(cat "$WORK/good.out")"
# an update goes through the webhook too (a raw PUT of a duplicate group)
kcurl /apis/ray.io/v1/namespaces/default/rayclusters/good | jq '.spec.workerGroupSpecs[1].groupName = "small"' >"$WORK/put.json"
code=$(kcode -X PUT -H 'Content-Type: application/json' --data-binary @"$WORK/put.json" /apis/ray.io/v1/namespaces/default/rayclusters/good)
check "an UPDATE making a duplicate group is refused (422: $code)" [ "$code" = 422 ]
kcurl -X POST -H 'Content-Type: application/json' /apis/ray.io/v1/namespaces/default/rayjobs \
    -d '{"apiVersion":"ray.io/v1","kind":"RayJob","metadata":{"name":"job-with-a-name-that-is-longer-than-forty-seven-x"},"spec":{"entrypoint":"x"}}' >"$WORK/rj.json"
check "RayJob name rule: $(jq -r .message "$WORK/rj.json" | head -c 200)" \
    grep -q 'The RayJob metadata is invalid: RayJob name should be no more than 47 characters' "$WORK/rj.json"
# a PATCH is reviewed too, as the object it produces (kubectl patch: a merge patch)
if kubectl patch raycluster good --type merge -p "$(kcurl /apis/ray.io/v1/namespaces/default/rayclusters/good |
        jq -c '{spec: {workerGroupSpecs: [.spec.workerGroupSpecs[0], .spec.workerGroupSpecs[0]]}}')" >"$WORK/patch.out" 2>&1; then
    not_ok "a PATCH making a duplicate group is refused" "$(cat "$WORK/patch.out")"
else
    check "a PATCH making a duplicate group is refused ($(head -c 200 "$WORK/patch.out"))" \
        grep -q 'worker group names must be unique' "$WORK/patch.out"
fi
check "the refused PATCH changed nothing" \
    [ "$(kcurl /apis/ray.io/v1/namespaces/default/rayclusters/good | jq -r '.spec.workerGroupSpecs[1].groupName')" = other ]
kubectl patch raycluster good --type json -p '[{"op":"replace","path":"/spec/workerGroupSpecs/1/replicas","value":2}]' \
    >"$WORK/patch2.out" 2>&1 && ok "a valid PATCH is admitted" || not_ok "a valid PATCH is admitted" "$(cat "$WORK/patch2.out")"

# RayService: ValidateRayServiceMetadata, the ray.io/initializing-timeout annotation included
rs_yaml() {  # rs_yaml NAME TIMEOUT
    cat <<YAML
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: $1
  annotations:
    ray.io/initializing-timeout: "$2"
spec:
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray:2.52.0}]
YAML
}
P_RS='The RayService metadata is invalid: RayService annotations is invalid: annotation ray.io/initializing-timeout'
for bad in "-5m|must be a positive duration, got: -5m" "soon|has invalid format: soon" "-3|must be a positive integer (seconds), got: -3"; do
    v=${bad%%|*}; want=${bad#*|}
    rs_yaml rs-bad "$v" >"$WORK/rs-bad.yaml"
    if kubectl apply -f "$WORK/rs-bad.yaml" >"$WORK/rs-bad.out" 2>&1; then
        not_ok "a RayService with initializing-timeout \"$v\" is refused" "$(cat "$WORK/rs-bad.out")"
    else
        check "initializing-timeout \"$v\" refused: $want" grep -qF "$P_RS $want" "$WORK/rs-bad.out"
    fi
done
rs_yaml rs-good 90s >"$WORK/rs-good.yaml"
kubectl apply -f "$WORK/rs-good.yaml" >"$WORK/rs-good.out" 2>&1 && ok "a RayService with initializing-timeout 90s is admitted" ||
    not_ok "a RayService with initializing-timeout 90s is admitted" "$(cat "$WORK/rs-good.out")"
# kubectl annotate sends a PATCH
if kubectl annotate --overwrite rayservice rs-good ray.io/initializing-timeout=0s >"$WORK/rs-ann.out" 2>&1; then
    not_ok "kubectl annotate to a zero timeout (a PATCH) is refused" "$(cat "$WORK/rs-ann.out")"
else
    check "kubectl annotate to a zero timeout (a PATCH) is refused" \
        grep -qF "$P_RS must be a positive duration, got: 0s" "$WORK/rs-ann.out"
fi

# the webhook is down: Fail refuses, Ignore admits
kill "$WPID"; wait "$WPID" 2>/dev/null
rc_yaml down1 other >"$WORK/down1.yaml"
if kubectl apply -f "$WORK/down1.yaml" >"$WORK/down1.out" 2>&1; then
    not_ok "failurePolicy Fail: refused while the webhook is down" "$(cat "$WORK/down1.out")"
else
    check "failurePolicy Fail: refused while the webhook is down (failed calling webhook)" \
        grep -q 'failed calling webhook "vraycluster.kb.io"' "$WORK/down1.out"
fi
vwc Ignore >"$WORK/vwc2.yaml"
kubectl replace -f "$WORK/vwc2.yaml" >/dev/null 2>&1
kubectl apply -f "$WORK/down1.yaml" >"$WORK/down2.out" 2>&1 && ok "failurePolicy Ignore: admitted while the webhook is down" ||
    not_ok "failurePolicy Ignore: admitted while the webhook is down" "$(cat "$WORK/down2.out")"
exit "$(lib_failures)"

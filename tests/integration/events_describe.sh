#!/bin/bash
# deadline: 90
# events_describe.sh - rayop writes events.k8s.io/v1 Events; kubesim keeps both Event APIs as
# one resource, as a real API server does. So `kubectl describe raycluster` of an invalid
# RayCluster shows rayop's Warning in its Events section, `kubectl get events` (core/v1)
# lists it, and both API versions answer with the same object (same uid, converted fields).
. "$(dirname "$0")/lib_rayjob.sh"

rj_start || exit 1
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: bad-replicas
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 3
    maxReplicas: 1
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
YAML
v1_event() { kcurl /apis/events.k8s.io/v1/namespaces/default/events | jq -e \
    '.items[] | select(.regarding.name == "bad-replicas" and .type == "Warning")' >/dev/null; }
wait_until "rayop's Warning Event for bad-replicas" 60 v1_event && ok "rayop wrote a Warning (events.k8s.io/v1)"
kubectl describe raycluster bad-replicas >"$WORK/describe.out" 2>&1
check "kubectl describe shows the Warning" grep -Eq '^ +Warning +[A-Za-z]+ +.*minReplicas 3 greater than maxReplicas 1' "$WORK/describe.out"
check "kubectl describe has no 'Events: <none>'" sh -c "! grep -q '^Events: *<none>' '$WORK/describe.out'"
kubectl get events >"$WORK/events.out" 2>&1
check "kubectl get events lists it" grep -q 'raycluster/bad-replicas.*minReplicas 3 greater than maxReplicas 1' "$WORK/events.out"
core=$(kcurl /api/v1/namespaces/default/events | jq -c '[.items[] | select(.involvedObject.name == "bad-replicas")][0]')
name=$(echo "$core" | jq -r .metadata.name)
v1=$(kcurl /apis/events.k8s.io/v1/namespaces/default/events/$name)
check "core/v1 view: involvedObject, message, reportingComponent" [ "$(echo "$core" | jq -r '[.involvedObject.kind, (.message | test("minReplicas")), (.reportingComponent | length > 0)] | map(tostring) | join(",")')" = "RayCluster,true,true" ]
check "one object: same uid in both versions" [ "$(echo "$core" | jq -r .metadata.uid)" = "$(echo "$v1" | jq -r .metadata.uid)" ]
check "events.k8s.io/v1 view: regarding and note" [ "$(echo "$v1" | jq -r '.regarding.name + "," + (.note | test("minReplicas") | tostring)')" = "bad-replicas,true" ]
exit "$(lib_failures)"

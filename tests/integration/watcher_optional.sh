#!/bin/bash
# deadline: 90
# watcher_optional.sh - the optional types (the batch schedulers' PodGroups, whose CRDs
# the user may never install): `rayop watcher` lists each once, and on the 404 waits for
# its CRD with one watch of customresourcedefinitions (docs/watcher.md) instead of
# listing it again on a back-off. Installing the Volcano PodGroup CRD later brings the
# type in: listed, synced, and a PodGroup created afterwards is in the cache.
. "$(dirname "$0")/lib.sh"

start_kubesim || exit 1
start_operator raycluster "$LIB_ROOT/bin/rayop" || exit 1
VOLCANO=scheduling.volcano.sh/v1beta1/podgroups
XK8S=scheduling.x-k8s.io/v1alpha1/podgroups

synced() { grep -q '"all types synced"' "$WORK/watcher.log"; }
wait_until "the watcher synced (optional types absent)" 30 synced &&
    ok "the watcher synced (optional types absent)"
check "the Volcano PodGroup type is reported absent, to be watched for" \
    grep -q "\"optional type not served by the API server.*\"type\":\"$VOLCANO\"" "$WORK/watcher.log"
crd_watch() { grep '"user_agent":"rayop' "$KUBESIM_REQLOG" | grep '"verb":"watch"' |
              grep -q "customresourcedefinitions.*fieldSelector=metadata.name=podgroups.$1"; }
wait_until "one watch of the Volcano PodGroup CRD" 20 crd_watch scheduling.volcano.sh &&
    ok "the watcher watches for the Volcano PodGroup CRD"

# a scheduler-plugins PodGroup CRD first (a minimal one: the shared copy is a dangling
# link): once its type is listed, time has passed in which the old back-off (200 ms,
# doubling) would have listed the absent Volcano type again
kubectl create -f - >/dev/null 2>&1 <<'CRD'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: podgroups.scheduling.x-k8s.io}
spec:
  group: scheduling.x-k8s.io
  names: {kind: PodGroup, listKind: PodGroupList, plural: podgroups, singular: podgroup}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
CRD
listed() { grep -q "\"msg\":\"listed\",\"type\":\"$1\"" "$WORK/watcher.log"; }
wait_until "the scheduler-plugins PodGroup type listed once its CRD is installed" 30 listed "$XK8S" &&
    ok "the scheduler-plugins PodGroup type listed once its CRD is installed"
vlists() { grep '"user_agent":"rayop' "$KUBESIM_REQLOG" | grep '"verb":"list"' |
           grep -c '/apis/scheduling.volcano.sh/v1beta1/'; }
check "meanwhile the absent Volcano type was listed once (no 404 retries)" [ "$(vlists)" = 1 ]

kubectl create -f "$RAYOP_SHARED/crds/volcano/scheduling.volcano.sh_podgroups.yaml" >/dev/null 2>&1
wait_until "the Volcano PodGroup type listed once its CRD is installed" 30 listed "$VOLCANO" &&
    ok "the Volcano PodGroup type listed once its CRD is installed"
kubectl create -f - >/dev/null 2>&1 <<'PG'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg-later, namespace: default}
spec: {minMember: 1}
PG
cached() { "$OP_RAYOP" status --state-dir "$STATE" -o json 2>/dev/null |
           jq -e --arg t "$VOLCANO" 'any(.cache.types[]; .name == $t and .synced and .objects == 1)' >/dev/null; }
wait_until "a PodGroup created afterwards is in the cache" 20 cached &&
    ok "a PodGroup created afterwards is in the cache"
check "no sanitizer report" sh -c "! grep -l Sanitizer '$WORK'/*.log"

exit "$(lib_failures)"

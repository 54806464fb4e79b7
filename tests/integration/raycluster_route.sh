#!/bin/bash
# deadline: 90
# raycluster_route.sh - headGroupSpec.enableIngress on OpenShift (KubeRay v1.7
# reconcileRouteOpenShift): when the API server serves route.openshift.io (here a Route
# CRD made for the test, so kubesim's discovery lists the group), the head is exposed with
# an owned Route NAME-head-route (to the head Service, weight 100, the dashboard port,
# wildcardPolicy None, the cluster's annotations, a CreatedRoute Event), and no Ingress.
# A Route the user labelled ray.io/cluster=NAME is taken as the cluster's (none created).
. "$(dirname "$0")/lib_rayjob.sh"

start_route_crd() {
    kubectl apply -f - >/dev/null 2>&1 <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: routes.route.openshift.io
spec:
  group: route.openshift.io
  scope: Namespaced
  names: {plural: routes, singular: route, kind: Route, listKind: RouteList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
YAML
}

rj_start || exit 1
start_route_crd
wait_until "route.openshift.io served" 20 sh -c "kubectl api-versions | grep -q route.openshift.io/v1" || exit 1
RP=/apis/route.openshift.io/v1/namespaces/default/routes

mk() {  # mk NAME: a RayCluster with enableIngress and an annotation for the Route
    kcurl -X POST -H 'Content-Type: application/json' $NSP/rayclusters -d "{
      \"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",
      \"metadata\":{\"name\":\"$1\",\"annotations\":{\"haproxy.router.openshift.io/timeout\":\"5m\"}},
      \"spec\":{\"headGroupSpec\":{\"enableIngress\":true,\"rayStartParams\":{},
        \"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",
          \"ports\":[{\"containerPort\":8265,\"name\":\"dashboard\"}],
          \"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}}}" >"$WORK/create-$1.json"
}
mk web
route_there() { [ "$(kcode $RP/web-head-route)" = 200 ]; }
if wait_until "Route web-head-route created" 40 route_there; then
    kcurl $RP/web-head-route >"$WORK/route.json"
    UID_=$(kcurl $NSP/rayclusters/web | json_get metadata.uid)
    check "to the head Service, weight 100" [ "$(jq -c .spec.to <"$WORK/route.json")" = '{"kind":"Service","name":"web-head-svc","weight":100}' ]
    check "target port: the dashboard port" [ "$(jq -c .spec.port <"$WORK/route.json")" = '{"targetPort":8265}' ]
    check "wildcardPolicy None" [ "$(jq -r .spec.wildcardPolicy <"$WORK/route.json")" = None ]
    check "the cluster's annotations" [ "$(jq -r '.metadata.annotations["haproxy.router.openshift.io/timeout"]' <"$WORK/route.json")" = 5m ]
    check "labels ray.io/cluster and created-by" [ "$(jq -r '.metadata.labels["ray.io/cluster"] + " " + .metadata.labels["app.kubernetes.io/created-by"]' <"$WORK/route.json")" = "web kuberay-operator" ]
    check "owned by the RayCluster" [ "$(jq -r '.metadata.ownerReferences[0] | "\(.kind) \(.uid) \(.controller)"' <"$WORK/route.json")" = "RayCluster $UID_ true" ]
    created_event() { kcurl "/apis/events.k8s.io/v1/namespaces/default/events" | jq -e '.items[] | select(.reason == "CreatedRoute" and .regarding.name == "web")' >/dev/null; }
    wait_until "a CreatedRoute Event" 20 created_event && ok "a CreatedRoute Event"
fi
check "no Ingress on OpenShift" [ "$(kcode /apis/networking.k8s.io/v1/namespaces/default/ingresses/web-head-ingress)" = 404 ]

# a Route of the user's, labelled for cluster "mine": taken as the cluster's
kcurl -X POST -H 'Content-Type: application/json' $RP -d '{"apiVersion":"route.openshift.io/v1","kind":"Route",
  "metadata":{"name":"my-route","labels":{"ray.io/cluster":"mine"}},"spec":{"to":{"kind":"Service","name":"x"}}}' >/dev/null
mk mine
# the head Service comes after the Route step in a reconcile (and only when it succeeded)
reconciled() { [ "$(kcode /api/v1/namespaces/default/services/mine-head-svc)" = 200 ]; }
wait_until "mine reconciled past the Route step (its head Service made)" 40 reconciled
check "no second Route for a cluster that has one" [ "$(kcode $RP/mine-head-route)" = 404 ]
exit "$(lib_failures)"

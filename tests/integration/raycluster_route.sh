#!/bin/bash
# deadline: 90
# raycluster_route.sh - headGroupSpec.enableIngress on OpenShift (KubeRay v1.7
# reconcileRouteOpenShift): when the API server serves route.openshift.io (here a Route
# CRD made for the test, so kubesim's discovery lists the group), the head is exposed with
# an owned Route NAME-head-route (to the head Service, weight 100, the dashboard port,
# wildcardPolicy None, the cluster's annotations, a CreatedRoute Event), and no Ingress.
# A Route the user labelled ray.io/cluster=NAME is taken as the cluster's (none created).
# OpenShift is detected at start-up, as KubeRay does: USE_INGRESS_ON_OPENSHIFT=true keeps the
# Ingress; an API server whose groups cannot be read stops the controller (exit 1).
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

# KubeRay asks whether this is OpenShift once, at start-up: the group is served first
start_kubesim --nodes 4 --node-cpu 16 --node-memory 64Gi --pod-start-ms 100 --pod-ready-ms 100 || exit 1
start_route_crd
wait_until "route.openshift.io served" 20 sh -c "kubectl api-versions | grep -q route.openshift.io/v1" || exit 1
start_operator rayjob "$RJ_RAYOP" --enable-leader-election false || exit 1
CTL_PID=$!
RJ_RAYOP=$OP_RAYOP
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

# USE_INGRESS_ON_OPENSHIFT=true: an Ingress on OpenShift, as KubeRay's ShouldUseIngressOnOpenShift
kill "$CTL_PID" 2>/dev/null
wait "$CTL_PID" 2>/dev/null
USE_INGRESS_ON_OPENSHIFT=true "$OP_RAYOP" controller raycluster --kubeconfig "$KUBECONFIG" \
    --state-dir "$STATE" --enable-leader-election false --metrics-addr 0 \
    --health-probe-bind-address 0 2>"$WORK/raycluster-ingress.log" &
_LIB_PIDS="$_LIB_PIDS $!"
mk ing
ing_there() { [ "$(kcode /apis/networking.k8s.io/v1/namespaces/default/ingresses/ing-head-ingress)" = 200 ]; }
wait_until "USE_INGRESS_ON_OPENSHIFT=true: Ingress ing-head-ingress made on OpenShift" 40 ing_there
check "...and no Route" [ "$(kcode $RP/ing-head-route)" = 404 ]

# the OpenShift question cannot be answered: the controller stops at start-up, as KubeRay's
# exitOnError("unable to detect cluster type (OpenShift vs Kubernetes)")
cat >"$WORK/stub.py" <<'PY'
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden"}')
    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$WORK/stub.py" >"$WORK/stub.port" &
_LIB_PIDS="$_LIB_PIDS $!"
wait_until "a stub API server that forbids everything" 20 test -s "$WORK/stub.port"
cat >"$WORK/stub.kc" <<KC
apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: "http://127.0.0.1:$(cat "$WORK/stub.port")"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: s, user: u}}]
current-context: c
KC
"$OP_RAYOP" controller raycluster --kubeconfig "$WORK/stub.kc" --state-dir "$WORK/stub-state" \
    --enable-leader-election false --metrics-addr 0 --health-probe-bind-address 0 \
    >"$WORK/stub-ctl.log" 2>&1 &
STUB_CTL=$!
_LIB_PIDS="$_LIB_PIDS $STUB_CTL"
exited() { ! kill -0 "$STUB_CTL" 2>/dev/null; }
if wait_until "discovery forbidden: the controller stops at start-up" 40 exited; then
    wait "$STUB_CTL"
    check "with exit status 1" [ $? = 1 ]
    check "saying KubeRay's words" grep -q '"unable to detect cluster type (OpenShift vs Kubernetes)".*failed to retrieve server API groups' "$WORK/stub-ctl.log"
fi
exit "$(lib_failures)"

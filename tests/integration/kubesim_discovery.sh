#!/bin/bash
# deadline: 120
# kubesim_discovery.sh - what kubesim renders from its registry, checked over the wire and
# with the real kubectl binaries of this image: legacy and aggregated discovery
# (content types decide), the protobuf /openapi/v2, the /openapi/v3 root and documents
# (custom group-versions only), `kubectl explain` (1.27, 1.33), Tables (`get -o wide`
# columns), `kubectl apply` of a Pod still computing a strategic merge patch from kubectl's
# compiled types, server-side validation trusted for custom resources, and TLS with the
# generated CA.
. "$(dirname "$0")/lib.sh"

K133=${KUBECTL_1_33:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
K127=${KUBECTL_1_27:-/usr/lib/google-cloud-sdk/bin/kubectl.1.27}
SHARED=${RAYOP_SHARED:-$LIB_ROOT/../shared}
T=$(mktemp -d /tmp/kubesim-discovery.XXXXXX)
_LIB_DIRS="$_LIB_DIRS $T"
AGG_V2='application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json'
AGG_V2B1='application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json'

k() { local bin=$1; shift; "$bin" --kubeconfig "$KUBECONFIG" --cache-dir "$T/cache-$(basename "$bin")" "$@"; }
has() { grep -Eq -- "$2" "$1"; }

start_kubesim || exit 1
ok "kubesim started at $KUBESIM_URL"

# ---- discovery over the wire -----------------------------------------------------------
kcurl -D "$T/h" -H "Accept: $AGG_V2" /apis >"$T/agg"
check "/apis with the aggregated Accept answers the v2 content type" \
    grep -qi '^content-type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' "$T/h"
check "... an APIGroupDiscoveryList" [ "$(json_get kind <"$T/agg")" = APIGroupDiscoveryList ]
kcurl -D "$T/h" -H "Accept: $AGG_V2B1" /api >"$T/aggb"
check "/api with a v2beta1-only Accept (kubectl 1.27) answers v2beta1" \
    grep -qi 'content-type: application/json;g=apidiscovery.k8s.io;v=v2beta1' "$T/h"
check "... whose core group has the empty name" [ "$(json_get items.0.metadata.name <"$T/aggb")" = "" ]
kcurl -D "$T/h" /api >"$T/api"
check "/api without it is the legacy APIVersions" [ "$(json_get kind <"$T/api")" = APIVersions ]
kcurl /api/v1 >"$T/v1"
check "/api/v1 lists pods/status" grep -q '"name":"pods/status"' "$T/v1"

# ---- OpenAPI -------------------------------------------------------------------------
kcurl -D "$T/h" -o "$T/v2.pb" /openapi/v2
check "/openapi/v2 is application/octet-stream" grep -qi '^content-type: application/octet-stream' "$T/h"
check "... and starts with the protobuf field swagger=\"2.0\"" \
    [ "$(head -c 5 "$T/v2.pb" | od -An -tx1 | tr -d ' \n')" = 0a03322e30 ]

[ -x "$K133" ] || { not_ok "kubectl 1.33 at $K133"; exit 1; }
k "$K133" create -f "$SHARED/kuberay/crds/ray.io_rayclusters.yaml" \
    -f "$SHARED/kuberay/crds/ray.io_rayjobs.yaml" >"$T/crd.out" 2>&1
check "the RayCluster and RayJob CRDs are created" has "$T/crd.out" 'rayjobs.ray.io created'
wait_until "ray.io/v1 is served" 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' $KUBESIM_URL/apis/ray.io/v1)\" = 200 ]"

kcurl /openapi/v3 >"$T/v3root"
url=$(json_get 'paths.apis/ray\.io/v1.serverRelativeURL' <"$T/v3root" 2>/dev/null)
[ -n "$url" ] || url=$(grep -o '"/openapi/v3/apis/ray.io/v1?hash=[0-9A-F]*"' "$T/v3root" | tr -d '"')
check "/openapi/v3 lists apis/ray.io/v1 with a hash" [ -n "$url" ]
check "/openapi/v3 does not list api/v1 (kubectl keeps its compiled SMP metadata)" \
    sh -c "! grep -q '\"api/v1\"' '$T/v3root'"
kcurl "$url" >"$T/v3doc"
check "the ray.io/v1 document has the RayCluster schema" grep -q '"io.ray.v1.RayCluster"' "$T/v3doc"
check "... and PATCH operations declaring fieldValidation" grep -q '"name":"fieldValidation"' "$T/v3doc"

# ---- kubectl ------------------------------------------------------------------------------
k "$K133" api-resources >"$T/ar" 2>&1
check "kubectl 1.33 api-resources shows pods with short name po" has "$T/ar" '^pods +po +v1 +true +Pod'
check "... and rayclusters" has "$T/ar" '^rayclusters +ray.io/v1 +true +RayCluster'
for bin in "$K133" "$K127"; do
    [ -x "$bin" ] || continue
    v=$(basename "$bin")
    k "$bin" explain raycluster.spec.headGroupSpec >"$T/explain" 2>&1
    check "$v explain raycluster.spec.headGroupSpec" has "$T/explain" 'FIELD: +headGroupSpec <Object>'
    check "$v explain lists the head group's fields" has "$T/explain" 'rayStartParams'
done

k "$K133" apply -f "$SHARED/kuberay/samples/ray-cluster.sample.yaml" >"$T/apply" 2>&1
check "kubectl 1.33 apply of the RayCluster sample" has "$T/apply" 'raycluster.ray.io/raycluster-kuberay created'
check "... sent fieldValidation=Strict (server-side validation trusted)" \
    grep -q '"method":"POST","path":"/apis/ray.io/v1/namespaces/default/rayclusters","query":"[^"]*fieldValidation=Strict' "$KUBESIM_REQLOG"
k "$K133" get rayclusters -o wide >"$T/rc" 2>&1
check "get rayclusters -o wide has the printer columns" \
    has "$T/rc" '^NAME +DESIRED WORKERS +AVAILABLE WORKERS +CPUS +MEMORY +GPUS +TPUS +STATUS +AGE +HEAD POD IP +HEAD SERVICE IP'
check "... and the object's row with an age" has "$T/rc" '^raycluster-kuberay .* [0-9]+s'
k "$K133" get all >"$T/all" 2>&1
check "get all includes the RayCluster (category all)" has "$T/all" 'raycluster.ray.io/raycluster-kuberay'

cat >"$T/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {v: "1"}}
spec:
  containers:
  - {name: a, image: busybox}
  - {name: b, image: busybox}
EOF
sed 's/v: "1"/v: "2"/; s/{name: b, image: busybox}/{name: b, image: busybox:1.36}/' "$T/pod.yaml" >"$T/pod2.yaml"
k "$K133" apply -f "$T/pod.yaml" >/dev/null 2>&1
k "$K133" apply -f "$T/pod2.yaml" >"$T/pod.out" 2>&1
check "re-applying a changed Pod works (strategic merge patch)" has "$T/pod.out" 'pod/web configured'
k "$K133" get pod web -o 'jsonpath={.metadata.labels.v} {.spec.containers[*].image}' >"$T/pod.get" 2>&1
check "... merged by container name" [ "$(cat "$T/pod.get")" = "2 busybox busybox:1.36" ]
k "$K133" get pods -o wide >"$T/pods" 2>&1
check "get pods -o wide has the real columns" \
    has "$T/pods" '^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES'
check "... and computes READY from the containers" has "$T/pods" '^web +0/2 '
stop_kubesim >/dev/null

# ---- TLS with the generated CA ----------------------------------------------------------
start_kubesim --tls || exit 1
check "TLS: ca.crt and server key written" [ -s "$KUBESIM_DIR/ca.crt" ]
check "TLS: curl verifies the server against the CA" \
    curl -sS --cacert "$KUBESIM_CA" -H "Authorization: Bearer $KUBESIM_TOKEN" -o /dev/null "$KUBESIM_URL/version"
check "TLS: openssl verifies it for localhost too" sh -c \
    "echo | openssl s_client -connect ${KUBESIM_URL#https://} -servername localhost -verify_hostname localhost -verify_return_error -CAfile '$KUBESIM_CA' >/dev/null 2>&1"
k "$K133" get ns >"$T/tls" 2>&1
check "TLS: kubectl 1.33 works with the generated kubeconfig" has "$T/tls" '^default +Active'
exit 0

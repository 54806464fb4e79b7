#!/bin/bash
# deadline: 60
# kubesim_basic.sh - bin/kubesim over plain HTTP and TLS, driven with curl:
# discovery, ConfigMap and Pod CRUD (409 on a stale resourceVersion, merge
# patch), watch streaming, error Status bodies (404/405/415/400/413/401/403),
# the request log, no leaked watch threads, and a clean SIGTERM.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d /tmp/kubesim-basic.XXXXXX)
_LIB_DIRS="$_LIB_DIRS $T"
NS=/api/v1/namespaces/default

status_is() {  # status_is FILE CODE REASON: a Status object with that code and reason
    [ "$(json_get kind <"$1")" = Status ] && [ "$(json_get code <"$1")" = "$2" ] &&
        [ "$(json_get reason <"$1")" = "$3" ]
}
threads() { awk '/^Threads:/ {print $2}' "/proc/$KUBESIM_PID/status"; }

start_kubesim || exit 1
ok "kubesim started at $KUBESIM_URL"
check "kubeconfig is mode 0600" [ "$(stat -c %a "$KUBECONFIG")" = 600 ]
check "kubeconfig skips TLS verification for http (client-node needs it)" \
    grep -q 'insecure-skip-tls-verify: true' "$KUBECONFIG"

# ---- discovery ---------------------------------------------------------------------
kcurl /version >"$T/v"
check "/version has gitVersion" [ -n "$(json_get gitVersion <"$T/v")" ]
# The connection pool (kubesim/api/server.c) bounds request headers: a 20 KB header (a long
# bearer token, many impersonation headers) must still be served; 40 KB gets 431.
big=$(head -c 20000 /dev/zero | tr '\0' a)
check "a 20 KB request header is served" \
    [ "$(kcurl -o /dev/null -w '%{http_code}' -H "X-Big: $big" /version)" = 200 ]
big=$(head -c 40000 /dev/zero | tr '\0' a)
check "a 40 KB request header gets 431" \
    [ "$(kcurl -o /dev/null -w '%{http_code}' -H "X-Big: $big" /version)" = 431 ]
kcurl /api >"$T/api"
check "/api is APIVersions with v1" [ "$(json_get kind <"$T/api")" = APIVersions ] 
kcurl /apis >"$T/apis"
apis_ok() { [ "$(json_get kind <"$T/apis")" = APIGroupList ] && grep -q '"batch"' "$T/apis"; }
check "/apis is an APIGroupList naming batch" apis_ok
kcurl /api/v1 >"$T/v1"
check "/api/v1 lists configmaps and pods" \
    sh -c "grep -q '\"name\":\"configmaps\"' '$T/v1' && grep -q '\"name\":\"pods\"' '$T/v1'"
kcurl /apis/batch/v1 >"$T/batch"
check "/apis/batch/v1 lists jobs" grep -q '"name":"jobs"' "$T/batch"
ct=$(kcurl -o /dev/null -w '%{content_type}' \
    -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' /apis)
check "aggregated discovery answers with its own Content-Type" \
    [ "$ct" = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" ]
ct=$(kcurl -o /dev/null -w '%{content_type}' /apis)
check "legacy discovery is application/json" [ "$ct" = "application/json" ]
ct=$(kcurl -o /dev/null -w '%{http_code} %{content_type}' \
    -H 'Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf' '/openapi/v2?timeout=32s')
check "/openapi/v2 is 200 application/octet-stream" [ "$ct" = "200 application/octet-stream" ]
check "/healthz answers ok" [ "$(kcurl /healthz)" = ok ]
TABLE='Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'
kcurl -H "$TABLE" '/api/v1/namespaces?limit=500' >"$T/tbl"
table_ok() {
    [ "$(json_get kind <"$T/tbl")" = Table ] && [ -n "$(json_get metadata.resourceVersion <"$T/tbl")" ] &&
        [ "$(json_get rows.0.object.kind <"$T/tbl")" = PartialObjectMetadata ]
}
check "a Table Accept gets a Table whose rows carry PartialObjectMetadata" table_ok
kcurl -H "$TABLE" '/api/v1/namespaces?includeObject=Object' >"$T/tblo"
check "includeObject=Object puts whole objects in the rows" \
    [ "$(json_get rows.0.object.kind <"$T/tblo")" = Namespace ]
kcurl -H 'Accept: application/vnd.kubernetes.protobuf,application/json' -D "$T/pb.hdr" -o "$T/pb.json" /api/v1/namespaces
check "a protobuf-first Accept is answered with JSON" \
    grep -qi '^Content-Type: application/json' "$T/pb.hdr"

# ---- ConfigMap CRUD ------------------------------------------------------------------
cat >"$T/cm.json" <<'EOF'
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","labels":{"app":"basic"}},"data":{"a":"1"}}
EOF
code=$(kcode -X POST -H 'Content-Type: application/json' --data-binary @"$T/cm.json" "$NS/configmaps")
check "create ConfigMap is 201" [ "$code" = 201 ]
kcurl -X POST -H 'Content-Type: application/json' --data-binary @"$T/cm.json" "$NS/configmaps" >"$T/dup"
check "create again is 409 AlreadyExists" status_is "$T/dup" 409 AlreadyExists
kcurl "$NS/configmaps/cm1" >"$T/cm1"
rv1=$(json_get metadata.resourceVersion <"$T/cm1")
check "get returns the object with data and a resourceVersion" \
    [ "$(json_get data.a <"$T/cm1")" = 1 -a -n "$rv1" ]
kcurl "$NS/configmaps?labelSelector=app%3Dbasic" >"$T/list"
list_ok() {
    [ "$(json_get items.0.metadata.name <"$T/list")" = cm1 ] &&
        [ -n "$(json_get metadata.resourceVersion <"$T/list")" ] &&
        [ "$(json_get kind <"$T/list")" = ConfigMapList ]
}
check "list by label finds it and carries a list resourceVersion" list_ok
python3 - "$T/cm1" "$T/upd.json" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1])); o["data"]["a"] = "2"
json.dump(o, open(sys.argv[2], "w"))
EOF
code=$(kcode -X PUT -H 'Content-Type: application/json' --data-binary @"$T/upd.json" "$NS/configmaps/cm1")
check "update with the current resourceVersion is 200" [ "$code" = 200 ]
kcurl -X PUT -H 'Content-Type: application/json' --data-binary @"$T/upd.json" "$NS/configmaps/cm1" >"$T/stale"
check "update with a stale resourceVersion is 409 Conflict" status_is "$T/stale" 409 Conflict
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
    --data-binary '{"data":{"b":"3"},"metadata":{"labels":{"patched":"yes"}}}' "$NS/configmaps/cm1" >"$T/patched"
patch_ok() {
    [ "$(json_get data.b <"$T/patched")" = 3 ] && [ "$(json_get data.a <"$T/patched")" = 2 ] &&
        [ "$(json_get metadata.labels.patched <"$T/patched")" = yes ]
}
check "merge patch adds fields and keeps others" patch_ok
code=$(kcode -X DELETE -H 'Content-Type: application/json' --data-binary '{"propagationPolicy":"Background"}' \
    "$NS/configmaps/cm1")
check "delete ConfigMap is 200" [ "$code" = 200 ]
kcurl "$NS/configmaps/cm1" >"$T/gone"
check "get after delete is a 404 NotFound Status" status_is "$T/gone" 404 NotFound

# ---- Pod CRUD --------------------------------------------------------------------------
cat >"$T/pod.json" <<'EOF'
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","labels":{"app":"basic"}},
 "spec":{"containers":[{"name":"c","image":"busybox"}]}}
EOF
code=$(kcode -X POST -H 'Content-Type: application/json' --data-binary @"$T/pod.json" "$NS/pods")
check "create Pod is 201" [ "$code" = 201 ]
kcurl "$NS/pods/p1" >"$T/p1"
check "get Pod returns it" [ "$(json_get spec.containers.0.image <"$T/p1")" = busybox ]
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
    --data-binary '{"metadata":{"annotations":{"note":"x"}}}' "$NS/pods/p1" >"$T/p1p"
check "merge patch on a Pod" [ "$(json_get metadata.annotations.note <"$T/p1p")" = x ]
code=$(kcode -X DELETE "$NS/pods/p1?gracePeriodSeconds=0")
check "delete Pod (grace 0) is 200, as the real server answers" [ "$code" = 200 ]
pod_gone() { [ "$(kcode "$NS/pods/p1")" = 404 ]; }
wait_until "Pod is gone after delete" 10 pod_gone &&
    ok "Pod is gone after delete"

# ---- a custom resource: Warning headers, 415 for SMP, Success Status on delete ---------------
cat >"$T/crd.json" <<'EOF'
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
   "properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}}}]}}
EOF
code=$(kcode -X POST -H 'Content-Type: application/json' --data-binary @"$T/crd.json" \
    /apis/apiextensions.k8s.io/v1/customresourcedefinitions)
check "create a CRD is 201" [ "$code" = 201 ]
WID=/apis/example.com/v1/namespaces/default/widgets
widgets_served() { [ "$(kcode "$WID")" = 200 ]; }
wait_until "the CRD's resource is served" 10 widgets_served && ok "the CRD's resource is served"
kcurl -D "$T/w.hdr" -o "$T/w.json" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"foo":2}}' \
    "$WID?fieldValidation=Warn"
check "an unknown field comes back as a Warning header" \
    grep -qi '^Warning: 299 - "unknown field \\"spec.foo\\""' "$T/w.hdr"
kcurl -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' -d '{"spec":{"size":2}}' \
    "$WID/w" >"$T/wsmp"
check "strategic merge patch on a custom resource is 415" status_is "$T/wsmp" 415 UnsupportedMediaType
kcurl -X DELETE "$WID/w" >"$T/wdel"
wdel_ok() {
    [ "$(json_get status <"$T/wdel")" = Success ] && [ "$(json_get details.name <"$T/wdel")" = w ] &&
        [ "$(json_get details.kind <"$T/wdel")" = widgets ] && [ -n "$(json_get details.uid <"$T/wdel")" ]
}
check "deleting a custom resource answers a Success Status with details" wdel_ok
for n in a b c; do
    kcurl -o /dev/null -X POST -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"$n\",\"labels\":{\"set\":\"x\"}}}" "$WID"
done
kcurl -X DELETE "$WID?labelSelector=set%3Dx" >"$T/dc"
dc_ok() { [ "$(json_get kind <"$T/dc")" = WidgetList ] && [ "$(json_get items.2.metadata.name <"$T/dc")" = c ]; }
check "deletecollection answers the list of what it deleted" dc_ok
kcurl "$WID" >"$T/dcl"
check "deletecollection removed them" [ "$(json_get items <"$T/dcl")" = "[]" ]

# ---- watch ------------------------------------------------------------------------------
base_threads=$(threads)
kcurl "$NS/configmaps" >"$T/l0"
rv=$(json_get metadata.resourceVersion <"$T/l0")
curl -sS -N "$KUBESIM_URL$NS/configmaps?watch=true&resourceVersion=$rv" >"$T/watch.out" 2>"$T/watch.err" &
wpid=$!
wait_until "watch request reached the server" 10 grep -q '"verb":"watch"' "$KUBESIM_REQLOG"
sed 's/"cm1"/"w1"/' "$T/cm.json" >"$T/w1.json"
kcode -X POST -H 'Content-Type: application/json' --data-binary @"$T/w1.json" "$NS/configmaps" >/dev/null
wait_until "watch streams the ADDED event" 10 grep -q '"type":"ADDED".*"name":"w1"' "$T/watch.out" &&
    ok "watch streams the ADDED event"
kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' --data-binary '{"data":{"z":"1"}}' \
    "$NS/configmaps/w1" >/dev/null
wait_until "watch streams the MODIFIED event" 10 grep -q '"type":"MODIFIED".*"name":"w1"' "$T/watch.out" &&
    ok "watch streams the MODIFIED event"
check "every watch line is one JSON event" python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line); assert e["type"] in ("ADDED","MODIFIED","DELETED") and e["object"]["kind"] == "ConfigMap"
' "$T/watch.out"
kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
threads_back() { [ "$(threads)" -le "$base_threads" ]; }
wait_until "watch thread ends after the client leaves" 10 threads_back &&
    ok "watch thread ends after the client leaves (threads back to $base_threads)"

# watch with resourceVersion=0 starts with synthetic ADDED events; timeoutSeconds ends it cleanly
KCURL_MAX_TIME=10 kcurl -N "$NS/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1" >"$T/w0"
rc=$?
check "a watch with timeoutSeconds ends cleanly (terminating chunk)" [ $rc = 0 ]
check "resourceVersion=0 replays current objects as ADDED" grep -q '"type":"ADDED".*"name":"w1"' "$T/w0"
kcurl -N "/api/v1/watch/namespaces/default/configmaps/w1?timeoutSeconds=1" >"$T/wl"
check "legacy /watch/ path with a name" grep -q '"name":"w1"' "$T/wl"

# ---- errors --------------------------------------------------------------------------------
kcurl /api/v1/nonsense >"$T/e404"
check "unknown resource is a 404 NotFound Status" status_is "$T/e404" 404 NotFound
kcurl /no/such/path >"$T/e404b"
check "unknown path is a 404 NotFound Status" status_is "$T/e404b" 404 NotFound
kcurl -X PUT -H 'Content-Type: application/json' -d '{}' "$NS/configmaps" >"$T/e405"
check "PUT on a collection is a 405 MethodNotAllowed Status" status_is "$T/e405" 405 MethodNotAllowed
kcurl -X PATCH -H 'Content-Type: application/json' -d '{}' "$NS/configmaps/w1" >"$T/e415"
check "PATCH with application/json is a 415 UnsupportedMediaType Status" \
    status_is "$T/e415" 415 UnsupportedMediaType
kcurl -X POST -H 'Content-Type: application/json' -d '{"metadata":' "$NS/configmaps" >"$T/e400"
check "bad JSON is a 400 BadRequest Status" status_is "$T/e400" 400 BadRequest
kcurl "$NS/configmaps?limit=abc" >"$T/e400b"
check "a malformed limit is a 400 BadRequest Status" status_is "$T/e400b" 400 BadRequest
head -c $((3 * 1024 * 1024 + 10)) /dev/zero | tr '\0' 'a' >"$T/big"
kcurl -X POST -H 'Content-Type: application/json' --data-binary @"$T/big" "$NS/configmaps" >"$T/e413"
check "a body over 3 MiB is a 413 RequestEntityTooLarge Status" \
    status_is "$T/e413" 413 RequestEntityTooLarge
# protobuf (what kubectl 1.32+ generators send): a v1 ConfigMap "pb1" {data: {k: v}} decodes,
# a Deployment is refused with 415
printf 'k8s\000\012\017\012\002v1\022\011ConfigMap\022\017\012\005\012\003pb1\022\006\012\001k\022\001v' >"$T/pb"
code=$(kcode -X POST -H 'Content-Type: application/vnd.kubernetes.protobuf' --data-binary @"$T/pb" "$NS/configmaps")
check "a protobuf ConfigMap body creates (201)" [ "$code" = 201 ]
check "the protobuf ConfigMap holds its data" [ "$(kcurl "$NS/configmaps/pb1" | json_get data.k)" = v ]
printf 'k8s\000\012\025\012\007apps/v1\022\012Deployment\022\000' >"$T/pb2"
kcurl -X POST -H 'Content-Type: application/vnd.kubernetes.protobuf' --data-binary @"$T/pb2" \
    "$NS/configmaps" >"$T/e415b"
check "a protobuf body of an undecoded kind is a 415 UnsupportedMediaType Status" \
    status_is "$T/e415b" 415 UnsupportedMediaType
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\ndata:\n  k: v\n' >"$T/y1.yaml"
code=$(kcode -X POST -H 'Content-Type: application/yaml' --data-binary @"$T/y1.yaml" "$NS/configmaps")
check "a YAML body creates (201)" [ "$code" = 201 ]
code=$(kcode -H 'X-Unknown: 1' -H 'Kubectl-Session: abc' "$NS/configmaps?unknownParam=1&pretty=true")
check "unknown headers and parameters are ignored" [ "$code" = 200 ]

# ---- request log -------------------------------------------------------------------------------
check "request log names create/get/list/update/patch/delete/watch verbs" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
verbs = {(l["verb"], l["resource"]) for l in lines if "resource" in l}
need = {("create","configmaps"),("get","configmaps"),("list","configmaps"),("update","configmaps"),
        ("patch","configmaps"),("delete","configmaps"),("watch","configmaps"),("create","pods")}
missing = need - verbs
assert not missing, missing
l = [x for x in lines if x["verb"] == "create" and x["resource"] == "configmaps"][0]
assert l["code"] == 201 and l["method"] == "POST" and l["namespace"] == "default"
assert "duration_ms" in l and "user_agent" in l and "time" in l and "query" in l
assert isinstance(l.get("rv"), int) and l["rv"] > 0, l   # the version the create made
g = [x for x in lines if x["verb"] == "list" and x.get("resource") == "configmaps"][0]
assert "rv" not in g, g   # a list has no one version
g = [x for x in lines if x["verb"] == "get" and x.get("resource") == "configmaps" and x["code"] == 200][0]
assert isinstance(g.get("rv"), int) and g["rv"] > 0, g   # the version the reader saw
' "$KUBESIM_REQLOG"

# ---- SIGTERM ends open watches cleanly and exits 0 ---------------------------------------------
curl -sS -N "$KUBESIM_URL$NS/configmaps?watch=true" >"$T/w2.out" 2>"$T/w2.err" &
wpid=$!
wait_until "second watch streaming" 10 grep -q '"name":"w1"' "$T/w2.out"
stop_kubesim
check "kubesim exits 0 on SIGTERM" [ $? = 0 ]
wait "$wpid"
check "an open watch ends with the terminating chunk on shutdown (curl rc 0)" [ $? = 0 ]

# ---- TLS and tokens ------------------------------------------------------------------------------
start_kubesim --tls || exit 1
check "--tls serves https" [ "${KUBESIM_URL#https://}" != "$KUBESIM_URL" ]
check "TLS kubeconfig embeds the CA and does not skip verification" \
    sh -c "grep -q certificate-authority-data '$KUBECONFIG' && ! grep -q insecure-skip '$KUBECONFIG'"
check "TLS kubeconfig carries a token" [ -n "$KUBESIM_TOKEN" ]
code=$(kcode /api/v1/namespaces)
check "with the CA and token: 200" [ "$code" = 200 ]
curl -sS --max-time 10 --cacert "$KUBESIM_CA" "$KUBESIM_URL/api/v1/namespaces" >"$T/e401"
check "without a token: 401 Unauthorized Status" status_is "$T/e401" 401 Unauthorized
curl -sS --max-time 10 --cacert "$KUBESIM_CA" -H "Authorization: Bearer wrong" \
    "$KUBESIM_URL/api/v1/namespaces" >"$T/e403"
check "with a wrong token: 403 Forbidden Status" status_is "$T/e403" 403 Forbidden
check "/healthz needs no token" \
    [ "$(curl -sS --max-time 10 --cacert "$KUBESIM_CA" "$KUBESIM_URL/healthz")" = ok ]
check "the server certificate does not verify without the CA" \
    sh -c "! curl -s --max-time 10 '$KUBESIM_URL/healthz' >/dev/null 2>&1"
stop_kubesim
check "TLS kubesim exits 0 on SIGTERM" [ $? = 0 ]

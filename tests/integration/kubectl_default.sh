#!/bin/bash
# kubectl_default.sh - smoke test of /usr/bin/kubectl, the gcloud "kubectl-dispatcher" that
# first asks the server GET /version?timeout=5s to pick a matching kubectl, then runs it:
# apply, get, delete of a ConfigMap against a fresh kubesim.
# deadline: 60
KUBECTL=${KUBECTL_DEFAULT:-/usr/bin/kubectl}
# shellcheck source=tests/integration/lib_clients.sh
. "$(dirname "$0")/lib_clients.sh"
[ -x "$KUBECTL" ] || { not_ok "kubectl at $KUBECTL"; exit 1; }
clients_setup

cat >"$CL_WORK/cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: smoke
  labels:
    suite: default
data:
  greeting: hello
YAML
kcr apply apply -f "$CL_WORK/cm.yaml"
expect_rc 0 "kubectl (dispatcher) apply" apply
check_has "apply reports created" apply '^configmap/smoke created$'
kcr get get configmaps smoke
check_has "get prints the ConfigMap row" get '^smoke +1 +[0-9]+s$'
check_jpath "get -o jsonpath reads the data back" configmap smoke '{.data.greeting}' hello
kcr del delete -f "$CL_WORK/cm.yaml"
check_has "delete reports deleted" del '^configmap "smoke" deleted( from [a-z0-9-]+ namespace)?$'
check "the ConfigMap is gone" cl_wait 10 gone configmap smoke
[ "$(lib_failures)" = 0 ]

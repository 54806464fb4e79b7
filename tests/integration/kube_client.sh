#!/bin/bash
# deadline: 60
# kube_client.sh - the kube/ client (kube/kube.h) against a live bin/kubesim: runs
# build/rel/tests/test_kube_kubesim (config from kubesim's kubeconfig, Pod CRUD with
# typed errors, selectors and paging, /status, patch types, server-side apply, raw
# calls, a watch replaying writes, and a watch from an expired resourceVersion
# ending with 410 -> -KUBE_EGONE under a small --watch-window) over plain HTTP and
# over TLS with a bearer token and the generated CA, and checks that kubesim's
# request log saw the client's pod requests.
. "$(dirname "$0")/lib.sh"

BIN="$LIB_ROOT/build/rel/tests/test_kube_kubesim"
if [ ! -x "$BIN" ]; then
    not_ok "test_kube_kubesim is built (make unit-bins)"
    exit 1
fi

run_suite() {  # run_suite LABEL: runs the cmocka binary against the current kubesim
    local label=$1 log
    log=$(mktemp /tmp/kube_client_it.XXXXXX)
    _LIB_DIRS="$_LIB_DIRS $log"
    RAYOP_KUBESIM_URL="$KUBESIM_URL" KUBECONFIG="$KUBECONFIG" RAYOP_KUBESIM_WATCH_WINDOW=$WINDOW \
        timeout 40 "$BIN" >"$log" 2>&1
    local rc=$?
    # One TAP line per cmocka test.
    while read -r status name; do
        case "$status" in
            OK) ok "$label: $name" ;;
            FAILED|SKIPPED) not_ok "$label: $name ($status)" "$(grep -A3 "$name" "$log" | head -8)" ;;
        esac
    done < <(sed -n 's/^\[ *\(OK\|FAILED\|SKIPPED\) *\] \(test_[a-z_]*\)$/\1 \2/p' "$log")
    if [ $rc -ne 0 ]; then not_ok "$label: test_kube_kubesim exit status $rc" "$(tail -20 "$log")"; fi
}

WINDOW=20   # events kubesim keeps per type: small, so an old resourceVersion expires
start_kubesim --watch-window $WINDOW || exit 1
run_suite "http"
check "kubesim's request log has the client's pod requests" \
    [ "$(grep -c '/api/v1/namespaces/default/pods' "$KUBESIM_REQLOG" 2>/dev/null)" -ge 15 ]
stop_kubesim >/dev/null

start_kubesim --tls --watch-window $WINDOW || exit 1
check "TLS kubeconfig embeds the CA" grep -q 'certificate-authority-data' "$KUBECONFIG"
run_suite "https+token"
stop_kubesim >/dev/null
[ "$(lib_failures)" -eq 0 ]

#!/bin/bash
# deadline: 90
# up_leaders.sh - `rayop up` on one machine takes every kind's Lease at once. Leader election
# gives another Pod the first chance at a free Lease when this Pod already leads a kind (two
# retry periods: 2 x 2/15 of the lease); with no other Pod that only delayed two of the four
# kinds at every start of the instance (4 s with the default 15 s lease, seen after each
# kill -9 of up in the chaos soak). With a 300 s lease the head start would be 80 s: every
# kind must lead well before that, at the first start and after a kill -9 of up.
. "$(dirname "$0")/lib.sh"
RAYOP=${UP_IT_RAYOP:-$LIB_ROOT/bin/rayop}
start_kubesim || exit 1
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
SD=$(mktemp -d /tmp/up-leaders.XXXXXX); chmod 700 "$SD"; _LIB_DIRS="$_LIB_DIRS $SD"
start_up() {
    "$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$SD" --leader-lease-seconds 300 \
        --metrics-addr 0 --health-probe-bind-address 0 >>"$SD/up.log" 2>&1 &
    UP=$!; _LIB_PIDS="$_LIB_PIDS $UP"
}
leaders() { grep -c '"msg":"successfully acquired lease"' "$SD/up.log" 2>/dev/null; }
leaders_are() { [ "$(leaders)" -ge "$1" ]; }
start_up
wait_until "all four kinds lead (300 s lease)" 40 leaders_are 4 &&
    ok "all four kinds lead at the first start (no head start for a Pod that does not exist)"
kids=$(jq -r '.procs[].pid' "$SD/up.json")
kill -9 $UP; wait $UP 2>/dev/null
kids_gone() { for p in $kids; do [ "$p" -gt 0 ] && kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_until "up's children ended with it" 30 kids_gone
# the killed instance released its Leases on the way out (SIGTERM on up's death)
start_up
wait_until "all four kinds lead again after up's crash" 40 leaders_are 8 &&
    ok "all four kinds lead again after a kill -9 of up"
kill -TERM $UP; wait $UP
exit "$(lib_failures)"

#!/bin/bash
# rayop_clean.sh - `rayop clean` refuses while a watcher serves the state dir, and removes the
# cache segment (from /dev/shm) and the socket once the watcher is gone.
# deadline: 60
. "$(dirname "$0")/lib.sh"
RAYOP=${RAYOP:-$LIB_ROOT/bin/rayop}
start_kubesim || exit 1
SD=$(mktemp -d /tmp/rayop-clean.XXXXXX); chmod 700 "$SD"
trap 'kill $WPID 2>/dev/null; "$RAYOP" clean --state-dir "$SD" >/dev/null 2>&1; rm -rf "$SD"; _lib_cleanup' EXIT
"$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$SD" --cache-capacity 16M \
    >"$SD/watcher.log" 2>&1 &
WPID=$!
wait_until "the watcher serves its queue socket" 20 test -S "$SD/queues.sock" || exit 1
seg=$("$RAYOP" clean --state-dir "$SD" --print-segment)
wait_until "the segment exists in /dev/shm" 20 test -e "/dev/shm${seg}" || exit 1
"$RAYOP" clean --state-dir "$SD" >"$SD/clean1" 2>&1
rc=$?
[ $rc = 1 ] && grep -q 'still serving' "$SD/clean1" && ok "clean refuses while the watcher runs" \
    || not_ok "clean refuses while the watcher runs" "rc=$rc $(cat "$SD/clean1")"
check "the segment is still there" test -e "/dev/shm${seg}"
kill "$WPID"; wait "$WPID" 2>/dev/null
"$RAYOP" clean --state-dir "$SD" >"$SD/clean2" 2>&1
check "clean succeeds once the watcher stopped" grep -q '^removed segment' "$SD/clean2"
check "the segment left /dev/shm" test ! -e "/dev/shm${seg}"
check "the socket is gone" test ! -e "$SD/queues.sock"
[ "$(lib_failures)" = 0 ]

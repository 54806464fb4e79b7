#!/bin/bash
# deadline: 90
# up_shm.sh - nothing stays resident in /dev/shm after a clean stop of the whole instance:
# `rayop up` stopped by SIGTERM drops the cache segment once every child has exited. A crash
# keeps it: a watcher killed with -9 is restarted by up on the same segment (its objects are
# still there), and `rayop up` itself killed with -9 leaves the segment for the next start
# (removed by `rayop clean`); its children end with it. The default segment starts small (32 MiB) and grows.
. "$(dirname "$0")/lib.sh"
RAYOP=${UP_IT_RAYOP:-$LIB_ROOT/bin/rayop}
start_kubesim || exit 1
kubectl create -f $RAYOP_SHARED/kuberay/crds/ >/dev/null 2>&1
SD=$(mktemp -d /tmp/up-shm.XXXXXX); chmod 700 "$SD"; _LIB_DIRS="$_LIB_DIRS $SD"
seg=$("$RAYOP" clean --state-dir "$SD" --print-segment)
start_up() {
    "$RAYOP" up --kubeconfig "$KUBECONFIG" --state-dir "$SD" --controllers raycluster \
        --metrics-addr 0 --health-probe-bind-address 0 --restart-initial-ms 200 >>"$SD/up.log" 2>&1 &
    UP=$!; _LIB_PIDS="$_LIB_PIDS $UP"
}
synced() { "$RAYOP" status --state-dir "$SD" -o json 2>/dev/null |
    jq -e '[.cache.types[] | select(.name == "ray.io/v1/rayclusters") | .synced][0] == true and .queues.watcherPid > 0' >/dev/null; }
start_up
wait_until "the watcher synced" 30 synced && ok "the watcher synced"
check "the segment exists" test -e "/dev/shm$seg"
sz=$(stat -c %s "/dev/shm$seg")
check "the default segment is 32 MiB, not 256 ($sz bytes)" [ "$sz" -eq $((32 << 20)) ]
# a crash of the watcher: restarted on the same segment
wpid=$(jq -r '.procs[] | select(.name == "watcher") | .pid' "$SD/up.json")
kill -9 "$wpid"
restarted() { [ "$(jq -r '.procs[] | select(.name == "watcher") | .restarts' "$SD/up.json")" = 1 ] &&
    [ "$(jq -r '.procs[] | select(.name == "watcher") | .pid' "$SD/up.json")" != "$wpid" ]; }
wait_until "up restarted the killed watcher" 30 restarted && ok "up restarted the killed watcher"
check "the segment survived the watcher's crash" test -e "/dev/shm$seg"
wait_until "the restarted watcher synced" 30 synced
# a clean stop of the whole instance
kill -TERM $UP; wait $UP; rc=$?
check "up exits 0 on SIGTERM (got $rc)" [ "$rc" -eq 0 ]
check "nothing left in /dev/shm after the clean stop" test ! -e "/dev/shm$seg"
check "up says it dropped the segment" grep -q 'dropped the cache segment (clean stop)' "$SD/up.log"
# a crash of up itself keeps the cache
start_up
wait_until "the watcher synced again" 30 synced
kill -9 $UP; wait $UP 2>/dev/null
check "the segment survives up being killed" test -e "/dev/shm$seg"
# its children end with it (SIGTERM on the parent's death), so no orphan keeps the socket;
# then rayop clean removes what is left
kids=$(jq -r '.procs[].pid' "$SD/up.json")
kids_gone() { for p in $kids; do [ "$p" -gt 0 ] && kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_until "up's children ended with it" 30 kids_gone && ok "up's children ended with it (no orphans)"
# what they logged while stopping had no reader left: it went to the state dir
check "the watcher's last lines survive up's death" grep -q '"msg":"watcher exited"' "$SD/watcher.orphaned.log"
check "the controller's too" grep -q '"component":"controller"' "$SD/raycluster.orphaned.log"
gone() { ! "$RAYOP" clean --state-dir "$SD" 2>&1 | grep -q 'still serving'; }
wait_until "rayop clean after the crash" 30 gone && ok "rayop clean after the crash"
check "rayop clean removed the segment" test ! -e "/dev/shm$seg"
exit "$(lib_failures)"

#!/bin/bash
# deadline: 300
# rayservice_sigterm.sh - a RayService controller stopped (SIGTERM) while one of its Serve
# dashboard calls is out, on the ASan/UBSan build (build/asan/soak/rayop, linked here if
# needed). The calls run on threads of their own (dashboard/async.c) and borrow the
# controller's API client (--use-kubernetes-proxy); the chaos soak saw a controller free the
# client at exit under such a call, whose thread then woke into freed memory. Now:
#  - a call that ends within the stop budget (its head answers 3 s late) is waited for: the
#    process exits 0 only after kubesim answered it;
#  - a call that does not (its head answers 30 s late) is left running and the process exits
#    0 within the budget without freeing the client ("calls still out at exit");
#  - no sanitizer report from any operator process (each writes its own file: log_path).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_ASAN=""
[ -n "${RS_IT_RAYOP:-}" ] || { RS_IT_RAYOP=$ROOT/build/asan/soak/rayop; BUILD_ASAN=1; }
SAN=$(mktemp -d /tmp/rs-sigterm-san.XXXXXX)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$SAN/rayop"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$SAN/rayop"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_path=$SAN/rayop"
. "$(dirname "$0")/lib_rayservice.sh"
_LIB_DIRS="$_LIB_DIRS $SAN"

if [ -n "$BUILD_ASAN" ] && ! make -s -C "$ROOT" MODE=asan build/asan/soak/rayop >"$SAN/make.out" 2>&1; then
    not_ok "the ASan/UBSan build of rayop links (make MODE=asan build/asan/soak/rayop)"
    sed 's/^/#   /' "$SAN/make.out" | tail -20
    exit 1
fi
rs_start || exit 1
rs_create s1 || not_ok "create s1"
rs_wait s1 status.serviceStatus Running 120 || exit 1
SC=$(rs_field s1 status.activeServiceStatus.rayClusterName)

# asked / answered dashboard calls of s1's cluster (kubesim counts them)
calls() { kcurl /kubesim/ray/clusters | jq -r --arg c "$SC" \
    '.[] | select(.cluster == $c) | "\(.dashboardAsked) \(.dashboardAnswered)"'; }
delay() { kcurl -X POST -H 'Content-Type: application/json' -d "{\"ms\":$1}" \
    "/kubesim/ray/default/$SC/delay" >/dev/null; }
touch_rs() { kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d "{\"metadata\":{\"annotations\":{\"touch\":\"$1\"}}}" $NSP/rayservices/s1 >/dev/null; }
# polls (every 20 ms, up to 40 s) until a call of s1's is out, then SIGTERMs the controller
# at once; sets ASKED to the calls asked at that moment and T0 to its time (ms)
term_with_call_out() {
    local a d end=$(( $(date +%s%N) / 1000000 + 40000 ))
    while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
        read -r a d <<<"$(calls)"
        if [ -n "$a" ] && [ "$a" -gt "$d" ]; then
            kill -TERM "$RS_CTL_PID"
            T0=$(( $(date +%s%N) / 1000000 ))
            ASKED=$a
            return 0
        fi
        sleep 0.02
    done
    return 1
}
# waits (up to 30 s) for the controller to exit; sets RC and SECS (since T0)
wait_exit() {
    wait_until "the controller exits after SIGTERM" 30 sh -c "! kill -0 $RS_CTL_PID" || return 1
    wait "$RS_CTL_PID"
    RC=$?
    SECS=$(( ($(date +%s%N) / 1000000 - T0) ))
}

# 1. the head answers 3 s late (within the 5 s the controller gives its calls at exit)
delay 3000
touch_rs 1
if term_with_call_out; then
    wait_exit
    read -r _ answered <<<"$(calls)"
    echo "# exited ${SECS} ms after SIGTERM with status $RC; calls asked $ASKED at SIGTERM, $answered answered at the exit"
    check "a call out at SIGTERM is answered before the controller exits" [ "${answered:-0}" -ge "$ASKED" ]
    check "the controller exits 0" [ "$RC" = 0 ]
    check "... having waited for the call, not given up on it" \
        sh -c "! grep -q '\"calls still out at exit' '$WORK/rayservice.log'"
else
    not_ok "a dashboard call of s1 is out (3 s head)"
fi

# 2. the head answers 30 s late (past the 5 s budget, and the proxied call's 10 s deadline)
delay 30000
rs_ctl_start
touch_rs 2
if term_with_call_out; then
    wait_exit
    echo "# exited ${SECS} ms after SIGTERM with status $RC"
    check "a call still out after the budget: the controller exits 0 without it" [ "$RC" = 0 ]
    check "... within the budget, not the call's 10 s deadline" [ "$SECS" -lt 9500 ]
    check "... and says so" grep -q '"calls still out at exit; exiting without freeing the API client"' \
        "$WORK/rayservice.log"
else
    not_ok "a dashboard call of s1 is out (30 s head)"
fi
delay 0

# every operator process has stopped (lib's cleanup would kill them later): stop them now so
# that their reports at exit (LeakSanitizer) are written before the check
for p in $_LIB_PIDS; do [ "$p" = "$KUBESIM_PID" ] || kill -TERM "$p" 2>/dev/null; done
for p in $_LIB_PIDS; do [ "$p" = "$KUBESIM_PID" ] || wait "$p" 2>/dev/null; done
reports=$(find "$SAN" -name 'rayop.*' -size +0c)
check "no sanitizer report from any operator process" [ -z "$reports" ]
for f in $reports; do echo "# $f:"; sed 's/^/#   /' "$f" | head -80; done
check "no sanitizer report in the controller's log" \
    sh -c "! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '$WORK/rayservice.log'"
exit "$(lib_failures)"

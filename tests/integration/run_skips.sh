#!/bin/bash
# deadline: 60
# run_skips.sh - tests/run.sh counts a test that cannot run as skipped, never as
# passed: test_kube_kubesim (which needs a live kubesim, RAYOP_KUBESIM_URL unset
# here) is reported "skip" with cmocka's reason, and the closing line counts its
# 5 tests (per build that has it) after "N passed, M failed" as ", K skipped".
. "$(dirname "$0")/lib.sh"

if [ ! -x "$LIB_ROOT/build/rel/tests/test_kube_kubesim" ]; then
    skip "run.sh skip accounting" "build/rel/tests/test_kube_kubesim is not built (make unit-bins)"
    exit 0
fi
logs=$(mktemp -d)
out=$(cd "$LIB_ROOT" && env -u RAYOP_KUBESIM_URL ONLY=test_kube_kubesim LOGDIR="$logs" \
      sh tests/run.sh 2>&1)
rc=$?
rm -rf "$logs"
printf '%s\n' "$out" | sed 's/^/# /'
check "the binary that only skipped is reported as skip, with its reason" sh -c \
    "printf '%s\n' \"\$1\" | grep -q '^skip build/rel/tests/test_kube_kubesim (5 skipped: RAYOP_KUBESIM_URL is unset'" _ "$out"
check "no ok line for it" sh -c "! printf '%s\n' \"\$1\" | grep -q '^ok .*test_kube_kubesim'" _ "$out"
check "closing line: 0 passed, 0 failed, then the skips" sh -c \
    "printf '%s\n' \"\$1\" | tail -1 | grep -Eq '^total: 0 passed, 0 failed, (5|10) skipped$'" _ "$out"
check "a run that only skipped does not succeed" [ "$rc" -ne 0 ]
exit 0

#!/bin/sh
# tests/run.sh - runs every test make test built and prints one closing line
# "total: N passed, M failed, K skipped" that CI reads. A test that cannot run here
# (cmocka's skip(), an integration "skip - what" line) is counted as skipped, never
# as passed, and a binary or script that only skipped says "skip", not "ok".
#
#  1. cmocka unit tests, release build (build/rel/tests) and ASan+UBSan build (build/asan/tests)
#  2. libFuzzer targets (build/fuzz/fuzz), FUZZ_SECONDS each (default 5), FUZZ_JOBS (2) at once, seeded from tests/fuzz/corpus/NAME,
#     libFuzzer seed FUZZ_SEED (default 1; 0 = random); crashing inputs are kept in the log folder
#  3. integration tests tests/integration/*.sh|*.py: each prints TAP-ish "ok - what" /
#     "not ok - what" / "skip - what (why)" lines and declares its deadline with a "# deadline: SECONDS" line
#     (default 120); it is killed past it. IT_JOBS of them run at once (default 3); those with a
#     "# alone: why" line run afterwards, one at a time.
#     ONLY=pattern restricts which run.
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
export RAYOP_ROOT="$ROOT"
export RAYOP_SHARED="${RAYOP_SHARED:-$ROOT/../shared}"
export PATH="$ROOT/bin:$PATH"
# One integration script: runs it under its deadline and leaves "passed failed skipped" in
# $LOGDIR/NAME.result; its verdict line is printed as soon as it ends.
run_integration() {
    t=$1; name=$(basename "$t")
    deadline=$(sed -n 's/^# deadline: *\([0-9]*\).*/\1/p' "$t" | head -1)
    deadline=${deadline:-120}
    log="$LOGDIR/$name.log"
    start=$(date +%s)
    case "$t" in
        *.py) timeout -k 5 "$deadline" /usr/bin/python3 "$t" >"$log" 2>&1 ;;
        *)    timeout -k 5 "$deadline" bash "$t" >"$log" 2>&1 ;;
    esac
    rc=$?
    secs=$(( $(date +%s) - start ))
    p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
    if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
    {
        [ $rc -eq 124 ] && echo "TIMEOUT $name after ${deadline}s"
        if [ "$f" != 0 ]; then echo "FAIL $name (rc=$rc, ${secs}s)"; grep '^not ok' "$log"; tail -40 "$log"
        elif [ "$p" = 0 ] && [ "$s" != 0 ]; then echo "skip $name ($s skipped: $(grep -m1 '^skip - ' "$log" | cut -c8-))"
        else echo "ok   $name ($p checks$([ "$s" = 0 ] || echo ", $s skipped"), ${secs}s)"; fi
    } >"$log.verdict"
    cat "$log.verdict"
    echo "$p $f $s" >"$LOGDIR/$name.result"
}

# One fuzz target for FUZZ_SECONDS on a copy of its corpus; leaves its exit status in
# $LOGDIR/NAME.fuzzresult. FUZZ_JOBS targets run at once (each is one process, one core).
run_fuzz() {
    t=$1; name=$(basename "$t")
    log="$LOGDIR/$name.log"
    work=$(mktemp -d)
    [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
    # A fixed seed keeps `make test` reproducible (a short run that finds a new crash
    # only on some seeds would fail CI at random); `make fuzz` runs long and random.
    timeout $(( ${FUZZ_SECONDS:-5} + 115 )) "$t" -max_total_time="${FUZZ_SECONDS:-5}" \
        -seed="${FUZZ_SEED:-1}" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$LOGDIR/$name-" "$work" >"$log" 2>&1
    rc=$?
    rm -rf "$work"
    if [ $rc -eq 0 ]; then echo "ok   $name ($(grep -o 'Done [0-9]* runs' "$log" | tail -1))"
    else { echo "FAIL $name (rc=$rc)"; tail -40 "$log"; } >"$log.verdict"; cat "$log.verdict"; fi
    echo "$rc" >"$LOGDIR/$name.fuzzresult"
}

if [ "${1:-}" = --integration-one ]; then
    run_integration "$2"
    exit 0
fi
if [ "${1:-}" = --fuzz-one ]; then
    run_fuzz "$2"
    exit 0
fi

# One log folder per run, so concurrent runs in one tree do not clobber each other.
LOGDIR="${LOGDIR:-$ROOT/build/test-logs/run-$$}"
rm -rf "$LOGDIR"; mkdir -p "$LOGDIR"
echo "logs: $LOGDIR"
pass=0; fail=0; skipped=0; failed_names=""
ONLY="${ONLY:-}"

note_fail() { fail=$((fail + $2)); failed_names="$failed_names $1"; }

for dir in build/rel/tests build/asan/tests; do
    [ -d "$dir" ] || continue
    for t in "$dir"/test_*; do
        [ -x "$t" ] || continue
        case "$t" in *.d) continue;; esac
        [ -n "$ONLY" ] && case "$t" in *$ONLY*) ;; *) continue;; esac
        log="$LOGDIR/$(echo "$t" | tr / _).log"
        timeout 300 "$t" >"$log" 2>&1
        rc=$?
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
        s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
        p=${p:-0}; f=${f:-0}; s=${s:-0}
        if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
        pass=$((pass + p)); skipped=$((skipped + s))
        if [ "$f" != 0 ]; then note_fail "$t" "$f"; echo "FAIL $t (rc=$rc)"; tail -30 "$log"
        elif [ "$p" = 0 ] && [ "$s" != 0 ]; then echo "skip $t ($s skipped: $(grep -m1 '^skipped: ' "$log" | cut -c10-))"
        else echo "ok   $t ($p tests$([ "$s" = 0 ] || echo ", $s skipped"))"; fi
    done
done

if [ -d build/fuzz/fuzz ]; then
    for t in build/fuzz/fuzz/fuzz_*; do
        [ -x "$t" ] || continue
        case "$t" in *.d) continue;; esac
        name=$(basename "$t")
        [ -n "$ONLY" ] && case "$name" in *$ONLY*) ;; *) continue;; esac
        echo "$t"
    done | LOGDIR="$LOGDIR" xargs -P "${FUZZ_JOBS:-2}" -I{} sh "$ROOT/tests/run.sh" --fuzz-one {}
    for r in "$LOGDIR"/fuzz_*.fuzzresult; do
        [ -f "$r" ] || continue
        if [ "$(cat "$r")" = 0 ]; then pass=$((pass + 1)); else note_fail "$(basename "$r" .fuzzresult)" 1; fi
    done
fi

# Integration scripts run IT_JOBS at a time (default 3): most of their time is spent
# waiting on timers and deadlines, not on the CPU. Each has its own kubesim, port,
# state dir and log, so they do not share anything. A script that asserts a latency bound
# says "# alone: why" and runs after the others, one at a time: on a 2-core machine three
# neighbours (and their kubesims) make any wall-clock figure measure them, not the code.
list_integration() {   # $1 = pool | alone
    for t in tests/integration/*.sh tests/integration/*.py; do
        [ -f "$t" ] || continue
        name=$(basename "$t")
        case "$name" in lib*.sh|lib*.py) continue;; esac   # sourced helpers, not tests
        [ -n "$ONLY" ] && case "$name" in *$ONLY*) ;; *) continue;; esac
        if grep -q '^# alone:' "$t"; then [ "$1" = alone ] && echo "$t"
        else [ "$1" = pool ] && echo "$t"; fi
    done
}
list_integration pool | LOGDIR="$LOGDIR" xargs -P "${IT_JOBS:-3}" -I{} sh "$ROOT/tests/run.sh" --integration-one {}
list_integration alone | LOGDIR="$LOGDIR" xargs -P 1 -I{} sh "$ROOT/tests/run.sh" --integration-one {}
for r in "$LOGDIR"/*.result; do
    [ -f "$r" ] || continue
    read -r p f s <"$r"
    pass=$((pass + p)); skipped=$((skipped + ${s:-0}))
    [ "$f" != 0 ] && note_fail "$(basename "$r" .result)" "$f"
done

# CI keeps only the head and tail of a long log: repeat each failure's verdict (its "not ok"
# lines, or its timeout) just above the closing line, where it survives.
if [ -n "$failed_names" ]; then
    echo "# failures, again:"
    for n in $failed_names; do
        for v in "$LOGDIR/$n.log.verdict" "$LOGDIR/$n.verdict"; do
            [ -f "$v" ] && grep '^TIMEOUT\|^FAIL\|^not ok' "$v" | awk '!seen[$0]++' | head -8
        done
        [ -f "$LOGDIR/$n.log.verdict" ] || [ -f "$LOGDIR/$n.verdict" ] || echo "FAIL $n"
    done
    echo "failed:$failed_names"
fi
echo "total: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]

#!/bin/sh
# bench/run.sh - runs rayop's benchmarks (not part of make test).
#
#   sh bench/run.sh          every benchmark found: bench/*.sh (except this file) and every
#                            bin/*_bench binary, each run with no arguments except sim_bench,
#                            which is pointed at bin/kubesim
#   sh bench/run.sh NAME     only the benchmarks whose name contains NAME;
#                            "sim" is kubesim's (make bench-sim)
#
# Each benchmark prints its own figures against its targets (PASS/MISS). This script only
# finds and runs them, and ends with one line per benchmark: "bench NAME: ok|failed (rc=N)".
# Knobs for sim_bench: SIM_BENCH_ARGS (extra flags, e.g. "--creates 5000 --watchers 50").
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
ONLY="${1:-}"
summary=""
status=0

run_one() {   # run_one NAME CMD...
    name=$1; shift
    echo "=== $name: $*"
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then summary="$summary
bench $name: ok"
    else summary="$summary
bench $name: failed (rc=$rc)"; status=1; fi
}

wanted() { [ -z "$ONLY" ] || case "$1" in *"$ONLY"*) return 0;; *) return 1;; esac; }

found=0
for s in bench/*.sh; do
    [ -f "$s" ] || continue
    [ "$(basename "$s")" = run.sh ] && continue
    name=$(basename "$s" .sh)
    wanted "$name" || continue
    found=$((found + 1))
    run_one "$name" sh "$s"
done

for b in bin/*_bench; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    wanted "$name" || continue
    found=$((found + 1))
    case "$name" in
        sim_bench)
            if [ ! -x bin/kubesim ]; then
                echo "=== $name: bin/kubesim is missing (make all)"
                summary="$summary
bench $name: failed (no bin/kubesim)"; status=1; continue
            fi
            # shellcheck disable=SC2086  # SIM_BENCH_ARGS is a list of flags
            run_one "$name" "$ROOT/bin/sim_bench" --kubesim "$ROOT/bin/kubesim" \
                --kubesim-arg --listen --kubesim-arg 127.0.0.1:0 --kubesim-arg --nodes --kubesim-arg 0 \
                --kubesim-log "${SIM_BENCH_LOG:-/tmp/sim_bench.kubesim.log}" ${SIM_BENCH_ARGS:-} ;;
        *)  run_one "$name" "$b" ;;
    esac
done

if [ $found -eq 0 ]; then
    echo "bench/run.sh: no benchmark matches '${ONLY}' (looked at bench/*.sh and bin/*_bench; run make first)"
    exit 1
fi
echo "$summary" | sed '/^$/d'
exit $status

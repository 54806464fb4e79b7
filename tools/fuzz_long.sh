#!/bin/sh
# tools/fuzz_long.sh - long fuzzing of every libFuzzer target (`make fuzz-long`, not in CI),
# its time spread by how much outside input the target parses, and the table of what it did
# (docs/fuzzing.md keeps the last one).
#
#   FUZZ_UNIT=SECONDS (60)  one weight unit: a target runs WEIGHT x UNIT seconds
#   FUZZ_JOBS=N (2)         targets at once (one core each)
#   FUZZ_OUT=DIR            logs, crashing inputs and table.md (default: a new /tmp dir)
#   FUZZ_SEED=N (0)         libFuzzer seed (0: random)
#   ONLY=pattern            only the targets whose name matches
# Run it under `nice -n 19`: it soaks idle CPU. Each target starts from a copy of
# tests/fuzz/corpus/NAME; a crashing input is left as $FUZZ_OUT/NAME-crash-* (put it in the
# corpus with the fix). Exit status: the number of targets that failed.
cd "$(dirname "$0")/.." || exit 1
UNIT=${FUZZ_UNIT:-60}
OUT=${FUZZ_OUT:-$(mktemp -d /tmp/fuzz-long.XXXXXX)}
mkdir -p "$OUT"

# weight: 4 = bytes from the network any client or server can send; 3 = objects and specs a
# user writes (through the API server); 2 = bytes from a peer rayop process or a local file;
# 1 = test knobs and inputs built by our own code
weight() {
    case "$1" in
    fuzz_kube_watch|fuzz_route|fuzz_server_proto|fuzz_patch|fuzz_dashboard|fuzz_ray_dashboard|\
    fuzz_rayservice_serve|fuzz_admission|fuzz_schema|fuzz_selector|fuzz_yamljson|fuzz_crd|\
    fuzz_builtin_validate|fuzz_lease) echo 4 ;;
    fuzz_rc_build|fuzz_rc_status|fuzz_batchsched|fuzz_watcher_map|fuzz_cron|fuzz_cluster_pod|\
    fuzz_job_indexes|fuzz_ray_submitter|fuzz_runtime|fuzz_volcano_conf|fuzz_kubeconfig) echo 3 ;;
    fuzz_ipc_frame|fuzz_ipc_server|fuzz_cache_segment|fuzz_store_journal|fuzz_certmgr) echo 2 ;;
    *) echo 1 ;;
    esac
}

one() {   # one target: $1 = binary
    t=$1; name=$(basename "$t"); w=$(weight "$name"); secs=$((w * UNIT))
    work=$(mktemp -d)
    [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
    timeout $((secs + 300)) "$t" -max_total_time="$secs" -seed="${FUZZ_SEED:-0}" \
        -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$OUT/$name-" "$work" >"$OUT/$name.log" 2>&1
    rc=$?
    rm -rf "$work"
    # libFuzzer's last status line ("#N DONE cov: C ft: F corp: ...") and its final stats
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$name.log" | tail -1)
    cov=$(grep -E '^#[0-9]+' "$OUT/$name.log" | tail -1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(grep -E '^#[0-9]+' "$OUT/$name.log" | tail -1 | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    echo "| $name | $w | $secs | ${runs:-?} | ${cov:-?} | ${ft:-?} | $([ $rc = 0 ] && echo ok || echo "FAIL rc=$rc") |" \
        >"$OUT/$name.row"
    cat "$OUT/$name.row"
}

if [ "${1:-}" = --one ]; then
    one "$2"
    exit 0
fi

for t in build/fuzz/fuzz/fuzz_*; do
    [ -x "$t" ] || continue
    case "$t" in *.d) continue ;; esac
    [ -n "${ONLY:-}" ] && case "$(basename "$t")" in *$ONLY*) ;; *) continue ;; esac
    echo "$(weight "$(basename "$t")") $t"
done | sort -rn | cut -d' ' -f2 |
    FUZZ_OUT=$OUT FUZZ_UNIT=$UNIT xargs -P "${FUZZ_JOBS:-2}" -I{} sh "$0" --one {}

{
    echo "| target | weight | seconds | executions | cov | ft | result |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    cat "$OUT"/*.row | sort
} >"$OUT/table.md"
total=$(awk -F'|' '$5 ~ /[0-9]/ { s += $5 } END { print s + 0 }' "$OUT"/*.row)
fails=$(grep -c FAIL "$OUT"/*.row | awk -F: '{ s += $2 } END { print s + 0 }')
echo "fuzz-long: $total executions, $fails failed; $OUT/table.md"
exit "$fails"

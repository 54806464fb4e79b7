#!/bin/sh
# bench/kubesim-scale.sh - the simulated cluster alone, no operator (issue 18): KSCALE_PODS
# (40000) Pods created directly, bound, started and made Ready by kubesim; prints Pod
# transitions/s, create -> Ready beyond the configured delays (p50/p99), RSS per object, and
# ratios against kubesim built at KSCALE_BASE (a commit; default aa5a8a3, main before the
# issue 18 work of this session; KSCALE_BASE=none skips the baseline). The baseline binary
# is built once from `git archive` of that commit under build/kscale-base/ and kept.
# bench/kubesim_scale.py does the work (its --help lists the knobs, KSCALE_ARGS passes more);
# docs/kubesim-cluster.md has the figures. Not part of make test: ~2-5 min per run.
cd "$(dirname "$0")/.." || exit 1
PODS=${KSCALE_PODS:-40000}
BASE=${KSCALE_BASE:-aa5a8a3}
set --
if [ "$BASE" != none ]; then
    sha=$(git rev-parse --short=12 "$BASE^{commit}") || { echo "kubesim-scale: no commit $BASE"; exit 1; }
    dir=build/kscale-base/$sha
    if [ ! -x "$dir/bin/kubesim" ]; then
        echo "# building the baseline kubesim at $sha in $dir"
        rm -rf "$dir"
        mkdir -p "$dir" && git archive "$sha" | tar -x -C "$dir" || { echo "kubesim-scale: git archive failed"; exit 1; }
        make -C "$dir" -j2 bin/kubesim >"$dir.build.log" 2>&1 || { echo "kubesim-scale: baseline build failed ($dir.build.log)"; exit 1; }
    fi
    set -- --base-kubesim "$dir/bin/kubesim"
fi
# shellcheck disable=SC2086  # KSCALE_ARGS is a list of flags
exec python3 bench/kubesim_scale.py --pods "$PODS" "$@" ${KSCALE_ARGS:-}

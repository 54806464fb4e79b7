#!/bin/sh
# bench/raycluster.sh - the RayCluster controller at scale (not in make test):
# time for RC_BENCH_CLUSTERS (1000) RayClusters of 1 head + 2 workers to all
# reach ready in kubesim, then reconciles/s of the converged clusters with every
# key re-queued continuously (and the writes they make: none expected).
# bench/raycluster_bench.py does the work; docs/raycluster.md has the figures.
cd "$(dirname "$0")/.." || exit 1
exec python3 bench/raycluster_bench.py "$@"

#!/bin/sh
# bench/peer.sh - rayop against the real KubeRay v1.5.0 operator (make peers) on one kubesim:
# PEER_CLUSTERS (100) RayClusters of 1 head + 3 workers each, one operator after the other
# (alternating order over PEER_ROUNDS), time to all ready, CPU seconds, peak PSS, API requests.
# Prints rayop/KubeRay ratios and, last, one JSON object. bench/peer.py does the work and lists
# the knobs; docs/benchmarks.md has the figures.
cd "$(dirname "$0")/.." || exit 1
exec python3 bench/peer.py "$@"

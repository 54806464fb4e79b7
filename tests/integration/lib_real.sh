# lib_real.sh - the real tier's guard, sourced by tests/integration/real_*.sh (never run itself).
#
#   real_require     0 when the real control plane can run here (the peers that `make peers`
#                    builds are in .peers/bin); else prints one "skip - ..." line naming what is
#                    missing and why, and returns 1 (the caller exits 0: skipped, not passed).
# A real_*.sh wrapper then sets RAYOP_SERVER=real, which lib.sh's start_kubesim and the Python
# helpers (lib_realserver.py) honour: the same suite runs against tools/realk8s.sh instead of kubesim.
REAL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

real_require() {
    local why b
    why=$(sh "$REAL_ROOT/tools/peers/build.sh" --check 2>&1) || {
        echo "skip - $(basename "$0"): the real tier needs $why"; return 1; }
    for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
        if [ ! -x "${RAYOP_PEERS_BIN:-$REAL_ROOT/.peers/bin}/$b" ]; then
            echo "skip - $(basename "$0"): .peers/bin/$b is missing (run make peers)"
            return 1
        fi
    done
    export RAYOP_SERVER=real
}

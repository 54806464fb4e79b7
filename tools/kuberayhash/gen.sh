#!/bin/sh
# Prints KubeRay v1.7's Recreate hash of each RayCluster in FILES (the unit fixtures):
#   sh tools/kuberayhash/gen.sh /path/to/kuberay FILE...
# KubeRay's API type file is copied into a temporary package beside this tool for the run
# and removed again, as tools/gotypes/gen.sh does.
set -eu
src=${1:?usage: gen.sh KUBERAY_CHECKOUT FILE...}
shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/rayv1"
trap 'rm -rf "$here/rayv1"' EXIT
cp "$src/ray-operator/apis/ray/v1/raycluster_types.go" "$here/rayv1/"
cd "$here"
PATH=/usr/local/go/bin:$PATH go run . hash "$@"

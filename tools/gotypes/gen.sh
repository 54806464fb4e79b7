#!/bin/sh
# Regenerates kobj/gotypes_table.c from a KubeRay checkout (v1.7):
#   sh tools/gotypes/gen.sh /path/to/kuberay
# KubeRay's API type files are copied into a temporary package beside this tool for the
# run and removed again; only the generated table is kept.
set -eu
src=${1:?usage: gen.sh KUBERAY_CHECKOUT}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mkdir -p "$here/rayv1"
trap 'rm -rf "$here/rayv1"' EXIT
for f in raycluster_types.go; do
    cp "$src/ray-operator/apis/ray/v1/$f" "$here/rayv1/"
done
cd "$here"
PATH=/usr/local/go/bin:$PATH go run . > "$top/kobj/gotypes_table.c.tmp"
mv "$top/kobj/gotypes_table.c.tmp" "$top/kobj/gotypes_table.c"

#!/bin/sh
# Installs the Debian packages rayop builds and tests with (make deps). As root it runs
# apt-get; otherwise it prints the exact command and fails, so nothing half-installs.
PKGS="build-essential clang libclang-rt-14-dev libcurl4-openssl-dev libmsgpack-dev libcjson-dev \
libyaml-dev libuv1-dev libcmocka-dev libmicrohttpd-dev libgnutls28-dev python3-kubernetes \
python3-yaml curl jq bc uthash-dev libzstd-dev libjemalloc-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq $missing >/dev/null || {
        echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
    exit 0
fi
echo "deps: missing packages:$missing" >&2
echo "deps: run as root:  sudo apt-get update && sudo apt-get install -y$missing" >&2
exit 1

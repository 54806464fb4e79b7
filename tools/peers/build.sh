#!/bin/sh
# Builds the real peers that the real tier of the tests runs beside kubesim: one small Go module per
# tool under tools/peers/<tool>/ (go.mod, go.sum and peer.conf naming the binaries) and a Python
# venv from tools/peers/python/requirements.txt (Ray and the Kubernetes client).
#
#   tools/peers/build.sh [TOOL...]   TOOL = a folder under tools/peers (default: all of them)
#   tools/peers/build.sh --check     exit 0 if this machine can build the peers, else 3 and why
#
# Binaries land in .peers/bin/ of the clone (git-ignored); the venv is .peers/venv. Both are built
# once per content hash under ${RAYOP_PEERS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/rayop-peers} and only
# linked or copied into a fresh clone afterwards, so CI's clone on the same machine does not rebuild.
# Modules come from the Go module proxy through the ordinary go command with GOTOOLCHAIN=local.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=$ROOT/tools/peers
OUT=$ROOT/.peers
CACHE=${RAYOP_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rayop-peers}
RECIPE=1 # bump when the build commands below change, so cached binaries are rebuilt
GO_MIN=24

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
[ -x /usr/local/go/bin/go ] && case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) PATH=$PATH:/usr/local/go/bin ;; esac

say() { printf 'peers: %s\n' "$*" >&2; }

# Prints why the peers cannot be built here, or nothing.
peers_missing() {
	if ! command -v go >/dev/null 2>&1; then
		echo "no go command (Go >= 1.$GO_MIN is needed)"
	else
		gv=$(go env GOVERSION 2>/dev/null || true)
		minor=$(printf '%s\n' "$gv" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
		if [ -z "$minor" ] || [ "$minor" -lt "$GO_MIN" ]; then
			echo "Go ${gv:-unknown} is older than 1.$GO_MIN"
		fi
	fi
	if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
		echo "python3 cannot make a venv (python3-venv missing)"
	fi
}

sha() { sha256sum | cut -c1-16; }

# Directly required modules of a go.mod, "path version" per line (for the download message).
direct_requires() {
	awk '/^require \(/ {b=1; next} b && /^\)/ {b=0} /^require [^(]/ && !/indirect/ {print $2" "$3}
	     b && !/indirect/ && NF >= 2 {print $1" "$2}' "$1"
}

# Module zips go.sum names that the module cache does not hold yet.
missing_modules() {
	mc=$(go env GOMODCACHE)
	awk '$2 !~ /\/go\.mod$/ {print $1" "$2}' "$1" | while read -r m v; do
		esc=$(printf '%s' "$m" | sed 's/[A-Z]/!\L&/g')
		[ -f "$mc/cache/download/$esc/@v/$v.zip" ] || echo "$m@$v"
	done
}

link_into() { # SRC DST: hard link when on one file system, else copy
	ln -f "$1" "$2" 2>/dev/null || cp -f "$1" "$2"
}

build_go() {
	tool=$1 dir=$PEERS/$1
	[ -f "$dir/go.mod" ] && [ -f "$dir/go.sum" ] && [ -f "$dir/peer.conf" ] ||
		{ say "$tool: tools/peers/$tool needs go.mod, go.sum and peer.conf"; return 1; }
	BINS= LDFLAGS=
	. "$dir/peer.conf"
	key=$(cat "$dir/go.mod" "$dir/go.sum" "$dir/peer.conf" | { cat; go env GOVERSION; echo "$RECIPE"; } | sha)
	final=$CACHE/bin/$tool-$key
	mkdir -p "$CACHE/bin" "$OUT/bin"
	exec 9>"$CACHE/bin/.$tool.lock"
	flock 9
	if [ -f "$final/.complete" ]; then
		say "$tool: cached ($final)"
	else
		main=$(direct_requires "$dir/go.mod" | tr '\n' ' ')
		miss=$(missing_modules "$dir/go.sum" | wc -l)
		if [ "$miss" -gt 0 ]; then
			say "$tool: downloading ${main}and up to $miss more module(s) through the Go module proxy"
		fi
		say "$tool: building $(for b in $BINS; do printf '%s ' "${b%%=*}"; done)with $(go env GOVERSION) (cold: minutes)"
		tmp=$final.tmp.$$
		rm -rf "$tmp" && mkdir -p "$tmp"
		log=$tmp/build.log
		t0=$(date +%s)
		for b in $BINS; do
			name=${b%%=*} pkg=${b#*=}
			if ! (cd "$dir" && go build -trimpath -pgo=off -ldflags "$LDFLAGS" -o "$tmp/$name" "$pkg") >"$log" 2>&1; then
				cat "$log" >&2
				bad=$(grep -oE '[A-Za-z0-9._~/-]+@v[0-9][A-Za-z0-9.+-]*' "$log" | sort -u | tr '\n' ' ')
				say "$tool: FAILED building $pkg (requires ${main% }); ${bad:+module version(s) named: $bad}"
				rm -rf "$tmp"
				return 1
			fi
		done
		rm -f "$log"
		printf '%s\n' "$(($(date +%s) - t0))" >"$tmp/.build-seconds"
		touch "$tmp/.complete"
		rm -rf "$final" && mv "$tmp" "$final"
		say "$tool: built in $(cat "$final/.build-seconds") s ($final)"
	fi
	for b in $BINS; do
		link_into "$final/${b%%=*}" "$OUT/bin/${b%%=*}"
	done
	exec 9>&-
}

build_python() {
	req=$PEERS/python/requirements.txt
	key=$({ cat "$req"; python3 -c 'import sys; print(sys.version)'; echo "$RECIPE"; } | sha)
	venv=$CACHE/venv/$key
	mkdir -p "$CACHE/venv" "$OUT"
	exec 9>"$CACHE/venv/.lock"
	flock 9
	if [ -f "$venv/.complete" ]; then
		say "python: cached venv ($venv)"
	else
		reqs=$(grep -v '^#' "$req" | tr '\n' ' ')
		say "python: making a venv and downloading ${reqs}with their dependencies from the Python package index"
		t0=$(date +%s)
		rm -rf "$venv"
		python3 -m venv "$venv"
		if ! "$venv/bin/pip" install --disable-pip-version-check -q -r "$req" >"$CACHE/venv/pip.log" 2>&1; then
			cat "$CACHE/venv/pip.log" >&2
			say "python: FAILED installing $reqs(see the pip error above)"
			rm -rf "$venv"
			return 1
		fi
		printf '%s\n' "$(($(date +%s) - t0))" >"$venv/.build-seconds"
		touch "$venv/.complete"
		say "python: venv made in $(cat "$venv/.build-seconds") s ($venv)"
	fi
	ln -sfn "$venv" "$OUT/venv"
	exec 9>&-
}

if [ "${1:-}" = "--check" ]; then
	why=$(peers_missing)
	[ -z "$why" ] && exit 0
	printf '%s\n' "$why"
	exit 3
fi

why=$(peers_missing)
if [ -n "$why" ]; then
	say "cannot build the peers here: $why"
	exit 3
fi

tools="$*"
if [ -z "$tools" ]; then
	for d in "$PEERS"/*/; do
		t=$(basename "$d")
		[ -f "$d/go.mod" ] || [ "$t" = python ] || continue
		tools="$tools $t"
	done
fi
t_all=$(date +%s)
for t in $tools; do
	if [ "$t" = python ]; then
		build_python
	elif [ -d "$PEERS/$t" ]; then
		build_go "$t"
	else
		say "no such peer: $t (folders: $(cd "$PEERS" && ls -d */ | tr -d / | tr '\n' ' '))"
		exit 2
	fi
done
say "ready in $(($(date +%s) - t_all)) s: $OUT/bin ($(ls "$OUT/bin" 2>/dev/null | tr '\n' ' '))"

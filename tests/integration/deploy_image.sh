#!/bin/bash
# deadline: 180
# deploy_image.sh - the Dockerfile's runtime stage can run bin/rayop. No container engine runs
# on our machines, so the check is on packages: every shared library `ldd bin/rayop` resolves is
# mapped to its Debian package with `dpkg -S`, and that package must be in the runtime stage's
# RUNTIME_PACKAGES or pulled in by them (Depends/Pre-Depends, followed recursively through
# dpkg's database; libc6 comes with the base image). Also: the runtime stage is non-root and
# carries no -dev package, and the build stage installs the -dev package of each runtime one.
. "$(dirname "$0")/lib.sh"

DF=$LIB_ROOT/Dockerfile
BIN=$LIB_ROOT/bin/rayop
[ -x "$BIN" ] || { not_ok "bin/rayop is built"; exit 1; }
[ -f "$DF" ] || { not_ok "Dockerfile exists"; exit 1; }

runtime=$(sed -n 's/^# RUNTIME_PACKAGES: *//p' "$DF")
[ -n "$runtime" ] && ok "Dockerfile declares RUNTIME_PACKAGES ($runtime)" || { not_ok "RUNTIME_PACKAGES line"; exit 1; }
# The runtime stage's apt-get install line is the same list (so the comment cannot drift).
stage2=$(awk '/^FROM .* AS runtime/{r=1} r' "$DF")
inst=$(printf '%s\n' "$stage2" | tr -d '\\' | tr '\n' ' ' | sed -n 's/.*--no-install-recommends *\(.*\) *&& *rm -rf.*/\1/p' | xargs)
[ "$inst" = "$(echo $runtime | xargs)" ] && ok "runtime stage installs exactly RUNTIME_PACKAGES" \
    || not_ok "runtime stage installs exactly RUNTIME_PACKAGES" "installs: '$inst'"
printf '%s\n' "$stage2" | grep -q -- '-dev' && not_ok "no -dev package in the runtime stage" \
    || ok "no -dev package in the runtime stage"
printf '%s\n' "$stage2" | grep -Eq '^USER +[1-9][0-9]*' && ok "runtime stage runs as a non-root numeric USER" \
    || not_ok "runtime stage runs as a non-root numeric USER"

# Closure of the runtime packages over installed packages' Depends/Pre-Depends.
declare -A seen
queue="libc6 $runtime"
while [ -n "$queue" ]; do
    set -- $queue; p=$1; shift; queue="$*"
    p=${p%%:*}
    [ -n "${seen[$p]:-}" ] && continue
    seen[$p]=1
    deps=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" 2>/dev/null) || continue
    # "a (>= 1) | b, c" -> first alternative of each: a c
    for d in $(printf '%s' "$deps" | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g'); do
        [ -n "${seen[$d]:-}" ] || queue="$queue $d"
    done
done
ok "dependency closure of the runtime packages: ${#seen[@]} packages"

# One dpkg -S for every library (each call reads dpkg's whole file list: ~1 s apiece on a
# loaded machine). Each library is asked under its path, its resolved path and both usrmerge
# spellings (/lib/... is registered under /usr/lib or the other way round).
declare -A owner
libs=$(ldd "$BIN" | awk '/=> \//{print $1, $3} /^\t\/.*ld-linux/{print $1, $1}')
cands=$(printf '%s\n' "$libs" | while read -r lib path; do
    [ -n "$path" ] || continue
    real=$(readlink -f "$path")
    printf '%s\n%s\n/usr%s\n%s\n' "$path" "$real" "$path" "${path#/usr}"
done | sort -u)
while IFS= read -r line; do
    pkg=${line%%: *}; f=${line#*: }
    pkg=${pkg%%:*}; pkg=${pkg%%,*}
    [ -n "${owner[$f]:-}" ] || owner[$f]=$pkg
done < <(dpkg -S $cands 2>/dev/null)
missing=""; n=0
while read -r lib path; do
    [ -n "$path" ] || continue
    n=$((n + 1))
    real=$(readlink -f "$path")
    pkg=""
    for c in "$path" "$real" "/usr$path" "${path#/usr}"; do
        [ -n "$pkg" ] || pkg=${owner[$c]:-}
    done
    if [ -z "$pkg" ]; then missing="$missing $lib(no package)"; continue; fi
    [ -n "${seen[$pkg]:-}" ] || missing="$missing $lib($pkg)"
    used="${used:-} $pkg"
done <<<"$libs"
[ "$n" -gt 5 ] && ok "ldd bin/rayop lists $n libraries" || not_ok "ldd bin/rayop lists libraries" "only $n"
[ -z "$missing" ] && ok "every library of bin/rayop comes from the runtime packages" \
    || not_ok "every library of bin/rayop comes from the runtime packages" "missing:$missing"

# Nothing in the runtime stage is dead weight: each runtime package (ca-certificates aside: TLS
# roots, not a library) provides a library bin/rayop loads.
unused=""
for p in $runtime; do
    [ "$p" = ca-certificates ] && continue
    case " $used " in *" $p "*) ;; *) unused="$unused $p" ;; esac
done
[ -z "$unused" ] && ok "every runtime package provides a library bin/rayop loads" \
    || not_ok "every runtime package provides a library bin/rayop loads" "unused:$unused"

# The build stage has the -dev package of every direct link library.
for dev in libcurl4-openssl-dev libmsgpack-dev libcjson-dev libyaml-dev libuv1-dev libmicrohttpd-dev libgnutls28-dev libjemalloc-dev; do
    awk '/^FROM .* AS build/{b=1} /^FROM .* AS runtime/{b=0} b' "$DF" | grep -q -- "$dev" || missing_dev="${missing_dev:-} $dev"
done
[ -z "${missing_dev:-}" ] && ok "build stage installs the -dev packages" || not_ok "build stage installs the -dev packages" "$missing_dev"
exit 0

#!/bin/bash
# layout_wall.sh - the wall between the operator and the simulator, checked on the
# built binaries and the sources: bin/rayop holds no function defined in kubesim/'s
# objects, and no operator source includes a kubesim/ header. kubesim and rayop share
# code only through util/ and kobj/ (libcommon.a).
# deadline: 60
cd "$(dirname "$0")/../.." || exit 1
fail=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fail=1; }

lib=build/rel/libkubesim.a
if [ ! -f "$lib" ] || [ ! -x bin/rayop ]; then
    not_ok "build/rel/libkubesim.a and bin/rayop exist (run make first)"; exit 1
fi
# Every global function or object defined by the simulator's archive...
nm --defined-only -g "$lib" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u >/tmp/wall-sim.$$
# ...must not be defined in the operator binary.
nm --defined-only bin/rayop | awk 'NF == 3 { print $3 }' | sort -u >/tmp/wall-rayop.$$
n_sim=$(wc -l </tmp/wall-sim.$$)
leaked=$(comm -12 /tmp/wall-sim.$$ /tmp/wall-rayop.$$)
rm -f /tmp/wall-sim.$$ /tmp/wall-rayop.$$
if [ "$n_sim" -lt 100 ]; then not_ok "libkubesim.a defines a plausible number of symbols ($n_sim)"
else ok "libkubesim.a defines $n_sim global symbols"; fi
if [ -z "$leaked" ]; then ok "bin/rayop defines none of kubesim's symbols"
else not_ok "bin/rayop defines kubesim symbols: $(echo $leaked | head -c 400)"; fi

inc=$(grep -rln '#include "kubesim/' kube dashboard cache ipc watcher reconcilers cmd util kobj 2>/dev/null)
if [ -z "$inc" ]; then ok "no operator or shared source includes a kubesim/ header"
else not_ok "operator sources include kubesim/ headers: $inc"; fi
inc=$(grep -rln '#include "\(kube\|dashboard\|cache\|ipc\|watcher\|reconcilers\|cmd\)/' kubesim kobj util 2>/dev/null)
if [ -z "$inc" ]; then ok "kubesim/, kobj/ and util/ include no operator header"
else not_ok "simulator or shared sources include operator headers: $inc"; fi
exit $fail

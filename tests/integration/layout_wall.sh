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

# The host library knows no kind (the registration table is reconcilers/kinds.c) and
# the host self-test kind lives in test builds only (tests/tools/, bin/rayop_test).
# (reconcilers/batchsched/ is a library the kinds and the host's start-up checks share,
# not a kind.)
inc=$(grep -rn '#include "reconcilers/' reconcilers/host | grep -v '#include "reconcilers/\(host\|batchsched\)/')
if [ -z "$inc" ]; then ok "reconcilers/host/ includes no kind's header"
else not_ok "host sources include kind headers: $inc"; fi
if nm bin/rayop | grep -q 'test_kind_reconcile'; then not_ok "bin/rayop carries the test kind"
else ok "bin/rayop carries no test kind"; fi
bin/rayop controller test --state-dir /nonexistent >/dev/null 2>/tmp/wall-kind.$$
rc=$?
if [ "$rc" = 2 ] && grep -q 'unknown kind "test"' /tmp/wall-kind.$$; then
    ok "bin/rayop controller test: unknown kind (exit 2)"
else not_ok "bin/rayop controller test refused (rc=$rc: $(head -c 200 /tmp/wall-kind.$$))"; fi
rm -f /tmp/wall-kind.$$
exit $fail

#!/bin/bash
# layout_wall.sh - the wall between the operator and the simulator, checked on the
# built binaries and the sources: bin/rayop holds no function defined in kubesim/'s
# objects, and no operator source includes a kubesim/ header. kubesim and rayop share
# code only through util/ and kobj/ (libcommon.a). Inside the tree: no module's
# internal.h is included from another module, and the files of a module call each
# other one way (no call circle), apart from the circles listed in KNOWN_CIRCLES.
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

# A module's internal.h is for its own files (and its unit tests and fuzz targets).
leaks=$(grep -rn --include='*.c' --include='*.h' '#include "[a-z_/]*/internal\.h"' \
            cache cmd dashboard ipc kobj kube kubesim reconcilers util watcher |
        awk -F: '{ f = $1; h = $0; sub(/^[^"]*"/, "", h); sub(/\/internal\.h".*/, "", h)
                   if (index(f, h "/") != 1) print f " -> " h "/internal.h" }')
if [ -z "$leaks" ]; then ok "no module includes another module's internal.h"
else not_ok "internal headers included across modules: $leaks"; fi

# Call circles between the files of one module, from the objects (lib_calls.py).
# These are known and not yet broken (docs/architecture.md, "Conventions inside a
# module"); each entry is the set of files the circle may span. A new circle, or a
# known one that pulls in another file, fails.
KNOWN_CIRCLES="
cache: codec,grow,segment,writer
kubesim/cluster: certmgr,deploy,gang,gang_kai,gang_status,gang_volcano,gang_yunikorn,jobs,jobs_sync,kubelet,pods,run
kubesim/ray: auth,cli,dashboard,gateway,pod_log,proxy,runtime,serve,submitter_run
kubesim/runtime: net,pod,probe,runtime,svcproxy
kubesim/store: defaults,delete,gc,list,patch,persist,store,watch,write
"
circles=$(python3 tests/integration/lib_calls.py build/rel circles) ||
    { not_ok "lib_calls.py read the objects under build/rel"; exit 1; }
new=0; seen=""
while IFS= read -r line; do
    [ -n "$line" ] || continue
    mod=${line%%: *}; rest=${line#*: }; files=${rest%%  *}
    known=$(printf '%s\n' "$KNOWN_CIRCLES" | sed -n "s|^$mod: ||p")
    extra=$(comm -23 <(tr ',' '\n' <<<"$files" | sort) <(tr ',' '\n' <<<"$known" | sort))
    if [ -n "$known" ] && [ -z "$extra" ]; then
        seen="$seen $mod"
    else
        not_ok "a call circle between the files of $mod: $line"; new=1
    fi
done <<<"$circles"
[ "$new" = 0 ] && ok "no call circle inside a module beyond the known ones ($(wc -w <<<"$seen") of $(grep -c : <<<"$KNOWN_CIRCLES") still there)"
for mod in $(printf '%s\n' "$KNOWN_CIRCLES" | sed -n 's|: .*||p'); do
    case " $seen " in *" $mod "*) ;; *) echo "# $mod: its known circle is gone; drop it from KNOWN_CIRCLES";; esac
done
exit $fail

# lib_clients.sh - helpers shared by the real-client tests (kubectl_*.sh); sourced, never run.
#
# Builds on lib.sh (the HTTP layer's helpers: start_kubesim, wait_until, ok/not_ok, check)
# and adds what driving real clients needs:
#   clients_setup [FLAGS]    private work dir, kubesim started (start_kubesim FLAGS), its
#                            kubeconfig in $CL_KCFG; torn down on exit by lib.sh
#   kc ARGS...               $KUBECTL with that kubeconfig, a private --cache-dir and a
#                            20 s --request-timeout (CL_REQUEST_TIMEOUT)
#   kcr TAG ARGS...          kc with stdout in $CL_WORK/TAG.out, stderr in TAG.err; returns kc's rc
#   expect_rc WANT WHAT TAG  checks kcr's rc ($CL_RC) against WANT ("0" or "fail"); on a
#                            miss prints the captured output as "#" diagnostics
#   has TAG REGEX            grep -E on TAG.out + TAG.err
#   cl_wait SECS CMD...      polls CMD until it succeeds or SECS pass (a condition with a
#                            deadline; the poll interval is not a synchronisation)
#   bg_start TAG ARGS...     kc ARGS in the background into TAG.out (for get -w); bg_stop TAG
#   jpath KIND NAME EXPR     a jsonpath value of the object (one cached get -o json per state)
#   check_jpath WHAT KIND NAME EXPR WANT, check_has WHAT TAG REGEX, gone KIND NAME
# Paths: $RAYOP_ROOT (repo), $RAYOP_SHARED (the shared folder; default ../shared).

CL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RAYOP_ROOT=${RAYOP_ROOT:-$(cd "$CL_DIR/../.." && pwd)}
RAYOP_SHARED=${RAYOP_SHARED:-$RAYOP_ROOT/../shared}
export RAYOP_ROOT RAYOP_SHARED
# shellcheck source=tests/integration/lib.sh
. "$CL_DIR/lib.sh"

# clients_setup: a private work dir (removed on exit by lib.sh's cleanup, unless KEEP_WORK
# is set) and a fresh kubesim; kubectl uses the kubeconfig kubesim wrote ($KUBECONFIG).
clients_setup() {
    CL_WORK=$(mktemp -d "${TMPDIR:-/tmp}/rayop-clients.XXXXXX")
    [ -z "${KEEP_WORK:-}" ] && _LIB_DIRS="$_LIB_DIRS $CL_WORK"
    start_kubesim "$@" || { not_ok "the API server starts (kubesim or, with RAYOP_SERVER=real, tools/realk8s.sh)"; exit 1; }
    [ -n "${KEEP_WORK:-}" ] && _LIB_DIRS=${_LIB_DIRS/ $KUBESIM_DIR/} &&
        echo "# keeping $CL_WORK and $KUBESIM_DIR (request log)"
    CL_KCFG=$KUBECONFIG
    export CL_KCFG CL_WORK
}

# --request-timeout bounds every request, so a server that never answers fails one check
# instead of the whole file's deadline.
kc() {
    case "$1" in get|describe|explain|api-resources|version) ;; *) rm -f "$CL_WORK"/snap.*.json ;; esac
    "$KUBECTL" --kubeconfig="$CL_KCFG" --cache-dir="$CL_WORK/cache" --request-timeout="${CL_REQUEST_TIMEOUT:-20s}" "$@"
}

kcr() {
    local tag=$1; shift
    kc "$@" >"$CL_WORK/$tag.out" 2>"$CL_WORK/$tag.err"
    CL_RC=$?
    return $CL_RC
}

cl_diag() {   # cl_diag TAG: the captured output and the last requests as TAP diagnostics
    sed -n '1,25s/^/#   out: /p' "$CL_WORK/$1.out" 2>/dev/null
    grep -v 'envvar.go\|loader.go' "$CL_WORK/$1.err" 2>/dev/null | sed -n '1,25s/^/#   err: /p'
    tail -3 "$KUBESIM_REQLOG" 2>/dev/null | cut -c1-400 | sed 's/^/#   request: /'
}

expect_rc() {
    local want=$1 what=$2 tag=$3
    if { [ "$want" = 0 ] && [ "$CL_RC" -eq 0 ]; } || { [ "$want" = fail ] && [ "$CL_RC" -ne 0 ]; }; then
        ok "$what"
    else
        not_ok "$what (rc=$CL_RC)"
        cl_diag "$tag"
    fi
}

has() { cat "$CL_WORK/$1.out" "$CL_WORK/$1.err" 2>/dev/null | grep -Eq -- "$2"; }

# check_has WHAT TAG REGEX: ok when the captured output matches, else not ok with diagnostics.
check_has() {
    if has "$2" "$3"; then ok "$1"; else not_ok "$1"; echo "#   wanted /$3/"; cl_diag "$2"; fi
}

cl_wait() {
    local secs=$1; shift
    local end=$(( $(date +%s%N) / 1000000 + secs * 1000 ))
    while :; do
        rm -f "$CL_WORK"/snap.*.json        # each poll reads the server afresh
        "$@" && return 0
        [ $(( $(date +%s%N) / 1000000 )) -ge $end ] && return 1
        sleep 0.05
    done
}

# jpath KIND NAME EXPR: the value of a kubectl-style jsonpath EXPR ({.a.b}, {.a[0]}, {.a[*].b},
# {.a[?(@.k=="v")].b}, "\." inside a key) in the object. Reads go through one `get -o json`
# snapshot per object, dropped whenever kc runs anything but a read, so a run of checks on the
# same state costs one kubectl call.
jpath() {
    local snapf="$CL_WORK/snap.$1.$2.json"
    if [ ! -s "$snapf" ]; then
        "$KUBECTL" --kubeconfig="$CL_KCFG" --cache-dir="$CL_WORK/cache" --request-timeout="${CL_REQUEST_TIMEOUT:-20s}" \
            get "$1" "$2" -o json >"$snapf" 2>/dev/null || { rm -f "$snapf"; return 1; }
    fi
    /usr/bin/python3 - "$snapf" "$3" <<'EOF'
import json, re, sys
obj = json.load(open(sys.argv[1]))
expr = sys.argv[2].strip()
assert expr.startswith("{.") and expr.endswith("}"), expr
toks = re.findall(r'\[\?\(@\.([A-Za-z0-9_]+)=="([^"]*)"\)\]|\[(\*|\d+)\]|\.((?:[^.\[\\]|\\.)+)', expr[1:-1])
vals, many = [obj], False
for flt_k, flt_v, idx, key in toks:
    nxt = []
    for v in vals:
        if key:
            k = key.replace("\\.", ".")
            if isinstance(v, dict) and k in v:
                nxt.append(v[k])
        elif idx == "*" or flt_k:
            many = True
            for e in v if isinstance(v, list) else []:
                if not flt_k or (isinstance(e, dict) and str(e.get(flt_k)) == flt_v):
                    nxt.append(e)
        elif isinstance(v, list) and int(idx) < len(v):
            nxt.append(v[int(idx)])
    vals = nxt
def fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)
print(" ".join(fmt(v) for v in vals), end="")
EOF
}

# jpath_is KIND NAME EXPR WANT: the jsonpath value equals WANT.
jpath_is() { [ "$(jpath "$1" "$2" "$3")" = "$4" ]; }

# check_jpath WHAT KIND NAME EXPR WANT
check_jpath() {
    local got
    got=$(jpath "$2" "$3" "$4")
    if [ "$got" = "$5" ]; then ok "$1"; else not_ok "$1"; echo "#   $4: got '$got', want '$5'"; fi
}

# gone KIND NAME: the server answers NotFound for it.
gone() { kc get "$1" "$2" 2>&1 | grep -q '(NotFound)'; }

bg_start() {
    local tag=$1; shift
    kc "$@" >"$CL_WORK/$tag.out" 2>"$CL_WORK/$tag.err" &
    eval "CL_BG_$tag=$!"
    _LIB_PIDS="$_LIB_PIDS $!"      # lib.sh kills it on exit if bg_stop was not reached
}

bg_stop() {
    local pid
    eval "pid=\${CL_BG_$1:-}"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    return 0
}

lines_matching() { grep -Ec -- "$2" "$CL_WORK/$1.out" 2>/dev/null; }

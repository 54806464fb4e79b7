#!/bin/bash
# deadline: 90
# deploy_chart.sh - the Helm chart (deploy/helm/rayop) and the kustomize base
# (deploy/kustomize/base) describe one Pod with the watcher and a container per controller kind:
#  - the kustomize output has the containers, probes, resources, security contexts, shared
#    /dev/shm + state dir, RBAC (KubeRay's rules + Leases), metrics Service (structural checks,
#    deploy_manifest_check.py)
#  - kubectl apply --dry-run=server of it against kubesim passes, and a real apply creates it
#  - with helm (.peers/bin/helm, built by tools/peers/build.sh; else helm on PATH): helm lint,
#    helm template with the default values equals the kustomize base (the chart is the source),
#    variants (replicas 2 -> PDB, namespaced RBAC, RayCronJob gate, ServiceMonitor), bad values
#    refused, and the helm output applies with --dry-run=server too. Without helm these are
#    reported as SKIP, not as passes.
. "$(dirname "$0")/lib.sh"

CHART=$LIB_ROOT/deploy/helm/rayop
BASE=$LIB_ROOT/deploy/kustomize/base
CHECK="python3 $(dirname "$0")/deploy/manifest_check.py"
HELM=${HELM:-}
[ -n "$HELM" ] || { [ -x "$LIB_ROOT/.peers/bin/helm" ] && HELM=$LIB_ROOT/.peers/bin/helm; }
[ -n "$HELM" ] || HELM=$(command -v helm || true)

out=$(mktemp -d); _LIB_DIRS="$_LIB_DIRS $out"
if kubectl kustomize "$BASE" > "$out/kustomize.yaml" 2> "$out/kustomize.err"; then
    ok "kubectl kustomize deploy/kustomize/base"
else
    not_ok "kubectl kustomize deploy/kustomize/base" "$(cat "$out/kustomize.err")"; exit 1
fi
$CHECK default < "$out/kustomize.yaml"
grep -q '^kind: Namespace' "$out/kustomize.yaml" && grep -q 'namespace: rayop-system' "$out/kustomize.yaml" \
    && ok "base creates and uses namespace rayop-system" || not_ok "base creates and uses namespace rayop-system"

start_kubesim --tls || exit 1
kubectl create -f "$RAYOP_SHARED/kuberay/crds/" >/dev/null 2>&1
kubectl create namespace rayop-system >/dev/null
if kubectl apply --dry-run=server -f "$out/kustomize.yaml" > "$out/dry.out" 2>&1; then
    ok "kubectl apply --dry-run=server of the kustomize output"
else
    not_ok "kubectl apply --dry-run=server of the kustomize output" "$(tail -5 "$out/dry.out")"
fi
[ "$(kubectl get deploy -n rayop-system -o name 2>/dev/null | wc -l)" = 0 ] \
    && ok "dry run created nothing" || not_ok "dry run created nothing"
if kubectl apply -f "$out/kustomize.yaml" > "$out/apply.out" 2>&1; then
    ok "kubectl apply of the kustomize output"
else
    not_ok "kubectl apply of the kustomize output" "$(tail -5 "$out/apply.out")"
fi
check "Deployment, ServiceAccount, ClusterRole, Service exist" \
    kubectl get -n rayop-system deploy/rayop sa/rayop svc/rayop clusterrole/rayop clusterrolebinding/rayop role/rayop-leader-election

if [ -z "$HELM" ] || ! [ -x "$HELM" ]; then
    echo "skip - helm lint, helm template, chart = kustomize base (no helm: tools/peers/build.sh helm builds .peers/bin/helm)"
    exit 0
fi
ok "helm found: $HELM ($("$HELM" version --short 2>/dev/null))"
if "$HELM" lint "$CHART" > "$out/lint.out" 2>&1; then ok "helm lint"; else not_ok "helm lint" "$(cat "$out/lint.out")"; fi
"$HELM" lint "$CHART" --set replicas=2 --set featureGates[0].name=RayCronJob --set featureGates[0].enabled=true \
    > "$out/lint2.out" 2>&1 && ok "helm lint (replicas 2, cron gate)" || not_ok "helm lint (replicas 2, cron gate)" "$(cat "$out/lint2.out")"
tmpl() { "$HELM" template rayop "$CHART" --namespace rayop-system "$@"; }
tmpl > "$out/helm.yaml" 2> "$out/helm.err" && ok "helm template" || not_ok "helm template" "$(cat "$out/helm.err")"
# The chart is the source: its default output is the base (rayop.yaml) object for object.
if python3 - "$out/helm.yaml" "$out/kustomize.yaml" <<'PY'
import sys, yaml, json
def objs(path, drop_ns):
    out = {}
    for d in yaml.safe_load_all(open(path)):
        if not d or (drop_ns and d.get("kind") == "Namespace"):
            continue
        md = d.setdefault("metadata", {})
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            md.setdefault("namespace", "rayop-system")
        out[(d["kind"], md.get("namespace", ""), md["name"])] = json.dumps(d, sort_keys=True)
    return out
h, k = objs(sys.argv[1], False), objs(sys.argv[2], True)
diff = sorted(set(h) ^ set(k)) + sorted(x for x in set(h) & set(k) if h[x] != k[x])
if diff:
    print("#   differ: %s (run tools/deploy-render.sh)" % diff[:5])
sys.exit(1 if diff else 0)
PY
then ok "helm template (defaults) = kustomize base"; else not_ok "helm template (defaults) = kustomize base"; fi
tmpl --set replicas=2 | $CHECK replicas2
tmpl --set singleNamespaceInstall=true --set 'watchNamespace={a,b}' | $CHECK namespaced
tmpl --set 'featureGates[0].name=RayCronJob' --set 'featureGates[0].enabled=true' | $CHECK cron
tmpl --set metrics.serviceMonitor.enabled=true | $CHECK monitor
tmpl --set reconcileConcurrency=0 > /dev/null 2>&1 && not_ok "reconcileConcurrency=0 refused" || ok "reconcileConcurrency=0 refused"
tmpl --set batchScheduler.enabled=true --set batchScheduler.name=yunikorn > /dev/null 2>&1 \
    && not_ok "batchScheduler.enabled with a name refused" || ok "batchScheduler.enabled with a name refused"
tmpl --set controllers.rayjob.reconcileConcurrency=4 | grep -A12 'name: rayjob$' | grep -q -- '--reconcile-concurrency=4' \
    && ok "per-kind reconcileConcurrency" || not_ok "per-kind reconcileConcurrency"
crd_rule() { python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] in ("ClusterRole", "Role") and d["metadata"]["name"] == "rayop":
        for r in d.get("rules", []):
            if "customresourcedefinitions" in r.get("resources", []) and "watch" in r.get("verbs", []):
                sys.exit(0)
sys.exit(1)'; }
tmpl | crd_rule && ok "the ClusterRole lets the watcher watch an optional type's CRD" \
    || not_ok "the ClusterRole lets the watcher watch an optional type's CRD"
tmpl --set singleNamespaceInstall=true | crd_rule && not_ok "namespaced RBAC asks nothing cluster-scoped" \
    || ok "namespaced RBAC asks nothing cluster-scoped"
tmpl --set batchScheduler.name=volcano | grep -q 'scheduling.volcano.sh' && ok "volcano podgroups rule with batchScheduler.name=volcano" \
    || not_ok "volcano podgroups rule with batchScheduler.name=volcano"
if kubectl apply --dry-run=server -f "$out/helm.yaml" > "$out/hdry.out" 2>&1; then
    ok "kubectl apply --dry-run=server of the helm template output"
else
    not_ok "kubectl apply --dry-run=server of the helm template output" "$(tail -5 "$out/hdry.out")"
fi
exit 0

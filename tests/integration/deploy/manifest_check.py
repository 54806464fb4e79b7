"""manifest_check.py - structural checks of rendered rayop manifests (a helper of
deploy_chart.sh, not a test of its own: run with the YAML on stdin and a mode argument).
Prints TAP-ish ok/not ok lines.

  default          the chart's default output (= the kustomize base)
  replicas2        replicas=2: a PodDisruptionBudget
  namespaced       singleNamespaceInstall + watchNamespace={a,b}: Roles per namespace, no ClusterRole
  cron             the RayCronJob gate on: a raycronjob container and its Service port
  monitor          metrics.serviceMonitor.enabled: a ServiceMonitor scraping every container
"""
import sys
import yaml

mode = sys.argv[1]
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
fails = 0


def check(what, cond, detail=""):
    global fails
    if cond:
        print("ok - %s: %s" % (mode, what))
    else:
        fails += 1
        print("not ok - %s: %s" % (mode, what))
        if detail:
            print("#   %s" % detail)


def kinds(k):
    return [d for d in docs if d.get("kind") == k]


dep = kinds("Deployment")
check("one Deployment", len(dep) == 1)
if not dep:
    sys.exit(1)
pod = dep[0]["spec"]["template"]["spec"]
names = [c["name"] for c in pod["containers"]]
want = ["watcher", "raycluster", "rayjob", "rayservice"] + (["raycronjob"] if mode == "cron" else [])
check("containers %s" % names, names == want, "want %s" % want)
ports = []
for c in pod["containers"]:
    cmd = c.get("command", [])
    check("%s states its command" % c["name"],
          cmd[:1] == ["rayop"] and (cmd[1:] == ["watcher"] if c["name"] == "watcher"
                                    else cmd[1:] == ["controller", c["name"]]), str(cmd))
    for p in ("livenessProbe", "readinessProbe"):
        hg = c.get(p, {}).get("httpGet", {})
        check("%s %s httpGet" % (c["name"], p), hg.get("path") in ("/healthz", "/readyz") and hg.get("port"))
    r = c.get("resources", {})
    check("%s has resources" % c["name"], r.get("limits") and r.get("requests"))
    sc = c.get("securityContext", {})
    check("%s securityContext" % c["name"],
          sc.get("runAsNonRoot") is True and sc.get("readOnlyRootFilesystem") is True and
          sc.get("allowPrivilegeEscalation") is False and
          sc.get("capabilities", {}).get("drop") == ["ALL"] and
          sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", str(sc))
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    check("%s mounts /dev/shm and /run/rayop" % c["name"],
          mounts.get("/dev/shm") == "shm" and mounts.get("/run/rayop") == "state", str(mounts))
    env = {e["name"]: e for e in c.get("env", [])}
    check("%s gets POD_NAME from the downward API" % c["name"],
          env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name")
    args = c.get("args", [])
    check("%s uses the shared state dir" % c["name"], "--state-dir=/run/rayop" in args)
    if c["name"] != "watcher":
        check("%s leader election on, per-kind concurrency" % c["name"],
              "--enable-leader-election=true" in args and any(a.startswith("--reconcile-concurrency=") for a in args))
        fg = [a for a in args if a.startswith("--feature-gates=")]
        check("%s gets the feature gates" % c["name"], fg and "RayCronJob=" in fg[0])
    ports += [p["containerPort"] for p in c.get("ports", [])]
check("container ports are distinct (one network per Pod)", len(ports) == len(set(ports)), str(ports))
vols = {v["name"]: v for v in pod.get("volumes", [])}
shm = vols.get("shm", {}).get("emptyDir", {})
check("/dev/shm is a memory emptyDir sized from the cache",
      shm.get("medium") == "Memory" and shm.get("sizeLimit") == "288Mi", str(shm))
check("state dir is an emptyDir", "emptyDir" in vols.get("state", {}))
psc = pod.get("securityContext", {})
check("pod runAsNonRoot with a seccomp profile",
      psc.get("runAsNonRoot") is True and psc.get("seccompProfile", {}).get("type") == "RuntimeDefault")
sa = kinds("ServiceAccount")
check("ServiceAccount used by the Pod", sa and pod.get("serviceAccountName") == sa[0]["metadata"]["name"])

def rules_of(obj):
    out = set()
    for r in obj.get("rules", []):
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    out.add((g, res, v))
    return out

cr, roles = kinds("ClusterRole"), [r for r in kinds("Role") if not r["metadata"]["name"].endswith("-leader-election")]
if mode == "namespaced":
    check("no ClusterRole under singleNamespaceInstall", not cr)
    check("a Role per watched namespace", sorted(r["metadata"].get("namespace") for r in roles) == ["a", "b"],
          str([r["metadata"].get("namespace") for r in roles]))
    check("a RoleBinding per watched namespace",
          len([b for b in kinds("RoleBinding") if not b["metadata"]["name"].endswith("-leader-election")]) == 2)
    w = [c for c in pod["containers"] if c["name"] == "watcher"][0]
    check("watcher watches the listed namespaces", "--watch-namespace=a,b" in w["args"], str(w["args"]))
else:
    check("one ClusterRole + binding", len(cr) == 1 and len(kinds("ClusterRoleBinding")) == 1)
    if cr:
        rs = rules_of(cr[0])
        need = [("ray.io", "rayjobs", "update"), ("ray.io", "rayclusters/status", "patch"),
                ("", "pods", "deletecollection"), ("batch", "jobs", "create"),
                ("coordination.k8s.io", "leases", "update"), ("coordination.k8s.io", "leases", "create"),
                ("", "services/proxy", "get"), ("", "events", "create"),
                ("", "persistentvolumeclaims", "watch"), ("networking.k8s.io", "ingresses", "create"),
                ("rbac.authorization.k8s.io", "roles", "create")]
        missing = [n for n in need if n not in rs]
        check("ClusterRole has KubeRay's rules plus Leases", not missing, str(missing))
le = [r for r in kinds("Role") if r["metadata"]["name"].endswith("-leader-election")]
check("leader-election Role for Leases", le and ("coordination.k8s.io", "leases", "update") in rules_of(le[0]))
svc = kinds("Service")
check("metrics Service with a port per container",
      svc and len(svc[0]["spec"]["ports"]) == len(want) and svc[0]["spec"]["ports"][0]["port"] == 8080,
      str(svc[0]["spec"]["ports"] if svc else None))
check("PodDisruptionBudget only with replicas > 1",
      bool(kinds("PodDisruptionBudget")) == (mode == "replicas2"))
if mode == "replicas2":
    check("replicas 2", dep[0]["spec"]["replicas"] == 2)
sm = kinds("ServiceMonitor")
check("ServiceMonitor only when enabled", bool(sm) == (mode == "monitor"))
if mode == "monitor" and sm:
    check("ServiceMonitor scrapes every container", len(sm[0]["spec"]["endpoints"]) == len(want))
sys.exit(1 if fails else 0)

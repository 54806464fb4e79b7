#!/usr/bin/python3
"""kuberay_diff.py - the real KubeRay operator and rayop side by side on one kubesim.

Every RayCluster, RayJob and RayService sample of $RAYOP_SHARED/kuberay/samples is
applied twice: once in a namespace only KubeRay watches (kr-N) and once in a namespace
only rayop watches (ro-N). When both operators have gone quiet (no writes for a few
seconds, every RayJob finished, or the deadline), every object each operator created,
the Ray custom resources with their status, the Events (involved object, type, reason)
and the API requests per object are read back, normalised (namespace, random name
suffixes, uids, resourceVersions, timestamps, IPs, node names, version annotations),
and compared object by object.

Each differing field must be explained by a rule in docs/kuberay-differences.md (a
table row: kind, field glob, reason). The last line is
    N objects compared, M differ, K explained
and the exit status is 1 when some difference is unexplained (M > K).

    python3 tools/kuberay_diff.py [--samples a.yaml,b.yaml] [--deadline S] [--verbose]

Needs bin/kubesim, bin/rayop and .peers/bin/kuberay-operator (make all peers).
Used by `make diff-kuberay` (all samples) and tests/integration/kuberay_diff.py (a few).
"""
import argparse
import collections
import fnmatch
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "raycluster"))
import rclib  # noqa: E402
import yaml  # noqa: E402

SAMPLES = os.path.join(rclib.SHARED, "kuberay", "samples")
KUBERAY = os.environ.get("KUBERAY_BIN") or os.path.join(ROOT, ".peers", "bin", "kuberay-operator")
DOC = os.path.join(ROOT, "docs", "kuberay-differences.md")
RAY_KINDS = ("RayCluster", "RayJob", "RayService")
# inputs a sample brings along, created before the Ray resource (and not compared)
INPUT_KINDS = {"ConfigMap": "configmaps", "Secret": "secrets", "ServiceAccount": "serviceaccounts",
               "Service": "services", "PersistentVolumeClaim": "persistentvolumeclaims"}
# what the operators create and what is read back
READ = [("v1", "pods", "Pod"), ("v1", "services", "Service"), ("v1", "serviceaccounts", "ServiceAccount"),
        ("v1", "secrets", "Secret"), ("v1", "configmaps", "ConfigMap"),
        ("rbac.authorization.k8s.io/v1", "roles", "Role"),
        ("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
        ("batch/v1", "jobs", "Job"), ("networking.k8s.io/v1", "ingresses", "Ingress"),
        ("ray.io/v1", "rayclusters", "RayCluster"), ("ray.io/v1", "rayjobs", "RayJob"),
        ("ray.io/v1", "rayservices", "RayService")]
# kubesim's own kubelet/scheduler events: not the operators'
SIM_REASONS = {"Scheduled", "Pulled", "Created", "Started", "Killing", "FailedScheduling",
               "SuccessfulCreate", "Completed", "SuccessfulDelete", "BackOff"}
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
IP_RE = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b")
# the alphabet of generateName and of the operators' random cluster suffixes (no vowels,
# no 0/1/3), so words like "-group" or "-small" are left alone
RAND = "[bcdfghjklmnpqrstvwxz2456789]{5}"
SUFFIX_RE = re.compile(r"-%s$" % RAND)
RAND_RE = re.compile(r"(?<=[a-z0-9])-%s(?![a-z0-9])" % RAND)
VERSION_RE = re.compile(r"\bv1\.[0-9]+\.[0-9]+\b")
UID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def load_samples(only=None):
    """[(relative file, [docs])] for every sample holding a Ray resource we compare."""
    out = []
    for dirpath, _, files in os.walk(SAMPLES):
        for f in sorted(files):
            if not f.endswith(".yaml"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), SAMPLES)
            if only and rel not in only and f not in only:
                continue
            try:
                with open(os.path.join(dirpath, f)) as fh:
                    docs = [d for d in yaml.safe_load_all(fh) if isinstance(d, dict)]
            except yaml.YAMLError:
                continue
            if any(d.get("kind") in RAY_KINDS for d in docs):
                out.append((rel, docs))
    return sorted(out)


# The simulated node pool. It must hold every Pod both operators create in whatever order
# they come: kubesim spreads Pods (LeastAllocated), so with nodes just big enough the
# samples' small Pods end up on every node, and a Pod needing most of a node (the deepseek
# sample's 500Gi / 8-GPU workers) stays Pending for whichever operator created it later -
# a load-made difference (a run at load average 88 had KubeRay's still Pending at its
# deadline). pool_check() proves the pool holds them in any order. Memory stays under
# kubesim's quantity clamp (10^12 bytes).
POOL_NODES, POOL_CPU, POOL_MEM_GI, POOL_GPU = 128, 256, 900, 8
QTY_RE = re.compile(r"^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
QTY_MULT = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}


def qty(v):
    m = QTY_RE.match(str(v))
    return float(m.group(1)) * QTY_MULT[m.group(2)] if m else 0.0


def sample_pods(docs):
    """(cpu, memory bytes, gpus) of every Pod a sample's Ray resources ask for at their
    replicas (Pods needing TPUs are left out: the pool has none, so they never bind)."""
    out = []

    def pod(tmpl, n):
        cpu = mem = gpu = 0.0
        for c in ((tmpl or {}).get("spec") or {}).get("containers") or []:
            r = c.get("resources") or {}
            rq, li = r.get("requests") or {}, r.get("limits") or {}
            if "google.com/tpu" in rq or "google.com/tpu" in li:
                return
            cpu += qty(rq.get("cpu", li.get("cpu", 0)))
            mem += qty(rq.get("memory", li.get("memory", 0)))
            gpu += qty(rq.get("nvidia.com/gpu", li.get("nvidia.com/gpu", 0)))
        out.extend([(cpu, mem, gpu)] * n)

    for d in docs:
        spec = d.get("spec") or {}
        spec = {"RayCluster": spec, "RayJob": spec.get("rayClusterSpec"),
                "RayService": spec.get("rayClusterConfig")}.get(d.get("kind"))
        if not isinstance(spec, dict):
            continue
        pod((spec.get("headGroupSpec") or {}).get("template"), 1)
        for g in spec.get("workerGroupSpecs") or []:
            n = int(g.get("replicas", g.get("minReplicas", 0)) or 0) * int(g.get("numOfHosts", 1) or 1)
            pod(g.get("template"), n)
    return out


def pool_check(samples):
    """None when the pool holds every Pod of both operators in any order, else why not.
    A node is ruled out for the largest Pod when its memory or CPU in use exceeds what that
    Pod leaves free, or any of its GPUs is taken; at most total/threshold nodes can be
    ruled out per resource (pigeonhole), at most one per GPU Pod for the GPUs. Fewer than
    the pool's nodes ruled out leaves one with room. A margin of 2x covers what the
    samples do not spell out (submitter Jobs, autoscaler sidecars, a second cluster)."""
    pods = [p for _, docs in samples for p in sample_pods(docs)] * 2   # both operators
    if not pods:
        return None
    cpu_max, mem_max = max(p[0] for p in pods), max(p[1] for p in pods)
    cpu_room, mem_room = POOL_CPU - cpu_max, POOL_MEM_GI * 2 ** 30 - mem_max
    if cpu_room <= 0 or mem_room <= 0 or max(p[2] for p in pods) > POOL_GPU:
        return "a Pod larger than a node (%.0f CPU, %.0f Gi)" % (cpu_max, mem_max / 2 ** 30)
    ruled = (2 * sum(p[0] for p in pods) / cpu_room + 2 * sum(p[1] for p in pods) / mem_room
             + sum(1 for p in pods if p[2] > 0))
    if ruled >= POOL_NODES:
        return "up to %.0f of %d nodes could be too full for the largest Pod" % (ruled, POOL_NODES)
    return None


def load_rules():
    """Rows `| Kind | `field glob` | reason |` of docs/kuberay-differences.md."""
    rules = []
    try:
        with open(DOC) as fh:
            for line in fh:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) < 3 or not cells[1].startswith("`"):
                    continue
                rules.append((cells[0], cells[1].strip("`"), cells[2]))
    except OSError:
        pass
    return rules


def explained(rules, kind, path, sample=""):
    for k, glob, _ in rules:
        # "Kind @ sample.yaml": a rule for one sample only
        k, _, only = (x.strip() for x in k.partition("@"))
        if only and only != sample and only != os.path.basename(sample):
            continue
        # brackets in a rule are literal (list keys such as env[NAME]); only * is a wildcard
        pat = "".join("[[]" if c == "[" else "[]]" if c == "]" else c for c in glob)
        if (k == "*" or k == kind) and fnmatch.fnmatchcase(path, pat):
            return True
    return False


# ---- normalisation ----------------------------------------------------------------

def keyed_list(v):
    """Lists of named items become maps (containers, env, ports, volumes, conditions)."""
    if v and all(isinstance(x, dict) for x in v):
        for k in ("name", "type", "mountPath"):
            keys = [x.get(k) for x in v]
            if all(isinstance(x, str) for x in keys) and len(set(keys)) == len(keys):
                return {"[%s]" % x: y for x, y in zip(keys, v)}
    return None


def norm(v, ns, key=""):
    if isinstance(v, dict):
        return {k: norm(x, ns, k) for k, x in v.items()}
    if isinstance(v, list):
        m = keyed_list(v)
        if m is not None:
            return {k: norm(x, ns, key) for k, x in m.items()}
        return [norm(x, ns, key) for x in v]
    if isinstance(v, str):
        if TIME_RE.match(v):
            return "<time>"
        if UID_RE.match(v):
            return "<uid>"
        s = v.replace(ns, "<ns>")
        s = IP_RE.sub("<ip>", s)
        s = RAND_RE.sub("-<rand>", s)
        s = VERSION_RE.sub("<version>", s)
        if key in ("nodeName", "hostname") and s.startswith("kubesim-node"):
            return "<node>"
        return s
    return v


def norm_name(name, kind):
    return RAND_RE.sub("-<rand>", name)


def norm_obj(o, kind, ns):
    o = json.loads(json.dumps(o))
    md = o.get("metadata", {})
    for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink",
              "deletionTimestamp", "namespace", "generateName"):
        md.pop(k, None)
    md["name"] = norm_name(md.get("name", ""), kind)
    for ref in md.get("ownerReferences", []) or []:
        ref.pop("uid", None)
        ref["name"] = norm_name(ref.get("name", ""), ref.get("kind", ""))
    for k in list((md.get("annotations") or {})):
        if "version" in k.lower() and k != "ray.io/ray-version":
            md["annotations"][k] = "<version>"
    o.pop("apiVersion", None)
    o.pop("kind", None)
    if kind == "Pod":
        # the simulated kubelet's part: scheduling and container runtime state
        st = o.get("status", {})
        o["status"] = {"phase": st.get("phase")}
        spec = o.get("spec", {})
        spec.pop("nodeName", None)
    if kind == "Service":
        for k in ("clusterIP", "clusterIPs"):
            o.get("spec", {}).pop(k, None)
    return norm(o, ns)


def leaves(v, path=""):
    if isinstance(v, dict):
        if not v:
            yield path, {}
        for k, x in v.items():
            sep = "" if k.startswith("[") else "."
            yield from leaves(x, path + (sep + k if path else k))
    elif isinstance(v, list):
        if not v:
            yield path, []
        for i, x in enumerate(v):
            yield from leaves(x, "%s[%d]" % (path, i))
    else:
        yield path, v


def diff_paths(a, b):
    la, lb = dict(leaves(a)), dict(leaves(b))
    out = []
    for p in sorted(set(la) | set(lb)):
        if la.get(p, "<absent>") != lb.get(p, "<absent>"):
            out.append((p, la.get(p, "<absent>"), lb.get(p, "<absent>")))
    return out


# ---- the run ----------------------------------------------------------------------

class Run:
    def __init__(self, samples, verbose=False):
        self.samples = samples
        self.verbose = verbose
        self.env = rclib.Env(["--nodes", str(POOL_NODES), "--node-gpu", str(POOL_GPU),
                              "--node-cpu", str(POOL_CPU), "--node-memory", "%dGi" % POOL_MEM_GI,
                              "--pod-start-ms", "100",
                              "--pod-ready-ms", "200", "--pod-stop-ms", "100"], name="kr-diff")
        self.inputs = set()

    def ns_pair(self, i):
        return "kr-%d" % i, "ro-%d" % i

    def start(self):
        e = self.env
        krs = ",".join(self.ns_pair(i)[0] for i in range(len(self.samples)))
        ros = ",".join(self.ns_pair(i)[1] for i in range(len(self.samples)))
        for i in range(len(self.samples)):
            for ns in self.ns_pair(i):
                e.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": ns}})
        self.kr_log = open(os.path.join(e.work, "kuberay.log"), "wb")
        self.kr = subprocess.Popen([KUBERAY, "--kubeconfig", e.kubeconfig, "--enable-leader-election=false",
                                    "--use-kubernetes-proxy", "--watch-namespace", krs,
                                    "--metrics-addr", "127.0.0.1:0", "--health-probe-bind-address",
                                    "127.0.0.1:0", "--reconcile-concurrency", "4",
                                    "--qps", "100", "--burst", "200"],
                                   stdout=self.kr_log, stderr=self.kr_log)
        e.procs["kuberay"] = self.kr
        e.start("rayop", ["up", "--kubeconfig", e.kubeconfig, "--state-dir", e.state,
                          "--watch-namespace", ros, "--use-kubernetes-proxy=true", "--workers=4",
                          "--qps", "100", "--burst", "200", "--metrics-addr", "0",
                          "--health-probe-bind-address", "0", "--enable-leader-election=false"])

    def apply(self):
        e = self.env
        for i, (f, docs) in enumerate(self.samples):
            for ns in self.ns_pair(i):
                for d in docs:
                    kind = d.get("kind")
                    if kind in INPUT_KINDS:
                        d = json.loads(json.dumps(d))
                        d.setdefault("metadata", {})["namespace"] = ns
                        e.req("POST", "/api/v1/namespaces/%s/%s" % (ns, INPUT_KINDS[kind]), d)
                        self.inputs.add((ns, kind, d["metadata"].get("name")))
                for d in docs:
                    kind = d.get("kind")
                    if kind not in RAY_KINDS:
                        continue
                    d = json.loads(json.dumps(d))
                    d.setdefault("metadata", {})["namespace"] = ns
                    code, body = e.req("POST", "/apis/ray.io/v1/namespaces/%s/%ss" % (ns, kind.lower()), d)
                    if code != 201 and self.verbose:
                        print("# %s: %s %s refused: %s" % (f, ns, kind, body.get("message")), flush=True)

    def operator_writes(self):
        n = 0
        with open(self.env.reqlog) as fh:
            for line in fh:
                if '"method":"GET"' in line or "Python-urllib" in line:
                    continue
                n += 1
        return n

    def jobs_done(self):
        for i in range(len(self.samples)):
            for ns in self.ns_pair(i):
                for j in self.env.items("/apis/ray.io/v1/namespaces/%s/rayjobs" % ns):
                    s = j.get("status", {}).get("jobDeploymentStatus", "")
                    if s not in ("Complete", "Failed", "ValidationFailed", ""):
                        return False
        return True

    def wait_quiet(self, deadline, quiet=8.0, min_wait=15.0):
        t0 = time.monotonic()
        last, last_change = -1, time.monotonic()
        while time.monotonic() - t0 < deadline:
            n = self.operator_writes()
            if n != last:
                last, last_change = n, time.monotonic()
            if (time.monotonic() - t0 >= min_wait and time.monotonic() - last_change >= quiet
                    and self.jobs_done()):
                return time.monotonic() - t0
            time.sleep(0.5)
        return None

    def snapshot(self, ns):
        objs = collections.defaultdict(list)
        # RayClusters a RayJob or RayService named OWNER-xxxxx: the name and everything
        # derived from it (Pods, Services, URLs) becomes OWNER-<rand>
        gen = {}
        for rc in self.env.items("/apis/ray.io/v1/namespaces/%s/rayclusters" % ns):
            md = rc.get("metadata", {})
            for ref in md.get("ownerReferences", []) or []:
                nm = md.get("name", "")
                if nm.startswith(ref.get("name", "") + "-") and len(nm) == len(ref["name"]) + 6:
                    gen[nm] = ref["name"] + "-<rand>"
        rand = re.compile("|".join(re.escape(k) for k in sorted(gen, key=len, reverse=True)) or "(?!)")
        for gv, res, kind in READ:
            base = "/api/v1" if gv == "v1" else "/apis/" + gv
            for o in self.env.items("%s/namespaces/%s/%s" % (base, ns, res)):
                name = o.get("metadata", {}).get("name")
                if (ns, kind, name) in self.inputs:
                    continue
                if kind == "ServiceAccount" and name == "default":
                    continue
                if kind == "ConfigMap" and name == "kube-root-ca.crt":
                    continue
                o = json.loads(rand.sub(lambda m: gen[m.group(0)], json.dumps(o)))
                name = o["metadata"]["name"]
                objs[(kind, norm_name(name, kind))].append(norm_obj(o, kind, ns))
        events = set()
        seen = set()
        for api, ref in (("/api/v1", "involvedObject"), ("/apis/events.k8s.io/v1", "regarding")):
            for ev in self.env.items("%s/namespaces/%s/events" % (api, ns)):
                uid = ev.get("metadata", {}).get("uid")
                if uid in seen or ev.get("reason") in SIM_REASONS:
                    continue
                seen.add(uid)
                io = ev.get(ref) or ev.get("involvedObject") or ev.get("regarding") or {}
                name = rand.sub(lambda m: gen[m.group(0)], io.get("name", ""))
                events.add((io.get("kind"), norm_name(name, io.get("kind", "")),
                            ev.get("type"), ev.get("reason")))
        return objs, events

    def requests(self):
        """{ns: Counter((verb, resource))} of the operators' requests per namespace."""
        per = collections.defaultdict(collections.Counter)
        with open(self.env.reqlog) as fh:
            for line in fh:
                if "Python-urllib" in line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                ns = r.get("namespace") or ""
                if ns.startswith(("kr-", "ro-")) and r.get("verb") not in ("watch",):
                    per[ns][(r.get("verb"), r.get("resource", "") +
                             ("/" + r["subresource"] if r.get("subresource") else ""))] += 1
        return per


def compare(run, rules, verbose):
    compared = differ = expl = 0
    unexplained = []
    req = run.requests()
    req_tot = collections.Counter()
    for i, (f, docs) in enumerate(run.samples):
        kr, ro = run.ns_pair(i)
        (ko, ke), (ro_o, ro_e) = run.snapshot(kr), run.snapshot(ro)
        for key in sorted(set(ko) | set(ro_o)):
            kind, name = key
            a, b = ko.get(key, []), ro_o.get(key, [])
            a = sorted(a, key=lambda x: json.dumps(x, sort_keys=True))
            b = sorted(b, key=lambda x: json.dumps(x, sort_keys=True))
            for j in range(max(len(a), len(b))):
                compared += 1
                if j >= len(a) or j >= len(b):
                    paths = [("(object)", "present" if j < len(a) else "<absent>",
                              "present" if j < len(b) else "<absent>")]
                else:
                    paths = diff_paths(a[j], b[j])
                if not paths:
                    continue
                differ += 1
                bad = [p for p in paths if not explained(rules, kind, p[0], f)]
                if not bad:
                    expl += 1
                else:
                    unexplained.append((f, kind, name, bad))
                if verbose:
                    for p in paths:
                        mark = "  " if explained(rules, kind, p[0], f) else "!!"
                        print("# %s %s %s/%s %s: kuberay=%s rayop=%s" % (
                            mark, f, kind, name, p[0], json.dumps(p[1])[:80], json.dumps(p[2])[:80]))
        # Events: (involved kind, name, type, reason) present on one side only
        for ev in sorted(ke ^ ro_e, key=str):
            compared += 1
            differ += 1
            side = "kuberay only" if ev in ke else "rayop only"
            path = "event.%s.%s.%s" % (side.split()[0], ev[2], ev[3])
            if explained(rules, "Event", "%s/%s" % (ev[0], path), f):
                expl += 1
            else:
                unexplained.append((f, "Event", "%s/%s" % (ev[0], ev[1]), [(path, side, "")]))
            if verbose:
                print("# %s %s Event %s %s/%s %s" % ("  " if explained(rules, "Event", "%s/%s" % (ev[0], path), f)
                                                     else "!!",
                                                     f, side, ev[0], ev[1], path))
        compared += len(ke & ro_e)
        req_tot["kuberay"] += sum(req[kr].values())
        req_tot["rayop"] += sum(req[ro].values())
    return compared, differ, expl, unexplained, req, req_tot


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="")
    ap.add_argument("--deadline", type=float, default=300)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    for b in (KUBERAY, os.path.join(ROOT, "bin", "rayop"), os.path.join(ROOT, "bin", "kubesim")):
        if not os.access(b, os.X_OK):
            print("kuberay_diff: %s is missing (make all peers)" % b)
            return 3
    only = set(s for s in a.samples.split(",") if s)
    samples = load_samples(only)
    rules = load_rules()
    why = pool_check(samples)
    if why:
        print("kuberay_diff: the node pool cannot hold every Pod in any order: %s "
              "(POOL_* in tools/kuberay_diff.py)" % why)
        return 3
    run = Run(samples, a.verbose)
    run.start()
    run.apply()
    took = run.wait_quiet(a.deadline)
    print("# %d samples, %s" % (len(samples), "settled in %.0f s" % took if took else
                                "deadline reached before both operators went quiet"), flush=True)
    compared, differ, expl, unexplained, req, req_tot = compare(run, rules, a.verbose)
    for f, kind, name, bad in unexplained:
        for p, x, y in bad[:6]:
            print("# UNEXPLAINED %s %s %s %s: kuberay=%s rayop=%s" % (
                f, kind, name, p, json.dumps(x)[:100], json.dumps(y)[:100]))
    print("# API requests (all verbs but watch) in the sample namespaces: kuberay %d, rayop %d"
          % (req_tot["kuberay"], req_tot["rayop"]))
    if a.verbose:
        for i, (f, _) in enumerate(samples):
            kr, ro = run.ns_pair(i)
            print("# requests %s: kuberay %s | rayop %s" % (
                f, dict(req[kr]), dict(req[ro])))
    print("%d objects compared, %d differ, %d explained" % (compared, differ, expl), flush=True)
    return 0 if differ == expl else 1


if __name__ == "__main__":
    sys.exit(main())

# rclib.py - helpers for the RayCluster end-to-end tests (raycluster_*.py beside
# this folder): a private kubesim (or, with RAYOP_SERVER=real, a real control plane from
# tools/realk8s.sh) with the KubeRay CRDs, `rayop watcher` and
# `rayop controller raycluster` processes on loopback, plain-HTTP API calls,
# TAP-ish ok / not ok lines and polling with deadlines. Every process started
# is stopped at exit and the watcher's state dir is released with `rayop clean`.
# Not a test itself (tests/run.sh only runs the files directly in
# tests/integration/).
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import lib_realserver  # noqa: E402  (RAYOP_SERVER=real: tools/realk8s.sh instead of kubesim)

ROOT = os.environ.get("RAYOP_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# KubeRay's CRDs and samples: RAYOP_SHARED (tests/run.sh sets it), else beside the clone
SHARED = os.environ.get("RAYOP_SHARED") or os.path.join(ROOT, "..", "shared")
failures = 0


def ok(what):
    print("ok - " + what, flush=True)


def check(what, cond, detail=None):
    global failures
    if cond:
        ok(what)
        return True
    failures += 1
    print("not ok - " + what, flush=True)
    if detail is not None:
        text = detail if isinstance(detail, str) else json.dumps(detail, indent=1, default=str)
        for line in text.splitlines()[:40]:
            print("#   " + line, flush=True)
    return False


def wait_until(deadline_s, cond, every=0.1):
    """Polls cond() until it returns a true value or deadline_s pass; returns the last value."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(every)


class Env:
    """kubesim + CRDs + rayop watcher + controllers, all stopped at exit."""

    def __init__(self, kubesim_args=(), name="rc"):
        self.work = tempfile.mkdtemp(prefix="rayop-%s-it." % name)
        self.procs = {}
        self.state = os.path.join(self.work, "state")
        # private copies: other builds relink bin/ while a test runs
        self.rayop = os.path.join(self.work, "rayop")
        shutil.copy(os.environ.get("RC_IT_RAYOP") or os.path.join(ROOT, "bin", "rayop"), self.rayop)
        kubesim = os.path.join(self.work, "kubesim")
        shutil.copy(os.path.join(ROOT, "bin", "kubesim"), kubesim)
        self.kubeconfig = os.path.join(self.work, "kubeconfig")
        self.reqlog = os.path.join(self.work, "requests.log")
        atexit.register(self.close)
        self.real = self.sim = None
        self.ssl, self.auth = None, {}
        if lib_realserver.wanted():
            # the same test against a real control plane; kubesim's simulation knobs have no
            # counterpart there, only the node count carries over
            args = list(kubesim_args)
            nodes = int(args[args.index("--nodes") + 1]) if "--nodes" in args else 3
            self.real = lib_realserver.RealK8s(self.work, nodes=nodes)
            self.url, self.kubeconfig = self.real.url, self.real.kubeconfig
            self.ssl, self.auth = self.real.ssl, self.real.headers()
            print("# real control plane at %s, up in %d ms" % (self.url, self.real.start_ms), flush=True)
        else:
            self.sim_log = open(os.path.join(self.work, "kubesim.log"), "wb")
            self.sim = subprocess.Popen([kubesim, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                                         self.kubeconfig, "--request-log", self.reqlog] + list(kubesim_args)
                                        # no --nodes: the API server only, not kubesim's default pool
                                        + ([] if "--nodes" in kubesim_args else ["--nodes", "0"]),
                                        stdout=subprocess.PIPE, stderr=self.sim_log)
            self.url = self.sim.stdout.readline().decode().strip()
            if not self.url.startswith("http"):
                raise RuntimeError("kubesim did not start")
        for f in sorted(os.listdir(os.path.join(SHARED, "kuberay", "crds"))):
            with open(os.path.join(SHARED, "kuberay", "crds", f)) as fh:
                crd = yaml.safe_load(fh)
            self.req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        if not wait_until(20, lambda: self.req("GET", "/apis/ray.io/v1/rayclusters")[0] == 200):
            raise RuntimeError("RayCluster CRD not served")

    # ---- processes ----
    def start(self, name, args, env=None):
        log = open(os.path.join(self.work, name + ".log"), "wb")
        penv = dict(os.environ, **env) if env else None
        p = subprocess.Popen([self.rayop] + args, stdout=log, stderr=log, env=penv)
        self.procs[name] = p
        return p

    def start_watcher(self):
        return self.start("watcher", ["watcher", "--kubeconfig", self.kubeconfig,
                                      "--state-dir", self.state])

    def start_controller(self, name="ctl", extra=(), env=None):
        return self.start(name, ["controller", "raycluster", "--kubeconfig", self.kubeconfig,
                                 "--state-dir", self.state, "--metrics-addr", "127.0.0.1:0",
                                 "--health-probe-bind-address", "127.0.0.1:0"] + list(extra), env)

    def metrics_text(self, name):
        """Controller name's /metrics page (None if unreachable)."""
        port = self.port_of(name, "serving metrics")
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
        except (OSError, ValueError):
            return None

    def metric(self, name, metric):
        """Sum of the samples of metric on controller name's /metrics (None if unreachable)."""
        text = self.metrics_text(name)
        if text is None:
            return None
        total = 0.0
        for line in text.splitlines():
            if line.startswith(metric + "{") or line.startswith(metric + " "):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def log_lines(self, name):
        try:
            with open(os.path.join(self.work, name + ".log"), "rb") as f:
                return [l.decode(errors="replace") for l in f]
        except OSError:
            return []

    def port_of(self, name, what):
        for line in self.log_lines(name):
            if '"msg":"%s"' % what in line:
                try:
                    return int(json.loads(line).get("port", "0"))
                except ValueError:
                    pass
        return 0

    def close(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        subprocess.run([self.rayop, "clean", "--state-dir", self.state],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.real:
            self.real.stop()
        if self.sim and self.sim.poll() is None:
            self.sim.terminate()
            try:
                self.sim.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.sim.kill()
        keep = os.environ.get("RC_IT_KEEP")
        if keep or failures:
            dst = keep or self.work + ".failed"
            if dst != self.work:
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(self.work, dst, ignore=shutil.ignore_patterns("rayop", "kubesim"))
            print("# logs kept in " + dst, flush=True)
        shutil.rmtree(self.work, ignore_errors=True)
        self.procs = {}

    # ---- API ----
    def req(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.url + path, data=data, method=method,
                                   headers=dict(self.auth, **{"Content-Type": ctype}))
        try:
            with urllib.request.urlopen(r, timeout=20, context=self.ssl) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"{}")
            except ValueError:
                return e.code, {}

    def get(self, path):
        code, body = self.req("GET", path)
        return body if code == 200 else None

    def items(self, path):
        b = self.get(path)
        return b.get("items", []) if b else []

    def patch(self, path, body):
        return self.req("PATCH", path, body, "application/merge-patch+json")

    def update(self, path, mutate, deadline_s=15):
        """GET, mutate(obj) in place, PUT; again on 409. The controller writes the object's
        status between a test's read and its write, so an unchecked read-modify-PUT can be
        refused as a conflict and the change silently never made. Returns the last HTTP code."""
        end = time.monotonic() + deadline_s
        while True:
            obj = self.get(path)
            if obj is None:
                return 404
            mutate(obj)
            code, _ = self.req("PUT", path, obj)
            if code != 409 or time.monotonic() > end:
                return code

    def rc_path(self, ns, name=""):
        return "/apis/ray.io/v1/namespaces/%s/rayclusters%s" % (ns, "/" + name if name else "")

    def pods(self, ns, cluster):
        return self.items("/api/v1/namespaces/%s/pods?labelSelector=ray.io/cluster%%3D%s" % (ns, cluster))

    def events(self, ns, reason=None):
        evs = self.items("/apis/events.k8s.io/v1/namespaces/%s/events" % ns)
        return [e for e in evs if reason is None or e.get("reason") == reason]

    def requests(self):
        """kubesim's request log, one dict per request ({time, verb, resource, path, code,
        user_agent, ...}); lines that do not parse are passed over."""
        with open(self.reqlog) as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue

    def pod_creates(self):
        """(rayop user agent) Pod creates answered 201, from kubesim's request log (the real
        tier: from kube-apiserver's audit log)."""
        if self.real:
            return self.real.pod_creates("rayop")
        return [r for r in self.requests()
                if r.get("verb") == "create" and r.get("resource") == "pods" and r.get("code") == 201
                and "rayop" in r.get("user_agent", "")]


def one_group_cluster(name, replicas):
    """A small RayCluster: a head and one worker group "g" of replicas (0..10), 100m CPU each."""
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "ray", "resources": {"requests": {"cpu": "100m"}}}]}}},
                "workerGroupSpecs": [{"groupName": "g", "replicas": replicas, "minReplicas": 0,
                                      "maxReplicas": 10, "rayStartParams": {},
                                      "template": {"spec": {"containers": [
                                          {"name": "w", "image": "ray",
                                           "resources": {"requests": {"cpu": "100m"}}}]}}}]}}


def load_sample(name):
    """The RayCluster of KubeRay's sample NAME (SHARED/kuberay/samples)."""
    with open(os.path.join(SHARED, "kuberay", "samples", name)) as f:
        return next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == "RayCluster")


def desired_workers(rc):
    """KubeRay's desired worker Pods of a RayCluster (per group and total)."""
    per = {}
    for g in rc.get("spec", {}).get("workerGroupSpecs") or []:
        if g.get("suspend"):
            per[g["groupName"]] = 0
            continue
        mn, mx = g.get("minReplicas", 0), g.get("maxReplicas", 2 ** 31 - 1)
        r = g.get("replicas")
        r = mn if r is None or r < mn else min(r, mx)
        per[g["groupName"]] = r * g.get("numOfHosts", 1)
    return per


def exit_code():
    return 1 if failures else 0

#!/usr/bin/python3
# kuberay_takeover.py - the real KubeRay v1.5.0 operator and rayop hand running
# objects to each other on one kubesim, both ways, without restarting anything.
#
#   KubeRay -> rayop: KubeRay creates and runs two RayClusters (one with
#   upgradeStrategy: Recreate, a v1.7 field KubeRay v1.5 does not know), a RayJob
#   (to Complete) and a RayService (to Ready), and is stopped. rayop starts on the
#   same namespace. Checked: rayop creates and deletes no Pod, creates no
#   RayCluster, sends no Serve config (PUT /api/serve/applications through the
#   proxy), the Pods keep their uids, every RayCluster stays ready, the RayJob stays
#   Complete and the RayService Ready.
#   rayop -> KubeRay: the same objects in a second namespace, created by rayop;
#   then KubeRay takes over with the same checks, except Serve: KubeRay re-sends the
#   config it keeps only in memory once after its start (printed, not checked).
#
# Skipped (a "skip - " line) when .peers/bin/kuberay-operator is missing
# (make peers builds it).
# deadline: 240
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import yaml  # noqa: E402

import rclib  # noqa: E402
from rclib import check, ok, wait_until  # noqa: E402

KUBERAY = os.environ.get("KUBERAY_BIN") or os.path.join(rclib.ROOT, ".peers", "bin", "kuberay-operator")
SAMPLES = os.path.join(rclib.SHARED, "kuberay", "samples")
KR_UA, RO_UA = "kuberay-operator", "rayop/"


def sample(name, kind):
    with open(os.path.join(SAMPLES, name)) as fh:
        return [d for d in yaml.safe_load_all(fh) if isinstance(d, dict) and d.get("kind") == kind][0]


def objects():
    rc = sample("ray-cluster.sample.yaml", "RayCluster")
    rc2 = json.loads(json.dumps(rc))
    rc2["metadata"]["name"] = "recreate"
    rc2["spec"]["upgradeStrategy"] = {"type": "Recreate"}
    return [("rayclusters", rc), ("rayclusters", rc2),
            ("rayjobs", sample("ray-job.sample.yaml", "RayJob")),
            ("rayservices", sample("ray-service.sample.yaml", "RayService"))]


class Side:
    def __init__(self, env, ns):
        self.env, self.ns = env, ns
        self.proc = None

    def start_kuberay(self):
        log = open(os.path.join(self.env.work, "kuberay-%s.log" % self.ns), "ab")
        self.proc = subprocess.Popen([KUBERAY, "--kubeconfig", self.env.kubeconfig,
                                      "--enable-leader-election=false", "--use-kubernetes-proxy",
                                      "--watch-namespace", self.ns, "--metrics-addr", "127.0.0.1:0",
                                      "--health-probe-bind-address", "127.0.0.1:0"],
                                     stdout=log, stderr=log)
        self.env.procs["kuberay-" + self.ns] = self.proc

    def start_rayop(self):
        self.proc = self.env.start("rayop-" + self.ns, [
            "up", "--kubeconfig", self.env.kubeconfig, "--state-dir", self.env.state + "-" + self.ns,
            "--watch-namespace", self.ns, "--use-kubernetes-proxy=true", "--metrics-addr", "0",
            "--health-probe-bind-address", "0", "--enable-leader-election=false"])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def get(self, res, name):
        return self.env.get("/apis/ray.io/v1/namespaces/%s/%s/%s" % (self.ns, res, name)) or {}

    def settled(self):
        e, ns = self.env, self.ns
        for rc in e.items("/apis/ray.io/v1/namespaces/%s/rayclusters" % ns):
            if rc.get("status", {}).get("state") != "ready":
                return False
        if len(e.items("/apis/ray.io/v1/namespaces/%s/rayclusters" % ns)) < 4:
            return False
        if self.get("rayjobs", "rayjob-sample").get("status", {}).get("jobDeploymentStatus") != "Complete":
            return False
        conds = self.get("rayservices", "rayservice-sample").get("status", {}).get("conditions", [])
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)

    def state(self):
        e, ns = self.env, self.ns
        pods = {p["metadata"]["name"]: p["metadata"]["uid"]
                for p in e.items("/api/v1/namespaces/%s/pods" % ns)}
        rcs = {r["metadata"]["name"]: r["metadata"]["uid"]
               for r in e.items("/apis/ray.io/v1/namespaces/%s/rayclusters" % ns)}
        return pods, rcs


def requests_by(env, ns, ua, since):
    """(verb, resource[/sub]) of ua's requests in ns after line `since` of the request log."""
    out = []
    with open(env.reqlog) as fh:
        for i, line in enumerate(fh):
            if i < since or ua not in line:
                continue
            r = json.loads(line)
            if r.get("namespace") == ns:
                out.append((r.get("verb"), r.get("resource", "") +
                            ("/" + r["subresource"] if r.get("subresource") else ""), r.get("path", "")))
    return out


def reqlog_lines(env):
    with open(env.reqlog) as fh:
        return sum(1 for _ in fh)


def quiet_after(env, ns, ua, since, quiet=8.0, deadline=90.0):
    """Waits until ua has listed the Ray resources in ns after `since` and then made no
    write (KubeRay keeps polling Serve with GETs) for `quiet` s."""
    t0 = time.monotonic()
    last_n, last_t = -1, time.monotonic()
    while time.monotonic() - t0 < deadline:
        reqs = requests_by(env, ns, ua, since)
        listed = any(r[0] == "list" and r[1] == "rayservices" for r in reqs)
        n = sum(1 for r in reqs if r[0] not in ("get", "list", "watch"))
        if n != last_n:
            last_n, last_t = n, time.monotonic()
        if listed and time.monotonic() - last_t >= quiet:
            return True
        time.sleep(0.5)
    return False


def takeover(env, ns, first, second):
    side = Side(env, ns)
    getattr(side, "start_" + first)()
    for res, o in objects():
        o = json.loads(json.dumps(o))
        o["metadata"]["namespace"] = ns
        code, body = env.req("POST", "/apis/ray.io/v1/namespaces/%s/%s" % (ns, res), o)
        check("%s: %s %s created" % (ns, res, o["metadata"]["name"]), code == 201, body)
    if not check("%s: %s brings the clusters to ready, the RayJob to Complete, the RayService to Ready"
                 % (ns, first), wait_until(150, side.settled, 0.5)):
        for res in ("rayclusters", "rayjobs", "rayservices"):
            for o in env.items("/apis/ray.io/v1/namespaces/%s/%s" % (ns, res)):
                print("#   %s %s %s" % (res, o["metadata"]["name"], json.dumps(o.get("status", {}))[:300]))
        side.stop()
        return
    side.stop()
    pods0, rcs0 = side.state()
    job0 = side.get("rayjobs", "rayjob-sample").get("status", {})
    since = reqlog_lines(env)
    getattr(side, "start_" + second)()
    ua = RO_UA if second == "rayop" else KR_UA
    check("%s: %s reconciled every object and went quiet" % (ns, second),
          quiet_after(env, ns, ua, since))
    reqs = requests_by(env, ns, ua, since)
    pod_writes = [r for r in reqs if r[1] == "pods" and r[0] in ("create", "delete", "deletecollection")]
    check("%s -> %s: 0 Pods created or deleted" % (first, second), not pod_writes, pod_writes)
    rc_creates = [r for r in reqs if r[1] == "rayclusters" and r[0] == "create"]
    check("%s -> %s: 0 new RayClusters" % (first, second), not rc_creates, rc_creates)
    serve_puts = [r for r in reqs if r[0] in ("update", "create") and "/api/serve/" in r[2]]
    if second == "rayop":
        check("%s -> %s: 0 Serve re-deployments" % (first, second), not serve_puts, serve_puts)
    else:
        # KubeRay keeps the config it sent in memory only: after its start it sends it again
        # (Ray applies an identical config without redeploying). Reported, not rayop's to fix.
        print("# %s -> %s: KubeRay sent the Serve config %d time(s) after its start"
              % (first, second, len(serve_puts)), flush=True)
    pods1, rcs1 = side.state()
    check("%s -> %s: the same Pods (uids) and RayClusters (uids)" % (first, second),
          pods0 == pods1 and rcs0 == rcs1, {"before": [pods0, rcs0], "after": [pods1, rcs1]})
    check("%s -> %s: statuses carry on (clusters ready, RayJob Complete, RayService Ready)"
          % (first, second), side.settled())
    job1 = side.get("rayjobs", "rayjob-sample").get("status", {})
    check("%s -> %s: the RayJob keeps its jobId and cluster" % (first, second),
          job0.get("jobId") == job1.get("jobId") and job0.get("rayClusterName") == job1.get("rayClusterName"),
          [job0, job1])
    side.stop()


def main():
    if not os.access(KUBERAY, os.X_OK):
        print("skip - KubeRay take-over (%s is missing: make peers)" % KUBERAY)
        return 0
    env = rclib.Env(["--nodes", "8", "--pod-start-ms", "100", "--pod-ready-ms", "200",
                     "--pod-stop-ms", "100"], name="kr-takeover")
    for ns in ("to-rayop", "to-kuberay"):
        env.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": ns}})
    takeover(env, "to-rayop", "kuberay", "rayop")
    takeover(env, "to-kuberay", "rayop", "kuberay")
    ok("take-over both ways done")
    return 1 if rclib.failures else 0


if __name__ == "__main__":
    sys.exit(main())

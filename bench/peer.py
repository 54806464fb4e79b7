#!/usr/bin/python3
# peer.py - see bench/peer.sh: rayop against the real KubeRay v1.5.0 operator, the same
# workload one after the other on one kubesim. Knobs (environment):
#   PEER_CLUSTERS  RayClusters of 1 head + 3 workers (KubeRay's perf-test shape), default 100
#   PEER_WORKERS   reconcile concurrency of both (default 4; KubeRay's own default is 1)
#   PEER_QPS       client QPS of both, burst = 2 x QPS (default 100: KubeRay's default)
#   PEER_ROUNDS    rounds; the order alternates per round (default 1: rayop first)
#   PEER_DEFAULTS  1: each operator at its own defaults instead of equal settings
#   PEER_OPS       which operators run (default "rayop,kuberay"; one alone for tracing)
#   PEER_JOBS      also create this many RayJobs (1 head + 1 worker, a short entrypoint) at
#                  the same time: ray-project/kuberay#2646; the times stay those of the
#                  PEER_CLUSTERS RayClusters (rayop then runs its rayjob controller too)
#   PEER_RAYOP_ARGS more arguments for `rayop up` (e.g. "--log-level debug" when tracing)
#   RC_IT_KEEP     a directory: keep kubesim's request log and the operators' logs there
# Each run: a fresh namespace, the operator started watching it, N RayClusters created,
# time until every one is "ready"; operator CPU seconds (utime+stime of all its
# processes), peak memory (sum of the PSS of all its processes, sampled every 0.5 s),
# API requests by verb (kubesim's request log, by user agent).
# Prints ratios (rayop / KubeRay) and, as its last line, one JSON object.
import collections
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "raycluster"))
import rclib  # noqa: E402
from keepalive import Session  # noqa: E402
from watch_count import wait_count  # noqa: E402

N = int(os.environ.get("PEER_CLUSTERS", "100"))
WORKERS = os.environ.get("PEER_WORKERS", "4")
QPS = int(os.environ.get("PEER_QPS", "100"))
ROUNDS = int(os.environ.get("PEER_ROUNDS", "1"))
DEFAULTS = os.environ.get("PEER_DEFAULTS", "0") == "1"
JOBS = int(os.environ.get("PEER_JOBS", "0"))
OPS = [o for o in os.environ.get("PEER_OPS", "rayop,kuberay").split(",") if o]
KUBERAY = os.environ.get("KUBERAY_BIN") or os.path.join(ROOT, ".peers", "bin", "kuberay-operator")
UA = {"rayop": "rayop/", "kuberay": "kuberay-operator"}


def cluster(i):
    c = {"name": "ray", "image": "rayproject/ray:2.46.0",
         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "perf-%d" % i},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [c]}}},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": 3, "minReplicas": 0,
                                           "maxReplicas": 3, "rayStartParams": {},
                                           "template": {"spec": {"containers": [c]}}}]}}


def job(i):
    c = {"name": "ray", "image": "rayproject/ray:2.46.0",
         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    spec = {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [c]}}},
            "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "minReplicas": 0, "maxReplicas": 1,
                                  "rayStartParams": {}, "template": {"spec": {"containers": [c]}}}]}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "job-%d" % i},
            "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": spec}}


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else None


def tree(pid):
    """pid and all its descendants (from /proc)."""
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids[ppid].append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_s(pids):
    tick = os.sysconf("SC_CLK_TCK")
    t = 0.0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fs = f.read().rsplit(")", 1)[1].split()
            t += (int(fs[11]) + int(fs[12])) / tick
        except (OSError, ValueError, IndexError):
            pass
    return t


def pss_mib(pids):
    kb = 0
    for p in pids:
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        kb += int(line.split()[1])
        except OSError:
            pass
    return kb / 1024.0


class Sampler(threading.Thread):
    """Peak PSS and last CPU seconds of a process tree, every 0.5 s (CPU of exited children
    is kept by summing per pid)."""

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root, self.peak, self.cpu, self.stop = root, 0.0, {}, False

    def run(self):
        while not self.stop:
            self.sample()
            time.sleep(0.5)   # sampling period, not synchronisation

    def sample(self):
        pids = tree(self.root)
        self.peak = max(self.peak, pss_mib(pids))
        for p in pids:
            c = cpu_s([p])
            if c:
                self.cpu[p] = c

    def cpu_total(self):
        return sum(self.cpu.values())


def start(env, op, ns):
    if op == "kuberay":
        args = [KUBERAY, "--kubeconfig", env.kubeconfig, "--enable-leader-election=false",
                "--use-kubernetes-proxy", "--watch-namespace", ns, "--metrics-addr", "127.0.0.1:0",
                "--health-probe-bind-address", "127.0.0.1:0"]
        if not DEFAULTS:
            args += ["--reconcile-concurrency", WORKERS, "--qps", str(QPS), "--burst", str(2 * QPS)]
        log = open(os.path.join(env.work, "kuberay-%s.log" % ns), "wb")
        p = subprocess.Popen(args, stdout=log, stderr=log)
        env.procs["kuberay-" + ns] = p
        return p
    args = ["up", "--kubeconfig", env.kubeconfig, "--state-dir", env.state + "-" + ns,
            "--watch-namespace", ns, "--use-kubernetes-proxy=true", "--metrics-addr", "0",
            "--health-probe-bind-address", "0", "--enable-leader-election=false",
            "--controllers", "raycluster,rayjob" if JOBS else "raycluster"]
    if not DEFAULTS:
        args += ["--workers=" + WORKERS, "--qps", str(QPS), "--burst", str(2 * QPS)]
    args += os.environ.get("PEER_RAYOP_ARGS", "").split()
    return env.start("rayop-" + ns, args)


def stop(p):
    """SIGTERM, then SIGKILL if the operator has not exited within 40 s."""
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=40)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def reqlog_lines(env):
    with open(env.reqlog) as f:
        return sum(1 for _ in f)


def requests(env, ua, ns, since=0):
    """(requests by verb, requests by "verb resource[/subresource]") of ua in namespace ns or
    cluster-wide, from line since of the request log on (this run's: an earlier run's
    cluster-wide requests are not this one's)"""
    c, by_res = collections.Counter(), collections.Counter()
    with open(env.reqlog) as f:
        for i, line in enumerate(f):
            if i < since or ua not in line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("namespace") in (ns, ""):
                c[r.get("verb")] += 1
                res = r.get("resource") or "?"
                if r.get("subresource"):
                    res += "/" + r["subresource"]
                by_res["%s %s" % (r.get("verb"), res)] += 1
    return c, by_res


def run_one(env, op, ns):
    env.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    since = reqlog_lines(env)
    p = start(env, op, ns)
    s = Sampler(p.pid)
    s.start()
    t0 = time.monotonic()
    jpath = "/apis/ray.io/v1/namespaces/%s/rayjobs" % ns

    sess = Session(env)

    def create(i):
        if i < N:
            return sess.req("POST", env.rc_path(ns), cluster(i))[0]
        return sess.req("POST", jpath, job(i - N))[0]
    # clusters and jobs interleaved, as they would arrive together
    order = sorted(range(N + JOBS), key=lambda i: (i if i < N else (i - N) * N / max(JOBS, 1)))
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        codes = list(ex.map(create, order))
    bad = sum(c != 201 for c in codes)
    ready_at = {}

    def ready(o):
        # the standalone clusters only (a RayJob's cluster is not one of them); the first
        # time each is seen ready is its time to ready
        name = (o.get("metadata") or {}).get("name", "")
        ok = name.startswith("perf-") and (o.get("status") or {}).get("state") == "ready"
        if ok:
            ready_at.setdefault(name, time.monotonic() - t0)
        return ok
    # one watch, not a list every 0.5 s: the harness must not load the server it measures
    ok, _ = wait_count(env, env.rc_path(ns), ready, N, max(300, N * 1.5))
    ready = time.monotonic() - t0
    s.sample()
    s.stop = True
    s.join()
    pods = len(env.items("/api/v1/namespaces/%s/pods" % ns))
    stop(p)
    req, by_res = requests(env, UA[op], ns, since)
    r = {"ready_s": ready if ok else None, "ready_p50_s": pct(list(ready_at.values()), 0.5),
         "ready_p99_s": pct(list(ready_at.values()), 0.99), "cpu_s": s.cpu_total(), "mem_mib": s.peak,
         "requests": sum(req.values()), "by_verb": dict(req), "by_resource": dict(by_res), "pods": pods, "create_failed": bad}
    print("# %-7s per-cluster ready p50 %.1f s, p99 %.1f s%s" % (
        op, r["ready_p50_s"] or -1, r["ready_p99_s"] or -1, " (beside %d RayJobs)" % JOBS if JOBS else ""),
        flush=True)
    print("# %-7s %d clusters: %s in %.1f s, CPU %.1f s, peak PSS %.1f MiB, %d requests %s, %d Pods" % (
        op, N, "all ready" if ok else "NOT all ready", ready, r["cpu_s"], r["mem_mib"], r["requests"],
        dict(req), pods), flush=True)
    print("#   by resource: %s" % dict(sorted(by_res.items())), flush=True)
    return r


def main():
    for b in (KUBERAY, os.path.join(ROOT, "bin", "rayop"), os.path.join(ROOT, "bin", "kubesim")):
        if not os.access(b, os.X_OK):
            print("bench/peer.sh: %s is missing (make all peers)" % b)
            return 3
    # every run's Pods stay: room for all of them (kubesim nodes hold 110 Pods, as kubelets do)
    pods = (N * 4 + JOBS * 3) * len(OPS) * ROUNDS
    nodes = max(4, pods // 100 + 2)
    env = rclib.Env(["--nodes", str(nodes), "--node-cpu", "64", "--node-memory", "256Gi",
                     "--pod-start-ms", "300", "--pod-ready-ms", "500"], name="peer-bench")
    print("# %d RayClusters x (1 head + 3 workers) per operator on %d kubesim nodes; %s" % (
        N, nodes, "each operator at its defaults" if DEFAULTS else
        "both with reconcile concurrency %s, QPS %d, burst %d" % (WORKERS, QPS, 2 * QPS)), flush=True)
    res = {"rayop": [], "kuberay": []}
    for rnd in range(ROUNDS):
        order = ["rayop", "kuberay"] if rnd % 2 == 0 else ["kuberay", "rayop"]
        for op in [o for o in order if o in OPS]:
            res[op].append(run_one(env, op, "%s-%d" % (op, rnd)))

    def mean(op, k):
        v = [r[k] for r in res[op] if r[k] is not None]
        return sum(v) / len(v) if v else None
    out = {"clusters": N, "pods_per_operator": N * 4, "rounds": ROUNDS, "rayjobs": JOBS,
           "load_avg": round(os.getloadavg()[0], 1),
           "settings": "defaults" if DEFAULTS else "equal (concurrency %s, qps %d)" % (WORKERS, QPS)}
    for op in OPS:
        for k in ("ready_s", "ready_p50_s", "ready_p99_s", "mem_mib", "cpu_s", "requests"):
            v = mean(op, k)
            out["%s_%s" % (op, k)] = round(v, 2) if v is not None else None
        verbs = collections.Counter()
        for r in res[op]:
            verbs.update(r["by_verb"])
        out["%s_requests_by_verb" % op] = {k: v // len(res[op]) for k, v in verbs.items()}
    for k in ("ready_s", "mem_mib", "cpu_s", "requests"):
        a, b = out.get("rayop_" + k), out.get("kuberay_" + k)
        if a is not None and b:
            print("rayop/KubeRay %-9s %.3f  (%s vs %s)" % (k, a / b, a, b))
    print(json.dumps(out), flush=True)
    return 0 if all(r["ready_s"] is not None for op in res for r in res[op]) else 1


if __name__ == "__main__":
    sys.exit(main())

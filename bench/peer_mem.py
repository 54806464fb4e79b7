#!/usr/bin/python3
# peer_mem.py - KubeRay's memory benchmark (benchmark/memory_benchmark) for rayop and the
# real KubeRay v1.5.0 operator on one kubesim, operator memory against Pods:
#   exp1  one head-only RayCluster after another, up to 150 Pods (150 RayClusters)
#   exp2  one RayCluster scaled up by 5 workers at a time, up to 150 Pods
#   exp3  one 5-Pod RayCluster (1 head + 4 workers) after another, up to 150 Pods (30 CRs)
# KubeRay's schedule waits 20-60 s between steps so that Grafana sees each level; here a
# step waits until its Pods are Running, then the operator's PSS (the sum over its
# processes) is sampled a few times and the highest kept. Each operator runs alone,
# watching its own fresh namespace, both with reconcile concurrency PEER_WORKERS and
# QPS PEER_QPS (bench/peer.py's knobs). MEM_EXPS picks experiments (default
# "exp1,exp2,exp3"), MEM_STEP the Pods per sample (default 10).
# Prints one JSON line per (operator, experiment): {"op", "exp", "points": [[pods, MiB]...]}
# and, last, one JSON object with all of them; bench/plot_mem.py draws them.
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402
from peer import rclib  # noqa: E402

STEP = int(os.environ.get("MEM_STEP", "10"))
EXPS = [e for e in os.environ.get("MEM_EXPS", "exp1,exp2,exp3").split(",") if e]
TOTAL = 150


def rc_obj(name, workers, max_workers=None):
    c = {"name": "ray", "image": "rayproject/ray:2.46.0",
         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    spec = {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [c]}}}}
    if workers is not None:
        spec["workerGroupSpecs"] = [{"groupName": "small-group", "replicas": workers, "minReplicas": 0,
                                     "maxReplicas": max_workers or 200, "rayStartParams": {},
                                     "template": {"spec": {"containers": [c]}}}]
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": spec}


def running(env, ns):
    return sum(1 for p in env.items("/api/v1/namespaces/%s/pods" % ns)
               if p.get("status", {}).get("phase") == "Running")


def sample(s, n=3):
    best = 0.0
    for _ in range(n):
        best = max(best, peer.pss_mib(peer.tree(s.root)))
        time.sleep(0.3)   # sampling period, not synchronisation
    return best


def run_exp(env, op, exp):
    ns = "mem-%s-%s" % (op, exp)
    env.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    p = peer.start(env, op, ns)
    s = peer.Sampler(p.pid)
    time.sleep(2)         # let it start and list: the 0-Pod point
    points = [[0, round(sample(s), 2)]]
    pods, i = 0, 0
    path = env.rc_path(ns)
    while pods < TOTAL:
        if exp == "exp1":
            for _ in range(STEP):
                env.req("POST", path, rc_obj("mem-%d" % i, None))
                i += 1
            pods += STEP
        elif exp == "exp2":
            pods += STEP
            if i == 0:
                env.req("POST", path, rc_obj("mem-0", pods - 1))
                i = 1
            else:
                env.req("PATCH", path + "/mem-0",
                        [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": pods - 1}],
                        ctype="application/json-patch+json")
        else:
            for _ in range(max(1, STEP // 5)):
                env.req("POST", path, rc_obj("mem-%d" % i, 4, 4))
                i += 1
            pods += max(1, STEP // 5) * 5
        ok = rclib.wait_until(120, lambda: running(env, ns) >= pods, every=0.5)
        points.append([pods, round(sample(s), 2)])
        if not ok:
            print("# %s %s: only %d of %d Pods Running" % (op, exp, running(env, ns), pods), flush=True)
            break
    peer.stop(p)
    r = {"op": op, "exp": exp, "points": points}
    print(json.dumps(r), flush=True)
    return r


def main():
    # every experiment's Pods stay (up to 900): room for all of them at 110 per node
    env = rclib.Env(["--nodes", "12", "--node-cpu", "64", "--node-memory", "256Gi",
                     "--pod-start-ms", "300", "--pod-ready-ms", "500"], name="peer-mem")
    out = []
    for exp in EXPS:
        for op in peer.OPS:
            out.append(run_exp(env, op, exp))
    print(json.dumps({"memory_benchmark": out, "load_avg": os.getloadavg()[0]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

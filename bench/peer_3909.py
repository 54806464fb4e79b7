#!/usr/bin/python3
# peer_3909.py - ray-project/kuberay#3909's shape for rayop and the real KubeRay v1.5.0, one
# after the other on one kubesim (alternating order over PEER_ROUNDS): one RayCluster scaled
# 0 -> PEER_BIG workers (default 500) while PEER_SMALL others (default 100) each scale 1 -> 2.
# The question of the issue: does one big scale-up starve the small ones? Per small cluster,
# the time from its scale request until its second worker Pod is Ready ("served"), and until
# its status says so (readyWorkerReplicas 2); p50/p99 over them, and the time until the big
# one has all its workers Ready. Both operators at
# reconcile concurrency PEER_WORKERS (4) and QPS PEER_QPS (100), or each at its defaults
# with PEER_DEFAULTS=1 (KubeRay: 1 worker). Prints rayop/KubeRay ratios, then one JSON line.
import concurrent.futures
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  (start, stop, Sampler, requests, the RayCluster shape)
from peer import rclib, wait_count  # noqa: E402

BIG = int(os.environ.get("PEER_BIG", "500"))
SMALL = int(os.environ.get("PEER_SMALL", "100"))
ROUNDS = int(os.environ.get("PEER_ROUNDS", "1"))


def cluster(name, replicas, max_replicas):
    rc = peer.cluster(0)
    rc["metadata"]["name"] = name
    g = rc["spec"]["workerGroupSpecs"][0]
    g["replicas"], g["minReplicas"], g["maxReplicas"] = replicas, 0, max_replicas
    return rc


def ready_workers(o):
    return (o.get("status") or {}).get("readyWorkerReplicas") or 0


def run_one(env, op, ns):
    env.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    env.req("POST", env.rc_path(ns), cluster("big", 0, BIG))
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: env.req("POST", env.rc_path(ns), cluster("small-%d" % i, 1, 2)), range(SMALL)))
    since = peer.reqlog_lines(env)
    p = peer.start(env, op, ns)
    s = peer.Sampler(p.pid)
    s.start()
    # the starting point: every cluster ready as created
    ok, _ = wait_count(env, env.rc_path(ns), lambda o: (o.get("status") or {}).get("state") == "ready",
                       SMALL + 1, max(300, SMALL * 2))
    if not ok:
        peer.stop(p)
        return None
    t0 = time.monotonic()
    big_body = {"spec": {"workerGroupSpecs": cluster("big", BIG, BIG)["spec"]["workerGroupSpecs"]}}
    env.req("PATCH", env.rc_path(ns, "big"), big_body, ctype="application/merge-patch+json")
    small_body = {"spec": {"workerGroupSpecs": cluster("x", 2, 2)["spec"]["workerGroupSpecs"]}}
    asked = {}

    def ask(i):
        asked["small-%d" % i] = time.monotonic() - t0
        env.req("PATCH", env.rc_path(ns, "small-%d" % i), small_body, ctype="application/merge-patch+json")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(ask, range(SMALL)))
    served, big_at, st_served = {}, [], {}
    ready_pods = {}

    def pod_ready(o):
        # "served": the small cluster's second worker Pod is Ready (what #3909's users wait for)
        md, st = o.get("metadata") or {}, o.get("status") or {}
        labels = md.get("labels") or {}
        rc = labels.get("ray.io/cluster", "")
        ok = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
        if ok and labels.get("ray.io/node-type") == "worker":
            ready_pods.setdefault(rc, set()).add(md.get("name"))
            now = time.monotonic() - t0
            if rc == "big" and len(ready_pods[rc]) >= BIG and not big_at:
                big_at.append(now)
            if rc.startswith("small-") and len(ready_pods[rc]) >= 2:
                served.setdefault(rc, now - asked.get(rc, 0))
        return ok

    def status_done(o):
        # the same seen through the RayCluster's status (readyWorkerReplicas), as a client
        # of the API (an autoscaler, a dashboard) would see it
        name = o["metadata"]["name"]
        if name.startswith("small-") and ready_workers(o) >= 2:
            st_served.setdefault(name, time.monotonic() - t0 - asked.get(name, 0))
            return True
        return False
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        fst = ex.submit(wait_count, env, env.rc_path(ns), status_done, SMALL, max(600, BIG * 2))
        ok, _ = wait_count(env, "/api/v1/namespaces/%s/pods" % ns, pod_ready,
                           BIG + 3 * SMALL + 1, max(600, BIG * 2))
        fst.result()
    all_s = time.monotonic() - t0
    s.sample()
    s.stop = True
    s.join()
    peer.stop(p)
    req, by_res = peer.requests(env, peer.UA[op], ns, since)
    lat = sorted(served.values())
    slat = sorted(st_served.values())
    r = {"small_p50_s": peer.pct(lat, 0.5), "small_p99_s": peer.pct(lat, 0.99),
         "status_p50_s": peer.pct(slat, 0.5), "status_p99_s": peer.pct(slat, 0.99),
         "small_served": len(lat), "big_ready_s": big_at[0] if big_at else None,
         "all_s": all_s if ok else None, "cpu_s": s.cpu_total(), "mem_mib": s.peak,
         "requests": sum(req.values())}
    print("# %-7s #3909: %d small clusters 1->2 served (2nd worker Ready) p50 %.1f s p99 %.1f s "
          "(%d of %d), in status p50 %.1f s p99 %.1f s; big 0->%d "
          "ready after %s s; CPU %.1f s, peak PSS %.1f MiB, %d requests" % (
              op, SMALL, r["small_p50_s"] or -1, r["small_p99_s"] or -1, len(lat), SMALL,
              r["status_p50_s"] or -1, r["status_p99_s"] or -1, BIG,
              "%.1f" % r["big_ready_s"] if r["big_ready_s"] else "never", r["cpu_s"], r["mem_mib"],
              r["requests"]), flush=True)
    print("#   by resource: %s" % dict(sorted(by_res.items())), flush=True)
    return r


def main():
    ops = ["rayop", "kuberay"]
    pods = (BIG + 2 * SMALL + SMALL + 1) * len(ops) * ROUNDS
    env = rclib.Env(["--nodes", str(max(4, pods // 100 + 2)), "--node-cpu", "64", "--node-memory", "256Gi",
                     "--pod-start-ms", "300", "--pod-ready-ms", "500"], name="peer-3909")
    print("# ray-project/kuberay#3909: 1 RayCluster 0 -> %d workers while %d others scale 1 -> 2; %s" % (
        BIG, SMALL, "each operator at its defaults" if peer.DEFAULTS else
        "both with reconcile concurrency %s, QPS %d" % (peer.WORKERS, peer.QPS)), flush=True)
    res = {o: [] for o in ops}
    for rnd in range(ROUNDS):
        for op in (ops if rnd % 2 == 0 else ops[::-1]):
            r = run_one(env, op, "%s-%d" % (op, rnd))
            if r:
                res[op].append(r)
    out = {"big_workers": BIG, "small_clusters": SMALL, "rounds": ROUNDS,
           "load_avg": round(os.getloadavg()[0], 1), "settings": "defaults" if peer.DEFAULTS else
           "equal (concurrency %s, qps %d)" % (peer.WORKERS, peer.QPS)}
    for op in ops:
        for k in ("small_p50_s", "small_p99_s", "status_p50_s", "status_p99_s", "big_ready_s",
                  "cpu_s", "mem_mib", "requests"):
            v = [r[k] for r in res[op] if r.get(k) is not None]
            out["%s_%s" % (op, k)] = round(sum(v) / len(v), 2) if v else None
    for k in ("small_p50_s", "small_p99_s", "status_p50_s", "status_p99_s", "big_ready_s",
              "cpu_s", "mem_mib", "requests"):
        a, b = out["rayop_" + k], out["kuberay_" + k]
        if a is not None and b:
            print("rayop/KubeRay %-12s %.3f  (%s vs %s)" % (k, a / b, a, b))
    print(json.dumps(out), flush=True)
    return 0 if all(len(res[o]) == ROUNDS for o in ops) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# raycluster_stale.py - a reconcile that reads a stale RayCluster from the cache
# creates no Pod the API server's RayCluster does not want. kubesim holds every
# watch event back 2.5 s (--watch-delay-ms), so the controller's cache is 2.5 s
# behind the API server on purpose. Two episodes, each a Pod event that reaches
# the cache before a later change of the cluster does:
#  - deleted cluster: the head Pod is deleted, and 0.8 s later the RayCluster.
#    The Pod's deletion reaches the cache first; a reconcile that trusts the
#    cache sees a live cluster without a head and creates one for a cluster
#    the API server no longer has (the chaos soak saw 23 such Pods).
#  - stale spec: one of 2 workers is deleted, and 0.8 s later replicas goes
#    2 -> 1. A reconcile that trusts the cache sees 1 worker of 2 desired and
#    creates one: a group one Pod over what the API server asks for.
# The controller checks the cluster itself with a live GET before creating, so
# kubesim's request log must show no Pod create after either change.
# The 0.8 s gaps order the scenario (the Pod event must reach the cache while
# the cluster change is still held back); every wait is on a condition.
# deadline: 120
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
DELAY_MS = 2500


cluster = rclib.one_group_cluster


def request_log(env):
    out = []
    with open(env.reqlog) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def creates_after(env, pred):
    """rayop's Pod creates logged after the first request matching pred."""
    log = request_log(env)
    at = next((i for i, r in enumerate(log) if pred(r)), None)
    if at is None:
        return None
    return [r.get("name") or r.get("path") for r in log[at + 1:]
            if r.get("verb") == "create" and r.get("resource") == "pods" and r.get("code") == 201
            and "rayop" in r.get("user_agent", "")]


def state(env, name):
    return (env.get(env.rc_path(NS, name)) or {}).get("status", {}).get("state")


def delete_now(env, path):
    return env.req("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                    "gracePeriodSeconds": 0})[0]


def main():
    env = rclib.Env(["--nodes", "4", "--pod-start-ms", "50", "--pod-ready-ms", "50",
                     "--watch-delay-ms", str(DELAY_MS)], name="rc-stale")
    env.start_watcher()
    env.start_controller("ctl")

    # ---- a cluster deleted while the cache still has it ----
    env.req("POST", env.rc_path(NS), cluster("gone", 1))
    check("cluster 'gone' ready with its head and 1 worker",
          wait_until(60, lambda: state(env, "gone") == "ready" and len(env.pods(NS, "gone")) == 2))
    head = [p for p in env.pods(NS, "gone")
            if p["metadata"]["labels"].get("ray.io/node-type") == "head"][0]["metadata"]["name"]
    check("head Pod deleted", delete_now(env, "/api/v1/namespaces/%s/pods/%s" % (NS, head)) == 200)
    time.sleep(0.8)   # scenario order, see the file comment
    check("RayCluster 'gone' deleted", delete_now(env, env.rc_path(NS, "gone")) == 200)
    # the head's deletion reaches the cache DELAY_MS after it was made, the cluster's 0.8 s
    # later: in between the controller reconciles a cluster it still has, without a head
    is_del = lambda r: r.get("verb") == "delete" and r.get("resource") == "rayclusters"  # noqa: E731
    seen = wait_until(DELAY_MS / 1000.0 + 30, lambda: creates_after(env, is_del) or any(
        "already deleted on the API server" in l for l in env.log_lines("ctl")))
    check("the controller reconciled the stale cluster (logged it as deleted)", bool(seen) and any(
        "already deleted on the API server" in l for l in env.log_lines("ctl")))
    late = creates_after(env, is_del)
    check("no Pod created for the deleted cluster", late == [], late)

    # ---- a spec scaled down while the cache still has the old one ----
    env.req("POST", env.rc_path(NS), cluster("scale", 2))
    check("cluster 'scale' ready with 2 workers",
          wait_until(60, lambda: state(env, "scale") == "ready" and len(env.pods(NS, "scale")) == 3))
    worker = [p for p in env.pods(NS, "scale")
              if p["metadata"]["labels"].get("ray.io/node-type") == "worker"][0]["metadata"]["name"]
    check("one worker Pod deleted",
          delete_now(env, "/api/v1/namespaces/%s/pods/%s" % (NS, worker)) == 200)
    time.sleep(0.8)   # scenario order, see the file comment
    code, _ = env.patch(env.rc_path(NS, "scale"),
                        {"spec": {"workerGroupSpecs": [cluster("scale", 1)["spec"]["workerGroupSpecs"][0]]}})
    check("replicas 2 -> 1", code == 200)

    def settled():
        st = (env.get(env.rc_path(NS, "scale")) or {}).get("status", {})
        workers = [p for p in env.pods(NS, "scale")
                   if p["metadata"]["labels"].get("ray.io/node-type") == "worker"]
        return st.get("observedGeneration") == 2 and st.get("desiredWorkerReplicas") == 1 and \
            len(workers) == 1
    check("cluster 'scale' settles at 1 worker", wait_until(60, settled),
          [p["metadata"]["name"] for p in env.pods(NS, "scale")])
    late = creates_after(env, lambda r: r.get("verb") == "patch" and r.get("resource") == "rayclusters"
                         and "rayop" not in r.get("user_agent", ""))
    check("no worker created from the stale spec (no overshoot)", late == [], late)
    waited = [l for l in env.log_lines("ctl") if "cached RayCluster behind the API server" in l]
    check("the controller waited for the cached spec (%d time(s))" % len(waited), waited)
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

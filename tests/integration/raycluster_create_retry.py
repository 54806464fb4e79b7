#!/usr/bin/python3
# raycluster_create_retry.py - a worker Pod create that the API server answers 429 is not
# retried by the client after the group was scaled down. The controller checks its
# RayCluster with a live GET right before each Pod create; a client-side retry after a wait
# (here the 429's Retry-After: 2 s) would commit the create long after that check, when the
# spec may say otherwise (the chaos soak saw a create commit 158 ms after its GET, once the
# group had gone 3 -> 1: one Pod over for 9 s). So a Pod create is one attempt: the 429
# fails the reconcile, and the next one reads the cluster again.
# Scenario: replicas 1 -> 2; kubesim answers the worker's create 429 (Retry-After 2 s, once);
# as soon as it has, replicas 2 -> 1. No Pod create may commit after that scale-down.
# deadline: 120
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"


cluster = rclib.one_group_cluster


def scale(env, n):
    return env.req("PATCH", env.rc_path(NS, "retry"), [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": n}],
        "application/json-patch+json")


def pod_creates(env):
    """(index in the request log, code) of every Pod create rayop made."""
    return [(i, r.get("code")) for i, r in enumerate(list(env.requests()))
            if r.get("verb") == "create" and r.get("resource") == "pods"
            and "rayop" in r.get("user_agent", "")]


def workers(env):
    return [p for p in env.pods(NS, "retry")
            if p["metadata"]["labels"].get("ray.io/node-type") == "worker"
            and not p["metadata"].get("deletionTimestamp")]


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "50", "--pod-ready-ms", "50"],
                    name="rc-retry")
    env.start_watcher()
    env.start_controller("ctl")
    env.req("POST", env.rc_path(NS), cluster("retry", 1))
    status = lambda: (env.get(env.rc_path(NS, "retry")) or {}).get("status", {})  # noqa: E731
    check("cluster ready with 1 worker",
          wait_until(60, lambda: status().get("state") == "ready" and len(workers(env)) == 1))
    code, _ = env.req("PUT", "/kubesim/faults", {"rules": [
        "verb=create,resource=pods,code=429,retry-after=2,count=1"]})
    check("kubesim answers the next Pod create 429 (Retry-After 2 s)", code == 200, code)
    check("replicas 1 -> 2", scale(env, 2)[0] == 200)
    check("the worker's create was answered 429",
          wait_until(30, lambda: any(c == 429 for _, c in pod_creates(env))))
    code, obj = scale(env, 1)
    check("replicas 2 -> 1 right after the 429", code == 200)
    gen = obj["metadata"]["generation"]
    log = list(env.requests())
    down = max(i for i, r in enumerate(log) if r.get("verb") == "patch" and r.get("resource") == "rayclusters")
    check("the cluster settles at 1 worker, generation %d observed" % gen,
          wait_until(30, lambda: status().get("observedGeneration") == gen and len(workers(env)) == 1),
          status())
    late = [i for i, c in pod_creates(env) if c == 201 and i > down]
    check("no Pod create committed after the scale-down", not late,
          [list(env.requests())[i].get("time") for i in late])
    check("the 429 came back to the controller, not retried by the client",
          any("API server busy" in l for l in env.log_lines("ctl")))
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

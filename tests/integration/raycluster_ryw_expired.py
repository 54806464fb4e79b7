#!/usr/bin/python3
# raycluster_ryw_expired.py - a key handed out after its read-your-writes wait expired does
# not count Pods from a cache that lacks the controller's own creates. The watcher holds a
# key back until the cache shows the reconcile's writes, for at most 5 s; when the watch is
# slower than that (the API server restarting, as in the chaos soak), the key comes back
# while the cache still lacks the worker just created, and a count from the cache creates
# it again (the soak saw a third worker for two). Here kubesim holds every watch event back
# 7 s: replicas 1 -> 2 reaches the cache 7 s late, the controller creates the second worker,
# its wait expires 5 s later, and the next reconcile must confirm the count with a LIST
# (live 2, cached 1: it waits) instead of creating a third.
# deadline: 200
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
DELAY_MS = 7000


cluster = rclib.one_group_cluster


def workers(env):
    return [p for p in env.pods(NS, "ryw")
            if p["metadata"]["labels"].get("ray.io/node-type") == "worker"]


def main():
    # held back from the start: a delay switched on later spares the first event of each
    # watch that was already waiting
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "50", "--pod-ready-ms", "50",
                     "--watch-delay-ms", str(DELAY_MS)], name="rc-ryw")
    env.start_watcher()
    env.start_controller("ctl")
    env.req("POST", env.rc_path(NS), cluster("ryw", 1))
    status = lambda: (env.get(env.rc_path(NS, "ryw")) or {}).get("status", {})  # noqa: E731
    check("cluster ready with 1 worker",
          wait_until(90, lambda: status().get("state") == "ready" and len(workers(env)) == 1 and
                     status().get("readyWorkerReplicas") == 1))
    n_listed = lambda: sum("behind this process's own Pod writes" in l  # noqa: E731
                           for l in env.log_lines("ctl"))
    listed = n_listed()
    code, _ = env.req("PATCH", env.rc_path(NS, "ryw"), [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}],
        "application/json-patch+json")
    check("replicas 1 -> 2", code == 200)
    n_expired = lambda: sum("read-your-writes wait expired" in l and "ryw" in l  # noqa: E731
                            for l in env.log_lines("watcher"))
    before = n_expired()
    check("the controller created the second worker and its wait expired",
          wait_until(60, lambda: len(workers(env)) >= 2 and n_expired() > before))
    check("the next reconcile confirmed the count with a LIST",
          wait_until(30, lambda: n_listed() > listed))
    env.req("PUT", "/kubesim/watch", {"delayMs": 0})
    check("the cluster settles at generation 2",
          wait_until(60, lambda: status().get("observedGeneration") == 2 and
                     status().get("readyWorkerReplicas") == 2), status())
    names = [p["metadata"]["name"] for p in workers(env)]
    creates = [r for r in env.pod_creates()]
    check("2 workers, and 3 Pod creates in all (head, 2 workers): no third worker",
          len(names) == 2 and len(creates) == 3, (names, len(creates)))
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

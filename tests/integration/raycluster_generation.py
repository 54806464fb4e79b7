#!/usr/bin/python3
# raycluster_generation.py - a spec change that no reconcile saw on its own still moves
# status.observedGeneration. replicas goes 1 -> 3 -> 1 while no controller runs (as when the
# operator restarts, or both events reach the cache before the next reconcile): the next
# reconcile sees generation 3 whose status (desired 1 worker, ready) is what the status
# already says. KubeRay writes no status whose only change is observedGeneration, so it
# would stay at 1 for good; rayop writes it. The chaos soak found such clusters after a
# kill -9 of `rayop up` (observedGeneration behind, every queue idle).
# deadline: 120
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"


cluster = rclib.one_group_cluster


def scale(env, n):
    return env.req("PATCH", env.rc_path(NS, "gen"), [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": n}],
        "application/json-patch+json")


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "50", "--pod-ready-ms", "50"], name="rc-gen")
    env.start_watcher()
    ctl = env.start_controller("ctl")
    env.req("POST", env.rc_path(NS), cluster("gen", 1))
    status = lambda: (env.get(env.rc_path(NS, "gen")) or {}).get("status", {})  # noqa: E731
    check("cluster ready at generation 1 with 1 worker",
          wait_until(60, lambda: status().get("state") == "ready" and
                     status().get("observedGeneration") == 1 and len(env.pods(NS, "gen")) == 2),
          status())
    ctl.terminate()
    check("controller stopped", ctl.wait(30) == 0)
    check("replicas 1 -> 3", scale(env, 3)[0] == 200)
    code, obj = scale(env, 1)
    check("replicas 3 -> 1 (generation 3)", code == 200 and obj["metadata"]["generation"] == 3, obj)
    rv = obj["metadata"]["resourceVersion"]

    def cached():
        out = subprocess.run([os.path.join(rclib.ROOT, "bin", "cache_dump"), "--state-dir", env.state,
                              "--type", "ray.io/v1/rayclusters"], capture_output=True, text=True).stdout
        return ("%s/gen %s" % (NS, rv)) in out.splitlines()
    check("the watcher's cache holds generation 3", wait_until(30, cached))
    env.start_controller("ctl2")
    check("observedGeneration reaches 3", wait_until(30, lambda: status().get("observedGeneration") == 3),
          status())
    check("still 1 worker", len([p for p in env.pods(NS, "gen")
                                 if p["metadata"]["labels"].get("ray.io/node-type") == "worker"]) == 1)
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# raycluster_crash.py - no duplicate Pods when the controller dies mid scale-up
# and its successor reads a stale cache. kubesim delays every watch event by
# 500 ms (--watch-delay-ms) and every Pod create by 60 ms (a fault rule), so a
# scale-up from 1 to 24 workers takes ~1.5 s; the controller is killed -9 after
# a few of its creates, before it can report them to the queue, and a new one is
# started at once: its cache lags the API server by 500 ms. The cluster must end
# with exactly 24 workers and kubesim's request log must show exactly one create
# per Pod that ever existed (1 head + 24 workers): no duplicate was ever made.
# deadline: 150
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
N = 24


def main():
    env = rclib.Env(["--nodes", "4", "--pod-start-ms", "100", "--pod-ready-ms", "150",
                     "--watch-delay-ms", "500",
                     "--fault", "verb=create,resource=pods,action=delay,ms=60"], name="rc-crash")
    env.start_watcher()
    a = env.start_controller("ctlA")
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "crash"},
          "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
              {"name": "ray-head", "image": "ray", "resources": {"requests": {"cpu": "100m"}}}]}}},
              "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "minReplicas": 0, "maxReplicas": 100,
                                    "rayStartParams": {}, "template": {"spec": {"containers": [
                                        {"name": "w", "image": "ray",
                                         "resources": {"requests": {"cpu": "100m"}}}]}}}]}}
    env.req("POST", env.rc_path(NS), rc)

    def state():
        return (env.get(env.rc_path(NS, "crash")) or {}).get("status", {}).get("state")

    check("cluster ready with 1 worker", wait_until(30, lambda: state() == "ready" and
                                                     len(env.pods(NS, "crash")) == 2))
    env.patch(env.rc_path(NS, "crash"),
              {"spec": {"workerGroupSpecs": [dict(rc["spec"]["workerGroupSpecs"][0], replicas=N)]}})
    # kill -9 once the scale-up is under way: a few creates answered, most not yet made
    started = wait_until(20, lambda: len(env.pod_creates()) >= 2 + 4, every=0.01)
    a.send_signal(signal.SIGKILL)
    a.wait()
    at_kill = len(env.pod_creates())
    check("controller killed -9 mid scale-up (%d of %d Pods created)" % (at_kill, N + 1),
          started and at_kill < N + 1)
    env.start_controller("ctlB")

    def done():
        pods = env.pods(NS, "crash")
        return state() == "ready" and len(pods) == N + 1 and \
            (env.get(env.rc_path(NS, "crash")) or {}).get("status", {}).get("readyWorkerReplicas") == N
    check("the new controller finishes the scale-up: %d workers ready" % N,
          wait_until(40, done), len(env.pods(NS, "crash")))
    creates = env.pod_creates()
    names = [c.get("name") for c in creates]
    check("exactly one create per Pod: %d creates for %d Pods (no duplicate ever existed)"
          % (len(creates), N + 1), len(creates) == N + 1, names)
    guarded = [l for l in env.log_lines("ctlB") if "cache behind the API server" in l]
    print("# the successor waited for its cache %d time(s)" % len(guarded), flush=True)
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

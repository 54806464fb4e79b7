#!/usr/bin/python3
# raycluster_takeover.py - taking over a RayCluster that KubeRay v1.7 runs restarts
# nothing. ray-cluster.sample.yaml with upgradeStrategy Recreate is run by rayop; its
# head Pod must carry KubeRay's own ray.io/upgrade-strategy-recreate-hash for the spec as
# the API server stored it (the constant below was printed by tools/kuberayhash, Go's
# encoding/json of KubeRay's typed spec, for exactly that stored spec). Then the head Pod
# is stamped as KubeRay v1.7 leaves it (its hash, ray.io/kuberay-version v1.7.0) while no
# controller runs, and a fresh controller takes over: no Pod is deleted or created, no
# new RayCluster appears. A real spec change still recreates the Pods (the check is live).
# deadline: 90
import os
import signal
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
# KubeRay v1.7 GenerateHashWithoutReplicasAndWorkersToDelete of the stored spec
KUBERAY_HASH = "VRDUODNPCRQASSKPTQ9TLQ1NQ1IFS5UO"
HASH_ANN = "ray.io/upgrade-strategy-recreate-hash"
VERSION_ANN = "ray.io/kuberay-version"


def main():
    env = rclib.Env(["--nodes", "4", "--pod-start-ms", "100", "--pod-ready-ms", "100"], name="rc-takeover")
    with open(os.path.join(rclib.SHARED, "kuberay", "samples", "ray-cluster.sample.yaml")) as f:
        rc = next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == "RayCluster")
    rc["metadata"]["name"] = "takeover"
    rc["spec"]["upgradeStrategy"] = {"type": "Recreate"}
    code, _ = env.req("POST", env.rc_path(NS), rc)
    check("RayCluster created (%d)" % code, code == 201)
    stored = env.get(env.rc_path(NS, "takeover"))
    if os.environ.get("TAKEOVER_DUMP"):
        with open(os.environ["TAKEOVER_DUMP"], "w") as f:
            yaml.safe_dump(stored, f)
    env.start_watcher()
    ctl = env.start_controller("ctlA")
    want = 1 + sum(rclib.desired_workers(stored).values())

    def running():
        ps = env.pods(NS, "takeover")
        return ps if len(ps) == want and all(p.get("status", {}).get("phase") == "Running" for p in ps) else None
    pods = wait_until(40, running)
    if not check("rayop runs the cluster (%d Pods)" % want, pods):
        return
    head = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "head"][0]
    ann = head["metadata"].get("annotations", {})
    check("the head Pod carries KubeRay's hash for this spec (%s)" % ann.get(HASH_ANN),
          ann.get(HASH_ANN) == KUBERAY_HASH)

    # KubeRay v1.7 ran it: stop rayop, leave the head Pod as KubeRay stamps it
    ctl.send_signal(signal.SIGTERM)
    ctl.wait(timeout=20)
    hp = "/api/v1/namespaces/%s/pods/%s" % (NS, head["metadata"]["name"])
    code, _ = env.patch(hp, {"metadata": {"annotations": {HASH_ANN: KUBERAY_HASH, VERSION_ANN: "v1.7.0"}}})
    check("head Pod stamped as KubeRay v1.7 does (%d)" % code, code == 200)
    uids = sorted(p["metadata"]["uid"] for p in env.pods(NS, "takeover"))
    before = len(env.pod_creates())

    env.start_controller("ctlB")

    # its first reconcile of the (only) key decides about recreating: wait until it is done
    done = wait_until(30, lambda: env.metric("ctlB", "controller_runtime_reconcile_total") or None)
    check("the new controller reconciled the cluster", done)
    now = sorted(p["metadata"]["uid"] for p in env.pods(NS, "takeover")
                 if not p["metadata"].get("deletionTimestamp"))
    check("take-over: every Pod kept (same %d uids, none terminating)" % len(uids), now == uids,
          {"before": uids, "after": now})
    check("take-over: no Pod created", len(env.pod_creates()) == before)
    check("take-over: no Pod deleted (no Deleted*Pod event)",
          not [e for e in env.events(NS) if e.get("reason", "").startswith("Deleted") and
               e.get("reason", "").endswith("Pod")])
    check("take-over: one RayCluster", len(env.items(env.rc_path(NS))) == 1)

    # a real change: Recreate replaces every Pod
    env.patch(env.rc_path(NS, "takeover"), {"spec": {"rayVersion": "2.99.0"}})
    replaced = wait_until(40, lambda: not set(uids) & {p["metadata"]["uid"] for p in env.pods(NS, "takeover")})
    check("a spec change still recreates the Pods (the comparison is live)", replaced)


if __name__ == "__main__":
    main()
    sys.exit(rclib.exit_code())

#!/usr/bin/python3
# up_restart_changes.py - a RayCluster change made around a crash of the whole instance
# (`rayop up` killed -9: its children get SIGTERM and stop, a new up resumes from the
# cache segment) is reconciled: observedGeneration catches up with every generation.
# Rounds of: scale some clusters, kill -9 up, scale others while the old children stop,
# start a new up, scale others again while it starts; then every cluster must converge.
# The long chaos soak saw clusters whose change made within about 2 s of such a restart
# stayed unreconciled for good: replicas 1 -> 3 -> 1, the middle generation seen by no
# reconcile, and the status write skipped because only observedGeneration differed
# (raycluster_generation.py is the focused test of that).
# deadline: 240
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "chaos"))
import chaos  # noqa: E402

ROUNDS = int(os.environ.get("UP_RESTART_ROUNDS", "4"))
N = 12
failures = 0


def ok(cond, text):
    global failures
    print("%s - %s" % ("ok" if cond else "not ok", text), flush=True)
    if not cond:
        failures += 1


def behind(s):
    """Clusters whose status is not current, as 'name gen/observed' strings."""
    body = s.api.get(chaos.RCP) or {}
    return ["%s %s/%s" % (rc["metadata"]["name"], rc["metadata"].get("generation"),
                          rc.get("status", {}).get("observedGeneration"))
            for rc in body.get("items", [])
            if rc.get("status", {}).get("observedGeneration") != rc["metadata"].get("generation")]


def wait_converged(s, secs):
    end = time.monotonic() + secs
    left = behind(s)
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = behind(s)
    return left


def scale(s, rng, names):
    for n in names:
        s.api.req("PATCH", chaos.RCP + "/" + n, [
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": rng.randint(0, 3)}],
            "application/json-patch+json")


def explain(s, names):
    """What the soak's watch saw of each cluster left behind, and what rayop's cache holds."""
    with s.lock:
        evs = sorted(s.events, key=lambda e: e[:2])
    for rv, _, kind, typ, obj, _ in evs:
        for o in (obj if typ == "LIST" else [obj]):
            m = o.get("metadata", {})
            if kind == "rc" and m.get("name") in names:
                print("#   rv %d %s %s gen %s observed %s" % (rv, typ, m.get("name"), m.get("generation"),
                      o.get("status", {}).get("observedGeneration")), flush=True)
    out = subprocess.run([os.path.join(chaos.ROOT, "bin", "cache_dump"), "--state-dir", s.sd,
                          "--type", "ray.io/v1/rayclusters"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.split(" ")[0].split("/")[-1] in names:
            print("#   cache: " + line[:300], flush=True)
    print("#   queues: %s" % json.dumps([{k: v for k, v in q.items() if k != "workers"}
                                     for q in (s.queue_status() or []) if q.get("kind") == "raycluster"]),
          flush=True)


def main():
    s = chaos.Soak(seconds=0, seed=5, calm=True)
    rng = s.rng
    try:
        s.setup()
        names = ["c%d" % i for i in range(N)]
        for n in names:
            s.api.req("POST", chaos.RCP, s.cluster_obj(n, [("g", 1)]))
        left = wait_converged(s, 60)
        ok(not left, "%d clusters reconciled at the start %s" % (N, left))
        for r in range(ROUNDS):
            scale(s, rng, rng.sample(names, 3))
            procs = s.procs()
            s.up.send_signal(signal.SIGKILL)
            s.up.wait()
            scale(s, rng, rng.sample(names, 3))   # while the old children stop
            end = time.monotonic() + 30
            while time.monotonic() < end and any(os.path.exists("/proc/%d" % p)
                                                 for n, p in procs.items() if n != "up"):
                time.sleep(0.02)
            s.start_up()
            for _ in range(4):                   # while the new up starts (its first ~2 s)
                time.sleep(rng.uniform(0.1, 0.6))
                scale(s, rng, rng.sample(names, 2))
            left = wait_converged(s, 40)
            ok(not left, "round %d: every change reconciled after up's crash %s" % (r, left))
            if left:
                explain(s, [l.split()[0] for l in left])
                break
    finally:
        s.stopping.set()
        for p in (s.up, s.sim):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except Exception:
                    p.kill()
        if failures:
            print("# logs kept in " + s.work, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

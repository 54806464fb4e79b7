#!/usr/bin/python3
# chaos_smoke.py - a short, seeded run of the chaos soak (tests/integration/chaos/chaos.py,
# `make chaos` for the long one): 35 s of churn (about 10 RayClusters, 3 RayJobs, 3 RayServices
# with Serve config and image upgrades at a time)
# under kill -9 of rayop processes (watcher, controllers, the supervisor) every 2-5 s, 5 % injected API errors and resets, watch cuts,
# stale-cache windows, 410s on resume and one kubesim kill -9 + restart from --state; then
# everything must converge within 60 s. One "ok"/"not ok" line per invariant; a violation
# prints the object's timeline. Memory growth is only judged by the long soak.
# deadline: 200
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "chaos"))
import chaos  # noqa: E402


def main():
    s = chaos.Soak(seconds=35, seed=17, scale=0.35, kubesim_restart_s=20, converge_s=60, services=3)
    n = s.run_and_clean()
    for inv in chaos.INVARIANTS:
        vs = s.violations.get(inv, [])
        print("%s - invariant %s: %d violation(s)" % ("not ok" if vs else "ok", inv, len(vs)), flush=True)
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# kuberay_diff.py - a short run of tools/kuberay_diff.py (make diff-kuberay runs every
# sample): four samples (a RayCluster, a RayJob to completion, a sidecar-mode RayJob - KubeRay
# v1.5's sidecar waits with `wget ... | grep success` in kubesim's Pod sandbox - and a
# RayService to Ready) under the real KubeRay v1.5.0 operator and under rayop on one kubesim; every object,
# status field and Event compared, and every difference must be explained in
# docs/kuberay-differences.md. Skipped when .peers/bin/kuberay-operator is missing; the
# node pool's size is checked against every sample either way.
# deadline: 200
import importlib.util
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KUBERAY = os.environ.get("KUBERAY_BIN") or os.path.join(ROOT, ".peers", "bin", "kuberay-operator")
SAMPLES = "ray-cluster.sample.yaml,ray-job.sample.yaml,ray-job.sidecar-mode.yaml,ray-service.sample.yaml"


def pool_checks():
    """The run's simulated node pool holds every Pod both operators create, in any order
    (a Pod needing most of a node, like the deepseek sample's 500Gi workers, must not stay
    Pending for whichever operator came later); the pool it replaced did not."""
    spec = importlib.util.spec_from_file_location("kuberay_diff_tool",
                                                  os.path.join(ROOT, "tools", "kuberay_diff.py"))
    kd = importlib.util.module_from_spec(spec)   # this script has the tool's name
    spec.loader.exec_module(kd)
    samples = kd.load_samples()
    why = kd.pool_check(samples)
    print(("ok - " if samples and why is None else "not ok - ") +
          "the node pool holds every Pod of the %d samples in any order%s" % (
              len(samples), " (%s)" % why if why else ""), flush=True)
    kd.POOL_NODES, kd.POOL_CPU, kd.POOL_MEM_GI = 64, 64, 512
    old = kd.pool_check(samples)
    print(("ok - " if old else "not ok - ") + "the old pool (64 nodes of 64 CPU, 512Gi) is refused: %s"
          % old, flush=True)
    return 0 if samples and why is None and old else 1


def main():
    if pool_checks():
        return 1
    if not os.access(KUBERAY, os.X_OK):
        print("skip - KubeRay differential run (%s is missing: make peers)" % KUBERAY)
        return 0
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "kuberay_diff.py"),
                        "--samples", SAMPLES, "--deadline", "120"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=190)
    out = p.stdout.decode(errors="replace")
    m = re.search(r"^(\d+) objects compared, (\d+) differ, (\d+) explained$", out, re.M)
    fails = 0

    def check(what, cond):
        nonlocal fails
        print(("ok - " if cond else "not ok - ") + what, flush=True)
        if not cond:
            fails += 1
            for line in out.splitlines()[-40:]:
                print("#   " + line)

    check("the run printed its summary line", m is not None)
    if m:
        n, d, k = map(int, m.groups())
        check("objects of both operators compared (%d)" % n, n >= 15)
        check("every difference explained (%d differ, %d explained)" % (d, k), d == k)
        check("the tool's exit status says so", p.returncode == 0)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

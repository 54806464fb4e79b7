#!/usr/bin/python3
# bench/rayjob_dashboard.py - does RayJob dashboard polling delay other work? (KubeRay
# users' complaint: kuberay#2646, #3907, #4087). Not in make test (minutes).
#
# kubesim's simulated dashboards answer after KUBESIM_RAY_DASHBOARD_DELAY_MS (1500: a slow
# head). RJ_BENCH_JOBS (100) HTTPMode RayJobs run long Ray jobs, so the RayJob controller
# polls every one every 3 s. Then, RJ_BENCH_SAMPLES (5) times each:
#   RayCluster: PATCH a worker group's replicas of an unrelated cluster -> the new worker
#               Pod exists (event -> reconcile -> create, the RayCluster controller)
#   RayJob:     POST a new RayJob -> its status.jobDeploymentStatus is set (event -> first
#               reconcile of another RayJob, same controller as the polls)
# The same run with no delay is the baseline; the figures and ratios are printed.
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration", "raycluster"))
import rclib  # noqa: E402

NS = "default"
N = int(os.environ.get("RJ_BENCH_JOBS", "100"))
SAMPLES = int(os.environ.get("RJ_BENCH_SAMPLES", "5"))
HEAD = {"rayStartParams": {}, "template": {"spec": {"containers": [{
    "name": "ray-head", "image": "rayproject/ray:2.52.0",
    "ports": [{"containerPort": 8265, "name": "dashboard"}],
    "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}]}}}


def rayjob(name, seconds):
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
            "spec": {"entrypoint": "python -c 1", "submissionMode": "HTTPMode",
                     "runtimeEnvYAML": "env_vars:\n  KUBESIM_JOB_SECONDS: \"%d\"\n" % seconds,
                     "rayClusterSpec": {"rayVersion": "2.52.0", "headGroupSpec": HEAD}}}


def run(delay_ms):
    os.environ["KUBESIM_RAY_DASHBOARD_DELAY_MS"] = str(delay_ms)
    env = rclib.Env(["--nodes", "8", "--node-cpu", "64", "--node-memory", "256Gi",
                     "--pod-start-ms", "100", "--pod-ready-ms", "100"], name="rj-bench")
    env.start_watcher()
    env.start_controller("raycluster")
    env.start("rayjob", ["controller", "rayjob", "--kubeconfig", env.kubeconfig, "--state-dir",
                         env.state, "--use-kubernetes-proxy=true", "--metrics-addr", "0",
                         "--health-probe-bind-address", "0"])
    jp = "/apis/ray.io/v1/namespaces/%s/rayjobs" % NS
    for i in range(N):
        env.req("POST", jp, rayjob("poll-%03d" % i, 3600))

    def running():
        items = env.items(jp)
        return sum(1 for j in items if j.get("status", {}).get("jobDeploymentStatus") == "Running")
    t0 = time.monotonic()
    n = rclib.wait_until(600, lambda: running() >= N and N)
    print("# delay %d ms: %d/%d RayJobs Running after %.0f s" % (delay_ms, running(), N,
                                                                 time.monotonic() - t0), flush=True)
    # an unrelated RayCluster, converged
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "probe"},
          "spec": {"headGroupSpec": HEAD, "workerGroupSpecs": [{
              "groupName": "g", "replicas": 0, "minReplicas": 0, "maxReplicas": 100,
              "rayStartParams": {}, "template": {"spec": {"containers": [{
                  "name": "w", "image": "ray", "resources": {"requests": {"cpu": "10m"}}}]}}}]}}
    env.req("POST", env.rc_path(NS), rc)
    rclib.wait_until(120, lambda: len(env.pods(NS, "probe")) == 1)
    rc_lat, rj_lat = [], []
    for k in range(1, SAMPLES + 1):
        t = time.monotonic()
        env.patch(env.rc_path(NS, "probe"), {"spec": {"workerGroupSpecs": [{
            "groupName": "g", "replicas": k, "minReplicas": 0, "maxReplicas": 100,
            "rayStartParams": {}, "template": {"spec": {"containers": [{
                "name": "w", "image": "ray", "resources": {"requests": {"cpu": "10m"}}}]}}}]}})
        if rclib.wait_until(120, lambda: len(env.pods(NS, "probe")) >= 1 + k, every=0.02):
            rc_lat.append(time.monotonic() - t)
        t = time.monotonic()
        env.req("POST", jp, rayjob("probe-%d" % k, 3600))
        if rclib.wait_until(300, lambda: (env.get(jp + "/probe-%d" % k) or {}).get("status", {})
                            .get("jobDeploymentStatus"), every=0.02):
            rj_lat.append(time.monotonic() - t)
    env.close()
    return rc_lat, rj_lat


def med(v):
    return statistics.median(v) if v else float("nan")


def main():
    base = run(0)
    slow = run(int(os.environ.get("RJ_BENCH_DELAY_MS", "1500")))
    print("# event -> reconcile, median of %d (s): RayCluster %.3f (baseline %.3f, x%.1f); "
          "another RayJob %.3f (baseline %.3f, x%.1f)" % (
              SAMPLES, med(slow[0]), med(base[0]), med(slow[0]) / med(base[0]),
              med(slow[1]), med(base[1]), med(slow[1]) / med(base[1])), flush=True)
    print(json.dumps({"jobs": N, "raycluster_s": {"baseline": base[0], "slow": slow[0]},
                      "rayjob_s": {"baseline": base[1], "slow": slow[1]}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

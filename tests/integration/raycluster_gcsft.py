#!/usr/bin/python3
# raycluster_gcsft.py - GCS fault tolerance cleanup as KubeRay v1.7 does it:
# a RayCluster with gcsFaultToleranceOptions (Redis) gets the finalizer
# ray.io/gcs-ft-redis-cleanup-finalizer before any Pod; deleting it deletes its
# Pods, waits for the head to go, runs the Redis cleanup Job (kubesim's Job
# controller runs its Pod to completion), then removes the finalizer so the
# cluster goes (Event CreatedRedisCleanupJob). A second cluster whose cleanup Job
# never finishes (its Pod runs for 10 min) has the finalizer force-removed after
# ray.io/gcs-ft-deletion-timeout (3 s) with the Warning Event ForceDeletedStuckCluster.
# deadline: 150
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
FIN = "ray.io/gcs-ft-redis-cleanup-finalizer"


def cluster(name, annotations=None, pod_annotations=None):
    tmpl = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}
    if pod_annotations:
        tmpl["metadata"] = {"annotations": pod_annotations}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
                     "headGroupSpec": {"rayStartParams": {}, "template": tmpl},
                     "workerGroupSpecs": [{"groupName": "g", "replicas": 1, "minReplicas": 0,
                                           "maxReplicas": 2, "rayStartParams": {}, "template": {
                                               "spec": {"containers": [{"name": "w", "image": "ray",
                                                                        "resources": {"requests": {"cpu": "100m"}}}]}}}]}}


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "100", "--pod-ready-ms", "150",
                     "--pod-stop-ms", "100", "--job-pod-ms", "500"], name="rc-gcsft")
    env.start_watcher()
    env.start_controller()

    def obj(name):
        return env.get(env.rc_path(NS, name))

    def ready(name):
        o = obj(name) or {}
        return o.get("status", {}).get("state") == "ready" and len(env.pods(NS, name)) == 2

    env.req("POST", env.rc_path(NS), cluster("ft"))
    env.req("POST", env.rc_path(NS), cluster("stuck", {"ray.io/gcs-ft-deletion-timeout": "3"},
                                             {"kubesim.io/exit-after-ms": "600000"}))
    check("both GCS FT clusters ready", wait_until(30, lambda: ready("ft") and ready("stuck")))
    check("the Redis cleanup finalizer is on both",
          all(FIN in (obj(n)["metadata"].get("finalizers") or []) for n in ("ft", "stuck")))

    env.req("DELETE", env.rc_path(NS, "ft"))
    jobs = []

    def job_seen():
        jobs[:] = [j for j in env.items("/apis/batch/v1/namespaces/default/jobs")
                   if j["metadata"]["name"].startswith("ft-")]
        return jobs
    check("deletion: Pods deleted, then the Redis cleanup Job created",
          wait_until(30, job_seen) and not [p for p in env.pods(NS, "ft")
                                            if p["metadata"]["labels"].get("ray.io/node-type") == "head"])
    check("the Job is KubeRay's (name <cluster>-redis-cleanup, owned by the cluster)",
          jobs and jobs[0]["metadata"]["name"] == "ft-redis-cleanup" and
          jobs[0]["metadata"]["ownerReferences"][0]["kind"] == "RayCluster", jobs[:1])
    check("the Job completes and the finalizer is removed: the RayCluster is gone",
          wait_until(30, lambda: obj("ft") is None))
    check("Event CreatedRedisCleanupJob",
          any("ft-redis-cleanup" in e.get("note", "") for e in env.events(NS, "CreatedRedisCleanupJob")))

    env.req("DELETE", env.rc_path(NS, "stuck"))
    check("a cleanup Job that never finishes: finalizer force-removed after the timeout",
          wait_until(30, lambda: obj("stuck") is None))
    ev = env.events(NS, "ForceDeletedStuckCluster")
    check("Warning Event ForceDeletedStuckCluster", ev and ev[0]["type"] == "Warning", ev[:1])
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

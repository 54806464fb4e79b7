#!/usr/bin/python3
# raycluster_gcs_embedded.py - gcsFaultToleranceOptions.backend rocksdb with
# `--feature-gates GCSFaultToleranceEmbeddedStorage=true`, against kubesim:
#  * KubeRay's sample: NAME-gcs-pvc created (1Gi, ReadWriteOnce, labelled, owned; CreatedPVC),
#    and the head Pod mounts it at /data/gcs with RAY_gcs_storage=rocksdb;
#  * deleting the cluster deletes the PVC with it (DeleteWithCluster, the default);
#  * deletionPolicy Retain: the PVC has no owner and outlives the cluster; a cluster of the
#    same name adopts it; switching the policy back gives it the owner reference;
#  * a size changed after the PVC exists: a Warning says it cannot be reconfigured in place;
#  * storage.claimName of a PVC that does not exist: FailedToCreatePVC Warning, no PVC made;
#    kubesim keeps the head Pod unschedulable until the claim exists, as a real scheduler.
# deadline: 150
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
PVC = "/api/v1/namespaces/%s/persistentvolumeclaims" % NS


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "100", "--pod-ready-ms", "150",
                     "--pod-stop-ms", "100"], name="rc-gcsemb")
    env.start_watcher()
    env.start_controller(extra=["--feature-gates", "GCSFaultToleranceEmbeddedStorage=true"])
    rc = rclib.load_sample("ray-cluster.embedded-gcs-ft.yaml")
    name = rc["metadata"]["name"]
    pvc = PVC + "/%s-gcs-pvc" % name
    env.req("POST", env.rc_path(NS), rc)
    check("the GCS storage PVC is created", wait_until(20, lambda: env.get(pvc)), env.items(PVC))
    p = env.get(pvc) or {}
    refs = p.get("metadata", {}).get("ownerReferences") or [{}]
    check("1Gi ReadWriteOnce, labelled ray.io/cluster, owned by the RayCluster",
          p.get("spec", {}).get("resources", {}).get("requests", {}).get("storage") == "1Gi" and
          p["spec"].get("accessModes") == ["ReadWriteOnce"] and
          p["metadata"].get("labels") == {"ray.io/cluster": name} and
          refs[0].get("kind") == "RayCluster" and refs[0].get("controller") is True, p)
    check("CreatedPVC Event", wait_until(5, lambda: env.events(NS, "CreatedPVC") != []))

    def head():
        return next((x for x in env.pods(NS, name)
                     if x["metadata"].get("labels", {}).get("ray.io/node-type") == "head"), None)
    h = wait_until(20, head) or {"spec": {"containers": [{}]}}
    c = h["spec"]["containers"][0]
    envs = {e["name"]: e.get("value") for e in c.get("env", [])}
    check("the head Pod mounts the PVC at /data/gcs with RAY_gcs_storage=rocksdb",
          {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "%s-gcs-pvc" % name}}
          in h["spec"].get("volumes", []) and
          any(m.get("name") == "gcs-storage" and m.get("mountPath") == "/data/gcs"
              for m in c.get("volumeMounts", [])) and
          envs.get("RAY_gcs_storage") == "rocksdb" and envs.get("RAY_gcs_storage_path") == "/data/gcs"
          and "RAY_REDIS_ADDRESS" not in envs, h["spec"])

    # drift: the size asked for changes after the PVC exists
    check("size change accepted", env.update(env.rc_path(NS, name), lambda cur: cur["spec"][
        "gcsFaultToleranceOptions"]["storage"].update(size="2Gi")) == 200)
    check("a changed size is reported, the PVC kept as it is",
          wait_until(15, lambda: any("cannot be reconfigured in place (requested size 2Gi != current 1Gi)"
                                     in (e.get("note") or "") for e in env.events(NS, "FailedToCreatePVC")))
          and (env.get(pvc) or {}).get("spec", {}).get("resources", {}).get("requests", {})
          .get("storage") == "1Gi")
    env.req("DELETE", env.rc_path(NS, name))
    check("DeleteWithCluster: the PVC goes with the cluster",
          wait_until(20, lambda: env.get(pvc) is None))

    # Retain
    ret = rclib.load_sample("ray-cluster.embedded-gcs-ft.yaml")
    ret["metadata"]["name"] = "keep"
    ret["spec"]["gcsFaultToleranceOptions"]["storage"]["deletionPolicy"] = "Retain"
    kp = PVC + "/keep-gcs-pvc"
    env.req("POST", env.rc_path(NS), ret)
    check("Retain: the PVC is made without an owner",
          wait_until(20, lambda: env.get(kp)) and
          not (env.get(kp) or {}).get("metadata", {}).get("ownerReferences"), env.get(kp))
    kuid = (env.get(kp) or {}).get("metadata", {}).get("uid")
    env.req("DELETE", env.rc_path(NS, "keep"))
    wait_until(20, lambda: env.get(env.rc_path(NS, "keep")) is None)
    check("...and outlives the cluster", (env.get(kp) or {}).get("metadata", {}).get("uid") == kuid)
    del ret["spec"]["gcsFaultToleranceOptions"]["storage"]["deletionPolicy"]
    env.req("POST", env.rc_path(NS), ret)

    def adopted():
        o = env.get(kp) or {}
        refs = o.get("metadata", {}).get("ownerReferences") or []
        return o.get("metadata", {}).get("uid") == kuid and any(r.get("controller") for r in refs)
    check("a new cluster of that name (DeleteWithCluster) adopts it and becomes its owner",
          wait_until(20, adopted), env.get(kp))
    check("switch to Retain accepted", env.update(env.rc_path(NS, "keep"), lambda cur: cur["spec"][
        "gcsFaultToleranceOptions"]["storage"].update(deletionPolicy="Retain")) == 200)
    check("switching to Retain drops the owner reference",
          wait_until(15, lambda: not (env.get(kp) or {}).get("metadata", {}).get("ownerReferences")),
          env.get(kp))

    # a claim of the user's that does not exist
    byo = rclib.load_sample("ray-cluster.embedded-gcs-ft.yaml")
    byo["metadata"]["name"] = "byo"
    byo["spec"]["gcsFaultToleranceOptions"]["storage"] = {"claimName": "missing-claim"}
    env.req("POST", env.rc_path(NS), byo)
    check("claimName of a missing PVC: FailedToCreatePVC Warning, no PVC made",
          wait_until(15, lambda: any('ClaimName "missing-claim" not found in namespace default'
                                     in (e.get("note") or "") for e in env.events(NS, "FailedToCreatePVC")))
          and env.get(PVC + "/missing-claim") is None and env.get(PVC + "/byo-gcs-pvc") is None)

    def byo_head():
        return next((x for x in env.pods(NS, "byo")
                     if x["metadata"].get("labels", {}).get("ray.io/node-type") == "head"), {})

    def unschedulable():
        return any(c.get("type") == "PodScheduled" and c.get("status") == "False" and
                   'persistentvolumeclaim "missing-claim" not found' in (c.get("message") or "")
                   for c in byo_head().get("status", {}).get("conditions", []))
    check("kubesim keeps its head Pod Pending: persistentvolumeclaim \"missing-claim\" not found",
          wait_until(20, unschedulable), byo_head().get("status"))
    env.req("POST", PVC, {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"name": "missing-claim"},
                          "spec": {"accessModes": ["ReadWriteOnce"],
                                   "resources": {"requests": {"storage": "1Gi"}}}})
    check("once the claim exists the head Pod is scheduled and runs",
          wait_until(20, lambda: byo_head().get("status", {}).get("phase") == "Running"),
          byo_head().get("status"))
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

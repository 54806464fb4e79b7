#!/usr/bin/python3
# kubesim_job_api.py - batch/v1 Job API rules of the real API server that kubesim's
# store applies (docs/kubesim-store.md, "Delete" and "Built-in defaults and validation"):
# the propagation policy of a Job DELETE, and the 422 validation of the pod template.
# deadline: 50
#
# Starts kubesim (2 nodes; the Job Pods run 30 s) and deletes running Jobs the ways
# clients do: no body (the Python client), an empty DeleteOptions (client-go's
# DeleteOptions{}), `kubectl delete` (sends Background), `kubectl delete --cascade=orphan`,
# propagationPolicy Orphan / Foreground, orphanDependents=true, and a delete-collection
# without options. Without a policy the Job's Pods are orphaned (kept running, their
# ownerReference and tracking finalizer removed) and the response carries the real
# "child pods are preserved by default" Warning; Background and Foreground take the
# Pods (Foreground holds the Job with foregroundDeletion until they are gone); an
# explicit policy is never warned about. A Job whose template has an invalid label
# (while the Job's own labels are fine), an invalid annotation key or a container
# without an image is refused with 422 and the real field path (spec.template.labels,
# spec.template.annotations, spec.template.spec.containers[0].image), by the HTTP API
# and by kubectl create; nothing is stored.
# Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubesim_cluster as kc  # noqa: E402  (ok/check/wait_until)
import kubesim_jobs as kj  # noqa: E402  (JobSim: kubesim with 2 nodes and a kubeconfig)
from kubesim_cluster import check, wait_until  # noqa: E402

JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
WARNING = "child pods are preserved by default when jobs are deleted"


class Sim(kj.JobSim):
    def delete(self, path, raw_body=None):
        """DELETE with raw_body sent as is (None: no body at all); returns
        (code, object, Warning headers)."""
        r = urllib.request.Request(self.url + path, data=raw_body, method="DELETE",
                                   headers={"Content-Type": "application/json"}
                                   if raw_body is not None else {})
        try:
            with urllib.request.urlopen(r, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"{}"), resp.headers.get_all("Warning") or []
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}"), e.headers.get_all("Warning") or []


def job(name):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"suite": "del", "case": name}},
            "spec": {"template": {"metadata": {
                "labels": {"app": name},
                # runs 30 s, so every Pod is still Running when its Job is deleted
                "annotations": {"kubesim.io/exit-after-ms": "30000"}}, "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox:1.36"}]}}}}


def job_pods(sim, name):
    got = sim.get(PODS + "?labelSelector=batch.kubernetes.io/job-name%3D" + name)
    return got["items"] if got else []


def running_job(sim, name):
    """Creates Job name and waits until its Pod runs; returns the Pod's name."""
    code, _ = sim.req("POST", JOBS, job(name))
    if code != 201:
        return None
    pods = wait_until(10, lambda: [p for p in job_pods(sim, name)
                                   if p["status"].get("phase") == "Running"])
    return pods[0]["metadata"]["name"] if pods else None


def orphaned(sim, job_name, pod_name):
    """The Job is gone and its Pod is still Running with no owner and no tracking finalizer."""
    if sim.req("GET", JOBS + "/" + job_name)[0] != 404:
        return None
    p = sim.get(PODS + "/" + pod_name)
    if not p or p["metadata"].get("deletionTimestamp") or p["status"].get("phase") != "Running":
        return None
    md = p["metadata"]
    return p if not md.get("ownerReferences") and \
        "batch.kubernetes.io/job-tracking" not in md.get("finalizers", []) else None


def all_gone(sim, job_name):
    return sim.req("GET", JOBS + "/" + job_name)[0] == 404 and job_pods(sim, job_name) == []


def main():
    kc.run_main("kubesim-job-api.", Sim, run, "")


def run(sim):
    names = ["nobody", "empty", "orphan", "orphandeps", "kubectl", "kcorphan", "fg", "coll1"]
    pods = {}
    for n in names:
        pods[n] = running_job(sim, n)
    check("8 Jobs, each with a Running Pod", all(pods.values()), pods)

    # ---- no policy: orphan, with the real Warning
    code, obj, warn = sim.delete(JOBS + "/nobody")
    check("DELETE without a body: 200 with the Job (held by the orphan finalizer)",
          code == 200 and obj.get("metadata", {}).get("finalizers") == ["orphan"] and
          obj["metadata"].get("deletionTimestamp"), obj.get("metadata"))
    check("... and the Warning 'child pods are preserved by default'",
          any(WARNING in w and "propagationPolicy=Background" in w for w in warn), warn)
    check("... the Job goes, its Pod keeps running without owner or tracking finalizer",
          wait_until(10, lambda: orphaned(sim, "nobody", pods["nobody"])),
          sim.get(PODS + "/" + str(pods["nobody"])))
    code, obj, warn = sim.delete(JOBS + "/empty", b'{"kind":"DeleteOptions","apiVersion":"v1"}')
    check("DELETE with an empty DeleteOptions (client-go) warns and orphans too",
          code == 200 and any(WARNING in w for w in warn) and
          wait_until(10, lambda: orphaned(sim, "empty", pods["empty"])), warn)

    # ---- explicit policies: no warning
    code, _, warn = sim.delete(JOBS + "/orphan?propagationPolicy=Orphan")
    check("propagationPolicy=Orphan: orphaned, no warning",
          code == 200 and not warn and wait_until(10, lambda: orphaned(sim, "orphan", pods["orphan"])),
          warn)
    code, _, warn = sim.delete(JOBS + "/orphandeps", b'{"orphanDependents":true}')
    check("orphanDependents: true: orphaned, no warning",
          code == 200 and not warn and
          wait_until(10, lambda: orphaned(sim, "orphandeps", pods["orphandeps"])), warn)
    code, obj, warn = sim.delete(JOBS + "/fg", b'{"propagationPolicy":"Foreground"}')
    check("Foreground: the Job is kept with foregroundDeletion, no warning",
          code == 200 and not warn and obj.get("metadata", {}).get("finalizers") == ["foregroundDeletion"],
          {"warn": warn, "obj": obj.get("metadata")})
    check("... its Pod is deleted, then the Job", wait_until(10, lambda: all_gone(sim, "fg")),
          [p["metadata"].get("deletionTimestamp") for p in job_pods(sim, "fg")])

    # ---- kubectl sends Background unless told otherwise
    env = dict(os.environ, KUBECONFIG=sim.kubeconfig)

    def kubectl(*args):
        return subprocess.run([KUBECTL, "--cache-dir", os.path.join(sim.work, "cache"),
                               "--request-timeout=20s"] + list(args),
                              capture_output=True, text=True, env=env, timeout=40)
    out = kubectl("delete", "job", "kubectl", "--wait=false")
    check("kubectl delete job: no warning, the Pod goes with the Job",
          out.returncode == 0 and WARNING not in out.stderr and
          wait_until(10, lambda: all_gone(sim, "kubectl")), out.stdout + out.stderr)
    out = kubectl("delete", "job", "kcorphan", "--cascade=orphan", "--wait=false")
    check("kubectl delete job --cascade=orphan: the Pod stays",
          out.returncode == 0 and WARNING not in out.stderr and
          wait_until(10, lambda: orphaned(sim, "kcorphan", pods["kcorphan"])), out.stdout + out.stderr)

    # ---- delete-collection without options: the same default and warning
    code, _, warn = sim.delete(JOBS + "?labelSelector=case%3Dcoll1")
    check("DELETE of a collection without a policy: warned, the Pod orphaned",
          code == 200 and any(WARNING in w for w in warn) and
          wait_until(10, lambda: orphaned(sim, "coll1", pods["coll1"])), warn)

    template_validation(sim, kubectl)

    # ---- other types keep Background as their default
    code, _ = sim.req("POST", kc.NS + "/configmaps", {"metadata": {"name": "owner"}})
    owner = sim.get(kc.NS + "/configmaps/owner")
    sim.req("POST", kc.NS + "/configmaps", {"metadata": {"name": "dep", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]}})
    code, _, warn = sim.delete(kc.NS + "/configmaps/owner")
    check("a ConfigMap without a policy: Background (the dependent is collected, no warning)",
          code == 200 and not warn and
          wait_until(10, lambda: sim.req("GET", kc.NS + "/configmaps/dep")[0] == 404), warn)


def template_validation(sim, kubectl):
    bad = job("badtmpl")
    bad["spec"]["template"]["metadata"]["labels"]["app"] = "not a label"
    code, st = sim.req("POST", JOBS, bad)
    causes = st.get("details", {}).get("causes", [])
    check("template label invalid, Job labels valid: 422 at spec.template.labels",
          code == 422 and [c.get("field") for c in causes] == ["spec.template.labels"] and
          'Job.batch "badtmpl" is invalid: spec.template.labels: Invalid value: "not a label"'
          in st.get("message", ""), st)
    check("... nothing stored", sim.req("GET", JOBS + "/badtmpl")[0] == 404)
    bad = job("badann")
    bad["spec"]["template"]["metadata"]["annotations"] = {"a b": "x"}
    code, st = sim.req("POST", JOBS, bad)
    check("template annotation key invalid: 422 at spec.template.annotations",
          code == 422 and [c.get("field") for c in st.get("details", {}).get("causes", [])] ==
          ["spec.template.annotations"], st)
    bad = job("noimage")
    del bad["spec"]["template"]["spec"]["containers"][0]["image"]
    code, st = sim.req("POST", JOBS, bad)
    check("template container without image: 422 at spec.template.spec.containers[0].image",
          code == 422 and [c.get("field") for c in st.get("details", {}).get("causes", [])] ==
          ["spec.template.spec.containers[0].image"], st)
    path = os.path.join(sim.work, "bad-job.json")
    bad = job("kbad")
    bad["spec"]["template"]["metadata"]["labels"]["app"] = "-dash"
    with open(path, "w") as f:
        json.dump(bad, f)
    out = kubectl("create", "-f", path)
    check("kubectl create -f: the real error text",
          out.returncode != 0 and 'The Job "kbad" is invalid: spec.template.labels: Invalid value: '
          '"-dash"' in out.stderr, out.stdout + out.stderr)


if __name__ == "__main__":
    main()

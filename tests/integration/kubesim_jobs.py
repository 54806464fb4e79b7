#!/usr/bin/python3
# kubesim_jobs.py - kubesim's simulated batch/v1 Job controller (kubesim/cluster/jobs.c).
# deadline: 60
#
# Starts kubesim with 2 nodes (--job-pod-ms 600) and checks over plain HTTP, the Jobs
# running side by side: completions 3 / parallelism 2 completes (never more than 2
# Pods at once; SuccessCriteriaMet then Complete, reason CompletionsReached; status
# counters, startTime/completionTime, uncountedTerminatedPods {}; owned Pods named
# JOB-xxxxx with the job-name/controller-uid labels, a controller ownerReference and
# the tracking finalizer removed once counted; SuccessfulCreate and Completed Events);
# Pods that exit 1 fail the Job through backoffLimit 2 (failed=3, FailureTarget then
# Failed BackoffLimitExceeded, Warning Event); restartPolicy OnFailure restarts count
# against backoffLimit; activeDeadlineSeconds fails with DeadlineExceeded and deletes the
# running Pods; a suspended Job has no Pods and Suspended=True until resumed; Indexed
# completion (index annotation/label, hostname, completedIndexes "0-2"); a deleted running
# Pod counts as failed and is replaced; lowering parallelism deletes a Pod without counting
# it failed; deleting a running Job takes its Pods (tracking
# finalizers released); ttlSecondsAfterFinished deletes the Job and its Pods; `kubectl
# create job` (a protobuf body) and `kubectl wait --for=condition=complete`; `kubectl get
# jobs` shows STATUS/COMPLETIONS/DURATION. Every wait polls with a deadline.
# Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubesim_cluster as kc  # noqa: E402  (ok/check/wait_until/cond and the HTTP Sim)
from kubesim_cluster import check, cond, wait_until  # noqa: E402

JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"


class JobSim(kc.Sim):
    def __init__(self, work):
        self.work = work
        self.kubeconfig = os.path.join(work, "kubeconfig")
        self.log = open(os.path.join(work, "kubesim.log"), "wb")
        self.proc = subprocess.Popen([kc.KUBESIM, "--listen", "127.0.0.1:0", "--nodes", "2",
                                      "--kubeconfig-out", self.kubeconfig,
                                      "--pod-start-ms", "100", "--pod-ready-ms", "150",
                                      "--pod-stop-ms", "150", "--job-pod-ms", "600"],
                                     stdout=subprocess.PIPE, stderr=self.log)
        self.url = self.proc.stdout.readline().decode().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("kubesim did not start")


def job(name, completions=None, parallelism=None, backoff=None, annotations=None, restart="Never",
        **spec_extra):
    tmd = {"labels": {"app": name}}
    if annotations:
        tmd["annotations"] = annotations
    spec = {"template": {"metadata": tmd, "spec": {
        "restartPolicy": restart,
        "containers": [{"name": "work", "image": "busybox:1.36", "command": ["sh", "-c", "true"]}]}}}
    if completions is not None:
        spec["completions"] = completions
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if backoff is not None:
        spec["backoffLimit"] = backoff
    spec.update(spec_extra)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def merge_patch(sim, path, body):
    r = urllib.request.Request(sim.url + path, data=json.dumps(body).encode(), method="PATCH",
                               headers={"Content-Type": "application/merge-patch+json"})
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def conds(j):
    return [(c["type"], c["status"], c.get("reason")) for c in (j or {}).get("status", {}).get("conditions", [])]


def job_pods(sim, name):
    got = sim.get(PODS + "?labelSelector=batch.kubernetes.io/job-name%3D" + name)
    return got["items"] if got else []


def events(sim, name, reason):
    got = sim.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D" + name +
                  ",reason%3D" + reason)
    return got["items"] if got else []


def finished(sim, name, kind):
    j = sim.get(JOBS + "/" + name)
    return j if cond(j, kind) and cond(j, kind)["status"] == "True" else None


def main():
    kc.run_main("kubesim-jobs.", JobSim, run, " with Jobs running")


def run(sim):
    created = {}
    for body in (job("comp", completions=3, parallelism=2),
                 job("fail", backoff=2, annotations={"kubesim.io/fail": "exit:1"}),
                 job("onfail", backoff=1, restart="OnFailure", annotations={"kubesim.io/fail": "exit:1"}),
                 job("late", parallelism=2, annotations={"kubesim.io/exit-after-ms": "60000"},
                     activeDeadlineSeconds=1),
                 job("idx", completions=3, parallelism=3, completionMode="Indexed"),
                 job("ttl", ttlSecondsAfterFinished=1),
                 job("susp", suspend=True),
                 job("repl", annotations={"kubesim.io/exit-after-ms": "60000"}),
                 job("scale", completions=4, parallelism=2,
                     annotations={"kubesim.io/exit-after-ms": "60000"})):
        code, obj = sim.req("POST", JOBS, body)
        created[body["metadata"]["name"]] = obj
        check("create job " + body["metadata"]["name"], code == 201, obj)

    # ---- completions 3 / parallelism 2
    most = [0]

    def comp_done():
        running = [p for p in job_pods(sim, "comp")
                   if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        most[0] = max(most[0], len(running))
        return finished(sim, "comp", "Complete")

    j = wait_until(25, comp_done)
    if check("completions 3 / parallelism 2 Job reaches Complete", j, sim.get(JOBS + "/comp")):
        st = j["status"]
        check("conditions SuccessCriteriaMet then Complete, reason CompletionsReached",
              conds(j) == [("SuccessCriteriaMet", "True", "CompletionsReached"),
                           ("Complete", "True", "CompletionsReached")]
              and cond(j, "Complete")["message"] == "Reached expected number of succeeded pods", st)
        check("status succeeded 3, no active/failed, ready 0, terminating 0, uncountedTerminatedPods {}",
              st.get("succeeded") == 3 and "active" not in st and "failed" not in st and
              st.get("ready") == 0 and st.get("terminating") == 0 and
              st.get("uncountedTerminatedPods") == {}, st)
        check("startTime and completionTime set", st.get("startTime") and st.get("completionTime"), st)
        check("the Job took its template's labels (job-name, controller-uid, app)",
              j["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == "comp" and
              j["metadata"]["labels"].get("controller-uid") == j["metadata"]["uid"] and
              j["metadata"]["labels"].get("app") == "comp", j["metadata"].get("labels"))
        check("never more than parallelism=2 Pods running at once", 1 <= most[0] <= 2, most)
        pods = job_pods(sim, "comp")
        uid = j["metadata"]["uid"]
        good = [p for p in pods if p["metadata"]["name"].startswith("comp-") and
                len(p["metadata"]["name"]) == len("comp-") + 5 and
                p["metadata"].get("generateName") == "comp-" and
                p["metadata"]["labels"].get("job-name") == "comp" and
                p["metadata"]["labels"].get("batch.kubernetes.io/controller-uid") == uid and
                p["metadata"]["labels"].get("controller-uid") == uid and
                p["metadata"]["labels"].get("app") == "comp" and
                p["metadata"].get("ownerReferences") == [{
                    "apiVersion": "batch/v1", "kind": "Job", "name": "comp", "uid": uid,
                    "controller": True, "blockOwnerDeletion": True}] and
                "batch.kubernetes.io/job-tracking" not in p["metadata"].get("finalizers", []) and
                p["status"].get("phase") == "Succeeded"]
        check("3 owned Succeeded Pods comp-xxxxx: labels, controller ownerReference, tracking "
              "finalizer removed", len(pods) == 3 and len(good) == 3,
              [p["metadata"] for p in pods])
        created_ev = events(sim, "comp", "SuccessfulCreate")
        check("Events SuccessfulCreate x3 (\"Created pod: NAME\") and Completed from job-controller",
              sorted(e["message"] for e in created_ev) ==
              sorted("Created pod: " + p["metadata"]["name"] for p in pods) and
              [(e["source"]["component"], e["involvedObject"]["kind"], e["involvedObject"]["apiVersion"],
                e["involvedObject"]["uid"]) for e in events(sim, "comp", "Completed")] ==
              [("job-controller", "Job", "batch/v1", uid)],
              [e["message"] for e in created_ev])
        check("status fields in JobStatus order", list(st) == [
            "conditions", "startTime", "completionTime", "succeeded", "terminating",
            "uncountedTerminatedPods", "ready"], list(st))

    # ---- backoffLimit 2: the third failed Pod fails the Job
    j = wait_until(25, lambda: finished(sim, "fail", "Failed"))
    if check("exit:1 Pods fail the Job through backoffLimit 2", j, sim.get(JOBS + "/fail")):
        st = j["status"]
        check("failed=3, no succeeded/active, conditions FailureTarget then Failed BackoffLimitExceeded",
              st.get("failed") == 3 and "succeeded" not in st and "active" not in st and
              conds(j) == [("FailureTarget", "True", "BackoffLimitExceeded"),
                           ("Failed", "True", "BackoffLimitExceeded")] and
              cond(j, "Failed")["message"] == "Job has reached the specified backoff limit" and
              "completionTime" not in st, st)
        pods = job_pods(sim, "fail")
        check("3 Failed Pods, exit code 1", len(pods) == 3 and all(
            p["status"]["phase"] == "Failed" and
            p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1 for p in pods),
            [p.get("status", {}).get("phase") for p in pods])
        ev = events(sim, "fail", "BackoffLimitExceeded")
        check("Warning Event BackoffLimitExceeded", len(ev) == 1 and ev[0]["type"] == "Warning", ev)

    j = wait_until(20, lambda: finished(sim, "onfail", "Failed"))
    check("restartPolicy OnFailure: container restarts count against backoffLimit 1",
          j and cond(j, "Failed")["reason"] == "BackoffLimitExceeded", sim.get(JOBS + "/onfail"))

    # ---- activeDeadlineSeconds
    j = wait_until(20, lambda: finished(sim, "late", "Failed"))
    if check("activeDeadlineSeconds 1 fails the Job with DeadlineExceeded",
             j and cond(j, "Failed")["reason"] == "DeadlineExceeded" and
             cond(j, "Failed")["message"] == "Job was active longer than specified deadline",
             sim.get(JOBS + "/late")):
        check("the 2 running Pods were deleted and counted as failed",
              j["status"].get("failed") == 2 and "active" not in j["status"] and
              len(events(sim, "late", "SuccessfulDelete")) == 2, j["status"])
        check("the deleted Pods are gone", wait_until(10, lambda: job_pods(sim, "late") == []),
              [p["metadata"]["name"] for p in job_pods(sim, "late")])
        check("Warning Event DeadlineExceeded", len(events(sim, "late", "DeadlineExceeded")) == 1)

    # ---- Indexed
    j = wait_until(20, lambda: finished(sim, "idx", "Complete"))
    if check("Indexed Job (completions 3) completes", j, sim.get(JOBS + "/idx")):
        check("completedIndexes 0-2, succeeded 3", j["status"].get("completedIndexes") == "0-2" and
              j["status"].get("succeeded") == 3, j["status"])
        pods = job_pods(sim, "idx")
        seen = sorted((p["metadata"]["annotations"].get("batch.kubernetes.io/job-completion-index"),
                       p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index"),
                       p["spec"].get("hostname"), p["metadata"]["name"][:6]) for p in pods)
        check("Pods idx-N-xxxxx with the completion-index annotation and label, hostname idx-N",
              seen == [(str(i), str(i), "idx-%d" % i, "idx-%d-" % i) for i in range(3)], seen)

    # ---- suspend / resume
    j = sim.get(JOBS + "/susp")
    check("a suspended Job has Suspended=True, no Pods, no startTime",
          cond(j, "Suspended") and cond(j, "Suspended")["status"] == "True" and
          cond(j, "Suspended")["reason"] == "JobSuspended" and job_pods(sim, "susp") == [] and
          "startTime" not in j.get("status", {}), j.get("status"))
    check("resume: merge patch spec.suspend=false", merge_patch(sim, JOBS + "/susp", {"spec": {"suspend": False}}) == 200)
    j = wait_until(20, lambda: finished(sim, "susp", "Complete"))
    check("resumed: Suspended=False JobResumed, then Complete",
          j and cond(j, "Suspended")["status"] == "False" and
          cond(j, "Suspended")["reason"] == "JobResumed" and j["status"].get("succeeded") == 1,
          (j or sim.get(JOBS + "/susp")).get("status"))

    # ---- a deleted Pod is failed and replaced; deleting the Job takes its Pods
    first = wait_until(10, lambda: [p for p in job_pods(sim, "repl") if p["status"].get("phase") == "Running"])
    if check("repl: one Pod running", first and len(first) == 1, [p["metadata"]["name"] for p in job_pods(sim, "repl")]):
        victim = first[0]["metadata"]["name"]
        code, _ = sim.req("DELETE", PODS + "/" + victim)
        check("delete repl's running Pod", code == 200)

        def replaced():
            j = sim.get(JOBS + "/repl")
            pods = [p for p in job_pods(sim, "repl") if p["metadata"]["name"] != victim and
                    not p["metadata"].get("deletionTimestamp")]
            return (j, pods) if j["status"].get("failed") == 1 and j["status"].get("active") == 1 and pods else None
        got = wait_until(10, replaced)
        check("the deleted Pod counts as failed (failed=1) and a replacement is active", got,
              sim.get(JOBS + "/repl").get("status"))
        check("the deleted Pod is removed once counted", wait_until(10, lambda: all(
            p["metadata"]["name"] != victim for p in job_pods(sim, "repl"))))
        code, _ = sim.req("DELETE", JOBS + "/repl", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                    "propagationPolicy": "Background"})
        check("delete the running Job (Background)", code == 200)
        check("the Job's Pods go with it (tracking finalizers released)",
              wait_until(10, lambda: sim.req("GET", JOBS + "/repl")[0] == 404 and job_pods(sim, "repl") == []),
              [(p["metadata"]["name"], p["metadata"].get("finalizers")) for p in job_pods(sim, "repl")])

    # ---- lowering parallelism deletes the extra Pod, not counted as failed
    def two_ready():
        j = sim.get(JOBS + "/scale")
        return j if j["status"].get("active") == 2 and j["status"].get("ready") == 2 else None
    if check("scale: 2 active, 2 ready", wait_until(10, two_ready), sim.get(JOBS + "/scale").get("status")):
        check("patch parallelism 2 -> 1", merge_patch(sim, JOBS + "/scale", {"spec": {"parallelism": 1}}) == 200)

        def one_left():
            j = sim.get(JOBS + "/scale")
            return j if j["status"].get("active") == 1 and len(job_pods(sim, "scale")) == 1 else None
        j = wait_until(10, one_left)
        check("one Pod deleted (SuccessfulDelete), active 1, failed not counted",
              j and "failed" not in j["status"] and len(events(sim, "scale", "SuccessfulDelete")) == 1,
              sim.get(JOBS + "/scale").get("status"))

    # ---- ttlSecondsAfterFinished
    gone = wait_until(20, lambda: sim.req("GET", JOBS + "/ttl")[0] == 404)
    check("ttlSecondsAfterFinished 1: the finished Job is deleted", gone, sim.get(JOBS + "/ttl"))
    check("... and its Pods with it", wait_until(10, lambda: job_pods(sim, "ttl") == []),
          [p["metadata"]["name"] for p in job_pods(sim, "ttl")])

    # ---- kubectl create job (a protobuf body) / wait / get jobs
    env = dict(os.environ, KUBECONFIG=sim.kubeconfig)

    def kubectl(*args):
        return subprocess.run([KUBECTL, "--cache-dir", os.path.join(sim.work, "cache"),
                               "--request-timeout=20s"] + list(args),
                              capture_output=True, text=True, env=env, timeout=40)
    out = kubectl("create", "job", "hello", "--image=busybox:1.36", "--", "echo", "hi")
    check("kubectl create job (protobuf body) is accepted", out.returncode == 0, out.stdout + out.stderr)
    out = kubectl("wait", "--for=condition=complete", "job/hello", "--timeout=20s")
    check("kubectl wait --for=condition=complete job/hello", out.returncode == 0 and
          "condition met" in out.stdout, out.stdout + out.stderr)
    out = kubectl("get", "jobs")
    rows = {l.split()[0]: l.split() for l in out.stdout.splitlines()[1:] if l.split()}
    check("kubectl get jobs: header NAME STATUS COMPLETIONS DURATION AGE",
          out.stdout.split("\n")[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
          out.stdout + out.stderr)
    check("kubectl get jobs: comp Complete 3/3, fail Failed 0/1",
          rows.get("comp", [])[1:3] == ["Complete", "3/3"] and rows.get("fail", [])[1:3] == ["Failed", "0/1"],
          out.stdout)


if __name__ == "__main__":
    main()

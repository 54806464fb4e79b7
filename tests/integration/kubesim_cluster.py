#!/usr/bin/python3
# kubesim_cluster.py - kubesim's simulated cluster (--nodes) as a client sees it.
# deadline: 60
#
# Starts kubesim with 3 small nodes and checks over plain HTTP: Node objects with Ready
# conditions and allocatable; a Pod goes Pending -> Running -> Ready with podIP, hostIP,
# containerStatuses and the conditions in order; an oversized Pod stays Pending with
# PodScheduled=False/Unschedulable and a FailedScheduling Event, and is bound once capacity
# frees up; a crashloop annotation shows CrashLoopBackOff with a growing restartCount; a Pod
# with restartPolicy Never and exit:3 ends Failed; a Service gets Endpoints and an
# EndpointSlice for ready Pods (named targetPort resolved, never-ready Pods in
# notReadyAddresses); a deleted Pod disappears after its (capped) grace period; a Pod with
# schedulerName kubesim does not simulate (not default-scheduler, not one of the gang
# schedulers of kubesim/cluster/gang.c) is left alone, and is bound by POST pods/NAME/binding
# (one MODIFIED; 409 when bound already, 404, 400, 405). Every wait polls with a deadline.
# Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.environ.get("RAYOP_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KUBESIM = os.environ.get("KUBESIM") or os.path.join(ROOT, "bin", "kubesim")
NS = "/api/v1/namespaces/default"
failures = 0


def ok(what):
    print("ok - " + what, flush=True)


def check(what, cond, detail=None):
    global failures
    if cond:
        ok(what)
        return True
    failures += 1
    print("not ok - " + what, flush=True)
    if detail is not None:
        for line in json.dumps(detail, indent=1).splitlines()[:40]:
            print("#   " + line, flush=True)
    return False


def wait_until(deadline_s, cond):
    """Polls cond() until it returns a true value or deadline_s pass; returns the last value."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(0.05)


class Sim:
    def __init__(self, work):
        self.log = open(os.path.join(work, "kubesim.log"), "wb")
        self.proc = subprocess.Popen([KUBESIM, "--listen", "127.0.0.1:0", "--nodes", "3",
                                      "--node-cpu", "4", "--node-memory", "8Gi",
                                      "--pod-start-ms", "200", "--pod-ready-ms", "300",
                                      "--pod-stop-ms", "300"],
                                     stdout=subprocess.PIPE, stderr=self.log)
        self.url = self.proc.stdout.readline().decode().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("kubesim did not start")

    def req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.url + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def get(self, path):
        code, obj = self.req("GET", path)
        return obj if code == 200 else None

    def stop(self):
        self.proc.terminate()
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def pod(name, cpu="100m", labels=None, annotations=None, restart=None, extra_spec=None, ports=None):
    c = {"name": "main", "image": "rayproject/ray:2.9.0",
         "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}
    if ports:
        c["ports"] = ports
    spec = {"containers": [c]}
    if restart:
        spec["restartPolicy"] = restart
    spec.update(extra_spec or {})
    md = {"name": name, "labels": labels or {}}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def cond(p, t):
    for c in (p or {}).get("status", {}).get("conditions", []):
        if c["type"] == t:
            return c
    return None


def run_main(prefix, make_sim, body, what):
    """The harness of the kubesim Python tests: a kubesim in a temp dir, body(sim), then
    a check that kubesim exits 0 on SIGTERM (while `what`) with no sanitizer report."""
    work = tempfile.mkdtemp(prefix=prefix)
    sim = make_sim(work)
    try:
        body(sim)
    finally:
        rc = sim.stop()
        sim.log.close()
        with open(os.path.join(work, "kubesim.log"), errors="replace") as f:
            log = f.read()
        bad = [l for l in log.splitlines() if "Sanitizer" in l or "runtime error" in l]
        check("kubesim exits 0 on SIGTERM%s, no sanitizer report" % what,
              rc == 0 and not bad, {"rc": rc, "report": bad[:10]})
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


def main():
    run_main("kubesim-cluster.", Sim, run, " with the cluster running")


def run(sim):
    nodes = sim.get("/api/v1/nodes")["items"]
    check("3 nodes kubesim-node-0..2", sorted(n["metadata"]["name"] for n in nodes) ==
          ["kubesim-node-0", "kubesim-node-1", "kubesim-node-2"], nodes)
    n0 = nodes[0]
    check("node Ready=True, pressure conditions False, allocatable cpu 4 / pods 110",
          cond(n0, "Ready")["status"] == "True" and cond(n0, "MemoryPressure")["status"] == "False"
          and n0["status"]["allocatable"]["cpu"] == "4" and n0["status"]["allocatable"]["pods"] == "110", n0)
    check("node labels and InternalIP", n0["metadata"]["labels"].get("kubernetes.io/os") == "linux" and
          any(a["type"] == "InternalIP" for a in n0["status"]["addresses"]), n0["metadata"])

    # ---- Pending -> Running -> Ready
    code, created = sim.req("POST", NS + "/pods", pod("web-1", labels={"app": "web"},
                                                      ports=[{"name": "http", "containerPort": 8080}]))
    check("a new pod is Pending and unbound", code == 201 and created["status"].get("phase") == "Pending"
          and not created["spec"].get("nodeName"), created.get("status"))
    seen = set()

    def phases():
        p = sim.get(NS + "/pods/web-1")
        ph = p["status"].get("phase")
        r = cond(p, "Ready")
        seen.add((ph, r["status"] if r else None))
        return p if r and r["status"] == "True" else None
    p = wait_until(10, phases)
    check("pod becomes Ready", p is not None, sorted(map(str, seen)))
    if p:
        st = p["status"]
        check("it was seen Running but not Ready first", ("Running", "False") in seen, sorted(map(str, seen)))
        check("and Pending + bound (ContainerCreating, Ready False) before that", ("Pending", "False") in seen,
              sorted(map(str, seen)))
        check("bound to a node, podIP 10.244.*, hostIP, startTime",
              p["spec"].get("nodeName", "").startswith("kubesim-node-") and
              st.get("podIP", "").startswith("10.244.") and st.get("hostIP", "").startswith("10.0.")
              and "startTime" in st, st)
        check("conditions PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled all True",
              [c["type"] for c in st["conditions"]] == ["PodReadyToStartContainers", "Initialized", "Ready",
                                                        "ContainersReady", "PodScheduled"]
              and all(c["status"] == "True" for c in st["conditions"]), st["conditions"])
        cs = st["containerStatuses"][0]
        check("containerStatus ready, started, running.startedAt, imageID, containerID",
              cs["ready"] and cs["started"] and "startedAt" in cs["state"]["running"] and
              cs["containerID"].startswith("containerd://") and "@sha256:" in cs["imageID"], cs)
        check("qosClass kept", st.get("qosClass") == "Burstable", st)

    def events_for(name, reason):
        evs = sim.get(NS + "/events")["items"]
        return [e for e in evs if e["involvedObject"]["name"] == name and e["reason"] == reason]
    evs = wait_until(5, lambda: all(events_for("web-1", r) for r in ("Scheduled", "Pulled", "Created", "Started")))
    check("events Scheduled, Pulled, Created, Started", evs)
    e = (events_for("web-1", "Started") or [{}])[0]
    check("Started event shape (source kubelet + host, fieldPath, count, timestamps)",
          e.get("source", {}).get("component") == "kubelet" and e["source"].get("host") == p["spec"]["nodeName"]
          and e["involvedObject"].get("fieldPath") == "spec.containers{main}" and e.get("count") == 1
          and e.get("firstTimestamp") and e.get("type") == "Normal", e)

    # ---- oversized -> Unschedulable, retried when capacity appears
    sim.req("POST", NS + "/pods", pod("big", cpu="6"))
    p = wait_until(5, lambda: (lambda q: q if cond(q, "PodScheduled") else None)(sim.get(NS + "/pods/big")))
    c = cond(p, "PodScheduled") or {}
    check("oversized pod: PodScheduled=False reason Unschedulable, phase Pending",
          c.get("status") == "False" and c.get("reason") == "Unschedulable" and
          p["status"]["phase"] == "Pending" and not p["spec"].get("nodeName"), p and p["status"])
    check("message has the real shape", c.get("message") ==
          "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
          "3 No preemption victims found for incoming pod.", c)
    check("FailedScheduling Warning event", wait_until(5, lambda: [e for e in events_for("big", "FailedScheduling")
                                                                  if e["type"] == "Warning"]))
    big_node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "huge", "labels": {"kubernetes.io/hostname": "huge"}},
                "spec": {}, "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                                       "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}
    code, _ = sim.req("POST", "/api/v1/nodes", big_node)
    code2, _ = sim.req("PUT", "/api/v1/nodes/huge/status",
                       dict(sim.get("/api/v1/nodes/huge"), status=big_node["status"]))
    p = wait_until(5, lambda: (lambda q: q if q["spec"].get("nodeName") else None)(sim.get(NS + "/pods/big")))
    check("a node added with room: the waiting pod is bound to it",
          p is not None and p["spec"]["nodeName"] == "huge", [code, code2, p and p["spec"]])
    sim.req("DELETE", NS + "/pods/big")

    # ---- crashloop
    sim.req("POST", NS + "/pods", pod("crash", annotations={"kubesim.io/fail": "crashloop",
                                                            "kubesim.io/exit-after-ms": "200"}))

    def crashed():
        q = sim.get(NS + "/pods/crash")
        cs = (q["status"].get("containerStatuses") or [{}])[0]
        return q if cs.get("restartCount", 0) >= 2 and "waiting" in cs.get("state", {}) else None
    p = wait_until(15, crashed)
    cs = p["status"]["containerStatuses"][0] if p else {}
    check("crashloop: CrashLoopBackOff with restartCount >= 2",
          cs.get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff", p and p["status"])
    check("crashloop: lastState terminated Error exit 1",
          cs.get("lastState", {}).get("terminated", {}).get("reason") == "Error" and
          cs["lastState"]["terminated"].get("exitCode") == 1, cs)
    check("crashloop: BackOff warning event", wait_until(5, lambda: events_for("crash", "BackOff")))
    bo = wait_until(10, lambda: [e for e in events_for("crash", "BackOff") if e.get("count", 0) >= 2])
    check("crashloop: repeated back-offs aggregate into one Event with a growing count",
          len(bo) == 1 and len(events_for("crash", "BackOff")) == 1 and bo[0]["type"] == "Warning",
          events_for("crash", "BackOff"))

    # ---- restartPolicy Never + exit code
    sim.req("POST", NS + "/pods", pod("exit3", restart="Never",
                                      annotations={"kubesim.io/fail": "exit:3"}))
    p = wait_until(10, lambda: (lambda q: q if q["status"].get("phase") in ("Failed", "Succeeded") else None)(
        sim.get(NS + "/pods/exit3")))
    t = p and p["status"]["containerStatuses"][0]["state"].get("terminated", {})
    check("exit:3 with restartPolicy Never: phase Failed, terminated Error exit 3",
          p and p["status"]["phase"] == "Failed" and t.get("exitCode") == 3 and t.get("reason") == "Error",
          p and p["status"])
    sim.req("POST", NS + "/pods", pod("oom", restart="Never", annotations={"kubesim.io/fail": "oomkilled"}))
    p = wait_until(10, lambda: (lambda q: q if q["status"].get("phase") == "Failed" else None)(sim.get(NS + "/pods/oom")))
    check("oomkilled: terminated reason OOMKilled, exit 137",
          p and p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled", p and p["status"])
    sim.req("POST", NS + "/pods", pod("pull", annotations={"kubesim.io/fail": "imagepull"}))
    p = wait_until(10, lambda: (lambda q: q if (q["status"].get("containerStatuses") or [{}])[0].get("state", {})
                                .get("waiting", {}).get("reason") == "ImagePullBackOff" else None)(sim.get(NS + "/pods/pull")))
    check("imagepull: ImagePullBackOff, phase Pending", p and p["status"]["phase"] == "Pending", p and p["status"])

    # ---- Service endpoints
    sim.req("POST", NS + "/pods", pod("web-2", labels={"app": "web"}, annotations={"kubesim.io/fail": "never-ready"},
                                      ports=[{"name": "http", "containerPort": 8080}]))
    sim.req("POST", NS + "/services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                       "spec": {"selector": {"app": "web"},
                                                "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})

    def endpoints():
        ep = sim.get(NS + "/endpoints/web")
        ss = (ep or {}).get("subsets") or [{}]
        if len(ss[0].get("addresses", [])) == 1 and len(ss[0].get("notReadyAddresses", [])) == 1:
            return ep
        return None
    ep = wait_until(10, endpoints)
    check("Endpoints: ready pod in addresses, never-ready pod in notReadyAddresses", ep, sim.get(NS + "/endpoints/web"))
    if ep:
        s = ep["subsets"][0]
        check("Endpoints: named targetPort resolved to 8080, targetRef to the pod",
              s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}] and
              s["addresses"][0]["targetRef"]["name"] == "web-1", s)
    sl = sim.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name%3Dweb")
    items = (sl or {}).get("items", [])
    check("EndpointSlice labelled kubernetes.io/service-name with 2 endpoints (1 ready)",
          len(items) == 1 and len(items[0]["endpoints"]) == 2 and
          sum(1 for e in items[0]["endpoints"] if e["conditions"]["ready"]) == 1, items)

    # ---- graceful deletion
    t0 = time.monotonic()
    code, body = sim.req("DELETE", NS + "/pods/web-1")
    check("delete of a running pod answers 200 with deletionTimestamp set",
          code == 200 and body.get("metadata", {}).get("deletionTimestamp"), body)
    gone = wait_until(10, lambda: sim.req("GET", NS + "/pods/web-1")[0] == 404)
    check("the pod is removed after the capped grace (%.2fs)" % (time.monotonic() - t0), gone)
    ep = wait_until(5, lambda: (lambda e: e if not any(a.get("addresses") for a in (e.get("subsets") or [])) else None)(
        sim.get(NS + "/endpoints/web")))
    check("Endpoints drop the deleted pod", ep, sim.get(NS + "/endpoints/web"))

    # ---- other schedulers are left alone
    sim.req("POST", NS + "/pods", pod("gang", extra_spec={"schedulerName": "my-custom-scheduler"}))
    sim.req("POST", NS + "/pods", pod("after-gang"))
    wait_until(5, lambda: sim.get(NS + "/pods/after-gang")["spec"].get("nodeName"))
    g = sim.get(NS + "/pods/gang")
    check("a pod for another scheduler stays unbound without conditions",
          not g["spec"].get("nodeName") and not g["status"].get("conditions"), g["status"])

    # ---- pods/binding, as another scheduler binds: one MODIFIED with the node and
    # PodScheduled=True, the Binding's annotations merged; then the kubelet plays it
    rv = g["metadata"]["resourceVersion"]
    w = urllib.request.urlopen(sim.url + NS + "/pods?watch=1&fieldSelector=metadata.name%3Dgang"
                               "&resourceVersion=" + rv, timeout=10)
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "gang", "annotations": {"example.com/bound-by": "test"}},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "kubesim-node-1"}}
    code, body = sim.req("POST", NS + "/pods/gang/binding", binding)
    check("POST pods/gang/binding answers 201 Status Success",
          code == 201 and body.get("kind") == "Status" and body.get("status") == "Success", [code, body])
    ev = json.loads(w.readline())
    w.close()
    o = ev.get("object", {})
    check("the binding is one MODIFIED with nodeName, PodScheduled=True and the annotation",
          ev.get("type") == "MODIFIED" and o["spec"].get("nodeName") == "kubesim-node-1" and
          (cond(o, "PodScheduled") or {}).get("status") == "True" and
          o["metadata"].get("annotations", {}).get("example.com/bound-by") == "test", ev)
    code, body = sim.req("POST", NS + "/pods/gang/binding", binding)
    check("a second binding: 409 already assigned", code == 409 and body.get("reason") == "Conflict" and
          body.get("message") == 'Operation cannot be fulfilled on pods/binding "gang": pod gang is '
          'already assigned to node "kubesim-node-1"', body)
    code, body = sim.req("POST", NS + "/pods/nope/binding", dict(binding, metadata={"name": "nope"}))
    check("a binding of a missing pod: 404", code == 404 and body.get("reason") == "NotFound", body)
    code, body = sim.req("POST", NS + "/pods/gang/binding", dict(binding, metadata={"name": "other"}))
    check("a Binding named otherwise than the URL: 400", code == 400 and
          body.get("message") == "name in URL does not match name in Binding object", body)
    code, _ = sim.req("GET", NS + "/pods/gang/binding")
    check("GET pods/NAME/binding: 405", code == 405)
    p = wait_until(5, lambda: (lambda q: q if cond(q, "Ready") and cond(q, "Ready")["status"] == "True"
                                else None)(sim.get(NS + "/pods/gang")))
    check("the bound pod is played by the node's kubelet to Ready, PodScheduled=True kept",
          p and (cond(p, "PodScheduled") or {}).get("status") == "True", p and p["status"])


if __name__ == "__main__":
    main()

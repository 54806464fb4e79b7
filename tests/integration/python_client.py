#!/usr/bin/python3
# python_client.py - the official Python client (Debian python3-kubernetes) against kubesim;
# real_python_client.sh runs it with the newest client from the peers venv against a real
# control plane (RAYOP_SERVER=real).
# deadline: 90
#
# Starts its own kubesim (small watch window, so an expired resourceVersion is reachable),
# loads the kubeconfig kubesim wrote, and drives the flows real Python users run:
# CRDs through ApiextensionsV1Api; a RayCluster through CustomObjectsApi (create, get, list
# by label, merge patch, replace with a stale resourceVersion, delete); Pods through
# CoreV1Api (create, list, strategic merge patch, delete); watch.Watch().stream over pods
# seeing the synthetic ADDED, then ADDED/MODIFIED/DELETED in order; a watch from an expired
# resourceVersion raising ApiException 410; DynamicClient discovery.
# Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
import json
import os
import queue
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import yaml
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib_realserver  # noqa: E402  (RAYOP_SERVER=real: the same flows against tools/realk8s.sh)

ROOT = os.environ.get("RAYOP_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("RAYOP_SHARED") or os.path.join(ROOT, "..", "shared")
KUBESIM = os.environ.get("KUBESIM") or os.path.join(ROOT, "bin", "kubesim")
WATCH_WINDOW = 50
failures = 0


def ok(what):
    print("ok - " + what, flush=True)


def not_ok(what, detail=None):
    global failures
    failures += 1
    print("not ok - " + what, flush=True)
    if detail is not None:
        for line in str(detail).splitlines()[:20]:
            print("#   " + line, flush=True)


def check(what, cond, detail=None):
    if cond:
        ok(what)
    else:
        not_ok(what, detail)
    return cond


def expect_api_error(what, status, fn, *args, **kw):
    """Runs fn; ok when it raises ApiException with that HTTP status."""
    try:
        fn(*args, **kw)
    except ApiException as e:
        return check(what, e.status == status, "got %s %s: %s" % (e.status, e.reason, e.body))
    return check(what, False, "no ApiException raised")


def wait_until(deadline_s, cond):
    """Polls cond() until it returns a true value or deadline_s pass; returns the value."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(0.05)


class Kubesim:
    """A kubesim child process: its URL comes from its first stdout line."""

    def __init__(self, work):
        self.work = work
        self.kubeconfig = os.path.join(work, "kubeconfig")
        self.log = open(os.path.join(work, "kubesim.log"), "wb")
        args = [KUBESIM, "--listen", "127.0.0.1:0", "--kubeconfig-out", self.kubeconfig,
                "--request-log", os.path.join(work, "requests.log"),
                "--watch-window", str(WATCH_WINDOW), "--nodes", "0"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        self.url = None
        line = b""
        end = time.monotonic() + 15
        while not line.endswith(b"\n") and time.monotonic() < end:
            r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if not r:
                break
            ch = os.read(self.proc.stdout.fileno(), 1)
            if not ch:
                break
            line += ch
        for word in line.decode(errors="replace").split():
            if word.startswith(("http://", "https://")):
                self.url = word.rstrip("/")
        # keep draining stdout so kubesim never blocks on a full pipe
        threading.Thread(target=lambda: self.proc.stdout.read(), daemon=True).start()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def rc_body(name, replicas):
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name, "labels": {"app": "ray", "client": "python"}},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
            "workerGroupSpecs": [{
                "groupName": "small", "replicas": replicas, "minReplicas": 0, "maxReplicas": 5,
                "rayStartParams": {}, "template": {"spec": {"containers": [
                    {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}],
        },
    }


def pod_body(name, labels=None):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {"app": "py"}},
            "spec": {"containers": [{"name": "a", "image": "nginx:1.25"},
                                    {"name": "b", "image": "busybox:1.36"}]}}


def test_crds(api_client):
    ext = client.ApiextensionsV1Api(api_client)
    crd_dir = os.path.join(SHARED, "kuberay", "crds")
    with open(os.path.join(crd_dir, "ray.io_rayclusters.yaml")) as f:
        body = yaml.safe_load(f)
    created = ext.create_custom_resource_definition(body)
    check("ApiextensionsV1Api creates the ~930 KB RayCluster CRD (typed response)",
          created.metadata.name == "rayclusters.ray.io" and created.spec.names.kind == "RayCluster",
          created.metadata)

    def established():
        r = ext.read_custom_resource_definition("rayclusters.ray.io", _preload_content=False)
        conds = json.loads(r.data).get("status", {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conds)
    check("the CRD becomes Established", wait_until(60, established))
    expect_api_error("creating the CRD again is 409 AlreadyExists", 409,
                     ext.create_custom_resource_definition, body)


def test_custom_objects(api_client):
    co = client.CustomObjectsApi(api_client)
    g, v, ns, plural = "ray.io", "v1", "default", "rayclusters"
    obj = co.create_namespaced_custom_object(g, v, ns, plural, rc_body("py-rc", 1))
    check("create_namespaced_custom_object returns the stored RayCluster",
          obj["metadata"]["name"] == "py-rc" and obj["metadata"].get("uid") and
          obj["metadata"].get("generation") == 1, obj.get("metadata"))
    got = co.get_namespaced_custom_object(g, v, ns, plural, "py-rc")
    check("get_namespaced_custom_object reads it back",
          got["spec"]["workerGroupSpecs"][0]["replicas"] == 1 and got["metadata"]["uid"] == obj["metadata"]["uid"])
    co.create_namespaced_custom_object(g, v, ns, plural, dict(rc_body("py-other", 1),
                                       metadata={"name": "py-other", "labels": {"app": "other"}}))
    lst = co.list_namespaced_custom_object(g, v, ns, plural, label_selector="app=ray")
    names = sorted(i["metadata"]["name"] for i in lst["items"])
    check("list_namespaced_custom_object with label_selector=app=ray lists only py-rc",
          names == ["py-rc"], names)
    check("the list carries metadata.resourceVersion", bool(lst["metadata"].get("resourceVersion")))
    patched = co.patch_namespaced_custom_object(g, v, ns, plural, "py-rc",
                                                {"spec": {"workerGroupSpecs": [dict(
                                                    rc_body("x", 3)["spec"]["workerGroupSpecs"][0])]},
                                                 "metadata": {"labels": {"patched": "yes"}}})
    check("patch_namespaced_custom_object (merge patch) changes replicas and adds a label",
          patched["spec"]["workerGroupSpecs"][0]["replicas"] == 3 and
          patched["metadata"]["labels"] == {"app": "ray", "client": "python", "patched": "yes"},
          patched.get("metadata"))
    check("the spec change bumped generation to 2", patched["metadata"]["generation"] == 2,
          patched["metadata"].get("generation"))
    stale = dict(got)   # carries the first resourceVersion
    expect_api_error("replace with a stale resourceVersion is 409 Conflict", 409,
                     co.replace_namespaced_custom_object, g, v, ns, plural, "py-rc", stale)
    try:
        co.patch_namespaced_custom_object(g, v, ns, plural, "py-rc",
                                          [{"op": "replace", "path": "/spec/rayVersion", "value": "x"}])
        not_ok("a JSON-patch list sent as merge patch is rejected", "accepted")
    except ApiException as e:
        check("a JSON-patch list sent as merge patch is rejected with a 4xx", 400 <= e.status < 500,
              "%s %s" % (e.status, e.body))
    bad = rc_body("py-bad", 1)
    bad["spec"]["workerGroupSpecs"][0]["replicas"] = "two"
    expect_api_error("an invalid RayCluster (string replicas) is 422", 422,
                     co.create_namespaced_custom_object, g, v, ns, plural, bad)
    status = co.delete_namespaced_custom_object(g, v, ns, plural, "py-rc")
    check("delete_namespaced_custom_object answers", isinstance(status, dict), status)
    check("the deleted RayCluster is gone (404)", wait_until(30, lambda: _is_404(
        lambda: co.get_namespaced_custom_object(g, v, ns, plural, "py-rc"))))
    co.delete_namespaced_custom_object(g, v, ns, plural, "py-other")


def _is_404(fn):
    try:
        fn()
    except ApiException as e:
        return e.status == 404
    return False


def test_pods(api_client):
    core = client.CoreV1Api(api_client)
    p = core.create_namespaced_pod("default", pod_body("py-pod"))
    check("CoreV1Api.create_namespaced_pod returns a V1Pod",
          isinstance(p, client.V1Pod) and p.metadata.name == "py-pod" and p.metadata.uid, p.metadata)
    pods = core.list_namespaced_pod("default", label_selector="app=py")
    check("list_namespaced_pod deserialises into V1PodList and finds the pod",
          [i.metadata.name for i in pods.items] == ["py-pod"], [i.metadata.name for i in pods.items])
    p2 = core.patch_namespaced_pod("py-pod", "default",
                                   {"spec": {"containers": [{"name": "b", "image": "busybox:1.37"}]}})
    check("patch_namespaced_pod (strategic merge) merges containers by name",
          [(c.name, c.image) for c in p2.spec.containers] == [("a", "nginx:1.25"), ("b", "busybox:1.37")],
          [(c.name, c.image) for c in p2.spec.containers])
    core.delete_namespaced_pod("py-pod", "default", grace_period_seconds=0)
    check("delete_namespaced_pod removes it", wait_until(30, lambda: _is_404(
        lambda: core.read_namespaced_pod("py-pod", "default"))))


def test_watch(api_client):
    core = client.CoreV1Api(api_client)
    ns = "pywatch"
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    core.create_namespaced_pod(ns, pod_body("w0"))
    events = queue.Queue()
    w = watch.Watch()

    def run():
        try:
            for ev in w.stream(core.list_namespaced_pod, namespace=ns, timeout_seconds=60):
                events.put((ev["type"], ev["object"].metadata.name, ev["object"]))
        except Exception as e:  # reported by the main thread
            events.put(("EXCEPTION", repr(e), None))
        events.put(("END", None, None))
    t = threading.Thread(target=run, daemon=True)
    t.start()

    def next_event(timeout=10):
        try:
            return events.get(timeout=timeout)
        except queue.Empty:
            return ("TIMEOUT", None, None)
    e = next_event()
    check("watch.Watch().stream starts with a synthetic ADDED for the existing pod",
          e[:2] == ("ADDED", "w0"), e[:2])
    core.create_namespaced_pod(ns, pod_body("w1"))
    e = next_event()
    while e[0] == "MODIFIED" and e[1] == "w0":     # w0 being bound / started (real tier)
        e = next_event()
    check("the watch sees ADDED w1 (a V1Pod)", e[:2] == ("ADDED", "w1") and isinstance(e[2], client.V1Pod), e[:2])
    core.patch_namespaced_pod("w1", ns, {"metadata": {"labels": {"step": "2"}}})
    # On a server with a scheduler and kubelets (the real tier) w1 is also bound and its status
    # written, each a MODIFIED of its own; the label's MODIFIED comes among them, in order.
    seen = []
    for _ in range(10):
        e = next_event()
        seen.append(e[:2])
        if e[0] != "MODIFIED" or (e[1] == "w1" and (e[2].metadata.labels or {}).get("step") == "2"):
            break
    check("then MODIFIED w1 with the new label",
          e[:2] == ("MODIFIED", "w1") and (e[2].metadata.labels or {}).get("step") == "2", seen)
    core.delete_namespaced_pod("w1", ns, grace_period_seconds=0)
    got = []
    while True:     # a graceful delete may first be MODIFIED (deletionTimestamp), then DELETED
        e = next_event()
        got.append(e[:2])
        if e[0] != "MODIFIED":
            break
    check("then DELETED w1", e[:2] == ("DELETED", "w1"), got)
    check("w.resource_version tracks the last event's resourceVersion",
          e[2] is not None and w.resource_version == e[2].metadata.resource_version,
          (w.resource_version, e[2] and e[2].metadata.resource_version))
    w.stop()
    core.create_namespaced_pod(ns, pod_body("w-wake"))   # the stream checks stop at its next event
    t.join(timeout=10)
    check("the stream ends after w.stop()", not t.is_alive())

    if lib_realserver.wanted():
        # kube-apiserver keeps every resourceVersion until etcd compacts (5 min by default):
        # no short test reaches an expired one, so this flow runs on kubesim only.
        print("skip - a watch from an expired resourceVersion raises 410 (kubesim only: "
              "needs an etcd compaction)", flush=True)
        return
    # An expired resourceVersion: push more than the watch window of pod events past it.
    old_rv = core.list_namespaced_pod(ns).metadata.resource_version
    for i in range(WATCH_WINDOW + 10):
        core.patch_namespaced_pod("w0", ns, {"metadata": {"labels": {"n": str(i)}}})
    try:
        for ev in watch.Watch().stream(core.list_namespaced_pod, namespace=ns,
                                       resource_version=old_rv, timeout_seconds=5):
            not_ok("a watch from an expired resourceVersion raises 410",
                   "got event %s" % ev["type"])
            break
        else:
            not_ok("a watch from an expired resourceVersion raises 410", "stream ended without error")
    except ApiException as e:
        check("a watch from an expired resourceVersion raises ApiException 410",
              e.status == 410 and "too old resource version" in str(e.reason), "%s %s" % (e.status, e.reason))


def test_dynamic(api_client):
    dyn = dynamic.DynamicClient(api_client)
    rc_api = dyn.resources.get(api_version="ray.io/v1", kind="RayCluster")
    check("DynamicClient discovery finds ray.io/v1 RayCluster (namespaced, plural rayclusters)",
          rc_api.name == "rayclusters" and rc_api.namespaced, rc_api)
    created = rc_api.create(body=rc_body("dyn-rc", 1), namespace="default")
    check("DynamicClient creates a RayCluster", created.metadata.name == "dyn-rc")
    patched = rc_api.patch(body={"metadata": {"labels": {"dyn": "1"}}}, name="dyn-rc",
                           namespace="default", content_type="application/merge-patch+json")
    check("DynamicClient merge-patches it", patched.metadata.labels["dyn"] == "1")
    try:
        rc_api.patch(body={"metadata": {"labels": {"dyn": "2"}}}, name="dyn-rc", namespace="default")
        not_ok("DynamicClient's default strategic merge patch on a CR is 415 like a real server", "accepted")
    except ApiException as e:
        check("DynamicClient's default strategic merge patch on a CR is 415 like a real server",
              e.status == 415, "%s %s" % (e.status, e.body))
    pods_api = dyn.resources.get(api_version="v1", kind="Pod")
    check("DynamicClient discovery finds v1 Pod", pods_api.name == "pods")
    rc_api.delete(name="dyn-rc", namespace="default")


def main():
    work = tempfile.mkdtemp(prefix="rayop-py.")
    sim = None
    try:
        if not os.access(KUBESIM, os.X_OK):
            not_ok("kubesim binary at %s (make all)" % KUBESIM)
            return 1
        if lib_realserver.wanted():
            try:
                sim = lib_realserver.RealK8s(work)
            except RuntimeError as e:
                not_ok("the real control plane starts (tools/realk8s.sh)", e)
                return 1
            print("# real control plane at %s, up in %d ms" % (sim.url, sim.start_ms), flush=True)
        else:
            sim = Kubesim(work)
        if not check("the server starts and prints its URL", sim.url is not None):
            return 1
        if not check("the server wrote a kubeconfig", wait_until(5, lambda: os.path.exists(sim.kubeconfig))):
            return 1
        api_client = config.new_client_from_config(config_file=sim.kubeconfig)
        check("the kubeconfig points at the server's URL", api_client.configuration.host.rstrip("/") == sim.url,
              (api_client.configuration.host, sim.url))
        for name, fn in (("CRDs", test_crds), ("custom objects", test_custom_objects),
                         ("pods", test_pods), ("watch", test_watch), ("dynamic client", test_dynamic)):
            try:
                fn(api_client)
            except Exception as e:  # one failing flow must not hide the others
                not_ok("%s flow raised %s" % (name, type(e).__name__), e)
    finally:
        if sim:
            sim.stop()
            if failures and not lib_realserver.wanted():
                with open(os.path.join(work, "kubesim.log"), "rb") as f:
                    tail = f.read()[-3000:].decode(errors="replace")
                print("# kubesim log tail:\n" + "\n".join("#   " + l for l in tail.splitlines()[-20:]))
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

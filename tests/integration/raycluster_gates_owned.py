#!/usr/bin/python3
# raycluster_gates_owned.py - `rayop controller raycluster --feature-gates`
# and the objects it owns but never updates, against kubesim:
#  * spec.historyServerOptions with RayClusterHistoryServer on: head and worker Pods get
#    the collector sidecar; bad collector options are refused with KubeRay's message;
#  * a gated field with its gate off (spec.tlsOptions, RayClusterMTLS not given) is
#    refused with KubeRay's gate message (the NetworkPolicies of the gate on are
#    raycluster_netpol.py's);
#  * headGroupSpec.enableIngress: the dashboard Ingress (kubesim serves
#    networking.k8s.io/v1) is created, owned by the cluster, to the head Service;
#  * the autoscaler ServiceAccount/Role/RoleBinding, the token-auth Secret and
#    the Ingress, each deleted by hand, are recreated by the running controller
#    (they are in the watcher's cache, so the delete enqueues their RayCluster).
# deadline: 150
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"


def cluster(name, extra_spec=None, version="2.46.0"):
    spec = {
        "rayVersion": version,
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:" + version,
             "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}},
        "workerGroupSpecs": [],
    }
    spec.update(extra_spec or {})
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": spec}


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "100", "--pod-ready-ms", "150",
                     "--pod-stop-ms", "100"], name="rc-gates")
    env.start_watcher()
    env.start_controller(extra=["--feature-gates",
                                "RayClusterNetworkPolicy=true,RayClusterHistoryServer=true"])

    def reason(name):
        return (env.get(env.rc_path(NS, name)) or {}).get("status", {}).get("reason", "")

    # RayClusterHistoryServer on: built, the collector sidecar on every Pod
    hs = cluster("hs", {"historyServerOptions": {"collectorOptions": {
        "image": "quay.io/kuberay/collector:nightly",
        "env": [{"name": "STORAGE_BACKEND", "value": "S3"}, {"name": "S3_REGION", "value": "r"}]}}})
    hs["spec"]["workerGroupSpecs"] = [{"groupName": "w", "replicas": 1, "minReplicas": 1,
                                       "maxReplicas": 1, "rayStartParams": {},
                                       "template": {"spec": {"containers": [{
                                           "name": "ray-worker", "image": "rayproject/ray:2.46.0",
                                           "resources": {"requests": {"cpu": "1"}}}]}}}]
    env.req("POST", env.rc_path(NS), hs)

    def collectors():
        return sorted(next((c.get("env") and [e.get("value") for e in c["env"]
                            if e.get("name") == "RAY_ROLE"][0]) for c in p["spec"]["containers"]
                           if c["name"] == "ray-history-collector")
                      for p in env.pods(NS, "hs")
                      if any(c["name"] == "ray-history-collector" for c in p["spec"]["containers"]))
    check("historyServerOptions with RayClusterHistoryServer=true: head and worker Pods carry "
          "the collector sidecar", wait_until(20, lambda: collectors() == ["Head", "Worker"]),
          "%s (reason %r)" % (collectors(), reason("hs")))
    # a collector without its storage settings: KubeRay's message
    env.req("POST", env.rc_path(NS), cluster("hsbad", {"historyServerOptions": {"collectorOptions": {
        "image": "c", "env": [{"name": "STORAGE_BACKEND", "value": "GCS"}]}}}))
    check("a collector without GCS_BUCKET refused with KubeRay's message",
          wait_until(15, lambda: "GCS_BUCKET environment variable must be set when STORAGE_BACKEND "
                     "is GCS" in (env.get(env.rc_path(NS, "hsbad")) or {}).get("status", {})
                     .get("message", "") or "GCS_BUCKET" in reason("hsbad")),
          reason("hsbad"))
    # gate off: KubeRay's gate message
    env.req("POST", env.rc_path(NS), cluster("tls", {"tlsOptions": {"enabled": True}}))
    check("tlsOptions with RayClusterMTLS off refused with the gate message",
          wait_until(15, lambda: "requires the RayClusterMTLS feature gate to be enabled"
                     in reason("tls")), reason("tls"))

    # owned objects recreated after a delete by hand
    own = cluster("own", {"enableInTreeAutoscaling": True, "authOptions": {"mode": "token"}},
                  version="2.52.0")
    own["spec"]["headGroupSpec"]["enableIngress"] = True
    env.req("POST", env.rc_path(NS), own)
    paths = {
        "ServiceAccount": "/api/v1/namespaces/%s/serviceaccounts/own" % NS,
        "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles/own" % NS,
        "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/own" % NS,
        "auth Secret": "/api/v1/namespaces/%s/secrets/own" % NS,
        "Ingress": "/apis/networking.k8s.io/v1/namespaces/%s/ingresses/own-head-ingress" % NS,
    }
    check("ServiceAccount, Role, RoleBinding, auth Secret, Ingress created",
          wait_until(20, lambda: all(env.get(p) for p in paths.values())),
          {k: bool(env.get(p)) for k, p in paths.items()})
    ing = env.get(paths["Ingress"]) or {}
    refs = ing.get("metadata", {}).get("ownerReferences") or [{}]
    backend = (((ing.get("spec", {}).get("rules") or [{}])[0].get("http", {}).get("paths") or [{}])[0]
               .get("backend", {}).get("service", {}))
    check("the Ingress is owned by the RayCluster and routes to the head Service's dashboard",
          refs[0].get("kind") == "RayCluster" and refs[0].get("controller") is True and
          backend.get("port", {}).get("number") == 8265 and backend.get("name", "").startswith("own-head"),
          ing.get("spec"))
    treq = urllib.request.Request(env.url + paths["Ingress"], headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    with urllib.request.urlopen(treq, timeout=10) as resp:
        table = json.loads(resp.read())
    cols = [c["name"] for c in table.get("columnDefinitions", [])]
    check("kubesim prints Ingress as a Table (kubectl get ingress columns)",
          cols == ["Name", "Class", "Hosts", "Address", "Ports", "Age"] and
          table["rows"][0]["cells"][:5] == ["own-head-ingress", "<none>", "*", "", "80"],
          (cols, table.get("rows")))
    check("CreatedIngress Event", wait_until(5, lambda: env.events(NS, "CreatedIngress") != []))
    # drift: KubeRay v1.7 puts a hand-edited Ingress back (labels, annotations, spec)
    want = env.get(paths["Ingress"]) or {}
    env.patch(paths["Ingress"], {"metadata": {"labels": {"edited": "by-hand"},
                                              "annotations": {"edited": "by-hand"}},
                                 "spec": {"rules": [{"host": "drifted.example.com", "http": {"paths": [{
                                     "path": "/x", "pathType": "Prefix", "backend": {"service": {
                                         "name": "elsewhere", "port": {"number": 1}}}}]}}]}})

    def restored():
        o = env.get(paths["Ingress"]) or {}
        md = o.get("metadata", {})
        return ("edited" not in (md.get("labels") or {}) and "edited" not in (md.get("annotations") or {})
                and o.get("spec") == want.get("spec"))
    check("a drifted Ingress is put back (labels, annotations, spec) with an UpdatedIngress Event",
          wait_until(15, restored) and wait_until(5, lambda: env.events(NS, "UpdatedIngress") != []),
          env.get(paths["Ingress"]))
    # a foreign Ingress holding the name is left alone, with KubeRay's Warning
    foreign = cluster("foreign", {}, version="2.52.0")
    foreign["spec"]["headGroupSpec"]["enableIngress"] = True
    env.req("POST", "/apis/networking.k8s.io/v1/namespaces/%s/ingresses" % NS, {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "foreign-head-ingress"},
        "spec": {"defaultBackend": {"service": {"name": "mine", "port": {"number": 80}}}}})
    env.req("POST", env.rc_path(NS), foreign)
    warned = wait_until(15, lambda: [e for e in env.events(NS, "FailedToCreateIngress")
                                     if "foreign-head-ingress already exists and is not owned" in
                                     (e.get("note") or e.get("message") or "")])
    fi = env.get("/apis/networking.k8s.io/v1/namespaces/%s/ingresses/foreign-head-ingress" % NS) or {}
    check("an Ingress of that name not owned by the cluster is left alone (Warning FailedToCreateIngress)",
          warned and fi.get("spec", {}).get("defaultBackend", {}).get("service", {}).get("name") == "mine",
          fi)
    for what, p in paths.items():
        old = env.get(p) or {}
        uid = old.get("metadata", {}).get("uid")
        code, _ = env.req("DELETE", p)

        def recreated():
            o = env.get(p)
            return o is not None and o["metadata"].get("uid") != uid
        check("%s deleted by hand (HTTP %d) is recreated" % (what, code),
              code == 200 and wait_until(15, recreated))
    sec = env.get(paths["auth Secret"]) or {}
    check("the recreated auth Secret has an auth_token",
          bool(sec.get("data", {}).get("auth_token")))
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

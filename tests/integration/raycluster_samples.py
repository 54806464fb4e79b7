#!/usr/bin/python3
# raycluster_samples.py - every RayCluster sample of KubeRay v1.7
# ($RAYOP_SHARED/kuberay/samples) through `rayop controller raycluster` against
# kubesim --nodes 8 (GPUs on every node): each sample in its own namespace (the
# samples reuse names), then each cluster must end as KubeRay would leave it:
#  - invalid for KubeRay (e.g. mTLS without cert-manager): a Warning Event with
#    KubeRay's reason and no Pods;
#  - otherwise exactly 1 head + the desired workers per group (no more, ever:
#    Pod creates counted in kubesim's request log), the head Service, the
#    autoscaler ServiceAccount/Role/RoleBinding when autoscaling is on, the auth
#    Secret for token auth without a secretName, the GCS FT
#    finalizer when Redis GCS FT is on; state "ready" with HeadPodReady and
#    RayClusterProvisioned True when every Pod could be scheduled, and no "ready"
#    while some Pod is Unschedulable (TPU node selectors, other schedulers);
#  - kuberay_cluster_info / kuberay_cluster_condition_provisioned on /metrics.
# deadline: 150
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import yaml  # noqa: E402

import rclib  # noqa: E402
from rclib import check, ok, wait_until  # noqa: E402

SAMPLES = os.path.join(rclib.SHARED, "kuberay", "samples")


def load_samples():
    out = []
    for f in sorted(os.listdir(SAMPLES)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(SAMPLES, f)) as fh:
            docs = [d for d in yaml.safe_load_all(fh) if d]
        rcs = [d for d in docs if d.get("kind") == "RayCluster"]
        if rcs:
            out.append((f, rcs[0], docs))
    return out


def main():
    env = rclib.Env(["--nodes", "8", "--node-gpu", "8", "--pod-start-ms", "100",
                     "--pod-ready-ms", "200", "--pod-stop-ms", "100"], name="rc-samples")
    samples = load_samples()
    check("found the RayCluster samples (%d)" % len(samples), len(samples) >= 40)
    env.start_watcher()
    env.start_controller(extra=["--workers", "4", "--enable-metrics"])

    clusters = []   # (file, namespace, name, spec object)
    for i, (f, rc, docs) in enumerate(samples):
        ns = "s%d" % i
        env.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": ns}})
        # the objects the cluster refers to (Secrets, ConfigMaps) go first
        for d in docs:
            if d.get("kind") in ("Secret", "ConfigMap"):
                d.setdefault("metadata", {})["namespace"] = ns
                env.req("POST", "/api/v1/namespaces/%s/%ss" % (ns, d["kind"].lower()), d)
        rc["metadata"]["namespace"] = ns
        code, body = env.req("POST", env.rc_path(ns), rc)
        if code != 201:
            check("%s: the sample is accepted by the API server" % f, False, body)
            continue
        clusters.append((f, ns, rc["metadata"]["name"], rc))
    ok("created %d RayClusters, one namespace each" % len(clusters))

    def settled(entry):
        f, ns, name, rc = entry
        if env.events(ns, "InvalidRayClusterSpec") or env.events(ns, "InvalidRayClusterMetadata"):
            return True
        want = 1 + sum(rclib.desired_workers(rc).values())
        pods = env.pods(ns, name)
        if len(pods) != want:
            return False
        obj = env.get(env.rc_path(ns, name)) or {}
        st = obj.get("status", {})
        if st.get("state") == "ready":
            return True
        # not ready: acceptable only once a Pod is Unschedulable (KubeRay waits too)
        return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for p in pods for c in p.get("status", {}).get("conditions", []))

    pending = list(clusters)

    def all_settled():
        pending[:] = [e for e in pending if not settled(e)]
        return not pending
    wait_until(60, all_settled, every=0.5)
    check("every sample settled (ready, unschedulable with all Pods, or invalid)",
          not pending, [e[0] for e in pending])

    ready = unsched = invalid = auth_secrets = 0
    bad = []
    for f, ns, name, rc in clusters:
        obj = env.get(env.rc_path(ns, name)) or {}
        st = obj.get("status", {})
        pods = env.pods(ns, name)
        inv = env.events(ns, "InvalidRayClusterSpec") + env.events(ns, "InvalidRayClusterMetadata")
        if inv:
            invalid += 1
            e = inv[0]
            if pods or e.get("type") != "Warning" or e.get("reportingController") != "raycluster-controller" \
                    or not st.get("reason"):
                bad.append((f, "invalid cluster has Pods or a wrong Event/status", e, st))
            continue
        per = rclib.desired_workers(rc)
        heads = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
        groups = {}
        for p in pods:
            lb = p["metadata"]["labels"]
            if lb.get("ray.io/node-type") == "worker":
                groups[lb.get("ray.io/group")] = groups.get(lb.get("ray.io/group"), 0) + 1
        if len(heads) != 1 or {g: n for g, n in per.items() if n} != groups:
            bad.append((f, "Pods per group", {"want": per, "have": groups, "heads": len(heads)}))
            continue
        svc = env.get("/api/v1/namespaces/%s/services/%s" % (ns, st.get("head", {}).get("serviceName", "-")))
        if not svc:
            bad.append((f, "head Service in status and in the API", st.get("head")))
            continue
        conds = {c["type"]: c["status"] for c in st.get("conditions", [])}
        if st.get("state") == "ready":
            ready += 1
            if conds.get("HeadPodReady") != "True" or conds.get("RayClusterProvisioned") != "True" \
                    or st.get("desiredWorkerReplicas", 0) != sum(per.values()) \
                    or st.get("readyWorkerReplicas", 0) != sum(per.values()):
                bad.append((f, "ready status", st))
        else:
            unsched += 1
            msgs = sorted({c.get("message", "")[:90] for p in pods
                           for c in p.get("status", {}).get("conditions", [])
                           if c.get("reason") == "Unschedulable"})
            print("# %s: not ready: %s" % (f, "; ".join(msgs)), flush=True)
        if rc["spec"].get("enableInTreeAutoscaling"):
            sa = (rc["spec"]["headGroupSpec"]["template"]["spec"].get("serviceAccountName") or name)
            for kind, path in (("Role", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles/%s" % (ns, name)),
                               ("RoleBinding", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/%s" % (ns, name)),
                               ("ServiceAccount", "/api/v1/namespaces/%s/serviceaccounts/%s" % (ns, sa))):
                if not env.get(path):
                    bad.append((f, "autoscaler " + kind + " missing", path))
        auth = rc["spec"].get("authOptions") or {}
        if auth.get("mode") == "token" and not auth.get("secretName") and not auth.get("enableK8sTokenAuth"):
            sec = env.get("/api/v1/namespaces/%s/secrets/%s" % (ns, name)) or {}
            if not sec.get("data", {}).get("auth_token") or \
                    sec["metadata"].get("labels", {}).get("ray.io/cluster") != name:
                bad.append((f, "auth Secret with auth_token", sec.get("metadata")))
            else:
                auth_secrets += 1
        ft = rc["spec"].get("gcsFaultToleranceOptions") or \
            (rc["metadata"].get("annotations") or {}).get("ray.io/ft-enabled") == "true"
        backend = (rc["spec"].get("gcsFaultToleranceOptions") or {}).get("backend", "redis")
        fins = obj["metadata"].get("finalizers") or []
        if ft and backend != "rocksdb" and "ray.io/gcs-ft-redis-cleanup-finalizer" not in fins:
            bad.append((f, "GCS FT finalizer", fins))
    check("every sample's Pods, Services, RBAC, auth Secret (%d), finalizer and status are what "
          "KubeRay makes (%d ready, %d waiting on unschedulable Pods, %d invalid)"
          % (auth_secrets, ready, unsched, invalid),
          not bad, "\n".join("%s: %s: %s" % (b[0], b[1], str(b[2:])[:300]) for b in bad))
    # 32 on kubesim: the rest need GKE node labels (TPU, GCS FUSE, label selectors),
    # a 6-CPU-per-GPU node (verl), or a feature gate that is off by default
    check("at least 30 samples reach ready (%d)" % ready, ready >= 30)

    want = sum(1 + sum(rclib.desired_workers(rc).values()) for f, ns, name, rc in clusters
               if not env.events(ns, "InvalidRayClusterSpec"))
    creates = len(env.pod_creates())
    check("no duplicate Pod ever created (%d creates for %d desired Pods)" % (creates, want),
          creates == want)

    port = env.port_of("ctl", "serving metrics")
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
    info = [l for l in text.splitlines() if l.startswith("kuberay_cluster_info{")]
    prov = [l for l in text.splitlines()
            if l.startswith("kuberay_cluster_condition_provisioned{") and 'condition="true"' in l]
    dur = [l for l in text.splitlines() if l.startswith("kuberay_cluster_provisioned_duration_seconds{")]
    check("/metrics: kuberay_cluster_info for every RayCluster (%d)" % len(info), len(info) == len(clusters))
    check("/metrics: kuberay_cluster_condition_provisioned true for the ready ones (%d)" % len(prov),
          len(prov) >= ready)
    check("/metrics: kuberay_cluster_provisioned_duration_seconds per provisioned cluster (%d)" % len(dur),
          len(dur) >= ready)
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

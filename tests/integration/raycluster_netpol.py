#!/usr/bin/python3
# raycluster_netpol.py - spec.networkPolicy with `--feature-gates RayClusterNetworkPolicy=true`
# against kubesim (which stores and validates NetworkPolicies but, having no pod network,
# does not enforce them):
#  * KubeRay's sample: NAME-head and NAME-workers-GROUP, owned, with the intra-cluster rules
#    and the user's DNS rule, and CreatedNetworkPolicy Events; `kubectl get netpol` columns;
#  * a policy edited by hand is put back (UpdatedNetworkPolicy); one deleted is recreated;
#  * mode DenyAllIngress drops the egress side; a removed worker group loses its policy;
#    spec.networkPolicy removed: every policy goes (DeletedNetworkPolicy);
#  * a policy of that name the cluster does not own: NetworkPolicyNameCollision, untouched;
#  * deleting the RayCluster garbage-collects its policies.
# deadline: 150
import os
import sys
import urllib.request
import json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
NP = "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % NS


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "100", "--pod-ready-ms", "150",
                     "--pod-stop-ms", "100"], name="rc-netpol")
    env.start_watcher()
    env.start_controller(extra=["--feature-gates", "RayClusterNetworkPolicy=true"])
    rc = rclib.load_sample("ray-cluster.network-policy-deny-all.yaml")
    name = rc["metadata"]["name"]
    head, wg = NP + "/%s-head" % name, NP + "/%s-workers-workergroup" % name
    env.req("POST", env.rc_path(NS), rc)
    check("head and worker-group NetworkPolicies created",
          wait_until(20, lambda: env.get(head) and env.get(wg)), env.items(NP))
    h = env.get(head) or {}
    refs = h.get("metadata", {}).get("ownerReferences") or [{}]
    spec = h.get("spec", {})
    check("owned by the RayCluster, labelled as KubeRay labels them",
          refs[0].get("kind") == "RayCluster" and refs[0].get("controller") is True and
          h["metadata"].get("labels", {}).get("ray.io/group") == "headgroup" and
          h["metadata"]["labels"].get("app.kubernetes.io/created-by") == "kuberay-operator", h)
    check("head policy: DenyAll, intra-cluster in and out, then the sample's DNS egress",
          spec.get("policyTypes") == ["Ingress", "Egress"] and
          spec.get("podSelector") == {"matchLabels": {"ray.io/cluster": name,
                                                      "ray.io/node-type": "head"}} and
          spec.get("ingress") == [{"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": name}}}]}]
          and len(spec.get("egress", [])) == 2 and
          spec["egress"][1]["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
          spec)
    check("worker policy selects the group's Pods",
          (env.get(wg) or {}).get("spec", {}).get("podSelector", {}).get("matchLabels", {})
          .get("ray.io/group") == "workergroup")
    check("CreatedNetworkPolicy Events", wait_until(5, lambda: len(env.events(NS, "CreatedNetworkPolicy")) >= 2))
    treq = urllib.request.Request(env.url + NP, headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    with urllib.request.urlopen(treq, timeout=10) as resp:
        table = json.loads(resp.read())
    cols = [c["name"] for c in table.get("columnDefinitions", [])]
    cells = sorted(r["cells"][:2] for r in table.get("rows", []))
    check("kubesim prints NetworkPolicies as kubectl does (Name, Pod-Selector, Age)",
          cols == ["Name", "Pod-Selector", "Age"] and
          cells[0] == ["%s-head" % name, "ray.io/cluster=%s,ray.io/node-type=head" % name], (cols, cells))
    check("kubesim refuses a bad protocol (422)",
          env.req("POST", NP, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                               "metadata": {"name": "bad"},
                               "spec": {"podSelector": {}, "ingress": [{"ports": [{"protocol": "ICMP"}]}]}})[0]
          == 422)

    # drift and delete by hand
    env.patch(head, {"spec": {"ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]}})
    check("a hand-edited policy is put back (UpdatedNetworkPolicy)",
          wait_until(15, lambda: (env.get(head) or {}).get("spec", {}).get("ingress") == spec["ingress"])
          and wait_until(5, lambda: env.events(NS, "UpdatedNetworkPolicy") != []), env.get(head))
    uid = (env.get(wg) or {}).get("metadata", {}).get("uid")
    code, _ = env.req("DELETE", wg)
    check("a policy deleted by hand is recreated (HTTP %d)" % code,
          code == 200 and wait_until(15, lambda: (env.get(wg) or {}).get("metadata", {}).get("uid")
                                     not in (None, uid)))

    # mode change, group removed, networkPolicy removed
    def deny_all_ingress_and_extra(cur):
        cur["spec"]["networkPolicy"] = {"mode": "DenyAllIngress"}
        cur["spec"]["workerGroupSpecs"].append(dict(cur["spec"]["workerGroupSpecs"][0], groupName="extra"))
    check("mode change and a new group accepted",
          env.update(env.rc_path(NS, name), deny_all_ingress_and_extra) == 200)
    extra = NP + "/%s-workers-extra" % name
    check("DenyAllIngress: no egress side; a new group gets its policy",
          wait_until(15, lambda: (env.get(head) or {}).get("spec", {}).get("policyTypes") == ["Ingress"]
                     and "egress" not in env.get(head)["spec"] and env.get(extra)), env.get(head))
    check("group removal accepted", env.update(env.rc_path(NS, name), lambda cur: cur["spec"].update(
        workerGroupSpecs=cur["spec"]["workerGroupSpecs"][:1])) == 200)
    check("a removed worker group loses its policy (DeletedNetworkPolicy)",
          wait_until(15, lambda: env.get(extra) is None and env.events(NS, "DeletedNetworkPolicy") != []))
    check("networkPolicy removal accepted",
          env.update(env.rc_path(NS, name), lambda cur: cur["spec"].pop("networkPolicy")) == 200)
    check("spec.networkPolicy removed: every policy deleted",
          wait_until(15, lambda: env.get(head) is None and env.get(wg) is None), env.items(NP))

    # someone else's policy holding the name
    env.req("POST", NP, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                         "metadata": {"name": "other-head"}, "spec": {"podSelector": {}}})
    other = rclib.load_sample("ray-cluster.network-policy-deny-all.yaml")
    other["metadata"]["name"] = "other"
    env.req("POST", env.rc_path(NS), other)
    check("a policy of that name not owned by the cluster: NetworkPolicyNameCollision, untouched",
          wait_until(15, lambda: any("other-head already exists and is not owned" in (e.get("note") or "")
                                     for e in env.events(NS, "NetworkPolicyNameCollision")))
          and not (env.get(NP + "/other-head") or {}).get("metadata", {}).get("ownerReferences"))
    check("its Pods are made all the same (the policy controller stands apart)",
          wait_until(15, lambda: len(env.pods(NS, "other")) >= 1))
    gc = rclib.load_sample("ray-cluster.network-policy-deny-all.yaml")
    gc["metadata"]["name"] = "gc"
    env.req("POST", env.rc_path(NS), gc)
    wait_until(20, lambda: env.get(NP + "/gc-head") and env.get(NP + "/gc-workers-workergroup"))
    env.req("DELETE", env.rc_path(NS, "gc"))
    check("deleting the RayCluster garbage-collects its policies",
          wait_until(20, lambda: env.get(NP + "/gc-head") is None and
                     env.get(NP + "/gc-workers-workergroup") is None), env.items(NP))
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

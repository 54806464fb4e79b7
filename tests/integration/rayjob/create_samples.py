#!/usr/bin/env python3
"""create_samples.py URL NS=FILE... - creates each KubeRay sample FILE in its own namespace NS
(made here) by POSTing its objects to kubesim at URL: one process instead of one kubectl run
per file (kubectl costs about a second each). Kinds outside the table (Volcano's Queue) are
skipped, as kubectl would fail on them. Prints "NS KIND NAME CODE" per object; exits 1 if a
served object was not created. Token: $KUBESIM_TOKEN (optional)."""
import json
import os
import sys
import urllib.error
import urllib.request

import yaml

PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "RayCluster": "/apis/ray.io/v1/namespaces/{ns}/rayclusters",
    "RayJob": "/apis/ray.io/v1/namespaces/{ns}/rayjobs",
}


def post(url, path, obj):
    req = urllib.request.Request(url + path, data=json.dumps(obj).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    tok = os.environ.get("KUBESIM_TOKEN")
    if tok:
        req.add_header("Authorization", "Bearer " + tok)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    url, failed = sys.argv[1], 0
    for arg in sys.argv[2:]:
        ns, path = arg.split("=", 1)
        post(url, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": ns}})
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for d in docs:
            kind = d.get("kind", "")
            name = d.get("metadata", {}).get("name") or d.get("metadata", {}).get("generateName")
            if kind not in PATHS:
                print(ns, kind, name, "skipped")
                continue
            d.setdefault("metadata", {})["namespace"] = ns
            code = post(url, PATHS[kind].format(ns=ns), d)
            print(ns, kind, name, code)
            failed |= code != 201
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

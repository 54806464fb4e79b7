#!/usr/bin/env python3
"""invariant.py NAME VIOLATIONS_FILE POLLS_FILE - the zero-downtime invariant of a
RayService upgrade, polled every 100 ms until killed: whenever the Service NAME-serve-svc
exists, the cluster its selector names (ray.io/cluster) must answer, through its head
Service, with every Serve application RUNNING. Each poll appends a line to POLLS_FILE;
each violation a line to VIOLATIONS_FILE. Uses KUBESIM_URL / KUBESIM_TOKEN from the
environment (tests/integration/lib.sh)."""
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

name, violations, polls = sys.argv[1:4]
base = os.environ["KUBESIM_URL"]
headers = {"Authorization": "Bearer " + os.environ["KUBESIM_TOKEN"]} if os.environ.get("KUBESIM_TOKEN") else {}
ctx = ssl.create_default_context(cafile=os.environ["KUBESIM_CA"]) if os.environ.get("KUBESIM_CA") else None


def get(path):
    req = urllib.request.Request(base + path, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5, context=ctx) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


while True:
    t0 = time.monotonic()
    code, body = get(f"/api/v1/namespaces/default/services/{name}-serve-svc")
    verdict = "no-service"
    if code == 200:
        cluster = json.loads(body).get("spec", {}).get("selector", {}).get("ray.io/cluster", "")
        c2, b2 = get(f"/api/v1/namespaces/default/services/{cluster}-head-svc:dashboard/proxy/api/serve/applications/")
        apps = {}
        if c2 == 200:
            apps = json.loads(b2).get("applications") or {}
        bad = {k: v.get("status") for k, v in apps.items() if v.get("status") != "RUNNING"}
        if c2 != 200 or not apps or bad:
            verdict = f"VIOLATION cluster={cluster} http={c2} apps={bad or 'none'}"
            with open(violations, "a") as f:
                f.write(f"{time.time():.3f} {verdict}\n")
        else:
            verdict = f"ok {cluster}"
    with open(polls, "a") as f:
        f.write(f"{time.time():.3f} {verdict}\n")
    time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))

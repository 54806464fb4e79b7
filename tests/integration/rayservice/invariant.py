#!/usr/bin/env python3
"""invariant.py NAME VIOLATIONS_FILE POLLS_FILE [route] - the zero-downtime invariant of a
RayService upgrade, polled every 100 ms until killed: whenever the Service NAME-serve-svc
exists, the cluster its selector names (ray.io/cluster) must answer, through its head
Service, with every Serve application RUNNING. With "route" (incremental upgrades) the
same holds for every backend CLUSTER-serve-svc of the HTTPRoute NAME-httproute whose
weight is above 0. Each poll appends a line to POLLS_FILE
(time, milliseconds since the previous poll started, verdict); each violation a line to
VIOLATIONS_FILE. One keep-alive connection to KUBESIM_URL (KUBESIM_TOKEN, KUBESIM_CA from
the environment, tests/integration/lib.sh)."""
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

name, violations, polls = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else "service"
url = urllib.parse.urlsplit(os.environ["KUBESIM_URL"])
headers = {"Authorization": "Bearer " + os.environ["KUBESIM_TOKEN"]} if os.environ.get("KUBESIM_TOKEN") else {}
conn = None


def get(path):
    global conn
    for attempt in (0, 1):
        try:
            if conn is None:
                if url.scheme == "https":
                    ctx = ssl.create_default_context(cafile=os.environ.get("KUBESIM_CA") or None)
                    conn = http.client.HTTPSConnection(url.hostname, url.port, timeout=5, context=ctx)
                else:
                    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            conn = None
            if attempt:
                raise
    return 0, b""


last = None
while True:
    t0 = time.monotonic()
    gap = 0 if last is None else int((t0 - last) * 1000)
    last = t0
    verdict = "no-service"
    try:
        clusters = []
        if mode == "route":
            code, body = get(f"/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes/{name}-httproute")
            if code == 200:
                for rule in json.loads(body).get("spec", {}).get("rules", [])[:1]:
                    for b in rule.get("backendRefs", []):
                        if b.get("weight", 1) > 0 and b.get("name", "").endswith("-serve-svc"):
                            clusters.append(b["name"][:-len("-serve-svc")])
        else:
            code, body = get(f"/api/v1/namespaces/default/services/{name}-serve-svc")
            if code == 200:
                clusters.append(json.loads(body).get("spec", {}).get("selector", {}).get("ray.io/cluster", ""))
        verdicts = []
        for cluster in clusters:
            c2, b2 = get(f"/api/v1/namespaces/default/services/{cluster}-head-svc:dashboard/proxy/api/serve/applications/")
            apps = (json.loads(b2).get("applications") or {}) if c2 == 200 else {}
            bad = {k: v.get("status") for k, v in apps.items() if v.get("status") != "RUNNING"}
            if c2 != 200 or not apps or bad:
                v = f"VIOLATION cluster={cluster} http={c2} apps={bad or 'none'}"
                with open(violations, "a") as f:
                    f.write(f"{time.time():.3f} {v}\n")
                verdicts.append(v)
            else:
                verdicts.append(f"ok {cluster}")
        if verdicts:
            verdict = "; ".join(verdicts)
    except (OSError, http.client.HTTPException, ValueError) as e:
        verdict = f"error {e}"
    with open(polls, "a") as f:
        f.write(f"{time.time():.3f} {gap} {verdict}\n")
    time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))

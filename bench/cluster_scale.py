#!/usr/bin/python3
# cluster_scale.py - how fast kubesim's simulated cluster moves Pods: starts
# `kubesim --nodes N`, creates P Pods over keep-alive connections (T threads),
# follows a pods watch and reports the time until every Pod is Ready (and until all
# are bound / Running), plus kubesim's CPU time and peak RSS. Used for the figures
# in docs/kubesim-cluster.md.
#   bench/cluster_scale.py [--nodes 100] [--pods 10000] [--threads 4] [--kubesim PATH]
import argparse
import http.client
import json
import os
import subprocess
import threading
import time
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_peak_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--deadline", type=float, default=300)
    ap.add_argument("--service", action="store_true",
                    help="also create a Service selecting every Pod (Endpoints/EndpointSlice load)")
    ap.add_argument("--kubesim", default=os.path.join(ROOT, "bin", "kubesim"))
    a = ap.parse_args()

    proc = subprocess.Popen([a.kubesim, "--listen", "127.0.0.1:0", "--nodes", str(a.nodes),
                             "--watch-window", "200000"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    url = urllib.parse.urlparse(proc.stdout.readline().decode().strip())
    host, port = url.hostname, url.port
    state = {"bound": 0, "running": 0, "ready": 0, "events": 0}
    seen = {}
    done = threading.Event()
    t_bound = t_running = t_ready = None

    def watcher():
        nonlocal t_bound, t_running, t_ready
        c = http.client.HTTPConnection(host, port, timeout=a.deadline)
        c.request("GET", "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0")
        r = c.getresponse()
        for line in r:
            ev = json.loads(line)
            o = ev["object"]
            name = o["metadata"]["name"]
            st = seen.setdefault(name, [False, False, False])
            state["events"] += 1
            if not st[0] and o["spec"].get("nodeName"):
                st[0] = True
                state["bound"] += 1
            if not st[1] and o.get("status", {}).get("phase") == "Running":
                st[1] = True
                state["running"] += 1
            if not st[2] and any(x["type"] == "Ready" and x["status"] == "True"
                                 for x in o.get("status", {}).get("conditions", [])):
                st[2] = True
                state["ready"] += 1
            now = time.monotonic()
            if t_bound is None and state["bound"] == a.pods:
                t_bound = now
            if t_running is None and state["running"] == a.pods:
                t_running = now
            if state["ready"] == a.pods:
                t_ready = now
                done.set()
                return

    threading.Thread(target=watcher, daemon=True).start()
    time.sleep(0.5)   # let the watch open before the first create (not a sync point for results)
    if a.service:
        c = http.client.HTTPConnection(host, port, timeout=60)
        c.request("POST", "/api/v1/namespaces/default/services",
                  '{"apiVersion":"v1","kind":"Service","metadata":{"name":"load"},'
                  '"spec":{"selector":{"app":"load"},"ports":[{"port":80}]}}',
                  {"Content-Type": "application/json"})
        c.getresponse().read()
    cpu0 = cpu_seconds(proc.pid)
    t0 = time.monotonic()
    body = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","labels":{"app":"load"}},'
            '"spec":{"containers":[{"name":"main","image":"rayproject/ray:2.9.0",'
            '"resources":{"requests":{"cpu":"100m","memory":"256Mi"}}}]}}')

    def creator(k):
        c = http.client.HTTPConnection(host, port, timeout=60)
        for i in range(k, a.pods, a.threads):
            c.request("POST", "/api/v1/namespaces/default/pods", body % i,
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 201:
                print("create failed", r.status)
    ts = [threading.Thread(target=creator, args=(k,)) for k in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    t_created = time.monotonic()
    ok = done.wait(a.deadline)
    cpu1 = cpu_seconds(proc.pid)
    extra = {}
    if a.service:
        # the controller syncs within 50 ms of the last change; poll with a deadline
        end = time.monotonic() + 30
        while time.monotonic() < end:
            c = http.client.HTTPConnection(host, port, timeout=60)
            c.request("GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices")
            items = json.loads(c.getresponse().read())["items"]
            ready = sum(1 for it in items for e in it.get("endpoints") or [] if e["conditions"]["ready"])
            if ready == a.pods:
                break
            time.sleep(0.2)
        c.request("GET", "/api/v1/namespaces/default/endpoints/load")
        ep = json.loads(c.getresponse().read())
        extra = {"slice_ready_endpoints": ready,
                 "endpoints_addresses": sum(len(x.get("addresses", [])) for x in ep.get("subsets") or []),
                 "endpoints_over_capacity": ep["metadata"].get("annotations", {}).get(
                     "endpoints.kubernetes.io/over-capacity"),
                 "endpoints_synced_s": round(time.monotonic() - t0, 2)}
    print(json.dumps({
        "nodes": a.nodes, "pods": a.pods, "all_ready": ok,
        "create_s": round(t_created - t0, 2),
        "all_bound_s": t_bound and round(t_bound - t0, 2),
        "all_running_s": t_running and round(t_running - t0, 2),
        "all_ready_s": t_ready and round(t_ready - t0, 2),
        "watch_events": state["events"],
        "kubesim_cpu_s": round(cpu1 - cpu0, 2),
        "kubesim_rss_peak_mb": round(rss_peak_mb(proc.pid), 1),
        "ready_count": state["ready"],
        **extra,
    }))
    proc.terminate()
    proc.wait(10)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# kubesim_scale.py - the simulated cluster alone, with no operator (bench/kubesim-scale.sh).
# Starts `kubesim --nodes N`, creates P Pods directly over keep-alive connections (T threads),
# follows them with one pods watch (re-listing only if the watch expires, as an informer
# does; it never polls lists) and reports:
#   - Pod transitions per second (bound, Running, Ready: 3 per Pod), over the whole run and
#     after the last create answered;
#   - create -> Ready per Pod beyond the configured delays (--pod-start-ms + --pod-ready-ms;
#     kubesim jitters each by x[0.8, 1.2), so a lag can be slightly negative): p50 / p99;
#   - kubesim's RSS per stored object (growth since start over objects added: Pods, their
#     Events, Endpoints...) beside the mean size of a Pod's JSON; CPU seconds, peak RSS.
# With --base-kubesim it runs that binary the same way first and prints ratios new/base.
# The last line is one JSON object.
#   bench/kubesim_scale.py [--pods 40000] [--nodes P/100+1] [--threads 4] [--service]
#                          [--kubesim PATH] [--base-kubesim PATH]
import argparse
import http.client
import json
import os
import subprocess
import threading
import time
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def proc_stat(pid):
    """(cpu seconds, VmRSS bytes, VmHWM bytes) of a process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = hwm = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return cpu, rss, hwm


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def pct(vals, p):
    if not vals:
        return None
    vals = sorted(vals)
    return vals[min(len(vals) - 1, int(len(vals) * p / 100.0))]


class Sim:
    def __init__(self, path, args):
        self.proc = subprocess.Popen([path, "--listen", "127.0.0.1:0"] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        url = urllib.parse.urlparse(self.proc.stdout.readline().decode().strip())
        self.host, self.port = url.hostname, url.port

    def conn(self, timeout=120):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def get(self, path):
        c = self.conn()
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, json.loads(body) if body else None

    def objects(self):
        """Objects stored (all kinds), from kubesim's admin status (not a list)."""
        return self.get("/kubesim/status")[1]["objects"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(path, a):
    nodes = a.nodes or a.pods // 100 + 1
    sim = Sim(path, ["--nodes", str(nodes), "--pod-start-ms", str(a.start_ms),
                     "--pod-ready-ms", str(a.ready_ms)])
    pid = sim.proc.pid
    n = a.pods
    sent = [0.0] * n          # monotonic time each create was sent
    seen = [0] * n            # bits: 1 bound, 2 Running, 4 Ready
    ready_at = [0.0] * n
    size = [0] * n            # bytes of the Pod's latest JSON
    st = {"transitions": 0, "after_created": 0, "events": 0, "relists": 0}
    t_created = [None]
    t_all = {}
    done = threading.Event()
    lock = threading.Lock()

    def note(o, raw_len, now):
        name = o["metadata"]["name"]
        if not name.startswith("p-"):
            return
        i = int(name[2:])
        size[i] = raw_len
        bits = seen[i]
        new = 0
        if o["spec"].get("nodeName"):
            new |= 1
        s = o.get("status") or {}
        if s.get("phase") == "Running":
            new |= 2
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in s.get("conditions") or []):
            new |= 7   # Ready implies the two before it
        add = new & ~bits
        if not add:
            return
        seen[i] = bits | add
        k = bin(add).count("1")
        with lock:
            st["transitions"] += k
            if t_created[0] is not None:
                st["after_created"] += k
        for bit, key in ((1, "bound"), (2, "running"), (4, "ready")):
            if add & bit:
                st[key] = st.get(key, 0) + 1
                if st[key] == n:
                    t_all[key] = now
        if add & 4:
            ready_at[i] = now
            if st.get("ready") == n:
                done.set()

    def watcher():
        rv = "0"
        while not done.is_set():
            c = sim.conn(timeout=a.deadline)
            c.request("GET", "/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true"
                      "&resourceVersion=" + rv)
            r = c.getresponse()
            expired = False
            for line in r:
                ev = json.loads(line)
                o = ev["object"]
                if ev["type"] == "ERROR":
                    expired = True
                    break
                rv = o["metadata"].get("resourceVersion", rv)
                if ev["type"] in ("ADDED", "MODIFIED"):
                    st["events"] += 1
                    note(o, len(line), time.monotonic())
                    if done.is_set():
                        return
            c.close()
            if expired or not done.is_set():
                # the watch fell out of the history window: one list, then watch on
                st["relists"] += 1
                _, l = sim.get("/api/v1/namespaces/default/pods")
                now = time.monotonic()
                for o in l.get("items") or []:
                    note(o, len(json.dumps(o, separators=(",", ":"))), now)
                rv = l["metadata"]["resourceVersion"]

    cpu0, rss0, _ = proc_stat(pid)
    obj0 = sim.objects()
    w = threading.Thread(target=watcher, daemon=True)
    w.start()
    time.sleep(0.5)   # let the watch open before the first create (not a sync point for results)
    if a.service:
        c = sim.conn()
        c.request("POST", "/api/v1/namespaces/default/services",
                  '{"apiVersion":"v1","kind":"Service","metadata":{"name":"load"},'
                  '"spec":{"selector":{"app":"load"},"ports":[{"port":80}]}}',
                  {"Content-Type": "application/json"})
        c.getresponse().read()
    load0 = load()
    t0 = time.monotonic()
    body = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","labels":{"app":"load"}},'
            '"spec":{"containers":[{"name":"main","image":"rayproject/ray:2.9.0",'
            '"resources":{"requests":{"cpu":"100m","memory":"256Mi"}}}]}}')
    failed = [0]

    def creator(k):
        c = sim.conn()
        for i in range(k, n, a.threads):
            sent[i] = time.monotonic()
            c.request("POST", "/api/v1/namespaces/default/pods", body % i,
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 201:
                failed[0] += 1
    ts = [threading.Thread(target=creator, args=(k,)) for k in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with lock:
        t_created[0] = time.monotonic()
    ok = done.wait(a.deadline)
    t_end = time.monotonic()
    cpu1, rss1, hwm = proc_stat(pid)
    load1 = load()
    obj1 = sim.objects()
    delay = (a.start_ms + a.ready_ms) / 1000.0
    lags = [ready_at[i] - sent[i] - delay for i in range(n) if ready_at[i]]
    span = (t_all.get("ready") or t_end) - t0
    after = (t_all.get("ready") or t_end) - t_created[0]
    sim.stop()
    added = max(1, obj1 - obj0)
    return {
        "kubesim": path, "nodes": nodes, "pods": n, "all_ready": ok, "create_failures": failed[0],
        "load_start": load0, "load_end": load1,
        "create_s": round(t_created[0] - t0, 2),
        "all_bound_s": t_all.get("bound") and round(t_all["bound"] - t0, 2),
        "all_running_s": t_all.get("running") and round(t_all["running"] - t0, 2),
        "all_ready_s": t_all.get("ready") and round(t_all["ready"] - t0, 2),
        "transitions_per_s": round(st["transitions"] / span, 1),
        "transitions_per_s_after_creates": round(st["after_created"] / after, 1) if after > 0.05 else None,
        "ready_lag_p50_ms": lags and round(pct(lags, 50) * 1000, 1),
        "ready_lag_p99_ms": lags and round(pct(lags, 99) * 1000, 1),
        "objects_added": obj1 - obj0,
        "rss_per_object_bytes": round((rss1 - rss0) / added),
        "pod_json_bytes": round(sum(size) / max(1, sum(1 for x in size if x))),
        "kubesim_cpu_s": round(cpu1 - cpu0, 2),
        "kubesim_rss_mb": round(rss1 / 1048576, 1),
        "kubesim_rss_peak_mb": round(hwm / 1048576, 1),
        "watch_events": st["events"], "watch_relists": st["relists"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=0, help="default: pods / 100 + 1")
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--deadline", type=float, default=600)
    ap.add_argument("--start-ms", type=int, default=300)
    ap.add_argument("--ready-ms", type=int, default=500)
    ap.add_argument("--service", action="store_true",
                    help="also create a Service selecting every Pod (Endpoints/EndpointSlice load)")
    ap.add_argument("--kubesim", default=os.path.join(ROOT, "bin", "kubesim"))
    ap.add_argument("--base-kubesim", help="a baseline kubesim to run first, for ratios")
    ap.add_argument("--target-rate", type=float, default=2000,
                    help="transitions/s the run should hold (issue 18: 2,000 at 40,000 Pods)")
    a = ap.parse_args()

    runs = []
    for label, path in (("base", a.base_kubesim), ("new", a.kubesim)):
        if not path:
            continue
        r = run(path, a)
        r["run"] = label
        runs.append(r)
        print("%s: %d Pods on %d nodes, load %.1f-%.1f: all Ready %ss after the first create "
              "(creates %ss); %.0f transitions/s (%s after the last create); create->Ready beyond "
              "the %d ms of delays p50 %s ms, p99 %s ms; RSS %d B per object added (%d objects; "
              "Pod JSON %d B); kubesim CPU %.1f s, peak RSS %.0f MB" %
              (label, r["pods"], r["nodes"], r["load_start"], r["load_end"], r["all_ready_s"],
               r["create_s"], r["transitions_per_s"], r["transitions_per_s_after_creates"],
               a.start_ms + a.ready_ms, r["ready_lag_p50_ms"], r["ready_lag_p99_ms"],
               r["rss_per_object_bytes"], r["objects_added"], r["pod_json_bytes"],
               r["kubesim_cpu_s"], r["kubesim_rss_peak_mb"]), flush=True)
    new = runs[-1]
    out = {"runs": runs}
    if len(runs) == 2:
        base = runs[0]

        def ratio(k):
            return round(new[k] / base[k], 2) if new.get(k) and base.get(k) else None
        out["ratio_new_over_base"] = {k: ratio(k) for k in (
            "transitions_per_s", "ready_lag_p99_ms", "rss_per_object_bytes", "kubesim_cpu_s",
            "kubesim_rss_peak_mb")}
        print("ratios new/base: %s" % json.dumps(out["ratio_new_over_base"]), flush=True)
    print("%s: %.0f transitions/s at %d Pods (target %.0f)" %
          ("PASS" if new["all_ready"] and new["transitions_per_s"] >= a.target_rate else "MISS",
           new["transitions_per_s"], new["pods"], a.target_rate), flush=True)
    print(json.dumps(out))
    return 0 if new["all_ready"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/python3
# raycluster_bench.py - see bench/raycluster.sh. Knobs (environment):
#   RC_BENCH_CLUSTERS  RayClusters to create (1000)
#   RC_BENCH_WORKERS   controller --workers (4)
#   RC_BENCH_QPS       controller --qps (500; KubeRay's default is 100), burst = 2 x qps
#   RC_BENCH_SECONDS   length of the converged-reconcile window (10)
# Prints figures; exits 1 only if the clusters do not all become ready in 15 min.
import calendar
import concurrent.futures
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration", "raycluster"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rclib  # noqa: E402
from rclib import wait_until  # noqa: E402
from keepalive import Session  # noqa: E402
from watch_count import wait_count  # noqa: E402

N = int(os.environ.get("RC_BENCH_CLUSTERS", "1000"))
WORKERS = os.environ.get("RC_BENCH_WORKERS", "4")
QPS = int(os.environ.get("RC_BENCH_QPS", "500"))
WINDOW = float(os.environ.get("RC_BENCH_SECONDS", "10"))


def cluster(i):
    c = {"name": "c", "image": "rayproject/ray:2.46.0", "resources": {"requests": {"cpu": "100m",
                                                                                  "memory": "128Mi"}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "bench-%d" % i},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [c]}}},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "minReplicas": 0,
                                           "maxReplicas": 4, "rayStartParams": {},
                                           "template": {"spec": {"containers": [c]}}}]}}


def writes_in(env, t_from, t_to):
    """rayop's non-read requests logged between two wall-clock times (RFC 3339 strings):
    their count, "N verb resource" for each kind of write (what they were), and apart
    from them the count of Lease updates (leader election)."""
    seen = {}
    for r in env.requests():
        if "rayop" in r.get("user_agent", "") and t_from <= r.get("time", "") <= t_to and \
                r.get("verb") not in ("get", "list", "watch"):
            what = "%s %s" % (r.get("verb"), r.get("resource") or r.get("path"))
            seen[what] = seen.get(what, 0) + 1
    renews = seen.pop("update leases", 0)
    return sum(seen.values()), ", ".join("%d %s" % (n, w) for w, n in sorted(seen.items())), renews


def utc_now():
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%06dZ" % (time.time() % 1 * 1e6)


def main():
    nodes = max(4, (3 * N) // 100 + 2)
    env = rclib.Env(["--nodes", str(nodes), "--pod-start-ms", "300", "--pod-ready-ms", "500"],
                    name="rc-bench")
    env.start_watcher()
    ctl = ["--workers", WORKERS, "--qps", str(QPS), "--burst", str(2 * QPS)]
    env.start_controller("ctl", ctl)
    # the first create waits for the operator to be up: a RayCluster created while the
    # watcher still lists comes in its initial list, whose keys take the low lane (as
    # controller-runtime's initial list does), and the first few dozen clusters were
    # then reconciled after all the others, ten seconds after the rest were ready
    if not wait_until(60, lambda: any('"msg":"all types synced"' in l for l in env.log_lines("watcher"))
                      and env.port_of("ctl", "serving metrics")):
        print("the watcher did not sync, or the controller did not start, within 60 s", flush=True)
        return 1
    print("# %d RayClusters x (1 head + 2 workers) on %d kubesim nodes; controller %s" %
          (N, nodes, " ".join(ctl)), flush=True)

    s = Session(env)
    cpu0 = dict(cpu_by_process(env))
    t0, wall0 = time.monotonic(), time.time()
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        codes = list(ex.map(lambda i: s.req("POST", env.rc_path("default"), cluster(i))[0], range(N)))
    t_created = time.monotonic() - t0
    print("created %d RayClusters in %.1f s (%d failed)" % (N, t_created, sum(c != 201 for c in codes)),
          flush=True)

    # one watch, not a list a second: the harness must not load the server it measures
    ok, n_ready = wait_count(env, env.rc_path("default"),
                             lambda o: (o.get("status") or {}).get("state") == "ready", N, 900)
    t_ready = time.monotonic() - t0
    spent = [(k, v - cpu0[k]) for k, v in cpu_by_process(env)]
    pod_items = env.items("/api/v1/namespaces/default/pods")
    pods = len(pod_items)
    print("%s: %d of %d RayClusters ready %.1f s after the first create (%d Pods, %d Pod creates)" %
          ("ok" if ok else "TIMEOUT", n_ready, N, t_ready, pods, len(env.pod_creates())), flush=True)
    print("CPU from the first create to all ready: %s; %.1f s in all, of %.1f s x %d cores" %
          (", ".join("%s %.1f s" % kv for kv in spent), sum(v for _, v in spent), t_ready,
           os.cpu_count() or 1), flush=True)
    print_work(env, "ctl", N)
    print_timeline(pod_items, env.items(env.rc_path("default")), wall0)
    if env.sim:
        # issue 18: kubesim's memory with every cluster, Pod, Service and Event in it
        rss, hwm = rss_mib(env.sim.pid, "VmHWM")
        st = env.req("GET", "/kubesim/status")[1]
        print("kubesim RSS %.1f MiB (peak %.1f MiB) with %d objects stored; CPU %.1f s" %
              (rss, hwm, st.get("objects", 0), cpu_seconds(env.sim.pid)), flush=True)
        # where kubesim's CPU went: the cluster thread's share, and the stored texts parsed again
        print("kubesim cluster thread CPU %.1f s (and %.1f s runnable, waiting for a core); "
              "%d text parses" %
              (cpu_seconds(env.sim.pid, "kubesim-cluster"), run_queue_seconds(env.sim.pid, "kubesim-cluster"),
               st.get("textParses", 0)), flush=True)
        print_memory(env.req("GET", "/kubesim/memory")[1])

    # converged: a fresh controller whose idle requeue is 1 ms, so every key cycles
    env.procs["ctl"].terminate()
    env.procs["ctl"].wait()
    env.start_controller("ctl2", ctl, env={"RAYOP_RAYCLUSTER_IDLE_REQUEUE_MS": "1"})
    # the first controller left its keys due in 300 s: an annotation on each puts
    # every key into the 1 ms cycle of the new one
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: s.req("PATCH", env.rc_path("default", "bench-%d" % i),
                                    {"metadata": {"annotations": {"bench/touch": "1"}}},
                                    "application/merge-patch+json"), range(N)))
    wait_until(60, lambda: (env.metric("ctl2", "controller_runtime_reconcile_total") or 0) >= 2 * N)
    a, ta, wa = env.metric("ctl2", "controller_runtime_reconcile_total"), time.monotonic(), utc_now()
    time.sleep(WINDOW)   # a measuring window, not synchronisation
    b, tb, wb = env.metric("ctl2", "controller_runtime_reconcile_total"), time.monotonic(), utc_now()
    rate = (b - a) / (tb - ta)
    # the leader's Lease renewals (every 2 s with the default 15 s lease; leader election
    # is on by default, as in KubeRay) are not reconcile writes: counted apart
    nw, what, renews = writes_in(env, wa, wb)
    print("converged: %.0f reconciles/s over %.0f s with --workers %s (%d writes by reconciles in "
          "the window%s; %d Lease renewals)" %
          (rate, tb - ta, WORKERS, nw, ": " + what if nw else "", renews), flush=True)
    for name in ("watcher", "ctl2"):
        print("%s RSS %.1f MiB (private %.1f MiB; the cache segment is shared memory)" %
              ((name,) + rss_mib(env.procs[name].pid)), flush=True)
    return 0 if ok else 1


def print_work(env, name, n):
    """What the controller did to bring n clusters up, from its /metrics: a run that falls
    behind may do more per cluster (conflicts, requeues, reads again), which its CPU shows."""
    text = env.metrics_text(name)
    if text is None:
        print("controller work: /metrics unreachable", flush=True)
        return
    sums, reqs, waits = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.rsplit(" ", 1)
        metric, _, labels = key.partition("{")
        try:
            v = float(value)
        except ValueError:
            continue
        sums[metric] = sums.get(metric, 0.0) + v
        lab = dict(kv.split("=", 1) for kv in labels.rstrip("}").split(",") if "=" in kv)
        if metric == "rest_client_requests_total":
            k = "%s %s" % (lab.get("method", "?").strip('"'), lab.get("code", "?").strip('"'))
            reqs[k] = reqs.get(k, 0.0) + v
        elif metric in ("rest_client_rate_limiter_duration_seconds_sum",
                        "rest_client_request_duration_seconds_sum"):
            k = (metric, lab.get("verb", "?").strip('"'))
            waits[k] = waits.get(k, 0.0) + v
    per = lambda m: sums.get(m, 0.0) / n
    print("controller work per cluster: %.2f reconciles, %.2f errors, %.2f queue adds, %.2f retries; "
          "requests per cluster: %s" %
          (per("controller_runtime_reconcile_total"), per("controller_runtime_reconcile_errors_total"),
           per("workqueue_adds_total"), per("workqueue_retries_total"),
           ", ".join("%s %.2f" % (k, v / n) for k, v in sorted(reqs.items()))), flush=True)
    # a worker waiting for a token holds its key: the run's floor when the limiter is the bound
    print("controller seconds in all, by verb: waiting for the client-side rate limiter %s; "
          "in requests %s" %
          tuple(", ".join("%s %.1f" % (verb, v) for (m, verb), v in sorted(waits.items()) if m == fam)
                or "none" for fam in ("rest_client_rate_limiter_duration_seconds_sum",
                                      "rest_client_request_duration_seconds_sum")), flush=True)


def print_timeline(pods, clusters, wall0):
    """Where the run's time went, from the objects' own timestamps (whole seconds): per 10 s
    since the first create, Pods created, scheduled and Ready, and clusters provisioned
    (RayClusterProvisioned turned True). A stage that lags the one before it is the bound."""
    def sec(ts):
        try:
            return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) - int(wall0)
        except (TypeError, ValueError):
            return None

    def cond(o, kind):
        for c in (o.get("status") or {}).get("conditions") or []:
            if c.get("type") == kind and c.get("status") == "True":
                return sec(c.get("lastTransitionTime"))
        return None
    stages = [("Pods created", [sec(p["metadata"].get("creationTimestamp")) for p in pods]),
              ("scheduled", [cond(p, "PodScheduled") for p in pods]),
              ("Ready", [cond(p, "Ready") for p in pods]),
              ("clusters provisioned", [cond(c, "RayClusterProvisioned") for c in clusters])]
    end = max([t for _, ts in stages for t in ts if t is not None] + [0])
    rows = []
    for lo in range(0, end + 1, 10):
        rows.append("%3d-%3d s: %s" % (lo, lo + 10, ", ".join(
            "%s %d" % (name, sum(1 for t in ts if t is not None and lo <= t < lo + 10))
            for name, ts in stages)))
    print("timeline:\n  " + "\n  ".join(rows), flush=True)


def print_memory(m):
    """kubesim's bytes per stored type (text, trees, what only the watch window keeps)
    and malloc's totals, from GET /kubesim/memory."""
    if not isinstance(m, dict) or "total" not in m:
        return
    mib = 1 << 20
    rows = sorted(m["types"].items(), key=lambda kv: -(kv[1]["textBytes"] + kv[1]["treeBytes"]))
    for name, t in rows[:8] + [("total", m["total"])]:
        print("  %-28s %7d objects  text %7.1f MiB  tree %7.1f MiB  window-only %6d (%.1f MiB)" %
              (name, t["objects"], t["textBytes"] / mib, t["treeBytes"] / mib, t["ringOnlyObjects"],
               (t["ringOnlyTextBytes"] + t["ringOnlyTreeBytes"]) / mib), flush=True)
    a = m["malloc"]
    print("  %s: in use %.1f MiB, free in its arenas %.1f MiB, mapped %.1f MiB; RSS %.1f MiB" %
          (a.get("allocator", "malloc"), a["inUseBytes"] / mib, a["freeBytes"] / mib,
           a.get("mappedBytes", 0) / mib, m["rssBytes"] / mib), flush=True)
    if "countedBytes" not in m:
        return
    # every structure as malloc chunks: what is left over is what nothing counts
    t, st, cl = m["total"], m["store"], m.get("cluster", {})
    parts = [("snapshots (text, structs, trees)", t["chunkBytes"]),
             ("window-only snapshots", t["ringOnlyChunkBytes"]),
             ("entries", t["entryBytes"]), ("type tables", t["tableBytes"] + st["typeBytes"]),
             ("uid index", st["uidIndexBytes"]), ("owner index", st["ownerIndexBytes"]),
             ("label index", t["labelIndexBytes"]), ("ring slots", t["ringSlotBytes"]),
             ("Event expiry", st["eventExpiryBytes"]), ("tree scopes", m["scopes"]["bytes"])]
    parts += [("cluster " + k[:-5], v) for k, v in sorted(cl.items()) if k.endswith("Bytes")
              and k != "queuedTextBytes"]
    for name, v in parts:
        print("  %-34s %8.1f MiB" % (name, v / mib), flush=True)
    print("  counted %.1f MiB; in use but not counted %.1f MiB" %
          (m["countedBytes"] / mib, a["uncountedBytes"] / mib), flush=True)


def cpu_by_process(env):
    """[(process, CPU seconds so far)] for kubesim, rayop's two processes and this harness:
    read at the first create and when the last cluster is ready, their differences say where
    the ramp's time went (the issue asks whether kubesim, rayop or the harness)."""
    own = os.times()
    return [("kubesim", cpu_seconds(env.sim.pid) if env.sim else 0.0),
            ("rayop watcher", cpu_seconds(env.procs["watcher"].pid)),
            ("rayop controller", cpu_seconds(env.procs["ctl"].pid)),
            ("harness", own.user + own.system)]


def rss_mib(pid, second="RssAnon"):
    """(VmRSS, second: RssAnon or VmHWM) of a process in MiB, from /proc."""
    vals = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", second):
                vals[k] = int(v.split()[0]) / 1024.0
    return vals.get("VmRSS", 0.0), vals.get(second, 0.0)


def run_queue_seconds(pid, thread):
    """Seconds the threads named thread spent runnable but not running (schedstat's second
    field): CPU the thread wanted and the machine's other threads had."""
    base, total = "/proc/%d/task" % pid, 0
    for t in os.listdir(base):
        try:
            with open(os.path.join(base, t, "comm")) as f:
                if f.read().strip() != thread:
                    continue
            with open(os.path.join(base, t, "schedstat")) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def cpu_seconds(pid, thread=None):
    """User + system CPU seconds of a process, or of its threads named thread, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    paths = ["/proc/%d/stat" % pid]
    if thread:
        base = "/proc/%d/task" % pid
        paths = [os.path.join(base, t) for t in os.listdir(base)]
    total = 0
    for path in paths:
        try:   # a thread may end between the listing and the read
            if thread:
                with open(os.path.join(path, "comm")) as f:
                    if f.read().strip() != thread:
                        continue
                path = os.path.join(path, "stat")
            with open(path) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])   # utime, stime (fields 14, 15)
    return total / float(tick)


if __name__ == "__main__":
    sys.exit(main())

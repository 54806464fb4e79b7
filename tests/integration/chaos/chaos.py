#!/usr/bin/python3
# chaos.py - the chaos soak (`make chaos`, CHAOS_SECONDS, default 600) and the library of its
# smoke (tests/integration/chaos_smoke.py, in make test).
#
# One kubesim (--nodes 50 --state DIR) and one `rayop up`; from a fixed seed, for the run:
#   churn   RayClusters created, scaled up and down (workersToDelete too), suspended, resumed,
#           deleted; RayJobs (K8sJobMode, HTTPMode, SidecarMode; some failing, some with
#           backoffLimit, some deleted mid-run); RayServices (20 at scale 1) with Serve config
#           upgrades (in place) and image upgrades (a new cluster, then the switch), some deleted
#   faults  every 2-5 s a kill -9 of a random rayop process (watcher, a controller, the
#           supervisor); 5 % of API requests answered 429/500/503 or reset; watch streams cut
#           every 10 s; stale-cache windows (watch events held back 500 ms); 410 on resume;
#           kubesim itself killed -9 and restarted from --state every 60 s
# then the faults stop and everything must converge. Invariants:
#   overshoot     no Pod created while its group already had the desired count (replayed in
#                 resourceVersion order from watches of Pods and RayClusters)
#   orphan        no Pod created for a RayCluster already deleted or being deleted
#                 (a create that raced with the change - rayop's last live GET of the cluster
#                 before the create returned a version older than the change, by kubesim's
#                 request log - is reported apart, not counted: no controller sees a change
#                 before it commits, and a create cannot be conditioned on another object)
#   duplicate-job no Ray cluster ever ran more than one Ray job (one submission per attempt)
#   serve-put     no Serve PUT without a config change or lost applications (kubesim counts
#                 PUTs that change nothing on the cluster, polled every 100 ms)
#   serve-switch  the serve Service never selects a cluster whose applications are not all
#                 RUNNING: polled every 200 ms; an application (re)deployed after the switch
#                 may be DEPLOYING (an in-place config upgrade: Serve keeps serving), and the
#                 seconds after a kubesim restart are not judged (the simulated Ray state
#                 does not survive it: the applications are lost until rayop PUTs again)
#   converge      within 60 s of the end: every RayCluster's status current (observedGeneration)
#                 and its Pods as desired, every RayJob finished, every RayService Running
#                 for its generation on one cluster that runs its current config, the serve
#                 Service on it, no key left in a queue
#   exits         no rayop process exited that the soak did not kill (a leader that stepped
#                 down because kubesim was down longer than its lease renew deadline is
#                 excused: reported apart)
#   memory        each process's PSS over the second half of the steady phase grows < 10 %:
#                 after the chaos, --steady-seconds (CHAOS_STEADY_SECONDS, 240 by default; 0
#                 for none) of the same churn and API faults (errors, resets, watch cuts and
#                 delays, 410s) without kills or kubesim restarts, so that every process
#                 lives through it (under kills none lives long enough to be judged); judged
#                 when that half is 100 s or more, reported otherwise
#   leftovers     after the stop no shared-memory segment or socket of the instance is left
#   sanitizer     no ASan/UBSan/LSan report in any process (--rayop/--kubesim take a
#                 sanitizer build; the release build simply has none to print). Each process
#                 writes its reports to a file of its own (log_path: sanitizer/rayop.PID,
#                 sanitizer/kubesim.PID), printed whole in the report with the process's
#                 name: on stderr a report of an orphan (its up killed) went through the log
#                 pipe's EPIPE fallback and could reach the file cut short
# The report: faults by kind, kills by process, requests, convergence time, violations by
# invariant (each with the object's timeline); the last line is "chaos: N violations".
# Kept in the work dir when a run fails: up.log (every up's merged output), op-state/NAME.orphaned.log
# (what each child logged after its up was killed), kubesim.log, requests.log, sim-state/,
# sanitizer/ (the sanitizer reports, one file per process).
# Not a test itself (tests/run.sh runs only files directly in tests/integration/).
import argparse
import datetime
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import yaml

ROOT = os.environ.get("RAYOP_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
SHARED = os.environ.get("RAYOP_SHARED") or os.path.join(ROOT, "..", "shared")
if not os.path.isdir(os.path.join(SHARED, "kuberay")):
    SHARED = "/work/shared"
NS = "default"
RCP = "/apis/ray.io/v1/namespaces/%s/rayclusters" % NS
RJP = "/apis/ray.io/v1/namespaces/%s/rayjobs" % NS
RSP = "/apis/ray.io/v1/namespaces/%s/rayservices" % NS
SVCP = "/api/v1/namespaces/%s/services" % NS
# after a kubesim restart the simulated Ray state is gone: how long the serve-switch
# invariant leaves rayop to notice the lost applications and deploy them again (or, during an
# upgrade, when the active cluster's Serve is not reconciled - as in KubeRay -, to switch)
SERVE_RESTART_GRACE_S = 15
# rayop's lease renew deadline (2/3 of the default 15 s lease): a kubesim down longer makes
# the leaders step down and exit (the exits invariant excuses those, reported apart)
RENEW_DEADLINE_S = 10
KINDS = ("watcher", "raycluster", "rayjob", "rayservice", "raycronjob", "up")
INVARIANTS = ("overshoot", "orphan", "duplicate-job", "serve-put", "serve-switch", "converge",
              "exits", "memory", "leftovers", "sanitizer")
# what an ASan/UBSan/LSan build prints when it finds something (any log of the run)
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "WARNING: AddressSanitizer")
# the lines of one sanitizer report printed in the chaos report (the rest stays in its file)
SANITIZER_REPORT_LINES = 200


def sanitizer_env(path_prefix):
    """os.environ with every sanitizer's reports going to PATH_PREFIX.PID (a file per
    process, written by the runtime itself) instead of stderr."""
    env = dict(os.environ)
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        opts = [o for o in env.get(var, "").split(":") if o and not o.startswith("log_path=")]
        env[var] = ":".join(opts + ["log_path=" + path_prefix])
    return env


def log(msg):
    print("# " + msg, flush=True)


class Api:
    """Plain HTTP to kubesim with retries: the soak's own requests get the injected faults too."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.local = threading.local()
        self.requests = 0

    def _conn(self, fresh=False):
        c = getattr(self.local, "c", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = self.local.c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        return c

    def req(self, method, path, body=None, ctype="application/json", tries=8):
        data = json.dumps(body).encode() if body is not None else None
        last = (0, {})
        for i in range(tries):
            self.requests += 1
            try:
                c = self._conn(fresh=i > 0)
                c.request(method, path, body=data, headers={"Content-Type": ctype,
                                                            "User-Agent": "chaos-soak"})
                r = c.getresponse()
                raw = r.read()
                try:
                    out = json.loads(raw or b"{}")
                except ValueError:
                    out = {}
                last = (r.status, out)
                if r.status in (429, 500, 503):
                    time.sleep(0.05 * (i + 1))
                    continue
                return last
            except (OSError, http.client.HTTPException):
                self.local.c = None
                time.sleep(0.05 * (i + 1))
        return last

    def get(self, path):
        code, body = self.req("GET", path)
        return body if code == 200 else None


class Watch(threading.Thread):
    """One watch of a collection, resumed from the last resourceVersion after a cut and
    relisted after a 410; every event goes to sink(rv, kind, type, obj, relist)."""

    def __init__(self, soak, path, kind):
        super().__init__(daemon=True)
        self.soak, self.path, self.kind = soak, path, kind
        self.rv = None
        self.seen_rv = 0
        self.relists = 0

    def relist(self):
        body = self.soak.api.get(self.path)
        if body is None:
            return False
        last = self.seen_rv
        self.rv = body["metadata"]["resourceVersion"]
        self.seen_rv = int(self.rv)
        # events between the last one seen and the list are lost: the replay does not
        # judge what happened in that window (a gap)
        self.soak.sink(int(self.rv), self.kind, "LIST", body.get("items", []), True, gap_from=last)
        self.relists += 1
        return True

    def run(self):
        while not self.soak.stopping.is_set():
            if self.rv is None and not self.relist():
                time.sleep(0.2)
                continue
            q = urllib.parse.urlencode({"watch": "1", "resourceVersion": self.rv,
                                        "allowWatchBookmarks": "true", "timeoutSeconds": "30"})
            try:
                c = http.client.HTTPConnection(self.soak.api.host, self.soak.api.port, timeout=40)
                c.request("GET", self.path + "?" + q, headers={"User-Agent": "chaos-soak"})
                r = c.getresponse()
                if r.status == 410:
                    self.rv = None
                    continue
                if r.status != 200:
                    time.sleep(0.1)
                    continue
                while not self.soak.stopping.is_set():
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev.get("type") == "ERROR":
                        if obj.get("code") == 410:
                            self.rv = None
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion")
                    if rv:
                        self.rv = rv
                        self.seen_rv = int(rv)
                    if ev.get("type") != "BOOKMARK":
                        self.soak.sink(int(rv), self.kind, ev.get("type"), obj, False)
                c.close()
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.1)


def desired_of(rc):
    """{group: desired Pods} of a RayCluster object, or None when it wants no new Pod at all
    (suspended, being deleted)."""
    spec = rc.get("spec", {})
    if spec.get("suspend") or rc.get("metadata", {}).get("deletionTimestamp"):
        return None
    out = {}
    for g in spec.get("workerGroupSpecs") or []:
        r = g.get("replicas", 0) or 0
        lo, hi = g.get("minReplicas", 0) or 0, g.get("maxReplicas", 2 ** 31 - 1)
        r = max(lo, min(hi, r))
        if g.get("suspend"):
            r = 0
        out[g.get("groupName")] = r * (g.get("numOfHosts", 1) or 1)
    return out


def pod_summary(p):
    m = p.get("metadata", {})
    lab = m.get("labels") or {}
    owners = [o.get("uid") for o in (m.get("ownerReferences") or []) if o.get("kind") == "RayCluster"]
    return {"name": m.get("name"), "uid": m.get("uid"), "owner": owners[0] if owners else None,
            "cluster": lab.get("ray.io/cluster"), "group": lab.get("ray.io/group"),
            "type": lab.get("ray.io/node-type"),
            "gone": bool(m.get("deletionTimestamp")) or
            (p.get("status", {}).get("phase") in ("Failed", "Succeeded"))}


class Soak:
    def __init__(self, seconds, seed, scale=1.0, work=None, rayop=None, kubesim=None,
                 kubesim_restart_s=60, converge_s=60, calm=False, kill_up=True, services=None,
                 steady_s=0):
        self.steady_s = steady_s
        self.target_rs = max(1, int(20 * scale)) if services is None else services
        self.kill_up = kill_up   # False: kill -9 spares the supervisor
        self.calm = calm   # churn only: no kills, no injected faults (memory baselines)
        self.seconds, self.seed, self.scale = seconds, seed, scale
        self.rng = random.Random(seed)
        self.work = work or tempfile.mkdtemp(prefix="rayop-chaos.")
        self.state = os.path.join(self.work, "sim-state")
        self.sd = os.path.join(self.work, "op-state")
        os.makedirs(self.sd, mode=0o700, exist_ok=True)
        self.san_dir = os.path.join(self.work, "sanitizer")
        os.makedirs(self.san_dir, mode=0o700, exist_ok=True)
        self.rayop = os.path.join(self.work, "rayop")
        shutil.copy(rayop or os.path.join(ROOT, "bin", "rayop"), self.rayop)
        self.kubesim_bin = os.path.join(self.work, "kubesim")
        shutil.copy(kubesim or os.path.join(ROOT, "bin", "kubesim"), self.kubesim_bin)
        self.kc = os.path.join(self.work, "kubeconfig")
        self.kubesim_restart_s, self.converge_s = kubesim_restart_s, converge_s
        self.stopping = threading.Event()
        self.churn_stop = threading.Event()
        self.lock = threading.Lock()
        self.events = []          # (rv, seq, kind, typ, obj-or-items, relist)
        self.rc_gaps = []         # (from rv, to rv): RayCluster events lost to a relist
        self.unjudged = 0
        self.seq = 0
        self.kills = {k: 0 for k in KINDS}
        self.kubesim_restarts = 0
        self.faults = {"watch-delay windows": 0, "410 armed": 0}
        self.ops = {}
        self.violations = {}      # invariant -> [text]
        self.mem = {}             # (name, pid) -> [(t, pss_kb)]
        self.sim_mem = []         # kubesim's /kubesim/memory at the judged half's start and end
        self.up = None
        self.up_instances = []    # [{"pid":, "kills": {name: n}}]
        self.sim = None
        self.port = 0
        self.jobs_seen = {}       # (ns, cluster uid or name) -> max jobs
        self.raced = []           # creations that raced with a change (replay)
        self.fired, self.sim_requests = {}, 0
        self.serve_init()

    def serve_init(self):
        """The RayService judges' state (also what chaos_replay.py sets up to test them)."""
        self.sim_restarts_at = []   # time.time() of each kubesim kill and of its return
        self.serve_puts = {}        # (ns, cluster, head uid) -> unchanged PUTs seen
        self.rs_tl = {}             # RayService -> [(time.time(), text)]
        self.rs_sel = {}            # RayService -> [cluster, switched after, last seen] (times)
        self.serve_polls = self.serve_judged = self.serve_unjudged = 0
        self.serve_t_prev = 0.0     # when the last complete serve poll started
        self.serve_bad = set()      # (RayService, cluster) already reported
        self.rs_deleted = set()     # RayServices the churn deleted: their Services go with them

    # ---- processes ----
    FAULTS = ["verb=*,code=429,p=0.0125,retry-after=0", "verb=*,code=500,p=0.0125",
              "verb=*,code=503,p=0.0125", "verb=*,action=reset,p=0.0125"]   # 5 % in all

    def start_kubesim(self, faults=True):
        """kubesim on self.port (0 the first time); faults=False: the rules come later."""
        faults = self.FAULTS if faults else []
        args = [self.kubesim_bin, "--listen", "127.0.0.1:%d" % self.port, "--kubeconfig-out", self.kc,
                "--request-log", os.path.join(self.work, "requests.log"),
                "--state", self.state, "--nodes", "50", "--pod-start-ms", "100",
                # Events expire after 2 min instead of the real server's hour, so that a
                # 10-minute run reaches the plateau its memory invariant judges
                "--event-ttl-seconds", "120",
                # 1,000 events per type kept for watch resumes instead of 5,000: the rings
                # (full object snapshots) fill within the first minute of a kubesim's life
                # instead of over many, so its memory reaches its plateau before the steady
                # phase judges it (a resume older than that gets 410, which rayop must handle)
                "--watch-window", "1000",
                "--pod-ready-ms", "100", "--watch-cut-seconds", "0" if self.calm or not faults else "10",
                "--fault-seed", str(self.seed)]
        for f in [] if self.calm else faults:
            args += ["--fault", f]
        logf = open(os.path.join(self.work, "kubesim.log"), "ab")
        self.sim = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=logf,
                                    env=sanitizer_env(os.path.join(self.san_dir, "kubesim")))
        url = self.sim.stdout.readline().decode().strip()
        if not url.startswith("http"):
            raise RuntimeError("kubesim did not start: %r" % url)
        u = urllib.parse.urlparse(url)
        self.port = u.port
        if not hasattr(self, "api"):
            self.api = Api(u.hostname, u.port)

    def restart_kubesim(self):
        self.sample_mem_of("kubesim", self.sim.pid)
        self.add_counts()
        self.sim.send_signal(signal.SIGKILL)
        self.sim.wait()
        self.sim_restarts_at.append(time.time())   # judged from here, and again once back
        for _ in range(50):
            try:
                self.start_kubesim()
                break
            except RuntimeError:
                time.sleep(0.1)   # the port is still held by the dying process
        # the Ray state is lost from the kill on, and nothing can recover it before kubesim
        # serves again (loading --state takes seconds on a loaded machine)
        self.sim_restarts_at.append(time.time())
        self.kubesim_restarts += 1

    def start_up(self):
        logf = open(os.path.join(self.work, "up.log"), "ab")
        self.up = subprocess.Popen([self.rayop, "up", "--kubeconfig", self.kc, "--state-dir", self.sd,
                                    "--metrics-addr", "0", "--health-probe-bind-address", "0",
                                    "--use-kubernetes-proxy"], stdout=logf, stderr=logf,
                                   env=sanitizer_env(os.path.join(self.san_dir, "rayop")))
        self.up_instances.append({"pid": self.up.pid, "kills": {k: 0 for k in KINDS}, "restarts": {}})

    def up_json(self):
        try:
            with open(os.path.join(self.sd, "up.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def procs(self):
        """{name: pid} of the live rayop processes under the current up."""
        out = {"up": self.up.pid} if self.up and self.up.poll() is None else {}
        uj = self.up_json()
        for p in (uj or {}).get("procs", []):
            if p.get("pid", 0) > 0:
                out[p["name"]] = p["pid"]
        return out

    def record_up_restarts(self):
        uj = self.up_json()
        if uj and self.up_instances:
            self.up_instances[-1]["restarts"] = {p["name"]: p.get("restarts", 0)
                                                 for p in uj.get("procs", [])}

    # ---- events and invariants ----
    def sink(self, rv, kind, typ, obj, relist, gap_from=None):
        with self.lock:
            self.seq += 1
            self.events.append((rv, self.seq, kind, typ, obj, relist))
            if gap_from is not None and kind == "rc":
                self.rc_gaps.append((gap_from, rv))

    def violate(self, inv, text):
        self.violations.setdefault(inv, []).append(text)

    def request_times(self):
        """From kubesim's request log (all its lives): {rv: start} of every write that made an
        object version, and {RayCluster name: [(end, rv or 0)]} of rayop's GETs of it in time
        order (rv: the version the GET returned; 0 for a 404). Wall-clock seconds; a line's
        time is when its answer went out."""
        by_rv, gets = {}, {}
        try:
            with open(os.path.join(self.work, "requests.log")) as f:
                for line in f:
                    try:
                        r = json.loads(line)
                        end = datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                            tzinfo=datetime.timezone.utc).timestamp()
                    except (ValueError, KeyError):
                        continue
                    if r.get("verb") == "get" and r.get("resource") == "rayclusters" and \
                            not r.get("subresource") and "rayop" in r.get("user_agent", "") and \
                            r.get("code") in (200, 404):
                        gets.setdefault(r.get("name"), []).append((end, r.get("rv") or 0))
                    elif r.get("rv"):
                        by_rv[r["rv"]] = end - r.get("duration_ms", 0) / 1000.0
        except OSError:
            pass
        for v in gets.values():
            v.sort()
        return by_rv, gets

    def replay(self):
        """Pod creations checked against the RayCluster they belong to, in rv order. A create
        that raced with the change it contradicts is counted apart (self.raced), not as a
        violation: the controller's last live read of the cluster before the create (kubesim's
        request log) returned a version older than the change, i.e. it checked and the change
        came after its check. No controller sees a change before it commits, and Kubernetes
        has no create conditioned on another object; what it can do is read right before."""
        with self.lock:
            evs = sorted(self.events, key=lambda e: (e[0], e[1]))
            gaps = list(self.rc_gaps)
        self.unjudged = 0
        self.raced = []
        req_start, req_gets = self.request_times()

        def raced(create_rv, cluster, change_rv):
            start = req_start.get(create_rv)
            if start is None or not change_rv:
                return False
            before = [g for g in req_gets.get(cluster, []) if g[0] <= start]
            return bool(before) and 0 < before[-1][1] < change_rv
        rcs = {}        # uid -> {"name", "desired", "prev", "rv", "deleted"}
        pods = {}       # uid -> summary
        timeline = {}   # cluster name -> [text]
        found = []

        def note(name, text):
            timeline.setdefault(name, []).append((rv, text))
        for rv, _, kind, typ, obj, relist in evs:
            if kind == "rc":
                items = obj if typ == "LIST" else [obj]
                if typ == "LIST":
                    live = {o["metadata"]["uid"] for o in items}
                    for uid, st in rcs.items():
                        if uid not in live and not st["deleted"]:
                            st["deleted"] = rv
                for o in items:
                    m = o.get("metadata", {})
                    st = rcs.setdefault(m.get("uid"), {"name": m.get("name"), "deleted": 0})
                    st["prev"] = st.get("desired")
                    st["desired"] = desired_of(o)
                    st["rv"] = rv if typ != "LIST" else 0
                    if typ == "DELETED":
                        st["deleted"] = rv
                    note(m.get("name"), "rv %d %s RayCluster gen %s desired %s" % (
                        rv, typ, m.get("generation"), st["desired"]))
                continue
            items = obj if typ == "LIST" else [obj]
            if typ == "LIST":
                pods = {}
            for o in items:
                s = pod_summary(o)
                if typ == "DELETED":
                    pods.pop(s["uid"], None)
                    note(s["cluster"], "rv %d Pod %s deleted" % (rv, s["name"]))
                    continue
                new = s["uid"] not in pods
                pods[s["uid"]] = s
                if not new or relist:
                    if not relist:
                        note(s["cluster"], "rv %d Pod %s %s" % (rv, s["name"],
                                                                 "terminating" if s["gone"] else "modified"))
                    continue
                note(s["cluster"], "rv %d Pod %s created (%s %s)" % (rv, s["name"], s["type"], s["group"]))
                rc = rcs.get(s["owner"])
                if rc is None or any(a < rv <= b for a, b in gaps):
                    self.unjudged += 1
                    continue   # its RayCluster unseen, or its events lost here: cannot judge
                if rc["deleted"] and rc["deleted"] < rv:
                    v = ("orphan", s["cluster"], rv, "Pod %s created at rv %d for RayCluster %s "
                         "deleted at rv %d" % (s["name"], rv, rc["name"], rc["deleted"]))
                    (self.raced if raced(rv, rc["name"], rc["deleted"]) else found).append(v)
                    continue
                if rc["desired"] is None:
                    v = ("orphan", s["cluster"], rv, "Pod %s created at rv %d for RayCluster %s "
                         "that is suspended or being deleted" % (s["name"], rv, rc["name"]))
                    (self.raced if rc["prev"] is not None and raced(rv, rc["name"], rc["rv"]) else found).append(v)
                    continue
                same = [p for p in pods.values() if p["owner"] == s["owner"] and not p["gone"] and
                        p["type"] == s["type"] and (s["type"] == "head" or p["group"] == s["group"])]
                want = 1 if s["type"] == "head" else rc["desired"].get(s["group"], 0)
                if len(same) > want:
                    v = ("overshoot", s["cluster"], rv, "Pod %s created at rv %d: %d %s Pods of "
                         "group %s, %d desired" % (s["name"], rv, len(same), s["type"], s["group"], want))
                    # raced: sent before the change that lowered the count, and within the count
                    # the spec asked for until then
                    ok_before = s["type"] == "worker" and rc["prev"] and \
                        len(same) <= rc["prev"].get(s["group"], 0)
                    (self.raced if ok_before and raced(rv, rc["name"], rc["rv"]) else found).append(v)
        return found, timeline

    def check_jobs(self):
        """Ray jobs per cluster (duplicate-job) and Serve PUTs that changed nothing (serve-put),
        from kubesim's view of its simulated Ray clusters (reset by a kubesim restart: the
        maxima are kept here)."""
        body = self.api.get("/kubesim/ray/")
        if not body:
            return
        for c in body if isinstance(body, list) else body.get("clusters", []):
            key = (c.get("namespace"), c.get("uid") or c.get("cluster"))
            n = c.get("jobs", 0) or 0
            if isinstance(n, list):
                n = len(n)
            if n > self.jobs_seen.get(key, 0):
                self.jobs_seen[key] = n
            key = (c.get("namespace"), c.get("cluster"), c.get("headPodUID"))
            same = c.get("servePutsUnchanged", 0) or 0
            if same > self.serve_puts.get(key, 0):
                self.serve_puts[key] = same
                rs = self.rs_of_cluster(c.get("cluster", ""))
                self.rs_note(rs, "cluster %s: Serve PUT #%d changed nothing (%d such)" % (
                    c.get("cluster"), c.get("servePuts", 0), same))
                self.violate("serve-put", "RayService %s: Serve PUT #%d to cluster %s changed nothing "
                             "(%d such PUTs)\n%s" % (rs, c.get("servePuts", 0), c.get("cluster"), same,
                                                     self.rs_timeline(rs)))

    # ---- RayServices ----
    def rs_of_cluster(self, cluster):
        """The RayService a cluster belongs to (its name is RAYSERVICE-raycluster-xxxxx)."""
        for name in self.rs_tl:
            if cluster.startswith(name + "-"):
                return name
        return "?"

    def rs_note(self, name, text):
        with self.lock:
            self.rs_tl.setdefault(name, []).append((time.time(), text))

    def rs_timeline(self, name, n=25):
        with self.lock:
            tl = list(self.rs_tl.get(name, []))[-n:]
        return "\n".join("    %s %s" % (datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
            "%H:%M:%S.%f")[:-3], x) for t, x in tl)

    def serve_poll(self):
        """serve-switch: every 200 ms, which cluster each RayService's serve Service selects,
        and the state of that cluster's applications as kubesim's Ray has it. A failed read
        skips the poll; the seconds after a kubesim restart are not judged."""
        while not self.stopping.is_set():
            t0 = time.time()
            svcs = self.api.get(SVCP)
            ray = self.api.get("/kubesim/ray/") if svcs is not None else None
            # the Services again: a selection is judged only if it held across the read of
            # the Ray state (a switch, then the old cluster's deletion, between the two reads
            # would otherwise look like a Service on a cluster that is gone)
            again = self.api.get(SVCP) if ray is not None else None
            if svcs is not None and ray is not None and again is not None:
                self.serve_judge(t0, svcs, ray, again)
            self.stopping.wait(max(0.0, 0.2 - (time.time() - t0)))

    @staticmethod
    def serve_selections(svcs):
        out = {}
        for svc in svcs.get("items", []):
            m = svc.get("metadata", {})
            owners = [o.get("name") for o in m.get("ownerReferences") or [] if o.get("kind") == "RayService"]
            if owners and m.get("name", "").endswith("-serve-svc") and not m.get("deletionTimestamp"):
                out[owners[0]] = (svc.get("spec", {}).get("selector") or {}).get("ray.io/cluster", "")
        return out

    def serve_judge(self, t0, svcs, ray, again=None):
        self.serve_polls += 1
        after = self.serve_selections(again) if again is not None else None
        states = {c.get("cluster"): c for c in ray if c.get("namespace") == NS}
        seen = set()
        for svc in svcs.get("items", []):
            m = svc.get("metadata", {})
            owners = [o.get("name") for o in m.get("ownerReferences") or [] if o.get("kind") == "RayService"]
            if not owners or not m.get("name", "").endswith("-serve-svc") or m.get("deletionTimestamp"):
                continue
            rs = owners[0]
            if rs in self.rs_deleted:
                continue
            x = (svc.get("spec", {}).get("selector") or {}).get("ray.io/cluster", "")
            seen.add(rs)
            sel = self.rs_sel.get(rs)
            if sel is None or sel[0] != x:
                # the switch happened after the previous poll started (t_prev)
                t_prev = self.serve_t_prev if sel is None else sel[2]
                self.rs_sel[rs] = sel = [x, t_prev, t0]
                self.rs_note(rs, "serve Service selects %s" % x)
            sel[2] = t0
            if self.sim_restarts_at and t0 - self.sim_restarts_at[-1] < SERVE_RESTART_GRACE_S:
                self.serve_unjudged += 1
                continue
            if after is not None and after.get(rs) != x:
                continue   # switched while the Ray state was read: the next poll judges
            self.serve_judged += 1
            c = states.get(x)
            apps = (c or {}).get("appStates") or {}
            bad = []
            if not apps:
                bad.append("no Serve application%s" % ("" if c else " (kubesim knows no such Ray cluster)"))
            for a, st in sorted(apps.items()):
                # deployed before the switch and not RUNNING: the Service went to a cluster
                # whose application was not ready
                if st.get("status") != "RUNNING" and st.get("deployedMs", 0) / 1000.0 <= sel[1]:
                    bad.append("application %s %s, deployed %.3f s before the switch" % (
                        a, st.get("status"), sel[1] - st.get("deployedMs", 0) / 1000.0))
            if bad:
                key = (rs, x)
                if key in self.serve_bad:
                    continue   # one violation per switch
                self.serve_bad.add(key)
                self.rs_note(rs, "VIOLATION %s: %s" % (x, "; ".join(bad)))
                self.violate("serve-switch", "RayService %s: the serve Service selects %s (switched "
                             "after %s): %s\n%s" % (
                                 rs, x, datetime.datetime.fromtimestamp(sel[1], datetime.timezone.utc).strftime(
                                     "%H:%M:%S.%f")[:-3], "; ".join(bad), self.rs_timeline(rs)))
        for rs in list(self.rs_sel):
            if rs not in seen:
                del self.rs_sel[rs]
                self.rs_note(rs, "no serve Service")
        self.serve_t_prev = t0

    # ---- memory ----
    def sample_mem_of(self, name, pid):
        try:
            with open("/proc/%d/smaps_rollup" % pid) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        self.mem.setdefault((name, pid), []).append((time.monotonic(), int(line.split()[1])))
                        return
        except OSError:
            pass

    def sample_mem(self):
        if self.sim:
            self.sample_mem_of("kubesim", self.sim.pid)
        for name, pid in self.procs().items():
            self.sample_mem_of(name, pid)

    # ---- churn ----
    def op(self, name):
        self.ops[name] = self.ops.get(name, 0) + 1

    def cluster_obj(self, name, groups):
        wg = []
        for g, r in groups:
            wg.append({"groupName": g, "replicas": r, "minReplicas": 0, "maxReplicas": 5,
                       "rayStartParams": {}, "template": {"spec": {"containers": [
                           {"name": "ray-worker", "image": "rayproject/ray:2.52.0",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}})
        return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
                "spec": {"rayVersion": "2.52.0", "headGroupSpec": {"rayStartParams": {}, "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0",
                                             "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}},
                         "workerGroupSpecs": wg}}

    def job_obj(self, name, mode, fail, backoff):
        env = "env_vars:\n  KUBESIM_JOB_SECONDS: \"%d\"\n" % self.rng.randint(1, 4)
        if fail:
            env += "  KUBESIM_JOB_EXIT: \"1\"\n"
        spec = {"entrypoint": "python -c 'print(1)'", "submissionMode": mode,
                "runtimeEnvYAML": env, "shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 0,
                "rayClusterSpec": self.cluster_obj("x", [("small", 1)])["spec"]}
        if backoff:
            spec["backoffLimit"] = backoff
        return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": spec}

    IMAGES = ("rayproject/ray:2.52.0", "rayproject/ray:2.52.1", "rayproject/ray:2.53.0")

    @staticmethod
    def serve_config(ver):
        return ("applications:\n  - name: app\n    import_path: m.app\n    route_prefix: /app\n"
                "    runtime_env:\n      env_vars:\n        KUBESIM_SERVE_DEPLOY_SECONDS: \"1\"\n"
                "    deployments:\n      - name: D\n        num_replicas: 1\n        user_config: {v: %d}\n" % ver)

    def service_obj(self, name, image, ver):
        spec = self.cluster_obj("x", [("small", 1)])["spec"]
        head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
        head["image"] = image
        head["ports"] = [{"containerPort": 6379, "name": "gcs-server"},
                         {"containerPort": 8265, "name": "dashboard"},
                         {"containerPort": 8000, "name": "serve"}]
        spec["workerGroupSpecs"][0]["minReplicas"] = 1
        return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": name},
                "spec": {"serveConfigV2": self.serve_config(ver), "rayClusterDeletionDelaySeconds": 3,
                         "rayClusterConfig": spec}}

    def rs_churn(self):
        """RayServices: created up to target_rs, Serve config upgrades (in place), image
        upgrades (a new cluster and a switch), a few deleted (and others created)."""
        rng = random.Random(self.seed * 7919 + 2)
        n = 0
        live = {}   # name -> {"ver", "image"}
        while not self.churn_stop.is_set():
            r = rng.random()
            if len(live) < self.target_rs and (r < 0.3 or not live):
                n += 1
                name = "s%d" % n
                image = rng.choice(self.IMAGES)
                code, _ = self.api.req("POST", RSP, self.service_obj(name, image, 1))
                if code in (201, 409):
                    live[name] = {"ver": 1, "image": image}
                    self.rs_note(name, "created (%s, config v1)" % image)
                    self.op("rayservice create")
            elif live and r < 0.65:
                name = rng.choice(sorted(live))
                v = live[name]["ver"] + 1
                code, _ = self.api.req("PATCH", RSP + "/" + name, [
                    {"op": "replace", "path": "/spec/serveConfigV2", "value": self.serve_config(v)}],
                    "application/json-patch+json")
                if code == 200:
                    live[name]["ver"] = v
                    self.rs_note(name, "config upgrade to v%d" % v)
                    self.op("rayservice config upgrade")
            elif live and r < 0.95:
                name = rng.choice(sorted(live))
                image = rng.choice([i for i in self.IMAGES if i != live[name]["image"]])
                code, _ = self.api.req("PATCH", RSP + "/" + name, [
                    {"op": "replace", "path": "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image",
                     "value": image}], "application/json-patch+json")
                if code == 200:
                    live[name]["image"] = image
                    self.rs_note(name, "image upgrade to %s" % image)
                    self.op("rayservice image upgrade")
            elif live:
                name = rng.choice(sorted(live))
                code, _ = self.api.req("DELETE", RSP + "/" + name)
                if code in (200, 202, 404):
                    del live[name]
                    self.rs_deleted.add(name)
                    self.rs_note(name, "deleted")
                    self.op("rayservice delete")
            self.churn_stop.wait(rng.uniform(0.5, 2.5) / max(self.scale, 0.1))

    def churn(self):
        rng = random.Random(self.seed * 7919 + 1)
        n_rc = n_rj = 0
        clusters, jobs = [], []
        target_rc = max(4, int(30 * self.scale))
        target_rj = max(2, int(10 * self.scale))
        while not self.churn_stop.is_set():
            live = [c for c in clusters if c["alive"]]
            r = rng.random()
            if len(live) < target_rc and r < 0.25:
                n_rc += 1
                name = "c%d" % n_rc
                groups = [("g", rng.randint(0, 3))] + ([("h", rng.randint(0, 2))] if rng.random() < 0.3 else [])
                code, _ = self.api.req("POST", RCP, self.cluster_obj(name, groups))
                if code in (201, 409):
                    clusters.append({"name": name, "groups": [g for g, _ in groups], "alive": True,
                                     "suspended": False})
                    self.op("rc create")
            elif live and r < 0.55:
                c = rng.choice(live)
                gi = rng.randrange(len(c["groups"]))
                self.api.req("PATCH", RCP + "/" + c["name"], [
                    {"op": "replace", "path": "/spec/workerGroupSpecs/%d/replicas" % gi,
                     "value": rng.randint(0, 4)}], "application/json-patch+json")
                self.op("rc scale")
            elif live and r < 0.65:
                c = rng.choice(live)
                body = self.api.get("/api/v1/namespaces/%s/pods?labelSelector=%s" % (
                    NS, urllib.parse.quote("ray.io/cluster=%s,ray.io/node-type=worker" % c["name"])))
                ws = [p for p in (body or {}).get("items", []) if p["metadata"]["labels"].get("ray.io/group") == "g"]
                rc = self.api.get(RCP + "/" + c["name"])
                if ws and rc:
                    reps = rc["spec"]["workerGroupSpecs"][0].get("replicas", 0)
                    victim = rng.choice(ws)["metadata"]["name"]
                    self.api.req("PATCH", RCP + "/" + c["name"], [
                        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": max(0, reps - 1)},
                        {"op": "add", "path": "/spec/workerGroupSpecs/0/scaleStrategy",
                         "value": {"workersToDelete": [victim]}}], "application/json-patch+json")
                    self.op("rc workersToDelete")
            elif live and r < 0.75:
                c = rng.choice(live)
                c["suspended"] = not c["suspended"]
                self.api.req("PATCH", RCP + "/" + c["name"], {"spec": {"suspend": c["suspended"]}},
                             "application/merge-patch+json")
                self.op("rc suspend" if c["suspended"] else "rc resume")
            elif live and r < 0.83:
                c = rng.choice(live)
                code, _ = self.api.req("DELETE", RCP + "/" + c["name"])
                if code in (200, 202, 404):
                    c["alive"] = False
                    self.op("rc delete")
            elif r < 0.95 and sum(1 for j in jobs if j["alive"]) < target_rj:
                n_rj += 1
                mode = rng.choice(["K8sJobMode", "HTTPMode", "SidecarMode"])
                fail = rng.random() < 0.2
                backoff = rng.choice([0, 0, 1, 2])
                code, _ = self.api.req("POST", RJP, self.job_obj("j%d" % n_rj, mode, fail, backoff))
                if code in (201, 409):
                    jobs.append({"name": "j%d" % n_rj, "alive": True})
                    self.op("rayjob create (%s)" % mode)
            else:
                alive = [j for j in jobs if j["alive"]]
                if alive:
                    j = rng.choice(alive)
                    st = (self.api.get(RJP + "/" + j["name"]) or {}).get("status", {})
                    if st.get("jobDeploymentStatus") in ("Complete", "Failed") or rng.random() < 0.3:
                        self.api.req("DELETE", RJP + "/" + j["name"])
                        j["alive"] = False
                        self.op("rayjob delete" if st.get("jobDeploymentStatus") in ("Complete", "Failed")
                                else "rayjob delete mid-run")
            self.churn_stop.wait(rng.uniform(0.02, 0.2) / max(self.scale, 0.1))

    # ---- faults ----
    def faults_loop(self, t_end, kills=True):
        """Until t_end: kills and kubesim restarts (unless kills is False), watch delay
        windows and armed 410s (the API error rules and watch cuts are kubesim's own), memory
        samples, the duplicate-job and serve-put checks."""
        rng = self.rng
        next_kill = time.monotonic() + rng.uniform(2, 5)
        next_sim = time.monotonic() + self.kubesim_restart_s
        next_delay = time.monotonic() + rng.uniform(5, 15)
        next_expire = time.monotonic() + rng.uniform(5, 15)
        delay_off = None
        next_note = time.monotonic() + 30
        while time.monotonic() < t_end:
            now = time.monotonic()
            if self.calm:
                next_kill = next_sim = next_delay = next_expire = t_end + 1
            if not kills:
                next_kill = next_sim = t_end + 1
            if now >= next_kill:
                procs = self.procs()
                if not self.kill_up:
                    procs.pop("up", None)
                if procs:
                    name = rng.choice(sorted(procs))
                    if name == "up":
                        self.record_up_restarts()
                        self.up.send_signal(signal.SIGKILL)
                        self.up.wait()
                        self.kills["up"] += 1
                        # its children end with it (SIGTERM on the parent's death): wait for them,
                        # then a new supervisor takes over the state dir
                        deadline = time.monotonic() + 20
                        while time.monotonic() < deadline and any(
                                os.path.exists("/proc/%d" % p) for n, p in procs.items() if n != "up"):
                            time.sleep(0.05)
                        self.start_up()
                    else:
                        try:
                            os.kill(procs[name], signal.SIGKILL)
                            self.kills[name] = self.kills.get(name, 0) + 1
                            self.up_instances[-1]["kills"][name] += 1
                        except ProcessLookupError:
                            pass
                next_kill = now + rng.uniform(2, 5)
            if now >= next_sim:
                self.restart_kubesim()
                next_sim = now + self.kubesim_restart_s
            if now >= next_delay and delay_off is None:
                self.api.req("PUT", "/kubesim/watch", {"delayMs": 500})
                self.faults["watch-delay windows"] += 1
                delay_off = now + rng.uniform(2, 5)
            if delay_off is not None and now >= delay_off:
                self.api.req("PUT", "/kubesim/watch", {"delayMs": 0})
                delay_off = None
                next_delay = now + rng.uniform(5, 15)
            if now >= next_expire:
                self.api.req("PUT", "/kubesim/watch", {"expireNext": 2})
                self.faults["410 armed"] += 2
                next_expire = now + rng.uniform(5, 15)
            self.sample_mem()
            self.check_jobs()
            if not kills and not self.sim_mem and now >= self.mid:
                self.sim_mem.append(self.api.get("/kubesim/memory"))
            if now >= next_note:
                st = self.api.get("/kubesim/status") or {}
                pss = self.mem.get(("kubesim", self.sim.pid), [(0, 0)])[-1][1]
                log("t+%3.0f s: kubesim PSS %.1f MB, %s objects, rv %s" % (
                    now - self.t_chaos0, pss / 1024, st.get("objects"), st.get("rv")))
                next_note = now + 30
            time.sleep(0.1)
        self.api.req("PUT", "/kubesim/watch", {"delayMs": 0, "expireNext": 0, "cutSeconds": 0})

    def add_counts(self):
        """Adds kubesim's fault and request counters to the totals (they restart with it)."""
        st = self.api.get("/kubesim/status") or {}
        for k, v in (st.get("faults") or {}).items():
            self.fired[k] = self.fired.get(k, 0) + v
        self.sim_requests += (st.get("requests") or {}).get("total", 0)

    def fault_counts(self):
        self.add_counts()
        return self.fired

    # ---- convergence ----
    def not_converged(self):
        """What still differs from the desired world ([] when converged)."""
        left = []
        rcs = self.api.get(RCP)
        pods = self.api.get("/api/v1/namespaces/%s/pods" % NS)
        if rcs is None or pods is None:
            return ["API unreachable"]
        by = {}
        for p in pods.get("items", []):
            s = pod_summary(p)
            if not s["gone"] and s["owner"]:
                by.setdefault(s["owner"], []).append(s)
        for rc in rcs.get("items", []):
            m, st = rc["metadata"], rc.get("status", {})
            name = m["name"]
            if m.get("deletionTimestamp"):
                left.append("RayCluster %s still being deleted" % name)
                continue
            if st.get("observedGeneration") != m.get("generation"):
                left.append("RayCluster %s observedGeneration %s of %s" % (
                    name, st.get("observedGeneration"), m.get("generation")))
                continue
            mine = by.get(m["uid"], [])
            want = desired_of(rc)
            if want is None:
                if mine or st.get("state") != "suspended":
                    left.append("RayCluster %s suspended: %d Pods, state %s" % (name, len(mine), st.get("state")))
                continue
            heads = sum(1 for p in mine if p["type"] == "head")
            if heads != 1:
                left.append("RayCluster %s has %d head Pods" % (name, heads))
            for g, n in want.items():
                have = sum(1 for p in mine if p["type"] == "worker" and p["group"] == g)
                if have != n:
                    left.append("RayCluster %s group %s: %d Pods, %d desired" % (name, g, have, n))
            if st.get("state") != "ready":
                left.append("RayCluster %s state %s" % (name, st.get("state")))
        for rj in (self.api.get(RJP) or {}).get("items", []):
            st = rj.get("status", {})
            if st.get("jobDeploymentStatus") not in ("Complete", "Failed"):
                left.append("RayJob %s %s/%s" % (rj["metadata"]["name"], st.get("jobDeploymentStatus"),
                                                 st.get("jobStatus")))
        left += self.services_not_converged(rcs)
        q = self.queue_status()
        if q is None:
            left.append("rayop status unavailable")
        else:
            for k in q:
                busy = k.get("depth", 0) + k.get("inFlight", 0) + k.get("retrying", 0)
                if busy:
                    left.append("queue %s: depth %d, in flight %d, retrying %d" % (
                        k["kind"], k.get("depth", 0), k.get("inFlight", 0), k.get("retrying", 0)))
        return left

    def services_not_converged(self, rcs):
        """Every RayService Running for its generation, no pending cluster, exactly one
        RayCluster of its own, that cluster running the current Serve config (all RUNNING)
        and the serve Service selecting it."""
        rss, svcs, ray = self.api.get(RSP), self.api.get(SVCP), self.api.get("/kubesim/ray/")
        if rss is None or svcs is None or ray is None:
            return ["API unreachable (RayServices)"]
        left = []
        owned = {}
        for rc in rcs.get("items", []):
            for o in rc["metadata"].get("ownerReferences") or []:
                if o.get("kind") == "RayService":
                    owned.setdefault(o.get("name"), []).append(rc["metadata"]["name"])
        sel = {}
        for svc in svcs.get("items", []):
            n = svc["metadata"]["name"]
            if n.endswith("-serve-svc"):
                sel[n[:-len("-serve-svc")]] = (svc.get("spec", {}).get("selector") or {}).get("ray.io/cluster")
        apps = {c.get("cluster"): c.get("appStates") or {} for c in ray if c.get("namespace") == NS}
        live = set()
        for rs in rss.get("items", []):
            m, st = rs["metadata"], rs.get("status", {})
            name = m["name"]
            live.add(name)
            if m.get("deletionTimestamp"):
                left.append("RayService %s still being deleted" % name)
                continue
            active = (st.get("activeServiceStatus") or {}).get("rayClusterName", "")
            pending = (st.get("pendingServiceStatus") or {}).get("rayClusterName", "")
            if st.get("observedGeneration") != m.get("generation") or st.get("serviceStatus") != "Running" \
                    or pending or not active:
                left.append("RayService %s: observedGeneration %s of %s, serviceStatus %s, active %r, "
                            "pending %r" % (name, st.get("observedGeneration"), m.get("generation"),
                                            st.get("serviceStatus"), active, pending))
                continue
            if owned.get(name, []) != [active]:
                left.append("RayService %s: RayClusters %s, active %s" % (name, owned.get(name), active))
            if sel.get(name) != active:
                left.append("RayService %s: serve Service selects %s, active %s" % (name, sel.get(name), active))
            try:
                want = yaml.safe_load(rs["spec"]["serveConfigV2"])["applications"][0]
            except (KeyError, IndexError, TypeError, yaml.YAMLError):
                want = {}
            got = apps.get(active, {}).get("app", {})
            if got.get("status") != "RUNNING" or \
                    (got.get("config") or {}).get("deployments", [{}])[0].get("user_config") != \
                    want.get("deployments", [{}])[0].get("user_config"):
                left.append("RayService %s: cluster %s runs %s %s, wants %s" % (
                    name, active, got.get("status"),
                    (got.get("config") or {}).get("deployments", [{}])[0].get("user_config"),
                    want.get("deployments", [{}])[0].get("user_config")))
        for name, clusters in owned.items():
            if name not in live:
                left.append("RayService %s is gone, its RayClusters %s are not" % (name, clusters))
        return left

    def queue_status(self):
        try:
            out = subprocess.run([self.rayop, "status", "--state-dir", self.sd, "-o", "json"],
                                 capture_output=True, timeout=20).stdout
            return json.loads(out)["queues"]["kinds"]
        except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired):
            return None

    # ---- the run ----
    def setup(self):
        self.start_kubesim(faults=False)   # the set-up itself runs without faults
        for f in sorted(os.listdir(os.path.join(SHARED, "kuberay", "crds"))):
            with open(os.path.join(SHARED, "kuberay", "crds", f)) as fh:
                crd = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: 10x faster
            self.api.req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        end = time.monotonic() + 30
        while self.api.req("GET", RJP)[0] != 200 and time.monotonic() < end:
            time.sleep(0.1)
        if not self.calm:
            self.api.req("PUT", "/kubesim/faults", {"seed": self.seed, "rules": self.FAULTS})
            self.api.req("PUT", "/kubesim/watch", {"cutSeconds": 10})
        self.start_up()
        self.watches = [Watch(self, "/api/v1/namespaces/%s/pods" % NS, "pod"), Watch(self, RCP, "rc")]
        for w in self.watches:
            w.start()
        if self.target_rs:
            threading.Thread(target=self.serve_poll, daemon=True).start()

    def run(self):
        t0 = time.monotonic()
        self.setup()
        self.t_setup = time.monotonic() - t0
        log("seed %d, %d s of chaos, work dir %s" % (self.seed, self.seconds, self.work))
        churn = threading.Thread(target=self.churn, daemon=True)
        churn.start()
        rs_churn = threading.Thread(target=self.rs_churn, daemon=True)
        if self.target_rs:
            rs_churn.start()
        self.t_chaos0 = time.monotonic()
        t_end = time.monotonic() + self.seconds
        self.mid = time.monotonic() + self.seconds / 2
        self.faults_loop(t_end)
        if self.steady_s > 0:
            log("steady phase: %d s of churn and API faults without kills" % self.steady_s)
            self.mid = time.monotonic() + self.steady_s / 2
            self.faults_loop(time.monotonic() + self.steady_s, kills=False)
            if self.sim_mem:
                self.sim_mem.append(self.api.get("/kubesim/memory"))
        self.churn_stop.set()
        churn.join()
        if self.target_rs:
            rs_churn.join()
        fired = self.fault_counts()
        self.api.req("DELETE", "/kubesim/faults")
        self.record_up_restarts()
        # convergence
        t_calm = time.monotonic()
        left = ["not checked"]
        while time.monotonic() < t_calm + self.converge_s:
            self.check_jobs()
            left = self.not_converged()
            if not left:
                break
            time.sleep(0.5)
        conv = time.monotonic() - t_calm
        if left:
            for l in left[:30]:
                self.violate("converge", l)
            # what the queues hold (waiting = requeue-after timers, gated = read-your-writes)
            log("queues at the end: %s" % json.dumps([{k: v for k, v in q.items() if k != "workers"}
                                                     for q in (self.queue_status() or [])]))
        self.record_up_restarts()
        self.stopping.set()
        found, timeline = self.replay()
        for inv, cluster, at, text in found:
            # the object's timeline around the violation: 20 entries before, 10 after
            tl = timeline.get(cluster, [])
            i = next((k for k, (rv, _) in enumerate(tl) if rv >= at), len(tl))
            self.violate(inv, text + "\n" + "\n".join("    " + t for _, t in tl[max(0, i - 20):i + 10]))
        if found:
            with open(os.path.join(self.work, "events.json"), "w") as f:
                json.dump([[rv, kind, typ, obj if typ != "LIST" else len(obj), relist]
                           for rv, _, kind, typ, obj, relist in sorted(self.events, key=lambda e: e[:2])], f)
        for key, n in self.jobs_seen.items():
            if n > 1:
                self.violate("duplicate-job", "Ray cluster %s/%s ran %d Ray jobs" % (key[0], key[1], n))
        self.check_exits()
        self.check_memory()
        t_stop = time.monotonic()
        self.stop_and_check_leftovers()
        self.check_sanitizer()
        log("phases: set-up %.1f s, replay %.1f s, stop %.1f s" % (self.t_setup, t_stop - t_calm - conv,
                                                                 time.monotonic() - t_stop))
        self.report(fired, conv, left, time.monotonic() - t0)
        return sum(len(v) for v in self.violations.values())

    def run_and_clean(self, keep=False):
        """run(); whatever happens no process is left, and the work dir goes unless a
        violation (or keep) wants it kept. Returns the number of violations."""
        n = 1
        try:
            n = self.run()
        finally:
            for p in (self.up, self.sim):
                if p and p.poll() is None:
                    p.kill()
            if n or keep:
                log("logs kept in " + self.work)
            else:
                shutil.rmtree(self.work, ignore_errors=True)
        return n

    def leader_exits_in_outages(self):
        """{process: n} of controllers that stepped down (and exited, as controller-runtime's
        do) because kubesim was down longer than the lease renew deadline (10 s with the
        default 15 s lease): a kubesim restart that loads its state slowly on a loaded machine
        is such an outage. Those exits are the lease's safety working, not a failure."""
        t = self.sim_restarts_at
        long_outages = [(t[i], t[i + 1]) for i in range(0, len(t) - 1, 2)
                        if t[i + 1] - t[i] >= RENEW_DEADLINE_S]
        out = {}
        if not long_outages:
            return out
        logs = [os.path.join(self.work, "up.log")]
        logs += [os.path.join(self.sd, f) for f in sorted(os.listdir(self.sd)) if f.endswith(".orphaned.log")]
        for path in logs:
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        if '"leader election lost"' not in line or "renew deadline exceeded" not in line:
                            continue
                        try:
                            r = json.loads(line)
                            at = datetime.datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                                tzinfo=datetime.timezone.utc).timestamp()
                        except (ValueError, KeyError):
                            continue
                        if any(a <= at <= b + 3 for a, b in long_outages):
                            out[r.get("proc", "?")] = out.get(r.get("proc", "?"), 0) + 1
            except OSError:
                continue
        return out

    def check_exits(self):
        self.leader_exits = self.leader_exits_in_outages()
        spare = dict(self.leader_exits)
        for inst in self.up_instances:
            for name, restarts in inst["restarts"].items():
                killed = inst["kills"].get(name, 0)
                excused = min(max(0, restarts - killed), spare.get(name, 0))
                spare[name] = spare.get(name, 0) - excused
                if restarts > killed + excused:
                    self.violate("exits", "%s restarted %d times under up pid %d, killed %d times" % (
                        name, restarts, inst["pid"], killed))
        if self.sim.poll() is not None:
            self.violate("exits", "kubesim exited (%s)" % self.sim.returncode)

    def check_memory(self):
        self.mem_report = []
        # the second half of the steady phase (every process lives through it), else of the
        # run: there a process judged must have lived through 2 minutes of it (a kubesim
        # restarted every 60 s replays its state and refills its watch windows in each life,
        # which says nothing about growth)
        span = 0.8 * self.steady_s / 2 if self.steady_s > 0 else 120
        judged = self.steady_s / 2 >= 100 if self.steady_s > 0 else self.seconds >= 240
        for (name, pid), samples in sorted(self.mem.items()):
            half = [(t, v) for t, v in samples if t >= self.mid]
            if len(half) < 4 or half[-1][0] - half[0][0] < span:
                continue
            q = max(1, len(half) // 4)
            a = sum(v for _, v in half[:q]) / q
            b = sum(v for _, v in half[-q:]) / q
            g = (b - a) / a if a else 0
            self.mem_report.append("%s pid %d: PSS %.1f -> %.1f MB over %.0f s (%+.1f %%)" % (
                name, pid, a / 1024, b / 1024, half[-1][0] - half[0][0], 100 * g))
            if judged and g >= 0.10:
                self.violate("memory", self.mem_report[-1])
        if judged and self.steady_s > 0 and len(self.mem_report) < 2:
            self.violate("memory", "only %d processes lived through the steady phase's second half"
                         % len(self.mem_report))

    def proc_names(self):
        """{pid: name} of every process an up started (its "started" lines), "up" for the
        supervisors themselves."""
        names = {inst["pid"]: "up" for inst in getattr(self, "up_instances", [])}
        try:
            with open(os.path.join(self.work, "up.log"), errors="replace") as f:
                for line in f:
                    if '"started"' not in line:
                        continue
                    try:
                        r = json.loads(line)
                        if r.get("component") == "up" and r.get("msg") == "started":
                            names[int(r["pid"])] = r["proc"]
                    except (ValueError, KeyError, TypeError):
                        continue
        except OSError:
            pass
        return names

    def sim_memory_report(self):
        """What kubesim's memory held at the start and the end of the judged half (its
        /kubesim/memory): live objects, watch-window rings, malloc's heap in use, the RSS
        and the types that grew most - whether a PSS growth is data (objects, Events, the
        watch windows still filling) or the heap."""
        if len(self.sim_mem) < 2 or not all(self.sim_mem):
            return []
        a, b = self.sim_mem[0], self.sim_mem[-1]
        mb = lambda n: n / 1048576.0   # noqa: E731
        ta, tb = a.get("total", {}), b.get("total", {})
        ma, mb_ = a.get("malloc", {}), b.get("malloc", {})
        live = lambda t: t.get("textBytes", 0) + t.get("treeBytes", 0)   # noqa: E731
        ring = lambda t: t.get("ringOnlyTextBytes", 0) + t.get("ringOnlyTreeBytes", 0)   # noqa: E731
        out = ["objects %d -> %d (%.1f -> %.1f MB), watch-window events %d -> %d (objects only "
               "there %.1f -> %.1f MB), malloc in use %.1f -> %.1f MB, rss %.1f -> %.1f MB" % (
                   ta.get("objects", 0), tb.get("objects", 0), mb(live(ta)), mb(live(tb)),
                   ta.get("ringEvents", 0), tb.get("ringEvents", 0), mb(ring(ta)), mb(ring(tb)),
                   mb(ma.get("inUseBytes", 0)), mb(mb_.get("inUseBytes", 0)),
                   mb(a.get("rssBytes", 0)), mb(b.get("rssBytes", 0)))]
        grew = []
        for name, t in b.get("types", {}).items():
            o = a.get("types", {}).get(name, {})
            d = live(t) + ring(t) - live(o) - ring(o)
            grew.append((d, "%s %+.1f MB (objects %d -> %d, ring events %d -> %d)" % (
                name, mb(d), o.get("objects", 0), t.get("objects", 0), o.get("ringEvents", 0),
                t.get("ringEvents", 0))))
        grew.sort(reverse=True)
        if grew:
            out.append("grew most: " + "; ".join(t for _, t in grew[:5]))
        return out

    def check_sanitizer(self):
        """Sanitizer reports of every process of the run (after the stop, so that leak
        reports at exit are in): the files the runtimes wrote (one per process, printed
        whole up to SANITIZER_REPORT_LINES), then any report that still reached a log."""
        names = self.proc_names()
        try:
            files = sorted(os.listdir(self.san_dir))
        except OSError:
            files = []
        for fn in files:
            exe, _, pid = fn.partition(".")
            try:
                with open(os.path.join(self.san_dir, fn), errors="replace") as f:
                    lines = f.readlines()
            except OSError:
                continue
            if not lines:
                continue
            who = "kubesim" if exe == "kubesim" else names.get(int(pid) if pid.isdigit() else -1, "rayop")
            more = len(lines) - SANITIZER_REPORT_LINES
            self.violate("sanitizer", "%s pid %s (sanitizer/%s, %d lines):\n%s%s" % (
                who, pid, fn, len(lines),
                "".join("    " + l.rstrip("\n")[:300] + "\n" for l in lines[:SANITIZER_REPORT_LINES]),
                "    ... %d more lines in the file\n" % more if more > 0 else ""))
        logs = [os.path.join(self.work, "up.log"), os.path.join(self.work, "kubesim.log")]
        logs += [os.path.join(self.sd, f) for f in sorted(os.listdir(self.sd)) if f.endswith(".orphaned.log")]
        for path in logs:
            try:
                with open(path, errors="replace") as f:
                    lines = f.readlines()
            except OSError:
                continue
            for i, line in enumerate(lines):
                if any(m in line for m in SANITIZER_MARKS):
                    self.violate("sanitizer", "%s line %d: %s\n%s" % (
                        os.path.basename(path), i + 1, line.strip()[:300],
                        "".join("    " + l[:200] for l in lines[i + 1:i + 12])))

    def stop_and_check_leftovers(self):
        seg = subprocess.run([self.rayop, "clean", "--state-dir", self.sd, "--print-segment"],
                             capture_output=True, text=True).stdout.strip()
        if self.up.poll() is None:
            self.up.send_signal(signal.SIGTERM)
            try:
                self.up.wait(30)
            except subprocess.TimeoutExpired:
                self.violate("leftovers", "rayop up did not stop within 30 s of SIGTERM")
                self.up.kill()
        if seg and os.path.exists("/dev/shm" + seg):
            self.violate("leftovers", "shared-memory segment /dev/shm%s left after the stop" % seg)
        socks = [f for f in os.listdir(self.sd) if f.endswith(".sock")]
        if socks:
            self.violate("leftovers", "sockets left in the state dir: %s" % socks)
        self.sim.send_signal(signal.SIGTERM)
        try:
            self.sim.wait(30)
        except subprocess.TimeoutExpired:
            self.sim.kill()

    def report(self, fired, conv, left, total):
        log("---- chaos report (seed %d, %d s of chaos, %d s steady, %.0f s in all) ----" % (
            self.seed, self.seconds, self.steady_s, total))
        log("churn: " + ", ".join("%s %d" % kv for kv in sorted(self.ops.items())))
        log("faults: " + ", ".join("%s %d" % kv for kv in sorted(fired.items())) + ", " +
            ", ".join("%s %d" % kv for kv in sorted(self.faults.items())) +
            ", kubesim restarts %d" % self.kubesim_restarts)
        log("kills: " + ", ".join("%s %d" % kv for kv in sorted(self.kills.items())))
        log("requests: %d answered by kubesim (the soak's own: %d)" % (self.sim_requests, self.api.requests))
        log("watch relists (soak's own watches): %s" % ", ".join("%s %d" % (w.kind, w.relists) for w in self.watches))
        log("convergence: %.1f s after the chaos stopped%s" % (conv, "" if not left else " (NOT converged)"))
        outages = [b - a for a, b in zip(self.sim_restarts_at[::2], self.sim_restarts_at[1::2])]
        log("kubesim restarts: down %s s; leaders that stepped down in outages >= %d s (exits "
            "excused): %s" % (", ".join("%.1f" % d for d in outages), RENEW_DEADLINE_S,
                              getattr(self, "leader_exits", {}) or "none"))
        log("Pod creations not judged (RayCluster watch gaps): %d" % self.unjudged)
        log("Pod creations that raced with the change they contradict (rayop's live read right "
            "before the create predates the change; not violations): %d" % len(self.raced))
        for inv, cluster, at, text in self.raced[:10]:
            log("  raced: %s: %s" % (inv, text))
        log("max Ray jobs on one cluster: %d (%d clusters seen)" % (max(self.jobs_seen.values() or [0]),
                                                                   len(self.jobs_seen)))
        log("serve: %d polls of the serve Services, %d selections judged (%d not: within %d s of a "
            "kubesim restart), %d clusters seen with Serve PUTs that changed nothing" % (
                self.serve_polls, self.serve_judged, self.serve_unjudged, SERVE_RESTART_GRACE_S,
                sum(1 for v in self.serve_puts.values() if v)))
        for m in self.mem_report:
            log("memory: " + m)
        for m in self.sim_memory_report():
            log("memory: kubesim " + m)
        n = 0
        for inv in INVARIANTS:
            vs = self.violations.get(inv, [])
            n += len(vs)
            log("invariant %-13s %d violation(s)" % (inv, len(vs)))
            for v in vs[:20]:
                for line in v.splitlines():
                    print("#   " + line, flush=True)
        print("chaos: %d violations" % n, flush=True)


def main():
    ap = argparse.ArgumentParser(description="rayop chaos soak")
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("CHAOS_SECONDS", "600")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED", "1")))
    ap.add_argument("--scale", type=float, default=float(os.environ.get("CHAOS_SCALE", "1")))
    ap.add_argument("--kubesim-restart-s", type=float,
                    default=float(os.environ.get("CHAOS_KUBESIM_RESTART_S", "60")))
    ap.add_argument("--calm", action="store_true", help="churn only: no kills, no faults")
    ap.add_argument("--steady-seconds", type=int, default=int(os.environ.get("CHAOS_STEADY_SECONDS", "240")),
                    help="after the chaos: churn and API faults without kills, for the memory invariant")
    ap.add_argument("--rayop", help="the rayop binary (default bin/rayop; e.g. an ASan/UBSan build)")
    ap.add_argument("--kubesim", help="the kubesim binary (default bin/kubesim)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    s = Soak(a.seconds, a.seed, a.scale, kubesim_restart_s=a.kubesim_restart_s,
             calm=a.calm, rayop=a.rayop, kubesim=a.kubesim, steady_s=a.steady_seconds)
    return 1 if s.run_and_clean(a.keep) else 0


if __name__ == "__main__":
    sys.exit(main())

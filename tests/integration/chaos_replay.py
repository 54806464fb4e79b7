#!/usr/bin/python3
# chaos_replay.py - the chaos soak's judge (tests/integration/chaos/chaos.py, Soak.replay) on a
# made-up history, without running anything: Pod creations replayed in resourceVersion order
# against their RayCluster; a create the controller made on a live read older than the change
# it contradicts is "raced" (counted apart), one made on a read that already showed the change
# (or with no read) is a violation. Then the RayService judges on made-up polls: serve-switch
# (a switch to a cluster whose application was deployed before the switch and is not RUNNING,
# or that has none, is a violation; one redeployed in place after it is not; the seconds after
# a kubesim restart are not judged) and serve-put (a PUT that changed nothing, once); and the
# exits judge's excuse for leaders that stepped down in a long kubesim outage; and the
# sanitizer judge's reading of the per-process report files.
# deadline: 30
import datetime
import json
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "chaos"))
import chaos  # noqa: E402

failures = 0


def check(what, cond, detail=None):
    global failures
    print("%s - %s" % ("ok" if cond else "not ok", what), flush=True)
    if not cond:
        failures += 1
        if detail is not None:
            print("# %r" % (detail,), flush=True)


def rc(name, uid, rv, replicas, gen=1):
    return {"metadata": {"name": name, "uid": uid, "resourceVersion": str(rv), "generation": gen},
            "spec": {"workerGroupSpecs": [{"groupName": "g", "replicas": replicas, "minReplicas": 0,
                                           "maxReplicas": 10}]}}


def pod(name, owner_uid, cluster, rv, kind="worker"):
    return {"metadata": {"name": name, "uid": "u-" + name, "resourceVersion": str(rv),
                         "labels": {"ray.io/cluster": cluster, "ray.io/group": "g",
                                    "ray.io/node-type": kind},
                         "ownerReferences": [{"kind": "RayCluster", "uid": owner_uid}]}}


def t(sec):
    return (datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) +
            datetime.timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def main():
    work = tempfile.mkdtemp(prefix="chaos-replay.")
    s = chaos.Soak.__new__(chaos.Soak)
    s.lock, s.work, s.rc_gaps = threading.Lock(), work, []
    ev = []

    def add(rv, kind, typ, obj):
        ev.append((rv, len(ev), kind, typ, obj, False))
    log = []

    def get(sec, name, rv, code=200):
        log.append({"time": t(sec), "verb": "get", "resource": "rayclusters", "subresource": "",
                    "name": name, "user_agent": "rayop/0.1", "code": code, "duration_ms": 0.1,
                    **({"rv": rv} if rv else {})})

    def create(sec, rv):
        log.append({"time": t(sec), "verb": "create", "resource": "pods", "name": "",
                    "user_agent": "rayop/0.1", "code": 201, "duration_ms": 1.0, "rv": rv})
    # a: deleted at rv 12 while its Pod create was on the way: the GET before it saw rv 10
    add(10, "rc", "ADDED", rc("a", "ua", 10, 1))
    get(1.000, "a", 10)
    add(12, "rc", "DELETED", rc("a", "ua", 12, 1))
    create(1.002, 13)
    add(13, "pod", "ADDED", pod("a-1", "ua", "a", 13))
    # b: deleted at rv 22, and the GET before the create already said 404: a real orphan
    add(20, "rc", "ADDED", rc("b", "ub", 20, 1))
    add(22, "rc", "DELETED", rc("b", "ub", 22, 1))
    get(2.000, "b", 0, 404)
    create(2.002, 23)
    add(23, "pod", "ADDED", pod("b-1", "ub", "b", 23))
    # c: 2 workers, scaled 2 -> 1 at rv 34; a create on a read of rv 30 (2 wanted) raced
    add(30, "rc", "ADDED", rc("c", "uc", 30, 2))
    add(31, "pod", "ADDED", pod("c-1", "uc", "c", 31))
    get(3.000, "c", 30)
    add(34, "rc", "MODIFIED", rc("c", "uc", 34, 1, gen=2))
    create(3.002, 35)
    add(35, "pod", "ADDED", pod("c-2", "uc", "c", 35))
    # d: the same, but the read before the create already had the scale-down (rv 44)
    add(40, "rc", "ADDED", rc("d", "ud", 40, 2))
    add(41, "pod", "ADDED", pod("d-1", "ud", "d", 41))
    add(44, "rc", "MODIFIED", rc("d", "ud", 44, 1, gen=2))
    get(4.000, "d", 44)
    create(4.002, 45)
    add(45, "pod", "ADDED", pod("d-2", "ud", "d", 45))
    with open(os.path.join(work, "requests.log"), "w") as f:
        for r in log:
            f.write(json.dumps(r) + "\n")
    s.events = ev
    try:
        found, timeline = s.replay()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    got = sorted((inv, cluster) for inv, cluster, _, _ in found)
    raced = sorted((inv, cluster) for inv, cluster, _, _ in s.raced)
    check("a create after a deletion, made on a read from before it, raced", ("orphan", "a") in raced, raced)
    check("a create made after a read that said 404 is an orphan", ("orphan", "b") in got, got)
    check("a create within the old count, made on a read from before the scale-down, raced",
          ("overshoot", "c") in raced, raced)
    check("a create made on a read that had the scale-down is an overshoot", ("overshoot", "d") in got, got)
    check("nothing else judged", len(got) == 2 and len(raced) == 2, (got, raced))
    check("the timeline names each cluster's events", len(timeline.get("c", [])) >= 4, timeline.get("c"))
    serve_judges()
    leader_exits()
    sanitizer_reports()
    return 1 if failures else 0


def sanitizer_reports():
    """sanitizer: each process's report file (log_path) is printed whole, named by the
    process up started under that pid; an empty file is no report; the processes get
    log_path in their environment."""
    work = tempfile.mkdtemp(prefix="chaos-san.")
    s = chaos.Soak.__new__(chaos.Soak)
    s.lock, s.violations, s.work = threading.Lock(), {}, work
    s.sd, s.san_dir = os.path.join(work, "op-state"), os.path.join(work, "sanitizer")
    os.makedirs(s.sd)
    os.makedirs(s.san_dir)
    s.up_instances = [{"pid": 4000}]
    with open(os.path.join(work, "up.log"), "w") as f:
        f.write(json.dumps({"component": "up", "msg": "started", "proc": "rayservice", "pid": "4242"}) + "\n")
        f.write(json.dumps({"proc": "watcher", "component": "watcher", "msg": "started", "pid": "4343"}) + "\n")
    report = ["==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6290"] + \
        ["    #%d 0x55 in frame_%d reconcilers/host/host.c:%d" % (i, i, i) for i in range(60)] + \
        ["SUMMARY: AddressSanitizer: heap-use-after-free kube/client.c:300 in share_lock"]
    with open(os.path.join(s.san_dir, "rayop.4242"), "w") as f:
        f.write("\n".join(report) + "\n")
    open(os.path.join(s.san_dir, "kubesim.77"), "w").close()
    env = chaos.sanitizer_env(os.path.join(s.san_dir, "rayop"))
    try:
        s.check_sanitizer()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    vs = s.violations.get("sanitizer", [])
    check("sanitizer: one report file, one violation (an empty file is none)", len(vs) == 1, vs)
    check("sanitizer: named by the process up started under its pid",
          bool(vs) and vs[0].startswith("rayservice pid 4242"), vs[:1])
    check("sanitizer: the report is printed whole (its stack and its SUMMARY line)",
          bool(vs) and "frame_59" in vs[0] and "SUMMARY: AddressSanitizer" in vs[0], vs[:1])
    check("sanitizer: every runtime writes to a file per process",
          all(("log_path=" + os.path.join(s.san_dir, "rayop")) in env[v].split(":")
              for v in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")), env.get("ASAN_OPTIONS"))


def leader_exits():
    """exits: a leader that stepped down during a kubesim outage longer than the renew
    deadline is excused; one outside such an outage, or in a short one, is not."""
    work = tempfile.mkdtemp(prefix="chaos-exits.")
    s = chaos.Soak.__new__(chaos.Soak)
    s.lock, s.violations, s.work, s.sd = threading.Lock(), {}, work, os.path.join(work, "op-state")
    os.makedirs(s.sd)
    s.serve_init()
    base = 1800000000.0
    s.sim_restarts_at = [base, base + 15, base + 100, base + 103]   # 15 s down, then 3 s

    def line(proc, at):
        ts = datetime.datetime.fromtimestamp(at, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return json.dumps({"proc": proc, "ts": ts, "level": "error", "msg": "leader election lost",
                           "reason": "renew deadline exceeded"}) + "\n"
    with open(os.path.join(work, "up.log"), "w") as f:
        f.write(line("rayjob", base + 11) + line("raycluster", base + 102) + line("rayservice", base + 50))
    s.up_instances = [{"pid": 1, "kills": {"rayjob": 1, "raycluster": 0, "rayservice": 0},
                       "restarts": {"rayjob": 2, "raycluster": 1, "rayservice": 0}}]

    class Sim:
        def poll(self):
            return None
    s.sim = Sim()
    try:
        s.check_exits()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    vs = s.violations.get("exits", [])
    check("exits: a leader stepping down in a long kubesim outage is excused",
          s.leader_exits == {"rayjob": 1} and not any(v.startswith("rayjob") for v in vs), (s.leader_exits, vs))
    check("exits: one in a short outage is not", any(v.startswith("raycluster") for v in vs), vs)


def svc(rs, cluster):
    return {"metadata": {"name": rs + "-serve-svc", "ownerReferences": [{"kind": "RayService", "name": rs}]},
            "spec": {"selector": {"ray.io/cluster": cluster, "ray.io/serve": "true"}}}


def ray(cluster, status=None, deployed=0.0, puts=1, same=0):
    apps = {"app": {"status": status, "deployedMs": deployed * 1000, "config": {}}} if status else {}
    return {"namespace": "default", "cluster": cluster, "headPodUID": "h-" + cluster, "appStates": apps,
            "servePuts": puts, "servePutsUnchanged": same}


def serve_judges():
    s = chaos.Soak.__new__(chaos.Soak)
    s.lock, s.violations = threading.Lock(), {}
    s.serve_init()
    for rs in ("s1", "s2", "s3", "s4"):
        s.rs_note(rs, "created")

    def poll(at, svcs, clusters):
        s.serve_judge(at, {"items": svcs}, clusters)

    def bad():
        return sorted(v.split(":")[0] for v in s.violations.get("serve-switch", []))
    poll(100.0, [svc("s1", "s1-a"), svc("s2", "s2-a")], [ray("s1-a", "RUNNING", 90), ray("s2-a", "RUNNING", 90)])
    check("serve-switch: clusters whose applications run are fine", bad() == [], bad())
    # s1-a redeployed in place (a config upgrade) while selected: Serve keeps serving
    poll(101.0, [svc("s1", "s1-a"), svc("s2", "s2-a")], [ray("s1-a", "DEPLOYING", 100.5), ray("s2-a", "RUNNING", 90)])
    check("serve-switch: an application redeployed after the switch may be DEPLOYING", bad() == [], bad())
    # s1 switches to s1-b whose application was deployed at 100.8, before the last poll that
    # saw s1-a: it was not RUNNING when the Service went to it
    poll(102.0, [svc("s1", "s1-b"), svc("s2", "s2-b"), svc("s3", "s3-a")],
         [ray("s1-b", "DEPLOYING", 100.8), ray("s2-b", "RUNNING", 95)])
    check("serve-switch: a switch to a DEPLOYING application, and to a cluster without one, are "
          "violations", bad() == ["RayService s1", "RayService s3"], bad())
    poll(102.2, [svc("s1", "s1-b"), svc("s2", "s2-b"), svc("s3", "s3-a")],
         [ray("s1-b", "DEPLOYING", 100.8), ray("s2-b", "RUNNING", 95)])
    check("serve-switch: one violation per switch", len(bad()) == 2, bad())
    # s2 switches to s2-c and s2-b is deleted while the Ray state is read: the first read of
    # the Services still says s2-b, the second s2-c; not judged on that poll
    s.serve_judge(102.4, {"items": [svc("s2", "s2-b")]}, [ray("s2-c", "RUNNING", 95)],
                  {"items": [svc("s2", "s2-c")]})
    check("serve-switch: a selection that changed during the poll is not judged", len(bad()) == 2, bad())
    s.sim_restarts_at = [110.0]
    poll(112.0, [svc("s4", "s4-a")], [])
    check("serve-switch: not judged within the grace after a kubesim restart",
          len(bad()) == 2 and s.serve_unjudged == 1, (bad(), s.serve_unjudged))
    poll(110.0 + chaos.SERVE_RESTART_GRACE_S + 1, [svc("s4", "s4-a")], [])
    check("serve-switch: applications still lost after the grace are a violation",
          bad() == ["RayService s1", "RayService s3", "RayService s4"], bad())
    check("serve-switch: the violation prints the RayService's timeline",
          "created" in s.violations["serve-switch"][0] and "selects s1-b" in s.violations["serve-switch"][0],
          s.violations["serve-switch"][0])

    class Api:
        answer = []

        def get(self, path):
            return self.answer
    s.api, s.jobs_seen = Api(), {}
    s.api.answer = [ray("s1-b", "RUNNING", 100, puts=2, same=0)]
    s.check_jobs()
    check("serve-put: PUTs that changed something are fine", not s.violations.get("serve-put"))
    s.api.answer = [ray("s1-b", "RUNNING", 100, puts=3, same=1)]
    s.check_jobs()
    s.check_jobs()
    check("serve-put: a PUT that changed nothing is a violation, once, named by RayService",
          len(s.violations.get("serve-put", [])) == 1 and "RayService s1" in s.violations["serve-put"][0],
          s.violations.get("serve-put"))


if __name__ == "__main__":
    sys.exit(main())

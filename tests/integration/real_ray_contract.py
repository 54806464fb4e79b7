#!/usr/bin/python3
# real_ray_contract.py - one contract suite for the Ray Dashboard's Jobs and Serve APIs, run
# against a real Ray head (`ray start --head` on loopback from the peers venv, make peers) and
# against kubesim's simulated dashboard (through its service proxy), then compared.
# deadline: 420
#
# Jobs API: submit with submission_id, metadata, entrypoint resources and runtime_env; a
# duplicate submission_id; get; list; logs; stop; delete; an unknown id for get/stop/delete/logs;
# the job really runs on the real head (its output is in the logs). Serve API: PUT a
# two-application config, GET the details through DEPLOYING -> RUNNING, DELETE. For every call
# the HTTP status and the JSON field names of both servers are compared; rayop's dashboard
# client (bin/dashctl, dashboard/) is run against both and must read the same.
# Known, accepted differences are listed in KNOWN (and docs/kubesim-fidelity.md) with the
# reason; any other difference fails. Without the venv the suite prints skip lines. It runs in
# a network namespace of its own with only loopback in it (unshare --net), so the Ray head,
# which advertises the host's interface address, cannot reach anything off loopback.
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402  (ok / check / wait_until and the failure count)
from rclib import check, wait_until  # noqa: E402

ROOT = os.environ.get("RAYOP_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV = os.environ.get("RAYOP_PEERS_VENV") or os.path.join(ROOT, ".peers", "venv")
RAY = os.path.join(VENV, "bin", "ray")
KUBESIM = os.path.join(ROOT, "bin", "kubesim")
DASHCTL = os.path.join(ROOT, "bin", "dashctl")
counts = {"real": 0, "kubesim": 0}

# (step, what) -> why the difference is accepted. Mirrored in docs/kubesim-fidelity.md.
KNOWN = {}


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def ray_ports():
    """Seven single ports for a Ray head and the first of its 41 worker ports. Ray refuses
    to start when a single port falls inside the worker range, and the kernel hands out
    free ports with no regard for that range, so draw again until none does."""
    while True:
        *single, first = free_ports(8)
        if not any(first <= p <= first + 40 for p in single):
            return single + [first]


def http(base, method, path, body=None, timeout=60):
    """(code, parsed JSON or text) of one call."""
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(base + path, data=data, method=method,
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=timeout) as resp:
            code, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        code, raw = e.code, e.read()
    except (OSError, ValueError) as e:
        return 0, str(e)
    try:
        return code, json.loads(raw)
    except ValueError:
        return code, raw.decode(errors="replace")


def shape(v):
    """What is compared between the servers: JSON field names (one level into objects and the
    first element of lists), or "text" for a non-JSON body."""
    if isinstance(v, dict):
        return sorted(v.keys())
    if isinstance(v, list):
        return ["list"] + (shape(v[0]) if v and isinstance(v[0], dict) else [])
    return "text"


def save(work, server, step, code, body):
    """Every answer is kept beside the logs (RAYOP_CONTRACT_KEEP=DIR keeps them after a pass)."""
    with open(os.path.join(work, "%s-%s.json" % (server, step)), "w") as f:
        json.dump({"code": code, "body": body}, f, indent=1)


class RealRay:
    """`ray start --head --block` in its own session; everything it starts carries the private
    temp dir in its command line, which is how close() finds exactly these processes."""

    name = "real"

    def __init__(self, work):
        self.tmp = tempfile.mkdtemp(prefix="rc-", dir="/tmp")  # short: Ray's socket paths
        gcs, dash, client, agent, agent_grpc, metrics, serve, mn = ray_ports()
        self.serve_port = serve
        self.base = "http://127.0.0.1:%d" % dash
        apps = os.path.join(self.tmp, "apps")
        os.makedirs(apps)
        with open(os.path.join(apps, "contract_apps.py"), "w") as f:
            f.write(APPS_PY)
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=apps,
                   RAY_DISABLE_DOCKER_CPU_WARNING="1", RAY_memory_monitor_refresh_ms="0")
        self.log = open(os.path.join(work, "ray.log"), "wb")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [RAY, "start", "--head", "--block", "--node-ip-address=127.0.0.1",
             "--port=%d" % gcs, "--dashboard-host=127.0.0.1", "--dashboard-port=%d" % dash,
             "--ray-client-server-port=%d" % client, "--dashboard-agent-listen-port=%d" % agent,
             "--dashboard-agent-grpc-port=%d" % agent_grpc, "--metrics-export-port=%d" % metrics,
             "--min-worker-port=%d" % (mn + 0), "--max-worker-port=%d" % (mn + 40),
             "--num-cpus=4", "--resources={\"rayop\": 4}", "--temp-dir=" + self.tmp,
             "--include-dashboard=true", "--disable-usage-stats"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=apps, start_new_session=True)

    def ready(self):
        return http(self.base, "GET", "/api/jobs/", timeout=5)[0] == 200

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        # whatever is left of this head: processes naming our private temp dir, and our group
        mine = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read()
                with open("/proc/%s/environ" % pid, "rb") as f:
                    envb = f.read()
            except OSError:
                continue
            if self.tmp.encode() in cmd or self.tmp.encode() in envb:
                mine.append(int(pid))
        for pid in mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)


class SimRay:
    """kubesim with a head Pod and Service; its dashboard through the API server's proxy."""

    name = "kubesim"

    def __init__(self, work):
        self.log = open(os.path.join(work, "kubesim.log"), "wb")
        self.proc = subprocess.Popen([KUBESIM, "--listen", "127.0.0.1:0", "--nodes", "2",
                                      "--pod-start-ms", "100", "--pod-ready-ms", "100"],
                                     stdout=subprocess.PIPE, stderr=self.log)
        url = self.proc.stdout.readline().decode().strip()
        if not url.startswith("http"):
            raise RuntimeError("kubesim did not start")
        ns = "/api/v1/namespaces/default"
        http(url, "POST", ns + "/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "rc-head", "labels": {"ray.io/node-type": "head", "ray.io/cluster": "rc"}},
            "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0", "ports": [
                {"containerPort": 8265, "name": "dashboard"}, {"containerPort": 8000, "name": "serve"}]}]}})
        http(url, "POST", ns + "/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "rc-head-svc"},
            "spec": {"selector": {"ray.io/node-type": "head", "ray.io/cluster": "rc"},
                     "ports": [{"name": "dashboard", "port": 8265, "targetPort": "dashboard"},
                               {"name": "serve", "port": 8000, "targetPort": "serve"}]}})
        self.base = url + ns + "/services/rc-head-svc:dashboard/proxy"
        self.serve_port = None

    def ready(self):
        return http(self.base, "GET", "/api/jobs/", timeout=5)[0] == 200

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


APPS_PY = '''
from ray import serve

@serve.deployment
class Hello:
    def __init__(self, word="hello"):
        self.word = word
    async def __call__(self, request):
        return self.word

app1 = Hello.bind("one")
app2 = Hello.bind("two")
'''

LONG = "python -c \"import time; print('contract-long'); time.sleep(300)\""
SHORT = "python -c \"print('contract-hello from the entrypoint')\""


def serve_config(port):
    cfg = {"applications": [
        {"name": "app1", "route_prefix": "/app1", "import_path": "contract_apps:app1",
         "deployments": [{"name": "Hello", "num_replicas": 1, "ray_actor_options": {"num_cpus": 0.1}}]},
        {"name": "app2", "route_prefix": "/app2", "import_path": "contract_apps:app2",
         "deployments": [{"name": "Hello", "num_replicas": 1, "ray_actor_options": {"num_cpus": 0.1}}]}]}
    if port:
        cfg["http_options"] = {"host": "127.0.0.1", "port": port}
    return cfg


def dashctl(base, *args):
    p = subprocess.run([DASHCTL, base] + list(args), capture_output=True, text=True, timeout=120)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"rc": "no output", "stderr": p.stderr[-500:]}


def run_jobs(srv, work):
    """The Jobs API steps; returns {step: (code, shape)} for the comparison."""
    b, n = srv.base, srv.name
    rec = {}

    def step(name, method, path, body=None):
        code, got = http(b, method, path, body)
        rec[name] = (code, shape(got))
        counts[n] += 1
        save(work, n, name, code, got)
        return code, got

    code, got = step("version", "GET", "/api/version")
    check("[%s] /api/version names the Jobs API version 4" % n,
          code == 200 and isinstance(got, dict) and got.get("version") == "4", [code, got])
    if n == "real":
        print("# real Ray answers ray_version %s" % got.get("ray_version"), flush=True)

    sub = {"entrypoint": SHORT, "submission_id": "contract-ok",
           "metadata": {"owner": "rayop", "suite": "contract"},
           "runtime_env": {"env_vars": {"CONTRACT": "1", "KUBESIM_JOB_SECONDS": "2"}},
           "entrypoint_num_cpus": 0.5, "entrypoint_resources": {"rayop": 1}}
    # Right after start the head may answer 500 "No available agent to submit job, please try
    # again later." until its dashboard agent registers; a client retries, so does this.
    agent_ready = wait_until(120, lambda: "No available agent" not in str(
        http(b, "POST", "/api/jobs/", {"entrypoint": "true", "submission_id": "contract-probe"})[1]), 1.0)
    check("[%s] the job agent takes submissions" % n, agent_ready)
    code, got = step("submit", "POST", "/api/jobs/", sub)
    check("[%s] submit answers 200 with the submission_id" % n,
          code == 200 and isinstance(got, dict) and got.get("submission_id") == "contract-ok", [code, got])
    code, got = step("submit-duplicate", "POST", "/api/jobs/", sub)
    check("[%s] a duplicate submission_id is refused with 'Please use a different submission_id'" % n,
          code in (400, 500) and "Please use a different submission_id" in json.dumps(got), [code, got])
    code, got = step("get", "GET", "/api/jobs/contract-ok")
    # Ray 2.60 echoes metadata and runtime_env; the entrypoint resources are used for
    # scheduling (the head has the custom "rayop" resource) but not shown by GET.
    check("[%s] get echoes metadata and runtime_env" % n,
          code == 200 and got.get("metadata") == sub["metadata"]
          and (got.get("runtime_env") or {}).get("env_vars", {}).get("CONTRACT") == "1", [code, got])
    done = wait_until(120, lambda: http(b, "GET", "/api/jobs/contract-ok")[1].get("status") == "SUCCEEDED")
    check("[%s] the job reaches SUCCEEDED" % n, done, http(b, "GET", "/api/jobs/contract-ok"))
    code, got = step("get-terminal", "GET", "/api/jobs/contract-ok")
    check("[%s] a finished job has start_time <= end_time and a driver exit code or none" % n,
          code == 200 and got.get("start_time") and got.get("end_time")
          and got["start_time"] <= got["end_time"], got)
    code, got = step("logs", "GET", "/api/jobs/contract-ok/logs")
    check("[%s] logs answer {\"logs\": text}" % n, code == 200 and isinstance(got, dict)
          and isinstance(got.get("logs"), str), [code, got])
    if n == "real":
        check("[real] the entrypoint really ran on the head (its output is in the logs)",
              "contract-hello from the entrypoint" in got.get("logs", ""), got)
    code, got = step("list", "GET", "/api/jobs/")
    check("[%s] list holds the job" % n, code == 200 and isinstance(got, list)
          and any(j.get("submission_id") == "contract-ok" for j in got), [code, got])

    long_sub = {"entrypoint": LONG, "submission_id": "contract-long",
                "runtime_env": {"env_vars": {"KUBESIM_JOB_SECONDS": "300"}}}
    step("submit-long", "POST", "/api/jobs/", long_sub)
    running = wait_until(120, lambda: http(b, "GET", "/api/jobs/contract-long")[1].get("status") == "RUNNING")
    check("[%s] a long job reaches RUNNING" % n, running, http(b, "GET", "/api/jobs/contract-long"))
    code, got = step("delete-running", "DELETE", "/api/jobs/contract-long")
    check("[%s] deleting a running job is refused: 500, the agent's 'non-terminal state' traceback" % n,
          code == 500 and "Attempted to delete job 'contract-long', but it is in a non-terminal state RUNNING"
          in str(got), [code, got])
    code, got = step("stop", "POST", "/api/jobs/contract-long/stop")
    check("[%s] stop answers {\"stopped\": true}" % n, code == 200 and got == {"stopped": True}, [code, got])
    stopped = wait_until(60, lambda: http(b, "GET", "/api/jobs/contract-long")[1].get("status") == "STOPPED")
    check("[%s] the stopped job ends STOPPED" % n, stopped, http(b, "GET", "/api/jobs/contract-long"))
    code, got = step("stop-terminal", "POST", "/api/jobs/contract-long/stop")
    check("[%s] stopping a finished job answers {\"stopped\": false}" % n,
          code == 200 and got == {"stopped": False}, [code, got])

    # rayop's client against the same server
    sub_file = os.path.join(work, "%s-submit.json" % n)
    with open(sub_file, "w") as f:
        json.dump(dict(sub, submission_id="contract-client"), f)
    r = dashctl(b, "submit", sub_file)
    counts[n] += 1
    check("[%s] rayop client: submit returns the submission id" % n,
          r.get("rc") == 0 and r.get("job_id") == "contract-client", r)
    r = dashctl(b, "submit", sub_file)
    counts[n] += 1
    check("[%s] rayop client: a duplicate submission is EEXIST" % n, r.get("rc") == "EEXIST", r)
    wait_until(120, lambda: dashctl(b, "get", "contract-client").get("terminal"))
    r = dashctl(b, "get", "contract-client")
    counts[n] += 1
    check("[%s] rayop client: get reads status, ids, entrypoint and times" % n,
          r.get("rc") == 0 and r.get("status") == "SUCCEEDED" and r.get("submission_id") == "contract-client"
          and r.get("entrypoint") == SHORT and r.get("start_time", 0) > 0 and r.get("end_time", 0) >= r.get("start_time", 0), r)
    r = dashctl(b, "logs", "contract-client")
    counts[n] += 1
    check("[%s] rayop client: logs" % n, r.get("rc") == 0 and isinstance(r.get("logs"), str), r)
    r = dashctl(b, "stop", "contract-client")
    counts[n] += 1
    check("[%s] rayop client: stop of a finished job is 0 (already terminal)" % n, r.get("rc") == 0, r)
    r = dashctl(b, "delete", "contract-client")
    counts[n] += 1
    check("[%s] rayop client: delete" % n, r.get("rc") == 0, r)
    for op in ("get", "stop", "delete", "logs"):
        r = dashctl(b, op, "contract-nope")
        counts[n] += 1
        check("[%s] rayop client: %s of an unknown id is ENOENT" % (n, op), r.get("rc") == "ENOENT", r)

    code, got = step("delete", "DELETE", "/api/jobs/contract-ok")
    check("[%s] delete answers {\"deleted\": true}" % n, code == 200 and got == {"deleted": True}, [code, got])
    code, got = step("get-deleted", "GET", "/api/jobs/contract-ok")
    check("[%s] a deleted job is 404" % n, code == 404, [code, got])
    for what, method, path in (("get-unknown", "GET", "/api/jobs/contract-nope"),
                               ("stop-unknown", "POST", "/api/jobs/contract-nope/stop"),
                               ("delete-unknown", "DELETE", "/api/jobs/contract-nope"),
                               ("logs-unknown", "GET", "/api/jobs/contract-nope/logs")):
        code, got = step(what, method, path)
        check("[%s] %s is 404" % (n, what), code == 404, [code, got])
    return rec


def run_serve(srv, work):
    b, n = srv.base, srv.name
    rec = {}

    def step(name, method, path, body=None):
        code, got = http(b, method, path, body, timeout=120)
        rec[name] = (code, shape(got))
        counts[n] += 1
        save(work, n, name, code, got)
        return code, got

    code, got = step("serve-put", "PUT", "/api/serve/applications/", serve_config(srv.serve_port))
    check("[%s] PUT of a two-application config answers 200" % n, code == 200, [code, got])
    seen = set()

    def app_states():
        c, g = http(b, "GET", "/api/serve/applications/", timeout=30)
        apps = g.get("applications", {}) if c == 200 and isinstance(g, dict) else {}
        st = tuple(sorted((k, v.get("status")) for k, v in apps.items()))
        seen.update(s for _, s in st)
        return st == (("app1", "RUNNING"), ("app2", "RUNNING"))
    running = wait_until(240, app_states, every=0.5)
    check("[%s] both applications reach RUNNING" % n, running, http(b, "GET", "/api/serve/applications/"))
    check("[%s] the applications went through DEPLOYING or were RUNNING at once" % n,
          seen <= {"DEPLOYING", "RUNNING", "NOT_STARTED"}, sorted(seen))
    code, got = step("serve-get", "GET", "/api/serve/applications/")
    app = (got.get("applications") or {}).get("app1", {}) if isinstance(got, dict) else {}
    rec["serve-app"] = (code, shape(app))
    rec["serve-deployment"] = (code, shape((app.get("deployments") or {}).get("Hello", {})))
    check("[%s] the details name route_prefix and the deployment" % n,
          app.get("route_prefix") == "/app1" and "Hello" in (app.get("deployments") or {}), app)
    code, got = step("serve-delete", "DELETE", "/api/serve/applications/")
    check("[%s] DELETE answers 200" % n, code == 200, [code, got])
    gone = wait_until(120, lambda: not (http(b, "GET", "/api/serve/applications/")[1] or {}).get("applications"))
    check("[%s] after DELETE no application is left" % n, gone, http(b, "GET", "/api/serve/applications/"))
    return rec


def compare(real, sim):
    for k in sorted(set(real) | set(sim)):
        r, s = real.get(k), sim.get(k)
        if r is None or s is None:
            continue
        same = r[0] == s[0] and (r[1] == s[1] or KNOWN.get((k, "fields")))
        if r[0] != s[0] and KNOWN.get((k, "code")):
            same = r[1] == s[1] or KNOWN.get((k, "fields"))
        missing = sorted(set(r[1]) - set(s[1])) if isinstance(r[1], list) and isinstance(s[1], list) else []
        extra = sorted(set(s[1]) - set(r[1])) if isinstance(r[1], list) and isinstance(s[1], list) else []
        check("same answer from kubesim and real Ray for %s (HTTP %s)" % (k, r[0]), same,
              {"real": r[0], "kubesim": s[0], "fields missing in kubesim": missing,
               "fields only in kubesim": extra, "real shape": r[1], "kubesim shape": s[1]})


def in_private_netns():
    """Re-runs this file inside a new network namespace holding only loopback: a Ray head
    advertises the host's first interface address (driver_agent_http_address and the Serve
    proxies use it even with --node-ip-address=127.0.0.1), and nothing here may talk to any
    address but loopback. Returns the exit status of that run, or None when already inside."""
    if os.environ.get("RAYOP_CONTRACT_NETNS") == "1":
        return None
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    if probe.returncode != 0:
        print("skip - real Ray contract: cannot make a private network namespace (unshare --net: %s)"
              % probe.stderr.decode(errors="replace").strip(), flush=True)
        return 0
    env = dict(os.environ, RAYOP_CONTRACT_NETNS="1")
    return subprocess.run(["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
                           sys.executable, os.path.abspath(__file__)], env=env).returncode


def main():
    if not os.access(RAY, os.X_OK):
        print("skip - real Ray contract: no venv at %s (make peers builds it)" % VENV, flush=True)
        return 0
    rc = in_private_netns()
    if rc is not None:
        return rc
    for b in (KUBESIM, DASHCTL):
        if not os.access(b, os.X_OK):
            check("%s built (make all)" % b, False)
            return 1
    work = tempfile.mkdtemp(prefix="rayop-raycontract.")
    real = sim = None
    results = {}
    try:
        version = subprocess.run([RAY, "--version"], capture_output=True, text=True).stdout.strip()
        print("# " + version, flush=True)
        real = RealRay(work)
        sim = SimRay(work)
        if not check("a real Ray head starts on loopback (dashboard answers)",
                     wait_until(180, lambda: real.proc.poll() is not None or real.ready(), 0.5)
                     and real.ready()):
            return 1
        print("# real Ray head up in %.1f s" % (time.monotonic() - real.t0), flush=True)
        check("kubesim's simulated dashboard answers", wait_until(30, sim.ready))
        for srv in (real, sim):
            results[srv.name] = run_jobs(srv, work)
            results[srv.name].update(run_serve(srv, work))
        compare(results["real"], results["kubesim"])
        print("# checks against real Ray: %d calls, against kubesim: %d calls" % (counts["real"], counts["kubesim"]))
    finally:
        for s in (real, sim):
            if s:
                s.close()
        if rclib.failures or os.environ.get("RAYOP_CONTRACT_KEEP"):
            keep = os.environ.get("RAYOP_CONTRACT_KEEP") or work + ".failed"
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(work, keep)
            print("# logs kept in " + keep, flush=True)
        shutil.rmtree(work, ignore_errors=True)
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

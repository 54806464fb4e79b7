#!/usr/bin/python3
# kubesim_faults.py - kubesim's fault injection as the official Python client sees it.
# deadline: 90
#
# Starts its own kubesim (with a token, a rule given by flag and a fixed seed), then switches
# faults at run time through /kubesim/faults and /kubesim/watch and checks each one from the
# client's side: 429 with Retry-After (ApiException 429 with the header when urllib3 retries are
# off; a transparent retry after Retry-After seconds when they are on), 500 and 503 Status
# answers, a reset as a urllib3 connection error, added latency, every-N and seeded p choices
# reproducible end to end, a watch cut after N seconds ending watch.Watch().stream cleanly (and
# re-watched from the last resourceVersion without losing events), watch events held back D ms,
# and an expired resume raising ApiException 410. /kubesim/status counts are checked as deltas,
# and the admin area is checked to require the same token as the API.
# Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

ROOT = os.environ.get("RAYOP_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KUBESIM = os.environ.get("KUBESIM") or os.path.join(ROOT, "bin", "kubesim")
TOKEN = "faults-test-token"
NS = "default"
failures = 0


def ok(what):
    print("ok - " + what, flush=True)


def not_ok(what, detail=None):
    global failures
    failures += 1
    print("not ok - " + what, flush=True)
    if detail is not None:
        for line in str(detail).splitlines()[:20]:
            print("#   " + line, flush=True)


def check(what, cond, detail=None):
    if cond:
        ok(what)
    else:
        not_ok(what, detail)
    return cond


def wait_until(deadline_s, cond):
    """Polls cond() until it returns a true value or deadline_s pass; returns the value."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v or time.monotonic() >= end:
            return v
        time.sleep(0.05)


class Kubesim:
    """A kubesim child process: its URL comes from its first stdout line."""

    def __init__(self, work, extra):
        self.kubeconfig = os.path.join(work, "kubeconfig")
        self.log = open(os.path.join(work, "kubesim.log"), "wb")
        args = [KUBESIM, "--listen", "127.0.0.1:0", "--kubeconfig-out", self.kubeconfig,
                "--token", TOKEN] + extra + ([] if "--nodes" in extra else ["--nodes", "0"])
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        self.url = None
        line = b""
        end = time.monotonic() + 15
        while not line.endswith(b"\n") and time.monotonic() < end:
            r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if not r:
                break
            ch = os.read(self.proc.stdout.fileno(), 1)
            if not ch:
                break
            line += ch
        word = line.decode(errors="replace").strip()
        if word.startswith("http"):
            self.url = word.rstrip("/")
        threading.Thread(target=lambda: self.proc.stdout.read(), daemon=True).start()

    def admin(self, method, path, body=None, token=TOKEN):
        """(code, parsed JSON body) of a request to the admin area."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def rules(self, rules, seed=None):
        body = {"rules": rules}
        if seed is not None:
            body["seed"] = seed
        code, doc = self.admin("PUT", "/kubesim/faults", body)
        if code != 200:
            raise RuntimeError("PUT /kubesim/faults: %s %s" % (code, doc))

    def watch_faults(self, **kw):
        code, doc = self.admin("PUT", "/kubesim/watch", kw)
        if code != 200:
            raise RuntimeError("PUT /kubesim/watch: %s %s" % (code, doc))

    def status(self):
        return self.admin("GET", "/kubesim/status")[1]

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.close()
        return rc


def api_error(fn, *args, **kw):
    """The ApiException fn raises, or None."""
    try:
        fn(*args, **kw)
    except ApiException as e:
        return e
    return None


def cm(name, labels=None):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels or {"t": "faults"}}, "data": {"k": "v"}}


def test_admin(sim):
    code, _ = sim.admin("GET", "/kubesim/status", token=None)
    check("admin area without a token: 401", code == 401, code)
    code, _ = sim.admin("GET", "/kubesim/status", token="wrong")
    check("admin area with a wrong token: 403", code == 403, code)
    code, doc = sim.admin("PUT", "/kubesim/faults", {"rules": ["verb=get,code=404"]})
    check("a bad rule is refused with 400 and says why",
          code == 400 and "404" in doc.get("message", ""), (code, doc))
    code, doc = sim.admin("PUT", "/kubesim/watch", {"delayMs": -1})
    check("a bad watch setting is refused with 400", code == 400, (code, doc))
    code, doc = sim.admin("GET", "/kubesim/faults")
    check("the rule given by --fault is listed with the --fault-seed",
          code == 200 and doc["seed"] == 7 and len(doc["rules"]) == 1 and
          doc["rules"][0]["rule"] == "verb=deletecollection,code=503,retry-after=2", doc)


def test_status_codes(sim, core, core_retrying):
    # the rule from the command line: 503 with Retry-After 2 on deletecollection
    before = sim.status()
    e = api_error(core.delete_collection_namespaced_config_map, NS, label_selector="none=here")
    check("503 from a --fault rule: ApiException 503 ServiceUnavailable with Retry-After",
          e is not None and e.status == 503 and e.headers.get("Retry-After") == "2" and
          json.loads(e.body)["reason"] == "ServiceUnavailable", e)
    after = sim.status()
    check("status counts the 503", after["faults"]["503"] - before["faults"]["503"] == 1,
          after["faults"])

    sim.rules(["verb=list,resource=configmaps,code=429,retry-after=1"])
    e = api_error(core.list_namespaced_config_map, NS)
    body = json.loads(e.body) if e is not None else {}
    check("429: ApiException 429 with Retry-After: 1 (urllib3 retries off)",
          e is not None and e.status == 429 and e.headers.get("Retry-After") == "1", e)
    check("429 body is a TooManyRequests Status with details.retryAfterSeconds",
          body.get("reason") == "TooManyRequests" and body.get("code") == 429 and
          body.get("message") == "the server has received too many requests and has asked us "
                                 "to try again later" and
          body.get("details", {}).get("retryAfterSeconds") == 1, body)
    code, _ = sim.admin("GET", "/api/v1/namespaces/default/configmaps", token=None)
    check("faults spare unauthenticated requests: 401, not 429", code == 401, code)
    check("429 applies to the rule's verb and resource only",
          api_error(core.list_namespaced_secret, NS) is None and
          api_error(core.read_namespace, NS) is None)

    # a client that retries (urllib3's default) honours Retry-After and then succeeds
    sim.rules(["verb=list,resource=configmaps,code=429,retry-after=1,count=1"])
    t0 = time.monotonic()
    e = api_error(core_retrying.list_namespaced_config_map, NS)
    dt = time.monotonic() - t0
    check("429 with count=1: a retrying client waits Retry-After (%.2fs) and succeeds" % dt,
          e is None and 0.9 <= dt < 5, e)

    sim.rules(["verb=create,resource=configmaps,code=500,count=1"])
    e = api_error(core.create_namespaced_config_map, NS, cm("c500"))
    check("500: ApiException 500 InternalError",
          e is not None and e.status == 500 and json.loads(e.body)["reason"] == "InternalError",
          e)
    check("count=1: the next create goes through",
          api_error(core.create_namespaced_config_map, NS, cm("c500")) is None)
    code, doc = sim.admin("GET", "/kubesim/faults")
    check("the listing counts matched and fired",
          doc["rules"][0]["matched"] == 1 and doc["rules"][0]["fired"] == 1, doc)


def test_reset_and_delay(sim, core):
    before = sim.status()
    sim.rules(["verb=get,resource=configmaps,action=reset"])
    err = None
    try:
        core.read_namespaced_config_map("c500", NS)
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        err = e
    check("reset: a urllib3 connection error (retries off)",
          isinstance(err, (urllib3.exceptions.ProtocolError, urllib3.exceptions.MaxRetryError)),
          repr(err))
    check("after a reset the client's next request works on a new connection",
          api_error(core.list_namespaced_config_map, NS) is None)

    sim.rules(["verb=get,resource=configmaps,action=delay,ms=400"])
    t0 = time.monotonic()
    e = api_error(core.read_namespaced_config_map, "c500", NS)
    slow = time.monotonic() - t0
    sim.rules([])
    t0 = time.monotonic()
    api_error(core.read_namespaced_config_map, "c500", NS)
    fast = time.monotonic() - t0
    check("delay 400 ms: the get takes %.3fs, %.3fs without the rule" % (slow, fast),
          e is None and slow >= 0.4 and fast < 0.3, e)
    after = sim.status()
    check("status counts the reset and the delay",
          after["faults"]["reset"] - before["faults"]["reset"] == 1 and
          after["faults"]["delay"] - before["faults"]["delay"] == 1, after["faults"])


def test_selection(sim, core):
    def pattern(n):
        return [(lambda e: e.status if e else 200)(api_error(core.list_namespaced_config_map, NS))
                for _ in range(n)]

    sim.rules(["verb=list,code=500,every=3"])
    got = pattern(6)
    check("every=3: the 3rd and 6th list fail", got == [200, 200, 500, 200, 200, 500], got)
    sim.rules(["verb=list,code=500,p=0.5"], seed=5)
    a = pattern(24)
    sim.rules(["verb=list,code=500,p=0.5"], seed=5)
    b = pattern(24)
    check("p=0.5 with a fixed seed: the same answers twice and a mix of both",
          a == b and 200 in a and 500 in a, (a, b))
    sim.rules([])


def watch_thread(core, events, w, **kw):
    def run():
        try:
            for ev in w.stream(core.list_namespaced_config_map, NS, **kw):
                events.append((time.monotonic(), ev["type"], ev["object"].metadata.name))
            events.append((time.monotonic(), "END", None))
        except Exception as e:  # noqa: BLE001
            events.append((time.monotonic(), "EXC", e))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_watch_cut(sim, core):
    sim.watch_faults(cutSeconds=2)
    before = sim.status()
    events = []
    t0 = time.monotonic()
    t = watch_thread(core, events, watch.Watch(), label_selector="nothing=here")
    t.join(8)
    dt = time.monotonic() - t0
    check("cut after 2 s: watch.Watch().stream ends cleanly (%.2fs)" % dt,
          events and events[-1][1] == "END" and 1.8 <= dt < 5, events)

    # a watch that has seen an event resumes from it after the cut, losing nothing
    core.create_namespaced_config_map(NS, cm("cut-a", {"t": "cut"}))
    w = watch.Watch()
    events = []
    t = watch_thread(core, events, w, label_selector="t=cut")
    rewatched = wait_until(8, lambda: sim.status()["requests"]["byVerb"]["watch"] -
                           before["requests"]["byVerb"]["watch"] >= 3)
    check("after the cut the client re-watches from its resourceVersion", rewatched)
    w.stop()
    core.create_namespaced_config_map(NS, cm("cut-b", {"t": "cut"}))
    t.join(8)
    names = [e[2] for e in events if e[1] == "ADDED"]
    check("events across the cut: cut-a then cut-b, each once", names == ["cut-a", "cut-b"],
          events)
    after = sim.status()
    check("status counts cut watches", after["faults"]["watchCut"] - before["faults"]["watchCut"] >= 3,
          after["faults"])
    sim.watch_faults(cutSeconds=0)


def test_watch_delay(sim, core):
    sim.watch_faults(delayMs=700)
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    events = []
    t = watch_thread(core, events, watch.Watch(), label_selector="t=delay", resource_version=rv,
                     timeout_seconds=6)
    # The watch resumes from rv, so whenever it opens, the event is held back from its commit.
    t0 = time.monotonic()
    core.create_namespaced_config_map(NS, cm("delayed", {"t": "delay"}))
    wrote = time.monotonic() - t0
    got = wait_until(5, lambda: [e for e in events if e[1] == "ADDED"])
    lag = got[0][0] - t0 if got else None
    check("watch delay 700 ms: the write returns at once (%.3fs), its event %.3fs later" %
          (wrote, lag or -1), got and wrote < 0.5 and lag >= 0.7, events)
    sim.watch_faults(delayMs=0)
    t.join(8)


def test_watch_expire(sim, core):
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    sim.watch_faults(expireNext=2)
    before = sim.status()
    # a fresh watch (no resourceVersion) is not a resume: untouched
    events = []
    watch_thread(core, events, watch.Watch(), label_selector="t=cut", timeout_seconds=1).join(5)
    check("expire leaves fresh watches alone",
          [e[1] for e in events] == ["ADDED", "ADDED", "END"], events)
    events = []
    watch_thread(core, events, watch.Watch(), resource_version=rv).join(8)
    e = events[-1][2] if events and events[-1][1] == "EXC" else None
    check("expire: a resume gets 410 and the client, after its one retry, ApiException 410",
          isinstance(e, ApiException) and e.status == 410 and "Expired" in str(e.reason), events)
    after = sim.status()
    check("status counts both expired resumes and nothing is left",
          after["faults"]["expired"] - before["faults"]["expired"] == 2 and
          after["watch"]["expireNext"] == 0, after)


def test_status(sim, core):
    st = sim.status()
    lst = core.list_namespaced_config_map(NS)
    check("status: objects, rv, events, watchers",
          # 4 ConfigMaps were created above; the status is read before the list
          st["objects"] >= 4 and st["events"] >= 4 and st["watchers"] >= 0 and
          4 <= st["rv"] <= int(lst.metadata.resource_version), st)
    before = st["requests"]
    for _ in range(3):
        core.read_namespace(NS)
    after = sim.status()["requests"]
    check("status: requests total and per verb count the API calls (not the admin ones)",
          after["byVerb"]["get"] - before["byVerb"]["get"] == 3 and
          after["total"] - before["total"] == 4, (before, after))  # 3 gets + the list above


def main():
    work = tempfile.mkdtemp(prefix="rayop-faults.")
    sim = None
    try:
        if not os.access(KUBESIM, os.X_OK):
            not_ok("kubesim binary at %s (make all)" % KUBESIM)
            return 1
        sim = Kubesim(work, ["--fault", "verb=deletecollection,code=503,retry-after=2",
                             "--fault-seed", "7"])
        if not check("kubesim starts with fault flags and prints its URL", sim.url is not None):
            return 1
        cfg = client.Configuration()
        config.load_kube_config(config_file=sim.kubeconfig, client_configuration=cfg)
        cfg.retries = False
        core = client.CoreV1Api(client.ApiClient(cfg))
        core_retrying = client.CoreV1Api(config.new_client_from_config(config_file=sim.kubeconfig))
        for name, fn, args in (("admin", test_admin, (sim,)),
                               ("status codes", test_status_codes, (sim, core, core_retrying)),
                               ("reset and delay", test_reset_and_delay, (sim, core)),
                               ("selection", test_selection, (sim, core)),
                               ("watch cut", test_watch_cut, (sim, core)),
                               ("watch delay", test_watch_delay, (sim, core)),
                               ("watch expire", test_watch_expire, (sim, core)),
                               ("status", test_status, (sim, core))):
            try:
                fn(*args)
            except Exception as e:  # one failing flow must not hide the others
                not_ok("%s flow raised %s" % (name, type(e).__name__), e)
                sim.admin("DELETE", "/kubesim/faults")
    finally:
        if sim:
            # with an ASan build (KUBESIM=...), leaks or errors make this non-zero
            check("kubesim exits 0 on SIGTERM", sim.stop() == 0)
            if failures:
                with open(os.path.join(work, "kubesim.log"), "rb") as f:
                    for line in f.read().decode(errors="replace").splitlines()[-10:]:
                        print("#   " + line)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

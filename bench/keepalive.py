# keepalive.py - requests on one kept-alive connection per thread, for the harnesses that
# create thousands of objects from a pool of threads (bench/raycluster_bench.py,
# bench/peer.py). rclib.Env.req opens a connection per request (and against a real API
# server, a TLS handshake): at 10,000 creates kubesim started a connection thread per
# create, and creating took 10.7-13.1 s instead of 6.6-9.2 s, during the very seconds the
# bench measures (docs/kubesim-cluster.md, eleventh round).
import http.client
import json
import threading

from watch_count import _conn


class Session:
    """Thread-safe: each thread gets its own connection to env's server."""

    def __init__(self, env, timeout=20):
        self.env, self.timeout, self.local = env, timeout, threading.local()

    def req(self, method, path, body=None, ctype="application/json"):
        """(status, decoded body or {}) like rclib.Env.req. A connection the server has closed
        while idle is replaced once; a request whose answer was lost mid-way is not resent,
        so a create is never made twice."""
        data = json.dumps(body).encode() if body is not None else None
        headers = dict(self.env.auth, **{"Content-Type": ctype})
        for fresh in (False, True):
            c = getattr(self.local, "c", None)
            if c is None:
                c = self.local.c = _conn(self.env, self.timeout)
                fresh = True
            try:
                c.request(method, path, data, headers)
            except (OSError, http.client.HTTPException):
                c.close()
                self.local.c = None
                if fresh:
                    raise
                continue        # the idle connection was gone before anything was sent
            try:
                r = c.getresponse()
                raw = r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                self.local.c = None
                if fresh:
                    raise
                # nothing came back on a reused connection: the server closed it between
                # requests (http.client sends into a closed socket without an error)
                continue
            if r.getheader("Connection", "").lower() == "close":
                c.close()
                self.local.c = None
            try:
                return r.status, json.loads(raw or b"{}")
            except ValueError:
                return r.status, {}
        return 0, {}

# watch_count.py - waits until N objects of a collection satisfy a predicate by following one
# watch (one list, then events from its resourceVersion; a new list only when the watch expires
# or breaks), so a benchmark does not load the server it measures by polling full lists. Used by
# bench/raycluster_bench.py and bench/peer.py with an rclib.Env (url, ssl, auth).
import http.client
import json
import socket
import time
import urllib.parse


def _conn(env, timeout):
    u = urllib.parse.urlparse(env.url)
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=env.ssl)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


def wait_count(env, path, pred, n, deadline):
    """(True, count) once at least n objects under path satisfy pred, else (False, count) after
    deadline seconds. path is a collection (no query string)."""
    end = time.monotonic() + deadline
    state, count = {}, 0
    while time.monotonic() < end:
        code, body = env.req("GET", path)
        if code != 200:
            time.sleep(0.5)   # the collection is not served yet: retry the list, not a sync point
            continue
        state = {o["metadata"]["name"]: bool(pred(o)) for o in body.get("items") or []}
        count = sum(state.values())
        if count >= n:
            return True, count
        rv = body["metadata"]["resourceVersion"]
        left = max(1, int(end - time.monotonic()))
        c = _conn(env, 30)
        try:
            c.request("GET", "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s"
                      % (path, left, rv), headers=dict(env.auth))
            r = c.getresponse()
            if r.status != 200:
                r.read()
                continue
            for line in r:
                ev = json.loads(line)
                t, o = ev.get("type"), ev.get("object") or {}
                if t == "ERROR":
                    break          # expired: list again
                if t not in ("ADDED", "MODIFIED", "DELETED"):
                    continue       # BOOKMARK
                name = o["metadata"]["name"]
                was = state.pop(name, False)
                now = t != "DELETED" and bool(pred(o))
                if t != "DELETED":
                    state[name] = now
                count += int(now) - int(was)
                if count >= n:
                    return True, count
                if time.monotonic() >= end:
                    break
        except (OSError, socket.timeout, http.client.HTTPException, ValueError):
            pass                   # a broken stream: list again
        finally:
            c.close()
    return False, count

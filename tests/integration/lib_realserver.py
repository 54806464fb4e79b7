# realserver.py - the Python tests' side of RAYOP_SERVER=real: a real control plane from
# tools/realk8s.sh (etcd, kube-apiserver, controller-manager, scheduler, kwok nodes; built by
# `make peers`) in a private dir, with the URL, token and CA a test needs to talk to it.
# Not a test itself. lib_real.sh / real_*.sh decide whether the real tier runs at all.
import json
import os
import ssl
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REALK8S = os.path.join(ROOT, "tools", "realk8s.sh")


def wanted():
    """True when the test should run against the real control plane instead of kubesim."""
    return os.environ.get("RAYOP_SERVER") == "real"


class RealK8s:
    """tools/realk8s.sh start DIR; .url, .kubeconfig, .token, .ca, .ssl (an SSLContext that
    verifies the server with the private CA), .audit (the Pod-create audit log); stop()."""

    def __init__(self, work, nodes=3):
        self.dir = os.path.join(work, "realk8s")
        self.log = os.path.join(work, "realk8s.out")
        with open(self.log, "wb") as out:
            rc = subprocess.call([REALK8S, "start", self.dir, "--nodes", str(nodes)],
                                 stdout=out, stderr=subprocess.STDOUT)
        if rc != 0:
            with open(self.log, errors="replace") as f:
                tail = f.read()[-2000:]
            subprocess.call([REALK8S, "stop", self.dir], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
            raise RuntimeError("tools/realk8s.sh start failed:\n" + tail)
        with open(os.path.join(self.dir, "url")) as f:
            self.url = f.read().strip()
        with open(os.path.join(self.dir, "pki", "tokens.csv")) as f:
            self.token = f.read().split(",")[0]
        with open(os.path.join(self.dir, "start-ms")) as f:
            self.start_ms = int(f.read().strip() or 0)
        self.ca = os.path.join(self.dir, "pki", "ca.crt")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.audit = os.path.join(self.dir, "audit.log")
        self.ssl = ssl.create_default_context(cafile=self.ca)

    def headers(self):
        return {"Authorization": "Bearer " + self.token}

    def pod_creates(self, agent="rayop"):
        """Pod creates answered 201 whose user agent contains agent, as kubesim's request log
        entries ({verb, resource, code, user_agent, name, namespace})."""
        out = []
        try:
            with open(self.audit) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    ref = e.get("objectRef") or {}
                    code = (e.get("responseStatus") or {}).get("code")
                    if (e.get("verb") == "create" and ref.get("resource") == "pods" and not ref.get("subresource")
                            and code == 201 and agent in e.get("userAgent", "")):
                        out.append({"verb": "create", "resource": "pods", "code": code,
                                    "user_agent": e.get("userAgent"), "name": ref.get("name"),
                                    "namespace": ref.get("namespace")})
        except OSError:
            pass
        return out

    def stop(self):
        subprocess.call([REALK8S, "stop", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

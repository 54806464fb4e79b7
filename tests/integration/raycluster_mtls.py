#!/usr/bin/python3
# raycluster_mtls.py - tlsOptions.enabled with `--feature-gates RayClusterMTLS=true`, against
# kubesim and its tiny cert-manager (kubesim/cluster/certmgr.c issues the Secrets):
#  * without the cert-manager API the cluster is refused with KubeRay's message, no Pods;
#  * with it (the cert-manager CRDs installed, a new controller process): KubeRay's two
#    Issuers and three Certificates, owned by the cluster; kubesim issues their Secrets;
#    each Secret gets an owner reference to its Certificate (MTLSPKIReady);
#  * the Pods come only after the certificates: each has the ray-tls volume, the TLS env and
#    the wait-for-tls-ip-san init container first;
#  * the head Certificate is updated with the head Pod's IP (MTLSCertificatesUpdated), and the
#    certificate kubesim then issues carries that IP SAN, signed by the cluster's CA;
#  * kubesim's kubelet holds a Pod with wait-for-tls-ip-san Pending until its certificate
#    lists the Pod's IP;
#  * deleting the RayCluster garbage-collects Issuers, Certificates and their Secrets.
# deadline: 150
import glob
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "raycluster"))
import rclib  # noqa: E402
from rclib import check, wait_until  # noqa: E402

NS = "default"
CM = "/apis/cert-manager.io/v1/namespaces/%s/" % NS
SEC = "/api/v1/namespaces/%s/secrets/" % NS


def b64pem(env, secret, key):
    import base64
    s = env.get(SEC + secret) or {}
    v = s.get("data", {}).get(key)
    return base64.b64decode(v).decode() if v else ""


def openssl_text(pem):
    p = subprocess.run(["openssl", "x509", "-noout", "-text"], input=pem.encode(),
                       capture_output=True, timeout=30)
    return p.stdout.decode()


def main():
    env = rclib.Env(["--nodes", "2", "--pod-start-ms", "100", "--pod-ready-ms", "150",
                     "--pod-stop-ms", "100"], name="rc-mtls")
    env.start_watcher()
    gates = ["--feature-gates", "RayClusterMTLS=true", "--enable-leader-election", "false"]
    env.start_controller(extra=gates)
    rc = rclib.load_sample("ray-cluster.mtls.yaml")
    name = rc["metadata"]["name"]
    nocm = dict(rc, metadata={"name": "nocm"})
    env.req("POST", env.rc_path(NS), nocm)
    check("no cert-manager API: refused with KubeRay's message, no Pods",
          wait_until(15, lambda: any("nocm: tlsOptions requires cert-manager, but cert-manager is not "
                                     "installed" in (e.get("note") or "")
                                     for e in env.events(NS, "InvalidRayClusterSpec")))
          and env.pods(NS, "nocm") == [])
    p = env.procs["ctl"]
    p.terminate()
    p.wait(timeout=30)
    env.req("DELETE", env.rc_path(NS, "nocm"))

    for f in sorted(glob.glob(os.path.join(rclib.SHARED, "crds", "cert-manager", "*.yaml"))):
        with open(f) as fh:
            env.req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", yaml.safe_load(fh))
    wait_until(20, lambda: env.req("GET", CM + "certificates")[0] == 200)
    env.start_controller(name="ctl2", extra=gates)
    env.req("POST", env.rc_path(NS), rc)
    objs = {"Issuer": ["ray-selfsigned-issuer-" + name, "ray-ca-issuer-" + name],
            "Certificate": ["ray-ca-certificate-" + name, "ray-head-cert-" + name,
                            "ray-worker-cert-" + name]}

    def path(kind, n):
        return CM + ("issuers/" if kind == "Issuer" else "certificates/") + n
    check("two Issuers and three Certificates, owned by the cluster",
          wait_until(20, lambda: all((env.get(path(k, n)) or {}).get("metadata", {})
                                     .get("ownerReferences", [{}])[0].get("kind") == "RayCluster"
                                     for k, ns_ in objs.items() for n in ns_)),
          env.items(CM + "certificates"))
    uid = env.get(env.rc_path(NS, name))["metadata"]["uid"]
    ca_secret = "%s-ca-secret-%s" % (name, uid[:8])
    secrets = [ca_secret, "ray-head-secret-" + name, "ray-worker-secret-" + name]
    check("kubesim issues the three Secrets (tls.crt, tls.key, ca.crt), Certificates Ready",
          wait_until(20, lambda: all(set((env.get(SEC + s) or {}).get("data", {})) >=
                                     {"tls.crt", "tls.key", "ca.crt"} for s in secrets)))
    check("each Secret is owned by its Certificate",
          wait_until(15, lambda: all(any(r.get("kind") == "Certificate"
                                         for r in (env.get(SEC + s) or {}).get("metadata", {})
                                         .get("ownerReferences", [])) for s in secrets)),
          [(env.get(SEC + s) or {}).get("metadata", {}).get("ownerReferences") for s in secrets])
    check("MTLSPKIReady Event", wait_until(15, lambda: env.events(NS, "MTLSPKIReady") != []))

    def head():
        return next((x for x in env.pods(NS, name)
                     if x["metadata"].get("labels", {}).get("ray.io/node-type") == "head"), None)
    h = wait_until(20, head) or {"spec": {"containers": [{}]}}
    envs = {e["name"]: e.get("value") for e in h["spec"]["containers"][0].get("env", [])}
    check("the head Pod: ray-tls volume, TLS env, wait-for-tls-ip-san first",
          any(vol.get("name") == "ray-tls" and
              vol.get("secret", {}).get("secretName") == "ray-head-secret-" + name
              for vol in h["spec"].get("volumes", [])) and
          envs.get("RAY_USE_TLS") == "1" and
          (h["spec"].get("initContainers") or [{}])[0].get("name") == "wait-for-tls-ip-san",
          h["spec"])

    # an Issuer kubesim cannot serve holds the certificates back: no Pods, MTLSCertsNotReady
    stuck = dict(rc, metadata={"name": "stuck"})
    env.req("POST", CM + "issuers", {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                                     "metadata": {"name": "ray-ca-issuer-stuck"},
                                     "spec": {"vault": {"server": "https://vault", "path": "p",
                                                        "auth": {"tokenSecretRef": {"name": "t", "key": "k"}}}}})
    env.req("POST", env.rc_path(NS), stuck)
    check("certificates not ready: MTLSCertsNotReady, and no Pod is created",
          wait_until(20, lambda: env.get(path("Certificate", "ray-head-cert-stuck")) and
                     any(e.get("regarding", {}).get("name") == "stuck"
                         for e in env.events(NS, "MTLSCertsNotReady")))
          and env.pods(NS, "stuck") == [])
    env.req("DELETE", env.rc_path(NS, "stuck"))

    def head_ip():
        x = head()
        return (x or {}).get("status", {}).get("podIP")
    ip = wait_until(20, head_ip)
    check("the head Certificate is updated with the head Pod's IP (MTLSCertificatesUpdated)",
          ip and wait_until(20, lambda: ip in (env.get(path("Certificate", "ray-head-cert-" + name))
                                               or {}).get("spec", {}).get("ipAddresses", []))
          and wait_until(5, lambda: env.events(NS, "MTLSCertificatesUpdated") != []), ip)
    check("the reissued head certificate has that IP SAN (what wait-for-tls-ip-san waits for)",
          wait_until(20, lambda: ("IP Address:%s" % ip) in openssl_text(b64pem(env, secrets[1], "tls.crt"))),
          openssl_text(b64pem(env, secrets[1], "tls.crt"))[-600:])
    cafile = os.path.join(env.work, "ca.pem")
    leaf = os.path.join(env.work, "leaf.pem")
    with open(cafile, "w") as f:
        f.write(b64pem(env, secrets[1], "ca.crt"))
    with open(leaf, "w") as f:
        f.write(b64pem(env, secrets[1], "tls.crt"))
    v = subprocess.run(["openssl", "verify", "-CAfile", cafile, leaf], capture_output=True, timeout=30)
    check("it is signed by the cluster's CA (ca.crt)", v.returncode == 0 and
          b64pem(env, secrets[1], "ca.crt") == b64pem(env, ca_secret, "tls.crt"),
          v.stdout.decode() + v.stderr.decode())

    # kubesim's wait-for-tls-ip-san: a Pod waits, Pending with its IP, until its certificate
    # lists that IP
    env.req("POST", CM + "issuers", {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                                     "metadata": {"name": "hand"}, "spec": {"selfSigned": {}}})
    cert = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "hand"},
            "spec": {"secretName": "hand-tls", "dnsNames": ["localhost"],
                     "issuerRef": {"name": "hand", "kind": "Issuer"}}}
    env.req("POST", CM + "certificates", cert)
    wait_until(20, lambda: env.get(SEC + "hand-tls"))
    env.req("POST", "/api/v1/namespaces/%s/pods" % NS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hand"},
        "spec": {"initContainers": [{"name": "wait-for-tls-ip-san", "image": "ray",
                                     "volumeMounts": [{"name": "ray-tls", "mountPath": "/etc/ray/tls"}]}],
                 "containers": [{"name": "c", "image": "ray"}],
                 "volumes": [{"name": "ray-tls", "secret": {"secretName": "hand-tls"}}]}})

    def hand():
        return (env.get("/api/v1/namespaces/%s/pods/hand" % NS) or {}).get("status", {})
    hip = wait_until(20, lambda: hand().get("podIP"))
    check("a Pod whose certificate lacks its IP stays Pending (not Initialized), with its IP",
          hip and hand().get("phase") == "Pending" and
          any(c.get("type") == "Initialized" and c.get("status") == "False"
              for c in hand().get("conditions", [])), hand())
    env.patch(CM + "certificates/hand", {"spec": {"ipAddresses": [hip]}})
    check("once the certificate is reissued with that IP, it starts",
          wait_until(20, lambda: hand().get("phase") == "Running"), hand())

    env.req("DELETE", env.rc_path(NS, name))
    check("deleting the RayCluster collects Issuers, Certificates and their Secrets",
          wait_until(30, lambda: all(env.get(path(k, n)) is None for k, ns_ in objs.items() for n in ns_)
                     and all(env.get(SEC + s) is None for s in secrets)),
          [s for s in secrets if env.get(SEC + s)])
    return rclib.exit_code()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# submitter_pod.py - prints a submitter Pod (JSON) whose container runs the command
# KubeRay v1.7 builds (ray-operator/controllers/ray/common/job.go BuildJobSubmitCommand):
# the same word list joined with spaces, under ["/bin/bash", "-ce", "--"].
#   submitter_pod.py NAME ADDRESS JOB_ID ENTRYPOINT MODE [RUNTIME_ENV_JSON]
# MODE k8sjob: the status guard + `submit --no-wait` + `ray job logs --follow` (K8sJobMode);
# MODE wait: `ray job submit` that waits for the job (the SidecarMode shape);
# MODE wget: the same, waiting for the dashboard the way KubeRay v1.5's SidecarMode does
# (BaseWgetHealthCommand: `wget --tries 1 -T 10 -q -O- URL | grep success`).
# A helper, not a test (tests/run.sh runs only tests/integration/*.sh and *.py):
# kubesim_ray.sh calls it.
import json
import sys

name, address, job_id, entrypoint, mode = sys.argv[1:6]
runtime_env = sys.argv[6] if len(sys.argv) > 6 else ""
if not address.startswith("http://"):
    address = "http://" + address
health = ('python -c "import urllib.request; r=urllib.request.urlopen(\'%s\', timeout=%d); '
          'exit(0 if b\'success\' in r.read() else 1)"' % (address + "/api/gcs_healthz", 10))
if mode == "wget":
    health = "wget --tries 1 -T %d -q -O- %s | grep success" % (10, address + "/api/gcs_healthz")
cmd = ["until", health, ">/dev/null", "2>&1", ";", "do", "echo",
       json.dumps("Waiting for Ray Dashboard GCS to become healthy at " + address + " ..."),
       ";", "sleep", "2", ";", "done", ";"]
guard = mode == "k8sjob"
if guard:
    cmd += ["if", "!", "ray", "job", "status", "--address", address, job_id, ">/dev/null", "2>&1",
            ";", "then"]
cmd += ["ray", "job", "submit", "--address", address]
if guard:
    cmd.append("--no-wait")
if runtime_env:
    cmd += ["--runtime-env-json", json.dumps(runtime_env)]
cmd += ["--metadata-json", json.dumps(json.dumps({"owner": "kubesim-test"}, separators=(",", ":")))]
cmd += ["--submission-id", job_id, "--entrypoint-num-cpus", "%f" % 1.0]
cmd += ["--", entrypoint.strip(), ";"]
if guard:
    cmd += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
pod = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": name, "labels": {"job-name": name}},
    "spec": {
        "restartPolicy": "Never",
        "containers": [{
            "name": "ray-job-submitter", "image": "rayproject/ray:2.52.0",
            "command": ["/bin/bash", "-ce", "--"], "args": [" ".join(cmd)],
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"},
                    {"name": "RAY_DASHBOARD_ADDRESS", "value": address[len("http://"):]},
                    {"name": "RAY_JOB_SUBMISSION_ID", "value": job_id}],
        }],
    },
}
print(json.dumps(pod))

#!/bin/bash
# deadline: 90
# kubesim_ray.sh - kubesim's simulated Ray runtime (docs/kubesim-ray.md) through the API
# server's service proxy, driven with curl: a hand-made head Pod + Service on a 2-node
# kubesim yields a dashboard; jobs go PENDING -> RUNNING -> SUCCEEDED, FAILED
# (KUBESIM_JOB_EXIT=1) and STOPPED; list/get/logs/delete and the duplicate-submission
# error; a Serve application deploys and is turned unhealthy; proxy errors (unknown
# port, non-dashboard port, no ready endpoint); once the head Pod is deleted the
# proxy answers 503 and a new head Pod starts with no jobs. Submitter Pods running
# KubeRay's command (tests/integration/ray/submitter_pod.py) exit 0/1 with the job's outcome,
# their output in `kubectl logs` (-f, --tail).
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d /tmp/kubesim-ray.XXXXXX)
_LIB_DIRS="$_LIB_DIRS $T"
NS=/api/v1/namespaces/default
PX=$NS/services/rc-head-svc:dashboard/proxy

start_kubesim --nodes 2 --pod-start-ms 100 --pod-ready-ms 100 || exit 1
ok "kubesim started at $KUBESIM_URL"

head_pod() {
    cat <<EOF
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"rc-head","namespace":"default",
 "labels":{"ray.io/node-type":"head","ray.io/cluster":"rc"}},
 "spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0",
   "ports":[{"containerPort":6379,"name":"gcs-server"},{"containerPort":8265,"name":"dashboard"},
            {"containerPort":8000,"name":"serve"}]}]}}
EOF
}
post() { kcurl -X POST -H 'Content-Type: application/json' -d "$2" "$1"; }

head_pod >"$T/head.json"
check "head Pod created" [ "$(kcode -X POST -H 'Content-Type: application/json' \
    -d @"$T/head.json" $NS/pods)" = 201 ]
post $NS/services '{"apiVersion":"v1","kind":"Service","metadata":{"name":"rc-head-svc"},
  "spec":{"selector":{"ray.io/node-type":"head","ray.io/cluster":"rc"},
  "ports":[{"name":"gcs-server","port":6379,"targetPort":6379},
           {"name":"dashboard","port":8265,"targetPort":"dashboard"},
           {"name":"serve","port":8000,"targetPort":8000}]}}' >/dev/null
post $NS/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"rc-worker",
  "labels":{"ray.io/node-type":"worker","ray.io/cluster":"rc"}},
  "spec":{"containers":[{"name":"ray-worker","image":"rayproject/ray:2.52.0"}]}}' >/dev/null

# Submitter Pods start now, so they run while the dashboard is exercised (checked below).
KUBECTL=${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG" --cache-dir "$T/kcache" --request-timeout 20s "$@"; }
mkpod() { python3 "$(dirname "$0")/ray/submitter_pod.py" "$@"; }
phase_is() { [ "$(kcurl $NS/pods/$1 | json_get status.phase)" = "$2" ]; }
exit_code() { kcurl $NS/pods/$1 | json_get status.containerStatuses.0.state.terminated.exitCode; }
mkpod sub-ok rc-head-svc.default.svc.cluster.local:8265 rayjob-ok \
    "python /home/ray/samples/sample_code.py" k8sjob '{"env_vars":{"KUBESIM_JOB_SECONDS":"8"}}' >"$T/sub-ok.json"
mkpod sub-bad rc-head-svc:8265 rayjob-bad "python bad.py" wait \
    '{"env_vars":{"KUBESIM_JOB_SECONDS":"1","KUBESIM_JOB_EXIT":"1"}}' >"$T/sub-bad.json"
# KubeRay v1.5's wait loop: wget | grep, once against the cluster, once against nothing
mkpod sub-wget rc-head-svc:8265 rayjob-wget "python w.py" wget \
    '{"env_vars":{"KUBESIM_JOB_SECONDS":"1"}}' >"$T/sub-wget.json"
mkpod sub-wget-nope nope-svc:8265 rayjob-nope "python w.py" wget >"$T/sub-wget-nope.json"
post $NS/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sub-nocluster"},
  "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"rayproject/ray:2.52.0",
  "command":["ray","job","submit","--address","http://nope-svc:8265","--","python","x.py"]}]}}' >/dev/null
# KubeRay's light-weight submitter (sample ray-job.light-weight-submitter.yaml; the address and
# submission id come from the env KubeRay injects)
post $NS/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sub-lw"},
  "spec":{"restartPolicy":"Never","containers":[{"name":"my-custom-rayjob-submitter",
  "image":"quay.io/kuberay/submitter:v1.5.1","command":["/submitter"],
  "args":["--runtime-env-json","{\"pip\":[\"requests==2.26.0\"],\"env_vars\":{\"KUBESIM_JOB_SECONDS\":\"1\"}}",
          "--","python","/home/ray/samples/sample_code.py"],
  "env":[{"name":"RAY_DASHBOARD_ADDRESS","value":"rc-head-svc.default.svc.cluster.local:8265"},
         {"name":"RAY_JOB_SUBMISSION_ID","value":"rayjob-lw"}]}]}}' >/dev/null
for p in sub-ok sub-bad sub-wget sub-wget-nope; do
    check "submitter Pod $p created" [ "$(kcode -X POST -H 'Content-Type: application/json' \
        -d @"$T/$p.json" $NS/pods)" = 201 ]
done
dashboard_up() { [ "$(kcurl $PX/api/gcs_healthz)" = success ]; }
wait_until "the dashboard answers through the proxy once the head Pod is Ready" 15 dashboard_up &&
    ok "the dashboard answers through the proxy once the head Pod is Ready"
kcurl $PX/api/version >"$T/ver"
check "/api/version has version and ray_version" \
    [ "$(json_get version <"$T/ver")" = 4 -a -n "$(json_get ray_version <"$T/ver")" ]
check "the proxy also takes http:NAME:PORT (port by number)" \
    [ "$(kcurl $NS/services/http:rc-head-svc:8265/proxy/api/local_raylet_healthz)" = success ]
kcurl $NS/services/rc-head-svc:9999/proxy/api/version >"$T/e1"
check "an unknown port number is 503 no service port" \
    grep -q 'no service port 9999 found for service \\"rc-head-svc\\"' "$T/e1"
kcurl $NS/services/rc-head-svc:gcs-server/proxy/api/version >"$T/e2"
check "a port that is not the dashboard is a refused connection" \
    grep -q 'error trying to reach service: dial tcp .*:6379: connect: connection refused' "$T/e2"
check "a missing Service is 404" [ "$(kcode $NS/services/nope:8265/proxy/api/version)" = 404 ]
check "an unknown dashboard path is aiohttp's 404" [ "$(kcurl $PX/api/nope)" = "404: Not Found" ]

# ---- jobs ------------------------------------------------------------------------------
post $PX/api/jobs/ '{"entrypoint":"python ok.py","submission_id":"job-ok",
  "runtime_env":{"env_vars":{"KUBESIM_JOB_SECONDS":"3","KUBESIM_JOB_PENDING_SECONDS":"3"}},
  "metadata":{"owner":"test"}}' >"$T/s1"
check "submit answers job_id and submission_id" \
    [ "$(json_get submission_id <"$T/s1")" = job-ok -a "$(json_get job_id <"$T/s1")" = job-ok ]
check "a new job is PENDING" [ "$(kcurl $PX/api/jobs/job-ok | json_get status)" = PENDING ]
post $PX/api/jobs/ '{"entrypoint":"python bad.py","submission_id":"job-bad",
  "runtime_env":{"env_vars":{"KUBESIM_JOB_SECONDS":"1","KUBESIM_JOB_EXIT":"1"}}}' >/dev/null
post $PX/api/jobs/ '{"entrypoint":"python long.py","submission_id":"job-long",
  "metadata":{"KUBESIM_JOB_SECONDS":"600"}}' >/dev/null
st() { kcurl $PX/api/jobs/$1 | json_get status; }
st_is() { [ "$(st "$1")" = "$2" ]; }
code=$(kcode -X POST -d '{"entrypoint":"x","submission_id":"job-ok"}' $PX/api/jobs/)
kcurl -X POST -d '{"entrypoint":"x","submission_id":"job-ok"}' $PX/api/jobs/ >"$T/dup"
check "a duplicate submission_id is 500 'Please use a different submission_id'" \
    [ "$code" = 500 ] && grep -q "Job with submission_id job-ok already exists. Please use a different submission_id" "$T/dup"
check "a body without entrypoint is 400" [ "$(kcode -X POST -d '{}' $PX/api/jobs/)" = 400 ]
wait_until "job-ok goes RUNNING" 10 st_is job-ok RUNNING && ok "job-ok goes RUNNING"
wait_until "job-ok goes SUCCEEDED" 15 st_is job-ok SUCCEEDED && ok "job-ok goes SUCCEEDED"
kcurl $PX/api/jobs/job-ok >"$T/g1"
check "a finished job has end_time, driver_exit_code 0 and its metadata" \
    [ -n "$(json_get end_time <"$T/g1")" -a "$(json_get driver_exit_code <"$T/g1")" = 0 \
      -a "$(json_get metadata.owner <"$T/g1")" = test -a "$(json_get type <"$T/g1")" = SUBMISSION ]
wait_until "job-bad goes FAILED" 10 st_is job-bad FAILED && ok "job-bad goes FAILED"
kcurl $PX/api/jobs/job-bad >"$T/g2"
check "a failed job has error_type and the exit code in its message" \
    [ "$(json_get error_type <"$T/g2")" = JOB_ENTRYPOINT_COMMAND_ERROR ] &&
    json_get message <"$T/g2" | grep -q 'failed with exit code 1'
kcurl $PX/api/jobs/job-ok/logs >"$T/l1"
check "logs name the entrypoint" grep -q 'running entrypoint for job job-ok: python ok.py' "$T/l1"
wait_until "job-long goes RUNNING" 10 st_is job-long RUNNING
check "stop answers stopped=true" [ "$(kcurl -X POST $PX/api/jobs/job-long/stop | json_get stopped)" = true ]
check "the stopped job is STOPPED" [ "$(st job-long)" = STOPPED ]
check "stopping a finished job answers stopped=false" \
    [ "$(kcurl -X POST $PX/api/jobs/job-ok/stop | json_get stopped)" = false ]
kcurl $PX/api/jobs/ >"$T/list"
ids() { grep -o '"submission_id":"job-[a-z]*"' "$T/list" | cut -d'"' -f4 | tr '\n' ' '; }
check "list has the three jobs in submission order" [ "$(ids)" = "job-ok job-bad job-long " ]
check "delete of a finished job answers deleted=true" \
    [ "$(kcurl -X DELETE $PX/api/jobs/job-ok | json_get deleted)" = true ]
check "a deleted job is 404 'Job job-ok does not exist'" \
    [ "$(kcode $PX/api/jobs/job-ok)" = 404 -a "$(kcurl $PX/api/jobs/job-ok)" = "Job job-ok does not exist" ]

# ---- Serve -------------------------------------------------------------------------------
SV=$NS/services/rc-head-svc:serve/proxy
kcurl $SV/-/healthz >"$T/sv0"
check "Serve's HTTP port refuses connections before Serve runs" grep -q 'connection refused' "$T/sv0"
check "PUT of a Serve config is 200" [ "$(kcode -X PUT -H 'Content-Type: application/json' -d '
  {"applications":[{"name":"fruit","import_path":"fruit.deployment_graph","route_prefix":"/fruit",
    "deployments":[{"name":"MangoStand","num_replicas":1},{"name":"FruitMarket","num_replicas":2}]}]}' \
    $PX/api/serve/applications/)" = 200 ]
app() { kcurl "$PX/api/serve/applications/?api_type=declarative" | json_get "applications.fruit.$1"; }
app_running() { [ "$(app status)" = RUNNING ]; }
check "the application is DEPLOYING first" [ "$(app status)" = DEPLOYING ]
wait_until "the application goes RUNNING" 10 app_running &&
    ok "the application goes RUNNING"
check "its deployments are HEALTHY" [ "$(app deployments.FruitMarket.status)" = HEALTHY ]
check "/kubesim/ray/ shows the application RUNNING with its config" \
    [ "$(kcurl /kubesim/ray/ | json_get 0.appStates.fruit.status) $(kcurl /kubesim/ray/ | json_get 0.appStates.fruit.config.route_prefix)" = "RUNNING /fruit" ]
check "the same config again is 200 and counted as a PUT that changed nothing" [ "$(kcode -X PUT -d '
  {"applications":[{"name":"fruit","import_path":"fruit.deployment_graph","route_prefix":"/fruit",
    "deployments":[{"name":"MangoStand","num_replicas":1},{"name":"FruitMarket","num_replicas":2}]}]}' \
    $PX/api/serve/applications/) $(kcurl /kubesim/ray/ | json_get 0.servePuts) $(kcurl /kubesim/ray/ | json_get 0.servePutsUnchanged)" = "200 2 1" ]
check "FruitMarket runs 2 replicas" [ "$(app deployments.FruitMarket.replicas.1.state)" = RUNNING ]
check "Serve's proxy answers /-/healthz through the service proxy" [ "$(kcurl $SV/-/healthz)" = success ]
check "/-/routes maps /fruit to fruit" [ "$(kcurl $SV/-/routes | json_get /fruit)" = fruit ]
check "a request under /fruit reaches the fruit application" \
    sh -c "curl -sS '$KUBESIM_URL$SV/fruit/mango' | grep -q \"served by application 'fruit'\""
check "an unrouted path is 404" [ "$(kcode $SV/nothing)" = 404 ]
check "the admin route turns the application UNHEALTHY" [ "$(kcode -X POST \
    -d '{"status":"UNHEALTHY","message":"replica died"}' /kubesim/ray/default/rc/applications/fruit)" = 200 ]
check "the application is UNHEALTHY with the message" \
    [ "$(app status)" = UNHEALTHY -a "$(app message)" = "replica died" ]
check "a config without applications is 400" \
    [ "$(kcode -X PUT -d '{"foo":1}' $PX/api/serve/applications/)" = 400 ]

# ---- submitter Pods (the kubelet plays KubeRay's command) ----------------------------------
check "kubectl logs -f follows the K8sJobMode submitter until it exits" \
    sh -c "timeout 30 $KUBECTL --kubeconfig '$KUBECONFIG' --cache-dir '$T/kcache' logs -f sub-ok >'$T/follow.log'"
check "the followed log ends with the job's outcome" grep -q "Job 'rayjob-ok' succeeded" "$T/follow.log"
wait_until "the K8sJobMode submitter Pod Succeeded" 20 phase_is sub-ok Succeeded &&
    ok "the K8sJobMode submitter Pod Succeeded"
check "its container exited 0" [ "$(exit_code sub-ok)" = 0 ]
kcurl $NS/pods/sub-ok/log >"$T/sub-ok.log"
check "pods/log has the job's output, naming the entrypoint" \
    grep -q "running entrypoint for job rayjob-ok: python /home/ray/samples/sample_code.py" "$T/sub-ok.log"
check "pods/log has the submit banner of ray job submit --no-wait" \
    grep -q "Job 'rayjob-ok' submitted successfully" "$T/sub-ok.log"
# a retried submitter (the batch Job's next Pod) finds the job through `ray job status` and
# only follows it
mkpod sub-again rc-head-svc.default.svc.cluster.local:8265 rayjob-ok \
    "python /home/ray/samples/sample_code.py" k8sjob >"$T/sub-again.json"
kcode -X POST -H 'Content-Type: application/json' -d @"$T/sub-again.json" $NS/pods >/dev/null
wait_until "a retried K8sJobMode submitter of a finished job Succeeded" 20 phase_is sub-again Succeeded &&
    ok "a retried K8sJobMode submitter of a finished job Succeeded"
kcurl $NS/pods/sub-again/log >"$T/sub-again.log"
check "... without submitting again (the ray job status guard), following the job's logs" \
    sh -c "! grep -q 'submitted successfully' '$T/sub-again.log' && grep -q \"Job 'rayjob-ok' succeeded\" '$T/sub-again.log'"
check "kubectl logs --tail=3 gives three lines" [ "$(kc logs --tail=3 sub-ok | wc -l)" = 3 ]
kcurl $PX/api/jobs/rayjob-ok >"$T/rj"
check "the job it submitted SUCCEEDED with the --metadata-json and --runtime-env-json given" \
    [ "$(json_get status <"$T/rj")" = SUCCEEDED -a "$(json_get metadata.owner <"$T/rj")" = kubesim-test \
      -a "$(json_get runtime_env.env_vars.KUBESIM_JOB_SECONDS <"$T/rj")" = 8 ]
wait_until "a submitter of a failing job (ray job submit, waiting) Failed" 20 phase_is sub-bad Failed &&
    ok "a submitter of a failing job (ray job submit, waiting) Failed"
check "its container exited 1" [ "$(exit_code sub-bad)" = 1 ]
check "its log says the job failed" sh -c "curl -sS '$KUBESIM_URL$NS/pods/sub-bad/log' | \
    grep -q \"Job 'rayjob-bad' failed\""
wait_until "the v1.5 sidecar-shaped submitter (wget | grep wait loop) Succeeded" 20 \
    phase_is sub-wget Succeeded && ok "the v1.5 sidecar-shaped submitter (wget | grep wait loop) Succeeded"
kcurl $NS/pods/sub-wget/log >"$T/sub-wget.log"
check "... it submitted the job once the pipeline matched, and waited for it" \
    sh -c "grep -q \"Job 'rayjob-wget' succeeded\" '$T/sub-wget.log' && ! grep -q 'command not found' '$T/sub-wget.log'"
waiting_twice() { [ "$(kcurl $NS/pods/sub-wget-nope/log | grep -c 'Waiting for Ray Dashboard')" -ge 2 ]; }
wait_until "a wget | grep loop against no dashboard keeps waiting" 20 waiting_twice &&
    ok "a wget | grep loop against no dashboard keeps waiting"
check "... its Pod still Running" phase_is sub-wget-nope Running
wait_until "the light-weight submitter Pod Succeeded" 20 phase_is sub-lw Succeeded &&
    ok "the light-weight submitter Pod Succeeded"
kcurl $NS/pods/sub-lw/log >"$T/sub-lw.log"
check "its log has the light-weight submitter's SUCC lines and the job's output" \
    [ "$(grep -c "^SUCC -- Job 'rayjob-lw' su" "$T/sub-lw.log")" = 2 ] &&
    grep -q 'running entrypoint for job rayjob-lw: python /home/ray/samples/sample_code.py' "$T/sub-lw.log"
wait_until "a submitter whose cluster does not exist Failed" 20 phase_is sub-nocluster Failed &&
    ok "a submitter whose cluster does not exist Failed"
check "... with the CLI's ConnectionError in its log" sh -c "curl -sS '$KUBESIM_URL$NS/pods/sub-nocluster/log' | \
    grep -q 'ConnectionError: Failed to connect to Ray at address: http://nope-svc:8265.'"
check "pods/log of a Ray head Pod is a short ray start log" sh -c "$KUBECTL --kubeconfig \
    '$KUBECONFIG' --cache-dir '$T/kcache' logs rc-head | grep -q 'Ray runtime started.'"
check "pods/log of an unknown container is 400" [ "$(kcode "$NS/pods/rc-head/log?container=nope")" = 400 ]

# ---- the head Pod goes ---------------------------------------------------------------------
check "head Pod deleted" [ "$(kcode -X DELETE "$NS/pods/rc-head?gracePeriodSeconds=0")" = 200 ]
gone() { kcurl $PX/api/jobs/ | grep -q 'no endpoints available for service \\"rc-head-svc\\"'; }
wait_until "the proxy answers 503 no endpoints once the head Pod is deleted" 10 gone &&
    ok "the proxy answers 503 no endpoints once the head Pod is deleted"
check "the cluster is gone from /kubesim/ray/" [ "$(kcurl /kubesim/ray/)" = "[]" ]
check "a new head Pod created" [ "$(kcode -X POST -H 'Content-Type: application/json' \
    -d @"$T/head.json" $NS/pods)" = 201 ]
wait_until "the new head's dashboard answers" 15 dashboard_up
check "the new cluster has no jobs (they were lost with the head)" [ "$(kcurl $PX/api/jobs/)" = "[]" ]

exit "$(lib_failures)"

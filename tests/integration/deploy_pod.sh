#!/bin/bash
# deadline: 200
# deploy_pod.sh - rayop deployed as its Pod and run for real: kubesim --tls --run-image
# rayop=<this tree> runs the Pod's containers as processes (kubesim/runtime), from the
# kustomize output applied with kubectl (an overlay of deploy/kustomize/base that only appends
# flags: --use-kubernetes-proxy, a smaller cache, a 6 s lease). Checks:
#  - the Deployment's Pod Running with every container Ready; in-cluster config over TLS
#    (from helm template's output where helm is built, else from the kustomize base)
#  - Service routing: the metrics Service through the API server's service proxy, the pod
#    proxy, and the Service's ClusterIP from inside the Pod (its service-link variable)
#  - the demo RayJob SUCCEEDED, driven by the operator in the Pod
#  - kill -9 of the rayjob container's process: only it restarts (restartCount 1, the others
#    0), a second RayJob completes, `kubectl logs -c rayjob --previous` shows the killed run
#  - kill -9 of the watcher: it restarts, resumes its watches without a LIST (request log),
#    and a RayJob created while it was down completes
#  - scaled to 2: the kinds' Leases are held by both Pods; the Pod holding the RayJob Lease
#    deleted: the other Pod takes it (the time is reported) and a RayJob created
#    meanwhile completes once
#  - kubesim's exit leaves no process, mount or directory of the Pods behind
# Needs root (namespaces); reported as a SKIP otherwise. kubesim_runtime.sh covers env,
# volumes, exec/tcp probes, restartPolicy Never, logs -f and the non-root failure.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
    echo "skip - deploy_pod.sh (kubesim --run-image needs root for network and mount namespaces)"
    exit 0
fi
[ -x "$LIB_ROOT/bin/rayop" ] || { not_ok "bin/rayop is built"; exit 1; }
NS=rayop-system
LEASE_S=6
W=$(mktemp -d /tmp/deploy-pod.XXXXXX); _LIB_DIRS="$_LIB_DIRS $W"
keep_logs() {
    if [ "$(lib_failures)" -gt 0 ] && [ -n "$KUBESIM_PID" ]; then
        mkdir -p /tmp/deploy-pod-failed.$$
        for p in $(kubectl get pods -n $NS -o name 2>/dev/null); do
            for c in watcher raycluster rayjob rayservice; do
                kubectl logs -n $NS "$p" -c $c > "/tmp/deploy-pod-failed.$$/${p#pod/}-$c.log" 2>&1
            done
        done
        cp "$KUBESIM_STDERR" /tmp/deploy-pod-failed.$$/ 2>/dev/null
        echo "# logs kept in /tmp/deploy-pod-failed.$$"
    fi
}
trap 'keep_logs; _lib_cleanup' EXIT

start_kubesim --tls --run-image "rayop=$LIB_ROOT" --nodes 2 || exit 1
RTDIR=$(grep -o '"dir":"/tmp/kubesim-runtime[^"]*"' "$KUBESIM_STDERR" | head -1 | cut -d'"' -f4)
kubectl create -f "$RAYOP_SHARED/kuberay/crds/" >/dev/null || { not_ok "KubeRay CRDs created"; exit 1; }

# the overlay: the base as it is, plus appended flags (later flags win). Where helm is built
# (make test builds it with the peers), the base's rayop.yaml is replaced by `helm template`'s
# output, so the Pod below runs from the chart itself; deploy_chart.sh checks the two are the
# same objects, and kustomize alone is what a machine without Go can run.
cp -r "$LIB_ROOT/deploy/kustomize/base" "$W/base"
HELM=${HELM:-}
[ -n "$HELM" ] || { [ -x "$LIB_ROOT/.peers/bin/helm" ] && HELM=$LIB_ROOT/.peers/bin/helm; }
[ -n "$HELM" ] || HELM=$(command -v helm || true)
if [ -n "$HELM" ] && [ -x "$HELM" ]; then
    if "$HELM" template rayop "$LIB_ROOT/deploy/helm/rayop" --namespace rayop-system \
            > "$W/base/rayop.yaml" 2> "$W/helm.err"; then
        ok "helm template's output is what the Pod is deployed from"
    else
        not_ok "helm template" "$(tail -3 "$W/helm.err")"; exit 1
    fi
else
    echo "skip - deploying helm template's output (no helm: the kustomize base is deployed instead)"
fi
mkdir -p "$W/overlay"
{
    echo "resources: [../base]"
    echo "patches:"
    echo "- target: {kind: Deployment, name: rayop}"
    echo "  patch: |-"
    echo "    - {op: add, path: /spec/template/spec/containers/0/args/-, value: --cache-capacity=32M}"
    for i in 1 2 3; do
        echo "    - {op: add, path: /spec/template/spec/containers/$i/args/-, value: --use-kubernetes-proxy=true}"
        echo "    - {op: add, path: /spec/template/spec/containers/$i/args/-, value: --leader-lease-seconds=$LEASE_S}"
    done
} > "$W/overlay/kustomization.yaml"
if kubectl apply -k "$W/overlay" > "$W/apply.out" 2>&1; then ok "kubectl apply -k (the base + flags)"
else not_ok "kubectl apply -k (the base + flags)" "$(tail -3 "$W/apply.out")"; exit 1; fi

pods_of() { kubectl get pods -n $NS -l app.kubernetes.io/name=rayop -o json; }
# "NAME c1:ready:restarts c2:..." per Pod that is not terminating
pod_table() {
    pods_of | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if p["metadata"].get("deletionTimestamp"): continue
    cs = p.get("status", {}).get("containerStatuses", [])
    print(p["metadata"]["name"], " ".join("%s:%s:%d" % (c["name"], c["ready"], c["restartCount"]) for c in cs))'
}
all_ready() {  # all_ready N: N Pods, every container ready
    local t; t=$(pod_table)
    [ "$(echo "$t" | grep -c .)" = "$1" ] && ! echo "$t" | grep -q ':False:' &&
        [ "$(echo "$t" | awk '{print NF - 1}' | sort -u)" = 4 ]
}
ctr_pid() {  # ctr_pid POD CONTAINER: the process of a running container
    kubectl get pod -n $NS "$1" -o json | python3 -c '
import json, sys
for c in json.load(sys.stdin)["status"]["containerStatuses"]:
    if c["name"] == sys.argv[1] and "running" in c["state"]: print(c["containerID"].split("//")[1])' "$2"
}
restarts() { kubectl get pod -n $NS "$1" -o jsonpath="{.status.containerStatuses[?(@.name==\"$2\")].restartCount}"; }
ready_of() { kubectl get pod -n $NS "$1" -o jsonpath="{.status.containerStatuses[?(@.name==\"$2\")].ready}"; }
job_done() { [ "$(kubectl get rayjob "$1" -o jsonpath='{.status.jobStatus}/{.status.jobDeploymentStatus}')" = SUCCEEDED/Complete ]; }
mkjob() { sed "s/name: demo-job$/name: $1/; s/KUBESIM_JOB_SECONDS: \"8\"/KUBESIM_JOB_SECONDS: \"2\"/" "$LIB_ROOT/deploy/demo-job.yaml" | kubectl apply -f - >/dev/null; }

t0=$(date +%s)
if wait_until "the rayop Pod Running with 4/4 containers Ready" 60 all_ready 1; then
    ok "the Pod is Running with every container Ready ($(( $(date +%s) - t0 )) s): $(pod_table)"
fi
POD=$(pod_table | awk '{print $1}' | head -1)
check "Deployment reports 1 ready replica" [ "$(kubectl get deploy -n $NS rayop -o jsonpath='{.status.readyReplicas}')" = 1 ]
PIP=$(kubectl get pod -n $NS "$POD" -o jsonpath='{.status.podIP}')
WPID=$(ctr_pid "$POD" watcher)
check "Pod IP $PIP is the address in the watcher's network namespace" \
    bash -c "nsenter -t $WPID -n ip -4 -o addr show dev eth0 | grep -q 'inet $PIP/'"
check "containers run as the chart's non-root user" [ "$(stat -c %u /proc/"$WPID")" = 65532 ]
check "/dev/shm is the Pod's memory emptyDir (288 MiB)" \
    [ "$(nsenter -t "$WPID" -m df -k --output=size /dev/shm | tail -1 | tr -d ' ')" = 294912 ]
check "the watcher reached the API server in-cluster (token + CA, TLS)" \
    grep -q '"verb":"watch".*"user_agent":"rayop' "$KUBESIM_REQLOG"

# ---- Service routing: the metrics Service reaches the Pod's processes
check "the API server's service proxy reaches the watcher's metrics (Service rayop, port metrics)" \
    bash -c "kubectl get --raw /api/v1/namespaces/$NS/services/rayop:metrics/proxy/metrics | grep -q '^rayop_watcher_synced'"
JPORT=$(kubectl get pod -n $NS "$POD" -o jsonpath='{.spec.containers[?(@.name=="rayjob")].ports[0].containerPort}')
check "the pod proxy reaches the rayjob controller's metrics (port $JPORT)" \
    bash -c "kubectl get --raw /api/v1/namespaces/$NS/pods/$POD:$JPORT/proxy/metrics | grep -q '^rayop_'"
SVC_HOST=$(tr '\0' '\n' < /proc/"$WPID"/environ | sed -n 's/^RAYOP_SERVICE_HOST=//p')
check "inside the Pod, the Service's ClusterIP ($SVC_HOST, from RAYOP_SERVICE_HOST) reaches the metrics" \
    bash -c "[ -n '$SVC_HOST' ] && nsenter -t $WPID -n curl -sf --max-time 10 http://$SVC_HOST:8080/metrics | grep -q '^rayop_watcher_synced'"

# ---- the demo RayJob, reconciled in the Pod
mkjob demo-job
wait_until "demo RayJob SUCCEEDED" 90 job_done demo-job && ok "demo RayJob SUCCEEDED, driven by the operator in the Pod"
check "the RayJob controller in the Pod logged it" \
    bash -c "kubectl logs -n $NS $POD -c rayjob | grep -q '\"name\":\"demo-job\"'"

# ---- kill -9 of the rayjob container: only it restarts
JPID=$(ctr_pid "$POD" rayjob)
check "rayjob container's process is 'rayop controller rayjob'" grep -qa 'controller.rayjob' /proc/"$JPID"/cmdline
kill -9 "$JPID"
rj_back() { [ "$(restarts "$POD" rayjob)" = 1 ] && [ "$(ready_of "$POD" rayjob)" = true ]; }
wait_until "rayjob container restarted and ready" 40 rj_back && ok "rayjob container restarted (restartCount 1) and is Ready again"
others="$(restarts "$POD" watcher) $(restarts "$POD" raycluster) $(restarts "$POD" rayservice)"
check "the other containers did not restart (restartCount 0 0 0: $others)" [ "$others" = "0 0 0" ]
check "lastState of rayjob: terminated by signal 9 (exit 137)" \
    [ "$(kubectl get pod -n $NS "$POD" -o jsonpath='{.status.containerStatuses[?(@.name=="rayjob")].lastState.terminated.exitCode}')" = 137 ]
kubectl logs -n $NS "$POD" -c rayjob --previous > "$W/prev.log" 2>&1
check "kubectl logs -c rayjob --previous shows the killed process's log" \
    grep -q '"name":"demo-job"' "$W/prev.log"
kubectl logs -n $NS "$POD" -c rayjob > "$W/cur.log" 2>&1
check "the current log is the new process's" bash -c "! grep -q '\"name\":\"demo-job\".*SUCCEEDED' '$W/cur.log' && grep -q 'controller starting' '$W/cur.log'"
mkjob job-2
wait_until "a second RayJob SUCCEEDED" 60 job_done job-2 && ok "a second RayJob completes after the restart"

# ---- kill -9 of the watcher: resumes without a LIST; no key lost
WPID=$(ctr_pid "$POD" watcher)
mark=$(wc -l < "$KUBESIM_REQLOG")
kill -9 "$WPID"
mkjob job-3       # created while the watcher is down or restarting
w_back() { [ "$(restarts "$POD" watcher)" = 1 ] && [ "$(ready_of "$POD" watcher)" = true ]; }
wait_until "watcher restarted and ready" 40 w_back && ok "watcher container restarted (restartCount 1) and is Ready again"
# The watcher watches every namespace, so its LISTs are cluster-wide; the controllers' own
# namespaced LISTs (a RayCluster's Pods, the leader election's peer Pods) are not its, nor
# are the 404 retries of types kubesim does not serve (batch schedulers' PodGroups).
tail -n +"$((mark + 1))" "$KUBESIM_REQLOG" | grep '"user_agent":"rayop' | grep '"verb":"list"' |
    grep -v '"path":"[^"]*/namespaces/' | grep '"code":200' > "$W/lists"
lists=$(wc -l < "$W/lists")
check "the restarted watcher resumed its watches without a LIST ($lists LISTs)" [ "$lists" = 0 ]
[ "$lists" = 0 ] || head -3 "$W/lists" | sed 's/^/#   /'
check "it watches again" bash -c "tail -n +$((mark + 1)) '$KUBESIM_REQLOG' | grep -q '\"verb\":\"watch\".*\"user_agent\":\"rayop'"
wait_until "RayJob created around the watcher's restart SUCCEEDED" 60 job_done job-3 && ok "no key lost: the RayJob created around the watcher restart completes"

# ---- two replicas split the Leases
kubectl scale deploy -n $NS rayop --replicas=2 >/dev/null
wait_until "two Pods with every container Ready" 60 all_ready 2 && ok "scaled to 2: both Pods Ready"
holder() { kubectl get lease -n $NS "rayop-$1-leader" -o jsonpath='{.spec.holderIdentity}'; }
split() { [ "$( (holder raycluster; echo; holder rayjob; echo; holder rayservice; echo) | grep . | sort -u | wc -l)" = 2 ]; }
wait_until "the kinds' Leases held by both Pods" 40 split && \
    ok "Leases held by both Pods: raycluster=$(holder raycluster) rayjob=$(holder rayjob) rayservice=$(holder rayservice)"
OLD=$(holder rayjob)
kubectl delete pod -n $NS "$OLD" --wait=false >/dev/null
t0=$(date +%s%N)
mkjob job-4
taken() { h=$(holder rayjob); [ -n "$h" ] && [ "$h" != "$OLD" ]; }
if wait_until "another Pod takes the RayJob Lease" 30 taken; then
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    # a figure, not a bound: this script runs beside others on a loaded machine
    ok "the RayJob Lease moved to $(holder rayjob) in ${ms} ms (lease ${LEASE_S} s)"
fi
wait_until "RayJob created during the hand-over SUCCEEDED" 60 job_done job-4 && ok "the RayJob created during the hand-over completes"
check "it was submitted once (one submitter Job)" [ "$(kubectl get jobs -l ray.io/originated-from-cr-name=job-4 -o name 2>/dev/null | wc -l)" -le 1 ]

# ---- kubesim's exit cleans up
PIDS=$(for p in $(pod_table | awk '{print $1}'); do for c in watcher raycluster rayjob rayservice; do ctr_pid "$p" $c; done; done)
keep_logs
stop_kubesim
check "kubesim exited 0" [ $? = 0 ]
left=0; for p in $PIDS; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
check "no container process is left ($(echo $PIDS | wc -w) were running)" [ "$left" = 0 ]
check "the runtime's directory is gone" [ -n "$RTDIR" ] && [ ! -e "$RTDIR" ]
check "no mount of the runtime is left" bash -c "! grep -q kubesim-runtime /proc/self/mountinfo"
exit 0

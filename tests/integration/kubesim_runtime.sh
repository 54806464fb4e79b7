#!/bin/bash
# deadline: 120
# kubesim_runtime.sh - kubesim --run-image (kubesim/runtime) on a small Pod of shell
# processes, the parts deploy_pod.sh does not reach:
#  - env: value with $(VAR), valueFrom fieldRef / secretKeyRef / configMapKeyRef, envFrom;
#    $(VAR) in args; KUBERNETES_SERVICE_HOST/PORT; ROOT/bin first on PATH
#  - volumes: configMap (items), secret, downwardAPI, emptyDir at a path that does not exist
#    on the host (created in the container's mount namespace only), the service account files
#  - probes: an exec readiness probe flips Ready with a file; a failing liveness probe
#    restarts the container (Unhealthy Event, restartCount, lastState)
#  - restartPolicy Never: exit 3 ends the container as Failed/Error with exitCode 3
#  - kubectl logs -f follows a running container
#  - Pod deletion: the processes end, then the Pod object goes
#  - without root: the Pod fails with a clear condition and Event (kubesim run as nobody)
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
    echo "# SKIP kubesim_runtime.sh: kubesim --run-image needs root for namespaces"
    exit 0
fi
W=$(mktemp -d /tmp/kubesim-rt.XXXXXX); _LIB_DIRS="$_LIB_DIRS $W"
chmod 755 "$W"
mkdir -p "$W/root/bin"
printf '#!/bin/sh\necho from-root-bin\n' > "$W/root/bin/hello"; chmod 755 "$W/root/bin/hello"

start_kubesim --tls --run-image "demo=$W/root" || exit 1
kubectl create configmap cfg --from-literal=greeting=hi --from-literal=other=x >/dev/null
kubectl create secret generic sec --from-literal=password=s3cret >/dev/null
cat > "$W/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: p1, tier: test}}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: registry.example.com/team/demo:1.0
    command: ["sh", "-c"]
    args:
    - |
      trap 'echo got-SIGTERM; exit 0' TERM
      echo "greet=$(GREETING) pod=$(MY_POD) ip=$MY_IP pw=$PASSWORD full=$FULL cfg_other=$other"
      echo "api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; hello
      echo "cm=$(cat /etc/cfg/g.txt) sec=$(cat /etc/sec/password) labels=$(tr '\n' ' ' < /etc/info/labels)"
      echo "ns=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace) scratch=$(ls -d /opt/kubesim-rt-scratch)"
      while true; do echo tick; sleep 0.3; done
    env:
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: cfg, key: greeting}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: sec, key: password}}}
    - {name: MY_POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: FULL, value: "$(MY_POD)@$(GREETING)"}
    envFrom:
    - configMapRef: {name: cfg}
    readinessProbe: {exec: {command: ["test", "-f", "/opt/kubesim-rt-scratch/ready"]}, periodSeconds: 1}
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: sec, mountPath: /etc/sec, readOnly: true}
    - {name: info, mountPath: /etc/info}
    - {name: scratch, mountPath: /opt/kubesim-rt-scratch}
  - name: flaky
    image: demo
    command: ["sh", "-c", "echo flaky-start; exec sleep 600"]
    livenessProbe: {tcpSocket: {port: 9999}, periodSeconds: 1, failureThreshold: 2}
  volumes:
  - name: cfg
    configMap: {name: cfg, items: [{key: greeting, path: g.txt}]}
  - {name: sec, secret: {secretName: sec}}
  - name: info
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - {name: scratch, emptyDir: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: demo, command: ["sh", "-c", "echo bye; exit 3"]}
YAML
kubectl apply -f "$W/pod.yaml" >/dev/null || { not_ok "pods created"; exit 1; }
running() { [ "$(kubectl get pod p1 -o jsonpath='{.status.containerStatuses[?(@.name=="main")].state.running.startedAt}')" != "" ]; }
wait_until "p1 main running" 30 running
logs_have() { kubectl logs p1 -c main 2>/dev/null | grep -q -- "$1"; }
wait_until "p1 printed its environment" 20 logs_have "cm=" || true
kubectl logs p1 -c main > "$W/main.log" 2>&1
check "env valueFrom configMapKeyRef/secretKeyRef/fieldRef, \$(VAR) in args and values, envFrom" \
    grep -q "greet=hi pod=p1 ip=10.244.[0-9.]* pw=s3cret full=p1@hi cfg_other=x" "$W/main.log"
check "KUBERNETES_SERVICE_HOST/PORT point at kubesim's service IP" grep -q "api=10.96.0.1:443" "$W/main.log"
check "ROOT/bin is first on PATH" grep -q "from-root-bin" "$W/main.log"
check "configMap items, secret and downwardAPI volumes at their mount paths" \
    grep -q 'cm=hi sec=s3cret labels=app="p1" tier="test"' "$W/main.log"
check "service account files and an emptyDir at a new path" \
    grep -q "ns=default scratch=/opt/kubesim-rt-scratch" "$W/main.log"
check "the new mount path was not created on the host" [ ! -e /opt/kubesim-rt-scratch ]

ready() { [ "$(kubectl get pod p1 -o jsonpath='{.status.containerStatuses[?(@.name=="main")].ready}')" = "$1" ]; }
sleep_ok=$(kubectl get pod p1 -o jsonpath='{.status.containerStatuses[?(@.name=="main")].ready}')
check "exec readiness probe fails while the file is missing (ready=$sleep_ok)" [ "$sleep_ok" = false ]
MPID=$(kubectl get pod p1 -o jsonpath='{.status.containerStatuses[?(@.name=="main")].containerID}' | sed 's|.*//||')
nsenter -t "$MPID" -m touch /opt/kubesim-rt-scratch/ready
wait_until "exec readiness probe passes once the file exists" 15 ready true && ok "exec readiness probe drives ready"

restarted() { [ "$(kubectl get pod p1 -o jsonpath='{.status.containerStatuses[?(@.name=="flaky")].restartCount}')" -ge 1 ]; }
wait_until "failing liveness probe restarts the container" 30 restarted && ok "liveness failure restarts flaky"
check "Unhealthy Event for the liveness probe" bash -c "kubectl get events --field-selector involvedObject.name=p1 -o json | grep -q 'Liveness probe failed'"
check "the main container did not restart" [ "$(kubectl get pod p1 -o jsonpath='{.status.containerStatuses[?(@.name=="main")].restartCount}')" = 0 ]

failed() { [ "$(kubectl get pod once -o jsonpath='{.status.phase}')" = Failed ]; }
wait_until "restartPolicy Never: the Pod ends Failed" 30 failed && ok "restartPolicy Never Pod Failed"
check "its container terminated with exitCode 3 (Error)" \
    [ "$(kubectl get pod once -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}')" = 3/Error ]
check "and was not restarted" [ "$(kubectl get pod once -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0 ]
check "its log is kept" bash -c "kubectl logs once | grep -qx bye"

timeout 3 kubectl logs -f p1 -c main > "$W/follow.log" 2>&1
n0=$(grep -c tick "$W/main.log"); n1=$(grep -c tick "$W/follow.log")
check "kubectl logs -f follows the running container ($n0 -> $n1 ticks)" [ "$n1" -gt "$n0" ]

kubectl delete pod p1 --wait=false >/dev/null
gone() { ! kubectl get pod p1 >/dev/null 2>&1; }
wait_until "deleted Pod goes once its processes ended" 20 gone && ok "the deleted Pod is removed after its processes ended"
check "the container's process ended" bash -c "! kill -0 $MPID 2>/dev/null"
stop_kubesim

# ---- without root: a clear failure, nothing started
chown -R nobody "$W"
dir=$W/nobody; mkdir -p "$dir"; chown nobody "$dir"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$LIB_ROOT/bin/kubesim" --listen 127.0.0.1:0 \
    --kubeconfig-out "$dir/kc" --run-image "demo=$W/root" > "$dir/out" 2> "$dir/err" &
NPID=$!; _LIB_PIDS="$_LIB_PIDS $NPID"
wait_until "kubesim as nobody printed its URL" 10 grep -q '^http' "$dir/out" || exit 1
export KUBECONFIG=$dir/kc
kubectl run np --image=demo --restart=Never --command -- sh -c 'echo should-not-run' >/dev/null
why() { kubectl get pod np -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}'; }
wait_until "non-root: the container waits with CreateContainerError" 20 bash -c "[ \"\$(kubectl get pod np -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')\" = CreateContainerError ]" &&
    ok "without root the container waits in CreateContainerError"
check "the condition says root is needed" bash -c "kubectl get pod np -o jsonpath='{.status.conditions[?(@.type==\"PodReadyToStartContainers\")].message}' | grep -q 'needs root'"
check "a FailedCreatePodSandBox Event" bash -c "kubectl get events -o json | grep -q FailedCreatePodSandBox"
kill -TERM $NPID; wait $NPID
check "kubesim as nobody exits 0" [ $? = 0 ]
exit 0

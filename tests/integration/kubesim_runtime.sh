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
#  - a volume's missing ConfigMap: FailedMount, retried until it exists
#  - init containers run in order, each to completion (a failed one is retried with
#    back-off), before the app container starts; initContainerStatuses, Initialized
#  - Service routing to a run Pod (a python http.server): the API server's service proxy
#    (by port number and name, with a query) and pod proxy reach the process at its Pod IP;
#    a closed port is 503 connection refused; another run Pod reaches it at the Service's
#    ClusterIP:port from the kubelet's service-link variables (WEB_SERVICE_HOST/PORT)
#  - Pod deletion: the processes end, then the Pod object goes
#  - without root: the Pod fails with a clear condition and Event (kubesim run as nobody)
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
    echo "skip - kubesim_runtime.sh (kubesim --run-image needs root for namespaces)"
    exit 0
fi
W=$(mktemp -d /tmp/kubesim-rt.XXXXXX); _LIB_DIRS="$_LIB_DIRS $W"
chmod 755 "$W"
mkdir -p "$W/root/bin"
printf '#!/bin/sh\necho from-root-bin\n' > "$W/root/bin/hello"; chmod 755 "$W/root/bin/hello"

start_kubesim --tls --nodes 1 --run-image "demo=$W/root" || exit 1
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

# ---- init containers: in order, each to completion, then the app container
cat > "$W/init.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: withinit}
spec:
  initContainers:
  - name: first
    image: demo
    command: ["sh", "-c", "echo one > /work/order; echo first-ran"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: second
    image: demo
    command: ["sh", "-c", "if [ ! -e /work/tried ]; then touch /work/tried; echo failing-once; exit 1; fi; echo two >> /work/order"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: demo
    command: ["sh", "-c", "echo app-saw $(tr '\\n' , < /work/order); exec sleep 600"]
    volumeMounts: [{name: work, mountPath: /work}]
  volumes: [{name: work, emptyDir: {}}]
YAML
kubectl apply -f "$W/init.yaml" >/dev/null
app_up() { kubectl logs withinit -c app 2>/dev/null | grep -q app-saw; }
wait_until "the app container started after both init containers" 30 app_up && ok "init containers ran before the app container"
check "in order, each to completion (the app saw one,two)" bash -c "kubectl logs withinit -c app | grep -qx 'app-saw one,two,'"
check "the failed init container was retried (restartCount 1, lastState exitCode 1)" \
    [ "$(kubectl get pod withinit -o jsonpath='{.status.initContainerStatuses[1].restartCount}/{.status.initContainerStatuses[1].lastState.terminated.exitCode}')" = 1/1 ]
check "initContainerStatuses: both terminated Completed" \
    [ "$(kubectl get pod withinit -o jsonpath='{.status.initContainerStatuses[*].state.terminated.reason}')" = "Completed Completed" ]
check "Initialized True, the app container Running" \
    [ "$(kubectl get pod withinit -o jsonpath='{.status.conditions[?(@.type=="Initialized")].status}/{.status.containerStatuses[0].ready}')" = True/true ]
check "kubectl logs -c first and --previous of second" \
    bash -c "kubectl logs withinit -c first | grep -qx first-ran && kubectl logs withinit -c second --previous | grep -qx failing-once"

# ---- Service routing to a run Pod; a volume whose ConfigMap comes later
cat > "$W/web.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: web
    image: demo
    command: ["python3", "-m", "http.server", "8080", "--bind", "0.0.0.0", "--directory", "/srv/site"]
    ports: [{containerPort: 8080, name: http}]
    readinessProbe: {httpGet: {path: /index.html, port: http}, periodSeconds: 1}
    volumeMounts: [{name: site, mountPath: /srv/site}]
  volumes: [{name: site, configMap: {name: site}}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: web, port: 80, targetPort: http}]
YAML
kubectl apply -f "$W/web.yaml" >/dev/null
failed_mount() { kubectl get events --field-selector involvedObject.name=web,reason=FailedMount -o json | grep -q 'configmap \\"site\\" not found'; }
wait_until "FailedMount Event for the missing ConfigMap" 20 failed_mount && ok "a volume's missing ConfigMap: FailedMount Event"
check "the Pod waits in ContainerCreating meanwhile" \
    [ "$(kubectl get pod web -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" = ContainerCreating ]
kubectl create configmap site --from-literal=index.html='hello from a real process' >/dev/null
web_ready() { [ "$(kubectl get pod web -o jsonpath='{.status.containerStatuses[0].ready}')" = true ]; }
wait_until "web Ready once the ConfigMap exists (httpGet readiness probe)" 30 web_ready && ok "mount retried: web Ready once its ConfigMap exists"
WIP=$(kubectl get pod web -o jsonpath='{.status.podIP}')
ep_ip() { [ "$(kubectl get endpoints web -o jsonpath='{.subsets[0].addresses[0].ip}')" = "$WIP" ]; }
wait_until "Endpoints of web carry the Pod IP $WIP" 15 ep_ip && ok "Endpoints of the Service carry the run Pod's IP"
SVC=/api/v1/namespaces/default/services
check "service proxy by port number reaches the process" \
    bash -c "kubectl get --raw $SVC/web:80/proxy/index.html | grep -qx 'hello from a real process'"
check "service proxy by port name, with a query" \
    bash -c "kubectl get --raw '$SVC/web:web/proxy/index.html?a=b%20c' | grep -qx 'hello from a real process'"
check "the process saw the request with its query" bash -c "kubectl logs web | grep -q 'GET /index.html?a=b%20c HTTP'"
check "pod proxy reaches the process" \
    bash -c "kubectl get --raw /api/v1/namespaces/default/pods/web:8080/proxy/index.html | grep -qx 'hello from a real process'"
kubectl get --raw /api/v1/namespaces/default/pods/web:8081/proxy/ > "$W/refused" 2>&1
check "pod proxy to a closed port: 503 connection refused" grep -q 'ServiceUnavailable.*connect: connection refused' "$W/refused"
kubectl get --raw $SVC/web:80/proxy/missing > "$W/404" 2>&1
check "the process's own 404 comes back" bash -c "grep -q NotFound '$W/404' && kubectl logs web | grep -q 'GET /missing HTTP/1.1\" 404'"
cat > "$W/client.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: demo
    command: ["python3", "-c"]
    args:
    - |
      import os, urllib.request
      url = "http://%s:%s/index.html" % (os.environ["WEB_SERVICE_HOST"], os.environ["WEB_SERVICE_PORT"])
      print("url", url, "named", os.environ.get("WEB_SERVICE_PORT_WEB"), os.environ.get("WEB_PORT_80_TCP"))
      print("got", urllib.request.urlopen(url, timeout=10).read().decode())
YAML
kubectl apply -f "$W/client.yaml" >/dev/null
CIP=$(kubectl get svc web -o jsonpath='{.spec.clusterIP}')
client_done() { [ "$(kubectl get pod client -o jsonpath='{.status.phase}')" = Succeeded ]; }
wait_until "client Pod reached web at its ClusterIP" 30 client_done && ok "a run Pod reaches another at the Service's ClusterIP:port"
kubectl logs client > "$W/client.log" 2>&1
check "service-link variables: WEB_SERVICE_HOST=$CIP, WEB_SERVICE_PORT=80, _PORT_WEB, WEB_PORT_80_TCP" \
    grep -q "url http://$CIP:80/index.html named 80 tcp://$CIP:80" "$W/client.log"
check "the reply came through the ClusterIP" grep -q "got hello from a real process" "$W/client.log"
check "ClusterIPs skip 10.96.0.1 (the kubernetes Service's)" [ "$CIP" != 10.96.0.1 ]

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

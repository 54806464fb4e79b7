#!/bin/bash
# A real Kubernetes control plane on loopback, for running the same tests against it as against
# kubesim: etcd, kube-apiserver (secure port, token auth, RBAC), kube-controller-manager,
# kube-scheduler and kwok with N fake nodes (kwok plays the kubelets: it marks bound Pods
# Running/Ready and finishes their deletion). Binaries come from `make peers` (.peers/bin).
#
#   tools/realk8s.sh start DIR [--nodes N]   start everything, write DIR/kubeconfig, print it
#   tools/realk8s.sh stop DIR                stop exactly the processes DIR/pids names
#   tools/realk8s.sh status DIR              exit 0 while all of them run
#
# DIR holds the state: pki/ (a private CA, the serving certificate and the service-account key),
# etcd/, logs/NAME.log, audit.log (every Pod create, JSON lines), pids ("NAME PID STARTTIME" lines; stop checks the start time so it never
# signals a recycled pid) and kubeconfig (the admin token, the CA verified, never skip-verify).
# Every listener is on 127.0.0.1 with a port the kernel picked; the Pod and Service ranges are
# loopback ranges too, so nothing ever sends a packet off the machine because of them.
# RAYOP_PEERS_BIN overrides the folder of the binaries.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${RAYOP_PEERS_BIN:-$ROOT/.peers/bin}
KUBECTL=${REALK8S_KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
[ -x "$KUBECTL" ] || KUBECTL=$(command -v kubectl)

say() { printf 'realk8s: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Start time of a pid in clock ticks since boot (field 22 of /proc/PID/stat), empty if gone.
pid_start() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

free_ports() { # N -> N distinct free loopback ports, one per line
	python3 - "$1" <<-'EOF'
		import socket, sys
		socks = []
		for _ in range(int(sys.argv[1])):
		    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
		print("\n".join(str(s.getsockname()[1]) for s in socks))
	EOF
}

# Waits up to $2 s for command $3... to succeed; names $1 and the log on failure.
wait_for() {
	local what=$1 secs=$2 deadline
	shift 2
	deadline=$(( $(now_ms) + secs * 1000 ))
	until "$@" >/dev/null 2>&1; do
		if [ "$(now_ms)" -ge "$deadline" ]; then
			say "$what did not come up within ${secs}s"
			return 1
		fi
		sleep 0.2
	done
}

launch() { # NAME BINARY ARGS... : background, own log, recorded in DIR/pids
	local name=$1 pid
	shift
	setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
	pid=$!
	echo "$name $pid $(pid_start "$pid")" >>"$DIR/pids"
}

alive() { # NAME: its recorded pid still runs the process we started
	local n p st
	while read -r n p st; do
		[ "$n" = "$1" ] || continue
		[ "$(pid_start "$p")" = "$st" ] && return 0
	done <"$DIR/pids"
	return 1
}

healthy() { # URL: HTTPS health endpoint answers ok, CA verified
	curl -sf --max-time 2 --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $TOKEN" "$1" | grep -qx ok
}

make_pki() {
	local p=$DIR/pki
	mkdir -p "$p"
	(
		cd "$p"
		openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
		openssl req -x509 -new -key ca.key -days 30 -subj /CN=realk8s-ca -out ca.crt 2>/dev/null
		openssl ecparam -name prime256v1 -genkey -noout -out apiserver.key 2>/dev/null
		openssl req -new -key apiserver.key -subj /CN=kube-apiserver -out apiserver.csr 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >san.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
			-extfile san.ext -out apiserver.crt 2>/dev/null
		openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
		openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
		chmod 600 ./*.key
	)
}

node_yaml() { # NAME
	cat <<-EOF
		apiVersion: v1
		kind: Node
		metadata:
		  name: $1
		  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
		  labels: {type: kwok, kubernetes.io/hostname: $1, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
		status:
		  allocatable: {cpu: "64", memory: 512Gi, pods: "250", nvidia.com/gpu: "8"}
		  capacity: {cpu: "64", memory: 512Gi, pods: "250", nvidia.com/gpu: "8"}
		---
	EOF
}

cmd_start() {
	local nodes=2 t0 ports etcd_c etcd_p api kcm sched kwokp i
	while [ $# -gt 0 ]; do
		case $1 in
		--nodes) nodes=$2; shift 2 ;;
		--nodes=*) nodes=${1#*=}; shift ;;
		*) die "unknown option $1" ;;
		esac
	done
	for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
		[ -x "$BIN/$b" ] || die "$BIN/$b missing: run make peers (tools/peers/build.sh)"
	done
	[ -f "$DIR/pids" ] && alive etcd && die "$DIR already runs a control plane (stop it first)"
	t0=$(now_ms)
	rm -rf "$DIR/etcd" "$DIR/logs" "$DIR/pids" "$DIR/pki"
	mkdir -p "$DIR/logs"
	chmod 700 "$DIR"
	: >"$DIR/pids"
	mapfile -t ports < <(free_ports 6)
	etcd_c=${ports[0]} etcd_p=${ports[1]} api=${ports[2]} kcm=${ports[3]} sched=${ports[4]} kwokp=${ports[5]}
	make_pki
	TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077 && echo "$TOKEN,admin,admin-uid,system:masters" >"$DIR/pki/tokens.csv")

	# The audit log plays kubesim's request log for the tests that count writes (one JSON line
	# per Pod create, with the user agent and the response code).
	cat >"$DIR/audit-policy.yaml" <<-EOF
		apiVersion: audit.k8s.io/v1
		kind: Policy
		omitStages: [RequestReceived]
		rules:
		- level: Metadata
		  verbs: [create]
		  resources: [{group: "", resources: [pods]}]
		- level: None
	EOF

	launch etcd "$BIN/etcd" --name=realk8s --data-dir="$DIR/etcd" \
		--listen-client-urls="http://127.0.0.1:$etcd_c" --advertise-client-urls="http://127.0.0.1:$etcd_c" \
		--listen-peer-urls="http://127.0.0.1:$etcd_p" --initial-advertise-peer-urls="http://127.0.0.1:$etcd_p" \
		--initial-cluster="realk8s=http://127.0.0.1:$etcd_p" \
		--unsafe-no-fsync=true --quota-backend-bytes=2147483648 --log-level=warn

	# ServiceAccount admission is off: it refuses Pods in a namespace whose "default"
	# ServiceAccount the controller has not created yet, a start-up race tests would hit at random
	# (envtest turns it off for the same reason); the ServiceAccount controllers themselves run.
	launch kube-apiserver "$BIN/kube-apiserver" \
		--etcd-servers="http://127.0.0.1:$etcd_c" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api" \
		--tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
		--client-ca-file="$DIR/pki/ca.crt" --token-auth-file="$DIR/pki/tokens.csv" \
		--authorization-mode=Node,RBAC --anonymous-auth=false \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$DIR/pki/sa.pub" --service-account-signing-key-file="$DIR/pki/sa.key" \
		--service-cluster-ip-range=127.96.0.0/16 \
		--disable-admission-plugins=ServiceAccount --allow-privileged=true \
		--endpoint-reconciler-type=none \
		--audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/audit.log" \
		--audit-log-format=json --audit-log-mode=blocking

	cat >"$DIR/kubeconfig" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: realk8s
		  cluster:
		    server: https://127.0.0.1:$api
		    certificate-authority: $DIR/pki/ca.crt
		users:
		- name: admin
		  user:
		    token: $TOKEN
		contexts:
		- name: realk8s
		  context: {cluster: realk8s, user: admin, namespace: default}
		current-context: realk8s
	EOF
	chmod 600 "$DIR/kubeconfig"
	echo "https://127.0.0.1:$api" >"$DIR/url"

	wait_for "kube-apiserver /readyz" 120 healthy "https://127.0.0.1:$api/readyz" ||
		{ log_tails; cmd_stop; exit 1; }

	launch kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$DIR/kubeconfig" \
		--authentication-kubeconfig="$DIR/kubeconfig" --authorization-kubeconfig="$DIR/kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1 --secure-port="$kcm" \
		--tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
		--service-account-private-key-file="$DIR/pki/sa.key" --root-ca-file="$DIR/pki/ca.crt" \
		--cluster-cidr=127.128.0.0/16 --service-cluster-ip-range=127.96.0.0/16 \
		--kube-api-qps=500 --kube-api-burst=1000 --concurrent-gc-syncs=10 \
		--node-monitor-grace-period=60s
	launch kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$DIR/kubeconfig" \
		--authentication-kubeconfig="$DIR/kubeconfig" --authorization-kubeconfig="$DIR/kubeconfig" \
		--leader-elect=false --bind-address=127.0.0.1 --secure-port="$sched" \
		--tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
		--kube-api-qps=500 --kube-api-burst=1000
	launch kwok "$BIN/kwok" --kubeconfig="$DIR/kubeconfig" \
		--manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
		--manage-nodes-with-label-selector= --manage-single-node= \
		--cidr=127.128.0.0/16 --node-ip=127.0.0.1 --node-lease-duration-seconds=40 \
		--server-address="127.0.0.1:$kwokp"

	for ((i = 0; i < nodes; i++)); do node_yaml "kwok-node-$i"; done |
		KUBECONFIG=$DIR/kubeconfig "$KUBECTL" create -f - >/dev/null ||
		{ cmd_stop; die "creating the fake nodes failed"; }

	# Generous deadlines: on a loaded 2-core machine the Go binaries can take long to start.
	wait_for "kube-controller-manager /healthz" 120 healthy "https://127.0.0.1:$kcm/healthz" &&
		wait_for "kube-scheduler /healthz" 120 healthy "https://127.0.0.1:$sched/healthz" &&
		wait_for "$nodes Ready fake node(s)" 120 nodes_ready "$nodes" &&
		wait_for "the default ServiceAccount" 120 \
			env KUBECONFIG="$DIR/kubeconfig" "$KUBECTL" get serviceaccount default -n default ||
		{ log_tails; cmd_stop; exit 1; }
	for n in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
		alive "$n" || { tail -20 "$DIR/logs/$n.log" >&2; cmd_stop; die "$n exited"; }
	done
	echo "$(( $(now_ms) - t0 ))" >"$DIR/start-ms"
	say "up in $(( ($(now_ms) - t0) / 1000 )).$(( ($(now_ms) - t0) % 1000 / 100 )) s: https://127.0.0.1:$api, $nodes kwok node(s), logs in $DIR/logs"
	say "export KUBECONFIG=$DIR/kubeconfig"
	cat "$DIR/kubeconfig"
}

log_tails() { # the last lines of every component's log, for a start that failed
	local f
	for f in "$DIR"/logs/*.log; do
		echo "--- $(basename "$f")"
		tail -5 "$f" | cut -c1-300
	done >&2
}

nodes_ready() {
	local n
	n=$(KUBECONFIG=$DIR/kubeconfig "$KUBECTL" get nodes -l type=kwok \
		-o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')
	[ "$n" -ge "$1" ]
}

cmd_stop() {
	local n p st left deadline
	[ -f "$DIR/pids" ] || { say "$DIR/pids: nothing recorded, nothing to stop"; return 0; }
	# Reverse start order: the clients first, etcd last.
	tac "$DIR/pids" | while read -r n p st; do
		[ "$(pid_start "$p")" = "$st" ] && kill -TERM "$p" 2>/dev/null || true
	done
	deadline=$(( $(now_ms) + 15000 ))
	while :; do
		left=""
		while read -r n p st; do
			[ "$(pid_start "$p")" = "$st" ] && left="$left $n"
		done <"$DIR/pids"
		[ -z "$left" ] && break
		if [ "$(now_ms)" -ge "$deadline" ]; then
			say "killing$left (no exit 15 s after SIGTERM)"
			while read -r n p st; do
				[ "$(pid_start "$p")" = "$st" ] && kill -KILL "$p" 2>/dev/null || true
			done <"$DIR/pids"
			break
		fi
		sleep 0.1
	done
	rm -f "$DIR/pids"
}

cmd_status() {
	local n p st rc=0
	[ -f "$DIR/pids" ] || { say "not running"; return 1; }
	while read -r n p st; do
		if [ "$(pid_start "$p")" = "$st" ]; then echo "$n $p running"; else echo "$n $p gone"; rc=1; fi
	done <"$DIR/pids"
	return $rc
}

[ $# -ge 2 ] || die "usage: $0 start DIR [--nodes N] | stop DIR | status DIR"
CMD=$1 DIR=$2
shift 2
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
TOKEN=$(cut -d, -f1 "$DIR/pki/tokens.csv" 2>/dev/null || true)
case $CMD in
start) cmd_start "$@" ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) die "unknown command $CMD" ;;
esac

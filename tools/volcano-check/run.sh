#!/bin/bash
# Checks kubesim's Volcano gang step (kubesim/cluster/gang.c) against the real Volcano scheduler:
# builds vc-scheduler v1.14.1 from the Go module proxy (go.mod beside this file; cold: ~15 min on
# 2 cores, then the Go build cache), starts the real control plane of tools/realk8s.sh (2 kwok
# nodes of 64 CPU), installs Volcano's PodGroup/Queue CRDs (../shared/crds/volcano) and
# schema-less HyperNode/Numatopology types (the scheduler watches them), makes the default Queue
# and sets every Queue Open (Volcano's controller does both; it is not run here), then plays the
# scenarios tests/unit/kubesim/test_cluster_gang.c plays against kubesim, scaled to 64-CPU nodes,
# and prints what the scheduler wrote: Pods bound, PodGroup phase and Unschedulable condition, the
# Events; last, restarted with the preempt and reclaim actions, the reclaim and preempt scenarios
# (Evict Events). Not part of make test (it needs Go and minutes); run it by hand:
#
#   tools/volcano-check/run.sh [DIR]     DIR keeps the logs (default: a fresh temporary folder)
#
# What it showed (Volcano v1.14.1) is in docs/batch-scheduling.md; the unit test asserts those texts.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tools/volcano-check
SHARED=${RAYOP_SHARED:-$ROOT/../shared}
DIR=${1:-$(mktemp -d /tmp/volcano-check.XXXXXX)}
K=${REALK8S_KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
[ -x "$K" ] || K=$(command -v kubectl)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 PATH=$PATH:/usr/local/go/bin
VC=${RAYOP_PEERS_BIN:-$ROOT/.peers/bin}/vc-scheduler

if [ ! -x "$VC" ]; then
	mkdir -p "$(dirname "$VC")"
	echo "volcano-check: building vc-scheduler (cold: minutes)" >&2
	(cd "$HERE" && go build -trimpath -pgo=off -o "$VC" volcano.sh/volcano/cmd/scheduler)
fi
mkdir -p "$DIR"
bash "$ROOT/tools/realk8s.sh" start "$DIR/k8s" --nodes 2 >/dev/null
export KUBECONFIG=$DIR/k8s/kubeconfig
VCPID=
cleanup() {
	# (set -e: a failing kill or wait must not skip the stop below)
	if [ -n "$VCPID" ]; then
		kill "$VCPID" 2>/dev/null || true
		wait "$VCPID" 2>/dev/null || true
	fi
	bash "$ROOT/tools/realk8s.sh" stop "$DIR/k8s" >/dev/null 2>&1 || true
	echo "volcano-check: logs in $DIR" >&2
}
trap cleanup EXIT

crd() { # PLURAL GROUP KIND: a cluster-scoped, schema-less v1alpha1 type
	$K apply -f - >/dev/null <<-Y
	apiVersion: apiextensions.k8s.io/v1
	kind: CustomResourceDefinition
	metadata: {name: $1.$2}
	spec:
	  group: $2
	  names: {plural: $1, kind: $3, listKind: $3List}
	  scope: Cluster
	  versions: [{name: v1alpha1, served: true, storage: true, subresources: {status: {}},
	    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
	Y
}
queue() { # NAME STATE [CAPABILITY_CPU] [WEIGHT]
	$K apply -f - >/dev/null <<-Y
	apiVersion: scheduling.volcano.sh/v1beta1
	kind: Queue
	metadata: {name: $1}
	spec: {weight: ${4:-1}${3:+, capability: {cpu: \"$3\"\}}}
	Y
	$K patch queue "$1" --subresource=status --type=merge -p "{\"status\":{\"state\":\"$2\"}}" >/dev/null
}
pg() { # NAME MINMEMBER [EXTRA_SPEC]
	$K apply -f - >/dev/null <<-Y
	apiVersion: scheduling.volcano.sh/v1beta1
	kind: PodGroup
	metadata: {name: $1, namespace: default}
	spec: {minMember: $2 ${3:-}}
	Y
}
pods() { # GROUP N CPU: Pods GROUP-0.. of PodGroup GROUP
	for i in $(seq 0 $(($2 - 1))); do
		$K apply -f - >/dev/null <<-Y
		apiVersion: v1
		kind: Pod
		metadata: {name: $1-$i, namespace: default, annotations: {scheduling.k8s.io/group-name: $1}}
		spec:
		  schedulerName: volcano
		  containers: [{name: c, image: busybox:1.36, resources: {requests: {cpu: "$3"}}}]
		Y
	done
}
report() { # GROUP...
	for g in "$@"; do
		echo "== $g: phase $($K get podgroup "$g" -o jsonpath='{.status.phase}'), bound" \
			"$($K get pods -o json | jq --arg g "$g-" '[.items[] | select((.metadata.name|startswith($g)) and .spec.nodeName)] | length')"
		$K get podgroup "$g" -o json | jq -r '.status.conditions[]? | "   condition \(.type) \(.reason): \(.message // "")"'
		$K get events -o json | jq -r --arg g "$g" '[.items[] | select(.involvedObject.name|startswith($g))
			| "   event \(.involvedObject.name) \(.type) \(.reason): \(.message)"] | unique | .[]' |
			grep -v "0/0 tasks\|, [12] Pending, 3 minAvailable" || true
	done
}

for f in "$SHARED"/crds/volcano/*.yaml; do $K create -f "$f" >/dev/null; done
crd hypernodes topology.volcano.sh HyperNode
crd numatopologies nodeinfo.volcano.sh Numatopology
queue default Open
cat >"$DIR/scheduler.conf" <<'Y'
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
Y
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$VC" --kubeconfig "$KUBECONFIG" --scheduler-conf "$DIR/scheduler.conf" --leader-elect=false \
	--listen-address "127.0.0.1:$port" -v 3 >"$DIR/vc-scheduler.log" 2>&1 &
VCPID=$!

# two gangs that fit alone but not together (test_all_or_nothing): 2 x 30 CPU fit a 64-CPU node
pg alpha 3; pods alpha 3 30
sleep 5
pg beta 3; pods beta 3 30
# minResources above 1.2 x the idle CPUs (test_phases), a queue's capability (test_queue_capability),
# a Closed queue (test_queue_state)
pg big 2 ', minResources: {cpu: "200"}'; pods big 2 1
queue small Open 3
pg quota 2 ', queue: small, minResources: {cpu: "4"}'; pods quota 2 1
queue shut Closed
pg closed 1 ', queue: shut'; pods closed 1 1
sleep 15
report alpha beta big quota closed

# queue weights (test_queue_weight): with the others gone, queue light (weight 1) and heavy
# (weight 3) share 128 CPUs as 32 and 96; light's older gang of 4 x 16 CPU gets none, heavy's
# 2 x 48 CPU runs (by age alone light's would run and heavy's would not fit)
$K delete pods --all --wait=false >/dev/null
$K delete podgroups --all >/dev/null
wait_gone() { [ "$($K get pods -o name | wc -l)" = 0 ]; }
for _ in $(seq 60); do wait_gone && break; sleep 1; done
# both queues Closed while the gangs arrive, then opened together: one session sees both
queue light Closed "" 1
queue heavy Closed "" 3
pg light 4 ', queue: light'; pods light 4 16
pg heavy 2 ', queue: heavy'; pods heavy 2 48
sleep 5
for q in light heavy; do
	$K patch queue $q --subresource=status --type=merge -p '{"status":{"state":"Open"}}' >/dev/null
done
sleep 15
report light heavy

# reclaim and preempt (kubesim reads the same actions from the ConfigMap
# volcano-system/volcano-scheduler-configmap): the scheduler restarted with both actions on
kill "$VCPID" 2>/dev/null || true
wait "$VCPID" 2>/dev/null || true
clean() {
	$K delete pods --all --wait=false >/dev/null
	$K delete podgroups --all >/dev/null
	for _ in $(seq 60); do wait_gone && break; sleep 1; done
}
clean
sed -i 's/^actions: .*/actions: "enqueue, allocate, preempt, reclaim, backfill"/' "$DIR/scheduler.conf"
"$VC" --kubeconfig "$KUBECONFIG" --scheduler-conf "$DIR/scheduler.conf" --leader-elect=false \
	--listen-address "127.0.0.1:$port" -v 3 >"$DIR/vc-scheduler-reclaim.log" 2>&1 &
VCPID=$!
evicted() { # GROUP: the Pods of GROUP that got Volcano's Evict Event
	$K get events -o json | jq -r --arg g "$1-" '[.items[] | select((.involvedObject.name|startswith($g))
		and .reason == "Evict") | "   evict \(.involvedObject.kind) \(.involvedObject.name) \(.type): \(.message)"] | unique | .[]'
}
reclaim_case() { # HOLDER MINMEMBER CLAIMANT: HOLDER's 4 x 32 CPU fill the cluster, then
	# CLAIMANT's gang of 2 x 32 CPU comes; both queues Open with weight 1
	queue "$1" Open "" 1
	queue "$3" Open "" 1
	pg "$1" "$2" ", queue: $1"; pods "$1" 4 32
	sleep 8
	pg "$3" 2 ", queue: $3"; pods "$3" 2 32
	sleep 20
	report "$1" "$3"; evicted "$1"
}
# reclaim (test_reclaim): queue ra has the whole cluster (4 x 32 CPU, minMember 1) while rb has no
# work; rb's gang of 2 x 32 CPU (minMember 2) comes: equal weights deserve 64 each, ra is over
# its share and its tasks beyond minMember are reclaimable
reclaim_case ra 1 rb
# the gang rule protects minMember (test_reclaim_gang): rc holds the cluster with minMember 4
clean
reclaim_case rc 4 rd
# preempt within a queue (test_preempt): a higher PriorityClass takes tasks of a lower one
clean
$K apply -f - >/dev/null <<-Y
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
Y
pg low 1; pods low 4 32
sleep 8
pg high 2 ', priorityClassName: high'; pods high 2 32
sleep 20
report low high; evicted low
# preempt with equal priority (test_preempt): the priority plugin lets nothing go, drf decides
# (new names: the Events of the scenario before stay)
clean
pg base 1; pods base 4 32
sleep 8
pg same 2; pods same 2 32
sleep 20
report base same; evicted base

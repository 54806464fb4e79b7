#!/bin/bash
# deadline: 120
# rayjob_samples.sh - every RayJob sample of KubeRay v1.7 ($RAYOP_SHARED/kuberay/samples)
# created in kubesim (each file in its own namespace, by rayjob/create_samples.py; nodes with
# GPUs and the T4 accelerator label, no TPU nodes), run by `rayop controller raycluster` + `rayop controller rayjob`. Each ends as
# KubeRay would end it here: Complete/SUCCEEDED; InteractiveMode waits in Waiting for a job
# id; the TPU samples stay Initializing (their Pods cannot be scheduled, so the RayCluster
# never gets ready); use-existing-raycluster stays Initializing with a RayClusterNotFound
# Warning (its cluster does not exist). Objects of kinds kubesim does not serve (Volcano's
# Queue) are skipped.
. "$(dirname "$0")/lib_rayjob.sh"

rj_start --nodes 6 --node-cpu 64 --node-memory 256Gi --node-gpu 8 \
    --node-labels cloud.google.com/gke-accelerator=nvidia-tesla-t4 || exit 1
S=$RAYOP_SHARED/kuberay/samples
# several samples share a name (rayjob-sample): each file gets its own namespace
i=0; FILES=(); NSS=(); ARGS=()
for f in $(grep -l '^kind: RayJob' $S/ray-job.*.yaml $S/*/ray-job*.yaml $S/ray-data-image-resize/*.yaml | sort -u); do
    i=$((i + 1))
    FILES+=("$f"); NSS+=("s$i"); ARGS+=("s$i=$f")
done
KUBESIM_TOKEN=$KUBESIM_TOKEN python3 "$(dirname "$0")/rayjob/create_samples.py" "$KUBESIM_URL" "${ARGS[@]}" \
    >"$WORK/create.out" 2>&1
check "every object of a served kind created" sh -c "! grep -v ' 201$\| skipped$' '$WORK/create.out'"
echo "# samples created after $SECONDS s"
name_in() { jq -r --arg ns "$1" '[.items[] | select(.metadata.namespace == $ns)][0].metadata.name // ""' "$WORK/all.json"; }
expect() {  # expect FILE: the jobDeploymentStatus KubeRay reaches for the sample here
    case "$1" in
        *interactive-mode*) echo Waiting ;;
        *tpu*|*use-existing*) echo Initializing ;;
        *) echo Complete ;;
    esac
}
snapshot() { kcurl /apis/ray.io/v1/rayjobs >"$WORK/all.json"; }
field() {  # field NS NAME PATH: from the last snapshot
    jq -r --arg ns "$1" --arg n "$2" --arg p "$3" '.items[] | select(.metadata.namespace == $ns and
        .metadata.name == $n) | getpath($p | split(".")) // ""' "$WORK/all.json"
}
snapshot
n=0
for k in "${!FILES[@]}"; do [ -n "$(name_in ${NSS[$k]})" ] && n=$((n + 1)); done
check "every RayJob sample created ($n of ${#FILES[@]})" [ "$n" -eq "${#FILES[@]}" ]
NAMES=()
for k in "${!FILES[@]}"; do NAMES+=("$(name_in ${NSS[$k]})"); done
all_settled() {
    local k want
    snapshot
    for k in "${!FILES[@]}"; do
        want=$(expect "${FILES[$k]}")
        [ "$want" = Initializing ] && continue   # checked below, after the others had time
        [ "$(field ${NSS[$k]} ${NAMES[$k]} status.jobDeploymentStatus)" = "$want" ] || return 1
    done
}
wait_until "every sample settles" 50 all_settled
echo "# settled after $SECONDS s"
snapshot
for k in "${!FILES[@]}"; do
    f=${FILES[$k]#$S/}; ns=${NSS[$k]}; j=${NAMES[$k]}; want=$(expect "$f")
    got=$(field $ns $j status.jobDeploymentStatus)
    case "$want" in
        Complete) check "$f ($j): Complete/SUCCEEDED" [ "$got" = Complete -a "$(field $ns $j status.jobStatus)" = SUCCEEDED ] ;;
        *) check "$f ($j): $want (got $got)" [ "$got" = "$want" ] ;;
    esac
done
ev_in() { kcurl /apis/events.k8s.io/v1/events | jq -e --arg n "$1" --arg r "$2" \
    '.items[] | select(.regarding.name == $n and .reason == $r)' >/dev/null; }
check "use-existing-raycluster: RayClusterNotFound Warning" ev_in rayjob-use-existing-raycluster RayClusterNotFound
exit "$(lib_failures)"

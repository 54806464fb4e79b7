# tests/integration/lib_gang.sh - shared set-up of the gang-scheduling tests (volcano_gang.sh,
# batch_samples.sh); source after lib.sh. tests/run.sh does not run lib*.sh files.
#
#   gang_start NAME   kubesim on 2 nodes of 4 CPU / 16Gi with fast Pods, KubeRay's RayCluster and
#                     RayJob CRDs and Volcano's PodGroup and Queue CRDs, `rayop watcher`; sets
#                     WORK, STATE; on exit stops everything, keeps the logs in
#                     /tmp/NAME-failed.PID after a failure and drops the cache segment
RAYOP=$LIB_ROOT/bin/rayop
SHARED=${RAYOP_SHARED:-$LIB_ROOT/../shared}
NSP=/apis/ray.io/v1/namespaces/default
PGP=/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups

_gang_cleanup() {
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
    if [ "$(lib_failures)" -gt 0 ]; then
        mkdir -p "/tmp/$GANG_NAME-failed.$$" && cp "$WORK"/*.log "/tmp/$GANG_NAME-failed.$$/" 2>/dev/null
        echo "# logs in /tmp/$GANG_NAME-failed.$$"
    fi
    "$RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1
    _lib_cleanup
}

gang_start() {
    GANG_NAME=$1
    start_kubesim --nodes 2 --node-cpu 4 --node-memory 16Gi --pod-start-ms 100 --pod-ready-ms 100 || return 1
    WORK=$KUBESIM_DIR
    STATE=$WORK/state
    trap _gang_cleanup EXIT
    local f
    for f in "$SHARED"/kuberay/crds/ray.io_rayclusters.yaml "$SHARED"/kuberay/crds/ray.io_rayjobs.yaml \
             "$SHARED"/crds/volcano/scheduling.volcano.sh_podgroups.yaml "$SHARED"/crds/volcano/scheduling.volcano.sh_queues.yaml; do
        kubectl create -f "$f" >/dev/null 2>&1 || not_ok "create CRD $(basename "$f")"
    done
    wait_until "CRDs served" 20 kcurl -f $PGP || return 1
    "$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" 2>"$WORK/watcher.log" &
}

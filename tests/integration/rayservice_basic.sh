#!/bin/bash
# deadline: 90
# rayservice_basic.sh - `rayop controller rayservice` end to end in kubesim: create ->
# a RayCluster NAME-xxxxx with KubeRay's annotations, the finalizer, one Serve PUT, the
# head and serve Services on it, Ready with numServeEndpoints from the EndpointSlices;
# a serveConfigV2 change -> one more PUT and no new cluster; the head Pod deleted -> the
# applications are PUT again; validation failure; Events; kuberay_service_* metrics;
# deletion through the finalizer.
. "$(dirname "$0")/lib_rayservice.sh"

LONG=badname-is-far-too-long-for-a-rayservice-name-xxxxxx
rs_start || exit 1
rs_create svc || not_ok "create svc"
rs_create $LONG || not_ok "create $LONG"

if rs_wait svc status.serviceStatus Running 60; then
    ok "svc: serviceStatus Running"
    C=$(rs_field svc status.activeServiceStatus.rayClusterName)
    check "svc: the cluster is named svc-xxxxx" sh -c "echo '$C' | grep -Eq '^svc-[a-z0-9]{5}$'"
    check "svc: Ready True NonZeroServeEndpoints" rs_cond_is svc Ready "True NonZeroServeEndpoints"
    check "svc: UpgradeInProgress False NoPendingCluster" rs_cond_is svc UpgradeInProgress "False NoPendingCluster"
    check "svc: numServeEndpoints >= 1" [ "$(rs_field svc status.numServeEndpoints)" -ge 1 ]
    check "svc: application RUNNING in activeServiceStatus" \
        rs_is svc status.activeServiceStatus.applicationStatuses.app.status RUNNING
    kcurl $NSP/rayclusters/$C >"$WORK/cluster.json"
    check "svc: the cluster carries KubeRay's hash, num-worker-groups and kuberay-version" \
        jq -e '.metadata.annotations | (.["ray.io/hash-without-replicas-and-workers-to-delete"] | test("^[0-9A-V]{32}$"))
               and .["ray.io/num-worker-groups"] == "1" and .["ray.io/kuberay-version"] == "v1.7.0"' "$WORK/cluster.json"
    check "svc: the cluster is controlled by the RayService, labelled originated-from" \
        jq -e --arg u "$(rs_field svc metadata.uid)" '.metadata.ownerReferences[0].uid == $u and .metadata.ownerReferences[0].controller
               and .metadata.labels["ray.io/originated-from-crd"] == "RayService"' "$WORK/cluster.json"
    check "svc: finalizer ray.io/rayservice-finalizer" rs_is svc metadata.finalizers.0 ray.io/rayservice-finalizer
    check "svc: svc-serve-svc and svc-head-svc select the cluster" \
        [ "$(svc_cluster svc-serve-svc) $(svc_cluster svc-head-svc)" = "$C $C" ]
    check "svc: a request through the serve Service reaches the application" \
        sh -c "curl -sS -H 'Authorization: Bearer $KUBESIM_TOKEN' '$KUBESIM_URL/api/v1/namespaces/default/services/svc-serve-svc:serve/proxy/app/x' | grep -q \"application 'app'\""
    check "svc: exactly one Serve PUT" [ "$(rs_puts svc)" = 1 ]
    head_serving() {
        [ "$(kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/cluster=$C,ray.io/node-type=head" |
             jq -r '.items[0].metadata.labels["ray.io/serve"]')" = true ]
    }
    wait_until "svc: the head Pod labelled ray.io/serve=true (its Serve proxy answers /-/healthz)" 20 head_serving &&
        ok "svc: the head Pod labelled ray.io/serve=true (its Serve proxy answers /-/healthz)"
    check "svc: UpdatedHeadPodServeLabel Event" ev_reason svc UpdatedHeadPodServeLabel
    kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/cluster=$C" >"$WORK/pods.json"
    check "svc: RayService env on the head's Ray container (RAY_SERVE_KV_TIMEOUT_S=5 ...)" \
        jq -e '[.items[] | select(.metadata.labels["ray.io/node-type"] == "head") | .spec.containers[0].env[] |
                select(.name == "RAY_SERVE_KV_TIMEOUT_S" or .name == "RAY_gcs_server_request_timeout_seconds" or
                       .name == "RAY_timeout_ms_task_wait_for_death_info") | .value] | sort == ["0","5","5"]' "$WORK/pods.json"
    check "svc: the worker's readiness probe asks the Serve proxy, ray.io/serve=true on the worker" \
        jq -e '[.items[] | select(.metadata.labels["ray.io/node-type"] == "worker")][0] |
               (.spec.containers[0].readinessProbe | tostring | test("-/healthz")) and .metadata.labels["ray.io/serve"] == "true"' "$WORK/pods.json"
    svc_events() { ev_reason svc CreatedRayCluster && ev_reason svc UpdatedServeApplications && ev_reason svc CreatedService; }
    wait_until "svc: Events CreatedRayCluster, UpdatedServeApplications, CreatedService" 10 svc_events &&
        ok "svc: Events CreatedRayCluster, UpdatedServeApplications, CreatedService"

    # an in-place serveConfigV2 change: one PUT, same cluster
    rs_patch svc "{\"serveConfigV2\":$(rs_config '{v: 2}' | jq -Rs .)}" || not_ok "patch serveConfigV2"
    wait_until "svc: serveConfigV2 change -> a second PUT" 30 rs_puts_ge svc 2 && ok "svc: serveConfigV2 change -> a second PUT"
    check "svc: still one cluster, the same" [ "$(rs_clusters svc | tr '\n' ' ')" = "$C " ]
    check "svc: no pending cluster" rs_is svc status.pendingServiceStatus.rayClusterName ""
    check "svc: exactly two Serve PUTs in all" [ "$(rs_puts svc)" = 2 ]

    # the head Pod deleted (no GCS FT): the new head has no applications -> PUT again
    HEAD=$(kcurl "/api/v1/namespaces/default/pods?labelSelector=ray.io/cluster=$C,ray.io/node-type=head" | jq -r '.items[0].metadata.name')
    kcurl -X DELETE "/api/v1/namespaces/default/pods/$HEAD?gracePeriodSeconds=0" >/dev/null
    wait_until "svc: head Pod deleted -> applications PUT again" 40 rs_puts_ge svc 3 &&
        ok "svc: head Pod deleted -> applications PUT again"
    wait_until "svc: application RUNNING on the new head" 40 rs_app_is "$C" RUNNING &&
        ok "svc: application RUNNING on the new head"
fi

# validation: a name over 47 characters
if wait_until "$LONG: Ready False ValidationFailed" 20 rs_cond_is $LONG Ready "False ValidationFailed"; then
    ok "long name: Ready False ValidationFailed"
    long_msg() {
        [ "$(kcurl $NSP/rayservices/$LONG | jq -r '.status.conditions[] | select(.type == "Ready") | .message')" = \
          'The RayService metadata is invalid: RayService name should be no more than 47 characters' ]
    }
    check "long name: KubeRay's message" long_msg
    check "long name: no RayCluster" [ -z "$(rs_clusters $LONG)" ]
    check "long name: Warning InvalidRayServiceMetadata Event" ev_reason $LONG InvalidRayServiceMetadata
fi

rs_metrics >"$WORK/metrics.txt"
check "metrics: kuberay_service_condition_ready condition=true for svc" \
    grep -q 'kuberay_service_condition_ready{name="svc",namespace="default",uid="[^"]*",condition="true"} 1' "$WORK/metrics.txt"
check "metrics: kuberay_service_info, kuberay_service_condition_upgrade_in_progress, the memory size" \
    sh -c "grep -q '^kuberay_service_info{name=\"svc\"' '$WORK/metrics.txt' &&
           grep -q '^kuberay_service_condition_upgrade_in_progress{name=\"svc\".*condition=\"false\"} 1' '$WORK/metrics.txt' &&
           grep -q '^rayop_rayservice_serve_memo_entries [1-9]' '$WORK/metrics.txt'"

# deletion: the finalizer holds the RayService until its clusters are gone
kcurl -X DELETE $NSP/rayservices/svc >/dev/null
rs_deleted() { [ "$(kcode $NSP/rayservices/svc)" = 404 ] && [ -z "$(rs_clusters svc)" ]; }
wait_until "svc: deleted with its RayClusters (finalizer)" 40 rs_deleted && ok "svc: deleted with its RayClusters (finalizer)"
exit "$(lib_failures)"

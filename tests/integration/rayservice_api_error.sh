#!/bin/bash
# deadline: 120
# rayservice_api_error.sh - when the API server refuses a RayService's write, rayop says
# what the server said, field path included, not "invalid": a RayService whose serveService
# has spec.type "Bogus" (the RayService schema takes any string; the Service API does not)
# gets a FailedToCreateService Warning Event carrying the server's
# `spec.type: Unsupported value: "Bogus"`, and the controller's reconcile error says the same.
. "$(dirname "$0")/lib_rayservice.sh"

rs_start || exit 1
check "RayService bad-svc is created" \
    rs_create bad-svc '"serveService":{"metadata":{"name":"bad-svc-serve"},"spec":{"type":"Bogus"}}'
ev_note() { kcurl /apis/events.k8s.io/v1/namespaces/default/events | jq -r \
    '.items[] | select(.regarding.name == "bad-svc" and .reason == "FailedToCreateService") | .note'; }
has_field() { ev_note | grep -q 'spec.type: Unsupported value: "Bogus"'; }
wait_until "the Warning Event has the server's field error" 90 has_field &&
    ok "the Warning Event has the server's field error: $(ev_note | head -1)"
n=$(ev_note | grep -c ', invalid$')
check "no Event note ends in a bare ', invalid' (got $n)" [ "$n" -eq 0 ]
check "the controller log has it too" grep -q 'spec.type: Unsupported value' "$WORK/rayservice.log"
exit "$(lib_failures)"

#!/bin/bash
# raycronjob.sh - `rayop controller raycronjob` end to end against kubesim, asserting what
# KubeRay v1.7's RayCronJob controller does (the RayJobs it creates are not run here):
#  - invalid specs (bad schedule, TZ in the schedule, unknown timeZone, a template the RayJob
#    validator refuses) get a Warning Event
#    InvalidRayCronJobSpec with KubeRay's message, create nothing and do not block the queue;
#  - "@every 2s": a RayJob "<name>-<unix minute>" per minute (ticks in the same minute hit
#    AlreadyExists, as KubeRay's deterministic names do), labels/annotation/ownerReference/
#    spec exactly from the template, status.lastScheduleTime advancing in 2 s steps on time;
#  - "*/1 * * * *" in Asia/Taipei with status.lastScheduleTime set 3 minutes back: the three
#    missed ticks are caught up, one RayJob each, named after their minutes;
#  - suspend: with two ticks overdue, a suspended RayCronJob records SuspendedRayCronJob and
#    creates nothing; resuming creates exactly the overdue ones;
#  - deleting the RayCronJob garbage-collects its RayJobs (the ownerReference is right).
# deadline: 60
. "$(dirname "$0")/lib.sh"
RAYOP=${RAYOP:-$LIB_ROOT/bin/rayop}
SHARED=${RAYOP_SHARED:-$LIB_ROOT/../shared}
KUBECTL=${KUBECTL:-$(ls /usr/lib/google-cloud-sdk/bin/kubectl.1.33 2>/dev/null || command -v kubectl)}
[ -x "$RAYOP" ] || { not_ok "bin/rayop is built"; exit 1; }
start_kubesim || exit 1
WORK=$KUBESIM_DIR
cp "$RAYOP" "$WORK/rayop" && RAYOP=$WORK/rayop   # other builds may relink bin/rayop meanwhile
STATE=$WORK/state; mkdir -p "$STATE"; chmod 700 "$STATE"
# RCJ_IT_KEEP=DIR keeps the logs (after the processes exit: an ASan build reports leaks then);
# after a failure they are kept in /tmp/raycronjob-it.PID anyway. RAYOP=BIN runs another build.
finish() {
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
    local keep=${RCJ_IT_KEEP:-}
    [ -z "$keep" ] && [ "$(lib_failures)" -gt 0 ] && keep=/tmp/raycronjob-it.$$
    [ -n "$keep" ] && { mkdir -p "$keep"; cp "$WORK"/*.log "$keep"/ 2>/dev/null; echo "# logs kept in $keep"; }
    "$RAYOP" clean --state-dir "$STATE" >/dev/null 2>&1
    _lib_cleanup
}
trap finish EXIT
NS=default
API=/apis/ray.io/v1/namespaces/$NS

"$KUBECTL" --kubeconfig "$KUBECONFIG" --cache-dir "$WORK/kcache" create \
    -f "$SHARED/kuberay/crds/ray.io_raycronjobs.yaml" -f "$SHARED/kuberay/crds/ray.io_rayjobs.yaml" \
    -f "$SHARED/kuberay/crds/ray.io_rayclusters.yaml" -f "$SHARED/kuberay/crds/ray.io_rayservices.yaml" >/dev/null \
    || { not_ok "CRDs created"; exit 1; }
wait_until "RayCronJob CRD served" 20 kcurl -f $API/raycronjobs || exit 1

"$RAYOP" watcher --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --cache-capacity 16M \
    >"$WORK/watcher.log" 2>&1 &
"$RAYOP" controller raycronjob --kubeconfig "$KUBECONFIG" --state-dir "$STATE" --workers 2 \
    --feature-gates RayCronJob=true --log-level debug --metrics-addr 0 \
    --health-probe-bind-address 0 >"$WORK/controller.log" 2>&1 &

TEMPLATE='{"entrypoint":"python /home/ray/samples/sample_code.py","shutdownAfterJobFinishes":true,
 "ttlSecondsAfterFinished":600,"rayClusterSpec":{"rayVersion":"2.52.0","headGroupSpec":{"rayStartParams":{},
 "template":{"spec":{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0"}]}}}}}'
create_rcj() {  # create_rcj NAME SPEC-EXTRA-JSON
    kcurl -X POST -H 'Content-Type: application/json' $API/raycronjobs -d "{\"apiVersion\":\"ray.io/v1\",
      \"kind\":\"RayCronJob\",\"metadata\":{\"name\":\"$1\"},\"spec\":{$2,\"jobTemplate\":$TEMPLATE}}" \
      | json_get metadata.uid
}
patch_rcj() {  # patch_rcj NAME [status] JSON
    local name=$1 sub=""; shift
    [ "$1" = status ] && { sub=/status; shift; }
    kcurl -f -X PATCH -H 'Content-Type: application/merge-patch+json' "$API/raycronjobs/$name$sub" -d "$1" >/dev/null \
        || not_ok "patch $name$sub $1"
}
jobs_of() { kcurl "$API/rayjobs?labelSelector=ray.io/cronjob-name%3D$1" | jq -r '.items[].metadata.name' | sort; }
events_for() {  # events_for NAME REASON: the events.k8s.io/v1 Events about RayCronJob NAME
    kcurl /apis/events.k8s.io/v1/namespaces/$NS/events |
        jq -c --arg n "$1" --arg r "$2" '.items[] | select(.regarding.kind == "RayCronJob" and .regarding.name == $n and .reason == $r)'
}
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
epoch() { date -u -d "$1" +%s; }

# ---- invalid specs: an Event each, nothing created, the queue keeps going ----
create_rcj bad-schedule '"schedule":"61 * * * *"' >/dev/null
create_rcj bad-tz '"schedule":"* * * * *","timeZone":"Mars/Olympus_Mons"' >/dev/null
create_rcj tz-in-schedule '"schedule":"CRON_TZ=UTC * * * * *"' >/dev/null
kcurl -X POST -H 'Content-Type: application/json' $API/raycronjobs -d '{"apiVersion":"ray.io/v1",
  "kind":"RayCronJob","metadata":{"name":"bad-template"},"spec":{"schedule":"@every 1s",
  "jobTemplate":{"entrypoint":"python x.py"}}}' >/dev/null
has_event_note() { events_for "$1" InvalidRayCronJobSpec | jq -e --arg s "$2" 'select(.type == "Warning" and .action == "Validate" and .reportingController == "raycronjob-controller" and (.note | contains($s)))' >/dev/null; }
wait_until "bad schedule: Warning InvalidRayCronJobSpec with robfig's message" 20 \
    has_event_note bad-schedule "default/bad-schedule: invalid cron schedule: end of range (61) above maximum (59): 61" \
    && ok "bad schedule: Warning InvalidRayCronJobSpec with robfig's message"
wait_until "unknown timeZone: Warning InvalidRayCronJobSpec" 10 \
    has_event_note bad-tz "invalid time zone: unknown time zone Mars/Olympus_Mons" \
    && ok "unknown timeZone: Warning InvalidRayCronJobSpec"
wait_until "TZ in schedule: Warning InvalidRayCronJobSpec" 10 \
    has_event_note tz-in-schedule "cannot use TZ or CRON_TZ in schedule, use timeZone field instead" \
    && ok "TZ in schedule: Warning InvalidRayCronJobSpec"
wait_until "template without a cluster: Warning with the RayJob validator's message" 10 \
    has_event_note bad-template "invalid RayJob template: The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set" \
    && ok "template without a cluster: Warning with the RayJob validator's message"

# ---- batch/v1 CronJob's knobs are not part of the v1.7 API: the server prunes them ----
spec=$(kcurl -X POST -H 'Content-Type: application/json' $API/raycronjobs -d "{\"apiVersion\":\"ray.io/v1\",
  \"kind\":\"RayCronJob\",\"metadata\":{\"name\":\"pruned\"},\"spec\":{\"schedule\":\"@yearly\",\"suspend\":true,
  \"concurrencyPolicy\":\"Forbid\",\"startingDeadlineSeconds\":10,\"successfulJobsHistoryLimit\":1,
  \"jobTemplate\":$TEMPLATE}}" | jq -c '.spec | keys')
[ "$spec" = '["jobTemplate","schedule","suspend"]' ] \
    && ok "concurrencyPolicy, startingDeadlineSeconds, history limits: pruned by the v1.7 CRD" \
    || not_ok "CronJob-only fields pruned by the v1.7 CRD" "$spec"

# ---- @every 2s ----
UID_EVERY=$(create_rcj every '"schedule":"@every 2s"')
CREATED=$(epoch "$(kcurl $API/raycronjobs/every | json_get metadata.creationTimestamp)")
first_job() { jobs_of every | head -1 | grep -q .; }
wait_until "@every 2s: a RayJob appears" 10 first_job || exit 1
JOB=$(jobs_of every | head -1)
J=$(kcurl "$API/rayjobs/$JOB")
TS=$(echo "$J" | jq -r '.metadata.annotations["ray.io/cronjob-scheduled-timestamp"]')
T=$(epoch "$TS")
[ "$JOB" = "every-$((T / 60))" ] && ok "name is <cronjob>-<unix minute of the tick> ($JOB)" \
    || not_ok "name is <cronjob>-<unix minute of the tick>" "$JOB vs tick $TS"
[ $(( (T - CREATED) % 2 )) = 0 ] && [ "$T" -gt "$CREATED" ] && ok "tick $TS is creationTimestamp + 2 s * n" \
    || not_ok "tick is creationTimestamp + 2 s * n" "created $CREATED tick $T"
echo "$J" | jq -e '.metadata.labels == {"ray.io/cronjob-name":"every"}' >/dev/null \
    && ok "label ray.io/cronjob-name=every (and only it)" || not_ok "labels" "$(echo "$J" | jq -c .metadata.labels)"
echo "$J" | jq -e --arg u "$UID_EVERY" '.metadata.ownerReferences == [{"apiVersion":"ray.io/v1","kind":"RayCronJob",
    "name":"every","uid":$u,"controller":true,"blockOwnerDeletion":true}]' >/dev/null \
    && ok "controller ownerReference to the RayCronJob (uid, blockOwnerDeletion)" \
    || not_ok "ownerReference" "$(echo "$J" | jq -c .metadata.ownerReferences)"
STORED=$(kcurl $API/raycronjobs/every | jq -c .spec.jobTemplate)
echo "$J" | jq -e --argjson t "$STORED" '.spec == $t' >/dev/null \
    && ok "spec is the stored jobTemplate (with its CRD defaults)" || not_ok "spec is the stored jobTemplate" "$(echo "$J" | jq -c .spec) vs $STORED"
last() { kcurl $API/raycronjobs/every | json_get status.lastScheduleTime; }
L1=$(last)
moved() { [ "$(last)" != "$L1" ]; }
wait_until "lastScheduleTime advances" 8 moved
L2=$(last)
D=$(( $(epoch "$L2") - $(epoch "$L1") ))
# one tick per pass; a loaded machine may let two passes happen between two looks
[ "$D" -gt 0 ] && [ $((D % 2)) = 0 ] && ok "lastScheduleTime advances in whole 2 s ticks ($L1 -> $L2)" \
    || not_ok "lastScheduleTime advances in whole 2 s ticks" "$L1 -> $L2"
# on time: the tick is never reached early, and not much later than due
lag=$(( $(date +%s) - $(epoch "$L2") ))
[ "$lag" -le 3 ] && ok "ticks are processed on time (lag ${lag}s)" || not_ok "ticks on time" "lag ${lag}s"
wait_until "a second tick in the same minute hits AlreadyExists and is skipped" 10 \
    grep -q '"msg":"RayJob for this tick already exists, skipping creation".*"name":"every"' "$WORK/controller.log" \
    && ok "a second tick in the same minute hits AlreadyExists and is skipped"
n=$(jobs_of every | wc -l)
names_ok=$(jobs_of every | awk -F- -v c="$CREATED" '{ if ($2 * 60 < c - 60) bad = 1 } END { print bad ? "no" : "yes" }')
[ "$n" -le 2 ] && [ "$names_ok" = yes ] && ok "one RayJob per minute ($n so far)" || not_ok "one RayJob per minute" "$(jobs_of every | tr '\n' ' ')"

# ---- missed ticks in a time zone are caught up one by one ----
create_rcj catchup '"schedule":"*/1 * * * *","timeZone":"Asia/Taipei"' >/dev/null
wait_until "catchup reconciled once (requeued for its first tick)" 10 \
    grep -q '"name":"catchup"' "$WORK/controller.log" || exit 1
M0=$(( $(date +%s) / 60 * 60 - 180 ))
patch_rcj catchup status "{\"status\":{\"lastScheduleTime\":\"$(iso $M0)\"}}"
want="catchup-$((M0 / 60 + 1)) catchup-$((M0 / 60 + 2)) catchup-$((M0 / 60 + 3))"
have_all() { local j; for j in $want; do kcurl -f "$API/rayjobs/$j" >/dev/null || return 1; done; }
wait_until "the three missed ticks are caught up" 15 have_all && ok "three missed minutes -> $want"
caught_up() { [ "$(kcurl $API/raycronjobs/catchup | json_get status.lastScheduleTime)" \> "$(iso $((M0 + 179)))" ]; }
wait_until "lastScheduleTime reaches the last missed tick" 10 caught_up && ok "lastScheduleTime reaches the last missed tick"
a=$(kcurl "$API/rayjobs/catchup-$((M0 / 60 + 2))" | jq -r '.metadata.annotations["ray.io/cronjob-scheduled-timestamp"]')
[ "$a" = "$(iso $((M0 + 120)))" ] && ok "scheduled-timestamp annotation is the tick in UTC RFC 3339 ($a)" \
    || not_ok "scheduled-timestamp annotation" "$a"

# ---- suspend stops creation even with ticks overdue; resume catches up ----
patch_rcj catchup '{"spec":{"suspend":true}}'
suspended_event() { events_for catchup SuspendedRayCronJob | jq -e 'select(.type == "Normal" and .action == "Suspend" and .note == "RayCronJob suspended, no new RayJobs will be created")' >/dev/null; }
wait_until "SuspendedRayCronJob Event" 10 suspended_event \
    && ok "suspended: Normal Event SuspendedRayCronJob (action Suspend)"
nsuspended() { grep -c '"msg":"RayCronJob suspended, no new RayJobs will be created.".*"name":"catchup"' "$WORK/controller.log"; }
nsus=$(nsuspended)
patch_rcj catchup status "{\"status\":{\"lastScheduleTime\":\"$(iso $((M0 - 120)))\"}}"
more_suspended() { [ "$(nsuspended)" -gt "$nsus" ]; }
wait_until "the status change is reconciled while suspended" 10 more_suspended
if kcurl -f "$API/rayjobs/catchup-$((M0 / 60 - 1))" >/dev/null 2>&1 || kcurl -f "$API/rayjobs/catchup-$((M0 / 60))" >/dev/null 2>&1; then
    not_ok "suspended: no RayJob for the overdue ticks"
else
    ok "suspended: no RayJob for the two overdue ticks"
fi
patch_rcj catchup '{"spec":{"suspend":false}}'
want="catchup-$((M0 / 60 - 1)) catchup-$((M0 / 60))"
wait_until "resumed: the overdue ticks are created" 15 have_all && ok "resumed: the overdue ticks are created ($want)"

# ---- the controller kept serving: the invalid objects created nothing ----
[ -z "$(jobs_of bad-schedule)$(jobs_of bad-tz)$(jobs_of tz-in-schedule)$(jobs_of bad-template)" ] \
    && ok "invalid RayCronJobs created no RayJobs" || not_ok "invalid RayCronJobs created no RayJobs"

# ---- deleting the RayCronJob collects its RayJobs ----
kcurl -X DELETE "$API/raycronjobs/every" >/dev/null
no_jobs() { [ -z "$(jobs_of every)" ]; }
wait_until "deleting the RayCronJob garbage-collects its RayJobs" 15 no_jobs && ok "deleting the RayCronJob garbage-collects its RayJobs"
grep -q '"level":"error"' "$WORK/controller.log" && not_ok "no error lines in the controller log" \
    "$(grep '"level":"error"' "$WORK/controller.log" | head -3)" || ok "no error lines in the controller log"
[ "$(lib_failures)" = 0 ]

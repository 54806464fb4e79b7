#!/bin/bash
# deadline: 240
# readme_commands.sh - the README's Commands section, run as written (only `../shared` is
# pointed at $RAYOP_SHARED, and TMPDIR at a private dir): kubesim, KubeRay's CRDs, `rayop up`
# with its defaults, KubeRay's ray-job.sample.yaml to SUCCEEDED, `rayop status`, and a clean
# stop that leaves the cache segment out of /dev/shm.
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/readme-cmds.XXXXXX); _LIB_DIRS="$_LIB_DIRS $T"
SHARED=${RAYOP_SHARED:-$LIB_ROOT/../shared}
awk '/^## Commands/{on=1; next} on && /^```sh/{blk=1; next} blk && /^```/{exit} blk' \
    "$LIB_ROOT/README.md" >"$T/commands.sh"
check "the README has a Commands block" test -s "$T/commands.sh"
sed -i "s#\.\./shared#$SHARED#g" "$T/commands.sh"
mkdir -p "$T/tmp"
(cd "$LIB_ROOT" && TMPDIR=$T/tmp timeout 200 bash -e "$T/commands.sh") >"$T/run.out" 2>&1
rc=$?
check "the commands run to the end (rc $rc)" [ "$rc" -eq 0 ] || sed 's/^/#   /' "$T/run.out" | tail -15
check "rayjob-sample reached SUCCEEDED" grep -q 'rayjob.ray.io/rayjob-sample condition met' "$T/run.out"
check "rayop status showed the instance" grep -q '^watcher    running' "$T/run.out"
log=$(ls "$T"/tmp/*/rayop.log 2>/dev/null | head -1)
check "rayop up dropped its cache segment on the clean stop" grep -q 'dropped the cache segment' "$log"
exit "$(lib_failures)"

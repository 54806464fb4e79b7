#!/bin/bash
# real_raycluster_samples.sh - raycluster_samples.py (rayop watcher + controller raycluster) against a
# real control plane (tools/realk8s.sh: kube-apiserver, controller-manager, scheduler, kwok
# nodes) instead of kubesim; checks that need kubesim's simulation say so and are skipped there.
# deadline: 240
. "$(dirname "$0")/lib_real.sh"
real_require || exit 0
exec /usr/bin/python3 "$(dirname "$0")/raycluster_samples.py"

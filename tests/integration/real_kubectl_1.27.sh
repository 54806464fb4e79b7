#!/bin/bash
# real_kubectl_1.27.sh - the kubectl suite (kubectl_suite.inc) with kubectl 1.27 against a real
# control plane (tools/realk8s.sh: kube-apiserver v1.34, etcd, controller-manager, scheduler,
# kwok) instead of kubesim. Skipped, with the reason, where the peers cannot be built.
# deadline: 480
. "$(dirname "$0")/lib_real.sh"
real_require || exit 0
# a real apiserver builds its OpenAPI document for ~1 MB CRDs slowly on a loaded machine
export CL_REQUEST_TIMEOUT=60s
KUBECTL=${KUBECTL_1_27:-/usr/lib/google-cloud-sdk/bin/kubectl.1.27}
. "$(dirname "$0")/kubectl_suite.inc"

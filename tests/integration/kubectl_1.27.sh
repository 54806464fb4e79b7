#!/bin/bash
# kubectl_1.27.sh - the real-client suite (kubectl_suite.inc) with kubectl 1.27, the oldest
# kubectl this image ships (gcloud SDK), against a fresh kubesim.
# deadline: 240
KUBECTL=${KUBECTL_1_27:-/usr/lib/google-cloud-sdk/bin/kubectl.1.27}
. "$(dirname "$0")/kubectl_suite.inc"

#!/bin/bash
# kubectl_1.33.sh - the real-client suite (kubectl_suite.inc) with kubectl 1.33, the newest
# kubectl this image ships (gcloud SDK), against a fresh kubesim.
# deadline: 240
KUBECTL=${KUBECTL_1_33:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}
. "$(dirname "$0")/kubectl_suite.inc"

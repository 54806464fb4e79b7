/*
 * webhook.h - KubeRay's validating admission webhooks (ENABLE_WEBHOOKS=true), served by
 * `rayop webhook` over HTTPS on :9443 at KubeRay's three paths:
 *
 *   /validate-ray-io-v1-raycluster   metadata.name rules, unique worker group names
 *   /validate-ray-io-v1-rayjob       metadata.name rules
 *   /validate-ray-io-v1-rayservice   metadata.name rules
 *
 * with KubeRay's messages in its apierrors.NewInvalid shape (422, reason Invalid, a
 * FieldValueInvalid cause per error). The deeper spec rules stay with the controllers,
 * as in KubeRay. review.c is pure (AdmissionReview v1 in, AdmissionReview v1 out) and
 * fuzzed (tests/fuzz/fuzz_admission.c); webhook.c is the TLS server.
 */
#ifndef RAYOP_WEBHOOK_H
#define RAYOP_WEBHOOK_H

#include <stddef.h>

#define WEBHOOK_MAX_BODY (3u << 20)   /* the API server's own request limit */

/* Answers one AdmissionReview (body, len bytes) for path. 0 with *out a new JSON text
 * (caller frees): the AdmissionReview response, allowed or refused. -EINVAL when body is
 * not an AdmissionReview v1 request (the server answers 400), -ENOENT for an unknown
 * path, -ENOMEM. */
int webhook_review(const char *path, const char *body, size_t len, char **out);

/* `rayop webhook`: --webhook-addr (default :9443), --cert-dir (default
 * /tmp/k8s-webhook-server/serving-certs: tls.crt, tls.key, as controller-runtime). */
int webhook_main(int argc, char **argv);

#endif

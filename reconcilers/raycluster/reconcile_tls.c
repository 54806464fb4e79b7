/*
 * reconcile_tls.c - a RayCluster's mTLS PKI (tlsOptions.enabled, gate RayClusterMTLS), as
 * KubeRay v1.7's RayClusterMTLSController keeps it with cert-manager: the two Issuers and
 * the CA Certificate are created once; the head and worker Certificates are created, and
 * updated when the Pods' IPs (their IP SANs) or labels change; each Certificate's Secret gets
 * an owner reference to its Certificate so it goes with it. Events MTLSFailedToReconcile,
 * MTLSCertsNotReady, MTLSPKIReady, MTLSCertificatesUpdated, MTLSCertificateExpiringSoon.
 *
 * The RayCluster side of KubeRay's controller is here too: a cluster asking for TLS where
 * the API server does not serve cert-manager.io/v1 is refused (InvalidRayClusterSpec, no
 * retry), and no Pod is created until both leaf Certificates are Ready at their current
 * generation and their Secrets hold tls.crt, tls.key and ca.crt (checkMTLSSecretsReady).
 *
 * Whether cert-manager is served is asked at start-up (platform.c), as KubeRay does.
 * cert-manager's objects and the Secrets it writes are read live (they are not cached:
 * only TLS clusters pay for them). KubeRay runs the PKI as its own controller; here it is
 * a step of the RayCluster reconcile, before the Pods, whose failure only retries.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kobj/json_equal.h"
#include "reconcilers/raycluster/internal.h"
#include "util/util.h"

static const struct kube_resource RES_ISSUERS = { "cert-manager.io", "v1", "issuers", 1 };
static const struct kube_resource RES_CERTS = { "cert-manager.io", "v1", "certificates", 1 };

static bool tls_wanted(struct rc_run *r)
{
    return host_feature_enabled(r->ctx, "RayClusterMTLS", false) && rc_tls_enabled(r->rc);
}

int raycluster__tls_precheck(struct rc_run *r, struct host_result *res)
{
    char msg[512];
    int served;
    if (!tls_wanted(r))
        return 0;
    if ((served = raycluster__platform_cert_manager(r)) > 0)
        return 0;
    if (served < 0)
        return raycluster__fail(r, RC_ERR_OTHER, "telling whether cert-manager is installed: %s",
                                kube_strerror(served));
    snprintf(msg, sizeof(msg), "The RayCluster spec is invalid %s/%s: tlsOptions requires "
             "cert-manager, but cert-manager is not installed", r->ns, r->name);
    host_log(r->ctx, LOG_ERROR, "cert-manager not available for mTLS", NULL);
    host_event(r->ctx, r->rc, HOST_EVENT_WARNING, RC_REASON_INVALID_SPEC, "Validate", "%s", msg);
    snprintf(res->message, sizeof(res->message), "%.255s", msg);
    res->outcome = HOST_TERMINAL;
    return 1;
}

/* ---- readiness ---- */

/* isCertificateReady: Ready True for the current generation */
static bool cert_ready(const cJSON *cert)
{
    const cJSON *c;
    double gen = cJSON_GetNumberValue(kobj_get(kobj_get(cert, "metadata"), "generation"));
    cJSON_ArrayForEach(c, kobj_get(kobj_get(cert, "status"), "conditions")) {
        const char *t = kobj_str(c, "type"), *s = kobj_str(c, "status");
        if (t && !strcmp(t, "Ready"))
            return s && !strcmp(s, "True") &&
                   cJSON_GetNumberValue(kobj_get(c, "observedGeneration")) == gen;
    }
    return false;
}

static int get_live(struct rc_run *r, const struct kube_resource *res, const char *name,
                    cJSON **out)
{
    struct kube_result kr = { 0 };
    struct kube_client *kc = host_kube(r->ctx);
    int rc = kc ? kube_get(kc, res, r->ns, name, &kr) : -ENOTCONN;
    *out = NULL;
    if (rc == 0) {
        *out = kr.body;
        kr.body = NULL;
    }
    kube_result_release(&kr);
    return rc;
}

int raycluster__tls_secrets_ready(struct rc_run *r)
{
    static const enum rc_tls_obj certs[] = { RC_TLS_HEAD_CERT, RC_TLS_WORKER_CERT };
    static const enum rc_tls_obj secrets[] = { RC_TLS_HEAD_SECRET, RC_TLS_WORKER_SECRET };
    static const char *const keys[] = { "tls.crt", "tls.key", "ca.crt" };
    char name[300];
    cJSON *o;
    int rc;
    if (r->tls_ready || !tls_wanted(r))
        return 0;
    for (size_t i = 0; i < 2; i++) {
        rc_tls_name(r->rc, certs[i], name, sizeof(name));
        if ((rc = get_live(r, &RES_CERTS, name, &o)) < 0)
            return raycluster__fail(r, RC_ERR_OTHER, "mTLS secrets not ready: certificate %s not found: %s",
                                    name, kube_strerror(rc));
        bool ready = cert_ready(o);
        long gen = (long)cJSON_GetNumberValue(kobj_get(kobj_get(o, "metadata"), "generation"));
        cJSON_Delete(o);
        if (!ready)
            return raycluster__fail(r, RC_ERR_OTHER, "mTLS secrets not ready: certificate %s is not ready "
                                    "at current generation %ld", name, gen);
    }
    for (size_t i = 0; i < 2; i++) {
        rc_tls_name(r->rc, secrets[i], name, sizeof(name));
        if ((rc = get_live(r, &KUBE_RES_SECRETS, name, &o)) < 0)
            return raycluster__fail(r, RC_ERR_OTHER, "mTLS secrets not ready: secret %s not found: %s",
                                    name, kube_strerror(rc));
        for (size_t k = 0; k < 3; k++)
            if (!kobj_get(kobj_get(o, "data"), keys[k])) {
                cJSON_Delete(o);
                return raycluster__fail(r, RC_ERR_OTHER, "mTLS secrets not ready: secret %s missing "
                                        "required key %s", name, keys[k]);
            }
        cJSON_Delete(o);
    }
    r->tls_ready = true;
    return 0;
}

/* ---- the PKI ---- */

/* the same strings, as sets */
static bool same_set(const cJSON *a, const cJSON *b)
{
    const cJSON *x, *y;
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return false;
    cJSON_ArrayForEach(x, a) {
        bool found = false;
        cJSON_ArrayForEach(y, b)
            found = found || (cJSON_IsString(x) && cJSON_IsString(y) &&
                              !strcmp(x->valuestring, y->valuestring));
        if (!found)
            return false;
    }
    return true;
}

/* ensureSecretOwnedByCertificate: a non-controller owner reference to the Certificate */
static int secret_owned(struct rc_run *r, const cJSON *cert)
{
    const char *sn = kobj_str(kobj_get(cert, "spec"), "secretName");
    const char *uid = kobj_str(kobj_get(cert, "metadata"), "uid");
    const cJSON *ref;
    cJSON *s = NULL, *refs, *nr;
    struct kube_result kr = { 0 };
    int rc;
    if (!sn || !uid)
        return 0;
    if ((rc = get_live(r, &KUBE_RES_SECRETS, sn, &s)) < 0)
        return rc == -ENOENT ? 0 : rc;   /* not issued yet: next time */
    cJSON_ArrayForEach(ref, kobj_get(kobj_get(s, "metadata"), "ownerReferences"))
        if (kobj_str(ref, "uid") && !strcmp(kobj_str(ref, "uid"), uid)) {
            cJSON_Delete(s);
            return 0;
        }
    cJSON *md = cJSON_GetObjectItemCaseSensitive(s, "metadata");
    refs = cJSON_GetObjectItemCaseSensitive(md, "ownerReferences");
    if (!cJSON_IsArray(refs)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
        refs = cJSON_AddArrayToObject(md, "ownerReferences");
    }
    if (!refs || !(nr = cJSON_CreateObject())) {
        cJSON_Delete(s);
        return -ENOMEM;
    }
    cJSON_AddItemToArray(refs, nr);
    cJSON_AddStringToObject(nr, "apiVersion", "cert-manager.io/v1");
    cJSON_AddStringToObject(nr, "kind", "Certificate");
    cJSON_AddStringToObject(nr, "name", rc_meta(cert, "name"));
    cJSON_AddStringToObject(nr, "uid", uid);
    rc = host_kube(r->ctx) ? kube_update(host_kube(r->ctx), &KUBE_RES_SECRETS, r->ns, s, &kr)
                           : -ENOTCONN;
    kube_result_release(&kr);
    cJSON_Delete(s);
    return rc;
}

/* One object of the PKI: created when absent; a leaf Certificate whose labels or SANs
 * differ is updated. 0 or < 0. */
static int ensure(struct rc_run *r, cJSON *want, bool issuer, bool leaf, bool head)
{
    const char *name = rc_meta(want, "name");
    struct kube_result kr = { 0 };
    cJSON *have = NULL;
    int rc = get_live(r, issuer ? &RES_ISSUERS : &RES_CERTS, name, &have);
    if (rc == -ENOENT) {
        rc = host_kube(r->ctx) ? kube_create(host_kube(r->ctx), issuer ? &RES_ISSUERS : &RES_CERTS,
                                             r->ns, want, &kr)
                               : -ENOTCONN;
        kube_result_release(&kr);
        return rc == -EEXIST ? 0 : rc;
    }
    if (rc < 0 || issuer) {
        cJSON_Delete(have);
        return rc;
    }
    const cJSON *ws = kobj_get(want, "spec"), *hs = kobj_get(have, "spec");
    if (leaf && (!json_equal(kobj_get(kobj_get(have, "metadata"), "labels"),
                             kobj_get(kobj_get(want, "metadata"), "labels")) ||
                 !same_set(kobj_get(hs, "dnsNames"), kobj_get(ws, "dnsNames")) ||
                 !same_set(kobj_get(hs, "ipAddresses"), kobj_get(ws, "ipAddresses")))) {
        char ips[512];
        cJSON *md = cJSON_GetObjectItemCaseSensitive(have, "metadata");
        cJSON_ReplaceItemInObjectCaseSensitive(have, "spec", cJSON_Duplicate(ws, true));
        cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
        cJSON_AddItemToObject(md, "labels",
                              cJSON_Duplicate(kobj_get(kobj_get(want, "metadata"), "labels"), true));
        if (!kobj_controller_uid(have)) {
            cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
            cJSON_AddItemToObject(md, "ownerReferences",
                                  cJSON_Duplicate(kobj_get(kobj_get(want, "metadata"),
                                                           "ownerReferences"), true));
        }
        raycluster__go_strings_text(kobj_get(ws, "ipAddresses"), ips, sizeof(ips));
        host_log(r->ctx, LOG_INFO, head ? "Updating head certificate" : "Updating worker certificate",
                 "certificate", name, "ipAddresses", ips, NULL);
        host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "MTLSCertificatesUpdated", "Update",
                   "Updated %s certificate SANs (IPs: %s)", head ? "head" : "worker", ips);
        rc = host_kube(r->ctx) ? kube_update(host_kube(r->ctx), &RES_CERTS, r->ns, have, &kr)
                               : -ENOTCONN;
        kube_result_release(&kr);
    }
    if (rc == 0)
        rc = secret_owned(r, have);
    cJSON_Delete(have);
    return rc;
}

/* the IPs of the cluster's live Pods of one node type (getPodIPs) */
static size_t pod_ips(const cJSON *pods, const char *type, const char **out, size_t cap)
{
    const cJSON *p;
    size_t n = 0;
    cJSON_ArrayForEach(p, pods) {
        const char *t = kobj_str(kobj_get(kobj_get(p, "metadata"), "labels"), RC_LABEL_NODE_TYPE);
        const char *phase = kobj_str(kobj_get(p, "status"), "phase");
        const char *ip = kobj_str(kobj_get(p, "status"), "podIP");
        if (!t || strcmp(t, type) || *rc_meta(p, "deletionTimestamp") ||
            (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) || !ip || !*ip)
            continue;
        if (n < cap)
            out[n++] = ip;
    }
    return n;
}

/* Events that KubeRay repeats every minute are said here once per change of state, per
 * cluster (the RayCluster reconcile runs far more often). */
static bool state_changed(const char *uid, int state)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        char uid[40];
        int state;
    } seen[256];
    static unsigned next;
    bool changed = true;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
        if (!strncmp(seen[i].uid, uid, sizeof(seen[i].uid) - 1) && seen[i].uid[0]) {
            changed = seen[i].state != state;
            seen[i].state = state;
            goto out;
        }
    snprintf(seen[next].uid, sizeof(seen[next].uid), "%s", uid);
    seen[next].state = state;
    next = (next + 1) % (sizeof(seen) / sizeof(seen[0]));
out:
    pthread_mutex_unlock(&mu);
    return changed;
}

/* checkTLSCertificateExpiry: a Warning for a certificate that ends within a day */
static void expiry_check(struct rc_run *r, const cJSON *cert)
{
    time_t until;
    if (util_parse_time(kobj_str(kobj_get(cert, "status"), "notAfter"), &until) == 0 &&
        until - time(NULL) < 24 * 3600)
        host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "MTLSCertificateExpiringSoon", "Reconcile",
                   "TLS certificate %s expires in %.1f hours; Ray does not hot-reload certs so a "
                   "pod restart will be needed after renewal", rc_meta(cert, "name"),
                   (double)(until - time(NULL)) / 3600.0);
}

int raycluster__reconcile_tls(struct rc_run *r, char *msg, size_t cap)
{
    static const char *const steps[] = { "self-signed issuer", "CA certificate", "CA issuer",
                                         "head certificate", "worker certificate" };
    const char *hips[256], *wips[1024];
    size_t nh, nw;
    int err = 0, rc = 0, i = 0;
    cJSON *objs, *o;
    if (!tls_wanted(r) || raycluster__platform_cert_manager(r) <= 0)
        return 0;
    nh = pod_ips(r->pods, RC_NODE_HEAD, hips, sizeof(hips) / sizeof(hips[0]));
    nw = pod_ips(r->pods, RC_NODE_WORKER, wips, sizeof(wips) / sizeof(wips[0]));
    if (nh > sizeof(hips) / sizeof(hips[0]))
        nh = sizeof(hips) / sizeof(hips[0]);
    if (nw > sizeof(wips) / sizeof(wips[0]))
        nw = sizeof(wips) / sizeof(wips[0]);
    if (!(objs = rc_build_tls_objects(r->rc, &r->bo, hips, nh, wips, nw, &err))) {
        snprintf(msg, cap, "building the mTLS objects: %s", strerror(-err));
        return err < 0 ? err : -EIO;
    }
    cJSON_ArrayForEach(o, objs) {
        const char *kind = kobj_str(o, "kind");
        bool issuer = kind && !strcmp(kind, "Issuer");
        if ((rc = ensure(r, o, issuer, i >= 3, i == 3)) < 0) {
            snprintf(msg, cap, "mTLS %s: %s", steps[i], kube_strerror(rc));
            host_log(r->ctx, LOG_ERROR, "Failed to reconcile TLS resource", "resource", steps[i],
                     "error", kube_strerror(rc), NULL);
            host_event(r->ctx, r->rc, HOST_EVENT_WARNING, "MTLSFailedToReconcile", "Reconcile",
                       "Failed to reconcile mTLS %s: %s", steps[i], kube_strerror(rc));
            goto out;
        }
        i++;
    }
    /* checkTLSCertificatesReady */
    bool ready = true;
    for (int k = RC_TLS_HEAD_CERT; k <= RC_TLS_WORKER_CERT && ready; k++) {
        char name[300];
        rc_tls_name(r->rc, (enum rc_tls_obj)k, name, sizeof(name));
        if ((rc = get_live(r, &RES_CERTS, name, &o)) < 0) {
            snprintf(msg, cap, "reading certificate %s: %s", name, kube_strerror(rc));
            goto out;
        }
        if ((ready = cert_ready(o)))
            expiry_check(r, o);
        cJSON_Delete(o);
    }
    if (!ready) {
        host_log(r->ctx, LOG_INFO, "TLS certificates not ready yet, will requeue", NULL);
        if (state_changed(r->uid, 0))
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "MTLSCertsNotReady", "Reconcile",
                       "Waiting for cert-manager to issue mTLS certificates");
        r->requeue_ms = r->requeue_ms ? r->requeue_ms : 1000;
    } else {
        if (state_changed(r->uid, 1))
        {
            char name[300];
            host_event(r->ctx, r->rc, HOST_EVENT_NORMAL, "MTLSPKIReady", "Reconcile",
                       "mTLS PKI is ready: CA, head, and worker certificates issued");
            rc_tls_name(r->rc, RC_TLS_CA_CERT, name, sizeof(name));
            if (get_live(r, &RES_CERTS, name, &o) == 0)
                expiry_check(r, o);
            cJSON_Delete(o);
        }
    }
out:
    cJSON_Delete(objs);
    return rc;
}

/*
 * certmgr.c - a tiny cert-manager: when the cert-manager.io CRDs are installed, each
 * Certificate whose issuer is a namespaced Issuer of kind selfSigned or ca gets its Secret
 * (type kubernetes.io/tls: tls.crt, tls.key, ca.crt) and a Ready status for its current
 * generation, as cert-manager's issuing controller would leave them. Enough for an
 * operator that builds a PKI out of Certificates and waits for them (KubeRay's mTLS).
 *
 * Keys are ECDSA P-256 whatever spec.privateKey asks (RSA 4096 would take seconds per key
 * on a loaded machine); subject, SANs (DNS names, IP addresses), isCA, usages and duration
 * follow the spec. The kubelet asks cluster__certmgr_tls_wait whether KubeRay's
 * wait-for-tls-ip-san init container would still wait (the Pod stays Pending, with its IP,
 * until its certificate lists that IP). A Certificate whose Issuer or CA Secret is not there
 * yet is retried on a
 * timer; the rest of cert-manager (ClusterIssuers, ACME, renewal, CertificateRequests,
 * Issuer status) is not simulated. Level-triggered: any Certificate or Issuer event marks
 * the step dirty and cluster__certmgr_sync() looks at every Certificate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/cluster/internal.h"
#include "util/util.h"

#define CM_GROUP "cert-manager.io"
#define CM_MANAGER "cert-manager-certificates-issuing"
#define CM_RETRY_MS 200

bool cluster__certmgr_resource(const struct reg_resource *r)
{
    return r && !strcmp(r->group, CM_GROUP) &&
           (!strcmp(r->plural, "certificates") || !strcmp(r->plural, "issuers"));
}

static const struct reg_resource *find(struct cluster *c, const char *g, const char *plural)
{
    const struct registry *r = store_registry_rdlock(c->store);
    const struct reg_resource *res = registry_find(r, g, "v1", plural);
    store_registry_unlock(c->store);
    return res;
}

static cJSON *get(struct cluster *c, const struct reg_resource *r, const char *ns,
                  const char *name)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };
    cJSON *out = NULL;
    if (r && name && store_get(c->store, r, ns, name, &o, &st) == 0 && o)
        out = cJSON_Duplicate(store_obj_json(o), true);
    store_obj_unref(o);
    store_status_clear(&st);
    return out;
}

/* Go's time.ParseDuration for the "2160h0m0s" forms cert-manager writes; seconds, or
 * dflt when absent or not understood. */
long cluster__certmgr_duration(const char *s, long dflt)
{
    long total = 0;
    if (!s || !*s)
        return dflt;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || v < 0 || v > 1e9)
            return dflt;
        if (*end == 'h')
            total += (long)(v * 3600);
        else if (*end == 'm')
            total += (long)(v * 60);
        else if (*end == 's')
            total += (long)v;
        else
            return dflt;
        s = end + 1;
    }
    return total > 0 ? total : dflt;
}

/* ---- signing ---- */

struct signer {
    gnutls_x509_crt_t crt;       /* NULL: self-signed */
    gnutls_x509_privkey_t key;
    gnutls_datum_t ca_pem;       /* the CA certificate for ca.crt (gnutls_free) */
};

static void signer_free(struct signer *s)
{
    if (s->crt)
        gnutls_x509_crt_deinit(s->crt);
    if (s->key)
        gnutls_x509_privkey_deinit(s->key);
    gnutls_free(s->ca_pem.data);
    memset(s, 0, sizeof(*s));
}

static int decode(const cJSON *data, const char *k, gnutls_datum_t *out)
{
    const char *b64 = kobj_str(data, k);
    char *raw = NULL;
    size_t n = 0;
    if (!b64 || kobj_base64_decode(b64, strlen(b64), &raw, &n) < 0)
        return -ENOENT;
    out->data = (unsigned char *)raw;
    out->size = (unsigned)n;
    return 0;
}

/* The CA Issuer's key pair from its Secret: -EAGAIN while it is not there. */
static int signer_from_secret(struct cluster *c, const char *ns, const char *name,
                              struct signer *s)
{
    cJSON *sec = get(c, c->r_secrets, ns, name);
    gnutls_datum_t crt = { NULL, 0 }, key = { NULL, 0 };
    int rc = -EAGAIN;
    if (!sec || decode(kobj_get(sec, "data"), "tls.crt", &crt) < 0 ||
        decode(kobj_get(sec, "data"), "tls.key", &key) < 0)
        goto out;
    rc = -EINVAL;
    if (gnutls_x509_crt_init(&s->crt) < 0 ||
        gnutls_x509_crt_import(s->crt, &crt, GNUTLS_X509_FMT_PEM) < 0 ||
        gnutls_x509_privkey_init(&s->key) < 0 ||
        gnutls_x509_privkey_import2(s->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0) < 0)
        goto out;
    if (!(s->ca_pem.data = gnutls_malloc(crt.size)))
        goto out;
    memcpy(s->ca_pem.data, crt.data, crt.size);
    s->ca_pem.size = crt.size;
    rc = 0;
out:
    if (key.data) {
        memset(key.data, 0, key.size);
        free(key.data);
    }
    free(crt.data);
    cJSON_Delete(sec);
    if (rc < 0)
        signer_free(s);
    return rc;
}

struct issued {
    gnutls_datum_t crt, key;     /* PEM */
    time_t not_before, not_after;
};

static void issued_free(struct issued *is)
{
    gnutls_free(is->crt.data);
    if (is->key.data) {
        gnutls_memset(is->key.data, 0, is->key.size);
        gnutls_free(is->key.data);
    }
}

#define G(x)                        \
    do {                            \
        if ((x) < 0) {              \
            rc = -EINVAL;           \
            goto out;               \
        }                           \
    } while (0)

static int issue(const cJSON *spec, struct signer *s, struct issued *is)
{
    gnutls_x509_crt_t crt = NULL;
    gnutls_x509_privkey_t key = NULL;
    unsigned char serial[16], ip[16];
    const char *cn = kobj_str(spec, "commonName"), *bad;
    const cJSON *v;
    time_t now = time(NULL);
    long life = cluster__certmgr_duration(kobj_str(spec, "duration"), 90L * 86400);
    bool ca = cJSON_IsTrue(kobj_get(spec, "isCA"));
    unsigned usage = 0;
    int rc = 0;
    G(gnutls_x509_privkey_init(&key));
    G(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                   GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0));
    G(gnutls_x509_crt_init(&crt));
    G(gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial)));
    serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x01);
    G(gnutls_x509_crt_set_version(crt, 3));
    G(gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)));
    is->not_before = now;
    is->not_after = now + life;
    G(gnutls_x509_crt_set_activation_time(crt, now));
    G(gnutls_x509_crt_set_expiration_time(crt, now + life));
    if (cn && *cn) {
        char dn[400];
        /* a comma or quote would need escaping in the DN string: kept out instead */
        if (strpbrk(cn, ",+\"\\<>;=") || snprintf(dn, sizeof(dn), "CN=%s", cn) >= (int)sizeof(dn))
            G(-1);
        G(gnutls_x509_crt_set_dn(crt, dn, &bad));
    }
    G(gnutls_x509_crt_set_key(crt, key));
    cJSON_ArrayForEach(v, kobj_get(spec, "dnsNames"))
        if (cJSON_IsString(v) && *v->valuestring)
            G(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, v->valuestring,
                                                   (unsigned)strlen(v->valuestring),
                                                   GNUTLS_FSAN_APPEND));
    cJSON_ArrayForEach(v, kobj_get(spec, "ipAddresses")) {
        if (!cJSON_IsString(v))
            continue;
        if (inet_pton(AF_INET, v->valuestring, ip) == 1)
            G(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
                                                   GNUTLS_FSAN_APPEND));
        else if (inet_pton(AF_INET6, v->valuestring, ip) == 1)
            G(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
                                                   GNUTLS_FSAN_APPEND));
    }
    G(gnutls_x509_crt_set_basic_constraints(crt, ca, -1));
    cJSON_ArrayForEach(v, kobj_get(spec, "usages")) {
        const char *u = cJSON_GetStringValue(v);
        if (!u)
            continue;
        if (!strcmp(u, "cert sign"))
            usage |= GNUTLS_KEY_KEY_CERT_SIGN;
        else if (!strcmp(u, "crl sign"))
            usage |= GNUTLS_KEY_CRL_SIGN;
        else if (!strcmp(u, "digital signature"))
            usage |= GNUTLS_KEY_DIGITAL_SIGNATURE;
        else if (!strcmp(u, "key encipherment"))
            usage |= GNUTLS_KEY_KEY_ENCIPHERMENT;
        else if (!strcmp(u, "server auth"))
            G(gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0));
        else if (!strcmp(u, "client auth"))
            G(gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0));
    }
    if (ca)
        usage |= GNUTLS_KEY_KEY_CERT_SIGN;
    if (usage)
        G(gnutls_x509_crt_set_key_usage(crt, usage));
    G(gnutls_x509_crt_sign2(crt, s->crt ? s->crt : crt, s->key ? s->key : key,
                            GNUTLS_DIG_SHA256, 0));
    G(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &is->crt));
    G(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &is->key));
out:
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    if (rc < 0)
        issued_free(is);
    return rc;
}

int cluster__certmgr_selfsign(const cJSON *spec)
{
    struct signer s = { 0 };
    struct issued is = { 0 };
    int rc = issue(spec, &s, &is);
    issued_free(&is);
    return rc;
}

/* ---- writing ---- */

static char *b64(const gnutls_datum_t *d)
{
    char *out = malloc(kobj_base64_len(d->size));
    if (out)
        kobj_base64_encode(d->data, d->size, out);
    return out;
}

/* The Secret: created, or its data and cert-manager annotations replaced (other metadata,
 * such as an owner reference an operator added, is kept). */
static int write_secret(struct cluster *c, const cJSON *cert, const struct issued *is,
                        const gnutls_datum_t *ca)
{
    const cJSON *spec = kobj_get(cert, "spec");
    const char *ns = kobj_str(kobj_get(cert, "metadata"), "namespace");
    const char *name = kobj_str(spec, "secretName");
    struct store_write_opts w = { .field_manager = CM_MANAGER };
    struct store_status st = { 0 };
    cJSON *body = cJSON_CreateObject(), *md, *ann, *data;
    char *tc = b64(&is->crt), *tk = b64(&is->key), *cc = b64(ca), *text = NULL;
    int rc = -ENOMEM;
    if (!body || !tc || !tk || !cc || !name || !ns)
        goto out;
    cJSON_AddStringToObject(body, "apiVersion", "v1");
    cJSON_AddStringToObject(body, "kind", "Secret");
    md = cJSON_AddObjectToObject(body, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ns);
    ann = cJSON_AddObjectToObject(md, "annotations");
    cJSON_AddStringToObject(ann, "cert-manager.io/certificate-name",
                            kobj_str(kobj_get(cert, "metadata"), "name"));
    cJSON_AddStringToObject(ann, "cert-manager.io/issuer-name",
                            kobj_str(kobj_get(spec, "issuerRef"), "name"));
    cJSON_AddStringToObject(ann, "cert-manager.io/issuer-kind", "Issuer");
    cJSON_AddStringToObject(ann, "cert-manager.io/issuer-group", CM_GROUP);
    cJSON_AddStringToObject(body, "type", "kubernetes.io/tls");
    data = cJSON_AddObjectToObject(body, "data");
    cJSON_AddStringToObject(data, "tls.crt", tc);
    cJSON_AddStringToObject(data, "tls.key", tk);
    cJSON_AddStringToObject(data, "ca.crt", cc);
    cJSON *have = get(c, c->r_secrets, ns, name);
    if (!have) {
        rc = store_create(c->store, c->r_secrets, ns, body, &w, NULL, &st);
        body = NULL;   /* consumed */
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(body, "apiVersion");
        cJSON_DeleteItemFromObjectCaseSensitive(body, "kind");
        text = cJSON_PrintUnformatted(body);
        rc = text ? store_patch(c->store, c->r_secrets, ns, name, NULL, PATCH_MERGE, text,
                                strlen(text), &w, NULL, NULL, &st)
                  : -ENOMEM;
        cJSON_Delete(have);
    }
    if (rc < 0)
        log_debug("certmgr: secret", "name", name, "error", st.message, NULL);
out:
    store_status_clear(&st);
    if (tk) {
        memset(tk, 0, strlen(tk));
        free(tk);
    }
    if (text) {
        memset(text, 0, strlen(text));
        free(text);
    }
    free(tc);
    free(cc);
    cJSON_Delete(body);
    return rc;
}

static int write_status(struct cluster *c, const struct reg_resource *rc_, const cJSON *cert,
                        const struct issued *is)
{
    const cJSON *md = kobj_get(cert, "metadata");
    long gen = (long)cJSON_GetNumberValue(kobj_get(md, "generation"));
    long rev = (long)cJSON_GetNumberValue(kobj_get(kobj_get(cert, "status"), "revision"));
    struct store_write_opts w = { .field_manager = CM_MANAGER };
    struct store_status st = { 0 };
    char now[32], nb[32], na[32], renew[32], body[1024];
    long before = cluster__certmgr_duration(kobj_str(kobj_get(cert, "spec"), "renewBefore"),
                             (long)(is->not_after - is->not_before) / 3);
    int rc;
    util_format_time(time(NULL), now);
    util_format_time(is->not_before, nb);
    util_format_time(is->not_after, na);
    util_format_time(is->not_after - before, renew);
    snprintf(body, sizeof(body),
             "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
             "\"Ready\",\"message\":\"Certificate is up to date and has not expired\","
             "\"lastTransitionTime\":\"%s\",\"observedGeneration\":%ld}],\"notBefore\":\"%s\","
             "\"notAfter\":\"%s\",\"renewalTime\":\"%s\",\"revision\":%ld}}",
             now, gen, nb, na, renew, (rev > 0 ? rev : 0) + 1);
    rc = store_patch(c->store, rc_, kobj_str(md, "namespace"), kobj_str(md, "name"), "status",
                     PATCH_MERGE, body, strlen(body), &w, NULL, NULL, &st);
    if (rc < 0)
        log_debug("certmgr: status", "name", kobj_str(md, "name"), "error", st.message, NULL);
    store_status_clear(&st);
    return rc;
}

/* Ready for its current generation and its Secret there: nothing to do. */
static bool up_to_date(struct cluster *c, const cJSON *cert)
{
    const cJSON *cd;
    double gen = cJSON_GetNumberValue(kobj_get(kobj_get(cert, "metadata"), "generation"));
    bool ready = false;
    cJSON_ArrayForEach(cd, kobj_get(kobj_get(cert, "status"), "conditions")) {
        const char *t = kobj_str(cd, "type"), *s = kobj_str(cd, "status");
        if (t && !strcmp(t, "Ready"))
            ready = s && !strcmp(s, "True") &&
                    cJSON_GetNumberValue(kobj_get(cd, "observedGeneration")) == gen;
    }
    if (!ready)
        return false;
    cJSON *sec = get(c, c->r_secrets, kobj_str(kobj_get(cert, "metadata"), "namespace"),
                     kobj_str(kobj_get(cert, "spec"), "secretName"));
    bool have = sec && kobj_str(kobj_get(sec, "data"), "tls.crt");
    cJSON_Delete(sec);
    return have;
}

/* One Certificate: 0 done (or not ours to do), -EAGAIN to retry later. */
static int sync_one(struct cluster *c, const struct reg_resource *rcert,
                    const struct reg_resource *riss, const cJSON *cert)
{
    const cJSON *spec = kobj_get(cert, "spec"), *ref = kobj_get(spec, "issuerRef");
    const char *ns = kobj_str(kobj_get(cert, "metadata"), "namespace");
    const char *kind = kobj_str(ref, "kind");
    struct signer s = { 0 };
    struct issued is = { 0 };
    cJSON *iss;
    int rc;
    if (kobj_str(kobj_get(cert, "metadata"), "deletionTimestamp") || up_to_date(c, cert))
        return 0;
    if (!kobj_str(spec, "secretName") || (kind && strcmp(kind, "Issuer")))
        return 0;   /* ClusterIssuers and external issuers are not simulated */
    if (!(iss = get(c, riss, ns, kobj_str(ref, "name"))))
        return -EAGAIN;
    if (cJSON_IsObject(kobj_get(kobj_get(iss, "spec"), "ca")))
        rc = signer_from_secret(c, ns, kobj_str(kobj_get(kobj_get(iss, "spec"), "ca"),
                                                "secretName"), &s);
    else
        rc = cJSON_IsObject(kobj_get(kobj_get(iss, "spec"), "selfSigned")) ? 0 : 1;
    cJSON_Delete(iss);
    if (rc)
        return rc < 0 ? rc : 0;
    if ((rc = issue(spec, &s, &is)) == 0 &&
        (rc = write_secret(c, cert, &is, s.crt ? &s.ca_pem : &is.crt)) == 0)
        rc = write_status(c, rcert, cert, &is);
    issued_free(&is);
    signer_free(&s);
    return rc == -EAGAIN ? -EIO : rc;
}

void cluster__certmgr_sync(struct cluster *c)
{
    const struct reg_resource *rcert = find(c, CM_GROUP, "certificates");
    const struct reg_resource *riss = find(c, CM_GROUP, "issuers");
    struct store_list l = { 0 };
    struct store_list_opts lo = { 0 };
    struct store_status st = { 0 };
    bool retry = false;
    c->certmgr_dirty = false;
    if (!rcert || !riss || !c->r_secrets || store_list(c->store, rcert, "", &lo, &l, &st) < 0)
        goto out;
    /* CAs first: a leaf signed by a CA issued in this pass finds its Secret */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < l.n; i++) {
            const cJSON *cert = store_obj_json(l.items[i]);
            bool ca = cJSON_IsTrue(kobj_get(kobj_get(cert, "spec"), "isCA"));
            if (ca != (pass == 0))
                continue;
            if (sync_one(c, rcert, riss, cert) == -EAGAIN)
                retry = true;
        }
    if (retry && !c->certmgr_timer) {
        c->certmgr_timer = true;
        cluster__timer_add_key(c, CM_RETRY_MS, T_CERTMGR, NULL, 0);
    }
out:
    store_list_free(&l);
    store_status_clear(&st);
}

/* ---- the wait-for-tls-ip-san init container ---- */

/* true while a Pod with KubeRay's wait-for-tls-ip-san init container must keep waiting:
 * the certificate in the Secret mounted at its /etc/ray/tls does not list ip as an IP SAN
 * yet (the init container's openssl loop, decided here instead of run). */
bool cluster__certmgr_tls_wait(struct cluster *c, const cJSON *pod, const char *ip)
{
    const cJSON *spec = kobj_get(pod, "spec"), *ic, *m, *v;
    const char *vol = NULL, *secret = NULL;
    gnutls_datum_t pem = { NULL, 0 };
    gnutls_x509_crt_t crt = NULL;
    unsigned char want[16], san[16];
    bool wait = true;
    cJSON *sec = NULL;
    cJSON_ArrayForEach(ic, kobj_get(spec, "initContainers"))
        if (kobj_str(ic, "name") && !strcmp(kobj_str(ic, "name"), "wait-for-tls-ip-san"))
            break;
    if (!ic)
        return false;
    cJSON_ArrayForEach(m, kobj_get(ic, "volumeMounts"))
        if (kobj_str(m, "mountPath") && !strcmp(kobj_str(m, "mountPath"), "/etc/ray/tls"))
            vol = kobj_str(m, "name");
    cJSON_ArrayForEach(v, kobj_get(spec, "volumes"))
        if (vol && kobj_str(v, "name") && !strcmp(kobj_str(v, "name"), vol))
            secret = kobj_str(kobj_get(v, "secret"), "secretName");
    if (!secret || !ip || inet_pton(AF_INET, ip, want) != 1 || !c->r_secrets)
        return true;
    sec = get(c, c->r_secrets, kobj_str(kobj_get(pod, "metadata"), "namespace"), secret);
    if (!sec || decode(kobj_get(sec, "data"), "tls.crt", &pem) < 0 ||
        gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM) < 0)
        goto out;
    for (unsigned i = 0; i < 64; i++) {
        size_t n = sizeof(san);
        int t = gnutls_x509_crt_get_subject_alt_name(crt, i, san, &n, NULL);
        if (t == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (t == GNUTLS_SAN_IPADDRESS && n == 4 && !memcmp(san, want, 4)) {
            wait = false;
            break;
        }
    }
out:
    if (crt)
        gnutls_x509_crt_deinit(crt);
    free(pem.data);
    cJSON_Delete(sec);
    return wait;
}

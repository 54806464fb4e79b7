/*
 * build_tls.c - mTLS between a RayCluster's Pods (`tlsOptions.enabled`, gate RayClusterMTLS),
 * as KubeRay v1.7 builds it: the cert-manager objects its RayClusterMTLSController creates
 * (a self-signed Issuer, a 10-year CA Certificate, a CA Issuer on that CA's Secret, and one
 * leaf Certificate for the head and one shared by the workers, whose SANs carry the Pods'
 * IPs), and what configureTLS adds to the Pods (the `ray-tls` Secret volume, the RAY_USE_TLS
 * env and mount on the Ray, wait-gcs-ready and autoscaler containers, and the
 * `wait-for-tls-ip-san` init container that holds a Pod until its IP is in the certificate).
 * Pure functions; reconcile_tls.c creates and updates the objects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/raycluster/internal.h"

#define TLS_DIR "/etc/ray/tls"

static const char wait_script[] =
    "CERT=\"" TLS_DIR "/tls.crt\"\n"
    "if [ -z \"${POD_IP}\" ]; then\n"
    "  POD_IP=$(hostname -i 2>/dev/null | awk '{print $1}')\n"
    "fi\n"
    "if ! command -v openssl >/dev/null 2>&1; then\n"
    "  echo \"openssl not found; cannot verify IP SAN\" >&2\n"
    "  exit 1\n"
    "fi\n"
    "echo \"Waiting for TLS cert to include IP SAN for ${POD_IP}...\"\n"
    "while true; do\n"
    "  if openssl x509 -in \"${CERT}\" -noout -text 2>/dev/null | grep -qE \"IP Address:${POD_IP}"
    "([^0-9.]|$)\"; then\n"
    "    echo \"TLS cert now includes IP SAN for ${POD_IP}\"\n"
    "    exit 0\n"
    "  fi\n"
    "  echo \"IP SAN for ${POD_IP} not yet in cert, retrying in 5s...\"\n"
    "  sleep 5\n"
    "done";

bool rc_tls_enabled(const cJSON *rc)
{
    return cJSON_IsTrue(kobj_get(kobj_get(raycluster__spec(rc), "tlsOptions"), "enabled"));
}

int rc_tls_name(const cJSON *rc, enum rc_tls_obj which, char *out, size_t cap)
{
    static const char *const prefix[] = {
        [RC_TLS_SELFSIGNED_ISSUER] = "ray-selfsigned-issuer", [RC_TLS_CA_CERT] = "ray-ca-certificate",
        [RC_TLS_CA_ISSUER] = "ray-ca-issuer", [RC_TLS_HEAD_CERT] = "ray-head-cert",
        [RC_TLS_WORKER_CERT] = "ray-worker-cert", [RC_TLS_HEAD_SECRET] = "ray-head-secret",
        [RC_TLS_WORKER_SECRET] = "ray-worker-secret",
    };
    const char *uid = kobj_str(kobj_get(rc, "metadata"), "uid");
    int n;
    if (which == RC_TLS_CA_SECRET)   /* NAME-ca-secret-UID[:8] */
        n = snprintf(out, cap, "%s-ca-secret-%.8s", raycluster__name(rc), uid ? uid : "");
    else if ((unsigned)which < sizeof(prefix) / sizeof(prefix[0]) && prefix[which])
        n = snprintf(out, cap, "%s-%s", prefix[which], raycluster__name(rc));
    else
        return -EINVAL;
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* SetContainerTLSConfig: the four env vars (unless set) and the mount (unless one of that
 * name or path exists) */
void raycluster__tls_container(struct rcb *b, cJSON *c)
{
    static const char *const env[][2] = {
        { "RAY_USE_TLS", "1" }, { "RAY_TLS_SERVER_CERT", TLS_DIR "/tls.crt" },
        { "RAY_TLS_SERVER_KEY", TLS_DIR "/tls.key" }, { "RAY_TLS_CA_CERT", TLS_DIR "/ca.crt" },
    };
    const cJSON *mounts = kobj_get(c, "volumeMounts");
    for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++)
        if (!raycluster__env_exists(c, env[i][0]))
            raycluster__build_env_value(b, c, env[i][0], env[i][1]);
    if (kobj_find(mounts, "name", RC_TLS_VOLUME) || kobj_find(mounts, "mountPath", TLS_DIR))
        return;
    raycluster__build_mount(b, c, RC_TLS_VOLUME, TLS_DIR, true);
}

/* configureTLS */
void raycluster__tls_configure(struct rcb *b, const cJSON *rc, bool head, cJSON *pod_spec, cJSON *ray)
{
    char secret[300];
    cJSON *v, *ic;
    const cJSON *ics = kobj_get(pod_spec, "initContainers");
    if (b->err || !rc_tls_enabled(rc))
        return;
    rc_tls_name(rc, head ? RC_TLS_HEAD_SECRET : RC_TLS_WORKER_SECRET, secret, sizeof(secret));
    if (!kobj_find(kobj_get(pod_spec, "volumes"), "name", RC_TLS_VOLUME)) {
        v = raycluster__build_push(b, pod_spec, "volumes");
        raycluster__build_set_str(b, v, "name", RC_TLS_VOLUME);
        raycluster__build_set_str(b, raycluster__build_obj(b, v, "secret"), "secretName", secret);
    }
    raycluster__tls_container(b, ray);
    cJSON_ArrayForEach(ic, ics)
        if (kobj_str(ic, "name") && !strcmp(kobj_str(ic, "name"), RC_WAIT_GCS_CONTAINER))
            raycluster__tls_container(b, ic);
    if (kobj_find(ics, "name", RC_TLS_WAIT_CONTAINER) || b->err)
        return;
    /* prepended, so that it runs before wait-gcs-ready */
    if (!(ic = cJSON_CreateObject())) {
        b->err = -ENOMEM;
        return;
    }
    cJSON *arr = raycluster__build_arr(b, pod_spec, "initContainers");
    if (b->err || !cJSON_InsertItemInArray(arr, 0, ic)) {
        cJSON_Delete(ic);
        b->err = b->err ? b->err : -ENOMEM;
        return;
    }
    raycluster__build_set_str(b, ic, "name", RC_TLS_WAIT_CONTAINER);
    if (kobj_str(ray, "image"))
        raycluster__build_set_str(b, ic, "image", kobj_str(ray, "image"));
    {
        static const char *const sh[] = { "sh", "-c" };
        const char *args[] = { wait_script };
        raycluster__build_set(b, ic, "command", raycluster__build_str_array(b, sh, 2));
        raycluster__build_set(b, ic, "args", raycluster__build_str_array(b, args, 1));
    }
    if (kobj_str(ray, "imagePullPolicy"))
        raycluster__build_set_str(b, ic, "imagePullPolicy", kobj_str(ray, "imagePullPolicy"));
    if (kobj_get(ray, "securityContext") && !cJSON_IsNull(kobj_get(ray, "securityContext")))
        raycluster__build_set(b, ic, "securityContext", raycluster__build_dup(b, kobj_get(ray, "securityContext")));
    raycluster__build_env_fieldref(b, ic, "POD_IP", "status.podIP");
    raycluster__build_mount(b, ic, RC_TLS_VOLUME, TLS_DIR, true);
    raycluster__build_set(b, ic, "resources", raycluster__build_fixed_resources(b, "50m", "64Mi"));
}

/* ---- the cert-manager objects ---- */

static cJSON *cm_object(struct rcb *b, const cJSON *rc, const char *kind, enum rc_tls_obj which,
                        const char *component, cJSON **spec)
{
    char name[300];
    cJSON *meta, *o, *l;
    rc_tls_name(rc, which, name, sizeof(name));
    o = raycluster__build_object(b, "cert-manager.io/v1", kind, name, raycluster__namespace(rc), &meta);
    l = raycluster__build_obj(b, meta, "labels");
    raycluster__build_set_str(b, l, RC_LABEL_APP_NAME, RC_APP_NAME);
    raycluster__build_set_str(b, l, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    raycluster__build_set_str(b, l, "app.kubernetes.io/component", component);
    raycluster__build_set_str(b, l, RC_LABEL_CLUSTER, raycluster__name(rc));
    raycluster__build_owner_ref(b, o, rc);
    *spec = raycluster__build_obj(b, o, "spec");
    return o;
}

static void issuer_ref(struct rcb *b, cJSON *spec, const cJSON *rc, enum rc_tls_obj which)
{
    char name[300];
    cJSON *r = raycluster__build_obj(b, spec, "issuerRef");
    rc_tls_name(rc, which, name, sizeof(name));
    raycluster__build_set_str(b, r, "name", name);
    raycluster__build_set_str(b, r, "kind", "Issuer");
    raycluster__build_set_str(b, r, "group", "cert-manager.io");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* normalizeIPs: sorted, unique, without "", always 127.0.0.1 */
static cJSON *ip_list(struct rcb *b, const char *const *ips, size_t n)
{
    const char **all = calloc(n + 1, sizeof(*all));
    size_t k = 0;
    cJSON *arr;
    if (!all) {
        b->err = -ENOMEM;
        return NULL;
    }
    all[k++] = "127.0.0.1";
    for (size_t i = 0; i < n; i++)
        if (ips[i] && *ips[i])
            all[k++] = ips[i];
    qsort(all, k, sizeof(*all), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(all[u - 1], all[i]))
            all[u++] = all[i];
    arr = raycluster__build_str_array(b, all, u);
    free(all);
    return arr;
}

cJSON *rc_build_tls_objects(const cJSON *rc, const struct rc_build_opts *o,
                            const char *const *head_ips, size_t nhead,
                            const char *const *worker_ips, size_t nworker, int *err)
{
    static const char *const ca_usages[] = { "cert sign", "crl sign" };
    static const char *const leaf_usages[] = { "digital signature", "key encipherment",
                                               "server auth", "client auth" };
    struct rcb b = { 0 };
    char name[300], fqdn[512];
    cJSON *all, *spec;
    if (!rc_tls_enabled(rc))
        return NULL;
    if (!(all = cJSON_CreateArray())) {
        b.err = -ENOMEM;
        goto out;
    }
    /* 0: the self-signed Issuer */
    raycluster__build_append(&b, all, cm_object(&b, rc, "Issuer", RC_TLS_SELFSIGNED_ISSUER,
                                                "selfsigned-issuer", &spec));
    raycluster__build_obj(&b, spec, "selfSigned");
    /* 1: the CA Certificate */
    raycluster__build_append(&b, all, cm_object(&b, rc, "Certificate", RC_TLS_CA_CERT, "ca-certificate",
                                                &spec));
    rc_tls_name(rc, RC_TLS_CA_SECRET, name, sizeof(name));
    raycluster__build_set_str(&b, spec, "secretName", name);
    raycluster__build_set_bool(&b, spec, "isCA", true);
    snprintf(fqdn, sizeof(fqdn), "ray-ca-%s", raycluster__name(rc));
    raycluster__build_set_str(&b, spec, "commonName", fqdn);
    raycluster__build_set_str(&b, raycluster__build_obj(&b, spec, "privateKey"), "algorithm", "RSA");
    raycluster__build_set_num(&b, raycluster__build_obj(&b, spec, "privateKey"), "size", 4096);
    raycluster__build_set_str(&b, spec, "duration", "87600h0m0s");   /* 3650 days as Go prints it */
    raycluster__build_set_str(&b, spec, "renewBefore", "720h0m0s");
    raycluster__build_set(&b, spec, "usages", raycluster__build_str_array(&b, ca_usages, 2));
    issuer_ref(&b, spec, rc, RC_TLS_SELFSIGNED_ISSUER);
    /* 2: the CA Issuer */
    raycluster__build_append(&b, all, cm_object(&b, rc, "Issuer", RC_TLS_CA_ISSUER, "ca-issuer", &spec));
    raycluster__build_set_str(&b, raycluster__build_obj(&b, spec, "ca"), "secretName", name);
    /* 3, 4: the head and worker leaf Certificates */
    for (int head = 1; head >= 0; head--) {
        const char *dns[2] = { "localhost", fqdn };
        size_t ndns = 1;
        raycluster__build_append(&b, all, cm_object(&b, rc, "Certificate",
                                                    head ? RC_TLS_HEAD_CERT : RC_TLS_WORKER_CERT,
                                                    head ? "head-certificate" : "worker-certificate", &spec));
        rc_tls_name(rc, head ? RC_TLS_HEAD_SECRET : RC_TLS_WORKER_SECRET, name, sizeof(name));
        raycluster__build_set_str(&b, spec, "secretName", name);
        raycluster__build_set_str(&b, spec, "duration", "2160h0m0s");
        raycluster__build_set_str(&b, spec, "renewBefore", "360h0m0s");
        if (head) {
            /* GenerateFQDNServiceName, after "localhost" in sort order */
            if (rc_head_service_fqdn(rc, o, fqdn, sizeof(fqdn)) < 0)
                b.err = -ENAMETOOLONG;
            else if (strcmp(fqdn, "localhost")) {
                ndns = 2;
                if (strcmp(fqdn, "localhost") < 0) {
                    dns[0] = fqdn;
                    dns[1] = "localhost";
                }
            }
        }
        raycluster__build_set(&b, spec, "dnsNames", raycluster__build_str_array(&b, dns, ndns));
        raycluster__build_set(&b, spec, "ipAddresses", head ? ip_list(&b, head_ips, nhead)
                                              : ip_list(&b, worker_ips, nworker));
        raycluster__build_set(&b, spec, "usages", raycluster__build_str_array(&b, leaf_usages, 4));
        issuer_ref(&b, spec, rc, RC_TLS_CA_ISSUER);
    }
out:
    return raycluster__build_done(&b, all, err);
}

/*
 * tlsgen.c - makes the PKI kubesim --tls serves with: a self-signed ECDSA P-256
 * CA and a serving certificate it signs, with the SANs every client on this
 * machine connects by (127.0.0.1, ::1, localhost, and the listen host).
 *
 * The CA is reused when DIR already holds one, so kubeconfigs written earlier
 * (which embed or point at ca.crt) keep working across restarts; the serving
 * certificate is always re-issued because the listen host may have changed.
 * Keys are PKCS#8 PEM, written 0600 through a temporary file and rename(2) so a
 * reader never sees half a key.
 */
#include "kubesim/main/tlsgen.h"
#include "kubesim/runtime/runtime.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CA_DAYS     3650
#define SERVER_DAYS 825

/* ---- files ------------------------------------------------------------------ */

static int write_file(const char *dir, const char *name, const gnutls_datum_t *d, mode_t mode)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    int fd, rc = 0;

    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
        snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    fd = mkstemp(tmp);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, mode) < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = util_write_all(fd, d->data, d->size)) < 0)
        goto out;
    if (fsync(fd) < 0)
        rc = -errno;
out:
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

/* Reads DIR/name (at most 64 KiB) into d (gnutls_free'd by the caller). */
static int read_file(const char *dir, const char *name, gnutls_datum_t *d)
{
    char path[PATH_MAX];
    struct stat st;
    ssize_t n;
    int fd, rc = 0;

    d->data = NULL;
    d->size = 0;
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    if (st.st_size <= 0 || st.st_size > 65536) {
        rc = -EINVAL;
        goto out;
    }
    d->data = gnutls_malloc((size_t)st.st_size);
    if (!d->data) {
        rc = -ENOMEM;
        goto out;
    }
    n = read(fd, d->data, (size_t)st.st_size);
    if (n != st.st_size) {
        rc = n < 0 ? -errno : -EIO;
        goto out;
    }
    d->size = (unsigned)n;
out:
    if (rc < 0) {
        gnutls_free(d->data);
        d->data = NULL;
    }
    close(fd);
    return rc;
}

/* ---- certificates -------------------------------------------------------------- */

static int gnutls_err(const char *what, int grc)
{
    log_error("tlsgen failed", "step", what, "error", gnutls_strerror(grc), NULL);
    return grc == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EIO;
}

#define G(call, what)                                                                        \
    do {                                                                                     \
        int grc_ = (call);                                                                   \
        if (grc_ < 0) {                                                                      \
            rc = gnutls_err(what, grc_);                                                     \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

/* Fields both certificates share: version, random positive serial, validity, DN, key. */
static int init_cert(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *dn, int days)
{
    unsigned char serial[16];
    const char *bad;
    time_t now = time(NULL);
    int rc = 0;

    G(gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial)), "serial");
    serial[0] &= 0x7f;   /* DER integers are signed: keep it positive */
    serial[0] |= 0x01;
    G(gnutls_x509_crt_set_version(crt, 3), "version");
    G(gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)), "serial");
    /* backdated an hour so a slightly slow client clock still accepts it */
    G(gnutls_x509_crt_set_activation_time(crt, now - 3600), "activation");
    G(gnutls_x509_crt_set_expiration_time(crt, now + (time_t)days * 86400), "expiration");
    G(gnutls_x509_crt_set_dn(crt, dn, &bad), "dn");
    G(gnutls_x509_crt_set_key(crt, key), "key");
out:
    return rc;
}

static int new_key(gnutls_x509_privkey_t *key)
{
    int rc = 0;

    G(gnutls_x509_privkey_init(key), "key init");
    G(gnutls_x509_privkey_generate(*key, GNUTLS_PK_ECDSA,
                                   GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
      "key generate");
out:
    return rc;
}

static int export_key(const char *dir, const char *name, gnutls_x509_privkey_t key)
{
    gnutls_datum_t d = { NULL, 0 };
    int rc = 0;

    G(gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d),
      "key export");
    rc = write_file(dir, name, &d, 0600);
out:
    if (d.data) {
        gnutls_memset(d.data, 0, d.size);
        gnutls_free(d.data);
    }
    return rc;
}

static int export_crt(const char *dir, const char *name, gnutls_x509_crt_t crt)
{
    gnutls_datum_t d = { NULL, 0 };
    int rc = 0;

    G(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), "cert export");
    rc = write_file(dir, name, &d, 0644);
out:
    gnutls_free(d.data);
    return rc;
}

/* Loads DIR/ca.crt + DIR/ca.key; -ENOENT when either is missing. */
static int load_ca(const char *dir, gnutls_x509_crt_t *crt, gnutls_x509_privkey_t *key)
{
    gnutls_datum_t c = { NULL, 0 }, k = { NULL, 0 };
    int rc;

    if ((rc = read_file(dir, "ca.crt", &c)) < 0 || (rc = read_file(dir, "ca.key", &k)) < 0)
        goto out;
    G(gnutls_x509_crt_init(crt), "ca init");
    G(gnutls_x509_crt_import(*crt, &c, GNUTLS_X509_FMT_PEM), "ca import");
    G(gnutls_x509_privkey_init(key), "ca key init");
    G(gnutls_x509_privkey_import2(*key, &k, GNUTLS_X509_FMT_PEM, NULL, 0), "ca key import");
out:
    gnutls_free(c.data);
    if (k.data) {
        gnutls_memset(k.data, 0, k.size);
        gnutls_free(k.data);
    }
    return rc;
}

static int make_ca(gnutls_x509_crt_t *crt, gnutls_x509_privkey_t *key)
{
    unsigned char kid[64];
    size_t kid_len = sizeof(kid);
    int rc;

    if ((rc = new_key(key)) < 0)
        return rc;
    G(gnutls_x509_crt_init(crt), "ca init");
    if ((rc = init_cert(*crt, *key, "CN=kubesim-ca,O=rayop", CA_DAYS)) < 0)
        goto out;
    G(gnutls_x509_crt_set_basic_constraints(*crt, 1, 0), "ca constraints");
    G(gnutls_x509_crt_set_key_usage(*crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
                                              GNUTLS_KEY_DIGITAL_SIGNATURE),
      "ca usage");
    G(gnutls_x509_privkey_get_key_id(*key, GNUTLS_KEYID_USE_SHA1, kid, &kid_len), "ca key id");
    G(gnutls_x509_crt_set_subject_key_id(*crt, kid, kid_len), "ca ski");
    G(gnutls_x509_crt_sign2(*crt, *crt, *key, GNUTLS_DIG_SHA256, 0), "ca sign");
out:
    return rc;
}

static int add_san(gnutls_x509_crt_t crt, const char *name)
{
    unsigned char ip[16];
    int rc = 0;

    if (inet_pton(AF_INET, name, ip) == 1)
        G(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
                                               GNUTLS_FSAN_APPEND), "san ip4");
    else if (inet_pton(AF_INET6, name, ip) == 1)
        G(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
                                               GNUTLS_FSAN_APPEND), "san ip6");
    else
        G(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name,
                                               (unsigned)strlen(name), GNUTLS_FSAN_APPEND),
          "san dns");
out:
    return rc;
}

/* A listen host worth a SAN: a name or a concrete address (not a wildcard), sane length. */
static bool extra_host(const char *host)
{
    static const char *const fixed[] = { "127.0.0.1", "::1", "localhost", "0.0.0.0", "::" };

    if (!host || !*host || strlen(host) > 253)
        return false;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strcmp(host, fixed[i]) == 0)
            return false;
    for (const char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == ':'))
            return false;
    return true;
}

int tlsgen_write(const char *dir, const char *host)
{
    gnutls_x509_crt_t ca = NULL, srv = NULL;
    gnutls_x509_privkey_t ca_key = NULL, srv_key = NULL;
    unsigned char kid[64];
    size_t kid_len = sizeof(kid);
    int rc;

    if (!dir || !*dir)
        return -EINVAL;
    rc = load_ca(dir, &ca, &ca_key);
    if (rc == -ENOENT) {
        if (ca)
            gnutls_x509_crt_deinit(ca);
        if (ca_key)
            gnutls_x509_privkey_deinit(ca_key);
        ca = NULL;
        ca_key = NULL;
        if ((rc = make_ca(&ca, &ca_key)) < 0 ||
            (rc = export_key(dir, "ca.key", ca_key)) < 0 ||
            (rc = export_crt(dir, "ca.crt", ca)) < 0)
            goto out;
    } else if (rc < 0) {
        goto out;
    }
    if ((rc = new_key(&srv_key)) < 0)
        goto out;
    G(gnutls_x509_crt_init(&srv), "server init");
    if ((rc = init_cert(srv, srv_key, "CN=kubesim,O=rayop", SERVER_DAYS)) < 0)
        goto out;
    G(gnutls_x509_crt_set_basic_constraints(srv, 0, -1), "server constraints");
    G(gnutls_x509_crt_set_key_usage(srv, GNUTLS_KEY_DIGITAL_SIGNATURE |
                                             GNUTLS_KEY_KEY_ENCIPHERMENT),
      "server usage");
    G(gnutls_x509_crt_set_key_purpose_oid(srv, GNUTLS_KP_TLS_WWW_SERVER, 0), "server purpose");
    if ((rc = add_san(srv, "localhost")) < 0 || (rc = add_san(srv, "127.0.0.1")) < 0 ||
        (rc = add_san(srv, "::1")) < 0 ||
        (rc = add_san(srv, RUNTIME_SERVICE_IP)) < 0 || (extra_host(host) && (rc = add_san(srv, host)) < 0))
        goto out;
    /* a CA brought by the user may lack a subject key id: the AKI is optional then */
    if (gnutls_x509_crt_get_subject_key_id(ca, kid, &kid_len, NULL) == 0)
        G(gnutls_x509_crt_set_authority_key_id(srv, kid, kid_len), "server aki");
    kid_len = sizeof(kid);
    G(gnutls_x509_privkey_get_key_id(srv_key, GNUTLS_KEYID_USE_SHA1, kid, &kid_len), "key id");
    G(gnutls_x509_crt_set_subject_key_id(srv, kid, kid_len), "server ski");
    G(gnutls_x509_crt_sign2(srv, ca, ca_key, GNUTLS_DIG_SHA256, 0), "server sign");
    if ((rc = export_key(dir, "server.key", srv_key)) < 0 ||
        (rc = export_crt(dir, "server.crt", srv)) < 0)
        goto out;
out:
    if (srv)
        gnutls_x509_crt_deinit(srv);
    if (ca)
        gnutls_x509_crt_deinit(ca);
    if (srv_key)
        gnutls_x509_privkey_deinit(srv_key);
    if (ca_key)
        gnutls_x509_privkey_deinit(ca_key);
    return rc;
}

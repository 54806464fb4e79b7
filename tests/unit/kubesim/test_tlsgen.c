/* test_tlsgen.c - unit tests of sim/tlsgen: the serving certificate verifies against
 * the generated CA, carries the expected SANs and matches its key; keys are 0600;
 * an existing CA is reused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubesim/main/tlsgen.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/test_tlsgen.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    static const char *files[] = { "ca.crt", "ca.key", "server.crt", "server.key" };
    char p[128];
    (void)state;
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        unlink(p);
    }
    return rmdir(dir);
}

static gnutls_datum_t slurp(const char *name)
{
    char p[128];
    gnutls_datum_t d = { NULL, 0 };
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    assert_int_equal(gnutls_load_file(p, &d), 0);
    return d;
}

static gnutls_x509_crt_t load_crt(const char *name)
{
    gnutls_x509_crt_t c;
    gnutls_datum_t d = slurp(name);
    assert_int_equal(gnutls_x509_crt_init(&c), 0);
    assert_int_equal(gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_PEM), 0);
    gnutls_free(d.data);
    return c;
}

static mode_t mode_of(const char *name)
{
    char p[128];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    assert_int_equal(stat(p, &st), 0);
    return st.st_mode & 0777;
}

static bool has_san(gnutls_x509_crt_t c, int type, const void *val, size_t len)
{
    for (unsigned i = 0;; i++) {
        char buf[256];
        size_t n = sizeof(buf);
        int t = gnutls_x509_crt_get_subject_alt_name(c, i, buf, &n, NULL);
        if (t < 0)
            return false;
        if (t == type && n == len && memcmp(buf, val, len) == 0)
            return true;
    }
}

static void test_server_cert_verifies_with_sans(void **state)
{
    gnutls_x509_crt_t ca, srv;
    gnutls_x509_privkey_t key;
    gnutls_datum_t kd;
    unsigned status = 99;
    unsigned char ip4[4], ip6[16], ipx[4], id1[64], id2[64];
    size_t l1 = sizeof(id1), l2 = sizeof(id2);
    (void)state;

    assert_int_equal(tlsgen_write(dir, "10.1.2.3"), 0);
    ca = load_crt("ca.crt");
    srv = load_crt("server.crt");
    assert_int_equal(gnutls_x509_crt_verify(srv, &ca, 1, 0, &status), 0);
    assert_int_equal(status, 0);
    /* the CA is a CA, the server cert is not */
    assert_int_equal(gnutls_x509_crt_get_ca_status(ca, NULL), 1);
    assert_int_equal(gnutls_x509_crt_get_ca_status(srv, NULL), 0);
    inet_pton(AF_INET, "127.0.0.1", ip4);
    inet_pton(AF_INET6, "::1", ip6);
    inet_pton(AF_INET, "10.1.2.3", ipx);
    assert_true(has_san(srv, GNUTLS_SAN_IPADDRESS, ip4, 4));
    assert_true(has_san(srv, GNUTLS_SAN_IPADDRESS, ip6, 16));
    assert_true(has_san(srv, GNUTLS_SAN_IPADDRESS, ipx, 4));
    assert_true(has_san(srv, GNUTLS_SAN_DNSNAME, "localhost", 9));
    assert_false(has_san(srv, GNUTLS_SAN_DNSNAME, "example.com", 11));
    assert_true(gnutls_x509_crt_check_hostname(srv, "localhost"));
    assert_false(gnutls_x509_crt_check_hostname(srv, "other.host"));
    /* the key on disk is the certificate's */
    kd = slurp("server.key");
    assert_non_null(strstr((const char *)kd.data, "BEGIN PRIVATE KEY"));
    assert_int_equal(gnutls_x509_privkey_init(&key), 0);
    assert_int_equal(gnutls_x509_privkey_import2(key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0), 0);
    assert_int_equal(gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, id1, &l1), 0);
    assert_int_equal(gnutls_x509_crt_get_key_id(srv, GNUTLS_KEYID_USE_SHA256, id2, &l2), 0);
    assert_int_equal(l1, l2);
    assert_memory_equal(id1, id2, l1);
    assert_int_equal(mode_of("server.key"), 0600);
    assert_int_equal(mode_of("ca.key"), 0600);
    gnutls_free(kd.data);
    gnutls_x509_privkey_deinit(key);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(srv);
}

static void test_ca_reused_and_hostname_san(void **state)
{
    gnutls_datum_t before, after;
    gnutls_x509_crt_t ca, srv;
    unsigned status = 99;
    (void)state;

    assert_int_equal(tlsgen_write(dir, NULL), 0);
    before = slurp("ca.crt");
    assert_int_equal(tlsgen_write(dir, "kubesim.test"), 0);
    after = slurp("ca.crt");
    assert_int_equal(before.size, after.size);
    assert_memory_equal(before.data, after.data, before.size);
    ca = load_crt("ca.crt");
    srv = load_crt("server.crt");
    assert_int_equal(gnutls_x509_crt_verify(srv, &ca, 1, 0, &status), 0);
    assert_int_equal(status, 0);
    assert_true(has_san(srv, GNUTLS_SAN_DNSNAME, "kubesim.test", 12));
    assert_true(gnutls_x509_crt_check_hostname(srv, "kubesim.test"));
    gnutls_free(before.data);
    gnutls_free(after.data);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(srv);
    /* bad directories are errors, not crashes */
    assert_int_equal(tlsgen_write(NULL, NULL), -EINVAL);
    assert_true(tlsgen_write("/nonexistent/dir", NULL) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_server_cert_verifies_with_sans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ca_reused_and_hostname_san, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

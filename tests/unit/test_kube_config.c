/* test_kube_config.c - kubeconfig parsing (fields, -data, contexts, merge, bounds),
 * in-cluster configuration from a temporary service-account directory, and bearer
 * token rotation with a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "kube/internal.h"
#include "kube/kube.h"

static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_kube_config.XXXXXX");
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown_dir(void **state)
{
    char cmd[300];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const char *content)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static char *path_of(const char *name)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    return path;
}

static int parse(const char *yaml, const char *ctx, struct kube_config **out, char *err)
{
    return kube_config_parse(yaml, strlen(yaml), ctx, tmpdir, out, err, 256);
}

static void test_minimal_cluster_and_context(void **state)
{
    struct kube_config *cfg;
    char err[256] = "";
    (void)state;
    assert_int_equal(parse("apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n"
                           "    server: http://127.0.0.1:8080/\n"
                           "    insecure-skip-tls-verify: true\n"
                           "contexts:\n- name: sim\n  context:\n    cluster: sim\n"
                           "current-context: sim\n",
                           NULL, &cfg, err),
                     0);
    assert_string_equal(cfg->server, "http://127.0.0.1:8080");
    assert_string_equal(cfg->namespace, "default");
    assert_string_equal(cfg->context, "sim");
    assert_int_equal(cfg->insecure_skip_tls_verify, 1);
    assert_null(cfg->token);
    assert_null(cfg->ca_file);
    kube_config_free(cfg);
}

/* "hello PEM\n" and friends, base64-encoded. */
static void test_data_fields_are_decoded(void **state)
{
    struct kube_config *cfg;
    char err[256] = "";
    char *tok = NULL;
    (void)state;
    assert_int_equal(parse("clusters:\n- name: c\n  cluster:\n    server: https://k:6443\n"
                           "    certificate-authority-data: aGVsbG8gUEVNCg==\n"
                           "    tls-server-name: kubernetes.default\n"
                           "    disable-compression: true\n"
                           "users:\n- name: u\n  user:\n    token: s3cret\n"
                           "    client-certificate-data: Y2VydA==\n"
                           "    client-key-data: a2V5\n"
                           "contexts:\n- name: x\n  context: {cluster: c, user: u, namespace: ray}\n"
                           "current-context: x\n",
                           NULL, &cfg, err),
                     0);
    assert_int_equal(cfg->ca_pem_len, 10);
    assert_memory_equal(cfg->ca_pem, "hello PEM\n", 10);
    assert_string_equal(cfg->cert_pem, "cert");
    assert_string_equal(cfg->key_pem, "key");
    assert_string_equal(cfg->tls_server_name, "kubernetes.default");
    assert_int_equal(cfg->disable_compression, 1);
    assert_string_equal(cfg->namespace, "ray");
    assert_int_equal(kube_config_token(cfg, 0, &tok), 0);
    assert_string_equal(tok, "s3cret");
    free(tok);
    kube_config_free(cfg);
}

static void test_relative_paths_resolve_against_file_dir(void **state)
{
    struct kube_config *cfg;
    char err[256] = "", expect[600];
    (void)state;
    assert_int_equal(parse("clusters:\n- name: c\n  cluster:\n    server: k.example:443\n"
                           "    certificate-authority: certs/ca.crt\n"
                           "users:\n- name: u\n  user:\n    client-certificate: /abs/c.crt\n"
                           "    client-key: k.key\n    tokenFile: tok\n"
                           "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                           "current-context: x\n",
                           NULL, &cfg, err),
                     0);
    assert_string_equal(cfg->server, "https://k.example:443"); /* bare host defaults to https */
    snprintf(expect, sizeof(expect), "%s/certs/ca.crt", tmpdir);
    assert_string_equal(cfg->ca_file, expect);
    assert_string_equal(cfg->cert_file, "/abs/c.crt");
    snprintf(expect, sizeof(expect), "%s/k.key", tmpdir);
    assert_string_equal(cfg->key_file, expect);
    snprintf(expect, sizeof(expect), "%s/tok", tmpdir);
    assert_string_equal(cfg->token_file, expect);
    kube_config_free(cfg);
}

static const char two_contexts[] =
    "clusters:\n- name: a\n  cluster: {server: 'https://a:1'}\n"
    "- name: b\n  cluster: {server: 'https://b:2'}\n"
    "contexts:\n- name: ca\n  context: {cluster: a}\n"
    "- name: cb\n  context: {cluster: b, namespace: nsb}\n"
    "current-context: ca\n";

static void test_context_override(void **state)
{
    struct kube_config *cfg;
    char err[256] = "";
    (void)state;
    assert_int_equal(parse(two_contexts, NULL, &cfg, err), 0);
    assert_string_equal(cfg->server, "https://a:1");
    kube_config_free(cfg);
    assert_int_equal(parse(two_contexts, "cb", &cfg, err), 0);
    assert_string_equal(cfg->server, "https://b:2");
    assert_string_equal(cfg->namespace, "nsb");
    assert_string_equal(cfg->context, "cb");
    kube_config_free(cfg);
    assert_int_equal(parse(two_contexts, "nope", &cfg, err), -ENOENT);
    assert_null(cfg);
    assert_non_null(strstr(err, "\"nope\" not found"));
}

static void test_invalid_configs_have_clear_errors(void **state)
{
    static const struct { const char *yaml; int rc; const char *msg; } cases[] = {
        { "clusters: [}", -EINVAL, "yaml:" },
        { "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", -ENOENT,
          "cluster \"c\"" },
        { "clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: true}\n"
          "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", -EINVAL,
          "has no server" },
        { "clusters:\n- name: c\n  cluster: {server: 'https://c', insecure-skip-tls-verify: true,"
          " certificate-authority: ca.crt}\n"
          "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", -EINVAL,
          "insecure flag" },
        { "clusters:\n- name: c\n  cluster: {server: 'https://c', certificate-authority-data: '!!'}\n"
          "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", -EINVAL,
          "base64" },
        { "clusters:\n- name: c\n  cluster: {server: 'https://c'}\n"
          "users:\n- name: u\n  user: {exec: {command: aws}}\n"
          "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n", -ENOTSUP,
          "exec authentication" },
        { "clusters:\n- name: c\n  cluster: {server: 'https://c'}\n"
          "contexts:\n- name: x\n  context: {cluster: c, user: ghost}\ncurrent-context: x\n",
          -ENOENT, "user \"ghost\"" },
        { "clusters:\n- name: c\n  cluster: {server: 'https://c'}\n"
          "contexts:\n- name: x\n  context: {cluster: c}\n", -EINVAL, "no context selected" },
        { "a: &x [1]\nb: *x\n", -EINVAL, "aliases" },
        { "- just\n- a list\n", -EINVAL, "top level" },
        { "clusters: {name: c}\n", -EINVAL, "must be a list" },
        { "clusters:\n- cluster: {server: 'https://c'}\n", -EINVAL, "no name" },
        { "clusters:\n- name: c\n  cluster: {server: 'ftp://c'}\n"
          "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", -EINVAL,
          "scheme" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kube_config *cfg = (void *)1;
        char err[256] = "";
        int rc = parse(cases[i].yaml, NULL, &cfg, err);
        if (rc != cases[i].rc || strstr(err, cases[i].msg) == NULL)
            fail_msg("case %zu: rc %d err \"%s\"", i, rc, err);
        assert_null(cfg);
    }
}

static void test_parser_bounds(void **state)
{
    struct kube_config *cfg;
    char err[256] = "";
    struct buf b = { 0 };
    (void)state;
    for (int i = 0; i < 40; i++)
        buf_puts(&b, "[");
    assert_int_equal(kube_config_parse(b.data, b.len, NULL, NULL, &cfg, err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "nesting"));
    buf_reset(&b);
    buf_puts(&b, "clusters:\n");
    for (int i = 0; i < KUBE_CONFIG_MAX_ENTRIES + 5; i++)
        buf_printf(&b, "- {name: c%d, cluster: {server: 'https://x'}}\n", i);
    assert_int_equal(kube_config_parse(b.data, b.len, NULL, NULL, &cfg, err, sizeof(err)), -E2BIG);
    assert_non_null(strstr(err, "entries"));
    assert_int_equal(kube_config_parse(b.data, KUBE_CONFIG_MAX_BYTES + 1, NULL, NULL, &cfg, err,
                                       sizeof(err)),
                     -E2BIG);
    buf_free(&b);
    /* An empty document is an empty config: no context to use. */
    assert_int_equal(kube_config_parse("", 0, NULL, NULL, &cfg, err, sizeof(err)), -EINVAL);
}

static void test_merge_first_file_wins(void **state)
{
    struct kube_config *cfg;
    char err[256] = "", paths[2048];
    (void)state;
    write_file("one", "clusters:\n- name: shared\n  cluster: {server: 'https://first'}\n"
                      "contexts:\n- name: c1\n  context: {cluster: shared, namespace: n1}\n");
    write_file("two", "clusters:\n- name: shared\n  cluster: {server: 'https://second'}\n"
                      "- name: only2\n  cluster: {server: 'https://only2'}\n"
                      "contexts:\n- name: c1\n  context: {cluster: only2}\n"
                      "- name: c2\n  context: {cluster: only2}\n"
                      "current-context: c1\n");
    snprintf(paths, sizeof(paths), "%s/one:%s/missing:%s/two", tmpdir, tmpdir, tmpdir);
    assert_int_equal(kube_config_load_files(paths, NULL, &cfg, err, sizeof(err)), 0);
    /* current-context comes from file two, but context c1 and cluster "shared" from file one. */
    assert_string_equal(cfg->context, "c1");
    assert_string_equal(cfg->server, "https://first");
    assert_string_equal(cfg->namespace, "n1");
    kube_config_free(cfg);
    assert_int_equal(kube_config_load_files(paths, "c2", &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://only2");
    kube_config_free(cfg);
    snprintf(paths, sizeof(paths), "%s/missing:%s/missing2", tmpdir, tmpdir);
    assert_int_equal(kube_config_load_files(paths, NULL, &cfg, err, sizeof(err)), -ENOENT);
}

static void test_load_precedence(void **state)
{
    struct kube_config *cfg;
    char err[256] = "";
    struct kube_config_opts o = { 0 };
    char kdir[600];
    (void)state;
    write_file("explicit", "clusters:\n- name: e\n  cluster: {server: 'https://explicit'}\n"
                           "contexts:\n- name: e\n  context: {cluster: e}\ncurrent-context: e\n");
    write_file("env", "clusters:\n- name: e\n  cluster: {server: 'https://env'}\n"
                      "contexts:\n- name: e\n  context: {cluster: e}\ncurrent-context: e\n");
    snprintf(kdir, sizeof(kdir), "%s/.kube", tmpdir);
    mkdir(kdir, 0700);
    write_file(".kube/config", "clusters:\n- name: h\n  cluster: {server: 'https://home'}\n"
                               "contexts:\n- name: h\n  context: {cluster: h}\n"
                               "current-context: h\n");
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("HOME", tmpdir, 1);
    setenv("KUBECONFIG", path_of("env"), 1);
    o.kubeconfig = path_of("explicit");
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://explicit");
    kube_config_free(cfg);
    o.kubeconfig = NULL;
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://env");
    kube_config_free(cfg);
    unsetenv("KUBECONFIG");
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://home");
    kube_config_free(cfg);
    /* A broken in-cluster environment falls through to the home kubeconfig... */
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    o.incluster_dir = tmpdir; /* no token file here */
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://home");
    kube_config_free(cfg);
    /* ...and without one the in-cluster reason is what the user sees. */
    setenv("HOME", "/nonexistent-home", 1);
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "in-cluster"));
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "no kubeconfig"));
    setenv("HOME", tmpdir, 1);
    o.incluster_dir = NULL;
    o.kubeconfig = path_of("does-not-exist");
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "does-not-exist"));
}

static void test_in_cluster(void **state)
{
    struct kube_config *cfg;
    char err[256] = "", sa[600], *tok = NULL;
    (void)state;
    snprintf(sa, sizeof(sa), "%s/sa", tmpdir);
    mkdir(sa, 0700);
    write_file("sa/token", "tok-1\n");
    write_file("sa/ca.crt", "-----BEGIN CERTIFICATE-----\n");
    write_file("sa/namespace", "ray-system\n");
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_config_in_cluster(sa, &cfg, err, sizeof(err)), -ENOENT);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    assert_int_equal(kube_config_in_cluster(sa, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://10.0.0.1:443");
    assert_string_equal(cfg->namespace, "ray-system");
    assert_non_null(strstr(cfg->ca_file, "/sa/ca.crt"));
    assert_int_equal(kube_config_token(cfg, 0, &tok), 0);
    assert_string_equal(tok, "tok-1");
    free(tok);
    kube_config_free(cfg);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(kube_config_in_cluster(sa, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg->server, "https://[fd00::1]:443");
    kube_config_free(cfg);
    /* kube_config_load picks in-cluster when no kubeconfig is named. */
    struct kube_config_opts o = { .incluster_dir = sa };
    unsetenv("KUBECONFIG");
    assert_int_equal(kube_config_load(&o, &cfg, err, sizeof(err)), 0);
    assert_null(cfg->context);
    kube_config_free(cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
    return fake_now;
}

static void test_token_rotation(void **state)
{
    struct kube_config *cfg;
    char err[256] = "", *tok = NULL;
    (void)state;
    write_file("rot", "first-token\n");
    assert_int_equal(parse("clusters:\n- name: c\n  cluster: {server: 'https://c'}\n"
                           "users:\n- name: u\n  user: {tokenFile: rot, token: static}\n"
                           "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                           "current-context: x\n",
                           NULL, &cfg, err),
                     0);
    cfg->token_state->now_ns = fake_clock;
    fake_now = 5000000000ull;
    assert_int_equal(kube_config_token(cfg, 0, &tok), 0);
    assert_string_equal(tok, "first-token"); /* the file wins over the static token */
    free(tok);
    write_file("rot", "second-token-longer\n");
    fake_now += 500000000ull; /* 0.5 s: not re-checked yet */
    assert_int_equal(kube_config_token(cfg, 0, &tok), 0);
    assert_string_equal(tok, "first-token");
    free(tok);
    fake_now += 600000000ull; /* past 1 s since the last check */
    assert_int_equal(kube_config_token(cfg, 0, &tok), 0);
    assert_string_equal(tok, "second-token-longer");
    free(tok);
    write_file("rot", "third\n");
    assert_int_equal(kube_config_token(cfg, 1, &tok), 0); /* forced, as after a 401 */
    assert_string_equal(tok, "third");
    free(tok);
    /* A vanished file keeps the last good token. */
    unlink(path_of("rot"));
    assert_int_equal(kube_config_token(cfg, 1, &tok), 0);
    assert_string_equal(tok, "third");
    free(tok);
    kube_config_free(cfg);
}

static void test_base64_strictness(void **state)
{
    char *out;
    size_t n;
    (void)state;
    assert_int_equal(kobj_base64_decode("aGk=\n", 5, &out, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(out, "hi");
    free(out);
    assert_int_equal(kobj_base64_decode("aG=k", 4, &out, &n), -EINVAL);
    assert_int_equal(kobj_base64_decode("a", 1, &out, &n), -EINVAL);
    assert_int_equal(kobj_base64_decode("a$==", 4, &out, &n), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_cluster_and_context),
        cmocka_unit_test(test_data_fields_are_decoded),
        cmocka_unit_test(test_relative_paths_resolve_against_file_dir),
        cmocka_unit_test(test_context_override),
        cmocka_unit_test(test_invalid_configs_have_clear_errors),
        cmocka_unit_test(test_parser_bounds),
        cmocka_unit_test(test_merge_first_file_wins),
        cmocka_unit_test(test_load_precedence),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_token_rotation),
        cmocka_unit_test(test_base64_strictness),
    };
    return cmocka_run_group_tests_name("kube_config", tests, setup_dir, teardown_dir);
}

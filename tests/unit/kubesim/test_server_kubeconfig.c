/* test_server_kubeconfig.c - the kubeconfig kubesim writes (kubesim/main/kubeconfig.h),
 * read back with the YAML reader: the fields each client needs for http and
 * https, a token with YAML-hostile bytes, the embedded CA, and mode 0600. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubesim/main/kubeconfig.h"
#include "kobj/yamljson.h"

static cJSON *parse(const char *yaml)
{
    cJSON *doc = NULL;
    char err[256];

    assert_non_null(yaml);
    if (yamljson_parse_one(yaml, strlen(yaml), &doc, err, sizeof(err)) < 0)
        fail_msg("kubeconfig does not parse: %s\n%s", err, yaml);
    return doc;
}

static const cJSON *path(const cJSON *o, const char *a, int i, const char *b, const char *c)
{
    o = cJSON_GetObjectItemCaseSensitive(o, a);
    o = cJSON_GetArrayItem(o, i);
    o = cJSON_GetObjectItemCaseSensitive(o, b);
    return c ? cJSON_GetObjectItemCaseSensitive(o, c) : o;
}

static void test_plain_http(void **state)
{
    struct kubeconfig_opts o = { .server_url = "http://127.0.0.1:4321" };
    char *y = kubeconfig_render(&o);
    cJSON *d = parse(y);
    (void)state;

    assert_string_equal(cJSON_GetStringValue(path(d, "clusters", 0, "cluster", "server")),
                        "http://127.0.0.1:4321");
    /* client-node refuses http:// without it */
    assert_true(cJSON_IsTrue(path(d, "clusters", 0, "cluster", "insecure-skip-tls-verify")));
    assert_null(path(d, "clusters", 0, "cluster", "certificate-authority-data"));
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(d, "current-context")), "kubesim");
    assert_string_equal(cJSON_GetStringValue(path(d, "contexts", 0, "context", "cluster")), "kubesim");
    assert_string_equal(cJSON_GetStringValue(path(d, "contexts", 0, "context", "namespace")), "default");
    assert_null(path(d, "users", 0, "user", "token"));
    cJSON_Delete(d);
    free(y);
}

static void test_https_with_ca_and_token(void **state)
{
    const char *ca = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
    const char *tok = "a\"b: c#d\\e 'f'";
    struct kubeconfig_opts o = { .server_url = "https://127.0.0.1:9", .ca_pem = ca,
                                 .ca_len = strlen(ca), .token = tok, .ns = "team-a" };
    char *y = kubeconfig_render(&o);
    cJSON *d = parse(y);
    const char *b64;
    (void)state;

    assert_null(path(d, "clusters", 0, "cluster", "insecure-skip-tls-verify"));
    b64 = cJSON_GetStringValue(path(d, "clusters", 0, "cluster", "certificate-authority-data"));
    assert_non_null(b64);
    /* as coreutils' base64 encodes it */
    assert_string_equal(b64, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlCi0tLS0tRU5EIENFUlRJ"
                             "RklDQVRFLS0tLS0K");
    assert_string_equal(cJSON_GetStringValue(path(d, "users", 0, "user", "token")), tok);
    assert_string_equal(cJSON_GetStringValue(path(d, "contexts", 0, "context", "namespace")), "team-a");
    cJSON_Delete(d);
    free(y);
}

static void test_base64_padding(void **state)
{
    static const struct { const char *in, *out; } cases[] = {
        { "a", "YQ==" }, { "ab", "YWI=" }, { "abc", "YWJj" }, { "abcd", "YWJjZA==" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kubeconfig_opts o = { .server_url = "https://h:1", .ca_pem = cases[i].in,
                                     .ca_len = strlen(cases[i].in) };
        char *y = kubeconfig_render(&o);
        cJSON *d = parse(y);
        assert_string_equal(cJSON_GetStringValue(path(d, "clusters", 0, "cluster",
                                                       "certificate-authority-data")), cases[i].out);
        cJSON_Delete(d);
        free(y);
    }
}

static void test_write_mode_and_replace(void **state)
{
    char dir[] = "/tmp/kubeconfig-test.XXXXXX", file[64];
    struct kubeconfig_opts o = { .server_url = "http://127.0.0.1:1" };
    struct stat st;
    FILE *f;
    char line[128];
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/kc", dir);
    assert_int_equal(kubeconfig_write(file, &o), 0);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    o.server_url = "http://127.0.0.1:2";
    assert_int_equal(kubeconfig_write(file, &o), 0);
    f = fopen(file, "r");
    assert_non_null(f);
    bool found = false;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "server: \"http://127.0.0.1:2\""))
            found = true;
    fclose(f);
    assert_true(found);
    unlink(file);
    assert_int_equal(rmdir(dir), 0);   /* no temporary file left behind */
    assert_true(kubeconfig_write("/nonexistent-dir/kc", &o) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_http),
        cmocka_unit_test(test_https_with_ca_and_token),
        cmocka_unit_test(test_base64_padding),
        cmocka_unit_test(test_write_mode_and_replace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

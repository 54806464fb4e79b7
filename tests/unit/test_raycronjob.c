/*
 * test_raycronjob.c - the RayCronJob controller's pure parts
 * (reconcilers/raycronjob/raycronjob.c): ValidateRayCronJobSpec's rules and
 * messages, the child's deterministic name, and the whole child RayJob
 * object compared with the one KubeRay's constructRayJob builds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "reconcilers/raycronjob/raycronjob.h"
#include "kobj/json_equal.h"

static cJSON *rcj(const char *name, const char *spec_members)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCronJob\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"team-a\",\"uid\":\"u-1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
             "\"spec\":{%s}}", name, spec_members);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    return o;
}

static void expect_invalid(const char *name, const char *spec, const char *msg)
{
    cJSON *o = rcj(name, spec);
    struct cron_schedule s;
    struct tz *z = (struct tz *)1;
    struct rj_config cfg;
    char err[1024] = "";
    rj_config_default(&cfg);
    assert_int_equal(raycronjob_validate(o, &cfg, &s, &z, err, sizeof(err)), -EINVAL);
    assert_null(z);
    if (strcmp(err, msg) != 0)
        fail_msg("got \"%s\", want \"%s\"", err, msg);
    cJSON_Delete(o);
}

#define TPL "\"jobTemplate\":{\"entrypoint\":\"python x.py\",\"rayClusterSpec\":{\"headGroupSpec\":" \
    "{\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\"," \
    "\"image\":\"rayproject/ray:2.52.0\"}]}}}}}"

static void test_validate(void **state)
{
    (void)state;
    /* 36 characters is the limit: 53 - 6 - 11 */
    expect_invalid("a234567890123456789012345678901234567", "\"schedule\":\"* * * * *\"," TPL,
                   "RayCronJob name should be no more than 36 characters");
    expect_invalid("x", "\"schedule\":\"TZ=UTC * * * * *\"," TPL,
                   "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
    expect_invalid("x", "\"schedule\":\"* * * *\"," TPL,
                   "invalid cron schedule: expected exactly 5 fields, found 4: [* * * *]");
    expect_invalid("x", TPL, "invalid cron schedule: empty spec string");
    expect_invalid("x", "\"schedule\":\"@hourly\",\"timeZone\":\"\"," TPL,
                   "timeZone must not be empty string, omit the field to use the local time "
                   "zone of the KubeRay operator");
    expect_invalid("x", "\"schedule\":\"@hourly\",\"timeZone\":\"Nowhere/Land\"," TPL,
                   "invalid time zone: unknown time zone Nowhere/Land");
    expect_invalid("x", "\"schedule\":\"@hourly\"",
                   "invalid RayJob template: spec.jobTemplate must be an object");
    /* the template goes through the RayJob controller's ValidateRayJobSpec */
    expect_invalid("x", "\"schedule\":\"@hourly\",\"jobTemplate\":{\"entrypoint\":\"x\"}",
                   "invalid RayJob template: The RayJob spec is invalid: one of RayClusterSpec or "
                   "ClusterSelector must be set");
    expect_invalid("x", "\"schedule\":\"@hourly\",\"jobTemplate\":{\"entrypoint\":\"x\","
                   "\"ttlSecondsAfterFinished\":-1,\"clusterSelector\":{\"ray.io/cluster\":\"c\"}}",
                   "invalid RayJob template: The RayJob spec is invalid: TTLSecondsAfterFinished "
                   "must be a non-negative integer");

    cJSON *o = rcj("a23456789012345678901234567890123456",
                   "\"schedule\":\"45 21 * * *\",\"timeZone\":\"Asia/Taipei\"," TPL);
    struct cron_schedule s;
    struct tz *z = NULL;
    struct rj_config cfg;
    char err[1024];
    rj_config_default(&cfg);
    if (raycronjob_validate(o, &cfg, &s, &z, err, sizeof(err)) != 0)
        fail_msg("valid RayCronJob refused: %s", err);
    assert_non_null(z);
    assert_string_equal(tz_name(z), "Asia/Taipei");
    assert_int_equal(cron_next(&s, z, 1767225600LL), 1767225600LL + 13 * 3600 + 45 * 60);
    tz_free(z);
    cJSON_Delete(o);
}

static void test_child(void **state)
{
    (void)state;
    char name[64];
    raycronjob_child_name("nightly", 1767275100LL, name, sizeof(name));
    assert_string_equal(name, "nightly-29454585");
    raycronjob_child_name("n", 59, name, sizeof(name));
    assert_string_equal(name, "n-0");

    cJSON *o = rcj("nightly", "\"schedule\":\"45 21 * * *\","
                   "\"jobTemplate\":{\"entrypoint\":\"python x.py\",\"shutdownAfterJobFinishes\":true,"
                   "\"rayClusterSpec\":{\"headGroupSpec\":{\"rayStartParams\":{}}}}");
    cJSON *job = raycronjob_child(o, 1767275100LL);
    assert_non_null(job);
    cJSON *want = cJSON_Parse(
        "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"nightly-29454585\","
        "\"namespace\":\"team-a\",\"labels\":{\"ray.io/cronjob-name\":\"nightly\"},"
        "\"annotations\":{\"ray.io/cronjob-scheduled-timestamp\":\"2026-01-01T13:45:00Z\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCronJob\",\"name\":\"nightly\","
        "\"uid\":\"u-1\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        "\"spec\":{\"entrypoint\":\"python x.py\",\"shutdownAfterJobFinishes\":true,"
        "\"rayClusterSpec\":{\"headGroupSpec\":{\"rayStartParams\":{}}}}}");
    assert_non_null(want);
    if (!json_equal(job, want)) {
        char *got = cJSON_PrintUnformatted(job);
        fail_msg("child differs: %s", got);
    }
    /* the template is copied, not shared */
    cJSON_Delete(o);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(job, "spec"), "entrypoint")->valuestring,
                        "python x.py");
    cJSON_Delete(want);
    cJSON_Delete(job);

    cJSON *no_uid = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"jobTemplate\":{}}}");
    assert_null(raycronjob_child(no_uid, 60));
    cJSON_Delete(no_uid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_child),
    };
    return cmocka_run_group_tests_name("raycronjob", tests, NULL, NULL);
}

/*
 * test_cron.c - RayCronJob schedules (reconcilers/raycronjob/cron.c, tz.c):
 * robfig/cron's grammar and error messages, ranges/steps/names, the DOM/DOW
 * rule, descriptors and @every, next-fire times in UTC and across DST in real
 * zones (gap skipped, overlap fired twice, midnight inside a gap), the
 * southern hemisphere, wall-time resolution as Go's time.Date, zone name
 * checks, malformed TZif data, and the same answers from several threads at
 * once on one shared zone. Expected instants were computed independently
 * (Python's zoneinfo for offsets; robfig's algorithm traced by hand for fires).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reconcilers/raycronjob/cron.h"

/* 2026-01-01T00:00:00Z, a Thursday */
#define JAN1 1767225600LL
#define H 3600LL
#define D 86400LL

static struct tz *zone(const char *name)
{
    char err[128];
    struct tz *z = NULL;
    assert_int_equal(tz_load(name, &z, err, sizeof(err)), 0);
    return z;
}

static int64_t next_in(const char *spec, const char *zname, int64_t t)
{
    struct cron_schedule s;
    char err[256];
    assert_int_equal(cron_parse(spec, &s, err, sizeof(err)), 0);
    struct tz *z = zone(zname);
    int64_t n = cron_next(&s, z, t);
    tz_free(z);
    return n;
}

static void expect_error(const char *spec, const char *msg)
{
    struct cron_schedule s;
    char err[256] = "";
    assert_int_equal(cron_parse(spec, &s, err, sizeof(err)), -EINVAL);
    if (!strstr(err, msg))
        fail_msg("spec \"%s\": error \"%s\" lacks \"%s\"", spec, err, msg);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("", "empty spec string");
    expect_error("* * * *", "expected exactly 5 fields, found 4");
    expect_error("0 * * * * *", "expected exactly 5 fields, found 6");
    expect_error("60 * * * *", "end of range (60) above maximum (59): 60");
    expect_error("* 24 * * *", "above maximum (23)");
    expect_error("* * 0 * *", "beginning of range (0) below minimum (1): 0");
    expect_error("* * * 13 *", "above maximum (12)");
    expect_error("* * * * 7", "end of range (7) above maximum (6)");
    expect_error("5-2 * * * *", "beginning of range (5) beyond end of range (2)");
    expect_error("*/0 * * * *", "step of range should be a positive number");
    expect_error("1/2/3 * * * *", "too many slashes");
    expect_error("1-2-3 * * * *", "too many hyphens");
    expect_error("x * * * *", "failed to parse int from x");
    expect_error("-1 * * * *", "failed to parse int from ");
    expect_error("* * * foo *", "failed to parse int from foo");
    expect_error("99999999999999999999 * * * *", "failed to parse int");
    expect_error("@fortnightly", "unrecognized descriptor: @fortnightly");
    expect_error("@hourly ", "unrecognized descriptor");
    expect_error("@every", "unrecognized descriptor");
    expect_error("@every 5", "failed to parse duration");
    expect_error("@every 5x", "failed to parse duration");
    expect_error("TZ=UTC", "provided bad location");
    char longspec[CRON_SPEC_MAX + 8];
    memset(longspec, '1', sizeof(longspec) - 1);
    longspec[sizeof(longspec) - 1] = '\0';
    expect_error(longspec, "longer than");
}

static void test_fields(void **state)
{
    (void)state;
    struct cron_schedule s;
    char err[256];
    assert_int_equal(cron_parse("*/15 5/20 1-10/3 jan-MAR Mon-fri", &s, err, sizeof(err)), 0);
    assert_int_equal(s.minute, (1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45));
    assert_int_equal(s.hour, (1ULL << 5));   /* 5/20 = 5-23/20: 5 only */
    assert_int_equal(s.dom, (1ULL << 1) | (1ULL << 4) | (1ULL << 7) | (1ULL << 10));
    assert_int_equal(s.month, (1ULL << 1) | (1ULL << 2) | (1ULL << 3));
    assert_int_equal(s.dow, 0x3eULL);
    /* star bit: * and ? and * /1 keep it, a step > 1 drops it; "*-5" is "*" */
    assert_int_equal(cron_parse("? */1 */2 *-5 sun,sat", &s, err, sizeof(err)), 0);
    assert_true(s.minute & CRON_STAR_BIT);
    assert_true(s.hour & CRON_STAR_BIT);
    assert_false(s.dom & CRON_STAR_BIT);
    assert_int_equal(s.month, (0x1ffeULL) | CRON_STAR_BIT);
    assert_int_equal(s.dow, (1ULL << 0) | (1ULL << 6));
    /* empty list members are skipped; whitespace of any ASCII kind separates */
    assert_int_equal(cron_parse("1,,2\t*\n* *  *", &s, err, sizeof(err)), 0);
    assert_int_equal(s.minute, 6ULL);
    assert_int_equal(cron_parse("+5 00 * * *", &s, err, sizeof(err)), 0);
    assert_int_equal(s.minute, 1ULL << 5);
    /* zone prefixes: both spellings, trimmed */
    assert_int_equal(cron_parse("CRON_TZ=Asia/Taipei   45 21 * * *  ", &s, err, sizeof(err)), 0);
    assert_string_equal(s.zone, "Asia/Taipei");
    assert_int_equal(cron_parse("TZ=UTC @every 1m", &s, err, sizeof(err)), 0);
    assert_string_equal(s.zone, "UTC");
    assert_true(s.every);
    assert_int_equal(s.every_s, 60);
}

static void test_durations(void **state)
{
    (void)state;
    int64_t ns;
    assert_int_equal(cron_parse_duration("1h30m", &ns), 0);
    assert_int_equal(ns, 5400LL * 1000000000LL);
    assert_int_equal(cron_parse_duration("1.5m", &ns), 0);
    assert_int_equal(ns, 90LL * 1000000000LL);
    assert_int_equal(cron_parse_duration(".5s", &ns), 0);
    assert_int_equal(ns, 500000000LL);
    assert_int_equal(cron_parse_duration("-2s", &ns), 0);
    assert_int_equal(ns, -2000000000LL);
    assert_int_equal(cron_parse_duration("0", &ns), 0);
    assert_int_equal(ns, 0);
    assert_int_equal(cron_parse_duration("1\xc2\xb5s", &ns), 0);
    assert_int_equal(ns, 1000);
    assert_int_equal(cron_parse_duration("", &ns), -EINVAL);
    assert_int_equal(cron_parse_duration("5", &ns), -EINVAL);
    assert_int_equal(cron_parse_duration(".s", &ns), -EINVAL);
    assert_int_equal(cron_parse_duration("1d", &ns), -EINVAL);
    assert_int_equal(cron_parse_duration("3000000h", &ns), -ERANGE);
    assert_int_equal(cron_parse_duration("9223372036854775808ns", &ns), -ERANGE);

    struct cron_schedule s;
    char err[256];
    assert_int_equal(cron_parse("@every 500ms", &s, err, sizeof(err)), 0);
    assert_int_equal(s.every_s, 1);            /* below a second: one second */
    assert_int_equal(cron_parse("@every 2.7s", &s, err, sizeof(err)), 0);
    assert_int_equal(s.every_s, 2);            /* fraction dropped */
    assert_int_equal(cron_next(&s, NULL, JAN1), JAN1 + 2);
}

static void test_next_utc(void **state)
{
    (void)state;
    assert_int_equal(next_in("*/15 * * * *", "UTC", JAN1), JAN1 + 15 * 60);
    assert_int_equal(next_in("* * * * *", "UTC", JAN1 + 59), JAN1 + 60);
    /* Saturday noon -> Monday 09:00 */
    assert_int_equal(next_in("0 9 * * mon-fri", "UTC", JAN1 + 2 * D + 12 * H), 1767603600LL);
    /* month/day rules: the 31st skips February; Feb 29 waits for 2028; Feb 30 never */
    assert_int_equal(next_in("0 0 31 * *", "UTC", 1769904000LL), 1774915200LL);
    assert_int_equal(next_in("0 0 29 2 *", "UTC", JAN1 + 59 * D), 1835395200LL);
    assert_int_equal(next_in("0 0 30 2 *", "UTC", JAN1), CRON_NEVER);
    /* both DOM and DOW restricted: either matches (Fri Jan 2 before the 13th) */
    assert_int_equal(next_in("0 0 13 * fri", "UTC", JAN1), JAN1 + D);
    /* DOW restricted, DOM a star: both must match (only Fridays) */
    assert_int_equal(next_in("0 0 * * fri", "UTC", JAN1), JAN1 + D);
    assert_int_equal(next_in("0 0 13 * *", "UTC", JAN1), JAN1 + 12 * D);
    /* "*\/2" drops the star bit: odd days OR Fridays */
    assert_int_equal(next_in("0 0 */2 * fri", "UTC", JAN1), JAN1 + D);
    assert_int_equal(next_in("0 0 */2 * *", "UTC", JAN1), JAN1 + 2 * D);
    /* descriptors */
    assert_int_equal(next_in("@hourly", "UTC", 1767263400LL), 1767265200LL);
    assert_int_equal(next_in("@weekly", "UTC", JAN1), 1767484800LL);
    assert_int_equal(next_in("@monthly", "UTC", JAN1), 1769904000LL);
    assert_int_equal(next_in("@yearly", "UTC", JAN1), 1798761600LL);
    assert_int_equal(next_in("@annually", "UTC", JAN1 - 1), JAN1);
    assert_int_equal(next_in("@daily", "UTC", JAN1), JAN1 + D);
    assert_int_equal(next_in("@midnight", "UTC", JAN1 + 5), JAN1 + D);
    assert_int_equal(next_in("@every 90s", "UTC", JAN1), JAN1 + 90);
    /* KubeRay's timezone sample: 21:45 in Taipei (+08, no DST) */
    assert_int_equal(next_in("45 21 * * *", "Asia/Taipei", JAN1), JAN1 + 13 * H + 45 * 60);
}

static void test_next_dst(void **state)
{
    (void)state;
    /* New York 2026: spring forward Mar 8 02:00 EST -> 03:00 EDT (07:00Z);
     * fall back Nov 1 02:00 EDT -> 01:00 EST (06:00Z). */
    const char *ny = "America/New_York";
    /* 02:30 does not exist on Mar 8: that day is skipped, next is Mar 9 02:30 EDT */
    assert_int_equal(next_in("30 2 * * *", ny, 1772884800LL), 1773037800LL);
    /* 09:00 daily keeps its wall time across the change: 14:00Z then 13:00Z */
    assert_int_equal(next_in("0 9 * * *", ny, 1772892000LL), 1772974800LL);
    /* 01:30 exists twice on Nov 1: fires at 01:30 EDT, again at 01:30 EST, then Nov 2 */
    assert_int_equal(next_in("30 1 * * *", ny, 1793505600LL), 1793511000LL);
    assert_int_equal(next_in("30 1 * * *", ny, 1793511000LL), 1793514600LL);
    assert_int_equal(next_in("30 1 * * *", ny, 1793514600LL), 1793601000LL);
    /* Havana springs forward at midnight (00:00 CST -> 01:00 CDT, 2nd Sunday of
     * March): Mar 8 2026 has no midnight, so "0 0 8 3 *" fires in 2027 */
    assert_int_equal(next_in("0 0 8 3 *", "America/Havana", 1772384400LL), 1804482000LL);
    /* southern hemisphere (footer with start > end): Sydney +11 in January, +10 in July */
    struct tz *syd = zone("Australia/Sydney");
    assert_int_equal(tz_lookup(syd, JAN1, NULL, NULL), 11 * 3600);
    assert_int_equal(tz_lookup(syd, 1782864000LL, NULL, NULL), 10 * 3600);
    /* far future: only the footer rule knows (2100-07-01 in Sydney is +10) */
    assert_int_equal(tz_lookup(syd, 4118083200LL, NULL, NULL), 10 * 3600);
    tz_free(syd);
}

static void test_wall_time(void **state)
{
    (void)state;
    struct tz *z = zone("America/New_York");
    /* a gap time takes the offset after the change (Go): 02:30 -> 01:30 EST = 06:30Z */
    assert_int_equal(tz_make(z, 2026, 3, 8, 2, 30, 0), 1772951400LL);
    /* an overlap time is its first occurrence (EDT): 05:30Z */
    assert_int_equal(tz_make(z, 2026, 11, 1, 1, 30, 0), 1793511000LL);
    /* normalisation: month 13, day 0, hour 24 */
    assert_int_equal(tz_make(z, 2025, 13, 1, 0, 0, 0), tz_make(z, 2026, 1, 1, 0, 0, 0));
    assert_int_equal(tz_make(z, 2026, 3, 0, 0, 0, 0), tz_make(z, 2026, 2, 28, 0, 0, 0));
    assert_int_equal(tz_make(z, 2026, 1, 1, 24, 0, 0), tz_make(z, 2026, 1, 2, 0, 0, 0));
    struct tz_civil c;
    tz_civil_of(z, 1772951400LL, &c);
    assert_int_equal(c.hour, 1);
    assert_int_equal(c.min, 30);
    assert_int_equal(c.wday, 0);
    tz_free(z);
}

static void test_zone_loading(void **state)
{
    (void)state;
    char err[128] = "";
    struct tz *z = NULL;
    assert_int_equal(tz_load("../../etc/passwd", &z, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "time: invalid location name");
    assert_int_equal(tz_load("/etc/localtime", &z, err, sizeof(err)), -EINVAL);
    assert_int_equal(tz_load("Mars/Olympus_Mons", &z, err, sizeof(err)), -ENOENT);
    assert_string_equal(err, "unknown time zone Mars/Olympus_Mons");
    assert_int_equal(tz_load("America", &z, err, sizeof(err)), -ENOENT);   /* a directory */
    assert_null(z);
    assert_int_equal(tz_load("UTC", &z, err, sizeof(err)), 0);
    assert_int_equal(tz_lookup(z, JAN1, NULL, NULL), 0);
    tz_free(z);
    assert_int_equal(tz_load("Local", &z, err, sizeof(err)), 0);
    tz_free(z);
}

static void test_tzif_malformed(void **state)
{
    (void)state;
    struct tz *z = NULL;
    uint8_t hdr[44] = "TZif2";
    assert_int_equal(tz_parse(hdr, 3, "x", &z), -EINVAL);
    assert_int_equal(tz_parse((const uint8_t *)"TZxx", 4, "x", &z), -EINVAL);
    assert_int_equal(tz_parse(hdr, sizeof(hdr), "x", &z), -EINVAL);   /* typecnt 0 */
    hdr[39] = 1;                                                      /* one type, no data */
    assert_int_equal(tz_parse(hdr, sizeof(hdr), "x", &z), -EINVAL);
    /* a huge count must be refused before any read past the end */
    hdr[32] = 0x7f;
    assert_int_equal(tz_parse(hdr, sizeof(hdr), "x", &z), -EINVAL);
    assert_null(z);
    /* a valid v1 file with one type (+1h, "X\0") and no transitions */
    uint8_t v1[44 + 6 + 2] = "TZif";
    v1[39] = 1;       /* typecnt */
    v1[43] = 2;       /* charcnt */
    v1[44 + 2] = 0x0e; v1[44 + 3] = 0x10;   /* 3600 */
    v1[50] = 'X';
    assert_int_equal(tz_parse(v1, sizeof(v1), "fixed", &z), 0);
    assert_int_equal(tz_lookup(z, JAN1, NULL, NULL), 3600);
    assert_string_equal(tz_name(z), "fixed");
    tz_free(z);
    v1[51 - 1] = 'X';
    v1[44 + 5] = 9;   /* designation index past the chars */
    assert_int_equal(tz_parse(v1, sizeof(v1), "fixed", &z), -EINVAL);
}

struct thr {
    const struct tz *z;
    const struct cron_schedule *s;
    int64_t first, last;
};

static void *walk(void *arg)
{
    struct thr *t = arg;
    int64_t x = t->first;
    for (int i = 0; i < 2000; i++)
        x = cron_next(t->s, t->z, x);
    t->last = x;
    return NULL;
}

static void test_threads_share_a_zone(void **state)
{
    (void)state;
    struct tz *z = zone("Europe/London");
    struct cron_schedule s;
    char err[256];
    assert_int_equal(cron_parse("*/7 1-3 * * *", &s, err, sizeof(err)), 0);
    struct thr ref = { z, &s, JAN1, 0 };
    walk(&ref);
    pthread_t th[4];
    struct thr t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct thr){ z, &s, JAN1, 0 };
        assert_int_equal(pthread_create(&th[i], NULL, walk, &t[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(t[i].last, ref.last);
    }
    assert_true(ref.last > JAN1 + 30 * D);
    tz_free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_next_utc),
        cmocka_unit_test(test_next_dst),
        cmocka_unit_test(test_wall_time),
        cmocka_unit_test(test_zone_loading),
        cmocka_unit_test(test_tzif_malformed),
        cmocka_unit_test(test_threads_share_a_zone),
    };
    return cmocka_run_group_tests_name("cron", tests, NULL, NULL);
}

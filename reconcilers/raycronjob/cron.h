/*
 * cron.h - RayCronJob schedules: the grammar and next-fire rules of the cron
 * library KubeRay uses (github.com/robfig/cron/v3, ParseStandard), so a
 * schedule KubeRay accepts is accepted here and fires at the same instants.
 *
 *   "MIN HOUR DOM MONTH DOW"   exactly five fields; each a comma list of
 *                              "*" | "?" | N | N-M, each optionally "/STEP"
 *                              ("N/STEP" = N-max/STEP); months jan..dec and
 *                              weekdays sun..sat by name (any case); DOW 0-6.
 *                              When both DOM and DOW are restricted (neither
 *                              starts with * or ?), a day matches if EITHER does.
 *   "@yearly" "@annually" "@monthly" "@weekly" "@daily" "@midnight" "@hourly"
 *   "@every DURATION"          Go duration ("90s", "1h30m", "1.5m"); below one
 *                              second it is one second; sub-second parts dropped.
 *   "TZ=Zone " / "CRON_TZ=Zone " prefix: the zone the fields are read in.
 *
 * Bounded: a spec longer than CRON_SPEC_MAX is refused; every number is
 * range-checked before use. Thread-safe: no global state.
 */
#ifndef RAYOP_RAYCRONJOB_CRON_H
#define RAYOP_RAYCRONJOB_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reconcilers/raycronjob/tz.h"

#define CRON_SPEC_MAX 1024
#define CRON_STAR_BIT ((uint64_t)1 << 63)   /* the field was * or ? (day-matching rule) */
#define CRON_NEVER INT64_MIN                /* cron_next: nothing within five years */

struct cron_schedule {
    bool every;                   /* @every: fixed delay, zone ignored */
    int64_t every_s;              /* >= 1 */
    uint64_t minute, hour, dom, month, dow;   /* bit N = value N allowed */
    char zone[256];               /* from a TZ=/CRON_TZ= prefix; "" = none */
};

/* Parses spec (NUL-terminated). 0, or -EINVAL with a message in err that
 * names the problem the way robfig/cron does ("expected exactly 5 fields,
 * found 6: ...", "end of range (60) above maximum (59): 0-60", ...). A zone
 * prefix is only syntax-checked here: load it with tz_load. */
int cron_parse(const char *spec, struct cron_schedule *out, char *err, size_t errlen);

/* The first fire time strictly after unix second t, with the fields read in
 * zone z (for @every, z is unused), or CRON_NEVER when the fields cannot
 * match within five years of t (e.g. "0 0 30 2 *"). */
int64_t cron_next(const struct cron_schedule *s, const struct tz *z, int64_t t);

/* Go's time.ParseDuration: 0 and *ns, or -EINVAL / -ERANGE. */
int cron_parse_duration(const char *s, int64_t *ns);

#endif

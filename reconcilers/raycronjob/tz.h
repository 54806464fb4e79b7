/*
 * tz.h - time zones for RayCronJob schedules, read from the system tzdata
 * (TZif files under /usr/share/zoneinfo, RFC 8536) without touching the C
 * library's process-wide zone state.
 *
 * Why not localtime_r/mktime: they use the one zone named by the TZ
 * environment variable, and switching it per schedule (setenv + tzset) races
 * with every other thread. A struct tz is parsed once into plain memory and is
 * immutable afterwards, so any number of threads may use it at once; nothing
 * here keeps global state. Lookups follow Go's time package (which KubeRay's
 * cron library uses): the transition table, then the POSIX TZ footer for
 * instants past the last transition.
 */
#ifndef RAYOP_RAYCRONJOB_TZ_H
#define RAYOP_RAYCRONJOB_TZ_H

#include <stddef.h>
#include <stdint.h>

struct tz;

#define TZ_FILE_MAX (1u << 20)   /* TZif files are a few KiB; anything bigger is refused */

/* Loads a zone by IANA name as Go's time.LoadLocation: "" and "UTC" are UTC,
 * "Local" is tz_load_local(); names with ".." or a leading '/' are refused.
 * *out owned by the caller (tz_free). -EINVAL bad name / bad file, -ENOENT
 * unknown zone; err gets a message in both cases. */
int tz_load(const char *name, struct tz **out, char *err, size_t errlen);

/* The operator's own zone, as Go's time.Local: $TZ ("" = UTC, ":name" or a
 * name or an absolute path), else /etc/localtime, else UTC. Never fails
 * except -ENOMEM. */
int tz_load_local(struct tz **out);

/* Parses TZif bytes (v1..v4; the 64-bit block and footer when present).
 * Bounded: counts are checked against len before any read. *out owned by the
 * caller. -EINVAL for malformed input. */
int tz_parse(const uint8_t *data, size_t len, const char *name, struct tz **out);

/* A zone with a fixed offset (seconds east of UTC), e.g. UTC = 0. */
int tz_fixed(const char *name, int32_t offset, struct tz **out);

void tz_free(struct tz *z);
const char *tz_name(const struct tz *z);

/* Offset east of UTC in effect at unix time t, and the range [*start, *end)
 * in which it holds (either may be NULL). Ranges far from a transition may be
 * narrower than the real period (a year at most), never wider. */
int32_t tz_lookup(const struct tz *z, int64_t t, int64_t *start, int64_t *end);

/* Civil time in a zone. */
struct tz_civil {
    int64_t year;
    int month, day, hour, min, sec;   /* 1..12, 1..31, 0..23, 0..59, 0..59 */
    int wday;                         /* 0 = Sunday */
};

void tz_civil_of(const struct tz *z, int64_t t, struct tz_civil *out);

/* The instant of a wall-clock time, as Go's time.Date: month, day, hour, min
 * and sec may be out of range and are normalised (month 13 = January of the
 * next year, day 0 = the last day of the previous month ...). A wall time
 * that exists twice (fall-back) is its first occurrence; one that does not
 * exist (spring-forward gap) is taken with the offset after the transition,
 * i.e. it lands before the gap by the gap's length - both as Go does. */
int64_t tz_make(const struct tz *z, int64_t year, int64_t month, int64_t day, int64_t hour,
                int64_t min, int64_t sec);

#endif

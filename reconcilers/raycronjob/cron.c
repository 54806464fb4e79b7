/*
 * cron.c - RayCronJob schedule parser and next-fire computation (cron.h).
 *
 * The semantics are robfig/cron v3's ParseStandard and SpecSchedule.Next,
 * which KubeRay's RayCronJob controller calls; quirks are kept on purpose so
 * both operators fire at the same instants and accept the same specs:
 *   - "*-5" is "*" (the range part after a star is not looked at);
 *   - "*" and "?" (and "* /1") set the star bit, and a day matches when DOM
 *     AND DOW match if either carries it, DOM OR DOW otherwise;
 *   - an empty list member is skipped ("1,,2" = "1,2"); a field with none
 *     at all never matches;
 *   - Next walks month -> day -> hour -> minute; days and months move in wall
 *     time, hours and minutes in absolute time. So a wall time inside a
 *     spring-forward gap is skipped that day, and one inside a fall-back
 *     overlap fires twice (robfig's known behaviour, kept for parity).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "reconcilers/raycronjob/cron.h"

struct bounds {
    unsigned min, max;
    const char *const *names;     /* index = value - name_base */
    unsigned name_base;
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun",
                                           "jul", "aug", "sep", "oct", "nov", "dec", NULL };
static const char *const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };

static const struct bounds B_MIN = { 0, 59, NULL, 0 }, B_HOUR = { 0, 23, NULL, 0 },
                           B_DOM = { 1, 31, NULL, 0 }, B_MONTH = { 1, 12, month_names, 1 },
                           B_DOW = { 0, 6, dow_names, 0 };

static uint64_t bits(unsigned min, unsigned max, unsigned step)
{
    uint64_t b = 0;
    for (unsigned i = min; i <= max; i += step)
        b |= (uint64_t)1 << i;
    return b;
}

static uint64_t all(const struct bounds *r)
{
    return bits(r->min, r->max, 1) | CRON_STAR_BIT;
}

/* strconv.Atoi then the non-negative check, on s[0..n). */
static int parse_uint(const char *s, size_t n, unsigned *out, char *err, size_t errlen)
{
    size_t i = 0;
    int neg = 0;
    long long v = 0;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        goto bad;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            goto bad;
        if (v > (LLONG_MAX - 9) / 10)
            goto bad;
        v = v * 10 + (s[i] - '0');
    }
    if (neg && v) {
        snprintf(err, errlen, "negative number (-%lld) not allowed: %.*s", v, (int)n, s);
        return -EINVAL;
    }
    *out = v > UINT_MAX ? UINT_MAX : (unsigned)v;
    return 0;
bad:
    snprintf(err, errlen, "failed to parse int from %.*s", (int)n, s);
    return -EINVAL;
}

static int parse_int_or_name(const char *s, size_t n, const struct bounds *r, unsigned *out,
                             char *err, size_t errlen)
{
    for (size_t i = 0; r->names && r->names[i]; i++)
        if (strlen(r->names[i]) == n && strncasecmp(r->names[i], s, n) == 0) {
            *out = (unsigned)i + r->name_base;
            return 0;
        }
    return parse_uint(s, n, out, err, errlen);
}

/* One list member "a", "a-b", "*", "a/s", "a-b/s", "* /s" of length n. */
static int parse_range(const char *e, size_t n, const struct bounds *r, uint64_t *out,
                       char *err, size_t errlen)
{
    const char *slash = memchr(e, '/', n);
    size_t rn = slash ? (size_t)(slash - e) : n;
    unsigned start, end, step = 1;
    uint64_t extra = 0;
    int rc;
    if (slash && memchr(slash + 1, '/', n - rn - 1)) {
        snprintf(err, errlen, "too many slashes: %.*s", (int)n, e);
        return -EINVAL;
    }
    const char *dash = memchr(e, '-', rn);
    size_t ln = dash ? (size_t)(dash - e) : rn;
    bool single = !dash;
    if (ln == 1 && (e[0] == '*' || e[0] == '?')) {
        start = r->min;
        end = r->max;
        extra = CRON_STAR_BIT;
    } else {
        if ((rc = parse_int_or_name(e, ln, r, &start, err, errlen)) < 0)
            return rc;
        if (!dash) {
            end = start;
        } else {
            const char *hi = dash + 1;
            size_t hn = rn - ln - 1;
            if (memchr(hi, '-', hn)) {
                snprintf(err, errlen, "too many hyphens: %.*s", (int)n, e);
                return -EINVAL;
            }
            if ((rc = parse_int_or_name(hi, hn, r, &end, err, errlen)) < 0)
                return rc;
        }
    }
    if (slash) {
        if ((rc = parse_uint(slash + 1, n - rn - 1, &step, err, errlen)) < 0)
            return rc;
        if (single)
            end = r->max;   /* "N/step" means "N-max/step" */
        if (step > 1)
            extra = 0;
    }
    if (start < r->min) {
        snprintf(err, errlen, "beginning of range (%u) below minimum (%u): %.*s", start, r->min,
                 (int)n, e);
        return -EINVAL;
    }
    if (end > r->max) {
        snprintf(err, errlen, "end of range (%u) above maximum (%u): %.*s", end, r->max,
                 (int)n, e);
        return -EINVAL;
    }
    if (start > end) {
        snprintf(err, errlen, "beginning of range (%u) beyond end of range (%u): %.*s", start,
                 end, (int)n, e);
        return -EINVAL;
    }
    if (step == 0) {
        snprintf(err, errlen, "step of range should be a positive number: %.*s", (int)n, e);
        return -EINVAL;
    }
    *out |= bits(start, end, step) | extra;
    return 0;
}

static int parse_field(const char *f, size_t n, const struct bounds *r, uint64_t *out,
                       char *err, size_t errlen)
{
    *out = 0;
    for (size_t i = 0; i < n;) {
        const char *c = memchr(f + i, ',', n - i);
        size_t m = c ? (size_t)(c - (f + i)) : n - i;
        int rc;
        if (m && (rc = parse_range(f + i, m, r, out, err, errlen)) < 0)
            return rc;
        i += m + 1;
    }
    return 0;
}

/* Go's unicode.IsSpace restricted to ASCII: a spec is bytes, and the other
 * Unicode spaces are not worth a UTF-8 decoder here (documented). */
static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int parse_descriptor(const char *d, struct cron_schedule *s, char *err, size_t errlen)
{
    static const char every[] = "@every ";
    s->minute = 1;
    s->hour = 1;
    s->dom = all(&B_DOM);
    s->month = all(&B_MONTH);
    s->dow = all(&B_DOW);
    if (strcmp(d, "@yearly") == 0 || strcmp(d, "@annually") == 0) {
        s->dom = (uint64_t)1 << 1;
        s->month = (uint64_t)1 << 1;
    } else if (strcmp(d, "@monthly") == 0) {
        s->dom = (uint64_t)1 << 1;
    } else if (strcmp(d, "@weekly") == 0) {
        s->dow = 1;
    } else if (strcmp(d, "@daily") == 0 || strcmp(d, "@midnight") == 0) {
        /* the defaults */
    } else if (strcmp(d, "@hourly") == 0) {
        s->hour = all(&B_HOUR);
    } else if (strncmp(d, every, sizeof(every) - 1) == 0) {
        int64_t ns;
        int rc = cron_parse_duration(d + sizeof(every) - 1, &ns);
        if (rc < 0) {
            snprintf(err, errlen, "failed to parse duration %s: time: invalid duration \"%s\"",
                     d, d + sizeof(every) - 1);
            return -EINVAL;
        }
        s->every = true;
        s->every_s = ns < 1000000000LL ? 1 : ns / 1000000000LL;
    } else {
        snprintf(err, errlen, "unrecognized descriptor: %s", d);
        return -EINVAL;
    }
    return 0;
}

int cron_parse(const char *spec, struct cron_schedule *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty spec string");
        return -EINVAL;
    }
    size_t len = strnlen(spec, CRON_SPEC_MAX + 1);
    if (len > CRON_SPEC_MAX) {
        snprintf(err, errlen, "spec longer than %d bytes", CRON_SPEC_MAX);
        return -EINVAL;
    }
    const char *p = spec;
    if (strncmp(p, "TZ=", 3) == 0 || strncmp(p, "CRON_TZ=", 8) == 0) {
        const char *eq = strchr(p, '='), *sp = strchr(p, ' ');
        size_t zn = sp ? (size_t)(sp - eq - 1) : 0;
        if (!sp || zn >= sizeof(s->zone)) {
            snprintf(err, errlen, "provided bad location %.64s: no schedule after it", eq + 1);
            return -EINVAL;
        }
        memcpy(s->zone, eq + 1, zn);
        s->zone[zn] = '\0';
        p = sp;
        while (is_space(*p))
            p++;
        /* robfig trims both ends after a zone prefix */
        len = strlen(p);
        while (len && is_space(p[len - 1]))
            len--;
    }
    char body[CRON_SPEC_MAX + 1];
    memcpy(body, p, len);
    body[len] = '\0';
    if (body[0] == '@')
        return parse_descriptor(body, s, err, errlen);

    const char *f[6];
    size_t fn[6], nf = 0, total = 0;
    for (const char *q = body; *q;) {
        while (is_space(*q))
            q++;
        if (!*q)
            break;
        const char *st = q;
        while (*q && !is_space(*q))
            q++;
        if (nf < 6) {
            f[nf] = st;
            fn[nf] = (size_t)(q - st);
            nf++;
        }
        total++;
    }
    if (total != 5) {
        snprintf(err, errlen, "expected exactly 5 fields, found %zu: [%.200s]", total, body);
        return -EINVAL;
    }
    const struct bounds *b[5] = { &B_MIN, &B_HOUR, &B_DOM, &B_MONTH, &B_DOW };
    uint64_t *dst[5] = { &s->minute, &s->hour, &s->dom, &s->month, &s->dow };
    for (int i = 0; i < 5; i++) {
        int rc = parse_field(f[i], fn[i], b[i], dst[i], err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- durations ----------------------------------------------------------- */

int cron_parse_duration(const char *s, int64_t *out)
{
    static const struct { const char *u; uint64_t ns; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
        { "ms", 1000000 }, { "s", 1000000000ULL }, { "m", 60000000000ULL },
        { "h", 3600000000000ULL },
    };
    const uint64_t lim = (uint64_t)1 << 63;
    uint64_t d = 0;
    bool neg = false;
    if (!s)
        return -EINVAL;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    if (!*s)
        return -EINVAL;
    while (*s) {
        uint64_t v = 0, f = 0;
        double scale = 1;
        bool pre = false, post = false;
        if (!(*s == '.' || (*s >= '0' && *s <= '9')))
            return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++, pre = true) {
            if (v > (lim - 1) / 10)
                return -ERANGE;
            v = v * 10 + (uint64_t)(*s - '0');
            if (v > lim - 1)
                return -ERANGE;
        }
        if (*s == '.') {
            bool overflow = false;
            for (s++; *s >= '0' && *s <= '9'; s++, post = true) {
                if (overflow)
                    continue;
                if (f > (lim - 1) / 10) {
                    overflow = true;   /* further digits cannot matter */
                    continue;
                }
                f = f * 10 + (uint64_t)(*s - '0');
                scale *= 10;
            }
        }
        if (!pre && !post)
            return -EINVAL;
        size_t ul = 0;
        while (s[ul] && s[ul] != '.' && !(s[ul] >= '0' && s[ul] <= '9'))
            ul++;
        if (!ul)
            return -EINVAL;   /* missing unit */
        uint64_t unit = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
            if (strlen(units[i].u) == ul && memcmp(units[i].u, s, ul) == 0)
                unit = units[i].ns;
        if (!unit)
            return -EINVAL;   /* unknown unit */
        s += ul;
        if (v > lim / unit)
            return -ERANGE;
        v *= unit;
        if (f > 0) {
            v += (uint64_t)((double)f * ((double)unit / scale));
            if (v > lim)
                return -ERANGE;
        }
        d += v;
        if (d > lim)
            return -ERANGE;
    }
    if (!neg && d > lim - 1)
        return -ERANGE;
    *out = neg ? (int64_t)(0 - d) : (int64_t)d;
    return 0;
}

/* ---- next fire time ------------------------------------------------------ */

static bool day_matches(const struct cron_schedule *s, const struct tz_civil *c)
{
    bool dom = (((uint64_t)1 << c->day) & s->dom) != 0;
    bool dow = (((uint64_t)1 << c->wday) & s->dow) != 0;
    if ((s->dom & CRON_STAR_BIT) || (s->dow & CRON_STAR_BIT))
        return dom && dow;
    return dom || dow;
}

int64_t cron_next(const struct cron_schedule *s, const struct tz *z, int64_t t)
{
    if (s->every)
        return t > INT64_MAX - s->every_s ? CRON_NEVER : t + s->every_s;
    struct tz_civil c;
    bool added = false;
    t += 1;   /* the next whole second (times here carry no fraction) */
    tz_civil_of(z, t, &c);
    int64_t year_limit = c.year + 5;

wrap:
    tz_civil_of(z, t, &c);
    if (c.year > year_limit)
        return CRON_NEVER;
    while ((((uint64_t)1 << c.month) & s->month) == 0) {
        if (!added) {
            added = true;
            t = tz_make(z, c.year, c.month, 1, 0, 0, 0);
            tz_civil_of(z, t, &c);
        }
        t = tz_make(z, c.year, c.month + 1, c.day, c.hour, c.min, c.sec);
        tz_civil_of(z, t, &c);
        if (c.month == 1)
            goto wrap;
    }
    while (!day_matches(s, &c)) {
        if (!added) {
            added = true;
            t = tz_make(z, c.year, c.month, c.day, 0, 0, 0);
            tz_civil_of(z, t, &c);
        }
        t = tz_make(z, c.year, c.month, c.day + 1, c.hour, c.min, c.sec);
        tz_civil_of(z, t, &c);
        /* a DST change moved midnight: back to it (to the next day's if it is late) */
        if (c.hour != 0) {
            t += c.hour > 12 ? (int64_t)(24 - c.hour) * 3600 : -(int64_t)c.hour * 3600;
            tz_civil_of(z, t, &c);
        }
        if (c.day == 1)
            goto wrap;
    }
    while ((((uint64_t)1 << c.hour) & s->hour) == 0) {
        if (!added) {
            added = true;
            t = tz_make(z, c.year, c.month, c.day, c.hour, 0, 0);
        }
        t += 3600;
        tz_civil_of(z, t, &c);
        if (c.hour == 0)
            goto wrap;
    }
    while ((((uint64_t)1 << c.min) & s->minute) == 0) {
        if (!added) {
            added = true;
            t -= ((t % 60) + 60) % 60;
        }
        t += 60;
        tz_civil_of(z, t, &c);
        if (c.min == 0)
            goto wrap;
    }
    /* the seconds field of a standard spec is always 0; t is whole seconds, so
     * robfig's Truncate(time.Second) here is a no-op */
    while (c.sec != 0) {
        added = true;
        t += 1;
        tz_civil_of(z, t, &c);
        if (c.sec == 0)
            goto wrap;
    }
    return t;
}

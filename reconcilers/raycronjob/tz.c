/*
 * tz.c - TZif reader and civil-time arithmetic for RayCronJob schedules (tz.h).
 *
 * A zone is its types (offset, isdst), its transitions (unix time -> type)
 * and the POSIX TZ "footer" rule that extends the table past its last entry
 * (modern "slim" tzdata stops the table early and relies on it). Everything
 * is copied out of the file into one allocation; the struct is never written
 * after tz_parse returns, which is the whole thread-safety story.
 *
 * The lookup and the wall-time -> instant resolution follow Go's time package
 * (lookup, lookupFirstZone, tzset, Date) because the cron library KubeRay uses
 * is built on it: the same wall times must map to the same instants across
 * DST changes, or the two operators would name RayJobs differently.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reconcilers/raycronjob/tz.h"

#define TZ_ALPHA INT64_MIN
#define TZ_OMEGA INT64_MAX
#define TZ_DAY   86400
#define TZ_COUNT_MAX 100000u      /* per count field; real files have < 2000 */

enum rule_kind { RULE_JULIAN, RULE_DOY, RULE_MWD };

struct tz_rule_time {
    enum rule_kind kind;
    int day, week, mon;
    int32_t time;                 /* seconds after local midnight */
};

struct tz_rule {
    bool present, has_dst;
    int32_t std_off, dst_off;     /* east of UTC */
    struct tz_rule_time start, end;
};

struct tz_type {
    int32_t off;
    bool isdst;
};

struct tz {
    char name[64];
    size_t ntypes, ntx;
    struct tz_type *types;
    int64_t *when;
    uint8_t *idx;
    struct tz_rule rule;
};

/* ---- calendar ------------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int days_in(int m, int64_t y)
{
    static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* ---- POSIX TZ rule (the footer) ---------------------------------------- */

static const char *rule_name(const char *s)
{
    if (*s == '<') {
        const char *e = strchr(s, '>');
        return e && e > s + 1 ? e + 1 : NULL;
    }
    const char *p = s;
    while (*p && !(*p >= '0' && *p <= '9') && *p != ',' && *p != '-' && *p != '+')
        p++;
    return p - s >= 3 ? p : NULL;
}

static const char *rule_num(const char *s, int min, int max, int *out)
{
    int n = 0, digits = 0;
    while (*s >= '0' && *s <= '9') {
        n = n * 10 + (*s++ - '0');
        if (++digits > 3 || n > max)
            return NULL;
    }
    if (!digits || n < min)
        return NULL;
    *out = n;
    return s;
}

/* [+-]hh[:mm[:ss]], hours up to 168 (RFC 8536 extension); west-positive as written. */
static const char *rule_offset(const char *s, int32_t *out)
{
    int sign = 1, h, m = 0, sec = 0;
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    if (!(s = rule_num(s, 0, 24 * 7, &h)))
        return NULL;
    if (*s == ':') {
        if (!(s = rule_num(s + 1, 0, 59, &m)))
            return NULL;
        if (*s == ':' && !(s = rule_num(s + 1, 0, 59, &sec)))
            return NULL;
    }
    *out = sign * (h * 3600 + m * 60 + sec);
    return s;
}

static const char *rule_when(const char *s, struct tz_rule_time *r)
{
    if (*s == 'J') {
        r->kind = RULE_JULIAN;
        s = rule_num(s + 1, 1, 365, &r->day);
    } else if (*s == 'M') {
        r->kind = RULE_MWD;
        if ((s = rule_num(s + 1, 1, 12, &r->mon)) && *s == '.' &&
            (s = rule_num(s + 1, 1, 5, &r->week)) && *s == '.')
            s = rule_num(s + 1, 0, 6, &r->day);
        else
            s = NULL;
    } else {
        r->kind = RULE_DOY;
        s = rule_num(s, 0, 365, &r->day);
    }
    if (!s)
        return NULL;
    r->time = 2 * 3600;
    if (*s == '/')
        s = rule_offset(s + 1, &r->time);
    return s;
}

static int rule_parse(const char *s, struct tz_rule *r)
{
    memset(r, 0, sizeof(*r));
    int32_t off;
    if (!(s = rule_name(s)) || !(s = rule_offset(s, &off)))
        return -EINVAL;
    r->std_off = -off;
    r->present = true;
    if (!*s)
        return 0;
    if (!(s = rule_name(s)))
        return -EINVAL;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*s && *s != ',') {
        if (!(s = rule_offset(s, &off)))
            return -EINVAL;
        r->dst_off = -off;
    }
    if (!*s)
        s = ",M3.2.0,M11.1.0";   /* POSIX leaves it to the implementation; US rules as Go */
    if (*s != ',' || !(s = rule_when(s + 1, &r->start)) || *s != ',' ||
        !(s = rule_when(s + 1, &r->end)) || *s)
        return -EINVAL;
    return 0;
}

/* Seconds from the start of year (UTC) to the rule's moment, local time at off. */
static int64_t rule_time(int64_t year, const struct tz_rule_time *r, int32_t off)
{
    int64_t s = 0;
    switch (r->kind) {
    case RULE_JULIAN:
        s = (int64_t)(r->day - 1) * TZ_DAY;
        if (is_leap(year) && r->day >= 60)
            s += TZ_DAY;
        break;
    case RULE_DOY:
        s = (int64_t)r->day * TZ_DAY;
        break;
    case RULE_MWD: {
        /* weekday of the 1st of the month, then the week-th such weekday (5 = last) */
        int64_t first = days_from_civil(year, r->mon, 1);
        int dow = (int)(((first % 7) + 11) % 7);   /* 1970-01-01 was a Thursday */
        int d = r->day - dow;
        if (d < 0)
            d += 7;
        for (int i = 1; i < r->week && d + 7 < days_in(r->mon, year); i++)
            d += 7;
        s = (first - days_from_civil(year, 1, 1) + d) * TZ_DAY;
        break;
    }
    }
    return s + r->time - off;
}

static int32_t rule_lookup(const struct tz_rule *r, int64_t last_tx, int64_t sec,
                           int64_t *start, int64_t *end)
{
    if (!r->has_dst) {
        *start = last_tx;
        *end = TZ_OMEGA;
        return r->std_off;
    }
    int64_t days = floor_div(sec, TZ_DAY), year;
    int mon, day;
    civil_from_days(days, &year, &mon, &day);
    int64_t ysec = (days - days_from_civil(year, 1, 1)) * TZ_DAY + (sec - days * TZ_DAY);
    int64_t abs = sec - ysec;
    int64_t s = rule_time(year, &r->start, r->std_off);
    int64_t e = rule_time(year, &r->end, r->dst_off);
    int32_t std = r->std_off, dst = r->dst_off;
    if (e < s) {   /* southern hemisphere: the "DST" part wraps the new year */
        int64_t t = s; s = e; e = t;
        int32_t o = std; std = dst; dst = o;
    }
    if (ysec < s) {
        *start = abs;
        *end = s + abs;
        return std;
    }
    if (ysec >= e) {
        *start = e + abs;
        *end = abs + 365 * (int64_t)TZ_DAY;
        return std;
    }
    *start = s + abs;
    *end = e + abs;
    return dst;
}

/* ---- TZif ---------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_hdr {
    uint32_t isut, isstd, leap, timecnt, typecnt, charcnt;
};

static int tzif_header(const uint8_t *p, size_t len, struct tzif_hdr *h, int timesize, size_t *body)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0)
        return -EINVAL;
    h->isut = be32(p + 20);
    h->isstd = be32(p + 24);
    h->leap = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    if (h->isut > TZ_COUNT_MAX || h->isstd > TZ_COUNT_MAX || h->leap > TZ_COUNT_MAX ||
        h->timecnt > TZ_COUNT_MAX || h->typecnt > 256 || h->typecnt == 0 ||
        h->charcnt > TZ_COUNT_MAX)
        return -EINVAL;
    size_t need = (size_t)h->timecnt * (size_t)(timesize + 1) + (size_t)h->typecnt * 6 +
                  h->charcnt + (size_t)h->leap * (size_t)(timesize + 4) + h->isstd + h->isut;
    if (need > len - 44)
        return -EINVAL;
    *body = need;
    return 0;
}

int tz_parse(const uint8_t *data, size_t len, const char *name, struct tz **out)
{
    struct tzif_hdr h;
    size_t body;
    int timesize = 4;
    *out = NULL;
    if (!data || len > TZ_FILE_MAX || tzif_header(data, len, &h, 4, &body) < 0)
        return -EINVAL;
    const uint8_t *p = data + 44;
    const uint8_t *end = data + len;
    const char *footer = NULL;
    size_t footer_len = 0;
    if (data[4] >= '2') {
        /* skip the 32-bit block; the 64-bit one follows with its own header */
        const uint8_t *h2 = p + body;
        if (tzif_header(h2, (size_t)(end - h2), &h, 8, &body) < 0)
            return -EINVAL;
        timesize = 8;
        p = h2 + 44;
        const uint8_t *f = p + body;
        if (f < end) {
            if (*f != '\n')
                return -EINVAL;
            const uint8_t *nl = memchr(f + 1, '\n', (size_t)(end - f - 1));
            if (!nl || nl - f - 1 > 255)
                return -EINVAL;
            footer = (const char *)f + 1;
            footer_len = (size_t)(nl - f - 1);
        }
    }
    size_t ntx = h.timecnt ? h.timecnt : 1;
    size_t size = sizeof(struct tz) + h.typecnt * sizeof(struct tz_type) +
                  ntx * sizeof(int64_t) + ntx;
    struct tz *z = calloc(1, size);
    if (!z)
        return -ENOMEM;
    z->types = (struct tz_type *)(z + 1);
    z->when = (int64_t *)(z->types + h.typecnt);
    z->idx = (uint8_t *)(z->when + ntx);
    z->ntypes = h.typecnt;
    z->ntx = ntx;
    snprintf(z->name, sizeof(z->name), "%s", name ? name : "");
    const uint8_t *pt = p, *pi = p + (size_t)h.timecnt * (size_t)timesize;
    const uint8_t *pty = pi + h.timecnt;
    for (size_t i = 0; i < h.typecnt; i++) {
        const uint8_t *e = pty + i * 6;
        z->types[i].off = (int32_t)be32(e);
        z->types[i].isdst = e[4] != 0;
        /* -2^31 is not a valid offset (RFC 8536 3.2); keep offsets within a day and a bit */
        if (z->types[i].off < -25 * 3600 || z->types[i].off > 26 * 3600 || e[4] > 1 ||
            e[5] >= h.charcnt)
            goto bad;
    }
    if (h.timecnt == 0) {
        z->when[0] = TZ_ALPHA;   /* one transition covering all time, as Go does */
        z->idx[0] = 0;
    }
    for (size_t i = 0; i < h.timecnt; i++) {
        z->when[i] = timesize == 8 ? be64(pt + i * 8) : (int64_t)(int32_t)be32(pt + i * 4);
        z->idx[i] = pi[i];
        if (z->idx[i] >= h.typecnt || (i > 0 && z->when[i] <= z->when[i - 1]))
            goto bad;
    }
    if (footer && footer_len) {
        char fs[256];
        memcpy(fs, footer, footer_len);
        fs[footer_len] = '\0';
        if (rule_parse(fs, &z->rule) < 0)
            goto bad;
    }
    *out = z;
    return 0;
bad:
    free(z);
    return -EINVAL;
}

int tz_fixed(const char *name, int32_t offset, struct tz **out)
{
    struct tz *z = calloc(1, sizeof(*z) + sizeof(struct tz_type) + sizeof(int64_t) + 1);
    if (!z)
        return -ENOMEM;
    z->types = (struct tz_type *)(z + 1);
    z->when = (int64_t *)(z->types + 1);
    z->idx = (uint8_t *)(z->when + 1);
    z->ntypes = z->ntx = 1;
    z->types[0].off = offset;
    z->when[0] = TZ_ALPHA;
    snprintf(z->name, sizeof(z->name), "%s", name);
    *out = z;
    return 0;
}

void tz_free(struct tz *z)
{
    free(z);
}

const char *tz_name(const struct tz *z)
{
    return z->name;
}

static size_t first_zone(const struct tz *z)
{
    bool used = false;
    for (size_t i = 0; i < z->ntx && !used; i++)
        used = z->idx[i] == 0;
    if (!used)
        return 0;
    if (z->types[z->idx[0]].isdst)
        for (size_t i = z->idx[0]; i-- > 0;)
            if (!z->types[i].isdst)
                return i;
    for (size_t i = 0; i < z->ntypes; i++)
        if (!z->types[i].isdst)
            return i;
    return 0;
}

int32_t tz_lookup(const struct tz *z, int64_t t, int64_t *start, int64_t *end)
{
    int64_t s, e = TZ_OMEGA;
    int32_t off;
    if (t < z->when[0]) {
        s = TZ_ALPHA;
        e = z->when[0];
        off = z->types[first_zone(z)].off;
        goto out;
    }
    size_t lo = 0, hi = z->ntx;
    while (hi - lo > 1) {
        size_t m = lo + (hi - lo) / 2;
        if (t < z->when[m]) {
            e = z->when[m];
            hi = m;
        } else {
            lo = m;
        }
    }
    s = z->when[lo];
    off = z->types[z->idx[lo]].off;
    if (lo == z->ntx - 1 && z->rule.present)
        off = rule_lookup(&z->rule, s, t, &s, &e);
out:
    if (start)
        *start = s;
    if (end)
        *end = e;
    return off;
}

/* Instants far outside any schedule's reach are clamped so civil arithmetic cannot overflow. */
#define TZ_T_LIMIT ((int64_t)1 << 50)

void tz_civil_of(const struct tz *z, int64_t t, struct tz_civil *out)
{
    if (t > TZ_T_LIMIT) t = TZ_T_LIMIT;
    if (t < -TZ_T_LIMIT) t = -TZ_T_LIMIT;
    int64_t local = t + tz_lookup(z, t, NULL, NULL);
    int64_t days = floor_div(local, TZ_DAY), secs = local - days * TZ_DAY;
    civil_from_days(days, &out->year, &out->month, &out->day);
    out->hour = (int)(secs / 3600);
    out->min = (int)(secs / 60 % 60);
    out->sec = (int)(secs % 60);
    out->wday = (int)(((days % 7) + 11) % 7);
}

int64_t tz_make(const struct tz *z, int64_t year, int64_t month, int64_t day, int64_t hour,
                int64_t min, int64_t sec)
{
    /* callers pass calendar-sized values; clamp so nothing below can overflow */
    const int64_t lim = (int64_t)1 << 32;
    int64_t *v[] = { &year, &month, &day, &hour, &min, &sec };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        if (*v[i] > lim) *v[i] = lim; else if (*v[i] < -lim) *v[i] = -lim;
    int64_t m0 = month - 1;
    year += floor_div(m0, 12);
    m0 -= floor_div(m0, 12) * 12;
    int64_t local = (days_from_civil(year, (int)m0 + 1, 1) + day - 1) * TZ_DAY +
                    hour * 3600 + min * 60 + sec;
    /* Go's Date: the offset in effect at `local` read as UTC; if the resulting
     * instant falls outside that offset's range, the offset at that instant. */
    int64_t s, e;
    int32_t off = tz_lookup(z, local, &s, &e);
    if (off != 0) {
        int64_t utc = local - off;
        if (utc < s || utc >= e)
            off = tz_lookup(z, utc, NULL, NULL);
    }
    return local - off;
}

/* ---- loading ------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
    struct stat st;
    uint8_t *buf = NULL;
    size_t n = 0;
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > (off_t)TZ_FILE_MAX) {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        goto out;
    }
    if (!(buf = malloc((size_t)st.st_size + 1))) {
        rc = -ENOMEM;
        goto out;
    }
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : -EIO;
            goto out;
        }
        n += (size_t)r;
    }
    *out = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

static int load_from(const char *const *dirs, const char *name, const char *as, struct tz **out)
{
    int rc = -ENOENT;
    for (size_t i = 0; dirs[i]; i++) {
        char path[PATH_MAX];
        uint8_t *data = NULL;
        size_t len = 0;
        if ((size_t)snprintf(path, sizeof(path), "%s%s", dirs[i], name) >= sizeof(path))
            return -EINVAL;
        int r = read_file(path, &data, &len);
        if (r == -ENOENT || r == -ENOTDIR)
            continue;
        if (r < 0)
            return r;
        rc = tz_parse(data, len, as, out);
        free(data);
        return rc;
    }
    return rc;
}

static const char *const zone_dirs[] = { "/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/",
                                         "/usr/lib/locale/TZ/", "/etc/zoneinfo/", NULL };

int tz_load(const char *name, struct tz **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!name || !*name || strcmp(name, "UTC") == 0)
        return tz_fixed("UTC", 0, out);
    if (strcmp(name, "Local") == 0)
        return tz_load_local(out);
    size_t n = strlen(name);
    bool bad = n >= 256 || name[0] == '/' || name[0] == '\\' || strstr(name, "..");
    for (size_t i = 0; i < n && !bad; i++)
        bad = (unsigned char)name[i] < 0x20 || name[i] == 0x7f;
    if (bad) {
        snprintf(err, errlen, "time: invalid location name");
        return -EINVAL;
    }
    int rc = load_from(zone_dirs, name, name, out);
    if (rc == -ENOENT || rc == -EISDIR || rc == -EACCES)
        snprintf(err, errlen, "unknown time zone %s", name);
    else if (rc == -EINVAL)
        snprintf(err, errlen, "malformed time zone file for %s", name);
    else if (rc < 0)
        snprintf(err, errlen, "time zone %s: %s", name, strerror(-rc));
    return rc == -EISDIR || rc == -EACCES ? -ENOENT : rc;
}

int tz_load_local(struct tz **out)
{
    static const char *const etc[] = { "/etc/", NULL };
    static const char *const root[] = { "", NULL };
    const char *tz = getenv("TZ");   /* read-only use; nothing in rayop calls setenv("TZ") */
    *out = NULL;
    if (!tz) {
        if (load_from(etc, "localtime", "Local", out) == 0)
            return 0;
    } else if (*tz) {
        if (*tz == ':')
            tz++;
        if (*tz == '/' && !strstr(tz, "..")) {
            if (load_from(root, tz, strcmp(tz, "/etc/localtime") == 0 ? "Local" : tz, out) == 0)
                return 0;
        } else if (*tz && strcmp(tz, "UTC") != 0 && !strstr(tz, "..")) {
            if (load_from(zone_dirs, tz, tz, out) == 0)
                return 0;
        }
    }
    return tz_fixed("UTC", 0, out);
}

/*
 * faults.c - the pure half of kubesim's fault injection: the rule syntax (compact
 * text for flags, JSON for the admin area), the rule table and the per-request
 * decision. No network, no store: unit tested (tests/unit/kubesim/test_faults.c) and fuzzed
 * (tests/fuzz/fuzz_fault_rule.c). faults_http.c wires it into the server.
 *
 * Randomness is deterministic: each rule has its own splitmix64 sequence seeded
 * from (seed, position), so one rule's draws do not depend on how many requests
 * other rules saw, and a test that sends requests one at a time sees the same
 * faults in every run.
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RETRY_AFTER 3600
#define MAX_DELAY_MS    600000u
#define MAX_EVERY       1000000000ul
#define MAX_COUNT       1000000000000ul

const char *const faults_verbs[FAULTS_NVERBS] = {
    "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "other",
};

static const char *const kind_names[FK_COUNT] = {
    "429", "500", "503", "reset", "delay", "watchCut", "expired",
};

const char *api__faults_kind_name(enum faults_kind k)
{
    return (unsigned)k < FK_COUNT ? kind_names[k] : "other";
}

size_t api__faults_verb_index(const char *verb)
{
    if (verb)
        for (size_t i = 0; i + 1 < FAULTS_NVERBS; i++)
            if (strcmp(verb, faults_verbs[i]) == 0)
                return i;
    return FAULTS_NVERBS - 1;
}

/* ---- parsing -------------------------------------------------------------------- */

enum { SEEN_ACTION = 1, SEEN_CODE = 2, SEEN_RETRY = 4, SEEN_MS = 8, SEEN_P = 16, SEEN_EVERY = 32 };

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets err (if any room) and returns -EINVAL. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int api__faults_parse_ulong(const char *v, unsigned long min, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long long x;

    if (!*v || *v == '-' || *v == '+' || *v == ' ')
        return -EINVAL;
    errno = 0;
    x = strtoull(v, &end, 10);
    if (errno || *end || x < min || x > max)
        return -EINVAL;
    *out = (unsigned long)x;
    return 0;
}

static bool valid_verb(const char *v)
{
    if (strcmp(v, "*") == 0)
        return true;
    for (size_t i = 0; i + 1 < FAULTS_NVERBS; i++)
        if (strcmp(v, faults_verbs[i]) == 0)
            return true;
    return false;
}

/* "pods", "rayclusters", "pods/status": lower-case DNS-ish names, one optional '/'. */
static bool valid_resource(const char *v)
{
    size_t n = strlen(v), slashes = 0;

    if (n == 0 || n >= sizeof(((struct faults_rule *)0)->resource) || v[0] == '/' ||
        v[n - 1] == '/')
        return false;
    for (const char *p = v; *p; p++) {
        if (*p == '/')
            slashes++;
        else if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                   *p == '.'))
            return false;
    }
    return slashes <= 1;
}

/* Applies one key=value to r. seen accumulates which keys were given. */
static int set_key(struct faults_rule *r, unsigned *seen, const char *k, const char *v,
                   char *err, size_t errlen)
{
    unsigned long u;

    if (strcmp(k, "verb") == 0) {
        if (!valid_verb(v))
            return fail(err, errlen, "fault rule: unknown verb \"%.40s\" (want get, list, "
                        "watch, create, update, patch, delete, deletecollection or *)", v);
        snprintf(r->verb, sizeof(r->verb), "%s", v);
    } else if (strcmp(k, "resource") == 0) {
        if (!valid_resource(v))
            return fail(err, errlen, "fault rule: resource \"%.60s\" is not a plural "
                        "resource name (e.g. pods or pods/status)", v);
        snprintf(r->resource, sizeof(r->resource), "%s", v);
    } else if (strcmp(k, "action") == 0) {
        if (strcmp(v, "status") == 0)
            r->action = FAULTS_STATUS;
        else if (strcmp(v, "reset") == 0)
            r->action = FAULTS_RESET;
        else if (strcmp(v, "delay") == 0)
            r->action = FAULTS_DELAY;
        else
            return fail(err, errlen, "fault rule: unknown action \"%.40s\" (want status, "
                        "reset or delay)", v);
        *seen |= SEEN_ACTION;
    } else if (strcmp(k, "code") == 0) {
        if (api__faults_parse_ulong(v, 0, 999, &u) < 0 || (u != 429 && u != 500 && u != 503))
            return fail(err, errlen, "fault rule: code \"%.40s\" is not one of 429, 500, 503", v);
        r->code = (int)u;
        *seen |= SEEN_CODE;
    } else if (strcmp(k, "retry-after") == 0) {
        if (api__faults_parse_ulong(v, 0, MAX_RETRY_AFTER, &u) < 0)
            return fail(err, errlen, "fault rule: retry-after \"%.40s\" is not 0..3600 seconds", v);
        r->retry_after = (int)u;
        *seen |= SEEN_RETRY;
    } else if (strcmp(k, "ms") == 0) {
        if (api__faults_parse_ulong(v, 1, MAX_DELAY_MS, &u) < 0)
            return fail(err, errlen, "fault rule: ms \"%.40s\" is not 1..600000", v);
        r->delay_ms = (unsigned)u;
        *seen |= SEEN_MS;
    } else if (strcmp(k, "p") == 0) {
        char *end;
        double d;
        errno = 0;
        d = strtod(v, &end);
        if (!*v || errno || *end || !isfinite(d) || d < 0.0 || d > 1.0)
            return fail(err, errlen, "fault rule: p \"%.40s\" is not a probability 0..1", v);
        r->p = d;
        *seen |= SEEN_P;
    } else if (strcmp(k, "every") == 0) {
        if (api__faults_parse_ulong(v, 1, MAX_EVERY, &u) < 0)
            return fail(err, errlen, "fault rule: every \"%.40s\" is not a positive count", v);
        r->every = u;
        *seen |= SEEN_EVERY;
    } else if (strcmp(k, "count") == 0) {
        if (api__faults_parse_ulong(v, 0, MAX_COUNT, &u) < 0)
            return fail(err, errlen, "fault rule: count \"%.40s\" is not a count", v);
        r->count = u;
    } else {
        return fail(err, errlen, "fault rule: unknown key \"%.40s\" (known: verb, resource, "
                    "action, code, retry-after, ms, p, every, count)", k);
    }
    return 0;
}

static void rule_init(struct faults_rule *r)
{
    memset(r, 0, sizeof(*r));
    strcpy(r->verb, "*");
    r->p = 1.0;
    r->retry_after = -1;
}

/* Checks the combination of keys and fills defaults. */
static int rule_finish(struct faults_rule *r, unsigned seen, char *err, size_t errlen)
{
    if (!(seen & SEEN_ACTION)) {
        if (!(seen & (SEEN_CODE | SEEN_MS)))
            return fail(err, errlen, "fault rule: needs code=429|500|503, action=reset or "
                        "action=delay,ms=N");
        r->action = (seen & SEEN_CODE) ? FAULTS_STATUS : FAULTS_DELAY;
    }
    if ((seen & SEEN_P) && (seen & SEEN_EVERY))
        return fail(err, errlen, "fault rule: p and every exclude each other");
    switch (r->action) {
    case FAULTS_STATUS:
        if (!(seen & SEEN_CODE))
            return fail(err, errlen, "fault rule: action=status needs code=429|500|503");
        if (seen & SEEN_MS)
            return fail(err, errlen, "fault rule: ms only goes with action=delay");
        if ((seen & SEEN_RETRY) && r->code == 500)
            return fail(err, errlen, "fault rule: retry-after only goes with 429 or 503");
        if (r->retry_after < 0)
            r->retry_after = r->code == 429 ? 1 : 0;
        break;
    case FAULTS_RESET:
    case FAULTS_DELAY:
        if (seen & (SEEN_CODE | SEEN_RETRY))
            return fail(err, errlen, "fault rule: code and retry-after only go with "
                        "action=status");
        if (r->action == FAULTS_DELAY && !(seen & SEEN_MS))
            return fail(err, errlen, "fault rule: action=delay needs ms=N");
        if (r->action == FAULTS_RESET && (seen & SEEN_MS))
            return fail(err, errlen, "fault rule: ms only goes with action=delay");
        r->retry_after = 0;
        break;
    }
    return 0;
}

int faults_rule_parse(const char *text, struct faults_rule *out, char *err, size_t errlen)
{
    char copy[FAULTS_MAX_RULE_LEN + 1], *item, *save = NULL;
    struct faults_rule r;
    unsigned seen = 0;
    size_t n;
    int rc;

    if (!text || !out)
        return fail(err, errlen, "fault rule: empty");
    n = strlen(text);
    if (n == 0)
        return fail(err, errlen, "fault rule: empty");
    if (n > FAULTS_MAX_RULE_LEN)
        return fail(err, errlen, "fault rule: longer than %d bytes", FAULTS_MAX_RULE_LEN);
    memcpy(copy, text, n + 1);
    rule_init(&r);
    if (copy[0] == ',' || copy[n - 1] == ',' || strstr(copy, ",,"))
        return fail(err, errlen, "fault rule: empty item in \"%.80s\"", text);
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item)
            return fail(err, errlen, "fault rule: \"%.60s\" is not key=value", item);
        *eq = '\0';
        if ((rc = set_key(&r, &seen, item, eq + 1, err, errlen)) < 0)
            return rc;
    }
    if ((rc = rule_finish(&r, seen, err, errlen)) < 0)
        return rc;
    *out = r;
    return 0;
}

int faults_rule_from_json(const cJSON *j, struct faults_rule *out, char *err, size_t errlen)
{
    struct faults_rule r;
    unsigned seen = 0;
    const cJSON *c;
    int rc;

    if (cJSON_IsString(j))
        return faults_rule_parse(j->valuestring, out, err, errlen);
    if (!cJSON_IsObject(j))
        return fail(err, errlen, "fault rule: want an object or a string");
    rule_init(&r);
    cJSON_ArrayForEach(c, j) {
        char num[64];
        const char *v;
        if (!c->string)
            return fail(err, errlen, "fault rule: member without a name");
        if (strcmp(c->string, "matched") == 0 || strcmp(c->string, "fired") == 0 ||
            strcmp(c->string, "rule") == 0)
            continue;   /* a listing PUT back as it was: counters and the text form */
        if (cJSON_IsString(c)) {
            v = c->valuestring;
        } else if (cJSON_IsNumber(c)) {
            double d = c->valuedouble;
            if (!isfinite(d))
                return fail(err, errlen, "fault rule: %.40s is not a finite number", c->string);
            snprintf(num, sizeof(num), "%.17g", d);
            v = num;
        } else {
            return fail(err, errlen, "fault rule: %.40s must be a string or a number", c->string);
        }
        if ((rc = set_key(&r, &seen, c->string, v, err, errlen)) < 0)
            return rc;
    }
    if ((rc = rule_finish(&r, seen, err, errlen)) < 0)
        return rc;
    *out = r;
    return 0;
}

int faults_rule_format(const struct faults_rule *r, struct buf *b)
{
    int rc = buf_printf(b, "verb=%s", r->verb);

    if (r->resource[0])
        rc |= buf_printf(b, ",resource=%s", r->resource);
    switch (r->action) {
    case FAULTS_STATUS:
        rc |= buf_printf(b, ",code=%d", r->code);
        if (r->code != 500)
            rc |= buf_printf(b, ",retry-after=%d", r->retry_after);
        break;
    case FAULTS_RESET:
        rc |= buf_puts(b, ",action=reset");
        break;
    case FAULTS_DELAY:
        rc |= buf_printf(b, ",action=delay,ms=%u", r->delay_ms);
        break;
    }
    if (r->every)
        rc |= buf_printf(b, ",every=%lu", r->every);
    else if (r->p != 1.0)
        rc |= buf_printf(b, ",p=%.17g", r->p);
    if (r->count)
        rc |= buf_printf(b, ",count=%lu", r->count);
    return rc ? -ENOMEM : 0;
}

/* ---- the table -------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int faults_new(uint64_t seed, struct faults **out)
{
    struct faults *f = calloc(1, sizeof(*f));

    if (!f)
        return -ENOMEM;
    pthread_mutex_init(&f->mu, NULL);
    f->seed = seed;
    *out = f;
    return 0;
}

void faults_free(struct faults *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f->token);
    free(f);
}

/* Restarts every rule's sequence and counters. Called with mu held. */
static void reseed_locked(struct faults *f)
{
    for (size_t i = 0; i < f->n; i++) {
        f->slots[i].rng = f->seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(i + 1));
        f->slots[i].matched = 0;
        f->slots[i].fired = 0;
    }
}

int faults_set_rules(struct faults *f, const struct faults_rule *rules, size_t n)
{
    if (n > FAULTS_MAX_RULES)
        return -E2BIG;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < n; i++)
        f->slots[i].rule = rules[i];
    f->n = n;
    reseed_locked(f);
    atomic_store(&f->n_active, n);
    pthread_mutex_unlock(&f->mu);
    return 0;
}

int faults_add_rule(struct faults *f, const struct faults_rule *r)
{
    int rc = 0;

    pthread_mutex_lock(&f->mu);
    if (f->n >= FAULTS_MAX_RULES) {
        rc = -E2BIG;
    } else {
        struct faults_slot *s = &f->slots[f->n];
        s->rule = *r;
        s->rng = f->seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(f->n + 1));
        s->matched = s->fired = 0;
        f->n++;
        atomic_store(&f->n_active, f->n);
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void faults_set_seed(struct faults *f, uint64_t seed)
{
    pthread_mutex_lock(&f->mu);
    f->seed = seed;
    reseed_locked(f);
    pthread_mutex_unlock(&f->mu);
}

static bool rule_matches(const struct faults_rule *r, const char *verb, const char *plural,
                         const char *sub)
{
    const char *slash;

    if (strcmp(r->verb, "*") != 0 && strcmp(r->verb, verb) != 0)
        return false;
    if (!r->resource[0])
        return true;
    slash = strchr(r->resource, '/');
    if (!slash)
        return strcmp(r->resource, plural) == 0;
    return strncmp(r->resource, plural, (size_t)(slash - r->resource)) == 0 &&
           plural[slash - r->resource] == '\0' && strcmp(slash + 1, sub) == 0;
}

/* Whether slot s fires for a request it matched. Called with mu held. */
static bool slot_fires(struct faults_slot *s)
{
    bool fire;

    if (s->rule.count && s->fired >= s->rule.count)
        return false;
    s->matched++;
    if (s->rule.every)
        fire = s->matched % s->rule.every == 0;
    else
        fire = (double)(splitmix64(&s->rng) >> 11) * 0x1.0p-53 < s->rule.p;
    if (fire)
        s->fired++;
    return fire;
}

void faults_decide(struct faults *f, const char *verb, const char *plural, const char *sub,
                   struct faults_decision *out)
{
    memset(out, 0, sizeof(*out));
    if (!verb || atomic_load(&f->n_active) == 0)
        return;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        struct faults_slot *s = &f->slots[i];
        if (!rule_matches(&s->rule, verb, plural ? plural : "", sub ? sub : "") ||
            !slot_fires(s))
            continue;
        if (s->rule.action == FAULTS_DELAY) {
            unsigned left = MAX_DELAY_MS - (out->delay_ms < MAX_DELAY_MS ? out->delay_ms
                                                                          : MAX_DELAY_MS);
            out->delay_ms += s->rule.delay_ms < left ? s->rule.delay_ms : left;
            continue;
        }
        if (s->rule.action == FAULTS_RESET) {
            out->reset = true;
        } else {
            out->code = s->rule.code;
            out->retry_after = s->rule.retry_after;
        }
        break;
    }
    pthread_mutex_unlock(&f->mu);
}

int faults_rules_json(struct faults *f, struct buf *b)
{
    int rc = buf_puts(b, "[");

    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        const struct faults_slot *s = &f->slots[i];
        const struct faults_rule *r = &s->rule;
        struct buf text = { 0 };

        rc |= faults_rule_format(r, &text);
        rc |= buf_printf(b, "%s{\"rule\":", i ? "," : "");
        rc |= buf_append_json_string(b, text.data ? text.data : "");
        buf_free(&text);
        rc |= buf_puts(b, ",\"verb\":");
        rc |= buf_append_json_string(b, r->verb);
        if (r->resource[0]) {
            rc |= buf_puts(b, ",\"resource\":");
            rc |= buf_append_json_string(b, r->resource);
        }
        if (r->action == FAULTS_STATUS) {
            rc |= buf_printf(b, ",\"code\":%d", r->code);
            if (r->code != 500)
                rc |= buf_printf(b, ",\"retry-after\":%d", r->retry_after);
        } else if (r->action == FAULTS_RESET) {
            rc |= buf_puts(b, ",\"action\":\"reset\"");
        } else {
            rc |= buf_printf(b, ",\"action\":\"delay\",\"ms\":%u", r->delay_ms);
        }
        if (r->every)
            rc |= buf_printf(b, ",\"every\":%lu", r->every);
        else
            rc |= buf_printf(b, ",\"p\":%.17g", r->p);
        if (r->count)
            rc |= buf_printf(b, ",\"count\":%lu", r->count);
        rc |= buf_printf(b, ",\"matched\":%lu,\"fired\":%lu}", s->matched, s->fired);
    }
    pthread_mutex_unlock(&f->mu);
    rc |= buf_puts(b, "]");
    return rc ? -ENOMEM : 0;
}

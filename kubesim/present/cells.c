/*
 * cells.c - what the cells of a Table row are made of: the standard Name and Age
 * column descriptions, duration.HumanDuration ages, and the helpers every printer
 * builds its cells with. table.c and both printer files (printers.c,
 * printers_misc.c) use these; this file calls none of them.
 */
#include "kubesim/present/present.h"
#include "kubesim/present/internal.h"
#include "util/json.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char present_name_desc[] =
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char present_age_desc[] =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";

/* ---- ages ---------------------------------------------------------------------- */

/* apimachinery's duration.HumanDuration past two minutes: below `both` seconds an age shows
 * its unit and the next smaller one (left out when 0), below `alone` its unit only. */
struct age_step {
    long long unit, sub;    /* seconds */
    char name, sub_name;
    long long both, alone;
};

static const struct age_step age_steps[] = {
    { 60, 1, 'm', 's', 10 * 60, 180 * 60 },
    { 3600, 60, 'h', 'm', 8 * 3600, 48 * 3600 },
    { 86400, 3600, 'd', 'h', 8 * 86400, 2 * 365 * 86400LL },
    { 365 * 86400LL, 86400, 'y', 'd', 8 * 365 * 86400LL, LLONG_MAX },
};

static void human_age(time_t then, time_t now, char *out)
{
    long long s = (long long)now - (long long)then;

    if (then == 0) {
        snprintf(out, 48, "<unknown>");
        return;
    }
    if (s < -1) {
        snprintf(out, 48, "<invalid>");
        return;
    }
    if (s < 0)
        s = 0;
    if (s < 120) {
        snprintf(out, 48, "%llds", s);
        return;
    }
    for (size_t i = 0; i < sizeof(age_steps) / sizeof(age_steps[0]); i++) {
        const struct age_step *a = &age_steps[i];
        long long rest = (s % a->unit) / a->sub;
        if (s < a->both && rest) {
            snprintf(out, 48, "%lld%c%lld%c", s / a->unit, a->name, rest, a->sub_name);
            return;
        }
        if (s < a->alone) {
            snprintf(out, 48, "%lld%c", s / a->unit, a->name);
            return;
        }
    }
}

void present_human_age(time_t then, time_t now, char out[16])
{
    char tmp[48];
    size_t n;

    human_age(then, now, tmp);
    n = strlen(tmp);
    if (n > 15)
        n = 15;   /* > 10^12 years: unreachable with real clocks */
    memcpy(out, tmp, n);
    out[n] = '\0';
}

void present__age_of(const char *ts, time_t now, char out[16])
{
    time_t t;

    if (!ts || !*ts || util_parse_time(ts, &t) < 0) {
        snprintf(out, 16, "<unknown>");
        return;
    }
    present_human_age(t, now, out);
}

int present__add_str(cJSON *cells, const char *s)
{
    cJSON *c = cJSON_CreateString(s ? s : "");

    if (!c)
        return -ENOMEM;
    cJSON_AddItemToArray(cells, c);
    return 0;
}

/* ---- cells --------------------------------------------------------------------- */

int present__cell_num(cJSON *cells, double v)
{
    cJSON *c = cJSON_CreateNumber(v);

    if (!c)
        return -ENOMEM;
    cJSON_AddItemToArray(cells, c);
    return 0;
}

int present__cell_name(cJSON *cells, const cJSON *obj)
{
    return present__add_str(cells, json_get_str(obj, "metadata.name"));
}

int present__cell_age(cJSON *cells, const cJSON *obj, time_t now)
{
    char age[16];

    present__age_of(json_get_str(obj, "metadata.creationTimestamp"), now, age);
    return present__add_str(cells, age);
}

int present__cells_name_str_age(cJSON *cells, const cJSON *obj, const char *path, time_t now)
{
    int rc;

    if ((rc = present__cell_name(cells, obj)) ||
        (rc = present__add_str(cells, json_get_str(obj, path))))
        return rc;
    return present__cell_age(cells, obj, now);
}

long present__num(const cJSON *obj, const char *path, long dflt)
{
    const cJSON *v = json_get(obj, path);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

const char *present__or(const char *s, const char *dflt)
{
    return s && *s ? s : dflt;
}

int present__count_keys(const cJSON *obj, const char *path)
{
    const cJSON *v = json_get(obj, path);
    return cJSON_IsObject(v) || cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
}

int present__cell_buf(cJSON *cells, struct buf *b, int rc)
{
    if (rc == 0)
        rc = present__add_str(cells, b->data ? b->data : "");
    buf_free(b);
    return rc;
}

/*
 * plan.c - the pieces a plan is built from: status field edits (omitempty, as
 * KubeRay's JSON tags) and the Events and requeue a plan carries. Both halves
 * of the state machine use them, decide.c and terminal.c, so they live below
 * both and neither calls into the other for them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "reconcilers/rayjob/internal.h"

int rayjob__st_set(cJSON *st, const char *key, const char *val)
{
    cJSON_DeleteItemFromObjectCaseSensitive(st, key);
    if (!val || !*val)
        return 0;   /* omitempty */
    return cJSON_AddStringToObject(st, key, val) ? 0 : -ENOMEM;
}

int rayjob__st_time(cJSON *st, const char *key, int64_t ms)
{
    char t[32];
    rj_format_time(ms, t);
    return rayjob__st_set(st, key, t);
}

void rayjob__plan_event(struct rj_plan *p, const char *type, const char *reason, const char *action,
                        const char *fmt, ...)
{
    if (p->nevents >= (int)(sizeof(p->events) / sizeof(p->events[0])))
        return;
    struct rj_event *e = &p->events[p->nevents++];
    va_list ap;
    e->type = type;
    e->action = action;
    snprintf(e->reason, sizeof(e->reason), "%s", reason);
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
}

void rayjob__plan_requeue(struct rj_plan *p, int64_t ms)
{
    p->requeue = true;
    p->requeue_ms = ms < 0 ? 0 : ms;
}

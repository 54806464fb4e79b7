/*
 * json_equal.c - deep equality of cJSON values, linear in the size of the values
 * (apart from member lookups), unlike cJSON_Compare; see json_equal.h.
 */
#include <string.h>

#include "kobj/json_equal.h"

static int count(const cJSON *o)
{
    int n = 0;
    for (const cJSON *c = o->child; c; c = c->next)
        n++;
    return n;
}

bool json_equal(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    if (a == b)
        return true;
    int ta = a->type & 0xFF, tb = b->type & 0xFF;
    if (ta != tb)
        return false;
    switch (ta) {
    case cJSON_False:
    case cJSON_True:
    case cJSON_NULL:
        return true;
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
    case cJSON_Raw:
        if (!a->valuestring || !b->valuestring)
            return a->valuestring == b->valuestring;
        return !strcmp(a->valuestring, b->valuestring);
    case cJSON_Array: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!json_equal(x, y))
                return false;
        return !x && !y;
    }
    case cJSON_Object:
        if (count(a) != count(b))
            return false;
        for (const cJSON *x = a->child; x; x = x->next) {
            const cJSON *y = x->string ? cJSON_GetObjectItemCaseSensitive(b, x->string) : NULL;
            if (!y || !json_equal(x, y))
                return false;
        }
        return true;
    default:
        return false;
    }
}

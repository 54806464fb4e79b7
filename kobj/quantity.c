/*
 * quantity.c - resource.Quantity text to thousandths of its unit. Both sides need it:
 * kubesim's scheduler sums Pod requests with it, and the RayCluster controller turns
 * container resources into Ray's --num-cpus/--memory and PodGroup minResources.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "kobj/quantity.h"

#define QTY_MAX_LEN 64

static const struct { const char *suf; double mul; } suffixes[] = {
    { "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
    { "Ti", 1099511627776.0 }, { "Pi", 1125899906842624.0 }, { "Ei", 1152921504606846976.0 },
    { "m", 1e-3 }, { "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 }, { "P", 1e15 },
    { "E", 1e18 }, { "", 1.0 },
};

int kobj_quantity_parse(const char *s, int64_t *milli)
{
    size_t len, i = 0, digits = 0;
    double v = 0, frac = 0.1, mul = -1;
    bool neg = false, dot = false;

    if (!s || (len = strnlen(s, QTY_MAX_LEN + 1)) == 0 || len > QTY_MAX_LEN)
        return -EINVAL;
    if (s[i] == '+' || s[i] == '-')
        neg = s[i++] == '-';
    for (; s[i]; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            if (dot) {
                v += (s[i] - '0') * frac;
                frac /= 10;
            } else {
                v = v * 10 + (s[i] - '0');
            }
            digits++;
        } else if (s[i] == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (!digits)
        return -EINVAL;
    if ((s[i] == 'e' || s[i] == 'E') &&
        ((s[i + 1] >= '0' && s[i + 1] <= '9') || s[i + 1] == '-' || s[i + 1] == '+')) {
        /* decimal exponent ("1e3"); "E" alone is the exa suffix */
        char *end;
        long e = strtol(s + i + 1, &end, 10);
        if (*end || end == s + i + 1 || e < -30 || e > 30)
            return -EINVAL;
        mul = pow(10.0, (double)e);
    } else {
        for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++)
            if (!strcmp(s + i, suffixes[k].suf)) {
                mul = suffixes[k].mul;
                break;
            }
    }
    if (mul < 0)
        return -EINVAL;
    v = v * mul * 1000.0;
    if (v > 9.2e18)
        return -ERANGE;
    /* round up to the next thousandth, as Quantity.MilliValue does */
    *milli = (int64_t)ceil(v - 1e-6);
    if (neg)
        *milli = -*milli;
    return 0;
}

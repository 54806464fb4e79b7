/* fuzz_cron.c - the RayCronJob schedule parser and the TZif reader on arbitrary bytes.
 * The first byte picks the target: even -> cron_parse and cron_parse_duration of the rest
 * as a string, then a few cron_next steps in a fixed +1h zone; odd -> tz_parse of the rest,
 * then lookups, civil time and wall-time resolution at extreme and ordinary instants, and
 * a schedule's next fire in that zone. Any input must give a result or an error, never a
 * crash, a read out of bounds or an overflow. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/raycronjob/cron.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if ((data[0] & 1) == 0) {
        char *s = fuzz_text(data, size, SIZE_MAX);
        if (!s)
            return 0;
        struct cron_schedule cs;
        char err[256];
        struct tz *z = NULL;
        if (cron_parse(s, &cs, err, sizeof(err)) == 0 && tz_fixed("F", 3600, &z) == 0) {
            int64_t t = 1767225600;
            for (int i = 0; i < 4 && t != CRON_NEVER; i++)
                t = cron_next(&cs, z, t);
            tz_free(z);
        }
        int64_t ns;
        (void)cron_parse_duration(s, &ns);
        free(s);
        return 0;
    }
    struct tz *z = NULL;
    if (tz_parse(data + 1, size - 1, "fuzz", &z) == 0) {
        static const int64_t ts[] = { INT64_MIN, -((int64_t)1 << 40), -1, 0, 1767225600,
                                      4102444800, (int64_t)1 << 40, INT64_MAX };
        struct tz_civil c;
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
            int64_t s, e;
            (void)tz_lookup(z, ts[i], &s, &e);
            tz_civil_of(z, ts[i], &c);
        }
        (void)tz_make(z, 2026, 3, 8, 2, 30, 0);
        (void)tz_make(z, INT64_MAX, INT64_MIN, INT64_MAX, 0, 0, 0);
        struct cron_schedule cs;
        char err[64];
        if (cron_parse("30 2 * * *", &cs, err, sizeof(err)) == 0)
            (void)cron_next(&cs, z, 1767225600);
        tz_free(z);
    }
    return 0;
}

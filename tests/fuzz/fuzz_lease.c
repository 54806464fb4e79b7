/*
 * fuzz_lease.c - libFuzzer target for the Lease reading of the leader election
 * (reconcilers/host/leader.c): any JSON body the API server could return for a
 * Lease goes through host__lease_record_from_json and, when accepted, the
 * decision; it must be read or refused with -EINVAL, never crash or overrun
 * (holder and times are copied into fixed buffers).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/host/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct host_lease_record rec;
    cJSON *j;
    if (size > 65536)
        return 0;
    j = cJSON_ParseWithLength((const char *)data, size);
    if (!j)
        return 0;
    if (host__lease_record_from_json(j, &rec) == 0) {
        if (strlen(rec.holder) >= sizeof(rec.holder) || rec.duration_s < 0 || rec.transitions < 0)
            abort();
        (void)host__lease_decide(&rec, true, "pod-a", 1000, 1000 + (uint64_t)size * 100);
    }
    cJSON_Delete(j);
    return 0;
}

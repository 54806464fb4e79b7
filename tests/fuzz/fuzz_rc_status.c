/* fuzz_rc_status.c - libFuzzer target for the RayCluster status computation
 * (reconcilers/raycluster/status.c) on arbitrary cluster, Pod and Service
 * objects as the cache could hold them: input byte 0 picks the reconcile error,
 * the rest is JSON {"rc":{...},"pods":[...],"services":[...]}. Checks the
 * contract: 0 with a status object or a negative errno with none; the result
 * compared with the old status and recomputed from itself without crashing. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcilers/raycluster/raycluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    enum rc_err e = (enum rc_err)(data[0] % (RC_ERR_DELETE_ALL + 1));
    cJSON *in = cJSON_ParseWithLength((const char *)data + 1, size - 1);
    if (!in)
        return 0;
    cJSON *rc = cJSON_GetObjectItemCaseSensitive(in, "rc");
    cJSON *pods = cJSON_GetObjectItemCaseSensitive(in, "pods");
    cJSON *svcs = cJSON_GetObjectItemCaseSensitive(in, "services");
    struct rc_status_in si = { .rc = rc, .pods = pods, .services = svcs, .err = e,
                               .err_message = "m", .now = "2026-01-01T00:00:00Z" };
    cJSON *st = (cJSON *)0x1;
    int r = rc_status_compute(&si, &st);
    if (r == 0) {
        if (!cJSON_IsObject(st))
            __builtin_trap();
        (void)rc_status_differs(cJSON_GetObjectItemCaseSensitive(rc, "status"), st);
        cJSON_DeleteItemFromObjectCaseSensitive(rc, "status");
        cJSON_AddItemToObject(rc, "status", st);
        cJSON *again = NULL;
        if (rc_status_compute(&si, &again) == 0)
            (void)rc_status_differs(st, again);
        cJSON_Delete(again);
    } else if (r > 0 || st != (cJSON *)0x1) {
        __builtin_trap();   /* an error leaves *out alone */
    }
    cJSON_Delete(in);
    return 0;
}

/*
 * fuzz_admission.c - libFuzzer target for the admission webhook's AdmissionReview reading
 * (reconcilers/webhook/review.c): any body an API server could relay, for each of the
 * three paths (the first byte picks the path). It must answer a well-formed review
 * (allowed or refused, with the request's uid), refuse with -EINVAL, or -ENOMEM; never
 * crash or overrun.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reconcilers/webhook/webhook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = { "/validate-ray-io-v1-raycluster",
                                         "/validate-ray-io-v1-rayjob",
                                         "/validate-ray-io-v1-rayservice" };
    char *out = NULL;
    if (size < 1 || size > 1 << 20)
        return 0;
    int rc = webhook_review(paths[data[0] % 3], (const char *)data + 1, size - 1, &out);
    if (rc == 0) {
        cJSON *r = cJSON_Parse(out);
        const cJSON *resp = cJSON_GetObjectItemCaseSensitive(r, "response");
        if (!r || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(resp, "uid")) ||
            !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(resp, "allowed")))
            abort();
        cJSON_Delete(r);
    } else if (rc != -EINVAL && rc != -ENOMEM) {
        abort();
    }
    free(out);
    return 0;
}

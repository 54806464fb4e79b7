/* fuzz_certmgr.c - kubesim's tiny cert-manager on what a Certificate's author controls: the
 * duration strings and the spec a certificate is issued from (common name, DNS and IP SANs,
 * usages, isCA), self-signed. Input: a duration string, a newline, a spec as JSON.
 * No crash, no leak, no undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text, *nl;
    cJSON *spec;
    if (size > 4096 || !(text = malloc(size + 1)))
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if ((nl = strchr(text, '\n')))
        *nl++ = '\0';
    (void)cluster__certmgr_duration(text, 1);
    if (nl && (spec = cJSON_Parse(nl))) {
        (void)cluster__certmgr_selfsign(spec);
        cJSON_Delete(spec);
    }
    free(text);
    return 0;
}

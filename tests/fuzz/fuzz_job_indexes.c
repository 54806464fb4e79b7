/* fuzz_job_indexes.c - the Job controller's parser of status.completedIndexes
 * (cluster_job_indexes_parse), text a client can write into a Job. The first byte
 * picks the number of completions (0..255, scaled); the rest is the text, not
 * NUL-terminated, so a read past its length is caught. Whatever parses must format
 * back to a text that parses to the same set. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    long n;
    unsigned char *bits, *again;
    char *txt;

    if (size < 1 || size > 65536)
        return 0;
    n = (long)data[0] * 40;
    bits = calloc((size_t)n / 8 + 1, 1);
    again = calloc((size_t)n / 8 + 1, 1);
    if (!bits || !again)
        goto out;
    if (cluster_job_indexes_parse((const char *)data + 1, size - 1, n, bits) == 0) {
        txt = cluster_job_indexes_format(bits, n);
        if (txt) {
            if (cluster_job_indexes_parse(txt, strlen(txt), n, again) != 0 ||
                memcmp(bits, again, (size_t)n / 8 + 1) != 0)
                abort();
            free(txt);
        }
    }
out:
    free(bits);
    free(again);
    return 0;
}

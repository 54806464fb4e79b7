/* fuzz_server_proto.c - libFuzzer target for kubesim's protobuf body decoder
 * (kubesim/api/proto.c): any bytes after the "k8s\0" envelope magic must decode to
 * an object or an error, without crashes, leaks or reads past the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/api/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size + 4);
    cJSON *o = NULL;
    char err[256];
    int rc;

    if (!body)
        return 0;
    memcpy(body, "k8s\0", 4);
    memcpy(body + 4, data, size);
    rc = api__proto_decode(body, size + 4, &o, err, sizeof(err));
    if ((rc == 0) != (o != NULL))
        abort();
    if (o) {
        char *txt = cJSON_PrintUnformatted(o);
        free(txt);
        cJSON_Delete(o);
    }
    free(body);
    return 0;
}

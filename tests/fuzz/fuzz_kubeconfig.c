/* fuzz_kubeconfig.c - libFuzzer target for the kubeconfig parser: any bytes must
 * give a config or an error (never a crash, leak or unbounded work). The first
 * byte picks whether a --context override is passed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config *cfg = NULL;
    char err[256];
    const char *ctx = NULL;

    if (size > 0 && data[0] == '#')
        ctx = "alt";
    int rc = kube_config_parse((const char *)data, size, ctx, "/nonexistent", &cfg, err,
                               sizeof(err));
    if (rc == 0) {
        /* Touch what a client would use. */
        if (cfg->server == NULL || cfg->namespace == NULL || strlen(cfg->server) == 0)
            __builtin_trap();
        kube_config_free(cfg);
    } else if (cfg != NULL) {
        __builtin_trap();
    }
    return 0;
}

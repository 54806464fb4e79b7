/*
 * fuzz_store_journal.c - libFuzzer target for the store's journal replay
 * (kubesim/store/persist.c): arbitrary bytes are replayed as a journal into a fresh store.
 * Replay must load them or reject them with an error, never crash or leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kubesim/registry/registry.h"
#include "kubesim/store/store.h"
#include "kubesim/store/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct registry *reg = NULL;
    struct store *s = NULL;
    struct store_opts o = { .watch_window = 16 };
    char err[256];

    if (size > (1u << 20))
        return 0;
    log_set_level(LOG_ERROR + 1);
    if (registry_new(&reg))
        return 0;
    if (store_open(&o, reg, &s, err, sizeof(err)))
        return 0;
    (void)store__persist_replay_buf(s, (const char *)data, size, err, sizeof(err));
    store_close(s);
    return 0;
}

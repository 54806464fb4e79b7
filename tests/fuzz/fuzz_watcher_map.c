/* fuzz_watcher_map.c - libFuzzer target for the watcher's event-to-key mapping
 * (watcher/types.c) on arbitrary API objects: input byte 0 picks the type and
 * event, the rest is "NEWJSON\n\nOLDJSON" (old optional). Checks the contract:
 * a count within the buffer, every key "ns/name" fitting the key bound with a
 * queue some type serves. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "watcher/watcher.h"

#define KEYS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    int t = data[0] % (int)watcher_ntypes;
    enum watcher_ev ev = (enum watcher_ev)((data[0] / watcher_ntypes) % 3);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const char *sep = memmem(text, len, "\n\n", 2);
    size_t nlen = sep ? (size_t)(sep - text) : len;
    cJSON *obj = cJSON_ParseWithLength(text, nlen);
    cJSON *old = sep ? cJSON_ParseWithLength(sep + 2, len - nlen - 2) : NULL;
    struct watcher_key keys[KEYS];
    if (obj) {
        int n = watcher_map_event(t, ev, obj, old, keys, KEYS);
        if (n > KEYS)
            __builtin_trap();
        for (int i = 0; i < n; i++) {
            size_t kl = strnlen(keys[i].key, sizeof(keys[i].key));
            if (kl == sizeof(keys[i].key) || !strchr(keys[i].key, '/') || !keys[i].queue)
                __builtin_trap();
            int served = 0;
            for (size_t j = 0; j < watcher_ntypes; j++)
                if (watcher_types[j].queue && strcmp(watcher_types[j].queue, keys[i].queue) == 0)
                    served = 1;
            if (!served)
                __builtin_trap();
        }
    }
    cJSON_Delete(obj);
    cJSON_Delete(old);
    return 0;
}

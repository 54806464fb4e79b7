/* fuzz_store_peek.c - store__text_member (how a label-selector watch finds a text-only
 * snapshot's labels) on arbitrary bytes: it never reads past the text, and whenever
 * cJSON parses the text into an object it finds the labels cJSON sees, and only those.
 * Texts with a backslash or a NUL byte are checked for bounds only: a member name written
 * with escapes is compared as written, and cJSON cuts a name at a raw NUL; the store's
 * printer writes neither (it escapes control bytes and spells names as they are). */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/store/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so reading past the end is an ASan report */
    char *text = malloc(size ? size : 1);
    const char *v;
    size_t n = 0;
    cJSON *all, *mine = NULL;
    const cJSON *want;

    if (!text)
        return 0;
    memcpy(text, data, size);
    v = store__text_member(text, size, "metadata", "labels", &n);
    if (v) {
        assert(v >= text && v + n <= text + size);
        mine = cJSON_ParseWithLength(v, n);
    }
    all = cJSON_ParseWithLength(text, size);
    if (cJSON_IsObject(all) && !memchr(text, '\\', size) && !memchr(text, 0, size)) {
        want = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(all, "metadata"),
                                                "labels");
        assert(!want == !v);
        if (v) {
            /* printed, not json_equal: that looks members up by name, so an object with
             * a repeated name is not equal to itself */
            char *a = cJSON_PrintUnformatted(want), *b = mine ? cJSON_PrintUnformatted(mine) : NULL;
            assert(!a || (b && !strcmp(a, b)));
            free(a);
            free(b);
        }
    }
    cJSON_Delete(all);
    cJSON_Delete(mine);
    free(text);
    return 0;
}

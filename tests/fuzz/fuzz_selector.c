/* fuzz_selector.c - label and field selector parsers on arbitrary bytes: any input must
 * give a selector or an error, and a parsed selector must evaluate without crashing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/schema/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    char *s = malloc(size + 1);
    struct sel *sel = NULL;
    struct fsel *fs = NULL;
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    cJSON *labels = cJSON_Parse("{\"app\":\"ray\",\"n\":\"5\",\"ray.io/node-type\":\"head\"}");
    if (sel_parse(s, &sel, err, sizeof(err)) == 0) {
        (void)sel_matches(sel, labels);
        (void)sel_required_value(sel, "app");
        sel_free(sel);
    }
    if (fsel_parse(s, &fs, err, sizeof(err)) == 0) {
        cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"n\":1e300}}");
        for (size_t i = 0; i < fsel_count(fs); i++)
            (void)fsel_field(fs, i);
        (void)fsel_matches(fs, obj);
        cJSON_Delete(obj);
        fsel_free(fs);
    }
    cJSON *ls = size ? cJSON_ParseWithLength((const char *)data, size) : NULL;
    if (ls && sel_from_label_selector(ls, &sel, err, sizeof(err)) == 0) {
        (void)sel_matches(sel, labels);
        sel_free(sel);
    }
    cJSON_Delete(ls);
    cJSON_Delete(labels);
    free(s);
    return 0;
}

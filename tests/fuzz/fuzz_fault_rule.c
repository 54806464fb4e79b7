/* fuzz_fault_rule.c - kubesim's fault rule parsers on arbitrary bytes: the compact
 * syntax and the JSON form must give a rule or an error, never crash, and a parsed
 * rule's text form must parse back to the same rule. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/api/faults.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_roundtrip(const struct faults_rule *a)
{
    struct faults_rule b;
    struct buf text = { 0 };
    char err[256];

    if (faults_rule_format(a, &text) < 0)
        return;
    if (faults_rule_parse(text.data, &b, err, sizeof(err)) != 0 ||
        strcmp(a->verb, b.verb) != 0 || strcmp(a->resource, b.resource) != 0 ||
        a->action != b.action || a->code != b.code || a->retry_after != b.retry_after ||
        a->delay_ms != b.delay_ms || a->p != b.p || a->every != b.every || a->count != b.count)
        abort();
    buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct faults_rule r;
    char err[256];
    char *s = malloc(size + 1);
    cJSON *j;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (faults_rule_parse(s, &r, err, sizeof(err)) == 0)
        check_roundtrip(&r);
    j = size ? cJSON_ParseWithLength((const char *)data, size) : NULL;
    if (j && faults_rule_from_json(j, &r, err, sizeof(err)) == 0)
        check_roundtrip(&r);
    cJSON_Delete(j);
    free(s);
    return 0;
}

/*
 * json_text.c - cJSON-compatible JSON string escaping (see json_text.h). Runs of
 * bytes that need no escape, nearly all of every Kubernetes string, are copied
 * with one memcpy. Also the sorted key order Go prints maps in.
 */
#include "kobj/json_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

static bool plain(unsigned char c)
{
    return c >= 0x20 && c != '"' && c != '\\';
}

size_t json_text_str_len(const char *s, size_t n)
{
    size_t len = n + 2;

    if (n > (SIZE_MAX - 2) / 6)
        return SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (plain(c))
            continue;
        len += (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' ||
                c == '\t') ? 1 : 5;
    }
    return len;
}

char *json_text_put_str(char *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;

    *o++ = '"';
    while (i < n) {
        size_t run = i;
        unsigned char c;
        while (run < n && plain((unsigned char)s[run]))
            run++;
        memcpy(o, s + i, run - i);
        o += run - i;
        if (run == n)
            break;
        c = (unsigned char)s[run];
        i = run + 1;
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hex[c >> 4];
            o[4] = hex[c & 15];
            o += 5;
        }
    }
    *o++ = '"';
    return o;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t json_text_sorted_keys(const cJSON *obj, const char **keys, size_t max)
{
    const cJSON *it;
    size_t n = 0;

    if (!cJSON_IsObject(obj))
        return 0;
    cJSON_ArrayForEach(it, obj)
        if (n < max && cJSON_IsString(it))
            keys[n++] = it->string;
    qsort(keys, n, sizeof(*keys), cmp_str);
    return n;
}

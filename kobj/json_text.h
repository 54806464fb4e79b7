/*
 * json_text.h - JSON string text exactly as cJSON_PrintUnformatted writes it
 * (quotes, \" \\ \b \f \n \r \t, \u00XX for other control bytes, everything
 * else - UTF-8 included - as is). Shared by the store's serialiser
 * (store_json.c) and the managedFields printers (patch_fields*.c), whose output
 * must stay byte-identical to cJSON's. And the key order of Go's map printing, for
 * texts that quote maps (kubectl columns, field.Invalid values).
 */
#ifndef RAYOP_SIM_JSON_TEXT_H
#define RAYOP_SIM_JSON_TEXT_H

#include <stddef.h>

/* Bytes json_text_put_str writes for s[0..n), quotes included; SIZE_MAX when n is
 * too large to escape. */
size_t json_text_str_len(const char *s, size_t n);
/* Writes s[0..n) quoted and escaped at o, which has room for json_text_str_len(s, n)
 * bytes (at most 6 * n + 2); returns the end. No NUL is written. */
char *json_text_put_str(char *o, const char *s, size_t n);

/* Names of obj's string-valued members, sorted bytewise as Go sorts map keys when it
 * prints a map[string]string (labels.FormatLabels, %#v); at most max of them, borrowed
 * from obj. Returns how many were stored; 0 when obj is not an object. */
struct cJSON;
size_t json_text_sorted_keys(const struct cJSON *obj, const char **keys, size_t max);

#endif

/*
 * fuzz_input.h - the input convention most fuzz targets share: the first byte
 * picks what to exercise (a mode or option bits), the rest is the text under
 * test, handed over NUL-terminated. One copy of that prelude, so each target
 * starts with the part that is its own.
 */
#ifndef RAYOP_FUZZ_INPUT_H
#define RAYOP_FUZZ_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* data[1..size) as a NUL-terminated heap string (free() it), or NULL when the
 * input is empty, longer than max bytes, or memory runs out. */
static inline char *fuzz_text(const uint8_t *data, size_t size, size_t max)
{
    char *s;

    if (size < 1 || size > max)
        return NULL;
    if (!(s = malloc(size)))
        return NULL;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    return s;
}

#endif

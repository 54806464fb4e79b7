/*
 * base64.c - strict standard-alphabet base64 decoding, shared by the API client
 * (kubeconfig certificate data, Secret values) and kubesim (Secrets its simulated
 * Ray reads). Bounded by the input length; never trusts the input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/util.h"

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int util_base64_decode(const char *in, size_t len, char **out, size_t *outlen)
{
    unsigned char *o = malloc(len / 4 * 3 + 4);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0, pad = 0;

    *out = NULL;
    if (o == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad > 0) /* bad character, or data after padding */
            goto bad;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (pad > 2 || bits >= 6)
        goto bad;
    o[n] = '\0';
    *out = (char *)o;
    *outlen = n;
    return 0;
bad:
    free(o);
    return -EINVAL;
}

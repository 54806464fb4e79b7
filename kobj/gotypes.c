/*
 * gotypes.c - writes a cJSON value the way Go's encoding/json writes the typed value a
 * decoder would have made of it (layout from gotypes_table.c). This is what makes the
 * RayService cluster hash equal to KubeRay's: KubeRay hashes json.Marshal of its Go
 * struct, whose field order, zero values and Quantity canonical forms differ from the
 * stored JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "kobj/gotypes.h"
#include "kobj/kobj.h"
#include "util/util.h"

#define MAX_DEPTH 64

/* Go's encodeState.string with escapeHTML: <, >, & and U+2028/2029 as \u escapes,
 * \b \f \n \r \t by name, other controls as \u00XX, invalid UTF-8 as \ufffd. */
static int go_string(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    int rc = buf_puts(b, "\"");
    while (rc == 0 && *p) {
        unsigned char c = *p;
        if (c < 0x80) {
            char esc[8];
            switch (c) {
            case '"': rc = buf_puts(b, "\\\""); break;
            case '\\': rc = buf_puts(b, "\\\\"); break;
            case '\b': rc = buf_puts(b, "\\b"); break;
            case '\f': rc = buf_puts(b, "\\f"); break;
            case '\n': rc = buf_puts(b, "\\n"); break;
            case '\r': rc = buf_puts(b, "\\r"); break;
            case '\t': rc = buf_puts(b, "\\t"); break;
            default:
                if (c < 0x20 || c == '<' || c == '>' || c == '&') {
                    esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0';
                    esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
                    rc = buf_append(b, esc, 6);
                } else {
                    rc = buf_append(b, p, 1);
                }
            }
            p++;
            continue;
        }
        /* a UTF-8 sequence: its length and whether it is valid */
        size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        uint32_t cp = n == 4 ? c & 7u : n == 3 ? c & 15u : c & 31u;
        bool ok = n > 0;
        for (size_t i = 1; ok && i < n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                ok = false;
            else
                cp = cp << 6 | (p[i] & 0x3fu);
        }
        if (ok && ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
                   (n == 4 && (cp < 0x10000 || cp > 0x10ffff))))
            ok = false;
        if (!ok) {
            rc = buf_puts(b, "\\ufffd");
            p++;
        } else if (cp == 0x2028 || cp == 0x2029) {
            rc = buf_puts(b, cp == 0x2028 ? "\\u2028" : "\\u2029");
            p += n;
        } else {
            rc = buf_append(b, p, n);
            p += n;
        }
    }
    return rc ? rc : buf_puts(b, "\"");
}

/* ---- resource.Quantity --------------------------------------------------------------- */

static int64_t remove_factors(int64_t v, int64_t base, int *times)
{
    bool neg = v < 0;
    if (neg)
        v = -v;
    *times = 0;
    while (v >= base && v % base == 0) {
        v /= base;
        (*times)++;
    }
    return neg ? -v : v;
}

static const char *dec_suffix(int e)
{
    switch (e) {
    case -9: return "n";
    case -6: return "u";
    case -3: return "m";
    case 0: return "";
    case 3: return "k";
    case 6: return "M";
    case 9: return "G";
    case 12: return "T";
    case 15: return "P";
    case 18: return "E";
    }
    return NULL;
}

/* ParseQuantity's int64 path and CanonicalizeBytes. Returns false where Go would use
 * inf.Dec (very long or fractional binary values): the caller keeps the input. */
static bool quantity_canon(const char *str, char *out, size_t cap)
{
    const char *p = str;
    bool positive = true;
    if (strcmp(str, "0") == 0) {
        snprintf(out, cap, "0");
        return true;
    }
    if (*p == '-' || *p == '+')
        positive = *p++ == '+';
    while (*p == '0')
        p++;
    const char *num = p;
    while (*p >= '0' && *p <= '9')
        p++;
    size_t nnum = (size_t)(p - num);
    const char *den = "";
    size_t nden = 0;
    if (*p == '.') {
        den = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
        nden = (size_t)(p - den);
    }
    const char *suf = p;
    int base, exponent;
    enum { DEC_SI, BIN_SI, DEC_EXP } format;
    static const char *const bin[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
    format = DEC_SI;
    base = 10;
    exponent = 0;
    if (!*suf) {
    } else if (!strcmp(suf, "n")) exponent = -9;
    else if (!strcmp(suf, "u")) exponent = -6;
    else if (!strcmp(suf, "m")) exponent = -3;
    else if (!strcmp(suf, "k")) exponent = 3;
    else if (!strcmp(suf, "M")) exponent = 6;
    else if (!strcmp(suf, "G")) exponent = 9;
    else if (!strcmp(suf, "T")) exponent = 12;
    else if (!strcmp(suf, "P")) exponent = 15;
    else if (!strcmp(suf, "E")) exponent = 18;
    else {
        size_t i;
        for (i = 0; i < 6 && strcmp(suf, bin[i]); i++)
            ;
        if (i < 6) {
            format = BIN_SI, base = 2, exponent = (int)(i + 1) * 10;
        } else if ((suf[0] == 'e' || suf[0] == 'E') && suf[1]) {
            char *end;
            long e = strtol(suf + 1, &end, 10);
            if (*end || e < -1000 || e > 1000)
                return false;
            format = DEC_EXP, exponent = (int)e;
        } else {
            return false;
        }
    }
    (void)base;
    if (nnum == 0)
        num = "0", nnum = 1;
    int precision, scale;
    int64_t mantissa = 1;
    if (format == BIN_SI) {
        scale = 0;
        if (nden != 0)
            return false;
        mantissa = (int64_t)1 << exponent;
        precision = 15 - (int)nnum - (int)((float)exponent * 3 / 10) - 1;
    } else {
        scale = exponent;
        precision = 18 - (int)(nnum + nden);
    }
    if (precision < 0)
        return false;
    scale -= (int)nden;
    if (scale < -9)
        return false;
    char shifted[48];
    if (nnum + nden >= sizeof(shifted))
        return false;
    memcpy(shifted, num, nnum);
    memcpy(shifted + nnum, den, nden);
    shifted[nnum + nden] = '\0';
    int64_t value = strtoll(shifted, NULL, 10);
    if (value != 0 && mantissa > INT64_MAX / value)
        return false;
    int64_t result = value * mantissa;
    if (!positive)
        result = -result;
    size_t sl = strlen(shifted);
    bool keep = format == BIN_SI ? exponent % 10 == 0 && (value & 7) != 0
                                 : scale % 3 == 0 && !(sl >= 3 && !strcmp(shifted + sl - 3, "000")) &&
                                   shifted[0] != '0';
    if (keep) {
        snprintf(out, cap, "%s", str);
        return true;
    }
    if (result == 0) {
        snprintf(out, cap, "0");
        return true;
    }
    if (format == BIN_SI && !(result > -1024 && result < 1024)) {
        int times;
        int64_t amount = remove_factors(result, 1024, &times);
        snprintf(out, cap, "%" PRId64 "%s", amount, times ? bin[times - 1] : "");
        return times <= 6;
    }
    /* AsCanonicalBytes: factors of 10 into the exponent, exponent a multiple of 3 */
    int times, e;
    int64_t amount = remove_factors(result, 10, &times);
    e = scale + times;
    int m = ((e % 3) + 3) % 3;
    for (int i = 0; i < m; i++) {
        if (amount > INT64_MAX / 10 || amount < INT64_MIN / 10)
            return false;
        amount *= 10;
    }
    e -= m;
    if (format == DEC_EXP) {
        if (e == 0)
            snprintf(out, cap, "%" PRId64, amount);
        else
            snprintf(out, cap, "%" PRId64 "e%d", amount, e);
        return true;
    }
    const char *s = dec_suffix(e);
    if (!s)
        return false;
    snprintf(out, cap, "%" PRId64 "%s", amount, s);
    return true;
}

void gotypes_quantity(const char *s, char *out, size_t cap)
{
    if (!quantity_canon(s, out, cap))
        snprintf(out, cap, "%s", s);
}

/* A JSON number as the text Go's decoder saw (integral values without a fraction). */
static void number_text(double d, char *out, size_t cap)
{
    if (d == floor(d) && fabs(d) < 9e15)
        snprintf(out, cap, "%" PRId64, (int64_t)d);
    else
        gotypes_float(d, out, cap);
}

void gotypes_float(double d, char *out, size_t cap)
{
    char e[40], digits[24];
    int prec, exp10;
    if (!isfinite(d)) {
        snprintf(out, cap, "null");
        return;
    }
    if (d == 0) {
        snprintf(out, cap, "0");
        return;
    }
    /* the shortest decimal that reads back as d (strconv's 'g' with precision -1) */
    for (prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec, d);
        if (strtod(e, NULL) == d)
            break;
    }
    const char *p = e;
    bool neg = *p == '-';
    size_t nd = 0;
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    digits[nd] = '\0';
    exp10 = atoi(p + 1);
    double a = fabs(d);
    if (a < 1e-6 || a >= 1e21) {
        /* 'e' format; encoding/json writes e-07 as e-7 */
        snprintf(out, cap, "%s%c%s%s%se%c%d", neg ? "-" : "", digits[0], nd > 1 ? "." : "",
                 digits + 1, "", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    /* 'f' format with just the digits needed */
    char buf[400];
    size_t w = 0;
    if (neg)
        buf[w++] = '-';
    if (exp10 < 0) {
        buf[w++] = '0';
        buf[w++] = '.';
        for (int i = 0; i < -exp10 - 1; i++)
            buf[w++] = '0';
        for (size_t i = 0; i < nd; i++)
            buf[w++] = digits[i];
    } else {
        for (int i = 0; i <= exp10; i++)
            buf[w++] = (size_t)i < nd ? digits[i] : '0';
        if ((size_t)exp10 + 1 < nd) {
            buf[w++] = '.';
            for (size_t i = (size_t)exp10 + 1; i < nd; i++)
                buf[w++] = digits[i];
        }
    }
    buf[w] = '\0';
    snprintf(out, cap, "%s", buf);
}

/* ---- zero values (omitempty, omitzero) ------------------------------------------------- */

/* reflect.Value.IsZero of what the decoder makes of v (NULL = absent) for type t. */
static bool is_zero(int t, const cJSON *v, int depth)
{
    const struct gotype *g = &gotypes[t];
    if (!v || cJSON_IsNull(v))
        return true;
    if (depth > MAX_DEPTH)
        return true;
    switch (g->kind) {
    case GT_STRUCT:
        for (int i = 0; i < g->nfields; i++)
            if (!is_zero(g->fields[i].type,
                         cJSON_GetObjectItemCaseSensitive(v, g->fields[i].json), depth + 1))
                return false;
        return true;
    case GT_STRING: return !cJSON_IsString(v) || !*v->valuestring;
    case GT_BOOL: return !cJSON_IsTrue(v);
    case GT_INT: case GT_UINT: case GT_FLOAT: return !cJSON_IsNumber(v) || v->valuedouble == 0;
    case GT_QUANTITY: {
        /* Quantity.IsZero */
        char q[64];
        if (cJSON_IsNumber(v))
            return v->valuedouble == 0;
        if (!cJSON_IsString(v))
            return true;
        gotypes_quantity(v->valuestring, q, sizeof(q));
        return strcmp(q, "0") == 0;
    }
    case GT_TIME: return !cJSON_IsString(v) || !*v->valuestring;
    default: return false;   /* pointers, slices, maps, raw: non-nil once present */
    }
}

static bool is_empty(int t, const cJSON *v)
{
    const struct gotype *g = &gotypes[t];
    if (g->kind == GT_STRUCT || g->kind == GT_QUANTITY || g->kind == GT_INTORSTR ||
        g->kind == GT_TIME)
        return false;          /* omitempty never omits a struct, even a zero one */
    if (!v || cJSON_IsNull(v))
        return true;
    switch (g->kind) {
    case GT_SLICE: case GT_MAP: case GT_BYTES:
        return !v->child;
    case GT_PTR: case GT_RAW:
        return false;
    default:
        return is_zero(t, v, 0);
    }
}

/* ---- writing ------------------------------------------------------------------------- */

static int marshal(struct buf *b, int t, const cJSON *v, int depth);
static int marshal_array(struct buf *b, int elem, const cJSON *v, int depth);
static int marshal_map(struct buf *b, int elem, const cJSON *v, int depth);

/* the element type of a raw JSON value's members (interface{}): marshal_any */
#define ANY (-1)

/* interface{} / raw JSON: sorted keys, Go escaping */
static int marshal_any(struct buf *b, const cJSON *v, int depth)
{
    char num[40];
    if (depth > MAX_DEPTH)
        return -E2BIG;
    if (!v || cJSON_IsNull(v))
        return buf_puts(b, "null");
    if (cJSON_IsBool(v))
        return buf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
    if (cJSON_IsNumber(v)) {
        number_text(v->valuedouble, num, sizeof(num));
        return buf_puts(b, num);
    }
    if (cJSON_IsString(v))
        return go_string(b, v->valuestring);
    if (cJSON_IsArray(v))
        return marshal_array(b, ANY, v, depth);
    return marshal_map(b, ANY, v, depth);
}

static int marshal_elem(struct buf *b, int elem, const cJSON *v, int depth)
{
    return elem == ANY ? marshal_any(b, v, depth) : marshal(b, elem, v, depth);
}

static int marshal_array(struct buf *b, int elem, const cJSON *v, int depth)
{
    int rc = buf_puts(b, "[");
    const cJSON *c;
    cJSON_ArrayForEach(c, v) {
        if (rc == 0 && c != v->child)
            rc = buf_puts(b, ",");
        if (rc == 0)
            rc = marshal_elem(b, elem, c, depth + 1);
    }
    return rc ? rc : buf_puts(b, "]");
}

/* an object's members in byte order of their names, as Go writes a map */
static int marshal_map(struct buf *b, int elem, const cJSON *v, int depth)
{
    size_t n, i;
    const cJSON **m;
    int rc = kobj_members_sorted(v, &m, &n);
    if (rc < 0)
        return rc;
    rc = buf_puts(b, "{");
    for (i = 0; rc == 0 && i < n; i++) {
        if (i)
            rc = buf_puts(b, ",");
        if (rc == 0)
            rc = go_string(b, m[i]->string);
        if (rc == 0)
            rc = buf_puts(b, ":");
        if (rc == 0)
            rc = marshal_elem(b, elem, m[i], depth + 1);
    }
    free(m);
    return rc ? rc : buf_puts(b, "}");
}

static int marshal_struct(struct buf *b, const struct gotype *g, const cJSON *v, int depth)
{
    int rc = buf_puts(b, "{");
    bool first = true;
    for (int i = 0; rc == 0 && i < g->nfields; i++) {
        const struct gofield *f = &g->fields[i];
        const cJSON *fv = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, f->json) : NULL;
        if ((f->flags & GF_OMITEMPTY) && is_empty(f->type, fv))
            continue;
        if ((f->flags & GF_OMITZERO) && is_zero(f->type, fv, depth + 1))
            continue;
        if (!first)
            rc = buf_puts(b, ",");
        first = false;
        if (rc == 0)
            rc = go_string(b, f->json);
        if (rc == 0)
            rc = buf_puts(b, ":");
        if (rc == 0)
            rc = marshal(b, f->type, fv, depth + 1);
    }
    return rc ? rc : buf_puts(b, "}");
}

static int marshal(struct buf *b, int t, const cJSON *v, int depth)
{
    char num[64];
    if (t < 0 || t >= gotypes_count)
        return -EINVAL;
    if (depth > MAX_DEPTH)
        return -E2BIG;
    const struct gotype *g = &gotypes[t];
    bool null = !v || cJSON_IsNull(v);
    switch (g->kind) {
    case GT_STRUCT:
        return marshal_struct(b, g, null ? NULL : v, depth);
    case GT_PTR:
        return null ? buf_puts(b, "null") : marshal(b, g->elem, v, depth + 1);
    case GT_SLICE:
        return null || !cJSON_IsArray(v) ? buf_puts(b, "null") : marshal_array(b, g->elem, v, depth);
    case GT_MAP:
        return null || !cJSON_IsObject(v) ? buf_puts(b, "null") : marshal_map(b, g->elem, v, depth);
    case GT_STRING:
        return go_string(b, cJSON_IsString(v) ? v->valuestring : "");
    case GT_BOOL:
        return buf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
    case GT_INT: case GT_UINT: case GT_FLOAT:
        number_text(cJSON_IsNumber(v) ? v->valuedouble : 0, num, sizeof(num));
        return buf_puts(b, num);
    case GT_BYTES:
        return null ? buf_puts(b, "null") : go_string(b, cJSON_IsString(v) ? v->valuestring : "");
    case GT_QUANTITY:
        if (cJSON_IsNumber(v)) {
            char raw[40];
            number_text(v->valuedouble, raw, sizeof(raw));
            gotypes_quantity(raw, num, sizeof(num));
        } else if (cJSON_IsString(v)) {
            gotypes_quantity(v->valuestring, num, sizeof(num));
        } else {
            snprintf(num, sizeof(num), "0");
        }
        return go_string(b, num);
    case GT_INTORSTR:
        if (cJSON_IsString(v))
            return go_string(b, v->valuestring);
        number_text(cJSON_IsNumber(v) ? v->valuedouble : 0, num, sizeof(num));
        return buf_puts(b, num);
    case GT_TIME:
        return cJSON_IsString(v) && *v->valuestring ? go_string(b, v->valuestring)
                                                     : buf_puts(b, "null");
    case GT_RAW:
        return marshal_any(b, v, depth);
    }
    return -EINVAL;
}

int gotypes_string(struct buf *out, const char *s)
{
    return go_string(out, s);
}

int gotypes_any(struct buf *out, const cJSON *v)
{
    return marshal_any(out, v, 0);
}

int gotypes_marshal(struct buf *out, int t, const cJSON *v)
{
    return marshal(out, t, v, 0);
}

int gotypes_hash_text(const char *text, size_t len, char out[33])
{
    static const char b32hex[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";
    unsigned char dig[20];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA1, text, len, dig) < 0)
        return -EIO;
    /* 160 bits are 32 base32 digits exactly: no padding */
    for (int i = 0, bit = 0; i < 32; i++, bit += 5) {
        int byte = bit / 8, off = bit % 8;
        unsigned v = (unsigned)dig[byte] << 8 | (byte + 1 < 20 ? dig[byte + 1] : 0);
        out[i] = b32hex[(v >> (11 - off)) & 31];
    }
    out[32] = '\0';
    return 0;
}

static void drop(cJSON *o, const char *key)
{
    if (cJSON_IsObject(o))
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
}

static void drop_pod_scheduling(cJSON *group)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(group, "template"), "spec");
    drop(spec, "tolerations");
    drop(spec, "schedulingGates");
}

void gotypes_spec_mute(cJSON *spec)
{
    cJSON *g;
    drop_pod_scheduling(cJSON_GetObjectItemCaseSensitive(spec, "headGroupSpec"));
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs")) {
        drop(g, "replicas");
        drop(g, "minReplicas");
        drop(g, "maxReplicas");
        drop(cJSON_GetObjectItemCaseSensitive(g, "scaleStrategy"), "workersToDelete");
        drop_pod_scheduling(g);
    }
    drop(spec, "upgradeStrategy");
}

int gotypes_spec_hash(const cJSON *spec, char out[33])
{
    struct buf b = { 0 };
    int rc = gotypes_marshal(&b, gotypes_raycluster_spec, spec);
    if (rc == 0)
        rc = gotypes_hash_text(b.data ? b.data : "", b.len, out);
    buf_free(&b);
    return rc;
}

/*
 * proto.c - decodes the Kubernetes protobuf envelope for the built-in kinds
 * that Go clients send as application/vnd.kubernetes.protobuf: kubectl 1.32+
 * typed generators (`kubectl create configmap|job|...`, `kubectl run`) and every
 * controller-runtime client (the real KubeRay operator creates its Pods, Services,
 * Jobs, RBAC objects and Ingresses that way). kubesim otherwise speaks JSON
 * only; other kinds get a 415 naming the supported ones.
 *
 * Wire format: "k8s\0" + runtime.Unknown {1: TypeMeta {1: apiVersion, 2: kind},
 * 2: raw (the object message)}. The object messages are described by the tables
 * tools/protogen generates from the k8s.io/api struct tags (proto_tables.c);
 * a field they do not know is refused unless it is zero.
 *
 * Bounded and total: every length is checked against the remaining input,
 * nesting is limited, and any input gives an object or an error.
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Deep enough for Job > spec > template > spec > affinity > nodeAffinity >
 * required > nodeSelectorTerms > matchExpressions and inline messages. */
#define PROTO_MAX_DEPTH 20

struct rd {
    const unsigned char *p, *end;
};

static int rd_varint(struct rd *r, uint64_t *out)
{
    uint64_t v = 0;

    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return -EINVAL;
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -EINVAL;
}

/* Reads a length-delimited payload into sub. */
static int rd_bytes(struct rd *r, struct rd *sub)
{
    uint64_t n;

    if (rd_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
        return -EINVAL;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
}

/* Steps over a fixed64 (n = 8) or fixed32 (n = 4) value. */
static int rd_fixed(struct rd *r, ptrdiff_t n)
{
    if (r->end - r->p < n)
        return -EINVAL;
    r->p += n;
    return 0;
}

static int rd_skip(struct rd *r, unsigned wire)
{
    uint64_t v;
    struct rd sub;

    switch (wire) {
    case 0: return rd_varint(r, &v);
    case 1: return rd_fixed(r, 8);
    case 2: return rd_bytes(r, &sub);
    case 5: return rd_fixed(r, 4);
    default: return -EINVAL;   /* groups (3, 4) are not used by Kubernetes */
    }
}

/* The scalar fields of a small message m (IntOrString, Quantity, Time, a map entry):
 * field i + 1 is read when want[i] names its wire type, 'v' a varint into u[i] or 'b'
 * a length-delimited payload into s[i]; other fields are skipped, and a field that is
 * not there keeps what the caller put in u[i] / s[i]. want has at most 3 letters. */
static int rd_fields(struct rd m, const char *want, uint64_t u[3], struct rd s[3])
{
    size_t n = strlen(want);

    while (m.p < m.end) {
        uint64_t tag, f;
        unsigned wire;
        int rc;
        if (rd_varint(&m, &tag) < 0)
            return -EINVAL;
        f = tag >> 3;
        wire = (unsigned)(tag & 7);
        if (f >= 1 && f <= n && wire == 0 && want[f - 1] == 'v')
            rc = rd_varint(&m, &u[f - 1]);
        else if (f >= 1 && f <= n && wire == 2 && want[f - 1] == 'b')
            rc = rd_bytes(&m, &s[f - 1]);
        else
            rc = rd_skip(&m, wire);
        if (rc < 0)
            return -EINVAL;
    }
    return 0;
}

static char *dup_text(const struct rd *s)
{
    size_t n = (size_t)(s->end - s->p);
    char *c;

    if (memchr(s->p, '\0', n))
        return NULL;
    if (!(c = malloc(n + 1)))
        return NULL;
    memcpy(c, s->p, n);
    c[n] = '\0';
    return c;
}

static char *dup_base64(const struct rd *s)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = (size_t)(s->end - s->p), j = 0;
    char *out = malloc((n + 2) / 3 * 4 + 1);

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s->p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)s->p[i + 1] << 8;
        if (i + 2 < n)
            v |= s->p[i + 2];
        out[j++] = tbl[(v >> 18) & 63];
        out[j++] = tbl[(v >> 12) & 63];
        out[j++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        out[j++] = i + 2 < n ? tbl[v & 63] : '=';
    }
    out[j] = '\0';
    return out;
}

/* A JSON string of s's text, or of the base64 of its bytes. -EINVAL when the text has a NUL
 * or is not valid UTF-8, -ENOMEM. */
static int text_item(const struct rd *s, bool base64, cJSON **out)
{
    char *t = base64 ? dup_base64(s) : dup_text(s);

    if (!t)
        return -EINVAL;
    *out = cJSON_CreateString(t);
    free(t);
    return *out ? 0 : -ENOMEM;
}

/* Adds a string (or base64 of bytes) to obj under key; replaces a previous one. */
static int add_text(cJSON *obj, const char *key, const struct rd *s, bool base64)
{
    cJSON *v;
    int rc = text_item(s, base64, &v);

    if (rc < 0)
        return rc;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, v);
    return 0;
}

static int decode_msg(struct rd *r, const struct pmsg *m, cJSON *obj, int depth);

/* intstr.IntOrString {1: type (1 = string), 2: intVal, 3: strVal} as 8080 or "http". */
static int decode_int_or_string(struct rd *r, cJSON *obj, const char *name, bool keep_zero)
{
    static const unsigned char none[1];
    struct rd m, s[3] = { [2] = { none, none } };
    uint64_t u[3] = { 0 }, type, ival;
    cJSON *v;
    char *t;

    if (rd_bytes(r, &m) < 0 || rd_fields(m, "vvb", u, s) < 0)
        return -EINVAL;
    type = u[0];
    ival = u[1];
    cJSON_DeleteItemFromObjectCaseSensitive(obj, name);
    if (type != 1 && ival == 0 && !keep_zero)
        return 0;   /* a Service port's unset targetPort: gogo encodes it as {0, 0} */
    if (type == 1) {
        if (!(t = dup_text(&s[2])))
            return -EINVAL;
        v = cJSON_CreateString(t);
        free(t);
    } else {
        v = cJSON_CreateNumber((double)(int32_t)(uint32_t)ival);
    }
    if (!v)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, name);
    cJSON_AddItemToObject(obj, name, v);
    return 0;
}

/* resource.Quantity {1: string} as its string; NULL on a malformed message. */
static char *quantity_text(struct rd m)
{
    static const unsigned char none[1];
    struct rd s[3] = { { none, none } };
    uint64_t u[3];

    if (rd_fields(m, "b", u, s) < 0)
        return NULL;
    return dup_text(&s[0]);
}

static int set_item(cJSON *obj, const char *key, cJSON *v)
{
    if (!v)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, v);
    return 0;
}

/* metav1.Time / MicroTime {1: seconds, 2: nanos} as the apiserver writes them in
 * JSON; the zero time is null there, so it is left out. */
static int decode_time(struct rd *r, cJSON *obj, const char *name, bool micro)
{
    struct rd m, s[3];
    uint64_t u[3] = { 0 }, secs, nanos;
    char buf[48];
    struct tm tm;
    time_t t;

    if (rd_bytes(r, &m) < 0 || rd_fields(m, "vv", u, s) < 0)
        return -EINVAL;
    secs = u[0];
    nanos = u[1];
    cJSON_DeleteItemFromObjectCaseSensitive(obj, name);
    if (secs == 0 && nanos == 0)
        return 0;
    t = (time_t)(int64_t)secs;
    if ((int64_t)secs < 0 || (int64_t)secs > 253402300799LL || nanos >= 1000000000u ||
        !gmtime_r(&t, &tm))
        return -EINVAL;
    if (micro)
        snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (unsigned)(nanos / 1000));
    else
        strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return set_item(obj, name, cJSON_CreateString(buf));
}

/* obj's member name, where the fields of an embedded message (an object) or the items of a
 * repeated field (array true) collect; added empty on the first. NULL when out of memory. */
static cJSON *member_or_add(cJSON *obj, const char *name, bool array)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (m)
        return m;
    return array ? cJSON_AddArrayToObject(obj, name) : cJSON_AddObjectToObject(obj, name);
}

/* A map entry {1: key, 2: value} into the object obj[f->name]: string, bytes
 * (base64), Quantity or message values. */
static int decode_map_entry(struct rd *r, cJSON *obj, const struct pfield *f, int depth)
{
    static const unsigned char none[1];
    struct rd e, s[3] = { { NULL, NULL }, { none, none } };   /* a missing value is "" */
    struct rd *key = &s[0], val;
    cJSON *map, *child;
    uint64_t u[3];
    char *k, *q;
    int rc;

    if (rd_bytes(r, &e) < 0 || rd_fields(e, "bb", u, s) < 0)
        return -EINVAL;
    val = s[1];
    if (!key->p || !(k = dup_text(key)))
        return -EINVAL;
    if (!(map = member_or_add(obj, f->name, false))) {
        free(k);
        return -ENOMEM;
    }
    switch (f->type) {
    case F_MAP_QUANTITY:
        if (!(q = quantity_text(val))) {
            rc = -EINVAL;
            break;
        }
        rc = set_item(map, k, cJSON_CreateString(q));
        free(q);
        break;
    case F_MAP_MSG:
        if ((rc = set_item(map, k, child = cJSON_CreateObject())) == 0)
            rc = decode_msg(&val, f->sub, child, depth + 1);
        break;
    default:
        rc = add_text(map, k, &val, f->type == F_MAP_BYTES);
    }
    free(k);
    return rc;
}

/* One element of a repeated varint field, packed (wire 2) or not (wire 0). */
static int decode_rep_int(struct rd *r, unsigned wire, cJSON *obj, const char *name)
{
    cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, name), *n;
    struct rd s;
    uint64_t v;

    if (!arr && !(arr = cJSON_AddArrayToObject(obj, name)))
        return -ENOMEM;
    if (wire == 0) {
        if (rd_varint(r, &v) < 0)
            return -EINVAL;
        s.p = s.end = NULL;
        goto one;
    }
    if (wire != 2 || rd_bytes(r, &s) < 0)
        return -EINVAL;
    while (s.p < s.end) {
        if (rd_varint(&s, &v) < 0)
            return -EINVAL;
one:
        if (!(n = cJSON_CreateNumber((double)(int64_t)v)))
            return -ENOMEM;
        cJSON_AddItemToArray(arr, n);
    }
    return 0;
}

static bool all_zero(struct rd m, int depth);
static int skip_unknown(struct rd *r, unsigned wire, bool strict);

static int decode_field(struct rd *r, unsigned wire, const struct pfield *f, cJSON *obj,
                        int depth)
{
    struct rd s;
    uint64_t v;
    cJSON *child, *arr;
    char *t;
    int rc;

    switch (f->type) {
    case F_BOOL:
    case F_INT64:
        if (wire != 0 || rd_varint(r, &v) < 0)
            return -EINVAL;
        cJSON_DeleteItemFromObjectCaseSensitive(obj, f->name);
        if (v == 0 && !f->keep_zero)
            return 0;
        child = f->type == F_BOOL ? cJSON_CreateBool(v != 0)
                                  : cJSON_CreateNumber((double)(int64_t)v);
        if (!child)
            return -ENOMEM;
        cJSON_AddItemToObject(obj, f->name, child);
        return 0;
    case F_STRING:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        if (s.p == s.end) {   /* omitempty */
            cJSON_DeleteItemFromObjectCaseSensitive(obj, f->name);
            return 0;
        }
        return add_text(obj, f->name, &s, false);
    case F_INT_OR_STRING:
        if (wire != 2)
            return -EINVAL;
        return decode_int_or_string(r, obj, f->name, f->keep_zero);
    case F_MAP_STR:
    case F_MAP_BYTES:
    case F_MAP_QUANTITY:
    case F_MAP_MSG:
        if (wire != 2)
            return -EINVAL;
        return decode_map_entry(r, obj, f, depth);
    case F_BYTES:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        if (s.p == s.end && !f->keep_zero) {
            cJSON_DeleteItemFromObjectCaseSensitive(obj, f->name);
            return 0;
        }
        return add_text(obj, f->name, &s, true);
    case F_QUANTITY:
        if (wire != 2 || rd_bytes(r, &s) < 0 || !(t = quantity_text(s)))
            return -EINVAL;
        child = *t ? cJSON_CreateString(t) : NULL;
        free(t);
        if (!child) {   /* the zero Quantity: "0" in Go's JSON, left out here unless kept */
            cJSON_DeleteItemFromObjectCaseSensitive(obj, f->name);
            return f->keep_zero ? set_item(obj, f->name, cJSON_CreateString("0")) : 0;
        }
        return set_item(obj, f->name, child);
    case F_TIME:
    case F_MICROTIME:
        if (wire != 2)
            return -EINVAL;
        return decode_time(r, obj, f->name, f->type == F_MICROTIME);
    case F_REP_INT64:
        return decode_rep_int(r, wire, obj, f->name);
    case F_SKIP:
        return rd_skip(r, wire);
    case F_SKIP_STRICT:
        return skip_unknown(r, wire, true);
    case F_INLINE:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        return decode_msg(&s, f->sub, obj, depth + 1);
    case F_MSG:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        if (!(child = member_or_add(obj, f->name, false)))
            return -ENOMEM;
        return decode_msg(&s, f->sub, child, depth + 1);
    case F_REP_STRING:
    case F_REP_MSG:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        if (!(arr = member_or_add(obj, f->name, true)))
            return -ENOMEM;
        if (f->type == F_REP_MSG) {
            if (!(child = cJSON_CreateObject()))
                return -ENOMEM;
            cJSON_AddItemToArray(arr, child);
            return decode_msg(&s, f->sub, child, depth + 1);
        }
        if ((rc = text_item(&s, false, &child)) < 0)
            return rc;
        cJSON_AddItemToArray(arr, child);
        return 0;
    }
    return -EINVAL;
}

/* True when a message holds only zero values: zero varints and payloads that are
 * empty or themselves all-zero messages (Go encodes `status: {loadBalancer: {}}`
 * that way). */
static bool all_zero(struct rd m, int depth)
{
    while (m.p < m.end) {
        uint64_t tag, v;
        struct rd sub;

        if (rd_varint(&m, &tag) < 0)
            return false;
        if ((tag & 7) == 0) {
            if (rd_varint(&m, &v) < 0 || v != 0)
                return false;
        } else if ((tag & 7) == 2) {
            if (rd_bytes(&m, &sub) < 0)
                return false;
            if (sub.p < sub.end && (depth >= PROTO_MAX_DEPTH || !all_zero(sub, depth + 1)))
                return false;
        } else {
            return false;
        }
    }
    return true;
}

/* Skips an unknown field; in a strict message only a zero one (see all_zero). */
static int skip_unknown(struct rd *r, unsigned wire, bool strict)
{
    uint64_t v;
    struct rd sub;

    if (!strict)
        return rd_skip(r, wire);
    if (wire == 0) {
        if (rd_varint(r, &v) < 0)
            return -EINVAL;
        return v == 0 ? 0 : -EPROTONOSUPPORT;
    }
    if (wire == 2) {
        if (rd_bytes(r, &sub) < 0)
            return -EINVAL;
        return all_zero(sub, 0) ? 0 : -EPROTONOSUPPORT;
    }
    return rd_skip(r, wire) < 0 ? -EINVAL : -EPROTONOSUPPORT;
}

static int decode_msg(struct rd *r, const struct pmsg *m, cJSON *obj, int depth)
{
    if (depth > PROTO_MAX_DEPTH)
        return -EINVAL;
    while (r->p < r->end) {
        uint64_t tag;
        const struct pfield *f = NULL;
        int rc;

        if (rd_varint(r, &tag) < 0 || (tag >> 3) == 0)
            return -EINVAL;
        for (size_t i = 0; i < m->n; i++)
            if (m->fields[i].num == (tag >> 3))
                f = &m->fields[i];
        rc = f ? decode_field(r, (unsigned)(tag & 7), f, obj, depth)
               : skip_unknown(r, (unsigned)(tag & 7), m->strict);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int api__proto_decode(const char *body, size_t len, cJSON **out, char *err, size_t errlen)
{
    struct rd r = { (const unsigned char *)body, (const unsigned char *)body + len };
    struct rd tm = { NULL, NULL }, raw = { NULL, NULL }, s;
    char api_version[64] = "", kind[64] = "";
    cJSON *obj = NULL;
    int rc;

    *out = NULL;
    if (len < 4 || memcmp(body, "k8s\0", 4) != 0) {
        snprintf(err, errlen, "protobuf body without the k8s envelope");
        return -EINVAL;
    }
    r.p += 4;
    while (r.p < r.end) {
        uint64_t tag;
        if (rd_varint(&r, &tag) < 0)
            goto bad;
        if ((tag >> 3) == 1 && (tag & 7) == 2)
            rc = rd_bytes(&r, &tm);
        else if ((tag >> 3) == 2 && (tag & 7) == 2)
            rc = rd_bytes(&r, &raw);
        else
            rc = rd_skip(&r, (unsigned)(tag & 7));
        if (rc < 0)
            goto bad;
    }
    while (tm.p && tm.p < tm.end) {
        uint64_t tag;
        char *dst;
        if (rd_varint(&tm, &tag) < 0)
            goto bad;
        dst = (tag >> 3) == 1 ? api_version : (tag >> 3) == 2 ? kind : NULL;
        if (dst && (tag & 7) == 2) {
            if (rd_bytes(&tm, &s) < 0 || (size_t)(s.end - s.p) >= sizeof(kind))
                goto bad;
            memcpy(dst, s.p, (size_t)(s.end - s.p));
            dst[s.end - s.p] = '\0';
        } else if (rd_skip(&tm, (unsigned)(tag & 7)) < 0) {
            goto bad;
        }
    }
    for (size_t i = 0; i < proto_kinds_n; i++) {
        if (strcmp(kind, proto_kinds[i].kind) != 0 ||
            strcmp(api_version, proto_kinds[i].api_version) != 0)
            continue;
        if (!raw.p || !(obj = cJSON_CreateObject()))
            goto bad;
        cJSON_AddStringToObject(obj, "apiVersion", api_version);
        cJSON_AddStringToObject(obj, "kind", kind);
        rc = decode_msg(&raw, proto_kinds[i].msg, obj, 0);
        if (rc < 0) {
            cJSON_Delete(obj);
            if (rc == -ENOMEM)
                return rc;
            if (rc == -EPROTONOSUPPORT) {
                snprintf(err, errlen, "this %s uses fields kubesim does not decode from "
                         "protobuf; send it as JSON", kind);
                return rc;
            }
            goto bad;
        }
        *out = obj;
        return 0;
    }
    snprintf(err, errlen, "kubesim decodes protobuf only for the core, batch, rbac, networking, "
             "coordination, events and policy kinds it serves, not %.40s %.40s; send JSON",
             api_version, kind);
    return -EPROTONOSUPPORT;
bad:
    snprintf(err, errlen, "malformed protobuf body");
    return -EINVAL;
}

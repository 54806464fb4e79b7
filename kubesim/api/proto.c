/*
 * server_proto.c - decodes the Kubernetes protobuf envelope for the few simple
 * kinds that stock clients send as protobuf to kubesim: kubectl 1.32+ typed
 * generators (`kubectl create configmap|secret|namespace|serviceaccount|job`,
 * `kubectl run`, `kubectl create service`) encode
 * their bodies as application/vnd.kubernetes.protobuf. kubesim otherwise speaks
 * JSON only; other kinds get a 415 naming the supported ones.
 *
 * Wire format: "k8s\0" + runtime.Unknown {1: TypeMeta {1: apiVersion, 2: kind},
 * 2: raw (the object message)}. The object messages are described by small
 * tables with the field numbers of k8s.io/api core/v1 and apimachinery meta/v1
 * generated.proto; unknown fields are skipped, as protobuf readers do.
 *
 * Bounded and total: every length is checked against the remaining input,
 * nesting is limited, and any input gives an object or an error.
 */
#include "kubesim/api/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROTO_MAX_DEPTH 8

enum ftype { F_STRING, F_BOOL, F_INT64, F_MSG, F_MAP_STR, F_MAP_BYTES, F_REP_STRING, F_REP_MSG,
             F_INT_OR_STRING };

struct pmsg;
struct pfield {
    unsigned num;
    const char *name;
    enum ftype type;
    const struct pmsg *sub;
    /* Go pointer fields (*bool, *int64): a zero value was set on purpose and is
     * kept. Other scalars are omitempty in JSON, so their zero values (which gogo
     * protobuf always encodes) are dropped, as the apiserver's JSON would. */
    bool keep_zero;
};
struct pmsg {
    const struct pfield *fields;
    size_t n;
    /* Strict messages refuse (415) a non-empty field they do not know instead of
     * skipping it: a Pod field silently dropped would be worse than an error. */
    bool strict;
};

#define MSG(arr) { arr, sizeof(arr) / sizeof(arr[0]), false }
#define STRICT_MSG(arr) { arr, sizeof(arr) / sizeof(arr[0]), true }

static const struct pfield owner_ref_f[] = {
    { 5, "apiVersion", F_STRING, NULL }, { 1, "kind", F_STRING, NULL },
    { 3, "name", F_STRING, NULL }, { 4, "uid", F_STRING, NULL },
    { 6, "controller", F_BOOL, NULL, true }, { 7, "blockOwnerDeletion", F_BOOL, NULL, true },
};
static const struct pmsg owner_ref = MSG(owner_ref_f);

/* Timestamps, managedFields and deletion fields are server-set: skipped. */
static const struct pfield object_meta_f[] = {
    { 1, "name", F_STRING, NULL }, { 2, "generateName", F_STRING, NULL },
    { 3, "namespace", F_STRING, NULL }, { 5, "uid", F_STRING, NULL },
    { 6, "resourceVersion", F_STRING, NULL }, { 7, "generation", F_INT64, NULL },
    { 11, "labels", F_MAP_STR, NULL }, { 12, "annotations", F_MAP_STR, NULL },
    { 13, "ownerReferences", F_REP_MSG, &owner_ref }, { 14, "finalizers", F_REP_STRING, NULL },
};
static const struct pmsg object_meta = MSG(object_meta_f);

static const struct pfield configmap_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "data", F_MAP_STR, NULL },
    { 3, "binaryData", F_MAP_BYTES, NULL }, { 4, "immutable", F_BOOL, NULL, true },
};
static const struct pfield secret_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "data", F_MAP_BYTES, NULL },
    { 3, "type", F_STRING, NULL }, { 4, "stringData", F_MAP_STR, NULL },
    { 5, "immutable", F_BOOL, NULL, true },
};
static const struct pfield ns_spec_f[] = { { 1, "finalizers", F_REP_STRING, NULL } };
static const struct pmsg ns_spec = MSG(ns_spec_f);
static const struct pfield namespace_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "spec", F_MSG, &ns_spec },
};
static const struct pfield local_ref_f[] = { { 1, "name", F_STRING, NULL } };
static const struct pmsg local_ref = MSG(local_ref_f);
static const struct pfield object_ref_f[] = {
    { 1, "kind", F_STRING, NULL }, { 2, "namespace", F_STRING, NULL },
    { 3, "name", F_STRING, NULL }, { 4, "uid", F_STRING, NULL },
    { 5, "apiVersion", F_STRING, NULL }, { 6, "resourceVersion", F_STRING, NULL },
    { 7, "fieldPath", F_STRING, NULL },
};
static const struct pmsg object_ref = MSG(object_ref_f);
static const struct pfield service_account_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "secrets", F_REP_MSG, &object_ref },
    { 3, "imagePullSecrets", F_REP_MSG, &local_ref },
    { 4, "automountServiceAccountToken", F_BOOL, NULL, true },
};

/* Pods as `kubectl run` builds them: containers with command/args/env/ports and the
 * common PodSpec scalars. Probes, volumes, resources with values, affinity... are
 * refused (strict) rather than dropped. */
static const struct pfield env_var_f[] = {
    { 1, "name", F_STRING, NULL }, { 2, "value", F_STRING, NULL },
};
static const struct pmsg env_var = STRICT_MSG(env_var_f);
static const struct pfield container_port_f[] = {
    { 1, "name", F_STRING, NULL }, { 2, "hostPort", F_INT64, NULL },
    { 3, "containerPort", F_INT64, NULL }, { 4, "protocol", F_STRING, NULL },
    { 5, "hostIP", F_STRING, NULL },
};
static const struct pmsg container_port = STRICT_MSG(container_port_f);
static const struct pfield container_f[] = {
    { 1, "name", F_STRING, NULL }, { 2, "image", F_STRING, NULL },
    { 3, "command", F_REP_STRING, NULL }, { 4, "args", F_REP_STRING, NULL },
    { 5, "workingDir", F_STRING, NULL }, { 6, "ports", F_REP_MSG, &container_port },
    { 7, "env", F_REP_MSG, &env_var }, { 13, "terminationMessagePath", F_STRING, NULL },
    { 14, "imagePullPolicy", F_STRING, NULL }, { 16, "stdin", F_BOOL, NULL },
    { 17, "stdinOnce", F_BOOL, NULL }, { 18, "tty", F_BOOL, NULL },
    { 20, "terminationMessagePolicy", F_STRING, NULL },
};
static const struct pmsg container = STRICT_MSG(container_f);
static const struct pfield pod_spec_f[] = {
    { 2, "containers", F_REP_MSG, &container }, { 20, "initContainers", F_REP_MSG, &container },
    { 3, "restartPolicy", F_STRING, NULL }, { 4, "terminationGracePeriodSeconds", F_INT64, NULL, true },
    { 5, "activeDeadlineSeconds", F_INT64, NULL, true }, { 6, "dnsPolicy", F_STRING, NULL },
    { 7, "nodeSelector", F_MAP_STR, NULL }, { 8, "serviceAccountName", F_STRING, NULL },
    { 9, "serviceAccount", F_STRING, NULL }, { 10, "nodeName", F_STRING, NULL },
    { 11, "hostNetwork", F_BOOL, NULL }, { 15, "imagePullSecrets", F_REP_MSG, &local_ref },
    { 16, "hostname", F_STRING, NULL }, { 17, "subdomain", F_STRING, NULL },
    { 19, "schedulerName", F_STRING, NULL }, { 21, "automountServiceAccountToken", F_BOOL, NULL, true },
    { 24, "priorityClassName", F_STRING, NULL }, { 30, "enableServiceLinks", F_BOOL, NULL, true },
};
static const struct pmsg pod_spec = STRICT_MSG(pod_spec_f);
static const struct pfield pod_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "spec", F_MSG, &pod_spec },
};

/* Services as `kubectl create service` / `kubectl expose` build them. */
static const struct pfield service_port_f[] = {
    { 1, "name", F_STRING, NULL }, { 2, "protocol", F_STRING, NULL },
    { 3, "port", F_INT64, NULL }, { 4, "targetPort", F_INT_OR_STRING, NULL },
    { 5, "nodePort", F_INT64, NULL }, { 6, "appProtocol", F_STRING, NULL },
};
static const struct pmsg service_port = STRICT_MSG(service_port_f);
static const struct pfield service_spec_f[] = {
    { 1, "ports", F_REP_MSG, &service_port }, { 2, "selector", F_MAP_STR, NULL },
    { 3, "clusterIP", F_STRING, NULL }, { 4, "type", F_STRING, NULL },
    { 5, "externalIPs", F_REP_STRING, NULL }, { 7, "sessionAffinity", F_STRING, NULL },
    { 10, "externalName", F_STRING, NULL }, { 11, "externalTrafficPolicy", F_STRING, NULL },
    { 13, "publishNotReadyAddresses", F_BOOL, NULL }, { 17, "ipFamilyPolicy", F_STRING, NULL },
    { 18, "clusterIPs", F_REP_STRING, NULL }, { 19, "ipFamilies", F_REP_STRING, NULL },
    { 22, "internalTrafficPolicy", F_STRING, NULL },
};
static const struct pmsg service_spec = STRICT_MSG(service_spec_f);
static const struct pfield service_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "spec", F_MSG, &service_spec },
};

/* batch/v1 Jobs as `kubectl create job` builds them (batch/v1 generated.proto). */
static const struct pfield pod_template_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "spec", F_MSG, &pod_spec },
};
static const struct pmsg pod_template = STRICT_MSG(pod_template_f);
static const struct pfield job_spec_f[] = {
    { 1, "parallelism", F_INT64, NULL, true }, { 2, "completions", F_INT64, NULL, true },
    { 3, "activeDeadlineSeconds", F_INT64, NULL, true },
    { 5, "manualSelector", F_BOOL, NULL, true }, { 6, "template", F_MSG, &pod_template },
    { 7, "backoffLimit", F_INT64, NULL, true }, { 8, "ttlSecondsAfterFinished", F_INT64, NULL, true },
    { 9, "completionMode", F_STRING, NULL }, { 10, "suspend", F_BOOL, NULL, true },
};
static const struct pmsg job_spec = STRICT_MSG(job_spec_f);
static const struct pfield job_f[] = {
    { 1, "metadata", F_MSG, &object_meta }, { 2, "spec", F_MSG, &job_spec },
};

static const struct {
    const char *api_version, *kind;
    struct pmsg msg;
} kinds[] = {
    { "v1", "ConfigMap", MSG(configmap_f) },
    { "v1", "Secret", MSG(secret_f) },
    { "v1", "Namespace", MSG(namespace_f) },
    { "v1", "ServiceAccount", MSG(service_account_f) },
    { "v1", "Pod", STRICT_MSG(pod_f) },   /* status (field 3) is accepted only empty */
    { "v1", "Service", STRICT_MSG(service_f) },
    { "batch/v1", "Job", STRICT_MSG(job_f) },   /* status likewise */
};

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

static int rd_skip(struct rd *r, unsigned wire)
{
    uint64_t v;
    struct rd sub;

    switch (wire) {
    case 0: return rd_varint(r, &v);
    case 1:
        if (r->end - r->p < 8)
            return -EINVAL;
        r->p += 8;
        return 0;
    case 2: return rd_bytes(r, &sub);
    case 5:
        if (r->end - r->p < 4)
            return -EINVAL;
        r->p += 4;
        return 0;
    default: return -EINVAL;   /* groups (3, 4) are not used by Kubernetes */
    }
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

/* Adds a string (or base64 of bytes) to obj under key; replaces a previous one. */
static int add_text(cJSON *obj, const char *key, const struct rd *s, bool base64)
{
    char *t = base64 ? dup_base64(s) : dup_text(s);
    cJSON *v;

    if (!t)
        return -EINVAL;
    v = cJSON_CreateString(t);
    free(t);
    if (!v)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddItemToObject(obj, key, v);
    return 0;
}

static int decode_msg(struct rd *r, const struct pmsg *m, cJSON *obj, int depth);

/* intstr.IntOrString {1: type (1 = string), 2: intVal, 3: strVal} as 8080 or "http". */
static int decode_int_or_string(struct rd *r, cJSON *obj, const char *name)
{
    static const unsigned char none[1];
    struct rd m, str = { none, none };
    uint64_t type = 0, ival = 0;
    cJSON *v;
    char *t;

    if (rd_bytes(r, &m) < 0)
        return -EINVAL;
    while (m.p < m.end) {
        uint64_t tag;
        int rc;
        if (rd_varint(&m, &tag) < 0)
            return -EINVAL;
        if ((tag >> 3) == 1 && (tag & 7) == 0)
            rc = rd_varint(&m, &type);
        else if ((tag >> 3) == 2 && (tag & 7) == 0)
            rc = rd_varint(&m, &ival);
        else if ((tag >> 3) == 3 && (tag & 7) == 2)
            rc = rd_bytes(&m, &str);
        else
            rc = rd_skip(&m, (unsigned)(tag & 7));
        if (rc < 0)
            return -EINVAL;
    }
    if (type == 1) {
        if (!(t = dup_text(&str)))
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

/* A map entry {1: key, 2: value} into the object obj[name]. */
static int decode_map_entry(struct rd *r, cJSON *obj, const char *name, bool bytes_value)
{
    static const unsigned char none[1];
    struct rd e, key = { NULL, NULL }, val = { none, none };   /* a missing value is "" */
    cJSON *map = cJSON_GetObjectItemCaseSensitive(obj, name);
    char *k;
    int rc;

    if (rd_bytes(r, &e) < 0)
        return -EINVAL;
    while (e.p < e.end) {
        uint64_t tag;
        if (rd_varint(&e, &tag) < 0)
            return -EINVAL;
        if ((tag >> 3) == 1 && (tag & 7) == 2)
            rc = rd_bytes(&e, &key);
        else if ((tag >> 3) == 2 && (tag & 7) == 2)
            rc = rd_bytes(&e, &val);
        else
            rc = rd_skip(&e, (unsigned)(tag & 7));
        if (rc < 0)
            return rc;
    }
    if (!key.p || !(k = dup_text(&key)))
        return -EINVAL;
    if (!map && !(map = cJSON_AddObjectToObject(obj, name))) {
        free(k);
        return -ENOMEM;
    }
    rc = add_text(map, k, &val, bytes_value);
    free(k);
    return rc;
}

static int decode_field(struct rd *r, unsigned wire, const struct pfield *f, cJSON *obj,
                        int depth)
{
    struct rd s;
    uint64_t v;
    cJSON *child, *arr;
    char *t;

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
        return decode_int_or_string(r, obj, f->name);
    case F_MAP_STR:
    case F_MAP_BYTES:
        if (wire != 2)
            return -EINVAL;
        return decode_map_entry(r, obj, f->name, f->type == F_MAP_BYTES);
    case F_MSG:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        child = cJSON_GetObjectItemCaseSensitive(obj, f->name);
        if (!child && !(child = cJSON_AddObjectToObject(obj, f->name)))
            return -ENOMEM;
        return decode_msg(&s, f->sub, child, depth + 1);
    case F_REP_STRING:
    case F_REP_MSG:
        if (wire != 2 || rd_bytes(r, &s) < 0)
            return -EINVAL;
        arr = cJSON_GetObjectItemCaseSensitive(obj, f->name);
        if (!arr && !(arr = cJSON_AddArrayToObject(obj, f->name)))
            return -ENOMEM;
        if (f->type == F_REP_MSG) {
            if (!(child = cJSON_CreateObject()))
                return -ENOMEM;
            cJSON_AddItemToArray(arr, child);
            return decode_msg(&s, f->sub, child, depth + 1);
        }
        if (!(t = dup_text(&s)))
            return -EINVAL;
        child = cJSON_CreateString(t);
        free(t);
        if (!child)
            return -ENOMEM;
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

int server_proto_decode(const char *body, size_t len, cJSON **out, char *err, size_t errlen)
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
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (strcmp(kind, kinds[i].kind) != 0 || strcmp(api_version, kinds[i].api_version) != 0)
            continue;
        if (!raw.p || !(obj = cJSON_CreateObject()))
            goto bad;
        cJSON_AddStringToObject(obj, "apiVersion", api_version);
        cJSON_AddStringToObject(obj, "kind", kind);
        rc = decode_msg(&raw, &kinds[i].msg, obj, 0);
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
    snprintf(err, errlen, "kubesim decodes protobuf only for v1 ConfigMap, Secret, Namespace, "
             "ServiceAccount, Pod, Service and batch/v1 Job, not %.40s %.40s; send JSON",
             api_version, kind);
    return -EPROTONOSUPPORT;
bad:
    snprintf(err, errlen, "malformed protobuf body");
    return -EINVAL;
}

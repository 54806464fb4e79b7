/* test_server_proto.c - the protobuf body decoder (kubesim/api/proto.c) for the
 * kinds kubectl 1.32+ generators send as protobuf: messages are built here with
 * a tiny encoder following the field numbers of generated.proto, decoded, and
 * compared; malformed and unsupported inputs must give errors, never crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/api/internal.h"

/* ---- a minimal encoder ------------------------------------------------------------ */

static void put_varint(struct buf *b, uint64_t v)
{
    unsigned char c;
    do {
        c = v & 0x7f;
        v >>= 7;
        if (v)
            c |= 0x80;
        buf_append(b, &c, 1);
    } while (v);
}

static void put_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
    put_varint(b, (uint64_t)field << 3 | 2);
    put_varint(b, n);
    buf_append(b, p, n);
}

static void put_str(struct buf *b, unsigned field, const char *s)
{
    put_bytes(b, field, s, strlen(s));
}

static void put_msg(struct buf *b, unsigned field, const struct buf *m)
{
    put_bytes(b, field, m->data ? m->data : "", m->len);
}

static void put_map_entry(struct buf *b, unsigned field, const char *k, const void *v, size_t vn)
{
    struct buf e = { 0 };
    put_str(&e, 1, k);
    put_bytes(&e, 2, v, vn);
    put_msg(b, field, &e);
    buf_free(&e);
}

static void put_bool(struct buf *b, unsigned field, bool v)
{
    put_varint(b, (uint64_t)field << 3);
    put_varint(b, v);
}

/* "k8s\0" + Unknown{typeMeta{apiVersion, kind}, raw} */
static void envelope(struct buf *out, const char *api_version, const char *kind,
                     const struct buf *raw)
{
    struct buf tm = { 0 };
    buf_append(out, "k8s\0", 4);
    put_str(&tm, 1, api_version);
    put_str(&tm, 2, kind);
    put_msg(out, 1, &tm);
    put_msg(out, 2, raw);
    put_str(out, 4, "application/vnd.kubernetes.protobuf");
    buf_free(&tm);
}

static void meta(struct buf *m, const char *name, const char *ns)
{
    put_str(m, 1, name);
    if (ns)
        put_str(m, 3, ns);
    put_map_entry(m, 11, "app", "web", 3);
    put_map_entry(m, 12, "note", "a \"quoted\" value", 16);
    put_str(m, 14, "example.com/fin");
    /* creationTimestamp (field 8) is server-set: skipped */
    struct buf t = { 0 };
    put_varint(&t, 1 << 3);
    put_varint(&t, 1700000000);
    put_msg(m, 8, &t);
    buf_free(&t);
}

static cJSON *decode(const struct buf *b, int *rc)
{
    cJSON *o = NULL;
    char err[256];
    *rc = api__proto_decode(b->data, b->len, &o, err, sizeof(err));
    return o;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    o = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        o = cJSON_GetObjectItemCaseSensitive(o, b);
    return cJSON_GetStringValue(o);
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_configmap(void **state)
{
    struct buf m = { 0 }, cm = { 0 }, body = { 0 };
    const unsigned char bin[] = { 0x00, 0xff, 0x10 };
    cJSON *o, *md;
    int rc;
    (void)state;

    meta(&m, "gen-cm", "default");
    put_msg(&cm, 1, &m);
    put_map_entry(&cm, 2, "greeting", "hi", 2);
    put_map_entry(&cm, 2, "empty", "", 0);
    put_map_entry(&cm, 3, "blob", bin, sizeof(bin));
    put_bool(&cm, 4, true);
    envelope(&body, "v1", "ConfigMap", &cm);

    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(o, "apiVersion", NULL), "v1");
    assert_string_equal(str_at(o, "kind", NULL), "ConfigMap");
    md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
    assert_string_equal(str_at(md, "name", NULL), "gen-cm");
    assert_string_equal(str_at(md, "namespace", NULL), "default");
    assert_string_equal(str_at(md, "labels", "app"), "web");
    assert_string_equal(str_at(md, "annotations", "note"), "a \"quoted\" value");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(md, "finalizers"), 0)), "example.com/fin");
    assert_null(cJSON_GetObjectItemCaseSensitive(md, "creationTimestamp"));
    assert_string_equal(str_at(o, "data", "greeting"), "hi");
    assert_string_equal(str_at(o, "data", "empty"), "");
    assert_string_equal(str_at(o, "binaryData", "blob"), "AP8Q");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "immutable")));
    cJSON_Delete(o);

    /* a field k8s.io/api does not have is refused (415), not silently dropped */
    buf_reset(&body);
    put_str(&cm, 99, "unknown");
    envelope(&body, "v1", "ConfigMap", &cm);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EPROTONOSUPPORT);
    assert_null(o);
    buf_free(&m);
    buf_free(&cm);
    buf_free(&body);
}

static void test_secret_namespace_serviceaccount(void **state)
{
    struct buf m = { 0 }, x = { 0 }, body = { 0 }, spec = { 0 }, ref = { 0 };
    cJSON *o;
    int rc;
    (void)state;

    meta(&m, "s1", NULL);
    put_msg(&x, 1, &m);
    put_map_entry(&x, 2, "pw", "secret", 6);
    put_str(&x, 3, "Opaque");
    envelope(&body, "v1", "Secret", &x);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(o, "data", "pw"), "c2VjcmV0");
    assert_string_equal(str_at(o, "type", NULL), "Opaque");
    cJSON_Delete(o);

    buf_reset(&x);
    buf_reset(&body);
    put_msg(&x, 1, &m);
    put_str(&spec, 1, "kubernetes");
    put_msg(&x, 2, &spec);
    envelope(&body, "v1", "Namespace", &x);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(o, "kind", NULL), "Namespace");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"),
                                         "finalizers"), 0)), "kubernetes");
    cJSON_Delete(o);

    buf_reset(&x);
    buf_reset(&body);
    put_msg(&x, 1, &m);
    put_str(&ref, 1, "regcred");
    put_msg(&x, 3, &ref);
    put_bool(&x, 4, false);
    envelope(&body, "v1", "ServiceAccount", &x);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        o, "imagePullSecrets"), 0), "name", NULL), "regcred");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "automountServiceAccountToken")));
    cJSON_Delete(o);
    buf_free(&m);
    buf_free(&x);
    buf_free(&body);
    buf_free(&spec);
    buf_free(&ref);
}

/* A Pod as `kubectl run web --image=nginx --port=80 --env=A=1 -- sh` builds it. */
static void pod_body(struct buf *body, bool with_probe)
{
    struct buf m = { 0 }, c = { 0 }, port = { 0 }, env = { 0 }, spec = { 0 }, pod = { 0 },
               empty = { 0 }, probe = { 0 };

    put_str(&m, 1, "web");
    put_map_entry(&m, 11, "run", "web", 3);
    put_str(&c, 1, "web");
    put_str(&c, 2, "nginx");
    put_str(&c, 4, "sh");
    put_varint(&port, 3 << 3);
    put_varint(&port, 80);
    put_msg(&c, 6, &port);
    put_str(&env, 1, "A");
    put_str(&env, 2, "1");
    put_msg(&c, 7, &env);
    put_msg(&c, 8, &empty);                 /* resources: {} is accepted */
    if (with_probe) {
        put_str(&probe, 1, "x");
        put_msg(&c, 99, &probe);            /* a Container field k8s.io/api does not have */
    }
    put_msg(&spec, 2, &c);
    put_str(&spec, 3, "Always");
    put_str(&spec, 6, "ClusterFirst");
    put_msg(&pod, 1, &m);
    put_msg(&pod, 2, &spec);
    put_msg(&pod, 3, &empty);               /* status: {} */
    envelope(body, "v1", "Pod", &pod);
    buf_free(&m);
    buf_free(&c);
    buf_free(&port);
    buf_free(&env);
    buf_free(&spec);
    buf_free(&pod);
    buf_free(&probe);
}

static void test_pod(void **state)
{
    struct buf body = { 0 };
    cJSON *o, *c;
    int rc;
    (void)state;

    pod_body(&body, false);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "spec"), "containers"), 0);
    assert_string_equal(str_at(c, "image", NULL), "nginx");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(c, "args"), 0)), "sh");
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "ports"), 0), "containerPort")), 80);
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "env"), 0),
                               "value", NULL), "1");
    assert_string_equal(str_at(o, "spec", "restartPolicy"), "Always");
    assert_string_equal(str_at(o, "metadata", "name"), "web");
    cJSON_Delete(o);

    /* a field the decoder does not know is refused, not dropped */
    buf_reset(&body);
    pod_body(&body, true);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EPROTONOSUPPORT);
    assert_null(o);
    buf_free(&body);
}

/* kubectl create service clusterip s --tcp=80:8080 --tcp=443:https, with the zero
 * values gogo protobuf always encodes and an all-zero status {loadBalancer: {}}. */
static void test_service_int_or_string_and_zero_values(void **state)
{
    struct buf m = { 0 }, p1 = { 0 }, p2 = { 0 }, ios = { 0 }, spec = { 0 }, svc = { 0 },
               status = { 0 }, lb = { 0 }, body = { 0 };
    cJSON *o, *ports;
    int rc;
    (void)state;

    put_str(&m, 1, "s");
    put_str(&p1, 1, "80-8080");
    put_varint(&p1, 3 << 3);
    put_varint(&p1, 80);
    put_varint(&ios, 1 << 3);               /* type 0: int */
    put_varint(&ios, 0);
    put_varint(&ios, 2 << 3);
    put_varint(&ios, 8080);
    put_msg(&p1, 4, &ios);
    put_varint(&p1, 5 << 3);                /* nodePort 0: dropped */
    put_varint(&p1, 0);
    buf_reset(&ios);
    put_varint(&ios, 1 << 3);               /* type 1: string */
    put_varint(&ios, 1);
    put_str(&ios, 3, "https");
    put_varint(&p2, 3 << 3);
    put_varint(&p2, 443);
    put_msg(&p2, 4, &ios);
    put_msg(&spec, 1, &p1);
    put_msg(&spec, 1, &p2);
    buf_reset(&p2);                         /* no targetPort: gogo sends {type 0, intVal 0} */
    buf_reset(&ios);
    put_varint(&ios, 1 << 3);
    put_varint(&ios, 0);
    put_varint(&ios, 2 << 3);
    put_varint(&ios, 0);
    put_str(&p2, 1, "client");
    put_varint(&p2, 3 << 3);
    put_varint(&p2, 10001);
    put_msg(&p2, 4, &ios);
    put_msg(&spec, 1, &p2);
    put_str(&spec, 4, "ClusterIP");
    put_str(&spec, 10, "");                 /* externalName "": dropped */
    put_bool(&spec, 13, false);             /* publishNotReadyAddresses false: dropped */
    put_msg(&svc, 1, &m);
    put_msg(&svc, 2, &spec);
    put_msg(&status, 1, &lb);
    put_msg(&svc, 3, &status);
    envelope(&body, "v1", "Service", &svc);

    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    ports = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"), "ports");
    assert_int_equal(cJSON_GetArraySize(ports), 3);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ports, 2), "targetPort"));
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(ports, 0), "targetPort")), 8080);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ports, 0), "nodePort"));
    assert_string_equal(str_at(cJSON_GetArrayItem(ports, 1), "targetPort", NULL), "https");
    assert_string_equal(str_at(o, "spec", "type"), "ClusterIP");
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"),
                                                 "externalName"));
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"),
                                                 "publishNotReadyAddresses"));
    cJSON_Delete(o);
    buf_free(&m);
    buf_free(&p1);
    buf_free(&p2);
    buf_free(&ios);
    buf_free(&spec);
    buf_free(&svc);
    buf_free(&status);
    buf_free(&lb);
    buf_free(&body);
}

/* A Job as `kubectl create job hello --image=busybox -- echo hi` builds it (plus the
 * scalars a Job manifest can carry): zero values in pointer fields are kept, the
 * all-zero status kubectl sends is accepted. */
static void test_job(void **state)
{
    struct buf m = { 0 }, c = { 0 }, pspec = { 0 }, tmpl = { 0 }, tm = { 0 }, spec = { 0 },
               st = { 0 }, job = { 0 }, body = { 0 }, empty = { 0 };
    const cJSON *s, *ps;
    cJSON *o;
    int rc;
    (void)state;

    put_str(&m, 1, "hello");
    put_str(&c, 1, "hello");
    put_str(&c, 2, "busybox");
    put_str(&c, 3, "echo");
    put_str(&c, 3, "hi");
    put_msg(&c, 8, &empty);
    put_msg(&pspec, 2, &c);
    put_str(&pspec, 3, "Never");
    put_msg(&tm, 1, &empty);
    put_msg(&tmpl, 1, &tm);
    put_msg(&tmpl, 2, &pspec);
    put_varint(&spec, 2 << 3);          /* completions 3 */
    put_varint(&spec, 3);
    put_varint(&spec, 7 << 3);          /* backoffLimit 0: set on purpose, kept */
    put_varint(&spec, 0);
    put_msg(&spec, 6, &tmpl);
    put_str(&spec, 9, "Indexed");
    put_bool(&spec, 10, true);
    put_varint(&st, 4 << 3);            /* status {active: 0, uncountedTerminatedPods: {}} */
    put_varint(&st, 0);
    put_msg(&st, 8, &empty);
    put_msg(&job, 1, &m);
    put_msg(&job, 2, &spec);
    put_msg(&job, 3, &st);
    envelope(&body, "batch/v1", "Job", &job);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(o, "apiVersion", NULL), "batch/v1");
    assert_string_equal(str_at(o, "kind", NULL), "Job");
    assert_string_equal(str_at(o, "metadata", "name"), "hello");
    s = cJSON_GetObjectItemCaseSensitive(o, "spec");
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "completions")), 3);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(s, "backoffLimit"));
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "backoffLimit")), 0);
    assert_string_equal(str_at(s, "completionMode", NULL), "Indexed");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "suspend")));
    assert_null(cJSON_GetObjectItemCaseSensitive(s, "parallelism"));
    ps = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "template"), "spec");
    assert_string_equal(str_at(ps, "restartPolicy", NULL), "Never");
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ps, "containers"), 0),
                               "image", NULL), "busybox");
    cJSON_Delete(o);

    /* a JobSpec field the tables do not know (99) is refused, not dropped */
    buf_reset(&body);
    buf_reset(&job);
    put_str(&st, 1, "x");
    put_msg(&spec, 99, &st);
    put_msg(&job, 1, &m);
    put_msg(&job, 2, &spec);
    envelope(&body, "batch/v1", "Job", &job);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EPROTONOSUPPORT);
    assert_null(o);
    /* Job under another group/version is not ours either */
    buf_reset(&body);
    envelope(&body, "v1", "Job", &job);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EPROTONOSUPPORT);
    buf_free(&m);
    buf_free(&c);
    buf_free(&pspec);
    buf_free(&tmpl);
    buf_free(&tm);
    buf_free(&spec);
    buf_free(&st);
    buf_free(&job);
    buf_free(&body);
}

/* A head Pod as controller-runtime sends it for KubeRay: an exec probe (ProbeHandler
 * is inline in JSON), resource Quantities, an emptyDir with a sizeLimit, an int32
 * list, a MicroTime-free metadata with the server-set creationTimestamp skipped. */
static void test_kuberay_pod(void **state)
{
    struct buf m = { 0 }, c = { 0 }, spec = { 0 }, pod = { 0 }, body = { 0 }, probe = { 0 },
               handler = { 0 }, exec = { 0 }, res = { 0 }, q = { 0 }, vol = { 0 }, vsrc = { 0 },
               ed = { 0 }, sc = { 0 };
    const cJSON *ct, *ps, *v;
    cJSON *o;
    int rc;
    (void)state;

    meta(&m, "head", "ns");
    put_str(&exec, 1, "bash");
    put_str(&exec, 1, "-c");
    put_msg(&handler, 1, &exec);               /* ProbeHandler.exec */
    put_msg(&probe, 1, &handler);              /* Probe.handler (inline) */
    put_varint(&probe, 2 << 3);                /* initialDelaySeconds 30 */
    put_varint(&probe, 30);
    put_varint(&probe, 6 << 3);                /* failureThreshold 120 */
    put_varint(&probe, 120);
    put_str(&q, 1, "500m");
    put_map_entry(&res, 1, "cpu", q.data, q.len);   /* limits: {cpu: 500m} */
    put_str(&c, 1, "ray-head");
    put_str(&c, 2, "rayproject/ray:2.52.0");
    put_msg(&c, 8, &res);
    put_msg(&c, 10, &probe);                   /* livenessProbe */
    put_str(&q, 1, "");                        /* sizeLimit "": replaced by a real value */
    buf_reset(&q);
    put_str(&q, 1, "1Gi");
    put_msg(&ed, 2, &q);
    put_str(&ed, 1, "Memory");
    put_msg(&vsrc, 2, &ed);                    /* VolumeSource.emptyDir */
    put_str(&vol, 1, "shared-mem");
    put_msg(&vol, 2, &vsrc);                   /* Volume.volumeSource (inline) */
    put_varint(&sc, 4 << 3);                   /* PodSecurityContext.supplementalGroups */
    put_varint(&sc, 1000);
    put_varint(&sc, 4 << 3);
    put_varint(&sc, 2000);
    put_msg(&spec, 1, &vol);
    put_msg(&spec, 2, &c);
    put_msg(&spec, 14, &sc);
    put_msg(&pod, 1, &m);
    put_msg(&pod, 2, &spec);
    envelope(&body, "v1", "Pod", &pod);

    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                                 "creationTimestamp"));
    ps = cJSON_GetObjectItemCaseSensitive(o, "spec");
    ct = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ps, "containers"), 0);
    v = cJSON_GetObjectItemCaseSensitive(ct, "livenessProbe");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(v, "exec"), "command"), 1)), "-c");
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "failureThreshold")), 120);
    assert_string_equal(str_at(cJSON_GetObjectItemCaseSensitive(ct, "resources"), "limits", "cpu"),
                        "500m");
    v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ps, "volumes"), 0);
    assert_string_equal(str_at(v, "name", NULL), "shared-mem");
    assert_string_equal(str_at(v, "emptyDir", "sizeLimit"), "1Gi");
    assert_string_equal(str_at(v, "emptyDir", "medium"), "Memory");
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ps, "securityContext"),
                                         "supplementalGroups");
    assert_int_equal(cJSON_GetArraySize(v), 2);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetArrayItem(v, 1)), 2000);
    cJSON_Delete(o);
    buf_free(&m); buf_free(&c); buf_free(&spec); buf_free(&pod); buf_free(&body);
    buf_free(&probe); buf_free(&handler); buf_free(&exec); buf_free(&res); buf_free(&q);
    buf_free(&vol); buf_free(&vsrc); buf_free(&ed); buf_free(&sc);
}

/* rbac/v1 Role and RoleBinding as KubeRay's autoscaler RBAC, and a Lease's MicroTime. */
static void test_rbac_and_lease(void **state)
{
    struct buf m = { 0 }, rule = { 0 }, x = { 0 }, body = { 0 }, subj = { 0 }, ref = { 0 },
               spec = { 0 }, t = { 0 };
    cJSON *o;
    int rc;
    (void)state;

    put_str(&m, 1, "rc");
    put_str(&rule, 1, "get");
    put_str(&rule, 1, "list");
    put_str(&rule, 2, "");
    put_str(&rule, 3, "pods");
    put_msg(&x, 1, &m);
    put_msg(&x, 2, &rule);
    envelope(&body, "rbac.authorization.k8s.io/v1", "Role", &x);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "rules"), 0), "verbs"), 1)), "list");
    cJSON_Delete(o);

    buf_reset(&x);
    buf_reset(&body);
    put_str(&subj, 1, "ServiceAccount");
    put_str(&subj, 3, "rc");
    put_str(&subj, 4, "ns");
    put_str(&ref, 1, "rbac.authorization.k8s.io");
    put_str(&ref, 2, "Role");
    put_str(&ref, 3, "rc");
    put_msg(&x, 1, &m);
    put_msg(&x, 2, &subj);
    put_msg(&x, 3, &ref);
    envelope(&body, "rbac.authorization.k8s.io/v1", "RoleBinding", &x);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(o, "roleRef", "kind"), "Role");
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "subjects"), 0),
                               "namespace", NULL), "ns");
    cJSON_Delete(o);

    buf_reset(&x);
    buf_reset(&body);
    put_varint(&t, 1 << 3);
    put_varint(&t, 1700000000);
    put_varint(&t, 2 << 3);
    put_varint(&t, 123456789);
    put_str(&spec, 1, "me");
    put_msg(&spec, 3, &t);                     /* acquireTime */
    put_msg(&x, 1, &m);
    put_msg(&x, 2, &spec);
    envelope(&body, "coordination.k8s.io/v1", "Lease", &x);
    o = decode(&body, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(str_at(o, "spec", "acquireTime"), "2023-11-14T22:13:20.123456Z");
    cJSON_Delete(o);
    buf_free(&m); buf_free(&rule); buf_free(&x); buf_free(&body); buf_free(&subj);
    buf_free(&ref); buf_free(&spec); buf_free(&t);
}

static void test_unsupported_kind(void **state)
{
    struct buf raw = { 0 }, body = { 0 };
    cJSON *o;
    int rc;
    (void)state;
    put_str(&raw, 1, "x");
    envelope(&body, "apps/v1", "Deployment", &raw);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EPROTONOSUPPORT);
    assert_null(o);
    buf_free(&raw);
    buf_free(&body);
}

static void test_malformed(void **state)
{
    struct buf m = { 0 }, cm = { 0 }, body = { 0 }, bad = { 0 };
    cJSON *o;
    int rc;
    (void)state;

    /* no envelope, empty, truncated */
    o = decode(&(struct buf){ .data = "{\"a\":1}", .len = 7 }, &rc);
    assert_int_equal(rc, -EINVAL);
    o = decode(&(struct buf){ .data = "", .len = 0 }, &rc);
    assert_int_equal(rc, -EINVAL);

    meta(&m, "x", NULL);
    put_msg(&cm, 1, &m);
    envelope(&body, "v1", "ConfigMap", &cm);
    /* every strict prefix of a valid body is either an error or a (partial) object */
    for (size_t n = 0; n < body.len; n++) {
        o = decode(&(struct buf){ .data = body.data, .len = n }, &rc);
        assert_true(rc == 0 || rc == -EINVAL || rc == -EPROTONOSUPPORT);
        assert_true((rc == 0) == (o != NULL));
        cJSON_Delete(o);
    }

    /* a length running past the end, an 11-byte varint, a group wire type, a NUL in a string */
    buf_append(&bad, "k8s\0", 4);
    put_varint(&bad, 2 << 3 | 2);
    put_varint(&bad, 1000);
    o = decode(&bad, &rc);
    assert_int_equal(rc, -EINVAL);
    buf_reset(&bad);
    buf_append(&bad, "k8s\0", 4);
    buf_append(&bad, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    o = decode(&bad, &rc);
    assert_int_equal(rc, -EINVAL);
    buf_reset(&bad);
    buf_append(&bad, "k8s\0", 4);
    put_varint(&bad, 5 << 3 | 3);
    o = decode(&bad, &rc);
    assert_int_equal(rc, -EINVAL);

    buf_reset(&cm);
    buf_reset(&body);
    buf_reset(&m);
    put_bytes(&m, 1, "a\0b", 3);
    put_msg(&cm, 1, &m);
    envelope(&body, "v1", "ConfigMap", &cm);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EINVAL);
    assert_null(o);

    /* a wrong wire type for a known field is an error */
    buf_reset(&cm);
    buf_reset(&body);
    put_varint(&cm, 4 << 3 | 2);   /* immutable as bytes */
    put_varint(&cm, 0);
    envelope(&body, "v1", "ConfigMap", &cm);
    o = decode(&body, &rc);
    assert_int_equal(rc, -EINVAL);
    buf_free(&m);
    buf_free(&cm);
    buf_free(&body);
    buf_free(&bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configmap),
        cmocka_unit_test(test_secret_namespace_serviceaccount),
        cmocka_unit_test(test_pod),
        cmocka_unit_test(test_job),
        cmocka_unit_test(test_service_int_or_string_and_zero_values),
        cmocka_unit_test(test_kuberay_pod),
        cmocka_unit_test(test_rbac_and_lease),
        cmocka_unit_test(test_unsupported_kind),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * defaults.c - the defaults the real API server (SetDefaults_* of
 * k8s.io/kubernetes pkg/apis/.../v1 plus admission plugins such as
 * DefaultTolerationSeconds and ServiceAccount) adds to built-in objects, limited
 * to what operators and clients read back: Pod, Service (with ClusterIP
 * allocation from 10.96.0.0/12), Job, Namespace, Secret, core Event and CRD.
 * Called with the store's write lock held, before validation.
 */
#include "kobj/json_equal.h"
#include "kubesim/store/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define jget cJSON_GetObjectItemCaseSensitive

static bool is(const struct reg_resource *r, const char *group, const char *plural)
{
    return !strcmp(r->group, group) && !strcmp(r->plural, plural);
}

static cJSON *obj_child(cJSON *o, const char *k)
{
    cJSON *c = jget(o, k);

    if (!cJSON_IsObject(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
        c = cJSON_AddObjectToObject(o, k);
    }
    return c;
}

/* Adds k: v unless o has member k at all (Go's "_, found := m[k]"). */
static void add_absent(cJSON *o, const char *k, const char *v)
{
    if (!jget(o, k))
        cJSON_AddStringToObject(o, k, v);
}

static void def_str(cJSON *o, const char *k, const char *v)
{
    const cJSON *c = jget(o, k);

    if (!c || cJSON_IsNull(c) || (cJSON_IsString(c) && !c->valuestring[0])) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
        cJSON_AddStringToObject(o, k, v);
    }
}

static void def_num(cJSON *o, const char *k, double v)
{
    const cJSON *c = jget(o, k);

    if (!c || cJSON_IsNull(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
        cJSON_AddNumberToObject(o, k, v);
    }
}

static void def_bool(cJSON *o, const char *k, bool v)
{
    const cJSON *c = jget(o, k);

    if (!c || cJSON_IsNull(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
        cJSON_AddBoolToObject(o, k, v);
    }
}

/* ---- Pod ---- */

static const char *pull_policy(const char *image)
{
    const char *slash = image ? strrchr(image, '/') : NULL;
    const char *last = slash ? slash + 1 : image;
    const char *colon;

    if (!image || strchr(image, '@'))
        return "IfNotPresent";
    colon = strchr(last, ':');
    if (!colon || !strcmp(colon + 1, "latest"))
        return "Always";
    return "IfNotPresent";
}

static void container_defaults(cJSON *c)
{
    cJSON *res, *ports, *p;

    if (!cJSON_IsObject(c))
        return;
    def_str(c, "terminationMessagePath", "/dev/termination-log");
    def_str(c, "terminationMessagePolicy", "File");
    def_str(c, "imagePullPolicy", pull_policy(cJSON_GetStringValue(jget(c, "image"))));
    res = obj_child(c, "resources");
    /* requests default to limits (SetDefaults_ResourceList via defaultRequests) */
    if (cJSON_IsObject(jget(res, "limits"))) {
        cJSON *req = obj_child(res, "requests");
        cJSON *l;
        cJSON_ArrayForEach(l, jget(res, "limits"))
            if (!jget(req, l->string))
                cJSON_AddItemToObject(req, l->string, cJSON_Duplicate(l, true));
    }
    ports = jget(c, "ports");
    cJSON_ArrayForEach(p, ports)
        if (cJSON_IsObject(p))
            def_str(p, "protocol", "TCP");
}

static void pod_spec_defaults(cJSON *spec, bool admission)
{
    cJSON *c;

    if (!cJSON_IsObject(spec))
        return;
    def_str(spec, "restartPolicy", "Always");
    def_str(spec, "dnsPolicy", "ClusterFirst");
    def_str(spec, "schedulerName", "default-scheduler");
    def_num(spec, "terminationGracePeriodSeconds", 30);
    obj_child(spec, "securityContext");
    cJSON_ArrayForEach(c, jget(spec, "containers"))
        container_defaults(c);
    cJSON_ArrayForEach(c, jget(spec, "initContainers"))
        container_defaults(c);
    if (!admission)
        return;
    /* admission: ServiceAccount, Priority, DefaultTolerationSeconds */
    def_str(spec, "serviceAccountName", cJSON_GetStringValue(jget(spec, "serviceAccount")) ?
            cJSON_GetStringValue(jget(spec, "serviceAccount")) : "default");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "serviceAccount");
    cJSON_AddStringToObject(spec, "serviceAccount",
                            cJSON_GetStringValue(jget(spec, "serviceAccountName")));
    def_bool(spec, "enableServiceLinks", true);
    def_num(spec, "priority", 0);
    def_str(spec, "preemptionPolicy", "PreemptLowerPriority");
    {
        static const char *const keys[] = { "node.kubernetes.io/not-ready",
                                            "node.kubernetes.io/unreachable" };
        cJSON *tol = jget(spec, "tolerations");
        if (!cJSON_IsArray(tol)) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "tolerations");
            tol = cJSON_AddArrayToObject(spec, "tolerations");
        }
        for (size_t i = 0; i < 2; i++) {
            bool have = false;
            cJSON *t;
            cJSON_ArrayForEach(t, tol) {
                const char *k = cJSON_GetStringValue(jget(t, "key"));
                const char *e = cJSON_GetStringValue(jget(t, "effect"));
                have |= k && !strcmp(k, keys[i]) && (!e || !strcmp(e, "NoExecute"));
            }
            if (have)
                continue;
            t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "key", keys[i]);
            cJSON_AddStringToObject(t, "operator", "Exists");
            cJSON_AddStringToObject(t, "effect", "NoExecute");
            cJSON_AddNumberToObject(t, "tolerationSeconds", 300);
            cJSON_AddItemToArray(tol, t);
        }
    }
}

/* BestEffort: nothing requested; Guaranteed: cpu and memory limits == requests
 * everywhere; otherwise Burstable. */
static const char *qos_class(const cJSON *spec)
{
    bool any = false, guaranteed = true;
    const cJSON *c;

    cJSON_ArrayForEach(c, jget(spec, "containers")) {
        const cJSON *res = jget(c, "resources");
        const cJSON *lim = jget(res, "limits"), *req = jget(res, "requests");
        if (cJSON_GetArraySize(lim) || cJSON_GetArraySize(req))
            any = true;
        for (int i = 0; i < 2; i++) {
            const char *k = i ? "memory" : "cpu";
            const cJSON *l = jget(lim, k), *r = jget(req, k);
            if (!l || (r && !json_equal(l, r)))
                guaranteed = false;
        }
    }
    if (!any)
        return "BestEffort";
    return guaranteed ? "Guaranteed" : "Burstable";
}

static void pod_defaults(cJSON *obj, const cJSON *old)
{
    cJSON *spec = obj_child(obj, "spec");

    pod_spec_defaults(spec, true);
    if (!old) {
        cJSON *st = obj_child(obj, "status");
        def_str(st, "phase", "Pending");
        def_str(st, "qosClass", qos_class(spec));
    }
}

/* ---- Service ---- */

static bool ip_in_use(struct store *s, const char *ip)
{
    const struct reg_resource *r = store__find_builtin(s, "", "services");
    struct stype *t = r ? store__type_get(s, r, false) : NULL;
    struct sentry *e, *tmp;

    if (!t)
        return false;
    HASH_ITER(hh, t->objs, e, tmp) {
        const char *v = cJSON_GetStringValue(jget(jget(store_obj_json(e->obj), "spec"), "clusterIP"));
        if (v && !strcmp(v, ip))
            return true;
    }
    return false;
}

/* Next free address of 10.96.0.0/12 (10.96.0.2 - 10.111.255.254: the first is the
 * `kubernetes` Service's, which Pods run by kubesim/runtime reach the API server at). */
static int alloc_cluster_ip(struct store *s, char out[INET_ADDRSTRLEN])
{
    const uint32_t base = (10u << 24) | (96u << 16), size = 1u << 20;

    for (uint32_t tries = 0; tries < size - 3; tries++) {
        uint32_t off = s->svc_next_ip;
        struct in_addr a;
        s->svc_next_ip = off + 1 >= size - 1 ? 2 : off + 1;
        a.s_addr = htonl(base + off);
        inet_ntop(AF_INET, &a, out, INET_ADDRSTRLEN);
        if (!ip_in_use(s, out))
            return 0;
    }
    return -ENOSPC;
}

static int service_defaults(struct store *s, cJSON *obj, const cJSON *old)
{
    cJSON *spec = obj_child(obj, "spec"), *p;
    const char *type, *ip;
    const cJSON *ospec = jget(old, "spec");

    def_str(spec, "type", "ClusterIP");
    type = cJSON_GetStringValue(jget(spec, "type"));
    def_str(spec, "sessionAffinity", "None");
    cJSON_ArrayForEach(p, jget(spec, "ports")) {
        if (!cJSON_IsObject(p))
            continue;
        def_str(p, "protocol", "TCP");
        if (!jget(p, "targetPort") && jget(p, "port"))
            cJSON_AddItemToObject(p, "targetPort", cJSON_Duplicate(jget(p, "port"), true));
    }
    if (type && !strcmp(type, "ExternalName"))
        return 0;
    ip = cJSON_GetStringValue(jget(spec, "clusterIP"));
    if ((!ip || !ip[0]) && old && cJSON_GetStringValue(jget(ospec, "clusterIP"))) {
        /* patchAllocatedValues: an update that leaves it out keeps the allocation */
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "clusterIP");
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "clusterIPs");
        cJSON_AddItemToObject(spec, "clusterIP", cJSON_Duplicate(jget(ospec, "clusterIP"),
                                                                 true));
        if (jget(ospec, "clusterIPs"))
            cJSON_AddItemToObject(spec, "clusterIPs",
                                  cJSON_Duplicate(jget(ospec, "clusterIPs"), true));
        ip = cJSON_GetStringValue(jget(spec, "clusterIP"));
    }
    if (!ip || !ip[0]) {
        char a[INET_ADDRSTRLEN];
        int rc = alloc_cluster_ip(s, a);
        if (rc)
            return rc;
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "clusterIP");
        cJSON_AddStringToObject(spec, "clusterIP", a);
        ip = cJSON_GetStringValue(jget(spec, "clusterIP"));
    }
    if (!cJSON_IsArray(jget(spec, "clusterIPs"))) {
        cJSON *ips = cJSON_CreateArray();
        cJSON_AddItemToArray(ips, cJSON_CreateString(ip));
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "clusterIPs");
        cJSON_AddItemToObject(spec, "clusterIPs", ips);
    }
    if (!jget(spec, "ipFamilies")) {
        cJSON *f = cJSON_AddArrayToObject(spec, "ipFamilies");
        cJSON_AddItemToArray(f, cJSON_CreateString("IPv4"));
    }
    def_str(spec, "ipFamilyPolicy", "SingleStack");
    def_str(spec, "internalTrafficPolicy", "Cluster");
    if (!old)
        obj_child(obj_child(obj, "status"), "loadBalancer");
    return 0;
}

/* ---- Job ---- */

static void job_defaults(cJSON *obj, const cJSON *old)
{
    cJSON *spec = obj_child(obj, "spec");
    cJSON *tmpl = obj_child(spec, "template");
    cJSON *labels;
    const char *uid = kobj_meta_str(obj, "uid");
    const char *name = kobj_meta_str(obj, "name");

    if (!jget(spec, "parallelism") && !jget(spec, "completions"))
        def_num(spec, "completions", 1);
    def_num(spec, "parallelism", 1);
    def_num(spec, "backoffLimit", 6);
    def_str(spec, "completionMode", "NonIndexed");
    def_bool(spec, "suspend", false);
    if (!jget(spec, "podFailurePolicy"))
        def_str(spec, "podReplacementPolicy", "TerminatingOrFailed");
    if (!old && !cJSON_IsTrue(jget(spec, "manualSelector")) && uid && name) {
        /* generateSelector: the generated labels and the selector's controller-uid
         * term go where the user set none; a value the user did set stays, and
         * validation refuses it if it conflicts (builtin_validate.c) */
        cJSON *ml = obj_child(obj_child(spec, "selector"), "matchLabels");
        labels = obj_child(obj_child(tmpl, "metadata"), "labels");
        add_absent(labels, "batch.kubernetes.io/controller-uid", uid);
        add_absent(labels, "batch.kubernetes.io/job-name", name);
        add_absent(labels, "controller-uid", uid);
        add_absent(labels, "job-name", name);
        add_absent(ml, "batch.kubernetes.io/controller-uid", uid);
    }
    /* SetDefaults_Job: a Job without labels takes its template's (the real server's
     * read-path defaulting sees the generated ones too, so they show on the Job) */
    {
        const cJSON *tl = jget(jget(tmpl, "metadata"), "labels");
        cJSON *md = store__meta(obj), *jl = jget(md, "labels");
        if (cJSON_IsObject(tl) && tl->child && (!cJSON_IsObject(jl) || !jl->child)) {
            cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
            cJSON_AddItemToObject(md, "labels", cJSON_Duplicate(tl, true));
        }
    }
    pod_spec_defaults(jget(tmpl, "spec"), false);
    if (!old)
        obj_child(obj, "status");
}

/* SetDefaults_NetworkPolicy / _NetworkPolicyPort: policyTypes from the rules given, TCP
 * for a port without a protocol; podSelector is a value field, always serialised. */
static void netpol_defaults(cJSON *obj)
{
    cJSON *spec = obj_child(obj, "spec"), *rule, *port;
    static const char *const dirs[] = { "ingress", "egress" };
    obj_child(spec, "podSelector");
    if (cJSON_GetArraySize(jget(spec, "policyTypes")) == 0) {
        cJSON *pt = cJSON_CreateArray();
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "policyTypes");
        cJSON_AddItemToArray(pt, cJSON_CreateString("Ingress"));
        if (cJSON_GetArraySize(jget(spec, "egress")) > 0)
            cJSON_AddItemToArray(pt, cJSON_CreateString("Egress"));
        cJSON_AddItemToObject(spec, "policyTypes", pt);
    }
    for (size_t d = 0; d < 2; d++)
        cJSON_ArrayForEach(rule, (cJSON_IsArray(jget(spec, dirs[d])) ? jget(spec, dirs[d]) : NULL))
            cJSON_ArrayForEach(port, (cJSON_IsArray(jget(rule, "ports")) ? jget(rule, "ports")
                                                                          : NULL))
                if (cJSON_IsObject(port))
                    def_str(port, "protocol", "TCP");
}

int store__builtin_default(struct store *s, const struct reg_resource *res, cJSON *obj,
                           const cJSON *old)
{
    if (is(res, "", "pods"))
        pod_defaults(obj, old);
    else if (is(res, "", "services"))
        return service_defaults(s, obj, old);
    else if (is(res, "batch", "jobs"))
        job_defaults(obj, old);
    else if (is(res, "", "namespaces")) {
        cJSON *spec = obj_child(obj, "spec");
        cJSON *labels = obj_child(store__meta(obj), "labels");
        const char *name = kobj_meta_str(obj, "name");
        if (!jget(spec, "finalizers") && !old) {
            cJSON *f = cJSON_AddArrayToObject(spec, "finalizers");
            cJSON_AddItemToArray(f, cJSON_CreateString("kubernetes"));
        }
        if (!old)
            def_str(obj_child(obj, "status"), "phase", "Active");
        if (name) {
            cJSON_DeleteItemFromObjectCaseSensitive(labels, "kubernetes.io/metadata.name");
            cJSON_AddStringToObject(labels, "kubernetes.io/metadata.name", name);
        }
    } else if (is(res, "networking.k8s.io", "networkpolicies")) {
        netpol_defaults(obj);
    } else if (is(res, "", "secrets")) {
        def_str(obj, "type", "Opaque");
    } else if (is(res, "", "events")) {
        cJSON *io = jget(obj, "involvedObject");
        def_str(obj, "reportingComponent", "");
        def_str(obj, "reportingInstance", "");
        if (cJSON_IsObject(io) && !jget(io, "namespace") && kobj_meta_str(obj, "namespace"))
            cJSON_AddStringToObject(io, "namespace", kobj_meta_str(obj, "namespace"));
    } else if (is(res, "apiextensions.k8s.io", "customresourcedefinitions")) {
        cJSON *spec = obj_child(obj, "spec");
        def_str(obj_child(spec, "conversion"), "strategy", "None");
    }
    return 0;
}

/*
 * builtin_validate.c - the store's 422 validation of built-in objects, as far as operators
 * and clients meet it: object names (DNS-1123 subdomain, DNS-1035 label for
 * Services, DNS-1123 label for Namespaces), Pod containers and restart policy,
 * Pod spec immutability on update, Service ports/type and clusterIP
 * immutability; for Jobs the pod template as ValidatePodTemplateSpec checks it
 * (labels, annotations, containers, Never/OnFailure restart policy, no ephemeral
 * containers), the selector matching the template, selector/template immutability;
 * for NetworkPolicies the policyTypes, the rules' ports (protocol, range, endPort) and
 * peers (one kind each, an ipBlock's cidr).
 * Causes carry the field paths and messages of the validation packages of
 * k8s.io/kubernetes pkg/apis.
 */
#include "kobj/json_equal.h"
#include "kobj/json_text.h"
#include "kubesim/schema/selector.h"
#include "kubesim/store/internal.h"

#include <stdio.h>
#include <string.h>

#define jget cJSON_GetObjectItemCaseSensitive

static bool is(const struct reg_resource *r, const char *group, const char *plural)
{
    return !strcmp(r->group, group) && !strcmp(r->plural, plural);
}

static void check_containers(const cJSON *list, const char *base, bool required,
                             cJSON *causes)
{
    const cJSON *c;
    int i = 0;

    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
        if (required)
            status_cause_add(causes, "FieldValueRequired", base, "Required value");
        return;
    }
    cJSON_ArrayForEach(c, list) {
        char f[160];
        const char *name = cJSON_GetStringValue(jget(c, "name"));
        const char *image = cJSON_GetStringValue(jget(c, "image"));
        if (!name || !name[0]) {
            snprintf(f, sizeof(f), "%s[%d].name", base, i);
            status_cause_add(causes, "FieldValueRequired", f, "Required value");
        } else {
            const cJSON *d;
            int j = 0;
            snprintf(f, sizeof(f), "%s[%d].name", base, i);
            schema_check_name(name, NAME_LABEL_1123, f, causes);
            cJSON_ArrayForEach(d, list) {
                const char *n2 = cJSON_GetStringValue(jget(d, "name"));
                if (j++ >= i)
                    break;
                if (n2 && !strcmp(n2, name)) {
                    status_cause_add(causes, "FieldValueDuplicate", f, "Duplicate value: \"%s\"",
                                     name);
                    break;
                }
            }
        }
        if (!image || !image[0]) {
            snprintf(f, sizeof(f), "%s[%d].image", base, i);
            status_cause_add(causes, "FieldValueRequired", f, "Required value");
        }
        i++;
    }
}

static void check_pod_spec(const cJSON *spec, const char *base, bool job, cJSON *causes)
{
    char f[160];
    const char *rp = cJSON_GetStringValue(jget(spec, "restartPolicy"));

    snprintf(f, sizeof(f), "%s.containers", base);
    check_containers(jget(spec, "containers"), f, true, causes);
    snprintf(f, sizeof(f), "%s.initContainers", base);
    check_containers(jget(spec, "initContainers"), f, false, causes);
    snprintf(f, sizeof(f), "%s.restartPolicy", base);
    if (job) {
        if (!rp || (strcmp(rp, "Never") && strcmp(rp, "OnFailure")))
            status_cause_add(causes, "FieldValueNotSupported", f,
                             "Unsupported value: \"%s\": supported values: \"OnFailure\", "
                             "\"Never\"", rp ? rp : "");
    } else if (rp && strcmp(rp, "Always") && strcmp(rp, "OnFailure") && strcmp(rp, "Never")) {
        status_cause_add(causes, "FieldValueNotSupported", f, "Unsupported value: \"%s\": "
                         "supported values: \"Always\", \"OnFailure\", \"Never\"", rp);
    }
}

/* Overwrites the fields a pod update may change with their old values. */
static void neutralise_mutable(cJSON *spec, const cJSON *ospec)
{
    static const char *const lists[] = { "containers", "initContainers" };

    for (size_t l = 0; l < 2; l++) {
        cJSON *c = jget(spec, lists[l]) ? jget(spec, lists[l])->child : NULL;
        const cJSON *oc = jget(ospec, lists[l]) ? jget(ospec, lists[l])->child : NULL;
        for (; c && oc; c = c->next, oc = oc->next) {
            cJSON_DeleteItemFromObjectCaseSensitive(c, "image");
            if (jget(oc, "image"))
                cJSON_AddItemToObject(c, "image", cJSON_Duplicate(jget(oc, "image"), true));
        }
    }
    for (const char *const *k = (const char *const[]){ "activeDeadlineSeconds",
            "tolerations", "terminationGracePeriodSeconds", NULL }; *k; k++) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, *k);
        if (jget(ospec, *k))
            cJSON_AddItemToObject(spec, *k, cJSON_Duplicate(jget(ospec, *k), true));
    }
    /* scheduling (kubesim's scheduler writes nodeName directly instead of a Binding) */
    if (!cJSON_GetStringValue(jget(ospec, "nodeName")) ||
        !cJSON_GetStringValue(jget(ospec, "nodeName"))[0]) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "nodeName");
        if (jget(ospec, "nodeName"))
            cJSON_AddItemToObject(spec, "nodeName",
                                  cJSON_Duplicate(jget(ospec, "nodeName"), true));
    }
}

static bool tolerations_only_added(const cJSON *now, const cJSON *before)
{
    const cJSON *t;

    cJSON_ArrayForEach(t, before) {
        const cJSON *u;
        bool found = false;
        cJSON_ArrayForEach(u, now)
            found |= json_equal(t, u);
        if (!found)
            return false;
    }
    return true;
}

static void check_pod_update(const cJSON *obj, const cJSON *old, cJSON *causes)
{
    const cJSON *spec = jget(obj, "spec"), *ospec = jget(old, "spec");
    const cJSON *tg = jget(spec, "terminationGracePeriodSeconds");
    const cJSON *otg = jget(ospec, "terminationGracePeriodSeconds");
    cJSON *a;
    bool ok;

    /* most updates (every status write) leave spec alone: nothing to copy and compare */
    if (json_equal(spec, ospec))
        return;
    if (!(a = cJSON_Duplicate(spec, true)))
        return;
    neutralise_mutable(a, ospec);
    ok = json_equal(a, ospec) &&
         tolerations_only_added(jget(spec, "tolerations"), jget(ospec, "tolerations"));
    if (tg && otg && !json_equal(tg, otg) &&
        !(cJSON_GetNumberValue(otg) < 0 && cJSON_GetNumberValue(tg) == 1))
        ok = false;
    cJSON_Delete(a);
    if (!ok)
        status_cause_add(causes, "FieldValueForbidden", "spec",
                         "Forbidden: pod updates may not change fields other than "
                         "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                         "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                         "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it "
                         "to be set to 1 if it was previously negative)");
}

static void check_service(const cJSON *obj, const cJSON *old, cJSON *causes)
{
    const cJSON *spec = jget(obj, "spec"), *p;
    const char *type = cJSON_GetStringValue(jget(spec, "type"));
    const char *ip = cJSON_GetStringValue(jget(spec, "clusterIP"));
    int i = 0;

    if (type && strcmp(type, "ClusterIP") && strcmp(type, "NodePort") &&
        strcmp(type, "LoadBalancer") && strcmp(type, "ExternalName"))
        status_cause_add(causes, "FieldValueNotSupported", "spec.type",
                         "Unsupported value: \"%s\": supported values: \"ClusterIP\", "
                         "\"ExternalName\", \"LoadBalancer\", \"NodePort\"", type);
    if ((!type || strcmp(type, "ExternalName")) && !(ip && !strcmp(ip, "None")) &&
        cJSON_GetArraySize(jget(spec, "ports")) == 0)
        status_cause_add(causes, "FieldValueRequired", "spec.ports", "Required value");
    cJSON_ArrayForEach(p, jget(spec, "ports")) {
        char f[64];
        double port = cJSON_GetNumberValue(jget(p, "port"));
        snprintf(f, sizeof(f), "spec.ports[%d].port", i);
        if (!cJSON_IsNumber(jget(p, "port")) || port < 1 || port > 65535)
            status_cause_add(causes, "FieldValueInvalid", f, "Invalid value: %g: must be between 1 "
                             "and 65535, inclusive", cJSON_IsNumber(jget(p, "port")) ? port : 0.0);
        i++;
    }
    if (old) {
        const char *oip = cJSON_GetStringValue(jget(jget(old, "spec"), "clusterIP"));
        if (oip && oip[0] && ip && strcmp(ip, oip))
            status_cause_add(causes, "FieldValueInvalid", "spec.clusterIPs[0]", "Invalid value: "
                             "[]string{\"%s\"}: may not change once set", ip);
    }
}

/* ValidatePodTemplateSpec: the template's labels and annotations (under the
 * template path itself, "spec.template.labels", as the real validation names
 * them), its pod spec, and no ephemeral containers. */
static void check_pod_template(const cJSON *tmpl, const char *base, bool job, cJSON *causes)
{
    const cJSON *md = jget(tmpl, "metadata");
    const cJSON *eph = jget(jget(tmpl, "spec"), "ephemeralContainers");
    char f[160];

    snprintf(f, sizeof(f), "%s.labels", base);
    schema_check_labels(jget(md, "labels"), f, causes);
    snprintf(f, sizeof(f), "%s.annotations", base);
    schema_check_annotations(jget(md, "annotations"), f, causes);
    snprintf(f, sizeof(f), "%s.spec", base);
    check_pod_spec(jget(tmpl, "spec"), f, job, causes);
    if (cJSON_GetArraySize(eph) > 0) {
        snprintf(f, sizeof(f), "%s.spec.ephemeralContainers", base);
        status_cause_add(causes, "FieldValueForbidden", f,
                         "Forbidden: ephemeral containers not allowed in pod template");
    }
}

/* Go's %#v of a map[string]string (keys sorted), as field.Invalid prints it. */
static void go_map_literal(const cJSON *labels, struct buf *b)
{
    const char *keys[256];
    size_t n = json_text_sorted_keys(labels, keys, sizeof(keys) / sizeof(keys[0]));

    if (!cJSON_IsObject(labels)) {
        buf_puts(b, "map[string]string(nil)");
        return;
    }
    buf_puts(b, "map[string]string{");
    for (size_t i = 0; i < n; i++) {
        buf_puts(b, i ? ", " : "");
        buf_append_json_string(b, keys[i]);
        buf_puts(b, ":");
        buf_append_json_string(b, cJSON_GetStringValue(jget(labels, keys[i])));
    }
    buf_puts(b, "}");
}

static const char *str_or_empty(const cJSON *v)
{
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Go's %#v of a *metav1.LabelSelector, as field.Invalid prints it (pointer dereferenced). */
static void go_label_selector(const cJSON *ls, struct buf *b)
{
    const cJSON *exprs = jget(ls, "matchExpressions"), *e, *v;

    buf_puts(b, "v1.LabelSelector{MatchLabels:");
    go_map_literal(jget(ls, "matchLabels"), b);
    buf_puts(b, ", MatchExpressions:");
    if (cJSON_GetArraySize(exprs) == 0) {
        buf_puts(b, "[]v1.LabelSelectorRequirement(nil)}");
        return;
    }
    buf_puts(b, "[]v1.LabelSelectorRequirement{");
    cJSON_ArrayForEach(e, exprs) {
        const cJSON *vals = jget(e, "values");
        buf_puts(b, e == exprs->child ? "v1.LabelSelectorRequirement{Key:"
                                      : ", v1.LabelSelectorRequirement{Key:");
        buf_append_json_string(b, str_or_empty(jget(e, "key")));
        buf_puts(b, ", Operator:");
        buf_append_json_string(b, str_or_empty(jget(e, "operator")));
        if (cJSON_GetArraySize(vals) == 0) {
            buf_puts(b, ", Values:[]string(nil)}");
            continue;
        }
        buf_puts(b, ", Values:[]string{");
        cJSON_ArrayForEach(v, vals) {
            buf_puts(b, v == vals->child ? "" : ", ");
            buf_append_json_string(b, str_or_empty(v));
        }
        buf_puts(b, "}}");
    }
    buf_puts(b, "}}");
}

/* apivalidation.ValidateHasLabel on the template, as validateGeneratedSelector uses it. */
static void check_has_label(const cJSON *labels, const char *key, const char *want,
                            cJSON *causes)
{
    const cJSON *v = cJSON_IsObject(labels) ? jget(labels, key) : NULL;
    struct buf b = { 0 };
    char f[160];

    snprintf(f, sizeof(f), "spec.template.metadata.labels[%s]", key);
    if (!v) {
        status_cause_add(causes, "FieldValueRequired", f, "Required value: must be '%s'", want);
        return;
    }
    if (cJSON_IsString(v) && !strcmp(v->valuestring, want))
        return;
    go_map_literal(labels, &b);
    status_cause_add(causes, "FieldValueInvalid", f, "Invalid value: %.700s: must be '%s'",
                     b.data ? b.data : "", want);
    buf_free(&b);
}

/* validateGeneratedSelector (RequirePrefixedLabels): without manualSelector the
 * template must carry the four generated labels with the Job's uid and name, and
 * the selector must select exactly such Pods. defaults.c adds them where
 * the user set none, so only a conflicting user value (or selector) fails here. */
static void check_generated_selector(const cJSON *obj, cJSON *causes)
{
    const cJSON *spec = jget(obj, "spec");
    const cJSON *ls = jget(spec, "selector");
    const cJSON *labels = jget(jget(jget(spec, "template"), "metadata"), "labels");
    const char *uid = kobj_meta_str(obj, "uid"), *name = kobj_meta_str(obj, "name");
    cJSON *expected;
    struct sel *sel = NULL;
    char err[256];

    if (cJSON_IsTrue(jget(spec, "manualSelector")) || !cJSON_IsObject(ls) || !uid || !name)
        return;
    check_has_label(labels, "controller-uid", uid, causes);
    check_has_label(labels, "job-name", name, causes);
    check_has_label(labels, "batch.kubernetes.io/controller-uid", uid, causes);
    check_has_label(labels, "batch.kubernetes.io/job-name", name, causes);
    if (!(expected = cJSON_CreateObject()))
        return;
    cJSON_AddStringToObject(expected, "batch.kubernetes.io/controller-uid", uid);
    cJSON_AddStringToObject(expected, "batch.kubernetes.io/job-name", name);
    cJSON_AddStringToObject(expected, "controller-uid", uid);
    cJSON_AddStringToObject(expected, "job-name", name);
    if (sel_from_label_selector(ls, &sel, err, sizeof(err)) == 0 && !sel_matches(sel, expected)) {
        struct buf b = { 0 };
        go_label_selector(ls, &b);
        status_cause_add(causes, "FieldValueInvalid", "spec.selector",
                         "Invalid value: %.800s: `selector` not auto-generated",
                         b.data ? b.data : "");
        buf_free(&b);
    }
    sel_free(sel);
    cJSON_Delete(expected);
}

/* validateJobSpec: a selector is required (kubesim generates it unless
 * manualSelector) and, generated or not, must match the template's labels. */
static void check_job_selector(const cJSON *spec, const cJSON *tmpl, cJSON *causes)
{
    const cJSON *ls = jget(spec, "selector");
    const cJSON *labels = jget(jget(tmpl, "metadata"), "labels");
    struct sel *sel = NULL;
    struct buf b = { 0 };
    char err[256];

    if (!cJSON_IsObject(ls)) {
        status_cause_add(causes, "FieldValueRequired", "spec.selector", "Required value");
        return;
    }
    if (sel_from_label_selector(ls, &sel, err, sizeof(err)) < 0) {
        status_cause_add(causes, "FieldValueInvalid", "spec.selector", "Invalid value: %.300s",
                         err);
        return;
    }
    if (!sel_matches(sel, cJSON_IsObject(labels) ? labels : NULL)) {
        go_map_literal(labels, &b);
        status_cause_add(causes, "FieldValueInvalid", "spec.template.metadata.labels",
                         "Invalid value: %.700s: `selector` does not match template `labels`",
                         b.data ? b.data : "");
    }
    buf_free(&b);
    sel_free(sel);
}

static void check_job(const cJSON *obj, const cJSON *old, cJSON *causes)
{
    const cJSON *spec = jget(obj, "spec");
    const cJSON *tmpl = jget(spec, "template");

    if (!cJSON_IsObject(tmpl)) {
        status_cause_add(causes, "FieldValueRequired", "spec.template", "Required value");
        return;
    }
    check_generated_selector(obj, causes);
    check_job_selector(spec, tmpl, causes);
    check_pod_template(tmpl, "spec.template", true, causes);
    if (old) {
        const cJSON *ospec = jget(old, "spec");
        if (!json_equal(jget(spec, "selector"), jget(ospec, "selector")))
            status_cause_add(causes, "FieldValueInvalid", "spec.selector",
                             "Invalid value: \"selector\": field is immutable");
        if (!json_equal(tmpl, jget(ospec, "template")))
            status_cause_add(causes, "FieldValueInvalid", "spec.template",
                             "Invalid value: \"template\": field is immutable");
        if (jget(ospec, "completions") &&
            !json_equal(jget(spec, "completions"), jget(ospec, "completions")))
            status_cause_add(causes, "FieldValueInvalid", "spec.completions",
                             "Invalid value: \"completions\": field is immutable");
    }
}

/* ---- NetworkPolicy (ValidateNetworkPolicySpec, the parts a client meets) ---- */

static void check_netpol_ports(const cJSON *ports, const char *base, cJSON *causes)
{
    const cJSON *p;
    int i = 0;
    cJSON_ArrayForEach(p, (cJSON_IsArray(ports) ? ports : NULL)) {
        char f[200];
        const char *proto = cJSON_GetStringValue(jget(p, "protocol"));
        const cJSON *port = jget(p, "port"), *end = jget(p, "endPort");
        if (proto && strcmp(proto, "TCP") && strcmp(proto, "UDP") && strcmp(proto, "SCTP")) {
            snprintf(f, sizeof(f), "%s[%d].protocol", base, i);
            status_cause_add(causes, "FieldValueNotSupported", f, "Unsupported value: \"%s\": "
                             "supported values: \"SCTP\", \"TCP\", \"UDP\"", proto);
        }
        snprintf(f, sizeof(f), "%s[%d].port", base, i);
        if (cJSON_IsNumber(port) && (port->valuedouble < 1 || port->valuedouble > 65535))
            status_cause_add(causes, "FieldValueInvalid", f, "Invalid value: %d: must be between "
                             "1 and 65535, inclusive", (int)port->valuedouble);
        else if (cJSON_IsString(port))
            schema_check_name(port->valuestring, NAME_LABEL_1123, f, causes);
        if (end && !cJSON_IsNull(end)) {
            snprintf(f, sizeof(f), "%s[%d].endPort", base, i);
            if (!cJSON_IsNumber(port))
                status_cause_add(causes, "FieldValueInvalid", f, "Invalid value: %d: may not be "
                                 "specified when `port` is non-numeric",
                                 cJSON_IsNumber(end) ? (int)end->valuedouble : 0);
            else if (!cJSON_IsNumber(end) || end->valuedouble < port->valuedouble)
                status_cause_add(causes, "FieldValueInvalid", f, "Invalid value: %d: must be "
                                 "greater than or equal to `port`",
                                 cJSON_IsNumber(end) ? (int)end->valuedouble : 0);
        }
        i++;
    }
}

static void check_netpol_peers(const cJSON *peers, const char *base, cJSON *causes)
{
    const cJSON *p;
    int i = 0;
    cJSON_ArrayForEach(p, (cJSON_IsArray(peers) ? peers : NULL)) {
        char f[200];
        const cJSON *ipb = jget(p, "ipBlock");
        int n = !!cJSON_IsObject(jget(p, "podSelector")) +
                !!cJSON_IsObject(jget(p, "namespaceSelector")) + !!cJSON_IsObject(ipb);
        snprintf(f, sizeof(f), "%s[%d]", base, i);
        if (n == 0)
            status_cause_add(causes, "FieldValueRequired", f, "Required value: must specify a "
                             "peer");
        else if (cJSON_IsObject(ipb) && n > 1)
            status_cause_add(causes, "FieldValueForbidden", f, "Forbidden: may not specify both "
                             "ipBlock and another peer");
        if (cJSON_IsObject(ipb) && !cJSON_GetStringValue(jget(ipb, "cidr"))) {
            snprintf(f, sizeof(f), "%s[%d].ipBlock.cidr", base, i);
            status_cause_add(causes, "FieldValueRequired", f, "Required value");
        }
        i++;
    }
}

static void check_netpol(const cJSON *obj, cJSON *causes)
{
    static const char *const dirs[] = { "ingress", "egress" }, *const peer[] = { "from", "to" };
    const cJSON *spec = jget(obj, "spec"), *t, *rule;
    int i = 0;
    cJSON_ArrayForEach(t, (cJSON_IsArray(jget(spec, "policyTypes")) ? jget(spec, "policyTypes")
                                                                     : NULL)) {
        const char *v = cJSON_GetStringValue(t);
        char f[64];
        snprintf(f, sizeof(f), "spec.policyTypes[%d]", i++);
        if (!v || (strcmp(v, "Ingress") && strcmp(v, "Egress")))
            status_cause_add(causes, "FieldValueNotSupported", f, "Unsupported value: \"%s\": "
                             "supported values: \"Egress\", \"Ingress\"", v ? v : "");
    }
    if (i > 2)
        status_cause_add(causes, "FieldValueInvalid", "spec.policyTypes", "Invalid value: "
                         "\"%d items\": may not specify more than two policyTypes", i);
    for (size_t d = 0; d < 2; d++) {
        i = 0;
        cJSON_ArrayForEach(rule, (cJSON_IsArray(jget(spec, dirs[d])) ? jget(spec, dirs[d]) : NULL)) {
            char f[96];
            snprintf(f, sizeof(f), "spec.%s[%d].ports", dirs[d], i);
            check_netpol_ports(jget(rule, "ports"), f, causes);
            snprintf(f, sizeof(f), "spec.%s[%d].%s", dirs[d], i, peer[d]);
            check_netpol_peers(jget(rule, peer[d]), f, causes);
            i++;
        }
    }
}

void store__builtin_validate(const struct reg_resource *res, const cJSON *obj, const cJSON *old,
                             cJSON *causes)
{
    if (is(res, "", "pods")) {
        check_pod_spec(jget(obj, "spec"), "spec", false, causes);
        if (old)
            check_pod_update(obj, old, causes);
    } else if (is(res, "", "services")) {
        check_service(obj, old, causes);
    } else if (is(res, "batch", "jobs")) {
        check_job(obj, old, causes);
    } else if (is(res, "networking.k8s.io", "networkpolicies")) {
        check_netpol(obj, causes);
    }
}

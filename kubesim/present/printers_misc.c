/*
 * printers_misc.c - Table printers of the simpler built-in kinds: events
 * (LAST SEEN TYPE REASON OBJECT MESSAGE + wide), configmaps and secrets (DATA),
 * serviceaccounts, leases (HOLDER), endpoints, endpointslices, PVCs, RBAC bindings,
 * and the generic "Created At" convertor CRDs and RBAC roles get. Pods, services,
 * nodes, namespaces and jobs are in printers.c.
 */
#include "kubesim/present/present.h"
#include "kubesim/present/internal.h"
#include "util/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_COL { "Name", "string", "name", present_name_desc, 0 }
#define AGE_COL { "Age", "string", "", present_age_desc, 0 }

/* ---- events ------------------------------------------------------------------------ */

static const struct present_col event_cols[] = {
    { "Last Seen", "string", "", "Time when last event occurred.", 0 },
    { "Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future.", 0 },
    { "Reason", "string", "", "This should be a short, machine understandable string that gives the reason for this event being generated.", 0 },
    { "Object", "string", "", "The object that this event is about.", 0 },
    { "Subobject", "string", "", "The subobject of the object that this event is about.", 1 },
    { "Source", "string", "", "The component reporting this event.", 1 },
    { "Message", "string", "", "A human-readable description of the status of this operation.", 0 },
    { "First Seen", "string", "", "The time at which the event was first recorded.", 1 },
    { "Count", "integer", "", "The number of times this event has occurred.", 1 },
    { "Name", "string", "name", present_name_desc, 1 },
};

/* Where core/v1 and events.k8s.io/v1 Events keep the fields the printer shows; the
 * server prints both the same way (the latter through its conversion to core). */
struct event_fields {
    const char *first, *last, *count, *object, *source_comp, *source_host, *message;
};

static const struct event_fields core_event = {
    "firstTimestamp", "lastTimestamp", "count", "involvedObject", "source.component",
    "source.host", "message",
};
static const struct event_fields v1_event = {
    "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "regarding",
    "deprecatedSource.component", "deprecatedSource.host", "note",
};

static int event_row(const cJSON *ev, const struct event_fields *f, time_t now, cJSON *cells)
{
    char first[16], lastseen[16], target[600], source[600], path[64], *msg;
    const char *ft = json_get_str(ev, f->first), *lt = json_get_str(ev, f->last);
    const char *kind, *name, *fieldpath, *comp, *host, *m;
    long count = present__num(ev, f->count, 0);
    size_t k, mlen;
    int rc;

    snprintf(path, sizeof(path), "%s.kind", f->object);
    kind = present__or(json_get_str(ev, path), "");
    snprintf(path, sizeof(path), "%s.name", f->object);
    name = json_get_str(ev, path);
    snprintf(path, sizeof(path), "%s.fieldPath", f->object);
    fieldpath = json_get_str(ev, path);
    comp = json_get_str(ev, f->source_comp);
    host = json_get_str(ev, f->source_host);
    present__age_of(ft && *ft ? ft : json_get_str(ev, "eventTime"), now, first);
    if (lt && *lt)
        present__age_of(lt, now, lastseen);
    else
        memcpy(lastseen, first, sizeof(first));
    if (json_get(ev, "series")) {
        present__age_of(json_get_str(ev, "series.lastObservedTime"), now, lastseen);
        count = present__num(ev, "series.count", 0);
    } else if (count == 0) {
        count = 1;
    }
    for (k = 0; kind[k] && k < 200; k++)
        target[k] = (char)(kind[k] >= 'A' && kind[k] <= 'Z' ? kind[k] + 32 : kind[k]);
    target[k] = '\0';
    if (name && *name)
        snprintf(target + k, sizeof(target) - k, "/%.300s", name);
    if (!comp || !*comp)
        comp = present__or(json_get_str(ev, "reportingComponent"),
                          json_get_str(ev, "reportingController"));
    if (!host || !*host)
        host = json_get_str(ev, "reportingInstance");
    if (comp && *comp && host && *host)
        snprintf(source, sizeof(source), "%.250s, %.250s", comp, host);
    else
        snprintf(source, sizeof(source), "%.250s", present__or(comp, ""));
    /* strings.TrimSpace of the message */
    m = present__or(json_get_str(ev, f->message), "");
    while (*m == ' ' || *m == '\n' || *m == '\t' || *m == '\r')
        m++;
    mlen = strlen(m);
    while (mlen && (m[mlen - 1] == ' ' || m[mlen - 1] == '\n' || m[mlen - 1] == '\t' ||
                    m[mlen - 1] == '\r'))
        mlen--;
    if (!(msg = strndup(m, mlen)))
        return -ENOMEM;
    rc = present__add_str(cells, lastseen);
    if (!rc)
        rc = present__add_str(cells, json_get_str(ev, "type"));
    if (!rc)
        rc = present__add_str(cells, json_get_str(ev, "reason"));
    if (!rc)
        rc = present__add_str(cells, target);
    if (!rc)
        rc = present__add_str(cells, fieldpath);
    if (!rc)
        rc = present__add_str(cells, source);
    if (!rc)
        rc = present__add_str(cells, msg);
    free(msg);
    if (!rc)
        rc = present__add_str(cells, first);
    if (!rc)
        rc = present__cell_num(cells, (double)count);
    if (!rc)
        rc = present__add_str(cells, json_get_str(ev, "metadata.name"));
    return rc;
}

static int event_cells(const cJSON *ev, time_t now, cJSON *cells)
{
    return event_row(ev, &core_event, now, cells);
}

static int event_v1_cells(const cJSON *ev, time_t now, cJSON *cells)
{
    return event_row(ev, &v1_event, now, cells);
}

/* ---- simple kinds --------------------------------------------------------------------- */

static const struct present_col cm_cols[] = {
    NAME_COL, { "Data", "string", "", "Data contains the configuration data.", 0 }, AGE_COL,
};

static int cm_cells(const cJSON *o, time_t now, cJSON *cells)
{
    int rc;

    if ((rc = present__cell_name(cells, o)) ||
        (rc = present__cell_num(cells, present__count_keys(o, "data") + present__count_keys(o, "binaryData"))))
        return rc;
    return present__cell_age(cells, o, now);
}

static const struct present_col secret_cols[] = {
    NAME_COL, { "Type", "string", "", "The type of the secret", 0 },
    { "Data", "string", "", "The number of entries in the secret", 0 }, AGE_COL,
};

static int secret_cells(const cJSON *o, time_t now, cJSON *cells)
{
    int rc;

    if ((rc = present__cell_name(cells, o)) ||
        (rc = present__add_str(cells, present__or(json_get_str(o, "type"), "Opaque"))) ||
        (rc = present__cell_num(cells, present__count_keys(o, "data"))))
        return rc;
    return present__cell_age(cells, o, now);
}

static const struct present_col sa_cols[] = {
    NAME_COL, { "Secrets", "string", "", "Secrets is a list of the secrets in the same namespace "
                "that pods running using this ServiceAccount are allowed to use.", 0 }, AGE_COL,
};

static int sa_cells(const cJSON *o, time_t now, cJSON *cells)
{
    int rc;

    if ((rc = present__cell_name(cells, o)) || (rc = present__cell_num(cells, present__count_keys(o, "secrets"))))
        return rc;
    return present__cell_age(cells, o, now);
}

static const struct present_col lease_cols[] = {
    NAME_COL, { "Holder", "string", "", "The holder of the lease", 0 }, AGE_COL,
};

static int lease_cells(const cJSON *o, time_t now, cJSON *cells)
{
    return present__cells_name_str_age(cells, o, "spec.holderIdentity", now);
}

static const struct present_col ep_cols[] = {
    NAME_COL, { "Endpoints", "string", "", "Endpoints is the list of endpoints.", 0 }, AGE_COL,
};

static int ep_cells(const cJSON *o, time_t now, cJSON *cells)
{
    struct buf b = { 0 };
    const cJSON *ss, *p, *a;
    long count = 0, shown = 0;
    int rc = 0;

    cJSON_ArrayForEach(ss, json_get(o, "subsets")) {
        const cJSON *ports = json_get(ss, "ports"), *addrs = json_get(ss, "addresses");
        if (cJSON_GetArraySize(ports) == 0) {
            cJSON_ArrayForEach(a, addrs) {
                count++;
                if (shown < 3 && rc == 0 && ++shown)
                    rc = buf_printf(&b, "%s%s", b.len ? "," : "", present__or(json_get_str(a, "ip"), ""));
            }
            continue;
        }
        cJSON_ArrayForEach(p, ports) {
            cJSON_ArrayForEach(a, addrs) {
                const char *ip = present__or(json_get_str(a, "ip"), "");
                count++;
                if (shown >= 3 || rc)
                    continue;
                shown++;
                rc = strchr(ip, ':') ? buf_printf(&b, "%s[%s]:%ld", b.len ? "," : "", ip,
                                                  present__num(p, "port", 0))
                                     : buf_printf(&b, "%s%s:%ld", b.len ? "," : "", ip,
                                                  present__num(p, "port", 0));
            }
        }
    }
    if (rc == 0 && count > shown)
        rc = buf_printf(&b, " + %ld more...", count - shown);
    if (rc == 0 && cJSON_GetArraySize(json_get(o, "subsets")) == 0)
        rc = buf_puts(&b, "<none>");
    if ((rc = present__cell_name(cells, o)) < 0 || (rc = present__cell_buf(cells, &b, rc)))
        return rc;
    return present__cell_age(cells, o, now);
}

static const struct present_col pvc_cols[] = {
    NAME_COL,
    { "Status", "string", "", "The phase of the claim.", 0 },
    { "Volume", "string", "", "The binding reference to the PersistentVolume.", 0 },
    { "Capacity", "string", "", "The actual resources of the underlying volume.", 0 },
    { "Access Modes", "string", "", "The access modes the volume has.", 0 },
    { "StorageClass", "string", "", "Name of the StorageClass required by the claim.", 0 },
    { "VolumeAttributesClass", "string", "", "The VolumeAttributesClass of the claim.", 0 },
    AGE_COL,
    { "VolumeMode", "string", "", "What type of volume is required by the claim.", 1 },
};

static int pvc_cells(const cJSON *o, time_t now, cJSON *cells)
{
    const char *phase = present__or(json_get_str(o, "status.phase"), "");
    const char *vol = present__or(json_get_str(o, "spec.volumeName"), "");
    const char *sc = json_get_str(o, "spec.storageClassName");
    const char *vac = json_get_str(o, "spec.volumeAttributesClassName");
    struct buf modes = { 0 };
    const cJSON *m;
    const char *cap = "";
    int rc = 0;

    if (json_get(o, "metadata.deletionTimestamp"))
        phase = "Terminating";
    if (!sc) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(json_get(o, "metadata.annotations"),
                                                          "volume.beta.kubernetes.io/storage-class");
        sc = cJSON_IsString(a) ? a->valuestring : NULL;
    }
    if (*vol) {
        cap = present__or(json_get_str(o, "status.capacity.storage"), "");
        cJSON_ArrayForEach(m, json_get(o, "status.accessModes")) {
            const char *s = cJSON_IsString(m) ? m->valuestring : "";
            const char *abbr = strcmp(s, "ReadWriteOnce") == 0 ? "RWO"
                             : strcmp(s, "ReadOnlyMany") == 0 ? "ROX"
                             : strcmp(s, "ReadWriteMany") == 0 ? "RWX"
                             : strcmp(s, "ReadWriteOncePod") == 0 ? "RWOP" : NULL;
            if (abbr && rc == 0)
                rc = buf_printf(&modes, "%s%s", modes.len ? "," : "", abbr);
        }
    }
    if ((rc = present__cell_name(cells, o)) < 0 || (rc = present__add_str(cells, phase)) ||
        (rc = present__add_str(cells, vol)) || (rc = present__add_str(cells, cap)) ||
        (rc = present__cell_buf(cells, &modes, rc)) || (rc = present__add_str(cells, present__or(sc, ""))) ||
        (rc = present__add_str(cells, present__or(vac, "<unset>"))) || (rc = present__cell_age(cells, o, now)))
        return rc;
    return present__add_str(cells, present__or(json_get_str(o, "spec.volumeMode"), "<unset>"));
}

static const struct present_col created_cols[] = {
    NAME_COL, { "Created At", "date", "", present_age_desc, 0 },
};

/* CRDs and RBAC roles: the generic table convertor's creation time in RFC 3339. */
static int created_cells(const cJSON *o, time_t now, cJSON *cells)
{
    int rc;
    (void)now;

    if ((rc = present__cell_name(cells, o)))
        return rc;
    return present__add_str(cells, json_get_str(o, "metadata.creationTimestamp"));
}

/* ---- networking.k8s.io: Ingress, IngressClass (kubectl's printIngress) ---------------- */

static const struct present_col ing_cols[] = {
    NAME_COL,
    { "Class", "string", "", "The name of the IngressClass resource that should be used.", 0 },
    { "Hosts", "string", "", "Hosts that incoming requests are matched against.", 0 },
    { "Address", "string", "", "Address is a list containing ingress points for the load-balancer", 0 },
    { "Ports", "string", "", "Ports of TLS configurations that open", 0 },
    AGE_COL,
};

/* Appends s to out (", "-separated), silently cut at cap: a display column. */
static void join_add(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    if (s && *s && n + 1 < cap)
        snprintf(out + n, cap - n, "%s%s", n ? "," : "", s);
}

static int ing_cells(const cJSON *o, time_t now, cJSON *cells)
{
    char hosts[256] = "", addrs[256] = "";
    const cJSON *e;
    int rc;

    cJSON_ArrayForEach(e, json_get(o, "spec.rules"))
        join_add(hosts, sizeof(hosts), json_get_str(e, "host"));
    cJSON_ArrayForEach(e, json_get(o, "status.loadBalancer.ingress")) {
        join_add(addrs, sizeof(addrs), json_get_str(e, "ip"));
        join_add(addrs, sizeof(addrs), json_get_str(e, "hostname"));
    }
    if ((rc = present__cell_name(cells, o)) ||
        (rc = present__add_str(cells, present__or(json_get_str(o, "spec.ingressClassName"),
                                                "<none>"))) ||
        (rc = present__add_str(cells, hosts[0] ? hosts : "*")) ||
        (rc = present__add_str(cells, addrs)) ||
        (rc = present__add_str(cells, cJSON_GetArraySize(json_get(o, "spec.tls")) > 0 ? "80, 443"
                                                                                      : "80")))
        return rc;
    return present__cell_age(cells, o, now);
}

static const struct present_col ingclass_cols[] = {
    NAME_COL,
    { "Controller", "string", "", "Controller that implements this class.", 0 },
    { "Parameters", "string", "", "A reference to a resource with additional parameters.", 0 },
    AGE_COL,
};

static int ingclass_cells(const cJSON *o, time_t now, cJSON *cells)
{
    int rc;
    const char *kind = json_get_str(o, "spec.parameters.kind");
    char params[300];
    snprintf(params, sizeof(params), "%s/%s", present__or(kind, ""),
             present__or(json_get_str(o, "spec.parameters.name"), ""));
    if ((rc = present__cell_name(cells, o)) ||
        (rc = present__add_str(cells, present__or(json_get_str(o, "spec.controller"), ""))) ||
        (rc = present__add_str(cells, kind ? params : "<none>")))
        return rc;
    return present__cell_age(cells, o, now);
}

/* ---- rbac bindings, endpointslices -------------------------------------------------- */

static const struct present_col binding_cols[] = {
    NAME_COL,
    { "Role", "string", "", "Role of the binding", 0 },
    AGE_COL,
    { "Users", "string", "", "Users in the binding", 1 },
    { "Groups", "string", "", "Groups in the binding", 1 },
    { "ServiceAccounts", "string", "", "ServiceAccounts in the binding", 1 },
};

static int binding_cells(const cJSON *o, time_t now, cJSON *cells)
{
    static const char *const kinds[] = { "User", "Group", "ServiceAccount" };
    char role[600];
    const cJSON *sub;
    int rc;

    snprintf(role, sizeof(role), "%.250s/%.250s", present__or(json_get_str(o, "roleRef.kind"), ""),
             present__or(json_get_str(o, "roleRef.name"), ""));
    if ((rc = present__cell_name(cells, o)) || (rc = present__add_str(cells, role)) ||
        (rc = present__cell_age(cells, o, now)))
        return rc;
    for (size_t i = 0; i < 3; i++) {
        struct buf b = { 0 };
        rc = 0;
        cJSON_ArrayForEach(sub, json_get(o, "subjects")) {
            const char *k = json_get_str(sub, "kind"), *n = present__or(json_get_str(sub, "name"), "");
            if (!k || strcmp(k, kinds[i]) != 0 || rc)
                continue;
            if (i == 2)
                rc = buf_printf(&b, "%s%s:%s", b.len ? ", " : "",
                                present__or(json_get_str(sub, "namespace"), ""), n);
            else
                rc = buf_printf(&b, "%s%s", b.len ? ", " : "", n);
        }
        if ((rc = present__cell_buf(cells, &b, rc)))
            return rc;
    }
    return 0;
}

static const struct present_col eps_cols[] = {
    NAME_COL,
    { "AddressType", "string", "", "The IP protocol for this slice", 0 },
    { "Ports", "string", "", "The ports of this slice", 0 },
    { "Endpoints", "string", "", "The endpoints of this slice", 0 },
    AGE_COL,
};

/* At most three values, then " + N more...", "<unset>" when there are none. */
static int eps_list(const cJSON *arr, bool ports, struct buf *b)
{
    const cJSON *it, *a;
    long count = 0, shown = 0;
    int rc = 0;

    cJSON_ArrayForEach(it, arr) {
        if (ports) {
            count++;
            if (shown++ < 3) {
                const cJSON *port = cJSON_GetObjectItemCaseSensitive(it, "port");
                rc = cJSON_IsNumber(port) ? buf_printf(b, "%s%ld", b->len ? "," : "",
                                                       (long)port->valuedouble)
                                          : buf_printf(b, "%s<unset>", b->len ? "," : "");
            }
        } else {
            cJSON_ArrayForEach(a, json_get(it, "addresses")) {
                count++;
                if (shown++ < 3 && cJSON_IsString(a))
                    rc = buf_printf(b, "%s%s", b->len ? "," : "", a->valuestring);
            }
        }
        if (rc)
            return rc;
    }
    if (count == 0)
        return buf_puts(b, "<unset>");
    return count > 3 ? buf_printf(b, " + %ld more...", count - 3) : 0;
}

static int eps_cells(const cJSON *o, time_t now, cJSON *cells)
{
    struct buf b = { 0 };
    int rc;

    if ((rc = present__cell_name(cells, o)) ||
        (rc = present__add_str(cells, json_get_str(o, "addressType"))) ||
        (rc = present__cell_buf(cells, &b, eps_list(json_get(o, "ports"), true, &b))) ||
        (rc = present__cell_buf(cells, &b, eps_list(json_get(o, "endpoints"), false, &b))))
        return rc;
    return present__cell_age(cells, o, now);
}

#define PRINTER(g, k, cols, fn) { g, k, cols, sizeof(cols) / sizeof(cols[0]), fn }

const struct present_printer present_printers_misc[] = {
    PRINTER("", "Event", event_cols, event_cells),
    PRINTER("events.k8s.io", "Event", event_cols, event_v1_cells),
    PRINTER("", "ConfigMap", cm_cols, cm_cells),
    PRINTER("", "Secret", secret_cols, secret_cells),
    PRINTER("", "ServiceAccount", sa_cols, sa_cells),
    PRINTER("", "Endpoints", ep_cols, ep_cells),
    PRINTER("", "PersistentVolumeClaim", pvc_cols, pvc_cells),
    PRINTER("coordination.k8s.io", "Lease", lease_cols, lease_cells),
    PRINTER("apiextensions.k8s.io", "CustomResourceDefinition", created_cols, created_cells),
    PRINTER("rbac.authorization.k8s.io", "Role", created_cols, created_cells),
    PRINTER("rbac.authorization.k8s.io", "ClusterRole", created_cols, created_cells),
    PRINTER("rbac.authorization.k8s.io", "RoleBinding", binding_cols, binding_cells),
    PRINTER("rbac.authorization.k8s.io", "ClusterRoleBinding", binding_cols, binding_cells),
    PRINTER("discovery.k8s.io", "EndpointSlice", eps_cols, eps_cells),
    PRINTER("networking.k8s.io", "Ingress", ing_cols, ing_cells),
    PRINTER("networking.k8s.io", "IngressClass", ingclass_cols, ingclass_cells),
};
const size_t present_n_printers_misc = sizeof(present_printers_misc) / sizeof(present_printers_misc[0]);

/*
 * printers.c - the Table columns and cell computations of built-in kinds,
 * as the API server's printers produce them for `kubectl get` (pods: READY,
 * STATUS from phase/reasons/container states/Terminating, RESTARTS with the last
 * restart's age; services: TYPE/CLUSTER-IP/EXTERNAL-IP/PORT(S); nodes, namespaces,
 * jobs; the simpler kinds are in printers_misc.c). The server always emits
 * the wide (priority 1) cells too; kubectl hides them without -o wide.
 */
#include "kobj/json_text.h"
#include "kubesim/present/present.h"
#include "kubesim/present/internal.h"
#include "util/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_COL { "Name", "string", "name", present_name_desc, 0 }
#define AGE_COL { "Age", "string", "", present_age_desc, 0 }

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* labels.FormatLabels: "k=v,k2=v2" sorted by key, "<none>" when empty. */
static int format_labels(const cJSON *map, struct buf *b)
{
    const char *keys[256];
    size_t n = json_text_sorted_keys(map, keys, sizeof(keys) / sizeof(keys[0]));

    if (n == 0)
        return buf_puts(b, "<none>");
    for (size_t i = 0; i < n; i++)
        if (buf_printf(b, "%s%s=%s", i ? "," : "", keys[i],
                       cJSON_GetObjectItemCaseSensitive(map, keys[i])->valuestring) < 0)
            return -ENOMEM;
    return 0;
}

static bool cond_true(const cJSON *conds, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, (cJSON_IsArray(conds) ? conds : NULL)) {
        const char *t = json_get_str(c, "type"), *s = json_get_str(c, "status");
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
            return true;
    }
    return false;
}

/* ---- pods ------------------------------------------------------------------------ */

static const struct present_col pod_cols[] = {
    NAME_COL,
    { "Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0 },
    { "Status", "string", "", "The aggregate status of the containers in this pod.", 0 },
    { "Restarts", "string", "", "The number of times the containers in this pod have been "
      "restarted and when the last container in this pod has restarted.", 0 },
    AGE_COL,
    { "IP", "string", "", "IP address allocated to the pod. Routable at least within the "
      "cluster. Empty if not yet allocated.", 1 },
    { "Node", "string", "", "NodeName is a request to schedule this pod onto a specific node.", 1 },
    { "Nominated Node", "string", "", "nominatedNodeName is set only when this pod preempts "
      "other pods on the node.", 1 },
    { "Readiness Gates", "string", "", "If specified, all readiness gates will be evaluated "
      "for pod readiness.", 1 },
};

static bool restartable_init(const cJSON *pod, const char *name)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, json_get(pod, "spec.initContainers")) {
        const char *n = json_get_str(c, "name"), *rp = json_get_str(c, "restartPolicy");
        if (n && name && strcmp(n, name) == 0)
            return rp && strcmp(rp, "Always") == 0;
    }
    return false;
}

static void later(time_t *last, const cJSON *status)
{
    time_t t;
    const char *fin = json_get_str(status, "lastState.terminated.finishedAt");

    if (fin && util_parse_time(fin, &t) == 0 && t > *last)
        *last = t;
}

static int pod_cells(const cJSON *pod, time_t now, cJSON *cells)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(pod, "status"), *c;
    const cJSON *conds = json_get(pod, "status.conditions");
    const cJSON *inits = json_get(pod, "status.initContainerStatuses");
    const cJSON *ctrs = json_get(pod, "status.containerStatuses");
    const char *phase = json_get_str(st, "phase"), *sreason = json_get_str(st, "reason");
    char reason[320], restarts[64], age[16], ready[48], gates[32];
    long nrestarts = 0, rinit_restarts = 0, total, ready_n = 0, n_init;
    time_t last = 0, rinit_last = 0;
    bool initializing = false;
    int rc, i = 0;

    total = cJSON_GetArraySize(json_get(pod, "spec.containers"));
    n_init = cJSON_GetArraySize(json_get(pod, "spec.initContainers"));
    snprintf(reason, sizeof(reason), "%s", present__or(sreason, present__or(phase, "")));
    cJSON_ArrayForEach(c, (cJSON_IsArray(conds) ? conds : NULL)) {
        const char *t = json_get_str(c, "type"), *r = json_get_str(c, "reason");
        if (t && r && strcmp(t, "PodScheduled") == 0 && strcmp(r, "SchedulingGated") == 0)
            snprintf(reason, sizeof(reason), "SchedulingGated");
    }
    cJSON_ArrayForEach(c, json_get(pod, "spec.initContainers")) {
        const char *rp = json_get_str(c, "restartPolicy");
        if (rp && strcmp(rp, "Always") == 0)
            total++;
    }
    cJSON_ArrayForEach(c, (cJSON_IsArray(inits) ? inits : NULL)) {
        const char *name = json_get_str(c, "name");
        const cJSON *term = json_get(c, "state.terminated");
        const char *wreason = json_get_str(c, "state.waiting.reason");
        bool restartable = restartable_init(pod, name);
        nrestarts += present__num(c, "restartCount", 0);
        later(&last, c);
        if (restartable) {
            rinit_restarts += present__num(c, "restartCount", 0);
            later(&rinit_last, c);
        }
        if (term && present__num(term, "exitCode", 0) == 0) {
            i++;
            continue;
        }
        if (restartable && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "started"))) {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "ready")))
                ready_n++;
            i++;
            continue;
        }
        if (term) {
            const char *tr = json_get_str(term, "reason");
            if (tr && *tr)
                snprintf(reason, sizeof(reason), "Init:%s", tr);
            else if (present__num(term, "signal", 0))
                snprintf(reason, sizeof(reason), "Init:Signal:%ld", present__num(term, "signal", 0));
            else
                snprintf(reason, sizeof(reason), "Init:ExitCode:%ld", present__num(term, "exitCode", 0));
        } else if (wreason && *wreason && strcmp(wreason, "PodInitializing") != 0) {
            snprintf(reason, sizeof(reason), "Init:%s", wreason);
        } else {
            snprintf(reason, sizeof(reason), "Init:%d/%ld", i, n_init);
        }
        initializing = true;
        break;
    }
    if (!initializing || cond_true(conds, "Initialized")) {
        bool has_running = false;
        int nc = cJSON_IsArray(ctrs) ? cJSON_GetArraySize(ctrs) : 0;
        nrestarts = rinit_restarts;
        last = rinit_last;
        for (int k = nc - 1; k >= 0; k--) {
            const cJSON *cs = cJSON_GetArrayItem(ctrs, k);
            const char *wr = json_get_str(cs, "state.waiting.reason");
            const cJSON *term = json_get(cs, "state.terminated");
            const char *tr = json_get_str(term, "reason");
            nrestarts += present__num(cs, "restartCount", 0);
            later(&last, cs);
            if (wr && *wr)
                snprintf(reason, sizeof(reason), "%s", wr);
            else if (term && tr && *tr)
                snprintf(reason, sizeof(reason), "%s", tr);
            else if (term && present__num(term, "signal", 0))
                snprintf(reason, sizeof(reason), "Signal:%ld", present__num(term, "signal", 0));
            else if (term)
                snprintf(reason, sizeof(reason), "ExitCode:%ld", present__num(term, "exitCode", 0));
            else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cs, "ready")) &&
                     json_get(cs, "state.running")) {
                has_running = true;
                ready_n++;
            }
        }
        if (strcmp(reason, "Completed") == 0 && has_running)
            snprintf(reason, sizeof(reason), "%s", cond_true(conds, "Ready") ? "Running"
                                                                              : "NotReady");
    }
    if (json_get(pod, "metadata.deletionTimestamp")) {
        if (sreason && strcmp(sreason, "NodeLost") == 0)
            snprintf(reason, sizeof(reason), "Unknown");
        else if (!phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0))
            snprintf(reason, sizeof(reason), "Terminating");
    }
    if (nrestarts && last) {
        present_human_age(last, now, age);
        snprintf(restarts, sizeof(restarts), "%ld (%s ago)", nrestarts, age);
    } else {
        snprintf(restarts, sizeof(restarts), "%ld", nrestarts);
    }
    snprintf(ready, sizeof(ready), "%ld/%ld", ready_n, total);
    snprintf(gates, sizeof(gates), "<none>");
    if (cJSON_GetArraySize(json_get(pod, "spec.readinessGates")) > 0) {
        int t = 0, ng = cJSON_GetArraySize(json_get(pod, "spec.readinessGates"));
        cJSON_ArrayForEach(c, json_get(pod, "spec.readinessGates")) {
            const char *ct = json_get_str(c, "conditionType");
            const cJSON *pc;
            cJSON_ArrayForEach(pc, (cJSON_IsArray(conds) ? conds : NULL)) {
                const char *t2 = json_get_str(pc, "type");
                if (ct && t2 && strcmp(ct, t2) == 0) {
                    t += present__or(json_get_str(pc, "status"), "")[0] == 'T';
                    break;
                }
            }
        }
        snprintf(gates, sizeof(gates), "%d/%d", t, ng);
    }
    const char *ip = json_get_str(cJSON_GetArrayItem(json_get(pod, "status.podIPs"), 0), "ip");
    if (!ip)
        ip = json_get_str(pod, "status.podIP");
    if ((rc = present__cell_name(cells, pod)) || (rc = present__add_str(cells, ready)) ||
        (rc = present__add_str(cells, reason)) || (rc = present__add_str(cells, restarts)) ||
        (rc = present__cell_age(cells, pod, now)) || (rc = present__add_str(cells, present__or(ip, "<none>"))) ||
        (rc = present__add_str(cells, present__or(json_get_str(pod, "spec.nodeName"), "<none>"))) ||
        (rc = present__add_str(cells, present__or(json_get_str(pod, "status.nominatedNodeName"),
                                             "<none>"))) ||
        (rc = present__add_str(cells, gates)))
        return rc;
    return 0;
}

/* ---- services --------------------------------------------------------------------- */

static const struct present_col svc_cols[] = {
    NAME_COL,
    { "Type", "string", "", "type determines how the Service is exposed.", 0 },
    { "Cluster-IP", "string", "", "clusterIP is the IP address of the service.", 0 },
    { "External-IP", "string", "", "externalIPs is a list of IP addresses for which nodes in "
      "the cluster will also accept traffic for this service.", 0 },
    { "Port(s)", "string", "", "The list of ports that are exposed by this service.", 0 },
    AGE_COL,
    { "Selector", "string", "", "Route service traffic to pods with label keys and values "
      "matching this selector.", 1 },
};

static int join_strings(const cJSON *arr, const char *key, struct buf *b, size_t *n)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, (cJSON_IsArray(arr) ? arr : NULL)) {
        const char *s = key ? json_get_str(it, key) : (cJSON_IsString(it) ? it->valuestring : NULL);
        if (!s || !*s)
            continue;
        if (buf_printf(b, "%s%s", (*n)++ ? "," : "", s) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int svc_external_ip(const cJSON *svc, const char *type, struct buf *b)
{
    const cJSON *ext = json_get(svc, "spec.externalIPs");
    size_t n = 0;
    int rc;

    if (strcmp(type, "ClusterIP") == 0 || strcmp(type, "NodePort") == 0) {
        if ((rc = join_strings(ext, NULL, b, &n)))
            return rc;
        return n ? 0 : buf_puts(b, "<none>");
    }
    if (strcmp(type, "LoadBalancer") == 0) {
        const cJSON *ing = json_get(svc, "status.loadBalancer.ingress"), *it;
        cJSON_ArrayForEach(it, (cJSON_IsArray(ing) ? ing : NULL)) {
            const char *s = present__or(json_get_str(it, "ip"), json_get_str(it, "hostname"));
            if (s && buf_printf(b, "%s%s", n++ ? "," : "", s) < 0)
                return -ENOMEM;
        }
        if ((rc = join_strings(ext, NULL, b, &n)))
            return rc;
        return n ? 0 : buf_puts(b, "<pending>");
    }
    if (strcmp(type, "ExternalName") == 0)
        return buf_puts(b, present__or(json_get_str(svc, "spec.externalName"), ""));
    return buf_puts(b, "<unknown>");
}

static int svc_cells(const cJSON *svc, time_t now, cJSON *cells)
{
    const char *type = present__or(json_get_str(svc, "spec.type"), "ClusterIP");
    const char *cip = json_get_str(cJSON_GetArrayItem(json_get(svc, "spec.clusterIPs"), 0), NULL);
    struct buf b = { 0 };
    const cJSON *p;
    size_t n = 0;
    int rc;

    if (!cip || !*cip)
        cip = json_get_str(svc, "spec.clusterIP");
    if ((rc = present__cell_name(cells, svc)) || (rc = present__add_str(cells, type)) ||
        (rc = present__add_str(cells, present__or(cip, "<none>"))))
        return rc;
    if ((rc = present__cell_buf(cells, &b, svc_external_ip(svc, type, &b))))
        return rc;
    cJSON_ArrayForEach(p, json_get(svc, "spec.ports")) {
        const char *proto = present__or(json_get_str(p, "protocol"), "TCP");
        long np = present__num(p, "nodePort", 0);
        rc = np > 0 ? buf_printf(&b, "%s%ld:%ld/%s", n ? "," : "", present__num(p, "port", 0), np, proto)
                    : buf_printf(&b, "%s%ld/%s", n ? "," : "", present__num(p, "port", 0), proto);
        n++;
        if (rc < 0) {
            buf_free(&b);
            return -ENOMEM;
        }
    }
    if ((rc = present__cell_buf(cells, &b, n ? 0 : buf_puts(&b, "<none>"))) ||
        (rc = present__cell_age(cells, svc, now)))
        return rc;
    return present__cell_buf(cells, &b, format_labels(json_get(svc, "spec.selector"), &b));
}

/* ---- nodes, namespaces --------------------------------------------------------------- */

static const struct present_col node_cols[] = {
    NAME_COL,
    { "Status", "string", "", "The status of the node", 0 },
    { "Roles", "string", "", "The roles of the node", 0 },
    AGE_COL,
    { "Version", "string", "", "Kubelet Version reported by the node.", 0 },
    { "Internal-IP", "string", "", "List of addresses reachable to the node.", 1 },
    { "External-IP", "string", "", "List of addresses reachable to the node.", 1 },
    { "OS-Image", "string", "", "OS Image reported by the node from /etc/os-release.", 1 },
    { "Kernel-Version", "string", "", "Kernel Version reported by the node.", 1 },
    { "Container-Runtime", "string", "", "Container Runtime Version reported by the node.", 1 },
};

static const char *node_address(const cJSON *node, const char *type)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, json_get(node, "status.addresses")) {
        const char *t = json_get_str(a, "type");
        if (t && strcmp(t, type) == 0)
            return json_get_str(a, "address");
    }
    return NULL;
}

static int node_cells(const cJSON *node, time_t now, cJSON *cells)
{
    const cJSON *c, *labels = json_get(node, "metadata.labels");
    struct buf b = { 0 };
    const char *roles[64];
    size_t nroles = 0;
    int rc = 0;

    cJSON_ArrayForEach(c, json_get(node, "status.conditions")) {
        const char *t = json_get_str(c, "type");
        if (t && strcmp(t, "Ready") == 0) {
            rc = buf_puts(&b, cond_true(json_get(node, "status.conditions"), "Ready")
                                  ? "Ready" : "NotReady");
            break;
        }
    }
    if (rc == 0 && b.len == 0)
        rc = buf_puts(&b, "Unknown");
    if (rc == 0 && cJSON_IsTrue(json_get(node, "spec.unschedulable")))
        rc = buf_puts(&b, ",SchedulingDisabled");
    if ((rc = present__cell_name(cells, node)) || (rc = present__cell_buf(cells, &b, rc)))
        return rc;
    cJSON_ArrayForEach(c, (cJSON_IsObject(labels) ? labels : NULL)) {
        const char *r = NULL;
        if (strncmp(c->string, "node-role.kubernetes.io/", 24) == 0 && c->string[24])
            r = c->string + 24;
        else if (strcmp(c->string, "kubernetes.io/role") == 0 && cJSON_IsString(c))
            r = c->valuestring;
        if (r && *r && nroles < 64)
            roles[nroles++] = r;
    }
    qsort(roles, nroles, sizeof(*roles), cmp_str);
    for (size_t i = 0; i < nroles; i++)
        if (!(i && strcmp(roles[i], roles[i - 1]) == 0) &&
            buf_printf(&b, "%s%s", b.len ? "," : "", roles[i]) < 0)
            return present__cell_buf(cells, &b, -ENOMEM);
    if ((rc = present__cell_buf(cells, &b, b.len ? 0 : buf_puts(&b, "<none>"))) ||
        (rc = present__cell_age(cells, node, now)) ||
        (rc = present__add_str(cells, json_get_str(node, "status.nodeInfo.kubeletVersion"))) ||
        (rc = present__add_str(cells, present__or(node_address(node, "InternalIP"), "<none>"))) ||
        (rc = present__add_str(cells, present__or(node_address(node, "ExternalIP"), "<none>"))) ||
        (rc = present__add_str(cells, present__or(json_get_str(node, "status.nodeInfo.osImage"),
                                             "<unknown>"))) ||
        (rc = present__add_str(cells, present__or(json_get_str(node, "status.nodeInfo.kernelVersion"),
                                             "<unknown>"))))
        return rc;
    return present__add_str(cells, present__or(json_get_str(node,
                                                     "status.nodeInfo.containerRuntimeVersion"),
                                         "<unknown>"));
}

static const struct present_col ns_cols[] = {
    NAME_COL,
    { "Status", "string", "", "The status of the namespace", 0 },
    AGE_COL,
};

static int ns_cells(const cJSON *ns, time_t now, cJSON *cells)
{
    return present__cells_name_str_age(cells, ns, "status.phase", now);
}

/* ---- jobs ------------------------------------------------------------------------- */

static const struct present_col job_cols[] = {
    NAME_COL,
    { "Status", "string", "", "Status of the job.", 0 },
    { "Completions", "string", "", "The completion status of the job.", 0 },
    { "Duration", "string", "", "Time required to complete the job.", 0 },
    AGE_COL,
    { "Containers", "string", "", "Names of each container in the template.", 1 },
    { "Images", "string", "", "Images referenced by each container in the template.", 1 },
    { "Selector", "string", "", "A label query over pods that should match the pod count.", 1 },
};

/* metav1.FormatLabelSelector, for the matchLabels/matchExpressions forms jobs use. */
static int format_selector(const cJSON *sel, struct buf *b)
{
    const cJSON *ml = json_get(sel, "matchLabels"), *me = json_get(sel, "matchExpressions");
    const cJSON *e, *v;
    size_t start = b->len;
    int rc = 0;

    if (cJSON_IsObject(ml) && ml->child && (rc = format_labels(ml, b)))
        return rc;
    cJSON_ArrayForEach(e, (cJSON_IsArray(me) ? me : NULL)) {
        const char *key = present__or(json_get_str(e, "key"), ""), *op = present__or(json_get_str(e, "operator"), "");
        size_t n = 0;
        if (b->len > start && (rc = buf_puts(b, ",")))
            return rc;
        if (strcmp(op, "Exists") == 0)
            rc = buf_puts(b, key);
        else if (strcmp(op, "DoesNotExist") == 0)
            rc = buf_printf(b, "!%s", key);
        else {
            rc = buf_printf(b, "%s %s (", key, strcmp(op, "In") == 0 ? "in" : "notin");
            cJSON_ArrayForEach(v, json_get(e, "values"))
                if (rc == 0 && cJSON_IsString(v))
                    rc = buf_printf(b, "%s%s", n++ ? "," : "", v->valuestring);
            if (rc == 0)
                rc = buf_puts(b, ")");
        }
        if (rc)
            return rc;
    }
    return b->len > start ? 0 : buf_puts(b, "<none>");
}

/* kubectl's printNetworkPolicy */
static const struct present_col netpol_cols[] = {
    NAME_COL,
    { "Pod-Selector", "string", "", "Selects the pods to which this NetworkPolicy object applies.", 0 },
    AGE_COL,
};

static int netpol_cells(const cJSON *o, time_t now, cJSON *cells)
{
    struct buf b = { 0 };
    int rc;

    if ((rc = present__cell_name(cells, o)) ||
        (rc = present__cell_buf(cells, &b, format_selector(json_get(o, "spec.podSelector"), &b))))
        return rc;
    return present__cell_age(cells, o, now);
}

static int job_cells(const cJSON *job, time_t now, cJSON *cells)
{
    const cJSON *conds = json_get(job, "status.conditions"), *c;
    const cJSON *comp = json_get(job, "spec.completions");
    long succeeded = present__num(job, "status.succeeded", 0), par = present__num(job, "spec.parallelism", 0);
    const char *status = "Running", *start = json_get_str(job, "status.startTime");
    const char *done = json_get_str(job, "status.completionTime");
    char completions[64], dur[16] = "";
    struct buf names = { 0 }, images = { 0 };
    size_t n = 0;
    time_t ts, te;
    int rc;

    if (cJSON_IsNumber(comp))
        snprintf(completions, sizeof(completions), "%ld/%ld", succeeded, (long)comp->valuedouble);
    else if (par > 1)
        snprintf(completions, sizeof(completions), "%ld/1 of %ld", succeeded, par);
    else
        snprintf(completions, sizeof(completions), "%ld/1", succeeded);
    if (start && util_parse_time(start, &ts) == 0) {
        if (done && util_parse_time(done, &te) == 0)
            present_human_age(ts, te, dur);
        else
            present_human_age(ts, now, dur);
    }
    if (cond_true(conds, "Complete"))
        status = "Complete";
    else if (cond_true(conds, "Failed"))
        status = "Failed";
    else if (json_get(job, "metadata.deletionTimestamp"))
        status = "Terminating";
    else if (cond_true(conds, "Suspended"))
        status = "Suspended";
    else if (cond_true(conds, "FailureTarget"))
        status = "FailureTarget";
    else if (cond_true(conds, "SuccessCriteriaMet"))
        status = "SuccessCriteriaMet";
    if ((rc = present__cell_name(cells, job)) || (rc = present__add_str(cells, status)) ||
        (rc = present__add_str(cells, completions)) || (rc = present__add_str(cells, dur)) ||
        (rc = present__cell_age(cells, job, now)))
        return rc;
    cJSON_ArrayForEach(c, json_get(job, "spec.template.spec.containers")) {
        if (buf_printf(&names, "%s%s", n ? "," : "", present__or(json_get_str(c, "name"), "")) < 0 ||
            buf_printf(&images, "%s%s", n ? "," : "", present__or(json_get_str(c, "image"), "")) < 0) {
            buf_free(&images);
            return present__cell_buf(cells, &names, -ENOMEM);
        }
        n++;
    }
    if ((rc = present__cell_buf(cells, &names, 0)) || (rc = present__cell_buf(cells, &images, 0)))
        return rc;
    return present__cell_buf(cells, &names, format_selector(json_get(job, "spec.selector"), &names));
}

#define PRINTER(g, k, cols, fn) { g, k, cols, sizeof(cols) / sizeof(cols[0]), fn }

static const struct present_printer printers[] = {
    PRINTER("", "Pod", pod_cols, pod_cells),
    PRINTER("", "Service", svc_cols, svc_cells),
    PRINTER("", "Node", node_cols, node_cells),
    PRINTER("", "Namespace", ns_cols, ns_cells),
    PRINTER("batch", "Job", job_cols, job_cells),
    PRINTER("networking.k8s.io", "NetworkPolicy", netpol_cols, netpol_cells),
};

const struct present_printer *present__builtin_printer(const struct reg_resource *res)
{
    if (!res->builtin)
        return NULL;
    for (size_t i = 0; i < sizeof(printers) / sizeof(printers[0]); i++)
        if (strcmp(printers[i].kind, res->kind) == 0 && strcmp(printers[i].group, res->group) == 0)
            return &printers[i];
    for (size_t i = 0; i < present_n_printers_misc; i++)
        if (strcmp(present_printers_misc[i].kind, res->kind) == 0 &&
            strcmp(present_printers_misc[i].group, res->group) == 0)
            return &present_printers_misc[i];
    return NULL;
}

/*
 * status.c - the RayCluster status as KubeRay v1.7's calculateStatus computes
 * it, as a pure function of the cluster (with its old status), its Pods and
 * its Services, plus the "did it change" test (InconsistentRayClusterStatus)
 * that decides whether reconcile.c writes /status at all.
 *
 * Rules kept exactly (raycluster_controller.go, utils/util.go):
 *  - state is sticky: "ready" only when the reconcile had no error, the number
 *    of Pods is desired workers + 1 and every Pod is Running (and Ready when it
 *    has a Ready condition); otherwise the old state stays. "suspended" when
 *    spec.suspend and no Pods are left. stateTransitionTimes[state] on change.
 *  - conditions follow meta.SetStatusCondition: lastTransitionTime moves only
 *    when the status flips; RayClusterProvisioned turns True once and stays
 *    (until a suspension); ReplicaFailure is set from the error's reason and
 *    removed after a clean reconcile (kept as is on other errors).
 *  - endpoints are merged into the old map (never pruned), from the head
 *    Service's ports: nodePort, else targetPort.
 *  - no head Service (or no clusterIP yet) is an error: no status is written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/raycluster/build.h"
#include "reconcilers/raycluster/raycluster.h"
#include "kobj/json_equal.h"

#define INT32_MAX_V 2147483647LL

const char *rc_err_reason(enum rc_err e)
{
    switch (e) {
    case RC_ERR_CREATE_HEAD: return "FailedCreateHeadPod";
    case RC_ERR_DELETE_HEAD: return "FailedDeleteHeadPod";
    case RC_ERR_CREATE_WORKER: return "FailedCreateWorkerPod";
    case RC_ERR_DELETE_WORKER: return "FailedDeleteWorkerPod";
    case RC_ERR_DELETE_ALL: return "FailedDeleteAllPods";
    default: return "";
    }
}

const char *rc_meta(const cJSON *obj, const char *field)
{
    const char *s = kobj_meta_str(obj, field);
    return s ? s : "";
}

const char *rc_pod_phase(const cJSON *pod)
{
    const char *p = kobj_str(kobj_get(pod, "status"), "phase");
    return p ? p : "";
}

static const cJSON *pod_ready_cond(const cJSON *pod)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, kobj_get(kobj_get(pod, "status"), "conditions")) {
        const char *t = kobj_str(c, "type");
        if (t && strcmp(t, "Ready") == 0)
            return c;
    }
    return NULL;
}

static bool rc_pod_running_ready(const cJSON *pod)
{
    if (strcmp(rc_pod_phase(pod), "Running") != 0)
        return false;
    const cJSON *c = pod_ready_cond(pod);
    const char *s = c ? kobj_str(c, "status") : NULL;
    return s && strcmp(s, "True") == 0;
}

/* CheckAllPodsRunning: some Pods, all Running, none with Ready != True. */
static bool all_pods_running(const cJSON *pods)
{
    if (cJSON_GetArraySize(pods) == 0)
        return false;
    const cJSON *p;
    cJSON_ArrayForEach(p, pods) {
        if (strcmp(rc_pod_phase(p), "Running") != 0)
            return false;
        const cJSON *c = pod_ready_cond(p);
        const char *s = c ? kobj_str(c, "status") : NULL;
        if (c && (!s || strcmp(s, "True") != 0))
            return false;
    }
    return true;
}

const cJSON *rc_cond_find(const cJSON *status, const char *type)
{
    return kobj_condition_find(status, type);
}

bool rc_cond_true(const cJSON *status, const char *type)
{
    const cJSON *c = rc_cond_find(status, type);
    const char *s = c ? kobj_str(c, "status") : NULL;
    return s && strcmp(s, "True") == 0;
}

static void set_str(cJSON *o, const char *k, const char *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    cJSON_AddStringToObject(o, k, v ? v : "");
}

/* meta.SetStatusCondition on status.conditions. */
static int cond_set(cJSON *status, const char *type, const char *st, const char *reason,
                    const char *message, const char *now)
{
    return kobj_condition_set(status, type, st, reason, message, now) ? 0 : -ENOMEM;
}

/* FindHeadPodReadyCondition. */
static int head_ready_cond(cJSON *status, const cJSON *head, const char *now)
{
    char reason[128] = "Unknown", message[1024] = "";
    const char *st = "False";
    const cJSON *c = pod_ready_cond(head);
    if (c) {
        const char *cs = kobj_str(c, "status"), *cr = kobj_str(c, "reason"), *cm = kobj_str(c, "message");
        st = cs && *cs ? cs : "False";
        snprintf(message, sizeof(message), "%s", cm ? cm : "");
        if (cr && *cr)
            snprintf(reason, sizeof(reason), "%s", cr);
        else if (strcmp(st, "True") == 0)
            snprintf(reason, sizeof(reason), "HeadPodRunningAndReady");
        if (cr && strcmp(cr, "ContainersNotReady") == 0) {
            /* a container's waiting/terminated reason says more */
            const cJSON *cst;
            cJSON_ArrayForEach(cst, kobj_get(kobj_get(head, "status"), "containerStatuses")) {
                const cJSON *state = kobj_get(cst, "state");
                const cJSON *w = kobj_get(state, "waiting"), *t = kobj_get(state, "terminated");
                const cJSON *which = w ? w : t;
                if (!which)
                    continue;
                const char *wr = kobj_str(which, "reason"), *wm = kobj_str(which, "message");
                const char *nm = kobj_str(cst, "name");
                size_t len = strlen(message);
                snprintf(message + len, sizeof(message) - len, "%s%s: %s", len ? "; " : "",
                         nm ? nm : "", wm ? wm : "");
                /* the API requires a non-empty reason: keep ContainersNotReady then */
                if (wr && *wr)
                    snprintf(reason, sizeof(reason), "%s", wr);
                break;
            }
        }
    }
    return cond_set(status, "HeadPodReady", st, reason, message, now);
}

static int64_t num(const cJSON *o, const char *k, int64_t dflt)
{
    const cJSON *v = kobj_get(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

static bool is_true(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(kobj_get(o, k));
}

static bool is_head_service(const cJSON *svc, const char *cluster)
{
    const char *c = kobj_label(svc, RC_LABEL_CLUSTER), *t = kobj_label(svc, RC_LABEL_NODE_TYPE);
    const char *id = kobj_label(svc, RC_LABEL_IDENTIFIER);
    char want[300];
    snprintf(want, sizeof(want), "%s-head", cluster);
    return c && t && id && strcmp(c, cluster) == 0 && strcmp(t, RC_NODE_HEAD) == 0 &&
           strcmp(id, want) == 0;
}

/* Endpoints merged into status.endpoints from the head Service's ports. */
static int merge_endpoints(cJSON *status, const cJSON *svc)
{
    cJSON *ep = cJSON_GetObjectItemCaseSensitive(status, "endpoints");
    const cJSON *port;
    cJSON_ArrayForEach(port, kobj_get(kobj_get(svc, "spec"), "ports")) {
        const char *name = kobj_str(port, "name");
        if (!name || !*name)
            continue;
        char val[64] = "";
        const cJSON *tp = kobj_get(port, "targetPort");
        int64_t np = num(port, "nodePort", 0);
        if (np != 0)
            snprintf(val, sizeof(val), "%" PRId64, np);
        else if (cJSON_IsNumber(tp) && tp->valuedouble != 0)
            snprintf(val, sizeof(val), "%" PRId64, (int64_t)tp->valuedouble);
        else if (cJSON_IsString(tp) && *tp->valuestring)
            snprintf(val, sizeof(val), "%s", tp->valuestring);
        else
            continue;
        if (!cJSON_IsObject(ep)) {
            cJSON_DeleteItemFromObjectCaseSensitive(status, "endpoints");
            if (!(ep = cJSON_AddObjectToObject(status, "endpoints")))
                return -ENOMEM;
        }
        set_str(ep, name, val);
    }
    return 0;
}

/* Worker replica totals over non-suspended groups. */
static void replica_totals(const cJSON *rc, int64_t *desired, int64_t *min, int64_t *max)
{
    *desired = *min = *max = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, kobj_get(kobj_get(rc, "spec"), "workerGroupSpecs")) {
        *desired += rc_worker_desired_replicas(g);
        if (is_true(g, "suspend"))
            continue;
        int64_t hosts = num(g, "numOfHosts", 1);
        *min += num(g, "minReplicas", 0) * hosts;
        *max += num(g, "maxReplicas", INT32_MAX_V) * hosts;
    }
    if (*max > INT32_MAX_V)
        *max = INT32_MAX_V;   /* SafeInt64ToInt32 */
}

static void set_int_omitempty(cJSON *o, const char *k, int64_t v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, k);
    if (v != 0)
        cJSON_AddNumberToObject(o, k, (double)v);
}

int rc_status_compute(const struct rc_status_in *in, cJSON **out)
{
    int rc = -EINVAL;
    if (!in || !cJSON_IsObject(in->rc) || !cJSON_IsArray(in->pods) ||
        !cJSON_IsArray(in->services) || !in->now || !out)
        return -EINVAL;
    const char *name = rc_meta(in->rc, "name");
    const cJSON *spec = kobj_get(in->rc, "spec"), *old = kobj_get(in->rc, "status");
    cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, 1) : cJSON_CreateObject();
    if (!st)
        return -ENOMEM;
    bool suspend = is_true(spec, "suspend");
    int npods = cJSON_GetArraySize(in->pods);

    if (in->err == RC_ERR_NONE)
        kobj_condition_remove(st, "ReplicaFailure");
    else if (*rc_err_reason(in->err) &&
             (rc = cond_set(st, "ReplicaFailure", "True", rc_err_reason(in->err),
                            in->err_message ? in->err_message : "", in->now)) < 0)
        goto fail;

    set_int_omitempty(st, "observedGeneration", num(kobj_get(in->rc, "metadata"), "generation", 0));

    int64_t ready = 0, avail = 0, desired, min, max;
    const cJSON *p, *head = NULL;
    int nheads = 0;
    cJSON_ArrayForEach(p, in->pods) {
        const char *t = kobj_label(p, RC_LABEL_NODE_TYPE);
        if (t && strcmp(t, RC_NODE_HEAD) == 0) {
            head = p;
            nheads++;
        }
        if (!t || strcmp(t, RC_NODE_WORKER) != 0)
            continue;
        if (rc_pod_running_ready(p))
            ready++;
        if (strcmp(rc_pod_phase(p), "Running") == 0)
            avail++;
    }
    replica_totals(in->rc, &desired, &min, &max);
    set_int_omitempty(st, "readyWorkerReplicas", ready);
    set_int_omitempty(st, "availableWorkerReplicas", avail);
    set_int_omitempty(st, "desiredWorkerReplicas", desired);
    set_int_omitempty(st, "minWorkerReplicas", min);
    set_int_omitempty(st, "maxWorkerReplicas", max);

    struct rc_resources res;
    memset(&res, 0, sizeof(res));
    if ((rc = rc_desired_resources(in->rc, &res)) < 0)
        goto fail;
    set_str(st, "desiredCPU", res.cpu[0] ? res.cpu : "0");
    set_str(st, "desiredMemory", res.memory[0] ? res.memory : "0");
    set_str(st, "desiredGPU", res.gpu[0] ? res.gpu : "0");
    set_str(st, "desiredTPU", res.tpu[0] ? res.tpu : "0");

    if (in->err == RC_ERR_NONE && npods == desired + 1 && all_pods_running(in->pods)) {
        set_str(st, "state", "ready");
        cJSON_DeleteItemFromObjectCaseSensitive(st, "reason");
    }

    if (nheads > 1) {
        rc = -EINVAL;   /* GetRayClusterHeadPod: more than one head Pod */
        goto fail;
    }
    if (!head)
        rc = cond_set(st, "HeadPodReady", "False", "HeadPodNotFound", "Head Pod not found", in->now);
    else
        rc = head_ready_cond(st, head, in->now);
    if (rc < 0)
        goto fail;

    /* the suspend state as the old conditions tell it */
    const char *sus = rc_cond_true(old, "RayClusterSuspending") ? "RayClusterSuspending" :
                      rc_cond_true(old, "RayClusterSuspended") ? "RayClusterSuspended" : "";
    if (!rc_cond_true(st, "RayClusterProvisioned") && strcmp(sus, "RayClusterSuspended") != 0) {
        if (all_pods_running(in->pods))
            rc = cond_set(st, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime",
                          "All Ray Pods are ready for the first time", in->now);
        else
            rc = cond_set(st, "RayClusterProvisioned", "False", "RayClusterPodsProvisioning",
                          "RayCluster Pods are being provisioned for first time", in->now);
        if (rc < 0)
            goto fail;
    }
    if (strcmp(sus, "RayClusterSuspending") == 0) {
        if (npods == 0 &&
            ((rc = cond_set(st, "RayClusterProvisioned", "False", "RayClusterPodsProvisioning",
                            "RayCluster has been suspended", in->now)) < 0 ||
             (rc = cond_set(st, "RayClusterSuspending", "False", "RayClusterSuspending", "",
                            in->now)) < 0 ||
             (rc = cond_set(st, "RayClusterSuspended", "True", "RayClusterSuspended", "",
                            in->now)) < 0))
            goto fail;
    } else if (strcmp(sus, "RayClusterSuspended") == 0) {
        if (!suspend && (rc = cond_set(st, "RayClusterSuspended", "False", "RayClusterSuspended",
                                       "", in->now)) < 0)
            goto fail;
    } else {
        if ((rc = cond_set(st, "RayClusterSuspended", "False", "RayClusterSuspended", "",
                           in->now)) < 0 ||
            (rc = cond_set(st, "RayClusterSuspending", suspend ? "True" : "False",
                           "RayClusterSuspending", "", in->now)) < 0)
            goto fail;
    }
    if (suspend && npods == 0)
        set_str(st, "state", "suspended");

    /* head Service: exactly one, with a clusterIP (KubeRay errors otherwise) */
    const cJSON *svc = NULL, *s;
    int nsvc = 0;
    cJSON_ArrayForEach(s, in->services) {
        if (is_head_service(s, name)) {
            svc = s;
            nsvc++;
        }
    }
    if (svc && (rc = merge_endpoints(st, svc)) < 0)
        goto fail;
    cJSON *hi = cJSON_CreateObject();
    if (!hi) {
        rc = -ENOMEM;
        goto fail;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(st, "head");
    cJSON_AddItemToObject(st, "head", hi);
    const char *pod_ip = head ? kobj_str(kobj_get(head, "status"), "podIP") : NULL;
    if (head) {
        if (pod_ip && *pod_ip)
            cJSON_AddStringToObject(hi, "podIP", pod_ip);
        cJSON_AddStringToObject(hi, "podName", rc_meta(head, "name"));
    }
    const char *cip = svc ? kobj_str(kobj_get(svc, "spec"), "clusterIP") : NULL;
    if (nsvc == 0) {
        rc = -ENOENT;
        goto fail;
    }
    if (nsvc > 1) {
        rc = -EINVAL;
        goto fail;
    }
    if (!cip || !*cip) {
        rc = -EAGAIN;
        goto fail;
    }
    const char *sip = strcmp(cip, "None") == 0 ? pod_ip : cip;
    if (sip && *sip)
        cJSON_AddStringToObject(hi, "serviceIP", sip);
    cJSON_AddStringToObject(hi, "serviceName", rc_meta(svc, "name"));

    set_str(st, "lastUpdateTime", in->now);
    const char *os = kobj_str(old, "state"), *ns = kobj_str(st, "state");
    os = os ? os : "";
    ns = ns ? ns : "";
    if (strcmp(os, ns) != 0) {
        cJSON *stt = cJSON_GetObjectItemCaseSensitive(st, "stateTransitionTimes");
        if (!cJSON_IsObject(stt)) {
            cJSON_DeleteItemFromObjectCaseSensitive(st, "stateTransitionTimes");
            stt = cJSON_AddObjectToObject(st, "stateTransitionTimes");
        }
        if (!stt) {
            rc = -ENOMEM;
            goto fail;
        }
        set_str(stt, ns, in->now);
    }
    *out = st;
    return 0;
fail:
    cJSON_Delete(st);
    return rc;
}

/* An empty object/array/string and an absent member are the same to the API. */
static const cJSON *norm(const cJSON *o, const char *k)
{
    const cJSON *v = kobj_get(o, k);
    if (!v || cJSON_IsNull(v) || ((cJSON_IsObject(v) || cJSON_IsArray(v)) && !v->child) ||
        (cJSON_IsString(v) && !*v->valuestring) || (cJSON_IsNumber(v) && v->valuedouble == 0))
        return NULL;
    return v;
}

int rc_status_changes(const cJSON *a, const cJSON *b, char *out, size_t cap)
{
    static const char *const fields[] = {
        "state", "reason", "readyWorkerReplicas", "availableWorkerReplicas",
        "desiredWorkerReplicas", "minWorkerReplicas", "maxWorkerReplicas",
        "endpoints", "head", "conditions",
    };
    int n = 0;
    size_t len = 0;
    if (out && cap)
        out[0] = '\0';
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (json_equal(norm(a, fields[i]), norm(b, fields[i])))
            continue;
        if (!out)
            return 1;
        n++;
        int w = snprintf(out + len, cap - len, "%s%s", len ? "," : "", fields[i]);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
        else
            out[len] = '\0';   /* whole names only */
    }
    return n;
}

bool rc_status_differs(const cJSON *a, const cJSON *b)
{
    return rc_status_changes(a, b, NULL, 0) > 0;
}

static bool str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static double count_of(const cJSON *st, const char *k)
{
    const cJSON *v = kobj_get(st, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

bool rc_status_progress_only(const cJSON *old, const cJSON *st)
{
    static const char *const firm[] = {
        "state", "reason", "desiredWorkerReplicas", "minWorkerReplicas", "maxWorkerReplicas",
        "endpoints",
    };
    for (size_t i = 0; i < sizeof(firm) / sizeof(firm[0]); i++)
        if (!json_equal(norm(old, firm[i]), norm(st, firm[i])))
            return false;
    /* the step that makes every desired worker ready is the one a client waits for (a
     * scale-up is served): it is news, not progress; the steps before it coalesce */
    double ready = count_of(st, "readyWorkerReplicas");
    if (ready == count_of(st, "desiredWorkerReplicas") && ready != count_of(old, "readyWorkerReplicas"))
        return false;
    const cJSON *oc = kobj_get(old, "conditions"), *nc = kobj_get(st, "conditions"), *c, *o;
    if (cJSON_GetArraySize(oc) != cJSON_GetArraySize(nc))
        return false;
    cJSON_ArrayForEach(c, nc) {
        bool same = false;
        cJSON_ArrayForEach(o, oc) {
            if (str_eq(kobj_str(o, "type"), kobj_str(c, "type"))) {
                same = str_eq(kobj_str(o, "status"), kobj_str(c, "status"));
                break;
            }
        }
        if (!same)
            return false;   /* a condition appeared or flipped */
    }
    return true;
}

/*
 * binding.c - POST pods/NAME/binding, as the real BindingREST (pkg/registry/core/pod/
 * storage): a Binding sets spec.nodeName of an unbound Pod, merges the Binding's
 * annotations into the Pod's and sets PodScheduled=True, in one write that leaves
 * managedFields alone (the real one writes storage directly). The checks are made on the
 * snapshot the write is conditioned on (its resourceVersion), so a racing write sends
 * them round again, as the real GuaranteedUpdate does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kobj/kobj.h"
#include "kubesim/api/internal.h"

/* Attempts before a Pod that keeps changing under the binding is answered 409. */
#define BINDING_TRIES 8

static int reply_conflict(struct server_req *req, const char *kind, const char *name,
                          const char *why)
{
    char msg[1100];

    snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s \"%.253s\": %s", kind, name, why);
    return server_reply_status(req, 409, "Conflict", msg);
}

/* ValidatePodBinding: its errors come back as a plain aggregate, which the real server
 * answers 500 with no reason (it is not an API status). */
static int check_target(struct server_req *req, const cJSON *b)
{
    const cJSON *target = kobj_get(b, "target");
    const char *kind = kobj_str(target, "kind"), *node = kobj_str(target, "name");
    char kerr[300] = "", msg[700];
    bool no_name = !node || !node[0];

    if (kind && kind[0] && strcmp(kind, "Node"))
        snprintf(kerr, sizeof(kerr), "target.kind: Unsupported value: \"%.100s\": supported "
                 "values: \"Node\", \"<empty>\"", kind);
    if (!kerr[0] && !no_name)
        return 0;
    if (kerr[0] && no_name)
        snprintf(msg, sizeof(msg), "[%s, target.name: Required value]", kerr);
    else
        snprintf(msg, sizeof(msg), "%s", kerr[0] ? kerr : "target.name: Required value");
    server_reply_status(req, 500, "", msg);
    return -EINVAL;
}

/* The Pod's conditions with PodScheduled set True (podutil.UpdatePodCondition: the
 * transition time moves only when the status does). */
static cJSON *scheduled_conditions(const cJSON *pod)
{
    cJSON *list = cJSON_CreateArray(), *c;
    const cJSON *e;
    bool found = false;
    char now[32];
    time_t t = time(NULL);
    struct tm tm;

    if (!list)
        return NULL;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_ArrayForEach(e, kobj_get(kobj_get(pod, "status"), "conditions")) {
        const char *type = kobj_str(e, "type"), *st = kobj_str(e, "status");
        if (!type || strcmp(type, "PodScheduled")) {
            cJSON_AddItemToArray(list, cJSON_Duplicate(e, true));
            continue;
        }
        found = true;
        c = cJSON_CreateObject();
        cJSON_AddItemToArray(list, c);
        cJSON_AddStringToObject(c, "type", "PodScheduled");
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddNullToObject(c, "lastProbeTime");
        if (st && !strcmp(st, "True") && kobj_str(e, "lastTransitionTime"))
            cJSON_AddStringToObject(c, "lastTransitionTime", kobj_str(e, "lastTransitionTime"));
        else
            cJSON_AddStringToObject(c, "lastTransitionTime", now);
    }
    if (!found) {
        c = cJSON_CreateObject();
        cJSON_AddItemToArray(list, c);
        cJSON_AddStringToObject(c, "type", "PodScheduled");
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddNullToObject(c, "lastProbeTime");
        cJSON_AddStringToObject(c, "lastTransitionTime", now);
    }
    return list;
}

/* The merge patch that binds pod (its snapshot at rv) to node; NULL: out of memory. */
static cJSON *binding_patch(const cJSON *pod, const cJSON *b, const char *node, uint64_t rv)
{
    cJSON *patch = cJSON_CreateObject(), *md, *spec, *status, *conds = scheduled_conditions(pod);
    const cJSON *an = kobj_get(kobj_get(b, "metadata"), "annotations");
    char rvs[24];

    snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
    if (!patch || !conds || !(md = cJSON_AddObjectToObject(patch, "metadata")) ||
        !cJSON_AddStringToObject(md, "resourceVersion", rvs) ||
        !(spec = cJSON_AddObjectToObject(patch, "spec")) ||
        !cJSON_AddStringToObject(spec, "nodeName", node) ||
        !(status = cJSON_AddObjectToObject(patch, "status"))) {
        cJSON_Delete(patch);
        cJSON_Delete(conds);
        return NULL;
    }
    cJSON_AddItemToObject(status, "conditions", conds);
    if (cJSON_IsObject(an) && an->child)
        cJSON_AddItemToObject(md, "annotations", cJSON_Duplicate(an, true));
    return patch;
}

/* 0 when pod may be bound by b, else the reply is sent and -EBUSY returned. */
static int check_pod(struct server_req *req, const struct store_obj *o, const cJSON *b)
{
    const cJSON *pod = store_obj_json(o), *bmd = kobj_get(b, "metadata");
    const char *uid = kobj_str(bmd, "uid"), *rv = kobj_str(bmd, "resourceVersion");
    const char *bound = kobj_str(kobj_get(pod, "spec"), "nodeName");
    char why[600];

    if (uid && uid[0] && strcmp(uid, o->uid)) {
        snprintf(why, sizeof(why), "Precondition failed: UID in precondition: %.64s, UID in "
                 "object meta: %s", uid, o->uid);
        return reply_conflict(req, "pods", o->name, why), -EBUSY;
    }
    if (rv && rv[0] && strtoull(rv, NULL, 10) != o->rv) {
        snprintf(why, sizeof(why), "Precondition failed: ResourceVersion in precondition: "
                 "%.32s, ResourceVersion in object meta: %llu", rv, (unsigned long long)o->rv);
        return reply_conflict(req, "pods", o->name, why), -EBUSY;
    }
    if (kobj_str(kobj_get(pod, "metadata"), "deletionTimestamp")) {
        snprintf(why, sizeof(why), "pod %s is being deleted, cannot be assigned to a host", o->name);
        return reply_conflict(req, "pods/binding", o->name, why), -EBUSY;
    }
    if (bound && bound[0]) {
        snprintf(why, sizeof(why), "pod %s is already assigned to node \"%.253s\"", o->name, bound);
        return reply_conflict(req, "pods/binding", o->name, why), -EBUSY;
    }
    if (cJSON_GetArraySize(kobj_get(kobj_get(pod, "spec"), "schedulingGates")) > 0) {
        snprintf(why, sizeof(why), "pod %s has non-empty .spec.schedulingGates", o->name);
        return reply_conflict(req, "pods/binding", o->name, why), -EBUSY;
    }
    return 0;
}

int api__binding_create(struct server_req *req, const struct reg_resource *res, cJSON *b,
                        bool dry_run)
{
    const struct route *r = req->route;
    const char *name = kobj_str(kobj_get(b, "metadata"), "name");
    struct store_write_opts w = { .dry_run = dry_run };
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    cJSON *reply;
    int rc = -EBUSY;

    if (!name || strcmp(name, r->name)) {
        server_reply_status(req, 400, "BadRequest", "name in URL does not match name in Binding object");
        goto out;
    }
    if (check_target(req, b) < 0)
        goto out;
    for (int attempt = 0; attempt < BINDING_TRIES && rc == -EBUSY; attempt++) {
        cJSON *patch;
        store_status_clear(&st);
        memset(&st, 0, sizeof(st));
        if (store_get(req->srv->store, res, r->ns, r->name, &o, &st) < 0) {
            api__reply_store_status(req, &st);
            goto out;
        }
        if (check_pod(req, o, b) < 0)
            goto out;
        patch = binding_patch(store_obj_json(o), b, kobj_str(kobj_get(b, "target"), "name"), o->rv);
        store_obj_unref(o);
        o = NULL;
        store_status_clear(&st);
        memset(&st, 0, sizeof(st));
        /* the resourceVersion in the patch is a precondition: -EBUSY when another write
         * came between, and the checks are made again on the new snapshot */
        rc = store_patch_json(req->srv->store, res, r->ns, r->name, "binding", PATCH_MERGE, patch,
                              &w, NULL, NULL, &st);
    }
    if (rc < 0) {
        api__reply_store_status(req, &st);
        goto out;
    }
    if (!(reply = cJSON_CreateObject())) {
        server_reply_status(req, 500, "InternalError", "out of memory");
        goto out;
    }
    cJSON_AddStringToObject(reply, "kind", "Status");
    cJSON_AddStringToObject(reply, "apiVersion", "v1");
    cJSON_AddObjectToObject(reply, "metadata");
    cJSON_AddStringToObject(reply, "status", "Success");
    cJSON_AddNumberToObject(reply, "code", 201);
    {
        char *txt = cJSON_PrintUnformatted(reply);
        cJSON_Delete(reply);
        if (!txt)
            server_reply_status(req, 500, "InternalError", "out of memory");
        else
            server_reply_take(req, 201, "application/json", txt, strlen(txt));
    }
out:
    store_obj_unref(o);
    store_status_clear(&st);
    cJSON_Delete(b);
    return 0;
}

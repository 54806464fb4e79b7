/*
 * build_service.c - the Services of a RayCluster (common/service.go): the head
 * Service (generated, or the user's headService merged as KubeRay merges it),
 * the serve Service asked for with ray.io/enable-serve-service, and the
 * headless Service of multi-host worker groups.
 *
 * Two deliberate differences, both in docs/raycluster.md: ports are sorted by
 * name on every path (KubeRay appends a Go map's ports in random order to a
 * custom headService and to the serve Service), and the serve and headless
 * Services also carry app.kubernetes.io/created-by=kuberay-operator, the label
 * rayop's watcher selects Services by.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/raycluster/internal.h"

struct svc_port {
    char name[128];
    int port;
};

/* getServicePorts: the head Ray container's ports by name (unnamed -> "<port>-port",
 * a repeated name keeps the last), KubeRay's five defaults when it lists none, and
 * metrics:8080 always. Sorted by name. */
static int service_ports(const cJSON *rc, struct svc_port **out, size_t *n)
{
    static const struct svc_port dflt[] = {
        { "client", 10001 }, { "dashboard", 8265 }, { "gcs-server", 6379 },
        { "metrics", 8080 }, { "serve", 8000 },
    };
    const cJSON *ports = kobj_get(raycluster__group_container0(raycluster__head_group(rc)), "ports"), *p;
    size_t cap = (size_t)(cJSON_IsArray(ports) ? cJSON_GetArraySize(ports) : 0) + 6, k = 0;
    struct svc_port *v = calloc(cap, sizeof(*v));
    bool metrics = false;
    if (!v)
        return -ENOMEM;
    cJSON_ArrayForEach(p, (cJSON_IsArray(ports) ? ports : NULL)) {
        struct svc_port sp;
        const char *name = kobj_str(p, "name");
        size_t i;
        if (!raycluster__json_has_int(p, "containerPort"))
            continue;
        sp.port = (int)raycluster__json_int(p, "containerPort", 0);
        if (name && *name)
            snprintf(sp.name, sizeof(sp.name), "%s", name);
        else
            snprintf(sp.name, sizeof(sp.name), "%d-port", sp.port);
        for (i = 0; i < k && strcmp(v[i].name, sp.name); i++)
            ;
        v[i] = sp;
        if (i == k)
            k++;
    }
    if (k == 0) {
        memcpy(v, dflt, sizeof(dflt));
        k = sizeof(dflt) / sizeof(dflt[0]);
    }
    for (size_t i = 0; i < k; i++)
        metrics |= !strcmp(v[i].name, "metrics");
    if (!metrics) {
        snprintf(v[k].name, sizeof(v[k].name), "metrics");
        v[k++].port = 8080;
    }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1].name, v[j].name) > 0; j--) {
            struct svc_port t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *out = v;
    *n = k;
    return 0;
}

static bool serving_port(const char *name)
{
    return !strcmp(name, "serve") || !strncmp(name, "serve-", 6);
}

static void add_port(struct rcb *b, cJSON *ports, const struct svc_port *sp, bool app_protocol)
{
    cJSON *p = cJSON_CreateObject();
    if (!p) {
        b->err = -ENOMEM;
        return;
    }
    raycluster__build_append(b, ports, p);
    raycluster__build_set_str(b, p, "name", sp->name);
    raycluster__build_set_num(b, p, "port", sp->port);
    if (app_protocol)
        raycluster__build_set_str(b, p, "appProtocol", "tcp");
}

static void copy_string_map(struct rcb *b, cJSON *dst, const cJSON *src)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, (cJSON_IsObject(src) ? src : NULL))
        if (e->string && cJSON_IsString(e))
            raycluster__build_set_str(b, dst, e->string, e->valuestring);
}

static cJSON *finish(struct rcb *b, cJSON *svc, const cJSON *rc, int *err)
{
    raycluster__build_owner_ref(b, svc, rc);
    if (b->err) {
        cJSON_Delete(svc);
        if (err)
            *err = b->err;
        return NULL;
    }
    return svc;
}

cJSON *rc_build_head_service(const cJSON *rc, const struct rc_build_opts *o, int *err)
{
    struct rc_build_opts dflt;
    struct rcb b = { 0 };
    const cJSON *head = raycluster__head_group(rc);
    const cJSON *custom = kobj_get(head, "headService");
    const char *type = kobj_str(head, "serviceType");
    const char *app = kobj_str(raycluster__json_path(head, "template", "metadata", "labels", NULL),
                              RC_LABEL_APP_NAME);
    const cJSON *user_ann = kobj_get(raycluster__spec(rc), "headServiceAnnotations");
    struct svc_port *ports = NULL;
    size_t nports = 0;
    char name[300], id[300], tmp[300];
    cJSON *svc = NULL, *meta, *spec, *sel, *labels, *arr;
    int r;
    if (!o) {
        rc_build_opts_default(&dflt);
        o = &dflt;
    }
    if (!raycluster__group_container0(head)) {
        if (err)
            *err = -EINVAL;
        return NULL;
    }
    if ((r = rc_head_service_name(rc, name, sizeof(name))) < 0) {
        if (err)
            *err = r;
        return NULL;
    }
    if ((r = service_ports(rc, &ports, &nports)) < 0) {
        if (err)
            *err = r;
        return NULL;
    }
    svc = cJSON_IsObject(custom) ? raycluster__build_dup(&b, custom) : raycluster__build_dup(&b, NULL);
    raycluster__build_set_str(&b, svc, "apiVersion", "v1");
    raycluster__build_set_str(&b, svc, "kind", "Service");
    meta = raycluster__build_obj(&b, svc, "metadata");
    spec = raycluster__build_obj(&b, svc, "spec");
    /* The selector: HeadServiceLabels, app.kubernetes.io/name taken from the head
     * template when it sets one. The Service's own labels are the same set. */
    snprintf(tmp, sizeof(tmp), "%s-head", raycluster__name(rc));
    raycluster__check_label(tmp, id, sizeof(id));
    if (!b.err && !(sel = cJSON_CreateObject()))
        b.err = -ENOMEM;
    if (!b.err) {
        raycluster__build_set(&b, spec, "selector", sel);
        raycluster__build_set_str(&b, sel, RC_LABEL_CLUSTER, raycluster__name(rc));
        raycluster__build_set_str(&b, sel, RC_LABEL_NODE_TYPE, RC_NODE_HEAD);
        raycluster__build_set_str(&b, sel, RC_LABEL_IDENTIFIER, id);
        raycluster__build_set_str(&b, sel, RC_LABEL_APP_NAME, app ? app : RC_APP_NAME);
        raycluster__build_set_str(&b, sel, RC_LABEL_CREATED_BY, RC_CREATED_BY);
        labels = raycluster__build_obj(&b, meta, "labels");
        copy_string_map(&b, labels, sel);
    }
    if (cJSON_IsObject(user_ann) && cJSON_GetArraySize(user_ann) > 0)
        copy_string_map(&b, raycluster__build_obj(&b, meta, "annotations"), user_ann);
    arr = raycluster__build_arr(&b, spec, "ports");
    for (size_t i = 0; i < nports; i++)
        add_port(&b, arr, &ports[i], true);
    free(ports);
    if (!kobj_str(meta, "name") || !*kobj_str(meta, "name"))
        raycluster__build_set_str(&b, meta, "name", name);
    raycluster__build_set_str(&b, meta, "namespace", raycluster__namespace(rc));
    if ((!kobj_str(spec, "type") || !*kobj_str(spec, "type")) && type && *type)
        raycluster__build_set_str(&b, spec, "type", type);
    if (!cJSON_IsObject(custom) && !o->enable_head_cluster_ip_service &&
        (!type || !*type || !strcmp(type, "ClusterIP"))) {
        /* Headless, and published before the head is ready: workers and drivers
         * resolve the head through it while it starts. */
        raycluster__build_set_str(&b, spec, "clusterIP", "None");
        raycluster__build_set_bool(&b, spec, "publishNotReadyAddresses", true);
    }
    return finish(&b, svc, rc, err);
}

cJSON *rc_build_serve_service(const cJSON *rc, const struct rc_build_opts *o, int *err)
{
    struct rcb b = { 0 };
    const char *on = kobj_annotation(rc, RC_ANN_ENABLE_SERVE_SERVICE);
    const char *type = kobj_str(raycluster__head_group(rc), "serviceType");
    struct svc_port *ports = NULL;
    size_t nports = 0, nserve = 0;
    char name[300], tmp[300];
    cJSON *svc, *meta, *labels, *spec, *arr;
    int r;
    (void)o;
    if (!on || strcmp(on, "true"))
        return NULL;
    if (!raycluster__group_container0(raycluster__head_group(rc))) {
        if (err)
            *err = -EINVAL;
        return NULL;
    }
    if ((r = rc_serve_service_name(rc, name, sizeof(name))) < 0 ||
        (r = service_ports(rc, &ports, &nports)) < 0) {
        if (err)
            *err = r;
        return NULL;
    }
    for (size_t i = 0; i < nports; i++)
        nserve += serving_port(ports[i].name);
    if (nserve == 0) {
        /* KubeRay fails the reconcile: "Please specify a port named 'serve' ...". */
        free(ports);
        if (err)
            *err = -ENOENT;
        return NULL;
    }
    svc = raycluster__build_object(&b, "v1", "Service", name, raycluster__namespace(rc), &meta);
    labels = raycluster__build_obj(&b, meta, "labels");
    snprintf(tmp, sizeof(tmp), "%s-serve", raycluster__name(rc));
    raycluster__build_set_str(&b, labels, RC_LABEL_ORIGINATED_CR_NAME, raycluster__name(rc));
    raycluster__build_set_str(&b, labels, RC_LABEL_ORIGINATED_CRD, "RayCluster");
    raycluster__build_set_str(&b, labels, RC_LABEL_SERVE, tmp);
    raycluster__build_set_str(&b, labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    spec = raycluster__build_obj(&b, svc, "spec");
    raycluster__build_set_str(&b, raycluster__build_obj(&b, spec, "selector"), RC_LABEL_CLUSTER, raycluster__name(rc));
    arr = raycluster__build_arr(&b, spec, "ports");
    for (size_t i = 0; i < nports; i++)
        if (serving_port(ports[i].name))
            add_port(&b, arr, &ports[i], false);
    free(ports);
    if (type && *type)
        raycluster__build_set_str(&b, spec, "type", type);
    return finish(&b, svc, rc, err);
}

cJSON *rc_build_headless_service(const cJSON *rc, const struct rc_build_opts *o, int *err)
{
    struct rcb b = { 0 };
    const cJSON *g;
    bool multi = false;
    char name[300];
    cJSON *svc, *meta, *spec, *sel;
    int r;
    (void)o;
    cJSON_ArrayForEach(g, kobj_get(raycluster__spec(rc), "workerGroupSpecs"))
        multi |= raycluster__group_num_hosts(g) > 1;
    if (!multi)
        return NULL;
    if ((r = rc_headless_service_name(rc, name, sizeof(name))) < 0) {
        if (err)
            *err = r;
        return NULL;
    }
    svc = raycluster__build_object(&b, "v1", "Service", name, raycluster__namespace(rc), &meta);
    raycluster__build_set_str(&b, raycluster__build_obj(&b, meta, "labels"), RC_LABEL_HEADLESS_SVC, raycluster__name(rc));
    raycluster__build_set_str(&b, raycluster__build_obj(&b, meta, "labels"), RC_LABEL_CREATED_BY, RC_CREATED_BY);
    spec = raycluster__build_obj(&b, svc, "spec");
    raycluster__build_set_str(&b, spec, "clusterIP", "None");
    sel = raycluster__build_obj(&b, spec, "selector");
    raycluster__build_set_str(&b, sel, RC_LABEL_CLUSTER, raycluster__name(rc));
    raycluster__build_set_str(&b, sel, RC_LABEL_NODE_TYPE, RC_NODE_WORKER);
    raycluster__build_set_str(&b, spec, "type", "ClusterIP");
    raycluster__build_set_bool(&b, spec, "publishNotReadyAddresses", true);
    return finish(&b, svc, rc, err);
}

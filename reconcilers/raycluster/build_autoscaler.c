/*
 * build_autoscaler.c - the in-tree autoscaler: its sidecar container in the head
 * Pod (BuildAutoscalerContainer + mergeAutoscalerOverrides), the ServiceAccount,
 * Role and RoleBinding it runs with (common/rbac.go), and the token-auth env
 * vars shared by the Ray, wait-gcs-ready and autoscaler containers
 * (SetContainerTokenAuthEnvVars).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reconcilers/raycluster/internal.h"

#define AUTOSCALER_START_CMD \
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"

static bool mount_named(const cJSON *container, const char *name)
{
    return kobj_find(kobj_get(container, "volumeMounts"), "name", name) != NULL;
}

void raycluster__auth_env(struct rcb *b, const cJSON *rc, cJSON *container)
{
    const cJSON *auth = kobj_get(raycluster__spec(rc), "authOptions");
    if (b->err)
        return;
    if (!raycluster__env_exists(container, "RAY_AUTH_MODE"))
        raycluster__build_env_value(b, container, "RAY_AUTH_MODE", "token");
    if (raycluster__k8s_token_auth(rc)) {
        if (!raycluster__env_exists(container, "RAY_ENABLE_K8S_TOKEN_AUTH"))
            raycluster__build_env_value(b, container, "RAY_ENABLE_K8S_TOKEN_AUTH", "true");
        if (!mount_named(container, "ray-token"))
            raycluster__build_mount(b, container, "ray-token",
                                    "/var/run/secrets/ray.io/serviceaccount", true);
        return;
    }
    if (!raycluster__env_exists(container, "RAY_AUTH_TOKEN")) {
        char secret[300];
        const char *sn = kobj_str(auth, "secretName");
        cJSON *e, *ref;
        if (sn && *sn)
            snprintf(secret, sizeof(secret), "%s", sn);
        else
            raycluster__check_name(raycluster__name(rc), secret, sizeof(secret));
        e = raycluster__build_push(b, container, "env");
        raycluster__build_set_str(b, e, "name", "RAY_AUTH_TOKEN");
        ref = raycluster__build_obj(b, raycluster__build_obj(b, e, "valueFrom"), "secretKeyRef");
        raycluster__build_set_str(b, ref, "name", secret);
        raycluster__build_set_str(b, ref, "key", "auth_token");
    }
}

int rc_auth_env_for(const cJSON *rc, cJSON *container)
{
    struct rcb b = { 0 };
    if (!raycluster__auth_token_enabled(rc))
        return 0;
    raycluster__auth_env(&b, rc, container);
    return b.err;
}

/* Appends a copy of each element of src (an array) to dst[key]. */
static void append_all(struct rcb *b, cJSON *dst, const char *key, const cJSON *src)
{
    const cJSON *e;
    if (!cJSON_IsArray(src) || cJSON_GetArraySize(src) == 0)
        return;
    cJSON *arr = raycluster__build_arr(b, dst, key);
    cJSON_ArrayForEach(e, src)
        raycluster__build_append(b, arr, raycluster__build_dup(b, e));
}

void raycluster__autoscaler_container(struct rcb *b, const cJSON *rc, const struct rc_build_opts *o,
                                      cJSON *pod_spec)
{
    const cJSON *ao = kobj_get(raycluster__spec(rc), "autoscalerOptions");
    const char *image = kobj_str(raycluster__group_container0(raycluster__head_group(rc)), "image");
    const char *shell[3] = { "/bin/bash", o->enable_login_shell ? "-cl" : "-c", "--" };
    const char *args[1] = { AUTOSCALER_START_CMD };
    cJSON *c;
    if (!(c = raycluster__build_push(b, pod_spec, "containers")))
        return;
    raycluster__build_set_str(b, c, "name", RC_AUTOSCALER_CONTAINER);
    /* The Ray image by default; the operator-wide image only when the Ray container
     * names none (which the API server would reject anyway). */
    if (image && *image)
        raycluster__build_set_str(b, c, "image", image);
    else if (o->default_autoscaler_image[0])
        raycluster__build_set_str(b, c, "image", o->default_autoscaler_image);
    raycluster__build_set_str(b, c, "imagePullPolicy", "IfNotPresent");
    raycluster__build_env_fieldref(b, c, "RAY_CLUSTER_NAME", "metadata.labels['" RC_LABEL_CLUSTER "']");
    raycluster__build_env_fieldref(b, c, "RAY_CLUSTER_NAMESPACE", "metadata.namespace");
    raycluster__build_env_fieldref(b, c, "RAY_HEAD_POD_NAME", "metadata.name");
    raycluster__build_env_value(b, c, "KUBERAY_CRD_VER", "v1");
    raycluster__build_env_value(b, c, "KUBERAY_GEN_AUTOSCALER_START_CMD", AUTOSCALER_START_CMD);
    raycluster__build_set(b, c, "command", raycluster__build_str_array(b, shell, 3));
    raycluster__build_set(b, c, "args", raycluster__build_str_array(b, args, 1));
    raycluster__build_set(b, c, "resources", raycluster__build_fixed_resources(b, "500m", "512Mi"));
    if (raycluster__auth_token_enabled(rc))
        raycluster__auth_env(b, rc, c);
    if (rc_tls_enabled(rc))
        raycluster__tls_container(b, c);
    if (!cJSON_IsObject(ao))
        return;
    /* mergeAutoscalerOverrides */
    if (cJSON_IsObject(kobj_get(ao, "resources")))
        raycluster__build_set(b, c, "resources", raycluster__build_dup(b, kobj_get(ao, "resources")));
    if (kobj_str(ao, "image"))
        raycluster__build_set_str(b, c, "image", kobj_str(ao, "image"));
    if (kobj_str(ao, "imagePullPolicy"))
        raycluster__build_set_str(b, c, "imagePullPolicy", kobj_str(ao, "imagePullPolicy"));
    append_all(b, c, "env", kobj_get(ao, "env"));
    append_all(b, c, "envFrom", kobj_get(ao, "envFrom"));
    append_all(b, c, "volumeMounts", kobj_get(ao, "volumeMounts"));
    if (cJSON_IsObject(kobj_get(ao, "securityContext")))
        raycluster__build_set(b, c, "securityContext", raycluster__build_dup(b, kobj_get(ao, "securityContext")));
    if (cJSON_IsArray(kobj_get(ao, "command")) && cJSON_GetArraySize(kobj_get(ao, "command")) > 0)
        raycluster__build_set(b, c, "command", raycluster__build_dup(b, kobj_get(ao, "command")));
    if (cJSON_IsArray(kobj_get(ao, "args")) && cJSON_GetArraySize(kobj_get(ao, "args")) > 0)
        raycluster__build_set(b, c, "args", raycluster__build_dup(b, kobj_get(ao, "args")));
}

static cJSON *rbac_object(struct rcb *b, const cJSON *rc, const char *api, const char *kind,
                          const char *name)
{
    cJSON *o = cJSON_CreateObject(), *meta, *labels;
    if (!o) {
        b->err = -ENOMEM;
        return NULL;
    }
    raycluster__build_set_str(b, o, "apiVersion", api);
    raycluster__build_set_str(b, o, "kind", kind);
    meta = raycluster__build_obj(b, o, "metadata");
    raycluster__build_set_str(b, meta, "name", name);
    raycluster__build_set_str(b, meta, "namespace", raycluster__namespace(rc));
    labels = raycluster__build_obj(b, meta, "labels");
    raycluster__build_set_str(b, labels, RC_LABEL_CLUSTER, raycluster__name(rc));
    raycluster__build_set_str(b, labels, RC_LABEL_APP_NAME, RC_APP_NAME);
    raycluster__build_set_str(b, labels, RC_LABEL_CREATED_BY, RC_CREATED_BY);
    raycluster__build_owner_ref(b, o, rc);
    return o;
}

static void add_rule(struct rcb *b, cJSON *rules, const char *group, const char *res,
                     const char *const *verbs, size_t nverbs)
{
    cJSON *r = cJSON_CreateObject();
    if (!r) {
        b->err = -ENOMEM;
        return;
    }
    raycluster__build_append(b, rules, r);
    raycluster__build_set(b, r, "apiGroups", raycluster__build_str_array(b, &group, 1));
    raycluster__build_set(b, r, "resources", raycluster__build_str_array(b, &res, 1));
    raycluster__build_set(b, r, "verbs", raycluster__build_str_array(b, verbs, nverbs));
}

int rc_build_autoscaler_rbac(const cJSON *rc, cJSON **sa, cJSON **role, cJSON **binding)
{
    static const char *const pod_verbs[] = { "get", "list", "watch", "patch" };
    static const char *const patch[] = { "patch" };
    static const char *const rc_verbs[] = { "get", "patch" };
    struct rcb b = { 0 };
    const char *user_sa = kobj_str(raycluster__json_path(raycluster__head_group(rc), "template", "spec", NULL),
                                  "serviceAccountName");
    char sa_name[300], role_name[300];
    cJSON *s = NULL, *r = NULL, *rb = NULL, *subj, *ref;
    *sa = *role = *binding = NULL;
    if (!rc_autoscaling_enabled(rc))
        return 0;
    /* GetHeadGroupServiceAccountName; the references are CheckName'd as the Pod's is. */
    if (!user_sa || !*user_sa)
        s = rbac_object(&b, rc, "v1", "ServiceAccount", raycluster__name(rc));
    raycluster__check_name(user_sa && *user_sa ? user_sa : raycluster__name(rc), sa_name, sizeof(sa_name));
    raycluster__check_name(raycluster__name(rc), role_name, sizeof(role_name));
    r = rbac_object(&b, rc, "rbac.authorization.k8s.io/v1", "Role", raycluster__name(rc));
    cJSON *rules = raycluster__build_arr(&b, r, "rules");
    add_rule(&b, rules, "", "pods", pod_verbs, 4);
    add_rule(&b, rules, "", "pods/resize", patch, 1);
    add_rule(&b, rules, "ray.io", "rayclusters", rc_verbs, 2);
    rb = rbac_object(&b, rc, "rbac.authorization.k8s.io/v1", "RoleBinding", raycluster__name(rc));
    if (!b.err && !(subj = cJSON_CreateObject()))
        b.err = -ENOMEM;
    if (!b.err) {
        raycluster__build_append(&b, raycluster__build_arr(&b, rb, "subjects"), subj);
        raycluster__build_set_str(&b, subj, "kind", "ServiceAccount");
        raycluster__build_set_str(&b, subj, "name", sa_name);
        raycluster__build_set_str(&b, subj, "namespace", raycluster__namespace(rc));
        ref = raycluster__build_obj(&b, rb, "roleRef");
        raycluster__build_set_str(&b, ref, "apiGroup", "rbac.authorization.k8s.io");
        raycluster__build_set_str(&b, ref, "kind", "Role");
        raycluster__build_set_str(&b, ref, "name", role_name);
    }
    if (b.err) {
        cJSON_Delete(s);
        cJSON_Delete(r);
        cJSON_Delete(rb);
        return b.err;
    }
    *sa = s;
    *role = r;
    *binding = rb;
    return 0;
}

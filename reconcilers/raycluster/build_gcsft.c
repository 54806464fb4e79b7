/*
 * build_gcsft.c - GCS fault tolerance with an external Redis: the head and
 * worker settings (configureGCSFaultTolerance, configureRedisFT in common/pod.go)
 * and the Redis cleanup Job KubeRay runs when such a cluster is deleted
 * (buildRedisCleanupJob in raycluster_controller.go).
 *
 * The embedded RocksDB backend (gate GCSFaultToleranceEmbeddedStorage, off by default):
 * the head's env, volume and mount (configureEmbeddedFT) and the PVC the store lives on
 * (common/gcs_ft.go BuildGCSStoragePVC); reconcile.c creates the PVC.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/quantity.h"
#include "reconcilers/raycluster/internal.h"

/* {name, value?, valueFrom?} from a RedisCredential {value, valueFrom}. */
static void env_credential(struct rcb *b, cJSON *container, const char *name, const cJSON *cred)
{
    cJSON *e = raycluster__build_push(b, container, "env");
    const char *v = kobj_str(cred, "value");
    raycluster__build_set_str(b, e, "name", name);
    if (v && *v)
        raycluster__build_set_str(b, e, "value", v);
    if (cJSON_IsObject(kobj_get(cred, "valueFrom")))
        raycluster__build_set(b, e, "valueFrom", raycluster__build_dup(b, kobj_get(cred, "valueFrom")));
}

bool rc_gcs_ft_embedded(const cJSON *rc)
{
    const char *be = kobj_str(kobj_get(raycluster__spec(rc), "gcsFaultToleranceOptions"), "backend");
    return be && !strcmp(be, "rocksdb");
}

static const cJSON *gcs_storage(const cJSON *rc)
{
    return kobj_get(kobj_get(raycluster__spec(rc), "gcsFaultToleranceOptions"), "storage");
}

int rc_gcs_pvc_name(const cJSON *rc, char *out, size_t cap)
{
    const char *claim = kobj_str(gcs_storage(rc), "claimName");
    int n = claim && *claim ? snprintf(out, cap, "%s", claim)
                            : snprintf(out, cap, "%s-gcs-pvc", raycluster__name(rc));
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

bool rc_gcs_pvc_retain(const cJSON *rc)
{
    const char *p = kobj_str(gcs_storage(rc), "deletionPolicy");
    return p && !strcmp(p, "Retain");
}

/* storage.size as Go's Quantity.String() prints it ("1Gi"; "1024Mi" -> "1Gi"); 1Gi when
 * absent. -EINVAL for what is not a quantity (the CRD's pattern lets none through). */
static int pvc_size(const cJSON *st, char *out, size_t cap)
{
    const cJSON *v = kobj_get(st, "size");
    char num[32];
    const char *s = "1Gi";
    int64_t milli;
    if (cJSON_IsNumber(v)) {
        snprintf(num, sizeof(num), "%.0f", v->valuedouble);
        s = num;
    } else if (cJSON_IsString(v)) {
        s = v->valuestring;
    }
    if (kobj_quantity_parse(s, &milli) < 0)
        return -EINVAL;
    rc_quantity_string(milli, strchr(s, 'i') != NULL, out, cap);
    return 0;
}

cJSON *rc_build_gcs_pvc(const cJSON *rc, int *err)
{
    const cJSON *st = gcs_storage(rc), *modes = kobj_get(st, "accessModes");
    const char *claim = kobj_str(st, "claimName"), *sc = kobj_str(st, "storageClassName");
    struct rcb b = { 0 };
    char name[300], size[64];
    cJSON *pvc, *meta, *spec;
    if (!rc_gcs_ft_enabled(rc) || !rc_gcs_ft_embedded(rc) || (claim && *claim))
        return NULL;
    if (rc_gcs_pvc_name(rc, name, sizeof(name)) < 0 || pvc_size(st, size, sizeof(size)) < 0) {
        if (err)
            *err = -EINVAL;
        return NULL;
    }
    pvc = raycluster__build_object(&b, "v1", "PersistentVolumeClaim", name, raycluster__namespace(rc), &meta);
    raycluster__build_set_str(&b, raycluster__build_obj(&b, meta, "labels"), RC_LABEL_CLUSTER, raycluster__name(rc));
    if (!rc_gcs_pvc_retain(rc))
        raycluster__build_owner_ref(&b, pvc, rc);
    spec = raycluster__build_obj(&b, pvc, "spec");
    if (cJSON_GetArraySize(modes) > 0) {
        raycluster__build_set(&b, spec, "accessModes", raycluster__build_dup(&b, modes));
    } else {
        static const char *const rwo[] = { "ReadWriteOnce" };
        raycluster__build_set(&b, spec, "accessModes", raycluster__build_str_array(&b, rwo, 1));
    }
    if (sc)
        raycluster__build_set_str(&b, spec, "storageClassName", sc);
    raycluster__build_set_str(&b, raycluster__build_obj(&b, raycluster__build_obj(&b, spec, "resources"), "requests"), "storage", size);
    return raycluster__build_done(&b, pvc, err);
}

/* the same modes, each as often (equalAccessModes) */
static bool same_modes(const cJSON *a, const cJSON *b)
{
    const cJSON *m, *n;
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return false;
    cJSON_ArrayForEach(m, a) {
        int ca = 0, cb = 0;
        cJSON_ArrayForEach(n, a)
            ca += cJSON_IsString(n) && cJSON_IsString(m) && !strcmp(n->valuestring, m->valuestring);
        cJSON_ArrayForEach(n, b)
            cb += cJSON_IsString(n) && cJSON_IsString(m) && !strcmp(n->valuestring, m->valuestring);
        if (ca != cb)
            return false;
    }
    return true;
}

void rc_gcs_pvc_drift(const cJSON *want, const cJSON *have, char *out, size_t cap)
{
    const cJSON *ws = kobj_get(want, "spec"), *hs = kobj_get(have, "spec");
    const char *wsz = kobj_str(kobj_get(kobj_get(ws, "resources"), "requests"), "storage");
    const char *hsz = kobj_str(kobj_get(kobj_get(hs, "resources"), "requests"), "storage");
    const char *wsc = kobj_str(ws, "storageClassName"), *hsc = kobj_str(hs, "storageClassName");
    int64_t wm = 0, hm = 0;
    size_t w = 0;
    char a[160], b[160], hq[64] = "0";
    out[0] = '\0';
    if (hsz && kobj_quantity_parse(hsz, &hm) == 0)
        rc_quantity_string(hm, strchr(hsz, 'i') != NULL, hq, sizeof(hq));
    if (!wsz || kobj_quantity_parse(wsz, &wm) < 0 || wm != hm)
        w += (size_t)snprintf(out + w, cap - w, "requested size %s != current %s",
                              wsz ? wsz : "0", hq);
    if (wsc && (!hsc || strcmp(wsc, hsc)) && w < cap)
        w += (size_t)snprintf(out + w, cap - w, "%sstorageClassName %s != current %s",
                              w ? "; " : "", wsc, hsc ? hsc : "<default>");
    if (!same_modes(kobj_get(ws, "accessModes"), kobj_get(hs, "accessModes")) && w < cap) {
        raycluster__go_strings_text(kobj_get(ws, "accessModes"), a, sizeof(a));
        raycluster__go_strings_text(kobj_get(hs, "accessModes"), b, sizeof(b));
        snprintf(out + w, cap - w, "%saccessModes %s != current %s", w ? "; " : "", a, b);
    }
}

/* configureEmbeddedFT: the store's backend and path, and the PVC mounted there */
static void configure_embedded(struct rcb *b, const cJSON *rc, cJSON *pod_spec, cJSON *container)
{
    const char *sub = kobj_str(gcs_storage(rc), "subPath");
    char claim[300];
    cJSON *m = NULL, *v = NULL;
    if (!raycluster__env_exists(container, RC_ENV_GCS_STORAGE))
        raycluster__build_env_value(b, container, RC_ENV_GCS_STORAGE, "rocksdb");
    if (!raycluster__env_exists(container, RC_ENV_GCS_STORAGE_PATH))
        raycluster__build_env_value(b, container, RC_ENV_GCS_STORAGE_PATH, RC_GCS_STORAGE_PATH);
    m = raycluster__build_mount(b, container, RC_GCS_STORAGE_VOLUME, RC_GCS_STORAGE_PATH, false);
    if (sub && *sub)
        raycluster__build_set_str(b, m, "subPath", sub);
    rc_gcs_pvc_name(rc, claim, sizeof(claim));
    v = raycluster__build_push(b, pod_spec, "volumes");
    raycluster__build_set_str(b, v, "name", RC_GCS_STORAGE_VOLUME);
    raycluster__build_set_str(b, raycluster__build_obj(b, v, "persistentVolumeClaim"), "claimName", claim);
}

void raycluster__gcs_ft_configure(struct rcb *b, const cJSON *rc, bool head, cJSON *pod_meta,
                                  cJSON *pod_spec, cJSON *container)
{
    bool ft = rc_gcs_ft_enabled(rc);
    const cJSON *opts = kobj_get(raycluster__spec(rc), "gcsFaultToleranceOptions");
    if (b->err)
        return;
    if (head)
        raycluster__build_set_str(b, raycluster__build_obj(b, pod_meta, "annotations"), RC_ANN_FT_ENABLED,
                                  ft ? "true" : "false");
    if (!ft)
        return;
    if (!head) {
        /* Workers wait for a restarted GCS up to 600 s instead of Ray's 60 s. */
        if (!raycluster__env_exists(container, "RAY_gcs_rpc_server_reconnect_timeout_s"))
            raycluster__build_env_value(b, container, "RAY_gcs_rpc_server_reconnect_timeout_s", "600");
        return;
    }
    if (rc_gcs_ft_embedded(rc)) {
        configure_embedded(b, rc, pod_spec, container);
        return;
    }
    /* Storage namespace: the cluster UID, the annotation, then the option, last wins. */
    const char *ns = kobj_str(kobj_get(rc, "metadata"), "uid");
    const char *ann = kobj_annotation(rc, RC_ANN_EXTERNAL_STORAGE_NS);
    const char *opt_ns = kobj_str(opts, "externalStorageNamespace");
    if (ann)
        ns = ann;
    if (opt_ns && *opt_ns)
        ns = opt_ns;
    raycluster__build_set_str(b, raycluster__build_obj(b, pod_meta, "annotations"), RC_ANN_EXTERNAL_STORAGE_NS, ns ? ns : "");
    if (!raycluster__env_exists(container, "RAY_external_storage_namespace"))
        raycluster__build_env_value(b, container, "RAY_external_storage_namespace", ns ? ns : "");
    if (cJSON_IsObject(opts)) {
        const char *addr = kobj_str(opts, "redisAddress");
        raycluster__build_env_value(b, container, "RAY_REDIS_ADDRESS", addr ? addr : "");
        if (kobj_get(opts, "redisUsername") && !cJSON_IsNull(kobj_get(opts, "redisUsername")))
            env_credential(b, container, "REDIS_USERNAME", kobj_get(opts, "redisUsername"));
        if (kobj_get(opts, "redisPassword") && !cJSON_IsNull(kobj_get(opts, "redisPassword")))
            env_credential(b, container, "REDIS_PASSWORD", kobj_get(opts, "redisPassword"));
    } else if (!raycluster__env_exists(container, "REDIS_PASSWORD")) {
        /* A password given inline in rayStartParams also reaches the cleanup Job. */
        const char *pw = kobj_str(kobj_get(raycluster__head_group(rc), "rayStartParams"), "redis-password");
        if (pw)
            raycluster__build_env_value(b, container, "REDIS_PASSWORD", pw);
    }
}

/*
 * pod.c - what a container is started with, as the kubelet computes it: the volumes as real
 * files and directories under the Pod's directory (emptyDir, configMap, secret, downwardAPI,
 * projected incl. the service-account token, hostPath), the environment (KUBERNETES_SERVICE_*,
 * env with valueFrom fieldRef / secretKeyRef / configMapKeyRef, envFrom, $(VAR) expansion),
 * the command with $(VAR) expanded, the user from the securityContext, and the spec file the
 * exec helper (helper.c) reads. Processes are started with posix_spawn of kubesim itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <gnutls/gnutls.h>

#include "kobj/quantity.h"
#include "kubesim/runtime/internal.h"
#include "kubesim/store/store.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_VOLUME "kube-api-access-kubesim"

extern char **environ;

/* ---- processes ------------------------------------------------------------------------- */

int runtime__spawn(struct runtime *rt, char *const *argv, const char *log, int pass_fd, int as_fd,
                   pid_t *pid, int *pidfd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    char *envp[] = { NULL };
    int rc;

    *pid = 0;
    *pidfd = -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                  POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log ? log : "/dev/null",
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (pass_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, pass_fd, as_fd);
    rc = posix_spawn(pid, rt->self, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc)
        return -rc;
    if ((*pidfd = (int)syscall(SYS_pidfd_open, *pid, 0)) < 0) {
        rc = -errno;
        kill(*pid, SIGKILL);
        return rc;
    }
    fcntl(*pidfd, F_SETFD, FD_CLOEXEC);
    return 0;
}

/* ---- field values, secrets, config maps ------------------------------------------------ */

/* metadata.labels['k'] -> k into key; returns the map name or NULL */
static const char *bracket(const char *path, const char *prefix, char *key, size_t len)
{
    size_t pl = strlen(prefix), kl;
    const char *q = path + pl + 2;

    if (strncmp(path, prefix, pl) || strncmp(path + pl, "['", 2))
        return NULL;
    kl = strcspn(q, "'");
    if (kl >= len || strcmp(q + kl, "']"))
        return NULL;
    memcpy(key, q, kl);
    key[kl] = '\0';
    return prefix;
}

int runtime__field_value(const struct rt_pod *p, const char *path, struct buf *out)
{
    const cJSON *md = kobj_get(p->json, "metadata"), *spec = kobj_get(p->json, "spec");
    const char *v = NULL;
    char key[256];

    if (!path)
        return -EINVAL;
    if (!strcmp(path, "metadata.name"))
        v = p->name;
    else if (!strcmp(path, "metadata.namespace"))
        v = p->ns;
    else if (!strcmp(path, "metadata.uid"))
        v = p->uid;
    else if (!strcmp(path, "spec.nodeName"))
        v = kobj_str(spec, "nodeName");
    else if (!strcmp(path, "spec.serviceAccountName"))
        v = kobj_str(spec, "serviceAccountName") ? kobj_str(spec, "serviceAccountName") : "default";
    else if (!strcmp(path, "status.podIP") || !strcmp(path, "status.podIPs"))
        v = p->ip;
    else if (!strcmp(path, "status.hostIP") || !strcmp(path, "status.hostIPs"))
        v = "127.0.0.1";
    else if (bracket(path, "metadata.labels", key, sizeof(key)))
        v = kobj_str(kobj_get(md, "labels"), key) ? kobj_str(kobj_get(md, "labels"), key) : "";
    else if (bracket(path, "metadata.annotations", key, sizeof(key)))
        v = kobj_str(kobj_get(md, "annotations"), key) ? kobj_str(kobj_get(md, "annotations"), key) : "";
    else if (!strcmp(path, "metadata.labels") || !strcmp(path, "metadata.annotations")) {
        const cJSON *m = kobj_get(md, path + 9), *e;
        cJSON_ArrayForEach(e, m)
            if (cJSON_IsString(e))
                buf_printf(out, "%s=\"%s\"\n", e->string, e->valuestring);
        return 0;
    } else
        return -EINVAL;
    buf_puts(out, v ? v : "");
    return 0;
}

/* The object (Secret or ConfigMap) named name in the Pod's namespace, or NULL. */
static struct store_obj *get_obj(struct runtime *rt, const struct reg_resource *res,
                                 const struct rt_pod *p, const char *name)
{
    struct store_obj *o = NULL;
    struct store_status st = { 0 };

    if (!res || !name || store_get(rt->store, res, p->ns, name, &o, &st) < 0)
        o = NULL;
    store_status_clear(&st);
    return o;
}

/* data[key] of a Secret (base64-decoded) or ConfigMap (data, then binaryData). */
static int obj_key(const struct store_obj *o, bool secret, const char *key, struct buf *out)
{
    const char *v = kobj_str(kobj_get(store_obj_json(o), "data"), key);
    bool b64 = secret;

    if (!v && !secret && (v = kobj_str(kobj_get(store_obj_json(o), "binaryData"), key)))
        b64 = true;
    if (!v)
        return -ENOENT;
    if (b64) {
        gnutls_datum_t in = { (unsigned char *)v, (unsigned)strlen(v) }, dec = { 0 };
        if (gnutls_base64_decode2(&in, &dec) < 0)
            return -EINVAL;
        buf_append(out, dec.data, dec.size);
        gnutls_free(dec.data);
    } else {
        buf_puts(out, v);
    }
    return 0;
}

/* ---- volumes ------------------------------------------------------------------------------ */

static int write_in(const char *dir, const char *rel, const void *data, size_t len, long mode)
{
    char path[1024];

    if (!rel || strstr(rel, "..") || rel[0] == '/' ||
        snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
        return -EINVAL;
    for (char *s = path + strlen(dir) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(path, 0755);
            *s = '/';
        }
    return runtime__write_file(path, data, len, (mode_t)(mode < 0 ? 0644 : mode));
}

/* Keys of a Secret/ConfigMap into dir (items: only those, at their paths). */
static int keys_to_dir(struct runtime *rt, const struct rt_pod *p, const char *dir,
                       const cJSON *src, bool secret, long mode, char *err, size_t errlen)
{
    const char *name = kobj_str(src, secret ? "secretName" : "name");
    const cJSON *items = kobj_get(src, "items"), *it, *e;
    struct store_obj *o;
    struct buf b = { 0 };
    int rc = 0;

    if (!name)
        name = kobj_str(src, "name");
    if (!(o = get_obj(rt, secret ? rt->r_secrets : rt->r_cms, p, name))) {
        if (cJSON_IsTrue(kobj_get(src, "optional")))
            return 0;
        snprintf(err, errlen, "%s \"%s\" not found", secret ? "secret" : "configmap",
                 name ? name : "");
        return -ENOENT;
    }
    mode = runtime__jnum(src, "defaultMode", mode);
    if (cJSON_GetArraySize(items) > 0) {
        cJSON_ArrayForEach(it, items) {
            buf_reset(&b);
            if (obj_key(o, secret, kobj_str(it, "key"), &b) == 0)
                rc = write_in(dir, kobj_str(it, "path"), b.data ? b.data : "", b.len,
                              runtime__jnum(it, "mode", mode));
            if (rc < 0)
                break;
        }
    } else {
        const char *maps[] = { "data", secret ? NULL : "binaryData" };
        for (int k = 0; k < 2 && rc == 0; k++) {
            if (!maps[k])
                continue;
            cJSON_ArrayForEach(e, kobj_get(store_obj_json(o), maps[k])) {
                buf_reset(&b);
                if (obj_key(o, secret, e->string, &b) == 0 &&
                    (rc = write_in(dir, e->string, b.data ? b.data : "", b.len, mode)) < 0)
                    break;
            }
        }
    }
    if (rc < 0)
        snprintf(err, errlen, "writing %s \"%s\": %s", secret ? "secret" : "configmap", name,
                 strerror(-rc));
    buf_free(&b);
    store_obj_unref(o);
    return rc;
}

static int downward_to_dir(const struct rt_pod *p, const char *dir, const cJSON *items,
                           long mode)
{
    const cJSON *it;
    struct buf b = { 0 };
    int rc = 0;

    cJSON_ArrayForEach(it, items) {
        buf_reset(&b);
        if (runtime__field_value(p, kobj_str(kobj_get(it, "fieldRef"), "fieldPath"), &b) < 0)
            continue;   /* resourceFieldRef: not modelled */
        if ((rc = write_in(dir, kobj_str(it, "path"), b.data ? b.data : "", b.len,
                           runtime__jnum(it, "mode", mode))) < 0)
            break;
    }
    buf_free(&b);
    return rc;
}

static int sa_files(struct runtime *rt, const struct rt_pod *p, const char *dir, const char *tok_path)
{
    const char *tok = rt->token ? rt->token : "kubesim-anonymous";
    int rc;

    if ((rc = write_in(dir, tok_path ? tok_path : "token", tok, strlen(tok), 0644)) < 0)
        return rc;
    if (!tok_path) {
        if (rt->ca && (rc = write_in(dir, "ca.crt", rt->ca, strlen(rt->ca), 0644)) < 0)
            return rc;
        rc = write_in(dir, "namespace", p->ns, strlen(p->ns), 0644);
    }
    return rc;
}

static void vol_dir(const struct rt_pod *p, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/vol/%s", p->dir, name);
}

void runtime__size_text(const char *q, char *out, size_t len)
{
    int64_t milli;
    if (q && kobj_quantity_parse(q, &milli) == 0 && milli > 0)
        snprintf(out, len, "%lld", (long long)((milli + 999) / 1000));
    else
        snprintf(out, len, "0");
}

int runtime__pod_volumes(struct runtime *rt, struct rt_pod *p, cJSON *memdirs, char *err, size_t errlen)
{
    const cJSON *spec = kobj_get(p->json, "spec"), *v, *s;
    char dir[1024], sub[1200];
    int rc = 0;

    snprintf(dir, sizeof(dir), "%s/vol", p->dir);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/logs", p->dir);
    mkdir(dir, 0755);
    cJSON_ArrayForEach(v, kobj_get(spec, "volumes")) {
        const char *name = kobj_str(v, "name");
        if (!name || strchr(name, '/') || !strcmp(name, ".."))
            continue;
        vol_dir(p, name, dir, sizeof(dir));
        if (kobj_get(v, "hostPath"))
            continue;               /* bound from the host path itself */
        if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "volume %s: %s", name, strerror(errno));
            return -errno;
        }
        chmod(dir, 0777);           /* as the kubelet's emptyDir: any user of the Pod writes */
        if ((s = kobj_get(v, "emptyDir"))) {
            if (kobj_str(s, "medium") && !strcmp(kobj_str(s, "medium"), "Memory")) {
                char size[32];
                runtime__size_text(kobj_str(s, "sizeLimit"), size, sizeof(size));
                cJSON_AddItemToArray(memdirs, cJSON_CreateString(dir));
                cJSON_AddItemToArray(memdirs, cJSON_CreateString(size));
            }
        } else if ((s = kobj_get(v, "configMap"))) {
            rc = keys_to_dir(rt, p, dir, s, false, 0644, err, errlen);
        } else if ((s = kobj_get(v, "secret"))) {
            rc = keys_to_dir(rt, p, dir, s, true, 0644, err, errlen);
        } else if ((s = kobj_get(v, "downwardAPI"))) {
            rc = downward_to_dir(p, dir, kobj_get(s, "items"), runtime__jnum(s, "defaultMode", 0644));
        } else if ((s = kobj_get(v, "projected"))) {
            const cJSON *src;
            long mode = runtime__jnum(s, "defaultMode", 0644);
            cJSON_ArrayForEach(src, kobj_get(s, "sources")) {
                const cJSON *x;
                if ((x = kobj_get(src, "serviceAccountToken")))
                    rc = sa_files(rt, p, dir, kobj_str(x, "path") ? kobj_str(x, "path") : "token");
                else if ((x = kobj_get(src, "configMap")))
                    rc = keys_to_dir(rt, p, dir, x, false, mode, err, errlen);
                else if ((x = kobj_get(src, "secret")))
                    rc = keys_to_dir(rt, p, dir, x, true, mode, err, errlen);
                else if ((x = kobj_get(src, "downwardAPI")))
                    rc = downward_to_dir(p, dir, kobj_get(x, "items"), mode);
                if (rc < 0)
                    break;
            }
        }
        /* persistentVolumeClaim and the rest: an empty directory */
        if (rc < 0) {
            char why[400];
            snprintf(why, sizeof(why), "%s", err[0] ? err : strerror(-rc));
            snprintf(err, errlen, "MountVolume.SetUp failed for volume \"%s\" : %s", name, why);
            return rc;
        }
    }
    /* the service-account token the API server's admission would have projected */
    if (!cJSON_IsFalse(kobj_get(spec, "automountServiceAccountToken"))) {
        vol_dir(p, SA_VOLUME, sub, sizeof(sub));
        mkdir(sub, 0755);
        if ((rc = sa_files(rt, p, sub, NULL)) < 0) {
            snprintf(err, errlen, "service account token: %s", strerror(-rc));
            return rc;
        }
    }
    return 0;
}

/* ---- environment and command -------------------------------------------------------------- */

struct env {
    cJSON *list;    /* "K=V" strings in order */
};

static const char *env_get(const cJSON *list, const char *k, size_t kl)
{
    const cJSON *it;
    const char *found = NULL;

    cJSON_ArrayForEach(it, list)
        if (!strncmp(it->valuestring, k, kl) && it->valuestring[kl] == '=')
            found = it->valuestring + kl + 1;   /* the last definition wins */
    return found;
}

static void env_set(struct env *e, const char *k, const char *v)
{
    struct buf b = { 0 };
    cJSON *it;
    size_t kl = strlen(k);

    buf_printf(&b, "%s=%s", k, v);
    cJSON_ArrayForEach(it, e->list)
        if (!strncmp(it->valuestring, k, kl) && it->valuestring[kl] == '=') {
            cJSON_SetValuestring(it, b.data);
            buf_free(&b);
            return;
        }
    cJSON_AddItemToArray(e->list, cJSON_CreateString(b.data));
    buf_free(&b);
}

int runtime__env_expand(const cJSON *env, const char *in, struct buf *out)
{
    size_t start = out->len;

    while (*in) {
        if (out->len - start > RT_ENV_MAX_VALUE)
            return -E2BIG;
        if (in[0] == '$' && in[1] == '$') {
            buf_append(out, "$", 1);
            in += 2;
        } else if (in[0] == '$' && in[1] == '(') {
            const char *close = strchr(in + 2, ')');
            const char *v = close ? env_get(env, in + 2, (size_t)(close - in - 2)) : NULL;
            if (v) {
                buf_puts(out, v);
                in = close + 1;
            } else {
                buf_append(out, in, 2);
                in += 2;
            }
        } else {
            buf_append(out, in, 1);
            in++;
        }
    }
    if (out->len - start > RT_ENV_MAX_VALUE)
        return -E2BIG;
    if (!out->data)
        buf_puts(out, "");
    return out->data ? 0 : -ENOMEM;
}

/* A Service's, port's or protocol's name as the kubelet spells it in variable names
 * (upper = true: "my-svc" -> "MY_SVC") or in URLs (false: "TCP" -> "tcp"). */
static void env_name(const char *in, bool upper, char *out, size_t len)
{
    size_t i = 0;

    for (; in[i] && i + 1 < len; i++) {
        char ch = in[i];
        if (upper)
            out[i] = ch == '-' ? '_' : ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
        else
            out[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
    }
    out[i] = '\0';
}

static void env_setf(struct env *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void env_setf(struct env *e, const char *key, const char *fmt, ...)
{
    char val[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(val, sizeof(val), fmt, ap);
    va_end(ap);
    env_set(e, key, val);
}

/* The Services of the Pod's namespace with a ClusterIP, as the kubelet's service links
 * (enableServiceLinks, on by default): NAME_SERVICE_HOST, NAME_SERVICE_PORT[_PORTNAME] and
 * NAME_PORT, NAME_PORT_NUM_PROTO[_PROTO|_PORT|_ADDR]. */
static void service_env(struct runtime *rt, const struct rt_pod *p, struct env *e)
{
    struct store_list_opts lo = { 0 };
    struct store_list l = { 0 };
    struct store_status st = { 0 };

    if (cJSON_IsFalse(kobj_get(kobj_get(p->json, "spec"), "enableServiceLinks")) || !rt->r_svc ||
        store_list(rt->store, rt->r_svc, p->ns, &lo, &l, &st) < 0)
        goto out;
    for (size_t i = 0; i < l.n; i++) {
        const cJSON *spec = kobj_get(store_obj_json(l.items[i]), "spec"), *pt;
        const char *ip = kobj_str(spec, "clusterIP");
        char name[256], key[512];
        int n = 0;
        if (!ip || !*ip || !strcmp(ip, "None") || !strcmp(l.items[i]->name, "kubernetes"))
            continue;
        env_name(l.items[i]->name, true, name, sizeof(name));
        cJSON_ArrayForEach(pt, kobj_get(spec, "ports")) {
            const char *proto = kobj_str(pt, "protocol") ? kobj_str(pt, "protocol") : "TCP";
            const char *pn = kobj_str(pt, "name");
            long port = runtime__jnum(pt, "port", 0);
            char lower[16], upper[16], pname[128];
            env_name(proto, false, lower, sizeof(lower));
            env_name(proto, true, upper, sizeof(upper));
            if (n++ == 0) {
                snprintf(key, sizeof(key), "%s_SERVICE_HOST", name);
                env_setf(e, key, "%s", ip);
                snprintf(key, sizeof(key), "%s_SERVICE_PORT", name);
                env_setf(e, key, "%ld", port);
                snprintf(key, sizeof(key), "%s_PORT", name);
                env_setf(e, key, "%s://%s:%ld", lower, ip, port);
            }
            if (pn && *pn) {
                env_name(pn, true, pname, sizeof(pname));
                snprintf(key, sizeof(key), "%s_SERVICE_PORT_%s", name, pname);
                env_setf(e, key, "%ld", port);
            }
            snprintf(key, sizeof(key), "%s_PORT_%ld_%s", name, port, upper);
            env_setf(e, key, "%s://%s:%ld", lower, ip, port);
            snprintf(key, sizeof(key), "%s_PORT_%ld_%s_PROTO", name, port, upper);
            env_setf(e, key, "%s", lower);
            snprintf(key, sizeof(key), "%s_PORT_%ld_%s_PORT", name, port, upper);
            env_setf(e, key, "%ld", port);
            snprintf(key, sizeof(key), "%s_PORT_%ld_%s_ADDR", name, port, upper);
            env_setf(e, key, "%s", ip);
        }
    }
    store_list_free(&l);
out:
    store_status_clear(&st);
}

static int build_env(struct runtime *rt, const struct rt_pod *p, const struct rt_ctr *c,
                     struct env *e, char *err, size_t errlen)
{
    const cJSON *it;
    struct buf b = { 0 }, v = { 0 };
    char port[16];
    int rc = 0;

    buf_printf(&b, "%s/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", c->root);
    env_set(e, "PATH", b.data);
    env_set(e, "HOSTNAME", p->name);
    env_set(e, "HOME", "/");
    snprintf(port, sizeof(port), "%d", RUNTIME_SERVICE_PORT);
    env_set(e, "KUBERNETES_SERVICE_HOST", RUNTIME_SERVICE_IP);
    env_set(e, "KUBERNETES_SERVICE_PORT", port);
    env_set(e, "KUBERNETES_SERVICE_PORT_HTTPS", port);
    buf_reset(&b);
    buf_printf(&b, "tcp://%s:%d", RUNTIME_SERVICE_IP, RUNTIME_SERVICE_PORT);
    env_set(e, "KUBERNETES_PORT", b.data);
    env_set(e, "KUBERNETES_PORT_443_TCP", b.data);
    env_set(e, "KUBERNETES_PORT_443_TCP_ADDR", RUNTIME_SERVICE_IP);
    env_set(e, "KUBERNETES_PORT_443_TCP_PORT", port);
    env_set(e, "KUBERNETES_PORT_443_TCP_PROTO", "tcp");
    service_env(rt, p, e);
    cJSON_ArrayForEach(it, kobj_get(c->spec, "envFrom")) {
        const cJSON *ref = kobj_get(it, "configMapRef");
        bool secret = false;
        struct store_obj *o;
        const cJSON *kv;
        const char *prefix = kobj_str(it, "prefix") ? kobj_str(it, "prefix") : "";
        if (!ref && (ref = kobj_get(it, "secretRef")))
            secret = true;
        if (!ref)
            continue;
        if (!(o = get_obj(rt, secret ? rt->r_secrets : rt->r_cms, p, kobj_str(ref, "name")))) {
            if (cJSON_IsTrue(kobj_get(ref, "optional")))
                continue;
            snprintf(err, errlen, "%s \"%s\" not found", secret ? "secret" : "configmap",
                     kobj_str(ref, "name") ? kobj_str(ref, "name") : "");
            rc = -ENOENT;
            goto out;
        }
        cJSON_ArrayForEach(kv, kobj_get(store_obj_json(o), "data")) {
            buf_reset(&v);
            buf_reset(&b);
            if (obj_key(o, secret, kv->string, &v) == 0) {
                buf_printf(&b, "%s%s", prefix, kv->string);
                env_set(e, b.data, v.data ? v.data : "");
            }
        }
        store_obj_unref(o);
    }
    cJSON_ArrayForEach(it, kobj_get(c->spec, "env")) {
        const char *name = kobj_str(it, "name");
        const cJSON *vf = kobj_get(it, "valueFrom"), *ref;
        buf_reset(&v);
        if (!name)
            continue;
        if (!vf) {
            if (runtime__env_expand(e->list, kobj_str(it, "value") ? kobj_str(it, "value") : "", &v) < 0) {
                snprintf(err, errlen, "env %s: the expanded value is over %d bytes", name,
                         RT_ENV_MAX_VALUE);
                rc = -E2BIG;
                goto out;
            }
        } else if ((ref = kobj_get(vf, "fieldRef"))) {
            if (runtime__field_value(p, kobj_str(ref, "fieldPath"), &v) < 0) {
                snprintf(err, errlen, "env %s: unsupported fieldPath %s", name,
                         kobj_str(ref, "fieldPath") ? kobj_str(ref, "fieldPath") : "");
                rc = -EINVAL;
                goto out;
            }
        } else if ((ref = kobj_get(vf, "secretKeyRef")) || (ref = kobj_get(vf, "configMapKeyRef"))) {
            bool secret = kobj_get(vf, "secretKeyRef") != NULL;
            struct store_obj *o = get_obj(rt, secret ? rt->r_secrets : rt->r_cms, p,
                                          kobj_str(ref, "name"));
            int krc = o ? obj_key(o, secret, kobj_str(ref, "key"), &v) : -ENOENT;
            store_obj_unref(o);
            if (krc < 0) {
                if (cJSON_IsTrue(kobj_get(ref, "optional")))
                    continue;
                snprintf(err, errlen, "env %s: %s %s key %s not found", name,
                         secret ? "secret" : "configmap",
                         kobj_str(ref, "name") ? kobj_str(ref, "name") : "",
                         kobj_str(ref, "key") ? kobj_str(ref, "key") : "");
                rc = -ENOENT;
                goto out;
            }
        } else {
            continue;   /* resourceFieldRef: not modelled */
        }
        env_set(e, name, v.data ? v.data : "");
    }
out:
    buf_free(&b);
    buf_free(&v);
    return rc;
}

/* runAsUser/runAsGroup: the container's securityContext over the Pod's. */
static long sc_num(const struct rt_pod *p, const struct rt_ctr *c, const char *k)
{
    long v = runtime__jnum(kobj_get(c->spec, "securityContext"), k, -1);
    return v >= 0 ? v : runtime__jnum(kobj_get(kobj_get(p->json, "spec"), "securityContext"), k, -1);
}


static int build_spec(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, cJSON *spec,
                      char *err, size_t errlen)
{
    struct env e = { cJSON_CreateArray() };
    const cJSON *m, *it, *vols = kobj_get(kobj_get(p->json, "spec"), "volumes");
    cJSON *mounts, *argv;
    struct buf b = { 0 };
    char src[1200], scratch[1100];
    int rc;

    if (!e.list)
        return -ENOMEM;
    if ((rc = build_env(rt, p, c, &e, err, errlen)) < 0)
        goto out;
    cJSON_AddNumberToObject(spec, "sandbox", p->sandbox);
    snprintf(scratch, sizeof(scratch), "%s/scratch-%s", p->dir, c->name);
    mkdir(scratch, 0700);
    cJSON_AddStringToObject(spec, "scratch", scratch);
    mounts = cJSON_AddArrayToObject(spec, "mounts");
    cJSON_ArrayForEach(m, kobj_get(c->spec, "volumeMounts")) {
        const char *vn = kobj_str(m, "name"), *dst = kobj_str(m, "mountPath");
        const char *subp = kobj_str(m, "subPath");
        const cJSON *vol = NULL, *v;
        cJSON *o;
        cJSON_ArrayForEach(v, vols)
            if (kobj_str(v, "name") && vn && !strcmp(kobj_str(v, "name"), vn))
                vol = v;
        if (!vol || !dst || dst[0] != '/') {
            snprintf(err, errlen, "volumeMount %s: no such volume", vn ? vn : "");
            rc = -EINVAL;
            goto out;
        }
        if (kobj_get(vol, "hostPath"))
            snprintf(src, sizeof(src), "%s", kobj_str(kobj_get(vol, "hostPath"), "path") ?
                     kobj_str(kobj_get(vol, "hostPath"), "path") : "/nonexistent");
        else
            vol_dir(p, vn, src, sizeof(src));
        if (subp && *subp) {
            size_t l = strlen(src);
            if (strstr(subp, "..") || subp[0] == '/') {
                snprintf(err, errlen, "volumeMount %s: bad subPath", vn);
                rc = -EINVAL;
                goto out;
            }
            snprintf(src + l, sizeof(src) - l, "/%s", subp);
            mkdir(src, 0777);
        }
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "src", src);
        cJSON_AddStringToObject(o, "dst", dst);
        if (cJSON_IsTrue(kobj_get(m, "readOnly")))
            cJSON_AddBoolToObject(o, "readOnly", true);
        cJSON_AddItemToArray(mounts, o);
    }
    if (!cJSON_IsFalse(kobj_get(kobj_get(p->json, "spec"), "automountServiceAccountToken")) &&
        !kobj_find(kobj_get(c->spec, "volumeMounts"), "mountPath", SA_DIR)) {
        cJSON *o = cJSON_CreateObject();
        vol_dir(p, SA_VOLUME, src, sizeof(src));
        cJSON_AddStringToObject(o, "src", src);
        cJSON_AddStringToObject(o, "dst", SA_DIR);
        cJSON_AddBoolToObject(o, "readOnly", true);
        cJSON_AddItemToArray(mounts, o);
    }
    if (cJSON_IsTrue(kobj_get(kobj_get(c->spec, "securityContext"), "readOnlyRootFilesystem")))
        cJSON_AddBoolToObject(spec, "readOnlyRoot", true);
    if (sc_num(p, c, "runAsUser") >= 0)
        cJSON_AddNumberToObject(spec, "uid", (double)sc_num(p, c, "runAsUser"));
    if (sc_num(p, c, "runAsGroup") >= 0)
        cJSON_AddNumberToObject(spec, "gid", (double)sc_num(p, c, "runAsGroup"));
    if (runtime__jnum(kobj_get(kobj_get(p->json, "spec"), "securityContext"), "fsGroup", -1) >= 0)
        cJSON_AddNumberToObject(spec, "fsGroup",
                                (double)runtime__jnum(kobj_get(kobj_get(p->json, "spec"), "securityContext"), "fsGroup", 0));
    if (kobj_str(c->spec, "workingDir"))
        cJSON_AddStringToObject(spec, "cwd", kobj_str(c->spec, "workingDir"));
    argv = cJSON_AddArrayToObject(spec, "argv");
    if (cJSON_GetArraySize(kobj_get(c->spec, "command")) == 0) {
        snprintf(err, errlen, "container %s states no command: kubesim runs the command a "
                 "container states (it has no image to take an entrypoint from)", c->name);
        rc = -EINVAL;
        goto out;
    }
    /* argv is command then args, each word with $(VAR) expanded */
    for (int k = 0; k < 2; k++) {
        const char *field = k ? "args" : "command";
        cJSON_ArrayForEach(it, kobj_get(c->spec, field)) {
            buf_reset(&b);
            if (runtime__env_expand(e.list, cJSON_IsString(it) ? it->valuestring : "", &b) < 0) {
                snprintf(err, errlen, "container %s: an expanded %s word is over %d bytes",
                         c->name, field, RT_ENV_MAX_VALUE);
                rc = -E2BIG;
                goto out;
            }
            cJSON_AddItemToArray(argv, cJSON_CreateString(b.data));
        }
    }
    cJSON_AddItemToObject(spec, "env", e.list);
    e.list = NULL;
out:
    cJSON_Delete(e.list);
    buf_free(&b);
    return rc;
}

static int spawn_spec(struct runtime *rt, const char *path, cJSON *spec, const char *log,
                      pid_t *pid, int *pidfd)
{
    char *txt = cJSON_PrintUnformatted(spec);
    char *argv[] = { (char *)"kubesim", (char *)"__runtime-exec", (char *)path, NULL };
    int rc;

    if (!txt)
        return -ENOMEM;
    rc = runtime__write_file(path, txt, strlen(txt), 0600);
    free(txt);
    if (rc < 0)
        return rc;
    return runtime__spawn(rt, argv, log, -1, -1, pid, pidfd);
}

int runtime__ctr_spawn(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, char *err, size_t errlen)
{
    cJSON *spec = cJSON_CreateObject();
    char path[1100], log[1100];
    int rc;

    err[0] = '\0';
    if (!spec)
        return -ENOMEM;
    if ((rc = build_spec(rt, p, c, spec, err, errlen)) < 0)
        goto out;
    snprintf(path, sizeof(path), "%s/spec-%s.json", p->dir, c->name);
    runtime__log_path(p, c->name, c->restarts, log, sizeof(log));
    unlink(log);
    if ((rc = spawn_spec(rt, path, spec, log, &c->pid, &c->pidfd)) < 0)
        snprintf(err, errlen, "starting %s: %s", c->name, strerror(-rc));
out:
    cJSON_Delete(spec);
    return rc;
}

int runtime__exec_spawn(struct runtime *rt, struct rt_pod *p, struct rt_ctr *c, const cJSON *cmd,
                        pid_t *pid, int *pidfd)
{
    cJSON *spec = cJSON_CreateObject(), *argv, *env;
    const cJSON *it;
    char path[1100];
    struct env e = { cJSON_CreateArray() };
    char err[256];
    int rc = -ENOMEM;

    if (!spec || !e.list)
        goto out;
    if ((rc = build_env(rt, p, c, &e, err, sizeof(err))) < 0)
        goto out;
    cJSON_AddNumberToObject(spec, "join", c->pid);
    if (sc_num(p, c, "runAsUser") >= 0)
        cJSON_AddNumberToObject(spec, "uid", (double)sc_num(p, c, "runAsUser"));
    argv = cJSON_AddArrayToObject(spec, "argv");
    cJSON_ArrayForEach(it, cmd)
        cJSON_AddItemToArray(argv, cJSON_CreateString(cJSON_IsString(it) ? it->valuestring : ""));
    env = e.list;
    e.list = NULL;
    cJSON_AddItemToObject(spec, "env", env);
    snprintf(path, sizeof(path), "%s/probe-%s.json", p->dir, c->name);
    rc = spawn_spec(rt, path, spec, NULL, pid, pidfd);
out:
    cJSON_Delete(e.list);
    cJSON_Delete(spec);
    return rc;
}

/*
 * build_util.c - the small helpers every RayCluster builder uses: typed reads
 * of the (const) RayCluster, cJSON construction with a sticky error, KubeRay's
 * name clipping (CheckName/CheckLabel), quantities and Go-compatible float text.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/gotypes.h"
#include "reconcilers/raycluster/internal.h"
#include "kobj/quantity.h"
#include "util/util.h"

/* ---- reading ---- */

const cJSON *raycluster__json_path(const cJSON *o, ...)
{
    va_list ap;
    const char *k;
    va_start(ap, o);
    while (o && (k = va_arg(ap, const char *)) != NULL)
        o = kobj_get(o, k);
    va_end(ap);
    return o;
}

bool raycluster__json_bool(const cJSON *o, const char *key, bool dflt)
{
    const cJSON *v = kobj_get(o, key);
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v);
    return dflt;
}

bool raycluster__json_has_int(const cJSON *o, const char *key)
{
    const cJSON *v = kobj_get(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= -2147483648.0 && v->valuedouble <= 2147483647.0;
}

int raycluster__parse_int32(const char *s, int *out)
{
    char *end;
    long v;
    if (!s || !*s)
        return -EINVAL;
    v = strtol(s, &end, 10);
    if (*end || v < -2147483648L || v > 2147483647L)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

int64_t raycluster__json_int(const cJSON *o, const char *key, int64_t dflt)
{
    const cJSON *v = kobj_get(o, key);
    if (!raycluster__json_has_int(o, key))
        return dflt;
    return (int64_t)v->valuedouble;
}

/* utils.IsGPUResourceKey: ends in "gpu", or nvidia.com/mig-<n>g.<m>gb. */
bool raycluster__is_gpu_resource(const char *k)
{
    size_t n = strlen(k);
    const char *p;
    if (n >= 3 && !strcmp(k + n - 3, "gpu"))
        return true;
    /* The regexp is unanchored at the start: any "...nvidia.com/mig-" suffix matches. */
    for (p = strstr(k, "nvidia.com/mig-"); p; p = strstr(p + 1, "nvidia.com/mig-")) {
        const char *s = p + strlen("nvidia.com/mig-"), *d = s;
        while (*d >= '0' && *d <= '9')
            d++;
        if (d == s || *d != 'g' || d[1] != '.')
            continue;
        s = d + 2;
        d = s;
        while (*d >= '0' && *d <= '9')
            d++;
        if (d != s && !strcmp(d, "gb"))
            return true;
    }
    return false;
}

const char *raycluster__name(const cJSON *rc)
{
    const char *n = kobj_str(kobj_get(rc, "metadata"), "name");
    return n ? n : "";
}

const char *raycluster__namespace(const cJSON *rc)
{
    const char *n = kobj_str(kobj_get(rc, "metadata"), "namespace");
    return n && *n ? n : "default";
}

const cJSON *raycluster__spec(const cJSON *rc)
{
    return kobj_get(rc, "spec");
}

const cJSON *raycluster__head_group(const cJSON *rc)
{
    return kobj_get(raycluster__spec(rc), "headGroupSpec");
}

const cJSON *raycluster__group_container0(const cJSON *group)
{
    const cJSON *c = raycluster__json_path(group, "template", "spec", "containers", NULL);
    c = cJSON_IsArray(c) ? cJSON_GetArrayItem(c, 0) : NULL;
    return cJSON_IsObject(c) ? c : NULL;
}

bool rc_autoscaling_enabled(const cJSON *rc)
{
    return raycluster__json_bool(raycluster__spec(rc), "enableInTreeAutoscaling", false);
}

static bool autoscaler_version_is(const cJSON *rc, const char *v)
{
    const char *s = kobj_str(kobj_get(raycluster__spec(rc), "autoscalerOptions"), "version");
    return s && !strcmp(s, v);
}

bool raycluster__autoscaling_v2(const cJSON *rc)
{
    return autoscaler_version_is(rc, "v2");
}

bool raycluster__autoscaling_v1_explicit(const cJSON *rc)
{
    return autoscaler_version_is(rc, "v1");
}

bool raycluster__auth_token_enabled(const cJSON *rc)
{
    const char *m = kobj_str(kobj_get(raycluster__spec(rc), "authOptions"), "mode");
    return m && !strcmp(m, "token");
}

bool raycluster__k8s_token_auth(const cJSON *rc)
{
    const cJSON *a = kobj_get(raycluster__spec(rc), "authOptions");
    return raycluster__json_bool(a, "enableK8sTokenAuth", false);
}

const char *raycluster__creator_crd(const cJSON *rc)
{
    const char *v = kobj_str(raycluster__json_path(rc, "metadata", "labels", NULL), RC_LABEL_ORIGINATED_CRD);
    if (v && (!strcmp(v, "RayJob") || !strcmp(v, "RayService")))
        return v;
    return "RayCluster";
}

int64_t raycluster__group_num_hosts(const cJSON *group)
{
    return raycluster__json_int(group, "numOfHosts", 1);
}

const cJSON *raycluster__env_find(const cJSON *container, const char *name)
{
    return kobj_find(kobj_get(container, "env"), "name", name);
}

bool raycluster__env_exists(const cJSON *container, const char *name)
{
    return raycluster__env_find(container, name) != NULL;
}

/* ---- building ---- */

static void *oom(struct rcb *b)
{
    if (!b->err)
        b->err = -ENOMEM;
    return NULL;
}

/* parent[key] as an object (array false) or array, created (replacing another type)
 * when it is not one. */
static cJSON *child(struct rcb *b, cJSON *parent, const char *key, bool array)
{
    cJSON *v;
    if (b->err || !parent)
        return NULL;
    v = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (array ? cJSON_IsArray(v) : cJSON_IsObject(v))
        return v;
    if (!(v = array ? cJSON_CreateArray() : cJSON_CreateObject()))
        return oom(b);
    raycluster__build_set(b, parent, key, v);
    return b->err ? NULL : v;
}

cJSON *raycluster__build_obj(struct rcb *b, cJSON *parent, const char *key)
{
    return child(b, parent, key, false);
}

cJSON *raycluster__build_arr(struct rcb *b, cJSON *parent, const char *key)
{
    return child(b, parent, key, true);
}

void raycluster__build_set(struct rcb *b, cJSON *o, const char *key, cJSON *val)
{
    if (b->err || !o || !val) {
        if (!val)
            oom(b);
        cJSON_Delete(val);
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(o, key)) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(o, key, val)) {
            cJSON_Delete(val);
            oom(b);
        }
        return;
    }
    if (!cJSON_AddItemToObject(o, key, val)) {
        cJSON_Delete(val);
        oom(b);
    }
}

void raycluster__build_set_str(struct rcb *b, cJSON *o, const char *key, const char *val)
{
    if (b->err)
        return;
    raycluster__build_set(b, o, key, cJSON_CreateString(val ? val : ""));
}

void raycluster__build_set_num(struct rcb *b, cJSON *o, const char *key, double val)
{
    if (b->err)
        return;
    raycluster__build_set(b, o, key, cJSON_CreateNumber(val));
}

void raycluster__build_set_bool(struct rcb *b, cJSON *o, const char *key, bool val)
{
    if (b->err)
        return;
    raycluster__build_set(b, o, key, cJSON_CreateBool(val));
}

cJSON *raycluster__build_dup(struct rcb *b, const cJSON *src)
{
    cJSON *d;
    if (b->err)
        return NULL;
    d = src ? cJSON_Duplicate(src, 1) : cJSON_CreateObject();
    return d ? d : oom(b);
}

void raycluster__build_append(struct rcb *b, cJSON *arr, cJSON *item)
{
    if (b->err || !arr || !item) {
        if (!item)
            oom(b);
        cJSON_Delete(item);
        return;
    }
    if (!cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        oom(b);
    }
}

cJSON *raycluster__build_done(const struct rcb *b, cJSON *obj, int *err)
{
    if (!b->err)
        return obj;
    cJSON_Delete(obj);
    if (err)
        *err = b->err;
    return NULL;
}

cJSON *raycluster__build_push(struct rcb *b, cJSON *parent, const char *key)
{
    cJSON *arr = raycluster__build_arr(b, parent, key), *o;
    if (!arr)
        return NULL;
    if (!(o = cJSON_CreateObject()))
        return oom(b);
    raycluster__build_append(b, arr, o);
    return b->err ? NULL : o;
}

cJSON *raycluster__build_mount(struct rcb *b, cJSON *container, const char *name, const char *path,
                               bool read_only)
{
    cJSON *m = raycluster__build_push(b, container, "volumeMounts");
    raycluster__build_set_str(b, m, "name", name);
    raycluster__build_set_str(b, m, "mountPath", path);
    if (read_only)
        raycluster__build_set_bool(b, m, "readOnly", true);
    return b->err ? NULL : m;
}

cJSON *raycluster__build_str_array(struct rcb *b, const char *const *vals, size_t n)
{
    cJSON *a;
    if (b->err)
        return NULL;
    if (!(a = cJSON_CreateArray()))
        return oom(b);
    for (size_t i = 0; i < n; i++)
        raycluster__build_append(b, a, cJSON_CreateString(vals[i]));
    return a;
}

cJSON *raycluster__build_object(struct rcb *b, const char *api_version, const char *kind, const char *name,
                                const char *ns, cJSON **meta)
{
    cJSON *o = raycluster__build_dup(b, NULL);
    raycluster__build_set_str(b, o, "apiVersion", api_version);
    raycluster__build_set_str(b, o, "kind", kind);
    *meta = raycluster__build_obj(b, o, "metadata");
    raycluster__build_set_str(b, *meta, "name", name);
    raycluster__build_set_str(b, *meta, "namespace", ns);
    return o;
}

/* A new {"name": name} appended to the container's env; NULL after an error. */
static cJSON *env_entry(struct rcb *b, cJSON *container, const char *name)
{
    cJSON *e = raycluster__build_push(b, container, "env");
    raycluster__build_set_str(b, e, "name", name);
    return b->err ? NULL : e;
}

void raycluster__build_env_value(struct rcb *b, cJSON *container, const char *name, const char *value)
{
    raycluster__build_set_str(b, env_entry(b, container, name), "value", value);
}

void raycluster__build_env_fieldref(struct rcb *b, cJSON *container, const char *name, const char *path)
{
    cJSON *e = env_entry(b, container, name);
    raycluster__build_set_str(b, raycluster__build_obj(b, raycluster__build_obj(b, e, "valueFrom"), "fieldRef"), "fieldPath", path);
}

void raycluster__build_owner_ref(struct rcb *b, cJSON *obj, const cJSON *rc)
{
    if (b->err)
        return;
    raycluster__build_set(b, raycluster__build_obj(b, obj, "metadata"), "ownerReferences",
                          kobj_controller_refs("ray.io/v1", "RayCluster", rc));
}

cJSON *raycluster__build_fixed_resources(struct rcb *b, const char *cpu, const char *mem)
{
    cJSON *res;
    if (b->err)
        return NULL;
    if (!(res = cJSON_CreateObject()))
        return oom(b);
    cJSON *lim = raycluster__build_obj(b, res, "limits"), *req = raycluster__build_obj(b, res, "requests");
    raycluster__build_set_str(b, lim, "cpu", cpu);
    raycluster__build_set_str(b, lim, "memory", mem);
    raycluster__build_set_str(b, req, "cpu", cpu);
    raycluster__build_set_str(b, req, "memory", mem);
    return res;
}

/* ---- names ---- */

static void clip_tail(const char *s, size_t max, char *out, size_t cap)
{
    size_t n = strlen(s);
    if (n > max)
        s += n - max;
    snprintf(out, cap, "%s", s);
}

void raycluster__check_name(const char *s, char *out, size_t cap)
{
    if (cap == 0)
        return;
    clip_tail(s, 50, out, cap);
    /* unicode.IsDigit / IsPunct on the first byte; ASCII covers every valid name. */
    if (isdigit((unsigned char)out[0]))
        out[0] = 'r';
    if (ispunct((unsigned char)out[0]) && strchr("!\"#%&'()*,-./:;?@[\\]_{}", out[0]))
        out[0] = 'r';
}

void raycluster__check_label(const char *s, char *out, size_t cap)
{
    if (cap == 0)
        return;
    clip_tail(s, 63, out, cap);
    /* Go's unicode.IsPunct is Unicode category P: $+<=>^`|~ are symbols, not punctuation. */
    if (out[0] && strchr("!\"#%&'()*,-./:;?@[\\]_{}", out[0]))
        out[0] = 'r';
}

/* ---- quantities ---- */

int raycluster__quantity_milli(const cJSON *v, int64_t *milli)
{
    char tmp[64];
    if (cJSON_IsString(v))
        return kobj_quantity_parse(v->valuestring, milli);
    if (cJSON_IsNumber(v)) {
        gotypes_float(v->valuedouble, tmp, sizeof(tmp));
        return kobj_quantity_parse(tmp, milli);
    }
    return -EINVAL;
}

int64_t raycluster__milli_ceil(int64_t milli)
{
    if (milli >= 0)
        return milli / 1000 + (milli % 1000 != 0);
    return milli / 1000;
}

/* ---- rayStartParams ---- */

int raycluster__params_set(struct rc_params *p, const char *k, const char *v)
{
    char *nv;
    for (size_t i = 0; i < p->n; i++) {
        if (!strcmp(p->kv[i].k, k)) {
            if (!(nv = strdup(v)))
                return -ENOMEM;
            free(p->kv[i].v);
            p->kv[i].v = nv;
            return 0;
        }
    }
    if (util_array_grow(&p->kv, sizeof(*p->kv), p->n, &p->cap, 16) < 0)
        return -ENOMEM;
    p->kv[p->n].k = strdup(k);
    p->kv[p->n].v = strdup(v);
    if (!p->kv[p->n].k || !p->kv[p->n].v) {
        free(p->kv[p->n].k);
        free(p->kv[p->n].v);
        return -ENOMEM;
    }
    p->n++;
    return 0;
}

const char *raycluster__params_get(const struct rc_params *p, const char *k)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->kv[i].k, k))
            return p->kv[i].v;
    return NULL;
}

void raycluster__params_free(struct rc_params *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->kv[i].k);
        free(p->kv[i].v);
    }
    free(p->kv);
    memset(p, 0, sizeof(*p));
}

int raycluster__params_load(struct rc_params *p, const cJSON *map)
{
    const cJSON *e;
    int rc;
    cJSON_ArrayForEach(e, (cJSON_IsObject(map) ? map : NULL)) {
        char tmp[64];
        const char *v;
        if (!e->string)
            continue;
        if (cJSON_IsString(e))
            v = e->valuestring;
        else if (cJSON_IsBool(e))
            v = cJSON_IsTrue(e) ? "true" : "false";
        else if (cJSON_IsNumber(e)) {
            gotypes_float(e->valuedouble, tmp, sizeof(tmp));
            v = tmp;
        } else
            continue; /* the CRD types the map as strings; anything else never reaches us */
        if ((rc = raycluster__params_set(p, e->string, v)) < 0)
            return rc;
    }
    return 0;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct rc_kv *)a)->k, ((const struct rc_kv *)b)->k);
}

static bool ieq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

char *raycluster__params_render(const struct rc_params *p)
{
    struct rc_kv *sorted = NULL;
    size_t len = 1;
    char *out = NULL, *w;
    if (p->n && !(sorted = malloc(p->n * sizeof(*sorted))))
        return NULL;
    if (p->n)
        memcpy(sorted, p->kv, p->n * sizeof(*sorted));
    if (p->n)
        qsort(sorted, p->n, sizeof(*sorted), kv_cmp);
    for (size_t i = 0; i < p->n; i++)
        len += strlen(sorted[i].k) + strlen(sorted[i].v) + 6;
    if (!(out = malloc(len)))
        goto out;
    w = out;
    *w = '\0';
    for (size_t i = 0; i < p->n; i++) {
        const char *k = sorted[i].k, *v = sorted[i].v;
        /* These take an explicit boolean; every other true/false is a bare switch. */
        bool special = !strcmp(k, "log-color") || !strcmp(k, "include-dashboard") ||
                       !strcmp(k, "include-log-monitor");
        if ((ieq(v, "true") || ieq(v, "false")) && !special) {
            if (ieq(v, "true"))
                w += sprintf(w, " --%s ", k);
        } else {
            w += sprintf(w, " --%s=%s ", k, v);
        }
    }
out:
    free(sorted);
    return out;
}

void raycluster__go_strings_text(const cJSON *arr, char *out, size_t cap)
{
    const cJSON *v;
    size_t w = (size_t)snprintf(out, cap, "[");
    cJSON_ArrayForEach(v, arr)
        if (cJSON_IsString(v) && w < cap)
            w += (size_t)snprintf(out + w, cap - w, "%s%s", w > 1 ? " " : "", v->valuestring);
    if (w < cap)
        snprintf(out + w, cap - w, "]");
}

/*
 * ctx.c - the per-reconcile context: a logger that tags every line with the
 * key and a reconcile id, the record of resourceVersions the reconcile wrote,
 * and the write helpers that fill that record. Writes go through these
 * wrappers so reconcile code cannot forget to report them: the queue keeps
 * the key until the cache has seen every recorded rv (read-your-writes).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "kobj/kobj.h"
#include "reconcilers/host/internal.h"
#include "util/util.h"

#define HOST_LOG_PAIRS 12

void host_log(const struct host_ctx *ctx, int level, const char *msg, ...)
{
    const char *kv[2 * HOST_LOG_PAIRS] = { 0 };
    va_list ap;
    va_start(ap, msg);
    /* copy the caller's pairs so the fixed tags can go first */
    for (size_t i = 0; i < 2 * HOST_LOG_PAIRS; i++) {
        const char *s = va_arg(ap, const char *);
        if (!s && i % 2 == 0)
            break;
        kv[i] = s;
    }
    va_end(ap);
    if (level < LOG_DEBUG || !log_enabled(level))
        return;
    log_write(level, msg, "controller", ctx->kind ? ctx->kind->name : NULL,
              "namespace", ctx->ns[0] ? ctx->ns : NULL, "name", ctx->name,
              "reconcileID", ctx->reconcile_id,
              kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], kv[6], kv[7], kv[8], kv[9],
              kv[10], kv[11], kv[12], kv[13], kv[14], kv[15], kv[16], kv[17], kv[18],
              kv[19], kv[20], kv[21], kv[22], kv[23], NULL);
}

/* A random (v4) UUID as controller-runtime's reconcileID. */
static void make_uuid(char out[40])
{
    unsigned char b[16];
    if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
        /* no entropy yet: a time-based id is still unique enough for logs */
        uint64_t t = util_now_ns();
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 31);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
             b[12], b[13], b[14], b[15]);
}

void host_rand_suffix(char out[6])
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char b[5];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        uint64_t t = util_now_ns();
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)(t >> (i * 7));
    }
    for (int i = 0; i < 5; i++)
        out[i] = alpha[b[i] % (sizeof(alpha) - 1)];
    out[5] = '\0';
}

int64_t host_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int host_ctx_init(struct host_ctx *ctx, const struct host_kind *kind, const char *key,
                  struct kube_client *kube, struct host_view *view)
{
    if (!ctx || !key)
        return -EINVAL;
    memset(ctx, 0, sizeof(*ctx));
    ctx->kind = kind;
    ctx->key = key;
    ctx->kube = kube;
    ctx->view = view;
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    size_t nslen = slash ? (size_t)(slash - key) : 0;
    if (nslen >= sizeof(ctx->ns) || strlen(name) >= sizeof(ctx->name) || !*name ||
        strchr(name, '/'))
        return -EINVAL;
    memcpy(ctx->ns, key, nslen);
    ctx->ns[nslen] = '\0';
    strcpy(ctx->name, name);
    make_uuid(ctx->reconcile_id);
    return 0;
}

void host__kube_slot_init(struct host_kube_slot *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
}

void host__kube_slot_set(struct host_kube_slot *s, struct kube_client *c)
{
    pthread_mutex_lock(&s->mu);
    s->client = c;
    s->done = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

void host__kube_slot_destroy(struct host_kube_slot *s)
{
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
}

struct kube_client *host_kube(struct host_ctx *ctx)
{
    if (ctx->kube || !ctx->kube_slot)
        return ctx->kube;
    struct host_kube_slot *s = ctx->kube_slot;
    pthread_mutex_lock(&s->mu);
    while (!s->done)
        pthread_cond_wait(&s->cond, &s->mu);
    ctx->kube = s->client;
    pthread_mutex_unlock(&s->mu);
    return ctx->kube;
}

int host_ctx_record_write(struct host_ctx *ctx, const char *cache_type, const char *rv)
{
    if (!ctx || !cache_type || !rv || !*cache_type || !*rv ||
        strlen(cache_type) >= IPC_TYPE_MAX || strlen(rv) >= IPC_RV_MAX)
        return -EINVAL;
    bool numeric = kobj_rv_numeric(rv);
    for (size_t i = 0; i < ctx->n_written; i++) {
        struct ipc_written *w = &ctx->written[i];
        if (strcmp(w->type, cache_type) != 0)
            continue;
        if (strcmp(w->rv, rv) == 0)
            return 0;
        /* the cache's rv of a type only grows: seeing the highest implies the rest */
        if (numeric && kobj_rv_numeric(w->rv)) {
            if (kobj_rv_cmp(rv, w->rv) > 0)
                strcpy(w->rv, rv);
            return 0;
        }
    }
    if (ctx->n_written >= IPC_WRITTEN_MAX) {
        if (!ctx->written_overflow)
            host_log(ctx, LOG_WARN, "too many written types to report; read-your-writes "
                     "covers the first ones only", "type", cache_type, NULL);
        ctx->written_overflow = true;
        return -ENOSPC;
    }
    struct ipc_written *w = &ctx->written[ctx->n_written++];
    strcpy(w->type, cache_type);
    strcpy(w->rv, rv);
    return 0;
}

int host_cache_type(const struct kube_resource *r, char *out, size_t cap)
{
    if (!r || !r->version || !r->plural || !out)
        return -EINVAL;
    int n = (r->group && *r->group)
                ? snprintf(out, cap, "%s/%s/%s", r->group, r->version, r->plural)
                : snprintf(out, cap, "%s/%s", r->version, r->plural);
    return n < 0 || (size_t)n >= cap ? -EINVAL : 0;
}

/* After a write: record the rv the server answered with. Without a client (kc NULL)
 * nothing was sent and res was not touched. */
static int after_write(struct host_ctx *ctx, const struct kube_client *kc,
                       const struct kube_resource *r, int rc, const struct kube_result *res,
                       const char *verb)
{
    if (!kc)
        return -ENOTCONN;
    if (rc < 0) {
        char why[640];
        host_log(ctx, LOG_DEBUG, "write failed", "verb", verb, "resource", r->plural,
                 "error", kube_result_error(res, rc, why, sizeof(why)), NULL);
        return rc;
    }
    char type[IPC_TYPE_MAX];
    if (res->resource_version[0] && host_cache_type(r, type, sizeof(type)) == 0)
        (void)host_ctx_record_write(ctx, type, res->resource_version);
    return rc;
}

/* The writes of a whole object (create, update, update-status) differ only in the
 * client call and the verb logged. */
typedef int (*obj_write_fn)(struct kube_client *c, const struct kube_resource *r, const char *ns,
                            const cJSON *obj, struct kube_result *res);

static int write_obj(struct host_ctx *ctx, obj_write_fn fn, const char *verb,
                     const struct kube_resource *r, const char *ns, const cJSON *obj,
                     struct kube_result *res)
{
    struct kube_client *kc = host_kube(ctx);
    return after_write(ctx, kc, r, kc ? fn(kc, r, ns, obj, res) : -ENOTCONN, res, verb);
}

int host_create(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res)
{
    return write_obj(ctx, kube_create, "create", r, ns, obj, res);
}

int host_create_once(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                     const cJSON *obj, struct kube_ticket *t, struct kube_result *res)
{
    struct kube_client *kc = host_kube(ctx);
    int rc = kc ? kube_create_once(kc, r, ns, obj, t, res) : -ENOTCONN;
    return after_write(ctx, kc, r, rc, res, "create");
}

int host_ticket_take(struct host_ctx *ctx, const struct kube_resource *r, struct kube_ticket *t)
{
    struct kube_client *kc = host_kube(ctx);
    if (!kc)
        return -ENOTCONN;
    kube_ticket_take(kc, r, t);
    return 0;
}

int host_update(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                const cJSON *obj, struct kube_result *res)
{
    return write_obj(ctx, kube_update, "update", r, ns, obj, res);
}

int host_update_status(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                       const cJSON *obj, struct kube_result *res)
{
    return write_obj(ctx, kube_update_status, "update-status", r, ns, obj, res);
}

int host_patch(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
               const char *name, const char *patch, size_t len,
               const struct kube_patch_opts *o, struct kube_result *res)
{
    struct kube_client *kc = host_kube(ctx);
    int rc = kc ? kube_patch(kc, r, ns, name, patch, len, o, res) : -ENOTCONN;
    return after_write(ctx, kc, r, rc, res, "patch");
}

int host_patch_finalizer(struct host_ctx *ctx, const struct kube_resource *r, const cJSON *obj,
                         const char *finalizer, bool add, struct kube_result *res)
{
    struct kube_patch_opts po = { .type = KUBE_PATCH_MERGE };
    char *text = kobj_finalizers_patch(obj, finalizer, add);
    int rc = text ? host_patch(ctx, r, ctx->ns, ctx->name, text, strlen(text), &po, res) : -ENOMEM;
    free(text);
    return rc;
}

/* A delete answers with the object (finalizers / graceful deletion: its new
 * rv is recorded) or a Status (no rv: the DELETE event carries one we cannot
 * know, so nothing is gated; the reconcile must tolerate seeing it briefly). */
int host_delete(struct host_ctx *ctx, const struct kube_resource *r, const char *ns,
                const char *name, const struct kube_delete_opts *o, struct kube_result *res)
{
    struct kube_client *kc = host_kube(ctx);
    int rc = kc ? kube_delete(kc, r, ns, name, o, res) : -ENOTCONN;
    return after_write(ctx, kc, r, rc, res, "delete");
}

void host__outcome_to_ipc(int rc, const struct host_result *res, const struct host_ctx *ctx,
                          struct ipc_outcome *out)
{
    memset(out, 0, sizeof(*out));
    out->n_written = ctx ? ctx->n_written : 0;
    out->written = ctx ? ctx->written : NULL;
    enum host_outcome o = res ? res->outcome : HOST_OK;
    if (rc < 0 && o != HOST_TERMINAL)
        o = HOST_ERROR;
    const char *msg = res && res->message[0] ? res->message : NULL;
    switch (o) {
    case HOST_OK:
        out->kind = IPC_OUTCOME_OK;
        break;
    case HOST_REQUEUE_AFTER:
        out->kind = IPC_OUTCOME_REQUEUE_AFTER;
        out->after_ns = res->after_ms * 1000000ull;
        break;
    case HOST_REQUEUE:
        /* controller-runtime: Requeue=true is AddRateLimited, like an error */
        out->kind = IPC_OUTCOME_ERROR;
        break;
    case HOST_ERROR:
        out->kind = IPC_OUTCOME_ERROR;
        /* kube_strerror: a 409 is -ESTALE, whose libc text ("Stale file
         * handle") would mislead whoever reads the log */
        out->message = msg ? msg : (rc < 0 ? kube_strerror(rc) : NULL);
        break;
    case HOST_TERMINAL:
        out->kind = IPC_OUTCOME_TERMINAL;
        out->message = msg;
        break;
    }
}

int host__outcome_log_level(int rc, const struct ipc_outcome *out)
{
    if (out->kind == IPC_OUTCOME_TERMINAL)
        return LOG_ERROR;
    if (out->kind != IPC_OUTCOME_ERROR || rc >= 0)
        return -1;
    /* A 409 is optimistic concurrency working: someone wrote the object between our read
     * and our write, and the requeue reads it again. It is still counted as an error in
     * the metrics, as controller-runtime counts it, but logging it at error level would
     * page someone for the normal case (a user's kubectl edit racing a status write). */
    return rc == -ESTALE ? LOG_INFO : LOG_ERROR;
}

bool host_feature_enabled(const struct host_ctx *ctx, const char *name, bool dflt)
{
    const char *g = ctx && ctx->settings ? ctx->settings->feature_gates : NULL;
    size_t n = name ? strlen(name) : 0;
    bool v = dflt;
    /* "A=true,B=false": the last mention wins, as with Go's flag map */
    for (const char *p = g; p && *p && n;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && *p == ' ') {
            p++;
            len--;
        }
        if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            const char *val = p + n + 1;
            size_t vl = len - n - 1;
            if (vl == 4 && strncasecmp(val, "true", 4) == 0)
                v = true;
            else if (vl == 5 && strncasecmp(val, "false", 5) == 0)
                v = false;
        }
        p = end ? end + 1 : NULL;
    }
    return v;
}

/* KubeRay v1.7's gates (ray-operator/pkg/features) plus component-base's
 * AllAlpha/AllBeta */
static const char *const known_gates[] = {
    "RayClusterStatusConditions", "RayJobDeletionPolicy", "RayMultiHostIndexing",
    "RayServiceIncrementalUpgrade", "RayCronJob", "SidecarSubmitterRestart",
    "RayClusterNetworkPolicy", "GCSFaultToleranceEmbeddedStorage", "RayClusterMTLS",
    "RayClusterHistoryServer", "KubernetesWAS", "AllAlpha", "AllBeta", NULL,
};

static bool parse_go_bool(const char *v, size_t n)
{
    static const char *const ok[] = { "1", "t", "T", "TRUE", "true", "True",
                                      "0", "f", "F", "FALSE", "false", "False", NULL };
    for (int i = 0; ok[i]; i++)
        if (strlen(ok[i]) == n && strncmp(ok[i], v, n) == 0)
            return true;
    return false;
}

int host_feature_gates_check(const char *gates, char *err, size_t errlen)
{
    /* featuregate.Set: "k=v" pairs split on ',', space-trimmed, each value a
     * Go bool, each key a gate the binary knows */
    for (const char *p = gates; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len) {
            const char *eq = memchr(p, '=', len);
            size_t kl = eq ? (size_t)(eq - p) : len;
            while (kl && p[kl - 1] == ' ')
                kl--;
            if (!eq) {
                snprintf(err, errlen, "missing bool value for %.*s", (int)kl, p);
                return -EINVAL;
            }
            const char *v = eq + 1;
            size_t vl = len - (size_t)(v - p);
            while (vl && *v == ' ') {
                v++;
                vl--;
            }
            if (!parse_go_bool(v, vl)) {
                snprintf(err, errlen, "invalid value of %.*s=%.*s, err: strconv.ParseBool: "
                         "parsing \"%.*s\": invalid syntax", (int)kl, p, (int)vl, v, (int)vl, v);
                return -EINVAL;
            }
            bool known = false;
            for (int i = 0; known_gates[i] && !known; i++)
                known = strlen(known_gates[i]) == kl && strncmp(known_gates[i], p, kl) == 0;
            if (!known) {
                snprintf(err, errlen, "unrecognized feature gate: %.*s", (int)kl, p);
                return -EINVAL;
            }
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

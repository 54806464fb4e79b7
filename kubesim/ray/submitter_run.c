/*
 * ray_submitter_run.c - plays a Ray submitter container: one thread per running
 * container executes its script tree (ray_submitter.c) the way bash (with -e when given)
 * would, the Ray commands themselves being ray_cli.c. Output goes to the container's log
 * (pods/log, pod_log.c); the kubelet polls ray_submitter_poll for the exit code.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kubesim/ray/internal.h"

#define LOOP_MIN_MS    100     /* an until/while iteration never spins faster */
#define MAX_LOG        (4u << 20)

struct run_arg {
    struct ray *r;
    struct ray_sub *s;
};

static void sub_free(struct ray_sub *s)
{
    if (!s)
        return;
    free(s->uid);
    cJSON_Delete(s->pod);
    cJSON_Delete(s->env);
    ray_script_free(s->script);
    buf_free(&s->log);
    buf_free(&s->prev);
    free(s);
}

/* ---- output, sleeping --------------------------------------------------------------- */

void ray_exec_write(struct ray_exec *x, bool quiet, const char *text, size_t len)
{
    if (quiet || !len)
        return;
    pthread_mutex_lock(&x->r->mu);
    if (x->s->log.len + len <= MAX_LOG)
        buf_append(&x->s->log, text, len);
    pthread_cond_broadcast(&x->r->cv);
    pthread_mutex_unlock(&x->r->mu);
}

void ray_exec_printf(struct ray_exec *x, bool quiet, const char *fmt, ...)
{
    char small[2048];
    va_list ap;
    int n;

    if (quiet)
        return;
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    ray_exec_write(x, false, small, (size_t)n < sizeof(small) ? (size_t)n : sizeof(small) - 1);
}

/* Sleeps ms unless the container is cancelled: 0, or -ECANCELED. */
int ray_exec_nap(struct ray_exec *x, long ms)
{
    struct timespec dl;
    int rc = 0;

    util_deadline_ms(&dl, ms);
    pthread_mutex_lock(&x->r->mu);
    while (!x->s->cancel && !x->r->stopping)
        if (pthread_cond_timedwait(&x->r->cv, &x->r->mu, &dl) == ETIMEDOUT)
            break;
    if (x->s->cancel || x->r->stopping)
        rc = -ECANCELED;
    pthread_mutex_unlock(&x->r->mu);
    return rc;
}

const char *ray_exec_env(const struct ray_exec *x, const char *name)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, x->s->env)
        if (kobj_str(e, "name") && !strcmp(kobj_str(e, "name"), name))
            return kobj_str(e, "value");
    return NULL;
}

/* ---- the interpreter --------------------------------------------------------------------- */

static int run_list(struct ray_exec *x, const struct ray_node *n, bool in_cond, bool qo, bool qe);

static int run_cmd(struct ray_exec *x, const struct ray_node *n, bool qo, bool qe)
{
    char *const *av = n->argv;
    const char *base = strrchr(av[0], '/');

    base = base ? base + 1 : av[0];
    if (!strcmp(base, ":") || !strcmp(base, "true"))
        return 0;
    if (!strcmp(base, "false"))
        return 1;
    if (!strcmp(base, "echo")) {
        size_t i = 1;
        bool nl = true;
        if (n->argc > 1 && !strcmp(av[1], "-n")) {
            nl = false;
            i++;
        }
        for (size_t k = i; k < n->argc; k++) {
            ray_exec_write(x, qo, k > i ? " " : "", k > i ? 1 : 0);
            ray_exec_write(x, qo, av[k], strlen(av[k]));
        }
        if (nl)
            ray_exec_write(x, qo, "\n", 1);
        return 0;
    }
    if (!strcmp(base, "sleep")) {
        double s = n->argc > 1 ? strtod(av[1], NULL) : 0;
        if (s < 0 || s != s)
            s = 0;
        if (s > 3600)
            s = 3600;
        return ray_exec_nap(x, (long)(s * 1000)) < 0 ? 143 : 0;
    }
    if (!strcmp(base, "exit")) {
        x->exited = true;
        x->code = n->argc > 1 ? (int)(strtol(av[1], NULL, 10) & 255) : 0;
        return x->code;
    }
    if (!strcmp(base, "set")) {
        for (size_t i = 1; i < n->argc; i++) {
            if (av[i][0] == '-' && strchr(av[i], 'e'))
                x->errexit = true;
            if (av[i][0] == '+' && strchr(av[i], 'e'))
                x->errexit = false;
        }
        return 0;
    }
    if (!strcmp(base, "ray"))
        return ray_cli_ray(x, av, n->argc, qo, qe);
    if (!strcmp(base, "submitter"))
        return ray_cli_lightweight(x, av, n->argc, qo, qe);
    if (!strcmp(base, "python") || !strcmp(base, "python3"))
        return ray_cli_python(x, av, n->argc, qe);
    ray_exec_printf(x, qe, "bash: line 1: %s: command not found\n", av[0]);
    return 127;
}

static int run_node(struct ray_exec *x, const struct ray_node *n, bool in_cond, bool qo, bool qe)
{
    int st;

    qo |= n->quiet_out;
    qe |= n->quiet_err;
    switch (n->kind) {
    case RN_CMD:
        return run_cmd(x, n, qo, qe);
    case RN_IF:
        st = run_list(x, n->cond, true, qo, qe);
        if (x->exited)
            return x->code;
        if (st == 0)
            return run_list(x, n->body, in_cond, qo, qe);
        return n->els ? run_list(x, n->els, in_cond, qo, qe) : 0;
    default:   /* RN_UNTIL, RN_WHILE */
        st = 0;
        for (;;) {
            int c = run_list(x, n->cond, true, qo, qe);
            if (x->exited)
                return x->code;
            if (n->kind == RN_UNTIL ? c == 0 : c != 0)
                return st;
            st = run_list(x, n->body, in_cond, qo, qe);
            if (x->exited)
                return x->code;
            if (ray_exec_nap(x, LOOP_MIN_MS) < 0) {
                x->exited = true;
                x->code = 143;
                return 143;
            }
        }
    }
}

static int run_list(struct ray_exec *x, const struct ray_node *n, bool in_cond, bool qo, bool qe)
{
    int status = 0;

    for (; n; n = n->next) {
        int st;
        bool last_of_and_or = !n->next || n->next->join == RJ_SEQ;

        if ((n->join == RJ_AND && status != 0) || (n->join == RJ_OR && status == 0))
            continue;
        st = run_node(x, n, in_cond, qo, qe);
        if (x->exited)
            return x->code;
        status = n->negate ? !st : st;
        if (x->s->cancel || x->r->stopping) {
            x->exited = true;
            x->code = 143;
            return 143;
        }
        if (x->errexit && !in_cond && status != 0 && !n->negate && last_of_and_or) {
            x->exited = true;
            x->code = status;
            return status;
        }
    }
    return status;
}

static void *run_thread(void *arg)
{
    struct run_arg *ra = arg;
    struct ray_exec x = { .r = ra->r, .s = ra->s, .errexit = ra->s->script->errexit };
    struct ray_sub *s = ra->s;
    struct ray *r = ra->r;
    int code;

    free(ra);
    code = run_list(&x, s->script->list, false, false, false);
    if (x.exited)
        code = x.code;
    pthread_mutex_lock(&r->mu);
    s->done = true;
    s->running = false;
    s->code = code & 255;
    ray_script_free(s->script);
    s->script = NULL;
    if (s->gone) {
        HASH_DEL(r->subs, s);
        sub_free(s);
    }
    r->threads--;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- the kubelet's hook ----------------------------------------------------------------- */

bool ray_submitter_start(struct ray *r, const cJSON *pod)
{
    const cJSON *md = kobj_get(pod, "metadata"), *ct;
    const char *uid = kobj_str(md, "uid"), *ns = kobj_str(md, "namespace");
    struct ray_script *script = NULL;
    const cJSON *env = NULL, *cts = kobj_get(kobj_get(pod, "spec"), "containers");
    const char *cname = NULL;
    struct ray_sub *s = NULL;
    struct run_arg *ra;
    pthread_attr_t attr;
    pthread_t th;
    char err[256];

    if (!r || !uid || !ns)
        return false;
    cJSON_ArrayForEach(ct, cts) {
        int rc = ray_script_from_container(ct, &script, err, sizeof(err));
        if (rc == 0) {
            env = kobj_get(ct, "env");
            cname = kobj_str(ct, "name");
            break;
        }
        if (rc != -ENOENT)
            log_warn("ray: submitter command not understood", "pod", kobj_str(md, "name"),
                     "error", err, NULL);
    }
    if (!script)
        return false;
    cJSON *renv = ray_env_resolve(r, ns, env);   /* store reads: before r->mu */
    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->subs, uid, s);
    if (s && s->running) {
        pthread_mutex_unlock(&r->mu);
        ray_script_free(script);
        cJSON_Delete(renv);
        return true;
    }
    if (!s) {
        if (!(s = calloc(1, sizeof(*s))) || !(s->uid = strdup(uid))) {
            free(s);
            goto fail;
        }
        HASH_ADD_KEYPTR(hh, r->subs, s->uid, strlen(s->uid), s);
    } else {
        /* a restarted container: the last run's output is the --previous log */
        buf_free(&s->prev);
        s->prev = s->log;
        memset(&s->log, 0, sizeof(s->log));
        s->has_prev = true;
    }
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->container, sizeof(s->container), "%s", cname ? cname : "");
    cJSON_Delete(s->pod);
    cJSON_Delete(s->env);
    s->pod = cJSON_Duplicate(pod, true);
    s->env = renv;
    renv = NULL;
    s->script = script;
    script = NULL;
    s->done = s->cancel = false;
    s->running = true;
    s->code = 0;
    if (r->stopping || !(ra = malloc(sizeof(*ra))))
        goto fail_run;
    ra->r = r;
    ra->s = s;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, run_thread, ra) != 0) {
        pthread_attr_destroy(&attr);
        free(ra);
        goto fail_run;
    }
    pthread_attr_destroy(&attr);
    r->threads++;
    pthread_mutex_unlock(&r->mu);
    log_info("ray: playing submitter pod", "namespace", ns, "pod", kobj_str(md, "name"),
             "container", s->container, NULL);
    /* A sidecar submitter (KubeRay's SidecarMode) shares the Pod with the Ray head: the
     * kubelet models one exit per Pod, so its exit must not end the head's Pod. */
    return cJSON_GetArraySize(cts) == 1;
fail_run:
    /* cannot run it: the container fails at once rather than hanging */
    s->running = false;
    s->done = true;
    s->code = 128;
    ray_script_free(s->script);
    s->script = NULL;
    pthread_mutex_unlock(&r->mu);
    return true;
fail:
    pthread_mutex_unlock(&r->mu);
    ray_script_free(script);
    cJSON_Delete(renv);
    return false;
}

bool ray_submitter_poll(struct ray *r, const char *uid, int *code)
{
    struct ray_sub *s = NULL;
    bool done = true;

    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->subs, uid, s);
    if (s && !s->done)
        done = false;
    *code = s ? s->code : 137;
    pthread_mutex_unlock(&r->mu);
    return done;
}

bool ray_submitter_sidecar(struct ray *r, const char *uid, char *container, size_t cap)
{
    struct ray_sub *s = NULL;
    bool side = false;

    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->subs, uid, s);
    if (s && s->pod && cJSON_GetArraySize(kobj_get(kobj_get(s->pod, "spec"), "containers")) > 1) {
        snprintf(container, cap, "%s", s->container);
        side = true;
    }
    pthread_mutex_unlock(&r->mu);
    return side;
}

void ray_submitter_cancel(struct ray *r, const char *uid)
{
    struct ray_sub *s = NULL;

    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->subs, uid, s);
    if (s) {
        s->cancel = true;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

/* The Pod is gone from the store: forget its submitter (now, or when its thread ends). */
void ray_submitter_gone(struct ray *r, const char *uid)
{
    struct ray_sub *s = NULL;

    HASH_FIND_STR(r->subs, uid, s);
    if (!s)
        return;
    s->cancel = s->gone = true;
    pthread_cond_broadcast(&r->cv);
    if (!s->running) {
        HASH_DEL(r->subs, s);
        sub_free(s);
    }
}

int ray_submitter_log(struct ray *r, const char *uid, const char *container, bool previous,
                      size_t from, struct buf *out, bool *running)
{
    struct ray_sub *s = NULL;
    int rc = 0;

    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->subs, uid, s);
    if (!s || strcmp(s->container, container) || (previous && !s->has_prev)) {
        rc = -ENOENT;
    } else {
        const struct buf *b = previous ? &s->prev : &s->log;
        if (from < b->len && buf_append(out, b->data + from, b->len - from) < 0)
            rc = -ENOMEM;
        *running = !previous && s->running;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void ray_subs_free(struct ray *r)
{
    struct ray_sub *s, *st;

    HASH_ITER(hh, r->subs, s, st) {
        HASH_DEL(r->subs, s);
        sub_free(s);
    }
}

/*
 * submitter_run.c - plays a Ray submitter container: one thread per running
 * container executes its script tree (submitter.c) the way bash (with -e when given)
 * would, the Ray commands themselves being cli.c. Output goes to the container's log
 * (pods/log, pod_log.c); the kubelet polls ray_submitter_poll for the exit code.
 */
#include <errno.h>
#include <regex.h>
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
    ray__script_free(s->script);
    buf_free(&s->log);
    buf_free(&s->prev);
    free(s);
}

/* ---- output, sleeping --------------------------------------------------------------- */

void ray__exec_write(struct ray_exec *x, bool quiet, const char *text, size_t len)
{
    if (quiet || !len)
        return;
    pthread_mutex_lock(&x->r->mu);
    if (x->s->log.len + len <= MAX_LOG)
        buf_append(&x->s->log, text, len);
    pthread_cond_broadcast(&x->r->cv);
    pthread_mutex_unlock(&x->r->mu);
}

void ray__exec_printf(struct ray_exec *x, bool quiet, const char *fmt, ...)
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
    ray__exec_write(x, false, small, (size_t)n < sizeof(small) ? (size_t)n : sizeof(small) - 1);
}

void ray__exec_stdout(struct ray_exec *x, bool quiet, const char *text, size_t len)
{
    if (quiet || !len)
        return;
    if (!x->pipe_out) {
        ray__exec_write(x, false, text, len);
        return;
    }
    /* a pipe holds what the log would: the same bound */
    if (x->pipe_out->len + len <= MAX_LOG)
        (void)buf_append(x->pipe_out, text, len);
}

/* Sleeps ms unless the container is cancelled: 0, or -ECANCELED. */
int ray__exec_nap(struct ray_exec *x, long ms)
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

const char *ray__exec_env(const struct ray_exec *x, const char *name)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, x->s->env)
        if (kobj_str(e, "name") && !strcmp(kobj_str(e, "name"), name))
            return kobj_str(e, "value");
    return NULL;
}

/* ---- the interpreter --------------------------------------------------------------------- */

/* `grep [-q] [-v] [-i] [-F|-E] [-e] PATTERN` over the pipe's input (the only input a
 * submitter's grep has): the matching lines, 0 when one matched, 1 when none, 2 for a
 * usage error or a FILE operand (there are no files in the sandbox). POSIX regex. */
static int run_grep(struct ray_exec *x, char *const *av, size_t ac, bool qo, bool qe)
{
    const char *pat = NULL, *p, *end;
    bool quiet = false, invert = false;
    int cflags = REG_NOSUB, rc = 1;
    size_t i = 1;
    regex_t re;

    for (; i < ac && av[i][0] == '-' && av[i][1]; i++) {
        if (!strcmp(av[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(av[i], "-e") && i + 1 < ac) {
            pat = av[++i];
            i++;
            break;
        }
        for (const char *f = av[i] + 1; *f; f++) {
            if (*f == 'q' || *f == 's')
                quiet |= *f == 'q';
            else if (*f == 'v')
                invert = true;
            else if (*f == 'i')
                cflags |= REG_ICASE;
            else if (*f == 'E')
                cflags |= REG_EXTENDED;
            else if (*f != 'F' && *f != 'G') {
                ray__exec_printf(x, qe, "grep: invalid option -- '%c'\n", *f);
                return 2;
            }
        }
    }
    if (!pat && i < ac)
        pat = av[i++];
    if (!pat) {
        ray__exec_printf(x, qe, "Usage: grep [OPTION]... PATTERNS [FILE]...\n");
        return 2;
    }
    if (i < ac) {
        ray__exec_printf(x, qe, "grep: %s: No such file or directory\n", av[i]);
        return 2;
    }
    if (regcomp(&re, pat, cflags) != 0) {
        ray__exec_printf(x, qe, "grep: Unmatched ( or \\(\n");
        return 2;
    }
    p = x->pipe_in ? x->pipe_in : "";
    end = p + x->pipe_in_len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *line = strndup(p, len);
        bool hit;

        if (!line)
            break;
        hit = (regexec(&re, line, 0, NULL, 0) == 0) != invert;
        free(line);
        if (hit) {
            rc = 0;
            if (quiet)
                break;
            ray__exec_stdout(x, qo, p, len);
            ray__exec_stdout(x, qo, "\n", 1);
        }
        p += len + (nl ? 1 : 0);
    }
    regfree(&re);
    return rc;
}

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
            ray__exec_stdout(x, qo, k > i ? " " : "", k > i ? 1 : 0);
            ray__exec_stdout(x, qo, av[k], strlen(av[k]));
        }
        if (nl)
            ray__exec_stdout(x, qo, "\n", 1);
        return 0;
    }
    if (!strcmp(base, "sleep")) {
        double s = n->argc > 1 ? strtod(av[1], NULL) : 0;
        if (s < 0 || s != s)
            s = 0;
        if (s > 3600)
            s = 3600;
        return ray__exec_nap(x, (long)(s * 1000)) < 0 ? 143 : 0;
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
        return ray__cli_ray(x, av, n->argc, qo, qe);
    if (!strcmp(base, "submitter"))
        return ray__cli_lightweight(x, av, n->argc, qo, qe);
    if (!strcmp(base, "python") || !strcmp(base, "python3"))
        return ray__cli_python(x, av, n->argc, qe);
    if (!strcmp(base, "wget"))
        return ray__cli_wget(x, av, n->argc, qo, qe);
    if (!strcmp(base, "grep"))
        return run_grep(x, av, n->argc, qo, qe);
    ray__exec_printf(x, qe, "bash: line 1: %s: command not found\n", av[0]);
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
            if (ray__exec_nap(x, LOOP_MIN_MS) < 0) {
                x->exited = true;
                x->code = 143;
                return 143;
            }
        }
    }
}

/* Runs the pipeline that starts at n (n and the nodes joined to it by RJ_PIPE): each
 * one's standard output is the next one's input, the status is the last one's. *last is
 * set to the pipeline's last node. */
static int run_pipeline(struct ray_exec *x, const struct ray_node *n, bool in_cond, bool qo,
                        bool qe, const struct ray_node **last)
{
    struct buf in = { 0 }, out = { 0 };
    int st = 0;

    for (;;) {
        bool piped = n->next && n->next->join == RJ_PIPE;

        x->pipe_in = in.data ? in.data : "";
        x->pipe_in_len = in.len;
        x->pipe_out = piped ? &out : NULL;
        st = run_node(x, n, in_cond, qo, qe);
        x->pipe_in = NULL;
        x->pipe_in_len = 0;
        x->pipe_out = NULL;
        if (!piped || x->exited)
            break;
        buf_free(&in);
        in = out;
        memset(&out, 0, sizeof(out));
        n = n->next;
    }
    while (n->next && n->next->join == RJ_PIPE)
        n = n->next;
    *last = n;
    buf_free(&in);
    buf_free(&out);
    return st;
}

static int run_list(struct ray_exec *x, const struct ray_node *n, bool in_cond, bool qo, bool qe)
{
    int status = 0;

    while (n) {
        const struct ray_node *first = n, *last = n;
        bool last_of_and_or;
        int st;

        if ((n->join == RJ_AND && status != 0) || (n->join == RJ_OR && status == 0)) {
            /* the whole pipeline is skipped */
            while (n->next && n->next->join == RJ_PIPE)
                n = n->next;
            n = n->next;
            continue;
        }
        st = run_pipeline(x, n, in_cond, qo, qe, &last);
        if (x->exited)
            return x->code;
        /* bash: "! a | b" negates the pipeline */
        status = first->negate ? !st : st;
        if (x->s->cancel || x->r->stopping) {
            x->exited = true;
            x->code = 143;
            return 143;
        }
        last_of_and_or = !last->next || last->next->join == RJ_SEQ;
        if (x->errexit && !in_cond && status != 0 && !first->negate && last_of_and_or) {
            x->exited = true;
            x->code = status;
            return status;
        }
        n = last->next;
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
    ray__script_free(s->script);
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
    char err[256];

    if (!r || !uid || !ns)
        return false;
    cJSON_ArrayForEach(ct, cts) {
        int rc = ray__script_from_container(ct, &script, err, sizeof(err));
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
    cJSON *renv = ray__env_resolve(r, ns, env);   /* store reads: before r->mu */
    pthread_mutex_lock(&r->mu);
    HASH_FIND_STR(r->subs, uid, s);
    if (s && s->running) {
        pthread_mutex_unlock(&r->mu);
        ray__script_free(script);
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
    if (util_thread_detached(run_thread, ra) < 0) {
        free(ra);
        goto fail_run;
    }
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
    ray__script_free(s->script);
    s->script = NULL;
    pthread_mutex_unlock(&r->mu);
    return true;
fail:
    pthread_mutex_unlock(&r->mu);
    ray__script_free(script);
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
void ray__submitter_gone(struct ray *r, const char *uid)
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

int ray__submitter_log(struct ray *r, const char *uid, const char *container, bool previous,
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

void ray__subs_free(struct ray *r)
{
    struct ray_sub *s, *st;

    HASH_ITER(hh, r->subs, s, st) {
        HASH_DEL(r->subs, s);
        sub_free(s);
    }
}

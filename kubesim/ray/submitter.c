/*
 * submitter.c - reads a container's command into a small script tree the
 * submitter player (submitter_run.c) executes. Pure and bounded: it is fed
 * outside bytes (any Pod's command, args and env) and fuzzed
 * (tests/fuzz/fuzz_ray_submitter.c).
 *
 * The shapes understood are the ones KubeRay v1.7 generates (common/job.go
 * BuildJobSubmitCommand, wrapped as ["/bin/bash", "-ce", "--", SCRIPT]) and what users
 * write in submitterPodTemplate: a bash -c script or a plain argv. The script language
 * is the subset those commands use: words with '...' "..." \ quoting and $VAR/${VAR}
 * expansion from the container's env; ; && || & | and newlines; if/elif/else/fi,
 * until/while ... do ... done; '!' negation; redirections (only "to /dev/null" matters:
 * it hides that output); # comments. A pipe runs its commands one after another, the
 * left one's standard output (echo, wget, grep) given to the right one as its input.
 * A container is a submitter when its script runs `ray job ...` or KubeRay's
 * light-weight /submitter.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/ray/internal.h"
#include "util/util.h"

#define MAX_TOKENS  4096
#define MAX_DEPTH   16

enum { T_WORD, T_SEMI, T_AND, T_OR, T_PIPE, T_EOF };

struct tok {
    int type;
    bool quoted;             /* some part was quoted: never a keyword */
    char *text;              /* T_WORD */
    int redir;               /* 0, or a redirection: 1 stdout, 2 stderr, 3 both */
    bool devnull;            /* the redirection's target is /dev/null (or &1 for 2>&1) */
};

struct lexer {
    const char *s, *end;
    const cJSON *env;
    struct tok *toks;
    size_t n, cap;
    char *err;
    size_t errlen;
};

struct parser {
    struct tok *t;
    size_t n, i;
    int depth;
    size_t nodes;
    char *err;
    size_t errlen;
};

static const char *env_lookup(const cJSON *env, const char *name, size_t n)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, env) {
        const char *k = kobj_str(e, "name");
        if (k && strlen(k) == n && !memcmp(k, name, n)) {
            const char *v = kobj_str(e, "value");
            return v ? v : "";
        }
    }
    return "";
}

static bool is_name_char(char c, bool first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (!first && c >= '0' && c <= '9');
}

/* Expands $NAME / ${NAME} at p (p[0] == '$') into b; returns the bytes consumed. */
static size_t expand(struct lexer *lx, const char *p, struct buf *b, int *rc)
{
    const char *q = p + 1;
    size_t n = 0;

    if (q < lx->end && *q == '{') {
        const char *close = memchr(q, '}', (size_t)(lx->end - q));
        if (!close) {
            *rc |= buf_append(b, "$", 1);
            return 1;
        }
        n = (size_t)(close - q - 1);
        *rc |= buf_puts(b, env_lookup(lx->env, q + 1, n));
        return (size_t)(close - p) + 1;
    }
    while (q + n < lx->end && is_name_char(q[n], n == 0))
        n++;
    if (n == 0) {
        if (q < lx->end && *q == '?') {
            *rc |= buf_append(b, "0", 1);
            return 2;
        }
        *rc |= buf_append(b, "$", 1);
        return 1;
    }
    *rc |= buf_puts(b, env_lookup(lx->env, q, n));
    return n + 1;
}

static int push(struct lexer *lx, int type, struct buf *w, bool quoted)
{
    struct tok *t;

    if (lx->n >= MAX_TOKENS) {
        snprintf(lx->err, lx->errlen, "the command has more than %d words", MAX_TOKENS);
        return -E2BIG;
    }
    if (util_array_grow(&lx->toks, sizeof(*lx->toks), lx->n, &lx->cap, 32) < 0)
        return -ENOMEM;
    t = &lx->toks[lx->n++];
    memset(t, 0, sizeof(*t));
    t->type = type;
    t->quoted = quoted;
    if (type == T_WORD) {
        t->text = w->data ? buf_steal(w) : strdup("");
        if (!t->text) {
            lx->n--;
            return -ENOMEM;
        }
    }
    return 0;
}

/* A finished word that is a redirection ("2>&1", ">/dev/null", "2>", ">") is folded
 * into the token before it is pushed; a bare ">" takes the next word as its target. */
static int redirection(const char *w, int *which, const char **target)
{
    const char *p = w;
    int fd = 1;

    if (*p >= '0' && *p <= '9' && p[1] == '>') {
        fd = *p - '0';
        p++;
    } else if (*p == '&' && p[1] == '>') {
        fd = 3;
        p++;
    }
    if (*p != '>' && *p != '<')
        return 0;
    if (*p == '<')
        fd = 0;
    p++;
    if (*p == '>')
        p++;
    *which = fd == 2 ? 2 : fd == 3 ? 3 : fd == 0 ? 0 : 1;
    *target = p;
    return 1;
}

static int lex(struct lexer *lx)
{
    struct buf w = { 0 };
    bool in_word = false, quoted = false;
    int rc = 0;
    const char *p = lx->s;

    while (p <= lx->end && rc == 0) {
        char c = p < lx->end ? *p : '\0';
        bool at_end = p == lx->end;

        if (at_end || c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|') {
            if (in_word) {
                /* "2>&1": the '&' belongs to the word */
                if (c == '&' && w.len && w.data[w.len - 1] == '>' && p + 1 < lx->end) {
                    rc |= buf_append(&w, p, 1);
                    p++;
                    continue;
                }
                if ((rc = push(lx, T_WORD, &w, quoted)) < 0)
                    break;
                in_word = quoted = false;
            }
            if (at_end)
                break;
            if (c == '\n' || c == ';') {
                rc = push(lx, T_SEMI, NULL, false);
                p++;
            } else if (c == '&') {
                bool two = p + 1 < lx->end && p[1] == '&';
                rc = push(lx, two ? T_AND : T_SEMI, NULL, false);
                p += two ? 2 : 1;
            } else if (c == '|') {
                bool two = p + 1 < lx->end && p[1] == '|';
                rc = push(lx, two ? T_OR : T_PIPE, NULL, false);
                p += two ? 2 : 1;
            } else {
                p++;
            }
            continue;
        }
        if (c == '#' && !in_word) {
            while (p < lx->end && *p != '\n')
                p++;
            continue;
        }
        in_word = true;
        if (c == '\'') {
            const char *close = memchr(p + 1, '\'', (size_t)(lx->end - p - 1));
            if (!close) {
                snprintf(lx->err, lx->errlen, "unexpected EOF while looking for matching `''");
                rc = -EINVAL;
                break;
            }
            rc |= buf_append(&w, p + 1, (size_t)(close - p - 1));
            quoted = true;
            p = close + 1;
        } else if (c == '"') {
            quoted = true;
            p++;
            while (p < lx->end && *p != '"' && rc == 0) {
                if (*p == '\\' && p + 1 < lx->end && strchr("\"\\$`\n", p[1])) {
                    if (p[1] != '\n')
                        rc |= buf_append(&w, p + 1, 1);
                    p += 2;
                } else if (*p == '$') {
                    p += expand(lx, p, &w, &rc);
                } else {
                    rc |= buf_append(&w, p, 1);
                    p++;
                }
            }
            if (p >= lx->end) {
                snprintf(lx->err, lx->errlen, "unexpected EOF while looking for matching `\"'");
                rc = -EINVAL;
                break;
            }
            p++;
        } else if (c == '\\') {
            if (p + 1 < lx->end && p[1] != '\n')
                rc |= buf_append(&w, p + 1, 1);
            quoted = true;
            p += p + 1 < lx->end ? 2 : 1;
        } else if (c == '$') {
            p += expand(lx, p, &w, &rc);
        } else {
            rc |= buf_append(&w, p, 1);
            p++;
        }
        if (rc > 0)
            rc = -ENOMEM;
    }
    buf_free(&w);
    if (rc == 0)
        rc = push(lx, T_EOF, NULL, false);
    return rc < 0 ? rc : 0;
}

/* ---- parser ---------------------------------------------------------------------------- */

void ray__script_free_nodes(struct ray_node *n)
{
    while (n) {
        struct ray_node *next = n->next;
        for (size_t i = 0; i < n->argc; i++)
            free(n->argv[i]);
        free(n->argv);
        ray__script_free_nodes(n->cond);
        ray__script_free_nodes(n->body);
        ray__script_free_nodes(n->els);
        free(n);
        n = next;
    }
}

static struct tok *peek(struct parser *ps)
{
    return &ps->t[ps->i];
}

static bool is_kw(const struct tok *t, const char *kw)
{
    return t->type == T_WORD && !t->quoted && !strcmp(t->text, kw);
}

static bool is_terminator(const struct tok *t)
{
    return is_kw(t, "then") || is_kw(t, "fi") || is_kw(t, "do") || is_kw(t, "done") ||
           is_kw(t, "else") || is_kw(t, "elif");
}

static int perr(struct parser *ps, const char *what)
{
    const struct tok *t = peek(ps);

    snprintf(ps->err, ps->errlen, "syntax error near unexpected token `%.60s': %s",
             t->type == T_WORD ? t->text : t->type == T_EOF ? "newline" : ";", what);
    return -EINVAL;
}

static struct ray_node *node_new(struct parser *ps, int kind)
{
    struct ray_node *n;

    if (++ps->nodes > MAX_TOKENS)
        return NULL;
    n = calloc(1, sizeof(*n));
    if (n)
        n->kind = kind;
    return n;
}

static int parse_list(struct parser *ps, struct ray_node **out);

static int expect_kw(struct parser *ps, const char *kw)
{
    while (peek(ps)->type == T_SEMI)
        ps->i++;
    if (!is_kw(peek(ps), kw)) {
        char what[40];
        snprintf(what, sizeof(what), "expected `%s'", kw);
        return perr(ps, what);
    }
    ps->i++;
    return 0;
}

static int parse_simple(struct parser *ps, struct ray_node *n)
{
    size_t cap = 0;

    while (peek(ps)->type == T_WORD) {
        struct tok *t = peek(ps);
        int which;
        const char *target;

        ps->i++;
        if (!t->quoted && redirection(t->text, &which, &target)) {
            if (!*target) {
                if (peek(ps)->type != T_WORD)
                    return perr(ps, "a redirection needs a target");
                target = peek(ps)->text;
                ps->i++;
            }
            if (!strcmp(target, "/dev/null") || (which == 2 && !strcmp(target, "&1") &&
                                                 n->quiet_out)) {
                if (which == 1 || which == 3)
                    n->quiet_out = true;
                if (which == 2 || which == 3)
                    n->quiet_err = true;
            }
            continue;
        }
        if (n->argc + 1 >= cap) {
            size_t nc = cap ? cap * 2 : 8;
            char **na = realloc(n->argv, nc * sizeof(*na));
            if (!na)
                return -ENOMEM;
            n->argv = na;
            cap = nc;
        }
        if (!(n->argv[n->argc] = strdup(t->text)))
            return -ENOMEM;
        n->argc++;
        n->argv[n->argc] = NULL;
    }
    return 0;
}

static int parse_command(struct parser *ps, struct ray_node **out)
{
    struct ray_node *n = NULL;
    int rc;

    *out = NULL;
    if (++ps->depth > MAX_DEPTH) {
        snprintf(ps->err, ps->errlen, "the command nests deeper than %d levels", MAX_DEPTH);
        return -E2BIG;
    }
    if (is_kw(peek(ps), "if") || is_kw(peek(ps), "elif")) {
        ps->i++;
        if (!(n = node_new(ps, RN_IF)))
            goto nomem;
        if ((rc = parse_list(ps, &n->cond)) < 0 || (rc = expect_kw(ps, "then")) < 0 ||
            (rc = parse_list(ps, &n->body)) < 0)
            goto fail;
        while (peek(ps)->type == T_SEMI)
            ps->i++;
        if (is_kw(peek(ps), "elif")) {
            /* "elif" is an if nested in the else branch that shares our "fi" */
            if ((rc = parse_command(ps, &n->els)) < 0)
                goto fail;
            ps->depth--;
            *out = n;
            return 0;
        }
        if (is_kw(peek(ps), "else")) {
            ps->i++;
            if ((rc = parse_list(ps, &n->els)) < 0)
                goto fail;
        }
        if ((rc = expect_kw(ps, "fi")) < 0)
            goto fail;
    } else if (is_kw(peek(ps), "until") || is_kw(peek(ps), "while")) {
        bool until = is_kw(peek(ps), "until");
        ps->i++;
        if (!(n = node_new(ps, until ? RN_UNTIL : RN_WHILE)))
            goto nomem;
        if ((rc = parse_list(ps, &n->cond)) < 0 || (rc = expect_kw(ps, "do")) < 0 ||
            (rc = parse_list(ps, &n->body)) < 0 || (rc = expect_kw(ps, "done")) < 0)
            goto fail;
    } else if (peek(ps)->type == T_WORD && !is_terminator(peek(ps))) {
        if (!(n = node_new(ps, RN_CMD)))
            goto nomem;
        if ((rc = parse_simple(ps, n)) < 0)
            goto fail;
        if (n->argc == 0) {
            /* only redirections: a no-op */
            if (!(n->argv = calloc(2, sizeof(char *))) || !(n->argv[0] = strdup(":")))
                goto nomem;
            n->argc = 1;
        }
    } else {
        return perr(ps, "a command was expected");
    }
    ps->depth--;
    *out = n;
    return 0;
nomem:
    rc = -ENOMEM;
    if (ps->nodes > MAX_TOKENS) {
        snprintf(ps->err, ps->errlen, "the command is too long");
        rc = -E2BIG;
    }
fail:
    ray__script_free_nodes(n);
    return rc;
}

/* and_or := ['!'] command { ('&&' | '||' | '|') ['\n'...] ['!'] command } */
static int parse_and_or(struct parser *ps, struct ray_node **head, struct ray_node ***tail)
{
    int join = RJ_SEQ, rc;

    for (;;) {
        struct ray_node *n;
        bool neg = false;
        while (is_kw(peek(ps), "!")) {
            neg = !neg;
            ps->i++;
        }
        if ((rc = parse_command(ps, &n)) < 0)
            return rc;
        n->negate = neg;
        n->join = join;
        **tail = n;
        *tail = &n->next;
        (void)head;
        if (peek(ps)->type == T_AND)
            join = RJ_AND;
        else if (peek(ps)->type == T_OR)
            join = RJ_OR;
        else if (peek(ps)->type == T_PIPE)
            join = RJ_PIPE;
        else
            return 0;
        ps->i++;
        while (peek(ps)->type == T_SEMI)
            ps->i++;
    }
}

static int parse_list(struct parser *ps, struct ray_node **out)
{
    struct ray_node **tail = out;
    int rc;

    *out = NULL;
    for (;;) {
        while (peek(ps)->type == T_SEMI)
            ps->i++;
        if (peek(ps)->type == T_EOF || is_terminator(peek(ps)))
            break;
        if ((rc = parse_and_or(ps, out, &tail)) < 0) {
            ray__script_free_nodes(*out);
            *out = NULL;
            return rc;
        }
        if (peek(ps)->type != T_SEMI && peek(ps)->type != T_EOF && !is_terminator(peek(ps))) {
            ray__script_free_nodes(*out);
            *out = NULL;
            return perr(ps, "a separator was expected");
        }
    }
    return 0;
}

int ray__script_parse_text(const char *text, size_t len, const cJSON *env,
                           struct ray_node **out, char *err, size_t errlen)
{
    struct lexer lx = { .s = text, .end = text + len, .env = env, .err = err, .errlen = errlen };
    struct parser ps = { .err = err, .errlen = errlen };
    int rc;

    *out = NULL;
    if (len > RAY_MAX_SCRIPT) {
        snprintf(err, errlen, "the command is longer than %d bytes", RAY_MAX_SCRIPT);
        return -E2BIG;
    }
    if ((rc = lex(&lx)) < 0)
        goto out;
    ps.t = lx.toks;
    ps.n = lx.n;
    if ((rc = parse_list(&ps, out)) < 0)
        goto out;
    if (peek(&ps)->type != T_EOF) {
        ray__script_free_nodes(*out);
        *out = NULL;
        rc = perr(&ps, "unexpected keyword");
    }
out:
    for (size_t i = 0; i < lx.n; i++)
        free(lx.toks[i].text);
    free(lx.toks);
    return rc;
}

/* ---- container -> script ------------------------------------------------------------------ */

static bool runs_ray_job(const struct ray_node *n)
{
    for (; n; n = n->next) {
        if (n->kind == RN_CMD && n->argc >= 1) {
            const char *base = strrchr(n->argv[0], '/');
            base = base ? base + 1 : n->argv[0];
            if ((n->argc >= 2 && !strcmp(base, "ray") && !strcmp(n->argv[1], "job")) ||
                !strcmp(base, "submitter"))
                return true;
        }
        if (runs_ray_job(n->cond) || runs_ray_job(n->body) || runs_ray_job(n->els))
            return true;
    }
    return false;
}

/* The argv words, each quoted for the shell, as one script line. */
static int argv_script(const char *const *av, size_t n, struct buf *b)
{
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        rc |= buf_puts(b, i ? " '" : "'");
        for (const char *s = av[i]; *s && rc == 0; s++)
            rc |= *s == '\'' ? buf_puts(b, "'\\''") : buf_append(b, s, 1);
        rc |= buf_puts(b, "'");
    }
    return rc ? -ENOMEM : 0;
}

int ray__script_from_container(const cJSON *ct, struct ray_script **out, char *err, size_t errlen)
{
    const cJSON *lists[2] = { kobj_get(ct, "command"), kobj_get(ct, "args") }, *w;
    const char **av = NULL, *base;
    struct ray_script *s = NULL;
    struct buf script = { 0 };
    bool errexit = false, c_opt = false;
    size_t n = 0, i = 1;
    int rc = -ENOENT;

    *out = NULL;
    if (!(av = calloc(RAY_MAX_ARGV + 1, sizeof(*av))))
        return -ENOMEM;
    /* command + args, as the container runtime joins them */
    for (int l = 0; l < 2; l++)
        cJSON_ArrayForEach(w, lists[l]) {
            if (!cJSON_IsString(w) || n >= RAY_MAX_ARGV)
                goto out;
            av[n++] = w->valuestring;
        }
    if (n == 0)
        goto out;
    base = strrchr(av[0], '/');
    base = base ? base + 1 : av[0];
    if (!strcmp(base, "bash") || !strcmp(base, "sh") || !strcmp(base, "dash")) {
        /* bash [-opts] [--] SCRIPT with c among the options: -e (or -o errexit) sets errexit */
        while (i < n) {
            const char *a = av[i];
            if (!strcmp(a, "--")) {
                i++;
                break;
            }
            if (!strcmp(a, "-o") && i + 1 < n) {
                errexit |= !strcmp(av[i + 1], "errexit");
                i += 2;
                continue;
            }
            if (a[0] == '-' && a[1] == '-') {
                i++;
                continue;
            }
            if (a[0] != '-' || !a[1])
                break;
            c_opt |= strchr(a, 'c') != NULL;
            errexit |= strchr(a, 'e') != NULL;
            i++;
        }
        if (!c_opt || i >= n)
            goto out;
        rc = buf_puts(&script, av[i]) < 0 ? -ENOMEM : 0;
    } else {
        rc = argv_script(av, n, &script);
    }
    if (rc < 0)
        goto out;
    if (!(s = calloc(1, sizeof(*s)))) {
        rc = -ENOMEM;
        goto out;
    }
    s->errexit = errexit;
    rc = ray__script_parse_text(script.data ? script.data : "", script.len, kobj_get(ct, "env"),
                                &s->list, err, errlen);
    if (rc == 0 && !runs_ray_job(s->list))
        rc = -ENOENT;
    if (rc == 0) {
        *out = s;
        s = NULL;
    }
out:
    if (rc == -ENOENT && err && errlen)
        snprintf(err, errlen, "not a Ray submitter command");
    ray__script_free(s);
    buf_free(&script);
    free(av);
    return rc;
}

void ray__script_free(struct ray_script *s)
{
    if (!s)
        return;
    ray__script_free_nodes(s->list);
    free(s);
}

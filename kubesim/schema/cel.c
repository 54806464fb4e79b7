/*
 * cel.c - the slice of CEL that KubeRay's x-kubernetes-validations use, evaluated on
 * cJSON values:
 *
 *   expr    := or
 *   or      := and ('||' and)*
 *   and     := unary ('&&' unary)*
 *   unary   := '!' unary | cmp
 *   cmp     := primary (('==' | '!=') primary | 'in' list)?
 *   primary := '(' expr ')' | 'has(' select ')' | select | literal | list
 *   select  := ('self' | 'oldSelf') ('.' ident)*
 *   literal := 'string' | "string" | integer | true | false | null
 *
 * Anything else (functions, arithmetic, macros, indexing) makes schema__cel_compile return
 * -ENOTSUP: the caller skips and counts such rules rather than guess their meaning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/json_equal.h"
#include "kubesim/schema/internal.h"

#define CEL_MAX_NODES 256
#define CEL_MAX_FIELDS 16

enum cop { C_OR, C_AND, C_NOT, C_EQ, C_NE, C_IN, C_HAS, C_SEL, C_LIT };

struct cnode {
    enum cop op;
    struct cnode *a, *b;
    bool old_root;                 /* C_SEL/C_HAS: oldSelf rather than self */
    char *fields[CEL_MAX_FIELDS];  /* C_SEL/C_HAS */
    size_t nfields;
    cJSON *lit;                    /* C_LIT (a list literal is a JSON array) */
};

struct cel_expr {
    struct cnode *root;
    bool uses_old;
};

struct cparser {
    const char *s;
    size_t pos;
    int nodes;
    bool uses_old;
};

static void node_free(struct cnode *n)
{
    if (!n)
        return;
    node_free(n->a);
    node_free(n->b);
    for (size_t i = 0; i < n->nfields; i++)
        free(n->fields[i]);
    cJSON_Delete(n->lit);
    free(n);
}

void schema__cel_free(struct cel_expr *e)
{
    if (!e)
        return;
    node_free(e->root);
    free(e);
}

bool schema__cel_uses_old(const struct cel_expr *e)
{
    return e && e->uses_old;
}

static struct cnode *node_new(struct cparser *p, enum cop op)
{
    struct cnode *n;
    if (++p->nodes > CEL_MAX_NODES || !(n = calloc(1, sizeof(*n))))
        return NULL;
    n->op = op;
    return n;
}

static void skip_ws(struct cparser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
           p->s[p->pos] == '\r')
        p->pos++;
}

static bool accept(struct cparser *p, const char *tok)
{
    size_t n = strlen(tok);
    skip_ws(p);
    if (strncmp(p->s + p->pos, tok, n))
        return false;
    p->pos += n;
    return true;
}

static bool is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Reads an identifier into buf; false if none. */
static bool ident(struct cparser *p, char *buf, size_t len)
{
    size_t n = 0;
    skip_ws(p);
    const char *s = p->s + p->pos;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return false;
    while (is_ident_char(s[n])) {
        if (n + 1 >= len)
            return false;
        buf[n] = s[n];
        n++;
    }
    buf[n] = '\0';
    p->pos += n;
    return true;
}

static bool keyword(struct cparser *p, const char *kw)
{
    size_t save = p->pos;
    char buf[32];
    if (ident(p, buf, sizeof(buf)) && !strcmp(buf, kw))
        return true;
    p->pos = save;
    return false;
}

static int parse_expr(struct cparser *p, struct cnode **out);

/* self.a.b or oldSelf.a */
static int parse_select(struct cparser *p, struct cnode *n)
{
    char buf[256];
    if (!ident(p, buf, sizeof(buf)))
        return -ENOTSUP;
    if (!strcmp(buf, "oldSelf")) {
        n->old_root = true;
        p->uses_old = true;
    } else if (strcmp(buf, "self")) {
        return -ENOTSUP;
    }
    for (;;) {
        skip_ws(p);
        if (p->s[p->pos] != '.')
            return 0;
        p->pos++;
        if (!ident(p, buf, sizeof(buf)) || n->nfields >= CEL_MAX_FIELDS)
            return -ENOTSUP;
        if (!(n->fields[n->nfields] = strdup(buf)))
            return -ENOMEM;
        n->nfields++;
    }
}

static cJSON *parse_literal(struct cparser *p)
{
    skip_ws(p);
    char c = p->s[p->pos];
    if (c == '\'' || c == '"') {
        char buf[CEL_MAX_RULE];
        size_t n = 0, i = p->pos + 1;
        while (p->s[i] && p->s[i] != c) {
            if (p->s[i] == '\\' || n + 1 >= sizeof(buf))
                return NULL; /* escapes are outside the subset */
            buf[n++] = p->s[i++];
        }
        if (p->s[i] != c)
            return NULL;
        buf[n] = '\0';
        p->pos = i + 1;
        return cJSON_CreateString(buf);
    }
    if ((c >= '0' && c <= '9') || c == '-') {
        char *end;
        long long v = strtoll(p->s + p->pos, &end, 10);
        if (end == p->s + p->pos || *end == '.' || *end == 'u' || *end == 'e')
            return NULL;
        p->pos = (size_t)(end - p->s);
        return cJSON_CreateNumber((double)v);
    }
    if (keyword(p, "true"))
        return cJSON_CreateTrue();
    if (keyword(p, "false"))
        return cJSON_CreateFalse();
    if (keyword(p, "null"))
        return cJSON_CreateNull();
    return NULL;
}

static int parse_list(struct cparser *p, cJSON **out)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return -ENOMEM;
    if (!accept(p, "["))
        goto unsup;
    if (accept(p, "]"))
        goto done;
    for (;;) {
        cJSON *v = parse_literal(p);
        if (!v)
            goto unsup;
        cJSON_AddItemToArray(arr, v);
        if (accept(p, "]"))
            break;
        if (!accept(p, ","))
            goto unsup;
    }
done:
    *out = arr;
    return 0;
unsup:
    cJSON_Delete(arr);
    return -ENOTSUP;
}

static int parse_primary(struct cparser *p, struct cnode **out)
{
    struct cnode *n = NULL;
    int rc;
    size_t save;

    skip_ws(p);
    if (accept(p, "(")) {
        if ((rc = parse_expr(p, out)))
            return rc;
        return accept(p, ")") ? 0 : -ENOTSUP;
    }
    if (p->s[p->pos] == '[') {
        if (!(n = node_new(p, C_LIT)))
            return -ENOMEM;
        if ((rc = parse_list(p, &n->lit)))
            goto fail;
        *out = n;
        return 0;
    }
    save = p->pos;
    if (keyword(p, "has")) {
        if (!accept(p, "("))
            return -ENOTSUP;
        if (!(n = node_new(p, C_HAS)))
            return -ENOMEM;
        if ((rc = parse_select(p, n)))
            goto fail;
        if (n->nfields == 0 || !accept(p, ")")) {
            rc = -ENOTSUP;
            goto fail;
        }
        *out = n;
        return 0;
    }
    p->pos = save;
    if (keyword(p, "self") || keyword(p, "oldSelf")) {
        p->pos = save;
        if (!(n = node_new(p, C_SEL)))
            return -ENOMEM;
        if ((rc = parse_select(p, n)))
            goto fail;
        skip_ws(p);
        if (p->s[p->pos] == '(' || p->s[p->pos] == '[') { /* method call or index */
            rc = -ENOTSUP;
            goto fail;
        }
        *out = n;
        return 0;
    }
    cJSON *lit = parse_literal(p);
    if (!lit)
        return -ENOTSUP;
    if (!(n = node_new(p, C_LIT))) {
        cJSON_Delete(lit);
        return -ENOMEM;
    }
    n->lit = lit;
    *out = n;
    return 0;
fail:
    node_free(n);
    return rc;
}

static int parse_cmp(struct cparser *p, struct cnode **out)
{
    struct cnode *l = NULL, *r = NULL, *n;
    enum cop op;
    int rc;

    if ((rc = parse_primary(p, &l)))
        return rc;
    skip_ws(p);
    if (accept(p, "=="))
        op = C_EQ;
    else if (accept(p, "!="))
        op = C_NE;
    else if (keyword(p, "in"))
        op = C_IN;
    else {
        *out = l;
        return 0;
    }
    if ((rc = parse_primary(p, &r)))
        goto fail;
    if ((l->op != C_SEL && l->op != C_LIT) || (r->op != C_SEL && r->op != C_LIT) ||
        (op == C_IN && !(r->op == C_LIT && cJSON_IsArray(r->lit)))) {
        rc = -ENOTSUP;
        goto fail;
    }
    if (!(n = node_new(p, op))) {
        rc = -ENOMEM;
        goto fail;
    }
    n->a = l;
    n->b = r;
    *out = n;
    return 0;
fail:
    node_free(l);
    node_free(r);
    return rc;
}

static int parse_unary(struct cparser *p, struct cnode **out)
{
    skip_ws(p);
    if (p->s[p->pos] == '!' && p->s[p->pos + 1] != '=') {
        struct cnode *n, *a = NULL;
        int rc;
        p->pos++;
        if ((rc = parse_unary(p, &a)))
            return rc;
        if (!(n = node_new(p, C_NOT))) {
            node_free(a);
            return -ENOMEM;
        }
        n->a = a;
        *out = n;
        return 0;
    }
    return parse_cmp(p, out);
}

static int parse_binary(struct cparser *p, struct cnode **out, bool is_or)
{
    struct cnode *l = NULL, *r = NULL, *n;
    int rc = is_or ? parse_binary(p, &l, false) : parse_unary(p, &l);
    if (rc)
        return rc;
    while (accept(p, is_or ? "||" : "&&")) {
        if ((rc = is_or ? parse_binary(p, &r, false) : parse_unary(p, &r))) {
            node_free(l);
            return rc;
        }
        if (!(n = node_new(p, is_or ? C_OR : C_AND))) {
            node_free(l);
            node_free(r);
            return -ENOMEM;
        }
        n->a = l;
        n->b = r;
        l = n;
    }
    *out = l;
    return 0;
}

static int parse_expr(struct cparser *p, struct cnode **out)
{
    if (p->nodes > CEL_MAX_NODES)
        return -ENOTSUP;
    return parse_binary(p, out, true);
}

int schema__cel_compile(const char *rule, struct cel_expr **out)
{
    struct cparser p = { rule, 0, 0, false };
    struct cel_expr *e;
    struct cnode *root = NULL;
    int rc;

    *out = NULL;
    if (!rule || strlen(rule) > CEL_MAX_RULE)
        return -ENOTSUP;
    if ((rc = parse_expr(&p, &root)))
        return rc == -ENOMEM ? -ENOMEM : -ENOTSUP;
    skip_ws(&p);
    if (rule[p.pos]) {
        node_free(root);
        return -ENOTSUP;
    }
    if (!(e = calloc(1, sizeof(*e)))) {
        node_free(root);
        return -ENOMEM;
    }
    e->root = root;
    e->uses_old = p.uses_old;
    *out = e;
    return 0;
}

/* ---- evaluation ---- */

struct cenv {
    const cJSON *self, *old;
    char *msg;
    size_t msglen;
};

static const cJSON *eval_value(const struct cnode *n, struct cenv *env, size_t upto, int *err)
{
    if (n->op == C_LIT)
        return n->lit;
    const cJSON *v = n->old_root ? env->old : env->self;
    for (size_t i = 0; i < upto && v; i++) {
        const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, n->fields[i])
                                           : NULL;
        if (!c) {
            snprintf(env->msg, env->msglen, "no such key: %s", n->fields[i]);
            *err = -EINVAL;
            return NULL;
        }
        v = c;
    }
    if (!v) {
        snprintf(env->msg, env->msglen, "no such key: oldSelf");
        *err = -EINVAL;
    }
    return v;
}

/* 1 true, 0 false, <0 error. */
static int eval_bool(const struct cnode *n, struct cenv *env)
{
    int a, err = 0;
    const cJSON *x, *y;

    switch (n->op) {
    case C_OR:
        if ((a = eval_bool(n->a, env)) == 1)
            return 1;
        /* CEL's commutative || : an error on one side is absorbed by a true other side */
        int b = eval_bool(n->b, env);
        return b == 1 ? 1 : a < 0 ? a : b;
    case C_AND:
        if ((a = eval_bool(n->a, env)) == 0)
            return 0;
        int c = eval_bool(n->b, env);
        return c == 0 ? 0 : a < 0 ? a : c;
    case C_NOT:
        a = eval_bool(n->a, env);
        return a < 0 ? a : !a;
    case C_HAS:
        x = eval_value(n, env, n->nfields - 1, &err);
        if (err)
            return err;
        if (!cJSON_IsObject(x)) {
            snprintf(env->msg, env->msglen, "has() applied to a non-object");
            return -EINVAL;
        }
        return cJSON_GetObjectItemCaseSensitive(x, n->fields[n->nfields - 1]) != NULL;
    case C_EQ:
    case C_NE:
        x = eval_value(n->a, env, n->a->nfields, &err);
        y = err ? NULL : eval_value(n->b, env, n->b->nfields, &err);
        if (err)
            return err;
        return json_equal(x, y) == (n->op == C_EQ);
    case C_IN:
        x = eval_value(n->a, env, n->a->nfields, &err);
        if (err)
            return err;
        cJSON_ArrayForEach(y, n->b->lit)
            if (json_equal(x, y))
                return 1;
        return 0;
    case C_SEL:
    case C_LIT:
        x = eval_value(n, env, n->nfields, &err);
        if (err)
            return err;
        if (!cJSON_IsBool(x)) {
            snprintf(env->msg, env->msglen, "no matching overload: expected a bool");
            return -EINVAL;
        }
        return cJSON_IsTrue(x);
    }
    return -EINVAL;
}

int schema__cel_eval(const struct cel_expr *e, const cJSON *self, const cJSON *old, char *msg,
             size_t msglen)
{
    char dummy[8];
    struct cenv env = { self, old, msg ? msg : dummy, msg ? msglen : sizeof(dummy) };
    env.msg[0] = '\0';
    return eval_bool(e->root, &env);
}

/*
 * list.c - LIST and DELETE of a collection: namespace/all-namespace scans
 * with label and field selectors, resourceVersion/resourceVersionMatch rules,
 * and limit/continue paging. Items come back sorted by "namespace/name" (the
 * etcd key order clients are used to); a continue token is base64url of
 * {"v":"meta.k8s.io/v1","rv":N,"start":"<last key>\u0000"} as the real server
 * encodes it, so a page resumes strictly after the last key it returned: no
 * item is skipped or repeated while nothing changes.
 */
#include "kubesim/store/internal.h"
#include "kubesim/schema/selector.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTINUE_MAX 4096

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url_encode(const char *in, size_t n)
{
    char *out = malloc(n / 3 * 4 + 5), *p = out;
    size_t i;

    if (!out)
        return NULL;
    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)(uint8_t)in[i] << 16 | (uint32_t)(uint8_t)in[i + 1] << 8 |
                     (uint8_t)in[i + 2];
        *p++ = B64[v >> 18 & 63];
        *p++ = B64[v >> 12 & 63];
        *p++ = B64[v >> 6 & 63];
        *p++ = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)(uint8_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(uint8_t)in[i + 1] << 8;
        *p++ = B64[v >> 18 & 63];
        *p++ = B64[v >> 12 & 63];
        if (i + 1 < n)
            *p++ = B64[v >> 6 & 63];
    }
    *p = 0;
    return out;
}

/* Decodes base64url (padding tolerated) into a NUL-terminated buffer; NULL on bad input. */
static char *b64url_decode(const char *in, size_t *outlen)
{
    size_t n = strlen(in);
    char *out, *p;
    uint32_t acc = 0;
    int bits = 0;

    if (n > CONTINUE_MAX)
        return NULL;
    out = malloc(n + 1);
    if (!out)
        return NULL;
    p = out;
    for (size_t i = 0; i < n; i++) {
        const char *c;
        char ch = in[i];
        if (ch == '=')
            break;
        if (ch == '+')
            ch = '-';
        if (ch == '/')
            ch = '_';
        c = strchr(B64, ch);
        if (!c || !ch) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)(c - B64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *p++ = (char)(acc >> bits & 0xff);
        }
    }
    *p = 0;
    *outlen = (size_t)(p - out);
    return out;
}

static int list_invalid(struct store_status *st, const char *field, const char *msg)
{
    store__status_set(st, 422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: %s: %s", field, msg);
    snprintf(st->group, sizeof(st->group), "meta.k8s.io");
    snprintf(st->kind, sizeof(st->kind), "ListOptions");
    return -EINVAL;
}

/* Field selectors may only name metadata.name, metadata.namespace and the type's labels. */
int store__check_fields(const struct reg_resource *res, const struct fsel *f,
                        struct store_status *st)
{
    for (size_t i = 0, n = f ? fsel_count(f) : 0; i < n; i++) {
        const char *k = fsel_field(f, i);
        bool ok = !strcmp(k, "metadata.name") || !strcmp(k, "metadata.namespace");
        for (const char *const *l = res->field_labels; !ok && l && *l; l++)
            ok = !strcmp(*l, k);
        if (!ok) {
            store__status_set(st, 400, "BadRequest", "field label not supported: %s", k);
            return -EINVAL;
        }
    }
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;

    if (!s || !s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return -EINVAL;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno || *end ? -EINVAL : 0;
}

/* resourceVersion / resourceVersionMatch / continue rules (lock held). */
static int check_list_rv(struct store *s, const struct store_list_opts *o,
                         struct store_status *st)
{
    const char *rv = o->resource_version, *m = o->rv_match;
    uint64_t n = 0;
    bool has_rv = rv && rv[0];

    if (m && m[0]) {
        if (!has_rv)
            return list_invalid(st, "resourceVersionMatch", "Forbidden: resourceVersionMatch "
                                "is forbidden unless resourceVersion is provided");
        if (o->continue_token && o->continue_token[0])
            return list_invalid(st, "resourceVersionMatch", "Forbidden: resourceVersionMatch "
                                "is forbidden when continue is provided");
        if (strcmp(m, "Exact") && strcmp(m, "NotOlderThan"))
            return list_invalid(st, "resourceVersionMatch", "Unsupported value: "
                                "\"Exact\", \"NotOlderThan\"");
        if (!strcmp(m, "Exact") && !strcmp(rv, "0"))
            return list_invalid(st, "resourceVersionMatch", "Forbidden: resourceVersionMatch "
                                "\"exact\" is forbidden for resourceVersion \"0\"");
    }
    if (!has_rv || !strcmp(rv, "0"))
        return 0;
    if (parse_u64(rv, &n)) {
        store__status_set(st, 400, "BadRequest", "invalid resource version: strconv.ParseUint: parsing "
                          "\"%.100s\": invalid syntax", rv);
        return -EINVAL;
    }
    if (n > s->rv) {
        store__status_set(st, 504, "Timeout", "Too large resource version: %llu, current: %llu",
                          (unsigned long long)n, (unsigned long long)s->rv);
        return -ETIMEDOUT;
    }
    /* Exact, or the legacy limit+rv form, needs that exact snapshot: only the
     * current one is kept. */
    if (n != s->rv && ((m && !strcmp(m, "Exact")) || (!(m && m[0]) && o->limit > 0 &&
                                                       !(o->continue_token &&
                                                         o->continue_token[0])))) {
        store__status_set(st, 410, "Expired", "too old resource version: %llu (%llu)",
                          (unsigned long long)n, (unsigned long long)s->rv);
        return -ESTALE;
    }
    return 0;
}

static int decode_continue(const char *tok, uint64_t *rv, char **start,
                           struct store_status *st)
{
    size_t n = 0;
    char *raw = b64url_decode(tok, &n);
    cJSON *j = raw ? cJSON_ParseWithLength(raw, n) : NULL;
    const cJSON *jrv = cJSON_GetObjectItemCaseSensitive(j, "rv");
    const char *js = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "start"));
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "v"));
    int rc = 0;

    if (!j || !cJSON_IsNumber(jrv) || !js || !v || strcmp(v, "meta.k8s.io/v1") ||
        cJSON_GetNumberValue(jrv) < 0) {
        store__status_set(st, 400, "BadRequest", "continue key is not valid: incorrect encoded start "
                                      "resourceVersion (version meta.k8s.io/v1)");
        rc = -EINVAL;
        goto out;
    }
    *rv = (uint64_t)cJSON_GetNumberValue(jrv);
    *start = strdup(js);
    if (!*start)
        rc = -ENOMEM;
out:
    cJSON_Delete(j);
    free(raw);
    return rc;
}

static char *encode_continue(uint64_t rv, const char *last_key)
{
    struct buf b = { 0 };
    char *tok;

    buf_printf(&b, "{\"v\":\"meta.k8s.io/v1\",\"rv\":%llu,\"start\":",
               (unsigned long long)rv);
    /* start is the key followed by NUL: "the first key after this one" */
    buf_append_json_string(&b, last_key);
    if (b.len)
        b.len--;                       /* reopen the string to append the NUL */
    buf_puts(&b, "\\u0000\"}");
    tok = b.data ? b64url_encode(b.data, b.len) : NULL;
    buf_free(&b);
    return tok;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct sentry *x = *(struct sentry *const *)a, *y = *(struct sentry *const *)b;

    return strcmp(x->key, y->key);
}

/* e is in namespace ns; NULL or "" is every namespace. */
static bool in_ns(const struct sentry *e, const char *ns)
{
    return !ns || !ns[0] || !strcmp(e->obj->ns, ns);
}

static bool entry_matches(const struct reg_resource *want, const struct sentry *e,
                          const char *ns, const struct store_list_opts *o)
{
    cJSON *tmp;
    const cJSON *j;
    bool ok;

    if (!in_ns(e, ns))
        return false;
    if (!o->labels && !o->fields)
        return true;
    if (!o->fields) {
        /* a label selector needs the labels alone, found without parsing the rest */
        j = store__obj_labels_peek(e->obj, &tmp);
        ok = sel_matches(o->labels, j);
        cJSON_Delete(tmp);
        return ok;
    }
    /* a text-only object (a Pod, an Event) is parsed for the test, not given a tree */
    j = store__obj_peek(e->obj, &tmp);
    ok = (!o->labels || sel_matches(o->labels, cJSON_GetObjectItemCaseSensitive(
              cJSON_GetObjectItemCaseSensitive(j, "metadata"), "labels"))) &&
         (!o->fields || store__fields_match(want, o->fields, j));
    cJSON_Delete(tmp);
    return ok;
}

static void heap_sift_down(struct sentry **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, big = i;
        struct sentry *tmp;
        if (l < n && strcmp(h[l]->key, h[big]->key) > 0)
            big = l;
        if (r < n && strcmp(h[r]->key, h[big]->key) > 0)
            big = r;
        if (big == i)
            return;
        tmp = h[i];
        h[i] = h[big];
        h[big] = tmp;
        i = big;
    }
}

/*
 * Moves the k smallest entries (by key) to v[0..k), in O(n log k) with a max-heap
 * of the best k seen, so a page of `limit` items out of 100,000 does not sort
 * them all.
 */
static void select_smallest(struct sentry **v, size_t n, size_t k)
{
    if (!k)
        return;
    for (size_t i = k / 2; i-- > 0;)
        heap_sift_down(v, k, i);
    for (size_t i = k; i < n; i++) {
        if (strcmp(v[i]->key, v[0]->key) < 0) {
            struct sentry *tmp = v[0];
            v[0] = v[i];
            v[i] = tmp;
            heap_sift_down(v, k, 0);
        }
    }
}

/*
 * Collects the entries with key > start that match; with a limit, only the
 * first limit + 1 of them in key order (the one past the page tells the
 * caller a continue token is due), so *n is not the total then. Sorted,
 * lock held; *out is a malloc'd array of borrowed entries.
 *
 * A selector costs a parse of each text-only object it tests, so a paged
 * selector LIST sorts the candidates by key first and tests them in order
 * until the page is full: a page costs its own items, as an etcd range read
 * does, not every item after the continue key (which made a 10,000-Pod
 * paged LIST 20 times the work of one page).
 */
static int collect(const struct reg_resource *want, struct stype *t, const char *ns,
                   const struct store_list_opts *o,
                   const char *start, struct sentry ***out, size_t *n)
{
    struct sentry **v, *e, *tmp, **idx = NULL;
    bool select = o->labels || o->fields, lazy = select && o->limit > 0;
    size_t k = 0, ni = 0;
    int rc;

    *out = NULL;
    *n = 0;
    if (!t || !t->n)
        return 0;
    rc = store__index_lookup(t, o->labels, &idx, &ni);
    if (rc < 0)
        return rc;
    v = malloc((rc ? ni : t->n) * sizeof(*v) + 1);
    if (!v) {
        free(idx);
        return -ENOMEM;
    }
    if (rc) {
        /* ray.io/cluster=X: only that cluster's objects are candidates */
        for (size_t i = 0; i < ni; i++) {
            e = idx[i];
            if (start && strcmp(e->key, start) <= 0)
                continue;
            if (lazy ? in_ns(e, ns) : entry_matches(want, e, ns, o))
                v[k++] = e;
        }
        free(idx);
    } else {
        HASH_ITER(hh, t->objs, e, tmp) {
            if (start && strcmp(e->key, start) <= 0)
                continue;
            if (lazy ? in_ns(e, ns) : entry_matches(want, e, ns, o))
                v[k++] = e;
        }
    }
    if (lazy) {
        size_t m = 0;
        qsort(v, k, sizeof(*v), cmp_entry);
        for (size_t i = 0; i < k && m <= (size_t)o->limit; i++)
            if (entry_matches(want, v[i], ns, o))
                v[m++] = v[i];
        k = m;
    } else if (!select && o->limit > 0 && (size_t)o->limit < k) {
        select_smallest(v, k, (size_t)o->limit);
        qsort(v, (size_t)o->limit, sizeof(*v), cmp_entry);
    } else {
        qsort(v, k, sizeof(*v), cmp_entry);
    }
    *out = v;
    *n = k;
    return 0;
}

/*
 * The options as collect() should see them. The API hands over an absent
 * selector as an empty one; taken at its word it tested (parsed) every object
 * and dropped remainingItemCount from every page.
 */
static struct store_list_opts effective_opts(const struct store_list_opts *o)
{
    struct store_list_opts e = *o;

    if (sel_is_empty(e.labels))
        e.labels = NULL;
    if (e.fields && !fsel_count(e.fields))
        e.fields = NULL;
    return e;
}

int store_list(struct store *s, const struct reg_resource *res, const char *ns,
               const struct store_list_opts *opts, struct store_list *out,
               struct store_status *st)
{
    static const struct store_list_opts none = { 0 };
    struct store_list_opts eff = effective_opts(opts ? opts : &none);
    const struct store_list_opts *o = &eff;
    struct sentry **v = NULL;
    char *start = NULL;
    uint64_t tok_rv = 0;
    size_t n = 0, take;
    int rc;

    memset(out, 0, sizeof(*out));
    out->remaining = -1;
    rc = store__check_fields(res, o->fields, st);
    if (rc)
        return rc;
    if (o->continue_token && o->continue_token[0]) {
        rc = decode_continue(o->continue_token, &tok_rv, &start, st);
        if (rc)
            return rc;
    }
    pthread_rwlock_rdlock(&s->lock);
    rc = check_list_rv(s, o, st);
    if (rc)
        goto out;
    rc = collect(res, store__type_get(s, res, false), res->namespaced ? ns : "", o, start, &v, &n);
    if (rc)
        goto out;
    take = o->limit > 0 && (size_t)o->limit < n ? (size_t)o->limit : n;
    out->items = calloc(take ? take : 1, sizeof(*out->items));
    if (!out->items) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < take; i++) {
        out->items[i] = store__obj_as(v[i]->obj, res);
        if (!out->items[i]) {
            rc = -ENOMEM;
            goto out;
        }
        out->n++;
    }
    out->rv = start && tok_rv ? tok_rv : s->rv;
    if (take < n) {
        out->continue_token = encode_continue(out->rv, v[take - 1]->key);
        if (!out->continue_token) {
            rc = -ENOMEM;
            goto out;
        }
        if (!o->labels && !o->fields)
            out->remaining = (long)(n - take);
    }
out:
    pthread_rwlock_unlock(&s->lock);
    free(v);
    free(start);
    if (rc) {
        if (rc == -ENOMEM)
            store__status_set(st, 500, "InternalError", "out of memory");
        store_list_free(out);
    }
    return rc;
}

void store_list_free(struct store_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        store_obj_unref(l->items[i]);
    free(l->items);
    free(l->continue_token);
    memset(l, 0, sizeof(*l));
    l->remaining = -1;
}

int store_delete_collection(struct store *s, const struct reg_resource *res, const char *ns,
                            const struct store_list_opts *lopts,
                            const struct store_delete_opts *o, struct store_status *st)
{
    static const struct store_list_opts none = { 0 };
    struct store_list_opts eff = effective_opts(lopts ? lopts : &none);
    const struct store_list_opts *lo = &eff;
    struct sentry **v = NULL;
    size_t n = 0;
    int rc;

    rc = store__check_fields(res, lo->fields, st);
    if (rc)
        return rc;
    pthread_rwlock_wrlock(&s->lock);
    rc = collect(res, store__type_get(s, res, false), res->namespaced ? ns : "", lo, NULL, &v, &n);
    for (size_t i = 0; !rc && i < n; i++) {
        struct store_obj *r = NULL;
        bool gone;
        struct store_status est = { 0 };
        /* each item is deleted on its own; a precondition miss skips that item */
        int erc = store__delete_entry(s, v[i], o, &r, &gone, &est);
        store_obj_unref(r);
        store_status_clear(&est);
        if (erc == -ENOMEM)
            rc = erc;
    }
    pthread_rwlock_unlock(&s->lock);
    free(v);
    return store__write_done(s, rc, st);
}

/*
 * serve.c - the Serve side of a RayService: serveConfigV2 (YAML) -> the JSON body of
 * PUT /api/serve/applications/, the parser of GET /api/serve/applications/ (outside
 * bytes: bounded, fuzzed by tests/fuzz/fuzz_rayservice_serve.c) and its check that a
 * cluster already runs a given config, KubeRay's re-submit rule, and the bounded memory of
 * what was submitted per (RayService, cluster).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "dashboard/dashboard.h"
#include "kobj/gotypes.h"
#include "kobj/json_equal.h"
#include "reconcilers/rayservice/rayservice.h"
#include "kobj/yamljson.h"
#include "util/util.h"

#define MAX_TEXT 4096         /* a status message longer than this is cut */

int rs_serve_config_json(const char *yaml, size_t len, int target_capacity, char **out,
                         char *err, size_t errlen)
{
    cJSON *docs = NULL, *doc = NULL;
    struct buf b = { 0 };
    int rc;
    *out = NULL;
    if (len > RS_SERVE_MAX_CONFIG) {
        util_format_err(err, errlen, "serveConfigV2 is %zu bytes, more than %u", len,
                        RS_SERVE_MAX_CONFIG);
        return -E2BIG;
    }
    rc = yamljson_parse_all(yaml ? yaml : "", len, &docs, err, errlen);
    if (rc < 0)
        return rc == -ENOMEM || rc == -E2BIG ? rc : -EINVAL;
    /* yaml.Unmarshal reads the first document; an empty one is an empty map */
    doc = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    if (!doc || cJSON_IsNull(doc)) {
        cJSON_Delete(doc);
        doc = cJSON_CreateObject();
        if (!doc)
            return -ENOMEM;
    }
    if (!cJSON_IsObject(doc)) {
        util_format_err(err, errlen, "error unmarshaling JSON: serveConfigV2 is not a mapping");
        cJSON_Delete(doc);
        return -EINVAL;
    }
    if (target_capacity >= 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(doc, "target_capacity");
        if (!cJSON_AddNumberToObject(doc, "target_capacity", target_capacity)) {
            cJSON_Delete(doc);
            return -ENOMEM;
        }
    }
    rc = gotypes_any(&b, doc);
    cJSON_Delete(doc);
    if (rc < 0) {
        util_format_err(err, errlen, "serveConfigV2 nests too deep");
        buf_free(&b);
        return rc;
    }
    *out = buf_steal(&b);
    return 0;
}

/* ---- GET /api/serve/applications/ ------------------------------------------------------ */

static int copy_text(cJSON *to, const char *key, const cJSON *from)
{
    char cut[MAX_TEXT + 1];
    if (!from || cJSON_IsNull(from))
        return 0;
    if (!cJSON_IsString(from))
        return -EPROTO;
    if (!*from->valuestring)
        return 0;               /* omitempty */
    snprintf(cut, sizeof(cut), "%s", from->valuestring);
    return cJSON_AddStringToObject(to, key, cut) ? 0 : -ENOMEM;
}

static int parse_app(const cJSON *app, cJSON *out)
{
    const cJSON *deps, *d;
    int rc, n = 0;
    if (!cJSON_IsObject(app))
        return -EPROTO;
    if ((rc = copy_text(out, "status", cJSON_GetObjectItemCaseSensitive(app, "status"))) < 0 ||
        (rc = copy_text(out, "message", cJSON_GetObjectItemCaseSensitive(app, "message"))) < 0)
        return rc;
    deps = cJSON_GetObjectItemCaseSensitive(app, "deployments");
    if (deps && !cJSON_IsNull(deps) && !cJSON_IsObject(deps))
        return -EPROTO;
    cJSON *o = cJSON_AddObjectToObject(out, "serveDeploymentStatuses");
    if (!o)
        return -ENOMEM;
    const cJSON *dl = cJSON_IsObject(deps) ? deps : NULL;
    cJSON_ArrayForEach(d, dl) {
        if (++n > RS_SERVE_MAX_APPS)
            return -E2BIG;
        if (!cJSON_IsObject(d))
            return -EPROTO;
        cJSON *x = cJSON_CreateObject();
        if (!x)
            return -ENOMEM;
        cJSON_AddItemToObject(o, d->string, x);
        if ((rc = copy_text(x, "status", cJSON_GetObjectItemCaseSensitive(d, "status"))) < 0 ||
            (rc = copy_text(x, "message", cJSON_GetObjectItemCaseSensitive(d, "message"))) < 0)
            return rc;
    }
    if (!o->child)
        cJSON_DeleteItemFromObjectCaseSensitive(out, "serveDeploymentStatuses");
    return 0;
}

int rs_serve_parse(const char *body, size_t len, cJSON **apps, bool *ready)
{
    cJSON *root = NULL, *out = NULL;
    const cJSON *a;
    int rc = -EPROTO, n = 0;
    *apps = NULL;
    *ready = false;
    if (!body || len > DASH_MAX_BODY)
        return -EMSGSIZE;
    root = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(root))
        goto out;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "applications");
    if (list && !cJSON_IsNull(list) && !cJSON_IsObject(list))
        goto out;
    if (!(out = cJSON_CreateObject())) {
        rc = -ENOMEM;
        goto out;
    }
    bool all = true;
    const cJSON *al = cJSON_IsObject(list) ? list : NULL;
    cJSON_ArrayForEach(a, al) {
        if (++n > RS_SERVE_MAX_APPS) {
            rc = -E2BIG;
            goto out;
        }
        const char *name = a->string && *a->string ? a->string : RS_DEFAULT_APP;
        cJSON *x = cJSON_CreateObject();
        if (!x) {
            rc = -ENOMEM;
            goto out;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(out, name);
        cJSON_AddItemToObject(out, name, x);
        if ((rc = parse_app(a, x)) < 0)
            goto out;
        if (strcmp(rs_str(x, "status"), "RUNNING") != 0)
            all = false;
    }
    *ready = all && out->child;
    *apps = out;
    out = NULL;
    rc = 0;
out:
    cJSON_Delete(out);
    cJSON_Delete(root);
    return rc;
}

/* One application's config without its "name" (Ray's deployed_app_config may leave out
 * the default name the PUT set, or the other way round), for comparing. */
static cJSON *app_config_unnamed(const cJSON *app)
{
    cJSON *c = cJSON_Duplicate(app, 1);
    if (c)
        cJSON_DeleteItemFromObjectCaseSensitive(c, "name");
    return c;
}

static const char *app_name(const cJSON *app)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(app, "name");
    return cJSON_IsString(n) && *n->valuestring ? n->valuestring : RS_DEFAULT_APP;
}

/* Whether the cluster's applications (root.applications.APP.deployed_app_config) are
 * exactly the PUT body's, and its target_capacity the body's. */
static bool runs_config(const cJSON *root, const cJSON *want)
{
    const cJSON *have = cJSON_GetObjectItemCaseSensitive(root, "applications"), *w, *k;
    const cJSON *wapps = cJSON_GetObjectItemCaseSensitive(want, "applications");
    const cJSON *wtc = cJSON_GetObjectItemCaseSensitive(want, "target_capacity");
    const cJSON *htc = cJSON_GetObjectItemCaseSensitive(root, "target_capacity");
    int n = 0, m = 0;

    cJSON_ArrayForEach(k, want)   /* proxy_location, http_options...: not reported as sent */
        if (strcmp(k->string, "applications") && strcmp(k->string, "target_capacity"))
            return false;
    if (cJSON_IsNumber(wtc) != cJSON_IsNumber(htc) ||
        (cJSON_IsNumber(wtc) && wtc->valuedouble != htc->valuedouble))
        return false;
    if (!cJSON_IsObject(have) || !cJSON_IsArray(wapps) || !wapps->child)
        return false;
    cJSON_ArrayForEach(k, have)
        if (++m > RS_SERVE_MAX_APPS)
            return false;
    cJSON_ArrayForEach(w, wapps) {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, app_name(w));
        cJSON *a, *b;
        bool same;
        if (++n > m || !cJSON_IsObject(w) || !h)
            return false;
        a = app_config_unnamed(w);
        b = app_config_unnamed(cJSON_GetObjectItemCaseSensitive(h, "deployed_app_config"));
        same = a && b && json_equal(a, b);
        cJSON_Delete(a);
        cJSON_Delete(b);
        if (!same)
            return false;
    }
    return n == m;
}

bool rs_serve_runs_config(const char *body, size_t len, const char *put_body)
{
    cJSON *root, *want;
    bool same = false;

    if (!body || !put_body || len > DASH_MAX_BODY)
        return false;
    root = cJSON_ParseWithLength(body, len);
    want = cJSON_Parse(put_body);
    if (cJSON_IsObject(root) && cJSON_IsObject(want))
        same = runs_config(root, want);
    cJSON_Delete(root);
    cJSON_Delete(want);
    return same;
}

bool rs_serve_need_submit(const char *memo, const char *config, const cJSON *apps,
                          const char **why)
{
    const char *w;
    bool need = true;
    if (!memo || !*memo)
        w = "Nothing has been cached for the cluster.";
    else if (!apps || !apps->child)
        w = "No Serve application found in the RayCluster. A possible reason is that the head "
            "Pod crashed and GCS FT was not enabled.";
    else if (strcmp(memo, config ? config : "") != 0)
        w = "Current V2 Serve config doesn't match cached Serve config.";
    else
        w = "Current V2 Serve config matches cached Serve config.", need = false;
    if (why)
        *why = w;
    return need;
}

/* ---- the memory of submitted configs ------------------------------------------------- */

struct memo {
    char *id;                 /* "ns/name\ncluster": the uthash key */
    char *config;
    size_t bytes;
    UT_hash_handle hh;
};

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct memo *memo_table;   /* uthash keeps insertion order: head = least recent */
static size_t memo_bytes;

static char *memo_id(const char *key, const char *cluster)
{
    size_t n = strlen(key) + strlen(cluster) + 2;
    char *id = malloc(n);
    if (id)
        snprintf(id, n, "%s\n%s", key, cluster);
    return id;
}

static void memo_drop(struct memo *m)
{
    HASH_DEL(memo_table, m);
    memo_bytes -= m->bytes;
    free(m->id);
    free(m->config);
    free(m);
}

char *rs_memo_get(const char *key, const char *cluster)
{
    char *id = memo_id(key, cluster), *copy = NULL;
    struct memo *m;
    if (!id)
        return NULL;
    pthread_mutex_lock(&memo_mu);
    HASH_FIND_STR(memo_table, id, m);
    if (m) {
        /* most recently used goes to the tail */
        HASH_DEL(memo_table, m);
        HASH_ADD_KEYPTR(hh, memo_table, m->id, strlen(m->id), m);
        copy = strdup(m->config);
    }
    pthread_mutex_unlock(&memo_mu);
    free(id);
    return copy;
}

int rs_memo_put(const char *key, const char *cluster, const char *config)
{
    struct memo *m, *old;
    if (!config || !*config)
        return 0;             /* cacheServeConfig keeps nothing for an empty config */
    if (!(m = calloc(1, sizeof(*m))))
        return -ENOMEM;
    m->id = memo_id(key, cluster);
    m->config = strdup(config);
    if (!m->id || !m->config) {
        free(m->id);
        free(m->config);
        free(m);
        return -ENOMEM;
    }
    m->bytes = strlen(m->id) + strlen(m->config) + sizeof(*m);
    pthread_mutex_lock(&memo_mu);
    HASH_FIND_STR(memo_table, m->id, old);
    if (old)
        memo_drop(old);
    HASH_ADD_KEYPTR(hh, memo_table, m->id, strlen(m->id), m);
    memo_bytes += m->bytes;
    /* evict the least recently used beyond either bound (never the one just added) */
    while (memo_table && memo_table != m &&
           (HASH_COUNT(memo_table) > RS_MEMO_MAX || memo_bytes > RS_MEMO_MAX_BYTES))
        memo_drop(memo_table);
    pthread_mutex_unlock(&memo_mu);
    return 0;
}

void rs_memo_prune(const char *key, const char *keep1, const char *keep2)
{
    struct memo *m, *tmp;
    size_t kl = strlen(key);
    pthread_mutex_lock(&memo_mu);
    HASH_ITER(hh, memo_table, m, tmp) {
        if (strncmp(m->id, key, kl) != 0 || m->id[kl] != '\n')
            continue;
        const char *c = m->id + kl + 1;
        if ((keep1 && *keep1 && !strcmp(c, keep1)) || (keep2 && *keep2 && !strcmp(c, keep2)))
            continue;
        memo_drop(m);
    }
    pthread_mutex_unlock(&memo_mu);
}

void rs_memo_stats(size_t *entries, size_t *bytes)
{
    pthread_mutex_lock(&memo_mu);
    *entries = HASH_COUNT(memo_table);
    *bytes = memo_bytes;
    pthread_mutex_unlock(&memo_mu);
}

void rs_memo_clear(void)
{
    pthread_mutex_lock(&memo_mu);
    while (memo_table)
        memo_drop(memo_table);
    pthread_mutex_unlock(&memo_mu);
}

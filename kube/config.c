/*
 * config.c - resolves where and how to talk to the API server: kubeconfig
 * files (one, or several merged from $KUBECONFIG) and in-cluster service
 * accounts, into one struct kube_config.
 *
 * Merging follows client-go's clientcmd loading rules: files are read in
 * order and for every named cluster, user and context the first file that
 * defines the name wins; current-context is the first non-empty one. Relative
 * paths inside a file are resolved against that file's directory. Unsupported
 * authentication (exec plugins, auth-provider, basic auth) is reported as
 * such instead of silently connecting anonymously.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "kube/internal.h"

#define PEM_MAX_BYTES (1u << 20)
#define NS_MAX_BYTES 253
#define DEFAULT_INCLUSTER_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* One named entry (cluster, user or context) and the directory of its file. */
struct named {
    const char *name;
    const struct ynode *body;
    const char *base_dir;
};

struct merged {
    struct named *clusters, *users, *contexts;
    size_t nclusters, nusers, ncontexts;
    const char *current_context;
};

/* One parsed file kept alive while merging. */
struct loaded {
    struct ynode *root;
    char *base_dir;
};

void kube_config_free(struct kube_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->server);
    free(cfg->namespace);
    free(cfg->context);
    free(cfg->tls_server_name);
    free(cfg->ca_file);
    free(cfg->ca_pem);
    free(cfg->cert_file);
    free(cfg->cert_pem);
    free(cfg->key_file);
    if (cfg->key_pem != NULL) {
        explicit_bzero(cfg->key_pem, cfg->key_pem_len);
        free(cfg->key_pem);
    }
    if (cfg->token != NULL) {
        explicit_bzero(cfg->token, strlen(cfg->token));
        free(cfg->token);
    }
    free(cfg->token_file);
    kube__token_state_free(cfg->token_state);
    free(cfg);
}

static const struct named *find_named(const struct named *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

/* Adds the entries of seq (a list of {name, <inner>}) to *v unless the name
 * is already there (first file wins). */
static int merge_list(const struct ynode *seq, const char *inner, const char *base_dir,
                      struct named **v, size_t *n, size_t *total, char *err, size_t errlen)
{
    if (seq == NULL)
        return 0;
    if (seq->kind == YNODE_SCALAR && seq->len == 0)
        return 0; /* "clusters:" with nothing after it, or null */
    if (seq->kind == YNODE_SCALAR && strcmp(seq->value, "null") == 0)
        return 0;
    if (seq->kind != YNODE_SEQ) {
        kube__set_err(err, errlen, "kubeconfig: %ss must be a list", inner);
        return -EINVAL;
    }
    for (size_t i = 0; i < seq->n; i++) {
        const struct ynode *item = seq->kids[i];
        const char *name = kube__ynode_str(kube__ynode_get(item, "name"));
        const struct ynode *body = kube__ynode_get(item, inner);
        if (name == NULL || name[0] == '\0') {
            kube__set_err(err, errlen, "kubeconfig: a %s entry has no name", inner);
            return -EINVAL;
        }
        if (find_named(*v, *n, name) != NULL)
            continue;
        if (++*total > KUBE_CONFIG_MAX_ENTRIES) {
            kube__set_err(err, errlen, "kubeconfig: more than %d entries", KUBE_CONFIG_MAX_ENTRIES);
            return -E2BIG;
        }
        struct named *nv = realloc(*v, (*n + 1) * sizeof(*nv));
        if (nv == NULL)
            return -ENOMEM;
        *v = nv;
        nv[*n].name = name;
        nv[*n].body = body;
        nv[*n].base_dir = base_dir;
        ++*n;
    }
    return 0;
}

static int merge_file(struct merged *m, const struct loaded *f, size_t *total, char *err,
                      size_t errlen)
{
    const struct ynode *root = f->root;
    int rc;

    if (root->kind != YNODE_MAP) {
        kube__set_err(err, errlen, "kubeconfig: top level must be a mapping");
        return -EINVAL;
    }
    rc = merge_list(kube__ynode_get(root, "clusters"), "cluster", f->base_dir, &m->clusters,
                    &m->nclusters, total, err, errlen);
    if (rc == 0)
        rc = merge_list(kube__ynode_get(root, "users"), "user", f->base_dir, &m->users,
                        &m->nusers, total, err, errlen);
    if (rc == 0)
        rc = merge_list(kube__ynode_get(root, "contexts"), "context", f->base_dir,
                        &m->contexts, &m->ncontexts, total, err, errlen);
    const char *cur = kube__ynode_str(kube__ynode_get(root, "current-context"));
    if (rc == 0 && (m->current_context == NULL || m->current_context[0] == '\0') && cur != NULL)
        m->current_context = cur;
    return rc;
}

/* base_dir/path unless path is absolute. Caller frees. */
static char *resolve_path(const char *base_dir, const char *path)
{
    char *out = NULL;
    if (path[0] == '/' || base_dir == NULL || base_dir[0] == '\0')
        return strdup(path);
    if (asprintf(&out, "%s/%s", base_dir, path) < 0)
        return NULL;
    return out;
}

static int yaml_bool(const char *s)
{
    if (s == NULL)
        return 0;
    return strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0 ||
           strcmp(s, "yes") == 0 || strcmp(s, "on") == 0;
}

/* Copies an optional scalar field; -ENOMEM only. */
static int dup_field(const struct ynode *map, const char *key, char **dst)
{
    const char *v = kube__ynode_str(kube__ynode_get(map, key));
    if (v == NULL || v[0] == '\0')
        return 0;
    *dst = strdup(v);
    return *dst == NULL ? -ENOMEM : 0;
}

/* field-data (base64 PEM) or field (path). */
static int pem_field(const struct ynode *map, const char *key, const char *base_dir,
                     char **file, char **pem, size_t *pem_len, char *err, size_t errlen)
{
    char dkey[64];
    snprintf(dkey, sizeof(dkey), "%s-data", key);
    const char *data = kube__ynode_str(kube__ynode_get(map, dkey));
    const char *path = kube__ynode_str(kube__ynode_get(map, key));

    if (data != NULL && data[0] != '\0') {
        int rc = kobj_base64_decode(data, strlen(data), pem, pem_len);
        if (rc == -EINVAL)
            kube__set_err(err, errlen, "kubeconfig: %s is not valid base64", dkey);
        return rc;
    }
    if (path != NULL && path[0] != '\0') {
        *file = resolve_path(base_dir, path);
        return *file == NULL ? -ENOMEM : 0;
    }
    return 0;
}

static int fill_cluster(struct kube_config *cfg, const struct named *cl, char *err,
                        size_t errlen)
{
    const struct ynode *c = cl->body;
    int rc;

    rc = dup_field(c, "server", &cfg->server);
    if (rc < 0)
        return rc;
    if (cfg->server == NULL) {
        kube__set_err(err, errlen, "kubeconfig: cluster \"%s\" has no server", cl->name);
        return -EINVAL;
    }
    if (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0) {
        /* client-go defaults a bare host to https. */
        char *s = NULL;
        if (strstr(cfg->server, "://") != NULL) {
            kube__set_err(err, errlen, "kubeconfig: cluster \"%s\": unsupported scheme in server",
                          cl->name);
            return -EINVAL;
        }
        if (asprintf(&s, "https://%s", cfg->server) < 0)
            return -ENOMEM;
        free(cfg->server);
        cfg->server = s;
    }
    size_t sl = strlen(cfg->server);
    while (sl > 0 && cfg->server[sl - 1] == '/')
        cfg->server[--sl] = '\0';
    cfg->insecure_skip_tls_verify = yaml_bool(
        kube__ynode_str(kube__ynode_get(c, "insecure-skip-tls-verify")));
    cfg->disable_compression = yaml_bool(
        kube__ynode_str(kube__ynode_get(c, "disable-compression")));
    rc = dup_field(c, "tls-server-name", &cfg->tls_server_name);
    if (rc == 0)
        rc = pem_field(c, "certificate-authority", cl->base_dir, &cfg->ca_file, &cfg->ca_pem,
                       &cfg->ca_pem_len, err, errlen);
    if (rc == 0 && cfg->insecure_skip_tls_verify && (cfg->ca_file || cfg->ca_pem)) {
        kube__set_err(err, errlen, "kubeconfig: cluster \"%s\": specifying a root certificates "
                      "file with the insecure flag is not allowed", cl->name);
        rc = -EINVAL;
    }
    return rc;
}

static int fill_user(struct kube_config *cfg, const struct named *u, char *err, size_t errlen)
{
    const struct ynode *m = u->body;
    const char *tf;
    int rc;

    if (m == NULL || m->kind != YNODE_MAP)
        return 0; /* "user: {}" or null: anonymous */
    rc = dup_field(m, "token", &cfg->token);
    if (rc < 0)
        return rc;
    tf = kube__ynode_str(kube__ynode_get(m, "tokenFile"));
    if (tf != NULL && tf[0] != '\0') {
        cfg->token_file = resolve_path(u->base_dir, tf);
        if (cfg->token_file == NULL)
            return -ENOMEM;
    }
    rc = pem_field(m, "client-certificate", u->base_dir, &cfg->cert_file, &cfg->cert_pem,
                   &cfg->cert_pem_len, err, errlen);
    if (rc == 0)
        rc = pem_field(m, "client-key", u->base_dir, &cfg->key_file, &cfg->key_pem,
                       &cfg->key_pem_len, err, errlen);
    if (rc < 0)
        return rc;
    int has_cert = cfg->cert_file || cfg->cert_pem, has_key = cfg->key_file || cfg->key_pem;
    if (has_cert != has_key) {
        kube__set_err(err, errlen, "kubeconfig: user \"%s\": client certificate and key must be "
                      "given together", u->name);
        return -EINVAL;
    }
    if (cfg->token == NULL && cfg->token_file == NULL && !has_cert) {
        static const char *const unsupported[] = { "exec", "auth-provider", "username" };
        for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
            if (kube__ynode_get(m, unsupported[i]) != NULL) {
                kube__set_err(err, errlen, "kubeconfig: user \"%s\": %s authentication is not "
                              "supported (use a token, tokenFile or client certificate)",
                              u->name, unsupported[i]);
                return -ENOTSUP;
            }
        }
    }
    return 0;
}

/* The last step of both loaders: a config that reads its token from a file gets the
 * file's refresh state, then it is the caller's (*out). cfg is consumed either way. */
static int hand_over(struct kube_config *cfg, struct kube_config **out)
{
    int rc = cfg->token_file != NULL ? kube__token_state_new(&cfg->token_state) : 0;

    if (rc < 0) {
        kube_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

static int build_config(const struct merged *m, const char *context, struct kube_config **out,
                        char *err, size_t errlen)
{
    struct kube_config *cfg = NULL;
    const struct named *ctx, *cl, *u = NULL;
    const char *cname, *uname, *ns;
    int rc;

    *out = NULL;
    if (context == NULL || context[0] == '\0')
        context = m->current_context;
    if (context == NULL || context[0] == '\0') {
        kube__set_err(err, errlen, "kubeconfig: no context selected (current-context unset and "
                      "no --context given)");
        return -EINVAL;
    }
    ctx = find_named(m->contexts, m->ncontexts, context);
    if (ctx == NULL) {
        kube__set_err(err, errlen, "kubeconfig: context \"%s\" not found", context);
        return -ENOENT;
    }
    cname = kube__ynode_str(kube__ynode_get(ctx->body, "cluster"));
    uname = kube__ynode_str(kube__ynode_get(ctx->body, "user"));
    ns = kube__ynode_str(kube__ynode_get(ctx->body, "namespace"));
    if (cname == NULL || (cl = find_named(m->clusters, m->nclusters, cname)) == NULL) {
        kube__set_err(err, errlen, "kubeconfig: cluster \"%s\" of context \"%s\" not found",
                      cname ? cname : "", context);
        return -ENOENT;
    }
    if (cl->body == NULL || cl->body->kind != YNODE_MAP) {
        kube__set_err(err, errlen, "kubeconfig: cluster \"%s\" is empty", cname);
        return -EINVAL;
    }
    if (uname != NULL && uname[0] != '\0' &&
        (u = find_named(m->users, m->nusers, uname)) == NULL) {
        kube__set_err(err, errlen, "kubeconfig: user \"%s\" of context \"%s\" not found", uname,
                      context);
        return -ENOENT;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL)
        return -ENOMEM;
    rc = -ENOMEM;
    if ((cfg->context = strdup(context)) == NULL)
        goto out;
    if ((cfg->namespace = strdup(ns != NULL && ns[0] != '\0' ? ns : "default")) == NULL)
        goto out;
    rc = fill_cluster(cfg, cl, err, errlen);
    if (rc == 0 && u != NULL)
        rc = fill_user(cfg, u, err, errlen);
    if (rc == 0)
        return hand_over(cfg, out);
out:
    kube_config_free(cfg);
    return rc;
}

static void merged_free(struct merged *m)
{
    free(m->clusters);
    free(m->users);
    free(m->contexts);
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int kube_config_parse(const char *data, size_t len, const char *context, const char *base_dir,
                      struct kube_config **out, char *err, size_t errlen)
{
    struct loaded f = { 0 };
    struct merged m = { 0 };
    size_t total = 0;
    int rc;

    *out = NULL;
    rc = kube__yaml_parse(data, len, &f.root, err, errlen);
    if (rc < 0)
        return rc;
    f.base_dir = (char *)base_dir;
    rc = merge_file(&m, &f, &total, err, errlen);
    if (rc == 0)
        rc = build_config(&m, context, out, err, errlen);
    merged_free(&m);
    kube__ynode_free(f.root);
    return rc;
}

int kube_config_load_files(const char *paths, const char *context, struct kube_config **out,
                           char *err, size_t errlen)
{
    struct loaded *files = NULL;
    size_t nfiles = 0, total = 0;
    struct merged m = { 0 };
    char *list = NULL, *save = NULL;
    int rc = 0;

    *out = NULL;
    if (paths == NULL || (list = strdup(paths)) == NULL)
        return paths == NULL ? -EINVAL : -ENOMEM;
    for (char *p = strtok_r(list, ":", &save); p != NULL; p = strtok_r(NULL, ":", &save)) {
        char *data = NULL;
        size_t len = 0;
        if (p[0] == '\0')
            continue;
        rc = kube__read_file(p, KUBE_CONFIG_MAX_BYTES, &data, &len);
        if (rc == -ENOENT) {
            rc = 0; /* client-go skips missing files in KUBECONFIG */
            continue;
        }
        if (rc < 0) {
            kube__set_err(err, errlen, "kubeconfig %s: %s", p,
                          rc == -E2BIG ? "file too large" : strerror(-rc));
            goto out;
        }
        struct loaded *nf = realloc(files, (nfiles + 1) * sizeof(*nf));
        if (nf == NULL) {
            free(data);
            rc = -ENOMEM;
            goto out;
        }
        files = nf;
        files[nfiles].root = NULL;
        files[nfiles].base_dir = dir_of(p);
        nfiles++;
        if (files[nfiles - 1].base_dir == NULL) {
            free(data);
            rc = -ENOMEM;
            goto out;
        }
        char perr[256] = "";
        rc = kube__yaml_parse(data, len, &files[nfiles - 1].root, perr, sizeof(perr));
        free(data);
        if (rc < 0) {
            kube__set_err(err, errlen, "kubeconfig %s: %s", p, perr);
            goto out;
        }
        rc = merge_file(&m, &files[nfiles - 1], &total, perr, sizeof(perr));
        if (rc < 0) {
            kube__set_err(err, errlen, "%s (%s)", perr, p);
            goto out;
        }
    }
    if (nfiles == 0) {
        kube__set_err(err, errlen, "kubeconfig: none of \"%s\" exists", paths);
        rc = -ENOENT;
        goto out;
    }
    rc = build_config(&m, context, out, err, errlen);
out:
    merged_free(&m);
    for (size_t i = 0; i < nfiles; i++) {
        kube__ynode_free(files[i].root);
        free(files[i].base_dir);
    }
    free(files);
    free(list);
    return rc;
}

int kube_config_in_cluster(const char *dir, struct kube_config **out, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct kube_config *cfg = NULL;
    char *path = NULL, *ns = NULL;
    struct stat st;
    int rc = -ENOMEM;

    *out = NULL;
    if (dir == NULL)
        dir = DEFAULT_INCLUSTER_DIR;
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0') {
        kube__set_err(err, errlen, "not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
        return -ENOENT;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL)
        return -ENOMEM;
    if (asprintf(&cfg->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
                 port) < 0) {
        cfg->server = NULL;
        goto out;
    }
    if (asprintf(&cfg->token_file, "%s/token", dir) < 0) {
        cfg->token_file = NULL;
        goto out;
    }
    if (stat(cfg->token_file, &st) < 0) {
        rc = -errno;
        kube__set_err(err, errlen, "in-cluster: cannot read %s: %s", cfg->token_file,
                      strerror(errno));
        goto out;
    }
    if (asprintf(&path, "%s/ca.crt", dir) < 0) {
        path = NULL;
        goto out;
    }
    if (stat(path, &st) == 0) {
        cfg->ca_file = path;
        path = NULL;
    } else {
        log_warn("in-cluster CA file missing, using system roots", "path", path, NULL);
    }
    free(path);
    if (asprintf(&path, "%s/namespace", dir) < 0) {
        path = NULL;
        goto out;
    }
    if (kube__read_file(path, NS_MAX_BYTES + 2, &ns, NULL) == 0) {
        ns[strcspn(ns, " \r\n\t")] = '\0';
        if (ns[0] != '\0') {
            cfg->namespace = ns;
            ns = NULL;
        }
    }
    if (cfg->namespace == NULL && (cfg->namespace = strdup("default")) == NULL)
        goto out;
    rc = hand_over(cfg, out);
    cfg = NULL;
out:
    free(path);
    free(ns);
    kube_config_free(cfg);
    return rc;
}

int kube_config_load(const struct kube_config_opts *opts, struct kube_config **out, char *err,
                     size_t errlen)
{
    static const struct kube_config_opts none = { 0 };
    const char *env, *home;
    char *path = NULL;
    int rc;

    if (opts == NULL)
        opts = &none;
    if (opts->kubeconfig != NULL && opts->kubeconfig[0] != '\0') {
        /* An explicit file must exist (unlike entries of $KUBECONFIG). */
        if (access(opts->kubeconfig, R_OK) < 0) {
            rc = -errno;
            kube__set_err(err, errlen, "kubeconfig %s: %s", opts->kubeconfig, strerror(errno));
            return rc;
        }
        return kube_config_load_files(opts->kubeconfig, opts->context, out, err, errlen);
    }
    env = getenv("KUBECONFIG");
    if (env != NULL && env[0] != '\0')
        return kube_config_load_files(env, opts->context, out, err, errlen);
    /* As controller-runtime: any in-cluster failure falls through to the home
     * kubeconfig; if that is missing too, the in-cluster reason is reported
     * when the service environment says we are in a pod. */
    char icerr[256] = "";
    int icrc = -ENOENT;
    if (!opts->no_incluster) {
        icrc = kube_config_in_cluster(opts->incluster_dir, out, icerr, sizeof(icerr));
        if (icrc == 0)
            return 0;
    }
    home = getenv("HOME");
    if (home != NULL && home[0] != '\0') {
        if (asprintf(&path, "%s/.kube/config", home) < 0)
            return -ENOMEM;
        rc = kube_config_load_files(path, opts->context, out, err, errlen);
        free(path);
        if (rc != -ENOENT)
            return rc;
    }
    if (icrc != -ENOENT || getenv("KUBERNETES_SERVICE_HOST") != NULL) {
        kube__set_err(err, errlen, "%s", icerr);
        return icrc;
    }
    kube__set_err(err, errlen, "no kubeconfig: not in a cluster, no $KUBECONFIG, no "
                  "$HOME/.kube/config");
    return -ENOENT;
}

/*
 * opts.c - flag parsing for `rayop watcher` and `rayop status`: --flag VALUE
 * and --flag=VALUE forms, sizes with K/M/G suffixes, and the state directory.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kobj/yamljson.h"
#include "util/util.h"
#include "watcher/opts.h"

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -EINVAL;
    unsigned long long mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    if ((*end == 'i' || *end == 'B') && mul > 1)
        end++;
    if (*end || (mul > 1 && v > (~0ull) / mul))
        return -EINVAL;
    *out = (size_t)(v * mul);
    return 0;
}

static int add_namespaces(struct wopts *o, const char *list);

/* KubeRay's Configuration file (--config): as KubeRay, its fields replace the flags; the
 * watcher reads what scopes and paces its streams (watchNamespace, qps, burst), so a
 * namespace-scoped operator never LISTs cluster-wide. Bounded: 1 MiB. */
static int load_config(struct wopts *o)
{
    char err[256], *data = NULL;
    cJSON *doc = NULL;
    size_t n;
    int rc = util_read_file(o->config_file, 1u << 20, &data, &n);
    if (rc == -E2BIG)
        fprintf(stderr, "rayop: %s is larger than 1 MiB\n", o->config_file);
    else if (rc < 0)
        fprintf(stderr, "rayop: cannot open %s: %s\n", o->config_file, strerror(-rc));
    if (rc < 0)
        return rc;
    rc = -EINVAL;
    if (yamljson_parse_one(data, n, &doc, err, sizeof(err)) < 0 || !cJSON_IsObject(doc)) {
        fprintf(stderr, "rayop: %s: %s\n", o->config_file, cJSON_IsObject(doc) ? err : "not a mapping");
        goto out;
    }
    for (size_t i = 0; i < o->nnamespaces; i++)
        free(o->namespaces[i]);
    o->nnamespaces = 0;
    o->qps = 0;
    o->burst = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "watchNamespace");
    if (cJSON_IsString(v) && v->valuestring[0] && add_namespaces(o, v->valuestring) < 0)
        goto out;
    v = cJSON_GetObjectItemCaseSensitive(doc, "qps");
    if (cJSON_IsNumber(v) && v->valuedouble > 0)
        o->qps = v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(doc, "burst");
    if (cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble <= 1000000)
        o->burst = (int)v->valuedouble;
    rc = 0;
out:
    cJSON_Delete(doc);
    free(data);
    return rc;
}

static int add_namespaces(struct wopts *o, const char *list)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n > 0) {
            if (n >= CACHE_NS_MAX || o->nnamespaces >= WATCHER_MAX_NAMESPACES) {
                fprintf(stderr, "rayop: too many or too long namespaces in \"%s\"\n", list);
                return -EINVAL;
            }
            if (!(o->namespaces[o->nnamespaces] = strndup(p, n)))
                return -ENOMEM;
            o->nnamespaces++;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

int wopts_parse(struct wopts *o, int argc, char **argv, enum wopts_cmd cmd)
{
    memset(o, 0, sizeof(*o));
    o->state_dir = WOPTS_DEFAULT_STATE_DIR;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[64];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strcmp(a, "-o") == 0 && cmd == WOPTS_STATUS) {
            if (i + 1 >= argc)
                goto missing;
            val = argv[++i];
            if (strcmp(val, "json") == 0) o->json = 1;
            else if (strcmp(val, "table") == 0 || strcmp(val, "wide") == 0) o->json = 0;
            else { fprintf(stderr, "rayop: -o takes json or table\n"); return -EINVAL; }
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "rayop: unexpected argument \"%s\"\n", a);
            return -EINVAL;
        }
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        if (nl >= sizeof(name)) {
            fprintf(stderr, "rayop: unknown flag %s\n", a);
            return -EINVAL;
        }
        memcpy(name, a, nl);
        name[nl] = '\0';
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                goto missing;
            val = argv[++i];
        }
        int bad = 0;
        if (strcmp(name, "--state-dir") == 0) {
            o->state_dir = val;
        } else if (strcmp(name, "--log-level") == 0) {
            int lv = log_parse_level(val);
            if (lv < 0) bad = 1; else log_set_level(lv);
        } else if (strcmp(name, "--log-stdout-encoder") == 0) {
            int enc = log_parse_encoder(val);
            if (enc < 0) bad = 1; else log_set_encoder(enc);
        } else if (strcmp(name, "--output") == 0 && cmd == WOPTS_STATUS) {
            o->json = strcmp(val, "json") == 0;
        } else if (cmd != WOPTS_WATCHER) {
            fprintf(stderr, "rayop: unknown flag %s\n", name);
            return -EINVAL;
        } else if (strcmp(name, "--kubeconfig") == 0) {
            o->kubeconfig = val;
        } else if (strcmp(name, "--config") == 0) {
            o->config_file = val;
        } else if (strcmp(name, "--metrics-addr") == 0) {
            o->metrics_addr = val;
        } else if (strcmp(name, "--context") == 0) {
            o->context = val;
        } else if (strcmp(name, "--namespace") == 0 || strcmp(name, "--watch-namespace") == 0) {
            int rc = add_namespaces(o, val);
            if (rc < 0) { wopts_free(o); return rc; }
        } else if (strcmp(name, "--qps") == 0) {
            char *end;
            o->qps = strtod(val, &end);
            bad = *end != '\0' || end == val;
        } else if (strcmp(name, "--burst") == 0) {
            char *end;
            long b = strtol(val, &end, 10);
            bad = *end != '\0' || end == val || b < 0 || b > 1000000;
            o->burst = (int)b;
        } else if (strcmp(name, "--cache-capacity") == 0) {
            bad = parse_size(val, &o->cache_bytes) < 0;
        } else if (strcmp(name, "--cache-max-bytes") == 0) {
            bad = parse_size(val, &o->cache_max_bytes) < 0;
            o->cache_max_bytes_set = 1;
        } else if (strcmp(name, "--cache-max-objects") == 0) {
            size_t n;
            bad = parse_size(val, &n) < 0 || n > 0xffffffffu;
            o->cache_objects = (unsigned)n;
        } else {
            fprintf(stderr, "rayop: unknown flag %s\n", name);
            wopts_free(o);
            return -EINVAL;
        }
        if (bad) {
            fprintf(stderr, "rayop: bad value for %s: \"%s\"\n", name, val);
            wopts_free(o);
            return -EINVAL;
        }
    }
    if (o->config_file && load_config(o) < 0) {
        wopts_free(o);
        return -EINVAL;
    }
    return 0;
missing: {
    /* the last argument: an unknown flag is named as such */
    static const char *const known[] = { "--state-dir", "--log-level", "--log-stdout-encoder",
        "--output", "--kubeconfig", "--metrics-addr", "--context", "--namespace",
        "--watch-namespace", "--qps", "--burst", "--cache-capacity", "--cache-max-bytes",
        "--cache-max-objects", NULL };
    const char *last = argv[argc - 1];
    size_t ll = strcspn(last, "=");
    int k = 0;
    while (known[k] && (strlen(known[k]) != ll || strncmp(known[k], last, ll) != 0))
        k++;
    if (known[k] || strcmp(last, "-o") == 0)
        fprintf(stderr, "rayop: %s needs a value\n", last);
    else
        fprintf(stderr, "rayop: unknown flag %s\n", last);
    }
    wopts_free(o);
    return -EINVAL;
}

void wopts_free(struct wopts *o)
{
    for (size_t i = 0; i < o->nnamespaces; i++)
        free(o->namespaces[i]);
    o->nnamespaces = 0;
}

int wopts_state_dir(const char *dir)
{
    char path[4096];
    struct stat st;
    if (!dir || !*dir || strlen(dir) >= sizeof(path))
        return -EINVAL;
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST) {
            int e = errno;
            log_error("cannot create state dir", "dir", path, "error", strerror(e), NULL);
            return -e;
        }
        *p = '/';
    }
    int created = 1;
    if (mkdir(path, 0700) < 0) {
        int e = errno;
        if (e != EEXIST) {
            log_error("cannot create state dir", "dir", path, "error", strerror(e), NULL);
            return -e;
        }
        created = 0;
    }
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
        log_error("state dir is not a directory", "dir", path, NULL);
        return -ENOTDIR;
    }
    if (st.st_mode & 077)
        log_warn("state dir is open to other users; expected mode 0700", "dir", path, NULL);
    return created;
}

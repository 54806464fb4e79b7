/*
 * token.c - bearer tokens, and the small file helpers config loading shares.
 *
 * A token file (kubeconfig tokenFile, or the projected service-account token
 * that the kubelet rotates) is cached and re-read only when stat(2) shows it
 * changed (inode, size or mtime; the kubelet swaps the file by renaming a
 * symlink, which changes the inode), checked at most once a second so a busy
 * client does not stat on every request, or at once when forced after a 401.
 * Tokens are secrets: nothing here logs them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "kube/internal.h"

#define TOKEN_MAX_BYTES (64 * 1024)
#define TOKEN_RECHECK_NS 1000000000ull

void kube__set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int kube__read_file(const char *path, size_t max, char **out, size_t *len)
{
    int fd, rc = 0;
    struct buf b = { 0 };
    char chunk[8192];

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        if (n == 0)
            break;
        if (b.len + (size_t)n > max) {
            rc = -E2BIG;
            goto out;
        }
        rc = buf_append(&b, chunk, (size_t)n);
        if (rc < 0)
            goto out;
    }
    if (buf_reserve(&b, 1) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    b.data[b.len] = '\0';
    if (len != NULL)
        *len = b.len;
    *out = buf_steal(&b);
out:
    close(fd);
    buf_free(&b);
    return rc;
}

int kube_secret_value(const cJSON *secret, const char *key, char **out, size_t *len)
{
    const cJSON *v;
    *out = NULL;
    *len = 0;
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(secret, "stringData"), key);
    if (cJSON_IsString(v)) {   /* only in an object not yet written back by the server */
        if (!(*out = strdup(v->valuestring)))
            return -ENOMEM;
        *len = strlen(*out);
        return 0;
    }
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(secret, "data"), key);
    if (!cJSON_IsString(v))
        return -ENOENT;
    return kobj_base64_decode(v->valuestring, strlen(v->valuestring), out, len);
}

static uint64_t token_clock(void)
{
    return util_now_ns();
}

int kube__token_state_new(struct kube_token_state **out)
{
    struct kube_token_state *ts = calloc(1, sizeof(*ts));
    if (ts == NULL)
        return -ENOMEM;
    pthread_mutex_init(&ts->mu, NULL);
    ts->now_ns = token_clock;
    *out = ts;
    return 0;
}

void kube__token_state_free(struct kube_token_state *ts)
{
    if (ts == NULL)
        return;
    if (ts->token != NULL) {
        explicit_bzero(ts->token, strlen(ts->token));
        free(ts->token);
    }
    pthread_mutex_destroy(&ts->mu);
    free(ts);
}

/* Re-reads the file into ts (mutex held). Keeps the old token on failure. */
static int token_reload(struct kube_token_state *ts, const char *path, const struct stat *st)
{
    char *data = NULL;
    size_t len = 0;
    int rc = kube__read_file(path, TOKEN_MAX_BYTES, &data, &len);
    if (rc < 0)
        return rc;
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' ||
                       data[len - 1] == ' ' || data[len - 1] == '\t'))
        data[--len] = '\0';
    if (len == 0) {
        free(data);
        return -EINVAL;
    }
    if (ts->token != NULL) {
        explicit_bzero(ts->token, strlen(ts->token));
        free(ts->token);
    }
    ts->token = data;
    ts->dev = st->st_dev;
    ts->ino = st->st_ino;
    ts->size = st->st_size;
    ts->mtime = st->st_mtim;
    return 0;
}

int kube_config_token(struct kube_config *cfg, int force, char **out)
{
    struct kube_token_state *ts = cfg->token_state;
    int rc = 0;

    *out = NULL;
    if (cfg->token_file == NULL || ts == NULL) {
        if (cfg->token != NULL && (*out = strdup(cfg->token)) == NULL)
            return -ENOMEM;
        return 0;
    }
    pthread_mutex_lock(&ts->mu);
    uint64_t now = ts->now_ns();
    if (force || ts->token == NULL || now - ts->checked_ns >= TOKEN_RECHECK_NS) {
        struct stat st;
        ts->checked_ns = now;
        if (stat(cfg->token_file, &st) < 0) {
            rc = -errno;
        } else if (ts->token == NULL || st.st_ino != ts->ino || st.st_dev != ts->dev ||
                   st.st_size != ts->size || st.st_mtim.tv_sec != ts->mtime.tv_sec ||
                   st.st_mtim.tv_nsec != ts->mtime.tv_nsec) {
            rc = token_reload(ts, cfg->token_file, &st);
        }
        if (rc < 0 && ts->token != NULL) {
            /* A briefly missing file during rotation: keep using the old token. */
            log_warn("bearer token file unreadable, keeping the previous token",
                     "path", cfg->token_file, "error", kube_strerror(rc), NULL);
            rc = 0;
        }
    }
    if (rc == 0 && ts->token != NULL && (*out = strdup(ts->token)) == NULL)
        rc = -ENOMEM;
    if (rc == 0 && ts->token == NULL && cfg->token != NULL &&
        (*out = strdup(cfg->token)) == NULL)
        rc = -ENOMEM;
    pthread_mutex_unlock(&ts->mu);
    return rc;
}

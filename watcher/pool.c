/*
 * pool.c - the operator Pod's one /metrics: the watcher's own figures (queues, cache,
 * its API client) pooled with every controller process's, which each writes as a
 * snapshot file STATE_DIR/metrics/KIND-ID.prom every 2 s (reconcilers/host). A scrape
 * of --metrics-addr (:8080, what a ServiceMonitor written for KubeRay scrapes) then
 * shows every kind's controller_runtime_*, workqueue_*, kuberay_* and rest_client_*.
 *
 * Families are merged by name (one HELP/TYPE each, samples grouped, as the text format
 * wants). A sample the watcher itself has wins (the queues' workqueue_depth/adds/retries
 * are the watcher's; controllers only echo them). Among the controllers a gauge's equal
 * samples take the largest, counters and histograms add up: two processes of one kind
 * then count as one controller, and rest_client_* (one API server host) sums all clients.
 *
 * A dead controller leaves its last snapshot, so it blanks nothing; a file not refreshed
 * for POOL_STALE_S is dropped and removed (its process is gone; a restarted one writes a
 * new file). Files are the operator's own (0700 directory, 0600 files), still read with
 * bounds: at most POOL_MAX_FILES files of POOL_MAX_BYTES.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "util/util.h"
#include "watcher/internal.h"

#define POOL_STALE_S 30
#define POOL_MAX_FILES 64
#define POOL_MAX_BYTES (16u << 20)

struct sample {
    char *key;                   /* name{labels} */
    double v;
    int from_own;                /* the watcher's own sample */
    struct sample *next;         /* in its family, in order */
    UT_hash_handle hh;
};

struct family {
    char *name, *help, *type;
    struct sample *first, *last;
    struct family *next;
    UT_hash_handle hh;
};

struct pool {
    struct family *by_name, *first, *last;
    struct sample *samples;
    int oom;
};

static struct family *family_get(struct pool *p, const char *name, size_t n)
{
    struct family *f = NULL;
    HASH_FIND(hh, p->by_name, name, n, f);
    if (f)
        return f;
    if (!(f = calloc(1, sizeof(*f))) || !(f->name = strndup(name, n))) {
        free(f);
        p->oom = 1;
        return NULL;
    }
    HASH_ADD_KEYPTR(hh, p->by_name, f->name, n, f);
    if (p->last)
        p->last->next = f;
    else
        p->first = f;
    p->last = f;
    return f;
}

/* The family a sample belongs to: the current TYPE's when the name is it or its
 * _bucket/_sum/_count, else its own name. */
static struct family *family_of(struct pool *p, struct family *cur, const char *key, size_t n)
{
    if (cur) {
        size_t cl = strlen(cur->name);
        if (n >= cl && memcmp(key, cur->name, cl) == 0 &&
            (n == cl || (n - cl == 7 && !memcmp(key + cl, "_bucket", 7)) ||
             (n - cl == 4 && !memcmp(key + cl, "_sum", 4)) ||
             (n - cl == 6 && !memcmp(key + cl, "_count", 6))))
            return cur;
    }
    return family_get(p, key, n);
}

static void add_sample(struct pool *p, struct family *f, const char *key, size_t kn, double v,
                       int own)
{
    struct sample *s = NULL;
    HASH_FIND(hh, p->samples, key, kn, s);
    if (s) {
        if (s->from_own)
            return;                        /* the watcher's figure stands */
        if (own) {
            s->v = v;
            s->from_own = 1;
        } else if (f->type && !strcmp(f->type, "gauge")) {
            s->v = v > s->v ? v : s->v;
        } else {
            s->v += v;
        }
        return;
    }
    if (!(s = calloc(1, sizeof(*s))) || !(s->key = strndup(key, kn))) {
        free(s);
        p->oom = 1;
        return;
    }
    s->v = v;
    s->from_own = own;
    HASH_ADD_KEYPTR(hh, p->samples, s->key, kn, s);
    if (f->last)
        f->last->next = s;
    else
        f->first = s;
    f->last = s;
}

/* One exposition text into the pool. Lines it cannot read are skipped. */
static void pool_text(struct pool *p, const char *t, size_t len, int own)
{
    struct family *cur = NULL;
    const char *end = t + len;
    while (t < end && !p->oom) {
        const char *nl = memchr(t, '\n', (size_t)(end - t)), *le = nl ? nl : end;
        size_t n = (size_t)(le - t);
        if (n > 7 && (!memcmp(t, "# HELP ", 7) || !memcmp(t, "# TYPE ", 7))) {
            const char *name = t + 7, *sp = memchr(name, ' ', (size_t)(le - name));
            if (sp) {
                struct family *f = family_get(p, name, (size_t)(sp - name));
                char **slot = f ? (t[2] == 'H' ? &f->help : &f->type) : NULL;
                if (slot && !*slot && !(*slot = strndup(sp + 1, (size_t)(le - sp - 1))))
                    p->oom = 1;
                if (f && t[2] == 'T')
                    cur = f;
            }
        } else if (n > 0 && t[0] != '#') {
            /* name{labels} value: the value follows the last space */
            const char *sp = le;
            while (sp > t && sp[-1] != ' ')
                sp--;
            const char *brace = memchr(t, '{', n);
            size_t name_n = brace && brace < sp ? (size_t)(brace - t) : (size_t)(sp - 1 - t);
            char num[64];
            size_t vn = (size_t)(le - sp);
            if (sp > t + 1 && vn > 0 && vn < sizeof(num)) {
                char *e;
                memcpy(num, sp, vn);
                num[vn] = '\0';
                double v = strtod(num, &e);
                struct family *f = *e ? NULL : family_of(p, cur, t, name_n);
                if (f)
                    add_sample(p, f, t, (size_t)(sp - 1 - t), v, own);
            }
        }
        t = nl ? nl + 1 : end;
    }
}

static int pool_print(struct pool *p, struct buf *out)
{
    int rc = 0;
    for (struct family *f = p->first; f && rc == 0; f = f->next) {
        if (!f->first)
            continue;
        if (f->help)
            rc |= buf_printf(out, "# HELP %s %s\n", f->name, f->help);
        if (f->type)
            rc |= buf_printf(out, "# TYPE %s %s\n", f->name, f->type);
        for (struct sample *s = f->first; s && rc == 0; s = s->next) {
            if (isnan(s->v))
                rc |= buf_printf(out, "%s NaN\n", s->key);
            else if (isinf(s->v))
                rc |= buf_printf(out, "%s %sInf\n", s->key, s->v > 0 ? "+" : "-");
            else if (s->v == floor(s->v) && fabs(s->v) < 1e15)
                rc |= buf_printf(out, "%s %.0f\n", s->key, s->v);
            else
                rc |= buf_printf(out, "%s %.9g\n", s->key, s->v);
        }
    }
    return rc ? -ENOMEM : 0;
}

static void pool_free(struct pool *p)
{
    struct sample *s, *st;
    struct family *f, *ft;
    HASH_ITER(hh, p->samples, s, st) {
        HASH_DEL(p->samples, s);
        free(s->key);
        free(s);
    }
    HASH_ITER(hh, p->by_name, f, ft) {
        HASH_DEL(p->by_name, f);
        free(f->name);
        free(f->help);
        free(f->type);
        free(f);
    }
}

/* Reads a snapshot file (bounded). NULL when unreadable or too big. */
static char *read_snapshot(int dfd, const char *name, size_t *len)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    char *b = NULL;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
        (uint64_t)st.st_size <= POOL_MAX_BYTES && (b = malloc((size_t)st.st_size + 1))) {
        ssize_t n = read(fd, b, (size_t)st.st_size);
        if (n < 0) {
            free(b);
            b = NULL;
        } else {
            b[n] = '\0';
            *len = (size_t)n;
        }
    }
    close(fd);
    return b;
}

int watcher__metrics_pool(const char *dir, const char *own, size_t own_len, struct buf *out)
{
    struct pool p = { 0 };
    DIR *d;
    int nfiles = 0, rc;
    time_t now = time(NULL);
    pool_text(&p, own, own_len, 1);
    if (dir && (d = opendir(dir))) {
        struct dirent *e;
        while ((e = readdir(d)) && nfiles < POOL_MAX_FILES && !p.oom) {
            size_t nl = strlen(e->d_name);
            struct stat st;
            if (e->d_name[0] == '.' || nl < 6 || strcmp(e->d_name + nl - 5, ".prom") != 0 ||
                fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            if (now - st.st_mtime > POOL_STALE_S) {
                unlinkat(dirfd(d), e->d_name, 0);   /* its process is gone */
                continue;
            }
            size_t len = 0;
            char *t = read_snapshot(dirfd(d), e->d_name, &len);
            if (t) {
                pool_text(&p, t, len, 0);
                nfiles++;
                free(t);
            }
        }
        closedir(d);
    }
    rc = p.oom ? -ENOMEM : pool_print(&p, out);
    pool_free(&p);
    return rc;
}

/*
 * persist.c - kubesim's --state DIR: a snapshot plus an append-only journal.
 *
 *   DIR/snapshot   every object at the time of the last compaction
 *   DIR/journal    one line per committed change since then
 *
 * Both hold newline-terminated JSON records:
 *   {"rv":N,"op":"rv"}                                          counter (snapshot head)
 *   {"rv":N,"op":"put","g":"ray.io","p":"rayclusters","obj":{...}}
 *   {"rv":N,"op":"del","g":"","p":"pods","ns":"default","name":"x"}
 * A journal line is written with one write(2) per commit and no fsync, so a
 * kill -9 of the process loses nothing the kernel has accepted; a torn last line
 * (machine crash) is ignored. Compaction (at open and close) writes the snapshot
 * to a temporary file, fsyncs and renames it, then truncates the journal.
 * Replay is bounded and total: any byte sequence is either loaded or rejected
 * with a message naming the line.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define jget cJSON_GetObjectItemCaseSensitive
#define PERSIST_LINE_MAX (64u << 20)
#define PERSIST_FILE_MAX (8ull << 30)

static int put_record(struct buf *b, const struct store_obj *o)
{
    const struct reg_resource *r = o->res;
    int rc = 0;

    rc |= buf_printf(b, "{\"rv\":%llu,\"op\":\"put\",\"g\":", (unsigned long long)o->rv);
    rc |= buf_append_json_string(b, r->group);
    rc |= buf_puts(b, ",\"p\":");
    rc |= buf_append_json_string(b, r->plural);
    rc |= buf_puts(b, ",\"obj\":");
    rc |= store_obj_text_append(o, b);
    rc |= buf_puts(b, "}\n");
    return rc ? -ENOMEM : 0;
}

int store__persist_put(struct store *s, const struct store_obj *o)
{
    struct buf b = { 0 };
    int rc;

    if (s->journal_fd < 0)
        return 0;
    rc = put_record(&b, o);
    if (!rc)
        rc = util_write_all(s->journal_fd, b.data, b.len);
    if (rc)
        log_error("store: journal write failed", "error", strerror(-rc), NULL);
    buf_free(&b);
    return rc;
}

int store__persist_delete(struct store *s, const struct store_obj *o, uint64_t rv)
{
    struct buf b = { 0 };
    int rc = 0;

    if (s->journal_fd < 0)
        return 0;
    rc |= buf_printf(&b, "{\"rv\":%llu,\"op\":\"del\",\"g\":", (unsigned long long)rv);
    rc |= buf_append_json_string(&b, o->res->group);
    rc |= buf_puts(&b, ",\"p\":");
    rc |= buf_append_json_string(&b, o->res->plural);
    rc |= buf_puts(&b, ",\"ns\":");
    rc |= buf_append_json_string(&b, o->ns);
    rc |= buf_puts(&b, ",\"name\":");
    rc |= buf_append_json_string(&b, o->name);
    rc |= buf_puts(&b, "}\n");
    rc = rc ? -ENOMEM : util_write_all(s->journal_fd, b.data, b.len);
    if (rc)
        log_error("store: journal write failed", "error", strerror(-rc), NULL);
    buf_free(&b);
    return rc;
}

/* The served resource objects of (group, plural) are kept under. */
static const struct reg_resource *find_res(struct store *s, const char *g, const char *p)
{
    for (size_t i = 0, n = registry_count(s->reg); i < n; i++) {
        const struct reg_resource *r = registry_at(s->reg, i);
        if ((r->builtin || r->storage) && !strcmp(r->group, g) && !strcmp(r->plural, p))
            return r;
    }
    return NULL;
}

static bool is_crd_res(const struct reg_resource *r)
{
    return r->builtin && !strcmp(r->group, "apiextensions.k8s.io") &&
           !strcmp(r->plural, "customresourcedefinitions");
}

static int replay_put(struct store *s, const struct reg_resource *res, const cJSON *jobj,
                      const char **why)
{
    struct store_obj *o;
    struct stype *t;
    struct sentry *old, *dup;
    cJSON *copy;

    if (!cJSON_IsObject(jobj) || !kobj_meta_str(jobj, "name") ||
        !kobj_meta_str(jobj, "uid") || !kobj_meta_str(jobj, "resourceVersion")) {
        *why = "object without metadata.name, uid or resourceVersion";
        return -EINVAL;
    }
    if (res->namespaced != (kobj_meta_str(jobj, "namespace") != NULL)) {
        *why = "namespace does not match the type's scope";
        return -EINVAL;
    }
    copy = cJSON_Duplicate(jobj, true);
    o = copy ? store__obj_new(res, copy) : NULL;
    if (!o)
        return -ENOMEM;
    t = store__type_get(s, res, true);
    if (!t) {
        store_obj_unref(o);
        return -ENOMEM;
    }
    old = store__entry_find(t, o->ns, o->name);
    HASH_FIND(hu, s->by_uid, o->uid, strlen(o->uid), dup);
    if (dup && dup != old) {
        store_obj_unref(o);
        *why = "duplicate uid";
        return -EINVAL;
    }
    if (old && strcmp(old->obj->uid, o->uid)) {
        /* recreated under the same name: a new object */
        store__commit_delete(s, old);
        old = NULL;
    }
    if (store__commit_put(s, t, old, o, NULL))
        return -ENOMEM;
    if (is_crd_res(res))
        store__crd_changed(s, jobj, false);
    return 0;
}

static int replay_line(struct store *s, const char *line, size_t n, const char **why)
{
    cJSON *j = cJSON_ParseWithLength(line, n);
    const cJSON *jrv = jget(j, "rv");
    const char *op = cJSON_GetStringValue(jget(j, "op"));
    const char *g = cJSON_GetStringValue(jget(j, "g"));
    const char *p = cJSON_GetStringValue(jget(j, "p"));
    const struct reg_resource *res;
    int rc = -EINVAL;
    double rvd;

    *why = "malformed record";
    if (!j || !cJSON_IsNumber(jrv) || !op)
        goto out;
    rvd = cJSON_GetNumberValue(jrv);
    if (!(rvd >= 0 && rvd < 9007199254740992.0)) {
        *why = "resourceVersion out of range";
        goto out;
    }
    if ((uint64_t)rvd > s->rv)
        s->rv = (uint64_t)rvd;
    if (!strcmp(op, "rv")) {
        rc = 0;
        goto out;
    }
    if (!g || !p) {
        *why = "record without type";
        goto out;
    }
    res = find_res(s, g, p);
    if (!res) {
        *why = "object of a type that is not served";
        goto out;
    }
    if (!strcmp(op, "put")) {
        rc = replay_put(s, res, jget(j, "obj"), why);
    } else if (!strcmp(op, "del")) {
        const char *ns = cJSON_GetStringValue(jget(j, "ns"));
        const char *name = cJSON_GetStringValue(jget(j, "name"));
        struct sentry *e;
        if (!ns || !name) {
            *why = "delete record without ns or name";
            goto out;
        }
        e = store__entry_find(store__type_get(s, res, false), ns, name);
        if (e) {
            cJSON *crd = is_crd_res(res) ? cJSON_Duplicate(store_obj_json(e->obj), true) : NULL;
            store__commit_delete(s, e);
            if (crd)
                store__crd_changed(s, crd, true);
            cJSON_Delete(crd);
        }
        rc = 0;
    } else {
        *why = "unknown operation";
    }
out:
    cJSON_Delete(j);
    return rc;
}

int store__persist_replay_buf(struct store *s, const char *data, size_t len, char *err, size_t errlen)
{
    size_t off = 0, lineno = 0;
    int rc = 0;

    pthread_rwlock_wrlock(&s->lock);
    s->replaying = true;
    while (off < len) {
        const char *nl = memchr(data + off, '\n', len - off);
        const char *why = NULL;
        size_t n;
        lineno++;
        if (!nl) {
            /* a torn final write: everything before it is intact */
            log_warn("store: ignoring incomplete last journal line", NULL);
            break;
        }
        n = (size_t)(nl - (data + off));
        if (n > PERSIST_LINE_MAX) {
            snprintf(err, errlen, "line %zu: record too long", lineno);
            rc = -EINVAL;
            break;
        }
        if (n) {
            rc = replay_line(s, data + off, n, &why);
            if (rc) {
                snprintf(err, errlen, "line %zu: %s", lineno,
                         rc == -ENOMEM ? "out of memory" : why);
                break;
            }
        }
        off += n + 1;
    }
    s->replaying = false;
    /* work a crash interrupted: dangling owners, deletions in progress */
    for (struct stype *t = s->types; t; t = t->hh.next) {
        struct sentry *e, *tmp;
        HASH_ITER(hh, t->objs, e, tmp) {
            const cJSON *j = store_obj_json(e->obj);
            if (e->n_owners)
                store__gc_enqueue(s, GC_DEPENDENT, e->obj->uid);
            if (kobj_meta_str(j, "deletionTimestamp")) {
                store__gc_enqueue(s, GC_OWNER, e->obj->uid);
                if (t->res && !t->res->group[0] && !strcmp(t->res->plural, "namespaces"))
                    store__gc_enqueue(s, GC_NAMESPACE, e->obj->name);
            }
        }
    }
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

static int replay_file(struct store *s, const char *path, char *err, size_t errlen)
{
    char ferr[200] = "";
    struct stat sb;
    char *data = NULL;
    size_t got = 0;
    int fd, rc = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if (fstat(fd, &sb) || (uint64_t)sb.st_size > PERSIST_FILE_MAX) {
        close(fd);
        snprintf(err, errlen, "%s: unreadable or too large", path);
        return -EFBIG;
    }
    data = malloc((size_t)sb.st_size + 1);
    if (!data) {
        close(fd);
        return -ENOMEM;
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, data + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    rc = store__persist_replay_buf(s, data, got, ferr, sizeof(ferr));
    if (rc)
        snprintf(err, errlen, "%s: %s", path, ferr);
    free(data);
    return rc;
}

/* Writes the whole store as DIR/snapshot and empties the journal. */
static int compact(struct store *s)
{
    char tmp[4096], snap[4096], jpath[4096];
    struct buf b = { 0 };
    int fd, rc = 0;

    snprintf(tmp, sizeof(tmp), "%s/snapshot.tmp", s->state_dir);
    snprintf(snap, sizeof(snap), "%s/snapshot", s->state_dir);
    snprintf(jpath, sizeof(jpath), "%s/journal", s->state_dir);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    pthread_rwlock_rdlock(&s->lock);
    rc = buf_printf(&b, "{\"rv\":%llu,\"op\":\"rv\"}\n", (unsigned long long)s->rv);
    /* CRDs first so their types exist when their objects are read back */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (struct stype *t = s->types; t && !rc; t = t->hh.next) {
            struct sentry *e, *et;
            if (!t->res || is_crd_res(t->res) != (pass == 0))
                continue;
            HASH_ITER(hh, t->objs, e, et) {
                rc = put_record(&b, e->obj);
                if (rc)
                    break;
                if (b.len > (1u << 20)) {
                    rc = util_write_all(fd, b.data, b.len);
                    buf_reset(&b);
                    if (rc)
                        break;
                }
            }
        }
    }
    pthread_rwlock_unlock(&s->lock);
    if (!rc)
        rc = util_write_all(fd, b.data ? b.data : "", b.len);
    buf_free(&b);
    if (!rc && fsync(fd))
        rc = -errno;
    close(fd);
    if (!rc && rename(tmp, snap))
        rc = -errno;
    if (rc) {
        unlink(tmp);
        return rc;
    }
    if (s->journal_fd >= 0)
        close(s->journal_fd);
    s->journal_fd = open(jpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (s->journal_fd < 0)
        return -errno;
    {
        int dfd = open(s->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return 0;
}

int store__persist_open(struct store *s, char *err, size_t errlen)
{
    char path[4096];
    int rc;

    if (mkdir(s->state_dir, 0700) && errno != EEXIST) {
        rc = -errno;
        snprintf(err, errlen, "cannot create state directory %s: %s", s->state_dir,
                 strerror(errno));
        return rc;
    }
    snprintf(path, sizeof(path), "%s/snapshot", s->state_dir);
    rc = replay_file(s, path, err, errlen);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "%s/journal", s->state_dir);
    rc = replay_file(s, path, err, errlen);
    if (rc)
        return rc;
    rc = compact(s);
    if (rc)
        snprintf(err, errlen, "cannot write state to %s: %s", s->state_dir, strerror(-rc));
    return rc;
}

void store__persist_close(struct store *s)
{
    int rc;

    if (!s->state_dir || s->journal_fd < 0)
        return;
    rc = compact(s);
    if (rc)
        log_error("store: final compaction failed; the journal is kept", "error",
                  strerror(-rc), NULL);
    if (s->journal_fd >= 0)
        close(s->journal_fd);
    s->journal_fd = -1;
}

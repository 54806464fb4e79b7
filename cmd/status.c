/*
 * status.c - `rayop status`: what the operator instance of --state-dir is
 * doing, from the outside. Maps the cache segment read-only (objects, rv and
 * synced flag per type, capacity use, refused writes) and asks the queue
 * server for STATUS (depth / in flight / retrying per kind, workers with
 * pids) and, when `rayop up` supervises the instance, its <state-dir>/up.json
 * (processes, pids, restarts). Prints a table a person reads at a glance, or
 * JSON with -o json.
 * Either source may be missing (watcher down, segment gone): what is there is
 * shown, and the exit code is 1 unless both answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "cmd/cmd.h"
#include "util/util.h"
#include "watcher/opts.h"

struct snapshot {
    int cache_rc;
    struct cache_info ci;
    struct cache_type_info types[CACHE_MAX_TYPES];
    uint32_t ntypes;
    int ipc_rc;
    struct ipc_status st;
    cJSON *up;                   /* up.json when present and well-formed */
};

#define UP_JSON_MAX (64 * 1024)

/* Reads <state-dir>/up.json written by `rayop up` (bounded, validated shape). */
static void take_up(const char *state_dir, struct snapshot *sn)
{
    char path[PATH_MAX], *data = NULL;
    if ((size_t)snprintf(path, sizeof(path), "%s/up.json", state_dir) >= sizeof(path))
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    data = malloc(UP_JSON_MAX + 1);
    ssize_t n = data ? read(fd, data, UP_JSON_MAX + 1) : -1;
    close(fd);
    if (n > 0 && n <= UP_JSON_MAX) {
        data[n] = '\0';
        cJSON *j = cJSON_ParseWithLength(data, (size_t)n);
        if (cJSON_IsObject(j) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "procs")))
            sn->up = j;
        else
            cJSON_Delete(j);
    }
    free(data);
}

static double num_field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str_field(const cJSON *o, const char *k)
{
    const char *v = kobj_str(o, k);
    return v ? v : "?";
}

static int pid_alive(double pid)
{
    return pid > 0 && pid < 4194304 && kill((pid_t)pid, 0) == 0;
}

static void take_cache(const char *state_dir, struct snapshot *sn)
{
    char name[CACHE_SEGNAME_MAX];
    struct cache *c = NULL;
    if ((sn->cache_rc = cache_segment_name(state_dir, name, sizeof(name))) < 0)
        return;
    if ((sn->cache_rc = cache_reader_open(name, &c)) < 0)
        return;
    if ((sn->cache_rc = cache_info(c, &sn->ci)) == 0) {
        for (uint32_t i = 0; i < sn->ci.ntypes && i < CACHE_MAX_TYPES; i++)
            if (cache_type_info(c, (int)i, &sn->types[sn->ntypes]) == 0)
                sn->ntypes++;
    }
    cache_close(c);
}

static void take_queues(const char *state_dir, struct snapshot *sn)
{
    char path[PATH_MAX];
    struct ipc_client *c = NULL;
    if ((size_t)snprintf(path, sizeof(path), "%s/queues.sock", state_dir) >= sizeof(path)) {
        sn->ipc_rc = -ENAMETOOLONG;
        return;
    }
    if (access(path, F_OK) < 0) {
        sn->ipc_rc = -errno; /* no socket: no watcher ever ran here, or it exited cleanly */
        return;
    }
    struct ipc_client_config cc = { .path = path, .worker = "rayop-status",
                                    .connect_timeout_ms = 1000 };
    if ((sn->ipc_rc = ipc_client_open(&cc, &c)) < 0)
        return;
    sn->ipc_rc = ipc_client_status(c, 2000, &sn->st);
    ipc_client_close(c);
}

static const char *pct(char *out, size_t cap, uint64_t a, uint64_t b)
{
    snprintf(out, cap, "%.1f%%", b ? 100.0 * (double)a / (double)b : 0.0);
    return out;
}

/* The oldest key a kind's workers hold, in ms (0 when none). */
static uint64_t oldest_in_flight(const struct ipc_status_queue *q)
{
    uint64_t m = 0;
    for (uint32_t j = 0; j < q->n_workers; j++)
        if (q->workers[j].oldest_ms > m)
            m = q->workers[j].oldest_ms;
    return m;
}

/* The oldest ready key's wait in ms, or "-" from a watcher that does not report it. */
static const char *wait_ms(char *out, size_t cap, const struct ipc_status_queue *q)
{
    if (!q || !q->oldest_wait_known)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%llu", (unsigned long long)q->oldest_wait_ms);
    return out;
}

static const struct ipc_status_queue *queue_of(const struct snapshot *sn, const char *kind)
{
    for (uint32_t i = 0; sn->ipc_rc == 0 && i < sn->st.n_queues; i++)
        if (strcmp(sn->st.queues[i].kind, kind) == 0)
            return &sn->st.queues[i];
    return NULL;
}

static void print_up(const struct snapshot *sn)
{
    if (!sn->up)
        return;
    double upid = num_field(sn->up, "pid");
    int up_alive = pid_alive(upid);
    printf("\nsupervisor rayop up pid %.0f: %s\n\n", upid,
           up_alive ? "running" : "not running (the table is its last record)");
    printf("%-12s %-5s %8s %9s %8s %6s %8s %10s  %s\n", "PROCESS", "ALIVE", "PID", "RESTARTS",
           "LASTEXIT", "DEPTH", "WAIT_MS", "OLDEST_MS", "LAST ERROR");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(sn->up, "procs")) {
        double pid = num_field(p, "pid");
        char ps[24], depth[24] = "-", oldest[24] = "-", wait[24];
        const char *name = str_field(p, "name"), *err = kobj_str(p, "lastError");
        int alive = up_alive && pid_alive(pid);
        snprintf(ps, sizeof(ps), pid > 0 ? "%.0f" : "-", pid);
        const struct ipc_status_queue *q = queue_of(sn, name);
        if (q) {
            snprintf(depth, sizeof(depth), "%llu", (unsigned long long)q->depth);
            snprintf(oldest, sizeof(oldest), "%llu", (unsigned long long)oldest_in_flight(q));
        }
        printf("%-12s %-5s %8s %9.0f %8.0f %6s %8s %10s  %s\n", name, alive ? "yes" : "no", ps,
               num_field(p, "restarts"), num_field(p, "lastExitStatus"), depth,
               wait_ms(wait, sizeof(wait), q), oldest, err && *err ? err : "-");
    }
}

static void print_table(const struct snapshot *sn, const char *state_dir)
{
    char p1[16], p2[16];
    int watcher_alive = sn->cache_rc == 0 && pid_alive(sn->ci.writer_pid);
    printf("state dir  %s\n", state_dir);
    if (sn->cache_rc < 0) {
        printf("cache      none (%s)\n", sn->cache_rc == -ENOENT ? "no segment: the watcher has not "
               "run here, or the instance was stopped cleanly" : strerror(-sn->cache_rc));
    } else {
        const struct cache_info *ci = &sn->ci;
        printf("watcher    %s, pid %d\n", watcher_alive ? "running" : "NOT RUNNING (last writer)",
               ci->writer_pid);
        printf("cache      epoch %llu, generation %llu, layout v%u%s\n",
               (unsigned long long)ci->epoch, (unsigned long long)ci->generation,
               ci->layout_version, watcher_alive ? "" : "; kept for the next start "
               "(`rayop clean` removes it)");
        printf("capacity   objects %llu/%u (%s), bytes %llu/%llu (%s), refused writes %llu%s, "
               "grows %llu\n",
               (unsigned long long)ci->objects, ci->max_objects,
               pct(p1, sizeof(p1), ci->objects, ci->max_objects),
               (unsigned long long)ci->bytes_used, (unsigned long long)ci->blob_bytes,
               pct(p2, sizeof(p2), ci->bytes_used, ci->blob_bytes),
               (unsigned long long)ci->refused_writes, ci->refused_writes ? " (!)" : "",
               (unsigned long long)ci->grows);
        int w = 4;
        for (uint32_t i = 0; i < sn->ntypes; i++)
            if ((int)strlen(sn->types[i].name) > w)
                w = (int)strlen(sn->types[i].name);
        printf("\n%-*s %8s %-7s %s\n", w, "TYPE", "OBJECTS", "SYNCED", "RESOURCEVERSION");
        for (uint32_t i = 0; i < sn->ntypes; i++)
            printf("%-*s %8llu %-7s %s\n", w, sn->types[i].name,
                   (unsigned long long)sn->types[i].objects,
                   !sn->types[i].synced ? "no" : watcher_alive ? "yes" : "stale",
                   sn->types[i].rv[0] ? sn->types[i].rv : "-");
    }
    printf("\n");
    if (sn->ipc_rc < 0) {
        printf("queues     none (%s)\n",
               sn->ipc_rc == -ENOENT || sn->ipc_rc == -ECONNREFUSED
                   ? "no watcher is serving the queue socket" : strerror(-sn->ipc_rc));
        print_up(sn);
        return;
    }
    printf("queues     watcher pid %d\n\n", sn->st.pid);
    printf("%-12s %7s %8s %9s %8s %9s %6s %8s %10s %8s %7s %10s\n", "KIND", "DEPTH", "WAIT_MS",
           "INFLIGHT", "WAITING", "RETRYING", "GATED", "KEYS", "ADDS", "RETRIES", "WORKERS",
           "OLDEST_MS");
    for (uint32_t i = 0; i < sn->st.n_queues; i++) {
        const struct ipc_status_queue *q = &sn->st.queues[i];
        char wait[24];
        printf("%-12s %7llu %8s %9llu %8llu %9llu %6llu %8llu %10llu %8llu %7u %10llu\n", q->kind,
               (unsigned long long)q->depth, wait_ms(wait, sizeof(wait), q),
               (unsigned long long)q->in_flight,
               (unsigned long long)q->waiting, (unsigned long long)q->retrying,
               (unsigned long long)q->gated, (unsigned long long)q->keys,
               (unsigned long long)q->adds_total, (unsigned long long)q->retries_total,
               q->n_workers, (unsigned long long)oldest_in_flight(q));
    }
    int header = 0;
    for (uint32_t i = 0; i < sn->st.n_queues; i++) {
        const struct ipc_status_queue *q = &sn->st.queues[i];
        for (uint32_t j = 0; j < q->n_workers; j++) {
            const struct ipc_status_worker *wk = &q->workers[j];
            if (!header++)
                printf("\n%-12s %-24s %8s %8s %9s %10s\n", "KIND", "WORKER", "PID", "CAPACITY",
                       "INFLIGHT", "OLDEST_MS");
            printf("%-12s %-24s %8d %8u %9u %10llu\n", q->kind, wk->worker, wk->pid,
                   wk->capacity, wk->in_flight, (unsigned long long)wk->oldest_ms);
        }
    }
    print_up(sn);
}

static void json_u(struct buf *b, const char *k, uint64_t v, int comma)
{
    buf_printf(b, "\"%s\":%llu%s", k, (unsigned long long)v, comma ? "," : "");
}

/* ,"NAME": then {"error":"..."} when the part could not be read (rc < 0): true when it
 * was, and its object follows. */
static bool json_part(struct buf *b, const char *name, int rc)
{
    buf_printf(b, ",\"%s\":", name);
    if (rc >= 0)
        return true;
    buf_puts(b, "{\"error\":");
    buf_append_json_string(b, strerror(-rc));
    buf_puts(b, "}");
    return false;
}

static int print_json(const struct snapshot *sn, const char *state_dir)
{
    struct buf b = { 0 };
    buf_puts(&b, "{\"stateDir\":");
    buf_append_json_string(&b, state_dir);
    if (json_part(&b, "cache", sn->cache_rc)) {
        const struct cache_info *ci = &sn->ci;
        buf_printf(&b, "{\"writerPid\":%d,\"writerAlive\":%s,", ci->writer_pid,
                   pid_alive(ci->writer_pid) ? "true" : "false");
        json_u(&b, "layoutVersion", ci->layout_version, 1);
        json_u(&b, "epoch", ci->epoch, 1);
        json_u(&b, "generation", ci->generation, 1);
        json_u(&b, "bytesTotal", ci->bytes_total, 1);
        json_u(&b, "blobBytes", ci->blob_bytes, 1);
        json_u(&b, "bytesUsed", ci->bytes_used, 1);
        json_u(&b, "maxObjects", ci->max_objects, 1);
        json_u(&b, "objects", ci->objects, 1);
        json_u(&b, "refusedWrites", ci->refused_writes, 1);
        json_u(&b, "compactions", ci->compactions, 1);
        json_u(&b, "grows", ci->grows, 1);
        buf_puts(&b, "\"types\":[");
        for (uint32_t i = 0; i < sn->ntypes; i++) {
            buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
            buf_append_json_string(&b, sn->types[i].name);
            buf_puts(&b, ",\"resourceVersion\":");
            buf_append_json_string(&b, sn->types[i].rv);
            buf_printf(&b, ",\"synced\":%s,\"objects\":%llu}", sn->types[i].synced ? "true" : "false",
                       (unsigned long long)sn->types[i].objects);
        }
        buf_puts(&b, "]}");
    }
    if (json_part(&b, "queues", sn->ipc_rc)) {
        buf_printf(&b, "{\"watcherPid\":%d,\"kinds\":[", sn->st.pid);
        for (uint32_t i = 0; i < sn->st.n_queues; i++) {
            const struct ipc_status_queue *q = &sn->st.queues[i];
            buf_puts(&b, i ? ",{\"kind\":" : "{\"kind\":");
            buf_append_json_string(&b, q->kind);
            buf_puts(&b, ",");
            json_u(&b, "depth", q->depth, 1);
            json_u(&b, "inFlight", q->in_flight, 1);
            json_u(&b, "waiting", q->waiting, 1);
            json_u(&b, "retrying", q->retrying, 1);
            json_u(&b, "gated", q->gated, 1);
            json_u(&b, "keys", q->keys, 1);
            json_u(&b, "addsTotal", q->adds_total, 1);
            json_u(&b, "retriesTotal", q->retries_total, 1);
            json_u(&b, "rywTimeoutsTotal", q->ryw_timeouts_total, 1);
            json_u(&b, "overdue", q->overdue, 1);
            if (q->oldest_wait_known)
                json_u(&b, "oldestWaitMs", q->oldest_wait_ms, 1);
            buf_puts(&b, "\"workers\":[");
            for (uint32_t j = 0; j < q->n_workers; j++) {
                const struct ipc_status_worker *wk = &q->workers[j];
                buf_printf(&b, "%s{\"pid\":%d,\"worker\":", j ? "," : "", wk->pid);
                buf_append_json_string(&b, wk->worker);
                buf_printf(&b, ",\"capacity\":%u,\"inFlight\":%u,\"oldestMs\":%llu}",
                           wk->capacity, wk->in_flight, (unsigned long long)wk->oldest_ms);
            }
            buf_puts(&b, "]}");
        }
        buf_puts(&b, "]}");
    }
    if (sn->up) {
        /* re-serialised from the parsed tree: never echoes raw file bytes */
        char *u = cJSON_PrintUnformatted(sn->up);
        if (u) {
            buf_puts(&b, ",\"supervisor\":");
            buf_puts(&b, u);
            free(u);
        }
    }
    int rc = buf_puts(&b, "}\n");
    if (rc == 0)
        fwrite(b.data, 1, b.len, stdout);
    buf_free(&b);
    return rc;
}

int status_main(int argc, char **argv)
{
    struct wopts o;
    struct snapshot sn;
    int rc = wopts_parse(&o, argc, argv, WOPTS_STATUS);
    if (rc == 1) {
        puts("usage: rayop status [--state-dir DIR] [-o json|table]");
        return 0;
    }
    if (rc < 0)
        return 2;
    log_set_component("status");
    memset(&sn, 0, sizeof(sn));
    take_cache(o.state_dir, &sn);
    take_queues(o.state_dir, &sn);
    take_up(o.state_dir, &sn);
    if (sn.cache_rc == -ENOENT && (sn.ipc_rc == -ENOENT || sn.ipc_rc == -ECONNREFUSED) && !sn.up) {
        /* nothing here at all: say so, not "No such file or directory" twice */
        if (o.json) {
            struct buf b = { 0 };
            buf_puts(&b, "{\"stateDir\":");
            buf_append_json_string(&b, o.state_dir);
            if (buf_puts(&b, ",\"running\":false,\"error\":\"no rayop instance\"}\n") == 0)
                fwrite(b.data, 1, b.len, stdout);
            buf_free(&b);
        } else
            fprintf(stderr, "rayop status: no rayop instance in %s (no cache segment, no queue "
                    "socket, no up.json); start one with `rayop up --state-dir %s`, or pass the "
                    "--state-dir it runs with\n", o.state_dir, o.state_dir);
        wopts_free(&o);
        return 3;
    }
    if (o.json)
        rc = print_json(&sn, o.state_dir);
    else
        print_table(&sn, o.state_dir);
    if (sn.ipc_rc == 0)
        ipc_status_free(&sn.st);
    cJSON_Delete(sn.up);
    wopts_free(&o);
    return rc < 0 || sn.cache_rc < 0 || sn.ipc_rc < 0 ? 1 : 0;
}

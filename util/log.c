/*
 * log.c - structured logs: one JSON object per line, written with one write(2)
 * so concurrent writers (threads, or the processes `rayop up` merges) never
 * interleave inside a line. KubeRay's `--log-stdout-encoder console` selects
 * zap's console layout instead (tab-separated time, LEVEL, logger, message,
 * then the fields as one JSON object) for people reading a terminal; JSON stays
 * the default because tools parse it.
 *
 * Under `rayop up` a process writes into a pipe that up reads. If up dies
 * (kill -9) its children still log while they stop (SIGTERM on the parent's
 * death): those lines would meet EPIPE and be lost, and they are the ones that
 * explain what a crash of the whole instance did. So a write that gets EPIPE
 * moves stderr and stdout, once, to the file up named in RAYOP_LOG_ORPHANED
 * (appended, 0600) and writes the line again there.
 */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int log_level = LOG_INFO;
static const char *log_component = NULL;
static int log_encoder = LOG_ENCODER_JSON;
static const char *const level_names[] = { "debug", "info", "warn", "error" };
static const char *const level_upper[] = { "DEBUG", "INFO", "WARN", "ERROR" };

void log_set_level(int level) { log_level = level; }
void log_set_component(const char *component) { log_component = component; }
int log_enabled(int level) { return level >= log_level; }
void log_set_encoder(int encoder) { log_encoder = encoder; }

/* The reader of our pipe is gone: 0 once stderr is RAYOP_LOG_ORPHANED's file
 * (by this thread or another), -1 if there is none to go to. */
static int log_reopen_orphaned(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int done;
    int rc = 0;

    pthread_mutex_lock(&mu);
    if (!done) {
        const char *path = getenv("RAYOP_LOG_ORPHANED");
        int fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
        if (fd >= 0) {
            dup2(fd, STDERR_FILENO);
            dup2(fd, STDOUT_FILENO);
            close(fd);
        }
        done = fd >= 0 ? 1 : -1;
    }
    rc = done > 0 ? 0 : -1;
    pthread_mutex_unlock(&mu);
    return rc;
}

int log_parse_encoder(const char *name)
{
    if (strcmp(name, "json") == 0)
        return LOG_ENCODER_JSON;
    if (strcmp(name, "console") == 0)
        return LOG_ENCODER_CONSOLE;
    return -1;
}

/* zap's console layout for the first four columns: ts \t LEVEL \t logger \t
 * msg, then the fields as key=value pairs a person reads (zap would print one
 * JSON object; whoever wants machine-readable lines keeps the json encoder). A
 * value that is empty or holds a space, quote, '=' or control character is
 * quoted as a JSON string. The message is written raw except that tabs and
 * newlines become spaces, so one entry stays one line. */
static void kv_value(struct buf *b, const char *v)
{
    bool quote = !*v;
    for (const char *p = v; *p && !quote; p++)
        quote = *p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20 || *p == 0x7f;
    if (quote)
        buf_append_json_string(b, v);
    else
        buf_puts(b, v);
}

static int format_console(struct buf *b, const char *tbuf, int li, const char *msg, va_list ap)
{
    const char *k, *v;
    int nfields = 0;

    if (buf_printf(b, "%s\t%s\t", tbuf, level_upper[li]) < 0)
        return -ENOMEM;
    if (log_component)
        buf_printf(b, "%s\t", log_component);
    for (const char *p = msg ? msg : ""; *p; p++)
        buf_append(b, (*p == '\t' || *p == '\n' || *p == '\r') ? " " : p, 1);
    while ((k = va_arg(ap, const char *)) != NULL) {
        v = va_arg(ap, const char *);
        if (!v)
            continue;
        buf_puts(b, nfields++ ? " " : "\t");
        buf_puts(b, k);
        buf_puts(b, "=");
        kv_value(b, v);
    }
    return buf_puts(b, "\n") < 0 ? -ENOMEM : 0;
}

int log_parse_level(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    if (strcmp(name, "warning") == 0)
        return LOG_WARN;
    return -1;
}

static void log_vwrite(int level, const char *msg, va_list ap)
{
    char stackbuf[1024];
    struct buf b = { 0 };
    struct timespec ts;
    char tbuf[40];
    const char *k, *v;
    ssize_t off = 0;
    bool moved = false;

    if (level < log_level)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    util_format_microtime(&ts, tbuf);
    if (log_encoder == LOG_ENCODER_CONSOLE) {
        if (format_console(&b, tbuf, level < 0 ? 0 : level > 3 ? 3 : level, msg, ap) < 0)
            goto oom;
        goto emit;
    }
    /* Build on the heap; on allocation failure fall back to a fixed line. */
    if (buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\"", tbuf,
                   level_names[level < 0 ? 0 : level > 3 ? 3 : level]) < 0)
        goto oom;
    if (log_component) {
        buf_puts(&b, ",\"component\":");
        buf_append_json_string(&b, log_component);
    }
    buf_puts(&b, ",\"msg\":");
    buf_append_json_string(&b, msg ? msg : "");
    while ((k = va_arg(ap, const char *)) != NULL) {
        v = va_arg(ap, const char *);
        if (!v)
            continue;
        buf_puts(&b, ",");
        buf_append_json_string(&b, k);
        buf_puts(&b, ":");
        buf_append_json_string(&b, v);
    }
    if (buf_puts(&b, "}\n") < 0)
        goto oom;
emit:
    while ((size_t)off < b.len) {
        ssize_t n = write(STDERR_FILENO, b.data + off, b.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        /* a line up to PIPE_BUF goes into a pipe whole or not at all: resend all of it */
        if (n < 0 && errno == EPIPE && !moved && log_reopen_orphaned() == 0) {
            moved = true;
            off = 0;
            continue;
        }
        if (n <= 0)
            break;
        off += n;
    }
    buf_free(&b);
    return;
oom:
    buf_free(&b);
    snprintf(stackbuf, sizeof(stackbuf), "{\"level\":\"error\",\"msg\":\"log: out of memory\"}\n");
    if (write(STDERR_FILENO, stackbuf, strlen(stackbuf)) < 0) { /* nothing left to do */ }
}

void log_write(int level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_vwrite(level, msg, ap);
    va_end(ap);
}

/*
 * util.h - the few helpers every rayop module shares: structured logging (one
 * JSON object per line on stderr), a growable byte buffer, whole writes and
 * error text, and clocks.
 *
 * Kept deliberately small: anything specific to one module lives in that module.
 */
#ifndef RAYOP_UTIL_H
#define RAYOP_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- logging -------------------------------------------------------------- */

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Process-wide settings; call before threads start. component appears as "component". */
void log_set_level(int level);
int log_parse_level(const char *name); /* "debug".."error" -> level, -1 if unknown */
void log_set_component(const char *component);
int log_enabled(int level);
/* Line layout: JSON (default) or zap's console encoder (--log-stdout-encoder). */
enum log_encoder { LOG_ENCODER_JSON = 0, LOG_ENCODER_CONSOLE = 1 };
void log_set_encoder(int encoder);
int log_parse_encoder(const char *name); /* "json"|"console" -> encoder, -1 if unknown */

/*
 * log_write(level, msg, key1, val1, key2, val2, ..., NULL)
 * Writes {"ts":..,"level":..,"component":..,"msg":..,"key1":"val1",...} as one line
 * with a single write(2), so lines from several threads or processes never interleave.
 * Values are strings (NULL values are skipped); callers format numbers themselves.
 * Never pass secrets (tokens, keys): logs are not a safe place for them.
 */
void log_write(int level, const char *msg, ...);
#define log_debug(...) do { if (log_enabled(LOG_DEBUG)) log_write(LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...)  log_write(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

/* ---- byte buffer ---------------------------------------------------------- */

/* A growable buffer. Zero-initialise; the buffer owns data; buf_free releases it.
 * data is always NUL-terminated after a successful append (not counted in len). */
struct buf {
    char *data;
    size_t len;
    size_t cap;
};

int buf_reserve(struct buf *b, size_t extra);           /* 0 or -ENOMEM */
int buf_append(struct buf *b, const void *p, size_t n);  /* 0 or -ENOMEM */
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_append_json_string(struct buf *b, const char *s); /* quoted, escaped */
void buf_reset(struct buf *b);                           /* len = 0, keeps memory */
void buf_free(struct buf *b);
char *buf_steal(struct buf *b);                          /* caller owns result */
/* A bounded receive buffer for libcurl's CURLOPT_WRITEFUNCTION (buf_sink_write,
 * CURLOPT_WRITEDATA = the sink; buf_sink_easy sets both): more than max bytes sets
 * too_big and aborts. */
struct buf_sink {
    struct buf b;
    size_t max;
    int too_big;
};
size_t buf_sink_write(char *p, size_t size, size_t n, void *sink);
/* A libcurl easy handle for one request to url, limited to protocols ("http",
 * "https", "http,https"), with no signals (every caller is threaded) and its body
 * going to sink. NULL when libcurl cannot make one; the caller owns the handle
 * (curl_easy_cleanup). libcurl's CURL is void, so this header needs no curl.h. */
void *buf_sink_easy(const char *url, const char *protocols, struct buf_sink *sink);

/* Makes room for element n of a growable array: when n == *cap, doubles *cap
 * (to first when it is 0) and reallocates the array. items is the address of the
 * array's pointer (e.g. &v->items), elem its element size. 0, or -ENOMEM with the
 * array and *cap left as they were. */
int util_array_grow(void *items, size_t elem, size_t n, size_t *cap, size_t first);

/* ---- threads (thread.c) ------------------------------------------------------ */

/* Runs fn(arg) on a new detached thread (nobody joins it). 0 or -errno of
 * pthread_create (-EAGAIN: no thread could be made; fn never runs). */
int util_thread_detached(void *(*fn)(void *), void *arg);

/* ---- I/O and error text (io.c) ---------------------------------------------- */

/* Writes all n bytes (retrying short writes and EINTR): 0, -errno, or -EIO when
 * write(2) makes no progress. */
int util_write_all(int fd, const void *p, size_t n);
/* Reads the whole file at path, at most max bytes, into *out (NUL-terminated, owned by
 * the caller: free) and its length into *len. 0, -errno of open/read, -E2BIG when the
 * file is larger than max, -ENOMEM. */
int util_read_file(const char *path, size_t max, char **out, size_t *len);
/* The (err, errlen) convention of parsers: formats a message into err; nothing
 * when err is NULL or errlen is 0. */
void util_format_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- command-line flags (flag.c) --------------------------------------------- */

/* Splits one argument "--name[=value]" of command cmd ("rayop up"): name
 * (NUL-terminated, cap bytes) and *value (the text after '=', NULL without one; points
 * into arg). 1 for "--help"/"-h", 0, or -EINVAL with "cmd: unexpected argument" (not a
 * flag) or "cmd: unknown flag" (a name too long for cap) said on stderr. */
int util_flag_split(const char *cmd, const char *arg, char *name, size_t cap,
                    const char **value);

/* ---- the allocator (heap.c) ------------------------------------------------ */

/* Release builds run on jemalloc, sanitizer builds on the sanitizer's allocator:
 * these give one view of either. Figures in bytes; 0 where the allocator has none. */
struct util_heap {
    size_t in_use;        /* handed out to the program and not freed */
    size_t free;          /* held by the allocator, not handed out */
    size_t mapped;        /* mapped from the kernel */
    size_t resident;      /* of it resident (jemalloc only) */
};
const char *util_heap_name(void);           /* "jemalloc", "glibc" or "sanitizer" */
int util_heap_stats(struct util_heap *out); /* 0 or a negative errno */
/* Bytes the allocator keeps beside each block, on top of malloc_usable_size(). */
size_t util_heap_chunk_header(void);
/* Gives free pages back to the kernel (jemalloc: those its decay has aged out). */
void util_heap_release(void);

/* ---- time ----------------------------------------------------------------- */

uint64_t util_now_ns(void);      /* CLOCK_MONOTONIC */
uint64_t util_now_ms(void);
/* Formats t as RFC 3339 UTC "2006-01-02T15:04:05Z" into out (>= 21 bytes). */
void util_format_time(time_t t, char out[32]);
/* Same with microseconds, "2006-01-02T15:04:05.000000Z" (MicroTime). */
void util_format_microtime(const struct timespec *ts, char out[40]);
/* *ts = CLOCK_REALTIME now + ms: the absolute deadline pthread_cond_timedwait takes. */
void util_deadline_ms(struct timespec *ts, long ms);
/* Parses RFC 3339 (Z or numeric offset, optional fraction). 0 or -EINVAL. */
int util_parse_time(const char *s, time_t *out);

/* Exit codes of every rayop command. A usage error (unknown flag, bad flag
 * value) and a configuration error (no kubeconfig, unknown feature gate, bad
 * --config file) are ones a restart cannot fix: `rayop up` stops on either
 * instead of restarting the process (sysexits.h's EX_USAGE is 64; 2 is what
 * Go's flag package, and so KubeRay, exits with on a bad flag). */
#define UTIL_EXIT_USAGE  2
#define UTIL_EXIT_CONFIG 78   /* EX_CONFIG */

#endif

/*
 * ztext.c - stored text kept compressed with zstd against a dictionary per type.
 *
 * At 10,000 RayClusters the objects' text was 570 MiB of kubesim's ~1 GiB in use
 * (Pods about 10 KB each, Events 1.2 KB), and objects of one type are nearly the same
 * bytes: the same keys, managedFields, images, labels, with a few names, uids and
 * times apart. zstd alone gets a Pod to about 2.8 KB; with a few earlier objects of
 * the same type as a raw-content dictionary, to about 0.5 KB (an Event to 0.24 KB).
 *
 * The dictionary of a type is made once, from the text of the first objects it holds
 * (store__zdict_build, under the store's write lock), and never changes: every
 * snapshot compressed with it holds a reference, so it lives as long as the last of
 * them. A type whose first objects differ from the later ones compresses less, never
 * wrongly: the frame is exact whatever the dictionary. Compressing and decompressing
 * use one zstd context per thread.
 *
 * A thread often wants the same snapshot's text twice in a row: a watch with a label
 * selector reads its labels, then sends the object; a write's reply is the text the
 * commit has just compressed. Each thread remembers the frame behind its last text
 * (and the one it last compressed) and gives that text again without decompressing:
 * the same frame bytes under the same dictionary are the same text, and the memo holds
 * a reference to the dictionary, so its address is never another's.
 */
#include "kubesim/store/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* zstd's fastest level: the write path compresses every Pod status update */
#define ZTEXT_LEVEL 1
/* the dictionary: the text of up to this many objects, at most this many bytes */
#define ZDICT_OBJECTS 8
#define ZDICT_MAX_BYTES (64u << 10)

struct store_zdict {
    _Atomic int refs;
    ZSTD_CDict *cd;
    ZSTD_DDict *dd;
    size_t bytes;               /* both, as zstd reports them */
};

/* A text and the frame it is the content of. */
struct zmemo {
    struct store_zdict *zd;     /* referenced; NULL: nothing remembered */
    struct buf frame;           /* a copy of the frame's bytes */
    struct buf text;            /* its text, NUL-terminated */
};

struct ztls {
    ZSTD_CCtx *cc;
    ZSTD_DCtx *dc;
    struct zmemo last;          /* last.text is store_obj_text's copy, handed out */
    struct zmemo made;          /* the text this thread last compressed */
    struct buf frame;           /* a frame being made: apart, so that compressing never
                                 * overwrites a text store_obj_text handed out */
};

/* Decompressions of stored text, process-wide (a test counts them). */
static _Atomic unsigned long long text_decompressions;

static pthread_key_t ztls_key;
static pthread_once_t ztls_once = PTHREAD_ONCE_INIT;

static void memo_free(struct zmemo *m)
{
    store__zdict_unref(m->zd);
    m->zd = NULL;
    buf_free(&m->frame);
    buf_free(&m->text);
}

static void ztls_free(void *v)
{
    struct ztls *z = v;

    ZSTD_freeCCtx(z->cc);
    ZSTD_freeDCtx(z->dc);
    memo_free(&z->last);
    memo_free(&z->made);
    buf_free(&z->frame);
    free(z);
}

static void ztls_init(void)
{
    pthread_key_create(&ztls_key, ztls_free);
}

static struct ztls *ztls_get(void)
{
    struct ztls *z;

    pthread_once(&ztls_once, ztls_init);
    if ((z = pthread_getspecific(ztls_key)))
        return z;
    if (!(z = calloc(1, sizeof(*z))))
        return NULL;
    if (pthread_setspecific(ztls_key, z)) {
        free(z);
        return NULL;
    }
    return z;
}

struct store_zdict *store__zdict_ref(struct store_zdict *zd)
{
    if (zd)
        atomic_fetch_add_explicit(&zd->refs, 1, memory_order_relaxed);
    return zd;
}

void store__zdict_unref(struct store_zdict *zd)
{
    if (!zd || atomic_fetch_sub_explicit(&zd->refs, 1, memory_order_acq_rel) != 1)
        return;
    ZSTD_freeCDict(zd->cd);
    ZSTD_freeDDict(zd->dd);
    free(zd);
}

size_t store__zdict_bytes(const struct store_zdict *zd)
{
    return zd ? zd->bytes + store_mem_chunk(zd) : 0;
}

/* The dictionary of t from the text of the objects it holds now (all stored plain:
 * nothing is compressed before the type has a dictionary). Lock held (write). */
struct store_zdict *store__zdict_build(const struct stype *t)
{
    struct buf content = { 0 };
    struct store_zdict *zd = NULL;
    const struct sentry *e;
    int n = 0;

    for (e = t->objs; e && n < ZDICT_OBJECTS; e = e->hh.next) {
        const struct store_obj *o = e->obj;
        if (o->zlen || content.len + o->len > ZDICT_MAX_BYTES)
            continue;
        if (buf_append(&content, o->blob, o->len))
            goto out;
        n++;
    }
    if (!content.len || !(zd = calloc(1, sizeof(*zd))))
        goto out;
    /* both copy the content: it is not kept here */
    zd->cd = ZSTD_createCDict(content.data, content.len, ZTEXT_LEVEL);
    zd->dd = ZSTD_createDDict(content.data, content.len);
    if (!zd->cd || !zd->dd) {
        ZSTD_freeCDict(zd->cd);
        ZSTD_freeDDict(zd->dd);
        free(zd);
        zd = NULL;
        goto out;
    }
    zd->bytes = ZSTD_sizeof_CDict(zd->cd) + ZSTD_sizeof_DDict(zd->dd);
    atomic_init(&zd->refs, 1);
out:
    buf_free(&content);
    return zd;
}

/* text[0..len) compressed with zd into a new block with `extra` bytes of room after
 * the frame; *zlen its size. NULL on ENOMEM, or when compressing would not pay. */
/* m forgets what it held; its text buffer is kept for reuse. */
static void memo_forget(struct zmemo *m)
{
    store__zdict_unref(m->zd);
    m->zd = NULL;
}

/* m remembers that frame[0..zlen) under zd is the text already in m->text (when
 * text is NULL) or text[0..len). Best effort: on ENOMEM m holds nothing. */
static void memo_set(struct zmemo *m, struct store_zdict *zd, const char *frame, size_t zlen,
                     const char *text, size_t len)
{
    memo_forget(m);
    buf_reset(&m->frame);
    if (buf_append(&m->frame, frame, zlen))
        return;
    if (text) {
        buf_reset(&m->text);
        if (buf_append(&m->text, text, len))
            return;
    }
    m->zd = store__zdict_ref(zd);
}

static bool memo_holds(const struct zmemo *m, const struct store_obj *o)
{
    return m->zd && m->zd == o->zd && m->frame.len == o->zlen && m->text.len == o->len &&
           !memcmp(m->frame.data, o->blob, o->zlen);
}

/* A huge object's text is not kept per thread. */
#define ZMEMO_MAX_BYTES (1u << 20)

char *store__ztext_compress(struct store_zdict *zd, const char *text, size_t len,
                            size_t extra, size_t *zlen)
{
    struct ztls *z = ztls_get();
    size_t bound = ZSTD_compressBound(len), n;
    char *tmp, *out;

    if (!z || (!z->cc && !(z->cc = ZSTD_createCCtx())))
        return NULL;
    /* the frame goes into the thread's scratch, then into an exact-size block */
    buf_reset(&z->frame);
    if (buf_reserve(&z->frame, bound))
        return NULL;
    tmp = z->frame.data;
    n = ZSTD_compress_usingCDict(z->cc, tmp, bound, text, len, zd->cd);
    if (ZSTD_isError(n) || n >= len || n > UINT32_MAX || !(out = malloc(n + extra)))
        return NULL;
    memcpy(out, tmp, n);
    *zlen = n;
    /* the writer's reply is this text: it is not decompressed again */
    if (len <= ZMEMO_MAX_BYTES)
        memo_set(&z->made, zd, out, n, text, len);
    if (z->frame.cap > (8u << 20))
        buf_free(&z->frame);   /* do not keep a huge object's frame around per thread */
    return out;
}

/* Decompresses o (zlen > 0) into dst, which has room for o->len bytes. 0 or -EIO. */
static int ztext_decompress(const struct store_obj *o, char *dst)
{
    struct ztls *z = ztls_get();
    size_t n;

    if (!z || (!z->dc && !(z->dc = ZSTD_createDCtx())))
        return -ENOMEM;
    atomic_fetch_add_explicit(&text_decompressions, 1, memory_order_relaxed);
    n = ZSTD_decompress_usingDDict(z->dc, dst, o->len, o->blob, o->zlen, o->zd->dd);
    return !ZSTD_isError(n) && n == o->len ? 0 : -EIO;
}

uint64_t store__text_decompressions(void)
{
    return atomic_load_explicit(&text_decompressions, memory_order_relaxed);
}

/* The text this thread remembers for o (compressed), or NULL. */
static const struct buf *memo_find(struct ztls *z, const struct store_obj *o)
{
    if (memo_holds(&z->last, o))
        return &z->last.text;
    if (memo_holds(&z->made, o))
        return &z->made.text;
    return NULL;
}

const char *store_obj_text(const struct store_obj *o)
{
    struct zmemo *m;
    struct ztls *z;

    if (!o->zlen)
        return o->blob;
    if (!(z = ztls_get()))
        return NULL;
    m = &z->last;
    if (memo_holds(m, o))
        return m->text.data;   /* what the last call gave: the same bytes */
    if (memo_holds(&z->made, o)) {
        /* copied: a later compress on this thread rewrites `made` */
        memo_set(m, o->zd, o->blob, o->zlen, z->made.text.data, o->len);
        return m->zd ? m->text.data : NULL;
    }
    memo_forget(m);
    buf_reset(&m->text);
    if (buf_reserve(&m->text, o->len) || ztext_decompress(o, m->text.data))
        return NULL;
    m->text.len = o->len;
    m->text.data[o->len] = 0;
    if (o->len <= ZMEMO_MAX_BYTES)
        memo_set(m, o->zd, o->blob, o->zlen, NULL, 0);
    return m->text.data;
}

int store_obj_text_append(const struct store_obj *o, struct buf *out)
{
    const struct buf *t;
    struct ztls *z;
    int rc;

    if (!o->zlen)
        return buf_append(out, o->blob, o->len);
    if ((z = ztls_get()) && (t = memo_find(z, o)))
        return buf_append(out, t->data, t->len);
    if ((rc = buf_reserve(out, o->len)) || (rc = ztext_decompress(o, out->data + out->len)))
        return rc;
    out->len += o->len;
    out->data[out->len] = 0;
    return 0;
}

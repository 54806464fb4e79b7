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

struct ztls {
    ZSTD_CCtx *cc;
    ZSTD_DCtx *dc;
    struct buf text;            /* store_obj_text's decompressed copy */
    struct buf frame;           /* a frame being made: apart, so that compressing never
                                 * overwrites a text store_obj_text handed out */
};

static pthread_key_t ztls_key;
static pthread_once_t ztls_once = PTHREAD_ONCE_INIT;

static void ztls_free(void *v)
{
    struct ztls *z = v;

    ZSTD_freeCCtx(z->cc);
    ZSTD_freeDCtx(z->dc);
    buf_free(&z->text);
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
char *store__ztext_compress(const struct store_zdict *zd, const char *text, size_t len,
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
    n = ZSTD_decompress_usingDDict(z->dc, dst, o->len, o->blob, o->zlen, o->zd->dd);
    return !ZSTD_isError(n) && n == o->len ? 0 : -EIO;
}

const char *store_obj_text(const struct store_obj *o)
{
    struct ztls *z;

    if (!o->zlen)
        return o->blob;
    if (!(z = ztls_get()))
        return NULL;
    buf_reset(&z->text);
    if (buf_reserve(&z->text, o->len) || ztext_decompress(o, z->text.data))
        return NULL;
    z->text.data[o->len] = 0;
    return z->text.data;
}

int store_obj_text_append(const struct store_obj *o, struct buf *out)
{
    int rc;

    if (!o->zlen)
        return buf_append(out, o->blob, o->len);
    if ((rc = buf_reserve(out, o->len)) || (rc = ztext_decompress(o, out->data + out->len)))
        return rc;
    out->len += o->len;
    out->data[out->len] = 0;
    return 0;
}

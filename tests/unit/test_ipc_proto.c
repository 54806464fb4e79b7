/*
 * test_ipc_proto.c - ipc frames: every message type round-trips; every class
 * of malformed frame is rejected (framing, non-map bodies, truncation,
 * trailing bytes, unknown/duplicate/missing/misplaced fields, wrong types,
 * out-of-range values, oversized strings and counts). Bad frames are built
 * with msgpack-c's packer, an encoder independent of ours.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <msgpack.h>

#include "ipc/proto.h"

/* Encodes m, splits the frame, decodes it into out. */
static void roundtrip(const struct ipc_msg *m, struct ipc_msg *out)
{
    struct buf b = {0};
    assert_int_equal(ipc_proto_encode(m, &b), 0);
    const uint8_t *body;
    size_t blen, used;
    assert_int_equal(ipc_proto_frame(b.data, b.len, &body, &blen, &used), 0);
    assert_int_equal(used, b.len);
    const char *err = NULL;
    assert_int_equal(ipc_proto_decode(body, blen, out, &err), 0);
    assert_int_equal(out->type, m->type);
    buf_free(&b);
}

static void test_roundtrip_all_types(void **state)
{
    (void)state;
    struct ipc_msg *m = calloc(1, sizeof(*m)), *o = calloc(1, sizeof(*o));

    m->type = IPC_MSG_HELLO; m->version = IPC_PROTO_VERSION;
    strcpy(m->kind, "raycluster"); strcpy(m->worker, "w-1"); m->pid = 4242; m->capacity = 8;
    roundtrip(m, o);
    assert_string_equal(o->kind, "raycluster");
    assert_string_equal(o->worker, "w-1");
    assert_int_equal(o->pid, 4242);
    assert_int_equal(o->capacity, 8);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_HELLO; m->version = IPC_PROTO_VERSION; strcpy(m->worker, "status");
    roundtrip(m, o);
    assert_string_equal(o->kind, "");
    assert_int_equal(o->capacity, 0);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_WELCOME; m->version = IPC_PROTO_VERSION; m->pid = 7; m->boot = UINT64_MAX;
    roundtrip(m, o);
    assert_true(o->boot == UINT64_MAX);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_PULL; m->n = 3;
    roundtrip(m, o);
    assert_int_equal(o->n, 3);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_KEY; m->id = 1ull << 40; m->requeues = 70000;
    m->added_ms = 1764000000000ull; m->wait_ms = 300;
    memset(m->key, 'k', IPC_KEY_MAX - 1);
    roundtrip(m, o);
    assert_int_equal(strlen(o->key), IPC_KEY_MAX - 1);
    assert_true(o->id == 1ull << 40);
    assert_int_equal(o->requeues, 70000);
    assert_true(o->added_ms == 1764000000000ull);
    assert_int_equal(o->wait_ms, 300);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_DONE; m->id = 99; m->outcome = IPC_OUTCOME_REQUEUE_AFTER; m->after_ms = 2000;
    m->n_written = IPC_WRITTEN_MAX;
    for (int i = 0; i < IPC_WRITTEN_MAX; i++) {
        snprintf(m->written[i].type, IPC_TYPE_MAX, "t%d", i);
        snprintf(m->written[i].rv, IPC_RV_MAX, "%d", 1000 + i);
    }
    roundtrip(m, o);
    assert_int_equal(o->outcome, IPC_OUTCOME_REQUEUE_AFTER);
    assert_int_equal(o->after_ms, 2000);
    assert_int_equal(o->n_written, IPC_WRITTEN_MAX);
    assert_string_equal(o->written[63].type, "t63");
    assert_string_equal(o->written[63].rv, "1063");

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_DONE; m->id = 5; m->outcome = IPC_OUTCOME_ERROR;
    strcpy(m->msg, "conflict: the object has been modified; please apply your changes");
    roundtrip(m, o);
    assert_string_equal(o->msg, m->msg);
    assert_int_equal(o->n_written, 0);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_ADD; strcpy(m->kind, "rayjob"); strcpy(m->key, "default/job-1"); m->after_ms = 5;
    roundtrip(m, o);
    assert_string_equal(o->key, "default/job-1");
    assert_int_equal(o->after_ms, 5);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_STATUS_REQ;
    roundtrip(m, o);

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_ADOPT; strcpy(m->key, "ns/held");
    roundtrip(m, o);
    assert_string_equal(o->key, "ns/held");

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_ADOPTED; m->id = 0; strcpy(m->key, "ns/held");
    roundtrip(m, o);
    assert_int_equal(o->id, 0);
    assert_string_equal(o->key, "ns/held");

    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_ERROR; m->code = EPROTO; strcpy(m->msg, "bad frame");
    roundtrip(m, o);
    assert_int_equal(o->code, EPROTO);
    assert_string_equal(o->msg, "bad frame");
    free(m);
    free(o);
}

static void test_roundtrip_status(void **state)
{
    (void)state;
    struct ipc_status_worker ws[2] = {
        {.pid = 10, .worker = "a", .capacity = 4, .in_flight = 2, .oldest_ms = 1500},
        {.pid = 11, .worker = "b", .capacity = 1, .in_flight = 0, .oldest_ms = 0},
    };
    struct ipc_status_queue qs[2] = {
        {.kind = "raycluster", .depth = 3, .in_flight = 2, .waiting = 1, .retrying = 1, .gated = 1,
         .keys = 7, .adds_total = 100, .retries_total = 4, .ryw_timeouts_total = 1, .overdue = 0,
         .oldest_wait_ms = 2500, .oldest_wait_known = true, .n_workers = 2, .workers = ws},
        {.kind = "rayjob"},
    };
    struct ipc_status st = {.pid = 77, .n_queues = 2, .queues = qs};
    struct ipc_msg *m = calloc(1, sizeof(*m)), *o = calloc(1, sizeof(*o));
    m->type = IPC_MSG_STATUS; m->pid = 77; m->status = &st;
    roundtrip(m, o);
    assert_non_null(o->status);
    assert_int_equal(o->status->n_queues, 2);
    assert_int_equal(o->status->pid, 77);
    assert_string_equal(o->status->queues[0].kind, "raycluster");
    assert_int_equal(o->status->queues[0].adds_total, 100);
    assert_int_equal(o->status->queues[0].keys, 7);
    assert_int_equal(o->status->queues[0].n_workers, 2);
    assert_int_equal(o->status->queues[0].workers[1].pid, 11);
    assert_int_equal(o->status->queues[0].workers[0].oldest_ms, 1500);
    assert_true(o->status->queues[0].oldest_wait_known);
    assert_int_equal(o->status->queues[0].oldest_wait_ms, 2500);
    assert_string_equal(o->status->queues[1].kind, "rayjob");
    assert_false(o->status->queues[1].oldest_wait_known);   /* sent in the older form */
    assert_int_equal(o->status->queues[1].n_workers, 0);
    ipc_msg_clear(o);
    assert_null(o->status);
    free(m);
    free(o);
}

static void test_encoder_refuses_invalid(void **state)
{
    (void)state;
    struct ipc_msg *m = calloc(1, sizeof(*m));
    struct buf b = {0};
    m->type = IPC_MSG_ADD; strcpy(m->kind, "rayjob"); strcpy(m->key, "has space");
    assert_int_equal(ipc_proto_encode(m, &b), -EINVAL);
    strcpy(m->key, "");
    assert_int_equal(ipc_proto_encode(m, &b), -EINVAL);
    m->type = (enum ipc_msg_type)42;
    assert_int_equal(ipc_proto_encode(m, &b), -EINVAL);
    memset(m, 0, sizeof(*m));
    m->type = IPC_MSG_PULL; m->n = 0;
    assert_int_equal(ipc_proto_encode(m, &b), -EINVAL);
    assert_int_equal(b.len, 0);
    buf_free(&b);
    free(m);
}

static void test_framing(void **state)
{
    (void)state;
    const uint8_t *body;
    size_t blen, used;
    uint8_t zero[8] = {0, 0, 0, 0, 0x80};
    assert_int_equal(ipc_proto_frame(zero, 3, &body, &blen, &used), -EAGAIN);
    assert_int_equal(ipc_proto_frame(zero, 5, &body, &blen, &used), -EMSGSIZE);
    uint8_t big[4] = {0, 1, 0, 1};   /* 65537 */
    assert_int_equal(ipc_proto_frame(big, 4, &body, &blen, &used), -EMSGSIZE);
    uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
    assert_int_equal(ipc_proto_frame(huge, 4, &body, &blen, &used), -EMSGSIZE);
    uint8_t max[4] = {0, 1, 0, 0};   /* exactly 65536: allowed, needs the bytes */
    assert_int_equal(ipc_proto_frame(max, 4, &body, &blen, &used), -EAGAIN);
    /* Two frames back to back split one at a time. */
    struct ipc_msg *m = calloc(1, sizeof(*m));
    struct buf b = {0};
    m->type = IPC_MSG_PULL; m->n = 1;
    assert_int_equal(ipc_proto_encode(m, &b), 0);
    m->n = 2;
    assert_int_equal(ipc_proto_encode(m, &b), 0);
    assert_int_equal(ipc_proto_frame(b.data, b.len - 1, &body, &blen, &used), 0);
    assert_int_equal(ipc_proto_frame(b.data + used, b.len - used - 1, &body, &blen, &used), -EAGAIN);
    buf_free(&b);
    free(m);
}

/* ---- malformed bodies, built with msgpack-c --------------------------------------- */

static msgpack_sbuffer sb;
static msgpack_packer pk;

static void start(void)
{
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
}

static void kstr(const char *s)
{
    msgpack_pack_str(&pk, strlen(s));
    msgpack_pack_str_body(&pk, s, strlen(s));
}

static void kv_u(const char *k, uint64_t v) { kstr(k); msgpack_pack_uint64(&pk, v); }
static void kv_s(const char *k, const char *v) { kstr(k); kstr(v); }

/* Decodes what was packed; returns the decoder's verdict. */
/* Decodes the packed frame into m (caller clears it). */
static int finish_into(struct ipc_msg *m)
{
    const char *err = NULL;
    int rc = ipc_proto_decode((const uint8_t *)sb.data, sb.size, m, &err);
    if (rc < 0)
        assert_non_null(err);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static int finish(void)
{
    struct ipc_msg *m = calloc(1, sizeof(*m));
    int rc = finish_into(m);
    ipc_msg_clear(m);
    free(m);
    return rc;
}

static void pack_pull(uint64_t n)
{
    msgpack_pack_map(&pk, 2);
    kv_u("t", IPC_MSG_PULL);
    kv_u("n", n);
}

static void test_good_msgpack_c_frame_accepted(void **state)
{
    (void)state;
    /* Sanity: a frame from the independent encoder is accepted, so rejections below mean something. */
    start(); pack_pull(4); assert_int_equal(finish(), 0);
    start();
    msgpack_pack_map(&pk, 5);
    kv_u("t", IPC_MSG_HELLO); kv_u("v", 1); kv_s("worker", "w"); kv_u("pid", 1); kv_u("cap", 1);
    assert_int_equal(finish(), 0);
}

static void test_reject_not_a_map(void **state)
{
    (void)state;
    start(); msgpack_pack_array(&pk, 2); kv_u("t", 3); assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_uint64(&pk, 3); assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_nil(&pk); assert_int_equal(finish(), -EBADMSG);
    start(); kstr("PULL"); assert_int_equal(finish(), -EBADMSG);
    /* empty body */
    struct ipc_msg *m = calloc(1, sizeof(*m));
    assert_int_equal(ipc_proto_decode((const uint8_t *)"", 0, m, NULL), -EBADMSG);
    free(m);
}

static void test_reject_truncated_and_trailing(void **state)
{
    (void)state;
    struct ipc_msg *m = calloc(1, sizeof(*m));
    struct buf b = {0};
    m->type = IPC_MSG_DONE; m->id = 1234567; m->outcome = IPC_OUTCOME_ERROR;
    strcpy(m->msg, "some error text that is long enough to use a str8 header........");
    m->n_written = 2;
    strcpy(m->written[0].type, "v1/pods"); strcpy(m->written[0].rv, "77");
    strcpy(m->written[1].type, "ray.io/v1/rayclusters"); strcpy(m->written[1].rv, "78");
    assert_int_equal(ipc_proto_encode(m, &b), 0);
    const uint8_t *body = (const uint8_t *)b.data + 4;
    size_t blen = b.len - 4;
    for (size_t cut = 0; cut < blen; cut++)
        assert_int_equal(ipc_proto_decode(body, cut, m, NULL), -EBADMSG);
    assert_int_equal(ipc_proto_decode(body, blen, m, NULL), 0);
    uint8_t *more = malloc(blen + 1);
    memcpy(more, body, blen);
    more[blen] = 0xc0;
    assert_int_equal(ipc_proto_decode(more, blen + 1, m, NULL), -EBADMSG);
    free(more);
    buf_free(&b);
    free(m);
}

static void test_reject_fields(void **state)
{
    (void)state;
    /* unknown field */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_PULL); kv_u("n", 1); kv_u("x", 1);
    assert_int_equal(finish(), -EBADMSG);
    /* duplicate field */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_PULL); kv_u("n", 1); kv_u("n", 2);
    assert_int_equal(finish(), -EBADMSG);
    /* missing required */
    start(); msgpack_pack_map(&pk, 1); kv_u("t", IPC_MSG_PULL);
    assert_int_equal(finish(), -EBADMSG);
    /* missing type */
    start(); msgpack_pack_map(&pk, 1); kv_u("n", 1);
    assert_int_equal(finish(), -EBADMSG);
    /* known field not allowed for the type */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_PULL); kv_u("n", 1); kv_s("key", "a/b");
    assert_int_equal(finish(), -EBADMSG);
    /* non-string map key */
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_PULL); msgpack_pack_uint64(&pk, 1); msgpack_pack_uint64(&pk, 1);
    assert_int_equal(finish(), -EBADMSG);
    /* field name that is a prefix of a real one */
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_ADD); kv_u("ke", 1);
    assert_int_equal(finish(), -EBADMSG);
}

static void test_reject_types_and_ranges(void **state)
{
    (void)state;
    /* unknown message types */
    start(); msgpack_pack_map(&pk, 1); kv_u("t", 0); assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 1); kv_u("t", IPC_MSG_MAX_); assert_int_equal(finish(), -EBADMSG);
    /* string where a number belongs, number where a string belongs */
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_PULL); kv_s("n", "1");
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "rayjob"); kv_u("key", 5);
    assert_int_equal(finish(), -EBADMSG);
    /* negative, float, bool */
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_PULL); kstr("n"); msgpack_pack_int64(&pk, -1);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_PULL); kstr("n"); msgpack_pack_double(&pk, 1.0);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_PULL); kstr("n"); msgpack_pack_true(&pk);
    assert_int_equal(finish(), -EBADMSG);
    /* a positive value in a signed encoding is fine */
    start(); msgpack_pack_map(&pk, 2); kv_u("t", IPC_MSG_PULL); kstr("n"); msgpack_pack_int16(&pk, 300);
    assert_int_equal(finish(), 0);
    /* out of range: n 0, n too big, outcome 5, pid > int32 */
    start(); pack_pull(0); assert_int_equal(finish(), -EBADMSG);
    start(); pack_pull(IPC_CAPACITY_MAX + 1); assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", IPC_OUTCOME_MAX_);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 5);
    kv_u("t", IPC_MSG_HELLO); kv_u("v", 1); kv_s("worker", "w"); kv_u("pid", 1ull << 31); kv_u("cap", 1);
    assert_int_equal(finish(), -EBADMSG);
    /* protocol version */
    start(); msgpack_pack_map(&pk, 5);
    kv_u("t", IPC_MSG_HELLO); kv_u("v", 2); kv_s("worker", "w"); kv_u("pid", 1); kv_u("cap", 1);
    assert_int_equal(finish(), -EBADMSG);
    /* a worker for a kind with capacity 0 */
    start(); msgpack_pack_map(&pk, 6);
    kv_u("t", IPC_MSG_HELLO); kv_u("v", 1); kv_s("worker", "w"); kv_u("pid", 1); kv_u("cap", 0);
    kv_s("kind", "raycluster");
    assert_int_equal(finish(), -EBADMSG);
    /* requeue_after without after_ms, after_ms with another outcome, after_ms too large */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", IPC_OUTCOME_REQUEUE_AFTER);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 4); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", IPC_OUTCOME_OK); kv_u("after_ms", 1);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 4); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", IPC_OUTCOME_REQUEUE_AFTER);
    kv_u("after_ms", IPC_AFTER_MS_MAX + 1);
    assert_int_equal(finish(), -EBADMSG);
}

static void test_reject_strings(void **state)
{
    (void)state;
    char big[IPC_KEY_MAX + 8];
    memset(big, 'a', sizeof(big));
    big[IPC_KEY_MAX] = 0;    /* 512 bytes: one too many */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "k"); kv_s("key", big);
    assert_int_equal(finish(), -EBADMSG);
    big[IPC_KEY_MAX - 1] = 0;  /* 511: fine */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "k"); kv_s("key", big);
    assert_int_equal(finish(), 0);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "k"); kv_s("key", "");
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "k"); kv_s("key", "a b");
    assert_int_equal(finish(), -EBADMSG);
    /* a NUL inside a key or a message */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "k");
    kstr("key"); msgpack_pack_str(&pk, 3); msgpack_pack_str_body(&pk, "a\0b", 3);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ERROR); kv_u("code", 1);
    kstr("msg"); msgpack_pack_str(&pk, 3); msgpack_pack_str_body(&pk, "a\0b", 3);
    assert_int_equal(finish(), -EBADMSG);
    /* bin is not str */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", "k");
    kstr("key"); msgpack_pack_bin(&pk, 1); msgpack_pack_bin_body(&pk, "a", 1);
    assert_int_equal(finish(), -EBADMSG);
    /* kind 64 bytes */
    char kind[IPC_KIND_MAX + 1];
    memset(kind, 'k', IPC_KIND_MAX);
    kind[IPC_KIND_MAX] = 0;
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ADD); kv_s("kind", kind); kv_s("key", "a");
    assert_int_equal(finish(), -EBADMSG);
    /* a message over IPC_MSG_MAX-1 */
    char msg[IPC_MSG_MAX + 1];
    memset(msg, 'm', IPC_MSG_MAX);
    msg[IPC_MSG_MAX] = 0;
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_ERROR); kv_u("code", 1); kv_s("msg", msg);
    assert_int_equal(finish(), -EBADMSG);
}

static void test_reject_counts(void **state)
{
    (void)state;
    /* A map header announcing 2^32-1 entries in a 10-byte body. */
    uint8_t lie[] = {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 't', 0x03, 0xa1, 'n'};
    struct ipc_msg *m = calloc(1, sizeof(*m));
    assert_int_equal(ipc_proto_decode(lie, sizeof(lie), m, NULL), -EBADMSG);
    /* A str32 header announcing 4 GiB. */
    uint8_t lie2[] = {0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 't'};
    assert_int_equal(ipc_proto_decode(lie2, sizeof(lie2), m, NULL), -EBADMSG);
    free(m);
    /* written: 65 pairs */
    start(); msgpack_pack_map(&pk, 4); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", 0);
    kstr("w"); msgpack_pack_array(&pk, IPC_WRITTEN_MAX + 1);
    for (int i = 0; i < IPC_WRITTEN_MAX + 1; i++) {
        msgpack_pack_array(&pk, 2); kstr("v1/pods"); kstr("1");
    }
    assert_int_equal(finish(), -EBADMSG);
    /* written entry that is not a pair */
    start(); msgpack_pack_map(&pk, 4); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", 0);
    kstr("w"); msgpack_pack_array(&pk, 1); msgpack_pack_array(&pk, 3); kstr("a"); kstr("1"); kstr("x");
    assert_int_equal(finish(), -EBADMSG);
    /* written rv empty */
    start(); msgpack_pack_map(&pk, 4); kv_u("t", IPC_MSG_DONE); kv_u("id", 1); kv_u("o", 0);
    kstr("w"); msgpack_pack_array(&pk, 1); msgpack_pack_array(&pk, 2); kstr("a"); kstr("");
    assert_int_equal(finish(), -EBADMSG);
    /* a map with more entries than fields exist */
    start(); msgpack_pack_map(&pk, 20);
    for (int i = 0; i < 20; i++)
        kv_u("t", 3);
    assert_int_equal(finish(), -EBADMSG);
}

/* A STATUS queue map: the older form (no oldest_wait_ms) unless wait is set;
 * extra_field adds an unknown field, skip drops the numeric field at that index. */
static void pack_queue_map_ex(int n_workers, bool extra_field, bool wait, int skip)
{
    msgpack_pack_map(&pk, 12 + (extra_field ? 1 : 0) + (wait ? 1 : 0) - (skip >= 0 ? 1 : 0));
    kv_s("kind", "raycluster");
    const char *nums[] = {"depth", "in_flight", "waiting", "retrying", "gated", "keys", "adds",
                          "retries", "ryw_timeouts", "overdue"};
    for (int i = 0; i < 10; i++)
        if (i != skip)
            kv_u(nums[i], 1);
    if (extra_field)
        kv_u("bogus", 1);
    if (wait)
        kv_u("oldest_wait_ms", 42);
    kstr("workers");
    msgpack_pack_array(&pk, (size_t)n_workers);
    for (int i = 0; i < n_workers; i++) {
        msgpack_pack_map(&pk, 5);
        kv_u("pid", 1); kv_s("worker", "w"); kv_u("cap", 1); kv_u("in_flight", 0); kv_u("oldest_ms", 0);
    }
}

static void pack_queue_map(int n_workers, bool extra_field)
{
    pack_queue_map_ex(n_workers, extra_field, false, -1);
}

/* oldest_wait_ms is optional: a new `rayop status` reads a watcher started by
 * the previous binary, and a missing required field still rejects the frame. */
static void test_status_oldest_wait_optional(void **state)
{
    (void)state;
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map_ex(1, false, true, -1);
    struct ipc_msg out = {0};
    assert_int_equal(finish_into(&out), 0);
    assert_true(out.status->queues[0].oldest_wait_known);
    assert_int_equal(out.status->queues[0].oldest_wait_ms, 42);
    ipc_msg_clear(&out);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map_ex(1, false, false, -1);
    assert_int_equal(finish_into(&out), 0);
    assert_false(out.status->queues[0].oldest_wait_known);
    assert_int_equal(out.status->queues[0].depth, 1);
    ipc_msg_clear(&out);
    /* 12 fields, but "gated" missing instead of the optional one */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map_ex(1, false, true, 4);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map_ex(1, true, true, -1);
    assert_int_equal(finish(), -EBADMSG);
}

static void test_reject_status(void **state)
{
    (void)state;
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map(2, false);
    assert_int_equal(finish(), 0);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map(2, true);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 1); pack_queue_map(IPC_STATUS_WORKERS_MAX + 1, false);
    assert_int_equal(finish(), -EBADMSG);
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, IPC_STATUS_QUEUES_MAX + 1);
    for (int i = 0; i < IPC_STATUS_QUEUES_MAX + 1; i++)
        pack_queue_map(0, false);
    assert_int_equal(finish(), -EBADMSG);
    /* a truncated status frees what it had allocated (ASan checks) */
    start(); msgpack_pack_map(&pk, 3); kv_u("t", IPC_MSG_STATUS); kv_u("pid", 1);
    kstr("queues"); msgpack_pack_array(&pk, 2); pack_queue_map(3, false);
    assert_int_equal(finish(), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_types),
        cmocka_unit_test(test_roundtrip_status),
        cmocka_unit_test(test_encoder_refuses_invalid),
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_good_msgpack_c_frame_accepted),
        cmocka_unit_test(test_reject_not_a_map),
        cmocka_unit_test(test_reject_truncated_and_trailing),
        cmocka_unit_test(test_reject_fields),
        cmocka_unit_test(test_reject_types_and_ranges),
        cmocka_unit_test(test_reject_strings),
        cmocka_unit_test(test_reject_counts),
        cmocka_unit_test(test_reject_status),
        cmocka_unit_test(test_status_oldest_wait_optional),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

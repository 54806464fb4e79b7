/*
 * faults_int.h - what faults.c (the table) and faults_http.c (prehook, admin
 * area) share: the table struct. Nobody else includes it.
 */
#ifndef RAYOP_SIM_FAULTS_INT_H
#define RAYOP_SIM_FAULTS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "kubesim/api/faults.h"

/* Injected-fault kinds counted for /kubesim/status. */
enum faults_kind {
    FK_429, FK_500, FK_503, FK_RESET, FK_DELAY, FK_WATCH_CUT, FK_EXPIRED, FK_COUNT
};

/* Verbs counted for /kubesim/status (the audit verbs, then everything else). */
#define FAULTS_NVERBS 9
extern const char *const faults_verbs[FAULTS_NVERBS];   /* last is "other" */
#define FAULTS_NCODES 600                                /* byCode slots: 0..599 */

struct faults_slot {
    struct faults_rule rule;
    uint64_t rng;              /* splitmix64 state */
    unsigned long matched;     /* requests the rule matched */
    unsigned long fired;       /* times it fired */
};

struct faults {
    pthread_mutex_t mu;        /* guards slots, n and seed */
    struct faults_slot slots[FAULTS_MAX_RULES];
    size_t n;
    uint64_t seed;
    atomic_size_t n_active;    /* n, read without the lock on the hot path */

    /* watch faults (read on every watch request) */
    atomic_uint watch_delay_ms;
    atomic_uint watch_cut_s;
    atomic_long expire_next;

    /* counters */
    atomic_ulong requests;
    atomic_ulong by_verb[FAULTS_NVERBS];
    atomic_ulong by_code[FAULTS_NCODES];
    atomic_bool codes_seen;    /* faults_note_reply was ever called */
    atomic_ulong injected[FK_COUNT];

    struct server *srv;        /* set by faults_install */
    struct store *store;
    char *token;               /* the API token (owned), or NULL */
};

/* Index of verb in faults_verbs ("other" for NULL/unknown). */
size_t faults_verb_index(const char *verb);
/* A decimal in [min, max] (no sign, no spaces): 0 or -EINVAL. */
int faults_parse_ulong(const char *v, unsigned long min, unsigned long max, unsigned long *out);
/* Name of a kind for JSON ("429", "reset", "watchCut", ...). */
const char *faults_kind_name(enum faults_kind k);

#endif

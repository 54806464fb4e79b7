/*
 * faults.h - kubesim's fault injection and its /kubesim/ admin area.
 *
 * A fault table decides, per request, whether to add latency, answer 429
 * (TooManyRequests with Retry-After), 500 (InternalError) or 503
 * (ServiceUnavailable) instead of the real answer, or drop the connection.
 * Watch faults shorten every new watch to N seconds (a clean end, exactly like
 * the real server's timeout), hold watch events back D ms (a stale cache on
 * purpose, via store_set_watch_delay_ms) and answer the next K watch resumes
 * with the 410 Expired ERROR event. Everything is switched by flags at start
 * (faults_parse_flag) or at run time through GET/PUT/DELETE /kubesim/faults and
 * PUT /kubesim/watch; GET /kubesim/status reports counts.
 *
 * faults.c is the pure part (rule syntax, the table, the deterministic choice);
 * faults_http.c plugs it into the server (prehook + admin route). Usage and the
 * rule syntax: docs/kubesim-faults.md.
 */
#ifndef RAYOP_SIM_FAULTS_H
#define RAYOP_SIM_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "util/util.h"

struct server;
struct server_req;
struct store;
struct faults;

#define FAULTS_MAX_RULES    64
#define FAULTS_MAX_RULE_LEN 512     /* one rule in the compact syntax */

enum faults_action { FAULTS_STATUS = 0, FAULTS_RESET, FAULTS_DELAY };

struct faults_rule {
    char verb[24];          /* "*" or an audit verb: get list watch create update patch
                               delete deletecollection */
    char resource[128];     /* "" = any; "pods" (any subresource) or "pods/status" */
    enum faults_action action;
    int code;               /* FAULTS_STATUS: 429, 500 or 503 */
    int retry_after;        /* Retry-After seconds (429: default 1; 503: default 0 = none) */
    unsigned delay_ms;      /* FAULTS_DELAY */
    double p;               /* probability in [0,1] when every == 0 (default 1) */
    unsigned long every;    /* fire on every Nth matching request; 0 = use p */
    unsigned long count;    /* fire at most this many times; 0 = unlimited */
};

/* Parses the compact syntax "verb=list,code=429,p=0.5,retry-after=1" or
 * "verb=*,action=reset,every=10" into *out. 0, or -EINVAL with err set. Total:
 * any text (bounded by FAULTS_MAX_RULE_LEN) gives a rule or an error. */
int faults_rule_parse(const char *text, struct faults_rule *out, char *err, size_t errlen);
/* The same from a JSON object with the same keys ({"verb":"list","code":429,...}),
 * or a JSON string in the compact syntax. */
int faults_rule_from_json(const cJSON *j, struct faults_rule *out, char *err, size_t errlen);
/* Appends r in the compact syntax (parses back to the same rule). 0 or -ENOMEM. */
int faults_rule_format(const struct faults_rule *r, struct buf *b);

/* ---- the table ---------------------------------------------------------------- */

/* What to do with one request. */
struct faults_decision {
    unsigned delay_ms;      /* sum of the delay rules that fired */
    int code;               /* 0 = answer normally; else 429/500/503 */
    int retry_after;        /* with code */
    bool reset;             /* drop the connection */
};

/* A table with the given seed for the rules' random choices. Caller frees with faults_free. */
int faults_new(uint64_t seed, struct faults **out);
void faults_free(struct faults *f);
/* Replaces the rules (n <= FAULTS_MAX_RULES; copied) and restarts every rule's
 * random sequence from the seed, so a run is reproducible from any replacement. */
int faults_set_rules(struct faults *f, const struct faults_rule *rules, size_t n);
int faults_add_rule(struct faults *f, const struct faults_rule *r);
void faults_set_seed(struct faults *f, uint64_t seed);
/* Decides the fate of one request. verb NULL never matches; plural/sub "" for
 * non-resource paths. Rules are tried in order: every delay rule that fires adds its
 * latency, the first status or reset rule that fires decides the answer. Thread-safe. */
void faults_decide(struct faults *f, const char *verb, const char *plural, const char *sub,
                   struct faults_decision *out);
/* Appends the rules as a JSON array (with matched/fired counters). 0 or -ENOMEM. */
int faults_rules_json(struct faults *f, struct buf *b);

/* ---- kubesim wiring --------------------------------------------------------------- */

/* Handles kubesim's flags "fault" (repeatable), "watch-cut-seconds", "watch-delay-ms"
 * and "fault-seed" (flag names without dashes). *fp is created on first use.
 * 0, -ENOENT for another flag, or -EINVAL with err set. */
int faults_parse_flag(struct faults **fp, const char *flag, const char *value,
                      char *err, size_t errlen);
/* Usage lines for the flags above. */
extern const char faults_usage[];
/* Creates *fp if still NULL, applies the watch delay to the store, and registers the
 * prehook and the /kubesim/ admin route (before server_start). token is the server's
 * bearer token (NULL = none; copied): requests without it are never faulted, since
 * the real server authenticates before it answers 429. *fp must outlive the server.
 * 0 or a negative errno with err set. */
int faults_install(struct faults **fp, struct server *srv, struct store *store,
                   const char *token, char *err, size_t errlen);
/* Counts the reply of one request by code (0 = reset) for /kubesim/status
 * requests.byCode; arg is the struct faults. Shaped for a server hook that runs after
 * every reply, which the server does not offer yet (docs/kubesim-faults.md). */
void faults_note_reply(void *arg, const struct server_req *req, int code);

#endif

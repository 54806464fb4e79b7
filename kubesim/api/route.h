/*
 * route.h - the pure half of kubesim's HTTP layer: turns a request's path,
 * query parameters and a few headers into a struct the handlers switch on.
 * Nothing here touches the network, the store or the registry, so it is unit
 * tested and fuzzed on its own (tests/unit/kubesim/test_server_route.c,
 * tests/fuzz/fuzz_route.c).
 *
 * Every parser is bounded (path length, segment lengths, parameter counts and
 * lengths) and total: any input yields a route (possibly ROUTE_NONE, which the
 * server answers with 404) or an error message for a 400.
 */
#ifndef RAYOP_SIM_ROUTE_H
#define RAYOP_SIM_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#define ROUTE_MAX_PATH    8192   /* longer paths are ROUTE_NONE (the real server answers 414/404) */
#define ROUTE_MAX_SEG     254    /* DNS-1123 subdomain names are at most 253 bytes */
#define ROUTE_MAX_VALUE   16384  /* one query parameter value */
#define ROUTE_MAX_PARAMS  64     /* more parameters than this are ignored */

enum route_kind {
    ROUTE_NONE = 0,        /* unknown path: 404 */
    ROUTE_VERSION,         /* /version */
    ROUTE_HEALTH,          /* /healthz /livez /readyz (and their /<check> sub-paths) */
    ROUTE_API,             /* /api */
    ROUTE_APIS,            /* /apis */
    ROUTE_GROUP,           /* /apis/G */
    ROUTE_GROUP_VERSION,   /* /api/v1, /apis/G/V */
    ROUTE_OPENAPI_V2,      /* /openapi/v2 (and /swagger-2.0.0.pb-v1) */
    ROUTE_OPENAPI_V3,      /* /openapi/v3 */
    ROUTE_OPENAPI_V3_PATH, /* /openapi/v3/<path>, path in route.oapi_path */
    ROUTE_RESOURCE,        /* a resource path, parts below */
};

struct route {
    enum route_kind kind;
    char group[ROUTE_MAX_SEG];     /* "" for the core group */
    char version[ROUTE_MAX_SEG];
    char ns[ROUTE_MAX_SEG];        /* "" when the path has no namespace segment */
    char plural[ROUTE_MAX_SEG];
    char name[ROUTE_MAX_SEG];      /* "" for collection paths */
    char sub[ROUTE_MAX_SEG];       /* "" or "status", "scale", "log", "proxy", ... */
    const char *rest;              /* the path after sub (e.g. "/a/b" of .../proxy/a/b), "" when none;
                                      borrowed from the parsed path */
    bool legacy_watch;             /* /api/v1/watch/... or /apis/G/V/watch/... */
    char oapi_path[512];           /* ROUTE_OPENAPI_V3_PATH: "api/v1", "apis/ray.io/v1" */
};

/* Parses an (already percent-decoded) request path; never fails: unknown or
 * malformed paths give kind ROUTE_NONE. The struct borrows nothing except rest,
 * which points into path. */
void route_parse_path(const char *path, struct route *out);

/* ---- query parameters ------------------------------------------------------- */

enum route_tristate { ROUTE_UNSET = 0, ROUTE_FALSE, ROUTE_TRUE };

struct route_query {
    bool watch;
    char *label_selector;         /* owned strings, NULL when absent */
    char *field_selector;
    long limit;                   /* 0 = none */
    char *continue_token;
    char *resource_version;
    char *rv_match;
    long timeout_seconds;         /* -1 = none */
    bool allow_bookmarks;
    enum route_tristate send_initial_events;
    char *field_manager;
    char *field_validation;
    bool dry_run;                 /* dryRun=All */
    bool force;
    char *propagation;
    long grace_seconds;           /* -1 = none */
    bool orphan_dependents_set;
    bool orphan_dependents;
    char *include_object;         /* "None", "Metadata", "Object" */
    char *precondition_uid;
    char *precondition_rv;
    int nparams;
    char err[256];                /* first malformed parameter; non-empty means 400 */
};

void route_query_init(struct route_query *q);
void route_query_free(struct route_query *q);
/* Records one decoded parameter. Unknown keys are ignored, as the real server does.
 * A malformed value of a known key (limit=abc) sets q->err. 0 or -ENOMEM. */
int route_query_set(struct route_query *q, const char *key, const char *value);
/* Parses a raw "a=b&c=d" query string (percent- and '+'-decoding) into q. 0 or -ENOMEM. */
int route_query_parse(struct route_query *q, const char *raw, size_t len);

/* ---- headers ------------------------------------------------------------------ */

enum route_discovery { ROUTE_DISC_LEGACY = 0, ROUTE_DISC_V2, ROUTE_DISC_V2BETA1 };

struct route_accept {
    bool table;                    /* as=Table;g=meta.k8s.io accepted before plain JSON */
    bool table_v1beta1;            /* ... in its v1beta1 flavour */
    enum route_discovery discovery;
};

/* Interprets an Accept header (NULL = none): the first media range that names an
 * aggregated discovery list or a Table wins over later plain JSON ranges. */
void route_parse_accept(const char *accept, struct route_accept *out);

/* Patch type of a Content-Type: 0 merge, 1 json, 2 strategic, 3 apply (matching
 * enum store_patch_type), or -1 for anything else (415). Parameters like
 * ";charset=utf-8" are ignored. */
int route_patch_type(const char *content_type);

/* The audit verb of a request: "get", "list", "watch", "create", "update", "patch",
 * "delete", "deletecollection", or NULL when the method does not apply to that kind
 * of path (405). method is upper case. */
const char *route_verb(const char *method, const struct route *r, bool watch);

/* The field manager the real server derives from a User-Agent when the request
 * has no fieldManager: the part before the first '/', at most 128 bytes ("unknown"
 * when empty). */
void route_default_manager(const char *user_agent, char out[129]);

#endif

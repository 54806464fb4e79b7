/*
 * registry.h - the API types kubesim serves: the built-in table (core/v1 pods,
 * services, ...; batch/v1 jobs; coordination.k8s.io/v1 leases; events.k8s.io/v1
 * events; rbac roles/rolebindings; apiextensions customresourcedefinitions) and
 * the custom resources registered from CRD objects at run time.
 *
 * The registry is not thread-safe by itself: the server holds its store lock
 * (read for lookups, write for CRD changes) around every call. Resource pointers
 * stay valid until the resource is removed (registry_remove_crd) or the registry freed;
 * in fact removed and replaced resources are retired, not freed, until registry_free,
 * so a stored object's res pointer never dangles (it just stops being findable).
 */
#ifndef RAYOP_SIM_REGISTRY_H
#define RAYOP_SIM_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

struct schema;

enum reg_verb {
    REG_GET = 1 << 0, REG_LIST = 1 << 1, REG_WATCH = 1 << 2, REG_CREATE = 1 << 3,
    REG_UPDATE = 1 << 4, REG_PATCH = 1 << 5, REG_DELETE = 1 << 6,
    REG_DELETECOLLECTION = 1 << 7,
    REG_ALL = 0xff,
};

struct reg_column {               /* a CRD additionalPrinterColumn (or a built-in column) */
    char *name;
    char *type;                   /* "string", "integer", "number", "boolean", "date" */
    char *format;
    char *description;
    char *json_path;              /* ".status.state" (CRDs); NULL for built-in computed columns */
    int priority;
};

/* A subresource beyond status/scale as discovery lists it ("log", "binding", "eviction",
 * "proxy", "finalize", "token"); the status and scale entries are derived from
 * has_status/has_scale and are not repeated here. */
struct reg_subresource {
    char *name;                   /* "binding" */
    char *group;                  /* response kind's group ("" core, "policy" for eviction) */
    char *version;
    char *kind;                   /* "Binding" */
    unsigned verbs;
};

struct reg_resource {
    char *group;                  /* "" for the core group */
    char *version;                /* "v1" */
    char *plural;                 /* "rayclusters" */
    char *singular;               /* "raycluster" */
    char *kind;                   /* "RayCluster" */
    char *list_kind;              /* "RayClusterList" */
    bool namespaced;
    char **short_names;           /* NULL-terminated, may be empty */
    char **categories;            /* NULL-terminated, may be empty */
    unsigned verbs;               /* enum reg_verb bits */
    bool has_status;              /* /status subresource */
    bool has_scale;               /* /scale subresource */
    char *scale_spec_path;        /* ".spec.replicas" (CRD scale subresource) */
    char *scale_status_path;
    char *scale_selector_path;
    struct reg_column *columns;   /* CRD printer columns; NULL for built-ins (table.c knows them) */
    size_t n_columns;
    struct schema *schema;        /* compiled openAPIV3Schema (CRDs), else NULL */
    cJSON *openapi_schema;        /* the raw schema (CRDs) for /openapi/v3; owned */
    const char *smp_kind;         /* strategic-merge table name for built-ins, NULL for CRs */
    const char *const *field_labels; /* extra supported fieldSelector labels, NULL-terminated */
    bool builtin;
    bool storage;                 /* this version is the CRD's storage version */
    char *crd_name;               /* "rayclusters.ray.io" for CRD-backed resources */
    /* Pods: deletion is graceful; Events: TTL; ...: behaviour switches for the store. */
    unsigned flags;
    struct reg_subresource *subresources; /* extra subresources (built-ins), may be NULL */
    size_t n_subresources;
    bool deprecated;              /* CRD version marked deprecated */
    char *deprecation_warning;    /* its deprecationWarning (or the default text), else NULL;
                                     the server sends it as a "Warning: 299 - ..." header */
};

#define REG_FLAG_GRACEFUL_DELETE (1u << 0)   /* pods: deletionTimestamp + grace period */
#define REG_FLAG_NO_GENERATION   (1u << 1)   /* types whose metadata.generation is not kept */
#define REG_FLAG_SPEC_GENERATION (1u << 2)   /* generation bumps on any non-metadata, non-status change */
/* The strategy's DefaultGarbageCollectionPolicy when it is not DeleteDependents
 * (Background): a DELETE without propagationPolicy/orphanDependents orphans
 * (batch/v1 Jobs), or propagation is ignored altogether (Events: Unsupported). */
#define REG_FLAG_ORPHAN_DEFAULT  (1u << 3)
#define REG_FLAG_NO_GC_POLICY    (1u << 4)
/* Built-ins: NO_GENERATION except jobs and CRDs (SPEC_GENERATION); pods also
 * GRACEFUL_DELETE; jobs ORPHAN_DEFAULT; both Event types NO_GC_POLICY. Custom resources: SPEC_GENERATION with a status subresource, else 0
 * (then any change but metadata bumps generation, status included, as for real CRs). */

/* Limits on CRD objects (validation rejects anything larger). */
#define REG_MAX_VERSIONS    32
#define REG_MAX_COLUMNS     32
#define REG_MAX_NAMES       32     /* shortNames, categories */
#define REG_MAX_NAME_LEN    253

struct registry;

int registry_new(struct registry **out);   /* with every built-in type registered */
void registry_free(struct registry *r);

/* Looks up by group, version and resource name (plural, or singular/short name/kind
 * lower-cased as a fallback the way kubectl resolves them server-side is NOT done:
 * URLs always carry plurals). NULL when not served. */
const struct reg_resource *registry_find(const struct registry *r, const char *group,
                                         const char *version, const char *plural);
const struct reg_resource *registry_find_kind(const struct registry *r, const char *group,
                                              const char *version, const char *kind);

/*
 * Registers (or re-registers after an update) every served version of a
 * customresourcedefinitions object. The CRD must have passed registry_validate_crd.
 * Returns 0, or a negative errno with err set.
 */
int registry_add_crd(struct registry *r, const cJSON *crd, char *err, size_t errlen);
void registry_remove_crd(struct registry *r, const char *crd_name);
/* Validates a CRD object as apiextensions does (names, scope, versions, one storage
 * version, schema compiles). Appends StatusCause objects to causes; -EINVAL if any. */
int registry_validate_crd(const cJSON *crd, cJSON *causes);
/* The extra rules of an update (old is the stored CRD): spec.group and spec.names.plural
 * are immutable, and so are spec.scope and spec.names.kind once old is Established; every
 * version in old's status.storedVersions must still be in spec.versions. Appends causes
 * ("field is immutable", "must appear in spec.versions"); -EINVAL if any. Call it in
 * addition to registry_validate_crd. */
int registry_validate_crd_update(const cJSON *old, const cJSON *crd, cJSON *causes);
/* Fills status (acceptedNames, conditions Established/NamesAccepted, storedVersions) into crd. */
int registry_crd_set_status(cJSON *crd);

/* Iteration, in a stable order (groups in registration order, core first). */
size_t registry_count(const struct registry *r);
const struct reg_resource *registry_at(const struct registry *r, size_t i);
/* Bumped on every CRD change; discovery/openapi documents are cached against it. */
unsigned long registry_generation(const struct registry *r);

/* Verb bits -> the sorted discovery names ("create","delete",...). Returns how many
 * names were stored in out (at most 8). */
size_t registry_verb_names(unsigned verbs, const char *out[8]);

#endif

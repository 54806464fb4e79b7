/*
 * present.h - documents the API server renders from the registry rather than
 * from stored objects: discovery (legacy and aggregated v2/v2beta1), OpenAPI
 * (v2 protobuf, v3 JSON), `kubectl get` Tables and human ages.
 *
 * All functions append to a caller-owned struct buf and return 0 or -ENOMEM
 * (-ENOENT when the requested document does not exist). Callers hold the store's
 * read lock while the registry is being read.
 */
#ifndef RAYOP_SIM_PRESENT_H
#define RAYOP_SIM_PRESENT_H

#include <stdbool.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "kubesim/registry/registry.h"
#include "util/util.h"

#define PRESENT_AGGREGATED_V2      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#define PRESENT_AGGREGATED_V2BETA1 "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

/* /version */
int present_version(struct buf *out);
/* /api (APIVersions), /apis (APIGroupList), /api/v1 and /apis/G/V (APIResourceList; -ENOENT if not served). */
int present_api_versions(const struct registry *r, const char *server_addr, struct buf *out);
int present_api_groups(const struct registry *r, struct buf *out);
int present_resource_list(const struct registry *r, const char *group, const char *version,
                          struct buf *out);
/* Aggregated discovery: core (/api) when core is true, else all groups (/apis).
 * v2beta1 selects that apiVersion string; the caller sets the matching Content-Type. */
int present_aggregated(const struct registry *r, bool core, bool v2beta1, struct buf *out);

/* /openapi/v2: a gnostic openapi_v2.Document, protobuf-encoded (served as
 * application/octet-stream); /openapi/v3 root and /openapi/v3/<path> documents (JSON),
 * with the CRDs' schemas and the fieldValidation query parameter declared. */
int present_openapi_v2(const struct registry *r, struct buf *out);
int present_openapi_v3_root(const struct registry *r, struct buf *out);
int present_openapi_v3_path(const struct registry *r, const char *path, struct buf *out);

/*
 * A meta.k8s.io/v1 Table for objects of res (items[0..n)), as kubectl get wants it:
 * the type's columns (CRD additionalPrinterColumns or the built-in ones, e.g. Pod's
 * Name/Ready/Status/Restarts/Age + wide IP/Node), cells pre-formatted, each row with
 * its PartialObjectMetadata object. include_columns false leaves columnDefinitions
 * empty (watch events). list_rv/continue_token go into metadata.
 */
int present_table(const struct reg_resource *res, const cJSON *const *items, size_t n,
                  const char *list_rv, const char *continue_token, bool include_columns,
                  time_t now, struct buf *out);

/* "5s", "3m20s", "5m", "3h", "2d", "3y" as apimachinery's duration.HumanDuration. */
void present_human_age(time_t then, time_t now, char out[16]);

#endif

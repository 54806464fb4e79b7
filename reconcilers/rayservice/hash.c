/*
 * hash.c - the managed cluster's ray.io/hash-without-replicas-and-workers-to-delete, as
 * KubeRay computes it: the rayClusterConfig with the fields an autoscaler or a queueing
 * controller changes muted, written as Go's json.Marshal writes the typed struct
 * (gotypes.c), SHA-1, base32hex. Equal bytes matter: a RayService KubeRay created keeps
 * its cluster when rayop takes over only if both sides hash the same text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/gotypes.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/util.h"

char *rs_cluster_hash_text(const cJSON *cluster_spec, int ngroups)
{
    struct buf b = { 0 };
    cJSON *spec = cJSON_IsObject(cluster_spec) ? cJSON_Duplicate(cluster_spec, 1)
                                               : cJSON_CreateObject();
    cJSON *groups;
    if (!spec)
        return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "suspend");   /* rayClusterSpecForHashing */
    groups = cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs");
    if (ngroups >= 0 && cJSON_IsArray(groups))
        while (cJSON_GetArraySize(groups) > ngroups)
            cJSON_DeleteItemFromArray(groups, cJSON_GetArraySize(groups) - 1);
    gotypes_spec_mute(spec);
    int rc = gotypes_marshal(&b, gotypes_raycluster_spec, spec);
    cJSON_Delete(spec);
    if (rc < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

int rs_cluster_hash(const cJSON *cluster_spec, int ngroups, char out[33])
{
    char *text = rs_cluster_hash_text(cluster_spec, ngroups);
    if (!text)
        return -ENOMEM;
    int rc = gotypes_hash_text(text, strlen(text), out);
    free(text);
    return rc;
}

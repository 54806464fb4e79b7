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

#include <gnutls/crypto.h>

#include "reconcilers/rayservice/gotypes.h"
#include "reconcilers/rayservice/rayservice.h"
#include "util/util.h"

static void drop(cJSON *o, const char *k)
{
    if (cJSON_IsObject(o))
        cJSON_DeleteItemFromObjectCaseSensitive(o, k);
}

static void drop_scheduling(cJSON *group)
{
    cJSON *ps = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(group, "template"), "spec");
    drop(ps, "tolerations");
    drop(ps, "schedulingGates");
}

char *rs_cluster_hash_text(const cJSON *cluster_spec, int ngroups)
{
    struct buf b = { 0 };
    cJSON *spec = cJSON_IsObject(cluster_spec) ? cJSON_Duplicate(cluster_spec, 1)
                                               : cJSON_CreateObject();
    cJSON *groups, *g;
    if (!spec)
        return NULL;
    drop(spec, "suspend");            /* rayClusterSpecForHashing */
    drop(spec, "upgradeStrategy");
    drop_scheduling(cJSON_GetObjectItemCaseSensitive(spec, "headGroupSpec"));
    groups = cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs");
    if (ngroups >= 0 && cJSON_IsArray(groups))
        while (cJSON_GetArraySize(groups) > ngroups)
            cJSON_DeleteItemFromArray(groups, cJSON_GetArraySize(groups) - 1);
    cJSON_ArrayForEach(g, groups) {
        drop(g, "replicas");
        drop(g, "minReplicas");
        drop(g, "maxReplicas");
        drop(cJSON_GetObjectItemCaseSensitive(g, "scaleStrategy"), "workersToDelete");
        drop_scheduling(g);
    }
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
    static const char b32hex[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";
    unsigned char dig[20];
    char *text = rs_cluster_hash_text(cluster_spec, ngroups);
    if (!text)
        return -ENOMEM;
    int rc = gnutls_hash_fast(GNUTLS_DIG_SHA1, text, strlen(text), dig);
    free(text);
    if (rc < 0)
        return -EIO;
    /* 160 bits are 32 base32 digits exactly: no padding */
    for (int i = 0, bit = 0; i < 32; i++, bit += 5) {
        int byte = bit / 8, off = bit % 8;
        unsigned v = (unsigned)dig[byte] << 8 | (byte + 1 < 20 ? dig[byte + 1] : 0);
        out[i] = b32hex[(v >> (11 - off)) & 31];
    }
    out[32] = '\0';
    return 0;
}
